//! Shared-origin packets for the CPU twin of `occluded`: runs of segments that start at one eye
//! (a sensor grid's, a viewshed's, a line-of-sight table's rows) are traced [`WIDTH`] at a time
//! down the four-wide tree, each node and triangle loaded once for the packet and tested for
//! all its rays in SIMD lanes (Wald, Slusallek, Benthin, Wagner, "Interactive Rendering with
//! Coherent Ray Tracing", 2001). A run's packets are built straight from its segments, sixteen
//! lanes at a time, with no per-ray [`RayPrep`], and traced octant by octant (the lanes going
//! the same way along every axis). A node's children are first culled for all of an octant's
//! lanes at once by interval bounds on their reciprocal directions (a `Frustum`); each lane
//! then gets its own slab test of each child left, so a lane tests exactly the leaves the
//! single-ray walk tests, with the same slab test and the same watertight triangle test,
//! operation for operation: every bit equals the single-ray walk's. The walk goes down to the
//! nearest child entered and stacks the others. The shared origin is subtracted from a box
//! plane or a vertex once per packet instead of once per ray. The lanes are AVX-512 or AVX2
//! registers where the processor has them, else plain code (`trace::lanes`). Packets of rays
//! with their own origins (`trace_each`) take the lanes' slab tests alone.

use super::cpu::{prefetch, RayPrep, BOX_PAD, EDGE_SNAP, STACK_SIZE};
#[cfg(target_arch = "x86_64")]
use super::lanes::{Avx2, Avx512};
use super::lanes::{Lanes, Plain};
use super::Segment;
use crate::bvh::{GpuTriangle, WideNode};
use crate::scene::Tier;
use glam::Vec4;

pub use super::lanes::WIDTH;

/// Runs shorter than this go to the single-ray walk: a packet of a few lanes costs about what
/// a full one does.
pub const MIN_RUN: usize = 6;

type Arr = [f32; WIDTH];

/// Stack entries of a packet walk: `(child, count, lanes that entered it)`.
pub type PacketStack = [(u32, u32, u32); STACK_SIZE];

/// Up to [`WIDTH`] rays, one lane each. A packet's walk is `SHARED` when every ray starts at
/// `org` (a box plane or a vertex is then taken from the origin once per packet), else each
/// lane takes its own origin from `orgs`: the same operations either way, so the same bits.
struct Packet<V: Lanes> {
    org: [f32; 3],
    orgs: [V; 3],
    inv: [V; 3],
    /// Per axis, the lanes whose reciprocal is negative: they enter a box by its upper plane.
    neg: [V::M; 3],
    /// Per axis, the row of [`WideNode::bounds`] every lane enters by, where they all do
    /// (set by [`Packet::frustum`] for its lanes).
    near_rows: [usize; 3],
    /// Per axis, the lanes whose ray runs mostly along it (the watertight test's `kz`), and the
    /// lanes going down that axis (both empty where not known: packets of [`Packet::new`]).
    kz: [u32; 3],
    kz_neg: u32,
    /// `rows[k][axis]`: the lanes' shear rows of the watertight test ([`RayPrep`]'s `rows`).
    rows: [[V; 3]; 3],
    /// Each lane's limit: a hit counts where `0 < t < t_max`.
    t_max: V,
    /// Lanes holding a ray.
    valid: u32,
}

/// Bounds of a shared-origin packet's reciprocal directions, per axis (interval arithmetic
/// over the packet; Wald, Boulos, Shirley, "Ray Tracing Deformable Scenes Using Dynamic
/// Bounding Volume Hierarchies", 2007; Embree's frustum): the distances a box's planes give
/// over the whole packet at the cost of one ray. Every bound is the product of the same two
/// floats some lane forms, and rounding is monotone, so a box that some lane's slab test
/// enters passes this test too: the walk can cull a node's children for every lane at once
/// and still give each lane its own answer.
#[derive(Clone, Copy)]
struct Frustum {
    /// Per axis, the row of [`WideNode::bounds`] every lane enters by: a frustum's lanes lie
    /// in one octant ([`Packet::octant`]).
    near: [usize; 3],
    org: [Vec4; 3],
    /// Per axis, the lanes' least and greatest reciprocal.
    rmin: [Vec4; 3],
    rmax: [Vec4; 3],
    t_max: f32,
    /// `(kx, ky, kz)` of the watertight test where every lane has the same.
    perm: Option<[usize; 3]>,
}

impl Frustum {
    /// The children of `n` (bit `i` for child `i`) that some lane's slab test may enter, and
    /// the least distance at which any lane may enter each.
    #[inline(always)]
    fn children(&self, n: &WideNode) -> (u32, Vec4) {
        let mut near = Vec4::ZERO;
        let mut far = Vec4::splat(self.t_max);
        for (a, &row) in self.near.iter().enumerate() {
            let dn = Vec4::from(n.bounds[row]) - self.org[a];
            let df = Vec4::from(n.bounds[row ^ 1]) - self.org[a];
            // The least entry and the greatest exit over the lanes' reciprocals.
            let (lo, hi) = (self.rmin[a], self.rmax[a]);
            near = near.max((dn * lo).min(dn * hi));
            far = far.min((df * lo).max(df * hi));
        }
        let far = far * BOX_PAD;
        let open = near.cmple(far) & near.cmple(Vec4::splat(self.t_max));
        (open.bitmask(), near)
    }
}

impl<V: Lanes> Packet<V> {
    /// The [`Frustum`] of the lanes in `lanes`, which lie in one octant; also sets the rows
    /// the shared-origin slab tests read ([`Packet::near_rows`]) for them.
    #[inline(always)]
    fn frustum(&mut self, lanes: u32) -> Frustum {
        let m = V::mask(lanes);
        let mut f = Frustum {
            near: [0, 2, 4],
            org: self.org.map(Vec4::splat),
            rmin: [Vec4::ZERO; 3],
            rmax: [Vec4::ZERO; 3],
            t_max: self.t_max.reduce_max(),
            perm: None,
        };
        if let Some(kz) = (0..3).find(|&a| lanes & !self.kz[a] == 0) {
            let neg = self.kz_neg & lanes;
            if neg == 0 || neg == lanes {
                // `RayPrep::new`'s (kx, ky) for kz and its sign.
                const AXES: [[(usize, usize); 2]; 3] =
                    [[(1, 2), (2, 1)], [(2, 0), (0, 2)], [(0, 1), (1, 0)]];
                let (kx, ky) = AXES[kz][usize::from(neg != 0)];
                f.perm = Some([kx, ky, kz]);
            }
        }
        for a in 0..3 {
            let row = 2 * a + usize::from(V::bits(self.neg[a]) & lanes != 0);
            f.near[a] = row;
            self.near_rows[a] = row;
            let inv = self.inv[a];
            f.rmin[a] = Vec4::splat(V::select(m, inv, V::splat(f32::INFINITY)).reduce_min());
            f.rmax[a] = Vec4::splat(V::select(m, inv, V::splat(f32::NEG_INFINITY)).reduce_max());
        }
        f
    }

    /// The lanes of `lanes` that go the same way as lane `l` along every axis (its octant).
    #[inline(always)]
    fn octant(&self, lanes: u32, l: u32) -> u32 {
        let mut same = lanes;
        for a in 0..3 {
            let neg = V::bits(self.neg[a]);
            same &= if neg >> l & 1 == 1 { neg } else { !neg };
        }
        same
    }

    /// `rays` (1 to [`WIDTH`]) with their limits `t_max(lane)` in lanes `0..rays.len()`; the
    /// other lanes repeat the first ray and are not valid.
    #[inline(always)]
    fn new(rays: &[RayPrep], t_max: impl Fn(usize) -> f32) -> Self {
        debug_assert!(!rays.is_empty() && rays.len() <= WIDTH);
        let (mut orgs, mut inv) = ([[0.0; WIDTH]; 3], [[0.0; WIDTH]; 3]);
        let mut rows = [[[0.0; WIDTH]; 3]; 3];
        let mut limit = [0.0; WIDTH];
        for l in 0..WIDTH {
            let k = if l < rays.len() { l } else { 0 };
            let r = &rays[k];
            limit[l] = t_max(k);
            for axis in 0..3 {
                orgs[axis][l] = r.org[axis];
                inv[axis][l] = r.inv[axis];
                for (row, prep) in rows.iter_mut().zip(&r.rows) {
                    row[axis][l] = prep[axis];
                }
            }
        }
        let inv = load3(&inv);
        let zero = V::splat(0.0);
        Packet {
            org: rays[0].org.to_array(),
            orgs: load3(&orgs),
            inv,
            neg: [inv[0].lt(zero), inv[1].lt(zero), inv[2].lt(zero)],
            near_rows: [0, 2, 4],
            kz: [0; 3],
            kz_neg: 0,
            rows: [load3(&rows[0]), load3(&rows[1]), load3(&rows[2])],
            t_max: V::load(&limit),
            valid: (1 << rays.len()) - 1,
        }
    }

    /// The rays of `segs` (1 to [`WIDTH`]), all starting at `org`, each to its end with limit
    /// 1: the lanes [`RayPrep::new`] gives each segment (the same choice of axes, the same
    /// IEEE divisions), so the walk gives the same bits. The other lanes repeat the first
    /// segment and are not valid.
    #[inline(always)]
    fn from_fan(org: [f32; 3], segs: &[Segment]) -> Self {
        debug_assert!(!segs.is_empty() && segs.len() <= WIDTH);
        let mut ends = [[0.0; WIDTH]; 3];
        for l in 0..WIDTH {
            let e = segs[if l < segs.len() { l } else { 0 }].end;
            for axis in 0..3 {
                ends[axis][l] = e[axis];
            }
        }
        let [x, y, z] = load3::<V>(&ends);
        let (x, y, z) = (
            x.sub(V::splat(org[0])),
            y.sub(V::splat(org[1])),
            z.sub(V::splat(org[2])),
        );
        let (zero, one) = (V::splat(0.0), V::splat(1.0));
        // `RayPrep::new`'s axes: kz the largest component (the first of equals), then (kx, ky)
        // by kz and its sign: (0, +) -> (1, 2), (0, -) -> (2, 1), (1, +) -> (2, 0),
        // (1, -) -> (0, 2), (2, +) -> (0, 1), (2, -) -> (1, 0).
        let (ax, ay, az) = (x.abs(), y.abs(), z.abs());
        let k0 = V::and(ax.ge(ay), ax.ge(az));
        let k1 = V::and_not(ay.ge(az), k0);
        let k2 = V::not(V::or(k0, k1));
        let dz = pick(k0, k1, [x, y, z]);
        let neg = dz.lt(zero);
        let at_kx = V::select(neg, pick(k0, k1, [z, x, y]), pick(k0, k1, [y, z, x]));
        let at_ky = V::select(neg, pick(k0, k1, [y, z, x]), pick(k0, k1, [z, x, y]));
        let minus = V::splat(-1.0);
        let (sx, sy, sz) = (at_kx.div(dz), at_ky.div(dz), one.div(dz));
        let is_kx = [
            V::or(V::and(k1, neg), V::and_not(k2, neg)),
            V::or(V::and_not(k0, neg), V::and(k2, neg)),
            V::or(V::and(k0, neg), V::and_not(k1, neg)),
        ];
        let is_ky = [
            V::or(V::and_not(k1, neg), V::and(k2, neg)),
            V::or(V::and(k0, neg), V::and_not(k2, neg)),
            V::or(V::and_not(k0, neg), V::and(k1, neg)),
        ];
        let is_kz = [k0, k1, k2];
        let inv = [safe_inv(x), safe_inv(y), safe_inv(z)];
        Packet {
            org,
            orgs: [V::splat(org[0]), V::splat(org[1]), V::splat(org[2])],
            inv,
            neg: [inv[0].lt(zero), inv[1].lt(zero), inv[2].lt(zero)],
            near_rows: [0, 2, 4],
            kz: [V::bits(k0), V::bits(k1), V::bits(k2)],
            kz_neg: V::bits(neg),
            rows: [
                shear_row(is_kx, is_kz, sx.mul(minus)),
                shear_row(is_ky, is_kz, sy.mul(minus)),
                [
                    V::select(k0, sz, zero),
                    V::select(k1, sz, zero),
                    V::select(k2, sz, zero),
                ],
            ],
            t_max: one,
            valid: (1 << segs.len()) - 1,
        }
    }

    /// One axis of a slab test of child `i` of `n`: the lanes' distances to the planes they
    /// enter and leave by.
    #[inline(always)]
    fn slab<const SHARED: bool>(&self, n: &WideNode, i: usize, a: usize) -> (V, V) {
        let inv = self.inv[a];
        if SHARED {
            // A frustum's lanes all enter by the same plane ([`Packet::frustum`] set it).
            let row = self.near_rows[a];
            let (near, far) = (n.bounds[row][i], n.bounds[row ^ 1][i]);
            return (
                V::splat(near - self.org[a]).mul(inv),
                V::splat(far - self.org[a]).mul(inv),
            );
        }
        let (lo, hi) = (n.bounds[2 * a][i], n.bounds[2 * a + 1][i]);
        let (lo, hi) = (
            V::splat(lo).sub(self.orgs[a]),
            V::splat(hi).sub(self.orgs[a]),
        );
        let neg = self.neg[a];
        (
            V::select(neg, hi, lo).mul(inv),
            V::select(neg, lo, hi).mul(inv),
        )
    }

    /// A vertex relative to the lanes' origins.
    #[inline(always)]
    fn relative<const SHARED: bool>(&self, v: [f32; 3]) -> [V; 3] {
        if SHARED {
            [
                V::splat(v[0] - self.org[0]),
                V::splat(v[1] - self.org[1]),
                V::splat(v[2] - self.org[2]),
            ]
        } else {
            [
                V::splat(v[0]).sub(self.orgs[0]),
                V::splat(v[1]).sub(self.orgs[1]),
                V::splat(v[2]).sub(self.orgs[2]),
            ]
        }
    }

    /// Lanes whose slab test enters child `i` of `n` before their `t_max` and whose entry is
    /// not past it: `children_entry` and the any-hit walk's pop test, lane by lane.
    #[inline(always)]
    fn enters<const SHARED: bool>(&self, n: &WideNode, i: usize) -> u32 {
        let ((nx, fx), (ny, fy), (nz, fz)) = (
            self.slab::<SHARED>(n, i, 0),
            self.slab::<SHARED>(n, i, 1),
            self.slab::<SHARED>(n, i, 2),
        );
        let near = nx.max(ny).max(nz.max(V::splat(0.0)));
        let far = fx.min(fy).min(fz.min(self.t_max)).mul(V::splat(BOX_PAD));
        V::bits(V::and_not(near.le(far), near.gt(self.t_max)))
    }

    /// Lanes whose ray meets `tri` with `0 < t < t_max`: [`super::cpu::intersect`] lane by lane.
    #[inline(always)]
    fn hits<const SHARED: bool>(&self, tri: &GpuTriangle, shear: Option<&Shear<V>>) -> u32 {
        let ((ax, ay, az), (bx, by, bz), (cx, cy, cz)) = match shear {
            Some(s) if SHARED => (
                s.apply(tri.v0, self.org),
                s.apply(tri.v1, self.org),
                s.apply(tri.v2, self.org),
            ),
            _ => {
                let a = self.relative::<SHARED>(tri.v0);
                let b = self.relative::<SHARED>(tri.v1);
                let c = self.relative::<SHARED>(tri.v2);
                let [r0, r1, r2] = &self.rows;
                (
                    (dot(r0, &a), dot(r1, &a), dot(r2, &a)),
                    (dot(r0, &b), dot(r1, &b), dot(r2, &b)),
                    (dot(r0, &c), dot(r1, &c), dot(r2, &c)),
                )
            }
        };
        let zero = V::splat(0.0);
        let u = edge(cx.mul(by), cy.mul(bx));
        let v = edge(ax.mul(cy), ay.mul(cx));
        let w = edge(bx.mul(ay), by.mul(ax));
        let below = V::or(V::or(u.lt(zero), v.lt(zero)), w.lt(zero));
        let above = V::or(V::or(u.gt(zero), v.gt(zero)), w.gt(zero));
        let det = u.add(v).add(w);
        let t_scaled = u.mul(az).add(v.mul(bz)).add(w.mul(cz));
        let sign = V::select(det.lt(zero), V::splat(-1.0), V::splat(1.0));
        let (ts, ds) = (t_scaled.mul(sign), det.mul(sign));
        let out = V::or(ts.le(zero), ts.ge(self.t_max.mul(ds)));
        let inside = V::and_not(det.ne(zero), V::and(below, above));
        V::bits(V::and_not(inside, out))
    }
}

impl<V: Lanes> Packet<V> {
    /// `active` without the lanes of `m` that a triangle of `tris` matching `mask` blocks
    /// (stopping once none of `m` is left).
    #[inline(always)]
    fn leaf<const SHARED: bool>(
        &self,
        tris: &[GpuTriangle],
        mask: u32,
        m: u32,
        mut active: u32,
        shear: Option<&Shear<V>>,
    ) -> u32 {
        for tri in tris {
            if tri.flags & mask != 0 {
                active &= !(self.hits::<SHARED>(tri, shear) & m);
                if active & m == 0 {
                    break;
                }
            }
        }
        active
    }
}

/// Three axes' lanes.
#[inline(always)]
fn load3<V: Lanes>(a: &[Arr; 3]) -> [V; 3] {
    [V::load(&a[0]), V::load(&a[1]), V::load(&a[2])]
}

/// `k0 ? v[0] : k1 ? v[1] : v[2]` per lane.
#[inline(always)]
fn pick<V: Lanes>(k0: V::M, k1: V::M, v: [V; 3]) -> V {
    V::select(k0, v[0], V::select(k1, v[1], v[2]))
}

/// A shear row of the watertight test: 1 on the axis `k` picks, `s` on the axis `kz` picks.
#[inline(always)]
fn shear_row<V: Lanes>(k: [V::M; 3], kz: [V::M; 3], s: V) -> [V; 3] {
    let (zero, one) = (V::splat(0.0), V::splat(1.0));
    [
        V::select(k[0], one, V::select(kz[0], s, zero)),
        V::select(k[1], one, V::select(kz[1], s, zero)),
        V::select(k[2], one, V::select(kz[2], s, zero)),
    ]
}

/// `1 / d`, with a tiny stand-in for near-zero components as in `RayPrep::new` (so the slab
/// test never computes `0 * inf`).
#[inline(always)]
fn safe_inv<V: Lanes>(d: V) -> V {
    let tiny = V::select(d.sign(), V::splat(-1e-30), V::splat(1e-30));
    V::splat(1.0).div(V::select(d.abs().lt(V::splat(1e-30)), tiny, d))
}

/// The watertight test's shear of a group of lanes that share its axes `(kx, ky, kz)`: each
/// row holds 1 at `kx` (or `ky`), a lane's shear at `kz` and 0 elsewhere, so its dot product
/// with a vertex is one product and one sum, the value [`dot`] gives (its other products are
/// zeros).
struct Shear<V: Lanes> {
    k: [usize; 3],
    /// The rows' entries at `kz`.
    s: [V; 3],
}

impl<V: Lanes> Shear<V> {
    /// The shear of `p`'s lanes when they share the axes `k`.
    #[inline(always)]
    fn new(p: &Packet<V>, k: [usize; 3]) -> Self {
        let kz = k[2];
        Shear {
            k,
            s: [p.rows[0][kz], p.rows[1][kz], p.rows[2][kz]],
        }
    }

    /// Vertex `v` relative to `org`, sheared onto the lanes' planes.
    #[inline(always)]
    fn apply(&self, v: [f32; 3], org: [f32; 3]) -> (V, V, V) {
        let [kx, ky, kz] = self.k;
        let d = [v[0] - org[0], v[1] - org[1], v[2] - org[2]];
        let z = V::splat(d[kz]);
        (
            V::splat(d[kx]).add(self.s[0].mul(z)),
            V::splat(d[ky]).add(self.s[1].mul(z)),
            self.s[2].mul(z),
        )
    }
}

/// `Vec3A::dot`'s order: `(x * x' + y * y') + z * z'`.
#[inline(always)]
fn dot<V: Lanes>(r: &[V; 3], v: &[V; 3]) -> V {
    r[0].mul(v[0]).add(r[1].mul(v[1])).add(r[2].mul(v[2]))
}

/// `snap_edge` of the single-ray test on `p - q`.
#[inline(always)]
fn edge<V: Lanes>(p: V, q: V) -> V {
    let d = p.sub(q);
    let snap = d.abs().le(V::splat(EDGE_SNAP).mul(p.abs().max(q.abs())));
    V::select(snap, V::splat(0.0), d)
}

/// Lanes of `p` (among `lanes`) that a triangle of `tier` matching `mask` blocks before their
/// `t_max`.
#[inline(always)]
fn any_hit<V: Lanes>(
    tier: &Tier,
    p: &Packet<V>,
    mask: u32,
    lanes: u32,
    stack: &mut PacketStack,
) -> u32 {
    let (nodes, triangles) = (&tier.wide, &tier.triangles);
    if nodes.is_empty() || lanes == 0 {
        return 0;
    }
    let mut active = lanes;
    stack[0] = (0, 0, lanes);
    let mut sp = 1;
    while sp > 0 {
        sp -= 1;
        let (child, count, entered) = stack[sp];
        let m = entered & active;
        if m == 0 {
            continue;
        }
        if count > 0 {
            let tris = &triangles[child as usize..][..count as usize];
            active = p.leaf::<false>(tris, mask, m, active, None);
            if active == 0 {
                break;
            }
            continue;
        }
        let n = &nodes[child as usize];
        for i in 0..4 {
            let e = p.enters::<false>(n, i) & m;
            if e != 0 {
                // Popped after its siblings: the load overlaps their tests.
                prefetch(nodes, triangles, n.child[i], n.count[i]);
            }
            stack[sp] = (n.child[i], n.count[i], e);
            sp += usize::from(e != 0);
        }
    }
    lanes & !active
}

/// [`any_hit`] of a shared-origin packet's lanes of one octant: a node's children are first
/// culled for all of them by their frustum `f`, then each lane's slab test takes the children
/// left, so a lane still tests the leaves its single-ray walk tests (and no others) and gets
/// the same bit. The walk goes down to the nearest child some lane enters and stacks the
/// others, nearer ones on top.
#[inline(always)]
fn any_hit_frustum<V: Lanes>(
    tier: &Tier,
    p: &Packet<V>,
    f: &Frustum,
    mask: u32,
    lanes: u32,
    stack: &mut PacketStack,
) -> u32 {
    let (nodes, triangles) = (&tier.wide, &tier.triangles);
    if nodes.is_empty() || lanes == 0 {
        return 0;
    }
    let shear = f.perm.map(|k| Shear::new(p, k));
    let mut active = lanes;
    stack[0] = (0, 0, lanes);
    let mut sp = 1;
    // The child slot of each stack entry of the node being opened (for its entry distance).
    let mut order = [0u8; STACK_SIZE];
    'pop: while sp > 0 {
        sp -= 1;
        let (mut child, mut count, entered) = stack[sp];
        let mut m = entered & active;
        if m == 0 {
            continue;
        }
        // Down the tree to the nearest child some lane enters; the others wait on the stack,
        // nearer ones on top.
        while count == 0 {
            let n = &nodes[child as usize];
            let (mut open, near) = f.children(n);
            let near = near.to_array();
            let base = sp;
            while open != 0 {
                let i = open.trailing_zeros() as usize;
                open &= open - 1;
                let e = p.enters::<true>(n, i) & m;
                if e == 0 {
                    continue;
                }
                // Insertion: entries below `base` are untouched; farther entries sink.
                let mut k = sp;
                while k > base && near[order[k - 1] as usize] < near[i] {
                    stack[k] = stack[k - 1];
                    order[k] = order[k - 1];
                    k -= 1;
                }
                stack[k] = (n.child[i], n.count[i], e);
                order[k] = i as u8;
                sp += 1;
            }
            if sp == base {
                continue 'pop;
            }
            sp -= 1;
            (child, count, m) = stack[sp];
            for &wait in &stack[base..sp] {
                // Popped after the nearest: the load overlaps its walk.
                prefetch(nodes, triangles, wait.0, wait.1);
            }
        }
        let tris = &triangles[child as usize..][..count as usize];
        active = p.leaf::<true>(tris, mask, m, active, shear.as_ref());
        if active == 0 {
            break;
        }
    }
    lanes & !active
}

/// What [`trace_fans`] traces: segments (one bit each) against tiers, blocked by triangles
/// matching `mask`.
pub(crate) struct Fans<'a> {
    pub tiers: &'a [&'a Tier],
    pub segments: &'a [Segment],
    pub mask: u32,
}

/// Where [`trace_fans`] writes: its stack, the blocked segments' bits and the traced
/// segments' bits.
pub(crate) struct FansOut<'a> {
    pub stack: &'a mut PacketStack,
    pub words: &'a mut [u32],
    pub traced: &'a mut [u32],
}

/// Traces every run of at least [`MIN_RUN`] consecutive segments that share a start (bit for
/// bit) in packets: sets the bits of blocked segments in `out.words` and of every segment it
/// traced in `out.traced`. Returns whether it traced any. Compiled for AVX-512 and AVX2 as
/// well, which run where the processor has them (the answers are the same either way).
pub(crate) fn trace_fans(job: &Fans, out: &mut FansOut) -> bool {
    match simd() {
        // SAFETY: `simd` found the processor feature.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 => unsafe { trace_fans_avx512(job, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 => unsafe { trace_fans_avx2(job, out) },
        Simd::Plain => trace_fans_in::<Plain>(job, out),
    }
}

/// What [`trace_each`] traces: rays (one bit each) with their own origins and limits
/// (`t_max[i]` for `rays[i]`), against tiers, blocked by triangles matching `mask`.
pub(crate) struct Each<'a> {
    pub tiers: &'a [&'a Tier],
    pub rays: &'a [RayPrep],
    pub t_max: &'a [f32],
    pub mask: u32,
}

/// Traces `job.rays` in packets of [`WIDTH`] consecutive rays, each lane from its own origin
/// to its own limit, and sets the bits of the blocked ones in `words`: the single-ray any-hit
/// answers, bit for bit. For rays that lie side by side in their order without sharing an
/// origin, as a picture's pixel rays from their near-plane points. Compiled per processor
/// feature as [`trace_fans`] is.
pub(crate) fn trace_each(job: &Each, stack: &mut PacketStack, words: &mut [u32]) {
    debug_assert_eq!(job.rays.len(), job.t_max.len());
    match simd() {
        // SAFETY: `simd` found the processor feature.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 => unsafe { trace_each_avx512(job, stack, words) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 => unsafe { trace_each_avx2(job, stack, words) },
        Simd::Plain => trace_each_in::<Plain>(job, stack, words),
    }
}

/// The widest vector unit the processor has, of those the packet walks are compiled for.
enum Simd {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    Plain,
}

fn simd() -> Simd {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Simd::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return Simd::Avx2;
        }
    }
    Simd::Plain
}

/// `$inner::<$lanes>` compiled for a processor feature as `$name` (callers check the feature
/// first).
macro_rules! compiled_for {
    ($name:ident = $feature:literal: $inner:ident::<$lanes:ident>($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feature)]
        unsafe fn $name($($arg: $ty),*) -> $ret {
            $inner::<$lanes>($($arg),*)
        }
    };
}

compiled_for!(trace_fans_avx512 = "avx512f":
    trace_fans_in::<Avx512>(job: &Fans, out: &mut FansOut) -> bool);
compiled_for!(trace_fans_avx2 = "avx2":
    trace_fans_in::<Avx2>(job: &Fans, out: &mut FansOut) -> bool);
compiled_for!(trace_each_avx512 = "avx512f":
    trace_each_in::<Avx512>(job: &Each, stack: &mut PacketStack, words: &mut [u32]) -> ());
compiled_for!(trace_each_avx2 = "avx2":
    trace_each_in::<Avx2>(job: &Each, stack: &mut PacketStack, words: &mut [u32]) -> ());

#[inline(always)]
fn trace_each_in<V: Lanes>(job: &Each, stack: &mut PacketStack, words: &mut [u32]) {
    for base in (0..job.rays.len()).step_by(WIDTH) {
        let n = WIDTH.min(job.rays.len() - base);
        let p = Packet::<V>::new(&job.rays[base..base + n], |k| job.t_max[base + k]);
        let mut blocked = 0;
        for t in job.tiers {
            blocked |= any_hit(t, &p, job.mask, p.valid & !blocked, stack);
        }
        or_bits(words, base, n, blocked);
    }
}

/// Ors the lanes `0..n` of `lanes` into bits `base..base + n` of `words`.
#[inline(always)]
fn or_bits(words: &mut [u32], base: usize, n: usize, lanes: u32) {
    let lanes = u64::from(lanes & ((1u32 << n) - 1)) << (base % 32);
    words[base / 32] |= lanes as u32;
    if lanes >> 32 != 0 {
        words[base / 32 + 1] |= (lanes >> 32) as u32;
    }
}

#[inline(always)]
fn trace_fans_in<V: Lanes>(job: &Fans, out: &mut FansOut) -> bool {
    let &Fans {
        tiers,
        segments,
        mask,
    } = job;
    let FansOut {
        stack,
        words,
        traced,
    } = out;
    let mut any = false;
    let mut start = 0;
    while start < segments.len() {
        let org = segments[start].start;
        let key: [u32; 3] = bytemuck::cast(org);
        let end = start
            + segments[start..]
                .iter()
                .take_while(|s| {
                    let w: &[u32; 8] = bytemuck::cast_ref(*s);
                    (w[0] == key[0]) & (w[1] == key[1]) & (w[2] == key[2])
                })
                .count();
        if end - start >= MIN_RUN {
            any = true;
            for base in (start..end).step_by(WIDTH) {
                let n = WIDTH.min(end - base);
                let mut p = Packet::<V>::from_fan(org, &segments[base..base + n]);
                let mut blocked = 0;
                // Octant by octant (Embree's coherent packets), so every lane of a frustum
                // goes the same way along each axis.
                let mut left = p.valid;
                while left != 0 {
                    let group = p.octant(left, left.trailing_zeros());
                    left &= !group;
                    let f = p.frustum(group);
                    for t in tiers {
                        let lanes = group & !blocked;
                        blocked |= any_hit_frustum(t, &p, &f, mask, lanes, stack);
                    }
                }
                or_bits(traced, base, n, u32::MAX);
                or_bits(words, base, n, blocked);
            }
        }
        start = end;
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::procedural;
    use crate::trace::{cpu, Segment, SplitMix64};

    /// Rays with their own origins and limits, side by side as a picture's pixels: every
    /// blocked bit is what the single-ray walk finds below the ray's own limit.
    #[test]
    fn rays_with_their_own_origins_and_limits_get_single_ray_answers() {
        let scene = procedural::by_name("village", 3, 1).unwrap();
        let (lo, hi) = scene.bounds().unwrap();
        let tiers = scene.tiers();
        let mut rng = SplitMix64(9);
        let (mut rays, mut limits) = (Vec::new(), Vec::new());
        for _ in 0..40 {
            let eye = rng.in_box(lo, hi);
            let forward = rng.unit_vector();
            let side = forward.cross(glam::Vec3::Y).normalize_or(glam::Vec3::X);
            let up = side.cross(forward);
            let far = rng.range(2.0, 60.0);
            for k in 0..37 {
                let d = forward + side * (k % 7) as f32 * 0.01 + up * (k / 7) as f32 * 0.01;
                rays.push(RayPrep::new(eye + d * 0.05, d));
                limits.push(far * rng.range(0.5, 1.0));
            }
        }
        let mut words = vec![0u32; rays.len().div_ceil(32)];
        let mut stack = Box::new([(0, 0, 0); STACK_SIZE]);
        let job = Each {
            tiers: &tiers,
            rays: &rays,
            t_max: &limits,
            mask: 1,
        };
        trace_each(&job, &mut stack, &mut words);
        let mut blocked = 0;
        for (i, (r, &t)) in rays.iter().zip(&limits).enumerate() {
            let mut best = crate::trace::HitRecord::MISS;
            for tier in &tiers {
                cpu::closest(tier, r, t, 1, &mut best);
            }
            let single = best.triangle != crate::trace::NO_HIT;
            assert_eq!(words[i / 32] >> (i % 32) & 1 == 1, single, "ray {i}");
            blocked += usize::from(single);
        }
        assert!(
            blocked > 100 && blocked + 100 < rays.len(),
            "{blocked} of {}",
            rays.len()
        );
    }

    /// Runs of [`MIN_RUN`] or more go in packets (and only they), with the single-ray answers.
    #[test]
    fn runs_go_in_packets_with_single_ray_answers() {
        let scene = procedural::by_name("village", 2, 1).unwrap();
        let (lo, hi) = scene.bounds().unwrap();
        let mut rng = SplitMix64(4);
        let mut segs = Vec::new();
        let mut in_run = Vec::new();
        for run in [1, MIN_RUN - 1, MIN_RUN, WIDTH + 3, 2, 3 * WIDTH, 1, 40] {
            let eye = rng.in_box(lo, hi);
            for _ in 0..run {
                segs.push(Segment::new(
                    eye,
                    eye + rng.unit_vector() * rng.range(1.0, 40.0),
                ));
                in_run.push(run >= MIN_RUN);
            }
        }
        let tiers = scene.tiers();
        let words = segs.len().div_ceil(32);
        let (mut blocked, mut traced) = (vec![0u32; words], vec![0u32; words]);
        let mut stack = Box::new([(0, 0, 0); STACK_SIZE]);
        let job = Fans {
            tiers: &tiers,
            segments: &segs,
            mask: 1,
        };
        let mut out = FansOut {
            stack: &mut stack,
            words: &mut blocked,
            traced: &mut traced,
        };
        assert!(trace_fans(&job, &mut out));
        let bit = |w: &[u32], i: usize| w[i / 32] >> (i % 32) & 1 == 1;
        let mut hits = 0;
        for (i, s) in segs.iter().enumerate() {
            assert_eq!(bit(&traced, i), in_run[i], "segment {i}");
            let single = cpu::occluded(&tiers, &[*s], 1).get(0);
            assert_eq!(bit(&blocked, i), single && in_run[i], "segment {i}");
            hits += usize::from(single && in_run[i]);
        }
        assert!(hits > 0 && hits < in_run.iter().filter(|&&r| r).count());
    }

    /// Fans traced with every lane implementation the processor runs (plain code always,
    /// AVX2 and AVX-512 where present) give the single-ray bits, including rays along an axis
    /// (components of +0 and -0, which take the tiny stand-in) and runs cut short.
    #[test]
    fn every_instruction_set_gives_single_ray_bits() {
        let scene = procedural::by_name("village", 2, 1).unwrap();
        let (lo, hi) = scene.bounds().unwrap();
        let tiers = scene.tiers();
        let mut rng = SplitMix64(17);
        let mut segs = Vec::new();
        for run in [40, 7, 16, 33, 6, 64] {
            let eye = glam::Vec3::new(0.0, rng.range(lo.y, hi.y), rng.range(lo.z, hi.z));
            for k in 0..run {
                let mut end = eye + rng.unit_vector() * rng.range(1.0, 40.0);
                match k % 4 {
                    0 => end.x = 0.0,
                    1 => end.x = -0.0,
                    2 => end.y = eye.y,
                    _ => {}
                }
                segs.push(Segment::new(eye, end));
            }
        }
        let single: Vec<bool> = segs
            .iter()
            .map(|s| cpu::occluded(&tiers, &[*s], 1).get(0))
            .collect();
        assert!(single.iter().any(|&b| b) && !single.iter().all(|&b| b));
        let words = segs.len().div_ceil(32);
        let job = Fans {
            tiers: &tiers,
            segments: &segs,
            mask: 1,
        };
        let run = |f: &dyn Fn(&Fans, &mut FansOut) -> bool| {
            let (mut blocked, mut traced) = (vec![0u32; words], vec![0u32; words]);
            let mut stack = Box::new([(0, 0, 0); STACK_SIZE]);
            let mut out = FansOut {
                stack: &mut stack,
                words: &mut blocked,
                traced: &mut traced,
            };
            assert!(f(&job, &mut out));
            (0..segs.len())
                .map(|i| blocked[i / 32] >> (i % 32) & 1 == 1)
                .collect::<Vec<_>>()
        };
        assert_eq!(run(&|j, o| trace_fans_in::<Plain>(j, o)), single, "plain");
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the processor has AVX2.
                assert_eq!(
                    run(&|j, o| unsafe { trace_fans_avx2(j, o) }),
                    single,
                    "avx2"
                );
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the processor has AVX-512F.
                assert_eq!(
                    run(&|j, o| unsafe { trace_fans_avx512(j, o) }),
                    single,
                    "avx512"
                );
            }
        }
    }
}
