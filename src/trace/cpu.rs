//! CPU twins of `shaders/occluded.wgsl` and `shaders/closest_hit.wgsl`: the same BVH walk and
//! the same watertight ray/triangle test (Woop, Benthin, Wald 2013), line for line, run in
//! parallel with rayon. They are the reference in tests and the fallback without an adapter.

use super::{HitRecord, Occlusion, Ray, Segment, NO_HIT};
use crate::bvh::{BvhNode, GpuTriangle};
use crate::scene::Tier;
use glam::{Vec3, Vec3A};
use rayon::prelude::*;

/// Traversal stack depth; the builder keeps trees shallower than this.
pub const STACK_SIZE: usize = 64;

/// Pads the far slab distance so a box test never culls a hit the triangle test accepts
/// (Ize 2013, "Robust BVH Ray Traversal": 1 + 2 gamma(3)).
const BOX_PAD: f32 = 1.000_000_4;

/// Per-ray constants of the watertight test. Mirrors `RayPrep` in `shaders/common.wgsl`.
///
/// Woop et al. permute the axes so the ray runs along +z and shear the triangle onto the ray's
/// plane: `A.x' = A[kx] - Sx A[kz]`, `A.y' = A[ky] - Sy A[kz]`, `A.z' = Sz A[kz]`. Each of
/// those is a dot product with a row holding one or two non-zero entries, and adding the exact
/// zeros changes no bit, so `rows` give the paper's values without per-component indexing.
#[derive(Clone, Copy, Debug)]
pub struct RayPrep {
    org: Vec3A,
    dir: Vec3A,
    inv: Vec3A,
    rows: [Vec3A; 3],
}

impl RayPrep {
    #[must_use]
    pub fn new(org: Vec3, dir: Vec3) -> RayPrep {
        let a = dir.abs();
        let kz = if a.x >= a.y && a.x >= a.z {
            0
        } else if a.y >= a.z {
            1
        } else {
            2
        };
        let mut kx = (kz + 1) % 3;
        let mut ky = (kx + 1) % 3;
        if dir[kz] < 0.0 {
            std::mem::swap(&mut kx, &mut ky);
        }
        let (sx, sy, sz) = (dir[kx] / dir[kz], dir[ky] / dir[kz], 1.0 / dir[kz]);
        let mut rows = [Vec3A::ZERO; 3];
        rows[0][kx] = 1.0;
        rows[0][kz] = -sx;
        rows[1][ky] = 1.0;
        rows[1][kz] = -sy;
        rows[2][kz] = sz;
        // Near-zero components get a tiny stand-in so the slab test never computes 0 * inf.
        let safe = |d: f32| {
            if d.abs() < 1e-30 {
                1e-30f32.copysign(d)
            } else {
                d
            }
        };
        RayPrep {
            org: org.into(),
            dir: dir.into(),
            inv: Vec3A::new(1.0 / safe(dir.x), 1.0 / safe(dir.y), 1.0 / safe(dir.z)),
            rows,
        }
    }
}

/// Watertight test: `Some(t)` for a hit with `0 < t < t_max`, else `None`.
/// Edges shared by two triangles never leak: at least one of them reports the hit.
#[must_use]
#[inline]
pub fn intersect(r: &RayPrep, tri: &GpuTriangle, t_max: f32) -> Option<f32> {
    let a = Vec3A::from(tri.v0) - r.org;
    let b = Vec3A::from(tri.v1) - r.org;
    let c = Vec3A::from(tri.v2) - r.org;
    let [r0, r1, r2] = r.rows;
    let (ax, ay) = (r0.dot(a), r1.dot(a));
    let (bx, by) = (r0.dot(b), r1.dot(b));
    let (cx, cy) = (r0.dot(c), r1.dot(c));
    let u = cx * by - cy * bx;
    let v = ax * cy - ay * cx;
    let w = bx * ay - by * ax;
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

/// Slab test: the entry distance if the ray meets the box before `t_max`, else `f32::INFINITY`.
#[must_use]
#[inline]
pub fn box_entry(r: &RayPrep, node: &BvhNode, t_max: f32) -> f32 {
    let t0 = (Vec3A::from(node.min) - r.org) * r.inv;
    let t1 = (Vec3A::from(node.max) - r.org) * r.inv;
    let near = t0.min(t1).max_element().max(0.0);
    let far = t0.max(t1).min_element().min(t_max) * BOX_PAD;
    if near <= far {
        near
    } else {
        f32::INFINITY
    }
}

/// Any blocking triangle with `0 < t < t_max`?
#[must_use]
pub fn any_hit(tier: &Tier, r: &RayPrep, t_max: f32, mask: u32) -> bool {
    let nodes = &tier.nodes;
    if nodes.is_empty() || box_entry(r, &nodes[0], t_max) == f32::INFINITY {
        return false;
    }
    let mut stack = [0u32; STACK_SIZE];
    let mut sp = 0;
    let mut node = 0usize;
    loop {
        let n = &nodes[node];
        if n.count > 0 {
            let first = n.left_or_first as usize;
            for tri in &tier.triangles[first..first + n.count as usize] {
                if tri.flags & mask != 0 && intersect(r, tri, t_max).is_some() {
                    return true;
                }
            }
        } else {
            let l = n.left_or_first as usize;
            let dl = box_entry(r, &nodes[l], t_max);
            let dr = box_entry(r, &nodes[l + 1], t_max);
            let (near, far, dn, df) = if dl <= dr {
                (l, l + 1, dl, dr)
            } else {
                (l + 1, l, dr, dl)
            };
            if dn != f32::INFINITY {
                if df != f32::INFINITY && sp < STACK_SIZE {
                    stack[sp] = far as u32;
                    sp += 1;
                }
                node = near;
                continue;
            }
        }
        if sp == 0 {
            return false;
        }
        sp -= 1;
        node = stack[sp] as usize;
    }
}

/// Improves `best` with the closest blocking triangle with `0 < t < t_max`; equal distances go to
/// the lower triangle id, so results do not depend on traversal or chunk order.
pub fn closest(tier: &Tier, r: &RayPrep, t_max: f32, mask: u32, best: &mut HitRecord) {
    let nodes = &tier.nodes;
    if nodes.is_empty() {
        return;
    }
    let limit = |best: &HitRecord| best.t.min(t_max);
    if box_entry(r, &nodes[0], limit(best)) == f32::INFINITY {
        return;
    }
    let mut stack = [0u32; STACK_SIZE];
    let mut sp = 0;
    let mut node = 0usize;
    loop {
        let n = &nodes[node];
        if n.count > 0 {
            let first = n.left_or_first as usize;
            for tri in &tier.triangles[first..first + n.count as usize] {
                if tri.flags & mask == 0 {
                    continue;
                }
                if let Some(t) = intersect(r, tri, t_max) {
                    if t < best.t || (t == best.t && tri.id < best.triangle) {
                        *best = hit_record(r, tri, t);
                    }
                }
            }
        } else {
            let l = n.left_or_first as usize;
            let dl = box_entry(r, &nodes[l], limit(best));
            let dr = box_entry(r, &nodes[l + 1], limit(best));
            let (near, far, dn, df) = if dl <= dr {
                (l, l + 1, dl, dr)
            } else {
                (l + 1, l, dr, dl)
            };
            if dn != f32::INFINITY {
                if df != f32::INFINITY && sp < STACK_SIZE {
                    stack[sp] = far as u32;
                    sp += 1;
                }
                node = near;
                continue;
            }
        }
        // Pop, skipping boxes that now start beyond the best hit.
        loop {
            if sp == 0 {
                return;
            }
            sp -= 1;
            node = stack[sp] as usize;
            if box_entry(r, &nodes[node], limit(best)) != f32::INFINITY {
                break;
            }
        }
    }
}

fn hit_record(r: &RayPrep, tri: &GpuTriangle, t: f32) -> HitRecord {
    let [a, b, c] = tri.vertices();
    let mut n = (b - a).cross(c - a).normalize_or_zero();
    if n.dot(r.dir.into()) > 0.0 {
        n = -n;
    }
    HitRecord {
        normal: n.into(),
        t,
        triangle: tri.id,
        material: tri.material,
        _pad: [0; 2],
    }
}

/// Kernel `occluded`: one bit per segment, set if any blocking triangle lies strictly between
/// the ends, over all tiers.
#[must_use]
pub fn occluded(tiers: &[&Tier], segments: &[Segment], mask: u32) -> Occlusion {
    let mut out = Occlusion::new(segments.len());
    out.words
        .par_iter_mut()
        .zip(segments.par_chunks(32))
        .for_each(|(word, chunk)| {
            for (i, s) in chunk.iter().enumerate() {
                let r = RayPrep::new(s.start(), s.end() - s.start());
                if tiers.iter().any(|t| any_hit(t, &r, 1.0, mask)) {
                    *word |= 1 << i;
                }
            }
        });
    out
}

/// Kernel `closest_hit`: the nearest blocking triangle per ray over all tiers.
#[must_use]
pub fn closest_hit(tiers: &[&Tier], rays: &[Ray], mask: u32) -> Vec<HitRecord> {
    rays.par_iter()
        .with_min_len(64)
        .map(|ray| {
            let r = RayPrep::new(ray.origin(), ray.dir());
            let mut best = HitRecord::MISS;
            for t in tiers {
                closest(t, &r, ray.t_max, mask, &mut best);
            }
            best
        })
        .collect()
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
