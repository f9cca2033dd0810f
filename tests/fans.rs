//! Shared-origin packets on the CPU backend: runs of segments from one eye are traced as
//! packets, every other segment one ray at a time, and the two must give the same bit for
//! every segment, on real and built-in levels, with moved objects (several tiers), every mask
//! and runs of every length, including segments ending on faces, edges and vertices.

mod common;
#[path = "common/gpu.rs"]
mod gpu;

use glam::{Affine3A, Vec3};
use sightline::scene::{load_obj, procedural, LoadOptions};
use sightline::trace::{Segment, SplitMix64};
use sightline::{Engine, Mask, Mesh, Mobility, Scene};

/// Eyes over the scene, each with a run of segments (lengths 1 to 40, and a few long runs
/// that cross the CPU backend's 256-segment tasks): half to random points within 30 m, half to
/// a vertex, an edge midpoint or the centre of a random triangle (ends on geometry).
fn fans(scene: &Scene, n: usize, seed: u64) -> Vec<Segment> {
    let (lo, hi) = scene.bounds().expect("non-empty scene");
    let tris: Vec<[Vec3; 3]> = scene
        .world_triangles()
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    let mut rng = SplitMix64(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let eye = rng.in_box(lo, hi);
        let run = match rng.range(0.0, 10.0) as u32 {
            0 => 300,
            1 => 5 + rng.range(0.0, 3.0) as usize,
            _ => 1 + rng.range(0.0, 40.0) as usize,
        };
        for k in 0..run {
            let end = if k % 2 == 0 {
                eye + rng.unit_vector() * rng.range(0.5, 30.0)
            } else {
                let [a, b, c] = tris[rng.range(0.0, tris.len() as f32) as usize % tris.len()];
                match k % 6 {
                    1 => a,
                    3 => (a + b) * 0.5,
                    _ => (a + b + c) / 3.0,
                }
            };
            if end != eye {
                out.push(Segment::new(eye, end));
            }
        }
    }
    out.truncate(n);
    out
}

/// Every bit of `occluded` over the whole batch (packets) equals the one-segment call's
/// (single rays), for each mask.
fn packets_equal_single_rays(scene: &Scene, label: &str, n: usize) {
    let cpu = Engine::cpu();
    let segs = fans(scene, n, 0xFA45);
    for mask in [Mask::SIGHT, Mask::FIRE, Mask::ANY_SOLID] {
        let batch = cpu.occluded(scene, &segs, mask).unwrap();
        let mut blocked = 0;
        for (i, s) in segs.iter().enumerate() {
            let single = cpu.occluded(scene, &[*s], mask).unwrap().get(0);
            assert_eq!(
                batch.get(i),
                single,
                "{label} {mask:?}: segment {i} {s:?} differs between packet and single ray"
            );
            blocked += usize::from(single);
        }
        eprintln!("{label} {mask:?}: {n} segments, {blocked} blocked, every bit equal");
        assert!(
            blocked > n / 50 && blocked < n - n / 50,
            "{label}: a mix of answers"
        );
    }
}

#[test]
fn fans_in_packets_answer_as_single_rays_on_built_in_levels() {
    for name in ["village", "urban"] {
        let scene = procedural::by_name(name, 7, 1).unwrap();
        packets_equal_single_rays(&scene, name, 60_000);
    }
}

#[test]
fn fans_in_packets_answer_as_single_rays_on_dungeon_obj() {
    let path = common::data_dir().join("dungeon.obj");
    let (scene, _) = load_obj(&path, &LoadOptions::default()).unwrap();
    packets_equal_single_rays(&scene, "dungeon.obj", 60_000);
}

#[test]
fn fans_in_packets_answer_as_single_rays_across_tiers() {
    let mut scene = procedural::by_name("village", 3, 1).unwrap();
    let (lo, hi) = scene.bounds().unwrap();
    let mut rng = SplitMix64(11);
    for k in 0..12 {
        let mut wall = Mesh::default();
        wall.push_quad(
            Vec3::new(-2.0, 0.0, 0.0),
            Vec3::new(2.0, 0.0, 0.0),
            Vec3::new(2.0, 3.0, 0.0),
            Vec3::new(-2.0, 3.0, 0.0),
            0,
        );
        let at = rng.in_box(lo, hi);
        let place = Affine3A::from_rotation_translation(glam::Quat::from_rotation_y(k as f32), at);
        let mobility = if k % 2 == 0 {
            Mobility::Movable
        } else {
            Mobility::Static
        };
        let id = scene.add_object(wall, place, mobility).unwrap();
        if k % 3 == 0 {
            let moved = Affine3A::from_translation(Vec3::X * 1.5) * place;
            scene.set_transform(id, moved).unwrap();
        }
    }
    assert!(scene.tiers().len() > 1, "moved objects make a second tier");
    packets_equal_single_rays(&scene, "village with moved walls", 40_000);
}

/// The fan API gives the bits `occluded` gives for the same segments, on both backends.
#[test]
fn the_fan_call_equals_the_segment_call() {
    let scene = procedural::by_name("village", 5, 1).unwrap();
    let (lo, hi) = scene.bounds().unwrap();
    let mut rng = SplitMix64(21);
    let eye = (lo + hi) * 0.5 + Vec3::Y * 2.0;
    let ends: Vec<Vec3> = (0..5_000).map(|_| rng.in_box(lo, hi)).collect();
    let segs: Vec<Segment> = ends.iter().map(|&e| Segment::new(eye, e)).collect();
    let mut engines = vec![Engine::cpu()];
    engines.extend(gpu::gpu_engine());
    for e in &engines {
        let fan = e.occluded_from(&scene, eye, &ends, Mask::SIGHT).unwrap();
        let plain = e.occluded(&scene, &segs, Mask::SIGHT).unwrap();
        assert_eq!(fan.len(), ends.len());
        let differ = (0..ends.len())
            .filter(|&i| fan.get(i) != plain.get(i))
            .count();
        assert_eq!(differ, 0, "{:?}", e.backend());
    }
    let err = engines[0]
        .occluded_from(&scene, eye, &[eye, Vec3::NAN], Mask::SIGHT)
        .unwrap_err();
    assert!(err.to_string().contains("NaN"), "{err}");
}
