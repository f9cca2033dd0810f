//! Tessellation helpers shared by the scenes: grids, closed hexahedra and blobs, walls with
//! rectangular holes, wheels, vehicles and door leaves.
//!
//! Closed solids are watertight: every vertex on an edge shared by two faces is computed by
//! the same expression from the same parameters, so neighbouring faces agree bit for bit.

use super::super::Mesh;
use super::{Builder, Mat, Rng};
use glam::{Affine3A, Vec2, Vec3, Vec3A};

/// Number of segments for a span of `len` metres at `density` segments per metre (at least 1).
pub(crate) fn segs(len: f32, density: f32) -> u32 {
    ((len * density - 1e-3).ceil().max(1.0)) as u32
}

/// Appends an `nu x nv` grid of quads with corners `p(i, j)`; the front side is
/// `dp/di x dp/dj`. `mat(i, j)` gives each cell's material.
pub(crate) fn grid(
    mesh: &mut Mesh,
    nu: u32,
    nv: u32,
    p: impl Fn(u32, u32) -> Vec3,
    mat: impl Fn(u32, u32) -> u32,
) {
    let base = mesh.positions.len() as u32;
    for j in 0..=nv {
        for i in 0..=nu {
            mesh.positions.push(p(i, j));
        }
    }
    let at = |i: u32, j: u32| base + j * (nu + 1) + i;
    for j in 0..nv {
        for i in 0..nu {
            let m = mat(i, j);
            let (a, b, c, d) = (at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1));
            mesh.triangles.push([a, b, c]);
            mesh.triangles.push([a, c, d]);
            mesh.materials.extend_from_slice(&[m, m]);
        }
    }
}

/// `i / n` in `[0, 1]`, exact at both ends.
fn frac(i: u32, n: u32) -> f32 {
    if i >= n {
        1.0
    } else {
        i as f32 / n as f32
    }
}

/// `lo..hi` split in `n`, exact at both ends.
fn span(lo: f32, hi: f32, i: u32, n: u32) -> f32 {
    if i >= n {
        hi
    } else {
        lo + (hi - lo) * (i as f32 / n as f32)
    }
}

/// A closed solid: the image of the unit cube under `map`, with `n[k]` segments along cube
/// axis `k`. `mats` are per face, in order -x, +x, -y, +y, -z, +z. Faces point outwards when
/// `map` preserves orientation.
pub(crate) fn closed_map(
    mesh: &mut Mesh,
    n: [u32; 3],
    mats: [u32; 6],
    map: impl Fn([f32; 3]) -> Vec3,
) {
    for a in 0..3 {
        let (b, c) = ((a + 1) % 3, (a + 2) % 3);
        for side in 0..2u32 {
            // +face: u along b, v along c (e_b x e_c = e_a); -face swaps them.
            let (ub, vc) = if side == 1 { (b, c) } else { (c, b) };
            let point = |i: u32, j: u32| {
                let mut t = [0.0; 3];
                t[a] = side as f32;
                t[ub] = frac(i, n[ub]);
                t[vc] = frac(j, n[vc]);
                map(t)
            };
            let m = mats[2 * a + side as usize];
            grid(mesh, n[ub], n[vc], point, |_, _| m);
        }
    }
}

/// A hexahedron with planar faces from 8 corners indexed `x | y << 1 | z << 2` (bit set = the
/// far side on that axis).
pub(crate) fn hexa(mesh: &mut Mesh, c: &[Vec3; 8], density: f32, mats: [u32; 6]) {
    let len = |i: usize, j: usize| c[i].distance(c[j]);
    let n = [
        segs(len(0, 1).max(len(6, 7)), density),
        segs(len(0, 2).max(len(5, 7)), density),
        segs(len(0, 4).max(len(3, 7)), density),
    ];
    closed_map(mesh, n, mats, |t| {
        let x = [0, 2, 4, 6].map(|k| c[k].lerp(c[k + 1], t[0]));
        let y0 = x[0].lerp(x[1], t[1]);
        let y1 = x[2].lerp(x[3], t[1]);
        y0.lerp(y1, t[2])
    });
}

/// The 8 corners of an axis-aligned box.
pub(crate) fn box_corners(min: Vec3, max: Vec3) -> [Vec3; 8] {
    std::array::from_fn(|k| {
        Vec3::new(
            if k & 1 == 0 { min.x } else { max.x },
            if k & 2 == 0 { min.y } else { max.y },
            if k & 4 == 0 { min.z } else { max.z },
        )
    })
}

/// A closed axis-aligned box, transformed.
pub(crate) fn cuboid(mesh: &mut Mesh, min: Vec3, max: Vec3, density: f32, mat: u32, xf: Affine3A) {
    let c = box_corners(min, max).map(|p| xf.transform_point3(p));
    hexa(mesh, &c, density, [mat; 6]);
}

/// Random low-frequency radial displacement for rocks and bushes.
#[derive(Clone, Debug)]
pub(crate) struct Bumps(Vec<(Vec3, f32, f32, f32)>);

impl Bumps {
    pub(crate) fn new(rng: &mut Rng, amplitude: f32) -> Bumps {
        Bumps(
            (0..6)
                .map(|_| {
                    let d = Vec3::new(
                        rng.range(-1.0, 1.0),
                        rng.range(-1.0, 1.0),
                        rng.range(-1.0, 1.0),
                    );
                    let d = d.try_normalize().unwrap_or(Vec3::X);
                    (
                        d,
                        rng.range(1.5, 3.5),
                        rng.range(0.0, 6.3),
                        amplitude * rng.range(0.3, 1.0),
                    )
                })
                .collect(),
        )
    }
    fn at(&self, dir: Vec3) -> f32 {
        1.0 + self
            .0
            .iter()
            .map(|&(d, f, ph, a)| a * (f * dir.dot(d) + ph).sin())
            .sum::<f32>()
            / 3.0
    }
}

/// A closed, roughly convex blob: a subdivided cube pushed onto an ellipsoid with radii
/// `radii`, displaced by `bumps`. `n` segments per cube edge.
pub(crate) fn blob(mesh: &mut Mesh, center: Vec3, radii: Vec3, n: u32, bumps: &Bumps, mat: u32) {
    closed_map(mesh, [n; 3], [mat; 6], |t| {
        let dir = (Vec3::from(t) * 2.0 - 1.0).normalize();
        center + dir * radii * bumps.at(dir)
    });
}

/// A closed `sides`-gon prism (a wheel), axis along local Z, centred on `center`.
pub(crate) fn wheel(
    mesh: &mut Mesh,
    center: Vec3,
    radius: f32,
    half_width: f32,
    sides: u32,
    mat: u32,
) {
    let ring = |i: u32, z: f32| {
        let a = std::f32::consts::TAU * (i % sides) as f32 / sides as f32;
        center + Vec3::new(radius * a.cos(), radius * a.sin(), z)
    };
    let (lo, hi) = (-half_width, half_width);
    grid(
        mesh,
        sides,
        1,
        |i, j| ring(i, if j == 0 { lo } else { hi }),
        |_, _| mat,
    );
    for (z, flip) in [(hi, false), (lo, true)] {
        let c = center + Vec3::Z * z;
        for i in 0..sides {
            let (p, q) = (ring(i, z), ring(i + 1, z));
            if flip {
                mesh.push_triangle(c, q, p, mat);
            } else {
                mesh.push_triangle(c, p, q, mat);
            }
        }
    }
}

/// A rectangular hole in a wall, in wall coordinates (`u` along, `v` up), and whether it is
/// glazed with bullet-proof glass.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hole {
    pub u0: f32,
    pub u1: f32,
    pub v0: f32,
    pub v1: f32,
    pub glass: bool,
}

/// A closed wall slab `u in [0, len]`, `v in [0, height]`, `w in [-thick/2, thick/2]` with
/// rectangular holes through it, transformed by `xf`. Built as the surface of a union of grid
/// cells, so it has no T-junctions and stays closed around every hole. Glazed holes get a 3 cm
/// pane of `glass` in the middle of the wall.
#[allow(clippy::too_many_arguments)]
pub(crate) fn wall(
    b: &mut Builder,
    len: f32,
    height: f32,
    thick: f32,
    holes: &[Hole],
    mat: u32,
    xf: Affine3A,
) {
    let density = b.density;
    let cells = WallCells::new(len, height, holes);
    let faces = Faces {
        density,
        nw: segs(thick, density),
        mat,
    };
    let mut m = Mesh::default();
    cells.surface(&mut m, &faces, [-thick / 2.0, thick / 2.0]);
    for h in holes.iter().filter(|h| h.glass) {
        let glass = b.mat(Mat::Glass);
        let c = box_corners(Vec3::new(h.u0, h.v0, -0.015), Vec3::new(h.u1, h.v1, 0.015));
        hexa(&mut m, &c, density, [glass; 6]);
    }
    b.level.append(&m, xf);
}

/// A wall's face of `len` by `height` cut into cells at every hole's edges (`us` along,
/// `vs` up); a cell is solid unless its centre lies in a hole.
struct WallCells<'a> {
    us: Vec<f32>,
    vs: Vec<f32>,
    holes: &'a [Hole],
    len: f32,
    height: f32,
}

impl<'a> WallCells<'a> {
    fn new(len: f32, height: f32, holes: &'a [Hole]) -> WallCells<'a> {
        let mut us = vec![0.0, len];
        let mut vs = vec![0.0, height];
        for h in holes {
            us.extend([h.u0.clamp(0.0, len), h.u1.clamp(0.0, len)]);
            vs.extend([h.v0.clamp(0.0, height), h.v1.clamp(0.0, height)]);
        }
        for v in [&mut us, &mut vs] {
            v.sort_by(f32::total_cmp);
            v.dedup_by(|a, b| (*a - *b).abs() < 1e-4);
        }
        WallCells {
            us,
            vs,
            holes,
            len,
            height,
        }
    }

    /// Whether cell `(i, j)` is wall (cells outside the face are not).
    fn solid(&self, i: isize, j: isize) -> bool {
        let (us, vs) = (&self.us, &self.vs);
        let (nu, nv) = (us.len() - 1, vs.len() - 1);
        if i < 0 || j < 0 || i >= nu as isize || j >= nv as isize {
            return false;
        }
        let (cu, cv) = (
            (us[i as usize] + us[i as usize + 1]) / 2.0,
            (vs[j as usize] + vs[j as usize + 1]) / 2.0,
        );
        !self
            .holes
            .iter()
            .any(|h| cu > h.u0 && cu < h.u1 && cv > h.v0 && cv < h.v1)
    }

    /// The surface of the union of the solid cells, `w` the wall's two faces: front and back
    /// of every solid cell, and a side wherever a solid cell meets an open one or the edge.
    fn surface(&self, m: &mut Mesh, faces: &Faces, w: [f32; 2]) {
        let (us, vs) = (&self.us, &self.vs);
        let (nu, nv) = (us.len() - 1, vs.len() - 1);
        for j in 0..nv as isize {
            let (v0, v1) = (vs[j as usize], vs[j as usize + 1]);
            for i in 0..nu as isize {
                let (u0, u1) = (us[i as usize], us[i as usize + 1]);
                let solid = self.solid(i, j);
                if solid {
                    // Faces are listed as (axis, at, range on next axis, range on the one after).
                    faces.rect(m, 2, w[1], [u0, u1], [v0, v1], false);
                    faces.rect(m, 2, w[0], [u0, u1], [v0, v1], true);
                }
                if self.solid(i - 1, j) != solid {
                    faces.rect(m, 0, u0, [v0, v1], w, solid);
                }
                if self.solid(i, j - 1) != solid {
                    faces.rect(m, 1, v0, w, [u0, u1], solid);
                }
            }
            if self.solid(nu as isize - 1, j) {
                faces.rect(m, 0, self.len, [v0, v1], w, false);
            }
        }
        for i in 0..nu as isize {
            if self.solid(i, nv as isize - 1) {
                faces.rect(
                    m,
                    1,
                    self.height,
                    w,
                    [us[i as usize], us[i as usize + 1]],
                    false,
                );
            }
        }
    }
}

/// How a wall's faces are gridded: the density, the segments across the thickness (`nw`)
/// and the material.
struct Faces {
    density: f32,
    nw: u32,
    mat: u32,
}

impl Faces {
    /// An axis-aligned rectangle: axis `a` fixed at `at`, spanning `r1` on axis (a+1)%3 and
    /// `r2` on (a+2)%3; front along +a unless `neg`.
    fn rect(&self, m: &mut Mesh, a: usize, at: f32, r1: [f32; 2], r2: [f32; 2], neg: bool) {
        let (density, nw, mat) = (self.density, self.nw, self.mat);
        let n1 = if (a + 1) % 3 == 2 {
            nw
        } else {
            segs(r1[1] - r1[0], density)
        };
        let n2 = if (a + 2) % 3 == 2 {
            nw
        } else {
            segs(r2[1] - r2[0], density)
        };
        let pt = |i: u32, j: u32| {
            let mut p = [0.0; 3];
            p[a] = at;
            p[(a + 1) % 3] = span(r1[0], r1[1], i, n1);
            p[(a + 2) % 3] = span(r2[0], r2[1], j, n2);
            Vec3::from(p)
        };
        if neg {
            grid(m, n2, n1, |i, j| pt(j, i), |_, _| mat);
        } else {
            grid(m, n1, n2, pt, |_, _| mat);
        }
    }
}

/// A placement whose local +X points along `dir` (horizontal), +Y up, at `origin`. Exact for
/// axis directions.
pub(crate) fn frame(origin: Vec3, dir: Vec2) -> Affine3A {
    let x = Vec3::new(dir.x, 0.0, dir.y).normalize();
    Affine3A::from_cols(x.into(), Vec3A::Y, x.cross(Vec3::Y).into(), origin.into())
}

/// A parked vehicle in local space: length along +X, ground at y = 0, centred on the origin.
/// The body rides on four wheels with `clearance` metres of open space beneath it.
pub(crate) fn vehicle(
    b: &mut Builder,
    length: f32,
    width: f32,
    clearance: f32,
    truck: bool,
) -> Mesh {
    let (metal, tire) = (b.mat(Mat::Metal), b.mat(Mat::Tire));
    let d = b.density;
    let mut m = Mesh::default();
    let (hl, hw) = (length / 2.0, width / 2.0);
    let body_top = clearance + if truck { 1.0 } else { 0.7 };
    cuboid(
        &mut m,
        Vec3::new(-hl, clearance, -hw),
        Vec3::new(hl, body_top, hw),
        d,
        metal,
        Affine3A::IDENTITY,
    );
    // Cabin (a car's greenhouse or a truck's cargo box), sloped at the front and back for cars.
    let (top, x0, x1, inset) = if truck {
        (body_top + 1.3, -hl, hl * 0.35, 0.0)
    } else {
        (body_top + 0.5, -hl * 0.55, hl * 0.45, 0.35)
    };
    let c: [Vec3; 8] = std::array::from_fn(|k| {
        let up = k & 2 != 0;
        let far = k & 1 != 0;
        let x = match (far, up) {
            (false, false) => x0,
            (true, false) => x1,
            (false, true) => x0 + inset,
            (true, true) => x1 - inset,
        };
        let z = if k & 4 == 0 { -hw * 0.9 } else { hw * 0.9 };
        Vec3::new(x, if up { top } else { body_top }, z)
    });
    hexa(&mut m, &c, d, [metal; 6]);
    let r = if truck { 0.5 } else { 0.36 };
    let sides = 8 * segs(1.0, d / 2.0);
    for (sx, sz) in [(-1.0, -1.0), (-1.0, 1.0), (1.0, -1.0), (1.0, 1.0)] {
        let c = Vec3::new(sx * hl * 0.65, r, sz * (hw - 0.12));
        wheel(&mut m, c, r, 0.12, sides, tire);
    }
    m
}

/// A door leaf in local space: hinge along the local Y axis, leaf along +X.
pub(crate) fn door_leaf(b: &mut Builder, width: f32, height: f32) -> Mesh {
    let door = b.mat(Mat::Door);
    let mut m = Mesh::default();
    cuboid(
        &mut m,
        Vec3::new(0.01, 0.0, -0.025),
        Vec3::new(width - 0.01, height, 0.025),
        b.density,
        door,
        Affine3A::IDENTITY,
    );
    m
}

/// A height field over `[min, max]` (x, z) with `nx x nz` cells; `mat(x, z)` per cell centre.
pub(crate) fn height_field(
    mesh: &mut Mesh,
    min: Vec2,
    max: Vec2,
    n: [u32; 2],
    h: impl Fn(f32, f32) -> f32,
    mat: impl Fn(f32, f32) -> u32,
) {
    let x = |i: u32| span(min.x, max.x, i, n[0]);
    let z = |j: u32| span(min.y, max.y, j, n[1]);
    // First parameter along z, second along x: dz x dx = +y, so the front faces up.
    grid(
        mesh,
        n[1],
        n[0],
        |j, i| Vec3::new(x(i), h(x(i), z(j)), z(j)),
        |j, i| mat((x(i) + x(i + 1)) / 2.0, (z(j) + z(j + 1)) / 2.0),
    );
}

/// `0` at `e0`, `1` at `e1`, smooth in between.
pub(crate) fn smoothstep(e0: f32, e1: f32, x: f32) -> f32 {
    let t = ((x - e0) / (e1 - e0)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}
