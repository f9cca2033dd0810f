//! Sniping spots (van der Sterren, "Picking Good Sniping Spots"): qualities A to I of a
//! waypoint, combined per direction by the paper's formula
//!
//! ```text
//! sniping quality(w, d) = sum of properties(w) + focus(w, d) x sum of directional properties(w, d)
//! ```
//!
//! The properties (one value each, in `[0, 1]`; "overlooked" waypoints are those `w` has a
//! line-of-sight-line-of-fire above zero with, in sector `d`):
//!
//! | quality | kind | value |
//! |---|---|---|
//! | A inconspicuous | property | `1 - light(w)` |
//! | B overlooks distant locations | directional | `k x sum(los_lof x far distance) / #overlooked`, the paper's formula |
//! | C hard to reach from the overlooked | directional | mean over overlooked `w'` of `min(travel(w' -> w) / reach, 1)` |
//! | D cover nearby | directional | share of overlooked `w'` for which a waypoint within `cover_time` of `w` is out of `w'`'s line of fire |
//! | E no cover for the overlooked | directional | mean over overlooked `w'` of the share of waypoints within `cover_time` of `w'` in `w`'s line of fire |
//! | F overlooks key locations | directional | key locations `w` sees in `d` / all key locations |
//! | G approaches observed | property | share of the waypoints within the time horizon of `w` that `w` sees |
//! | H focus | multiplier | [`super::focus`] |
//! | I moves freely | property | share of the waypoints within the time horizon of `w` (itself included) that need no special movement |
//! | traffic (optional) | directional | `sum(los_lof x far distance x traffic(w')) / sum of all traffic`: overlooks much of the traffic, at a distance |
//!
//! Each term has a weight ([`SnipingParams`]); the defaults weigh all the same.

use super::relations::{BitRows, BitSpan, Search};
use super::{focus, Direction, Relations, SECTORS};
use crate::{Error, Result};
use rayon::prelude::*;

/// What the terrain knows about each waypoint beyond its relations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Site {
    /// Light level in `[0, 1]` per waypoint ([`super::props::light_levels`]); empty: all 0.5.
    pub light: Vec<f32>,
    /// Whether each waypoint is walked without special movement (no stairs, water, crouching
    /// or door); empty: all free.
    pub free: Vec<bool>,
    /// The waypoints at key locations (doors, windows).
    pub keys: Vec<u32>,
    /// Traffic per waypoint (levelled, see [`super::experience`]); empty: no traffic term.
    pub traffic: Vec<f32>,
}

impl Site {
    fn check(&self, n: usize) -> Result<()> {
        let bad = |what: &str, len: usize| {
            Err(Error::InvalidInput(format!(
                "{what} has {len} values but there are {n} waypoints; give one per waypoint or \
                 none"
            )))
        };
        if !self.light.is_empty() && self.light.len() != n {
            return bad("the light level list", self.light.len());
        }
        if !self.free.is_empty() && self.free.len() != n {
            return bad("the free-movement list", self.free.len());
        }
        if !self.traffic.is_empty() && self.traffic.len() != n {
            return bad("the traffic list", self.traffic.len());
        }
        if let Some(k) = self.keys.iter().find(|&&k| k as usize >= n) {
            return Err(Error::InvalidInput(format!(
                "key location waypoint {k} is out of range ({n} waypoints)"
            )));
        }
        if let Some(v) = self
            .light
            .iter()
            .chain(&self.traffic)
            .find(|v| !(v.is_finite() && **v >= 0.0))
        {
            return Err(Error::InvalidInput(format!(
                "light and traffic values must be finite and non-negative, found {v}"
            )));
        }
        Ok(())
    }
}

/// Weights and scales of the sniping formula.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SnipingParams {
    /// Weights of qualities A, B, C, D, E, F, G, I and traffic.
    pub a: f32,
    pub b: f32,
    pub c: f32,
    pub d: f32,
    pub e: f32,
    pub f: f32,
    pub g: f32,
    pub i: f32,
    pub traffic: f32,
    /// The paper's `k` in "overlooking distant locations".
    pub k: f32,
    /// Travel time (seconds) at which a spot counts as fully hard to reach (quality C).
    pub reach: f32,
    /// Travel time (seconds) within which cover must be (qualities D and E).
    pub cover_time: f32,
}

impl SnipingParams {
    /// Every weight 1, `k` = 1, reach 20 s, cover within 2 s.
    #[must_use]
    pub const fn standard() -> SnipingParams {
        SnipingParams {
            a: 1.0,
            b: 1.0,
            c: 1.0,
            d: 1.0,
            e: 1.0,
            f: 1.0,
            g: 1.0,
            i: 1.0,
            traffic: 1.0,
            k: 1.0,
            reach: 20.0,
            cover_time: 2.0,
        }
    }

    fn validate(&self) -> Result<()> {
        let weights = [
            self.a,
            self.b,
            self.c,
            self.d,
            self.e,
            self.f,
            self.g,
            self.i,
            self.traffic,
            self.k,
        ];
        if let Some(w) = weights.iter().find(|w| !(w.is_finite() && w.abs() < 1e6)) {
            return Err(Error::param(
                "sniping weight",
                w,
                "a finite number (default 1)",
            ));
        }
        for (name, v) in [("reach time", self.reach), ("cover time", self.cover_time)] {
            if !(v.is_finite() && v > 0.0 && v < 1e5) {
                return Err(Error::param(name, v, "a positive number of seconds"));
            }
        }
        Ok(())
    }
}

impl Default for SnipingParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// The qualities of one waypoint in one direction, and its score.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SnipingRow {
    pub a_inconspicuous: f32,
    pub b_overlooks_distant: f32,
    pub c_hard_to_reach: f32,
    pub d_cover_nearby: f32,
    pub e_overlooked_exposed: f32,
    pub f_overlooks_keys: f32,
    pub g_approach_observed: f32,
    pub h_focus: f32,
    pub i_moves_freely: f32,
    pub traffic: f32,
    /// Waypoints overlooked in the direction (`value(w, d)`).
    pub value: u32,
    pub score: f32,
}

impl SnipingRow {
    /// CSV column names, in [`SnipingRow::values`] order.
    pub const COLUMNS: [&'static str; 12] = [
        "a_inconspicuous",
        "b_overlooks_distant",
        "c_hard_to_reach",
        "d_cover_nearby",
        "e_overlooked_exposed",
        "f_overlooks_keys",
        "g_approach_observed",
        "h_focus",
        "i_moves_freely",
        "traffic",
        "value",
        "score",
    ];

    #[must_use]
    pub fn values(&self) -> [f32; 12] {
        [
            self.a_inconspicuous,
            self.b_overlooks_distant,
            self.c_hard_to_reach,
            self.d_cover_nearby,
            self.e_overlooked_exposed,
            self.f_overlooks_keys,
            self.g_approach_observed,
            self.h_focus,
            self.i_moves_freely,
            self.traffic,
            self.value as f32,
            self.score,
        ]
    }
}

/// Per-waypoint sums over its overlooked waypoints, per sector.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    count: [u32; SECTORS],
    b: [f32; SECTORS],
    c: [f32; SECTORS],
    d: [f32; SECTORS],
    e: [f32; SECTORS],
    f: [f32; SECTORS],
    t: [f32; SECTORS],
}

/// Sniping qualities of every waypoint in every direction.
#[derive(Clone, Debug)]
pub struct Sniping {
    params: SnipingParams,
    a: Vec<f32>,
    g: Vec<f32>,
    i: Vec<f32>,
    sums: Vec<Sums>,
    keys: usize,
    traffic_total: f32,
}

/// The share of the waypoints within the time horizon of `w` (`w` itself counted when
/// `with_self`) for which `pred` holds; 0 when there are none.
fn horizon_share(rel: &Relations, w: u32, pred: &dyn Fn(u32) -> bool, with_self: bool) -> f32 {
    let list = rel.within_horizon(w);
    let pool: Vec<u32> = list
        .iter()
        .map(|&(v, _)| v)
        .filter(|&v| with_self || v != w)
        .collect();
    if pool.is_empty() {
        return 0.0;
    }
    pool.iter().filter(|&&v| pred(v)).count() as f32 / pool.len() as f32
}

/// What the per-sector sums read: the relations, the site, the parameters, which waypoints
/// are key locations, the waypoints within the cover time of each (as bit spans) and the fire
/// table unfolded into rows, so D and E are word operations.
struct Overlook<'a> {
    rel: &'a Relations,
    site: &'a Site,
    params: &'a SnipingParams,
    is_key: Vec<bool>,
    near: Vec<BitSpan>,
    fire: BitRows,
}

impl<'a> Overlook<'a> {
    fn new(rel: &'a Relations, site: &'a Site, params: &'a SnipingParams) -> Result<Self> {
        let n = rel.len();
        let mut is_key = vec![false; n];
        for &k in &site.keys {
            is_key[k as usize] = true;
        }
        let near: Vec<BitSpan> = (0..n as u32)
            .into_par_iter()
            .map(|w| {
                let list = rel.within_horizon(w);
                let within = list.iter().take_while(|(_, t)| *t <= params.cover_time);
                BitSpan::new(within.map(|&(v, _)| v))
            })
            .collect();
        let fire = BitRows::from_table(rel.fire_table())?;
        Ok(Overlook {
            rel,
            site,
            params,
            is_key,
            near,
            fire,
        })
    }

    /// Every waypoint's sums (in parallel), each after one bounded Dijkstra search for the
    /// travel times of quality C.
    fn sums(&self) -> Vec<Sums> {
        let (rel, params) = (self.rel, self.params);
        let n = rel.len();
        let speed = rel.params().speed;
        (0..n as u32)
            .into_par_iter()
            .map_init(
                || (Search::new(n), vec![f32::INFINITY; n]),
                |(search, time), w| {
                    let reached = search.run(rel.graph(), open(rel), w, params.reach * speed);
                    for &(v, c) in &reached {
                        time[v as usize] = c / speed;
                    }
                    let s = self.sums_of(w, time);
                    for &(v, _) in &reached {
                        time[v as usize] = f32::INFINITY;
                    }
                    s
                },
            )
            .collect()
    }

    /// Waypoint `w`'s sums per sector over the waypoints it interacts with, `time` holding
    /// the travel time to each waypoint reached (infinite elsewhere).
    fn sums_of(&self, w: u32, time: &[f32]) -> Sums {
        let (rel, params, fire) = (self.rel, self.params, &self.fire);
        let mut s = Sums::default();
        let mine = &self.near[w as usize];
        for it in rel.interactions(w) {
            let (o, k) = (it.other, it.sector.index());
            let v = super::los_lof_value(it.code);
            let far = rel.far_distance(w, o);
            s.count[k] += 1;
            s.b[k] += v * far;
            s.c[k] += (time[o as usize] / params.reach).min(1.0);
            if mine.any_outside(fire.row(o)) {
                s.d[k] += 1.0;
            }
            let theirs = &self.near[o as usize];
            let exposed = theirs.count_in(fire.row(w));
            s.e[k] += exposed as f32 / theirs.len().max(1) as f32;
            if self.is_key[o as usize] && it.code & super::SIGHT != 0 {
                s.f[k] += 1.0;
            }
            if let Some(t) = self.site.traffic.get(o as usize) {
                s.t[k] += v * far * t;
            }
        }
        s
    }
}

impl Sniping {
    /// Computes the qualities of every waypoint (in parallel). Cost per waypoint: one bounded
    /// Dijkstra search (quality C) and, per overlooked waypoint, a few bit lookups per
    /// waypoint within the cover time (D, E).
    pub fn compute(rel: &Relations, site: &Site, params: &SnipingParams) -> Result<Sniping> {
        params.validate()?;
        let n = rel.len();
        site.check(n)?;
        let sums = Overlook::new(rel, site, params)?.sums();
        let a = (0..n)
            .map(|w| 1.0 - site.light.get(w).copied().unwrap_or(0.5).min(1.0))
            .collect();
        let g = (0..n as u32)
            .map(|w| horizon_share(rel, w, &|v| rel.sight(w, v), false))
            .collect();
        let i = (0..n as u32)
            .map(|w| {
                horizon_share(
                    rel,
                    w,
                    &|v| site.free.get(v as usize).copied().unwrap_or(true),
                    true,
                )
            })
            .collect();
        Ok(Sniping {
            params: *params,
            a,
            g,
            i,
            sums,
            keys: site.keys.len(),
            traffic_total: site.traffic.iter().sum(),
        })
    }

    /// Number of waypoints.
    #[must_use]
    pub fn len(&self) -> usize {
        self.a.len()
    }
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.a.is_empty()
    }

    /// The qualities and score of waypoint `w` in direction `d`.
    ///
    /// # Panics
    /// If `w` is not a waypoint index (like slice indexing).
    #[must_use]
    pub fn row(&self, w: u32, d: Direction) -> SnipingRow {
        let p = &self.params;
        let (s, k) = (&self.sums[w as usize], d.index());
        let count = s.count[k].max(1) as f32;
        let w = w as usize;
        let mut r = SnipingRow {
            a_inconspicuous: self.a[w],
            b_overlooks_distant: p.k * s.b[k] / count,
            c_hard_to_reach: s.c[k] / count,
            d_cover_nearby: s.d[k] / count,
            e_overlooked_exposed: s.e[k] / count,
            f_overlooks_keys: s.f[k] / self.keys.max(1) as f32,
            g_approach_observed: self.g[w],
            h_focus: focus(&s.count, d),
            i_moves_freely: self.i[w],
            traffic: if self.traffic_total > 0.0 {
                s.t[k] / self.traffic_total
            } else {
                0.0
            },
            value: s.count[k],
            score: 0.0,
        };
        let properties =
            p.a * r.a_inconspicuous + p.g * r.g_approach_observed + p.i * r.i_moves_freely;
        let directional = p.b * r.b_overlooks_distant
            + p.c * r.c_hard_to_reach
            + p.d * r.d_cover_nearby
            + p.e * r.e_overlooked_exposed
            + p.f * r.f_overlooks_keys
            + p.traffic * r.traffic;
        r.score = properties + r.h_focus * directional;
        r
    }

    /// Every waypoint's score in direction `d`.
    #[must_use]
    pub fn scores(&self, d: Direction) -> Vec<f32> {
        (0..self.len() as u32)
            .map(|w| self.row(w, d).score)
            .collect()
    }
}

fn open(rel: &Relations) -> &[bool] {
    rel.open_flags()
}
