//! Cover queries: the dense search (`cover::dense`, its defaults: a 20 m radius, that is a 40 m
//! square, whole-body visibility and the intervis check) and the sensor grid (Darken, Morgan and Paull,
//! `SensorGridParams::standard`): the latency of one query and the throughput of a batch of
//! 1,000, on `village` and `dungeon.obj`, on our CPU backend and our GPU backend (one shared
//! headless device; on a machine without a GPU that is lavapipe, a CPU Vulkan driver); and the
//! depth-map cover field around one agent on the GPU (`cover_field/<scene>/{gpu,gpu_pass}`)
//! and its ray-cast twin on the CPU backend (`cover_field/<scene>/cpu`), with the counters of
//! one repeated call (uploads, buffers and textures created); and beside it, in the same run,
//! the exact cover regions (Morgan's shadow volumes) for the same agent and 4 observers over
//! the same 40 m square of 0.25 m cells (`regions/<scene>/{cpu,gpu}`).
//!
//! ```text
//! WGPU_BACKEND=vulkan cargo bench --bench cover              # full run
//! cargo test --release --bench cover                         # each function once (smoke test)
//! ```
//!
//! Each query is a soldier standing on walkable ground with 4 observers, eyes 1.7 m above
//! walkable ground 10-40 m away, hiding from sight (`Mask::SIGHT`); all seeded. The `single`
//! groups run one query per iteration, cycling through the 1,000 queries; `batch1000` hands all
//! 1,000 to one `find_cover` call (sensor grid); `batch1000_shared` (dense) hands one call 1,000
//! agents of one area that share the same 4 observers. The dense `single` and
//! `batch1000_shared` groups run on a kept walk surface whose tiles are built before timing (as
//! a simulation keeps one per level); `dense/<scene>/first` builds the tiles a query needs
//! inside each iteration.
//!
//! Environment: `SIGHTLINE_DATA` is the folder holding `dungeon.obj` (default `../shared/data`
//! next to the crate); `SIGHTLINE_REQUIRE_GPU=1` panics instead of skipping the `gpu` functions
//! when no adapter exists. Setup (ground points, rays per query, the share of queries that found
//! cover, CPU/GPU agreement) goes to stderr. Targets on the CPU backend: dense, one query under
//! 5 ms and at least 1,000 queries per second in a batch of 1,000 sharing 4 observers (the
//! `batch1000_shared` group: 1,000 agents of one area and the same 4 observers); sensor grid,
//! one query under 1 ms, at least 2,000 queries per second in a batch of 1,000. Seed baselines: "nearly
//! instantaneous" for one agent in UnrealScript on a 1.7 GHz laptop (Darken, Morgan and Paull); Slant Six's
//! 32 x 32 ring graph in 0.77 ms on a PS3 PPU.

#[path = "common/mod.rs"]
mod common;

use common::{dungeon, gpu_engine, ms};
use criterion::{Criterion, Throughput};
use glam::Vec3;
use sightline::cover::dense::{self, DenseParams, DenseQuery};
use sightline::cover::field::{
    cover_field, cover_field_ray_cast, field_ground, CoverFieldParams, CoverFieldPass,
};
use sightline::cover::regions::{cover_regions, cover_regions_ray_cast, RegionParams};
use sightline::cover::sensor_grid::{find_cover, CoverAnswer, CoverQuery, SensorGridParams};
use sightline::cover::{Agent, Posture};
use sightline::scene::procedural;
use sightline::trace::SplitMix64;
use sightline::{Engine, Mask, MaterialFlags, Ray, Scene};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Queries per batch, and the pool the single-query functions cycle through.
const QUERIES: usize = 1_000;

/// Observers per query.
const OBSERVERS: usize = 4;

/// Observer eye height above its ground point (metres).
const EYE_HEIGHT: f32 = 1.7;

/// Observer distance from the agent (metres).
const OBSERVER_RANGE: (f32, f32) = (10.0, 40.0);

/// Flattest acceptable ground normal (`normal.y`) for agents and observers.
const MIN_GROUND_NORMAL_Y: f32 = 0.7;

/// Random ground points drawn per scene: agents take the first `QUERIES`, observers draw from
/// all of them.
const GROUND_POOL: usize = 8 * QUERIES;

/// Tries to find an observer spot in range before giving up on a scene.
const MAX_OBSERVER_TRIES: usize = 100_000;

/// `n` points on walkable, gently sloped ground: downward rays from above the scene bounds at
/// seeded random x, z, keeping first hits on the front of `WALKABLE` material with
/// `normal.y > 0.7`.
fn ground_points(engine: &Engine, scene: &Scene, n: usize, rng: &mut SplitMix64) -> Vec<Vec3> {
    let (lo, hi) = scene.bounds().expect("non-empty scene");
    let top = hi.y + 1.0;
    let depth = top - lo.y + 1.0;
    let solid = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
    let materials = scene.materials();
    let mut out = Vec::with_capacity(n);
    let mut cast = 0usize;
    while out.len() < n {
        let rays: Vec<Ray> = (0..4 * n)
            .map(|_| {
                let x = rng.range(lo.x, hi.x);
                let z = rng.range(lo.z, hi.z);
                Ray::new(Vec3::new(x, top, z), Vec3::NEG_Y, depth)
            })
            .collect();
        cast += rays.len();
        let hits = engine.closest_hit(scene, &rays, solid).unwrap();
        for (ray, hit) in rays.iter().zip(hits) {
            let Some(hit) = hit else { continue };
            let walkable = materials[hit.material as usize]
                .flags
                .contains(MaterialFlags::WALKABLE);
            // A ceiling met from above (its back) is not ground to stand on.
            if walkable && !hit.back && hit.normal.y > MIN_GROUND_NORMAL_Y && out.len() < n {
                out.push(ray.origin() + ray.dir() * hit.t);
            }
        }
        assert!(
            cast < 1_000 * n.max(1),
            "fewer than 1 in 1,000 downward rays finds walkable ground"
        );
    }
    out
}

/// `QUERIES` seeded cover queries: agents on ground points, observers at ground points 10-40 m
/// away (drawn until one is in range), eyes `EYE_HEIGHT` up.
fn queries(engine: &Engine, scene: &Scene, seed: u64) -> Vec<CoverQuery> {
    let mut rng = SplitMix64(seed);
    let pool = ground_points(engine, scene, GROUND_POOL, &mut rng);
    let (near, far) = OBSERVER_RANGE;
    pool[..QUERIES]
        .iter()
        .map(|&agent| {
            let observers = (0..OBSERVERS)
                .map(|_| {
                    (0..MAX_OBSERVER_TRIES)
                        .map(|_| pool[(rng.next_u64() % pool.len() as u64) as usize])
                        .find(|g| (near..=far).contains(&g.distance(agent)))
                        .expect("no ground point 10-40 m from an agent")
                        + Vec3::Y * EYE_HEIGHT
                })
                .collect();
            CoverQuery {
                agent: Agent::soldier(agent),
                observers,
                mask: Mask::SIGHT,
                waypoints: Vec::new(),
            }
        })
        .collect()
}

struct Case {
    name: &'static str,
    scene: Scene,
    queries: Vec<CoverQuery>,
}

fn prepare(name: &'static str, scene: Scene, seed: u64, gpu: Option<&Engine>) -> Case {
    let cpu = Engine::cpu();
    let params = SensorGridParams::standard();
    let t = Instant::now();
    let queries = queries(&cpu, &scene, seed);
    let setup = t.elapsed();
    // Outside timing: what a query costs in rays and how often it finds cover.
    let t = Instant::now();
    let answers = find_cover(&cpu, &scene, &queries, &params).unwrap();
    let first = t.elapsed();
    let rays: usize = answers.iter().map(|a| a.rays).sum();
    let covered = answers.iter().filter(|a| a.choice.is_some()).count();
    eprintln!(
        "{name}: {} triangles; {QUERIES} queries built in {:.0} ms; {:.0} rays per query \
         (mean); {:.1}% found cover; first cpu batch {:.0} ms",
        scene.triangle_count(),
        ms(setup),
        rays as f64 / QUERIES as f64,
        100.0 * covered as f64 / QUERIES as f64,
        ms(first),
    );
    if let Some(gpu) = gpu {
        // The backends promise identical answers; say so if this run shows otherwise.
        let theirs = find_cover(gpu, &scene, &queries, &params).unwrap();
        let differ = differing(&answers, &theirs);
        eprintln!("{name}: gpu and cpu answers differ on {differ} of {QUERIES} queries");
    }
    Case {
        name,
        scene,
        queries,
    }
}

fn differing(a: &[CoverAnswer], b: &[CoverAnswer]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x != y).count()
}

fn sensor_grid(c: &mut Criterion, cases: &[Case], gpu: Option<&Engine>) {
    let params = SensorGridParams::standard();
    let cpu = Engine::cpu();
    let engines: Vec<(&str, &Engine)> = std::iter::once(("cpu", &cpu))
        .chain(gpu.map(|g| ("gpu", g)))
        .collect();
    for case in cases {
        let mut g = c.benchmark_group(format!("sensor_grid/{}/single", case.name));
        g.throughput(Throughput::Elements(1));
        for &(name, engine) in &engines {
            g.bench_function(name, |b| {
                let mut i = 0;
                b.iter(|| {
                    let q = &case.queries[i % QUERIES];
                    i += 1;
                    find_cover(
                        engine,
                        &case.scene,
                        black_box(std::slice::from_ref(q)),
                        &params,
                    )
                    .unwrap()
                })
            });
        }
        g.finish();

        for (group, params) in [
            ("batch1000", params),
            ("batch1000_verified", SensorGridParams::verified()),
        ] {
            report_waits(case, gpu, &params);
            let mut g = c.benchmark_group(format!("sensor_grid/{}/{group}", case.name));
            g.throughput(Throughput::Elements(QUERIES as u64));
            for &(name, engine) in &engines {
                g.bench_function(name, |b| {
                    b.iter(|| {
                        find_cover(engine, &case.scene, black_box(&case.queries), &params).unwrap()
                    })
                });
            }
            g.finish();
        }
    }
}

/// Outside timing: the GPU's round trips for one batch, and how many agents found cover.
fn report_waits(case: &Case, gpu: Option<&Engine>, params: &SensorGridParams) {
    let Some(gpu) = gpu else { return };
    let before = gpu.counters().total;
    let answers = find_cover(gpu, &case.scene, &case.queries, params).unwrap();
    let d = gpu.counters().total.since(&before);
    eprintln!(
        "sensor_grid/{} (verify {}): {} submissions, {} waits, {} bytes read back for \
         {QUERIES} queries; {} found cover",
        case.name,
        params.verify,
        d.submissions,
        d.waits,
        d.bytes_read_back,
        answers.iter().filter(|a| a.choice.is_some()).count()
    );
}

fn to_dense(q: &CoverQuery) -> DenseQuery {
    DenseQuery {
        agent: q.agent,
        observers: q.observers.clone(),
        mask: q.mask,
    }
}

/// 1,000 distinct agents on walkable ground within a 40 m square around the case's first
/// agent, all facing the first agent's 4 observers: a company's worth of agents sharing one
/// set of threats.
fn shared(case: &Case) -> Vec<DenseQuery> {
    let first = &case.queries[0];
    let centre = first.agent.position;
    let (lo, hi) = case.scene.bounds().expect("non-empty scene");
    let cpu = Engine::cpu();
    let solid = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
    let mut rng = SplitMix64(0x5EED);
    let mut out = Vec::with_capacity(QUERIES);
    while out.len() < QUERIES {
        let rays: Vec<Ray> = (0..QUERIES)
            .map(|_| {
                let x = (centre.x + rng.range(-20.0, 20.0)).clamp(lo.x, hi.x);
                let z = (centre.z + rng.range(-20.0, 20.0)).clamp(lo.z, hi.z);
                // From a little above the agent's level, so the agents stay on its floor.
                Ray::new(Vec3::new(x, centre.y + 3.0, z), Vec3::NEG_Y, 8.0)
            })
            .collect();
        let hits = cpu.closest_hit(&case.scene, &rays, solid).unwrap();
        for (ray, hit) in rays.iter().zip(hits) {
            let Some(hit) = hit else { continue };
            let walkable = case.scene.materials()[hit.material as usize]
                .flags
                .contains(MaterialFlags::WALKABLE);
            if walkable && !hit.back && hit.normal.y > MIN_GROUND_NORMAL_Y && out.len() < QUERIES {
                out.push(DenseQuery {
                    agent: Agent::soldier(ray.origin() + ray.dir() * hit.t),
                    observers: first.observers.clone(),
                    mask: first.mask,
                });
            }
        }
    }
    out
}

fn dense_search(c: &mut Criterion, cases: &[Case], gpu: Option<&Engine>) {
    let params = DenseParams::standard();
    let cpu = Engine::cpu();
    let engines: Vec<(&str, &Engine)> = std::iter::once(("cpu", &cpu))
        .chain(gpu.map(|g| ("gpu", g)))
        .collect();
    for case in cases {
        let queries: Vec<DenseQuery> = case.queries.iter().map(to_dense).collect();
        let squad = shared(case);
        report_dense(case, &queries, &squad, &params, gpu);
        let mut g = c.benchmark_group(format!("dense/{}/first", case.name));
        g.throughput(Throughput::Elements(1));
        for &(name, engine) in &engines {
            // A fresh walk surface each time: the tiles the query needs are built first.
            g.bench_function(name, |b| {
                let mut i = 0;
                b.iter(|| {
                    let q = &queries[i % QUERIES];
                    i += 1;
                    dense::find_cover(
                        engine,
                        &case.scene,
                        black_box(std::slice::from_ref(q)),
                        &params,
                    )
                    .unwrap()
                })
            });
        }
        g.finish();
        let mut g = c.benchmark_group(format!("dense/{}/single", case.name));
        g.throughput(Throughput::Elements(1));
        for &(name, engine) in &engines {
            // Tiles cached: the surface holds every query's tiles before timing.
            let mut surface = prepared(engine, case, &queries, &params);
            g.bench_function(name, |b| {
                let mut i = 0;
                b.iter(|| {
                    let q = &queries[i % QUERIES];
                    i += 1;
                    let one = black_box(std::slice::from_ref(q));
                    dense::find_cover_on(engine, &case.scene, &mut surface, one, &params).unwrap()
                })
            });
        }
        g.finish();
        let mut g = c.benchmark_group(format!("dense/{}/batch1000_shared", case.name));
        g.throughput(Throughput::Elements(QUERIES as u64));
        for &(name, engine) in &engines {
            let mut surface = prepared(engine, case, &squad, &params);
            let before = engine.counters().total;
            dense::find_cover_on(engine, &case.scene, &mut surface, &squad, &params).unwrap();
            eprintln!(
                "{}: dense, shared batch on {name}: one call {:?}",
                case.name,
                engine.counters().total.since(&before)
            );
            g.bench_function(name, |b| {
                b.iter(|| {
                    dense::find_cover_on(
                        engine,
                        &case.scene,
                        &mut surface,
                        black_box(&squad),
                        &params,
                    )
                    .unwrap()
                })
            });
        }
        g.finish();
    }
}

/// Outside timing: how often cover is found over the first 100 queries one at a time, what a
/// query costs, the latency by outcome, and whether the backends agree on the shared batch.
fn report_dense(
    case: &Case,
    queries: &[DenseQuery],
    squad: &[DenseQuery],
    params: &DenseParams,
    gpu: Option<&Engine>,
) {
    let cpu = Engine::cpu();
    let params = *params;
    // Outside timing, over the first 100 queries one at a time: how often cover is found,
    // what a query costs, and the latency split by outcome (a "no cover" answer has looked
    // at every cell it can reach within the radius).
    let (mut found, mut none) = (Vec::new(), Vec::new());
    let (mut cells, mut rays) = (0, 0);
    let mut surface = prepared(&cpu, case, &queries[..100], &params);
    for q in &queries[..100] {
        let t = Instant::now();
        let one = std::slice::from_ref(q);
        let a = dense::find_cover_on(&cpu, &case.scene, &mut surface, one, &params)
            .unwrap()
            .remove(0);
        let took = ms(t.elapsed());
        cells += a.explored_cells;
        rays += a.rays;
        if a.choice.is_some() {
            found.push(took)
        } else {
            none.push(took)
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    eprintln!(
        "{}: dense: {}% of 100 found cover; {:.0} cells and {:.0} rays per query (mean); \
         median latency {:.2} ms when cover is found, {:.2} ms when none is",
        case.name,
        found.len(),
        cells as f64 / 100.0,
        rays as f64 / 100.0,
        median(&mut found),
        median(&mut none),
    );
    let t = Instant::now();
    let shared_answers = dense::find_cover(&cpu, &case.scene, squad, &params).unwrap();
    let covered = shared_answers.iter().filter(|a| a.choice.is_some()).count();
    eprintln!(
        "{}: dense, 1,000 agents sharing 4 observers: {:.1}% found cover; first cpu batch \
         (tiles included) {:.0} ms",
        case.name,
        100.0 * covered as f64 / QUERIES as f64,
        ms(t.elapsed())
    );
    if let Some(gpu) = gpu {
        let theirs = dense::find_cover(gpu, &case.scene, squad, &params).unwrap();
        let differ = shared_answers
            .iter()
            .zip(&theirs)
            .filter(|(x, y)| x.choice != y.choice)
            .count();
        eprintln!(
            "{}: dense, shared batch: gpu and cpu answers differ on {differ} of {QUERIES} \
             (the intervis check's pixel counts may differ by rounding)",
            case.name
        );
    }
}

/// A walk surface holding every tile `queries` need, and what building it took (stderr).
fn prepared(
    engine: &Engine,
    case: &Case,
    queries: &[DenseQuery],
    params: &DenseParams,
) -> dense::Surface {
    let mut surface = dense::Surface::new();
    let agents: Vec<Agent> = queries.iter().map(|q| q.agent).collect();
    let t = Instant::now();
    surface
        .prepare(engine, &case.scene, &agents, params)
        .unwrap();
    eprintln!(
        "{}: dense walk surface for {} queries: {} tiles in {:.0} ms",
        case.name,
        queries.len(),
        surface.tiles(),
        ms(t.elapsed())
    );
    surface
}

/// The depth-map cover field (`CoverFieldParams::standard`: a 40 m square of 0.25 m cells,
/// 1024-texel faces) around each case's first agent, hiding from its 4 observers, on the GPU:
/// `gpu` is the convenience call (the ground search included), `gpu_pass` a `CoverFieldPass`
/// prepared, run and read on a ground found once. After each group, the `cover_field`
/// counters of one more call of each on the same scene go to stderr.
fn cover_fields(c: &mut Criterion, cases: &[Case], gpu: Option<&Engine>) {
    let Some(gpu) = gpu else { return };
    let tracer = gpu.gpu().expect("a GPU engine");
    let params = CoverFieldParams::standard();
    for case in cases {
        let q = &case.queries[0];
        let (agent, scene) = (&q.agent, &case.scene);
        let ground = field_ground(gpu, scene, agent.position, &params).unwrap();
        let call = || {
            cover_field(
                gpu,
                scene,
                agent.position,
                agent,
                &q.observers,
                q.mask,
                &params,
            )
            .unwrap()
        };
        let pass = || {
            let pass = CoverFieldPass::prepare(
                tracer,
                scene,
                &ground,
                agent,
                &q.observers,
                q.mask,
                &params,
            )
            .unwrap();
            let mut encoder = tracer.device().create_command_encoder(&Default::default());
            pass.encode(tracer, &mut encoder);
            tracer.queue().submit([encoder.finish()]);
            pass.read(tracer).unwrap()
        };
        let cpu = Engine::cpu();
        let twin = || {
            let f = cover_field_ray_cast(
                &cpu,
                scene,
                agent.position,
                agent,
                &q.observers,
                q.mask,
                &params,
            );
            f.unwrap()
        };
        let mut g = c.benchmark_group(format!("cover_field/{}", case.name));
        g.throughput(Throughput::Elements(ground.points().len() as u64));
        g.bench_function("cpu", |b| b.iter(|| black_box(twin())));
        g.bench_function("gpu", |b| b.iter(|| black_box(call())));
        g.bench_function("gpu_pass", |b| b.iter(|| black_box(pass())));
        g.finish();
        for (name, run) in [("gpu", &call as &dyn Fn() -> _), ("gpu_pass", &pass)] {
            let before = gpu.counters().operation("cover_field");
            black_box(run());
            let after = gpu.counters().operation("cover_field");
            eprintln!(
                "cover_field/{}/{name}: {} ground points, {} observers; one repeated call: {}, \
                 buffers {}, textures {}, staging writes {}",
                case.name,
                ground.points().len(),
                q.observers.len(),
                after.since(&before),
                after.since(&before).buffers_created,
                after.since(&before).textures_created,
                after.since(&before).staging_writes,
            );
        }
    }
}

/// Exact cover regions (`RegionParams::standard`: the cover field's 40 m square of 0.25 m
/// cells, three postures of three samples each) around each case's first agent, hiding from
/// its 4 observers: `cpu` the ray-cast twin on the CPU backend, `gpu` the shadow-volume pass
/// (the ground search, the erosion, outlines and routes included in both). The regions found,
/// the GPU's counters of one more call and the cells it left to ray casts go to stderr.
fn regions(c: &mut Criterion, cases: &[Case], gpu: Option<&Engine>) {
    let params = RegionParams::standard();
    let cpu = Engine::cpu();
    for case in cases {
        let q = &case.queries[0];
        let (agent, scene) = (&q.agent, &case.scene);
        let twin = || {
            let r = cover_regions_ray_cast(
                &cpu,
                scene,
                agent.position,
                agent,
                &q.observers,
                q.mask,
                &params,
            );
            r.unwrap()
        };
        let shadow = |e: &Engine| {
            cover_regions(
                e,
                scene,
                agent.position,
                agent,
                &q.observers,
                q.mask,
                &params,
            )
            .unwrap()
        };
        let exact = twin();
        let mut g = c.benchmark_group(format!("regions/{}", case.name));
        g.throughput(Throughput::Elements(exact.cover.len() as u64));
        g.bench_function("cpu", |b| b.iter(|| black_box(twin())));
        if let Some(gpu) = gpu {
            g.bench_function("gpu", |b| b.iter(|| black_box(shadow(gpu))));
        }
        g.finish();
        let area = |p| {
            exact
                .regions
                .iter()
                .filter(|r| r.posture == p)
                .fold(0.0, |sum, r| sum + r.area)
        };
        eprintln!(
            "regions/{}: {} cells, {} regions (prone {:.0} m2, crouching {:.0} m2, standing {:.0} \
             m2), {} thinner ones left out",
            case.name,
            exact.cover.len(),
            exact.regions.len(),
            area(Posture::Prone),
            area(Posture::Crouching),
            area(Posture::Standing),
            exact.thin,
        );
        let Some(gpu) = gpu else { continue };
        let before = gpu.counters().operation("cover_regions");
        let r = shadow(gpu);
        let after = gpu.counters().operation("cover_regions");
        let differ = r
            .cover
            .iter()
            .zip(&exact.cover)
            .filter(|(a, b)| a != b)
            .count();
        eprintln!(
            "regions/{}/gpu: one repeated call: {}; {} cells left to ray casts; {differ} cells \
             differ from the CPU twin",
            case.name,
            after.since(&before),
            r.rechecked,
        );
    }
}

fn main() {
    let _ = env_logger::try_init();
    eprintln!(
        "targets (cpu): one query < 1 ms, >= 2,000 queries/s in a batch of {QUERIES}; seed \
         baselines: \"nearly instantaneous\" for one agent (UnrealScript, 1.7 GHz laptop), \
         Slant Six's 32 x 32 ring graph in 0.77 ms (PS3 PPU); {} rayon threads",
        rayon::current_num_threads()
    );
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();

    let gpu = gpu_engine();
    let cases = [
        prepare(
            "village",
            procedural::village(1, 1),
            0xC0_7E41,
            gpu.as_ref(),
        ),
        prepare("dungeon", dungeon(), 0xC0_7E42, gpu.as_ref()),
    ];
    dense_search(&mut c, &cases, gpu.as_ref());
    sensor_grid(&mut c, &cases, gpu.as_ref());
    cover_fields(&mut c, &cases, gpu.as_ref());
    regions(&mut c, &cases, gpu.as_ref());
    c.final_summary();
}
