//! `sightline cover` and `sightline cover-field`.

use crate::picture::{
    cover_colour, cover_keys, fate_colour, fate_keys, legend::Key, mark_observers, palette, Canvas,
};
use crate::AnyResult;
use glam::Vec3;
use serde_json::json;
use sightline::cover::dense::{
    find_cover as dense_cover, find_cover_on, DenseAnswer, DenseParams, DenseQuery, Surface,
};
use sightline::cover::field::{cover_field as field, CellCover, CoverFieldParams};
use sightline::cover::sensor_grid::{find_cover, firing_positions, CoverQuery, SensorGridParams};
use sightline::cover::verify::Rejection;
use sightline::cover::Agent;
use sightline::{Engine, Mask, Scene};
use std::path::Path;

fn v(p: Vec3) -> serde_json::Value {
    json!([p.x, p.y, p.z])
}

/// The cover field over the scene, with its legend.
fn draw_field(canvas: &mut Canvas, f: &sightline::cover::field::CoverField) {
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
    json!({"agent": v(agent), "choice": choice, "rejected": rejected_json(&a.rejected), "explored_cells": a.explored.len(), "rays": a.rays})
}

/// `sightline cover --agents FILE`: every agent of the file against the same observers in one
/// batch on one walk surface; the surface's tiles are built first (`setup_seconds`), then the
/// queries are answered (`seconds`).
#[allow(clippy::too_many_arguments)]
pub fn dense_batch(
    engine: &Engine,
    scene: &Scene,
    agents: &Path,
    observers: Vec<Vec3>,
    mask: Mask,
    radius: f32,
    png: Option<&Path>,
    as_json: bool,
) -> AnyResult<()> {
    let params = DenseParams {
        radius,
        ..DenseParams::standard()
    };
    let points = sightline::tables::read_waypoints(agents)
        .map_err(|e| format!("--agents {}: {e}", agents.display()))?;
    let queries: Vec<DenseQuery> = points
        .iter()
        .map(|&p| DenseQuery {
            agent: Agent::soldier(p),
            observers: observers.clone(),
            mask,
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
    let found = answers.iter().filter(|a| a.choice.is_some()).count();
    if as_json {
        let list: Vec<_> = points
            .iter()
            .zip(&answers)
            .map(|(&p, a)| answer_json(p, a))
            .collect();
        let j = json!({"method": "dense", "answers": list, "seconds": secs, "setup_seconds": setup, "tiles": surface.tiles()});
        println!(
            "{}",
            serde_json::to_string_pretty(&crate::stats::with_counters(j))?
        );
    } else {
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
        println!(
            "{} agents, {found} found cover; {:.1} ms ({:.0} queries/s) after {:.1} ms building {} tiles of walk surface",
            answers.len(),
            secs * 1e3,
            answers.len() as f64 / secs.max(1e-9),
            setup * 1e3,
            surface.tiles()
        );
    }
    if let Some(path) = png {
        draw_batch(engine, scene, &points, &answers, &observers, path)?;
    }
    Ok(())
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
            a.explored.len(),
            a.rays,
            a.rejected.len(),
            secs * 1e3
        ),
        None => println!(
            "no reachable cover within {radius} m ({} cells searched, {} rays, {} rejected, {:.2} ms)",
            a.explored.len(),
            a.rays,
            a.rejected.len(),
            secs * 1e3
        ),
    }
}

/// `sightline cover --method dense` (the default).
#[allow(clippy::too_many_arguments)]
pub fn dense(
    engine: &Engine,
    scene: &Scene,
    agent: Vec3,
    observers: Vec<Vec3>,
    mask: Mask,
    radius: f32,
    png: Option<&Path>,
    as_json: bool,
) -> AnyResult<()> {
    let params = DenseParams {
        radius,
        ..DenseParams::standard()
    };
    let query = DenseQuery {
        agent: Agent::soldier(agent),
        observers,
        mask,
    };
    let t = std::time::Instant::now();
    let a = dense_cover(engine, scene, std::slice::from_ref(&query), &params)?.remove(0);
    let secs = t.elapsed().as_secs_f64();
    if as_json {
        let mut j = answer_json(agent, &a);
        j["method"] = json!("dense");
        j["seconds"] = json!(secs);
        println!(
            "{}",
            serde_json::to_string_pretty(&crate::stats::with_counters(j))?
        );
    } else {
        print_dense(&a, radius, secs);
    }
    if let Some(path) = png {
        let size = (2.0 * radius).min(60.0);
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
            mask,
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
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub fn cover(
    engine: &Engine,
    scene: &Scene,
    agent: Vec3,
    observers: Vec<Vec3>,
    mask: Mask,
    waypoints: Vec<Vec3>,
    png: Option<&Path>,
    as_json: bool,
) -> AnyResult<()> {
    let params = SensorGridParams::verified();
    let query = CoverQuery {
        agent: Agent::soldier(agent),
        observers,
        mask,
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
    let a = &answers[0];
    if as_json {
        let sensors: Vec<_> = a
            .sensors
            .iter()
            .map(|s| json!({"ring": s.ring, "position": v(s.position), "fate": format!("{:?}", s.fate), "hidden": s.hidden, "path": s.path.as_ref().map(|p| p.iter().map(|&q| v(q)).collect::<Vec<_>>())}))
            .collect();
        let choice = a.choice.as_ref().map(|c| json!({"sensor": c.sensor, "position": v(c.position), "posture": c.posture.name(), "path": c.path.iter().map(|&q| v(q)).collect::<Vec<_>>(), "path_length": c.path_length, "exposure": c.exposure, "intervis_exposed": c.intervis_exposed, "decided_by": c.decided_by.name()}));
        let fire = firing[0].as_ref().map(|f| json!({"position": v(f.position), "posture": f.posture.name(), "observer": f.observer, "step_back": f.step_back}));
        println!(
            "{}",
            serde_json::to_string_pretty(&crate::stats::with_counters(
                json!({"agent": v(agent), "method": "sensor-grid", "choice": choice, "rejected": rejected_json(&a.rejected), "firing_position": fire, "rays": a.rays, "seconds": secs, "sensors": sensors})
            ))?
        );
    } else {
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
        if let Some(f) = &firing[0] {
            println!(
                "return fire from {} {} ({} m from cover)",
                f.position,
                f.posture.name(),
                f.step_back
            );
        }
    }
    if let Some(path) = png {
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
            mask,
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
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub fn cover_field(
    engine: &Engine,
    scene: &Scene,
    center: Vec3,
    observers: &[Vec3],
    mask: Mask,
    size: f32,
    cell: f32,
    png: Option<&Path>,
    as_json: bool,
) -> AnyResult<()> {
    let params = CoverFieldParams {
        size,
        cell,
        ..Default::default()
    };
    let f = field(
        engine,
        scene,
        center,
        &Agent::soldier(center),
        observers,
        mask,
        &params,
    )?;
    let counts: Vec<(String, usize)> = [CellCover::NotGround, CellCover::Exposed]
        .into_iter()
        .chain(sightline::cover::Posture::ALL.map(CellCover::Hidden))
        .map(|c| (format!("{c:?}"), f.count(c)))
        .collect();
    if as_json {
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
    if let Some(path) = png {
        let mut canvas = Canvas::over(
            engine,
            scene,
            center,
            size,
            "cover field: the highest posture hidden per cell",
        )?;
        draw_field(&mut canvas, &f);
        mark_observers(&mut canvas, observers);
        canvas.ring(center, 6.0, palette::ORANGE);
        canvas.key(Key::ring(palette::ORANGE, "centre of the field"));
        canvas.save(path)?;
    }
    Ok(())
}
