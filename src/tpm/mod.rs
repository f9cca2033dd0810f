//! The Threat Probability Model (Darken, McCue and Guerrero, after Isla and Blumberg's
//! occupancy maps): one probability per nav graph node that a threat is there, for as many
//! teams (or sides) as needed at once, and the visual search it drives.
//!
//! - [`TpmSet`]: `count` maps over one [`NavGraph`], stored node-major (the `count` values of a
//!   node side by side) so one update sweeps them all with vector arithmetic.
//! - [`view`]: what an observer sees and how fast it would detect a threat there, from the
//!   precomputed tables (line of sight and intervis records) or from batched engine calls.
//! - [`search`]: each member looks toward the angular sector with the most threat in view;
//!   looking lowers the threat there, so the team scans where threat is instead of sweeping.
//!
//! ## The update, per step of `dt` seconds
//!
//! 1. **Diffusion** (unobserved threat moves along the graph): `p_i += lambda * sum_j b_ij (p_j -
//!    p_i)` over the neighbours `j` of `i`, with `b_ij = 1 / max(deg i, deg j)` and `lambda = 1 -
//!    exp(-diffusion_rate * dt)`. The weights are symmetric and each node's sum to at most
//!    `lambda < 1`, so every new value is a weighted mean of old ones: values stay in `[0, 1]` and
//!    the **total is conserved** exactly (up to rounding).
//! 2. **Accrual** (what is not looked at becomes uncertain again): every node not observed in
//!    this step relaxes toward the prior, `p = prior + (p - prior) exp(-accrual_rate * dt)`, so
//!    threat accrues where it had been lowered. Without observations and diffusion the total
//!    approaches `nodes * prior` as `total(t) = nodes * prior + (total(0) - nodes * prior)
//!    exp(-accrual_rate * t)`.
//! 3. **Observation** (looking lowers threat, never to zero): a node observed in the step decays
//!    exponentially, `p *= exp(-rate * dt)`, where `rate` is the sum over the observers seeing it
//!    of the ACQUIRE detection rate `P_inf / tau` for that observer, node and threat posture
//!    ([`view`]); `P(t) = P_inf (1 - exp(-t P_inf / tau))` is the chance that a threat there would
//!    have been detected within `t`. The value never goes below `floor`.

pub mod search;
pub mod view;

pub use search::{pick_sector, sector_of, sector_threat, Gaze, Member, SearchParams, Searcher};
pub use view::{View, ViewParams};

use crate::nav::NavGraph;
use crate::{Error, Result};
use rayon::prelude::*;

/// The rates of the model (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TpmParams {
    /// Per second. Default 0.2: a node exchanges about a fifth of its difference with its
    /// neighbours each second, so a threat's probability spreads one 2 m node every few
    /// seconds, as fast as a cautious walk.
    pub diffusion_rate: f32,
    /// Per second. Default 0.02: a node looked at and cleared is about as uncertain as the
    /// prior again after a minute or two (half-way after 35 s).
    pub accrual_rate: f32,
    /// The value of a node nobody has looked at, and the level accrual returns to. Default 0.5.
    pub prior: f32,
    /// The lowest value observation leaves (never zero). Default 0.001.
    pub floor: f32,
}

impl TpmParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> TpmParams {
        TpmParams {
            diffusion_rate: 0.2,
            accrual_rate: 0.02,
            prior: 0.5,
            floor: 0.001,
        }
    }

    fn validate(&self) -> Result<()> {
        let rate = |v: f32| v.is_finite() && (0.0..=1e3).contains(&v);
        if !(rate(self.diffusion_rate) && rate(self.accrual_rate)) {
            return Err(Error::InvalidInput(format!(
                "TPM rates (diffusion {}, accrual {}) must be finite, 0..=1000 per second",
                self.diffusion_rate, self.accrual_rate
            )));
        }
        if !((0.0..=1.0).contains(&self.prior) && self.floor > 0.0 && self.floor <= self.prior) {
            return Err(Error::InvalidInput(format!(
                "TPM prior {} must be in [0, 1] and floor {} in (0, prior]",
                self.prior, self.floor
            )));
        }
        Ok(())
    }
}

impl Default for TpmParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// One observation in a step: map `tpm` sees `node`, with detection rate `rate` per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Observation {
    pub tpm: u32,
    pub node: u32,
    pub rate: f32,
}

/// Largest `nodes x count` a [`TpmSet`] holds (values, 4 bytes each).
pub const MAX_VALUES: usize = 1 << 27;
/// Longest step (seconds).
pub const MAX_STEP: f32 = 3600.0;

/// `count` threat probability maps over one graph (see the module docs).
#[derive(Clone, Debug)]
pub struct TpmSet {
    params: TpmParams,
    count: usize,
    nodes: usize,
    /// `p[node * count + tpm]`.
    p: Vec<f32>,
    next: Vec<f32>,
    /// Diffusion: `neighbours[offsets[i]..offsets[i + 1]]` with weights `b_ij`, and each
    /// node's weight sum.
    offsets: Vec<u32>,
    neighbours: Vec<u32>,
    weights: Vec<f32>,
    weight_sum: Vec<f32>,
    /// One bit per value: the accrual was undone for it in this step (cleared after).
    undone: Vec<u64>,
}

/// Values per parallel task of an update.
const CHUNK_VALUES: usize = 1 << 14;

impl TpmSet {
    /// `count` maps over `graph`, every value at the prior.
    pub fn new(graph: &NavGraph, count: usize, params: TpmParams) -> Result<TpmSet> {
        params.validate()?;
        let nodes = graph.len();
        if count == 0 || nodes.checked_mul(count).is_none_or(|v| v > MAX_VALUES) {
            return Err(Error::InvalidInput(format!(
                "{count} threat maps of {nodes} nodes: need at least one map and at most \
                 {MAX_VALUES} values in all; use fewer maps or a coarser graph"
            )));
        }
        let (offsets, adjacency) = graph.adjacency();
        let degree = |i: u32| offsets[i as usize + 1] - offsets[i as usize];
        let neighbours: Vec<u32> = adjacency.iter().map(|&(v, _)| v).collect();
        let mut weights = Vec::with_capacity(neighbours.len());
        let mut weight_sum = Vec::with_capacity(nodes);
        for i in 0..nodes as u32 {
            let mut sum = 0.0;
            for &(j, _) in graph.neighbours(i) {
                let b = 1.0 / degree(i).max(degree(j)) as f32;
                weights.push(b);
                sum += b;
            }
            weight_sum.push(sum);
        }
        Ok(TpmSet {
            params,
            count,
            nodes,
            p: vec![params.prior; nodes * count],
            next: vec![0.0; nodes * count],
            offsets: offsets.to_vec(),
            neighbours,
            weights,
            weight_sum,
            undone: vec![0; (nodes * count).div_ceil(64)],
        })
    }

    #[must_use]
    pub fn params(&self) -> &TpmParams {
        &self.params
    }

    /// Number of maps.
    #[must_use]
    pub fn count(&self) -> usize {
        self.count
    }

    /// Number of nodes.
    #[must_use]
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The value of `node` in map `tpm`.
    ///
    /// # Panics
    /// If either is out of range.
    #[must_use]
    pub fn get(&self, tpm: u32, node: u32) -> f32 {
        assert!((tpm as usize) < self.count && (node as usize) < self.nodes);
        self.p[node as usize * self.count + tpm as usize]
    }

    /// Map `tpm`'s values, by node.
    #[must_use]
    pub fn values(&self, tpm: u32) -> Vec<f32> {
        let t = tpm as usize;
        assert!(t < self.count, "map {tpm} of {}", self.count);
        self.p.iter().skip(t).step_by(self.count).copied().collect()
    }

    /// All values, node-major (`node * count + tpm`).
    #[must_use]
    pub fn raw(&self) -> &[f32] {
        &self.p
    }

    /// Sets a value (a report of a threat: 1; a node cleared by other means: low).
    pub fn set(&mut self, tpm: u32, node: u32, value: f32) -> Result<()> {
        if tpm as usize >= self.count
            || node as usize >= self.nodes
            || !(0.0..=1.0).contains(&value)
        {
            return Err(Error::InvalidInput(format!(
                "TPM set: map {tpm} of {}, node {node} of {}, value {value} must be in [0, 1]",
                self.count, self.nodes
            )));
        }
        self.p[node as usize * self.count + tpm as usize] = value;
        Ok(())
    }

    /// Sum of map `tpm`'s values (the expected number of threats).
    #[must_use]
    pub fn total(&self, tpm: u32) -> f64 {
        self.p
            .iter()
            .skip(tpm as usize)
            .step_by(self.count)
            .map(|&v| f64::from(v))
            .sum()
    }

    /// Advances every map by `dt` seconds (diffusion, accrual, then the observations: see the
    /// module docs). Observations may repeat a (map, node) pair: their rates add.
    pub fn step(&mut self, dt: f32, observations: &[Observation]) -> Result<()> {
        self.check_step(dt, observations)?;
        let pr = &self.params;
        let lambda = -(-pr.diffusion_rate * dt).exp_m1();
        let keep = (-pr.accrual_rate * dt).exp();
        let prior = pr.prior * (1.0 - keep);
        self.diffuse_all(lambda, keep, prior);
        self.observe(observations, dt, lambda, keep, prior);
        std::mem::swap(&mut self.p, &mut self.next);
        Ok(())
    }

    /// A step of `dt` seconds must lie in (0, [`MAX_STEP`]], and every observation name a map
    /// and a node that exist, at a finite rate of at least 0.
    fn check_step(&self, dt: f32, observations: &[Observation]) -> Result<()> {
        if !(dt.is_finite() && dt > 0.0 && dt <= MAX_STEP) {
            return Err(Error::InvalidInput(format!(
                "TPM step {dt} s must be in (0, {MAX_STEP}] seconds"
            )));
        }
        if let Some(o) = observations.iter().find(|o| {
            o.tpm as usize >= self.count
                || o.node as usize >= self.nodes
                || !(o.rate.is_finite() && o.rate >= 0.0)
        }) {
            return Err(Error::InvalidInput(format!(
                "observation {o:?}: map below {}, node below {}, rate a finite number >= 0 per second",
                self.count, self.nodes
            )));
        }
        Ok(())
    }

    /// Every map's diffusion and accrual into `next`: `keep` of the diffused value (a share
    /// `lambda` spread along the edges) plus `prior`; in parallel chunks of rows when large.
    fn diffuse_all(&mut self, lambda: f32, keep: f32, prior: f32) {
        let k = self.count;
        let rows = (CHUNK_VALUES / k).max(1);
        let (p, weight_sum) = (&self.p, &self.weight_sum);
        let graph = (&self.offsets[..], &self.neighbours[..], &self.weights[..]);
        let update = |first: usize, out: &mut [f32]| {
            if k == 1 {
                // One map: the same arithmetic as the row kernel, summed in a register.
                let (offsets, neighbours, weights) = graph;
                for (r, o) in out.iter_mut().enumerate() {
                    let i = first + r;
                    let mut acc = keep * (1.0 - lambda * weight_sum[i]) * p[i];
                    let (a, b) = (offsets[i] as usize, offsets[i + 1] as usize);
                    for (&j, &w) in neighbours[a..b].iter().zip(&weights[a..b]) {
                        acc += keep * lambda * w * p[j as usize];
                    }
                    *o = acc + prior;
                }
                return;
            }
            for (r, o) in out.chunks_exact_mut(k).enumerate() {
                let i = first + r;
                diffuse(o, p, k, 0..k, i, graph, weight_sum[i], lambda, keep);
                for v in o.iter_mut() {
                    *v += prior;
                }
            }
        };
        if self.p.len() <= CHUNK_VALUES {
            update(0, &mut self.next);
        } else {
            self.next
                .par_chunks_mut(rows * k)
                .enumerate()
                .for_each(|(c, out)| update(c * rows, out));
        }
    }

    /// The observed values in `next`: the diffused value without accrual (the accrual undone,
    /// or, where it all but replaced the value, diffused again), then every decay over `dt`,
    /// down to the floor.
    fn observe(
        &mut self,
        observations: &[Observation],
        dt: f32,
        lambda: f32,
        keep: f32,
        prior: f32,
    ) {
        let k = self.count;
        let (p, weight_sum) = (&self.p, &self.weight_sum);
        let graph = (&self.offsets[..], &self.neighbours[..], &self.weights[..]);
        for o in observations {
            let e = o.node as usize * k + o.tpm as usize;
            if keep >= 0.5 {
                if self.undone[e / 64] >> (e % 64) & 1 == 0 {
                    self.undone[e / 64] |= 1 << (e % 64);
                    self.next[e] = (self.next[e] - prior) / keep;
                }
            } else {
                let (i, t) = (o.node as usize, o.tpm as usize);
                let mut d = [0.0f32];
                diffuse(&mut d, p, k, t..t + 1, i, graph, weight_sum[i], lambda, 1.0);
                self.next[e] = d[0];
            }
        }
        for o in observations {
            let v = &mut self.next[o.node as usize * k + o.tpm as usize];
            *v = (*v * (-o.rate * dt).exp()).max(self.params.floor);
        }
        for o in observations {
            let e = o.node as usize * k + o.tpm as usize;
            self.undone[e / 64] = 0;
        }
    }
}

/// Row `i` of the diffusion for the maps `lanes`, times `scale`: `out[t] = scale * ((1 -
/// lambda s_i) p_i[t] + lambda sum_j b_ij p_j[t])`; every map of a row at once, or one.
#[allow(clippy::too_many_arguments)]
#[inline]
fn diffuse(
    out: &mut [f32],
    p: &[f32],
    k: usize,
    lanes: std::ops::Range<usize>,
    i: usize,
    graph: (&[u32], &[u32], &[f32]),
    weight_sum: f32,
    lambda: f32,
    scale: f32,
) {
    let (offsets, neighbours, weights) = graph;
    let row = |j: usize| &p[j * k + lanes.start..j * k + lanes.end];
    let own = scale * (1.0 - lambda * weight_sum);
    for (o, &v) in out.iter_mut().zip(row(i)) {
        *o = own * v;
    }
    let (a, b) = (offsets[i] as usize, offsets[i + 1] as usize);
    for (&j, &w) in neighbours[a..b].iter().zip(&weights[a..b]) {
        let w = scale * lambda * w;
        for (o, &v) in out.iter_mut().zip(row(j as usize)) {
            *o += w * v;
        }
    }
}
