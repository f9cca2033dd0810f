//! The command line: `navgraph`, `precompute` with its nav graph, `tpm` and `fireteam`, run as a
//! user runs them; bad arguments are clear errors with a failing exit status, never panics.

use std::path::PathBuf;
use std::process::{Command, Output};

fn sightline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sightline"))
        .args(args)
        .env("WGPU_BACKEND", "vulkan")
        .output()
        .expect("run the sightline binary")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sightline-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn is_png(path: &PathBuf) -> bool {
    std::fs::read(path).is_ok_and(|b| b.len() > 1000 && b.starts_with(b"\x89PNG"))
}

#[test]
fn navgraph_writes_json_csv_and_a_picture_and_reports_components() {
    let (json, csv, png) = (tmp("g.json"), tmp("g.csv"), tmp("g.png"));
    let o = sightline(&[
        "navgraph",
        "--scene",
        "sniper",
        "--backend",
        "cpu",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--png",
        png.to_str().unwrap(),
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("components") && out.contains("the largest holds"),
        "{out}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let (nodes, edges) = (
        v["nodes"].as_array().unwrap(),
        v["edges"].as_array().unwrap(),
    );
    assert!(
        nodes.len() > 500 && edges.len() > nodes.len(),
        "{} {}",
        nodes.len(),
        edges.len()
    );
    assert_eq!(nodes[0].as_array().unwrap().len(), 3);
    assert_eq!(v["kinds"].as_array().unwrap().len(), edges.len());
    assert!(is_png(&png));
    // The written graph loads back as a user graph, in both formats, with the same counts.
    for f in [&json, &csv] {
        let o = sightline(&[
            "navgraph",
            "--scene",
            "sniper",
            "--backend",
            "cpu",
            "--graph",
            f.to_str().unwrap(),
        ]);
        let out = text(&o);
        assert!(o.status.success(), "{out}");
        assert!(
            out.contains(&format!("{} nodes, {} edges", nodes.len(), edges.len())),
            "{out}"
        );
    }
}

#[test]
fn largest_only_keeps_one_connected_component() {
    let json = tmp("largest.json");
    let o = sightline(&[
        "navgraph",
        "--scene",
        "sniper",
        "--backend",
        "cpu",
        "--largest-only",
        "--json",
        json.to_str().unwrap(),
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let n = v["nodes"].as_array().unwrap().len();
    assert!(out.contains(&format!("kept {n} of")), "{out}");
    assert_eq!(v["component_sizes"].as_array().unwrap().len(), 1);
    let labels = v["components"].as_array().unwrap();
    assert!(labels.iter().all(|l| l.as_u64() == Some(0)));
}

#[test]
fn precompute_stores_the_graph_and_tpm_reads_it() {
    let (table, heat, frames) = (tmp("s.slt"), tmp("heat.png"), tmp("tpm.json"));
    let o = sightline(&[
        "precompute",
        "--scene",
        "sniper",
        "--backend",
        "cpu",
        "--spacing",
        "4",
        "--range",
        "50",
        "--out",
        table.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = sightline(&["inspect", table.to_str().unwrap()]);
    let out = text(&o);
    assert!(
        o.status.success()
            && out.contains("nav graph:")
            && out.contains("edges")
            && out.contains("format version 3\n"),
        "{out}"
    );
    let o = sightline(&[
        "tpm",
        "--scene",
        "sniper",
        "--backend",
        "cpu",
        "--table",
        table.to_str().unwrap(),
        "--member=-30,-20",
        "--member",
        "0,0,0",
        "--seconds",
        "12",
        "--png",
        heat.to_str().unwrap(),
        "--json",
        frames.to_str().unwrap(),
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("member 0: looked at") && out.contains("member 1: looked at"),
        "{out}"
    );
    assert!(is_png(&heat));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&frames).unwrap()).unwrap();
    let f = v["frames"].as_array().unwrap();
    assert_eq!(f.len(), 12);
    assert_eq!(f[0]["gazes"].as_array().unwrap().len(), 2);
    let tpm = v["tpm"].as_array().unwrap();
    assert_eq!(tpm.len(), v["nodes"].as_array().unwrap().len());
    assert!(tpm
        .iter()
        .all(|p| (0.0..=1.0).contains(&p.as_f64().unwrap())));
    // Looking lowered the threat somewhere: the expected count fell below the prior's.
    let total = f.last().unwrap()["total"].as_f64().unwrap();
    assert!(total < 0.5 * tpm.len() as f64, "{total}");
}

#[test]
fn inspect_prints_the_files_own_format_version() {
    for (file, version) in [("v1-rock.slt", 1), ("v2-rock-nav.slt", 2)] {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(file);
        let o = sightline(&["inspect", path.to_str().unwrap()]);
        let out = text(&o);
        assert!(
            o.status.success() && out.contains(&format!("format version {version}\n")),
            "{file}: {out}"
        );
    }
}

#[test]
fn bad_arguments_are_clear_errors() {
    for (args, want) in [
        (
            vec!["navgraph", "--scene", "sniper", "--spacing", "0"],
            "spacing",
        ),
        (
            vec!["navgraph", "--scene", "sniper", "--spacing", "NaN"],
            "spacing",
        ),
        (
            vec!["navgraph", "--scene", "sniper", "--spacing", "0.001"],
            "larger spacing",
        ),
        (
            vec!["navgraph", "--scene", "no-such-scene.obj"],
            "neither a built-in scene",
        ),
        (
            vec!["navgraph", "--scene", "sniper", "--winding", "left"],
            "DirectX",
        ),
        (
            vec![
                "navgraph",
                "--scene",
                "sniper",
                "--graph",
                "/no/such/graph.json",
            ],
            "graph.json",
        ),
        (
            vec!["navgraph", "--scene", "sniper", "--stairs-cost=-1"],
            "stairs",
        ),
        (
            vec!["navgraph", "--scene", "sniper", "--area", "1,2,3"],
            "X0,Z0,X1,Z1",
        ),
        (
            vec!["tpm", "--scene", "sniper", "--member", "1,2,3,4"],
            "X,Z",
        ),
        (
            vec![
                "tpm",
                "--scene",
                "sniper",
                "--member",
                "0,0",
                "--sectors",
                "0",
            ],
            "sectors",
        ),
        (
            vec![
                "tpm",
                "--scene",
                "sniper",
                "--member",
                "0,0",
                "--seconds",
                "1e12",
            ],
            "frames",
        ),
    ] {
        let mut full = args.clone();
        full.extend(["--backend", "cpu"]);
        let o = sightline(&full);
        let out = text(&o);
        assert!(!o.status.success(), "{args:?} succeeded: {out}");
        assert!(!out.contains("panicked"), "{args:?} panicked: {out}");
        assert!(out.contains(want), "{args:?}: expected `{want}` in: {out}");
    }
}

/// `fireteam` on a built-in scene: every file it promises, the JSON's shape, a table reused
/// from the first run, and a start cut off from the goal moved to the nearest node that reaches it.
#[test]
fn fireteam_writes_a_run_and_pictures() {
    let out = tmp("fireteam-sniper");
    let dir = out.to_str().unwrap();
    let o = sightline(&[
        "fireteam",
        "--scene",
        "sniper",
        "--backend",
        "cpu",
        "--from=-40,10",
        "--to",
        "40,10",
        "--sector",
        "-30,30",
        "--members",
        "4",
        "--lookahead",
        "5",
        "--seed",
        "1",
        "--out",
        dir,
    ]);
    let said = text(&o);
    assert!(o.status.success(), "{said}");
    assert!(said.contains("arrived after"), "{said}");
    for f in ["frames.png", "tpm.png", "cover.png"] {
        assert!(is_png(&out.join(f)), "{f}");
    }
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    let nodes = v["nodes"].as_array().unwrap();
    assert!(nodes.len() > 100 && nodes[0].as_array().unwrap().len() == 3);
    assert!(!v["edges"].as_array().unwrap().is_empty());
    assert!(v["team_path"].as_array().unwrap().len() > 10);
    assert_eq!(v["destinations"].as_array().unwrap().len(), 4);
    assert_eq!(v["arrived"], true);
    let tpm = v["tpm"].as_array().unwrap();
    assert_eq!(tpm.len(), nodes.len());
    assert!(tpm
        .iter()
        .all(|p| (0.0..=1.0).contains(&p.as_f64().unwrap())));
    let frames = v["frames"].as_array().unwrap();
    assert!(frames.len() > 10);
    for f in frames {
        let m = f["members"].as_array().unwrap();
        assert_eq!(m.len(), 4);
        assert!(m[0]["position"].as_array().unwrap().len() == 3 && m[0]["gaze_deg"].is_number());
        assert!(f["t"].is_number() && f["tpm_max"].is_number() && f["tpm_mean"].is_number());
    }
    // The traced table is kept and read back.
    let table = out.join("table.slt");
    let again = tmp("fireteam-again");
    let o = sightline(&[
        "fireteam",
        "--scene",
        "sniper",
        "--backend",
        "cpu",
        "--from=-40,10",
        "--to",
        "40,10",
        "--table",
        table.to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let w: serde_json::Value =
        serde_json::from_slice(&std::fs::read(again.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        w["team_path"], v["team_path"],
        "same graph and cover, same team path"
    );
    // A start on the building's roof, which has no stairs: the team starts from the nearest
    // node that can reach the goal on the plateau (up its ramp), and says so.
    let o = sightline(&[
        "fireteam",
        "--scene",
        "village",
        "--backend",
        "cpu",
        "--from=-15,3.05,10",
        "--to",
        "40,-40",
        "--out",
        tmp("fireteam-unreachable").to_str().unwrap(),
    ]);
    let said = text(&o);
    assert!(o.status.success(), "{said}");
    assert!(
        said.contains("cannot reach the goal; starting from node"),
        "{said}"
    );
    let o = sightline(&[
        "fireteam",
        "--scene",
        "sniper",
        "--backend",
        "cpu",
        "--from=-40,10",
        "--to",
        "40,10",
        "--members",
        "0",
        "--out",
        tmp("fireteam-zero").to_str().unwrap(),
    ]);
    assert!(
        !o.status.success() && text(&o).contains("--members 0"),
        "{}",
        text(&o)
    );
}

/// `fireteam` on a mesh a user brings: the Recast dungeon, from the ground floor up its
/// stairs to the top floor 15 m higher.
#[test]
fn fireteam_on_a_mesh_file() {
    let data = std::env::var_os("SIGHTLINE_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data")));
    let mesh = data.join("dungeon.obj");
    assert!(
        mesh.is_file(),
        "{} is missing: set SIGHTLINE_DATA",
        mesh.display()
    );
    let out = tmp("fireteam-dungeon");
    let o = sightline(&[
        "fireteam",
        "--scene",
        mesh.to_str().unwrap(),
        "--backend",
        "cpu",
        "--largest-only",
        "--from=-10,0,0.8",
        "--to=21.9,15,-69",
        "--out",
        out.to_str().unwrap(),
    ]);
    let said = text(&o);
    assert!(o.status.success(), "{said}");
    assert!(said.contains("arrived after"), "{said}");
    assert!(is_png(&out.join("frames.png")));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    let nodes = v["nodes"].as_array().unwrap();
    let heights: Vec<f64> = v["team_path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| nodes[i.as_u64().unwrap() as usize][1].as_f64().unwrap())
        .collect();
    let (lo, hi) = heights
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &h| (a.min(h), b.max(h)));
    assert!(lo < 1.0 && hi > 14.0, "the path climbs from {lo} to {hi}");
}

/// The numbers of a `--stats` line (`counters: submissions N, waits N, uploaded N B, read back
/// N B, created N`), or `None` when the line has another shape.
fn counters_line(line: &str) -> Option<[u64; 5]> {
    let rest = line.strip_prefix("counters: submissions ")?;
    let rest = rest.replace(", waits ", " ");
    let rest = rest
        .replace(" B, read back ", " ")
        .replace(", uploaded ", " ");
    let rest = rest.replace(" B, created ", " ");
    let n: Vec<u64> = rest
        .split(' ')
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    n.try_into().ok()
}

#[test]
fn stats_print_the_runs_counters_last_and_json_answers_carry_them() {
    let o = sightline(&[
        "cover",
        "--scene",
        "rock",
        "--agent=5,0,0",
        "--observer=30,1.7,0",
        "--backend",
        "gpu",
        "--json",
        "--stats",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{}", text(&o));
    let last = err.lines().last().unwrap_or_default();
    let [submissions, waits, uploaded, read_back, created] =
        counters_line(last).unwrap_or_else(|| panic!("last stderr line: {last}"));
    // A dense search traces through the engine: some work, each submission read back.
    assert!(submissions > 0 && waits > 0 && uploaded > 0 && read_back > 0 && created > 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &v["counters"];
    let field = |k: &str| {
        c[k].as_u64()
            .unwrap_or_else(|| panic!("counters.{k} in {c}"))
    };
    assert_eq!(
        [
            field("submissions"),
            field("waits"),
            field("bytes_uploaded"),
            field("bytes_read_back"),
            field("created")
        ],
        [submissions, waits, uploaded, read_back, created],
        "the JSON answer is written last, so it holds the run's totals"
    );
}

#[test]
fn stats_on_the_cpu_backend_count_nothing() {
    let o = sightline(&["viewshed", "--scene", "rock", "--backend", "cpu", "--stats"]);
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.lines().last(),
        Some("counters: submissions 0, waits 0, uploaded 0 B, read back 0 B, created 0")
    );
}

/// `--backend auto` says in one line why it runs on the CPU when the adapter is a software
/// rasterizer (lavapipe here), and uses a real GPU otherwise.
#[test]
fn auto_says_which_backend_fits_the_machine() {
    let o = sightline(&["viewshed", "--scene", "rock"]);
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let forced = sightline(&["viewshed", "--scene", "rock", "--backend", "gpu"]);
    let forced_err = String::from_utf8_lossy(&forced.stderr);
    if forced_err.contains("Cpu)") {
        assert!(err.contains("backend: Cpu"), "{err}");
        assert!(err.contains("is a software rasterizer"), "{err}");
    } else if forced.status.success() {
        assert!(err.contains("backend: Gpu"), "{err}");
    }
}

/// `--ray-query` picks how the GPU backend walks the scene, the `backend:` line names the walk,
/// and both walks draw the same viewshed; asking for ray queries off the GPU is a clear error.
#[test]
fn ray_query_picks_the_walk_and_says_which_runs() {
    let run = |walk: &str| {
        let args = [
            "viewshed",
            "--scene",
            "rock",
            "--backend",
            "gpu",
            "--ray-query",
            walk,
        ];
        sightline(&args)
    };
    let counts = |o: &Output| {
        let out = String::from_utf8_lossy(&o.stdout);
        let line = out
            .lines()
            .find(|l| l.starts_with("viewshed from"))
            .unwrap();
        line.split("; ").next().unwrap().to_string()
    };
    let compute = run("off");
    assert!(compute.status.success(), "{}", text(&compute));
    assert!(
        text(&compute).contains("compute kernels"),
        "{}",
        text(&compute)
    );
    let rq = run("on");
    let required = std::env::var("SIGHTLINE_RAY_QUERY").is_ok_and(|v| v == "on");
    if rq.status.success() {
        assert!(text(&rq).contains(", ray queries"), "{}", text(&rq));
        assert_eq!(counts(&rq), counts(&compute));
    } else {
        assert!(!required, "SIGHTLINE_RAY_QUERY=on but: {}", text(&rq));
        assert!(
            text(&rq).contains("EXPERIMENTAL_RAY_QUERY"),
            "{}",
            text(&rq)
        );
    }
    let cpu = sightline(&[
        "viewshed",
        "--scene",
        "rock",
        "--backend",
        "cpu",
        "--ray-query",
        "on",
    ]);
    assert!(!cpu.status.success());
    assert!(text(&cpu).contains("drop --backend cpu"), "{}", text(&cpu));
}

/// `--fused` runs the fused CPU twin, which answers the sensor-grid cover question as the plain
/// twin does here; on any other backend it is a clear error.
#[test]
fn fused_twins_run_under_the_cpu_backend_only() {
    let cover = |extra: &[&str]| {
        let mut args = vec![
            "cover",
            "--method",
            "sensor-grid",
            "--agent=3,0,4",
            "--observer=20,1.7,20",
            "--observer=-20,1.7,15",
            "--json",
        ];
        args.extend_from_slice(extra);
        sightline(&args)
    };
    let plain = cover(&["--backend", "cpu"]);
    assert!(plain.status.success(), "{}", text(&plain));
    let choice = |o: &Output| {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["choice"]["position"].to_string()
    };
    for fusion in ["first", "last"] {
        let fused = cover(&["--backend", "cpu", "--fused", fusion]);
        assert!(fused.status.success(), "{}", text(&fused));
        assert_eq!(choice(&fused), choice(&plain), "{fusion}");
    }
    for backend in ["gpu", "auto"] {
        let o = cover(&["--backend", backend, "--fused", "first"]);
        assert!(!o.status.success());
        assert!(text(&o).contains("add --backend cpu"), "{}", text(&o));
    }
}

/// A level written with clockwise fronts loads the right way out, says how many triangles it
/// flipped, and gives the graph of the original; read as written it warns with the cause.
#[test]
fn a_clockwise_level_is_turned_the_right_way_out_and_says_so() {
    let data = std::env::var("SIGHTLINE_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data")));
    let text_in = std::fs::read_to_string(data.join("dungeon.obj")).expect("dungeon.obj");
    // Each face's first vertex kept, the rest reversed.
    let cw: String = text_in
        .lines()
        .map(|l| match l.strip_prefix("f ") {
            Some(rest) => {
                let v: Vec<&str> = rest.split_whitespace().collect();
                let tail: Vec<&str> = v[1..].iter().rev().copied().collect();
                format!("f {} {}\n", v[0], tail.join(" "))
            }
            None => format!("{l}\n"),
        })
        .collect();
    let path = tmp("dungeon-cw.obj");
    std::fs::write(&path, cw).unwrap();
    let graph_line = |o: &Output| {
        text(o)
            .lines()
            .find(|l| l.starts_with("nav graph:"))
            .map(str::to_string)
    };
    let p = path.to_str().unwrap();
    let orig = data.join("dungeon.obj");
    let a = sightline(&[
        "navgraph",
        "--scene",
        orig.to_str().unwrap(),
        "--backend",
        "cpu",
    ]);
    let b = sightline(&["navgraph", "--scene", p, "--backend", "cpu"]);
    assert!(a.status.success() && b.status.success(), "{}", text(&b));
    assert!(
        text(&b).contains("flipped 10133 triangles: the file is wound clockwise"),
        "{}",
        text(&b)
    );
    assert_eq!(graph_line(&a), graph_line(&b));
    let c = sightline(&[
        "navgraph",
        "--scene",
        p,
        "--backend",
        "cpu",
        "--winding",
        "ccw",
    ]);
    assert!(c.status.success(), "{}", text(&c));
    assert!(
        text(&c).contains("reads as inside out") && text(&c).contains("--winding"),
        "{}",
        text(&c)
    );
    assert_ne!(graph_line(&a), graph_line(&c));
}

/// Under `SIGHTLINE_REQUIRE_GPU=1` (CI) GPU work fails instead of skipping.
fn gpu_required() -> bool {
    std::env::var("SIGHTLINE_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// `cover-regions` on the village around a spot south-west of the roofed room, against a
/// threat north-east of it: regions for every posture, several with holes (trees, crates),
/// others across the open ground, with routes.
fn cover_regions(backend: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "cover-regions",
        "--scene",
        "village",
        "--center=-15,0,20",
        "--threat=0,1.7,0",
        "--backend",
        backend,
    ];
    args.extend_from_slice(extra);
    sightline(&args)
}

type Ring = Vec<[f64; 2]>;

fn pair(v: &serde_json::Value) -> [f64; 2] {
    [v[0].as_f64().unwrap(), v[1].as_f64().unwrap()]
}

fn ring(v: &serde_json::Value) -> Ring {
    v.as_array().unwrap().iter().map(pair).collect()
}

/// Shoelace area of a ring, closed or not (positive when counter-clockwise).
fn shoelace(r: &[[f64; 2]]) -> f64 {
    let n = r.len();
    (0..n)
        .map(|i| r[i][0] * r[(i + 1) % n][1] - r[(i + 1) % n][0] * r[i][1])
        .sum::<f64>()
        / 2.0
}

/// Whether `p` is inside the ring (even-odd crossings of a ray towards +x).
fn inside(r: &[[f64; 2]], p: [f64; 2]) -> bool {
    let mut odd = false;
    for i in 0..r.len() {
        let (a, b) = (r[i], r[(i + 1) % r.len()]);
        if (a[1] > p[1]) != (b[1] > p[1])
            && p[0] < a[0] + (p[1] - a[1]) * (b[0] - a[0]) / (b[1] - a[1])
        {
            odd = !odd;
        }
    }
    odd
}

/// Whether `a` is `b` read from some vertex on, in either direction.
fn same_cycle(a: &[[f64; 2]], b: &[[f64; 2]]) -> bool {
    let n = b.len();
    let reversed: Vec<[f64; 2]> = b.iter().rev().copied().collect();
    a.len() == n
        && (0..n).any(|s| {
            (0..n).all(|i| a[i] == b[(s + i) % n]) || (0..n).all(|i| a[i] == reversed[(s + i) % n])
        })
}

/// The regions of a `cover-regions --json` answer hold together: each has area (its cells'
/// and its polygon's), its point inside its outer ring and in no hole, a route from the
/// centre's cell to that point no shorter than its exposed part.
fn check_regions(v: &serde_json::Value) {
    let cell = v["cell"].as_f64().unwrap();
    let regions = v["regions"].as_array().unwrap();
    assert!(!regions.is_empty(), "no regions: {v}");
    for (k, r) in regions.iter().enumerate() {
        let (area, cells) = (r["area"].as_f64().unwrap(), r["cells"].as_f64().unwrap());
        assert!(
            area > 0.0 && (area - cells * cell * cell).abs() < 1e-9,
            "{k}: {r}"
        );
        assert!(r["reachable_area"].as_f64().unwrap() <= area, "{k}");
        let (outer, holes): (Ring, Vec<Ring>) = (
            ring(&r["outer"]),
            r["holes"].as_array().unwrap().iter().map(ring).collect(),
        );
        let polygon = shoelace(&outer) + holes.iter().map(|h| shoelace(h)).sum::<f64>();
        assert!(
            (polygon - area).abs() < 1e-6 * area,
            "{k}: polygon {polygon} m², area {area}"
        );
        let p = &r["point"];
        let at = [p[0].as_f64().unwrap(), p[2].as_f64().unwrap()];
        assert!(
            inside(&outer, at),
            "region {k}: point {p} outside its outer ring"
        );
        assert!(
            holes.iter().all(|h| !inside(h, at)),
            "region {k}: point {p} in a hole"
        );
        assert!(r["margin"].as_f64().unwrap() >= 0.0, "{k}");
        if let Some(route) = r["route"].as_object() {
            let points = route["points"].as_array().unwrap();
            assert_eq!(
                points.last(),
                Some(p),
                "region {k}: the route ends at the point"
            );
            let (x, z) = (
                points[0][0].as_f64().unwrap(),
                points[0][2].as_f64().unwrap(),
            );
            assert!(
                (x + 15.0).abs() <= cell && (z - 20.0).abs() <= cell,
                "starts at the centre"
            );
            let (length, exposed) = (
                route["length"].as_f64().unwrap(),
                route["exposed"].as_f64().unwrap(),
            );
            assert!(
                0.0 <= exposed && exposed <= length + 1e-9,
                "region {k}: {route:?}"
            );
        }
    }
}

/// `[x, -z, y]`: a JSON `[x, y, z]` as a GeoJSON position.
fn geo3(p: &serde_json::Value) -> serde_json::Value {
    let c = |i: usize| p[i].as_f64().unwrap();
    serde_json::json!([c(0), -c(2), c(1)])
}

/// Every feature of `kind` in a GeoJSON FeatureCollection.
fn features<'a>(g: &'a serde_json::Value, kind: &str) -> Vec<&'a serde_json::Value> {
    let all = g["features"].as_array().unwrap();
    all.iter()
        .filter(|f| f["properties"]["kind"] == kind)
        .collect()
}

/// A GeoJSON polygon's rings are the JSON region's in (x, -z), closed, the outer one
/// counter-clockwise and the holes clockwise.
fn check_polygon(k: usize, f: &serde_json::Value, r: &serde_json::Value) {
    assert_eq!(f["geometry"]["type"], "Polygon");
    assert_eq!(f["properties"]["region"], k);
    assert_eq!(f["properties"]["posture"], r["posture"]);
    assert_eq!(f["properties"]["area_m2"], r["area"]);
    let got: Vec<Ring> = f["geometry"]["coordinates"]
        .as_array()
        .unwrap()
        .iter()
        .map(ring)
        .collect();
    let want: Vec<Ring> = std::iter::once(&r["outer"])
        .chain(r["holes"].as_array().unwrap())
        .map(ring)
        .collect();
    assert_eq!(got.len(), want.len(), "region {k}: rings");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            g.len() >= 4 && g.first() == g.last(),
            "region {k} ring {i} is not closed"
        );
        let a = shoelace(g);
        assert!(
            if i == 0 { a > 0.0 } else { a < 0.0 },
            "region {k} ring {i}: area {a}"
        );
        let back: Ring = g[..g.len() - 1].iter().map(|p| [p[0], -p[1]]).collect();
        assert!(
            same_cycle(&back, w),
            "region {k} ring {i}: {g:?} is not {w:?} in (x, -z)"
        );
    }
}

/// The GeoJSON says what the JSON says: a polygon and a point per region, a line per route,
/// the threats and the centre, all in (x, -z) with the height third; no `crs`.
fn check_geojson(v: &serde_json::Value, g: &serde_json::Value) {
    assert_eq!(g["type"], "FeatureCollection");
    assert!(g.get("crs").is_none());
    let axes = g["sightline"]["axes"].as_str().unwrap_or_default();
    assert!(axes.contains("easting = x, northing = -z"), "{axes}");
    let regions = v["regions"].as_array().unwrap();
    let polygons = features(g, "region");
    assert_eq!(polygons.len(), regions.len());
    for (k, (f, r)) in polygons.iter().zip(regions).enumerate() {
        check_polygon(k, f, r);
    }
    let points = features(g, "point");
    assert_eq!(points.len(), regions.len());
    for (f, r) in points.iter().zip(regions) {
        assert_eq!(f["geometry"]["coordinates"], geo3(&r["point"]));
    }
    let routes: Vec<_> = regions.iter().filter(|r| !r["route"].is_null()).collect();
    let lines = features(g, "route");
    assert_eq!(lines.len(), routes.len());
    for (f, r) in lines.iter().zip(&routes) {
        assert_eq!(f["geometry"]["type"], "LineString");
        assert_eq!(f["properties"]["length_m"], r["route"]["length"]);
        let line = f["geometry"]["coordinates"].as_array().unwrap();
        assert_eq!(line.last(), Some(&geo3(&r["point"])));
    }
    let threats = features(g, "threat");
    assert_eq!(threats.len(), 1);
    assert_eq!(
        threats[0]["geometry"]["coordinates"],
        geo3(&v["threats"][0])
    );
    let centre = features(g, "center");
    assert_eq!(centre[0]["geometry"]["coordinates"], geo3(&v["center"]));
}

#[test]
fn cover_regions_write_json_geojson_and_a_picture() {
    let (geo, png) = (tmp("regions.geojson"), tmp("regions.png"));
    let o = cover_regions(
        "cpu",
        &[
            "--json",
            "--geojson",
            geo.to_str().unwrap(),
            "--png",
            png.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["gpu"], false,
        "--backend cpu classifies with the CPU twin"
    );
    check_regions(&v);
    let postures: Vec<&str> = v["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["posture"].as_str().unwrap())
        .collect();
    for p in ["prone", "crouching", "standing"] {
        assert!(postures.contains(&p), "no {p} region: {postures:?}");
    }
    let g: serde_json::Value = serde_json::from_slice(&std::fs::read(&geo).unwrap()).unwrap();
    check_geojson(&v, &g);
    let img = image::open(&png).expect("the picture decodes").to_rgb8();
    assert!(
        img.width() > 1024 && img.height() >= 1024,
        "{:?}",
        img.dimensions()
    );
    // One posture asked: only its regions, and the plain summary names it alone.
    let o = cover_regions("cpu", &["--posture", "crouching"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        out.contains("crouching: ") && !out.contains("prone:") && !out.contains("standing:"),
        "{out}"
    );
}

/// The GPU stencil pass answers as the CPU twin does, within a thin band of cells at region
/// edges; under `SIGHTLINE_REQUIRE_GPU=1` it must run (no adapter, or one without
/// `DEPTH_CLIP_CONTROL`, fails).
#[test]
fn cover_regions_on_the_gpu_agree_with_the_cpu_twin() {
    let gpu = cover_regions("gpu", &["--json"]);
    if !gpu.status.success() && !gpu_required() && text(&gpu).contains("no GPU adapter") {
        eprintln!("skipping: {}", text(&gpu));
        return;
    }
    assert!(gpu.status.success(), "{}", text(&gpu));
    let g: serde_json::Value = serde_json::from_slice(&gpu.stdout).unwrap();
    if gpu_required() {
        assert_eq!(g["gpu"], true, "the stencil pass did not run");
    }
    let cpu = cover_regions("cpu", &["--json"]);
    let c: serde_json::Value = serde_json::from_slice(&cpu.stdout).unwrap();
    let area = |v: &serde_json::Value, p: &str| -> f64 {
        let all = v["regions"].as_array().unwrap();
        all.iter()
            .filter(|r| r["posture"] == p)
            .fold(0.0, |sum, r| sum + r["area"].as_f64().unwrap())
    };
    for p in ["prone", "crouching", "standing"] {
        let (on_gpu, twin) = (area(&g, p), area(&c, p));
        assert!(
            twin > 0.0 && (on_gpu - twin).abs() <= 0.02 * twin,
            "{p}: {on_gpu} m² of regions on the GPU, {twin} m² by the CPU twin"
        );
    }
    check_regions(&g);
}

/// Bad `cover-regions` input is a clear error naming what to fix, never a panic.
#[test]
fn cover_regions_bad_input_is_a_clear_error() {
    let threat = "--threat=0,1.7,0";
    for (args, want) in [
        (vec![], "--threat"),
        (vec![threat, "--size", "-3"], "--size -3"),
        (vec![threat, "--size", "NaN"], "--size NaN"),
        (vec![threat, "--cell", "0"], "--cell 0"),
        (
            vec![threat, "--cell", "50"],
            "--cell 50 is larger than --size",
        ),
        (
            vec![threat, "--size", "5000", "--cell", "0.1"],
            "over the limit",
        ),
        (vec!["--threat=0,nan,0"], "finite"),
        (vec![threat, "--threat=1,2"], "X,Y,Z"),
        (vec![threat, "--posture", "sitting"], "possible values"),
    ] {
        let mut full = vec!["cover-regions", "--scene", "village", "--center=-15,0,20"];
        full.extend(args.iter().chain(&["--backend", "cpu"]));
        let o = sightline(&full);
        let out = text(&o);
        assert!(!o.status.success(), "{args:?} succeeded: {out}");
        assert!(!out.contains("panicked"), "{args:?} panicked: {out}");
        assert!(out.contains(want), "{args:?}: expected `{want}` in: {out}");
    }
    let o = sightline(&[
        "cover-regions",
        "--center=0,0,nan",
        threat,
        "--backend",
        "cpu",
    ]);
    assert!(
        !o.status.success() && text(&o).contains("--center"),
        "{}",
        text(&o)
    );
}

/// `cover --agents FILE` answers every agent of the file in one batch, in file order, each as
/// the single-agent command answers it (choice, path and cells searched); a bad line is an
/// error naming the file and the line.
#[test]
fn cover_agents_answers_a_file_in_order_as_one_agent_at_a_time() {
    let csv = tmp("agents.csv");
    let agents = ["5,0,0", "-6,0,2", "4,0,-5"];
    std::fs::write(&csv, agents.join("\n") + "\n").unwrap();
    let common = [
        "--scene",
        "rock",
        "--observer=30,1.7,0",
        "--backend",
        "cpu",
        "--json",
    ];
    let file = csv.to_str().unwrap();
    let o = sightline(&[&["cover", "--agents", file][..], &common].concat());
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let answers = v["answers"].as_array().unwrap();
    assert_eq!(answers.len(), agents.len());
    assert!(v["seconds"].as_f64().unwrap() > 0.0 && v["setup_seconds"].as_f64().unwrap() > 0.0);
    for (a, line) in answers.iter().zip(agents) {
        let flag = format!("--agent={line}");
        let one = sightline(&[&["cover", flag.as_str()][..], &common].concat());
        assert!(one.status.success(), "{}", text(&one));
        let w: serde_json::Value = serde_json::from_slice(&one.stdout).unwrap();
        assert_eq!(a["agent"], w["agent"], "agent {line}");
        assert!(a["choice"].is_object(), "agent {line}: {a}");
        assert_eq!(a["choice"], w["choice"], "agent {line}");
        assert!(a["explored_cells"].as_u64().unwrap() > 0, "agent {line}");
        assert_eq!(a["explored_cells"], w["explored_cells"], "agent {line}");
    }
    std::fs::write(&csv, "5,0,0\n1,2\n").unwrap();
    let bad = sightline(&[&["cover", "--agents", file][..], &common].concat());
    let out = text(&bad);
    assert!(!bad.status.success(), "{out}");
    assert!(
        out.contains("agents.csv:2") && !out.contains("panicked"),
        "{out}"
    );
}
