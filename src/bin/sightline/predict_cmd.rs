//! `sightline predict`: where a threat that went out of sight presumably is and where to aim
//! (van der Sterren, *Terrain Reasoning for 3D Action Games*); a report, JSON and a picture.

use crate::args::{self, NavArgs, SceneArgs};
use crate::nav_cmd::bounds;
use crate::picture::{legend::Key, palette, Canvas};
use crate::AnyResult;
use glam::Vec3;
use image::Rgb;
use serde_json::{json, Value};
use sightline::nav::NavGraph;
use sightline::terrain::predict::{predict, PredictParams, Prediction, Sighting};
use sightline::{Engine, Scene};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// Where the threat was last seen: its feet X,Y,Z in metres.
    #[arg(long, value_parser = args::parse_vec3, allow_hyphen_values = true)]
    seen: Vec3,
    /// Its velocity then, X,Y,Z in metres per second.
    #[arg(long, value_parser = args::parse_vec3, allow_hyphen_values = true)]
    velocity: Vec3,
    /// Seconds since it was last seen.
    #[arg(long)]
    since: f32,
    /// The observer's (the AI's) eye X,Y,Z in metres.
    #[arg(long, value_parser = args::parse_vec3, allow_hyphen_values = true)]
    observer: Vec3,
    /// The threat's eye above its feet, metres (the spot the observer would see).
    #[arg(long, default_value_t = PredictParams::standard().eye_height)]
    eye_height: f32,
    /// Extrapolation step, metres.
    #[arg(long, default_value_t = PredictParams::standard().step)]
    step: f32,
    /// How much longer than the straight line the threat's path along the graph may be.
    #[arg(long, default_value_t = PredictParams::standard().slack)]
    slack: f32,
    /// Slowest speed assumed for the threat, metres per second.
    #[arg(long, default_value_t = PredictParams::standard().min_speed)]
    min_speed: f32,
    /// Top-down picture: the nav graph faint (dark blue-grey), the observer white, the last-seen
    /// position and the velocity arrow (1 s) yellow, the straight extrapolation red (ring at its
    /// end), the valid steps cyan, the presumed position magenta, the path to the observer
    /// green and the aim point orange (with the sight line to it).
    #[arg(long)]
    png: Option<PathBuf>,
    /// The prediction as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

const GRAPH: Rgb<u8> = Rgb([110, 110, 120]);
const OBSERVER: Rgb<u8> = palette::WHITE;
const SEEN: Rgb<u8> = palette::YELLOW;
const EXTRAPOLATED: Rgb<u8> = palette::VERMILLION;
const STEPS: Rgb<u8> = palette::SKY_BLUE;
const PRESUMED: Rgb<u8> = palette::PURPLE;
const PATH: Rgb<u8> = palette::BLUISH_GREEN;
const AIM: Rgb<u8> = palette::ORANGE;

/// `sightline predict`: the graph `nav` describes, then the prediction.
pub fn command(scene: &SceneArgs, nav: &NavArgs, a: &Args) -> AnyResult<()> {
    let (s, e) = args::open(scene)?;
    run(e, &s, &nav.graph(e, &s)?, a)
}

/// Predicts where the threat went and where to aim, prints it, and writes the JSON and the
/// picture as asked.
fn run(engine: &Engine, scene: &Scene, graph: &NavGraph, a: &Args) -> AnyResult<()> {
    let sighting = Sighting {
        seen: a.seen,
        velocity: a.velocity,
        since: a.since,
    };
    let params = PredictParams {
        eye_height: a.eye_height,
        step: a.step,
        slack: a.slack,
        min_speed: a.min_speed,
    };
    let t0 = std::time::Instant::now();
    let r = predict(engine, scene, graph, a.observer, &sighting, &params)?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    print_prediction(&r, graph);
    eprintln!("predicted in {ms:.2} ms");
    if let Some(path) = &a.json {
        let doc = to_json(&r, &sighting, a.observer, graph);
        std::fs::write(
            path,
            serde_json::to_string_pretty(&crate::stats::with_counters(doc))?,
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &a.png {
        picture(engine, scene, graph, &r, a, path)?;
    }
    Ok(())
}

/// The prediction as text: the extrapolation, the presumed position and the aim point (or
/// why there is none).
fn print_prediction(r: &Prediction, graph: &NavGraph) {
    let nodes = graph.nodes();
    println!(
        "extrapolated {}; presumed {} at node {} {} (correction: {}, {} valid steps)",
        fmt(r.extrapolated),
        fmt(r.presumed),
        r.presumed_node,
        fmt(nodes[r.presumed_node as usize]),
        r.corrected_by.name(),
        r.steps.len()
    );
    if r.presumed_visible {
        println!("the presumed position is in the observer's view: no step past the sighting fits");
    }
    match (r.aim_node, r.aim) {
        (Some(n), Some(aim)) => println!(
            "aim at node {n}: {} ({:.2} s for the threat, node {} of {} on the path to the observer's node {})",
            fmt(aim),
            r.time_to_aim,
            r.path.iter().position(|&p| p == n).map_or(0, |i| i + 1),
            r.path.len(),
            r.observer_node
        ),
        _ if r.path.is_empty() => println!(
            "no aim point: the graph does not connect node {} to the observer's node {}",
            r.presumed_node, r.observer_node
        ),
        _ => println!(
            "no aim point: the observer sees none of the {} nodes on the path to its node {}",
            r.path.len(),
            r.observer_node
        ),
    }
}

/// The nav graph faintly, the sighting and its velocity, the straight extrapolation, the
/// valid steps, the presumed position, the path to the observer and the aim point.
fn picture(
    engine: &Engine,
    scene: &Scene,
    graph: &NavGraph,
    r: &Prediction,
    a: &Args,
    path: &Path,
) -> AnyResult<()> {
    let nodes = graph.nodes();
    let (mut lo, mut hi) = bounds(nodes).ok_or("the graph has no nodes to draw")?;
    for p in [a.observer, a.seen, r.extrapolated] {
        (lo, hi) = (lo.min(p), hi.max(p));
    }
    let mut c = Canvas::over_box(
        engine,
        scene,
        lo,
        hi,
        "predict: where the threat went, where to aim",
    )?;
    let r_px = (0.25 * c.px() / c.unit()).clamp(2.0, 6.0);
    // Faint, one colour: the graph is the backdrop.
    for e in graph.edges() {
        c.line(nodes[e.a as usize], nodes[e.b as usize], GRAPH);
    }
    for &n in nodes {
        c.disc(n, 1.5, GRAPH);
    }
    c.line(a.seen, r.extrapolated, EXTRAPOLATED);
    c.ring(r.extrapolated, r_px + 3.0, EXTRAPOLATED);
    for w in r.path.windows(2) {
        c.line(nodes[w[0] as usize], nodes[w[1] as usize], PATH);
    }
    for &s in &r.steps {
        c.disc(s, r_px * 0.6, STEPS);
    }
    arrow(&mut c, a.seen, a.seen + a.velocity, SEEN);
    c.disc(a.seen, r_px, SEEN);
    c.disc(r.presumed, r_px + 1.0, PRESUMED);
    if let Some(aim) = r.aim {
        c.line(a.observer, aim, AIM);
        c.ring(aim, r_px + 3.0, AIM);
        c.disc(aim, r_px, AIM);
    }
    c.ring(a.observer, r_px + 3.0, OBSERVER);
    c.disc(a.observer, r_px, OBSERVER);
    for k in [
        Key::ring(OBSERVER, "observer"),
        Key::disc(SEEN, "last seen, arrow: velocity (1 s)"),
        Key::ring(EXTRAPOLATED, "straight extrapolation"),
        Key::disc(STEPS, "valid steps"),
        Key::disc(PRESUMED, "presumed position"),
        Key::line(PATH, "path to the observer"),
        Key::ring(AIM, "aim point"),
        Key::line(GRAPH, "nav graph"),
    ] {
        c.key(k);
    }
    c.save(path)?;
    Ok(())
}

fn fmt(p: Vec3) -> String {
    format!("({:.2}, {:.2}, {:.2})", p.x, p.y, p.z)
}

fn v(p: Vec3) -> Value {
    json!([p.x, p.y, p.z])
}

fn to_json(r: &Prediction, s: &Sighting, observer: Vec3, graph: &NavGraph) -> Value {
    let nodes = graph.nodes();
    json!({
        "seen": v(s.seen),
        "velocity": v(s.velocity),
        "since": s.since,
        "observer": v(observer),
        "extrapolated": v(r.extrapolated),
        "presumed": v(r.presumed),
        "presumed_node": r.presumed_node,
        "presumed_node_position": v(nodes[r.presumed_node as usize]),
        "corrected_by": r.corrected_by.name(),
        "presumed_visible": r.presumed_visible,
        "observer_node": r.observer_node,
        "path": r.path,
        "aim_node": r.aim_node,
        "aim": r.aim.map(v),
        // Infinite (no aim node) is written as null.
        "time_to_aim": r.aim_node.map(|_| r.time_to_aim),
        "steps": r.steps.iter().map(|&p| v(p)).collect::<Vec<_>>(),
    })
}

/// A line from `a` to `b` with a head of two short strokes at `b`.
fn arrow(c: &mut crate::picture::Canvas, a: Vec3, b: Vec3, colour: Rgb<u8>) {
    c.line(a, b, colour);
    let d = Vec3::new(b.x - a.x, 0.0, b.z - a.z);
    if d.length() < 1e-3 {
        return;
    }
    let back = -d.normalize() * 0.6;
    let side = Vec3::new(-back.z, 0.0, back.x) * 0.5;
    c.line(b, b + back + side, colour);
    c.line(b, b + back - side, colour);
}
