//! GPU batch sizes: occlusion rays per second of `Engine::occluded` on the GPU backend for
//! batches of 1k, 10k, 100k and 1M random long segments over `village`, with the CPU backend
//! beside each in the same group (`cpu`, `gpu` on the compute kernels and, where the adapter
//! offers wgpu's ray queries, `gpu-rq` on them); a coherent fan (one eye 1.6 m above the
//! ground, 64 x 64 targets 0.5 m above it, found with downward `closest_hit` rays, row-major),
//! the case of a sensor grid; the time of one 32-segment call (the per-call overhead:
//! upload, dispatch, submit, readback); and ten batches of 100k traced by ten sequential calls
//! against one pipelined `Engine::occluded_stream` (`stream/village/10x100k`). Each GPU figure
//! is followed on stderr by the engine's counters per call in its last sample (`counters per
//! call: ...`: submissions, waits, bytes uploaded and read back, buffers and textures created).
//! `SIGHTLINE_BENCH_SWEEP=1` adds batches of 4M and 16M segments (for a real GPU).
//!
//! ```text
//! WGPU_BACKEND=vulkan cargo bench --bench gpu     # full run
//! cargo test --release --benches                  # each function once (smoke test)
//! ```
//!
//! On a machine without a GPU the `gpu` functions run on Mesa's lavapipe, a Vulkan driver that
//! executes the kernels on the same CPU cores as the `cpu` backend: its figures say how the
//! batch size moves the per-call cost, not what a GPU does. Absolute GPU figures need a real
//! GPU. `SIGHTLINE_REQUIRE_GPU=1` panics instead of skipping the `gpu` functions when no
//! adapter exists. Setup (scene size, the adapter, GPU-CPU agreement) goes to stderr.

#[path = "common/mod.rs"]
mod common;

use common::gpu_engines;
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput};
use glam::Vec3;
use sightline::scene::procedural;
use sightline::trace::{Ray, Segment, SplitMix64};
use sightline::{Counters, Engine, Mask, Scene};
use std::cell::Cell;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Batch sizes of the throughput groups.
const BATCHES: [(usize, &str); 4] = [
    (1_000, "1k"),
    (10_000, "10k"),
    (100_000, "100k"),
    (1_000_000, "1M"),
];

/// Segments of the per-call overhead group.
const SMALL_CALL: usize = 32;

/// Both ends uniform in the scene's bounds (the `long` segments of `benches/trace.rs`).
fn long_segments(scene: &Scene, n: usize, seed: u64) -> Vec<Segment> {
    let (lo, hi) = scene.bounds().expect("non-empty scene");
    let mut rng = SplitMix64(seed);
    (0..n)
        .map(|_| Segment::new(rng.in_box(lo, hi), rng.in_box(lo, hi)))
        .collect()
}

/// The first hit of a ray straight down from above the scene at (x, z).
fn ground(engine: &Engine, scene: &Scene, xz: &[(f32, f32)]) -> Vec<Option<Vec3>> {
    let top = scene.bounds().expect("non-empty scene").1.y + 1.0;
    let rays: Vec<Ray> = xz
        .iter()
        .map(|&(x, z)| Ray::new(Vec3::new(x, top, z), Vec3::NEG_Y, f32::INFINITY))
        .collect();
    let hits = engine.closest_hit(scene, &rays, Mask::SIGHT).unwrap();
    rays.iter()
        .zip(hits)
        .map(|(r, h)| h.map(|h| r.origin() + r.dir() * h.t))
        .collect()
}

/// One eye 1.6 m above the lowest ground near the scene's centre (a street, not a roof), and a
/// sight line to a point 0.5 m above the ground under each of 64 x 64 grid points spanning
/// the scene, row-major.
fn fan(scene: &Scene) -> Vec<Segment> {
    let cpu = Engine::cpu();
    let (lo, hi) = scene.bounds().expect("non-empty scene");
    let c = (lo + hi) * 0.5;
    let near: Vec<(f32, f32)> = (0..256)
        .map(|k| {
            (
                c.x + (k % 16) as f32 * 1.5 - 12.0,
                c.z + (k / 16) as f32 * 1.5 - 12.0,
            )
        })
        .collect();
    let eye = ground(&cpu, scene, &near)
        .into_iter()
        .flatten()
        .min_by(|a, b| a.y.total_cmp(&b.y))
        .expect("ground near the centre")
        + Vec3::Y * 1.6;
    let n = 64;
    let grid: Vec<(f32, f32)> = (0..n * n)
        .map(|k| {
            let (row, col) = ((k / n) as f32 + 0.5, (k % n) as f32 + 0.5);
            (
                lo.x + (hi.x - lo.x) * col / n as f32,
                lo.z + (hi.z - lo.z) * row / n as f32,
            )
        })
        .collect();
    ground(&cpu, scene, &grid)
        .into_iter()
        .flatten()
        .map(|p| Segment::new(eye, p + Vec3::Y * 0.5))
        .collect()
}

/// Runs `f` as criterion's iterations on `gpu` and prints, for the last sample, the counters
/// of one iteration (`what: counters: ...`): nothing when the group is filtered out.
fn counted(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, gpu: &Engine, mut f: impl FnMut()) {
    let last = Cell::new(None);
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let before = gpu.counters().total;
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            let elapsed = t.elapsed();
            last.set(Some((gpu.counters().total.since(&before), iters)));
            elapsed
        })
    });
    if let Some((c, n)) = last.get() {
        let per = Counters {
            submissions: c.submissions / n,
            waits: c.waits / n,
            bytes_uploaded: c.bytes_uploaded / n,
            bytes_read_back: c.bytes_read_back / n,
            buffers_created: c.buffers_created / n,
            textures_created: c.textures_created / n,
            staging_writes: c.staging_writes / n,
        };
        eprintln!("{name}: counters per call ({n} calls): {per}");
    }
}

/// The batch sizes to run: `BATCHES`, plus 4M and 16M under `SIGHTLINE_BENCH_SWEEP=1`.
fn sizes() -> Vec<(usize, &'static str)> {
    let mut sizes = BATCHES.to_vec();
    if std::env::var("SIGHTLINE_BENCH_SWEEP").is_ok_and(|v| v == "1") {
        sizes.extend([(4_000_000, "4M"), (16_000_000, "16M")]);
    }
    sizes
}

fn batches(c: &mut Criterion, scene: &Scene, segs: &[Segment], gpus: &[(&'static str, Engine)]) {
    let cpu = Engine::cpu();
    for (n, name) in sizes() {
        let batch = &segs[..n];
        let mut g = c.benchmark_group(format!("occluded/village/{name}"));
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function("cpu", |b| {
            b.iter(|| cpu.occluded(scene, black_box(batch), Mask::SIGHT))
        });
        for (name, gpu) in gpus {
            counted(&mut g, name, gpu, || {
                black_box(gpu.occluded(scene, black_box(batch), Mask::SIGHT).unwrap());
            });
        }
        g.finish();
    }
}

fn coherent_fan(
    c: &mut Criterion,
    scene: &Scene,
    fan: &[Segment],
    gpus: &[(&'static str, Engine)],
) {
    let cpu = Engine::cpu();
    let mut g = c.benchmark_group("occluded/village/fan64x64");
    g.throughput(Throughput::Elements(fan.len() as u64));
    g.bench_function("cpu", |b| {
        b.iter(|| cpu.occluded(scene, black_box(fan), Mask::SIGHT))
    });
    for (name, gpu) in gpus {
        counted(&mut g, name, gpu, || {
            black_box(gpu.occluded(scene, black_box(fan), Mask::SIGHT).unwrap());
        });
    }
    g.finish();
}

fn call_overhead(
    c: &mut Criterion,
    scene: &Scene,
    segs: &[Segment],
    gpus: &[(&'static str, Engine)],
) {
    let cpu = Engine::cpu();
    let batch = &segs[..SMALL_CALL];
    let mut g = c.benchmark_group(format!("call/village/{SMALL_CALL}"));
    g.bench_function("cpu", |b| {
        b.iter(|| cpu.occluded(scene, black_box(batch), Mask::SIGHT))
    });
    for (name, gpu) in gpus {
        counted(&mut g, name, gpu, || {
            black_box(gpu.occluded(scene, black_box(batch), Mask::SIGHT).unwrap());
        });
    }
    g.finish();
}

/// Ten batches of 100k: ten sequential calls, and one pipelined stream (batch k + 1 uploaded
/// and submitted before batch k is read).
fn stream(c: &mut Criterion, scene: &Scene, segs: &[Segment], gpus: &[(&'static str, Engine)]) {
    let cpu = Engine::cpu();
    let tenth: Vec<&[Segment]> = segs.chunks(segs.len() / 10).take(10).collect();
    let sequential = |e: &Engine| {
        for b in &tenth {
            black_box(e.occluded(scene, b, Mask::SIGHT).unwrap());
        }
    };
    let streamed = |e: &Engine| {
        e.occluded_stream(scene, &tenth, Mask::SIGHT, |_, bits| {
            black_box(bits);
            Ok(())
        })
        .unwrap();
    };
    let mut g = c.benchmark_group("stream/village/10x100k");
    g.throughput(Throughput::Elements(segs.len() as u64));
    g.bench_function("cpu", |b| b.iter(|| sequential(&cpu)));
    for (name, gpu) in gpus {
        counted(&mut g, &format!("{name}-sequential"), gpu, || {
            sequential(gpu)
        });
        counted(&mut g, &format!("{name}-stream"), gpu, || streamed(gpu));
    }
    g.finish();
}

fn main() {
    let _ = env_logger::try_init();
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    let gpus = gpu_engines();
    let scene = procedural::village(1, 1);
    let largest = sizes().last().unwrap().0;
    let segs = long_segments(&scene, largest, 0x6770_7521);
    let fan = fan(&scene);
    let cpu_bits = Engine::cpu().occluded(&scene, &segs, Mask::SIGHT).unwrap();
    let cpu_fan = Engine::cpu().occluded(&scene, &fan, Mask::SIGHT).unwrap();
    eprintln!(
        "village: {} triangles; {:.1}% of {largest} long segments blocked; {} of {} fan \
         targets hidden; {} rayon threads",
        scene.triangle_count(),
        100.0 * cpu_bits.count_ones() as f64 / largest as f64,
        cpu_fan.count_ones(),
        fan.len(),
        rayon::current_num_threads()
    );
    for (name, gpu) in &gpus {
        let gpu_bits = gpu.occluded(&scene, &segs, Mask::SIGHT).unwrap();
        let differ = (0..largest)
            .filter(|&i| cpu_bits.get(i) != gpu_bits.get(i))
            .count();
        let gpu_fan = gpu.occluded(&scene, &fan, Mask::SIGHT).unwrap();
        eprintln!(
            "{name} and cpu differ on {differ} of {largest} long segments, {} of {} fan lines",
            (0..fan.len())
                .filter(|&i| cpu_fan.get(i) != gpu_fan.get(i))
                .count(),
            fan.len()
        );
        let tracer = gpu.gpu().expect("a GPU engine");
        eprintln!(
            "{name}: {} queries per dispatch at most",
            tracer.max_queries_per_dispatch()
        );
    }
    batches(&mut c, &scene, &segs, &gpus);
    coherent_fan(&mut c, &scene, &fan, &gpus);
    call_overhead(&mut c, &scene, &segs, &gpus);
    stream(&mut c, &scene, &segs[..1_000_000], &gpus);
    for (name, gpu) in &gpus {
        eprintln!(
            "{name} workspace: {:?}",
            gpu.gpu().unwrap().workspace_stats()
        );
    }
    c.final_summary();
}
