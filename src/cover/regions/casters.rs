//! The casters of each threat (triangles matching the mask that face away from it and can
//! shadow the sampled area) and the CPU twin's exact ray casts against them.

use super::{Sample, SampleGrid, MAX_THREATS};
use crate::bvh::{Bvh, GpuTriangle};
use crate::scene::{Mask, Scene};
use crate::trace::Segment;
use crate::{Error, Result};
use glam::{DVec3, Vec3};
use rayon::prelude::*;

/// The top bit of a caster id: the triangle is in the movable tier.
pub(super) const MOVABLE: u32 = 1 << 31;

/// Most tiles (threats times samples) one call draws.
const MAX_TILES: usize = 1 << 16;

/// Most caster ids one call may hold (threats times the triangles matching the mask, before
/// culling): 512 MiB of ids.
const MAX_CASTER_IDS: u64 = 1 << 27;

/// Segments per occlusion batch of the CPU twin (bounds its memory on huge grids).
const BATCH: usize = 1 << 22;

/// A checked classification request and each threat's casters.
pub(super) struct Job<'a> {
    pub grid: &'a SampleGrid,
    pub samples: &'a [Sample],
    /// The distinct sample heights, in order of first use, each with the bits of the postures
    /// it stands for: one GPU pass each per threat.
    pub lifts: Vec<(f32, u32)>,
    pub threats: &'a [Vec3],
    pub mask: Mask,
    /// Per threat, caster ids: the index among its tier's triangles matching the mask (the
    /// order the GPU keeps them in), [`MOVABLE`] set for the movable tier.
    pub casters: Vec<Vec<u32>>,
    /// Per tier, the triangles matching the mask.
    pub masked: [u64; 2],
    /// Lowest ground and highest sample point (y); `None` when no cell has ground.
    pub span: Option<(f32, f32)>,
}

impl<'a> Job<'a> {
    /// Checks the request and finds every threat's casters.
    pub fn new(
        scene: &Scene,
        grid: &'a SampleGrid,
        samples: &'a [Sample],
        threats: &'a [Vec3],
        mask: Mask,
    ) -> Result<Job<'a>> {
        validate(grid, samples, threats)?;
        let masked = scene.tiers().map(|t| {
            let hit = t.triangles.iter().filter(|x| x.flags & mask.bits() != 0);
            hit.count() as u64
        });
        bound_casters(masked, threats.len())?;
        let max_lift = samples.iter().map(|s| s.lift).fold(0.0, f32::max);
        let (lo, hi) = grid
            .heights
            .iter()
            .filter(|h| !h.is_nan())
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &h| {
                (a.min(h), b.max(h))
            });
        let span = (lo <= hi).then_some((lo, hi + max_lift));
        let casters = match span {
            Some((y0, y1)) => {
                let extent = grid.cell * grid.side as f32;
                let lo = DVec3::new(grid.origin.x.into(), y0.into(), grid.origin.y.into());
                let hi = lo + DVec3::new(extent.into(), f64::from(y1 - y0), extent.into());
                let area = Area::new(lo, hi);
                threats
                    .par_iter()
                    .map(|&t| casters_of(scene, mask, t.as_dvec3(), &area))
                    .collect()
            }
            None => vec![Vec::new(); threats.len()],
        };
        let mut lifts: Vec<(f32, u32)> = Vec::new();
        for sample in samples {
            let bit = 1 << sample.posture as u32;
            match lifts
                .iter_mut()
                .find(|(l, _)| l.to_bits() == sample.lift.to_bits())
            {
                Some((_, bits)) => *bits |= bit,
                None => lifts.push((sample.lift, bit)),
            }
        }
        Ok(Job {
            grid,
            samples,
            lifts,
            masked,
            threats,
            mask,
            casters,
            span,
        })
    }

    /// Bits of the postures some sample stands for.
    pub fn asked(&self) -> u8 {
        self.samples.iter().fold(0, |b, s| b | 1 << s.posture as u8)
    }
}

/// An error before any caster list is built when `threats` times the scene's triangles that
/// match the mask (`masked`, per tier) could exceed [`MAX_CASTER_IDS`].
fn bound_casters(masked: [u64; 2], threats: usize) -> Result<()> {
    let triangles = masked[0] + masked[1];
    if threats as u64 * triangles > MAX_CASTER_IDS {
        return Err(Error::TooLarge {
            what: format!("{threats} threats x {triangles} triangles of casters"),
            requested: threats as u64 * triangles,
            limit: MAX_CASTER_IDS,
            fix: "split the threats over several calls".into(),
        });
    }
    Ok(())
}

fn validate(grid: &SampleGrid, samples: &[Sample], threats: &[Vec3]) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidInput(m));
    let cells = grid.side.checked_mul(grid.side);
    if grid.side == 0 || cells != Some(grid.heights.len()) {
        return bad(format!(
            "a sample grid of side {} needs side x side heights, got {}",
            grid.side,
            grid.heights.len()
        ));
    }
    if grid.heights.len() > super::super::field::MAX_CELLS {
        return bad(format!(
            "{} cells is over the limit of {}; use larger cells or a smaller area",
            grid.heights.len(),
            super::super::field::MAX_CELLS
        ));
    }
    if !(grid.cell.is_finite() && grid.cell > 0.0) || !grid.origin.is_finite() {
        return bad(format!(
            "grid origin {} and cell {} must be finite (cell > 0), in metres",
            grid.origin, grid.cell
        ));
    }
    if let Some(h) = grid.heights.iter().find(|h| h.is_infinite()) {
        return bad(format!(
            "ground height {h} is infinite; use NaN for no ground"
        ));
    }
    if samples.is_empty()
        || samples
            .iter()
            .any(|s| !(s.lift.is_finite() && s.lift >= 0.0))
    {
        return bad("give at least one sample, each lift finite and >= 0 metres".into());
    }
    if threats.len() > MAX_THREATS || threats.len() * samples.len() > MAX_TILES {
        return bad(format!(
            "{} threats x {} samples is over the limits ({MAX_THREATS} threats, \
             {MAX_TILES} tiles); split the threats over several calls",
            threats.len(),
            samples.len()
        ));
    }
    if let Some((i, t)) = threats.iter().enumerate().find(|(_, t)| !t.is_finite()) {
        return bad(format!(
            "threat {i} at {t} is not finite; pass X,Y,Z in metres"
        ));
    }
    Ok(())
}

/// The box the sample points lie in, as a sphere (centre, radius).
struct Area {
    centre: DVec3,
    radius: f64,
}

impl Area {
    fn new(lo: DVec3, hi: DVec3) -> Area {
        Area {
            centre: (lo + hi) / 2.0,
            radius: (hi - lo).length() / 2.0,
        }
    }

    /// Whether a sphere can meet a segment from `light` to a point of the area: the sphere
    /// against the cone from `light` around the area's sphere, cut off past it, or against
    /// that sphere itself when `light` is inside it. Conservative.
    fn reachable(&self, light: DVec3, centre: DVec3, radius: f64) -> bool {
        let axis = self.centre - light;
        let dist = axis.length();
        if dist <= self.radius {
            return (centre - self.centre).length() <= self.radius + radius;
        }
        let axis = axis / dist;
        let w = centre - light;
        let along = w.dot(axis);
        if along < -radius || along > dist + self.radius + radius {
            return false;
        }
        let perp = (w - along * axis).length();
        let sin = self.radius / dist;
        let cos = (1.0 - sin * sin).max(0.0).sqrt();
        perp * cos - along * sin <= radius
    }
}

/// Whether `tri` faces away from `light` (its normal, by its winding, points away), in f64.
fn rear_facing(tri: &GpuTriangle, light: DVec3) -> bool {
    let [a, b, c] = tri.vertices().map(Vec3::as_dvec3);
    (b - a).cross(c - a).dot(a - light) > 0.0
}

/// The casters of a threat at `light`: rear-facing triangles matching `mask` that can shadow
/// `area`, as ids.
fn casters_of(scene: &Scene, mask: Mask, light: DVec3, area: &Area) -> Vec<u32> {
    let mut ids = Vec::new();
    for (t, tier) in scene.tiers().into_iter().enumerate() {
        let tag = if t == 0 { 0 } else { MOVABLE };
        let masked = tier.triangles.iter().filter(|x| x.flags & mask.bits() != 0);
        for (k, tri) in masked.enumerate() {
            if !rear_facing(tri, light) {
                continue;
            }
            let [a, b, c] = tri.vertices().map(Vec3::as_dvec3);
            let centre = (a + b + c) / 3.0;
            let radius = [a, b, c]
                .map(|v| (v - centre).length())
                .into_iter()
                .fold(0.0, f64::max);
            if area.reachable(light, centre, radius) {
                ids.push(k as u32 | tag);
            }
        }
    }
    ids
}

/// Each tier's triangles matching `mask`, in order (the ids index these).
fn masked(scene: &Scene, mask: Mask) -> [Vec<GpuTriangle>; 2] {
    scene.tiers().map(|tier| {
        tier.triangles
            .iter()
            .filter(|x| x.flags & mask.bits() != 0)
            .copied()
            .collect()
    })
}

/// The CPU twin: per cell, the postures whose every sample point no threat's segment reaches
/// without crossing one of its casters.
pub(super) fn shadow_bits_cpu(scene: &Scene, job: &Job) -> Vec<u8> {
    let grid = job.grid;
    let ground: Vec<usize> = (0..grid.heights.len())
        .filter(|&i| !grid.heights[i].is_nan())
        .collect();
    let mut bits = vec![0u8; grid.heights.len()];
    for (&i, b) in ground.iter().zip(shadow_bits_of(scene, job, &ground)) {
        bits[i] = b;
    }
    bits
}

/// [`shadow_bits_cpu`] for the ground cells `cells` alone, in their order.
pub(super) fn shadow_bits_of(scene: &Scene, job: &Job, cells: &[usize]) -> Vec<u8> {
    let grid = job.grid;
    let mut exposed = vec![0u8; cells.len()];
    let tiers = masked(scene, job.mask);
    let per_cell = job.lifts.len();
    for (&light, ids) in job.threats.iter().zip(&job.casters) {
        let tris: Vec<GpuTriangle> = ids
            .iter()
            .map(|&id| tiers[usize::from(id & MOVABLE != 0)][(id & !MOVABLE) as usize])
            .collect();
        let tier = Bvh::build(&tris).into_tier(tris);
        let chunk = (BATCH / per_cell).max(1);
        for (at, part) in cells.chunks(chunk).enumerate() {
            let segments: Vec<Segment> = part
                .iter()
                .flat_map(|&i| {
                    let c = grid.centre(i);
                    let h = grid.heights[i];
                    job.lifts
                        .iter()
                        .map(move |&(lift, _)| Segment::new(light, Vec3::new(c.x, h + lift, c.y)))
                })
                .collect();
            let hit = crate::trace::cpu::occluded(&[&tier], &segments, u32::MAX);
            for k in 0..part.len() {
                for (j, &(_, bits)) in job.lifts.iter().enumerate() {
                    if !hit.get(k * per_cell + j) {
                        exposed[at * chunk + k] |= bits as u8;
                    }
                }
            }
        }
    }
    let asked = job.asked();
    exposed.iter().map(|e| asked & !e).collect()
}
