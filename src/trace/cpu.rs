//! CPU twins of `shaders/occluded.wgsl` and `shaders/closest_hit.wgsl`: the same watertight
//! ray/triangle test (Woop, Benthin, Wald 2013), line for line, and the same leaves, walked
//! through the four-wide collapse of the tree ([`crate::bvh::WideNode`]) with SSE slab tests and
//! run in parallel with rayon. Closest hits break ties by triangle id. Where the GPU compiler
//! does not contract `a * b + c` (lavapipe) every answer equals the GPU's bit for bit; elsewhere
//! they agree by the contract in ARCHITECTURE.md ("Agreement between backends"), and the fused
//! twins ([`Fusion`]) round as a contracting compiler would. They are the reference in tests
//! and the fallback without an adapter.

use super::{packet, HitRecord, Occlusion, Ray, Segment, NO_HIT};
use crate::bvh::{GpuTriangle, WideNode};
use crate::scene::Tier;
use glam::{BVec3A, Vec3, Vec3A, Vec4};
use rayon::prelude::*;

/// Traversal stack entries: the builder bounds the depth at 64 (SAH to depth 32, then median
/// splits), collapsing never deepens it, and a walk holds at most three pending siblings per
/// level plus one.
pub const STACK_SIZE: usize = 3 * 64 + 4;

/// Pads the far slab distance so a box test never culls a hit the triangle test accepts
/// (Ize 2013, "Robust BVH Ray Traversal": 1 + 2 gamma(3)).
pub(crate) const BOX_PAD: f32 = 1.000_000_4;

/// Per-ray constants of the watertight test. Mirrors `RayPrep` in `shaders/common.wgsl`.
///
/// Woop et al. permute the axes so the ray runs along +z and shear the triangle onto the ray's
/// plane: `A.x' = A[kx] - Sx A[kz]`, `A.y' = A[ky] - Sy A[kz]`, `A.z' = Sz A[kz]`. Each of
/// those is a dot product with a row holding one or two non-zero entries, and adding the exact
/// zeros changes no bit, so `rows` give the paper's values without per-component indexing.
#[derive(Clone, Copy, Debug)]
pub struct RayPrep {
    pub(crate) org: Vec3A,
    pub(crate) dir: Vec3A,
    pub(crate) inv: Vec3A,
    pub(crate) rows: [Vec3A; 3],
    /// Per axis, the row of [`WideNode::bounds`] holding the plane the ray enters first.
    pub(crate) near: [usize; 3],
    /// How [`intersect`] rounds its products and sums.
    pub(crate) fusion: Fusion,
}

/// How the CPU kernels round `a * b + c` in the triangle test: as written, two roundings (the
/// plain twin, bit for bit what a GPU compiler that does not contract gives), or fused into one
/// rounding the way a contracting compiler may (WGSL allows it and naga asks for no
/// `NoContraction`). A sum of two products can fuse either one: `First` fuses the first
/// product written, `Last` the second. The slab test has no `a * b + c` (it subtracts, then
/// multiplies), so it stays as written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Fusion {
    #[default]
    None,
    First,
    Last,
}

impl Fusion {
    /// `x0 * y0 + x1 * y1` rounded this way.
    #[inline]
    fn sum2(self, x0: f32, y0: f32, x1: f32, y1: f32) -> f32 {
        match self {
            Fusion::None => x0 * y0 + x1 * y1,
            Fusion::First => x0.mul_add(y0, x1 * y1),
            Fusion::Last => x1.mul_add(y1, x0 * y0),
        }
    }

    /// WGSL's `dot(r, a)` of 3-vectors, `(r.x a.x + r.y a.y) + r.z a.z`, rounded this way (the
    /// last product always fuses into the sum before it).
    #[inline]
    fn dot(self, r: Vec3A, a: Vec3A) -> f32 {
        match self {
            Fusion::None => r.dot(a),
            _ => r.z.mul_add(a.z, self.sum2(r.x, a.x, r.y, a.y)),
        }
    }
}

impl RayPrep {
    #[must_use]
    #[inline]
    pub fn new(org: Vec3, dir: Vec3) -> RayPrep {
        // Without branches (random rays would mispredict them): kz is the largest component
        // (the first of equals), (kx, ky) from a table by kz and its sign.
        const AXES: [(usize, usize); 6] = [(1, 2), (2, 1), (2, 0), (0, 2), (0, 1), (1, 0)];
        let a = dir.abs();
        let x_first = (a.x >= a.y) & (a.x >= a.z);
        let kz = usize::from(!x_first) * (1 + usize::from(!(a.y >= a.z)));
        let d = dir.to_array();
        let (kx, ky) = AXES[2 * kz + usize::from(d[kz] < 0.0)];
        // Per-lane IEEE division: the same bits as dir[kx] / dir[kz] and so on.
        let shear = Vec3A::new(d[kx], d[ky], 1.0) / Vec3A::splat(d[kz]);
        // Whole vectors by selects: a lane written into a vector read back whole stalls.
        let at = |k: usize| BVec3A::new(k == 0, k == 1, k == 2);
        let (ix, iy, iz) = (at(kx), at(ky), at(kz));
        let row = |i: BVec3A, s: f32| {
            Vec3A::select(
                i,
                Vec3A::ONE,
                Vec3A::select(iz, Vec3A::splat(s), Vec3A::ZERO),
            )
        };
        let rows = [
            row(ix, -shear.x),
            row(iy, -shear.y),
            Vec3A::select(iz, Vec3A::splat(shear.z), Vec3A::ZERO),
        ];
        // Near-zero components get a tiny stand-in so the slab test never computes 0 * inf.
        let dir = Vec3A::from(dir);
        let tiny = dir.abs().cmplt(Vec3A::splat(1e-30));
        let safe = Vec3A::select(tiny, Vec3A::splat(1e-30).copysign(dir), dir);
        RayPrep {
            org: org.into(),
            dir,
            inv: Vec3A::ONE / safe,
            rows,
            // Written out: `[0, 1, 2].map(..)` stayed an out-of-line call, once a ray.
            near: [
                usize::from(safe.x < 0.0),
                2 + usize::from(safe.y < 0.0),
                4 + usize::from(safe.z < 0.0),
            ],
            fusion: Fusion::None,
        }
    }

    /// [`RayPrep::new`] whose triangle tests round as `fusion` says.
    #[must_use]
    #[inline]
    pub fn fused(org: Vec3, dir: Vec3, fusion: Fusion) -> RayPrep {
        RayPrep {
            fusion,
            ..RayPrep::new(org, dir)
        }
    }
}

/// An edge function within this share of its larger product reads as exactly 0: the ray lies
/// on the edge. The plain difference of two rounded products gives +-0 there to both triangles
/// of a shared edge; a compiler that fuses one product (WGSL allows it) leaves the other's
/// rounding error instead, of the same sign for both triangles, and a ray along the edge
/// could slip between them. Read as 0, the test stays watertight however it is rounded.
pub(crate) const EDGE_SNAP: f32 = f32::EPSILON;

#[inline(always)]
fn snap_edge(d: f32, p: f32, q: f32) -> f32 {
    if d.abs() <= EDGE_SNAP * p.abs().max(q.abs()) {
        0.0
    } else {
        d
    }
}

/// Watertight test: `Some(t)` for a hit with `0 < t < t_max`, else `None`.
/// Edges shared by two triangles never leak: at least one of them reports the hit.
#[must_use]
#[inline]
pub fn intersect(r: &RayPrep, tri: &GpuTriangle, t_max: f32) -> Option<f32> {
    if r.fusion != Fusion::None {
        return intersect_fused(r, tri, t_max);
    }
    let a = Vec3A::from(tri.v0) - r.org;
    let b = Vec3A::from(tri.v1) - r.org;
    let c = Vec3A::from(tri.v2) - r.org;
    let [r0, r1, r2] = r.rows;
    let (ax, ay) = (r0.dot(a), r1.dot(a));
    let (bx, by) = (r0.dot(b), r1.dot(b));
    let (cx, cy) = (r0.dot(c), r1.dot(c));
    let u = snap_edge(cx * by - cy * bx, cx * by, cy * bx);
    let v = snap_edge(ax * cy - ay * cx, ax * cy, ay * cx);
    let w = snap_edge(bx * ay - by * ax, bx * ay, by * ax);
    if (u < 0.0 || v < 0.0 || w < 0.0) && (u > 0.0 || v > 0.0 || w > 0.0) {
        return None;
    }
    let det = u + v + w;
    if det == 0.0 {
        return None;
    }
    let t_scaled = u * r2.dot(a) + v * r2.dot(b) + w * r2.dot(c);
    let sign = if det < 0.0 { -1.0 } else { 1.0 };
    let ts = t_scaled * sign;
    let ds = det * sign;
    if ts <= 0.0 || ts >= t_max * ds {
        return None;
    }
    Some(ts / ds)
}

/// [`intersect`] with its products and sums rounded as `r.fusion` says, expression for
/// expression as `intersect` in `shaders/common.wgsl` is written.
#[must_use]
#[inline(never)]
fn intersect_fused(r: &RayPrep, tri: &GpuTriangle, t_max: f32) -> Option<f32> {
    let f = r.fusion;
    let a = Vec3A::from(tri.v0) - r.org;
    let b = Vec3A::from(tri.v1) - r.org;
    let c = Vec3A::from(tri.v2) - r.org;
    let [r0, r1, r2] = r.rows;
    let (ax, ay) = (f.dot(r0, a), f.dot(r1, a));
    let (bx, by) = (f.dot(r0, b), f.dot(r1, b));
    let (cx, cy) = (f.dot(r0, c), f.dot(r1, c));
    let u = snap_edge(f.sum2(cx, by, -cy, bx), cx * by, cy * bx);
    let v = snap_edge(f.sum2(ax, cy, -ay, cx), ax * cy, ay * cx);
    let w = snap_edge(f.sum2(bx, ay, -by, ax), bx * ay, by * ax);
    if (u < 0.0 || v < 0.0 || w < 0.0) && (u > 0.0 || v > 0.0 || w > 0.0) {
        return None;
    }
    let det = u + v + w;
    if det == 0.0 {
        return None;
    }
    let (za, zb, zc) = (f.dot(r2, a), f.dot(r2, b), f.dot(r2, c));
    let t_scaled = w.mul_add(zc, f.sum2(u, za, v, zb));
    let sign = if det < 0.0 { -1.0 } else { 1.0 };
    let ts = t_scaled * sign;
    let ds = det * sign;
    if ts <= 0.0 || ts >= t_max * ds {
        return None;
    }
    Some(ts / ds)
}

/// Slab test of a wide node's four children: a bit mask of the children the ray meets before
/// `t_max`, and their entry distances. Taking the near plane by the ray's direction gives the
/// same distances as the binary node's min/max test, and never enters an unused slot.
#[must_use]
#[inline]
pub fn children_entry(r: &RayPrep, node: &WideNode, t_max: f32) -> (u32, Vec4) {
    let b = &node.bounds;
    let t = |axis: usize, row: usize| {
        let o = r.org.to_array()[axis];
        let inv = r.inv.to_array()[axis];
        (Vec4::from(b[row]) - Vec4::splat(o)) * Vec4::splat(inv)
    };
    // Written out: `[0, 1, 2].map(..)` stayed an out-of-line call, twice a node.
    let (nx, ny, nz) = (t(0, r.near[0]), t(1, r.near[1]), t(2, r.near[2]));
    let (fx, fy, fz) = (
        t(0, r.near[0] ^ 1),
        t(1, r.near[1] ^ 1),
        t(2, r.near[2] ^ 1),
    );
    let near = nx.max(ny).max(nz.max(Vec4::ZERO));
    let far = fx.min(fy).min(fz.min(Vec4::splat(t_max))) * BOX_PAD;
    (near.cmple(far).bitmask(), near)
}

/// Asks for the memory of the stack's top entry (a node or a leaf's triangles) ahead of its
/// pop: the streams step other rays meanwhile, so the load overlaps their work.
#[inline(always)]
fn prefetch_top(stack: &[(u32, u32, f32)], sp: usize, nodes: &[WideNode], tris: &[GpuTriangle]) {
    if sp > 0 {
        let (child, count, _) = stack[sp - 1];
        prefetch(nodes, tris, child, count);
    }
}

/// Asks for the memory of a stack entry: a node, or the first lines of a leaf's triangles.
#[inline(always)]
pub(crate) fn prefetch(nodes: &[WideNode], tris: &[GpuTriangle], child: u32, count: u32) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let (p, lines) = if count > 0 {
            (
                tris.as_ptr().wrapping_add(child as usize) as *const i8,
                count.min(4) as usize,
            )
        } else {
            (nodes.as_ptr().wrapping_add(child as usize) as *const i8, 2)
        };
        for l in 0..lines {
            // SAFETY: prefetching never faults, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64 * l)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (nodes, tris, child, count);
}

/// Pushes the children in `mask` onto `stack` at `sp`, nearest last so it is popped first.
#[inline(always)]
fn push_sorted(
    stack: &mut [(u32, u32, f32)],
    sp: &mut usize,
    node: &WideNode,
    mask: u32,
    near: Vec4,
) {
    let base = *sp;
    let near = near.to_array();
    let mut left = mask;
    while left != 0 {
        let i = left.trailing_zeros() as usize;
        left &= left - 1;
        let e = (node.child[i], node.count[i], near[i]);
        // Insertion: entries below `base` are untouched; farther entries sink.
        let mut k = *sp;
        while k > base && stack[k - 1].2 < e.2 {
            stack[k] = stack[k - 1];
            k -= 1;
        }
        stack[k] = e;
        *sp += 1;
    }
}

/// Walks the tree; `leaf` is called for each leaf met (nearer children first) with the current
/// limit and returns the new limit, or `None` to stop the walk.
#[inline(always)]
fn walk(
    tier: &Tier,
    r: &RayPrep,
    t_max: f32,
    stack: &mut WalkStack,
    mut leaf: impl FnMut(&[GpuTriangle], f32) -> Option<f32>,
) {
    let nodes = &tier.wide;
    if nodes.is_empty() {
        return;
    }
    let mut limit = t_max;
    stack[0] = (0, 0, 0.0);
    let mut sp = 1;
    while sp > 0 {
        sp -= 1;
        let (child, count, near) = stack[sp];
        // Padded like the slab test's far side: a box entered at the limit by rounding can
        // still hold a hit at exactly the limit, which may be a tie with a lower id.
        if near > limit * BOX_PAD {
            continue;
        }
        if count > 0 {
            match leaf(&tier.triangles[child as usize..][..count as usize], limit) {
                Some(l) => limit = l,
                None => return,
            }
            continue;
        }
        let n = &nodes[child as usize];
        let (mask, d) = children_entry(r, n, limit);
        push_sorted(stack, &mut sp, n, mask, d);
    }
}

/// Any blocking triangle with `0 < t < t_max`, for many rays, [`LANES`] at a time: `walk` per ray, but the lanes are
/// stepped in turn, one stack entry each, so the out-of-order core overlaps their memory and
/// arithmetic latency (one incoherent ray is a chain of dependent loads). A lane that finishes
/// takes the next ray. Rays whose bit is already set in `words` are skipped; hits set theirs.
pub fn any_hit_stream(
    tier: &Tier,
    rays: &[RayPrep],
    t_max: f32,
    mask: u32,
    stacks: &mut Stacks,
    words: &mut [u32],
) {
    if tier.wide.is_empty() {
        return;
    }
    let (nodes, triangles) = (&tier.wide, &tier.triangles);
    let mut lane_ray = [usize::MAX; LANES];
    let mut sps = [0usize; LANES];
    let mut next = 0;
    let mut busy = 0;
    loop {
        for j in 0..LANES {
            if sps[j] == 0 {
                // Idle lane: take the next ray not yet known to be blocked.
                if lane_ray[j] != usize::MAX {
                    lane_ray[j] = usize::MAX;
                    busy -= 1;
                }
                while next < rays.len() && words[next / 32] >> (next % 32) & 1 == 1 {
                    next += 1;
                }
                if next == rays.len() {
                    continue;
                }
                lane_ray[j] = next;
                stacks[j][0] = (0, 0, 0.0);
                sps[j] = 1;
                busy += 1;
                next += 1;
            }
            let (i, stack, sp) = (lane_ray[j], &mut stacks[j], &mut sps[j]);
            let r = &rays[i];
            *sp -= 1;
            let (child, count, near) = stack[*sp];
            if near > t_max {
                continue;
            }
            if count > 0 {
                let tris = &triangles[child as usize..][..count as usize];
                if tris
                    .iter()
                    .any(|t| t.flags & mask != 0 && intersect(r, t, t_max).is_some())
                {
                    words[i / 32] |= 1 << (i % 32);
                    *sp = 0;
                }
                continue;
            }
            let n = &nodes[child as usize];
            let (m, d) = children_entry(r, n, t_max);
            for (i, d) in d.to_array().into_iter().enumerate() {
                stack[*sp] = (n.child[i], n.count[i], d);
                *sp += (m >> i & 1) as usize;
            }
            prefetch_top(&stack[..], *sp, nodes, triangles);
        }
        if busy == 0 && next == rays.len() {
            return;
        }
    }
}

/// Rays [`any_hit_stream`] steps together.
pub const LANES: usize = 8;

/// Traversal stacks of [`any_hit_stream`], reused across calls: `(child, count, entry)`.
pub type Stacks = [[(u32, u32, f32); STACK_SIZE]; LANES];

/// Improves `best` with the closest blocking triangle with `0 < t < t_max`; equal distances go to
/// the lower triangle id, so results do not depend on traversal or chunk order.
pub fn closest(tier: &Tier, r: &RayPrep, t_max: f32, mask: u32, best: &mut HitRecord) {
    closest_in(tier, r, t_max, mask, best, &mut [(0, 0, 0.0); STACK_SIZE]);
}

/// The traversal stack of one ray: (child, count, entry distance); count > 0 marks a leaf.
pub type WalkStack = [(u32, u32, f32); STACK_SIZE];

/// [`closest`] on the caller's stack: a loop over many rays clears it once, not once a ray.
pub fn closest_in(
    tier: &Tier,
    r: &RayPrep,
    t_max: f32,
    mask: u32,
    best: &mut HitRecord,
    stack: &mut WalkStack,
) {
    walk(tier, r, best.t.min(t_max), stack, |tris, _| {
        for tri in tris {
            if tri.flags & mask == 0 {
                continue;
            }
            if let Some(t) = intersect(r, tri, t_max) {
                if t < best.t || (t == best.t && tri.id < best.triangle) {
                    *best = hit_record(r, tri, t);
                }
            }
        }
        Some(best.t.min(t_max))
    });
}

pub(crate) fn hit_record(r: &RayPrep, tri: &GpuTriangle, t: f32) -> HitRecord {
    let [a, b, c] = tri.vertices();
    let mut n = (b - a).cross(c - a).normalize_or_zero();
    let back = n.dot(r.dir.into()) > 0.0;
    if back {
        n = -n;
    }
    HitRecord {
        normal: n.into(),
        t,
        triangle: tri.id,
        material: tri.material,
        back: u32::from(back),
        _pad: 0,
    }
}

/// Kernel `occluded`: one bit per segment, set if any blocking triangle lies strictly between
/// the ends, over all tiers.
#[must_use]
pub fn occluded(tiers: &[&Tier], segments: &[Segment], mask: u32) -> Occlusion {
    occluded_with(tiers, segments, mask, Fusion::None)
}

/// [`occluded`] with triangle tests rounded as `fusion` says.
#[must_use]
pub fn occluded_with(
    tiers: &[&Tier],
    segments: &[Segment],
    mask: u32,
    fusion: Fusion,
) -> Occlusion {
    occluded_in(tiers, segments, mask, fusion, false).0
}

/// [`occluded_with`] of segments that [`crate::trace::validate_segments`] has not seen: each
/// task checks its own segments as it reads them (one pass over the batch's memory, not two),
/// and a batch that fails the plain check gets `validate_segments`' verdict (its error, or its
/// bits traced anew where it holds only valid staged segments).
pub fn occluded_checked(
    tiers: &[&Tier],
    segments: &[Segment],
    mask: u32,
    fusion: Fusion,
) -> crate::Result<Occlusion> {
    let (out, plain) = occluded_in(tiers, segments, mask, fusion, true);
    if plain {
        return Ok(out);
    }
    crate::trace::validate_segments(segments)?;
    Ok(occluded_with(tiers, segments, mask, fusion))
}

/// Segments per task of [`occluded_in`], in words of 32.
const WORDS: usize = 8;

/// [`occluded_with`], and with `check`, whether every segment passed the plain check (a task
/// whose segments do not traces nothing).
fn occluded_in(
    tiers: &[&Tier],
    segments: &[Segment],
    mask: u32,
    fusion: Fusion,
    check: bool,
) -> (Occlusion, bool) {
    let mut out = Occlusion::new(segments.len());
    let plain = std::sync::atomic::AtomicBool::new(true);
    let init = || OccludedState {
        stacks: Box::new([[(0, 0, 0.0); STACK_SIZE]; LANES]),
        packet: Box::new([(0, 0, 0); STACK_SIZE]),
        preps: Vec::with_capacity(32 * WORDS),
        rest: Vec::with_capacity(32 * WORDS),
    };
    let task = |state: &mut OccludedState, (words, chunk): (&mut [u32], &[Segment])| {
        if check && !super::all_plain(chunk) {
            plain.store(false, std::sync::atomic::Ordering::Relaxed);
            return;
        }
        trace_chunk(state, tiers, mask, fusion, words, chunk);
    };
    // Each thread keeps its scratch (stacks of 20 KB) between tasks and calls (searches make
    // many small ones) instead of zeroing a fresh one each time.
    let run = |pair| {
        let mut state = SCRATCH.take().unwrap_or_else(init);
        task(&mut state, pair);
        SCRATCH.set(Some(state));
    };
    if segments.len() <= SERIAL_BELOW {
        out.words
            .chunks_mut(WORDS)
            .zip(segments.chunks(32 * WORDS))
            .for_each(run);
    } else {
        out.words
            .par_chunks_mut(WORDS)
            .zip(segments.par_chunks(32 * WORDS))
            .for_each(run);
    }
    (out, plain.into_inner())
}

/// One task of [`occluded_in`]: runs sharing a start go in packets (the plain rounding only:
/// the fused twins are references, traced one ray at a time); the stream takes the segments
/// they left.
fn trace_chunk(
    state: &mut OccludedState,
    tiers: &[&Tier],
    mask: u32,
    fusion: Fusion,
    words: &mut [u32],
    chunk: &[Segment],
) {
    let mut traced = [0u32; WORDS];
    let packed = fusion == Fusion::None
        && packet::trace_fans(
            &packet::Fans {
                tiers,
                segments: chunk,
                mask,
            },
            &mut packet::FansOut {
                stack: &mut state.packet,
                words,
                traced: &mut traced,
            },
        );
    let preps = &mut state.preps;
    preps.clear();
    if !packed {
        preps.extend(
            chunk
                .iter()
                .map(|s| RayPrep::fused(s.start(), s.end() - s.start(), fusion)),
        );
        for t in tiers {
            any_hit_stream(t, preps, 1.0, mask, &mut state.stacks, words);
        }
        return;
    }
    let rest = &mut state.rest;
    rest.clear();
    for (w, &t) in traced.iter().enumerate() {
        let mut left = !t;
        while left != 0 {
            let i = 32 * w + left.trailing_zeros() as usize;
            left &= left - 1;
            let Some(s) = chunk.get(i) else { break };
            rest.push(i);
            preps.push(RayPrep::new(s.start(), s.end() - s.start()));
        }
    }
    if rest.is_empty() {
        return;
    }
    let mut bits = [0u32; WORDS];
    for t in tiers {
        any_hit_stream(t, preps, 1.0, mask, &mut state.stacks, &mut bits);
    }
    for (k, &i) in rest.iter().enumerate() {
        words[i / 32] |= (bits[k / 32] >> (k % 32) & 1) << (i % 32);
    }
}

thread_local! {
    /// The scratch of this thread's last [`occluded_with`] task, kept for the next.
    static SCRATCH: std::cell::Cell<Option<OccludedState>> = const { std::cell::Cell::new(None) };
}

/// Per-task scratch of [`occluded_with`].
struct OccludedState {
    stacks: Box<Stacks>,
    packet: Box<packet::PacketStack>,
    preps: Vec<RayPrep>,
    /// The indices of the segments no packet traced.
    rest: Vec<usize>,
}

/// Batches smaller than this are traced on the calling thread: waking the thread pool costs
/// more than it saves (searches that trace a wave at a time make many such calls).
const SERIAL_BELOW: usize = 1024;

/// [`closest`] for many rays, [`LANES`] at a time, stepped in turn like [`any_hit_stream`]:
/// improves `best[i]` with the closest blocking triangle of `tier` with `0 < t < t_max[i]`.
pub fn closest_stream(
    tier: &Tier,
    rays: &[RayPrep],
    t_max: &[f32],
    mask: u32,
    stacks: &mut Stacks,
    best: &mut [HitRecord],
) {
    if tier.wide.is_empty() {
        return;
    }
    let (nodes, triangles) = (&tier.wide, &tier.triangles);
    let mut lane_ray = [usize::MAX; LANES];
    let mut sps = [0usize; LANES];
    let mut next = 0;
    let mut busy = 0;
    loop {
        for j in 0..LANES {
            if sps[j] == 0 {
                if lane_ray[j] != usize::MAX {
                    lane_ray[j] = usize::MAX;
                    busy -= 1;
                }
                if next == rays.len() {
                    continue;
                }
                lane_ray[j] = next;
                stacks[j][0] = (0, 0, 0.0);
                sps[j] = 1;
                busy += 1;
                next += 1;
            }
            let (i, stack, sp) = (lane_ray[j], &mut stacks[j], &mut sps[j]);
            let (r, hit) = (&rays[i], &mut best[i]);
            let limit = hit.t.min(t_max[i]);
            *sp -= 1;
            let (child, count, near) = stack[*sp];
            if near > limit * BOX_PAD {
                continue;
            }
            if count > 0 {
                for tri in &triangles[child as usize..][..count as usize] {
                    if tri.flags & mask == 0 {
                        continue;
                    }
                    if let Some(t) = intersect(r, tri, t_max[i]) {
                        if t < hit.t || (t == hit.t && tri.id < hit.triangle) {
                            *hit = hit_record(r, tri, t);
                        }
                    }
                }
                continue;
            }
            let n = &nodes[child as usize];
            let (m, d) = children_entry(r, n, limit);
            push_sorted(stack, sp, n, m, d);
            prefetch_top(&stack[..], *sp, nodes, triangles);
        }
        if busy == 0 && next == rays.len() {
            return;
        }
    }
}

/// Kernel `closest_hit`: the nearest blocking triangle per ray over all tiers.
#[must_use]
pub fn closest_hit(tiers: &[&Tier], rays: &[Ray], mask: u32) -> Vec<HitRecord> {
    closest_hit_with(tiers, rays, mask, Fusion::None)
}

/// [`closest_hit`] with triangle tests rounded as `fusion` says.
#[must_use]
pub fn closest_hit_with(
    tiers: &[&Tier],
    rays: &[Ray],
    mask: u32,
    fusion: Fusion,
) -> Vec<HitRecord> {
    const CHUNK: usize = 256;
    let mut out = vec![HitRecord::MISS; rays.len()];
    let init = || {
        (
            Box::new([[(0, 0, 0.0); STACK_SIZE]; LANES]),
            Vec::with_capacity(CHUNK),
            Vec::with_capacity(CHUNK),
        )
    };
    let task = |(stacks, preps, t_max): &mut ClosestState,
                (best, chunk): (&mut [HitRecord], &[Ray])| {
        preps.clear();
        preps.extend(
            chunk
                .iter()
                .map(|r| RayPrep::fused(r.origin(), r.dir(), fusion)),
        );
        t_max.clear();
        t_max.extend(chunk.iter().map(|r| r.t_max));
        for t in tiers {
            closest_stream(t, preps, t_max, mask, stacks, best);
        }
    };
    // Each thread keeps its scratch between tasks and calls, as `occluded_in` does.
    let run = |pair| {
        let mut state = CLOSEST_SCRATCH.take().unwrap_or_else(init);
        task(&mut state, pair);
        CLOSEST_SCRATCH.set(Some(state));
    };
    if rays.len() <= SERIAL_BELOW {
        out.chunks_mut(CHUNK).zip(rays.chunks(CHUNK)).for_each(run);
    } else {
        out.par_chunks_mut(CHUNK)
            .zip(rays.par_chunks(CHUNK))
            .for_each(run);
    }
    out
}

/// Per-thread scratch of [`closest_hit_with`]: stacks, ray preparations and limits.
type ClosestState = (Box<Stacks>, Vec<RayPrep>, Vec<f32>);

thread_local! {
    /// The scratch of this thread's last [`closest_hit_with`] task, kept for the next.
    static CLOSEST_SCRATCH: std::cell::Cell<Option<ClosestState>> =
        const { std::cell::Cell::new(None) };
}

/// Brute force over every triangle: the reference the BVH walks are tested against.
#[must_use]
pub fn brute_force_closest(tris: &[GpuTriangle], ray: &Ray, mask: u32) -> HitRecord {
    let r = RayPrep::new(ray.origin(), ray.dir());
    let mut best = HitRecord::MISS;
    for tri in tris.iter().filter(|t| t.flags & mask != 0) {
        if let Some(t) = intersect(&r, tri, ray.t_max) {
            if t < best.t || (t == best.t && tri.id < best.triangle) {
                best = hit_record(&r, tri, t);
            }
        }
    }
    best
}

/// `true` if `rec` reports no hit.
#[must_use]
pub fn is_miss(rec: &HitRecord) -> bool {
    rec.triangle == NO_HIT
}
