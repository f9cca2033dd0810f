//! `sightline tpm`: a team searches from where it stands; the threat probability map evolves;
//! a heat map over the scene and the gaze of every frame.

use crate::args::{self, NavArgs, PostureArg, SceneArgs};
use crate::nav_cmd::bounds;
use crate::picture::{legend::Key, palette, Canvas};
use crate::AnyResult;
use glam::Vec3;
use serde_json::json;
use sightline::nav::NavGraph;
use sightline::tables::TableFile;
use sightline::tpm::{Member, SearchParams, Searcher, TpmParams, TpmSet, View, ViewParams};
use sightline::{Engine, Scene};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Use this table's nav graph, line of sight and intervis (from `sightline precompute`)
    /// instead of generating a graph and tracing views.
    #[arg(long)]
    table: Option<PathBuf>,
    /// A team member at the node nearest X,Z (or X,Y,Z); repeat for each member.
    #[arg(long = "member", value_parser = args::parse_place, allow_hyphen_values = true, required = true)]
    members: Vec<Vec3>,
    /// Seconds to simulate.
    #[arg(long, default_value_t = 30.0)]
    seconds: f32,
    /// Seconds a gaze is held (one search frame).
    #[arg(long, default_value_t = 1.0)]
    frame: f32,
    /// Angular sectors around each member.
    #[arg(long, default_value_t = 8)]
    sectors: u32,
    /// Field of view of a gaze, degrees.
    #[arg(long, default_value_t = 60.0)]
    fov: f32,
    /// Seed of the tie-breaking between equally threatening sectors.
    #[arg(long, default_value_t = 1)]
    search_seed: u64,
    /// The posture a threat is assumed to hold.
    #[arg(long, value_enum, default_value_t = PostureArg::Standing)]
    posture: PostureArg,
    /// Heat map: hot (red) where a threat is likely, cold (blue) where the team looked.
    #[arg(long)]
    png: Option<PathBuf>,
    /// The final map and every frame's gazes as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// `sightline tpm`: the graph and the views from `a.table` when given, else from `nav` and
/// the engine, then the search.
pub fn command(scene: &SceneArgs, nav: &NavArgs, a: &Args) -> AnyResult<()> {
    let (s, e) = args::open(scene)?;
    let table = a
        .table
        .as_deref()
        .map(|t| crate::tables_cmd::load_for_scene(t, &s))
        .transpose()?;
    let (graph, sight) = match &table {
        Some(t) => (
            NavGraph::from_table(t, &nav.costs())?.ok_or(
                "the table holds no nav graph (written before nav graphs were stored): \
                 recompute it with `sightline precompute`",
            )?,
            Sight::Table(t),
        ),
        None => (nav.graph(e, &s)?, Sight::Engine(e, &s)),
    };
    run(e, &s, &graph, sight, a)
}

/// Where the views come from.
pub enum Sight<'a> {
    Table(&'a TableFile),
    Engine(&'a Engine, &'a Scene),
}

/// Largest number of frames one run simulates.
const MAX_FRAMES: f32 = 1e6;

/// The team searches for `a.seconds` from the nodes nearest its members' places; prints what
/// each member looked at and the final map, and writes the JSON and the heat map as asked.
fn run(
    engine: &Engine,
    scene: &Scene,
    graph: &NavGraph,
    sight: Sight<'_>,
    a: &Args,
) -> AnyResult<()> {
    let search = SearchParams {
        sectors: a.sectors,
        fov_degrees: a.fov,
        frame_seconds: a.frame,
    };
    let view = ViewParams {
        posture: a.posture.posture(),
        ..Default::default()
    };
    let seconds = a.seconds;
    if graph.is_empty() {
        return Err("the nav graph has no nodes: nothing to search".into());
    }
    if !(seconds.is_finite() && seconds > 0.0) || seconds / search.frame_seconds > MAX_FRAMES {
        return Err(format!(
            "--seconds {seconds} must be positive and at most {MAX_FRAMES} frames of {} s",
            search.frame_seconds
        )
        .into());
    }
    let nodes = graph.nodes();
    let at: Vec<u32> = a.members.iter().map(|&p| nearest(graph, p)).collect();
    let views = member_views(graph, sight, &at, &view)?;
    for (k, (&n, v)) in at.iter().zip(&views).enumerate() {
        eprintln!(
            "member {k} at node {n} {} sees {} nodes",
            nodes[n as usize],
            v.targets.len()
        );
    }
    let done = search_frames(graph, &views, search, seconds, a.search_seed)?;
    let values = done.set.values(0);
    print_looked(&done.looked, search.sectors);
    println!(
        "after {seconds} s: expected threats {:.1} over {} nodes (prior {}), highest {:.3}, lowest {:.4}",
        done.set.total(0),
        nodes.len(),
        done.set.params().prior,
        values.iter().copied().fold(0.0f32, f32::max),
        values.iter().copied().fold(1.0f32, f32::min),
    );
    if let Some(path) = &a.json {
        let doc = json!({
            "nodes": nodes.iter().map(|p| [p.x, p.y, p.z]).collect::<Vec<_>>(),
            "members": at.iter().zip(&views).map(|(&n, v)| json!({"node": n, "eye": [v.eye.x, v.eye.y, v.eye.z]})).collect::<Vec<_>>(),
            "tpm": values,
            "frames": done.log,
        });
        std::fs::write(
            path,
            serde_json::to_string(&crate::stats::with_counters(doc))?,
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &a.png {
        heat_png(engine, scene, graph, &views, &done, path)?;
    }
    Ok(())
}

/// What each member at node `at[k]` sees: from the table, or traced from its eye.
fn member_views(
    graph: &NavGraph,
    sight: Sight<'_>,
    at: &[u32],
    view: &ViewParams,
) -> AnyResult<Vec<View>> {
    let nodes = graph.nodes();
    Ok(match sight {
        Sight::Table(t) => at
            .iter()
            .map(|&n| View::from_table(t, n, view))
            .collect::<sightline::Result<_>>()?,
        Sight::Engine(e, s) => {
            let eyes: Vec<Vec3> = at
                .iter()
                .map(|&n| nodes[n as usize] + Vec3::Y * view.eye_height)
                .collect();
            View::from_engine(e, s, graph, &eyes, view)?
        }
    })
}

/// A finished search: the threat map, the searcher, each frame's gazes and totals (as the
/// JSON's `frames`) and the sectors each member looked at in order.
struct Searched {
    set: TpmSet,
    searcher: Searcher,
    log: Vec<serde_json::Value>,
    looked: Vec<Vec<u32>>,
}

/// Runs the search frame by frame for `seconds` (a progress bar from 200 frames).
fn search_frames(
    graph: &NavGraph,
    views: &[View],
    search: SearchParams,
    seconds: f32,
    seed: u64,
) -> AnyResult<Searched> {
    let nodes = graph.nodes();
    let mut set = TpmSet::new(graph, 1, TpmParams::standard())?;
    let mut searcher = Searcher::new(search, seed)?;
    let members: Vec<Member<'_>> = views.iter().map(|v| Member { tpm: 0, view: v }).collect();
    let frames = (seconds / search.frame_seconds).ceil() as usize;
    let bar = indicatif::ProgressBar::new(frames as u64);
    if frames < 200 {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let mut log = Vec::with_capacity(frames);
    let mut looked: Vec<Vec<u32>> = vec![Vec::new(); members.len()];
    for f in 0..frames {
        let gazes = searcher.frame(&mut set, nodes, &members)?;
        let values = set.values(0);
        for (k, g) in gazes.iter().enumerate() {
            looked[k].push(g.sector);
        }
        log.push(json!({
            "t": (f + 1) as f32 * search.frame_seconds,
            "gazes": gazes.iter().map(|g| json!({"sector": g.sector, "yaw_deg": g.yaw.to_degrees(), "threat": g.threat, "seen": g.seen})).collect::<Vec<_>>(),
            "total": set.total(0),
            "max": values.iter().copied().fold(0.0f32, f32::max),
        }));
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(Searched {
        set,
        searcher,
        log,
        looked,
    })
}

/// A line per member: how many of the sectors it looked at, and the first 40 in order.
fn print_looked(looked: &[Vec<u32>], sectors: u32) {
    for (k, seq) in looked.iter().enumerate() {
        let mut distinct = seq.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let shown: Vec<String> = seq.iter().take(40).map(u32::to_string).collect();
        println!(
            "member {k}: looked at {} of {} sectors; sectors in order: {}{}",
            distinct.len(),
            sectors,
            shown.join(" "),
            if seq.len() > 40 { " ..." } else { "" }
        );
    }
}

/// The node nearest to a member's place: by horizontal distance when `y` is NaN (an X,Z
/// place), else in 3D.
pub fn nearest(graph: &NavGraph, p: Vec3) -> u32 {
    nearest_where(graph, p, |_| true).unwrap_or(0)
}

/// The node nearest `p` among those where `keep` holds: in 3D, or on the ground plane when
/// `p.y` is NaN (ties, floors above one another, go to the lowest floor).
pub fn nearest_where(graph: &NavGraph, p: Vec3, keep: impl Fn(u32) -> bool) -> Option<u32> {
    let d = |q: Vec3| {
        let flat = (q.x - p.x).powi(2) + (q.z - p.z).powi(2);
        if p.y.is_nan() {
            (flat, q.y)
        } else {
            (flat + (q.y - p.y).powi(2), 0.0)
        }
    };
    (0..graph.len() as u32)
        .filter(|&i| keep(i))
        .min_by(|&a, &b| {
            let (da, db) = (d(graph.nodes()[a as usize]), d(graph.nodes()[b as usize]));
            da.0.total_cmp(&db.0).then(da.1.total_cmp(&db.1))
        })
}

/// Darken, McCue and Guerrero's Figure 2: the map over the scene, hot (red) where a threat is likely, cold
/// (blue) where the team has looked; each member a white ring with its last gaze's field of
/// view.
fn heat_png(
    engine: &Engine,
    scene: &Scene,
    graph: &NavGraph,
    views: &[View],
    done: &Searched,
    path: &Path,
) -> AnyResult<()> {
    let values = &done.set.values(0);
    let (searcher, log) = (&done.searcher, &done.log);
    let nodes = graph.nodes();
    let (lo, hi) = bounds(nodes).ok_or("no nodes")?;
    let mut canvas = Canvas::over_box(
        engine,
        scene,
        lo,
        hi,
        "threat probability: where a threat likely is",
    )?;
    let mut lengths: Vec<f32> = graph.edges().iter().map(|e| e.length).collect();
    lengths.sort_by(f32::total_cmp);
    let cell = lengths
        .get(lengths.len() / 2)
        .copied()
        .unwrap_or(2.0)
        .clamp(0.5, 4.0);
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|&a, &b| nodes[a].y.total_cmp(&nodes[b].y));
    let top = values.iter().copied().fold(1e-6f32, f32::max);
    for i in order {
        let p = nodes[i];
        let s = 0.8 * cell;
        canvas.cell(
            p.x - s / 2.0,
            p.z - s / 2.0,
            s,
            palette::viridis(values[i] / top),
        );
    }
    let fov = searcher.params.fov_degrees.to_radians();
    let last = log.last().and_then(|f| f["gazes"].as_array());
    for (k, v) in views.iter().enumerate() {
        if let Some(yaw) = last
            .and_then(|g| g.get(k))
            .and_then(|g| g["yaw_deg"].as_f64())
        {
            let yaw = (yaw as f32).to_radians();
            for a in [yaw - fov / 2.0, yaw, yaw + fov / 2.0] {
                let end = v.eye + Vec3::new(a.cos(), 0.0, a.sin()) * 12.0;
                canvas.line(v.eye, end, palette::WHITE);
            }
        }
        canvas.ring(v.eye, 7.0, palette::WHITE);
        canvas.disc(v.eye, 3.0, palette::BLACK);
    }
    canvas.key(Key::ramp("threat probability", "0", format!("{top:.3}")));
    canvas.key(Key::ring(palette::WHITE, "team member"));
    canvas.key(Key::line(palette::WHITE, "last gaze: edges and centre"));
    Ok(canvas.save(path)?)
}
