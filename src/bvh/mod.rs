//! The one BVH layout both backends traverse, and its binned-SAH builder.
//!
//! A binary BVH in the layout of Aila and Laine ("Understanding the Efficiency of Ray Traversal
//! on GPUs", 2009): each 64-byte node holds the boxes of its *two children*, so one fetch tests
//! both, and on the CPU one SSE lane pair does it. Leaf children name a run of triangles stored
//! in leaf order. Node 0 holds the root's children; parents come before their children.

mod wide;

pub use wide::{collapse, WideNode};

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

/// Marks the unused second slot of a root that is a single leaf.
pub const EMPTY_CHILD: u32 = u32::MAX;

/// A BVH node: its two children's boxes and what they are. Mirrors `struct BvhNode` in
/// `shaders/common.wgsl`.
///
/// Boxes are stored per axis as `[lo0, lo1, hi0, hi1]` (child 0, child 1). For child `i`:
/// `count[i] == 0` means an inner node at index `child[i]`; `count[i] > 0` a leaf holding
/// triangles `child[i] .. child[i] + count[i]`; `child[i] == EMPTY_CHILD` no child.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct BvhNode {
    pub x: [f32; 4],
    pub y: [f32; 4],
    pub z: [f32; 4],
    pub child: [u32; 2],
    pub count: [u32; 2],
}

impl BvhNode {
    /// Bounds (min, max) of child `i`.
    #[must_use]
    pub fn child_bounds(&self, i: usize) -> (Vec3, Vec3) {
        (
            Vec3::new(self.x[i], self.y[i], self.z[i]),
            Vec3::new(self.x[2 + i], self.y[2 + i], self.z[2 + i]),
        )
    }
    fn set_child_bounds(&mut self, i: usize, b: &Aabb) {
        for (axis, v) in [&mut self.x, &mut self.y, &mut self.z]
            .into_iter()
            .enumerate()
        {
            v[i] = b.min[axis];
            v[2 + i] = b.max[axis];
        }
    }
}

/// Bounds of a whole tree (the union of node 0's children), `None` when empty.
#[must_use]
pub fn root_bounds(nodes: &[BvhNode]) -> Option<(Vec3, Vec3)> {
    let root = nodes.first()?;
    let mut b = Aabb::EMPTY;
    for i in 0..2 {
        if root.child[i] != EMPTY_CHILD {
            let (min, max) = root.child_bounds(i);
            b.grow(&Aabb { min, max });
        }
    }
    Some((b.min, b.max))
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

const _: () = assert!(std::mem::size_of::<BvhNode>() == 64);
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
        let mut nodes = Vec::with_capacity(triangles.len() / 2 + 1);
        nodes.push(BvhNode::default());
        match &root {
            Build::Inner { children, .. } => flatten(children, 0, &mut nodes),
            leaf => {
                // A single-leaf tree: child 0 is the leaf, child 1 is empty.
                let empty = Build::Leaf {
                    bounds: Aabb::EMPTY,
                    first: 0,
                    count: 0,
                };
                flatten(
                    &[
                        Build::Leaf {
                            bounds: leaf.bounds(),
                            first: 0,
                            count: triangles.len() as u32,
                        },
                        empty,
                    ],
                    0,
                    &mut nodes,
                );
                nodes[0].child[1] = EMPTY_CHILD;
            }
        }
        Bvh { nodes, order }
    }

    /// Reorders `triangles` into leaf order and packages the result as a scene tier.
    #[must_use]
    pub fn into_tier(self, triangles: Vec<GpuTriangle>) -> crate::scene::Tier {
        let tris = self.order.iter().map(|&i| triangles[i as usize]).collect();
        crate::scene::Tier {
            wide: collapse(&self.nodes),
            nodes: self.nodes,
            triangles: tris,
        }
    }
}

/// Writes the children of inner build node `node` into `nodes[slot]`, depth first.
fn flatten(children: &[Build; 2], slot: usize, nodes: &mut Vec<BvhNode>) {
    for (i, c) in children.iter().enumerate() {
        nodes[slot].set_child_bounds(i, &c.bounds());
        match c {
            Build::Leaf { first, count, .. } => {
                nodes[slot].child[i] = *first;
                nodes[slot].count[i] = *count;
            }
            Build::Inner {
                children: grand, ..
            } => {
                let index = nodes.len();
                nodes.push(BvhNode::default());
                nodes[slot].child[i] = index as u32;
                nodes[slot].count[i] = 0;
                flatten(grand, index, nodes);
            }
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

/// Recomputes every box after vertices moved (same topology). Children always follow their
/// parent, so one reverse sweep suffices.
pub fn refit(nodes: &mut [BvhNode], triangles: &[GpuTriangle]) {
    for n in (0..nodes.len()).rev() {
        for i in 0..2 {
            let (child, count) = (nodes[n].child[i], nodes[n].count[i]);
            if child == EMPTY_CHILD {
                continue;
            }
            let mut b = Aabb::EMPTY;
            if count > 0 {
                for t in &triangles[child as usize..][..count as usize] {
                    let (min, max) = t.bounds();
                    b.grow(&Aabb { min, max });
                }
            } else {
                for j in 0..2 {
                    let (min, max) = nodes[child as usize].child_bounds(j);
                    if nodes[child as usize].child[j] != EMPTY_CHILD {
                        b.grow(&Aabb { min, max });
                    }
                }
            }
            nodes[n].set_child_bounds(i, &b);
        }
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
        let mut stack = vec![(0usize, Vec3::splat(-1e9), Vec3::splat(1e9))];
        while let Some((n, pmin, pmax)) = stack.pop() {
            let node = tier.nodes[n];
            for i in 0..2 {
                let (min, max) = node.child_bounds(i);
                assert!(min.cmpge(pmin).all() && max.cmple(pmax).all());
                if node.count[i] > 0 {
                    for t in &tier.triangles[node.child[i] as usize..][..node.count[i] as usize] {
                        seen[t.id as usize] += 1;
                        let (tmin, tmax) = t.bounds();
                        assert!(tmin.cmpge(min).all() && tmax.cmple(max).all());
                    }
                } else {
                    assert!(node.child[i] as usize > n, "children follow their parent");
                    stack.push((node.child[i] as usize, min, max));
                }
            }
        }
        assert!(seen.iter().all(|&s| s == 1));
    }

    #[test]
    fn the_wide_tree_holds_the_same_leaves_with_four_children_where_it_can() {
        let tris = random_tris(20_000, 5);
        let tier = Bvh::build(&tris).into_tier(tris.clone());
        let binary_leaves: usize = tier
            .nodes
            .iter()
            .flat_map(|n| n.count)
            .filter(|&c| c > 0)
            .count();
        let mut leaves = Vec::new();
        let mut stack = vec![(0usize, Vec3::splat(-1e9), Vec3::splat(1e9))];
        let mut full = 0;
        while let Some((n, pmin, pmax)) = stack.pop() {
            let node = &tier.wide[n];
            let valid = node.valid();
            full += usize::from(valid == 0b1111);
            assert_eq!(
                valid.count_ones(),
                valid.trailing_ones(),
                "slots fill from the front"
            );
            for i in 0..4 {
                if valid >> i & 1 == 0 {
                    assert!(
                        node.bounds[0][i] > node.bounds[1][i],
                        "an unused slot is inverted"
                    );
                    continue;
                }
                let b = |row: usize| node.bounds[row][i];
                let (min, max) = (Vec3::new(b(0), b(2), b(4)), Vec3::new(b(1), b(3), b(5)));
                assert!(min.cmpge(pmin).all() && max.cmple(pmax).all());
                if node.count[i] > 0 {
                    leaves.push((node.child[i], node.count[i]));
                    for t in &tier.triangles[node.child[i] as usize..][..node.count[i] as usize] {
                        let (tmin, tmax) = t.bounds();
                        assert!(tmin.cmpge(min).all() && tmax.cmple(max).all());
                    }
                } else {
                    assert!(node.child[i] as usize > n, "children follow their parent");
                    stack.push((node.child[i] as usize, min, max));
                }
            }
        }
        // Every binary leaf, once; nodes whose children are leaves cannot fill up, so at
        // least the third of the nodes that are full.
        leaves.sort_unstable();
        assert_eq!(leaves.len(), binary_leaves);
        let covered: u32 = leaves.iter().map(|l| l.1).sum();
        assert_eq!(covered as usize, tris.len());
        assert!(leaves.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0));
        assert!(
            full * 3 >= tier.wide.len(),
            "{full} of {} full",
            tier.wide.len()
        );
        let n = tier.wide.len();
        assert!(n * 3 < tier.nodes.len() * 2, "{n} wide nodes");
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
        let before = root_bounds(&tier.nodes).unwrap();
        refit(&mut tier.nodes, &tier.triangles);
        let after = root_bounds(&tier.nodes).unwrap();
        assert!((after.0 - (before.0 + shift)).abs().max_element() < 1e-4);
        assert!((after.1 - (before.1 + shift)).abs().max_element() < 1e-4);
    }

    #[test]
    fn identical_triangles_still_build() {
        let t = GpuTriangle::new(Vec3::ZERO, Vec3::X, Vec3::Y, 0, 0, 3);
        let tris: Vec<_> = (0..100).map(|i| GpuTriangle { id: i, ..t }).collect();
        let tier = Bvh::build(&tris).into_tier(tris.clone());
        assert!(tier.nodes.iter().all(|n| n.count.iter().all(|&c| c <= 8)));
        let one = Bvh::build(&tris[..3]).into_tier(tris[..3].to_vec());
        assert_eq!(
            (one.nodes.len(), one.nodes[0].count, one.nodes[0].child[1]),
            (1, [3, 0], EMPTY_CHILD)
        );
    }
}
