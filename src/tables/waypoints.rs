//! Waypoints: sampled on walkable ground at a spacing, or read from a user file.
//!
//! A waypoint is a point on the ground where an agent's feet are (`y` = ground height, no
//! lift); line of sight and intervis add the eye height themselves.

use crate::{Engine, Error, Result, Scene};
use glam::{Vec2, Vec3};
use std::path::Path;

/// Waypoints on a top-down grid over the scene's x/z bounds, `spacing` metres apart.
///
/// One downward closest-hit ray per cell centre ([`crate::ground::ground_grid`]) finds the top
/// surface; the cell keeps a waypoint there only if that surface is walkable
/// ([`crate::MaterialFlags::WALKABLE`]) and standable: its normal is within `max_slope`
/// (radians) of vertical. So roofs give waypoints, floors under a roof do not, and nothing
/// under a tree canopy, on a car (metal is not walkable) or on a steep rock face does. Cell
/// `(c, r)` has its centre at `lo.xz + (c + 0.5, r + 0.5) * spacing`; waypoints come out in
/// row-major cell order (rows along +z, cells along +x), which is the order every table
/// indexes them by. A navigation graph built later can reuse the same grid.
///
/// Deterministic for a given scene, spacing and slope, on either backend (up to the rounding
/// the two backends may differ by at triangle edges).
pub fn sample_waypoints(
    engine: &Engine,
    scene: &Scene,
    spacing: f32,
    max_slope: f32,
) -> Result<Vec<Vec3>> {
    if !(spacing.is_finite() && spacing > 0.0) {
        return Err(Error::InvalidInput(format!(
            "waypoint spacing {spacing} must be a positive number of metres (e.g. 2)"
        )));
    }
    let Some((lo, hi)) = scene.bounds() else {
        return Err(Error::InvalidInput(
            "the scene is empty: there is no ground to put waypoints on".into(),
        ));
    };
    let width = ((hi.x - lo.x) / spacing).ceil().max(1.0) as usize;
    let height = ((hi.z - lo.z) / spacing).ceil().max(1.0) as usize;
    const LIMIT: usize = 1 << 26;
    let cells = width
        .checked_mul(height)
        .filter(|&c| c <= LIMIT)
        .ok_or(Error::TooLarge {
            what: "waypoint grid cells",
            limit: LIMIT as u64,
        })?;
    let origin = Vec2::new(lo.x, lo.z);
    let ground =
        crate::ground::ground_grid(engine, scene, origin, spacing, width, height, max_slope)?;
    Ok((0..cells)
        .filter(|&i| !ground[i].is_nan())
        .map(|i| {
            let c = crate::ground::cell_centre(origin, spacing, width, i);
            Vec3::new(c.x, ground[i], c.y)
        })
        .collect())
}

/// Reads waypoints from a file: a JSON array of `[x, y, z]` arrays when the first
/// non-blank character is `[`, otherwise CSV (see [`parse_waypoints_csv`]). Errors name the
/// file and the line (CSV) or element (JSON).
pub fn read_waypoints(path: impl AsRef<Path>) -> Result<Vec<Vec3>> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| Error::Load {
        path: name.clone(),
        message: format!("cannot read the waypoint file: {e}"),
    })?;
    let parsed = if text.trim_start().starts_with('[') {
        parse_waypoints_json(&text)
    } else {
        parse_waypoints_csv(&text)
    };
    parsed.map_err(|message| Error::Load {
        path: name,
        message,
    })
}

/// Parses CSV waypoints: one `x,y,z` per line (metres, +Y up, `y` at the feet). Blank lines
/// and lines starting with `#` are skipped; the first other line may be a header (it is
/// skipped when it holds a letter other than `e`/`E`, i.e. is not a number row). The error
/// names the 1-based line and what was wrong with it.
pub fn parse_waypoints_csv(text: &str) -> std::result::Result<Vec<Vec3>, String> {
    let mut out = Vec::new();
    let mut first = true;
    for (k, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let header = first
            && line
                .chars()
                .any(|c| c.is_alphabetic() && !matches!(c, 'e' | 'E'));
        first = false;
        if header {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        out.push(parse_xyz(&fields).map_err(|e| format!("line {}: {e} in `{line}`", k + 1))?);
    }
    Ok(out)
}

/// Parses a JSON array of `[x, y, z]` number arrays (nothing else: no objects, no nesting
/// beyond that). The error names the 0-based element.
pub fn parse_waypoints_json(text: &str) -> std::result::Result<Vec<Vec3>, String> {
    let body = text.trim();
    let inner = body
        .strip_prefix('[')
        .and_then(|b| b.strip_suffix(']'))
        .ok_or("expected a JSON array `[[x, y, z], ...]`")?
        .trim();
    let mut out = Vec::new();
    let mut rest = inner;
    while !rest.is_empty() {
        let k = out.len();
        let open = rest
            .strip_prefix('[')
            .ok_or_else(|| format!("element {k}: expected `[x, y, z]`"))?;
        let close = open
            .find(']')
            .ok_or_else(|| format!("element {k}: missing `]`"))?;
        let fields: Vec<&str> = open[..close].split(',').map(str::trim).collect();
        out.push(parse_xyz(&fields).map_err(|e| format!("element {k}: {e}"))?);
        rest = open[close + 1..].trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim_start();
            if rest.is_empty() {
                return Err(format!("trailing `,` after element {k}"));
            }
        } else if !rest.is_empty() {
            return Err(format!("element {k}: expected `,` or `]` after it"));
        }
    }
    Ok(out)
}

fn parse_xyz(fields: &[&str]) -> std::result::Result<Vec3, String> {
    if fields.len() != 3 {
        return Err(format!(
            "expected 3 numbers x,y,z, found {} fields",
            fields.len()
        ));
    }
    let mut v = [0.0f32; 3];
    for (slot, f) in v.iter_mut().zip(fields) {
        *slot = f
            .parse::<f32>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| format!("`{f}` is not a finite number"))?;
    }
    Ok(Vec3::from(v))
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
