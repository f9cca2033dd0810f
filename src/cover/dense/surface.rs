//! The walk surface the dense search walks on, kept between calls: every floor of every cell
//! of the search grid, with the highest posture whose whole disc fits there, built on demand in
//! tiles of 64 x 64 cells (16 m at the default 0.25 m cell) around the queries.
//!
//! Ground and fit do not depend on the query, so a [`Surface`] held by the caller answers them
//! for every later query without a ray. It follows the scene: a changed static tier drops every
//! tile, a moved, added or removed movable object drops only the tiles its old and new bounds
//! touch (widened by a body length), and other settings or a new scene start afresh.
//!
//! - **Floors** of a cell: every walkable surface under its centre ([`crate::ground::floors_under`],
//!   peeled top down).
//! - **Fit**: the highest posture whose disc clearance ([`crate::agent::disc_clearance`]) is clear
//!   of fire-blocking geometry. Two cells are linked when their floors differ by at most a step
//!   height; the search reads that from the floors.

use super::DenseParams;
use crate::agent::{disc_clearance, Agent};
use crate::scene::{Mobility, ObjectId, Scene};
use crate::trace::Segment;
use crate::{Engine, Error, Mask, Result};
use glam::{Affine3A, Vec2, Vec3};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

/// Cells per tile side.
pub const TILE: i32 = 64;
/// Largest number of tiles one call may build (each 4,096 cells); a batch spread wider is an
/// error that asks to split it by area.
pub const MAX_NEW_TILES: usize = 4096;
/// Surfaces peeled per column.
const LAYERS: u32 = 16;
/// Clearance segments per engine call while building tiles.
const FIT_BATCH: usize = 1 << 21;

/// One walkable surface of a cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Floor {
    /// Height of the ground.
    pub y: f32,
    /// 0 when no posture fits, else 1 + the highest posture that fits.
    pub fit: u8,
}

#[derive(Clone)]
struct Tile {
    /// `floors[start[c]..start[c + 1]]` are cell `c`'s floors, top down.
    start: Vec<u32>,
    floors: Vec<Floor>,
    /// Per cell, its floor where it has exactly one (most cells), else a NaN height: a search
    /// reads one cache line where `start` and `floors` cost two.
    sole: Vec<Floor>,
}

impl Tile {
    fn floors_of(&self, c: usize) -> &[Floor] {
        let sole = &self.sole[c];
        if sole.y.is_nan() {
            &self.floors[self.start[c] as usize..self.start[c + 1] as usize]
        } else {
            std::slice::from_ref(sole)
        }
    }

    /// Fills [`Tile::sole`] from the floors (once their fit is known).
    fn find_sole(&mut self) {
        let none = Floor {
            y: f32::NAN,
            fit: 0,
        };
        self.sole = (0..self.start.len() - 1)
            .map(
                |c| match &self.floors[self.start[c] as usize..self.start[c + 1] as usize] {
                    [f] => *f,
                    _ => none,
                },
            )
            .collect();
    }
}

/// The tiles under one search's square ([`Surface::window`]).
#[derive(Clone, Default)]
pub(super) struct Window {
    ti0: i32,
    tj0: i32,
    w: i32,
    /// Row by row; `None` where no tile is built.
    tiles: Vec<Option<Arc<Tile>>>,
}

impl Window {
    /// Floors of cell `(i, j)`, top down; none outside the window or where no tile is built.
    pub fn floors(&self, i: i32, j: i32) -> &[Floor] {
        let (ti, tj, c) = tile_of(i, j);
        let (x, z) = (ti - self.ti0, tj - self.tj0);
        if x < 0 || z < 0 || x >= self.w {
            return &[];
        }
        match self.tiles.get((x + z * self.w) as usize) {
            Some(Some(t)) => t.floors_of(c),
            _ => &[],
        }
    }
}

/// A body's shape, exactly: its radius and head heights as bits.
pub(super) type ShapeKey = (u32, [u32; 3]);

pub(super) fn shape_key(a: &Agent) -> ShapeKey {
    (a.radius.to_bits(), a.head_heights.map(f32::to_bits))
}

/// The body of a shape (standing at the origin).
fn body(s: ShapeKey) -> Agent {
    Agent {
        position: Vec3::ZERO,
        radius: f32::from_bits(s.0),
        head_heights: s.1.map(f32::from_bits),
    }
}

/// What the tiles were built with, beyond the body shape.
type ParamsKey = [u32; 3];

#[derive(Clone, Copy, PartialEq)]
struct Placed {
    id: ObjectId,
    transform: Affine3A,
    bounds: Option<(Vec3, Vec3)>,
}

/// What building tiles cost so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SurfaceStats {
    /// Tiles built (again after an invalidation counts again).
    pub built: u64,
    /// Tiles dropped because the scene changed under them.
    pub dropped: u64,
    /// Rays and segments traced building them.
    pub rays: u64,
    /// Wall-clock seconds spent building them.
    pub seconds: f64,
}

/// The kept walk surface; see the module docs. One per scene a caller queries.
#[derive(Default)]
pub struct Surface {
    params: Option<ParamsKey>,
    scene: Option<(u64, u64)>,
    movable_revision: u64,
    movable: Vec<Placed>,
    shapes: Vec<ShapeKey>,
    tiles: FxHashMap<(u32, i32, i32), Arc<Tile>>,
    stats: SurfaceStats,
}

fn tile_of(i: i32, j: i32) -> (i32, i32, usize) {
    let (ti, tj) = (i.div_euclid(TILE), j.div_euclid(TILE));
    let c = i.rem_euclid(TILE) + TILE * j.rem_euclid(TILE);
    (ti, tj, c as usize)
}

/// How far beyond a query's radius the surface is built (metres): a prone body's length, which
/// the search checks along the ground beside a spot.
pub(super) fn margin(agent: &Agent) -> f32 {
    (super::super::body::PRONE_BACK.max(super::super::body::PRONE_FRONT)) * agent.height()
        + agent.radius
}

impl Surface {
    #[must_use]
    pub fn new() -> Surface {
        Surface::default()
    }

    /// Tiles held now.
    #[must_use]
    pub fn tiles(&self) -> usize {
        self.tiles.len()
    }

    #[must_use]
    pub fn stats(&self) -> SurfaceStats {
        self.stats
    }

    /// The shape index of `agent`'s body (added if new).
    pub(super) fn shape(&mut self, agent: &Agent) -> u32 {
        let k = shape_key(agent);
        if let Some(i) = self.shapes.iter().position(|&s| s == k) {
            return i as u32;
        }
        self.shapes.push(k);
        self.shapes.len() as u32 - 1
    }

    /// The index of a known shape.
    pub fn shape_of(&self, agent: &Agent) -> u32 {
        let k = shape_key(agent);
        self.shapes
            .iter()
            .position(|&s| s == k)
            .map_or(u32::MAX, |i| i as u32)
    }

    /// Floors of cell `(i, j)` for body shape `shape`, top down; none where no tile is built.
    pub fn floors(&self, shape: u32, i: i32, j: i32) -> &[Floor] {
        let (ti, tj, c) = tile_of(i, j);
        self.tiles
            .get(&(shape, ti, tj))
            .map_or(&[], |t| t.floors_of(c))
    }

    /// The tiles under the cells `i0..i0 + side`, `j0..j0 + side` for body shape `shape`: one
    /// search's square, read without a lookup per cell.
    pub(super) fn window(&self, shape: u32, i0: i32, j0: i32, side: i32) -> Window {
        let (ti0, tj0) = (i0.div_euclid(TILE), j0.div_euclid(TILE));
        let (ti1, tj1) = (
            (i0 + side - 1).div_euclid(TILE),
            (j0 + side - 1).div_euclid(TILE),
        );
        let w = ti1 - ti0 + 1;
        let tiles = (tj0..=tj1)
            .flat_map(|tj| (ti0..=ti1).map(move |ti| (ti, tj)))
            .map(|(ti, tj)| self.tiles.get(&(shape, ti, tj)).cloned())
            .collect();
        Window { ti0, tj0, w, tiles }
    }

    /// Builds the tiles the queries' squares (their radius, and a body length beyond) need and
    /// drops those the scene's changes since the last call touched. Bad settings or bodies are
    /// errors, before anything is built.
    pub fn prepare(
        &mut self,
        engine: &Engine,
        scene: &Scene,
        agents: &[Agent],
        params: &DenseParams,
    ) -> Result<()> {
        super::validate_params(params)?;
        for (i, a) in agents.iter().enumerate() {
            a.validate(i)?;
            params.body.validate(a)?;
        }
        let t = std::time::Instant::now();
        self.follow(scene, params);
        let mut missing: Vec<(u32, i32, i32)> = Vec::new();
        let mut seen = FxHashSet::default();
        for a in agents {
            let shape = self.shape(a);
            let reach = params.radius + margin(a);
            let lo = ((a.position.x - reach) / params.cell).floor() as i32;
            let hi = ((a.position.x + reach) / params.cell).floor() as i32;
            let lo_j = ((a.position.z - reach) / params.cell).floor() as i32;
            let hi_j = ((a.position.z + reach) / params.cell).floor() as i32;
            for tj in lo_j.div_euclid(TILE)..=hi_j.div_euclid(TILE) {
                for ti in lo.div_euclid(TILE)..=hi.div_euclid(TILE) {
                    let k = (shape, ti, tj);
                    if !self.tiles.contains_key(&k) && seen.insert(k) {
                        missing.push(k);
                        if missing.len() > MAX_NEW_TILES {
                            return Err(Error::InvalidInput(format!(
                                "the cover queries need more than {MAX_NEW_TILES} new tiles of \
                                 walk surface ({} m squares); split the batch by area or use a \
                                 smaller radius",
                                TILE as f32 * params.cell
                            )));
                        }
                    }
                }
            }
        }
        if !missing.is_empty() {
            crate::limits::check_memory(
                "walk surface tiles for the cover search",
                missing.len() as u64 * (TILE * TILE) as u64 * 64,
                "split the batch by area",
            )?;
            self.build(engine, scene, &missing, params)?;
        }
        self.stats.seconds += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// Drops what the scene's changes or other settings make stale.
    fn follow(&mut self, scene: &Scene, params: &DenseParams) {
        let key = [params.cell, params.max_slope, params.body.foot].map(f32::to_bits);
        let (uid, [static_rev, movable_rev]) = scene.cache_key();
        if self.params != Some(key) || self.scene != Some((uid, static_rev)) {
            self.stats.dropped += self.tiles.len() as u64;
            self.tiles.clear();
            self.params = Some(key);
            self.scene = Some((uid, static_rev));
            self.movable = placed(scene);
            self.movable_revision = movable_rev;
            return;
        }
        if movable_rev == self.movable_revision {
            return;
        }
        let now = placed(scene);
        let mut changed: Vec<(Vec3, Vec3)> = Vec::new();
        for p in now.iter().filter(|p| !self.movable.contains(p)) {
            changed.extend(p.bounds);
        }
        for p in self.movable.iter().filter(|p| !now.contains(p)) {
            changed.extend(p.bounds);
        }
        let widen = self
            .shapes
            .iter()
            .map(|&s| margin(&body(s)))
            .fold(0.0f32, f32::max)
            + params.cell;
        let side = TILE as f32 * params.cell;
        let before = self.tiles.len();
        self.tiles.retain(|&(_, ti, tj), _| {
            let lo = Vec2::new(ti as f32, tj as f32) * side - widen;
            let hi = lo + side + 2.0 * widen;
            !changed
                .iter()
                .any(|(a, b)| a.x <= hi.x && b.x >= lo.x && a.z <= hi.y && b.z >= lo.y)
        });
        self.stats.dropped += (before - self.tiles.len()) as u64;
        self.movable = now;
        self.movable_revision = movable_rev;
    }

    /// Builds `missing` tiles: one peel of every column, then the disc clearance of every floor.
    fn build(
        &mut self,
        engine: &Engine,
        scene: &Scene,
        missing: &[(u32, i32, i32)],
        params: &DenseParams,
    ) -> Result<()> {
        // Floors do not depend on the body: peel each tile's columns once.
        let mut places: Vec<(i32, i32)> = missing.iter().map(|&(_, ti, tj)| (ti, tj)).collect();
        places.sort_unstable();
        places.dedup();
        let per = (TILE * TILE) as usize;
        let centres: Vec<Vec2> = places
            .iter()
            .flat_map(|&(ti, tj)| {
                (0..per).map(move |c| {
                    let (i, j) = (ti * TILE + c as i32 % TILE, tj * TILE + c as i32 / TILE);
                    Vec2::new(
                        (i as f32 + 0.5) * params.cell,
                        (j as f32 + 0.5) * params.cell,
                    )
                })
            })
            .collect();
        let floors =
            crate::ground::floors_under(engine, scene, &centres, params.max_slope, LAYERS)?;
        self.stats.rays += (floors.surfaces + centres.len()) as u64;
        for &(shape, ti, tj) in missing {
            let k = places.binary_search(&(ti, tj)).expect("tile peeled") * per;
            let lo = floors.cell.partition_point(|&c| (c as usize) < k);
            let hi = floors.cell.partition_point(|&c| (c as usize) < k + per);
            let mut start = vec![0u32; per + 1];
            for &c in &floors.cell[lo..hi] {
                start[c as usize - k + 1] += 1;
            }
            for c in 0..per {
                start[c + 1] += start[c];
            }
            let list = (lo..hi)
                .map(|f| Floor {
                    y: floors.height[f],
                    fit: 0,
                })
                .collect();
            let tile = Tile {
                start,
                floors: list,
                sole: Vec::new(),
            };
            self.tiles.insert((shape, ti, tj), Arc::new(tile));
        }
        self.fit(engine, scene, missing, &centres, &places, params)?;
        for k in missing {
            Arc::make_mut(self.tiles.get_mut(k).expect("tile built")).find_sole();
        }
        self.stats.built += missing.len() as u64;
        Ok(())
    }

    /// Fills the fit of every floor of the new tiles, in bounded engine calls.
    fn fit(
        &mut self,
        engine: &Engine,
        scene: &Scene,
        missing: &[(u32, i32, i32)],
        centres: &[Vec2],
        places: &[(i32, i32)],
        params: &DenseParams,
    ) -> Result<()> {
        let per = (TILE * TILE) as usize;
        // (tile, floor index, ground point) of every floor to test.
        let mut todo: Vec<(usize, u32, Vec3)> = Vec::new();
        for (n, key) in missing.iter().enumerate() {
            let k = places.binary_search(&(key.1, key.2)).expect("tile peeled") * per;
            let t = &self.tiles[key];
            for c in 0..per {
                for f in t.start[c]..t.start[c + 1] {
                    let xz = centres[k + c];
                    todo.push((n, f, Vec3::new(xz.x, t.floors[f as usize].y, xz.y)));
                }
            }
        }
        let mut segs: Vec<Segment> = Vec::new();
        let mut ends: Vec<[usize; 3]> = Vec::new();
        let mut first = 0;
        while first < todo.len() {
            segs.clear();
            ends.clear();
            let mut last = first;
            while last < todo.len() && segs.len() < FIT_BATCH {
                let (n, ..) = todo[last];
                let agent = body(self.shapes[missing[n].0 as usize]);
                ends.push(disc_clearance(
                    &agent,
                    todo[last].2,
                    params.body.foot,
                    &mut segs,
                ));
                last += 1;
            }
            let blocked = engine.occluded(scene, &segs, Mask::FIRE)?;
            self.stats.rays += segs.len() as u64;
            let mut start = 0;
            for (k, e) in (first..last).zip(&ends) {
                let (n, f, _) = todo[k];
                let (mut fit, mut from) = (0u8, start);
                for (p, &end) in e.iter().enumerate() {
                    if (from..end).any(|s| blocked.get(s)) {
                        break;
                    }
                    from = end;
                    fit = 1 + p as u8;
                }
                start = e[2];
                let tile = self.tiles.get_mut(&missing[n]).expect("tile built");
                Arc::make_mut(tile).floors[f as usize].fit = fit;
            }
            first = last;
        }
        Ok(())
    }
}

/// The movable objects of `scene` as placed now.
fn placed(scene: &Scene) -> Vec<Placed> {
    scene
        .object_ids()
        .filter(|&id| scene.mobility(id) == Some(Mobility::Movable))
        .filter_map(|id| {
            let transform = scene.transform(id)?;
            Some(Placed {
                id,
                transform,
                bounds: scene.object_bounds(id, transform),
            })
        })
        .collect()
}
