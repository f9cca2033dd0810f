//! An exhaustive cover search, written independently of the dense search's lazy waves: a flood
//! fill over the whole grid within the radius, then a plain Dijkstra over what it found, then
//! visibility per cell. The reference the dense search and the quality checks are measured
//! against.
//!
//! - [`flood`]: every spot the agent can reach, with the dense search's movement rules: a
//!   cell's ground is the closest walkable hit of a downward ray from one step height above the
//!   ground it is entered from (so floors above and below are told apart), within one step of
//!   it; a spot is entered where some posture fits and walked on from where crouching or
//!   standing fits; a diagonal step needs both cells beside it enterable.
//! - [`hidden_postures`]: per spot, the highest fitting posture whose body sample (any sampler:
//!   the search's own [`body_points`] or the quality checks' [`cylinder_points`]) is hidden from
//!   every observer; prone first, higher postures only where the one below hides.
//! - [`exhaustive`]: both over every reachable spot, with the search's body.
#![allow(dead_code)]

use glam::Vec3;
use sightline::agent::disc_clearance;
use sightline::cover::body::{body_points, BodyParams, PRONE_BACK, PRONE_FRONT};
use sightline::cover::{Agent, Posture};
use sightline::scene::{Mask, MaterialFlags, Scene};
use sightline::trace::{Ray, Segment};
use sightline::Engine;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

/// Everything about one reachable spot (a cell at one ground height).
#[derive(Clone, Copy, Debug)]
pub struct OracleCell {
    pub cell: (i32, i32),
    pub ground: Vec3,
    pub fit: Option<Posture>,
    /// Highest posture whose whole body (the oracle's sample) hides from every observer.
    pub hidden: Option<Posture>,
    /// Grid path length from the agent (infinite where unreachable).
    pub g: f32,
}

pub struct Oracle {
    pub cells: Vec<OracleCell>,
}

impl Oracle {
    /// Nearest reachable hidden cell: (cell, g, highest hidden posture there).
    pub fn nearest_hidden(&self) -> Option<((i32, i32), f32, Posture)> {
        self.cells
            .iter()
            .filter_map(|c| {
                c.hidden
                    .filter(|_| c.g.is_finite())
                    .map(|p| (c.cell, c.g, p))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)))
    }

    /// The spot of the cell holding `p` whose ground is nearest `p`'s height.
    pub fn at(&self, p: Vec3, cell: f32) -> Option<&OracleCell> {
        let k = cell_of(p, cell);
        self.cells.iter().filter(|c| c.cell == k).min_by(|a, b| {
            (a.ground.y - p.y)
                .abs()
                .total_cmp(&(b.ground.y - p.y).abs())
        })
    }
}

/// The movement rules (the dense search's, see the module docs).
#[derive(Clone, Copy, Debug)]
pub struct Moves {
    pub radius: f32,
    pub cell: f32,
    pub step_height: f32,
    pub max_slope: f32,
    /// The clearance axis starts this high above the ground ([`BodyParams::foot`]).
    pub foot: f32,
}

/// A reachable spot; `g` is infinite where the flood entered a cell but no path leads there
/// (a diagonal the rules forbid, a cell nothing fits in).
#[derive(Clone, Copy, Debug)]
pub struct Spot {
    pub cell: (i32, i32),
    pub ground: Vec3,
    pub fit: Option<Posture>,
    pub g: f32,
}

pub fn cell_of(p: Vec3, cell: f32) -> (i32, i32) {
    ((p.x / cell).floor() as i32, (p.z / cell).floor() as i32)
}

fn cm(y: f32) -> i32 {
    (y * 100.0).round() as i32
}

/// Orthogonal neighbours first, then diagonals: (di, dj).
const STEPS: [(i32, i32); 8] = [
    (1, 0),
    (-1, 0),
    (0, 1),
    (0, -1),
    (1, 1),
    (-1, 1),
    (1, -1),
    (-1, -1),
];

/// Every spot the agent reaches within the radius, with Dijkstra grid distances (octile:
/// `cell` per orthogonal step, `cell * sqrt 2` per diagonal). The first spot is the agent's own
/// (its feet; standing fits there by definition). Waves of the flood go to the engine in one
/// batch each.
pub fn flood(engine: &Engine, scene: &Scene, agent: &Agent, m: &Moves) -> Vec<Spot> {
    let a = agent.position;
    let start = cell_of(a, m.cell);
    let mut spots = vec![Spot {
        cell: start,
        ground: a,
        fit: Some(Posture::Standing),
        g: f32::INFINITY,
    }];
    let mut index: HashMap<(i32, i32, i32), usize> =
        HashMap::from([((start.0, start.1, cm(a.y)), 0)]);
    let mut edges: Vec<Vec<(usize, f32)>> = vec![Vec::new()];
    // Ground per (cell, bits of the height it is entered from).
    let mut ground: HashMap<((i32, i32), u32), Option<Vec3>> = HashMap::new();
    let within = |c: (i32, i32)| {
        let x = (c.0 as f32 + 0.5) * m.cell - a.x;
        let z = (c.1 as f32 + 0.5) * m.cell - a.z;
        x * x + z * z <= m.radius * m.radius
    };
    let ground_mask = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
    let min_normal_y = m.max_slope.cos();
    let mut frontier = vec![0usize];
    while !frontier.is_empty() {
        // Ground of every neighbour cell, from each frontier spot's height.
        let mut want = Vec::new();
        let mut asked = HashSet::new();
        for &u in &frontier {
            let (c, y) = (spots[u].cell, spots[u].ground.y);
            for (di, dj) in STEPS {
                let k = ((c.0 + di, c.1 + dj), y.to_bits());
                if within(k.0) && !ground.contains_key(&k) && asked.insert(k) {
                    want.push(k);
                }
            }
        }
        let rays: Vec<Ray> = want
            .iter()
            .map(|&(c, y)| {
                let o = Vec3::new(
                    (c.0 as f32 + 0.5) * m.cell,
                    f32::from_bits(y) + m.step_height,
                    (c.1 as f32 + 0.5) * m.cell,
                );
                Ray::new(o, Vec3::NEG_Y, 2.0 * m.step_height + 0.05)
            })
            .collect();
        let hits = engine.closest_hit(scene, &rays, ground_mask).unwrap();
        for ((k, r), h) in want.iter().zip(&rays).zip(hits) {
            let g = h
                .filter(|h| {
                    h.normal.y >= min_normal_y
                        && scene.materials()[h.material as usize]
                            .flags
                            .contains(MaterialFlags::WALKABLE)
                })
                .map(|h| r.origin() + r.dir() * h.t);
            ground.insert(*k, g);
        }
        // The spots entered: new ones need their clearance.
        let entered_ground = |u: &Spot, c: (i32, i32)| -> Option<Vec3> {
            if !within(c) {
                return None;
            }
            ground[&(c, u.ground.y.to_bits())].filter(|g| (g.y - u.ground.y).abs() <= m.step_height)
        };
        let mut new = Vec::new();
        for &u in &frontier {
            let su = spots[u];
            for (di, dj) in STEPS {
                let c = (su.cell.0 + di, su.cell.1 + dj);
                if let Some(g) = entered_ground(&su, c) {
                    let k = (c.0, c.1, cm(g.y));
                    if let std::collections::hash_map::Entry::Vacant(e) = index.entry(k) {
                        e.insert(spots.len());
                        new.push(spots.len());
                        spots.push(Spot {
                            cell: c,
                            ground: g,
                            fit: None,
                            g: f32::INFINITY,
                        });
                        edges.push(Vec::new());
                    }
                }
            }
        }
        let grounds: Vec<Vec3> = new.iter().map(|&v| spots[v].ground).collect();
        for (&v, fit) in new
            .iter()
            .zip(disc_fits(engine, scene, agent, &grounds, m.foot))
        {
            spots[v].fit = fit;
        }
        // Edges out of the frontier.
        for &u in &frontier {
            let su = spots[u];
            let entered: Vec<Option<usize>> = STEPS
                .iter()
                .map(|&(di, dj)| {
                    let c = (su.cell.0 + di, su.cell.1 + dj);
                    entered_ground(&su, c)
                        .map(|g| index[&(c.0, c.1, cm(g.y))])
                        .filter(|&v| spots[v].fit.is_some())
                })
                .collect();
            for (k, &(di, dj)) in STEPS.iter().enumerate() {
                let Some(v) = entered[k] else { continue };
                let cost = if k >= 4 {
                    let beside_i = if di > 0 { 0 } else { 1 };
                    let beside_j = if dj > 0 { 2 } else { 3 };
                    if entered[beside_i].is_none() || entered[beside_j].is_none() {
                        continue;
                    }
                    m.cell * std::f32::consts::SQRT_2
                } else {
                    m.cell
                };
                edges[u].push((v, cost));
            }
        }
        frontier = new
            .into_iter()
            .filter(|&v| spots[v].fit >= Some(Posture::Crouching))
            .collect();
    }
    // Dijkstra over the edges found.
    let mut heap = BinaryHeap::from([(Reverse(0u64), 0usize)]);
    spots[0].g = 0.0;
    let mut done = vec![false; spots.len()];
    while let Some((_, u)) = heap.pop() {
        if std::mem::replace(&mut done[u], true) {
            continue;
        }
        for &(v, cost) in &edges[u] {
            let ng = spots[u].g + cost;
            if ng < spots[v].g {
                spots[v].g = ng;
                heap.push((Reverse((f64::from(ng) * 1e6) as u64), v));
            }
        }
    }
    spots
}

/// The highest posture whose whole disc fits at each ground point ([`disc_clearance`], traced
/// against fire-blocking geometry), `None` where not even lying down fits.
pub fn disc_fits(
    engine: &Engine,
    scene: &Scene,
    agent: &Agent,
    grounds: &[Vec3],
    foot: f32,
) -> Vec<Option<Posture>> {
    let mut segs = Vec::new();
    let ends: Vec<[usize; 3]> = grounds
        .iter()
        .map(|&g| disc_clearance(agent, g, foot, &mut segs))
        .collect();
    let bits = engine.occluded(scene, &segs, Mask::FIRE).unwrap();
    let mut start = 0;
    ends.iter()
        .map(|e| {
            let mut fit = None;
            for (p, &end) in Posture::ALL.iter().zip(e) {
                if (start..end).any(|s| bits.get(s)) {
                    break;
                }
                fit = Some(*p);
                start = end;
            }
            start = e[2];
            fit
        })
        .collect()
}

/// Whether a prone body lying at `spot` toward each observer lies clear along its whole
/// length: at every half cell from its feet to its head, the cell there has walkable ground
/// (a downward ray from a step above the last ground) within a step of the last, where the
/// prone disc fits.
pub fn prone_lies(
    engine: &Engine,
    scene: &Scene,
    agent: &Agent,
    spot: Vec3,
    observers: &[Vec3],
    m: &Moves,
) -> bool {
    let ground_mask = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
    let (back, front) = (PRONE_BACK * agent.height(), PRONE_FRONT * agent.height());
    observers.iter().all(|o| {
        let to = Vec3::new(o.x - spot.x, 0.0, o.z - spot.z);
        let dir = if to.length_squared() > 1e-12 {
            to.normalize()
        } else {
            Vec3::X
        };
        [(dir, front), (-dir, back)].iter().all(|&(d, reach)| {
            let n = (reach / (0.5 * m.cell)).ceil() as i32;
            let mut y = spot.y;
            (1..=n).all(|s| {
                let q = spot + d * (reach * s as f32 / n as f32);
                let c = cell_of(q, m.cell);
                let centre = Vec3::new(
                    (c.0 as f32 + 0.5) * m.cell,
                    y + m.step_height,
                    (c.1 as f32 + 0.5) * m.cell,
                );
                let ray = Ray::new(centre, Vec3::NEG_Y, 2.0 * m.step_height);
                let Some(h) = engine.closest_hit(scene, &[ray], ground_mask).unwrap()[0] else {
                    return false;
                };
                let walkable = h.normal.y >= m.max_slope.cos()
                    && scene.materials()[h.material as usize]
                        .flags
                        .contains(MaterialFlags::WALKABLE);
                let g = ray.origin() + ray.dir() * h.t;
                if !walkable || disc_fits(engine, scene, agent, &[g], m.foot)[0].is_none() {
                    return false;
                }
                y = g.y;
                true
            })
        })
    })
}

/// A body sampler: the points of `posture`'s body standing at `ground`, seen from `observer`.
pub type Sampler<'a> = &'a dyn Fn(&Agent, Vec3, Posture, Vec3, &mut Vec<Vec3>);

/// Per spot (ground, fit): the highest fitting posture whose sample hides from every observer
/// under `mask`. Staged to trace little: the first point of the prone sample per observer,
/// the rest of it where that hid, then each higher posture where the one below hid.
#[allow(clippy::too_many_arguments)]
pub fn hidden_postures(
    engine: &Engine,
    scene: &Scene,
    agent: &Agent,
    observers: &[Vec3],
    mask: Mask,
    sample: Sampler,
    spots: &[(Vec3, Option<Posture>)],
) -> Vec<Option<Posture>> {
    let mut out = vec![None; spots.len()];
    let mut pts = Vec::new();
    // (spot, posture, first point only)
    let stages = [
        (Posture::Prone, true),
        (Posture::Prone, false),
        (Posture::Crouching, false),
        (Posture::Standing, false),
    ];
    let mut alive: Vec<usize> = (0..spots.len()).filter(|&k| spots[k].1.is_some()).collect();
    for (stage, &(posture, first)) in stages.iter().enumerate() {
        alive.retain(|&k| spots[k].1 >= Some(posture));
        let mut segs = Vec::new();
        let mut spans = Vec::new();
        for &k in &alive {
            let s0 = segs.len();
            for &o in observers {
                pts.clear();
                sample(agent, spots[k].0, posture, o, &mut pts);
                let n = if first { 1 } else { pts.len() };
                segs.extend(pts[..n].iter().map(|&t| Segment::new(o, t)));
            }
            spans.push((s0, segs.len()));
        }
        let bits = engine.occluded(scene, &segs, mask).unwrap();
        let mut still = Vec::new();
        for (&k, &(s0, s1)) in alive.iter().zip(&spans) {
            if (s0..s1).all(|b| bits.get(b)) {
                if stage > 0 {
                    out[k] = Some(posture);
                }
                still.push(k);
            }
        }
        alive = still;
    }
    out
}

/// Whether every point of `posture`'s sample at `ground` is hidden from every observer.
#[allow(clippy::too_many_arguments)]
pub fn all_hidden(
    engine: &Engine,
    scene: &Scene,
    agent: &Agent,
    observers: &[Vec3],
    mask: Mask,
    sample: Sampler,
    ground: Vec3,
    posture: Posture,
) -> bool {
    let mut pts = Vec::new();
    let mut segs = Vec::new();
    for &o in observers {
        pts.clear();
        sample(agent, ground, posture, o, &mut pts);
        segs.extend(pts.iter().map(|&t| Segment::new(o, t)));
    }
    let bits = engine.occluded(scene, &segs, mask).unwrap();
    (0..segs.len()).all(|b| bits.get(b))
}

/// The nearest reachable spot (by grid distance) whose sample hides in some fitting posture:
/// (index into `spots`, highest hidden posture there). Spots are traced nearest first, in
/// growing batches, so a near answer costs little and "none" costs one look at every spot.
#[allow(clippy::too_many_arguments)]
pub fn nearest_hidden_lazily(
    engine: &Engine,
    scene: &Scene,
    agent: &Agent,
    observers: &[Vec3],
    mask: Mask,
    sample: Sampler,
    spots: &[Spot],
) -> Option<(usize, Posture)> {
    let mut order: Vec<usize> = (0..spots.len())
        .filter(|&k| spots[k].g.is_finite() && spots[k].fit.is_some())
        .collect();
    order.sort_by(|&a, &b| spots[a].g.total_cmp(&spots[b].g).then(a.cmp(&b)));
    let mut at = 0;
    let mut batch = 64;
    while at < order.len() {
        let chunk = &order[at..(at + batch).min(order.len())];
        let input: Vec<(Vec3, Option<Posture>)> = chunk
            .iter()
            .map(|&k| (spots[k].ground, spots[k].fit))
            .collect();
        let hidden = hidden_postures(engine, scene, agent, observers, mask, sample, &input);
        // In distance order: the first hidden one is the nearest; among equal distances the
        // highest posture.
        let best = chunk
            .iter()
            .zip(hidden)
            .filter_map(|(&k, h)| h.map(|p| (k, p)))
            .min_by(|a, b| spots[a.0].g.total_cmp(&spots[b.0].g).then(b.1.cmp(&a.1)));
        if best.is_some() {
            return best;
        }
        at += chunk.len();
        batch *= 2;
    }
    None
}

/// The quality checks' own body, denser and shaped differently from the search's
/// ([`body_points`]): an upright cylinder of radius [`CYLINDER_RADIUS`] from
/// [`CYLINDER_FOOT`] above the ground to the posture's head height, sampled with
/// [`CYLINDER_POINTS`] points per observer: the head centre on the axis first, then
/// [`CYLINDER_ROWS`] rows evenly spaced from the foot up to the head (top row at the head),
/// each of [`CYLINDER_ANGLES`] points all the way round, every 45 degrees starting with the
/// point facing the observer (horizontally; +x when the observer is straight above), so the
/// two silhouette sides (90 and 270 degrees) and the back are included.
pub fn cylinder_points(
    agent: &Agent,
    ground: Vec3,
    posture: Posture,
    observer: Vec3,
    out: &mut Vec<Vec3>,
) {
    let head = agent.head_height(posture);
    let to = Vec3::new(observer.x - ground.x, 0.0, observer.z - ground.z);
    let toward = if to.length_squared() > 1e-12 {
        to.normalize()
    } else {
        Vec3::X
    };
    let side = Vec3::new(-toward.z, 0.0, toward.x);
    out.push(ground + Vec3::Y * head);
    for r in 0..CYLINDER_ROWS {
        let h = head - (head - CYLINDER_FOOT) * r as f32 / (CYLINDER_ROWS - 1) as f32;
        for k in 0..CYLINDER_ANGLES {
            let a = std::f32::consts::TAU * k as f32 / CYLINDER_ANGLES as f32;
            out.push(ground + Vec3::Y * h + (toward * a.cos() + side * a.sin()) * CYLINDER_RADIUS);
        }
    }
}

pub const CYLINDER_RADIUS: f32 = 0.25;
pub const CYLINDER_FOOT: f32 = 0.1;
pub const CYLINDER_ROWS: usize = 7;
pub const CYLINDER_ANGLES: usize = 8;
pub const CYLINDER_POINTS: usize = CYLINDER_ROWS * CYLINDER_ANGLES + 1;

/// Every reachable spot within `radius`, with the search's own body sample: the dense search
/// must find exactly this nearest hidden spot.
#[allow(clippy::too_many_arguments)]
pub fn exhaustive(
    engine: &Engine,
    scene: &Scene,
    agent: &Agent,
    observers: &[Vec3],
    mask: Mask,
    radius: f32,
    cell: f32,
    body: &BodyParams,
    step_height: f32,
) -> Oracle {
    let moves = Moves {
        radius,
        cell,
        step_height,
        max_slope: std::f32::consts::FRAC_PI_4,
        foot: body.foot,
    };
    let spots: Vec<Spot> = flood(engine, scene, agent, &moves)
        .into_iter()
        .filter(|s| s.g.is_finite())
        .collect();
    let sample = |a: &Agent, g: Vec3, p: Posture, o: Vec3, out: &mut Vec<Vec3>| {
        body_points(a, g, p, o, body, out)
    };
    let input: Vec<(Vec3, Option<Posture>)> = spots.iter().map(|s| (s.ground, s.fit)).collect();
    let mut hidden = hidden_postures(engine, scene, agent, observers, mask, &sample, &input);
    // Hidden only lying down is no hiding place where the body cannot lie there.
    for (h, s) in hidden.iter_mut().zip(&spots) {
        if *h == Some(Posture::Prone)
            && !prone_lies(engine, scene, agent, s.ground, observers, &moves)
        {
            *h = None;
        }
    }
    Oracle {
        cells: spots
            .iter()
            .zip(hidden)
            .map(|(s, hidden)| OracleCell {
                cell: s.cell,
                ground: s.ground,
                fit: s.fit,
                hidden,
                g: s.g,
            })
            .collect(),
    }
}
