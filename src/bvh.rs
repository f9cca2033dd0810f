//! The one BVH layout both backends traverse, and its binned-SAH builder.
//!
//! Nodes are 32 bytes, children of an inner node sit side by side (`left`, `left + 1`), and a
//! leaf names a run of triangles stored in leaf order, so traversal reads nodes and triangles
//! straight from two arrays on the CPU and from two storage buffers on the GPU.

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

/// A BVH node. Mirrors `struct BvhNode` in `shaders/common.wgsl`.
///
/// `count == 0`: inner node, children at `left_or_first` and `left_or_first + 1`.
/// `count > 0`: leaf holding triangles `left_or_first .. left_or_first + count`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct BvhNode {
    pub min: [f32; 3],
    pub left_or_first: u32,
    pub max: [f32; 3],
    pub count: u32,
}

/// A world-space triangle in leaf order. Mirrors `struct Triangle` in `shaders/common.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuTriangle {
    pub v0: [f32; 3],
    /// Scene-wide triangle id.
    pub id: u32,
    pub v1: [f32; 3],
    /// Index into the scene's material table.
    pub material: u32,
    pub v2: [f32; 3],
    /// The material's [`crate::MaterialFlags`] bits, copied here so traversal needs no lookup.
    pub flags: u32,
}

const _: () = assert!(std::mem::size_of::<BvhNode>() == 32);
const _: () = assert!(std::mem::size_of::<GpuTriangle>() == 48);
const _: () = assert!(std::mem::offset_of!(GpuTriangle, flags) == 44);

impl GpuTriangle {
    pub fn new(a: Vec3, b: Vec3, c: Vec3, id: u32, material: u32, flags: u32) -> Self {
        GpuTriangle {
            v0: a.into(),
            id,
            v1: b.into(),
            material,
            v2: c.into(),
            flags,
        }
    }
    pub fn set_vertices(&mut self, a: Vec3, b: Vec3, c: Vec3) {
        (self.v0, self.v1, self.v2) = (a.into(), b.into(), c.into());
    }
    #[must_use]
    pub fn vertices(&self) -> [Vec3; 3] {
        [self.v0.into(), self.v1.into(), self.v2.into()]
    }
    fn bounds(&self) -> (Vec3, Vec3) {
        let [a, b, c] = self.vertices();
        (a.min(b).min(c), a.max(b).max(c))
    }
}

/// Builder settings. [`BvhParams::DEFAULT`] is what scenes use.
#[derive(Clone, Copy, Debug)]
pub struct BvhParams {
    /// Largest leaf the SAH may keep.
    pub max_leaf: usize,
    /// Centroid bins per axis.
    pub bins: usize,
    /// Cost of one node visit relative to one triangle test.
    pub traversal_cost: f32,
}

impl BvhParams {
    pub const DEFAULT: BvhParams = BvhParams {
        max_leaf: 8,
        bins: 16,
        traversal_cost: 1.0,
    };
}

/// A built BVH: nodes, and the permutation that puts triangles in leaf order.
pub struct Bvh {
    pub nodes: Vec<BvhNode>,
    pub order: Vec<u32>,
}

#[derive(Clone, Copy)]
struct Aabb {
    min: Vec3,
    max: Vec3,
}

impl Aabb {
    const EMPTY: Aabb = Aabb {
        min: Vec3::splat(f32::INFINITY),
        max: Vec3::splat(f32::NEG_INFINITY),
    };
    fn grow(&mut self, o: &Aabb) {
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }
    fn grow_point(&mut self, p: Vec3) {
        self.min = self.min.min(p);
        self.max = self.max.max(p);
    }
    fn half_area(&self) -> f32 {
        let d = (self.max - self.min).max(Vec3::ZERO);
        d.x * d.y + d.y * d.z + d.z * d.x
    }
}

enum Build {
    Leaf {
        bounds: Aabb,
        first: u32,
        count: u32,
    },
    Inner {
        bounds: Aabb,
        children: Box<[Build; 2]>,
    },
}

impl Build {
    fn bounds(&self) -> Aabb {
        match self {
            Build::Leaf { bounds, .. } | Build::Inner { bounds, .. } => *bounds,
        }
    }
}

struct Input {
    boxes: Vec<Aabb>,
    centroids: Vec<Vec3>,
    params: BvhParams,
}

impl Bvh {
    /// Builds with [`BvhParams::DEFAULT`].
    #[must_use]
    pub fn build(triangles: &[GpuTriangle]) -> Bvh {
        Self::build_with(triangles, BvhParams::DEFAULT)
    }

    /// Binned SAH build, parallel over subtrees with rayon.
    #[must_use]
    pub fn build_with(triangles: &[GpuTriangle], params: BvhParams) -> Bvh {
        if triangles.is_empty() {
            return Bvh {
                nodes: Vec::new(),
                order: Vec::new(),
            };
        }
        let boxes: Vec<Aabb> = triangles
            .iter()
            .map(|t| {
                let (min, max) = t.bounds();
                Aabb { min, max }
            })
            .collect();
        let centroids = boxes.iter().map(|b| (b.min + b.max) * 0.5).collect();
        let input = Input {
            boxes,
            centroids,
            params,
        };
        let mut order: Vec<u32> = (0..triangles.len() as u32).collect();
        let root = build_node(&input, &mut order, 0, 0);
        let mut nodes = Vec::with_capacity(2 * triangles.len() / 2 + 1);
        nodes.push(BvhNode::default());
        flatten(&root, 0, &mut nodes);
        Bvh { nodes, order }
    }

    /// Reorders `triangles` into leaf order and packages the result as a scene tier.
    #[must_use]
    pub fn into_tier(self, triangles: Vec<GpuTriangle>) -> crate::scene::Tier {
        let tris = self.order.iter().map(|&i| triangles[i as usize]).collect();
        crate::scene::Tier {
            nodes: self.nodes,
            triangles: tris,
        }
    }
}

fn to_node(b: &Aabb, left_or_first: u32, count: u32) -> BvhNode {
    BvhNode {
        min: b.min.into(),
        left_or_first,
        max: b.max.into(),
        count,
    }
}

fn flatten(node: &Build, slot: usize, nodes: &mut Vec<BvhNode>) {
    match node {
        Build::Leaf {
            bounds,
            first,
            count,
        } => nodes[slot] = to_node(bounds, *first, *count),
        Build::Inner { bounds, children } => {
            let left = nodes.len();
            nodes[slot] = to_node(bounds, left as u32, 0);
            nodes.extend([BvhNode::default(); 2]);
            flatten(&children[0], left, nodes);
            flatten(&children[1], left + 1, nodes);
        }
    }
}

/// Past this depth splits are median splits, so depth stays under the traversal stack (64).
const MAX_SAH_DEPTH: u32 = 32;

fn build_node(input: &Input, idx: &mut [u32], first: u32, depth: u32) -> Build {
    let mut bounds = Aabb::EMPTY;
    let mut cbounds = Aabb::EMPTY;
    for &i in idx.iter() {
        bounds.grow(&input.boxes[i as usize]);
        cbounds.grow_point(input.centroids[i as usize]);
    }
    let n = idx.len();
    let leaf = Build::Leaf {
        bounds,
        first,
        count: n as u32,
    };
    if n <= 2 && n <= input.params.max_leaf {
        return leaf;
    }
    let split = if depth < MAX_SAH_DEPTH {
        best_split(input, idx, &bounds, &cbounds)
    } else {
        None
    };
    let mid = match split {
        Some((axis, pos, cost)) => {
            if cost >= n as f32 && n <= input.params.max_leaf {
                return leaf;
            }
            let split = partition(idx, |i| input.centroids[i as usize][axis] < pos);
            if split == 0 || split == n {
                n / 2
            } else {
                split
            }
        }
        // All centroids coincide, or too deep: median split on the widest centroid axis.
        None if n <= input.params.max_leaf => return leaf,
        None => {
            let axis = (cbounds.max - cbounds.min).max_position();
            idx.select_nth_unstable_by(n / 2, |&a, &b| {
                input.centroids[a as usize][axis].total_cmp(&input.centroids[b as usize][axis])
            });
            n / 2
        }
    };
    let (l, r) = idx.split_at_mut(mid);
    let (a, b) = if n > 8192 {
        rayon::join(
            || build_node(input, l, first, depth + 1),
            || build_node(input, r, first + mid as u32, depth + 1),
        )
    } else {
        (
            build_node(input, l, first, depth + 1),
            build_node(input, r, first + mid as u32, depth + 1),
        )
    };
    let mut bounds = a.bounds();
    bounds.grow(&b.bounds());
    Build::Inner {
        bounds,
        children: Box::new([a, b]),
    }
}

fn partition(idx: &mut [u32], mut left: impl FnMut(u32) -> bool) -> usize {
    let mut k = 0;
    for j in 0..idx.len() {
        if left(idx[j]) {
            idx.swap(k, j);
            k += 1;
        }
    }
    k
}

/// Best (axis, split position, SAH cost in triangle-test units) over all axes' bins.
fn best_split(
    input: &Input,
    idx: &[u32],
    bounds: &Aabb,
    cbounds: &Aabb,
) -> Option<(usize, f32, f32)> {
    let nb = input.params.bins;
    let mut best: Option<(usize, f32, f32)> = None;
    let parent_area = bounds.half_area().max(f32::MIN_POSITIVE);
    for axis in 0..3 {
        let (lo, hi) = (cbounds.min[axis], cbounds.max[axis]);
        if hi <= lo {
            continue;
        }
        let scale = nb as f32 / (hi - lo);
        let mut bins = vec![(Aabb::EMPTY, 0u32); nb];
        for &i in idx {
            let c = input.centroids[i as usize][axis];
            let b = (((c - lo) * scale) as usize).min(nb - 1);
            bins[b].0.grow(&input.boxes[i as usize]);
            bins[b].1 += 1;
        }
        // Sweep from the right to get suffix areas, then from the left.
        let mut right = vec![(0.0f32, 0u32); nb];
        let (mut acc, mut cnt) = (Aabb::EMPTY, 0);
        for b in (1..nb).rev() {
            acc.grow(&bins[b].0);
            cnt += bins[b].1;
            right[b] = (acc.half_area(), cnt);
        }
        let (mut acc, mut cnt) = (Aabb::EMPTY, 0);
        for b in 0..nb - 1 {
            acc.grow(&bins[b].0);
            cnt += bins[b].1;
            let (ra, rc) = right[b + 1];
            if cnt == 0 || rc == 0 {
                continue;
            }
            let cost = input.params.traversal_cost
                + (acc.half_area() * cnt as f32 + ra * rc as f32) / parent_area;
            if best.is_none_or(|(_, _, c)| cost < c) {
                best = Some((axis, lo + (b + 1) as f32 / scale, cost));
            }
        }
    }
    best
}

/// Recomputes every node's bounds from its triangles after vertices moved (same topology).
/// Children always follow their parent, so one reverse sweep suffices.
pub fn refit(nodes: &mut [BvhNode], triangles: &[GpuTriangle]) {
    for i in (0..nodes.len()).rev() {
        let n = nodes[i];
        let mut b = Aabb::EMPTY;
        if n.count > 0 {
            let first = n.left_or_first as usize;
            for t in &triangles[first..first + n.count as usize] {
                let (min, max) = t.bounds();
                b.grow(&Aabb { min, max });
            }
        } else {
            for c in [n.left_or_first as usize, n.left_or_first as usize + 1] {
                b.grow(&Aabb {
                    min: nodes[c].min.into(),
                    max: nodes[c].max.into(),
                });
            }
        }
        nodes[i].min = b.min.into();
        nodes[i].max = b.max.into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_tris(n: usize, seed: u64) -> Vec<GpuTriangle> {
        let mut rng = crate::trace::SplitMix64(seed);
        (0..n)
            .map(|i| {
                let c = Vec3::new(rng.f32() * 100.0, rng.f32() * 10.0, rng.f32() * 100.0);
                let d = |r: &mut crate::trace::SplitMix64| {
                    Vec3::new(r.f32() - 0.5, r.f32() - 0.5, r.f32() - 0.5) * 2.0
                };
                let (a, b) = (d(&mut rng), d(&mut rng));
                GpuTriangle::new(c, c + a, c + b, i as u32, 0, 3)
            })
            .collect()
    }

    #[test]
    fn every_triangle_lands_in_exactly_one_leaf_inside_its_bounds() {
        let tris = random_tris(20_000, 3);
        let tier = Bvh::build(&tris).into_tier(tris.clone());
        let mut seen = vec![0u32; tris.len()];
        let mut stack = vec![(
            0usize,
            Aabb {
                min: Vec3::splat(-1e9),
                max: Vec3::splat(1e9),
            },
        )];
        while let Some((i, parent)) = stack.pop() {
            let n = tier.nodes[i];
            let (min, max): (Vec3, Vec3) = (n.min.into(), n.max.into());
            assert!(min.cmpge(parent.min).all() && max.cmple(parent.max).all());
            let b = Aabb { min, max };
            if n.count > 0 {
                for t in &tier.triangles[n.left_or_first as usize..][..n.count as usize] {
                    seen[t.id as usize] += 1;
                    let (tmin, tmax) = t.bounds();
                    assert!(tmin.cmpge(min).all() && tmax.cmple(max).all());
                }
            } else {
                stack.push((n.left_or_first as usize, b));
                stack.push((n.left_or_first as usize + 1, b));
            }
        }
        assert!(seen.iter().all(|&s| s == 1));
    }

    #[test]
    fn refit_matches_rebuild_bounds_at_the_root() {
        let tris = random_tris(5_000, 9);
        let mut tier = Bvh::build(&tris).into_tier(tris);
        let shift = Vec3::new(3.0, -2.0, 7.5);
        for t in &mut tier.triangles {
            let [a, b, c] = t.vertices();
            t.set_vertices(a + shift, b + shift, c + shift);
        }
        let before = tier.nodes[0];
        refit(&mut tier.nodes, &tier.triangles);
        let after = tier.nodes[0];
        assert_eq!(Vec3::from(after.min), Vec3::from(before.min) + shift);
        assert!(
            (Vec3::from(after.max) - (Vec3::from(before.max) + shift))
                .abs()
                .max_element()
                < 1e-4
        );
    }

    #[test]
    fn identical_triangles_still_build() {
        let t = GpuTriangle::new(Vec3::ZERO, Vec3::X, Vec3::Y, 0, 0, 3);
        let tris: Vec<_> = (0..100).map(|i| GpuTriangle { id: i, ..t }).collect();
        let tier = Bvh::build(&tris).into_tier(tris);
        assert!(tier.nodes.iter().all(|n| n.count <= 8));
    }
}
