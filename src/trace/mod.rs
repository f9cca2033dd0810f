//! Batched queries shared by both backends: segments for occlusion, rays for closest hits.

pub mod cpu;
pub mod down;
mod lanes;
pub mod packet;
mod raster;

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

/// A line segment from `start` to `end`. Mirrors `struct Segment` in `shaders/common.wgsl`.
///
/// Occlusion counts a hit strictly between the ends (`0 < t < 1`); a segment whose end lies on a
/// surface is not blocked by that surface at exactly `t = 1`, but rounding can put the hit just
/// inside, so lift end points off surfaces by a few millimetres.
///
/// A segment may be staged within a run of consecutive segments ([`Segment::staged`]): see
/// [`crate::Engine::occluded`] for what staging lets a backend skip.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Segment {
    pub start: [f32; 3],
    /// 0: not staged; else the segments of its run before it (bits 2 and up) and its stage
    /// plus one (bits 0 and 1).
    stage: u32,
    pub end: [f32; 3],
    _pad1: u32,
}

/// A ray from `origin` along `dir` (any non-zero length) up to `t_max` (in units of `dir`).
/// Mirrors `struct Ray` in `shaders/common.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Ray {
    pub origin: [f32; 3],
    pub t_max: f32,
    pub dir: [f32; 3],
    _pad: u32,
}

/// Raw closest-hit record. Mirrors `struct HitRecord` in `shaders/common.wgsl`.
/// `triangle == NO_HIT` means nothing was hit.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct HitRecord {
    pub normal: [f32; 3],
    pub t: f32,
    pub triangle: u32,
    pub material: u32,
    /// 1 when the ray met the triangle's back: its winding normal (counter-clockwise
    /// vertices) points along the ray. A downward ray leaving a closed solid meets its floor
    /// from the back.
    pub back: u32,
    pub _pad: u32,
}

const _: () = assert!(std::mem::size_of::<Segment>() == 32);
const _: () = assert!(std::mem::size_of::<Ray>() == 32);
const _: () = assert!(std::mem::size_of::<HitRecord>() == 32);

/// Marks a [`HitRecord`] with no hit.
pub const NO_HIT: u32 = u32::MAX;

impl HitRecord {
    pub const MISS: HitRecord = HitRecord {
        normal: [0.0; 3],
        t: f32::INFINITY,
        triangle: NO_HIT,
        material: 0,
        back: 0,
        _pad: 0,
    };
}

/// A closest hit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Distance along the ray in units of `dir` (metres if `dir` is a unit vector).
    pub t: f32,
    /// Scene-wide triangle id.
    pub triangle: u32,
    /// Unit geometric normal, facing against the ray.
    pub normal: Vec3,
    /// Index into the scene's material table.
    pub material: u32,
    /// The ray met the triangle's back (see [`HitRecord::back`]).
    pub back: bool,
}

impl Segment {
    #[must_use]
    pub fn new(start: Vec3, end: Vec3) -> Segment {
        Segment {
            start: start.into(),
            stage: 0,
            end: end.into(),
            _pad1: 0,
        }
    }

    /// This segment as one of a staged run: `lead` segments of its run come right before it
    /// in the batch (0 for the run's first), and it belongs to stage `stage` (0, 1 or 2). A
    /// `lead` of 2^30 or more or a stage above 2 makes the batch fail validation.
    #[must_use]
    pub fn staged(self, lead: u32, stage: u32) -> Segment {
        let tag = match lead < MAX_RUN && stage <= 2 {
            true => (lead << 2) | (stage + 1),
            false => BAD_STAGE,
        };
        Segment { stage: tag, ..self }
    }

    /// `(lead, stage)` of a staged segment ([`Segment::staged`]), `None` for a plain one.
    #[must_use]
    pub fn stage(&self) -> Option<(u32, u32)> {
        (self.stage & 3 != 0).then(|| (self.stage >> 2, (self.stage & 3) - 1))
    }

    /// The segment without its stage.
    #[must_use]
    pub fn unstaged(self) -> Segment {
        Segment { stage: 0, ..self }
    }
    #[must_use]
    pub fn start(&self) -> Vec3 {
        self.start.into()
    }
    #[must_use]
    pub fn end(&self) -> Vec3 {
        self.end.into()
    }
    #[must_use]
    pub fn length(&self) -> f32 {
        (self.end() - self.start()).length()
    }
}

impl Ray {
    #[must_use]
    pub fn new(origin: Vec3, dir: Vec3, t_max: f32) -> Ray {
        Ray {
            origin: origin.into(),
            t_max,
            dir: dir.into(),
            _pad: 0,
        }
    }
    #[must_use]
    pub fn origin(&self) -> Vec3 {
        self.origin.into()
    }
    #[must_use]
    pub fn dir(&self) -> Vec3 {
        self.dir.into()
    }
}

impl HitRecord {
    #[must_use]
    pub fn to_hit(&self) -> Option<Hit> {
        (self.triangle != NO_HIT).then(|| Hit {
            t: self.t,
            triangle: self.triangle,
            normal: self.normal.into(),
            material: self.material,
            back: self.back != 0,
        })
    }
}

/// One bit per segment: set where the segment is blocked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Occlusion {
    pub words: Vec<u32>,
    pub len: usize,
}

impl Occlusion {
    #[must_use]
    pub fn new(len: usize) -> Occlusion {
        Occlusion {
            words: vec![0; len.div_ceil(32)],
            len,
        }
    }
    #[must_use]
    pub fn get(&self, i: usize) -> bool {
        assert!(i < self.len, "bit {i} out of range {}", self.len);
        self.words[i / 32] >> (i % 32) & 1 == 1
    }
    pub fn set(&mut self, i: usize) {
        self.words[i / 32] |= 1 << (i % 32);
    }
    #[must_use]
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len).map(|i| self.get(i))
    }
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// True when every coordinate is finite and within [`crate::limits::MAX_COORDINATE`].
pub(crate) fn in_range(p: Vec3) -> bool {
    // Every coordinate compared at once: false for NaN and infinities too.
    p.abs()
        .cmple(Vec3::splat(crate::limits::MAX_COORDINATE))
        .all()
}

/// The Z-order (Morton) key of a point's quarter-metre ground cell (x, z), wrapping every
/// 16 km: nearby points get nearby keys, which is all the order is for (a fan's segments in
/// this order of their ends share packets with their neighbours).
pub(crate) fn z_key(p: [f32; 3]) -> u32 {
    // Truncation, not floor: a library call per point, and the seam at zero costs nothing.
    let spread = |v: f32| {
        let mut x = (v * 4.0) as i32 as u32 & 0xffff;
        x = (x | x << 8) & 0x00ff_00ff;
        x = (x | x << 4) & 0x0f0f_0f0f;
        x = (x | x << 2) & 0x3333_3333;
        (x | x << 1) & 0x5555_5555
    };
    spread(p[0]) | spread(p[2]) << 1
}

/// Rejects NaN/Inf end points and coordinates beyond [`crate::limits::MAX_COORDINATE`] before
/// anything reaches a kernel. A zero-length segment is valid and blocked by nothing.
pub fn validate_segments(segments: &[Segment]) -> crate::Result<()> {
    use rayon::prelude::*;
    // One pass over the plain case (every end in range, nothing staged), on every core for a
    // large batch; the checks below name the first bad segment only where one fails it.
    const PARALLEL_FROM: usize = 1 << 16;
    let all_plain = match segments.len() >= PARALLEL_FROM {
        true => segments.par_chunks(PARALLEL_FROM / 4).all(all_plain),
        false => all_plain(segments),
    };
    if all_plain {
        return Ok(());
    }
    validate_stages(segments)?;
    for (index, s) in segments.iter().enumerate() {
        let what = if !(s.start().is_finite() && s.end().is_finite()) {
            "a NaN or infinite segment end point"
        } else if !(in_range(s.start()) && in_range(s.end())) {
            "a segment end point too far from the origin"
        } else {
            continue;
        };
        return Err(crate::Error::NonFiniteQuery { index, what });
    }
    Ok(())
}

/// Whether no segment is staged and every coordinate is within
/// [`crate::limits::MAX_COORDINATE`] ([`in_range`]). A coordinate's magnitude bits, whose
/// integer order is the float order (NaN and infinities lie above every finite bound), plus
/// `0x7fff_ffff - MAX` carry into the top bit exactly when it is out of range; the batch's
/// words are or-ed together in a fixed pattern, so the loop runs in vector lanes.
pub(crate) fn all_plain(segments: &[Segment]) -> bool {
    const M: u32 = 0x7fff_ffff;
    const BIAS: u32 = M - crate::limits::MAX_COORDINATE.to_bits();
    // Per word of a segment: start x, y, z, stage (kept whole: must be 0), end x, y, z,
    // padding (ignored).
    const KEEP: [u32; 8] = [M, M, M, u32::MAX, M, M, M, 0];
    const ADD: [u32; 8] = [BIAS, BIAS, BIAS, 0, BIAS, BIAS, BIAS, 0];
    let words: &[[u32; 8]] = bytemuck::cast_slice(segments);
    let mut acc = [0u32; 8];
    for w in words {
        for k in 0..8 {
            acc[k] |= (w[k] & KEEP[k]) + ADD[k];
        }
    }
    let coords = acc[0] | acc[1] | acc[2] | acc[4] | acc[5] | acc[6];
    coords & !M == 0 && acc[3] == 0
}

/// Longest staged run [`Segment::staged`] encodes.
const MAX_RUN: u32 = 1 << 30;
/// The stage word of a segment staged with values out of range.
const BAD_STAGE: u32 = !3;

/// Rejects stages out of range and runs that are not consecutive: a staged segment's run
/// must start at a segment of lead 0 within the batch, and each of its others must follow a
/// segment of the run with a lead one less.
fn validate_stages(segments: &[Segment]) -> crate::Result<()> {
    let mut prev: Option<u32> = None;
    for (index, s) in segments.iter().enumerate() {
        let this = match (s.stage, s.stage()) {
            (0, _) => None,
            (_, None) => {
                return Err(crate::Error::InvalidInput(format!(
                    "segment {index} is staged with a stage above 2 or a lead of 2^30 or \
                     more; stage runs as 0, 1 or 2 and split longer runs"
                )))
            }
            (_, Some((lead, _))) => Some(lead),
        };
        if let Some(lead) = this.filter(|&l| l > 0 && prev != Some(l - 1)) {
            return Err(crate::Error::InvalidInput(format!(
                "segment {index} is staged {lead} into its run but does not follow the run's \
                 segment {}; keep a run's segments consecutive, leads counting up from 0",
                lead - 1
            )));
        }
        prev = this;
    }
    Ok(())
}

/// Rejects NaN/Inf origins and directions, zero directions, coordinates beyond
/// [`crate::limits::MAX_COORDINATE`] and NaN or negative `t_max` (`t_max = +inf` is allowed: an
/// unbounded ray).
pub fn validate_rays(rays: &[Ray]) -> crate::Result<()> {
    for (index, r) in rays.iter().enumerate() {
        let what = if !r.origin().is_finite() {
            "a NaN or infinite ray origin"
        } else if !in_range(r.origin()) {
            "a ray origin too far from the origin"
        } else if !in_range(r.dir()) || r.dir() == Vec3::ZERO {
            "a zero, NaN, infinite or too long ray direction"
        } else if r.t_max.is_nan() || r.t_max < 0.0 {
            "a NaN or negative ray t_max"
        } else {
            continue;
        };
        return Err(crate::Error::NonFiniteQuery { index, what });
    }
    Ok(())
}

/// Refuses a segment `x0,y0,z0,x1,y1,z1` whose ends, each within the coordinate limit, lie
/// more than [`crate::limits::MAX_COORDINATE`] apart along an axis.
fn check_span(v: &[f32; 6]) -> Result<(), String> {
    let limit = crate::limits::MAX_COORDINATE;
    for (axis, name) in ["x", "y", "z"].iter().enumerate() {
        let span = (f64::from(v[axis + 3]) - f64::from(v[axis])).abs();
        if span > f64::from(limit) {
            return Err(format!(
                "the segment spans {span:e} m along {name}, longer than the limit of {limit:e} m \
                 for one segment (its ends are within the coordinate limit); split it into \
                 shorter segments"
            ));
        }
    }
    Ok(())
}

/// Reads segments from a CSV file: `x0,y0,z0,x1,y1,z1` per line, an optional header of field
/// names first. A line that is not six finite numbers within
/// [`crate::limits::MAX_COORDINATE`], or whose segment spans more than that along an axis (it
/// is traced as a ray whose direction is the span), is an [`Error::Load`](crate::Error::Load)
/// naming the file and the 1-based line; a file with no segments is an error too.
pub fn read_segments(path: impl AsRef<std::path::Path>) -> crate::Result<Vec<Segment>> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| crate::Error::load(&name, format!("cannot read the segment file: {e}")))?;
    let segs = crate::csv::records(&text)
        .map(|(line, fields)| {
            let v = crate::csv::numbers::<6>(&fields).map_err(|e| {
                crate::Error::load_at(&name, line, format!("expected x0,y0,z0,x1,y1,z1: {e}"))
            })?;
            check_span(&v).map_err(|m| crate::Error::load_at(&name, line, m))?;
            Ok(Segment::new(
                Vec3::new(v[0], v[1], v[2]),
                Vec3::new(v[3], v[4], v[5]),
            ))
        })
        .collect::<crate::Result<Vec<_>>>()?;
    if segs.is_empty() {
        return Err(crate::Error::load(
            name,
            "no segments: expected lines of x0,y0,z0,x1,y1,z1",
        ));
    }
    Ok(segs)
}

/// SplitMix64: the seeded generator tests, benches and procedural scenes share.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.f32()
    }
    /// Uniform point in a box.
    pub fn in_box(&mut self, lo: Vec3, hi: Vec3) -> Vec3 {
        Vec3::new(
            self.range(lo.x, hi.x),
            self.range(lo.y, hi.y),
            self.range(lo.z, hi.z),
        )
    }
    /// Uniform unit vector.
    pub fn unit_vector(&mut self) -> Vec3 {
        loop {
            let v = self.in_box(Vec3::splat(-1.0), Vec3::splat(1.0));
            let l = v.length_squared();
            if l > 1e-4 && l <= 1.0 {
                return v / l.sqrt();
            }
        }
    }
}
