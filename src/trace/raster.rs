//! Closest hits of a grid of straight-down rays given by its frame ([`DownGrid`]), found the
//! way a rasteriser draws a top-down view: every leaf of the tree is laid onto the pixels under
//! it, and each of its triangles is tested against the rays it can hold. No ray walks the tree.
//! The answers equal [`cpu::closest_hit`]'s on the built-out rays, bit for bit.
//!
//! Why the answers are the same: `cpu`'s walk tests a triangle for a ray only inside leaves its
//! slab test admits, with a limit that only shrinks from `t_max`; its answer is the least
//! (distance, id) of the hits it tests. Every hit lies in a leaf whose box the slab test admits
//! with any limit at or beyond the hit (the [`BOX_PAD`] margin), and a leaf admitted makes its
//! ancestors admitted (their boxes hold it; the rounded slab distances are monotone in the
//! box). So that answer is the least (distance, id) over every triangle in every leaf the slab
//! test admits with `t_max`, which is what this kernel takes: the same slab test
//! ([`cpu::children_entry`]'s arithmetic, one ray at a time) on every pixel near the leaf, then
//! [`intersect`] with the ray's `t_max` on the triangles that can hold it (the footprint
//! argument of [`super::down`]: triangles flat on the ground never hit a downward ray, wide
//! ones only rays near their padded ground box, thin ones any ray the leaf admits).
//!
//! The leaves go highest first, and a pixel's slab test takes its best hit so far as the
//! limit: a leaf entered beyond it holds no hit that could take its place (every hit lies in a
//! leaf admitted with any limit at or beyond the hit), so the leaves under a pixel's surface
//! cost a slab test and none of their triangles is tested. The cost is one test per pixel under
//! each leaf and per pixel under each triangle above the surface: no walk, no stack, and rows
//! of pixels read in order. Bands of rows run in parallel, each over the leaves that reach it.

use super::cpu::{hit_record, RayPrep, EDGE_SNAP};
use super::down::{candidate_pad, flat_on_ground, slab4, DownGrid, DOWN};
use super::{HitRecord, NO_HIT};
use crate::bvh::{GpuTriangle, WideNode};
use crate::scene::Tier;
use bytemuck::Zeroable;
use glam::{Vec3, Vec4};
use rayon::prelude::*;

/// Grid rows a band (one parallel task).
const BAND: usize = 16;

/// A leaf of a tree: the top of its box, its tier, node and slot, and the pixels (inclusive
/// ranges, a pixel of slack each side) under its box.
struct Leaf {
    top: f32,
    tier: u32,
    node: u32,
    slot: u32,
    cols: (usize, usize),
    rows: (usize, usize),
}

/// The pixel grid: pixel centres by column (`xs`) and row (`zs`), each ray's start and limit.
struct Pixels<'a> {
    xs: Vec<f32>,
    zs: Vec<f32>,
    starts: &'a [f32],
    floor: f32,
    width: usize,
}

impl Pixels<'_> {
    /// The columns (or rows) whose centres in `centres` may lie within `[lo, hi]`, a pixel of
    /// slack each side; `None` when none can.
    fn span(centres: &[f32], lo: f32, hi: f32) -> Option<(usize, usize)> {
        let a = centres.partition_point(|&c| c < lo).saturating_sub(1);
        let b = centres.partition_point(|&c| c <= hi);
        (a < centres.len() && b > 0 && a < b).then(|| (a, b.min(centres.len() - 1)))
    }

    /// Ray `i`'s limit ([`DownGrid::ray`]): 0 for a NaN start.
    fn t_max(&self, i: usize) -> f32 {
        let y = self.starts[i];
        if y.is_nan() {
            0.0
        } else {
            (y - self.floor).max(0.0)
        }
    }
}

/// [`super::down::closest_hit_grid_with`]: the kernel behind it.
pub(super) fn closest_hit_grid<T: Zeroable + Send>(
    tiers: &[&Tier],
    grid: &DownGrid,
    starts: &[f32],
    mask: u32,
    keep: &(impl Fn(&HitRecord) -> T + Sync),
) -> Vec<T> {
    let n = starts.len();
    let width = grid.width;
    let rows = n.div_ceil(width);
    let centre = |i| crate::ground::cell_centre(grid.origin, grid.cell, width, i);
    let px = Pixels {
        // Padded by a lane group: the last group of a row reads past its end.
        xs: (0..width + 4).map(|c| centre(c.min(width - 1)).x).collect(),
        zs: (0..rows).map(|r| centre(r * width).y).collect(),
        starts,
        floor: grid.floor,
        width,
    };
    let mut leaves = leaves(tiers, &px);
    // Highest first: the rays go down, so the leaves met first come first and leaves below a
    // pixel's hit are dropped by the slab test before any of their triangles is tested.
    leaves.sort_by(|a, b| b.top.total_cmp(&a.top));
    // The leaves that reach each band.
    let mut bins: Vec<Vec<u32>> = vec![Vec::new(); rows.div_ceil(BAND)];
    for (k, leaf) in leaves.iter().enumerate() {
        for bin in &mut bins[leaf.rows.0 / BAND..=leaf.rows.1 / BAND] {
            bin.push(k as u32);
        }
    }
    let template = RayPrep::new(Vec3::ZERO, Vec3::from(DOWN));
    // Zeroed memory: each band's thread is the first to touch its pages.
    let mut out: Vec<T> = bytemuck::zeroed_vec(n);
    crate::limits::advise_huge_pages(&mut out);
    out.par_chunks_mut(BAND * width)
        .zip(&bins)
        .enumerate()
        .for_each_init(Band::default, |band, (b, (out, bin))| {
            band.reset(b * BAND, out.len(), &px);
            for &k in bin {
                band.leaf(tiers, &leaves[k as usize], &px, &template, mask);
            }
            band.write(tiers, &template, out, keep);
        });
    out
}

/// Every leaf of every tier whose box lies over some pixel.
fn leaves(tiers: &[&Tier], px: &Pixels) -> Vec<Leaf> {
    let mut out = Vec::new();
    for (t, tier) in tiers.iter().enumerate() {
        for (n, node) in tier.wide.iter().enumerate() {
            for s in 0..4 {
                if node.count[s] == 0 {
                    continue;
                }
                let b = &node.bounds;
                let cols = Pixels::span(&px.xs[..px.width], b[0][s], b[1][s]);
                let rows = Pixels::span(&px.zs, b[4][s], b[5][s]);
                if let (Some(cols), Some(rows)) = (cols, rows) {
                    out.push(Leaf {
                        top: b[3][s],
                        tier: t as u32,
                        node: n as u32,
                        slot: s as u32,
                        cols,
                        rows,
                    });
                }
            }
        }
    }
    out
}

/// One band's rays, four pixels of a row at a time: their origins' heights and limits (padded
/// by a row and a lane group past the band's end), the best hit so far per pixel (distance, id, where
/// the triangle lies), and scratch for the pixels a leaf admits.
#[derive(Default)]
struct Band {
    /// First grid row and pixel count of the band.
    row0: usize,
    len: usize,
    oy: Vec<f32>,
    t_max: Vec<f32>,
    best_t: Vec<f32>,
    best_id: Vec<u32>,
    best_at: Vec<(u32, u32)>,
    /// Per row of the leaf, per group of four columns from its first: the lanes admitted.
    admitted: Vec<u32>,
}

impl Band {
    fn reset(&mut self, row0: usize, len: usize, px: &Pixels) {
        let base = row0 * px.width;
        (self.row0, self.len) = (row0, len);
        self.t_max.clear();
        self.t_max.extend((0..len).map(|k| px.t_max(base + k)));
        // Padded to whole rows and a lane group: a partial last row reads past the band.
        let pad = px.width + 4;
        self.t_max.resize(len + pad, 0.0);
        self.oy.clear();
        self.oy.extend(px.starts[base..base + len].iter().map(|&y| {
            if y.is_nan() {
                px.floor
            } else {
                y
            }
        }));
        self.oy.resize(len + pad, 0.0);
        self.best_t.clear();
        self.best_t.resize(len + pad, f32::INFINITY);
        self.best_id.clear();
        self.best_id.resize(len + pad, NO_HIT);
        self.best_at.clear();
        self.best_at.resize(len + pad, (0, 0));
    }

    /// Lays one leaf onto the band: the slab test on each pixel under it, then each triangle
    /// against the admitted pixels it can cover.
    fn leaf(&mut self, tiers: &[&Tier], leaf: &Leaf, px: &Pixels, tp: &RayPrep, mask: u32) {
        let tier = tiers[leaf.tier as usize];
        let node = &tier.wide[leaf.node as usize];
        let s = leaf.slot as usize;
        let last = self.row0 + self.len.div_ceil(px.width) - 1;
        let rows = (leaf.rows.0.max(self.row0), leaf.rows.1.min(last));
        if rows.0 > rows.1 || !self.admit(node, s, px, tp, (leaf.cols, rows)) {
            return;
        }
        let groups = (leaf.cols.1 - leaf.cols.0) / 4 + 1;
        let first = node.child[s];
        let tris = &tier.triangles[first as usize..][..node.count[s] as usize];
        for (index, tri) in (first..).zip(tris) {
            if tri.flags & mask == 0 {
                continue;
            }
            let Some(((a0, a1), (q0, q1))) = footprint(tri, px, leaf.cols, rows) else {
                continue;
            };
            let prep = Down::new(tri);
            for r in q0..=q1 {
                let mut c = a0;
                while c <= a1 {
                    let g = (c - leaf.cols.0) / 4;
                    let c4 = leaf.cols.0 + 4 * g;
                    // Lanes of this group within [a0, a1].
                    let lo = c - c4;
                    let hi = (a1 - c4).min(3);
                    let lanes =
                        self.admitted[(r - rows.0) * groups + g] & (0xf << lo) & (0xf >> (3 - hi));
                    if lanes != 0 {
                        self.test(&prep, px, (r, c4), lanes, (leaf.tier, index, tri.id));
                    }
                    c = c4 + 4;
                }
            }
        }
    }

    /// The slab test on each pixel in `cols` x `rows` against slot `s` of `node`, four columns
    /// at a time, into `admitted`; whether any pixel is admitted.
    fn admit(
        &mut self,
        node: &WideNode,
        s: usize,
        px: &Pixels,
        tp: &RayPrep,
        ((c0, c1), rows): ((usize, usize), (usize, usize)),
    ) -> bool {
        self.admitted.clear();
        let mut any = 0;
        for r in rows.0..=rows.1 {
            let mut c = c0;
            while c <= c1 {
                let k = (r - self.row0) * px.width + c;
                let live = Vec4::from_slice(&self.t_max[k..k + 4]).cmpgt(Vec4::ZERO);
                let inside = (0..4).fold(0, |m, j| m | u32::from(c + j <= c1) << j);
                let o = [
                    Vec4::from_slice(&px.xs[c..c + 4]),
                    Vec4::from_slice(&self.oy[k..k + 4]),
                    Vec4::splat(px.zs[r]),
                ];
                // A leaf entered beyond a pixel's best hit so far holds no hit that could take
                // its place (the argument above, with the best hit's distance as the limit).
                let limit = Vec4::from_slice(&self.t_max[k..k + 4])
                    .min(Vec4::from_slice(&self.best_t[k..k + 4]));
                let m = slab4(tp, &node.bounds, s, o, limit) & live.bitmask() & inside;
                any |= m;
                self.admitted.push(m);
                c += 4;
            }
        }
        any != 0
    }

    /// Tests the triangle of `prep` (`at`: its tier, index and id) against the `lanes` of the
    /// four pixels from grid pixel `(r, c)`, keeping each ray's nearest hit (ties to the lower
    /// triangle id).
    #[inline]
    fn test(
        &mut self,
        prep: &Down,
        px: &Pixels,
        (r, c): (usize, usize),
        lanes: u32,
        at: (u32, u32, u32),
    ) {
        let k = (r - self.row0) * px.width + c;
        let o = [
            Vec4::from_slice(&px.xs[c..c + 4]),
            Vec4::from_slice(&self.oy[k..k + 4]),
            Vec4::splat(px.zs[r]),
        ];
        let (hit, t) = prep.intersect(o, Vec4::from_slice(&self.t_max[k..k + 4]));
        let mut m = hit & lanes;
        let t = t.to_array();
        while m != 0 {
            let j = m.trailing_zeros() as usize;
            m &= m - 1;
            let (d, kj) = (t[j], k + j);
            if d < self.best_t[kj] || (d == self.best_t[kj] && at.2 < self.best_id[kj]) {
                (self.best_t[kj], self.best_id[kj], self.best_at[kj]) = (d, at.2, (at.0, at.1));
            }
        }
    }

    /// Writes what `keep` makes of the band's records: one per triangle met in a row, `t` set
    /// per pixel.
    fn write<T>(
        &self,
        tiers: &[&Tier],
        tp: &RayPrep,
        out: &mut [T],
        keep: &impl Fn(&HitRecord) -> T,
    ) {
        let mut last = (u32::MAX, u32::MAX, HitRecord::MISS);
        for (k, o) in out.iter_mut().enumerate() {
            *o = keep(&if self.best_id[k] == NO_HIT {
                HitRecord::MISS
            } else {
                let (n, index) = self.best_at[k];
                if (n, index) != (last.0, last.1) {
                    let tri = &tiers[n as usize].triangles[index as usize];
                    last = (n, index, hit_record(tp, tri, 0.0));
                }
                HitRecord {
                    t: self.best_t[k],
                    ..last.2
                }
            });
        }
    }
}

/// [`intersect`] for downward rays, four at a time: for `dir = DOWN` the ray's shear rows pick
/// `x`, `z` and `-y` of each vertex's offset from the origin (their other products are zeros,
/// which leave every sum as it was, but for the sign of a zero that no test reads), so the
/// same roundings give the same verdicts and distances lane by lane.
struct Down {
    v: [[f32; 3]; 3],
}

impl Down {
    fn new(tri: &GpuTriangle) -> Down {
        Down {
            v: [tri.v0, tri.v1, tri.v2],
        }
    }

    /// The lanes that hit with `0 < t < t_max`, and their distances.
    #[inline]
    fn intersect(&self, o: [Vec4; 3], t_max: Vec4) -> (u32, Vec4) {
        let s = Vec4::splat;
        let off = |v: [f32; 3]| (s(v[0]) - o[0], s(v[2]) - o[2], o[1] - s(v[1]));
        let (ax, ay, za) = off(self.v[0]);
        let (bx, by, zb) = off(self.v[1]);
        let (cx, cy, zc) = off(self.v[2]);
        let snap = |p: Vec4, q: Vec4| {
            let d = p - q;
            let keep = d.abs().cmpgt(s(EDGE_SNAP) * p.abs().max(q.abs()));
            Vec4::select(keep, d, Vec4::ZERO)
        };
        let u = snap(cx * by, cy * bx);
        let v = snap(ax * cy, ay * cx);
        let w = snap(bx * ay, by * ax);
        let z = Vec4::ZERO;
        let neg = u.cmplt(z) | v.cmplt(z) | w.cmplt(z);
        let pos = u.cmpgt(z) | v.cmpgt(z) | w.cmpgt(z);
        let det = u + v + w;
        let t_scaled = u * za + v * zb + w * zc;
        let sign = Vec4::select(det.cmplt(z), s(-1.0), s(1.0));
        let (ts, ds) = (t_scaled * sign, det * sign);
        let hit = !(neg & pos) & det.cmpne(z) & ts.cmpgt(z) & ts.cmplt(t_max * ds);
        (hit.bitmask(), ts / ds)
    }
}

/// The columns and rows (within `cols` and `rows`) whose rays `tri` may hit: `None` for a
/// triangle flat on the ground, the pixels near its padded ground box when it is wide enough
/// to bound safely, else all of them.
fn footprint(
    tri: &GpuTriangle,
    px: &Pixels,
    cols: (usize, usize),
    rows: (usize, usize),
) -> Option<((usize, usize), (usize, usize))> {
    let [a, b, c] = [tri.v0, tri.v1, tri.v2].map(|v| [v[0], v[2]]);
    if flat_on_ground(a, b, c) {
        return None;
    }
    let lo = [px.xs[cols.0], px.zs[rows.0]];
    let hi = [px.xs[cols.1], px.zs[rows.1]];
    let Some((tlo, thi)) = candidate_pad(a, b, c, lo, hi) else {
        return Some((cols, rows));
    };
    let clip = |(p, q): (usize, usize), (a, b): (usize, usize)| (p.max(a), q.min(b));
    let x = clip(Pixels::span(&px.xs[..px.width], tlo[0], thi[0])?, cols);
    let z = clip(Pixels::span(&px.zs, tlo[1], thi[1])?, rows);
    (x.0 <= x.1 && z.0 <= z.1).then_some((x, z))
}
