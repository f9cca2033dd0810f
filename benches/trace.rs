//! Rays per second, side by side in one run on the same scenes and queries: our CPU backend, our
//! GPU backend on its compute kernels (`gpu`) and on wgpu's ray queries where the adapter offers
//! them (`gpu-rq`; on a machine without a GPU both run on lavapipe, a CPU Vulkan driver), parry3d and, with the `embree` feature, Embree 3 (`rtcOccluded1`,
//! `rtcOccluded16`, `rtcIntersect1`). Queries: random short and long segments, coherent fans
//! (an eye tracing a 64 x 64 grid of ground points, as a sensor grid does; denser fans of
//! 256 x 256 points, 500,000 segments a call) and random rays for
//! closest hits, on the real `dungeon.obj`, `village` and a 1M-triangle `urban`. Also times the
//! BVH build of that `urban`, and its upload to each GPU engine (`upload/urban1m`: for `gpu-rq`
//! that includes building the acceleration structures).
//!
//! ```text
//! .ci/install-embree && WGPU_BACKEND=vulkan cargo bench --bench trace --features embree
//! WGPU_BACKEND=vulkan cargo bench --bench trace        # without the Embree peer
//! cargo test --release --benches                       # each function once (smoke test)
//! ```
//!
//! Before each group, outside timing, every occlusion bit must equal Embree's (both calls) and
//! parry3d must agree on at least 99.9 %; closest hits must agree with Embree on hit or miss and
//! distance. Setup (scene sizes, bytes per triangle, agreement) goes to stderr.
//!
//! Environment: `SIGHTLINE_DATA` is the folder holding `dungeon.obj` (default `../shared/data`
//! next to the crate); `SIGHTLINE_REQUIRE_GPU=1` panics instead of skipping the `gpu` functions
//! when no adapter exists. For scale, the seed's baseline is 50,000 traces per second (van der
//! Sterren, "CPU Load").

#[path = "common/mod.rs"]
mod common;
#[cfg(feature = "embree")]
#[path = "common/embree.rs"]
mod embree;

use common::{dungeon, gpu_engines, ms};
use criterion::{BatchSize, Criterion, Throughput};
use glam::Vec3;
use parry3d::query::{Ray as ParryRay, RayCast};
use parry3d::shape::TriMesh;
use rayon::prelude::*;
use sightline::scene::procedural;
use sightline::trace::{Ray, Segment, SplitMix64};
use sightline::{Engine, Mask, MaterialFlags, Scene};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Queries per engine call (cpu, gpu) and per parallel peer loop.
const BATCH: usize = 100_000;

/// Least share of segments on which parry3d must agree with our CPU backend.
const MIN_AGREEMENT: f64 = 0.999;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Start uniform in the scene bounds, random direction, 1-30 m long.
    Short,
    /// Both ends uniform in the scene bounds.
    Long,
    /// Eyes 1.6 m above random ground, each to a 64 x 64 grid of points 0.5 m above the ground
    /// over 40 m x 40 m around it, row by row: consecutive segments share their start.
    Fan,
    /// As `Fan`, with a 256 x 256 grid (0.16 m apart) and 500,000 segments a call.
    DenseFan,
}

impl Kind {
    /// Fans: consecutive segments share a start (Embree's coherent hint).
    #[cfg_attr(not(feature = "embree"), allow(dead_code))]
    fn coherent(self) -> bool {
        matches!(self, Kind::Fan | Kind::DenseFan)
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Short => "short",
            Kind::Long => "long",
            Kind::Fan => "fan",
            Kind::DenseFan => "dense_fan",
        }
    }
}

fn segments(scene: &Scene, kind: Kind, n: usize, seed: u64) -> Vec<Segment> {
    let (lo, hi) = scene.bounds().expect("non-empty scene");
    let mut rng = SplitMix64(seed);
    match kind {
        Kind::Fan => return fans(scene, n, 64, &mut rng),
        Kind::DenseFan => return fans(scene, n, 256, &mut rng),
        _ => {}
    }
    (0..n)
        .map(|_| {
            let a = rng.in_box(lo, hi);
            let b = match kind {
                Kind::Short => a + rng.unit_vector() * rng.range(1.0, 30.0),
                _ => rng.in_box(lo, hi),
            };
            Segment::new(a, b)
        })
        .collect()
}

/// Ground under each `(x, z)` (the highest sight-blocking surface), `None` where there is none.
fn ground(scene: &Scene, xz: &[(f32, f32)]) -> Vec<Option<Vec3>> {
    let (_, hi) = scene.bounds().expect("non-empty scene");
    let top = hi.y + 1.0;
    let rays: Vec<Ray> = xz
        .iter()
        .map(|&(x, z)| Ray::new(Vec3::new(x, top, z), Vec3::NEG_Y, f32::INFINITY))
        .collect();
    let hits = Engine::cpu()
        .closest_hit(scene, &rays, Mask::SIGHT)
        .unwrap();
    xz.iter()
        .zip(hits)
        .map(|(&(x, z), h)| h.map(|h| Vec3::new(x, top - h.t, z)))
        .collect()
}

/// Eyes over random ground, each to a `side` x `side` grid over 40 m around it.
fn fans(scene: &Scene, n: usize, side: usize, rng: &mut SplitMix64) -> Vec<Segment> {
    let (lo, hi) = scene.bounds().expect("non-empty scene");
    let mut out = Vec::with_capacity(n + side * side);
    while out.len() < n {
        let p = rng.in_box(lo, hi);
        let Some(g) = ground(scene, &[(p.x, p.z)])[0] else {
            continue;
        };
        let eye = g + Vec3::Y * 1.6;
        let grid: Vec<(f32, f32)> = (0..side * side)
            .map(|k| {
                let step = |i: usize| -20.0 + i as f32 * 40.0 / (side - 1) as f32;
                let x = (p.x + step(k % side)).clamp(lo.x, hi.x);
                let z = (p.z + step(k / side)).clamp(lo.z, hi.z);
                (x, z)
            })
            .collect();
        out.extend(
            ground(scene, &grid)
                .into_iter()
                .flatten()
                .map(|t| Segment::new(eye, t + Vec3::Y * 0.5)),
        );
    }
    out.truncate(n);
    out
}

/// Random rays for closest hits: origins uniform in the bounds, unit directions, unbounded.
fn rays(scene: &Scene, n: usize, seed: u64) -> Vec<Ray> {
    let (lo, hi) = scene.bounds().expect("non-empty scene");
    let mut rng = SplitMix64(seed);
    (0..n)
        .map(|_| Ray::new(rng.in_box(lo, hi), rng.unit_vector(), f32::INFINITY))
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

fn parry_closest(mesh: &TriMesh, rays: &[Ray]) -> Vec<Option<f32>> {
    rays.par_iter()
        .map(|r| mesh.cast_local_ray(&ParryRay::new(r.origin(), r.dir()), r.t_max, true))
        .collect()
}

struct Case {
    name: &'static str,
    scene: Scene,
    parry: TriMesh,
    #[cfg(feature = "embree")]
    embree: embree::EmbreeScene,
}

fn prepare(name: &'static str, scene: Scene) -> Case {
    let t = Instant::now();
    let tiers = scene.tiers();
    let bvh = t.elapsed();
    let tris = scene.triangle_count();
    let ours: usize = tiers
        .iter()
        .map(|t| {
            std::mem::size_of_val(&t.nodes[..])
                + std::mem::size_of_val(&t.wide[..])
                + std::mem::size_of_val(&t.triangles[..])
        })
        .sum();
    let gpu: usize = tiers
        .iter()
        .map(|t| std::mem::size_of_val(&t.nodes[..]) + std::mem::size_of_val(&t.triangles[..]))
        .sum();
    let t = Instant::now();
    let parry = parry_mesh(&scene);
    let parry_build = t.elapsed();
    eprintln!(
        "{name}: {tris} triangles ({} block sight); our BVH build {:.1} ms; bytes per triangle: \
         cpu {:.1} (binary + wide nodes + triangles), gpu {:.1} (binary nodes + triangles); \
         parry3d TriMesh build {:.1} ms",
        parry.indices().len(),
        ms(bvh),
        ours as f64 / tris as f64,
        gpu as f64 / tris as f64,
        ms(parry_build),
    );
    #[cfg(feature = "embree")]
    let embree = {
        let t = Instant::now();
        let e = embree::EmbreeScene::new(&scene, true);
        eprintln!(
            "{name}: Embree scene build {:.1} ms, {:.1} bytes per triangle (its memory monitor)",
            ms(t.elapsed()),
            e.bytes as f64 / e.primitives() as f64
        );
        e
    };
    Case {
        name,
        scene,
        parry,
        #[cfg(feature = "embree")]
        embree,
    }
}

/// Outside timing: the peers must answer the same question as we do.
fn check_occlusion(case: &Case, kind: Kind, segs: &[Segment], ours: &[bool]) {
    let n = segs.len();
    let theirs = parry_occluded(&case.parry, segs);
    let differ = (0..n).filter(|&i| ours[i] != theirs[i]).count();
    let agree = 1.0 - differ as f64 / n as f64;
    eprintln!(
        "{}/{}: {:.1}% blocked; parry3d agrees on {:.4}% ({differ} of {n} differ)",
        case.name,
        kind.name(),
        100.0 * ours.iter().filter(|&&b| b).count() as f64 / n as f64,
        100.0 * agree
    );
    assert!(agree >= MIN_AGREEMENT, "parry3d and sightline disagree");
    #[cfg(feature = "embree")]
    for (call, theirs) in [
        ("rtcOccluded1", case.embree.occluded1(segs)),
        (
            "rtcOccluded16",
            case.embree.occluded16(segs, kind.coherent()),
        ),
    ] {
        let differ: Vec<usize> = (0..n).filter(|&i| ours[i] != theirs[i]).collect();
        eprintln!(
            "{}/{}: Embree {call} agrees on every bit: {}",
            case.name,
            kind.name(),
            differ.is_empty()
        );
        assert!(
            differ.is_empty(),
            "{}/{}: {} of {n} bits differ from Embree {call}; first: segment {} {:?} (ours {})",
            case.name,
            kind.name(),
            differ.len(),
            differ[0],
            segs[differ[0]],
            ours[differ[0]]
        );
    }
}

fn occlusion(c: &mut Criterion, cases: &[Case], gpus: &[(&'static str, Engine)]) {
    let cpu = Engine::cpu();
    for case in cases {
        for (k, kind) in [Kind::Short, Kind::Long, Kind::Fan, Kind::DenseFan]
            .into_iter()
            .enumerate()
        {
            let n = if kind == Kind::DenseFan {
                500_000
            } else {
                BATCH
            };
            let segs = segments(&case.scene, kind, n, 0x51_6874 + k as u64);
            let ours = cpu.occluded(&case.scene, &segs, Mask::SIGHT).unwrap();
            let bits: Vec<bool> = ours.iter().collect();
            check_occlusion(case, kind, &segs, &bits);

            let mut g = c.benchmark_group(format!("occlusion/{}/{}", case.name, kind.name()));
            g.throughput(Throughput::Elements(segs.len() as u64));
            g.bench_function("cpu", |b| {
                b.iter(|| cpu.occluded(&case.scene, black_box(&segs), Mask::SIGHT))
            });
            #[cfg(feature = "embree")]
            {
                g.bench_function("embree_occluded1", |b| {
                    b.iter(|| case.embree.occluded1(black_box(&segs)))
                });
                g.bench_function("embree_occluded16", |b| {
                    b.iter(|| case.embree.occluded16(black_box(&segs), kind.coherent()))
                });
            }
            g.bench_function("parry3d", |b| {
                b.iter(|| parry_occluded(&case.parry, black_box(&segs)))
            });
            for (name, gpu) in gpus {
                g.bench_function(*name, |b| {
                    b.iter(|| gpu.occluded(&case.scene, black_box(&segs), Mask::SIGHT))
                });
            }
            g.finish();
        }
    }
}

/// Outside timing: hit or miss and distance must agree with the peers.
fn check_closest(case: &Case, rays: &[Ray], ours: &[Option<sightline::Hit>]) {
    let n = rays.len();
    let same = |a: Option<f32>, b: Option<f32>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-4 * a.abs().max(1.0),
        (None, None) => true,
        _ => false,
    };
    let parry = parry_closest(&case.parry, rays);
    let differ = (0..n)
        .filter(|&i| !same(ours[i].map(|h| h.t), parry[i]))
        .count();
    eprintln!(
        "{}/closest: {:.1}% hit; parry3d agrees on {:.4}%",
        case.name,
        100.0 * ours.iter().flatten().count() as f64 / n as f64,
        100.0 * (1.0 - differ as f64 / n as f64)
    );
    assert!(differ as f64 <= (1.0 - MIN_AGREEMENT) * n as f64);
    #[cfg(feature = "embree")]
    {
        let theirs = case.embree.intersect1(rays);
        let differ = (0..n)
            .filter(|&i| !same(ours[i].map(|h| h.t), theirs[i].map(|h| h.0)))
            .count();
        let other_triangle = (0..n)
            .filter(|&i| matches!((ours[i], theirs[i]), (Some(a), Some(b)) if a.triangle != b.1))
            .count();
        eprintln!(
            "{}/closest: Embree rtcIntersect1 agrees on hit and distance for {} of {n} rays \
             ({other_triangle} name another triangle at the same distance)",
            case.name,
            n - differ
        );
        assert!(
            differ as f64 <= 1e-4 * n as f64,
            "{differ} closest hits differ"
        );
    }
}

fn closest(c: &mut Criterion, cases: &[Case], gpus: &[(&'static str, Engine)]) {
    let cpu = Engine::cpu();
    for case in cases {
        let rays = rays(&case.scene, BATCH, 0xC105E);
        let ours = cpu.closest_hit(&case.scene, &rays, Mask::SIGHT).unwrap();
        check_closest(case, &rays, &ours);
        let mut g = c.benchmark_group(format!("closest/{}/random", case.name));
        g.throughput(Throughput::Elements(rays.len() as u64));
        g.bench_function("cpu", |b| {
            b.iter(|| cpu.closest_hit_records(&case.scene, black_box(&rays), Mask::SIGHT))
        });
        #[cfg(feature = "embree")]
        g.bench_function("embree_intersect1", |b| {
            b.iter(|| case.embree.intersect1(black_box(&rays)))
        });
        g.bench_function("parry3d", |b| {
            b.iter(|| parry_closest(&case.parry, black_box(&rays)))
        });
        for (name, gpu) in gpus {
            g.bench_function(*name, |b| {
                b.iter(|| gpu.closest_hit_records(&case.scene, black_box(&rays), Mask::SIGHT))
            });
        }
        g.finish();
    }
}

/// The scene's upload to each GPU engine, from a fresh copy (a new scene to the engine's
/// cache) to the answer of one segment: the triangles and BVH nodes for the compute kernels;
/// the triangles, the acceleration structures' inputs and their build for ray queries.
fn scene_upload(c: &mut Criterion, scene: &Scene, gpus: &[(&'static str, Engine)]) {
    let mut g = c.benchmark_group("upload/urban1m");
    g.throughput(Throughput::Elements(scene.triangle_count() as u64));
    let seg = [Segment::new(
        Vec3::new(0.0, 50.0, 0.0),
        Vec3::new(1.0, 0.0, 1.0),
    )];
    scene.tiers();
    for (name, gpu) in gpus {
        g.bench_function(*name, |b| {
            b.iter_batched(
                || scene.clone(),
                |fresh| {
                    black_box(gpu.occluded(&fresh, &seg, Mask::SIGHT).unwrap());
                    fresh
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
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
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();

    let gpus = gpu_engines();
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
    occlusion(&mut c, &cases, &gpus);
    closest(&mut c, &cases, &gpus);
    scene_upload(&mut c, &cases[2].scene, &gpus);
    drop(cases);
    bvh_build(&mut c, &unbuilt);
    c.final_summary();
}
