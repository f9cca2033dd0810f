//! The GPU path's round trips, counted: a repeated trace call creates nothing, stages nothing,
//! and makes one submission and one wait whatever the splitting; scene data is uploaded once
//! per revision; a pipelined stream answers as the single calls do, one submission and one wait
//! per batch; the CPU backend counts nothing; `auto` picks the backend that fits the adapter.

#[path = "common/gpu.rs"]
mod gpu;

use glam::{Affine3A, Vec3};
use sightline::scene::procedural;
use sightline::trace::SplitMix64;
use sightline::{
    Backend, Counters, Engine, EngineOptions, Mask, Mesh, Mobility, Ray, Scene, Segment,
};

fn random_segments(scene: &Scene, n: usize, seed: u64) -> Vec<Segment> {
    let (lo, hi) = scene.bounds().expect("non-empty scene");
    let mut rng = SplitMix64(seed);
    (0..n)
        .map(|_| Segment::new(rng.in_box(lo, hi), rng.in_box(lo, hi)))
        .collect()
}

fn random_rays(scene: &Scene, n: usize, seed: u64) -> Vec<Ray> {
    let (lo, hi) = scene.bounds().expect("non-empty scene");
    let mut rng = SplitMix64(seed);
    (0..n)
        .map(|_| Ray::new(rng.in_box(lo, hi), rng.unit_vector(), 200.0))
        .collect()
}

/// Bytes read back for a call of one slice: its results and the 4-byte stamp behind them (at
/// the next 8-byte offset), nothing else.
fn results_and_stamp(results: u64) -> u64 {
    results.next_multiple_of(8) + 4
}

fn total(e: &Engine) -> Counters {
    e.counters().total
}

/// Bytes a trace call may upload beyond its queries: two params blocks at the uniform offset
/// alignment (at most 256 bytes apart) per slice.
const PARAMS_SLACK: u64 = 2 * 272;

#[test]
fn a_repeated_occluded_call_creates_nothing_and_waits_once() {
    let Some(e) = gpu::gpu_engine() else { return };
    let scene = procedural::village(1, 1);
    let segs = random_segments(&scene, 100_000, 1);
    let first = e.occluded(&scene, &segs, Mask::SIGHT).unwrap();
    let before = total(&e);
    let again = e.occluded(&scene, &segs, Mask::SIGHT).unwrap();
    let d = total(&e).since(&before);
    assert_eq!(first, again);
    assert_eq!(d.submissions, 1, "{d:?}");
    assert_eq!(d.waits, 1, "{d:?}");
    assert_eq!(d.created(), 0, "{d:?}");
    assert_eq!(d.staging_writes, 0, "{d:?}");
    let queries = 100_000 * 32;
    assert!(
        (queries..=queries + PARAMS_SLACK).contains(&d.bytes_uploaded),
        "{d:?}"
    );
    assert_eq!(
        d.bytes_read_back,
        results_and_stamp(100_000u64.div_ceil(32) * 4),
        "{d:?}"
    );
}

#[test]
fn a_repeated_closest_hit_call_creates_nothing_and_waits_once() {
    let Some(e) = gpu::gpu_engine() else { return };
    let scene = procedural::rock(1, 1);
    let rays = random_rays(&scene, 50_000, 2);
    let first = e.closest_hit_records(&scene, &rays, Mask::SIGHT).unwrap();
    let before = total(&e);
    let again = e.closest_hit_records(&scene, &rays, Mask::SIGHT).unwrap();
    let d = total(&e).since(&before);
    assert_eq!(first, again);
    assert_eq!((d.submissions, d.waits, d.created()), (1, 1, 0), "{d:?}");
    assert_eq!(d.staging_writes, 0, "{d:?}");
    assert_eq!(d.bytes_read_back, results_and_stamp(50_000 * 32), "{d:?}");
}

/// A batch split into several slices (fewer than the 8 idle slots the workspace keeps) and a
/// scene cut into many chunks still make one submission and one wait.
#[test]
fn a_split_call_still_submits_once_and_waits_once() {
    let options = EngineOptions {
        max_binding_bytes: Some(64 << 10),
        ..Default::default()
    };
    let Some(e) = gpu::gpu_engine_with(options) else {
        return;
    };
    let scene = procedural::village(1, 1);
    let segs = random_segments(&scene, 12_000, 3);
    let want = Engine::cpu().occluded(&scene, &segs, Mask::SIGHT).unwrap();
    e.occluded(&scene, &segs, Mask::SIGHT).unwrap();
    let before = total(&e);
    assert_eq!(e.occluded(&scene, &segs, Mask::SIGHT).unwrap(), want);
    let d = total(&e).since(&before);
    assert!(
        e.gpu().unwrap().max_queries_per_dispatch() * 5 < 12_000,
        "the batch is split"
    );
    assert_eq!((d.submissions, d.waits, d.created()), (1, 1, 0), "{d:?}");
}

fn with_movable_box(mut scene: Scene) -> (Scene, sightline::ObjectId) {
    let mut mesh = Mesh::default();
    let (lo, hi) = (Vec3::new(-1.0, 0.0, -1.0), Vec3::new(1.0, 3.0, 1.0));
    let c = |x: f32, y: f32, z: f32| Vec3::new(x, y, z);
    mesh.push_quad(
        c(lo.x, lo.y, 0.0),
        c(hi.x, lo.y, 0.0),
        c(hi.x, hi.y, 0.0),
        c(lo.x, hi.y, 0.0),
        0,
    );
    let at = Affine3A::from_translation(Vec3::new(5.0, 0.0, 5.0));
    let id = scene.add_object(mesh, at, Mobility::Movable).unwrap();
    (scene, id)
}

#[test]
fn scene_data_is_uploaded_once_per_revision() {
    let Some(e) = gpu::gpu_engine() else { return };
    let (mut scene, door) = with_movable_box(procedural::village(1, 1));
    let segs = random_segments(&scene, 1_000, 4);
    e.occluded(&scene, &segs, Mask::SIGHT).unwrap();
    let both = e.counters().operation("scene");
    let tiers = scene.tiers();
    // Triangles (48 bytes), and the BVH's nodes (64 bytes) for the compute walk, or for the
    // ray-query walk the positions (36 bytes) and index (4 bytes) of each triangle that can
    // block.
    let bytes = |t: &sightline::scene::Tier| {
        let walk = if e.uses_ray_query() {
            t.triangles.iter().filter(|x| x.flags & 7 != 0).count() * 40
        } else {
            t.nodes.len() * 64
        };
        (walk + t.triangles.len() * 48) as u64
    };
    assert_eq!(both.bytes_uploaded, bytes(tiers[0]) + bytes(tiers[1]));
    e.occluded(&scene, &segs, Mask::SIGHT).unwrap();
    e.closest_hit(&scene, &random_rays(&scene, 1_000, 5), Mask::FIRE)
        .unwrap();
    assert_eq!(
        e.counters().operation("scene"),
        both,
        "no upload for the same revision"
    );
    // Moving the box re-uploads only the movable tier.
    let moved = Affine3A::from_translation(Vec3::new(6.0, 0.0, 5.0));
    scene.set_transform(door, moved).unwrap();
    e.occluded(&scene, &segs, Mask::SIGHT).unwrap();
    let d = e.counters().operation("scene").since(&both);
    assert_eq!(d.bytes_uploaded, bytes(scene.tiers()[1]), "{d:?}");
}

#[test]
fn a_stream_answers_as_single_calls_do_with_one_wait_per_batch() {
    let engines: Vec<Engine> = std::iter::once(Engine::cpu())
        .chain(gpu::gpu_engine())
        .collect();
    let scene = procedural::village(1, 1);
    let batches: Vec<Vec<Segment>> = (0..10)
        .map(|k| random_segments(&scene, 5_000 + 97 * k, 10 + k as u64))
        .chain([Vec::new()])
        .collect();
    for e in &engines {
        // The same engine's single calls: backends agree by contract, not bit for bit.
        let want: Vec<_> = batches
            .iter()
            .map(|b| e.occluded(&scene, b, Mask::SIGHT).unwrap())
            .collect();
        e.occluded(&scene, &batches[0], Mask::SIGHT).unwrap(); // scene upload, workspace
        let before = total(e);
        let mut got = Vec::new();
        e.occluded_stream(&scene, &batches, Mask::SIGHT, |k, bits| {
            assert_eq!(k, got.len());
            got.push(bits);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, want, "{:?}", e.backend());
        let d = total(e).since(&before);
        match e.backend() {
            Backend::Cpu => assert_eq!(d, Counters::default()),
            // The empty batch needs no GPU work.
            Backend::Gpu => assert_eq!((d.submissions, d.waits), (10, 10), "{d:?}"),
        }
    }
}

#[test]
fn a_closest_hit_stream_answers_as_single_calls_do() {
    let engines: Vec<Engine> = std::iter::once(Engine::cpu())
        .chain(gpu::gpu_engine())
        .collect();
    let scene = procedural::rock(2, 1);
    let rays = random_rays(&scene, 30_000, 6);
    for e in &engines {
        // The same engine's single call: backends agree by contract, not bit for bit.
        let want = e.closest_hit(&scene, &rays, Mask::SIGHT).unwrap();
        let mut got = Vec::new();
        e.closest_hit_stream(&scene, rays.chunks(7_000), Mask::SIGHT, |_, hits| {
            got.extend(hits);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, want, "{:?}", e.backend());
    }
}

#[test]
fn a_stream_stops_at_the_first_error() {
    let engines: Vec<Engine> = std::iter::once(Engine::cpu())
        .chain(gpu::gpu_engine())
        .collect();
    let scene = procedural::rock(1, 1);
    let good = random_segments(&scene, 100, 7);
    let bad = vec![Segment::new(Vec3::NAN, Vec3::ZERO)];
    for e in &engines {
        let mut seen = 0;
        let r = e.occluded_stream(&scene, [&good, &bad, &good], Mask::SIGHT, |_, _| {
            seen += 1;
            Ok(())
        });
        assert!(r.is_err(), "{:?}", e.backend());
        assert!(seen <= 1, "no batch after the bad one is answered");
        // The caller's error stops it too.
        let r = e.occluded_stream(&scene, [&good, &good], Mask::SIGHT, |k, _| match k {
            0 => Err(sightline::Error::InvalidInput("stop".into())),
            _ => panic!("batch {k} answered after an error"),
        });
        assert!(r.is_err());
    }
}

#[test]
fn the_cpu_backend_counts_nothing() {
    let e = Engine::cpu();
    let scene = procedural::rock(1, 1);
    e.occluded(&scene, &random_segments(&scene, 1_000, 8), Mask::SIGHT)
        .unwrap();
    assert_eq!(e.counters(), sightline::CounterReport::default());
}

/// `auto` takes the CPU backend when the adapter is a software rasterizer, and says why; a
/// real GPU is used.
#[test]
fn auto_picks_the_backend_that_fits_the_adapter() {
    let Some(forced) = gpu::gpu_engine() else {
        return;
    };
    let adapter = forced.adapter_name().unwrap().to_string();
    let auto = Engine::headless();
    if adapter.ends_with("Cpu)") {
        assert_eq!(auto.backend(), Backend::Cpu, "{adapter}");
        let why = auto.backend_reason().expect("a reason");
        assert!(why.contains("software rasterizer"), "{why}");
    } else {
        assert_eq!(auto.backend(), Backend::Gpu, "{adapter}");
        assert_eq!(auto.backend_reason(), None);
    }
}

/// A pass prepared and dropped without being encoded gives its buffers back, mapped again for
/// the next call: nothing is created or staged then.
#[test]
fn a_pass_dropped_unencoded_leaves_its_buffers_ready() {
    let Some(e) = gpu::gpu_engine() else { return };
    let scene = procedural::rock(1, 1);
    let segs = random_segments(&scene, 10_000, 9);
    let want = e.occluded(&scene, &segs, Mask::SIGHT).unwrap();
    let tracer = e.gpu().unwrap();
    drop(tracer.prepare_occluded(&scene, &segs, Mask::SIGHT).unwrap());
    let before = total(&e);
    assert_eq!(e.occluded(&scene, &segs, Mask::SIGHT).unwrap(), want);
    let d = total(&e).since(&before);
    assert_eq!((d.created(), d.staging_writes), (0, 0), "{d:?}");
}
