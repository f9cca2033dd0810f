//! Terrain reasoning on the waypoint graph (van der Sterren, *Terrain Reasoning for 3D Action
//! Games*): the relations between waypoints ([`Relations`]), per-waypoint properties
//! ([`props`]), directions and focus, and the ratings built on them: sniping spots
//! ([`sniping`]), in-game experience and traffic ([`experience`]), ambush, combat, strongholds
//! and sentry spots ([`tactics`]), out-of-sight threat prediction ([`predict`]) and door
//! patches ([`patch`]).
//!
//! Directions are 8 sectors of 45 degrees centred on the compass points; east is +X and north
//! is -Z (the built-in scenes' convention: the pictures put north at the top).

pub mod experience;
mod keys;
pub mod patch;
pub mod predict;
pub mod props;
pub mod relations;
pub mod sniping;
pub mod survey;
pub mod tactics;

pub use relations::{los_lof_value, Interaction, RelationParams, Relations, FIRE, SIGHT};
pub use survey::{Survey, SurveyParams};

use glam::Vec3;

/// Number of direction sectors.
pub const SECTORS: usize = 8;

/// One of the 8 sectors of 45 degrees, counter-clockwise from east seen from above:
/// 0 east, 1 north-east, 2 north, 3 north-west, 4 west, 5 south-west, 6 south, 7 south-east.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Direction(u8);

impl Direction {
    pub const EAST: Direction = Direction(0);
    pub const NORTH: Direction = Direction(2);
    pub const WEST: Direction = Direction(4);
    pub const SOUTH: Direction = Direction(6);
    /// Names in sector order, as the command line takes them.
    pub const NAMES: [&'static str; SECTORS] = [
        "east",
        "north-east",
        "north",
        "north-west",
        "west",
        "south-west",
        "south",
        "south-east",
    ];

    /// Sector `i` (taken modulo 8).
    #[must_use]
    pub const fn new(i: usize) -> Direction {
        Direction((i % SECTORS) as u8)
    }

    /// Every sector, east first.
    pub fn all() -> impl Iterator<Item = Direction> {
        (0..SECTORS).map(Direction::new)
    }

    #[must_use]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// This direction turned by `steps` x 45 degrees counter-clockwise (negative: clockwise).
    #[must_use]
    pub const fn turned(self, steps: i32) -> Direction {
        Direction::new((self.0 as i32 + steps).rem_euclid(SECTORS as i32) as usize)
    }

    /// The sector `to` lies in, seen from `from` (horizontal bearing; a point straight above
    /// or below counts as east).
    #[must_use]
    pub fn between(from: Vec3, to: Vec3) -> Direction {
        Direction::of_bearing(to.x - from.x, to.z - from.z)
    }

    /// The sector of the horizontal vector `(dx, dz)`.
    #[must_use]
    pub fn of_bearing(dx: f32, dz: f32) -> Direction {
        let angle = (-dz).atan2(dx);
        let k = (angle / std::f32::consts::FRAC_PI_4).round() as i32;
        Direction::new(k.rem_euclid(SECTORS as i32) as usize)
    }

    /// The unit vector at the sector's centre (y = 0).
    #[must_use]
    pub fn unit(self) -> Vec3 {
        let a = self.0 as f32 * std::f32::consts::FRAC_PI_4;
        Vec3::new(a.cos(), 0.0, -a.sin())
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        Self::NAMES[self.index()]
    }

    /// Parses a sector name (`east`, `north-east`, ...), its short form (`e`, `ne`, ...) or a
    /// number 0..8.
    pub fn parse(text: &str) -> crate::Result<Direction> {
        let t = text.trim().to_ascii_lowercase().replace(['_', ' '], "-");
        const SHORT: [&str; SECTORS] = ["e", "ne", "n", "nw", "w", "sw", "s", "se"];
        Self::NAMES
            .iter()
            .position(|n| *n == t || n.replace('-', "") == t)
            .or_else(|| SHORT.iter().position(|s| *s == t))
            .or_else(|| t.parse::<usize>().ok().filter(|&i| i < SECTORS))
            .map(Direction::new)
            .ok_or_else(|| {
                crate::Error::param(
                    "direction",
                    text,
                    "east, north-east, north, north-west, west, south-west, south, south-east \
                     (or e, ne, ..., or 0-7)",
                )
            })
    }
}

/// van der Sterren's `value(w, d)`: the number of waypoints in sector `d` with a
/// line-of-sight-line-of-fire above zero, from per-sector counts.
#[must_use]
pub fn value(counts: &[u32; SECTORS], d: Direction) -> u32 {
    counts[d.index()]
}

/// van der Sterren's focus of a waypoint in direction `d`, from its per-sector interaction
/// counts: `(3 value(d) + value(d + 45) + value(d - 45)) / sum of value(d + a) for a in
/// {-135, -90, +90, +135, +180}`, the ratio of forward interactions to the rest. A waypoint
/// with nothing behind or beside it divides by 1 (its focus is its forward count), not by 0.
#[must_use]
pub fn focus(counts: &[u32; SECTORS], d: Direction) -> f32 {
    let v = |k: i32| counts[d.turned(k).index()] as f32;
    let forward = 3.0 * v(0) + v(1) + v(-1);
    let rest = v(-3) + v(-2) + v(2) + v(3) + v(4);
    forward / rest.max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sectors_follow_the_compass() {
        let o = Vec3::ZERO;
        assert_eq!(
            Direction::between(o, Vec3::new(10.0, 0.0, 0.0)),
            Direction::EAST
        );
        assert_eq!(
            Direction::between(o, Vec3::new(0.0, 5.0, -3.0)),
            Direction::NORTH
        );
        assert_eq!(
            Direction::between(o, Vec3::new(-1.0, 0.0, 0.0)),
            Direction::WEST
        );
        assert_eq!(
            Direction::between(o, Vec3::new(0.0, 0.0, 2.0)),
            Direction::SOUTH
        );
        assert_eq!(
            Direction::between(o, Vec3::new(1.0, 0.0, -1.0)).name(),
            "north-east"
        );
        // 22 degrees north of east is still east; 23 is north-east.
        let at = |deg: f32| Vec3::new(deg.to_radians().cos(), 0.0, -deg.to_radians().sin());
        assert_eq!(Direction::between(o, at(22.0)), Direction::EAST);
        assert_eq!(Direction::between(o, at(23.0)).index(), 1);
        for d in Direction::all() {
            assert_eq!(Direction::between(o, d.unit()), d);
            assert_eq!(Direction::parse(d.name()).unwrap(), d);
        }
        assert_eq!(Direction::parse("NE").unwrap().index(), 1);
        assert!(Direction::parse("up").is_err());
    }

    #[test]
    fn focus_is_the_forward_to_rest_ratio() {
        // 10 east, 2 north-east, 4 south-east, 1 north, 3 west, 0 elsewhere.
        let c = [10, 2, 1, 0, 3, 0, 0, 4];
        let f = focus(&c, Direction::EAST);
        assert_eq!(f, (30.0 + 2.0 + 4.0) / (1.0 + 3.0));
        // Nothing behind or beside: divide by one.
        assert_eq!(focus(&[5, 1, 0, 0, 0, 0, 0, 0], Direction::EAST), 16.0);
        // Looking west: forward 3*3 + 0 + 0, rest = north-east 2 + north 1 + south-east 4
        // + east 10 (+ south 0).
        assert_eq!(focus(&c, Direction::WEST), 9.0 / 17.0);
        assert_eq!(value(&c, Direction::WEST), 3);
    }
}
