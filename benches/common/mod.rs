//! Setup shared by the benches: the real level, the one GPU engine, milliseconds.
#![allow(dead_code)] // each bench uses part of it

use sightline::scene::{load_obj, LoadOptions};
use sightline::{Engine, EngineOptions, Scene};
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
    match Engine::headless_gpu(EngineOptions::default()) {
        Ok(engine) => {
            eprintln!(
                "gpu: {}",
                engine.adapter_name().unwrap_or("unknown adapter")
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
