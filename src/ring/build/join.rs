//! Joining parts of the graph that the straight walks left cut off from the centre.
//!
//! The rings' walks are straight lines, so a room entered by one doorway, a creek bed left by
//! its stairs or the far side of a bridge is joined to the rest only when a walk happens to run
//! through that narrow way: its nodes, often the ones in cover, stand connected among
//! themselves but out of the centre's reach. After the ring and annotation tasks and the
//! exploring ([`super::explore`], which joins the parts its followers pass), each part still
//! cut off is joined once from every quarter of the circle it spans (so a creek bed long enough
//! to hold two stairs gets a way up each), from its first node there:
//!
//! 1. The ground is divided into cells one ring gap wide. The goal is the node of the centre's
//!    part nearest to the first node within two cells (else the nearest of all), and a
//!    straight walk heads for it.
//! 2. Where the walk stops, a wall follower ([`super::follow`]) keeps the edge of the walkable
//!    ground on its right hand, and another on its left, each leaving the wall where it
//!    crosses the line to the goal nearer to it. The first time a follower enters a cell it
//!    tries a straight walk to the nearest node of the centre's part within two cells; the
//!    first walk that arrives (at the goal or at such a node) ends its way. Of the two ways,
//!    the shorter is kept.
//! 3. The way is string-pulled into straight walks ([`super::pull`]), each ending on a node
//!    (a [`crate::ring::NodeKind::Passage`] where none stood), so every connection stays a
//!    straight walk on the surface.
//!
//! A part neither follower joins (a roof, a closed yard) is given up. A follower takes at most
//! [`MAX_FOLLOW`] steps, all of a build's followers at most [`super::RingParams::search`],
//! inner parts first. The work is split into tasks like the rest of the build: a task takes at
//! most [`FOLLOW_STEP`] steps and ends after a walk; a walk, or a task without one, counts one
//! against a build's budget.

use super::follow::{self, Follower, Hand, Move};
use super::parts::Parts;
use super::pull::{Pull, Pulled};
use super::Builder;
use crate::nav::WalkSurface;
use glam::{Vec2, Vec3Swizzles};
use rustc_hash::FxHashSet;

/// Steps one follower task takes at most (about the time of one walk).
pub const FOLLOW_STEP: usize = 8;
/// Most steps one wall follower takes (256 m of wall at the default 0.25 m spacing).
pub const MAX_FOLLOW: usize = 1024;

/// Cells around a follower's cell whose nodes it tries to walk to.
const NEAR_CELLS: usize = 2;

/// Quarters of the circle: a part is joined from each it spans.
const SECTORS: f32 = 4.0;

/// The joining phase of a build.
pub(super) enum Joining {
    On(Box<Joiner>),
    Done,
}

impl Joining {
    pub fn done(&self) -> bool {
        match self {
            Joining::On(j) => matches!(j.state, State::Done),
            Joining::Done => true,
        }
    }
}

pub(super) struct Joiner {
    /// Union-find over slots (the centre's part has root 0, the least slot).
    root: Vec<u32>,
    /// Per slot: its part before any joining (its root then).
    part: Vec<u32>,
    /// Parts and quarters joined from, and parts given up.
    started: FxHashSet<(u32, u32)>,
    failed: FxHashSet<u32>,
    cells: Cells,
    /// Counts followers: a cell's walk is tried once per follower.
    follower: u32,
    /// The slot the current way starts from.
    source: u32,
    /// Slots before it have been looked at.
    next: usize,
    state: State,
}

/// Cells one ring gap wide over the circle, each holding a node of the centre's part that
/// stands in it, if any.
struct Cells {
    corner: Vec2,
    size: f32,
    side: usize,
    /// Per cell: 1 + the least slot of the centre's part standing in it, or 0.
    node: Vec<u32>,
    /// Per cell: the last follower that tried a walk from it.
    tried: Vec<u32>,
}

enum State {
    Scan,
    Follow(Box<Following>),
    Pull(Pull),
    Done,
}

/// A follower of the current part and quarter.
struct Following {
    f: Follower,
    /// The start and where the straight walk from it stopped.
    start: Vec<u32>,
    /// `None` while the right hand follows; then the right hand's way, if it found one.
    right: Option<Option<Vec<u32>>>,
}

impl Cells {
    fn new(b: &Builder, part: &[u32], surface: &WalkSurface) -> Cells {
        let size = b.params.ring_gap();
        // At most 2 x 256 + 1 cells a side (`MAX_RINGS`).
        let side = 2 * b.params.rings as usize + 1;
        let mut c = Cells {
            corner: b.at - Vec2::splat(b.params.radius + 0.5 * size),
            size,
            side,
            node: vec![0; side * side],
            tried: vec![0; side * side],
        };
        for (s, slot) in b.slots.iter().enumerate() {
            if let (0, Some(p)) = (part[s], slot.place) {
                if let Some(k) = c.index(surface.position(p).xz()) {
                    if c.node[k] == 0 {
                        c.node[k] = s as u32 + 1;
                    }
                }
            }
        }
        c
    }

    fn index(&self, p: Vec2) -> Option<usize> {
        let q = (p - self.corner) / self.size;
        // Truncation is the floor for the coordinates kept.
        let (x, z) = (q.x as usize, q.y as usize);
        let ok = q.min_element() >= 0.0 && x < self.side && z < self.side;
        ok.then_some(z * self.side + x)
    }

    /// The node of the centre's part nearest to `p` among those in the cells within
    /// [`NEAR_CELLS`] of `p`'s cell (straight-line distance; ties to the lower slot).
    fn near(&self, b: &Builder, surface: &WalkSurface, p: Vec2) -> Option<u32> {
        let k = self.index(p)?;
        let (x, z) = ((k % self.side) as isize, (k / self.side) as isize);
        let r = NEAR_CELLS as isize;
        let mut best: Option<(f32, u32)> = None;
        for dz in -r..=r {
            for dx in -r..=r {
                let (cx, cz) = (x + dx, z + dz);
                if cx < 0 || cz < 0 || cx >= self.side as isize || cz >= self.side as isize {
                    continue;
                }
                let n = self.node[cz as usize * self.side + cx as usize];
                let Some(place) = n.checked_sub(1).and_then(|s| b.slots[s as usize].place) else {
                    continue;
                };
                let d = surface.position(place).xz().distance_squared(p);
                if best.is_none_or(|(bd, bs)| (d, n - 1) < (bd, bs)) {
                    best = Some((d, n - 1));
                }
            }
        }
        best.map(|b| b.1)
    }
}

impl Joiner {
    /// `None` when every node is in the centre's part, or joining is off; `parts`: the parts
    /// the connections made so far join.
    fn new(b: &Builder, surface: &WalkSurface, mut parts: Parts) -> Option<Joiner> {
        if b.params.search == 0 {
            return None;
        }
        let part = parts.roots();
        if !(1..part.len()).any(|s| part[s] != 0 && b.slots[s].place.is_some()) {
            return None;
        }
        Some(Joiner {
            cells: Cells::new(b, &part, surface),
            root: part.clone(),
            part,
            started: FxHashSet::default(),
            failed: FxHashSet::default(),
            follower: 0,
            source: 0,
            next: 1,
            state: State::Scan,
        })
    }

    fn find(&mut self, mut s: u32) -> u32 {
        while self.root[s as usize] != s {
            let up = self.root[self.root[s as usize] as usize];
            self.root[s as usize] = up;
            s = up;
        }
        s
    }

    fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        self.root[ra.max(rb) as usize] = ra.min(rb);
    }
}

impl Builder {
    /// Runs one joining task (see the module docs).
    pub(super) fn join_task(&mut self, surface: &WalkSurface) {
        let Some(mut j) = self.joiner.take() else {
            // The first joining task: nothing else to do when nothing is cut off.
            let parts = self.parts();
            self.joiner = Some(
                Joiner::new(self, surface, parts)
                    .map_or(Joining::Done, |j| Joining::On(Box::new(j))),
            );
            return;
        };
        if let Joining::On(j) = &mut j {
            match j.state {
                State::Scan => self.join_scan(j, surface),
                State::Follow(..) => self.join_follow(j, surface),
                State::Pull(_) => self.join_pull(j, surface),
                State::Done => {}
            }
        }
        self.joiner = Some(j);
    }

    fn search_left(&self) -> bool {
        self.report.searched < u64::from(self.params.search)
    }

    /// Finds the next part and quarter not joined from, and walks straight from its first
    /// node towards the goal: a way when it arrives, else the right hand's follower.
    fn join_scan(&mut self, j: &mut Joiner, surface: &WalkSurface) {
        while j.next < self.slots.len() && self.search_left() {
            let s = j.next;
            j.next += 1;
            let Some(place) = self.slots[s].place else {
                continue;
            };
            if j.part[s] == 0 || j.failed.contains(&j.part[s]) {
                continue;
            }
            let p = surface.position(place).xz();
            let d = p - self.at;
            let turn = d.y.atan2(d.x) / std::f32::consts::TAU + 0.5;
            let sector = ((turn * SECTORS) as u32).min(SECTORS as u32 - 1);
            if !j.started.insert((j.part[s], sector)) {
                continue;
            }
            let Some(goal) = self.goal(j, surface, p) else {
                continue;
            };
            j.source = s as u32;
            let w = self.walk(surface, place, surface.position(goal).xz());
            let mut path = vec![place];
            if w.end != place {
                path.push(w.end);
            }
            if w.arrived() && w.end == goal {
                j.state = State::Pull(Pull::new(path, j.source));
            } else {
                j.follower += 1;
                let f = Follower::new(surface, path.clone(), goal, Hand::Right, MAX_FOLLOW);
                j.state = State::Follow(Box::new(Following {
                    f,
                    start: path,
                    right: None,
                }));
            }
            return;
        }
        j.state = State::Done;
    }

    /// Up to [`FOLLOW_STEP`] steps of the current follower, up to and including the first
    /// that tries a walk.
    fn join_follow(&mut self, j: &mut Joiner, surface: &WalkSurface) {
        let State::Follow(mut g) = std::mem::replace(&mut j.state, State::Scan) else {
            return;
        };
        let f = &mut g.f;
        let walks = self.report.walks;
        let r2 = self.params.radius * self.params.radius;
        let (mut done, mut took) = (None, 0);
        for _ in 0..FOLLOW_STEP {
            if !self.search_left() {
                // The build's search budget is spent: this follower ends (a way the right
                // hand found is still kept), and no other starts.
                done = Some(false);
                break;
            }
            took += 1;
            self.report.searched += 1;
            let (at, design) = (self.at, &self.design);
            let step = f.next(surface, |g| {
                g.distance_squared(at) <= r2 && design.allows(g)
            });
            match step {
                Move::Lost => done = Some(false),
                Move::Line => {
                    let w = self.walk(surface, f.at(), surface.position(f.goal()).xz());
                    if f.left_wall(surface, w) {
                        done = Some(true);
                    }
                }
                Move::Step(p) => {
                    if let Some(node) = self.try_cell(j, surface, p) {
                        f.arrive(node);
                        done = Some(true);
                    }
                }
            }
            if done.is_some() || self.report.walks != walks {
                break;
            }
        }
        self.count_task(took, walks);
        match done {
            None => j.state = State::Follow(g),
            Some(found) => self.follower_done(j, surface, *g, found),
        }
    }

    /// After the right hand's follower, the left hand's from the same start (taking no more
    /// steps than the right hand's way did); after both, the shorter way found is pulled, or
    /// the part is given up.
    fn follower_done(&mut self, j: &mut Joiner, surface: &WalkSurface, g: Following, found: bool) {
        let (goal, steps) = (g.f.goal(), g.f.steps());
        let way = found.then(|| g.f.into_path());
        match g.right {
            None => {
                j.follower += 1;
                let most = if way.is_some() { steps } else { MAX_FOLLOW };
                let f = Follower::new(surface, g.start.clone(), goal, Hand::Left, most);
                j.state = State::Follow(Box::new(Following {
                    f,
                    start: g.start,
                    right: Some(way),
                }));
            }
            Some(right) => {
                let length = |p: &Vec<u32>| follow::length(surface, p);
                let best = [right, way]
                    .into_iter()
                    .flatten()
                    .min_by(|a, b| length(a).total_cmp(&length(b)));
                match best {
                    Some(path) => j.state = State::Pull(Pull::new(path, j.source)),
                    None => {
                        j.failed.insert(j.part[j.source as usize]);
                    }
                }
            }
        }
    }

    /// The first time the current follower enters a cell, a walk from `p` to the nearest
    /// node of the centre's part in the cells around; its place when the walk arrives there.
    fn try_cell(&mut self, j: &mut Joiner, surface: &WalkSurface, p: u32) -> Option<u32> {
        let xz = surface.position(p).xz();
        let k = j.cells.index(xz)?;
        if j.cells.tried[k] == j.follower {
            return None;
        }
        j.cells.tried[k] = j.follower;
        let to = self.slots[j.cells.near(self, surface, xz)? as usize].place?;
        let w = self.walk(surface, p, surface.position(to).xz());
        (w.arrived() && w.end == to).then_some(to)
    }

    /// Where a way from `p` heads: the nearest node of the centre's part in the cells around,
    /// else the nearest of all.
    fn goal(&self, j: &Joiner, surface: &WalkSurface, p: Vec2) -> Option<u32> {
        if let Some(s) = j.cells.near(self, surface, p) {
            return self.slots[s as usize].place;
        }
        let d = |q: u32| surface.position(q).xz().distance_squared(p);
        (0..self.slots.len())
            .filter(|&s| j.part[s] == 0)
            .filter_map(|s| self.slots[s].place)
            .min_by(|&a, &b| d(a).total_cmp(&d(b)).then(a.cmp(&b)))
    }

    /// One walk of string-pulling the way found ([`super::pull`]).
    fn join_pull(&mut self, j: &mut Joiner, surface: &WalkSurface) {
        let State::Pull(mut pull) = std::mem::replace(&mut j.state, State::Scan) else {
            return;
        };
        match self.pull_walk(&mut pull, surface) {
            Pulled::More => j.state = State::Pull(pull),
            Pulled::Failed => {
                j.failed.insert(j.part[j.source as usize]);
            }
            Pulled::Corner {
                from,
                node,
                new,
                end,
            } => {
                if new {
                    j.root.push(node);
                    j.part.push(j.part[j.source as usize]);
                }
                j.union(from, node);
                if end {
                    self.report.joined += 1;
                } else {
                    j.state = State::Pull(pull);
                }
            }
        }
    }
}
