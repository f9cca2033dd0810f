//! `urban`: a 100 m x 122 m city block after Darken, McCue and Guerrero's test level (Darken, McCue, Guerrero:
//! 3,784 waypoints at 2 m spacing over 100 m by 122 m).
//!
//! x in -50..50, z in -61..61 (north is -Z), ground at y = 0. Fixed street grid:
//!
//! | feature | where |
//! |---|---|
//! | north-south street | x -5..5, full length (10 m of road) |
//! | east-west streets | z -26..-16 and z 16..26, full width |
//! | crossroads | (0, 0, -21) and (0, 0, 21) |
//! | blocks | x -50..-5 and 5..50 times z -61..-26, -16..16, 26..61 |
//! | sidewalks | 2 m wide, inside each block along every street |
//!
//! The seed lays out each block: it is cut into 2 x 2 lots; one lot is a courtyard (2.2 m
//! walls with a 3 m gate, a few bushes) and the others hold buildings of 2 to 5 storeys
//! (3 m each) with a window every 3-4.5 m on every storey, a walkable roof (some with a 1 m
//! parapet), a doorway and bullet-proof shop windows on each street-facing ground floor.
//! A lot that faces no street has its doorway or gate on the alley across the block's middle,
//! which leads out to a street.
//! Buildings stand 1 m back from lot edges that do not face a street. Cars (4.4 m x 1.8 m,
//! 0.3 m ground clearance) are parked along both curbs of every street, away from the
//! crossroads; each is a movable object.

use super::building::{Building, Opening, Side};
use super::geom::{blob, frame, height_field, segs, vehicle, wall, Bumps, Hole};
use super::{Builder, Mat, Rng, Scene};
use glam::{Vec2, Vec3};

const HALF: Vec2 = Vec2::new(50.0, 61.0);
/// Half width of every street.
const STREET: f32 = 5.0;
const EW_STREETS: [f32; 2] = [-21.0, 21.0];
const SIDEWALK: f32 = 2.0;

fn in_street(x: f32, z: f32) -> bool {
    x.abs() < STREET || EW_STREETS.iter().any(|&c| (z - c).abs() < STREET)
}

fn in_sidewalk(x: f32, z: f32) -> bool {
    !in_street(x, z)
        && (x.abs() < STREET + SIDEWALK
            || EW_STREETS
                .iter()
                .any(|&c| (z - c).abs() < STREET + SIDEWALK))
}

/// The urban block (see the module docs). About 57k triangles at detail 1; detail 7
/// passes a million.
#[must_use]
pub fn urban(seed: u64, detail: u32) -> Scene {
    let d = super::detail(detail);
    let mut b = Builder::new(0.3 * d);
    let mut rng = Rng::new(seed).fork(0x0b);
    let (road, pavement, ground) = (b.mat(Mat::Road), b.mat(Mat::Pavement), b.mat(Mat::Ground));
    let (nx, nz) = (segs(2.0 * HALF.x, 0.5 * d), segs(2.0 * HALF.y, 0.5 * d));
    height_field(
        &mut b.level,
        -HALF,
        HALF,
        [nx, nz],
        |_, _| 0.0,
        |x, z| {
            if in_street(x, z) {
                road
            } else if in_sidewalk(x, z) {
                pavement
            } else {
                ground
            }
        },
    );

    let xs = [(-HALF.x, -STREET), (STREET, HALF.x)];
    let zs = [
        (-HALF.y, EW_STREETS[0] - STREET),
        (EW_STREETS[0] + STREET, EW_STREETS[1] - STREET),
        (EW_STREETS[1] + STREET, HALF.y),
    ];
    for &(x0, x1) in &xs {
        for &(z0, z1) in &zs {
            let mut r = rng.fork(0);
            block(&mut b, &mut r, Vec2::new(x0, z0), Vec2::new(x1, z1));
        }
    }
    parked_cars(&mut b, &mut rng.fork(1));
    b.finish()
}

/// Which sides of the rectangle `[min, max]` touch a street (within a sidewalk's width).
fn street_sides(min: Vec2, max: Vec2) -> Vec<Side> {
    let near = |v: f32, targets: &[f32]| targets.iter().any(|&t| (v - t).abs() < SIDEWALK + 0.01);
    let ew_edges: Vec<f32> = EW_STREETS
        .iter()
        .flat_map(|&c| [c - STREET, c + STREET])
        .collect();
    let mut s = Vec::new();
    if near(min.y, &ew_edges) {
        s.push(Side::North);
    }
    if near(max.y, &ew_edges) {
        s.push(Side::South);
    }
    if near(min.x, &[STREET]) {
        s.push(Side::West);
    }
    if near(max.x, &[-STREET]) {
        s.push(Side::East);
    }
    s
}

fn block(b: &mut Builder, rng: &mut Rng, min: Vec2, max: Vec2) {
    // Pull the usable area back from the streets by the sidewalk.
    let (mut lo, mut hi) = (min, max);
    for side in street_sides(min, max) {
        match side {
            Side::North => lo.y += SIDEWALK,
            Side::South => hi.y -= SIDEWALK,
            Side::West => lo.x += SIDEWALK,
            Side::East => hi.x -= SIDEWALK,
        }
    }
    let split = Vec2::new(
        lo.x + (hi.x - lo.x) * rng.range(0.4, 0.6),
        lo.y + (hi.y - lo.y) * rng.range(0.4, 0.6),
    );
    let courtyard = rng.below(4);
    for k in 0..4u32 {
        let lot_min = Vec2::new(
            if k & 1 == 0 { lo.x } else { split.x },
            if k & 2 == 0 { lo.y } else { split.y },
        );
        let lot_max = Vec2::new(
            if k & 1 == 0 { split.x } else { hi.x },
            if k & 2 == 0 { split.y } else { hi.y },
        );
        let streets = street_sides(lot_min, lot_max);
        // A lot off the streets opens onto the alley between it and its neighbour across
        // the block's middle, which runs out to a street.
        let inner = if k & 1 == 0 { Side::East } else { Side::West };
        let entry = streets.first().copied().unwrap_or(inner);
        let mut r = rng.fork(u64::from(k));
        if k == courtyard {
            court(b, &mut r, lot_min, lot_max, entry);
        } else {
            house(b, &mut r, lot_min, lot_max, &streets, entry);
        }
    }
}

/// A house on its lot, set back 1 m from edges off the streets, with a door on every street
/// side and on `entry`.
fn house(
    b: &mut Builder,
    rng: &mut Rng,
    lot_min: Vec2,
    lot_max: Vec2,
    streets: &[Side],
    entry: Side,
) {
    let back = |s: Side| if streets.contains(&s) { 0.0 } else { 1.0 };
    let min = lot_min + Vec2::new(back(Side::West), back(Side::North));
    let max = lot_max - Vec2::new(back(Side::East), back(Side::South));
    let storeys = 2 + rng.below(4);
    let storey_h = 3.0;
    let pitch = rng.range(3.0, 4.5);
    let parapet = if rng.f32() < 0.5 { 1.0 } else { 0.0 };
    let wall_mat = if rng.f32() < 0.5 {
        Mat::Brick
    } else {
        Mat::Concrete
    };
    let mut openings = Vec::new();
    for side in [Side::North, Side::South, Side::West, Side::East] {
        let (a0, a1) = match side {
            Side::North | Side::South => (min.x, max.x),
            Side::West | Side::East => (min.y, max.y),
        };
        let count = ((a1 - a0 - 2.0) / pitch).floor().max(0.0) as u32 + 1;
        let first = (a0 + a1) / 2.0 - pitch * (count - 1) as f32 / 2.0;
        let street = streets.contains(&side);
        for s in 0..storeys {
            for i in 0..count {
                let along = first + pitch * i as f32;
                let ground = s == 0;
                let door = ground && (street || side == entry) && i == count / 2;
                let bottom = s as f32 * storey_h + if door { 0.0 } else { 0.9 };
                let height = if door { 2.4 } else { 1.4 };
                let glass = ground && street && !door;
                openings.push(Opening {
                    side,
                    along,
                    bottom,
                    width: 1.2,
                    height,
                    glass,
                });
            }
        }
    }
    Building {
        min,
        max,
        base: 0.0,
        storeys,
        storey_h,
        wall_t: 0.3,
        parapet,
        openings,
        interior: Vec::new(),
        stairs: true,
        wall: wall_mat,
        roof: Mat::Roof,
    }
    .build(b);
}

/// A walled courtyard with its gate on `gate_side`.
fn court(b: &mut Builder, rng: &mut Rng, lot_min: Vec2, lot_max: Vec2, gate_side: Side) {
    let (min, max) = (lot_min + 0.5, lot_max - 0.5);
    let t = 0.3;
    let h = 2.2;
    let mat = b.mat(Mat::Concrete);
    for side in [Side::North, Side::South, Side::West, Side::East] {
        let (origin, dir, len) = match side {
            Side::North => (
                Vec3::new(min.x, 0.0, min.y + t / 2.0),
                Vec2::X,
                max.x - min.x,
            ),
            Side::South => (
                Vec3::new(min.x, 0.0, max.y - t / 2.0),
                Vec2::X,
                max.x - min.x,
            ),
            Side::West => (
                Vec3::new(min.x + t / 2.0, 0.0, min.y + t),
                Vec2::Y,
                max.y - min.y - 2.0 * t,
            ),
            Side::East => (
                Vec3::new(max.x - t / 2.0, 0.0, min.y + t),
                Vec2::Y,
                max.y - min.y - 2.0 * t,
            ),
        };
        let holes: Vec<Hole> = if side == gate_side {
            let c = len * rng.range(0.3, 0.7);
            vec![Hole {
                u0: c - 1.5,
                u1: c + 1.5,
                v0: 0.0,
                v1: h,
                glass: false,
            }]
        } else {
            Vec::new()
        };
        wall(b, len, h, t, &holes, mat, frame(origin, dir));
    }
    let foliage = b.mat(Mat::Foliage);
    let n = segs(3.0, b.density).max(3);
    for _ in 0..3 {
        let p = Vec3::new(
            rng.range(min.x + 2.0, max.x - 2.0),
            0.6,
            rng.range(min.y + 2.0, max.y - 2.0),
        );
        let bumps = Bumps::new(rng, 0.2);
        blob(
            &mut b.level,
            p,
            Vec3::new(1.2, 0.9, 1.0),
            n,
            &bumps,
            foliage,
        );
    }
}

fn parked_cars(b: &mut Builder, rng: &mut Rng) {
    let lane = STREET - 1.1;
    let mut slots = Vec::new();
    // North-south street: cars heading +Z along both curbs, clear of the crossroads.
    let mut z = -HALF.y + 3.0;
    while z < HALF.y - 3.0 {
        if EW_STREETS.iter().all(|&c| (z - c).abs() > STREET + 3.0) {
            slots.extend([
                (Vec3::new(-lane, 0.0, z), Vec2::Y),
                (Vec3::new(lane, 0.0, z), Vec2::NEG_Y),
            ]);
        }
        z += 6.5;
    }
    for &c in &EW_STREETS {
        let mut x = -HALF.x + 3.0;
        while x < HALF.x - 3.0 {
            if x.abs() > STREET + 3.0 {
                slots.extend([
                    (Vec3::new(x, 0.0, c - lane), Vec2::X),
                    (Vec3::new(x, 0.0, c + lane), Vec2::NEG_X),
                ]);
            }
            x += 6.5;
        }
    }
    for (p, dir) in slots {
        if rng.f32() < 0.45 {
            let mesh = vehicle(b, 4.4, 1.8, 0.3, false);
            b.movable(mesh, frame(p, dir));
        }
    }
}
