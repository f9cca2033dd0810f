//! Visual search (Darken, McCue and Guerrero, "Search Algorithm"): in each search frame every
//! team member independently looks toward the angular sector holding the most threat among the
//! nodes it can see from where it stands, and looking lowers the threat there. The lowered
//! sector then gives way to another, so over time the member scans every sector that holds
//! threat, the most threatening first, instead of sweeping in a fixed order.
//!
//! Sectors divide the full turn around the observer into `sectors` equal wedges by yaw, the
//! horizontal direction measured from east (+x) toward south (+z): sector `s` spans yaws
//! `[s, s + 1) * 360 / sectors` degrees. A sector's threat is the sum of the map's values over
//! the nodes in the observer's view whose direction lies in it (the observer's own node counts
//! for no sector). Ties go to a sector drawn from the searcher's seeded generator. The gaze
//! points at the sector's middle and takes in every node of the view within half the field of
//! view to either side (default 60 degrees: a little more than one of 8 sectors, as the eyes
//! cover while the head points), plus the observer's own node.

use super::{Observation, TpmSet, View};
use crate::trace::SplitMix64;
use crate::{Error, Result};
use glam::Vec3;

/// Visual search settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchParams {
    /// Angular sectors around an observer. Default 8.
    pub sectors: u32,
    /// Field of view of a gaze, degrees. Default 60.
    pub fov_degrees: f32,
    /// How long a gaze is held before the member chooses again (seconds). Default 1.
    pub frame_seconds: f32,
}

impl SearchParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> SearchParams {
        SearchParams {
            sectors: 8,
            fov_degrees: 60.0,
            frame_seconds: 1.0,
        }
    }

    fn validate(&self) -> Result<()> {
        if !(1..=360).contains(&self.sectors)
            || !(self.fov_degrees > 0.0 && self.fov_degrees <= 360.0)
            || !(self.frame_seconds > 0.0 && self.frame_seconds <= super::MAX_STEP)
        {
            return Err(Error::InvalidInput(format!(
                "visual search: sectors {} must be 1..=360, field of view {} degrees in (0, 360], \
                 frame {} s in (0, {}]",
                self.sectors,
                self.fov_degrees,
                self.frame_seconds,
                super::MAX_STEP
            )));
        }
        Ok(())
    }
}

impl Default for SearchParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// Yaw of `to` seen from `from` (radians in `[0, 2 pi)`, from +x toward +z); `None` when `to`
/// is within half a metre horizontally (straight above or below).
#[must_use]
pub fn yaw(from: Vec3, to: Vec3) -> Option<f32> {
    let (dx, dz) = (to.x - from.x, to.z - from.z);
    (dx * dx + dz * dz >= 0.25).then(|| dz.atan2(dx).rem_euclid(std::f32::consts::TAU))
}

/// The sector of a yaw.
#[must_use]
pub fn sector_of(yaw: f32, sectors: u32) -> u32 {
    ((yaw / std::f32::consts::TAU * sectors as f32) as u32).min(sectors - 1)
}

/// Threat per sector for an observer with `view`, from map `tpm` of `set`.
#[must_use]
pub fn sector_threat(
    set: &TpmSet,
    tpm: u32,
    view: &View,
    nodes: &[Vec3],
    sectors: u32,
) -> Vec<f32> {
    let mut threat = vec![0.0; sectors as usize];
    for &(j, _) in &view.targets {
        if let Some(y) = yaw(view.eye, nodes[j as usize]) {
            threat[sector_of(y, sectors) as usize] += set.get(tpm, j);
        }
    }
    threat
}

/// The sector with the most threat; ties to one drawn uniformly by `rng`.
#[must_use]
pub fn pick_sector(threat: &[f32], rng: &mut SplitMix64) -> u32 {
    let best = threat.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let tied: Vec<u32> = (0..threat.len() as u32)
        .filter(|&s| threat[s as usize] == best)
        .collect();
    tied[(rng.next_u64() % tied.len() as u64) as usize]
}

/// One member of a searching team: the map it updates and what it sees.
#[derive(Clone, Copy, Debug)]
pub struct Member<'a> {
    pub tpm: u32,
    pub view: &'a View,
}

/// Where a member looked in a frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gaze {
    pub sector: u32,
    /// The middle of the sector (radians, from +x toward +z).
    pub yaw: f32,
    /// The sector's threat when it was chosen.
    pub threat: f32,
    /// Nodes taken in by the gaze.
    pub seen: u32,
}

/// Runs search frames for any number of members of any number of teams.
#[derive(Clone, Debug)]
pub struct Searcher {
    pub params: SearchParams,
    rng: SplitMix64,
    observations: Vec<Observation>,
}

impl Searcher {
    /// A searcher whose ties are broken by a generator seeded with `seed`.
    pub fn new(params: SearchParams, seed: u64) -> Result<Searcher> {
        params.validate()?;
        Ok(Searcher {
            params,
            rng: SplitMix64(seed),
            observations: Vec::new(),
        })
    }

    /// One frame: every member chooses its sector from the maps as they stand, looks, and
    /// then every map advances by `frame_seconds` with what was seen. Returns each member's gaze.
    pub fn frame(
        &mut self,
        set: &mut TpmSet,
        nodes: &[Vec3],
        members: &[Member<'_>],
    ) -> Result<Vec<Gaze>> {
        if nodes.len() != set.nodes() {
            return Err(Error::InvalidInput(format!(
                "{} node positions for maps of {} nodes",
                nodes.len(),
                set.nodes()
            )));
        }
        let (sectors, fov) = (self.params.sectors, self.params.fov_degrees.to_radians());
        self.observations.clear();
        let mut gazes = Vec::with_capacity(members.len());
        for m in members {
            if m.tpm as usize >= set.count()
                || m.view.targets.iter().any(|t| t.0 as usize >= nodes.len())
            {
                return Err(Error::InvalidInput(format!(
                    "a member's map {} or view is out of range ({} maps, {} nodes)",
                    m.tpm,
                    set.count(),
                    nodes.len()
                )));
            }
            let threat = sector_threat(set, m.tpm, m.view, nodes, sectors);
            let sector = pick_sector(&threat, &mut self.rng);
            let gaze = (sector as f32 + 0.5) * std::f32::consts::TAU / sectors as f32;
            let before = self.observations.len();
            for &(j, rate) in &m.view.targets {
                let in_view = match yaw(m.view.eye, nodes[j as usize]) {
                    None => true,
                    Some(y) => {
                        let off = (y - gaze + std::f32::consts::PI)
                            .rem_euclid(std::f32::consts::TAU)
                            - std::f32::consts::PI;
                        off.abs() <= 0.5 * fov
                    }
                };
                if in_view {
                    self.observations.push(Observation {
                        tpm: m.tpm,
                        node: j,
                        rate,
                    });
                }
            }
            gazes.push(Gaze {
                sector,
                yaw: gaze,
                threat: threat[sector as usize],
                seen: (self.observations.len() - before) as u32,
            });
        }
        set.step(self.params.frame_seconds, &self.observations)?;
        Ok(gazes)
    }
}
