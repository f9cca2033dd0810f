//! The shortest useful program: is the line between two points blocked in the built-in village?
//!
//! `cargo run --release --example quickstart`

use glam::Vec3;
use sightline::{scene::procedural, Engine, Mask, Segment};

fn main() -> sightline::Result<()> {
    let scene = procedural::village(1, 1);
    let engine = Engine::headless(); // a real GPU if there is one, else the CPU backend
    let eye = Vec3::new(0.0, 12.0, 0.0);
    let segments: Vec<Segment> = (0..8)
        .map(|i| {
            let a = i as f32 * std::f32::consts::TAU / 8.0;
            Segment::new(eye, Vec3::new(40.0 * a.cos(), 1.0, 40.0 * a.sin()))
        })
        .collect();
    let blocked = engine.occluded(&scene, &segments, Mask::SIGHT)?;
    for (s, b) in segments.iter().zip(blocked.iter()) {
        println!(
            "{} -> {}: {}",
            s.start(),
            s.end(),
            if b { "blocked" } else { "clear" }
        );
    }
    Ok(())
}
