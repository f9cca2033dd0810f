//! The agreement contract between backends (ARCHITECTURE.md, "Agreement between backends"),
//! as tests check it. A GPU may fuse `a * b + c`, so answers are compared by contract, not bit
//! for bit:
//! - an occlusion bit may differ only for a segment that passes within [`eps`] of a triangle
//!   edge or ends within [`eps`] of a triangle ([`near_boundary`], a float64 check);
//! - two closest hits lie within [`eps`] of each other measured along the surface normal
//!   ([`same_depth`]: a few ulps of the coordinates, which at a grazing angle is many ulps of
//!   the distance), on the same triangle or a coincident one; another triangle only where the
//!   ray passes within [`eps`] of an edge;
//! - decisions built on them (cover choices, fates) are the same, or differ where such a
//!   boundary case decided them.
#![allow(dead_code)]

use glam::{DVec3, Vec3};
use sightline::bvh::GpuTriangle;
use sightline::cover::dense::DenseChoice;
use sightline::{Mask, Scene};

/// Metres two backends' positions and path lengths may differ by.
pub const TOLERANCE: f32 = 1e-3;

/// Relative size of the boundary band: [`eps`] is this times the largest coordinate magnitude
/// involved (at least 1 m).
pub const EPS_REL: f64 = 1e-5;

/// Whether two choices are the same decision: both none, or the same spot (within
/// [`TOLERANCE`]), posture and deciding check, and paths of the same length.
pub fn same_choice(a: &Option<DenseChoice>, b: &Option<DenseChoice>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.posture == b.posture
                && a.decided_by == b.decided_by
                && a.position.distance(b.position) <= TOLERANCE
                && (a.path_length - b.path_length).abs() <= TOLERANCE
        }
        _ => false,
    }
}

/// The boundary band around a segment from `a` to `b`: [`EPS_REL`] times the largest
/// coordinate magnitude of its ends, at least 1 m.
pub fn eps(a: Vec3, b: Vec3) -> f64 {
    let s = a.abs().max_element().max(b.abs().max_element()).max(1.0);
    EPS_REL * f64::from(s)
}

/// Whether hits at distances `ta` and `tb` along the ray from `origin` with direction `dir`
/// on surfaces of normal `n` agree: the two points lie within [`eps`] of each other measured
/// along the normal.
pub fn same_depth(origin: Vec3, dir: Vec3, ta: f32, tb: f32, n: Vec3) -> bool {
    let far = origin + dir * ta.max(tb);
    let along = (f64::from(ta) - f64::from(tb)).abs() * f64::from(dir.dot(n)).abs();
    along <= eps(origin, far)
}

/// The scene's triangles matching `mask`, every tier.
pub fn triangles(scene: &Scene, mask: Mask) -> Vec<GpuTriangle> {
    scene
        .tiers()
        .iter()
        .flat_map(|t| t.triangles.iter().copied())
        .filter(|t| t.flags & mask.bits() != 0)
        .collect()
}

/// Whether the segment from `a` to `b` passes within [`eps`] of an edge of one of `tris`, or
/// ends within it of one of them (float64): where the contract lets backends differ.
pub fn near_boundary(tris: &[GpuTriangle], a: Vec3, b: Vec3) -> bool {
    near_boundary_within(tris, a, b, eps(a, b))
}

/// [`near_boundary`] with a band of `e` metres.
pub fn near_boundary_within(tris: &[GpuTriangle], a: Vec3, b: Vec3, e: f64) -> bool {
    let (pa, pb) = (a.as_dvec3(), b.as_dvec3());
    let (lo, hi) = (pa.min(pb) - e, pa.max(pb) + e);
    tris.iter().any(|t| {
        let v = t.vertices().map(|v| v.as_dvec3());
        let (tlo, thi) = (v[0].min(v[1]).min(v[2]), v[0].max(v[1]).max(v[2]));
        if tlo.cmpgt(hi).any() || thi.cmplt(lo).any() {
            return false;
        }
        (0..3).any(|k| segment_distance(pa, pb, v[k], v[(k + 1) % 3]) <= e)
            || point_triangle_distance(pa, v) <= e
            || point_triangle_distance(pb, v) <= e
    })
}

/// Distance between segments `p1 q1` and `p2 q2` (Ericson, Real-Time Collision Detection
/// 5.1.9), in float64.
pub fn segment_distance(p1: DVec3, q1: DVec3, p2: DVec3, q2: DVec3) -> f64 {
    let (d1, d2, r) = (q1 - p1, q2 - p2, p1 - p2);
    let (a, e, f) = (d1.dot(d1), d2.dot(d2), d2.dot(r));
    if a <= 1e-18 && e <= 1e-18 {
        return (p1 - p2).length();
    }
    let (s, t) = if a <= 1e-18 {
        (0.0, (f / e).clamp(0.0, 1.0))
    } else if e <= 1e-18 {
        ((-d1.dot(r) / a).clamp(0.0, 1.0), 0.0)
    } else {
        let (b, c) = (d1.dot(d2), d1.dot(r));
        let denom = a * e - b * b;
        let s0 = if denom != 0.0 {
            ((b * f - c * e) / denom).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let t0 = (b * s0 + f) / e;
        if t0 < 0.0 {
            ((-c / a).clamp(0.0, 1.0), 0.0)
        } else if t0 > 1.0 {
            (((b - c) / a).clamp(0.0, 1.0), 1.0)
        } else {
            (s0, t0)
        }
    };
    ((p1 + d1 * s) - (p2 + d2 * t)).length()
}

/// Distance from `p` to the triangle `v` (its plane where `p` projects inside, else its
/// nearest edge), in float64.
pub fn point_triangle_distance(p: DVec3, v: [DVec3; 3]) -> f64 {
    let n = (v[1] - v[0]).cross(v[2] - v[0]);
    let edges = (0..3)
        .map(|k| segment_distance(p, p, v[k], v[(k + 1) % 3]))
        .fold(f64::INFINITY, f64::min);
    if n.length_squared() <= 1e-30 {
        return edges;
    }
    let n = n.normalize();
    let q = p - n * n.dot(p - v[0]);
    let inside = (0..3).all(|k| (v[(k + 1) % 3] - v[k]).cross(q - v[k]).dot(n) >= 0.0);
    if inside {
        n.dot(p - v[0]).abs()
    } else {
        edges
    }
}

/// Whether the vertical line through `(x, z)` meets the scene near height `y` where a last
/// bit may decide which surface a downward ray names: two triangles within [`eps`] of each
/// other at that height (coincident faces: a crate's bottom on the ground), or an edge within
/// [`eps`] of the line there. Float64.
pub fn vertical_ambiguous(tris: &[GpuTriangle], x: f32, z: f32, y: f32) -> bool {
    let p = DVec3::new(f64::from(x), f64::from(y), f64::from(z));
    let e = eps(Vec3::new(x, y, z), Vec3::new(x, y, z));
    let mut near = 0;
    for t in tris {
        let v = t.vertices().map(|v| v.as_dvec3());
        let (lo, hi) = (v[0].min(v[1]).min(v[2]), v[0].max(v[1]).max(v[2]));
        if lo.x > p.x + e || hi.x < p.x - e || lo.z > p.z + e || hi.z < p.z - e {
            continue;
        }
        if lo.y > p.y + e || hi.y < p.y - e {
            continue;
        }
        let (top, bottom) = (p + DVec3::Y * 2.0 * e, p - DVec3::Y * 2.0 * e);
        if (0..3).any(|k| segment_distance(top, bottom, v[k], v[(k + 1) % 3]) <= e) {
            return true;
        }
        if point_triangle_distance(p, v) <= 2.0 * e {
            near += 1;
        }
    }
    near >= 2
}

/// Whether the point `p` (a closest hit) lies where a last bit may decide which triangle a ray
/// names: within [`eps`] of two triangles (coincident faces, which may face opposite ways: two
/// solids touching) or of a triangle's edge. Float64. The general form of
/// [`vertical_ambiguous`], for rays in any direction.
pub fn point_ambiguous(tris: &[GpuTriangle], p: Vec3) -> bool {
    let e = eps(p, p);
    let q = p.as_dvec3();
    let mut near = 0;
    for t in tris {
        let v = t.vertices().map(|v| v.as_dvec3());
        let (lo, hi) = (v[0].min(v[1]).min(v[2]), v[0].max(v[1]).max(v[2]));
        if (lo - 2.0 * e).cmpgt(q).any() || (hi + 2.0 * e).cmplt(q).any() {
            continue;
        }
        if (0..3).any(|k| segment_distance(q, q, v[k], v[(k + 1) % 3]) <= e) {
            return true;
        }
        if point_triangle_distance(q, v) <= 2.0 * e {
            near += 1;
        }
    }
    near >= 2
}

/// Whether the eye lies in the plane of a triangle of `tris` (within 1e-4 m, float64) that is
/// no farther from it than `reach`: the face is seen edge-on, its image a line of pixels
/// through the view that either side of the last bit may call in or out.
pub fn seen_edge_on(tris: &[GpuTriangle], eye: Vec3, reach: f64) -> bool {
    let p = eye.as_dvec3();
    tris.iter().any(|t| {
        let v = [t.v0, t.v1, t.v2].map(|a| Vec3::from(a).as_dvec3());
        let n = (v[1] - v[0]).cross(v[2] - v[0]);
        n.length_squared() > 1e-30
            && n.normalize().dot(p - v[0]).abs() <= 1e-4
            && point_triangle_distance(p, v) <= reach
    })
}
