//! The `.slt` table file: a versioned little-endian binary with a checksum at the end.
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 | magic `b"SLTABLE\0"` |
//! | 8 | 4 | format version (`u32`, [`FORMAT_VERSION`]) |
//! | 12 | 4 | flags: bit 0 intervis computed, bit 1 waypoints sampled at `spacing`, bit 2 nav graph edges stored, bits 3-4 the intervis target's posture (0 standing, 1 crouching, 2 prone), bit 5 scene digest recorded; other bits are refused |
//! | 16 | 8 | file length in bytes, checksum included (`u64`) |
//! | 24 | 8 | waypoint count `n` (`u64`, at most [`MAX_WAYPOINTS`](crate::limits::MAX_WAYPOINTS)) |
//! | 32 | 8 | waypoint digest (FNV-1a 64 of the positions' `f32` bits) |
//! | 40 | 4 | eye height (`f32`, m, finite, >= 0) |
//! | 44 | 4 | range (`f32`, m, finite and >= 0, or `+inf` for unlimited) |
//! | 48 | 4 | spacing (`f32`, m, > 0; 0 when waypoints came from a file) |
//! | 52 | 4 | max slope (`f32`, radians, 0 to pi/2) |
//! | 56 | 4 | sight mask bits (`u32`, bits 0-2) |
//! | 60 | 4 | shard `K` (`u32`, `K < N`) |
//! | 64 | 4 | shard `N` (`u32`; 1 for a complete table; at most [`MAX_SHARDS`](crate::limits::MAX_SHARDS)) |
//! | 68 | 4 | scene name length `L` (`u32`, at most [`MAX_SCENE_NAME`](crate::limits::MAX_SCENE_NAME)) |
//! | 72 | 8 | the scene's [`geometry_digest`](crate::Scene::geometry_digest) (0 with flag bit 5 clear) |
//! | 80 | L | scene name (UTF-8), zero-padded to a multiple of 8 |
//!
//! Then five sections in this order, each a 16-byte head (tag, 4 reserved zero bytes, payload
//! length in bytes as `u64`) and the payload, zero-padded to a multiple of 8:
//! `WAYP` (`n` x `[f32; 3]`), `LOSB` (the [`LosTable`] bits as `u64` words), `SEES` (`n + 1`
//! `u64` offsets then the `u32` neighbours; empty in shard files), `IVIS` (28-byte packed
//! entries, see [`packed`](super::packed); empty when flag bit 0 is clear), `NAVG` (the nav
//! graph's [`Edge`](super::Edge)s, sorted by `(a, b)`: `a`, `b`, kinds as `u32`, length as
//! `f32`, at least the straight distance between the two waypoints; 16 bytes each; empty when flag bit 2 is clear). Last, 8 bytes: FNV-1a 64 over every
//! section's padded payload in file order, then the header (offsets 0 to the end of the padded
//! name), then the five section heads, so a streaming writer hashes payloads as it writes them
//! and patches the lengths at the end.
//!
//! Older versions are still read: version 2 (72-byte fixed header without the scene digest,
//! 56-byte intervis entries of `f32`/`u32` words, checksum over every byte in order) and
//! version 1 (as 2 without the `NAVG` section; flag bits 2-4 zero). Their intervis records
//! are quantised to the version-3 packing as they are read, so a table read and written again
//! reads back equal.
//!
//! [`super::layout`] holds every check a file passes; [`TableFile::from_bytes`] copies
//! the sections out after them, [`MappedTable`](super::MappedTable) reads them in place, and
//! [`TableWriter`] writes section by section.

use super::layout::{self, Layout, IVIS, LOSB, NAVG, SEES, WAYP};
use super::writer::{write_error, TableWriter};
use super::{IntervisTable, LosTable, TableFile};
use crate::limits::vec_with_capacity;
use crate::{Error, Result};
use glam::Vec3;
use std::path::Path;

/// The file's magic bytes.
pub const MAGIC: [u8; 8] = *b"SLTABLE\0";
/// The format version this build writes (it also reads versions 1 and 2).
pub const FORMAT_VERSION: u32 = 3;

/// FNV-1a, 64 bits: the file checksum and the waypoint digest.
pub(crate) struct Fnv1a(u64);

impl Fnv1a {
    pub(crate) fn new() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

const FIX: &str = "free memory, or use the memory-mapped reader (`MappedTable`)";

impl TableFile {
    /// The file's bytes; identical inputs give identical bytes. Fails on a table the reader
    /// would refuse (non-finite parameters or waypoints, bad intervis records or edges).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut w = TableWriter::new(
            std::io::Cursor::new(Vec::new()),
            &self.meta,
            &self.waypoints,
            self.los.shard(),
            self.intervis.is_some(),
            self.edges.is_some(),
        )?;
        self.write_sections(&mut w)?;
        Ok(w.finish()?.into_inner())
    }

    fn write_sections<W: std::io::Write + std::io::Seek>(
        &self,
        w: &mut TableWriter<W>,
    ) -> Result<()> {
        w.write_los(&self.los)?;
        for (i, j, r) in self.intervis.iter().flat_map(|t| t.entries()) {
            w.push_intervis(*i, *j, r)?;
        }
        if let Some(e) = &self.edges {
            w.write_edges(e)?;
        }
        Ok(())
    }

    /// Writes the file section by section (to `path` plus `.tmp`, then renamed, so a crash
    /// never leaves a half-written table under the real name).
    pub fn write_to(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let mut w = TableWriter::create(
            path,
            &self.meta,
            &self.waypoints,
            self.los.shard(),
            self.intervis.is_some(),
            self.edges.is_some(),
        )?;
        self.write_sections(&mut w)
            .map_err(|e| write_error(path, e))?;
        w.finish_file()
    }

    /// Reads a file written by [`TableFile::write_to`]: one `std::fs::read`, then every check
    /// of the strict reader. Every failure is an [`Error::Load`] naming the file and saying
    /// what is wrong and whether to recompute or re-download.
    pub fn read_from(path: impl AsRef<Path>) -> Result<TableFile> {
        Ok(TableFile::read_versioned(path)?.0)
    }

    /// [`TableFile::read_from`], also returning the file's format version (1 to
    /// [`FORMAT_VERSION`]; older versions are converted as they are read, so the table alone
    /// does not tell).
    pub fn read_versioned(path: impl AsRef<Path>) -> Result<(TableFile, u32)> {
        let path = path.as_ref();
        let bytes = std::fs::read(path)
            .map_err(|e| Error::load(path.display(), format!("cannot read the table: {e}")))?;
        TableFile::from_bytes_versioned(&bytes, &path.display().to_string())
    }

    /// Parses the bytes of a table file; `name` is the file name errors report.
    pub fn from_bytes(bytes: &[u8], name: &str) -> Result<TableFile> {
        Ok(TableFile::from_bytes_versioned(bytes, name)?.0)
    }

    /// [`TableFile::from_bytes`], also returning the file's format version.
    pub fn from_bytes_versioned(bytes: &[u8], name: &str) -> Result<(TableFile, u32)> {
        let l = layout::validate(bytes).map_err(|m| Error::load(name, m))?;
        let table = decode(bytes, &l).map_err(|e| match e {
            Error::InvalidInput(m) => Error::load(name, m),
            e => e,
        })?;
        Ok((table, l.version))
    }
}

/// Copies the sections of a validated file out (allocations are bounded by the file's size
/// and checked against available memory).
fn decode(bytes: &[u8], l: &Layout) -> Result<TableFile> {
    let w = &bytes[l.body[WAYP].clone()];
    let mut waypoints = vec_with_capacity(l.n as usize, "table waypoints", FIX)?;
    waypoints.extend(w.chunks_exact(12).map(|c| {
        Vec3::from_array(std::array::from_fn(|k| {
            f32::from_bits(layout::u32_at(c, 4 * k))
        }))
    }));
    let b = &bytes[l.body[LOSB].clone()];
    let mut bits = vec_with_capacity(b.len() / 8, "table line-of-sight bits", FIX)?;
    bits.extend(b.chunks_exact(8).map(|c| layout::u64_at(c, 0)));
    let s = &bytes[l.body[SEES].clone()];
    let (mut offsets, mut sees) = (Vec::new(), Vec::new());
    if !s.is_empty() {
        let table = (l.n as usize + 1) * 8;
        offsets = vec_with_capacity(l.n as usize + 1, "table sees offsets", FIX)?;
        offsets.extend(s[..table].chunks_exact(8).map(|c| layout::u64_at(c, 0)));
        sees = vec_with_capacity((s.len() - table) / 4, "table sees lists", FIX)?;
        sees.extend(s[table..].chunks_exact(4).map(|c| layout::u32_at(c, 0)));
    }
    let los =
        LosTable::from_parts(l.n, l.shard, bits, offsets, sees).map_err(Error::InvalidInput)?;
    let intervis = if l.flags & layout::FLAG_INTERVIS != 0 {
        let count = l.body[IVIS].len() / l.entry_bytes;
        let mut entries = vec_with_capacity(count, "table intervis records", FIX)?;
        entries.extend((0..count).map(|e| {
            let (i, j, r) = layout::intervis_entry(bytes, l, e);
            (i, j, super::quantise(&r))
        }));
        Some(IntervisTable::from_entries(entries)?)
    } else {
        None
    };
    let edges =
        (l.flags & layout::FLAG_EDGES != 0).then(|| layout::edges_of(&bytes[l.body[NAVG].clone()]));
    Ok(TableFile {
        meta: l.meta.clone(),
        waypoints,
        los,
        intervis,
        edges,
    })
}
