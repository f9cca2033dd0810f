//! Checking a cover choice before it is given: the whole-body sample ([`super::body`]) and the
//! intervis humanoid measurement (stencil pass on the GPU, its ray twin on the CPU), both
//! batched over many candidates.

use super::body::{body_points, BodyParams};
use super::{Agent, Posture};
use crate::intervis::measure::{exposed_ray_cast, measure_many, IntervisPair, IntervisParams};
use crate::intervis::IntervisRecord;
use crate::scene::{Mask, Scene};
use crate::trace::{Occlusion, Segment};
use crate::{Engine, Result};
use glam::Vec3;

/// Which check decided an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Check {
    /// Darken, Morgan and Paull's three points per posture.
    Template,
    /// Clearance: the body does not fit at the spot in that posture.
    Clearance,
    /// The whole-body sample ([`super::body`]).
    Body,
    /// The intervis humanoid: exposed stencil pixels (ray-cast pixels on the CPU).
    Intervis,
}

impl Check {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Check::Template => "template",
            Check::Clearance => "clearance",
            Check::Body => "body",
            Check::Intervis => "intervis",
        }
    }
}

/// A candidate a check turned down.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejection {
    pub position: Vec3,
    pub posture: Posture,
    pub by: Check,
    /// Exposed intervis pixels per observer (empty when the body check decided).
    pub exposed: Vec<u32>,
}

/// A spot to check: an agent's body in a posture at a ground point, against observers.
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    pub agent: &'a Agent,
    pub ground: Vec3,
    pub posture: Posture,
    pub observers: &'a [Vec3],
    pub mask: Mask,
}

/// Segments that carry their own masks, as one batch per mask (masks in ascending order of
/// their bits): each batch's segments and their indices in `segs`.
pub struct ByMask {
    pub masks: Vec<Mask>,
    pub batches: Vec<(Vec<usize>, Vec<Segment>)>,
}

impl ByMask {
    pub fn new(segs: &[(Segment, Mask)]) -> ByMask {
        let mut masks: Vec<Mask> = segs.iter().map(|s| s.1).collect();
        masks.sort_by_key(|m| m.bits());
        masks.dedup();
        let batches = masks
            .iter()
            .map(|&m| {
                segs.iter()
                    .enumerate()
                    .filter(|(_, s)| s.1 == m)
                    // A run of mixed masks would break apart here: the batches go plain.
                    .map(|(i, s)| (i, s.0.unstaged()))
                    .unzip()
            })
            .collect();
        ByMask { masks, batches }
    }

    /// The batches as [`Engine::occluded_many`] takes them.
    pub fn views(&self) -> Vec<(&[Segment], Mask)> {
        self.batches
            .iter()
            .zip(&self.masks)
            .map(|((_, b), &m)| (&b[..], m))
            .collect()
    }

    /// One bit per segment of the original order, from the batches' answers.
    pub fn scatter(&self, bits: &[Occlusion]) -> Vec<bool> {
        let n = self.batches.iter().map(|b| b.0.len()).sum();
        let mut out = vec![false; n];
        for ((at, _), bits) in self.batches.iter().zip(bits) {
            for (k, &i) in at.iter().enumerate() {
                out[i] = bits.get(k);
            }
        }
        out
    }
}

/// Occlusion bits of segments that carry their own masks: one batch per mask, all in one
/// engine call ([`Engine::occluded_many`]: one submission and one wait on the GPU).
pub fn occluded_masked(
    engine: &Engine,
    scene: &Scene,
    segs: &[(Segment, Mask)],
) -> Result<Vec<bool>> {
    if let Some(mask) = one_mask(segs) {
        // The usual case (every wave of the lazy cover search): no split, no copies by mask.
        let plain: Vec<Segment> = segs.iter().map(|s| s.0).collect();
        return Ok(engine.occluded(scene, &plain, mask)?.iter().collect());
    }
    let split = ByMask::new(segs);
    Ok(split.scatter(&engine.occluded_many(scene, &split.views())?))
}

/// The mask every segment carries, if they all carry one (and there is at least one).
fn one_mask(segs: &[(Segment, Mask)]) -> Option<Mask> {
    let first = segs.first()?.1;
    segs.iter().all(|s| s.1 == first).then_some(first)
}

/// [`occluded_masked`] of segments tagged with the eye each starts from (`eye[i] < eyes`),
/// traced eye by eye: segments that share a start then run together, which the CPU backend
/// traces in packets (and a GPU's neighbouring threads walk alike). An eye's segments go in
/// the Z-order of their ends' quarter-metre ground cells, so neighbouring rays share a packet
/// (and the nodes its walk loads). Staged segments ([`Segment::staged`]) come after the
/// others, in their own order, so their runs stay whole. Answers in the given order.
pub(crate) fn occluded_by_eye(
    engine: &Engine,
    scene: &Scene,
    segs: &[(Segment, Mask)],
    eye: &[u32],
    eyes: usize,
) -> Result<Vec<bool>> {
    debug_assert_eq!(segs.len(), eye.len());
    let order = eye_order(segs, eye, eyes);
    let mut out = vec![false; segs.len()];
    if let Some(mask) = one_mask(segs) {
        // The usual case: the segments in order without their masks, answers read in place.
        let plain: Vec<Segment> = order.iter().map(|&i| segs[i].0).collect();
        let bits = engine.occluded(scene, &plain, mask)?;
        for (k, &i) in order.iter().enumerate() {
            out[i] = bits.get(k);
        }
        return Ok(out);
    }
    let grouped: Vec<(Segment, Mask)> = order.iter().map(|&i| segs[i]).collect();
    let bits = occluded_masked(engine, scene, &grouped)?;
    for (&i, b) in order.iter().zip(bits) {
        out[i] = b;
    }
    Ok(out)
}

/// The order [`occluded_by_eye`] traces `segs` in: the plain ones eye by eye, each eye's in
/// Z-order, then the staged ones as given.
fn eye_order(segs: &[(Segment, Mask)], eye: &[u32], eyes: usize) -> Vec<usize> {
    let plain = |i: usize| segs[i].0.stage().is_none();
    // Where each eye's segments start (a counting sort), then each eye's in Z-order: a
    // segment's key above its index in one word.
    let mut at = vec![0usize; eyes + 1];
    for (_, &e) in eye.iter().enumerate().filter(|&(i, _)| plain(i)) {
        at[e as usize + 1] += 1;
    }
    for k in 0..eyes {
        at[k + 1] += at[k];
    }
    let starts = at.clone();
    let mut keyed = vec![0u64; at[eyes]];
    let mut staged = Vec::new();
    for (i, &e) in eye.iter().enumerate() {
        if plain(i) {
            let slot = &mut at[e as usize];
            keyed[*slot] = (u64::from(crate::trace::z_key(segs[i].0.end)) << 32) | i as u64;
            *slot += 1;
        } else {
            staged.push(i);
        }
    }
    for w in starts.windows(2) {
        keyed[w[0]..w[1]].sort_unstable();
    }
    // A batch has far fewer than 2^32 segments (each is 32 bytes), so the index fits.
    debug_assert!(u32::try_from(segs.len()).is_ok());
    let index = |k: u64| (k & u64::from(u32::MAX)) as usize;
    keyed.into_iter().map(index).chain(staged).collect()
}

/// The whole-body sample of candidates as segments: every candidate's points for every
/// observer, in order, and the number of points per (candidate, observer).
pub fn body_segments(
    candidates: &[Candidate],
    body: &BodyParams,
) -> (Vec<(Segment, Mask)>, Vec<usize>) {
    let mut segs = Vec::new();
    let mut counts = Vec::new();
    let mut points = Vec::new();
    for c in candidates {
        for &o in c.observers {
            points.clear();
            body_points(c.agent, c.ground, c.posture, o, body, &mut points);
            segs.extend(points.iter().map(|&p| (Segment::new(o, p), c.mask)));
            counts.push(points.len());
        }
    }
    (segs, counts)
}

/// Per candidate, per observer: the share of the body sample seen, from the occlusion bits of
/// [`body_segments`] (`blocked`) and its counts.
pub fn body_shares(candidates: &[Candidate], counts: &[usize], blocked: &[bool]) -> Vec<Vec<f32>> {
    let mut at = 0;
    let mut k = 0;
    candidates
        .iter()
        .map(|c| {
            c.observers
                .iter()
                .map(|_| {
                    let n = counts[k];
                    k += 1;
                    let seen = blocked[at..at + n].iter().filter(|&&b| !b).count();
                    at += n;
                    seen as f32 / n as f32
                })
                .collect()
        })
        .collect()
}

/// Per candidate, per observer: the share of the body sample the observer sees (0 = hidden).
pub fn body_exposure(
    engine: &Engine,
    scene: &Scene,
    candidates: &[Candidate],
    body: &BodyParams,
) -> Result<Vec<Vec<f32>>> {
    let (segs, counts) = body_segments(candidates, body);
    let blocked = occluded_masked(engine, scene, &segs)?;
    Ok(body_shares(candidates, &counts, &blocked))
}

/// The intervis measurements of candidates: one call per (mask, target height), the intervis
/// parameters being per call, each with its pairs and their (candidate, observer) owners.
pub struct IntervisCalls {
    pub calls: Vec<(Vec<IntervisPair>, IntervisParams)>,
    owners: Vec<Vec<(usize, usize)>>,
    observers: Vec<usize>,
}

impl IntervisCalls {
    pub fn new(candidates: &[Candidate]) -> IntervisCalls {
        let mut groups: Vec<(Mask, u32)> = candidates
            .iter()
            .map(|c| (c.mask, c.agent.height().to_bits()))
            .collect();
        groups.sort_by_key(|g| (g.0.bits(), g.1));
        groups.dedup();
        let mut calls = Vec::with_capacity(groups.len());
        let mut owners = Vec::with_capacity(groups.len());
        for &(mask, height) in &groups {
            let mut pairs = Vec::new();
            let mut owner = Vec::new();
            for (ci, c) in candidates.iter().enumerate() {
                if c.mask != mask || c.agent.height().to_bits() != height {
                    continue;
                }
                for (oi, &o) in c.observers.iter().enumerate() {
                    pairs.push(IntervisPair {
                        observer: o,
                        target: c.ground,
                        posture: c.posture,
                    });
                    owner.push((ci, oi));
                }
            }
            let params = IntervisParams {
                mask,
                target_height: f32::from_bits(height),
                ..IntervisParams::standard()
            };
            calls.push((pairs, params));
            owners.push(owner);
        }
        let observers = candidates.iter().map(|c| c.observers.len()).collect();
        IntervisCalls {
            calls,
            owners,
            observers,
        }
    }

    /// The calls as [`measure_many`] takes them.
    pub fn views(&self) -> Vec<(&[IntervisPair], IntervisParams)> {
        self.calls.iter().map(|(p, q)| (&p[..], *q)).collect()
    }

    /// Per candidate, per observer: exposed pixels, from the calls' records.
    pub fn pixels(&self, records: Vec<Vec<IntervisRecord>>) -> Vec<Vec<u32>> {
        self.exposed(
            records
                .into_iter()
                .map(|r| r.iter().map(|r| r.exposed).collect())
                .collect(),
        )
    }

    /// Per candidate, per observer: exposed pixels, from each call's exposed pixels per pair.
    fn exposed(&self, pixels: Vec<Vec<u32>>) -> Vec<Vec<u32>> {
        let mut out: Vec<Vec<u32>> = self.observers.iter().map(|&n| vec![0; n]).collect();
        for (pixels, owner) in pixels.into_iter().zip(&self.owners) {
            for (n, &(ci, oi)) in pixels.into_iter().zip(owner) {
                out[ci][oi] = n;
            }
        }
        out
    }
}

/// Per candidate, per observer: exposed pixels of the intervis humanoid (the agent's standing
/// height, in the candidate's posture, facing the observer) under the candidate's mask. A GPU
/// measures them in its stencil pass; the CPU counts them alone
/// ([`crate::intervis::measure::exposed_ray_cast`], the same counts as its twin's records).
pub fn intervis_exposure(
    engine: &Engine,
    scene: &Scene,
    candidates: &[Candidate],
) -> Result<Vec<Vec<u32>>> {
    let calls = IntervisCalls::new(candidates);
    if engine.gpu().is_some() {
        return Ok(calls.pixels(measure_many(engine, scene, &calls.views())?));
    }
    let pixels = calls
        .views()
        .iter()
        .map(|(pairs, params)| exposed_ray_cast(engine, scene, pairs, params))
        .collect::<Result<_>>()?;
    Ok(calls.exposed(pixels))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::procedural;
    use crate::trace::SplitMix64;

    /// Segments from several eyes, shuffled, with staged runs among them: traced eye by eye
    /// in Z-order, each answer is the one the batch traced in its given order gets.
    #[test]
    fn by_eye_answers_in_the_given_order() {
        let scene = procedural::by_name("village", 3, 1).unwrap();
        let engine = Engine::cpu();
        let (lo, hi) = scene.bounds().unwrap();
        let mut rng = SplitMix64(11);
        let eyes: Vec<Vec3> = (0..5).map(|_| rng.in_box(lo, hi)).collect();
        let (mut segs, mut eye) = (Vec::new(), Vec::new());
        while segs.len() < 3000 {
            let k = (rng.next_u64() % eyes.len() as u64) as usize;
            let end = rng.in_box(lo, hi);
            let s = Segment::new(eyes[k], end);
            if rng.next_u64().is_multiple_of(8) {
                // A staged run of three, stages 0, 0 and 1, kept together.
                for lead in 0..3 {
                    let e = end + Vec3::Y * lead as f32;
                    segs.push((Segment::new(eyes[k], e).staged(lead, lead / 2), Mask::SIGHT));
                    eye.push(k as u32);
                }
            } else {
                segs.push((s, Mask::SIGHT));
                eye.push(k as u32);
            }
        }
        let by_eye = occluded_by_eye(&engine, &scene, &segs, &eye, eyes.len()).unwrap();
        let plain = occluded_masked(&engine, &scene, &segs).unwrap();
        assert_eq!(by_eye, plain);
        // Every third plain segment blocked by fire-stopping triangles only: one call per mask.
        for (s, m) in segs.iter_mut().step_by(3) {
            if s.stage().is_none() {
                *m = Mask::FIRE;
            }
        }
        let mixed = occluded_by_eye(&engine, &scene, &segs, &eye, eyes.len()).unwrap();
        assert_eq!(mixed, occluded_masked(&engine, &scene, &segs).unwrap());
        let blocked = plain.iter().filter(|&&b| b).count();
        assert!(
            blocked > 300 && blocked < 2700,
            "{blocked} blocked: a weak test"
        );
    }
}
