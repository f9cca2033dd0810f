//! `sightline ringgraph`: where to take cover near a point (Slant Six Games, *Situational
//! Awareness: Terrain Reasoning for Tactical Shooter AI*): a ring node graph built around it on
//! the walk surface, scored against the threats, the best node and the route to it; a summary,
//! JSON and a top-down picture.

use crate::nav_cmd::bounds;
use crate::picture::{legend::Key, palette, Canvas};
use crate::AnyResult;
use glam::Vec3;
use image::Rgb;
use serde_json::{json, Value};
use sightline::nav::{self, NavParams, WalkSurface};
use sightline::ring::{
    Design, NodeKind, RingGraph, RingParams, Route, Score, ScoreCost, Scores, Shooter, Situation,
};
use sightline::{Engine, Scene};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// The point of interest X,Y,Z in metres; Y is a hint: the nodes stand on the walkable
    /// ground nearest to it.
    #[arg(long, value_parser = crate::parse_vec3, allow_hyphen_values = true)]
    at: Vec3,
    /// A threat's eye X,Y,Z in metres (repeat for several; at least one).
    #[arg(long = "threat", value_parser = crate::parse_vec3, allow_hyphen_values = true)]
    threats: Vec<Vec3>,
    /// Rings around the centre.
    #[arg(long, default_value_t = RingParams::standard().rings)]
    rings: u32,
    /// Nodes on each ring.
    #[arg(long, default_value_t = RingParams::standard().per_ring)]
    per_ring: u32,
    /// Radius of the outermost ring, metres.
    #[arg(long, default_value_t = RingParams::standard().radius)]
    radius: f32,
    /// A connection whose walk fails after more than this share of its length moves the node
    /// it heads for to where the walk stopped (against the wall: into cover).
    #[arg(long, default_value_t = RingParams::standard().clamp)]
    clamp: f32,
    /// Most wall-follower steps a build spends joining parts cut off from the centre (0: no
    /// joining).
    #[arg(long, default_value_t = RingParams::standard().search)]
    search: u32,
    /// Most wall-follower steps a build spends exploring from the centre's part: along walls,
    /// through doorways, up and down stairs (0: no exploring).
    #[arg(long, default_value_t = RingParams::standard().explore)]
    explore: u32,
    /// The agent's position X,Y,Z in metres, where the route starts (default: --at).
    #[arg(long, value_parser = crate::parse_vec3, allow_hyphen_values = true)]
    from: Option<Vec3>,
    /// Do not build the nav graph: the route starts at the ring node nearest to the agent,
    /// without a nav leg to it.
    #[arg(long)]
    no_nav: bool,
    /// Nodes (position, score, in_cover), edges, the path (ring node indices) and the seconds
    /// spent building, scoring and routing, as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Top-down picture: edges grey, nodes coloured by score (blue 0 to red 1), nodes in cover
    /// larger and outlined in white, threats red crosses, the centre a yellow ring, the agent a
    /// white ring, the path magenta.
    #[arg(long)]
    png: Option<PathBuf>,
}

const NO_THREAT: &str =
    "give at least one --threat X,Y,Z (a threat's eye in metres): cover is taken from threats";

const EDGE: Rgb<u8> = Rgb([110, 110, 120]);
const COVER: Rgb<u8> = palette::WHITE;
const THREAT: Rgb<u8> = palette::PURPLE;
const CENTRE: Rgb<u8> = palette::ORANGE;
const AGENT: Rgb<u8> = palette::WHITE;
const PATH: Rgb<u8> = palette::VERMILLION;

/// Everything the outputs show.
struct Answer {
    graph: RingGraph,
    scores: Scores,
    best: Option<u32>,
    route: Option<Route>,
    seconds: f64,
}

pub fn run(engine: &Engine, scene: &Scene, a: &Args) -> AnyResult<()> {
    let params = a.check()?;
    let at = a.at;
    let from = a.from.unwrap_or(at);
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.set_message("building the walk surface");
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let nav_params = NavParams::standard();
    let t0 = std::time::Instant::now();
    let surface = WalkSurface::build(engine, scene, &nav_params);
    spinner.finish_and_clear();
    let surface = surface?;
    eprintln!(
        "walk surface: {} places {} m apart, {} rays in {:.2} s",
        surface.len(),
        surface.step(),
        surface.rays(),
        t0.elapsed().as_secs_f64()
    );
    let nav = if a.no_nav {
        None
    } else {
        let t = std::time::Instant::now();
        let (g, _) = nav::generate_on(
            engine,
            scene,
            &surface,
            &nav_params,
            &nav::CostParams::standard(),
        )?;
        eprintln!(
            "nav graph: {} nodes, {} edges in {:.2} s",
            g.len(),
            g.edges().len(),
            t.elapsed().as_secs_f64()
        );
        Some(g)
    };
    let situation = Situation::new(a.threats.iter().map(|&t| Shooter::at(t)).collect());
    let t = std::time::Instant::now();
    let graph = RingGraph::build(&surface, at, &params, &Design::default())?;
    let scores = graph.score(engine, scene, &situation, &Score::take_cover())?;
    let best = scores.best();
    let route = match best {
        Some(b) => graph.route(nav.as_ref(), from, &scores, ScoreCost::default(), b)?,
        None => None,
    };
    let answer = Answer {
        graph,
        scores,
        best,
        route,
        seconds: t.elapsed().as_secs_f64(),
    };
    summary(&answer, at, a.threats.len());
    if let Some(path) = &a.json {
        let doc = to_json(&answer, a, from);
        std::fs::write(
            path,
            serde_json::to_string(&crate::stats::with_counters(doc))?,
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &a.png {
        picture(engine, scene, &answer, a, from, path)?;
    }
    Ok(())
}

impl Args {
    /// The layout, checked before the scene is loaded or anything is built.
    pub fn check(&self) -> AnyResult<RingParams> {
        let params = RingParams {
            rings: self.rings,
            per_ring: self.per_ring,
            radius: self.radius,
            clamp: self.clamp,
            search: self.search,
            explore: self.explore,
            ..RingParams::standard()
        };
        params.validate()?;
        if self.threats.is_empty() {
            return Err(NO_THREAT.into());
        }
        Ok(params)
    }
}

fn fmt(p: Vec3) -> String {
    format!("({:.2}, {:.2}, {:.2})", p.x, p.y, p.z)
}

/// Nodes passing `keep` that the graph joins to the centre (a finite walk from it).
fn joined(s: &Scores, keep: impl Fn(usize) -> bool) -> usize {
    (0..s.move_distance.len())
        .filter(|&i| keep(i) && s.move_distance[i].is_finite())
        .count()
}

fn summary(r: &Answer, at: Vec3, threats: usize) {
    let (g, s) = (&r.graph, &r.scores);
    let b = g.report();
    let nodes = g.nodes();
    println!(
        "ring graph around {}: {} nodes ({} joined to the centre), {} edges ({} generated: {} \
         clamped, {} merged, {} unplaced, {} pruned; {} walks)",
        fmt(at),
        g.len(),
        joined(s, |_| true),
        g.edges().len(),
        b.generated,
        b.clamped,
        b.merged,
        b.unplaced,
        b.pruned,
        b.walks
    );
    println!(
        "scored against {} threats: {} rays, {} nodes in cover ({} joined to the centre)",
        threats,
        s.rays,
        s.in_cover.iter().filter(|&&c| c).count(),
        joined(s, |i| s.in_cover[i])
    );
    match r.best {
        Some(i) => println!(
            "best node {i} at {}: score {:.3}, {:.1} m walk from the centre",
            fmt(nodes[i as usize].position),
            s.score[i as usize],
            s.move_distance[i as usize]
        ),
        None => {
            println!("best node: none (no node joined to the centre is in cover from every threat)")
        }
    }
    match (&r.route, r.best) {
        (Some(route), _) => println!(
            "path: {} ring nodes (node {} to node {}), cost {:.1}; nav leg to it: {} nodes{}",
            route.ring.len(),
            route.ring.first().copied().unwrap_or_default(),
            route.ring.last().copied().unwrap_or_default(),
            route.cost,
            route.nav_in.len(),
            route
                .nav_out
                .map(|n| format!("; then on from nav node {n}"))
                .unwrap_or_default()
        ),
        (None, Some(_)) => println!("path: none (the best node is not reached from the agent)"),
        (None, None) => println!("path: none"),
    }
    println!("built, scored and routed in {:.3} s", r.seconds);
    if r.best.is_none() {
        eprintln!(
            "no node joined to the centre is in cover from every threat: there is no position \
             to take, and the path is empty (try a larger --radius or more rings)"
        );
    } else if r.route.is_none() {
        eprintln!("the best node cannot be reached from the agent: the path is empty");
    }
}

fn v(p: Vec3) -> Value {
    json!([p.x, p.y, p.z])
}

fn kind(k: NodeKind) -> Value {
    match k {
        NodeKind::Centre => json!("centre"),
        NodeKind::Ring => json!("ring"),
        NodeKind::Clamped => json!("clamped"),
        NodeKind::Passage => json!("passage"),
        NodeKind::Annotation(i) => json!({ "annotation": i }),
    }
}

fn to_json(r: &Answer, a: &Args, from: Vec3) -> Value {
    let (g, s) = (&r.graph, &r.scores);
    let nodes: Vec<Value> = g
        .nodes()
        .iter()
        .enumerate()
        .map(|(i, n)| {
            json!({
                "position": v(n.position),
                "score": s.score[i],
                "in_cover": s.in_cover[i],
                "kind": kind(n.kind),
                "ring": n.ring,
                "slot": n.slot,
                // Metres along the graph from the centre; null where it cannot be reached.
                "walk": s.move_distance[i],
            })
        })
        .collect();
    let b = g.report();
    let route = r.route.as_ref();
    json!({
        "nodes": nodes,
        "edges": g.edges(),
        "path": route.map_or(&[][..], |x| &x.ring[..]),
        "seconds": r.seconds,
        "at": v(a.at),
        "from": v(from),
        "threats": a.threats.iter().map(|&t| v(t)).collect::<Vec<_>>(),
        "params": {
            "rings": a.rings,
            "per_ring": a.per_ring,
            "radius": a.radius,
            "clamp": a.clamp,
            "search": a.search,
            "explore": a.explore,
        },
        "best": r.best,
        "rays": s.rays,
        "in_cover": s.in_cover.iter().filter(|&&c| c).count(),
        "joined": joined(s, |_| true),
        "report": {
            "generated": b.generated,
            "clamped": b.clamped,
            "merged": b.merged,
            "unplaced": b.unplaced,
            "pruned": b.pruned,
            "walks": b.walks,
            "parts_joined": b.joined,
            "passages": b.passages,
            "search_steps": b.search_steps,
            "explore_steps": b.explored,
        },
        "cost": route.map(|x| x.cost),
        "nav_in": route.map_or(&[][..], |x| &x.nav_in[..]),
        "nav_out": route.and_then(|x| x.nav_out),
        // The whole route: the agent, the nav leg, the ring path.
        "points": route.map_or(Vec::new(), |x| x.points.iter().map(|&p| v(p)).collect()),
    })
}

/// A line `radius` pixels thick: discs along it a pixel apart.
fn thick(c: &mut Canvas, a: Vec3, b: Vec3, radius: f32, colour: Rgb<u8>) {
    let n = (Vec3::new(b.x - a.x, 0.0, b.z - a.z).length() * c.px()).ceil() as usize;
    for i in 0..=n.max(1) {
        c.disc(a.lerp(b, i as f32 / n.max(1) as f32), radius, colour);
    }
}

/// A cross `half` pixels each way, three pixels thick.
fn cross(c: &mut Canvas, p: Vec3, half: f32, colour: Rgb<u8>) {
    let half = half / c.px();
    for (dx, dz) in [(half, half), (half, -half)] {
        thick(
            c,
            p - Vec3::new(dx, 0.0, dz),
            p + Vec3::new(dx, 0.0, dz),
            1.5,
            colour,
        );
    }
}

fn picture(
    engine: &Engine,
    scene: &Scene,
    r: &Answer,
    a: &Args,
    from: Vec3,
    path: &Path,
) -> AnyResult<()> {
    let nodes: Vec<Vec3> = r.graph.nodes().iter().map(|n| n.position).collect();
    let (lo, hi) = picture_box(r, a, from, &nodes)?;
    let mut c = Canvas::over_box(
        engine,
        scene,
        lo,
        hi,
        "ring graph: nodes by score, route to the best",
    )?;
    let r_px = (0.2 * c.px() / c.unit()).clamp(2.0, 5.0);
    draw_graph(&mut c, r, &nodes, r_px);
    draw_marks(&mut c, r, from, &nodes, r_px);
    let (inner_lo, inner_hi) = (lo - Vec3::ONE, hi + Vec3::ONE);
    for t in &a.threats {
        let p = t.clamp(inner_lo, inner_hi);
        c.ring(p, r_px + 6.0, THREAT);
        c.disc(p, r_px, THREAT);
        cross(&mut c, p, 2.0 * r_px + 10.0, THREAT);
    }
    c.key(Key::ramp("node score", "0", "1"));
    c.key(Key::disc(
        COVER,
        "large, white edge: in cover from every threat",
    ));
    c.key(Key::line(EDGE, "ring graph edge"));
    c.key(Key::line(PATH, "route (ringed: the best node)"));
    c.key(Key::ring(CENTRE, "centre of the rings"));
    c.key(Key::ring(AGENT, "agent"));
    c.key(Key::ring(
        THREAT,
        "threat (crossed; on the border when far)",
    ));
    c.save(path)?;
    Ok(())
}

/// The box the picture shows: the graph's nodes, the whole square asked for, the agent, the
/// route and the threats near enough (a far one is drawn on the border, in its direction, so
/// the graph keeps its size).
fn picture_box(r: &Answer, a: &Args, from: Vec3, nodes: &[Vec3]) -> AnyResult<(Vec3, Vec3)> {
    let (mut lo, mut hi) = bounds(nodes).ok_or("the ring graph has no nodes to draw")?;
    let reach = Vec3::new(a.radius, 0.0, a.radius);
    let mut extra = vec![a.at - reach, a.at + reach, from];
    extra.extend(r.route.iter().flat_map(|x| x.points.iter().copied()));
    for p in extra {
        (lo, hi) = (lo.min(p), hi.max(p));
    }
    let near = |t: &Vec3| Vec3::new(t.x - a.at.x, 0.0, t.z - a.at.z).length() <= 2.0 * a.radius;
    for t in a.threats.iter().filter(|t| near(t)) {
        (lo, hi) = (lo.min(*t), hi.max(*t));
    }
    Ok((lo, hi))
}

/// The ring graph's edges, then its nodes coloured by score: lowest scores first, so the best
/// are drawn on top; nodes in cover larger and outlined, the exposed ones small.
fn draw_graph(c: &mut Canvas, r: &Answer, nodes: &[Vec3], r_px: f32) {
    for e in r.graph.edges() {
        c.line(nodes[e[0] as usize], nodes[e[1] as usize], EDGE);
    }
    let s = &r.scores;
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|&x, &y| s.score[x].total_cmp(&s.score[y]).then(x.cmp(&y)));
    for &i in &order {
        if s.in_cover[i] {
            c.disc(nodes[i], r_px + 2.5, COVER);
            c.disc(nodes[i], r_px + 1.0, palette::viridis(s.score[i]));
        } else {
            c.disc(nodes[i], 0.75 * r_px, palette::viridis(s.score[i]));
        }
    }
}

/// The route, the best node (ringed), the centre of the rings and the agent where it is not
/// at the centre.
fn draw_marks(c: &mut Canvas, r: &Answer, from: Vec3, nodes: &[Vec3], r_px: f32) {
    if let Some(route) = &r.route {
        c.path(&route.points, PATH);
    }
    if let Some(b) = r.best {
        let p = nodes[b as usize];
        c.ring(p, r_px + 6.0, PATH);
        c.disc(p, r_px, palette::viridis(r.scores.score[b as usize]));
    }
    let centre = nodes[r.graph.centre() as usize];
    c.ring(centre, r_px + 6.0, CENTRE);
    c.disc(centre, 0.75 * r_px, CENTRE);
    if from.distance(centre) > 0.5 {
        c.ring(from, r_px + 6.0, AGENT);
        c.disc(from, r_px, PATH);
    }
}
