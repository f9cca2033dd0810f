//! The intervis measurement on the GPU: a scene pass per view, a stencil pass per target, a
//! reduction workgroup per target; only the 48-byte records are read back.
//!
//! Textures (reused by every view and target of a call): the view's scene brightness and
//! depth copy (R32Float) with a Depth32Float attachment, and `layers` target slots, each a
//! Depth24PlusStencil8 layer plus an R32Float brightness layer. A view's targets go through
//! the slots in chunks: a render pass per target (scissored to its box), then one compute
//! dispatch with a workgroup per target of the chunk. Slots per chunk are bounded by the
//! device's `max_texture_array_layers` and a 256 MiB budget. Work is submitted in groups of
//! at most `GROUP_JOBS` targets, each with its own job and record buffers, and all groups'
//! records are read back at the end.

use super::{IntervisParams, PixelBox, Placed, Plan, View};
use crate::gpu::GpuTracer;
use crate::intervis::IntervisRecord;
use crate::scene::Scene;
use crate::{Error, Result};
use bytemuck::{Pod, Zeroable};
use glam::{Mat4, Vec3};
use std::num::NonZeroU64;

use super::pipelines::Kit;

/// Uniform block of the render passes. Mirrors `struct ViewBlock` in
/// `shaders/intervis_render.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ViewBlock {
    pub view_proj: [[f32; 4]; 4],
    pub model: [[f32; 4]; 4],
    pub eye: [f32; 4],
}
const _: () = assert!(std::mem::size_of::<ViewBlock>() == 144);

/// Lighting and camera constants. Mirrors `struct Light` in both intervis shaders.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Light {
    /// xyz: unit direction toward the sun; w: ambient share.
    pub sun: [f32; 4],
    pub sky: f32,
    pub focal: f32,
    pub resolution: u32,
    pub _pad: u32,
}
const _: () = assert!(std::mem::size_of::<Light>() == 32);

/// One target of the reduction. Mirrors `struct Job` in `shaders/intervis_reduce.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Job {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
    /// Slot in the group's record buffer.
    pub record: u32,
    /// Stencil and brightness layer.
    pub layer: u32,
    pub _pad: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<Job>() == 32);

/// Per-dispatch uniform. Mirrors `struct Batch` in `shaders/intervis_reduce.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Batch {
    pub first: u32,
    pub _pad: [u32; 3],
}

pub(super) const SCENE_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R32Float;
pub(super) const Z_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
pub(super) const STENCIL_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth24PlusStencil8;
/// Texture memory the target slots may use.
const TEXTURE_BUDGET: u64 = 256 << 20;
/// Targets per submission (each has its own job and record buffers).
const GROUP_JOBS: usize = 4096;
/// Scene triangles per frustum-culling block.
const CULL_BLOCK: usize = 256;
/// Stencil reference of a target fragment that passes the depth test (Darken, McCue and Guerrero).
const TARGET_ID: u32 = 127;

use crate::gpu::buffer_with;

/// Vertex: position, then unit normal with albedo in w (32 bytes).
type Vertex = [f32; 8];

fn vertex(p: Vec3, n: Vec3, albedo: f32) -> Vertex {
    [p.x, p.y, p.z, n.x, n.y, n.z, albedo, 0.0]
}

/// Targets of one view sharing the slots: `(view, first job, job count)`.
struct Chunk {
    view: usize,
    jobs: std::ops::Range<usize>,
}

/// The call's geometry, uploaded once: the triangles that block sight (in vertex buffers of
/// whole culling blocks, with each block's bounds), then the three posture meshes.
struct Geometry {
    scene_buffers: Vec<(wgpu::Buffer, u32)>,
    cull: Vec<(Vec3, Vec3)>,
    blocks_per_buffer: usize,
    scene_triangles: usize,
    target_buffer: wgpu::Buffer,
    ranges: Vec<std::ops::Range<u32>>,
}

impl Geometry {
    fn upload(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        scene: &Scene,
        plan: &Plan,
        params: &IntervisParams,
    ) -> Geometry {
        let limits = device.limits();
        let with = |label, usage, bytes: &[u8]| buffer_with(device, queue, label, usage, bytes);
        let albedo: Vec<f32> = scene.materials().iter().map(|m| m.albedo).collect();
        let mut scene_vertices: Vec<Vertex> = Vec::new();
        for tier in scene.tiers() {
            for t in &tier.triangles {
                if t.flags & params.mask.bits() == 0 {
                    continue;
                }
                let [a, b, c] = t.vertices();
                let n = (b - a).cross(c - a).normalize_or_zero();
                let al = albedo[t.material as usize];
                scene_vertices.extend([vertex(a, n, al), vertex(b, n, al), vertex(c, n, al)]);
            }
        }
        // Blocks of CULL_BLOCK triangles in BVH leaf order (spatially compact), with their
        // bounds, so each view draws only the blocks inside its frustum.
        let cull: Vec<(Vec3, Vec3)> = scene_vertices
            .chunks(CULL_BLOCK * 3)
            .map(|c| {
                c.iter()
                    .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(l, h), v| {
                        let p = Vec3::new(v[0], v[1], v[2]);
                        (l.min(p), h.max(p))
                    })
            })
            .collect();
        let per_buffer = ((limits.max_buffer_size / 96).clamp(1, u64::from(u32::MAX) / 3) as usize
            / CULL_BLOCK)
            .max(1)
            * CULL_BLOCK
            * 3;
        let scene_buffers: Vec<(wgpu::Buffer, u32)> = scene_vertices
            .chunks(per_buffer)
            .map(|c| {
                let b = with(
                    "intervis scene vertices",
                    wgpu::BufferUsages::VERTEX,
                    bytemuck::cast_slice(c),
                );
                (b, c.len() as u32)
            })
            .collect();
        let mut target_vertices: Vec<Vertex> = Vec::new();
        let mut ranges = Vec::new();
        for mesh in &plan.meshes {
            let first = target_vertices.len() as u32;
            for t in &mesh.triangles {
                let [a, b, c] = t.map(|v| mesh.positions[v as usize]);
                let n = (b - a).cross(c - a).normalize_or_zero();
                let al = params.target_albedo;
                target_vertices.extend([vertex(a, n, al), vertex(b, n, al), vertex(c, n, al)]);
            }
            ranges.push(first..target_vertices.len() as u32);
        }
        let target_buffer = with(
            "intervis target vertices",
            wgpu::BufferUsages::VERTEX,
            bytemuck::cast_slice(&target_vertices),
        );
        Geometry {
            blocks_per_buffer: per_buffer / 3 / CULL_BLOCK,
            scene_triangles: scene_vertices.len() / 3,
            scene_buffers,
            cull,
            target_buffer,
            ranges,
        }
    }
}

pub(super) fn measure(
    tracer: &GpuTracer,
    scene: &Scene,
    plan: &Plan,
    params: &IntervisParams,
) -> Result<Vec<IntervisRecord>> {
    let device = tracer.device();
    let queue = tracer.queue();
    let limits = device.limits();
    let res = params.resolution;
    if res > limits.max_texture_dimension_2d {
        return Err(Error::InvalidInput(format!(
            "resolution {res} exceeds the device's texture limit of {}; lower it",
            limits.max_texture_dimension_2d
        )));
    }
    let count: usize = plan.views.iter().map(|(_, t)| t.len()).sum();
    let mut out = vec![super::Sums::default().finish(0); count];
    // Jobs: targets with a box, view by view.
    let mut jobs: Vec<(usize, &Placed)> = Vec::new();
    for (v, (_, targets)) in plan.views.iter().enumerate() {
        jobs.extend(targets.iter().filter(|t| t.bbox.is_some()).map(|t| (v, t)));
    }
    if jobs.is_empty() {
        return Ok(out);
    }
    let t0 = std::time::Instant::now();
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let kit = tracer.cached(Kit::new);
    let with = |label, usage, bytes: &[u8]| buffer_with(device, queue, label, usage, bytes);

    let geometry = Geometry::upload(device, queue, scene, plan, params);
    let light = Light {
        sun: params.sun.normalize().extend(params.ambient).into(),
        sky: params.sky,
        focal: params.focal(),
        resolution: res,
        _pad: 0,
    };
    let light = with(
        "intervis light",
        wgpu::BufferUsages::UNIFORM,
        bytemuck::bytes_of(&light),
    );

    // Textures.
    let texture = |label, format, usage, layers| {
        crate::gpu::texture_array(device, label, res, layers, format, usage)
    };
    let attach_and_read =
        wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING;
    let scene_brightness = texture(
        "intervis scene brightness",
        SCENE_FORMAT,
        attach_and_read,
        1,
    );
    let scene_depth = texture("intervis scene depth", SCENE_FORMAT, attach_and_read, 1);
    let scene_z = texture(
        "intervis scene z",
        Z_FORMAT,
        wgpu::TextureUsages::RENDER_ATTACHMENT,
        1,
    );
    let layer_bytes = u64::from(res) * u64::from(res) * 8;
    let slots = (limits.max_texture_array_layers as usize)
        .min((TEXTURE_BUDGET / layer_bytes) as usize)
        .min(jobs.len())
        .max(1);
    let stencil = texture(
        "intervis stencil",
        STENCIL_FORMAT,
        attach_and_read,
        slots as u32,
    );
    let target_brightness = texture(
        "intervis target brightness",
        SCENE_FORMAT,
        attach_and_read,
        slots as u32,
    );
    let view_of = |t: &wgpu::Texture| t.create_view(&Default::default());
    let (scene_brightness_view, scene_depth_view, scene_z_view) = (
        view_of(&scene_brightness),
        view_of(&scene_depth),
        view_of(&scene_z),
    );
    let layer_view = |t: &wgpu::Texture, l: u32| {
        t.create_view(&wgpu::TextureViewDescriptor {
            dimension: Some(wgpu::TextureViewDimension::D2),
            base_array_layer: l,
            array_layer_count: Some(1),
            ..Default::default()
        })
    };
    let stencil_layers: Vec<_> = (0..slots as u32).map(|l| layer_view(&stencil, l)).collect();
    let brightness_layers: Vec<_> = (0..slots as u32)
        .map(|l| layer_view(&target_brightness, l))
        .collect();
    let stencil_array = stencil.create_view(&wgpu::TextureViewDescriptor {
        dimension: Some(wgpu::TextureViewDimension::D2Array),
        aspect: wgpu::TextureAspect::StencilOnly,
        ..Default::default()
    });
    let brightness_array = target_brightness.create_view(&wgpu::TextureViewDescriptor {
        dimension: Some(wgpu::TextureViewDimension::D2Array),
        ..Default::default()
    });
    let depth_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("intervis scene depth"),
        layout: &kit.depth_layout,
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::TextureView(&scene_depth_view),
        }],
    });

    // Chunks: a view's jobs, at most `slots` at a time; groups: chunks up to GROUP_JOBS jobs.
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < jobs.len() {
        let v = jobs[start].0;
        let mut end = start;
        while end < jobs.len() && jobs[end].0 == v && end - start < slots {
            end += 1;
        }
        chunks.push(Chunk {
            view: v,
            jobs: start..end,
        });
        start = end;
    }
    let mut view_union: Vec<PixelBox> = vec![
        PixelBox {
            x0: u32::MAX,
            y0: u32::MAX,
            x1: 0,
            y1: 0,
        };
        plan.views.len()
    ];
    for &(v, placed) in &jobs {
        let (u, b) = (&mut view_union[v], placed.bbox.expect("jobs have boxes"));
        *u = PixelBox {
            x0: u.x0.min(b.x0),
            y0: u.y0.min(b.y0),
            x1: u.x1.max(b.x1),
            y1: u.y1.max(b.y1),
        };
    }
    let stride = 144u64.next_multiple_of(u64::from(limits.min_uniform_buffer_offset_alignment));
    let batch_stride =
        16u64.next_multiple_of(u64::from(limits.min_uniform_buffer_offset_alignment));
    let mut readbacks = Vec::new();
    let mut rendered_view = usize::MAX;
    let mut c = 0;
    while c < chunks.len() {
        let first_job = chunks[c].jobs.start;
        let mut end = c;
        while end < chunks.len() && (end == c || chunks[end].jobs.end - first_job <= GROUP_JOBS) {
            end += 1;
        }
        let group = &chunks[c..end];
        let group_jobs = &jobs[first_job..group[group.len() - 1].jobs.end];
        // Uniform slots: each chunk's view (if not already rendered) and every target.
        let mut blocks: Vec<ViewBlock> = Vec::new();
        let mut job_list: Vec<Job> = Vec::new();
        let mut scene_slot = Vec::new();
        let mut last = rendered_view;
        for ch in group {
            let view = &plan.views[ch.view].0;
            if ch.view != last {
                scene_slot.push(Some(blocks.len()));
                blocks.push(view_block(view, Mat4::IDENTITY));
                last = ch.view;
            } else {
                scene_slot.push(None);
            }
            for (slot, &(_, placed)) in jobs[ch.jobs.clone()].iter().enumerate() {
                let b = placed.bbox.expect("jobs have boxes");
                job_list.push(Job {
                    x0: b.x0,
                    y0: b.y0,
                    x1: b.x1,
                    y1: b.y1,
                    record: job_list.len() as u32,
                    layer: slot as u32,
                    _pad: [0; 2],
                });
                blocks.push(view_block(view, Mat4::from(placed.model)));
            }
        }
        let mut padded = vec![0u8; blocks.len() * stride as usize];
        for (i, b) in blocks.iter().enumerate() {
            padded[i * stride as usize..][..144].copy_from_slice(bytemuck::bytes_of(b));
        }
        let views = with("intervis views", wgpu::BufferUsages::UNIFORM, &padded);
        let mut batches = vec![0u8; group.len() * batch_stride as usize];
        for (i, ch) in group.iter().enumerate() {
            let b = Batch {
                first: (ch.jobs.start - first_job) as u32,
                _pad: [0; 3],
            };
            batches[i * batch_stride as usize..][..16].copy_from_slice(bytemuck::bytes_of(&b));
        }
        let batches = with("intervis batches", wgpu::BufferUsages::UNIFORM, &batches);
        let job_buffer = with(
            "intervis jobs",
            wgpu::BufferUsages::STORAGE,
            bytemuck::cast_slice(&job_list),
        );
        let bytes = (group_jobs.len() * size_of::<IntervisRecord>()) as u64;
        let records = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("intervis records"),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("intervis readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let view_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("intervis view"),
            layout: &kit.render_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &views,
                        offset: 0,
                        size: NonZeroU64::new(144),
                    }),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: light.as_entire_binding(),
                },
            ],
        });
        let reduce_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("intervis reduce"),
            layout: &kit.reduce_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: light.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &batches,
                        offset: 0,
                        size: NonZeroU64::new(16),
                    }),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: job_buffer.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: wgpu::BindingResource::TextureView(&stencil_array),
                },
                wgpu::BindGroupEntry {
                    binding: 4,
                    resource: wgpu::BindingResource::TextureView(&brightness_array),
                },
                wgpu::BindGroupEntry {
                    binding: 5,
                    resource: wgpu::BindingResource::TextureView(&scene_brightness_view),
                },
                wgpu::BindGroupEntry {
                    binding: 6,
                    resource: records.as_entire_binding(),
                },
            ],
        });

        let mut encoder = device.create_command_encoder(&Default::default());
        let mut block = 0usize;
        for (i, ch) in group.iter().enumerate() {
            if scene_slot[i].is_some() {
                let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some("intervis scene"),
                    color_attachments: &[
                        Some(clear_attachment(
                            &scene_brightness_view,
                            f64::from(params.sky),
                        )),
                        Some(clear_attachment(&scene_depth_view, 0.0)),
                    ],
                    depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                        view: &scene_z_view,
                        depth_ops: Some(wgpu::Operations {
                            load: wgpu::LoadOp::Clear(0.0), // reversed Z: 0 is infinitely far
                            store: wgpu::StoreOp::Discard,
                        }),
                        stencil_ops: None,
                    }),
                    timestamp_writes: None,
                    occlusion_query_set: None,
                    multiview_mask: None,
                });
                // Only the view's target boxes are ever read: draw the blocks that reach
                // into their union, scissored to it.
                let u = view_union[ch.view];
                pass.set_scissor_rect(u.x0, u.y0, u.x1 - u.x0, u.y1 - u.y0);
                pass.set_pipeline(&kit.scene);
                pass.set_bind_group(0, &view_group, &[(block as u64 * stride) as u32]);
                let view = &plan.views[ch.view].0;
                let per = geometry.blocks_per_buffer;
                for (b, (vb, n)) in geometry.scene_buffers.iter().enumerate() {
                    pass.set_vertex_buffer(0, vb.slice(..));
                    let mut run: Option<(u32, u32)> = None;
                    let blocks_here =
                        &geometry.cull[b * per..(b * per + per).min(geometry.cull.len())];
                    for (k, &(lo, hi)) in blocks_here.iter().enumerate() {
                        if !in_frustum(view, u, lo, hi) {
                            continue;
                        }
                        let a = (k * CULL_BLOCK * 3) as u32;
                        let e = (a + (CULL_BLOCK * 3) as u32).min(*n);
                        run = match run {
                            Some((s, end)) if end == a => Some((s, e)),
                            Some((s, end)) => {
                                pass.draw(s..end, 0..1);
                                Some((a, e))
                            }
                            None => Some((a, e)),
                        };
                    }
                    if let Some((s, end)) = run {
                        pass.draw(s..end, 0..1);
                    }
                }
                block += 1;
            }
            for (slot, &(_, placed)) in jobs[ch.jobs.clone()].iter().enumerate() {
                let b = placed.bbox.expect("jobs have boxes");
                let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some("intervis target"),
                    color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                        view: &brightness_layers[slot],
                        depth_slice: None,
                        resolve_target: None,
                        ops: wgpu::Operations {
                            load: wgpu::LoadOp::Load,
                            store: wgpu::StoreOp::Store,
                        },
                    })],
                    depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                        view: &stencil_layers[slot],
                        depth_ops: Some(wgpu::Operations {
                            load: wgpu::LoadOp::Load,
                            store: wgpu::StoreOp::Store,
                        }),
                        stencil_ops: Some(wgpu::Operations {
                            load: wgpu::LoadOp::Load,
                            store: wgpu::StoreOp::Store,
                        }),
                    }),
                    timestamp_writes: None,
                    occlusion_query_set: None,
                    multiview_mask: None,
                });
                pass.set_scissor_rect(b.x0, b.y0, b.x1 - b.x0, b.y1 - b.y0);
                pass.set_bind_group(0, &view_group, &[(block as u64 * stride) as u32]);
                pass.set_bind_group(1, &depth_group, &[]);
                pass.set_pipeline(&kit.restore);
                pass.draw(0..3, 0..1);
                pass.set_pipeline(&kit.target);
                pass.set_stencil_reference(TARGET_ID);
                pass.set_vertex_buffer(0, geometry.target_buffer.slice(..));
                pass.draw(geometry.ranges[placed.posture as usize].clone(), 0..1);
                block += 1;
            }
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("intervis reduce"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&kit.reduce);
            pass.set_bind_group(0, &reduce_group, &[(i as u64 * batch_stride) as u32]);
            pass.dispatch_workgroups(ch.jobs.len() as u32, 1, 1);
            rendered_view = ch.view;
        }
        encoder.copy_buffer_to_buffer(&records, 0, &readback, 0, bytes);
        queue.submit([encoder.finish()]);
        readbacks.push((first_job, readback));
        c = end;
    }
    if let Some(e) = pollster::block_on(validation.pop()) {
        return Err(Error::Gpu(format!("intervis pass failed: {e}")));
    }
    if let Some(e) = pollster::block_on(oom.pop()) {
        return Err(Error::Gpu(format!(
            "out of GPU memory for intervis: {e}; lower the resolution or pass fewer pairs"
        )));
    }

    crate::gpu::map_read_all(
        device,
        readbacks.iter().map(|(_, r)| r),
        "the intervis records",
    )?;
    for (first, r) in &readbacks {
        let view = r
            .get_mapped_range(..)
            .map_err(|e| Error::Gpu(e.to_string()))?;
        let recs: &[IntervisRecord] = bytemuck::cast_slice(&view);
        for (k, rec) in recs.iter().enumerate() {
            out[jobs[first + k].1.pair] = *rec;
        }
        drop(view);
        r.unmap();
    }
    log::debug!(
        "intervis on the GPU: {} pairs, {} views, {} targets drawn, {} scene triangles, \
         {slots} slots of {res}^2: {:?}",
        count,
        plan.views.len(),
        jobs.len(),
        geometry.scene_triangles,
        t0.elapsed()
    );
    Ok(out)
}

/// Whether the world box `lo..hi` may reach into the part of `view`'s frustum behind the
/// pixel rectangle `px` (conservative: each of the four side planes and the near plane is
/// tested against the box's farthest corner along its normal; the rectangle grows by a pixel).
fn in_frustum(view: &View, px: PixelBox, lo: Vec3, hi: Vec3) -> bool {
    let c = view.resolution as f32 * 0.5;
    let a = |x: u32, grow: f32| (x as f32 + grow - c) / view.focal;
    let (f, r, u) = (view.forward, view.right, view.up);
    let planes = [
        (f, -super::NEAR),
        (r - f * a(px.x0, -1.0), 0.0),
        (-r + f * a(px.x1, 1.0), 0.0),
        (-u - f * a(px.y0, -1.0), 0.0),
        (u + f * a(px.y1, 1.0), 0.0),
    ];
    planes.iter().all(|&(n, d)| {
        let corner = Vec3::select(n.cmpge(Vec3::ZERO), hi, lo);
        (corner - view.eye).dot(n) + d >= 0.0
    })
}

fn view_block(view: &View, model: Mat4) -> ViewBlock {
    ViewBlock {
        view_proj: view.view_proj().to_cols_array_2d(),
        model: model.to_cols_array_2d(),
        eye: view.eye.extend(0.0).into(),
    }
}

fn clear_attachment(view: &wgpu::TextureView, value: f64) -> wgpu::RenderPassColorAttachment<'_> {
    wgpu::RenderPassColorAttachment {
        view,
        depth_slice: None,
        resolve_target: None,
        ops: wgpu::Operations {
            load: wgpu::LoadOp::Clear(wgpu::Color {
                r: value,
                g: 0.0,
                b: 0.0,
                a: 1.0,
            }),
            store: wgpu::StoreOp::Store,
        },
    }
}
