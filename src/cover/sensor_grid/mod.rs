//! The sensor grid (Darken, Morgan and Paull, "Algorithmic Details" steps 1-7; Morgan V.D), batched: every
//! agent's ground, visibility and accessibility rays go to the engine together, a handful of
//! engine calls per batch however many agents there are.
//!
//! Choices where the papers leave room, each documented on the item it concerns:
//! - every posture is tested (not only up to the first visible one), so a spot behind a car is
//!   "crouching" even though the observer sees under the car at prone height;
//! - movement is blocked by fire-blocking triangles (walls, glass), not by foliage;
//! - ground rays start a step height above the agent's feet so flat ground is found;
//! - the grid turns with the agent ([`facing`]): its rings are laid from straight ahead, and
//!   an agent under fire faces the observers. Morgan's CoverBot (thesis, appendix code,
//!   `CreateSensorGrid`) lays them from the bot's own rotation; laid along the world's axes
//!   instead, the same scene turned by 10 degrees put its sensors elsewhere around an obstacle
//!   and found other cover, or none;
//! - ground inside a closed solid is no place for the body ([`SensorFate::Obstructed`]): where
//!   the ray straight up from the first ground ray's start meets the back of a face, eight
//!   horizontal probes ride in the visibility step and settle it as
//!   [`crate::ground::outside_solids`] does. The paper leaves such a sensor to accessibility
//!   (step 6: "inside a solid object"), but here a ray from inside a rock sunk into the
//!   terrain finds the terrain, the body "fits" (nothing is met from inside), every posture is
//!   hidden, and inside a solid lower than the swept cylinder's lowest segment (a 0.4 m
//!   plinth) the path in is clear too: the grid chose a spot inside such a plinth.
//!
//! Limits of the published method, kept as published:
//! - 51 sensors 36 degrees apart, rings up to 3 m apart: a shadow narrower than the gaps
//!   between them holds no sensor. Behind a round rock the sensors that do fall in its
//!   template shadow may stand on its fringe, where the three head-height points of the
//!   template are hidden but the feet show under the rock's rounded base; with `verify` the
//!   body check turns each of them down ([`CoverAnswer::rejected`], by
//!   [`Check::Body`]) and, with none left, the answer has no choice, though the dense search
//!   ([`crate::cover::dense`]) finds cover there.

mod amortized;
mod checks;
mod firing;
mod search;

pub use amortized::AmortizedCover;
pub use firing::{firing_positions, FiringPosition};

use super::verify::{Check, Rejection};
use super::{Agent, Posture};
use crate::scene::{Mask, Scene};
use crate::trace::Segment;
use crate::{Engine, Error, Result};
use checks::Checks;
use glam::{Vec2, Vec3};
use search::{Job, Search};

/// Sensor grid settings. [`SensorGridParams::standard`] reproduces the paper.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SensorGridParams {
    /// Rings of sensors around the agent (a sensor at the agent's own spot comes on top).
    pub rings: u32,
    /// Sensors per ring.
    pub per_ring: u32,
    /// Radial gap from the agent to the first ring, growing linearly to `outer_gap` between the
    /// last two rings.
    pub inner_gap: f32,
    pub outer_gap: f32,
    /// Rotate every other ring by half a step (Morgan V.D.3.b).
    pub stagger: bool,
    /// Check the chosen sensor's whole body ([`crate::cover::body`]) and then the intervis
    /// humanoid before answering; a candidate that fails gives way to the next nearest.
    /// Off in [`SensorGridParams::standard`] (Darken, Morgan and Paull's method as published), on in
    /// [`SensorGridParams::verified`].
    pub verify: bool,
    /// Steepest standable slope (radians).
    pub max_slope: f32,
    /// Ground rays start this far above the agent's feet (a step it can climb).
    pub step_height: f32,
    /// Heights of the swept-cylinder segments, as fractions of the agent's standing height
    /// (knee, waist, head).
    pub sweep_heights: [f32; 3],
    /// Incremental processing (Darken, Morgan and Paull, "Optimizations"): rings are processed nearest first
    /// and the first ring holding a hidden, straight-accessible sensor ends the search.
    pub incremental: bool,
}

impl SensorGridParams {
    /// Darken, Morgan and Paull 2005: 5 staggered rings of 10 plus the agent's spot (51
    /// sensors), rings 1.5 m apart near the agent widening to 3 m at the outside (radii 1.5,
    /// 3.4, 5.6, 8.3 and 11.3 m).
    #[must_use]
    pub const fn standard() -> SensorGridParams {
        SensorGridParams {
            rings: 5,
            per_ring: 10,
            inner_gap: 1.5,
            outer_gap: 3.0,
            stagger: true,
            verify: false,
            max_slope: std::f32::consts::FRAC_PI_4,
            step_height: 0.3,
            sweep_heights: [0.25, 0.55, 0.9],
            incremental: false,
        }
    }

    /// The seed's grid, with every choice checked: the whole body hidden from every observer,
    /// then no exposed intervis pixel.
    #[must_use]
    pub const fn verified() -> SensorGridParams {
        SensorGridParams {
            verify: true,
            ..Self::standard()
        }
    }

    /// Horizontal offsets of the sensors from the agent, agent's own spot first, ring by ring.
    #[must_use]
    pub fn layout(&self) -> Vec<(u32, Vec3)> {
        let mut out = vec![(0, Vec3::ZERO)];
        let mut radius = 0.0;
        for ring in 0..self.rings {
            let f = if self.rings > 1 {
                ring as f32 / (self.rings - 1) as f32
            } else {
                0.0
            };
            radius += self.inner_gap + (self.outer_gap - self.inner_gap) * f;
            let step = std::f32::consts::TAU / self.per_ring as f32;
            let offset = if self.stagger && ring % 2 == 1 {
                step / 2.0
            } else {
                0.0
            };
            for k in 0..self.per_ring {
                let a = offset + k as f32 * step;
                out.push((ring + 1, Vec3::new(a.cos(), 0.0, a.sin()) * radius));
            }
        }
        out
    }
}

impl Default for SensorGridParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// One agent's question: where can it hide from these observers?
#[derive(Clone, Debug)]
pub struct CoverQuery {
    pub agent: Agent,
    /// Observers' eye positions.
    pub observers: Vec<Vec3>,
    /// `Mask::SIGHT` for concealment, `Mask::FIRE` for cover.
    pub mask: Mask,
    /// Extra path points (a level's waypoints): a sensor may be reached through one of them as
    /// well as through another sensor (Darken, Morgan and Paull, "Integration with Waypoints").
    pub waypoints: Vec<Vec3>,
}

/// Why a sensor was kept or dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SensorFate {
    /// No surface inside the acceptable region (a cliff edge, a hole, or too far up).
    NoGround,
    /// Steeper than `max_slope`, or a surface agents cannot stand on.
    NotStandable,
    /// The body does not fit there in any posture: inside a solid object, under a low
    /// overhang, or against a wall (see [`crate::cover::body`], clearance).
    Obstructed,
    /// Some observer sees every posture.
    Visible,
    /// Hidden, but neither straight nor two-segment paths reach it.
    Unreachable,
    /// Hidden and reachable; the highest hidden posture.
    Hidden(Posture),
    /// Incremental processing stopped before this sensor's ring.
    Skipped,
}

/// One sensor's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct SensorReport {
    /// Ring (0 = the agent's own spot).
    pub ring: u32,
    /// Ground point, or the agent-height point above the sensor where no ground was found.
    pub position: Vec3,
    pub fate: SensorFate,
    /// Per posture (prone, crouching, standing): hidden from every observer.
    pub hidden: [bool; 3],
    /// The path to it (agent, optional via point, sensor) when one was found.
    pub path: Option<Vec<Vec3>>,
}

/// The chosen spot: shortest path among hidden, reachable sensors.
#[derive(Clone, Debug, PartialEq)]
pub struct CoverChoice {
    pub sensor: usize,
    pub position: Vec3,
    /// Posture to take on arrival: the highest hidden one.
    pub posture: Posture,
    /// Agent position, optional via point, the spot.
    pub path: Vec<Vec3>,
    pub path_length: f32,
    /// With `verify`: per observer, the share of the body sample seen (all 0).
    pub exposure: Option<Vec<f32>>,
    /// With `verify`: per observer, exposed pixels of the intervis humanoid (all 0).
    pub intervis_exposed: Option<Vec<u32>>,
    /// The last check the choice passed: `Template` (the published three points), or `Intervis` with `verify`.
    pub decided_by: Check,
}

/// The answer to one [`CoverQuery`].
#[derive(Clone, Debug, PartialEq)]
pub struct CoverAnswer {
    pub sensors: Vec<SensorReport>,
    pub choice: Option<CoverChoice>,
    /// Candidates the verification turned down, nearest first.
    pub rejected: Vec<Rejection>,
    /// Rays traced for this query.
    pub rays: usize,
}

/// Answers many cover queries with three batched engine calls however many queries there
/// are (ground, the ray up from it and waypoint hops; visibility, clearance, the probes for
/// solids and straight access; two-segment access), each one submission and one wait on the GPU. With `verify` the GPU's candidates
/// ride in the last call (`sensor_grid/checks.rs`) while their body samples stay within a bound (some
/// 1,800 agents with 4 observers on `dungeon.obj`; more cost a wait per verification round);
/// the CPU checks them lazily after it. Backends agree by the contract in ARCHITECTURE.md.
pub fn find_cover(
    engine: &Engine,
    scene: &Scene,
    queries: &[CoverQuery],
    params: &SensorGridParams,
) -> Result<Vec<CoverAnswer>> {
    validate(queries, params)?;
    let mut search = Search::new(queries.to_vec(), *params);
    let mut checks = Checks::default();
    let speculate = params.verify && engine.gpu().is_some();
    while !search.done() {
        let jobs: Vec<Job> = search.plan().into_iter().map(|(j, _)| j).collect();
        let asks = match speculate && search.at_last_step() {
            true => checks::speculative(&search),
            false => Vec::new(),
        };
        let out = checks.round(engine, scene, queries, &jobs, &asks, &asks)?;
        search.apply(&out.into_iter().map(Some).collect::<Vec<_>>(), scene);
    }
    let mut answers = assemble(&search);
    if params.verify {
        checks.verify(engine, scene, queries, &mut answers)?;
    }
    Ok(answers)
}

fn validate(queries: &[CoverQuery], params: &SensorGridParams) -> Result<()> {
    if params.per_ring == 0 || !(params.inner_gap > 0.0 && params.outer_gap > 0.0) {
        return Err(Error::InvalidInput(
            "sensor grid needs per_ring >= 1 and positive ring gaps".into(),
        ));
    }
    for (i, q) in queries.iter().enumerate() {
        q.agent.validate(i)?;
        if let Some(o) = q
            .observers
            .iter()
            .chain(&q.waypoints)
            .find(|o| !o.is_finite())
        {
            return Err(Error::InvalidInput(format!(
                "cover query {i}: observer or waypoint {o} is not finite"
            )));
        }
    }
    Ok(())
}

/// The swept upright cylinder from `a` to `b` (feet positions): segments at knee, waist and
/// head height, on the axis and one radius to each side.
fn sweep(
    agent: &Agent,
    params: &SensorGridParams,
    a: Vec3,
    b: Vec3,
) -> impl Iterator<Item = Segment> {
    let along = Vec3::new(b.x - a.x, 0.0, b.z - a.z);
    let side = if along.length_squared() > 1e-12 {
        Vec3::new(-along.z, 0.0, along.x).normalize() * agent.radius
    } else {
        Vec3::ZERO
    };
    let heights = params.sweep_heights.map(|f| f * agent.height());
    heights.into_iter().flat_map(move |h| {
        [Vec3::ZERO, side, -side].map(|o| Segment::new(a + Vec3::Y * h + o, b + Vec3::Y * h + o))
    })
}

/// A path length on a 1 mm grid, for comparisons: paths within the same millimetre count as
/// equally short (the lower sensor index, or the via found first, wins), so the last bits of
/// a length, which a GPU may round otherwise, do not decide between spots.
fn length_key(len: f32) -> i64 {
    (f64::from(len) * 1000.0).round() as i64
}

/// Metres along `path` (0 for a path of one point; a fold, not `sum`, which starts at -0).
fn path_length(path: &[Vec3]) -> f32 {
    path.windows(2).fold(0.0, |l, w| l + w[0].distance(w[1]))
}

/// The direction (x, z, unit) the grid's +x turns to for query `q`: from the agent toward its
/// observers (the mean of their horizontal offsets), as an agent under fire faces its enemy;
/// +x itself when they stand straight above or below it (or there are none).
#[must_use]
pub fn facing(q: &CoverQuery) -> Vec2 {
    let to = q.observers.iter().fold(Vec2::ZERO, |t, o| {
        t + Vec2::new(o.x - q.agent.position.x, o.z - q.agent.position.z)
    });
    to.try_normalize().unwrap_or(Vec2::X)
}

/// A layout offset (+x straight ahead) turned so that +x points along `facing` (x, z).
#[must_use]
pub fn turn(offset: Vec3, facing: Vec2) -> Vec3 {
    let (c, s) = (facing.x, facing.y);
    Vec3::new(
        offset.x * c - offset.z * s,
        offset.y,
        offset.x * s + offset.z * c,
    )
}

/// Step 7: fates per sensor and the shortest hidden, reachable one.
fn assemble(search: &Search) -> Vec<CoverAnswer> {
    let mut answers: Vec<CoverAnswer> = search
        .queries
        .iter()
        .zip(&search.rays)
        .enumerate()
        .map(|(qi, (q, &rays))| CoverAnswer {
            sensors: search
                .layout
                .iter()
                .enumerate()
                .map(|(i, &(ring, _))| SensorReport {
                    ring,
                    position: q.agent.position + search.offset(qi, i),
                    fate: SensorFate::Skipped,
                    hidden: [false; 3],
                    path: None,
                })
                .collect(),
            choice: None,
            rejected: Vec::new(),
            rays,
        })
        .collect();
    for s in &search.sensors {
        let report = &mut answers[s.query].sensors[s.index];
        report.hidden = s.hidden;
        report.fate = match (
            s.ground,
            s.standable,
            s.hidden.iter().rposition(|&h| h),
            &s.path,
        ) {
            (None, ..) => SensorFate::NoGround,
            (_, false, ..) => SensorFate::NotStandable,
            _ if s.fit.is_none() => SensorFate::Obstructed,
            (_, _, None, _) => SensorFate::Visible,
            (_, _, Some(_), None) => SensorFate::Unreachable,
            (_, _, Some(p), Some(_)) => SensorFate::Hidden(Posture::ALL[p]),
        };
        if let Some(g) = s.ground {
            report.position = g;
        }
        report.path.clone_from(&s.path);
    }
    for a in &mut answers {
        let best = a
            .sensors
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match (s.fate, &s.path) {
                (SensorFate::Hidden(p), Some(path)) => {
                    Some((path_length(path), i, p, path.clone()))
                }
                _ => None,
            })
            .min_by_key(|x| (length_key(x.0), x.1));
        a.choice = best.map(|(len, i, posture, path)| CoverChoice {
            sensor: i,
            position: a.sensors[i].position,
            posture,
            path,
            path_length: len,
            exposure: None,
            intervis_exposed: None,
            decided_by: Check::Template,
        });
    }
    answers
}

/// A few representative viewpoints for a large or vaguely known group of observers (Darken, Morgan and Paull,
/// "Large Numbers of Observers"): the two members farthest apart (the edges of the group) and
/// the member nearest the group's centre.
#[must_use]
pub fn representative_viewpoints(observers: &[Vec3]) -> Vec<Vec3> {
    if observers.len() <= 3 {
        return observers.to_vec();
    }
    let centre = observers.iter().copied().sum::<Vec3>() / observers.len() as f32;
    let a = *observers
        .iter()
        .max_by(|p, q| {
            p.distance_squared(centre)
                .total_cmp(&q.distance_squared(centre))
        })
        .unwrap();
    let b = *observers
        .iter()
        .max_by(|p, q| p.distance_squared(a).total_cmp(&q.distance_squared(a)))
        .unwrap();
    let mid = *observers
        .iter()
        .min_by(|p, q| {
            p.distance_squared(centre)
                .total_cmp(&q.distance_squared(centre))
        })
        .unwrap();
    let mut out = vec![a, b];
    if mid != a && mid != b {
        out.push(mid);
    }
    out
}
