//! Precomputation against Darken, McCue and Guerrero's Tables 1-3, on `urban` sampled at 2 m (its Table 2 setup):
//! all-pairs line of sight, intervis pairs per second (GPU stencil pass and its CPU ray-casting
//! twin), and file sizes.
//!
//! ```text
//! WGPU_BACKEND=vulkan cargo bench --bench tables
//! WGPU_BACKEND=vulkan cargo bench --bench tables -- tables/los_gpu   # the GPU table alone
//! WGPU_BACKEND=vulkan cargo bench --bench tables -- tables/intervis  # 1,000 random pairs, rows
//! ```
//!
//! Darken, McCue and Guerrero baselines (Intel Q6600, 2009 GPU): 7.16M line-of-sight pairs in 0.298 h; intervis
//! 14.3M pairs in 22.3 h (~178 pairs/s); 0.89 MB of line-of-sight bits and 28.1 MB of intervis
//! for 3,784 waypoints. Targets here: all-pairs line of sight under 2 s; intervis at least
//! 5,000 pairs/s.

#[path = "common/mod.rs"]
mod common;

use common::gpu_engine;
use criterion::{Criterion, Throughput};
use glam::Vec3;
use sightline::cover::Posture;
use sightline::intervis::measure::{measure, measure_ray_cast, IntervisPair, IntervisParams};
use sightline::scene::procedural;
use sightline::tables::{
    compute_los, sample_waypoints, LosParams, MappedTable, PrecomputeParams, TableFile,
};
use sightline::trace::{Segment, SplitMix64};
use sightline::{Counters, Engine, Scene};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Intervis pairs per measured call.
const PAIRS: usize = 1_000;

fn benches(c: &mut Criterion) {
    let scene = procedural::urban(1, 1);
    let cpu = Engine::cpu();
    let gpu = gpu_engine();
    let waypoints =
        sample_waypoints(&cpu, &scene, 2.0, PrecomputeParams::default().max_slope).unwrap();
    let n = waypoints.len();
    let los_params = LosParams::standard();

    // File sizes beside Darken, McCue and Guerrero's Table 3, from one full line-of-sight run and an intervis
    // sample extrapolated to all ordered pairs (labelled as an estimate).
    let los = compute_los(&cpu, &scene, &waypoints, &los_params, None, |_, _| {}).unwrap();
    let table = sightline::tables::precompute(
        &cpu,
        &scene,
        "urban",
        &PrecomputeParams::default(),
        None,
        None,
        |_, _, _| {},
    )
    .unwrap();
    let file_bytes = table.to_bytes().unwrap().len();
    let pairs = random_pairs(&waypoints, los_params.eye_height);
    let params = IntervisParams::standard();
    let sample = measure_ray_cast(&cpu, &scene, &pairs, &params).unwrap();
    let exposed = sample.iter().filter(|r| r.exposed > 0).count() as f64 / PAIRS as f64;
    let ordered = (n * (n - 1)) as f64;
    eprintln!(
        "urban at 2 m: {n} waypoints (Darken, McCue and Guerrero: 3,784); {} unordered pairs, {} visible; LOS bits {:.3} MB (seed: 0.89 MB); \
         whole LOS file with sees lists {:.2} MB; intervis: {:.1}% of sampled ordered pairs expose something -> \
         estimated {:.1} MB for all {} ordered pairs at 28 bytes per packed entry (seed: 28.1 MB)",
        los.bit_count(),
        los.visible_pairs(),
        los.bits().len() as f64 * 8.0 / 1e6,
        file_bytes as f64 / 1e6,
        exposed * 100.0,
        ordered * exposed * 28.0 / 1e6,
        ordered as u64
    );

    let mut g = c.benchmark_group("tables/los_all_pairs_urban_2m");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    g.throughput(Throughput::Elements(los.bit_count()));
    g.bench_function("cpu", |b| {
        b.iter(|| {
            black_box(compute_los(&cpu, &scene, &waypoints, &los_params, None, |_, _| {}).unwrap())
        })
    });
    if let Some(gpu) = &gpu {
        g.bench_function("gpu", |b| {
            b.iter(|| {
                black_box(
                    compute_los(gpu, &scene, &waypoints, &los_params, None, |_, _| {}).unwrap(),
                )
            })
        });
    }
    g.finish();

    read_back(c, &table, file_bytes);
    intervis(
        c,
        "tables/intervis_urban",
        &scene,
        &pairs,
        &params,
        gpu.as_ref(),
    );
    let rows = observer_rows(&waypoints, los_params.eye_height, ROW_PAIRS);
    intervis(
        c,
        "tables/intervis_rows_urban",
        &scene,
        &rows,
        &params,
        gpu.as_ref(),
    );
}

/// `PAIRS` seeded random ordered pairs of distinct waypoints, standing targets.
fn random_pairs(w: &[Vec3], eye_height: f32) -> Vec<IntervisPair> {
    let mut rng = SplitMix64(3);
    let mut pick = || (rng.next_u64() % w.len() as u64) as usize;
    (0..PAIRS)
        .map(|_| loop {
            let (i, j) = (pick(), pick());
            if i != j {
                break IntervisPair {
                    observer: w[i] + Vec3::Y * eye_height,
                    target: w[j],
                    posture: Posture::Standing,
                };
            }
        })
        .collect()
}

/// Pairs per measured call of the precomputation's shape.
const ROW_PAIRS: usize = 8192;

/// A precomputation's access pattern: whole observer rows (every waypoint within 30 m of the
/// observer, `precompute --range 30`), observers spread over the waypoints, `count` pairs.
fn observer_rows(w: &[Vec3], eye_height: f32, count: usize) -> Vec<IntervisPair> {
    let mut out = Vec::with_capacity(count);
    'rows: for i in (0..w.len()).step_by(97) {
        for (j, &t) in w.iter().enumerate() {
            if j != i && w[i].distance_squared(t) <= 900.0 {
                out.push(IntervisPair {
                    observer: w[i] + Vec3::Y * eye_height,
                    target: t,
                    posture: Posture::Standing,
                });
                if out.len() == count {
                    break 'rows;
                }
            }
        }
    }
    out
}

/// Reading the table back: the strict reader (every section checked: sees lists against the
/// bits, finite fields, reserved bytes) and the memory map (checksum and structure, rows on
/// demand), beside the floor of reading the file's bytes.
fn read_back(c: &mut Criterion, table: &TableFile, file_bytes: usize) {
    let path = std::env::temp_dir().join(format!("sightline-bench-{}.slt", std::process::id()));
    table.write_to(&path).unwrap();
    let mut g = c.benchmark_group("tables/read_urban_2m");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Bytes(file_bytes as u64));
    g.bench_function("fs_read_peer", |b| {
        b.iter(|| black_box(std::fs::read(&path).unwrap()))
    });
    g.bench_function("strict_read", |b| {
        b.iter(|| black_box(TableFile::read_from(&path).unwrap()))
    });
    g.bench_function("mapped_open", |b| {
        b.iter(|| black_box(MappedTable::open(&path).unwrap()))
    });
    g.finish();
    std::fs::remove_file(&path).ok();
}

/// Intervis of `pairs` (group `name`): the CPU twin and the GPU pass, then the counters of
/// one repeated GPU call.
fn intervis(
    c: &mut Criterion,
    name: &str,
    scene: &Scene,
    pairs: &[IntervisPair],
    params: &IntervisParams,
    gpu: Option<&Engine>,
) {
    let cpu = Engine::cpu();
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    g.throughput(Throughput::Elements(pairs.len() as u64));
    g.bench_function("cpu_twin", |b| {
        b.iter(|| black_box(measure_ray_cast(&cpu, scene, pairs, params).unwrap()))
    });
    if let Some(gpu) = gpu {
        g.bench_function("gpu", |b| {
            b.iter(|| black_box(measure(gpu, scene, pairs, params).unwrap()))
        });
    }
    g.finish();
    if let Some(gpu) = gpu {
        // What one more call on the same scene costs in GPU round trips and uploads.
        let before = gpu.counters().operation("intervis");
        black_box(measure(gpu, scene, pairs, params).unwrap());
        let once = gpu.counters().operation("intervis").since(&before);
        eprintln!(
            "{name}/gpu: {} pairs, {} scene triangles; one repeated call: {once}, buffers {}, \
             textures {}, staging writes {}",
            pairs.len(),
            scene.triangle_count(),
            once.buffers_created,
            once.textures_created,
            once.staging_writes
        );
    }
}

/// The old way to build a table on the GPU, kept as the peer of the `los_table` kernel: a
/// segment per pair, uploaded and traced through `Engine::occluded` in chunks of
/// `chunk_segments` (4M), the visible pairs' bits set from the answers.
fn through_segments(engine: &Engine, scene: &Scene, w: &[Vec3], p: &LosParams) -> Vec<u64> {
    let n = w.len();
    let lift = Vec3::new(0.0, p.eye_height, 0.0);
    let mut bits = vec![0u64; (n * n.saturating_sub(1) / 2).div_ceil(64)];
    let (mut segs, mut index) = (Vec::new(), Vec::new());
    let mut flush = |segs: &mut Vec<Segment>, index: &mut Vec<usize>| {
        let occ = engine.occluded(scene, segs, p.mask).unwrap();
        for (k, &bit) in index.iter().enumerate() {
            if !occ.get(k) {
                bits[bit / 64] |= 1 << (bit % 64);
            }
        }
        segs.clear();
        index.clear();
    };
    let mut bit = 0;
    for i in 0..n {
        for j in i + 1..n {
            segs.push(Segment::new(w[i] + lift, w[j] + lift));
            index.push(bit);
            bit += 1;
            if segs.len() == p.chunk_segments {
                flush(&mut segs, &mut index);
            }
        }
    }
    if !segs.is_empty() {
        flush(&mut segs, &mut index);
    }
    bits
}

/// All the GPU work `f` did on `engine` (scene uploads included).
fn counted<T>(engine: &Engine, f: impl FnOnce() -> T) -> (T, Counters) {
    let before = engine.counters().total;
    let out = f();
    (out, engine.counters().total.since(&before))
}

/// The all-pairs table on the GPU engine: `compute_los` (the `los_table` kernel: waypoints
/// uploaded, pairs derived on the GPU) against building the segments and calling
/// `Engine::occluded` in 4M chunks. `urban` at 4 m by default: at 2 m the segment peer takes
/// over a minute per run on lavapipe (`SIGHTLINE_BENCH_LOS_SPACING=2` to measure it anyway).
fn los_gpu(c: &mut Criterion) {
    let Some(gpu) = gpu_engine() else { return };
    let spacing: f32 = std::env::var("SIGHTLINE_BENCH_LOS_SPACING")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4.0);
    let scene = procedural::urban(1, 1);
    let w = sample_waypoints(&Engine::cpu(), &scene, spacing, std::f32::consts::FRAC_PI_4).unwrap();
    let p = LosParams::standard();
    let run = || compute_los(&gpu, &scene, &w, &p, None, |_, _| {}).unwrap();
    run(); // the scene upload and the pipeline, once
    let t = Instant::now();
    let (table, kernel) = counted(&gpu, run);
    let kernel_time = t.elapsed();
    let t = Instant::now();
    let (bits, peer) = counted(&gpu, || through_segments(&gpu, &scene, &w, &p));
    let peer_time = t.elapsed();
    assert_eq!(
        table.bits(),
        &bits[..],
        "the two ways must give the same bits"
    );
    eprintln!(
        "urban at {spacing} m: {} waypoints, {} pairs, {} visible; one run each:\n  \
         los_table: {kernel_time:.2?}, {kernel}, staging writes {}\n  \
         segments peer: {peer_time:.2?}, {peer}, staging writes {}",
        w.len(),
        table.bit_count(),
        table.visible_pairs(),
        kernel.staging_writes,
        peer.staging_writes,
    );
    let mut g = c.benchmark_group(format!("tables/los_gpu_urban_{spacing}m"));
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(20));
    g.throughput(Throughput::Elements(table.bit_count()));
    g.bench_function("segments_peer", |b| {
        b.iter(|| black_box(through_segments(&gpu, &scene, &w, &p)))
    });
    g.bench_function("los_table", |b| b.iter(|| black_box(run())));
    g.finish();
}

criterion::criterion_group!(group, benches, los_gpu);
criterion::criterion_main!(group);
