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

use super::local::{cm, floor_near, Local, NEIGHBOURS, VIS_HEAD, VIS_UNKNOWN};
use super::shared::{cell_key, Ask, Shared, VisKey, Wave, START_KEY};
use super::surface::Surface;
use super::{DenseParams, DenseQuery};
use crate::cover::Posture;
use crate::{Engine, Result, Scene};
use glam::Vec3;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

/// Cells per agent whose whole body the second call traces.
const BODIES: usize = 128;
/// Queries whose nearest hidden heads are gathered at once (bounds the transient lists).
const GATHER: usize = 256;
/// Largest number of cells the first call traces; beyond it the searches ask as they go.
const MAX_ENTRIES: usize = 1 << 25;
/// Largest number of bodies the second call traces.
const MAX_BODIES: usize = MAX_ENTRIES / BODIES;

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
    for (g, members) in group_members(&shared.group_of).iter().enumerate() {
        let group = (members.as_slice(), g as u32);
        for (key, at, fit, qi) in reach_group(surface, queries, group, params, &mut budget) {
            if !shared.vis.contains_key(&key) {
                heads.vis(Ask::whole(key, at, VIS_UNKNOWN, fit, qi));
            }
        }
    }
    heads.trace(engine, scene, queries, params, shared, rays)?;
    // The nearest hidden heads of each agent (found on every core): every posture's body.
    let mut bodies = Wave::default();
    for first in (0..queries.len()).step_by(GATHER) {
        let last = (first + GATHER).min(queries.len());
        let nearest: Vec<_> = (first..last)
            .into_par_iter()
            .map(|qi| {
                Local::new(qi, &queries[qi], params, shared, surface).nearest_hidden(
                    params,
                    &shared.vis,
                    BODIES,
                )
            })
            .collect();
        for (qi, list) in (first..).zip(nearest) {
            for (key, at, fit) in list {
                bodies.vis(Ask::whole(key, at, VIS_HEAD, fit, qi));
            }
        }
        if bodies.len() >= MAX_BODIES {
            break;
        }
    }
    bodies.trace(engine, scene, queries, params, shared, rays)?;
    Ok(())
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

/// Every cell some agent of one group can reach within its radius, on every floor some agent
/// reaches it at, found in one breadth-first flood from all of them: their visibility keys,
/// ground points, fits and the agent whose flood came first (which the rays are counted to).
/// A superset of each agent's own flood (the same steps, over the union of their discs), so
/// the searches find every cell they reach traced. At most `budget` cells (which it lessens).
fn reach_group(
    surface: &Surface,
    queries: &[DenseQuery],
    (members, group): (&[usize], u32),
    p: &DenseParams,
    budget: &mut usize,
) -> Vec<(VisKey, Vec3, u8, usize)> {
    let q0 = &queries[members[0]];
    let shape = surface.shape_of(&q0.agent);
    let cover = Coverage::of(queries, members, p);
    let standing = 1 + Posture::Standing as u8;
    let mut out = Vec::new();
    let mut queue = std::collections::VecDeque::new();
    for &qi in members {
        let a = queries[qi].agent.position;
        let xz = (u64::from(a.x.to_bits()) << 32) | u64::from(a.z.to_bits());
        out.push((
            (xz, a.y.to_bits() as i32, group | START_KEY),
            a,
            standing,
            qi,
        ));
        let cell = ((a.x / p.cell).floor() as i32, (a.z / p.cell).floor() as i32);
        queue.push_back((cell, a.y, qi));
    }
    let mut seen: FxHashSet<(i32, i32, u32)> = FxHashSet::default();
    'flood: while let Some(((i, j), y, qi)) = queue.pop_front() {
        for (di, dj) in NEIGHBOURS {
            let (vi, vj) = (i + di, j + dj);
            if !cover.contains(vi, vj) {
                continue;
            }
            let Some(f) = floor_near(surface.floors(shape, vi, vj), y, p.step_height) else {
                continue;
            };
            if f.fit == 0 || !seen.insert((vi, vj, f.y.to_bits())) {
                continue;
            }
            if out.len() >= *budget {
                break 'flood;
            }
            let at = Vec3::new((vi as f32 + 0.5) * p.cell, f.y, (vj as f32 + 0.5) * p.cell);
            out.push(((cell_key(vi, vj), cm(f.y), group), at, f.fit, qi));
            if f.fit > Posture::Crouching as u8 {
                queue.push_back(((vi, vj), f.y, qi));
            }
        }
    }
    *budget -= out.len();
    out
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
