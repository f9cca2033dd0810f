//! The fine walkable grid a nav graph is built from: every place the body fits, a fraction of
//! the node spacing apart, and which neighbouring places it can step between.
//!
//! Fine columns are `spacing / fine` metres apart (0.25 m by default), aligned with the node
//! grid so each node cell holds `fine x fine` of them. Under each column every walkable floor is
//! found by peeling ([`crate::ground::floors`]) and kept where a crouching body fits
//! ([`crate::agent::fitting_postures`], and its rim from knee to crouching head) and stands on
//! ground all round: something (ground, a step, the foot of a wall) lies within a step height
//! up or down at one radius to either side along x and z, so the top of a wall, the edge of a
//! roof or the side of a stair flight over a drop is not a place (Recast erodes its walkable
//! area by the agent's radius the same way), and is not inside a closed solid
//! ([`crate::ground::outside_solids`]: a crate resting on the floor hides a floor under it). Two fine points in neighbouring columns (eight
//! neighbours) are *linked* when their heights differ by at most a step (plus what the slope
//! allows over the gap) and a segment at the knee and one at the crouching head between them
//! are clear of fire-blocking geometry. Links are a cheap map of the walkable space; every nav
//! graph edge is still the full walk test.

use crate::agent::Posture;
use crate::scene::Scene;
use crate::trace::Segment;
use crate::{Engine, Error, Result};
use glam::{IVec2, Vec2, Vec3};

/// Largest fine grid searched (columns).
pub const MAX_FINE_COLUMNS: usize = crate::limits::MAX_FINE_COLUMNS as usize;

pub(crate) struct Fine {
    pub step: f32,
    pub origin: Vec2,
    pub width: usize,
    pub height: usize,
    /// Fine columns per node cell side.
    pub per: usize,
    /// Points sorted by column (row-major), top down within a column.
    pub col: Vec<u32>,
    /// Per column (row-major), its first point: column `k` holds points
    /// `first[k]..first[k + 1]`.
    first: Vec<u32>,
    pub pos: Vec<Vec3>,
    /// Links: `links[start[i]..start[i + 1]]` are the points linked to point `i`.
    start: Vec<u32>,
    links: Vec<u32>,
    /// Rays traced building it.
    pub rays: u64,
    /// Walkable floors found, and those without room for a crouching body.
    pub floors: usize,
    pub no_room: usize,
    pub truncated: usize,
}

/// The settings the fine grid needs.
pub(crate) struct FineParams {
    pub spacing: f32,
    pub per: usize,
    pub max_slope: f32,
    pub max_layers: u32,
    pub step_height: f32,
    pub agent: crate::agent::Agent,
}

/// Sizes the fine grid over the scene's bounds: its origin (the low corner in x and z), width
/// and height in fine columns, aligned with the node grid.
fn fine_grid(scene: &Scene, p: &FineParams) -> Result<(Vec2, usize, usize)> {
    let Some((lo, hi)) = scene.bounds() else {
        return Err(Error::InvalidInput(
            "the scene is empty: there is no ground for a nav graph".into(),
        ));
    };
    let cells = |extent: f32| (extent / p.spacing).ceil().max(1.0) * p.per as f32;
    let (w, h) = (cells(hi.x - lo.x), cells(hi.z - lo.z));
    if w * h > MAX_FINE_COLUMNS as f32 {
        return Err(Error::InvalidInput(format!(
            "spacing {} m over a {:.0} m x {:.0} m scene needs {w} x {h} fine columns, more \
             than {MAX_FINE_COLUMNS}: use a larger spacing",
            p.spacing,
            hi.x - lo.x,
            hi.z - lo.z
        )));
    }
    Ok((Vec2::new(lo.x, lo.z), w as usize, h as usize))
}

/// Which floor points are places (see the module docs): a crouching body fits, ground all
/// round supports it, and it is not inside a closed solid. Also returns the rays traced.
fn places(
    engine: &Engine,
    scene: &Scene,
    p: &FineParams,
    ground: &[Vec3],
) -> Result<(Vec<bool>, u64)> {
    let fits = crate::agent::fitting_postures(engine, scene, &p.agent, ground, 0.1)?;
    let mut rays = 9 * ground.len() as u64;
    let room: Vec<Vec3> = ground
        .iter()
        .zip(&fits)
        .filter(|(_, f)| f.is_some_and(|f| f >= Posture::Crouching))
        .map(|(g, _)| *g)
        .collect();
    let stands = supported(engine, scene, &room, p)?;
    let standing: Vec<Vec3> = room
        .iter()
        .zip(&stands)
        .filter(|(_, s)| **s)
        .map(|(g, _)| *g)
        .collect();
    let (outside, probes) =
        crate::ground::outside_solids(engine, scene, &standing, p.step_height + 0.05)?;
    let mut outside = outside.into_iter();
    rays += probes;
    let mut kept = stands.into_iter().map(|s| s && outside.next().unwrap());
    rays += 20 * room.len() as u64;
    let places = fits
        .iter()
        .map(|f| f.is_some_and(|f| f >= Posture::Crouching) && kept.next().unwrap())
        .collect();
    Ok((places, rays))
}

impl Fine {
    pub fn build(engine: &Engine, scene: &Scene, p: &FineParams) -> Result<Fine> {
        let (origin, width, height) = fine_grid(scene, p)?;
        let step = p.spacing / p.per as f32;
        let floors = crate::ground::floors(
            engine,
            scene,
            origin,
            step,
            width,
            height,
            p.max_slope,
            p.max_layers,
        )?;
        let ground: Vec<Vec3> = floors
            .cell
            .iter()
            .zip(&floors.height)
            .map(|(&i, &y)| {
                let c = crate::ground::cell_centre(origin, step, width, i as usize);
                Vec3::new(c.x, y, c.y)
            })
            .collect();
        let (places, traced) = places(engine, scene, p, &ground)?;
        let mut fine = Fine {
            step,
            origin,
            width,
            height,
            per: p.per,
            col: Vec::new(),
            first: Vec::new(),
            pos: Vec::new(),
            start: Vec::new(),
            links: Vec::new(),
            rays: (floors.surfaces + floors.cell.len()) as u64 + traced,
            floors: ground.len(),
            no_room: 0,
            truncated: floors.truncated_cells,
        };
        for (k, g) in ground.into_iter().enumerate() {
            if places[k] {
                fine.col.push(floors.cell[k]);
                fine.pos.push(g);
            } else {
                fine.no_room += 1;
            }
        }
        fine.first = column_starts(&fine.col, width * height);
        fine.link(engine, scene, p)?;
        Ok(fine)
    }

    pub fn column_of(&self, i: u32) -> IVec2 {
        let w = self.width as u32;
        let c = self.col[i as usize];
        IVec2::new((c % w) as i32, (c / w) as i32)
    }

    /// Points of fine column `c` (none outside the grid).
    pub fn points_in(&self, c: IVec2) -> std::ops::Range<u32> {
        if c.x < 0 || c.y < 0 || c.x as usize >= self.width || c.y as usize >= self.height {
            return 0..0;
        }
        let k = c.y as usize * self.width + c.x as usize;
        self.first[k]..self.first[k + 1]
    }

    /// The first point of column `k` (row-major), or where it would be when it has none.
    pub fn first_in(&self, k: usize) -> u32 {
        self.first[k]
    }

    /// The node cell holding point `i`.
    pub fn cell_of(&self, i: u32) -> IVec2 {
        self.column_of(i) / self.per as i32
    }

    /// Points linked to `i`.
    pub fn links(&self, i: u32) -> &[u32] {
        &self.links[self.start[i as usize] as usize..self.start[i as usize + 1] as usize]
    }

    pub fn len(&self) -> usize {
        self.pos.len()
    }

    fn link(&mut self, engine: &Engine, scene: &Scene, p: &FineParams) -> Result<()> {
        let knee = p.step_height + 0.05;
        let head = p.agent.head_heights[1] - 0.05;
        let climb =
            p.step_height + self.step * std::f32::consts::SQRT_2 * p.max_slope.tan().min(2.0);
        let mut pairs = Vec::new();
        for i in 0..self.len() as u32 {
            let c = self.column_of(i);
            for d in [
                IVec2::new(1, 0),
                IVec2::new(0, 1),
                IVec2::new(1, 1),
                IVec2::new(-1, 1),
            ] {
                for j in self.points_in(c + d) {
                    if (self.pos[j as usize].y - self.pos[i as usize].y).abs() <= climb {
                        pairs.push((i, j));
                    }
                }
            }
        }
        let mut linked = Vec::with_capacity(pairs.len());
        for chunk in pairs.chunks(1 << 19) {
            let segs: Vec<Segment> = chunk
                .iter()
                .flat_map(|&(i, j)| {
                    let (a, b) = (self.pos[i as usize], self.pos[j as usize]);
                    [knee, head].map(|h| Segment::new(a + Vec3::Y * h, b + Vec3::Y * h))
                })
                .collect();
            let blocked = engine.occluded(scene, &segs, crate::Mask::FIRE)?;
            self.rays += segs.len() as u64;
            linked.extend(
                chunk
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| !blocked.get(2 * k) && !blocked.get(2 * k + 1))
                    .map(|(_, &pair)| pair),
            );
        }
        let n = self.len();
        let mut degree = vec![0u32; n + 1];
        for &(i, j) in &linked {
            degree[i as usize] += 1;
            degree[j as usize] += 1;
        }
        let mut start = Vec::with_capacity(n + 1);
        let mut acc = 0;
        for d in &degree[..n] {
            start.push(acc);
            acc += d;
        }
        start.push(acc);
        let mut fill = start[..n].to_vec();
        let mut links = vec![0; acc as usize];
        for &(i, j) in &linked {
            for (u, v) in [(i, j), (j, i)] {
                links[fill[u as usize] as usize] = v;
                fill[u as usize] += 1;
            }
        }
        self.start = start;
        self.links = links;
        Ok(())
    }

    /// Whether the straight line from point `a` to point `b` follows links through every fine
    /// column it crosses (stepping one column at a time, x or z), using only points `allowed`.
    pub fn straight(&self, a: u32, b: u32, allowed: impl Fn(u32) -> bool) -> bool {
        let (ca, cb) = (self.column_of(a), self.column_of(b));
        let d = cb - ca;
        let (sx, sz) = (d.x.signum(), d.y.signum());
        let (nx, nz) = (d.x.abs(), d.y.abs());
        let mut cur = a;
        let mut c = ca;
        let (mut ix, mut iz) = (0, 0);
        while ix < nx || iz < nz {
            // Step along the axis whose next boundary the line meets first.
            let tx = if ix < nx { (2 * ix + 1) * nz } else { i32::MAX };
            let tz = if iz < nz { (2 * iz + 1) * nx } else { i32::MAX };
            let next = if tx <= tz {
                ix += 1;
                c + IVec2::new(sx, 0)
            } else {
                iz += 1;
                c + IVec2::new(0, sz)
            };
            let Some(&q) = self
                .links(cur)
                .iter()
                .find(|&&q| self.column_of(q) == next && allowed(q))
            else {
                return false;
            };
            cur = q;
            c = next;
        }
        cur == b
    }
}

/// Per column of `columns`, the index of its first point in `col` (sorted), and the end.
fn column_starts(col: &[u32], columns: usize) -> Vec<u32> {
    let mut first = vec![0u32; columns + 1];
    for &k in col {
        first[k as usize + 1] += 1;
    }
    for k in 0..columns {
        first[k + 1] += first[k];
    }
    first
}

/// Whether each point has ground all round and room all round the body (see the module docs):
/// four short downward rays at one radius along x and z; eight vertical segments on the body's
/// rim (every 45 degrees) from the knee to the crouching head, which cut a table top beside the
/// body; and eight horizontal segments from the axis out to the rim at waist height, which cut
/// a door jamb's corner on a diagonal (the agent's clearance test covers the axis and two
/// diameters at head height).
fn supported(engine: &Engine, scene: &Scene, points: &[Vec3], p: &FineParams) -> Result<Vec<bool>> {
    let r = p.agent.probe_radius();
    let all = crate::Mask(crate::MaterialFlags::BLOCKS_FIRE.union(crate::MaterialFlags::WALKABLE));
    let (knee, head) = (p.step_height + 0.05, p.agent.head_heights[1] - 0.05);
    let waist = 0.5 * (knee + head);
    let rim: [Vec3; 8] = std::array::from_fn(|k| {
        let a = k as f32 * std::f32::consts::FRAC_PI_4;
        Vec3::new(a.cos(), 0.0, a.sin()) * r
    });
    let mut out = Vec::with_capacity(points.len());
    for chunk in points.chunks(1 << 17) {
        let rays: Vec<crate::Ray> = chunk
            .iter()
            .flat_map(|&g| {
                [Vec3::X, Vec3::NEG_X, Vec3::Z, Vec3::NEG_Z].map(|dir| {
                    crate::Ray::new(
                        g + dir * r + Vec3::Y * p.step_height,
                        Vec3::NEG_Y,
                        2.0 * p.step_height,
                    )
                })
            })
            .collect();
        let hits = engine.closest_hit(scene, &rays, all)?;
        let segs: Vec<Segment> = chunk
            .iter()
            .flat_map(|&g| {
                let up = rim.map(|o| Segment::new(g + o + Vec3::Y * knee, g + o + Vec3::Y * head));
                let out = rim.map(|o| Segment::new(g + Vec3::Y * waist, g + o + Vec3::Y * waist));
                up.into_iter().chain(out)
            })
            .collect();
        let blocked = engine.occluded(scene, &segs, crate::Mask::FIRE)?;
        out.extend((0..chunk.len()).map(|k| {
            hits[4 * k..4 * k + 4].iter().all(Option::is_some)
                && (0..16).all(|i| !blocked.get(16 * k + i))
        }));
    }
    Ok(out)
}
