//! Individual plans: the greedy fixed-depth look-ahead over (node, time) of Darken, McCue and
//! Guerrero's "Path Selection", its cost functions, and the catch-up fallback.
//!
//! A plan is `lookahead` actions from where the member stands: walk an edge (taking its cost,
//! the length times the movement multiplier, over [`PlanParams::speed`]) or wait
//! [`PlanParams::wait_seconds`]. Each action is priced at the node and time it ends by the
//! weighted sum of eight terms, each in `[0, 1]` (the `range` of a term is where it reaches 1):
//!
//! | term | value |
//! |---|---|
//! | dispersion (too little) | `max(min_distance - nearest teammate, 0) / min_distance` |
//! | come together (too much) | `min(max(farthest teammate - max_distance, 0) / come_together_range, 1)` |
//! | distance to leader | `min(distance to the leader / leader_range, 1)`; 0 for the leader |
//! | progress (string pull) | `clamp(1/2 + (S(w) - S(start)) / (2 R), 0, 1)`, `R` = lookahead x longest edge |
//! | cover | the node's exposure ([`World::exposure`]) |
//! | distance moved | edge length / longest edge (0 for a wait) |
//! | time | action time / longest action time |
//! | target sector in view | 1 - share of the sector's nodes the node sees (0 without a sector) |
//!
//! Teammates' positions are their forecasts at that time ([`Eta::position`]). `S(w)` is
//! `StringPullCost`: the distance from `w` to `ComputeStringPullPoint(w, path, current index)`
//! plus the path's length from that point to its end.
//!
//! The search keeps, per depth, the cheapest way found to each node (so its work is bounded by
//! the nodes within `lookahead` steps times the depth), skips every action the ETA manager
//! refuses, and returns the cheapest plan of full depth whose last node the member can hold
//! from then on (or of the deepest depth reached, when the graph or the others allow no more).

use super::eta::{Eta, Stop};
use super::world::{string_pull_point, Path, PathSearch, World};
use crate::{Error, Result};

/// Movement weights, ranges and timings. Distances in metres, times in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanParams {
    /// Actions per plan. Default 5 (the seed's largest without "chugs").
    pub lookahead: u32,
    /// Walking speed on an edge of multiplier 1. Default 1.4 m/s (a cautious walk).
    pub speed: f32,
    /// Duration of the wait action. Default 1 s.
    pub wait_seconds: f32,
    /// Each member plans again this often, the members' turns staggered evenly. Default 2 s.
    pub replan_seconds: f32,
    /// Closer than this to a teammate costs dispersion. Default 4 m.
    pub min_distance: f32,
    /// Farther than this from the farthest teammate costs coming together. Default 15 m.
    pub max_distance: f32,
    /// Beyond `max_distance`, the come-together term reaches 1 after this much more. Default 10 m.
    pub come_together_range: f32,
    /// The distance-to-leader term reaches 1 here. Default 30 m.
    pub leader_range: f32,
    /// A member farther than this from its leader walks a plain A* path to rejoin it (the whole
    /// path, before it plans again). Default 30 m.
    pub catch_up_distance: f32,
    /// A member that has stood on one node this long while it is behind its leader on the
    /// path (a follower), or while nobody is straggling (the leader), or while its
    /// destination waits, is held back: a greedy plan cannot get it out of a dead end, so it
    /// plans a plain A* path (to its leader, along the team path, or to its destination).
    /// Default 6 s.
    pub stall_seconds: f32,
    /// A member whose progress (its `StringPullCost`) has not improved by a metre for this
    /// long is held back too, even while it moves: the greedy plans are circling (a creek bed
    /// whose far bank is in sight, a room whose window shows the path). Default 10 s.
    pub progress_seconds: f32,
    pub weights: Weights,
}

/// Weight of each term of a step's cost: [`Terms`] by name. Defaults: dispersion 1, come
/// together 1, leader 0.5, string pull 3 (progress must outweigh the discomforts of moving),
/// cover 0.5, distance 0.2, time 0.2, sector 0.3.
pub type Weights = Terms;

impl PlanParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> PlanParams {
        PlanParams {
            lookahead: 5,
            speed: 1.4,
            wait_seconds: 1.0,
            replan_seconds: 2.0,
            min_distance: 4.0,
            max_distance: 15.0,
            come_together_range: 10.0,
            leader_range: 30.0,
            catch_up_distance: 30.0,
            stall_seconds: 6.0,
            progress_seconds: 10.0,
            weights: Weights {
                dispersion: 1.0,
                come_together: 1.0,
                leader: 0.5,
                string_pull: 3.0,
                cover: 0.5,
                distance: 0.2,
                time: 0.2,
                sector: 0.3,
            },
        }
    }

    /// Largest look-ahead accepted.
    pub const MAX_LOOKAHEAD: u32 = 64;

    pub(crate) fn validate(&self) -> Result<()> {
        let w = &self.weights;
        let positive = [
            self.speed,
            self.wait_seconds,
            self.replan_seconds,
            self.min_distance,
            self.max_distance,
            self.come_together_range,
            self.leader_range,
            self.catch_up_distance,
            self.stall_seconds,
            self.progress_seconds,
        ];
        let weights = [
            w.dispersion,
            w.come_together,
            w.leader,
            w.string_pull,
            w.cover,
            w.distance,
            w.time,
            w.sector,
        ];
        if !(1..=Self::MAX_LOOKAHEAD).contains(&self.lookahead)
            || positive
                .iter()
                .any(|v| !(v.is_finite() && *v > 0.0 && *v < 1e6))
            || weights
                .iter()
                .any(|v| !(v.is_finite() && *v >= 0.0 && *v < 1e6))
        {
            return Err(Error::InvalidInput(format!(
                "movement parameters: look-ahead {} must be 1..={}, speeds, times and distances \
                 positive and finite, weights finite and >= 0",
                self.lookahead,
                Self::MAX_LOOKAHEAD
            )));
        }
        Ok(())
    }
}

impl Default for PlanParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// What one member plans against.
pub struct Task<'a> {
    pub world: &'a World,
    pub eta: &'a Eta,
    /// The planning member (an index into the ETA manager).
    pub member: u32,
    /// Every member of its team, itself included.
    pub team: &'a [u32],
    pub leader: u32,
    /// The path it makes progress along (the team path, or its own path to its destination).
    pub route: &'a Route,
    /// `CurrentSPPIndex`: its string-pull index into `path`.
    pub spp: usize,
    /// Share of the target sector's nodes each node sees, when a sector was given.
    pub sector_view: Option<&'a [f32]>,
    /// Where it stands and since when it may leave.
    pub start: u32,
    pub now: f32,
}

/// The terms of one step, unweighted (see the module docs), or their weights.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Terms {
    pub dispersion: f32,
    pub come_together: f32,
    pub leader: f32,
    pub string_pull: f32,
    pub cover: f32,
    pub distance: f32,
    pub time: f32,
    pub sector: f32,
}

impl Terms {
    /// The step's cost: each term times its weight, summed.
    #[must_use]
    pub fn weighted(&self, w: &Weights) -> f32 {
        w.dispersion * self.dispersion
            + w.come_together * self.come_together
            + w.leader * self.leader
            + w.string_pull * self.string_pull
            + w.cover * self.cover
            + w.distance * self.distance
            + w.time * self.time
            + w.sector * self.sector
    }
}

/// A path a member makes progress along (the team path, or its own path to its destination),
/// with what `StringPullCost` needs: the path's length from each of its nodes to its end, and
/// every node's walking distance to that end.
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    pub nodes: Vec<u32>,
    /// `rest[i]`: the path's length from `nodes[i]` to its end.
    pub rest: Vec<f32>,
    /// Every graph node's shortest walking distance (edge lengths) to the path's end.
    pub to_end: Vec<f32>,
}

/// Sight lines longer than this factor times the straight distance by the graph are not ways
/// for string pulling (see [`Route::can_pull`]).
const PULL_DETOUR: f32 = 1.25;
/// Nor are sight lines that climb more than this (metres) plus [`PULL_SLOPE`] times their
/// run: the floor seen up a stairwell is not a straight walk away.
const PULL_RISE: f32 = 1.0;
const PULL_SLOPE: f32 = 0.5;

impl Route {
    /// The route along `nodes` (at least one) on `world`'s graph.
    #[must_use]
    pub fn new(world: &World, nodes: Vec<u32>) -> Route {
        let g = world.graph();
        let mut rest = vec![0.0f32; nodes.len()];
        for i in (0..nodes.len().saturating_sub(1)).rev() {
            rest[i] = rest[i + 1]
                + g.nodes()[nodes[i] as usize].distance(g.nodes()[nodes[i + 1] as usize]);
        }
        let to_end = super::world::distances_from(g, *nodes.last().expect("a node"));
        Route {
            nodes,
            rest,
            to_end,
        }
    }

    /// `CanSee(w, path[i])` for string pulling: line of sight that is also a way. The sight
    /// line must not save more than it could by walking: the graph's distance to the route's
    /// end from `w` is at most that from the path node plus `PULL_DETOUR` times the
    /// straight distance between them (plus a metre), and it climbs no more than a walkable
    /// slope would. A far bank seen across a creek, the street seen through a window, or the
    /// landing seen up a stairwell is in sight but not on the way.
    #[must_use]
    pub fn can_pull(&self, world: &World, w: u32, i: usize) -> bool {
        let v = self.nodes[i];
        if !world.can_see(w, v) {
            return false;
        }
        let nodes = world.graph().nodes();
        let (a, b) = (nodes[w as usize], nodes[v as usize]);
        let d = a.distance(b);
        let run = glam::Vec2::new(a.x - b.x, a.z - b.z).length();
        self.to_end[w as usize] <= self.to_end[v as usize] + PULL_DETOUR * d + 1.0
            && (a.y - b.y).abs() <= PULL_RISE + PULL_SLOPE * run
    }

    /// `ComputeStringPullPoint(w, path, spp)` with [`Route::can_pull`] as `CanSee`.
    #[must_use]
    pub fn pull_point(&self, world: &World, w: u32, spp: usize) -> usize {
        string_pull_point(|w, i| self.can_pull(world, w, i), w, &self.nodes, spp)
    }

    /// `StringPullCost(m, f, w, goal)`: the distance from `w` to its string-pull point plus
    /// the path's length from there.
    ///
    /// One guard is added to the published procedure: when `w` has no way to any node of
    /// the path from the member's index on, `ComputeStringPullPoint` runs to the goal and the
    /// straight line to it passes through whatever hides the path, so every blind corner
    /// nearer the goal would look like progress and hold the member there. Such a `w` is
    /// priced from the member's current string-pull point instead (the way back to the path,
    /// then along it).
    #[must_use]
    pub fn pull_cost(&self, world: &World, w: u32, spp: usize) -> f32 {
        let mut i = self.pull_point(world, w, spp);
        if i + 1 == self.nodes.len() && !self.can_pull(world, w, i) {
            i = spp.min(i);
        }
        let nodes = world.graph().nodes();
        nodes[self.nodes[i] as usize].distance(nodes[w as usize]) + self.rest[i]
    }
}

#[derive(Clone, Copy, Debug)]
struct State {
    node: u32,
    time: f32,
    cost: f32,
    parent: u32,
}

/// A reusable planner (its buffers are kept between plans).
#[derive(Clone, Debug, Default)]
pub struct Planner {
    search: Layers,
    longest: Option<(f32, f32)>,
    /// Per node: `(plan number, StringPullCost)`, each computed once per plan.
    pull: Vec<std::cell::Cell<(u32, f32)>>,
    plans: u32,
}

/// The look-ahead's buffers: the states reached after each action, and per node its slot in
/// the layer being built.
#[derive(Clone, Debug, Default)]
struct Layers {
    layers: Vec<Vec<State>>,
    /// Per node: `(stamp, index in the layer being built)`.
    slot: Vec<(u32, u32)>,
    stamp: u32,
}

/// A plan: the stops from where the member stands (its first stop) on.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub stops: Vec<Stop>,
    pub cost: f32,
}

impl Planner {
    #[must_use]
    pub fn new() -> Planner {
        Planner::default()
    }

    /// The member's look-ahead plan, or `None` when every first action is refused (it keeps
    /// its forecast).
    pub fn plan(&mut self, task: &Task<'_>, p: &PlanParams) -> Option<Plan> {
        let graph = task.world.graph();
        self.start_plan(graph.len());
        let (longest_edge, longest_cost) = *self.longest.get_or_insert_with(|| {
            graph
                .edges()
                .iter()
                .zip(graph.costs())
                .fold((1e-3f32, 1e-3f32), |(l, c), (e, &k)| {
                    (l.max(e.length), c.max(k))
                })
        });
        let scorer = Scorer {
            task,
            p,
            pull: &self.pull,
            plan_no: self.plans,
            others: task
                .team
                .iter()
                .copied()
                .filter(|&o| o != task.member)
                .collect(),
            s_start: task.route.pull_cost(task.world, task.start, task.spp),
            reach: p.lookahead as f32 * longest_edge,
            longest_edge,
            longest_time: (longest_cost / p.speed).max(p.wait_seconds),
        };
        let deepest = self.search.expand(&scorer);
        self.search.best_end(deepest, task)
    }

    /// Sizes the buffers for a graph of `n` nodes (starting afresh when it changed) and
    /// numbers the new plan, so string-pull costs cached by earlier plans go stale.
    fn start_plan(&mut self, n: usize) {
        if self.search.slot.len() != n {
            self.search.slot = vec![(0, 0); n];
            self.search.stamp = 0;
            self.longest = None;
            self.pull = vec![std::cell::Cell::new((0, 0.0)); n];
            self.plans = 0;
        }
        self.plans = self.plans.wrapping_add(1);
        if self.plans == 0 {
            self.pull.iter().for_each(|c| c.set((0, 0.0)));
            self.plans = 1;
        }
    }
}

/// Prices the steps of one plan: the task, the parameters, the other members, the
/// string-pull costs cached per node for this plan, and the scales the terms are divided by.
struct Scorer<'a, 't> {
    task: &'a Task<'t>,
    p: &'a PlanParams,
    pull: &'a [std::cell::Cell<(u32, f32)>],
    plan_no: u32,
    /// The team's other members.
    others: Vec<u32>,
    /// The string-pull cost where the member stands.
    s_start: f32,
    /// How far the look-ahead can go: its depth times the longest edge.
    reach: f32,
    longest_edge: f32,
    /// The longest one action can take: the costliest edge's walk, or a wait.
    longest_time: f32,
}

impl Scorer<'_, '_> {
    /// `StringPullCost` of node `v`, computed once per plan.
    fn pull_cost(&self, v: u32) -> f32 {
        let (no, s) = self.pull[v as usize].get();
        if no == self.plan_no {
            return s;
        }
        let task = self.task;
        let s = task.route.pull_cost(task.world, v, task.spp);
        self.pull[v as usize].set((self.plan_no, s));
        s
    }

    /// The terms of a step ending at node `v` at time `t`, `length` metres walked over
    /// `duration` seconds.
    fn terms(&self, v: u32, t: f32, length: f32, duration: f32) -> Terms {
        let (task, p) = (self.task, self.p);
        let world = task.world;
        let nodes = world.graph().nodes();
        let here = nodes[v as usize];
        let (mut nearest, mut farthest, mut leader) = (f32::INFINITY, 0.0f32, 0.0f32);
        for &o in &self.others {
            let d = task.eta.position(o, t, nodes).distance(here);
            nearest = nearest.min(d);
            farthest = farthest.max(d);
            if o == task.leader {
                leader = d;
            }
        }
        let s = self.pull_cost(v);
        Terms {
            dispersion: if self.others.is_empty() {
                0.0
            } else {
                (p.min_distance - nearest).max(0.0) / p.min_distance
            },
            come_together: ((farthest - p.max_distance).max(0.0) / p.come_together_range).min(1.0),
            leader: (leader / p.leader_range).min(1.0),
            string_pull: (0.5 + (s - self.s_start) / (2.0 * self.reach)).clamp(0.0, 1.0),
            cover: world.exposure()[v as usize],
            distance: length / self.longest_edge,
            time: duration / self.longest_time,
            sector: task.sector_view.map_or(0.0, |sv| 1.0 - sv[v as usize]),
        }
    }
}

impl Layers {
    /// Grows the look-ahead from where the member stands, one layer per action, up to the
    /// plan's depth or the first empty layer; returns the deepest layer reached.
    fn expand(&mut self, scorer: &Scorer<'_, '_>) -> usize {
        let (task, p) = (scorer.task, scorer.p);
        let depth = p.lookahead as usize;
        self.layers.resize_with(depth + 1, Vec::new);
        for l in &mut self.layers {
            l.clear();
        }
        self.layers[0].push(State {
            node: task.start,
            time: task.now,
            cost: 0.0,
            parent: 0,
        });
        let mut deepest = 0;
        for k in 0..depth {
            self.stamp = self.stamp.wrapping_add(1);
            if self.stamp == 0 {
                self.slot.fill((0, 0));
                self.stamp = 1;
            }
            self.grow(k, scorer);
            if self.layers[k + 1].is_empty() {
                break;
            }
            deepest = k + 1;
        }
        deepest
    }

    /// Layer `k + 1` from layer `k`: every state waits or walks an edge where the ETA manager
    /// allows; per node the cheapest arrival (then the earliest) is kept.
    fn grow(&mut self, k: usize, scorer: &Scorer<'_, '_>) {
        let (task, p) = (scorer.task, scorer.p);
        let graph = task.world.graph();
        let (offsets, adjacency) = graph.adjacency();
        let costs = graph.costs();
        let (eta, m, w) = (task.eta, task.member, &p.weights);
        let stamp = self.stamp;
        let (done, rest) = self.layers.split_at_mut(k + 1);
        let (layer, next) = (&done[k], &mut rest[0]);
        for (si, s) in layer.iter().enumerate() {
            let u = s.node;
            let mut offer = |v: u32, time: f32, step: f32, slot: &mut [(u32, u32)]| {
                let cost = s.cost + step;
                let st = State {
                    node: v,
                    time,
                    cost,
                    parent: si as u32,
                };
                let (seen, at) = slot[v as usize];
                if seen != stamp {
                    slot[v as usize] = (stamp, next.len() as u32);
                    next.push(st);
                } else {
                    let old = &mut next[at as usize];
                    if (cost, time) < (old.cost, old.time) {
                        *old = st;
                    }
                }
            };
            let t = s.time;
            let tw = t + p.wait_seconds;
            if eta.free(u, t, tw, m) {
                let step = scorer.terms(u, tw, 0.0, p.wait_seconds).weighted(w);
                offer(u, tw, step, &mut self.slot);
            }
            for &(v, e) in
                &adjacency[offsets[u as usize] as usize..offsets[u as usize + 1] as usize]
            {
                let dt = costs[e as usize] / p.speed;
                let ta = t + dt;
                if eta.free(u, t, ta, m) && eta.free(v, t, ta, m) {
                    let length = graph.edges()[e as usize].length;
                    let step = scorer.terms(v, ta, length, dt).weighted(w);
                    offer(v, ta, step, &mut self.slot);
                }
            }
        }
    }

    /// The cheapest end the member can hold from then on, deepest layer first, traced back to
    /// the start as a plan.
    fn best_end(&self, deepest: usize, task: &Task<'_>) -> Option<Plan> {
        let (eta, m) = (task.eta, task.member);
        for d in (1..=deepest).rev() {
            let best = self.layers[d]
                .iter()
                .enumerate()
                .filter(|(_, s)| eta.free(s.node, s.time, f32::INFINITY, m))
                .min_by(|a, b| {
                    (a.1.cost, a.1.time, a.1.node)
                        .partial_cmp(&(b.1.cost, b.1.time, b.1.node))
                        .unwrap_or(std::cmp::Ordering::Equal)
                });
            if let Some((i, s)) = best {
                let cost = s.cost;
                let mut chain = vec![(s.node, s.time)];
                let mut at = i;
                for l in (1..=d).rev() {
                    at = self.layers[l][at].parent as usize;
                    let q = self.layers[l - 1][at];
                    chain.push((q.node, q.time));
                }
                chain.reverse();
                return Some(Plan {
                    stops: stops_of(&chain),
                    cost,
                });
            }
        }
        None
    }
}

/// Stops from `(node, time)` pairs, each the end of one action: consecutive pairs at one node
/// are waits, and a walk to a new node departs when the previous action ended.
fn stops_of(chain: &[(u32, f32)]) -> Vec<Stop> {
    let mut stops = vec![Stop {
        node: chain[0].0,
        arrive: chain[0].1,
        depart: f32::INFINITY,
    }];
    let mut prev_time = chain[0].1;
    for &(node, time) in &chain[1..] {
        let last = stops.last_mut().expect("one stop");
        if node != last.node {
            last.depart = prev_time;
            stops.push(Stop {
                node,
                arrive: time,
                depart: f32::INFINITY,
            });
        }
        prev_time = time;
    }
    stops
}

/// A timed plain path (the catch-up fallback): along `path` from its first node at `now`,
/// walking each edge when the ETA manager allows, waiting otherwise (at most `max_waits`
/// times), for at most `max_moves` edges; cut back to the last stop the member can hold from
/// then on. `None` when that leaves no move.
#[must_use]
#[allow(clippy::too_many_arguments)] // public; its two bounds are the caller's to choose
pub fn timed_path(
    world: &World,
    eta: &Eta,
    m: u32,
    path: &Path,
    now: f32,
    p: &PlanParams,
    max_moves: usize,
    max_waits: usize,
) -> Option<Vec<Stop>> {
    let graph = world.graph();
    let mut chain = vec![(path.nodes[0], now)];
    let (mut t, mut waits) = (now, 0);
    let mut i = 0;
    while i + 1 < path.nodes.len() && chain.len() <= max_moves + max_waits {
        let (u, v) = (path.nodes[i], path.nodes[i + 1]);
        let e = graph.neighbours(u).iter().find(|x| x.0 == v)?.1;
        let ta = t + graph.costs()[e as usize] / p.speed;
        if eta.free(u, t, ta, m) && eta.free(v, t, ta, m) {
            chain.push((v, ta));
            t = ta;
            i += 1;
            if i >= max_moves {
                break;
            }
        } else if waits < max_waits && eta.free(u, t, t + p.wait_seconds, m) {
            t += p.wait_seconds;
            chain.push((u, t));
            waits += 1;
        } else {
            break;
        }
    }
    while chain.len() > 1 {
        let &(node, time) = chain.last().expect("non-empty");
        if eta.free(node, time, f32::INFINITY, m) {
            break;
        }
        chain.pop();
    }
    let moved = chain.windows(2).any(|w| w[0].0 != w[1].0);
    moved.then(|| stops_of(&chain))
}

/// Plain A* path for catch-up (no cover weight).
pub fn plain_path(search: &mut PathSearch, world: &World, from: u32, to: u32) -> Option<Path> {
    search.find(world, from, to, 0.0)
}
