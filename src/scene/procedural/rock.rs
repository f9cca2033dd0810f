//! `rock`: Darken, Morgan and Paull's thought experiment (Darken, Morgan, Paull, "Related Work"): "a map
//! consisting of an open plane with one tall rock sitting in the center".

use super::geom::{blob, height_field, segs, Bumps};
use super::{Builder, Mat, Rng, Scene};
use glam::{Vec2, Vec3};

/// Half the side of the square plane.
pub(crate) const HALF: f32 = 50.0;
/// Rock radii (x, y, z) before displacement, and its centre.
pub(crate) const ROCK_RADII: Vec3 = Vec3::new(2.0, 2.65, 2.0);
pub(crate) const ROCK_CENTER: Vec3 = Vec3::new(0.0, 2.35, 0.0);

/// A flat 100 m x 100 m ground plane (y = 0, x and z in -50..50) with one closed, roughly
/// convex rock at the origin: about 4 m wide and reaching about 5 m above the ground (its
/// bottom is sunk 0.3 m into the plane). The seed only changes the rock's shape.
///
/// Triangles: 2 * (50 * detail)² for the plane plus 12 * (8 * detail)² for the rock.
#[must_use]
pub fn rock(seed: u64, detail: u32) -> Scene {
    let d = super::detail(detail);
    let mut b = Builder::new(d);
    let mut rng = Rng::new(seed).fork(0x20c);
    let ground = b.mat(Mat::Ground);
    let stone = b.mat(Mat::Rock);
    let n = segs(2.0 * HALF, 0.5 * d);
    height_field(
        &mut b.level,
        Vec2::splat(-HALF),
        Vec2::splat(HALF),
        [n, n],
        |_, _| 0.0,
        |_, _| ground,
    );
    let bumps = Bumps::new(&mut rng, 0.12);
    blob(
        &mut b.level,
        ROCK_CENTER,
        ROCK_RADII,
        segs(8.0, d),
        &bumps,
        stone,
    );
    b.finish()
}
