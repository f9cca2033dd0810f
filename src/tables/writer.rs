//! The streaming table writer: sections are written as they are produced, the checksum is
//! computed as bytes go out, and the header's length and the section lengths are patched at
//! the end. Memory: the header, a copy of the waypoints (to check visible pairs against the
//! range and edges against their ends), one sees row block (64 rows of up to `n` neighbours)
//! and the `n + 1` sees offsets; never the file's image.

use super::edges::Edge;
use super::file::{Fnv1a, FORMAT_VERSION, MAGIC};
use super::layout::{self, FLAG_EDGES, FLAG_INTERVIS, FLAG_SCENE, FLAG_SPACING, IVIS, NAVG, SEES};
use super::los::{beyond_range, for_each_set_bit, read_bits, within_range};
use super::{packed, LosTable, TableMeta};
use crate::agent::Posture;
use crate::intervis::IntervisRecord;
use crate::{Error, Result};
use glam::Vec3;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Writes a `.slt` file section by section: [`TableWriter::new`] writes the header and the
/// waypoints, then [`write_los`](TableWriter::write_los) (line of sight and sees lists),
/// [`push_intervis`](TableWriter::push_intervis) once per record in `(observer, target)`
/// order, [`write_edges`](TableWriter::write_edges), and [`finish`](TableWriter::finish).
/// The bytes equal [`TableFile::to_bytes`](super::TableFile::to_bytes) for the same table.
pub struct TableWriter<W: Write + Seek> {
    out: W,
    hash: Fnv1a,
    header: Vec<u8>,
    heads: [[u8; 16]; 5],
    head_at: [u64; 5],
    pos: u64,
    /// The section being written (index into the tags), or the next one to open.
    section: usize,
    open: bool,
    n: u32,
    shard: (u32, u32),
    flags: u32,
    los_written: bool,
    last_entry: Option<(u32, u32)>,
    /// The waypoints, to check the range of visible pairs and the edges' lengths against.
    waypoints: Vec<Vec3>,
    range: Option<f32>,
}

fn misuse(msg: &str) -> Error {
    Error::InvalidInput(format!("table writer: {msg}"))
}

/// The header's flag bits: which sections hold data, the posture, a spacing and a scene digest.
fn header_flags(meta: &TableMeta, intervis: bool, edges: bool) -> u32 {
    let posture = match meta.posture {
        Posture::Standing => 0u32,
        Posture::Crouching => 1,
        Posture::Prone => 2,
    };
    (u32::from(intervis) * FLAG_INTERVIS)
        | (u32::from(meta.spacing.is_some()) * FLAG_SPACING)
        | (u32::from(edges) * FLAG_EDGES)
        | (posture << 3)
        | (u32::from(meta.scene_digest.is_some()) * FLAG_SCENE)
}

/// The header's bytes, scene name and zero padding to a multiple of 8 included; the file
/// length (bytes 16..24) is 0, patched by [`TableWriter::finish`].
fn header_bytes(meta: &TableMeta, waypoints: &[Vec3], shard: (u32, u32), flags: u32) -> Vec<u8> {
    let n = waypoints.len() as u64;
    let mut h = Vec::with_capacity(80 + meta.scene.len() + 8);
    h.extend_from_slice(&MAGIC);
    for w in [FORMAT_VERSION, flags] {
        h.extend_from_slice(&w.to_le_bytes());
    }
    for w in [0, n, super::waypoint_digest(waypoints)] {
        h.extend_from_slice(&w.to_le_bytes());
    }
    let range = meta.range.unwrap_or(f32::INFINITY);
    for f in [
        meta.eye_height,
        range,
        meta.spacing.unwrap_or(0.0),
        meta.max_slope,
    ] {
        h.extend_from_slice(&f.to_le_bytes());
    }
    for w in [meta.mask.bits(), shard.0, shard.1, meta.scene.len() as u32] {
        h.extend_from_slice(&w.to_le_bytes());
    }
    h.extend_from_slice(&meta.scene_digest.unwrap_or(0).to_le_bytes());
    h.extend_from_slice(meta.scene.as_bytes());
    h.resize(h.len().next_multiple_of(8), 0);
    h
}

impl<W: Write + Seek> TableWriter<W> {
    /// Starts a table of `waypoints` holding shard `shard`'s rows (`(0, 1)` for all), with
    /// an intervis section when `intervis` and a nav graph when `edges`; writes the header
    /// and the waypoints. Fails on values the reader would refuse.
    pub fn new(
        out: W,
        meta: &TableMeta,
        waypoints: &[Vec3],
        shard: (u32, u32),
        intervis: bool,
        edges: bool,
    ) -> Result<TableWriter<W>> {
        let n = waypoints.len() as u64;
        layout::check_meta(meta, n, shard).map_err(|m| misuse(&m))?;
        if let Some(k) = waypoints
            .iter()
            .position(|p| !(p.abs().max_element() <= crate::limits::MAX_COORDINATE))
        {
            return Err(Error::InvalidInput(format!(
                "waypoint {k} is {}: waypoints must be finite, within {:e} m",
                waypoints[k],
                crate::limits::MAX_COORDINATE
            )));
        }
        let flags = header_flags(meta, intervis, edges);
        let h = header_bytes(meta, waypoints, shard, flags);
        let mut w = TableWriter {
            out,
            hash: Fnv1a::new(),
            heads: [[0; 16]; 5],
            head_at: [0; 5],
            pos: 0,
            section: 0,
            open: false,
            n: n as u32,
            shard,
            flags,
            los_written: false,
            last_entry: None,
            header: Vec::new(),
            waypoints: crate::limits::vec_with_capacity(
                waypoints.len(),
                "table waypoints",
                "use fewer waypoints",
            )?,
            range: meta.range,
        };
        w.waypoints.extend_from_slice(waypoints);
        w.out.write_all(&h)?;
        w.pos = h.len() as u64;
        w.header = h;
        w.open_section(0)?;
        for c in waypoints.iter().flat_map(|p| p.to_array()) {
            w.payload(&c.to_le_bytes())?;
        }
        w.close_section()?;
        Ok(w)
    }

    fn payload(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes)?;
        self.hash.write(bytes);
        self.pos += bytes.len() as u64;
        Ok(())
    }

    fn open_section(&mut self, s: usize) -> Result<()> {
        self.head_at[s] = self.pos;
        self.heads[s][..4].copy_from_slice(&layout::TAGS[s]);
        self.out.write_all(&[0; 16])?;
        self.pos += 16;
        self.section = s;
        self.open = true;
        Ok(())
    }

    fn close_section(&mut self) -> Result<()> {
        let s = self.section;
        let len = self.pos - self.head_at[s] - 16;
        self.heads[s][8..].copy_from_slice(&len.to_le_bytes());
        let pad = (self.pos.next_multiple_of(8) - self.pos) as usize;
        self.payload(&[0; 8][..pad])?;
        self.section = s + 1;
        self.open = false;
        Ok(())
    }

    /// Closes the open section and writes empty ones up to section `s`, which is opened.
    fn advance_to(&mut self, s: usize) -> Result<()> {
        if self.section > s || (self.section == s && self.open) {
            return Ok(());
        }
        if !self.los_written {
            return Err(misuse("write_los comes before intervis, edges and finish"));
        }
        if self.open {
            self.close_section()?;
        }
        while self.section < s {
            self.open_section(self.section)?;
            self.close_section()?;
        }
        if s < 5 {
            self.open_section(s)?;
        }
        Ok(())
    }

    /// Writes the line-of-sight bits and, for a complete table, the sees lists (built from
    /// the bits 64 rows at a time, whether or not `los` holds its own).
    pub fn write_los(&mut self, los: &LosTable) -> Result<()> {
        if self.los_written || self.section != 1 {
            return Err(misuse("write_los is called once, right after new"));
        }
        if los.n() != self.n || los.shard() != self.shard {
            return Err(misuse(&format!(
                "the LOS table has {} waypoints, shard {:?}; the header says {}, {:?}",
                los.n(),
                los.shard(),
                self.n,
                self.shard
            )));
        }
        self.check_range(los)?;
        self.open_section(1)?;
        for w in los.bits() {
            self.payload(&w.to_le_bytes())?;
        }
        self.close_section()?;
        self.open_section(SEES)?;
        if los.is_complete() {
            self.write_sees(los)?;
        }
        self.close_section()?;
        self.los_written = true;
        Ok(())
    }

    /// Refuses a visible pair beyond the table's range, as the reader does.
    fn check_range(&self, los: &LosTable) -> Result<()> {
        let Some(range) = self.range else {
            return Ok(());
        };
        let (k, m) = self.shard;
        for i in (k..self.n).step_by(m as usize) {
            let (s, len) = los.row_bits(i);
            let a = self.waypoints[i as usize];
            let mut far = None;
            for_each_set_bit(los.bits(), s, len, |d| {
                let j = i + 1 + d as u32;
                if far.is_none() && !within_range(a, self.waypoints[j as usize], range) {
                    far = Some(j);
                }
            });
            if let Some(j) = far {
                let b = self.waypoints[j as usize];
                return Err(Error::InvalidInput(beyond_range(i, j, a, b, range)));
            }
        }
        Ok(())
    }

    fn write_sees(&mut self, los: &LosTable) -> Result<()> {
        let n = self.n;
        let bits = los.bits();
        let fix = "use fewer waypoints";
        let mut degree = crate::limits::vec_filled(n as usize + 1, 0u64, "sees offsets", fix)?;
        for i in 0..n {
            let (s, len) = los.row_bits(i);
            for_each_set_bit(bits, s, len, |d| {
                degree[i as usize] += 1;
                degree[(i + 1) as usize + d as usize] += 1;
            });
        }
        let mut acc = 0u64;
        for d in degree.iter_mut() {
            let here = *d;
            self.payload(&acc.to_le_bytes())?;
            acc += here;
        }
        // Rows in blocks of 64: the column part (j < i) of each row of the block comes from
        // one 64-bit read per earlier row j, then the row part (j > i) from the row itself.
        let mut cols: Vec<Vec<u32>> = vec![Vec::new(); 64];
        for i0 in (0..n).step_by(64) {
            let i1 = (i0 + 64).min(n);
            cols.iter_mut().for_each(Vec::clear);
            for j in 0..i1 - 1 {
                let (start, _) = los.row_bits(j);
                let (off, take, shift) = if j < i0 {
                    (start + u64::from(i0 - j - 1), i1 - i0, 0)
                } else {
                    (start, i1 - j - 1, j + 1 - i0)
                };
                if take == 0 {
                    continue;
                }
                let mut v = read_bits(bits, off, take);
                while v != 0 {
                    let d = v.trailing_zeros() + shift;
                    cols[d as usize].push(j);
                    v &= v - 1;
                }
            }
            for i in i0..i1 {
                for &j in &cols[(i - i0) as usize] {
                    self.payload(&j.to_le_bytes())?;
                }
                let (s, len) = los.row_bits(i);
                let mut row = Vec::new();
                for_each_set_bit(bits, s, len, |d| row.push(i + 1 + d as u32));
                for j in row {
                    self.payload(&j.to_le_bytes())?;
                }
            }
        }
        Ok(())
    }

    /// Appends one intervis record; records come in `(observer, target)` order, observers of
    /// this shard only, each with something exposed. It is stored packed
    /// ([`quantise`](super::quantise) gives the value a reader gets back).
    pub fn push_intervis(&mut self, observer: u32, target: u32, r: &IntervisRecord) -> Result<()> {
        if self.flags & FLAG_INTERVIS == 0 {
            return Err(misuse("this table was started without intervis"));
        }
        self.advance_to(IVIS)?;
        if self.section != IVIS {
            return Err(misuse("intervis records come before the edges"));
        }
        let (k, m) = self.shard;
        let bad = if observer >= self.n || target >= self.n || observer == target {
            Some("pairs waypoints out of range, or one with itself".to_string())
        } else if observer % m != k {
            Some(format!("has an observer of another shard than {k}/{m}"))
        } else if self.last_entry.is_some_and(|p| p >= (observer, target)) {
            Some("is out of (observer, target) order or repeated".into())
        } else {
            packed::check_record(r).err()
        };
        if let Some(why) = bad {
            return Err(Error::InvalidInput(format!(
                "intervis record ({observer}, {target}) {why}"
            )));
        }
        self.last_entry = Some((observer, target));
        self.payload(&packed::pack(observer, target, r))
    }

    /// Writes the nav graph's edges (checked as [`check_edges`](super::check_edges) does).
    pub fn write_edges(&mut self, edges: &[Edge]) -> Result<()> {
        if self.flags & FLAG_EDGES == 0 {
            return Err(misuse("this table was started without a nav graph"));
        }
        self.advance_to(NAVG)?;
        if self.pos != self.head_at[NAVG] + 16 {
            return Err(misuse("write_edges is called once"));
        }
        super::check_edges(edges, &self.waypoints)
            .map_err(|e| Error::InvalidInput(format!("the nav graph's edges do not fit: {e}")))?;
        for e in edges {
            for w in [e.a, e.b, e.kinds.0, e.length.to_bits()] {
                self.payload(&w.to_le_bytes())?;
            }
        }
        Ok(())
    }

    /// Closes the last sections, writes the checksum and patches the lengths; returns the
    /// sink (flushed).
    pub fn finish(mut self) -> Result<W> {
        if self.flags & FLAG_EDGES != 0 && self.section < NAVG {
            return Err(misuse("a table started with a nav graph needs write_edges"));
        }
        self.advance_to(5)?;
        let total = self.pos + 8;
        self.header[16..24].copy_from_slice(&total.to_le_bytes());
        self.hash.write(&self.header);
        for h in &self.heads {
            self.hash.write(h);
        }
        self.out.write_all(&self.hash.finish().to_le_bytes())?;
        self.out.seek(SeekFrom::Start(16))?;
        self.out.write_all(&total.to_le_bytes())?;
        for s in 0..5 {
            self.out.seek(SeekFrom::Start(self.head_at[s]))?;
            self.out.write_all(&self.heads[s])?;
        }
        self.out.seek(SeekFrom::Start(total))?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A table file being written under `path.tmp`, renamed to `path` by
/// [`TableWriter::finish_file`].
pub struct TmpFile {
    file: BufWriter<std::fs::File>,
    tmp: PathBuf,
    path: PathBuf,
}

impl Write for TmpFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Seek for TmpFile {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.file.seek(pos)
    }
}

pub(crate) fn write_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::InvalidInput(format!(
        "{}: cannot write the table ({e}); check that the directory exists and is writable \
         and that the disk has room",
        path.display()
    ))
}

impl TableWriter<TmpFile> {
    /// [`TableWriter::new`] on `path` plus `.tmp`; [`finish_file`](Self::finish_file)
    /// renames it to `path`, so a crash never leaves a half-written table under the real
    /// name.
    pub fn create(
        path: impl AsRef<Path>,
        meta: &TableMeta,
        waypoints: &[Vec3],
        shard: (u32, u32),
        intervis: bool,
        edges: bool,
    ) -> Result<TableWriter<TmpFile>> {
        let path = path.as_ref().to_path_buf();
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let file = std::fs::File::create(&tmp).map_err(|e| write_error(&path, e))?;
        let sink = TmpFile {
            file: BufWriter::with_capacity(1 << 20, file),
            tmp,
            path,
        };
        TableWriter::new(sink, meta, waypoints, shard, intervis, edges)
    }

    /// [`finish`](TableWriter::finish), then the rename.
    pub fn finish_file(self) -> Result<()> {
        let path = self.out.path.clone();
        let sink = self.finish().map_err(|e| write_error(&path, e))?;
        let file = sink.file.into_inner().map_err(|e| write_error(&path, e))?;
        file.sync_all().map_err(|e| write_error(&path, e))?;
        std::fs::rename(&sink.tmp, &sink.path).map_err(|e| write_error(&path, e))
    }
}
