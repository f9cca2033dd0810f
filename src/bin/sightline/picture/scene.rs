//! The scene under every picture: [`sightline::underlay`] in colours.
//!
//! Ground is grey, lighter higher up and hill-shaded by a light from the north-west; walls and
//! other vertical geometry are near-black at their footprint; ground under a roof or bridge is
//! hatched with dark diagonal lines; water is sky blue, foliage tints what it covers green;
//! nothing at all (outside the scene) is white.

use super::legend::Key;
use super::palette::{mix, shade, BLUISH_GREEN, SKY_BLUE};
use image::{Rgb, RgbImage};
use sightline::underlay::{Cover, Surface, Underlay};

const WALL: Rgb<u8> = Rgb([38, 38, 44]);
const EMPTY: Rgb<u8> = Rgb([250, 250, 250]);
const LOW: Rgb<u8> = Rgb([165, 161, 152]);
const HIGH: Rgb<u8> = Rgb([238, 235, 226]);

/// Ground of relative height `k` (0 low, 1 high) lit by `light` (1 for flat ground).
fn ground(k: f32, light: f32) -> Rgb<u8> {
    shade(mix(LOW, HIGH, k), light)
}

/// Hill shade of an upward normal: 1 on flat ground, brighter facing the north-west light
/// (up and towards -x, -z), darker facing away.
fn light(n: glam::Vec3) -> f32 {
    let l = glam::Vec3::new(-0.5, std::f32::consts::FRAC_1_SQRT_2, -0.5);
    (0.35 + 0.65 * n.dot(l) / l.y).clamp(0.3, 1.2)
}

/// The underlay as an image, one pixel per underlay pixel; `hatch` is the overhang stripes'
/// period in pixels.
pub fn draw(u: &Underlay, hatch: u32) -> RgbImage {
    let (lo, hi) = u.elevation_range().unwrap_or((0.0, 1.0));
    let span = (hi - lo).max(1e-3);
    let hatch = hatch.max(3);
    RgbImage::from_fn(u.width as u32, u.height as u32, |x, y| {
        let i = y as usize * u.width + x as usize;
        let mut c = match u.surface[i] {
            Surface::Empty => return EMPTY,
            Surface::Wall => WALL,
            Surface::Water => shade(SKY_BLUE, 0.85 + 0.15 * light(u.normal[i])),
            Surface::Ground => ground((u.elevation[i] - lo) / span, light(u.normal[i])),
        };
        match u.cover[i] {
            Cover::Open => {}
            Cover::Foliage => c = mix(c, BLUISH_GREEN, 0.5),
            Cover::Overhang => {
                if (x + y) % hatch < hatch / 3 + 1 {
                    c = shade(c, 0.55);
                }
            }
        }
        c
    })
}

/// Legend entries for what the underlay shows (only what is in it).
pub fn keys(u: &Underlay) -> Vec<Key> {
    let mut keys = vec![Key::swatch(ground(0.6, 1.0), "ground (lighter higher)")];
    let has = |s| u.surface.contains(&s);
    let covered = |c| u.cover.contains(&c);
    if has(Surface::Wall) {
        keys.push(Key::swatch(WALL, "wall, drop, steep"));
    }
    if covered(Cover::Overhang) {
        keys.push(Key::hatch(ground(0.6, 1.0), "under a roof or bridge"));
    }
    if has(Surface::Water) {
        keys.push(Key::swatch(shade(SKY_BLUE, 1.0), "water"));
    }
    if covered(Cover::Foliage) {
        keys.push(Key::swatch(
            mix(ground(0.6, 1.0), BLUISH_GREEN, 0.5),
            "foliage",
        ));
    }
    if has(Surface::Empty) {
        keys.push(Key::swatch(EMPTY, "nothing (outside the scene)"));
    }
    keys
}
