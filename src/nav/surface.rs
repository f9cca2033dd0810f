//! The walk surface: the fine grid of walkable places a nav graph is built from, kept so
//! callers can find ground and walk straight lines on it without tracing a ray (the role a
//! navigation mesh's raycast plays in a game engine).

use super::fine::{Fine, FineParams};
use super::NavParams;
use crate::scene::Scene;
use crate::{Engine, Error, Result};
use glam::{IVec2, Vec2, Vec3, Vec3Swizzles};

/// Every place a crouching body fits, on a grid `spacing / fine` apart (0.25 m by default),
/// and the links between neighbouring places (see [`super::generate`]).
pub struct WalkSurface {
    fine: Fine,
    /// Per place, the linked place in the next column along +x, -x, +z and -z (the one
    /// nearest in height), or `u32::MAX`: a straight walk reads one entry per column.
    axis: Vec<[u32; 4]>,
    /// Per grid column (row-major), bit `d` set when the column holds places and each steps
    /// along `AXES[d]` to the place of the same rank (top down) in the next column: a walk
    /// over open ground, or through storeys that line up, reads a byte a column from a table
    /// a few hundred kilobytes long instead of chasing places through the 16-byte `axis`
    /// entries (megabytes, out of cache), and keeps the rank.
    level: Vec<u8>,
}

const AXES: [IVec2; 4] = [
    IVec2::new(1, 0),
    IVec2::new(-1, 0),
    IVec2::new(0, 1),
    IVec2::new(0, -1),
];

/// How far a straight walk on the surface got ([`WalkSurface::walk`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk {
    /// The last place reached.
    pub end: u32,
    /// Grid columns stepped, and the columns between the start and the goal.
    pub steps: u32,
    pub total: u32,
}

impl Walk {
    /// Whether the walk reached the goal's column.
    #[must_use]
    pub fn arrived(&self) -> bool {
        self.steps == self.total
    }

    /// The share of the way walked, in `[0, 1]`.
    #[must_use]
    pub fn fraction(&self) -> f32 {
        if self.total == 0 {
            1.0
        } else {
            self.steps as f32 / self.total as f32
        }
    }
}

impl WalkSurface {
    /// Finds every walkable place of `scene` for the agent of `params` and links neighbours
    /// (traced through `engine`). An error when the scene has none.
    pub fn build(engine: &Engine, scene: &Scene, params: &NavParams) -> Result<WalkSurface> {
        params.validate()?;
        let fine = Fine::build(
            engine,
            scene,
            &FineParams {
                spacing: params.sample.spacing,
                per: params.fine as usize,
                max_slope: params.sample.max_slope,
                max_layers: params.sample.max_layers,
                step_height: params.step_height,
                agent: params.sample.agent,
            },
        )?;
        check_not_empty(engine, scene, params, &fine)?;
        let axis: Vec<[u32; 4]> = (0..fine.len() as u32)
            .map(|i| {
                let (c, y) = (fine.column_of(i), fine.pos[i as usize].y);
                AXES.map(|d| {
                    fine.links(i)
                        .iter()
                        .copied()
                        .filter(|&q| fine.column_of(q) == c + d)
                        .min_by(|&a, &b| {
                            let (ya, yb) = (fine.pos[a as usize].y, fine.pos[b as usize].y);
                            (ya - y).abs().total_cmp(&(yb - y).abs()).then(a.cmp(&b))
                        })
                        .unwrap_or(u32::MAX)
                })
            })
            .collect();
        let level = level_steps(&fine, &axis);
        Ok(WalkSurface { fine, axis, level })
    }

    pub(super) fn fine(&self) -> &Fine {
        &self.fine
    }

    /// Distance between neighbouring places (metres).
    #[must_use]
    pub fn step(&self) -> f32 {
        self.fine.step
    }

    /// Number of places.
    #[must_use]
    pub fn len(&self) -> usize {
        self.fine.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.fine.len() == 0
    }

    /// Ground position of place `i` (the centre of its grid column).
    ///
    /// # Panics
    /// When `i` is not below [`WalkSurface::len`], like a slice index.
    #[must_use]
    pub fn position(&self, i: u32) -> Vec3 {
        self.fine.pos[i as usize]
    }

    /// Places linked to place `i` (a step to a neighbouring column).
    ///
    /// # Panics
    /// When `i` is not below [`WalkSurface::len`], like a slice index.
    #[must_use]
    pub fn links(&self, i: u32) -> &[u32] {
        self.fine.links(i)
    }

    /// The places a straight walk steps to from place `i` along +x, -x, +z and -z (`u32::MAX`:
    /// none): of the linked places in the next column, the one nearest in height.
    pub(crate) fn axis(&self, i: u32) -> [u32; 4] {
        self.axis[i as usize]
    }

    /// Rays traced building the surface.
    #[must_use]
    pub fn rays(&self) -> u64 {
        self.fine.rays
    }

    fn column(&self, p: Vec2) -> IVec2 {
        ((p - self.fine.origin) / self.fine.step).floor().as_ivec2()
    }

    /// The place nearest `p` horizontally within `radius` metres whose height is within
    /// `max_dy` of `p.y` (ties to the nearer height, then the lower index); `None` if there is
    /// none or `p` is not finite. Columns are read ring by ring outwards from `p`'s and the
    /// search stops at the first ring that lies wholly farther than the best place found.
    #[must_use]
    pub fn locate(&self, p: Vec3, radius: f32, max_dy: f32) -> Option<u32> {
        if !p.is_finite() || !(radius >= 0.0) || !(max_dy >= 0.0) {
            return None;
        }
        let c = self.column(p.xz());
        let reach = (radius / self.fine.step).ceil().min(4096.0) as i32;
        let mut best: Option<(f32, f32, u32)> = None;
        let consider = |d: IVec2, best: &mut Option<(f32, f32, u32)>| {
            for i in self.fine.points_in(c + d) {
                let q = self.fine.pos[i as usize];
                let (d, dy) = (q.xz().distance_squared(p.xz()), (q.y - p.y).abs());
                if d <= radius * radius && dy <= max_dy && best.is_none_or(|b| (d, dy, i) < b) {
                    *best = Some((d, dy, i));
                }
            }
        };
        for r in 0..=reach {
            // `p` lies in column `c`: a column `r` rings out is at least `r - 1` steps away.
            let gap = (r - 1).max(0) as f32 * self.fine.step;
            if best.is_some_and(|(d, _, _)| gap * gap > d) {
                break;
            }
            for dx in -r..=r {
                consider(IVec2::new(dx, -r), &mut best);
                if r > 0 {
                    consider(IVec2::new(dx, r), &mut best);
                }
            }
            for dz in 1 - r..r {
                consider(IVec2::new(-r, dz), &mut best);
                consider(IVec2::new(r, dz), &mut best);
            }
        }
        best.map(|b| b.2)
    }

    /// Walks straight from place `from` towards the column holding `to`, one grid column at a
    /// time (x or z, whichever boundary the line meets first), along links only; where a
    /// column offers more than one linked place, the one nearest in height. Stops where no
    /// link leads on.
    #[must_use]
    pub fn walk(&self, from: u32, to: Vec2) -> Walk {
        let start = self.fine.column_of(from);
        let goal = self.column(to);
        let (dx, dz) = (
            i64::from(goal.x) - i64::from(start.x),
            i64::from(goal.y) - i64::from(start.y),
        );
        let (nx, nz) = (dx.unsigned_abs(), dz.unsigned_abs());
        let w = self.fine.width as i64;
        // A step along x or z: its link direction and the column index's change.
        let x_step = (if dx > 0 { 0 } else { 1 }, dx.signum());
        let z_step = (if dz > 0 { 2 } else { 3 }, dz.signum() * w);
        // The line leaves its column across x at (2 ix + 1) / (2 nx) of the way and across z at
        // (2 iz + 1) / (2 nz): cross-multiplied, `tx = (2 ix + 1) nz` against `tz = (2 iz + 1)
        // nx`, x first on a tie, kept by additions. Columns stay inside the grid (its edge
        // columns have no level bit or link leading out), so these stay far below `u64::MAX`.
        let (mut tx, mut tz) = (nz, nx);
        let (mut ix, mut iz) = (0, 0);
        // The column (row-major) and, where `known`, its place; over level steps only the
        // place's rank in its column is kept, and the place is read back where they end.
        let (mut k, mut cur, mut known, mut rank) =
            (i64::from(start.y) * w + i64::from(start.x), from, true, 0);
        while ix < nx || iz < nz {
            let along_x = ix < nx && (iz >= nz || tx <= tz);
            let (dir, dk) = if along_x { x_step } else { z_step };
            if self.level[k as usize] & (1 << dir) != 0 {
                if known {
                    rank = cur - self.fine.first_in(k as usize);
                    known = false;
                }
            } else {
                if !known {
                    cur = self.fine.first_in(k as usize) + rank;
                    known = true;
                }
                let q = self.axis[cur as usize][dir];
                if q == u32::MAX {
                    break;
                }
                cur = q;
            }
            k += dk;
            if along_x {
                ix += 1;
                tx += 2 * nz;
            } else {
                iz += 1;
                tz += 2 * nx;
            }
        }
        if !known {
            cur = self.fine.first_in(k as usize) + rank;
        }
        let clamp = |n: u64| n.min(u64::from(u32::MAX)) as u32;
        Walk {
            end: cur,
            steps: clamp(ix + iz),
            total: clamp(nx + nz),
        }
    }
}

/// Per column of `fine`, the level steps of [`WalkSurface::level`]'s bits.
fn level_steps(fine: &Fine, axis: &[[u32; 4]]) -> Vec<u8> {
    (0..fine.width * fine.height)
        .map(|k| {
            let c = IVec2::new((k % fine.width) as i32, (k / fine.width) as i32);
            let here = fine.points_in(c);
            if here.is_empty() {
                return 0;
            }
            (0..4).fold(0u8, |bits, d| {
                let next = fine.points_in(c + AXES[d]).start;
                let level = here
                    .clone()
                    .all(|p| axis[p as usize][d] == next + (p - here.start));
                bits | u8::from(level) << d
            })
        })
        .collect()
}

/// Places per footprint column below which a walk surface reads as nearly empty.
const NEARLY_EMPTY: f64 = 0.01;

/// An error when the surface has no place, a warning when it has almost none for the scene's
/// footprint, or when the scene's top surface mostly faces down; each names the likeliest
/// cause ([`crate::ground::survey`]).
fn check_not_empty(engine: &Engine, scene: &Scene, params: &NavParams, fine: &Fine) -> Result<()> {
    let columns = scene.bounds().map_or(0.0, |(lo, hi)| {
        let s = params.sample.spacing as f64;
        ((hi.x - lo.x) as f64 / s).ceil().max(1.0) * ((hi.z - lo.z) as f64 / s).ceil().max(1.0)
    });
    let cause = crate::ground::survey_warn(engine, scene, params.sample.max_slope)?.cause();
    if fine.len() as f64 >= NEARLY_EMPTY * columns && fine.len() > 0 {
        return Ok(());
    }
    if fine.len() == 0 {
        return Err(Error::InvalidInput(format!(
            "the scene has no walkable place where the agent fits ({} walkable surfaces, {} \
             without room): {cause}",
            fine.floors, fine.no_room
        )));
    }
    log::warn!(
        "the walk surface is nearly empty ({} places over {columns} columns of the scene's \
         footprint): {cause}",
        fine.len()
    );
    Ok(())
}
