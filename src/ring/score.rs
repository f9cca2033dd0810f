//! Scoring ring graph nodes: criteria through response curves, combined by filters and fuzzy
//! boolean operations (and = min, or = max, not = 1 - x), every ray of a batch of graphs
//! traced in one engine submission.

use super::{NodeKind, RingGraph, Zone};
use crate::trace::{Occlusion, Segment};
use crate::{Engine, Error, Mask, Result, Scene};
use glam::{Vec3, Vec3Swizzles};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Rays one scoring batch may trace (all graphs together).
pub const MAX_BATCH_RAYS: u64 = 1 << 26;
/// Parts of one score expression, and its deepest nesting.
pub const MAX_SCORE_PARTS: usize = 1024;
pub const MAX_SCORE_DEPTH: usize = 32;

/// A threat or a friend: where its eyes are and where it can fire.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shooter {
    pub eye: Vec3,
    /// The point it aims at and the half-angle of its field of fire around that direction
    /// (radians); `None`: all round.
    pub aim: Option<(Vec3, f32)>,
    /// Reach of its weapon (metres); infinite by default.
    pub range: f32,
}

impl Shooter {
    /// A shooter firing all round, without limit of range.
    #[must_use]
    pub fn at(eye: Vec3) -> Shooter {
        Shooter {
            eye,
            aim: None,
            range: f32::INFINITY,
        }
    }

    /// A shooter covering a cone of `half_angle` radians around the direction to `at`.
    #[must_use]
    pub fn aiming(eye: Vec3, at: Vec3, half_angle: f32) -> Shooter {
        Shooter {
            aim: Some((at, half_angle)),
            ..Shooter::at(eye)
        }
    }

    /// Whether `p` lies within its range and cone (line of fire not considered).
    #[must_use]
    pub fn covers(&self, p: Vec3) -> bool {
        let d = p - self.eye;
        if d.length() > self.range {
            return false;
        }
        match self.aim {
            None => true,
            Some((at, half)) => {
                let a = (at - self.eye).normalize_or_zero();
                let d = d.normalize_or_zero();
                d == Vec3::ZERO || a.dot(d).clamp(-1.0, 1.0).acos() <= half
            }
        }
    }

    fn validate(&self, what: &str, i: usize) -> Result<()> {
        let ok = self.eye.is_finite()
            && self.range >= 0.0
            && !self.range.is_nan()
            && self.aim.is_none_or(|(a, h)| {
                a.is_finite() && a != self.eye && (0.0..=std::f32::consts::PI).contains(&h)
            });
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidInput(format!(
                "{what} {i}: needs a finite eye, an aim point other than the eye with a \
                 half-angle in [0, pi] radians, and a range of at least 0 m"
            )))
        }
    }
}

/// What the criteria of one graph measure against.
#[derive(Clone, Debug, PartialEq)]
pub struct Situation {
    pub threats: Vec<Shooter>,
    pub friends: Vec<Shooter>,
    /// The target's eye point (for distance and line of sight to the target).
    pub target: Option<Vec3>,
    /// Preferred zones ([`Criterion::InZone`]).
    pub zones: Vec<Zone>,
    /// Height above a node that shooters fire at (metres). Default 1.0.
    pub body: f32,
    /// Height of a node's eye, looking at the target (metres). Default 1.6.
    pub eye: f32,
}

impl Situation {
    /// Threats only; body 1.0 m, eye 1.6 m.
    #[must_use]
    pub fn new(threats: Vec<Shooter>) -> Situation {
        Situation {
            threats,
            friends: Vec::new(),
            target: None,
            zones: Vec::new(),
            body: 1.0,
            eye: 1.6,
        }
    }

    fn validate(&self) -> Result<()> {
        for (i, t) in self.threats.iter().enumerate() {
            t.validate("threat", i)?;
        }
        for (i, f) in self.friends.iter().enumerate() {
            f.validate("friend", i)?;
        }
        if self.target.is_some_and(|t| !t.is_finite()) {
            return Err(Error::InvalidInput("the target is NaN or infinite".into()));
        }
        for (i, z) in self.zones.iter().enumerate() {
            z.validate(i)?;
        }
        if !(0.0..=10.0).contains(&self.body) || !(0.0..=10.0).contains(&self.eye) {
            return Err(Error::InvalidInput(format!(
                "body height {} and eye height {} must be in [0, 10] m",
                self.body, self.eye
            )));
        }
        Ok(())
    }
}

/// A raw measurement per node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Criterion {
    /// 1 when the line of fire from every threat's eye to the node's body point is blocked.
    InCover,
    /// Share of threats whose field of fire (range, cone, clear line of fire) holds the node.
    EnemyFire,
    /// Share of friends whose field of fire holds the node: standing there blocks their shot.
    FriendlyFire,
    /// Metres from the node's eye to the target.
    TargetDistance,
    /// Metres along the graph from the centre (infinite where it cannot be reached).
    MoveDistance,
    /// 1 when the node's eye sees the target (nothing that blocks sight in between).
    TargetSight,
    /// 1 inside any preferred zone of the situation.
    InZone,
    /// 1 for a designer's annotation.
    Annotated,
}

/// A response curve: raw value to `[0, 1]`.
#[derive(Clone, Debug, PartialEq)]
pub enum Curve {
    /// The value, clamped to `[0, 1]`.
    Identity,
    /// 0 at `from`, 1 at `to`, straight between, clamped (`from > to` falls).
    Linear { from: f32, to: f32 },
    /// 1 at or above `at`, else 0.
    Step { at: f32 },
    /// [`Curve::Linear`] raised to `exponent`.
    Power { from: f32, to: f32, exponent: f32 },
    /// `1 / (1 + exp(-(x - mid) / width))`; a negative width falls.
    Logistic { mid: f32, width: f32 },
    /// Straight lines through `(x, y)` points with rising x, flat beyond the ends.
    Points(Vec<(f32, f32)>),
}

impl Curve {
    /// The curve at `x`, in `[0, 1]`.
    #[must_use]
    pub fn at(&self, x: f32) -> f32 {
        let ramp = |from: f32, to: f32| {
            if x.is_nan() {
                0.0
            } else if from == to {
                f32::from(x >= to)
            } else {
                ((x - from) / (to - from)).clamp(0.0, 1.0)
            }
        };
        let y = match self {
            Curve::Identity => x,
            Curve::Linear { from, to } => ramp(*from, *to),
            Curve::Step { at } => f32::from(x >= *at),
            Curve::Power { from, to, exponent } => ramp(*from, *to).powf(*exponent),
            Curve::Logistic { mid, width } => 1.0 / (1.0 + (-(x - mid) / width).exp()),
            Curve::Points(p) => match p.iter().position(|q| q.0 > x) {
                None => p[p.len() - 1].1,
                Some(0) => p[0].1,
                Some(i) => {
                    let (a, b) = (p[i - 1], p[i]);
                    a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0)
                }
            },
        };
        if y.is_nan() {
            0.0
        } else {
            y.clamp(0.0, 1.0)
        }
    }

    fn validate(&self) -> Result<()> {
        let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
        let ok = match self {
            Curve::Identity => true,
            Curve::Linear { from, to } => finite(&[*from, *to]),
            Curve::Step { at } => !at.is_nan(),
            Curve::Power { from, to, exponent } => finite(&[*from, *to]) && *exponent > 0.0,
            Curve::Logistic { mid, width } => finite(&[*mid, *width]) && *width != 0.0,
            Curve::Points(p) => {
                (1..=MAX_SCORE_PARTS).contains(&p.len())
                    && p.iter().all(|q| q.0.is_finite() && q.1.is_finite())
                    && p.windows(2).all(|w| w[0].0 < w[1].0)
            }
        };
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidInput(format!(
                "response curve {self:?}: needs finite numbers, a positive exponent, a non-zero \
                 width, and 1..={MAX_SCORE_PARTS} points with rising x"
            )))
        }
    }
}

/// How nodes are scored: a tree of criteria through curves, in `[0, 1]` at every level.
#[derive(Clone, Debug, PartialEq)]
pub enum Score {
    Criterion(Criterion, Curve),
    Constant(f32),
    /// The least of its parts (fuzzy and).
    And(Vec<Score>),
    /// The greatest (fuzzy or).
    Or(Vec<Score>),
    /// One minus it.
    Not(Box<Score>),
    /// Weighted mean (weights at least 0, not all 0).
    Weighted(Vec<(f32, Score)>),
    /// Product of its parts.
    Product(Vec<Score>),
    /// `then` where `keep` is at least 0.5, else 0 (the node is filtered out).
    Filter {
        keep: Box<Score>,
        then: Box<Score>,
    },
}

impl Score {
    /// A criterion through a curve.
    #[must_use]
    pub fn of(c: Criterion, curve: Curve) -> Score {
        Score::Criterion(c, curve)
    }

    /// A criterion as it is (booleans and shares).
    #[must_use]
    pub fn is(c: Criterion) -> Score {
        Score::Criterion(c, Curve::Identity)
    }

    #[must_use]
    pub fn and(self, other: Score) -> Score {
        Score::And(vec![self, other])
    }

    #[must_use]
    pub fn or(self, other: Score) -> Score {
        Score::Or(vec![self, other])
    }

    #[must_use]
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Score {
        Score::Not(Box::new(self))
    }

    /// `then` only where `self` holds.
    #[must_use]
    pub fn filter(self, then: Score) -> Score {
        Score::Filter {
            keep: Box::new(self),
            then: Box::new(then),
        }
    }

    /// Taking cover: in cover from every threat and reachable from the centre (a filter),
    /// then out of friends' fields of fire, near to walk to (25 m falls to 0) and, weighted
    /// less, near the centre.
    #[must_use]
    pub fn take_cover() -> Score {
        let reachable = Score::of(Criterion::MoveDistance, Curve::Step { at: f32::INFINITY }).not();
        let keep = Score::is(Criterion::InCover).and(reachable);
        keep.filter(Score::Weighted(vec![
            (2.0, Score::is(Criterion::FriendlyFire).not()),
            (
                3.0,
                Score::of(
                    Criterion::MoveDistance,
                    Curve::Linear {
                        from: 25.0,
                        to: 0.0,
                    },
                ),
            ),
            (
                1.0,
                Score::of(
                    Criterion::MoveDistance,
                    Curve::Linear {
                        from: 50.0,
                        to: 0.0,
                    },
                ),
            ),
        ]))
    }

    fn visit(&self, f: &mut impl FnMut(&Score, usize) -> Result<()>, depth: usize) -> Result<()> {
        f(self, depth)?;
        match self {
            Score::Criterion(..) | Score::Constant(_) => Ok(()),
            Score::And(v) | Score::Or(v) | Score::Product(v) => {
                v.iter().try_for_each(|s| s.visit(f, depth + 1))
            }
            Score::Weighted(v) => v.iter().try_for_each(|(_, s)| s.visit(f, depth + 1)),
            Score::Not(s) => s.visit(f, depth + 1),
            Score::Filter { keep, then } => {
                keep.visit(f, depth + 1)?;
                then.visit(f, depth + 1)
            }
        }
    }

    /// Checks the expression (sizes, numbers) and that `situation` has what its criteria
    /// need.
    pub fn validate(&self, situation: &Situation) -> Result<()> {
        situation.validate()?;
        let mut parts = 0;
        let mut check = |s: &Score, depth: usize| -> Result<()> {
            parts += 1;
            if parts > MAX_SCORE_PARTS || depth > MAX_SCORE_DEPTH {
                return Err(Error::too_large(
                    "score expression parts (or nesting depth)",
                    parts.max(depth) as u64,
                    MAX_SCORE_PARTS as u64,
                    format!("use at most {MAX_SCORE_PARTS} parts nested {MAX_SCORE_DEPTH} deep"),
                ));
            }
            match s {
                Score::Criterion(c, curve) => {
                    curve.validate()?;
                    if matches!(c, Criterion::TargetDistance | Criterion::TargetSight)
                        && situation.target.is_none()
                    {
                        return Err(Error::InvalidInput(format!(
                            "the criterion {c:?} needs a target: give the situation one"
                        )));
                    }
                }
                Score::Constant(v) if !(0.0..=1.0).contains(v) => {
                    return Err(Error::InvalidInput(format!(
                        "score constant {v} is not in [0, 1]"
                    )))
                }
                Score::And(v) | Score::Or(v) | Score::Product(v) if v.is_empty() => {
                    return Err(Error::InvalidInput(
                        "an and, or or product with no parts".into(),
                    ))
                }
                Score::Weighted(v)
                    if v.iter().any(|(w, _)| !(*w >= 0.0 && w.is_finite()))
                        || v.iter().map(|x| x.0).sum::<f32>() <= 0.0 =>
                {
                    return Err(Error::InvalidInput(
                        "weights must be finite, at least 0, and not all 0".into(),
                    ))
                }
                _ => {}
            }
            Ok(())
        };
        self.visit(&mut check, 0)
    }

    fn uses(&self, c: Criterion) -> bool {
        let mut found = false;
        let _ = self.visit(
            &mut |s, _| {
                found |= matches!(s, Score::Criterion(x, _) if *x == c);
                Ok(())
            },
            0,
        );
        found
    }

    fn eval(&self, raw: &dyn Fn(Criterion) -> Vec<f32>, n: usize) -> Vec<f32> {
        let fold = |v: &[Score], f: fn(f32, f32) -> f32| {
            let mut acc = v[0].eval(raw, n);
            for s in &v[1..] {
                acc.iter_mut()
                    .zip(s.eval(raw, n))
                    .for_each(|(a, b)| *a = f(*a, b));
            }
            acc
        };
        match self {
            Score::Criterion(c, curve) => raw(*c).into_iter().map(|x| curve.at(x)).collect(),
            Score::Constant(v) => vec![*v; n],
            Score::And(v) => fold(v, f32::min),
            Score::Or(v) => fold(v, f32::max),
            Score::Product(v) => fold(v, |a, b| a * b),
            Score::Not(s) => s.eval(raw, n).into_iter().map(|x| 1.0 - x).collect(),
            Score::Weighted(v) => {
                let total: f32 = v.iter().map(|x| x.0).sum();
                let mut acc = vec![0.0; n];
                for (w, s) in v {
                    acc.iter_mut()
                        .zip(s.eval(raw, n))
                        .for_each(|(a, b)| *a += w * b);
                }
                acc.iter_mut().for_each(|a| *a /= total);
                acc
            }
            Score::Filter { keep, then } => keep
                .eval(raw, n)
                .into_iter()
                .zip(then.eval(raw, n))
                .map(|(k, t)| if k >= 0.5 { t } else { 0.0 })
                .collect(),
        }
    }
}

/// Scores of one graph's nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct Scores {
    /// Per node, in `[0, 1]`.
    pub score: Vec<f32>,
    /// Per node: the line of fire from every threat's eye to the body point is blocked.
    pub in_cover: Vec<bool>,
    /// Per node: metres along the graph from the centre.
    pub move_distance: Vec<f32>,
    /// Rays traced for this graph.
    pub rays: u64,
}

impl Scores {
    /// The best node: highest score above 0, ties to the shorter walk, then the lower index.
    #[must_use]
    pub fn best(&self) -> Option<u32> {
        (0..self.score.len())
            .filter(|&i| self.score[i] > 0.0 && self.move_distance[i].is_finite())
            .min_by(|&a, &b| {
                self.score[b]
                    .total_cmp(&self.score[a])
                    .then(self.move_distance[a].total_cmp(&self.move_distance[b]))
            })
            .map(|i| i as u32)
    }
}

const NO_RAY: u32 = u32::MAX;

/// The rays one graph's scores need.
pub(super) struct Plan {
    pub fire: Vec<Segment>,
    pub sight: Vec<Segment>,
    /// Per threat, then node: index into `fire`, or [`NO_RAY`] (nothing between).
    threat: Vec<u32>,
    /// Per friend, then node: index into `fire`, [`NO_RAY`] outside its cone or range.
    friend: Vec<u32>,
    /// Per node: index into `sight`.
    target: Vec<u32>,
}

fn push(out: &mut Vec<Segment>, a: Vec3, b: Vec3) -> u32 {
    if a.distance_squared(b) < 1e-8 {
        return NO_RAY;
    }
    out.push(Segment::new(a, b));
    out.len() as u32 - 1
}

impl Plan {
    pub fn new(graph: &RingGraph, s: &Situation, score: &Score) -> Plan {
        let mut fire = Vec::new();
        let body: Vec<Vec3> = graph
            .nodes()
            .iter()
            .map(|n| n.position + Vec3::Y * s.body)
            .collect();
        let mut threat = vec![NO_RAY; s.threats.len() * body.len()];
        // Each threat's rays in Z-order of the nodes: neighbours share the fan's packets.
        let mut order: Vec<(u32, usize)> = body
            .iter()
            .enumerate()
            .map(|(i, b)| (crate::trace::z_key(b.to_array()), i))
            .collect();
        order.sort_unstable();
        for (k, t) in s.threats.iter().enumerate() {
            for &(_, i) in &order {
                threat[k * body.len() + i] = push(&mut fire, t.eye, body[i]);
            }
        }
        let mut friend = Vec::new();
        if score.uses(Criterion::FriendlyFire) {
            for f in &s.friends {
                friend.extend(body.iter().map(|&b| {
                    if f.covers(b) {
                        push(&mut fire, f.eye, b)
                    } else {
                        NO_RAY
                    }
                }));
            }
        }
        let mut sight = Vec::new();
        let mut target = Vec::new();
        if let (true, Some(t)) = (score.uses(Criterion::TargetSight), s.target) {
            target.extend(
                graph
                    .nodes()
                    .iter()
                    .map(|n| push(&mut sight, n.position + Vec3::Y * s.eye, t)),
            );
        }
        Plan {
            fire,
            sight,
            threat,
            friend,
            target,
        }
    }

    pub fn rays(&self) -> u64 {
        (self.fire.len() + self.sight.len()) as u64
    }

    /// Scores from the traced bits (`fire` and `sight` hold this plan's segments from
    /// `fire_at` and `sight_at`) and the walking distances ([`distances`]).
    #[allow(clippy::too_many_arguments)]
    pub fn evaluate(
        &self,
        graph: &RingGraph,
        s: &Situation,
        score: &Score,
        fire: &Occlusion,
        fire_at: usize,
        sight: &Occlusion,
        sight_at: usize,
        move_distance: Vec<f32>,
    ) -> Scores {
        let n = graph.len();
        let open = |ix: u32| ix == NO_RAY || !fire.get(fire_at + ix as usize);
        let nt = s.threats.len();
        let mut in_cover = vec![true; n];
        let mut enemy = vec![0.0f32; n];
        for (t, shooter) in s.threats.iter().enumerate() {
            for k in 0..n {
                if open(self.threat[t * n + k]) {
                    in_cover[k] = false;
                    let body = graph.nodes()[k].position + Vec3::Y * s.body;
                    if shooter.covers(body) {
                        enemy[k] += 1.0 / nt as f32;
                    }
                }
            }
        }
        let raw = |c: Criterion| -> Vec<f32> {
            let nodes = graph.nodes();
            match c {
                Criterion::InCover => in_cover.iter().map(|&b| f32::from(u8::from(b))).collect(),
                Criterion::EnemyFire => enemy.clone(),
                Criterion::FriendlyFire => {
                    let mut v = vec![0.0; n];
                    for f in 0..s.friends.len() {
                        for (k, x) in v.iter_mut().enumerate() {
                            let ix = self.friend[f * n + k];
                            if ix != NO_RAY && !fire.get(fire_at + ix as usize) {
                                *x += 1.0 / s.friends.len() as f32;
                            }
                        }
                    }
                    v
                }
                Criterion::TargetDistance => {
                    let t = s.target.unwrap_or_default();
                    nodes
                        .iter()
                        .map(|p| (p.position + Vec3::Y * s.eye).distance(t))
                        .collect()
                }
                Criterion::MoveDistance => move_distance.clone(),
                Criterion::TargetSight => self
                    .target
                    .iter()
                    .map(|&ix| {
                        f32::from(u8::from(ix == NO_RAY || !sight.get(sight_at + ix as usize)))
                    })
                    .collect(),
                Criterion::InZone => nodes
                    .iter()
                    .map(|p| {
                        f32::from(u8::from(
                            s.zones.iter().any(|z| z.contains(p.position.xz())),
                        ))
                    })
                    .collect(),
                Criterion::Annotated => nodes
                    .iter()
                    .map(|p| f32::from(u8::from(matches!(p.kind, NodeKind::Annotation(_)))))
                    .collect(),
            }
        };
        Scores {
            score: score.eval(&raw, n),
            in_cover,
            move_distance,
            rays: self.rays(),
        }
    }
}

/// Walking distance from the centre to every node (Dijkstra on edge lengths).
pub(super) fn distances(graph: &RingGraph) -> Vec<f32> {
    let mut dist = vec![f32::INFINITY; graph.len()];
    if graph.is_empty() {
        return dist;
    }
    dist[0] = 0.0;
    let mut heap = BinaryHeap::new();
    heap.push((Reverse(0u32), 0u32));
    while let Some((Reverse(d), u)) = heap.pop() {
        let d = f32::from_bits(d);
        if d > dist[u as usize] {
            continue;
        }
        for &(v, e) in graph.neighbours(u) {
            let nd = d + graph.lengths()[e as usize];
            if nd < dist[v as usize] {
                dist[v as usize] = nd;
                heap.push((Reverse(nd.to_bits()), v));
            }
        }
    }
    dist
}

/// Rays of a scoring batch from which the walking distances are found beside the tracing.
const JOIN_FROM_RAYS: usize = 2048;

/// Scores many graphs, each in its own situation, with one score expression: every ray of
/// every graph goes to `engine` at once (one submission on the GPU, one call per mask on the
/// CPU). Both backends give the same scores.
pub fn score_batch(
    engine: &Engine,
    scene: &Scene,
    items: &[(&RingGraph, &Situation)],
    score: &Score,
) -> Result<Vec<Scores>> {
    for (_, s) in items {
        score.validate(s)?;
    }
    // Bound the rays before planning: threats and friends per node, plus one sight ray.
    let claimed: u64 = items
        .iter()
        .map(|(g, s)| (g.len() as u64) * (s.threats.len() + s.friends.len() + 1) as u64)
        .sum();
    if claimed > MAX_BATCH_RAYS {
        return Err(Error::too_large(
            "rays of one scoring batch",
            claimed,
            MAX_BATCH_RAYS,
            "score fewer graphs per batch, or use fewer threats, friends or nodes",
        ));
    }
    let plans: Vec<Plan> = items.iter().map(|(g, s)| Plan::new(g, s, score)).collect();
    let (mut fire, mut sight) = (Vec::new(), Vec::new());
    let mut at = Vec::with_capacity(plans.len());
    for p in &plans {
        at.push((fire.len(), sight.len()));
        fire.extend_from_slice(&p.fire);
        sight.extend_from_slice(&p.sight);
    }
    // The walking distances need no rays: found while the rays are traced, where there are
    // enough rays to be worth a hand-over to the thread pool.
    let trace = || engine.occluded_many(scene, &[(&fire, Mask::FIRE), (&sight, Mask::SIGHT)]);
    let walk = || items.iter().map(|(g, _)| distances(g)).collect::<Vec<_>>();
    let (bits, dists) = if fire.len() + sight.len() >= JOIN_FROM_RAYS {
        rayon::join(trace, walk)
    } else {
        (trace(), walk())
    };
    let bits = bits?;
    Ok(plans
        .iter()
        .zip(items)
        .zip(at)
        .zip(dists)
        .map(|(((p, (g, s)), (fa, sa)), d)| p.evaluate(g, s, score, &bits[0], fa, &bits[1], sa, d))
        .collect())
}

impl RingGraph {
    /// Scores this graph's nodes in `situation` (see [`score_batch`]).
    pub fn score(
        &self,
        engine: &Engine,
        scene: &Scene,
        situation: &Situation,
        score: &Score,
    ) -> Result<Scores> {
        Ok(score_batch(engine, scene, &[(self, situation)], score)?.remove(0))
    }
}
