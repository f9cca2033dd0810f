//! Top-down pictures a person can read at a glance.

use image::{Rgb, RgbImage};
use sightline::viewshed::{CellState, Viewshed};

/// Visible ground bright yellow, hidden ground dark blue, both shaded by height; not ground
/// (roofs of cars, steep slopes, nothing) near-black; the observer a red ring. +X right, +Z down.
pub fn viewshed_png(v: &Viewshed) -> RgbImage {
    let scale = (512 / v.width.max(v.height)).max(1) as u32;
    let (lo, hi) = v
        .ground
        .iter()
        .filter(|g| g.is_finite())
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &g| {
            (a.min(g), b.max(g))
        });
    let shade = |g: f32| {
        if hi > lo {
            0.55 + 0.45 * (g - lo) / (hi - lo)
        } else {
            1.0
        }
    };
    let mut img = RgbImage::new(v.width as u32 * scale, v.height as u32 * scale);
    for (i, (&s, &g)) in v.state.iter().zip(&v.ground).enumerate() {
        let colour = match s {
            CellState::Visible => tint([250.0, 220.0, 60.0], shade(g)),
            CellState::Hidden => tint([40.0, 70.0, 150.0], shade(g)),
            CellState::OutOfRange => tint([90.0, 90.0, 90.0], shade(g)),
            CellState::NotGround => Rgb([25, 25, 25]),
        };
        let (c, r) = ((i % v.width) as u32, (i / v.width) as u32);
        for dy in 0..scale {
            for dx in 0..scale {
                img.put_pixel(c * scale + dx, r * scale + dy, colour);
            }
        }
    }
    let centre = (
        (v.observer.x - v.origin.x) / v.cell * scale as f32,
        (v.observer.z - v.origin.y) / v.cell * scale as f32,
    );
    ring(
        &mut img,
        centre,
        6.0 * scale as f32 / 2.0 + 4.0,
        Rgb([230, 30, 30]),
    );
    img
}

fn tint(c: [f32; 3], k: f32) -> Rgb<u8> {
    Rgb(c.map(|x| (x * k).clamp(0.0, 255.0) as u8))
}

fn ring(img: &mut RgbImage, (cx, cy): (f32, f32), radius: f32, colour: Rgb<u8>) {
    let (w, h) = img.dimensions();
    let r = radius.ceil() as i64 + 2;
    for y in (cy as i64 - r)..=(cy as i64 + r) {
        for x in (cx as i64 - r)..=(cx as i64 + r) {
            let d = ((x as f32 - cx).powi(2) + (y as f32 - cy).powi(2)).sqrt();
            if (0..w as i64).contains(&x)
                && (0..h as i64).contains(&y)
                && d <= radius
                && d >= radius - 2.5
                || d < 2.0
            {
                if (0..w as i64).contains(&x) && (0..h as i64).contains(&y) {
                    img.put_pixel(x as u32, y as u32, colour);
                }
            }
        }
    }
}
