//! Rectangular buildings: four exterior walls with door and window holes, floor slabs per
//! storey, a walkable roof, optional interior walls with doorways and an optional stairwell
//! joining the storeys and the roof.

use super::geom::{cuboid, frame, wall, Hole};
use super::{Builder, Mat};
use glam::{Affine3A, Vec2, Vec3};

/// Thickness of floor and roof slabs.
pub(crate) const SLAB: f32 = 0.25;
/// Height of the ground-floor slab's top above the building's base.
pub(crate) const FLOOR_TOP: f32 = 0.05;

/// Transforms for a door leaf from [`super::geom::door_leaf`] in a doorway at `center` (floor
/// level, mid-wall) with outward `normal`: (closed, open 90 degrees away from `normal`). The
/// hinge is on the jamb at the low end of the wall's along-axis (+X or +Z), 6 cm above the sill.
pub(crate) fn door_frames(center: Vec3, normal: Vec3, width: f32) -> (Affine3A, Affine3A) {
    let along = if normal.z != 0.0 { Vec2::X } else { Vec2::Y };
    let hinge = center - Vec3::new(along.x, 0.0, along.y) * width / 2.0 + Vec3::Y * 0.06;
    (
        frame(hinge, along),
        frame(hinge, Vec2::new(-normal.x, -normal.z)),
    )
}

/// Which exterior wall; north is -Z.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    North,
    South,
    West,
    East,
}

impl Side {
    /// Outward unit normal.
    pub(crate) fn normal(self) -> Vec3 {
        match self {
            Side::North => Vec3::NEG_Z,
            Side::South => Vec3::Z,
            Side::West => Vec3::NEG_X,
            Side::East => Vec3::X,
        }
    }
}

/// A hole in an exterior wall. `along` is the world X (north/south walls) or Z (west/east
/// walls) of its centre; `bottom` is its sill height above the base (0 for a doorway).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Opening {
    pub side: Side,
    pub along: f32,
    pub bottom: f32,
    pub width: f32,
    pub height: f32,
    pub glass: bool,
}

/// An interior wall spanning the inside of the building, on every storey. Runs along X at
/// world `z = at` when `along_x`, else along Z at `x = at`; `doors` are (centre, width) pairs
/// in the same along-coordinate as [`Opening::along`], 2.1 m tall.
#[derive(Clone, Debug)]
pub(crate) struct InteriorWall {
    pub along_x: bool,
    pub at: f32,
    pub doors: Vec<(f32, f32)>,
}

#[derive(Clone, Debug)]
pub(crate) struct Building {
    /// Outer footprint corners (x, z).
    pub min: Vec2,
    pub max: Vec2,
    pub base: f32,
    pub storeys: u32,
    pub storey_h: f32,
    pub wall_t: f32,
    /// Height the exterior walls rise above the roof.
    pub parapet: f32,
    pub openings: Vec<Opening>,
    pub interior: Vec<InteriorWall>,
    /// A switchback stairwell in the north-west inside corner joining every storey and the
    /// roof (see [`Building::stairwell`]).
    pub stairs: bool,
    pub wall: Mat,
    pub roof: Mat,
}

/// Stairwell flights: steps, their tread, the flight's width and the landing before it.
pub(crate) const STEPS: usize = 12;
pub(crate) const TREAD: f32 = 0.3;
pub(crate) const FLIGHT_W: f32 = 1.2;
pub(crate) const LANDING: f32 = 1.2;

impl Building {
    /// World centre of an opening, at mid-wall thickness and `bottom` height.
    pub(crate) fn opening_center(&self, o: &Opening) -> Vec3 {
        let t = self.wall_t / 2.0;
        let y = self.base + o.bottom;
        match o.side {
            Side::North => Vec3::new(o.along, y, self.min.y + t),
            Side::South => Vec3::new(o.along, y, self.max.y - t),
            Side::West => Vec3::new(self.min.x + t, y, o.along),
            Side::East => Vec3::new(self.max.x - t, y, o.along),
        }
    }

    /// The footprint (x0, x1, z0, z1) of flight `k` (from storey `k` up to `k + 1`): flights
    /// alternate between two strips against the west wall, even ones climbing south (+z),
    /// odd ones north, between landings `LANDING` deep at both ends.
    pub(crate) fn flight(&self, k: u32) -> (f32, f32, f32, f32) {
        let (lo_x, lo_z) = (self.min.x + self.wall_t, self.min.y + self.wall_t);
        let x0 = lo_x + if k.is_multiple_of(2) { 0.0 } else { FLIGHT_W };
        let z0 = lo_z + LANDING;
        (x0, x0 + FLIGHT_W, z0, z0 + STEPS as f32 * TREAD)
    }

    /// Whether the inside is large enough for the stairwell (two flights and both landings,
    /// with room to walk past).
    pub(crate) fn fits_stairwell(&self) -> bool {
        let inside = self.max - self.min - 2.0 * self.wall_t;
        inside.x >= 2.0 * FLIGHT_W + 2.0 && inside.y >= 2.0 * LANDING + STEPS as f32 * TREAD + 2.0
    }

    /// The stairwell: flight `k` of solid steps from the top of slab `k` to the top of slab
    /// `k + 1` (the roof for the last), under a hole cut in slab `k + 1` over the flight.
    fn stairwell(&self, b: &mut Builder, floor_top: impl Fn(u32) -> f32) {
        let stair = b.mat(Mat::Stair);
        let d = b.density;
        for k in 0..self.storeys {
            let (x0, x1, z0, z1) = self.flight(k);
            let (y0, y1) = (floor_top(k), floor_top(k + 1));
            for i in 0..STEPS {
                // Even flights climb toward +z, odd ones toward -z.
                let (za, zb) = if k % 2 == 0 {
                    (z0 + TREAD * i as f32, z0 + TREAD * (i + 1) as f32)
                } else {
                    (z1 - TREAD * (i + 1) as f32, z1 - TREAD * i as f32)
                };
                let top = y0 + (y1 - y0) * (i + 1) as f32 / STEPS as f32;
                cuboid(
                    &mut b.level,
                    Vec3::new(x0, y0, za),
                    Vec3::new(x1, top, zb),
                    d,
                    stair,
                    Affine3A::IDENTITY,
                );
            }
        }
    }

    pub(crate) fn build(&self, b: &mut Builder) {
        self.outer_walls(b);
        let stairs = self.stairs && self.fits_stairwell();
        self.slabs(b, stairs);
        if stairs {
            let (base, h) = (self.base, self.storey_h);
            self.stairwell(b, |k| {
                if k == 0 {
                    base + FLOOR_TOP
                } else {
                    base + k as f32 * h
                }
            });
        }
        self.interior_walls(b);
    }

    /// The four outer walls, full height with the parapet, with their openings cut.
    fn outer_walls(&self, b: &mut Builder) {
        let t = self.wall_t;
        let height = self.storeys as f32 * self.storey_h + self.parapet;
        let wall_mat = b.mat(self.wall);
        for side in [Side::North, Side::South, Side::West, Side::East] {
            // Wall placement: local u runs along +X (north/south) or +Z (west/east).
            let (origin, dir, len) = match side {
                Side::North => (
                    Vec3::new(self.min.x, self.base, self.min.y + t / 2.0),
                    Vec2::X,
                    self.max.x - self.min.x,
                ),
                Side::South => (
                    Vec3::new(self.min.x, self.base, self.max.y - t / 2.0),
                    Vec2::X,
                    self.max.x - self.min.x,
                ),
                Side::West => (
                    Vec3::new(self.min.x + t / 2.0, self.base, self.min.y + t),
                    Vec2::Y,
                    self.max.y - self.min.y - 2.0 * t,
                ),
                Side::East => (
                    Vec3::new(self.max.x - t / 2.0, self.base, self.min.y + t),
                    Vec2::Y,
                    self.max.y - self.min.y - 2.0 * t,
                ),
            };
            let start = if dir == Vec2::X { origin.x } else { origin.z };
            let holes: Vec<Hole> = self
                .openings
                .iter()
                .filter(|o| o.side == side)
                .map(|o| Hole {
                    u0: o.along - o.width / 2.0 - start,
                    u1: o.along + o.width / 2.0 - start,
                    v0: o.bottom,
                    v1: o.bottom + o.height,
                    glass: o.glass,
                })
                .collect();
            wall(b, len, height, t, &holes, wall_mat, frame(origin, dir));
        }
    }

    /// Slabs fill the inside of the walls: the ground floor, each upper floor, the roof; with
    /// `stairs`, each upper slab leaves a hole over the flight arriving at it.
    fn slabs(&self, b: &mut Builder, stairs: bool) {
        let t = self.wall_t;
        let (lo, hi) = (self.min + t, self.max - t);
        let floor = b.mat(Mat::Floor);
        let roof = b.mat(self.roof);
        let d = b.density;
        let slab = |b: &mut Builder, y0: f32, y1: f32, m: u32| {
            let (min, max) = (Vec3::new(lo.x, y0, lo.y), Vec3::new(hi.x, y1, hi.y));
            cuboid(&mut b.level, min, max, d, m, Affine3A::IDENTITY);
        };
        slab(b, self.base - 0.2, self.base + FLOOR_TOP, floor);
        for k in 1..=self.storeys {
            let y = self.base + k as f32 * self.storey_h;
            let m = if k == self.storeys { roof } else { floor };
            if !stairs {
                slab(b, y - SLAB, y, m);
                continue;
            }
            // Cut the hole over the flight that arrives here: four pieces around it.
            let (x0, x1, z0, z1) = self.flight(k - 1);
            let pieces = [
                (lo.x, hi.x, lo.y, z0),
                (lo.x, hi.x, z1, hi.y),
                (lo.x, x0, z0, z1),
                (x1, hi.x, z0, z1),
            ];
            for (ax, bx, az, bz) in pieces {
                if bx - ax > 1e-3 && bz - az > 1e-3 {
                    let (min, max) = (Vec3::new(ax, y - SLAB, az), Vec3::new(bx, y, bz));
                    cuboid(&mut b.level, min, max, d, m, Affine3A::IDENTITY);
                }
            }
        }
    }

    /// The interior walls, storey by storey, with their doorways.
    fn interior_walls(&self, b: &mut Builder) {
        let t = self.wall_t;
        let (lo, hi) = (self.min + t, self.max - t);
        let plaster = b.mat(Mat::Plaster);
        for iw in &self.interior {
            let (origin, dir, len) = if iw.along_x {
                (Vec3::new(lo.x, 0.0, iw.at), Vec2::X, hi.x - lo.x)
            } else {
                (Vec3::new(iw.at, 0.0, lo.y), Vec2::Y, hi.y - lo.y)
            };
            let start = if iw.along_x { lo.x } else { lo.y };
            let holes: Vec<Hole> = iw
                .doors
                .iter()
                .map(|&(c, w)| Hole {
                    u0: c - w / 2.0 - start,
                    u1: c + w / 2.0 - start,
                    v0: 0.0,
                    v1: 2.1,
                    glass: false,
                })
                .collect();
            for k in 0..self.storeys {
                let y = self.base + k as f32 * self.storey_h;
                let top = self.base + (k + 1) as f32 * self.storey_h - SLAB;
                let o = origin + Vec3::Y * y;
                wall(b, len, top - y, 0.15, &holes, plaster, frame(o, dir));
            }
        }
    }
}
