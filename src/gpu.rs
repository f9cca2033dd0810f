//! The GPU backend: the WGSL kernels in `shaders/`, scene upload, and batches split to fit the
//! device's dispatch and binding limits.
//!
//! A scene tier larger than one storage binding is cut into chunks, each with its own BVH; a
//! batch runs over every chunk, and the kernels merge chunk results (bits are OR-ed, closest hits
//! keep the nearer record, ties to the lower triangle id), so splitting never changes an answer.

use crate::bvh::{Bvh, BvhNode, GpuTriangle};
use crate::scene::{Mask, Scene, Tier};
use crate::trace::{HitRecord, Occlusion, Ray, Segment, NO_HIT};
use crate::{Error, Result};
use std::sync::{Arc, Mutex};

const WORKGROUP: u32 = 64;

/// Uniform block of every kernel. Mirrors `struct Params` in `shaders/common.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub count: u32,
    pub mask: u32,
    pub accumulate: u32,
    pub _pad: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 16);

/// WGSL source of a kernel: `common.wgsl` followed by the kernel's file.
pub fn kernel_source(kernel: &str) -> String {
    let body = match kernel {
        "occluded" => include_str!("../shaders/occluded.wgsl"),
        "closest_hit" => include_str!("../shaders/closest_hit.wgsl"),
        _ => panic!("unknown kernel {kernel}"),
    };
    format!("{}\n{}", include_str!("../shaders/common.wgsl"), body)
}

struct Chunk {
    nodes: wgpu::Buffer,
    triangles: wgpu::Buffer,
}

#[derive(Default)]
struct SceneCache {
    uid: u64,
    tiers: [Option<(u64, Arc<Vec<Chunk>>)>; 2],
}

/// Compiled kernels on a (possibly borrowed) device, plus the uploaded scene.
pub struct GpuTracer {
    device: wgpu::Device,
    queue: wgpu::Queue,
    layout: wgpu::BindGroupLayout,
    occluded: wgpu::ComputePipeline,
    closest_hit: wgpu::ComputePipeline,
    max_binding: u64,
    max_queries: usize,
    lost: Arc<Mutex<Option<String>>>,
    cache: Mutex<SceneCache>,
    /// Pipelines other modules build once per device (see [`GpuTracer::cached`]).
    kits: Mutex<Vec<Arc<dyn std::any::Any + Send + Sync>>>,
}

enum Kind {
    Occluded,
    ClosestHit,
}

struct Slice {
    start: usize,
    count: usize,
    output: wgpu::Buffer,
    readback: wgpu::Buffer,
    bytes: u64,
    bind_groups: Vec<wgpu::BindGroup>,
}

/// A batch uploaded and bound, ready to be encoded into any command encoder.
///
/// `Engine::occluded` and `Engine::closest_hit` do prepare, encode, submit and read in one call;
/// a renderer can instead [`TracePass::encode`] into its own encoder, submit it with its frame,
/// and [`TracePass::read_occlusion`] / [`TracePass::read_hits`] afterwards.
pub struct TracePass {
    kind: Kind,
    len: usize,
    slices: Vec<Slice>,
    _chunks: Vec<Arc<Vec<Chunk>>>,
}

impl GpuTracer {
    pub(crate) fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        max_binding_override: Option<u64>,
        lost: Arc<Mutex<Option<String>>>,
    ) -> Result<GpuTracer> {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let storage = |binding, read_only| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("sightline trace"),
            entries: &[
                storage(0, true),
                storage(1, true),
                wgpu::BindGroupLayoutEntry {
                    binding: 2,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                },
                storage(3, true),
                storage(4, false),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("sightline trace"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = |name: &str| {
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(name),
                source: wgpu::ShaderSource::Wgsl(kernel_source(name).into()),
            });
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(name),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(name),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        let occluded = pipeline("occluded");
        let closest_hit = pipeline("closest_hit");
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Gpu(format!(
                "building the tracing kernels failed: {e}"
            )));
        }
        let limits = device.limits();
        let max_binding = u64::from(limits.max_storage_buffer_binding_size)
            .min(limits.max_buffer_size)
            .min(max_binding_override.unwrap_or(u64::MAX))
            .max(1024);
        let per_binding = (max_binding / 32) as usize;
        let per_dispatch =
            limits.max_compute_workgroups_per_dimension as usize * WORKGROUP as usize;
        let max_queries = per_binding.min(per_dispatch) / 32 * 32;
        Ok(GpuTracer {
            device: device.clone(),
            queue: queue.clone(),
            layout,
            occluded,
            closest_hit,
            max_binding,
            max_queries,
            lost,
            cache: Mutex::new(SceneCache::default()),
            kits: Mutex::new(Vec::new()),
        })
    }

    /// Largest number of queries one dispatch takes; bigger batches are split.
    pub fn max_queries_per_dispatch(&self) -> usize {
        self.max_queries
    }

    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// A value built once per device and kept for the engine's lifetime, one per type: other
    /// modules' pipelines (the cover field's, intervis'), so repeated calls skip shader
    /// compilation.
    pub fn cached<T: std::any::Any + Send + Sync>(
        &self,
        make: impl FnOnce(&wgpu::Device) -> T,
    ) -> Arc<T> {
        let mut kits = self.kits.lock().unwrap();
        if let Some(kit) = kits.iter().find_map(|k| k.clone().downcast::<T>().ok()) {
            return kit;
        }
        let kit = Arc::new(make(&self.device));
        kits.push(kit.clone());
        kit
    }

    fn check_lost(&self) -> Result<()> {
        let _ = self.device.poll(wgpu::PollType::Poll); // lets a pending device-lost callback run
        match self.lost.lock().unwrap().as_ref() {
            Some(reason) => Err(Error::DeviceLost(reason.clone())),
            None => Ok(()),
        }
    }

    /// Uploads the tiers that changed since the last call (a moved door re-uploads only the
    /// movable tier) and returns the chunks to trace.
    fn upload(&self, scene: &Scene) -> Vec<Arc<Vec<Chunk>>> {
        let (uid, revisions) = scene.cache_key();
        let tiers = scene.tiers();
        let mut cache = self.cache.lock().unwrap();
        if cache.uid != uid {
            *cache = SceneCache {
                uid,
                ..Default::default()
            };
        }
        let mut out = Vec::new();
        for t in 0..2 {
            let fresh = matches!(&cache.tiers[t], Some((rev, _)) if *rev == revisions[t]);
            if !fresh {
                let chunks = Arc::new(self.upload_tier(tiers[t]));
                cache.tiers[t] = Some((revisions[t], chunks));
            }
            let chunks = &cache.tiers[t].as_ref().unwrap().1;
            if !chunks.is_empty() {
                out.push(chunks.clone());
            }
        }
        out
    }

    fn upload_tier(&self, tier: &Tier) -> Vec<Chunk> {
        if tier.triangles.is_empty() {
            return Vec::new();
        }
        let fits = |t: &Tier| {
            (t.nodes.len() * size_of::<BvhNode>()) as u64 <= self.max_binding
                && (t.triangles.len() * size_of::<GpuTriangle>()) as u64 <= self.max_binding
        };
        if fits(tier) {
            return vec![self.chunk(tier)];
        }
        // Node count is below 2n, so n triangles need at most 64n bytes of nodes.
        let per = (self.max_binding / 64).max(1) as usize;
        log::info!(
            "scene tier of {} triangles exceeds one binding ({} bytes): tracing it as {} chunks",
            tier.triangles.len(),
            self.max_binding,
            tier.triangles.len().div_ceil(per)
        );
        tier.triangles
            .chunks(per)
            .map(|tris| self.chunk(&Bvh::build(tris).into_tier(tris.to_vec())))
            .collect()
    }

    fn chunk(&self, tier: &Tier) -> Chunk {
        let storage = wgpu::BufferUsages::STORAGE;
        Chunk {
            nodes: self.buffer_with("bvh nodes", storage, bytemuck::cast_slice(&tier.nodes)),
            triangles: self.buffer_with(
                "bvh triangles",
                storage,
                bytemuck::cast_slice(&tier.triangles),
            ),
        }
    }

    fn buffer_with(&self, label: &str, usage: wgpu::BufferUsages, contents: &[u8]) -> wgpu::Buffer {
        buffer_with(&self.device, &self.queue, label, usage, contents)
    }

    /// Validates `segments` (as [`crate::Engine::occluded`] does), uploads them and binds them
    /// for the `occluded` kernel.
    pub fn prepare_occluded(
        &self,
        scene: &Scene,
        segments: &[Segment],
        mask: Mask,
    ) -> Result<TracePass> {
        crate::trace::validate_segments(segments)?;
        self.prepare(
            scene,
            Kind::Occluded,
            bytemuck::cast_slice(segments),
            segments.len(),
            mask.bits(),
        )
    }

    /// Validates `rays` (as [`crate::Engine::closest_hit`] does), uploads them and binds them
    /// for the `closest_hit` kernel.
    pub fn prepare_closest_hit(
        &self,
        scene: &Scene,
        rays: &[Ray],
        mask: Mask,
    ) -> Result<TracePass> {
        crate::trace::validate_rays(rays)?;
        let mask = mask.bits();
        // WGSL has no infinity literal; f32::MAX bounds an unbounded ray just as well.
        let rays: Vec<Ray> = rays
            .iter()
            .map(|r| Ray::new(r.origin(), r.dir(), r.t_max.min(f32::MAX)))
            .collect();
        self.prepare(
            scene,
            Kind::ClosestHit,
            bytemuck::cast_slice(&rays),
            rays.len(),
            mask,
        )
    }

    fn prepare(
        &self,
        scene: &Scene,
        kind: Kind,
        queries: &[u8],
        len: usize,
        mask: u32,
    ) -> Result<TracePass> {
        self.check_lost()?;
        let chunks = self.upload(scene);
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let mut slices = Vec::new();
        for start in (0..len).step_by(self.max_queries.max(1)) {
            let count = (len - start).min(self.max_queries);
            let input = self.buffer_with(
                "queries",
                wgpu::BufferUsages::STORAGE,
                &queries[start * 32..(start + count) * 32],
            );
            let bytes = match kind {
                Kind::Occluded => (count.div_ceil(32) * 4) as u64,
                Kind::ClosestHit => (count * size_of::<HitRecord>()) as u64,
            };
            let output = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("trace output"),
                size: bytes,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let readback = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("trace readback"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let params = |accumulate| {
                let p = Params {
                    count: count as u32,
                    mask,
                    accumulate,
                    _pad: 0,
                };
                self.buffer_with(
                    "trace params",
                    wgpu::BufferUsages::UNIFORM,
                    bytemuck::bytes_of(&p),
                )
            };
            let (first, rest) = (params(0), params(1));
            let bind_groups = chunks
                .iter()
                .flat_map(|c| c.iter())
                .enumerate()
                .map(|(i, c)| {
                    // Bits are cleared before the first chunk, so `occluded` always accumulates.
                    let p = if i == 0 && matches!(kind, Kind::ClosestHit) {
                        &first
                    } else {
                        &rest
                    };
                    self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: Some("trace"),
                        layout: &self.layout,
                        entries: &[
                            entry(0, &c.nodes),
                            entry(1, &c.triangles),
                            entry(2, p),
                            entry(3, &input),
                            entry(4, &output),
                        ],
                    })
                })
                .collect();
            slices.push(Slice {
                start,
                count,
                output,
                readback,
                bytes,
                bind_groups,
            });
        }
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Gpu(format!(
                "out of GPU memory for a batch of {len}: {e}; send smaller batches"
            )));
        }
        Ok(TracePass {
            kind,
            len,
            slices,
            _chunks: chunks,
        })
    }

    /// Encodes, submits and waits for `pass`.
    pub(crate) fn run(&self, pass: &TracePass) -> Result<()> {
        self.run_all(std::slice::from_ref(pass))
    }

    /// Encodes every pass into one encoder and submits it once.
    pub(crate) fn run_all(&self, passes: &[TracePass]) -> Result<()> {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut encoder = self.device.create_command_encoder(&Default::default());
        for pass in passes {
            pass.encode(self, &mut encoder);
        }
        self.queue.submit([encoder.finish()]);
        if let Some(e) = pollster::block_on(scope.pop()) {
            self.check_lost()?;
            return Err(Error::Gpu(e.to_string()));
        }
        Ok(())
    }

    fn map_all(&self, pass: &TracePass) -> Result<()> {
        if let Err(e) = map_read_all(
            &self.device,
            pass.slices.iter().map(|s| &s.readback),
            "trace results",
        ) {
            self.check_lost()?;
            return Err(e);
        }
        self.check_lost()
    }
}

/// Encodes work into a new encoder, submits it and reports validation errors and GPU memory
/// exhaustion as errors (`what` names the work, `oom_fix` says what to lower).
pub(crate) fn submit_checked(
    tracer: &GpuTracer,
    what: &str,
    oom_fix: &str,
    encode: impl FnOnce(&mut wgpu::CommandEncoder),
) -> Result<()> {
    let device = tracer.device();
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let mut encoder = device.create_command_encoder(&Default::default());
    encode(&mut encoder);
    tracer.queue().submit([encoder.finish()]);
    if let Some(e) = pollster::block_on(validation.pop()) {
        tracer.check_lost()?;
        return Err(Error::Gpu(format!("{what} failed: {e}")));
    }
    if let Some(e) = pollster::block_on(oom.pop()) {
        return Err(Error::Gpu(format!(
            "out of GPU memory for {what}: {e}; {oom_fix}"
        )));
    }
    Ok(())
}

/// A buffer holding `contents`, at least 4 bytes. (Not `create_buffer_init`: it panics on a
/// lost device.) Shared by every GPU module.
pub(crate) fn buffer_with(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    label: &str,
    usage: wgpu::BufferUsages,
    contents: &[u8],
) -> wgpu::Buffer {
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (contents.len() as u64).max(4),
        usage: usage | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    if !contents.is_empty() {
        queue.write_buffer(&buffer, 0, contents);
    }
    buffer
}

/// A square 2D texture array (`size` x `size`, `layers` layers, one mip level). Shared by the
/// render-pass modules (cover field, intervis).
pub(crate) fn texture_array(
    device: &wgpu::Device,
    label: &str,
    size: u32,
    layers: u32,
    format: wgpu::TextureFormat,
    usage: wgpu::TextureUsages,
) -> wgpu::Texture {
    device.create_texture(&wgpu::TextureDescriptor {
        label: Some(label),
        size: wgpu::Extent3d {
            width: size,
            height: size,
            depth_or_array_layers: layers,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage,
        view_formats: &[],
    })
}

/// Maps `buffers` for reading and waits for all of them; a failure is a lost device, with
/// `what` naming the readback. Shared by every GPU module.
pub(crate) fn map_read_all<'a>(
    device: &wgpu::Device,
    buffers: impl IntoIterator<Item = &'a wgpu::Buffer>,
    what: &str,
) -> Result<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut count = 0;
    for b in buffers {
        let tx = tx.clone();
        b.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        count += 1;
    }
    drop(tx);
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| Error::DeviceLost(e.to_string()))?;
    for _ in 0..count {
        match rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Err(Error::DeviceLost(format!(
                    "reading {what} back failed: {e}"
                )))
            }
            Err(_) => return Err(Error::DeviceLost("the device dropped a readback".into())),
        }
    }
    Ok(())
}

fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: buffer.as_entire_binding(),
    }
}

impl TracePass {
    /// Records the dispatches (one per slice and scene chunk) and the copies to readback
    /// buffers into `encoder`.
    pub fn encode(&self, tracer: &GpuTracer, encoder: &mut wgpu::CommandEncoder) {
        for s in &self.slices {
            if matches!(self.kind, Kind::Occluded) {
                encoder.clear_buffer(&s.output, 0, None);
            } else if s.bind_groups.is_empty() {
                continue; // empty scene: read_hits reports misses without touching the buffer
            }
            {
                let mut cpass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("sightline trace"),
                    timestamp_writes: None,
                });
                cpass.set_pipeline(match self.kind {
                    Kind::Occluded => &tracer.occluded,
                    Kind::ClosestHit => &tracer.closest_hit,
                });
                for bg in &s.bind_groups {
                    cpass.set_bind_group(0, bg, &[]);
                    cpass.dispatch_workgroups((s.count as u32).div_ceil(WORKGROUP), 1, 1);
                }
            }
            encoder.copy_buffer_to_buffer(&s.output, 0, &s.readback, 0, s.bytes);
        }
    }

    /// Number of queries in the batch.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Waits for the submitted pass and returns the occlusion bits.
    pub fn read_occlusion(&self, tracer: &GpuTracer) -> Result<Occlusion> {
        if !matches!(self.kind, Kind::Occluded) {
            return Err(Error::InvalidInput(
                "read_occlusion on a closest-hit pass: use read_hits".into(),
            ));
        }
        tracer.map_all(self)?;
        let mut out = Occlusion::new(self.len);
        for s in &self.slices {
            let view = s
                .readback
                .get_mapped_range(..)
                .map_err(|e| Error::Gpu(e.to_string()))?;
            let words: &[u32] = bytemuck::cast_slice(&view);
            out.words[s.start / 32..][..words.len()].copy_from_slice(words);
            drop(view);
            s.readback.unmap();
        }
        Ok(out)
    }

    /// Waits for the submitted pass and returns one record per ray.
    pub fn read_hits(&self, tracer: &GpuTracer) -> Result<Vec<HitRecord>> {
        if !matches!(self.kind, Kind::ClosestHit) {
            return Err(Error::InvalidInput(
                "read_hits on an occlusion pass: use read_occlusion".into(),
            ));
        }
        let mut out = vec![HitRecord::MISS; self.len];
        let live: Vec<&Slice> = self
            .slices
            .iter()
            .filter(|s| !s.bind_groups.is_empty())
            .collect();
        if live.is_empty() {
            return Ok(out);
        }
        tracer.map_all(self)?;
        for s in live {
            let view = s
                .readback
                .get_mapped_range(..)
                .map_err(|e| Error::Gpu(e.to_string()))?;
            let recs: &[HitRecord] = bytemuck::cast_slice(&view);
            for (o, r) in out[s.start..s.start + s.count].iter_mut().zip(recs) {
                *o = if r.triangle == NO_HIT {
                    HitRecord::MISS
                } else {
                    *r
                };
            }
            drop(view);
            s.readback.unmap();
        }
        Ok(out)
    }
}
