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
}

impl CoverParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> CoverParams {
        CoverParams {
            silhouette: 0.95,
            range: 150.0,
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
/// else `silhouette / d^2`. The inverted, normalised value is the node's cover,
/// `1 - E_i / max E`; [`World::exposure`] gives `E_i / max E` in `[0, 1]`, the cover cost.
pub struct World {
    graph: NavGraph,
    table: TableFile,
    exposure: Vec<f32>,
    /// Lowest ratio of an edge's cost to the straight distance between its ends (at most 1):
    /// scales the A* heuristic so it never overestimates.
    heuristic_scale: f32,
    views: Vec<std::sync::OnceLock<View>>,
    view_params: ViewParams,
}

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
        if !(params.silhouette.is_finite() && params.silhouette > 0.0 && params.range > 0.0) {
            return Err(Error::InvalidInput(format!(
                "cover: silhouette {} m^2 and range {} m must be positive",
                params.silhouette, params.range
            )));
        }
        let exposure = exposure(&graph, &table, params);
        let mut heuristic_scale = 1.0f32;
        for (e, &c) in graph.edges().iter().zip(graph.costs()) {
            let d = graph.nodes()[e.a as usize].distance(graph.nodes()[e.b as usize]);
            if d > 0.0 {
                heuristic_scale = heuristic_scale.min(c / d);
            }
        }
        let mut view_params = ViewParams::standard();
        view_params.eye_height = table.meta.eye_height;
        view_params.posture = table.meta.posture;
        let views = (0..graph.len())
            .map(|_| std::sync::OnceLock::new())
            .collect();
        Ok(World {
            graph,
            table,
            exposure,
            heuristic_scale: heuristic_scale.max(0.0),
            views,
            view_params,
        })
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
        self.graph.set_costs(costs)
    }
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
                None => (p.silhouette / d.max(0.5).powi(2)).min(std::f32::consts::TAU),
            });
        }
    }
    let top = e.iter().copied().fold(0.0f64, f64::max);
    e.iter()
        .map(|&v| if top > 0.0 { (v / top) as f32 } else { 0.0 })
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

    /// The cheapest path from `from` to `to` where stepping onto node `v` along edge `e` costs
    /// `graph.costs()[e] * (1 + cover_weight * exposure[v])` (`cover_weight = 0`: plain
    /// shortest paths). A* with the straight-line distance to the goal times the world's
    /// heuristic scale, which never overestimates. `None` when `to` is unreachable.
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
        let nodes = world.graph.nodes();
        let goal = nodes[to as usize];
        let scale = world.heuristic_scale;
        let h = |v: u32| scale * nodes[v as usize].distance(goal);
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
                let step = costs[e as usize] * (1.0 + cover_weight * world.exposure[v as usize]);
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
            let nd = d + graph.edges()[e as usize].length;
            if nd < dist[v as usize] {
                dist[v as usize] = nd;
                heap.push((Reverse(nd.to_bits()), v));
            }
        }
    }
    dist
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
