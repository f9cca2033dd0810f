//! The GPU engine for tests. Without an adapter, GPU tests skip with a message, except under
//! `SIGHTLINE_REQUIRE_GPU=1` (CI), where they fail.

use sightline::{Engine, EngineOptions};

pub fn gpu_engine_with(options: EngineOptions) -> Option<Engine> {
    let _ = env_logger::builder().is_test(true).try_init();
    match Engine::headless_gpu(options) {
        Ok(e) => Some(e),
        Err(e) if std::env::var("SIGHTLINE_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            panic!("SIGHTLINE_REQUIRE_GPU=1 but no GPU engine: {e}")
        }
        Err(e) => {
            eprintln!("skipping GPU half of this test: {e}");
            None
        }
    }
}

pub fn gpu_engine() -> Option<Engine> {
    gpu_engine_with(EngineOptions::default())
}

/// The engines a cross-backend suite compares with the plain CPU twin: the GPU (when there is
/// one) and the two fused CPU twins, which round `a * b + c` as a contracting GPU compiler may
/// (`Fusion`), so the suite's contract is exercised on every machine.
#[allow(dead_code)]
pub fn twins() -> Vec<(String, Engine)> {
    let fused = [sightline::Fusion::First, sightline::Fusion::Last]
        .map(|f| (format!("fused {f:?}"), Engine::cpu_fused(f)));
    gpu_engine()
        .map(|g| ("gpu".to_string(), g))
        .into_iter()
        .chain(fused)
        .collect()
}
