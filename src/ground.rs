//! Ground search on a top-down grid: the top walkable surface under each cell centre.
//!
//! One downward closest-hit ray per cell centre, from above the scene's bounds, against every
//! flagged triangle (`SOLID | WALKABLE`, so foliage and glass stop the ray too). A cell has
//! ground where that first surface is walkable ([`MaterialFlags::WALKABLE`]) and its normal is
//! within `max_slope` of vertical; under a tree canopy, a car roof or a steep rock there is none.
//! Shared by [`crate::viewshed`] and [`crate::cover::field`].

use crate::scene::{Mask, MaterialFlags, Scene};
use crate::trace::Ray;
use crate::{Engine, Result};
use glam::{Vec2, Vec3};

/// Ground height (y) per cell of a `width x height` grid whose cell `(c, r)` has its corner at
/// `origin + (c, r) * cell` (x, z); NaN where there is no ground. Row-major, row `r` at
/// `r * width`. An empty scene has no ground anywhere.
// `!(a < b)`: the viewshed's test as it always was (a NaN normal would not reject a cell).
#[allow(clippy::neg_cmp_op_on_partial_ord)]
pub fn ground_grid(
    engine: &Engine,
    scene: &Scene,
    origin: Vec2,
    cell: f32,
    width: usize,
    height: usize,
    max_slope: f32,
) -> Result<Vec<f32>> {
    let cells = width * height;
    let Some((lo, hi)) = scene.bounds() else {
        return Ok(vec![f32::NAN; cells]);
    };
    let top = hi.y + 1.0;
    let drop = top - lo.y + 1.0;
    let down: Vec<Ray> = (0..cells)
        .map(|i| {
            let c = cell_centre(origin, cell, width, i);
            Ray::new(Vec3::new(c.x, top, c.y), Vec3::NEG_Y, drop)
        })
        .collect();
    let all = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
    let hits = engine.closest_hit(scene, &down, all)?;
    let min_normal_y = max_slope.cos();
    Ok(hits
        .iter()
        .map(|h| match h {
            Some(h)
                if scene.materials()[h.material as usize]
                    .flags
                    .contains(MaterialFlags::WALKABLE)
                    && !(h.normal.y < min_normal_y) =>
            {
                top - h.t
            }
            _ => f32::NAN,
        })
        .collect())
}

/// Centre (x, z) of cell `i` of a row-major grid `width` cells wide.
#[must_use]
pub fn cell_centre(origin: Vec2, cell: f32, width: usize, i: usize) -> Vec2 {
    origin + (Vec2::new((i % width) as f32, (i / width) as f32) + 0.5) * cell
}
