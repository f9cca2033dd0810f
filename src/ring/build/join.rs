//! Joining parts of the graph that the straight walks left cut off from the centre.
//!
//! The rings' walks are straight lines, so a room entered by one doorway, a creek bed left by
//! its stairs or the far side of a bridge is joined to the rest only when a walk happens to run
//! through that narrow way: its nodes, often the ones in cover, stand connected among
//! themselves but out of the centre's reach. After the ring and annotation tasks, each such
//! part is searched out from once in every quarter of the circle it spans (so a creek bed long
//! enough to hold two stairs gets a way up each): breadth first on the walk surface from the
//! part's first node in that quarter, by the axis steps a straight walk takes, inside the
//! radius and the leash. The ground is divided into cells one ring gap wide, each given the
//! node of the centre's part nearest to it over the cells; the first time a search enters a
//! cell it tries a straight walk to that node, and the first walk that arrives ends the
//! search. The way found is string-pulled into straight walks, each ending on a node (a
//! [`NodeKind::Passage`] where none stood), so every connection stays a straight walk on the
//! surface.
//!
//! A search gives up after [`MAX_SEARCH`] places, and marks the places it visited: later
//! searches neither start from nor enter them (a roof or a closed yard is searched once). All
//! searches of a build visit at most [`super::RingParams::search`] places, inner parts first.
//! The work is split into tasks like the rest of the build: a task visits at most
//! [`SEARCH_STEP`] places and ends after a walk; a walk, or a task without one, counts one
//! against a build's budget.

use super::{Builder, NodeKind};
use crate::nav::WalkSurface;
use glam::{Vec2, Vec3Swizzles};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::hash_map::Entry;
use std::collections::VecDeque;

/// Places one search task visits at most (about the time of one walk).
pub const SEARCH_STEP: usize = 8;
/// Most places one search visits before it gives up (128 m^2, a room of 11 m x 11 m, at the
/// default 0.25 m spacing).
pub const MAX_SEARCH: usize = 2048;

/// `came` of a place a search keeps out (outside the radius or the leash, or dead).
const NOWHERE: u32 = u32::MAX;

/// Quarters of the circle: a part is searched out from once in each it spans.
const SECTORS: f32 = 4.0;

/// The joining phase of a build.
pub(super) enum Joining {
    On(Joiner),
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
    /// Parts and quarters searched out from.
    started: FxHashSet<(u32, u32)>,
    /// Places visited by the current search, each with the place it came from.
    came: FxHashMap<u32, u32>,
    /// Places of searches that found no way, and the parts they started from.
    dead: FxHashSet<u32>,
    failed: FxHashSet<u32>,
    cells: Cells,
    search: u32,
    /// The slot the current search started from.
    source: u32,
    /// Slots before it have been looked at.
    next: usize,
    state: State,
}

/// Cells one ring gap wide over the circle, each with the node of the centre's part nearest
/// to it in steps over the cells (walls not considered).
struct Cells {
    corner: Vec2,
    size: f32,
    side: usize,
    /// Per cell: 1 + the slot, or 0 (no node of the centre's part).
    owner: Vec<u32>,
    /// Per cell: the last search that tried its walk.
    tried: Vec<u32>,
}

enum State {
    Scan,
    /// `order[head..]` is the queue; `order` every place visited.
    Search {
        order: Vec<u32>,
        head: usize,
    },
    Pull(Pull),
    Done,
}

/// String-pulling `path` (source to target): a straight walk is known from `path[at]` to
/// `path[good]`, and fails to `path[bad]`; `last` is the slot on `path[at]`.
struct Pull {
    path: Vec<u32>,
    at: usize,
    good: usize,
    bad: Option<usize>,
    last: u32,
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
            owner: vec![0; side * side],
            tried: vec![0; side * side],
        };
        let mut queue = VecDeque::new();
        for (s, slot) in b.slots.iter().enumerate() {
            if let (0, Some(p)) = (part[s], slot.place) {
                if let Some(k) = c.index(surface.position(p).xz()) {
                    if c.owner[k] == 0 {
                        c.owner[k] = s as u32 + 1;
                        queue.push_back(k);
                    }
                }
            }
        }
        while let Some(k) = queue.pop_front() {
            let (x, z) = (k % side, k / side);
            let near = [
                (x > 0).then(|| k - 1),
                (x + 1 < side).then(|| k + 1),
                (z > 0).then(|| k - side),
                (z + 1 < side).then(|| k + side),
            ];
            for n in near.into_iter().flatten() {
                if c.owner[n] == 0 {
                    c.owner[n] = c.owner[k];
                    queue.push_back(n);
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
}

impl Joiner {
    /// `None` when every node is in the centre's part, or joining is off.
    fn new(b: &Builder, surface: &WalkSurface) -> Option<Joiner> {
        if b.params.search == 0 {
            return None;
        }
        let n = b.slots.len();
        let mut root: Vec<u32> = (0..n as u32).collect();
        let find = |root: &mut Vec<u32>, mut s: u32| {
            while root[s as usize] != s {
                s = root[s as usize];
            }
            s
        };
        for e in &b.edges {
            let (ra, rb) = (find(&mut root, e[0]), find(&mut root, e[1]));
            root[ra.max(rb) as usize] = ra.min(rb);
        }
        let part: Vec<u32> = (0..n as u32).map(|s| find(&mut root, s)).collect();
        if !(1..n).any(|s| part[s] != 0 && b.slots[s].place.is_some()) {
            return None;
        }
        Some(Joiner {
            cells: Cells::new(b, &part, surface),
            root: part.clone(),
            part,
            started: FxHashSet::default(),
            came: FxHashMap::default(),
            dead: FxHashSet::default(),
            failed: FxHashSet::default(),
            search: 0,
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
            self.joiner = Some(Joiner::new(self, surface).map_or(Joining::Done, Joining::On));
            return;
        };
        if let Joining::On(j) = &mut j {
            match j.state {
                State::Scan => self.join_scan(j, surface),
                State::Search { .. } => self.join_search(j, surface),
                State::Pull(_) => self.join_pull(j, surface),
                State::Done => {}
            }
        }
        self.joiner = Some(j);
    }

    /// Finds the next part and quarter not searched out from and starts a search at its
    /// first node.
    fn join_scan(&mut self, j: &mut Joiner, surface: &WalkSurface) {
        while j.next < self.slots.len() && self.report.searched < u64::from(self.params.search) {
            let s = j.next;
            j.next += 1;
            let Some(place) = self.slots[s].place else {
                continue;
            };
            if j.part[s] == 0 || j.dead.contains(&place) || j.failed.contains(&j.part[s]) {
                continue;
            }
            let d = surface.position(place).xz() - self.at;
            let turn = d.y.atan2(d.x) / std::f32::consts::TAU + 0.5;
            let sector = ((turn * SECTORS) as u32).min(SECTORS as u32 - 1);
            if !j.started.insert((j.part[s], sector)) {
                continue;
            }
            j.search += 1;
            j.source = s as u32;
            j.came.clear();
            j.came.reserve(MAX_SEARCH + 4 * SEARCH_STEP);
            j.came.insert(place, place);
            j.state = State::Search {
                order: vec![place],
                head: 0,
            };
            return;
        }
        j.state = State::Done;
    }

    /// Visits up to [`SEARCH_STEP`] places of the current search, up to and including the
    /// first that tries a walk.
    fn join_search(&mut self, j: &mut Joiner, surface: &WalkSurface) {
        let State::Search {
            mut order,
            mut head,
        } = std::mem::replace(&mut j.state, State::Scan)
        else {
            return;
        };
        let walks = self.report.walks;
        let r2 = self.params.radius * self.params.radius;
        let stop = (head + SEARCH_STEP).min(order.len());
        while head < stop && self.report.walks == walks {
            let p = order[head];
            head += 1;
            self.report.searched += 1;
            if let Some(target) = self.try_cell(j, surface, p) {
                if std::env::var_os("DIAGJ").is_some() {
                    eprintln!(
                        "J ok {} from {:?} at {:?}",
                        order.len(),
                        surface.position(order[0]),
                        surface.position(p)
                    );
                }
                let mut path = vec![target, p];
                let mut q = p;
                while j.came[&q] != q {
                    q = j.came[&q];
                    path.push(q);
                }
                path.reverse();
                path.dedup();
                j.state = State::Pull(Pull {
                    path,
                    at: 0,
                    good: 0,
                    bad: None,
                    last: j.source,
                });
                return;
            }
            for q in axis_steps(surface, p) {
                if q == u32::MAX {
                    continue;
                }
                let Entry::Vacant(v) = j.came.entry(q) else {
                    continue;
                };
                let g = surface.position(q).xz();
                if g.distance_squared(self.at) > r2 || !self.design.allows(g) || j.dead.contains(&q)
                {
                    v.insert(NOWHERE); // kept out, and not looked at again
                    continue;
                }
                v.insert(p);
                order.push(q);
            }
        }
        if self.report.walks == walks {
            self.report.search_steps += 1;
        }
        if self.report.searched >= u64::from(self.params.search) {
            j.state = State::Done; // the build's search budget is spent
        } else if head < order.len() && order.len() <= MAX_SEARCH {
            j.state = State::Search { order, head };
        } else {
            if std::env::var_os("DIAGJ").is_some() {
                eprintln!(
                    "J fail {} from {:?}",
                    order.len(),
                    surface.position(order[0])
                );
            }
            j.dead.extend(order);
            j.failed.insert(j.part[j.source as usize]);
        }
    }

    /// The first time a search enters a cell, a walk from `p` to the cell's node; its place
    /// when the walk arrives there.
    fn try_cell(&mut self, j: &mut Joiner, surface: &WalkSurface, p: u32) -> Option<u32> {
        let k = j.cells.index(surface.position(p).xz())?;
        let owner = j.cells.owner[k];
        if owner == 0 || j.cells.tried[k] == j.search {
            return None;
        }
        j.cells.tried[k] = j.search;
        let to = self.slots[owner as usize - 1].place?;
        let w = self.walk(surface, p, surface.position(to).xz());
        (w.arrived() && w.end == to).then_some(to)
    }

    /// One walk of string-pulling the way found: doubling the reach from the last corner
    /// while walks arrive, then halving between the last arrival and the first failure.
    fn join_pull(&mut self, j: &mut Joiner, surface: &WalkSurface) {
        let State::Pull(mut pull) = std::mem::replace(&mut j.state, State::Scan) else {
            return;
        };
        let end = pull.path.len() - 1;
        let probe = match pull.bad {
            None => (pull.at + 2 * (pull.good - pull.at))
                .max(pull.at + 1)
                .min(end),
            Some(b) => (pull.good + b) / 2,
        };
        let to = surface.position(pull.path[probe]).xz();
        let w = self.walk(surface, pull.path[pull.at], to);
        if w.arrived() && w.end == pull.path[probe] {
            pull.good = probe;
        } else {
            pull.bad = Some(probe);
        }
        if pull.good < end && pull.bad.is_none_or(|b| b > pull.good + 1) {
            j.state = State::Pull(pull);
            return;
        }
        if pull.good == pull.at {
            // Not even one step walks straight (each step of the search was a straight walk,
            // so this does not happen): give the part up.
            self.give_up(j, pull.last);
            return;
        }
        let place = pull.path[pull.good];
        let slot = match self.taken.get(&place) {
            Some(&s) => s,
            None => {
                let s = self.add_passage(place);
                j.root.push(s);
                j.part.push(j.part[j.source as usize]);
                s
            }
        };
        self.connect(pull.last, slot);
        j.union(pull.last, slot);
        pull.last = slot;
        pull.at = pull.good;
        pull.bad = None;
        if pull.at == end {
            self.report.joined += 1;
        } else {
            j.state = State::Pull(pull);
        }
    }

    /// Marks the places of the part holding slot `s` dead.
    fn give_up(&self, j: &mut Joiner, s: u32) {
        let r = j.find(s);
        for t in 1..self.slots.len() {
            if let Some(p) = self.slots[t].place {
                if j.find(t as u32) == r {
                    j.dead.insert(p);
                }
            }
        }
    }

    /// A new node on a joining way.
    fn add_passage(&mut self, place: u32) -> u32 {
        let s = self.slots.len() as u32;
        self.slots.push(super::Slot {
            place: Some(place),
            kind: NodeKind::Passage,
            degree: 0,
            hint: 0.0,
            leashed: false,
            merged: false,
        });
        self.taken.insert(place, s);
        self.report.passages += 1;
        s
    }
}

/// The places a straight walk steps to from `p` along +x, -x, +z and -z (`u32::MAX`: none):
/// of the linked places in the next column, the one nearest in height, as
/// [`WalkSurface::walk`] steps.
fn axis_steps(surface: &WalkSurface, p: u32) -> [u32; 4] {
    let here = surface.position(p);
    let half = 0.5 * surface.step();
    let mut best = [(f32::INFINITY, u32::MAX); 4];
    for &q in surface.links(p) {
        let d = surface.position(q) - here;
        let dir = if d.z.abs() < half {
            usize::from(d.x < 0.0)
        } else if d.x.abs() < half {
            2 + usize::from(d.z < 0.0)
        } else {
            continue; // a diagonal step
        };
        let dy = d.y.abs();
        if (dy, q) < best[dir] {
            best[dir] = (dy, q);
        }
    }
    best.map(|b| b.1)
}
