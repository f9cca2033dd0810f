//! The strict reader: every check a table file must pass, made on its bytes before anything
//! is allocated from them. Both readers use it: [`TableFile::from_bytes`](super::TableFile)
//! copies the sections out afterwards, [`MappedTable`](super::MappedTable) reads them in place.
//!
//! A file is refused when its checksum is wrong, and also when its checksum is right but its
//! content is inconsistent: counts that disagree with section lengths or limits, shard fields
//! out of range, unknown flags, nonzero reserved or padding bytes, non-finite or negative
//! header fields, waypoints or intervis fields, sees lists that disagree with the bits, visible
//! pairs farther apart than the range, intervis entries out of order or not in canonical packed
//! form, or nav edges shorter than the straight line between their waypoints.

use super::bits::for_each_set_bit_le;
use super::file::{Fnv1a, FORMAT_VERSION, MAGIC};
use super::los::{beyond_range, within_range};
use super::packed::{self, ENTRY_BYTES, ENTRY_BYTES_V2};
use super::TableMeta;
use crate::agent::Posture;
use crate::intervis::IntervisRecord;
use crate::limits::{MAX_COORDINATE, MAX_SCENE_NAME, MAX_SHARDS, MAX_WAYPOINTS};
use crate::scene::{Mask, MaterialFlags};
use std::ops::Range;

pub(crate) const REDO: &str = "re-download it or recompute it with `sightline precompute`";
/// Section tags in file order.
pub(crate) const TAGS: [[u8; 4]; 5] = [*b"WAYP", *b"LOSB", *b"SEES", *b"IVIS", *b"NAVG"];
pub(crate) const WAYP: usize = 0;
pub(crate) const LOSB: usize = 1;
pub(crate) const SEES: usize = 2;
pub(crate) const IVIS: usize = 3;
pub(crate) const NAVG: usize = 4;
/// Flag bits: intervis computed, sampled at `spacing`, nav graph stored, posture (2 bits),
/// scene digest recorded (version 3).
pub(crate) const FLAG_INTERVIS: u32 = 1;
pub(crate) const FLAG_SPACING: u32 = 2;
pub(crate) const FLAG_EDGES: u32 = 4;
pub(crate) const FLAG_SCENE: u32 = 32;
const KNOWN_MASK_BITS: u32 = 7;

/// Where everything is in a validated file.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub version: u32,
    pub flags: u32,
    pub n: u32,
    pub shard: (u32, u32),
    pub meta: TableMeta,
    /// Each section's payload (without padding); `NAVG` is empty in version 1.
    pub body: [Range<usize>; 5],
    /// Bytes of one intervis entry (28 from version 3, 56 before).
    pub entry_bytes: usize,
}

fn bad(msg: impl std::fmt::Display) -> String {
    format!("malformed table: {msg}; {REDO}")
}

pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn f32_at(b: &[u8], at: usize) -> f32 {
    f32::from_bits(u32_at(b, at))
}

/// Bit `bit` of a packed little-endian `u64` bit string held as bytes.
pub(crate) fn bit_at(bits: &[u8], bit: u64) -> bool {
    bits[(bit / 8) as usize] >> (bit % 8) & 1 == 1
}

/// Rows of shard `(k, m)` among `n` waypoints: `i = k, k + m, ...`.
fn shard_rows(n: u32, (k, m): (u32, u32)) -> u64 {
    if k >= n {
        0
    } else {
        u64::from((n - 1 - k) / m) + 1
    }
}

/// First bit of held row `i` of shard `(k, m)` (rows `k + t m` packed one after another).
pub(crate) fn row_start(n: u32, (k, m): (u32, u32), i: u32) -> u64 {
    let t = u64::from((i - k) / m);
    let first = u64::from(n - 1 - k);
    t * first - u64::from(m) * (t * t.saturating_sub(1) / 2)
}

/// Pairs (bits) a shard's rows hold.
pub(crate) fn shard_bits(n: u32, shard: (u32, u32)) -> u64 {
    let rows = shard_rows(n, shard);
    if rows == 0 {
        return 0;
    }
    let last = shard.0 + (rows as u32 - 1) * shard.1;
    row_start(n, shard, last) + u64::from(n - 1 - last)
}

/// The checks the header's values pass, in the file or handed to the writer.
pub(crate) fn check_meta(meta: &TableMeta, n: u64, shard: (u32, u32)) -> Result<(), String> {
    let (k, m) = shard;
    if m == 0 || k >= m || m > MAX_SHARDS {
        return Err(format!(
            "shard {k}/{m} is out of range: need 0 <= K < N <= {MAX_SHARDS}"
        ));
    }
    if n > MAX_WAYPOINTS {
        return Err(format!("{n} waypoints, over the limit of {MAX_WAYPOINTS}"));
    }
    let finite = |x: f32| (0.0..=MAX_COORDINATE).contains(&x);
    if !finite(meta.eye_height) {
        return Err(format!(
            "eye height {} is not a finite number of metres >= 0",
            meta.eye_height
        ));
    }
    if let Some(r) = meta.range.filter(|&r| !finite(r)) {
        return Err(format!("range {r} is not a finite number of metres >= 0"));
    }
    if let Some(s) = meta.spacing.filter(|&s| !(finite(s) && s > 0.0)) {
        return Err(format!("spacing {s} is not a finite number of metres > 0"));
    }
    let slope = meta.max_slope;
    if !(slope.is_finite() && (0.0..=std::f32::consts::FRAC_PI_2).contains(&slope)) {
        return Err(format!(
            "max slope {slope} is not an angle from 0 to pi/2 radians"
        ));
    }
    if meta.mask.0.bits() & !KNOWN_MASK_BITS != 0 {
        return Err(format!(
            "sight mask {:#x} has unknown bits",
            meta.mask.0.bits()
        ));
    }
    if meta.scene.len() as u64 > MAX_SCENE_NAME {
        return Err(format!(
            "the scene name is {} bytes, over the limit of {MAX_SCENE_NAME}",
            meta.scene.len()
        ));
    }
    Ok(())
}

/// Validates a whole file; on success every section can be read without further checks.
pub(crate) fn validate(bytes: &[u8]) -> Result<Layout, String> {
    let (version, flags) = check_preamble(bytes)?;
    let head = read_header(bytes, version)?;
    let (body, heads) = read_sections(bytes, version, head.header_len)?;
    check_checksum(bytes, version, head.header_len, &heads)?;
    let meta = read_meta(bytes, flags, head.scene, head.scene_digest)?;
    let (n, shard) = (head.n, head.shard);
    check_meta(&meta, u64::from(n), shard).map_err(bad)?;
    let layout = Layout {
        version,
        flags,
        n,
        shard,
        meta,
        body,
        entry_bytes: if version >= 3 {
            ENTRY_BYTES
        } else {
            ENTRY_BYTES_V2
        },
    };
    check_waypoints(bytes, &layout, u64_at(bytes, 32))?;
    let visible = check_bits(&bytes[layout.body[LOSB].clone()], n, shard)?;
    check_sees(bytes, &layout, visible)?;
    check_range(bytes, &layout)?;
    check_intervis(bytes, &layout)?;
    check_edges(bytes, &layout)?;
    Ok(layout)
}

/// The fixed start of the file: magic bytes, format version, flag bits and the stated length.
/// Returns the version and the flags.
fn check_preamble(bytes: &[u8]) -> Result<(u32, u32), String> {
    let head = &bytes[..bytes.len().min(8)];
    if bytes.is_empty() || head != &MAGIC[..head.len()] {
        return Err(
            "not a sightline table (bad magic bytes); pass a `.slt` file written by \
                    `sightline precompute`"
                .into(),
        );
    }
    if bytes.len() < 80 {
        return Err(format!("truncated: only {} bytes; {REDO}", bytes.len()));
    }
    let version = u32_at(bytes, 8);
    if !(1..=FORMAT_VERSION).contains(&version) {
        return Err(format!(
            "table format version {version}, but this sightline reads versions 1 to \
             {FORMAT_VERSION}; recompute the table with this version (`sightline precompute`)"
        ));
    }
    let flags = u32_at(bytes, 12);
    let known = match version {
        1 => 0b11,
        2 => 0b1_1111,
        _ => 0b11_1111,
    };
    if flags & !known != 0 || (flags >> 3) & 3 == 3 {
        return Err(bad(format_args!(
            "unknown flag bits {flags:#x} for version {version}"
        )));
    }
    let stated = u64_at(bytes, 16);
    if stated != bytes.len() as u64 {
        return Err(format!(
            "the file is {} bytes but its header says {stated}: truncated or cut short \
             (incomplete download or copy); {REDO}",
            bytes.len()
        ));
    }
    if !bytes.len().is_multiple_of(8) {
        return Err(bad("the length is not a multiple of 8"));
    }
    Ok((version, flags))
}

/// The header's counts and scene name, read by [`read_header`].
struct Header {
    n: u32,
    shard: (u32, u32),
    scene: String,
    /// The stored scene digest (0 before version 3), not yet checked against its flag.
    scene_digest: u64,
    /// Bytes of the header, scene name and padding included: where the first section starts.
    header_len: usize,
}

/// The waypoint count, shard fields and scene name, with the padding after the name.
fn read_header(bytes: &[u8], version: u32) -> Result<Header, String> {
    let n = u64_at(bytes, 24);
    if n > MAX_WAYPOINTS {
        return Err(bad(format_args!(
            "it claims {n} waypoints, over the limit of {MAX_WAYPOINTS}"
        )));
    }
    let n = n as u32;
    let (k, m) = (u32_at(bytes, 60), u32_at(bytes, 64));
    let name_len = u64::from(u32_at(bytes, 68));
    let (name_at, scene_digest) = if version >= 3 {
        (80, u64_at(bytes, 72))
    } else {
        (72, 0)
    };
    if name_len > MAX_SCENE_NAME || name_at + name_len as usize > bytes.len() - 8 {
        return Err(bad(format_args!(
            "scene name length {name_len} is over {MAX_SCENE_NAME} or past the end"
        )));
    }
    let name_end = name_at + name_len as usize;
    let header_len = name_end.next_multiple_of(8);
    if header_len > bytes.len() - 8 || bytes[name_end..header_len].iter().any(|&b| b != 0) {
        return Err(bad("nonzero padding after the scene name"));
    }
    let scene = std::str::from_utf8(&bytes[name_at..name_end])
        .map_err(|_| bad("the scene name is not UTF-8"))?
        .to_string();
    Ok(Header {
        n,
        shard: (k, m),
        scene,
        scene_digest,
        header_len,
    })
}

/// Section heads: tags, reserved bytes, lengths within the file, zero padding, nothing after
/// the last. Returns each section's payload and where each head starts.
fn read_sections(
    bytes: &[u8],
    version: u32,
    header_len: usize,
) -> Result<([Range<usize>; 5], [usize; 5]), String> {
    let count = if version == 1 { 4 } else { 5 };
    let mut body: [Range<usize>; 5] = Default::default();
    let mut heads = [0usize; 5];
    let end = bytes.len() - 8;
    let mut pos = header_len;
    for s in 0..count {
        let tag = String::from_utf8_lossy(&TAGS[s]);
        if pos + 16 > end || bytes[pos..pos + 4] != TAGS[s] {
            return Err(bad(format_args!("expected section {tag} at byte {pos}")));
        }
        if u32_at(bytes, pos + 4) != 0 {
            return Err(bad(format_args!("nonzero reserved bytes in section {tag}")));
        }
        let len = u64_at(bytes, pos + 8);
        let room = (end - pos - 16) as u64;
        if len > room {
            return Err(bad(format_args!(
                "section {tag} claims {len} bytes but {room} remain"
            )));
        }
        let start = pos + 16;
        let stop = start + len as usize;
        let next = stop.next_multiple_of(8);
        if bytes[stop..next].iter().any(|&b| b != 0) {
            return Err(bad(format_args!("nonzero padding after section {tag}")));
        }
        heads[s] = pos;
        body[s] = start..stop;
        pos = next;
    }
    if count == 4 {
        body[NAVG] = pos..pos;
    }
    if pos != end {
        return Err(bad("unexpected bytes after the sections"));
    }
    Ok((body, heads))
}

/// The stored checksum against the one computed (the version-3 order, or the whole file
/// before it).
fn check_checksum(
    bytes: &[u8],
    version: u32,
    header_len: usize,
    heads: &[usize; 5],
) -> Result<(), String> {
    let end = bytes.len() - 8;
    let sum = u64_at(bytes, end);
    let computed = if version >= 3 {
        checksum_v3(bytes, header_len, heads)
    } else {
        let mut h = Fnv1a::new();
        h.write(&bytes[..end]);
        h.finish()
    };
    if computed != sum {
        return Err(format!("checksum mismatch: the file is corrupted; {REDO}"));
    }
    Ok(())
}

/// The header's values: range, spacing and scene digest against their flags, the sight mask,
/// the posture. [`check_meta`] checks the rest.
fn read_meta(
    bytes: &[u8],
    flags: u32,
    scene: String,
    scene_digest: u64,
) -> Result<TableMeta, String> {
    let float_field = |at: usize| f32_at(bytes, at);
    let range = float_field(44);
    let range = if range == f32::INFINITY {
        None
    } else if range.is_finite() && range >= 0.0 {
        Some(range)
    } else {
        return Err(bad(format_args!("range {range} is not >= 0 or +inf")));
    };
    let spacing = if flags & FLAG_SPACING != 0 {
        Some(float_field(48))
    } else if u32_at(bytes, 48) != 0 {
        return Err(bad(
            "a spacing is stored but the waypoints were not sampled",
        ));
    } else {
        None
    };
    let scene_digest = if flags & FLAG_SCENE != 0 {
        Some(scene_digest)
    } else if scene_digest != 0 {
        return Err(bad("a scene digest is stored but its flag is clear"));
    } else {
        None
    };
    let mask = u32_at(bytes, 56);
    if mask & !KNOWN_MASK_BITS != 0 {
        return Err(bad(format_args!("sight mask {mask:#x} has unknown bits")));
    }
    Ok(TableMeta {
        scene,
        scene_digest,
        eye_height: float_field(40),
        range,
        spacing,
        max_slope: float_field(52),
        mask: Mask(MaterialFlags::from_bits(mask)),
        posture: match (flags >> 3) & 3 {
            0 => Posture::Standing,
            1 => Posture::Crouching,
            _ => Posture::Prone,
        },
    })
}

/// The version-3 checksum: FNV-1a 64 over every section's padded payload in file order, then
/// the header, then the five section heads, so a streaming writer can hash payloads as it
/// writes them and patch the lengths at the end.
pub(crate) fn checksum_v3(bytes: &[u8], header_len: usize, heads: &[usize; 5]) -> u64 {
    let mut h = Fnv1a::new();
    let end = bytes.len() - 8;
    for s in 0..5 {
        let stop = heads.get(s + 1).copied().unwrap_or(end);
        h.write(&bytes[heads[s] + 16..stop]);
    }
    h.write(&bytes[..header_len]);
    for &at in heads {
        h.write(&bytes[at..at + 16]);
    }
    h.finish()
}

/// Waypoint `i` of a `WAYP` payload that [`check_waypoints`] passed.
fn waypoint_at(w: &[u8], i: u32) -> glam::Vec3 {
    let at = 12 * i as usize;
    glam::Vec3::new(f32_at(w, at), f32_at(w, at + 4), f32_at(w, at + 8))
}

fn check_waypoints(bytes: &[u8], l: &Layout, digest: u64) -> Result<(), String> {
    let w = &bytes[l.body[WAYP].clone()];
    if w.len() as u64 != 12 * u64::from(l.n) {
        return Err(bad(format_args!(
            "{} waypoints need {} bytes, the section has {}",
            l.n,
            12 * u64::from(l.n),
            w.len()
        )));
    }
    if let Some(k) = (0..w.len() / 4).find(|&k| !(f32_at(w, 4 * k).abs() <= MAX_COORDINATE)) {
        return Err(bad(format_args!(
            "waypoint {} has coordinate {}, not finite within {MAX_COORDINATE:e} m",
            k / 3,
            f32_at(w, 4 * k)
        )));
    }
    let mut h = Fnv1a::new();
    h.write(w);
    if h.finish() != digest {
        return Err(bad("waypoint digest mismatch"));
    }
    Ok(())
}

/// Checks the LOS section's length and padding bits; returns the visible pairs.
fn check_bits(bits: &[u8], n: u32, shard: (u32, u32)) -> Result<u64, String> {
    let count = shard_bits(n, shard);
    let want = count.div_ceil(64) * 8;
    if bits.len() as u64 != want {
        return Err(bad(format_args!(
            "the LOS section has {} bytes, {n} waypoints in shard {}/{} need {want}",
            bits.len(),
            shard.0,
            shard.1
        )));
    }
    if (count..want * 8).any(|b| bit_at(bits, b)) {
        return Err(bad("the LOS section has bits set past its last pair"));
    }
    Ok(bits.iter().map(|b| u64::from(b.count_ones())).sum())
}

/// The sees lists agree with the bits: sorted, unique, in range, every listed pair visible,
/// and as many entries as visible pairs times two (so every visible pair is listed).
fn check_sees(bytes: &[u8], l: &Layout, visible: u64) -> Result<(), String> {
    let s = &bytes[l.body[SEES].clone()];
    let n = l.n;
    if l.shard.1 != 1 {
        return if s.is_empty() {
            Ok(())
        } else {
            Err(bad("a shard file holds sees lists"))
        };
    }
    let table = (u64::from(n) + 1) * 8;
    if (s.len() as u64) < table {
        return Err(bad(format_args!(
            "the sees section has {} bytes, too short for {} offsets",
            s.len(),
            n + 1
        )));
    }
    let listed = u64_at(s, n as usize * 8);
    if u64_at(s, 0) != 0 || (s.len() as u64 - table) != listed.saturating_mul(4) {
        return Err(bad(format_args!(
            "the sees offsets claim {listed} neighbours but the section holds {}",
            (s.len() as u64 - table) / 4
        )));
    }
    if listed != 2 * visible {
        return Err(bad(format_args!(
            "the sees lists hold {listed} entries but the bits have {visible} visible pairs \
             ({} entries)",
            2 * visible
        )));
    }
    let bits = &bytes[l.body[LOSB].clone()];
    let lists = &s[table as usize..];
    for i in 0..n {
        let (a, b) = (u64_at(s, 8 * i as usize), u64_at(s, 8 * i as usize + 8));
        if a > b || b > listed {
            return Err(bad(format_args!("sees offset {} is out of order", i + 1)));
        }
        let mut prev: Option<u32> = None;
        for e in a..b {
            let j = u32_at(lists, 4 * e as usize);
            if j >= n || j == i || prev.is_some_and(|p| p >= j) {
                return Err(bad(format_args!(
                    "sees list of waypoint {i} has {j}: out of range, itself, or not ascending"
                )));
            }
            let (lo, hi) = (i.min(j), i.max(j));
            if !bit_at(bits, row_start(n, (0, 1), lo) + u64::from(hi - lo - 1)) {
                return Err(bad(format_args!(
                    "sees list of waypoint {i} has {j} but their line-of-sight bit is clear"
                )));
            }
            prev = Some(j);
        }
    }
    Ok(())
}

/// With a range, no visible pair lies beyond it ([`within_range`](super::los::within_range)).
fn check_range(bytes: &[u8], l: &Layout) -> Result<(), String> {
    let Some(range) = l.meta.range else {
        return Ok(());
    };
    let (bits, w) = (&bytes[l.body[LOSB].clone()], &bytes[l.body[WAYP].clone()]);
    for i in (l.shard.0..l.n).step_by(l.shard.1 as usize) {
        let a = waypoint_at(w, i);
        let mut far = None;
        let start = row_start(l.n, l.shard, i);
        for_each_set_bit_le(bits, start, u64::from(l.n - 1 - i), |d| {
            let j = i + 1 + d as u32;
            if far.is_none() && !within_range(a, waypoint_at(w, j), range) {
                far = Some(j);
            }
        });
        if let Some(j) = far {
            return Err(bad(beyond_range(i, j, a, waypoint_at(w, j), range)));
        }
    }
    Ok(())
}

/// Decodes intervis entry `e` of a validated layout.
pub(crate) fn intervis_entry(bytes: &[u8], l: &Layout, e: usize) -> (u32, u32, IntervisRecord) {
    let at = l.body[IVIS].start + e * l.entry_bytes;
    let b = &bytes[at..at + l.entry_bytes];
    if l.entry_bytes == ENTRY_BYTES {
        packed::unpack(b)
    } else {
        let w: [u32; 14] = std::array::from_fn(|k| u32_at(b, 4 * k));
        let r: IntervisRecord = bytemuck::cast::<[u32; 12], _>(w[2..].try_into().unwrap());
        (w[0], w[1], r)
    }
}

fn check_intervis(bytes: &[u8], l: &Layout) -> Result<(), String> {
    let len = l.body[IVIS].len();
    if !len.is_multiple_of(l.entry_bytes) || (l.flags & FLAG_INTERVIS == 0 && len != 0) {
        return Err(bad(format_args!(
            "the intervis section has {len} bytes: not whole {}-byte entries, or intervis \
             was not computed",
            l.entry_bytes
        )));
    }
    let mut prev = None;
    for e in 0..len / l.entry_bytes {
        let (i, j, r) = intervis_entry(bytes, l, e);
        let at = l.body[IVIS].start + e * l.entry_bytes;
        let why = if i >= l.n || j >= l.n || i == j {
            Some(format!("pairs waypoints {i} and {j} of {}", l.n))
        } else if i % l.shard.1 != l.shard.0 {
            Some(format!("has observer {i}, a row of another shard"))
        } else if prev.is_some_and(|p| p >= (i, j)) {
            Some("is out of order or repeated".into())
        } else if let Err(m) = packed::check_record(&r) {
            Some(m)
        } else if l.entry_bytes == ENTRY_BYTES
            && packed::pack(i, j, &r)[..] != bytes[at..at + ENTRY_BYTES]
        {
            Some("is not in canonical packed form".into())
        } else {
            None
        };
        if let Some(why) = why {
            return Err(bad(format_args!("intervis entry {e} ({i}, {j}) {why}")));
        }
        prev = Some((i, j));
    }
    Ok(())
}

fn check_edges(bytes: &[u8], l: &Layout) -> Result<(), String> {
    let g = &bytes[l.body[NAVG].clone()];
    if !g.len().is_multiple_of(16) || (l.flags & FLAG_EDGES == 0 && !g.is_empty()) {
        return Err(bad(
            "the nav graph section is not whole 16-byte edges, or no graph was stored",
        ));
    }
    let edges = edges_of(g);
    let w = &bytes[l.body[WAYP].clone()];
    super::edges::check_edges_at(&edges, l.n as usize, |i| waypoint_at(w, i)).map_err(bad)
}

/// The edges of a `NAVG` payload (bounded by the file's length).
pub(crate) fn edges_of(g: &[u8]) -> Vec<super::Edge> {
    g.chunks_exact(16)
        .map(|c| {
            let w: [u32; 4] = std::array::from_fn(|k| u32_at(c, 4 * k));
            bytemuck::cast::<[u32; 4], super::Edge>(w)
        })
        .collect()
}
