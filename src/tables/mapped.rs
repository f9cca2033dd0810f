//! The memory-mapped table reader: the file is mapped, validated once by the strict reader
//! (checksum and every consistency check, without copying a section), and queries then read
//! rows straight from the mapping. Memory is the pages the queries touch, so a 100,000-waypoint
//! table (hundreds of MB of bits, GBs of sees lists) is usable on a small machine.

use super::layout::{self, Layout, IVIS, LOSB, NAVG, SEES, WAYP};
use super::{Edge, TableMeta};
use crate::intervis::IntervisRecord;
use crate::{Error, Result, Scene};
use glam::Vec3;
use std::path::Path;

/// A table file opened in place. Queries panic on out-of-range waypoints, as [`LosTable`]'s
/// do.
///
/// The file must not be changed or truncated while it is mapped (the writer never does:
/// it writes a `.tmp` file and renames it over the old one, which leaves this mapping on
/// the old file).
///
/// [`LosTable`]: super::LosTable
pub struct MappedTable {
    map: memmap2::Mmap,
    layout: Layout,
    path: String,
}

impl std::fmt::Debug for MappedTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedTable")
            .field("path", &self.path)
            .field("n", &self.layout.n)
            .finish_non_exhaustive()
    }
}

impl MappedTable {
    /// Maps and validates a table file; failures are [`Error::Load`] naming the file.
    pub fn open(path: impl AsRef<Path>) -> Result<MappedTable> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let file = std::fs::File::open(path)
            .map_err(|e| Error::load(&name, format!("cannot read the table: {e}")))?;
        // SAFETY: the mapping is read-only and private to this value; the file is one the
        // writer renamed into place complete and never rewrites (see the type's docs).
        let map = unsafe { memmap2::Mmap::map(&file) }
            .map_err(|e| Error::load(&name, format!("cannot map the table: {e}")))?;
        let layout = layout::validate(&map).map_err(|m| Error::load(&name, m))?;
        Ok(MappedTable {
            map,
            layout,
            path: name,
        })
    }

    /// The file this table was opened from.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What the table was computed with.
    #[must_use]
    pub fn meta(&self) -> &TableMeta {
        &self.layout.meta
    }

    /// The file's format version.
    #[must_use]
    pub fn version(&self) -> u32 {
        self.layout.version
    }

    /// Number of waypoints.
    #[must_use]
    pub fn n(&self) -> u32 {
        self.layout.n
    }

    /// The shard `(K, N)` the file holds; `(0, 1)` for a complete table.
    #[must_use]
    pub fn shard(&self) -> (u32, u32) {
        self.layout.shard
    }

    fn section(&self, s: usize) -> &[u8] {
        &self.map[self.layout.body[s].clone()]
    }

    /// Waypoint `i`.
    #[must_use]
    pub fn waypoint(&self, i: u32) -> Vec3 {
        assert!(i < self.n(), "waypoint {i} out of range {}", self.n());
        let w = self.section(WAYP);
        let at = 12 * i as usize;
        Vec3::from_array(std::array::from_fn(|k| {
            f32::from_bits(layout::u32_at(w, at + 4 * k))
        }))
    }

    /// Whether waypoints `i` and `j` see each other (symmetric; `visible(i, i)` is true).
    ///
    /// # Panics
    /// If `i` or `j` is out of range, or row `min(i, j)` belongs to another shard.
    #[must_use]
    pub fn visible(&self, i: u32, j: u32) -> bool {
        let n = self.n();
        assert!(i < n && j < n, "waypoint {i} or {j} out of range {n}");
        if i == j {
            return true;
        }
        let (a, b) = (i.min(j), i.max(j));
        let (k, m) = self.shard();
        assert!(a % m == k, "row {a} is not in shard {k}/{m}");
        let bit = layout::row_start(n, (k, m), a) + u64::from(b - a - 1);
        layout::bit_at(self.section(LOSB), bit)
    }

    /// Visible pairs held.
    #[must_use]
    pub fn visible_pairs(&self) -> u64 {
        self.section(LOSB)
            .iter()
            .map(|b| u64::from(b.count_ones()))
            .sum()
    }

    /// The waypoints `i` sees (not itself), ascending, read from the mapping. Empty for a
    /// shard table.
    pub fn sees(&self, i: u32) -> impl ExactSizeIterator<Item = u32> + '_ {
        assert!(i < self.n(), "waypoint {i} out of range {}", self.n());
        let s = self.section(SEES);
        let (lists, range) = if s.is_empty() {
            (s, 0..0)
        } else {
            let table = (self.n() as usize + 1) * 8;
            let a = layout::u64_at(s, 8 * i as usize) as usize;
            let b = layout::u64_at(s, 8 * i as usize + 8) as usize;
            (&s[table..], a..b)
        };
        range.map(move |e| layout::u32_at(lists, 4 * e))
    }

    /// Stored intervis records.
    #[must_use]
    pub fn intervis_len(&self) -> usize {
        self.layout.body[IVIS].len() / self.layout.entry_bytes
    }

    /// Whether the table holds intervis.
    #[must_use]
    pub fn has_intervis(&self) -> bool {
        self.layout.flags & layout::FLAG_INTERVIS != 0
    }

    /// Intervis entry `e` (`e < intervis_len()`), as stored: `(observer, target, record)`.
    #[must_use]
    pub fn intervis_entry(&self, e: usize) -> (u32, u32, IntervisRecord) {
        assert!(e < self.intervis_len(), "intervis entry {e} out of range");
        let (i, j, r) = layout::intervis_entry(&self.map, &self.layout, e);
        (i, j, super::quantise(&r))
    }

    /// The record of `observer` looking at `target` (binary search in the mapping); `None`
    /// as for [`IntervisTable::get`](super::IntervisTable::get).
    #[must_use]
    pub fn intervis(&self, observer: u32, target: u32) -> Option<IntervisRecord> {
        let (mut lo, mut hi) = (0, self.intervis_len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let at = self.layout.body[IVIS].start + mid * self.layout.entry_bytes;
            let key = (
                layout::u32_at(&self.map, at),
                layout::u32_at(&self.map, at + 4),
            );
            match key.cmp(&(observer, target)) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(self.intervis_entry(mid).2),
            }
        }
        None
    }

    /// The nav graph's edges, when stored (copied out: 16 bytes each).
    #[must_use]
    pub fn edges(&self) -> Option<Vec<Edge>> {
        (self.layout.flags & layout::FLAG_EDGES != 0).then(|| layout::edges_of(self.section(NAVG)))
    }

    /// Refuses a table computed on other geometry than `scene` (see
    /// [`TableFile::check_scene`](super::TableFile::check_scene)); the error names the file.
    pub fn check_scene(&self, scene: &Scene) -> Result<()> {
        super::check_scene_digest(self.meta(), scene).map_err(|m| Error::load(&self.path, m))
    }

    /// The raw bytes of section `s` (for [`merge_files`](super::merge_files)).
    pub(crate) fn raw(&self, s: usize) -> &[u8] {
        self.section(s)
    }
}
