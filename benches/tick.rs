//! One game tick on `urban` (its nav graph at 2 m, line of sight within 100 m), with the walk
//! surfaces and tables kept between ticks as a game keeps them:
//!
//! - **cover**: 8 agents under fire, each from 3 enemies 15-40 m away, ask the dense search for
//!   cover (one batch, the kept `dense::Surface`);
//! - **fireteams**: 4 teams of 4 plan their next bounds (look-ahead 3) against one ETA manager;
//! - **threat maps**: the 4 teams' threat probability maps step 0.1 s with 8 sightings;
//! - **line of sight**: 1,000 sight lines between moving agents' eyes (one `occluded` call);
//! - **rings**: 2 ring graphs (32 x 32 over 50 m) built on the kept walk surface (both at once,
//!   `RingGraph::build_many`) and scored against 4 threats each (one `score_batch` call).
//!
//! Agents move from tick to tick (each tick takes the next positions from a fixed pool), so the
//! queries differ while the kept data stays warm. Criterion times whole ticks (`tick/urban/cpu`
//! and, with an adapter, `tick/urban/gpu`); before that, 200 ticks per engine are timed part by
//! part and the median and 99th percentile of each part and of the whole tick go to stderr.
//!
//! ```text
//! WGPU_BACKEND=vulkan cargo bench --bench tick
//! cargo test --release --bench tick       # each function once (smoke test)
//! ```

#[path = "common/mod.rs"]
mod common;

use common::gpu_engine;
use criterion::Criterion;
use glam::Vec3;
use sightline::agent::Agent;
use sightline::cover::dense::{self, DenseParams, DenseQuery};
use sightline::fireteam::{Eta, PathSearch, PlanParams, Planner, Route, Task, World};
use sightline::nav::{NavParams, WalkSurface};
use sightline::ring::{score_batch, Design, RingGraph, RingParams, Score, Shooter, Situation};
use sightline::tpm::{Observation, TpmParams, TpmSet};
use sightline::trace::{Segment, SplitMix64};
use sightline::{Engine, Mask, Scene};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Positions a tick draws from: this many ticks' worth, cycled.
const POOL_TICKS: usize = 16;

/// What a game keeps between ticks, and the agents' positions.
struct Game {
    scene: Scene,
    world: World,
    walk: WalkSurface,
    /// Nav node positions.
    nodes: Vec<Vec3>,
    /// Fireteams: start nodes of 16 members, and each team's route.
    starts: Vec<u32>,
    teams: Vec<Vec<u32>>,
    routes: Vec<Route>,
}

fn setup() -> Game {
    let t = Instant::now();
    let cpu = Engine::cpu();
    let (scene, world) = common::urban_world();
    let walk = WalkSurface::build(&cpu, &scene, &NavParams::standard()).unwrap();
    let nodes = world.graph().nodes().to_vec();
    let (starts, teams, routes) = fireteams(&world);
    eprintln!(
        "urban: {} triangles, nav graph {} nodes, walk surface {} places; setup {:.1} s",
        scene.triangle_count(),
        nodes.len(),
        walk.len(),
        t.elapsed().as_secs_f64()
    );
    Game {
        scene,
        world,
        walk,
        nodes,
        starts,
        teams,
        routes,
    }
}

/// 4 teams of 4 spread over the map, each with a route to another team's start.
fn fireteams(world: &World) -> (Vec<u32>, Vec<Vec<u32>>, Vec<Route>) {
    let starts = common::spread_teams(world.graph(), 4);
    let mut search = PathSearch::new();
    let routes = (0..4)
        .map(|k| {
            let from = starts[4 * k];
            let to = starts[4 * ((k + 2) % 4)];
            let path = search.find(world, from, to, 1.0);
            Route::new(world, path.map_or_else(|| vec![from], |p| p.nodes))
        })
        .collect();
    let teams = (0..4u32).map(|k| (4 * k..4 * k + 4).collect()).collect();
    (starts, teams, routes)
}

/// Time spent per part of a tick.
#[derive(Clone, Copy, Default)]
struct Split {
    cover: Duration,
    fireteams: Duration,
    threat_maps: Duration,
    sight: Duration,
    rings: Duration,
}

impl Split {
    fn total(&self) -> Duration {
        self.cover + self.fireteams + self.threat_maps + self.sight + self.rings
    }
}

/// Kept between ticks: the dense search's tiles, the threat maps, the planner's scratch.
struct Kept {
    surface: dense::Surface,
    tpm: TpmSet,
    planner: Planner,
    eta: Eta,
}

impl Kept {
    fn new(game: &Game) -> Kept {
        Kept {
            surface: dense::Surface::new(),
            tpm: TpmSet::new(game.world.graph(), 4, TpmParams::default()).unwrap(),
            planner: Planner::new(),
            eta: Eta::new(game.nodes.len(), &game.starts),
        }
    }
}

/// The `i`-th position of tick `k`: a nav node picked by a hash, lifted by `lift`.
fn at(game: &Game, k: usize, i: usize, lift: f32) -> Vec3 {
    let mut rng = SplitMix64(((k % POOL_TICKS) * 10_007 + i) as u64);
    let n = game.nodes.len();
    game.nodes[(rng.range(0.0, n as f32) as usize).min(n - 1)] + Vec3::Y * lift
}

/// 3 enemies 15-40 m from `agent` (nav nodes in that ring, or the nearest tries).
fn enemies(game: &Game, k: usize, agent: Vec3) -> Vec<Vec3> {
    let mut out = Vec::new();
    for j in 0..64 {
        let e = at(game, k, 1000 + j, 1.6);
        let d = e.distance(agent);
        if (15.0..=40.0).contains(&d) {
            out.push(e);
            if out.len() == 3 {
                break;
            }
        }
    }
    out
}

fn cover(engine: &Engine, game: &Game, kept: &mut Kept, k: usize) -> usize {
    let queries: Vec<DenseQuery> = (0..8)
        .map(|i| {
            let agent = at(game, k, i, 0.0);
            DenseQuery {
                agent: Agent::soldier(agent),
                observers: enemies(game, k + i, agent),
                mask: Mask::FIRE,
            }
        })
        .collect();
    let answers = dense::find_cover_on(
        engine,
        &game.scene,
        &mut kept.surface,
        &queries,
        &DenseParams::standard(),
    )
    .unwrap();
    answers.iter().filter(|a| a.choice.is_some()).count()
}

fn plan_fireteams(game: &Game, kept: &mut Kept) -> usize {
    let p = PlanParams::standard();
    let mut planned = 0;
    for m in 0..16u32 {
        let team = (m / 4) as usize;
        let here = kept.eta.track(m)[0];
        let task = Task {
            world: &game.world,
            eta: &kept.eta,
            member: m,
            team: &game.teams[team],
            leader: 4 * team as u32,
            route: &game.routes[team],
            spp: 0,
            sector_view: None,
            start: here.node,
            now: 0.0,
        };
        if let Some(plan) = kept.planner.plan(&task, &p) {
            kept.eta.set(m, plan.stops);
            planned += 1;
        }
    }
    planned
}

fn threat_maps(game: &Game, kept: &mut Kept, k: usize) {
    let n = game.nodes.len() as u32;
    let sightings: Vec<Observation> = (0..8u32)
        .map(|i| Observation {
            tpm: i % 4,
            node: (k as u32 * 131 + i * 977) % n,
            rate: 1.0,
        })
        .collect();
    kept.tpm.step(0.1, &sightings).unwrap();
}

fn sight_lines(engine: &Engine, game: &Game, k: usize) -> usize {
    let eyes: Vec<Vec3> = (0..64).map(|i| at(game, k, 2000 + i, 1.6)).collect();
    let segs: Vec<Segment> = (0..1000)
        .map(|i| Segment::new(eyes[i % 64], eyes[(i / 64 + 1 + i) % 64]))
        .collect();
    engine
        .occluded(&game.scene, &segs, Mask::SIGHT)
        .unwrap()
        .count_ones()
}

fn rings(engine: &Engine, game: &Game, k: usize) -> usize {
    let centres: Vec<Vec3> = (0..2).map(|r| at(game, k, 3000 + r, 0.0)).collect();
    let situations: Vec<Situation> = centres
        .iter()
        .map(|&centre| {
            Situation::new(
                (0..4)
                    .map(|t| {
                        let a = t as f32 * std::f32::consts::FRAC_PI_2 + k as f32;
                        Shooter::at(centre + Vec3::new(35.0 * a.cos(), 1.6, 35.0 * a.sin()))
                    })
                    .collect(),
            )
        })
        .collect();
    // Built on both cores, scored in one engine call.
    let graphs: Vec<RingGraph> = RingGraph::build_many(
        &game.walk,
        &centres,
        &RingParams::standard(),
        &Design::default(),
    )
    .unwrap()
    .into_iter()
    .map(Result::unwrap)
    .collect();
    let items: Vec<_> = graphs.iter().zip(&situations).collect();
    for scores in score_batch(engine, &game.scene, &items, &Score::take_cover()).unwrap() {
        black_box(scores.best());
    }
    graphs.iter().map(RingGraph::len).sum()
}

/// One tick, timed part by part.
fn tick(engine: &Engine, game: &Game, kept: &mut Kept, k: usize) -> Split {
    let mut s = Split::default();
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed()
    };
    s.cover = time(&mut || {
        black_box(cover(engine, game, kept, k));
    });
    s.fireteams = time(&mut || {
        black_box(plan_fireteams(game, kept));
    });
    s.threat_maps = time(&mut || threat_maps(game, kept, k));
    s.sight = time(&mut || {
        black_box(sight_lines(engine, game, k));
    });
    s.rings = time(&mut || {
        black_box(rings(engine, game, k));
    });
    s
}

/// One part of a tick's time.
type Part = fn(&Split) -> Duration;

/// Median and 99th percentile (ms) of `part` over `ticks`.
fn spread(ticks: &[Split], part: impl Fn(&Split) -> Duration) -> (f64, f64) {
    let mut v: Vec<f64> = ticks.iter().map(|t| part(t).as_secs_f64() * 1e3).collect();
    v.sort_by(f64::total_cmp);
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    (q(0.5), q(0.99))
}

fn report(name: &str, engine: &Engine, game: &Game, kept: &mut Kept, ticks: usize) {
    let split: Vec<Split> = (0..ticks).map(|k| tick(engine, game, kept, k)).collect();
    let parts: [(&str, Part); 6] = [
        ("whole tick", Split::total),
        ("cover, 8 agents", |s| s.cover),
        ("fireteams, 4 x 4", |s| s.fireteams),
        ("threat maps", |s| s.threat_maps),
        ("1,000 sight lines", |s| s.sight),
        ("2 ring graphs", |s| s.rings),
    ];
    eprintln!("tick/urban/{name}: {ticks} ticks, median / 99th percentile (ms):");
    for (label, part) in parts {
        let (m, p99) = spread(&split, part);
        eprintln!("  {label:18} {m:8.3} / {p99:8.3}");
    }
}

fn main() {
    let _ = env_logger::try_init();
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let game = setup();
    let cpu = Engine::cpu();
    let gpu = gpu_engine();
    // `cargo bench` passes `--bench`; without it (`cargo test --benches`) a few ticks will do.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let ticks = if smoke { 2 } else { 200 };
    let engines: Vec<(&str, &Engine)> = std::iter::once(("cpu", &cpu))
        .chain(gpu.as_ref().map(|g| ("gpu", g)))
        .collect();
    let mut grp = c.benchmark_group("tick/urban");
    for (name, engine) in engines {
        let mut kept = Kept::new(&game);
        // Warm the kept data: every pool position's tiles and caches.
        for k in 0..POOL_TICKS.min(ticks) {
            tick(engine, &game, &mut kept, k);
        }
        report(name, engine, &game, &mut kept, ticks);
        let mut k = 0;
        grp.bench_function(name, |b| {
            b.iter(|| {
                k += 1;
                tick(engine, &game, &mut kept, k).total()
            })
        });
    }
    grp.finish();
    c.final_summary();
}
