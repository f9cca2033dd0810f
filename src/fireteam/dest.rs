//! Destination selection (Darken, McCue and Guerrero, "Destination Selection"): one node per
//! member near the goal, chosen as a set by cover, dispersion and view of the target sector,
//! then assigned to the members so that their total path length is least (Kuhn-Munkres).

use super::plan::PlanParams;
use super::world::{PathSearch, World};
use crate::{Error, Result};
use pathfinding::prelude::{kuhn_munkres_min, Matrix};

/// How destinations are chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DestParams {
    /// Destinations lie within this distance of the goal node (straight line, and at most
    /// twice as far along the graph). Default 10 m.
    pub radius: f32,
    /// Selection starts when the first member comes this close to the goal node. Default 15 m.
    pub trigger: f32,
    /// Most candidate sets scored exhaustively; the best-scoring nodes are kept until
    /// `C(candidates, members)` fits. Default 200,000.
    pub max_sets: u64,
}

impl DestParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> DestParams {
        DestParams {
            radius: 10.0,
            trigger: 15.0,
            max_sets: 200_000,
        }
    }
}

impl Default for DestParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// `C(n, k)`, saturating.
fn choose(n: u64, k: u64) -> u64 {
    let mut c: u64 = 1;
    for i in 0..k.min(n) {
        c = c.saturating_mul(n - i) / (i + 1);
    }
    if k > n {
        0
    } else {
        c
    }
}

/// Score of one node as a destination: cover and view of the sector (lower is better).
fn node_score(world: &World, v: u32, sector_view: Option<&[f32]>, p: &PlanParams) -> f32 {
    p.weights.cover * world.exposure()[v as usize]
        + sector_view.map_or(0.0, |s| p.weights.sector * (1.0 - s[v as usize]))
}

/// Score of a set of destinations (lower is better): its nodes' scores plus, for each node,
/// the movement's dispersion and come-together terms against the rest of the set.
#[must_use]
pub fn set_score(world: &World, set: &[u32], sector_view: Option<&[f32]>, p: &PlanParams) -> f32 {
    let nodes = world.graph().nodes();
    let mut s = 0.0;
    for &a in set {
        s += node_score(world, a, sector_view, p);
        let (mut near, mut far) = (f32::INFINITY, 0.0f32);
        for &b in set {
            if a != b {
                let d = nodes[a as usize].distance(nodes[b as usize]);
                near = near.min(d);
                far = far.max(d);
            }
        }
        if set.len() > 1 {
            s += p.weights.dispersion * (p.min_distance - near).max(0.0) / p.min_distance;
            s += p.weights.come_together
                * ((far - p.max_distance).max(0.0) / p.come_together_range).min(1.0);
        }
    }
    s
}

/// The best set of `members` destination nodes around `goal`, not among `taken`: every set of
/// the best-scoring candidates scored by [`set_score`] (ties: the set listed first, nodes
/// ascending). Errors when fewer than `members` candidates exist.
pub fn choose_destinations(
    world: &World,
    goal: u32,
    members: usize,
    taken: &[u32],
    sector_view: Option<&[f32]>,
    plan: &PlanParams,
    p: &DestParams,
) -> Result<Vec<u32>> {
    let graph = world.graph();
    let nodes = graph.nodes();
    // Candidates: within the radius in a straight line and twice it along the graph.
    let mut dist = std::collections::BTreeMap::new();
    let mut heap = std::collections::BinaryHeap::new();
    dist.insert(goal, 0.0f32);
    heap.push((std::cmp::Reverse(0u32), goal));
    let mut candidates = Vec::new();
    while let Some((std::cmp::Reverse(key), u)) = heap.pop() {
        let du = f32::from_bits(key);
        if dist.get(&u).is_some_and(|&d| d < du) {
            continue;
        }
        if nodes[u as usize].distance(nodes[goal as usize]) <= p.radius && !taken.contains(&u) {
            candidates.push(u);
        }
        for &(v, e) in graph.neighbours(u) {
            let dv = du + graph.edges()[e as usize].length;
            if dv <= 2.0 * p.radius && dist.get(&v).is_none_or(|&d| dv < d) {
                dist.insert(v, dv);
                heap.push((std::cmp::Reverse(dv.to_bits()), v));
            }
        }
    }
    candidates.sort_unstable();
    candidates.dedup();
    if candidates.len() < members {
        return Err(Error::InvalidInput(format!(
            "only {} free nodes lie within {} m of the goal node {goal} for {members} members: \
             choose a goal in a larger open area or raise the destination radius",
            candidates.len(),
            p.radius
        )));
    }
    candidates.sort_by(|&a, &b| {
        node_score(world, a, sector_view, plan)
            .total_cmp(&node_score(world, b, sector_view, plan))
            .then(a.cmp(&b))
    });
    let mut keep = candidates.len();
    while keep > members && choose(keep as u64, members as u64) > p.max_sets {
        keep -= 1;
    }
    let mut pool = candidates[..keep].to_vec();
    pool.sort_unstable();
    let mut best: Option<(f32, Vec<u32>)> = None;
    let mut set = Vec::with_capacity(members);
    combinations(&pool, members, 0, &mut set, &mut |s| {
        let score = set_score(world, s, sector_view, plan);
        if best.as_ref().is_none_or(|b| score < b.0) {
            best = Some((score, s.to_vec()));
        }
    });
    Ok(best.map(|b| b.1).unwrap_or_default())
}

fn combinations(
    pool: &[u32],
    k: usize,
    from: usize,
    set: &mut Vec<u32>,
    f: &mut impl FnMut(&[u32]),
) {
    if set.len() == k {
        f(set);
        return;
    }
    for i in from..pool.len() {
        if pool.len() - i < k - set.len() {
            break;
        }
        set.push(pool[i]);
        combinations(pool, k, i + 1, set, f);
        set.pop();
    }
}

/// Which destination each member takes: `lengths[m][d]` is member `m`'s path length to
/// destination `d` (`f32::INFINITY`: unreachable); the assignment with the least total length
/// (Kuhn-Munkres on millimetres). Returns the destination index per member.
#[must_use]
pub fn assign(lengths: &[Vec<f32>]) -> Vec<usize> {
    let n = lengths.len();
    if n == 0 {
        return Vec::new();
    }
    // Unreachable pairs cost more than any reachable assignment can.
    let finite_max = lengths
        .iter()
        .flatten()
        .filter(|v| v.is_finite())
        .fold(0.0f32, |a, &b| a.max(b));
    let big = (f64::from(finite_max) * 1000.0 + 1.0) * (n as f64 + 1.0);
    let weights = Matrix::from_rows(lengths.iter().map(|row| {
        row.iter()
            .map(|&v| {
                if v.is_finite() {
                    (f64::from(v) * 1000.0).round() as i64
                } else {
                    big as i64
                }
            })
            .collect::<Vec<i64>>()
    }))
    .expect("square matrix");
    kuhn_munkres_min(&weights).1
}

/// Path lengths from each member's node to each destination (plain shortest paths).
#[must_use]
pub fn path_lengths(
    world: &World,
    search: &mut PathSearch,
    from: &[u32],
    to: &[u32],
) -> Vec<Vec<f32>> {
    from.iter()
        .map(|&a| {
            to.iter()
                .map(|&b| {
                    search
                        .find(world, a, b, 0.0)
                        .map_or(f32::INFINITY, |p| p.cost)
                })
                .collect()
        })
        .collect()
}
