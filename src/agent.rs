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

    /// The radius the fit tests trace at: the body's radius less 1/1024 of it (0.3 mm for a
    /// soldier). Touching is not entering: geometry exactly one radius from a spot (walls on
    /// the grid lines of a level built on a grid) stays clear of the traced rim instead of
    /// lying in its plane, where a fused last bit would decide the fit (ARCHITECTURE.md,
    /// "Agreement between backends").
    #[must_use]
    pub fn probe_radius(&self) -> f32 {
        self.radius * (1.0 - 1.0 / 1024.0)
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
        let r = agent.probe_radius();
        let (x, z) = (Vec3::X * r, Vec3::Z * r);
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

/// Sides of the polygon [`disc_clearance`] traces around the body's rim, and spokes from the
/// axis out to it. A wall that enters the disc crosses the rim, so it cuts a side unless it
/// enters only through the sliver between a side and the circle (under 1 cm at a 0.3 m radius).
const RIM_SIDES: usize = 12;
const SPOKES: usize = 6;
/// Largest height between two rims of [`disc_clearance`] (metres).
const RIM_GAP: f32 = 0.4;

/// Clearance of the whole disc of the body at `ground` (the cover search's fit test): per
/// posture (prone, crouching, standing), the segments that must be clear of fire-blocking
/// geometry for it to fit, in addition to those of lower postures, appended to `out`; returns
/// where each posture's segments end in `out`. Each posture adds its axis piece (from `foot`
/// above the ground to the head, in pieces) and rims at most 0.4 m apart up to just under its
/// head (a 12-sided polygon round the rim and 6 spokes from the axis): a wall corner anywhere
/// inside the disc cuts one, where [`clearance_segments`]' two diameters miss one on the
/// diagonal. Rims stay at least 1.05 radius above the ground, over any standable slope.
pub fn disc_clearance(
    agent: &Agent,
    ground: Vec3,
    foot: f32,
    out: &mut Vec<Segment>,
) -> [usize; 3] {
    let r = agent.probe_radius();
    let rim: [Vec3; RIM_SIDES] = std::array::from_fn(|k| {
        let a = k as f32 * std::f32::consts::TAU / RIM_SIDES as f32;
        Vec3::new(a.cos(), 0.0, a.sin()) * r
    });
    let (mut low, mut last_rim) = (foot, f32::NEG_INFINITY);
    Posture::ALL.map(|p| {
        let head = agent.head_height(p);
        out.push(Segment::new(
            ground + Vec3::Y * low,
            ground + Vec3::Y * head,
        ));
        low = head;
        let top = (head - 0.05).max(agent.radius * 1.05).min(head);
        let rims = if last_rim.is_finite() {
            ((top - last_rim) / RIM_GAP).ceil().max(1.0) as usize
        } else {
            1
        };
        for k in 1..=rims {
            let h = if rims == 1 {
                top
            } else {
                last_rim + (top - last_rim) * k as f32 / rims as f32
            };
            let c = ground + Vec3::Y * h;
            for s in 0..RIM_SIDES {
                out.push(Segment::new(c + rim[s], c + rim[(s + 1) % RIM_SIDES]));
            }
            for s in 0..SPOKES {
                out.push(Segment::new(c, c + rim[s * RIM_SIDES / SPOKES]));
            }
        }
        last_rim = top;
        out.len()
    })
}
