//! Laying a batch out in the atlas (see `gpu.rs`): a tile per target holding its padded box,
//! the tiles shelf-packed into fills of one atlas each, and every tile's matrix, rectangle
//! and culled scene draws.
//!
//! Each target draws the scene into its own tile. Sharing one scene tile between nearby
//! targets of a view was measured slower on lavapipe: the union of their boxes reaches into
//! more of the scene than the boxes do, and targets whose boxes overlap need tiles of their
//! own anyway (a target writes depth inside its box).

use super::gpu::{atlas_proj, Frustum, Tile};
use super::resources::Geometry;
use super::{PixelBox, Placed, Plan, View};
use crate::bvh::{BvhNode, EMPTY_CHILD};
use crate::scene::Tier;
use crate::{Error, Result};
use bytemuck::Zeroable;
use glam::{Vec2, Vec3};
use rayon::prelude::*;
use std::ops::Range;

/// Most tiles in one fill: one reduction workgroup each, under the 65,535 workgroups a
/// dispatch dimension allows.
pub(super) const FILL_JOBS: usize = 32_768;
/// Share of an atlas the greedy fill plans to use before packing.
const FILL_SHARE: f64 = 0.7;
/// Largest atlas side used.
const MAX_ATLAS: u32 = 4096;

/// A target with a box and its view.
pub(super) type Job<'a> = (&'a View, &'a Placed);

/// One fill: its tiles (a slot range, the first aligned for dynamic offsets, in posture
/// order), each tile's scissor and scene draws, and the instance range of each posture.
pub(super) struct Fill {
    pub tiles: Range<usize>,
    pub scissors: Vec<PixelBox>,
    /// Per tile: `(vertex run, range of the index buffer)` of its culled scene triangles.
    pub draws: Vec<Vec<(usize, Range<u32>)>>,
    pub postures: [Range<u32>; 3],
}

/// A batch laid out: the atlas side, the fills, and the buffers' contents (alignment gaps
/// zeroed); `slots[k]` is the pair and pixel scale of tile slot `k`.
pub(super) struct Layout {
    pub side: u32,
    pub fills: Vec<Fill>,
    pub tiles: Vec<Tile>,
    pub slots: Vec<Option<(usize, f32)>>,
    /// The tiles' scene triangles, three vertex indices each.
    pub indices: Vec<u32>,
}

/// The targets of `plan` with a box.
pub(super) fn jobs(plan: &Plan) -> Vec<Job<'_>> {
    (plan.views.iter())
        .flat_map(|(v, placed)| {
            placed
                .iter()
                .filter(|t| t.bbox.is_some())
                .map(move |t| (v, t))
        })
        .collect()
}

/// Lays `jobs` out in fills of an atlas `side` pixels square (at least [`atlas_side`]);
/// `align` is the slots a dynamic offset must step by.
pub(super) fn layout(
    jobs: &[Job],
    side: u32,
    scene: [&Tier; 2],
    geometry: &Geometry,
    align: usize,
) -> Result<Layout> {
    let mut out = Layout {
        side,
        fills: Vec::new(),
        tiles: Vec::new(),
        slots: Vec::new(),
        indices: Vec::new(),
    };
    let budget = (f64::from(side).powi(2) * FILL_SHARE) as u64;
    let mut start = 0;
    while start < jobs.len() {
        let mut end = greedy_end(jobs, start, budget);
        loop {
            let sizes: Vec<[u32; 2]> = jobs[start..end]
                .iter()
                .map(|j| size(&box_of(j.1)))
                .collect();
            if let Some(at) = shelf_pack(&sizes, side) {
                out.push_fill(&jobs[start..end], &at, (scene, geometry), align);
                start = end;
                break;
            }
            if end - start == 1 {
                return Err(Error::InvalidInput(format!(
                    "a {} x {} intervis box does not fit the {side} x {side} atlas; lower \
                     max_box_pixels or the resolution",
                    sizes[0][0], sizes[0][1]
                )));
            }
            end = start + (end - start) / 2;
        }
    }
    Ok(out)
}

fn box_of(t: &Placed) -> PixelBox {
    t.bbox.expect("only targets with a box are laid out")
}

fn size(b: &PixelBox) -> [u32; 2] {
    [b.x1 - b.x0, b.y1 - b.y0]
}

/// The smallest power-of-two side (at least 256) that holds every box and, within `max_side`
/// (the device's texture limit), the whole batch in one fill.
pub(super) fn atlas_side(jobs: &[Job], max_side: u32) -> Result<u32> {
    let max_side = max_side.min(MAX_ATLAS);
    let total: u64 = jobs.iter().map(|j| u64::from(box_of(j.1).pixels())).sum();
    let widest = (jobs.iter())
        .map(|j| size(&box_of(j.1)).into_iter().max().unwrap_or(1))
        .max()
        .unwrap_or(1);
    if widest > max_side {
        return Err(Error::InvalidInput(format!(
            "an intervis box {widest} pixels wide exceeds the device's texture limit of \
             {max_side}; lower the resolution or max_box_pixels"
        )));
    }
    let need = ((total as f64 / FILL_SHARE).sqrt().ceil() as u32).max(widest);
    Ok(need.next_power_of_two().max(256).min(max_side))
}

/// The end of the fill starting at job `start`: jobs while their boxes' area stays under
/// `budget` and their count under `FILL_JOBS` (at least one job).
fn greedy_end(jobs: &[Job], start: usize, budget: u64) -> usize {
    let mut pixels = 0u64;
    let mut end = start;
    while end < jobs.len() && end - start < FILL_JOBS {
        let p = pixels + u64::from(box_of(jobs[end].1).pixels());
        if end > start && p > budget {
            break;
        }
        pixels = p;
        end += 1;
    }
    end
}

/// Positions of rectangles `sizes` (`[w, h]`) in a `side` square: shelves of tiles sorted by
/// height, tallest first; `None` when they do not fit.
fn shelf_pack(sizes: &[[u32; 2]], side: u32) -> Option<Vec<[u32; 2]>> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse((sizes[i][1], sizes[i][0])));
    let mut at = vec![[0; 2]; sizes.len()];
    let (mut x, mut y, mut shelf) = (0u32, 0u32, 0u32);
    for i in order {
        let [w, h] = sizes[i];
        if x + w > side {
            (x, y, shelf) = (0, y + shelf, 0);
        }
        if w > side || y + h > side {
            return None;
        }
        at[i] = [x, y];
        x += w;
        shelf = shelf.max(h);
    }
    Some(at)
}

impl Layout {
    /// Appends a packed fill's tiles (ordered by posture) and their scene draws.
    fn push_fill(
        &mut self,
        jobs: &[Job],
        at: &[[u32; 2]],
        (scene, geometry): ([&Tier; 2], &Geometry),
        align: usize,
    ) {
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_by_key(|&k| jobs[k].1.posture as usize);
        let culled: Vec<Vec<Vec<u32>>> = (order.par_iter())
            .map(|&k| cull(scene, geometry, jobs[k].0, box_of(jobs[k].1)))
            .collect();
        let first = self.tiles.len().next_multiple_of(align);
        self.tiles.resize(first, Tile::zeroed());
        self.slots.resize(first, None);
        let mut scissors = Vec::with_capacity(jobs.len());
        let mut draws = Vec::with_capacity(jobs.len());
        let mut postures = [0u32..0, 0..0, 0..0];
        for (n, (&k, culled)) in order.iter().zip(culled).enumerate() {
            let (view, t) = jobs[k];
            let tile = tile(view, t, at[k], self.side);
            let [x0, y0, x1, y1] = tile.rect;
            scissors.push(PixelBox { x0, y0, x1, y1 });
            self.tiles.push(tile);
            self.slots.push(Some((t.pair, t.scale)));
            draws.push(scene_draws(culled, &mut self.indices));
            let r = &mut postures[t.posture as usize];
            if r.start == r.end {
                *r = n as u32..n as u32;
            }
            r.end = n as u32 + 1;
        }
        self.fills.push(Fill {
            tiles: first..self.tiles.len(),
            scissors,
            draws,
            postures,
        });
    }
}

/// Target `t` of `view` in its tile at `at` of an atlas `side` pixels square.
fn tile(view: &View, t: &Placed, at: [u32; 2], side: u32) -> Tile {
    let b = box_of(t);
    let [w, h] = size(&b);
    Tile {
        view_proj: atlas_proj(view, [b.x0, b.y0], at, side).to_cols_array_2d(),
        model: glam::Mat4::from(t.model).to_cols_array_2d(),
        eye: view.eye.extend(view.focal).into(),
        rect: [at[0], at[1], at[0] + w, at[1] + h],
        view_pixel: [b.x0, b.y0, view.resolution, 0],
    }
}

/// The vertex indices of the scene triangles in the BVH leaves that reach into the frustum
/// behind `u` of `view` and may cover a pixel centre of `u` ([`covers_a_centre`]), per vertex
/// buffer of [`Geometry::run`].
fn cull(tiers: [&Tier; 2], geometry: &Geometry, view: &View, u: PixelBox) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    for (tier, st) in tiers.into_iter().zip(&geometry.tiers) {
        let mut per_run: Vec<Vec<u32>> = vec![Vec::new(); st.runs.len()];
        visit_frustum(&tier.nodes, view, u, |first, count| {
            for t in first..first + count {
                let v = st.first_vertex[t as usize];
                if v != u32::MAX && covers_a_centre(view, u, tier.triangles[t as usize].vertices())
                {
                    let (r, local) = ((v / st.per_run) as usize, v % st.per_run);
                    per_run[r].extend([local, local + 1, local + 2]);
                }
            }
        });
        out.extend(per_run);
    }
    out
}

/// Whether triangle `tri` may cover the centre of a pixel of `u` in `view`: false only when
/// all three corners lie in front of the near plane and the box of their projections, grown
/// by a hundredth of a pixel (more than the rasteriser's vertex snapping), holds no pixel
/// centre of `u`. Such a triangle makes no fragment; most distant ground triangles are
/// smaller than a pixel, and skipping them here saves their setup on the GPU.
fn covers_a_centre(view: &View, u: PixelBox, tri: [Vec3; 3]) -> bool {
    let (mut lo, mut hi) = (Vec2::INFINITY, Vec2::NEG_INFINITY);
    for p in tri {
        let Some(q) = view.project(p) else {
            return true;
        };
        (lo, hi) = (lo.min(q), hi.max(q));
    }
    const GROW: f32 = 0.01;
    // Pixel i's centre is i + 0.5: the first and last centres inside [lo, hi].
    let first = (lo - (0.5 + GROW))
        .ceil()
        .max(Vec2::new(u.x0 as f32, u.y0 as f32));
    let last = (hi + (GROW - 0.5))
        .floor()
        .min(Vec2::new(u.x1 as f32 - 1.0, u.y1 as f32 - 1.0));
    first.x <= last.x && first.y <= last.y
}

/// Appends `culled` (per run, from [`cull`]) to `indices`; returns the draws: `(run, index
/// range)`.
fn scene_draws(culled: Vec<Vec<u32>>, indices: &mut Vec<u32>) -> Vec<(usize, Range<u32>)> {
    let mut draws = Vec::new();
    for (r, list) in culled.into_iter().enumerate() {
        if !list.is_empty() {
            let start = indices.len() as u32;
            indices.extend(list);
            draws.push((r, start..indices.len() as u32));
        }
    }
    draws
}

/// Calls `leaf(first, count)` for every BVH leaf whose box reaches into the frustum behind
/// `u` of `view`.
fn visit_frustum(nodes: &[BvhNode], view: &View, u: PixelBox, mut leaf: impl FnMut(u32, u32)) {
    if nodes.is_empty() {
        return;
    }
    let frustum = Frustum::new(view, u);
    let mut stack = vec![0u32];
    while let Some(n) = stack.pop() {
        let node = &nodes[n as usize];
        for i in 0..2 {
            if node.child[i] == EMPTY_CHILD {
                continue;
            }
            let (lo, hi) = node.child_bounds(i);
            if !frustum.touches(lo, hi) {
                continue;
            }
            if node.count[i] > 0 {
                leaf(node.child[i], node.count[i]);
            } else {
                stack.push(node.child[i]);
            }
        }
    }
}
