//! The line-of-sight table on the GPU (the `los_table` kernel): the CPU engine's table by the
//! agreement contract (bit for bit where the compiler does not fuse) on the built-in scenes, with and without a range (and exactly at it), for shards,
//! for scenes cut into chunks, for tables cut into many calls, and for a call larger than one
//! dispatch dimension; its counters (uploads grow with the waypoints, not the pairs; one
//! submission and one wait per call); empty and bad input, a lost device.

#[path = "common/contract.rs"]
mod contract;
#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/scenes.rs"]
mod scenes;

use glam::{Affine3A, Vec3};
use sightline::scene::procedural;
use sightline::tables::{self, compute_los, compute_los_shard, LosParams, LosTable};
use sightline::{Counters, Engine, EngineOptions, Mesh, Mobility, Scene, Segment};

fn waypoints(scene: &Scene, spacing: f32) -> Vec<Vec3> {
    let slope = std::f32::consts::FRAC_PI_4;
    tables::sample_waypoints(&Engine::cpu(), scene, spacing, slope).unwrap()
}

fn table(
    engine: &Engine,
    scene: &Scene,
    w: &[Vec3],
    p: &LosParams,
    range: Option<f32>,
    shard: (u32, u32),
) -> LosTable {
    compute_los_shard(engine, scene, w, p, range, shard, |_, _| {}).unwrap()
}

/// Panics naming the first pairs where the two tables differ; then compares the sees lists.
fn assert_same(label: &str, gpu: &LosTable, cpu: &LosTable) {
    let shape = |t: &LosTable| (t.n(), t.shard(), t.bit_count());
    assert_eq!(shape(gpu), shape(cpu), "{label}");
    if gpu.bits() != cpu.bits() {
        let mut differ = Vec::new();
        for i in (0..cpu.n()).filter(|&i| cpu.holds_row(i)) {
            differ.extend(
                (i + 1..cpu.n())
                    .filter(|&j| gpu.visible(i, j) != cpu.visible(i, j))
                    .map(|j| (i, j)),
            );
        }
        panic!(
            "{label}: {} of {} pairs differ, first {:?}",
            differ.len(),
            cpu.bit_count(),
            &differ[..differ.len().min(10)]
        );
    }
    assert_eq!(gpu, cpu, "{label}: sees lists");
}

/// What `f` cost on `engine` under `los_table` and under `occluded`.
fn counted<T>(engine: &Engine, f: impl FnOnce() -> T) -> (T, Counters, Counters) {
    let before = engine.counters();
    let out = f();
    let after = engine.counters();
    let op = |name| after.operation(name).since(&before.operation(name));
    (out, op("los_table"), op("occluded"))
}

/// The table as it was built before the `los_table` kernel: a segment per pair in range,
/// traced through `Engine::occluded`.
fn through_segments(engine: &Engine, scene: &Scene, w: &[Vec3], range: Option<f32>) -> LosTable {
    let p = LosParams::standard();
    let lift = Vec3::new(0.0, p.eye_height, 0.0);
    let r2 = range.map_or(f32::INFINITY, |r| r * r);
    let (mut segments, mut ends) = (Vec::new(), Vec::new());
    for i in 0..w.len() {
        for j in i + 1..w.len() {
            if w[i].distance_squared(w[j]) <= r2 {
                segments.push(Segment::new(w[i] + lift, w[j] + lift));
                ends.push((i as u32, j as u32));
            }
        }
    }
    let blocked = engine.occluded(scene, &segments, p.mask).unwrap();
    let seen = ends.iter().enumerate().filter(|&(k, _)| !blocked.get(k));
    LosTable::from_pairs(w.len() as u32, seen.map(|(_, &e)| e)).unwrap()
}

/// Pairs `n` waypoints make.
fn pairs(n: usize) -> u64 {
    (n as u64) * (n as u64).saturating_sub(1) / 2
}

/// `theirs` against the plain CPU twin's table by the agreement contract: a pair may differ
/// only where its eye-to-eye segment passes within the boundary band of a triangle edge
/// (`tests/common/contract.rs`); at most 5 in 10,000 pairs (`sniper`, built on the grid, has
/// the most grazing sight lines). Returns the pairs that differ.
fn assert_contract(
    label: &str,
    theirs: &LosTable,
    cpu: &LosTable,
    scene: &Scene,
    w: &[Vec3],
) -> usize {
    let shape = |t: &LosTable| (t.n(), t.shard(), t.bit_count());
    assert_eq!(shape(theirs), shape(cpu), "{label}");
    if theirs == cpu {
        return 0;
    }
    let p = LosParams::standard();
    let lift = Vec3::Y * p.eye_height;
    let tris = contract::triangles(scene, p.mask);
    let mut differ = 0;
    for i in (0..cpu.n()).filter(|&i| cpu.holds_row(i)) {
        for j in (i + 1..cpu.n()).filter(|&j| theirs.visible(i, j) != cpu.visible(i, j)) {
            differ += 1;
            let (a, b) = (w[i as usize] + lift, w[j as usize] + lift);
            assert!(
                contract::near_boundary(&tris, a, b),
                "{label}: pair {i}-{j} differs but its sight line passes clear of every edge"
            );
        }
    }
    assert!(
        differ as u64 * 2_000 <= cpu.bit_count(),
        "{label}: {differ} pairs differ"
    );
    differ
}

#[test]
fn gpu_tables_equal_the_cpu_tables_on_the_built_in_scenes() {
    let p = LosParams::standard();
    let twins = gpu::twins();
    for (name, scene, spacing, range) in [
        ("sniper", procedural::sniper(1, 1), 3.0, 40.0),
        ("village", procedural::village(1, 1), 4.0, 30.0),
        ("urban", procedural::urban(1, 1), 6.0, 25.0),
    ] {
        let w = waypoints(&scene, spacing);
        let mut visible = Vec::new();
        for range in [None, Some(range)] {
            let cpu = table(&Engine::cpu(), &scene, &w, &p, range, (0, 1));
            let label = format!("{name}, {} waypoints, range {range:?}", w.len());
            for (twin, other) in &twins {
                let (theirs, los, occluded) =
                    counted(other, || table(other, &scene, &w, &p, range, (0, 1)));
                let differ =
                    assert_contract(&format!("{label}, {twin}"), &theirs, &cpu, &scene, &w);
                eprintln!(
                    "{label}, {twin}: {} of {} pairs visible, {differ} differ",
                    cpu.visible_pairs(),
                    cpu.bit_count()
                );
                if twin != "gpu" {
                    continue;
                }
                assert!(los.submissions == 1 && los.waits == 1, "{label}: {los}");
                assert_eq!(occluded, Counters::default(), "{label}: traced segments");
                // The same walk as `occluded` on the same device, but the kernel builds the
                // segments itself: a compiler may round them differently, so by the contract.
                let peer = through_segments(other, &scene, &w, range);
                assert_contract(
                    &format!("{label}, against segments"),
                    &theirs,
                    &peer,
                    &scene,
                    &w,
                );
            }
            visible.push(cpu.visible_pairs());
        }
        assert!(
            0 < visible[1] && visible[1] < visible[0] && visible[0] < pairs(w.len()),
            "{name}: the range must drop some visible pairs, {visible:?}"
        );
    }
}

#[test]
fn shards_and_calls_of_any_size_give_the_cpu_bits() {
    let Some(gpu) = gpu::gpu_engine() else { return };
    let scene = procedural::village(1, 1);
    let w = waypoints(&scene, 6.0);
    let cpu = Engine::cpu();
    // 33 and 4,099 pairs: calls start and end in the middle of words and of rows.
    for (per_call, shard, range) in [
        (4_099, (0, 1), None),
        (33, (1, 3), Some(30.0)),
        (4_099, (0, 3), None),
        (4_099, (1, 3), None),
        (4_099, (2, 3), Some(30.0)),
        (1 << 26, (5, 7), None),
    ] {
        let p = LosParams {
            pairs_per_gpu_call: per_call,
            ..LosParams::standard()
        };
        let want = table(&cpu, &scene, &w, &p, range, shard);
        let (got, los, _) = counted(&gpu, || table(&gpu, &scene, &w, &p, range, shard));
        let label = format!("shard {shard:?}, {per_call} pairs a call, range {range:?}");
        let calls = want.bit_count().div_ceil(per_call as u64);
        assert!(calls > 1 || per_call == 1 << 26, "{label}: {calls} calls");
        assert_eq!((los.submissions, los.waits), (calls, calls), "{label}");
        assert_contract(&label, &got, &want, &scene, &w);
    }
    // A call per pair.
    let few = &w[..40];
    let p = LosParams {
        pairs_per_gpu_call: 1,
        ..LosParams::standard()
    };
    let (got, los, _) = counted(&gpu, || table(&gpu, &scene, few, &p, None, (0, 1)));
    assert_eq!(los.submissions, pairs(40));
    assert_same(
        "a pair a call",
        &got,
        &table(&cpu, &scene, few, &p, None, (0, 1)),
    );
}

#[test]
fn scenes_cut_into_chunks_give_the_cpu_bits() {
    let Some(_) = gpu::gpu_engine() else { return };
    let small = gpu::gpu_engine_with(EngineOptions {
        max_binding_bytes: Some(64 << 10),
        ..Default::default()
    })
    .unwrap();
    let p = LosParams::standard();
    for (name, scene, spacing) in [
        ("village", procedural::village(2, 1), 3.0),
        ("sniper", procedural::sniper(1, 1), 4.0),
    ] {
        let w = waypoints(&scene, spacing);
        let before = small.counters().operation("scene");
        let (got, los, occluded) =
            counted(&small, || table(&small, &scene, &w, &p, Some(45.0), (0, 1)));
        let scene_buffers = small.counters().operation("scene").since(&before);
        assert!(
            scene_buffers.buffers_created > 4,
            "{name}: the scene should be cut into chunks: {scene_buffers}"
        );
        // The bits of a call fill at most one 64 KiB binding.
        let calls = pairs(w.len()).div_ceil(64 << 13);
        let label = format!("{name}, {} waypoints: {los}", w.len());
        assert_eq!((los.submissions, los.waits), (calls, calls), "{label}");
        assert_eq!(occluded, Counters::default(), "{label}");
        eprintln!("{label}");
        let want = table(&Engine::cpu(), &scene, &w, &p, Some(45.0), (0, 1));
        assert_contract(&format!("{name} in chunks"), &got, &want, &scene, &w);
    }
}

/// A flat field with a few walls and `side * side` waypoints on a 1.5 m grid.
fn walled_field(side: usize) -> (Scene, Vec<Vec3>) {
    let mut mesh = Mesh::default();
    scenes::ground(&mut mesh, 60.0, 0.0);
    for k in 0..6 {
        // Off the waypoints' 1.5 m lines: no sight line runs in a wall's face.
        let x = -30.2 + 11.0 * k as f32;
        let lo = Vec3::new(x, 0.0, -20.0 + 3.0 * k as f32);
        scenes::cuboid(&mut mesh, lo, lo + Vec3::new(0.4, 2.5, 14.0), scenes::SOLID);
    }
    let mut scene = Scene::new(scenes::materials());
    let at = Affine3A::IDENTITY;
    scene.add_object(mesh, at, Mobility::Static).unwrap();
    let w = (0..side * side)
        .map(|k| {
            Vec3::new(
                (k % side) as f32 * 1.5 - 40.0,
                0.0,
                (k / side) as f32 * 1.5 - 40.0,
            )
        })
        .collect();
    (scene, w)
}

#[test]
fn a_call_over_one_dispatch_dimension_gives_the_cpu_bits() {
    let Some(gpu) = gpu::gpu_engine() else { return };
    let (scene, w) = walled_field(54);
    let limit = gpu.gpu().unwrap().device().limits();
    let one_dimension = u64::from(limit.max_compute_workgroups_per_dimension) * 64;
    assert!(pairs(w.len()) > one_dimension, "{} pairs", pairs(w.len()));
    let p = LosParams::standard();
    let (got, los, _) = counted(&gpu, || table(&gpu, &scene, &w, &p, None, (0, 1)));
    assert_eq!((los.submissions, los.waits), (1, 1));
    let want = table(&Engine::cpu(), &scene, &w, &p, None, (0, 1));
    assert!(want.visible_pairs() > 0 && want.visible_pairs() < want.bit_count());
    assert_contract("one call over 2D", &got, &want, &scene, &w);
}

#[test]
fn uploads_grow_with_waypoints_and_each_call_waits_once() {
    let Some(gpu) = gpu::gpu_engine() else { return };
    let scene = procedural::village(1, 1);
    let w = waypoints(&scene, 5.0);
    let (n, total) = (w.len() as u64, pairs(w.len()));
    for per_call in [1 << 26, 50_000, 12_345] {
        let p = LosParams {
            pairs_per_gpu_call: per_call,
            ..LosParams::standard()
        };
        let (t, los, occluded) = counted(&gpu, || table(&gpu, &scene, &w, &p, None, (0, 1)));
        let calls = total.div_ceil(per_call as u64);
        let label = format!("{n} waypoints, {total} pairs, {calls} calls: {los}");
        assert_eq!(t.bit_count(), total);
        assert_eq!((los.submissions, los.waits), (calls, calls), "{label}");
        assert!(los.bytes_uploaded <= 64 * n + 64 * calls, "{label}");
        assert!(los.bytes_uploaded < total / 8, "{label}: not per pair");
        let full = (total / per_call as u64) * (per_call as u64).div_ceil(32) * 4;
        let last = (total % per_call as u64).div_ceil(32) * 4;
        assert_eq!(los.bytes_read_back, full + last, "{label}: only the bits");
        assert_eq!(
            los.buffers_created, 4,
            "{label}: buffers reused across calls"
        );
        assert_eq!(occluded, Counters::default());
    }
}

#[test]
fn pairs_at_the_range_follow_the_cpu_rounding() {
    let Some(gpu) = gpu::gpu_engine() else { return };
    // Open ground: every pair in range is visible. Irregular heights make the squared
    // distances round; the range is set a rounding step below and at one pair's distance.
    let mut mesh = Mesh::default();
    scenes::ground(&mut mesh, 100.0, -5.0);
    let mut scene = Scene::new(scenes::materials());
    scene
        .add_object(mesh, Affine3A::IDENTITY, Mobility::Static)
        .unwrap();
    let w: Vec<Vec3> = (0..300)
        .map(|k| {
            let k = k as f32;
            Vec3::new(
                (k * 0.618).fract() * 60.0,
                (k * 0.377).fract() * 0.9,
                (k * 0.41).fract() * 60.0,
            )
        })
        .collect();
    let d2 = w[3].distance_squared(w[250]);
    let mut below = d2.sqrt();
    while below * below >= d2 {
        below = f32::from_bits(below.to_bits() - 1);
    }
    let at = f32::from_bits(below.to_bits() + 1);
    assert!(below * below < d2 && at * at >= d2);
    let p = LosParams::standard();
    for (r, seen) in [(below, false), (at, true)] {
        let got = table(&gpu, &scene, &w, &p, Some(r), (0, 1));
        assert_eq!(got.visible(3, 250), seen, "range {r}, squared {d2}");
        assert_same(
            &format!("range {r}"),
            &got,
            &table(&Engine::cpu(), &scene, &w, &p, Some(r), (0, 1)),
        );
    }
}

#[test]
fn empty_and_bad_input_match_the_cpu() {
    let Some(gpu) = gpu::gpu_engine() else { return };
    let cpu = Engine::cpu();
    let scene = procedural::village(1, 1);
    let p = LosParams::standard();
    let w = waypoints(&scene, 8.0);
    for n in [0, 1, 2, 3] {
        let label = format!("{n} waypoints");
        let want = table(&cpu, &scene, &w[..n], &p, None, (0, 1));
        assert_same(
            &label,
            &table(&gpu, &scene, &w[..n], &p, None, (0, 1)),
            &want,
        );
        let want = table(&cpu, &scene, &w[..n], &p, None, (2, 3));
        assert_same(
            &label,
            &table(&gpu, &scene, &w[..n], &p, None, (2, 3)),
            &want,
        );
    }
    // Nothing blocks in an empty scene; the range still applies.
    let empty = Scene::new(scenes::materials());
    let all = table(&gpu, &empty, &w, &p, Some(20.0), (0, 1));
    assert_same(
        "empty scene",
        &all,
        &table(&cpu, &empty, &w, &p, Some(20.0), (0, 1)),
    );
    let mut bad = w[..10].to_vec();
    for (what, point) in [
        ("NaN", Vec3::new(f32::NAN, 0.0, 0.0)),
        ("far", Vec3::new(0.0, 2e9, 0.0)),
    ] {
        bad[4] = point;
        for engine in [&cpu, &gpu] {
            let e = compute_los(engine, &scene, &bad, &p, None, |_, _| {}).unwrap_err();
            assert!(e.to_string().contains("waypoint 4"), "{what}: {e}");
        }
    }
    let lifted = LosParams {
        eye_height: f32::NAN,
        ..p
    };
    for engine in [&cpu, &gpu] {
        assert!(compute_los(engine, &scene, &w, &lifted, None, |_, _| {}).is_err());
        assert!(compute_los(engine, &scene, &w, &p, Some(-1.0), |_, _| {}).is_err());
        let shard = compute_los_shard(engine, &scene, &w, &p, None, (3, 3), |_, _| {});
        assert!(shard.is_err());
    }
}

#[test]
fn a_lost_device_is_an_error_not_a_panic() {
    let Some(gpu) = gpu::gpu_engine() else { return };
    let scene = procedural::village(1, 1);
    let w = waypoints(&scene, 8.0);
    let p = LosParams::standard();
    assert!(compute_los(&gpu, &scene, &w, &p, None, |_, _| {}).is_ok());
    gpu.gpu().unwrap().device().destroy();
    let err = compute_los(&gpu, &scene, &w, &p, None, |_, _| {}).unwrap_err();
    assert!(
        matches!(
            err,
            sightline::Error::DeviceLost(_) | sightline::Error::Gpu(_)
        ),
        "{err}"
    );
}
