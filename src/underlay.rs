//! The scene seen from straight above: what every top-down picture draws under its results.
//!
//! One ray per pixel goes straight down from above the scene (a closest-hit batch through the
//! [`Engine`], on the GPU or its CPU twin). Where the first surface met is the top of a closed
//! solid (the ray next meets its underside, a back face), a second ray leaves from that
//! underside; where it is an open surface, from just under it. The surface the next ray meets
//! is what lies beneath: if there is headroom between them ([`HEADROOM`]), the top is an
//! overhang (a roof, a bridge, a tree's canopy) and the picture shows the surface under it.
//! Each pixel then knows the surface to draw (its height and normal), what covers it, and
//! whether it is vertical geometry: a wall's footprint, where the drawn height rises more than
//! [`STEP`] above some surface within [`WALL_REACH`], or a slope steeper than [`STEEP`].
//!
//! Straight down alone cannot tell a room under a roof from a wall standing under it when their
//! faces touch (the roof's underside on the wall's top, the wall's foot on the floor): a
//! pair of opposite sideways rays from within the headroom settles it, since from inside
//! a closed solid the first face met is a back face (the probes run across the whole scene;
//! nothing met reads as open). Pixels along one probe line share probes: a probe that crosses
//! the headroom of later pixels before it meets its first face answers for them too.
//!
//! The straight-down passes are three batches whatever the size: every pixel, then the pixels
//! with a top surface (both given to the engine as a grid, with no buffer of rays on the CPU),
//! then those whose top was a solid's; the sideways probes take at most four batches (two on a GPU). No image
//! type is involved: the command-line tool turns an [`Underlay`] into colours.

use crate::scene::{Mask, MaterialFlags, Scene};
use crate::trace::cpu::{hit_record, RayPrep};
use crate::trace::{down::DownGrid, HitRecord, Ray, NO_HIT};
use crate::{limits, Engine, Error, Result};
use glam::{Vec2, Vec3};
use rayon::prelude::*;

/// Headroom (metres) under a surface that makes it an overhang: anything a crouching person
/// fits under.
pub const HEADROOM: f32 = 1.0;
/// A rise (metres) above a neighbouring surface that reads as a wall rather than a step.
pub const STEP: f32 = 0.5;
/// How far (metres) from the foot of a rise its top is still drawn as wall: thin walls and
/// fences are dark over their whole footprint, a plateau only along its rim.
pub const WALL_REACH: f32 = 0.3;
/// Surfaces steeper than this (radians from horizontal) are drawn as vertical geometry.
pub const STEEP: f32 = 1.0;
/// How far under a surface (metres) the next ray starts.
const GAP: f32 = 0.01;
/// Height comparisons against [`STEP`] and [`HEADROOM`] allow this much (metres) either way
/// to the side the designed value falls on: a rise of exactly 0.5 m, as built levels have, is a
/// step however the last bits of its heights were rounded (a GPU may fuse the arithmetic).
const MARGIN: f32 = 1e-4;

/// What a pixel shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Surface {
    /// Nothing under the pixel.
    Empty,
    /// Ground or any other surface one could stand on, shaded by height and slope.
    Ground,
    /// Vertical geometry: the footprint of a wall or the rim of a drop.
    Wall,
    /// Water (a surface that is walkable but blocks neither sight nor fire).
    Water,
}

/// What covers the drawn surface from above.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cover {
    /// Open sky.
    Open,
    /// A solid overhang: a roof, a bridge, an upper floor.
    Overhang,
    /// Foliage (a surface that blocks sight only), as a canopy above or a bush on top.
    Foliage,
}

/// A top-down grid over the box `origin .. origin + (width, height) * pixel` (x, z); pixel
/// `(c, r)` is at `r * width + c` and its centre at `origin + (c + 0.5, r + 0.5) * pixel`.
#[derive(Clone, Debug)]
pub struct Underlay {
    pub origin: Vec2,
    /// Metres per pixel.
    pub pixel: f32,
    pub width: usize,
    pub height: usize,
    /// Height (y) of the drawn surface: the top one, or the one under an overhang; NaN where
    /// the pixel is [`Surface::Empty`].
    pub elevation: Vec<f32>,
    /// Upward normal of the drawn surface (zero where empty).
    pub normal: Vec<Vec3>,
    pub surface: Vec<Surface>,
    pub cover: Vec<Cover>,
    /// Height of the highest surface, overhangs included (NaN where empty).
    pub top: Vec<f32>,
    /// Rays traced in all passes.
    pub rays: usize,
}

impl Underlay {
    /// Lowest and highest drawn elevation, or `None` if every pixel is empty.
    #[must_use]
    pub fn elevation_range(&self) -> Option<(f32, f32)> {
        let (lo, hi) = self
            .elevation
            .iter()
            .filter(|h| h.is_finite())
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &h| {
                (a.min(h), b.max(h))
            });
        (lo <= hi).then_some((lo, hi))
    }

    /// Pixels showing `s`.
    #[must_use]
    pub fn count(&self, s: Surface) -> usize {
        self.surface.iter().filter(|&&x| x == s).count()
    }
}

/// The underlay of the `width` x `height` pixel grid with its corner at `origin` (x, z) and
/// `pixel` metres a pixel. Every triangle with any flag counts (see-through fences, flagged
/// nothing, are not drawn).
pub fn underlay(
    engine: &Engine,
    scene: &Scene,
    origin: Vec2,
    pixel: f32,
    width: usize,
    height: usize,
) -> Result<Underlay> {
    let mut out = blank(origin, pixel, width, height)?;
    let n = out.elevation.len();
    let Some((lo, hi)) = scene.bounds().filter(|_| n > 0) else {
        return Ok(out);
    };
    let grid = Columns {
        frame: DownGrid {
            origin,
            cell: pixel,
            width,
            floor: lo.y - 1.0,
        },
        sky: hi.y + 1.0,
    };
    let all = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);

    let clock = std::time::Instant::now();
    let layers = Layers::trace(engine, scene, &grid, n, all)?;
    out.rays += layers.rays;
    let straight_down = clock.elapsed();
    let reach = (hi - lo).length() + 1.0;
    // Each wait costs a GPU far more than the rays of the later batches.
    let rounds = if engine.gpu().is_some() { 2 } else { ROUNDS };
    let (open, probes) = open_headroom(engine, scene, (&grid, &layers), reach, all, rounds)?;
    out.rays += probes;
    let probing = clock.elapsed() - straight_down;

    classify(&mut out, &layers, &open);
    mark_walls(&mut out)?;
    log::debug!(
        "underlay {width} x {height}: straight down {straight_down:?}, {probes} probes {probing:?}, \
         classified in {:?}",
        clock.elapsed() - straight_down - probing
    );
    warn_if_bare(engine, scene, &out)?;
    Ok(out)
}

/// A warning naming the likeliest cause ([`crate::ground::survey`]) when under 1% of the
/// underlay's pixels show ground one could stand on.
fn warn_if_bare(engine: &Engine, scene: &Scene, out: &Underlay) -> Result<()> {
    let ground = out
        .surface
        .iter()
        .filter(|&&s| s == Surface::Ground)
        .count();
    if out.surface.is_empty() || 100 * ground >= out.surface.len() {
        return Ok(());
    }
    let cause = crate::ground::survey(engine, scene, STEEP)?.cause();
    log::warn!(
        "the underlay shows ground in {ground} of {} pixels: {cause}",
        out.surface.len()
    );
    Ok(())
}

/// An underlay with every pixel empty, after checking the pixel size, the corner and the
/// pixel count.
fn blank(origin: Vec2, pixel: f32, width: usize, height: usize) -> Result<Underlay> {
    if !(pixel.is_finite() && pixel > 0.0) {
        return Err(Error::param("pixel", pixel, "a finite size above 0 metres"));
    }
    if !(origin.is_finite() && origin.abs().max_element() <= limits::MAX_COORDINATE) {
        return Err(Error::InvalidInput(format!(
            "the underlay's corner {origin} is not finite metres within {:e}",
            limits::MAX_COORDINATE
        )));
    }
    let pixels = width as u64 * height as u64;
    limits::check_size(
        "underlay pixels",
        pixels,
        limits::MAX_PICTURE_PIXELS,
        "draw a smaller picture (a smaller --width or area)",
    )?;
    let n = pixels as usize;
    let fix = "draw a smaller picture";
    Ok(Underlay {
        origin,
        pixel,
        width,
        height,
        elevation: limits::vec_filled(n, f32::NAN, "underlay", fix)?,
        normal: limits::vec_filled(n, Vec3::ZERO, "underlay", fix)?,
        surface: limits::vec_filled(n, Surface::Empty, "underlay", fix)?,
        cover: limits::vec_filled(n, Cover::Open, "underlay", fix)?,
        top: limits::vec_filled(n, f32::NAN, "underlay", fix)?,
        rays: 0,
    })
}

/// The vertical rays' frame: the pixel grid and the height below the scene they end at
/// (`frame`), and the height above it they start from (`sky`).
#[derive(Clone, Copy)]
struct Columns {
    frame: DownGrid,
    sky: f32,
}

impl Columns {
    /// Pixel `i`'s centre (x, z).
    fn centre(&self, i: usize) -> Vec2 {
        let f = &self.frame;
        crate::ground::cell_centre(f.origin, f.cell, f.width, i)
    }
}

/// What the underlay keeps of a downward ray's record: the distance and the triangle (8 bytes
/// against a record's 32: a million pixels hold two of these). The rest of a record depends
/// only on the triangle and the ray's direction: [`Faces`].
#[derive(Clone, Copy, bytemuck::Zeroable)]
struct Met {
    t: f32,
    triangle: u32,
}

impl Met {
    /// The `keep` of [`Engine::closest_hit_grid_with`].
    fn keep(h: &HitRecord) -> Met {
        Met {
            t: h.t,
            triangle: h.triangle,
        }
    }

    fn miss(&self) -> bool {
        self.triangle == NO_HIT
    }
}

/// A triangle as a straight-down ray meets it: its normal turned up, whether the ray meets its
/// back (leaving a closed solid) and its material's flags.
#[derive(Clone, Copy, Default)]
struct Face {
    normal: [f32; 3],
    back: bool,
    flags: MaterialFlags,
}

/// Every triangle's [`Face`], by scene triangle id: the CPU kernels' own record fields
/// ([`crate::trace::cpu::hit_record`]), so that the GPU's hits are drawn and layered with the
/// same normals and sides as the CPU's.
struct Faces(Vec<Face>);

impl Faces {
    fn new(scene: &Scene) -> Result<Faces> {
        let tiers = scene.tiers();
        let triangles = || tiers.iter().flat_map(|t| &t.triangles);
        let len = triangles().map(|t| t.id as usize + 1).max().unwrap_or(0);
        let fix = "remove and re-add fewer objects (triangle ids run past the live triangles)";
        let mut faces = limits::vec_filled(len, Face::default(), "underlay faces", fix)?;
        let down = RayPrep::new(Vec3::ZERO, Vec3::NEG_Y);
        let materials = scene.materials();
        let found: Vec<(u32, Face)> = (tiers.par_iter())
            .flat_map(|t| t.triangles.par_iter())
            .map(|tri| {
                let h = hit_record(&down, tri, 0.0);
                let flags = materials[h.material as usize].flags;
                let (normal, back) = (h.normal, h.back != 0);
                (
                    tri.id,
                    Face {
                        normal,
                        back,
                        flags,
                    },
                )
            })
            .collect();
        for (id, face) in found {
            faces[id as usize] = face;
        }
        Ok(Faces(faces))
    }

    /// The face a hit met (not a miss).
    fn of(&self, m: &Met) -> &Face {
        &self.0[m.triangle as usize]
    }
}

/// The height a downward ray from `start` met its surface at, or `None` for a miss.
fn hit_y(start: f32, h: &Met) -> Option<f32> {
    (!h.miss()).then_some(start - h.t)
}

/// Where the next ray starts under a surface at height `y`.
fn below(y: f32) -> f32 {
    y - GAP - y.abs() * 1e-6
}

/// The three straight-down passes: every pixel's top surface (`first`), what lies under it
/// (`second`, its rays leaving from `start2`, NaN for none), and, for the few pixels whose
/// second hit was a solid's underside, what lies under that (`third`, its rays leaving from
/// `start3`; `third_at` maps a pixel to its place there).
struct Layers {
    sky: f32,
    first: Vec<Met>,
    start2: Vec<f32>,
    second: Vec<Met>,
    start3: Vec<f32>,
    third: Vec<Met>,
    third_at: Vec<u32>,
    faces: Faces,
    /// Rays traced in the three passes.
    rays: usize,
}

impl Layers {
    /// Traces the three passes over the `n` pixels of `grid`.
    fn trace(
        engine: &Engine,
        scene: &Scene,
        grid: &Columns,
        n: usize,
        all: Mask,
    ) -> Result<Layers> {
        // The first two passes trace the whole grid, given by its frame; a pixel with nothing
        // to ask starts at NaN and meets nothing. The top surface:
        let frame = &grid.frame;
        let (faces, keep) = (Faces::new(scene)?, Met::keep);
        let mut starts = limits::vec_filled(n, grid.sky, "underlay", "draw a smaller picture")?;
        let first = engine.closest_hit_grid_with(scene, frame, &starts, all, keep)?;
        // What lies under it: from just below an open surface, or from inside a solid (the same
        // buffer, rewritten in place).
        starts.par_iter_mut().zip(&first).for_each(|(y, h)| {
            *y = hit_y(*y, h).map_or(f32::NAN, below);
        });
        let second = engine.closest_hit_grid_with(scene, frame, &starts, all, keep)?;
        let traced = n + starts.par_iter().filter(|y| !y.is_nan()).count();
        // Out of a solid's underside: few pixels, traced as a list in row order.
        let inside: Vec<usize> = (0..n)
            .into_par_iter()
            .filter(|&i| !second[i].miss() && faces.of(&second[i]).back)
            .collect();
        let start3: Vec<f32> = (inside.iter())
            .map(|&i| below(hit_y(starts[i], &second[i]).expect("a hit")))
            .collect();
        let rays3: Vec<Ray> = (inside.iter().zip(&start3))
            .map(|(&i, &y)| frame.ray(i, y))
            .collect();
        let third = (engine.closest_hit_records(scene, &rays3, all)?.iter())
            .map(&keep)
            .collect();
        // Pixel to its place in that list.
        let at = if inside.is_empty() { 0 } else { n };
        let mut third_at = limits::vec_filled(at, u32::MAX, "underlay", "draw a smaller picture")?;
        for (k, &i) in inside.iter().enumerate() {
            third_at[i] = k as u32;
        }
        Ok(Layers {
            sky: grid.sky,
            first,
            start2: starts,
            second,
            start3,
            third,
            third_at,
            faces,
            rays: traced + rays3.len(),
        })
    }

    /// Pixel `i`'s top layer's underside and the surface under it (its height and hit).
    fn layer(&self, i: usize) -> (f32, Option<(f32, Met)>) {
        let top_y = self.sky - self.first[i].t;
        match hit_y(self.start2[i], &self.second[i]) {
            None => (top_y, None),
            Some(bottom) if self.faces.of(&self.second[i]).back => {
                let k = self.third_at[i] as usize;
                (
                    bottom,
                    hit_y(self.start3[k], &self.third[k]).map(|y| (y, self.third[k])),
                )
            }
            Some(y) => (top_y, Some((y, self.second[i]))),
        }
    }
}

/// The probes' direction (and its opposite): 4 pixels across and 3 down make 5 along it, so
/// pixels `(c, r)` and `(c + 4, r + 3)` lie on one probe line.
const SIDEWAYS: Vec3 = Vec3::new(0.8, 0.0, 0.6);
/// Pixels of one probe line that share one probe ([`Probe::open_both`]).
const BLOCK: usize = 32;
/// Batches of probes on the CPU ([`Probe::open_both`]); a GPU takes two.
const ROUNDS: usize = 4;

/// Which pixels have open headroom under their top layer, and how many probes were traced.
/// Headroom under a layer is open only if its middle is outside every closed solid: a
/// sideways ray from there first meets a front face. (Straight down alone cannot tell a
/// room under a roof from a wall standing on the floor under it when their faces touch.)
/// `reach` is the probes' length: across the whole scene; `rounds` the batches of probes.
fn open_headroom(
    engine: &Engine,
    scene: &Scene,
    (grid, layers): (&Columns, &Layers),
    reach: f32,
    all: Mask,
    rounds: usize,
) -> Result<(Vec<bool>, usize)> {
    let n = layers.first.len();
    let (candidates, window) = headroom(layers);
    let rows = n / grid.frame.width;
    let probe = Probe {
        grid,
        candidates: &candidates,
        lines: Lines::new(&candidates, &window, grid.frame.width, rows),
        reach,
    };
    let ([ahead, behind], traced) = probe.open_both(engine, scene, rounds, all)?;
    let mut open = vec![false; n];
    for (k, &i) in candidates.iter().enumerate() {
        open[i] = ahead[k] && behind[k];
    }
    Ok((open, traced))
}

/// The pixels with headroom under their top layer, each with the lowest height its probe may
/// leave from, its own probe's height and the highest (in pixel order; scanned in parallel
/// runs of pixels).
fn headroom(layers: &Layers) -> (Vec<usize>, Vec<[f32; 3]>) {
    let n = layers.first.len();
    let chunk = 1 << 15;
    let found: Vec<Vec<(usize, [f32; 3])>> = (0..n.div_ceil(chunk))
        .into_par_iter()
        .map(|c| {
            (c * chunk..n.min((c + 1) * chunk))
                .filter(|&i| !layers.first[i].miss())
                .filter_map(|i| match layers.layer(i) {
                    (underside, Some((y, h)))
                        if underside - y >= HEADROOM - MARGIN && !layers.faces.of(&h).back =>
                    {
                        let quarter = 0.25 * HEADROOM;
                        Some((
                            i,
                            [y + quarter, probe_height(underside, y), underside - quarter],
                        ))
                    }
                    _ => None,
                })
                .collect()
        })
        .collect();
    let total = found.iter().map(Vec::len).sum();
    let (mut candidates, mut window) = (Vec::with_capacity(total), Vec::with_capacity(total));
    for (i, w) in found.into_iter().flatten() {
        candidates.push(i);
        window.push(w);
    }
    (candidates, window)
}

/// Steps per metre of the probes' heights.
const PROBE_STEPS: f32 = 64.0;

/// The height a probe leaves from in headroom between `y` and `underside` (at least
/// [`HEADROOM`] apart): the middle, on a 1/64 m grid so that the pixels of one room share it
/// bit for bit (their heights differ in the last bits where a floor or ceiling is not flat in
/// `f32`), and share probes.
fn probe_height(underside: f32, y: f32) -> f32 {
    (0.5 * (underside + y) * PROBE_STEPS).round() / PROBE_STEPS
}

/// The candidates in probe-line order, cut into the blocks that share probes
/// ([`Probe::open_both`]): `order` lists candidate numbers line by line, each line in order
/// along [`SIDEWAYS`]; `at` holds each entry's position along its line and `window` its
/// candidate's window (entries in `order` are read in turn, not candidates at random);
/// `blocks` are the ranges of `order` on one line within one run of [`BLOCK`] positions.
/// Lines are cut at every [`BLOCK`] positions (`3 * BLOCK` rows): each such stripe of rows
/// is sorted on its own, in parallel and within a cache's reach.
struct Lines {
    order: Vec<u32>,
    at: Vec<u32>,
    window: Vec<[f32; 3]>,
    blocks: Vec<(usize, usize)>,
}

impl Lines {
    /// Pixel `(c, r)` lies on the line of `(c + 4, r + 3)`, at position `r / 3`.
    fn new(candidates: &[usize], window: &[[f32; 3]], width: usize, rows: usize) -> Lines {
        let m = candidates.len();
        let mut out = Lines {
            order: vec![0; m],
            at: vec![0; m],
            window: vec![[0.0; 3]; m],
            blocks: Vec::new(),
        };
        // Each stripe's entries are its candidates, so it fills their range of the lists.
        let stripe = 3 * BLOCK;
        let mut parts = Vec::new();
        let (mut order, mut at, mut win) =
            (&mut out.order[..], &mut out.at[..], &mut out.window[..]);
        let mut k0 = 0;
        for j in 0..rows.div_ceil(stripe) {
            let k1 = candidates.partition_point(|&i| i < (j + 1) * stripe * width);
            let (o, rest_o) = std::mem::take(&mut order).split_at_mut(k1 - k0);
            let (a, rest_a) = std::mem::take(&mut at).split_at_mut(k1 - k0);
            let (w, rest_w) = std::mem::take(&mut win).split_at_mut(k1 - k0);
            parts.push((k0..k1, o, a, w));
            (order, at, win, k0) = (rest_o, rest_a, rest_w, k1);
        }
        let blocks: Vec<Vec<(usize, usize)>> = (parts.into_par_iter())
            .map(|(ks, o, a, w)| {
                let k0 = ks.start;
                stripe_lines((&candidates[ks.clone()], &window[ks], k0), width, (o, a, w))
            })
            .collect();
        out.blocks = blocks.concat();
        out
    }
}

/// The lines of one stripe of `3 * BLOCK` rows ([`Lines::new`]): its candidates, numbers `k0..`
/// (row-major, so each line comes out in order), by a counting sort by line into their range
/// of the lists (`order`, `at`, `window`); each line is one block, whose range it returns.
fn stripe_lines(
    (candidates, window, k0): (&[usize], &[[f32; 3]], usize),
    width: usize,
    (order, at, win): (&mut [u32], &mut [u32], &mut [[f32; 3]]),
) -> Vec<(usize, usize)> {
    // A line's place within the stripe: `c - 4 (r / 3)`, kept from going below zero.
    let span = width + 4 * BLOCK;
    let place = |i: usize| {
        let (c, r) = (i % width, i / width);
        (r % 3) * span + c + 4 * (BLOCK - 1) - 4 * (r / 3 % BLOCK)
    };
    let mut start = vec![0u32; 3 * span + 1];
    for &i in candidates {
        start[place(i) + 1] += 1;
    }
    let mut blocks = Vec::new();
    for l in 1..start.len() {
        if start[l] > 0 {
            let first = k0 + start[l - 1] as usize;
            blocks.push((first, first + start[l] as usize));
        }
        start[l] += start[l - 1];
    }
    for (k, (&i, w)) in candidates.iter().zip(window).enumerate() {
        let s = &mut start[place(i)];
        let e = *s as usize;
        *s += 1;
        order[e] = (k0 + k) as u32;
        at[e] = (i / width / 3) as u32;
        win[e] = *w;
    }
    blocks
}

/// The sideways probes over a grid's candidate pixels (`candidates`), in probe-line order
/// (`lines`, with each candidate's window: the lowest height its probe may leave from, its own
/// probe's height and the highest).
struct Probe<'a> {
    grid: &'a Columns,
    candidates: &'a [usize],
    lines: Lines,
    reach: f32,
}

impl Probe<'_> {
    /// Whether the probe from each candidate along `SIDEWAYS` and along `-SIDEWAYS` meets
    /// nothing or a front face first, and how many rays were traced.
    ///
    /// Candidates on one probe line share probes. The line is cut into blocks of [`BLOCK`]
    /// pixels; the first candidate of a block met going along the probe is probed (the
    /// anchor), at its own height. The later candidates of the block whose headroom holds that
    /// height in its middle half lie under the anchor's probe: where the anchor met its first
    /// face farther on than such a candidate, plus a millimetre, a probe from the candidate at
    /// that height meets the same face first (exactly so but for the last bits of a line
    /// through an edge), and the candidate takes the anchor's answer. The others are settled
    /// the same way in up to `rounds` batches (both directions share each batch), the first
    /// unsettled candidate of a block being the next anchor; the last batch probes every
    /// candidate still unsettled.
    fn open_both(
        &self,
        engine: &Engine,
        scene: &Scene,
        rounds: usize,
        all: Mask,
    ) -> Result<([Vec<bool>; 2], usize)> {
        let mut sweeps = [1, -1].map(|sign| Sweep::new(sign, &self.lines));
        let mut traced = 0;
        for round in 1..=rounds {
            let mut rays = Vec::new();
            let [a, b] = &mut sweeps;
            rayon::join(
                || a.plan(self, round == rounds),
                || b.plan(self, round == rounds),
            );
            for w in &sweeps {
                rays.extend(self.rays(&w.probed, w.sign));
            }
            if rays.is_empty() {
                break;
            }
            traced += rays.len();
            let hits = engine.closest_hit_records(scene, &rays, all)?;
            let (ahead, behind) = hits.split_at(sweeps[0].probed.len());
            for (w, hits) in sweeps.iter_mut().zip([ahead, behind]) {
                w.settle(self, hits);
            }
        }
        // From entries of the lines back to candidates.
        let [a, b] = sweeps.map(|w| {
            let mut open = vec![false; w.open.len()];
            for (&k, o) in self.lines.order.iter().zip(w.open) {
                open[k as usize] = o == Some(true);
            }
            open
        });
        Ok(([a, b], traced))
    }

    /// The probes from the candidates of entries `probed` along `sign * SIDEWAYS`, each at
    /// its own probe height.
    fn rays<'a>(&'a self, probed: &'a [u32], sign: i64) -> impl Iterator<Item = Ray> + 'a {
        let dir = SIDEWAYS * sign as f32;
        probed.iter().map(move |&s| {
            let k = self.lines.order[s as usize];
            let c = self.grid.centre(self.candidates[k as usize]);
            let mid = self.lines.window[s as usize][1];
            Ray::new(Vec3::new(c.x, mid, c.y), dir, self.reach)
        })
    }
}

/// The probes of one direction ([`Probe::open_both`]): each candidate's answer once settled
/// (by entry of [`Lines::order`]), the blocks that may still hold unsettled candidates
/// (`pending`, indices into [`Lines::blocks`]), and this batch's asks (per unsettled entry:
/// the probe it takes, as an index into `probed`, and how many pixels lie between) and probed
/// entries.
struct Sweep {
    sign: i64,
    open: Vec<Option<bool>>,
    pending: Vec<u32>,
    asks: Vec<(u32, u32, u32)>,
    probed: Vec<u32>,
}

impl Sweep {
    fn new(sign: i64, lines: &Lines) -> Sweep {
        Sweep {
            sign,
            open: vec![None; lines.order.len()],
            pending: (0..lines.blocks.len() as u32).collect(),
            asks: Vec::new(),
            probed: Vec::new(),
        }
    }

    /// Chooses each unsettled candidate's anchor (each its own in the `last` batch): the first
    /// unsettled candidate of its block, going along the probe, whose probe height lies in its
    /// window. Blocks found settled leave `pending`.
    fn plan(&mut self, p: &Probe, last: bool) {
        let Lines {
            at, window, blocks, ..
        } = &p.lines;
        self.asks.clear();
        self.probed.clear();
        // The block's unsettled entries going along the probe, and the probe each anchor
        // takes once asked for.
        let mut live: Vec<usize> = Vec::with_capacity(BLOCK);
        let mut probe: Vec<u32> = Vec::with_capacity(BLOCK);
        let mut pending = std::mem::take(&mut self.pending);
        pending.retain(|&b| {
            let (b0, b1) = blocks[b as usize];
            live.clear();
            for x in 0..b1 - b0 {
                let s = if self.sign > 0 { b0 + x } else { b1 - 1 - x };
                if self.open[s].is_none() {
                    live.push(s);
                }
            }
            probe.clear();
            probe.resize(live.len(), u32::MAX);
            for (x, &s) in live.iter().enumerate() {
                let [lo, _, hi] = window[s];
                let y = match last {
                    true => x,
                    false => (live[..x].iter())
                        .position(|&a| (lo..=hi).contains(&window[a][1]))
                        .unwrap_or(x),
                };
                if probe[y] == u32::MAX {
                    probe[y] = self.probed.len() as u32;
                    self.probed.push(live[y] as u32);
                }
                self.asks
                    .push((s as u32, probe[y], at[s].abs_diff(at[live[y]])));
            }
            !live.is_empty()
        });
        self.pending = pending;
    }

    /// Settles the entries asked from the probes' `hits` (one per probed entry).
    fn settle(&mut self, p: &Probe, hits: &[HitRecord]) {
        // Distance between neighbouring pixels of a probe line.
        let step = 5.0 * p.grid.frame.cell;
        for &(s, j, steps) in &self.asks {
            let h = &hits[j as usize];
            let clear = steps as f32 * step * (1.0 + 1e-5) + 1e-3;
            if steps == 0 || is_miss(h) || h.t > clear {
                self.open[s as usize] = Some(h.back == 0);
            }
        }
    }
}

/// Fills every pixel with a top surface: the drawn surface (the one under an open overhang,
/// else the top), its height and normal, what covers it, and whether it is water.
fn classify(out: &mut Underlay, layers: &Layers, open: &[bool]) {
    let first = &layers.first;
    (
        out.elevation.par_iter_mut(),
        out.normal.par_iter_mut(),
        out.surface.par_iter_mut(),
        out.cover.par_iter_mut(),
        out.top.par_iter_mut(),
    )
        .into_par_iter()
        .enumerate()
        .filter(|(i, _)| !first[*i].miss())
        .for_each(|(i, (elevation, normal, surface, cover, top))| {
            let t = &first[i];
            let top_y = layers.sky - t.t;
            let foliage_top = layers.faces.of(t).flags == MaterialFlags::BLOCKS_SIGHT;
            let (drawn_y, drawn) = match layers.layer(i).1 {
                Some((y, h)) if open[i] => {
                    *cover = if foliage_top {
                        Cover::Foliage
                    } else {
                        Cover::Overhang
                    };
                    (y, h)
                }
                _ => {
                    if foliage_top {
                        *cover = Cover::Foliage;
                    }
                    (top_y, *t)
                }
            };
            let Face {
                normal: up,
                flags: f,
                ..
            } = *layers.faces.of(&drawn);
            *top = top_y;
            *elevation = drawn_y;
            *normal = Vec3::from(up);
            *surface = if f.contains(MaterialFlags::WALKABLE) && !f.intersects(MaterialFlags::SOLID)
            {
                Surface::Water
            } else {
                Surface::Ground
            };
        });
}

/// The kernels turn a hit's normal to face the ray (up, here); `back` says the triangle faced
/// down, so the ray was leaving a closed solid.
fn is_miss(h: &HitRecord) -> bool {
    crate::trace::cpu::is_miss(h)
}

/// Marks as [`Surface::Wall`] every pixel whose drawn surface is steeper than [`STEEP`] or
/// rises more than [`STEP`] above the lowest drawn surface within [`WALL_REACH`] (a square
/// neighbourhood, at least one pixel): a separable running minimum, rows then columns.
fn mark_walls(u: &mut Underlay) -> Result<()> {
    let (w, h) = (u.width, u.height);
    let reach = ((WALL_REACH / u.pixel).round() as usize).max(1);
    let ground = |y: f32| if y.is_finite() { y } else { f32::INFINITY };
    let fix = "draw a smaller picture";
    let mut rows = limits::vec_filled(w * h, f32::INFINITY, "underlay", fix)?;
    rows.par_chunks_mut(w)
        .zip(u.elevation.par_chunks(w))
        .for_each_init(Vec::new, |line, (out, elevation)| {
            line.clear();
            line.extend(elevation.iter().map(|&y| ground(y)));
            // The running minimum as the row shifted by up to `reach` each way.
            for d in 0..=reach.min(w - 1) {
                for (o, &y) in out.iter_mut().zip(&line[d..]) {
                    *o = o.min(y);
                }
                for (o, &y) in out[d..].iter_mut().zip(line.iter()) {
                    *o = o.min(y);
                }
            }
        });
    // Columns, walked row by row so every pass reads memory in order.
    let mut low = limits::vec_filled(w * h, f32::INFINITY, "underlay", fix)?;
    low.par_chunks_mut(w).enumerate().for_each(|(r, out)| {
        for k in r.saturating_sub(reach)..=(r + reach).min(h - 1) {
            for (o, &m) in out.iter_mut().zip(&rows[k * w..][..w]) {
                *o = o.min(m);
            }
        }
    });
    let min_normal_y = STEEP.cos();
    let (elevation, normal) = (&u.elevation, &u.normal);
    u.surface.par_iter_mut().enumerate().for_each(|(i, s)| {
        let rise = elevation[i] - low[i];
        if *s != Surface::Empty && (rise > STEP + MARGIN || normal[i].y < min_normal_y) {
            *s = Surface::Wall;
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::procedural;

    /// Every candidate probed on its own, both ways, from its own probe height: the answer the
    /// shared probes must give.
    fn one_by_one(
        engine: &Engine,
        scene: &Scene,
        grid: &Columns,
        layers: &Layers,
        reach: f32,
        all: Mask,
    ) -> (Vec<bool>, usize) {
        let n = layers.first.len();
        let candidates: Vec<(usize, f32)> = (0..n)
            .filter(|&i| !layers.first[i].miss())
            .filter_map(|i| match layers.layer(i) {
                (u, Some((y, h))) if u - y >= HEADROOM - MARGIN && !layers.faces.of(&h).back => {
                    Some((i, probe_height(u, y)))
                }
                _ => None,
            })
            .collect();
        let rays: Vec<Ray> = (candidates.iter())
            .flat_map(|&(i, mid)| {
                let c = grid.centre(i);
                let o = Vec3::new(c.x, mid, c.y);
                [Ray::new(o, SIDEWAYS, reach), Ray::new(o, -SIDEWAYS, reach)]
            })
            .collect();
        let hits = engine.closest_hit_records(scene, &rays, all).unwrap();
        let mut open = vec![false; n];
        for (&(i, _), h) in candidates.iter().zip(hits.chunks(2)) {
            open[i] = h.iter().all(|h| is_miss(h) || h.back == 0);
        }
        (open, rays.len())
    }

    /// Shared probes settle every pixel as probing each on its own does, on levels the
    /// sharing was not tuned on (two villages, an urban block, `dungeon.obj` where found),
    /// with a fraction of the rays.
    #[test]
    fn shared_probes_answer_as_probes_one_by_one() {
        let engine = Engine::cpu();
        let mut scenes = vec![
            ("village 2", procedural::village(2, 1)),
            ("village 5", procedural::village(5, 1)),
            ("urban 3", procedural::urban(3, 1)),
        ];
        let data = std::env::var("SIGHTLINE_DATA")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data").into());
        let path = std::path::Path::new(&data).join("dungeon.obj");
        if let Ok((level, _)) = crate::scene::load_obj(&path, &Default::default()) {
            scenes.push(("dungeon.obj", level));
        }
        let all = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
        for (name, scene) in scenes {
            let (lo, hi) = scene.bounds().unwrap();
            let centre = (lo + hi) * 0.5;
            let side = 512;
            let grid = Columns {
                frame: DownGrid {
                    origin: Vec2::new(centre.x - 40.0, centre.z - 40.0),
                    cell: 80.0 / side as f32,
                    width: side,
                    floor: lo.y - 1.0,
                },
                sky: hi.y + 1.0,
            };
            let layers = Layers::trace(&engine, &scene, &grid, side * side, all).unwrap();
            let reach = (hi - lo).length() + 1.0;
            let (want, each) = one_by_one(&engine, &scene, &grid, &layers, reach, all);
            let open_pixels = want.iter().filter(|&&o| o).count();
            assert!(open_pixels > 1000, "{name}: only {open_pixels} open pixels");
            for rounds in [2, ROUNDS] {
                let (open, probes) =
                    open_headroom(&engine, &scene, (&grid, &layers), reach, all, rounds).unwrap();
                let differ = (0..open.len()).filter(|&i| open[i] != want[i]).count();
                eprintln!(
                    "{name}, {rounds} batches: {open_pixels} open pixels, {probes} probes (one \
                     by one {each}), {differ} differ"
                );
                assert_eq!(differ, 0, "{name}: {differ} pixels settled otherwise");
                assert!(2 * probes < each, "{name}: {probes} probes of {each}");
            }
        }
    }
}
