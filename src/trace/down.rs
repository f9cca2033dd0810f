//! Closest hits of rays that all point straight down, as a top-down picture takes them: one ray
//! per pixel of a row-major grid. The answers equal [`cpu::closest_hit`]'s bit for bit; the
//! kernel only decides differently which ray meets which triangle.
//!
//! The grid is cut into tiles of 16 x 16 rays. A tile walks each tier's wide tree once with the
//! box around its rays' origins, four children per SSE test, highest box first, and drops a box
//! whose top lies below the height every ray of the tile has already reached. At a leaf, each
//! ray the leaf's box admits is tested, with the same [`intersect`] and the same tie rule
//! (equal distances go to the lower triangle id), against those triangles whose outline on the
//! ground can contain its origin. Records are made once per ray, at the end.
//!
//! Why the answers are the same:
//! - A ray is tested against a leaf only when `cpu`'s slab test ([`cpu::children_entry`]'s
//!   arithmetic, with the ray's current limit) admits the leaf's box, so the kernel keeps the
//!   quirks of that test: a downward ray whose origin lies exactly on a box's upper `x` or `z`
//!   face enters it only from within its heights. The tile's own tests are padded so that they
//!   drop only boxes no ray of the tile enters, or ones `cpu`'s walk drops too (the entry
//!   distance exceeds the padded limit), which cannot hold the answer. The walks visit leaves
//!   in different orders, but the answer is the least (distance, id) either way.
//! - A triangle is skipped for a ray only where [`intersect`] is sure to refuse it. For a
//!   downward ray it projects onto the ground (`x`, `z`) and tests the signs of three 2D cross
//!   products, each a difference of two rounded products: a computed sign is the exact sign
//!   (for the rounded, translated vertices) or zero. If the origin lies outside the triangle,
//!   the triangle spans an angle `phi < pi` seen from it, and a hit needs the cross product of
//!   the two outermost vertices rounded to zero (`sin(phi) <= 2^-24`) or the other two (each
//!   part of `phi` has a sine under `2^-24`): the triangle looks like a point or a line from
//!   the origin, or the origin lies next to an edge, within about `2^-24` of its length. Such
//!   hits far outside a triangle are real for ground outlines that are (nearly) segments, as
//!   vertical triangles have. A triangle whose smallest height on the ground is at least
//!   `SAFE_WIDTH` times the extent of tile and triangle together cannot look that thin from
//!   the tile (translation moves each vertex by at most `2^-24` of that extent), so rays
//!   outside its ground box padded by `SAFE_PAD` of the extent are not tested. Thinner
//!   triangles are tested against every ray their leaf admits, as `cpu` does.
//! - Triangles whose ground outline is a point or a segment along an axis (two vertices over
//!   each other, or all three at one `x` or one `z`) never hit a downward ray: the three
//!   cross products then cancel exactly, so the determinant is zero or the signs differ.
//!
//! Only speed depends on the rays forming a grid: a tile whose columns share `x` and whose rows
//! share `z` finds the rays inside a box with a row and a column mask, any other tile ray by
//! ray.

use super::cpu::{self, hit_record, intersect, RayPrep, BOX_PAD, STACK_SIZE};
use super::{in_range, HitRecord, Ray, NO_HIT};
use crate::bvh::{GpuTriangle, WideNode};
use crate::scene::Tier;
use glam::{Vec2, Vec3, Vec3A, Vec4};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The direction every ray must have, bit for bit.
pub const DOWN: [f32; 3] = [0.0, -1.0, 0.0];

/// Tile width (rays per tile row; at most 32, the bits of a row mask).
const TW: usize = 16;
/// Tile height (grid rows per tile).
const TH: usize = 16;
const TN: usize = TW * TH;

/// Batches smaller than this are traced on the calling thread.
const SERIAL_BELOW: usize = 1024;

/// Least smallest height of a triangle's ground outline, relative to the extent of the tile's
/// origins and the triangle together, for which rays outside its padded ground box are not
/// tested (see the module documentation: the rounding argument needs a few times `2^-24`).
const SAFE_WIDTH: f32 = 1e-4;

/// Pad of a triangle's ground box, relative to the same extent (the argument needs about
/// `3 * 2^-24`).
const SAFE_PAD: f32 = 1e-5;

/// Closest hits of straight-down rays laid out as a row-major grid of `width` rays per row (the
/// last row may be partial): the same records as [`cpu::closest_hit`]`(tiers, rays, mask)`,
/// bit for bit.
///
/// Precondition (the caller validates): every ray has `dir == DOWN` (`[0.0, -1.0, 0.0]`, with
/// positive zeros), a finite origin within [`crate::limits::MAX_COORDINATE`] and `t_max >= 0`
/// (`t_max = 0` never hits). Where a ray breaks it, or `width` is 0, the whole batch goes to
/// [`cpu::closest_hit`] instead. Correctness does not depend on the origins forming a regular
/// grid; speed does (tiles of nearby rays share one walk).
#[must_use]
pub fn closest_hit_down(tiers: &[&Tier], rays: &[Ray], width: usize, mask: u32) -> Vec<HitRecord> {
    if rays.is_empty() {
        return Vec::new();
    }
    if width == 0 {
        return cpu::closest_hit(tiers, rays, mask);
    }
    let tiers: Vec<&Tier> = tiers
        .iter()
        .copied()
        .filter(|t| !t.wide.is_empty())
        .collect();
    if tiers.is_empty() {
        return vec![HitRecord::MISS; rays.len()];
    }
    // Every cell is written below; zeroed memory comes from the system without a pass over it.
    let mut out: Vec<HitRecord> = bytemuck::zeroed_vec(rays.len());
    crate::limits::advise_huge_pages(&mut out);
    // The lowest box bottom in any tree: bounds how deep below an origin a slab test can reach.
    let floor = tiers
        .iter()
        .map(|t| Vec4::from(t.wide[0].bounds[2]).min_element())
        .fold(f32::INFINITY, f32::min);
    let ctx = Ctx {
        tiers: &tiers,
        mask,
        width,
        floor,
        template: RayPrep::new(Vec3::ZERO, Vec3::from(DOWN)),
        broken: AtomicBool::new(false),
    };
    let band = TH * width;
    let task = |tile: &mut Box<Tile>, (out, rays): (&mut [HitRecord], &[Ray])| {
        for c0 in (0..width).step_by(TW) {
            if ctx.broken.load(Relaxed) {
                return;
            }
            ctx.trace(tile, out, rays, c0);
        }
    };
    if rays.len() <= SERIAL_BELOW {
        let mut tile = Tile::boxed();
        for pair in out.chunks_mut(band).zip(rays.chunks(band)) {
            task(&mut tile, pair);
        }
    } else {
        out.par_chunks_mut(band)
            .zip(rays.par_chunks(band))
            .for_each_init(Tile::boxed, task);
    }
    // Tiles check the precondition as they read their rays.
    if ctx.broken.into_inner() {
        return cpu::closest_hit(&tiers, rays, mask);
    }
    out
}

/// A row-major grid of straight-down rays given by its frame: ray `i` leaves from height
/// `starts[i]` over the centre of cell `i` ([`crate::ground::cell_centre`]`(origin, cell,
/// width, i)`) and runs down to `floor` (`t_max = max(start - floor, 0)`); a NaN start is a
/// ray that meets nothing.
#[derive(Clone, Copy, Debug)]
pub struct DownGrid {
    pub origin: Vec2,
    /// Cell size (metres).
    pub cell: f32,
    /// Cells a row (at least 1).
    pub width: usize,
    pub floor: f32,
}

impl DownGrid {
    /// Refuses a grid of downward rays with no cells a row, a cell size not above 0 (the kernel
    /// needs centres that rise along rows and columns), or a cell centre, start or floor that
    /// is not finite within the coordinate limit (NaN starts excepted: they mark rays that meet
    /// nothing).
    pub fn check(&self, starts: &[f32]) -> crate::Result<()> {
        if self.width == 0 {
            return Err(crate::Error::param("width", 0, "at least one ray a row"));
        }
        if !(self.cell > 0.0) {
            return Err(crate::Error::param(
                "cell",
                self.cell,
                "a cell size above 0 metres",
            ));
        }
        let rows = starts.len().div_ceil(self.width);
        let corners = [0, (rows.max(1) - 1) * self.width + self.width - 1]
            .map(|i| crate::ground::cell_centre(self.origin, self.cell, self.width, i));
        let fits = |v: f32| v.is_finite() && v.abs() <= crate::limits::MAX_COORDINATE;
        if !corners.iter().all(|c| fits(c.x) && fits(c.y)) || !fits(self.cell) || !fits(self.floor)
        {
            return Err(crate::Error::InvalidInput(format!(
                "a grid of downward rays from {} with {} m cells down to {} reaches past {:e} m: \
                 use a smaller grid or finite values",
                self.origin,
                self.cell,
                self.floor,
                crate::limits::MAX_COORDINATE
            )));
        }
        if let Some(index) = starts.iter().position(|&y| !(y.is_nan() || fits(y))) {
            return Err(crate::Error::NonFiniteQuery {
                index,
                what: "an infinite or too high ray start",
            });
        }
        Ok(())
    }

    /// Ray `i` of the grid leaving from height `start`.
    #[must_use]
    pub fn ray(&self, i: usize, start: f32) -> Ray {
        let c = crate::ground::cell_centre(self.origin, self.cell, self.width, i);
        if start.is_nan() {
            return Ray::new(Vec3::new(c.x, self.floor, c.y), Vec3::from(DOWN), 0.0);
        }
        Ray::new(
            Vec3::new(c.x, start, c.y),
            Vec3::from(DOWN),
            (start - self.floor).max(0.0),
        )
    }
}

/// The closest hits of the rays of `grid` leaving from `starts` (one a cell, row-major),
/// without a buffer of rays, by laying the tree's leaves onto the grid (the `raster` kernel): the
/// same records as [`cpu::closest_hit`] of [`DownGrid::ray`]`(i, starts[i])`, bit for bit.
/// A grid [`DownGrid::check`] refuses is an error.
pub fn closest_hit_grid(
    tiers: &[&Tier],
    grid: &DownGrid,
    starts: &[f32],
    mask: u32,
) -> crate::Result<Vec<HitRecord>> {
    closest_hit_grid_with(tiers, grid, starts, mask, |h| *h)
}

/// [`closest_hit_grid`], keeping only what `keep` makes of each record: a caller that needs a
/// few fields of each hit of a large grid does not hold 32 bytes a cell.
pub fn closest_hit_grid_with<T: bytemuck::Zeroable + Send>(
    tiers: &[&Tier],
    grid: &DownGrid,
    starts: &[f32],
    mask: u32,
    keep: impl Fn(&HitRecord) -> T + Sync,
) -> crate::Result<Vec<T>> {
    if starts.is_empty() {
        return Ok(Vec::new());
    }
    grid.check(starts)?;
    Ok(super::raster::closest_hit_grid(
        tiers, grid, starts, mask, &keep,
    ))
}

/// Whether `r` meets the precondition of [`closest_hit_down`].
fn straight_down(r: &Ray) -> bool {
    r.dir.map(f32::to_bits) == DOWN.map(f32::to_bits) && in_range(r.origin()) && r.t_max >= 0.0
}

struct Ctx<'a> {
    tiers: &'a [&'a Tier],
    mask: u32,
    width: usize,
    floor: f32,
    /// `RayPrep::new(origin, DOWN)` but for `org`, which depends on the origin alone.
    template: RayPrep,
    /// Set when a ray breaks the precondition: the batch then goes to [`cpu::closest_hit`].
    broken: AtomicBool,
}

/// What [`Tile::fill`] found.
enum Fill {
    /// Some ray can hit something.
    Live,
    /// No ray can hit anything (`t_max = 0`).
    Dead,
    /// A ray breaks the precondition.
    Broken,
}

/// One tile's rays, cell `k = row * TW + column`.
struct Tile {
    /// Row masks of the cells holding rays.
    valid: [u32; TH],
    /// Row masks of the rays that can still hit anything (`t_max > 0`).
    live: [u32; TH],
    /// Columns share `x` (in `xs`) and rows share `z` (in `zs`), bit for bit.
    grid: bool,
    xs: [f32; TW],
    zs: [f32; TH],
    ox: [f32; TN],
    oy: [f32; TN],
    oz: [f32; TN],
    t_max: [f32; TN],
    /// `min(best.t, t_max)`: the limit of the ray's slab tests.
    limit: [f32; TN],
    /// A height below which no box can hold a better hit for the ray (`+inf` where there is no
    /// live ray); the tile drops boxes whose top lies below the least of them.
    h: [f32; TN],
    /// The best hit so far: distance, triangle id, and where the triangle lies (tier, index);
    /// its record is made once, at the end.
    best_t: [f32; TN],
    best_id: [u32; TN],
    best_at: [(u32, u32); TN],
    /// Ground box of the live origins, unpadded.
    lo: [f32; 2],
    hi: [f32; 2],
    /// Pad that makes a ground box test admit every ray a slab test admits.
    pad: f32,
    top: f32,
    /// Least `h`.
    cut: f32,
}

impl Tile {
    fn boxed() -> Box<Tile> {
        Box::new(Tile {
            valid: [0; TH],
            live: [0; TH],
            grid: false,
            xs: [0.0; TW],
            zs: [0.0; TH],
            ox: [0.0; TN],
            oy: [0.0; TN],
            oz: [0.0; TN],
            t_max: [0.0; TN],
            limit: [0.0; TN],
            h: [f32::INFINITY; TN],
            best_t: [f32::INFINITY; TN],
            best_id: [NO_HIT; TN],
            best_at: [(0, 0); TN],
            lo: [0.0; 2],
            hi: [0.0; 2],
            pad: 0.0,
            top: 0.0,
            cut: 0.0,
        })
    }

    /// Reads the rays of the tile at column `c0` of a band of up to [`TH`] grid rows.
    fn fill(&mut self, rays: &[Ray], width: usize, c0: usize, floor: f32) -> Fill {
        let mut fits = true;
        self.valid = [0; TH];
        self.live = [0; TH];
        self.h = [f32::INFINITY; TN];
        let (mut lo, mut hi) = ([f32::INFINITY; 2], [f32::NEG_INFINITY; 2]);
        let mut top = f32::NEG_INFINITY;
        self.grid = true;
        for i in 0..TH {
            let start = i * width + c0;
            if start >= rays.len() {
                break;
            }
            let cols = TW.min(width - c0).min(rays.len() - start);
            self.valid[i] = u32::MAX >> (32 - cols);
            self.zs[i] = rays[start].origin[2];
            for (j, r) in rays[start..start + cols].iter().enumerate() {
                let k = i * TW + j;
                fits &= straight_down(r);
                let [x, y, z] = r.origin;
                if i == 0 {
                    self.xs[j] = x;
                }
                self.grid &=
                    x.to_bits() == self.xs[j].to_bits() && z.to_bits() == self.zs[i].to_bits();
                (self.ox[k], self.oy[k], self.oz[k]) = (x, y, z);
                self.t_max[k] = r.t_max;
                self.limit[k] = r.t_max;
                self.best_t[k] = f32::INFINITY;
                self.best_id[k] = NO_HIT;
                if r.t_max > 0.0 {
                    self.live[i] |= 1 << j;
                    self.h[k] = height(y, r.t_max);
                    lo = [lo[0].min(x), lo[1].min(z)];
                    hi = [hi[0].max(x), hi[1].max(z)];
                    top = top.max(y);
                }
            }
        }
        if !fits {
            return Fill::Broken;
        }
        if top == f32::NEG_INFINITY {
            return Fill::Dead;
        }
        (self.lo, self.hi, self.top) = (lo, hi, top);
        // A slab test admits a box beside the origin only while (box - origin) * 1e30 stays
        // below the far distance, at most `top - floor`: pad by that, and by a few roundings.
        let size = lo.iter().chain(&hi).fold(0.0f32, |m, v| m.max(v.abs()));
        self.pad = size * 1e-6 + (top - floor).max(0.0) * 1e-29 + 1e-37;
        self.cut = self.least_h();
        Fill::Live
    }

    fn least_h(&self) -> f32 {
        let mut m = Vec4::splat(f32::INFINITY);
        for c in self.h.chunks_exact(4) {
            m = m.min(Vec4::from_slice(c));
        }
        m.min_element()
    }

    /// Row masks of the live rays whose origin lies in `[x0, x1] x [z0, z1]`.
    fn rect(&self, x0: f32, x1: f32, z0: f32, z1: f32) -> [u32; TH] {
        let mut m = [0u32; TH];
        if self.grid {
            let (cols, rows) = (
                span_mask(&self.xs, x0, x1),
                span_mask(&self.zs, z0, z1) & u32::MAX >> (32 - TH),
            );
            if cols != 0 {
                let mut r = rows;
                while r != 0 {
                    let i = r.trailing_zeros() as usize;
                    r &= r - 1;
                    m[i] = cols & self.live[i];
                }
            }
        } else {
            for (i, row) in m.iter_mut().enumerate() {
                let mut l = self.live[i];
                while l != 0 {
                    let j = l.trailing_zeros() as usize;
                    l &= l - 1;
                    let k = i * TW + j;
                    let (x, z) = (self.ox[k], self.oz[k]);
                    if x0 <= x && x <= x1 && z0 <= z && z <= z1 {
                        *row |= 1 << j;
                    }
                }
            }
        }
        m
    }
}

/// The slab test of [`cpu::children_entry`] for four downward rays (`tp` with each lane's origin
/// in `o`, x, y and z, and its limit in `limit`) against slot `s` of a node with bounds `b`: the
/// same operations on the same values, one ray a lane. Bit `j` set where lane `j` is admitted.
#[inline]
pub(super) fn slab4(tp: &RayPrep, b: &[[f32; 4]; 6], s: usize, o: [Vec4; 3], limit: Vec4) -> u32 {
    let (inv, near) = (tp.inv.to_array(), tp.near);
    let d = |a: usize, row: usize| (Vec4::splat(b[row][s]) - o[a]) * Vec4::splat(inv[a]);
    // Written out: `[0, 1, 2].map(..)` can stay an out-of-line call.
    let (nx, ny, nz) = (d(0, near[0]), d(1, near[1]), d(2, near[2]));
    let (fx, fy, fz) = (d(0, near[0] ^ 1), d(1, near[1] ^ 1), d(2, near[2] ^ 1));
    let n = nx.max(ny).max(nz.max(Vec4::ZERO));
    let f = fx.min(fy).min(fz.min(limit)) * BOX_PAD;
    n.cmple(f).bitmask()
}

/// Bit `j` set where `lo <= v[j] <= hi`.
#[inline]
fn span_mask<const N: usize>(v: &[f32; N], lo: f32, hi: f32) -> u32 {
    let mut m = 0;
    for (c, chunk) in v.chunks_exact(4).enumerate() {
        let x = Vec4::from_slice(chunk);
        let inside = x.cmpge(Vec4::splat(lo)) & x.cmple(Vec4::splat(hi));
        m |= inside.bitmask() << (4 * c);
    }
    m
}

/// A height below which a box holds no hit a ray from height `y` with limit `limit` would
/// take: `cpu` drops a box when its entry distance, at least `y - top`, exceeds
/// `limit * BOX_PAD`. The margin covers the roundings of both sides (culling less is only
/// slower); an unbounded limit gives `-inf`.
#[inline]
fn height(y: f32, limit: f32) -> f32 {
    let reach = limit * BOX_PAD;
    let h = y - reach;
    h - ((y.abs() + reach) * 1e-6 + 1e-37)
}

/// Whether the triangle's ground outline is a point or a segment along an axis: then its three
/// 2D cross products cancel exactly for any origin, and [`intersect`] never reports a hit for a
/// downward ray.
#[inline]
pub(super) fn flat_on_ground(a: [f32; 2], b: [f32; 2], c: [f32; 2]) -> bool {
    a == b || b == c || c == a || (a[0] == b[0] && b[0] == c[0]) || (a[1] == b[1] && b[1] == c[1])
}

impl Ctx<'_> {
    fn trace(&self, tile: &mut Tile, out: &mut [HitRecord], rays: &[Ray], c0: usize) {
        match tile.fill(rays, self.width, c0, self.floor) {
            Fill::Live => {
                for (n, tier) in self.tiers.iter().enumerate() {
                    self.walk(tile, tier, n as u32);
                }
            }
            Fill::Dead => {}
            Fill::Broken => {
                self.broken.store(true, Relaxed);
                return;
            }
        }
        // A record depends on the ray's direction, the triangle and `t` alone: make one per
        // triangle met in a row and set `t`.
        let mut last = (u32::MAX, u32::MAX, HitRecord::MISS);
        for i in 0..TH {
            let mut v = tile.valid[i];
            while v != 0 {
                let j = v.trailing_zeros() as usize;
                v &= v - 1;
                let k = i * TW + j;
                out[i * self.width + c0 + j] = if tile.best_id[k] == NO_HIT {
                    HitRecord::MISS
                } else {
                    let (n, index) = tile.best_at[k];
                    if (n, index) != (last.0, last.1) {
                        let tri = &self.tiers[n as usize].triangles[index as usize];
                        last = (n, index, hit_record(&self.template, tri, 0.0));
                    }
                    HitRecord {
                        t: tile.best_t[k],
                        ..last.2
                    }
                };
            }
        }
    }

    fn walk(&self, t: &mut Tile, tier: &Tier, n_tier: u32) {
        let nodes = &tier.wide;
        // (node, slot, top of the slot's box)
        let mut stack = [(0u32, 0u32, 0f32); STACK_SIZE];
        let mut sp = 0;
        self.push(t, &nodes[0], 0, &mut stack, &mut sp);
        while sp > 0 {
            sp -= 1;
            let (n, s, top) = stack[sp];
            if top < t.cut {
                continue;
            }
            let node = &nodes[n as usize];
            let (child, count) = (node.child[s as usize], node.count[s as usize]);
            if count > 0 {
                let tris = &tier.triangles[child as usize..][..count as usize];
                self.leaf(t, node, s as usize, tris, (n_tier, child));
            } else {
                self.push(t, &nodes[child as usize], child, &mut stack, &mut sp);
            }
        }
    }

    /// Pushes the children of `node` (index `n`) whose boxes can hold a hit for the tile, the
    /// highest top last so it is popped first.
    fn push(
        &self,
        t: &Tile,
        node: &WideNode,
        n: u32,
        stack: &mut [(u32, u32, f32)],
        sp: &mut usize,
    ) {
        let b = &node.bounds;
        let s = Vec4::splat;
        let row = |r: usize| Vec4::from(b[r]);
        let inside = row(0).cmple(s(t.hi[0] + t.pad))
            & row(1).cmpge(s(t.lo[0] - t.pad))
            & row(4).cmple(s(t.hi[1] + t.pad))
            & row(5).cmpge(s(t.lo[1] - t.pad))
            & row(2).cmple(s(t.top))
            & row(3).cmpge(s(t.cut));
        let mut m = inside.bitmask();
        let base = *sp;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            let e = (n, i as u32, b[3][i]);
            let mut k = *sp;
            while k > base && stack[k - 1].2 > e.2 {
                stack[k] = stack[k - 1];
                k -= 1;
            }
            stack[k] = e;
            *sp += 1;
        }
    }

    /// The slab test of [`cpu::children_entry`] for the four cells from `k` (one per lane,
    /// where the reference has one box per lane) against slot `s` of `node`, each with its
    /// ray's limit: the same operations on the same values, so the same verdicts.
    #[inline]
    fn admits(&self, t: &Tile, k: usize, node: &WideNode, s: usize) -> u32 {
        let o = [&t.ox, &t.oy, &t.oz].map(|v| Vec4::from_slice(&v[k..k + 4]));
        let limit = Vec4::from_slice(&t.limit[k..k + 4]);
        slab4(&self.template, &node.bounds, s, o, limit)
    }

    /// `RayPrep::new(origin, DOWN)` for cell `k`: only `org` depends on the origin.
    #[inline]
    fn prep(&self, t: &Tile, k: usize) -> RayPrep {
        RayPrep {
            org: Vec3A::from(Vec3::new(t.ox[k], t.oy[k], t.oz[k])),
            ..self.template
        }
    }

    /// Tests the leaf's triangles (the first at `(tier, index)`) against the rays the slab
    /// test admits.
    fn leaf(
        &self,
        t: &mut Tile,
        node: &WideNode,
        s: usize,
        tris: &[GpuTriangle],
        (tier, first): (u32, u32),
    ) {
        let Some(admitted) = self.admitted(t, node, s) else {
            return;
        };
        let mut changed = false;
        for (n, tri) in (first..).zip(tris) {
            if tri.flags & self.mask == 0 {
                continue;
            }
            let Some(cand) = candidates(t, tri, &admitted) else {
                continue;
            };
            changed |= self.hit_cells(t, tri, &cand, (tier, n));
        }
        if changed {
            t.cut = t.least_h();
        }
    }

    /// Per row of the tile, the cells under slot `s` of `node` (padded) whose rays its slab
    /// test admits; `None` when there are none.
    #[inline]
    fn admitted(&self, t: &Tile, node: &WideNode, s: usize) -> Option<[u32; TH]> {
        let b = &node.bounds;
        let rect = t.rect(
            b[0][s] - t.pad,
            b[1][s] + t.pad,
            b[4][s] - t.pad,
            b[5][s] + t.pad,
        );
        let mut admitted = [0u32; TH];
        let mut any = 0;
        for (i, &r) in rect.iter().enumerate() {
            for g in (0..TW).step_by(4) {
                if r >> g & 0xf != 0 {
                    admitted[i] |= self.admits(t, i * TW + g, node, s) << g;
                }
            }
            admitted[i] &= r;
            any |= admitted[i];
        }
        (any != 0).then_some(admitted)
    }

    /// Tests `tri` (number `at`) against the cells of `cand`, keeping each ray's nearest hit
    /// (ties to the lower triangle id); returns whether any ray's hit changed.
    #[inline]
    fn hit_cells(&self, t: &mut Tile, tri: &GpuTriangle, cand: &[u32; TH], at: (u32, u32)) -> bool {
        let mut changed = false;
        for (i, &row) in cand.iter().enumerate() {
            let mut m = row;
            while m != 0 {
                let j = m.trailing_zeros() as usize;
                m &= m - 1;
                let k = i * TW + j;
                let Some(d) = intersect(&self.prep(t, k), tri, t.t_max[k]) else {
                    continue;
                };
                if d < t.best_t[k] || (d == t.best_t[k] && tri.id < t.best_id[k]) {
                    (t.best_t[k], t.best_id[k], t.best_at[k]) = (d, tri.id, at);
                    t.limit[k] = d.min(t.t_max[k]);
                    t.h[k] = height(t.oy[k], t.limit[k]);
                    changed = true;
                }
            }
        }
        changed
    }
}

/// The admitted cells `tri` may cover: `None` for a triangle flat on the ground (seen edge
/// on from above), the cells near its footprint when it is wide enough to bound safely, else
/// every admitted cell.
#[inline]
fn candidates(t: &Tile, tri: &GpuTriangle, admitted: &[u32; TH]) -> Option<[u32; TH]> {
    let [a, bb, c] = [tri.v0, tri.v1, tri.v2].map(|v| [v[0], v[2]]);
    if flat_on_ground(a, bb, c) {
        return None;
    }
    Some(match candidate_pad(a, bb, c, t.lo, t.hi) {
        Some((lo, hi)) => {
            let m = t.rect(lo[0], hi[0], lo[1], hi[1]);
            std::array::from_fn(|i| m[i] & admitted[i])
        }
        None => *admitted,
    })
}

/// The ground box (x, z) outside which no downward ray from origins within `[lo, hi]` can hit
/// the triangle with ground corners `a`, `b`, `c`, when it is wide enough to bound safely
/// (see the module documentation); `None` for a thin one.
#[inline]
pub(super) fn candidate_pad(
    a: [f32; 2],
    b: [f32; 2],
    c: [f32; 2],
    lo: [f32; 2],
    hi: [f32; 2],
) -> Option<([f32; 2], [f32; 2])> {
    let tlo = [a[0].min(b[0]).min(c[0]), a[1].min(b[1]).min(c[1])];
    let thi = [a[0].max(b[0]).max(c[0]), a[1].max(b[1]).max(c[1])];
    // Extent of origins and triangle together, squared.
    let ex = thi[0].max(hi[0]) - tlo[0].min(lo[0]);
    let ez = thi[1].max(hi[1]) - tlo[1].min(lo[1]);
    let r2 = ex * ex + ez * ez;
    let e = [
        [b[0] - a[0], b[1] - a[1]],
        [c[0] - a[0], c[1] - a[1]],
        [c[0] - b[0], c[1] - b[1]],
    ];
    let cross = e[0][0] * e[1][1] - e[0][1] * e[1][0];
    let l2 = e
        .iter()
        .map(|v| v[0] * v[0] + v[1] * v[1])
        .fold(0.0f32, f32::max);
    // Smallest height = |cross| / longest edge; compare squares.
    let wide = cross * cross > SAFE_WIDTH * SAFE_WIDTH * r2 * l2;
    let p = SAFE_PAD * r2.sqrt();
    wide.then_some(([tlo[0] - p, tlo[1] - p], [thi[0] + p, thi[1] + p]))
}
