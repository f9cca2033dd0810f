//! `sightline fireteam`: a team (or a squad of teams) moves across a scene; run.json, a contact
//! sheet of frames, the final threat map and the cover map.

use crate::args::{self, NavArgs, SceneArgs};
use crate::nav_cmd::bounds;
use crate::picture::{self, legend, legend::Key, palette, Canvas};
use crate::tpm_cmd::{nearest, nearest_where};
use crate::AnyResult;
use glam::Vec3;
use image::{Rgb, RgbImage};
use serde_json::json;
use sightline::fireteam::{CoverParams, Frame, Order, Outcome, SimParams, Simulation, World};
use sightline::nav::NavGraph;
use sightline::tables::{PrecomputeParams, TableFile};
use sightline::{Engine, Scene};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Where the team starts: X,Z (or X,Y,Z), snapped to the nearest node.
    #[arg(long, value_parser = args::parse_place, allow_hyphen_values = true)]
    from: Vec3,
    /// Where it goes: X,Z (or X,Y,Z), snapped to the nearest node the start can reach.
    #[arg(long, value_parser = args::parse_place, allow_hyphen_values = true)]
    to: Vec3,
    /// The sector to watch from the goal: FROM_DEG,TO_DEG, yaws from +X toward +Z.
    #[arg(long, value_parser = parse_sector, allow_hyphen_values = true)]
    sector: Option<(f32, f32)>,
    /// Members per team, the leader first.
    #[arg(long, default_value_t = 4)]
    members: usize,
    /// Teams (a squad of three fireteams: 3), starting side by side.
    #[arg(long, default_value_t = 1)]
    teams: usize,
    /// Actions per individual plan.
    #[arg(long, default_value_t = 5)]
    lookahead: u32,
    /// Seed of the run (the search's tie-breaking); default: --seed, which also seeds a
    /// built-in scene.
    #[arg(long)]
    run_seed: Option<u64>,
    /// Stop after this many simulated seconds if the team has not arrived.
    #[arg(long, default_value_t = 900.0)]
    max_seconds: f32,
    /// Line of sight between the graph's nodes from this table (`sightline precompute`, or a
    /// previous run's DIR/table.slt) instead of tracing it.
    #[arg(long)]
    table: Option<PathBuf>,
    /// Pairs of nodes farther apart are not traced (metres).
    #[arg(long, default_value_t = 100.0)]
    range: f32,
    /// Output folder: run.json, frames.png, tpm.png, cover.png (and table.slt when traced).
    #[arg(long)]
    out: PathBuf,
}

impl Args {
    pub fn table(&self) -> Option<&Path> {
        self.table.as_deref()
    }
}

/// `sightline fireteam`: the graph from `a.table` when given (else from `nav`), then the run.
pub fn command(scene: &SceneArgs, nav: &NavArgs, a: &Args) -> AnyResult<()> {
    let (s, e) = args::open(scene)?;
    let table = a
        .table()
        .map(|t| crate::tables_cmd::load_for_scene(t, &s))
        .transpose()?;
    let graph = match &table {
        Some(t) => NavGraph::from_table(t, &nav.costs())?
            .ok_or("the table holds no nav graph: recompute it with `sightline precompute`")
            .map_err(Into::into),
        None => nav.graph(e, &s),
    };
    run(e, &s, &scene.scene, scene.seed, graph, table, a)
}

fn parse_sector(s: &str) -> Result<(f32, f32), String> {
    let v: Vec<f32> = s
        .split(',')
        .map(|p| p.trim().parse::<f32>().map_err(|e| format!("'{p}': {e}")))
        .collect::<Result<_, _>>()?;
    match v[..] {
        [a, b] if a.is_finite() && b.is_finite() => Ok((a, b)),
        _ => Err(format!("expected FROM_DEG,TO_DEG, got '{s}'")),
    }
}

/// Most teams and members per team the command accepts.
const MAX_TEAMS: usize = 64;
const MAX_TEAM: usize = 16;

/// Checks the team sizes, makes the output folder, traces the table when none is given,
/// simulates the move and writes run.json and the pictures.
fn run(
    engine: &Engine,
    scene: &Scene,
    name: &str,
    seed: u64,
    graph: AnyResult<NavGraph>,
    table: Option<TableFile>,
    a: &Args,
) -> AnyResult<()> {
    if !(1..=MAX_TEAM).contains(&a.members) || !(1..=MAX_TEAMS).contains(&a.teams) {
        return Err(format!(
            "--members {} must be 1..={MAX_TEAM} and --teams {} 1..={MAX_TEAMS}",
            a.members, a.teams
        )
        .into());
    }
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let graph = graph?;
    let table = match table {
        Some(t) => t,
        None => trace_table(engine, scene, name, &graph, a)?,
    };
    let t0 = std::time::Instant::now();
    let world = World::new(graph, table, &CoverParams::standard())?;
    eprintln!(
        "cover of {} nodes in {:.2} s",
        world.graph().len(),
        t0.elapsed().as_secs_f64()
    );
    let orders = orders(world.graph(), a)?;
    let mut params = SimParams::standard();
    params.plan.lookahead = a.lookahead;
    params.max_seconds = a.max_seconds;
    let sim = Simulation::new(&world, &orders, params, a.run_seed.unwrap_or(seed))?;
    let (out, snaps, wall) = simulate(sim, a.max_seconds)?;
    report(&out, &world, wall);
    let path = a.out.join("run.json");
    std::fs::write(
        &path,
        serde_json::to_string(&crate::stats::with_counters(run_json(world.graph(), &out)))?,
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("wrote {}", path.display());
    pictures(engine, scene, &world, &out, &snaps, &a.out)
}

/// Line of sight between the graph's nodes within `a.range`, traced into DIR/table.slt and
/// read back.
fn trace_table(
    engine: &Engine,
    scene: &Scene,
    name: &str,
    graph: &NavGraph,
    a: &Args,
) -> AnyResult<TableFile> {
    let params = PrecomputeParams {
        range: Some(a.range),
        ..Default::default()
    };
    let out = a.out.join("table.slt");
    crate::tables_cmd::precompute(engine, scene, name, graph, &params, None, None, &out)?;
    Ok(TableFile::read_from(&out)?)
}

/// One order per team: its members on the nodes nearest the start along the graph, team after
/// team, all bound for the goal.
fn orders(g: &NavGraph, a: &Args) -> AnyResult<Vec<Order>> {
    let (start, goal) = ends(g, a.from, a.to)?;
    let order = sightline::fireteam::nearest_nodes(g, start, a.members * a.teams);
    if order.len() < a.members * a.teams {
        return Err(format!(
            "only {} nodes can be reached from the start: fewer than {} members",
            order.len(),
            a.members * a.teams
        )
        .into());
    }
    Ok(order
        .chunks(a.members)
        .map(|c| Order {
            start: c.to_vec(),
            goal,
            sector: a.sector,
        })
        .collect())
}

/// A threat map at a moment: the simulated time and the first team's values per node.
type Snap = (f32, Vec<f32>);

/// Runs the simulation to its end with a progress bar; returns its outcome, threat maps kept
/// for the contact sheet (one every few seconds, at most `MAX_SNAPS`, and the last) and the
/// wall-clock seconds it took.
fn simulate(mut sim: Simulation<'_>, max_seconds: f32) -> AnyResult<(Outcome, Vec<Snap>, f64)> {
    let bar = indicatif::ProgressBar::new(max_seconds.ceil() as u64);
    bar.set_style(indicatif::ProgressStyle::with_template(
        "simulating [{bar:40}] {pos}/{len} s",
    )?);
    let mut snaps: Vec<Snap> = vec![(0.0, sim.tpm().values(0))];
    let t0 = std::time::Instant::now();
    while sim.advance()? {
        let now = sim.now();
        if now >= snaps.last().map_or(0.0, |s| s.0) + SNAP_SECONDS && snaps.len() < MAX_SNAPS {
            snaps.push((now, sim.tpm().values(0)));
        }
        bar.set_position(now as u64);
    }
    snaps.push((sim.now(), sim.tpm().values(0)));
    bar.finish_and_clear();
    let wall = t0.elapsed().as_secs_f64();
    Ok((sim.finish(), snaps, wall))
}

/// The run as run.json: the graph, each team's path and destinations, the final threat map,
/// the report's figures and every frame's members.
fn run_json(g: &NavGraph, out: &Outcome) -> serde_json::Value {
    json!({
        "nodes": g.nodes().iter().map(|p| [p.x, p.y, p.z]).collect::<Vec<_>>(),
        "edges": g.edges().iter().map(|e| [e.a, e.b]).collect::<Vec<_>>(),
        "team_path": out.team_paths[0],
        "destinations": out.destinations[0],
        "arrived": out.arrived,
        "tpm": out.tpm[0],
        "teams": out.team_paths.iter().zip(&out.destinations).map(|(p, d)| json!({"team_path": p, "destinations": d})).collect::<Vec<_>>(),
        "report": {
            "seconds": out.report.seconds,
            "plans": out.report.plans,
            "refused": out.report.refused,
            "catch_ups": out.report.catch_ups,
            "dispersion_band_share": out.report.band_share(),
        },
        "frames": out.frames.iter().map(|f| json!({
            "t": f.t,
            "members": f.members.iter().map(|m| json!({
                "team": m.team,
                "node": m.node,
                "position": [m.position.x, m.position.y, m.position.z],
                "gaze_deg": m.gaze_yaw.to_degrees(),
                "plan": m.plan,
            })).collect::<Vec<_>>(),
            "tpm_max": f.tpm_max,
            "tpm_mean": f.tpm_mean,
        })).collect::<Vec<_>>(),
    })
}

/// frames.png (the contact sheet), tpm.png (the final threat map, the team path and the
/// members) and cover.png (cover per node) in `dir`.
fn pictures(
    engine: &Engine,
    scene: &Scene,
    world: &World,
    out: &Outcome,
    snaps: &[Snap],
    dir: &Path,
) -> AnyResult<()> {
    let g = world.graph();
    let nodes = g.nodes();
    let (lo, hi) = bounds(nodes).ok_or("no nodes")?;
    let small = Canvas::over_box_sized(engine, scene, lo, hi, "", picture::width() / 2)?;
    contact_sheet(&small, world, out, snaps, &dir.join("frames.png"))?;
    let base = Canvas::over_box(engine, scene, lo, hi, "")?;
    let mut c = base.clone();
    c.set_title("fireteam: threat map at the end, team path, members");
    heat(&mut c, g, &out.tpm[0], "threat probability");
    draw_path(&mut c, nodes, &out.team_paths[0], palette::WHITE);
    c.key(Key::line(palette::WHITE, "team path"));
    members(&mut c, out.frames.last().expect("a frame"), true);
    c.save(&dir.join("tpm.png"))?;
    let mut c = base;
    c.set_title("fireteam: cover per node (1 - exposure)");
    let cover: Vec<f32> = world.exposure().iter().map(|e| 1.0 - e).collect();
    heat(&mut c, g, &cover, "cover");
    c.save(&dir.join("cover.png"))?;
    Ok(())
}

const SNAP_SECONDS: f32 = 2.0;
const MAX_SNAPS: usize = 2000;
const PANELS: usize = 9;

fn flat(a: Vec3, b: Vec3) -> f32 {
    (a.x - b.x).powi(2) + (a.z - b.z).powi(2)
}

fn report(out: &Outcome, world: &World, wall: f64) {
    let g = world.graph();
    for (t, (p, d)) in out.team_paths.iter().zip(&out.destinations).enumerate() {
        let len: f32 = p
            .windows(2)
            .map(|w| g.nodes()[w[0] as usize].distance(g.nodes()[w[1] as usize]))
            .sum();
        println!(
            "team {t}: path of {} nodes ({len:.0} m), destinations {:?}",
            p.len(),
            d
        );
    }
    let r = &out.report;
    println!(
        "{} after {:.1} s simulated ({wall:.2} s to compute): {} plans ({} found no move), {} \
         catch-ups, {} frames; within the dispersion band {:.0}% of the time",
        if out.arrived {
            "arrived"
        } else {
            "NOT arrived"
        },
        r.seconds,
        r.plans,
        r.refused,
        r.catch_ups,
        out.frames.len(),
        100.0 * r.band_share()
    );
}

/// Each node a square coloured by `values` (viridis, relative to the highest), and its key.
fn heat(c: &mut Canvas, g: &NavGraph, values: &[f32], what: &str) {
    let nodes = g.nodes();
    let top = values.iter().copied().fold(1e-6f32, f32::max);
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|&a, &b| nodes[a].y.total_cmp(&nodes[b].y));
    let s = (1.6f32).max(3.0 / c.px());
    for i in order {
        let p = nodes[i];
        c.cell(
            p.x - s / 2.0,
            p.z - s / 2.0,
            s,
            palette::viridis(values[i] / top),
        );
    }
    c.key(Key::ramp(what, "0", format!("{top:.3}")));
}

fn draw_path(c: &mut Canvas, nodes: &[Vec3], path: &[u32], colour: Rgb<u8>) {
    for w in path.windows(2) {
        c.line(nodes[w[0] as usize], nodes[w[1] as usize], colour);
    }
}

/// Member colours, one per member of a team (cycled).
const COLOURS: [Rgb<u8>; 6] = [
    palette::WHITE,
    palette::ORANGE,
    palette::SKY_BLUE,
    palette::YELLOW,
    palette::PURPLE,
    palette::VERMILLION,
];

fn members(c: &mut Canvas, f: &Frame, gaze: bool) {
    for (k, m) in f.members.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        if gaze {
            let fov = 60f32.to_radians();
            for a in [m.gaze_yaw - fov / 2.0, m.gaze_yaw + fov / 2.0] {
                let end = m.position + Vec3::new(a.cos(), 0.0, a.sin()) * 10.0;
                c.line(m.position, end, colour);
            }
        }
        c.disc(m.position, 4.0, colour);
    }
    c.key(Key::disc(palette::WHITE, "member (one colour each)"));
    if gaze {
        c.key(Key::line(palette::WHITE, "member's gaze (60 deg)"));
    }
}

/// Darken, McCue and Guerrero's Figure 3 (right) over time: nine panels, each the threat map then, the team path,
/// every member's current plan and gaze.
fn contact_sheet(
    base: &Canvas,
    world: &World,
    out: &Outcome,
    snaps: &[Snap],
    path: &Path,
) -> AnyResult<()> {
    let g = world.graph();
    let nodes = g.nodes();
    let frames = &out.frames;
    let panels = PANELS.min(frames.len());
    let (w, h) = base.img.dimensions();
    let cols = 3u32;
    let rows = (panels as u32).div_ceil(cols);
    let mut sheet = RgbImage::from_pixel(
        cols * w + (cols - 1) * 4,
        rows * h + (rows - 1) * 4,
        Rgb([0, 0, 0]),
    );
    let mut keys = Vec::new();
    for k in 0..panels {
        let f = &frames[if panels > 1 {
            k * (frames.len() - 1) / (panels - 1)
        } else {
            0
        }];
        let snap = snaps
            .iter()
            .min_by(|a, b| (a.0 - f.t).abs().total_cmp(&(b.0 - f.t).abs()))
            .map(|s| &s.1[..])
            .unwrap_or(&out.tpm[0]);
        let mut c = base.clone();
        heat(&mut c, g, snap, "threat probability");
        for p in &out.team_paths {
            draw_path(&mut c, nodes, p, palette::WHITE);
        }
        for (i, m) in f.members.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let mut prev = m.position;
            for &n in &m.plan {
                c.line(prev, nodes[n as usize], colour);
                prev = nodes[n as usize];
            }
        }
        members(&mut c, f, true);
        if k == 0 {
            keys = c.keys().to_vec();
            keys.push(Key::line(
                palette::WHITE,
                "team path; thin: a member's plan",
            ));
        }
        let (x, y) = ((k as u32 % cols) * (w + 4), (k as u32 / cols) * (h + 4));
        image::imageops::replace(&mut sheet, &c.img, i64::from(x), i64::from(y));
    }
    let title = format!("fireteam: {panels} frames, left to right, top to bottom");
    picture::save(&legend::attach(&sheet, &title, &keys, base.px()), path)?;
    Ok(())
}

/// The start and goal nodes: the goal's nearest node, and the node nearest `from` that can
/// reach it (saying so when that is not the node nearest `from`, as in a closed room).
fn ends(g: &NavGraph, from: Vec3, to: Vec3) -> AnyResult<(u32, u32)> {
    let nodes = g.nodes();
    let goal = nearest(g, to);
    let comps = g.components();
    let reach = |i: u32| comps.label[i as usize] == comps.label[goal as usize] && i != goal;
    let Some(start) = nearest_where(g, from, reach) else {
        return Err(format!(
            "no node can reach the goal's nearest node {goal} at {}: it stands alone, cut off \
             from every other; pick another --to",
            nodes[goal as usize]
        )
        .into());
    };
    let first = nearest(g, from);
    if comps.label[first as usize] != comps.label[goal as usize] {
        let (p, q) = (nodes[first as usize], nodes[start as usize]);
        eprintln!(
            "--from: the nearest node {first} at ({:.1}, {:.1}, {:.1}) cannot reach the goal; \
             starting from node {start} at ({:.1}, {:.1}, {:.1}), {:.1} m from --from",
            p.x,
            p.y,
            p.z,
            q.x,
            q.y,
            q.z,
            flat(q, from).sqrt()
        );
    }
    Ok((start, goal))
}
