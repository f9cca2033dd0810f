//! Ratings beyond sniping (van der Sterren, "Similar Terrain Reasoning Applications"): ambush
//! spots, a generic combat suitability, strongholds per area, and sentry-gun spots. Each is a
//! sum of documented terms in `[0, 1]`, so its CSV columns can be tuned in a spreadsheet.
//!
//! * **Ambush** in attack direction `d`: *hidden*, the share of the waypoints that see the
//!   spot lying within 45 degrees of `d` ("hidden from observation in all but a few
//!   directions"); *nearby*, the share of the waypoints within `near` metres in that cone the
//!   spot overlooks ("overlooks a number of nearby locations, thus providing targets little
//!   time to respond"); *traffic*, over the overlooked nearby waypoints, the share of their
//!   traffic heading across or away from `d` (`max(|sin a|, cos a)` of the angle `a` between
//!   heading and `d`: "perpendicular to or away from the attack direction").
//! * **Combat**: *cover*, the share of the waypoints in line of sight or fire for which cover
//!   from them lies within the cover time; *overview*, the interactions over the most any
//!   waypoint has; *flank*, the best focus `f` over the 8 directions as `f / (1 + f)`.
//! * **Strongholds**: the combat rating of each waypoint from its interactions with waypoints
//!   outside its area only; an area's rating is its waypoints' mean.
//! * **Sentry**: a gun that cannot move or hide: *field of fire*, the share of waypoints within
//!   `near` metres it can shoot at; *keys*, the share of key locations it sees; *approach*,
//!   the share of waypoints within the time horizon it sees; *flank* as above.

use super::relations::{BitRows, BitSpan, Search};
use super::{focus, Direction, Relations, SECTORS};
use crate::{Error, Result};
use rayon::prelude::*;

/// Parameters of the ratings in this module.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TacticsParams {
    /// Travel time (seconds) within which cover counts (combat, strongholds).
    pub cover_time: f32,
    /// Radius (metres) of "nearby" for ambush and of a sentry gun's field of fire.
    pub near: f32,
}

impl TacticsParams {
    /// Cover within 2 s; nearby is 15 m.
    #[must_use]
    pub const fn standard() -> TacticsParams {
        TacticsParams {
            cover_time: 2.0,
            near: 15.0,
        }
    }

    fn validate(&self) -> Result<()> {
        for (name, v) in [("cover time", self.cover_time), ("near radius", self.near)] {
            if !(v.is_finite() && v > 0.0 && v < 1e5) {
                return Err(Error::param(name, v, "a positive number (seconds, metres)"));
            }
        }
        Ok(())
    }
}

impl Default for TacticsParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// Traffic per waypoint and heading (seconds spent moving through it in each direction).
#[derive(Clone, Debug, PartialEq)]
pub struct Traffic {
    pub by_heading: Vec<[f32; SECTORS]>,
}

impl Traffic {
    /// The traffic recorded in an experience (actors weighted).
    #[must_use]
    pub fn from_experience(
        e: &super::experience::Experience,
        p: &super::experience::ExperienceParams,
    ) -> Traffic {
        Traffic {
            by_heading: (0..e.len() as u32)
                .map(|w| e.traffic_by_heading(w, p))
                .collect(),
        }
    }

    /// Expected traffic when none was recorded: `trips` shortest paths between waypoints
    /// drawn with a seeded generator (SplitMix64); each waypoint a path passes adds the time of
    /// the step leaving it, under the heading of that step.
    pub fn estimate(rel: &Relations, trips: usize, seed: u64) -> Result<Traffic> {
        crate::limits::check_size("traffic trips", trips as u64, 1 << 20, "use fewer trips")?;
        let n = rel.len() as u32;
        let mut rng = crate::trace::SplitMix64(seed);
        let pairs: Vec<(u32, u32)> = (0..trips)
            .map(|_| {
                (
                    (rng.next_u64() % u64::from(n)) as u32,
                    (rng.next_u64() % u64::from(n)) as u32,
                )
            })
            .collect();
        let nodes = rel.nodes();
        let speed = rel.params().speed;
        let paths: Vec<Vec<u32>> = pairs
            .par_iter()
            .map_init(
                || Search::new(n as usize),
                |s, &(a, b)| {
                    s.path(rel.graph(), rel.open_flags(), a, b)
                        .unwrap_or_default()
                },
            )
            .collect();
        let mut by_heading = vec![[0.0f32; SECTORS]; n as usize];
        for path in paths {
            for step in path.windows(2) {
                let (a, b) = (nodes[step[0] as usize], nodes[step[1] as usize]);
                let h = Direction::between(a, b);
                by_heading[step[0] as usize][h.index()] += a.distance(b) / speed;
            }
        }
        Ok(Traffic { by_heading })
    }

    /// Total traffic per waypoint.
    #[must_use]
    pub fn totals(&self) -> Vec<f32> {
        self.by_heading.iter().map(|t| t.iter().sum()).collect()
    }
}

/// An ambush rating and its terms.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AmbushRow {
    pub hidden: f32,
    pub nearby: f32,
    pub traffic: f32,
    pub score: f32,
}

impl AmbushRow {
    pub const COLUMNS: [&'static str; 4] = [
        "hidden",
        "overlooks_nearby",
        "traffic_across_or_away",
        "score",
    ];
    #[must_use]
    pub fn values(&self) -> [f32; 4] {
        [self.hidden, self.nearby, self.traffic, self.score]
    }
}

/// Ambush ratings of every waypoint for attacks in direction `d` (module docs).
pub fn ambush(
    rel: &Relations,
    traffic: &Traffic,
    d: Direction,
    p: &TacticsParams,
) -> Result<Vec<AmbushRow>> {
    p.validate()?;
    if traffic.by_heading.len() != rel.len() {
        return Err(Error::InvalidInput(format!(
            "traffic has {} waypoints, the relations {}",
            traffic.by_heading.len(),
            rel.len()
        )));
    }
    let nodes = rel.nodes();
    let in_cone = |k: Direction| {
        (k.index() + SECTORS - d.index()) % SECTORS <= 1
            || (d.index() + SECTORS - k.index()) % SECTORS <= 1
    };
    // max(|sin a|, cos a) at a = 0, 45, ..., 315 degrees, exactly.
    const S: f32 = std::f32::consts::FRAC_1_SQRT_2;
    const ALIGN: [f32; SECTORS] = [1.0, S, 1.0, S, 0.0, S, 1.0, S];
    let align: [f32; SECTORS] = std::array::from_fn(|h| ALIGN[(h + SECTORS - d.index()) % SECTORS]);
    let near2 = p.near * p.near;
    Ok((0..rel.len() as u32)
        .into_par_iter()
        .map(|w| {
            let list = rel.interactions(w);
            let seen_by = list.iter().filter(|i| i.code & super::SIGHT != 0);
            let (mut inside, mut all) = (0u32, 0u32);
            for i in seen_by {
                all += 1;
                inside += u32::from(in_cone(i.sector));
            }
            let hidden = if all == 0 {
                1.0
            } else {
                inside as f32 / all as f32
            };
            let pw = nodes[w as usize];
            let near_in_cone = nodes
                .iter()
                .enumerate()
                .filter(|&(o, q)| {
                    o as u32 != w
                        && q.distance_squared(pw) <= near2
                        && in_cone(Direction::between(pw, *q))
                })
                .count();
            let (mut seen, mut moving, mut across) = (0u32, 0.0f32, 0.0f32);
            for i in list {
                if in_cone(i.sector) && nodes[i.other as usize].distance_squared(pw) <= near2 {
                    seen += 1;
                    let t = &traffic.by_heading[i.other as usize];
                    moving += t.iter().sum::<f32>();
                    across += t.iter().zip(&align).map(|(t, a)| t * a).sum::<f32>();
                }
            }
            let nearby = seen as f32 / near_in_cone.max(1) as f32;
            let traffic = if moving > 0.0 { across / moving } else { 0.0 };
            AmbushRow {
                hidden,
                nearby,
                traffic,
                score: hidden + nearby + traffic,
            }
        })
        .collect())
}

/// A combat rating and its terms.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CombatRow {
    pub cover: f32,
    pub overview: f32,
    pub flank: f32,
    pub score: f32,
}

impl CombatRow {
    pub const COLUMNS: [&'static str; 4] = ["cover", "overview", "flank", "score"];
    #[must_use]
    pub fn values(&self) -> [f32; 4] {
        [self.cover, self.overview, self.flank, self.score]
    }
}

/// Per waypoint: interactions counted, with cover within reach, per sector; only the
/// interactions `keep(w, other)` accepts.
fn combat_sums(
    rel: &Relations,
    p: &TacticsParams,
    keep: &(dyn Fn(u32, u32) -> bool + Sync),
) -> Result<Vec<([u32; SECTORS], u32)>> {
    let fire = BitRows::from_table(rel.fire_table())?;
    Ok((0..rel.len() as u32)
        .into_par_iter()
        .map(|w| {
            let within = rel
                .within_horizon(w)
                .iter()
                .take_while(|(_, t)| *t <= p.cover_time);
            let mine = BitSpan::new(within.map(|&(v, _)| v));
            let mut counts = [0u32; SECTORS];
            let mut covered = 0;
            for i in rel.interactions(w).iter().filter(|i| keep(w, i.other)) {
                counts[i.sector.index()] += 1;
                covered += u32::from(mine.any_outside(fire.row(i.other)));
            }
            (counts, covered)
        })
        .collect())
}

fn combat_rows(sums: &[([u32; SECTORS], u32)]) -> Vec<CombatRow> {
    let most = sums
        .iter()
        .map(|(c, _)| c.iter().sum::<u32>())
        .max()
        .unwrap_or(0)
        .max(1);
    sums.iter()
        .map(|(counts, covered)| {
            let total: u32 = counts.iter().sum();
            let cover = if total == 0 {
                1.0
            } else {
                *covered as f32 / total as f32
            };
            let overview = total as f32 / most as f32;
            let best = Direction::all()
                .map(|d| focus(counts, d))
                .fold(0.0f32, f32::max);
            let flank = best / (1.0 + best);
            CombatRow {
                cover,
                overview,
                flank,
                score: cover + overview + flank,
            }
        })
        .collect()
}

/// The generic combat suitability of every waypoint (module docs).
pub fn combat(rel: &Relations, p: &TacticsParams) -> Result<Vec<CombatRow>> {
    p.validate()?;
    Ok(combat_rows(&combat_sums(rel, p, &|_, _| true)?))
}

/// A waypoint's stronghold terms: its combat rating against waypoints outside its area, and
/// its area's rating.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StrongholdRow {
    pub area: u32,
    pub combat: CombatRow,
    pub area_rating: f32,
}

/// Strongholds: per area, the mean combat rating of its waypoints counting only their
/// interactions with waypoints outside the area (`areas[w]` is waypoint `w`'s area).
pub fn strongholds(
    rel: &Relations,
    areas: &[u32],
    p: &TacticsParams,
) -> Result<Vec<StrongholdRow>> {
    p.validate()?;
    if areas.len() != rel.len() {
        return Err(Error::InvalidInput(format!(
            "{} area labels for {} waypoints; give one per waypoint",
            areas.len(),
            rel.len()
        )));
    }
    let rows = combat_rows(&combat_sums(rel, p, &|w, o| {
        areas[w as usize] != areas[o as usize]
    })?);
    let count = areas.iter().max().map_or(0, |&a| a as usize + 1);
    crate::limits::check_size(
        "areas",
        count as u64,
        rel.len() as u64,
        "number areas 0..waypoints",
    )?;
    let mut sum = vec![(0.0f64, 0u32); count];
    for (r, &a) in rows.iter().zip(areas) {
        sum[a as usize].0 += f64::from(r.score);
        sum[a as usize].1 += 1;
    }
    Ok(rows
        .iter()
        .zip(areas)
        .map(|(r, &a)| {
            let (s, k) = sum[a as usize];
            StrongholdRow {
                area: a,
                combat: *r,
                area_rating: (s / f64::from(k)) as f32,
            }
        })
        .collect())
}

/// A sentry-gun rating and its terms.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SentryRow {
    pub field_of_fire: f32,
    pub keys: f32,
    pub approach: f32,
    pub flank: f32,
    pub score: f32,
}

impl SentryRow {
    pub const COLUMNS: [&'static str; 5] = [
        "field_of_fire",
        "keys_seen",
        "approach_observed",
        "flank",
        "score",
    ];
    #[must_use]
    pub fn values(&self) -> [f32; 5] {
        [
            self.field_of_fire,
            self.keys,
            self.approach,
            self.flank,
            self.score,
        ]
    }
}

/// Sentry-gun spots (module docs); `keys` are the waypoints at key locations.
pub fn sentry(rel: &Relations, keys: &[u32], p: &TacticsParams) -> Result<Vec<SentryRow>> {
    p.validate()?;
    if let Some(k) = keys.iter().find(|&&k| k as usize >= rel.len()) {
        return Err(Error::InvalidInput(format!(
            "key location waypoint {k} is out of range ({} waypoints)",
            rel.len()
        )));
    }
    let nodes = rel.nodes();
    let near2 = p.near * p.near;
    Ok((0..rel.len() as u32)
        .into_par_iter()
        .map(|w| {
            let pw = nodes[w as usize];
            let around = nodes
                .iter()
                .enumerate()
                .filter(|&(o, q)| o as u32 != w && q.distance_squared(pw) <= near2)
                .count();
            let list = rel.interactions(w);
            let shot = list
                .iter()
                .filter(|i| {
                    i.code & super::FIRE != 0
                        && nodes[i.other as usize].distance_squared(pw) <= near2
                })
                .count();
            let keys_seen = keys.iter().filter(|&&k| rel.sight(w, k)).count();
            let horizon = rel.within_horizon(w);
            let seen = horizon
                .iter()
                .filter(|&&(v, _)| v != w && rel.sight(w, v))
                .count();
            let mut counts = [0u32; SECTORS];
            for i in list {
                counts[i.sector.index()] += 1;
            }
            let best = Direction::all()
                .map(|d| focus(&counts, d))
                .fold(0.0f32, f32::max);
            let r = SentryRow {
                field_of_fire: shot as f32 / around.max(1) as f32,
                keys: keys_seen as f32 / keys.len().max(1) as f32,
                approach: seen as f32 / (horizon.len().saturating_sub(1)).max(1) as f32,
                flank: best / (1.0 + best),
                score: 0.0,
            };
            SentryRow {
                score: r.field_of_fire + r.keys + r.approach + r.flank,
                ..r
            }
        })
        .collect())
}
