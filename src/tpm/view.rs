//! What an observer sees: the nav graph nodes in its line of sight and, for each, how fast it
//! would detect a threat standing (or crouching, or lying) there.
//!
//! A node's **rate** is ACQUIRE's `P_inf / tau` per second ([`crate::intervis::detection`]):
//! `P_inf` from the exposed solid angle and contrast of a threat at the node seen from the
//! observer's eye, `tau` the search time constant. The solid angle and contrast come from
//!
//! - the **intervis record** of the pair when a table holds one (the stencil measurement of the
//!   threat's body, occlusion included) — the table's records are for one target posture
//!   (`TableMeta::posture`), which must be the threat posture asked for; or
//! - the **line-of-sight model** otherwise: a fully exposed target whose silhouette is
//!   [`ViewParams::silhouette`] square metres for its posture, at distance `d` (solid angle
//!   `area / d^2`), with [`ViewParams::contrast`].
//!
//! [`View::from_table`] reads an observer standing at a table waypoint (its "sees" list);
//! [`View::from_engine`] traces eyes anywhere (between nodes, in a scene that has changed since
//! the table was made) against every node within range, one batched [`Engine::occluded`] call
//! for all the observers. The observer's own node (within half a metre) is always in view.

use crate::agent::Posture;
use crate::intervis::detection::{p_infinity, resolvable_cycles, AcquireParams};
use crate::nav::NavGraph;
use crate::scene::Mask;
use crate::tables::TableFile;
use crate::trace::Segment;
use crate::{Engine, Error, Result, Scene};
use glam::Vec3;

/// Most observer-node pairs [`View::from_engine`] considers in one call.
pub const MAX_PAIRS: usize = 1 << 28;

/// How views are computed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ViewParams {
    /// The detection model (`tau` and the eye).
    pub acquire: AcquireParams,
    /// The posture a threat is assumed to hold.
    pub posture: Posture,
    /// Nodes farther from the eye are not in view (metres). Default 150.
    pub range: f32,
    /// Eye height above an observer's feet. Default 1.7 m.
    pub eye_height: f32,
    /// Silhouette area (square metres) of a threat, prone, crouching and standing, for the
    /// line-of-sight model. Default 0.29, 0.58 and 0.95: the built-in intervis humanoid's,
    /// measured 10 m from a standing eye on open ground (`tests/tpm.rs`).
    pub silhouette: [f32; 3],
    /// Contrast of a threat against its background for the line-of-sight model. Default 0.6:
    /// the same measurement gives 0.55 to 0.76 (olive drab against lit ground and sky).
    pub contrast: f32,
    /// What blocks sight. Default [`Mask::SIGHT`].
    pub mask: Mask,
}

impl ViewParams {
    /// The defaults (see each field): standing threats.
    #[must_use]
    pub const fn standard() -> ViewParams {
        ViewParams {
            acquire: AcquireParams::standard(),
            posture: Posture::Standing,
            range: 150.0,
            eye_height: 1.7,
            silhouette: [0.29, 0.58, 0.95],
            contrast: 0.6,
            mask: Mask::SIGHT,
        }
    }

    fn validate(&self) -> Result<()> {
        let ok = self.acquire.is_valid()
            && self.range.is_finite()
            && self.range > 0.0
            && self.eye_height.is_finite()
            && self.silhouette.iter().all(|a| a.is_finite() && *a > 0.0)
            && self.contrast.is_finite()
            && self.contrast >= 0.0;
        if !ok {
            return Err(Error::InvalidInput(
                "view parameters: range, silhouette areas must be positive, eye height and \
                 contrast finite (contrast >= 0), and the detection model valid"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Detection rate (per second) of a target of `solid_angle` steradians and `contrast`.
    #[must_use]
    pub fn rate(&self, solid_angle: f32, contrast: f32) -> f32 {
        let n = resolvable_cycles(solid_angle, contrast, &self.acquire);
        p_infinity(n, &self.acquire) / self.acquire.tau_seconds
    }

    /// Rate of the line-of-sight model for a fully exposed threat `distance` metres away.
    #[must_use]
    pub fn rate_at(&self, distance: f32) -> f32 {
        let area = self.silhouette[self.posture as usize];
        let omega = (area / distance.max(0.5).powi(2)).min(std::f32::consts::TAU);
        self.rate(omega, self.contrast)
    }
}

impl Default for ViewParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// One observer's view: its eye and the nodes it sees, with the detection rate of each.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct View {
    pub eye: Vec3,
    /// `(node, rate per second)`, by node.
    pub targets: Vec<(u32, f32)>,
}

impl View {
    /// What an observer standing at waypoint `node` of `table` sees: the waypoints its
    /// line-of-sight row marks visible within range, with rates from the pair's intervis
    /// record when the table holds intervis (none exposed: not in view), else the
    /// line-of-sight model.
    pub fn from_table(table: &TableFile, node: u32, p: &ViewParams) -> Result<View> {
        p.validate()?;
        let n = table.waypoints.len() as u32;
        if node >= n || !table.los.is_complete() {
            return Err(Error::InvalidInput(format!(
                "waypoint {node} of a table with {n} waypoints{}",
                if table.los.is_complete() {
                    ""
                } else {
                    " (a shard: merge the shards first)"
                }
            )));
        }
        if table.intervis.is_some() && table.meta.posture != p.posture {
            return Err(Error::InvalidInput(format!(
                "the table's intervis records are for {} targets but the threat is {}: use \
                 that posture, or recompute the table with `--posture {}`",
                table.meta.posture.name(),
                p.posture.name(),
                p.posture.name()
            )));
        }
        let eye = table.waypoints[node as usize] + Vec3::Y * table.meta.eye_height;
        let mut targets = vec![(node, p.rate_at(0.0))];
        for &j in table.los.sees(node) {
            let target = table.waypoints[j as usize];
            let d = eye.distance(target + Vec3::Y * table.meta.eye_height);
            if d > p.range {
                continue;
            }
            let rate = match &table.intervis {
                Some(iv) => match iv.get(node, j) {
                    Some(r) => p.rate(r.solid_angle, r.contrast),
                    None => continue,
                },
                None => p.rate_at(d),
            };
            targets.push((j, rate));
        }
        targets.sort_unstable_by_key(|t| t.0);
        Ok(View { eye, targets })
    }

    /// Views for eyes anywhere: every node within range of an eye is traced (eye to the
    /// node's eye height, `p.mask`), all observers in one batched engine call; rates from the
    /// line-of-sight model.
    pub fn from_engine(
        engine: &Engine,
        scene: &Scene,
        graph: &NavGraph,
        eyes: &[Vec3],
        p: &ViewParams,
    ) -> Result<Vec<View>> {
        p.validate()?;
        if eyes.len().saturating_mul(graph.len()) > MAX_PAIRS {
            return Err(Error::InvalidInput(format!(
                "{} observers x {} nodes is more than {MAX_PAIRS} observer-node pairs: trace \
                 fewer observers per call",
                eyes.len(),
                graph.len()
            )));
        }
        if let Some(e) = eyes.iter().find(|e| !e.is_finite()) {
            return Err(Error::InvalidInput(format!(
                "observer eye {e} is not finite (metres)"
            )));
        }
        let lift = Vec3::Y * p.eye_height;
        let mut views: Vec<View> = eyes
            .iter()
            .map(|&eye| View {
                eye,
                targets: Vec::new(),
            })
            .collect();
        // Traced in bounded batches, whatever the number of eyes and nodes.
        let mut pairs: Vec<(usize, u32, f32)> = Vec::new();
        let mut segs = Vec::new();
        let flush = |pairs: &mut Vec<(usize, u32, f32)>,
                     segs: &mut Vec<Segment>,
                     views: &mut [View]|
         -> Result<()> {
            let blocked = engine.occluded(scene, segs, p.mask)?;
            for (s, &(k, j, d)) in pairs.iter().enumerate() {
                if !blocked.get(s) {
                    views[k].targets.push((j, p.rate_at(d)));
                }
            }
            pairs.clear();
            segs.clear();
            Ok(())
        };
        for (k, &eye) in eyes.iter().enumerate() {
            for (j, &node) in graph.nodes().iter().enumerate() {
                let d = eye.distance(node + lift);
                if d > p.range {
                    continue;
                }
                if (eye - lift).distance(node) < 0.5 {
                    views[k].targets.push((j as u32, p.rate_at(0.0)));
                } else {
                    pairs.push((k, j as u32, d));
                    segs.push(Segment::new(eye, node + lift));
                }
            }
            if segs.len() >= 1 << 22 {
                flush(&mut pairs, &mut segs, &mut views)?;
            }
        }
        flush(&mut pairs, &mut segs, &mut views)?;
        for v in &mut views {
            v.targets.sort_unstable_by_key(|t| t.0);
        }
        Ok(views)
    }
}
