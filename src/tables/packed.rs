//! The packed intervis entry of format version 3: 28 bytes instead of 56.
//!
//! | offset | bytes | field | stored as |
//! |---|---|---|---|
//! | 0 | 4 | observer | `u32` |
//! | 4 | 4 | target | `u32` |
//! | 8 | 4 | `box_pixels` | `u32`, exact |
//! | 12 | 2 | `exposed` | unorm16 fraction of `box_pixels` (exact while `box_pixels <= 65535`) |
//! | 14 | 2 | `occluded` | the same |
//! | 16 | 2 | `background` | the same |
//! | 18 | 2 | `target_brightness` | unorm16 over 0..1 |
//! | 20 | 2 | `background_brightness` | unorm16 over 0..1 |
//! | 22 | 2 | `occlusion` | unorm16 over 0..1 |
//! | 24 | 2 | `contrast` | IEEE half float, 0..65504 |
//! | 26 | 2 | `solid_angle` | IEEE half float of steradians x 1024, 0..63.9 sr |
//!
//! Bounds: pixel counts within one step, `box_pixels / 65535` pixels (exact up to 65,535
//! pixels; 0 stays 0 and a nonzero count stays nonzero): half a step of rounding and half a
//! pixel more, or, for a nonzero count under half a step, the clamp to the first step that keeps
//! it nonzero (on a 262,144-pixel box, 1 pixel reads back as 4: the worst case there, 3
//! pixels). Brightness and occlusion within 7.7e-6 (half the step), contrast and solid angle
//! within 2^-11 (0.049 %) relative, solid angles from 6e-8 sr up. Values past a range are
//! stored clamped to it. Every 28-byte pattern the reader accepts is the packing of
//! the record it decodes to, so a table read and written again keeps its bytes.

use crate::intervis::IntervisRecord;
use half::f16;

/// Bytes of one version-3 entry.
pub(crate) const ENTRY_BYTES: usize = 28;
/// Bytes of one version-1/2 entry (observer, target, the 48-byte record as `u32` words).
pub(crate) const ENTRY_BYTES_V2: usize = 56;
const SOLID_ANGLE_SCALE: f32 = 1024.0;

fn unorm(x: f32) -> u16 {
    (x.clamp(0.0, 1.0) * 65535.0).round() as u16
}

fn half(x: f32) -> u16 {
    f16::from_f32(x.clamp(0.0, f16::MAX.to_f32())).to_bits()
}

/// A count `c <= total` as a unorm16 fraction of `total`; nonzero counts stay nonzero.
fn fraction(c: u32, total: u32) -> u16 {
    if c == 0 || total == 0 {
        return 0;
    }
    let q = (f64::from(c.min(total)) * 65535.0 / f64::from(total)).round() as u16;
    q.max(1)
}

fn count(q: u16, total: u32) -> u32 {
    (f64::from(q) * f64::from(total) / 65535.0).round() as u32
}

/// The entry's 28 bytes (see the module docs).
pub(crate) fn pack(observer: u32, target: u32, r: &IntervisRecord) -> [u8; ENTRY_BYTES] {
    let b = r.box_pixels;
    let halves = [
        fraction(r.exposed, b),
        fraction(r.occluded, b),
        fraction(r.background, b),
        unorm(r.target_brightness),
        unorm(r.background_brightness),
        unorm(r.occlusion),
        half(r.contrast),
        half(r.solid_angle * SOLID_ANGLE_SCALE),
    ];
    let mut out = [0u8; ENTRY_BYTES];
    for (k, w) in [observer, target, b].into_iter().enumerate() {
        out[4 * k..4 * k + 4].copy_from_slice(&w.to_le_bytes());
    }
    for (k, h) in halves.into_iter().enumerate() {
        out[12 + 2 * k..14 + 2 * k].copy_from_slice(&h.to_le_bytes());
    }
    out
}

/// Decodes 28 bytes: `(observer, target, record)`. Half floats that are negative, NaN or
/// infinite decode as such; [`check_record`] refuses them.
pub(crate) fn unpack(bytes: &[u8]) -> (u32, u32, IntervisRecord) {
    let w = |k: usize| u32::from_le_bytes(bytes[4 * k..4 * k + 4].try_into().unwrap());
    let h = |k: usize| u16::from_le_bytes(bytes[12 + 2 * k..14 + 2 * k].try_into().unwrap());
    let b = w(2);
    let record = IntervisRecord {
        exposed: count(h(0), b),
        occluded: count(h(1), b),
        background: count(h(2), b),
        box_pixels: b,
        target_brightness: f32::from(h(3)) / 65535.0,
        background_brightness: f32::from(h(4)) / 65535.0,
        occlusion: f32::from(h(5)) / 65535.0,
        contrast: f16::from_bits(h(6)).to_f32(),
        solid_angle: f16::from_bits(h(7)).to_f32() / SOLID_ANGLE_SCALE,
        _pad: [0; 3],
    };
    (w(0), w(1), record)
}

/// The record as the file stores it: packed and unpacked again. Idempotent.
#[must_use]
pub fn quantise(r: &IntervisRecord) -> IntervisRecord {
    unpack(&pack(0, 0, r)).2
}

/// Checks what every stored record satisfies: something exposed, counts within the box,
/// finite non-negative measures, zero padding. The message names the bad field.
pub(crate) fn check_record(r: &IntervisRecord) -> Result<(), String> {
    if r.exposed == 0 {
        return Err("has nothing exposed (such pairs are not stored)".into());
    }
    for (name, c) in [
        ("exposed", r.exposed),
        ("occluded", r.occluded),
        ("background", r.background),
    ] {
        if c > r.box_pixels {
            return Err(format!(
                "has {name} = {c} pixels, more than its box of {}",
                r.box_pixels
            ));
        }
    }
    for (name, x) in [
        ("target brightness", r.target_brightness),
        ("background brightness", r.background_brightness),
        ("contrast", r.contrast),
        ("occlusion", r.occlusion),
        ("solid angle", r.solid_angle),
    ] {
        if !(x.is_finite() && x >= 0.0) || x.is_sign_negative() {
            return Err(format!("has {name} = {x}: needs a finite value >= 0"));
        }
    }
    if r._pad != [0; 3] {
        return Err("has nonzero padding".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_is_canonical_and_keeps_nonzero_counts() {
        let r = IntervisRecord {
            exposed: 1,
            occluded: 7,
            background: 199_999,
            box_pixels: 200_000,
            target_brightness: 0.3,
            background_brightness: 0.81,
            contrast: 1.7,
            occlusion: 7.0 / 8.0,
            solid_angle: 3.0e-6,
            _pad: [0; 3],
        };
        let q = quantise(&r);
        assert!(q.exposed >= 1 && q.occluded > 0, "{q:?}");
        assert_eq!(quantise(&q), q);
        assert_eq!(pack(3, 4, &q), pack(3, 4, &r));
        assert!((q.solid_angle / r.solid_angle - 1.0).abs() < 1.0 / 2048.0);
        assert!((q.target_brightness - 0.3).abs() <= 0.5 / 65535.0 + 1e-7);
        let small = IntervisRecord {
            box_pixels: 300,
            exposed: 17,
            background: 283,
            ..r
        };
        assert_eq!(quantise(&small).exposed, 17);
        assert_eq!(quantise(&small).background, 283);
        assert!(check_record(&IntervisRecord {
            contrast: f32::NAN,
            ..small
        })
        .is_err());
        assert!(check_record(&small).is_ok());
    }

    /// The stated bound on a count's error in a box of `b` pixels, in whole pixels.
    fn count_bound(b: u32) -> u32 {
        if b <= 65535 {
            0
        } else {
            (f64::from(b) / 65535.0).floor() as u32
        }
    }

    /// Packs and unpacks count `c` of box `b`; checks the bound, that 0 and only 0 reads back
    /// as 0, and that the count stays within the box. Returns the error.
    fn count_error(c: u32, b: u32) -> u32 {
        let d = count(fraction(c, b), b);
        let e = d.abs_diff(c);
        assert!(e <= count_bound(b), "{c} of {b} reads back as {d}");
        assert_eq!(d == 0, c == 0, "{c} of {b} reads back as {d}");
        assert!(d <= b, "{c} of {b} reads back as {d}");
        e
    }

    #[test]
    fn packed_counts_on_large_boxes_stay_within_the_stated_bound() {
        // Every count of these boxes, small to large, around the 16-bit and half-step edges.
        for (b, worst) in [
            (300, 0),
            (65_535, 0),
            (65_536, 1),
            (100_000, 1),
            (131_070, 1),
            (131_071, 1),
            (262_144, 3),
            (353_889, 4),
            (1 << 20, 15),
            (1 << 22, 63),
        ] {
            let max = (0..=b).map(|c| count_error(c, b)).max().unwrap();
            assert_eq!(max, worst, "box {b}");
        }
        // Seeded boxes up to u32::MAX, half the counts under two steps (where the clamp acts).
        let mut rng = crate::trace::SplitMix64(0xb0c5);
        for _ in 0..1_000_000 {
            let b = 65_536 + (rng.next_u64() % u64::from(u32::MAX - 65_535)) as u32;
            let c = match rng.next_u64() % 2 {
                0 => (rng.next_u64() % (2 * u64::from(b) / 65535 + 1)) as u32,
                _ => (rng.next_u64() % (u64::from(b) + 1)) as u32,
            };
            count_error(c, b);
        }
    }
}
