//! The GPU's strategy: trace the batch's visibility up front, in two calls, so the searches
//! then run from the cache. A wait for the GPU costs far more than the rays it waits for, so
//! tracing more than a lazy search would, in fewer calls, is the cheaper trade there.
//!
//! 1. Every cell an agent of an observer group can reach within its radius, found in one
//!    flood from all of the group's agents over the walk surface: the prone head from every
//!    observer, each cell, floor and group once.
//! 2. Per agent, the nearest [`BODIES`] cells (breadth first) whose prone head hides: every
//!    posture's whole body at once.
//!
//! What the searches still miss (a candidate farther than that) they ask for as they go, as
//! the CPU's lazy search does; the choice is the same either way.

use super::local::{cm, floor_near, NEIGHBOURS, VIS_HEAD, VIS_UNKNOWN};
use super::shared::{cell_key, Ask, Shared, VisKey, Wave, START_KEY};
use super::surface::Surface;
use super::{DenseParams, DenseQuery};
use crate::cover::Posture;
use crate::{Engine, Result, Scene};
use glam::Vec3;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

/// Cells per agent whose whole body the second call traces.
const BODIES: usize = 128;
/// Largest number of nodes (cells on a floor) the groups' floods keep, besides the agents'
/// own spots; the first call traces those not cached yet, and the searches ask for the rest as
/// they go.
const MAX_ENTRIES: usize = 1 << 23;
/// Largest number of bodies the second call traces (each some 700 segments).
const MAX_BODIES: usize = 1 << 15;
/// Agents whose nearest hidden heads are gathered at once (bounds the transient lists).
const GATHER: usize = 4096;

/// Traces the two up-front calls (see the module docs) and files the results in `shared`.
pub(super) fn prefill(
    engine: &Engine,
    scene: &Scene,
    surface: &Surface,
    queries: &[DenseQuery],
    params: &DenseParams,
    shared: &mut Shared,
    rays: &mut [usize],
) -> Result<()> {
    let mut heads = Wave::default();
    let mut budget = MAX_ENTRIES;
    let groups: Vec<Graph> = group_members(&shared.group_of)
        .into_iter()
        .enumerate()
        .map(|(g, members)| Graph::flood(surface, queries, members, g as u32, params, &mut budget))
        .collect();
    for n in groups.iter().flat_map(|g| &g.nodes) {
        if !shared.vis.contains_key(&n.key) {
            heads.vis(Ask::whole(n.key, n.at, VIS_UNKNOWN, n.fit, n.qi as usize));
        }
    }
    heads.trace(engine, scene, queries, params, shared, rays)?;
    let bodies = nearest_bodies(&groups, queries, params, shared);
    bodies.trace(engine, scene, queries, params, shared, rays)
}

/// Each agent's nearest [`BODIES`] cells whose prone head hides (found on every core, a
/// block of agents at a time), asking for every posture's body; at most [`MAX_BODIES`].
fn nearest_bodies(
    groups: &[Graph],
    queries: &[DenseQuery],
    params: &DenseParams,
    shared: &Shared,
) -> Wave {
    let mut bodies = Wave::default();
    for g in groups {
        let probes: Vec<Probe> = g
            .nodes
            .iter()
            .map(|n| Probe {
                centre: glam::Vec2::new(
                    (n.cell.0 as f32 + 0.5) * params.cell,
                    (n.cell.1 as f32 + 0.5) * params.cell,
                ),
                hidden: shared.vis.get(&n.key) == Some(VIS_HEAD),
            })
            .collect();
        for first in (0..g.members.len()).step_by(GATHER) {
            if bodies.len() >= MAX_BODIES {
                return bodies;
            }
            let block = first..(first + GATHER).min(g.members.len());
            let nearest: Vec<Vec<u32>> = block
                .clone()
                .into_par_iter()
                .map_init(Visited::default, |seen, m| {
                    g.nearest(m, queries, params, &probes, seen)
                })
                .collect();
            for (m, list) in block.zip(nearest) {
                let room = MAX_BODIES.saturating_sub(bodies.len());
                for id in list.into_iter().take(room) {
                    let n = &g.nodes[id as usize];
                    bodies.vis(Ask::whole(n.key, n.at, VIS_HEAD, n.fit, g.members[m]));
                }
            }
        }
    }
    bodies
}

/// The queries of each observer group, in query order.
fn group_members(group_of: &[u32]) -> Vec<Vec<usize>> {
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (qi, &g) in group_of.iter().enumerate() {
        let g = g as usize;
        if members.len() <= g {
            members.resize_with(g + 1, Vec::new);
        }
        members[g].push(qi);
    }
    members
}

/// A cell on a floor one of a group's agents can reach (or an agent's own spot).
struct Node {
    key: VisKey,
    at: Vec3,
    fit: u8,
    /// The agent whose flood came first (the rays are counted to it).
    qi: u32,
    cell: (i32, i32),
}

/// Where one observer group's agents can walk: every cell some agent reaches within its
/// radius, on every floor some agent reaches it at, and the steps between them.
struct Graph {
    members: Vec<usize>,
    /// The members' own spots first, in member order, then breadth first.
    nodes: Vec<Node>,
    /// Node `u`'s steps are `edges[first_edge[u]..first_edge[u + 1]]`.
    first_edge: Vec<u32>,
    edges: Vec<u32>,
}

impl Graph {
    /// One breadth-first flood from all of a group's agents over the walk surface, by the
    /// search's own steps, over the union of their discs: a superset of each agent's own flood,
    /// so the searches find every cell they reach traced. At most `budget` nodes (which it
    /// lessens); beyond it the searches ask as they go.
    fn flood(
        surface: &Surface,
        queries: &[DenseQuery],
        members: Vec<usize>,
        group: u32,
        p: &DenseParams,
        budget: &mut usize,
    ) -> Graph {
        let shape = surface.shape_of(&queries[members[0]].agent);
        let cover = Coverage::of(queries, &members, p);
        let mut g = Graph {
            nodes: members
                .iter()
                .map(|&qi| start(queries, qi, group, p))
                .collect(),
            members,
            first_edge: vec![0],
            edges: Vec::new(),
        };
        // A lone agent's flood keeps one floor per cell (the first reached) and never re-enters
        // its own cell, as its search's first reach does; a group keeps every floor reached.
        let lone = g.members.len() == 1;
        let mut ids: FxHashMap<(i32, i32, u32), u32> = FxHashMap::default();
        if lone {
            ids.insert((g.nodes[0].cell.0, g.nodes[0].cell.1, 0), 0);
        }
        let mut u = 0;
        while u < g.nodes.len() {
            let ((i, j), y, walks) = (
                g.nodes[u].cell,
                g.nodes[u].at.y,
                g.nodes[u].fit > Posture::Crouching as u8,
            );
            for (di, dj) in NEIGHBOURS.iter().filter(|_| walks) {
                let (vi, vj) = (i + di, j + dj);
                if !cover.contains(vi, vj) {
                    continue;
                }
                let Some(f) = floor_near(surface.floors(shape, vi, vj), y, p.step_height) else {
                    continue;
                };
                if f.fit == 0 {
                    continue;
                }
                let next = g.nodes.len() as u32;
                let id = (vi, vj, if lone { 0 } else { f.y.to_bits() });
                let v = match ids.get(&id) {
                    Some(&v) => v,
                    None if g.nodes.len() >= *budget => continue,
                    None => {
                        ids.insert(id, next);
                        next
                    }
                };
                if v == next {
                    let at = Vec3::new((vi as f32 + 0.5) * p.cell, f.y, (vj as f32 + 0.5) * p.cell);
                    g.nodes.push(Node {
                        key: (cell_key(vi, vj), cm(f.y), group),
                        at,
                        fit: f.fit,
                        qi: g.nodes[u].qi,
                        cell: (vi, vj),
                    });
                }
                g.edges.push(v);
            }
            g.first_edge.push(g.edges.len() as u32);
            u += 1;
        }
        *budget -= g.nodes.len().min(*budget);
        g
    }

    /// Member `m`'s first [`BODIES`] nodes, breadth first within its radius, whose prone head
    /// hides with the body not traced yet (`probes` holds each node's centre and that test).
    fn nearest(
        &self,
        m: usize,
        queries: &[DenseQuery],
        p: &DenseParams,
        probes: &[Probe],
        seen: &mut Visited,
    ) -> Vec<u32> {
        let a = queries[self.members[m]].agent.position;
        let (a, r2) = (glam::Vec2::new(a.x, a.z), p.radius * p.radius);
        seen.clear(self.nodes.len());
        let mut out = Vec::new();
        let mut queue = vec![m as u32];
        seen.insert(m as u32);
        let mut head = 0;
        while let Some(&u) = queue.get(head) {
            head += 1;
            if probes[u as usize].hidden {
                out.push(u);
                if out.len() == BODIES {
                    break;
                }
            }
            let steps = self.first_edge[u as usize]..self.first_edge[u as usize + 1];
            for &v in &self.edges[steps.start as usize..steps.end as usize] {
                if !seen.contains(v) && probes[v as usize].centre.distance_squared(a) <= r2 {
                    seen.insert(v);
                    queue.push(v);
                }
            }
        }
        out
    }
}

/// What the breadth-first walks read of a node, kept apart from the node so the walks stay
/// in cache: its cell's centre, and whether its prone head hides.
struct Probe {
    centre: glam::Vec2,
    hidden: bool,
}

/// An agent's own spot: seen at its feet, where it stands.
fn start(queries: &[DenseQuery], qi: usize, group: u32, p: &DenseParams) -> Node {
    let a = queries[qi].agent.position;
    let xz = (u64::from(a.x.to_bits()) << 32) | u64::from(a.z.to_bits());
    Node {
        key: (xz, a.y.to_bits() as i32, group | START_KEY),
        at: a,
        fit: 1 + Posture::Standing as u8,
        qi: qi as u32,
        cell: ((a.x / p.cell).floor() as i32, (a.z / p.cell).floor() as i32),
    }
}

/// Nodes one flood has reached: a bit each, cleared word by word where set.
#[derive(Default)]
struct Visited {
    bits: Vec<u64>,
    set: Vec<u32>,
}

impl Visited {
    fn clear(&mut self, nodes: usize) {
        for &w in &self.set {
            self.bits[w as usize] = 0;
        }
        self.set.clear();
        self.bits.resize(nodes.div_ceil(64), 0);
    }

    fn contains(&self, v: u32) -> bool {
        self.bits[(v / 64) as usize] >> (v % 64) & 1 != 0
    }

    fn insert(&mut self, v: u32) {
        let (w, b) = ((v / 64) as usize, v % 64);
        if self.bits[w] == 0 {
            self.set.push(w as u32);
        }
        self.bits[w] |= 1 << b;
    }
}

/// Cells within the radius of some agent of a group (a cell more at each end of a row), as
/// bits in blocks of 64 x 64 cells.
struct Coverage {
    blocks: FxHashMap<(i32, i32), Box<[u64; 64]>>,
}

impl Coverage {
    fn of(queries: &[DenseQuery], members: &[usize], p: &DenseParams) -> Coverage {
        let mut c = Coverage {
            blocks: FxHashMap::default(),
        };
        let r = (p.radius / p.cell).ceil() as i32 + 1;
        for &qi in members {
            let a = queries[qi].agent.position;
            let (ci, cj) = ((a.x / p.cell).floor() as i32, (a.z / p.cell).floor() as i32);
            for j in cj - r..=cj + r {
                let dz = (j as f32 + 0.5) * p.cell - a.z;
                let half = (p.radius * p.radius - dz * dz).max(0.0).sqrt();
                let lo = ((a.x - half) / p.cell).floor() as i32 - 1;
                let hi = ((a.x + half) / p.cell).floor() as i32 + 1;
                c.mark_row(j, lo.max(ci - r), hi.min(ci + r));
            }
        }
        c
    }

    fn mark_row(&mut self, j: i32, lo: i32, hi: i32) {
        let mut i = lo;
        while i <= hi {
            let end = hi.min(i.div_euclid(64) * 64 + 63);
            let (a, b) = (i.rem_euclid(64), end.rem_euclid(64));
            let span = (u64::MAX >> (63 - (b - a))) << a;
            let bits = self
                .blocks
                .entry((i.div_euclid(64), j.div_euclid(64)))
                .or_insert_with(|| Box::new([0; 64]));
            bits[j.rem_euclid(64) as usize] |= span;
            i = end + 1;
        }
    }

    fn contains(&self, i: i32, j: i32) -> bool {
        self.blocks
            .get(&(i.div_euclid(64), j.div_euclid(64)))
            .is_some_and(|bits| bits[j.rem_euclid(64) as usize] >> i.rem_euclid(64) & 1 != 0)
    }
}
