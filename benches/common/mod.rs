//! Setup shared by the benches: the real level, the one GPU engine, milliseconds.
#![allow(dead_code)] // each bench uses part of it

use sightline::fireteam::{nearest_nodes, CoverParams, World};
use sightline::nav;
use sightline::scene::{load_obj, LoadOptions};
use sightline::{Engine, EngineOptions, RayQuery, Scene};
use std::path::PathBuf;
use std::time::Duration;

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub fn dungeon() -> Scene {
    let dir = std::env::var("SIGHTLINE_DATA")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data").into());
    let path = PathBuf::from(dir).join("dungeon.obj");
    assert!(
        path.is_file(),
        "benchmark scene {} is missing: point SIGHTLINE_DATA at the folder holding dungeon.obj",
        path.display()
    );
    let (scene, _report) = load_obj(&path, &LoadOptions::default())
        .unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display()));
    scene
}

pub fn gpu_engine() -> Option<Engine> {
    gpu_engine_with(RayQuery::Auto)
}

/// The GPU engines a bench puts beside the CPU backend: `gpu` on the compute kernels and,
/// where the adapter offers ray queries, `gpu-rq` on them (each on its own device).
pub fn gpu_engines() -> Vec<(&'static str, Engine)> {
    let Some(compute) = gpu_engine_with(RayQuery::Off) else {
        return Vec::new();
    };
    let mut engines = vec![("gpu", compute)];
    let options = EngineOptions {
        ray_query: RayQuery::On,
        ..Default::default()
    };
    match Engine::headless_gpu(options) {
        Ok(e) => engines.push(("gpu-rq", e)),
        Err(e) => eprintln!("gpu-rq: none ({e}); skipping the ray-query functions"),
    }
    engines
}

fn gpu_engine_with(ray_query: RayQuery) -> Option<Engine> {
    let options = EngineOptions {
        ray_query,
        ..Default::default()
    };
    match Engine::headless_gpu(options) {
        Ok(engine) => {
            eprintln!(
                "gpu: {} ({})",
                engine.adapter_name().unwrap_or("unknown adapter"),
                if engine.uses_ray_query() {
                    "ray queries"
                } else {
                    "compute kernels"
                }
            );
            Some(engine)
        }
        Err(e) if std::env::var("SIGHTLINE_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            panic!("SIGHTLINE_REQUIRE_GPU=1 but no GPU engine: {e}")
        }
        Err(e) => {
            eprintln!("gpu: none ({e}); skipping the gpu functions");
            None
        }
    }
}

/// `urban` and its fireteam world: the nav graph at 2 m (largest component), line of sight
/// within 100 m, cover, traced on the CPU engine.
pub fn urban_world() -> (Scene, World) {
    let t = std::time::Instant::now();
    let engine = Engine::cpu();
    let scene = sightline::scene::procedural::urban(1, 1);
    let (g, _) = nav::generate(
        &engine,
        &scene,
        &nav::NavParams::with_spacing(2.0),
        &nav::CostParams::standard(),
    )
    .expect("nav graph");
    let label = g.components().label;
    let (g, _) = g
        .subgraph(|i| label[i as usize] == 0, &nav::CostParams::standard())
        .expect("largest component");
    let params = sightline::tables::PrecomputeParams {
        range: Some(100.0),
        ..Default::default()
    };
    let table = nav::precompute(
        &engine,
        &scene,
        "urban",
        &g,
        &params,
        None,
        None,
        |_, _, _| {},
    )
    .expect("line of sight");
    let world = World::new(g, table, &CoverParams::standard()).expect("world");
    eprintln!(
        "urban at 2 m: {} nodes, {} edges (largest component), line of sight within 100 m and \
         cover in {:.1} s",
        world.graph().len(),
        world.graph().edges().len(),
        t.elapsed().as_secs_f64()
    );
    (scene, world)
}

/// `teams` teams of 4 spread over `g`: each takes the 4 free nodes nearest a node picked by a
/// hash of its number.
pub fn spread_teams(g: &sightline::nav::NavGraph, teams: u32) -> Vec<u32> {
    let n = g.len() as u32;
    let mut used = vec![false; g.len()];
    let mut starts = Vec::new();
    for k in 0..teams {
        let team: Vec<u32> = nearest_nodes(g, (k * 7919 + 13) % n, 32)
            .into_iter()
            .filter(|&v| !used[v as usize])
            .take(4)
            .collect();
        team.iter().for_each(|&v| used[v as usize] = true);
        starts.extend(team);
    }
    assert_eq!(starts.len(), 4 * teams as usize, "{teams} teams of 4");
    starts
}
