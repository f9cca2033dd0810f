//! `village`: the CoverBot test environment of seed 001 (Morgan thesis, VII.B.4): "flat terrain
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
//! | vehicles | car (2, 0, 12) along +Z; truck (15, 0, 30); car (-35, 0, -15); clearance 0.45 / 0.5 m |
//! | box stacks | (-2, 0, -5), (-32, 0, 26), (12, 0, -28) |
//! | boulder clusters | (-38, 0, -38), (30, 0, 10) |
//! | bushes (sight only) | (-27, 0, 17), (-3, 0, 4) |
//!
//! Movable objects: the three vehicles (objects 1..=3), then door leaves in the south, west
//! and east doorways (objects 4..=6), hinged at a jamb and standing open (swung 90 degrees
//! into the building). [`Door::closed`] closes one.

use super::building::{door_frames, Building, InteriorWall, Opening, Side, FLOOR_TOP};
use super::geom::{
    blob, cuboid, door_leaf, frame, height_field, hexa, segs, smoothstep, vehicle, Bumps,
};
use super::{Builder, Mat, Rng, Scene};
use crate::scene::ObjectId;
use glam::{Affine3A, Vec2, Vec3};

/// A doorway: a hole in a wall reaching the floor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Doorway {
    /// Centre of the opening at floor level, mid-way through the wall.
    pub center: Vec3,
    /// Unit normal out of the building (for the interior doorway: towards the side room).
    pub normal: Vec3,
    pub width: f32,
    pub height: f32,
    pub exterior: bool,
}

/// A window: a hole in a wall with a sill.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// Centre of the opening, mid-way through the wall.
    pub center: Vec3,
    /// Unit normal out of the building.
    pub normal: Vec3,
    pub width: f32,
    pub height: f32,
    /// Filled with bullet-proof glass (blocks fire, not sight).
    pub glazed: bool,
}

/// A movable door leaf in an exterior doorway.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Door {
    /// Index into [`VillageLayout::doorways`].
    pub doorway: usize,
    pub object: ObjectId,
    /// Transform that shuts the doorway.
    pub closed: Affine3A,
    /// Transform the scene starts with: swung 90 degrees into the building.
    pub open: Affine3A,
}

/// A parked vehicle (a movable object).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vehicle {
    /// Centre of the footprint on the ground.
    pub position: Vec3,
    /// Unit horizontal direction of the vehicle's length.
    pub heading: Vec3,
    pub length: f32,
    pub width: f32,
    /// Open space between the ground and the body.
    pub clearance: f32,
    pub object: ObjectId,
}

/// Where the village's features are. All positions are world metres; see the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct VillageLayout {
    /// The map spans -half_size..half_size in x and z.
    pub half_size: f32,
    /// Outer bounds of the building, ground to roof.
    pub building_min: Vec3,
    pub building_max: Vec3,
    /// Centre of the footprint at floor level.
    pub building_center: Vec3,
    /// Height of the building's floor (top of the ground slab).
    pub floor_y: f32,
    pub room_center: Vec3,
    pub side_room_center: Vec3,
    /// South, west, east (exterior) and the interior doorway, in that order.
    pub doorways: Vec<Doorway>,
    pub windows: Vec<Window>,
    pub doors: Vec<Door>,
    /// End points of the cliff's top edge; the drop is towards +Z.
    pub cliff_edge: [Vec3; 2],
    pub cliff_top: f32,
    pub cliff_bottom: f32,
    /// A point in the middle of the steep slope, its outward normal and its angle.
    pub steep_slope_center: Vec3,
    pub steep_slope_normal: Vec3,
    pub steep_slope_degrees: f32,
    pub vehicles: Vec<Vehicle>,
    pub box_stacks: Vec<Vec3>,
    pub boulder_clusters: Vec<Vec3>,
    pub bushes: Vec<Vec3>,
}

const HALF: f32 = 60.0;
const PLATEAU_MIN: Vec2 = Vec2::new(25.0, -60.0);
const PLATEAU_MAX: Vec2 = Vec2::new(60.0, -25.0);
const CLIFF: f32 = 3.0;
const SLOPE_DEG: f32 = 60.0;
const BUILDING_MIN: Vec2 = Vec2::new(-21.0, 6.0);
const BUILDING_MAX: Vec2 = Vec2::new(-9.0, 14.0);
const DOOR_W: f32 = 0.9;
const DOOR_H: f32 = 2.1;
/// (position, heading (x, z), length, width, clearance, truck)
const VEHICLES: [(Vec3, Vec2, f32, f32, f32, bool); 3] = [
    (
        Vec3::new(2.0, 0.0, 12.0),
        Vec2::new(0.0, 1.0),
        4.4,
        1.8,
        0.45,
        false,
    ),
    (
        Vec3::new(15.0, 0.0, 30.0),
        Vec2::new(1.0, 0.2),
        6.5,
        2.3,
        0.5,
        true,
    ),
    (
        Vec3::new(-35.0, 0.0, -15.0),
        Vec2::new(1.0, -0.6),
        4.4,
        1.8,
        0.45,
        false,
    ),
];
const BOX_STACKS: [Vec3; 3] = [
    Vec3::new(-2.0, 0.0, -5.0),
    Vec3::new(-32.0, 0.0, 26.0),
    Vec3::new(12.0, 0.0, -28.0),
];
const BOULDERS: [Vec3; 2] = [Vec3::new(-38.0, 0.0, -38.0), Vec3::new(30.0, 0.0, 10.0)];
const BUSHES: [Vec3; 2] = [Vec3::new(-27.0, 0.0, 17.0), Vec3::new(-3.0, 0.0, 4.0)];

fn building() -> Building {
    let door = |side, along| Opening {
        side,
        along,
        bottom: 0.0,
        width: DOOR_W,
        height: DOOR_H,
        glass: false,
    };
    let window = |side, along, glass| Opening {
        side,
        along,
        bottom: 1.0,
        width: 1.2,
        height: 1.0,
        glass,
    };
    Building {
        min: BUILDING_MIN,
        max: BUILDING_MAX,
        base: 0.0,
        storeys: 1,
        storey_h: 3.0,
        wall_t: 0.3,
        parapet: 0.0,
        openings: vec![
            door(Side::South, -17.0),
            door(Side::West, 8.0),
            door(Side::East, 9.0),
            window(Side::North, -17.0, false),
            window(Side::North, -11.0, false),
            window(Side::West, 11.5, true),
            window(Side::South, -11.0, false),
        ],
        interior: vec![InteriorWall {
            along_x: false,
            at: -13.0,
            doors: vec![(12.0, DOOR_W)],
        }],
        wall: Mat::Brick,
        roof: Mat::Concrete,
    }
}

/// The fixed positions of the village's features (independent of seed and detail).
#[must_use]
pub fn village_layout() -> VillageLayout {
    let bld = building();
    let t = bld.wall_t;
    let floor_y = bld.base + FLOOR_TOP;
    let doors_at: Vec<&Opening> = bld.openings.iter().filter(|o| o.bottom == 0.0).collect();
    let mut doorways: Vec<Doorway> = doors_at
        .iter()
        .map(|o| Doorway {
            center: bld.opening_center(o),
            normal: o.side.normal(),
            width: o.width,
            height: o.height,
            exterior: true,
        })
        .collect();
    doorways.push(Doorway {
        center: Vec3::new(-13.0, floor_y, 12.0),
        normal: Vec3::X,
        width: DOOR_W,
        height: DOOR_H,
        exterior: false,
    });
    let windows = bld
        .openings
        .iter()
        .filter(|o| o.bottom > 0.0)
        .map(|o| Window {
            center: bld.opening_center(o) + Vec3::Y * o.height / 2.0,
            normal: o.side.normal(),
            width: o.width,
            height: o.height,
            glazed: o.glass,
        })
        .collect();
    let doors = doorways
        .iter()
        .enumerate()
        .filter(|(_, d)| d.exterior)
        .map(|(i, d)| {
            let (closed, open) = door_frames(d.center, d.normal, d.width);
            Door {
                doorway: i,
                object: ObjectId((1 + VEHICLES.len() + i) as u32),
                closed,
                open,
            }
        })
        .collect();
    let (lo, hi) = (BUILDING_MIN + t, BUILDING_MAX - t);
    let room_x = (lo.x + (-13.0 - 0.075)) / 2.0;
    let side_x = ((-13.0 + 0.075) + hi.x) / 2.0;
    let run = CLIFF / SLOPE_DEG.to_radians().tan();
    let slope = SLOPE_DEG.to_radians();
    VillageLayout {
        half_size: HALF,
        building_min: Vec3::new(BUILDING_MIN.x, 0.0, BUILDING_MIN.y),
        building_max: Vec3::new(BUILDING_MAX.x, 3.0, BUILDING_MAX.y),
        building_center: Vec3::new(-15.0, floor_y, 10.0),
        floor_y,
        room_center: Vec3::new(room_x, floor_y, 10.0),
        side_room_center: Vec3::new(side_x, floor_y, 10.0),
        doorways,
        windows,
        doors,
        cliff_edge: [
            Vec3::new(PLATEAU_MIN.x + run, CLIFF, PLATEAU_MAX.y),
            Vec3::new(PLATEAU_MAX.x, CLIFF, PLATEAU_MAX.y),
        ],
        cliff_top: CLIFF,
        cliff_bottom: 0.0,
        steep_slope_center: Vec3::new(
            PLATEAU_MIN.x + run / 2.0,
            CLIFF / 2.0,
            (PLATEAU_MIN.y + PLATEAU_MAX.y) / 2.0,
        ),
        steep_slope_normal: Vec3::new(-slope.sin(), slope.cos(), 0.0),
        steep_slope_degrees: SLOPE_DEG,
        vehicles: VEHICLES
            .iter()
            .enumerate()
            .map(|(i, &(p, h, length, width, clearance, _))| Vehicle {
                position: p,
                heading: Vec3::new(h.x, 0.0, h.y).normalize(),
                length,
                width,
                clearance,
                object: ObjectId(1 + i as u32),
            })
            .collect(),
        box_stacks: BOX_STACKS.to_vec(),
        boulder_clusters: BOULDERS.to_vec(),
        bushes: BUSHES.to_vec(),
    }
}

/// Waypoints for the building and a sparse set outdoors, all on flat ground (y is the floor
/// or ground height): points in both rooms, for each doorway its centre and a point 1 m to
/// each side of it (inside and outside), a ring around the building, and points beside the
/// vehicles, box stacks, boulder clusters and at the top and foot of the cliff.
#[must_use]
pub fn village_waypoints() -> Vec<Vec3> {
    let l = village_layout();
    let f = l.floor_y;
    let mut w = vec![l.room_center, l.side_room_center];
    for (x, z) in [
        (-19.0, 8.0),
        (-19.0, 12.0),
        (-15.0, 8.0),
        (-15.0, 12.0),
        (-11.1, 7.5),
        (-11.1, 12.5),
    ] {
        w.push(Vec3::new(x, f, z));
    }
    for d in &l.doorways {
        let (inside_y, outside_y) = if d.exterior { (f, 0.0) } else { (f, f) };
        w.push(d.center);
        w.push(Vec3::new(d.center.x, inside_y, d.center.z) - d.normal * 1.0);
        w.push(Vec3::new(d.center.x, outside_y, d.center.z) + d.normal * 1.0);
    }
    for x in [-25.0, -15.0, -5.0] {
        for z in [2.0, 10.0, 18.0] {
            if !(x == -15.0 && z == 10.0) {
                w.push(Vec3::new(x, 0.0, z));
            }
        }
    }
    for v in &l.vehicles {
        let side = v.heading.cross(Vec3::Y) * (v.width / 2.0 + 1.5);
        w.extend([v.position + side, v.position - side]);
    }
    for s in &l.box_stacks {
        w.extend([*s + Vec3::X * 3.5, *s - Vec3::X * 3.5]);
    }
    for c in &l.boulder_clusters {
        w.push(*c + Vec3::Z * 6.5);
    }
    w.push(Vec3::new(43.0, CLIFF, PLATEAU_MAX.y - 3.0));
    w.push(Vec3::new(43.0, 0.0, PLATEAU_MAX.y + 3.0));
    w
}

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

/// The village (see the module docs for the layout). About 35k triangles at detail 1.
#[must_use]
pub fn village(seed: u64, detail: u32) -> Scene {
    let d = super::detail(detail);
    let mut b = Builder::new(d);
    let mut rng = Rng::new(seed);
    let terrain = Terrain::new(&mut rng.fork(1));
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
    // The plateau: a closed solid sunk 0.5 m into the ground, its west face the steep slope
    // and its south face the cliff.
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

    building().build(&mut b);

    // Boulder clusters: four seeded boulders each, sunk a quarter of their height.
    let stone = b.mat(Mat::Rock);
    let mut brng = rng.fork(2);
    for c in BOULDERS {
        for _ in 0..4 {
            let a = brng.range(0.0, std::f32::consts::TAU);
            let r = brng.range(0.5, 4.0);
            let rx = brng.range(0.6, 1.5);
            let radii = Vec3::new(rx, rx * brng.range(0.5, 0.9), rx * brng.range(0.7, 1.1));
            let p = c + Vec3::new(a.cos() * r, 0.0, a.sin() * r);
            let centre = Vec3::new(p.x, terrain.height(p.x, p.z) + radii.y * 0.75, p.z);
            let bumps = Bumps::new(&mut brng, 0.15);
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
    // Box stacks of 1.2 m crates, each crate jittered a little.
    let crate_mat = b.mat(Mat::Crate);
    let mut crng = rng.fork(3);
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

    let layout = village_layout();
    for (&(_, _, length, width, clearance, truck), v) in VEHICLES.iter().zip(&layout.vehicles) {
        let mesh = vehicle(&mut b, length, width, clearance, truck);
        b.movable(mesh, frame(v.position, Vec2::new(v.heading.x, v.heading.z)));
    }
    for door in &layout.doors {
        let mesh = door_leaf(&mut b, DOOR_W, 2.0);
        b.movable(mesh, door.open);
    }
    b.finish()
}
