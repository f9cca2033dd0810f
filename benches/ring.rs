//! The ring node graph against Slant Six Games (*Situational Awareness: Terrain Reasoning for
//! Tactical Shooter AI*): "32 x 32 node graph over 50 m radius, 0.77 ms on PS3 PPU".
//!
//! - one 32 x 32 graph over 50 m built and scored against 4 threats on `village` (the default
//!   take-cover score), on the CPU backend; and its two halves, the build (walks on the walk
//!   surface, and the wall followers that explore from the centre and join cut-off parts) and
//!   the scoring (rays);
//! - 64 such graphs (64 agents around the village) built one by one and together on every core
//!   (`RingGraph::build_many`), and scored in one batch: every ray of every graph in one GPU
//!   submission, beside the CPU backend on the same batch;
//! - the same single graph on the real `dungeon.obj` level.
//!
//! ```text
//! WGPU_BACKEND=vulkan cargo bench --bench ring
//! ```
//!
//! The walk surface (the nav mesh of the paper) is built once per scene, outside the timings,
//! as a game builds its nav mesh offline.

#[path = "common/mod.rs"]
mod common;

use common::{dungeon, gpu_engine};
use criterion::Criterion;
use glam::Vec3;
use sightline::nav::{NavParams, WalkSurface};
use sightline::ring::{score_batch, Design, RingGraph, RingParams, Score, Shooter, Situation};
use sightline::scene::procedural::village;
use sightline::{Engine, Scene};
use std::hint::black_box;
use std::time::Duration;

fn threats(at: Vec3, phase: f32) -> Situation {
    Situation::new(
        (0..4)
            .map(|t| {
                let a = phase + t as f32 * std::f32::consts::FRAC_PI_2;
                Shooter::at(at + Vec3::new(35.0 * a.cos(), 1.6, 35.0 * a.sin()))
            })
            .collect(),
    )
}

fn one(cpu: &Engine, scene: &Scene, surface: &WalkSurface, at: Vec3, s: &Situation) -> usize {
    let g = RingGraph::build(surface, at, &RingParams::standard(), &Design::default()).unwrap();
    let scores = g.score(cpu, scene, s, &Score::take_cover()).unwrap();
    black_box(scores.best());
    g.len()
}

fn benches(c: &mut Criterion) {
    let cpu = Engine::cpu();
    let gpu = gpu_engine();
    let scene = village(1, 1);
    let surface = WalkSurface::build(&cpu, &scene, &NavParams::standard()).unwrap();
    let at = Vec3::new(20.0, 0.0, 5.0);
    let s = threats(at, 0.3);
    let g = RingGraph::build(&surface, at, &RingParams::standard(), &Design::default()).unwrap();
    let sc = g.score(&cpu, &scene, &s, &Score::take_cover()).unwrap();
    let r = g.report();
    eprintln!(
        "village: {} walkable places; graph {} nodes, {} edges, {} walks, {} parts joined \
         ({} passage nodes, {} joining and {} exploring follower steps), {} rays, {} in cover",
        surface.len(),
        g.len(),
        g.edges().len(),
        r.walks,
        r.joined,
        r.passages,
        r.searched,
        r.explored,
        sc.rays,
        sc.in_cover.iter().filter(|&&b| b).count()
    );

    let mut grp = c.benchmark_group("ring/village");
    grp.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    grp.bench_function("build_and_score_4_threats_cpu", |b| {
        b.iter(|| one(&cpu, &scene, &surface, at, &s))
    });
    grp.bench_function("build_only", |b| {
        b.iter(|| {
            black_box(
                RingGraph::build(&surface, at, &RingParams::standard(), &Design::default())
                    .unwrap(),
            )
        })
    });
    grp.bench_function("score_only_cpu", |b| {
        b.iter(|| black_box(g.score(&cpu, &scene, &s, &Score::take_cover()).unwrap()))
    });
    grp.finish();
    village_64(c, &cpu, gpu.as_ref(), &scene, &surface);
    dungeon_graph(c, &cpu);
}

/// 64 agents around the village, each with its own point of interest and threats: their
/// graphs built one by one and together, and scored in one batch on each backend.
fn village_64(
    c: &mut Criterion,
    cpu: &Engine,
    gpu: Option<&Engine>,
    scene: &Scene,
    surface: &WalkSurface,
) {
    let centres: Vec<Vec3> = (0..64)
        .map(|i| {
            let a = i as f32 * 0.7;
            Vec3::new(30.0 * a.cos(), 0.0, 30.0 * a.sin())
        })
        .collect();
    let build_many = || {
        RingGraph::build_many(
            surface,
            &centres,
            &RingParams::standard(),
            &Design::default(),
        )
        .unwrap()
    };
    let mut graphs = Vec::new();
    let mut situations = Vec::new();
    for (i, g) in build_many().into_iter().enumerate() {
        if let Ok(g) = g {
            graphs.push(g);
            situations.push(threats(centres[i], i as f32 * 0.7));
        }
    }
    let items: Vec<_> = graphs.iter().zip(&situations).collect();
    let rays: u64 = score_batch(cpu, scene, &items, &Score::take_cover())
        .unwrap()
        .iter()
        .map(|s| s.rays)
        .sum();
    eprintln!(
        "64 graphs: {} built, {rays} rays in one batch",
        graphs.len()
    );
    let mut grp = c.benchmark_group("ring/village_64");
    grp.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    grp.bench_function("build_one_by_one", |b| {
        b.iter(|| {
            centres
                .iter()
                .map(|&p| RingGraph::build(surface, p, &RingParams::standard(), &Design::default()))
                .filter(Result::is_ok)
                .count()
        })
    });
    grp.bench_function("build_many", |b| {
        b.iter(|| build_many().iter().filter(|g| g.is_ok()).count())
    });
    grp.bench_function("score_batch_cpu", |b| {
        b.iter(|| black_box(score_batch(cpu, scene, &items, &Score::take_cover()).unwrap()))
    });
    if let Some(gpu) = &gpu {
        grp.bench_function("score_batch_gpu", |b| {
            b.iter(|| black_box(score_batch(gpu, scene, &items, &Score::take_cover()).unwrap()))
        });
    }
    grp.finish();
}

/// The real level: the graph around a walkable place near the middle.
fn dungeon_graph(c: &mut Criterion, cpu: &Engine) {
    let level = dungeon();
    let ds = WalkSurface::build(cpu, &level, &NavParams::standard()).unwrap();
    let (lo, hi) = level.bounds().unwrap();
    let mid = (lo + hi) * 0.5;
    let place = (0..ds.len() as u32)
        .min_by(|&a, &b| {
            let d = |i| ds.position(i).distance_squared(mid);
            d(a).total_cmp(&d(b))
        })
        .unwrap();
    let dat = ds.position(place);
    let dsit = threats(dat, 0.1);
    let dg = RingGraph::build(&ds, dat, &RingParams::standard(), &Design::default()).unwrap();
    eprintln!(
        "dungeon: graph at {dat}: {} nodes, {} walks",
        dg.len(),
        dg.report().walks
    );
    let mut grp = c.benchmark_group("ring/dungeon");
    grp.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    grp.bench_function("build_and_score_4_threats_cpu", |b| {
        b.iter(|| one(cpu, &level, &ds, dat, &dsit))
    });
    grp.finish();
}

criterion::criterion_group!(group, benches);
criterion::criterion_main!(group);
