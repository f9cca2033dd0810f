//! The ETA manager: every member's forecast stops, and which node each member holds when.
//!
//! A member **holds** a node from the moment it leaves the previous node toward it until it
//! arrives at the next one (so a member walking an edge holds both ends), and its last stop
//! from then on. Two members never hold one node at overlapping times: a planner asks
//! [`Eta::free`] before every step, and a plan replaces the member's forecast as a whole. As a
//! member walking an edge holds both ends, two members can never swap an edge head-on either.

use glam::Vec3;

/// One stop of a forecast: the member reaches `node` at `arrive` and leaves it at `depart`
/// (`f32::INFINITY` for the last stop: it stays).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stop {
    pub node: u32,
    pub arrive: f32,
    pub depart: f32,
}

/// The interval during which stop `k` of `stops` holds its node.
#[must_use]
pub fn held(stops: &[Stop], k: usize) -> (f32, f32) {
    let from = if k == 0 {
        stops[0].arrive
    } else {
        stops[k - 1].depart
    };
    let to = stops.get(k + 1).map_or(f32::INFINITY, |s| s.arrive);
    (from, to)
}

/// Whether two holds overlap (touching ends do not).
#[must_use]
pub fn overlap(a: (f32, f32), b: (f32, f32)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// Forecasts of every member of every team, indexed by node.
#[derive(Clone, Debug)]
pub struct Eta {
    tracks: Vec<Vec<Stop>>,
    /// Per node: `(member, from, to)` of every hold on it.
    holds: Vec<Vec<(u32, f32, f32)>>,
}

impl Eta {
    /// Members `0..members` on a graph of `nodes` nodes, each standing at `start[m]` from time 0.
    #[must_use]
    pub fn new(nodes: usize, start: &[u32]) -> Eta {
        let mut eta = Eta {
            tracks: vec![Vec::new(); start.len()],
            holds: vec![Vec::new(); nodes],
        };
        for (m, &n) in start.iter().enumerate() {
            eta.set(
                m as u32,
                vec![Stop {
                    node: n,
                    arrive: 0.0,
                    depart: f32::INFINITY,
                }],
            );
        }
        eta
    }

    /// Member `m`'s forecast.
    #[must_use]
    pub fn track(&self, m: u32) -> &[Stop] {
        &self.tracks[m as usize]
    }

    /// Replaces member `m`'s forecast (`stops` in time order, at least one).
    pub fn set(&mut self, m: u32, stops: Vec<Stop>) {
        for s in &self.tracks[m as usize] {
            self.holds[s.node as usize].retain(|h| h.0 != m);
        }
        for k in 0..stops.len() {
            let (from, to) = held(&stops, k);
            self.holds[stops[k].node as usize].push((m, from, to));
        }
        self.tracks[m as usize] = stops;
    }

    /// Whether no member but `m` holds `node` at any time in `(from, to)`.
    #[must_use]
    pub fn free(&self, node: u32, from: f32, to: f32, m: u32) -> bool {
        self.holds[node as usize]
            .iter()
            .all(|&(o, a, b)| o == m || !overlap((a, b), (from, to)))
    }

    /// Where member `m` is at time `t` by its forecast: at a stop, or part-way along the
    /// straight line between two (before its first stop: there; after its last: there).
    #[must_use]
    pub fn position(&self, m: u32, t: f32, nodes: &[Vec3]) -> Vec3 {
        position(&self.tracks[m as usize], t, nodes)
    }
}

/// Position along `stops` at time `t` (see [`Eta::position`]).
#[must_use]
pub fn position(stops: &[Stop], t: f32, nodes: &[Vec3]) -> Vec3 {
    // The last stop reached by `t` (arrivals are in time order).
    let k = stops.partition_point(|s| s.arrive <= t).saturating_sub(1);
    let s = stops[k];
    let here = nodes[s.node as usize];
    match stops.get(k + 1) {
        Some(next) if t > s.depart => {
            let f = ((t - s.depart) / (next.arrive - s.depart).max(1e-6)).clamp(0.0, 1.0);
            here.lerp(nodes[next.node as usize], f)
        }
        _ => here,
    }
}
