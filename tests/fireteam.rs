//! Fireteam movement (`sightline::fireteam`), checked against brute force and over many
//! seeded runs on scenes the parameters were not tuned on:
//!
//! - A* equals an O(n^2) Dijkstra's cost on 1,000 random graphs (cover-weighted);
//! - `ComputeStringPullPoint` on hand-made paths; exposure equals a brute-force sum of
//!   independently traced pairs, and a closed room is better cover than open ground;
//! - Kuhn-Munkres equals brute force over every permutation for teams up to 6, and the chosen
//!   destination set is the best of every set;
//! - 100 seeded runs (village, sniper, the Recast dungeon): no two members hold a node at
//!   overlapping times, frames step at most one edge per member, the threat maps stay in
//!   [0, 1], how many arrive, how long they keep the dispersion band;
//! - catch-up when a member is held back; a squad of three fireteams is deterministic.

#[path = "common/mod.rs"]
mod common;
#[path = "common/scenes.rs"]
mod scenes;

use glam::{Affine3A, Vec3};
use sightline::fireteam::eta::held;
use sightline::fireteam::{
    assign, choose_destinations, nearest_nodes, set_score, string_pull_point, CoverParams,
    DestParams, Order, Outcome, PathSearch, PlanParams, SimParams, Simulation, World,
};
use sightline::nav::{self, CostParams, Edge, EdgeKinds, NavGraph, NavParams};
use sightline::scene::procedural;
use sightline::tables::PrecomputeParams;
use sightline::trace::SplitMix64;
use sightline::{Engine, Mask, Mobility, Scene, Segment};
use std::collections::HashMap;

fn plane_scene(walls: &[(Vec3, Vec3)]) -> Scene {
    let mut mesh = sightline::Mesh::default();
    scenes::ground(&mut mesh, 200.0, 0.0);
    for &(lo, hi) in walls {
        scenes::cuboid(&mut mesh, lo, hi, scenes::SOLID);
    }
    let mut scene = Scene::new(scenes::materials());
    scene
        .add_object(mesh, Affine3A::IDENTITY, Mobility::Static)
        .unwrap();
    scene
}

/// A world on `graph` over `scene`: line of sight traced on the CPU engine.
fn world_of(scene: &Scene, graph: NavGraph) -> World {
    let engine = Engine::cpu();
    let table = nav::precompute(
        &engine,
        scene,
        "test",
        &graph,
        &PrecomputeParams {
            range: Some(100.0),
            ..Default::default()
        },
        None,
        None,
        |_, _, _| {},
    )
    .unwrap();
    World::new(graph, table, &CoverParams::standard()).unwrap()
}

/// A world from a scene's generated nav graph (largest component only).
fn scene_world(scene: &Scene) -> World {
    let engine = Engine::cpu();
    let (g, _) = nav::generate(
        &engine,
        scene,
        &NavParams::with_spacing(2.0),
        &CostParams::standard(),
    )
    .unwrap();
    let label = g.components().label;
    let (g, _) = g
        .subgraph(|i| label[i as usize] == 0, &CostParams::standard())
        .unwrap();
    world_of(scene, g)
}

// ---------------------------------------------------------------------------------------------
// Paths

/// An O(n^2) Dijkstra with no heap: the cost of the cheapest path, walking `e` between `u` and
/// `v` costing `costs[e] * (1 + w * (exposure[u] + exposure[v]) / 2)`.
fn dijkstra(world: &World, from: u32, to: u32, w: f32) -> Option<f64> {
    let g = world.graph();
    let n = g.len();
    let mut dist = vec![f64::INFINITY; n];
    let mut done = vec![false; n];
    dist[from as usize] = 0.0;
    loop {
        let u = (0..n)
            .filter(|&i| !done[i])
            .min_by(|&a, &b| dist[a].total_cmp(&dist[b]))?;
        if !dist[u].is_finite() {
            return None;
        }
        if u == to as usize {
            return Some(dist[u]);
        }
        done[u] = true;
        for &(v, e) in g.neighbours(u as u32) {
            let step = f64::from(g.costs()[e as usize])
                * (1.0
                    + f64::from(w)
                        * 0.5
                        * f64::from(world.exposure()[u] + world.exposure()[v as usize]));
            dist[v as usize] = dist[v as usize].min(dist[u] + step);
        }
    }
}

#[test]
fn a_star_equals_dijkstra_on_1000_random_graphs() {
    let scene = plane_scene(&[(Vec3::new(-3.0, 0.0, -3.0), Vec3::new(3.0, 3.0, 3.0))]);
    let mut rng = SplitMix64(7);
    let mut search = PathSearch::new();
    let (mut compared, mut unreachable) = (0, 0);
    for _ in 0..1000 {
        let n = 2 + (rng.next_u64() % 60) as usize;
        let nodes: Vec<Vec3> = (0..n)
            .map(|_| Vec3::new(rng.range(-30.0, 30.0), 0.0, rng.range(-30.0, 30.0)))
            .collect();
        let mut edges = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                if nodes[a].distance(nodes[b]) < 15.0 && rng.f32() < 0.7 {
                    let kinds = [EdgeKinds::NONE, EdgeKinds::STAIRS, EdgeKinds::WATER]
                        [(rng.next_u64() % 3) as usize];
                    // Ground length at least the straight distance (as a walk measures it).
                    let length = nodes[a].distance(nodes[b]) * rng.range(1.0, 1.5);
                    edges.push(Edge {
                        a: a as u32,
                        b: b as u32,
                        kinds,
                        length,
                    });
                }
            }
        }
        let graph = NavGraph::new(nodes, edges, &CostParams::standard()).unwrap();
        let world = world_of(&scene, graph);
        let (from, to) = (
            (rng.next_u64() % n as u64) as u32,
            (rng.next_u64() % n as u64) as u32,
        );
        let w = rng.range(0.0, 2.0);
        let found = search.find(&world, from, to, w);
        match (found, dijkstra(&world, from, to, w)) {
            (Some(p), Some(d)) => {
                compared += 1;
                assert!(
                    (f64::from(p.cost) - d).abs() <= 1e-4 * d.max(1.0),
                    "A* {} vs Dijkstra {d}",
                    p.cost
                );
                // The path is a real walk with that cost.
                assert_eq!((p.nodes[0], *p.nodes.last().unwrap()), (from, to));
                let g = world.graph();
                let mut cost = 0.0f64;
                for s in p.nodes.windows(2) {
                    let &(_, e) = g
                        .neighbours(s[0])
                        .iter()
                        .find(|x| x.0 == s[1])
                        .expect("adjacent");
                    cost += f64::from(g.costs()[e as usize])
                        * (1.0
                            + f64::from(w)
                                * 0.5
                                * f64::from(
                                    world.exposure()[s[0] as usize]
                                        + world.exposure()[s[1] as usize],
                                ));
                }
                assert!((cost - d).abs() <= 1e-3 * d.max(1.0));
            }
            (None, None) => unreachable += 1,
            (a, b) => panic!("A* {a:?} but Dijkstra {b:?}"),
        }
    }
    eprintln!("A* = Dijkstra on {compared} reachable pairs ({unreachable} unreachable, agreed)");
    assert!(compared > 500);
}

#[test]
fn string_pull_point_as_written() {
    // Visibility from w: a set of path indices it sees.
    let path: Vec<u32> = (0..8).collect();
    let sees = |vis: &'static [u32]| move |_w: u32, i: usize| vis.contains(&(i as u32));
    // Current visible: advance while the next is visible.
    assert_eq!(string_pull_point(sees(&[2, 3, 4, 6]), 99, &path, 2), 4);
    // Current visible, next not: stays.
    assert_eq!(string_pull_point(sees(&[2, 5]), 99, &path, 2), 2);
    // Current not visible: advance while the next is not visible; stops before a visible one.
    assert_eq!(string_pull_point(sees(&[5, 6]), 99, &path, 1), 4);
    // Nothing visible: runs to the end.
    assert_eq!(string_pull_point(sees(&[]), 99, &path, 0), 7);
    // Already at the end.
    assert_eq!(string_pull_point(sees(&[7]), 99, &path, 7), 7);
    assert_eq!(string_pull_point(sees(&[]), 99, &path, 7), 7);
    // Everything visible from the start: the goal.
    assert_eq!(
        string_pull_point(sees(&[0, 1, 2, 3, 4, 5, 6, 7]), 99, &path, 0),
        7
    );
}

// ---------------------------------------------------------------------------------------------
// Cover

fn grid_graph(lo: f32, hi: f32, keep: impl Fn(Vec3) -> bool) -> NavGraph {
    let mut nodes = Vec::new();
    let mut x = lo;
    while x <= hi {
        let mut z = lo;
        while z <= hi {
            let p = Vec3::new(x, 0.0, z);
            if keep(p) {
                nodes.push(p);
            }
            z += 2.0;
        }
        x += 2.0;
    }
    let mut edges = Vec::new();
    for a in 0..nodes.len() {
        for b in a + 1..nodes.len() {
            let d = nodes[a].distance(nodes[b]);
            if d < 2.9 {
                edges.push(Edge {
                    a: a as u32,
                    b: b as u32,
                    kinds: EdgeKinds::NONE,
                    length: d,
                });
            }
        }
    }
    NavGraph::new(nodes, edges, &CostParams::standard()).unwrap()
}

#[test]
fn exposure_equals_brute_force_and_a_closed_room_is_cover() {
    // A closed 6 m room (walls 0.4 m thick, 3 m high) in open ground.
    let walls = [
        (Vec3::new(9.6, 0.0, 9.6), Vec3::new(16.4, 3.0, 10.0)),
        (Vec3::new(9.6, 0.0, 16.0), Vec3::new(16.4, 3.0, 16.4)),
        (Vec3::new(9.6, 0.0, 9.6), Vec3::new(10.0, 3.0, 16.4)),
        (Vec3::new(16.0, 0.0, 9.6), Vec3::new(16.4, 3.0, 16.4)),
    ];
    let scene = plane_scene(&walls);
    let graph = grid_graph(-20.0, 20.0, |p| {
        let in_wall = walls.iter().any(|(lo, hi)| {
            p.x > lo.x - 0.5 && p.x < hi.x + 0.5 && p.z > lo.z - 0.5 && p.z < hi.z + 0.5
        });
        !in_wall
    });
    let world = world_of(&scene, graph);
    let nodes = world.graph().nodes().to_vec();
    // Brute force: every ordered pair traced on its own, summed as the docs define.
    let engine = Engine::cpu();
    let lift = Vec3::Y * 1.7;
    let mut raw = vec![0.0f64; nodes.len()];
    for i in 0..nodes.len() {
        // Traced from the lower index to the higher, as the table traces each pair.
        let segs: Vec<Segment> = (0..nodes.len())
            .filter(|&j| j != i)
            .map(|j| {
                let (a, b) = (i.min(j), i.max(j));
                Segment::new(nodes[a] + lift, nodes[b] + lift)
            })
            .collect();
        let blocked = engine.occluded(&scene, &segs, Mask::SIGHT).unwrap();
        for (k, j) in (0..nodes.len()).filter(|&j| j != i).enumerate() {
            let d = nodes[j].distance(nodes[i]);
            if !blocked.get(k) && d <= 100.0 {
                raw[i] += f64::from(0.95 / d.max(2.0).powi(2));
            }
        }
    }
    // Normalised by the 99th percentile, at most 1.
    let mut sorted = raw.clone();
    sorted.sort_by(f64::total_cmp);
    let top = sorted[(sorted.len() - 1) * 99 / 100];
    for (i, r) in raw.iter().enumerate() {
        let (e, want) = (f64::from(world.exposure()[i]), (r / top).min(1.0));
        assert!(
            (e - want).abs() < 1e-4,
            "node {i}: {e} vs brute force {want}"
        );
    }
    let inside: Vec<usize> = (0..nodes.len())
        .filter(|&i| (10.0..16.0).contains(&nodes[i].x) && (10.0..16.0).contains(&nodes[i].z))
        .collect();
    assert!(!inside.is_empty());
    let open_centre = (0..nodes.len())
        .min_by(|&a, &b| nodes[a].length().total_cmp(&nodes[b].length()))
        .unwrap();
    for &i in &inside {
        assert!(
            world.exposure()[i] < 0.5 * world.exposure()[open_centre],
            "room node {} exposure {} vs open {}",
            nodes[i],
            world.exposure()[i],
            world.exposure()[open_centre]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Destinations

#[test]
fn kuhn_munkres_equals_brute_force_up_to_six() {
    let mut rng = SplitMix64(3);
    for trial in 0..600 {
        let n = 1 + trial % 6;
        let m: Vec<Vec<f32>> = (0..n)
            .map(|_| {
                (0..n)
                    .map(|_| {
                        if rng.f32() < 0.1 {
                            f32::INFINITY
                        } else {
                            rng.range(0.0, 80.0)
                        }
                    })
                    .collect()
            })
            .collect();
        let pick = assign(&m);
        let mut seen = vec![false; n];
        for &d in &pick {
            assert!(
                !std::mem::replace(&mut seen[d], true),
                "destination used twice"
            );
        }
        let total = |p: &[usize]| -> (usize, f64) {
            let inf = p
                .iter()
                .enumerate()
                .filter(|(i, &d)| !m[*i][d].is_finite())
                .count();
            let sum = p
                .iter()
                .enumerate()
                .filter(|(i, &d)| m[*i][d].is_finite())
                .map(|(i, &d)| f64::from((m[i][d] * 1000.0).round()))
                .sum();
            (inf, sum)
        };
        let mut best = (usize::MAX, f64::INFINITY);
        permutations(&mut (0..n).collect::<Vec<_>>(), 0, &mut |p| {
            let t = total(p);
            if t.0 < best.0 || (t.0 == best.0 && t.1 < best.1) {
                best = t;
            }
        });
        let got = total(&pick);
        assert_eq!(got.0, best.0, "trial {trial}: unreachable pairs");
        assert!(
            (got.1 - best.1).abs() < 0.5,
            "trial {trial}: {} vs brute force {}",
            got.1,
            best.1
        );
    }
}

fn permutations(v: &mut Vec<usize>, k: usize, f: &mut impl FnMut(&[usize])) {
    if k == v.len() {
        f(v);
        return;
    }
    for i in k..v.len() {
        v.swap(k, i);
        permutations(v, k + 1, f);
        v.swap(k, i);
    }
}

#[test]
fn chosen_destinations_are_the_best_set() {
    let scene = plane_scene(&[(Vec3::new(2.0, 0.0, -1.0), Vec3::new(2.6, 1.5, 5.0))]);
    let world = world_of(
        &scene,
        grid_graph(-12.0, 12.0, |p| {
            !(p.x > 1.4 && p.x < 3.2 && p.z > -1.6 && p.z < 5.6)
        }),
    );
    let goal = world.graph().nearest(Vec3::ZERO).unwrap();
    let plan = PlanParams::standard();
    let dest = DestParams {
        radius: 5.0,
        ..DestParams::standard()
    };
    for members in 1..=4 {
        let got = choose_destinations(&world, goal, members, &[], None, &plan, &dest).unwrap();
        assert_eq!(got.len(), members);
        let nodes = world.graph().nodes();
        let pool: Vec<u32> = (0..nodes.len() as u32)
            .filter(|&v| nodes[v as usize].distance(nodes[goal as usize]) <= 5.0)
            .collect();
        let mut best = f32::INFINITY;
        let mut set = Vec::new();
        fn all(
            pool: &[u32],
            k: usize,
            from: usize,
            set: &mut Vec<u32>,
            f: &mut impl FnMut(&[u32]),
        ) {
            if set.len() == k {
                return f(set);
            }
            for i in from..pool.len() {
                set.push(pool[i]);
                all(pool, k, i + 1, set, f);
                set.pop();
            }
        }
        all(&pool, members, 0, &mut set, &mut |s| {
            best = best.min(set_score(&world, s, None, &plan));
        });
        let score = set_score(&world, &got, None, &plan);
        assert!(
            score <= best + 1e-5,
            "{members} members: {score} vs the best set's {best}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Runs

/// Every pair of members holds no node at overlapping times (over everything they did and
/// still forecast), and every member's stops are in time order.
fn assert_no_shared_holds(out: &Outcome) {
    let mut holds: HashMap<u32, Vec<(usize, f32, f32)>> = HashMap::new();
    for (m, stops) in out.stops.iter().enumerate() {
        for k in 0..stops.len() {
            let s = stops[k];
            assert!(s.arrive <= s.depart, "member {m} stop {k}: {s:?}");
            if k + 1 < stops.len() {
                assert!(
                    s.depart <= stops[k + 1].arrive,
                    "member {m}: stops out of order"
                );
            }
            let (a, b) = held(stops, k);
            holds.entry(s.node).or_default().push((m, a, b));
        }
    }
    for (node, h) in &holds {
        for i in 0..h.len() {
            for j in i + 1..h.len() {
                let (p, q) = (h[i], h[j]);
                if p.0 != q.0 {
                    assert!(
                        !(p.1 < q.2 && q.1 < p.2),
                        "members {} and {} both hold node {node}: {:?} and {:?}",
                        p.0,
                        q.0,
                        (p.1, p.2),
                        (q.1, q.2)
                    );
                }
            }
        }
    }
}

/// Frames: members in the same order, each moving at most one edge between frames.
fn assert_frames_step(world: &World, out: &Outcome) {
    let g = world.graph();
    for w in out.frames.windows(2) {
        assert_eq!(w[0].members.len(), w[1].members.len());
        assert!(w[0].t <= w[1].t);
        for (a, b) in w[0].members.iter().zip(&w[1].members) {
            assert_eq!(a.team, b.team);
            assert!(
                a.node == b.node || g.neighbours(a.node).iter().any(|x| x.0 == b.node),
                "a member jumped from {} to {} between frames",
                a.node,
                b.node
            );
        }
        assert!(w[1].tpm_max <= 1.0 && w[1].tpm_mean >= 0.0);
    }
}

#[derive(Default)]
struct Tally {
    runs: usize,
    arrived: usize,
    band: f64,
    catch_ups: usize,
}

/// `runs` seeded moves of 4 members between random nodes at least 40 m apart.
fn seeded_runs(world: &World, runs: usize, seed: u64, tally: &mut Tally) {
    let g = world.graph();
    let nodes = g.nodes();
    let mut rng = SplitMix64(seed);
    for r in 0..runs {
        let (from, to) = loop {
            let a = (rng.next_u64() % g.len() as u64) as u32;
            let b = (rng.next_u64() % g.len() as u64) as u32;
            if nodes[a as usize].distance(nodes[b as usize]) >= 40.0 {
                break (a, b);
            }
        };
        let order = Order {
            start: nearest_nodes(g, from, 4),
            goal: to,
            sector: Some((0.0, 90.0)),
        };
        let mut sim =
            Simulation::new(world, &[order], SimParams::standard(), seed + r as u64).unwrap();
        while sim.advance().unwrap() {
            let raw = sim.tpm().raw();
            assert!(
                raw.iter().all(|v| (0.0..=1.0).contains(v)),
                "run {r}: a threat value left [0, 1]"
            );
        }
        let out = sim.finish();
        assert_no_shared_holds(&out);
        assert_frames_step(world, &out);
        tally.runs += 1;
        tally.arrived += usize::from(out.arrived);
        if !out.arrived {
            let last = out.frames.last().unwrap();
            eprintln!(
                "run {r} (seed {seed}) did not arrive: goal {} at {}, destinations {:?}, members at {:?}, {} plans, {} catch-ups",
                to,
                nodes[to as usize],
                out.destinations[0],
                last.members.iter().map(|m| (m.node, nodes[m.node as usize].to_array().map(|x| x.round()))).collect::<Vec<_>>(),
                out.report.plans,
                out.report.catch_ups
            );
        }
        tally.band += out.report.band_share();
        tally.catch_ups += out.report.catch_ups;
        if out.arrived {
            // Everyone stands on its own destination, one per member.
            let last = out.frames.last().unwrap();
            let mut at: Vec<u32> = last.members.iter().map(|m| m.node).collect();
            let mut dest = out.destinations[0].clone();
            at.sort_unstable();
            dest.sort_unstable();
            assert_eq!(at, dest, "run {r}: arrived but not on the destinations");
        }
    }
}

#[test]
fn hundred_seeded_runs_share_no_node_and_arrive() {
    let mut tally = Tally::default();
    let village = scene_world(&procedural::village(1, 1));
    seeded_runs(&village, 50, 100, &mut tally);
    let sniper = scene_world(&procedural::sniper(1, 1));
    seeded_runs(&sniper, 40, 200, &mut tally);
    let (dungeon, _) =
        sightline::scene::load_obj(common::data_dir().join("dungeon.obj"), &Default::default())
            .unwrap();
    let dungeon = scene_world(&dungeon);
    seeded_runs(&dungeon, 10, 300, &mut tally);
    let share = tally.arrived as f64 / tally.runs as f64;
    let band = tally.band / tally.runs as f64;
    eprintln!(
        "{} runs: {} arrived ({:.0}%); dispersion band kept {:.0}% of member-frames on average; \
         {} catch-ups",
        tally.runs,
        tally.arrived,
        100.0 * share,
        100.0 * band,
        tally.catch_ups
    );
    assert_eq!(tally.runs, 100);
    assert!(share >= 0.9, "only {:.0}% of runs arrived", 100.0 * share);
    assert!(
        band >= 0.5,
        "the band was kept only {:.0}% of the time",
        100.0 * band
    );
}

/// `urban` (multi-storey buildings, stairwells, alleys): layout seed 1 (whose failures shaped
/// the stall rules) and layout seed 2, held out until those rules were fixed.
#[test]
fn urban_runs() {
    let mut tally = Tally::default();
    let urban = scene_world(&procedural::urban(1, 1));
    seeded_runs(&urban, 30, 400, &mut tally);
    let urban = scene_world(&procedural::urban(2, 1));
    seeded_runs(&urban, 30, 500, &mut tally);
    let share = tally.arrived as f64 / tally.runs as f64;
    eprintln!(
        "urban: {} runs, {} arrived ({:.0}%), dispersion band {:.0}%, {} catch-ups",
        tally.runs,
        tally.arrived,
        100.0 * share,
        100.0 * tally.band / tally.runs as f64,
        tally.catch_ups
    );
    assert!(
        share >= 0.9,
        "only {:.0}% of urban runs arrived",
        100.0 * share
    );
}

#[test]
fn catch_up_when_a_member_is_held_back() {
    let world = scene_world(&procedural::sniper(1, 1));
    let g = world.graph();
    let from = g.nearest(Vec3::new(-50.0, 0.0, 0.0)).unwrap();
    let to = g.nearest(Vec3::new(50.0, 0.0, 0.0)).unwrap();
    let order = Order {
        start: nearest_nodes(g, from, 4),
        goal: to,
        sector: None,
    };
    let free = Simulation::new(
        &world,
        std::slice::from_ref(&order),
        SimParams::standard(),
        1,
    )
    .unwrap()
    .run()
    .unwrap();
    let mut sim = Simulation::new(&world, &[order], SimParams::standard(), 1).unwrap();
    sim.hold(3, 40.0);
    let held = sim.run().unwrap();
    eprintln!(
        "catch-ups by member: {:?} free, {:?} with member 3 held for 40 s; arrived {} / {}",
        free.report.catch_ups_by_member,
        held.report.catch_ups_by_member,
        free.arrived,
        held.arrived
    );
    assert!(held.report.catch_ups_by_member[3] > free.report.catch_ups_by_member[3]);
    assert!(
        held.arrived,
        "the held-back member rejoined and the team arrived"
    );
    // It stood still while held.
    let first_move = held.stops[3][0].depart;
    assert!(first_move >= 40.0 - 1e-3, "member 3 left at {first_move}");
}

#[test]
fn a_squad_of_three_fireteams_is_deterministic() {
    let world = scene_world(&procedural::village(1, 1));
    let g = world.graph();
    let from = g.nearest(Vec3::new(-30.0, 0.0, 30.0)).unwrap();
    let starts = nearest_nodes(g, from, 12);
    let goals = [
        Vec3::new(10.0, 0.0, -30.0),
        Vec3::new(0.0, 0.0, -20.0),
        Vec3::new(-10.0, 0.0, -30.0),
    ];
    let orders: Vec<Order> = starts
        .chunks(4)
        .zip(goals)
        .map(|(s, goal)| Order {
            start: s.to_vec(),
            goal: g.nearest(goal).unwrap(),
            sector: None,
        })
        .collect();
    let run = |seed| {
        Simulation::new(&world, &orders, SimParams::standard(), seed)
            .unwrap()
            .run()
            .unwrap()
    };
    let (a, b) = (run(5), run(5));
    assert_eq!(a, b, "same seed, same run");
    assert_no_shared_holds(&a);
    assert_frames_step(&world, &a);
    assert!(a.arrived, "the squad arrived");
    let mut all: Vec<u32> = a.destinations.concat();
    all.sort_unstable();
    all.dedup();
    assert_eq!(
        all.len(),
        12,
        "every member of the squad has its own destination"
    );
    assert_eq!(a.frames[0].members.len(), 12);
}

#[test]
fn bad_input_is_refused() {
    let world = scene_world(&procedural::rock(1, 1));
    let g = world.graph();
    let ok = Order {
        start: vec![0, 1],
        goal: 2,
        sector: None,
    };
    let err = |o: Order, p: SimParams| {
        Simulation::new(&world, &[o], p, 1)
            .err()
            .expect("refused")
            .to_string()
    };
    assert!(err(
        Order {
            start: vec![0, 0],
            ..ok.clone()
        },
        SimParams::standard()
    )
    .contains("two members start at node 0"));
    assert!(err(
        Order {
            goal: g.len() as u32,
            ..ok.clone()
        },
        SimParams::standard()
    )
    .contains("out of range"));
    assert!(err(
        Order {
            start: vec![],
            ..ok.clone()
        },
        SimParams::standard()
    )
    .contains("at least one"));
    let mut p = SimParams::standard();
    p.plan.lookahead = 0;
    assert!(err(ok.clone(), p).contains("look-ahead"));
    let mut p = SimParams::standard();
    p.plan.speed = f32::NAN;
    assert!(err(ok.clone(), p).contains("positive"));
    assert!(err(
        Order {
            sector: Some((f32::NAN, 3.0)),
            ..ok.clone()
        },
        SimParams::standard()
    )
    .contains("sector"));
    assert!(Simulation::new(&world, &[], SimParams::standard(), 1).is_err());
}
