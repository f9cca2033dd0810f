//! The CPU's wide tree: the binary SAH tree collapsed to four children per node, so one SSE
//! slab test covers four boxes and a walk takes about half as many steps (Wald, Benthin, Boulos,
//! "Getting Rid of Packets", 2008; Dammertz, Hanika, Keller, "Shallow Bounding Volume
//! Hierarchies for Fast SIMD Ray Tracing of Incoherent Rays", 2008). The GPU keeps the binary
//! layout; both trees hold the same leaves over the same triangle order.

use super::{BvhNode, EMPTY_CHILD};
use bytemuck::{Pod, Zeroable};

/// Four children's boxes and what they are.
///
/// `bounds[2 * axis]` holds the four children's lower bounds on `axis`, `bounds[2 * axis + 1]`
/// their upper bounds. `count[i] == 0` means an inner node at index `child[i]`, `count[i] > 0` a
/// leaf of triangles `child[i] .. child[i] + count[i]`. An unused slot has `child ==
/// EMPTY_CHILD` and the inverted box `+inf .. -inf`, which a slab test that picks the near
/// plane by the ray's direction never enters.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct WideNode {
    pub bounds: [[f32; 4]; 6],
    pub child: [u32; 4],
    pub count: [u32; 4],
}

const _: () = assert!(std::mem::size_of::<WideNode>() == 128);

impl WideNode {
    const EMPTY: WideNode = WideNode {
        bounds: [
            [f32::INFINITY; 4],
            [f32::NEG_INFINITY; 4],
            [f32::INFINITY; 4],
            [f32::NEG_INFINITY; 4],
            [f32::INFINITY; 4],
            [f32::NEG_INFINITY; 4],
        ],
        child: [EMPTY_CHILD; 4],
        count: [0; 4],
    };

    /// Bit `i` set where slot `i` holds a child.
    #[must_use]
    #[inline]
    pub fn valid(&self) -> u32 {
        (0..4).fold(0, |m, i| m | u32::from(self.child[i] != EMPTY_CHILD) << i)
    }
}

/// A child of a binary node: what it is and its box (min, max).
#[derive(Clone, Copy)]
struct Ref {
    child: u32,
    count: u32,
    min: [f32; 3],
    max: [f32; 3],
}

impl Ref {
    fn half_area(&self) -> f32 {
        let d = [0, 1, 2].map(|a| self.max[a] - self.min[a]);
        d[0] * d[1] + d[1] * d[2] + d[2] * d[0]
    }
}

fn children(nodes: &[BvhNode], n: usize) -> impl Iterator<Item = Ref> + '_ {
    let node = &nodes[n];
    (0..2)
        .filter(move |&i| node.child[i] != EMPTY_CHILD)
        .map(move |i| {
            let (min, max) = node.child_bounds(i);
            Ref {
                child: node.child[i],
                count: node.count[i],
                min: min.into(),
                max: max.into(),
            }
        })
}

/// Collapses a binary tree (node 0 holding the root's children) into a wide one: each wide node
/// takes its binary node's children and keeps opening the inner child of largest surface area
/// until it holds four. Parents come before children; leaves are unchanged.
#[must_use]
pub fn collapse(nodes: &[BvhNode]) -> Vec<WideNode> {
    if nodes.is_empty() {
        return Vec::new();
    }
    let mut out = vec![WideNode::EMPTY];
    let mut todo = vec![(0usize, 0usize)];
    let mut refs: Vec<Ref> = Vec::with_capacity(4);
    while let Some((binary, slot)) = todo.pop() {
        refs.clear();
        refs.extend(children(nodes, binary));
        while refs.len() < 4 {
            let open = refs
                .iter()
                .enumerate()
                .filter(|(_, r)| r.count == 0)
                .max_by(|a, b| a.1.half_area().total_cmp(&b.1.half_area()))
                .map(|(k, _)| k);
            let Some(k) = open else { break };
            let r = refs.remove(k);
            refs.extend(children(nodes, r.child as usize));
        }
        let mut node = WideNode::EMPTY;
        for (i, r) in refs.iter().enumerate() {
            for a in 0..3 {
                node.bounds[2 * a][i] = r.min[a];
                node.bounds[2 * a + 1][i] = r.max[a];
            }
            node.count[i] = r.count;
            node.child[i] = if r.count > 0 {
                r.child
            } else {
                out.push(WideNode::EMPTY);
                todo.push((r.child as usize, out.len() - 1));
                (out.len() - 1) as u32
            };
        }
        out[slot] = node;
    }
    out
}
