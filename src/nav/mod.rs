//! The nav graph: where an agent can walk, as nodes on walkable ground and edges an upright
//! body can pass along. One set of nodes serves the precomputed tables (line of sight,
//! intervis), the threat model ([`crate::tpm`]) and movement.
//!
//! - [`generate`]: nodes on every floor of any scene, sampled on a grid (default 2 m, the tables'
//!   waypoints) by downward traces ([`crate::tables::sample_floors`]); an edge joins two nearby
//!   nodes when the body can walk straight between them (the batched test of `walk.rs`: step
//!   height, slope, head room, the swept cylinder), so stairs, ramps, bridges and doorways
//!   connect and walls, cliffs, windows and car bodies do not. Openings narrower than the grid
//!   (a 0.9 m doorway, a stair between grid lines) are found by a passage search and get nodes
//!   of their own. Every test goes to the [`Engine`] in batches.
//! - [`connect`]: edges for nodes the user placed.
//! - [`NavGraph`]: nodes, sorted edges with their kinds and ground lengths, compressed
//!   adjacency, costs ([`CostParams`]: length times a multiplier per movement kind),
//!   [`NavGraph::components`] and the nearest node to a point.
//! - [`read_graph`] / [`NavGraph::to_json`] / [`NavGraph::to_csv`]: user files (JSON or CSV);
//!   [`precompute`] stores the edges beside the tables in the `.slt` file.

mod build;
mod file;
mod fine;
mod surface;
mod walk;

pub use build::{connect, generate, generate_on, NavReport};
pub use file::{parse_graph_csv, parse_graph_json, read_graph};
pub use surface::{Walk, WalkSurface};

pub use crate::tables::{Edge, EdgeKinds};

use crate::agent::Agent;
use crate::scene::Scene;
use crate::tables::{self, PrecomputeParams, SampleParams, TableFile};
use crate::{Engine, Error, Result};
use glam::{Vec3, Vec3Swizzles};

/// How [`generate`] and [`connect`] build a graph.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NavParams {
    /// Node grid spacing, slope, the agent and surfaces per grid cell.
    pub sample: SampleParams,
    /// Highest step up or down between neighbouring ground samples (metres). Default 0.3.
    pub step_height: f32,
    /// Ground samples along an edge are at most this far apart (metres). Default 0.25.
    pub sample_step: f32,
    /// Ground rays along an edge start this far above the straight line between its ends
    /// (metres): the largest bump or tread an edge finds above that line. Default 1.2.
    pub probe_up: f32,
    /// Fine places per node cell side (the fine grid is `spacing / fine` apart: 0.25 m at the
    /// default 2 m). Default 8. A doorway is found when the fine step is at most its width
    /// less the agent's diameter.
    pub fine: u32,
    /// Where the straight walk between neighbouring regions fails, walk the linked fine path
    /// in straight pieces with nodes at their corners (doorways at an angle, stairs between grid
    /// lines). Default on.
    pub passages: bool,
    /// Nodes given to [`connect`] are linked to nodes this close (metres). Default 1.5 x
    /// spacing: a grid node's eight neighbours.
    pub link_radius: f32,
}

impl NavParams {
    /// 2 m grid, 45 degree slopes, a soldier (0.3 m radius, 1.1 m crouching, 1.75 m
    /// standing), 0.3 m steps, samples every 0.25 m, passages on.
    #[must_use]
    pub const fn standard() -> NavParams {
        NavParams {
            sample: SampleParams::standard(),
            step_height: 0.3,
            sample_step: 0.25,
            probe_up: 1.2,
            fine: 8,
            passages: true,
            link_radius: 3.0,
        }
    }

    /// [`NavParams::standard`] at another spacing (the link radius follows it).
    #[must_use]
    pub fn with_spacing(spacing: f32) -> NavParams {
        let mut p = NavParams::standard();
        p.sample.spacing = spacing;
        p.link_radius = 1.5 * spacing;
        p
    }

    /// The agent the graph is built for.
    #[must_use]
    pub fn agent(&self) -> &Agent {
        &self.sample.agent
    }

    /// Checks every size and distance before anything is allocated.
    pub fn validate(&self) -> Result<()> {
        self.sample.agent.validate_for("nav graph")?;
        let positive = |v: f32, what: &'static str, fix: &str| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(Error::param(
                    what,
                    v,
                    format!("the nav graph needs a positive number of metres ({fix})"),
                ))
            }
        };
        let slope = self.sample.max_slope;
        if !(slope.is_finite() && (0.0..std::f32::consts::FRAC_PI_2).contains(&slope)) {
            return Err(Error::InvalidInput(format!(
                "nav graph max slope {slope} must be in [0, pi/2) radians (45 degrees is 0.785)"
            )));
        }
        if !(1..=crate::ground::MAX_LAYERS).contains(&self.sample.max_layers) {
            return Err(Error::InvalidInput(format!(
                "nav graph max layers {} must be 1..={} (surfaces per column; default 16)",
                self.sample.max_layers,
                crate::ground::MAX_LAYERS
            )));
        }
        positive(self.sample.spacing, "spacing", "default 2")?;
        positive(self.step_height, "step height", "default 0.3")?;
        positive(self.sample_step, "sample step", "default 0.25")?;
        positive(self.probe_up, "probe height", "default 1.2")?;
        positive(self.link_radius, "link radius", "default 1.5 x spacing")?;
        let s = self.sample.spacing;
        if self.sample_step < 0.01 || !(1..=64).contains(&self.fine) {
            return Err(Error::InvalidInput(format!(
                "nav graph sample step {} must be at least 0.01 m and fine {} in 1..=64 (default 8)",
                self.sample_step, self.fine
            )));
        }
        if self.link_radius > 8.0 * s || self.step_height >= self.sample.agent.head_heights[1] {
            return Err(Error::InvalidInput(format!(
                "nav graph link radius {} must be at most 8 x spacing ({}), and the step height \
                 {} below the crouching head",
                self.link_radius,
                8.0 * s,
                self.step_height
            )));
        }
        Ok(())
    }
}

impl Default for NavParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// Cost multipliers per movement kind: an edge costs its ground length times the multiplier
/// of every kind it has.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostParams {
    /// Default 1.5: climbing stairs takes about half again as long as walking the same length.
    pub stairs: f32,
    /// Default 3.0: wading is slow and loud.
    pub water: f32,
    /// Default 2.0: a crouching walk covers ground at about half the speed.
    pub crouch: f32,
}

impl CostParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> CostParams {
        CostParams {
            stairs: 1.5,
            water: 3.0,
            crouch: 2.0,
        }
    }

    /// The multiplier of an edge with `kinds`.
    #[must_use]
    pub fn multiplier(&self, kinds: EdgeKinds) -> f32 {
        let mut m = 1.0;
        for (k, f) in [
            (EdgeKinds::STAIRS, self.stairs),
            (EdgeKinds::WATER, self.water),
            (EdgeKinds::CROUCH, self.crouch),
        ] {
            if kinds.contains(k) {
                m *= f;
            }
        }
        m
    }

    fn validate(&self) -> Result<()> {
        for (v, what) in [
            (self.stairs, "stairs"),
            (self.water, "water"),
            (self.crouch, "crouch"),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::InvalidInput(format!(
                    "the {what} cost multiplier {v} must be a positive number (1 = as walking)"
                )));
            }
        }
        Ok(())
    }
}

impl Default for CostParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// Largest number of nodes a graph may have.
pub const MAX_NODES: usize = 1 << 25;
/// Largest number of edges a graph may have.
pub const MAX_EDGES: usize = 1 << 27;

/// Nodes, undirected edges and their costs, with compressed adjacency for searches.
#[derive(Clone, Debug, PartialEq)]
pub struct NavGraph {
    nodes: Vec<Vec3>,
    edges: Vec<Edge>,
    costs: Vec<f32>,
    /// `adjacency[offsets[i]..offsets[i + 1]]`: `(neighbour, edge index)` of node `i`,
    /// neighbours ascending.
    offsets: Vec<u32>,
    adjacency: Vec<(u32, u32)>,
    /// Node indices by x, then index: [`NavGraph::nearest`] sweeps out from a point's x.
    by_x: Vec<u32>,
}

impl NavGraph {
    /// A graph from nodes and edges (any order; each edge's ends in either order). Errors name
    /// the first edge that is out of range, a loop, repeated, or has a bad length or kind.
    pub fn new(nodes: Vec<Vec3>, mut edges: Vec<Edge>, costs: &CostParams) -> Result<NavGraph> {
        costs.validate()?;
        if nodes.len() > MAX_NODES || edges.len() > MAX_EDGES {
            return Err(Error::InvalidInput(format!(
                "{} nodes and {} edges: a nav graph holds at most {MAX_NODES} nodes and \
                 {MAX_EDGES} edges; use a larger spacing",
                nodes.len(),
                edges.len()
            )));
        }
        if let Some(k) = nodes.iter().position(|p| !p.is_finite()) {
            return Err(Error::InvalidInput(format!(
                "nav graph node {k} is {}: nodes must be finite (metres)",
                nodes[k]
            )));
        }
        for e in &mut edges {
            if e.a > e.b {
                std::mem::swap(&mut e.a, &mut e.b);
            }
        }
        edges.sort_by_key(|e| (e.a, e.b));
        tables::check_edges(&edges, &nodes)
            .map_err(|e| Error::InvalidInput(format!("nav graph: {e}")))?;
        let n = nodes.len();
        let mut degree = vec![0u32; n + 1];
        for e in &edges {
            degree[e.a as usize] += 1;
            degree[e.b as usize] += 1;
        }
        let mut offsets = Vec::with_capacity(n + 1);
        let mut acc = 0u32;
        for d in &degree[..n] {
            offsets.push(acc);
            acc += d;
        }
        offsets.push(acc);
        let mut fill = offsets[..n].to_vec();
        let mut adjacency = vec![(0, 0); acc as usize];
        for (k, e) in edges.iter().enumerate() {
            for (u, v) in [(e.a, e.b), (e.b, e.a)] {
                adjacency[fill[u as usize] as usize] = (v, k as u32);
                fill[u as usize] += 1;
            }
        }
        for i in 0..n {
            adjacency[offsets[i] as usize..offsets[i + 1] as usize].sort_unstable();
        }
        let mut by_x: Vec<u32> = (0..n as u32).collect();
        by_x.sort_unstable_by(|&a, &b| {
            let (xa, xb) = (nodes[a as usize].x, nodes[b as usize].x);
            xa.total_cmp(&xb).then(a.cmp(&b))
        });
        let mut g = NavGraph {
            nodes,
            edges,
            costs: Vec::new(),
            offsets,
            adjacency,
            by_x,
        };
        g.set_costs(costs)?;
        Ok(g)
    }

    /// The graph a table file stores: its waypoints and edges (`None` when the file holds no
    /// nav graph).
    pub fn from_table(table: &TableFile, costs: &CostParams) -> Result<Option<NavGraph>> {
        table
            .edges
            .as_ref()
            .map(|e| NavGraph::new(table.waypoints.clone(), e.clone(), costs))
            .transpose()
    }

    /// Recomputes every edge's cost with other multipliers.
    pub fn set_costs(&mut self, costs: &CostParams) -> Result<()> {
        costs.validate()?;
        self.costs = self
            .edges
            .iter()
            .map(|e| e.length * costs.multiplier(e.kinds))
            .collect();
        Ok(())
    }

    #[must_use]
    pub fn nodes(&self) -> &[Vec3] {
        &self.nodes
    }

    /// Edges sorted by `(a, b)`, `a < b`.
    #[must_use]
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// Cost of each edge (same order as [`NavGraph::edges`]).
    #[must_use]
    pub fn costs(&self) -> &[f32] {
        &self.costs
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// `(neighbour, edge index)` of node `i`, neighbours ascending.
    #[must_use]
    pub fn neighbours(&self, i: u32) -> &[(u32, u32)] {
        &self.adjacency[self.offsets[i as usize] as usize..self.offsets[i as usize + 1] as usize]
    }

    /// The compressed adjacency: `(offsets, (neighbour, edge))`, `offsets.len() == len() + 1`.
    #[must_use]
    pub fn adjacency(&self) -> (&[u32], &[(u32, u32)]) {
        (&self.offsets, &self.adjacency)
    }

    /// The node nearest to `p` (straight-line distance; ties to the lower index).
    #[must_use]
    pub fn nearest(&self, p: Vec3) -> Option<u32> {
        if !p.is_finite() {
            return self.nearest_by_scan(p);
        }
        // Out from p.x both ways through the nodes sorted by x. A node whose x alone lies
        // farther than the best so far is farther in full (a float sum of squares is never
        // below one of its terms), and so is every node beyond it on that side.
        let by_x = &self.by_x;
        let at = by_x.partition_point(|&i| self.nodes[i as usize].x < p.x);
        let mut best: Option<(f32, u32)> = None;
        let mut take = |i: u32| {
            let q = self.nodes[i as usize];
            let dx = q.x - p.x;
            if best.is_some_and(|(d, _)| dx * dx > d) {
                return false;
            }
            let d = q.distance_squared(p);
            if best.is_none_or(|(bd, bi)| d < bd || (d == bd && i < bi)) {
                best = Some((d, i));
            }
            true
        };
        let (mut up, mut down) = (at, at);
        let (mut up_open, mut down_open) = (true, true);
        while up_open || down_open {
            up_open = up_open && up < by_x.len() && take(by_x[up]);
            up += 1;
            down_open = down_open && down > 0 && take(by_x[down - 1]);
            down = down.saturating_sub(1);
        }
        best.map(|(_, i)| i)
    }

    /// [`NavGraph::nearest`] by looking at every node: the first of the nearest by index.
    fn nearest_by_scan(&self, p: Vec3) -> Option<u32> {
        self.nodes
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.distance_squared(p).total_cmp(&b.1.distance_squared(p)))
            .map(|(i, _)| i as u32)
    }

    /// Connected components, largest first.
    #[must_use]
    pub fn components(&self) -> Components {
        let n = self.nodes.len();
        let mut label = vec![u32::MAX; n];
        let mut sizes = Vec::new();
        let mut stack = Vec::new();
        for s in 0..n {
            if label[s] != u32::MAX {
                continue;
            }
            let c = sizes.len() as u32;
            label[s] = c;
            stack.push(s as u32);
            let mut size = 0u32;
            while let Some(u) = stack.pop() {
                size += 1;
                for &(v, _) in self.neighbours(u) {
                    if label[v as usize] == u32::MAX {
                        label[v as usize] = c;
                        stack.push(v);
                    }
                }
            }
            sizes.push(size);
        }
        // Renumber largest first (ties: the component holding the lower node first).
        let mut order: Vec<u32> = (0..sizes.len() as u32).collect();
        order.sort_by_key(|&c| std::cmp::Reverse(sizes[c as usize]));
        let mut rank = vec![0u32; sizes.len()];
        for (r, &c) in order.iter().enumerate() {
            rank[c as usize] = r as u32;
        }
        Components {
            label: label.iter().map(|&c| rank[c as usize]).collect(),
            sizes: order.iter().map(|&c| sizes[c as usize]).collect(),
        }
    }
}

impl NavGraph {
    /// Whether each node stands at ground level: no node lies within 1.5 m of it horizontally
    /// and more than a metre below (as one does under a roof, an upper storey or a wall top).
    #[must_use]
    pub fn ground_level(&self) -> Vec<bool> {
        const NEAR: f32 = 1.5;
        let key = |p: Vec3| ((p.x / NEAR).floor() as i64, (p.z / NEAR).floor() as i64);
        let mut cells: std::collections::HashMap<(i64, i64), Vec<u32>> = Default::default();
        for (i, &p) in self.nodes.iter().enumerate() {
            cells.entry(key(p)).or_default().push(i as u32);
        }
        (self.nodes.iter())
            .map(|&p| {
                let (cx, cz) = key(p);
                !(cx - 1..=cx + 1).any(|x| {
                    (cz - 1..=cz + 1).any(|z| {
                        cells.get(&(x, z)).is_some_and(|v| {
                            v.iter().any(|&j| {
                                let q = self.nodes[j as usize];
                                q.y < p.y - 1.0 && (q - p).xz().length() <= NEAR
                            })
                        })
                    })
                })
            })
            .collect()
    }

    /// The graph of the nodes where `keep` holds (in their order) and the edges between them,
    /// with each kept node's index in `self`.
    pub fn subgraph(
        &self,
        keep: impl Fn(u32) -> bool,
        costs: &CostParams,
    ) -> Result<(NavGraph, Vec<u32>)> {
        let old: Vec<u32> = (0..self.len() as u32).filter(|&i| keep(i)).collect();
        let mut new = vec![u32::MAX; self.len()];
        for (k, &i) in old.iter().enumerate() {
            new[i as usize] = k as u32;
        }
        let edges = self
            .edges
            .iter()
            .filter(|e| new[e.a as usize] != u32::MAX && new[e.b as usize] != u32::MAX)
            .map(|e| Edge {
                a: new[e.a as usize],
                b: new[e.b as usize],
                ..*e
            })
            .collect();
        let nodes = old.iter().map(|&i| self.nodes[i as usize]).collect();
        Ok((NavGraph::new(nodes, edges, costs)?, old))
    }
}

/// The connected components of a graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Components {
    /// Component of each node; 0 is the largest.
    pub label: Vec<u32>,
    /// Nodes per component, largest first.
    pub sizes: Vec<u32>,
}

impl Components {
    /// The component holding most of the nodes where `mask` holds, and that share of them
    /// (`(0, 1.0)` when none does): with [`NavGraph::ground_level`], how much of the ground
    /// one network reaches.
    #[must_use]
    pub fn best_share(&self, mask: &[bool]) -> (u32, f64) {
        let mut count = vec![0u64; self.sizes.len()];
        for (&l, _) in self.label.iter().zip(mask).filter(|(_, &m)| m) {
            count[l as usize] += 1;
        }
        let total: u64 = count.iter().sum();
        let best = (0..count.len()).max_by_key(|&c| (count[c], std::cmp::Reverse(c)));
        match best {
            Some(c) if total > 0 => (c as u32, count[c] as f64 / total as f64),
            _ => (0, 1.0),
        }
    }

    /// Share of the nodes in the largest component (1 for an empty graph).
    #[must_use]
    pub fn largest_share(&self) -> f64 {
        let total: u64 = self.sizes.iter().map(|&s| u64::from(s)).sum();
        match self.sizes.first() {
            Some(&s) if total > 0 => f64::from(s) / total as f64,
            _ => 1.0,
        }
    }
}

/// The tables on a graph's nodes with its edges stored beside them: [`tables::precompute`]
/// with the graph's nodes as waypoints (`params.waypoints` and `params.edges` are replaced).
#[allow(clippy::too_many_arguments)]
pub fn precompute(
    engine: &Engine,
    scene: &Scene,
    scene_name: &str,
    graph: &NavGraph,
    params: &PrecomputeParams,
    shard: Option<(u32, u32)>,
    measure: Option<&mut tables::MeasureFn<'_>>,
    progress: impl FnMut(tables::Stage, u64, u64),
) -> Result<TableFile> {
    let params = PrecomputeParams {
        waypoints: Some(graph.nodes.clone()),
        edges: Some(graph.edges.clone()),
        ..params.clone()
    };
    tables::precompute(engine, scene, scene_name, &params, shard, measure, progress)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::SplitMix64;

    /// The sweep finds what a scan of every node finds, ties (repeated nodes, shared x, points
    /// midway between two nodes) included.
    #[test]
    fn nearest_sweep_equals_the_scan() {
        let mut rng = SplitMix64(11);
        let (lo, hi) = (Vec3::new(-50.0, -5.0, -50.0), Vec3::new(50.0, 5.0, 50.0));
        for n in [1usize, 2, 3, 17, 1_000] {
            let mut nodes: Vec<Vec3> = (0..n).map(|_| rng.in_box(lo, hi)).collect();
            // Repeats and nodes sharing an x with another.
            for k in (0..n).step_by(5).skip(1) {
                nodes[k] = nodes[k / 2];
            }
            for k in (3..n).step_by(7) {
                nodes[k].x = nodes[k - 3].x;
            }
            let g = NavGraph::new(nodes.clone(), Vec::new(), &CostParams::standard()).unwrap();
            let mut points: Vec<Vec3> =
                (0..2_000).map(|_| rng.in_box(lo * 1.2, hi * 1.2)).collect();
            points.extend(nodes.iter().take(50).copied());
            points.extend(nodes.windows(2).take(50).map(|w| (w[0] + w[1]) / 2.0));
            for p in points {
                assert_eq!(g.nearest(p), g.nearest_by_scan(p), "{n} nodes, {p}");
            }
        }
        let empty = NavGraph::new(Vec::new(), Vec::new(), &CostParams::standard()).unwrap();
        assert_eq!(empty.nearest(Vec3::ZERO), None);
    }
}
