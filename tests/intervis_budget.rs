//! The intervis pixel budget (`IntervisParams::max_box_pixels`): close pairs whose padded box
//! would hold more pixels are measured at a lower resolution with their counts scaled back.
//! On `urban` and the Recast dungeon (`dungeon.obj`), capped records stay within the stated
//! error (`MAX_BOX_PIXELS_ERROR`) of the uncapped measurement, and the GPU's capped records
//! agree with the CPU twin's.

#[path = "common/mod.rs"]
mod common;
#[path = "common/contract.rs"]
mod contract;
#[path = "common/gpu.rs"]
mod gpu;

use glam::Vec3;
use sightline::cover::Posture;
use sightline::intervis::measure::{
    measure, measure_ray_cast, IntervisPair, IntervisParams, MAX_BOX_PIXELS_ERROR,
};
use sightline::scene::procedural;
use sightline::tables::{sample_waypoints, PrecomputeParams};
use sightline::trace::SplitMix64;
use sightline::{Engine, Scene};

/// Seeded ordered pairs of walkable waypoints 0.8..8 m apart (eye 1.7 m up), postures mixed.
fn close_pairs(scene: &Scene, spacing: f32, count: usize) -> Vec<IntervisPair> {
    let cpu = Engine::cpu();
    let w = sample_waypoints(&cpu, scene, spacing, PrecomputeParams::default().max_slope).unwrap();
    let mut rng = SplitMix64(77);
    let mut out = Vec::new();
    for _ in 0..count * 400 {
        if out.len() == count {
            break;
        }
        let i = (rng.next_u64() % w.len() as u64) as usize;
        let j = (rng.next_u64() % w.len() as u64) as usize;
        let d = w[i].distance(w[j]);
        if i != j && (0.8..8.0).contains(&d) {
            out.push(IntervisPair {
                observer: w[i] + Vec3::Y * 1.7,
                target: w[j],
                posture: Posture::ALL[out.len() % 3],
            });
        }
    }
    assert_eq!(out.len(), count, "not enough close pairs");
    out
}

/// Capped against uncapped CPU records of `pairs`: returns (capped pairs checked, worst
/// exposed deviation as a share of its allowance, worst occlusion and contrast deviations).
fn capped_error(name: &str, scene: &Scene, pairs: &[IntervisPair]) -> (usize, f32, f32, f32) {
    let cpu = Engine::cpu();
    let capped = IntervisParams::default();
    let whole = IntervisParams {
        max_box_pixels: capped.resolution * capped.resolution,
        ..capped
    };
    let c = measure_ray_cast(&cpu, scene, pairs, &capped).unwrap();
    let u = measure_ray_cast(&cpu, scene, pairs, &whole).unwrap();
    let (mut n, mut worst_n, mut worst_o, mut worst_c) = (0, 0.0f32, 0.0f32, 0.0f32);
    for (k, (c, u)) in c.iter().zip(&u).enumerate() {
        if u.box_pixels <= capped.max_box_pixels || u.exposed < 100 {
            continue;
        }
        n += 1;
        // One pixel of the coarse view stands for about this many of the full one.
        let scale = u.box_pixels as f32 / capped.max_box_pixels as f32;
        let allowance = MAX_BOX_PIXELS_ERROR * u.exposed as f32 + 3.0 * scale;
        let dn = (c.exposed as f32 - u.exposed as f32).abs() / allowance;
        let d_o = (c.occlusion - u.occlusion).abs();
        let d_c = (c.contrast - u.contrast).abs();
        (worst_n, worst_o, worst_c) = (worst_n.max(dn), worst_o.max(d_o), worst_c.max(d_c));
        let ok = dn <= 1.0 && d_o <= MAX_BOX_PIXELS_ERROR && d_c <= MAX_BOX_PIXELS_ERROR;
        assert!(
            ok,
            "{name} pair {k} {:?}:\n  capped {c:?}\n  whole  {u:?}",
            pairs[k]
        );
        let ds = (c.solid_angle - u.solid_angle).abs() / u.solid_angle;
        assert!(
            ds <= MAX_BOX_PIXELS_ERROR,
            "{name} pair {k}: solid angle {ds}"
        );
    }
    println!(
        "{name}: {n} of {} close pairs capped with 100+ exposed pixels, all within the stated \
         error; worst n_t {worst_n:.2} of its allowance, O {worst_o:.4}, C {worst_c:.4}",
        pairs.len()
    );
    (n, worst_n, worst_o, worst_c)
}

/// The GPU's capped records against the CPU twin's: counts within 2 % (plus 2 pixels of the
/// coarse view, scaled) and occlusion within 0.02 (plus 2 pixels' worth). Where the eye lies
/// in the plane of a face near it (a roof edge both ends stand on), that face is seen edge-on:
/// a line of pixels across the box sits on the contract's boundary, and one more such line
/// (the box's side) is allowed.
fn gpu_agrees(name: &str, scene: &Scene, pairs: &[IntervisPair]) {
    let Some(engine) = gpu::gpu_engine() else {
        return;
    };
    let params = IntervisParams::default();
    let g = measure(&engine, scene, pairs, &params).unwrap();
    let c = measure_ray_cast(&Engine::cpu(), scene, pairs, &params).unwrap();
    let (mut capped, mut edge_on) = (0, 0);
    let tris = contract::triangles(scene, sightline::Mask::SIGHT);
    for (k, (g, c)) in g.iter().zip(&c).enumerate() {
        assert_eq!(g.box_pixels, c.box_pixels, "{name} pair {k}: boxes differ");
        let scale = (c.box_pixels as f32 / params.max_box_pixels as f32).max(1.0);
        capped += usize::from(scale > 1.0);
        let pair = &pairs[k];
        let reach = f64::from(pair.observer.distance(pair.target)) + 2.0;
        let line = if contract::seen_edge_on(&tris, pair.observer, reach) {
            (c.box_pixels as f32).sqrt()
        } else {
            0.0
        };
        edge_on += usize::from(line > 0.0);
        let allow = |n: u32| n as f32 * 0.02 + 2.0 * scale + line;
        let seen = (c.exposed + c.occluded).max(1) as f32;
        let ok = (g.exposed as f32 - c.exposed as f32).abs() <= allow(c.exposed)
            && (g.occluded as f32 - c.occluded as f32).abs() <= allow(c.occluded)
            && (g.occlusion - c.occlusion).abs() <= 0.02 + (2.0 * scale + line) / seen;
        assert!(
            ok,
            "{name} pair {k} {:?}:\n  gpu {g:?}\n  cpu {c:?}",
            pairs[k]
        );
    }
    println!(
        "{name}: GPU agrees with the CPU twin on {} close pairs ({capped} capped, {edge_on} \
         with a face seen edge-on)",
        g.len()
    );
    assert!(capped > 10, "{name}: only {capped} capped pairs");
}

fn check(name: &str, scene: &Scene, spacing: f32) {
    let pairs = close_pairs(scene, spacing, 400);
    let (n, ..) = capped_error(name, scene, &pairs);
    assert!(
        n >= 20,
        "{name}: only {n} capped pairs with 100+ exposed pixels"
    );
    gpu_agrees(name, scene, &pairs);
}

#[test]
fn capped_boxes_stay_within_the_stated_error_in_urban() {
    check("urban", &procedural::urban(1, 1), 2.0);
}

#[test]
fn capped_boxes_stay_within_the_stated_error_in_the_dungeon() {
    let (scene, _) =
        sightline::scene::load(common::data_dir().join("dungeon.obj"), &Default::default())
            .unwrap();
    check("dungeon", &scene, 1.0);
}
