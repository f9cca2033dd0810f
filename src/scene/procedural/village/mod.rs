//! `village`: the CoverBot test environment of Morgan (thesis, VII.B.4): "flat terrain
//! and hilly terrain, inside of buildings, near clusters of boulders, near stacks of boxes,
//! and around parked vehicles that can be seen under", and a building with narrow doors (the
//! thesis's doorway failure case).
//!
//! The map is 120 m x 120 m (x and z in -60..60; north is -Z). The layout is fixed; the seed
//! shapes the hills, boulders and crate jitter. Every feature below stands on flat ground at
//! y = 0 (the hills fade out around them), so [`village_layout`] needs no seed:
//!
//! | feature | where |
//! |---|---|
//! | building | outer footprint x -21..-9, z 6..14, 3 m tall, walkable flat roof; walls 0.3 m |
//! | main room / side room | centres (-16.89, 0.05, 10) / (-11.11, 0.05, 10); interior wall at x = -13 |
//! | doorways (0.9 x 2.1 m) | south (-17, 0, 13.85), west (-20.85, 0, 8), east (-9.15, 0, 9), interior (-13, 0.05, 12) |
//! | windows (1.2 x 1.0 m, sill 1 m) | north (-17, 1.5, 6.15), north (-11, 1.5, 6.15), west (-20.85, 1.5, 11.5) glazed with bullet-proof glass, south (-11, 1.5, 13.85) |
//! | plateau | x 25..60, z -60..-25, flat top at y = 3 |
//! | cliff | the plateau's south face: vertical 3 m drop along z = -25, x 26.73..60 |
//! | steep slope | the plateau's west face: 60 degrees, foot at x = 25, centre (25.87, 1.5, -42.5) |
//! | ramp | the way up the plateau, against the steep slope's north end: x 19..26.73, z -58..-54, 21 degrees |
//! | vehicles | car (2, 0, 12) along +Z; truck (15, 0, 30); car (-35, 0, -15); clearance 0.45 / 0.5 m |
//! | box stacks | (-2, 0, -5), (-32, 0, 26), (12, 0, -28) |
//! | boulder clusters | (-38, 0, -38), (30, 0, 10) |
//! | bushes (sight only) | (-27, 0, 17), (-3, 0, 4) |
//!
//! Movable objects: the three vehicles (objects 1..=3), then door leaves in the south, west
//! and east doorways (objects 4..=6), hinged at a jamb and standing open (swung 90 degrees
//! into the building). [`Door::closed`] closes one.

mod layout;

pub use layout::{
    village_layout, village_waypoints, Door, Doorway, Vehicle, VillageLayout, Window,
};

use super::geom::{
    blob, cuboid, door_leaf, frame, height_field, hexa, segs, smoothstep, vehicle, Bumps,
};
use super::{Builder, Mat, Rng, Scene};
use glam::{Vec2, Vec3};
use layout::{
    building, BOULDERS, BOX_STACKS, BUSHES, CLIFF, DOOR_W, HALF, PLATEAU_MAX, PLATEAU_MIN,
    RAMP_MAX, RAMP_MIN, SLOPE_DEG, VEHICLES,
};

/// A flat pad: a rounded rectangle where the hills are forced to y = 0.
struct Pad {
    center: Vec2,
    half: Vec2,
    flat: f32,
    blend: f32,
}

/// The seeded hills, faded out around the pads.
struct Terrain {
    hills: Vec<(Vec2, f32, f32)>,
    pads: Vec<Pad>,
}

impl Terrain {
    fn new(rng: &mut Rng) -> Terrain {
        let hills = (0..12)
            .map(|_| {
                let c = Vec2::new(rng.range(-HALF, HALF), rng.range(-HALF, HALF));
                (c, rng.range(6.0, 16.0), rng.range(1.0, 3.5))
            })
            .collect();
        let circle = |p: Vec3, r: f32| Pad {
            center: Vec2::new(p.x, p.z),
            half: Vec2::ZERO,
            flat: r,
            blend: 8.0,
        };
        let mut pads = vec![
            Pad {
                center: (PLATEAU_MIN + PLATEAU_MAX) / 2.0,
                half: (PLATEAU_MAX - PLATEAU_MIN) / 2.0,
                flat: 3.0,
                blend: 10.0,
            },
            Pad {
                center: (RAMP_MIN + RAMP_MAX) / 2.0,
                half: (RAMP_MAX - RAMP_MIN) / 2.0,
                flat: 2.0,
                blend: 6.0,
            },
            circle(Vec3::new(-15.0, 0.0, 10.0), 18.0),
        ];
        pads.extend(VEHICLES.iter().map(|v| circle(v.0, v.2 / 2.0 + 3.0)));
        pads.extend(BOX_STACKS.iter().map(|&p| circle(p, 4.0)));
        pads.extend(BOULDERS.iter().map(|&p| circle(p, 7.0)));
        Terrain { hills, pads }
    }

    /// How much a point belongs to a pad: 1 on a pad, fading to 0 over its blend distance.
    fn pad_weight(&self, p: Vec2) -> f32 {
        self.pads
            .iter()
            .map(|pad| {
                let d = ((p - pad.center).abs() - pad.half).max(Vec2::ZERO).length();
                1.0 - smoothstep(pad.flat, pad.flat + pad.blend, d)
            })
            .fold(0.0, f32::max)
    }

    fn height(&self, x: f32, z: f32) -> f32 {
        let p = Vec2::new(x, z);
        let hills: f32 = self
            .hills
            .iter()
            .map(|&(c, sigma, h)| h * (-(p - c).length_squared() / (2.0 * sigma * sigma)).exp())
            .sum();
        hills * (1.0 - self.pad_weight(p))
    }
}

/// The village (see the module docs for the layout). About 40k triangles at detail 1.
#[must_use]
pub fn village(seed: u64, detail: u32) -> Scene {
    let d = super::detail(detail);
    let mut b = Builder::new(d);
    let mut rng = Rng::new(seed);
    let terrain = Terrain::new(&mut rng.fork(1));
    let grass = ground(&mut b, &terrain, d);
    plateau(&mut b, d, grass);
    building().build(&mut b);
    boulders(&mut b, &mut rng.fork(2), &terrain, d);
    box_stacks(&mut b, &mut rng.fork(3), d);
    bushes(&mut b, &mut rng, d);
    movables(&mut b);
    b.finish()
}

/// The hilly ground over the whole map: grass, bare ground on the pads. Returns the grass.
fn ground(b: &mut Builder, terrain: &Terrain, d: f32) -> u32 {
    let (grass, ground) = (b.mat(Mat::Grass), b.mat(Mat::Ground));
    let n = segs(2.0 * HALF, d);
    height_field(
        &mut b.level,
        Vec2::splat(-HALF),
        Vec2::splat(HALF),
        [n, n],
        |x, z| terrain.height(x, z),
        |x, z| {
            if terrain.pad_weight(Vec2::new(x, z)) > 0.5 {
                ground
            } else {
                grass
            }
        },
    );
    grass
}

/// The plateau: a closed solid sunk 0.5 m into the ground, its west face the steep slope
/// and its south face the cliff; and the ramp up it. `grass` covers the plateau's top.
fn plateau(b: &mut Builder, d: f32, grass: u32) {
    let run = |y: f32| y / SLOPE_DEG.to_radians().tan();
    let c: [Vec3; 8] = std::array::from_fn(|k| {
        let y = if k & 2 == 0 { -0.5 } else { CLIFF };
        let x = if k & 1 == 1 {
            PLATEAU_MAX.x
        } else {
            PLATEAU_MIN.x + run(y)
        };
        let z = if k & 4 == 0 {
            PLATEAU_MIN.y
        } else {
            PLATEAU_MAX.y
        };
        Vec3::new(x, y, z)
    });
    let (rock, slope) = (b.mat(Mat::Rock), b.mat(Mat::Terrain));
    hexa(&mut b.level, &c, d, [slope, rock, rock, grass, rock, rock]);
    // The way up: a ramp against the steep slope's north end, its toe 5 cm proud of the
    // ground, its top level with the plateau's.
    let r: [Vec3; 8] = std::array::from_fn(|k| {
        let (x, y) = match (k & 1 == 1, k & 2 != 0) {
            (false, false) => (RAMP_MIN.x, -0.5),
            (true, false) => (RAMP_MAX.x, -0.5),
            (false, true) => (RAMP_MIN.x, 0.05),
            (true, true) => (RAMP_MAX.x, CLIFF),
        };
        Vec3::new(x, y, if k & 4 == 0 { RAMP_MIN.y } else { RAMP_MAX.y })
    });
    hexa(&mut b.level, &r, d, [rock, rock, rock, slope, rock, rock]);
}

/// Boulder clusters: four seeded boulders each, sunk a quarter of their height.
fn boulders(b: &mut Builder, brng: &mut Rng, terrain: &Terrain, d: f32) {
    let stone = b.mat(Mat::Rock);
    for c in BOULDERS {
        for _ in 0..4 {
            let a = brng.range(0.0, std::f32::consts::TAU);
            let r = brng.range(0.5, 4.0);
            let rx = brng.range(0.6, 1.5);
            let radii = Vec3::new(rx, rx * brng.range(0.5, 0.9), rx * brng.range(0.7, 1.1));
            let p = c + Vec3::new(a.cos() * r, 0.0, a.sin() * r);
            let centre = Vec3::new(p.x, terrain.height(p.x, p.z) + radii.y * 0.75, p.z);
            let bumps = Bumps::new(brng, 0.15);
            blob(
                &mut b.level,
                centre,
                radii,
                segs(2.0 * rx, d).max(3),
                &bumps,
                stone,
            );
        }
    }
}

/// Box stacks of 1.2 m crates, each crate jittered a little.
fn box_stacks(b: &mut Builder, crng: &mut Rng, d: f32) {
    let crate_mat = b.mat(Mat::Crate);
    let templates: [&[(f32, f32, f32)]; 3] = [
        &[
            (-0.6, 0.0, -0.6),
            (0.6, 0.0, -0.6),
            (-0.6, 0.0, 0.6),
            (0.6, 0.0, 0.6),
            (0.0, 1.0, 0.0),
        ],
        &[
            (-1.3, 0.0, 0.0),
            (0.0, 0.0, 0.0),
            (1.3, 0.0, 0.0),
            (-0.65, 1.0, 0.0),
            (0.65, 1.0, 0.0),
            (0.0, 2.0, 0.0),
        ],
        &[(-0.65, 0.0, 0.0), (0.65, 0.0, 0.0), (0.0, 1.0, 0.0)],
    ];
    for (s, tpl) in BOX_STACKS.iter().zip(templates) {
        let yaw = crng.range(0.0, std::f32::consts::PI);
        let stack = frame(*s, Vec2::new(yaw.cos(), yaw.sin()));
        for &(x, level, z) in tpl {
            let j = crng.range(-0.12, 0.12);
            let xf = stack * frame(Vec3::new(x, level * 1.2, z), Vec2::new(j.cos(), j.sin()));
            cuboid(
                &mut b.level,
                Vec3::new(-0.6, 0.0, -0.6),
                Vec3::new(0.6, 1.2, 0.6),
                d,
                crate_mat,
                xf,
            );
        }
    }
}

/// Bushes: foliage blobs (block sight, not fire); each forks its bumps from `rng`.
fn bushes(b: &mut Builder, rng: &mut Rng, d: f32) {
    let foliage = b.mat(Mat::Foliage);
    for p in BUSHES {
        let bumps = Bumps::new(&mut rng.fork(4), 0.2);
        blob(
            &mut b.level,
            p + Vec3::Y * 0.7,
            Vec3::new(1.1, 0.9, 1.0),
            segs(3.0, d),
            &bumps,
            foliage,
        );
    }
}

/// The movable objects, in object order: the vehicles, then the door leaves (standing open).
fn movables(b: &mut Builder) {
    let layout = village_layout();
    for (&(_, _, length, width, clearance, truck), v) in VEHICLES.iter().zip(&layout.vehicles) {
        let mesh = vehicle(b, length, width, clearance, truck);
        b.movable(mesh, frame(v.position, Vec2::new(v.heading.x, v.heading.z)));
    }
    for door in &layout.doors {
        let mesh = door_leaf(b, DOOR_W, 2.0);
        b.movable(mesh, door.open);
    }
}
