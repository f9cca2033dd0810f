//! The waypoint-pair relations terrain reasoning reads: line of sight, line of fire, their
//! combined value, far distance, travel time along the nav graph (van der Sterren, "Waypoint
//! Calculations" and "CPU Load, Lookup Tables, and Memory Consumption").
//!
//! Storage follows the paper's advice: the two symmetric bit tables answer "does `w` see
//! `w'`" in O(1); the flattened interaction lists hold, per waypoint, only the waypoints it
//! sees or can shoot at (with the sector they lie in), and the time-horizon lists only the
//! waypoints reachable within `horizon` seconds. Longer travel times are searched on demand
//! ([`Relations::travel_within`]).

use super::Direction;
use crate::nav::NavGraph;
use crate::scene::Mask;
use crate::tables::{compute_los, LosParams, LosTable};
use crate::{Engine, Error, Result, Scene};
use glam::Vec3;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// How the relations are measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RelationParams {
    /// Eye height above each waypoint (metres); sight and fire run eye to eye.
    pub eye_height: f32,
    /// Movement speed (metres of graph cost per second): travel time = path cost / speed.
    pub speed: f32,
    /// The time horizon (seconds): per waypoint, every waypoint reachable within it is listed
    /// with its travel time. The paper: "one to three seconds".
    pub horizon: f32,
    /// Far distance ramps from 0 at `near` metres to 1 at `far` metres.
    pub near: f32,
    pub far: f32,
    /// Pairs farther apart are not traced and count as neither seen nor in line of fire.
    pub range: Option<f32>,
}

impl RelationParams {
    /// Standing eyes (1.7 m), a 4 m/s jog, a 3 s horizon, far distance from 10 m to 40 m,
    /// no range limit.
    #[must_use]
    pub const fn standard() -> RelationParams {
        RelationParams {
            eye_height: 1.7,
            speed: 4.0,
            horizon: 3.0,
            near: 10.0,
            far: 40.0,
            range: None,
        }
    }

    /// Checks every field, naming the one that is wrong.
    pub fn validate(&self) -> Result<()> {
        let positive = |name: &'static str, v: f32, hint: &str| {
            if v.is_finite() && v > 0.0 && v < 1e6 {
                Ok(())
            } else {
                Err(Error::param(
                    name,
                    v,
                    format!("a positive number below 1e6 ({hint})"),
                ))
            }
        };
        positive("eye height", self.eye_height, "metres, default 1.7")?;
        positive("speed", self.speed, "metres per second, default 4")?;
        positive("horizon", self.horizon, "seconds, default 3")?;
        positive("far distance", self.far, "metres, default 40")?;
        if !(self.near.is_finite() && self.near >= 0.0 && self.near < self.far) {
            return Err(Error::param(
                "near distance",
                self.near,
                format!("0 or more and below the far distance {}", self.far),
            ));
        }
        if let Some(r) = self.range {
            positive("range", r, "metres; leave it out to trace every pair")?;
        }
        Ok(())
    }
}

impl Default for RelationParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// Bit 0 of an interaction code: line of sight.
pub const SIGHT: u8 = 1;
/// Bit 1 of an interaction code: line of fire.
pub const FIRE: u8 = 2;

/// The combined line-of-sight-line-of-fire value of an interaction code, in `[0, 1]`: 1 when
/// both hold, 0.5 for sight alone (seen through glass: observed, not hit), 0.25 for fire alone
/// (shooting blind through foliage), 0 for neither.
#[must_use]
pub fn los_lof_value(code: u8) -> f32 {
    match code & 3 {
        3 => 1.0,
        SIGHT => 0.5,
        FIRE => 0.25,
        _ => 0.0,
    }
}

/// One interaction of a waypoint: the other waypoint, its code ([`SIGHT`] | [`FIRE`]) and the
/// sector it lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interaction {
    pub other: u32,
    pub code: u8,
    pub sector: Direction,
}

/// Line of sight, line of fire and travel times between a nav graph's nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct Relations {
    params: RelationParams,
    graph: NavGraph,
    /// Per edge: whether it can be walked (doors can close it).
    open: Vec<bool>,
    sight: LosTable,
    fire: LosTable,
    /// `interactions[offsets[w]..offsets[w + 1]]`, other waypoints ascending.
    offsets: Vec<u64>,
    interactions: Vec<Interaction>,
    /// `horizon[h_offsets[w]..h_offsets[w + 1]]`: `(waypoint, seconds)` by time, `w` first.
    h_offsets: Vec<u64>,
    horizon: Vec<(u32, f32)>,
}

impl Relations {
    /// Traces sight ([`Mask::SIGHT`]) and fire ([`Mask::FIRE`]) between every pair of the
    /// graph's nodes through `engine` (batched by [`compute_los`]; once when no material
    /// blocks only one of them), then builds the
    /// interaction and time-horizon lists. Edges a door of the scene closes
    /// ([`super::patch::blocked_edges`]) are not walked.
    pub fn compute(
        engine: &Engine,
        scene: &Scene,
        graph: &NavGraph,
        params: &RelationParams,
    ) -> Result<Relations> {
        Relations::compute_with_progress(engine, scene, graph, params, |_, _| {})
    }

    /// [`Relations::compute`], calling `progress(done, total)` as pairs are traced (both
    /// tables counted).
    pub fn compute_with_progress(
        engine: &Engine,
        scene: &Scene,
        graph: &NavGraph,
        params: &RelationParams,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<Relations> {
        params.validate()?;
        if graph.len() < 2 {
            return Err(Error::InvalidInput(format!(
                "terrain reasoning needs a nav graph of at least 2 nodes, this one has {}; \
                 check the scene has walkable ground",
                graph.len()
            )));
        }
        let los = |mask| LosParams {
            eye_height: params.eye_height,
            mask,
            ..LosParams::standard()
        };
        let nodes = graph.nodes();
        // Where every triangle that blocks sight also blocks fire and the other way round, the
        // two tables are equal: trace once.
        let split = !fire_is_sight(scene);
        let passes = if split { 2 } else { 1 };
        let sight = compute_los(
            engine,
            scene,
            nodes,
            &los(Mask::SIGHT),
            params.range,
            |d, t| progress(d, t * passes),
        )?;
        let fire = if split {
            compute_los(
                engine,
                scene,
                nodes,
                &los(Mask::FIRE),
                params.range,
                |d, t| progress(t + d, 2 * t),
            )?
        } else {
            sight.clone()
        };
        let blocked = super::patch::blocked_edges(scene, graph);
        Relations::from_tables(graph.clone(), blocked, sight, fire, params)
    }

    /// The relations from tables already traced (`sight`, `fire` complete, over the graph's
    /// nodes) and the edges doors close.
    pub fn from_tables(
        graph: NavGraph,
        blocked: Vec<bool>,
        sight: LosTable,
        fire: LosTable,
        params: &RelationParams,
    ) -> Result<Relations> {
        params.validate()?;
        let n = graph.len();
        if sight.n() as usize != n || fire.n() as usize != n || blocked.len() != graph.edges().len()
        {
            return Err(Error::InvalidInput(format!(
                "relations need tables over the graph's {n} nodes and a flag per edge ({}); got \
                 {}, {} and {}",
                graph.edges().len(),
                sight.n(),
                fire.n(),
                blocked.len()
            )));
        }
        if !sight.is_complete() || !fire.is_complete() {
            return Err(Error::InvalidInput(
                "relations need complete tables, not shards; merge the shards first".into(),
            ));
        }
        let mut r = Relations {
            params: *params,
            open: blocked.iter().map(|b| !b).collect(),
            graph,
            sight,
            fire,
            offsets: Vec::new(),
            interactions: Vec::new(),
            h_offsets: Vec::new(),
            horizon: Vec::new(),
        };
        r.build_interactions()?;
        r.build_horizon()?;
        Ok(r)
    }

    fn build_interactions(&mut self) -> Result<()> {
        self.build_interaction_rows(None)
    }

    /// Builds the interaction lists from the sees lists; with `touched`, only those rows are
    /// rebuilt and the others copied from the current lists.
    fn build_interaction_rows(&mut self, touched: Option<&[bool]>) -> Result<()> {
        let n = self.graph.len();
        let total = self.sight.sees_flat().1.len() + self.fire.sees_flat().1.len();
        let mut list = crate::limits::vec_with_capacity(
            total,
            "terrain interaction lists",
            "use fewer waypoints or a range",
        )?;
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0);
        let nodes = self.graph.nodes();
        for w in 0..n as u32 {
            if touched.is_some_and(|t| !t[w as usize]) {
                list.extend_from_slice(self.interactions(w));
                offsets.push(list.len() as u64);
                continue;
            }
            let (a, b) = (self.sight.sees(w), self.fire.sees(w));
            let (mut i, mut j) = (0, 0);
            while i < a.len() || j < b.len() {
                let (other, code) = match (a.get(i), b.get(j)) {
                    (Some(&x), Some(&y)) if x == y => {
                        i += 1;
                        j += 1;
                        (x, SIGHT | FIRE)
                    }
                    (Some(&x), Some(&y)) if x < y => {
                        i += 1;
                        (x, SIGHT)
                    }
                    (Some(&x), None) => {
                        i += 1;
                        (x, SIGHT)
                    }
                    (_, Some(&y)) => {
                        j += 1;
                        (y, FIRE)
                    }
                    (None, None) => unreachable!("loop condition"),
                };
                let sector = Direction::between(nodes[w as usize], nodes[other as usize]);
                list.push(Interaction {
                    other,
                    code,
                    sector,
                });
            }
            offsets.push(list.len() as u64);
        }
        self.offsets = offsets;
        self.interactions = list;
        Ok(())
    }

    /// Rebuilds every waypoint's time-horizon list (after edges opened or closed).
    pub(super) fn build_horizon(&mut self) -> Result<()> {
        let n = self.graph.len();
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0u64);
        let mut all = Vec::new();
        let mut search = Search::new(n);
        for w in 0..n as u32 {
            let reached = search.run(
                &self.graph,
                &self.open,
                w,
                self.params.horizon * self.params.speed,
            );
            all.extend(reached.iter().map(|&(v, c)| (v, c / self.params.speed)));
            check_horizon(all.len(), self.params.horizon)?;
            offsets.push(all.len() as u64);
        }
        self.h_offsets = offsets;
        self.horizon = all;
        Ok(())
    }

    /// Searches again the time-horizon lists of `nodes` (ascending) and splices them in.
    pub(super) fn research_horizons(&mut self, nodes: &[u32]) -> Result<()> {
        let limit = self.params.horizon * self.params.speed;
        let mut search = Search::new(self.len());
        let mut fresh = nodes
            .iter()
            .map(|&w| (w, search.run(&self.graph, &self.open, w, limit)));
        let mut next = fresh.next();
        let mut offsets = Vec::with_capacity(self.len() + 1);
        offsets.push(0u64);
        let mut all = Vec::with_capacity(self.horizon.len());
        for w in 0..self.len() as u32 {
            match &next {
                Some((v, list)) if *v == w => {
                    all.extend(list.iter().map(|&(u, c)| (u, c / self.params.speed)));
                    next = fresh.next();
                }
                _ => all.extend_from_slice(self.within_horizon(w)),
            }
            check_horizon(all.len(), self.params.horizon)?;
            offsets.push(all.len() as u64);
        }
        self.h_offsets = offsets;
        self.horizon = all;
        Ok(())
    }

    /// The parameters the relations were measured with.
    #[must_use]
    pub fn params(&self) -> &RelationParams {
        &self.params
    }
    /// The nav graph (its edges as built; see [`Relations::edge_open`]).
    #[must_use]
    pub fn graph(&self) -> &NavGraph {
        &self.graph
    }
    /// Waypoint positions (the graph's nodes).
    #[must_use]
    pub fn nodes(&self) -> &[Vec3] {
        self.graph.nodes()
    }
    /// Number of waypoints.
    #[must_use]
    pub fn len(&self) -> usize {
        self.graph.len()
    }
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.graph.is_empty()
    }
    /// Whether edge `e` can be walked now.
    #[must_use]
    pub fn edge_open(&self, e: u32) -> bool {
        self.open[e as usize]
    }
    pub(super) fn open_flags(&self) -> &[bool] {
        &self.open
    }
    pub(super) fn open_mut(&mut self) -> &mut Vec<bool> {
        &mut self.open
    }
    /// The sight table (symmetric).
    #[must_use]
    pub fn sight_table(&self) -> &LosTable {
        &self.sight
    }
    /// The fire table (symmetric).
    #[must_use]
    pub fn fire_table(&self) -> &LosTable {
        &self.fire
    }
    pub(super) fn tables_mut(&mut self) -> (&mut LosTable, &mut LosTable) {
        (&mut self.sight, &mut self.fire)
    }
    /// Rebuilds the interaction rows of the `touched` waypoints from the sees lists.
    pub(super) fn rebuild_interactions(&mut self, touched: &[bool]) -> Result<()> {
        self.build_interaction_rows(Some(touched))
    }

    /// Whether `a` and `b` see each other (eye to eye).
    ///
    /// # Panics
    /// If `a` or `b` is not a waypoint index (like slice indexing).
    #[must_use]
    pub fn sight(&self, a: u32, b: u32) -> bool {
        self.sight.visible(a, b)
    }
    /// Whether `a` and `b` can shoot at each other (eye to eye).
    #[must_use]
    pub fn fire(&self, a: u32, b: u32) -> bool {
        self.fire.visible(a, b)
    }
    /// The interaction code of a pair: [`SIGHT`] | [`FIRE`] bits.
    #[must_use]
    pub fn code(&self, a: u32, b: u32) -> u8 {
        u8::from(self.sight(a, b)) | u8::from(self.fire(a, b)) << 1
    }
    /// Line-of-sight-line-of-fire in `[0, 1]` ([`los_lof_value`]).
    #[must_use]
    pub fn los_lof(&self, a: u32, b: u32) -> f32 {
        los_lof_value(self.code(a, b))
    }
    /// Far distance in `[0, 1]`: 0 up to `near` metres, 1 from `far` metres, linear between.
    #[must_use]
    pub fn far_distance(&self, a: u32, b: u32) -> f32 {
        let d = self.nodes()[a as usize].distance(self.nodes()[b as usize]);
        far_distance(d, self.params.near, self.params.far)
    }
    /// The waypoints `w` sees or can shoot at (not itself), ascending, with their sector.
    #[must_use]
    pub fn interactions(&self, w: u32) -> &[Interaction] {
        let (a, b) = (self.offsets[w as usize], self.offsets[w as usize + 1]);
        &self.interactions[a as usize..b as usize]
    }
    /// The waypoints reachable from `w` within the time horizon, with their travel time in
    /// seconds, nearest first (`w` itself first, at 0).
    #[must_use]
    pub fn within_horizon(&self, w: u32) -> &[(u32, f32)] {
        let (a, b) = (self.h_offsets[w as usize], self.h_offsets[w as usize + 1]);
        &self.horizon[a as usize..b as usize]
    }
    /// Travel time (seconds) from `from` to every waypoint reachable within `seconds`, as
    /// `(waypoint, seconds)` nearest first; one Dijkstra search over the open edges.
    #[must_use]
    pub fn travel_within(&self, from: u32, seconds: f32) -> Vec<(u32, f32)> {
        let mut s = Search::new(self.len());
        s.run(&self.graph, &self.open, from, seconds * self.params.speed)
            .iter()
            .map(|&(v, c)| (v, c / self.params.speed))
            .collect()
    }
    /// Travel time in seconds from `a` to `b` along open edges, `None` if unreachable.
    #[must_use]
    pub fn travel_time(&self, a: u32, b: u32) -> Option<f32> {
        let mut s = Search::new(self.len());
        s.path_cost(&self.graph, &self.open, a, b)
            .map(|c| c / self.params.speed)
    }

    /// Bytes the relations hold (bit tables, interaction and horizon lists).
    #[must_use]
    pub fn bytes(&self) -> u64 {
        let words = (self.sight.bits().len() + self.fire.bits().len()) as u64 * 8;
        let sees = (self.sight.sees_flat().1.len() + self.fire.sees_flat().1.len()) as u64 * 4;
        words
            + sees
            + self.interactions.len() as u64 * std::mem::size_of::<Interaction>() as u64
            + self.horizon.len() as u64 * 8
            + (self.offsets.len() + self.h_offsets.len()) as u64 * 8
    }
}

/// Most entries the time-horizon lists may hold together (8 bytes each: 256 MiB).
pub const MAX_HORIZON_ENTRIES: usize = 1 << 25;

fn check_horizon(entries: usize, horizon: f32) -> Result<()> {
    crate::limits::check_size(
        "the time-horizon lists",
        entries as u64,
        MAX_HORIZON_ENTRIES as u64,
        &format!(
            "shorten the horizon ({horizon} s; the paper uses one to three seconds) or use fewer \
             waypoints"
        ),
    )
}

/// Whether every triangle of `scene` that blocks sight also blocks fire and the other way
/// round, so the sight and fire tables are equal.
pub(super) fn fire_is_sight(scene: &Scene) -> bool {
    !scene.tiers().iter().any(|t| {
        t.triangles
            .iter()
            .any(|tri| matches!(tri.flags & Mask::ANY_SOLID.bits(), 1 | 2))
    })
}

/// Far distance in `[0, 1]` of two points `d` metres apart.
#[must_use]
pub fn far_distance(d: f32, near: f32, far: f32) -> f32 {
    ((d - near) / (far - near)).clamp(0.0, 1.0)
}

/// A reusable Dijkstra search over a graph's open edges, bounded by a path cost.
pub(super) struct Search {
    cost: Vec<f32>,
    touched: Vec<u32>,
    heap: BinaryHeap<Reverse<(u32, u32)>>,
    /// Each node's predecessor on its least-cost path (kept only by [`Search::path`]).
    parent: Vec<u32>,
}

impl Search {
    pub(super) fn new(n: usize) -> Search {
        Search {
            cost: vec![f32::INFINITY; n],
            touched: Vec::new(),
            heap: BinaryHeap::new(),
            parent: Vec::new(),
        }
    }

    fn reset(&mut self) {
        for &v in &self.touched {
            self.cost[v as usize] = f32::INFINITY;
        }
        self.touched.clear();
        self.heap.clear();
    }

    /// Every node within path cost `limit` of `from`, `(node, cost)` by cost (ties by node).
    pub(super) fn run(
        &mut self,
        graph: &NavGraph,
        open: &[bool],
        from: u32,
        limit: f32,
    ) -> Vec<(u32, f32)> {
        self.reset();
        let mut out = Vec::new();
        self.relax(from, 0.0);
        while let Some(Reverse((bits, u))) = self.heap.pop() {
            let c = f32::from_bits(bits);
            if c > self.cost[u as usize] {
                continue;
            }
            out.push((u, c));
            for &(v, e) in graph.neighbours(u) {
                if open[e as usize] {
                    let nc = c + graph.costs()[e as usize];
                    if nc <= limit {
                        self.relax(v, nc);
                    }
                }
            }
        }
        out
    }

    /// The least path cost from `a` to `b`.
    pub(super) fn path_cost(
        &mut self,
        graph: &NavGraph,
        open: &[bool],
        a: u32,
        b: u32,
    ) -> Option<f32> {
        self.reset();
        self.relax(a, 0.0);
        while let Some(Reverse((bits, u))) = self.heap.pop() {
            let c = f32::from_bits(bits);
            if c > self.cost[u as usize] {
                continue;
            }
            if u == b {
                return Some(c);
            }
            for &(v, e) in graph.neighbours(u) {
                if open[e as usize] {
                    self.relax_from(u, v, c + graph.costs()[e as usize]);
                }
            }
        }
        None
    }

    /// A least-cost path from `a` to `b` (both ends included), `None` if unreachable.
    pub(super) fn path(
        &mut self,
        graph: &NavGraph,
        open: &[bool],
        a: u32,
        b: u32,
    ) -> Option<Vec<u32>> {
        if self.parent.len() != self.cost.len() {
            self.parent = vec![u32::MAX; self.cost.len()];
        }
        self.path_cost(graph, open, a, b)?;
        let mut path = vec![b];
        let mut v = b;
        while v != a {
            v = self.parent[v as usize];
            path.push(v);
        }
        path.reverse();
        Some(path)
    }

    fn relax_from(&mut self, u: u32, v: u32, c: f32) {
        let slot = &mut self.cost[v as usize];
        if c < *slot {
            if slot.is_infinite() {
                self.touched.push(v);
            }
            *slot = c;
            if !self.parent.is_empty() {
                self.parent[v as usize] = u;
            }
            self.heap.push(Reverse((c.to_bits(), v)));
        }
    }

    fn relax(&mut self, v: u32, c: f32) {
        let slot = &mut self.cost[v as usize];
        if c < *slot {
            if slot.is_infinite() {
                self.touched.push(v);
            }
            *slot = c;
            // Non-negative floats order like their bits.
            self.heap.push(Reverse((c.to_bits(), v)));
        }
    }
}

/// A square bit matrix (`n x n`, row-major, rows padded to whole words): a symmetric table
/// unfolded so a row can be read word by word.
pub(super) struct BitRows {
    words: usize,
    bits: Vec<u64>,
}

impl BitRows {
    /// The full matrix of a complete table (the diagonal set).
    pub(super) fn from_table(t: &LosTable) -> Result<BitRows> {
        let n = t.n() as usize;
        let words = n.div_ceil(64);
        let mut bits = crate::limits::vec_filled(
            n * words,
            0u64,
            "the unfolded line-of-fire table",
            "use fewer waypoints",
        )?;
        for i in 0..n {
            bits[i * words + i / 64] |= 1 << (i % 64);
            for &j in t.sees(i as u32) {
                bits[i * words + j as usize / 64] |= 1 << (j % 64);
            }
        }
        Ok(BitRows { words, bits })
    }

    pub(super) fn row(&self, i: u32) -> &[u64] {
        &self.bits[i as usize * self.words..(i as usize + 1) * self.words]
    }
}

/// A set of waypoints as bits over the words it spans.
#[derive(Clone, Debug, Default)]
pub(super) struct BitSpan {
    first: usize,
    words: Vec<u64>,
    len: u32,
}

impl BitSpan {
    pub(super) fn new(members: impl Iterator<Item = u32> + Clone) -> BitSpan {
        let lo = members.clone().min().unwrap_or(0) as usize / 64;
        let hi = members.clone().max().unwrap_or(0) as usize / 64;
        let mut words = vec![0u64; hi + 1 - lo];
        let mut len = 0;
        for m in members {
            words[m as usize / 64 - lo] |= 1 << (m % 64);
            len += 1;
        }
        BitSpan {
            first: lo,
            words,
            len,
        }
    }

    pub(super) fn len(&self) -> u32 {
        self.len
    }

    /// Members set in `row` too.
    pub(super) fn count_in(&self, row: &[u64]) -> u32 {
        self.words
            .iter()
            .zip(&row[self.first..])
            .map(|(a, b)| (a & b).count_ones())
            .sum()
    }

    /// Whether some member is not set in `row`.
    pub(super) fn any_outside(&self, row: &[u64]) -> bool {
        self.words
            .iter()
            .zip(&row[self.first..])
            .any(|(a, b)| a & !b != 0)
    }
}
