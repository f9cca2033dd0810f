//! What the queries of one batch share: the visibility cache (per cell, floor and observer
//! group) and the wave that traces every query's visibility requests together.

use super::local::{
    head_first, MAX_HINT, VIS_ENDS, VIS_HEAD, VIS_HEAD_FIRST, VIS_HIDDEN, VIS_PRONE, VIS_SEEN,
    VIS_UNKNOWN,
};
use super::surface::{shape_key, ShapeKey};
use super::{DenseParams, DenseQuery};
use crate::cover::body::{body_points, prone_end, BodyParams};
use crate::cover::verify::occluded_by_eye;
use crate::cover::Posture;
use crate::scene::{Mask, Scene};
use crate::trace::Segment;
use crate::{Engine, Result};
use glam::Vec3;
use rustc_hash::{FxHashMap, FxHashSet};

/// Set on the group of the agent's own cell's visibility key (keyed by the exact point).
pub(super) const START_KEY: u32 = 1 << 31;

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
    pub vis: VisCache,
}

impl Shared {
    pub fn new(queries: &[DenseQuery]) -> Shared {
        let mut s = Shared {
            group_of: Vec::with_capacity(queries.len()),
            groups: Vec::new(),
            vis: VisCache::default(),
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
            VIS_HEAD => 2,
            VIS_ENDS => 3,
            VIS_PRONE => 4,
            _ if head_first(v) => 1,
            _ => 9,
        };
        let e = self.vis.entry(key);
        if *e == VIS_UNKNOWN || rank(next) > rank(*e) {
            *e = next;
        }
    }
}

/// Cells per block side in [`VisCache`].
const BLOCK: i32 = 8;
/// An empty slot of a block.
const NO_FLOOR: i32 = i32::MIN;

/// One block of cells of one observer group: each cell's first floor filed (its ground in
/// cm) and code.
#[derive(Clone)]
struct Block {
    cm: [i32; (BLOCK * BLOCK) as usize],
    code: [u8; (BLOCK * BLOCK) as usize],
}

/// The visibility cache, laid out by blocks of 8 x 8 cells: a search reads its cells in
/// neighbouring order, so its lookups share blocks (and cache lines) instead of landing
/// anywhere in one large table. Cells with a second floor and the agents' own spots go to a
/// plain map beside it.
#[derive(Default)]
pub(super) struct VisCache {
    index: FxHashMap<(u32, i32, i32), u32>,
    blocks: Vec<Block>,
    others: FxHashMap<VisKey, u8>,
}

/// A block of [`VisCache`] (its group and block coordinates) and where it lies.
pub(super) type BlockHint = ((u32, i32, i32), u32);

/// The block of a key and its slot there; `None` for the keys kept in the plain map.
fn block_of(key: &VisKey) -> Option<((u32, i32, i32), usize)> {
    let (cell, _, group) = *key;
    if group & START_KEY != 0 {
        return None;
    }
    let (i, j) = ((cell >> 32) as u32 as i32, cell as u32 as i32);
    let slot = i.rem_euclid(BLOCK) + BLOCK * j.rem_euclid(BLOCK);
    Some((
        (group, i.div_euclid(BLOCK), j.div_euclid(BLOCK)),
        slot as usize,
    ))
}

impl VisCache {
    /// The code filed for `key`, if any.
    pub fn get(&self, key: &VisKey) -> Option<u8> {
        self.get_near(key, &mut None)
    }

    /// [`VisCache::get`] through `last`, the block a search looked up last: a search reads
    /// its cells in neighbouring order, so most lookups land in that block again and skip
    /// the hash. Blocks are never moved or dropped, so a block once found stays valid.
    pub fn get_near(&self, key: &VisKey, last: &mut Option<BlockHint>) -> Option<u8> {
        let Some((b, slot)) = block_of(key) else {
            return self.others.get(key).copied();
        };
        let at = match *last {
            Some((was, at)) if was == b => at,
            _ => {
                let at = *self.index.get(&b)?;
                *last = Some((b, at));
                at
            }
        };
        let block = &self.blocks[at as usize];
        if block.cm[slot] == key.1 {
            Some(block.code[slot])
        } else if block.cm[slot] == NO_FLOOR {
            None
        } else {
            self.others.get(key).copied()
        }
    }

    pub fn contains_key(&self, key: &VisKey) -> bool {
        self.get(key).is_some()
    }

    /// The code of `key`, [`VIS_UNKNOWN`] where none was filed yet.
    fn entry(&mut self, key: VisKey) -> &mut u8 {
        let Some((b, slot)) = block_of(&key) else {
            return self.others.entry(key).or_insert(VIS_UNKNOWN);
        };
        let next = self.blocks.len() as u32;
        let at = *self.index.entry(b).or_insert(next);
        if at == next {
            self.blocks.push(Block {
                cm: [NO_FLOOR; (BLOCK * BLOCK) as usize],
                code: [VIS_UNKNOWN; (BLOCK * BLOCK) as usize],
            });
        }
        let block = &mut self.blocks[at as usize];
        if block.cm[slot] == NO_FLOOR {
            block.cm[slot] = key.1;
        }
        if block.cm[slot] == key.1 {
            &mut block.code[slot]
        } else {
            self.others.entry(key).or_insert(VIS_UNKNOWN)
        }
    }
}

/// The observers a head request traces, of `n`, into `out`: all at once where `full`, else
/// the one to try first alone, then the rest.
fn head_observers(a: &Ask, n: usize, out: &mut Vec<usize>) {
    out.clear();
    let first = usize::from(a.first).min(n.saturating_sub(1));
    if head_first(a.code) {
        let tried = usize::from(a.code - VIS_HEAD_FIRST);
        out.extend((0..n).filter(|&k| k != tried));
    } else if a.full {
        out.extend(0..n);
    } else {
        out.extend((n > 0).then_some(first));
    }
}

/// One visibility request: the cell, where its ground is, its state, the observer to try
/// first, what fits there (1 + the highest posture), and whether to trace every remaining
/// stage at once.
pub(super) struct Ask {
    pub key: VisKey,
    pub at: Vec3,
    pub code: u8,
    pub first: u8,
    pub fit: u8,
    pub full: bool,
    pub qi: usize,
}

impl Ask {
    /// A request for every observer and every remaining stage at once (the GPU's up-front
    /// calls).
    pub fn whole(key: VisKey, at: Vec3, code: u8, fit: u8, qi: usize) -> Ask {
        Ask {
            key,
            at,
            code,
            first: 0,
            fit,
            full: true,
            qi,
        }
    }
}

/// The requests of one wave, each asked once however many queries need it.
#[derive(Default)]
pub(super) struct Wave {
    vis: Vec<Ask>,
    /// The keys of the requests in `vis`, all but the last `unseen`.
    seen: FxHashSet<VisKey>,
    /// The last requests of `vis`, added by [`Wave::fresh`], whose keys `seen` lacks: filed
    /// only when a request that may repeat one comes.
    unseen: usize,
}

impl Wave {
    /// Asks for the next visibility stage of a cell (once per wave, whoever asks).
    pub fn vis(&mut self, ask: Ask) {
        self.index();
        if self.seen.insert(ask.key) {
            self.vis.push(ask);
        }
    }

    /// Asks for a cell this wave cannot hold yet (one search asks for a cell once a wave):
    /// no lookup unless the wave later merges others.
    pub fn fresh(&mut self, ask: Ask) {
        self.vis.push(ask);
        self.unseen += 1;
    }

    /// Files the keys of the requests added by [`Wave::fresh`].
    fn index(&mut self) {
        if self.unseen > 0 {
            let from = self.vis.len() - self.unseen;
            self.seen.extend(self.vis[from..].iter().map(|a| a.key));
            self.unseen = 0;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.vis.is_empty()
    }

    /// Empties the wave, keeping the room its lists have.
    pub fn clear(&mut self) {
        self.vis.clear();
        self.seen.clear();
        self.unseen = 0;
    }

    /// Adds another wave's requests that this one does not hold yet.
    pub fn absorb(&mut self, other: Wave) {
        if self.vis.is_empty() {
            *self = other;
            return;
        }
        for a in other.vis {
            self.vis(a);
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
                VIS_HEAD | VIS_ENDS => 1,
                VIS_PRONE => 2,
                _ => 0,
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
        let mut job = Job::default();
        // Mostly heads from one observer: room for that, so a wave grows its lists rarely.
        job.segs.reserve(2 * self.vis.len());
        job.eye.reserve(2 * self.vis.len());
        job.from.reserve(self.vis.len());
        // Each segment's eye: its group's first eye plus the observer's index.
        job.first_eye.push(0);
        for &g in &shared.groups {
            let n = queries[g].observers.len() as u32;
            job.first_eye.push(job.first_eye.last().unwrap() + n);
        }
        let spans: Vec<Spans> = self
            .vis
            .iter()
            .map(|a| {
                let start = job.segs.len();
                let spans = job.push(a, queries, p, shared);
                rays[a.qi] += job.segs.len() - start;
                spans
            })
            .collect();
        let eyes = *job.first_eye.last().unwrap() as usize;
        let blocked = occluded_by_eye(engine, scene, &job.segs, &job.eye, eyes)?;
        for (a, sp) in self.vis.iter().zip(spans) {
            let from = &job.from[sp.from.clone()];
            shared.file(a.key, next_code(a, &sp, from, &blocked));
        }
        Ok(())
    }
}

/// The segments of one wave, each tagged with its eye.
#[derive(Default)]
struct Job {
    segs: Vec<(Segment, Mask)>,
    eye: Vec<u32>,
    /// Per observer group, the eye number of its first observer (and the total at the end).
    first_eye: Vec<u32>,
    points: Vec<Vec3>,
    /// The observers each request's head is traced from, request after request.
    from: Vec<usize>,
    /// One request's observers, before they go to `from`.
    eyes: Vec<usize>,
}

/// Where one request's segments lie in a wave: the prone head's (one per observer traced, in
/// the order of `Job::from[from]`) and each posture's whole body.
struct Spans {
    head: Option<(usize, usize)>,
    from: std::ops::Range<usize>,
    /// Whether the head's segments cover every observer.
    all_eyes: bool,
    bodies: Vec<(Posture, usize, usize)>,
}

impl Job {
    /// Adds the segments of request `a`.
    fn push(&mut self, a: &Ask, queries: &[DenseQuery], p: &DenseParams, shared: &Shared) -> Spans {
        let group = shared.group_of[a.qi] as usize;
        let q = &queries[shared.groups[group]];
        let eye0 = self.first_eye[group];
        let n = q.observers.len();
        let mut spans = Spans {
            head: None,
            from: 0..0,
            all_eyes: true,
            bodies: Vec::new(),
        };
        if a.code == VIS_UNKNOWN || head_first(a.code) {
            let head = a.at + Vec3::Y * q.agent.head_height(Posture::Prone);
            head_observers(a, n, &mut self.eyes);
            let start = self.segs.len();
            for &k in &self.eyes {
                self.eye.push(eye0 + k as u32);
                self.segs.push((Segment::new(q.observers[k], head), q.mask));
            }
            spans.head = Some((start, self.segs.len()));
            spans.all_eyes = head_first(a.code) || self.eyes.len() == n;
            spans.from = self.from.len()..self.from.len() + self.eyes.len();
            self.from.extend_from_slice(&self.eyes);
        }
        self.push_bodies(a, q, eye0, &p.body, &mut spans.bodies);
        spans
    }

    /// Adds the body segments request `a` asks for (the postures that fit): on the CPU the
    /// prone body's ends, then its rest, then crouching and standing; every posture at once
    /// where `full`, staged by posture in one run ([`Segment::staged`]): a posture counts
    /// only where every lower one hides, so the GPU may stop at a run's first seen point.
    fn push_bodies(
        &mut self,
        a: &Ask,
        q: &DenseQuery,
        eye0: u32,
        body: &BodyParams,
        out: &mut Vec<(Posture, usize, usize)>,
    ) {
        use Part::{All, Ends, Rest};
        const UPPER: [(Posture, Part); 2] = [(Posture::Crouching, All), (Posture::Standing, All)];
        let top = Posture::ALL[(a.fit.clamp(1, 3) - 1) as usize];
        let wanted: &[(Posture, Part)] = match (a.code, a.full) {
            (VIS_HEAD, false) => &[(Posture::Prone, Ends)],
            (VIS_HEAD, true) => &[(Posture::Prone, All), UPPER[0], UPPER[1]],
            (VIS_ENDS, false) => &[(Posture::Prone, Rest)],
            (VIS_ENDS, true) => &[(Posture::Prone, Rest), UPPER[0], UPPER[1]],
            (VIS_PRONE, _) => &UPPER,
            _ => &[],
        };
        let run = self.segs.len();
        for &(posture, part) in wanted.iter().filter(|w| w.0 <= top) {
            let s0 = self.segs.len();
            for (k, &o) in q.observers.iter().enumerate() {
                self.points.clear();
                body_points(&q.agent, a.at, posture, o, body, &mut self.points);
                let n = self.points.len();
                let kept = self.points.iter().enumerate().filter(|&(i, _)| match part {
                    All => true,
                    Ends => prone_end(i, n),
                    // The head centre (point 0) hid already: it is the head stage's point.
                    Rest => i > 0 && !prone_end(i, n),
                });
                let mask = q.mask;
                self.segs
                    .extend(kept.map(|(_, &t)| (Segment::new(o, t), mask)));
                self.eye.resize(self.segs.len(), eye0 + k as u32);
            }
            if a.full {
                for (i, s) in self.segs[s0..].iter_mut().enumerate() {
                    s.0 = s.0.staged((s0 - run + i) as u32, posture as u32);
                }
            }
            out.push((posture, s0, self.segs.len()));
        }
    }
}

/// Which points of a body sample a stage traces.
#[derive(Clone, Copy)]
enum Part {
    All,
    /// The prone body's first and last stations.
    Ends,
    /// The prone body's other points but the head centre (traced as the head).
    Rest,
}

/// The code a traced request files: exposed (naming an observer that sees it), its prone
/// head hidden from the first observer or from all, or the highest posture that hides.
fn next_code(a: &Ask, sp: &Spans, from: &[usize], blocked: &[bool]) -> u8 {
    if let Some((s, e)) = sp.head {
        // A lone first observer comes from a hint, which a code can always name.
        debug_assert!(sp.all_eyes || from[0] <= MAX_HINT);
        let seen = blocked[s..e].iter().position(|&b| !b);
        return match (seen, sp.all_eyes) {
            (Some(i), _) => VIS_SEEN + from[i].min(MAX_HINT) as u8,
            (None, false) => VIS_HEAD_FIRST + from[0].min(MAX_HINT) as u8,
            (None, true) if sp.bodies.is_empty() => VIS_HEAD,
            (None, true) => hidden_code(sp, blocked),
        };
    }
    let prone_hides = sp
        .bodies
        .first()
        .is_none_or(|&(_, s, e)| blocked[s..e].iter().all(|&b| b));
    match a.code {
        // The body is seen somewhere (which observer is not kept: the hint stays).
        VIS_HEAD | VIS_ENDS if !prone_hides => VIS_SEEN + a.first.min(MAX_HINT as u8),
        VIS_HEAD if !a.full => VIS_ENDS,
        VIS_ENDS if !a.full => VIS_PRONE,
        _ => hidden_code(sp, blocked),
    }
}

/// The highest posture whose whole body hides, prone when none does (prone hid already).
fn hidden_code(sp: &Spans, blocked: &[bool]) -> u8 {
    let best = sp
        .bodies
        .iter()
        .take_while(|&&(_, s, e)| blocked[s..e].iter().all(|&b| b))
        .last()
        .map_or(Posture::Prone, |b| b.0);
    VIS_HIDDEN + best as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocked cache answers like a plain map: several floors in one cell, cells on both
    /// sides of zero, the agents' own spots and two groups; a code never steps back.
    #[test]
    fn blocked_cache_answers_like_a_map() {
        let mut shared = Shared {
            group_of: Vec::new(),
            groups: Vec::new(),
            vis: VisCache::default(),
        };
        let mut reference: FxHashMap<VisKey, u8> = FxHashMap::default();
        let mut rng = crate::trace::SplitMix64(7);
        let codes = [
            VIS_HEAD_FIRST + 2,
            VIS_HEAD,
            VIS_PRONE,
            VIS_HIDDEN + 1,
            VIS_SEEN + 3,
        ];
        // The stages in order; the final codes (seen, hidden) rank alike and stay.
        let rank = |c: u8| match c {
            VIS_HEAD => 2,
            VIS_PRONE => 3,
            _ if head_first(c) => 1,
            _ => 9,
        };
        for _ in 0..20_000 {
            let (i, j) = (
                (rng.next_u64() % 40) as i32 - 20,
                (rng.next_u64() % 40) as i32 - 20,
            );
            let cm = [-35, 0, 310][(rng.next_u64() % 3) as usize];
            let group = (rng.next_u64() % 2) as u32
                | if rng.next_u64().is_multiple_of(10) {
                    START_KEY
                } else {
                    0
                };
            let key = (cell_key(i, j), cm, group);
            let next = codes[(rng.next_u64() % codes.len() as u64) as usize];
            shared.file(key, next);
            let e = reference.entry(key).or_insert(next);
            if rank(next) > rank(*e) {
                *e = next;
            }
        }
        // Through a kept block hint too, in the map's order (neighbours and strangers mixed).
        let mut hint = None;
        for (key, &code) in &reference {
            assert_eq!(shared.vis.get(key), Some(code), "{key:?}");
            assert_eq!(shared.vis.get_near(key, &mut hint), Some(code), "{key:?}");
        }
        assert_eq!(shared.vis.get(&(cell_key(99, 99), 0, 0)), None);
        assert_eq!(shared.vis.get(&(cell_key(0, 0), 12_345, 0)), None);
    }
}
