//! The grid of a cover field and the walkable ground under each cell: the one step of a field
//! that depends on the area alone, found once and reused for any set of observers.

use super::{CellCover, CoverField, CoverFieldParams, MAX_CELLS};
use crate::ground::{cell_centre, ground_grid};
use crate::scene::Scene;
use crate::{Engine, Error, Result};
use glam::{Vec2, Vec3};
use std::time::{Duration, Instant};

/// The square grid around a centre and the walkable ground under it (see [`field_ground`]).
///
/// Found by ray casting through the engine (a blocking step), it depends on the scene, the
/// centre and the grid settings (`cell`, `size`, `max_slope`), never on observers: compute it
/// once per area and hand it to [`super::CoverFieldPass::prepare`] for every set of observers.
#[derive(Clone, Debug)]
pub struct FieldGround {
    center: Vec3,
    origin: Vec2,
    side: usize,
    params: CoverFieldParams,
    heights: Vec<f32>,
    /// Indices of the cells with ground, in order, and their ground points.
    owners: Vec<usize>,
    points: Vec<Vec3>,
    elapsed: Duration,
}

/// The grid of `params.cell` cells, `params.size` a side, centred on `center`, and the
/// walkable ground (slopes up to `params.max_slope`) under every cell, by ray casting through
/// `engine` (blocks until done). Errors on non-finite input, bad sizes or a grid over
/// [`MAX_CELLS`].
pub fn field_ground(
    engine: &Engine,
    scene: &Scene,
    center: Vec3,
    params: &CoverFieldParams,
) -> Result<FieldGround> {
    let start = Instant::now();
    let side = validate_grid(center, params)?;
    let extent = side as f32 * params.cell;
    let origin = Vec2::new(center.x, center.z) - extent / 2.0;
    let heights = ground_grid(
        engine,
        scene,
        origin,
        params.cell,
        side,
        side,
        params.max_slope,
    )?;
    let (owners, points) = heights
        .iter()
        .enumerate()
        .filter(|(_, y)| !y.is_nan())
        .map(|(i, &y)| {
            let c = cell_centre(origin, params.cell, side, i);
            (i, Vec3::new(c.x, y, c.y))
        })
        .unzip();
    log::debug!("cover field ground search: {:?}", start.elapsed());
    Ok(FieldGround {
        center,
        origin,
        side,
        params: *params,
        heights,
        owners,
        points,
        elapsed: start.elapsed(),
    })
}

impl FieldGround {
    /// The point the grid is centred on.
    #[must_use]
    pub fn center(&self) -> Vec3 {
        self.center
    }

    /// x, z of cell (0, 0)'s corner.
    #[must_use]
    pub fn origin(&self) -> Vec2 {
        self.origin
    }

    /// Cell side in metres.
    #[must_use]
    pub fn cell(&self) -> f32 {
        self.params.cell
    }

    /// Cells per side (the grid is square).
    #[must_use]
    pub fn side(&self) -> usize {
        self.side
    }

    /// Ground height per cell, row by row (NaN where there is none).
    #[must_use]
    pub fn heights(&self) -> &[f32] {
        &self.heights
    }

    /// The ground points (cell centres on the ground) of the cells that have ground, in cell
    /// order: the points the field classifies.
    #[must_use]
    pub fn points(&self) -> &[Vec3] {
        &self.points
    }

    /// Time the ground search took.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// An error unless `params` has this ground's grid settings (`cell`, `size`, `max_slope`).
    pub(super) fn check_params(&self, params: &CoverFieldParams) -> Result<()> {
        let g = &self.params;
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits();
        if same(g.cell, params.cell)
            && same(g.size, params.size)
            && same(g.max_slope, params.max_slope)
        {
            return Ok(());
        }
        Err(Error::InvalidInput(format!(
            "the ground was found for cell {} m, size {} m, max_slope {} rad, but the field \
             asks for cell {} m, size {} m, max_slope {} rad; find the ground with the same \
             params",
            g.cell, g.size, g.max_slope, params.cell, params.size, params.max_slope
        )))
    }

    /// The field whose ground points have posture bits `hidden` (one per point, in order).
    pub(super) fn field(&self, hidden: &[u32], elapsed: Duration) -> CoverField {
        let mut cells = vec![CellCover::NotGround; self.heights.len()];
        for (&i, &b) in self.owners.iter().zip(hidden) {
            cells[i] = CellCover::from_bits(b);
        }
        CoverField {
            center: self.center,
            origin: self.origin,
            cell: self.params.cell,
            width: self.side,
            height: self.side,
            ground: self.heights.clone(),
            cells,
            elapsed,
        }
    }
}

/// Checks the centre and the grid settings and returns the grid's side in cells.
fn validate_grid(center: Vec3, params: &CoverFieldParams) -> Result<usize> {
    let bad = |m: String| Err(Error::InvalidInput(m));
    if !center.is_finite() {
        return bad(format!(
            "cover field centre {center} is not finite; pass X,Y,Z in metres"
        ));
    }
    if !(params.cell.is_finite() && params.cell > 0.0) {
        return bad(format!(
            "cell size {} must be a positive number of metres (default 0.25)",
            params.cell
        ));
    }
    if !(params.size.is_finite() && params.size > 0.0) {
        return bad(format!(
            "grid size {} must be a positive number of metres (default 40)",
            params.size
        ));
    }
    if params.max_slope.is_nan() {
        return bad("max_slope is NaN; pass radians (default pi/4)".into());
    }
    // A hair under the quotient so 40 m / 0.25 m is 160 cells, not 161 after rounding.
    let side = (f64::from(params.size) / f64::from(params.cell) - 1e-6).ceil();
    if side * side > MAX_CELLS as f64 {
        return bad(format!(
            "a {} m grid of {} m cells has {side} x {side} cells, over the limit of {MAX_CELLS}; \
             use larger cells or a smaller size",
            params.size, params.cell
        ));
    }
    Ok((side as usize).max(1))
}
