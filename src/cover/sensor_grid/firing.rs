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
/// observer, in the lowest such posture (least exposed). Four batched engine calls: posture
/// changes, ground under the steps, heads, walks.
pub fn firing_positions(
    engine: &Engine,
    scene: &Scene,
    queries: &[CoverQuery],
    answers: &[CoverAnswer],
    params: &SensorGridParams,
) -> Result<Vec<Option<FiringPosition>>> {
    let mut out = posture_changes(engine, scene, queries, answers)?;
    let steps = steps_away(queries, answers, params, &out);
    let mut tries = Vec::new();
    for (step, ground) in standable_ground(engine, scene, params, &steps)? {
        for posture in Posture::ALL {
            tries.push(Try {
                step,
                posture,
                ground,
            });
        }
    }
    let blocked = heads_blocked(engine, scene, queries, &steps, &tries)?;
    let walkable = walkable_steps(engine, scene, queries, answers, params, &steps, &tries)?;
    for (i, t) in tries.iter().enumerate() {
        let s = &steps[t.step];
        let better = out[s.query].as_ref().is_none_or(|f| {
            s.distance < f.step_back || (s.distance == f.step_back && t.posture < f.posture)
        });
        if !blocked[i] && walkable[t.step] && better {
            out[s.query] = Some(FiringPosition {
                position: t.ground,
                posture: t.posture,
                observer: s.observer,
                step_back: s.distance,
            });
        }
    }
    Ok(out)
}

/// A point stepped to from a query's cover spot, before its ground is found.
#[derive(Clone, Copy)]
struct Step {
    query: usize,
    /// The query's nearest observer.
    observer: usize,
    /// Metres stepped from the spot.
    distance: f32,
    /// Down from above the point to the ground under it.
    down: Ray,
}

/// A posture tried on the standable ground under a step.
#[derive(Clone, Copy)]
struct Try {
    /// Index into the steps.
    step: usize,
    posture: Posture,
    ground: Vec3,
}

/// A posture change: the lowest higher posture some observer sees a template point of, and
/// the first such observer. Traced with each query's own mask. `None` where no posture change
/// shows the query to an observer.
fn posture_changes(
    engine: &Engine,
    scene: &Scene,
    queries: &[CoverQuery],
    answers: &[CoverAnswer],
) -> Result<Vec<Option<FiringPosition>>> {
    let mut out: Vec<Option<FiringPosition>> = vec![None; queries.len()];
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
    Ok(out)
}

/// The points to try for each query with a choice and no posture change: every step toward
/// its nearest observer, sideways around what hides the spot, and back along the path.
fn steps_away(
    queries: &[CoverQuery],
    answers: &[CoverAnswer],
    params: &SensorGridParams,
    changes: &[Option<FiringPosition>],
) -> Vec<Step> {
    let mut steps = Vec::new();
    for (qi, (q, a)) in queries.iter().zip(answers).enumerate() {
        let Some(c) = &a.choice else { continue };
        if changes[qi].is_some() {
            continue;
        }
        let Some((oi, &o)) = q.observers.iter().enumerate().min_by(|x, y| {
            x.1.distance(c.position)
                .total_cmp(&y.1.distance(c.position))
        }) else {
            continue;
        };
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
                steps.push(Step {
                    query: qi,
                    observer: oi,
                    distance: d,
                    down: Ray::new(
                        top,
                        Vec3::NEG_Y,
                        2.0 * d + q.agent.height() + params.step_height,
                    ),
                });
                d += STEP;
            }
        }
    }
    steps
}

/// The steps with standable, walkable ground under them, and that ground point, in step order.
fn standable_ground(
    engine: &Engine,
    scene: &Scene,
    params: &SensorGridParams,
    steps: &[Step],
) -> Result<Vec<(usize, Vec3)>> {
    let down: Vec<Ray> = steps.iter().map(|s| s.down).collect();
    let hits = engine.closest_hit(
        scene,
        &down,
        Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE),
    )?;
    let min_normal_y = params.max_slope.cos();
    let mut ground = Vec::new();
    for (k, (s, hit)) in steps.iter().zip(&hits).enumerate() {
        let Some(h) = hit else { continue };
        if h.normal.y < min_normal_y
            || !scene.materials()[h.material as usize]
                .flags
                .contains(MaterialFlags::WALKABLE)
        {
            continue;
        }
        ground.push((k, s.down.origin() + s.down.dir() * h.t));
    }
    Ok(ground)
}

/// For each try: whether the line from the step's observer to the posture's head is blocked.
fn heads_blocked(
    engine: &Engine,
    scene: &Scene,
    queries: &[CoverQuery],
    steps: &[Step],
    tries: &[Try],
) -> Result<Vec<bool>> {
    let segs: Vec<Job> = tries
        .iter()
        .map(|t| {
            let q = &queries[steps[t.step].query];
            Job::Segment(
                Segment::new(
                    q.observers[steps[t.step].observer],
                    t.ground + Vec3::Y * q.agent.head_height(t.posture),
                ),
                q.mask,
            )
        })
        .collect();
    Ok(run(engine, scene, &segs)?
        .into_iter()
        .map(|o| matches!(o, Outcome::Blocked(true)))
        .collect())
}

/// For each step: whether the step back is walkable, the swept cylinder from the spot to the
/// new point clear of walls (true for steps with no ground, which no try names).
fn walkable_steps(
    engine: &Engine,
    scene: &Scene,
    queries: &[CoverQuery],
    answers: &[CoverAnswer],
    params: &SensorGridParams,
    steps: &[Step],
    tries: &[Try],
) -> Result<Vec<bool>> {
    let mut sweeps = Vec::new();
    let mut sweep_owner = Vec::new();
    for t in tries {
        if t.posture == Posture::Prone {
            let qi = steps[t.step].query;
            let spot = answers[qi].choice.as_ref().unwrap().position;
            sweeps.extend(sweep(&queries[qi].agent, params, spot, t.ground));
            sweep_owner.extend(std::iter::repeat_n(t.step, 9));
        }
    }
    let walls = engine.occluded(scene, &sweeps, Mask::FIRE)?;
    let mut walkable = vec![true; steps.len()];
    for (i, &k) in sweep_owner.iter().enumerate() {
        walkable[k] &= !walls.get(i);
    }
    Ok(walkable)
}
