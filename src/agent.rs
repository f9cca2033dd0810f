//! The body that moves, hides and is seen: an agent's size, its postures, and whether it fits
//! at a spot. Shared by the cover searches, the nav graph and the intervis humanoid.

use crate::trace::Segment;
use crate::Result;
use glam::Vec3;

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
        self.validate_for(&format!("cover query {query}"))
    }

    /// [`Agent::validate`] with `what` naming the caller in the error (`"nav graph"`).
    pub fn validate_for(&self, what: &str) -> Result<()> {
        let finite = self.position.is_finite()
            && self.radius.is_finite()
            && self.head_heights.iter().all(|h| h.is_finite());
        let h = self.head_heights;
        if !finite || self.radius < 0.0 || !(h[0] > 0.0 && h[0] <= h[1] && h[1] <= h[2]) {
            return Err(crate::Error::InvalidInput(format!(
                "{what}: the agent needs finite coordinates, a radius >= 0 and head heights 0 < prone <= crouching <= standing"
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

/// Clearance segments at `ground`: per posture (prone, crouching, standing), the pieces that
/// must be clear for it to fit, in addition to those of lower postures. Blocked by fire-blocking
/// geometry ([`crate::Mask::FIRE`]).
#[must_use]
pub fn clearance_segments(agent: &Agent, ground: Vec3, foot: f32) -> [[Segment; 3]; 3] {
    let mut low = foot;
    Posture::ALL.map(|p| {
        let head = agent.head_height(p);
        // Just under the head, but above any standable slope within one radius.
        let h = (head - 0.05).max(agent.radius * 1.05).min(head);
        let at = ground + Vec3::Y * h;
        let (x, z) = (Vec3::X * agent.radius, Vec3::Z * agent.radius);
        let axis = Segment::new(ground + Vec3::Y * low, ground + Vec3::Y * head);
        low = head;
        [
            axis,
            Segment::new(at - x, at + x),
            Segment::new(at - z, at + z),
        ]
    })
}

/// Highest posture whose clearance pieces (and those of every lower posture) are clear, given
/// one blocked flag per segment of [`clearance_segments`] in order.
#[must_use]
pub fn fitting_posture(blocked: impl Fn(usize) -> bool) -> Option<Posture> {
    let mut fit = None;
    for p in Posture::ALL {
        if (0..3).any(|k| blocked(p as usize * 3 + k)) {
            break;
        }
        fit = Some(p);
    }
    fit
}

/// Segments per engine call of [`fitting_postures`].
const FIT_BATCH: usize = 1 << 20;

/// The highest posture whose body fits at each ground point ([`clearance_segments`] traced
/// against fire-blocking geometry, `foot` metres above the ground), `None` where not even
/// lying down fits. Traced in bounded batches.
pub fn fitting_postures(
    engine: &crate::Engine,
    scene: &crate::Scene,
    agent: &Agent,
    ground: &[Vec3],
    foot: f32,
) -> Result<Vec<Option<Posture>>> {
    let mut out = Vec::with_capacity(ground.len());
    for chunk in ground.chunks(FIT_BATCH / 9) {
        let segs: Vec<Segment> = chunk
            .iter()
            .flat_map(|&g| clearance_segments(agent, g, foot).into_iter().flatten())
            .collect();
        let bits = engine.occluded(scene, &segs, crate::Mask::FIRE)?;
        out.extend((0..chunk.len()).map(|k| fitting_posture(|i| bits.get(k * 9 + i))));
    }
    Ok(out)
}
