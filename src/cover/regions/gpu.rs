//! The shadow-volume pass on the GPU (shaders/shadow_volumes.wgsl, shaders/shadow_reduce.wgsl):
//! one submission, one wait, four bits a cell read back.
//!
//! One render pass per (threat, sample height; postures share the foot's) over a depth-stencil
//! target of one pixel per cell: prime the depth with the sample points, draw the threat's
//! casters' volumes (24 vertices an instance, built in the vertex shader from the kept
//! triangles; a second, untested draw per threat flags pixels under steep faces), and where
//! the stencil stays 0 set the sample's postures' channels in the `exposed` colour target (a
//! maximum blend, so an OR over passes). One compute dispatch then packs the cover bits and counts cells per
//! posture. The scene's masked triangles stay on the GPU per tier revision and mask; per call
//! only the casters' ids, the ground heights and a few uniforms are uploaded.

use super::casters::Job;
use super::pipelines::Kit;
use crate::gpu::{buffer_with, map_read_ranges, submit_checked, GpuTracer};
use crate::pool::{TierCache, Trim};
use crate::scene::{Mask, Scene, Tier};
use crate::{Error, Result};
use bytemuck::{Pod, Zeroable};
use std::num::NonZeroU64;
use std::sync::Arc;

/// Per-call block of the render pass. Mirrors `struct Frame` in shaders/shadow_volumes.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Frame {
    pub anchor: [f32; 4],
    pub origin: [f32; 2],
    pub cell: f32,
    pub side: u32,
    pub y_top: f32,
    pub y_span: f32,
    pub postures: u32,
    pub cells: u32,
}
const _: () = assert!(std::mem::size_of::<Frame>() == 48);

/// Per-pass block (dynamic offset). Mirrors `struct Tile` in shaders/shadow_volumes.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Tile {
    pub light: [f32; 4],
    pub lift: f32,
    pub bit: u32,
    pub pad: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<Tile>() == 32);

/// The reduction's block. Mirrors `struct Reduce` in shaders/shadow_reduce.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Reduce {
    pub cells: u32,
    pub postures: u32,
    pub side: u32,
    pub pad: u32,
}
const _: () = assert!(std::mem::size_of::<Reduce>() == 16);

/// The operation the pass's GPU work is counted under (see [`crate::Counters`]).
pub(super) const OP: &str = "cover_regions";
pub(super) const FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth24PlusStencil8;
/// The colour target: a channel per posture, set where a pass found that posture's sample lit.
pub(super) const EXPOSED: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;
/// Ground height the shaders read as "no ground" (relative to the anchor).
const NO_GROUND: f32 = 1.0e30;
/// Metres kept between the sample points and the ends of the depth range.
const DEPTH_MARGIN: f32 = 1.0;

/// One tier's triangles matching a mask, nine floats each, in a storage buffer.
struct Kept {
    buffer: wgpu::Buffer,
}

/// The pass's per-device store of kept triangles.
#[derive(Default)]
struct Resident {
    tiers: TierCache<Kept>,
}

impl Trim for Resident {
    fn trim(&self) {}
}

fn keep(tracer: &GpuTracer, tier: &Tier, mask: Mask) -> Kept {
    let floats: Vec<[f32; 3]> = tier
        .triangles
        .iter()
        .filter(|t| t.flags & mask.bits() != 0)
        .flat_map(|t| t.vertices().map(Into::into))
        .collect();
    let usage = wgpu::BufferUsages::STORAGE;
    Kept {
        buffer: buffer_with(
            tracer,
            OP,
            "shadow casters' vertices",
            usage,
            bytemuck::cast_slice(&floats),
        ),
    }
}

/// Cover bits per cell of `job`'s grid (see [`super::shadow_bits`]).
pub(super) fn shadow_bits(tracer: &GpuTracer, scene: &Scene, job: &Job) -> Result<Vec<u8>> {
    let cells = job.grid.heights.len();
    let Some(span) = job.span else {
        return Ok(vec![0; cells]);
    };
    check_sizes(tracer, job)?;
    let resident = tracer.cached_pool(|_| Resident::default());
    let tiers = resident
        .tiers
        .tiers(tracer, scene, job.mask, "the shadow casters", |t| {
            keep(tracer, t, job.mask)
        })?;
    let kit = tracer.cached(Kit::new);
    let call = Call::new(tracer, &kit, job, span, &tiers);
    submit_checked(
        tracer,
        OP,
        "the shadow-volume pass",
        "use a smaller area",
        |e| {
            call.encode(&kit, job, e);
        },
    )?;
    map_read_ranges(
        tracer,
        OP,
        [(&call.readback, call.read_bytes)],
        None,
        "cover bits",
    )?;
    let words = call
        .readback
        .get_mapped_range(..call.read_bytes)
        .map(|view| bytemuck::cast_slice::<u8, u32>(&view).to_vec())
        .map_err(|e| Error::Gpu(e.to_string()));
    call.readback.unmap();
    let words = words?;
    check_counts(&words, cells, job.asked())?;
    Ok((0..cells)
        .map(|i| (words[i / 8] >> (4 * (i % 8)) & 0xf) as u8)
        .collect())
}

/// The reduction's counts of cells in cover per posture (after the packed bits) must match
/// the bits: a mismatch is a broken pass, reported rather than used.
fn check_counts(words: &[u32], cells: usize, asked: u8) -> Result<()> {
    let packed = cells.div_ceil(8);
    for p in 0..3 {
        if asked >> p & 1 == 0 {
            continue;
        }
        let counted: u32 = words[..packed]
            .iter()
            .map(|w| (0..8).filter(|k| w >> (4 * k + p) & 1 == 1).count() as u32)
            .sum();
        if counted != words[packed + p] {
            return Err(Error::Gpu(format!(
                "the shadow-volume reduction counted {} cells in cover for posture {p} but                  its bits hold {counted}",
                words[packed + p]
            )));
        }
    }
    Ok(())
}

/// An error when a kept tier, the casters or the heights would not fit one storage binding.
fn check_sizes(tracer: &GpuTracer, job: &Job) -> Result<()> {
    let max = tracer.device().limits().max_storage_buffer_binding_size;
    let triangles = job.masked;
    let casters: u64 = job.casters.iter().map(|c| c.len() as u64).sum();
    let need = triangles[0].max(triangles[1]) * 36;
    if need > max || casters * 4 > max || job.grid.heights.len() as u64 * 4 > max {
        return Err(Error::TooLarge {
            what: "shadow-volume pass".into(),
            requested: need.max(casters * 4),
            limit: max,
            fix: "use the CPU twin (cover_regions_ray_cast) or a device with larger storage \
                   bindings"
                .into(),
        });
    }
    Ok(())
}

/// One call's targets, buffers and bind groups.
struct Call {
    depth: wgpu::TextureView,
    exposed: wgpu::TextureView,
    stride: u64,
    render: wgpu::BindGroup,
    reduce: wgpu::BindGroup,
    bits: wgpu::Buffer,
    stats: wgpu::Buffer,
    words: u32,
    readback: wgpu::Buffer,
    read_bytes: u64,
    /// Per threat, its casters' instance range.
    instances: Vec<std::ops::Range<u32>>,
}

/// The buffers a call uploads: uniforms, casters and heights.
struct Uploads {
    frame: wgpu::Buffer,
    tiles: wgpu::Buffer,
    reduce: wgpu::Buffer,
    casters: wgpu::Buffer,
    heights: wgpu::Buffer,
    instances: Vec<std::ops::Range<u32>>,
}

impl Uploads {
    fn new(tracer: &GpuTracer, job: &Job, span: (f32, f32), stride: u64) -> Uploads {
        let grid = job.grid;
        let (frame, tile_bytes) = uniforms(job, span, stride);
        let uniform = wgpu::BufferUsages::UNIFORM;
        let storage = wgpu::BufferUsages::STORAGE;
        let ids: Vec<u32> = job.casters.concat();
        let mut instances = Vec::with_capacity(job.casters.len());
        let mut at = 0u32;
        for c in &job.casters {
            instances.push(at..at + c.len() as u32);
            at += c.len() as u32;
        }
        let heights: Vec<f32> = grid
            .heights
            .iter()
            .map(|&y| if y.is_nan() { NO_GROUND } else { y - span.0 })
            .collect();
        let reduce = Reduce {
            cells: grid.heights.len() as u32,
            postures: u32::from(job.asked()),
            side: grid.side as u32,
            pad: 0,
        };
        let buffer = |label, usage, bytes: &[u8]| buffer_with(tracer, OP, label, usage, bytes);
        Uploads {
            frame: buffer("shadow frame", uniform, bytemuck::bytes_of(&frame)),
            tiles: buffer("shadow tiles", uniform, &tile_bytes),
            reduce: buffer("shadow reduce", uniform, bytemuck::bytes_of(&reduce)),
            casters: buffer("shadow casters", storage, bytemuck::cast_slice(&ids)),
            heights: buffer("shadow heights", storage, bytemuck::cast_slice(&heights)),
            instances,
        }
    }
}

/// A buffer of `bytes` (at least 16) the GPU fills.
fn blank(tracer: &GpuTracer, label: &str, bytes: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
    tracer.create_buffer(
        OP,
        &wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes.max(16),
            usage,
            mapped_at_creation: false,
        },
    )
}

fn bind(
    tracer: &GpuTracer,
    layout: &wgpu::BindGroupLayout,
    resources: Vec<wgpu::BindingResource>,
) -> wgpu::BindGroup {
    let entries: Vec<_> = resources
        .into_iter()
        .enumerate()
        .map(|(binding, resource)| wgpu::BindGroupEntry {
            binding: binding as u32,
            resource,
        })
        .collect();
    tracer
        .device()
        .create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("shadow volumes"),
            layout,
            entries: &entries,
        })
}

impl Call {
    fn new(
        tracer: &GpuTracer,
        kit: &Kit,
        job: &Job,
        span: (f32, f32),
        tiers: &[Arc<Kept>; 2],
    ) -> Call {
        let n = job.grid.side as u32;
        let target = |label, format, usage| {
            crate::gpu::texture_array(tracer, OP, label, n, 1, format, usage)
                .create_view(&Default::default())
        };
        let attach = wgpu::TextureUsages::RENDER_ATTACHMENT;
        let depth = target("shadow depth", FORMAT, attach);
        let exposed = target(
            "shadow exposed",
            EXPOSED,
            attach | wgpu::TextureUsages::TEXTURE_BINDING,
        );
        let align = u64::from(tracer.device().limits().min_uniform_buffer_offset_alignment);
        let stride = align.max(size_of::<Tile>() as u64);
        let up = Uploads::new(tracer, job, span, stride);
        let words = (job.grid.heights.len() as u32).div_ceil(8);
        let blank = |label, bytes, usage| blank(tracer, label, bytes, usage);
        let out = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST;
        let bits = blank("shadow bits", u64::from(words) * 4, out);
        let stats = blank("shadow stats", 16, out);
        let read_bytes = u64::from(words) * 4 + 16;
        let map = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        let readback = blank("shadow readback", read_bytes, map);
        let tile = wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &up.tiles,
            offset: 0,
            size: NonZeroU64::new(size_of::<Tile>() as u64),
        });
        let render = bind(
            tracer,
            &kit.render_layout,
            vec![
                up.frame.as_entire_binding(),
                tile,
                tiers[0].buffer.as_entire_binding(),
                tiers[1].buffer.as_entire_binding(),
                up.casters.as_entire_binding(),
                up.heights.as_entire_binding(),
            ],
        );
        let reduce = bind(
            tracer,
            &kit.reduce_layout,
            vec![
                up.reduce.as_entire_binding(),
                up.heights.as_entire_binding(),
                wgpu::BindingResource::TextureView(&exposed),
                bits.as_entire_binding(),
                stats.as_entire_binding(),
            ],
        );
        Call {
            depth,
            exposed,
            stride,
            render,
            reduce,
            bits,
            stats,
            words,
            readback,
            read_bytes,
            instances: up.instances,
        }
    }

    /// Records every render pass, the reduction and the copy to the readback buffer.
    fn encode(&self, kit: &Kit, job: &Job, encoder: &mut wgpu::CommandEncoder) {
        encoder.clear_buffer(&self.stats, 0, None);
        for k in 0..job.threats.len() * job.lifts.len() {
            self.encode_pass(kit, job, k, encoder);
        }
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&kit.reduce);
            pass.set_bind_group(0, &self.reduce, &[]);
            pass.dispatch_workgroups(self.words.div_ceil(64), 1, 1);
        }
        let bits = u64::from(self.words) * 4;
        encoder.copy_buffer_to_buffer(&self.bits, 0, &self.readback, 0, bits);
        encoder.copy_buffer_to_buffer(&self.stats, 0, &self.readback, bits, 16);
    }

    /// Pass `k` (threat `k / lifts`, sample height `k % lifts`): prime, volumes, resolve. The
    /// first pass clears the exposed target; every pass clears depth and stencil.
    fn encode_pass(&self, kit: &Kit, job: &Job, k: usize, encoder: &mut wgpu::CommandEncoder) {
        let exposed_load = if k == 0 {
            wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT)
        } else {
            wgpu::LoadOp::Load
        };
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("shadow volumes"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &self.exposed,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: exposed_load,
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &self.depth,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(1.0),
                    store: wgpu::StoreOp::Discard,
                }),
                stencil_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(0),
                    store: wgpu::StoreOp::Discard,
                }),
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_bind_group(0, &self.render, &[(k as u64 * self.stride) as u32]);
        pass.set_pipeline(&kit.prime);
        pass.draw(0..3, 0..1);
        let casters = self.instances[k / job.lifts.len()].clone();
        if !casters.is_empty() {
            pass.set_pipeline(&kit.volume);
            pass.draw(0..24, casters.clone());
            if k.is_multiple_of(job.lifts.len()) {
                // The volumes are the same for every sample of a threat: flag once.
                pass.set_pipeline(&kit.flag);
                pass.draw(0..24, casters);
            }
        }
        pass.set_pipeline(&kit.resolve);
        pass.set_stencil_reference(0);
        pass.draw(0..3, 0..1);
    }
}

/// The frame block and every pass's block (`stride` bytes apart), coordinates relative to an
/// anchor at the grid's centre and its lowest ground.
fn uniforms(job: &Job, span: (f32, f32), stride: u64) -> (Frame, Vec<u8>) {
    let grid = job.grid;
    let extent = grid.cell * grid.side as f32;
    let centre = grid.origin + extent / 2.0;
    let anchor = glam::DVec3::new(centre.x.into(), span.0.into(), centre.y.into());
    let y_top = span.1 - span.0 + DEPTH_MARGIN;
    let frame = Frame {
        anchor: [centre.x, span.0, centre.y, 0.0],
        origin: (grid.origin - centre).into(),
        cell: grid.cell,
        side: grid.side as u32,
        y_top,
        y_span: y_top + DEPTH_MARGIN,
        postures: u32::from(job.asked()),
        cells: grid.heights.len() as u32,
    };
    let mut bytes = vec![0u8; job.threats.len() * job.lifts.len() * stride as usize];
    for (t, threat) in job.threats.iter().enumerate() {
        let light = (threat.as_dvec3() - anchor).as_vec3();
        for (s, &(lift, bits)) in job.lifts.iter().enumerate() {
            let tile = Tile {
                light: [light.x, light.y, light.z, 0.0],
                lift,
                bit: bits,
                pad: [0; 2],
            };
            let at = (t * job.lifts.len() + s) * stride as usize;
            bytes[at..at + size_of::<Tile>()].copy_from_slice(bytemuck::bytes_of(&tile));
        }
    }
    (frame, bytes)
}
