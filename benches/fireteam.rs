//! Fireteam movement against Darken, McCue and Guerrero's Tables 4 and 5 (Intel Q6600), on the
//! nav graph `nav::generate` builds on `urban` at 2 m (largest component), with line of sight
//! traced on the CPU engine at setup.
//!
//! ```text
//! cargo bench --bench fireteam            # full run
//! cargo test --release --bench fireteam   # each function once (smoke test)
//! ```
//!
//! - `lookahead/{3,5,10}`: one member's individual plan ([`Planner::plan`]) mid-move: a
//!   4-member team is simulated 60 s from the south-west corner toward the north-east one,
//!   then member 1 plans from where it stands against the others' forecasts. Seed: 2.6, 13.4
//!   and 123.6 ms; targets 0.05, 0.25 and 2.5 ms.
//! - `team_path/corner_to_corner`: the cover-weighted A* between the two nodes of the largest
//!   component farthest apart along the diagonal (seed: about 4 ms; target 0.2 ms), and
//!   `team_path/corner_to_corner_peer`: the `pathfinding` crate's `astar` on the same graph
//!   and costs (integer micrometres, as it needs a totally ordered cost) with the
//!   straight-line heuristic, same path cost.
//! - `move/4_members`: a whole 4-member move corner to corner, simulation and planning end to
//!   end, until every member stands at its destination.
//! - `tick/16_teams`: 16 fireteams of 4 (64 members) spread over the map all plan in the same
//!   tick, one after another against one ETA manager (each plan is committed before the next).

#[path = "common/mod.rs"]
mod common;

use criterion::Criterion;
use glam::Vec3;
use sightline::fireteam::{
    nearest_nodes, Eta, Order, Path, PathSearch, PlanParams, Planner, Route, SimParams, Simulation,
    Task, World,
};
use std::hint::black_box;
use std::time::Duration;

/// The nodes nearest the south-west and north-east corners.
fn corners(world: &World) -> (u32, u32) {
    let nodes = world.graph().nodes();
    let by = |f: fn(Vec3) -> f32| {
        (0..nodes.len() as u32)
            .min_by(|&a, &b| f(nodes[a as usize]).total_cmp(&f(nodes[b as usize])))
            .expect("nodes")
    };
    (by(|p| p.x + p.z), by(|p| -(p.x + p.z)))
}

fn main() {
    let _ = env_logger::try_init();
    eprintln!(
        "seed baselines (Darken, McCue and Guerrero, Tables 4-5, Q6600): look-ahead 3, 5, 10 in \
         2.6, 13.4, 123.6 ms; corner-to-corner fireteam path about 4 ms"
    );
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let (_, world) = common::urban_world();
    let (sw, ne) = corners(&world);
    let mut search = PathSearch::new();
    let ours = team_path(&mut c, &world, &mut search, (sw, ne));
    let order = Order {
        start: nearest_nodes(world.graph(), sw, 4),
        goal: ne,
        sector: None,
    };
    let mut planner = Planner::new();
    lookahead(&mut c, &world, &order, &ours, &mut planner);
    many_teams(&mut c, &world, &mut search, (sw, ne), &mut planner);
    whole_move(&mut c, &world, &order);
    c.final_summary();
}

/// The team path corner to corner, and the pathfinding crate's A* on the same costs.
fn team_path(
    c: &mut Criterion,
    world: &World,
    search: &mut PathSearch,
    (sw, ne): (u32, u32),
) -> Path {
    let g = world.graph();
    let ours = search.find(world, sw, ne, 1.0).expect("a path");
    let nodes = g.nodes();
    let step = |u: u32, v: u32, e: u32| -> u64 {
        let ex = world.exposure();
        let c = g.costs()[e as usize] * (1.0 + 0.5 * (ex[u as usize] + ex[v as usize]));
        (f64::from(c) * 1e6).round() as u64
    };
    let goal = nodes[ne as usize];
    let scale = g
        .edges()
        .iter()
        .zip(g.costs())
        .map(|(e, &c)| c / nodes[e.a as usize].distance(nodes[e.b as usize]).max(1e-6))
        .fold(1.0f32, f32::min);
    let peer = || {
        pathfinding::prelude::astar(
            &sw,
            |&u| {
                g.neighbours(u)
                    .iter()
                    .map(move |&(v, e)| (v, step(u, v, e)))
                    .collect::<Vec<_>>()
            },
            // The straight-line bound, floored to whole micrometres.
            |&v| (f64::from(scale * nodes[v as usize].distance(goal)) * 1e6).floor() as u64,
            |&v| v == ne,
        )
    };
    let (_, peer_cost) = peer().expect("the peer finds it too");
    eprintln!(
        "team path corner to corner: {} nodes, cost {:.2} (peer {:.2})",
        ours.nodes.len(),
        ours.cost,
        peer_cost as f64 * 1e-6
    );
    assert!((f64::from(ours.cost) - peer_cost as f64 * 1e-6).abs() < 1e-2 * f64::from(ours.cost));
    let mut grp = c.benchmark_group("team_path");
    grp.bench_function("corner_to_corner", |b| {
        b.iter(|| black_box(search.find(world, black_box(sw), ne, 1.0)))
    });
    grp.bench_function("corner_to_corner_peer", |b| b.iter(|| black_box(peer())));
    grp.finish();
    ours
}

/// A team mid-move (60 s into the corner-to-corner move): one member plans 3, 5 and 10 steps
/// ahead.
fn lookahead(c: &mut Criterion, world: &World, order: &Order, ours: &Path, planner: &mut Planner) {
    let mut sim =
        Simulation::new(world, std::slice::from_ref(order), SimParams::standard(), 1).expect("sim");
    while sim.now() < 60.0 && sim.advance().expect("advance") {}
    let eta = sim.eta().clone();
    let route = Route::new(world, ours.nodes.clone());
    let member = 1u32;
    let at = sim.frames().last().expect("a frame").members[member as usize].node;
    let spp = route.pull_point(world, at, 0);
    let team = [0u32, 1, 2, 3];
    let mut grp = c.benchmark_group("lookahead");
    for depth in [3u32, 5, 10] {
        let p = PlanParams {
            lookahead: depth,
            ..PlanParams::standard()
        };
        let task = Task {
            world,
            eta: &eta,
            member,
            team: &team,
            leader: 0,
            route: &route,
            spp,
            sector_view: None,
            start: at,
            now: sim.now(),
        };
        let plan = planner.plan(&task, &p).expect("a plan");
        eprintln!(
            "lookahead {depth}: member {member} at node {at} plans {} stops, cost {:.3}",
            plan.stops.len(),
            plan.cost
        );
        grp.bench_function(depth.to_string(), |b| {
            b.iter(|| black_box(planner.plan(&task, &p)))
        });
    }
    grp.finish();
}

/// 16 teams spread over the map, all 64 members planning in one tick.
fn many_teams(
    c: &mut Criterion,
    world: &World,
    search: &mut PathSearch,
    (sw, ne): (u32, u32),
    planner: &mut Planner,
) {
    let g = world.graph();
    let starts = common::spread_teams(g, 16);
    let eta0 = Eta::new(g.len(), &starts);
    let teams: Vec<Vec<u32>> = (0..16u32).map(|k| (4 * k..4 * k + 4).collect()).collect();
    let routes: Vec<Route> = (0..16)
        .map(|k| {
            let from = starts[4 * k];
            let path = search.find(world, from, if k % 2 == 0 { ne } else { sw }, 1.0);
            Route::new(world, path.map_or_else(|| vec![from], |p| p.nodes))
        })
        .collect();
    let p = PlanParams::standard();
    let tick = |planner: &mut Planner, eta: &mut Eta| {
        let mut planned = 0;
        for m in 0..64u32 {
            let k = (m / 4) as usize;
            let here = eta.track(m)[0];
            let task = Task {
                world,
                eta,
                member: m,
                team: &teams[k],
                leader: 4 * k as u32,
                route: &routes[k],
                spp: 0,
                sector_view: None,
                start: here.node,
                now: 0.0,
            };
            if let Some(plan) = planner.plan(&task, &p) {
                eta.set(m, plan.stops);
                planned += 1;
            }
        }
        planned
    };
    let planned = tick(planner, &mut eta0.clone());
    eprintln!(
        "tick: {planned} of 64 members planned (lookahead {})",
        p.lookahead
    );
    let mut grp = c.benchmark_group("tick");
    grp.bench_function("16_teams", |b| {
        b.iter_batched(
            || eta0.clone(),
            |mut eta| black_box(tick(planner, &mut eta)),
            criterion::BatchSize::SmallInput,
        )
    });
    grp.finish();
}

/// A whole move of one team of 4, end to end.
fn whole_move(c: &mut Criterion, world: &World, order: &Order) {
    let out = Simulation::new(world, std::slice::from_ref(order), SimParams::standard(), 1)
        .expect("sim")
        .run()
        .expect("run");
    eprintln!(
        "move: arrived {} after {:.0} s simulated, {} plans, {} catch-ups, {} frames",
        out.arrived,
        out.report.seconds,
        out.report.plans,
        out.report.catch_ups,
        out.frames.len()
    );
    let mut grp = c.benchmark_group("move");
    grp.sample_size(10);
    grp.bench_function("4_members", |b| {
        b.iter(|| {
            let sim = Simulation::new(world, std::slice::from_ref(order), SimParams::standard(), 1)
                .expect("sim");
            black_box(sim.run().expect("run").arrived)
        })
    });
    grp.finish();
}
