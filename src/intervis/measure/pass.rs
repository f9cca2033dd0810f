//! [`IntervisPass`]: the GPU measurement (see `gpu.rs`) as a value. `prepare` plans the views,
//! takes the geometry (uploaded once per scene revision, `resources.rs`) and a pooled
//! workspace of textures and buffers, writes every group's uniforms and jobs into it, and
//! culls the scene per view; `encode` replays the passes into any command encoder (never
//! blocks); `read` waits for the caller's submission and scatters the records.

use super::encode::{chunks, Chunk};
use super::gpu::{view_block, Batch, Job, Light, ViewBlock, GROUP_JOBS, TEXTURE_BUDGET};
use super::pipelines::Kit;
use super::resources::{Geometry, GroupNeeds, IntervisCache, Needs, Workspace};
use super::{validate, IntervisPair, IntervisParams, PixelBox, Plan, Sums};
use crate::agent::Posture;
use crate::gpu::GpuTracer;
use crate::intervis::IntervisRecord;
use crate::pool::{Copies, Write};
use crate::receipt::Receipt;
use crate::scene::Scene;
use crate::{Error, Result};
use glam::Mat4;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The operation the pass's GPU work is counted under (see [`crate::Counters`]).
pub(super) const OP: &str = "intervis";

/// The intervis measurement of a batch of pairs, planned, uploaded and bound, ready to be
/// encoded into any command encoder.
///
/// [`super::measure`] prepares, encodes, submits and reads in one call on a GPU engine; a
/// renderer can instead [`IntervisPass::encode`] into its own encoder, submit it with its
/// frame, and [`IntervisPass::read`] afterwards. Groups of targets keep their own job and
/// record buffers, so the whole batch fits in one command buffer. A batch where no target
/// lands in a view (or no pairs) gives a pass whose `encode` records nothing; `read` still
/// returns a record per pair.
///
/// The scene triangles and posture meshes are uploaded once per scene revision, mask and
/// target and kept by the tracer; the textures and buffers come from a pool the pass gives
/// them back to when it is dropped (a pass encoded but never read frees them instead), so
/// repeated calls of the same sizes upload only their jobs and view blocks and create
/// nothing.
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

/// Chunks up to `GROUP_JOBS` jobs, with their own uniforms, jobs and records (the
/// workspace's group of the same index).
pub(super) struct Group {
    pub chunks: Range<usize>,
    /// Bytes of the group's records.
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
    /// Target slots in use (the workspace may hold more).
    pub slots: usize,
    pub copies: Copies,
    /// Taken from `cache`'s pool at prepare, given back on drop unless `unread`.
    pub space: Option<Workspace>,
    cache: Arc<IntervisCache>,
    /// Encoded since the last complete read: a caller's command buffer may still use the
    /// workspace, so dropping the pass frees it instead of giving it back.
    pub unread: AtomicBool,
}

impl Drop for Work {
    fn drop(&mut self) {
        if self.unread.load(Ordering::Relaxed) {
            return;
        }
        if let Some(space) = self.space.take() {
            space.staging.remap();
            self.cache.pool.give_back(space);
        }
    }
}

/// One group's per-call data: view blocks and batch blocks at their strides, and jobs.
struct GroupData {
    blocks: Vec<u8>,
    batches: Vec<u8>,
    jobs: Vec<Job>,
}

impl IntervisPass {
    /// Validates `pairs` and `params`, plans the views, uploads the scene triangles of
    /// `params.mask` and the target meshes unless they are on the GPU already, writes every
    /// group's uniforms and jobs, and binds them. All resources are created inside error
    /// scopes: running out of GPU memory is an error.
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
        let t0 = std::time::Instant::now();
        tracer.check_lost()?;
        let cache = tracer.cached_pool(|_| IntervisCache::default());
        let geometry = cache.geometry(tracer, scene, &plan, params)?;
        let (work, receipt) = crate::pool::checked_build(
            tracer,
            "intervis",
            "lower the resolution or pass fewer pairs",
            || Work::new(tracer, cache, geometry, &plan, targets, params),
        )??;
        log::debug!(
            "intervis pass prepared: {} pairs, {} views, {} targets drawn, {} scene \
             triangles, {} slots of {}^2: {:?}",
            pairs.len(),
            plan.views.len(),
            job_pairs.len(),
            work.geometry.scene_triangles(),
            work.slots,
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

    /// Views the pass renders (each draws the scene once); 0 when no target needs drawing.
    #[must_use]
    pub fn views(&self) -> usize {
        self.work
            .as_ref()
            .map_or(0, |w| w.chunks.iter().filter(|c| c.scene.is_some()).count())
    }

    /// Records every group's scene, stencil and reduction passes and the copies to the
    /// readback buffers into `encoder`; nothing when no target needs drawing. Never blocks.
    /// `tracer` must be the one the pass was prepared on.
    pub fn encode(&self, tracer: &GpuTracer, encoder: &mut wgpu::CommandEncoder) {
        if let Some(w) = &self.work {
            w.encode(&tracer.cached(Kit::new), encoder);
            w.unread.store(true, Ordering::Relaxed);
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
        let readbacks = w.readbacks();
        let receipt = self.receipt.buffer().map(|b| (b, 4));
        crate::gpu::map_read_ranges(
            tracer,
            OP,
            readbacks.iter().copied().chain(receipt),
            None,
            "the intervis records",
        )?;
        if let Err(e) = self.receipt.check_submitted(WHAT) {
            readbacks.iter().for_each(|(b, _)| b.unmap());
            return Err(e);
        }
        let mut result = Ok(());
        for ((b, bytes), g) in readbacks.into_iter().zip(&w.groups) {
            match b.get_mapped_range(..bytes) {
                Ok(view) => {
                    let recs: &[IntervisRecord] = bytemuck::cast_slice(&view);
                    for (k, rec) in recs.iter().enumerate() {
                        out[self.job_pairs[g.first_job + k]] = *rec;
                    }
                }
                Err(e) => result = Err(Error::Gpu(e.to_string())),
            }
            b.unmap();
        }
        if result.is_ok() {
            w.unread.store(false, Ordering::Relaxed);
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
    /// Takes a workspace for the call's sizes, writes the light, every group's view blocks,
    /// batches and jobs and the receipt word into it, and binds them.
    fn new(
        tracer: &GpuTracer,
        cache: Arc<IntervisCache>,
        geometry: Geometry,
        plan: &Plan,
        targets: Vec<Target>,
        params: &IntervisParams,
    ) -> Result<(Work, Receipt)> {
        let limits = tracer.device().limits();
        let res = params.resolution;
        let layer_bytes = u64::from(res) * u64::from(res) * 8;
        let slots = (limits.max_texture_array_layers as usize)
            .min((TEXTURE_BUDGET / layer_bytes) as usize)
            .min(targets.len())
            .max(1);
        let chunks = chunks(plan, &geometry, &targets, slots);
        let align = u64::from(limits.min_uniform_buffer_offset_alignment);
        let (stride, batch_stride) = (
            144u64.next_multiple_of(align),
            16u64.next_multiple_of(align),
        );
        let ranges = group_ranges(&chunks);
        let data: Vec<GroupData> = (ranges.iter())
            .map(|r| group_data(plan, &targets, &chunks[r.clone()], stride, batch_stride))
            .collect();
        let groups = (ranges.into_iter().zip(&data))
            .map(|(r, d)| Group {
                first_job: chunks[r.start].jobs.start,
                chunks: r,
                bytes: (d.jobs.len() * size_of::<IntervisRecord>()) as u64,
            })
            .collect();
        let needs = Needs {
            res,
            slots: slots as u32,
            groups: (data.iter())
                .map(|d| GroupNeeds {
                    view_blocks: d.blocks.len() as u64,
                    batches: d.batches.len() as u64,
                    jobs: d.jobs.len(),
                })
                .collect(),
        };
        let mut space = Workspace::take(tracer, &cache.pool, &tracer.cached(Kit::new), &needs);
        let receipt = Receipt::new(&space.receipt);
        let copies = upload(tracer, &mut space, &receipt, &data, params)?;
        let work = Work {
            geometry,
            targets,
            chunks,
            groups,
            stride,
            batch_stride,
            sky: f64::from(params.sky),
            slots,
            copies,
            space: Some(space),
            cache,
            unread: AtomicBool::new(false),
        };
        Ok((work, receipt))
    }

    /// Each group's record readback and the bytes of records it holds.
    fn readbacks(&self) -> Vec<(&wgpu::Buffer, u64)> {
        let Some(space) = &self.space else {
            return Vec::new();
        };
        (space.groups.iter().zip(&self.groups))
            .map(|(b, g)| (b.readback.buffer(), g.bytes))
            .collect()
    }
}

/// Writes the call's light, groups' data and receipt word into `space`'s buffers.
fn upload(
    tracer: &GpuTracer,
    space: &mut Workspace,
    receipt: &Receipt,
    data: &[GroupData],
    params: &IntervisParams,
) -> Result<Copies> {
    let light = Light {
        sun: params.sun.normalize().extend(params.ambient).into(),
        sky: params.sky,
        focal: params.focal(),
        resolution: params.resolution,
        _pad: 0,
    };
    let word = receipt.word();
    let mut writes = vec![Write::at_start(
        space.light.buffer(),
        bytemuck::bytes_of(&light),
    )];
    for (g, d) in space.groups.iter().zip(data) {
        writes.push(Write::at_start(g.view_blocks(), &d.blocks));
        writes.push(Write::at_start(g.batches(), &d.batches));
        writes.push(Write::at_start(g.jobs(), bytemuck::cast_slice(&d.jobs)));
    }
    writes.extend(receipt.stamp_source().map(|b| Write::at_start(b, &word)));
    space.staging.write(tracer, OP, &writes)
}

/// Chunks in groups of at most `GROUP_JOBS` jobs (a chunk with more is a group of its own).
fn group_ranges(chunks: &[Chunk]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut c = 0;
    while c < chunks.len() {
        let first_job = chunks[c].jobs.start;
        let mut end = c;
        while end < chunks.len() && (end == c || chunks[end].jobs.end - first_job <= GROUP_JOBS) {
            end += 1;
        }
        out.push(c..end);
        c = end;
    }
    out
}

/// A group's uniform slots (each chunk's view when it renders it, then every target) and jobs,
/// and a batch block per chunk.
fn group_data(
    plan: &Plan,
    targets: &[Target],
    group: &[Chunk],
    stride: u64,
    batch_stride: u64,
) -> GroupData {
    let first_job = group[0].jobs.start;
    let mut blocks: Vec<ViewBlock> = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    for ch in group {
        let view = &plan.views[targets[ch.jobs.start].view].0;
        if ch.scene.is_some() {
            blocks.push(view_block(view, Mat4::IDENTITY));
        }
        for (slot, t) in targets[ch.jobs.clone()].iter().enumerate() {
            let b = t.bbox;
            jobs.push(Job {
                x0: b.x0,
                y0: b.y0,
                x1: b.x1,
                y1: b.y1,
                record: jobs.len() as u32,
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
    let mut batches = vec![0u8; group.len() * batch_stride as usize];
    for (i, ch) in group.iter().enumerate() {
        let b = Batch {
            first: (ch.jobs.start - first_job) as u32,
            _pad: [0; 3],
        };
        batches[i * batch_stride as usize..][..16].copy_from_slice(bytemuck::bytes_of(&b));
    }
    GroupData {
        blocks: padded,
        batches,
        jobs,
    }
}
