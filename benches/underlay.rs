//! Top-down pictures: closest hits of a 1024 x 1024 grid of straight-down rays, one per pixel,
//! over 100 m x 100 m of `village` (centred) and over the whole `rock` scene, on the CPU:
//! `down_grid` (`trace::down::closest_hit_grid`, the rays given by the grid's frame, the tree's
//! leaves laid onto the pixels) and `down_tiled` (`trace::down::closest_hit_down`, tiles of
//! rays sharing one tree walk) beside `closest_stream` (`trace::cpu::closest_hit`, the general
//! kernel, on the same rays). On
//! `village`, the same pair also runs the second pass of such a picture ("what lies beneath
//! the top surface"): each ray restarts 1 cm below its first hit and runs to the bottom, and
//! misses get `t_max = 0`.
//!
//! `whole_*` times the whole scene underlay the CLI draws under its pictures
//! (`underlay::underlay`: the top surface, what lies beneath it, out of solids, the sideways
//! probes, the classification) at 1024 x 1024 over 100 m x 100 m of `village` and `rock` and over
//! the real `dungeon.obj`, on the CPU backend and on the GPU backend (a shared headless
//! device; lavapipe on a machine without a GPU). The GPU's underlay must equal the CPU's pixel
//! for pixel before timing.
//!
//! ```text
//! WGPU_BACKEND=vulkan cargo bench --bench underlay
//! cargo test --release --bench underlay      # each function once (smoke test)
//! ```
//!
//! Before timing, both kernels' records must be equal byte for byte. Setup (triangles, hits)
//! goes to stderr.

#[path = "common/mod.rs"]
mod common;

use common::{dungeon, gpu_engine, ms};
use criterion::{Criterion, Throughput};
use glam::Vec2;
use glam::Vec3;
use sightline::scene::{procedural, Tier};
use sightline::trace::down::DownGrid;
use sightline::trace::{cpu, down, Ray};
use sightline::underlay::{underlay, Underlay};
use sightline::{Engine, Scene};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Rays per picture side.
const SIDE: usize = 1024;
/// Picture side in metres.
const EXTENT: f32 = 100.0;
/// Every material: sight, fire and walkable surfaces.
const MASK: u32 = 7;

/// The picture's rays, row-major: origin `(x0 + (c + 0.5) * step, top, z0 + (r + 0.5) * step)`
/// with `top` 1 m over the scene, straight down, `t_max` the scene's height range plus 2 m.
fn picture(scene: &Scene, x0: f32, z0: f32) -> Vec<Ray> {
    let (lo, hi) = scene.bounds().expect("non-empty scene");
    let (top, depth) = (hi.y + 1.0, hi.y - lo.y + 2.0);
    let step = EXTENT / SIDE as f32;
    (0..SIDE * SIDE)
        .map(|k| {
            let (r, c) = ((k / SIDE) as f32, (k % SIDE) as f32);
            Ray::new(
                Vec3::new(x0 + (c + 0.5) * step, top, z0 + (r + 0.5) * step),
                Vec3::NEG_Y,
                depth,
            )
        })
        .collect()
}

/// The second pass: from 1 cm below each first hit to 1 m under the scene; misses skip.
fn beneath(scene: &Scene, rays: &[Ray], tiers: &[&Tier]) -> Vec<Ray> {
    let (lo, _) = scene.bounds().expect("non-empty scene");
    let first = cpu::closest_hit(tiers, rays, MASK);
    rays.iter()
        .zip(&first)
        .map(|(r, h)| {
            let mut r = *r;
            if cpu::is_miss(h) {
                r.t_max = 0.0;
            } else {
                r.origin[1] -= h.t + 0.01;
                r.t_max = (r.origin[1] - lo.y + 1.0).max(0.0);
            }
            r
        })
        .collect()
}

fn pair(c: &mut Criterion, name: &str, tiers: &[&Tier], rays: &[Ray], frame: &DownGrid) {
    let t = Instant::now();
    let want = cpu::closest_hit(tiers, rays, MASK);
    let t_ref = t.elapsed();
    let t = Instant::now();
    let got = down::closest_hit_down(tiers, rays, SIDE, MASK);
    let t_down = t.elapsed();
    assert!(
        bytemuck::cast_slice::<_, u8>(&got) == bytemuck::cast_slice::<_, u8>(&want),
        "{name}: down_tiled and closest_stream disagree"
    );
    eprintln!(
        "{name}: {} rays, {} hits; first calls {:.1} ms (down_tiled), {:.1} ms (closest_stream)",
        rays.len(),
        want.iter().filter(|h| !cpu::is_miss(h)).count(),
        ms(t_down),
        ms(t_ref)
    );
    // The same rays given by the grid's frame and a start height a pixel (NaN: no ray).
    let starts: Vec<f32> = (rays.iter())
        .map(|r| if r.t_max > 0.0 { r.origin[1] } else { f32::NAN })
        .collect();
    let built: Vec<Ray> = (0..rays.len()).map(|i| frame.ray(i, starts[i])).collect();
    let want = cpu::closest_hit(tiers, &built, MASK);
    let got = down::closest_hit_grid(tiers, frame, &starts, MASK).expect("a valid grid");
    assert!(
        bytemuck::cast_slice::<_, u8>(&got) == bytemuck::cast_slice::<_, u8>(&want),
        "{name}: down_grid and closest_stream disagree"
    );
    let mut g = c.benchmark_group(format!("underlay/{name}"));
    g.throughput(Throughput::Elements(rays.len() as u64));
    g.bench_function("down_grid", |b| {
        b.iter(|| black_box(down::closest_hit_grid(tiers, frame, &starts, MASK)))
    });
    g.bench_function("down_tiled", |b| {
        b.iter(|| black_box(down::closest_hit_down(tiers, rays, SIDE, MASK)))
    });
    g.bench_function("closest_stream", |b| {
        b.iter(|| black_box(cpu::closest_hit(tiers, rays, MASK)))
    });
    g.finish();
}

/// The whole underlay of `SIDE` x `SIDE` pixels over `EXTENT` metres from `corner`, on the CPU
/// and (if there is one) the GPU backend.
fn whole(c: &mut Criterion, name: &str, scene: &Scene, corner: Vec2, gpu: Option<&Engine>) {
    let cpu = Engine::cpu();
    let px = EXTENT / SIDE as f32;
    let draw = |e: &Engine| underlay(e, scene, corner, px, SIDE, SIDE).expect("underlay");
    let t = Instant::now();
    let want = draw(&cpu);
    eprintln!(
        "whole_{name}: {} rays, first call {:.1} ms on the CPU",
        want.rays,
        ms(t.elapsed())
    );
    if let Some(g) = gpu {
        // Backends agree by contract, not bit for bit (a GPU may fuse `a * b + c`; ray queries
        // may keep the other of two coincident faces): a few pixels on edges may differ.
        let differ = differing(&draw(g), &want);
        eprintln!(
            "whole_{name}: {differ} of {} pixels differ from the CPU's",
            SIDE * SIDE
        );
        assert!(
            differ * 1000 <= SIDE * SIDE,
            "{name}: the GPU's underlay differs from the CPU's in {differ} pixels"
        );
    }
    let mut g = c.benchmark_group(format!("underlay/whole_{name}"));
    g.throughput(Throughput::Elements((SIDE * SIDE) as u64));
    g.bench_function("cpu", |b| b.iter(|| black_box(draw(&cpu))));
    if let Some(e) = gpu {
        g.bench_function("gpu", |b| b.iter(|| black_box(draw(e))));
    }
    g.finish();
}

/// Pixels whose surface or cover class differs, or whose elevation differs by over 1 mm.
fn differing(a: &Underlay, b: &Underlay) -> usize {
    (0..a.surface.len())
        .filter(|&i| {
            a.surface[i] != b.surface[i]
                || a.cover[i] != b.cover[i]
                || !(a.elevation[i].to_bits() == b.elevation[i].to_bits()
                    || (a.elevation[i] - b.elevation[i]).abs() <= 1e-3)
        })
        .count()
}

fn main() {
    eprintln!("{} rayon threads", rayon::current_num_threads());
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();

    let village = procedural::village(1, 1);
    let (lo, hi) = village.bounds().expect("non-empty scene");
    let centre = (lo + hi) * 0.5;
    let rays = picture(&village, centre.x - 0.5 * EXTENT, centre.z - 0.5 * EXTENT);
    let tiers = village.tiers();
    eprintln!(
        "village: {} triangles",
        tiers.iter().map(|t| t.triangles.len()).sum::<usize>()
    );
    let frame = |scene: &Scene, x0: f32, z0: f32| DownGrid {
        origin: Vec2::new(x0, z0),
        cell: EXTENT / SIDE as f32,
        width: SIDE,
        floor: scene.bounds().expect("non-empty scene").0.y - 1.0,
    };
    let village_frame = frame(&village, centre.x - 0.5 * EXTENT, centre.z - 0.5 * EXTENT);
    pair(&mut c, "village", &tiers, &rays, &village_frame);
    let under = beneath(&village, &rays, &tiers);
    pair(&mut c, "village_beneath", &tiers, &under, &village_frame);

    let rock = procedural::rock(1, 1);
    let (lo, _) = rock.bounds().expect("non-empty scene");
    let rays = picture(&rock, lo.x, lo.z);
    let tiers = rock.tiers();
    eprintln!(
        "rock: {} triangles",
        tiers.iter().map(|t| t.triangles.len()).sum::<usize>()
    );
    pair(&mut c, "rock", &tiers, &rays, &frame(&rock, lo.x, lo.z));

    let gpu = gpu_engine();
    whole(
        &mut c,
        "village",
        &village,
        Vec2::new(centre.x, centre.z) - 0.5 * EXTENT,
        gpu.as_ref(),
    );
    whole(&mut c, "rock", &rock, Vec2::new(lo.x, lo.z), gpu.as_ref());
    let level = dungeon();
    let (lo, hi) = level.bounds().expect("non-empty scene");
    let centre = (lo + hi) * 0.5;
    whole(
        &mut c,
        "dungeon",
        &level,
        Vec2::new(centre.x, centre.z) - 0.5 * EXTENT,
        gpu.as_ref(),
    );
    c.final_summary();
}
