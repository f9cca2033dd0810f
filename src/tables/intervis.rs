//! The intervis payload: an [`IntervisRecord`] per ordered (observer, target) waypoint pair
//! within range, leaving out pairs where nothing of the target is exposed.

use crate::intervis::IntervisRecord;
use crate::{Error, Result};
use glam::Vec3;

/// Measures a batch of ordered `(observer, target)` waypoint pairs (indices into the
/// waypoints, which come first), one record per pair in order. [`intervis_measure`] is the
/// real one; tests fill records deterministically.
pub type MeasureFn<'a> = dyn FnMut(&[Vec3], &[(u32, u32)]) -> Result<Vec<IntervisRecord>> + 'a;

/// A [`MeasureFn`] by value: what [`intervis_measure`] returns (any such closure is one).
pub trait IntervisFn: FnMut(&[Vec3], &[(u32, u32)]) -> Result<Vec<IntervisRecord>> {}
impl<F: FnMut(&[Vec3], &[(u32, u32)]) -> Result<Vec<IntervisRecord>>> IntervisFn for F {}

/// The stencil-pass measurement ([`crate::intervis::measure::measure`]) for tables: the
/// observer's eye `eye_height` above waypoint `i`, a target in `posture` at waypoint `j`.
pub fn intervis_measure<'a>(
    engine: &'a crate::Engine,
    scene: &'a crate::Scene,
    eye_height: f32,
    posture: crate::agent::Posture,
    params: &'a crate::intervis::measure::IntervisParams,
) -> impl IntervisFn + 'a {
    move |waypoints, pairs| {
        let pairs: Vec<_> = pairs
            .iter()
            .map(|&(i, j)| crate::intervis::measure::IntervisPair {
                observer: waypoints[i as usize] + Vec3::Y * eye_height,
                target: waypoints[j as usize],
                posture,
            })
            .collect();
        crate::intervis::measure::measure(engine, scene, &pairs, params)
    }
}

/// Most pairs handed to one measure call.
pub const MEASURE_BATCH: usize = 1 << 16;

/// Intervis records of ordered waypoint pairs, sorted by `(observer, target)`. Pairs out of
/// range, and fully occluded pairs (`exposed == 0`), are not stored: Darken, McCue and Guerrero (Table 3) notes
/// that dropping them shrinks the table by about 75 %. Records are held as the file stores
/// them ([`quantise`](super::quantise)), so a table written and read back is equal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IntervisTable {
    entries: Vec<(u32, u32, IntervisRecord)>,
}

impl IntervisTable {
    /// A table from entries sorted by `(observer, target)` without repeats, each with
    /// `observer != target` and a record the file can hold (something exposed, counts within
    /// the box, finite non-negative measures); records are quantised as the file stores them.
    pub fn from_entries(mut entries: Vec<(u32, u32, IntervisRecord)>) -> Result<IntervisTable> {
        if let Some(k) = entries
            .windows(2)
            .position(|w| (w[0].0, w[0].1) >= (w[1].0, w[1].1))
        {
            return Err(Error::InvalidInput(format!(
                "intervis entries {k} and {} are out of order or repeated",
                k + 1
            )));
        }
        for e in &mut entries {
            let why = if e.0 == e.1 {
                Err("is a self pair".to_string())
            } else {
                super::packed::check_record(&e.2)
            };
            why.map_err(|m| Error::InvalidInput(format!("intervis entry ({}, {}) {m}", e.0, e.1)))?;
            e.2 = super::quantise(&e.2);
        }
        Ok(IntervisTable { entries })
    }

    /// The record of `observer` looking at `target`; `None` when nothing of the target is
    /// exposed, the pair is out of range, or the table does not hold that observer's row.
    #[must_use]
    pub fn get(&self, observer: u32, target: u32) -> Option<&IntervisRecord> {
        self.entries
            .binary_search_by_key(&(observer, target), |e| (e.0, e.1))
            .ok()
            .map(|k| &self.entries[k].2)
    }

    /// Every stored record of `observer`, by target.
    #[must_use]
    pub fn row(&self, observer: u32) -> &[(u32, u32, IntervisRecord)] {
        let a = self.entries.partition_point(|e| e.0 < observer);
        let b = self.entries.partition_point(|e| e.0 <= observer);
        &self.entries[a..b]
    }

    /// All entries, sorted by `(observer, target)`.
    #[must_use]
    pub fn entries(&self) -> &[(u32, u32, IntervisRecord)] {
        &self.entries
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Joins shard tables (disjoint observer rows) into one sorted table.
    pub(crate) fn merge(parts: &[&IntervisTable]) -> IntervisTable {
        let mut entries: Vec<_> = parts
            .iter()
            .flat_map(|t| t.entries.iter().copied())
            .collect();
        entries.sort_unstable_by_key(|e| (e.0, e.1));
        IntervisTable { entries }
    }
}

/// Measures every ordered pair `(i, j)`, `i != j`, with observer row `i % N == K`
/// (`shard = (K, N)`) and the waypoints at most `range` apart, `batch` pairs per measure call
/// (at most [`MEASURE_BATCH`]; [`crate::intervis::measure::pairs_per_call`] sizes it to the
/// engine), and keeps the records with `exposed > 0`, quantised as the file stores them.
/// `progress(done, total)` counts pairs.
pub fn compute_intervis(
    waypoints: &[Vec3],
    range: Option<f32>,
    shard: (u32, u32),
    batch: usize,
    measure: &mut MeasureFn<'_>,
    progress: impl FnMut(u64, u64),
) -> Result<IntervisTable> {
    let mut entries = Vec::new();
    measure_rows(
        waypoints,
        range,
        (shard, batch),
        measure,
        progress,
        |i, j, r| {
            entries.push((i, j, super::quantise(&r)));
            Ok(())
        },
    )?;
    Ok(IntervisTable { entries })
}

/// [`compute_intervis`] handing each kept record to `sink` in `(observer, target)` order
/// instead of keeping it (the streaming writer stores them as they come).
pub(crate) fn measure_rows(
    waypoints: &[Vec3],
    range: Option<f32>,
    (shard, batch): ((u32, u32), usize),
    measure: &mut MeasureFn<'_>,
    mut progress: impl FnMut(u64, u64),
    mut sink: impl FnMut(u32, u32, IntervisRecord) -> Result<()>,
) -> Result<()> {
    super::check_shard(shard)?;
    let n = super::waypoint_count(waypoints.len())?;
    let r2 = range.map_or(f32::INFINITY, |r| r * r);
    let rows = (shard.0..n).step_by(shard.1 as usize);
    let in_range = |i: u32| {
        let a = waypoints[i as usize];
        (0..n).filter(move |&j| j != i && a.distance_squared(waypoints[j as usize]) <= r2)
    };
    let total: u64 = rows.clone().map(|i| in_range(i).count() as u64).sum();
    let batch = batch.clamp(1, MEASURE_BATCH);
    progress(0, total);
    let mut done = 0u64;
    let mut pairs = Vec::with_capacity(batch);
    let mut run = |pairs: &mut Vec<(u32, u32)>| -> Result<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        let records = measure(waypoints, pairs)?;
        if records.len() != pairs.len() {
            return Err(Error::InvalidInput(format!(
                "the intervis measurement returned {} records for {} pairs",
                records.len(),
                pairs.len()
            )));
        }
        for (&(i, j), r) in pairs.iter().zip(records) {
            if r.exposed == 0 {
                continue;
            }
            super::packed::check_record(&r).map_err(|m| {
                Error::InvalidInput(format!("the intervis measurement of pair ({i}, {j}) {m}"))
            })?;
            sink(i, j, r)?;
        }
        done += pairs.len() as u64;
        progress(done, total);
        pairs.clear();
        Ok(())
    };
    for i in rows {
        for j in in_range(i) {
            pairs.push((i, j));
            if pairs.len() == batch {
                run(&mut pairs)?;
            }
        }
    }
    run(&mut pairs)
}
