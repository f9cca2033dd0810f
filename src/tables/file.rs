//! The `.slt` table file: a versioned little-endian binary with a checksum at the end.
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 | magic `b"SLTABLE\0"` |
//! | 8 | 4 | format version (`u32`, [`FORMAT_VERSION`]) |
//! | 12 | 4 | flags: bit 0 intervis computed, bit 1 waypoints sampled at `spacing`, bit 2 nav graph edges stored, bits 3-4 the intervis target's posture (0 standing, 1 crouching, 2 prone) |
//! | 16 | 8 | file length in bytes, checksum included (`u64`) |
//! | 24 | 8 | waypoint count `n` (`u64`) |
//! | 32 | 8 | waypoint digest (FNV-1a 64 of the positions' `f32` bits) |
//! | 40 | 4 | eye height (`f32`, m) |
//! | 44 | 4 | range (`f32`, m; `+inf` for unlimited) |
//! | 48 | 4 | spacing (`f32`, m; 0 when waypoints came from a file) |
//! | 52 | 4 | max slope (`f32`, radians) |
//! | 56 | 4 | sight mask bits (`u32`) |
//! | 60 | 4 | shard `K` (`u32`) |
//! | 64 | 4 | shard `N` (`u32`; 1 for a complete table) |
//! | 68 | 4 | scene name length `L` (`u32`) |
//! | 72 | L | scene name (UTF-8), zero-padded to a multiple of 8 |
//!
//! Then five sections in this order, each a 16-byte head (tag, 4 reserved zero bytes, payload
//! length in bytes as `u64`) and the payload, zero-padded to a multiple of 8:
//! `WAYP` (`n` x `[f32; 3]`), `LOSB` (the [`LosTable`] bits as `u64` words), `SEES` (`n + 1`
//! `u64` offsets then the `u32` neighbours; empty in shard files), `IVIS` (per entry: observer
//! `u32`, target `u32`, the 48-byte [`IntervisRecord`] as 12 little-endian words; 56 bytes),
//! `NAVG` (the nav graph's [`Edge`]s, sorted by `(a, b)`: `a`, `b`, kinds as `u32`, length as
//! `f32`; 16 bytes each; empty when flag bit 2 is clear). Last, 8 bytes: FNV-1a 64 of every
//! byte before it.
//!
//! Version 1 files (no `NAVG` section, flag bits 2-4 zero: standing targets) are still read.
//!
//! Everything is 8-byte aligned so a later reader may map the file and view sections in
//! place. Today's reader is one `std::fs::read` and a copy per section: a 3k-waypoint table
//! loads in milliseconds, a 100k one at disk speed.

use super::edges::{check_edges, Edge};
use super::{IntervisTable, LosTable, TableFile, TableMeta};
use crate::agent::Posture;
use crate::intervis::IntervisRecord;
use crate::scene::{Mask, MaterialFlags};
use crate::{Error, Result};
use glam::Vec3;
use std::path::Path;

/// The file's magic bytes.
pub const MAGIC: [u8; 8] = *b"SLTABLE\0";
/// The format version this build writes (it also reads version 1).
pub const FORMAT_VERSION: u32 = 2;
const FIXED_HEADER: usize = 72;
pub(crate) const ENTRY_BYTES: usize = 56;

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

fn checksum(bytes: &[u8]) -> u64 {
    let mut h = Fnv1a::new();
    h.write(bytes);
    h.finish()
}

fn pad8(out: &mut Vec<u8>) {
    out.resize(out.len().next_multiple_of(8), 0);
}

fn section(out: &mut Vec<u8>, tag: &[u8; 4], fill: impl FnOnce(&mut Vec<u8>)) {
    out.extend_from_slice(tag);
    out.extend_from_slice(&[0; 4]);
    let at = out.len();
    out.extend_from_slice(&[0; 8]);
    fill(out);
    let len = (out.len() - at - 8) as u64;
    out[at..at + 8].copy_from_slice(&len.to_le_bytes());
    pad8(out);
}

impl TableFile {
    /// The file's bytes; identical inputs give identical bytes.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let m = &self.meta;
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        let posture = match m.posture {
            Posture::Standing => 0u32,
            Posture::Crouching => 1,
            Posture::Prone => 2,
        };
        let flags = u32::from(self.intervis.is_some())
            | u32::from(m.spacing.is_some()) << 1
            | u32::from(self.edges.is_some()) << 2
            | posture << 3;
        for w in [FORMAT_VERSION, flags] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        let digest = super::waypoint_digest(&self.waypoints);
        for w in [0, self.waypoints.len() as u64, digest] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        let range = m.range.unwrap_or(f32::INFINITY);
        for f in [m.eye_height, range, m.spacing.unwrap_or(0.0), m.max_slope] {
            out.extend_from_slice(&f.to_le_bytes());
        }
        let (k, n) = self.los.shard();
        for w in [m.mask.bits(), k, n, m.scene.len() as u32] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        debug_assert_eq!(out.len(), FIXED_HEADER);
        out.extend_from_slice(m.scene.as_bytes());
        pad8(&mut out);
        section(&mut out, b"WAYP", |o| {
            for c in self.waypoints.iter().flat_map(|p| p.to_array()) {
                o.extend_from_slice(&c.to_le_bytes());
            }
        });
        section(&mut out, b"LOSB", |o| {
            for w in self.los.bits() {
                o.extend_from_slice(&w.to_le_bytes());
            }
        });
        section(&mut out, b"SEES", |o| {
            let (offsets, sees) = self.los.sees_flat();
            for w in offsets {
                o.extend_from_slice(&w.to_le_bytes());
            }
            for w in sees {
                o.extend_from_slice(&w.to_le_bytes());
            }
        });
        section(&mut out, b"IVIS", |o| {
            for (i, j, r) in self.intervis.iter().flat_map(|t| t.entries()) {
                let words: [u32; 12] = bytemuck::cast(*r);
                for w in [*i, *j].iter().chain(&words) {
                    o.extend_from_slice(&w.to_le_bytes());
                }
            }
        });
        section(&mut out, b"NAVG", |o| {
            for e in self.edges.iter().flatten() {
                for w in [e.a, e.b, e.kinds.0, e.length.to_bits()] {
                    o.extend_from_slice(&w.to_le_bytes());
                }
            }
        });
        let total = (out.len() + 8) as u64;
        out[16..24].copy_from_slice(&total.to_le_bytes());
        let sum = checksum(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Writes the file (to `path` plus `.tmp`, then renamed, so a crash never leaves a
    /// half-written table under the real name).
    pub fn write_to(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let fail = |e: std::io::Error| {
            Error::InvalidInput(format!(
                "{}: cannot write the table ({e}); check that the directory exists and is \
                 writable and that the disk has room",
                path.display()
            ))
        };
        std::fs::write(&tmp, self.to_bytes()).map_err(fail)?;
        std::fs::rename(&tmp, path).map_err(fail)
    }

    /// Reads a file written by [`TableFile::write_to`]: one `std::fs::read`, then checks
    /// (magic, version, length, checksum, structure, waypoint digest). Every failure is an
    /// [`Error::Load`] naming the file and saying whether to recompute or re-download.
    pub fn read_from(path: impl AsRef<Path>) -> Result<TableFile> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| {
            Error::load(
                path.display().to_string(),
                format!("cannot read the table: {e}"),
            )
        })?;
        TableFile::from_bytes(&bytes, &path.display().to_string())
    }

    /// Parses the bytes of a table file; `name` is the file name errors report.
    pub fn from_bytes(bytes: &[u8], name: &str) -> Result<TableFile> {
        parse(bytes).map_err(|message| Error::load(name.to_string(), message))
    }
}

const REDO: &str = "re-download it or recompute it with `sightline precompute`";

/// A bounds-checked little-endian reader; every error is a message for the user.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, len: usize) -> std::result::Result<&'a [u8], String> {
        let end = self.pos.checked_add(len).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| {
            format!(
                "malformed table: field at byte {} runs past the end; {REDO}",
                self.pos
            )
        })?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn f32(&mut self) -> std::result::Result<f32, String> {
        Ok(f32::from_bits(self.u32()?))
    }
    fn align8(&mut self) {
        self.pos = self.pos.next_multiple_of(8);
    }
    /// A section's payload, after checking its tag.
    fn section(&mut self, tag: &[u8; 4]) -> std::result::Result<Cursor<'a>, String> {
        let at = self.pos;
        if self.take(4)? != tag {
            let t = String::from_utf8_lossy(tag);
            return Err(format!(
                "malformed table: expected section {t} at byte {at}; {REDO}"
            ));
        }
        self.take(4)?;
        let len = usize::try_from(self.u64()?).map_err(|_| "malformed table: huge section")?;
        let body = self.take(len)?;
        self.align8();
        Ok(Cursor {
            bytes: body,
            pos: 0,
        })
    }
    fn u32s(&mut self, count: usize) -> std::result::Result<Vec<u32>, String> {
        let b = self.take(count.checked_mul(4).ok_or("malformed table: huge count")?)?;
        Ok(b.chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect())
    }
    fn u64s(&mut self, count: usize) -> std::result::Result<Vec<u64>, String> {
        let b = self.take(count.checked_mul(8).ok_or("malformed table: huge count")?)?;
        Ok(b.chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect())
    }
    fn rest(&self) -> usize {
        self.bytes.len() - self.pos
    }
}

fn parse(bytes: &[u8]) -> std::result::Result<TableFile, String> {
    let head = &bytes[..bytes.len().min(8)];
    if head != &MAGIC[..head.len()] || bytes.is_empty() {
        return Err(
            "not a sightline table (bad magic bytes); pass a `.slt` file written by \
                    `sightline precompute`"
                .into(),
        );
    }
    if bytes.len() < FIXED_HEADER + 8 {
        return Err(format!("truncated: only {} bytes; {REDO}", bytes.len()));
    }
    let mut c = Cursor { bytes, pos: 8 };
    let version = c.u32()?;
    if !(1..=FORMAT_VERSION).contains(&version) {
        return Err(format!(
            "table format version {version}, but this sightline reads versions 1 to \
             {FORMAT_VERSION}; recompute the table with this version (`sightline precompute`)"
        ));
    }
    let flags = c.u32()?;
    if flags >> 5 != 0 || (version == 1 && flags >> 2 != 0) || (flags >> 3) & 3 == 3 {
        return Err(format!(
            "malformed table: unknown flag bits {flags:#x}; {REDO}"
        ));
    }
    let posture = match (flags >> 3) & 3 {
        0 => Posture::Standing,
        1 => Posture::Crouching,
        _ => Posture::Prone,
    };
    let stated = c.u64()?;
    if stated != bytes.len() as u64 {
        return Err(format!(
            "the file is {} bytes but its header says {stated}: truncated or cut short \
             (incomplete download or copy); {REDO}",
            bytes.len()
        ));
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    if checksum(body) != u64::from_le_bytes(sum.try_into().unwrap()) {
        return Err(format!("checksum mismatch: the file is corrupted; {REDO}"));
    }
    let n = u32::try_from(c.u64()?).map_err(|_| "malformed table: waypoint count")?;
    let digest = c.u64()?;
    let (eye_height, range, spacing, max_slope) = (c.f32()?, c.f32()?, c.f32()?, c.f32()?);
    let (mask, k, shards, name_len) = (c.u32()?, c.u32()?, c.u32()?, c.u32()?);
    super::check_shard((k, shards)).map_err(|e| format!("malformed table: {e}"))?;
    let scene = String::from_utf8(c.take(name_len as usize)?.to_vec())
        .map_err(|_| "malformed table: scene name is not UTF-8")?;
    c.align8();
    let mut w = c.section(b"WAYP")?;
    let coords = w.u32s(3 * n as usize)?;
    let waypoints: Vec<Vec3> = coords
        .chunks_exact(3)
        .map(|v| {
            Vec3::new(
                f32::from_bits(v[0]),
                f32::from_bits(v[1]),
                f32::from_bits(v[2]),
            )
        })
        .collect();
    if super::waypoint_digest(&waypoints) != digest {
        return Err(format!("malformed table: waypoint digest mismatch; {REDO}"));
    }
    let mut l = c.section(b"LOSB")?;
    let bits = l.u64s(l.rest() / 8)?;
    let mut s = c.section(b"SEES")?;
    let (offsets, sees) = if s.rest() == 0 {
        (Vec::new(), Vec::new())
    } else {
        let offsets = s.u64s(n as usize + 1)?;
        (offsets, s.u32s(s.rest() / 4)?)
    };
    let los = LosTable::from_parts(n, (k, shards), bits, offsets, sees)
        .map_err(|e| format!("malformed table: {e}; {REDO}"))?;
    let mut v = c.section(b"IVIS")?;
    if v.rest() % ENTRY_BYTES != 0 || (flags & 1 == 0 && v.rest() != 0) {
        return Err(format!("malformed table: intervis section length; {REDO}"));
    }
    let mut entries = Vec::with_capacity(v.rest() / ENTRY_BYTES);
    while v.rest() > 0 {
        let w = v.u32s(14)?;
        let rec: IntervisRecord = bytemuck::cast::<[u32; 12], _>(w[2..].try_into().unwrap());
        if w[0] >= n || w[1] >= n {
            return Err(format!(
                "malformed table: intervis waypoint out of range; {REDO}"
            ));
        }
        entries.push((w[0], w[1], rec));
    }
    let intervis = (flags & 1 == 1)
        .then(|| IntervisTable::from_entries(entries))
        .transpose()
        .map_err(|e| format!("malformed table: {e}; {REDO}"))?;
    let edges = if version >= 2 {
        let mut g = c.section(b"NAVG")?;
        if g.rest() % 16 != 0 || (flags & 4 == 0 && g.rest() != 0) {
            return Err(format!("malformed table: nav graph section length; {REDO}"));
        }
        let words = g.u32s(g.rest() / 4)?;
        let edges: Vec<Edge> = words
            .chunks_exact(4)
            .map(|w| bytemuck::cast::<[u32; 4], Edge>(w.try_into().unwrap()))
            .collect();
        check_edges(&edges, n as usize).map_err(|e| format!("malformed table: {e}; {REDO}"))?;
        (flags & 4 == 4).then_some(edges)
    } else {
        None
    };
    if c.pos != bytes.len() - 8 {
        return Err(format!(
            "malformed table: unexpected bytes after the sections; {REDO}"
        ));
    }
    let meta = TableMeta {
        scene,
        eye_height,
        range: range.is_finite().then_some(range),
        spacing: (flags & 2 == 2).then_some(spacing),
        max_slope,
        mask: Mask(MaterialFlags::from_bits(mask)),
        posture,
    };
    Ok(TableFile {
        meta,
        waypoints,
        los,
        intervis,
        edges,
    })
}
