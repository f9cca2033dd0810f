//! The dense cover search: the nearest spot, by walking distance around obstacles, where the
//! agent's whole body is hidden from every observer.
//!
//! Candidates are the cells of a world-aligned grid (`cell`, 0.25 m by default: the cover
//! field's grid) within `radius` of the agent. A Dijkstra search over the grid grows outward
//! from the agent by path length, and asks the engine only about the cells it reaches, in
//! batches (waves): every query's next band of path length goes to the engine together, so a
//! thousand agents cost the same few engine calls per wave as one.
//!
//! - **Ground** of a cell: a downward closest-hit ray from one step height above the cell it is
//!   entered from; walkable material, slope within `max_slope`, height change within
//!   `step_height`.
//! - **Clearance** ([`super::body::clearance_segments`]): the highest posture whose body fits.
//!   The agent moves crouching or standing, so a cell where only lying down fits can be the
//!   destination but is not walked through. A diagonal step needs both cells beside it.
//! - **Hidden**: the whole body ([`super::body`]) of a fitting posture is hidden from every
//!   observer under the query's mask. The prone body is tested first (its head centre, then its
//!   whole sample): no higher posture hides where lying down does not, so that is the test a
//!   cell must pass to be a candidate; crouching and standing are traced for candidates only.
//! - **Choice**: the nearest candidate by path length; among those within `posture_tie` metres
//!   more, the highest hidden posture. The chosen spot is then measured with the intervis
//!   humanoid ([`super::verify::intervis_exposure`]); any exposed pixel rejects it and the search
//!   goes on to the next candidate, up to `max_rejections` times.
//! - **Path**: the grid path, string-pulled (a corner is dropped when the straight line between
//!   its neighbours crosses only cells the search has found walkable), from the agent's feet.
//!
//! Backends give identical answers: every test goes through the engine's kernels (GPU or CPU),
//! which agree bit for bit. Ground, clearance and visibility are cached per cell for the whole
//! batch, so agents that share observers share the work.

mod local;
mod shared;

use super::body::BodyParams;
use super::field::CellCover;
use super::verify::{intervis_exposure, Candidate, Check, Rejection};
use super::{Agent, Posture};
use crate::scene::{Mask, Scene};
use crate::{Engine, Error, Result};
use glam::Vec3;
use local::Local;
use shared::{Shared, Wave};

/// Dense search settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DenseParams {
    /// Grid cell side (metres). Default 0.25 m, the cover field's.
    pub cell: f32,
    /// Cells farther than this from the agent (horizontally) are not searched. Default 20 m: the
    /// cover field's 40 m square.
    pub radius: f32,
    /// Highest step up or down between neighbouring cells (metres). Default 0.3 m.
    pub step_height: f32,
    /// Steepest standable slope (radians). Default 45 degrees.
    pub max_slope: f32,
    /// Among candidates at most this much farther (metres of path) than the nearest, the highest
    /// hidden posture wins (nearest first, posture second). Default 0.25 m: one cell.
    pub posture_tie: f32,
    /// Path length per wave: cells up to this much beyond the nearest open one are traced
    /// together. Default 1 m.
    pub band: f32,
    /// The body sample.
    pub body: BodyParams,
    /// Measure the chosen spot with the intervis humanoid. Default on.
    pub verify_intervis: bool,
    /// Intervis rejections before a query gives up. Default 32.
    pub max_rejections: usize,
}

impl DenseParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> DenseParams {
        DenseParams {
            cell: 0.25,
            radius: 20.0,
            step_height: 0.3,
            max_slope: std::f32::consts::FRAC_PI_4,
            posture_tie: 0.25,
            band: 1.0,
            body: BodyParams::standard(),
            verify_intervis: true,
            max_rejections: 32,
        }
    }
}

impl Default for DenseParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// Largest grid a query may search: `(2 * radius / cell)^2` cells.
pub const MAX_CELLS: f64 = crate::limits::MAX_GRID_CELLS as f64;
/// Largest number of queries in one call.
pub const MAX_QUERIES: usize = 1 << 20;

/// One agent's question.
#[derive(Clone, Debug)]
pub struct DenseQuery {
    pub agent: Agent,
    /// Observers' eyes.
    pub observers: Vec<Vec3>,
    /// `Mask::SIGHT` for concealment, `Mask::FIRE` for cover.
    pub mask: Mask,
}

/// The chosen spot.
#[derive(Clone, Debug, PartialEq)]
pub struct DenseChoice {
    /// Ground point at the cell's centre.
    pub position: Vec3,
    /// The highest posture whose whole body is hidden there (and fits).
    pub posture: Posture,
    /// From the agent's feet to the spot, string-pulled.
    pub path: Vec<Vec3>,
    pub path_length: f32,
    /// Per observer: the share of the body sample seen (0 for every observer: hidden).
    pub exposure: Vec<f32>,
    /// Per observer: exposed pixels of the intervis humanoid, when measured.
    pub intervis_exposed: Option<Vec<u32>>,
    /// The last check that passed: `Intervis` when measured, else `Body`.
    pub decided_by: Check,
}

/// A cell the search reached, for pictures and checks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Explored {
    pub position: Vec3,
    /// Path length from the agent.
    pub path_length: f32,
    /// `Exposed`, or `Hidden(p)` (p the highest hidden posture where it was worked out,
    /// else prone).
    pub cover: CellCover,
}

/// The answer to one [`DenseQuery`].
#[derive(Clone, Debug, PartialEq)]
pub struct DenseAnswer {
    pub choice: Option<DenseChoice>,
    pub rejected: Vec<Rejection>,
    pub explored: Vec<Explored>,
    /// Rays this query asked for (work shared with other queries counts once, for the first).
    pub rays: usize,
}

/// Queries whose search state is held at once (each holds a square of cells around its agent);
/// a larger batch is answered in chunks of this many, sharing the caches.
const CHUNK: usize = 64;

/// Answers many dense cover queries; see the module docs. Queries with the same observers, mask
/// and body share visibility work, and all share ground and clearance.
pub fn find_cover(
    engine: &Engine,
    scene: &Scene,
    queries: &[DenseQuery],
    params: &DenseParams,
) -> Result<Vec<DenseAnswer>> {
    validate(queries, params)?;
    let mut shared = Shared::new(queries);
    let mut rays = vec![0usize; queries.len()];
    let mut answers = Vec::with_capacity(queries.len());
    for first in (0..queries.len()).step_by(CHUNK) {
        let chunk = first..(first + CHUNK).min(queries.len());
        let mut states: Vec<Local> = chunk
            .map(|qi| Local::new(qi, &queries[qi], params, &shared))
            .collect();
        loop {
            let mut wave = Wave::default();
            for s in &mut states {
                s.advance(params, &shared, &mut wave);
            }
            if wave.is_empty() {
                break;
            }
            wave.trace(engine, scene, queries, params, &mut shared, &mut rays)?;
            for s in &mut states {
                s.sync(&shared);
            }
            verify(
                engine,
                scene,
                queries,
                params,
                &mut states,
                &wave.intervis,
                first,
            )?;
        }
        answers.extend(states.into_iter().map(|mut s| {
            s.answer.rays = rays[s.qi];
            s.answer
        }));
    }
    Ok(answers)
}

/// Measures the choices awaiting the intervis humanoid, in one call.
fn verify(
    engine: &Engine,
    scene: &Scene,
    queries: &[DenseQuery],
    params: &DenseParams,
    states: &mut [Local],
    pending: &[usize],
    first: usize,
) -> Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let spots: Vec<(usize, Vec3, Posture)> = pending
        .iter()
        .filter_map(|&qi| {
            states[qi - first]
                .pending_choice()
                .map(|(at, p)| (qi, at, p))
        })
        .collect();
    let cands: Vec<Candidate> = spots
        .iter()
        .map(|&(qi, ground, posture)| Candidate {
            agent: &queries[qi].agent,
            ground,
            posture,
            observers: &queries[qi].observers,
            mask: queries[qi].mask,
        })
        .collect();
    let pixels = intervis_exposure(engine, scene, &cands)?;
    for ((qi, ..), px) in spots.into_iter().zip(pixels) {
        states[qi - first].verified(px, params);
    }
    Ok(())
}

fn validate(queries: &[DenseQuery], p: &DenseParams) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidInput(m));
    if queries.len() > MAX_QUERIES {
        return bad(format!(
            "{} cover queries in one call, over the limit of {MAX_QUERIES}; split the batch",
            queries.len()
        ));
    }
    let positive = |x: f32| x.is_finite() && x > 0.0;
    if !(positive(p.cell) && positive(p.radius) && positive(p.band)) {
        return bad(format!(
            "cell {}, radius {} and band {} must be positive metres (defaults 0.25, 20, 1)",
            p.cell, p.radius, p.band
        ));
    }
    let cells = (2.0 * f64::from(p.radius) / f64::from(p.cell)).powi(2);
    if cells > MAX_CELLS {
        return bad(format!(
            "a {} m radius of {} m cells is {cells:.0} cells, over the limit of {MAX_CELLS}; \
             use larger cells or a smaller radius",
            p.radius, p.cell
        ));
    }
    if !(p.step_height.is_finite() && p.step_height >= 0.0)
        || !(p.posture_tie.is_finite() && p.posture_tie >= 0.0)
        || p.max_slope.is_nan()
    {
        return bad(
            "step_height and posture_tie must be finite metres >= 0, max_slope radians".into(),
        );
    }
    for (i, q) in queries.iter().enumerate() {
        q.agent.validate(i)?;
        if let Some(o) = q.observers.iter().find(|o| !o.is_finite()) {
            return bad(format!("cover query {i}: observer {o} is not finite"));
        }
        p.body.validate(&q.agent)?;
    }
    Ok(())
}
