//! The CPU twin: every pixel centre of every target's padded box ray cast against the scene
//! (through the engine) and the target (a BVH of its world-space mesh, `trace::cpu::closest`),
//! classified and shaded exactly as the stencil pass and the reduction do.

use super::{pixel_solid_angle, scaled, shade, IntervisParams, PixelBox, Placed, Plan, Sums, View};
use crate::bvh::{Bvh, GpuTriangle};
use crate::intervis::IntervisRecord;
use crate::scene::{Scene, Tier};
use crate::trace::cpu::{closest_in, Fusion, RayPrep, STACK_SIZE};
use crate::trace::packet;
use crate::trace::{HitRecord, Ray, NO_HIT};
use crate::{Engine, Result};
use rayon::prelude::*;
use std::sync::{Arc, Mutex};

/// Scene rays per `closest_hit` call (bounds memory on large batches).
const RAYS_PER_CALL: usize = 1 << 21;

pub(super) fn measure(
    engine: &Engine,
    scene: &Scene,
    plan: &Plan,
    params: &IntervisParams,
) -> Result<Vec<IntervisRecord>> {
    let count = plan.views.iter().map(|(_, t)| t.len()).sum();
    let mut out = vec![Sums::default().finish(0); count];
    let albedo: Vec<f32> = scene.materials().iter().map(|m| m.albedo).collect();
    // One BVH per posture in the target's own frame; pixel rays go into that frame instead.
    let tiers = target_tiers(plan, params.target_height);
    let jobs = boxed(plan);
    for (start, end) in batches(&jobs) {
        let batch = &jobs[start..end];
        let mut rays = Vec::with_capacity(batch.iter().map(|j| j.2.pixels() as usize).sum());
        for (view, _, b) in batch {
            for j in b.y0..b.y1 {
                for i in b.x0..b.x1 {
                    let (o, d) = view.pixel_ray(i, j);
                    rays.push(Ray::new(o, d, f32::INFINITY));
                }
            }
        }
        let hits = engine.closest_hit_records(scene, &rays, params.mask)?;
        let mut offset = 0;
        let mut slices = Vec::with_capacity(batch.len());
        for (_, _, b) in batch {
            let n = b.pixels() as usize;
            slices.push(&hits[offset..offset + n]);
            offset += n;
        }
        let records: Vec<(usize, IntervisRecord)> = batch
            .par_iter()
            .zip(slices)
            .map(|((view, placed, b), hits)| {
                let tier = &tiers[placed.posture as usize];
                let sums = reduce_box(view, b, hits, tier, &placed.model, &albedo, params);
                (placed.pair, scaled(sums.finish(b.pixels()), placed.scale))
            })
            .collect();
        for (pair, r) in records {
            out[pair] = r;
        }
    }
    Ok(out)
}

/// Every placed target with a box, view by view.
fn boxed(plan: &Plan) -> Vec<(&View, &Placed, PixelBox)> {
    plan.views
        .iter()
        .flat_map(|(v, ts)| ts.iter().filter_map(move |t| t.bbox.map(|b| (v, t, b))))
        .collect()
}

/// `jobs` in runs (`start..end`) of at most [`RAYS_PER_CALL`] box pixels; a larger box goes
/// alone.
fn batches(jobs: &[(&View, &Placed, PixelBox)]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < jobs.len() {
        let mut end = start;
        let mut pixels = 0usize;
        while end < jobs.len()
            && (end == start || pixels + jobs[end].2.pixels() as usize <= RAYS_PER_CALL)
        {
            pixels += jobs[end].2.pixels() as usize;
            end += 1;
        }
        out.push((start, end));
        start = end;
    }
    out
}

/// How far past the target a pixel's scene ray reaches (relative): far enough that every
/// triangle nearer than the target passes the kernel's `t < t_max` test whatever its rounding,
/// and the nearest one found is compared with the target's distance exactly as [`measure`]
/// compares them.
const PAST_TARGET: f32 = 1.0 / 65_536.0;

/// Exposed pixels per pair, as [`measure`] counts them on the same plan: a box pixel is
/// exposed where its ray meets the target no farther than the scene. Only pixels on the
/// target are traced into the scene, and only up to the target (a little past), so a hidden
/// target costs a short closest hit per target pixel instead of an unbounded one per box
/// pixel. The nearest scene hit below the limit is the nearest of all whenever it lies before
/// the target, so every count equals `measure`'s. In the CPU backend's plain rounding, the
/// pixels blocked before the target's nearest depth are dropped first ([`open_pixels`]): a spot
/// behind cover, most of what a cover search measures, then costs no walk of the target's tree.
pub(super) fn exposed(
    engine: &Engine,
    scene: &Scene,
    plan: &Plan,
    params: &IntervisParams,
) -> Result<Vec<u32>> {
    let count = plan.views.iter().map(|(_, t)| t.len()).sum();
    let tiers = target_tiers(plan, params.target_height);
    let jobs = boxed(plan);
    // Packets trace as the CPU backend's closest hits do only in its plain rounding.
    let early = (engine.gpu().is_none() && engine.fusion() == Fusion::None).then(|| scene.tiers());
    let mut pixels = vec![0u32; count];
    for (start, end) in batches(&jobs) {
        // Per job, the scene rays of its pixels on the target and the target's distance on each
        // (less the pixels found hidden early).
        let on_target: Vec<(Vec<Ray>, Vec<f32>)> = jobs[start..end]
            .par_iter()
            .map(|(view, placed, b)| {
                let target = &tiers[placed.posture as usize];
                let Some(scene_tiers) = &early else {
                    return target_rays(view, box_pixels(b), target, placed);
                };
                let mask = params.mask.bits();
                let open = open_pixels(scene_tiers, view, b, target, placed, mask);
                let (rays, reach) = target_rays(view, open, target, placed);
                drop_hidden(scene_tiers, rays, reach, mask)
            })
            .collect();
        let rays: Vec<Ray> = on_target
            .iter()
            .flat_map(|(r, _)| r.iter().copied())
            .collect();
        let hits = engine.closest_hit_records(scene, &rays, params.mask)?;
        let mut offset = 0;
        for ((_, placed, _), (_, reach)) in jobs[start..end].iter().zip(&on_target) {
            let seen = hits[offset..offset + reach.len()]
                .iter()
                .zip(reach)
                .filter(|(s, &t)| s.triangle == NO_HIT || t <= s.t)
                .count();
            offset += reach.len();
            pixels[placed.pair] = super::scale_pixels(seen as u32, placed.scale);
        }
    }
    Ok(pixels)
}

/// How far before the target (relative) a scene triangle must lie for [`drop_hidden`].
const EARLY: f32 = 1.0 / 65_536.0;

/// `rays` and `reach` less the pixels hidden well before the target. Pixel rays go down the
/// scene's tree in packets (the same origins, directions and triangle test as the closest-hit
/// rays, each lane limited to `reach * (1 - EARLY)`); where a packet finds a triangle, its
/// distance rounds below the target's (the margin is far above the rounding of a product and
/// a quotient), so the nearest scene hit does too and the pixel is hidden. Only the other
/// pixels need the nearest hit: the counts are unchanged, and a hidden spot's pixels, most of
/// what a cover search measures, cost one shared walk per 16.
fn drop_hidden(
    tiers: &[&Tier],
    rays: Vec<Ray>,
    reach: Vec<f32>,
    mask: u32,
) -> (Vec<Ray>, Vec<f32>) {
    let preps: Vec<RayPrep> = rays
        .iter()
        .map(|r| RayPrep::new(r.origin(), r.dir()))
        .collect();
    let limits: Vec<f32> = reach.iter().map(|t| t * (1.0 - EARLY)).collect();
    let hidden = blocked(tiers, &preps, &limits, mask);
    unblocked(rays.into_iter().zip(reach), &hidden)
        .into_iter()
        .unzip()
}

/// The items whose bit in `bits` is clear.
fn unblocked<T>(items: impl IntoIterator<Item = T>, bits: &[u32]) -> Vec<T> {
    items
        .into_iter()
        .enumerate()
        .filter(|(k, _)| bits[k / 32] >> (k % 32) & 1 == 0)
        .map(|(_, item)| item)
        .collect()
}

/// The pixels of box `b` whose ray no scene triangle blocks well before the target's nearest
/// depth. A triangle a packet finds there lies nearer than any point of the target (with the
/// margins of [`drop_hidden`], relative to the depth), so the pixel is hidden whether or not
/// its ray meets the target: a spot hidden behind cover in front of it costs one shared walk
/// per 16 pixels and no walk of the target's tree.
fn open_pixels(
    tiers: &[&Tier],
    view: &View,
    b: &PixelBox,
    target: &Tier,
    placed: &Placed,
    mask: u32,
) -> Vec<(u32, u32)> {
    let pixels: Vec<(u32, u32)> = box_pixels(b).collect();
    let Some(depth) = nearest_depth(view, target, placed) else {
        return pixels;
    };
    // Pixel rays run `t = depth - NEAR` (see `View::pixel_ray`).
    let limit = (depth - super::NEAR) * (1.0 - EARLY) - depth * EARLY;
    if !(limit > 0.0) {
        return pixels;
    }
    let preps: Vec<RayPrep> = pixels
        .iter()
        .map(|&(i, j)| {
            let (o, d) = view.pixel_ray(i, j);
            RayPrep::new(o, d)
        })
        .collect();
    let hidden = blocked(tiers, &preps, &vec![limit; preps.len()], mask);
    unblocked(pixels, &hidden)
}

/// Bits of the rays a scene triangle matching `mask` blocks before each one's limit.
fn blocked(tiers: &[&Tier], rays: &[RayPrep], t_max: &[f32], mask: u32) -> Vec<u32> {
    let mut hidden = vec![0u32; rays.len().div_ceil(32)];
    let job = packet::Each {
        tiers,
        rays,
        t_max,
        mask,
    };
    packet::trace_each(&job, &mut [(0, 0, 0); STACK_SIZE], &mut hidden);
    hidden
}

/// The least view depth of the placed target's bounds (their eight corners), `None` for an
/// empty mesh.
fn nearest_depth(view: &View, target: &Tier, placed: &Placed) -> Option<f32> {
    let (lo, hi) = crate::bvh::root_bounds(&target.nodes)?;
    let corners = (0..8).map(|k| {
        let pick = |bit: usize, a: f32, b: f32| if k >> bit & 1 == 0 { a } else { b };
        glam::Vec3::new(
            pick(0, lo.x, hi.x),
            pick(1, lo.y, hi.y),
            pick(2, lo.z, hi.z),
        )
    });
    corners
        .map(|c| (placed.model.transform_point3(c) - view.eye).dot(view.forward))
        .reduce(f32::min)
}

/// Box `b`'s pixels, row by row.
fn box_pixels(b: &PixelBox) -> impl Iterator<Item = (u32, u32)> + '_ {
    (b.y0..b.y1).flat_map(move |j| (b.x0..b.x1).map(move |i| (i, j)))
}

/// The target's nearest hit on the world ray `(o, d)`, carried into the target's frame by
/// `to_local` (distances stay the world's): the one place both counts find it.
fn target_hit(
    target: &Tier,
    to_local: &glam::Affine3A,
    (o, d): (glam::Vec3, glam::Vec3),
    stack: &mut crate::trace::cpu::WalkStack,
) -> HitRecord {
    let mut t = HitRecord::MISS;
    let ray = RayPrep::new(to_local.transform_point3(o), to_local.transform_vector3(d));
    closest_in(target, &ray, f32::INFINITY, 1, &mut t, stack);
    t
}

/// The world rays of `pixels` (of one box) whose ray meets the target, each reaching a little past
/// it, and the target's distance on each (found as [`reduce_box`] finds it).
fn target_rays(
    view: &View,
    pixels: impl IntoIterator<Item = (u32, u32)>,
    target: &Tier,
    placed: &Placed,
) -> (Vec<Ray>, Vec<f32>) {
    let to_local = placed.model.inverse();
    let mut stack = [(0, 0, 0.0); STACK_SIZE];
    let (mut rays, mut reach) = (Vec::new(), Vec::new());
    for (i, j) in pixels {
        let (o, d) = view.pixel_ray(i, j);
        let t = target_hit(target, &to_local, (o, d), &mut stack);
        if t.triangle != NO_HIT {
            rays.push(Ray::new(o, d, t.t * (1.0 + PAST_TARGET)));
            reach.push(t.t);
        }
    }
    (rays, reach)
}

/// A posture mesh's triangles in its own frame, and their BVH. The target's placement is a
/// rotation about +Y and a translation, so distances along a ray carried into this frame are
/// the world's.
/// Target heights (bits) whose posture BVHs are kept, most recently used last: the meshes
/// depend on the height alone, and a search measures a few spots at a time.
static TARGETS: Mutex<Vec<(u32, Arc<[Tier; 3]>)>> = Mutex::new(Vec::new());
/// Target heights kept.
const KEPT_TARGETS: usize = 8;

/// The posture BVHs of `plan`'s meshes (built for `height`), from the cache when kept.
fn target_tiers(plan: &Plan, height: f32) -> Arc<[Tier; 3]> {
    let key = height.to_bits();
    // A poisoned lock only means another thread panicked mid-update: the list is still whole.
    let mut kept = TARGETS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = kept.iter().position(|(k, _)| *k == key) {
        let entry = kept.remove(i);
        kept.push(entry.clone());
        return entry.1;
    }
    let tiers = Arc::new(plan.meshes.each_ref().map(local_tier));
    if kept.len() == KEPT_TARGETS {
        kept.remove(0);
    }
    kept.push((key, tiers.clone()));
    tiers
}

fn local_tier(mesh: &crate::Mesh) -> Tier {
    let tris: Vec<GpuTriangle> = mesh
        .triangles
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let [a, b, c] = t.map(|v| mesh.positions[v as usize]);
            GpuTriangle::new(a, b, c, k as u32, 0, 1)
        })
        .collect();
    Bvh::build(&tris).into_tier(tris)
}

/// Stencil classification and brightness of every pixel of box `b`, reduced.
fn reduce_box(
    view: &View,
    b: &PixelBox,
    scene_hits: &[HitRecord],
    target: &Tier,
    model: &glam::Affine3A,
    albedo: &[f32],
    params: &IntervisParams,
) -> Sums {
    let width = (b.x1 - b.x0) as usize;
    let to_local = model.inverse();
    scene_hits
        .chunks(width)
        .enumerate()
        .map(|(row, hits)| {
            let j = b.y0 + row as u32;
            let mut sums = Sums::default();
            let mut stack = [(0, 0, 0.0); STACK_SIZE];
            for (k, s) in hits.iter().enumerate() {
                let i = b.x0 + k as u32;
                let (o, d) = view.pixel_ray(i, j);
                let mut t = target_hit(target, &to_local, (o, d), &mut stack);
                t.normal = model.transform_vector3(t.normal.into()).into();
                let scene_hit = s.triangle != NO_HIT;
                let target_hit = t.triangle != NO_HIT;
                // The stencil: the target passes GreaterEqual on reversed depth, i.e. it is
                // exposed where it is at least as near as the scene.
                if target_hit && (!scene_hit || t.t <= s.t) {
                    sums.exposed += 1;
                    sums.target_brightness +=
                        f64::from(shade(params.target_albedo, t.normal.into(), params));
                    sums.solid_angle +=
                        f64::from(pixel_solid_angle(i, j, view.focal, view.resolution));
                } else {
                    if target_hit {
                        sums.occluded += 1;
                    }
                    sums.background += 1;
                    sums.background_brightness += f64::from(if scene_hit {
                        shade(albedo[s.material as usize], s.normal.into(), params)
                    } else {
                        params.sky
                    });
                }
            }
            sums
        })
        .fold(Sums::default(), Sums::combine)
}
