use glam::Vec3;
use sightline::cover::Posture;
use sightline::intervis::measure::{measure, measure_ray_cast, IntervisPair, IntervisParams};
use sightline::scene::procedural;
use sightline::tables::{sample_waypoints, LosParams, PrecomputeParams};
use sightline::trace::SplitMix64;
use sightline::Engine;
use std::time::Instant;
fn main() {
    env_logger::init();
    let scene = procedural::urban(1, 1);
    let cpu = Engine::cpu();
    let gpu = Engine::headless_gpu(Default::default()).unwrap();
    let w = sample_waypoints(&cpu, &scene, 2.0, PrecomputeParams::default().max_slope).unwrap();
    let n = w.len();
    let mut rng = SplitMix64(3);
    let pairs: Vec<IntervisPair> = (0..1000)
        .map(|_| loop {
            let (i, j) = (
                (rng.next_u64() % n as u64) as usize,
                (rng.next_u64() % n as u64) as usize,
            );
            if i != j {
                break IntervisPair {
                    observer: w[i] + Vec3::Y * LosParams::standard().eye_height,
                    target: w[j],
                    posture: Posture::Standing,
                };
            }
        })
        .collect();
    let mut params = IntervisParams::standard();
    if let Ok(b) = std::env::var("BUDGET") {
        params.max_box_pixels = b.parse().unwrap();
    }
    let tracer = gpu.gpu().unwrap();
    for _ in 0..2 {
        let t = Instant::now();
        let pass =
            sightline::intervis::IntervisPass::prepare(tracer, &scene, &pairs, &params).unwrap();
        let tp = t.elapsed();
        let mut enc = tracer.device().create_command_encoder(&Default::default());
        pass.encode(tracer, &mut enc);
        let te = t.elapsed();
        tracer.queue().submit([enc.finish()]);
        let _ = pass.read(tracer).unwrap();
        println!(
            "prepare {:?} encode {:?} total {:?}; views {} fills {}",
            tp,
            te - tp,
            t.elapsed(),
            pass.tiles(),
            pass.fills()
        );
    }
    for _ in 0..3 {
        let t = Instant::now();
        let g = measure(&gpu, &scene, &pairs, &params).unwrap();
        let tg = t.elapsed();
        let t = Instant::now();
        let c = measure_ray_cast(&cpu, &scene, &pairs, &params).unwrap();
        let tc = t.elapsed();
        let px: u64 = c.iter().map(|r| r.box_pixels as u64).sum();
        println!(
            "gpu {:?} cpu {:?} ratio cpu/gpu {:.2}; box px {}; {}",
            tg,
            tc,
            tc.as_secs_f64() / tg.as_secs_f64(),
            px,
            gpu.counters().operation("intervis")
        );
        let _ = g;
    }
}
