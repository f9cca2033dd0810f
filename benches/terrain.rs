//! Terrain reasoning against van der Sterren (*Terrain Reasoning for 3D Action Games*,
//! "Processing Steps": preprocessing a level "takes a few tens of seconds"):
//!
//! - sniping scores for every waypoint of `sniper` (target under 1 s) and of `urban` on its
//!   2 m nav graph: the whole preprocessing (relations, light, key locations, areas) plus the
//!   scores in all 8 directions, and the scores alone from surveyed relations;
//! - a door patch (close and reopen the south-west door: two patches) against a full
//!   recompute of the relations;
//! - out-of-sight threat prediction, per query, and 256 seeded queries in one `predict_many`
//!   batch beside 256 `predict` calls (the GPU's submissions and waits per batch printed).
//!
//! ```text
//! WGPU_BACKEND=vulkan cargo bench --bench terrain
//! ```
//!
//! The GPU rows trace the relations on the GPU backend; on lavapipe (a CPU rasteriser) the
//! `urban` GPU row is skipped, it would take minutes per sample.

#[path = "common/mod.rs"]
mod common;

use common::gpu_engine;
use criterion::Criterion;
use glam::Vec3;
use sightline::nav::{generate, CostParams, NavGraph, NavParams};
use sightline::scene::procedural::{sniper, sniper_layout, urban};
use sightline::terrain::patch::DoorPatch;
use sightline::terrain::predict::{predict, predict_many, PredictParams, PredictQuery, Sighting};
use sightline::terrain::sniping::{Sniping, SnipingParams};
use sightline::terrain::{RelationParams, Relations, Survey, SurveyParams};
use sightline::trace::SplitMix64;
use sightline::{Engine, Scene};
use std::hint::black_box;
use std::time::Duration;

/// The largest component of the scene's nav graph (built on the CPU).
fn graph(scene: &Scene) -> NavGraph {
    let (g, _) = generate(
        &Engine::cpu(),
        scene,
        &NavParams::standard(),
        &CostParams::standard(),
    )
    .unwrap();
    let label = g.components().label;
    g.subgraph(|i| label[i as usize] == 0, &CostParams::standard())
        .unwrap()
        .0
}

/// Survey and sniping scores in every direction: the whole preprocessing of a level.
fn sniping_total(engine: &Engine, scene: &Scene, g: &NavGraph) -> Sniping {
    let sv = Survey::compute(engine, scene, g, &SurveyParams::standard(), None, None).unwrap();
    Sniping::compute(&sv.relations, &sv.site(vec![]), &SnipingParams::standard()).unwrap()
}

/// `n` seeded threats at random nodes walking any way at 0.5 to 4 m/s for up to 3 s, each
/// watched by an observer at another random node.
fn predict_queries(g: &NavGraph, n: usize) -> Vec<PredictQuery> {
    let mut rng = SplitMix64(42);
    let nodes = g.nodes();
    let mut node = || nodes[(rng.next_u64() % nodes.len() as u64) as usize];
    let spots: Vec<(Vec3, Vec3)> = (0..n).map(|_| (node(), node())).collect();
    spots
        .into_iter()
        .map(|(seen, observer)| {
            let angle = rng.range(0.0, std::f32::consts::TAU);
            let speed = rng.range(0.5, 4.0);
            PredictQuery {
                observer_eye: observer + Vec3::Y * PredictParams::standard().eye_height,
                sighting: Sighting {
                    seen,
                    velocity: Vec3::new(angle.cos(), 0.0, angle.sin()) * speed,
                    since: rng.range(0.0, 3.0),
                },
            }
        })
        .collect()
}

/// 256 predictions: one `predict_many` batch beside 256 `predict` calls, on each engine.
fn predict_batch(
    c: &mut Criterion,
    cpu: &Engine,
    gpu: Option<&Engine>,
    level: &Scene,
    g: &NavGraph,
) {
    let queries = predict_queries(g, 256);
    let p = PredictParams::standard();
    let mut grp = c.benchmark_group("terrain/predict_256");
    grp.sample_size(10).measurement_time(Duration::from_secs(5));
    for (name, engine) in [("cpu", Some(cpu)), ("gpu", gpu)] {
        let Some(engine) = engine else { continue };
        let before = engine.counters().total;
        predict_many(engine, level, g, &queries, &p).unwrap();
        let batch = engine.counters().total.since(&before);
        eprintln!("predict_many of {} on {name}: {batch}", queries.len());
        grp.bench_function(format!("many_{name}"), |b| {
            b.iter(|| black_box(predict_many(engine, level, g, &queries, &p).unwrap()))
        });
        grp.bench_function(format!("single_{name}"), |b| {
            b.iter(|| {
                for q in &queries {
                    black_box(predict(engine, level, g, q.observer_eye, &q.sighting, &p).unwrap());
                }
            })
        });
    }
    grp.finish();
}

fn is_lavapipe(e: &Engine) -> bool {
    e.adapter_name().is_some_and(|n| n.contains("llvmpipe"))
}

fn benches(c: &mut Criterion) {
    let cpu = Engine::cpu();
    let gpu = gpu_engine();
    let level = sniper(1, 1);
    let g = graph(&level);
    let sv = Survey::compute(&cpu, &level, &g, &SurveyParams::standard(), None, None).unwrap();
    eprintln!(
        "sniper: {} waypoints, {} pairs, relations {:.1} MB",
        g.len(),
        g.len() * (g.len() - 1) / 2,
        sv.relations.bytes() as f64 / 1e6
    );

    let mut grp = c.benchmark_group("terrain/sniper");
    grp.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    grp.bench_function("sniping_total_cpu", |b| {
        b.iter(|| black_box(sniping_total(&cpu, &level, &g)))
    });
    if let Some(gpu) = &gpu {
        grp.bench_function("sniping_total_gpu", |b| {
            b.iter(|| black_box(sniping_total(gpu, &level, &g)))
        });
    }
    grp.bench_function("relations_cpu", |b| {
        b.iter(|| {
            black_box(Relations::compute(&cpu, &level, &g, &RelationParams::standard()).unwrap())
        })
    });
    grp.bench_function("scores_from_relations", |b| {
        b.iter(|| {
            black_box(
                Sniping::compute(&sv.relations, &sv.site(vec![]), &SnipingParams::standard())
                    .unwrap(),
            )
        })
    });
    grp.finish();

    // Door patches: close and reopen the south-west door (two patches) against one full
    // recompute of the relations.
    let door = &sniper_layout().buildings[0];
    let patch = DoorPatch::new(
        &sv.relations,
        &level,
        door.door_object,
        &[door.door_open, door.door_closed],
    )
    .unwrap();
    eprintln!(
        "door patch: {} pairs, {} edges",
        patch.pairs.len(),
        patch.edges.len()
    );
    let mut grp = c.benchmark_group("terrain/door");
    grp.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let mut scene = level.clone();
    let mut rel = sv.relations.clone();
    grp.bench_function("patch_close_and_reopen", |b| {
        b.iter(|| {
            scene
                .set_transform(door.door_object, door.door_closed)
                .unwrap();
            rel.apply(&cpu, &scene, &patch).unwrap();
            scene
                .set_transform(door.door_object, door.door_open)
                .unwrap();
            black_box(rel.apply(&cpu, &scene, &patch).unwrap())
        })
    });
    grp.bench_function("full_recompute", |b| {
        b.iter(|| {
            black_box(Relations::compute(&cpu, &level, &g, &RelationParams::standard()).unwrap())
        })
    });
    grp.finish();

    // Threat prediction: a threat seen at the north-east building's window steps away along
    // the wall; the observer is on the west bank.
    let sighting = Sighting {
        seen: Vec3::new(26.8, 0.0, -15.5),
        velocity: Vec3::new(0.0, 0.0, 2.0),
        since: 2.0,
    };
    let observer = Vec3::new(-10.0, 1.7, -14.0);
    let mut grp = c.benchmark_group("terrain/predict");
    grp.sample_size(30).measurement_time(Duration::from_secs(3));
    grp.bench_function("query_cpu", |b| {
        b.iter(|| {
            black_box(
                predict(
                    &cpu,
                    &level,
                    &g,
                    observer,
                    &sighting,
                    &PredictParams::standard(),
                )
                .unwrap(),
            )
        })
    });
    if let Some(gpu) = &gpu {
        grp.bench_function("query_gpu", |b| {
            b.iter(|| {
                black_box(
                    predict(
                        gpu,
                        &level,
                        &g,
                        observer,
                        &sighting,
                        &PredictParams::standard(),
                    )
                    .unwrap(),
                )
            })
        });
    }
    grp.finish();
    predict_batch(c, &cpu, gpu.as_ref(), &level, &g);

    let city = urban(1, 1);
    let ug = graph(&city);
    eprintln!(
        "urban: {} waypoints at 2 m, {} pairs",
        ug.len(),
        ug.len() * (ug.len() - 1) / 2
    );
    let usv = Survey::compute(&cpu, &city, &ug, &SurveyParams::standard(), None, None).unwrap();
    eprintln!(
        "urban relations {:.1} MB",
        usv.relations.bytes() as f64 / 1e6
    );
    let mut grp = c.benchmark_group("terrain/urban_2m");
    grp.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(30));
    grp.bench_function("scores_from_relations", |b| {
        b.iter(|| {
            black_box(
                Sniping::compute(
                    &usv.relations,
                    &usv.site(vec![]),
                    &SnipingParams::standard(),
                )
                .unwrap(),
            )
        })
    });
    grp.bench_function("sniping_total_cpu", |b| {
        b.iter(|| black_box(sniping_total(&cpu, &city, &ug)))
    });
    match &gpu {
        Some(gpu) if !is_lavapipe(gpu) => {
            grp.bench_function("sniping_total_gpu", |b| {
                b.iter(|| black_box(sniping_total(gpu, &city, &ug)))
            });
        }
        Some(_) => eprintln!("urban sniping_total_gpu skipped on lavapipe"),
        None => {}
    }
    grp.finish();
}

criterion::criterion_group!(group, benches);
criterion::criterion_main!(group);
