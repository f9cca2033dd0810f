//! Firing positions after taking cover (Darken, Morgan and Paull, "Improving Firing Positions").

use super::search::{run, Job, Outcome};
use super::{sweep, CoverAnswer, CoverQuery, SensorGridParams};
use crate::cover::{template_points, Posture};
use crate::scene::{Mask, MaterialFlags, Scene};
use crate::trace::{Ray, Segment};
use crate::{Engine, Result};
use glam::Vec3;

/// Where to return fire from after taking cover (Darken, Morgan and Paull, "Improving Firing Positions").
#[derive(Clone, Debug, PartialEq)]
pub struct FiringPosition {
    pub position: Vec3,
    pub posture: Posture,
    /// The observer that becomes visible.
    pub observer: usize,
    /// Metres moved from the cover spot (0 for a posture change).
    pub step_back: f32,
}

/// Step-back search: how far, in what increments.
const STEP: f32 = 0.5;
const MAX_STEP_BACK: f32 = 10.0;

/// For each answered query with a choice: a posture change at the spot if a higher posture sees
/// an observer; otherwise the nearest point, stepping from the spot toward the nearest observer,
/// sideways around the cover, or back along the arrival path (0.5 m steps, up to 10 m, on
/// standable ground reachable straight from the spot), from which some posture's head sees the
/// observer, in the lowest such posture (least exposed). Three batched calls.
pub fn firing_positions(
    engine: &Engine,
    scene: &Scene,
    queries: &[CoverQuery],
    answers: &[CoverAnswer],
    params: &SensorGridParams,
) -> Result<Vec<Option<FiringPosition>>> {
    let mut out: Vec<Option<FiringPosition>> = vec![None; queries.len()];
    // A posture change: the lowest higher posture some observer sees a template point of, and
    // the first such observer. Traced with each query's own mask.
    let mut change = Vec::new();
    let mut change_owner = Vec::new();
    for (qi, (q, a)) in queries.iter().zip(answers).enumerate() {
        let Some(c) = &a.choice else { continue };
        for p in Posture::ALL.into_iter().skip(c.posture as usize + 1) {
            for (oi, &o) in q.observers.iter().enumerate() {
                for t in template_points(&q.agent, c.position, p, o) {
                    change.push(Job::Segment(Segment::new(o, t), q.mask));
                    change_owner.push((qi, p, oi));
                }
            }
        }
    }
    let seen = run(engine, scene, &change)?;
    for (outcome, &(qi, p, oi)) in seen.iter().zip(&change_owner) {
        let visible = matches!(outcome, Outcome::Blocked(false));
        if visible && out[qi].is_none() {
            out[qi] = Some(FiringPosition {
                position: answers[qi].choice.as_ref().unwrap().position,
                posture: p,
                observer: oi,
                step_back: 0.0,
            });
        }
    }
    // (query, observer, distance stepped, ground ray)
    let mut candidates = Vec::new();
    for (qi, (q, a)) in queries.iter().zip(answers).enumerate() {
        let Some(c) = &a.choice else { continue };
        if out[qi].is_some() {
            continue;
        }
        let Some((oi, &o)) = q.observers.iter().enumerate().min_by(|x, y| {
            x.1.distance(c.position)
                .total_cmp(&y.1.distance(c.position))
        }) else {
            continue;
        };
        // Toward the observer, sideways around what hides the spot, and back along the path.
        let toward = Vec3::new(o.x - c.position.x, 0.0, o.z - c.position.z).normalize_or_zero();
        let back = c.path.first().map_or(Vec3::ZERO, |&a| {
            (a - c.position).with_y(0.0).normalize_or_zero()
        });
        for dir in [
            toward,
            Vec3::new(-toward.z, 0.0, toward.x),
            Vec3::new(toward.z, 0.0, -toward.x),
            back,
        ] {
            if dir == Vec3::ZERO {
                continue;
            }
            let mut d = STEP;
            while d <= MAX_STEP_BACK {
                let top = c.position + dir * d + Vec3::Y * (params.step_height + d);
                candidates.push((
                    qi,
                    oi,
                    d,
                    Ray::new(
                        top,
                        Vec3::NEG_Y,
                        2.0 * d + q.agent.height() + params.step_height,
                    ),
                ));
                d += STEP;
            }
        }
    }
    let down: Vec<Ray> = candidates.iter().map(|c| c.3).collect();
    let hits = engine.closest_hit(
        scene,
        &down,
        Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE),
    )?;
    let min_normal_y = params.max_slope.cos();
    let mut segs = Vec::new();
    let mut owner = Vec::new();
    for (k, (&(qi, oi, d, ray), hit)) in candidates.iter().zip(&hits).enumerate() {
        let Some(h) = hit else { continue };
        if h.normal.y < min_normal_y
            || !scene.materials()[h.material as usize]
                .flags
                .contains(MaterialFlags::WALKABLE)
        {
            continue;
        }
        let g = ray.origin() + ray.dir() * h.t;
        for p in Posture::ALL {
            segs.push(Job::Segment(
                Segment::new(
                    queries[qi].observers[oi],
                    g + Vec3::Y * queries[qi].agent.head_height(p),
                ),
                queries[qi].mask,
            ));
            owner.push((k, p, g, qi, oi, d));
        }
    }
    let blocked: Vec<bool> = run(engine, scene, &segs)?
        .into_iter()
        .map(|o| matches!(o, Outcome::Blocked(true)))
        .collect();
    // The step back must be walkable: the swept cylinder from the spot to the new point.
    let mut sweeps = Vec::new();
    let mut sweep_owner = Vec::new();
    for &(k, p, g, qi, _, _) in &owner {
        if p == Posture::Prone {
            let spot = answers[qi].choice.as_ref().unwrap().position;
            sweeps.extend(sweep(&queries[qi].agent, params, spot, g));
            sweep_owner.extend(std::iter::repeat_n(k, 9));
        }
    }
    let walls = engine.occluded(scene, &sweeps, Mask::FIRE)?;
    let mut walkable = vec![true; candidates.len()];
    for (i, &k) in sweep_owner.iter().enumerate() {
        walkable[k] &= !walls.get(i);
    }
    for (i, &(k, p, g, qi, oi, d)) in owner.iter().enumerate() {
        let better = out[qi]
            .as_ref()
            .is_none_or(|f| d < f.step_back || (d == f.step_back && p < f.posture));
        if !blocked[i] && walkable[k] && better {
            out[qi] = Some(FiringPosition {
                position: g,
                posture: p,
                observer: oi,
                step_back: d,
            });
        }
    }
    Ok(out)
}
