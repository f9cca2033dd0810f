//! Exploring the walls around the centre: storeys and stair flights the straight walks miss.
//!
//! A straight walk stays on the storey it starts on, so from a floor of a building the rings
//! never find the stairs: the flights and the floors above and below, where cover often is,
//! get no node the centre reaches. After the ring and annotation tasks, wall followers
//! ([`super::follow`]) explore from the centre's part. Each starts where a straight walk from
//! a node of the centre's part stopped at a wall (the walks taken in the order they were made,
//! inner rings first, skipping stops in cells a follower has passed) and keeps that wall on
//! its right hand, then (unless the first came all round the wall) on its left, never leaving
//! it for a goal. Walls lead through doorways and along stair flights: a follower steps to
//! the linked place nearest in height, so a flight it meets takes it up or down.
//!
//! The graph's cells are its spots: the ring nearest in distance from the centre and the spot
//! nearest in angle on it, so a cell is as large as the rings' spacing there. Whenever a
//! follower enters another cell or moves more than half the rise within one, it looks at the
//! nodes of that cell on its storey (within half the rise):
//!
//! - a node of the centre's part anchors its way: a straight walk from that node that arrives
//!   where the follower stands restarts the way there (when the way is over a ring gap long);
//! - else a node of a part cut off from the centre is tried: a straight walk to it that
//!   arrives joins that part to the centre's, by the way from the anchor;
//! - else (or when that walk stops) a [`crate::ring::NodeKind::Passage`] node is added where
//!   the follower stands, joined by the way from the anchor, and anchors the way from there.
//!
//! Ways are string-pulled into straight walks ([`super::pull`]). A follower ends when it comes
//! round to where it began or meets a dead end; the right hand's takes at most half the steps
//! left, and all of a build's followers at most [`crate::ring::RingParams::explore`]. Like the
//! rest of the build the work is split into tasks of at most [`super::FOLLOW_STEP`] steps,
//! each ending after a walk.

use super::follow::{Follower, Hand, Move};
use super::parts::Parts;
use super::pull::{Pull, Pulled};
use super::{Builder, NodeKind};
use crate::nav::WalkSurface;
use glam::{Vec2, Vec3Swizzles};

/// Where a straight walk from a node stopped short of its goal: a start for a follower.
#[derive(Clone, Copy)]
pub(super) struct Stop {
    /// The node the walk left from and its place then.
    pub from: u32,
    pub from_place: u32,
    /// Where it stopped, and where it was heading.
    pub place: u32,
    pub toward: Vec2,
}

/// The exploring phase of a build.
pub(super) enum Exploring {
    On(Box<Explorer>),
    Done,
}

impl Exploring {
    pub fn done(&self) -> bool {
        match self {
            Exploring::On(e) => matches!(e.state, State::Done),
            Exploring::Done => true,
        }
    }
}

pub(super) struct Explorer {
    /// The parts the connections join, kept up to date.
    parts: Parts,
    cells: NodeCells,
    /// Per cell: a follower passed it (a stop there starts none).
    passed: Vec<bool>,
    /// Where walks stopped, in the order the walks were made (inner rings first), and the
    /// first not looked at yet.
    stops: Vec<Stop>,
    next: usize,
    state: State,
}

enum State {
    Scan,
    Follow(Box<Walker>),
    /// Pulling the way to a node (`join`: joining a cut-off part, the way keeps its anchor).
    Pull {
        pull: Pull,
        walker: Box<Walker>,
        join: bool,
    },
    Done,
}

/// A follower and its way from the anchor.
struct Walker {
    f: Follower,
    /// Its start, to start the left hand's follower from after the right hand's.
    start: Stop,
    /// The node the way starts from, and the places from its place to the follower.
    anchor: u32,
    trail: Vec<u32>,
    /// The cell and height where the follower last looked at the nodes, and the steps it can
    /// take before it may have left that cell.
    cell: usize,
    y: f32,
    skip: u32,
}

/// The ring graph's own cells: one per spot on a ring (the ring nearest in distance from the
/// centre, the spot nearest in angle), each listing the nodes standing in it.
struct NodeCells {
    at: Vec2,
    gap: f32,
    rings: usize,
    per_ring: usize,
    /// Per cell: the first slot standing in it, or `u32::MAX`; per slot: the next in its cell.
    head: Vec<u32>,
    next: Vec<u32>,
}

impl NodeCells {
    fn new(b: &Builder, surface: &WalkSurface) -> NodeCells {
        let (rings, per_ring) = (b.params.rings as usize, b.params.per_ring as usize);
        let mut c = NodeCells {
            at: b.at,
            gap: b.params.ring_gap(),
            rings,
            per_ring,
            // At most (256 + 1) x 1024 cells (`MAX_RINGS`, `MAX_PER_RING`).
            head: vec![u32::MAX; (rings + 1) * per_ring],
            next: vec![u32::MAX; b.slots.len()],
        };
        let generated = rings * per_ring;
        for (s, slot) in b.slots.iter().enumerate() {
            let Some(p) = slot.place else { continue };
            // A ring node stands at its spot: its cell is its slot's.
            let k = match slot.kind {
                NodeKind::Ring if (1..=generated).contains(&s) => Some(per_ring + s - 1),
                NodeKind::Centre => Some(0),
                _ => c.index(surface.position(p).xz()),
            };
            if let Some(k) = k {
                c.next[s] = c.head[k];
                c.head[k] = s as u32;
            }
        }
        c
    }

    /// The cell of ground point `p`; `None` past the outer ring.
    fn index(&self, p: Vec2) -> Option<usize> {
        self.locate(p).map(|c| c.0)
    }

    /// The cell of ground point `p` and a distance from `p` within which every point is in
    /// that cell; `None` past the outer ring.
    fn locate(&self, p: Vec2) -> Option<(usize, f32)> {
        let d = p - self.at;
        let r = d.length();
        let ring = r / self.gap + 0.5;
        if !(ring < self.rings as f32 + 1.0) {
            return None;
        }
        let n = self.per_ring as f32;
        // In [n / 2, 3 n / 2] + 0.5: truncation rounds the slot, and slot n + k is slot k.
        let slot = turn(d) * n + 0.5 + n;
        // Truncation of non-negative values: the ring and slot nearest.
        let (ri, si) = (ring as usize, slot as usize);
        let (fr, fs) = (ring - ri as f32, slot - si as f32);
        let radial = self.gap * fr.min(1.0 - fr);
        // sin(2 pi t) >= 4 t for t up to a quarter turn; a slot is at most a third.
        let across = r * 4.0 * fs.min(1.0 - fs) / n;
        let si = if si >= self.per_ring {
            si - self.per_ring
        } else {
            si
        };
        Some((ri * self.per_ring + si, radial.min(across)))
    }

    /// Adds slot `s`, in no cell yet, standing at `p`.
    fn insert(&mut self, s: u32, p: Vec2) {
        if self.next.len() <= s as usize {
            self.next.resize(s as usize + 1, u32::MAX);
        }
        if let Some(k) = self.index(p) {
            self.next[s as usize] = self.head[k];
            self.head[k] = s;
        }
    }
}

impl Explorer {
    /// `None` when exploring is off or no walk stopped at a wall.
    fn new(b: &mut Builder, surface: &WalkSurface) -> Option<Explorer> {
        if b.params.explore == 0 || b.stops.is_empty() {
            return None;
        }
        let mut e = Explorer {
            parts: Parts::of(b.slots.len(), &b.edges),
            cells: NodeCells::new(b, surface),
            passed: Vec::new(),
            stops: std::mem::take(&mut b.stops),
            next: 0,
            state: State::Scan,
        };
        e.passed = vec![false; e.cells.head.len()];
        Some(e)
    }

    /// The parts the connections join; exploring is over.
    pub fn into_parts(self) -> Parts {
        self.parts
    }

    /// A node the pull added: in the centre's part, listed in its cell.
    fn added(&mut self, s: u32, p: Vec2) {
        self.parts.push();
        self.cells.insert(s, p);
    }
}

/// What a follower found where it looked at the nodes.
enum Look {
    Nothing,
    /// Walk to this node of a cut-off part.
    Join(u32),
    /// Add a node where the follower stands.
    Add,
}

impl Builder {
    /// Runs one exploring task (see the module docs).
    pub(super) fn explore_task(&mut self, surface: &WalkSurface) {
        let Some(mut e) = self.explorer.take() else {
            // The first exploring task: nothing to do when no walk stopped at a wall.
            self.explorer = Some(
                Explorer::new(self, surface)
                    .map_or(Exploring::Done, |e| Exploring::On(Box::new(e))),
            );
            return;
        };
        if let Exploring::On(e) = &mut e {
            match std::mem::replace(&mut e.state, State::Done) {
                State::Scan => self.explore_scan(e, surface),
                State::Follow(w) => self.explore_follow(e, surface, w),
                State::Pull { pull, walker, join } => {
                    self.explore_pull(e, surface, pull, walker, join);
                }
                State::Done => {}
            }
        }
        self.explorer = Some(e);
    }

    /// The parts the connections join: kept up to date by the exploring phase (which ends
    /// here), else found from the connections.
    pub(super) fn parts(&mut self) -> Parts {
        match self.explorer.replace(Exploring::Done) {
            Some(Exploring::On(e)) => e.into_parts(),
            _ => Parts::of(self.slots.len(), &self.edges),
        }
    }

    fn explore_left(&self) -> u64 {
        u64::from(self.params.explore).saturating_sub(self.report.explored)
    }

    /// Starts the right hand's follower from the next stop (inner rings' first) of a walk
    /// from the centre's part in a cell no follower has passed.
    fn explore_scan(&mut self, e: &mut Explorer, surface: &WalkSurface) {
        while e.next < e.stops.len() && self.explore_left() > 0 {
            let stop = e.stops[e.next];
            e.next += 1;
            if self.slots[stop.from as usize].place != Some(stop.from_place)
                || e.parts.find(stop.from) != 0
            {
                continue;
            }
            let Some(cell) = e.cells.index(surface.position(stop.place).xz()) else {
                continue;
            };
            if !std::mem::replace(&mut e.passed[cell], true) {
                return self.explore_start(e, surface, stop, Hand::Right);
            }
        }
        e.state = State::Done;
    }

    /// A follower from `stop`: a straight walk from its node to where it stopped, then the
    /// wall there (the next stop when that walk, on another line than the one that stopped
    /// there, does not arrive).
    fn explore_start(&mut self, e: &mut Explorer, surface: &WalkSurface, stop: Stop, hand: Hand) {
        let w = self.walk(surface, stop.from_place, surface.position(stop.place).xz());
        if !w.arrived() {
            e.state = State::Scan;
            return;
        }
        let mut path = vec![stop.from_place];
        if w.end != stop.from_place {
            path.push(w.end);
        }
        let left = usize::try_from(self.explore_left()).unwrap_or(usize::MAX);
        let most = match hand {
            Hand::Right => left.div_ceil(2),
            Hand::Left => left,
        };
        let f = Follower::exploring(surface, path.clone(), stop.toward, hand, most);
        let end = surface.position(w.end);
        e.state = State::Follow(Box::new(Walker {
            f,
            start: stop,
            anchor: stop.from,
            trail: path,
            cell: e.cells.index(end.xz()).unwrap_or(usize::MAX),
            y: end.y,
            skip: 0,
        }));
    }

    /// Up to [`super::FOLLOW_STEP`] steps of the current follower, up to and including the
    /// first that walks.
    fn explore_follow(&mut self, e: &mut Explorer, surface: &WalkSurface, mut w: Box<Walker>) {
        let walks = self.report.walks;
        let r2 = self.params.radius * self.params.radius;
        let band = 0.5 * self.params.max_rise;
        let (mut took, mut look, mut ended) = (0, Look::Nothing, false);
        for _ in 0..super::FOLLOW_STEP {
            if self.explore_left() == 0 {
                break;
            }
            took += 1;
            self.report.explored += 1;
            let (at, design) = (self.at, &self.design);
            let step = w.f.next(surface, |g| {
                g.distance_squared(at) <= r2 && design.allows(g)
            });
            let Move::Step(q) = step else {
                ended = true;
                break;
            };
            w.trail.push(q);
            let p = surface.position(q);
            let level = (p.y - w.y).abs() <= band;
            if w.skip > 0 && level {
                w.skip -= 1;
                continue;
            }
            let (cell, room) = e.cells.locate(p.xz()).unwrap_or((usize::MAX, 0.0));
            // Truncation: whole steps that stay inside.
            w.skip = (room / surface.step()) as u32;
            if cell == w.cell && level {
                continue;
            }
            if let Some(flag) = e.passed.get_mut(cell) {
                *flag = true;
            }
            (w.cell, w.y) = (cell, p.y);
            look = self.explore_look(e, surface, &mut w, q);
            if !matches!(look, Look::Nothing) || self.report.walks != walks {
                break;
            }
        }
        self.count_task(took, walks);
        e.state = match look {
            Look::Join(node) => {
                let mut path = w.trail.clone();
                path.push(self.slots[node as usize].place.expect("a node is placed"));
                let pull = Pull::new(path, w.anchor);
                State::Pull {
                    pull,
                    walker: w,
                    join: true,
                }
            }
            Look::Add => State::Pull {
                pull: Pull::new(w.trail.clone(), w.anchor),
                walker: w,
                join: false,
            },
            Look::Nothing if ended => return self.explore_ended(e, surface, &w),
            Look::Nothing if self.explore_left() == 0 => State::Done,
            Look::Nothing => State::Follow(w),
        };
    }

    /// A follower task that took steps and made no walk counts one against a budget
    /// ([`super::BuildReport::work`]).
    pub(super) fn count_task(&mut self, took: u32, walks: u64) {
        if took > 0 && self.report.walks == walks {
            self.report.search_steps += 1;
        }
    }

    /// After the right hand's follower, the left hand's from the same stop; after both, the
    /// next stop.
    fn explore_ended(&mut self, e: &mut Explorer, surface: &WalkSurface, w: &Walker) {
        match w.f.hand() {
            Hand::Right if self.explore_left() > 0 && !w.f.came_round() => {
                self.explore_start(e, surface, w.start, Hand::Left);
            }
            _ => e.state = State::Scan,
        }
    }

    /// Looks at the nodes on the follower's storey in its cell (see the module docs).
    fn explore_look(
        &mut self,
        e: &mut Explorer,
        surface: &WalkSurface,
        w: &mut Walker,
        q: u32,
    ) -> Look {
        let p = surface.position(q);
        let band = 0.5 * self.params.max_rise;
        // A way from the anchor shorter than a ring gap is not worth a walk to shorten.
        let reanchor = (self.params.ring_gap() / surface.step()) as usize;
        // The nearest node of the centre's part and of a cut-off part: (squared distance, slot).
        let (mut mine, mut cut) = (None::<(f32, u32)>, None::<(f32, u32)>);
        let mut s = e.cells.index(p.xz()).map_or(u32::MAX, |k| e.cells.head[k]);
        while s != u32::MAX {
            if let Some(at) = self.slots[s as usize].place {
                let n = surface.position(at);
                if (n.y - p.y).abs() <= band {
                    let d = n.distance_squared(p);
                    let best = if e.parts.find(s) == 0 {
                        &mut mine
                    } else {
                        &mut cut
                    };
                    if best.is_none_or(|b| (d, s) < b) {
                        *best = Some((d, s));
                    }
                }
            }
            s = e.cells.next[s as usize];
        }
        if let Some((_, m)) = mine {
            let from = self.slots[m as usize].place.expect("a node is placed");
            if w.trail.len() > reanchor && from != q {
                let walk = self.walk(surface, from, p.xz());
                if walk.arrived() && walk.end == q {
                    (w.anchor, w.trail) = (m, vec![from, q]);
                }
            } else if from == q {
                (w.anchor, w.trail) = (m, vec![q]);
            }
            return Look::Nothing;
        }
        if w.trail.len() < 2 {
            return Look::Nothing;
        }
        if let Some((_, m)) = cut {
            let to = self.slots[m as usize].place.expect("a node is placed");
            let walk = self.walk(surface, q, surface.position(to).xz());
            if walk.arrived() && walk.end == to {
                return Look::Join(m);
            }
        }
        Look::Add
    }

    /// One walk of string-pulling a follower's way; the follower goes on when it is done.
    fn explore_pull(
        &mut self,
        e: &mut Explorer,
        surface: &WalkSurface,
        mut pull: Pull,
        mut w: Box<Walker>,
        join: bool,
    ) {
        match self.pull_walk(&mut pull, surface) {
            Pulled::More => {
                e.state = State::Pull {
                    pull,
                    walker: w,
                    join,
                };
                return;
            }
            // The way keeps its anchor: a later node pulls it again.
            Pulled::Failed => {}
            Pulled::Corner {
                from,
                node,
                new,
                end,
            } => {
                if new {
                    let p = surface.position(self.slots[node as usize].place.expect("placed"));
                    e.added(node, p.xz());
                }
                e.parts.union(from, node);
                if !end {
                    e.state = State::Pull {
                        pull,
                        walker: w,
                        join,
                    };
                    return;
                }
                if join {
                    self.report.joined += 1;
                } else {
                    let at = w.f.at();
                    (w.anchor, w.trail) = (node, vec![at]);
                }
            }
        }
        e.state = State::Follow(w);
    }
}

/// The angle of `d` from +x towards +z in turns, in `[-0.5, 0.5]`, to within 2e-4 radians (a
/// polynomial arctangent: no call into the maths library on the path of every step).
fn turn(d: Vec2) -> f32 {
    let (x, y) = (d.x.abs(), d.y.abs());
    let a = x.min(y) / x.max(y).max(f32::MIN_POSITIVE);
    let s = a * a;
    let mut r = (((-0.046_496_475 * s + 0.159_314_22) * s - 0.327_622_76) * s) * a + a;
    if y > x {
        r = std::f32::consts::FRAC_PI_2 - r;
    }
    if d.x < 0.0 {
        r = std::f32::consts::PI - r;
    }
    if d.y < 0.0 {
        r = -r;
    }
    r / std::f32::consts::TAU
}

#[cfg(test)]
mod tests {
    use super::{turn, NodeCells};
    use glam::Vec2;

    #[test]
    fn the_polynomial_turn_stays_within_its_error_of_atan2() {
        for k in 0..20_000 {
            let a = k as f32 / 20_000.0 * std::f32::consts::TAU - std::f32::consts::PI;
            let d = Vec2::new(a.cos(), a.sin()) * (1.0 + k as f32 % 7.0);
            let exact = d.y.atan2(d.x);
            let err = (turn(d) * std::f32::consts::TAU - exact).abs();
            // The same angle either side of the half turn.
            let err = err.min((err - std::f32::consts::TAU).abs());
            assert!(err <= 2.1e-4, "{d}: {err} rad");
        }
    }

    #[test]
    fn a_point_within_a_cells_room_is_in_that_cell() {
        let cells = NodeCells {
            at: Vec2::new(3.0, -2.0),
            gap: 1.5,
            rings: 8,
            per_ring: 16,
            head: Vec::new(),
            next: Vec::new(),
        };
        let mut checked = 0;
        for i in 0..60 {
            for j in 0..60 {
                let p = cells.at + Vec2::new(i as f32 - 30.0, j as f32 - 30.0) * 0.41 + 0.07;
                // Rounding decides within a few ulps of a boundary; a follower skips whole
                // steps of the room only.
                let Some((k, room @ 0.01..)) = cells.locate(p) else {
                    continue;
                };
                for t in 0..16 {
                    let a = t as f32 / 16.0 * std::f32::consts::TAU;
                    let q = p + 0.99 * room * Vec2::new(a.cos(), a.sin());
                    assert_eq!(cells.index(q), Some(k), "{p} room {room}, {q}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000);
    }
}
