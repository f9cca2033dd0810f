//! Where a threat that went out of sight presumably is, and where it will likely reappear
//! (van der Sterren, *Terrain Reasoning for 3D Action Games*, "Predicting Out-of-sight
//! Threats").
//!
//! The AI saw a threat at `seen`, moving at `velocity`, `since` seconds ago; it has been out of
//! sight ever since. [`predict`] answers in two parts.
//!
//! **Where the threat presumably is:**
//!
//! 1. *Extrapolate*: the threat keeps its direction and speed, so it is at
//!    `seen + velocity * since` (the `extrapolated` point). The line is walked in steps of
//!    [`PredictParams::step`] metres: step `k` lies at time `t_k` after the sighting.
//! 2. *Correct against walls*: the threat cannot walk through walls, and the nav graph shows it
//!    by the absence of a path. Each step's nearest node must be reachable from the last-seen
//!    node along the graph in the time the threat has had: graph cost <= `slack * speed * t_k`
//!    plus how far the two points lie from their nodes (snapping to the graph can move each end
//!    that far), with `speed = max(|velocity|, min_speed)`. As the graph is only as fine as
//!    its nodes, the step must also be in reach of its own node: the segment between them,
//!    [`PROBE_HEIGHT`] above the node, crosses no wall ([`Mask::FIRE`], one batch). The first
//!    step that fails either test ends the extrapolation ([`Correction::Walls`]).
//! 3. *Correct against line of sight*: a step whose spot (the step plus
//!    [`PredictParams::eye_height`]) the observer's eye sees in full ([`Mask::SIGHT`]) cannot be
//!    where the threat went: it would have been seen there, at a time after the sighting. The
//!    first such step ends the extrapolation ([`Correction::Sight`]). The sight segments of all
//!    steps that pass the walls test go to the engine in one batch. Step 0 is the sighting
//!    itself and is not tested.
//! 4. The *presumed* position is the last valid step; its nearest node is the *presumed node*.
//!
//! **Where to aim:** the shortest graph path (Dijkstra on the edge costs) from the presumed node
//! to the observer's node; the first node on it whose spot the observer sees (all traced in one
//! batch) is where the threat likely reappears. The aim point is that node plus the eye height,
//! and the time to it is the path cost there divided by `speed`. The shorter that time, the
//! more likely the threat shows up there soon.
//!
//! **Many at once:** [`predict_many`] answers a batch of threats and observers with the same
//! answers, bit for bit, in one engine call per stage (the wall probes, the steps' sight lines,
//! the paths' sight lines) for the whole batch; [`predict`] is a batch of one. On a GPU each
//! engine call is a submission and a wait, so a batch costs what one query costs.

use super::relations::Search;
use crate::limits::{check_size, MAX_COORDINATE};
use crate::nav::NavGraph;
use crate::{Engine, Error, Mask, Occlusion, Result, Scene, Segment};
use glam::Vec3;
use rayon::prelude::*;

/// Height above a step's node (metres) of the probe from the node to the step: above a kerb or
/// a step, below a window sill (1 m in the built-in levels).
pub const PROBE_HEIGHT: f32 = 0.9;

/// Most extrapolation steps one prediction walks (`|velocity| * since / step`, rounded up).
pub const MAX_STEPS: u64 = 1 << 14;

/// Batches of fewer queries run their CPU stages on the calling thread: handing them to the
/// pool costs more than they do.
pub const PARALLEL_FROM: usize = 4;

/// Most queries one [`predict_many`] call takes.
pub const MAX_QUERIES: u64 = 1 << 16;

/// Most extrapolation steps of all the queries of one [`predict_many`] call together: about
/// 100 bytes each while the call runs (400 MiB at the limit).
pub const MAX_BATCH_STEPS: u64 = 1 << 22;

/// What the AI saw of the threat before it went out of sight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sighting {
    /// Where the threat stood when last seen: its feet, on the ground, as nav nodes are
    /// (metres).
    pub seen: Vec3,
    /// Its velocity then (metres per second); zero for a threat that stood still.
    pub velocity: Vec3,
    /// Seconds since it was last seen (0 or more).
    pub since: f32,
}

/// One threat to predict, as [`predict_many`] takes it: what [`predict`] takes per call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PredictQuery {
    /// The observer's (the AI's) eye, metres.
    pub observer_eye: Vec3,
    /// What the observer saw of the threat.
    pub sighting: Sighting,
}

/// How [`predict`] walks, tests and searches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PredictParams {
    /// Height of the threat's eye (and chest, the spot the observer would see) above its feet or
    /// node, metres. Default 1.7. The observer's feet are taken to be this far below its eye.
    pub eye_height: f32,
    /// Length of one extrapolation step, metres. Default 0.5 (a quarter of the default 2 m node
    /// spacing).
    pub step: f32,
    /// How much longer than the straight line the threat's path may be: a step is reachable
    /// when its graph cost is at most `slack` times the distance the threat covered by then.
    /// Default 1.5.
    pub slack: f32,
    /// Slowest speed assumed for the threat (metres per second), so a slow or standing threat
    /// still gets time to walk around corners and a time to the aim point. Default 1.0.
    pub min_speed: f32,
}

impl PredictParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> PredictParams {
        PredictParams {
            eye_height: 1.7,
            step: 0.5,
            slack: 1.5,
            min_speed: 1.0,
        }
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<()> {
        let check = |v: f32, name: &'static str, lo: f32, hi: f32, allowed: &str| {
            if v.is_finite() && v >= lo && v <= hi {
                Ok(())
            } else {
                Err(Error::param(name, v, allowed))
            }
        };
        check(
            self.eye_height,
            "eye_height",
            0.0,
            100.0,
            "0..=100 m (default 1.7)",
        )?;
        check(
            self.step,
            "step",
            0.01,
            1000.0,
            "0.01..=1000 m (default 0.5)",
        )?;
        check(self.slack, "slack", 1.0, 100.0, "1..=100 (default 1.5)")?;
        check(
            self.min_speed,
            "min_speed",
            0.01,
            1000.0,
            "0.01..=1000 m/s (default 1)",
        )
    }
}

impl Default for PredictParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// What ended the extrapolation early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Correction {
    /// The whole straight line was valid: the presumed position is the extrapolated one.
    None,
    /// The graph has no path short enough to the next step, or a wall lies between the next
    /// step and its node: a wall (or a drop, or water) is in the way.
    Walls,
    /// The observer would have seen the threat at the next step, and did not.
    Sight,
}

impl Correction {
    /// `"none"`, `"walls"` or `"sight"`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Correction::None => "none",
            Correction::Walls => "walls",
            Correction::Sight => "sight",
        }
    }
}

/// The answer of [`predict`].
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// The straight-line guess `seen + velocity * since`, before any correction.
    pub extrapolated: Vec3,
    /// Where the threat presumably is: the last valid step (feet, metres).
    pub presumed: Vec3,
    /// The node nearest to `presumed`.
    pub presumed_node: u32,
    /// What ended the extrapolation before `extrapolated`, if anything.
    pub corrected_by: Correction,
    /// The observer sees the presumed spot (its point plus the eye height). Only when no step
    /// but the sighting itself was valid, since a visible step ends the extrapolation.
    pub presumed_visible: bool,
    /// The observer's node: the node nearest to its feet (eye minus the eye height).
    pub observer_node: u32,
    /// The shortest graph path from `presumed_node` to `observer_node`, both included; empty
    /// when the graph does not connect them.
    pub path: Vec<u32>,
    /// The first node on `path` the observer sees: where the threat likely reappears. `None`
    /// when `path` is empty or the observer sees none of its nodes.
    pub aim_node: Option<u32>,
    /// Where to aim: the aim node plus the eye height.
    pub aim: Option<Vec3>,
    /// Seconds the threat needs from the presumed node to the aim node (path cost / speed);
    /// infinite when there is no aim node.
    pub time_to_aim: f32,
    /// The valid extrapolation steps, from `seen` to `presumed` (at least `seen`).
    pub steps: Vec<Vec3>,
}

fn check_point(p: Vec3, name: &'static str) -> Result<()> {
    if p.is_finite() && p.abs().max_element() <= MAX_COORDINATE {
        Ok(())
    } else {
        Err(Error::param(
            name,
            p,
            format!("finite coordinates within {MAX_COORDINATE:e} of the origin"),
        ))
    }
}

/// Predicts where a threat last seen as `sighting` is now and where the observer (its eye at
/// `observer_eye`) should aim; see the module docs. This is [`predict_many`] with one query:
/// for several threats or observers call that instead, which makes the same three engine calls
/// for the whole batch that this makes for one. Errors: an empty graph, a non-finite or
/// too-large position or velocity, a negative or non-finite `since`, bad `p`, more than
/// [`MAX_STEPS`] steps, and the engine's own errors.
pub fn predict(
    engine: &Engine,
    scene: &Scene,
    graph: &NavGraph,
    observer_eye: Vec3,
    sighting: &Sighting,
    p: &PredictParams,
) -> Result<Prediction> {
    let query = PredictQuery {
        observer_eye,
        sighting: *sighting,
    };
    let mut one = predict_many(engine, scene, graph, &[query], p).map_err(|e| match e {
        Error::Query { source, .. } => *source,
        e => e,
    })?;
    one.pop()
        .ok_or_else(|| Error::InvalidInput("predict_many answered no query".into()))
}

/// Predicts every query as [`predict`] would, with the same answers bit for bit, in one
/// [`Engine::occluded`] call per stage for the whole batch (the wall probes of every query's
/// steps, then the sight lines of the steps that passed, then the sight lines of every path):
/// three calls in all, where a call per query makes three each. The CPU work between the
/// stages (snapping steps to nodes, the graph searches) runs on every core, query by query,
/// from [`PARALLEL_FROM`] queries up (fewer run on the calling thread). All queries share
/// `p`; an empty batch answers nothing. Errors: bad `p`; more than [`MAX_QUERIES`] queries or
/// [`MAX_BATCH_STEPS`] steps in all; an empty graph; a bad query as [`Error::Query`], naming
/// its index and holding the error [`predict`] gives for it; and the engine's own errors.
pub fn predict_many(
    engine: &Engine,
    scene: &Scene,
    graph: &NavGraph,
    queries: &[PredictQuery],
    p: &PredictParams,
) -> Result<Vec<Prediction>> {
    let mut walks = plan(graph, queries, p)?;
    let nodes = graph.nodes();
    let open = vec![true; graph.edges().len()];
    let lift = Vec3::Y * p.eye_height;

    // Stage 1, walls: each step's node in reach in the time had, and no wall between the two.
    if walks.len() < PARALLEL_FROM {
        let mut s = Scratch::new(graph);
        walks
            .iter_mut()
            .for_each(|w| w.snap(graph, &open, &mut s, p));
    } else {
        walks
            .par_iter_mut()
            .for_each_init(|| Scratch::new(graph), |s, w| w.snap(graph, &open, s, p));
    }
    let probes = walks.iter().map(|w| w.probes(nodes));
    let blocked = Traced::run(engine, scene, Mask::FIRE, probes)?;
    for (i, w) in walks.iter_mut().enumerate() {
        w.stop_at_walls(|k| blocked.get(i, k));
    }

    // Stage 2, sight: the steps that pass the walls test, seen from each query's observer.
    let sight = walks.iter().zip(queries);
    let sight = sight.map(|(w, q)| w.sight_lines(q.observer_eye, lift));
    let hidden = Traced::run(engine, scene, Mask::SIGHT, sight)?;
    for (i, w) in walks.iter_mut().enumerate() {
        w.stop_at_sight(|k| hidden.get(i, k));
    }

    // Stage 3, aim: the shortest path to the observer, and the first node on it in view.
    let route = |search: &mut Search, (w, q): (&Walk, &PredictQuery)| {
        let observer_node = nearest(graph, q.observer_eye - lift);
        let path = search.path(graph, &open, w.presumed_node(), observer_node);
        (observer_node, path.unwrap_or_default())
    };
    let routes: Vec<(u32, Vec<u32>)> = if walks.len() < PARALLEL_FROM {
        let mut search = Search::new(graph.len());
        walks
            .iter()
            .zip(queries)
            .map(|x| route(&mut search, x))
            .collect()
    } else {
        let new = || Search::new(graph.len());
        walks.par_iter().zip(queries).map_init(new, route).collect()
    };
    let aims = walks.iter().zip(queries).zip(&routes).map(|((w, q), r)| {
        let to = |at: Vec3| Segment::new(q.observer_eye, at + lift);
        let path = r.1.iter().map(move |&n| to(nodes[n as usize]));
        path.chain(std::iter::once(to(w.presumed())))
    });
    let aims = Traced::run(engine, scene, Mask::SIGHT, aims)?;
    let answers = walks.into_iter().zip(routes).enumerate();
    Ok(answers
        .map(|(i, (w, (observer_node, path)))| {
            w.finish(graph, lift, observer_node, path, |k| aims.get(i, k))
        })
        .collect())
}

/// Checks `p`, the batch and every query, and walks each query's straight line; nothing is
/// traced before all of it passes.
fn plan(graph: &NavGraph, queries: &[PredictQuery], p: &PredictParams) -> Result<Vec<Walk>> {
    p.validate()?;
    let split = "split the queries into several predict_many calls";
    check_size(
        "queries in one predict_many call",
        queries.len() as u64,
        MAX_QUERIES,
        split,
    )?;
    if !queries.is_empty() && graph.is_empty() {
        return Err(Error::InvalidInput(
            "the nav graph has no nodes: a threat cannot be placed on it; generate a graph \
             for this scene (nav::generate)"
                .into(),
        ));
    }
    let counts = queries
        .iter()
        .enumerate()
        .map(|(index, q)| {
            Walk::steps(q, p).map_err(|e| Error::Query {
                index,
                source: Box::new(e),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    check_size(
        "extrapolation steps of all the queries of one predict_many call",
        counts.iter().map(|&n| n as u64).sum(),
        MAX_BATCH_STEPS,
        &format!("{split}, or use a longer step (PredictParams::step)"),
    )?;
    let walks = queries.iter().zip(counts);
    Ok(walks.map(|(q, n)| Walk::new(q, p, n)).collect())
}

/// One thread's graph search, and the least cost to each node the search reached (infinite
/// elsewhere, between uses).
struct Scratch {
    search: Search,
    reach: Vec<f32>,
}

impl Scratch {
    fn new(graph: &NavGraph) -> Scratch {
        Scratch {
            search: Search::new(graph.len()),
            reach: vec![f32::INFINITY; graph.len()],
        }
    }
}

/// One query between the stages: its straight line in steps, and where each test ended it.
struct Walk {
    extrapolated: Vec3,
    /// Step `k` of `0..=n`: `seen + velocity * times[k]`.
    points: Vec<Vec3>,
    times: Vec<f32>,
    /// `max(|velocity|, min_speed)`.
    speed: f32,
    /// Each step's nearest node.
    snapped: Vec<u32>,
    /// Whether each step's node is out of reach along the graph in the time had.
    far: Vec<bool>,
    /// The first step the walls test fails (`n + 1` when none).
    walls_end: usize,
    /// Steps `0..end` are valid.
    end: usize,
    corrected_by: Correction,
}

impl Walk {
    /// Checks one query; answers its number of steps after the sighting.
    fn steps(q: &PredictQuery, p: &PredictParams) -> Result<usize> {
        let s = &q.sighting;
        check_point(q.observer_eye, "observer_eye")?;
        check_point(s.seen, "sighting.seen")?;
        check_point(s.velocity, "sighting.velocity")?;
        if !(s.since.is_finite() && s.since >= 0.0) {
            return Err(Error::param(
                "sighting.since",
                s.since,
                "a finite number of seconds, 0 or more",
            ));
        }
        let distance = f64::from(s.velocity.length()) * f64::from(s.since);
        let count = (distance / f64::from(p.step)).ceil();
        check_size(
            "extrapolation steps (|velocity| x since / step)",
            if count.is_finite() {
                count as u64
            } else {
                u64::MAX
            },
            MAX_STEPS,
            "use a shorter since, a lower velocity, or a longer step (PredictParams::step, --step)",
        )?;
        check_point(s.seen + s.velocity * s.since, "seen + velocity x since")?;
        Ok(count as usize)
    }

    /// Walks a checked query's straight line in `n` steps after the sighting.
    fn new(q: &PredictQuery, p: &PredictParams, n: usize) -> Walk {
        let s = &q.sighting;
        let times: Vec<f32> = (0..=n)
            .map(|k| s.since * (k as f64 / n.max(1) as f64) as f32)
            .collect();
        Walk {
            extrapolated: s.seen + s.velocity * s.since,
            points: times.iter().map(|&t| s.seen + s.velocity * t).collect(),
            times,
            speed: s.velocity.length().max(p.min_speed),
            snapped: Vec::new(),
            far: Vec::new(),
            walls_end: n + 1,
            end: n + 1,
            corrected_by: Correction::None,
        }
    }

    /// Snaps each step to its nearest node and tests it against the time had: graph cost
    /// from the last-seen node <= `slack * speed * t_k` plus both snapping distances.
    fn snap(&mut self, graph: &NavGraph, open: &[bool], s: &mut Scratch, p: &PredictParams) {
        let nodes = graph.nodes();
        self.snapped = self.points.iter().map(|&q| nearest(graph, q)).collect();
        let snap: Vec<f32> = (self.points.iter().zip(&self.snapped))
            .map(|(q, &i)| q.distance(nodes[i as usize]))
            .collect();
        let allowed = |k: usize| p.slack * self.speed * self.times[k] + snap[0] + snap[k];
        let steps = 0..self.points.len();
        let cap = steps.clone().map(allowed).fold(0.0f32, f32::max);
        let settled = s.search.run(graph, open, self.snapped[0], cap);
        for &(v, c) in &settled {
            s.reach[v as usize] = c;
        }
        let far = steps.map(|k| s.reach[self.snapped[k] as usize] > allowed(k));
        let far = far.collect();
        for &(v, _) in &settled {
            s.reach[v as usize] = f32::INFINITY;
        }
        self.far = far;
    }

    /// The graph is as fine as its nodes: a step may lie across a wall from its own node.
    /// Probes from the node to each step after the sighting, at the height of a wall, below a
    /// window sill.
    fn probes<'a>(&'a self, nodes: &'a [Vec3]) -> impl Iterator<Item = Segment> + 'a {
        (1..self.points.len()).map(move |k| {
            let node = nodes[self.snapped[k] as usize];
            let up = node.y + PROBE_HEIGHT;
            Segment::new(node.with_y(up), self.points[k].with_y(up))
        })
    }

    /// Ends the walk at the first step out of reach or behind a wall from its node
    /// (`blocked(k - 1)`: the probe to step `k`).
    fn stop_at_walls(&mut self, blocked: impl Fn(usize) -> bool) {
        let n1 = self.points.len();
        self.walls_end = (1..n1)
            .find(|&k| self.far[k] || blocked(k - 1))
            .unwrap_or(n1);
    }

    /// The observer's sight lines to the spots of the steps that passed the walls test.
    fn sight_lines(&self, eye: Vec3, lift: Vec3) -> impl Iterator<Item = Segment> + '_ {
        (1..self.walls_end).map(move |k| Segment::new(eye, self.points[k] + lift))
    }

    /// Ends the walk at the first step the observer sees (`hidden(k - 1)` false: the sight
    /// line to step `k`) or at the walls, whichever comes first.
    fn stop_at_sight(&mut self, hidden: impl Fn(usize) -> bool) {
        let walls_end = self.walls_end;
        let sight_end = (0..walls_end - 1)
            .find(|&i| !hidden(i))
            .map_or(walls_end, |i| i + 1);
        (self.end, self.corrected_by) = if sight_end < walls_end {
            (sight_end, Correction::Sight)
        } else if walls_end < self.points.len() {
            (walls_end, Correction::Walls)
        } else {
            (self.points.len(), Correction::None)
        };
    }

    fn presumed(&self) -> Vec3 {
        self.points[self.end - 1]
    }

    fn presumed_node(&self) -> u32 {
        self.snapped[self.end - 1]
    }

    /// The answer, from the path to the observer's node and which of its sight lines (then
    /// the presumed spot's, at `path.len()`) are hidden.
    fn finish(
        mut self,
        graph: &NavGraph,
        lift: Vec3,
        observer_node: u32,
        path: Vec<u32>,
        hidden: impl Fn(usize) -> bool,
    ) -> Prediction {
        let nodes = graph.nodes();
        let aim_node = (0..path.len()).find(|&i| !hidden(i)).map(|i| path[i]);
        let (presumed, presumed_node) = (self.presumed(), self.presumed_node());
        self.points.truncate(self.end);
        Prediction {
            extrapolated: self.extrapolated,
            presumed,
            presumed_node,
            corrected_by: self.corrected_by,
            presumed_visible: !hidden(path.len()),
            observer_node,
            aim_node,
            aim: aim_node.map(|a| nodes[a as usize] + lift),
            time_to_aim: aim_node
                .map_or(f32::INFINITY, |a| path_cost(graph, &path, a) / self.speed),
            path,
            steps: self.points,
        }
    }
}

/// Every query's segments of one stage, traced in one engine call.
struct Traced {
    bits: Occlusion,
    /// Where each query's segments begin.
    starts: Vec<usize>,
}

impl Traced {
    fn run<I: Iterator<Item = Segment>>(
        engine: &Engine,
        scene: &Scene,
        mask: Mask,
        per_query: impl Iterator<Item = I>,
    ) -> Result<Traced> {
        let (mut all, mut starts) = (Vec::new(), Vec::new());
        for segments in per_query {
            starts.push(all.len());
            all.extend(segments);
        }
        let bits = engine.occluded(scene, &all, mask)?;
        Ok(Traced { bits, starts })
    }

    /// Whether segment `i` of query `query` is occluded.
    fn get(&self, query: usize, i: usize) -> bool {
        self.bits.get(self.starts[query] + i)
    }
}

/// Graph cost along `path` from its start to `to` (a node on it): a prefix of a least-cost
/// path is a least-cost path.
fn path_cost(graph: &NavGraph, path: &[u32], to: u32) -> f32 {
    let mut cost = 0.0;
    for step in path.windows(2) {
        if step[0] == to {
            break;
        }
        let edge = graph
            .neighbours(step[0])
            .iter()
            .find(|(v, _)| *v == step[1]);
        cost += edge.map_or(f32::INFINITY, |&(_, e)| graph.costs()[e as usize]);
    }
    cost
}

/// The node nearest to `q` (the graph is not empty).
fn nearest(graph: &NavGraph, q: Vec3) -> u32 {
    graph.nearest(q).unwrap_or(0)
}
