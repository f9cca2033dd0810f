//! The command line against a hostile user: every numeric option of every command is swept over
//! values no one should pass (zero, negative, NaN, infinite, tiny, huge), and broken input files
//! are fed to every reader. Each run must end within a time limit under a 4 GiB address-space
//! cap (so a huge allocation fails instead of succeeding slowly), and end either in success or in
//! a clear `error:` line and a failing exit status: never a panic, an abort or a hang.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Address space allowed (KiB): lavapipe is not used (CPU backend), so 4 GiB is ample for
/// every honest run on `village`.
const CAP_KIB: u64 = 4 << 20;
const LIMIT: Duration = Duration::from_secs(60);

struct Run {
    code: Option<i32>,
    text: String,
    secs: f64,
}

fn run(args: &[String]) -> Run {
    let t = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {CAP_KIB}; exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_sightline"))
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the sightline binary");
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).ok();
        s
    });
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if t.elapsed() > LIMIT {
            child.kill().ok();
            child.wait().ok();
            break Some(-999);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        code,
        text: reader.join().unwrap(),
        secs: t.elapsed().as_secs_f64(),
    }
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sightline-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A failure description, or `None` when the run ended acceptably.
fn judge(args: &[String], r: &Run, must_fail: bool) -> Option<String> {
    let what = format!("`sightline {}`", args.join(" "));
    let tail: String = r.text.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
    if r.code == Some(-999) {
        return Some(format!("{what}: still running after {LIMIT:?}"));
    }
    if r.text.contains("panicked") || r.text.contains("memory allocation") || r.code.is_none() {
        return Some(format!("{what}: crashed ({:?}): {tail}", r.code));
    }
    match r.code {
        Some(0) if must_fail => Some(format!("{what}: succeeded on bad input: {tail}")),
        Some(0) => None,
        Some(1 | 2) if r.text.contains("error") => None,
        c => Some(format!("{what}: exit {c:?} without a clear error: {tail}")),
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn every_numeric_option_survives_values_no_one_should_pass() {
    let out = tmp("out");
    let o = out.to_str().unwrap();
    let png = tmp("p.png");
    let p = png.to_str().unwrap();
    let base = |cmd: &'static str| -> Vec<&str> {
        let mut v = vec![cmd, "--scene", "village", "--backend", "cpu"];
        match cmd {
            "viewshed" => v.extend(["--png", p]),
            "cover" => v.extend(["--agent", "5,0,5", "--observer", "20,2,20"]),
            "cover-field" => v.extend(["--center", "5,0,5", "--observer", "20,2,20"]),
            "precompute" => v.extend(["--spacing", "4", "--out", o]),
            "navgraph" => v.extend(["--spacing", "4"]),
            "tpm" => v.extend(["--spacing", "4", "--member", "5,5", "--seconds", "3"]),
            "fireteam" => v.extend(["--spacing", "4", "--from", "-30,-30", "--to", "30,30"]),
            "terrain" => v.extend(["--spacing", "4", "--query", "ambush", "--trips", "50"]),
            "predict" => v.extend([
                "--spacing",
                "4",
                "--seen=5,0,5",
                "--velocity=1,0,0",
                "--since",
                "2",
                "--observer=20,2,20",
            ]),
            _ => unreachable!(),
        }
        v
    };
    let options: &[(&str, &[&str])] = &[
        ("viewshed", &["--cell", "--detail", "--seed"]),
        ("cover", &["--radius", "--detail"]),
        ("cover-field", &["--size", "--cell"]),
        ("precompute", &["--spacing", "--range", "--stairs-cost"]),
        ("navgraph", &["--spacing", "--water-cost", "--crouch-cost"]),
        (
            "tpm",
            &["--seconds", "--frame", "--sectors", "--fov", "--spacing"],
        ),
        ("terrain", &["--horizon", "--trips", "--spacing"]),
        ("predict", &["--since", "--step", "--slack", "--min-speed"]),
        (
            "fireteam",
            &[
                "--members",
                "--teams",
                "--lookahead",
                "--max-seconds",
                "--range",
            ],
        ),
    ];
    let values = ["0", "-1", "NaN", "inf", "1e-30", "1e30", "4000000000"];
    let mut failures = Vec::new();
    let (mut runs, mut refused) = (0, 0);
    let t = Instant::now();
    for (cmd, opts) in options {
        for opt in *opts {
            for value in values {
                let mut args = strings(&base(cmd));
                args.extend([opt.to_string(), value.to_string()]);
                let r = run(&args);
                runs += 1;
                refused += usize::from(r.code != Some(0));
                if let Some(f) = judge(&args, &r, false) {
                    failures.push(f);
                }
                if r.secs > 20.0 {
                    eprintln!("slow ({:.1} s): {}", r.secs, args.join(" "));
                }
            }
        }
    }
    eprintln!(
        "{runs} runs, {refused} refused with an error, {} failures, {:.0} s",
        failures.len(),
        t.elapsed().as_secs_f64()
    );
    // Most of these values are nonsense for most options; some (a huge range, seed 0) are fine.
    assert!(
        refused > runs / 2 && refused < runs,
        "{refused} of {runs} refused"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ringgraph_refuses_every_bad_number() {
    // Every value here is out of range for its option (a zero clamp is allowed, so it is not
    // swept; nor is a tiny radius); each must be refused with an error, whatever stage sees it.
    let cases: &[(&str, &[&str])] = &[
        (
            "--rings",
            &["0", "-1", "NaN", "inf", "1e30", "4000000000", "257"],
        ),
        (
            "--per-ring",
            &["0", "-1", "NaN", "inf", "1e30", "4000000000", "2"],
        ),
        (
            "--radius",
            &["0", "-1", "NaN", "inf", "-inf", "1e30", "4000000000"],
        ),
        ("--clamp", &["-1", "NaN", "inf", "1e30", "1.5"]),
        (
            "--at",
            &[
                "NaN,0,0",
                "inf,0,0",
                "0,-inf,0",
                "1e30,0,0",
                "-4000000000,0,0",
                "0,0",
                "5000,0,5000",
            ],
        ),
        (
            "--threat",
            &[
                "NaN,1.6,0",
                "inf,1.6,0",
                "0,1.6,-inf",
                "1e30,1.6,0",
                "-4000000000,1.6,0",
                "1,2",
            ],
        ),
    ];
    let base = ["ringgraph", "--scene", "village", "--backend", "cpu"];
    let mut failures = Vec::new();
    for (opt, values) in cases {
        for value in *values {
            let mut args = strings(&base);
            if *opt != "--at" {
                args.push("--at=-19,0.05,12".into());
            }
            if *opt != "--threat" {
                args.push("--threat=10,1.6,-20".into());
            }
            args.push(format!("{opt}={value}"));
            if let Some(f) = judge(&args, &run(&args), true) {
                failures.push(f);
            }
        }
    }
    // Too many nodes in all, each count allowed on its own.
    let mut args = strings(&base);
    args.extend(strings(&[
        "--at=-19,0.05,12",
        "--threat=10,1.6,-20",
        "--rings=256",
        "--per-ring=1024",
    ]));
    if let Some(f) = judge(&args, &run(&args), true) {
        failures.push(f);
    }
    // No threat: nothing to take cover from.
    let mut args = strings(&base);
    args.push("--at=-19,0.05,12".into());
    let r = run(&args);
    if let Some(f) = judge(&args, &r, true) {
        failures.push(f);
    } else if !r.text.contains("at least one --threat") {
        failures.push(format!("no --threat: unclear message: {}", r.text));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn broken_input_files_are_errors_naming_the_file() {
    let files: &[(&str, &str)] = &[
        ("empty.csv", ""),
        ("header-only.csv", "x,y,z\n"),
        ("hex.csv", "0x1p3,0,0\n1,2,3\n"),
        ("letter-o.csv", "1O,2,3\n4,5,6\n"),
        ("object.csv", "{\"points\": [[1, 2, 3], [4, 5, 6]]}\n"),
        ("far.csv", "0,0,0\n1e30,0,0\n"),
        ("binary.csv", "\u{0}\u{1}\u{2}\u{ff}"),
        ("short.json", "[[1, 2, 3], [4, 5]]"),
    ];
    let mut failures = Vec::new();
    for (name, body) in files {
        let path = tmp(name);
        std::fs::write(&path, body).unwrap();
        let f = path.to_str().unwrap();
        for args in [
            strings(&[
                "precompute",
                "--scene",
                "village",
                "--backend",
                "cpu",
                "--waypoints",
                f,
                "--out",
                tmp("w.slt").to_str().unwrap(),
            ]),
            strings(&[
                "trace",
                "--scene",
                "village",
                "--backend",
                "cpu",
                "--segments",
                f,
                "--out",
                tmp("t.csv").to_str().unwrap(),
            ]),
            strings(&[
                "navgraph",
                "--scene",
                "village",
                "--backend",
                "cpu",
                "--graph",
                f,
            ]),
        ]
        .into_iter()
        .chain(["--keys", "--areas", "--experience"].map(|opt| {
            strings(&[
                "terrain",
                "--scene",
                "village",
                "--backend",
                "cpu",
                "--spacing",
                "4",
                opt,
                f,
            ])
        })) {
            let r = run(&args);
            if let Some(fail) = judge(&args, &r, true) {
                failures.push(fail);
            } else if !r.text.contains(name) {
                failures.push(format!(
                    "{}: the error does not name {name}: {}",
                    args[0], r.text
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn segments_are_traced_exactly_as_written() {
    // Zero-length segments cross nothing; long ones report finite distances; a header is
    // skipped only when it is one.
    let seg = tmp("segs.csv");
    std::fs::write(
        &seg,
        "x0,y0,z0,x1,y1,z1\n1,1,1,1,1,1\n-1e8,0.5,3,1e8,0.5,3\n0,50,0,0,-50,0\n",
    )
    .unwrap();
    let out = tmp("hits.csv");
    let args = strings(&[
        "trace",
        "--scene",
        "village",
        "--backend",
        "cpu",
        "--segments",
        seg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let r = run(&args);
    assert_eq!(r.code, Some(0), "{}", r.text);
    let text = std::fs::read_to_string(&out).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 4, "{text}");
    assert_eq!(rows[1], "0,,", "a zero-length segment hits nothing");
    for row in &rows[2..] {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(f[0], "1", "{row}");
        let d: f64 = f[1].parse().unwrap();
        assert!(d.is_finite() && d > 0.0, "{row}");
    }
}

#[test]
fn a_segment_longer_than_the_limit_is_refused_for_its_span() {
    // Both ends within 1e9 m of the origin, 1.8e9 m apart along x.
    let seg = tmp("long-segs.csv");
    std::fs::write(
        &seg,
        "x0,y0,z0,x1,y1,z1\n0,1,0,5,1,0\n-9e8,0.5,3,9e8,0.5,3\n",
    )
    .unwrap();
    let args = strings(&[
        "trace",
        "--scene",
        "village",
        "--backend",
        "cpu",
        "--segments",
        seg.to_str().unwrap(),
        "--out",
        tmp("long-hits.csv").to_str().unwrap(),
    ]);
    let r = run(&args);
    assert_ne!(r.code, Some(0), "{}", r.text);
    assert!(
        r.text.contains("long-segs.csv:3")
            && r.text.contains("spans 1.8e9 m along x")
            && r.text.contains("limit of 1e9 m")
            && r.text.contains("split it")
            && !r.text.contains("origin;"),
        "{}",
        r.text
    );
}

#[test]
fn no_loader_noise_without_a_desktop_session() {
    // On a server or in CI there is no XDG_RUNTIME_DIR; the user did nothing wrong, so no
    // "error:" line may appear when the GPU backend starts.
    let o = Command::new(env!("CARGO_BIN_EXE_sightline"))
        .args(["viewshed", "--scene", "rock", "--backend", "gpu"])
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("NODEVICE_SELECT")
        .env("WGPU_BACKEND", "vulkan")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        !err.contains("XDG_RUNTIME_DIR") && !err.contains("error"),
        "{err}"
    );
}

#[test]
fn a_table_of_one_waypoint_is_refused() {
    let one = tmp("one.csv");
    std::fs::write(&one, "1,2,3\n").unwrap();
    let args = strings(&[
        "precompute",
        "--scene",
        "village",
        "--backend",
        "cpu",
        "--waypoints",
        one.to_str().unwrap(),
        "--out",
        tmp("one.slt").to_str().unwrap(),
    ]);
    let r = run(&args);
    assert_eq!(judge(&args, &r, true), None);
    assert!(r.text.contains("at least 2"), "{}", r.text);
}

#[test]
fn a_table_from_other_geometry_is_refused() {
    let table = tmp("rock.slt");
    let args = strings(&[
        "precompute",
        "--scene",
        "rock",
        "--backend",
        "cpu",
        "--spacing",
        "4",
        "--out",
        table.to_str().unwrap(),
    ]);
    let r = run(&args);
    assert_eq!(r.code, Some(0), "{}", r.text);
    // The same table with the scene it was computed on is accepted; with another seed of the
    // same scene (other geometry) it is refused, saying to recompute.
    for (seed, ok) in [("1", true), ("2", false)] {
        let args = strings(&[
            "tpm",
            "--scene",
            "rock",
            "--seed",
            seed,
            "--backend",
            "cpu",
            "--table",
            table.to_str().unwrap(),
            "--member",
            "0,0",
            "--seconds",
            "2",
        ]);
        let r = run(&args);
        if ok {
            assert_eq!(r.code, Some(0), "{}", r.text);
        } else {
            assert_eq!(judge(&args, &r, true), None);
            assert!(r.text.contains("recompute"), "{}", r.text);
        }
    }
}
