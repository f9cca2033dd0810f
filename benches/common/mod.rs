//! Setup shared by the benches: the real level, the one GPU engine, milliseconds.
#![allow(dead_code)] // each bench uses part of it

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
