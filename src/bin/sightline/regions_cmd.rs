//! `sightline cover-regions`: exact cover regions around a point (Morgan's shadow volumes,
//! [`sightline::cover::regions`]) as a summary or JSON, GeoJSON and a top-down picture.

use crate::args::{self, CoverMaskArg, PostureArg, SceneArgs};
use crate::picture::{legend::Key, mark_observers, palette, Canvas, RESULT_ALPHA};
use crate::AnyResult;
use clap::ValueEnum;
use glam::Vec3;
use image::Rgb;
use serde_json::{json, Value};
use sightline::cover::regions::{cover_regions, CoverRegions, Region, RegionParams, Route};
use sightline::cover::{Agent, Posture};
use sightline::{Engine, Scene};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Centre of the square, X,Y,Z in metres; every route starts here.
    #[arg(long, value_parser = args::parse_vec3, allow_hyphen_values = true)]
    center: Vec3,
    /// A threat's eye X,Y,Z in metres (repeat for several): cover hides from every one.
    #[arg(long = "threat", value_parser = args::parse_vec3, allow_hyphen_values = true, required = true)]
    threats: Vec<Vec3>,
    /// Side of the square in metres.
    #[arg(long, default_value_t = 40.0, allow_hyphen_values = true)]
    size: f32,
    /// Side of a cell in metres.
    #[arg(long, default_value_t = 0.25, allow_hyphen_values = true)]
    cell: f32,
    /// Classify this posture only (default: all three).
    #[arg(long, value_enum)]
    posture: Option<PostureArg>,
    #[arg(long, value_enum, default_value_t = CoverMaskArg::Cover)]
    mask: CoverMaskArg,
    /// Write a top-down picture of the regions over the scene.
    #[arg(long)]
    png: Option<PathBuf>,
    /// Write the regions, their points and routes, the threats and the centre as an RFC 7946
    /// FeatureCollection: easting = x, northing = -z, metres, local (not geographic).
    #[arg(long)]
    geojson: Option<PathBuf>,
    /// Print the answer as JSON instead of the summary; rings are world [x, z] pairs, not
    /// closed (the last point joins the first), outer rings counter-clockwise in (x, z).
    #[arg(long)]
    json: bool,
}

/// Regions listed per posture in the summary.
const LISTED: usize = 3;

/// The GeoJSON axes, in words.
const AXES: &str = "easting = x, northing = -z, metres, local (not geographic); \
                    a point's third coordinate is the height y";

impl Args {
    /// The settings, checked before the scene is loaded.
    fn params(&self) -> Result<RegionParams, String> {
        for (name, v, default) in [("--size", self.size, 40.0), ("--cell", self.cell, 0.25)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!(
                    "{name} {v}: must be a finite number of metres > 0 (default {default})"
                ));
            }
        }
        if self.cell > self.size {
            return Err(format!(
                "--cell {} is larger than --size {}: the square would be a single cell",
                self.cell, self.size
            ));
        }
        Ok(RegionParams {
            cell: self.cell,
            size: self.size,
            postures: Posture::ALL.map(|p| self.asks(p)),
            ..RegionParams::standard()
        })
    }

    /// Whether posture `p` is classified: the one `--posture` names, or every one.
    fn asks(&self, p: Posture) -> bool {
        self.posture.is_none_or(|q| q.posture() == p)
    }

    fn mask_name(&self) -> String {
        self.mask
            .to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_string())
    }
}

/// `sightline cover-regions`: the regions around `--center`, then the files asked for.
pub fn command(scene: &SceneArgs, a: &Args) -> AnyResult<()> {
    let params = a.params()?;
    let (s, e) = args::open(scene)?;
    let agent = Agent::soldier(a.center);
    let r = cover_regions(e, &s, a.center, &agent, &a.threats, a.mask.mask(), &params)?;
    warn_start(a.center, &r);
    if a.json {
        let doc = crate::stats::with_counters(to_json(a, &agent, &r));
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        summary(a, &r);
    }
    if let Some(path) = &a.geojson {
        let doc = geojson(a, &scene.scene, &r);
        std::fs::write(path, serde_json::to_string(&doc)?)
            .map_err(|err| format!("{}: {err}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &a.png {
        draw(e, &s, a, &agent, &r, path)?;
    }
    Ok(())
}

fn fmt(p: Vec3) -> String {
    format!("({:.2}, {:.2}, {:.2})", p.x, p.y, p.z)
}

/// Which classification ran, in words.
fn backend(r: &CoverRegions) -> String {
    if r.gpu {
        format!(
            "GPU (shadow volumes in a stencil; {} cells under steep faces ray-cast)",
            r.rechecked
        )
    } else {
        "CPU twin (ray casts)".into()
    }
}

/// Says on stderr when the routes cannot start at `--center` as given: its cell has no
/// walkable ground, or its ground lies well above or below the centre's height.
fn warn_start(center: Vec3, r: &CoverRegions) {
    let g = &r.grid;
    match g.index_at(center).map(|i| g.heights[i]) {
        Some(h) if (h - center.y).abs() > 1.0 => eprintln!(
            "note: the ground of the centre's cell is at y = {h:.2}, {:.2} m from --center's y: \
             routes start there",
            h - center.y
        ),
        Some(h) if !h.is_nan() => {}
        _ => eprintln!(
            "note: the centre's cell has no walkable ground: no region is reachable, no routes"
        ),
    }
}

/// The regions as text: the grid and backend, then per posture asked the counts, areas and
/// the biggest [`LISTED`] regions.
fn summary(a: &Args, r: &CoverRegions) {
    let g = &r.grid;
    println!(
        "cover regions around {} against {} threat(s), mask {}: {} x {} cells of {} m; {} in {:.3} s",
        fmt(a.center),
        a.threats.len(),
        a.mask_name(),
        g.side,
        g.side,
        g.cell,
        backend(r),
        r.elapsed.as_secs_f64()
    );
    if r.thin > 0 {
        println!(
            "{} region(s) at most two cells across left out (a smaller --cell shows them)",
            r.thin
        );
    }
    for p in Posture::ALL.into_iter().filter(|&p| a.asks(p)) {
        let mut list: Vec<(usize, &Region)> = r
            .regions
            .iter()
            .enumerate()
            .filter(|(_, x)| x.posture == p)
            .collect();
        // Folded from +0: an empty `sum` of floats is -0.
        let area = list.iter().fold(0.0, |sum, (_, x)| sum + x.area);
        let reach = list.iter().fold(0.0, |sum, (_, x)| sum + x.reachable_area);
        println!(
            "{}: {} region(s), {area:.2} m² in all, {reach:.2} m² reachable from the centre",
            p.name(),
            list.len()
        );
        list.sort_by(|x, y| y.1.area.total_cmp(&x.1.area).then(x.0.cmp(&y.0)));
        for (k, x) in list.iter().take(LISTED) {
            println!(
                "  region {k}: {:.2} m², point {}, margin {:.2} m, {}",
                x.area,
                fmt(x.point),
                x.margin,
                route_text(x.route.as_ref())
            );
        }
        if list.len() > LISTED {
            println!("  and {} smaller", list.len() - LISTED);
        }
    }
}

fn route_text(route: Option<&Route>) -> String {
    match route {
        Some(t) => format!("route {:.2} m ({:.2} m exposed)", t.length, t.exposed),
        None => "no route from the centre".into(),
    }
}

fn v(p: Vec3) -> Value {
    json!([p.x, p.y, p.z])
}

fn route_json(t: &Route) -> Value {
    let points: Vec<Value> = t.points.iter().map(|&p| v(p)).collect();
    json!({"points": points, "length": t.length, "exposed": t.exposed})
}

fn region_json(k: usize, x: &Region) -> Value {
    json!({
        "index": k,
        "posture": x.posture.name(),
        "area": x.area,
        "cells": x.cells,
        "reachable_area": x.reachable_area,
        "reachable_cells": x.reachable_cells,
        "point": v(x.point),
        "margin": x.margin,
        "outer": x.polygon.outer,
        "holes": x.polygon.holes,
        "route": x.route.as_ref().map(route_json),
    })
}

/// The whole answer as one JSON document.
fn to_json(a: &Args, agent: &Agent, r: &CoverRegions) -> Value {
    let threats: Vec<Value> = a.threats.iter().map(|&t| v(t)).collect();
    let regions: Vec<Value> = r
        .regions
        .iter()
        .enumerate()
        .map(|(k, x)| region_json(k, x))
        .collect();
    let postures: Vec<&str> = Posture::ALL
        .into_iter()
        .filter(|&p| a.asks(p))
        .map(Posture::name)
        .collect();
    json!({
        "center": v(a.center),
        "threats": threats,
        "mask": a.mask_name(),
        "postures": postures,
        "agent_radius": agent.radius,
        "gpu": r.gpu,
        "rechecked_cells": r.rechecked,
        "thin_regions": r.thin,
        "seconds": r.elapsed.as_secs_f64(),
        "cell": r.grid.cell,
        "size": a.size,
        "side": r.grid.side,
        "origin": [r.grid.origin.x, r.grid.origin.y],
        "regions": regions,
    })
}

/// World (x, z) as GeoJSON (easting, northing): (x, -z); `0.0 - z` keeps 0 unsigned.
fn geo(p: [f64; 2]) -> [f64; 2] {
    [p[0], 0.0 - p[1]]
}

/// A point as a GeoJSON position: easting x, northing -z, then the height y.
fn geo3(p: Vec3) -> [f64; 3] {
    [f64::from(p.x), 0.0 - f64::from(p.z), f64::from(p.y)]
}

/// Twice the shoelace area of a ring (positive when counter-clockwise).
fn twice_area(ring: &[[f64; 2]]) -> f64 {
    let n = ring.len();
    (0..n)
        .map(|i| {
            let (a, b) = (ring[i], ring[(i + 1) % n]);
            a[0] * b[1] - b[0] * a[1]
        })
        .sum()
}

/// `ring` (world x, z) in GeoJSON coordinates, turned counter-clockwise (`ccw`) or
/// clockwise there and closed (the first point repeated last), starting at the same point.
fn geo_ring(ring: &[[f64; 2]], ccw: bool) -> Vec<[f64; 2]> {
    let mut out: Vec<[f64; 2]> = ring.iter().map(|&p| geo(p)).collect();
    if out.len() > 2 && (twice_area(&out) > 0.0) != ccw {
        out[1..].reverse();
    }
    if let Some(&first) = out.first() {
        out.push(first);
    }
    out
}

fn feature(geometry: Value, properties: Value) -> Value {
    json!({"type": "Feature", "geometry": geometry, "properties": properties})
}

/// A region's polygon, its point and its route (when it has one) as features.
fn region_features(k: usize, x: &Region) -> Vec<Value> {
    let mut rings = vec![geo_ring(&x.polygon.outer, true)];
    rings.extend(x.polygon.holes.iter().map(|h| geo_ring(h, false)));
    let name = x.posture.name();
    let mut out = vec![
        feature(
            json!({"type": "Polygon", "coordinates": rings}),
            json!({"kind": "region", "region": k, "posture": name, "area_m2": x.area,
                   "reachable_area_m2": x.reachable_area, "cells": x.cells,
                   "reachable_cells": x.reachable_cells, "margin_m": x.margin}),
        ),
        feature(
            json!({"type": "Point", "coordinates": geo3(x.point)}),
            json!({"kind": "point", "region": k, "posture": name, "margin_m": x.margin}),
        ),
    ];
    if let Some(t) = &x.route {
        let mut line: Vec<[f64; 3]> = t.points.iter().map(|&p| geo3(p)).collect();
        // A LineString needs two positions: a route that starts at its point has one.
        if line.len() == 1 {
            line.push(line[0]);
        }
        out.push(feature(
            json!({"type": "LineString", "coordinates": line}),
            json!({"kind": "route", "region": k, "posture": name, "length_m": t.length,
                   "exposed_m": t.exposed}),
        ));
    }
    out
}

/// The answer as an RFC 7946 FeatureCollection in local metres (see [`AXES`]).
fn geojson(a: &Args, scene: &str, r: &CoverRegions) -> Value {
    let mut features: Vec<Value> = r
        .regions
        .iter()
        .enumerate()
        .flat_map(|(k, x)| region_features(k, x))
        .collect();
    for (i, &t) in a.threats.iter().enumerate() {
        features.push(feature(
            json!({"type": "Point", "coordinates": geo3(t)}),
            json!({"kind": "threat", "threat": i}),
        ));
    }
    features.push(feature(
        json!({"type": "Point", "coordinates": geo3(a.center)}),
        json!({"kind": "center"}),
    ));
    json!({
        "type": "FeatureCollection",
        "sightline": {"axes": AXES, "scene": scene, "mask": a.mask_name(), "cell_m": r.grid.cell},
        "features": features,
    })
}

/// Ground under the picture's light tints in the legend (the scene's mid ground).
const GROUND: Rgb<u8> = Rgb([209, 205, 196]);
/// Opacity of cover cells outside every region.
const TINT_ALPHA: f32 = 0.22;

/// Per cell of the grid, the highest posture whose region holds the cell's centre.
fn region_postures(r: &CoverRegions) -> Vec<Option<Posture>> {
    let g = &r.grid;
    let mut out = vec![None; g.side * g.side];
    let (ox, oz, cell) = (
        f64::from(g.origin.x),
        f64::from(g.origin.y),
        f64::from(g.cell),
    );
    let index = |v: f64, o: f64| ((v - o) / cell).round().clamp(0.0, g.side as f64) as usize;
    for x in &r.regions {
        let ring = &x.polygon.outer;
        let (lo, hi) = ring
            .iter()
            .fold(([f64::MAX; 2], [f64::MIN; 2]), |(lo, hi), p| {
                (
                    [lo[0].min(p[0]), lo[1].min(p[1])],
                    [hi[0].max(p[0]), hi[1].max(p[1])],
                )
            });
        for row in index(lo[1], oz)..index(hi[1], oz) {
            for col in index(lo[0], ox)..index(hi[0], ox) {
                let i = row * g.side + col;
                let c = g.centre(i);
                if x.polygon.contains([f64::from(c.x), f64::from(c.y)]) {
                    out[i] = out[i].max(Some(x.posture));
                }
            }
        }
    }
    out
}

/// The highest posture of `bits` (bit p: posture p in cover).
fn highest(bits: u8) -> Option<Posture> {
    Posture::ALL
        .into_iter()
        .rev()
        .find(|&p| bits >> p as u8 & 1 == 1)
}

/// Regions filled in their posture's colour, cover outside them lightly tinted; returns, per
/// posture, whether a region and whether a tinted cell were drawn.
fn fill(canvas: &mut Canvas, r: &CoverRegions) -> [[bool; 2]; 3] {
    let g = &r.grid;
    let inside = region_postures(r);
    let mut shown = [[false; 2]; 3];
    for (i, (&bits, &region)) in r.cover.iter().zip(&inside).enumerate() {
        let (p, alpha, kind) = match (region, highest(bits)) {
            (Some(p), _) => (p, RESULT_ALPHA, 0),
            (None, Some(p)) => (p, TINT_ALPHA, 1),
            (None, None) => continue,
        };
        shown[p as usize][kind] = true;
        let (col, row) = ((i % g.side) as f32, (i / g.side) as f32);
        let (x, z) = (g.origin.x + col * g.cell, g.origin.y + row * g.cell);
        canvas.cell_alpha(x, z, g.cell, palette::hidden(p), alpha);
    }
    shown
}

/// Every ring of a region's outline, in its posture's colour darkened.
fn outline(canvas: &mut Canvas, x: &Region) {
    let colour = palette::shade(palette::hidden(x.posture), 0.6);
    let w = (2.0 * canvas.unit()).round().max(1.0) as u32;
    let at = |p: [f64; 2]| Vec3::new(p[0] as f32, 0.0, p[1] as f32);
    for ring in std::iter::once(&x.polygon.outer).chain(&x.polygon.holes) {
        for (k, &p) in ring.iter().enumerate() {
            canvas.stroke(at(p), at(ring[(k + 1) % ring.len()]), colour, w);
        }
    }
}

/// The legend entries of what [`fill`] drew (`shown`), highest posture first.
fn posture_keys(canvas: &mut Canvas, shown: [[bool; 2]; 3], agent: &Agent) {
    for p in Posture::ALL.into_iter().rev() {
        let (c, [region, tint]) = (palette::hidden(p), shown[p as usize]);
        let name = p.name();
        if region {
            let width = 2.0 * agent.radius;
            canvas.key(Key::swatch(
                palette::mix(GROUND, c, RESULT_ALPHA),
                format!("region hidden {name}: a {width} m wide body fits"),
            ));
        }
        if tint {
            canvas.key(Key::swatch(
                palette::mix(GROUND, c, TINT_ALPHA),
                format!("hidden {name}, too narrow for the body"),
            ));
        }
    }
}

/// The threats on the map, marked as observers are; one off the map is ringed at the map's
/// edge, on the line from the centre towards it.
fn mark_threats(canvas: &mut Canvas, threats: &[Vec3], center: Vec3, extent: f32) {
    let half = extent / 2.0;
    let reach = |t: Vec3| (t.x - center.x).abs().max((t.z - center.z).abs());
    let (on, off): (Vec<Vec3>, Vec<Vec3>) = threats.iter().partition(|&&t| reach(t) <= half);
    mark_observers(canvas, &on);
    for &t in &off {
        let d = Vec3::new(t.x - center.x, 0.0, t.z - center.z);
        canvas.ring(center + d * (0.96 * half / reach(t)), 6.0, palette::PURPLE);
    }
    if !off.is_empty() {
        canvas.key(Key::ring(palette::PURPLE, "towards a threat off the map"));
    }
}

/// The picture: cover and regions over the scene, outlines, each region's deepest point, the
/// routes there, the threats and the centre.
fn draw(
    engine: &Engine,
    scene: &Scene,
    a: &Args,
    agent: &Agent,
    r: &CoverRegions,
    path: &Path,
) -> AnyResult<()> {
    let extent = r.grid.side as f32 * r.grid.cell;
    let title = "cover regions: where a body hides from every threat, per posture";
    let mut canvas = Canvas::over(engine, scene, a.center, extent, title)?;
    let shown = fill(&mut canvas, r);
    for x in &r.regions {
        outline(&mut canvas, x);
    }
    posture_keys(&mut canvas, shown, agent);
    for x in &r.regions {
        if let Some(t) = &x.route {
            canvas.path(&t.points, palette::WHITE);
        }
    }
    for x in &r.regions {
        canvas.disc(x.point, 4.0, palette::hidden(x.posture));
    }
    if r.regions.iter().any(|x| x.route.is_some()) {
        canvas.key(Key::line(
            palette::WHITE,
            "route from the centre, keeping to cover",
        ));
    }
    if !r.regions.is_empty() {
        canvas.key(Key::disc(
            palette::GREY,
            "deepest point of a region (in its colour)",
        ));
    }
    mark_threats(&mut canvas, &a.threats, a.center, extent);
    canvas.ring(a.center, 6.0, palette::ORANGE);
    canvas.key(Key::ring(palette::ORANGE, "centre (routes start here)"));
    canvas.save(path)?;
    Ok(())
}
