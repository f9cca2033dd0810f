//! Shared-origin packets for the CPU twin of `occluded`: runs of segments that start at one eye
//! (a sensor grid's, a viewshed's, a line-of-sight table's rows) are traced [`WIDTH`] at a time
//! down the four-wide tree, each node and triangle loaded once for the packet and tested for
//! all its rays in SIMD lanes (Wald, Slusallek, Benthin, Wagner, "Interactive Rendering with
//! Coherent Ray Tracing", 2001). A stack entry carries the lanes whose own slab test entered
//! it, so a lane tests exactly the leaves the single-ray walk tests, with the same slab test
//! and the same watertight triangle test, operation for operation: every bit equals the
//! single-ray walk's. The shared origin is subtracted from a box plane or a vertex once per
//! packet instead of once per ray.

use super::cpu::{prefetch, RayPrep, BOX_PAD, EDGE_SNAP, STACK_SIZE};
use crate::bvh::{GpuTriangle, WideNode};
use crate::scene::Tier;
use glam::Vec3A;

/// Rays per packet.
pub const WIDTH: usize = 16;

/// Runs shorter than this go to the single-ray walk: a packet of a few lanes costs about what
/// a full one does.
pub const MIN_RUN: usize = 6;

type Lanes = [f32; WIDTH];

/// Stack entries of a packet walk: `(child, count, lanes that entered it)`.
pub type PacketStack = [(u32, u32, u32); STACK_SIZE];

/// Up to [`WIDTH`] rays, one lane each, in structure-of-arrays form. A packet's walk is
/// `SHARED` when every ray starts at `org` (a box plane or a vertex is then taken from the
/// origin once per packet), else each lane takes its own origin from `orgs`: the same
/// operations either way, so the same bits.
struct Packet {
    org: Vec3A,
    orgs: [Lanes; 3],
    inv: [Lanes; 3],
    /// `rows[k][axis]`: the lanes' shear rows of the watertight test ([`RayPrep`]'s `rows`).
    rows: [[Lanes; 3]; 3],
    /// Each lane's limit: a hit counts where `0 < t < t_max`.
    t_max: Lanes,
    /// Lanes holding a ray.
    valid: u32,
}

// Lane loops index several arrays by lane: the form the vectorizer turns into one instruction
// per operation.
#[allow(clippy::needless_range_loop)]
impl Packet {
    /// `rays` (1 to [`WIDTH`]) with their limits `t_max(lane)` in lanes `0..rays.len()`; the
    /// other lanes repeat the first ray and are not valid.
    fn new(rays: &[RayPrep], t_max: impl Fn(usize) -> f32) -> Packet {
        debug_assert!(!rays.is_empty() && rays.len() <= WIDTH);
        let mut p = Packet {
            org: rays[0].org,
            orgs: [[0.0; WIDTH]; 3],
            inv: [[0.0; WIDTH]; 3],
            rows: [[[0.0; WIDTH]; 3]; 3],
            t_max: [0.0; WIDTH],
            valid: (1 << rays.len()) - 1,
        };
        for l in 0..WIDTH {
            let k = if l < rays.len() { l } else { 0 };
            let r = &rays[k];
            p.t_max[l] = t_max(k);
            for axis in 0..3 {
                p.orgs[axis][l] = r.org[axis];
                p.inv[axis][l] = r.inv[axis];
                for k in 0..3 {
                    p.rows[k][axis][l] = r.rows[k][axis];
                }
            }
        }
        p
    }

    /// Lanes whose slab test enters child `i` of `n` before their `t_max` and whose entry is
    /// not past it: `children_entry` and the any-hit walk's pop test, lane by lane. `max` and
    /// `min` are written as SSE's `maxps` and `minps` (the second operand when the first does
    /// not compare greater or less), which the single-ray test uses.
    #[inline(always)]
    fn enters<const SHARED: bool>(&self, n: &WideNode, i: usize) -> u32 {
        let o = self.org.to_array();
        let mx = |a: f32, b: f32| if a > b { a } else { b };
        let mn = |a: f32, b: f32| if a < b { a } else { b };
        let bound = |a: usize| (n.bounds[2 * a][i], n.bounds[2 * a + 1][i]);
        let shared = [0, 1, 2].map(|a| (bound(a).0 - o[a], bound(a).1 - o[a]));
        let mut hit = [false; WIDTH];
        for l in 0..WIDTH {
            let t_max = self.t_max[l];
            let slab = |a: usize| {
                let inv = self.inv[a][l];
                let d = if SHARED {
                    shared[a]
                } else {
                    (bound(a).0 - self.orgs[a][l], bound(a).1 - self.orgs[a][l])
                };
                let (lo, hi) = (d.0 * inv, d.1 * inv);
                if inv < 0.0 {
                    (hi, lo)
                } else {
                    (lo, hi)
                }
            };
            let ((nx, fx), (ny, fy), (nz, fz)) = (slab(0), slab(1), slab(2));
            let near = mx(mx(nx, ny), mx(nz, 0.0));
            let far = mn(mn(fx, fy), mn(fz, t_max)) * BOX_PAD;
            hit[l] = (near <= far) & !(near > t_max);
        }
        bits(&hit)
    }

    /// Lanes whose ray meets `tri` with `0 < t < t_max`: [`super::cpu::intersect`] lane by lane.
    #[inline(always)]
    fn hits<const SHARED: bool>(&self, tri: &GpuTriangle) -> u32 {
        let shared = [tri.v0, tri.v1, tri.v2].map(|v| Vec3A::from(v) - self.org);
        let [r0, r1, r2] = &self.rows;
        let mut hit = [false; WIDTH];
        for l in 0..WIDTH {
            let t_max = self.t_max[l];
            let [a, b, c] = if SHARED {
                shared
            } else {
                let o = Vec3A::new(self.orgs[0][l], self.orgs[1][l], self.orgs[2][l]);
                [tri.v0, tri.v1, tri.v2].map(|v| Vec3A::from(v) - o)
            };
            // Vec3A::dot's order: (x * x' + y * y') + z * z'.
            let dot = |r: &[Lanes; 3], v: Vec3A| (r[0][l] * v.x + r[1][l] * v.y) + r[2][l] * v.z;
            let (ax, ay) = (dot(r0, a), dot(r1, a));
            let (bx, by) = (dot(r0, b), dot(r1, b));
            let (cx, cy) = (dot(r0, c), dot(r1, c));
            let u = snap_edge(cx * by - cy * bx, cx * by, cy * bx);
            let v = snap_edge(ax * cy - ay * cx, ax * cy, ay * cx);
            let w = snap_edge(bx * ay - by * ax, bx * ay, by * ax);
            let outside = ((u < 0.0) | (v < 0.0) | (w < 0.0)) & ((u > 0.0) | (v > 0.0) | (w > 0.0));
            let det = u + v + w;
            let t_scaled = u * dot(r2, a) + v * dot(r2, b) + w * dot(r2, c);
            let sign = if det < 0.0 { -1.0 } else { 1.0 };
            let (ts, ds) = (t_scaled * sign, det * sign);
            hit[l] = !outside & (det != 0.0) & !((ts <= 0.0) | (ts >= t_max * ds));
        }
        bits(&hit)
    }
}

/// `snap_edge` of the single-ray test.
#[inline(always)]
fn snap_edge(d: f32, p: f32, q: f32) -> f32 {
    if d.abs() <= EDGE_SNAP * p.abs().max(q.abs()) {
        0.0
    } else {
        d
    }
}

/// The lanes of `hit` as a bit mask. On x86-64 one byte move mask (SSE2, always present):
/// the lane loop's shifts and ors compiled to a long horizontal reduction per test.
#[inline(always)]
fn bits(hit: &[bool; WIDTH]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_loadu_si128, _mm_movemask_epi8, _mm_slli_epi16};
        const _: () = assert!(WIDTH == 16);
        // SAFETY: `hit` is 16 bytes (a bool is one byte, 0 or 1), read unaligned; SSE2 is part
        // of x86-64. Shifting each byte's 1 into its top bit makes the move mask the lanes.
        unsafe {
            let v = _mm_loadu_si128(hit.as_ptr().cast());
            _mm_movemask_epi8(_mm_slli_epi16::<7>(v)) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    hit.iter()
        .enumerate()
        .fold(0, |m, (l, &h)| m | u32::from(h) << l)
}

/// Lanes of `p` (among `lanes`) that a triangle of `tier` matching `mask` blocks before their
/// `t_max`.
#[inline(always)]
fn any_hit<const SHARED: bool>(
    tier: &Tier,
    p: &Packet,
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
            for tri in &triangles[child as usize..][..count as usize] {
                if tri.flags & mask != 0 {
                    active &= !(p.hits::<SHARED>(tri) & m);
                    if active & m == 0 {
                        break;
                    }
                }
            }
            if active == 0 {
                break;
            }
            continue;
        }
        let n = &nodes[child as usize];
        for i in 0..4 {
            let e = p.enters::<SHARED>(n, i) & m;
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

/// What [`trace_runs`] traces: rays (one bit each) against tiers, up to `t_max`, blocked by
/// triangles matching `mask`.
pub(crate) struct Runs<'a> {
    pub tiers: &'a [&'a Tier],
    pub rays: &'a [RayPrep],
    pub t_max: f32,
    pub mask: u32,
}

/// Where [`trace_runs`] writes: its stack, the blocked rays' bits and the traced rays' bits.
pub(crate) struct RunsOut<'a> {
    pub stack: &'a mut PacketStack,
    pub words: &'a mut [u32],
    pub traced: &'a mut [u32],
}

/// Traces every run of at least [`MIN_RUN`] consecutive rays that share an origin (bit for
/// bit) in packets: sets the bits of blocked rays in `out.words` and of every ray it traced in
/// `out.traced`. Returns whether it traced any. Compiled for AVX-512 and AVX2 as well, which
/// run where the processor has them (sixteen lanes in one register or two; the answers are the
/// same either way).
pub(crate) fn trace_runs(job: &Runs, out: &mut RunsOut) -> bool {
    match simd() {
        // SAFETY: `simd` found the processor feature.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 => unsafe { trace_runs_avx512(job, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 => unsafe { trace_runs_avx2(job, out) },
        Simd::Plain => trace_runs_in(job, out),
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
/// feature as [`trace_runs`] is.
pub(crate) fn trace_each(job: &Each, stack: &mut PacketStack, words: &mut [u32]) {
    debug_assert_eq!(job.rays.len(), job.t_max.len());
    match simd() {
        // SAFETY: `simd` found the processor feature.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 => unsafe { trace_each_avx512(job, stack, words) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 => unsafe { trace_each_avx2(job, stack, words) },
        Simd::Plain => trace_each_in(job, stack, words),
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

/// `$inner` compiled for a processor feature as `$name` (callers check the feature first).
macro_rules! compiled_for {
    ($name:ident = $feature:literal: $inner:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feature)]
        unsafe fn $name($($arg: $ty),*) -> $ret {
            $inner($($arg),*)
        }
    };
}

compiled_for!(trace_runs_avx512 = "avx512f": trace_runs_in(job: &Runs, out: &mut RunsOut) -> bool);
compiled_for!(trace_runs_avx2 = "avx2": trace_runs_in(job: &Runs, out: &mut RunsOut) -> bool);
compiled_for!(trace_each_avx512 = "avx512f":
    trace_each_in(job: &Each, stack: &mut PacketStack, words: &mut [u32]) -> ());
compiled_for!(trace_each_avx2 = "avx2":
    trace_each_in(job: &Each, stack: &mut PacketStack, words: &mut [u32]) -> ());

#[inline(always)]
fn trace_each_in(job: &Each, stack: &mut PacketStack, words: &mut [u32]) {
    for base in (0..job.rays.len()).step_by(WIDTH) {
        let chunk = &job.rays[base..job.rays.len().min(base + WIDTH)];
        let p = Packet::new(chunk, |k| job.t_max[base + k]);
        let mut blocked = 0;
        for t in job.tiers {
            blocked |= any_hit::<false>(t, &p, job.mask, p.valid & !blocked, stack);
        }
        set_bits(words, base, chunk.len(), blocked);
    }
}

/// Sets bit `base + l` of `words` for each lane `l < n` set in `lanes`.
#[inline(always)]
fn set_bits(words: &mut [u32], base: usize, n: usize, lanes: u32) {
    for l in 0..n {
        let i = base + l;
        words[i / 32] |= (lanes >> l & 1) << (i % 32);
    }
}

#[inline(always)]
fn trace_runs_in(job: &Runs, out: &mut RunsOut) -> bool {
    let &Runs {
        tiers,
        rays,
        t_max,
        mask,
    } = job;
    let RunsOut {
        stack,
        words,
        traced,
    } = out;
    let key = |r: &RayPrep| r.org.to_array().map(f32::to_bits);
    let mut any = false;
    let mut start = 0;
    while start < rays.len() {
        let k = key(&rays[start]);
        let end = start + rays[start..].iter().take_while(|r| key(r) == k).count();
        if end - start >= MIN_RUN {
            any = true;
            for base in (start..end).step_by(WIDTH) {
                let chunk = &rays[base..end.min(base + WIDTH)];
                let p = Packet::new(chunk, |_| t_max);
                let mut blocked = 0;
                for t in tiers {
                    blocked |= any_hit::<true>(t, &p, mask, p.valid & !blocked, stack);
                }
                set_bits(traced, base, chunk.len(), u32::MAX);
                set_bits(words, base, chunk.len(), blocked);
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
        let rays: Vec<RayPrep> = segs
            .iter()
            .map(|s| RayPrep::new(s.start(), s.end() - s.start()))
            .collect();
        let tiers = scene.tiers();
        let words = segs.len().div_ceil(32);
        let (mut blocked, mut traced) = (vec![0u32; words], vec![0u32; words]);
        let mut stack = Box::new([(0, 0, 0); STACK_SIZE]);
        let job = Runs {
            tiers: &tiers,
            rays: &rays,
            t_max: 1.0,
            mask: 1,
        };
        let mut out = RunsOut {
            stack: &mut stack,
            words: &mut blocked,
            traced: &mut traced,
        };
        assert!(trace_runs(&job, &mut out));
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
}
