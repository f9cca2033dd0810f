//! The ring node graph (`sightline::ring`), proved on scenes with known answers:
//!
//! - a wall of known size clamps the node behind it to the wall's near side, one body radius
//!   off, and hides exactly the nodes whose line of fire crosses it;
//! - a walled courtyard's node gets no connection and is pruned; every generated node is
//!   accounted for;
//! - every criterion against an independent computation (segment and box tests, Dijkstra);
//! - and, or, not, weights, products, filters and curves compose exactly;
//! - the A* path costs what an independent Dijkstra (the `pathfinding` crate) finds;
//! - 64 graphs on `village` score identically on the GPU and the CPU, in one batch;
//! - an incremental rebuild under a budget equals the one-shot build and scores;
//! - a node that takes the ground at its spot keeps to the storey of the nodes inside it;
//! - a room whose only doorway faces away from the centre is joined to it by a way found on
//!   the walk surface (every connection still a straight walk, the walk to the room close to
//!   the shortest), and the same under an incremental rebuild;
//! - a floor reached from the centre's terrace only down a stair flight is explored: its
//!   nodes are reached, cover there is chosen, and the same under an incremental rebuild;
//! - graphs built together (`RingGraph::build_many`) are the graphs built one by one;
//! - annotations, leashing, and bad input.

#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/scenes.rs"]
mod scenes;

use glam::{Affine3A, Vec2, Vec3};
use scenes::{cuboid, ground, materials, FOLIAGE, GROUND, SOLID};
use sightline::nav::{NavParams, WalkSurface};
use sightline::ring::{
    score_batch, Annotation, Criterion, Curve, Design, Incremental, NodeKind, RingGraph,
    RingParams, Score, ScoreCost, Scores, Shooter, Situation, Zone,
};
use sightline::scene::procedural;
use sightline::{Engine, Mesh, Mobility, Scene};
use std::sync::OnceLock;

/// The wall the tests know: x 5.5..5.9, z -3..3, 3 m high.
const WALL: (Vec3, Vec3) = (Vec3::new(5.5, 0.0, -3.0), Vec3::new(5.9, 3.0, 3.0));
/// A hedge (blocks sight, not fire): x -5.9..-5.5, z -3..3.
const HEDGE: (Vec3, Vec3) = (Vec3::new(-5.9, 0.0, -3.0), Vec3::new(-5.5, 3.0, 3.0));

fn params(rings: u32, per_ring: u32, radius: f32) -> RingParams {
    RingParams {
        rings,
        per_ring,
        radius,
        ..RingParams::standard()
    }
}

/// Open ground 40 m across with the wall and the hedge; with `courtyard`, a closed 2 m x 2 m
/// yard of walls around (0, 6).
fn wall_scene(courtyard: bool) -> (Scene, WalkSurface) {
    let mut mesh = Mesh::default();
    ground(&mut mesh, 20.0, 0.0);
    cuboid(&mut mesh, WALL.0, WALL.1, SOLID);
    cuboid(&mut mesh, HEDGE.0, HEDGE.1, FOLIAGE);
    if courtyard {
        for (lo, hi) in [
            ((-1.3, 4.7), (1.3, 5.0)),
            ((-1.3, 7.0), (1.3, 7.3)),
            ((-1.3, 4.7), (-1.0, 7.3)),
            ((1.0, 4.7), (1.3, 7.3)),
        ] {
            cuboid(
                &mut mesh,
                Vec3::new(lo.0, 0.0, lo.1),
                Vec3::new(hi.0, 3.0, hi.1),
                SOLID,
            );
        }
    }
    walkable(mesh)
}

/// A scene of one static mesh and its walk surface.
fn walkable(mesh: Mesh) -> (Scene, WalkSurface) {
    let mut scene = Scene::new(materials());
    scene
        .add_object(mesh, Affine3A::IDENTITY, Mobility::Static)
        .unwrap();
    let surface = WalkSurface::build(&Engine::cpu(), &scene, &NavParams::standard()).unwrap();
    (scene, surface)
}

fn walls() -> &'static (Scene, WalkSurface) {
    static S: OnceLock<(Scene, WalkSurface)> = OnceLock::new();
    S.get_or_init(|| wall_scene(false))
}

fn village() -> &'static (Scene, WalkSurface) {
    static S: OnceLock<(Scene, WalkSurface)> = OnceLock::new();
    S.get_or_init(|| {
        let scene = procedural::village(1, 1);
        let surface = WalkSurface::build(&Engine::cpu(), &scene, &NavParams::standard()).unwrap();
        (scene, surface)
    })
}

/// Whether the open segment a-b passes through the inside of the box (slab test).
fn crosses(a: Vec3, b: Vec3, (lo, hi): (Vec3, Vec3)) -> bool {
    let d = b - a;
    let (mut t0, mut t1) = (0.0f32, 1.0f32);
    for k in 0..3 {
        if d[k].abs() < 1e-9 {
            if a[k] <= lo[k] || a[k] >= hi[k] {
                return false;
            }
            continue;
        }
        let (mut u, mut v) = ((lo[k] - a[k]) / d[k], (hi[k] - a[k]) / d[k]);
        if u > v {
            std::mem::swap(&mut u, &mut v);
        }
        t0 = t0.max(u);
        t1 = t1.min(v);
    }
    t0 < t1
}

fn raw(graph: &RingGraph, scene: &Scene, s: &Situation, c: Criterion) -> Vec<f32> {
    graph
        .score(
            &Engine::cpu(),
            scene,
            s,
            &Score::is(c).or(Score::Constant(0.0)),
        )
        .unwrap()
        .score
}

/// Metres along the edges from node 0 to every node (infinite where none leads), by
/// Bellman-Ford: independent of the graph's own search.
fn bellman_ford(graph: &RingGraph) -> Vec<f32> {
    let n = graph.len();
    let mut d = vec![f32::INFINITY; n];
    d[0] = 0.0;
    for _ in 0..n {
        for (e, l) in graph.edges().iter().zip(graph.lengths()) {
            let (a, b) = (e[0] as usize, e[1] as usize);
            d[b] = d[b].min(d[a] + l);
            d[a] = d[a].min(d[b] + l);
        }
    }
    d
}

fn raw_curve(graph: &RingGraph, scene: &Scene, s: &Situation, c: Criterion) -> Vec<f32> {
    // Distances in metres: read through a linear curve spanning them, then undo it.
    let v = graph
        .score(
            &Engine::cpu(),
            scene,
            s,
            &Score::of(
                c,
                Curve::Linear {
                    from: 0.0,
                    to: 1000.0,
                },
            ),
        )
        .unwrap()
        .score;
    v.iter().map(|x| x * 1000.0).collect()
}

#[test]
fn a_wall_clamps_the_node_behind_it_to_its_near_side() {
    let (_, surface) = walls();
    // Ring gap 2 m: on the +x spoke ring 2 stands at x = 4 and ring 3 at x = 6, inside the
    // wall's far side; the walk from x = 4 stops at the wall after more than half the way.
    let graph =
        RingGraph::build(surface, Vec3::ZERO, &params(4, 8, 8.0), &Design::default()).unwrap();
    let node = |ring, slot| {
        graph
            .nodes()
            .iter()
            .position(|n| n.ring == ring && n.slot == slot)
            .map(|i| (i as u32, graph.nodes()[i]))
    };
    let (i3, n3) = node(3, 0).expect("the node behind the wall is clamped, not dropped");
    assert_eq!(n3.kind, NodeKind::Clamped);
    let face = WALL.0.x;
    // One body radius (0.3 m) off the face, within one fine step (0.25 m).
    assert!(
        n3.position.x <= face - 0.3 && n3.position.x >= face - 0.3 - 0.25 - 1e-4,
        "clamped to {}",
        n3.position
    );
    assert!(
        n3.position.z.abs() <= 0.25,
        "clamped off the spoke: {}",
        n3.position
    );
    let (i2, _) = node(2, 0).unwrap();
    assert!(
        graph.edges().contains(&[i2.min(i3), i2.max(i3)]),
        "the clamped node stays connected to the node inside it"
    );
    // Without clamping (C = 100 %) the same node is not moved.
    let strict = RingGraph::build(
        surface,
        Vec3::ZERO,
        &RingParams {
            clamp: 1.0,
            ..params(4, 8, 8.0)
        },
        &Design::default(),
    )
    .unwrap();
    assert!(strict.nodes().iter().all(|n| n.kind != NodeKind::Clamped));
    assert_eq!(strict.report().clamped, 0);
    assert!(graph.report().clamped >= 1);
    // A clamp share of zero clamps whatever part of a walk got through.
    let eager = RingGraph::build(
        surface,
        Vec3::ZERO,
        &RingParams {
            clamp: 0.0,
            ..params(4, 8, 8.0)
        },
        &Design::default(),
    )
    .unwrap();
    assert!(eager.report().clamped >= graph.report().clamped);
}

#[test]
fn unconnected_nodes_are_pruned_and_every_node_is_accounted_for() {
    let (_, surface) = wall_scene(true);
    let p = RingParams {
        clamp: 1.0,
        ..params(4, 8, 8.0)
    };
    let graph = RingGraph::build(&surface, Vec3::ZERO, &p, &Design::default()).unwrap();
    let r = graph.report();
    assert!(r.pruned >= 1, "{r:?}");
    for n in graph.nodes() {
        let p = n.position;
        assert!(
            !(p.x.abs() < 1.0 && p.z > 5.0 && p.z < 7.0),
            "a node inside the closed yard survived: {p}"
        );
    }
    for i in 1..graph.len() as u32 {
        assert!(
            !graph.neighbours(i).is_empty(),
            "node {i} has no connection"
        );
    }
    let kept = graph.nodes().iter().filter(|n| n.ring > 0).count() as u32;
    assert_eq!(
        kept + r.pruned + r.merged + r.unplaced + r.leashed_out,
        r.generated,
        "{r:?}"
    );
    // The same on the village, at the default size.
    let (_, v) = village();
    let g = RingGraph::build(
        v,
        Vec3::new(-19.0, 0.05, 12.0),
        &RingParams::standard(),
        &Design::default(),
    )
    .unwrap();
    let r = g.report();
    let kept = g.nodes().iter().filter(|n| n.ring > 0).count() as u32;
    assert_eq!(
        kept + r.pruned + r.merged + r.unplaced + r.leashed_out,
        1024,
        "{r:?}"
    );
    assert!(g.len() > 900, "{} nodes", g.len());
}

#[test]
// Every criterion is checked node by node against closures of the node index.
#[allow(clippy::needless_range_loop)]
fn each_criterion_matches_an_independent_computation() {
    let (scene, surface) = walls();
    let graph = RingGraph::build(
        surface,
        Vec3::ZERO,
        &params(6, 16, 12.0),
        &Design::default(),
    )
    .unwrap();
    let n = graph.len();
    let body = |k: usize| graph.nodes()[k].position + Vec3::Y;
    let eye = |k: usize| graph.nodes()[k].position + Vec3::Y * 1.6;

    // In cover: exactly the nodes whose line of fire from the threat crosses the wall.
    let threat = Vec3::new(14.0, 1.6, 0.5);
    let mut s = Situation::new(vec![Shooter::at(threat)]);
    let cover = raw(&graph, scene, &s, Criterion::InCover);
    let hidden = (0..n).filter(|&k| crosses(threat, body(k), WALL)).count();
    assert!(hidden >= 5, "the wall should hide some nodes, hid {hidden}");
    for k in 0..n {
        assert_eq!(cover[k] == 1.0, crosses(threat, body(k), WALL), "node {k}");
    }
    // A hedge is concealment, not cover.
    let west = Vec3::new(-14.0, 1.6, 0.5);
    let s_west = Situation::new(vec![Shooter::at(west)]);
    let cover_west = raw(&graph, scene, &s_west, Criterion::InCover);
    for k in 0..n {
        assert_eq!(
            cover_west[k] == 1.0,
            crosses(west, body(k), WALL),
            "node {k}"
        );
    }

    // Enemy field of fire: in the threat's 30-degree cone and not behind the wall; two
    // threats give shares.
    let aimed = Shooter::aiming(threat, Vec3::new(0.0, 1.0, 8.0), 30f32.to_radians());
    s.threats = vec![aimed, Shooter::at(west)];
    let enemy = raw(&graph, scene, &s, Criterion::EnemyFire);
    for k in 0..n {
        let a = f32::from(u8::from(
            aimed.covers(body(k)) && !crosses(threat, body(k), WALL),
        ));
        let b = f32::from(u8::from(!crosses(west, body(k), WALL)));
        assert!((enemy[k] - (a + b) / 2.0).abs() < 1e-6, "node {k}");
    }
    // Friendly field of fire: nodes in a friend's 10-degree cone towards the east with a clear
    // line of fire.
    let friend = Shooter::aiming(Vec3::new(-12.0, 1.6, 1.0), Vec3::new(12.0, 1.6, 1.0), 0.17);
    s.friends = vec![friend];
    let friendly = raw(&graph, scene, &s, Criterion::FriendlyFire);
    let mut inside = 0;
    for k in 0..n {
        let want = friend.covers(body(k)) && !crosses(friend.eye, body(k), WALL);
        inside += usize::from(want);
        assert_eq!(friendly[k] == 1.0, want, "node {k}");
    }
    assert!(inside >= 3);

    // Line of sight to the target: the hedge blocks it, as does the wall.
    s.target = Some(Vec3::new(-14.0, 1.6, 0.5));
    let sight = raw(&graph, scene, &s, Criterion::TargetSight);
    let mut blocked = 0;
    for k in 0..n {
        let t = s.target.unwrap();
        let hid = crosses(eye(k), t, HEDGE) || crosses(eye(k), t, WALL);
        blocked += usize::from(hid);
        assert_eq!(sight[k] == 0.0, hid, "node {k}");
    }
    assert!(blocked >= 3);
    // Distance to the target, metres.
    let dist = raw_curve(&graph, scene, &s, Criterion::TargetDistance);
    for k in 0..n {
        assert!((dist[k] - eye(k).distance(s.target.unwrap())).abs() < 1e-3);
    }
    // Distance to move: an independent Bellman-Ford over the edges.
    assert_move_distance(&graph, scene, &s);
    // Zones and annotations.
    assert_zones(&graph, scene, &mut s);
}

/// The move-distance criterion is the metres along the edges an independent Bellman-Ford
/// finds (1,000 where none leads).
fn assert_move_distance(graph: &RingGraph, scene: &Scene, s: &Situation) {
    let d = bellman_ford(graph);
    let walk = raw_curve(graph, scene, s, Criterion::MoveDistance);
    for k in 0..graph.len() {
        if d[k].is_finite() {
            assert!(
                (walk[k] - d[k]).abs() < 1e-2,
                "node {k}: {} vs {}",
                walk[k],
                d[k]
            );
        } else {
            assert_eq!(walk[k], 1000.0);
        }
    }
}

/// In a 4 m circle around (0, 5) exactly the nodes inside it; no node is annotated.
fn assert_zones(graph: &RingGraph, scene: &Scene, s: &mut Situation) {
    s.zones = vec![Zone::Circle {
        centre: Vec2::new(0.0, 5.0),
        radius: 4.0,
    }];
    let zone = raw(graph, scene, s, Criterion::InZone);
    for (n, z) in graph.nodes().iter().zip(&zone) {
        let p = n.position;
        assert_eq!(
            *z == 1.0,
            Vec2::new(p.x, p.z).distance(Vec2::new(0.0, 5.0)) <= 4.0
        );
    }
    assert!(raw(graph, scene, s, Criterion::Annotated)
        .iter()
        .all(|&x| x == 0.0));
}

#[test]
fn scores_compose_exactly() {
    let (scene, surface) = walls();
    let graph = RingGraph::build(
        surface,
        Vec3::ZERO,
        &params(5, 12, 10.0),
        &Design::default(),
    )
    .unwrap();
    let mut s = Situation::new(vec![
        Shooter::at(Vec3::new(14.0, 1.6, 0.5)),
        Shooter::at(Vec3::new(-3.0, 1.6, -14.0)),
    ]);
    s.target = Some(Vec3::new(-14.0, 1.6, 0.5));
    let e = Engine::cpu();
    let eval = |x: &Score| graph.score(&e, scene, &s, x).unwrap().score;
    let a = Score::is(Criterion::EnemyFire).not();
    let b = Score::of(
        Criterion::MoveDistance,
        Curve::Linear {
            from: 10.0,
            to: 0.0,
        },
    );
    let c = Score::is(Criterion::TargetSight);
    let (va, vb, vc) = (eval(&a), eval(&b), eval(&c));
    let and = eval(&a.clone().and(b.clone()));
    let or = eval(&a.clone().or(b.clone()));
    let not = eval(&b.clone().not());
    let weighted = eval(&Score::Weighted(vec![(1.0, a.clone()), (3.0, b.clone())]));
    let product = eval(&Score::Product(vec![a.clone(), b.clone(), c.clone()]));
    let filtered = eval(&c.clone().filter(b.clone()));
    for k in 0..graph.len() {
        assert_eq!(and[k], va[k].min(vb[k]));
        assert_eq!(or[k], va[k].max(vb[k]));
        assert_eq!(not[k], 1.0 - vb[k]);
        assert!((weighted[k] - (va[k] + 3.0 * vb[k]) / 4.0).abs() < 1e-6);
        assert!((product[k] - va[k] * vb[k] * vc[k]).abs() < 1e-6);
        assert_eq!(filtered[k], if vc[k] >= 0.5 { vb[k] } else { 0.0 });
    }
    // The enemy-fire share takes the values 0, 1/2 and 1 here, and not() flips it.
    assert!(va.iter().all(|&x| [0.0, 0.5, 1.0].contains(&x)));
    // Curves at known points.
    assert_eq!(
        Curve::Linear {
            from: 10.0,
            to: 0.0
        }
        .at(2.5),
        0.75
    );
    assert_eq!(Curve::Linear { from: 0.0, to: 4.0 }.at(f32::INFINITY), 1.0);
    assert_eq!(Curve::Step { at: 2.0 }.at(1.999), 0.0);
    assert_eq!(Curve::Step { at: 2.0 }.at(2.0), 1.0);
    assert_eq!(
        Curve::Power {
            from: 0.0,
            to: 2.0,
            exponent: 2.0
        }
        .at(1.0),
        0.25
    );
    assert_eq!(
        Curve::Logistic {
            mid: 3.0,
            width: 1.0
        }
        .at(3.0),
        0.5
    );
    let pts = Curve::Points(vec![(0.0, 0.0), (2.0, 1.0), (4.0, 0.5)]);
    assert_eq!(
        (pts.at(-1.0), pts.at(1.0), pts.at(3.0), pts.at(9.0)),
        (0.0, 0.5, 0.75, 0.5)
    );
}

/// Scores of the default score against four threats around `at` on the village.
fn village_scores(at: Vec3) -> (RingGraph, Scores) {
    let (scene, surface) = village();
    let graph = RingGraph::build(surface, at, &RingParams::standard(), &Design::default()).unwrap();
    let s = Situation::new(
        [(10.0, -20.0), (-45.0, 40.0), (30.0, 30.0), (-50.0, -10.0)]
            .map(|(x, z)| Shooter::at(Vec3::new(x, 1.6, z)))
            .to_vec(),
    );
    let scores = graph
        .score(&Engine::cpu(), scene, &s, &Score::take_cover())
        .unwrap();
    (graph, scores)
}

#[test]
fn the_path_costs_what_dijkstra_finds() {
    let (graph, scores) = village_scores(Vec3::new(20.0, 0.0, 5.0));
    let cost = ScoreCost { weight: 10.0 };
    let step = |u: u32| -> Vec<(u32, u64)> {
        graph
            .neighbours(u)
            .iter()
            .map(|&(v, e)| {
                let c = graph.lengths()[e as usize] + cost.of(scores.score[v as usize]);
                (v, (f64::from(c) * 1e6).round() as u64)
            })
            .collect()
    };
    let best = scores.best().expect("some node is in cover");
    let mut goals: Vec<u32> = vec![best];
    goals.extend((1..graph.len() as u32).step_by(97));
    let mut compared = 0;
    for &goal in &goals {
        let ours = graph.path(&scores.score, cost, 0, goal).unwrap();
        let theirs = pathfinding::prelude::dijkstra(&0u32, |&u| step(u), |&u| u == goal);
        match (ours, theirs) {
            (Some((path, c)), Some((_, want))) => {
                let want = want as f64 / 1e6;
                assert!(
                    (f64::from(c) - want).abs() < 1e-3 * want.max(1.0),
                    "{c} vs {want}"
                );
                // The path is walkable edge by edge and costs what it reports.
                let mut sum = 0.0f32;
                for w in path.windows(2) {
                    let &(_, e) = graph.neighbours(w[0]).iter().find(|x| x.0 == w[1]).unwrap();
                    sum += graph.lengths()[e as usize] + cost.of(scores.score[w[1] as usize]);
                }
                assert!((sum - c).abs() < 1e-3 * c.max(1.0));
                assert_eq!((path[0], *path.last().unwrap()), (0, goal));
                compared += 1;
            }
            (None, None) => {}
            (a, b) => panic!("goal {goal}: A* {a:?}, Dijkstra {b:?}"),
        }
    }
    assert!(compared >= 8, "{compared}");
    // A route from elsewhere enters at the nearest connected node and ends at the goal.
    let agent = graph.nodes()[graph.len() / 2].position + Vec3::new(0.1, 0.0, 0.1);
    let route = graph
        .route(None, agent, &scores, cost, best)
        .unwrap()
        .unwrap();
    assert_eq!(*route.ring.last().unwrap(), best);
    assert_eq!(route.points[0], agent);
}

#[test]
fn gpu_and_cpu_scores_are_identical_for_64_graphs_in_one_batch() {
    let (scene, surface) = village();
    let mut graphs = Vec::new();
    let mut situations = Vec::new();
    for i in 0..64 {
        let a = i as f32 * 0.7;
        let at = Vec3::new(30.0 * a.cos(), 0.0, 30.0 * a.sin());
        let Ok(g) = RingGraph::build(surface, at, &RingParams::standard(), &Design::default())
        else {
            continue;
        };
        graphs.push(g);
        let mut s = Situation::new(
            (0..4)
                .map(|t| {
                    let b = a + t as f32 * 1.7;
                    Shooter::at(Vec3::new(40.0 * b.sin(), 1.6, 40.0 * b.cos()))
                })
                .collect(),
        );
        s.target = Some(s.threats[0].eye);
        situations.push(s);
    }
    assert!(graphs.len() >= 48, "{} graphs built", graphs.len());
    let score = Score::take_cover().or(Score::is(Criterion::TargetSight).and(Score::Constant(0.3)));
    let items: Vec<_> = graphs.iter().zip(&situations).collect();
    let cpu = score_batch(&Engine::cpu(), scene, &items, &score).unwrap();
    let rays: u64 = cpu.iter().map(|s| s.rays).sum();
    assert!(rays > 200_000, "{rays} rays");
    for (name, other) in gpu::twins() {
        let theirs = score_batch(&other, scene, &items, &score).unwrap();
        let differ = cpu.iter().zip(&theirs).filter(|(c, g)| c != g).count();
        eprintln!("{name}: {differ} of {} graphs score otherwise", cpu.len());
        for (k, (c, g)) in cpu.iter().zip(&theirs).enumerate() {
            assert_eq!(c, g, "{name}: graph {k} differs");
        }
    }
    let covered: usize = cpu
        .iter()
        .map(|s| s.in_cover.iter().filter(|&&b| b).count())
        .sum();
    assert!(covered > 1000, "{covered} nodes in cover");
}

#[test]
fn an_incremental_rebuild_equals_the_one_shot_build() {
    let (scene, surface) = village();
    let at = Vec3::new(20.0, 0.0, 5.0);
    let (graph, scores) = village_scores(at);
    let situation = Situation::new(
        [(10.0, -20.0), (-45.0, 40.0), (30.0, 30.0), (-50.0, -10.0)]
            .map(|(x, z)| Shooter::at(Vec3::new(x, 1.6, z)))
            .to_vec(),
    );
    let e = Engine::cpu();
    let total = graph.report().work() + scores.rays;
    for budget in [97, 1000, 100_000] {
        let mut inc = Incremental::new(
            surface,
            at,
            &RingParams::standard(),
            &Design::default(),
            situation.clone(),
            Score::take_cover(),
        )
        .unwrap();
        let mut last = 0;
        while !inc.tick(&e, scene, surface, budget).unwrap() {
            assert!(inc.spent() - last <= budget);
            assert_eq!(
                inc.spent() - last,
                budget,
                "a tick that is not the last spends it all"
            );
            last = inc.spent();
            assert!(inc.ticks() < 10_000);
        }
        assert!(inc.spent() - last <= budget);
        assert_eq!(inc.spent(), total);
        assert_eq!(u64::from(inc.ticks()), total.div_ceil(budget));
        let (g, s) = inc.result().unwrap();
        assert_eq!(g, &graph);
        assert_eq!(s, &scores);
    }
    let mut inc = Incremental::new(
        surface,
        at,
        &RingParams::standard(),
        &Design::default(),
        situation,
        Score::take_cover(),
    )
    .unwrap();
    assert!(inc.tick(&e, scene, surface, 0).is_err());
}

/// A room, interior x -3..3, z 6..11, walls 3 m high; its one doorway (x 1.4..2.4) is in the
/// north wall, facing away from the centre at the origin, and neither a ring (every 2 m) nor a
/// spoke (every 22.5 degrees) of the test's graph runs through it.
fn room_scene() -> &'static (Scene, WalkSurface) {
    static S: OnceLock<(Scene, WalkSurface)> = OnceLock::new();
    S.get_or_init(|| {
        let mut mesh = Mesh::default();
        ground(&mut mesh, 20.0, 0.0);
        for (lo, hi) in [
            ((-3.3, 5.7), (3.3, 6.0)),
            ((-3.3, 11.0), (1.4, 11.3)),
            ((2.4, 11.0), (3.3, 11.3)),
            ((-3.3, 5.7), (-3.0, 11.3)),
            ((3.0, 5.7), (3.3, 11.3)),
        ] {
            let (lo, hi) = (Vec3::new(lo.0, 0.0, lo.1), Vec3::new(hi.0, 3.0, hi.1));
            cuboid(&mut mesh, lo, hi, SOLID);
        }
        walkable(mesh)
    })
}

/// Metres along the graph from the centre to every node (Dijkstra on edge lengths).
fn graph_distances(g: &RingGraph) -> Vec<f32> {
    let (n, mut dist) = (g.len(), vec![f32::INFINITY; g.len()]);
    let mut done = vec![false; n];
    dist[0] = 0.0;
    for _ in 0..n {
        let Some(u) = (0..n)
            .filter(|&i| !done[i] && dist[i].is_finite())
            .min_by(|&a, &b| dist[a].total_cmp(&dist[b]))
        else {
            break;
        };
        done[u] = true;
        for &(v, e) in g.neighbours(u as u32) {
            let d = dist[u] + g.lengths()[e as usize];
            dist[v as usize] = dist[v as usize].min(d);
        }
    }
    dist
}

/// Metres on the walk surface from place `from` to every place (Dijkstra over its links).
fn surface_distances(surface: &WalkSurface, from: u32) -> Vec<f32> {
    use std::cmp::Reverse;
    let mut dist = vec![f32::INFINITY; surface.len()];
    dist[from as usize] = 0.0;
    let mut heap = std::collections::BinaryHeap::from([(Reverse(0u32), from)]);
    while let Some((Reverse(d), u)) = heap.pop() {
        let d = f32::from_bits(d);
        if d > dist[u as usize] {
            continue;
        }
        for &v in surface.links(u) {
            let nd = d + surface.position(u).distance(surface.position(v));
            if nd < dist[v as usize] {
                dist[v as usize] = nd;
                heap.push((Reverse(nd.to_bits()), v));
            }
        }
    }
    dist
}

#[test]
fn a_room_behind_a_doorway_is_joined_to_the_centre() {
    let (scene, surface) = room_scene();
    let inside = |p: Vec3| p.x.abs() < 3.0 && p.z > 6.0 && p.z < 11.0;
    // Joining alone: no exploring from the centre.
    let p = RingParams {
        explore: 0,
        ..params(8, 16, 16.0)
    };
    // Without joining, the straight walks leave the room's nodes out of the centre's reach.
    let off = RingGraph::build(
        surface,
        Vec3::ZERO,
        &RingParams { search: 0, ..p },
        &Design::default(),
    )
    .unwrap();
    let dist = graph_distances(&off);
    let room: Vec<usize> = (0..off.len())
        .filter(|&i| inside(off.nodes()[i].position))
        .collect();
    assert!(room.len() >= 3, "{} nodes in the room", room.len());
    assert!(
        room.iter().all(|&i| dist[i].is_infinite()),
        "the room is reached without joining"
    );
    assert_eq!(off.report().joined, 0);

    let g = RingGraph::build(surface, Vec3::ZERO, &p, &Design::default()).unwrap();
    let r = g.report();
    assert!(r.joined >= 1 && r.passages >= 1, "{r:?}");
    assert!(g.nodes().iter().any(|n| n.kind == NodeKind::Passage));
    assert_connections_walk_straight(&g, surface);
    // Every node in the room is reached, and its walk along the graph is no longer, against
    // the shortest walk on the surface, than the graph's walks to the ground outside.
    let dist = graph_distances(&g);
    let shortest = surface_distances(surface, g.nodes()[0].place);
    let (mut room_worst, mut out_worst) = (0.0f32, 0.0f32);
    for (i, n) in g.nodes().iter().enumerate().skip(1) {
        let best = shortest[n.place as usize];
        if inside(n.position) {
            assert!(dist[i].is_finite(), "room node {} not reached", n.position);
            assert!(
                best > 12.0,
                "the shortest way to {} is {best} m",
                n.position
            );
            room_worst = room_worst.max(dist[i] / best);
        } else if dist[i].is_finite() {
            out_worst = out_worst.max(dist[i] / best);
        }
    }
    assert!(
        room_worst <= out_worst && room_worst < 2.0,
        "room nodes up to {room_worst}x their shortest walk away, outside ones {out_worst}x"
    );

    // The joining tasks split under a budget exactly as the rest of the build.
    let s = Situation::new(vec![Shooter::at(Vec3::new(0.0, 1.6, 25.0))]);
    assert_incremental_equals_one_shot(scene, surface, Vec3::ZERO, &p, &s);
}

/// A closed box (x -4..4, z -4..4, walls 3 m high, no door) whose roof is a terrace, with a
/// flight of 12 steps (0.25 m up, 0.3 m deep) inside against its west wall rising from the
/// floor (z -3) to a hole in the roof (x -3.7..-2.5, z -3.7..0.6): the floor inside is reached
/// from the terrace only down the flight.
fn stair_scene() -> &'static (Scene, WalkSurface) {
    static S: OnceLock<(Scene, WalkSurface)> = OnceLock::new();
    S.get_or_init(|| {
        let mut mesh = Mesh::default();
        ground(&mut mesh, 20.0, 0.0);
        for (lo, hi) in [
            ((-4.0, -4.0), (4.0, -3.7)),
            ((-4.0, 3.7), (4.0, 4.0)),
            ((-4.0, -4.0), (-3.7, 4.0)),
            ((3.7, -4.0), (4.0, 4.0)),
        ] {
            let (lo, hi) = (Vec3::new(lo.0, 0.0, lo.1), Vec3::new(hi.0, 3.0, hi.1));
            cuboid(&mut mesh, lo, hi, SOLID);
        }
        for (lo, hi) in [((-3.7, 0.6), (3.7, 3.7)), ((-2.5, -3.7), (3.7, 0.6))] {
            let (lo, hi) = (Vec3::new(lo.0, 2.8, lo.1), Vec3::new(hi.0, 3.0, hi.1));
            cuboid(&mut mesh, lo, hi, GROUND);
        }
        for k in 0..12 {
            let z = -3.0 + 0.3 * k as f32;
            let top = 0.25 * (k + 1) as f32;
            let (lo, hi) = (Vec3::new(-3.7, 0.0, z), Vec3::new(-2.5, top, z + 0.3));
            cuboid(&mut mesh, lo, hi, GROUND);
        }
        walkable(mesh)
    })
}

#[test]
fn a_storey_reached_only_by_a_stair_is_explored_from_the_centre() {
    let (scene, surface) = stair_scene();
    let at = Vec3::new(2.0, 3.0, 2.0);
    let inside = |p: Vec3| p.x.abs() < 3.7 && p.z.abs() < 3.7;
    let (floor, below) = (
        |p: Vec3| inside(p) && p.y < 0.5,
        |p: Vec3| inside(p) && p.y < 2.5,
    );
    // A threat above the terrace: only the places under the roof are in cover.
    let s = Situation::new(vec![Shooter::at(Vec3::new(2.0, 6.0, 20.0))]);
    let p = RingParams {
        search: 0,
        ..params(8, 16, 12.0)
    };
    let e = Engine::cpu();
    // The straight walks stay on the terrace (one may go a few steps down the flight): the
    // floor is not reached, and there is no cover to take.
    let off = RingGraph::build(
        surface,
        at,
        &RingParams { explore: 0, ..p },
        &Design::default(),
    )
    .unwrap();
    let dist = graph_distances(&off);
    let reached = |g: &RingGraph, dist: &[f32]| {
        (0..g.len())
            .filter(|&i| floor(g.nodes()[i].position) && dist[i].is_finite())
            .count()
    };
    assert_eq!(reached(&off, &dist), 0, "a node on the floor is reached");
    let scores = off.score(&e, scene, &s, &Score::take_cover()).unwrap();
    assert_eq!(scores.best(), None);

    // Exploring follows the walls to the flight and down it.
    let g = RingGraph::build(surface, at, &p, &Design::default()).unwrap();
    let r = g.report();
    assert!(
        r.explored > 0 && r.explored <= u64::from(p.explore),
        "{r:?}"
    );
    assert_connections_walk_straight(&g, surface);
    let dist = graph_distances(&g);
    let n = reached(&g, &dist);
    assert!(n >= 5, "{n} nodes on the floor reached");
    // The choice is under the roof, and the walk to it along the graph is close to the
    // shortest walk on the surface.
    let scores = g.score(&e, scene, &s, &Score::take_cover()).unwrap();
    let best = scores.best().expect("cover under the roof") as usize;
    let node = g.nodes()[best];
    assert!(
        below(node.position) && scores.in_cover[best],
        "{}",
        node.position
    );
    let shortest = surface_distances(surface, g.nodes()[0].place)[node.place as usize];
    assert!(
        dist[best] <= 1.5 * shortest,
        "{} m along the graph, {shortest} m on the surface",
        dist[best]
    );
    assert_incremental_equals_one_shot(scene, surface, at, &p, &s);
}

/// Every connection of `g` is a straight walk on the surface, one way or the other.
fn assert_connections_walk_straight(g: &RingGraph, surface: &WalkSurface) {
    let straight = |a: sightline::ring::Node, b: sightline::ring::Node| {
        let w = surface.walk(a.place, Vec2::new(b.position.x, b.position.z));
        w.arrived() && w.end == b.place
    };
    for e in g.edges() {
        let (a, b) = (g.nodes()[e[0] as usize], g.nodes()[e[1] as usize]);
        assert!(
            straight(a, b) || straight(b, a),
            "{} - {}",
            a.position,
            b.position
        );
    }
}

/// An incremental rebuild around `at` under small budgets spends all of each tick but
/// the last and ends with the one-shot graph and scores.
fn assert_incremental_equals_one_shot(
    scene: &Scene,
    surface: &WalkSurface,
    at: Vec3,
    p: &RingParams,
    s: &Situation,
) {
    let e = Engine::cpu();
    let g = RingGraph::build(surface, at, p, &Design::default()).unwrap();
    let scores = g.score(&e, scene, s, &Score::take_cover()).unwrap();
    let total = g.report().work() + scores.rays;
    for budget in [1, 7, 64] {
        let mut inc = Incremental::new(
            surface,
            at,
            p,
            &Design::default(),
            s.clone(),
            Score::take_cover(),
        )
        .unwrap();
        let mut last = 0;
        while !inc.tick(&e, scene, surface, budget).unwrap() {
            assert_eq!(
                inc.spent() - last,
                budget,
                "a tick that is not the last spends it all"
            );
            last = inc.spent();
        }
        assert!(inc.spent() - last <= budget);
        assert_eq!(inc.spent(), total);
        let (ig, is) = inc.result().unwrap();
        assert_eq!((ig, is), (&g, &scores));
    }
}

#[test]
fn a_node_off_the_walks_keeps_to_the_storey_of_the_node_inside_it() {
    // Just north of the sniper level's north-east building (x 26..36, z -18..-8, a walkable
    // flat roof 3 m up, a door on the far side): the spokes stop at its wall, and the nodes
    // beyond take the ground at their spots. Near the walls the roof's edge is nearer than
    // the floor; the nodes keep to the floor, the storey of the nodes outside.
    let scene = procedural::sniper(1, 1);
    let surface = WalkSurface::build(&Engine::cpu(), &scene, &NavParams::standard()).unwrap();
    let at = Vec3::new(34.6, 0.0, -19.4);
    let g = RingGraph::build(&surface, at, &RingParams::standard(), &Design::default()).unwrap();
    let house = |p: Vec3| p.x > 26.0 && p.x < 36.0 && p.z > -18.0 && p.z < -8.0;
    let roof = g
        .nodes()
        .iter()
        .filter(|n| house(n.position) && n.position.y > 2.0);
    let floor = g
        .nodes()
        .iter()
        .filter(|n| house(n.position) && n.position.y < 1.0);
    assert_eq!(roof.count(), 0, "nodes on the roof");
    assert!(floor.count() >= 20, "too few nodes on the floor");
}

#[test]
fn annotations_join_the_graph_and_the_leash_holds_it() {
    let (scene, surface) = walls();
    let design = Design {
        annotations: vec![Annotation {
            position: Vec3::new(5.0, 0.0, 4.0),
            label: "corner of the wall".into(),
        }],
        leash: Vec::new(),
    };
    let graph = RingGraph::build(surface, Vec3::ZERO, &params(4, 8, 8.0), &design).unwrap();
    let (i, node) = graph
        .nodes()
        .iter()
        .enumerate()
        .find(|(_, n)| n.kind == NodeKind::Annotation(0))
        .expect("the annotation is a node");
    assert!(node.position.distance(Vec3::new(5.0, 0.0, 4.0)) < 0.3);
    assert!(!graph.neighbours(i as u32).is_empty());
    let s = Situation::new(vec![Shooter::at(Vec3::new(14.0, 1.6, 0.5))]);
    let marked = raw(&graph, scene, &s, Criterion::Annotated);
    assert_eq!(marked.iter().filter(|&&x| x == 1.0).count(), 1);
    assert_eq!(marked[i], 1.0);

    // An annotation off the ground is an error that names it.
    let off = Design {
        annotations: vec![Annotation {
            position: Vec3::new(0.0, 40.0, 0.0),
            label: "sky".into(),
        }],
        leash: Vec::new(),
    };
    let err = RingGraph::build(surface, Vec3::ZERO, &params(4, 8, 8.0), &off).unwrap_err();
    assert!(err.to_string().contains("sky"), "{err}");

    // A leash of 5 m: no generated node beyond it (plus the snap distance).
    let leash = Design {
        annotations: Vec::new(),
        leash: vec![Zone::Circle {
            centre: Vec2::ZERO,
            radius: 5.0,
        }],
    };
    let p = params(4, 8, 8.0);
    let g = RingGraph::build(surface, Vec3::ZERO, &p, &leash).unwrap();
    assert!(g
        .nodes()
        .iter()
        .all(|n| Vec2::new(n.position.x, n.position.z).length() <= 5.5));
    // Rings 3 and 4 (6 m and 8 m) are outside: 16 spots.
    assert_eq!(g.report().leashed_out, 16);
    let square = Design {
        annotations: Vec::new(),
        leash: vec![Zone::Polygon(vec![
            Vec2::new(-3.0, -3.0),
            Vec2::new(9.0, -3.0),
            Vec2::new(9.0, 9.0),
            Vec2::new(-3.0, 9.0),
        ])],
    };
    let g = RingGraph::build(surface, Vec3::ZERO, &p, &square).unwrap();
    assert!(g
        .nodes()
        .iter()
        .all(|n| n.position.x >= -3.5 && n.position.z >= -3.5));
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let (_, surface) = walls();
    let d = Design::default();
    let ok = params(4, 8, 8.0);
    let bad = [
        RingParams { rings: 0, ..ok },
        RingParams { per_ring: 2, ..ok },
        RingParams {
            rings: 256,
            per_ring: 1024,
            ..ok
        },
        RingParams {
            radius: f32::NAN,
            ..ok
        },
        RingParams { radius: -1.0, ..ok },
        RingParams { clamp: 1.5, ..ok },
        RingParams {
            snap: f32::INFINITY,
            ..ok
        },
        RingParams {
            max_rise: 0.0,
            ..ok
        },
        RingParams {
            search: sightline::ring::MAX_JOIN_SEARCH + 1,
            ..ok
        },
        RingParams {
            explore: sightline::ring::MAX_JOIN_SEARCH + 1,
            ..ok
        },
    ];
    for p in bad {
        assert!(
            RingGraph::build(surface, Vec3::ZERO, &p, &d).is_err(),
            "{p:?}"
        );
    }
    for at in [
        Vec3::NAN,
        Vec3::new(0.0, 50.0, 0.0),
        Vec3::new(500.0, 0.0, 0.0),
    ] {
        let e = RingGraph::build(surface, at, &ok, &d).unwrap_err();
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn bad_scores_and_paths_are_errors_not_panics() {
    let (scene, surface) = walls();
    let d = Design::default();
    let ok = params(4, 8, 8.0);
    let graph = RingGraph::build(surface, Vec3::ZERO, &ok, &d).unwrap();
    let e = Engine::cpu();
    let s = Situation::new(vec![Shooter::at(Vec3::new(14.0, 1.6, 0.0))]);
    // A criterion that needs a target, with none.
    let err = graph
        .score(&e, scene, &s, &Score::is(Criterion::TargetSight))
        .unwrap_err();
    assert!(err.to_string().contains("target"), "{err}");
    for curve in [
        Curve::Points(vec![(1.0, 0.0), (0.0, 1.0)]),
        Curve::Linear {
            from: f32::NAN,
            to: 1.0,
        },
        Curve::Logistic {
            mid: 0.0,
            width: 0.0,
        },
    ] {
        assert!(graph
            .score(&e, scene, &s, &Score::of(Criterion::MoveDistance, curve))
            .is_err());
    }
    assert!(graph
        .score(
            &e,
            scene,
            &s,
            &Score::Weighted(vec![(0.0, Score::Constant(1.0))])
        )
        .is_err());
    assert!(graph.score(&e, scene, &s, &Score::And(Vec::new())).is_err());
    let mut deep = Score::Constant(1.0);
    for _ in 0..40 {
        deep = deep.not();
    }
    assert!(graph.score(&e, scene, &s, &deep).is_err());
    let nan = Situation::new(vec![Shooter::at(Vec3::new(f32::NAN, 1.6, 0.0))]);
    assert!(graph.score(&e, scene, &nan, &Score::take_cover()).is_err());
    // Too many rays for one batch: refused before anything is planned.
    let big = RingGraph::build(surface, Vec3::ZERO, &params(8, 64, 12.0), &d).unwrap();
    assert!(big.len() > 300);
    let many = Situation::new(vec![Shooter::at(Vec3::new(14.0, 1.6, 0.0)); 1 << 18]);
    let err = big
        .score(&e, scene, &many, &Score::take_cover())
        .unwrap_err();
    assert!(err.to_string().contains("fewer"), "{err}");
    // Paths: wrong lengths and nodes out of range.
    assert!(graph.path(&[1.0], ScoreCost::default(), 0, 1).is_err());
    let ones = vec![1.0; graph.len()];
    assert!(graph
        .path(&ones, ScoreCost::default(), 0, graph.len() as u32)
        .is_err());
    assert!(graph
        .path(&ones, ScoreCost { weight: f32::NAN }, 0, 1)
        .is_err());
}

/// Many graphs built on every core are the graphs built one by one, in order; a centre with
/// no ground fails alone, bad settings and an oversized batch fail the call.
#[test]
fn graphs_built_together_are_the_graphs_built_alone() {
    let (_, surface) = village();
    let (p, d) = (RingParams::standard(), Design::default());
    let mut centres: Vec<Vec3> = (0..12)
        .map(|i| {
            let a = i as f32 * 0.9;
            Vec3::new(25.0 * a.cos(), 0.0, 25.0 * a.sin())
        })
        .collect();
    centres.insert(5, Vec3::new(0.0, 500.0, 0.0));
    let together = RingGraph::build_many(surface, &centres, &p, &d).unwrap();
    assert_eq!(together.len(), centres.len());
    let mut built = 0;
    for (at, got) in centres.iter().zip(&together) {
        match (RingGraph::build(surface, *at, &p, &d), got) {
            (Ok(alone), Ok(got)) => {
                assert_eq!(&alone, got, "centre {at}");
                built += 1;
            }
            (Err(alone), Err(got)) => assert_eq!(alone.to_string(), got.to_string()),
            (alone, got) => panic!("centre {at}: alone {alone:?}, together {got:?}"),
        }
    }
    assert!(together[5].is_err() && built >= 10, "{built} graphs built");
    let bad = RingParams { rings: 0, ..p };
    assert!(RingGraph::build_many(surface, &centres, &bad, &d).is_err());
    let many = vec![Vec3::ZERO; sightline::ring::MAX_BUILD_BATCH + 1];
    let e = RingGraph::build_many(surface, &many, &p, &d).unwrap_err();
    assert!(e.to_string().contains("build fewer graphs"), "{e}");
}

/// A straight walk read independently from the public links: the same order of columns (x or
/// z, whichever boundary the line meets first), and at each column the linked place one grid
/// step along, nearest in height (ties to the lower index). `to` lies near a column's centre.
fn reference_walk(surface: &WalkSurface, from: u32, to: Vec2) -> (u32, u32, u32) {
    let step = surface.step();
    let along = |a: Vec3, b: Vec2| ((b - Vec2::new(a.x, a.z)) / step).round().as_ivec2();
    let d = along(surface.position(from), to);
    let (nx, nz) = (d.x.abs(), d.y.abs());
    let (mut cur, mut ix, mut iz) = (from, 0, 0);
    while ix < nx || iz < nz {
        let tx = if ix < nx { (2 * ix + 1) * nz } else { i32::MAX };
        let tz = if iz < nz { (2 * iz + 1) * nx } else { i32::MAX };
        let dir = if tx <= tz {
            glam::IVec2::new(d.x.signum(), 0)
        } else {
            glam::IVec2::new(0, d.y.signum())
        };
        let p = surface.position(cur);
        let next = surface
            .links(cur)
            .iter()
            .copied()
            .filter(|&q| along(p, Vec2::new(surface.position(q).x, surface.position(q).z)) == dir)
            .min_by(|&a, &b| {
                let dy = |q: u32| (surface.position(q).y - p.y).abs();
                dy(a).total_cmp(&dy(b)).then(a.cmp(&b))
            });
        let Some(q) = next else { break };
        cur = q;
        if dir.x != 0 {
            ix += 1;
        } else {
            iz += 1;
        }
    }
    (cur, (ix + iz) as u32, (nx + nz) as u32)
}

/// Straight walks on open ground, in a room behind a wall and over two storeys joined by a
/// stair equal the independent walk over the links: 20,000 seeded walks a scene, up to 40 m.
#[test]
fn walks_equal_an_independent_walk_over_the_links() {
    let mut rng = sightline::trace::SplitMix64(26);
    for (name, (_, surface)) in [
        ("village", village()),
        ("room", room_scene()),
        ("stair", stair_scene()),
    ] {
        let n = surface.len() as u64;
        let walks = 20_000;
        let mut arrived = 0;
        for _ in 0..walks {
            let from = (rng.next_u64() % n) as u32;
            let p = surface.position(from);
            let columns = Vec2::new(rng.range(-160.0, 160.0), rng.range(-160.0, 160.0)).round();
            let jitter = Vec2::new(rng.range(-0.3, 0.3), rng.range(-0.3, 0.3));
            let to = Vec2::new(p.x, p.z) + (columns + jitter) * surface.step();
            let w = surface.walk(from, to);
            let r = reference_walk(surface, from, to);
            assert_eq!(
                (w.end, w.steps, w.total),
                r,
                "{name}: walk from {p} to {to}"
            );
            arrived += usize::from(w.arrived());
        }
        let stopped = walks - arrived;
        assert!(
            arrived > 100 && stopped > 100,
            "{name}: {arrived} arrived, {stopped} stopped"
        );
    }
}

/// The nearest place within a radius and a height, found by scanning every place: the least
/// (squared distance, height difference, index).
fn brute_locate(surface: &WalkSurface, p: Vec3, radius: f32, max_dy: f32) -> Option<u32> {
    (0..surface.len() as u32)
        .filter_map(|i| {
            let q = surface.position(i);
            let d = Vec2::new(q.x, q.z).distance_squared(Vec2::new(p.x, p.z));
            let dy = (q.y - p.y).abs();
            (d <= radius * radius && dy <= max_dy).then_some((d, dy, i))
        })
        .min_by(|a, b| a.partial_cmp(b).unwrap())
        .map(|b| b.2)
}

/// `WalkSurface::locate` finds what a scan of every place finds, on open ground, in a room and
/// over two storeys, for radii from nothing to 2 m and points off the ground.
#[test]
fn locate_equals_a_scan_of_every_place() {
    let mut rng = sightline::trace::SplitMix64(30);
    for (name, (_, surface), queries) in [
        ("village", village(), 300),
        ("room", room_scene(), 1_500),
        ("stair", stair_scene(), 1_500),
    ] {
        let mut found = 0;
        for k in 0..queries {
            let q = surface.position((rng.next_u64() % surface.len() as u64) as u32);
            // Half the points on a column's edge, where the next ring of columns is nearest.
            let edge = |rng: &mut sightline::trace::SplitMix64| {
                let n = rng.range(-6.0, 6.0).round() + if k % 4 < 2 { 0.499 } else { 0.0 };
                n * surface.step() + rng.range(-0.1, 0.1) * (k % 2) as f32 * surface.step()
            };
            let p = q + Vec3::new(edge(&mut rng), rng.range(-3.0, 3.0), edge(&mut rng));
            let radius = [0.0, 0.1, 0.5, 1.3, 2.0][k % 5];
            let max_dy = [0.5, 3.0][k % 2];
            let got = surface.locate(p, radius, max_dy);
            assert_eq!(
                got,
                brute_locate(surface, p, radius, max_dy),
                "{name}: {p} within {radius}"
            );
            found += usize::from(got.is_some());
        }
        let none = queries - found;
        assert!(
            found > queries / 10 && none > queries / 10,
            "{name}: {found} found, {none} not"
        );
    }
}
