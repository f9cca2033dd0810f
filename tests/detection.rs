//! The ACQUIRE-style detection model: the curve's known points, the time law against the
//! formula in f64, monotonicity over grids, bad inputs, and a person's range curve.

use sightline::intervis::detection::*;
use sightline::intervis::IntervisRecord;

const P: AcquireParams = AcquireParams::standard();

/// `P_inf` in f64 straight from the published formula.
fn p_inf_f64(n: f64, n50: f64) -> f64 {
    let x = n / n50;
    let e = 2.7 + 0.7 * x;
    x.powf(e) / (1.0 + x.powf(e))
}

#[test]
fn standard_is_default_and_valid() {
    assert_eq!(AcquireParams::default(), P);
    assert!(P.is_valid());
    assert_eq!(P.n50, 0.75);
    assert_eq!(P.tau_seconds, 3.4);
}

#[test]
fn p_infinity_known_points() {
    assert_eq!(p_infinity(0.0, &P), 0.0);
    assert_eq!(p_infinity(P.n50, &P), 0.5);
    // N = 2 N50: E = 4.1, 2^4.1 / (1 + 2^4.1).
    let two = p_infinity(2.0 * P.n50, &P);
    assert!((f64::from(two) - 0.9449).abs() < 1e-4, "{two}");
    assert!((f64::from(two) - p_inf_f64(2.0, 1.0)).abs() < 1e-6);
    // N = N50 / 2: E = 3.05, 0.5^3.05 / (1 + 0.5^3.05).
    let half = p_infinity(0.5 * P.n50, &P);
    assert!((f64::from(half) - 0.1077).abs() < 1e-4, "{half}");
    assert!((f64::from(half) - p_inf_f64(0.5, 1.0)).abs() < 1e-6);
    // Other N50s: the curve depends on N / N50 only.
    for n50 in [0.5_f32, 1.0, 3.0] {
        let q = AcquireParams { n50, ..P };
        assert_eq!(p_infinity(n50, &q), 0.5);
    }
    assert_eq!(p_infinity(1e30, &P), 1.0);
    assert_eq!(p_infinity(f32::INFINITY, &P), 1.0);
}

#[test]
fn p_infinity_matches_formula_and_increases() {
    let mut last = 0.0_f32;
    for i in 1..=2000 {
        let n = i as f32 * 0.005; // 0.005 .. 10 cycles
        let got = p_infinity(n, &P);
        let want = p_inf_f64(f64::from(n), f64::from(P.n50));
        assert!(
            (f64::from(got) - want).abs() < 1e-6,
            "N {n}: {got} vs {want}"
        );
        assert!(
            got > last || (got == last && got > 0.999),
            "not increasing at N {n}: {got} after {last}"
        );
        assert!((0.0..=1.0).contains(&got));
        last = got;
    }
}

#[test]
fn p_detect_matches_formula() {
    for p_inf in [0.1_f32, 0.5, 0.9449, 1.0] {
        for t in [0.1_f32, 0.5, 1.0, 3.4, 10.0, 60.0] {
            let (pi, tt) = (f64::from(p_inf), f64::from(t));
            let want = pi * (1.0 - (-tt * pi / 3.4).exp());
            let got = p_detect(p_inf, t, &P);
            assert!(
                (f64::from(got) - want).abs() < 1e-6,
                "{p_inf} {t}: {got} vs {want}"
            );
        }
    }
    // One time constant with certain detection: 1 - 1/e.
    let one_tau = p_detect(1.0, 3.4, &P);
    assert!((f64::from(one_tau) - (1.0 - (-1.0_f64).exp())).abs() < 1e-6);
}

#[test]
fn p_detect_limits_and_monotone_in_time() {
    for p_inf in [0.05_f32, 0.3, 0.5, 0.8, 1.0] {
        assert_eq!(p_detect(p_inf, 0.0, &P), 0.0);
        assert_eq!(p_detect(p_inf, f32::INFINITY, &P), p_inf);
        assert!((p_detect(p_inf, 1e4, &P) - p_inf).abs() < 1e-6);
        let mut last = 0.0_f32;
        for i in 1..=400 {
            let got = p_detect(p_inf, i as f32 * 0.25, &P);
            assert!(
                got >= last && got <= p_inf,
                "{p_inf} at {}: {got}",
                i as f32 * 0.25
            );
            last = got;
        }
        assert!(p_detect(p_inf, 2.0, &P) > p_detect(p_inf, 1.0, &P));
    }
    // Higher P_inf is also detected sooner.
    assert!(p_detect(0.9, 2.0, &P) > p_detect(0.5, 2.0, &P));
}

#[test]
fn resolvable_cycles_follow_the_eye_model() {
    // Contrast 1 resolves the cutoff: 60 cycles/degree across sqrt(omega) radians.
    let omega = 1e-4_f32;
    let want = 60.0 * (180.0 / std::f64::consts::PI) * f64::from(omega).sqrt();
    let got = resolvable_cycles(omega, 1.0, &P);
    assert!(
        (f64::from(got) - want).abs() < 1e-3 * want,
        "{got} vs {want}"
    );
    // Contrast at or below the peak threshold resolves nothing.
    assert_eq!(resolvable_cycles(omega, P.eye_peak_threshold, &P), 0.0);
    assert_eq!(resolvable_frequency_cpd(0.001, &P), 0.0);
    assert_eq!(resolvable_frequency_cpd(5.0, &P), 60.0);
    // N scales with sqrt(solid angle): four times the solid angle, twice the cycles.
    let a = resolvable_cycles(1e-5, 0.3, &P);
    let b = resolvable_cycles(4e-5, 0.3, &P);
    assert!((b / a - 2.0).abs() < 1e-5);
}

#[test]
fn monotone_in_size_and_contrast() {
    let omegas: Vec<f32> = (0..40).map(|i| 1e-9 * 1.6_f32.powi(i)).collect();
    let contrasts: Vec<f32> = (0..40).map(|i| 0.001 * 1.25_f32.powi(i)).collect();
    for &t in &[0.5_f32, 3.0, f32::INFINITY] {
        for (i, &w) in omegas.iter().enumerate() {
            for (j, &c) in contrasts.iter().enumerate() {
                let rec = |w: f32, c: f32| IntervisRecord {
                    solid_angle: w,
                    contrast: c,
                    ..Default::default()
                };
                let here = detection_probability(&rec(w, c), t, &P);
                assert!((0.0..=1.0).contains(&here));
                if i > 0 {
                    let smaller = detection_probability(&rec(omegas[i - 1], c), t, &P);
                    assert!(here >= smaller, "size: w {w} c {c} t {t}");
                }
                if j > 0 {
                    let fainter = detection_probability(&rec(w, contrasts[j - 1]), t, &P);
                    assert!(here >= fainter, "contrast: w {w} c {c} t {t}");
                }
                if i > 0 && j > 0 {
                    let n_here = resolvable_cycles(w, c, &P);
                    let n_less = resolvable_cycles(omegas[i - 1], contrasts[j - 1], &P);
                    assert!(n_here >= n_less);
                }
            }
        }
    }
    // And strictly where the curve is not saturated.
    assert!(resolvable_cycles(2e-7, 0.3, &P) > resolvable_cycles(1e-7, 0.3, &P));
    assert!(resolvable_cycles(1e-7, 0.3, &P) > resolvable_cycles(1e-7, 0.1, &P));
}

#[test]
fn bad_inputs_give_zero() {
    let bad = [f32::NAN, -1.0, -0.0, f32::NEG_INFINITY];
    for &x in &bad {
        assert_eq!(resolvable_cycles(x, 0.5, &P), 0.0, "solid angle {x}");
        assert_eq!(resolvable_cycles(1e-4, x, &P), 0.0, "contrast {x}");
        assert_eq!(p_infinity(x, &P), 0.0, "cycles {x}");
        assert_eq!(p_detect(x, 1.0, &P), 0.0, "p_inf {x}");
        assert_eq!(p_detect(0.9, x, &P), 0.0, "seconds {x}");
        let rec = IntervisRecord {
            solid_angle: x,
            contrast: 0.5,
            ..Default::default()
        };
        assert_eq!(detection_probability(&rec, 5.0, &P), 0.0);
        let rec = IntervisRecord {
            solid_angle: 1e-4,
            contrast: x,
            ..Default::default()
        };
        assert_eq!(detection_probability(&rec, 5.0, &P), 0.0);
    }
    // Nothing exposed: the default record.
    assert_eq!(
        detection_probability(&IntervisRecord::default(), 5.0, &P),
        0.0
    );
    // Out-of-range values are clamped, never panic.
    assert_eq!(p_detect(7.0, f32::INFINITY, &P), 1.0);
    let huge = resolvable_cycles(f32::INFINITY, f32::INFINITY, &P);
    assert!(huge.is_finite() && huge > 0.0);
    let broken = AcquireParams {
        tau_seconds: 0.0,
        ..P
    };
    assert_eq!(p_detect(0.9, 1.0, &broken), 0.0);
}

/// A standing person (0.5 m x 1.75 m, contrast 0.3) seen square-on at range R: solid angle
/// `A / R^2`, so `N = f_max sqrt(A) / R`. With `R50 = f_max sqrt(A) / N50` the known points
/// follow: `P_inf(R50) = 0.5`, `P_inf(R50 / 2) = 0.9449`, `P_inf(2 R50) = 0.1077`.
#[test]
fn person_range_curve() {
    let area = 0.5_f64 * 1.75;
    let contrast = 0.3_f32;
    let rec = |range: f64| IntervisRecord {
        solid_angle: (area / (range * range)) as f32,
        contrast,
        ..Default::default()
    };
    let f_rad = f64::from(resolvable_frequency_cpd(contrast, &P)) * 180.0 / std::f64::consts::PI;
    let r50 = f_rad * area.sqrt() / f64::from(P.n50);
    println!(
        "contrast {contrast}: f_max {:.1} cycles/degree, R50 {r50:.0} m",
        f_rad.to_radians()
    );
    println!(
        "{:>7} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "range", "N", "P_inf", "P(1s)", "P(5s)", "P(30s)"
    );
    let ranges = [
        25.0, 50.0, 100.0, 200.0, 400.0, 800.0, 1600.0, 3200.0, 6400.0,
    ];
    let mut last = [f32::INFINITY; 4];
    for &r in &ranges {
        let n = resolvable_cycles(rec(r).solid_angle, contrast, &P);
        let row = [
            p_infinity(n, &P),
            detection_probability(&rec(r), 1.0, &P),
            detection_probability(&rec(r), 5.0, &P),
            detection_probability(&rec(r), 30.0, &P),
        ];
        println!(
            "{r:>6}m {n:>8.2} {:>8.4} {:>8.4} {:>8.4} {:>8.4}",
            row[0], row[1], row[2], row[3]
        );
        for k in 0..4 {
            assert!(row[k] <= last[k], "range {r}: column {k} rose");
        }
        last = row;
    }
    // Strictly decreasing once the curve leaves saturation.
    let p_at = |r: f64| p_infinity(resolvable_cycles(rec(r).solid_angle, contrast, &P), &P);
    assert!(p_at(1600.0) > p_at(3200.0) && p_at(3200.0) > p_at(6400.0));
    assert!(p_at(25.0) > 0.9);
    assert!((p_at(r50) - 0.5).abs() < 1e-4, "{}", p_at(r50));
    assert!((p_at(r50 / 2.0) - 0.9449).abs() < 1e-3);
    assert!((p_at(2.0 * r50) - 0.1077).abs() < 1e-3);
    // A 1 s glimpse is bounded by 1 - exp(-1 / 3.4) however close the target is.
    let cap = 1.0 - (-1.0_f32 / 3.4).exp();
    assert!(detection_probability(&rec(25.0), 1.0, &P) <= cap + 1e-6);
}
