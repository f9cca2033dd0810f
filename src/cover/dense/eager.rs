//! The GPU's strategy: trace the batch's visibility up front, in two calls, so the searches
//! then run from the cache. A wait for the GPU costs far more than the rays it waits for, so
//! tracing more than a lazy search would, in fewer calls, is the cheaper trade there.
//!
//! 1. Every cell each agent can reach within the radius (found on the walk surface, breadth
//!    first): the prone head from every observer, each cell, floor and observer group once.
//! 2. Per agent, the nearest [`BODIES`] cells whose prone head hides: every posture's whole
//!    body at once.
//!
//! What the searches still miss (a candidate farther than that) they ask for as they go, as
//! the CPU's lazy search does; the choice is the same either way.

use super::local::{Local, VIS_HEAD, VIS_UNKNOWN};
use super::shared::{Ask, Shared, VisKey, Wave};
use super::surface::Surface;
use super::{DenseParams, DenseQuery};
use crate::{Engine, Result, Scene};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

/// Cells per agent whose whole body the second call traces.
const BODIES: usize = 128;
/// Queries whose reachable cells are gathered at once (bounds the transient lists).
const GATHER: usize = 256;
/// Largest number of (query, cell) entries kept for the second call; queries beyond it search
/// lazily.
const MAX_ENTRIES: usize = 1 << 25;

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
    let mut ids: FxHashMap<VisKey, u32> = FxHashMap::default();
    let mut wave = Wave::default();
    let mut order: Vec<Vec<u32>> = Vec::with_capacity(queries.len());
    let mut keys: Vec<(VisKey, glam::Vec3, u8)> = Vec::new();
    let mut entries = 0usize;
    for first in (0..queries.len()).step_by(GATHER) {
        let last = (first + GATHER).min(queries.len());
        let reached: Vec<_> = (first..last)
            .into_par_iter()
            .map(|qi| Local::new(qi, &queries[qi], params, shared, surface).reach(params))
            .collect();
        for (qi, cells) in (first..).zip(reached) {
            if entries + cells.len() > MAX_ENTRIES {
                order.push(Vec::new());
                continue;
            }
            entries += cells.len();
            let mut list = Vec::with_capacity(cells.len());
            for (key, at, fit) in cells {
                let next = keys.len() as u32;
                let id = *ids.entry(key).or_insert(next);
                if id == next {
                    keys.push((key, at, fit));
                    if !shared.vis.contains_key(&key) {
                        wave.vis(Ask::whole(key, at, VIS_UNKNOWN, fit, qi));
                    }
                }
                list.push(id);
            }
            order.push(list);
        }
    }
    wave.trace(engine, scene, queries, params, shared, rays)?;
    // The nearest hidden heads of each agent (found on every core): every posture's body.
    let vis = &shared.vis;
    let nearest: Vec<Vec<u32>> = order
        .par_iter()
        .map(|list| {
            let hidden = |&&id: &&u32| vis.get(&keys[id as usize].0) == Some(VIS_HEAD);
            list.iter().filter(hidden).take(BODIES).copied().collect()
        })
        .collect();
    let mut bodies = Wave::default();
    for (qi, ids) in nearest.iter().enumerate() {
        for &id in ids {
            let (key, at, fit) = keys[id as usize];
            bodies.vis(Ask::whole(key, at, VIS_HEAD, fit, qi));
        }
    }
    bodies.trace(engine, scene, queries, params, shared, rays)
}
