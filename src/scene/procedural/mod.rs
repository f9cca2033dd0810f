//! Built-in procedural scenes: deterministic test levels modelled on the levels in the referenced documents.
//!
//! Conventions shared by every scene: +Y is up, units are metres, north is -Z and east is +X.
//! A scene is a pure function of `(seed, detail)`: the seed moves hills, rock shapes and the
//! urban layout; `detail` (0 is treated as 1) only changes how finely surfaces are tessellated,
//! so triangle counts grow roughly with `detail²` while the layout stays put.
//!
//! | name | source | size | layout |
//! |---|---|---|---|
//! | `rock` | Darken, Morgan and Paull, "Related Work": an open plane with one tall rock | 100 m x 100 m | [`rock`] |
//! | `village` | Morgan (thesis), VII.B.4: the CoverBot test environment | 120 m x 120 m | [`village_layout`] |
//! | `sniper` | van der Sterren, "The Terrain" | 80 m x 60 m | [`sniper_layout`] |
//! | `urban` | Darken, McCue and Guerrero: the 100 m x 122 m test block | 100 m x 122 m | [`urban`] |
//!
//! Object order in every scene: object 0 is the static level; movable objects (parked
//! vehicles, door leaves) follow in the order their layout lists them.

mod building;
mod geom;
mod rock;
mod sniper;
mod urban;
mod village;

#[cfg(test)]
mod tests;

pub use rock::rock;
pub use sniper::{sniper, sniper_layout, SniperBuilding, SniperLayout};
pub use urban::urban;
pub use village::{
    village, village_layout, village_waypoints, Door, Doorway, Vehicle, VillageLayout, Window,
};

use super::{Material, MaterialFlags, Mesh, Mobility, Scene};
use glam::{Affine3A, Vec3};

/// The built-in scene names, in the order the CLI lists them.
pub const NAMES: [&str; 4] = ["rock", "village", "sniper", "urban"];

/// A built-in scene by name. An unknown name is [`Error::InvalidParameter`](crate::Error);
/// a detail over [`crate::limits::MAX_DETAIL`], or one whose triangles would not fit
/// the triangle limit or this machine's memory, is refused before anything is built.
pub fn by_name(name: &str, seed: u64, detail: u32) -> crate::Result<Scene> {
    let build = |d: u32| -> Option<Scene> {
        Some(match name {
            "rock" => rock(seed, d),
            "village" => village(seed, d),
            "sniper" => sniper(seed, d),
            "urban" => urban(seed, d),
            _ => return None,
        })
    };
    let unknown = || {
        crate::Error::param(
            "scene",
            name,
            format!("one of the built-in scenes: {}", NAMES.join(", ")),
        )
    };
    let limit = u64::from(crate::limits::MAX_DETAIL);
    crate::limits::check_size(
        "detail",
        u64::from(detail),
        limit,
        "triangles grow with the square of the detail; use a smaller --detail",
    )?;
    if detail > 1 {
        // Triangle counts grow as a + b d + c d^2, so detail 1's count times d^2 bounds them.
        let bound =
            build(1).ok_or_else(unknown)?.triangle_count() as u64 * u64::from(detail).pow(2);
        crate::limits::check_size(
            &format!("the triangles of `{name}` at detail {detail} (at most)"),
            bound,
            crate::limits::MAX_TRIANGLES,
            "use a smaller --detail",
        )?;
        crate::limits::check_memory(
            &format!("`{name}` at detail {detail}"),
            bound * BYTES_PER_TRIANGLE,
            "use a smaller --detail",
        )?;
    }
    build(detail).ok_or_else(unknown)
}

/// Memory a scene needs per triangle, about: world positions, ids, materials and BVH.
const BYTES_PER_TRIANGLE: u64 = 160;

use crate::limits::MAX_DETAIL;

/// Smallest detail whose scene has at least `triangles` triangles (benchmarks use it to reach
/// 1M+). `None` for an unknown name or a count beyond [`MAX_DETAIL`].
#[must_use]
pub fn detail_for_triangles(name: &str, seed: u64, triangles: usize) -> Option<u32> {
    let count = |d: u32| by_name(name, seed, d).ok().map(|s| s.triangle_count());
    let c1 = count(1)?;
    if c1 >= triangles {
        return Some(1);
    }
    // Counts are close to a + b*d + c*d²: fit on details 1..3, guess, then walk to the answer
    // (counts never shrink as detail grows, so the walk is exact).
    let (c2, c3) = (count(2)? as f64, count(3)? as f64);
    let c1 = c1 as f64;
    let c = (c3 - 2.0 * c2 + c1) / 2.0;
    let b = c2 - c1 - 3.0 * c;
    let a = c1 - b - c;
    let t = triangles as f64;
    let guess = if c > 0.0 {
        (-b + (b * b - 4.0 * c * (a - t)).max(0.0).sqrt()) / (2.0 * c)
    } else {
        (t - a) / b.max(1.0)
    };
    if !guess.is_finite() || guess > f64::from(MAX_DETAIL) + 1.0 {
        return None;
    }
    let mut d = (guess.ceil() as u32).clamp(1, MAX_DETAIL);
    if count(d)? >= triangles {
        while d > 1 && count(d - 1)? >= triangles {
            d -= 1;
        }
        Some(d)
    } else {
        while count(d)? < triangles {
            d += 1;
            if d > MAX_DETAIL {
                return None;
            }
        }
        Some(d)
    }
}

/// A good default observer eye position (metres, +Y up) for demos such as the viewshed CLI.
#[must_use]
pub fn default_observer(name: &str) -> Option<Vec3> {
    match name {
        // 15 m north of the rock, standing eye height.
        "rock" => Some(Vec3::new(0.0, 1.7, -15.0)),
        // On the plateau, 2 m back from the cliff edge, overlooking the village.
        "village" => Some(Vec3::new(40.0, 3.0 + 1.7, -27.0)),
        // The north-west corner, where the paper's AI sniper stands.
        "sniper" => Some(Vec3::new(-36.0, 1.7, -26.0)),
        // The middle of the southern crossroads.
        "urban" => Some(Vec3::new(0.0, 1.7, 21.0)),
        _ => None,
    }
}

/// Splitmix64: a tiny, fast, well-mixed deterministic generator (no `rand` dependency).
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, 1)`.
    pub(crate) fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
    pub(crate) fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.f32()
    }
    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * u64::from(n)) >> 32) as u32
    }
    /// An independent stream, so adding draws in one place does not shift another.
    pub(crate) fn fork(&mut self, salt: u64) -> Rng {
        Rng(self.next_u64() ^ salt.wrapping_mul(0xA24B_AED4_963E_E407))
    }
}

/// The surface types the built-in scenes use. Names follow [`super::MaterialRules`] where a
/// rule applies, so re-exported levels keep their meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mat {
    Ground,
    Grass,
    Terrain,
    Road,
    Pavement,
    Rock,
    Concrete,
    Brick,
    Plaster,
    Roof,
    Floor,
    Stair,
    Crate,
    Door,
    Metal,
    Tire,
    Foliage,
    Glass,
    Water,
}

impl Mat {
    fn material(self) -> Material {
        use MaterialFlags as F;
        let sw = F::SOLID | F::WALKABLE;
        let (name, flags, albedo) = match self {
            Mat::Ground => ("ground", sw, 0.35),
            Mat::Grass => ("grass", sw, 0.28),
            Mat::Terrain => ("terrain_slope", sw, 0.32),
            Mat::Road => ("road_asphalt", sw, 0.16),
            Mat::Pavement => ("pavement", sw, 0.47),
            Mat::Rock => ("rock", sw, 0.42),
            Mat::Concrete => ("concrete", sw, 0.56),
            Mat::Brick => ("brick_wall", sw, 0.38),
            Mat::Plaster => ("plaster_wall", sw, 0.72),
            Mat::Roof => ("roof", sw, 0.24),
            Mat::Floor => ("floor", sw, 0.4),
            Mat::Stair => ("stair", sw, 0.45),
            Mat::Crate => ("wood_crate", F::SOLID, 0.52),
            Mat::Door => ("wood_door", F::SOLID, 0.3),
            Mat::Metal => ("vehicle_metal", F::SOLID, 0.66),
            Mat::Tire => ("vehicle_tire", F::SOLID, 0.05),
            Mat::Foliage => ("foliage_bush", F::BLOCKS_SIGHT, 0.21),
            Mat::Glass => ("glass_bulletproof", F::BLOCKS_FIRE, 0.6),
            Mat::Water => ("water", F::WALKABLE, 0.1),
        };
        Material::new(name, flags, albedo)
    }
}

/// Collects a scene: materials on first use, one static mesh, and movable objects.
pub(crate) struct Builder {
    mats: Vec<Mat>,
    pub(crate) level: Mesh,
    movables: Vec<(Mesh, Affine3A)>,
    /// Surface subdivisions per metre for objects (scales with detail).
    pub(crate) density: f32,
}

impl Builder {
    pub(crate) fn new(density: f32) -> Builder {
        Builder {
            mats: Vec::new(),
            level: Mesh::default(),
            movables: Vec::new(),
            density,
        }
    }

    /// The material index of `m`, adding it to the table on first use.
    pub(crate) fn mat(&mut self, m: Mat) -> u32 {
        if let Some(i) = self.mats.iter().position(|&x| x == m) {
            return i as u32;
        }
        self.mats.push(m);
        self.mats.len() as u32 - 1
    }

    /// Adds a movable object (a vehicle or door leaf) with its mesh in local space.
    pub(crate) fn movable(&mut self, mesh: Mesh, transform: Affine3A) {
        self.movables.push((mesh, transform));
    }

    pub(crate) fn finish(self) -> Scene {
        let mut scene = Scene::new(self.mats.iter().map(|m| m.material()).collect());
        scene
            .add_object(self.level, Affine3A::IDENTITY, Mobility::Static)
            .expect("procedural level mesh is valid");
        for (mesh, xf) in self.movables {
            scene
                .add_object(mesh, xf, Mobility::Movable)
                .expect("procedural movable mesh is valid");
        }
        scene
    }
}

/// `detail`, with 0 treated as 1.
pub(crate) fn detail(d: u32) -> f32 {
    d.max(1) as f32
}
