//! The intervis measurement of Darken, McCue and Guerrero ("Visibility
//! Precomputation"): render an observer's view, draw the target with the stencil operations of
//! the paper, and reduce its padded bounding box to exposed, occluded and background pixels
//! and their brightness.
//!
//! For each ordered pair (observer eye, target feet, posture):
//!
//! 1. **Views.** Pairs are grouped by observer. Each group is covered by square views of
//!    `fov_degrees` and `resolution` ([`IntervisParams`]): a view looks from the eye at the
//!    centre of the first unplaced target's bounds (so that target is centred), and every
//!    later target of the same observer whose padded box fits entirely inside it joins it
//!    (Darken, McCue and Guerrero render once per observer and sector; here a view fixes the
//!    pixel grid, and each target's box of it is rendered, see the GPU below). A target's pixel
//!    count therefore depends a little on where in the view it lands (a pinhole view stretches
//!    off-axis targets by up to `1 / cos^3` of the off-axis angle);
//!    [`IntervisRecord::solid_angle`] does not. A target whose box would exceed the pixel
//!    budget ([`IntervisParams::max_box_pixels`]) gets a view of its own at a lower resolution.
//! 2. **Target.** [`humanoid`] in the pair's posture, `target_height` tall, feet at the
//!    target point, turned to face the observer (prone: lying along the line toward the
//!    observer, head first).
//! 3. **Pixels.** Pixel `(i, j)` (column, row from the top) of a view is the ray from the eye
//!    through its centre. Along it: the nearest scene triangle of the measurement's mask
//!    ([`IntervisParams::mask`], sight by default) and the nearest target triangle. The stencil
//!    value of Darken, McCue and Guerrero (clear 0; each target fragment: 127 where it passes the depth test,
//!    +1 where it fails) is `>= 127` where the target is nearer than (or as near as) the
//!    scene: *exposed*; `1..=126` where only the scene is nearer: *occluded*; 0 where the ray
//!    misses the target: plain *background*. Surfaces nearer than [`NEAR`] are not drawn.
//! 4. **Shading.** A pixel's grey level is `albedo * (ambient + (1 - ambient) * max(0, n .
//!    sun))` of the surface it shows (`n`: the triangle's geometric normal turned toward the
//!    eye; the target's albedo is `target_albedo`, the scene's its material's), or `sky` where
//!    nothing is hit. Brightness is that grey level (linear luminance; Darken, McCue and Guerrero sums
//!    `r^2 + g^2 + b^2` of an RGB image, which for grey is `3 c^2`: we keep luminance so that
//!    `C` is the Weber contrast the detection model expects).
//! 5. **Box and reduction** (Darken, McCue and Guerrero, `GetBoundingBox`): the target's box is the range of
//!    pixels whose centres lie within its projected bounds (the projection of its vertices;
//!    the full view when it crosses the near plane), padded by `padding / 2` of its size on
//!    each side (rounded up, clamped to the view). Over the box: `n_t` = exposed pixels, `n_o`
//!    = occluded, `n_b` = pixels with stencil `< 127` (Darken, McCue and Guerrero's definition: background
//!    includes the occluded target pixels, which show the occluder), `B_t` the mean
//!    brightness of exposed pixels, `B_b` the mean of the `n_b` others, `C = |B_t - B_b| /
//!    B_b`, `O = n_o / (n_t + n_o)`, and the exposed solid angle: the sum over exposed pixels
//!    of `f / (f^2 + x^2 + y^2)^(3/2)` steradians (`f` the focal length in pixels, `x, y`
//!    the pixel centre's offset from the view centre). See [`IntervisRecord`] for the
//!    degenerate cases.
//!
//! - GPU ([`measure`] on a GPU engine, `gpu.rs`, `atlas.rs`, `shaders/intervis_render.wgsl`,
//!   `shaders/intervis_reduce.wgsl`): the whole batch in one submission and one wait. Every
//!   target's box is a tile of an atlas (brightness, Depth24PlusStencil8); one render pass
//!   per atlas fill draws each tile's scene triangles (culled on the CPU to the box's frustum
//!   and to triangles that can cover a pixel centre, through one index buffer) and then every
//!   humanoid (one instanced draw per posture) with the stencil operations above; one compute
//!   workgroup per tile reduces its box. Only the 48-byte records come back.
//! - CPU twin ([`measure_ray_cast`], `cpu.rs`): the same views, boxes and shading by casting
//!   every pixel centre of every box: the scene through [`Engine::closest_hit`], the target
//!   through its own small BVH with the watertight test of `trace::cpu`.

mod atlas;
mod cpu;
mod encode;
mod gpu;
mod humanoid;
mod pass;
mod pipelines;
mod resources;

/// WGSL layout mirrors, for the layout tests; not part of the API.
#[doc(hidden)]
pub use gpu::{Light, Tile};
pub use humanoid::humanoid;
pub use pass::IntervisPass;

use super::IntervisRecord;
use crate::agent::Posture;
use crate::scene::{Mask, Mesh, Scene};
use crate::trace::{Hit, HitRecord, Occlusion, Ray, Segment};
use crate::{Engine, Error, Result};
use glam::{Affine3A, Quat, Vec2, Vec3};

/// Near plane of every view (metres): surfaces closer to the eye are not drawn.
pub const NEAR: f32 = 0.05;

/// Measurement settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntervisParams {
    /// Field of view of one (square) view, degrees, horizontal and vertical. Default 60: a
    /// pixel spans `fov / resolution` = 0.117 degrees (about 3.5 arc minutes, near the eye's
    /// detection acuity for small targets), a 1.8 m target 60 m away is 15 px tall.
    pub fov_degrees: f32,
    /// Side of a view in pixels. Default 512. Pixel counts scale with
    /// `(resolution / fov)^2`; the solid angle does not.
    pub resolution: u32,
    /// Direction toward the sun (need not be unit length). Default `(0.3, 0.8, 0.5)`:
    /// mid-morning, from the south-east-ish, 55 degrees high.
    pub sun: Vec3,
    /// Share of light that is ambient, 0..1. Default 0.35. With 1 every surface shows its
    /// albedo exactly (flat lighting).
    pub ambient: f32,
    /// Albedo of the target. Default 0.3 (olive drab cloth).
    pub target_albedo: f32,
    /// Brightness where a pixel sees nothing (sky). Default 0.8.
    pub sky: f32,
    /// Box padding as a fraction of the target's box size, split over both sides. Default
    /// 0.1 (Darken, McCue and Guerrero: "a 10 % padded bounding box").
    pub padding: f32,
    /// Standing height of the humanoid target, metres. Default 1.8.
    pub target_height: f32,
    /// Which scene triangles hide the target. Default [`Mask::SIGHT`] (being seen); a cover
    /// check passes [`Mask::FIRE`] (being shot at: glass hides nothing from sight but stops
    /// rounds, foliage the other way round).
    pub mask: Mask,
    /// Most pixels one target's padded box is measured with. Default 16,384 (a 128 x 128
    /// box). A target whose box at `resolution` would hold more (it stands close, or crosses
    /// the near plane), or whose box is wider or taller than [`MAX_BOX_SIDE`], is measured in
    /// its own view of the same direction at the largest lower resolution whose box fits, and
    /// its pixel counts (`exposed`, `occluded`, `background`, `box_pixels`) are scaled back by
    /// the ratio of pixel areas, so they stay in pixels of `resolution`; brightness, contrast,
    /// occlusion and solid angle need no scaling. A record with `box_pixels` over the budget
    /// was measured so. The cap bounds the cost of a pair on both backends; the error it brings
    /// is stated at [`MAX_BOX_PIXELS_ERROR`]. Set it to `resolution^2` (or more) for the
    /// uncapped measurement. 256..=16,777,216.
    pub max_box_pixels: u32,
}

/// Largest side, in pixels, of a box measured at full resolution (see
/// [`IntervisParams::max_box_pixels`]): the GPU's atlas tiles never exceed it.
pub const MAX_BOX_SIDE: u32 = 2048;

/// The error the pixel budget ([`IntervisParams::max_box_pixels`], default) brings, against
/// the uncapped measurement of the same pair, as the tests check it on `urban` and
/// `dungeon.obj` for capped pairs with at least 100 exposed pixels: `exposed` within this share
/// (plus 3 pixels of the coarse view, scaled: with 2, one `urban` pair exceeded it by 10%),
/// occlusion and contrast within this (absolute).
pub const MAX_BOX_PIXELS_ERROR: f32 = 0.05;

impl IntervisParams {
    /// The defaults (see each field).
    #[must_use]
    pub const fn standard() -> IntervisParams {
        IntervisParams {
            fov_degrees: 60.0,
            resolution: 512,
            sun: Vec3::new(0.3, 0.8, 0.5),
            ambient: 0.35,
            target_albedo: 0.3,
            sky: 0.8,
            padding: 0.1,
            target_height: 1.8,
            mask: Mask::SIGHT,
            max_box_pixels: 16_384,
        }
    }

    /// Focal length in pixels.
    fn focal(&self) -> f32 {
        focal(self.resolution, self.fov_degrees)
    }
}

/// Focal length in pixels of a square view `resolution` pixels wide spanning `fov_degrees`.
fn focal(resolution: u32, fov_degrees: f32) -> f32 {
    resolution as f32 * 0.5 / (fov_degrees.to_radians() * 0.5).tan()
}

impl Default for IntervisParams {
    fn default() -> Self {
        Self::standard()
    }
}

/// One ordered pair: an observer's eye looking for a target standing (or crouching, or lying)
/// at `target`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntervisPair {
    /// The observer's eye (metres).
    pub observer: Vec3,
    /// The target's feet (metres).
    pub target: Vec3,
    pub posture: Posture,
}

/// Largest number of pairs one call accepts.
pub const MAX_PAIRS: usize = 1 << 24;

/// Pairs per [`measure`] call that keep a stream of calls (a table's precomputation) busy on
/// `engine` and its progress moving: on a GPU the most a fill's reduction dispatch takes
/// (`atlas::FILL_JOBS`) twice over, so a call is at most a few atlas fills in one submission;
/// on the CPU 4,096 per thread (the twin's cost per pair is bounded by the pixel budget).
#[must_use]
pub fn pairs_per_call(engine: &Engine) -> usize {
    match engine.gpu() {
        Some(_) => 2 * atlas::FILL_JOBS,
        None => 4096 * rayon::current_num_threads(),
    }
}

/// Intervis records of `pairs`, in order: on the GPU when the engine has one (render and
/// stencil passes reduced by a compute pass, see the module docs), else the CPU twin
/// [`measure_ray_cast`]. The scene geometry is uploaded once per scene revision and mask (a
/// moved object re-uploads its tier only) and the pass's textures and buffers are reused by
/// the next call, so repeated calls upload only their pairs' jobs and views. The GPU path is an
/// [`IntervisPass`] prepared, encoded, submitted and read; a renderer can run those steps
/// itself to encode the measurement into its own command encoder.
pub fn measure(
    engine: &Engine,
    scene: &Scene,
    pairs: &[IntervisPair],
    params: &IntervisParams,
) -> Result<Vec<IntervisRecord>> {
    match engine.gpu() {
        Some(tracer) => {
            let pass = IntervisPass::prepare(tracer, scene, pairs, params)?;
            pass.run(tracer)?;
            pass.read(tracer)
        }
        None => measure_ray_cast(engine, scene, pairs, params),
    }
}

/// [`measure`] for several calls, each with its own parameters (a mask, a target height): on
/// the GPU every call's pass goes into one submission, so the whole set costs one wait.
pub fn measure_many(
    engine: &Engine,
    scene: &Scene,
    calls: &[(&[IntervisPair], IntervisParams)],
) -> Result<Vec<Vec<IntervisRecord>>> {
    Ok(measure_and_trace(engine, scene, calls, &Riders::default())?.0)
}

/// Tracing that rides in a measurement's submission ([`measure_and_trace`]): closest hits of
/// `rays` under `ray_mask`, and occlusion batches, each with its own mask.
#[derive(Clone, Copy, Debug)]
pub struct Riders<'a> {
    pub rays: &'a [Ray],
    pub ray_mask: Mask,
    pub segments: &'a [(&'a [Segment], Mask)],
}

impl Default for Riders<'_> {
    fn default() -> Self {
        Riders {
            rays: &[],
            ray_mask: Mask::FIRE,
            segments: &[],
        }
    }
}

/// The answers to [`Riders`]: one hit per ray, one [`Occlusion`] per batch, in order.
#[derive(Clone, Debug, Default)]
pub struct Traced {
    pub hits: Vec<Option<Hit>>,
    pub occluded: Vec<Occlusion>,
}

/// [`measure_many`] and the tracing of `riders` in one round trip: on the GPU the trace passes
/// and every call's intervis pass go into one submission and cost one wait; on the CPU each
/// part runs in turn.
pub fn measure_and_trace(
    engine: &Engine,
    scene: &Scene,
    calls: &[(&[IntervisPair], IntervisParams)],
    riders: &Riders,
) -> Result<(Vec<Vec<IntervisRecord>>, Traced)> {
    let Some(tracer) = engine.gpu() else {
        let records = calls
            .iter()
            .map(|(pairs, params)| measure_ray_cast(engine, scene, pairs, params))
            .collect::<Result<_>>()?;
        let traced = Traced {
            hits: engine.closest_hit(scene, riders.rays, riders.ray_mask)?,
            occluded: engine.occluded_many(scene, riders.segments)?,
        };
        return Ok((records, traced));
    };
    let hits = tracer.prepare_closest_hit(scene, riders.rays, riders.ray_mask)?;
    let mut trace = vec![hits];
    for &(segments, mask) in riders.segments {
        trace.push(tracer.prepare_occluded(scene, segments, mask)?);
    }
    let passes = calls
        .iter()
        .map(|(pairs, params)| IntervisPass::prepare(tracer, scene, pairs, params))
        .collect::<Result<Vec<_>>>()?;
    let encode = |e: &mut wgpu::CommandEncoder| {
        for p in &passes {
            p.encode(tracer, e);
        }
    };
    let more: Option<crate::gpu::MoreWork> = (!passes.is_empty()).then_some((pass::OP, &encode));
    tracer.run_all_with(&trace, more)?;
    // One wait: for the trace passes when they have GPU work, else for the first drawing
    // intervis pass; every other read finds the submission done.
    let mut waited = trace.iter().any(crate::gpu::TracePass::has_work);
    tracer.map_passes(&trace)?;
    let records = passes
        .iter()
        .map(|p| {
            let r = p.read_after(tracer, !waited);
            waited |= p.draws();
            r
        })
        .collect::<Result<Vec<_>>>()?;
    let hits = trace[0]
        .read_hits(tracer)?
        .iter()
        .map(HitRecord::to_hit)
        .collect();
    let occluded = trace[1..]
        .iter()
        .map(|p| p.read_occlusion(tracer))
        .collect::<Result<_>>()?;
    Ok((records, Traced { hits, occluded }))
}

/// The CPU twin of [`measure`]: the same views, target meshes, boxes and shading, every box
/// pixel ray cast (scene hits through `engine`, so a GPU engine traces the scene rays on the
/// GPU; the target through a BVH of its mesh on the CPU).
pub fn measure_ray_cast(
    engine: &Engine,
    scene: &Scene,
    pairs: &[IntervisPair],
    params: &IntervisParams,
) -> Result<Vec<IntervisRecord>> {
    validate(pairs, params)?;
    let plan = Plan::new(pairs, params);
    cpu::measure(engine, scene, &plan, params)
}

/// Exposed pixels per pair, each pair measured in a view of its own: equal to the `exposed`
/// count of [`measure_ray_cast`] given that pair alone, so a pair's count never depends on
/// the others in the call. The scene is traced only on the target's pixels and only as far as
/// the target, so a hidden target costs far fewer rays. What a search that rejects any
/// exposed spot needs on the CPU.
pub fn exposed_ray_cast(
    engine: &Engine,
    scene: &Scene,
    pairs: &[IntervisPair],
    params: &IntervisParams,
) -> Result<Vec<u32>> {
    validate(pairs, params)?;
    let plan = Plan::with_views(pairs, params, false);
    cpu::exposed(engine, scene, &plan, params)
}

fn validate(pairs: &[IntervisPair], p: &IntervisParams) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidInput(m));
    if pairs.len() > MAX_PAIRS {
        return bad(format!(
            "{} pairs in one call, over the limit of {MAX_PAIRS}; split the batch",
            pairs.len()
        ));
    }
    if let Some((i, q)) = pairs
        .iter()
        .enumerate()
        .find(|(_, q)| !q.observer.is_finite() || !q.target.is_finite())
    {
        return bad(format!(
            "pair {i} (observer {}, target {}) is not finite; pass X,Y,Z in metres",
            q.observer, q.target
        ));
    }
    if !(p.fov_degrees.is_finite() && p.fov_degrees > 0.0 && p.fov_degrees < 179.0) {
        return bad(format!(
            "fov_degrees {} must be in (0, 179) degrees (default 60)",
            p.fov_degrees
        ));
    }
    if p.resolution == 0 || p.resolution > 16384 {
        return bad(format!(
            "resolution {} must be 1..=16384 pixels (default 512)",
            p.resolution
        ));
    }
    if !(p.sun.is_finite() && p.sun.length_squared() > 0.0) {
        return bad(format!(
            "sun direction {} must be finite and non-zero",
            p.sun
        ));
    }
    let unit = |x: f32| (0.0..=1.0).contains(&x);
    if !(unit(p.ambient) && unit(p.target_albedo) && p.sky.is_finite() && p.sky >= 0.0) {
        return bad(format!(
            "ambient {} and target_albedo {} must be in 0..1, sky {} finite and >= 0",
            p.ambient, p.target_albedo, p.sky
        ));
    }
    if !(p.padding.is_finite() && p.padding >= 0.0) {
        return bad(format!(
            "padding {} must be a finite fraction >= 0 (default 0.1)",
            p.padding
        ));
    }
    if !(256..=1 << 24).contains(&p.max_box_pixels) {
        return bad(format!(
            "max_box_pixels {} must be 256..=16777216 (default 16384; resolution^2 measures \
             every box whole)",
            p.max_box_pixels
        ));
    }
    if !(p.target_height.is_finite() && p.target_height > 0.0) {
        return bad(format!(
            "target_height {} must be a positive number of metres (default 1.8)",
            p.target_height
        ));
    }
    Ok(())
}

/// Grey level of a surface of `albedo` with normal `n` (facing the eye), under `params`'
/// light. The reduction shader's `shade` is the same expression.
#[must_use]
pub fn shade(albedo: f32, n: Vec3, params: &IntervisParams) -> f32 {
    let sun = params.sun.normalize();
    albedo * (params.ambient + (1.0 - params.ambient) * n.dot(sun).max(0.0))
}

/// A pinhole view: square, `resolution` pixels, looking along `forward`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct View {
    pub eye: Vec3,
    pub forward: Vec3,
    pub right: Vec3,
    pub up: Vec3,
    /// Focal length in pixels.
    pub focal: f32,
    pub resolution: u32,
}

impl View {
    fn looking_at(eye: Vec3, at: Vec3, params: &IntervisParams) -> View {
        let forward = (at - eye).normalize_or(Vec3::NEG_Z);
        let hint = if forward.y.abs() > 0.999 {
            Vec3::NEG_Z
        } else {
            Vec3::Y
        };
        let right = forward.cross(hint).normalize();
        let up = right.cross(forward);
        View {
            eye,
            forward,
            right,
            up,
            focal: params.focal(),
            resolution: params.resolution,
        }
    }

    /// Pixel coordinates (x right, y down, pixel `(i, j)` spans `i..i+1, j..j+1`) of `p`, or
    /// `None` when `p` is nearer than the near plane.
    fn project(&self, p: Vec3) -> Option<Vec2> {
        let d = p - self.eye;
        let z = d.dot(self.forward);
        if z < NEAR {
            return None;
        }
        let c = self.resolution as f32 * 0.5;
        Some(Vec2::new(
            c + self.focal * d.dot(self.right) / z,
            c - self.focal * d.dot(self.up) / z,
        ))
    }

    /// The ray through pixel `(i, j)`'s centre: origin on the near plane, direction with unit
    /// component along `forward` (so `t` is view depth minus `NEAR`).
    pub fn pixel_ray(&self, i: u32, j: u32) -> (Vec3, Vec3) {
        let c = self.resolution as f32 * 0.5;
        let a = (i as f32 + 0.5 - c) / self.focal;
        let b = (j as f32 + 0.5 - c) / self.focal;
        let dir = self.forward + self.right * a - self.up * b;
        (self.eye + dir * NEAR, dir)
    }
}

/// Pixel box `[x0, x1) x [y0, y1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PixelBox {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
}

impl PixelBox {
    pub fn pixels(&self) -> u32 {
        (self.x1 - self.x0) * (self.y1 - self.y0)
    }
}

/// One pair placed in a view.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Placed {
    /// Index into the caller's pairs.
    pub pair: usize,
    pub posture: Posture,
    /// The target's local-to-world transform (feet, turned to face the observer).
    pub model: Affine3A,
    /// The padded box; `None` when no pixel centre falls on the target's bounds.
    pub bbox: Option<PixelBox>,
    /// Pixels of `resolution` one pixel of this view stands for: 1, or more for a target
    /// measured at a lower resolution under the pixel budget.
    pub scale: f32,
}

/// The views of one call and the targets each harvests.
pub(crate) struct Plan {
    /// Target meshes per posture (index `Posture as usize`).
    pub meshes: [Mesh; 3],
    pub views: Vec<(View, Vec<Placed>)>,
}

impl Plan {
    fn new(pairs: &[IntervisPair], params: &IntervisParams) -> Plan {
        Plan::with_views(pairs, params, true)
    }

    /// A plan whose views each harvest the targets that fit (`shared`), or hold one target
    /// each: then a target's pixels depend on its pair alone, not on the others measured with
    /// it.
    fn with_views(pairs: &[IntervisPair], params: &IntervisParams, shared: bool) -> Plan {
        let meshes = Posture::ALL.map(|p| humanoid(p, params.target_height));
        // Local bounds corners per posture, for the cheap "fits in this view" test.
        let corners = meshes.each_ref().map(|m| {
            let (lo, hi) = m
                .positions
                .iter()
                .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(l, h), &p| {
                    (l.min(p), h.max(p))
                });
            [0, 1, 2, 3, 4, 5, 6, 7].map(|i: u32| {
                Vec3::new(
                    if i & 1 == 1 { hi.x } else { lo.x },
                    if i & 2 == 2 { hi.y } else { lo.y },
                    if i & 4 == 4 { hi.z } else { lo.z },
                )
            })
        });
        let mut plan = Plan {
            meshes,
            views: Vec::new(),
        };
        for (eye, members) in by_observer(pairs) {
            if shared {
                plan.place_group(pairs, params, &corners, eye, &members);
            } else {
                for m in members {
                    plan.place_group(pairs, params, &corners, eye, &[m]);
                }
            }
        }
        plan
    }

    /// Covers one observer's targets with views (see the module docs, step 1); a target over
    /// the pixel budget gets a view of its own at a lower resolution.
    fn place_group(
        &mut self,
        pairs: &[IntervisPair],
        params: &IntervisParams,
        corners: &[[Vec3; 8]; 3],
        eye: Vec3,
        members: &[usize],
    ) {
        let models: Vec<Affine3A> = members
            .iter()
            .map(|&i| target_transform(&pairs[i]))
            .collect();
        let mut placed = vec![false; members.len()];
        for first in 0..members.len() {
            if placed[first] {
                continue;
            }
            let p = &pairs[members[first]];
            let centre = world_centre(&corners[p.posture as usize], &models[first]);
            let view = View::looking_at(eye, centre, params);
            let mut harvested = Vec::new();
            for k in first..members.len() {
                let q = &pairs[members[k]];
                if placed[k]
                    || k != first && !fits(&view, &corners[q.posture as usize], &models[k], params)
                {
                    continue;
                }
                placed[k] = true;
                let mesh = &self.meshes[q.posture as usize];
                let mut t = Placed {
                    pair: members[k],
                    posture: q.posture,
                    model: models[k],
                    bbox: target_box(&view, mesh, &models[k], params),
                    scale: 1.0,
                };
                match t.bbox.filter(|b| over_budget(b, params)) {
                    Some(_) => {
                        let coarse = capped(&view, mesh, &mut t, params);
                        self.views.push((coarse, vec![t]));
                    }
                    None => harvested.push(t),
                }
            }
            if !harvested.is_empty() {
                self.views.push((view, harvested));
            }
        }
    }
}

/// Pairs grouped by observer (bit-exact eyes), in order of first appearance.
fn by_observer(pairs: &[IntervisPair]) -> Vec<(Vec3, Vec<usize>)> {
    let mut groups: Vec<(Vec3, Vec<usize>)> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for (i, q) in pairs.iter().enumerate() {
        let key = q.observer.to_array().map(f32::to_bits);
        let g = *index.entry(key).or_insert_with(|| {
            groups.push((q.observer, Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(i);
    }
    groups
}

fn over_budget(b: &PixelBox, params: &IntervisParams) -> bool {
    b.pixels() > params.max_box_pixels || b.x1 - b.x0 > MAX_BOX_SIDE || b.y1 - b.y0 > MAX_BOX_SIDE
}

/// `view` at the largest lower resolution where `t`'s box keeps to the budget; sets `t`'s box
/// and scale for it.
fn capped(view: &View, mesh: &Mesh, t: &mut Placed, params: &IntervisParams) -> View {
    let full = t.bbox.map_or(1, |b| b.pixels()) as f32;
    let mut res = ((view.resolution as f32 * (params.max_box_pixels as f32 / full).sqrt()) as u32)
        .clamp(1, view.resolution.saturating_sub(1).max(1));
    loop {
        let coarse = View {
            focal: focal(res, params.fov_degrees),
            resolution: res,
            ..*view
        };
        let bbox = target_box(&coarse, mesh, &t.model, params);
        if res == 1 || bbox.is_none_or(|b| !over_budget(&b, params)) {
            let ratio = view.resolution as f32 / res as f32;
            (t.bbox, t.scale) = (bbox, ratio * ratio);
            return coarse;
        }
        res -= (res / 32).max(1);
    }
}

/// `r` measured with pixels standing for `scale` pixels of the full resolution: the counts
/// scaled back (rounded; background is the box less the exposed pixels, as it is unscaled).
/// A pixel count measured at a lower resolution, as pixels of the full one.
pub(crate) fn scale_pixels(n: u32, scale: f32) -> u32 {
    if scale == 1.0 {
        return n;
    }
    (f64::from(n) * f64::from(scale)).round() as u32
}

pub(crate) fn scaled(r: IntervisRecord, scale: f32) -> IntervisRecord {
    if scale == 1.0 {
        return r;
    }
    let up = |n: u32| scale_pixels(n, scale);
    let (exposed, box_pixels) = (up(r.exposed), up(r.box_pixels));
    let background = box_pixels - exposed.min(box_pixels);
    IntervisRecord {
        exposed,
        occluded: up(r.occluded).min(background),
        background,
        box_pixels,
        ..r
    }
}

/// Feet at the target point, local +Z turned toward the observer (about +Y).
fn target_transform(q: &IntervisPair) -> Affine3A {
    let d = q.observer - q.target;
    let yaw = if d.x * d.x + d.z * d.z > 1e-12 {
        d.x.atan2(d.z)
    } else {
        0.0
    };
    Affine3A::from_rotation_translation(Quat::from_rotation_y(yaw), q.target)
}

fn world_centre(corners: &[Vec3; 8], model: &Affine3A) -> Vec3 {
    let (lo, hi) = corners
        .iter()
        .map(|&c| model.transform_point3(c))
        .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(l, h), p| {
            (l.min(p), h.max(p))
        });
    (lo + hi) * 0.5
}

/// Whether the padded box of a target with these local bounds corners lies inside `view`
/// without clamping (the bounds' corners enclose the mesh, so the mesh's box does too).
fn fits(view: &View, corners: &[Vec3; 8], model: &Affine3A, params: &IntervisParams) -> bool {
    let mut lo = Vec2::INFINITY;
    let mut hi = Vec2::NEG_INFINITY;
    for &c in corners {
        match view.project(model.transform_point3(c)) {
            Some(p) => {
                lo = lo.min(p);
                hi = hi.max(p);
            }
            None => return false,
        }
    }
    let pad = (hi - lo + 1.0) * (params.padding * 0.5) + 1.0;
    let r = view.resolution as f32;
    lo.x - pad.x >= 0.0 && lo.y - pad.y >= 0.0 && hi.x + pad.x <= r && hi.y + pad.y <= r
}

/// The padded pixel box of the target (see the module docs, step 5).
fn target_box(
    view: &View,
    mesh: &Mesh,
    model: &Affine3A,
    params: &IntervisParams,
) -> Option<PixelBox> {
    let res = view.resolution;
    let mut lo = Vec2::INFINITY;
    let mut hi = Vec2::NEG_INFINITY;
    for &v in &mesh.positions {
        match view.project(model.transform_point3(v)) {
            Some(p) => {
                lo = lo.min(p);
                hi = hi.max(p);
            }
            None => {
                // Crosses the near plane: the whole view.
                return Some(PixelBox {
                    x0: 0,
                    y0: 0,
                    x1: res,
                    y1: res,
                });
            }
        }
    }
    // Pixels whose centres lie in [lo, hi]: i with lo <= i + 0.5 <= hi.
    let first = (lo - 0.5).ceil();
    let last = (hi - 0.5).floor();
    if first.x > last.x || first.y > last.y || last.x < 0.0 || last.y < 0.0 {
        return None;
    }
    let r = res as f32;
    if first.x >= r || first.y >= r {
        return None;
    }
    let size = last - first + 1.0;
    let pad = (size * (params.padding * 0.5)).ceil();
    let a = (first - pad).max(Vec2::ZERO);
    let b = (last + pad + 1.0).min(Vec2::splat(r));
    Some(PixelBox {
        x0: a.x as u32,
        y0: a.y as u32,
        x1: b.x as u32,
        y1: b.y as u32,
    })
}

/// The reduction's running sums; [`Sums::combine`] is associative with identity
/// `Sums::default()`, the WGSL reduction combines the same fields.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sums {
    pub exposed: u32,
    pub occluded: u32,
    pub background: u32,
    pub target_brightness: f64,
    pub background_brightness: f64,
    pub solid_angle: f64,
}

impl Sums {
    pub fn combine(self, o: Sums) -> Sums {
        Sums {
            exposed: self.exposed + o.exposed,
            occluded: self.occluded + o.occluded,
            background: self.background + o.background,
            target_brightness: self.target_brightness + o.target_brightness,
            background_brightness: self.background_brightness + o.background_brightness,
            solid_angle: self.solid_angle + o.solid_angle,
        }
    }

    /// The record (mirrors `finish` in `shaders/intervis_reduce.wgsl`).
    pub fn finish(self, box_pixels: u32) -> IntervisRecord {
        let bt = if self.exposed > 0 {
            (self.target_brightness / f64::from(self.exposed)) as f32
        } else {
            0.0
        };
        let bb = if self.background > 0 {
            (self.background_brightness / f64::from(self.background)) as f32
        } else {
            0.0
        };
        let contrast = if self.exposed > 0 && bb > 0.0 {
            (bt - bb).abs() / bb
        } else {
            0.0
        };
        let seen = self.exposed + self.occluded;
        let occlusion = if seen > 0 {
            self.occluded as f32 / seen as f32
        } else {
            1.0
        };
        IntervisRecord {
            exposed: self.exposed,
            occluded: self.occluded,
            background: self.background,
            box_pixels,
            target_brightness: bt,
            background_brightness: bb,
            contrast,
            occlusion,
            solid_angle: self.solid_angle as f32,
            _pad: [0; 3],
        }
    }
}

/// Solid angle (sr) of pixel `(i, j)` of a view with focal length `focal` pixels.
pub(crate) fn pixel_solid_angle(i: u32, j: u32, focal: f32, resolution: u32) -> f32 {
    let c = resolution as f32 * 0.5;
    let x = i as f32 + 0.5 - c;
    let y = j as f32 + 0.5 - c;
    let r2 = focal * focal + x * x + y * y;
    focal / (r2 * r2.sqrt())
}
