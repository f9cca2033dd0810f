//! Every command's picture on a built-in scene, compared with a reviewed reference kept in
//! `tests/snapshots/`. A picture may differ from its reference in a small share of pixels
//! ([`MAX_DIFFERING`]): the GPU and CPU backends, and drivers, may disagree on a few cells of a
//! rendered cover field or on a tie; anything more is a changed picture and fails.
//!
//! After a deliberate change, `SIGHTLINE_BLESS=1 cargo test --release --test pictures`
//! rewrites the references; look at every one before committing it. A failing case leaves the
//! picture it drew and an image of the differing pixels (red) in the folder it names.
//!
//! Pictures are drawn with `--backend gpu` when `SIGHTLINE_REQUIRE_GPU=1` (CI: fail, never
//! skip, without an adapter) and `auto` otherwise; [`cpu_backend_draws_the_same_pictures`]
//! draws two of them on the CPU backend against the same references.

use image::{Rgb, RgbImage};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Largest share of pixels that may differ from the reference by more than [`CHANNEL`].
const MAX_DIFFERING: f64 = 0.01;
/// Difference in any channel (0-255) below which a pixel counts as equal.
const CHANNEL: i16 = 40;

fn references() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots")
}

fn backend() -> &'static str {
    if std::env::var("SIGHTLINE_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        "gpu"
    } else {
        "auto"
    }
}

/// Runs `sightline` with `args` (plus the backend) in a fresh folder, returns the folder.
fn draw(case: &str, backend: &str, args: &[&str]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("pictures")
        .join(format!("{case}-{backend}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sightline"))
        .args(args)
        .args(["--backend", backend])
        .current_dir(&dir)
        .env("NODEVICE_SELECT", "1")
        .output()
        .expect("run sightline");
    assert!(
        out.status.success(),
        "{case}: sightline {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// Compares `dir/file` with the reference `name.png` (or writes it when blessing).
fn check(dir: &Path, file: &str, name: &str) {
    let got_path = dir.join(file);
    let got = image::open(&got_path)
        .unwrap_or_else(|e| panic!("{}: {e}", got_path.display()))
        .to_rgb8();
    let reference = references().join(format!("{name}.png"));
    if std::env::var("SIGHTLINE_BLESS").is_ok_and(|v| v == "1") {
        got.save(&reference).unwrap();
        eprintln!("blessed {}", reference.display());
        return;
    }
    let want = image::open(&reference)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (draw it with SIGHTLINE_BLESS=1 and review it)",
                reference.display()
            )
        })
        .to_rgb8();
    assert_eq!(
        got.dimensions(),
        want.dimensions(),
        "{name}: the picture's size changed (drawn: {})",
        got_path.display()
    );
    let mut diff = RgbImage::new(got.width(), got.height());
    let mut differing = 0usize;
    for (x, y, g) in got.enumerate_pixels() {
        let w = want.get_pixel(x, y);
        let d = (0..3)
            .map(|c| (i16::from(g.0[c]) - i16::from(w.0[c])).abs())
            .max()
            .unwrap();
        let grey = (u16::from(w.0[0]) + u16::from(w.0[1]) + u16::from(w.0[2])) / 6;
        diff.put_pixel(
            x,
            y,
            if d > CHANNEL {
                differing += 1;
                Rgb([255, 0, 0])
            } else {
                Rgb([grey as u8; 3])
            },
        );
    }
    let share = differing as f64 / (got.width() * got.height()) as f64;
    if share > MAX_DIFFERING {
        let diff_path = dir.join(format!("{name}-diff.png"));
        diff.save(&diff_path).unwrap();
        panic!(
            "{name}: {:.2} % of the pixels differ from {} (at most {:.2} % may): drawn {}, \
             differences in red {}",
            100.0 * share,
            reference.display(),
            100.0 * MAX_DIFFERING,
            got_path.display(),
            diff_path.display()
        );
    }
    eprintln!("{name}: {:.3} % of the pixels differ", 100.0 * share);
}

/// One picture: `args` must write `file`, compared with `name`.
fn case(name: &str, file: &str, args: &[&str]) {
    let dir = draw(name, backend(), args);
    check(&dir, file, name);
}

/// The scene alone, part of `village` with the roofed room.
const MAP: &[&str] = &[
    "map",
    "--scene",
    "village",
    "--area=-30,0,-5,25",
    "--width",
    "384",
    "--png",
    "map.png",
];

/// The cover field around the room's window against two observers.
const FIELD: &[&str] = &[
    "cover-field",
    "--scene",
    "village",
    "--center=-19,0,12",
    "--observer=-20.6,1.5,11.5",
    "--observer=0,1.7,0",
    "--size",
    "30",
    "--width",
    "384",
    "--png",
    "field.png",
];

#[test]
fn map() {
    case("map", "map.png", MAP);
}

#[test]
fn viewshed() {
    case(
        "viewshed",
        "viewshed.png",
        &[
            "viewshed",
            "--scene",
            "village",
            "--cell",
            "0.5",
            "--width",
            "720",
            "--png",
            "viewshed.png",
        ],
    );
}

#[test]
fn cover_dense() {
    case(
        "cover-dense",
        "cover.png",
        &[
            "cover",
            "--scene",
            "rock",
            "--agent=5,0,0",
            "--observer=30,1.7,0",
            "--width",
            "384",
            "--png",
            "cover.png",
        ],
    );
}

#[test]
fn cover_sensor_grid() {
    case(
        "cover-sensor-grid",
        "cover.png",
        &[
            "cover",
            "--scene",
            "village",
            "--agent=-19,0.05,12",
            "--observer=-20.6,1.5,11.5",
            "--mask",
            "concealment",
            "--method",
            "sensor-grid",
            "--waypoints",
            "--width",
            "720",
            "--png",
            "cover.png",
        ],
    );
}

#[test]
fn cover_field() {
    case("cover-field", "field.png", FIELD);
}

#[test]
fn navgraph() {
    case(
        "navgraph",
        "graph.png",
        &[
            "navgraph",
            "--scene",
            "sniper",
            "--spacing",
            "4",
            "--width",
            "384",
            "--png",
            "graph.png",
        ],
    );
}

#[test]
fn tpm() {
    case(
        "tpm",
        "heat.png",
        &[
            "tpm",
            "--scene",
            "sniper",
            "--spacing",
            "4",
            "--member=-10,20",
            "--member=-5,20",
            "--seconds",
            "5",
            "--width",
            "384",
            "--png",
            "heat.png",
        ],
    );
}

#[test]
fn fireteam() {
    let args = [
        "fireteam",
        "--scene",
        "sniper",
        "--spacing",
        "4",
        "--from=-30,20",
        "--to",
        "30,-20",
        "--out",
        "run",
        "--width",
        "384",
    ];
    let dir = draw("fireteam", backend(), &args);
    for (file, name) in [
        ("run/frames.png", "fireteam-frames"),
        ("run/tpm.png", "fireteam-tpm"),
        ("run/cover.png", "fireteam-cover"),
    ] {
        check(&dir, file, name);
    }
}

#[test]
fn terrain() {
    case(
        "terrain",
        "sniping.png",
        &[
            "terrain",
            "--scene",
            "sniper",
            "--spacing",
            "4",
            "--query",
            "sniping",
            "--dir",
            "east",
            "--width",
            "384",
            "--png",
            "sniping.png",
        ],
    );
}

#[test]
fn predict() {
    case(
        "predict",
        "predict.png",
        &[
            "predict",
            "--scene",
            "sniper",
            "--seen",
            "26.8,0,-14.9",
            "--velocity",
            "0,0,2",
            "--since",
            "2",
            "--observer=-10,1.7,-14",
            "--width",
            "384",
            "--png",
            "predict.png",
        ],
    );
}

#[test]
fn ringgraph() {
    case(
        "ringgraph",
        "ring.png",
        &[
            "ringgraph",
            "--scene",
            "village",
            "--at=10,0,-5",
            "--threat=10,1.6,-20",
            "--threat=-45,1.6,40",
            "--rings",
            "12",
            "--per-ring",
            "16",
            "--radius",
            "30",
            "--width",
            "384",
            "--json",
            "ring.json",
            "--png",
            "ring.png",
        ],
    );
}

#[test]
fn table_views() {
    let args = [
        "precompute",
        "--scene",
        "rock",
        "--spacing",
        "4",
        "--range",
        "40",
        "--out",
        "rock.slt",
        "--view",
        "10",
        "--width",
        "384",
        "--png",
        "view.png",
    ];
    let dir = draw("precompute-view", backend(), &args);
    check(&dir, "view.png", "precompute-view");
    // The same view from the file alone: no scene to draw under it.
    let out = Command::new(env!("CARGO_BIN_EXE_sightline"))
        .args([
            "inspect",
            "rock.slt",
            "--view",
            "10",
            "--width",
            "384",
            "--png",
            "inspect.png",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check(&dir, "inspect.png", "inspect-view");
}

#[test]
fn cpu_backend_draws_the_same_pictures() {
    let dir = draw("map", "cpu", MAP);
    check(&dir, "map.png", "map");
    let dir = draw("cover-field", "cpu", FIELD);
    check(&dir, "field.png", "cover-field");
}

#[test]
fn a_picture_too_wide_or_narrow_is_refused() {
    for w in ["64", "100000"] {
        let out = Command::new(env!("CARGO_BIN_EXE_sightline"))
            .args(["map", "--scene", "rock", "--width", w, "--png", "x.png"])
            .current_dir(env!("CARGO_TARGET_TMPDIR"))
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("pictures are 128 to 8192 pixels wide"),
            "{err}"
        );
    }
}
