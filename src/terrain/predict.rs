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

use super::relations::Search;
use crate::limits::{check_size, MAX_COORDINATE};
use crate::nav::NavGraph;
use crate::{Engine, Error, Mask, Result, Scene, Segment};
use glam::Vec3;
use rayon::prelude::*;

/// Height above a step's node (metres) of the probe from the node to the step: above a kerb or
/// a step, below a window sill (1 m in the built-in levels).
pub const PROBE_HEIGHT: f32 = 0.9;

/// Most extrapolation steps one prediction walks (`|velocity| * since / step`, rounded up).
pub const MAX_STEPS: u64 = 1 << 14;

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
/// `observer_eye`) should aim; see the module docs. Errors: an empty graph, a non-finite or
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
    p.validate()?;
    if graph.is_empty() {
        return Err(Error::InvalidInput(
            "the nav graph has no nodes: a threat cannot be placed on it; generate a graph \
             for this scene (nav::generate)"
                .into(),
        ));
    }
    check_point(observer_eye, "observer_eye")?;
    check_point(sighting.seen, "sighting.seen")?;
    check_point(sighting.velocity, "sighting.velocity")?;
    let since = sighting.since;
    if !(since.is_finite() && since >= 0.0) {
        return Err(Error::param(
            "sighting.since",
            since,
            "a finite number of seconds, 0 or more",
        ));
    }
    let v_len = f64::from(sighting.velocity.length());
    let distance = v_len * f64::from(since);
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
    let extrapolated = sighting.seen + sighting.velocity * since;
    check_point(extrapolated, "seen + velocity x since")?;
    let n = count as usize;
    let times: Vec<f32> = (0..=n)
        .map(|k| since * (k as f64 / n.max(1) as f64) as f32)
        .collect();
    let points: Vec<Vec3> = times
        .iter()
        .map(|&t| sighting.seen + sighting.velocity * t)
        .collect();
    let speed = (v_len as f32).max(p.min_speed);

    // Walls: each step's node within reach of the last-seen node in the time had so far.
    let nodes = graph.nodes();
    let snapped: Vec<u32> = points.par_iter().map(|&q| nearest(graph, q)).collect();
    let snap: Vec<f32> = (0..=n)
        .map(|k| points[k].distance(nodes[snapped[k] as usize]))
        .collect();
    let allowed = |k: usize| p.slack * speed * times[k] + snap[0] + snap[k];
    let cap = (0..=n).map(allowed).fold(0.0f32, f32::max);
    let open = vec![true; graph.edges().len()];
    let mut search = Search::new(graph.len());
    let mut reach = vec![f32::INFINITY; graph.len()];
    for (v, c) in search.run(graph, &open, snapped[0], cap) {
        reach[v as usize] = c;
    }
    // The graph is as fine as its nodes: a step may lie across a wall from its own node.
    // Probe from the node to the step at the height of a wall, below a window sill.
    let probes: Vec<Segment> = (1..=n)
        .map(|k| {
            let node = nodes[snapped[k] as usize];
            let up = node.y + PROBE_HEIGHT;
            Segment::new(node.with_y(up), points[k].with_y(up))
        })
        .collect();
    let blocked = if probes.is_empty() {
        crate::Occlusion::new(0)
    } else {
        engine.occluded(scene, &probes, Mask::FIRE)?
    };
    let walls_end = (1..=n)
        .find(|&k| reach[snapped[k] as usize] > allowed(k) || blocked.get(k - 1))
        .unwrap_or(n + 1);

    // Sight: the steps that pass the walls test, traced in one batch.
    let lift = Vec3::Y * p.eye_height;
    let segments: Vec<Segment> = (1..walls_end)
        .map(|k| Segment::new(observer_eye, points[k] + lift))
        .collect();
    let sight_end = if segments.is_empty() {
        walls_end
    } else {
        let hidden = engine.occluded(scene, &segments, Mask::SIGHT)?;
        (0..segments.len())
            .find(|&i| !hidden.get(i))
            .map_or(walls_end, |i| i + 1)
    };
    let (end, corrected_by) = if sight_end < walls_end {
        (sight_end, Correction::Sight)
    } else if walls_end <= n {
        (walls_end, Correction::Walls)
    } else {
        (n + 1, Correction::None)
    };
    let presumed = points[end - 1];
    let presumed_node = snapped[end - 1];

    // Aim: the shortest path to the observer, and the first node on it in view.
    let observer_node = nearest(graph, observer_eye - lift);
    let path = search
        .path(graph, &open, presumed_node, observer_node)
        .unwrap_or_default();
    let mut segments: Vec<Segment> = path
        .iter()
        .map(|&i| Segment::new(observer_eye, nodes[i as usize] + lift))
        .collect();
    segments.push(Segment::new(observer_eye, presumed + lift));
    let hidden = engine.occluded(scene, &segments, Mask::SIGHT)?;
    let presumed_visible = !hidden.get(path.len());
    let aim_node = (0..path.len()).find(|&i| !hidden.get(i)).map(|i| path[i]);
    Ok(Prediction {
        extrapolated,
        presumed,
        presumed_node,
        corrected_by,
        presumed_visible,
        observer_node,
        aim_node,
        aim: aim_node.map(|a| nodes[a as usize] + lift),
        time_to_aim: aim_node.map_or(f32::INFINITY, |a| path_cost(graph, &path, a) / speed),
        path,
        steps: points[..end].to_vec(),
    })
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
