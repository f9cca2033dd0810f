//! Waypoints: sampled on walkable ground at a spacing, or read from a user file.
//!
//! A waypoint is a point on the ground where an agent's feet are (`y` = ground height, no
//! lift); line of sight and intervis add the eye height themselves.

use crate::agent::{Agent, Posture};
use crate::{Engine, Error, Result, Scene};
use glam::{Vec2, Vec3};
use std::path::Path;

/// How [`sample_floors`] places waypoints.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleParams {
    /// Grid spacing (metres). Default 2 m (Darken, McCue and Guerrero's 3,784 waypoints over
    /// 100 m x 122 m).
    pub spacing: f32,
    /// Steepest standable ground (radians). Default 45 degrees.
    pub max_slope: f32,
    /// The body that must fit at a waypoint (crouching at least). Default [`Agent::soldier`].
    pub agent: Agent,
    /// Surfaces searched per grid cell, top down ([`crate::ground::floors`]). Default 16.
    pub max_layers: u32,
}

impl SampleParams {
    /// 2 m, 45 degrees, a soldier, 16 surfaces per cell.
    #[must_use]
    pub const fn standard() -> SampleParams {
        SampleParams {
            spacing: 2.0,
            max_slope: std::f32::consts::FRAC_PI_4,
            agent: Agent::soldier(Vec3::ZERO),
            max_layers: 16,
        }
    }
}

impl Default for SampleParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// Waypoints on every floor of a grid, with where they came from (see [`sample_floors`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FloorSample {
    /// Feet positions, by cell (row-major), top down within a cell.
    pub points: Vec<Vec3>,
    /// Grid cell of each point.
    pub cells: Vec<u32>,
    /// The highest posture that fits at each point (crouching or standing).
    pub fits: Vec<Posture>,
    /// Material of the surface under each point.
    pub materials: Vec<u32>,
    /// Cell `(c, r)` has its centre at `origin + (c + 0.5, r + 0.5) * spacing`.
    pub origin: Vec2,
    pub width: usize,
    pub height: usize,
    /// Walkable, standable surfaces found (before the head-room test).
    pub floors: usize,
    /// Of those, surfaces where not even a crouching body fits (crawl spaces, spots against a
    /// wall, floors inside closed solids).
    pub no_room: usize,
    /// Cells with more surfaces than `max_layers`: lower floors there were not searched.
    pub truncated_cells: usize,
}

/// Largest grid [`sample_floors`] searches.
pub const MAX_CELLS: usize = crate::limits::MAX_GRID_CELLS as usize;
/// Largest number of waypoints [`sample_floors`] returns.
pub const MAX_WAYPOINTS: usize = crate::limits::MAX_WAYPOINTS as usize;

/// Waypoints on every walkable floor of a top-down grid over the scene's x/z bounds,
/// `spacing` metres apart.
///
/// Every surface under each cell centre is found by downward traces
/// ([`crate::ground::floors`]: walkable material, normal within `max_slope` of vertical; the
/// bed under water is not a floor of its own); a surface keeps a waypoint where the agent's
/// body fits on it, crouching at least ([`crate::agent::clearance_segments`], traced against
/// fire-blocking geometry) outside every closed solid ([`crate::ground::outside_solids`]).
/// So roofs, upper storeys, the floors under them and a creek bed
/// under a bridge all get waypoints (and the ground under a tree's foliage, which blocks sight
/// but not movement); the inside of a slab, a spot against a wall, a car (metal is not
/// walkable) or a steep rock face do not. Cell `(c, r)` has its centre at `lo.xz + (c + 0.5, r + 0.5) * spacing`; waypoints
/// come out in row-major cell order (rows along +z, cells along +x), top down within a cell,
/// which is the order every table indexes them by.
///
/// Deterministic for a given scene and parameters, on either backend (up to the rounding the
/// two backends may differ by at triangle edges).
pub fn sample_floors(engine: &Engine, scene: &Scene, p: &SampleParams) -> Result<FloorSample> {
    let spacing = p.spacing;
    let (origin, width, height) = sample_grid(scene, p)?;
    let floors = crate::ground::floors(
        engine,
        scene,
        origin,
        spacing,
        width,
        height,
        p.max_slope,
        p.max_layers,
    )?;
    if floors.cell.len() > MAX_WAYPOINTS {
        return Err(Error::InvalidInput(format!(
            "{} walkable surfaces at spacing {spacing} m, more than {MAX_WAYPOINTS} waypoints: \
             use a larger spacing",
            floors.cell.len()
        )));
    }
    let ground: Vec<Vec3> = floors
        .cell
        .iter()
        .zip(&floors.height)
        .map(|(&i, &y)| {
            let c = crate::ground::cell_centre(origin, spacing, width, i as usize);
            Vec3::new(c.x, y, c.y)
        })
        .collect();
    let fits = room_at(engine, scene, p, &ground)?;
    let mut out = FloorSample {
        origin,
        width,
        height,
        floors: ground.len(),
        truncated_cells: floors.truncated_cells,
        ..FloorSample::default()
    };
    for (k, g) in ground.into_iter().enumerate() {
        match fits[k] {
            Some(fit) if fit >= Posture::Crouching => {
                out.points.push(g);
                out.cells.push(floors.cell[k]);
                out.fits.push(fit);
                out.materials.push(floors.material[k]);
            }
            _ => out.no_room += 1,
        }
    }
    Ok(out)
}

/// Checks the parameters and sizes the grid over the scene's bounds: its origin (the low
/// corner in x and z), width and height in cells.
fn sample_grid(scene: &Scene, p: &SampleParams) -> Result<(Vec2, usize, usize)> {
    let spacing = p.spacing;
    if !(spacing.is_finite() && spacing > 0.0) {
        return Err(Error::InvalidInput(format!(
            "waypoint spacing {spacing} must be a positive number of metres (e.g. 2)"
        )));
    }
    if !(p.max_slope.is_finite() && p.max_slope >= 0.0 && p.max_slope < std::f32::consts::FRAC_PI_2)
    {
        return Err(Error::InvalidInput(format!(
            "max slope {} must be in [0, pi/2) radians (45 degrees is 0.785)",
            p.max_slope
        )));
    }
    p.agent.validate_for("waypoint sampling")?;
    let Some((lo, hi)) = scene.bounds() else {
        return Err(Error::InvalidInput(
            "the scene is empty: there is no ground to put waypoints on".into(),
        ));
    };
    let width = ((hi.x - lo.x) / spacing).ceil().max(1.0);
    let height = ((hi.z - lo.z) / spacing).ceil().max(1.0);
    if width * height > MAX_CELLS as f32 {
        return Err(Error::InvalidInput(format!(
            "spacing {spacing} m gives {width} x {height} grid cells over the scene, more than \
             {MAX_CELLS}: use a larger spacing"
        )));
    }
    Ok((Vec2::new(lo.x, lo.z), width as usize, height as usize))
}

/// The highest posture that fits at each ground point, `None` where none does or where the
/// point is inside a closed solid (a crate resting on the floor hides the floor under it).
fn room_at(
    engine: &Engine,
    scene: &Scene,
    p: &SampleParams,
    ground: &[Vec3],
) -> Result<Vec<Option<Posture>>> {
    let mut fits = crate::agent::fitting_postures(engine, scene, &p.agent, ground, 0.1)?;
    let room: Vec<usize> = (0..ground.len())
        .filter(|&k| fits[k].is_some_and(|f| f >= Posture::Crouching))
        .collect();
    let pts: Vec<Vec3> = room.iter().map(|&k| ground[k]).collect();
    let knee = 0.35f32.min(p.agent.head_heights[0]);
    for (&k, outside) in room
        .iter()
        .zip(crate::ground::outside_solids(engine, scene, &pts, knee)?.0)
    {
        if !outside {
            fits[k] = None;
        }
    }
    Ok(fits)
}

/// [`sample_floors`] with [`SampleParams::standard`]'s agent and layers: the waypoints only.
pub fn sample_waypoints(
    engine: &Engine,
    scene: &Scene,
    spacing: f32,
    max_slope: f32,
) -> Result<Vec<Vec3>> {
    let p = SampleParams {
        spacing,
        max_slope,
        ..SampleParams::standard()
    };
    Ok(sample_floors(engine, scene, &p)?.points)
}

/// Reads waypoints from a file: a JSON array of `[x, y, z]` arrays when the first
/// non-blank character is `[`, otherwise CSV (see [`parse_waypoints_csv`]). Errors name the
/// file and the line (CSV) or element (JSON); a file with no waypoints is an error.
pub fn read_waypoints(path: impl AsRef<Path>) -> Result<Vec<Vec3>> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::load(&name, format!("cannot read the waypoint file: {e}")))?;
    let points = if text.trim_start().starts_with('[') {
        parse_waypoints_json(&text, &name)?
    } else {
        parse_waypoints_csv(&text, &name)?
    };
    if points.is_empty() {
        return Err(Error::load(
            name,
            "no waypoints: expected `x,y,z` lines or a JSON array `[[x, y, z], ...]`",
        ));
    }
    crate::limits::check_size(
        "waypoints in the file",
        points.len() as u64,
        crate::limits::MAX_WAYPOINTS,
        "split the file",
    )?;
    Ok(points)
}

/// Parses CSV waypoints: one `x,y,z` per line (metres, +Y up, `y` at the feet). Blank lines
/// and lines starting with `#` are skipped; the first other line may be a header of field
/// names. An error is [`Error::Load`] naming `source` and the 1-based line.
pub fn parse_waypoints_csv(text: &str, source: &str) -> Result<Vec<Vec3>> {
    crate::csv::records(text)
        .map(|(line, fields)| {
            crate::csv::numbers::<3>(&fields)
                .map(Vec3::from)
                .map_err(|e| Error::load_at(source, line, format!("{e} in `{}`", fields.join(","))))
        })
        .collect()
}

/// Parses a JSON array of `[x, y, z]` number arrays (nothing else: no objects, no nesting
/// beyond that). The error names `source` and the 0-based element.
pub fn parse_waypoints_json(text: &str, source: &str) -> Result<Vec<Vec3>> {
    let fail = |m: String| Error::load(source, m);
    let body = text.trim();
    let inner = body
        .strip_prefix('[')
        .and_then(|b| b.strip_suffix(']'))
        .ok_or_else(|| fail("expected a JSON array `[[x, y, z], ...]`".into()))?
        .trim();
    let mut out = Vec::new();
    let mut rest = inner;
    while !rest.is_empty() {
        let k = out.len();
        let open = rest
            .strip_prefix('[')
            .ok_or_else(|| fail(format!("element {k}: expected `[x, y, z]`")))?;
        let close = open
            .find(']')
            .ok_or_else(|| fail(format!("element {k}: missing `]`")))?;
        let fields: Vec<&str> = open[..close].split(',').map(str::trim).collect();
        out.push(Vec3::from(
            crate::csv::numbers::<3>(&fields).map_err(|e| fail(format!("element {k}: {e}")))?,
        ));
        rest = open[close + 1..].trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim_start();
            if rest.is_empty() {
                return Err(fail(format!("trailing `,` after element {k}")));
            }
        } else if !rest.is_empty() {
            return Err(fail(format!("element {k}: expected `,` or `]` after it")));
        }
    }
    Ok(out)
}

/// FNV-1a 64 of the waypoints' `f32` bits (x, y, z, little-endian): identifies a waypoint set
/// exactly, so a table is never used with waypoints it was not computed for.
#[must_use]
pub fn waypoint_digest(waypoints: &[Vec3]) -> u64 {
    let mut h = super::file::Fnv1a::new();
    for p in waypoints {
        for c in p.to_array() {
            h.write(&c.to_bits().to_le_bytes());
        }
    }
    h.finish()
}
