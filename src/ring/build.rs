//! Node generation, connection, clamping and pruning, as a sequence of small tasks (at most
//! one walk each) so a build can stop after any task and go on later
//! ([`super::Incremental`]).
//!
//! Tasks run ring by ring, inside out. For each node of a ring, its *spoke task* walks from
//! the node inside it on the same spoke (the centre for the first ring) towards its spot:
//! arriving places it there; stopping after more than `clamp` of the way places it where the
//! walk stopped (clamped) and still connects it; otherwise it takes the ground at its spot (or
//! within `snap`) unconnected. Then each *ring task* walks from a node to its next neighbour on
//! the ring: arriving at it connects them; a neighbour with no connection yet is placed where
//! the walk arrived, or clamped where it stopped, as a spoke would. Two nodes never share a
//! place: the later one merges into the earlier (its connection goes to that node). Then each
//! annotation joins the node already on its place, or becomes a node, and walks to its six
//! nearest nodes within reach. Then wall followers explore from the centre's part, along walls,
//! through doorways and up or down stair flights, adding nodes on storeys the straight walks
//! missed (`explore.rs`). Finally the parts left cut off from the centre are joined to it by
//! ways wall followers find on the surface (`join.rs`, `follow.rs`). Both ways are
//! string-pulled into straight walks (`pull.rs`), in tasks of at most one walk each. A node
//! that takes the ground at its spot keeps to the storey of the node inside
//! it where that storey has ground there (a spot beside a house stays in the street, not on
//! the eaves).

mod explore;
mod follow;
mod join;
mod parts;
mod pull;

pub use join::{FOLLOW_STEP, MAX_FOLLOW};

use super::{Design, Node, NodeKind, RingGraph, RingParams};
use crate::nav::{Walk, WalkSurface};
use crate::{Error, Result};
use glam::{Vec2, Vec3, Vec3Swizzles};
use rustc_hash::FxHashMap;

/// Nearest nodes an annotation walks to.
const ANNOTATION_LINKS: usize = 6;

/// What a build did: every generated node is accounted for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildReport {
    /// Generated nodes (rings x nodes per ring), and those outside every leashing zone.
    pub generated: u32,
    pub leashed_out: u32,
    /// Nodes clamped by a failing connection, and of those placed (clamped included) nodes
    /// whose place another node already held (merged into it).
    pub clamped: u32,
    pub merged: u32,
    /// Nodes with no ground at or near their spot and no connection reaching them.
    pub unplaced: u32,
    /// Placed nodes left with no connection (dropped).
    pub pruned: u32,
    /// Annotations, and those that could not be connected (dropped).
    pub annotations: u32,
    pub annotations_unconnected: u32,
    /// Straight walks on the surface.
    pub walks: u64,
    /// Ways found on the walk surface that join parts cut off from the centre to it (by the
    /// joining and the exploring followers), the nodes added on ways found on the surface
    /// ([`NodeKind::Passage`]), the steps the joining wall followers took
    /// ([`RingParams::search`] bounds them), and the follower tasks, joining or exploring,
    /// that made no walk (each takes at most [`FOLLOW_STEP`] steps).
    pub joined: u32,
    pub passages: u32,
    pub searched: u64,
    pub search_steps: u64,
    /// Steps the wall followers exploring from the centre's part took ([`RingParams::explore`]
    /// bounds them).
    pub explored: u64,
}

impl BuildReport {
    /// Work done, as a budget counts it: a walk or a search task counts one.
    #[must_use]
    pub fn work(&self) -> u64 {
        self.walks + self.search_steps
    }
}

/// The unit vectors towards a ring's spots, `k = 0..=per_ring` (the last one closes the ring).
fn bearings(per_ring: u32) -> Vec<Vec2> {
    (0..=per_ring)
        .map(|k| {
            let a = std::f32::consts::TAU * k as f32 / per_ring as f32;
            Vec2::new(a.cos(), a.sin())
        })
        .collect()
}

#[derive(Clone, Copy)]
struct Slot {
    place: Option<u32>,
    kind: NodeKind,
    degree: u32,
    /// Height the ground search starts from: the nearest placed node inside on the spoke.
    hint: f32,
    /// Left out by the leash, or merged into the node on its place.
    leashed: bool,
    merged: bool,
}

pub(super) struct Builder {
    params: RingParams,
    at: Vec2,
    design: Design,
    /// Places of the annotations, found up front.
    annotation_places: Vec<u32>,
    slots: Vec<Slot>,
    /// Per slot of a ring, `k = 0..=per_ring`, the unit vector towards its spots.
    bearings: Vec<Vec2>,
    edges: Vec<[u32; 2]>,
    taken: FxHashMap<u32, u32>,
    task: usize,
    /// The current annotation's node and the nodes it walks to.
    annotation_node: u32,
    candidates: Vec<u32>,
    /// Where walks of the rings stopped at walls: starts for the exploring followers.
    stops: Vec<explore::Stop>,
    /// Exploring walls from the centre's part, once the ring and annotation tasks are done.
    explorer: Option<explore::Exploring>,
    /// Joining cut-off parts, once exploring is done.
    joiner: Option<join::Joining>,
    report: super::BuildReport,
}

impl Builder {
    pub fn new(
        surface: &WalkSurface,
        at: Vec3,
        params: &RingParams,
        design: &Design,
    ) -> Result<Builder> {
        params.validate()?;
        design.validate()?;
        if !at.is_finite() || at.abs().max_element() > crate::limits::MAX_COORDINATE {
            return Err(Error::InvalidInput(format!(
                "the point of interest {at} is not a finite point in metres"
            )));
        }
        let reach = params.snap.max(2.0);
        let Some(centre) = surface.locate(at, reach, params.max_rise) else {
            return Err(Error::InvalidInput(format!(
                "no walkable ground within {reach} m of the point of interest ({:.2}, {:.2}, \
                 {:.2}) and {} m of its height: put it on walkable ground (its height is a \
                 hint)",
                at.x, at.y, at.z, params.max_rise
            )));
        };
        let mut annotation_places = Vec::with_capacity(design.annotations.len());
        for (i, a) in design.annotations.iter().enumerate() {
            let Some(p) = surface.locate(a.position, reach, params.max_rise) else {
                return Err(Error::InvalidInput(format!(
                    "annotation {i} ({}) at ({:.2}, {:.2}, {:.2}) has no walkable ground within \
                     {reach} m: move it onto walkable ground",
                    a.label, a.position.x, a.position.y, a.position.z
                )));
            };
            annotation_places.push(p);
        }
        let generated = params.rings * params.per_ring;
        let cy = surface.position(centre).y;
        let mut slots = vec![
            Slot {
                place: None,
                kind: NodeKind::Ring,
                degree: 0,
                hint: cy,
                leashed: false,
                merged: false,
            };
            1 + generated as usize
        ];
        slots[0].place = Some(centre);
        slots[0].kind = NodeKind::Centre;
        // Every slot and annotation may hold a place (passage nodes, fewer, may grow it).
        let mut taken = FxHashMap::with_capacity_and_hasher(
            slots.len() + design.annotations.len(),
            Default::default(),
        );
        taken.insert(centre, 0);
        Ok(Builder {
            params: *params,
            at: at.xz(),
            design: design.clone(),
            annotation_places,
            slots,
            bearings: bearings(params.per_ring),
            edges: Vec::with_capacity(2 * generated as usize + 64),
            taken,
            task: 0,
            annotation_node: 0,
            candidates: Vec::new(),
            stops: Vec::new(),
            explorer: None,
            joiner: None,
            report: super::BuildReport {
                generated,
                annotations: design.annotations.len() as u32,
                ..Default::default()
            },
        })
    }

    fn ring_tasks(&self) -> usize {
        (2 * self.params.rings * self.params.per_ring) as usize
    }

    fn tasks(&self) -> usize {
        self.ring_tasks() + self.design.annotations.len() * (1 + ANNOTATION_LINKS)
    }

    /// Whether every task has run.
    pub fn done(&self) -> bool {
        self.task >= self.tasks()
            && self.explorer.as_ref().is_some_and(explore::Exploring::done)
            && self.joiner.as_ref().is_some_and(join::Joining::done)
    }

    /// Runs tasks until they are done or `budget` of work ([`BuildReport::work`]) is spent;
    /// returns the work done.
    pub fn step(&mut self, surface: &WalkSurface, budget: u64) -> Result<u64> {
        let before = self.report.work();
        while !self.done() && self.report.work() - before < budget {
            if self.task < self.tasks() {
                self.run_task(surface);
                self.task += 1;
            } else if !self.explorer.as_ref().is_some_and(explore::Exploring::done) {
                self.explore_task(surface);
            } else {
                self.join_task(surface);
            }
        }
        Ok(self.report.work() - before)
    }

    fn slot(&self, ring: u32, k: u32) -> u32 {
        if ring == 0 {
            0
        } else {
            1 + (ring - 1) * self.params.per_ring + k % self.params.per_ring
        }
    }

    fn spot(&self, ring: u32, k: u32) -> Vec2 {
        let r = self.params.radius * ring as f32 / self.params.rings as f32;
        self.at + r * self.bearings[k as usize]
    }

    fn pos(&self, surface: &WalkSurface, s: u32) -> Option<Vec3> {
        self.slots[s as usize].place.map(|p| surface.position(p))
    }

    fn walk(&mut self, surface: &WalkSurface, from: u32, to: Vec2) -> Walk {
        self.report.walks += 1;
        surface.walk(from, to)
    }

    /// Keeps where a walk from slot `from` (on `from_place`) towards `toward` stopped, as a
    /// start for the exploring followers.
    fn stopped(&mut self, from: u32, from_place: u32, place: u32, toward: Vec2) {
        if self.params.explore > 0 {
            self.stops.push(explore::Stop {
                from,
                from_place,
                place,
                toward,
            });
        }
    }

    fn connect(&mut self, a: u32, b: u32) {
        if a != b {
            self.edges.push([a.min(b), a.max(b)]);
            self.slots[a as usize].degree += 1;
            self.slots[b as usize].degree += 1;
        }
    }

    /// Puts slot `s` on `place` (leaving any place it held), connecting it to `from`; merges
    /// it into the node already there.
    fn place(&mut self, s: u32, place: u32, kind: NodeKind, from: Option<u32>) {
        if let Some(old) = self.slots[s as usize].place.take() {
            self.taken.remove(&old);
        }
        match self.taken.get(&place) {
            Some(&m) => {
                self.slots[s as usize].merged = true;
                if let Some(f) = from {
                    self.connect(f, m);
                }
            }
            None => {
                self.taken.insert(place, s);
                let slot = &mut self.slots[s as usize];
                slot.place = Some(place);
                slot.merged = false;
                slot.kind = kind;
                if kind == NodeKind::Clamped {
                    self.report.clamped += 1;
                }
                if let Some(f) = from {
                    self.connect(f, s);
                }
            }
        }
    }

    fn run_task(&mut self, surface: &WalkSurface) {
        let n = self.params.per_ring;
        if self.task < self.ring_tasks() {
            let ring = (self.task / (2 * n as usize)) as u32 + 1;
            let rem = (self.task % (2 * n as usize)) as u32;
            if rem < n {
                self.spoke(surface, ring, rem);
            } else {
                self.around(surface, ring, rem - n);
            }
        } else {
            let u = self.task - self.ring_tasks();
            let (i, j) = (u / (1 + ANNOTATION_LINKS), u % (1 + ANNOTATION_LINKS));
            if j == 0 {
                self.annotation(surface, i);
            } else if let Some(&c) = self.candidates.get(j - 1) {
                let a = self.annotation_node;
                let (Some(pa), Some(pc)) = (self.slots[a as usize].place, self.pos(surface, c))
                else {
                    return;
                };
                let w = self.walk(surface, pa, pc.xz());
                if w.arrived() && Some(w.end) == self.slots[c as usize].place {
                    self.connect(a, c);
                }
            }
        }
    }

    fn spoke(&mut self, surface: &WalkSurface, ring: u32, k: u32) {
        let (s, inner) = (self.slot(ring, k), self.slot(ring - 1, k));
        let spot = self.spot(ring, k);
        let hint = self
            .pos(surface, inner)
            .map_or(self.slots[inner as usize].hint, |p| p.y);
        self.slots[s as usize].hint = hint;
        if !self.design.allows(spot) {
            self.report.leashed_out += 1;
            self.slots[s as usize].leashed = true;
            return;
        }
        if let Some(from) = self.slots[inner as usize].place {
            let w = self.walk(surface, from, spot);
            if w.arrived() {
                return self.place(s, w.end, NodeKind::Ring, Some(inner));
            }
            self.stopped(inner, from, w.end, spot);
            if w.steps > 0 && w.fraction() >= self.params.clamp {
                return self.place(s, w.end, NodeKind::Clamped, Some(inner));
            }
        }
        let p = Vec3::new(spot.x, hint, spot.y);
        if let Some(place) = self.ground(surface, p) {
            self.place(s, place, NodeKind::Ring, None);
        }
    }

    /// The ground for a node at `p` (its spot at the hint's height): within the snap
    /// distance and the rise, on the hint's storey (within half the rise) where it has ground
    /// there, so a node beside a house keeps to the street rather than the eaves above it.
    fn ground(&self, surface: &WalkSurface, p: Vec3) -> Option<u32> {
        let (snap, rise) = (self.params.snap, self.params.max_rise);
        let any = surface.locate(p, snap, rise)?;
        if (surface.position(any).y - p.y).abs() <= 0.5 * rise {
            return Some(any);
        }
        surface.locate(p, snap, 0.5 * rise).or(Some(any))
    }

    fn around(&mut self, surface: &WalkSurface, ring: u32, k: u32) {
        let (a, b) = (self.slot(ring, k), self.slot(ring, k + 1));
        let Some(from) = self.slots[a as usize].place else {
            return;
        };
        let spot = self.spot(ring, k + 1);
        if !self.design.allows(spot) {
            return;
        }
        let target = self.pos(surface, b).map_or(spot, |p| p.xz());
        let w = self.walk(surface, from, target);
        if !w.arrived() {
            self.stopped(a, from, w.end, target);
        }
        let b_place = self.slots[b as usize].place;
        if w.arrived() && Some(w.end) == b_place {
            self.connect(a, b);
        } else if self.slots[b as usize].degree == 0
            && w.steps > 0
            && (w.arrived() || w.fraction() >= self.params.clamp)
        {
            let kind = if w.arrived() {
                NodeKind::Ring
            } else {
                NodeKind::Clamped
            };
            self.place(b, w.end, kind, Some(a));
        }
    }

    fn annotation(&mut self, surface: &WalkSurface, i: usize) {
        let place = self.annotation_places[i];
        let kind = NodeKind::Annotation(i as u32);
        let node = match self.taken.get(&place) {
            Some(&m) => {
                self.slots[m as usize].kind = kind;
                m
            }
            None => {
                let s = self.slots.len() as u32;
                self.slots.push(Slot {
                    place: Some(place),
                    kind,
                    degree: 0,
                    hint: 0.0,
                    leashed: false,
                    merged: false,
                });
                self.taken.insert(place, s);
                s
            }
        };
        self.annotation_node = node;
        // Reach: one and a half ring gaps or spacings along the ring at its distance.
        let p = surface.position(place);
        let arc = std::f32::consts::TAU * p.xz().distance(self.at) / self.params.per_ring as f32;
        let reach = 1.5 * self.params.ring_gap().max(arc);
        let mut near: Vec<(f32, u32)> = (0..self.slots.len() as u32)
            .filter(|&s| s != node)
            .filter_map(|s| Some((self.pos(surface, s)?.distance(p), s)))
            .filter(|&(d, _)| d <= reach)
            .collect();
        near.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        self.candidates = near.iter().take(ANNOTATION_LINKS).map(|x| x.1).collect();
    }

    /// The graph: placed nodes with at least one connection (and the centre), renumbered in
    /// slot order.
    pub fn finish(mut self, surface: &WalkSurface) -> RingGraph {
        let mut index = vec![u32::MAX; self.slots.len()];
        let mut nodes = Vec::new();
        let generated = 1 + self.report.generated as usize;
        for (s, slot) in self.slots.iter().enumerate() {
            let Some(place) = slot.place else {
                continue;
            };
            if slot.degree == 0 && s != 0 {
                if let NodeKind::Annotation(_) = slot.kind {
                    self.report.annotations_unconnected += 1;
                } else {
                    self.report.pruned += 1;
                }
                continue;
            }
            index[s] = nodes.len() as u32;
            let (ring, slot_k) = if s == 0 || s >= generated {
                (0, 0)
            } else {
                let g = s as u32 - 1;
                (1 + g / self.params.per_ring, g % self.params.per_ring)
            };
            nodes.push(Node {
                position: surface.position(place),
                place,
                ring,
                slot: slot_k,
                kind: slot.kind,
            });
        }
        for slot in &self.slots[1..generated] {
            if slot.place.is_none() && !slot.leashed {
                if slot.merged {
                    self.report.merged += 1;
                } else {
                    self.report.unplaced += 1;
                }
            }
        }
        let edges = self
            .edges
            .iter()
            .map(|e| [index[e[0] as usize], index[e[1] as usize]])
            .collect();
        RingGraph::from_parts(nodes, edges, self.report)
    }
}
