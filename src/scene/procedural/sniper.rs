//! `sniper`: van der Sterren's example level (van der Sterren, "The Terrain"): two buildings on
//! opposite ends, each with two windows viewing the bridge and a door; a creek separating the
//! two sides; a bridge with half-height walls; two stairs out of the creek with half walls;
//! two full-height walls.
//!
//! The map is 80 m x 60 m (x in -40..40, z in -30..30; north is -Z), banks at y = 0:
//!
//! | feature | where |
//! |---|---|
//! | creek | runs north-south, x -4..4, vertical rock banks, bed at y = -3, water surface at y = -2.7 |
//! | bridge | deck x -4..4, z -2..2, top at y = 0; 1 m parapets (0.25 m thick) along z = -2 and z = 2, x -5..5 |
//! | northern stairs | against the west bank, x -4..-2.5, from the bed at z = -11 up to the bank at z = -14.6; half wall at x -2.5..-2.25 |
//! | southern stairs | against the east bank, x 2.5..4, from the bed at z = 11 up to the bank at z = 14.6; half wall at x 2.25..2.5 |
//! | full-height walls (3 m) | north-west: x = -18, z -22..-12; alley wall: z = 21.5, x -37..-25 (the alley south of the south-west building) |
//! | south-west building | x -36..-26, z 8..18, 3 m; windows in the east wall at z = 10.5 and 15.5; door in the north wall at x = -31; interior wall at z = 13 |
//! | north-east building | x 26..36, z -18..-8, 3 m; windows in the west wall at z = -15.5 and -10.5; door in the south wall at x = 31; interior wall at z = -13 |
//!
//! Windows are 1.2 m x 1.0 m holes with a 1 m sill; doorways are 0.9 m x 2.1 m. Movable
//! objects: the south-west door leaf (object 1) and the north-east one (object 2), both open.

use super::building::{door_frames, Building, InteriorWall, Opening, Side};
use super::geom::{cuboid, door_leaf, frame, grid, height_field, hexa, segs, wall, Hole};
use super::{Builder, Mat, Scene};
use crate::scene::ObjectId;
use glam::{Affine3A, Vec2, Vec3};

/// A building of the sniper level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SniperBuilding {
    pub min: Vec3,
    pub max: Vec3,
    /// Window centres (mid-wall) and their outward normal.
    pub windows: [Vec3; 2],
    pub window_normal: Vec3,
    /// Doorway centre at ground level, mid-wall, and its outward normal.
    pub door: Vec3,
    pub door_normal: Vec3,
    pub door_object: ObjectId,
    pub door_closed: Affine3A,
    pub door_open: Affine3A,
}

/// Where the sniper level's features are (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct SniperLayout {
    /// Map extents in x and z (y is the bank height, 0).
    pub min: Vec3,
    pub max: Vec3,
    /// The creek's x range, bed and water heights.
    pub creek_x: [f32; 2],
    pub creek_bed_y: f32,
    pub water_y: f32,
    pub bridge_center: Vec3,
    /// Each stair's foot (on the bed) and head (top step), northern then southern.
    pub stairs: [[Vec3; 2]; 2],
    /// End points (on the ground) of the north-west and the alley full-height walls.
    pub full_walls: [[Vec3; 2]; 2],
    /// South-west then north-east building.
    pub buildings: [SniperBuilding; 2],
}

const HALF: Vec2 = Vec2::new(40.0, 30.0);
const CREEK: f32 = 4.0;
const BED: f32 = -3.0;
const WATER: f32 = -2.7;

fn buildings() -> [(Building, Side); 2] {
    let make =
        |min: Vec2, max: Vec2, win_side, win_z: [f32; 2], door_side, door_x: f32, inner_z: f32| {
            Building {
                min,
                max,
                base: 0.0,
                storeys: 1,
                storey_h: 3.0,
                wall_t: 0.3,
                parapet: 0.0,
                openings: vec![
                    Opening {
                        side: win_side,
                        along: win_z[0],
                        bottom: 1.0,
                        width: 1.2,
                        height: 1.0,
                        glass: false,
                    },
                    Opening {
                        side: win_side,
                        along: win_z[1],
                        bottom: 1.0,
                        width: 1.2,
                        height: 1.0,
                        glass: false,
                    },
                    Opening {
                        side: door_side,
                        along: door_x,
                        bottom: 0.0,
                        width: 0.9,
                        height: 2.1,
                        glass: false,
                    },
                ],
                stairs: false,
                interior: vec![InteriorWall {
                    along_x: true,
                    at: inner_z,
                    doors: vec![(door_x, 0.9)],
                }],
                wall: Mat::Plaster,
                roof: Mat::Roof,
            }
        };
    [
        (
            make(
                Vec2::new(-36.0, 8.0),
                Vec2::new(-26.0, 18.0),
                Side::East,
                [10.5, 15.5],
                Side::North,
                -31.0,
                13.0,
            ),
            Side::East,
        ),
        (
            make(
                Vec2::new(26.0, -18.0),
                Vec2::new(36.0, -8.0),
                Side::West,
                [-15.5, -10.5],
                Side::South,
                31.0,
                -13.0,
            ),
            Side::West,
        ),
    ]
}

/// The fixed positions of the sniper level's features.
#[must_use]
pub fn sniper_layout() -> SniperLayout {
    let bs = buildings().map(|(bld, win_side)| {
        let win: Vec<Vec3> = bld.openings[..2]
            .iter()
            .map(|o| bld.opening_center(o) + Vec3::Y * 0.5)
            .collect();
        let door = bld.openings[2];
        let c = bld.opening_center(&door);
        let (closed, open) = door_frames(c, door.side.normal(), door.width);
        (
            bld,
            win_side,
            [win[0], win[1]],
            c,
            door.side.normal(),
            closed,
            open,
        )
    });
    let mut i = 0;
    let buildings = bs.map(
        |(bld, side, windows, door, door_normal, door_closed, door_open)| {
            i += 1;
            SniperBuilding {
                min: Vec3::new(bld.min.x, 0.0, bld.min.y),
                max: Vec3::new(bld.max.x, 3.0, bld.max.y),
                windows,
                window_normal: side.normal(),
                door,
                door_normal,
                door_object: ObjectId(i),
                door_closed,
                door_open,
            }
        },
    );
    SniperLayout {
        min: Vec3::new(-HALF.x, 0.0, -HALF.y),
        max: Vec3::new(HALF.x, 0.0, HALF.y),
        creek_x: [-CREEK, CREEK],
        creek_bed_y: BED,
        water_y: WATER,
        bridge_center: Vec3::ZERO,
        stairs: [
            [Vec3::new(-3.25, BED, -10.5), Vec3::new(-3.25, 0.0, -14.45)],
            [Vec3::new(3.25, BED, 10.5), Vec3::new(3.25, 0.0, 14.45)],
        ],
        full_walls: [
            [Vec3::new(-18.0, 0.0, -22.0), Vec3::new(-18.0, 0.0, -12.0)],
            [Vec3::new(-37.0, 0.0, 21.5), Vec3::new(-25.0, 0.0, 21.5)],
        ],
        buildings,
    }
}

/// The sniper level (see the module docs). About 17k triangles at detail 1.
///
/// The seed is accepted for symmetry with the other scenes; the level is hand-laid and does
/// not depend on it.
#[must_use]
pub fn sniper(_seed: u64, detail: u32) -> Scene {
    let d = super::detail(detail);
    let mut b = Builder::new(d);
    creek(&mut b, d);
    let concrete = b.mat(Mat::Concrete);
    bridge(&mut b, d, concrete);
    creek_stairs(&mut b, d, concrete);
    // Full-height walls.
    let layout = sniper_layout();
    for [a, e] in layout.full_walls {
        let dir = Vec2::new(e.x - a.x, e.z - a.z);
        wall(
            &mut b,
            dir.length(),
            3.0,
            0.3,
            &[] as &[Hole],
            concrete,
            frame(a, dir),
        );
    }
    for (bld, _) in buildings() {
        bld.build(&mut b);
    }
    for bl in &layout.buildings {
        let mesh = door_leaf(&mut b, 0.9, 2.0);
        b.movable(mesh, bl.door_open);
    }
    b.finish()
}

/// The banks' grass, the creek's bed and water surface, and its vertical rock banks facing
/// into it (their edges match the grids' vertices).
fn creek(b: &mut Builder, d: f32) {
    let (grass, bed, rock, water) = (
        b.mat(Mat::Grass),
        b.mat(Mat::Ground),
        b.mat(Mat::Rock),
        b.mat(Mat::Water),
    );
    let nz = segs(2.0 * HALF.y, d);
    let nbank = segs(HALF.x - CREEK, d);
    let ncreek = segs(2.0 * CREEK, d);
    let flat = |b: &mut Builder, x0: f32, x1: f32, nx: u32, y: f32, m: u32| {
        height_field(
            &mut b.level,
            Vec2::new(x0, -HALF.y),
            Vec2::new(x1, HALF.y),
            [nx, nz],
            |_, _| y,
            |_, _| m,
        );
    };
    flat(b, -HALF.x, -CREEK, nbank, 0.0, grass);
    flat(b, CREEK, HALF.x, nbank, 0.0, grass);
    flat(b, -CREEK, CREEK, ncreek, BED, bed);
    flat(b, -CREEK, CREEK, ncreek, WATER, water);
    // Vertical banks, facing into the creek; their edges match the grids' vertices.
    let ny = segs(-BED, d);
    let y = |i: u32| {
        if i >= ny {
            0.0
        } else {
            BED - BED * i as f32 / ny as f32
        }
    };
    let z = |j: u32| {
        if j >= nz {
            HALF.y
        } else {
            -HALF.y + 2.0 * HALF.y * (j as f32 / nz as f32)
        }
    };
    grid(
        &mut b.level,
        ny,
        nz,
        |i, j| Vec3::new(-CREEK, y(i), z(j)),
        |_, _| rock,
    );
    grid(
        &mut b.level,
        nz,
        ny,
        |j, i| Vec3::new(CREEK, y(i), z(j)),
        |_, _| rock,
    );
}

/// The bridge's deck over the creek and its two 1 m parapets.
fn bridge(b: &mut Builder, d: f32, concrete: u32) {
    let id = Affine3A::IDENTITY;
    cuboid(
        &mut b.level,
        Vec3::new(-CREEK, -0.4, -2.0),
        Vec3::new(CREEK, 0.0, 2.0),
        d,
        concrete,
        id,
    );
    for (z0, z1) in [(-2.0, -1.75), (1.75, 2.0)] {
        cuboid(
            &mut b.level,
            Vec3::new(-5.0, 0.0, z0),
            Vec3::new(5.0, 1.0, z1),
            d,
            concrete,
            id,
        );
    }
}

/// Stairs: 12 steps of 0.25 m x 0.3 m against a bank, with a sloped half wall beside them;
/// the northern flight against the west bank, the southern against the east.
fn creek_stairs(b: &mut Builder, d: f32, concrete: u32) {
    let id = Affine3A::IDENTITY;
    let stair = b.mat(Mat::Stair);
    for (x0, x1, wall_x, z_foot, dir) in [
        (-CREEK, -2.5, -2.5 + 0.125, -11.0, -1.0),
        (2.5, CREEK, 2.5 - 0.125, 11.0, 1.0),
    ] {
        for i in 0..12 {
            let (za, zb) = (
                z_foot + dir * 0.3 * i as f32,
                z_foot + dir * 0.3 * (i + 1) as f32,
            );
            let top = BED + 0.25 * (i + 1) as f32;
            cuboid(
                &mut b.level,
                Vec3::new(x0, BED, za.min(zb)),
                Vec3::new(x1, top, za.max(zb)),
                d,
                stair,
                id,
            );
        }
        let z_head = z_foot + dir * 3.6;
        let c: [Vec3; 8] = std::array::from_fn(|k| {
            let x = wall_x + if k & 1 == 0 { -0.125 } else { 0.125 };
            let z = if k & 4 == 0 {
                z_foot.min(z_head)
            } else {
                z_foot.max(z_head)
            };
            let at_head = (z - z_head).abs() < 1e-3;
            let y = if k & 2 == 0 {
                BED
            } else if at_head {
                1.0
            } else {
                BED + 0.25 + 1.0
            };
            Vec3::new(x, y, z)
        });
        hexa(&mut b.level, &c, d, [concrete; 6]);
    }
}
