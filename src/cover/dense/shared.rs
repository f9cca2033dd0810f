//! What the queries of one batch share: the visibility cache (per cell, floor and observer
//! group) and the wave that traces every query's visibility requests together.

use super::local::{VIS_EXPOSED, VIS_HEAD, VIS_HEAD_FIRST, VIS_HIDDEN, VIS_PRONE, VIS_UNKNOWN};
use super::surface::{shape_key, ShapeKey};
use super::{DenseParams, DenseQuery};
use crate::cover::body::body_points;
use crate::cover::verify::occluded_by_eye;
use crate::cover::Posture;
use crate::scene::{Mask, Scene};
use crate::trace::Segment;
use crate::{Engine, Result};
use glam::Vec3;
use rustc_hash::{FxHashMap, FxHashSet};

pub(super) fn cell_key(i: i32, j: i32) -> u64 {
    (u64::from(i as u32) << 32) | u64::from(j as u32)
}

/// Visibility cache key: cell, ground height in cm, observer group.
pub(super) type VisKey = (u64, i32, u32);

pub(super) struct Shared {
    /// Per query: its group (same observers, mask and body).
    pub group_of: Vec<u32>,
    /// A query standing for each group.
    groups: Vec<usize>,
    /// (cell, ground cm, group) -> visibility code.
    pub vis: FxHashMap<VisKey, u8>,
}

impl Shared {
    pub fn new(queries: &[DenseQuery]) -> Shared {
        let mut s = Shared {
            group_of: Vec::with_capacity(queries.len()),
            groups: Vec::new(),
            vis: FxHashMap::default(),
        };
        let mut groups: FxHashMap<(ShapeKey, u32, Vec<[u32; 3]>), u32> = FxHashMap::default();
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
            s.group_of.push(g);
        }
        s
    }

    /// Files a traced visibility code, never stepping back (another query may have filed a
    /// later stage already).
    pub fn file(&mut self, key: VisKey, next: u8) {
        let rank = |v: u8| match v {
            VIS_UNKNOWN => 0,
            VIS_HEAD_FIRST => 1,
            VIS_HEAD => 2,
            VIS_PRONE => 3,
            _ => 9,
        };
        let e = self.vis.entry(key).or_insert(next);
        if rank(next) > rank(*e) {
            *e = next;
        }
    }
}

/// The observers a head request traces, of `n`: all at once where `full`, else the first
/// alone, then the rest.
fn head_observers(a: &Ask, n: usize) -> std::ops::Range<usize> {
    match (a.code, a.full) {
        (VIS_HEAD_FIRST, _) => 1.min(n)..n,
        (_, false) => 0..1.min(n),
        _ => 0..n,
    }
}

/// One visibility request: the cell, where its ground is, its state, what fits there, and
/// whether to trace every remaining stage at once.
struct Ask {
    key: VisKey,
    at: Vec3,
    code: u8,
    fit: u8,
    full: bool,
    qi: usize,
}

/// The requests of one wave, each asked once however many queries need it.
#[derive(Default)]
pub(super) struct Wave {
    vis: Vec<Ask>,
    vis_seen: FxHashSet<VisKey>,
}

impl Wave {
    /// The next visibility stage of a cell whose state is `code` (`fit`: 1 + the highest
    /// posture that fits); `full` traces every remaining stage at once.
    #[allow(clippy::too_many_arguments)]
    pub fn vis(&mut self, key: VisKey, at: Vec3, code: u8, fit: u8, full: bool, qi: usize) {
        if self.vis_seen.insert(key) {
            self.vis.push(Ask {
                key,
                at,
                code,
                fit,
                full,
                qi,
            });
        }
    }

    pub fn is_empty(&self) -> bool {
        self.vis.is_empty()
    }

    /// Adds another wave's requests that this one does not hold yet.
    pub fn absorb(&mut self, other: Wave) {
        for a in other.vis {
            if self.vis_seen.insert(a.key) {
                self.vis.push(a);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.vis.len()
    }

    /// Requests per stage (unknown, head hidden, prone hidden), for the debug log.
    pub fn stages(&self) -> [usize; 3] {
        let mut n = [0; 3];
        for a in &self.vis {
            n[match a.code {
                VIS_UNKNOWN | VIS_HEAD_FIRST => 0,
                VIS_HEAD => 1,
                _ => 2,
            }] += 1;
        }
        n
    }

    /// Traces the visibility requests (one occlusion call per mask) and files the results;
    /// `rays[qi]` counts each query's asks.
    pub fn trace(
        &self,
        engine: &Engine,
        scene: &Scene,
        queries: &[DenseQuery],
        p: &DenseParams,
        shared: &mut Shared,
        rays: &mut [usize],
    ) -> Result<()> {
        let mut segs: Vec<(Segment, Mask)> = Vec::new();
        // Each segment's eye: its group's first eye plus the observer's index.
        let mut eye = Vec::new();
        let mut first_eye = Vec::with_capacity(shared.groups.len() + 1);
        first_eye.push(0);
        for &g in &shared.groups {
            first_eye.push(first_eye.last().unwrap() + queries[g].observers.len() as u32);
        }
        let mut spans = Vec::with_capacity(self.vis.len());
        let mut points = Vec::new();
        for a in &self.vis {
            let group = shared.group_of[a.qi] as usize;
            let q = &queries[shared.groups[group]];
            let start = segs.len();
            let mut postures = Vec::new();
            let top = Posture::ALL[(a.fit.clamp(1, 3) - 1) as usize];
            let wanted: &[Posture] = match (a.code, a.full) {
                (VIS_UNKNOWN | VIS_HEAD_FIRST, _) => &[],
                (VIS_HEAD, false) => &[Posture::Prone],
                (VIS_HEAD, true) => &Posture::ALL,
                _ => &[Posture::Crouching, Posture::Standing],
            };
            if matches!(a.code, VIS_UNKNOWN | VIS_HEAD_FIRST) {
                let head = a.at + Vec3::Y * q.agent.head_height(Posture::Prone);
                let from = head_observers(a, q.observers.len());
                eye.extend(from.clone().map(|k| first_eye[group] + k as u32));
                let eyes = &q.observers[from];
                segs.extend(eyes.iter().map(|&o| (Segment::new(o, head), q.mask)));
                postures.push((Posture::Prone, start, segs.len()));
            }
            for &posture in wanted.iter().filter(|&&x| x <= top) {
                let s0 = segs.len();
                for (k, &o) in q.observers.iter().enumerate() {
                    points.clear();
                    body_points(&q.agent, a.at, posture, o, &p.body, &mut points);
                    segs.extend(points.iter().map(|&t| (Segment::new(o, t), q.mask)));
                    eye.resize(segs.len(), first_eye[group] + k as u32);
                }
                postures.push((posture, s0, segs.len()));
            }
            rays[a.qi] += segs.len() - start;
            let n = q.observers.len();
            spans.push((postures, head_observers(a, n).end == n));
        }
        let eyes = *first_eye.last().unwrap() as usize;
        let blocked = occluded_by_eye(engine, scene, &segs, &eye, eyes)?;
        for (a, (postures, all_eyes)) in self.vis.iter().zip(spans) {
            let hidden = |&(_, s, e): &(Posture, usize, usize)| blocked[s..e].iter().all(|&x| x);
            let next = match a.code {
                VIS_UNKNOWN if hidden(&postures[0]) && !all_eyes => VIS_HEAD_FIRST,
                VIS_UNKNOWN | VIS_HEAD_FIRST if hidden(&postures[0]) => VIS_HEAD,
                VIS_HEAD if !a.full && hidden(&postures[0]) => VIS_PRONE,
                VIS_UNKNOWN | VIS_HEAD_FIRST | VIS_HEAD if !hidden(&postures[0]) => VIS_EXPOSED,
                _ => {
                    let best = postures
                        .iter()
                        .take_while(|s| hidden(s))
                        .last()
                        .map_or(Posture::Prone, |s| s.0);
                    VIS_HIDDEN + best as u8
                }
            };
            shared.file(a.key, next);
        }
        Ok(())
    }
}
