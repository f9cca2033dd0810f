//! `sightline cover` and `sightline cover-field`.

use crate::args::{self, CoverMaskArg, SceneArgs};
use crate::picture::{
    cover_colour, cover_keys, fate_colour, fate_keys, legend::Key, mark_observers, palette, Canvas,
};
use crate::AnyResult;
use clap::ValueEnum;
use glam::Vec3;
use serde_json::json;
use sightline::cover::dense::{
    find_cover as dense_cover, find_cover_on, DenseAnswer, DenseParams, DenseQuery, Surface,
};
use sightline::cover::field::{cover_field as field, CellCover, CoverField, CoverFieldParams};
use sightline::cover::sensor_grid::{
    find_cover, firing_positions, CoverAnswer, CoverQuery, FiringPosition, SensorGridParams,
};
use sightline::cover::verify::Rejection;
use sightline::cover::Agent;
use sightline::scene::procedural;
use sightline::{Engine, Scene};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MethodArg {
    /// The dense search (default).
    Dense,
    /// Darken, Morgan and Paull's sensor grid.
    SensorGrid,
}

#[derive(clap::Args)]
pub struct Args {
    /// The agent's feet X,Y,Z in metres.
    #[arg(long, value_parser = args::parse_vec3, allow_hyphen_values = true, required_unless_present = "agents")]
    agent: Option<Vec3>,
    /// Many agents: a file of their feet (CSV `x,y,z` a line, or a JSON array), all
    /// answered against the same observers in one batch (the dense method). `--json`
    /// gives `answers` (one per agent, in file order), `seconds` (the queries) and
    /// `setup_seconds` (building the walk surface).
    #[arg(long, conflicts_with = "agent")]
    agents: Option<PathBuf>,
    /// An observer's eye X,Y,Z (repeat for several).
    #[arg(long = "observer", value_parser = args::parse_vec3, allow_hyphen_values = true, required = true)]
    observers: Vec<Vec3>,
    #[arg(long, value_enum, default_value_t = CoverMaskArg::Cover)]
    mask: CoverMaskArg,
    /// Use the built-in village's waypoints as extra path points (village only; the
    /// sensor-grid method).
    #[arg(long)]
    waypoints: bool,
    /// How to search: every 0.25 m cell walked around obstacles (dense), or Darken, Morgan and Paull's
    /// 51-sensor grid (sensor-grid). Both check the whole body and the intervis humanoid.
    #[arg(long, value_enum, default_value_t = MethodArg::Dense)]
    method: MethodArg,
    /// Search radius of the dense method, metres.
    #[arg(long, default_value_t = 20.0)]
    radius: f32,
    #[arg(long)]
    png: Option<PathBuf>,
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct FieldArgs {
    /// Centre of the square, X,Y,Z in metres.
    #[arg(long, value_parser = args::parse_vec3, allow_hyphen_values = true)]
    center: Vec3,
    #[arg(long = "observer", value_parser = args::parse_vec3, allow_hyphen_values = true, required = true)]
    observers: Vec<Vec3>,
    #[arg(long, value_enum, default_value_t = CoverMaskArg::Cover)]
    mask: CoverMaskArg,
    /// Side of the square in metres.
    #[arg(long, default_value_t = 40.0)]
    size: f32,
    #[arg(long, default_value_t = 0.25)]
    cell: f32,
    #[arg(long)]
    png: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

/// `sightline cover`: a batch of agents (`--agents`), or one agent by the dense search or
/// the sensor grid.
pub fn command(scene: &SceneArgs, a: &Args) -> AnyResult<()> {
    let (s, e) = args::open(scene)?;
    if let Some(file) = &a.agents {
        if a.method != MethodArg::Dense || a.waypoints {
            return Err("--agents answers a batch with the dense method: drop --method sensor-grid and --waypoints".into());
        }
        return dense_batch(e, &s, file, a);
    }
    let agent = a.agent.ok_or("give --agent X,Y,Z or --agents FILE")?;
    if a.method == MethodArg::Dense {
        if a.waypoints {
            return Err("--waypoints belongs to --method sensor-grid (the dense search walks the grid itself)".into());
        }
        return dense(e, &s, agent, a);
    }
    let waypoints = if a.waypoints {
        procedural::village_waypoints()
    } else {
        Vec::new()
    };
    sensor_grid(e, &s, agent, waypoints, a)
}

/// `sightline cover-field`: the scene and engine for [`cover_field`].
pub fn field_command(scene: &SceneArgs, a: &FieldArgs) -> AnyResult<()> {
    let (s, e) = args::open(scene)?;
    cover_field(e, &s, a)
}

fn v(p: Vec3) -> serde_json::Value {
    json!([p.x, p.y, p.z])
}

/// The cover field over the scene, with its legend.
fn draw_field(canvas: &mut Canvas, f: &CoverField) {
    canvas.grid(f.origin, f.cell, f.width, &f.cells, |&c| cover_colour(c));
    cover_keys(canvas);
}

/// The agent (an orange disc) and the chosen spot with the path to it (white).
fn mark_choice(canvas: &mut Canvas, agent: Vec3, choice: Option<(&[Vec3], Vec3)>) {
    if let Some((path, spot)) = choice {
        canvas.path(path, palette::WHITE);
        canvas.ring(spot, 10.0, palette::WHITE);
        canvas.key(Key::line(palette::WHITE, "path to the chosen cover"));
        canvas.key(Key::ring(palette::WHITE, "chosen cover"));
    }
    canvas.disc(agent, 7.0, palette::ORANGE);
    canvas.key(Key::disc(palette::ORANGE, "agent"));
}

fn rejected_json(r: &[Rejection]) -> Vec<serde_json::Value> {
    r.iter()
        .map(|x| json!({"position": v(x.position), "posture": x.posture.name(), "by": x.by.name(), "exposed_pixels": x.exposed}))
        .collect()
}

/// One dense answer as JSON: the agent, the choice (or null), rejections, cells and rays.
fn answer_json(agent: Vec3, a: &DenseAnswer) -> serde_json::Value {
    let choice = a.choice.as_ref().map(|c| json!({"position": v(c.position), "posture": c.posture.name(), "path": c.path.iter().map(|&q| v(q)).collect::<Vec<_>>(), "path_length": c.path_length, "exposure": c.exposure, "intervis_exposed": c.intervis_exposed, "decided_by": c.decided_by.name()}));
    json!({"agent": v(agent), "choice": choice, "rejected": rejected_json(&a.rejected), "explored_cells": a.explored_cells, "rays": a.rays})
}

/// `sightline cover --agents FILE`: every agent of the file against the same observers in one
/// batch on one walk surface; the surface's tiles are built first (`setup_seconds`), then the
/// queries are answered (`seconds`).
fn dense_batch(engine: &Engine, scene: &Scene, agents: &Path, a: &Args) -> AnyResult<()> {
    let params = DenseParams {
        radius: a.radius,
        ..DenseParams::standard()
    };
    let points = sightline::tables::read_waypoints(agents)
        .map_err(|e| format!("--agents {}: {e}", agents.display()))?;
    let queries: Vec<DenseQuery> = points
        .iter()
        .map(|&p| DenseQuery {
            agent: Agent::soldier(p),
            observers: a.observers.clone(),
            mask: a.mask.mask(),
        })
        .collect();
    let mut surface = Surface::new();
    let t = std::time::Instant::now();
    let bodies: Vec<Agent> = queries.iter().map(|q| q.agent).collect();
    surface.prepare(engine, scene, &bodies, &params)?;
    let setup = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    let answers = find_cover_on(engine, scene, &mut surface, &queries, &params)?;
    let secs = t.elapsed().as_secs_f64();
    let timing = BatchTiming {
        secs,
        setup,
        tiles: surface.tiles(),
    };
    if a.json {
        print_batch_json(&points, &answers, &timing)?;
    } else {
        print_batch(&points, &answers, a.radius, &timing);
    }
    if let Some(path) = &a.png {
        draw_batch(engine, scene, &points, &answers, &a.observers, path)?;
    }
    Ok(())
}

/// How long a batch took: the queries, and building the walk surface's tiles before them.
struct BatchTiming {
    secs: f64,
    setup: f64,
    tiles: usize,
}

/// A batch's answers as one JSON document (`answers` in file order, the timings, the tiles).
fn print_batch_json(
    points: &[Vec3],
    answers: &[DenseAnswer],
    timing: &BatchTiming,
) -> AnyResult<()> {
    let list: Vec<_> = points
        .iter()
        .zip(answers)
        .map(|(&p, a)| answer_json(p, a))
        .collect();
    let j = json!({"method": "dense", "answers": list, "seconds": timing.secs, "setup_seconds": timing.setup, "tiles": timing.tiles});
    println!(
        "{}",
        serde_json::to_string_pretty(&crate::stats::with_counters(j))?
    );
    Ok(())
}

/// A batch's answers as text: a line per agent, then the counts and the timings.
fn print_batch(points: &[Vec3], answers: &[DenseAnswer], radius: f32, timing: &BatchTiming) {
    let found = answers.iter().filter(|a| a.choice.is_some()).count();
    for (k, a) in answers.iter().enumerate() {
        match &a.choice {
            Some(c) => println!(
                "agent {k} {}: cover at {} ({:.2} m walk, {})",
                points[k],
                c.position,
                c.path_length,
                c.posture.name()
            ),
            None => println!(
                "agent {k} {}: no reachable cover within {radius} m",
                points[k]
            ),
        }
    }
    let secs = timing.secs;
    println!(
        "{} agents, {found} found cover; {:.1} ms ({:.0} queries/s) after {:.1} ms building {} tiles of walk surface",
        answers.len(),
        secs * 1e3,
        answers.len() as f64 / secs.max(1e-9),
        timing.setup * 1e3,
        timing.tiles
    );
}

/// Every agent of a batch (orange), the spot it chose (white ring) and the path there.
fn draw_batch(
    engine: &Engine,
    scene: &Scene,
    points: &[Vec3],
    answers: &[DenseAnswer],
    observers: &[Vec3],
    path: &Path,
) -> AnyResult<()> {
    let (mut lo, mut hi) = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
    for &p in points.iter().chain(observers) {
        lo = lo.min(p);
        hi = hi.max(p);
    }
    let mut canvas = Canvas::over_box(
        engine,
        scene,
        lo,
        hi,
        "cover, dense search: every agent's choice",
    )?;
    for (&p, a) in points.iter().zip(answers) {
        if let Some(c) = &a.choice {
            canvas.path(&c.path, palette::WHITE);
            canvas.ring(c.position, 6.0, palette::WHITE);
        }
        canvas.disc(p, 4.0, palette::ORANGE);
    }
    canvas.key(Key::line(palette::WHITE, "path to the chosen cover"));
    canvas.key(Key::ring(palette::WHITE, "chosen cover"));
    canvas.key(Key::disc(palette::ORANGE, "agent"));
    mark_observers(&mut canvas, observers);
    canvas.save(path)?;
    Ok(())
}

/// One dense answer as a line of text.
fn print_dense(a: &DenseAnswer, radius: f32, secs: f64) {
    match &a.choice {
        Some(c) => println!(
            "cover at {} ({:.2} m walk, arrive {}, decided by {}), path {:?}; {} cells searched, {} rays, {} rejected, {:.2} ms",
            c.position,
            c.path_length,
            c.posture.name(),
            c.decided_by.name(),
            c.path,
            a.explored_cells,
            a.rays,
            a.rejected.len(),
            secs * 1e3
        ),
        None => println!(
            "no reachable cover within {radius} m ({} cells searched, {} rays, {} rejected, {:.2} ms)",
            a.explored_cells,
            a.rays,
            a.rejected.len(),
            secs * 1e3
        ),
    }
}

/// `sightline cover --method dense` (the default).
fn dense(engine: &Engine, scene: &Scene, agent: Vec3, a: &Args) -> AnyResult<()> {
    let params = DenseParams {
        radius: a.radius,
        // The picture draws the cells the search reached.
        explored: a.png.is_some(),
        ..DenseParams::standard()
    };
    let query = DenseQuery {
        agent: Agent::soldier(agent),
        observers: a.observers.clone(),
        mask: a.mask.mask(),
    };
    let t = std::time::Instant::now();
    let answer = dense_cover(engine, scene, std::slice::from_ref(&query), &params)?.remove(0);
    let secs = t.elapsed().as_secs_f64();
    if a.json {
        let mut j = answer_json(agent, &answer);
        j["method"] = json!("dense");
        j["seconds"] = json!(secs);
        println!(
            "{}",
            serde_json::to_string_pretty(&crate::stats::with_counters(j))?
        );
    } else {
        print_dense(&answer, a.radius, secs);
    }
    if let Some(path) = &a.png {
        draw_dense(engine, scene, &query, &answer, &params, path)?;
    }
    Ok(())
}

/// The dense answer over the cover field around the agent: the cells the search reached,
/// the spots the body check rejected, the choice and the path to it, the observers.
fn draw_dense(
    engine: &Engine,
    scene: &Scene,
    query: &DenseQuery,
    a: &DenseAnswer,
    params: &DenseParams,
    path: &Path,
) -> AnyResult<()> {
    let agent = query.agent.position;
    let size = (2.0 * params.radius).min(60.0);
    let mut canvas = Canvas::over(
        engine,
        scene,
        agent,
        size,
        "cover, dense search: the cover field, cells searched, the choice",
    )?;
    let fp = CoverFieldParams {
        size,
        cell: params.cell,
        ..Default::default()
    };
    let f = field(
        engine,
        scene,
        agent,
        &query.agent,
        &query.observers,
        query.mask,
        &fp,
    )?;
    draw_field(&mut canvas, &f);
    // The searched cells, small white dots over the field.
    for e in &a.explored {
        canvas.disc(e.position, 1.0, palette::WHITE);
    }
    if !a.explored.is_empty() {
        canvas.key(Key::disc(palette::WHITE, "cell the search reached"));
    }
    for r in &a.rejected {
        canvas.disc(r.position, 5.0, palette::VERMILLION);
    }
    if !a.rejected.is_empty() {
        canvas.key(Key::disc(palette::VERMILLION, "rejected by the body check"));
    }
    mark_choice(
        &mut canvas,
        agent,
        a.choice.as_ref().map(|c| (&c.path[..], c.position)),
    );
    mark_observers(&mut canvas, &query.observers);
    canvas.save(path)?;
    Ok(())
}

/// `sightline cover --method sensor-grid`: Darken, Morgan and Paull's sensor grid, with the
/// firing position to return fire from.
fn sensor_grid(
    engine: &Engine,
    scene: &Scene,
    agent: Vec3,
    waypoints: Vec<Vec3>,
    a: &Args,
) -> AnyResult<()> {
    let params = SensorGridParams::verified();
    let query = CoverQuery {
        agent: Agent::soldier(agent),
        observers: a.observers.clone(),
        mask: a.mask.mask(),
        waypoints,
    };
    let t = std::time::Instant::now();
    let answers = find_cover(engine, scene, std::slice::from_ref(&query), &params)?;
    let firing = firing_positions(
        engine,
        scene,
        std::slice::from_ref(&query),
        &answers,
        &params,
    )?;
    let secs = t.elapsed().as_secs_f64();
    let answer = &answers[0];
    if a.json {
        print_sensor_grid_json(agent, answer, firing[0].as_ref(), secs)?;
    } else {
        print_sensor_grid(answer, firing[0].as_ref(), secs);
    }
    if let Some(path) = &a.png {
        draw_sensor_grid(engine, scene, &query, answer, path)?;
    }
    Ok(())
}

/// A sensor-grid answer as one JSON document: the choice, rejections, the firing position,
/// the rays, the time and every sensor with its fate.
fn print_sensor_grid_json(
    agent: Vec3,
    a: &CoverAnswer,
    fire: Option<&FiringPosition>,
    secs: f64,
) -> AnyResult<()> {
    let sensors: Vec<_> = a
        .sensors
        .iter()
        .map(|s| json!({"ring": s.ring, "position": v(s.position), "fate": format!("{:?}", s.fate), "hidden": s.hidden, "path": s.path.as_ref().map(|p| p.iter().map(|&q| v(q)).collect::<Vec<_>>())}))
        .collect();
    let choice = a.choice.as_ref().map(|c| json!({"sensor": c.sensor, "position": v(c.position), "posture": c.posture.name(), "path": c.path.iter().map(|&q| v(q)).collect::<Vec<_>>(), "path_length": c.path_length, "exposure": c.exposure, "intervis_exposed": c.intervis_exposed, "decided_by": c.decided_by.name()}));
    let fire = fire.map(|f| json!({"position": v(f.position), "posture": f.posture.name(), "observer": f.observer, "step_back": f.step_back}));
    println!(
        "{}",
        serde_json::to_string_pretty(&crate::stats::with_counters(
            json!({"agent": v(agent), "method": "sensor-grid", "choice": choice, "rejected": rejected_json(&a.rejected), "firing_position": fire, "rays": a.rays, "seconds": secs, "sensors": sensors})
        ))?
    );
    Ok(())
}

/// A sensor-grid answer as text: the choice (or none), then the firing position if any.
fn print_sensor_grid(a: &CoverAnswer, fire: Option<&FiringPosition>, secs: f64) {
    match &a.choice {
        Some(c) => println!(
            "cover at {} ({} m away, arrive {}, decided by {}), path {:?}; {} rays in {:.2} ms",
            c.position,
            c.path_length,
            c.posture.name(),
            c.decided_by.name(),
            c.path,
            a.rays,
            secs * 1e3
        ),
        None => println!(
            "no reachable cover within the sensor grid; {} rays in {:.2} ms",
            a.rays,
            secs * 1e3
        ),
    }
    if let Some(f) = fire {
        println!(
            "return fire from {} {} ({} m from cover)",
            f.position,
            f.posture.name(),
            f.step_back
        );
    }
}

/// The sensors by fate over a 30 m cover field around the agent, the choice and the path to
/// it, the observers.
fn draw_sensor_grid(
    engine: &Engine,
    scene: &Scene,
    query: &CoverQuery,
    a: &CoverAnswer,
    path: &Path,
) -> AnyResult<()> {
    let agent = query.agent.position;
    let size = 30.0;
    let mut canvas = Canvas::over(
        engine,
        scene,
        agent,
        size,
        "cover, sensor grid: sensors by fate over the cover field",
    )?;
    let fp = CoverFieldParams {
        size,
        cell: 0.25,
        ..Default::default()
    };
    let f = field(
        engine,
        scene,
        agent,
        &query.agent,
        &query.observers,
        query.mask,
        &fp,
    )?;
    draw_field(&mut canvas, &f);
    for s in &a.sensors {
        canvas.disc(s.position, 4.5, fate_colour(s.fate));
    }
    fate_keys(&mut canvas, a.sensors.iter().map(|s| s.fate));
    mark_choice(
        &mut canvas,
        agent,
        a.choice.as_ref().map(|c| (&c.path[..], c.position)),
    );
    mark_observers(&mut canvas, &query.observers);
    canvas.save(path)?;
    Ok(())
}

/// `sightline cover-field`: the highest posture hidden per cell around `a.center`, as counts
/// (text or JSON) and a picture.
fn cover_field(engine: &Engine, scene: &Scene, a: &FieldArgs) -> AnyResult<()> {
    let (center, cell) = (a.center, a.cell);
    let params = CoverFieldParams {
        size: a.size,
        cell,
        ..Default::default()
    };
    let f = field(
        engine,
        scene,
        center,
        &Agent::soldier(center),
        &a.observers,
        a.mask.mask(),
        &params,
    )?;
    let counts: Vec<(String, usize)> = [CellCover::NotGround, CellCover::Exposed]
        .into_iter()
        .chain(sightline::cover::Posture::ALL.map(CellCover::Hidden))
        .map(|c| (format!("{c:?}"), f.count(c)))
        .collect();
    if a.json {
        let cells: Vec<String> = f.cells.iter().map(|c| format!("{c:?}")).collect();
        println!(
            "{}",
            serde_json::to_string(&crate::stats::with_counters(
                json!({"center": v(center), "origin": [f.origin.x, f.origin.y], "cell": f.cell, "width": f.width, "height": f.height, "counts": counts, "seconds": f.elapsed.as_secs_f64(), "cells": cells})
            ))?
        );
    } else {
        println!(
            "{} x {} cells of {cell} m around {center} in {:.3} s: {counts:?}",
            f.width,
            f.height,
            f.elapsed.as_secs_f64()
        );
    }
    if let Some(path) = &a.png {
        draw_cover_field(engine, scene, a, &f, path)?;
    }
    Ok(())
}

/// The cover field over the scene, the observers and the field's centre.
fn draw_cover_field(
    engine: &Engine,
    scene: &Scene,
    a: &FieldArgs,
    f: &CoverField,
    path: &Path,
) -> AnyResult<()> {
    let mut canvas = Canvas::over(
        engine,
        scene,
        a.center,
        a.size,
        "cover field: the highest posture hidden per cell",
    )?;
    draw_field(&mut canvas, f);
    mark_observers(&mut canvas, &a.observers);
    canvas.ring(a.center, 6.0, palette::ORANGE);
    canvas.key(Key::ring(palette::ORANGE, "centre of the field"));
    canvas.save(path)?;
    Ok(())
}
