//! Cover and concealment: where an agent can hide from observers, and in which posture.
//!
//! - [`dense`]: the default search: every 0.25 m cell within reach, walked around obstacles,
//!   the nearest one where the whole body ([`body`]) is hidden, checked with the intervis
//!   humanoid ([`verify`]). [`nearest_cover`] is the one-agent convenience call.
//! - [`sensor_grid`]: Darken, Morgan and Paull's sensor grid (Darken, Morgan, Paull), batched over many agents.
//! - [`field`]: Morgan's depth-map method (Morgan, IV.E) as an area-wide GPU cover field.
//!
//! Cover versus concealment is the query's [`Mask`]: concealment hides from sight
//! (`Mask::SIGHT`: foliage counts, bullet-proof glass does not), cover stops fire
//! (`Mask::FIRE`: glass counts, foliage does not).

pub mod body;
pub mod dense;
pub mod field;
pub mod regions;
pub mod sensor_grid;
pub mod verify;

pub use crate::agent::{Agent, Posture};

use crate::scene::{Mask, Scene};
use crate::{Engine, Result};
use glam::Vec3;

/// Where a soldier at `position` hides from `observers` (eyes) behind triangles matching `mask`:
/// the dense search ([`dense::find_cover`]) with its defaults, for one agent.
pub fn nearest_cover(
    engine: &Engine,
    scene: &Scene,
    position: Vec3,
    observers: &[Vec3],
    mask: Mask,
) -> Result<dense::DenseAnswer> {
    let query = dense::DenseQuery {
        agent: Agent::soldier(position),
        observers: observers.to_vec(),
        mask,
    };
    let mut answers = dense::find_cover(engine, scene, &[query], &dense::DenseParams::standard())?;
    Ok(answers.remove(0))
}

/// The three visibility points of a posture at a spot (Darken, Morgan and Paull, figure 3): head height over the
/// spot, and one collision radius to each side, perpendicular to the direction to the observer.
#[must_use]
pub fn template_points(agent: &Agent, ground: Vec3, posture: Posture, observer: Vec3) -> [Vec3; 3] {
    let head = ground + Vec3::Y * agent.head_height(posture);
    let to_obs = Vec3::new(observer.x - head.x, 0.0, observer.z - head.z);
    let side = if to_obs.length_squared() > 1e-12 {
        Vec3::new(-to_obs.z, 0.0, to_obs.x).normalize() * agent.radius
    } else {
        Vec3::X * agent.radius
    };
    [head, head - side, head + side]
}
