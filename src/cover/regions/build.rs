//! Regions from the cover bits (see [`super::cover_regions`]): per posture, erode by the
//! agent's radius, label, outline, find the deepest point and route to it from the centre.

use super::shape::{self, Grid};
use super::{Region, RegionParams, Route, SampleGrid};
use crate::cover::{Agent, Posture};
use glam::{DVec2, Vec3};

/// Every region of every posture asked in `params`, postures in order, and how many were
/// left out as thinner than the grid can vouch for: no cell of theirs more than half a cell
/// from their edge (at most two cells across everywhere). The body's fit is checked at cell
/// centres only; an oracle body missed hiding in about one in twelve such regions on held-out
/// levels and in none of the thicker ones (`tests/cover_regions.rs`).
pub(super) fn regions(
    grid: &SampleGrid,
    cover: &[u8],
    center: Vec3,
    agent: &Agent,
    params: &RegionParams,
) -> (Vec<Region>, usize) {
    let g = Grid {
        origin: DVec2::new(grid.origin.x.into(), grid.origin.y.into()),
        cell: grid.cell.into(),
        width: grid.side,
        height: grid.side,
    };
    let start = grid.index_at(center);
    let (mut out, mut thin) = (Vec::new(), 0);
    for posture in Posture::ALL {
        if !params.postures[posture as usize] {
            continue;
        }
        let mask: Vec<bool> = cover.iter().map(|b| b >> posture as u8 & 1 == 1).collect();
        // Every cell whose square the body's disc could reach: centres within the radius plus
        // half a cell's diagonal (none but its own for a point body).
        let reach = if agent.radius > 0.0 {
            f64::from(agent.radius) + g.cell * std::f64::consts::FRAC_1_SQRT_2
        } else {
            0.0
        };
        let fits = shape::erode(&mask, &g, reach);
        let (labels, count) = shape::label(&fits, &g);
        let routes = start.map(|s| {
            shape::routes(
                &g,
                &grid.heights,
                &fits,
                s,
                params.max_step,
                params.exposure_weight,
            )
        });
        let mut cells = vec![0usize; count];
        let mut reachable = vec![0usize; count];
        for (i, &l) in labels.iter().enumerate() {
            if l != shape::NONE {
                cells[l as usize] += 1;
                reachable[l as usize] += usize::from(routes.as_ref().is_some_and(|r| r.reached(i)));
            }
        }
        let cell_area = g.cell * g.cell;
        for l in 0..count {
            let Some((deep, margin)) = shape::deepest(&labels, &g, l as u32) else {
                continue;
            };
            if margin <= g.cell * (0.5 + 1e-6) {
                thin += 1;
                continue;
            }
            let route = routes
                .as_ref()
                .and_then(|r| r.path_to(deep))
                .map(|path| route_of(grid, &fits, &path));
            out.push(Region {
                posture,
                polygon: shape::outline(&labels, &g, l as u32),
                cells: cells[l],
                area: cells[l] as f64 * cell_area,
                reachable_cells: reachable[l],
                reachable_area: reachable[l] as f64 * cell_area,
                point: ground_point(grid, deep),
                margin: margin as f32,
                route,
            });
        }
    }
    (out, thin)
}

/// Centre of cell `i` on its ground.
fn ground_point(grid: &SampleGrid, i: usize) -> Vec3 {
    let c = grid.centre(i);
    Vec3::new(c.x, grid.heights[i], c.y)
}

/// The route over `path`'s cells: its points, length and the length of the steps that end
/// outside cover.
fn route_of(grid: &SampleGrid, fits: &[bool], path: &[usize]) -> Route {
    let points: Vec<Vec3> = path.iter().map(|&i| ground_point(grid, i)).collect();
    let (mut length, mut exposed) = (0.0, 0.0);
    for (k, w) in points.windows(2).enumerate() {
        let d = f64::from(w[0].distance(w[1]));
        length += d;
        if !fits[path[k + 1]] {
            exposed += d;
        }
    }
    Route {
        points,
        length,
        exposed,
    }
}
