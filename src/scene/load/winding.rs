//! Which way a level's triangles are wound, and turning inside-out parts the right way out.
//!
//! sightline reads a triangle's front from its counter-clockwise winding (OpenGL's and
//! Recast's convention): floors face up, solids face out. A level written with clockwise faces
//! (DirectX's convention) has every floor facing down and every solid inside out, and nothing
//! in it is walkable. [`orient`] looks at each connected part of the mesh (vertices welded by
//! position):
//!
//! - a **closed** part (every edge shared by exactly two triangles, wound consistently) is
//!   inside out when its signed volume is negative;
//! - an **open** part (terrain, a floor plate) faces down when most of its projected area
//!   does; it is inside out when, in addition, nothing lies under its downward faces (a
//!   ceiling has a floor under it; ground wound the wrong way has nothing).
//!
//! With [`Winding::Auto`], a file whose parts mostly read as wound clockwise (by area) is
//! flipped as a whole, and then every part still inside out is flipped on its own. An
//! inward-facing closed room shell reads as an inside-out solid; load such a file with
//! [`Winding::Ccw`].

use super::super::{Material, Mesh, Scene};
use crate::scene::{Mask, MaterialFlags};
use crate::trace::Ray;
use glam::{DVec3, Vec3};
use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;

/// How the file's triangles are wound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Winding {
    /// Detect: flip a clockwise file as a whole, then every part still inside out.
    #[default]
    Auto,
    /// Counter-clockwise faces are fronts (OpenGL, Recast, glTF): taken as written.
    Ccw,
    /// Clockwise faces are fronts (DirectX): every triangle is flipped.
    Cw,
}

impl std::str::FromStr for Winding {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Winding::Auto),
            "ccw" => Ok(Winding::Ccw),
            "cw" => Ok(Winding::Cw),
            _ => Err(format!(
                "winding {s:?} is not one of auto, ccw (counter-clockwise fronts, OpenGL) or cw (clockwise fronts, DirectX)"
            )),
        }
    }
}

/// What the loader's winding pass found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindingReport {
    /// Connected parts of the mesh.
    pub parts: usize,
    /// Closed parts.
    pub closed: usize,
    /// Parts that read as wound clockwise before any flip (closed with negative volume, or
    /// open and mostly facing down), and all parts.
    pub clockwise_parts: usize,
    /// The whole file was flipped (`Cw`, or `Auto` finding it wound clockwise).
    pub whole_file_flipped: bool,
    /// Parts flipped on their own after that (`Auto` only): closed and inside out, or open,
    /// facing down, with nothing under them.
    pub parts_flipped: usize,
    /// Triangles flipped in all.
    pub triangles_flipped: usize,
}

impl WindingReport {
    /// One line for the user, or `None` when nothing was flipped.
    #[must_use]
    pub fn describe(&self) -> Option<String> {
        if self.triangles_flipped == 0 {
            return None;
        }
        let mut s = format!("flipped {} triangles", self.triangles_flipped);
        if self.whole_file_flipped {
            s += &format!(
                ": the file is wound clockwise ({} of {} parts read as inside out or facing down)",
                self.clockwise_parts, self.parts
            );
        }
        if self.parts_flipped > 0 {
            s += &format!(
                "{} {} inside-out part(s) of {}",
                if self.whole_file_flipped {
                    ", and"
                } else {
                    ": "
                },
                self.parts_flipped,
                self.parts
            );
        }
        Some(s + " (--winding ccw keeps the file as written)")
    }
}

/// One connected part: its triangles, whether it is closed, and its orientation evidence.
struct Part {
    triangles: Vec<u32>,
    closed: bool,
    /// Signed volume (closed parts), in the part's own frame.
    volume: f64,
    /// Projected area facing up and down.
    up: f64,
    down: f64,
}

impl Part {
    /// +1 wound counter-clockwise, -1 clockwise, 0 unclear.
    fn vote(&self) -> i32 {
        let area = self.up + self.down;
        if self.closed {
            // Relative to the part's size: a flat closed sliver has no clear inside.
            let scale = area.max(1e-30).powf(1.5);
            if self.volume.abs() > 1e-6 * scale {
                return self.volume.signum() as i32;
            }
            return 0;
        }
        let net = self.up - self.down;
        if area > 0.0 && net.abs() > 0.2 * area {
            net.signum() as i32
        } else {
            0
        }
    }

    fn area(&self) -> f64 {
        self.up + self.down
    }
}

/// Orients `mesh` as `winding` says (module docs) and reports what it did. `materials` lets
/// the open-part test trace against the mesh.
pub fn orient(mesh: &mut Mesh, materials: &[Material], winding: Winding) -> WindingReport {
    orient_in(mesh, None, materials, winding)
}

/// [`orient`], tracing the open-part test against `scene` (the mesh's own geometry) when
/// given, else against a scene built from the mesh.
fn orient_in(
    mesh: &mut Mesh,
    scene: Option<&Scene>,
    materials: &[Material],
    winding: Winding,
) -> WindingReport {
    let parts = parts(mesh);
    let mut report = WindingReport {
        parts: parts.len(),
        closed: parts.iter().filter(|p| p.closed).count(),
        clockwise_parts: parts.iter().filter(|p| p.vote() < 0).count(),
        ..WindingReport::default()
    };
    let (cw, ccw) = parts
        .iter()
        .fold((0.0, 0.0), |(cw, ccw), p| match p.vote() {
            -1 => (cw + p.area(), ccw),
            1 => (cw, ccw + p.area()),
            _ => (cw, ccw),
        });
    let whole = match winding {
        Winding::Ccw => false,
        Winding::Cw => true,
        Winding::Auto => cw > 3.0 * ccw,
    };
    if whole {
        flip(mesh, 0..mesh.triangles.len() as u32);
        report.whole_file_flipped = true;
        report.triangles_flipped = mesh.triangles.len();
    }
    if winding != Winding::Auto {
        return report;
    }
    // After a whole-file flip every part's vote changed sign.
    let sign = if whole { -1 } else { 1 };
    let mut open_down: Vec<&Part> = Vec::new();
    for p in &parts {
        if sign * p.vote() >= 0 {
            continue;
        }
        if p.closed {
            flip(mesh, p.triangles.iter().copied());
            report.parts_flipped += 1;
            report.triangles_flipped += p.triangles.len();
        } else {
            open_down.push(p);
        }
    }
    if !open_down.is_empty() {
        let under = nothing_under(mesh, scene, materials, &open_down);
        for (p, bare) in open_down.into_iter().zip(under) {
            if bare {
                flip(mesh, p.triangles.iter().copied());
                report.parts_flipped += 1;
                report.triangles_flipped += p.triangles.len();
            }
        }
    }
    report
}

/// What [`Winding::Auto`] would flip in a scene already built: its world triangles, welded
/// by position, read as a loader reads a file.
#[must_use]
pub fn winding_of(scene: &Scene) -> WindingReport {
    orient_in(
        &mut scene.world_mesh(),
        Some(scene),
        scene.materials(),
        Winding::Auto,
    )
}

/// Reverses the winding of the given triangles (swaps their last two vertices).
fn flip(mesh: &mut Mesh, triangles: impl IntoIterator<Item = u32>) {
    for t in triangles {
        mesh.triangles[t as usize].swap(1, 2);
    }
}

/// The mesh's connected parts, vertices welded by exact position.
fn parts(mesh: &Mesh) -> Vec<Part> {
    let mut weld: HashMap<[u32; 3], u32> = HashMap::default();
    let id: Vec<u32> = mesh
        .positions
        .iter()
        .map(|p| {
            let n = weld.len() as u32;
            *weld.entry(p.to_array().map(f32::to_bits)).or_insert(n)
        })
        .collect();
    let mut sets = UnionFind::new(weld.len());
    for t in &mesh.triangles {
        let [a, b, c] = t.map(|i| id[i as usize]);
        sets.union(a, b);
        sets.union(a, c);
    }
    let mut index: HashMap<u32, usize> = HashMap::default();
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for (k, t) in mesh.triangles.iter().enumerate() {
        let root = sets.find(id[t[0] as usize]);
        let g = *index.entry(root).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(k as u32);
    }
    groups
        .into_par_iter()
        .map(|triangles| measure(mesh, &id, triangles))
        .collect()
}

/// Closedness, signed volume and up/down projected area of one part.
fn measure(mesh: &Mesh, id: &[u32], triangles: Vec<u32>) -> Part {
    let corner = |t: u32| mesh.triangles[t as usize];
    let origin = mesh.positions[corner(triangles[0])[0] as usize].as_dvec3();
    let mut edges: HashMap<(u32, u32), i32> = HashMap::default();
    let (mut volume, mut up, mut down) = (0.0, 0.0, 0.0);
    for &t in &triangles {
        let v = corner(t);
        let [a, b, c] = v.map(|i| mesh.positions[i as usize].as_dvec3() - origin);
        volume += a.dot(b.cross(c)) / 6.0;
        let ny = (b - a).cross(c - a).y / 2.0;
        if ny > 0.0 {
            up += ny;
        } else {
            down -= ny;
        }
        let w = v.map(|i| id[i as usize]);
        for (p, q) in [(w[0], w[1]), (w[1], w[2]), (w[2], w[0])] {
            *edges.entry((p, q)).or_default() += 1;
        }
    }
    let closed = edges
        .iter()
        .all(|(&(p, q), &n)| n == 1 && edges.get(&(q, p)) == Some(&1));
    Part {
        triangles,
        closed,
        volume,
        up,
        down,
    }
}

/// Samples per open part for [`nothing_under`].
const SAMPLES: usize = 32;

/// For each open part facing down: whether nothing lies under its largest downward faces (at
/// most one in four of [`SAMPLES`] rays from just under their centres meets anything).
fn nothing_under(
    mesh: &Mesh,
    scene: Option<&Scene>,
    materials: &[Material],
    parts: &[&Part],
) -> Vec<bool> {
    let built;
    let scene = match scene {
        Some(s) => s,
        None => match Scene::from_mesh(mesh.clone(), materials.to_vec()) {
            Ok(s) => {
                built = s;
                &built
            }
            Err(_) => return vec![false; parts.len()],
        },
    };
    let engine = crate::Engine::cpu();
    let all = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
    parts
        .iter()
        .map(|p| {
            let rays = under_rays(mesh, p);
            let Ok(hits) = engine.closest_hit(scene, &rays, all) else {
                return false;
            };
            !rays.is_empty() && 4 * hits.iter().filter(|h| h.is_some()).count() <= rays.len()
        })
        .collect()
}

/// Downward rays from 1 cm under the centres of a part's largest downward-facing triangles.
fn under_rays(mesh: &Mesh, part: &Part) -> Vec<Ray> {
    let mut faces: Vec<(f64, DVec3)> = part
        .triangles
        .iter()
        .filter_map(|&t| {
            let [a, b, c] =
                mesh.triangles[t as usize].map(|i| mesh.positions[i as usize].as_dvec3());
            let ny = (b - a).cross(c - a).y / 2.0;
            (ny < 0.0).then_some((-ny, (a + b + c) / 3.0))
        })
        .collect();
    faces.sort_by(|x, y| y.0.total_cmp(&x.0));
    faces
        .iter()
        .take(SAMPLES)
        .map(|&(_, c)| Ray::new(c.as_vec3() - Vec3::Y * 0.01, Vec3::NEG_Y, 1e9))
        .collect()
}

/// Disjoint sets over `0..n`, with path halving.
struct UnionFind(Vec<u32>);

impl UnionFind {
    fn new(n: usize) -> Self {
        UnionFind((0..n as u32).collect())
    }
    fn find(&mut self, mut a: u32) -> u32 {
        while self.0[a as usize] != a {
            self.0[a as usize] = self.0[self.0[a as usize] as usize];
            a = self.0[a as usize];
        }
        a
    }
    fn union(&mut self, a: u32, b: u32) {
        let (a, b) = (self.find(a), self.find(b));
        self.0[a as usize] = b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cube(mesh: &mut Mesh, lo: Vec3, hi: Vec3) {
        let c = |x: f32, y: f32, z: f32| Vec3::new(x, y, z);
        let (a, b) = (lo, hi);
        // Counter-clockwise seen from outside.
        let quads = [
            [
                c(a.x, a.y, a.z),
                c(a.x, a.y, b.z),
                c(a.x, b.y, b.z),
                c(a.x, b.y, a.z),
            ],
            [
                c(b.x, a.y, a.z),
                c(b.x, b.y, a.z),
                c(b.x, b.y, b.z),
                c(b.x, a.y, b.z),
            ],
            [
                c(a.x, a.y, a.z),
                c(b.x, a.y, a.z),
                c(b.x, a.y, b.z),
                c(a.x, a.y, b.z),
            ],
            [
                c(a.x, b.y, a.z),
                c(a.x, b.y, b.z),
                c(b.x, b.y, b.z),
                c(b.x, b.y, a.z),
            ],
            [
                c(a.x, a.y, a.z),
                c(a.x, b.y, a.z),
                c(b.x, b.y, a.z),
                c(b.x, a.y, a.z),
            ],
            [
                c(a.x, a.y, b.z),
                c(b.x, a.y, b.z),
                c(b.x, b.y, b.z),
                c(a.x, b.y, b.z),
            ],
        ];
        for [p, q, r, s] in quads {
            let base = mesh.positions.len() as u32;
            mesh.positions.extend([p, q, r, s]);
            mesh.triangles.push([base, base + 1, base + 2]);
            mesh.triangles.push([base, base + 2, base + 3]);
            mesh.materials.extend([0, 0]);
        }
    }

    fn ground(mesh: &mut Mesh, half: f32) {
        mesh.push_quad(
            Vec3::new(-half, 0.0, -half),
            Vec3::new(-half, 0.0, half),
            Vec3::new(half, 0.0, half),
            Vec3::new(half, 0.0, -half),
            0,
        );
    }

    fn level() -> Mesh {
        let mut m = Mesh::default();
        ground(&mut m, 20.0);
        cube(&mut m, Vec3::new(-1.0, 0.0, -1.0), Vec3::new(1.0, 2.0, 1.0));
        cube(&mut m, Vec3::new(4.0, 0.0, 4.0), Vec3::new(6.0, 1.0, 7.0));
        m
    }

    fn reversed(m: &Mesh, triangles: std::ops::Range<usize>) -> Mesh {
        let mut r = m.clone();
        for t in &mut r.triangles[triangles] {
            t.swap(1, 2);
        }
        r
    }

    fn mats() -> Vec<Material> {
        vec![crate::scene::MaterialRules::standard().default.clone()]
    }

    #[test]
    fn the_test_level_is_read_as_counter_clockwise() {
        let m = level();
        let ps = parts(&m);
        assert_eq!(ps.len(), 3);
        assert_eq!(ps.iter().filter(|p| p.closed).count(), 2);
        assert!(ps.iter().all(|p| p.vote() == 1));
        let mut o = m.clone();
        let r = orient(&mut o, &mats(), Winding::Auto);
        assert_eq!(o, m);
        assert_eq!(r.triangles_flipped, 0);
        assert_eq!(r.describe(), None);
    }

    #[test]
    fn a_clockwise_file_is_flipped_back_whole() {
        let m = level();
        let mut cw = reversed(&m, 0..m.triangles.len());
        let r = orient(&mut cw, &mats(), Winding::Auto);
        assert_eq!(cw, m);
        assert!(r.whole_file_flipped);
        assert_eq!((r.parts, r.clockwise_parts, r.parts_flipped), (3, 3, 0));
        assert!(r.describe().unwrap().contains("wound clockwise"));
        let mut forced = reversed(&m, 0..m.triangles.len());
        orient(&mut forced, &mats(), Winding::Cw);
        assert_eq!(forced, m);
        let mut kept = reversed(&m, 0..m.triangles.len());
        orient(&mut kept, &mats(), Winding::Ccw);
        assert_eq!(kept, reversed(&m, 0..m.triangles.len()));
    }

    #[test]
    fn one_inside_out_solid_is_flipped_alone() {
        let m = level();
        // The second cube's 12 triangles (after the ground's 2 and the first cube's 12).
        let mut bad = reversed(&m, 14..26);
        let r = orient(&mut bad, &mats(), Winding::Auto);
        assert_eq!(bad, m);
        assert!(!r.whole_file_flipped);
        assert_eq!((r.parts_flipped, r.triangles_flipped), (1, 12));
    }

    #[test]
    fn ground_facing_down_is_flipped_but_a_ceiling_is_not() {
        let m = level();
        // Alone, the ground would be flipped as a part; here it is most of the file's area,
        // so the file reads as clockwise, and the two crates are turned back after.
        let mut bad = reversed(&m, 0..2);
        let r = orient(&mut bad, &mats(), Winding::Auto);
        assert_eq!(bad, m, "ground with nothing under it");
        assert!(r.whole_file_flipped && r.parts_flipped == 2, "{r:?}");
        let mut small = Mesh::default();
        ground(&mut small, 1.0);
        cube(
            &mut small,
            Vec3::new(-9.0, 0.0, -9.0),
            Vec3::new(9.0, 3.0, 9.0),
        );
        let mut bad = reversed(&small, 0..2);
        let r = orient(&mut bad, &mats(), Winding::Auto);
        assert_eq!(bad, small);
        assert!(!r.whole_file_flipped && r.parts_flipped == 1, "{r:?}");
        // A single-sided ceiling plate over the ground faces down and has ground under it.
        let mut room = level();
        let base = room.positions.len() as u32;
        room.positions.extend([
            Vec3::new(-3.0, 3.0, -3.0),
            Vec3::new(3.0, 3.0, -3.0),
            Vec3::new(3.0, 3.0, 3.0),
            Vec3::new(-3.0, 3.0, 3.0),
        ]);
        room.triangles.push([base, base + 2, base + 1]);
        room.triangles.push([base, base + 3, base + 2]);
        room.materials.extend([0, 0]);
        let mut kept = room.clone();
        let r = orient(&mut kept, &mats(), Winding::Auto);
        assert_eq!(kept, room);
        assert_eq!(r.triangles_flipped, 0);
    }

    #[test]
    fn winding_parses_and_names_the_choices() {
        assert_eq!("cw".parse::<Winding>(), Ok(Winding::Cw));
        let e = "left".parse::<Winding>().unwrap_err();
        assert!(e.contains("auto") && e.contains("DirectX"), "{e}");
    }
}
