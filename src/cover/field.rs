//! The depth-map cover field (Morgan, IV.E "Depth Mapping"), done the way a GPU wants
//! it: render each threat's depth map, then classify every cell of a top-down grid around a
//! point by the highest posture hidden from every threat.
//!
//! The thesis scans the depth map for places an agent's template fits behind the nearest
//! surface. Here the question is asked the other way round, per ground cell: for each posture,
//! are the posture's three template points ([`template_points`]) all farther from each observer
//! than the nearest surface that observer's depth map holds in their direction? That answers
//! for every cell of the area at once, which a sensor grid of one agent cannot.
//!
//! - GPU ([`cover_field`] on a GPU engine): per observer a depth view of the triangles matching
//!   the mask (R32Float straight-line distances, shaders/depth_map.wgsl), then one compute pass
//!   (shaders/cover_field.wgsl) projects every template point into it and compares. The view
//!   ([`DepthView`]) is one square frustum aimed at the field when the eye is outside the box
//!   the template points lie in ([`FieldBounds`]) and a view of at most 90 degrees covers it,
//!   so a distant threat sees the field at the full `face_resolution`; otherwise a cube of six
//!   90-degree faces. A point is hidden when all four texels around its projection (the
//!   bilinear neighbourhood) hold a surface nearer than its distance minus the slack, `bias`
//!   plus one texel's footprint at its distance ([`DepthView::footprint_per_metre`]). Only one
//!   `u32` per ground cell comes back.
//! - CPU twin ([`cover_field_ray_cast`]): exact ray casting of the same template points with
//!   [`Engine::occluded`]. Both reduce the same way: a bit per posture, AND-ed over observers
//!   (identity: all hidden), then the highest posture whose bit is set.
//!
//! The two differ only near shadow edges, within a couple of texel footprints of a silhouette
//! or within the slack of a surface, at any threat distance (`tests/cover_field.rs` measures
//! this edge band by ray casting displaced template points, from 1 m to 100 km).
//!
//! Cover versus concealment is the mask (see [`crate::cover`]): `Mask::SIGHT` counts foliage,
//! `Mask::FIRE` counts bullet-proof glass. The depth maps draw both faces of every triangle
//! (the thesis suggests rear faces only, which would drop single-sided walls and ground quads
//! that ray casting counts).

mod gpu;
mod ground;
mod pipelines;
mod resources;
mod view;

pub use gpu::CoverFieldPass;
/// WGSL layout mirrors and view geometry, for the layout tests; not part of the API.
#[doc(hidden)]
pub use gpu::FieldParams;
pub use ground::{field_ground, FieldGround};
#[doc(hidden)]
pub use view::{DepthView, Face, FieldBounds};

use crate::cover::{template_points, Agent, Posture};
use crate::ground::cell_centre;
use crate::scene::{Mask, Scene};
use crate::trace::Segment;
use crate::{Engine, Error, Result};
use glam::{Vec2, Vec3};
use std::time::{Duration, Instant};

/// Cover field settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CoverFieldParams {
    /// Cell side in metres. Default 0.25 m: finer than an agent's 0.6 m width, as the viewshed.
    pub cell: f32,
    /// Side of the square grid, centred on the query point, in metres. Default 40 m (a 160 x 160
    /// grid at the default cell): the reach of a short dash to cover.
    pub size: f32,
    /// Side of a depth view's face in texels (GPU path only). Default 1024: a cube face's
    /// texel spans about 4 cm at 20 m, well under a cell; a single view aimed at the default 40 m
    /// field spans 4 to 6 cm of it at any distance.
    pub face_resolution: u32,
    /// Depth comparison slack in metres (GPU path only): a template point is hidden when the
    /// depth map's nearest surface is closer than the point's distance minus `bias` minus one
    /// texel's footprint at that distance. Default 0.05 m: far below the 0.35 m a head sits
    /// above the ground, above the rounding of f32 distances and positions with a threat as far
    /// as 100 km.
    pub bias: f32,
    /// Steepest walkable surface (radians from horizontal). Default 45 degrees, as the viewshed.
    pub max_slope: f32,
}

impl CoverFieldParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> CoverFieldParams {
        CoverFieldParams {
            cell: 0.25,
            size: 40.0,
            face_resolution: 1024,
            bias: 0.05,
            max_slope: std::f32::consts::FRAC_PI_4,
        }
    }
}

impl Default for CoverFieldParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// What a cell offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CellCover {
    /// No walkable ground under the cell (nothing below, a steep slope, a car roof, a canopy).
    NotGround,
    /// Ground where at least one observer sees some template point of every posture.
    Exposed,
    /// The highest posture hidden from all observers (`Hidden(Prone)`: only lying down hides).
    Hidden(Posture),
}

impl CellCover {
    /// A ground cell's class from its posture bits (bit `p as usize` set: posture `p` hidden from
    /// every observer): the highest posture whose bit is set, or `Exposed`.
    #[must_use]
    pub fn from_bits(bits: u32) -> CellCover {
        Posture::ALL
            .iter()
            .rev()
            .find(|&&p| bits >> p as u32 & 1 == 1)
            .map_or(CellCover::Exposed, |&p| CellCover::Hidden(p))
    }
}

/// Posture bits of a cell no observer has seen yet: the identity of the AND over observers.
pub const ALL_HIDDEN: u32 = 0b111;

/// Largest grid [`cover_field`] accepts.
pub const MAX_CELLS: usize = crate::limits::MAX_GRID_CELLS as usize;

/// A top-down grid around a point; row `r`, column `c` is the cell whose corner is
/// `origin + (c, r) * cell` (x, z), stored at `r * width + c`.
#[derive(Clone, Debug)]
pub struct CoverField {
    /// The query point the grid is centred on.
    pub center: Vec3,
    /// x, z of cell (0, 0)'s corner.
    pub origin: Vec2,
    pub cell: f32,
    pub width: usize,
    pub height: usize,
    /// Ground height per cell (NaN where there is none).
    pub ground: Vec<f32>,
    pub cells: Vec<CellCover>,
    pub elapsed: Duration,
}

impl CoverField {
    /// Index of the cell containing world point `p` (x, z), if inside the grid.
    #[must_use]
    pub fn index_at(&self, p: Vec3) -> Option<usize> {
        let q = (Vec2::new(p.x, p.z) - self.origin) / self.cell;
        let (c, r) = (q.x.floor(), q.y.floor());
        (c >= 0.0 && r >= 0.0 && (c as usize) < self.width && (r as usize) < self.height)
            .then(|| r as usize * self.width + c as usize)
    }

    /// The class of the cell containing `p` (x, z), if inside the grid.
    #[must_use]
    pub fn at(&self, p: Vec3) -> Option<CellCover> {
        self.index_at(p).map(|i| self.cells[i])
    }

    /// Number of cells of class `c`.
    #[must_use]
    pub fn count(&self, c: CellCover) -> usize {
        self.cells.iter().filter(|&&x| x == c).count()
    }

    /// Centre of cell `i` on the ground (y is NaN where there is no ground).
    #[must_use]
    pub fn cell_center(&self, i: usize) -> Vec3 {
        let c = cell_centre(self.origin, self.cell, self.width, i);
        Vec3::new(c.x, self.ground[i], c.y)
    }

    /// The box the template points of `agent` on this field's ground lie in (what the GPU path
    /// aims single views at); `None` without ground.
    #[must_use]
    pub fn bounds(&self, agent: &Agent) -> Option<FieldBounds> {
        let ground: Vec<Vec3> = (0..self.cells.len())
            .map(|i| self.cell_center(i))
            .filter(|p| !p.y.is_nan())
            .collect();
        FieldBounds::around(&ground, agent)
    }

    /// Cells classified per second.
    #[must_use]
    pub fn cells_per_second(&self) -> f64 {
        self.cells.len() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// The cover field around `center`: every cell of a `params.size` square classified by the
/// highest posture of `agent` (its radius and head heights; its position is ignored) hidden from
/// all `observers` (eyes, metres) behind triangles matching `mask`.
///
/// On the GPU when the engine has one (depth views plus a classify pass), else the CPU twin
/// [`cover_field_ray_cast`]. With no observers nothing can see the agent: every ground cell is
/// `Hidden(Standing)`. The GPU path is [`field_ground`], then a [`CoverFieldPass`] prepared,
/// encoded, submitted and read; a renderer can run those steps itself to encode the field into
/// its own command encoder.
pub fn cover_field(
    engine: &Engine,
    scene: &Scene,
    center: Vec3,
    agent: &Agent,
    observers: &[Vec3],
    mask: Mask,
    params: &CoverFieldParams,
) -> Result<CoverField> {
    let Some(tracer) = engine.gpu() else {
        return cover_field_ray_cast(engine, scene, center, agent, observers, mask, params);
    };
    let start = Instant::now();
    validate(agent, observers, params)?;
    let ground = field_ground(engine, scene, center, params)?;
    let pass = CoverFieldPass::prepare(tracer, scene, &ground, agent, observers, mask, params)?;
    pass.run(tracer)?;
    let mut field = pass.read(tracer)?;
    field.elapsed = start.elapsed();
    Ok(field)
}

/// The CPU twin of [`cover_field`]: exact ray casting ([`Engine::occluded`] on the segment from
/// each observer to each template point) through any engine. Same grid, ground and reduction.
pub fn cover_field_ray_cast(
    engine: &Engine,
    scene: &Scene,
    center: Vec3,
    agent: &Agent,
    observers: &[Vec3],
    mask: Mask,
    params: &CoverFieldParams,
) -> Result<CoverField> {
    let start = Instant::now();
    validate(agent, observers, params)?;
    let ground = field_ground(engine, scene, center, params)?;
    let points = ground.points();
    let hidden = if observers.is_empty() || points.is_empty() {
        vec![ALL_HIDDEN; points.len()]
    } else {
        ray_cast_bits(engine, scene, points, agent, observers, mask)?
    };
    Ok(ground.field(&hidden, start.elapsed()))
}

/// Checks the observers, the agent and the classification settings (the grid's are checked
/// by [`field_ground`]).
fn validate(agent: &Agent, observers: &[Vec3], params: &CoverFieldParams) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidInput(m));
    if let Some((i, o)) = observers.iter().enumerate().find(|(_, o)| !o.is_finite()) {
        return bad(format!(
            "observer {i} at {o} is not finite; pass each eye as X,Y,Z in metres"
        ));
    }
    let finite_non_negative = |x: f32| x.is_finite() && x >= 0.0;
    if !finite_non_negative(agent.radius) || !agent.head_heights.iter().all(|&h| h.is_finite()) {
        return bad(format!(
            "agent radius {} and head heights {:?} must be finite (radius >= 0), in metres",
            agent.radius, agent.head_heights
        ));
    }
    if params.face_resolution == 0 {
        return bad("face_resolution must be at least 1 texel (default 1024)".into());
    }
    if !finite_non_negative(params.bias) {
        return bad(format!(
            "depth bias {} must be a finite number of metres >= 0 (default 0.05)",
            params.bias
        ));
    }
    Ok(())
}

/// Segments per occlusion batch of the ray-cast twin (bounds its memory on huge grids).
const RAY_CAST_BATCH: usize = 1 << 22;

/// Posture bits per ground point by exact ray casting: bit `p` is set when, for every observer,
/// all three template points of posture `p` are occluded.
fn ray_cast_bits(
    engine: &Engine,
    scene: &Scene,
    points: &[Vec3],
    agent: &Agent,
    observers: &[Vec3],
    mask: Mask,
) -> Result<Vec<u32>> {
    let per_point = observers.len() * 9; // observers x postures x template points
    let mut out = Vec::with_capacity(points.len());
    for batch in points.chunks((RAY_CAST_BATCH / per_point).max(1)) {
        let mut segments = Vec::with_capacity(batch.len() * per_point);
        for &g in batch {
            for &eye in observers {
                for p in Posture::ALL {
                    for t in template_points(agent, g, p, eye) {
                        segments.push(Segment::new(eye, t));
                    }
                }
            }
        }
        let blocked = engine.occluded(scene, &segments, mask)?;
        for k in 0..batch.len() {
            let mut bits = ALL_HIDDEN;
            for o in 0..observers.len() {
                for p in 0..3 {
                    let s = (k * observers.len() + o) * 9 + p * 3;
                    if !(blocked.get(s) && blocked.get(s + 1) && blocked.get(s + 2)) {
                        bits &= !(1 << p);
                    }
                }
            }
            out.push(bits);
        }
    }
    Ok(out)
}
