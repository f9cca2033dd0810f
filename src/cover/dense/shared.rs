//! What the queries of one batch share: the caches of traced results (ground per cell and
//! height window, fit per body shape, visibility per observer group) and the wave that traces
//! every query's requests together.

use super::local::{VIS_EXPOSED, VIS_HEAD, VIS_HIDDEN, VIS_PRONE, VIS_UNKNOWN};
use super::{DenseParams, DenseQuery};
use crate::cover::body::{body_points, clearance_segments, fitting_posture};
use crate::cover::verify::occluded_masked;
use crate::cover::{Agent, Posture};
use crate::scene::{Mask, MaterialFlags, Scene};
use crate::trace::{Ray, Segment};
use crate::{Engine, Result};
use glam::Vec3;
use rustc_hash::{FxHashMap, FxHashSet};

/// Ground heights are asked for in windows keyed by the height entered from, quantised to this
/// (metres).
pub(super) const GROUND_KEY: f32 = 0.05;

pub(super) fn cell_key(i: i32, j: i32) -> u64 {
    (u64::from(i as u32) << 32) | u64::from(j as u32)
}

fn cell_centre(i: i32, j: i32, cell: f32) -> (f32, f32) {
    ((i as f32 + 0.5) * cell, (j as f32 + 0.5) * cell)
}

pub(super) struct Shared {
    /// Per query: its group (same observers, mask and body) and body shape.
    pub group_of: Vec<u32>,
    pub shape_of: Vec<u32>,
    /// A query standing for each group and shape.
    groups: Vec<usize>,
    shapes: Vec<usize>,
    /// (cell, window key) -> ground height, NaN where none.
    pub ground: FxHashMap<(u64, i32), f32>,
    /// (cell, ground cm, shape) -> fit code.
    pub fit: FxHashMap<(u64, i32, u32), u8>,
    /// (cell, ground cm, group) -> visibility code.
    pub vis: FxHashMap<(u64, i32, u32), u8>,
}

type ShapeKey = (u32, [u32; 3]);

fn shape_key(a: &Agent) -> ShapeKey {
    (a.radius.to_bits(), a.head_heights.map(f32::to_bits))
}

impl Shared {
    pub fn new(queries: &[DenseQuery]) -> Shared {
        let mut s = Shared {
            group_of: Vec::with_capacity(queries.len()),
            shape_of: Vec::with_capacity(queries.len()),
            groups: Vec::new(),
            shapes: Vec::new(),
            ground: FxHashMap::default(),
            fit: FxHashMap::default(),
            vis: FxHashMap::default(),
        };
        let mut groups: FxHashMap<(ShapeKey, u32, Vec<[u32; 3]>), u32> = FxHashMap::default();
        let mut shapes: FxHashMap<ShapeKey, u32> = FxHashMap::default();
        for (qi, q) in queries.iter().enumerate() {
            let observers = q
                .observers
                .iter()
                .map(|o| o.to_array().map(f32::to_bits))
                .collect();
            let next = s.groups.len() as u32;
            let g = *groups
                .entry((shape_key(&q.agent), q.mask.bits(), observers))
                .or_insert(next);
            if g == next {
                s.groups.push(qi);
            }
            let next = s.shapes.len() as u32;
            let sh = *shapes.entry(shape_key(&q.agent)).or_insert(next);
            if sh == next {
                s.shapes.push(qi);
            }
            s.group_of.push(g);
            s.shape_of.push(sh);
        }
        s
    }
}

/// The requests of one wave, each asked once however many queries need it.
#[derive(Default)]
pub(super) struct Wave {
    ground: Vec<(i32, i32, i32, usize)>,
    ground_seen: FxHashSet<(u64, i32)>,
    fit: Vec<(u64, i32, u32, Vec3, usize)>,
    fit_seen: FxHashSet<(u64, i32, u32)>,
    vis: Vec<(u64, i32, u32, Vec3, u8, Option<u8>, usize)>,
    vis_seen: FxHashSet<(u64, i32, u32)>,
    /// Queries whose choice awaits the intervis measurement.
    pub intervis: Vec<usize>,
}

impl Wave {
    pub fn ground(&mut self, i: i32, j: i32, ykey: i32, qi: usize) {
        if self.ground_seen.insert((cell_key(i, j), ykey)) {
            self.ground.push((i, j, ykey, qi));
        }
    }

    pub fn fit(&mut self, i: i32, j: i32, at: Vec3, shape: u32, ycm: i32, qi: usize) {
        let k = (cell_key(i, j), ycm, shape);
        if self.fit_seen.insert(k) {
            self.fit.push((k.0, ycm, shape, at, qi));
        }
    }

    /// The next visibility stage of a cell whose state is `code` (fit: the fit code, where
    /// known).
    #[allow(clippy::too_many_arguments)]
    pub fn vis(
        &mut self,
        i: i32,
        j: i32,
        at: Vec3,
        group: u32,
        ycm: i32,
        code: u8,
        fit: Option<u8>,
        qi: usize,
    ) {
        let k = (cell_key(i, j), ycm, group);
        if self.vis_seen.insert(k) {
            self.vis.push((k.0, ycm, group, at, code, fit, qi));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.ground.is_empty()
            && self.fit.is_empty()
            && self.vis.is_empty()
            && self.intervis.is_empty()
    }

    /// Traces the ground, clearance and visibility requests (one closest-hit call, one
    /// occlusion call per mask) and files the results; `rays[qi]` counts each query's asks.
    pub fn trace(
        &self,
        engine: &Engine,
        scene: &Scene,
        queries: &[DenseQuery],
        p: &DenseParams,
        shared: &mut Shared,
        rays: &mut [usize],
    ) -> Result<()> {
        let down: Vec<Ray> = self
            .ground
            .iter()
            .map(|&(i, j, ykey, _)| {
                let (x, z) = cell_centre(i, j, p.cell);
                let top = ykey as f32 * GROUND_KEY + p.step_height;
                Ray::new(
                    Vec3::new(x, top, z),
                    Vec3::NEG_Y,
                    2.0 * p.step_height + GROUND_KEY,
                )
            })
            .collect();
        let hits = engine.closest_hit(
            scene,
            &down,
            Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE),
        )?;
        let min_normal_y = p.max_slope.cos();
        for (&(i, j, ykey, qi), (ray, h)) in self.ground.iter().zip(down.iter().zip(hits)) {
            let walkable = h.filter(|h| {
                h.normal.y >= min_normal_y
                    && scene.materials()[h.material as usize]
                        .flags
                        .contains(MaterialFlags::WALKABLE)
            });
            let y = walkable.map_or(f32::NAN, |h| (ray.origin() + ray.dir() * h.t).y);
            shared.ground.insert((cell_key(i, j), ykey), y);
            rays[qi] += 1;
        }
        // Clearance, then the visibility stages, in one occlusion batch per mask.
        let mut segs: Vec<(Segment, Mask)> = Vec::new();
        for &(_, _, shape, at, qi) in &self.fit {
            let agent = &queries[shared.shapes[shape as usize]].agent;
            segs.extend(
                clearance_segments(agent, at, p.body.foot)
                    .into_iter()
                    .flatten()
                    .map(|s| (s, Mask::FIRE)),
            );
            rays[qi] += 9;
        }
        let mut spans = Vec::with_capacity(self.vis.len());
        let mut points = Vec::new();
        for &(_, _, group, at, code, fit, qi) in &self.vis {
            let q = &queries[shared.groups[group as usize]];
            let start = segs.len();
            let mut postures = Vec::new();
            match code {
                VIS_UNKNOWN => {
                    let head = at + Vec3::Y * q.agent.head_height(Posture::Prone);
                    segs.extend(q.observers.iter().map(|&o| (Segment::new(o, head), q.mask)));
                    postures.push((Posture::Prone, start, segs.len()));
                }
                _ => {
                    let top = fit.map_or(Posture::Standing, |f| Posture::ALL[(f - 1) as usize]);
                    let wanted: &[Posture] = if code == VIS_HEAD {
                        &[Posture::Prone]
                    } else {
                        &[Posture::Crouching, Posture::Standing]
                    };
                    for &posture in wanted.iter().filter(|&&x| x <= top) {
                        let s0 = segs.len();
                        for &o in &q.observers {
                            points.clear();
                            body_points(&q.agent, at, posture, o, &p.body, &mut points);
                            segs.extend(points.iter().map(|&t| (Segment::new(o, t), q.mask)));
                        }
                        postures.push((posture, s0, segs.len()));
                    }
                }
            }
            rays[qi] += segs.len() - start;
            spans.push(postures);
        }
        let blocked = occluded_masked(engine, scene, &segs)?;
        for (k, &(cell, ycm, shape, _, _)) in self.fit.iter().enumerate() {
            let b = &blocked[k * 9..k * 9 + 9];
            let fit = fitting_posture(|i| b[i]).map_or(0, |p| 1 + p as u8);
            shared.fit.insert((cell, ycm, shape), fit);
        }
        for (&(cell, ycm, group, _, code, _, _), postures) in self.vis.iter().zip(spans) {
            let hidden = |&(_, a, b): &(Posture, usize, usize)| blocked[a..b].iter().all(|&x| x);
            let next = match code {
                VIS_UNKNOWN if hidden(&postures[0]) => VIS_HEAD,
                VIS_HEAD if hidden(&postures[0]) => VIS_PRONE,
                VIS_UNKNOWN | VIS_HEAD => VIS_EXPOSED,
                _ => {
                    let best = postures
                        .iter()
                        .take_while(|s| hidden(s))
                        .last()
                        .map_or(Posture::Prone, |s| s.0);
                    VIS_HIDDEN + best as u8
                }
            };
            // Never step back: another query may have filed a later stage already.
            let rank = |v: u8| {
                if v == VIS_EXPOSED || v >= VIS_HIDDEN {
                    9
                } else {
                    v
                }
            };
            let e = shared.vis.entry((cell, ycm, group)).or_insert(next);
            if rank(next) > rank(*e) {
                *e = next;
            }
        }
        Ok(())
    }
}
