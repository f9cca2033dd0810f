//! [`IntervisPass`]: the GPU measurement (see `gpu.rs`) as a value. `prepare` plans the views,
//! uploads the geometry and every group's uniforms and jobs, creates the textures and binds
//! them, and culls the scene per view; `encode` replays the passes into any command encoder
//! (never blocks); `read` waits for the caller's submission and scatters the records.

use super::encode::{chunks, Chunk};
use super::gpu::{
    view_block, Batch, Geometry, Job, Light, ViewBlock, GROUP_JOBS, SCENE_FORMAT, STENCIL_FORMAT,
    TEXTURE_BUDGET, Z_FORMAT,
};
use super::pipelines::Kit;
use super::{validate, IntervisPair, IntervisParams, PixelBox, Plan, Sums};
use crate::agent::Posture;
use crate::gpu::{buffer_with, GpuTracer};
use crate::intervis::IntervisRecord;
use crate::receipt::Receipt;
use crate::scene::Scene;
use crate::{Error, Result};

/// The operation the pass's GPU work is counted under (see [`crate::Counters`]).
pub(super) const OP: &str = "intervis";
use glam::Mat4;
use std::num::NonZeroU64;
use std::ops::Range;

/// The intervis measurement of a batch of pairs, planned, uploaded and bound, ready to be
/// encoded into any command encoder.
///
/// [`super::measure`] prepares, encodes, submits and reads in one call on a GPU engine; a
/// renderer can instead [`IntervisPass::encode`] into its own encoder, submit it with its
/// frame, and [`IntervisPass::read`] afterwards. Groups of targets keep their own job and
/// record buffers, so the whole batch fits in one command buffer. A batch where no target
/// lands in a view (or no pairs) gives a pass whose `encode` records nothing; `read` still
/// returns a record per pair.
pub struct IntervisPass {
    /// Number of pairs.
    len: usize,
    /// The pair each job (target with a box, view by view) measures.
    job_pairs: Vec<usize>,
    work: Option<Work>,
    receipt: Receipt,
}

/// A job: a target with a box, and its view.
#[derive(Clone, Copy)]
pub(super) struct Target {
    pub view: usize,
    pub bbox: PixelBox,
    pub posture: Posture,
    pub model: Mat4,
}

/// Chunks up to `GROUP_JOBS` jobs, with their own uniforms, jobs and records.
pub(super) struct Group {
    pub chunks: Range<usize>,
    pub view_group: wgpu::BindGroup,
    pub reduce_group: wgpu::BindGroup,
    pub records: wgpu::Buffer,
    pub readback: wgpu::Buffer,
    pub bytes: u64,
    pub first_job: usize,
}

/// The GPU side of a pass.
pub(super) struct Work {
    pub geometry: Geometry,
    pub targets: Vec<Target>,
    pub chunks: Vec<Chunk>,
    pub groups: Vec<Group>,
    pub stride: u64,
    pub batch_stride: u64,
    pub sky: f64,
    pub scene_brightness: wgpu::TextureView,
    pub scene_depth: wgpu::TextureView,
    pub scene_z: wgpu::TextureView,
    pub stencil_layers: Vec<wgpu::TextureView>,
    pub brightness_layers: Vec<wgpu::TextureView>,
    pub depth_group: wgpu::BindGroup,
    pub _textures: [wgpu::Texture; 5],
}

impl IntervisPass {
    /// Validates `pairs` and `params`, plans the views, uploads the scene triangles of
    /// `params.mask`, the target meshes and every group's uniforms and jobs, and binds them.
    /// All resources are created inside error scopes: running out of GPU memory is an error.
    pub fn prepare(
        tracer: &GpuTracer,
        scene: &Scene,
        pairs: &[IntervisPair],
        params: &IntervisParams,
    ) -> Result<IntervisPass> {
        validate(pairs, params)?;
        let limits = tracer.device().limits();
        if params.resolution > limits.max_texture_dimension_2d {
            return Err(Error::InvalidInput(format!(
                "resolution {} exceeds the device's texture limit of {}; lower it",
                params.resolution, limits.max_texture_dimension_2d
            )));
        }
        let plan = Plan::new(pairs, params);
        // Jobs: targets with a box, view by view.
        let mut targets = Vec::new();
        let mut job_pairs = Vec::new();
        for (v, (_, placed)) in plan.views.iter().enumerate() {
            for t in placed {
                if let Some(bbox) = t.bbox {
                    job_pairs.push(t.pair);
                    targets.push(Target {
                        view: v,
                        bbox,
                        posture: t.posture,
                        model: Mat4::from(t.model),
                    });
                }
            }
        }
        if targets.is_empty() {
            return Ok(IntervisPass {
                len: pairs.len(),
                job_pairs,
                work: None,
                receipt: Receipt::empty(),
            });
        }
        let device = tracer.device();
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let t0 = std::time::Instant::now();
        let work = Work::new(tracer, scene, &plan, targets, params);
        let receipt = Receipt::new(tracer, OP);
        if let Some(e) = pollster::block_on(validation.pop()) {
            return Err(Error::Gpu(format!("intervis pass failed: {e}")));
        }
        if let Some(e) = pollster::block_on(oom.pop()) {
            return Err(Error::Gpu(format!(
                "out of GPU memory for intervis: {e}; lower the resolution or pass fewer pairs"
            )));
        }
        log::debug!(
            "intervis pass prepared: {} pairs, {} views, {} targets drawn, {} scene \
             triangles, {} slots of {}^2: {:?}",
            pairs.len(),
            plan.views.len(),
            job_pairs.len(),
            work.geometry.scene_triangles,
            work.stencil_layers.len(),
            params.resolution,
            t0.elapsed()
        );
        Ok(IntervisPass {
            len: pairs.len(),
            job_pairs,
            work: Some(work),
            receipt,
        })
    }

    /// Number of pairs in the batch.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch has no pairs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Records every group's scene, stencil and reduction passes and the copies to the
    /// readback buffers into `encoder`; nothing when no target needs drawing. Never blocks.
    /// `tracer` must be the one the pass was prepared on.
    pub fn encode(&self, tracer: &GpuTracer, encoder: &mut wgpu::CommandEncoder) {
        if let Some(w) = &self.work {
            w.encode(&tracer.cached(Kit::new), encoder);
        }
        self.receipt.stamp(encoder);
    }

    /// Waits for the submission holding the encoded pass and returns one record per pair, in
    /// order.
    ///
    /// Errors: [`Error::InvalidInput`] when the pass was not encoded, or its command buffer
    /// was not submitted (or failed) before this call; [`Error::DeviceLost`] when the readback
    /// fails.
    pub fn read(&self, tracer: &GpuTracer) -> Result<Vec<IntervisRecord>> {
        const WHAT: &str = "the intervis pass";
        self.receipt.check_encoded(WHAT)?;
        let mut out = vec![Sums::default().finish(0); self.len];
        let Some(w) = &self.work else {
            return Ok(out);
        };
        let readbacks = w.groups.iter().map(|g| &g.readback);
        crate::gpu::map_read_all(
            tracer,
            OP,
            readbacks.chain(self.receipt.buffer()),
            "the intervis records",
        )?;
        if let Err(e) = self.receipt.check_submitted(WHAT) {
            w.groups.iter().for_each(|g| g.readback.unmap());
            return Err(e);
        }
        let mut result = Ok(());
        for g in &w.groups {
            match g.readback.get_mapped_range(..) {
                Ok(view) => {
                    let recs: &[IntervisRecord] = bytemuck::cast_slice(&view);
                    for (k, rec) in recs.iter().enumerate() {
                        out[self.job_pairs[g.first_job + k]] = *rec;
                    }
                }
                Err(e) => result = Err(Error::Gpu(e.to_string())),
            }
            g.readback.unmap();
        }
        result.map(|()| out)
    }

    /// Encodes, submits and checks the submission for errors (the convenience path).
    pub(super) fn run(&self, tracer: &GpuTracer) -> Result<()> {
        crate::gpu::submit_checked(
            tracer,
            OP,
            "intervis",
            "lower the resolution or pass fewer pairs",
            |e| self.encode(tracer, e),
        )
    }
}

impl Work {
    /// Textures, chunks, groups and their bindings.
    fn new(
        tracer: &GpuTracer,
        scene: &Scene,
        plan: &Plan,
        targets: Vec<Target>,
        params: &IntervisParams,
    ) -> Work {
        let device = tracer.device();
        let limits = device.limits();
        let res = params.resolution;
        let kit = tracer.cached(Kit::new);
        let with = |label, usage, bytes: &[u8]| buffer_with(tracer, OP, label, usage, bytes);
        let geometry = Geometry::upload(tracer, scene, plan, params);
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
            crate::gpu::texture_array(tracer, OP, label, res, layers, format, usage)
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
            .min(targets.len())
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
        let layer_view = |t: &wgpu::Texture, l: u32| {
            t.create_view(&wgpu::TextureViewDescriptor {
                dimension: Some(wgpu::TextureViewDimension::D2),
                base_array_layer: l,
                array_layer_count: Some(1),
                ..Default::default()
            })
        };
        let stencil_array = stencil.create_view(&wgpu::TextureViewDescriptor {
            dimension: Some(wgpu::TextureViewDimension::D2Array),
            aspect: wgpu::TextureAspect::StencilOnly,
            ..Default::default()
        });
        let brightness_array = target_brightness.create_view(&wgpu::TextureViewDescriptor {
            dimension: Some(wgpu::TextureViewDimension::D2Array),
            ..Default::default()
        });
        let scene_brightness_view = view_of(&scene_brightness);
        let scene_depth_view = view_of(&scene_depth);
        let depth_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("intervis scene depth"),
            layout: &kit.depth_layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::TextureView(&scene_depth_view),
            }],
        });

        let chunks = chunks(plan, &geometry, &targets, slots);
        let stride = 144u64.next_multiple_of(u64::from(limits.min_uniform_buffer_offset_alignment));
        let batch_stride =
            16u64.next_multiple_of(u64::from(limits.min_uniform_buffer_offset_alignment));
        let mut groups = Vec::new();
        let mut c = 0;
        while c < chunks.len() {
            let first_job = chunks[c].jobs.start;
            let mut end = c;
            while end < chunks.len() && (end == c || chunks[end].jobs.end - first_job <= GROUP_JOBS)
            {
                end += 1;
            }
            let group = &chunks[c..end];
            let job_count = group[group.len() - 1].jobs.end - first_job;
            // Uniform slots: each chunk's view (when it renders it) and every target.
            let mut blocks: Vec<ViewBlock> = Vec::new();
            let mut job_list: Vec<Job> = Vec::new();
            for ch in group {
                let view = &plan.views[targets[ch.jobs.start].view].0;
                if ch.scene.is_some() {
                    blocks.push(view_block(view, Mat4::IDENTITY));
                }
                for (slot, t) in targets[ch.jobs.clone()].iter().enumerate() {
                    let b = t.bbox;
                    job_list.push(Job {
                        x0: b.x0,
                        y0: b.y0,
                        x1: b.x1,
                        y1: b.y1,
                        record: job_list.len() as u32,
                        layer: slot as u32,
                        _pad: [0; 2],
                    });
                    blocks.push(view_block(view, t.model));
                }
            }
            let mut padded = vec![0u8; blocks.len() * stride as usize];
            for (i, b) in blocks.iter().enumerate() {
                padded[i * stride as usize..][..144].copy_from_slice(bytemuck::bytes_of(b));
            }
            let view_blocks = with("intervis views", wgpu::BufferUsages::UNIFORM, &padded);
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
            let bytes = (job_count * size_of::<IntervisRecord>()) as u64;
            let records = tracer.create_buffer(
                OP,
                &wgpu::BufferDescriptor {
                    label: Some("intervis records"),
                    size: bytes,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                },
            );
            let readback = tracer.create_buffer(
                OP,
                &wgpu::BufferDescriptor {
                    label: Some("intervis readback"),
                    size: bytes,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                },
            );
            let sized = |buffer, size| {
                wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset: 0,
                    size: NonZeroU64::new(size),
                })
            };
            let entry = |binding, resource| wgpu::BindGroupEntry { binding, resource };
            let view_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("intervis view"),
                layout: &kit.render_layout,
                entries: &[
                    entry(0, sized(&view_blocks, 144)),
                    entry(1, light.as_entire_binding()),
                ],
            });
            let texture = wgpu::BindingResource::TextureView;
            let reduce_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("intervis reduce"),
                layout: &kit.reduce_layout,
                entries: &[
                    entry(0, light.as_entire_binding()),
                    entry(1, sized(&batches, 16)),
                    entry(2, job_buffer.as_entire_binding()),
                    entry(3, texture(&stencil_array)),
                    entry(4, texture(&brightness_array)),
                    entry(5, texture(&scene_brightness_view)),
                    entry(6, records.as_entire_binding()),
                ],
            });
            groups.push(Group {
                chunks: c..end,
                view_group,
                reduce_group,
                records,
                readback,
                bytes,
                first_job,
            });
            c = end;
        }
        Work {
            geometry,
            chunks,
            groups,
            stride,
            batch_stride,
            sky: f64::from(params.sky),
            scene_z: view_of(&scene_z),
            scene_brightness: scene_brightness_view,
            scene_depth: scene_depth_view,
            stencil_layers: (0..slots as u32).map(|l| layer_view(&stencil, l)).collect(),
            brightness_layers: (0..slots as u32)
                .map(|l| layer_view(&target_brightness, l))
                .collect(),
            depth_group,
            targets,
            _textures: [
                scene_brightness,
                scene_depth,
                scene_z,
                stencil,
                target_brightness,
            ],
        }
    }
}
