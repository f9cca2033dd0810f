//! Terrain reasoning on the built-in copy of van der Sterren's sniper level (*Terrain Reasoning
//! for 3D Action Games*, "The Terrain"; east is +X): the relations on both backends, door
//! patches against full recomputes, and where the top sniping spots fall.

#[path = "common/gpu.rs"]
mod gpu;

use glam::Vec3;
use sightline::nav::{generate, CostParams, NavGraph, NavParams};
use sightline::scene::procedural::{sniper, sniper_layout};
use sightline::terrain::patch::DoorPatch;
use sightline::terrain::{RelationParams, Relations};
use sightline::{Engine, Scene};
use std::sync::OnceLock;

fn level() -> &'static (Scene, NavGraph) {
    static L: OnceLock<(Scene, NavGraph)> = OnceLock::new();
    L.get_or_init(|| {
        let scene = sniper(1, 1);
        let (g, _) = generate(
            &Engine::cpu(),
            &scene,
            &NavParams::standard(),
            &CostParams::standard(),
        )
        .unwrap();
        (scene, g)
    })
}

#[test]
fn relations_agree_across_backends() {
    let (scene, g) = level();
    let cpu = Relations::compute(&Engine::cpu(), scene, g, &RelationParams::standard()).unwrap();
    let Some(gpu) = gpu::gpu_engine() else { return };
    let on_gpu = Relations::compute(&gpu, scene, g, &RelationParams::standard()).unwrap();
    let (a, b) = (cpu.sight_table(), on_gpu.sight_table());
    let differ = (0..a.bits().len())
        .map(|i| (a.bits()[i] ^ b.bits()[i]).count_ones())
        .sum::<u32>();
    // The watertight test may differ for rays within rounding of an edge; on this level none do.
    assert_eq!(differ, 0, "{differ} of {} pairs differ", a.bit_count());
    assert_eq!(cpu, on_gpu);
}

#[test]
fn closing_a_door_patches_exactly_what_a_full_recompute_gives() {
    let (scene, g) = level();
    let engine = Engine::cpu();
    let p = RelationParams::standard();
    let open = Relations::compute(&engine, scene, g, &p).unwrap();
    let layout = sniper_layout();
    for b in &layout.buildings {
        let mut scene = scene.clone();
        let patch =
            DoorPatch::new(&open, &scene, b.door_object, &[b.door_open, b.door_closed]).unwrap();
        // The door only touches pairs near it: a small share of all pairs.
        let all = open.len() * (open.len() - 1) / 2;
        assert!(
            !patch.pairs.is_empty() && patch.pairs.len() * 20 < all,
            "{} of {all} pairs",
            patch.pairs.len()
        );
        scene.set_transform(b.door_object, b.door_closed).unwrap();
        let mut patched = open.clone();
        let report = patched.apply(&engine, &scene, &patch).unwrap();
        let full = Relations::compute(&engine, &scene, g, &p).unwrap();
        assert!(report.changed_pairs > 0, "{report:?}");
        assert!(
            report.changed_edges > 0,
            "closing the door closes the doorway: {report:?}"
        );
        assert!(
            patched == full,
            "patched relations differ from a full recompute: {report:?}"
        );
        // Inside the building, the way out is now longer (or gone).
        let inside = g
            .nearest(Vec3::new(
                (b.min.x + b.max.x) / 2.0,
                0.0,
                (b.min.z + b.max.z) / 2.0,
            ))
            .unwrap();
        let outside = g.nearest(b.door + b.door_normal * 3.0).unwrap();
        let before = open.travel_time(inside, outside).unwrap();
        assert!(full.travel_time(inside, outside).is_none_or(|t| t > before));
        // Opening it again restores the original relations.
        scene.set_transform(b.door_object, b.door_open).unwrap();
        patched.apply(&engine, &scene, &patch).unwrap();
        assert!(patched == open, "reopened door");
    }
}

#[test]
fn a_patch_for_other_relations_or_objects_is_refused() {
    let (scene, g) = level();
    let rel = Relations::compute(&Engine::cpu(), scene, g, &RelationParams::standard()).unwrap();
    let b = &sniper_layout().buildings[0];
    // Object 0 is the static level.
    assert!(DoorPatch::new(&rel, scene, sightline::ObjectId(0), &[b.door_open]).is_err());
    assert!(DoorPatch::new(&rel, scene, b.door_object, &[]).is_err());
    let mut patch =
        DoorPatch::new(&rel, scene, b.door_object, &[b.door_open, b.door_closed]).unwrap();
    patch.pairs.push((0, rel.len() as u32));
    let mut r = rel.clone();
    assert!(r.apply(&Engine::cpu(), scene, &patch).is_err());
}
