//! Laying a batch out in the two atlases (see `gpu.rs`): the targets of each view in clusters
//! that share one scene tile, the tiles shelf-packed into fills of one atlas each, and every
//! tile's matrix, rectangle and culled scene draws.

use super::gpu::{atlas_proj, Frustum, SceneTile, TargetTile};
use crate::bvh::{BvhNode, EMPTY_CHILD};
use crate::scene::Tier;
use glam::{Vec2, Vec3};
use super::resources::Geometry;
use super::{PixelBox, Placed, Plan, View, MAX_BOX_SIDE};
use crate::{Error, Result};
use bytemuck::Zeroable;
use rayon::prelude::*;
use std::ops::Range;

/// Most target tiles (and scene tiles) in one fill: one reduction workgroup each, under the
/// 65,535 workgroups a dispatch dimension allows.
pub(super) const FILL_JOBS: usize = 32_768;
/// Share of an atlas the greedy fill plans to use before packing.
const FILL_SHARE: f64 = 0.7;
/// Largest atlas side used.
const MAX_ATLAS: u32 = 4096;

/// One view's targets that share a scene tile: the union of their boxes.
pub(super) struct Cluster<'a> {
    view: &'a View,
    union: PixelBox,
    members: Vec<&'a Placed>,
}

impl Cluster<'_> {
    fn member_area(&self) -> u64 {
        self.members.iter().map(|t| area(&box_of(t))).sum()
    }
}

/// One fill: its scene tiles and target tiles (slot ranges, the first aligned for dynamic
/// offsets), each scene tile's scissor and draws, and the instance range of each posture.
pub(super) struct Fill {
    pub tiles: Range<usize>,
    pub targets: Range<usize>,
    pub scissors: Vec<PixelBox>,
    /// Per scene tile: `(vertex run, range of the index buffer)` of its culled triangles.
    pub draws: Vec<Vec<(usize, Range<u32>)>>,
    pub postures: [Range<u32>; 3],
}

/// A batch laid out: the atlas side, the fills, and the buffers' contents (alignment gaps
/// zeroed); `slots[k]` is the pair and pixel scale of target slot `k`.
pub(super) struct Layout {
    pub side: u32,
    pub fills: Vec<Fill>,
    pub scene_tiles: Vec<SceneTile>,
    pub targets: Vec<TargetTile>,
    pub slots: Vec<Option<(usize, f32)>>,
    /// The scene tiles' triangles, three vertex indices each.
    pub indices: Vec<u32>,
}

/// The targets of `plan` with a box in clusters, view by view; `max_side` is the device's
/// texture limit.
pub(super) fn clusters(plan: &Plan, max_side: u32) -> Vec<Cluster<'_>> {
    let max_area = u64::from(max_side.min(MAX_ATLAS)).pow(2) / 4;
    (plan.views.iter())
        .flat_map(|(v, placed)| cluster_view(v, placed, max_area))
        .collect()
}

/// Lays `clusters` out in fills of an atlas `side` pixels square; `align` is the slots a
/// dynamic offset must step by.
pub(super) fn layout(
    mut clusters: Vec<Cluster>,
    side: u32,
    scene: [&Tier; 2],
    geometry: &Geometry,
    align: usize,
) -> Result<Layout> {
    let mut out = Layout {
        side,
        fills: Vec::new(),
        scene_tiles: Vec::new(),
        targets: Vec::new(),
        slots: Vec::new(),
        indices: Vec::new(),
    };
    let budget = (f64::from(side).powi(2) * FILL_SHARE) as u64;
    let mut start = 0;
    while start < clusters.len() {
        let mut end = greedy_end(&clusters, start, budget);
        loop {
            if let Some((tiles, targets)) = pack_fill(&clusters[start..end], side) {
                out.push_fill(&clusters[start..end], &tiles, &targets, (scene, geometry), align);
                start = end;
                break;
            }
            if end - start > 1 {
                end = start + (end - start) / 2;
                continue;
            }
            let c = clusters.remove(start);
            if c.members.len() == 1 {
                return Err(Error::InvalidInput(format!(
                    "a {}-pixel intervis box does not fit the {side} x {side} atlas; lower \
                     max_box_pixels or the resolution",
                    area(&c.union)
                )));
            }
            let half = c.members.len() / 2;
            let (a, b) = (c.members[..half].to_vec(), c.members[half..].to_vec());
            clusters.insert(start, cluster_of(c.view, b));
            clusters.insert(start, cluster_of(c.view, a));
            end = start + 1;
        }
    }
    Ok(out)
}

fn box_of(t: &Placed) -> PixelBox {
    t.bbox.expect("only targets with a box are laid out")
}

fn area(b: &PixelBox) -> u64 {
    u64::from(b.pixels())
}

fn union(a: PixelBox, b: PixelBox) -> PixelBox {
    PixelBox {
        x0: a.x0.min(b.x0),
        y0: a.y0.min(b.y0),
        x1: a.x1.max(b.x1),
        y1: a.y1.max(b.y1),
    }
}

fn cluster_of<'a>(view: &'a View, members: Vec<&'a Placed>) -> Cluster<'a> {
    let u = members.iter().map(|t| box_of(t)).reduce(union);
    Cluster {
        view,
        union: u.expect("a cluster has members"),
        members,
    }
}

/// A view's targets with a box, left to right, in clusters whose union stays near the area
/// of its boxes (at most twice it and 8,192 pixels), at most `MAX_BOX_SIDE` a side and
/// `max_area` pixels of boxes.
fn cluster_view<'a>(view: &'a View, placed: &'a [Placed], max_area: u64) -> Vec<Cluster<'a>> {
    let mut targets: Vec<&Placed> = placed.iter().filter(|t| t.bbox.is_some()).collect();
    targets.sort_by_key(|t| box_of(t).x0);
    let mut out: Vec<Cluster> = Vec::new();
    let mut sum = 0u64;
    for t in targets {
        let b = box_of(t);
        if let Some(c) = out.last_mut() {
            let u = union(c.union, b);
            let joined = sum + area(&b);
            if u.x1 - u.x0 <= MAX_BOX_SIDE
                && u.y1 - u.y0 <= MAX_BOX_SIDE
                && area(&u) <= 2 * joined + 8192
                && joined <= max_area
                && c.members.len() < FILL_JOBS
            {
                c.union = u;
                c.members.push(t);
                sum = joined;
                continue;
            }
        }
        out.push(cluster_of(view, vec![t]));
        sum = area(&b);
    }
    out
}

/// The smallest power-of-two side (at least 256) that holds every tile and, within
/// `max_side` (the device's texture limit), the whole batch in one fill.
pub(super) fn atlas_side(clusters: &[Cluster], max_side: u32) -> Result<u32> {
    let max_side = max_side.min(MAX_ATLAS);
    let scene: u64 = clusters.iter().map(|c| area(&c.union)).sum();
    let targets: u64 = clusters.iter().map(Cluster::member_area).sum();
    let widest = (clusters.iter())
        .map(|c| (c.union.x1 - c.union.x0).max(c.union.y1 - c.union.y0))
        .max()
        .unwrap_or(1);
    if widest > max_side {
        return Err(Error::InvalidInput(format!(
            "an intervis tile {widest} pixels wide exceeds the device's texture limit of \
             {max_side}; lower the resolution or max_box_pixels"
        )));
    }
    let need = ((scene.max(targets) as f64 / FILL_SHARE).sqrt().ceil() as u32).max(widest);
    Ok(need.next_power_of_two().max(256).min(max_side))
}

/// The end of the fill starting at cluster `start`: clusters while both atlases' planned area
/// stays under `budget` and the tiles under `FILL_JOBS` (at least one cluster).
fn greedy_end(clusters: &[Cluster], start: usize, budget: u64) -> usize {
    let (mut scene, mut targets, mut jobs) = (0u64, 0u64, 0usize);
    let mut end = start;
    while end < clusters.len() {
        let c = &clusters[end];
        let (s, t, j) = (
            scene + area(&c.union),
            targets + c.member_area(),
            jobs + c.members.len(),
        );
        if end > start && (s > budget || t > budget || j > FILL_JOBS || end - start >= FILL_JOBS) {
            break;
        }
        (scene, targets, jobs) = (s, t, j);
        end += 1;
    }
    end
}

/// Atlas positions of the fill's scene tiles and target tiles (targets in cluster order), or
/// `None` when either does not fit.
#[allow(clippy::type_complexity)]
fn pack_fill(clusters: &[Cluster], side: u32) -> Option<(Vec<[u32; 2]>, Vec<[u32; 2]>)> {
    let size = |b: PixelBox| [b.x1 - b.x0, b.y1 - b.y0];
    let tiles: Vec<[u32; 2]> = clusters.iter().map(|c| size(c.union)).collect();
    let targets: Vec<[u32; 2]> = (clusters.iter())
        .flat_map(|c| c.members.iter().map(|t| size(box_of(t))))
        .collect();
    Some((shelf_pack(&tiles, side)?, shelf_pack(&targets, side)?))
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
    /// Appends a packed fill's tiles, targets (ordered by posture) and scene draws.
    fn push_fill(
        &mut self,
        clusters: &[Cluster],
        tiles: &[[u32; 2]],
        targets: &[[u32; 2]],
        (scene, geometry): ([&Tier; 2], &Geometry),
        align: usize,
    ) {
        let side = self.side;
        let first_tile = self.scene_tiles.len().next_multiple_of(align);
        self.scene_tiles.resize(first_tile, SceneTile::zeroed());
        let mut scissors = Vec::with_capacity(clusters.len());
        let mut draws = Vec::with_capacity(clusters.len());
        let mut members = Vec::new();
        let culled: Vec<Vec<Vec<u32>>> = (clusters.par_iter())
            .map(|c| cull(scene, geometry, c.view, c.union))
            .collect();
        for ((c, &[x, y]), culled) in clusters.iter().zip(tiles).zip(culled) {
            let u = c.union;
            let rect = [x, y, x + u.x1 - u.x0, y + u.y1 - u.y0];
            self.scene_tiles.push(SceneTile {
                view_proj: atlas_proj(c.view, [u.x0, u.y0], [x, y], side).to_cols_array_2d(),
                eye: c.view.eye.extend(0.0).into(),
                rect,
            });
            scissors.push(PixelBox {
                x0: rect[0],
                y0: rect[1],
                x1: rect[2],
                y1: rect[3],
            });
            draws.push(scene_draws(culled, &mut self.indices));
            members.extend(c.members.iter().map(|t| (c, [x, y], *t)));
        }
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_by_key(|&k| members[k].2.posture as usize);
        let first = self.targets.len().next_multiple_of(align);
        self.targets.resize(first, TargetTile::zeroed());
        self.slots.resize(first, None);
        let mut postures = [0u32..0, 0..0, 0..0];
        for (n, &k) in order.iter().enumerate() {
            let (c, tile, t) = members[k];
            self.targets.push(target_tile(c, tile, t, targets[k], side));
            self.slots.push(Some((t.pair, t.scale)));
            let r = &mut postures[t.posture as usize];
            if r.start == r.end {
                *r = n as u32..n as u32;
            }
            r.end = n as u32 + 1;
        }
        self.fills.push(Fill {
            tiles: first_tile..self.scene_tiles.len(),
            targets: first..self.targets.len(),
            scissors,
            draws,
            postures,
        });
    }
}

/// Target `t` of cluster `c` (scene tile at `scene`) in its tile at `at`.
fn target_tile(c: &Cluster, scene: [u32; 2], t: &Placed, at: [u32; 2], side: u32) -> TargetTile {
    let (b, u) = (box_of(t), c.union);
    TargetTile {
        view_proj: atlas_proj(c.view, [b.x0, b.y0], at, side).to_cols_array_2d(),
        model: glam::Mat4::from(t.model).to_cols_array_2d(),
        eye: c.view.eye.extend(c.view.focal).into(),
        rect: [at[0], at[1], at[0] + b.x1 - b.x0, at[1] + b.y1 - b.y0],
        origin: [scene[0] + b.x0 - u.x0, scene[1] + b.y0 - u.y0, b.x0, b.y0],
        info: [c.view.resolution, 0, 0, 0],
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
                if v != u32::MAX && covers_a_centre(view, u, tier.triangles[t as usize].vertices()) {
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
    let c = view.resolution as f32 * 0.5;
    let (mut lo, mut hi) = (Vec2::INFINITY, Vec2::NEG_INFINITY);
    for p in tri {
        let d = p - view.eye;
        let z = d.dot(view.forward);
        if z < super::NEAR {
            return true;
        }
        let q = Vec2::new(c + view.focal * d.dot(view.right) / z, c - view.focal * d.dot(view.up) / z);
        (lo, hi) = (lo.min(q), hi.max(q));
    }
    const GROW: f32 = 0.01;
    // Pixel i's centre is i + 0.5: the first and last centres inside [lo, hi].
    let first = (lo - (0.5 + GROW)).ceil().max(Vec2::new(u.x0 as f32, u.y0 as f32));
    let last = (hi + (GROW - 0.5)).floor().min(Vec2::new(u.x1 as f32 - 1.0, u.y1 as f32 - 1.0));
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
