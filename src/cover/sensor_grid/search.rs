//! The sensor grid as stages that plan rays and apply their outcomes, so one driver can trace a
//! whole stage at once ([`super::find_cover`]) and another a few rays per tick
//! ([`super::AmortizedCover`]). An outcome not traced yet is `None` and read optimistically
//! (hidden, clear), except ground, which is unknown until traced.

use super::{sweep, CoverQuery, SensorGridParams};
use crate::cover::body::{clearance_segments, fitting_posture, BodyParams};
use crate::cover::verify::ByMask;
use crate::cover::{template_points, Posture};
use crate::intervis::measure::{measure_and_trace, IntervisPair, IntervisParams, Riders};
use crate::intervis::IntervisRecord;
use crate::scene::{Mask, MaterialFlags, Scene};
use crate::trace::{Hit, Ray, Segment};
use crate::{Engine, Result};
use glam::Vec3;
use std::collections::BTreeMap;

/// Waypoint hops farther apart than this are not tried.
const MAX_WAYPOINT_HOP: f32 = 15.0;

/// One ray a stage needs.
#[derive(Clone, Copy, Debug)]
pub enum Job {
    /// A closest-hit ray: the ground search's downward rays, and the probes that tell a sensor
    /// whose ground lies inside a closed solid.
    Ray(Ray),
    /// An occlusion test with a mask.
    Segment(Segment, Mask),
}

/// What a traced [`Job`] found.
#[derive(Clone, Copy, Debug)]
pub enum Outcome {
    Hit(Option<Hit>),
    Blocked(bool),
}

/// Traces jobs in one engine call (closest hits and every mask's occlusion batch in one
/// submission on the GPU).
pub fn run(engine: &Engine, scene: &Scene, jobs: &[Job]) -> Result<Vec<Outcome>> {
    Ok(run_with(engine, scene, jobs, &[], &[])?.0)
}

/// What [`run_with`] returns: the jobs' outcomes, the extra segments' occlusion bits and the
/// intervis calls' records.
pub type RunOut = (Vec<Outcome>, Vec<bool>, Vec<Vec<IntervisRecord>>);

/// [`run`] with more segments and intervis calls riding along, all in one engine call
/// ([`measure_and_trace`]: one submission and one wait on the GPU). Returns the jobs'
/// outcomes, the extra segments' occlusion bits and the calls' records.
pub fn run_with(
    engine: &Engine,
    scene: &Scene,
    jobs: &[Job],
    more: &[(Segment, Mask)],
    calls: &[(&[IntervisPair], IntervisParams)],
) -> Result<RunOut> {
    let mut out = vec![Outcome::Blocked(false); jobs.len()];
    let (mut rays, mut ray_at) = (Vec::new(), Vec::new());
    let (mut segs, mut seg_at) = (Vec::new(), Vec::new());
    for (i, j) in jobs.iter().enumerate() {
        match *j {
            Job::Ray(r) => {
                rays.push(r);
                ray_at.push(i);
            }
            Job::Segment(s, m) => {
                segs.push((s, m));
                seg_at.push(i);
            }
        }
    }
    segs.extend_from_slice(more);
    let split = ByMask::new(&segs);
    let riders = Riders {
        rays: &rays,
        ray_mask: Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE),
        segments: &split.views(),
    };
    let (records, traced) = measure_and_trace(engine, scene, calls, &riders)?;
    for (h, i) in traced.hits.into_iter().zip(ray_at) {
        out[i] = Outcome::Hit(h);
    }
    let mut bits = split.scatter(&traced.occluded);
    for (&b, &i) in bits.iter().zip(&seg_at) {
        out[i] = Outcome::Blocked(b);
    }
    Ok((out, bits.split_off(seg_at.len()), records))
}

/// `Owners::posture` of clearance job `n` is `CLEARANCE + n`.
const CLEARANCE: usize = 1 << 16;

/// Length of the rays that probe for a closed solid around a sensor: longer than any scene
/// (coordinates stay within [`crate::limits::MAX_COORDINATE`]), so a probe that meets nothing
/// has left the scene.
const PROBE_REACH: f32 = 4.0 * crate::limits::MAX_COORDINATE;

#[derive(Clone, Debug)]
pub struct Sensor {
    pub query: usize,
    pub index: usize,
    pub ring: u32,
    pub ground: Option<Vec3>,
    pub standable: bool,
    pub hidden: [bool; 3],
    /// Where the ground ray from the agent's level started, when the ray straight up from
    /// there met the back of a face: the top of a closed solid seen from inside, or a roof
    /// of single-sided polygons. Horizontal probes from there settle which.
    pub probe: Option<Vec3>,
    /// The ground lies inside a closed solid ([`crate::ground::inside_around`]): no place for
    /// the body.
    pub inside: bool,
    /// The highest posture whose body fits at the spot (clearance), once traced.
    pub fit: Option<Posture>,
    pub straight: bool,
    pub path: Option<Vec<Vec3>>,
}

impl Sensor {
    /// Ground an agent can stand on and whose body fits there (unknown fit reads as fitting).
    pub fn walkable(&self) -> bool {
        self.ground.is_some() && self.standable && self.fit.is_some()
    }
}

/// The steps of a search, each one engine call: the ground under every sensor (and the
/// waypoint hops, which need nothing else); then the template points, clearance and straight
/// access of every standable sensor; then the last segment of two-segment paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Ground,
    Visibility,
    LastSegment,
    Done,
}

/// One kind of job within a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Ground,
    Waypoints,
    Visibility,
    Solids,
    Straight,
    LastSegment,
}

/// What each job of one part of the current step belongs to.
#[derive(Clone, Debug)]
struct Owners {
    part: Part,
    /// The part's jobs in the step.
    jobs: std::ops::Range<usize>,
    sensor: Vec<usize>,
    posture: Vec<usize>,
    key: Vec<(usize, usize, usize)>,
}

impl Owners {
    fn new(part: Part, start: usize) -> Owners {
        Owners {
            part,
            jobs: start..start,
            sensor: Vec::new(),
            posture: Vec::new(),
            key: Vec::new(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Search {
    pub queries: Vec<CoverQuery>,
    pub params: SensorGridParams,
    /// The grid's offsets with +x straight ahead ([`SensorGridParams::layout`]).
    pub layout: Vec<(u32, Vec3)>,
    /// Per query: where straight ahead points ([`super::facing`]).
    pub facing: Vec<glam::Vec2>,
    pub sensors: Vec<Sensor>,
    pub rays: Vec<usize>,
    stage: Stage,
    /// Rings of the current round (all of them unless incremental).
    rings: std::ops::RangeInclusive<u32>,
    round_start: usize,
    open: Vec<usize>,
    parts: Vec<Owners>,
    /// Per query: the paths a last segment may start from (waypoint paths, then straight
    /// two-point paths to sensors the body fits at crouching or standing).
    pub vias: Vec<Vec<Vec<Vec3>>>,
}

type Jobs = Vec<(Job, u32)>;

impl Search {
    pub fn new(queries: Vec<CoverQuery>, params: SensorGridParams) -> Search {
        let rings = if params.incremental {
            0..=0
        } else {
            0..=params.rings
        };
        Search {
            layout: params.layout(),
            facing: queries.iter().map(super::facing).collect(),
            rays: vec![0; queries.len()],
            open: (0..queries.len()).collect(),
            vias: vec![Vec::new(); queries.len()],
            queries,
            params,
            sensors: Vec::new(),
            stage: Stage::Ground,
            rings,
            round_start: 0,
            parts: Vec::new(),
        }
    }

    /// Sensor `index`'s offset from query `q`'s agent: the layout turned toward the query's
    /// observers ([`super::facing`]).
    pub fn offset(&self, q: usize, index: usize) -> Vec3 {
        super::turn(self.layout[index].1, self.facing[q])
    }

    pub fn done(&self) -> bool {
        self.stage == Stage::Done
    }

    /// Whether the next step is the last one (two-segment paths): every sensor's ground,
    /// visibility, fit and straight access are known.
    pub fn at_last_step(&self) -> bool {
        self.stage == Stage::LastSegment
    }

    /// The rays the current step needs, each with a priority (lower first): the top of the
    /// head before lower points, near sensors before far ones (Darken, Morgan and Paull, "Amortized Ray
    /// Casting").
    pub fn plan(&mut self) -> Vec<(Job, u32)> {
        let mut jobs = Vec::new();
        let parts: &[Part] = match self.stage {
            Stage::Ground if self.round_start == 0 && self.sensors.is_empty() => {
                &[Part::Ground, Part::Waypoints]
            }
            Stage::Ground => &[Part::Ground],
            Stage::Visibility => &[Part::Visibility, Part::Solids, Part::Straight],
            Stage::LastSegment => &[Part::LastSegment],
            Stage::Done => &[],
        };
        self.parts = parts
            .iter()
            .map(|&part| {
                let mut owners = Owners::new(part, jobs.len());
                match part {
                    Part::Ground => self.plan_ground(&mut jobs, &mut owners),
                    Part::Waypoints => self.plan_waypoints(&mut jobs, &mut owners),
                    Part::Visibility => self.plan_visibility(&mut jobs, &mut owners),
                    Part::Solids => self.plan_solids(&mut jobs, &mut owners),
                    Part::Straight => self.plan_straight(&mut jobs, &mut owners),
                    Part::LastSegment => self.plan_last_segment(&mut jobs, &mut owners),
                }
                owners.jobs.end = jobs.len();
                owners
            })
            .collect();
        jobs
    }

    fn plan_ground(&mut self, jobs: &mut Jobs, owners: &mut Owners) {
        self.round_start = self.sensors.len();
        for &q in &self.open {
            for (index, &(ring, _)) in self.layout.iter().enumerate() {
                if self.rings.contains(&ring) {
                    self.sensors.push(Sensor {
                        query: q,
                        index,
                        ring,
                        ground: None,
                        standable: false,
                        hidden: [false; 3],
                        probe: None,
                        inside: false,
                        fit: None,
                        straight: false,
                        path: None,
                    });
                }
            }
        }
        for k in self.round_start..self.sensors.len() {
            let s = &self.sensors[k];
            for which in 0..2 {
                jobs.push((Job::Ray(self.ground_ray(k, which)), s.ring));
            }
            // Straight up from where the first ground ray starts: is that inside a solid?
            let up = Ray::new(self.ground_ray(k, 0).origin(), Vec3::Y, PROBE_REACH);
            jobs.push((Job::Ray(up), s.ring));
            owners.sensor.extend([k, k, k]);
            self.rays[s.query] += 3;
        }
    }

    fn plan_visibility(&mut self, jobs: &mut Jobs, owners: &mut Owners) {
        for k in self.round_start..self.sensors.len() {
            let s = &self.sensors[k];
            let q = &self.queries[s.query];
            let (Some(g), true) = (s.ground, s.standable) else {
                continue;
            };
            for p in Posture::ALL {
                for &o in &q.observers {
                    for (point_index, point) in
                        template_points(&q.agent, g, p, o).into_iter().enumerate()
                    {
                        // Head centres first, highest posture first; then the sides.
                        let priority = if point_index == 0 {
                            2 - p as u32
                        } else {
                            3 + 2 - p as u32
                        };
                        jobs.push((
                            Job::Segment(Segment::new(o, point), q.mask),
                            priority * 64 + s.ring,
                        ));
                        owners.sensor.push(k);
                        owners.posture.push(p as usize);
                    }
                }
            }
            // Clearance: does the body fit at the spot, and in which postures?
            let foot = BodyParams::standard().foot;
            for (piece, seg) in clearance_segments(&q.agent, g, foot)
                .into_iter()
                .flatten()
                .enumerate()
            {
                jobs.push((Job::Segment(seg, Mask::FIRE), 6 * 64 + s.ring));
                owners.sensor.push(k);
                owners.posture.push(CLEARANCE + piece);
            }
            self.rays[s.query] += 9 * q.observers.len() + 9;
        }
    }

    /// The horizontal probes ([`crate::ground::outside_solids`]' eight directions) of the
    /// standable sensors whose ray up met a back face.
    fn plan_solids(&mut self, jobs: &mut Jobs, owners: &mut Owners) {
        for k in self.round_start..self.sensors.len() {
            let s = &self.sensors[k];
            let (Some(o), true) = (s.probe, s.standable) else {
                continue;
            };
            for d in crate::ground::AROUND {
                jobs.push((Job::Ray(Ray::new(o, d, PROBE_REACH)), 6 * 64 + s.ring));
                owners.sensor.push(k);
            }
            self.rays[s.query] += crate::ground::AROUND.len();
        }
    }

    /// Every standable sensor may be reached straight, seen or not, if its body fits (known
    /// once this step's clearance is applied); those it fits at crouching or standing may be
    /// a two-segment path's first leg (Darken, Morgan and Paull, step 6: "some other
    /// straight-line accessible sensor").
    fn plan_straight(&mut self, jobs: &mut Jobs, owners: &mut Owners) {
        for k in self.round_start..self.sensors.len() {
            let s = &self.sensors[k];
            let (Some(g), true, true) = (s.ground, s.standable, s.ring > 0) else {
                continue;
            };
            let q = &self.queries[s.query];
            for seg in sweep(&q.agent, &self.params, q.agent.position, g) {
                jobs.push((Job::Segment(seg, Mask::FIRE), 7 * 64 + s.ring));
                owners.sensor.push(k);
            }
            self.rays[s.query] += 9;
        }
    }

    fn plan_waypoints(&mut self, jobs: &mut Jobs, owners: &mut Owners) {
        for (qi, q) in self.queries.iter().enumerate() {
            for i in 0..q.waypoints.len() {
                let from_agent = std::iter::once((usize::MAX, q.agent.position));
                let from_waypoints = (0..i)
                    .map(|j| (j, q.waypoints[j]))
                    .filter(|(_, w)| w.distance(q.waypoints[i]) <= MAX_WAYPOINT_HOP);
                for (j, from) in from_agent.chain(from_waypoints) {
                    for seg in sweep(&q.agent, &self.params, from, q.waypoints[i]) {
                        jobs.push((Job::Segment(seg, Mask::FIRE), 0));
                        owners.key.push((qi, j, i));
                    }
                    self.rays[qi] += 9;
                }
            }
        }
    }

    fn plan_last_segment(&mut self, jobs: &mut Jobs, owners: &mut Owners) {
        for (k, s) in self.sensors.iter().enumerate() {
            let (Some(g), false, true) = (s.ground, s.straight, s.hidden.iter().any(|&h| h)) else {
                continue;
            };
            let q = &self.queries[s.query];
            for (vi, via) in self.vias[s.query].iter().enumerate() {
                for seg in sweep(&q.agent, &self.params, *via.last().unwrap(), g) {
                    jobs.push((Job::Segment(seg, Mask::FIRE), s.ring));
                    owners.key.push((k, vi, 0));
                }
                self.rays[s.query] += 9;
            }
        }
    }

    /// Applies the outcomes of the jobs [`Search::plan`] returned (in that order) and moves to
    /// the next step.
    pub fn apply(&mut self, out: &[Option<Outcome>], scene: &Scene) {
        for owners in std::mem::take(&mut self.parts) {
            let out = &out[owners.jobs.clone()];
            match owners.part {
                Part::Ground => self.apply_ground(&owners, out, scene),
                Part::Waypoints => self.apply_waypoints(&owners, out),
                Part::Visibility => self.apply_visibility(&owners, out),
                Part::Solids => self.apply_solids(&owners, out, scene),
                Part::Straight => self.apply_straight(&owners, out),
                Part::LastSegment => self.apply_last_segment(&owners, out),
            }
        }
        self.stage = match self.stage {
            Stage::Ground => Stage::Visibility,
            Stage::Visibility => self.next_round(),
            Stage::LastSegment | Stage::Done => Stage::Done,
        };
    }

    fn apply_ground(&mut self, owners: &Owners, out: &[Option<Outcome>], scene: &Scene) {
        let min_normal_y = self.params.max_slope.cos();
        for (three, &k) in owners.sensor.iter().step_by(3).enumerate() {
            let hit = |i: usize| match out[3 * three + i] {
                Some(Outcome::Hit(Some(h))) => Some(h),
                _ => None,
            };
            let (which, h) = match (hit(0), hit(1)) {
                (Some(h), _) => (0, h),
                (None, Some(h)) => (1, h),
                (None, None) => continue,
            };
            let ray = self.ground_ray(k, which);
            let up = hit(2).filter(|u| u.back && solid(scene, u));
            let s = &mut self.sensors[k];
            s.probe = (which == 0 && up.is_some()).then(|| ray.origin());
            let g = ray.origin() + ray.dir() * h.t;
            s.ground = Some(g.with_y(crate::ground::quantise_height(g.y)));
            let walkable = scene.materials()[h.material as usize]
                .flags
                .contains(MaterialFlags::WALKABLE);
            s.standable = walkable && h.normal.y >= min_normal_y;
        }
    }

    fn apply_visibility(&mut self, owners: &Owners, out: &[Option<Outcome>]) {
        let start = self.round_start;
        // Per sensor of the round: blocked clearance pieces (bit per piece), and whether it
        // was planned clearance at all.
        let mut clearance = vec![(0u16, false); self.sensors.len() - start];
        for s in &mut self.sensors[start..] {
            s.hidden = [s.ground.is_some() && s.standable; 3];
        }
        for (i, (&k, &p)) in owners.sensor.iter().zip(&owners.posture).enumerate() {
            if p >= CLEARANCE {
                // Untraced clearance reads as clear (optimistic, like the rest).
                let c = &mut clearance[k - start];
                c.1 = true;
                c.0 |= u16::from(blocked(out, i)) << (p - CLEARANCE);
            } else if matches!(out[i], Some(Outcome::Blocked(false))) {
                self.sensors[k].hidden[p] = false;
            }
        }
        for (k, &(b, planned)) in clearance.iter().enumerate() {
            if !planned {
                continue;
            }
            let s = &mut self.sensors[start + k];
            s.fit = fitting_posture(|i| b >> i & 1 == 1);
            for p in Posture::ALL {
                if s.fit.is_none_or(|f| p > f) {
                    s.hidden[p as usize] = false;
                }
            }
        }
    }

    /// A sensor whose probes say its ground lies inside a closed solid has no room for the
    /// body: it is obstructed, hidden in no posture.
    fn apply_solids(&mut self, owners: &Owners, out: &[Option<Outcome>], scene: &Scene) {
        let n = crate::ground::AROUND.len();
        for (probes, ks) in out.chunks(n).zip(owners.sensor.chunks(n)) {
            // Untraced probes read as meeting nothing (optimistic, like the rest); a probe
            // stopped by foliage or a see-through surface says nothing about solids.
            let hits: Vec<Option<Hit>> = probes
                .iter()
                .map(|o| match o {
                    Some(Outcome::Hit(Some(h))) if solid(scene, h) => Some(*h),
                    _ => None,
                })
                .collect();
            if crate::ground::inside_around(&hits) {
                let s = &mut self.sensors[ks[0]];
                s.inside = true;
                s.fit = None;
                s.hidden = [false; 3];
            }
        }
    }

    fn apply_straight(&mut self, owners: &Owners, out: &[Option<Outcome>]) {
        let mut clear = vec![true; self.sensors.len()];
        for (i, &k) in owners.sensor.iter().enumerate() {
            clear[k] &= !blocked(out, i);
        }
        for (k, s) in self.sensors.iter_mut().enumerate().skip(self.round_start) {
            let a = self.queries[s.query].agent.position;
            s.straight = s.walkable() && (s.ring == 0 || clear[k]);
            if s.ring == 0 && s.ground.is_some() {
                s.straight = true;
            }
            if s.straight {
                s.path = Some(if s.ring == 0 {
                    vec![a]
                } else {
                    vec![a, s.ground.unwrap()]
                });
            }
        }
        let (sensors, start) = (&self.sensors, self.round_start);
        self.open.retain(|&q| {
            !sensors[start..]
                .iter()
                .any(|s| s.query == q && s.straight && s.hidden.iter().any(|&h| h))
        });
    }

    /// After a round's visibility step: the next ring's round (incremental processing), or
    /// the last step, with every straight sensor the body fits at crouching or standing added
    /// to the vias.
    fn next_round(&mut self) -> Stage {
        let next = self.rings.end() + 1;
        if self.params.incremental && next <= self.params.rings && !self.open.is_empty() {
            self.rings = next..=next;
            return Stage::Ground;
        }
        for s in self
            .sensors
            .iter()
            .filter(|s| s.straight && s.ring > 0 && s.fit >= Some(Posture::Crouching))
        {
            self.vias[s.query].push(vec![
                self.queries[s.query].agent.position,
                s.ground.unwrap(),
            ]);
        }
        Stage::LastSegment
    }

    fn apply_waypoints(&mut self, owners: &Owners, out: &[Option<Outcome>]) {
        let mut clear: BTreeMap<(usize, usize, usize), bool> = BTreeMap::new();
        for (i, &key) in owners.key.iter().enumerate() {
            *clear.entry(key).or_insert(true) &= !blocked(out, i);
        }
        self.vias = self
            .queries
            .iter()
            .enumerate()
            .map(|(qi, q)| waypoint_paths(qi, q, &clear))
            .collect();
    }

    fn apply_last_segment(&mut self, owners: &Owners, out: &[Option<Outcome>]) {
        // Each (sensor, via) pair planned its 9 sweep segments one after another.
        for (pair, keys) in owners.key.chunks(9).enumerate() {
            let (k, vi, _) = keys[0];
            if (pair * 9..pair * 9 + keys.len()).any(|i| blocked(out, i)) {
                continue;
            }
            let s = &mut self.sensors[k];
            let via = &self.vias[s.query][vi];
            let g = s.ground.unwrap();
            let len = super::path_length(via) + via.last().unwrap().distance(g);
            let shorter =
                |p: &Vec<Vec3>| super::length_key(len) < super::length_key(super::path_length(p));
            if s.path.as_ref().is_none_or(shorter) {
                let mut path = via.clone();
                path.push(g);
                s.path = Some(path);
            }
        }
    }

    /// The ground ray `which` (0: from the agent's level down, 1: from the upper cone down) of
    /// sensor `k`, as planned.
    fn ground_ray(&self, k: usize, which: usize) -> Ray {
        let s = &self.sensors[k];
        let a = &self.queries[s.query].agent;
        let offset = self.offset(s.query, s.index);
        let d = offset.length();
        let top = a.position + offset + Vec3::Y * self.params.step_height;
        if which == 0 {
            Ray::new(top, Vec3::NEG_Y, top.y - (a.position.y - d.max(a.height())))
        } else {
            let high = a.position.y + d.max(self.params.step_height);
            Ray::new(
                Vec3::new(top.x, high, top.z),
                Vec3::NEG_Y,
                (high - top.y).max(0.0),
            )
        }
    }
}

/// Whether a probe's hit tells of a solid: the surface blocks fire or is walkable, as
/// [`crate::ground::outside_solids`] traces.
fn solid(scene: &Scene, h: &Hit) -> bool {
    scene.materials()[h.material as usize]
        .flags
        .intersects(MaterialFlags::BLOCKS_FIRE.union(MaterialFlags::WALKABLE))
}

fn blocked(out: &[Option<Outcome>], i: usize) -> bool {
    matches!(out[i], Some(Outcome::Blocked(true)))
}

/// Paths from the agent to every waypoint reachable through clear hops (Dijkstra).
fn waypoint_paths(
    qi: usize,
    q: &CoverQuery,
    clear: &BTreeMap<(usize, usize, usize), bool>,
) -> Vec<Vec<Vec3>> {
    let n = q.waypoints.len();
    let ok = |a: usize, b: usize| {
        clear
            .get(&(qi, a.min(b), a.max(b)))
            .copied()
            .unwrap_or(false)
    };
    let mut dist = vec![f32::INFINITY; n];
    let mut prev = vec![usize::MAX; n];
    let mut done = vec![false; n];
    for (i, d) in dist.iter_mut().enumerate() {
        if clear.get(&(qi, usize::MAX, i)).copied().unwrap_or(false) {
            *d = q.agent.position.distance(q.waypoints[i]);
        }
    }
    while let Some(u) = (0..n)
        .filter(|&i| !done[i] && dist[i].is_finite())
        .min_by(|&a, &b| dist[a].total_cmp(&dist[b]))
    {
        done[u] = true;
        for v in (0..n).filter(|&v| !done[v] && v != u && ok(u, v)) {
            let d = dist[u] + q.waypoints[u].distance(q.waypoints[v]);
            if d < dist[v] {
                dist[v] = d;
                prev[v] = u;
            }
        }
    }
    (0..n)
        .filter(|&i| dist[i].is_finite())
        .map(|i| {
            let mut path = vec![q.waypoints[i]];
            let mut u = i;
            while prev[u] != usize::MAX {
                u = prev[u];
                path.push(q.waypoints[u]);
            }
            path.push(q.agent.position);
            path.reverse();
            path
        })
        .collect()
}
