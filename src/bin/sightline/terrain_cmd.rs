//! `sightline terrain`: terrain reasoning on the nav graph (van der Sterren, *Terrain Reasoning
//! for 3D Action Games*): sniping, ambush, combat, stronghold or sentry ratings per waypoint, as
//! a CSV for tuning in a spreadsheet and a top-down heat map.

use crate::args::{self, NavArgs, SceneArgs};
use crate::nav_cmd::bounds;
use crate::picture::{legend::Key, palette, Canvas};
use crate::AnyResult;
use sightline::nav::NavGraph;
use sightline::terrain::experience::{Experience, ExperienceParams};
use sightline::terrain::props::{read_areas, read_key_locations, KeyKind, KeyLocation};
use sightline::terrain::sniping::{Sniping, SnipingParams, SnipingRow};
use sightline::terrain::tactics::{self, AmbushRow, CombatRow, SentryRow, TacticsParams, Traffic};
use sightline::terrain::{Direction, Survey, SurveyParams};
use sightline::{Engine, Scene};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Query {
    Sniping,
    Ambush,
    Combat,
    Strongholds,
    Sentry,
}

#[derive(clap::Args)]
pub struct Args {
    /// What to rate.
    #[arg(long, value_enum, default_value_t = Query::Sniping)]
    query: Query,
    /// Direction of the sniping or the attack: east (+X), north-east, north (-Z), north-west,
    /// west, south-west, south, south-east (or e, ne, n, ...).
    #[arg(long, default_value = "east", value_parser = parse_dir)]
    dir: Direction,
    /// Experience recorded in play (JSON, see `terrain::experience`): sniping scores are
    /// adjusted with it, and rated again with its traffic; ambush uses its traffic.
    #[arg(long)]
    experience: Option<PathBuf>,
    /// Doors and windows (CSV kind,x,y,z[,nx,nz]) instead of finding them in the geometry.
    #[arg(long)]
    keys: Option<PathBuf>,
    /// Areas (CSV waypoint,area[,indoor]) instead of finding them from the graph.
    #[arg(long)]
    areas: Option<PathBuf>,
    /// Seconds of travel that count as the time horizon.
    #[arg(long, default_value_t = SurveyParams::standard().relations.horizon)]
    horizon: f32,
    /// Shortest-path trips that estimate traffic for ambush when no experience has traffic.
    #[arg(long, default_value_t = 2000)]
    trips: usize,
    /// Rate every component of the graph; by default only the largest is kept (no waypoints
    /// on roofs or in closed rooms nobody can reach: they would be rated as unreachable
    /// sniping nests).
    #[arg(long)]
    all_components: bool,
    /// One row per waypoint: waypoint,x,y,z, the properties the score uses, score.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Top-down heat map of the score by rank (blue lowest, red highest; white rings: the top
    /// 10 %;
    /// yellow squares: doors, cyan squares: windows; the arrow: the direction).
    #[arg(long)]
    png: Option<PathBuf>,
}

fn parse_dir(s: &str) -> Result<Direction, String> {
    Direction::parse(s).map_err(|e| e.to_string())
}

/// A rating's table: column names, and per waypoint its values (the last one the score).
struct Table {
    columns: Vec<&'static str>,
    rows: Vec<Vec<f32>>,
}

/// `sightline terrain`: the graph `nav` describes, then the ratings.
pub fn command(scene: &SceneArgs, nav: &NavArgs, a: &Args) -> AnyResult<()> {
    let (s, e) = args::open(scene)?;
    terrain(e, &s, nav.graph(e, &s)?, a)
}

/// Rates the graph's waypoints (its largest component unless `a.all_components`) for
/// `a.query`, prints the best five and writes the CSV and the heat map as asked.
fn terrain(engine: &Engine, scene: &Scene, graph: NavGraph, a: &Args) -> AnyResult<()> {
    let graph = &rated_part(graph, a.all_components)?;
    let survey = survey(engine, scene, graph, a)?;
    let ep = ExperienceParams::standard();
    let experience = a
        .experience
        .as_ref()
        .map(|f| Experience::load(f, graph.nodes()))
        .transpose()?;
    let t1 = std::time::Instant::now();
    let table = rate(&survey, experience.as_ref(), &ep, a)?;
    eprintln!("rated in {:.3} s", t1.elapsed().as_secs_f64());
    let scores: Vec<f32> = table
        .rows
        .iter()
        .map(|r| *r.last().unwrap_or(&0.0))
        .collect();
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&x, &y| scores[y].total_cmp(&scores[x]).then(x.cmp(&y)));
    let rating = Rating {
        graph,
        survey: &survey,
        scores,
        order,
    };
    print_best(&rating, a);
    if let Some(path) = &a.csv {
        write_csv(path, &rating, &table)?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &a.png {
        heat_map(engine, scene, &rating, a, path)?;
    }
    Ok(())
}

/// The rated waypoints: the survey, a score per waypoint and the waypoints best first (ties
/// by index).
struct Rating<'a> {
    graph: &'a NavGraph,
    survey: &'a Survey,
    scores: Vec<f32>,
    order: Vec<usize>,
}

/// The part of the graph to rate: all of it with `all_components` or when it is connected,
/// else its largest component (saying how much was left out).
fn rated_part(graph: NavGraph, all_components: bool) -> AnyResult<NavGraph> {
    let comps = graph.components();
    if all_components || comps.sizes.len() < 2 {
        return Ok(graph);
    }
    let costs = sightline::nav::CostParams::standard();
    let (kept, _) = graph.subgraph(|i| comps.label[i as usize] == 0, &costs)?;
    eprintln!(
        "rating the largest component: {} of {} waypoints ({} in {} other components left \
         out; --all-components keeps them)",
        kept.len(),
        graph.len(),
        graph.len() - kept.len(),
        comps.sizes.len() - 1
    );
    Ok(kept)
}

/// The survey of the graph (sight and fire between every pair, doors, windows, areas) with a
/// progress bar, reported on stderr.
fn survey(engine: &Engine, scene: &Scene, graph: &NavGraph, a: &Args) -> AnyResult<Survey> {
    let mut p = SurveyParams::standard();
    p.relations.horizon = a.horizon;
    let keys = a.keys.as_ref().map(read_key_locations).transpose()?;
    let areas = a
        .areas
        .as_ref()
        .map(|f| read_areas(f, graph.len()))
        .transpose()?;
    let pairs = graph.len() as u64 * (graph.len() as u64).saturating_sub(1) / 2;
    let bar = indicatif::ProgressBar::new(pairs);
    bar.set_style(indicatif::ProgressStyle::with_template(
        "tracing sight and fire [{bar:40}] {percent}% of {len} pairs",
    )?);
    let t0 = std::time::Instant::now();
    let survey = Survey::compute_with_progress(engine, scene, graph, &p, keys, areas, |d, t| {
        bar.set_length(t);
        bar.set_position(d);
    })?;
    bar.finish_and_clear();
    let (doors, windows) = survey.key_counts();
    eprintln!(
        "surveyed {} waypoints in {:.2} s: {} doors, {} windows ({} with no waypoint within \
         reach), {} areas, relations {:.1} MB",
        graph.len(),
        t0.elapsed().as_secs_f64(),
        doors,
        windows,
        survey.keys_unreached,
        survey.areas.count,
        survey.relations.bytes() as f64 / 1e6
    );
    Ok(survey)
}

/// The rows `a.query` rates, the score last in each row.
fn rate(
    survey: &Survey,
    experience: Option<&Experience>,
    ep: &ExperienceParams,
    a: &Args,
) -> AnyResult<Table> {
    let tp = TacticsParams::standard();
    Ok(match a.query {
        Query::Sniping => sniping(survey, experience, ep, a.dir)?,
        Query::Ambush => {
            let traffic = match experience {
                Some(e) if e.has_traffic() => Traffic::from_experience(e, ep),
                _ => Traffic::estimate(&survey.relations, a.trips, 1)?,
            };
            let rows = tactics::ambush(&survey.relations, &traffic, a.dir, &tp)?;
            Table {
                columns: AmbushRow::COLUMNS.to_vec(),
                rows: rows.iter().map(|r| r.values().to_vec()).collect(),
            }
        }
        Query::Combat => {
            let rows = tactics::combat(&survey.relations, &tp)?;
            Table {
                columns: CombatRow::COLUMNS.to_vec(),
                rows: rows.iter().map(|r| r.values().to_vec()).collect(),
            }
        }
        Query::Strongholds => strongholds(survey, &tp)?,
        Query::Sentry => {
            let rows = tactics::sentry(&survey.relations, &survey.key_nodes, &tp)?;
            Table {
                columns: SentryRow::COLUMNS.to_vec(),
                rows: rows.iter().map(|r| r.values().to_vec()).collect(),
            }
        }
    })
}

/// Stronghold rows: each waypoint's area, whether it is indoors, the area's combat values
/// from outside and its rating.
fn strongholds(survey: &Survey, tp: &TacticsParams) -> AnyResult<Table> {
    let rows = tactics::strongholds(&survey.relations, &survey.areas.of_node, tp)?;
    let mut columns = vec!["area", "indoor"];
    columns.extend([
        "cover_outside",
        "overview_outside",
        "flank_outside",
        "combat_outside",
        "score",
    ]);
    Ok(Table {
        columns,
        rows: rows
            .iter()
            .map(|r| {
                let indoor = survey.areas.indoor[r.area as usize];
                let c = r.combat.values();
                vec![
                    r.area as f32,
                    f32::from(u8::from(indoor)),
                    c[0],
                    c[1],
                    c[2],
                    c[3],
                    r.area_rating,
                ]
            })
            .collect(),
    })
}

/// The five best waypoints, a line each.
fn print_best(r: &Rating<'_>, a: &Args) {
    let nodes = r.graph.nodes();
    println!("best {:?} spots ({}):", a.query, a.dir.name());
    for &w in r.order.iter().take(5) {
        let q = nodes[w];
        println!(
            "  waypoint {w} at ({:.1}, {:.1}, {:.1}): score {:.3}",
            q.x, q.y, q.z, r.scores[w]
        );
    }
}

/// One CSV row per waypoint: waypoint,x,y,z,light,movement, then the table's columns.
fn write_csv(path: &Path, r: &Rating<'_>, table: &Table) -> AnyResult<()> {
    let nodes = r.graph.nodes();
    let mut text = String::from("waypoint,x,y,z,light,movement");
    for c in &table.columns {
        write!(text, ",{c}")?;
    }
    text.push('\n');
    for (w, row) in table.rows.iter().enumerate() {
        let q = nodes[w];
        write!(
            text,
            "{w},{},{},{},{},{}",
            q.x,
            q.y,
            q.z,
            r.survey.light[w],
            r.survey.movement[w].names()
        )?;
        for v in row {
            write!(text, ",{v}")?;
        }
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

/// Sniping rows in `dir`, with the experience's adjustment and its traffic re-run.
fn sniping(
    survey: &Survey,
    experience: Option<&Experience>,
    ep: &ExperienceParams,
    dir: Direction,
) -> AnyResult<Table> {
    let traffic = experience
        .filter(|e| e.has_traffic())
        .map(|e| e.traffic(ep))
        .unwrap_or_default();
    let s = Sniping::compute(
        &survey.relations,
        &survey.site(traffic),
        &SnipingParams::standard(),
    )?;
    let mut columns = SnipingRow::COLUMNS.to_vec();
    columns.pop();
    let rows: Vec<SnipingRow> = (0..s.len() as u32).map(|w| s.row(w, dir)).collect();
    let scores: Vec<f32> = rows.iter().map(|r| r.score).collect();
    let adjusted = match experience {
        Some(e) => e.adjust(&scores, dir, ep),
        None => scores.clone(),
    };
    columns.extend(["precomputed", "experience", "score"]);
    Ok(Table {
        columns,
        rows: rows
            .iter()
            .zip(&adjusted)
            .map(|(r, &adj)| {
                let mut v = r.values()[..11].to_vec();
                v.extend([r.score, adj - r.score, adj]);
                v
            })
            .collect(),
    })
}

/// The scores as a top-down heat map: waypoints coloured by rank, the top 10 % ringed, doors
/// and windows outlined, the direction as an arrow for sniping and ambush.
fn heat_map(
    engine: &Engine,
    scene: &Scene,
    r: &Rating<'_>,
    a: &Args,
    path: &Path,
) -> AnyResult<()> {
    let nodes = r.graph.nodes();
    let (lo, hi) = bounds(nodes).ok_or("the graph has no nodes to draw")?;
    let mut c = Canvas::over_box(
        engine,
        scene,
        lo,
        hi,
        format!(
            "terrain: {} rating per waypoint",
            format!("{:?}", a.query).to_lowercase()
        ),
    )?;
    draw_ranks(&mut c, nodes, &r.scores, &r.order);
    draw_keys(&mut c, &r.survey.keys);
    let directed = matches!(a.query, Query::Sniping | Query::Ambush);
    if directed {
        // The direction, as an arrow from the map's centre.
        draw_arrow(&mut c, (lo + hi) * 0.5, a.dir);
    }
    c.key(Key::ramp("rank of the score", "lowest", "highest"));
    c.key(Key::ring(palette::WHITE, "top 10 %"));
    let keys = &r.survey.keys;
    if keys.iter().any(|k| matches!(k.kind, KeyKind::Door)) {
        c.key(Key::swatch(palette::ORANGE, "door (outlined square)"));
    }
    if keys.iter().any(|k| matches!(k.kind, KeyKind::Window)) {
        c.key(Key::swatch(palette::SKY_BLUE, "window (outlined square)"));
    }
    if directed {
        c.key(Key::line(palette::WHITE, "the direction asked for (arrow)"));
    }
    c.save(path)?;
    Ok(())
}

/// A disc per waypoint coloured by the rank of its score (so a few outstanding spots do not
/// wash the rest out), lowest first so the best lie on top; the top 10 % ringed in white.
fn draw_ranks(c: &mut Canvas, nodes: &[glam::Vec3], scores: &[f32], order: &[usize]) {
    let (smin, smax) = scores
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(x, y), &s| {
            (x.min(s), y.max(s))
        });
    let r_px = (0.35 * c.px() / c.unit()).clamp(2.0, 9.0);
    let n = order.len().max(2) as f32;
    for (rank, &w) in order.iter().enumerate().rev() {
        let t = if smax > smin {
            1.0 - rank as f32 / (n - 1.0)
        } else {
            0.5
        };
        c.disc(nodes[w], r_px, palette::viridis(t));
    }
    for &w in order.iter().take(order.len().div_ceil(10)) {
        c.ring(nodes[w], r_px + 2.0, palette::WHITE);
    }
}

/// Doors (orange) and windows (sky blue) as outlined squares.
fn draw_keys(c: &mut Canvas, keys: &[KeyLocation]) {
    for k in keys {
        let colour = match k.kind {
            KeyKind::Door => palette::ORANGE,
            KeyKind::Window => palette::SKY_BLUE,
        };
        let s = 0.4;
        for (dx, dz) in [(-s, -s), (s, -s), (s, s), (-s, s)] {
            let q = k.position + glam::Vec3::new(dx, 0.0, dz);
            let r = k.position + glam::Vec3::new(-dz, 0.0, dx);
            c.line(q, r, colour);
        }
    }
}

/// A white arrow 8 m long from `centre` toward `dir`.
fn draw_arrow(c: &mut Canvas, centre: glam::Vec3, dir: Direction) {
    let tip = centre + dir.unit() * 8.0;
    let white = palette::WHITE;
    c.line(centre, tip, white);
    let back = -dir.unit() * 2.0;
    let side = glam::Vec3::new(-back.z, 0.0, back.x) * 0.6;
    c.line(tip, tip + back + side, white);
    c.line(tip, tip + back - side, white);
}
