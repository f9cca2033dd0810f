//! The GPU backend: the WGSL kernels in `shaders/`, scene upload, and batches split to fit the
//! device's dispatch and binding limits.
//!
//! A scene tier larger than one storage binding is cut into chunks, each with its own BVH; a
//! batch runs over every chunk, and the kernels merge chunk results (bits are OR-ed, closest hits
//! keep the nearer record, ties to the lower triangle id), so splitting never changes an answer
//! on the compute walk. On the ray-query walk (`ray_query.rs`) each chunk has its own
//! acceleration structures instead; there a closest hit between two coincident faces may fall
//! on either face, split or not (see ARCHITECTURE.md, "Ray queries propose, our test decides").
//!
//! Per-call buffers come from a workspace: each slice of a batch checks out a [`Slot`] (queries,
//! output, readback and params buffers, plus bind groups for the scene chunks it last ran on),
//! grows it if the slice does not fit, and gives it back when its [`TracePass`] is dropped. Two
//! live passes never share a slot, so passes encoded into one command buffer stay independent;
//! repeated calls of similar size create no buffer and no bind group.

use crate::bvh::{Bvh, BvhNode, GpuTriangle};
use crate::counters::{CounterReport, Counters, Tally};
use crate::pool::Trim;
use crate::scene::{Mask, Scene, Tier};
use crate::trace::{HitRecord, Occlusion, Ray, Segment, NO_HIT};
use crate::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

mod ray_query;
use ray_query::ChunkAccel;
pub use ray_query::RayQuery;

const WORKGROUP: u32 = 64;

/// Bytes of one query (`Segment` or `Ray`) and of one closest-hit record.
const QUERY_BYTES: usize = 32;
const _: () = assert!(size_of::<Segment>() == QUERY_BYTES && size_of::<Ray>() == QUERY_BYTES);
const _: () = assert!(size_of::<HitRecord>() == QUERY_BYTES);

/// Idle slots the workspace keeps; more are freed when their passes are dropped.
const MAX_IDLE_SLOTS: usize = 8;

/// Uniform block of every kernel. Mirrors `struct Params` in `shaders/common.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub count: u32,
    pub mask: u32,
    pub accumulate: u32,
    /// Not read by the kernels: a pass copies it behind its results as proof that its command
    /// buffer ran (a reused readback would otherwise still hold an earlier call's answer).
    pub stamp: u32,
}
const _: () = assert!(size_of::<Params>() == 16);
const _: () = assert!(std::mem::offset_of!(Params, stamp) == 12);

/// WGSL source of a kernel on the compute walk: `common.wgsl`, `bvh_walk.wgsl`, then the
/// kernel's file.
pub fn kernel_source(kernel: &str) -> String {
    kernel_source_for(kernel, false)
}

/// WGSL source of a kernel on the compute walk or, with `ray_query`, on the hardware walk
/// (`enable wgpu_ray_query;`, `common.wgsl`, `ray_query.wgsl`, the kernel's file).
pub fn kernel_source_for(kernel: &str, ray_query: bool) -> String {
    let body = match kernel {
        "occluded" => include_str!("../shaders/occluded.wgsl"),
        "closest_hit" => include_str!("../shaders/closest_hit.wgsl"),
        "los_table" => include_str!("../shaders/los_table.wgsl"),
        _ => panic!("unknown kernel {kernel}"),
    };
    let common = include_str!("../shaders/common.wgsl");
    if ray_query {
        let walk = include_str!("../shaders/ray_query.wgsl");
        format!("enable wgpu_ray_query;\n{common}\n{walk}\n{body}")
    } else {
        let walk = include_str!("../shaders/bvh_walk.wgsl");
        format!("{common}\n{walk}\n{body}")
    }
}

struct Chunk {
    /// What binding 0 walks: the BVH nodes, or the acceleration structures (ray-query path).
    walk: Walk,
    triangles: wgpu::Buffer,
}

enum Walk {
    Nodes(wgpu::Buffer),
    Accel(ChunkAccel),
}

/// One tier's uploaded chunks. `id` is unique per upload for the tracer's lifetime, so a slot's
/// bind groups can be matched to the chunks they bind.
struct TierChunks {
    id: u64,
    chunks: Vec<Chunk>,
}

#[derive(Default)]
struct SceneCache {
    uid: u64,
    tiers: [Option<(u64, Arc<TierChunks>)>; 2],
}

/// States of a slot's upload buffer.
const UNMAPPED: u8 = 0;
const MAPPING: u8 = 1;
const MAPPED: u8 = 2;

/// The reusable buffers of one slice of a batch.
struct Slot {
    /// `MAP_WRITE | COPY_SRC`: the params blocks, then the queries, written through the
    /// mapping and copied into `params` and `queries` by the pass (no staging buffer). Mapped
    /// again for the next pass once this pass was read.
    upload: wgpu::Buffer,
    /// `UNMAPPED`, `MAPPING` or `MAPPED`: whether `upload` can be written now.
    upload_state: Arc<AtomicU8>,
    /// `STORAGE | COPY_DST`: the queries, copied from `upload`.
    queries: wgpu::Buffer,
    /// `STORAGE | COPY_SRC | COPY_DST`: occlusion words or hit records.
    output: wgpu::Buffer,
    /// `MAP_READ | COPY_DST`: the output's bytes, then the stamp word.
    readback: wgpu::Buffer,
    /// `UNIFORM | COPY_SRC | COPY_DST`: two `Params` blocks, for the first scene chunk at 0 and
    /// for later chunks at `params_stride`.
    params: wgpu::Buffer,
    /// Ids of the chunk sets `bind_groups` bind (one bind group per chunk, in order).
    bound: Vec<u64>,
    bind_groups: Vec<wgpu::BindGroup>,
    /// Set while the readback may be mapped; such a slot is freed, not reused.
    mapped: AtomicBool,
}

impl Slot {
    /// Asks for the upload buffer's mapping, unless it is mapped or being mapped; the next
    /// poll of the device completes it. Only when no unfinished submission uses the buffer.
    fn map_upload(&self) {
        let state = self.upload_state.clone();
        if state
            .compare_exchange(UNMAPPED, MAPPING, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.upload.map_async(wgpu::MapMode::Write, .., move |r| {
                state.store(if r.is_ok() { MAPPED } else { UNMAPPED }, Ordering::Release);
            });
        }
    }

    fn bytes(&self) -> u64 {
        self.upload.size()
            + self.queries.size()
            + self.output.size()
            + self.readback.size()
            + self.params.size()
    }
}

/// Counters of a tracer's workspace (see [`GpuTracer::workspace_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkspaceStats {
    /// Buffers the workspace created since the tracer was made (queries, output, readback and
    /// params; not the scene's).
    pub buffers_created: u64,
    /// Bind groups created since the tracer was made.
    pub bind_groups_created: u64,
    /// Slots waiting for the next pass.
    pub idle_slots: usize,
    /// Bytes of GPU memory the idle slots hold.
    pub idle_bytes: u64,
}

#[derive(Default)]
struct Workspace {
    idle: Mutex<Vec<Slot>>,
    buffers_created: AtomicU64,
    bind_groups_created: AtomicU64,
}

impl Workspace {
    fn give_back(&self, slots: impl IntoIterator<Item = Slot>) {
        let mut idle = self.idle.lock().unwrap();
        for slot in slots {
            if !slot.mapped.load(Ordering::Relaxed) && idle.len() < MAX_IDLE_SLOTS {
                // A pass given back was read (its upload is being mapped already) or never
                // encoded (no submission uses the upload).
                slot.map_upload();
                idle.push(slot);
            }
        }
    }
}

/// Compiled kernels on a (possibly borrowed) device, plus the uploaded scene.
pub struct GpuTracer {
    device: wgpu::Device,
    queue: wgpu::Queue,
    layout: wgpu::BindGroupLayout,
    /// Whether the kernels walk the scene with ray queries (else the compute BVH walk).
    ray_query: bool,
    /// Tiers uploaded whose acceleration structures are not built yet (ray-query path).
    pending_builds: Mutex<Vec<Arc<TierChunks>>>,
    occluded: wgpu::ComputePipeline,
    closest_hit: wgpu::ComputePipeline,
    max_binding: u64,
    max_queries: usize,
    params_stride: u64,
    lost: Arc<Mutex<Option<String>>>,
    cache: Mutex<SceneCache>,
    next_upload: AtomicU64,
    next_stamp: AtomicU32,
    workspace: Arc<Workspace>,
    /// Pipelines other modules build once per device (see [`GpuTracer::cached`]).
    kits: Mutex<Vec<Arc<dyn std::any::Any + Send + Sync>>>,
    /// Other modules' pools of idle resources, emptied by [`GpuTracer::trim_workspace`].
    pools: Mutex<Vec<Arc<dyn Trim>>>,
    tally: Tally,
}

enum Kind {
    Occluded,
    ClosestHit,
}

impl Kind {
    /// The operation its work is counted under.
    fn op(&self) -> &'static str {
        match self {
            Kind::Occluded => "occluded",
            Kind::ClosestHit => "closest_hit",
        }
    }
}

struct Slice {
    start: usize,
    count: usize,
    /// Whether the params and queries wait in the slot's upload buffer (copied by `encode`);
    /// otherwise they were written with `Queue::write_buffer`.
    from_upload: bool,
    /// Bytes of results in the output (the stamp follows them in the readback).
    bytes: u64,
    /// Bytes of the output cleared before the pass: the results and, for staged segments,
    /// the runs' flags (not read back).
    cleared: u64,
    stamp: u32,
    slot: Slot,
}

impl Slice {
    /// Where the stamp lies in the readback: after the results, at a mappable offset.
    fn stamp_at(&self) -> u64 {
        self.bytes.next_multiple_of(wgpu::MAP_ALIGNMENT)
    }
}

/// A batch uploaded and bound, ready to be encoded into any command encoder.
///
/// `Engine::occluded` and `Engine::closest_hit` do prepare, encode, submit and read in one call;
/// a renderer can instead [`TracePass::encode`] into its own encoder, submit it with its frame,
/// and [`TracePass::read_occlusion`] / [`TracePass::read_hits`] afterwards. Reading a pass
/// before its command buffer was submitted is an error. The pass holds its buffers until it is
/// dropped, then gives them back to the tracer for the next pass.
pub struct TracePass {
    kind: Kind,
    len: usize,
    slices: Vec<Slice>,
    encoded: AtomicBool,
    /// Encoded since the last read: a caller's unsubmitted command buffer may still use the
    /// buffers, so dropping the pass frees them instead of giving them back.
    unread: AtomicBool,
    /// The submission `Engine` made for the pass, so reading waits for it alone (a caller's
    /// own submission is not known: reading then waits for the queue).
    submission: Mutex<Option<wgpu::SubmissionIndex>>,
    /// Mapped with other passes of its submission by one wait ([`GpuTracer::map_passes`]).
    premapped: AtomicBool,
    workspace: Arc<Workspace>,
}

impl Drop for TracePass {
    fn drop(&mut self) {
        if !self.unread.load(Ordering::Relaxed) {
            self.workspace
                .give_back(std::mem::take(&mut self.slices).into_iter().map(|s| s.slot));
        }
    }
}

impl GpuTracer {
    pub(crate) fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        max_binding_override: Option<u64>,
        ray_query: bool,
        lost: Arc<Mutex<Option<String>>>,
    ) -> Result<GpuTracer> {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let layout = trace_bind_group_layout(device, ray_query);
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("sightline trace"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = |name: &str| {
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(name),
                source: wgpu::ShaderSource::Wgsl(kernel_source_for(name, ray_query).into()),
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
            let walk = if ray_query { " (ray queries)" } else { "" };
            return Err(Error::Gpu(format!(
                "building the tracing kernels{walk} failed: {e}"
            )));
        }
        let limits = device.limits();
        let max_binding = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size)
            .min(max_binding_override.unwrap_or(u64::MAX))
            .max(1024);
        let per_binding = (max_binding / QUERY_BYTES as u64) as usize;
        // A readback holds a slice's records and the stamp (8-aligned for mapping).
        let per_readback = ((limits.max_buffer_size - 8) / QUERY_BYTES as u64) as usize;
        let per_dispatch =
            limits.max_compute_workgroups_per_dimension as usize * WORKGROUP as usize;
        let max_queries = per_binding.min(per_readback).min(per_dispatch) / 32 * 32;
        Ok(GpuTracer {
            device: device.clone(),
            queue: queue.clone(),
            layout,
            ray_query,
            pending_builds: Mutex::new(Vec::new()),
            occluded,
            closest_hit,
            max_binding,
            max_queries,
            params_stride: u64::from(limits.min_uniform_buffer_offset_alignment)
                .max(size_of::<Params>() as u64),
            lost,
            cache: Mutex::new(SceneCache::default()),
            next_upload: AtomicU64::new(1),
            next_stamp: AtomicU32::new(1),
            workspace: Arc::default(),
            kits: Mutex::new(Vec::new()),
            pools: Mutex::new(Vec::new()),
            tally: Tally::default(),
        })
    }

    /// Whether the tracing kernels walk the scene with hardware ray queries (acceleration
    /// structures) rather than the compute BVH walk.
    #[must_use]
    pub fn uses_ray_query(&self) -> bool {
        self.ray_query
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

    /// What the per-call buffer workspace has created and holds: repeated calls of similar
    /// size should leave `buffers_created` and `bind_groups_created` unchanged.
    pub fn workspace_stats(&self) -> WorkspaceStats {
        let idle = self.workspace.idle.lock().unwrap();
        WorkspaceStats {
            buffers_created: self.workspace.buffers_created.load(Ordering::Relaxed),
            bind_groups_created: self.workspace.bind_groups_created.load(Ordering::Relaxed),
            idle_slots: idle.len(),
            idle_bytes: idle.iter().map(Slot::bytes).sum(),
        }
    }

    /// Frees the idle workspace buffers (after a one-off huge batch, say): the trace slots,
    /// and the textures and buffers the cover field and intervis passes keep for the next
    /// call. Live passes keep theirs; the next call allocates afresh. Uploaded scene data
    /// stays.
    pub fn trim_workspace(&self) {
        self.workspace.idle.lock().unwrap().clear();
        let pools = self.pools.lock().unwrap().clone();
        for pool in pools {
            pool.trim();
        }
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

    /// [`GpuTracer::cached`] for a value holding pools of idle resources, which
    /// [`GpuTracer::trim_workspace`] then empties.
    pub(crate) fn cached_pool<T: Trim + std::any::Any + 'static>(
        &self,
        make: impl FnOnce(&wgpu::Device) -> T,
    ) -> Arc<T> {
        let mut made = false;
        let value = self.cached(|d| {
            made = true;
            make(d)
        });
        if made {
            self.pools.lock().unwrap().push(value.clone());
        }
        value
    }

    /// GPU work done on this tracer so far, per operation and in total.
    pub fn counters(&self) -> CounterReport {
        self.tally.report()
    }

    /// Adds to operation `op`'s counters.
    pub(crate) fn count(&self, op: &'static str, f: impl FnOnce(&mut Counters)) {
        self.tally.add(op, f);
    }

    /// `Device::create_buffer`, counted under `op`.
    pub(crate) fn create_buffer(
        &self,
        op: &'static str,
        desc: &wgpu::BufferDescriptor<'_>,
    ) -> wgpu::Buffer {
        self.count(op, |c| c.buffers_created += 1);
        self.device.create_buffer(desc)
    }

    /// `Queue::write_buffer`, counted under `op`.
    pub(crate) fn write_buffer(
        &self,
        op: &'static str,
        buffer: &wgpu::Buffer,
        offset: u64,
        bytes: &[u8],
    ) {
        self.count(op, |c| {
            c.bytes_uploaded += bytes.len() as u64;
            c.staging_writes += 1;
        });
        self.queue.write_buffer(buffer, offset, bytes);
    }

    /// `Queue::submit` of one command buffer, counted under `op`.
    pub(crate) fn submit(
        &self,
        op: &'static str,
        commands: wgpu::CommandBuffer,
    ) -> wgpu::SubmissionIndex {
        self.count(op, |c| c.submissions += 1);
        self.queue.submit([commands])
    }

    /// Polls the device without waiting (finishing pending maps) and fails if it was lost.
    pub(crate) fn check_lost(&self) -> Result<()> {
        let _ = self.device.poll(wgpu::PollType::Poll); // lets a pending device-lost callback run
        match self.lost.lock().unwrap().as_ref() {
            Some(reason) => Err(Error::DeviceLost(reason.clone())),
            None => Ok(()),
        }
    }

    /// The tracing kernels' bind-group layout (scene chunk at bindings 0 and 1, `Params` at 2,
    /// input at 3, output at 4), for kernels of other modules that walk the scene.
    pub(crate) fn trace_layout(&self) -> &wgpu::BindGroupLayout {
        &self.layout
    }

    /// Bytes one storage binding may hold: the device's limit, or the engine's smaller
    /// `max_binding_bytes`.
    pub(crate) fn max_binding(&self) -> u64 {
        self.max_binding
    }

    /// Uploads the scene's changed tiers (as a trace does) and binds every chunk of it with
    /// `params`, `input` and `output` over [`GpuTracer::trace_layout`]: one bind group per
    /// chunk, in the order a trace dispatches them; none for a scene without triangles.
    pub(crate) fn bind_scene(
        &self,
        scene: &Scene,
        params: &wgpu::Buffer,
        input: &wgpu::Buffer,
        output: &wgpu::Buffer,
    ) -> Vec<wgpu::BindGroup> {
        let tiers = self.upload(scene);
        let chunks = tiers.iter().flat_map(|t| t.chunks.iter());
        chunks
            .map(|c| self.bind_chunk(c, params.as_entire_binding(), input, output))
            .collect()
    }

    /// A bind group over [`GpuTracer::trace_layout`]: scene chunk `c` with `params`, `input`
    /// and `output`.
    fn bind_chunk(
        &self,
        c: &Chunk,
        params: wgpu::BindingResource<'_>,
        input: &wgpu::Buffer,
        output: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        let mut entries = vec![
            entry(1, &c.triangles),
            wgpu::BindGroupEntry {
                binding: 2,
                resource: params,
            },
            entry(3, input),
            entry(4, output),
        ];
        match &c.walk {
            Walk::Accel(accel) => entries.extend([
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: accel.tlas.as_binding(),
                },
                entry(5, &accel.tri_index),
            ]),
            Walk::Nodes(nodes) => entries.push(entry(0, nodes)),
        }
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("trace"),
            layout: &self.layout,
            entries: &entries,
        })
    }

    /// Uploads the tiers that changed since the last call (a moved door re-uploads only the
    /// movable tier) and returns the non-empty tiers' chunks to trace.
    fn upload(&self, scene: &Scene) -> Vec<Arc<TierChunks>> {
        let (uid, revisions) = scene.cache_key();
        let tiers = scene.tiers();
        let mut cache = self.cache.lock().unwrap();
        if cache.uid != uid {
            *cache = SceneCache {
                uid,
                ..Default::default()
            };
        }
        let mut replaced = false;
        let mut out = Vec::new();
        for t in 0..2 {
            let fresh = matches!(&cache.tiers[t], Some((rev, _)) if *rev == revisions[t]);
            if !fresh {
                let chunks = Arc::new(TierChunks {
                    id: self.next_upload.fetch_add(1, Ordering::Relaxed),
                    chunks: self.upload_tier(tiers[t]),
                });
                if self.ray_query {
                    self.pending_builds.lock().unwrap().push(chunks.clone());
                }
                cache.tiers[t] = Some((revisions[t], chunks));
                replaced = true;
            }
            let chunks = &cache.tiers[t].as_ref().unwrap().1;
            if !chunks.chunks.is_empty() {
                out.push(chunks.clone());
            }
        }
        drop(cache);
        if replaced {
            // Idle slots' bind groups would keep the replaced scene buffers alive.
            for slot in self.workspace.idle.lock().unwrap().iter_mut() {
                slot.bound.clear();
                slot.bind_groups.clear();
            }
        }
        out
    }

    fn upload_tier(&self, tier: &Tier) -> Vec<Chunk> {
        if tier.triangles.is_empty() {
            return Vec::new();
        }
        // An instance's custom index (where its class starts among the chunk's triangles) has
        // 24 bits, which bounds a chunk on the ray-query path.
        let most = if self.ray_query { 1 << 24 } else { usize::MAX };
        let fits = |t: &Tier| {
            (t.nodes.len() * size_of::<BvhNode>()) as u64 <= self.max_binding
                && (t.triangles.len() * size_of::<GpuTriangle>()) as u64 <= self.max_binding
                && t.triangles.len() <= most
        };
        if fits(tier) {
            return vec![self.chunk(&tier.nodes, &tier.triangles)];
        }
        // Node count is below 2n, so n triangles need at most 64n bytes of nodes.
        let per = ((self.max_binding / 64).max(1) as usize).min(most);
        log::info!(
            "scene tier of {} triangles exceeds one binding ({} bytes): tracing it as {} chunks",
            tier.triangles.len(),
            self.max_binding,
            tier.triangles.len().div_ceil(per)
        );
        tier.triangles
            .chunks(per)
            .map(|tris| {
                if self.ray_query {
                    // The acceleration structures need no BVH of their own.
                    return self.chunk(&[], tris);
                }
                let tier = Bvh::build(tris).into_tier(tris.to_vec());
                self.chunk(&tier.nodes, &tier.triangles)
            })
            .collect()
    }

    /// Uploads one chunk: its triangles, and its BVH nodes or (ray-query path) its
    /// acceleration structures.
    fn chunk(&self, nodes: &[BvhNode], triangles: &[GpuTriangle]) -> Chunk {
        let storage = wgpu::BufferUsages::STORAGE;
        let walk = if self.ray_query {
            Walk::Accel(self.chunk_accel(triangles))
        } else {
            let nodes = bytemuck::cast_slice(nodes);
            Walk::Nodes(buffer_with(self, "scene", "bvh nodes", storage, nodes))
        };
        let triangles = bytemuck::cast_slice(triangles);
        Chunk {
            walk,
            triangles: buffer_with(self, "scene", "bvh triangles", storage, triangles),
        }
    }

    /// Validates `segments` (as [`crate::Engine::occluded`] does), uploads them and binds them
    /// for the `occluded` kernel. An empty batch or a scene without triangles needs no GPU
    /// work: the pass then holds no buffers and its answer is known.
    pub fn prepare_occluded(
        &self,
        scene: &Scene,
        segments: &[Segment],
        mask: Mask,
    ) -> Result<TracePass> {
        crate::trace::validate_segments(segments)?;
        let staged = segments.iter().any(|s| s.stage().is_some());
        self.prepare(
            scene,
            Kind::Occluded,
            bytemuck::cast_slice(segments),
            segments.len(),
            (mask.bits(), staged),
        )
    }

    /// Validates `rays` (as [`crate::Engine::closest_hit`] does), uploads them and binds them
    /// for the `closest_hit` kernel. As [`GpuTracer::prepare_occluded`], no GPU work for an
    /// empty batch or scene.
    pub fn prepare_closest_hit(
        &self,
        scene: &Scene,
        rays: &[Ray],
        mask: Mask,
    ) -> Result<TracePass> {
        crate::trace::validate_rays(rays)?;
        if rays.iter().all(|r| r.t_max <= f32::MAX) {
            return self.prepare(
                scene,
                Kind::ClosestHit,
                bytemuck::cast_slice(rays),
                rays.len(),
                (mask.bits(), false),
            );
        }
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
            (mask.bits(), false),
        )
    }

    /// A pass with no GPU work: its answer (no bits set, no hits) is known without tracing.
    fn no_work(&self, kind: Kind, len: usize) -> TracePass {
        TracePass {
            kind,
            len,
            slices: Vec::new(),
            encoded: AtomicBool::new(false),
            unread: AtomicBool::new(false),
            submission: Mutex::new(None),
            premapped: AtomicBool::new(false),
            workspace: self.workspace.clone(),
        }
    }

    /// Uploads `queries` for `kind` in slices; `staged` (occlusion only) leaves room for the
    /// runs' flags after each slice's bits.
    fn prepare(
        &self,
        scene: &Scene,
        kind: Kind,
        queries: &[u8],
        len: usize,
        (mask, staged): (u32, bool),
    ) -> Result<TracePass> {
        if len == 0 {
            return Ok(self.no_work(kind, 0));
        }
        self.check_lost()?;
        let chunks = self.upload(scene);
        if chunks.is_empty() {
            return Ok(self.no_work(kind, len));
        }
        let ids: Vec<u64> = chunks.iter().map(|c| c.id).collect();
        let n = chunks.iter().map(|t| t.chunks.len()).sum::<usize>();
        // Staging skips a segment once its run is answered, which holds only in the last
        // dispatch: the params blocks tell the first chunk from the rest, so beyond two
        // chunks the segments go plain.
        let plain: Vec<Segment>;
        let (queries, staged) = match staged && n > 2 {
            true => {
                plain = bytemuck::pod_collect_to_vec::<u8, Segment>(queries)
                    .into_iter()
                    .map(Segment::unstaged)
                    .collect();
                (bytemuck::cast_slice::<Segment, u8>(&plain), false)
            }
            false => (queries, staged),
        };
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let mut slices = Vec::new();
        for start in (0..len).step_by(self.max_queries.max(1)) {
            let count = (len - start).min(self.max_queries);
            let bytes = match kind {
                Kind::Occluded => (count.div_ceil(32) * 4) as u64,
                Kind::ClosestHit => (count * QUERY_BYTES) as u64,
            };
            let cleared = bytes + u64::from(staged) * (count.div_ceil(8) * 4) as u64;
            let mut slot = self.take_slot(kind.op(), (count * QUERY_BYTES) as u64, cleared);
            if slot.bound != ids {
                slot.bind_groups = self.bind_groups(&slot, &chunks);
                slot.bound.clone_from(&ids);
            }
            let stamp = self.stamp();
            let params = self.params_blocks(&kind, count, (mask, staged.then_some(n)), stamp);
            let q = &queries[start * QUERY_BYTES..(start + count) * QUERY_BYTES];
            let from_upload = self.write_slot(kind.op(), &slot, &params, q)?;
            slices.push(Slice {
                start,
                count,
                from_upload,
                bytes,
                cleared,
                stamp,
                slot,
            });
        }
        if let Some(e) = pollster::block_on(scope.pop()) {
            // The slices' slots are dropped with them, not given back.
            return Err(Error::Gpu(format!(
                "out of GPU memory for a batch of {len}: {e}; send smaller batches"
            )));
        }
        Ok(TracePass {
            kind,
            len,
            slices,
            encoded: AtomicBool::new(false),
            unread: AtomicBool::new(false),
            submission: Mutex::new(None),
            premapped: AtomicBool::new(false),
            workspace: self.workspace.clone(),
        })
    }

    /// The two `Params` blocks of a slice: for the first scene chunk at 0, for later chunks
    /// at `params_stride`. `staged` holds the number of chunks where the batch holds staged
    /// segments, whose last dispatch (of at most two) then stages them (`accumulate` 2).
    fn params_blocks(
        &self,
        kind: &Kind,
        count: usize,
        (mask, staged): (u32, Option<usize>),
        stamp: u32,
    ) -> Vec<u8> {
        // Bits are cleared before the first chunk, so `occluded` always accumulates.
        let first = Params {
            count: count as u32,
            mask,
            accumulate: u32::from(matches!(kind, Kind::Occluded)) + u32::from(staged == Some(1)),
            stamp,
        };
        let rest = Params {
            accumulate: 1 + u32::from(staged == Some(2)),
            ..first
        };
        let mut params = vec![0u8; self.params_len() as usize];
        params[..16].copy_from_slice(bytemuck::bytes_of(&first));
        params[self.params_stride as usize..].copy_from_slice(bytemuck::bytes_of(&rest));
        params
    }

    /// Bytes of a slot's params buffer (two blocks), where its queries start in the upload.
    fn params_len(&self) -> u64 {
        self.params_stride + 16
    }

    /// Puts a slice's params and queries where its pass reads them: through the slot's mapped
    /// upload buffer when it is mapped (true; `encode` copies them), else with
    /// `Queue::write_buffer` (a temporary staging buffer each, counted as `staging_writes`).
    fn write_slot(&self, op: &'static str, slot: &Slot, params: &[u8], q: &[u8]) -> Result<bool> {
        self.count(op, |c| c.bytes_uploaded += (params.len() + q.len()) as u64);
        if slot.upload_state.load(Ordering::Acquire) == MAPPED {
            let at = self.params_len() as usize;
            {
                let mut view = slot
                    .upload
                    .get_mapped_range_mut(..)
                    .map_err(|e| Error::Gpu(e.to_string()))?;
                view.slice(..params.len()).copy_from_slice(params);
                view.slice(at..at + q.len()).copy_from_slice(q);
            }
            slot.upload.unmap();
            slot.upload_state.store(UNMAPPED, Ordering::Release);
            return Ok(true);
        }
        self.count(op, |c| c.staging_writes += 2);
        self.queue.write_buffer(&slot.params, 0, params);
        self.queue.write_buffer(&slot.queries, 0, q);
        Ok(false)
    }

    /// The next stamp (never 0, the word of a readback no submission wrote).
    fn stamp(&self) -> u32 {
        loop {
            let s = self.next_stamp.fetch_add(1, Ordering::Relaxed);
            if s != 0 {
                return s;
            }
        }
    }

    /// An idle slot that holds `query_bytes` of queries and `output_bytes` of results, grown
    /// if none does, or a new one.
    fn take_slot(&self, op: &'static str, query_bytes: u64, output_bytes: u64) -> Slot {
        let fits = |s: &Slot| s.queries.size() >= query_bytes && s.output.size() >= output_bytes;
        let taken = {
            let mut idle = self.workspace.idle.lock().unwrap();
            match idle.iter().rposition(fits) {
                Some(i) => Some(idle.swap_remove(i)),
                None => idle.pop(),
            }
        };
        let mut slot = match taken {
            Some(slot) => slot,
            None => Slot {
                upload: self.upload_buffer(op, query_bytes),
                upload_state: Arc::new(AtomicU8::new(MAPPED)),
                queries: self.queries_buffer(op, query_bytes),
                output: self.output_buffer(op, output_bytes),
                readback: self.readback_buffer(op, output_bytes),
                params: self.slot_buffer(
                    op,
                    "trace params",
                    self.params_len(),
                    wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_SRC,
                ),
                bound: Vec::new(),
                bind_groups: Vec::new(),
                mapped: AtomicBool::new(false),
            },
        };
        if slot.upload.size() < self.params_len() + query_bytes {
            slot.upload = self.upload_buffer(op, query_bytes);
            slot.upload_state = Arc::new(AtomicU8::new(MAPPED));
        }
        if slot.queries.size() < query_bytes {
            slot.queries = self.queries_buffer(op, query_bytes);
            slot.bound.clear();
        }
        if slot.output.size() < output_bytes {
            slot.output = self.output_buffer(op, output_bytes);
            slot.readback = self.readback_buffer(op, output_bytes);
            slot.bound.clear();
        }
        slot
    }

    /// A mapped upload buffer for the params blocks and `need` bytes of queries.
    fn upload_buffer(&self, op: &'static str, need: u64) -> wgpu::Buffer {
        self.workspace
            .buffers_created
            .fetch_add(1, Ordering::Relaxed);
        self.create_buffer(
            op,
            &wgpu::BufferDescriptor {
                label: Some("trace upload"),
                size: self.params_len() + self.grown(need),
                usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            },
        )
    }

    /// Grow-only sizes: the next power of two, at most a slice's largest need (one binding).
    fn grown(&self, need: u64) -> u64 {
        let limit = (self.max_queries * QUERY_BYTES) as u64;
        need.next_power_of_two().min(limit).max(need)
    }

    fn queries_buffer(&self, op: &'static str, need: u64) -> wgpu::Buffer {
        self.slot_buffer(
            op,
            "trace queries",
            self.grown(need),
            wgpu::BufferUsages::STORAGE,
        )
    }

    fn output_buffer(&self, op: &'static str, need: u64) -> wgpu::Buffer {
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
        self.slot_buffer(op, "trace output", self.grown(need), usage)
    }

    /// The output's size plus the stamp word (see [`Slice::stamp_at`]).
    fn readback_buffer(&self, op: &'static str, need: u64) -> wgpu::Buffer {
        let size = self.grown(need) + 8;
        self.slot_buffer(op, "trace readback", size, wgpu::BufferUsages::MAP_READ)
    }

    fn slot_buffer(
        &self,
        op: &'static str,
        label: &str,
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        self.workspace
            .buffers_created
            .fetch_add(1, Ordering::Relaxed);
        self.create_buffer(
            op,
            &wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(4),
                usage: usage | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            },
        )
    }

    /// One bind group per scene chunk, over `slot`'s buffers.
    fn bind_groups(&self, slot: &Slot, tiers: &[Arc<TierChunks>]) -> Vec<wgpu::BindGroup> {
        let params = |offset| {
            wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &slot.params,
                offset,
                size: wgpu::BufferSize::new(size_of::<Params>() as u64),
            })
        };
        // The movable tier first: staged segments skip work only in the last dispatch, best
        // spent on the static tier, which holds the most.
        tiers
            .iter()
            .rev()
            .flat_map(|t| t.chunks.iter())
            .enumerate()
            .map(|(i, c)| {
                self.workspace
                    .bind_groups_created
                    .fetch_add(1, Ordering::Relaxed);
                let offset = if i == 0 { 0 } else { self.params_stride };
                self.bind_chunk(c, params(offset), &slot.queries, &slot.output)
            })
            .collect()
    }

    /// Encodes, submits and waits for `pass`.
    pub(crate) fn run(&self, pass: &TracePass) -> Result<()> {
        self.run_all(std::slice::from_ref(pass))
    }

    /// Encodes every pass into one encoder and submits it once (nothing when no pass has GPU
    /// work).
    pub(crate) fn run_all(&self, passes: &[TracePass]) -> Result<()> {
        self.run_all_with(passes, None)
    }

    /// [`GpuTracer::run_all`] with more work in the same submission: `more` (its counter op
    /// and what it encodes) is recorded after the passes, so one wait covers both.
    pub(crate) fn run_all_with(&self, passes: &[TracePass], more: Option<MoreWork>) -> Result<()> {
        let traced = passes.iter().find(|p| !p.slices.is_empty());
        let op = match (traced, &more) {
            (Some(p), _) => p.kind.op(),
            (None, Some((op, _))) => op,
            (None, None) => {
                for pass in passes {
                    pass.encoded.store(true, Ordering::Relaxed);
                }
                return Ok(());
            }
        };
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut encoder = self.device.create_command_encoder(&Default::default());
        for pass in passes {
            pass.encode(self, &mut encoder);
        }
        if let Some((_, encode)) = more {
            encode(&mut encoder);
        }
        let index = self.submit(op, encoder.finish());
        for pass in passes {
            *pass.submission.lock().unwrap() = Some(index.clone());
        }
        if let Some(e) = pollster::block_on(scope.pop()) {
            self.check_lost()?;
            return Err(Error::Gpu(e.to_string()));
        }
        if let Some(e) = pollster::block_on(oom.pop()) {
            return Err(Error::Gpu(format!(
                "out of GPU memory for a submission: {e}; send smaller batches"
            )));
        }
        Ok(())
    }

    /// Maps every slice's results and stamp, and checks that the pass's commands ran.
    fn map_all(&self, pass: &TracePass) -> Result<()> {
        if !pass.encoded.load(Ordering::Relaxed) {
            return Err(crate::receipt::not_run("a trace pass", "encode"));
        }
        if pass.slices.is_empty() || pass.premapped.swap(false, Ordering::Relaxed) {
            return Ok(());
        }
        self.map_passes(std::slice::from_ref(pass))?;
        pass.premapped.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Maps the readbacks of passes submitted together with one wait; reading each then waits
    /// no more.
    pub(crate) fn map_passes(&self, passes: &[TracePass]) -> Result<()> {
        let passes: Vec<&TracePass> = passes.iter().filter(|p| !p.slices.is_empty()).collect();
        if passes.iter().any(|p| !p.encoded.load(Ordering::Relaxed)) {
            return Err(crate::receipt::not_run("a trace pass", "encode"));
        }
        let Some(first) = passes.first() else {
            return Ok(());
        };
        let mut submission = None;
        for p in &passes {
            submission = p.submission.lock().unwrap().take().or(submission);
            for s in &p.slices {
                s.slot.mapped.store(true, Ordering::Relaxed);
            }
        }
        let ranges = passes.iter().flat_map(|p| {
            p.slices
                .iter()
                .map(|s| (&s.slot.readback, s.stamp_at() + 4))
        });
        if let Err(e) = map_read_ranges(self, first.kind.op(), ranges, submission, "trace results")
        {
            self.check_lost()?;
            return Err(e);
        }
        self.check_lost()?;
        for p in &passes {
            Self::check_stamps(p)?;
            p.premapped.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Whether every slice of a mapped pass carries its stamp (the submission ran).
    fn check_stamps(pass: &TracePass) -> Result<()> {
        let mut ran = true;
        for s in &pass.slices {
            let view = s
                .slot
                .readback
                .get_mapped_range(s.stamp_at()..s.stamp_at() + 4)
                .map_err(|e| Error::Gpu(e.to_string()))?;
            ran &= bytemuck::pod_read_unaligned::<u32>(&view) == s.stamp;
        }
        if !ran {
            pass.unmap_all();
            return Err(crate::receipt::not_run("a trace pass", "submission"));
        }
        Ok(())
    }
}

/// A compute shader's storage-buffer binding (read-only or read-write). Shared by every GPU
/// module's bind-group layouts.
pub(crate) fn storage_entry(binding: u32, read_only: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// The tracing kernels' bind-group layout: scene nodes (0) and triangles (1), `Params` (2),
/// queries (3, read-only) and output (4); with `ray_query`, the chunk's acceleration structure
/// at 0 and its candidate-to-triangle map at 5.
fn trace_bind_group_layout(device: &wgpu::Device, ray_query: bool) -> wgpu::BindGroupLayout {
    let scene = if ray_query {
        wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::AccelerationStructure {
                vertex_return: false,
            },
            count: None,
        }
    } else {
        storage_entry(0, true)
    };
    let map = ray_query.then(|| storage_entry(5, true));
    let entries: Vec<wgpu::BindGroupLayoutEntry> = [
        Some(scene),
        Some(storage_entry(1, true)),
        Some(wgpu::BindGroupLayoutEntry {
            binding: 2,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: wgpu::BufferSize::new(size_of::<Params>() as u64),
            },
            count: None,
        }),
        Some(storage_entry(3, true)),
        Some(storage_entry(4, false)),
        map,
    ]
    .into_iter()
    .flatten()
    .collect();
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("sightline trace"),
        entries: &entries,
    })
}

/// Work encoded after the trace passes of one submission ([`GpuTracer::run_all_with`]): its
/// counter operation and what it records.
pub(crate) type MoreWork<'a> = (&'static str, &'a dyn Fn(&mut wgpu::CommandEncoder));

/// Encodes work into a new encoder (after any pending acceleration-structure builds), submits
/// it and reports validation errors and GPU memory exhaustion as errors (`what` names the work, `oom_fix` says what to lower).
pub(crate) fn submit_checked(
    tracer: &GpuTracer,
    op: &'static str,
    what: &str,
    oom_fix: &str,
    encode: impl FnOnce(&mut wgpu::CommandEncoder),
) -> Result<()> {
    let device = tracer.device();
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let mut encoder = device.create_command_encoder(&Default::default());
    tracer.encode_builds(&mut encoder);
    encode(&mut encoder);
    tracer.submit(op, encoder.finish());
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

/// A buffer holding `contents`, at least 4 bytes, counted under `op`. (Not
/// `create_buffer_init`: it panics on a lost device.) Shared by every GPU module.
pub(crate) fn buffer_with(
    tracer: &GpuTracer,
    op: &'static str,
    label: &str,
    usage: wgpu::BufferUsages,
    contents: &[u8],
) -> wgpu::Buffer {
    let buffer = tracer.create_buffer(
        op,
        &wgpu::BufferDescriptor {
            label: Some(label),
            size: (contents.len() as u64).max(4),
            usage: usage | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        },
    );
    if !contents.is_empty() {
        tracer.write_buffer(op, &buffer, 0, contents);
    }
    buffer
}

/// A square 2D texture array (`size` x `size`, `layers` layers, one mip level). Shared by the
/// render-pass modules (cover field, intervis).
pub(crate) fn texture_array(
    tracer: &GpuTracer,
    op: &'static str,
    label: &str,
    size: u32,
    layers: u32,
    format: wgpu::TextureFormat,
    usage: wgpu::TextureUsages,
) -> wgpu::Texture {
    tracer.count(op, |c| c.textures_created += 1);
    tracer.device().create_texture(&wgpu::TextureDescriptor {
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

/// Maps the first `bytes` of each buffer for reading and waits for all of them (for
/// `submission`, or the whole queue when `None`); a failure is a lost device, with `what`
/// naming the readback. Shared by every GPU module.
pub(crate) fn map_read_ranges<'a>(
    tracer: &GpuTracer,
    op: &'static str,
    buffers: impl IntoIterator<Item = (&'a wgpu::Buffer, u64)>,
    submission: Option<wgpu::SubmissionIndex>,
    what: &str,
) -> Result<()> {
    map_ranges(tracer, op, buffers, submission, what, true)
}

/// [`map_read_ranges`] for buffers of a submission the caller has already waited for: the
/// poll returns at once, so no wait is counted.
pub(crate) fn map_read_ranges_ready<'a>(
    tracer: &GpuTracer,
    op: &'static str,
    buffers: impl IntoIterator<Item = (&'a wgpu::Buffer, u64)>,
    what: &str,
) -> Result<()> {
    map_ranges(tracer, op, buffers, None, what, false)
}

fn map_ranges<'a>(
    tracer: &GpuTracer,
    op: &'static str,
    buffers: impl IntoIterator<Item = (&'a wgpu::Buffer, u64)>,
    submission: Option<wgpu::SubmissionIndex>,
    what: &str,
    counted: bool,
) -> Result<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut count = 0;
    let mut bytes_read = 0;
    for (b, bytes) in buffers {
        let tx = tx.clone();
        b.map_async(wgpu::MapMode::Read, ..bytes, move |r| {
            let _ = tx.send(r);
        });
        count += 1;
        bytes_read += bytes;
    }
    drop(tx);
    tracer.count(op, |c| {
        c.waits += u64::from(counted);
        c.bytes_read_back += bytes_read;
    });
    tracer
        .device
        .poll(wgpu::PollType::Wait {
            submission_index: submission,
            timeout: None,
        })
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
    /// buffers into `encoder`. A pass without GPU work records nothing.
    pub fn encode(&self, tracer: &GpuTracer, encoder: &mut wgpu::CommandEncoder) {
        if !self.slices.is_empty() {
            tracer.encode_builds(encoder);
        }
        for s in &self.slices {
            if s.from_upload {
                let params = tracer.params_len();
                let queries = (s.count * QUERY_BYTES) as u64;
                encoder.copy_buffer_to_buffer(&s.slot.upload, 0, &s.slot.params, 0, params);
                encoder.copy_buffer_to_buffer(&s.slot.upload, params, &s.slot.queries, 0, queries);
            }
            if matches!(self.kind, Kind::Occluded) {
                encoder.clear_buffer(&s.slot.output, 0, Some(s.cleared));
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
                for bg in &s.slot.bind_groups {
                    cpass.set_bind_group(0, bg, &[]);
                    cpass.dispatch_workgroups((s.count as u32).div_ceil(WORKGROUP), 1, 1);
                }
            }
            encoder.copy_buffer_to_buffer(&s.slot.output, 0, &s.slot.readback, 0, s.bytes);
            let stamp = std::mem::offset_of!(Params, stamp) as u64;
            let to = s.stamp_at();
            encoder.copy_buffer_to_buffer(&s.slot.params, stamp, &s.slot.readback, to, 4);
        }
        self.encoded.store(true, Ordering::Relaxed);
        self.unread
            .store(!self.slices.is_empty(), Ordering::Relaxed);
    }

    /// Number of queries in the batch.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the pass records GPU work (reading it then waits for its submission).
    pub(crate) fn has_work(&self) -> bool {
        !self.slices.is_empty()
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn unmap_all(&self) {
        for s in &self.slices {
            s.slot.readback.unmap();
            s.slot.mapped.store(false, Ordering::Relaxed);
        }
    }

    /// After a complete read: the submission that used the buffers has finished, so the
    /// upload buffers are mapped again for the next pass (done by the next poll, no wait).
    fn read_done(&self) {
        self.unmap_all();
        self.unread.store(false, Ordering::Relaxed);
        for s in &self.slices {
            s.slot.map_upload();
        }
    }

    /// Waits for the submitted pass and returns the occlusion bits.
    pub fn read_occlusion(&self, tracer: &GpuTracer) -> Result<Occlusion> {
        if !matches!(self.kind, Kind::Occluded) {
            return Err(Error::InvalidInput(
                "read_occlusion on a closest-hit pass: use read_hits".into(),
            ));
        }
        let mut out = Occlusion::new(self.len);
        tracer.map_all(self)?;
        for s in &self.slices {
            let view = s
                .slot
                .readback
                .get_mapped_range(..s.bytes)
                .map_err(|e| Error::Gpu(e.to_string()))?;
            let words: &[u32] = bytemuck::cast_slice(&view);
            out.words[s.start / 32..][..words.len()].copy_from_slice(words);
        }
        self.read_done();
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
        tracer.map_all(self)?;
        for s in &self.slices {
            let view = s
                .slot
                .readback
                .get_mapped_range(..s.bytes)
                .map_err(|e| Error::Gpu(e.to_string()))?;
            let recs: &[HitRecord] = bytemuck::cast_slice(&view);
            for (o, r) in out[s.start..s.start + s.count].iter_mut().zip(recs) {
                if r.triangle != NO_HIT {
                    *o = *r;
                }
            }
        }
        self.read_done();
        Ok(out)
    }
}
