//! `sightline navgraph`: generate (or load) a nav graph, report it, write JSON, CSV and a picture.

use crate::args::{self, NavArgs, SceneArgs};
use crate::picture::{legend::Key, palette, Canvas};
use crate::AnyResult;
use glam::Vec3;
use sightline::nav::{self, CostParams, NavGraph, NavParams, NavReport};
use sightline::{Engine, Scene};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Write the graph as JSON ({"nodes": [[x,y,z],...], "edges": [[a,b],...], ...}).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the graph as CSV (node,x,y,z and edge,a,b,kinds,length rows).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Draw nodes and edges over the scene, coloured by height.
    #[arg(long)]
    png: Option<PathBuf>,
    /// Draw only this part of the scene: X0,Z0,X1,Z1 in metres.
    #[arg(long, value_parser = args::parse_area, allow_hyphen_values = true)]
    area: Option<[f32; 4]>,
}

/// `sightline navgraph`: the graph `nav` describes, reported, then written as JSON, CSV and
/// a picture as asked.
pub fn command(scene: &SceneArgs, nav: &NavArgs, a: &Args) -> AnyResult<()> {
    let (s, e) = args::open(scene)?;
    let g = nav.graph(e, &s)?;
    if let Some(path) = &a.json {
        std::fs::write(
            path,
            serde_json::to_string(&crate::stats::with_counters(g.to_json()))?,
        )
        .map_err(|err| format!("{}: {err}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &a.csv {
        std::fs::write(path, g.to_csv()).map_err(|err| format!("{}: {err}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &a.png {
        picture(e, &s, &g, a.area, path)?;
    }
    Ok(())
}

/// Where the graph comes from.
pub enum Source<'a> {
    Generate(&'a NavParams),
    /// User nodes, connected by walk tests.
    Connect(Vec<Vec3>, &'a NavParams),
    /// A user graph file, used as it is.
    File(&'a Path),
}

/// Builds or loads the graph, printing what was done.
pub fn graph(
    engine: &Engine,
    scene: &Scene,
    source: Source<'_>,
    costs: &CostParams,
) -> AnyResult<NavGraph> {
    let (g, report) = match source {
        Source::Generate(p) => nav::generate(engine, scene, p, costs)?,
        Source::Connect(nodes, p) => nav::connect(engine, scene, nodes, p, costs)?,
        Source::File(path) => (nav::read_graph(path, costs)?, NavReport::default()),
    };
    if report.walks > 0 {
        eprint!("{}", describe_build(&report));
    }
    print!("{}", describe(&g));
    Ok(g)
}

fn describe_build(r: &NavReport) -> String {
    let mut s = String::new();
    if r.grid.0 > 0 {
        let _ = writeln!(
            s,
            "grid {} x {}: {} walkable places on the fine grid, {} without room for the body or \
             ground all round; {} small spots without a way out left without a node{}",
            r.grid.0,
            r.grid.1,
            r.floors,
            r.no_room,
            r.dropped_spots,
            if r.truncated_cells > 0 {
                format!(
                    "; {} cells had more surfaces than searched (raise max layers)",
                    r.truncated_cells
                )
            } else {
                String::new()
            }
        );
    }
    let _ = writeln!(
        s,
        "{} region nodes + {} passage corner nodes ({} passage edges, string-pulled from {} failed straight walks in {} pieces); {} walks tested, {} edges ({} stairs, {} water, {} crouch); {} rays in {:.2} s ({:.2} M rays/s)",
        r.grid_nodes,
        r.passage_nodes,
        r.passage_edges,
        r.failed_walks,
        r.pieces,
        r.walks,
        r.edges,
        r.stairs_edges,
        r.water_edges,
        r.crouch_edges,
        r.rays,
        r.seconds,
        r.rays as f64 / r.seconds.max(1e-9) / 1e6
    );
    s
}

/// Nodes, edges and components, the largest first, with where the others are.
pub fn describe(g: &NavGraph) -> String {
    let c = g.components();
    let mut s = format!(
        "nav graph: {} nodes, {} edges, {} components; the largest holds {} nodes ({:.1} %)\n",
        g.len(),
        g.edges().len(),
        c.sizes.len(),
        c.sizes.first().copied().unwrap_or(0),
        100.0 * c.largest_share()
    );
    let ground = g.ground_level();
    let (best, share) = c.best_share(&ground);
    let _ = writeln!(
        s,
        "ground level (no node under it): {} nodes, {:.1} % of them in component {best}",
        ground.iter().filter(|&&b| b).count(),
        100.0 * share
    );
    if c.sizes.len() > 1 {
        let rest: u32 = c.sizes[1..].iter().sum();
        let singles = c.sizes.iter().filter(|&&n| n == 1).count();
        let over = above_largest(g, &c.label);
        let _ = writeln!(
            s,
            "the rest: {rest} nodes in {} components ({singles} single nodes); {over} of them lie \
             over the largest network (roofs, tops of ceilings and walls with no way up); the \
             biggest of them:",
            c.sizes.len() - 1
        );
        for k in 1..c.sizes.len().min(11) {
            let members: Vec<Vec3> = (0..g.len())
                .filter(|&i| c.label[i] == k as u32)
                .map(|i| g.nodes()[i])
                .collect();
            let (lo, hi) = members.iter().fold(
                (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
                |(a, b), &p| (a.min(p), b.max(p)),
            );
            let _ = writeln!(
                s,
                "  component {k}: {} nodes, x {:.1}..{:.1}, z {:.1}..{:.1}, height {:.1}..{:.1} m",
                members.len(),
                lo.x,
                hi.x,
                lo.z,
                hi.z,
                lo.y,
                hi.y
            );
        }
    }
    s
}

/// Nodes outside the largest component with one of its nodes within 1.5 m horizontally and
/// more than a metre below.
fn above_largest(g: &NavGraph, label: &[u32]) -> usize {
    let key = |p: Vec3| ((p.x / 1.5).floor() as i64, (p.z / 1.5).floor() as i64);
    let mut main: std::collections::HashMap<(i64, i64), Vec<Vec3>> = Default::default();
    for (p, &l) in g.nodes().iter().zip(label) {
        if l == 0 {
            main.entry(key(*p)).or_default().push(*p);
        }
    }
    g.nodes()
        .iter()
        .zip(label)
        .filter(|(p, &l)| {
            let (kx, kz) = key(**p);
            l != 0
                && (-1..=1).any(|dx| {
                    (-1..=1).any(|dz| {
                        main.get(&(kx + dx, kz + dz)).is_some_and(|v| {
                            v.iter().any(|q| {
                                (q.x - p.x).abs() < 1.5
                                    && (q.z - p.z).abs() < 1.5
                                    && q.y < p.y - 1.0
                            })
                        })
                    })
                })
        })
        .count()
}

/// Nodes and edges top-down over the scene, coloured by height (blue low, red high; an edge
/// runs from one end's colour to the other's). Nodes outside the largest component are ringed
/// in magenta and drawn first, so the connected network lies on top; within each, lower floors
/// are drawn first.
pub fn picture(
    engine: &Engine,
    scene: &Scene,
    g: &NavGraph,
    area: Option<[f32; 4]>,
    path: &Path,
) -> AnyResult<()> {
    let (mut lo, mut hi) = bounds(g.nodes()).ok_or("the graph has no nodes to draw")?;
    if let Some([x0, z0, x1, z1]) = area {
        (lo.x, lo.z, hi.x, hi.z) = (x0.min(x1), z0.min(z1), x0.max(x1), z0.max(z1));
    }
    let mut canvas = Canvas::over_box(
        engine,
        scene,
        lo,
        hi,
        "nav graph: nodes and edges by height",
    )?;
    draw_graph(&mut canvas, g, lo.y, hi.y);
    Ok(canvas.save(path)?)
}

pub fn bounds(points: &[Vec3]) -> Option<(Vec3, Vec3)> {
    let first = *points.first()?;
    Some(
        points
            .iter()
            .fold((first, first), |(a, b), &p| (a.min(p), b.max(p))),
    )
}

pub fn draw_graph(canvas: &mut Canvas, g: &NavGraph, ylo: f32, yhi: f32) {
    let colour = |y: f32| {
        palette::viridis(if yhi > ylo {
            (y - ylo) / (yhi - ylo)
        } else {
            0.5
        })
    };
    let nodes = g.nodes();
    let comps = g.components();
    // Other components first (their nodes ringed), the largest on top; lower floors first.
    let key = |i: usize| (comps.label[i] == 0, nodes[i].y);
    let mut edges: Vec<_> = g.edges().iter().collect();
    edges.sort_by(|a, b| {
        let k = |e: &&sightline::nav::Edge| {
            (
                key(e.a as usize).0,
                nodes[e.a as usize].y + nodes[e.b as usize].y,
            )
        };
        k(a).0.cmp(&k(b).0).then(k(a).1.total_cmp(&k(b).1))
    });
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|&a, &b| key(a).0.cmp(&key(b).0).then(key(a).1.total_cmp(&key(b).1)));
    let r = (0.18 * canvas.px() / canvas.unit()).clamp(1.5, 4.0);
    let mut e = 0;
    for i in order {
        // Each component's edges just before its nodes.
        while e < edges.len() && key(edges[e].a as usize).0 <= key(i).0 {
            let (a, b) = (nodes[edges[e].a as usize], nodes[edges[e].b as usize]);
            canvas.gradient(a, b, colour(a.y), colour(b.y));
            e += 1;
        }
        if comps.label[i] != 0 {
            canvas.ring(nodes[i], r + 2.5, palette::PURPLE);
        }
        canvas.disc(nodes[i], r, colour(nodes[i].y));
    }
    for edge in &edges[e..] {
        let (a, b) = (nodes[edge.a as usize], nodes[edge.b as usize]);
        canvas.gradient(a, b, colour(a.y), colour(b.y));
    }
    canvas.key(Key::ramp(
        "node and edge height",
        format!("{ylo:.1} m"),
        format!("{yhi:.1} m"),
    ));
    if comps.label.iter().any(|&l| l != 0) {
        canvas.key(Key::ring(
            palette::PURPLE,
            "node cut off from the largest part",
        ));
    }
}
