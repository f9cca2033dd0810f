//! Cover and concealment: where an agent can hide from observers, and in which posture.
//!
//! - [`dense`]: the default search: every 0.25 m cell within reach, walked around obstacles,
//!   the nearest one where the whole body ([`body`]) is hidden, checked with the intervis
//!   humanoid ([`verify`]). [`nearest_cover`] is the one-agent convenience call.
//! - [`sensor_grid`]: Darken, Morgan and Paull's sensor grid (Darken, Morgan, Paull), batched over many agents.
//! - [`field`]: Morgan's depth-map method (Morgan, IV.E) as an area-wide GPU cover field.
//!
//! Cover versus concealment is the query's [`Mask`](crate::Mask): concealment hides from sight
//! (`Mask::SIGHT`: foliage counts, bullet-proof glass does not), cover stops fire
//! (`Mask::FIRE`: glass counts, foliage does not).

pub mod body;
pub mod dense;
pub mod field;
pub mod sensor_grid;
pub mod verify;

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

/// Body postures, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Posture {
    Prone,
    Crouching,
    Standing,
}

impl Posture {
    pub const ALL: [Posture; 3] = [Posture::Prone, Posture::Crouching, Posture::Standing];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Posture::Prone => "prone",
            Posture::Crouching => "crouching",
            Posture::Standing => "standing",
        }
    }
}

/// The body that hides: where its feet are, how wide it is and where its head is per posture.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Agent {
    /// Feet, on the ground (metres, +Y up).
    pub position: Vec3,
    /// Collision radius (metres).
    pub radius: f32,
    /// Head height above the feet for prone, crouching and standing.
    pub head_heights: [f32; 3],
}

impl Agent {
    /// A soldier: 0.3 m radius, head at 0.35 m prone, 1.1 m crouching, 1.75 m standing.
    #[must_use]
    pub const fn soldier(position: Vec3) -> Agent {
        Agent {
            position,
            radius: 0.3,
            head_heights: [0.35, 1.1, 1.75],
        }
    }

    #[must_use]
    pub fn head_height(&self, p: Posture) -> f32 {
        self.head_heights[p as usize]
    }

    /// Checks the body before a search uses it; `query` names it in the error.
    pub fn validate(&self, query: usize) -> Result<()> {
        let finite = self.position.is_finite()
            && self.radius.is_finite()
            && self.head_heights.iter().all(|h| h.is_finite());
        let h = self.head_heights;
        if !finite || self.radius < 0.0 || !(h[0] > 0.0 && h[0] <= h[1] && h[1] <= h[2]) {
            return Err(crate::Error::InvalidInput(format!(
                "cover query {query}: the agent needs finite coordinates, a radius >= 0 and head heights 0 < prone <= crouching <= standing"
            )));
        }
        Ok(())
    }

    /// Standing height: the drop allowance of the ground search and the swept cylinder's top.
    #[must_use]
    pub fn height(&self) -> f32 {
        self.head_heights[2]
    }
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
