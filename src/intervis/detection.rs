//! The ACQUIRE-style target acquisition model: how likely an observer is to detect a target
//! from its exposed solid angle and its contrast to the background (the intervis parameters of
//! Darken, McCue and Guerrero, after Darken and Jones 2007's adaptation of ACQUIRE to 3D scenes).
//!
//! The chain, each step a function here:
//!
//! 1. [`resolvable_frequency_cpd`]: the highest spatial frequency the naked eye resolves at the
//!    target's contrast `C`, where the eye's contrast threshold [`eye_contrast_threshold`] rises
//!    to `C`.
//! 2. [`resolvable_cycles`]: `N = f_max * theta`, cycles across the critical dimension
//!    `theta = sqrt(solid angle)` (ACQUIRE's two-dimensional critical dimension, the square root
//!    of the exposed area, here as an angle).
//! 3. [`p_infinity`]: the target transfer probability function
//!    `P_inf = (N/N50)^E / (1 + (N/N50)^E)`, `E = 2.7 + 0.7 N/N50`.
//! 4. [`p_detect`]: time-limited search, `P(t) = P_inf (1 - exp(-t P_inf / tau))`.
//!
//! Sources: Johnson, "Analysis of image forming systems" (1958) for cycles-across-the-target
//! criteria; the US Army NVESD ACQUIRE model for the two-dimensional critical dimension, the
//! 2D detection `N50 = 0.75` and the TTPF exponent (as given in Driggers, Cox and Edwards,
//! *Introduction to Infrared and Electro-Optical Systems*, 1999, ch. on target acquisition;
//! Vollmerhausen and Jacobs, "The targeting task performance metric", NVESD 2004); the
//! search time constant `tau = 3.4 s` from the sightline issue (ACQUIRE's `tau = 3.4 / P_inf`
//! mean acquisition time for a target in the field of view). The eye is modelled directly
//! (no sensor, no display, no atmosphere): the contrast is the one the intervis render
//! measured at the observer, `C = |B_t - B_b| / B_b`.
//!
//! Every function is total: NaN, negative or infinite inputs never panic. A NaN or negative
//! solid angle, contrast, cycle count or time counts as "nothing to see" (0 cycles, 0
//! probability); probabilities are clamped to `[0, 1]`. Parameters that make no sense
//! (`n50 <= 0`, `tau_seconds <= 0`, a peak threshold outside `(0, 1)`, a cutoff `<= 0`, or any
//! NaN) also give 0.

use crate::intervis::IntervisRecord;

/// Parameters of the acquisition model, with their sources.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AcquireParams {
    /// Cycles across the critical dimension for 50 % detection (`N50`). 0.75 is ACQUIRE's 2D
    /// detection criterion with critical dimension `sqrt(area)` (Driggers et al. 1999; NVESD).
    /// Johnson's 1D criterion across the target's minimum dimension is 1.0 ± 0.25 (1958).
    pub n50: f32,
    /// Time constant of the time-limited search, seconds: `P(t) = P_inf (1 - exp(-t P_inf /
    /// tau))`. 3.4 s (ACQUIRE's field-of-view search; the value the sightline issue gives).
    pub tau_seconds: f32,
    /// The eye's lowest contrast threshold `C0` (the inverse of the peak of the contrast
    /// sensitivity function). 0.002: Barten's (1999) CSF peaks near 500 at 100 cd/m^2 and a
    /// 10 degree field; Campbell and Robson (1968) measured peaks of a few hundred.
    pub eye_peak_threshold: f32,
    /// The eye's resolution limit `f_lim` in cycles per degree, where the threshold reaches
    /// contrast 1. 60 cycles/degree: the foveal cone sampling (Nyquist) limit (Curcio et al.
    /// 1990), the interferometric acuity limit of Campbell and Green (1965).
    pub eye_cutoff_cpd: f32,
}

impl AcquireParams {
    /// Daylight naked-eye detection: `N50 = 0.75`, `tau = 3.4 s`, `C0 = 0.002`, 60 cycles/degree.
    #[must_use]
    pub const fn standard() -> Self {
        Self {
            n50: 0.75,
            tau_seconds: 3.4,
            eye_peak_threshold: 0.002,
            eye_cutoff_cpd: 60.0,
        }
    }

    /// True when every parameter is finite and in range (see the module documentation).
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.n50 > 0.0
            && self.n50.is_finite()
            && self.tau_seconds > 0.0
            && self.tau_seconds.is_finite()
            && self.eye_peak_threshold > 0.0
            && self.eye_peak_threshold < 1.0
            && self.eye_cutoff_cpd > 0.0
            && self.eye_cutoff_cpd.is_finite()
    }
}

impl Default for AcquireParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// The eye's contrast threshold at spatial frequency `f_cpd` (cycles per degree), on its
/// high-frequency branch: the exponential fit `C_t(f) = C0 exp(f / f_c)` with the two anchors
/// `C_t(0) = C0` and `C_t(f_lim) = 1`, so `f_c = f_lim / ln(1 / C0)` (9.65 cycles/degree for the
/// standard parameters). The exponential fall of sensitivity above the CSF peak is Campbell and
/// Robson's (1968) observation and the asymptote of Barten's (1999) CSF; with the standard
/// anchors the resolvable frequency it gives is within about 15 % of Barten's (100 cd/m^2,
/// 10 degree field) for contrasts from 0.03 to 1. The low-frequency roll-off is not modelled:
/// detection needs only the highest resolvable frequency. NaN or negative `f_cpd` reads as 0;
/// invalid parameters give infinity (nothing is visible).
#[must_use]
pub fn eye_contrast_threshold(f_cpd: f32, p: &AcquireParams) -> f32 {
    if !p.is_valid() {
        return f32::INFINITY;
    }
    let c0 = f64::from(p.eye_peak_threshold);
    let f = if f_cpd > 0.0 { f64::from(f_cpd) } else { 0.0 };
    // C0 * (1 / C0)^(f / f_lim) = C0^(1 - f / f_lim).
    (c0.powf(1.0 - f / f64::from(p.eye_cutoff_cpd))) as f32
}

/// The highest spatial frequency (cycles per degree) the eye resolves at contrast `contrast`:
/// where [`eye_contrast_threshold`] equals it, `f = f_lim ln(C / C0) / ln(1 / C0)`, clamped to
/// `[0, f_lim]`. 0 when the contrast is below `C0`, NaN or negative; `f_lim` from contrast 1 up.
#[must_use]
pub fn resolvable_frequency_cpd(contrast: f32, p: &AcquireParams) -> f32 {
    if !p.is_valid() || contrast.is_nan() || contrast <= p.eye_peak_threshold {
        return 0.0;
    }
    if contrast >= 1.0 {
        return p.eye_cutoff_cpd;
    }
    let c0 = f64::from(p.eye_peak_threshold);
    let f = f64::from(p.eye_cutoff_cpd) * (f64::from(contrast) / c0).ln() / (1.0 / c0).ln();
    (f as f32).clamp(0.0, p.eye_cutoff_cpd)
}

/// Resolvable cycles `N` across the target: the resolvable frequency (in cycles per radian)
/// times the critical dimension `theta = sqrt(solid_angle_sr)` radians, the square root of the
/// exposed area's solid angle (ACQUIRE's 2D critical dimension, `sqrt(area) / range`). The solid
/// angle is clamped to `4 pi`; NaN or negative solid angle or contrast give 0.
#[must_use]
pub fn resolvable_cycles(solid_angle_sr: f32, contrast: f32, p: &AcquireParams) -> f32 {
    if solid_angle_sr.is_nan() || solid_angle_sr <= 0.0 {
        return 0.0;
    }
    let omega = f64::from(solid_angle_sr).min(4.0 * std::f64::consts::PI);
    // Cycles per degree to cycles per radian: a radian spans 180 / pi degrees.
    let f_per_rad =
        f64::from(resolvable_frequency_cpd(contrast, p)) * (180.0 / std::f64::consts::PI);
    (f_per_rad * omega.sqrt()) as f32
}

/// ACQUIRE's target transfer probability function, the probability of detection given
/// unlimited time: `P_inf = x^E / (1 + x^E)` with `x = N / N50` and `E = 2.7 + 0.7 x`.
/// `P_inf(0) = 0`, `P_inf(N50) = 0.5` exactly, strictly increasing in `N` (`d ln x^E / dx =
/// 0.7 ln x + E / x > 0`), tending to 1. Evaluated as `1 / (1 + x^-E)` in f64, so huge `N`
/// gives 1, never NaN. NaN or negative `cycles` give 0.
#[must_use]
pub fn p_infinity(cycles: f32, p: &AcquireParams) -> f32 {
    if !p.is_valid() || cycles.is_nan() || cycles <= 0.0 {
        return 0.0;
    }
    let x = f64::from(cycles) / f64::from(p.n50);
    let e = 2.7 + 0.7 * x;
    (1.0 / (1.0 + x.powf(-e))).clamp(0.0, 1.0) as f32
}

/// Detection probability of a search lasting `seconds`:
/// `P(t) = P_inf (1 - exp(-t P_inf / tau))`. 0 at `t = 0`, increasing in `t`, tending to
/// `P_inf` (reached at `t = inf`). NaN or negative `p_inf` or `seconds` give 0; `p_inf` is
/// clamped to 1.
#[must_use]
pub fn p_detect(p_inf: f32, seconds: f32, p: &AcquireParams) -> f32 {
    if !p.is_valid() || p_inf.is_nan() || p_inf <= 0.0 || seconds.is_nan() || seconds <= 0.0 {
        return 0.0;
    }
    let p_inf = f64::from(p_inf.min(1.0));
    let rate = f64::from(seconds) * p_inf / f64::from(p.tau_seconds);
    // 1 - exp(-r) as -expm1(-r): exact for short glimpses, 1 for an infinite one.
    (p_inf * -(-rate).exp_m1()).clamp(0.0, 1.0) as f32
}

/// The detection probability for one intervis record (its exposed `solid_angle` and
/// `contrast`) and a glimpse of `seconds`: [`p_detect`] of [`p_infinity`] of
/// [`resolvable_cycles`]. This is the probability the threat model and the fireteam use.
#[must_use]
pub fn detection_probability(record: &IntervisRecord, seconds: f32, p: &AcquireParams) -> f32 {
    let n = resolvable_cycles(record.solid_angle, record.contrast, p);
    p_detect(p_infinity(n, p), seconds, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_and_frequency_are_inverse() {
        let p = AcquireParams::standard();
        for c in [0.003_f32, 0.01, 0.05, 0.3, 0.9] {
            let f = resolvable_frequency_cpd(c, &p);
            assert!(
                (eye_contrast_threshold(f, &p) - c).abs() < 1e-4 * c.max(0.01),
                "c {c}"
            );
        }
        assert_eq!(eye_contrast_threshold(0.0, &p), p.eye_peak_threshold);
        assert!((eye_contrast_threshold(60.0, &p) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn invalid_params_give_zero() {
        let mut p = AcquireParams::standard();
        p.n50 = 0.0;
        assert_eq!(p_infinity(5.0, &p), 0.0);
        let mut p = AcquireParams::standard();
        p.eye_peak_threshold = f32::NAN;
        assert_eq!(resolvable_cycles(1e-3, 0.5, &p), 0.0);
    }
}
