//! The whole body at a spot: where it is sampled for exposure, and whether it fits there.
//!
//! Darken, Morgan and Paull's sensor grid tests three points per posture (the head centre and one radius to each side). That
//! calls a posture hidden when the head is behind a slab while the body below it is seen, and
//! never looks at the body's depth toward the observer. Here a posture's body is the upright
//! cylinder of the agent's radius from [`BodyParams::foot`] above the ground to the posture's
//! head height, and it is hidden from an observer when no ray from the eye reaches any point of
//! it. A ray reaching a point inside the cylinder enters it through the surface the observer
//! faces, so sampling that surface is enough:
//!
//! - **rows** from `foot` up to the head height, at most `row_spacing` apart, the top row
//!   exactly at the head;
//! - **columns** around the half of the cylinder facing the observer: `columns` angles spread
//!   evenly from one side (-90 degrees) through the front (0 degrees, one radius toward the
//!   observer: the body's depth) to the other side (+90 degrees);
//! - the **head centre** on the axis, and the top row carried on around the back of the head
//!   (the top of the cylinder: an observer above sees its far edge over a crest).
//!
//! Lying down, the body is not upright: prone is sampled as a soldier lying toward the observer
//! (as the intervis humanoid lies), from [`PRONE_BACK`] of the standing height behind the spot
//! to [`PRONE_FRONT`] of it in front, every `row_spacing` along its length, with the humanoid's
//! profile: head and shoulders (from a fifth of the standing height in front of the spot), and
//! the spot itself within one radius (where Darken, Morgan and Paull put the prone head), up to
//! the prone head height and one radius to each side, the torso up to three quarters of that,
//! hips and legs (behind the spot) up to under half of it and 0.6 radius to each side; each
//! station at its top and at `foot`, on the axis and at both sides.
//!
//! Darken, Morgan and Paull's three template points ([`super::template_points`]: the head
//! centre, and one radius to each side at the head height) are among the points of crouching
//! and standing; prone keeps their head centre.
//!
//! **Clearance** ([`clearance_segments`]): a posture fits at a spot when the cylinder does not
//! cut fire-blocking geometry (walls, glass): its axis from just above the ground to the head,
//! and two horizontal diameters (along x and z) just under each posture's head, are clear.

pub use crate::agent::{clearance_segments, fitting_posture};

use super::{Agent, Posture};
use crate::{Error, Result};
use glam::Vec3;

/// How far a prone body reaches behind the spot (feet) and in front of it (head), as fractions
/// of the standing height: the intervis humanoid's prone pose.
pub const PRONE_BACK: f32 = 0.56;
pub const PRONE_FRONT: f32 = 0.5;

/// How densely the body is sampled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyParams {
    /// Largest gap between rows of points (metres): vertical for upright postures, along the
    /// body lying prone. Default 0.2 m: 10 rows standing, 6 crouching, 11 stations along a prone body.
    pub row_spacing: f32,
    /// Points per row around the half of the body facing the observer (at least 2: the two
    /// sides). Default 5: sides, the front, and the two 45-degree points.
    pub columns: u32,
    /// Height of the lowest row above the ground (metres). Default 0.1 m: boots and the ground
    /// they stand on are not the body.
    pub foot: f32,
}

impl BodyParams {
    /// The defaults (see each field): 54 points standing, 34 crouching, 67 prone per observer.
    #[must_use]
    pub const fn standard() -> BodyParams {
        BodyParams {
            row_spacing: 0.2,
            columns: 5,
            foot: 0.1,
        }
    }

    /// Checks the parameters (and their product with the agent) before anything is allocated.
    pub fn validate(&self, agent: &Agent) -> Result<()> {
        if !(self.row_spacing.is_finite() && self.row_spacing >= 0.01) {
            return Err(Error::InvalidInput(format!(
                "body row_spacing {} must be at least 0.01 m (default 0.2)",
                self.row_spacing
            )));
        }
        if !(2..=64).contains(&self.columns) {
            return Err(Error::InvalidInput(format!(
                "body columns {} must be 2..=64 (default 5)",
                self.columns
            )));
        }
        if !(self.foot.is_finite() && self.foot >= 0.0 && self.foot < agent.head_heights[0]) {
            return Err(Error::InvalidInput(format!(
                "body foot height {} must be >= 0 and below the prone head height {} (default 0.1)",
                self.foot, agent.head_heights[0]
            )));
        }
        if self.rows(agent, Posture::Standing) > 1024 {
            return Err(Error::InvalidInput(format!(
                "body row_spacing {} gives more than 1024 rows for a {} m body; use a larger spacing",
                self.row_spacing,
                agent.height()
            )));
        }
        Ok(())
    }

    /// Rows of points of `posture`.
    #[must_use]
    pub fn rows(&self, agent: &Agent, posture: Posture) -> usize {
        let span = (agent.head_height(posture) - self.foot).max(0.0);
        (span / self.row_spacing).ceil() as usize + 1
    }

    /// Points per observer of `posture`.
    #[must_use]
    pub fn points(&self, agent: &Agent, posture: Posture) -> usize {
        if posture == Posture::Prone {
            return 1 + 6 * self.prone_steps(agent).len();
        }
        self.rows(agent, posture) * self.columns as usize + self.columns as usize - 1
    }

    /// Offsets along a prone body (toward the observer), 0 included.
    fn prone_steps(&self, agent: &Agent) -> Vec<f32> {
        let (back, front) = (PRONE_BACK * agent.height(), PRONE_FRONT * agent.height());
        let step = |reach: f32| (reach / self.row_spacing).ceil().max(1.0) as usize;
        let (nb, nf) = (step(back), step(front));
        (0..nb)
            .map(|k| -back * (nb - k) as f32 / nb as f32)
            .chain((0..=nf).map(|k| front * k as f32 / nf as f32))
            .collect()
    }
}

impl Default for BodyParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// Horizontal unit vectors toward the observer and to its left, from `at` (x when the observer
/// is straight above or below).
fn frame(at: Vec3, observer: Vec3) -> (Vec3, Vec3) {
    let to = Vec3::new(observer.x - at.x, 0.0, observer.z - at.z);
    let toward = if to.length_squared() > 1e-12 {
        to.normalize()
    } else {
        Vec3::X
    };
    (toward, Vec3::new(-toward.z, 0.0, toward.x))
}

/// Whether point `i` of a prone sample of `n` points ([`body_points`]) lies on the body's first
/// or last station: its two ends, nearest to and farthest from the observer.
#[must_use]
pub fn prone_end(i: usize, n: usize) -> bool {
    (1..7).contains(&i) || i + 6 >= n
}

/// The sample points of the body of `posture` standing at `ground`, as seen from `observer`:
/// the head centre first, then the rows from the top down, each from one side to the other
/// (prone: six points a station, stations from the back of the body to its front).
pub fn body_points(
    agent: &Agent,
    ground: Vec3,
    posture: Posture,
    observer: Vec3,
    params: &BodyParams,
    out: &mut Vec<Vec3>,
) {
    let head = agent.head_height(posture);
    let (toward, side) = frame(ground, observer);
    out.push(ground + Vec3::Y * head);
    if posture == Posture::Prone {
        for along in params.prone_steps(agent) {
            let (top, half) = if along >= 0.2 * agent.height() || along.abs() <= agent.radius {
                (head, agent.radius)
            } else if along >= 0.0 {
                (0.75 * head, agent.radius)
            } else {
                (0.45 * head, 0.6 * agent.radius)
            };
            for h in [top.max(params.foot), params.foot] {
                for w in [-half, 0.0, half] {
                    out.push(ground + toward * along + side * w + Vec3::Y * h);
                }
            }
        }
        return;
    }
    let rows = params.rows(agent, posture);
    for r in 0..rows {
        let h = if rows == 1 {
            head
        } else {
            head - (head - params.foot) * r as f32 / (rows - 1) as f32
        };
        // The top row goes all the way round; the others cover the front half.
        let columns = if r == 0 {
            2 * (params.columns - 1)
        } else {
            params.columns
        };
        for c in 0..columns {
            let a = -std::f32::consts::FRAC_PI_2
                + std::f32::consts::PI * c as f32 / (params.columns - 1) as f32;
            let o = (toward * a.cos() + side * a.sin()) * agent.radius;
            out.push(ground + Vec3::Y * h + o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `prone_end` marks exactly the points at the prone body's two extreme stations: the
    /// farthest behind the spot and the farthest toward the observer, six of each.
    #[test]
    fn prone_ends_are_the_first_and_last_stations() {
        let agent = Agent::soldier(Vec3::ZERO);
        let ground = Vec3::new(3.0, 1.0, -2.0);
        let observer = Vec3::new(30.0, 2.7, 11.0);
        for params in [
            BodyParams::standard(),
            BodyParams {
                row_spacing: 0.35,
                ..BodyParams::standard()
            },
        ] {
            let mut points = Vec::new();
            body_points(
                &agent,
                ground,
                Posture::Prone,
                observer,
                &params,
                &mut points,
            );
            let (toward, _) = frame(ground, observer);
            let along: Vec<f32> = points.iter().map(|p| (*p - ground).dot(toward)).collect();
            let (lo, hi) = along[1..]
                .iter()
                .fold((f32::MAX, f32::MIN), |(a, b), &x| (a.min(x), b.max(x)));
            let n = points.len();
            let ends: Vec<usize> = (0..n).filter(|&i| prone_end(i, n)).collect();
            assert_eq!(ends.len(), 12);
            for (i, &x) in along.iter().enumerate().skip(1) {
                let extreme = (x - lo).abs() < 1e-4 || (x - hi).abs() < 1e-4;
                assert_eq!(prone_end(i, n), extreme, "point {i} of {n}, along {x}");
            }
            assert!(!prone_end(0, n), "the head centre is traced with the head");
        }
    }
}
