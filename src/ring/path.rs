//! A* across a ring graph, where entering a node costs the distance plus `f(score)`, and the
//! nav graph legs that join a route to it.

use super::{RingGraph, Scores};
use crate::nav::NavGraph;
use crate::{Error, Result};
use glam::Vec3;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// `f(score)`: entering a node costs `weight * (1 - score)` metres on top of the distance,
/// so the path keeps to well-scored ground (a node scoring 0 costs `weight` extra).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreCost {
    pub weight: f32,
}

impl Default for ScoreCost {
    /// 10 m.
    fn default() -> Self {
        ScoreCost { weight: 10.0 }
    }
}

impl ScoreCost {
    /// Cost of entering a node scoring `score`.
    #[must_use]
    pub fn of(&self, score: f32) -> f32 {
        self.weight * (1.0 - score.clamp(0.0, 1.0))
    }
}

/// A route for an agent: the nav graph leg to the ring graph, the ring path, and the nav node
/// where it leaves the ring graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    /// Nav nodes from the one nearest the agent to the one nearest the entry node (empty
    /// without a nav graph, or when the nav graph does not join them).
    pub nav_in: Vec<u32>,
    /// Ring nodes from the entry node (nearest the agent) to the goal.
    pub ring: Vec<u32>,
    /// The nav node nearest the goal: where movement goes on on the nav graph.
    pub nav_out: Option<u32>,
    /// Cost of the ring path: its length plus `f(score)` of every node entered.
    pub cost: f32,
    /// The whole route as points: the agent, the nav leg, the ring path.
    pub points: Vec<Vec3>,
}

/// A* from `start` to `goal` over `n` nodes; `edges(u, push)` pushes `(v, cost)`, `h` is an
/// admissible estimate of the cost to the goal.
fn astar(
    n: usize,
    start: u32,
    goal: u32,
    mut edges: impl FnMut(u32, &mut dyn FnMut(u32, f32)),
    h: impl Fn(u32) -> f32,
) -> Option<(Vec<u32>, f32)> {
    let mut g = vec![f32::INFINITY; n];
    let mut prev = vec![u32::MAX; n];
    let mut heap = BinaryHeap::new();
    g[start as usize] = 0.0;
    heap.push((Reverse(h(start).to_bits()), start));
    while let Some((_, u)) = heap.pop() {
        if u == goal {
            let mut path = vec![goal];
            while *path.last()? != start {
                path.push(prev[*path.last()? as usize]);
            }
            path.reverse();
            return Some((path, g[goal as usize]));
        }
        let gu = g[u as usize];
        edges(u, &mut |v, c| {
            let nd = gu + c;
            if nd < g[v as usize] {
                g[v as usize] = nd;
                prev[v as usize] = u;
                heap.push((Reverse((nd + h(v)).to_bits()), v));
            }
        });
    }
    None
}

impl RingGraph {
    /// The cheapest path from node `from` to node `to` where entering node `v` over an edge of
    /// length `d` costs `d + cost.of(scores[v])`; `None` when `to` cannot be reached.
    pub fn path(
        &self,
        scores: &[f32],
        cost: ScoreCost,
        from: u32,
        to: u32,
    ) -> Result<Option<(Vec<u32>, f32)>> {
        let n = self.len() as u32;
        if scores.len() != self.len() || from >= n || to >= n {
            return Err(Error::InvalidInput(format!(
                "a ring path needs one score per node ({} given for {n}) and nodes below {n} \
                 ({from} and {to} given)",
                scores.len()
            )));
        }
        if !(cost.weight >= 0.0 && cost.weight.is_finite()) {
            return Err(Error::param(
                "score weight",
                cost.weight,
                "metres, at least 0",
            ));
        }
        let goal = self.nodes()[to as usize].position;
        Ok(astar(
            self.len(),
            from,
            to,
            |u, push| {
                for &(v, e) in self.neighbours(u) {
                    push(v, self.lengths()[e as usize] + cost.of(scores[v as usize]));
                }
            },
            |v| self.nodes()[v as usize].position.distance(goal) * (1.0 - 1e-6),
        ))
    }

    /// The route for an agent at `agent` to node `goal`: on `nav` from the agent to the ring
    /// node nearest it (among those joined to the centre), then across the ring graph by
    /// [`RingGraph::path`]. `None` when the goal cannot be reached from that node.
    pub fn route(
        &self,
        nav: Option<&NavGraph>,
        agent: Vec3,
        scores: &Scores,
        cost: ScoreCost,
        goal: u32,
    ) -> Result<Option<Route>> {
        if !agent.is_finite() {
            return Err(Error::InvalidInput(
                "the agent's position is NaN or infinite".into(),
            ));
        }
        let d = |i: usize| self.nodes()[i].position.distance_squared(agent);
        let Some(entry) = (0..self.len())
            .filter(|&i| scores.move_distance.get(i).is_some_and(|m| m.is_finite()))
            .min_by(|&a, &b| d(a).total_cmp(&d(b)))
        else {
            return Ok(None);
        };
        let Some((ring, cost_ring)) = self.path(&scores.score, cost, entry as u32, goal)? else {
            return Ok(None);
        };
        let mut nav_in = Vec::new();
        let mut nav_out = None;
        if let Some(nav) = nav.filter(|n| !n.is_empty()) {
            let (a, b) = (
                nav.nearest(agent),
                nav.nearest(self.nodes()[entry].position),
            );
            if let (Some(a), Some(b)) = (a, b) {
                if let Some((p, _)) = astar(
                    nav.len(),
                    a,
                    b,
                    |u, push| {
                        for &(v, e) in nav.neighbours(u) {
                            push(v, nav.costs()[e as usize]);
                        }
                    },
                    |_| 0.0,
                ) {
                    nav_in = p;
                }
            }
            nav_out = nav.nearest(self.nodes()[goal as usize].position);
        }
        let mut points = vec![agent];
        if let Some(nav) = nav {
            points.extend(nav_in.iter().map(|&i| nav.nodes()[i as usize]));
        }
        points.extend(ring.iter().map(|&i| self.nodes()[i as usize].position));
        Ok(Some(Route {
            nav_in,
            ring,
            nav_out,
            cost: cost_ring,
            points,
        }))
    }
}
