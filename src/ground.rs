//! Ground search on a top-down grid: the top walkable surface under each cell centre.
//!
//! One downward closest-hit ray per cell centre, from above the scene's bounds, against every
//! flagged triangle (`SOLID | WALKABLE`, so foliage and glass stop the ray too). A cell has
//! ground where that first surface is walkable ([`MaterialFlags::WALKABLE`]) and its normal is
//! within `max_slope` of vertical; under a tree canopy, a car roof or a steep rock there is none.
//! Shared by [`crate::viewshed`] and [`crate::cover::field`].
//!
//! [`floors`] finds every walkable surface under each cell centre, not only the top one (roofs,
//! upper storeys, the ground floor under them, a creek bed under a bridge): the waypoints of the
//! tables and the nodes of the nav graph stand on them.

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
    let frame = crate::trace::down::DownGrid {
        origin,
        cell,
        width,
        floor: lo.y - 1.0,
    };
    let all = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
    // Row-major and straight down: the CPU lays the tree onto the grid (same answers), and
    // only the heights are kept.
    let min_normal_y = max_slope.cos();
    let materials = scene.materials();
    engine.closest_hit_grid_with(scene, &frame, &vec![top; cells], all, |h| {
        match h.to_hit() {
            Some(h)
                if materials[h.material as usize]
                    .flags
                    .contains(MaterialFlags::WALKABLE)
                    && !(h.normal.y < min_normal_y) =>
            {
                quantise_height(top - h.t)
            }
            _ => f32::NAN,
        }
    })
}

/// Steps per metre of the grid ground heights are given on ([`quantise_height`]).
pub const HEIGHT_STEPS: f32 = 1024.0;

/// A ground height on a 1/1024 m grid (exact in `f32` at any height). A height found by a ray
/// becomes the origin of more rays and the key of cells; a GPU may round its last bits
/// otherwise than the CPU (fused arithmetic), and on the grid those bits vanish instead of
/// spreading into every later decision, except for a height within a few ulps of a grid
/// line. The height moves by at most half a millimetre. Never `-0.0`: a hit a hair under
/// zero on one backend and over it on another gives the same bits.
#[must_use]
pub fn quantise_height(y: f32) -> f32 {
    (y * HEIGHT_STEPS).round() / HEIGHT_STEPS + 0.0
}

/// Centre (x, z) of cell `i` of a row-major grid `width` cells wide.
#[must_use]
pub fn cell_centre(origin: Vec2, cell: f32, width: usize, i: usize) -> Vec2 {
    origin + (Vec2::new((i % width) as f32, (i / width) as f32) + 0.5) * cell
}

/// Every walkable, standable surface under the cell centres of a grid (see [`floors`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Floors {
    /// Cell index (row-major, as [`ground_grid`]) of each surface, ascending; within a cell,
    /// surfaces come top down.
    pub cell: Vec<u32>,
    /// Height (y) of each surface.
    pub height: Vec<f32>,
    /// Material of each surface.
    pub material: Vec<u32>,
    /// Surfaces hit in all (walkable or not, standable or not).
    pub surfaces: usize,
    /// Cells where the search stopped after `max_layers` surfaces with more below; surfaces
    /// below them are not in the result.
    pub truncated_cells: usize,
}

/// Rays per engine call of [`floors`] (bounds memory whatever the grid size).
const FLOOR_BATCH: usize = 1 << 20;

/// Largest `max_layers` [`floors`] accepts.
pub const MAX_LAYERS: u32 = 64;

/// Every walkable surface (as [`ground_grid`]: walkable material, normal within `max_slope` of
/// vertical) under each cell centre of a `width x height` grid, found by peeling: a downward
/// closest-hit ray from above the scene, then again from 1 cm under each hit, against every
/// flagged triangle, up to `max_layers` surfaces per cell (1..=[`MAX_LAYERS`]). The underside
/// of a slab, met from inside the slab, is not a floor: a surface counts only when the ray
/// meets its front (its counter-clockwise winding normal points up, as Recast also requires of
/// walkable triangles); callers that need head room test it themselves. Under a walkable surface that does not block fire (water), the
/// first fire-blocking surface (its bed) is not a floor of its own: the water's surface is.
#[allow(clippy::too_many_arguments)]
pub fn floors(
    engine: &Engine,
    scene: &Scene,
    origin: Vec2,
    cell: f32,
    width: usize,
    height: usize,
    max_slope: f32,
    max_layers: u32,
) -> Result<Floors> {
    let centres: Vec<Vec2> = (0..width * height)
        .map(|i| cell_centre(origin, cell, width, i))
        .collect();
    floors_under(engine, scene, &centres, max_slope, max_layers)
}

/// [`floors`] under any list of points: `cell` in the result indexes `centres`.
pub fn floors_under(
    engine: &Engine,
    scene: &Scene,
    centres: &[Vec2],
    max_slope: f32,
    max_layers: u32,
) -> Result<Floors> {
    if !(1..=MAX_LAYERS).contains(&max_layers) {
        return Err(crate::Error::InvalidInput(format!(
            "max_layers {max_layers} must be 1..={MAX_LAYERS} (surfaces searched per cell; 16 is plenty for a building)"
        )));
    }
    let Some((lo, hi)) = scene.bounds() else {
        return Ok(Floors::default());
    };
    let cells = centres.len();
    let bottom = lo.y - 1.0;
    let all = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
    let min_normal_y = max_slope.cos();
    let mut found: Vec<(u32, f32, u32)> = Vec::new();
    let mut out = Floors::default();
    for first in (0..cells).step_by(FLOOR_BATCH) {
        // (cell, ray start height, under water) of the cells still peeling.
        let mut active: Vec<(u32, f32, bool)> = (first..cells.min(first + FLOOR_BATCH))
            .map(|i| (i as u32, hi.y + 1.0, false))
            .collect();
        // One round past `max_layers` only asks whether anything lies further down.
        for layer in 0..=max_layers {
            if active.is_empty() {
                break;
            }
            let rays: Vec<Ray> = active
                .iter()
                .map(|&(i, top, _)| {
                    let c = centres[i as usize];
                    Ray::new(Vec3::new(c.x, top, c.y), Vec3::NEG_Y, top - bottom)
                })
                .collect();
            let hits = engine.closest_hit(scene, &rays, all)?;
            active = peel(
                scene,
                &active,
                &hits,
                layer == max_layers,
                min_normal_y,
                &mut out,
                &mut found,
            );
        }
    }
    // Peeling visits a cell's surfaces top down, cells in order within each round: sort by
    // cell, keeping the top-down order inside a cell.
    found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    for (i, y, m) in found {
        out.cell.push(i);
        out.height.push(y);
        out.material.push(m);
    }
    Ok(out)
}

/// One peeling round: files the walkable surfaces `hits` found under the `active` cells and
/// returns the cells to peel further (from 1 cm under each hit).
fn peel(
    scene: &Scene,
    active: &[(u32, f32, bool)],
    hits: &[Option<crate::trace::Hit>],
    last: bool,
    min_normal_y: f32,
    out: &mut Floors,
    found: &mut Vec<(u32, f32, u32)>,
) -> Vec<(u32, f32, bool)> {
    let mut next = Vec::with_capacity(active.len());
    for (&(i, top, wet), h) in active.iter().zip(hits) {
        let Some(h) = h else { continue };
        if last {
            out.truncated_cells += 1;
            continue;
        }
        out.surfaces += 1;
        let y = top - h.t;
        let f = scene.materials()[h.material as usize].flags;
        let solid = f.intersects(MaterialFlags::BLOCKS_FIRE);
        // The first solid surface under water is its bed: one stands in the water,
        // on the water's surface node, not on the bed as a second floor.
        // Met from the back, a surface faces down: the floor of a solid seen from
        // inside it, or a ceiling. Not something to stand on.
        if f.contains(MaterialFlags::WALKABLE) && h.normal.y >= min_normal_y && !wet && !h.back {
            found.push((i, quantise_height(y), h.material));
        }
        let water = f.contains(MaterialFlags::WALKABLE) && !solid;
        next.push((i, y - 0.01, (wet || water) && !solid));
    }
    next
}

/// Horizontal directions of [`outside_solids`]' rays: the axes and the diagonals.
pub const AROUND: [Vec3; 8] = {
    let d = std::f32::consts::FRAC_1_SQRT_2;
    [
        Vec3::X,
        Vec3::NEG_X,
        Vec3::Z,
        Vec3::NEG_Z,
        Vec3::new(d, 0.0, d),
        Vec3::new(-d, 0.0, -d),
        Vec3::new(d, 0.0, -d),
        Vec3::new(-d, 0.0, d),
    ]
};

/// Whether each point lies outside every closed solid, from nine rays at `height` above it that
/// run across the whole scene: one straight up and eight horizontal ones (the axes and the
/// diagonals). From inside a closed solid the faces met first are met from their back (the
/// winding normal points along the ray): the ray up meets the solid's top, the horizontal ones
/// its sides. A point is *inside* when the ray up meets a back face and, of the horizontal
/// rays, at least two meet a back face and more meet one from the back than from the front
/// ([`inside_around`]: a crate interpenetrating its neighbour shows the neighbour's front to
/// a ray or two); the horizontal rays are traced only for points whose ray up met a back face.
/// A ray that meets nothing has left the scene and counts neither way, so a solid cut open
/// where the scene ends (a terrain tile cut through a hill) still holds the ground inside it,
/// however wide it is, while a point in the open (rays up and around that meet nothing, or the
/// front of a wall, a crate, a hillside) is outside. In a room, even one walled with
/// single-sided inward-facing polygons, the rays meet walls and ceiling from the front; a room
/// walled and roofed with single-sided polygons facing *out* reads as a solid. Traced against
/// what blocks fire or is walkable (foliage is not a solid one stands in). Returns the
/// verdicts and the number of rays traced.
pub fn outside_solids(
    engine: &Engine,
    scene: &Scene,
    points: &[Vec3],
    height: f32,
) -> Result<(Vec<bool>, u64)> {
    let Some((lo, hi)) = scene.bounds() else {
        return Ok((vec![true; points.len()], 0));
    };
    // Longer than any path inside the bounds: a ray that meets nothing has left the scene.
    let reach = (hi - lo).length() + height.abs() + 1.0;
    let mask = Mask(MaterialFlags::BLOCKS_FIRE.union(MaterialFlags::WALKABLE));
    let origin = |p: Vec3| p + Vec3::Y * height;
    // The ray up first: only a point under the back of a face (a solid's top seen from inside)
    // needs the horizontal ones, and most points are under the open sky or a ceiling.
    let mut out = Vec::with_capacity(points.len());
    for chunk in points.chunks(FLOOR_BATCH) {
        let up: Vec<Ray> = chunk
            .iter()
            .map(|&p| Ray::new(origin(p), Vec3::Y, reach))
            .collect();
        let ups = engine.closest_hit(scene, &up, mask)?;
        out.extend(ups.iter().map(|h| h.is_none_or(|h| !h.back)));
    }
    let under: Vec<usize> = (0..points.len()).filter(|&i| !out[i]).collect();
    for chunk in under.chunks(FLOOR_BATCH / AROUND.len()) {
        let rays: Vec<Ray> = chunk
            .iter()
            .flat_map(|&i| AROUND.map(|d| Ray::new(origin(points[i]), d, reach)))
            .collect();
        let hits = engine.closest_hit(scene, &rays, mask)?;
        for (&i, h) in chunk.iter().zip(hits.chunks(AROUND.len())) {
            out[i] = !inside_around(h);
        }
    }
    let rays = points.len() + under.len() * AROUND.len();
    Ok((out, rays as u64))
}

/// The horizontal half of the verdict of [`outside_solids`], for a point whose ray straight up
/// met a back face: inside a closed solid when its horizontal rays met at least two back faces
/// and more back faces than front ones. Rays that met nothing (they left the scene) count
/// neither way.
#[must_use]
pub fn inside_around(around: &[Option<crate::trace::Hit>]) -> bool {
    let back = around.iter().flatten().filter(|h| h.back).count();
    let front = around.iter().flatten().filter(|h| !h.back).count();
    back >= 2 && back > front
}

/// Columns per side of the grid [`survey`] traces.
const SURVEY_SIDE: usize = 64;

/// Surfaces a survey ray passes from the back before it gives up on a column.
const SURVEY_LAYERS: usize = 8;

/// Why a scene may have little ground to stand on ([`survey`]): how its triangles are wound,
/// and the first surface met from the front under each column of a coarse grid over its
/// footprint. Names the cause when a walk surface, a nav graph or an underlay comes out
/// (nearly) empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroundSurvey {
    /// Triangles in the scene.
    pub triangles: usize,
    /// Triangles that [`Winding::Auto`](crate::scene::Winding::Auto) would flip: parts of the
    /// scene that read as inside out.
    pub inside_out_triangles: usize,
    /// Columns traced.
    pub columns: usize,
    /// Columns with a surface under them.
    pub hit: usize,
    /// Columns where every surface (up to 8) is met from the back: facing down.
    pub facing_down: usize,
    /// Columns whose first front-facing surface is not walkable.
    pub not_walkable: usize,
    /// Columns whose first front-facing surface is walkable but steeper than the slope limit.
    pub too_steep: usize,
    /// Columns whose first front-facing surface is walkable and standable.
    pub standable: usize,
}

impl GroundSurvey {
    /// More than half of the scene's triangles read as inside out.
    #[must_use]
    pub fn inside_out(&self) -> bool {
        2 * self.inside_out_triangles > self.triangles
    }

    /// The likeliest reason the scene has little ground to stand on, in words that say what to
    /// change.
    #[must_use]
    pub fn cause(&self) -> String {
        let of = |n: usize| format!("{n} of {} columns", self.hit);
        if self.inside_out() {
            format!(
                "{} of its {} triangles belong to parts that read as inside out (closed parts with \
                 negative volume, open parts facing down with nothing under them), as in a level \
                 wound clockwise (DirectX); load it with --winding auto (the default) or \
                 --winding cw (library: LoadOptions::winding)",
                self.inside_out_triangles, self.triangles
            )
        } else if self.hit == 0 {
            "nothing lies under the scene's footprint".to_string()
        } else if 2 * self.facing_down > self.hit {
            format!(
                "{} meet surfaces only from their backs: they face down; load the level with \
                 --winding cw if it is wound clockwise",
                of(self.facing_down)
            )
        } else if 2 * self.not_walkable > self.hit {
            format!(
                "{} find a first surface whose material is not walkable: check the material \
                 rules (MaterialRules) against the file's material names",
                of(self.not_walkable)
            )
        } else if 2 * self.too_steep > self.hit {
            format!(
                "{} find a first surface steeper than the slope limit: is the mesh Z-up (--z-up \
                 converts it)?",
                of(self.too_steep)
            )
        } else {
            format!(
                "{} find standable ground, so the agent does not fit (head room, step height) \
                 or the spacing is too coarse for the level's scale (is it in metres?)",
                of(self.standable)
            )
        }
    }
}

/// Surveys the scene ([`GroundSurvey`]): its winding, read as a loader would, and a
/// 64-square grid of downward rays over its footprint, each passing surfaces met
/// from the back (ceilings seen from above) until one faces it.
pub fn survey(engine: &Engine, scene: &Scene, max_slope: f32) -> Result<GroundSurvey> {
    let Some((lo, hi)) = scene.bounds() else {
        return Ok(GroundSurvey::default());
    };
    let winding = scene.winding();
    let mut s = GroundSurvey {
        triangles: scene.triangle_count(),
        inside_out_triangles: winding.triangles_flipped,
        columns: SURVEY_SIDE * SURVEY_SIDE,
        ..GroundSurvey::default()
    };
    let size = Vec2::new(hi.x - lo.x, hi.z - lo.z).max(Vec2::splat(1e-3));
    let bottom = lo.y - 1.0;
    let mut active: Vec<(Vec2, f32, bool)> = (0..s.columns)
        .map(|i| {
            let f = (Vec2::new((i % SURVEY_SIDE) as f32, (i / SURVEY_SIDE) as f32) + 0.5)
                / SURVEY_SIDE as f32;
            (Vec2::new(lo.x, lo.z) + f * size, hi.y + 1.0, false)
        })
        .collect();
    let all = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
    for _ in 0..SURVEY_LAYERS {
        let rays: Vec<Ray> = (active.iter())
            .map(|&(c, top, _)| Ray::new(Vec3::new(c.x, top, c.y), Vec3::NEG_Y, top - bottom))
            .collect();
        let hits = engine.closest_hit(scene, &rays, all)?;
        let mut next = Vec::new();
        for (&(c, top, seen), h) in active.iter().zip(hits) {
            match h {
                None if seen => s.facing_down += 1,
                None => {}
                Some(h) if h.back => next.push((c, top - h.t - 0.01, true)),
                Some(h) => s.file_front(scene, &h, max_slope),
            }
        }
        active = next;
    }
    s.facing_down += active.len();
    s.hit = s.facing_down + s.not_walkable + s.too_steep + s.standable;
    Ok(s)
}

impl GroundSurvey {
    /// Counts a column whose first front-facing surface is `h`.
    fn file_front(&mut self, scene: &Scene, h: &crate::trace::Hit, max_slope: f32) {
        let walkable = scene.materials()[h.material as usize]
            .flags
            .contains(MaterialFlags::WALKABLE);
        let bin = if !walkable {
            &mut self.not_walkable
        } else if h.normal.y < max_slope.cos() {
            &mut self.too_steep
        } else {
            &mut self.standable
        };
        *bin += 1;
    }
}

/// [`survey`], with a warning (`log`) when the scene reads as inside out.
pub fn survey_warn(engine: &Engine, scene: &Scene, max_slope: f32) -> Result<GroundSurvey> {
    let s = survey(engine, scene, max_slope)?;
    if s.inside_out() {
        log::warn!("the scene reads as inside out: {}", s.cause());
    }
    Ok(s)
}
