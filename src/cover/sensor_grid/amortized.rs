//! Amortized ray casting (Darken, Morgan and Paull, "Optimizations"): a ray budget per tick, the most critical
//! rays first, a provisional choice after every tick, re-planned as later rays overturn it.

use super::search::{run, Job, Outcome, Search};
use super::{assemble, validate, CoverAnswer, CoverChoice, CoverQuery, SensorGridParams};
use crate::{Engine, Result, Scene};

/// One agent's cover search spread over ticks.
///
/// Each tick traces at most `budget` rays of the current stage in priority order (the top of
/// the head before lower points, near sensors before far ones). The provisional choice reads
/// every ray not traced yet optimistically (hidden, path clear); once every ray is traced the
/// answer is exactly [`super::find_cover`]'s.
#[derive(Clone, Debug)]
pub struct AmortizedCover {
    search: Search,
    jobs: Vec<Job>,
    order: Vec<usize>,
    traced: usize,
    outcomes: Vec<Option<Outcome>>,
    planned: bool,
}

impl AmortizedCover {
    pub fn new(query: CoverQuery, params: &SensorGridParams) -> Result<AmortizedCover> {
        validate(std::slice::from_ref(&query), params)?;
        Ok(AmortizedCover {
            search: Search::new(vec![query], *params),
            jobs: Vec::new(),
            order: Vec::new(),
            traced: 0,
            outcomes: Vec::new(),
            planned: false,
        })
    }

    /// Every ray traced?
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.search.done()
    }

    /// Traces up to `budget` rays and returns the provisional choice.
    pub fn tick(
        &mut self,
        engine: &Engine,
        scene: &Scene,
        budget: usize,
    ) -> Result<Option<CoverChoice>> {
        let mut left = budget;
        while !self.search.done() {
            if !self.planned {
                let planned = self.search.plan();
                let mut order: Vec<usize> = (0..planned.len()).collect();
                order.sort_by_key(|&i| (planned[i].1, i));
                self.jobs = planned.into_iter().map(|(j, _)| j).collect();
                self.order = order;
                self.outcomes = vec![None; self.jobs.len()];
                self.traced = 0;
                self.planned = true;
            }
            let take = left.min(self.jobs.len() - self.traced);
            if take > 0 {
                let picked = &self.order[self.traced..self.traced + take];
                let jobs: Vec<Job> = picked.iter().map(|&i| self.jobs[i]).collect();
                for (&i, o) in picked.iter().zip(run(engine, scene, &jobs)?) {
                    self.outcomes[i] = Some(o);
                }
                self.traced += take;
                left -= take;
            }
            if self.traced < self.jobs.len() {
                break;
            }
            self.search.apply(&self.outcomes, scene);
            self.planned = false;
        }
        Ok(self.provisional(scene).choice)
    }

    /// The answer with every untraced ray read optimistically.
    #[must_use]
    pub fn provisional(&self, scene: &Scene) -> CoverAnswer {
        let mut s = self.search.clone();
        if self.planned {
            s.plan(); // restores the current stage's owners in the clone
            s.apply(&self.outcomes, scene);
        }
        while !s.done() {
            let n = s.plan().len();
            s.apply(&vec![None; n], scene);
        }
        let mut answer = assemble(&s).remove(0);
        answer.rays = self.search.rays[0];
        answer
    }
}
