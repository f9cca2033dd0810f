//! Can an upright body walk straight from one point to another? The batched test behind every
//! nav graph edge.
//!
//! A walk from `a` to `b` (feet) is sampled every `sample_step` metres along the straight line
//! in x/z. At each sample a downward closest-hit ray, from `probe_up` above the straight line
//! between the two heights, finds the ground. The walk passes when:
//!
//! 1. **Ground** under every sample is walkable, met from its front (not the floor of a solid
//!    seen from inside it), within `max_slope` of level, and no more than
//!    `step_height` above or below the previous sample's (stairs are climbed one riser at a
//!    time; a cliff, a hole or a window sill is not); an anchored walk also starts and ends on
//!    the heights of `a` and `b` (not on another floor).
//! 2. **The body fits** along the way, traced against fire-blocking geometry (walls, glass,
//!    vehicles; foliage does not stop a body): at every sample a vertical segment from `foot`
//!    to just under the crouching head and on to just under the standing head, and between
//!    samples the swept cylinder: segments following the ground at four heights from the knee
//!    (just above a step) to the crouching head, and at the standing head, each on the axis and
//!    one radius to either side.
//!
//! Where only the crouching body fits, the walk passes as [`EdgeKinds::CROUCH`]. It is
//! [`EdgeKinds::WATER`] when any sample stands on a walkable surface that stops nothing (water),
//! and [`EdgeKinds::STAIRS`] when the ground changes height through two or more risers in one
//! direction (jumps over 5 cm between neighbouring samples on near-level treads). Its length is
//! the length of the ground profile. A failed walk says where along the line it first failed.

use crate::agent::Agent;
use crate::scene::{Mask, MaterialFlags, Scene};
use crate::tables::EdgeKinds;
use crate::trace::{Hit, Occlusion, Ray, Segment};
use crate::{Engine, Result};
use glam::Vec3;

/// The settings of a walk (from [`super::NavParams`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct WalkParams {
    pub agent: Agent,
    pub step_height: f32,
    pub max_slope: f32,
    pub sample_step: f32,
    pub probe_up: f32,
    pub foot: f32,
}

/// The verdict on one walk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Walk {
    Pass {
        kinds: EdgeKinds,
        length: f32,
        /// Ground heights under the first and last samples.
        ends: [f32; 2],
    },
    /// Failed; `at` is the fraction of the way where the first test failed.
    Fail { at: f32 },
}

/// One walk to test: feet positions; `anchored` walks must start and end on those heights.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stroll {
    pub a: Vec3,
    pub b: Vec3,
    pub anchored: bool,
}

/// Rays (ground and body segments together) per pair of engine calls.
const RAYS_PER_CALL: usize = 1 << 21;
/// A riser: a height change over this between neighbouring near-level samples.
const RISER: f32 = 0.05;
/// Treads are within this many degrees of level.
const TREAD_DEGREES: f32 = 10.0;
/// Ends of an anchored walk must lie this close to the given heights.
const END_TOLERANCE: f32 = 0.1;

impl WalkParams {
    fn intervals(&self, s: &Stroll) -> usize {
        let d = Vec3::new(s.b.x - s.a.x, 0.0, s.b.z - s.a.z).length();
        ((d / self.sample_step).ceil() as usize).max(1)
    }
    /// Heights of the crouching body's sweeps, evenly from the knee to the crouching head,
    /// then the standing head.
    fn heights(&self) -> ([f32; 4], f32) {
        let knee = self.step_height + 0.05;
        let crouch = self.agent.head_heights[1] - 0.05;
        (
            std::array::from_fn(|k| knee + (crouch - knee) * k as f32 / 3.0),
            self.agent.head_heights[2] - 0.05,
        )
    }
}

/// Tests every walk; returns the verdicts and the rays traced.
pub(crate) fn walk(
    engine: &Engine,
    scene: &Scene,
    strolls: &[Stroll],
    p: &WalkParams,
) -> Result<(Vec<Walk>, u64)> {
    let mut out = Vec::with_capacity(strolls.len());
    let mut rays = 0u64;
    let mut start = 0;
    while start < strolls.len() {
        // As many walks as fit the ray budget (each costs about 18 rays per sample).
        let mut end = start;
        let mut budget = 0;
        while end < strolls.len() && (end == start || budget < RAYS_PER_CALL) {
            budget += 18 * (p.intervals(&strolls[end]) + 1);
            end += 1;
        }
        rays += walk_chunk(engine, scene, &strolls[start..end], p, &mut out)?;
        start = end;
    }
    Ok((out, rays))
}

/// Tests one chunk of walks in two batches: the ground under every sample, then the body
/// along every walk whose ground holds; appends the verdicts to `out` and returns the rays
/// traced.
fn walk_chunk(
    engine: &Engine,
    scene: &Scene,
    strolls: &[Stroll],
    p: &WalkParams,
    out: &mut Vec<Walk>,
) -> Result<u64> {
    // Stage 1: the ground under every sample.
    let (down, first) = ground_rays(strolls, p);
    // Foliage stops sight, not feet: the ground is what blocks fire or is walkable.
    let all = Mask(MaterialFlags::BLOCKS_FIRE.union(MaterialFlags::WALKABLE));
    let hits = engine.closest_hit(scene, &down, all)?;
    // Profile checks; walks whose ground holds get body segments.
    let mut verdicts = Vec::with_capacity(strolls.len());
    let mut grounds = Vec::new();
    for (k, s) in strolls.iter().enumerate() {
        let (lo, hi) = (first[k], first[k + 1]);
        verdicts.push(ground_profile(
            scene,
            p,
            s,
            &down[lo..hi],
            &hits[lo..hi],
            &mut grounds,
        ));
    }
    // Stage 2: the body along every walk whose ground holds.
    let body = Body::along(strolls, &verdicts, &first, &grounds, p);
    let blocked = engine.occluded(scene, &body.segs, Mask::FIRE)?;
    body.judge(&blocked, &mut verdicts);
    out.extend(verdicts);
    Ok((down.len() + body.segs.len()) as u64)
}

/// A downward ray from `probe_up` above every sample of every walk; `first[k]` is walk `k`'s
/// first ray (and `first[strolls.len()]` the count).
fn ground_rays(strolls: &[Stroll], p: &WalkParams) -> (Vec<Ray>, Vec<usize>) {
    let mut down = Vec::new();
    let mut first = Vec::with_capacity(strolls.len() + 1);
    for s in strolls {
        first.push(down.len());
        let n = p.intervals(s);
        let run = Vec3::new(s.b.x - s.a.x, 0.0, s.b.z - s.a.z).length();
        let reach = 2.0 * p.probe_up + 0.5 * run;
        for i in 0..=n {
            let at = s.a.lerp(s.b, i as f32 / n as f32) + Vec3::Y * p.probe_up;
            down.push(Ray::new(at, Vec3::NEG_Y, reach));
        }
    }
    first.push(down.len());
    (down, first)
}

/// The ground test of one walk from its samples' rays and hits: a pass with its kinds, length
/// and end heights, or where it first failed. A passing walk's ground heights and normals'
/// y are appended to `grounds`.
fn ground_profile(
    scene: &Scene,
    p: &WalkParams,
    s: &Stroll,
    down: &[Ray],
    hits: &[Option<Hit>],
    grounds: &mut Vec<(f32, f32)>,
) -> Walk {
    let min_ny = p.max_slope.cos();
    let tread_ny = TREAD_DEGREES.to_radians().cos();
    let n = down.len() - 1;
    let mut kinds = EdgeKinds::NONE;
    let mut length = 0.0;
    let (mut ups, mut downs) = (0, 0);
    let run = Vec3::new(s.b.x - s.a.x, 0.0, s.b.z - s.a.z).length() / n as f32;
    let mut fail = None;
    let g0 = grounds.len();
    for i in 0..=n {
        let t = i as f32 / n as f32;
        let Some(h) = hits[i] else {
            fail = Some(t);
            break;
        };
        let flags = scene.materials()[h.material as usize].flags;
        if !flags.contains(MaterialFlags::WALKABLE) || h.normal.y < min_ny || h.back {
            fail = Some(t);
            break;
        }
        if !flags.intersects(MaterialFlags::BLOCKS_FIRE) {
            kinds = kinds.union(EdgeKinds::WATER);
        }
        // On the ground grid, so a last bit of the hit does not move the walk's length.
        let g = crate::ground::quantise_height(down[i].origin().y - h.t);
        if i > 0 {
            let (prev, prev_ny) = grounds[grounds.len() - 1];
            let rise: f32 = g - prev;
            if rise.abs() > p.step_height {
                fail = Some(t);
                break;
            }
            if rise.abs() > RISER && h.normal.y >= tread_ny && prev_ny >= tread_ny {
                if rise > 0.0 {
                    ups += 1;
                } else {
                    downs += 1;
                }
            }
            length += (run * run + rise * rise).sqrt();
        }
        grounds.push((g, h.normal.y));
    }
    let ends = (grounds.len() > g0).then(|| [grounds[g0].0, grounds[grounds.len() - 1].0]);
    if fail.is_none() && s.anchored {
        let [e0, e1] = ends.unwrap();
        if (e0 - s.a.y).abs() > END_TOLERANCE {
            fail = Some(0.0);
        } else if (e1 - s.b.y).abs() > END_TOLERANCE {
            fail = Some(1.0);
        }
    }
    if ups >= 2 || downs >= 2 {
        kinds = kinds.union(EdgeKinds::STAIRS);
    }
    match fail {
        Some(at) => {
            grounds.truncate(g0);
            Walk::Fail { at }
        }
        // The ends may sit up to END_TOLERANCE off the ground profile; an edge is never
        // shorter than the straight line between its nodes (table readers check it).
        None => Walk::Pass {
            kinds,
            length: length.max(s.a.distance(s.b)),
            ends: ends.unwrap(),
        },
    }
}

/// One walk's body segments: walk `k`, its `n` intervals, its crouching segments
/// `start..crouch` (`crouch_end[e]` ends element `e`'s) and standing ones `crouch..end`.
struct Span {
    k: usize,
    start: usize,
    crouch: usize,
    end: usize,
    crouch_end: Vec<usize>,
    n: usize,
}

/// The body segments of every walk whose ground holds, and where each walk's lie.
struct Body {
    segs: Vec<Segment>,
    spans: Vec<Span>,
}

impl Body {
    /// The crouching and standing body along every passing walk, on its ground profile
    /// (`grounds`, in walk order).
    fn along(
        strolls: &[Stroll],
        verdicts: &[Walk],
        first: &[usize],
        grounds: &[(f32, f32)],
        p: &WalkParams,
    ) -> Body {
        let mut body = Body {
            segs: Vec::new(),
            spans: Vec::new(),
        };
        let mut g = 0;
        for (k, s) in strolls.iter().enumerate() {
            if !matches!(verdicts[k], Walk::Pass { .. }) {
                continue;
            }
            let n = first[k + 1] - first[k] - 1;
            body.push_walk(k, s, &grounds[g..g + n + 1], p);
            g += n + 1;
        }
        body
    }

    /// Walk `k`'s segments over its ground heights `ground` (one per sample).
    fn push_walk(&mut self, k: usize, s: &Stroll, ground: &[(f32, f32)], p: &WalkParams) {
        let (sweep, stand) = p.heights();
        let crouch_top = sweep[3];
        let segs = &mut self.segs;
        let n = ground.len() - 1;
        let along = Vec3::new(s.b.x - s.a.x, 0.0, s.b.z - s.a.z);
        let side = Vec3::new(-along.z, 0.0, along.x).normalize_or_zero() * p.agent.radius;
        let at = |i: usize| {
            let xz = s.a.lerp(s.b, i as f32 / n as f32);
            Vec3::new(xz.x, ground[i].0, xz.z)
        };
        let start = segs.len();
        let mut crouch_end = Vec::with_capacity(2 * n + 1);
        // Crouching body: per sample its axis, per interval its sweeps (element `e` is at
        // fraction e / (2n) of the way).
        for i in 0..=n {
            let q = at(i);
            segs.push(Segment::new(q + Vec3::Y * p.foot, q + Vec3::Y * crouch_top));
            crouch_end.push(segs.len());
            if i < n {
                let r = at(i + 1);
                for h in sweep {
                    for o in [Vec3::ZERO, side, -side] {
                        segs.push(Segment::new(q + Vec3::Y * h + o, r + Vec3::Y * h + o));
                    }
                }
                crouch_end.push(segs.len());
            }
        }
        let crouch = segs.len();
        // Standing body: the axis on up and the sweeps at head height.
        for i in 0..=n {
            let q = at(i);
            segs.push(Segment::new(q + Vec3::Y * crouch_top, q + Vec3::Y * stand));
            if i < n {
                let r = at(i + 1);
                for o in [Vec3::ZERO, side, -side] {
                    segs.push(Segment::new(
                        q + Vec3::Y * stand + o,
                        r + Vec3::Y * stand + o,
                    ));
                }
            }
        }
        self.spans.push(Span {
            k,
            start,
            crouch,
            end: segs.len(),
            crouch_end,
            n,
        });
    }

    /// A walk whose crouching body is blocked fails where it first was; one where only the
    /// standing body is blocked passes crouching.
    fn judge(&self, blocked: &Occlusion, verdicts: &mut [Walk]) {
        for sp in &self.spans {
            let n = sp.n;
            if let Some(e) = (sp.start..sp.crouch).find(|&i| blocked.get(i)) {
                let element = sp.crouch_end.iter().position(|&c| c > e).unwrap_or(2 * n);
                verdicts[sp.k] = Walk::Fail {
                    at: element as f32 / (2 * n) as f32,
                };
            } else if (sp.crouch..sp.end).any(|i| blocked.get(i)) {
                if let Walk::Pass { kinds, .. } = &mut verdicts[sp.k] {
                    *kinds = kinds.union(EdgeKinds::CROUCH);
                }
            }
        }
    }
}
