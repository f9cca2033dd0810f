//! The pictures' colours, chosen to stay apart for readers with any common colour-vision
//! deficiency: categories take Okabe and Ito's eight colours ("Color Universal Design", 2008),
//! scalar maps take viridis (van der Walt and Smith, matplotlib, 2015), whose lightness rises
//! steadily so its order reads even in grey. The scene underneath stays in neutral greys, so
//! every result colour stands out from it.
//!
//! | role | colour |
//! |---|---|
//! | seen, exposed, rejected | vermillion `#D55E00` |
//! | hidden prone / crouching / standing | yellow `#F0E442` / bluish green `#009E73` / blue `#0072B2` |
//! | unreachable, the agent | orange `#E69F00` |
//! | observers, threats | reddish purple `#CC79A7` |
//! | water (scene) | sky blue `#56B4E9` |
//! | foliage (scene) | bluish green `#009E73`, mixed into the ground |
//! | paths, chosen spots | white with a black edge |
//! | values low .. high | viridis: dark purple, blue, green, yellow |

use image::Rgb;
use sightline::cover::Posture;

pub const BLACK: Rgb<u8> = Rgb([0, 0, 0]);
pub const WHITE: Rgb<u8> = Rgb([255, 255, 255]);
pub const ORANGE: Rgb<u8> = Rgb([230, 159, 0]);
pub const SKY_BLUE: Rgb<u8> = Rgb([86, 180, 233]);
pub const BLUISH_GREEN: Rgb<u8> = Rgb([0, 158, 115]);
pub const YELLOW: Rgb<u8> = Rgb([240, 228, 66]);
pub const BLUE: Rgb<u8> = Rgb([0, 114, 178]);
pub const VERMILLION: Rgb<u8> = Rgb([213, 94, 0]);
pub const PURPLE: Rgb<u8> = Rgb([204, 121, 167]);
pub const GREY: Rgb<u8> = Rgb([128, 128, 128]);

/// Hidden postures, lowest first: prone, crouching, standing.
#[must_use]
pub fn hidden(p: Posture) -> Rgb<u8> {
    match p {
        Posture::Prone => YELLOW,
        Posture::Crouching => BLUISH_GREEN,
        Posture::Standing => BLUE,
    }
}

/// Viridis at `t` in 0..1 (NaN and out-of-range values are clamped; NaN reads as 0).
#[must_use]
pub fn viridis(t: f32) -> Rgb<u8> {
    // Eleven samples of the published table, interpolated linearly.
    const STOPS: [[u8; 3]; 11] = [
        [68, 1, 84],
        [72, 36, 117],
        [65, 68, 135],
        [53, 95, 141],
        [42, 120, 142],
        [33, 145, 140],
        [34, 168, 132],
        [68, 191, 112],
        [122, 209, 81],
        [189, 223, 38],
        [253, 231, 37],
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * (STOPS.len() - 1) as f32;
    let k = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - k as f32;
    Rgb(std::array::from_fn(|c| {
        let (a, b) = (f32::from(STOPS[k][c]), f32::from(STOPS[k + 1][c]));
        (a + (b - a) * f).round() as u8
    }))
}

/// `a` mixed with `b`: `k` 0 is `a`, 1 is `b`.
#[must_use]
pub fn mix(a: Rgb<u8>, b: Rgb<u8>, k: f32) -> Rgb<u8> {
    Rgb(std::array::from_fn(|c| {
        (f32::from(a.0[c]) * (1.0 - k) + f32::from(b.0[c]) * k).round() as u8
    }))
}

/// `c` scaled by `k` (shading).
#[must_use]
pub fn shade(c: Rgb<u8>, k: f32) -> Rgb<u8> {
    Rgb(c.0.map(|x| (f32::from(x) * k).clamp(0.0, 255.0) as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viridis_ends_and_order() {
        assert_eq!(viridis(0.0), Rgb([68, 1, 84]));
        assert_eq!(viridis(1.0), Rgb([253, 231, 37]));
        assert_eq!(viridis(f32::NAN), viridis(0.0));
        // Lightness rises monotonically, so the order survives any colour deficiency.
        let luma = |c: Rgb<u8>| {
            0.3 * f32::from(c.0[0]) + 0.59 * f32::from(c.0[1]) + 0.11 * f32::from(c.0[2])
        };
        let l: Vec<f32> = (0..=100).map(|i| luma(viridis(i as f32 / 100.0))).collect();
        assert!(l.windows(2).all(|w| w[1] >= w[0]), "{l:?}");
    }
}
