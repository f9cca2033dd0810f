//! The sensor grid (seed 000, "Algorithmic Details" steps 1-7; seed 001 V.D), batched: every
//! agent's ground, visibility and accessibility rays go to the engine together, a handful of
//! engine calls per batch however many agents there are.
//!
//! Choices where the papers leave room, each documented on the item it concerns:
//! - every posture is tested (not only up to the first visible one), so a spot behind a car is
//!   "crouching" even though the observer sees under the car at prone height;
//! - movement is blocked by fire-blocking triangles (walls, glass), not by foliage;
//! - ground rays start a step height above the agent's feet so flat ground is found.

use super::{template_points, Agent, Posture};
use crate::scene::{Mask, MaterialFlags, Scene};
use crate::trace::{Ray, Segment};
use crate::{Engine, Error, Result};
use glam::Vec3;

/// Sensor grid settings. [`SensorGridParams::darken2005`] reproduces the paper.
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
    /// Rotate every other ring by half a step (seed 001 V.D.3.b).
    pub stagger: bool,
    /// Steepest standable slope (radians).
    pub max_slope: f32,
    /// Ground rays start this far above the agent's feet (a step it can climb).
    pub step_height: f32,
    /// Heights of the swept-cylinder segments, as fractions of the agent's standing height
    /// (knee, waist, head).
    pub sweep_heights: [f32; 3],
    /// Incremental processing (seed 000, "Optimizations"): rings are processed nearest first
    /// and the first ring holding a hidden, straight-accessible sensor ends the search.
    pub incremental: bool,
}

impl SensorGridParams {
    /// Darken, Morgan and Paull 2005: 5 staggered rings of 10 plus the agent's spot (51
    /// sensors), rings 1.5 m apart near the agent widening to 3 m at the outside (radii 1.5,
    /// 3.4, 5.6, 8.3 and 11.3 m).
    #[must_use]
    pub const fn darken2005() -> SensorGridParams {
        SensorGridParams {
            rings: 5,
            per_ring: 10,
            inner_gap: 1.5,
            outer_gap: 3.0,
            stagger: true,
            max_slope: std::f32::consts::FRAC_PI_4,
            step_height: 0.3,
            sweep_heights: [0.25, 0.55, 0.9],
            incremental: false,
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
        Self::darken2005()
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
    /// well as through another sensor (seed 000, "Integration with Waypoints").
    pub waypoints: Vec<Vec3>,
}

/// Why a sensor was kept or dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SensorFate {
    /// No surface inside the acceptable region (a cliff edge, a hole, or too far up).
    NoGround,
    /// Steeper than `max_slope`, or a surface agents cannot stand on.
    NotStandable,
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
}

/// The answer to one [`CoverQuery`].
#[derive(Clone, Debug, PartialEq)]
pub struct CoverAnswer {
    pub sensors: Vec<SensorReport>,
    pub choice: Option<CoverChoice>,
    /// Rays traced for this query.
    pub rays: usize,
}

/// Work shared by the phases: every sensor of every query, flattened.
struct Sensor {
    query: usize,
    index: usize,
    ring: u32,
    ground: Option<Vec3>,
    standable: bool,
    hidden: [bool; 3],
    straight: bool,
    path: Option<Vec<Vec3>>,
}

/// Answers many cover queries with a few batched engine calls (ground, then visibility and
/// straight access, then two-segment access). Backends give identical answers.
pub fn find_cover(
    engine: &Engine,
    scene: &Scene,
    queries: &[CoverQuery],
    params: &SensorGridParams,
) -> Result<Vec<CoverAnswer>> {
    validate(queries, params)?;
    let layout = params.layout();
    let mut sensors: Vec<Sensor> = Vec::new();
    let mut rays = vec![0usize; queries.len()];
    let mut open: Vec<usize> = (0..queries.len()).collect();
    // Incremental processing runs one round per ring; otherwise one round covers every ring.
    let rounds: Vec<_> = if params.incremental {
        (0..=params.rings).map(|r| r..=r).collect()
    } else {
        vec![0..=params.rings]
    };
    for rings in rounds {
        let first = sensors.len();
        for &q in &open {
            for (index, &(r, _)) in layout
                .iter()
                .enumerate()
                .filter(|(_, (r, _))| rings.contains(r))
            {
                sensors.push(Sensor {
                    query: q,
                    index,
                    ring: r,
                    ground: None,
                    standable: false,
                    hidden: [false; 3],
                    straight: false,
                    path: None,
                });
            }
        }
        let batch = &mut sensors[first..];
        find_ground(engine, scene, queries, &layout, params, batch, &mut rays)?;
        test_visibility_and_access(engine, scene, queries, params, batch, &mut rays)?;
        if params.incremental {
            open.retain(|&q| {
                !batch
                    .iter()
                    .any(|s| s.query == q && s.straight && s.hidden.iter().any(|&h| h))
            });
            if open.is_empty() {
                break;
            }
        }
    }
    two_segment_access(engine, scene, queries, params, &mut sensors, &mut rays)?;
    Ok(assemble(queries, &layout, sensors, rays))
}

fn validate(queries: &[CoverQuery], params: &SensorGridParams) -> Result<()> {
    if params.per_ring == 0 || !(params.inner_gap > 0.0 && params.outer_gap > 0.0) {
        return Err(Error::InvalidInput(
            "sensor grid needs per_ring >= 1 and positive ring gaps".into(),
        ));
    }
    for (i, q) in queries.iter().enumerate() {
        let a = &q.agent;
        let finite = a.position.is_finite()
            && a.radius.is_finite()
            && a.head_heights.iter().all(|h| h.is_finite());
        if !finite
            || a.radius < 0.0
            || !(a.head_heights[0] > 0.0
                && a.head_heights[0] <= a.head_heights[1]
                && a.head_heights[1] <= a.head_heights[2])
        {
            return Err(Error::InvalidInput(format!(
                "cover query {i}: the agent needs finite coordinates, a radius >= 0 and head heights 0 < prone <= crouching <= standing"
            )));
        }
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

/// Steps 2-3: two downward traces per sensor inside the acceptable region (45-degree cones
/// from the agent's feet, the lower one widened to a drop of the agent's height), first from the
/// agent's level down (so the agent prefers going downhill and is not put on roofs), then from
/// the upper cone down to the agent's level.
fn find_ground(
    engine: &Engine,
    scene: &Scene,
    queries: &[CoverQuery],
    layout: &[(u32, Vec3)],
    params: &SensorGridParams,
    sensors: &mut [Sensor],
    rays: &mut [usize],
) -> Result<()> {
    let mut down = Vec::with_capacity(sensors.len() * 2);
    for s in sensors.iter() {
        let a = &queries[s.query].agent;
        let offset = layout[s.index].1;
        let d = offset.length();
        let top = a.position + offset + Vec3::Y * params.step_height;
        let low = a.position.y - d.max(a.height());
        let high = a.position.y + d.max(params.step_height);
        down.push(Ray::new(top, Vec3::NEG_Y, top.y - low));
        let above = Vec3::new(top.x, high, top.z);
        down.push(Ray::new(above, Vec3::NEG_Y, (high - top.y).max(0.0)));
        rays[s.query] += 2;
    }
    let solid = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
    let hits = engine.closest_hit(scene, &down, solid)?;
    let min_normal_y = params.max_slope.cos();
    for (k, s) in sensors.iter_mut().enumerate() {
        let (ray, hit) = match (hits[2 * k], hits[2 * k + 1]) {
            (Some(h), _) => (down[2 * k], h),
            (None, Some(h)) => (down[2 * k + 1], h),
            (None, None) => continue,
        };
        s.ground = Some(ray.origin() + ray.dir() * hit.t);
        let walkable = scene.materials()[hit.material as usize]
            .flags
            .contains(MaterialFlags::WALKABLE);
        s.standable = walkable && hit.normal.y >= min_normal_y;
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

/// Steps 4-5: three points per posture against every observer, and the straight sweep from the
/// agent, for every standable sensor, in two occlusion batches.
fn test_visibility_and_access(
    engine: &Engine,
    scene: &Scene,
    queries: &[CoverQuery],
    params: &SensorGridParams,
    sensors: &mut [Sensor],
    rays: &mut [usize],
) -> Result<()> {
    // Visibility: one batch per distinct mask (usually one). No observer: hidden everywhere.
    let mut masks: Vec<Mask> = Vec::new();
    for q in queries {
        if !masks.contains(&q.mask) {
            masks.push(q.mask);
        }
    }
    for s in sensors.iter_mut() {
        s.hidden = [s.ground.is_some() && s.standable; 3];
    }
    for mask in masks {
        let mut segs = Vec::new();
        let mut owner = Vec::new();
        for (k, s) in sensors.iter().enumerate() {
            let q = &queries[s.query];
            let (Some(g), true, true) = (s.ground, s.standable, q.mask == mask) else {
                continue;
            };
            for p in Posture::ALL {
                for &o in &q.observers {
                    for point in template_points(&q.agent, g, p, o) {
                        segs.push(Segment::new(o, point));
                        owner.push((k, p as usize));
                    }
                }
            }
            rays[s.query] += 9 * q.observers.len();
        }
        let blocked = engine.occluded(scene, &segs, mask)?;
        for (i, &(k, p)) in owner.iter().enumerate() {
            if !blocked.get(i) {
                sensors[k].hidden[p] = false;
            }
        }
    }
    // Straight access, only for sensors hidden in some posture.
    let mut segs = Vec::new();
    let mut owner = Vec::new();
    for (k, s) in sensors.iter().enumerate() {
        let (Some(g), true) = (s.ground, s.hidden.iter().any(|&h| h)) else {
            continue;
        };
        let q = &queries[s.query];
        if s.ring == 0 {
            continue;
        }
        for seg in sweep(&q.agent, params, q.agent.position, g) {
            segs.push(seg);
            owner.push(k);
        }
        rays[s.query] += 9;
    }
    let blocked = engine.occluded(scene, &segs, Mask::FIRE)?;
    for s in sensors.iter_mut() {
        s.straight = s.ring == 0 && s.ground.is_some();
    }
    let mut clear = vec![true; sensors.len()];
    for (i, &k) in owner.iter().enumerate() {
        clear[k] &= !blocked.get(i);
    }
    for k in owner {
        sensors[k].straight = clear[k];
    }
    for s in sensors.iter_mut().filter(|s| s.straight) {
        let a = queries[s.query].agent.position;
        s.path = Some(if s.ring == 0 {
            vec![a]
        } else {
            vec![a, s.ground.unwrap()]
        });
    }
    Ok(())
}

/// Waypoint hops farther apart than this are not tried.
const MAX_WAYPOINT_HOP: f32 = 15.0;

/// Step 6, second half: a hidden sensor that is not straight-accessible may be reached in one
/// more segment from a straight-accessible sensor, or from a waypoint. Waypoints are reached
/// from the agent through other waypoints, and, as seed 000 suggests, those hops do not count
/// against the two-segment limit (that is how an agent gets out through a narrow doorway).
fn two_segment_access(
    engine: &Engine,
    scene: &Scene,
    queries: &[CoverQuery],
    params: &SensorGridParams,
    sensors: &mut [Sensor],
    rays: &mut [usize],
) -> Result<()> {
    // Sweeps agent -> waypoint and waypoint -> waypoint (within a hop), in one batch.
    let mut segs = Vec::new();
    let mut owner = Vec::new();
    for (qi, q) in queries.iter().enumerate() {
        let n = q.waypoints.len();
        for i in 0..n {
            let from_agent = std::iter::once((usize::MAX, q.agent.position));
            let from_waypoints = (0..i)
                .map(|j| (j, q.waypoints[j]))
                .filter(|(_, w)| w.distance(q.waypoints[i]) <= MAX_WAYPOINT_HOP);
            for (j, from) in from_agent.chain(from_waypoints) {
                for seg in sweep(&q.agent, params, from, q.waypoints[i]) {
                    segs.push(seg);
                    owner.push((qi, j, i));
                }
                rays[qi] += 9;
            }
        }
    }
    let blocked = engine.occluded(scene, &segs, Mask::FIRE)?;
    let mut clear: std::collections::BTreeMap<(usize, usize, usize), bool> = Default::default();
    for (k, &key) in owner.iter().enumerate() {
        *clear.entry(key).or_insert(true) &= !blocked.get(k);
    }
    // Via points per query with the path that reaches them: straight-accessible sensors and
    // waypoints reachable through the waypoint graph (Dijkstra from the agent).
    let mut vias: Vec<Vec<Vec<Vec3>>> = queries.iter().map(|_| Vec::new()).collect();
    for (qi, q) in queries.iter().enumerate() {
        let n = q.waypoints.len();
        let edge = |a: usize, b: usize| {
            clear
                .get(&(qi, a.min(b), a.max(b)))
                .copied()
                .unwrap_or(false)
        };
        let mut dist = vec![f32::INFINITY; n];
        let mut prev = vec![usize::MAX; n];
        let mut done = vec![false; n];
        for i in 0..n {
            if clear.get(&(qi, usize::MAX, i)).copied().unwrap_or(false) {
                dist[i] = q.agent.position.distance(q.waypoints[i]);
            }
        }
        while let Some(u) = (0..n)
            .filter(|&i| !done[i] && dist[i].is_finite())
            .min_by(|&a, &b| dist[a].total_cmp(&dist[b]))
        {
            done[u] = true;
            for v in (0..n).filter(|&v| !done[v] && v != u && edge(u, v)) {
                let d = dist[u] + q.waypoints[u].distance(q.waypoints[v]);
                if d < dist[v] {
                    dist[v] = d;
                    prev[v] = u;
                }
            }
        }
        for i in (0..n).filter(|&i| dist[i].is_finite()) {
            let mut path = vec![q.waypoints[i]];
            let mut u = i;
            while prev[u] != usize::MAX {
                u = prev[u];
                path.push(q.waypoints[u]);
            }
            path.push(q.agent.position);
            path.reverse();
            vias[qi].push(path);
        }
    }
    for s in sensors.iter().filter(|s| s.straight && s.ring > 0) {
        vias[s.query].push(vec![queries[s.query].agent.position, s.ground.unwrap()]);
    }
    // Last segment: via point -> hidden sensor that is not straight-accessible.
    let mut segs = Vec::new();
    let mut owner = Vec::new();
    for (k, s) in sensors.iter().enumerate() {
        let (Some(g), false, true) = (s.ground, s.straight, s.hidden.iter().any(|&h| h)) else {
            continue;
        };
        let q = &queries[s.query];
        for (vi, via) in vias[s.query].iter().enumerate() {
            for seg in sweep(&q.agent, params, *via.last().unwrap(), g) {
                segs.push(seg);
                owner.push((k, vi));
            }
            rays[s.query] += 9;
        }
    }
    let blocked = engine.occluded(scene, &segs, Mask::FIRE)?;
    let mut clear: std::collections::BTreeMap<(usize, usize), bool> = Default::default();
    for (i, &key) in owner.iter().enumerate() {
        *clear.entry(key).or_insert(true) &= !blocked.get(i);
    }
    for ((k, vi), ok) in clear {
        if !ok {
            continue;
        }
        let s = &mut sensors[k];
        let mut path = vias[s.query][vi].clone();
        path.push(s.ground.unwrap());
        if s.path
            .as_ref()
            .is_none_or(|p| path_length(&path) < path_length(p))
        {
            s.path = Some(path);
        }
    }
    Ok(())
}

fn path_length(path: &[Vec3]) -> f32 {
    path.windows(2).map(|w| w[0].distance(w[1])).sum()
}

/// Step 7: fates per sensor and the shortest hidden, reachable one.
fn assemble(
    queries: &[CoverQuery],
    layout: &[(u32, Vec3)],
    sensors: Vec<Sensor>,
    rays: Vec<usize>,
) -> Vec<CoverAnswer> {
    let mut answers: Vec<CoverAnswer> = queries
        .iter()
        .zip(rays)
        .map(|(q, rays)| CoverAnswer {
            sensors: layout
                .iter()
                .map(|&(ring, off)| SensorReport {
                    ring,
                    position: q.agent.position + off,
                    fate: SensorFate::Skipped,
                    hidden: [false; 3],
                    path: None,
                })
                .collect(),
            choice: None,
            rays,
        })
        .collect();
    for s in sensors {
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
            (_, _, None, _) => SensorFate::Visible,
            (_, _, Some(_), None) => SensorFate::Unreachable,
            (_, _, Some(p), Some(_)) => SensorFate::Hidden(Posture::ALL[p]),
        };
        if let Some(g) = s.ground {
            report.position = g;
        }
        report.path = s.path;
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
            .min_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        a.choice = best.map(|(len, i, posture, path)| CoverChoice {
            sensor: i,
            position: a.sensors[i].position,
            posture,
            path,
            path_length: len,
        });
    }
    answers
}

/// A few representative viewpoints for a large or vaguely known group of observers (seed 000,
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

/// Where to return fire from after taking cover (seed 000, "Improving Firing Positions").
#[derive(Clone, Debug, PartialEq)]
pub struct FiringPosition {
    pub position: Vec3,
    pub posture: Posture,
    /// The observer that becomes visible.
    pub observer: usize,
    /// Metres moved from the cover spot (0 for a posture change).
    pub step_back: f32,
}

/// Step-back search: how far, in what increments.
const STEP: f32 = 0.5;
const MAX_STEP_BACK: f32 = 10.0;

/// For each answered query with a choice: a posture change at the spot if a higher posture sees
/// an observer; otherwise the nearest point, stepping from the spot toward the nearest observer,
/// sideways around the cover, or back along the arrival path (0.5 m steps, up to 10 m, on
/// standable ground reachable straight from the spot), from which some posture's head sees the
/// observer, in the lowest such posture (least exposed). Three batched calls.
pub fn firing_positions(
    engine: &Engine,
    scene: &Scene,
    queries: &[CoverQuery],
    answers: &[CoverAnswer],
    params: &SensorGridParams,
) -> Result<Vec<Option<FiringPosition>>> {
    let mut out: Vec<Option<FiringPosition>> = vec![None; queries.len()];
    // (query, observer, distance stepped, ground ray)
    let mut candidates = Vec::new();
    for (qi, (q, a)) in queries.iter().zip(answers).enumerate() {
        let Some(c) = &a.choice else { continue };
        let hidden = a.sensors[c.sensor].hidden;
        if let Some(p) = (c.posture as usize + 1..3).find(|&p| !hidden[p]) {
            out[qi] = Some(FiringPosition {
                position: c.position,
                posture: Posture::ALL[p],
                observer: 0,
                step_back: 0.0,
            });
            continue;
        }
        let Some((oi, &o)) = q.observers.iter().enumerate().min_by(|x, y| {
            x.1.distance(c.position)
                .total_cmp(&y.1.distance(c.position))
        }) else {
            continue;
        };
        // Toward the observer, sideways around what hides the spot, and back along the path.
        let toward = Vec3::new(o.x - c.position.x, 0.0, o.z - c.position.z).normalize_or_zero();
        let back = c.path.first().map_or(Vec3::ZERO, |&a| {
            (a - c.position).with_y(0.0).normalize_or_zero()
        });
        for dir in [
            toward,
            Vec3::new(-toward.z, 0.0, toward.x),
            Vec3::new(toward.z, 0.0, -toward.x),
            back,
        ] {
            if dir == Vec3::ZERO {
                continue;
            }
            let mut d = STEP;
            while d <= MAX_STEP_BACK {
                let top = c.position + dir * d + Vec3::Y * (params.step_height + d);
                candidates.push((
                    qi,
                    oi,
                    d,
                    Ray::new(
                        top,
                        Vec3::NEG_Y,
                        2.0 * d + q.agent.height() + params.step_height,
                    ),
                ));
                d += STEP;
            }
        }
    }
    let down: Vec<Ray> = candidates.iter().map(|c| c.3).collect();
    let hits = engine.closest_hit(
        scene,
        &down,
        Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE),
    )?;
    let min_normal_y = params.max_slope.cos();
    let mut segs = Vec::new();
    let mut owner = Vec::new();
    for (k, (&(qi, oi, d, ray), hit)) in candidates.iter().zip(&hits).enumerate() {
        let Some(h) = hit else { continue };
        if h.normal.y < min_normal_y
            || !scene.materials()[h.material as usize]
                .flags
                .contains(MaterialFlags::WALKABLE)
        {
            continue;
        }
        let g = ray.origin() + ray.dir() * h.t;
        for p in Posture::ALL {
            segs.push(Segment::new(
                queries[qi].observers[oi],
                g + Vec3::Y * queries[qi].agent.head_height(p),
            ));
            owner.push((k, p, g, qi, oi, d));
        }
    }
    let blocked = engine.occluded(
        scene,
        &segs,
        queries.first().map_or(Mask::SIGHT, |q| q.mask),
    )?;
    // The step back must be walkable: the swept cylinder from the spot to the new point.
    let mut sweeps = Vec::new();
    let mut sweep_owner = Vec::new();
    for &(k, p, g, qi, _, _) in &owner {
        if p == Posture::Prone {
            let spot = answers[qi].choice.as_ref().unwrap().position;
            sweeps.extend(sweep(&queries[qi].agent, params, spot, g));
            sweep_owner.extend(std::iter::repeat_n(k, 9));
        }
    }
    let walls = engine.occluded(scene, &sweeps, Mask::FIRE)?;
    let mut walkable = vec![true; candidates.len()];
    for (i, &k) in sweep_owner.iter().enumerate() {
        walkable[k] &= !walls.get(i);
    }
    for (i, &(k, p, g, qi, oi, d)) in owner.iter().enumerate() {
        let better = out[qi]
            .as_ref()
            .is_none_or(|f| d < f.step_back || (d == f.step_back && p < f.posture));
        if !blocked.get(i) && walkable[k] && better {
            out[qi] = Some(FiringPosition {
                position: g,
                posture: p,
                observer: oi,
                step_back: d,
            });
        }
    }
    Ok(out)
}
