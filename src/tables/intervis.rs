//! The intervis payload: an [`IntervisRecord`] per ordered (observer, target) waypoint pair
//! within range, leaving out pairs where nothing of the target is exposed.

use crate::intervis::IntervisRecord;
use crate::{Error, Result};
use glam::Vec3;

/// Measures a batch of ordered `(observer, target)` waypoint pairs (indices into the
/// waypoints, which come first), one record per pair in order. [`intervis_measure`] is the
/// real one; tests fill records deterministically.
pub type MeasureFn<'a> = dyn FnMut(&[Vec3], &[(u32, u32)]) -> Result<Vec<IntervisRecord>> + 'a;

/// The stencil-pass measurement ([`crate::intervis::measure::measure`]) for tables: the
/// observer's eye `eye_height` above waypoint `i`, a target in `posture` at waypoint `j`.
pub fn intervis_measure<'a>(
    engine: &'a crate::Engine,
    scene: &'a crate::Scene,
    eye_height: f32,
    posture: crate::agent::Posture,
    params: &'a crate::intervis::measure::IntervisParams,
) -> impl FnMut(&[Vec3], &[(u32, u32)]) -> Result<Vec<IntervisRecord>> + 'a {
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

/// Pairs handed to one measure call.
pub const MEASURE_BATCH: usize = 1 << 16;

/// Intervis records of ordered waypoint pairs, sorted by `(observer, target)`. Pairs out of
/// range, and fully occluded pairs (`exposed == 0`), are not stored: Darken, McCue and Guerrero (Table 3) notes
/// that dropping them shrinks the table by about 75 %.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IntervisTable {
    entries: Vec<(u32, u32, IntervisRecord)>,
}

impl IntervisTable {
    /// A table from entries sorted by `(observer, target)` without repeats, each with
    /// `exposed > 0` and `observer != target`.
    pub fn from_entries(
        entries: Vec<(u32, u32, IntervisRecord)>,
    ) -> std::result::Result<IntervisTable, String> {
        if let Some(k) = entries
            .windows(2)
            .position(|w| (w[0].0, w[0].1) >= (w[1].0, w[1].1))
        {
            return Err(format!(
                "intervis entries {k} and {} are out of order",
                k + 1
            ));
        }
        if let Some(e) = entries.iter().find(|e| e.2.exposed == 0 || e.0 == e.1) {
            return Err(format!(
                "intervis entry ({}, {}) is a self pair or has nothing exposed",
                e.0, e.1
            ));
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
/// (`shard = (K, N)`) and the waypoints at most `range` apart, in batches of
/// [`MEASURE_BATCH`] pairs, and keeps the records with `exposed > 0`.
/// `progress(done, total)` counts observer rows.
pub fn compute_intervis(
    waypoints: &[Vec3],
    range: Option<f32>,
    shard: (u32, u32),
    measure: &mut MeasureFn<'_>,
    mut progress: impl FnMut(u64, u64),
) -> Result<IntervisTable> {
    super::check_shard(shard)?;
    let n = u32::try_from(waypoints.len())
        .ok()
        .filter(|&n| u64::from(n) <= crate::limits::MAX_WAYPOINTS)
        .ok_or_else(|| {
            Error::too_large(
                "waypoint count",
                waypoints.len() as u64,
                crate::limits::MAX_WAYPOINTS,
                "use a larger --spacing, or split the level",
            )
        })?;
    let r2 = range.map_or(f32::INFINITY, |r| r * r);
    let rows: Vec<u32> = (shard.0..n).step_by(shard.1 as usize).collect();
    let mut entries = Vec::new();
    let mut pairs = Vec::with_capacity(MEASURE_BATCH);
    let mut run = |pairs: &mut Vec<(u32, u32)>, entries: &mut Vec<_>| -> Result<()> {
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
        entries.extend(
            pairs
                .iter()
                .zip(records)
                .filter(|(_, r)| r.exposed > 0)
                .map(|(&(i, j), r)| (i, j, r)),
        );
        pairs.clear();
        Ok(())
    };
    for (done, &i) in rows.iter().enumerate() {
        let a = waypoints[i as usize];
        for j in (0..n).filter(|&j| j != i) {
            if a.distance_squared(waypoints[j as usize]) <= r2 {
                pairs.push((i, j));
                if pairs.len() == MEASURE_BATCH {
                    run(&mut pairs, &mut entries)?;
                }
            }
        }
        progress(done as u64 + 1, rows.len() as u64);
    }
    run(&mut pairs, &mut entries)?;
    Ok(IntervisTable { entries })
}
