//! Viewshed: which ground cells an observer's eye can see, on a top-down grid.
//!
//! Two batches: a downward closest-hit ray per cell finds the top surface (ground if it is
//! walkable and within 45 degrees of horizontal; [`crate::ground::ground_grid`]), then an occlusion segment per ground cell
//! from the eye to a point just above the ground.

use crate::scene::{Mask, Scene};
use crate::trace::Segment;
use crate::{Engine, Error, Result};
use glam::{Vec2, Vec3};
use std::time::{Duration, Instant};

/// Viewshed settings.
#[derive(Clone, Copy, Debug)]
pub struct ViewshedParams {
    /// Cell size in metres.
    pub cell: f32,
    /// Height above the ground of the point each sight line ends at (metres).
    pub lift: f32,
    /// Cells farther than this from the observer (horizontally) are not tested.
    pub max_range: f32,
    /// Surfaces steeper than this (radians from horizontal) are not ground.
    pub max_slope: f32,
}

impl ViewshedParams {
    pub const DEFAULT: ViewshedParams = ViewshedParams {
        cell: 0.25,
        lift: 0.05,
        max_range: f32::INFINITY,
        max_slope: std::f32::consts::FRAC_PI_4,
    };
}

impl Default for ViewshedParams {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What a cell is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellState {
    /// Nothing below, or a surface agents cannot stand on (a car roof, a steep slope, foliage).
    NotGround,
    /// Ground beyond `max_range`.
    OutOfRange,
    /// Ground the observer cannot see.
    Hidden,
    /// Ground the observer sees.
    Visible,
}

/// A top-down grid over the scene's x/z extent; row `r`, column `c` is the cell whose
/// corner is `origin + (c, r) * cell`.
#[derive(Clone, Debug)]
pub struct Viewshed {
    pub observer: Vec3,
    pub origin: Vec2,
    pub cell: f32,
    pub width: usize,
    pub height: usize,
    /// Ground height per cell (NaN where there is none).
    pub ground: Vec<f32>,
    pub state: Vec<CellState>,
    /// Rays traced (downward plus sight lines).
    pub rays: usize,
    pub elapsed: Duration,
}

impl Viewshed {
    #[must_use]
    pub fn count(&self, s: CellState) -> usize {
        self.state.iter().filter(|&&x| x == s).count()
    }
    #[must_use]
    pub fn rays_per_second(&self) -> f64 {
        self.rays as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
    /// The cell containing world point `p` (x, z), if inside the grid.
    #[must_use]
    pub fn cell_at(&self, p: Vec3) -> Option<usize> {
        let q = (Vec2::new(p.x, p.z) - self.origin) / self.cell;
        let (c, r) = (q.x.floor(), q.y.floor());
        (c >= 0.0 && r >= 0.0 && (c as usize) < self.width && (r as usize) < self.height)
            .then(|| r as usize * self.width + c as usize)
    }
}

/// Computes the viewshed of an eye at `observer` over the whole scene.
pub fn viewshed(
    engine: &Engine,
    scene: &Scene,
    observer: Vec3,
    params: &ViewshedParams,
) -> Result<Viewshed> {
    if !crate::trace::in_range(observer) {
        return Err(Error::InvalidInput(format!(
            "observer {observer} is not finite or beyond {:e} m; pass X,Y,Z in metres",
            crate::limits::MAX_COORDINATE
        )));
    }
    if !(params.cell.is_finite() && params.cell > 0.0) {
        return Err(Error::InvalidInput(format!(
            "cell size {} must be a positive number of metres",
            params.cell
        )));
    }
    let start = Instant::now();
    let Some((lo, hi)) = scene.bounds() else {
        return Err(Error::InvalidInput(
            "the scene is empty: there is no ground to see".into(),
        ));
    };
    let origin = Vec2::new(lo.x, lo.z);
    let [width, height] = crate::limits::grid_cells(
        [hi.x - lo.x, hi.z - lo.z],
        params.cell,
        "cell",
        crate::limits::MAX_GRID_CELLS,
    )?;
    let (width, height) = (width as usize, height as usize);
    let cells = width * height;
    let centre = |i: usize| crate::ground::cell_centre(origin, params.cell, width, i);
    let ground = crate::ground::ground_grid(
        engine,
        scene,
        origin,
        params.cell,
        width,
        height,
        params.max_slope,
    )?;
    let mut state = vec![CellState::NotGround; cells];
    let mut segments = Vec::new();
    let mut owners = Vec::new();
    for (i, &y) in ground.iter().enumerate() {
        if y.is_nan() {
            continue;
        }
        let c = centre(i);
        let g = Vec3::new(c.x, y, c.y);
        if Vec2::new(g.x - observer.x, g.z - observer.z).length() > params.max_range {
            state[i] = CellState::OutOfRange;
            continue;
        }
        segments.push(Segment::new(observer, g + Vec3::Y * params.lift));
        owners.push(i);
    }
    let blocked = engine.occluded(scene, &segments, Mask::SIGHT)?;
    for (k, &i) in owners.iter().enumerate() {
        state[i] = if blocked.get(k) {
            CellState::Hidden
        } else {
            CellState::Visible
        };
    }
    Ok(Viewshed {
        observer,
        origin,
        cell: params.cell,
        width,
        height,
        ground,
        state,
        rays: cells + segments.len(),
        elapsed: start.elapsed(),
    })
}
