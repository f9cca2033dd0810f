//! The symmetric line-of-sight table: one bit per unordered waypoint pair, plus van der Sterren's
//! flattened "sees" lists (one `u32` array of neighbour indices and an offset per waypoint).

use crate::scene::Mask;
use crate::trace::Segment;
use crate::{Engine, Error, Result, Scene};
use glam::Vec3;

pub(crate) use super::bits::{for_each_set_bit, read_bits};

/// How line of sight between two waypoints is traced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LosParams {
    /// Eye height above each waypoint (metres); the segment runs eye to eye.
    pub eye_height: f32,
    /// What blocks sight ([`Mask::SIGHT`]: foliage does, bullet-proof glass does not).
    pub mask: Mask,
    /// Segments per [`Engine::occluded`] call where segments are traced (the CPU engine, or a
    /// GPU engine whose storage binding cannot hold the waypoints): bounds memory (32 bytes
    /// per segment plus an 8-byte bit index) whatever the waypoint count.
    pub chunk_segments: usize,
    /// Pairs per call on a GPU engine (each call is one submission and one wait, and holds
    /// one bit per pair on the GPU); at most 64M (8 MB of bits), and at most what one storage
    /// binding of the device holds.
    pub pairs_per_gpu_call: usize,
}

impl LosParams {
    /// Standing eyes (1.7 m), sight mask, 4M segments (about 160 MB) per CPU call, 64M pairs
    /// per GPU call.
    #[must_use]
    pub const fn standard() -> LosParams {
        LosParams {
            eye_height: 1.7,
            mask: Mask::SIGHT,
            chunk_segments: 1 << 22,
            pairs_per_gpu_call: super::los_gpu::PAIRS_PER_CALL,
        }
    }
}

impl Default for LosParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// Line of sight between every unordered pair of waypoints, or one shard's rows of it.
///
/// Pair `(i, j)` with `i < j` is bit `j - i - 1` of row `i`; rows are packed one after another
/// into `u64` words, least significant bit first (upper triangle, no diagonal), so a complete
/// table holds `n(n-1)/2` bits. A shard `K/N` holds only the rows `i % N == K` (interleaved, so
/// shards get similar work although rows shrink), packed the same way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LosTable {
    n: u32,
    shard: (u32, u32),
    /// Bit offset of each row's first bit; `n + 1` entries (the last is the bit count).
    row_start: Vec<u64>,
    bits: Vec<u64>,
    /// `sees[sees_offsets[i]..sees_offsets[i + 1]]`: waypoints `i` sees, ascending. Empty for
    /// shards (a row alone does not know who sees it).
    sees_offsets: Vec<u64>,
    sees: Vec<u32>,
}

impl LosTable {
    /// Bit offsets of each row (`n + 1`), memory-checked.
    fn row_starts(n: u32, shard: (u32, u32)) -> Result<Vec<u64>> {
        super::check_shard(shard)?;
        let (k, m) = shard;
        let fix = "use fewer waypoints (a larger --spacing) or more shards";
        let mut row_start = crate::limits::vec_with_capacity(n as usize + 1, "row offsets", fix)?;
        let mut acc = 0u64;
        for i in 0..n {
            row_start.push(acc);
            if i % m == k {
                acc += u64::from(n - 1 - i);
            }
        }
        row_start.push(acc);
        Ok(row_start)
    }

    /// An all-blocked table for `n` waypoints holding shard `k/m`'s rows; its bits are
    /// checked against available memory first.
    pub(crate) fn empty(n: u32, shard: (u32, u32)) -> Result<LosTable> {
        let row_start = Self::row_starts(n, shard)?;
        let words = row_start[n as usize].div_ceil(64) as usize;
        let bits = crate::limits::vec_filled(
            words,
            0u64,
            "the line-of-sight bits",
            "use fewer waypoints (a larger --spacing) or more shards",
        )?;
        Ok(LosTable {
            n,
            shard,
            bits,
            row_start,
            sees_offsets: Vec::new(),
            sees: Vec::new(),
        })
    }

    /// A complete table for `n` waypoints in which exactly the given pairs see each other
    /// (either order, repeats allowed): line of sight known from elsewhere, or a hand-made
    /// test. A pair out of range or of a waypoint with itself is an error.
    pub fn from_pairs(n: u32, pairs: impl IntoIterator<Item = (u32, u32)>) -> Result<LosTable> {
        let mut t = LosTable::empty(n, (0, 1))?;
        for (i, j) in pairs {
            if i == j || i >= n || j >= n {
                return Err(Error::InvalidInput(format!(
                    "line-of-sight pair ({i}, {j}) needs two different waypoints below {n}"
                )));
            }
            t.set_pair(i, j, true);
        }
        t.build_sees()?;
        Ok(t)
    }

    /// Rebuilds a table read from a file, checking that the parts fit together (the file's
    /// full checks are in [`layout`](super::layout)).
    pub(crate) fn from_parts(
        n: u32,
        shard: (u32, u32),
        bits: Vec<u64>,
        sees_offsets: Vec<u64>,
        sees: Vec<u32>,
    ) -> std::result::Result<LosTable, String> {
        let row_start = Self::row_starts(n, shard).map_err(|e| e.to_string())?;
        let words = row_start[n as usize].div_ceil(64) as usize;
        if bits.len() != words {
            return Err(format!(
                "LOS section has {} words, expected {words}",
                bits.len()
            ));
        }
        let mut t = LosTable {
            n,
            shard,
            bits,
            row_start,
            sees_offsets: Vec::new(),
            sees: Vec::new(),
        };
        let used = t.bit_count() % 64;
        if used != 0 && t.bits.last().is_some_and(|&w| w >> used != 0) {
            return Err("LOS section has bits set past its last pair".into());
        }
        if !t.is_complete() {
            if !(sees_offsets.is_empty() && sees.is_empty()) {
                return Err("a shard file must not hold sees lists".into());
            }
            return Ok(t);
        }
        let ok = sees_offsets.len() == n as usize + 1
            && sees_offsets[0] == 0
            && sees_offsets.windows(2).all(|w| w[0] <= w[1])
            && sees_offsets[n as usize] == sees.len() as u64
            && sees.len() as u64 == 2 * t.visible_pairs()
            && sees.iter().all(|&j| j < n);
        if !ok {
            return Err("the sees lists do not match the LOS bits".into());
        }
        t.sees_offsets = sees_offsets;
        t.sees = sees;
        Ok(t)
    }

    /// Number of waypoints.
    #[must_use]
    pub fn n(&self) -> u32 {
        self.n
    }

    /// The shard `(K, N)` this table holds; `(0, 1)` for a complete table.
    #[must_use]
    pub fn shard(&self) -> (u32, u32) {
        self.shard
    }

    /// Whether this table holds every row (and so the sees lists).
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.shard.1 == 1
    }

    /// Whether row `i` is in this table.
    #[must_use]
    pub fn holds_row(&self, i: u32) -> bool {
        i % self.shard.1 == self.shard.0
    }

    /// The packed bits (see the type's docs); padding bits past the last pair are zero.
    #[must_use]
    pub fn bits(&self) -> &[u64] {
        &self.bits
    }

    /// Pairs this table holds (`n(n-1)/2` when complete).
    #[must_use]
    pub fn bit_count(&self) -> u64 {
        self.row_start[self.n as usize]
    }

    /// Bit range `(start, len)` of row `i` (`len` is 0 for rows of other shards).
    #[must_use]
    pub fn row_bits(&self, i: u32) -> (u64, u64) {
        let s = self.row_start[i as usize];
        (s, self.row_start[i as usize + 1] - s)
    }

    /// Visible pairs held.
    #[must_use]
    pub fn visible_pairs(&self) -> u64 {
        self.bits.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// Whether waypoints `i` and `j` see each other (symmetric; `visible(i, i)` is true).
    ///
    /// # Panics
    /// If `i` or `j` is out of range, or row `min(i, j)` belongs to another shard.
    #[must_use]
    pub fn visible(&self, i: u32, j: u32) -> bool {
        assert!(
            i < self.n && j < self.n,
            "waypoint {i} or {j} out of range {}",
            self.n
        );
        if i == j {
            return true;
        }
        let (a, b) = (i.min(j), i.max(j));
        assert!(
            self.holds_row(a),
            "row {a} is not in shard {:?}",
            self.shard
        );
        let bit = self.row_start[a as usize] + u64::from(b - a - 1);
        self.bits[(bit / 64) as usize] >> (bit % 64) & 1 == 1
    }

    /// The waypoints `i` sees (not itself), ascending. Empty for every `i` of a shard table.
    #[must_use]
    pub fn sees(&self, i: u32) -> &[u32] {
        if self.sees_offsets.is_empty() {
            return &[];
        }
        let (a, b) = (
            self.sees_offsets[i as usize],
            self.sees_offsets[i as usize + 1],
        );
        &self.sees[a as usize..b as usize]
    }

    /// The flattened sees lists: `(offsets, neighbours)`, `offsets.len() == n + 1`.
    #[must_use]
    pub fn sees_flat(&self) -> (&[u64], &[u32]) {
        (&self.sees_offsets, &self.sees)
    }

    pub(crate) fn bits_mut(&mut self) -> &mut Vec<u64> {
        &mut self.bits
    }

    /// Sets or clears pair `(i, j)` (`i != j`, both in range, row held); the sees lists are
    /// stale until [`LosTable::build_sees`] runs.
    pub(crate) fn set_pair(&mut self, i: u32, j: u32, visible: bool) {
        let (a, b) = (i.min(j), i.max(j));
        let bit = self.row_start[a as usize] + u64::from(b - a - 1);
        let mask = 1u64 << (bit % 64);
        let word = &mut self.bits[(bit / 64) as usize];
        *word = if visible { *word | mask } else { *word & !mask };
    }

    pub(crate) fn set(&mut self, bit: u64) {
        self.bits[(bit / 64) as usize] |= 1 << (bit % 64);
    }

    /// Rebuilds the sees lists of the `touched` rows from the bits (one pass over the other
    /// waypoints each) and copies the rest: after [`LosTable::set_pair`] changed only pairs of
    /// touched waypoints.
    pub(crate) fn rebuild_sees_rows(&mut self, touched: &[bool]) -> Result<()> {
        assert!(
            self.is_complete() && !self.sees_offsets.is_empty(),
            "sees lists need every row"
        );
        let n = self.n;
        let mut offsets = Vec::with_capacity(n as usize + 1);
        let mut sees =
            crate::limits::vec_with_capacity(self.sees.len(), "sees lists", "use fewer waypoints")?;
        offsets.push(0u64);
        for i in 0..n {
            if touched[i as usize] {
                sees.extend((0..n).filter(|&j| j != i && self.visible(i, j)));
            } else {
                sees.extend_from_slice(self.sees(i));
            }
            offsets.push(sees.len() as u64);
        }
        self.sees_offsets = offsets;
        self.sees = sees;
        Ok(())
    }

    /// Builds the sees lists from the bits of a complete table: a counting pass over the set
    /// bits, a prefix sum, a filling pass. Scanning rows in order leaves every list ascending.
    pub(crate) fn build_sees(&mut self) -> Result<()> {
        assert!(self.is_complete(), "sees lists need every row");
        let n = self.n as usize;
        let fix = "use fewer waypoints, or write the table with `precompute_to_file`, which \
                   streams the sees lists";
        let mut degree = crate::limits::vec_filled(n + 1, 0u64, "sees offsets", fix)?;
        for i in 0..self.n {
            let (s, len) = self.row_bits(i);
            for_each_set_bit(&self.bits, s, len, |d| {
                degree[i as usize] += 1;
                degree[i as usize + 1 + d as usize] += 1;
            });
        }
        let mut offsets = Vec::with_capacity(n + 1);
        let mut acc = 0u64;
        for d in &degree[..n] {
            offsets.push(acc);
            acc += d;
        }
        offsets.push(acc);
        let mut fill: Vec<u64> = offsets[..n].to_vec();
        let mut sees = crate::limits::vec_filled(acc as usize, 0u32, "sees lists", fix)?;
        for i in 0..self.n {
            let (s, len) = self.row_bits(i);
            for_each_set_bit(&self.bits, s, len, |d| {
                let j = i + 1 + d as u32;
                sees[fill[i as usize] as usize] = j;
                fill[i as usize] += 1;
                sees[fill[j as usize] as usize] = i;
                fill[j as usize] += 1;
            });
        }
        self.sees_offsets = offsets;
        self.sees = sees;
        Ok(())
    }
}

/// [`compute_los_shard`] for every row: a complete table with its sees lists.
pub fn compute_los(
    engine: &Engine,
    scene: &Scene,
    waypoints: &[Vec3],
    params: &LosParams,
    range: Option<f32>,
    progress: impl FnMut(u64, u64),
) -> Result<LosTable> {
    compute_los_shard(engine, scene, waypoints, params, range, (0, 1), progress)
}

/// Line of sight for the rows `i % N == K` of `shard = (K, N)`: one segment eye to eye
/// (`eye_height` above each waypoint) per pair `(i, j > i)`. A pair is visible when nothing
/// matching `params.mask` lies strictly between the eyes. Pairs farther apart than `range`
/// (metres, waypoint to waypoint) are not traced and count as not visible. A complete table
/// (`N = 1`) also gets its sees lists.
///
/// On a GPU engine the `los_table` kernel derives each pair from its thread index: only the
/// waypoints and a word per row are uploaded, in calls of at most `params.pairs_per_gpu_call`
/// pairs, each one submission and one wait (see `src/tables/los_gpu.rs`). On the CPU engine
/// the segments are built and traced through [`Engine::occluded`] in calls of at most
/// `params.chunk_segments`, so memory stays bounded. Either way a pair's bit is what
/// [`Engine::occluded`] on that engine answers for its segment.
///
/// `progress(done, total)` counts pairs of this shard (traced or out of range): on the CPU
/// engine after each row (`done` includes segments still queued for the next call), on a GPU
/// engine after each call.
pub fn compute_los_shard(
    engine: &Engine,
    scene: &Scene,
    waypoints: &[Vec3],
    params: &LosParams,
    range: Option<f32>,
    shard: (u32, u32),
    progress: impl FnMut(u64, u64),
) -> Result<LosTable> {
    let mut table = trace_rows(engine, scene, waypoints, params, range, shard, progress)?;
    if table.is_complete() {
        table.build_sees()?;
    }
    Ok(table)
}

/// [`compute_los_shard`] without the sees lists (the streaming writer builds them as it
/// writes).
pub(crate) fn trace_rows(
    engine: &Engine,
    scene: &Scene,
    waypoints: &[Vec3],
    params: &LosParams,
    range: Option<f32>,
    shard: (u32, u32),
    mut progress: impl FnMut(u64, u64),
) -> Result<LosTable> {
    let n = check_inputs(waypoints, params, range, shard)?;
    let mut table = LosTable::empty(n, shard)?;
    if let Some(gpu) = engine.gpu() {
        let traced = super::los_gpu::trace_rows(
            gpu,
            scene,
            waypoints,
            params,
            range,
            &mut table,
            &mut progress,
        )?;
        if traced {
            return Ok(table);
        }
    }
    let total = table.bit_count();
    let lift = Vec3::new(0.0, params.eye_height, 0.0);
    let r2 = range.map_or(f32::INFINITY, |r| r * r);
    let chunk = params.chunk_segments.clamp(1, 1 << 26);
    let cap = chunk.min(total as usize);
    let (mut segs, mut index) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
    let flush = |segs: &mut Vec<Segment>, index: &mut Vec<u64>, t: &mut LosTable| -> Result<()> {
        if !segs.is_empty() {
            let occ = engine.occluded(scene, segs, params.mask)?;
            for (k, &bit) in index.iter().enumerate() {
                if !occ.get(k) {
                    t.set(bit);
                }
            }
            segs.clear();
            index.clear();
        }
        Ok(())
    };
    for i in (shard.0..n).step_by(shard.1 as usize) {
        let (start, _) = table.row_bits(i);
        let a = waypoints[i as usize];
        for j in i + 1..n {
            let b = waypoints[j as usize];
            if a.distance_squared(b) <= r2 {
                segs.push(Segment::new(a + lift, b + lift));
                index.push(start + u64::from(j - i - 1));
                if segs.len() == chunk {
                    flush(&mut segs, &mut index, &mut table)?;
                }
            }
        }
        progress(start + u64::from(n - 1 - i), total);
    }
    flush(&mut segs, &mut index, &mut table)?;
    progress(total, total);
    Ok(table)
}

/// Whether waypoints at `a` and `b` may see each other in a table of range `range`: the test
/// [`compute_los`] makes (glam's `distance_squared` against `range * range`), widened by 10
/// parts per million for tables another build computed. Readers refuse a visible pair beyond.
#[must_use]
pub(crate) fn within_range(a: Vec3, b: Vec3, range: f32) -> bool {
    f64::from(a.distance_squared(b)) <= f64::from(range) * f64::from(range) * (1.0 + 2e-5)
}

/// The message for a visible pair `(i, j)` at `a`, `b` beyond `range`.
pub(crate) fn beyond_range(i: u32, j: u32, a: Vec3, b: Vec3, range: f32) -> String {
    format!(
        "waypoints {i} and {j} are {} m apart, beyond the table's range of {range} m, but their \
         line-of-sight bit is set",
        a.distance(b)
    )
}

fn check_inputs(
    waypoints: &[Vec3],
    params: &LosParams,
    range: Option<f32>,
    shard: (u32, u32),
) -> Result<u32> {
    super::check_shard(shard)?;
    let n = super::waypoint_count(waypoints.len())?;
    if let Some(k) = waypoints.iter().position(|p| !p.is_finite()) {
        return Err(Error::InvalidInput(format!(
            "waypoint {k} is {:?}: waypoints must be finite (metres)",
            waypoints[k]
        )));
    }
    if !(params.eye_height.is_finite() && params.eye_height >= 0.0) {
        return Err(Error::InvalidInput(format!(
            "eye height {} must be a finite number of metres >= 0 (1.7 standing)",
            params.eye_height
        )));
    }
    let lift = Vec3::new(0.0, params.eye_height, 0.0);
    if let Some(k) = waypoints
        .iter()
        .position(|&p| !crate::trace::in_range(p + lift))
    {
        return Err(Error::InvalidInput(format!(
            "waypoint {k} is {:?}: its eye point must lie within {:e} m of the origin",
            waypoints[k],
            crate::limits::MAX_COORDINATE
        )));
    }
    if range.is_some_and(|r| r.is_nan() || r < 0.0) {
        return Err(Error::InvalidInput(format!(
            "range {range:?} must be >= 0 metres (or none for unlimited)"
        )));
    }
    Ok(n)
}
