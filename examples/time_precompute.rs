use glam::Vec3;
use sightline::cover::Posture;
use sightline::intervis::measure::{measure, measure_ray_cast, IntervisPair, IntervisParams};
use sightline::scene::procedural;
use sightline::tables::TableFile;
use sightline::Engine;
use std::time::Instant;
fn main() {
    env_logger::init();
    let scene = procedural::urban(1, 1);
    let t = TableFile::read_from(std::path::Path::new("/tmp/u_cpu.slt")).unwrap();
    let w = &t.waypoints;
    let mut pairs = Vec::new();
    for i in 0..w.len() {
        for j in 0..w.len() {
            if i != j && w[i].distance_squared(w[j]) <= 900.0 {
                pairs.push(IntervisPair {
                    observer: w[i] + Vec3::Y * 1.7,
                    target: w[j],
                    posture: Posture::Standing,
                });
            }
        }
    }
    println!("{} waypoints, {} pairs in range", w.len(), pairs.len());
    let n: usize = std::env::var("N")
        .map(|s| s.parse().unwrap())
        .unwrap_or(65536);
    let sample = &pairs[..n.min(pairs.len())];
    let mut params = IntervisParams::standard();
    if let Ok(b) = std::env::var("BUDGET") {
        params.max_box_pixels = b.parse().unwrap();
    }
    let cpu = Engine::cpu();
    let gpu = Engine::headless_gpu(Default::default()).unwrap();
    for _ in 0..2 {
        let t0 = Instant::now();
        let g = measure(&gpu, &scene, sample, &params).unwrap();
        let tg = t0.elapsed();
        let t0 = Instant::now();
        let c = measure_ray_cast(&cpu, &scene, sample, &params).unwrap();
        let tc = t0.elapsed();
        let px: u64 = c.iter().map(|r| r.box_pixels as u64).sum();
        let exposed = c.iter().filter(|r| r.exposed > 0).count();
        println!("{} pairs: gpu {:?} ({:.0}/s) cpu {:?} ({:.0}/s); box px {} ({:.0}/pair), exposed {}; gpu exposed {}", sample.len(), tg, sample.len() as f64/tg.as_secs_f64(), tc, sample.len() as f64/tc.as_secs_f64(), px, px as f64/sample.len() as f64, exposed, g.iter().filter(|r| r.exposed > 0).count());
    }
}
