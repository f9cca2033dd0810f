//! Staged runs of segments (`Segment::staged`): every backend answers each run as if it traced
//! every segment (which stage first holds an unblocked segment), whatever it skipped; a
//! skipped segment is one whose run already had an unblocked segment at its stage or an
//! earlier one. On one and two scene chunks (the GPU stages in the last dispatch only), on
//! many (traced plain), and bad stages are errors.

mod common;
#[path = "common/gpu.rs"]
mod gpu;

use glam::{Affine3A, Vec3};
use sightline::scene::{load_obj, procedural, LoadOptions};
use sightline::trace::{Segment, SplitMix64};
use sightline::{Engine, EngineOptions, Error, Mask, Mesh, Mobility, RayQuery, Scene};

/// `runs` body-like runs: from a random eye to three stacked clusters of points around a
/// random spot (stages 0, 1 and 2 at 0.3, 0.9 and 1.5 m up), 10 to 60 points a stage.
fn body_runs(scene: &Scene, runs: usize, seed: u64) -> Vec<Segment> {
    let (lo, hi) = scene.bounds().expect("non-empty scene");
    let mut rng = SplitMix64(seed);
    let mut segs = Vec::new();
    for _ in 0..runs {
        let eye = rng.in_box(lo, hi);
        let spot = rng.in_box(lo, hi);
        let mut lead = 0;
        for stage in 0..3u32 {
            let per = 10 + (rng.next_u64() % 51) as usize;
            for _ in 0..per {
                let off = Vec3::new(rng.range(-0.4, 0.4), 0.3 + 0.6 * stage as f32, 0.0);
                let end = spot + off + Vec3::Z * rng.range(-0.4, 0.4);
                segs.push(Segment::new(eye, end).staged(lead, stage));
                lead += 1;
            }
        }
    }
    segs
}

/// Per run (a segment of lead 0 starts one), the first stage holding an unblocked segment;
/// 3 where every segment is blocked.
fn first_seen(segs: &[Segment], blocked: impl Fn(usize) -> bool) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    for (i, s) in segs.iter().enumerate() {
        let (lead, stage) = s.stage().expect("every segment is staged");
        if lead == 0 {
            out.push(3);
        }
        let last = out.last_mut().unwrap();
        if !blocked(i) {
            *last = (*last).min(stage);
        }
    }
    out
}

/// Traces `segs` staged and plain on `engine`: every staged bit set is set plainly, every
/// bit only the plain call sets belongs to a skippable segment, and the runs' answers agree.
/// Returns how many segments were skipped.
fn check(label: &str, engine: &Engine, scene: &Scene, segs: &[Segment]) -> usize {
    let plain: Vec<Segment> = segs.iter().map(|s| s.unstaged()).collect();
    let full = engine.occluded(scene, &plain, Mask::SIGHT).unwrap();
    let staged = engine.occluded(scene, segs, Mask::SIGHT).unwrap();
    let answers = first_seen(segs, |i| full.get(i));
    let mut run = 0;
    let mut skipped = 0;
    for (i, s) in segs.iter().enumerate() {
        let (lead, stage) = s.stage().unwrap();
        run += usize::from(lead == 0 && i > 0);
        match (staged.get(i), full.get(i)) {
            (true, plain) => assert!(plain, "{label}: segment {i} blocked only when staged"),
            (false, true) => {
                assert!(
                    answers[run] <= stage,
                    "{label}: segment {i} (stage {stage}) skipped, but its run is first seen \
                     at stage {}",
                    answers[run]
                );
                skipped += 1;
            }
            (false, false) => {}
        }
    }
    assert_eq!(first_seen(segs, |i| staged.get(i)), answers, "{label}");
    let hidden = answers.iter().filter(|&&a| a == 3).count();
    eprintln!(
        "{label}: {} runs ({hidden} hidden whole), {} segments, {skipped} skipped",
        answers.len(),
        segs.len()
    );
    skipped
}

fn dungeon() -> Scene {
    let path = common::data_dir().join("dungeon.obj");
    load_obj(path, &LoadOptions::default()).unwrap().0
}

/// `scene` with a movable wall across its middle: a second tier, so a second chunk.
fn with_a_movable_wall(mut scene: Scene) -> Scene {
    let (lo, hi) = scene.bounds().unwrap();
    let mid = (lo + hi) * 0.5;
    let mut wall = Mesh::default();
    let (w, h) = ((hi.x - lo.x) * 0.4, (hi.y - lo.y) * 0.8);
    wall.push_quad(
        Vec3::new(-w, 0.0, 0.0),
        Vec3::new(w, 0.0, 0.0),
        Vec3::new(w, h, 0.0),
        Vec3::new(-w, h, 0.0),
        0,
    );
    let at = Affine3A::from_translation(Vec3::new(mid.x, lo.y, mid.z));
    scene.add_object(wall, at, Mobility::Movable).unwrap();
    scene
}

/// The CPU backend traces every segment: staged or not, the same bits.
#[test]
fn the_cpu_backend_traces_staged_runs_whole() {
    let scene = dungeon();
    let segs = body_runs(&scene, 2_000, 5);
    assert_eq!(check("CPU, dungeon.obj", &Engine::cpu(), &scene, &segs), 0);
}

/// The GPU skips within runs on one chunk and on two (the movable tier first, the static one
/// staged), on the compute walk and on ray queries (where the adapter has them), and traces
/// plainly over more chunks; each run's answer stays the same. On lavapipe, whose workgroups
/// run in order, it does skip.
#[test]
fn the_gpu_skips_within_runs_and_keeps_their_answers() {
    let with = |ray_query| EngineOptions {
        ray_query,
        ..Default::default()
    };
    let Some(compute) = gpu::gpu_engine_with(with(RayQuery::Off)) else {
        return;
    };
    let rq = Engine::headless_gpu(with(RayQuery::On));
    if std::env::var("SIGHTLINE_RAY_QUERY").is_ok_and(|v| v == "on") {
        assert!(rq.is_ok(), "SIGHTLINE_RAY_QUERY=on but no ray-query engine");
    }
    let one = dungeon();
    let two = with_a_movable_wall(dungeon());
    for (gpu, walk) in std::iter::once((&compute, "compute")).chain(rq.iter().map(|e| (e, "rq"))) {
        let in_order = gpu.adapter_name().is_some_and(|n| n.contains("llvmpipe"));
        for (scene, label) in [(&one, "one chunk"), (&two, "two chunks")] {
            let segs = body_runs(scene, 5_000, 7);
            let skipped = check(&format!("GPU {walk}, {label}"), gpu, scene, &segs);
            assert!(
                !in_order || skipped > 0,
                "{walk}, {label}: lavapipe skipped nothing"
            );
        }
    }
    let small = gpu::gpu_engine_with(EngineOptions {
        max_binding_bytes: Some(64 << 10),
        ..Default::default()
    })
    .unwrap();
    let village = procedural::village(1, 1);
    let segs = body_runs(&village, 2_000, 9);
    assert_eq!(check("GPU, many chunks", &small, &village, &segs), 0);
}

/// Stages out of range and runs that are not consecutive are errors on both backends.
#[test]
fn bad_stages_are_errors() {
    let scene = procedural::rock(1, 1);
    let s = Segment::new(Vec3::ZERO, Vec3::ONE);
    let bad: [(&str, Vec<Segment>); 4] = [
        ("stage 3", vec![s.staged(0, 3)]),
        ("lead 2^30", vec![s.staged(1 << 30, 0)]),
        ("a run that starts before the batch", vec![s.staged(1, 0)]),
        ("a gap in a run", vec![s.staged(0, 0), s, s.staged(2, 1)]),
    ];
    let engines: Vec<Engine> = std::iter::once(Engine::cpu())
        .chain(gpu::gpu_engine())
        .collect();
    for engine in &engines {
        for (what, segs) in &bad {
            match engine.occluded(&scene, segs, Mask::SIGHT) {
                Err(Error::InvalidInput(m)) => assert!(m.contains("staged"), "{what}: {m}"),
                other => panic!("{what}: {other:?}"),
            }
        }
        let good = [s.staged(0, 0), s.staged(1, 2), s, s.staged(0, 1)];
        assert_eq!(
            engine.occluded(&scene, &good, Mask::SIGHT).unwrap().len(),
            4
        );
    }
}
