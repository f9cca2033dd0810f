//! An exhaustive cover search, written independently of the dense search's lazy waves: every
//! cell within the radius traced up front, then a plain Dijkstra over the whole grid. The
//! reference the dense search and the quality checks are measured against.
#![allow(dead_code)]

use glam::Vec3;
use sightline::cover::body::{body_points, clearance_segments, fitting_posture, BodyParams};
use sightline::cover::{Agent, Posture};
use sightline::scene::{Mask, MaterialFlags, Scene};
use sightline::trace::{Ray, Segment};
use sightline::Engine;
use std::collections::{BinaryHeap, HashMap};

/// Everything about one cell within the radius.
#[derive(Clone, Copy, Debug)]
pub struct OracleCell {
    pub ground: Vec3,
    pub fit: Option<Posture>,
    /// Highest posture whose whole body (the oracle's sample) hides from every observer.
    pub hidden: Option<Posture>,
    /// Grid path length from the agent (infinite where unreachable).
    pub g: f32,
}

pub struct Oracle {
    pub cells: HashMap<(i32, i32), OracleCell>,
}

impl Oracle {
    /// Nearest reachable hidden cell: (cell, g, highest hidden posture there).
    pub fn nearest_hidden(&self) -> Option<((i32, i32), f32, Posture)> {
        self.cells
            .iter()
            .filter_map(|(&k, c)| {
                c.hidden
                    .filter(|_| c.g.is_finite())
                    .map(|p| (k, c.g, p))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)))
    }

    pub fn at(&self, p: Vec3, cell: f32) -> Option<&OracleCell> {
        self.cells
            .get(&((p.x / cell).floor() as i32, (p.z / cell).floor() as i32))
    }
}

/// Single-floor scenes only: ground is the first surface below 50 m.
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
    let a = agent.position;
    let (ci, cj) = ((a.x / cell).floor() as i32, (a.z / cell).floor() as i32);
    let n = (radius / cell).ceil() as i32 + 1;
    let mut keys = Vec::new();
    for i in ci - n..=ci + n {
        for j in cj - n..=cj + n {
            let c = Vec3::new((i as f32 + 0.5) * cell, 0.0, (j as f32 + 0.5) * cell);
            if (c.x - a.x).powi(2) + (c.z - a.z).powi(2) <= radius * radius {
                keys.push((i, j, c));
            }
        }
    }
    let rays: Vec<Ray> = keys
        .iter()
        .map(|&(_, _, c)| Ray::new(Vec3::new(c.x, 50.0, c.z), Vec3::NEG_Y, 100.0))
        .collect();
    let hits = engine
        .closest_hit(scene, &rays, Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE))
        .unwrap();
    let mut cells: HashMap<(i32, i32), OracleCell> = HashMap::new();
    let mut grounds = Vec::new();
    for ((i, j, _), (r, h)) in keys.iter().zip(rays.iter().zip(hits)) {
        let Some(h) = h else { continue };
        let walk = scene.materials()[h.material as usize]
            .flags
            .contains(MaterialFlags::WALKABLE)
            && h.normal.y >= std::f32::consts::FRAC_PI_4.cos();
        if walk {
            grounds.push(((*i, *j), r.origin() + r.dir() * h.t));
        }
    }
    // The agent's own spot is where it stands.
    grounds.retain(|(k, _)| *k != (ci, cj));
    grounds.push(((ci, cj), a));
    // Clearance and every posture's body, all at once.
    let mut segs = Vec::new();
    for &(_, g) in &grounds {
        segs.extend(
            clearance_segments(agent, g, body.foot)
                .into_iter()
                .flatten(),
        );
    }
    let fit_bits = engine.occluded(scene, &segs, Mask::FIRE).unwrap();
    let mut vis = Vec::new();
    let mut spans = Vec::new();
    let mut pts = Vec::new();
    for &(_, g) in &grounds {
        for p in Posture::ALL {
            let s0 = vis.len();
            for &o in observers {
                pts.clear();
                body_points(agent, g, p, o, body, &mut pts);
                vis.extend(pts.iter().map(|&t| Segment::new(o, t)));
            }
            spans.push((s0, vis.len()));
        }
    }
    let vis_bits = engine.occluded(scene, &vis, mask).unwrap();
    for (k, &(key, g)) in grounds.iter().enumerate() {
        let fit = if key == (ci, cj) {
            Some(Posture::Standing)
        } else {
            fitting_posture(|b| fit_bits.get(k * 9 + b))
        };
        let mut hidden = None;
        for p in Posture::ALL {
            let (s0, s1) = spans[k * 3 + p as usize];
            if fit.is_some_and(|f| p <= f) && (s0..s1).all(|b| vis_bits.get(b)) {
                hidden = Some(p);
            } else {
                break;
            }
        }
        cells.insert(
            key,
            OracleCell {
                ground: g,
                fit,
                hidden,
                g: f32::INFINITY,
            },
        );
    }
    // Dijkstra over the whole grid with the dense search's movement rules.
    let mut heap = BinaryHeap::new();
    cells.get_mut(&(ci, cj)).unwrap().g = 0.0;
    heap.push((std::cmp::Reverse(0u32), (ci, cj)));
    let enter = |cells: &HashMap<(i32, i32), OracleCell>, from: Vec3, k: (i32, i32)| {
        cells
            .get(&k)
            .filter(|c| c.fit.is_some() && (c.ground.y - from.y).abs() <= step_height)
            .is_some()
    };
    while let Some((std::cmp::Reverse(gk), u)) = heap.pop() {
        let cu = cells[&u];
        if (gk as f32 / 1e4 - cu.g).abs() > 1e-3 {
            continue;
        }
        if !(u == (ci, cj) || cu.fit >= Some(Posture::Crouching)) {
            continue;
        }
        for (di, dj) in [
            (1, 0),
            (-1, 0),
            (0, 1),
            (0, -1),
            (1, 1),
            (-1, 1),
            (1, -1),
            (-1, -1),
        ] {
            let v = (u.0 + di, u.1 + dj);
            if !enter(&cells, cu.ground, v) {
                continue;
            }
            if di != 0
                && dj != 0
                && !(enter(&cells, cu.ground, (u.0 + di, u.1))
                    && enter(&cells, cu.ground, (u.0, u.1 + dj)))
            {
                continue;
            }
            let cost = if di != 0 && dj != 0 {
                cell * std::f32::consts::SQRT_2
            } else {
                cell
            };
            let ng = cu.g + cost;
            let cv = cells.get_mut(&v).unwrap();
            if ng < cv.g - 1e-6 {
                cv.g = ng;
                heap.push((std::cmp::Reverse((ng * 1e4).round() as u32), v));
            }
        }
    }
    Oracle { cells }
}
