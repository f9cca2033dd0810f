//! The nav graph and the Threat Probability Model against Darken, McCue and Guerrero's Table 4,
//! with a textbook implementation of the same update as the peer, measured in the same run.
//!
//! ```text
//! WGPU_BACKEND=vulkan cargo bench --bench nav     # full run
//! cargo test --release --bench nav                # each function once (smoke test)
//! ```
//!
//! - `tpm_update/{1112,3785}`: one map (`count = 1`) over an 8-connected grid of exactly that
//!   many nodes, 2 m apart (Table 4's graph sizes), one `step(1.0, ..)` with a fixed, seeded
//!   observation list (5% of the nodes: those nearest four observers, each with the
//!   line-of-sight model's detection rate at its distance). `tpm_update/urban_<n>`: the same on
//!   the graph `nav::generate` builds on `urban` at 2 m. Each `*_peer` function runs the
//!   textbook update (below) on the same graph and observations.
//! - `tpm_batch/64x3785`: 64 maps over the 3,785-node grid in one `step`, each map with its
//!   own observers; `tpm_batch/64x3785_unobserved` is the same step with no observations (the
//!   diffusion and accrual alone).
//! - `nav_generate/urban_2m` and `nav_generate/urban_1M`: `nav::generate` at 2 m on `urban`
//!   (detail 1) on the CPU and the GPU engine, and on the 1M-triangle `urban` on the CPU engine
//!   (GPU: see below); throughput in rays (the `NavReport`'s count of the CPU run at setup),
//!   with each engine's rays per second printed from its first run.
//!
//! Seed baselines (Darken, McCue and Guerrero, Table 4, Intel Q6600): one TPM update takes
//! 1.25 ms for 1,112 nodes and 4.07 ms for 3,785. Targets here: at most 0.05 ms for 3,785
//! nodes, and at most 1 ms for 64 maps of 3,785 nodes.
//!
//! Environment: `SIGHTLINE_REQUIRE_GPU=1` panics instead of skipping the `gpu` functions when
//! no adapter exists. `SIGHTLINE_BENCH_GPU_1M=1` adds `nav_generate/urban_1M/gpu`, left out by
//! default: one run takes a minute or more on lavapipe, and criterion needs at least eleven.

#[path = "common/mod.rs"]
mod common;

use common::gpu_engine;
use criterion::{Criterion, SamplingMode, Throughput};
use glam::Vec3;
use sightline::nav::{generate, CostParams, Edge, EdgeKinds, NavGraph, NavParams, NavReport};
use sightline::scene::procedural;
use sightline::tpm::{Observation, TpmParams, TpmSet, ViewParams};
use sightline::trace::SplitMix64;
use sightline::{Engine, Scene};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Node spacing of every graph here (metres).
const SPACING: f32 = 2.0;
/// Share of a map's nodes observed in each step.
const OBSERVED: f64 = 0.05;
/// Observers per map.
const OBSERVERS: usize = 4;
/// Maps in the batch.
const BATCH: usize = 64;
/// Steps run before the peer and `TpmSet` are compared.
const CHECK_STEPS: usize = 5;
/// Largest difference allowed between the peer and `TpmSet` after those steps.
const TOLERANCE: f64 = 1e-4;

/// Whether criterion runs each function once (`cargo test --benches`, or `-- --test`).
fn test_mode() -> bool {
    let args: Vec<String> = std::env::args().collect();
    !args.iter().any(|a| a == "--bench") || args.iter().any(|a| a == "--test")
}

/// An 8-connected grid of exactly `n` nodes, `SPACING` apart: the rows of a rectangle
/// `ceil(sqrt(n))` nodes wide, the last row cut short.
fn grid_graph(n: usize) -> NavGraph {
    let w = (n as f64).sqrt().ceil() as usize;
    let nodes = (0..n)
        .map(|i| Vec3::new((i % w) as f32, 0.0, (i / w) as f32) * SPACING)
        .collect();
    let diagonal = SPACING * std::f32::consts::SQRT_2;
    let mut edges = Vec::new();
    for i in 0..n {
        let x = i % w;
        let mut link = |j: usize, length: f32| {
            if j < n {
                edges.push(Edge {
                    a: i as u32,
                    b: j as u32,
                    kinds: EdgeKinds::NONE,
                    length,
                });
            }
        };
        if x + 1 < w {
            link(i + 1, SPACING);
            link(i + w + 1, diagonal);
        }
        link(i + w, SPACING);
        if x > 0 {
            link(i + w - 1, diagonal);
        }
    }
    NavGraph::new(nodes, edges, &CostParams::standard()).expect("grid graph")
}

/// What map `tpm`'s observers see in a step: `OBSERVERS` seeded nodes, and the `OBSERVED`
/// share of the graph's nodes nearest to them, each with the line-of-sight model's detection
/// rate (a standing threat) at its distance from the nearest observer. By node.
fn observations(graph: &NavGraph, tpm: u32, seed: u64) -> Vec<Observation> {
    let nodes = graph.nodes();
    let mut rng = SplitMix64(seed);
    let eyes: Vec<Vec3> = (0..OBSERVERS)
        .map(|_| nodes[(rng.next_u64() % nodes.len() as u64) as usize])
        .collect();
    let mut near: Vec<(f32, u32)> = nodes
        .iter()
        .enumerate()
        .map(|(j, &p)| {
            let d = eyes
                .iter()
                .map(|e| e.distance(p))
                .fold(f32::INFINITY, f32::min);
            (d, j as u32)
        })
        .collect();
    near.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    near.truncate(((nodes.len() as f64 * OBSERVED).round() as usize).max(1));
    let view = ViewParams::standard();
    let mut obs: Vec<Observation> = near
        .into_iter()
        .map(|(d, node)| Observation {
            tpm,
            node,
            rate: view.rate_at(d),
        })
        .collect();
    obs.sort_unstable_by_key(|o| o.node);
    obs
}

/// Observations for `count` maps, each with its own observers.
fn batch_observations(graph: &NavGraph, count: usize, seed: u64) -> Vec<Observation> {
    (0..count)
        .flat_map(|t| observations(graph, t as u32, seed + t as u64))
        .collect()
}

/// The peer: the update as a textbook writes it. Adjacency as lists, one map at a time, `f64`,
/// a loop over nodes: diffusion `p_i + lambda sum_j b_ij (p_j - p_i)` with `b_ij = 1 /
/// max(deg_i, deg_j)`, then accrual toward the prior where nobody looked, or decay by the
/// summed detection rates (never below the floor) where someone did.
struct Peer {
    adjacency: Vec<Vec<usize>>,
    maps: Vec<Vec<f64>>,
    next: Vec<f64>,
    /// Per map: the summed rate of each node observed this step, and whether it was observed.
    rate: Vec<Vec<f64>>,
    seen: Vec<Vec<bool>>,
    diffusion_rate: f64,
    accrual_rate: f64,
    prior: f64,
    floor: f64,
}

impl Peer {
    fn new(graph: &NavGraph, count: usize, params: &TpmParams) -> Peer {
        let n = graph.len();
        let adjacency = (0..n as u32)
            .map(|i| {
                graph
                    .neighbours(i)
                    .iter()
                    .map(|&(j, _)| j as usize)
                    .collect()
            })
            .collect();
        Peer {
            adjacency,
            maps: vec![vec![f64::from(params.prior); n]; count],
            next: vec![0.0; n],
            rate: vec![vec![0.0; n]; count],
            seen: vec![vec![false; n]; count],
            diffusion_rate: f64::from(params.diffusion_rate),
            accrual_rate: f64::from(params.accrual_rate),
            prior: f64::from(params.prior),
            floor: f64::from(params.floor),
        }
    }

    fn step(&mut self, dt: f64, observations: &[Observation]) {
        for o in observations {
            let (t, i) = (o.tpm as usize, o.node as usize);
            self.seen[t][i] = true;
            self.rate[t][i] += f64::from(o.rate);
        }
        let lambda = 1.0 - (-self.diffusion_rate * dt).exp();
        let keep = (-self.accrual_rate * dt).exp();
        let adj = &self.adjacency;
        for t in 0..self.maps.len() {
            let p = &self.maps[t];
            for i in 0..p.len() {
                let mut flow = 0.0;
                for &j in &adj[i] {
                    let b = 1.0 / adj[i].len().max(adj[j].len()) as f64;
                    flow += b * (p[j] - p[i]);
                }
                let d = p[i] + lambda * flow;
                self.next[i] = if self.seen[t][i] {
                    (d * (-self.rate[t][i] * dt).exp()).max(self.floor)
                } else {
                    self.prior + (d - self.prior) * keep
                };
            }
            std::mem::swap(&mut self.maps[t], &mut self.next);
        }
        for o in observations {
            let (t, i) = (o.tpm as usize, o.node as usize);
            self.seen[t][i] = false;
            self.rate[t][i] = 0.0;
        }
    }
}

/// A `TpmSet` and its peer over `graph` with the same seeded starting values, checked to agree
/// after `CHECK_STEPS` steps with `obs`.
fn tpm_pair(graph: &NavGraph, count: usize, obs: &[Observation], name: &str) -> (TpmSet, Peer) {
    let params = TpmParams::standard();
    let mut set = TpmSet::new(graph, count, params).expect("TpmSet");
    let mut peer = Peer::new(graph, count, &params);
    let mut rng = SplitMix64(0x7e57 + graph.len() as u64);
    for t in 0..count {
        for i in 0..graph.len() {
            let v = rng.f32();
            set.set(t as u32, i as u32, v).unwrap();
            peer.maps[t][i] = f64::from(v);
        }
    }
    for _ in 0..CHECK_STEPS {
        set.step(1.0, obs).unwrap();
        peer.step(1.0, obs);
    }
    let mut worst = 0.0f64;
    for (t, map) in peer.maps.iter().enumerate() {
        for (i, &v) in map.iter().enumerate() {
            worst = worst.max((f64::from(set.get(t as u32, i as u32)) - v).abs());
        }
    }
    eprintln!(
        "{name}: {count} x {} nodes, {} edges, {} observations per step; after {CHECK_STEPS} \
         steps the peer and TpmSet differ by at most {worst:.2e}",
        graph.len(),
        graph.edges().len(),
        obs.len()
    );
    assert!(
        worst <= TOLERANCE,
        "{name}: the peer and TpmSet differ by {worst} after {CHECK_STEPS} steps"
    );
    (set, peer)
}

/// `tpm_update` (one map) on the grids and the urban graph, and `tpm_batch` (64 maps).
fn tpm(c: &mut Criterion, urban: &NavGraph) {
    let grids = [grid_graph(1_112), grid_graph(3_785)];
    let mut g = c.benchmark_group("tpm_update");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let cases = [
        (grids[0].len().to_string(), &grids[0]),
        (grids[1].len().to_string(), &grids[1]),
        (format!("urban_{}", urban.len()), urban),
    ];
    for (name, graph) in cases {
        let obs = observations(graph, 0, 0x0b5e + graph.len() as u64);
        let (mut set, mut peer) = tpm_pair(graph, 1, &obs, &format!("tpm_update/{name}"));
        g.throughput(Throughput::Elements(graph.len() as u64));
        g.bench_function(name.as_str(), |b| {
            b.iter(|| set.step(1.0, black_box(&obs)).unwrap())
        });
        g.bench_function(format!("{name}_peer"), |b| {
            b.iter(|| peer.step(1.0, black_box(&obs)))
        });
    }
    g.finish();

    let graph = &grids[1];
    let name = format!("{BATCH}x{}", graph.len());
    let obs = batch_observations(graph, BATCH, 0xba7c);
    let (mut set, mut peer) = tpm_pair(graph, BATCH, &obs, &format!("tpm_batch/{name}"));
    let mut g = c.benchmark_group("tpm_batch");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(8));
    g.throughput(Throughput::Elements((BATCH * graph.len()) as u64));
    g.bench_function(name.as_str(), |b| {
        b.iter(|| set.step(1.0, black_box(&obs)).unwrap())
    });
    g.bench_function(format!("{name}_peer"), |b| {
        b.iter(|| peer.step(1.0, black_box(&obs)))
    });
    // Where the time goes: the same step with nobody looking (diffusion and accrual only).
    g.bench_function(format!("{name}_unobserved"), |b| {
        b.iter(|| set.step(1.0, black_box(&[])).unwrap())
    });
    g.finish();
}

fn nav_generate(engine: &Engine, scene: &Scene) -> (NavGraph, NavReport) {
    generate(
        engine,
        scene,
        &NavParams::with_spacing(SPACING),
        &CostParams::standard(),
    )
    .expect("nav::generate")
}

fn print_report(id: &str, graph: &NavGraph, r: &NavReport) {
    eprintln!(
        "{id}: {} nodes ({} grid, {} passage), {} edges, {} walks; {} rays in {:.2} s = {:.2}M rays/s",
        graph.len(),
        r.grid_nodes,
        r.passage_nodes,
        r.edges,
        r.walks,
        r.rays,
        r.seconds,
        r.rays as f64 / r.seconds / 1e6
    );
}

/// `nav_generate/<name>` on each engine given. The throughput is the ray count of the first
/// engine's run in `setup` (made here when not given; skipped in test mode, where each function
/// runs once anyway); each engine's first measured run is printed after its function, with
/// whether its graph is the first engine's.
fn generation(
    c: &mut Criterion,
    name: &str,
    scene: &Scene,
    engines: &[(&str, &Engine)],
    setup: Option<(NavGraph, NavReport)>,
) {
    let setup = setup.or_else(|| (!test_mode()).then(|| nav_generate(engines[0].1, scene)));
    let mut g = c.benchmark_group(format!("nav_generate/{name}"));
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(5));
    if let Some((graph, report)) = &setup {
        print_report(
            &format!("nav_generate/{name}/{} (setup)", engines[0].0),
            graph,
            report,
        );
        g.throughput(Throughput::Elements(report.rays));
    }
    let mut reference = setup.map(|(graph, _)| graph);
    for &(engine_name, engine) in engines {
        let mut first: Option<(NavGraph, NavReport)> = None;
        g.bench_function(engine_name, |b| {
            b.iter(|| {
                let run = nav_generate(engine, scene);
                if first.is_none() {
                    first = Some(run.clone());
                }
                black_box(run)
            })
        });
        let Some((graph, report)) = first else {
            continue; // filtered out
        };
        let id = format!("nav_generate/{name}/{engine_name}");
        print_report(&format!("{id} (first measured run)"), &graph, &report);
        match &reference {
            Some(r) => eprintln!(
                "{id}: same graph as the first {} run: {}",
                engines[0].0,
                if *r == graph { "yes" } else { "NO" }
            ),
            None => reference = Some(graph),
        }
    }
    g.finish();
}

fn main() {
    let _ = env_logger::try_init();
    eprintln!(
        "seed baselines (Darken, McCue and Guerrero, Table 4, Q6600): TPM update 1.25 ms for \
         1,112 nodes, 4.07 ms for 3,785; targets: 0.05 ms for 3,785, 1 ms for {BATCH} x 3,785; \
         {} rayon threads",
        rayon::current_num_threads()
    );
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .configure_from_args();
    let cpu = Engine::cpu();
    let gpu = gpu_engine();

    // The urban graph at 2 m: the TPM's real graph, and the CPU setup run of its generation.
    let urban = procedural::urban(1, 1);
    let urban_run = nav_generate(&cpu, &urban);
    print_report("urban at 2 m (cpu)", &urban_run.0, &urban_run.1);
    tpm(&mut c, &urban_run.0);

    let mut engines = vec![("cpu", &cpu)];
    if let Some(gpu) = &gpu {
        engines.push(("gpu", gpu));
    }
    generation(&mut c, "urban_2m", &urban, &engines, Some(urban_run));
    drop(urban);

    let t = Instant::now();
    let d = procedural::detail_for_triangles("urban", 1, 1_000_000).expect("urban detail");
    let urban1m = procedural::urban(1, d);
    eprintln!(
        "urban_1M: detail {d}, {} triangles, generated in {:.1} s",
        urban1m.triangle_count(),
        t.elapsed().as_secs_f64()
    );
    // One GPU run of the 1M-triangle scene takes a minute or two on lavapipe, and criterion
    // needs at least eleven: measured only when asked for.
    if engines.len() > 1 && std::env::var("SIGHTLINE_BENCH_GPU_1M").is_ok_and(|v| v == "1") {
        eprintln!("nav_generate/urban_1M/gpu: measured (SIGHTLINE_BENCH_GPU_1M=1)");
    } else if engines.len() > 1 {
        eprintln!(
            "nav_generate/urban_1M/gpu: skipped (a minute or more per run on lavapipe); \
             SIGHTLINE_BENCH_GPU_1M=1 measures it"
        );
        engines.truncate(1);
    }
    generation(&mut c, "urban_1M", &urban1m, &engines, None);
    c.final_summary();
}
