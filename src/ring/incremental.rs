//! A ring graph rebuild spread over ticks: each tick spends at most a budget of walks and
//! rays, and the finished graph and scores equal a build and scoring done at once.

use super::build::Builder;
use super::score::Plan;
use super::{Design, RingGraph, RingParams, Score, Scores, Situation, WalkSurface};
use crate::trace::Occlusion;
use crate::{Engine, Error, Mask, Result, Scene};
use glam::Vec3;

/// A rebuild in progress (see the module docs).
pub struct Incremental {
    builder: Option<Builder>,
    situation: Situation,
    score: Score,
    scoring: Option<Scoring>,
    result: Option<(RingGraph, Scores)>,
    ticks: u32,
    spent: u64,
}

struct Scoring {
    graph: RingGraph,
    plan: Plan,
    fire: Occlusion,
    sight: Occlusion,
    traced: usize,
}

impl Incremental {
    /// Starts a rebuild around `at`; checks everything [`RingGraph::build`] and
    /// [`RingGraph::score`] check, before any work.
    pub fn new(
        surface: &WalkSurface,
        at: Vec3,
        params: &RingParams,
        design: &Design,
        situation: Situation,
        score: Score,
    ) -> Result<Incremental> {
        score.validate(&situation)?;
        Ok(Incremental {
            builder: Some(Builder::new(surface, at, params, design)?),
            situation,
            score,
            scoring: None,
            result: None,
            ticks: 0,
            spent: 0,
        })
    }

    /// Does at most `budget` walks and rays of work (a walk on the surface, a task of wall
    /// following that makes no walk, and a traced ray count one each; see
    /// [`super::BuildReport::work`]); returns whether the rebuild is finished.
    pub fn tick(
        &mut self,
        engine: &Engine,
        scene: &Scene,
        surface: &WalkSurface,
        budget: u64,
    ) -> Result<bool> {
        if budget == 0 {
            return Err(Error::param(
                "budget",
                0,
                "at least one walk or ray per tick",
            ));
        }
        if self.result.is_some() {
            return Ok(true);
        }
        self.ticks += 1;
        let mut left = budget;
        if let Some(b) = &mut self.builder {
            let used = b.step(surface, left)?;
            left -= used;
            self.spent += used;
            if !b.done() {
                return Ok(false);
            }
            let graph = self.builder.take().expect("checked above").finish(surface);
            let plan = Plan::new(&graph, &self.situation, &self.score);
            self.scoring = Some(Scoring {
                fire: Occlusion::new(plan.fire.len()),
                sight: Occlusion::new(plan.sight.len()),
                graph,
                plan,
                traced: 0,
            });
        }
        let s = self.scoring.as_mut().expect("the build is finished");
        let (nf, ns) = (s.plan.fire.len(), s.plan.sight.len());
        while left > 0 && s.traced < nf + ns {
            let (segs, bits, at, mask) = if s.traced < nf {
                (&s.plan.fire, &mut s.fire, s.traced, Mask::FIRE)
            } else {
                (&s.plan.sight, &mut s.sight, s.traced - nf, Mask::SIGHT)
            };
            let n = (segs.len() - at).min(usize::try_from(left).unwrap_or(usize::MAX));
            let got = engine.occluded(scene, &segs[at..at + n], mask)?;
            for i in (0..n).filter(|&i| got.get(i)) {
                bits.set(at + i);
            }
            s.traced += n;
            left -= n as u64;
            self.spent += n as u64;
        }
        if s.traced < nf + ns {
            return Ok(false);
        }
        let s = self.scoring.take().expect("present");
        let scores = s.plan.evaluate(
            &s.graph,
            &self.situation,
            &self.score,
            &s.fire,
            0,
            &s.sight,
            0,
            super::score::distances(&s.graph),
        );
        self.result = Some((s.graph, scores));
        Ok(true)
    }

    /// The graph and its scores once finished.
    #[must_use]
    pub fn result(&self) -> Option<(&RingGraph, &Scores)> {
        self.result.as_ref().map(|(g, s)| (g, s))
    }

    #[must_use]
    pub fn into_result(self) -> Option<(RingGraph, Scores)> {
        self.result
    }

    /// Ticks run, and walks and rays spent so far.
    #[must_use]
    pub fn ticks(&self) -> u32 {
        self.ticks
    }

    #[must_use]
    pub fn spent(&self) -> u64 {
        self.spent
    }
}
