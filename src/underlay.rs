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
//! sideways ray from the middle of the headroom settles it, since from inside a closed solid
//! the first face met is a back face.
//!
//! The passes are four batches whatever the size: every pixel, then the pixels with a top
//! surface, then those whose top was a solid's, then the sideways probes of the overhangs. No image type is involved: the command-line
//! tool turns an [`Underlay`] into colours.

use crate::scene::{Mask, MaterialFlags, Scene};
use crate::trace::{HitRecord, Ray};
use crate::{limits, Engine, Error, Result};
use glam::{Vec2, Vec3};

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
    let mut out = Underlay {
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
    };
    let Some((lo, hi)) = scene.bounds() else {
        return Ok(out);
    };
    let (sky, floor) = (hi.y + 1.0, lo.y - 1.0);
    let all = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
    let centre = |i: usize| crate::ground::cell_centre(origin, pixel, width, i);
    let down = |i: usize, y: f32| {
        let c = centre(i);
        Ray::new(Vec3::new(c.x, y, c.y), Vec3::NEG_Y, (y - floor).max(0.0))
    };

    // The top surface.
    let rays: Vec<Ray> = (0..n).map(|i| down(i, sky)).collect();
    let first = engine.closest_hit_down(scene, &rays, width, all)?;
    out.rays += rays.len();
    // What lies under it: from just below an open surface, or from inside a solid.
    let below = |y: f32| y - GAP - y.abs() * 1e-6;
    let lit: Vec<usize> = (0..n).filter(|&i| !is_miss(&first[i])).collect();
    let rays: Vec<Ray> = lit
        .iter()
        .map(|&i| down(i, below(sky - first[i].t)))
        .collect();
    let second = engine.closest_hit_down(scene, &rays, width, all)?;
    out.rays += rays.len();
    // Out of a solid's underside.
    let inside: Vec<usize> = (0..lit.len())
        .filter(|&k| !is_miss(&second[k]) && second[k].back != 0)
        .collect();
    let rays: Vec<Ray> = inside
        .iter()
        .map(|&k| down(lit[k], below(rays[k].origin[1] - second[k].t)))
        .collect();
    let third = engine.closest_hit_down(scene, &rays, width, all)?;
    out.rays += rays.len();

    let materials = scene.materials();
    let flags = |h: &HitRecord| materials[h.material as usize].flags;
    // Per lit pixel: the top layer's underside and the surface under it.
    let mut third_of = inside.iter().zip(&third).peekable();
    let layers: Vec<(f32, f32, Option<(f32, HitRecord)>)> = lit
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let top_y = sky - first[i].t;
            let start2 = below(top_y);
            match &second[k] {
                h if is_miss(h) => (top_y, top_y, None),
                h if h.back != 0 => {
                    let bottom = start2 - h.t;
                    let (_, h3) = third_of.next().expect("one third ray per solid");
                    let under = (!is_miss(h3)).then(|| (below(bottom) - h3.t, *h3));
                    (top_y, bottom, under)
                }
                h => (top_y, top_y, Some((start2 - h.t, *h))),
            }
        })
        .collect();
    // Headroom under a layer is open only if its middle is outside every closed solid: a
    // sideways ray from there first meets a front face. (Straight down alone cannot tell a
    // room under a roof from a wall standing on the floor under it when their faces touch.)
    let open_candidates: Vec<usize> = (0..lit.len())
        .filter(|&k| match layers[k].2 {
            Some((y, h)) => layers[k].1 - y >= HEADROOM && h.back == 0,
            None => false,
        })
        .collect();
    let reach = (hi - lo).length() + 1.0;
    let sideways = Vec3::new(0.8, 0.0, 0.6);
    let probes: Vec<Ray> = open_candidates
        .iter()
        .map(|&k| {
            let c = centre(lit[k]);
            let mid = 0.5 * (layers[k].1 + layers[k].2.expect("a candidate has a floor").0);
            Ray::new(Vec3::new(c.x, mid, c.y), sideways, reach)
        })
        .collect();
    let probed = engine.closest_hit_records(scene, &probes, all)?;
    out.rays += probes.len();
    let mut open = vec![false; lit.len()];
    for (&k, h) in open_candidates.iter().zip(&probed) {
        open[k] = is_miss(h) || h.back == 0;
    }

    for (k, &i) in lit.iter().enumerate() {
        let top = &first[i];
        let (top_y, _, under) = layers[k];
        let foliage_top = flags(top) == MaterialFlags::BLOCKS_SIGHT;
        let (drawn_y, drawn) = match under {
            Some((y, h)) if open[k] => {
                out.cover[i] = if foliage_top {
                    Cover::Foliage
                } else {
                    Cover::Overhang
                };
                (y, h)
            }
            _ => {
                if foliage_top {
                    out.cover[i] = Cover::Foliage;
                }
                (top_y, *top)
            }
        };
        let f = flags(&drawn);
        out.top[i] = top_y;
        out.elevation[i] = drawn_y;
        out.normal[i] = Vec3::from(drawn.normal);
        out.surface[i] =
            if f.contains(MaterialFlags::WALKABLE) && !f.intersects(MaterialFlags::SOLID) {
                Surface::Water
            } else {
                Surface::Ground
            };
    }
    debug_assert!(third_of.next().is_none());
    mark_walls(&mut out);
    Ok(out)
}

/// The kernels turn a hit's normal to face the ray (up, here); `back` says the triangle faced
/// down, so the ray was leaving a closed solid.
fn is_miss(h: &HitRecord) -> bool {
    crate::trace::cpu::is_miss(h)
}

/// Marks as [`Surface::Wall`] every pixel whose drawn surface is steeper than [`STEEP`] or
/// rises more than [`STEP`] above the lowest drawn surface within [`WALL_REACH`] (a square
/// neighbourhood, at least one pixel): a separable running minimum, rows then columns.
fn mark_walls(u: &mut Underlay) {
    let (w, h) = (u.width, u.height);
    let reach = ((WALL_REACH / u.pixel).round() as usize).max(1);
    let ground = |y: f32| if y.is_finite() { y } else { f32::INFINITY };
    let mut rows = vec![f32::INFINITY; w * h];
    for r in 0..h {
        let line = &u.elevation[r * w..][..w];
        for c in 0..w {
            let (a, b) = (c.saturating_sub(reach), (c + reach).min(w - 1));
            rows[r * w + c] = line[a..=b]
                .iter()
                .fold(f32::INFINITY, |m, &y| m.min(ground(y)));
        }
    }
    let min_normal_y = STEEP.cos();
    for c in 0..w {
        for r in 0..h {
            let i = r * w + c;
            if u.surface[i] == Surface::Empty {
                continue;
            }
            let (a, b) = (r.saturating_sub(reach), (r + reach).min(h - 1));
            let low = (a..=b).fold(f32::INFINITY, |m, k| m.min(rows[k * w + c]));
            if u.elevation[i] - low > STEP || u.normal[i].y < min_normal_y {
                u.surface[i] = Surface::Wall;
            }
        }
    }
}
