//! Out-of-sight threat prediction (`sightline::terrain::predict`) on van der Sterren's sniper
//! level (*Terrain Reasoning for 3D Action Games*, "Predicting Out-of-sight Threats"): the AI
//! stands west of the creek watching the north-east building; a threat seen at a window steps
//! away out of sight.
//!
//! - along the wall: the presumed position is inside the building, hidden from the observer and
//!   reachable, and the line is cut where it would pass through the interior wall;
//! - out through the exterior wall: stopped at the wall (walls correction);
//! - into the window's view: stopped before it (sight correction);
//! - standing still: the presumed position is the last-seen node;
//! - the aim node lies on the path, the observer sees it and no node before it (every path node
//!   traced one by one);
//! - the GPU and the CPU agree; the CLI writes the picture and the JSON; bad input is an error;
//! - `predict_many` answers a seeded, varied batch exactly as `predict` answers each query, on
//!   both backends, with at most three submissions and three waits for the whole batch on the
//!   GPU; a bad query is refused by its index;
//! - a hand-made corridor behind a wall: each correction where it must happen.

#[path = "common/gpu.rs"]
mod gpu;

use glam::Vec3;
use sightline::nav::{self, CostParams, Edge, EdgeKinds, NavGraph, NavParams};
use sightline::scene::procedural::{self, sniper_layout};
use sightline::terrain::predict::{
    predict, predict_many, Correction, PredictParams, PredictQuery, Prediction, Sighting,
    MAX_BATCH_STEPS, MAX_QUERIES, MAX_STEPS,
};
use sightline::trace::SplitMix64;
use sightline::{Engine, Error, Mask, Scene, Segment};
use std::process::Command;
use std::sync::OnceLock;

/// The AI's eye on the west bank, north of the bridge, watching the north-east building.
const OBSERVER: Vec3 = Vec3::new(-10.0, 1.7, -14.0);
/// Inside the north-east building, just behind the west wall (x 26..26.3).
const INSIDE_X: f32 = 26.8;
/// Floor top inside the buildings.
const FLOOR: f32 = 0.05;

fn level() -> &'static (Scene, NavGraph) {
    static LEVEL: OnceLock<(Scene, NavGraph)> = OnceLock::new();
    LEVEL.get_or_init(|| {
        let scene = procedural::sniper(1, 1);
        let (graph, _) = nav::generate(
            &Engine::cpu(),
            &scene,
            &NavParams::standard(),
            &CostParams::standard(),
        )
        .unwrap();
        (scene, graph)
    })
}

/// Whether the observer sees each spot (one trace each, not batched with anything).
fn sees(engine: &Engine, scene: &Scene, spot: Vec3) -> bool {
    let seg = [Segment::new(OBSERVER, spot)];
    !engine.occluded(scene, &seg, Mask::SIGHT).unwrap().get(0)
}

fn eye(p: Vec3) -> Vec3 {
    p + Vec3::Y * PredictParams::standard().eye_height
}

/// The z where the observer's view through the window at `window_z` ends on the line
/// x = INSIDE_X: the first hidden spot walking from the window centre toward `dir` (+1 south,
/// -1 north), 0.05 m resolution, and the last visible one before it.
fn window_edge(engine: &Engine, scene: &Scene, window_z: f32, dir: f32) -> (f32, f32) {
    let at = |z: f32| eye(Vec3::new(INSIDE_X, FLOOR, z));
    assert!(
        sees(engine, scene, at(window_z)),
        "the window at z {window_z} is not in view"
    );
    let mut z = window_z;
    while sees(engine, scene, at(z + 0.05 * dir)) {
        z += 0.05 * dir;
        assert!((z - window_z).abs() < 3.0, "no edge to the window's view");
    }
    (z, z + 0.05 * dir)
}

fn inside_ne(p: Vec3) -> bool {
    let b = sniper_layout().buildings[1];
    (b.min.x..=b.max.x).contains(&p.x) && (b.min.z..=b.max.z).contains(&p.z)
}

/// Every property a prediction must have, whatever the case: the presumed position hidden
/// (unless nothing past the sighting fits), reachable along the graph from the last-seen node,
/// the path joined by edges from the presumed node to the observer's node, the aim node the
/// first node on it in view, and the time to it the path cost over the speed.
fn check(engine: &Engine, r: &Prediction, s: &Sighting) {
    let (scene, graph) = level();
    let nodes = graph.nodes();
    assert_eq!(r.presumed_visible, sees(engine, scene, eye(r.presumed)));
    assert_eq!(r.steps.first(), Some(&s.seen));
    assert_eq!(r.steps.last(), Some(&r.presumed));
    assert_eq!(Some(r.presumed_node), graph.nearest(r.presumed));
    let seen_node = graph.nearest(s.seen).unwrap();
    let comps = graph.components();
    assert_eq!(
        comps.label[seen_node as usize], comps.label[r.presumed_node as usize],
        "the presumed node cannot be reached from the last-seen node"
    );
    assert_eq!(r.path.first(), Some(&r.presumed_node));
    assert_eq!(r.path.last(), Some(&r.observer_node));
    assert_eq!(
        Some(r.observer_node),
        graph.nearest(OBSERVER - Vec3::Y * 1.7)
    );
    let mut cost = vec![0.0f32];
    for w in r.path.windows(2) {
        let &(_, e) = graph
            .neighbours(w[0])
            .iter()
            .find(|&&(n, _)| n == w[1])
            .unwrap_or_else(|| panic!("path step {} -> {} is not an edge", w[0], w[1]));
        cost.push(cost.last().unwrap() + graph.costs()[e as usize]);
    }
    let k = r
        .path
        .iter()
        .position(|&n| Some(n) == r.aim_node)
        .expect("the aim node is on the path");
    for (i, &n) in r.path[..=k].iter().enumerate() {
        assert_eq!(
            sees(engine, scene, eye(nodes[n as usize])),
            i == k,
            "path node {i} ({n} at {}) visibility",
            nodes[n as usize]
        );
    }
    assert_eq!(r.aim, Some(eye(nodes[r.path[k] as usize])));
    let speed = s.velocity.length().max(PredictParams::standard().min_speed);
    assert!((r.time_to_aim - cost[k] / speed).abs() < 1e-3 * cost[k].max(1.0));
}

fn run(engine: &Engine, s: &Sighting) -> Prediction {
    let (scene, graph) = level();
    let r = predict(
        engine,
        scene,
        graph,
        OBSERVER,
        s,
        &PredictParams::standard(),
    )
    .unwrap();
    let nodes = graph.nodes();
    println!(
        "seen {} v {} since {}: extrapolated {}, presumed {} node {} {} ({:?}, {} steps), \
         aim node {:?} {:?} in {:.2} s, path {} nodes",
        s.seen,
        s.velocity,
        s.since,
        r.extrapolated,
        r.presumed,
        r.presumed_node,
        nodes[r.presumed_node as usize],
        r.corrected_by,
        r.steps.len(),
        r.aim_node,
        r.aim,
        r.time_to_aim,
        r.path.len()
    );
    check(engine, &r, s);
    r
}

/// The paper's scene: seen at the south edge of the northern window's view, the threat steps
/// south along the west wall. After 2 s at 2 m/s the straight line would have crossed the
/// interior wall at z = -13 (its doorway is at x = 31); after 0.5 s it is still in the room.
#[test]
fn stepping_away_from_the_window_along_the_wall() {
    let engine = Engine::cpu();
    let (scene, _) = level();
    let (z, _) = window_edge(&engine, scene, -15.5, 1.0);
    let seen = Vec3::new(INSIDE_X, FLOOR, z);
    let s = Sighting {
        seen,
        velocity: Vec3::new(0.0, 0.0, 2.0),
        since: 2.0,
    };
    let r = run(&engine, &s);
    assert!(inside_ne(r.presumed) && !r.presumed_visible);
    assert_eq!(r.corrected_by, Correction::Walls);
    assert!(r.presumed.z < -13.0 && r.presumed.z > z, "{}", r.presumed);
    assert!(r.extrapolated.z > -13.0);
    // Shorter: the whole line is valid and hidden.
    let short = Sighting { since: 0.5, ..s };
    let r = run(&engine, &short);
    assert_eq!(r.corrected_by, Correction::None);
    assert_eq!(r.presumed, r.extrapolated);
    assert!(inside_ne(r.presumed) && !r.presumed_visible);
    assert_eq!(r.steps.len(), 3);
}

/// Seen at the south edge of the southern window's view, walking south: the straight line
/// leaves the building through the south wall (z = -8); the prediction stops inside.
#[test]
fn walking_out_through_the_wall_stops_at_the_wall() {
    let engine = Engine::cpu();
    let (scene, _) = level();
    let (z, _) = window_edge(&engine, scene, -10.5, 1.0);
    let s = Sighting {
        seen: Vec3::new(INSIDE_X, FLOOR, z),
        velocity: Vec3::new(0.0, 0.0, 2.0),
        since: 2.0,
    };
    let r = run(&engine, &s);
    assert!(!inside_ne(r.extrapolated));
    assert_eq!(r.corrected_by, Correction::Walls);
    assert!(inside_ne(r.presumed) && !r.presumed_visible);
    assert!(r.presumed.z < -8.0 && r.presumed.z > -9.5, "{}", r.presumed);
    // Out through the north wall (z -18..-17.7) from the middle of the northern room: the
    // last step is short of the wall's inner face.
    let s = Sighting {
        seen: Vec3::new(30.0, FLOOR, -16.0),
        velocity: Vec3::new(0.0, 0.0, -3.0),
        since: 2.0,
    };
    let r = run(&engine, &s);
    assert_eq!(r.corrected_by, Correction::Walls);
    assert!(inside_ne(r.presumed) && !r.presumed_visible);
    assert!(
        r.presumed.z > -17.7 && r.presumed.z < -16.5,
        "{}",
        r.presumed
    );
}

/// Hidden behind the wall just south of the northern window, walking north: the line enters
/// the window's view, which the observer would have noticed; the prediction stops before it.
#[test]
fn walking_into_view_stops_before_it() {
    let engine = Engine::cpu();
    let (scene, _) = level();
    let (_, hidden_z) = window_edge(&engine, scene, -15.5, 1.0);
    let s = Sighting {
        seen: Vec3::new(INSIDE_X, FLOOR, hidden_z + 1.0),
        velocity: Vec3::new(0.0, 0.0, -2.0),
        since: 1.5,
    };
    let r = run(&engine, &s);
    assert_eq!(r.corrected_by, Correction::Sight);
    assert!(!r.presumed_visible && inside_ne(r.presumed));
    assert!(r.presumed.z >= hidden_z - 1e-4 && r.presumed.z <= hidden_z + 0.5);
    // The next step would have been in view.
    let next = r.presumed + s.velocity.normalize() * PredictParams::standard().step;
    assert!(sees(&engine, scene, eye(next)));
}

#[test]
fn standing_still_stays_at_the_last_seen_node() {
    let engine = Engine::cpu();
    let (_, graph) = level();
    let s = Sighting {
        seen: Vec3::new(30.0, FLOOR, -16.0),
        velocity: Vec3::ZERO,
        since: 3.0,
    };
    let r = run(&engine, &s);
    assert_eq!(r.corrected_by, Correction::None);
    assert_eq!((r.presumed, r.steps.len()), (s.seen, 1));
    assert_eq!(Some(r.presumed_node), graph.nearest(s.seen));
}

#[test]
fn gpu_and_cpu_agree() {
    let Some(gpu) = gpu::gpu_engine() else {
        return;
    };
    let cpu = Engine::cpu();
    let (scene, _) = level();
    let (edge, hidden) = window_edge(&cpu, scene, -15.5, 1.0);
    let cases = [
        (
            Vec3::new(INSIDE_X, FLOOR, edge),
            Vec3::new(0.0, 0.0, 2.0),
            2.0,
        ),
        (
            Vec3::new(INSIDE_X, FLOOR, hidden + 1.0),
            Vec3::new(0.0, 0.0, -2.0),
            1.5,
        ),
        (
            Vec3::new(INSIDE_X, FLOOR, edge),
            Vec3::new(1.5, 0.0, 0.0),
            2.0,
        ),
        (
            Vec3::new(30.0, FLOOR, -16.0),
            Vec3::new(0.0, 0.0, -3.0),
            2.0,
        ),
    ];
    for (seen, velocity, since) in cases {
        let s = Sighting {
            seen,
            velocity,
            since,
        };
        assert_eq!(run(&gpu, &s), run(&cpu, &s));
    }
}

/// Time per query on the CPU backend (median of 30), printed for the record; the level and its
/// BVH are built before timing.
#[test]
fn query_time() {
    let engine = Engine::cpu();
    let (scene, graph) = level();
    let (z, _) = window_edge(&engine, scene, -15.5, 1.0);
    let s = Sighting {
        seen: Vec3::new(INSIDE_X, FLOOR, z),
        velocity: Vec3::new(0.0, 0.0, 2.0),
        since: 2.0,
    };
    let p = PredictParams::standard();
    let mut times: Vec<f64> = (0..30)
        .map(|_| {
            let t = std::time::Instant::now();
            predict(&engine, scene, graph, OBSERVER, &s, &p).unwrap();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "predict on the sniper level ({} nodes), CPU backend: median {:.3} ms, min {:.3} ms",
        graph.len(),
        times[15],
        times[0]
    );
}

#[test]
fn bad_input_is_an_error() {
    let engine = Engine::cpu();
    let (scene, graph) = level();
    let p = PredictParams::standard();
    let ok = Sighting {
        seen: Vec3::new(30.0, FLOOR, -16.0),
        velocity: Vec3::new(2.0, 0.0, 0.0),
        since: 1.0,
    };
    let bad = [
        Sighting {
            velocity: Vec3::new(f32::NAN, 0.0, 0.0),
            ..ok
        },
        Sighting {
            seen: Vec3::new(0.0, f32::INFINITY, 0.0),
            ..ok
        },
        Sighting { since: -1.0, ..ok },
        Sighting {
            since: f32::NAN,
            ..ok
        },
    ];
    for s in bad {
        let e = predict(&engine, scene, graph, OBSERVER, &s, &p).unwrap_err();
        assert!(matches!(e, Error::InvalidParameter { .. }), "{e}");
    }
    let huge = Sighting { since: 1e30, ..ok };
    match predict(&engine, scene, graph, OBSERVER, &huge, &p) {
        Err(Error::TooLarge { limit, fix, .. }) => {
            assert_eq!(limit, MAX_STEPS);
            assert!(fix.contains("step"), "{fix}");
        }
        other => panic!("{other:?}"),
    }
    let far = predict(&engine, scene, graph, Vec3::splat(f32::NAN), &ok, &p);
    assert!(far.is_err());
    let zero_step = PredictParams { step: 0.0, ..p };
    assert!(predict(&engine, scene, graph, OBSERVER, &ok, &zero_step).is_err());
    let empty = NavGraph::new(vec![], vec![], &CostParams::standard()).unwrap();
    assert!(predict(&engine, scene, &empty, OBSERVER, &ok, &p).is_err());
}

/// `n` seeded queries on the sniper level: threats at random nodes (some off the node by up
/// to half a metre), walking any way at 0 to 4 m/s (one in eight standing still) for up to 3 s;
/// observers at random nodes or at [`OBSERVER`].
fn varied_queries(n: usize, seed: u64) -> Vec<PredictQuery> {
    let (_, graph) = level();
    let nodes = graph.nodes();
    let mut rng = SplitMix64(seed);
    let node = |rng: &mut SplitMix64| nodes[(rng.next_u64() % nodes.len() as u64) as usize];
    (0..n)
        .map(|_| {
            let jitter = Vec3::new(rng.range(-0.5, 0.5), 0.0, rng.range(-0.5, 0.5));
            let seen = node(&mut rng) + jitter * (rng.next_u64() % 2) as f32;
            let angle = rng.range(0.0, std::f32::consts::TAU);
            let speed = if rng.next_u64().is_multiple_of(8) {
                0.0
            } else {
                rng.range(0.5, 4.0)
            };
            let observer_eye = if rng.next_u64().is_multiple_of(2) {
                OBSERVER
            } else {
                eye(node(&mut rng))
            };
            PredictQuery {
                observer_eye,
                sighting: Sighting {
                    seen,
                    velocity: Vec3::new(angle.cos(), 0.0, angle.sin()) * speed,
                    since: rng.range(0.0, 3.0),
                },
            }
        })
        .collect()
}

/// Each query answered by its own `predict` call.
fn one_at_a_time(engine: &Engine, queries: &[PredictQuery]) -> Vec<Prediction> {
    let (scene, graph) = level();
    let p = PredictParams::standard();
    queries
        .iter()
        .map(|q| predict(engine, scene, graph, q.observer_eye, &q.sighting, &p).unwrap())
        .collect()
}

/// Equal, and equal bit for bit (`Debug` tells -0.0 from 0.0, which `==` does not).
fn assert_same(many: &[Prediction], alone: &[Prediction]) {
    assert_eq!(many.len(), alone.len());
    for (i, (m, a)) in many.iter().zip(alone).enumerate() {
        assert_eq!(m, a, "query {i}");
        assert_eq!(format!("{m:?}"), format!("{a:?}"), "query {i}");
    }
}

#[test]
fn predict_many_answers_as_predict_does_on_both_backends() {
    let (scene, graph) = level();
    let p = PredictParams::standard();
    let queries = varied_queries(64, 42);
    let cpu = Engine::cpu();
    let many = predict_many(&cpu, scene, graph, &queries, &p).unwrap();
    assert_same(&many, &one_at_a_time(&cpu, &queries));
    // The batch is varied: every correction, aim points found and not found, several steps.
    for c in [Correction::None, Correction::Walls, Correction::Sight] {
        let count = many.iter().filter(|r| r.corrected_by == c).count();
        println!("{count} of {} corrected by {c:?}", many.len());
        assert!(count > 0, "no query corrected by {c:?}");
    }
    assert!(many.iter().any(|r| r.aim_node.is_some()));
    assert!(many.iter().any(|r| r.aim_node.is_none()));
    assert!(many.iter().any(|r| r.steps.len() > 4));
    let Some(gpu) = gpu::gpu_engine() else {
        return;
    };
    let many = predict_many(&gpu, scene, graph, &queries, &p).unwrap();
    assert_same(&many, &one_at_a_time(&gpu, &queries));
}

#[test]
fn predict_many_waits_once_per_stage_on_the_gpu() {
    let Some(gpu) = gpu::gpu_engine() else {
        return;
    };
    let (scene, graph) = level();
    let p = PredictParams::standard();
    let queries = varied_queries(64, 7);
    let before = gpu.counters().total;
    predict_many(&gpu, scene, graph, &queries, &p).unwrap();
    let batch = gpu.counters().total.since(&before);
    let before = gpu.counters().total;
    one_at_a_time(&gpu, &queries);
    let alone = gpu.counters().total.since(&before);
    println!("{} queries in one batch: {batch}", queries.len());
    println!("{} queries one at a time: {alone}", queries.len());
    assert!(batch.submissions <= 3 && batch.waits <= 3, "{batch}");
    assert!(alone.waits >= queries.len() as u64, "{alone}");
}

#[test]
fn predict_many_refuses_a_bad_query_by_its_index() {
    let engine = Engine::cpu();
    let (scene, graph) = level();
    let p = PredictParams::standard();
    assert_eq!(
        predict_many(&engine, scene, graph, &[], &p).unwrap(),
        vec![]
    );
    let ok = varied_queries(10, 1);
    let refused =
        |queries: &[PredictQuery]| predict_many(&engine, scene, graph, queries, &p).unwrap_err();
    let mut bad = ok.clone();
    bad[7].sighting.since = -1.0;
    bad[9].observer_eye = Vec3::splat(f32::NAN);
    match refused(&bad) {
        Error::Query { index: 7, source } => {
            assert!(matches!(
                *source,
                Error::InvalidParameter {
                    name: "sighting.since",
                    ..
                }
            ))
        }
        other => panic!("{other:?}"),
    }
    bad[3].sighting.since = 1e30;
    let e = refused(&bad);
    assert!(e.to_string().starts_with("query 3 of the batch: "), "{e}");
    match e {
        Error::Query { index: 3, source } => {
            assert!(
                matches!(
                    *source,
                    Error::TooLarge {
                        limit: MAX_STEPS,
                        ..
                    }
                ),
                "{source}"
            )
        }
        other => panic!("{other:?}"),
    }
    let too_many = vec![ok[0]; MAX_QUERIES as usize + 1];
    assert!(matches!(
        refused(&too_many),
        Error::TooLarge {
            limit: MAX_QUERIES,
            ..
        }
    ));
    // Each query within MAX_STEPS, the batch over MAX_BATCH_STEPS: refused before any work.
    let long = PredictQuery {
        sighting: Sighting {
            velocity: Vec3::new(4.0, 0.0, 0.0),
            since: MAX_STEPS as f32 * p.step / 4.0,
            ..ok[0].sighting
        },
        ..ok[0]
    };
    let batch = vec![long; (MAX_BATCH_STEPS / MAX_STEPS) as usize + 1];
    match refused(&batch) {
        Error::TooLarge { limit, fix, .. } => {
            assert_eq!(limit, MAX_BATCH_STEPS);
            assert!(fix.contains("split"), "{fix}");
        }
        other => panic!("{other:?}"),
    }
    let zero_step = PredictParams { step: 0.0, ..p };
    let e = predict_many(&engine, scene, graph, &ok, &zero_step).unwrap_err();
    assert!(
        matches!(e, Error::InvalidParameter { name: "step", .. }),
        "{e}"
    );
    let empty = NavGraph::new(vec![], vec![], &CostParams::standard()).unwrap();
    let e = predict_many(&engine, scene, &empty, &ok, &p).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
}

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sightline"))
        .arg("predict")
        .args(["--scene", "sniper", "--backend", "cpu"])
        .args(args)
        .env("WGPU_BACKEND", "vulkan")
        .output()
        .expect("run the sightline binary")
}

#[test]
fn cli_writes_the_picture_and_the_json() {
    let dir = std::env::temp_dir().join(format!("sightline-predict-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (png, json) = (dir.join("predict.png"), dir.join("predict.json"));
    let out = cli(&[
        "--seen",
        "26.8,0.05,-14.5",
        "--velocity",
        "0,0,2",
        "--since",
        "2",
        "--observer",
        "-10,1.7,-14",
        "--png",
        png.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("presumed") && text.contains("wrote"),
        "{text}"
    );
    let img = image::open(&png).unwrap();
    assert!(img.width() > 500 && img.height() > 500);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (_, graph) = level();
    let presumed = &doc["presumed"];
    let p = Vec3::new(
        presumed[0].as_f64().unwrap() as f32,
        presumed[1].as_f64().unwrap() as f32,
        presumed[2].as_f64().unwrap() as f32,
    );
    assert!(inside_ne(p), "{doc}");
    assert_eq!(doc["corrected_by"], "walls", "{doc}");
    assert_eq!(doc["presumed_visible"], false);
    let node = doc["presumed_node"].as_u64().unwrap() as u32;
    assert!((node as usize) < graph.len());
    let path: Vec<u64> = doc["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(path.first(), Some(&u64::from(node)));
    assert!(path.contains(&doc["aim_node"].as_u64().unwrap()));
    assert!(doc["time_to_aim"].as_f64().unwrap() > 0.0);
    assert_eq!(doc["aim"].as_array().unwrap().len(), 3);
    assert!(doc["steps"].as_array().unwrap().len() >= 2);
    assert_eq!(doc["extrapolated"][2].as_f64().unwrap(), -10.5);
}

#[test]
fn cli_refuses_bad_input() {
    let base = ["--seen", "26.8,0.05,-14.5", "--observer", "-10,1.7,-14"];
    for bad in [
        &["--velocity", "nan,0,2", "--since", "2"][..],
        &["--velocity", "0,0,2", "--since=-1"][..],
        &["--velocity", "0,0,2", "--since", "1e30"][..],
    ] {
        let out = cli(&[&base[..], bad].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad:?}: {err}");
        assert!(
            err.contains("error:") && !err.contains("panicked"),
            "{bad:?}: {err}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// A hand-made corridor

/// A corridor of five nodes 1 m apart along +x, and a sixth node beside the fourth that no
/// edge reaches (across a wall).
fn corridor() -> NavGraph {
    let mut nodes: Vec<Vec3> = (0..5).map(|i| Vec3::new(i as f32, 0.0, 0.0)).collect();
    nodes.push(Vec3::new(3.0, 0.0, 1.0));
    let edges = (0..4)
        .map(|i| Edge {
            a: i,
            b: i + 1,
            kinds: EdgeKinds::NONE,
            length: 1.0,
        })
        .collect();
    NavGraph::new(nodes, edges, &CostParams::standard()).unwrap()
}

/// A scene whose only triangles are a wall across z = -2.5 (x, y in -10..10) and, with
/// `across`, a wall at x = 1.25 across the corridor that its graph ignores.
fn walled(across: bool) -> Scene {
    let mut mesh = sightline::Mesh::default();
    let c = |x: f32, y: f32| Vec3::new(x, y, -2.5);
    mesh.push_quad(
        c(-10.0, -10.0),
        c(10.0, -10.0),
        c(10.0, 10.0),
        c(-10.0, 10.0),
        0,
    );
    if across {
        let c = |y: f32, z: f32| Vec3::new(1.25, y, z);
        mesh.push_quad(c(-1.0, -1.0), c(3.0, -1.0), c(3.0, 1.0), c(-1.0, 1.0), 0);
    }
    let wall = sightline::Material::new("wall", sightline::MaterialFlags::SOLID, 0.5);
    Scene::from_mesh(mesh, vec![wall]).unwrap()
}

#[test]
fn sight_walls_and_open_corridors_end_the_extrapolation_where_they_should() {
    let (engine, g, p) = (Engine::cpu(), corridor(), PredictParams::standard());
    let eye = Vec3::new(0.0, 1.7, -5.0);
    let along = Sighting {
        seen: Vec3::ZERO,
        velocity: Vec3::X,
        since: 2.0,
    };
    // Nothing hides the corridor: the first step after the sighting would have been seen.
    let r = predict(&engine, &Scene::new(vec![]), &g, eye, &along, &p).unwrap();
    assert_eq!((r.corrected_by, r.steps.len()), (Correction::Sight, 1));
    assert!(r.presumed_visible);
    assert_eq!((r.aim_node, r.time_to_aim), (Some(0), 0.0));
    // Behind the wall the whole line holds; the observer sees no node of the path.
    let scene = walled(false);
    let r = predict(&engine, &scene, &g, eye, &along, &p).unwrap();
    assert_eq!(r.corrected_by, Correction::None);
    assert_eq!((r.presumed, r.presumed_node), (Vec3::new(2.0, 0.0, 0.0), 2));
    assert_eq!((r.steps.len(), r.path.clone()), (5, vec![2, 1, 0]));
    assert_eq!((r.aim_node, r.presumed_visible), (None, false));
    // From node 3 toward node 5 (1 m away, no edge): stopped after the step still nearest
    // to node 3.
    let across = Sighting {
        seen: Vec3::new(3.0, 0.0, 0.0),
        velocity: Vec3::Z,
        since: 1.0,
    };
    let r = predict(&engine, &scene, &g, eye, &across, &p).unwrap();
    assert_eq!(r.corrected_by, Correction::Walls);
    assert_eq!((r.presumed, r.presumed_node), (Vec3::new(3.0, 0.0, 0.5), 3));
    // A wall the graph does not know of (its edges pass through it): the probe from the
    // step's node finds it.
    let r = predict(&engine, &walled(true), &g, eye, &along, &p).unwrap();
    assert_eq!(r.corrected_by, Correction::Walls);
    assert_eq!((r.presumed, r.presumed_node), (Vec3::new(1.0, 0.0, 0.0), 1));
}
