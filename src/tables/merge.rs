//! Joining the `N` shard tables of one run into the table a single run writes: [`merge`] in
//! memory, [`merge_files`] streaming from mapped shard files to the output file.

use super::bits::{or_bits, read_bits, read_bits_le};
use super::layout::{self, LOSB, NAVG, WAYP};
use super::{check_shard, IntervisTable, LosTable, MappedTable, TableFile, TableWriter};
use crate::{Error, Result};
use std::path::Path;

/// Joins the `N` shard tables of one run (any order) into the complete table: its bytes equal
/// a single unsharded run's. Fails when shards are missing or repeated, or disagree on
/// waypoints or parameters. A complete table is returned as is.
pub fn merge(shards: &[TableFile]) -> Result<TableFile> {
    let first = shards
        .first()
        .ok_or_else(|| Error::InvalidInput("merge needs at least one shard".into()))?;
    let count = first.los.shard().1;
    check_shard(first.los.shard())?;
    if count == 1 && shards.len() == 1 {
        return Ok(first.clone());
    }
    let mut by_k: Vec<Option<&TableFile>> = vec![None; count as usize];
    for (idx, s) in shards.iter().enumerate() {
        let (k, m) = s.los.shard();
        if m != count {
            return Err(Error::InvalidInput(format!(
                "shard {idx} is {k}/{m} but shard 0 is one of {count}: merge shards of one run"
            )));
        }
        if s.meta != first.meta || s.waypoints != first.waypoints || s.edges != first.edges {
            return Err(Error::InvalidInput(format!(
                "shard {idx} ({k}/{m}) has other parameters, waypoints or nav graph than shard 0 \
                 (scene, spacing, eye height, range, posture, or a different backend's \
                 sampling); recompute it"
            )));
        }
        if s.intervis.is_some() != first.intervis.is_some() {
            return Err(Error::InvalidInput(format!(
                "shard {idx} ({k}/{m}) and shard 0 disagree on whether intervis was computed"
            )));
        }
        if by_k[k as usize].replace(s).is_some() {
            return Err(Error::InvalidInput(format!("shard {k}/{m} is given twice")));
        }
    }
    if let Some(k) = by_k.iter().position(Option::is_none) {
        return Err(Error::InvalidInput(format!(
            "shard {k}/{count} is missing: merge needs all {count} shards"
        )));
    }
    let parts: Vec<&TableFile> = by_k.into_iter().flatten().collect();
    let n = first.los.n();
    let mut los = LosTable::empty(n, (0, 1))?;
    let mut bits = std::mem::take(los.bits_mut());
    for i in 0..n {
        let src = &parts[(i % count) as usize].los;
        let ((from, len), (to, _)) = (src.row_bits(i), los.row_bits(i));
        let mut d = 0;
        while d < len {
            let take = (len - d).min(64) as u32;
            let v = read_bits(src.bits(), from + d, take);
            or_bits(&mut bits, to + d, take, v);
            d += u64::from(take);
        }
    }
    *los.bits_mut() = bits;
    los.build_sees()?;
    let intervis = first.intervis.as_ref().map(|_| {
        IntervisTable::merge(
            &parts
                .iter()
                .filter_map(|p| p.intervis.as_ref())
                .collect::<Vec<_>>(),
        )
    });
    Ok(TableFile {
        meta: first.meta.clone(),
        waypoints: first.waypoints.clone(),
        los,
        intervis,
        edges: first.edges.clone(),
    })
}

/// [`merge`] for files: maps the shard files (any order), checks them as [`merge`] does, and
/// writes the complete table to `out` with the streaming writer. Memory: the complete table's
/// line-of-sight bits (`n (n - 1) / 16` bytes, checked against available memory first) plus
/// `24 (n + 1)` bytes of offsets; the shards stay on disk, the sees lists and intervis records
/// go straight to the output.
pub fn merge_files(inputs: &[impl AsRef<Path>], out: impl AsRef<Path>) -> Result<()> {
    let shards = inputs
        .iter()
        .map(MappedTable::open)
        .collect::<Result<Vec<_>>>()?;
    let parts = in_shard_order(&shards)?;
    let first = &shards[0];
    let los = merged_los(&parts)?;
    let n = first.n();
    let waypoints: Vec<_> = (0..n).map(|i| first.waypoint(i)).collect();
    let edges = first.edges();
    let mut w = TableWriter::create(
        out.as_ref(),
        first.meta(),
        &waypoints,
        (0, 1),
        first.has_intervis(),
        edges.is_some(),
    )?;
    w.write_los(&los)?;
    drop(los);
    if first.has_intervis() {
        copy_intervis(&mut w, &parts, n)?;
    }
    if let Some(e) = &edges {
        w.write_edges(e)?;
    }
    w.finish_file()
}

/// The shards by their index `k`, after checking that they are all the shards of one run:
/// the same count, parameters, waypoints, nav graph and intervis, none twice, none missing.
fn in_shard_order(shards: &[MappedTable]) -> Result<Vec<&MappedTable>> {
    let first = shards
        .first()
        .ok_or_else(|| Error::InvalidInput("merge needs at least one shard".into()))?;
    let count = first.shard().1;
    let mut by_k: Vec<Option<&MappedTable>> = vec![None; count as usize];
    for s in shards {
        let (k, m) = s.shard();
        let name = s.path();
        if m != count {
            return Err(Error::InvalidInput(format!(
                "{name} is shard {k}/{m} but {} is one of {count}: merge shards of one run",
                first.path()
            )));
        }
        let same = s.meta() == first.meta()
            && s.raw(WAYP) == first.raw(WAYP)
            && s.raw(NAVG) == first.raw(NAVG)
            && s.has_intervis() == first.has_intervis();
        if !same {
            return Err(Error::InvalidInput(format!(
                "{name} ({k}/{m}) has other parameters, waypoints, nav graph or intervis than \
                 {} (scene, spacing, eye height, range, posture, or a different backend's \
                 sampling); recompute it",
                first.path()
            )));
        }
        if by_k[k as usize].replace(s).is_some() {
            return Err(Error::InvalidInput(format!(
                "shard {k}/{m} is given twice ({name})"
            )));
        }
    }
    if let Some(k) = by_k.iter().position(Option::is_none) {
        return Err(Error::InvalidInput(format!(
            "shard {k}/{count} is missing: merge needs all {count} shards"
        )));
    }
    Ok(by_k.into_iter().flatten().collect())
}

/// The complete line-of-sight table: row `i` copied, 64 bits at a time, from shard
/// `i % count` (`parts` in shard order).
fn merged_los(parts: &[&MappedTable]) -> Result<LosTable> {
    let first = parts[0];
    let count = first.shard().1;
    let n = first.n();
    let mut los = LosTable::empty(n, (0, 1))?;
    let mut bits = std::mem::take(los.bits_mut());
    for i in 0..n {
        let src = parts[(i % count) as usize];
        let from = layout::row_start(n, src.shard(), i);
        let ((to, len), raw) = (los.row_bits(i), src.raw(LOSB));
        let mut d = 0;
        while d < len {
            let take = (len - d).min(64) as u32;
            or_bits(&mut bits, to + d, take, read_bits_le(raw, from + d, take));
            d += u64::from(take);
        }
    }
    *los.bits_mut() = bits;
    Ok(los)
}

/// The shards' intervis records into `w` in observer order: observer `i`'s from shard
/// `i % count`.
fn copy_intervis<W: std::io::Write + std::io::Seek>(
    w: &mut TableWriter<W>,
    parts: &[&MappedTable],
    n: u32,
) -> Result<()> {
    let count = parts.len() as u32;
    let mut next = vec![0usize; parts.len()];
    for i in 0..n {
        let p = (i % count) as usize;
        while next[p] < parts[p].intervis_len() {
            let (o, t, r) = parts[p].intervis_entry(next[p]);
            if o != i {
                break;
            }
            w.push_intervis(o, t, &r)?;
            next[p] += 1;
        }
    }
    Ok(())
}
