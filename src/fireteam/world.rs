//! What every team plans on: the nav graph, line of sight between its nodes, and the cover of
//! each node; the team path (cover-weighted A*) and plain shortest paths.

use crate::nav::{CostParams, NavGraph};
use crate::tables::{LosTable, TableFile};
use crate::tpm::{View, ViewParams};
use crate::{Error, Result};
use glam::Vec3;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// How a node's cover is computed from the visibility data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CoverParams {
    /// Solid angle of a standing body seen from another node when the table holds no intervis
    /// record for the pair: `silhouette / d^2` steradians (at least half a metre away).
    /// Default 0.95 m^2, the built-in humanoid's measured silhouette ([`ViewParams`]).
    pub silhouette: f32,
    /// Observers farther than this (metres) are not counted. Default 150 (the views' range).
    pub range: f32,
    /// Observers nearer than this count as this far (metres). Default 2 (the graph's
    /// spacing): nodes a few centimetres apart (the corners of a passage) are one spot, and
    /// would otherwise make their neighbours look many times more exposed than open ground.
    pub near: f32,
}

impl CoverParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> CoverParams {
        CoverParams {
            silhouette: 0.95,
            range: 150.0,
            near: 2.0,
        }
    }
}

impl Default for CoverParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// A nav graph, line of sight between every pair of its nodes (a complete table whose
/// waypoints are the graph's nodes), and each node's exposure.
///
/// **Exposure and cover** (Darken, McCue and Guerrero, "Cost Functions"): the exposed surface
/// of a body at node `i` — the visible solid angle — summed over every other node `j` that sees
/// it, each observer weighted alike:
/// `E_i = sum_j omega(j -> i)`, where `omega` is the pair's intervis record (the stencil
/// measurement, occlusion included; no record: nothing exposed) when the table holds intervis,
/// else `silhouette / max(d, near)^2`. [`World::exposure`] is `E_i` over the 99th percentile
/// of all `E` (so a few outliers do not flatten the rest), at most 1: the cover cost; the
/// node's cover is its inverse, `1 - exposure`.
pub struct World {
    graph: NavGraph,
    table: TableFile,
    exposure: Vec<f32>,
    /// Lowest ratio of an edge's cost to the straight distance between its ends (at most 1):
    /// scales the A* heuristic so it never overestimates.
    heuristic_scale: f32,
    views: Vec<std::sync::OnceLock<View>>,
    view_params: ViewParams,
    /// Shortest-path cost from each of [`LANDMARKS`] landmarks to every node, node-major
    /// (`[v * LANDMARKS + l]`; infinite where unreachable): the A* heuristic's lower bounds
    /// (Goldberg and Harrelson's ALT). On plain costs, and on the team path's costs with
    /// cover weight [`LANDMARK_COVER`]: the second bounds every search with at least that
    /// weight exactly as the triangle inequality allows.
    landmark_cost: [Vec<f32>; 2],
}

/// Landmarks of the A* heuristic.
pub const LANDMARKS: usize = 16;
/// Cover weight of the second set of landmark costs (the team path's default).
pub const LANDMARK_COVER: f32 = 1.0;

impl World {
    /// Checks that `table` is complete and its waypoints are `graph`'s nodes, and computes
    /// every node's exposure.
    pub fn new(graph: NavGraph, table: TableFile, params: &CoverParams) -> Result<World> {
        if graph.is_empty() {
            return Err(Error::InvalidInput(
                "the nav graph has no nodes: a fireteam needs somewhere to walk".into(),
            ));
        }
        if !table.los.is_complete() {
            return Err(Error::InvalidInput(
                "the table is one shard of a run: merge the shards first (`sightline merge`)"
                    .into(),
            ));
        }
        if table.waypoints.len() != graph.len()
            || table
                .waypoints
                .iter()
                .zip(graph.nodes())
                .any(|(a, b)| a != b)
        {
            return Err(Error::InvalidInput(format!(
                "the table's {} waypoints are not the nav graph's {} nodes: compute the table on \
                 the graph (`sightline precompute` stores both)",
                table.waypoints.len(),
                graph.len()
            )));
        }
        if !(params.silhouette.is_finite()
            && params.silhouette > 0.0
            && params.range > 0.0
            && params.near.is_finite()
            && params.near > 0.0)
        {
            return Err(Error::InvalidInput(format!(
                "cover: silhouette {} m^2, range {} m and near distance {} m must be positive",
                params.silhouette, params.range, params.near
            )));
        }
        let exposure = exposure(&graph, &table, params);
        let mut view_params = ViewParams::standard();
        view_params.eye_height = table.meta.eye_height;
        view_params.posture = table.meta.posture;
        let views = (0..graph.len())
            .map(|_| std::sync::OnceLock::new())
            .collect();
        let mut world = World {
            graph,
            table,
            exposure,
            heuristic_scale: 0.0,
            views,
            view_params,
            landmark_cost: [Vec::new(), Vec::new()],
        };
        world.prepare_search();
        Ok(world)
    }

    /// The A* heuristic's data for the current edge costs.
    fn prepare_search(&mut self) {
        let g = &self.graph;
        let mut scale = 1.0f32;
        for (e, &c) in g.edges().iter().zip(g.costs()) {
            let d = g.nodes()[e.a as usize].distance(g.nodes()[e.b as usize]);
            if d > 0.0 {
                scale = scale.min(c / d);
            }
        }
        self.heuristic_scale = scale.max(0.0);
        let ex = &self.exposure;
        self.landmark_cost = [
            landmarks(g, |e| g.costs()[e as usize]),
            landmarks(g, |e| {
                let edge = g.edges()[e as usize];
                let mean = 0.5 * (ex[edge.a as usize] + ex[edge.b as usize]);
                g.costs()[e as usize] * (1.0 + LANDMARK_COVER * mean)
            }),
        ];
    }

    /// A lower bound on the cost from `v` to `goal` with cover weight `w`: the larger of the
    /// straight distance (times the cheapest cost per metre) and the landmarks'
    /// triangle-inequality bounds.
    fn lower_bound(&self, v: u32, goal: u32, w: f32) -> f32 {
        let nodes = self.graph.nodes();
        let mut h = self.heuristic_scale * nodes[v as usize].distance(nodes[goal as usize]);
        let table = &self.landmark_cost[usize::from(w >= LANDMARK_COVER)];
        let (a, b) = (v as usize * LANDMARKS, goal as usize * LANDMARKS);
        for l in 0..LANDMARKS {
            let (dv, dg) = (table[a + l], table[b + l]);
            if dv.is_finite() && dg.is_finite() {
                h = h.max((dv - dg).abs());
            }
        }
        h
    }

    #[must_use]
    pub fn graph(&self) -> &NavGraph {
        &self.graph
    }

    #[must_use]
    pub fn table(&self) -> &TableFile {
        &self.table
    }

    #[must_use]
    pub fn los(&self) -> &LosTable {
        &self.table.los
    }

    /// Each node's exposure over the most exposed node's, in `[0, 1]` (1 - cover).
    #[must_use]
    pub fn exposure(&self) -> &[f32] {
        &self.exposure
    }

    /// Whether nodes `a` and `b` see each other (a node sees itself).
    #[must_use]
    pub fn can_see(&self, a: u32, b: u32) -> bool {
        self.table.los.visible(a, b)
    }

    /// What a member standing at `node` sees (cached per node), with the detection rate of a
    /// threat at each node ([`View::from_table`], the table's posture).
    pub fn view(&self, node: u32) -> Result<&View> {
        if let Some(v) = self.views[node as usize].get() {
            return Ok(v);
        }
        let v = View::from_table(&self.table, node, &self.view_params)?;
        Ok(self.views[node as usize].get_or_init(|| v))
    }

    /// Recomputes edge costs with other multipliers.
    pub fn set_costs(&mut self, costs: &CostParams) -> Result<()> {
        self.graph.set_costs(costs)?;
        self.prepare_search();
        Ok(())
    }
}

/// Costs from [`LANDMARKS`] landmarks chosen farthest-first (each the node farthest from those
/// chosen so far, within the first landmark's component), node-major.
fn landmarks(graph: &NavGraph, weight: impl Fn(u32) -> f32) -> Vec<f32> {
    let n = graph.len();
    let mut out = vec![f32::INFINITY; n * LANDMARKS];
    let mut nearest = vec![f32::INFINITY; n];
    let mut next = 0u32;
    for l in 0..LANDMARKS {
        let d = dijkstra(graph, next, &weight);
        for v in 0..n {
            out[v * LANDMARKS + l] = d[v];
            nearest[v] = nearest[v].min(d[v]);
        }
        next = (0..n as u32)
            .filter(|&v| nearest[v as usize].is_finite())
            .max_by(|&a, &b| nearest[a as usize].total_cmp(&nearest[b as usize]))
            .unwrap_or(0);
    }
    out
}

fn dijkstra(graph: &NavGraph, from: u32, weight: impl Fn(u32) -> f32) -> Vec<f32> {
    let mut dist = vec![f32::INFINITY; graph.len()];
    let mut heap = BinaryHeap::new();
    dist[from as usize] = 0.0;
    heap.push((Reverse(0u32), from));
    while let Some((Reverse(k), u)) = heap.pop() {
        let d = f32::from_bits(k);
        if d > dist[u as usize] {
            continue;
        }
        for &(v, e) in graph.neighbours(u) {
            let nd = d + weight(e);
            if nd < dist[v as usize] {
                dist[v as usize] = nd;
                heap.push((Reverse(nd.to_bits()), v));
            }
        }
    }
    dist
}

fn exposure(graph: &NavGraph, table: &TableFile, p: &CoverParams) -> Vec<f32> {
    let nodes = graph.nodes();
    let lift = Vec3::Y * table.meta.eye_height;
    let mut e: Vec<f64> = vec![0.0; nodes.len()];
    for (i, sum) in e.iter_mut().enumerate() {
        for &j in table.los.sees(i as u32) {
            let d = (nodes[j as usize] + lift).distance(nodes[i] + lift);
            if d > p.range {
                continue;
            }
            *sum += f64::from(match &table.intervis {
                Some(iv) => iv.get(j, i as u32).map_or(0.0, |r| r.solid_angle),
                None => (p.silhouette / d.max(p.near).powi(2)).min(std::f32::consts::TAU),
            });
        }
    }
    let mut sorted = e.clone();
    sorted.sort_by(f64::total_cmp);
    let top = sorted[(sorted.len() - 1) * 99 / 100];
    e.iter()
        .map(|&v| {
            if top > 0.0 {
                (v / top).min(1.0) as f32
            } else {
                0.0
            }
        })
        .collect()
}

/// A reusable A* search over a [`World`]'s graph: the arrays are allocated once and reset by
/// a generation stamp, so a search touches only the nodes it reaches.
#[derive(Clone, Debug, Default)]
pub struct PathSearch {
    g: Vec<f32>,
    parent: Vec<u32>,
    stamp: Vec<u32>,
    closed: Vec<u32>,
    generation: u32,
    heap: BinaryHeap<(Reverse<u32>, u32)>,
}

/// A path and its cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    /// Nodes from the start to the goal, both included.
    pub nodes: Vec<u32>,
    pub cost: f32,
}

impl PathSearch {
    #[must_use]
    pub fn new() -> PathSearch {
        PathSearch::default()
    }

    /// The cheapest path from `from` to `to` where walking edge `e` between `u` and `v` costs
    /// `graph.costs()[e] * (1 + cover_weight * (exposure[u] + exposure[v]) / 2)`: distance plus
    /// the exposure along the edge, weighted (`cover_weight = 0`: plain shortest paths). A* whose heuristic never overestimates: the larger of the straight-line
    /// distance times the cheapest cost per metre of any edge and the landmark bounds
    /// `|d(L, v) - d(L, goal)|` (on costs the search's own never undercut). `None` when `to`
    /// is unreachable.
    pub fn find(&mut self, world: &World, from: u32, to: u32, cover_weight: f32) -> Option<Path> {
        let n = world.graph.len();
        if from as usize >= n || to as usize >= n || !(cover_weight >= 0.0) {
            return None;
        }
        if self.stamp.len() != n {
            *self = PathSearch {
                g: vec![0.0; n],
                parent: vec![0; n],
                stamp: vec![0; n],
                closed: vec![0; n],
                generation: 0,
                heap: BinaryHeap::new(),
            };
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamp.fill(0);
            self.closed.fill(0);
            self.generation = 1;
        }
        let gen = self.generation;
        let h = |v: u32| world.lower_bound(v, to, cover_weight);
        let (offsets, adjacency) = world.graph.adjacency();
        let costs = world.graph.costs();
        self.heap.clear();
        self.g[from as usize] = 0.0;
        self.stamp[from as usize] = gen;
        self.parent[from as usize] = from;
        // Keys are f32 bit patterns: for non-negative floats they order as the values do.
        self.heap.push((Reverse(h(from).to_bits()), from));
        while let Some((_, u)) = self.heap.pop() {
            if self.closed[u as usize] == gen {
                continue;
            }
            self.closed[u as usize] = gen;
            if u == to {
                let mut path = vec![to];
                let mut v = to;
                while v != from {
                    v = self.parent[v as usize];
                    path.push(v);
                }
                path.reverse();
                return Some(Path {
                    nodes: path,
                    cost: self.g[to as usize],
                });
            }
            let gu = self.g[u as usize];
            for &(v, e) in
                &adjacency[offsets[u as usize] as usize..offsets[u as usize + 1] as usize]
            {
                if self.closed[v as usize] == gen {
                    continue;
                }
                let cover = 0.5 * (world.exposure[u as usize] + world.exposure[v as usize]);
                let step = costs[e as usize] * (1.0 + cover_weight * cover);
                let gv = gu + step;
                if self.stamp[v as usize] != gen || gv < self.g[v as usize] {
                    self.stamp[v as usize] = gen;
                    self.g[v as usize] = gv;
                    self.parent[v as usize] = u;
                    self.heap.push((Reverse((gv + h(v)).to_bits()), v));
                }
            }
        }
        None
    }
}

/// Darken, McCue and Guerrero's `ComputeStringPullPoint`, exactly as written: from the
/// member's current index into the path, advance while the next path node is visible (when
/// the current one is), or while the next one is not (when the current one is not). Returns
/// the new index. `can_see(w, i)` is `CanSee(w, path[i])`.
#[must_use]
pub fn string_pull_point(
    can_see: impl Fn(u32, usize) -> bool,
    w: u32,
    path: &[u32],
    current: usize,
) -> usize {
    if path.is_empty() {
        return 0;
    }
    let mut i = current.min(path.len() - 1);
    if can_see(w, i) {
        while i + 1 < path.len() && can_see(w, i + 1) {
            i += 1;
        }
    } else {
        while i + 1 < path.len() && !can_see(w, i + 1) {
            i += 1;
        }
    }
    i
}

/// Every node's shortest walking distance (edge lengths, not costs) from `from`; infinite
/// where unreachable.
#[must_use]
pub fn distances_from(graph: &NavGraph, from: u32) -> Vec<f32> {
    dijkstra(graph, from, |e| graph.edges()[e as usize].length)
}

/// The first `count` nodes in order of path cost from `start` (itself first): where the
/// members of a team gathered around a spot stand.
#[must_use]
pub fn nearest_nodes(graph: &NavGraph, start: u32, count: usize) -> Vec<u32> {
    let mut dist = vec![f32::INFINITY; graph.len()];
    let mut heap = BinaryHeap::new();
    let mut out = Vec::new();
    if start as usize >= graph.len() {
        return out;
    }
    dist[start as usize] = 0.0;
    heap.push((Reverse(0u32), start));
    while let Some((Reverse(k), u)) = heap.pop() {
        let d = f32::from_bits(k);
        if d > dist[u as usize] {
            continue;
        }
        out.push(u);
        if out.len() >= count {
            break;
        }
        for &(v, e) in graph.neighbours(u) {
            let nd = d + graph.costs()[e as usize];
            if nd < dist[v as usize] {
                dist[v as usize] = nd;
                heap.push((Reverse(nd.to_bits()), v));
            }
        }
    }
    out
}
