//! The built-in target: a low-polygon humanoid per posture, 452 triangles, deterministic.
//!
//! Local frame: feet on `y = 0`, facing `+Z`, `+X` to the body's left; every length is a
//! fraction of `height`. Each body part is its own closed solid (UV sphere head, elliptic
//! cylinder torso, box pelvis and feet, eight-sided capped cylinders for neck and limbs);
//! parts overlap like a mannequin's, which the stencil counting tolerates (Darken, McCue and Guerrero: overdraw
//! keeps a pixel at 127 or above once any target fragment passed the depth test).
//!
//! | posture | pose | top of the head |
//! |---|---|---|
//! | standing | upright, arms down | exactly `height` (the standing bounds span `0..height`) |
//! | crouching | squatting, knees forward, torso leaning in, forearms raised | `0.62 height` |
//! | prone | lying along `+Z` (head toward the facing direction), on the elbows | `0.235 height` |

use crate::agent::Posture;
use crate::scene::Mesh;
use glam::Vec3;

/// Sides of the limb and neck cylinders.
const LIMB_SIDES: u32 = 8;
/// Sides of the torso's elliptic cylinder.
const TORSO_SIDES: u32 = 12;
/// Head sphere: segments around, rings from pole to pole.
const HEAD_SEGMENTS: u32 = 8;
const HEAD_RINGS: u32 = 6;
/// Head radius as a fraction of the height.
const HEAD: f32 = 0.065;

/// One posture's joints (fractions of the height) before scaling.
struct Pose {
    head: Vec3,
    /// Neck from, to.
    neck: [Vec3; 2],
    /// Torso axis from pelvis to chest top.
    torso: [Vec3; 2],
    pelvis: Vec3,
    /// Hip, knee, ankle of the left leg (x > 0); the right leg mirrors x.
    leg: [Vec3; 3],
    /// Shoulder, elbow, wrist of the left arm.
    arm: [Vec3; 3],
    /// The left foot's box: min and max corners.
    foot: [Vec3; 2],
}

fn pose(posture: Posture) -> Pose {
    let v = Vec3::new;
    match posture {
        Posture::Standing => Pose {
            head: v(0.0, 1.0 - HEAD, 0.0),
            neck: [v(0.0, 0.79, 0.0), v(0.0, 0.88, 0.0)],
            torso: [v(0.0, 0.52, 0.0), v(0.0, 0.81, 0.0)],
            pelvis: v(0.0, 0.51, 0.0),
            leg: [v(0.09, 0.5, 0.0), v(0.09, 0.27, 0.01), v(0.09, 0.05, 0.0)],
            arm: [v(0.2, 0.78, 0.0), v(0.22, 0.62, -0.01), v(0.22, 0.46, 0.02)],
            foot: [v(0.045, 0.0, -0.04), v(0.135, 0.05, 0.12)],
        },
        Posture::Crouching => Pose {
            head: v(0.0, 0.62 - HEAD, 0.1),
            neck: [v(0.0, 0.46, 0.05), v(0.0, 0.52, 0.09)],
            torso: [v(0.0, 0.3, -0.03), v(0.0, 0.49, 0.05)],
            pelvis: v(0.0, 0.3, -0.03),
            leg: [v(0.09, 0.29, -0.05), v(0.1, 0.28, 0.2), v(0.09, 0.05, 0.0)],
            arm: [v(0.2, 0.47, 0.05), v(0.2, 0.33, 0.15), v(0.15, 0.36, 0.3)],
            foot: [v(0.045, 0.0, -0.04), v(0.135, 0.05, 0.12)],
        },
        Posture::Prone => Pose {
            head: v(0.0, 0.17, 0.41),
            neck: [v(0.0, 0.13, 0.3), v(0.0, 0.16, 0.36)],
            torso: [v(0.0, 0.09, 0.0), v(0.0, 0.12, 0.28)],
            pelvis: v(0.0, 0.075, -0.02),
            leg: [
                v(0.09, 0.07, -0.05),
                v(0.11, 0.05, -0.28),
                v(0.12, 0.05, -0.5),
            ],
            arm: [v(0.19, 0.12, 0.26), v(0.2, 0.04, 0.38), v(0.1, 0.08, 0.5)],
            foot: [v(0.075, 0.0, -0.56), v(0.165, 0.1, -0.5)],
        },
    }
}

/// The humanoid target in `posture`, scaled to `height` metres (standing top of the head),
/// in the local frame of the module docs, material 0. 452 triangles in every posture.
#[must_use]
pub fn humanoid(posture: Posture, height: f32) -> Mesh {
    let p = pose(posture);
    let h = height;
    let s = |v: Vec3| v * h;
    let mirror = |v: Vec3| Vec3::new(-v.x, v.y, v.z);
    let mut m = Mesh::default();
    // The standing head's top pole sits at exactly `height`, so the standing bounds are
    // exactly 0..height (tests rely on the centre being at height / 2).
    let top = if posture == Posture::Standing {
        h
    } else {
        (p.head.y + HEAD) * h
    };
    sphere(&mut m, s(p.head), HEAD * h, top);
    cylinder(
        &mut m,
        s(p.neck[0]),
        s(p.neck[1]),
        [0.035 * h; 2],
        LIMB_SIDES,
    );
    cylinder(
        &mut m,
        s(p.torso[0]),
        s(p.torso[1]),
        [0.17 * h, 0.09 * h],
        TORSO_SIDES,
    );
    let half = Vec3::new(0.16, 0.05, 0.075) * h;
    cuboid(&mut m, s(p.pelvis) - half, s(p.pelvis) + half);
    for side in [false, true] {
        let f = |v: Vec3| if side { s(mirror(v)) } else { s(v) };
        cylinder(&mut m, f(p.leg[0]), f(p.leg[1]), [0.07 * h; 2], LIMB_SIDES);
        cylinder(&mut m, f(p.leg[1]), f(p.leg[2]), [0.05 * h; 2], LIMB_SIDES);
        cylinder(&mut m, f(p.arm[0]), f(p.arm[1]), [0.04 * h; 2], LIMB_SIDES);
        cylinder(&mut m, f(p.arm[1]), f(p.arm[2]), [0.035 * h; 2], LIMB_SIDES);
        let (a, b) = (f(p.foot[0]), f(p.foot[1]));
        cuboid(&mut m, a.min(b), a.max(b));
    }
    m
}

fn push_vertex(m: &mut Mesh, v: Vec3) -> u32 {
    m.positions.push(v);
    m.positions.len() as u32 - 1
}

fn push_tri(m: &mut Mesh, a: u32, b: u32, c: u32) {
    m.triangles.push([a, b, c]);
    m.materials.push(0);
}

/// A UV sphere with poles on the y axis; the top pole at `top` (normally `centre.y + r`).
fn sphere(m: &mut Mesh, centre: Vec3, r: f32, top: f32) {
    let north = push_vertex(m, Vec3::new(centre.x, top, centre.z));
    let south = push_vertex(m, centre - Vec3::Y * r);
    let mut rings = Vec::new();
    for i in 1..HEAD_RINGS {
        let phi = std::f32::consts::PI * i as f32 / HEAD_RINGS as f32;
        let ring: Vec<u32> = (0..HEAD_SEGMENTS)
            .map(|j| {
                let theta = std::f32::consts::TAU * j as f32 / HEAD_SEGMENTS as f32;
                let d = Vec3::new(phi.sin() * theta.cos(), phi.cos(), phi.sin() * theta.sin());
                push_vertex(m, centre + d * r)
            })
            .collect();
        rings.push(ring);
    }
    let n = HEAD_SEGMENTS as usize;
    for j in 0..n {
        let k = (j + 1) % n;
        push_tri(m, north, rings[0][k], rings[0][j]);
        let last = &rings[rings.len() - 1];
        push_tri(m, south, last[j], last[k]);
        for w in rings.windows(2) {
            push_tri(m, w[0][j], w[0][k], w[1][k]);
            push_tri(m, w[0][j], w[1][k], w[1][j]);
        }
    }
}

/// A capped cylinder from `a` to `b` with an elliptic section: `radii[0]` along the body's
/// side (x) axis, `radii[1]` across it.
fn cylinder(m: &mut Mesh, a: Vec3, b: Vec3, radii: [f32; 2], sides: u32) {
    let axis = (b - a).normalize();
    let side = (Vec3::X - axis * axis.dot(Vec3::X)).normalize_or(Vec3::Z);
    let across = axis.cross(side);
    let ring = |m: &mut Mesh, c: Vec3| -> Vec<u32> {
        (0..sides)
            .map(|j| {
                let theta = std::f32::consts::TAU * j as f32 / sides as f32;
                let d = side * (radii[0] * theta.cos()) + across * (radii[1] * theta.sin());
                push_vertex(m, c + d)
            })
            .collect()
    };
    let (ra, rb) = (ring(m, a), ring(m, b));
    let (ca, cb) = (push_vertex(m, a), push_vertex(m, b));
    let n = sides as usize;
    for j in 0..n {
        let k = (j + 1) % n;
        push_tri(m, ra[j], ra[k], rb[k]);
        push_tri(m, ra[j], rb[k], rb[j]);
        push_tri(m, ca, ra[k], ra[j]);
        push_tri(m, cb, rb[j], rb[k]);
    }
}

/// An axis-aligned box.
fn cuboid(m: &mut Mesh, lo: Vec3, hi: Vec3) {
    let c: Vec<u32> = (0..8)
        .map(|i| {
            let pick = |bit: u32, l: f32, h: f32| if i >> bit & 1 == 1 { h } else { l };
            push_vertex(
                m,
                Vec3::new(
                    pick(0, lo.x, hi.x),
                    pick(1, lo.y, hi.y),
                    pick(2, lo.z, hi.z),
                ),
            )
        })
        .collect();
    // Faces as corner-index quads (bit 0: x, bit 1: y, bit 2: z).
    for q in [
        [0, 2, 3, 1],
        [4, 5, 7, 6],
        [0, 1, 5, 4],
        [2, 6, 7, 3],
        [0, 4, 6, 2],
        [1, 3, 7, 5],
    ] {
        push_tri(m, c[q[0]], c[q[1]], c[q[2]]);
        push_tri(m, c[q[0]], c[q[2]], c[q[3]]);
    }
}
