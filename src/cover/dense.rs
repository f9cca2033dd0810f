//! The dense cover search: the nearest spot, by walking distance around obstacles, where the
//! agent's whole body is hidden from every observer.
//!
//! Candidates are the cells of a world-aligned grid (`cell`, 0.25 m by default: the cover
//! field's grid) within `radius` of the agent. A Dijkstra search over the grid grows outward
//! from the agent by path length, and asks the engine only about the cells it reaches, in
//! batches (waves): every query's next band of path length goes to the engine together, so a
//! thousand agents cost the same few engine calls per wave as one.
//!
//! - **Ground** of a cell: a downward closest-hit ray from one step height above the cell it is
//!   entered from; walkable material, slope within `max_slope`, height change within
//!   `step_height`.
//! - **Clearance** ([`super::body::clearance_segments`]): the highest posture whose body fits.
//!   The agent moves crouching or standing, so a cell where only lying down fits can be the
//!   destination but is not walked through. A diagonal step needs both cells beside it.
//! - **Hidden**: the whole body ([`super::body`]) of a fitting posture is hidden from every
//!   observer under the query's mask. The prone body is tested first (its head centre, then its
//!   whole sample): no higher posture hides where lying down does not, so that is the test a
//!   cell must pass to be a candidate; crouching and standing are traced for candidates only.
//! - **Choice**: the nearest candidate by path length; among those within `posture_tie` metres
//!   more, the highest hidden posture. The chosen spot is then measured with the intervis
//!   humanoid ([`super::verify::intervis_exposure`]); any exposed pixel rejects it and the search
//!   goes on to the next candidate, up to `max_rejections` times.
//! - **Path**: the grid path, string-pulled (a corner is dropped when the straight line between
//!   its neighbours crosses only cells the search has found walkable), from the agent's feet.
//!
//! Backends give identical answers: every test goes through the engine's kernels (GPU or CPU),
//! which agree bit for bit. Ground, clearance and visibility are cached per cell for the whole
//! batch, so agents that share observers share the work.

use super::body::{body_points, clearance_segments, fitting_posture, BodyParams};
use super::field::CellCover;
use super::verify::{intervis_exposure, occluded_masked, Candidate, Check, Rejection};
use super::{Agent, Posture};
use crate::scene::{Mask, MaterialFlags, Scene};
use crate::trace::{Ray, Segment};
use crate::{Engine, Error, Result};
use glam::Vec3;
use std::cmp::Reverse;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::BinaryHeap;

/// Dense search settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DenseParams {
    /// Grid cell side (metres). Default 0.25 m, the cover field's.
    pub cell: f32,
    /// Cells farther than this from the agent (horizontally) are not searched. Default 20 m: the
    /// cover field's 40 m square.
    pub radius: f32,
    /// Highest step up or down between neighbouring cells (metres). Default 0.3 m.
    pub step_height: f32,
    /// Steepest standable slope (radians). Default 45 degrees.
    pub max_slope: f32,
    /// Among candidates at most this much farther (metres of path) than the nearest, the highest
    /// hidden posture wins. Default 0.5 m.
    pub posture_tie: f32,
    /// Path length per wave: cells up to this much beyond the nearest open one are traced
    /// together. Default 1 m.
    pub band: f32,
    /// The body sample.
    pub body: BodyParams,
    /// Measure the chosen spot with the intervis humanoid. Default on.
    pub verify_intervis: bool,
    /// Intervis rejections before a query gives up. Default 8.
    pub max_rejections: usize,
}

impl DenseParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> DenseParams {
        DenseParams {
            cell: 0.25,
            radius: 20.0,
            step_height: 0.3,
            max_slope: std::f32::consts::FRAC_PI_4,
            posture_tie: 0.5,
            band: 1.0,
            body: BodyParams::standard(),
            verify_intervis: true,
            max_rejections: 8,
        }
    }
}

impl Default for DenseParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// Largest grid a query may search: `(2 * radius / cell)^2` cells.
pub const MAX_CELLS: f64 = (1u64 << 24) as f64;
/// Largest number of queries in one call.
pub const MAX_QUERIES: usize = 1 << 20;

/// One agent's question.
#[derive(Clone, Debug)]
pub struct DenseQuery {
    pub agent: Agent,
    /// Observers' eyes.
    pub observers: Vec<Vec3>,
    /// `Mask::SIGHT` for concealment, `Mask::FIRE` for cover.
    pub mask: Mask,
}

/// The chosen spot.
#[derive(Clone, Debug, PartialEq)]
pub struct DenseChoice {
    /// Ground point at the cell's centre.
    pub position: Vec3,
    /// The highest posture whose whole body is hidden there (and fits).
    pub posture: Posture,
    /// From the agent's feet to the spot, string-pulled.
    pub path: Vec<Vec3>,
    pub path_length: f32,
    /// Per observer: the share of the body sample seen (0 for every observer: hidden).
    pub exposure: Vec<f32>,
    /// Per observer: exposed pixels of the intervis humanoid, when measured.
    pub intervis_exposed: Option<Vec<u32>>,
    /// The last check that passed: `Intervis` when measured, else `Body`.
    pub decided_by: Check,
}

/// A cell the search reached, for pictures and checks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Explored {
    pub position: Vec3,
    /// Path length from the agent.
    pub path_length: f32,
    /// `Exposed`, or `Hidden(p)` (p the highest hidden posture where it was worked out,
    /// else prone).
    pub cover: CellCover,
}

/// The answer to one [`DenseQuery`].
#[derive(Clone, Debug, PartialEq)]
pub struct DenseAnswer {
    pub choice: Option<DenseChoice>,
    pub rejected: Vec<Rejection>,
    pub explored: Vec<Explored>,
    /// Rays this query asked for (work shared with other queries counts once, for the first).
    pub rays: usize,
}

type Cell = (i32, i32);
/// A cell at a ground height (centimetres).
type Spot = (i32, i32, i32);

/// What is known of a spot's visibility for one query group.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Vis {
    /// Some observer sees the prone head or body: exposed in every posture.
    Exposed,
    /// The prone head centre is hidden from every observer; the body not traced yet.
    HeadHidden,
    /// The whole prone body is hidden; higher postures not traced yet.
    ProneHidden,
    /// The highest hidden posture among those that fit.
    Hidden(Posture),
}

#[derive(Clone, Debug)]
struct Node {
    spot: Spot,
    ground: Vec3,
    g: f32,
    parent: Option<usize>,
    closed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    Searching,
    /// Candidates found; gathering the rest of the tie window.
    Window { end: f32 },
    /// A choice awaits its intervis measurement.
    Verifying { node: usize, posture: Posture },
    Done,
}

struct QueryState {
    nodes: Vec<Node>,
    index: HashMap<Spot, usize>,
    by_cell: HashMap<Cell, Vec<usize>>,
    heap: BinaryHeap<(Reverse<u32>, usize)>,
    candidates: Vec<(usize, Posture)>,
    /// Spots turned down by intervis.
    turned_down: Vec<usize>,
    phase: Phase,
    answer: DenseAnswer,
    group: usize,
    shape: usize,
}

/// Shared caches: ground per (cell, quantised height of the cell it is entered from), fitting
/// posture per (shape, spot), visibility per (group, spot).
#[derive(Default)]
struct Caches {
    ground: HashMap<(Cell, i32), Option<Vec3>>,
    fit: HashMap<(usize, Spot), Option<Posture>>,
    vis: HashMap<(usize, Spot), Vis>,
}

/// Requests of one wave, deduplicated.
#[derive(Default)]
struct Wave {
    /// (cell, quantised height entered from, asking query)
    ground: Vec<(Cell, i32, usize)>,
    /// (shape, spot, ground, asking query)
    fit: Vec<(usize, Spot, Vec3, usize)>,
    /// (group, spot, ground, what is known, asking query)
    vis: Vec<(usize, Spot, Vec3, Option<Vis>, usize)>,
    intervis: Vec<usize>,
    seen: HashSet<(u8, usize, Spot)>,
}

/// Heights are quantised to this for the ground cache key (metres).
const GROUND_KEY: f32 = 0.05;

/// Answers many dense cover queries; see the module docs. Queries with the same observers, mask
/// and agent shape share visibility work, and all share ground and clearance.
pub fn find_cover(
    engine: &Engine,
    scene: &Scene,
    queries: &[DenseQuery],
    params: &DenseParams,
) -> Result<Vec<DenseAnswer>> {
    validate(queries, params)?;
    let mut search = Search::new(queries, params);
    loop {
        let wave = search.step();
        if wave.ground.is_empty()
            && wave.fit.is_empty()
            && wave.vis.is_empty()
            && wave.intervis.is_empty()
        {
            break;
        }
        search.trace(engine, scene, wave)?;
    }
    Ok(search.finish())
}

fn validate(queries: &[DenseQuery], p: &DenseParams) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidInput(m));
    if queries.len() > MAX_QUERIES {
        return bad(format!(
            "{} cover queries in one call, over the limit of {MAX_QUERIES}; split the batch",
            queries.len()
        ));
    }
    let positive = |x: f32| x.is_finite() && x > 0.0;
    if !(positive(p.cell) && positive(p.radius) && positive(p.band)) {
        return bad(format!(
            "cell {}, radius {} and band {} must be positive metres (defaults 0.25, 20, 1)",
            p.cell, p.radius, p.band
        ));
    }
    let cells = (2.0 * f64::from(p.radius) / f64::from(p.cell)).powi(2);
    if cells > MAX_CELLS {
        return bad(format!(
            "a {} m radius of {} m cells is {cells:.0} cells, over the limit of {MAX_CELLS}; \
             use larger cells or a smaller radius",
            p.radius, p.cell
        ));
    }
    if !(p.step_height.is_finite() && p.step_height >= 0.0)
        || !(p.posture_tie.is_finite() && p.posture_tie >= 0.0)
        || p.max_slope.is_nan()
    {
        return bad("step_height and posture_tie must be finite metres >= 0, max_slope radians".into());
    }
    for (i, q) in queries.iter().enumerate() {
        let a = &q.agent;
        let finite = a.position.is_finite()
            && a.radius.is_finite()
            && a.head_heights.iter().all(|h| h.is_finite());
        if !finite
            || a.radius < 0.0
            || !(a.head_heights[0] > 0.0
                && a.head_heights[0] <= a.head_heights[1]
                && a.head_heights[1] <= a.head_heights[2])
        {
            return bad(format!(
                "cover query {i}: the agent needs finite coordinates, a radius >= 0 and head heights 0 < prone <= crouching <= standing"
            ));
        }
        if let Some(o) = q.observers.iter().find(|o| !o.is_finite()) {
            return bad(format!("cover query {i}: observer {o} is not finite"));
        }
        p.body.validate(a)?;
    }
    Ok(())
}

struct Search<'a> {
    queries: &'a [DenseQuery],
    params: DenseParams,
    states: Vec<QueryState>,
    caches: Caches,
    /// Query index standing for each group and shape.
    groups: Vec<usize>,
    shapes: Vec<usize>,
}

/// Path lengths are kept in the heap as micrometre integers (exact ordering, no NaN).
fn key(g: f32) -> Reverse<u32> {
    Reverse((g * 1e4).round() as u32)
}

impl<'a> Search<'a> {
    fn new(queries: &'a [DenseQuery], params: &DenseParams) -> Search<'a> {
        let shape_key = |a: &Agent| {
            (a.radius.to_bits(), a.head_heights.map(f32::to_bits))
        };
        let group_key = |q: &DenseQuery| {
            (
                shape_key(&q.agent),
                q.mask.bits(),
                q.observers.iter().map(|o| o.to_array().map(f32::to_bits)).collect::<Vec<_>>(),
            )
        };
        let mut groups = Vec::new();
        let mut group_of = HashMap::default();
        let mut shapes = Vec::new();
        let mut shape_of = HashMap::default();
        let states = queries
            .iter()
            .enumerate()
            .map(|(qi, q)| {
                let group = *group_of.entry(group_key(q)).or_insert_with(|| {
                    groups.push(qi);
                    groups.len() - 1
                });
                let shape = *shape_of.entry(shape_key(&q.agent)).or_insert_with(|| {
                    shapes.push(qi);
                    shapes.len() - 1
                });
                let a = q.agent.position;
                let start = cell_of(a, params.cell);
                let spot = (start.0, start.1, cm(a.y));
                let mut s = QueryState {
                    nodes: vec![Node {
                        spot,
                        ground: a,
                        g: 0.0,
                        parent: None,
                        closed: false,
                    }],
                    index: HashMap::from_iter([(spot, 0)]),
                    by_cell: HashMap::from_iter([((spot.0, spot.1), vec![0])]),
                    heap: BinaryHeap::from([(key(0.0), 0)]),
                    candidates: Vec::new(),
                    turned_down: Vec::new(),
                    phase: Phase::Searching,
                    answer: DenseAnswer {
                        choice: None,
                        rejected: Vec::new(),
                        explored: Vec::new(),
                        rays: 0,
                    },
                    group,
                    shape,
                };
                if q.observers.is_empty() {
                    // Nothing can see the agent: it is hidden where it stands.
                    s.phase = Phase::Done;
                    s.answer.choice = Some(DenseChoice {
                        position: a,
                        posture: Posture::Standing,
                        path: vec![a],
                        path_length: 0.0,
                        exposure: Vec::new(),
                        intervis_exposed: None,
                        decided_by: Check::Body,
                    });
                }
                s
            })
            .collect();
        Search {
            queries,
            params: *params,
            states,
            caches: Caches::default(),
            groups,
            shapes,
        }
    }

    /// Advances every query as far as what is known allows, and returns what to trace next.
    fn step(&mut self) -> Wave {
        let mut wave = Wave::default();
        for qi in 0..self.states.len() {
            self.advance(qi, &mut wave);
        }
        wave
    }

    fn neighbours(&self, s: &QueryState, u: usize) -> [(Cell, f32); 8] {
        let (i, j, _) = s.nodes[u].spot;
        let c = self.params.cell;
        let d = c * std::f32::consts::SQRT_2;
        [
            ((i + 1, j), c),
            ((i - 1, j), c),
            ((i, j + 1), c),
            ((i, j - 1), c),
            ((i + 1, j + 1), d),
            ((i - 1, j + 1), d),
            ((i + 1, j - 1), d),
            ((i - 1, j - 1), d),
        ]
    }

    /// The spot entered at `cell` from ground height `from_y`: `Ok(None)` where it cannot be
    /// entered, `Err(())` while something is unknown (requested in `wave`).
    fn enter(&self, qi: usize, cell: Cell, from_y: f32, wave: &mut Wave) -> Option<Option<(Spot, Vec3, Posture)>> {
        let s = &self.states[qi];
        let q = &self.queries[qi];
        let centre = cell_centre(cell, self.params.cell);
        let dx = centre.x - q.agent.position.x;
        let dz = centre.y - q.agent.position.z;
        if dx * dx + dz * dz > self.params.radius * self.params.radius {
            return Some(None);
        }
        let ykey = (from_y / GROUND_KEY).round() as i32;
        let Some(ground) = self.caches.ground.get(&(cell, ykey)) else {
            if wave.seen.insert((0, 0, (cell.0, cell.1, ykey))) {
                wave.ground.push((cell, ykey, qi));
            }
            return None;
        };
        let Some(g) = *ground else {
            return Some(None);
        };
        if (g.y - from_y).abs() > self.params.step_height {
            return Some(None);
        }
        let spot = (cell.0, cell.1, cm(g.y));
        match self.caches.fit.get(&(s.shape, spot)) {
            None => {
                if wave.seen.insert((1, s.shape, spot)) {
                    wave.fit.push((s.shape, spot, g, qi));
                }
                None
            }
            Some(None) => Some(None),
            Some(Some(p)) => Some(Some((spot, g, *p))),
        }
    }

    fn advance(&mut self, qi: usize, wave: &mut Wave) {
        loop {
            let phase = self.states[qi].phase;
            match phase {
                Phase::Done => return,
                Phase::Verifying { node, .. } => {
                    if wave.seen.insert((3, qi, self.states[qi].nodes[node].spot)) {
                        wave.intervis.push(qi);
                    }
                    return;
                }
                Phase::Searching | Phase::Window { .. } => {}
            }
            let Some(&(Reverse(gk), u)) = self.states[qi].heap.peek() else {
                self.conclude(qi);
                continue;
            };
            let g = gk as f32 / 1e4;
            if let Phase::Window { end } = phase {
                if g > end {
                    self.conclude(qi);
                    continue;
                }
            }
            if self.states[qi].nodes[u].closed {
                self.states[qi].heap.pop();
                continue;
            }
            // Complete? Visibility of u, then what its neighbours are.
            if !self.ready(qi, u, wave) {
                self.prefetch(qi, g, wave);
                return;
            }
            let s = &mut self.states[qi];
            s.heap.pop();
            s.nodes[u].closed = true;
            let (spot, ground) = (s.nodes[u].spot, s.nodes[u].ground);
            let vis = self.caches.vis[&(s.group, spot)];
            let fit = if u == 0 {
                Some(Posture::Standing)
            } else {
                self.caches.fit[&(s.shape, spot)]
            };
            let hidden = match vis {
                Vis::Hidden(p) => Some(p),
                Vis::Exposed => None,
                Vis::HeadHidden | Vis::ProneHidden => unreachable!("ready() resolves these"),
            };
            s.answer.explored.push(Explored {
                position: ground,
                path_length: g,
                cover: hidden.map_or(CellCover::Exposed, CellCover::Hidden),
            });
            if let Some(p) = hidden {
                if !s.turned_down.contains(&u) {
                    s.candidates.push((u, p));
                    if s.phase == Phase::Searching {
                        s.phase = Phase::Window {
                            end: g + self.params.posture_tie,
                        };
                    }
                }
            }
            // Walk on only from where the agent fits moving (crouching or standing).
            if fit.is_some_and(|p| p >= Posture::Crouching) {
                self.relax(qi, u);
            }
        }
    }

    /// Whether node `u` of query `qi` is fully known: its visibility resolved to `Exposed` or
    /// `Hidden(p)`, and every neighbour's ground and fit. Requests what is missing.
    fn ready(&mut self, qi: usize, u: usize, wave: &mut Wave) -> bool {
        let s = &self.states[qi];
        let (spot, ground) = (s.nodes[u].spot, s.nodes[u].ground);
        let mut ok = true;
        match self.caches.vis.get(&(s.group, spot)).copied() {
            None => {
                self.request_vis(qi, spot, ground, None, wave);
                ok = false;
            }
            Some(v @ (Vis::HeadHidden | Vis::ProneHidden)) => {
                self.request_vis(qi, spot, ground, Some(v), wave);
                ok = false;
            }
            Some(_) => {}
        }
        let walks_on = u == 0
            || self
                .caches
                .fit
                .get(&(s.shape, spot))
                .is_some_and(|f| f.is_some_and(|p| p >= Posture::Crouching));
        if walks_on {
            for (cell, _) in self.neighbours(s, u) {
                if self.enter(qi, cell, ground.y, wave).is_none() {
                    ok = false;
                }
            }
        }
        ok
    }

    fn request_vis(&self, qi: usize, spot: Spot, ground: Vec3, now: Option<Vis>, wave: &mut Wave) {
        let group = self.states[qi].group;
        // The start cell fits standing by definition; others need their fit first.
        let fit_known = spot == self.states[qi].nodes[0].spot
            || self.caches.fit.contains_key(&(self.states[qi].shape, spot));
        if now == Some(Vis::ProneHidden) && !fit_known {
            return;
        }
        if wave.seen.insert((2, group, spot)) {
            wave.vis.push((group, spot, ground, now, qi));
        }
    }

    /// Requests what the cells within one band of path length beyond `g` will need, so a wave
    /// carries a band rather than one ring of cells: a flood fill from the open nodes, each
    /// unknown cell predicted at the height of the cell it is reached from (right on floors and
    /// gentle slopes; where wrong, the search asks again with the true height).
    fn prefetch(&mut self, qi: usize, g: f32, wave: &mut Wave) {
        let limit = g + self.params.band;
        let s = &self.states[qi];
        let seeds: Vec<usize> = s
            .heap
            .iter()
            .filter(|(Reverse(k), n)| (*k as f32) / 1e4 <= limit && !s.nodes[*n].closed)
            .map(|&(_, n)| n)
            .collect();
        let mut queue: std::collections::VecDeque<(Cell, f32, f32)> = seeds
            .iter()
            .map(|&n| {
                let sp = s.nodes[n].spot;
                ((sp.0, sp.1), s.nodes[n].ground.y, s.nodes[n].g)
            })
            .collect();
        let mut seen: HashSet<Cell> = queue.iter().map(|c| c.0).collect();
        while let Some((cell, y, d)) = queue.pop_front() {
            for (dc, cost) in [((1, 0), 1.0), ((-1, 0), 1.0), ((0, 1), 1.0), ((0, -1), 1.0)] {
                let nb = (cell.0 + dc.0, cell.1 + dc.1);
                let nd = d + cost * self.params.cell;
                if nd > limit || !seen.insert(nb) {
                    continue;
                }
                match self.enter(qi, nb, y, wave) {
                    None => {
                        // Ground unknown: predict the same height and go on.
                        let known = self
                            .caches
                            .ground
                            .get(&(nb, (y / GROUND_KEY).round() as i32))
                            .is_some();
                        if !known {
                            queue.push_back((nb, y, nd));
                        } else if let Some(Some(gp)) =
                            self.caches.ground.get(&(nb, (y / GROUND_KEY).round() as i32))
                        {
                            queue.push_back((nb, gp.y, nd));
                        }
                    }
                    Some(None) => {}
                    Some(Some((spot, gp, fit))) => {
                        if !self.caches.vis.contains_key(&(self.states[qi].group, spot))
                            || matches!(
                                self.caches.vis.get(&(self.states[qi].group, spot)),
                                Some(Vis::HeadHidden | Vis::ProneHidden)
                            )
                        {
                            let now = self.caches.vis.get(&(self.states[qi].group, spot)).copied();
                            self.request_vis(qi, spot, gp, now, wave);
                        }
                        if fit >= Posture::Crouching {
                            queue.push_back((nb, gp.y, nd));
                        }
                    }
                }
            }
        }
        for u in seeds {
            let (spot, ground) = (self.states[qi].nodes[u].spot, self.states[qi].nodes[u].ground);
            let now = self.caches.vis.get(&(self.states[qi].group, spot)).copied();
            if !matches!(now, Some(Vis::Exposed | Vis::Hidden(_))) {
                self.request_vis(qi, spot, ground, now, wave);
            }
        }
    }


    fn relax(&mut self, qi: usize, u: usize) {
        let mut dummy = Wave::default();
        let from = self.states[qi].nodes[u].ground;
        let g = self.states[qi].nodes[u].g;
        let nbs = self.neighbours(&self.states[qi], u);
        let entered: Vec<Option<(Spot, Vec3, Posture)>> = nbs
            .iter()
            .map(|&(c, _)| self.enter(qi, c, from.y, &mut dummy).flatten())
            .collect();
        for (k, &(_, cost)) in nbs.iter().enumerate() {
            let Some((spot, ground, _)) = entered[k] else {
                continue;
            };
            // Diagonals (4..8) need both orthogonal cells beside them.
            if k >= 4 {
                let (di, dj) = (spot.0 - self.states[qi].nodes[u].spot.0, spot.1 - self.states[qi].nodes[u].spot.1);
                let side = |c: Cell| {
                    nbs[..4]
                        .iter()
                        .position(|&(n, _)| n == c)
                        .is_some_and(|m| entered[m].is_some())
                };
                let (ui, uj, _) = self.states[qi].nodes[u].spot;
                if !(side((ui + di, uj)) && side((ui, uj + dj))) {
                    continue;
                }
            }
            let s = &mut self.states[qi];
            let ng = g + cost;
            let v = match s.index.get(&spot) {
                Some(&v) => v,
                None => {
                    s.nodes.push(Node {
                        spot,
                        ground,
                        g: f32::INFINITY,
                        parent: None,
                        closed: false,
                    });
                    s.index.insert(spot, s.nodes.len() - 1);
                    s.by_cell
                        .entry((spot.0, spot.1))
                        .or_default()
                        .push(s.nodes.len() - 1);
                    s.nodes.len() - 1
                }
            };
            if ng < s.nodes[v].g && !s.nodes[v].closed {
                s.nodes[v].g = ng;
                s.nodes[v].parent = Some(u);
                s.heap.push((key(ng), v));
            }
        }
    }

    /// The tie window closed or the search ran out: pick a candidate, or give up.
    fn conclude(&mut self, qi: usize) {
        let s = &mut self.states[qi];
        let best = s
            .candidates
            .iter()
            .copied()
            .max_by(|a, b| a.1.cmp(&b.1).then(s.nodes[b.0].g.total_cmp(&s.nodes[a.0].g)));
        match best {
            None => s.phase = Phase::Done,
            Some((node, posture)) if self.params.verify_intervis => {
                s.phase = Phase::Verifying { node, posture };
            }
            Some((node, posture)) => {
                self.choose(qi, node, posture, None);
            }
        }
    }

    fn choose(&mut self, qi: usize, node: usize, posture: Posture, pixels: Option<Vec<u32>>) {
        let path = self.path(qi, node);
        let s = &mut self.states[qi];
        let position = s.nodes[node].ground;
        s.answer.choice = Some(DenseChoice {
            position,
            posture,
            path_length: path.windows(2).map(|w| w[0].distance(w[1])).sum(),
            path,
            exposure: vec![0.0; self.queries[qi].observers.len()],
            decided_by: if pixels.is_some() {
                Check::Intervis
            } else {
                Check::Body
            },
            intervis_exposed: pixels,
        });
        s.phase = Phase::Done;
    }

    /// The grid path to `node`, string-pulled over cells the search found walkable.
    fn path(&self, qi: usize, node: usize) -> Vec<Vec3> {
        let s = &self.states[qi];
        let mut chain = vec![node];
        while let Some(p) = s.nodes[*chain.last().unwrap()].parent {
            chain.push(p);
        }
        chain.reverse();
        let pts: Vec<Vec3> = chain.iter().map(|&n| s.nodes[n].ground).collect();
        let mut out = vec![pts[0]];
        let mut anchor = 0;
        let mut k = 1;
        while k < pts.len() {
            // Extend the straight run from the anchor as far as the line stays on walked cells.
            let mut far = k;
            while far + 1 < pts.len() && self.straight(qi, pts[anchor], pts[far + 1]) {
                far += 1;
            }
            out.push(pts[far]);
            anchor = far;
            k = far + 1;
        }
        out
    }

    /// Whether the straight line from `a` to `b` crosses only cells closed by the search with
    /// the agent fitting crouched or standing (sampled at a quarter cell).
    fn straight(&self, qi: usize, a: Vec3, b: Vec3) -> bool {
        let s = &self.states[qi];
        let c = self.params.cell;
        let n = ((a.distance(b) / (c * 0.25)).ceil() as usize).max(1);
        let mut y = a.y;
        (1..n).all(|k| {
            let p = a.lerp(b, k as f32 / n as f32);
            let cell = cell_of(p, c);
            let near = s.by_cell.get(&cell).and_then(|vs| {
                vs.iter()
                    .copied()
                    .find(|&v| (s.nodes[v].ground.y - y).abs() <= self.params.step_height)
            });
            near.is_some_and(|v| {
                let fit = self.caches.fit.get(&(s.shape, s.nodes[v].spot)).copied().flatten();
                y = s.nodes[v].ground.y;
                s.nodes[v].closed && (v == 0 || fit.is_some_and(|p| p >= Posture::Crouching))
            })
        })
    }

    /// Traces one wave and files the results in the caches.
    fn trace(&mut self, engine: &Engine, scene: &Scene, wave: Wave) -> Result<()> {
        let p = self.params;
        // Ground.
        let rays: Vec<Ray> = wave
            .ground
            .iter()
            .map(|&(cell, ykey, _)| {
                let c = cell_centre(cell, p.cell);
                let top = ykey as f32 * GROUND_KEY + p.step_height;
                Ray::new(
                    Vec3::new(c.x, top, c.y),
                    Vec3::NEG_Y,
                    2.0 * p.step_height + GROUND_KEY,
                )
            })
            .collect();
        let ground_mask = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
        let hits = engine.closest_hit(scene, &rays, ground_mask)?;
        let min_normal_y = p.max_slope.cos();
        for (&(cell, ykey, qi), (ray, h)) in wave.ground.iter().zip(rays.iter().zip(hits)) {
            self.states[qi].answer.rays += 1;
            let g = h.filter(|h| {
                h.normal.y >= min_normal_y
                    && scene.materials()[h.material as usize]
                        .flags
                        .contains(MaterialFlags::WALKABLE)
            });
            self.caches
                .ground
                .insert((cell, ykey), g.map(|h| ray.origin() + ray.dir() * h.t));
        }
        // Clearance and visibility in one occlusion batch per mask.
        let mut segs: Vec<(Segment, Mask)> = Vec::new();
        for &(shape, _, g, _) in &wave.fit {
            let agent = &self.queries[self.shapes[shape]].agent;
            for piece in clearance_segments(agent, g, p.body.foot) {
                segs.extend(piece.map(|s| (s, Mask::FIRE)));
            }
        }
        let mut vis_ranges = Vec::new();
        let mut points = Vec::new();
        for &(group, spot, g, now, _) in &wave.vis {
            let q = &self.queries[self.groups[group]];
            let start = segs.len();
            let postures: Vec<Posture> = match now {
                None | Some(Vis::Exposed) => vec![], // nothing known: the prone head centres
                Some(Vis::HeadHidden) => vec![Posture::Prone],
                _ => {
                    let shape = self.states[self.groups[group]].shape;
                    let fit = self.caches.fit.get(&(shape, spot)).copied().flatten();
                    let top = fit.unwrap_or(Posture::Standing);
                    vec![Posture::Crouching, Posture::Standing]
                        .into_iter()
                        .filter(|&x| x <= top)
                        .collect()
                }
            };
            let mut spans = Vec::new();
            if now.is_none() {
                for &o in &q.observers {
                    let head = g + Vec3::Y * q.agent.head_height(Posture::Prone);
                    segs.push((Segment::new(o, head), q.mask));
                }
                spans.push((Posture::Prone, start, segs.len()));
            } else {
                for posture in postures {
                    let s0 = segs.len();
                    for &o in &q.observers {
                        points.clear();
                        body_points(&q.agent, g, posture, o, &p.body, &mut points);
                        segs.extend(points.iter().map(|&t| (Segment::new(o, t), q.mask)));
                    }
                    spans.push((posture, s0, segs.len()));
                }
            }
            vis_ranges.push(spans);
        }
        let blocked = occluded_masked(engine, scene, &segs)?;
        for (k, &(shape, spot, _, qi)) in wave.fit.iter().enumerate() {
            let b = &blocked[k * 9..k * 9 + 9];
            self.caches.fit.insert((shape, spot), fitting_posture(|i| b[i]));
            self.states[qi].answer.rays += 9;
        }
        for (&(group, spot, _, now, qi), spans) in wave.vis.iter().zip(vis_ranges) {
            self.states[qi].answer.rays += spans.last().map_or(0, |l| l.2) - spans.first().map_or(0, |f| f.1);
            let all_hidden = |a: usize, b: usize| blocked[a..b].iter().all(|&x| x);
            let next = match now {
                None | Some(Vis::Exposed) => {
                    if all_hidden(spans[0].1, spans[0].2) {
                        Vis::HeadHidden
                    } else {
                        Vis::Exposed
                    }
                }
                Some(Vis::HeadHidden) => {
                    if all_hidden(spans[0].1, spans[0].2) {
                        Vis::ProneHidden
                    } else {
                        Vis::Exposed
                    }
                }
                _ => {
                    let mut best = Posture::Prone;
                    for &(posture, a, b) in &spans {
                        if all_hidden(a, b) {
                            best = posture;
                        } else {
                            break;
                        }
                    }
                    Vis::Hidden(best)
                }
            };
            self.caches.vis.insert((group, spot), next);
        }
        // Intervis for choices awaiting it, all in one measurement call per mask.
        if !wave.intervis.is_empty() {
            let pending: Vec<(usize, usize, Posture)> = wave
                .intervis
                .iter()
                .map(|&qi| match self.states[qi].phase {
                    Phase::Verifying { node, posture } => (qi, node, posture),
                    _ => unreachable!("only verifying queries ask for intervis"),
                })
                .collect();
            let cands: Vec<Candidate> = pending
                .iter()
                .map(|&(qi, node, posture)| Candidate {
                    agent: &self.queries[qi].agent,
                    ground: self.states[qi].nodes[node].ground,
                    posture,
                    observers: &self.queries[qi].observers,
                    mask: self.queries[qi].mask,
                })
                .collect();
            let pixels = intervis_exposure(engine, scene, &cands)?;
            for ((qi, node, posture), px) in pending.into_iter().zip(pixels) {
                if px.iter().all(|&n| n == 0) {
                    self.choose(qi, node, posture, Some(px));
                    continue;
                }
                let s = &mut self.states[qi];
                s.answer.rejected.push(Rejection {
                    position: s.nodes[node].ground,
                    posture,
                    by: Check::Intervis,
                    exposed: px,
                });
                s.turned_down.push(node);
                s.candidates.retain(|&(n, _)| n != node);
                if s.answer.rejected.len() >= self.params.max_rejections {
                    s.phase = Phase::Done;
                } else if s.candidates.is_empty() {
                    s.phase = Phase::Searching;
                } else {
                    self.conclude(qi);
                }
            }
        }
        Ok(())
    }

    fn finish(self) -> Vec<DenseAnswer> {
        self.states.into_iter().map(|s| s.answer).collect()
    }
}

fn cm(y: f32) -> i32 {
    (y * 100.0).round() as i32
}

fn cell_of(p: Vec3, cell: f32) -> Cell {
    ((p.x / cell).floor() as i32, (p.z / cell).floor() as i32)
}

fn cell_centre(c: Cell, cell: f32) -> glam::Vec2 {
    glam::Vec2::new((c.0 as f32 + 0.5) * cell, (c.1 as f32 + 0.5) * cell)
}
