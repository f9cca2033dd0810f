//! One query's search: a square of cells around the agent held in flat arrays (ground, fit,
//! visibility, Dijkstra state): ground and fit from the walk surface, visibility from the
//! batch's shared cache and from the waves.

use super::queue::BucketQueue;
use super::shared::{cell_key, Ask, BlockHint, Shared, VisKey, Wave, START_KEY};
use super::surface::{Floor, Surface, Window};
use super::{DenseAnswer, DenseChoice, DenseParams, DenseQuery, Explored};
use crate::cover::field::CellCover;
use crate::cover::verify::{Check, Rejection};
use crate::cover::Posture;
use glam::{Vec2, Vec3};

/// `fit` of a cell not entered yet; else 0 = nothing fits, `1 + posture`.
const FIT_UNKNOWN: u8 = 255;
/// `vis` codes (a cell's visibility for this query's observers).
pub(super) const VIS_UNKNOWN: u8 = 0;
/// The prone body's two ends (its stations nearest to and farthest from each observer) hide;
/// the rest of it is not traced yet. Most bodies whose head hides are seen, mostly at an
/// end (one poking out past the cover), so the CPU traces the ends first.
pub(super) const VIS_ENDS: u8 = 1;
/// The prone head centre hides from every observer; the body is not traced yet.
pub(super) const VIS_HEAD: u8 = 2;
/// The prone body hides; crouching and standing are not traced yet.
pub(super) const VIS_PRONE: u8 = 3;
/// `VIS_HIDDEN + p`: the highest hidden posture `p` among those that fit.
pub(super) const VIS_HIDDEN: u8 = 4;
/// `VIS_HEAD_FIRST + k`: the prone head centre hides from observer `k`; the others are not
/// traced yet (the CPU's lazy search asks one observer first: most cells are seen by it).
pub(super) const VIS_HEAD_FIRST: u8 = 8;
/// `VIS_SEEN + k`: exposed; observer `k` sees the prone head (`k` capped at [`MAX_HINT`]).
pub(super) const VIS_SEEN: u8 = 64;
/// Highest observer index a code names: the one to try first at a cell is the one that saw
/// the cell the search came from (visibility is coherent, so it mostly sees this one too).
pub(super) const MAX_HINT: usize = (VIS_SEEN - VIS_HEAD_FIRST - 1) as usize;

/// Whether a `vis` code is final: exposed, or hidden in some posture.
pub(super) fn resolved(code: u8) -> bool {
    exposed(code) || (VIS_HIDDEN..VIS_HIDDEN + 3).contains(&code)
}

/// Whether a `vis` code says some observer sees the cell.
pub(super) fn exposed(code: u8) -> bool {
    (VIS_SEEN..VIS_SEEN + MAX_HINT as u8 + 1).contains(&code)
}

/// Whether a `vis` code says the first observer tried does not see the cell's prone head.
pub(super) fn head_first(code: u8) -> bool {
    (VIS_HEAD_FIRST..VIS_SEEN).contains(&code)
}
/// Set on a `vis` code while its next stage is in flight.
const VIS_PENDING: u8 = 0x80;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Phase {
    Searching,
    /// Candidates found; gathering the rest of the tie window.
    Window {
        end: f32,
    },
    /// A choice awaits its intervis measurement.
    Verifying {
        node: u32,
        posture: Posture,
    },
    Done,
}

/// What the search knows of one cell; one small record (12 bytes), so a cell's lookups share a
/// cache line and a search's square stays in cache.
#[derive(Clone, Copy)]
struct Cell {
    /// Ground height of the floor the search stands on (NaN until entered).
    ground: f32,
    /// Path length so far.
    g: f32,
    /// [`FIT_UNKNOWN`], else 0 = nothing fits, `1 + posture`.
    fit: u8,
    /// Visibility code, with [`VIS_PENDING`] while its next stage is in flight.
    vis: u8,
    /// The observer to trace the prone head from first (see [`MAX_HINT`]).
    hint: u8,
    /// [`CLOSED`], and in the low bits the step from the parent (an index into
    /// [`NEIGHBOURS`]) or [`NO_PARENT`].
    link: u8,
}

const _: () = assert!(std::mem::size_of::<Cell>() == 12);
/// Bytes of search state per cell of a query's square.
pub(super) const CELL_BYTES: u64 = std::mem::size_of::<Cell>() as u64;

/// Half the side of a query's square, in cells (the radius and one cell more).
fn half_side(p: &DenseParams) -> i32 {
    (p.radius / p.cell).ceil() as i32 + 1
}

/// Cells of a query's square ([`Local::new`]); `p` validated.
pub(super) fn square_cells(p: &DenseParams) -> u64 {
    let side = 2 * u64::from(half_side(p).unsigned_abs()) + 1;
    side * side
}

/// Set in [`Cell::link`] once the search settles the cell.
const CLOSED: u8 = 0x80;
/// [`Cell::link`]'s low bits where the cell has no parent.
const NO_PARENT: u8 = 0x0f;

impl Cell {
    fn closed(&self) -> bool {
        self.link & CLOSED != 0
    }

    /// The step (into [`NEIGHBOURS`]) from the parent, `None` for the start.
    fn step(&self) -> Option<usize> {
        let s = self.link & !CLOSED;
        (s != NO_PARENT).then_some(s as usize)
    }
}

impl Default for Cell {
    fn default() -> Cell {
        Cell {
            ground: f32::NAN,
            g: f32::INFINITY,
            fit: FIT_UNKNOWN,
            vis: VIS_UNKNOWN,
            hint: 0,
            link: NO_PARENT,
        }
    }
}

#[derive(Clone)]
pub(super) struct Local {
    pub qi: usize,
    pub group: u32,
    /// The walk surface's tiles under the square.
    window: Window,
    observers: Vec<Vec3>,
    /// The agent's standing height (a prone body's length follows it).
    height: f32,
    i0: i32,
    j0: i32,
    side: i32,
    /// `side` as a reciprocal for [`row_of`].
    by_side: u64,
    start: u32,
    agent: Vec3,
    cell: f32,
    /// Per cell of the square, row by row.
    cells: Vec<Cell>,
    /// Per cell, the prefetch round that last reached it (the eager strategy's alone).
    stamps: Vec<u32>,
    round: u32,
    /// The visibility cache's block this search looked up last.
    block: Option<BlockHint>,
    /// Cells with something in flight, filled from the caches after each wave.
    pending: Vec<u32>,
    /// Cells a wave left short of an answer, whose next stage the next wave carries.
    unsettled: Vec<u32>,
    heap: BucketQueue,
    candidates: Vec<(u32, Posture)>,
    turned_down: Vec<u32>,
    pub phase: Phase,
    pub answer: DenseAnswer,
    /// Ask for everything ahead at once (a GPU, where each wave is a wait): every cell the
    /// agent can reach within the radius, every posture of a hidden head in one stage. Else
    /// (the CPU, where a wave costs no wait) a cell is asked for when the search first reaches
    /// it, and its next stage in the wave after each one: the searched cells and the ring
    /// ahead of them.
    pub eager: bool,
    /// Trace a cell's prone head from every observer at once rather than the first one
    /// first (a batch: fewer, larger waves).
    pub all_eyes: bool,
}

/// Path lengths in the heap as 1e-4 m integers (exact ordering, no NaN); `g >= 0`, so adding
/// a half and truncating rounds (without a call to the C library's `roundf`).
fn key(g: f32) -> u32 {
    (g * 1e4 + 0.5) as u32
}

/// Bits of the fixed-point reciprocal in [`reciprocal`] and [`row_of`].
const RECIPROCAL_BITS: u32 = 40;

/// `2^40 / side`, rounded up: with it [`row_of`] divides by `side` with a multiply and a
/// shift, where an integer division costs a search's every cell lookup tens of cycles.
fn reciprocal(side: i32) -> u64 {
    (1u64 << RECIPROCAL_BITS).div_ceil(side as u64)
}

/// `idx / side`, exactly, for `idx < side^2` and `side < 2^13` (the grid limit keeps a
/// square's side under 4,200): the reciprocal's rounding adds under `idx / 2^40 < 1 / side`,
/// which never carries the quotient to the next integer.
fn row_of(idx: u32, by_side: u64) -> i32 {
    ((u64::from(idx) * by_side) >> RECIPROCAL_BITS) as i32
}

/// For each diagonal of [`NEIGHBOURS`] (in order), the two straight ones beside it.
const DIAGONAL_SIDES: [(usize, usize); 4] = [(0, 2), (1, 2), (0, 3), (1, 3)];

pub(super) const NEIGHBOURS: [(i32, i32); 8] = [
    (1, 0),
    (-1, 0),
    (0, 1),
    (0, -1),
    (1, 1),
    (-1, 1),
    (1, -1),
    (-1, -1),
];

impl Local {
    pub fn new(
        qi: usize,
        q: &DenseQuery,
        p: &DenseParams,
        shared: &Shared,
        surface: &Surface,
    ) -> Local {
        let a = q.agent.position;
        let (ci, cj) = ((a.x / p.cell).floor() as i32, (a.z / p.cell).floor() as i32);
        let r = half_side(p);
        let side = 2 * r + 1;
        let n = (side * side) as usize;
        let start = (r + r * side) as u32;
        let mut s = Local {
            qi,
            group: shared.group_of[qi],
            window: surface.window(surface.shape_of(&q.agent), ci - r, cj - r, side),
            observers: q.observers.clone(),
            height: q.agent.height(),
            i0: ci - r,
            j0: cj - r,
            side,
            by_side: reciprocal(side),
            start,
            agent: a,
            cell: p.cell,
            cells: vec![Cell::default(); n],
            stamps: Vec::new(),
            round: 0,
            block: None,
            pending: Vec::new(),
            unsettled: Vec::new(),
            heap: BucketQueue::new(key(p.cell * std::f32::consts::SQRT_2).saturating_add(1)),
            candidates: Vec::new(),
            turned_down: Vec::new(),
            phase: Phase::Searching,
            answer: DenseAnswer {
                choice: None,
                rejected: Vec::new(),
                explored: Vec::new(),
                explored_cells: 0,
                rays: 0,
            },
            eager: false,
            all_eyes: false,
        };
        // The agent stands where it is, standing.
        let st = start as usize;
        s.cells[st].ground = a.y;
        s.cells[st].fit = 1 + Posture::Standing as u8;
        s.cells[st].g = 0.0;
        s.heap.push(key(0.0), start);
        if q.observers.is_empty() {
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
    }

    fn cell_of(&self, idx: u32) -> (i32, i32) {
        let z = row_of(idx, self.by_side);
        let x = idx as i32 - z * self.side;
        (self.i0 + x, self.j0 + z)
    }

    fn index(&self, i: i32, j: i32) -> Option<u32> {
        let (x, z) = (i - self.i0, j - self.j0);
        (x >= 0 && z >= 0 && x < self.side && z < self.side).then(|| (x + z * self.side) as u32)
    }

    /// The ground point of a cell: its centre at its ground height (the agent's feet for the
    /// agent's own cell).
    pub fn point(&self, idx: u32) -> Vec3 {
        if idx == self.start {
            return self.agent;
        }
        let (i, j) = self.cell_of(idx);
        Vec3::new(
            (i as f32 + 0.5) * self.cell,
            self.cells[idx as usize].ground,
            (j as f32 + 0.5) * self.cell,
        )
    }

    fn in_radius(&self, i: i32, j: i32, p: &DenseParams) -> bool {
        let c = Vec2::new((i as f32 + 0.5) * p.cell, (j as f32 + 0.5) * p.cell);
        c.distance_squared(Vec2::new(self.agent.x, self.agent.z)) <= p.radius * p.radius
    }

    /// Whether the agent can enter cell `idx` from a cell at `from_y`: what fits there
    /// (`1 + posture`), or `None`. The cell's floor is the one within a step of `from_y`
    /// nearest to it; it is fixed when the search first reaches the cell (its first path
    /// length), so looking ahead never changes which floor that is.
    #[inline(always)]
    fn enter(&mut self, idx: u32, from_y: f32, p: &DenseParams) -> Option<u8> {
        let c = self.cells[idx as usize];
        if c.closed() || c.g.is_finite() {
            return ((c.ground - from_y).abs() <= p.step_height && c.fit > 0).then_some(c.fit);
        }
        self.enter_unreached(idx, from_y, p)
    }

    /// [`Local::enter`] for a cell no path has reached yet: its floor from the walk surface.
    /// Only cells one cell or more inside the square's edge are entered (the radius keeps
    /// them there anyway), so every neighbour of an entered cell lies in the square.
    #[inline(never)]
    fn enter_unreached(&mut self, idx: u32, from_y: f32, p: &DenseParams) -> Option<u8> {
        let (i, j) = self.cell_of(idx);
        let (x, z) = (i - self.i0, j - self.j0);
        let inside = x >= 1 && z >= 1 && x < self.side - 1 && z < self.side - 1;
        if !inside || !self.in_radius(i, j, p) {
            return None;
        }
        let k = idx as usize;
        let best = floor_near(self.window.floors(i, j), from_y, p.step_height)?;
        if self.cells[k].ground.to_bits() != best.y.to_bits() {
            self.cells[k].ground = best.y;
            self.cells[k].fit = best.fit;
            self.cells[k].vis = VIS_UNKNOWN;
        }
        (best.fit > 0).then_some(best.fit)
    }

    /// The neighbour of `u` one step `NEIGHBOURS[step]` away; `u` must be the start or an
    /// entered cell, whose neighbours all lie in the square.
    fn neighbour(&self, u: u32, step: usize) -> u32 {
        let (di, dj) = NEIGHBOURS[step];
        u.wrapping_add_signed(di + dj * self.side)
    }

    /// The visibility cache key of `idx`: its cell, ground and observer group; the agent's own
    /// cell is seen at the agent's feet, not the cell centre, so it is keyed by that exact
    /// point (the group's top bit set).
    fn vis_key(&self, idx: u32) -> VisKey {
        if idx == self.start {
            let a = self.agent;
            let xz = (u64::from(a.x.to_bits()) << 32) | u64::from(a.z.to_bits());
            return (xz, a.y.to_bits() as i32, self.group | START_KEY);
        }
        let (i, j) = self.cell_of(idx);
        (
            cell_key(i, j),
            cm(self.cells[idx as usize].ground),
            self.group,
        )
    }

    /// Visibility of `idx`, resolved to exposed or hidden(p); `None` while a stage is in
    /// flight (requested).
    fn vis_of(&mut self, idx: u32, shared: &Shared, wave: &mut Wave) -> Option<u8> {
        let k = idx as usize;
        let code = self.cells[k].vis & !VIS_PENDING;
        if resolved(code) {
            return Some(code);
        }
        if self.cells[k].vis & VIS_PENDING != 0 {
            return None;
        }
        let key = self.vis_key(idx);
        if let Some(v) = shared.vis.get_near(&key, &mut self.block) {
            if v != code {
                self.cells[k].vis = v;
                return self.vis_of(idx, shared, wave);
            }
        }
        self.cells[k].vis |= VIS_PENDING;
        self.pending.push(idx);
        let all_eyes = self.all_eyes && (code == VIS_UNKNOWN || head_first(code));
        wave.fresh(Ask {
            key,
            at: self.point(idx),
            code,
            first: self.cells[k].hint,
            fit: self.cells[k].fit,
            full: self.eager || all_eyes,
            qi: self.qi,
        });
        None
    }

    /// The observer to try first at a cell reached from `u`: the one that saw `u`, else the
    /// one `u` was to try.
    fn hint_from(&self, u: u32) -> u8 {
        let code = self.cells[u as usize].vis & !VIS_PENDING;
        if exposed(code) {
            code - VIS_SEEN
        } else {
            self.cells[u as usize].hint
        }
    }

    /// Whether a prone body lies clear at `idx` toward every observer: every cell under its
    /// length (sampled at half a cell) has a floor, within a step of the one before, where the
    /// prone disc fits. The walk surface answers it without a ray.
    fn prone_lies(&self, idx: u32, p: &DenseParams) -> bool {
        let at = self.point(idx);
        let (back, front) = (
            crate::cover::body::PRONE_BACK * self.height,
            crate::cover::body::PRONE_FRONT * self.height,
        );
        let n = |reach: f32| (reach / (0.5 * p.cell)).ceil() as i32;
        self.observers.iter().all(|o| {
            let to = Vec2::new(o.x - at.x, o.z - at.z);
            let dir = if to.length_squared() > 1e-12 {
                to.normalize()
            } else {
                Vec2::X
            };
            [(dir, front), (-dir, back)].iter().all(|&(d, reach)| {
                let mut y = at.y;
                (1..=n(reach)).all(|s| {
                    let q = Vec2::new(at.x, at.z) + d * (reach * s as f32 / n(reach) as f32);
                    let (i, j) = ((q.x / p.cell).floor() as i32, (q.y / p.cell).floor() as i32);
                    let f = self
                        .window
                        .floors(i, j)
                        .iter()
                        .filter(|f| (f.y - y).abs() <= p.step_height && f.fit > 0)
                        .min_by(|a, b| (a.y - y).abs().total_cmp(&(b.y - y).abs()));
                    f.map(|f| y = f.y).is_some()
                })
            })
        })
    }

    /// Whether the agent walks on from `idx`: crouching or standing fits there (`fit` is
    /// `1 + posture`).
    fn walks_on(&self, idx: u32) -> bool {
        let fit = self.cells[idx as usize].fit;
        idx == self.start || fit != FIT_UNKNOWN && fit > Posture::Crouching as u8
    }

    /// Asks for the visibility of every cell the agent can enter from the open nodes (the
    /// eager strategy): a flood fill over the cells within the radius.
    fn prefetch(&mut self, p: &DenseParams, shared: &Shared, wave: &mut Wave) {
        self.round += 1;
        self.stamps.resize(self.cells.len(), 0);
        let mut queue: std::collections::VecDeque<u32> = self
            .heap
            .iter()
            .filter(|&&(k, n)| {
                let n = n as usize;
                !self.cells[n].closed() && key(self.cells[n].g) == k
            })
            .map(|&(_, n)| n)
            .collect();
        for &n in &queue {
            self.stamps[n as usize] = self.round;
        }
        while let Some(u) = queue.pop_front() {
            self.vis_of(u, shared, wave);
            if !self.walks_on(u) {
                continue;
            }
            let y = self.cells[u as usize].ground;
            for step in 0..4 {
                let v = self.neighbour(u, step);
                if self.stamps[v as usize] == self.round {
                    continue;
                }
                self.stamps[v as usize] = self.round;
                if self.enter(v, y, p).is_some() {
                    self.cells[v as usize].hint = self.hint_from(u);
                    queue.push_back(v);
                }
            }
        }
    }

    /// Whether the search asked for visibility not traced yet.
    pub fn waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Files what the last wave traced for this search's cells in flight (every request of a
    /// wave is traced in it; a visibility stage another query asked for is taken as it is).
    /// The lazy search asks for the next stage of a cell left unresolved in the next wave.
    pub fn sync(&mut self, shared: &Shared) {
        let mut pending = std::mem::take(&mut self.pending);
        for &idx in &pending {
            let k = idx as usize;
            if self.cells[k].vis & VIS_PENDING != 0 {
                let code = self.cells[k].vis & !VIS_PENDING;
                let key = self.vis_key(idx);
                self.cells[k].vis = shared.vis.get_near(&key, &mut self.block).unwrap_or(code);
            }
            if !self.eager && !resolved(self.cells[k].vis) {
                self.unsettled.push(idx);
            }
        }
        pending.clear();
        self.pending = pending;
    }

    /// Asks for the next stage of the cells the last waves left unresolved: every head, and
    /// the bodies of cells within `horizon` of path length (a body costs tens of rays, and
    /// the search may stop before it reaches a farther one).
    fn ask_unsettled(&mut self, horizon: f32, shared: &Shared, wave: &mut Wave) {
        let mut cells = std::mem::take(&mut self.unsettled);
        cells.retain(|&idx| {
            let c = self.cells[idx as usize];
            let code = c.vis & !VIS_PENDING;
            let later = !(code == VIS_UNKNOWN || head_first(code)) && c.g > horizon;
            if !later {
                self.vis_of(idx, shared, wave);
            }
            later
        });
        cells.append(&mut self.unsettled);
        self.unsettled = cells;
    }

    /// Moves the search as far as what is known allows; what is missing goes into `wave`.
    pub fn advance(&mut self, p: &DenseParams, shared: &Shared, wave: &mut Wave) {
        loop {
            match self.phase {
                Phase::Done => return,
                Phase::Verifying { .. } => return,
                Phase::Searching | Phase::Window { .. } => {}
            }
            let Some((gk, u)) = self.heap.peek() else {
                self.conclude(p);
                continue;
            };
            let uk = u as usize;
            if self.cells[uk].closed() || key(self.cells[uk].g) != gk {
                self.heap.pop();
                continue;
            }
            let g = self.cells[uk].g;
            if let Phase::Window { end } = self.phase {
                if g > end {
                    self.conclude(p);
                    continue;
                }
            }
            if self.vis_of(u, shared, wave).is_none() {
                if self.eager {
                    self.prefetch(p, shared, wave);
                } else {
                    self.ask_unsettled(g + p.band, shared, wave);
                }
                return;
            }
            self.heap.pop();
            self.cells[uk].link |= CLOSED;
            let vis = self.cells[uk].vis & !VIS_PENDING;
            let hidden = (!exposed(vis))
                .then(|| Posture::ALL[(vis - VIS_HIDDEN) as usize])
                .filter(|&h| h > Posture::Prone || self.prone_lies(u, p));
            self.answer.explored_cells += 1;
            if p.explored {
                self.answer.explored.push(Explored {
                    position: self.point(u),
                    path_length: g,
                    cover: hidden.map_or(CellCover::Exposed, CellCover::Hidden),
                });
            }
            if let Some(posture) = hidden {
                if !self.turned_down.contains(&u) {
                    self.candidates.push((u, posture));
                    if self.phase == Phase::Searching {
                        self.phase = Phase::Window {
                            end: g + p.posture_tie,
                        };
                    }
                }
            }
            if self.walks_on(u) {
                self.relax(u, p, shared, wave);
            }
        }
    }

    /// Reaches the neighbours of `u` (closed just now); the lazy search asks for each cell's
    /// visibility as it first reaches it. A diagonal step needs both cells beside it; a
    /// diagonal cell is not looked at where one of them is not enterable or it is closed.
    fn relax(&mut self, u: u32, p: &DenseParams, shared: &Shared, wave: &mut Wave) {
        let (y, g) = (self.cells[u as usize].ground, self.cells[u as usize].g);
        let mut beside = [None; 4];
        for (step, b) in beside.iter_mut().enumerate() {
            let v = self.neighbour(u, step);
            *b = self.enter(v, y, p).map(|_| v);
        }
        for (step, v) in beside.into_iter().enumerate() {
            if let Some(v) = v {
                self.reach(u, (v, step), g + p.cell, shared, wave);
            }
        }
        for (k, &(a, b)) in DIAGONAL_SIDES.iter().enumerate() {
            if beside[a].is_none() || beside[b].is_none() {
                continue;
            }
            let v = self.neighbour(u, 4 + k);
            if !self.cells[v as usize].closed() && self.enter(v, y, p).is_some() {
                let ng = g + p.cell * std::f32::consts::SQRT_2;
                self.reach(u, (v, 4 + k), ng, shared, wave);
            }
        }
    }

    /// A step from `u` (`NEIGHBOURS[step]`) reaches `v` with path length `ng`: kept where
    /// shorter.
    #[inline(always)]
    fn reach(
        &mut self,
        u: u32,
        (v, step): (u32, usize),
        ng: f32,
        shared: &Shared,
        wave: &mut Wave,
    ) {
        let vk = v as usize;
        if ng < self.cells[vk].g && !self.cells[vk].closed() {
            let first = self.cells[vk].g == f32::INFINITY;
            self.cells[vk].g = ng;
            self.cells[vk].link = step as u8;
            self.cells[vk].hint = self.hint_from(u);
            self.heap.push(key(ng), v);
            if first && !self.eager {
                self.vis_of(v, shared, wave);
            }
        }
    }

    /// The tie window closed or the search ran out: pick a candidate, or give up.
    pub fn conclude(&mut self, p: &DenseParams) {
        let g = |n: u32| self.cells[n as usize].g;
        let best = self
            .candidates
            .iter()
            .copied()
            .max_by(|a, b| a.1.cmp(&b.1).then(g(b.0).total_cmp(&g(a.0))));
        self.phase = match best {
            None => Phase::Done,
            Some((node, posture)) if p.verify_intervis => Phase::Verifying { node, posture },
            Some((node, posture)) => {
                self.choose(node, posture, None, p);
                Phase::Done
            }
        };
    }

    /// The intervis verdict on the candidate awaiting it.
    pub fn verified(&mut self, pixels: Vec<u32>, p: &DenseParams) {
        let Phase::Verifying { node, posture } = self.phase else {
            return;
        };
        if pixels.iter().all(|&n| n == 0) {
            self.choose(node, posture, Some(pixels), p);
            self.phase = Phase::Done;
            return;
        }
        self.answer.rejected.push(Rejection {
            position: self.point(node),
            posture,
            by: Check::Intervis,
            exposed: pixels,
        });
        self.turned_down.push(node);
        self.candidates.retain(|&(n, _)| n != node);
        if self.answer.rejected.len() >= p.max_rejections {
            self.phase = Phase::Done;
        } else if self.candidates.is_empty() {
            self.phase = Phase::Searching;
        } else {
            self.conclude(p);
        }
    }

    pub fn pending_choice(&self) -> Option<(Vec3, Posture)> {
        match self.phase {
            Phase::Verifying { node, posture } => Some((self.point(node), posture)),
            _ => None,
        }
    }

    fn choose(&mut self, node: u32, posture: Posture, pixels: Option<Vec<u32>>, p: &DenseParams) {
        self.answer.choice = Some(self.choice(node, posture, pixels, p));
    }

    /// The choice of `node` in `posture`, as the search stands.
    fn choice(
        &self,
        node: u32,
        posture: Posture,
        pixels: Option<Vec<u32>>,
        p: &DenseParams,
    ) -> DenseChoice {
        let path = self.path(node, p);
        DenseChoice {
            position: self.point(node),
            posture,
            path_length: path.windows(2).fold(0.0, |s, w| s + w[0].distance(w[1])),
            path,
            exposure: vec![0.0; self.observers.len()],
            decided_by: if pixels.is_some() {
                Check::Intervis
            } else {
                Check::Body
            },
            intervis_exposed: pixels,
        }
    }

    /// The choice the awaited candidate makes if its measurement shows no pixel (its pixels
    /// left empty).
    pub fn choice_if_hidden(&self, p: &DenseParams) -> Option<DenseChoice> {
        let Phase::Verifying { node, posture } = self.phase else {
            return None;
        };
        Some(self.choice(node, posture, Some(Vec::new()), p))
    }

    /// The grid path to `node`, string-pulled over cells the search closed.
    fn path(&self, node: u32, p: &DenseParams) -> Vec<Vec3> {
        let mut chain = vec![node];
        while let Some(step) = self.cells[*chain.last().unwrap() as usize].step() {
            let (i, j) = self.cell_of(*chain.last().unwrap());
            let (di, dj) = NEIGHBOURS[step];
            chain.push(
                self.index(i - di, j - dj)
                    .expect("a parent lies in the square"),
            );
        }
        chain.reverse();
        let pts: Vec<Vec3> = chain.iter().map(|&n| self.point(n)).collect();
        let mut out = vec![pts[0]];
        let mut anchor = 0;
        while anchor + 1 < pts.len() {
            let mut far = anchor + 1;
            while far + 1 < pts.len() && self.straight(pts[anchor], pts[far + 1], p) {
                far += 1;
            }
            out.push(pts[far]);
            anchor = far;
        }
        out
    }

    /// Whether the straight line from `a` to `b` crosses only closed cells the agent walks on
    /// (the last one may be any closed cell), within a step of each other (sampled at a
    /// quarter cell).
    fn straight(&self, a: Vec3, b: Vec3, p: &DenseParams) -> bool {
        let n = ((a.distance(b) / (p.cell * 0.25)).ceil() as usize).max(1);
        let mut y = a.y;
        let last = self.index((b.x / p.cell).floor() as i32, (b.z / p.cell).floor() as i32);
        (1..=n).all(|k| {
            let q = a.lerp(b, k as f32 / n as f32);
            let Some(v) = self.index((q.x / p.cell).floor() as i32, (q.z / p.cell).floor() as i32)
            else {
                return false;
            };
            let vk = v as usize;
            let ok = self.cells[vk].closed()
                && (self.cells[vk].ground - y).abs() <= p.step_height
                && (self.walks_on(v) || Some(v) == last);
            y = self.cells[vk].ground;
            ok
        })
    }
}

/// The floor within `step` of `from_y` nearest to it: where a walker at `from_y` enters a cell.
pub(super) fn floor_near(floors: &[Floor], from_y: f32, step: f32) -> Option<&Floor> {
    floors
        .iter()
        .filter(|f| (f.y - from_y).abs() <= step)
        .min_by(|a, b| (a.y - from_y).abs().total_cmp(&(b.y - from_y).abs()))
}

/// Centimetres, rounded half away from zero (adding a signed half and truncating: no call to
/// the C library's `roundf`, which costs a search more than its cache lookups).
pub(super) fn cm(y: f32) -> i32 {
    let c = y * 100.0;
    (c + 0.5f32.copysign(c)) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reciprocal divides exactly: every side up to the grid limit's (and past it), at the
    /// quotients' edges (`k * side - 1`, `k * side`) and at the largest index of each square.
    #[test]
    fn rows_by_reciprocal_equal_integer_division() {
        let limit = (crate::limits::MAX_GRID_CELLS as f64).sqrt() as u32 + 8;
        for side in (1..=limit).chain([8191]) {
            let by = reciprocal(side as i32);
            let last = side * side - 1;
            let probes = (1..side)
                .step_by(((side / 64) as usize).max(1))
                .flat_map(|k| [k * side - 1, k * side])
                .chain([0, last]);
            for idx in probes {
                assert_eq!(row_of(idx, by), (idx / side) as i32, "{idx} / {side}");
            }
        }
    }
}
