//! Occlusion rays per second, side by side in one run: our CPU backend, our GPU backend (one
//! shared headless device; on a machine without a GPU that is lavapipe, a CPU Vulkan driver) and
//! parry3d as the peer, casting the same seeded segments at a `TriMesh` of the same
//! sight-blocking triangles. Also times the BVH build of a 1M-triangle `urban`.
//!
//! ```text
//! WGPU_BACKEND=vulkan cargo bench --bench trace              # full run
//! cargo test --release --benches                             # each function once (smoke test)
//! ```
//!
//! Environment: `SIGHTLINE_DATA` is the folder holding `dungeon.obj` (default `../shared/data`
//! next to the crate); `SIGHTLINE_REQUIRE_GPU=1` panics instead of skipping the `gpu` functions
//! when no adapter exists. Setup (scene sizes, build times, the adapter, parry agreement) goes
//! to stderr. For scale, the seed's baseline is 50,000 traces per second (van der Sterren, "CPU Load").

#[path = "common/mod.rs"]
mod common;

use common::{dungeon, gpu_engine, ms};
use criterion::{BatchSize, Criterion, Throughput};
use parry3d::query::{Ray as ParryRay, RayCast};
use parry3d::shape::TriMesh;
use rayon::prelude::*;
use sightline::scene::procedural;
use sightline::trace::{Segment, SplitMix64};
use sightline::{Engine, Mask, MaterialFlags, Scene};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Segments per engine call (cpu, gpu) and per parallel parry3d loop. One gpu call takes well
/// under a second even for long segments across the 1M-triangle scene on lavapipe.
const BATCH: usize = 100_000;

/// Least share of segments on which parry3d must agree with our CPU backend.
const MIN_AGREEMENT: f64 = 0.999;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Start uniform in the scene bounds, random direction, 1-30 m long.
    Short,
    /// Both ends uniform in the scene bounds.
    Long,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Short => "short",
            Kind::Long => "long",
        }
    }
}

fn segments(scene: &Scene, kind: Kind, n: usize, seed: u64) -> Vec<Segment> {
    let (lo, hi) = scene.bounds().expect("non-empty scene");
    let mut rng = SplitMix64(seed);
    (0..n)
        .map(|_| {
            let a = rng.in_box(lo, hi);
            let b = match kind {
                Kind::Short => a + rng.unit_vector() * rng.range(1.0, 30.0),
                Kind::Long => rng.in_box(lo, hi),
            };
            Segment::new(a, b)
        })
        .collect()
}

/// The scene's sight-blocking triangles as a parry3d mesh (three fresh vertices per triangle).
fn parry_mesh(scene: &Scene) -> TriMesh {
    let materials = scene.materials();
    let (mut vertices, mut indices) = (Vec::new(), Vec::new());
    for (tri, m) in scene.world_triangles() {
        if materials[m as usize]
            .flags
            .contains(MaterialFlags::BLOCKS_SIGHT)
        {
            let i = vertices.len() as u32;
            vertices.extend(tri);
            indices.push([i, i + 1, i + 2]);
        }
    }
    TriMesh::new(vertices, indices).expect("parry3d TriMesh of the scene")
}

/// parry3d's answer to "is there a hit strictly between the ends": a ray along `end - start`
/// with `max_time_of_impact = 1` (parry keeps only hits with `t < 1`), in parallel with rayon.
fn parry_occluded(mesh: &TriMesh, segs: &[Segment]) -> Vec<bool> {
    segs.par_iter()
        .map(|s| mesh.intersects_local_ray(&ParryRay::new(s.start(), s.end() - s.start()), 1.0))
        .collect()
}

struct Case {
    name: &'static str,
    scene: Scene,
    parry: TriMesh,
}

fn prepare(name: &'static str, scene: Scene) -> Case {
    let t = Instant::now();
    let tiers = scene.tiers();
    let bvh = t.elapsed();
    let nodes: usize = tiers.iter().map(|t| t.nodes.len()).sum();
    let t = Instant::now();
    let parry = parry_mesh(&scene);
    let parry_build = t.elapsed();
    eprintln!(
        "{name}: {} triangles ({} block sight); our BVH build {:.1} ms ({nodes} nodes); \
         parry3d TriMesh build {:.1} ms",
        scene.triangle_count(),
        parry.indices().len(),
        ms(bvh),
        ms(parry_build),
    );
    Case { name, scene, parry }
}

fn occlusion(c: &mut Criterion, cases: &[Case], gpu: Option<&Engine>) {
    let cpu = Engine::cpu();
    for case in cases {
        for (k, kind) in [Kind::Short, Kind::Long].into_iter().enumerate() {
            let segs = segments(&case.scene, kind, BATCH, 0x51_6874 + k as u64);
            // Outside timing: parry3d must answer the same question as we do.
            let ours = cpu.occluded(&case.scene, &segs, Mask::SIGHT).unwrap();
            let theirs = parry_occluded(&case.parry, &segs);
            let differ = (0..BATCH).filter(|&i| ours.get(i) != theirs[i]).count();
            let agree = 1.0 - differ as f64 / BATCH as f64;
            eprintln!(
                "{}/{}: {:.1}% blocked; parry3d agrees with the cpu backend on {:.4}% \
                 ({differ} of {BATCH} differ)",
                case.name,
                kind.name(),
                100.0 * ours.count_ones() as f64 / BATCH as f64,
                100.0 * agree
            );
            assert!(
                agree >= MIN_AGREEMENT,
                "parry3d and sightline disagree on {}/{}",
                case.name,
                kind.name()
            );

            let mut g = c.benchmark_group(format!("occlusion/{}/{}", case.name, kind.name()));
            g.throughput(Throughput::Elements(BATCH as u64));
            g.bench_function("cpu", |b| {
                b.iter(|| cpu.occluded(&case.scene, black_box(&segs), Mask::SIGHT))
            });
            g.bench_function("parry3d", |b| {
                b.iter(|| parry_occluded(&case.parry, black_box(&segs)))
            });
            if let Some(gpu) = gpu {
                g.bench_function("gpu", |b| {
                    b.iter(|| gpu.occluded(&case.scene, black_box(&segs), Mask::SIGHT))
                });
            }
            g.finish();
        }
    }
}

/// Fresh BVH tiers for the 1M-triangle urban scene (`unbuilt` must not have built its tiers).
fn bvh_build(c: &mut Criterion, unbuilt: &Scene) {
    let mut g = c.benchmark_group("bvh_build");
    g.throughput(Throughput::Elements(unbuilt.triangle_count() as u64));
    g.bench_function("urban1m", |b| {
        b.iter_batched(
            || unbuilt.clone(),
            |scene| {
                black_box(scene.tiers());
                scene
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn main() {
    let _ = env_logger::try_init();
    eprintln!(
        "seed baseline: 50,000 traces/s (van der Sterren, \"CPU Load\"); {} rayon threads",
        rayon::current_num_threads()
    );
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();

    let gpu = gpu_engine();
    let t = Instant::now();
    let d = procedural::detail_for_triangles("urban", 1, 1_000_000).expect("urban detail");
    let urban = procedural::urban(1, d);
    eprintln!(
        "urban1m: detail {d}, generated in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let unbuilt = urban.clone();
    let cases = [
        prepare("village", procedural::village(1, 1)),
        prepare("dungeon", dungeon()),
        prepare("urban1m", urban),
    ];
    occlusion(&mut c, &cases, gpu.as_ref());
    drop(cases);
    bvh_build(&mut c, &unbuilt);
    c.final_summary();
}
