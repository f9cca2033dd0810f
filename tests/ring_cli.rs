//! `sightline ringgraph` (Slant Six Games, *Situational Awareness: Terrain Reasoning for
//! Tactical Shooter AI*) run as a user runs it, its JSON checked against the scene: the graph
//! is well formed, "in cover" is what an independent trace of every threat's line of fire
//! says, the path walks the graph's edges to the best node, and the picture decodes.

use glam::Vec3;
use serde_json::Value;
use sightline::scene::procedural;
use sightline::{Engine, Mask, Segment};
use std::path::PathBuf;
use std::process::Command;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sightline-ring-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Runs the tool on the CPU backend; its success and its output.
fn sightline(args: &[&str]) -> (bool, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_sightline"))
        .args(args)
        .args(["--backend", "cpu"])
        .env("WGPU_BACKEND", "vulkan")
        .output()
        .expect("run the sightline binary");
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    (o.status.success(), text)
}

fn vec3(v: &Value) -> Vec3 {
    let a: Vec<f32> = v
        .as_array()
        .expect("an [x, y, z] array")
        .iter()
        .map(|x| x.as_f64().expect("a number") as f32)
        .collect();
    assert_eq!(a.len(), 3, "{v}");
    Vec3::new(a[0], a[1], a[2])
}

/// Inside the room of the cover examples: the centre itself is in cover.
const ROOM: &str = "--at=-19,0.05,12";

const THREATS: [Vec3; 2] = [Vec3::new(10.0, 1.6, -20.0), Vec3::new(-45.0, 1.6, 40.0)];

/// Height above a node that the threats fire at (the library's `Situation::body`).
const BODY: f32 = 1.0;

/// The command on the village around `at` (`--at=X,Y,Z`); its JSON, picture and output.
fn village(at: &str, extra: &[&str], name: &str) -> (Value, PathBuf, String) {
    let (json, png) = (tmp(&format!("{name}.json")), tmp(&format!("{name}.png")));
    let mut args = vec![
        "ringgraph",
        "--scene",
        "village",
        at,
        "--threat=10,1.6,-20",
        "--threat=-45,1.6,40",
        "--json",
        json.to_str().unwrap(),
        "--png",
        png.to_str().unwrap(),
    ];
    args.extend(extra);
    let (ok, out) = sightline(&args);
    assert!(ok, "{out}");
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (v, png, out)
}

/// Checks one run's JSON against the scene; returns the path.
fn check(v: &Value) -> Vec<u32> {
    for key in ["nodes", "edges", "path", "seconds"] {
        assert!(v.get(key).is_some(), "no \"{key}\" in the JSON");
    }
    let seconds = v["seconds"].as_f64().unwrap();
    assert!(seconds.is_finite() && seconds >= 0.0, "{seconds}");
    let nodes = v["nodes"].as_array().unwrap();
    let n = nodes.len();
    assert!(n > 100, "{n} nodes");
    let position: Vec<Vec3> = nodes.iter().map(|x| vec3(&x["position"])).collect();
    let score: Vec<f64> = nodes.iter().map(|x| x["score"].as_f64().unwrap()).collect();
    let cover: Vec<bool> = nodes
        .iter()
        .map(|x| x["in_cover"].as_bool().unwrap())
        .collect();
    assert!(position.iter().all(|p| p.is_finite()));
    assert!(
        score.iter().all(|s| (0.0..=1.0).contains(s)),
        "a score outside [0, 1]"
    );
    // Edges: pairs of valid, distinct nodes.
    let mut edges = std::collections::HashSet::new();
    for e in v["edges"].as_array().unwrap() {
        let e: Vec<u64> = e
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert_eq!(e.len(), 2);
        assert!(e[0] < n as u64 && e[1] < n as u64 && e[0] != e[1], "{e:?}");
        edges.insert((e[0].min(e[1]), e[0].max(e[1])));
    }
    assert!(edges.len() > n, "{} edges for {n} nodes", edges.len());
    // In cover: an independent trace from every threat's eye to each node's body point.
    let scene = procedural::by_name("village", 1, 1).unwrap();
    let segs: Vec<Segment> = THREATS
        .iter()
        .flat_map(|&t| {
            position
                .iter()
                .map(move |&p| Segment::new(t, p + Vec3::Y * BODY))
        })
        .collect();
    let blocked = Engine::cpu().occluded(&scene, &segs, Mask::FIRE).unwrap();
    let mut covered = 0;
    for (i, &c) in cover.iter().enumerate() {
        let all = (0..THREATS.len()).all(|t| blocked.get(t * n + i));
        assert_eq!(c, all, "node {i} at {}: in_cover says {c}", position[i]);
        covered += usize::from(c);
    }
    assert!(
        covered > 0 && covered < n,
        "{covered} of {n} nodes in cover"
    );
    // The path: valid nodes joined by edges, ending at the highest score.
    let path: Vec<u32> = v["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect();
    assert!(!path.is_empty(), "a node is in cover, so there is a path");
    assert!(path.iter().all(|&i| (i as usize) < n), "{path:?}");
    for w in path.windows(2) {
        let e = (u64::from(w[0].min(w[1])), u64::from(w[0].max(w[1])));
        assert!(edges.contains(&e), "path step {w:?} is not an edge");
    }
    let top = score.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let last = *path.last().unwrap() as usize;
    assert_eq!(
        score[last], top,
        "the path ends at node {last}, not at the best"
    );
    assert!(cover[last], "the best node is in cover");
    assert_eq!(v["best"].as_u64(), Some(last as u64));
    path
}

#[test]
fn ringgraph_scores_cover_that_an_independent_trace_confirms_and_walks_to_the_best() {
    let (v, png, out) = village(ROOM, &[], "village");
    check(&v);
    for line in [
        "nodes",
        "edges",
        "clamped",
        "pruned",
        "unplaced",
        "rays",
        "in cover",
        "best node",
        "path:",
        "routed in",
    ] {
        assert!(out.contains(line), "the summary lacks '{line}': {out}");
    }
    // The picture: a map of the default 1,024 pixels a side over the rings (radius 50 m and
    // the threats), the legend panel beside it.
    let img = image::open(&png).unwrap();
    assert_eq!(img.height(), 1024);
    assert!(img.width() > 1024 + 100, "{} px", img.width());
}

/// `--search` and `--explore` bound the wall followers' steps in a build (0 turns them off),
/// and the JSON says what they spent.
#[test]
fn follower_budgets_bound_the_steps_a_build_spends() {
    let steps = |v: &Value| {
        let r = &v["report"];
        (
            r["search_steps"].as_u64().unwrap(),
            r["explore_steps"].as_u64().unwrap(),
        )
    };
    let (full, _, _) = village(ROOM, &["--no-nav"], "budget-full");
    let (searched, explored) = steps(&full);
    assert!(
        searched <= 2048 && explored <= 1024 && searched + explored > 0,
        "{full}"
    );
    let (off, _, _) = village(
        ROOM,
        &["--no-nav", "--search", "0", "--explore", "0"],
        "off",
    );
    assert_eq!(steps(&off), (0, 0), "{off}");
    assert_eq!(off["params"]["explore"], 0);
    check(&off);
    let (few, _, _) = village(ROOM, &["--no-nav", "--explore", "100"], "budget-few");
    assert!(steps(&few).1 <= 100, "{few}");
}

#[test]
fn an_agent_away_from_the_point_is_routed_over_the_nav_graph_or_the_ring_graph() {
    // From outside the room: the route comes in on the nav graph; without it, it starts at the
    // ring node nearest the agent that the graph joins to the centre.
    let (v, _, _) = village(ROOM, &["--from=-40,0,35", "--rings", "16"], "from");
    let path = check(&v);
    assert!(!v["nav_in"].as_array().unwrap().is_empty(), "{v}");
    let (w, _, _) = village(
        ROOM,
        &["--from=-40,0,35", "--rings", "16", "--no-nav"],
        "no-nav",
    );
    assert_eq!(check(&w), path);
    assert!(w["nav_in"].as_array().unwrap().is_empty());
    assert!(w["nav_out"].is_null());
}

#[test]
fn from_exposed_ground_the_path_follows_edges_to_cover() {
    // In the open east of the room the centre is exposed: the best node is several walks away.
    let (v, _, _) = village("--at=10,0,-5", &["--no-nav"], "exposed");
    let path = check(&v);
    assert!(path.len() >= 3, "{path:?}");
    assert_eq!(path[0], 0, "the agent stands at the centre");
}

#[test]
fn no_node_in_cover_is_an_answer_with_an_empty_path() {
    // Threats all round close by, on a small graph in the open: nothing hides from all of them.
    let json = tmp("all-round.json");
    let png = tmp("all-round.png");
    let mut args = vec![
        "ringgraph",
        "--scene",
        "village",
        "--at=-19,0.05,12",
        "--rings",
        "2",
        "--per-ring",
        "8",
        "--radius",
        "2",
        "--no-nav",
        "--json",
        json.to_str().unwrap(),
        "--png",
        png.to_str().unwrap(),
    ];
    let threats: Vec<String> = (0..8)
        .map(|k| {
            let a = k as f32 * std::f32::consts::TAU / 8.0;
            format!(
                "--threat={},1.6,{}",
                -19.0 + 0.6 * a.cos(),
                12.0 + 0.6 * a.sin()
            )
        })
        .collect();
    args.extend(threats.iter().map(String::as_str));
    let (ok, out) = sightline(&args);
    assert!(ok, "{out}");
    assert!(
        out.contains("no node joined to the centre is in cover"),
        "{out}"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["path"], serde_json::json!([]));
    assert!(v["best"].is_null());
    assert!(image::open(&png).is_ok());
}
