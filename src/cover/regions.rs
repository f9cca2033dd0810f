//! Exact cover regions: Morgan's shadow volumes ("Algorithmic approaches to finding cover",
//! IV.D) counted in a GPU stencil, turned into regions an agent fits in.
//!
//! Each threat is a point light. Every triangle matching the mask that faces **away** from it
//! (a rear face, a caster) throws a shadow volume: the triangle and its extrusion away from the
//! threat. A point is in a threat's shadow when the segment from the threat to it crosses a
//! caster, which is exactly when it lies inside a caster's volume. Rear faces only, as Morgan
//! says, so the inside of a closed solid is never cover (the segment into it crosses only the
//! front face); a single-sided wall casts a shadow only to the side its back faces.
//!
//! - **Classification** ([`shadow_bits`]): per cell of a top-down grid, sample points above the
//!   ground (a foot sample [`FOOT`] above the ground and three more up to each posture's head,
//!   [`posture_samples`]) are in cover when
//!   every threat's shadow holds every one of them. On the GPU one render pass per (threat,
//!   sample height; postures share the foot's) over a depth-stencil target of one pixel per cell: the depth is primed with the
//!   sample points, the casters' volumes are counted depth-fail on an orthographic view from
//!   above (exact at each cell's centre at any threat distance: no depth map, no texel
//!   footprint), and where the stencil stays 0 the sample is lit; one compute dispatch reduces
//!   the passes to four bits a cell, the only data read back (one submission, one wait). The
//!   count is kept modulo 256 (an 8-bit stencil): a segment crossing exactly 256 casters reads
//!   as lit. Cells under a volume face steeper than the depth can resolve are flagged by the
//!   pass and ray-cast on the CPU ([`CoverRegions::rechecked`]); outside [`GPU_BAND_CELLS`] of
//!   a cell around a shadow's edge the answer equals the ray casts'. CPU twin
//!   ([`shadow_bits_ray_cast`]): exact ray casts from each threat to the same sample points
//!   against the same casters.
//! - **Regions** ([`cover_regions`]): per posture the cover cells are eroded by the agent's
//!   radius (a cell stays when every cell whose square the body's disc could reach is cover:
//!   every cell centre within the radius plus half a cell's diagonal, so the body fits
//!   however many small shadows make up the region), split into 4-connected regions (those at
//!   most two cells across everywhere are left out: [`CoverRegions::thin`]), and each
//!   is outlined as a polygon with holes on the ground (cell edges, world x and z), with its
//!   area, the part reachable from the centre on the ground grid, the point deepest inside it
//!   with its margin, and the route to that point that keeps to cover (a metre outside cover
//!   costs `1 + exposure_weight` metres). Routes run over the grid's ground: 8 neighbours,
//!   steps of at most `max_step`, no corner cut past a cell without ground; the body's fit
//!   along a route outside its region is not checked (the dense search's kept walk surface,
//!   [`crate::cover::dense::Surface`], does that, at a cost a single call would not repay).
//!
//! The GPU path uses only core WebGPU features; an engine without a GPU answers with the CPU
//! twin.

mod build;
mod casters;
mod gpu;
mod pipelines;
pub mod shape;

/// WGSL layout mirrors, for the layout tests; not part of the API.
#[doc(hidden)]
pub use gpu::{Frame, Reduce, Tile};
pub use shape::Polygon;

use super::field::{field_ground, CoverFieldParams};
use crate::cover::{Agent, Posture};
use crate::scene::{Mask, Scene};
use crate::{Engine, Error, Result};
use glam::{Vec2, Vec3};
use std::time::{Duration, Instant};

/// Height of the lowest sample point above the ground, for every posture (metres): a body
/// seen under a car or through a gap at the foot of a wall is not hidden.
pub const FOOT: f32 = 0.1;

/// Heights of a posture's sample points above [`FOOT`], as fractions of the rest of its head
/// height: three on the vertical through the cell's centre, the last at the head (the body's
/// width is the erosion).
pub const SAMPLE_FRACTIONS: [f32; 3] = [1.0 / 3.0, 2.0 / 3.0, 1.0];

/// Most threats one call takes.
pub const MAX_THREATS: usize = 1024;

/// The band, in cells, around a shadow's boundary where the GPU pass may answer otherwise
/// than the exact ray casts: the rasterizer snaps the volumes' vertices to its sub-pixel grid,
/// which Vulkan guarantees to be at least 4 bits (lavapipe and NVIDIA use 8). A sample point
/// farther than this (plus the backends' agreement band, ARCHITECTURE.md) from every shadow
/// boundary gets the ray casts' answer at any threat distance.
pub const GPU_BAND_CELLS: f32 = 1.0 / 16.0;

/// Cover region settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RegionParams {
    /// Cell side in metres (default 0.25).
    pub cell: f32,
    /// Side of the square area, centred on the query point, in metres (default 40).
    pub size: f32,
    /// Steepest walkable ground in radians (default 45 degrees).
    pub max_slope: f32,
    /// Postures to classify, `[prone, crouching, standing]` (default all).
    pub postures: [bool; 3],
    /// Highest step between neighbouring cells a route climbs, in metres (default 0.5).
    pub max_step: f32,
    /// Extra cost of a metre walked outside cover (default 20: a metre in the open costs as
    /// much as 21 in cover).
    pub exposure_weight: f64,
}

impl RegionParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> RegionParams {
        RegionParams {
            cell: 0.25,
            size: 40.0,
            max_slope: std::f32::consts::FRAC_PI_4,
            postures: [true; 3],
            max_step: 0.5,
            exposure_weight: 20.0,
        }
    }

    fn field(&self) -> CoverFieldParams {
        CoverFieldParams {
            cell: self.cell,
            size: self.size,
            max_slope: self.max_slope,
            ..CoverFieldParams::standard()
        }
    }
}

impl Default for RegionParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// Sample points on a square grid: cell `(c, r)` (index `r * side + c`) has its corner at
/// `origin + (c, r) * cell` (x, z) and its points on the vertical through its centre, above
/// `heights[i]` (NaN: no ground, nothing sampled).
#[derive(Clone, Debug, PartialEq)]
pub struct SampleGrid {
    pub origin: Vec2,
    pub cell: f32,
    pub side: usize,
    pub heights: Vec<f32>,
}

impl SampleGrid {
    /// Centre of cell `i` (x, z).
    #[must_use]
    pub fn centre(&self, i: usize) -> Vec2 {
        crate::ground::cell_centre(self.origin, self.cell, self.side, i)
    }

    /// Index of the cell holding (x, z) of `p`, if inside.
    #[must_use]
    pub fn index_at(&self, p: Vec3) -> Option<usize> {
        let q = (Vec2::new(p.x, p.z) - self.origin) / self.cell;
        let (c, r) = (q.x.floor(), q.y.floor());
        let n = self.side as f32;
        (c >= 0.0 && r >= 0.0 && c < n && r < n).then(|| r as usize * self.side + c as usize)
    }
}

/// One sample height: `lift` metres above the ground, standing for `posture`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub lift: f32,
    pub posture: Posture,
}

/// The samples of `agent`'s postures marked in `postures`: [`FOOT`], then [`SAMPLE_FRACTIONS`]
/// of the way from it to each head (a head below the foot samples at the head alone).
#[must_use]
pub fn posture_samples(agent: &Agent, postures: [bool; 3]) -> Vec<Sample> {
    Posture::ALL
        .into_iter()
        .filter(|&p| postures[p as usize])
        .flat_map(|posture| {
            let head = agent.head_height(posture);
            let foot = FOOT.min(head);
            let above = SAMPLE_FRACTIONS.map(|f| foot + (head - foot) * f);
            [foot, above[0], above[1], above[2]].map(|lift| Sample { lift, posture })
        })
        .collect()
}

/// Per cell of `grid`, bit `p` set when every sample of posture `p` is in the shadow of every
/// threat (casters: triangles matching `mask` facing away from the threat); 0 without ground.
/// On the GPU when `engine` has one, else [`shadow_bits_ray_cast`].
/// With no threats every sampled posture is in cover.
pub fn shadow_bits(
    engine: &Engine,
    scene: &Scene,
    grid: &SampleGrid,
    samples: &[Sample],
    threats: &[Vec3],
    mask: Mask,
) -> Result<Vec<u8>> {
    Ok(classify(engine, scene, grid, samples, threats, mask, false)?.bits)
}

/// What [`classify`] found.
struct Classified {
    bits: Vec<u8>,
    /// Cells the GPU pass left to exact ray casts (0 on the CPU).
    rechecked: usize,
    gpu: bool,
}

/// The cover bits, on the GPU when the engine has one and `cpu` is false.
fn classify(
    engine: &Engine,
    scene: &Scene,
    grid: &SampleGrid,
    samples: &[Sample],
    threats: &[Vec3],
    mask: Mask,
    cpu: bool,
) -> Result<Classified> {
    let job = casters::Job::new(scene, grid, samples, threats, mask)?;
    let tracer = match engine.gpu() {
        Some(t) if !cpu => t,
        _ => {
            let bits = casters::shadow_bits_cpu(scene, &job);
            return Ok(Classified {
                bits,
                rechecked: 0,
                gpu: false,
            });
        }
    };
    let mut bits = gpu::shadow_bits(tracer, scene, &job)?;
    // Cells under a steep volume face (bit 3): the pass's height there is not to be trusted.
    let flagged: Vec<usize> = (0..bits.len()).filter(|&i| bits[i] & 8 != 0).collect();
    for (&i, b) in flagged
        .iter()
        .zip(casters::shadow_bits_of(scene, &job, &flagged))
    {
        bits[i] = b;
    }
    Ok(Classified {
        bits,
        rechecked: flagged.len(),
        gpu: true,
    })
}

/// The CPU twin of [`shadow_bits`]: a segment from each threat to each sample point, traced
/// exactly against that threat's casters.
pub fn shadow_bits_ray_cast(
    scene: &Scene,
    grid: &SampleGrid,
    samples: &[Sample],
    threats: &[Vec3],
    mask: Mask,
) -> Result<Vec<u8>> {
    let job = casters::Job::new(scene, grid, samples, threats, mask)?;
    Ok(casters::shadow_bits_cpu(scene, &job))
}

/// A connected region of cover for one posture, eroded by the agent's radius.
#[derive(Clone, Debug)]
pub struct Region {
    pub posture: Posture,
    /// The outline on the ground (world x, z), outer ring and holes.
    pub polygon: Polygon,
    pub cells: usize,
    /// Square metres (cells times cell area).
    pub area: f64,
    /// Cells the route search reached from the centre, and their area.
    pub reachable_cells: usize,
    pub reachable_area: f64,
    /// The cell deepest inside the region, on the ground, and its clearance to the region's
    /// edge in metres.
    pub point: Vec3,
    pub margin: f32,
    /// The way from the centre to `point` over cell centres on the ground, preferring cover;
    /// `None` when the point is not reachable.
    pub route: Option<Route>,
}

/// A route over the ground grid.
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    pub points: Vec<Vec3>,
    /// Length in metres, and the part of it outside cover for the region's posture.
    pub length: f64,
    pub exposed: f64,
}

/// The answer of [`cover_regions`].
#[derive(Clone, Debug)]
pub struct CoverRegions {
    pub center: Vec3,
    /// The grid and its ground (NaN where there is none).
    pub grid: SampleGrid,
    /// Per cell, bit `p`: posture `p`'s samples are in every threat's shadow (before erosion).
    pub cover: Vec<u8>,
    /// Every region of every posture asked, postures in order, regions by their lowest cell.
    pub regions: Vec<Region>,
    /// Regions left out as thinner than the grid can vouch for: none of their cells lies more
    /// than half a cell from their edge. Use a finer `cell` to see them.
    pub thin: usize,
    /// Whether the classification ran on the GPU.
    pub gpu: bool,
    /// Cells the GPU pass flagged (under a volume face steeper than its depth can resolve)
    /// and left to exact ray casts on the CPU; 0 on the CPU twin.
    pub rechecked: usize,
    pub elapsed: Duration,
}

/// Cover regions around `center` for `agent` (its radius and head heights; its position is
/// ignored: routes start at `center`) hidden from every one of `threats` behind triangles
/// matching `mask`, on a `params.size` square grid of `params.cell` cells.
pub fn cover_regions(
    engine: &Engine,
    scene: &Scene,
    center: Vec3,
    agent: &Agent,
    threats: &[Vec3],
    mask: Mask,
    params: &RegionParams,
) -> Result<CoverRegions> {
    regions_with(engine, scene, center, agent, threats, mask, params, false)
}

/// [`cover_regions`] classified by the CPU twin whatever the engine.
pub fn cover_regions_ray_cast(
    engine: &Engine,
    scene: &Scene,
    center: Vec3,
    agent: &Agent,
    threats: &[Vec3],
    mask: Mask,
    params: &RegionParams,
) -> Result<CoverRegions> {
    regions_with(engine, scene, center, agent, threats, mask, params, true)
}

#[allow(clippy::too_many_arguments)]
fn regions_with(
    engine: &Engine,
    scene: &Scene,
    center: Vec3,
    agent: &Agent,
    threats: &[Vec3],
    mask: Mask,
    params: &RegionParams,
    cpu: bool,
) -> Result<CoverRegions> {
    let start = Instant::now();
    validate(agent, params)?;
    let ground = field_ground(engine, scene, center, &params.field())?;
    let grid = SampleGrid {
        origin: ground.origin(),
        cell: ground.cell(),
        side: ground.side(),
        heights: ground.heights().to_vec(),
    };
    let samples = posture_samples(agent, params.postures);
    let Classified {
        bits: cover,
        rechecked,
        gpu: on_gpu,
    } = classify(engine, scene, &grid, &samples, threats, mask, cpu)?;
    let (regions, thin) = build::regions(&grid, &cover, center, agent, params);
    Ok(CoverRegions {
        center,
        grid,
        cover,
        regions,
        gpu: on_gpu,
        rechecked,
        thin,
        elapsed: start.elapsed(),
    })
}

fn validate(agent: &Agent, params: &RegionParams) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidInput(m));
    if !(agent.radius.is_finite() && agent.radius >= 0.0)
        || !agent
            .head_heights
            .iter()
            .all(|h| h.is_finite() && *h >= 0.0)
    {
        return bad(format!(
            "agent radius {} and head heights {:?} must be finite and >= 0, in metres",
            agent.radius, agent.head_heights
        ));
    }
    if !params.postures.contains(&true) {
        return bad("no posture asked for; set at least one of `postures`".into());
    }
    if !(params.max_step.is_finite() && params.max_step >= 0.0) {
        return bad(format!(
            "max_step {} must be a finite number of metres >= 0 (default 0.5)",
            params.max_step
        ));
    }
    if !(params.exposure_weight.is_finite() && params.exposure_weight >= 0.0) {
        return bad(format!(
            "exposure_weight {} must be finite and >= 0 (default 20)",
            params.exposure_weight
        ));
    }
    Ok(())
}
