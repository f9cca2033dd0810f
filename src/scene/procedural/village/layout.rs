//! Where the village's features are: fixed positions, the building's spec and waypoints.

use super::super::building::{door_frames, Building, InteriorWall, Opening, Side, FLOOR_TOP};
use super::super::Mat;
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

pub(super) const HALF: f32 = 60.0;
pub(super) const PLATEAU_MIN: Vec2 = Vec2::new(25.0, -60.0);
pub(super) const PLATEAU_MAX: Vec2 = Vec2::new(60.0, -25.0);
pub(super) const CLIFF: f32 = 3.0;
pub(super) const SLOPE_DEG: f32 = 60.0;
/// Footprint (x, z) of the ramp up the plateau; it ends where the steep slope meets the top.
pub(super) const RAMP_MIN: Vec2 = Vec2::new(19.0, -58.0);
pub(super) const RAMP_MAX: Vec2 = Vec2::new(26.732_05, -54.0);
pub(super) const BUILDING_MIN: Vec2 = Vec2::new(-21.0, 6.0);
pub(super) const BUILDING_MAX: Vec2 = Vec2::new(-9.0, 14.0);
pub(super) const DOOR_W: f32 = 0.9;
pub(super) const DOOR_H: f32 = 2.1;
/// (position, heading (x, z), length, width, clearance, truck)
pub(super) const VEHICLES: [(Vec3, Vec2, f32, f32, f32, bool); 3] = [
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
pub(super) const BOX_STACKS: [Vec3; 3] = [
    Vec3::new(-2.0, 0.0, -5.0),
    Vec3::new(-32.0, 0.0, 26.0),
    Vec3::new(12.0, 0.0, -28.0),
];
pub(super) const BOULDERS: [Vec3; 2] = [Vec3::new(-38.0, 0.0, -38.0), Vec3::new(30.0, 0.0, 10.0)];
pub(super) const BUSHES: [Vec3; 2] = [Vec3::new(-27.0, 0.0, 17.0), Vec3::new(-3.0, 0.0, 4.0)];

pub(super) fn building() -> Building {
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
        stairs: false,
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
    let doorways = doorways(&bld, floor_y);
    let windows = windows(&bld);
    let doors = doors(&doorways);
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
        vehicles: vehicles(),
        box_stacks: BOX_STACKS.to_vec(),
        boulder_clusters: BOULDERS.to_vec(),
        bushes: BUSHES.to_vec(),
    }
}

/// The building's exterior doorways (its openings reaching the floor, in order), then the
/// interior doorway.
fn doorways(bld: &Building, floor_y: f32) -> Vec<Doorway> {
    let mut doorways: Vec<Doorway> = bld
        .openings
        .iter()
        .filter(|o| o.bottom == 0.0)
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
    doorways
}

/// The building's openings with a sill, in order.
fn windows(bld: &Building) -> Vec<Window> {
    bld.openings
        .iter()
        .filter(|o| o.bottom > 0.0)
        .map(|o| Window {
            center: bld.opening_center(o) + Vec3::Y * o.height / 2.0,
            normal: o.side.normal(),
            width: o.width,
            height: o.height,
            glazed: o.glass,
        })
        .collect()
}

/// A door leaf in each exterior doorway; objects numbered after the vehicles.
fn doors(doorways: &[Doorway]) -> Vec<Door> {
    doorways
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
        .collect()
}

/// The parked vehicles, objects 1..=3.
fn vehicles() -> Vec<Vehicle> {
    VEHICLES
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
        .collect()
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
