//! [`IntervisPass`]: the GPU measurement (see `gpu.rs`) as a value. `prepare` plans the views,
//! takes the geometry (uploaded once per scene revision, `resources.rs`) and a pooled
//! workspace of atlases and buffers, lays the targets out in atlas fills (`atlas.rs`: tiles,
//! matrices, culled scene draws) and writes the tiles into the workspace; `encode` replays the
//! passes into any command encoder (never blocks); `read` waits for the caller's submission
//! and scatters the records.

use super::atlas::{self, Fill, Layout};
use super::gpu::{Light, Tile};
use super::pipelines::Kit;
use super::resources::{Geometry, IntervisCache, Needs, Workspace};
use super::{scaled, validate, IntervisPair, IntervisParams, Plan, Sums};
use crate::gpu::GpuTracer;
use crate::intervis::IntervisRecord;
use crate::pool::{Copies, Write};
use crate::receipt::Receipt;
use crate::scene::Scene;
use crate::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The operation the pass's GPU work is counted under (see [`crate::Counters`]).
pub(super) const OP: &str = "intervis";

/// The intervis measurement of a batch of pairs, planned, uploaded and bound, ready to be
/// encoded into any command encoder.
///
/// [`super::measure`] prepares, encodes, submits and reads in one call on a GPU engine; a
/// renderer can instead [`IntervisPass::encode`] into its own encoder, submit it with its
/// frame, and [`IntervisPass::read`] afterwards. The whole batch is one command buffer's work
/// (a few render passes and dispatches, however many pairs) and one readback. A batch where no target
/// lands in a view (or no pairs) gives a pass whose `encode` records nothing; `read` still
/// returns a record per pair.
///
/// The scene triangles and posture meshes are uploaded once per scene revision, mask and
/// target and kept by the tracer; the textures and buffers come from a pool the pass gives
/// them back to when it is dropped (a pass encoded but never read frees them instead), so
/// repeated calls of the same sizes upload only their tiles and create nothing.
pub struct IntervisPass {
    /// Number of pairs.
    len: usize,
    slots: Slots,
    work: Option<Work>,
    receipt: Receipt,
}

/// The pair and pixel scale of each tile slot (`None`: an alignment gap).
type Slots = Vec<Option<(usize, f32)>>;

/// The GPU side of a pass.
pub(super) struct Work {
    pub geometry: Geometry,
    pub fills: Vec<Fill>,
    /// Tile slots in use, alignment gaps included (records to read back).
    pub slots: usize,
    pub copies: Copies,
    /// Sky brightness (the atlas' clear value).
    pub sky: f64,
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

impl IntervisPass {
    /// Validates `pairs` and `params`, plans the views, uploads the scene triangles of
    /// `params.mask` and the target meshes unless they are on the GPU already, lays the boxes
    /// out in the atlas (culling each tile's scene triangles), writes the tiles and indices,
    /// and binds them. All resources are created inside error scopes: running out of GPU
    /// memory is an error.
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
        let empty = |slots| IntervisPass {
            len: pairs.len(),
            slots,
            work: None,
            receipt: Receipt::empty(),
        };
        let jobs = atlas::jobs(&plan);
        if jobs.is_empty() {
            return Ok(empty(Vec::new()));
        }
        let side = atlas::atlas_side(&jobs, limits.max_texture_dimension_2d)?;
        let t0 = std::time::Instant::now();
        tracer.check_lost()?;
        let cache = tracer.cached_pool(|_| IntervisCache::default());
        let geometry = cache.geometry(tracer, scene, &plan, params)?;
        let kit = tracer.cached(Kit::new);
        let (space, receipt) = crate::pool::checked_build(
            tracer,
            "intervis",
            "lower the resolution, max_box_pixels or the number of pairs",
            || {
                let space = Workspace::take(tracer, &cache.pool, side);
                let receipt = Receipt::new(&space.receipt);
                (space, receipt)
            },
        )?;
        let align = slot_align(limits.min_storage_buffer_offset_alignment);
        let layout = atlas::layout(&jobs, space.side(), scene.tiers(), &geometry, align)?;
        let (work, slots) = crate::pool::checked_build(
            tracer,
            "intervis",
            "lower the resolution, max_box_pixels or the number of pairs",
            || {
                Work::new(
                    tracer, &kit, cache, geometry, space, &receipt, layout, params,
                )
            },
        )??;
        log::debug!(
            "intervis pass prepared: {} pairs, {} views, {} targets drawn in {} fills of a \
             {side}^2 atlas, {} scene triangles, {} scene vertices drawn: {:?}",
            pairs.len(),
            plan.views.len(),
            jobs.len(),
            work.fills.len(),
            work.geometry.scene_triangles(),
            work.scene_vertices(),
            t0.elapsed()
        );
        Ok(IntervisPass {
            len: pairs.len(),
            slots,
            work: Some(work),
            receipt,
        })
    }

    /// Number of pairs in the batch.
    #[must_use]
    /// Whether reading the pass waits for the GPU (some target is drawn).
    pub(super) fn draws(&self) -> bool {
        self.work.is_some()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch has no pairs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Tiles the pass renders: one per target with a box, each drawing the scene culled to
    /// that box; 0 when no target needs drawing.
    #[must_use]
    pub fn tiles(&self) -> usize {
        self.work
            .as_ref()
            .map_or(0, |w| w.fills.iter().map(|f| f.scissors.len()).sum())
    }

    /// Scene triangles the pass draws (each tile's, culled to its box; a triangle counts once
    /// per tile).
    #[must_use]
    pub fn scene_triangles(&self) -> u64 {
        self.work.as_ref().map_or(0, |w| w.scene_vertices() / 3)
    }

    /// Fills of the atlas the pass renders (each one render pass and one dispatch).
    #[must_use]
    pub fn fills(&self) -> usize {
        self.work.as_ref().map_or(0, |w| w.fills.len())
    }

    /// Records every fill's scene, stencil and reduction passes and the copy to the readback
    /// buffer into `encoder`; nothing when no target needs drawing. Never blocks.
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
        self.read_after(tracer, true)
    }

    /// [`IntervisPass::read`]; `wait` false where the caller already waited for the
    /// submission (another pass of it was read), so no wait is counted.
    pub(super) fn read_after(&self, tracer: &GpuTracer, wait: bool) -> Result<Vec<IntervisRecord>> {
        const WHAT: &str = "the intervis pass";
        self.receipt.check_encoded(WHAT)?;
        let mut out = vec![Sums::default().finish(0); self.len];
        let Some(w) = &self.work else {
            return Ok(out);
        };
        let (readback, bytes) = w.readback();
        let receipt = self.receipt.buffer().map(|b| (b, 4));
        let ranges = std::iter::once((readback, bytes)).chain(receipt);
        if wait {
            crate::gpu::map_read_ranges(tracer, OP, ranges, None, "the intervis records")?;
        } else {
            crate::gpu::map_read_ranges_ready(tracer, OP, ranges, "the intervis records")?;
        }
        if let Err(e) = self.receipt.check_submitted(WHAT) {
            readback.unmap();
            return Err(e);
        }
        let result = match readback.get_mapped_range(..bytes) {
            Ok(view) => {
                let recs: &[IntervisRecord] = bytemuck::cast_slice(&view);
                for (slot, rec) in self.slots.iter().zip(recs) {
                    if let Some((pair, scale)) = *slot {
                        out[pair] = scaled(*rec, scale);
                    }
                }
                Ok(())
            }
            Err(e) => Err(Error::Gpu(e.to_string())),
        };
        readback.unmap();
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
    /// Fits `space` to the layout, writes the light, tiles and receipt word into it.
    #[allow(clippy::too_many_arguments)]
    fn new(
        tracer: &GpuTracer,
        kit: &Kit,
        cache: Arc<IntervisCache>,
        geometry: Geometry,
        mut space: Workspace,
        receipt: &Receipt,
        layout: Layout,
        params: &IntervisParams,
    ) -> Result<(Work, Slots)> {
        let window = (layout.fills.iter())
            .map(|f| f.tiles.len())
            .max()
            .unwrap_or(1);
        let last = layout.fills.last().expect("a layout has fills");
        let needs = Needs {
            indices: layout.indices.len(),
            window,
            last: last.tiles.start,
            tiles: layout.tiles.len(),
        };
        space.fit(tracer, kit, &needs);
        let light = Light {
            sun: params.sun.normalize().extend(params.ambient).into(),
            sky: params.sky,
            target_albedo: params.target_albedo,
            atlas: [space.side() as f32; 2],
        };
        let word = receipt.word();
        let mut writes = vec![
            Write::at_start(space.light.buffer(), bytemuck::bytes_of(&light)),
            Write::at_start(space.tiles.buffer(), bytemuck::cast_slice(&layout.tiles)),
            Write::at_start(
                space.indices.buffer(),
                bytemuck::cast_slice(&layout.indices),
            ),
        ];
        writes.extend(receipt.stamp_source().map(|b| Write::at_start(b, &word)));
        let copies = space.staging.write(tracer, OP, &writes)?;
        let work = Work {
            geometry,
            fills: layout.fills,
            slots: layout.slots.len(),
            copies,
            sky: f64::from(params.sky),
            space: Some(space),
            cache,
            unread: AtomicBool::new(false),
        };
        Ok((work, layout.slots))
    }

    /// Scene vertices the fills draw.
    fn scene_vertices(&self) -> u64 {
        (self.fills.iter().flat_map(|f| f.draws.iter().flatten()))
            .map(|(_, r)| u64::from(r.end - r.start))
            .sum()
    }

    /// The records' readback buffer and the bytes of records it holds.
    fn readback(&self) -> (&wgpu::Buffer, u64) {
        let space = self
            .space
            .as_ref()
            .expect("a pass's work holds its workspace");
        let bytes = (self.slots * size_of::<IntervisRecord>()) as u64;
        (space.readback.buffer(), bytes)
    }
}

/// Slots a dynamic offset steps by: the fewest whose bytes are a multiple of `alignment` for
/// scene tiles, target tiles and records alike.
fn slot_align(alignment: u32) -> usize {
    let alignment = alignment.max(1) as usize;
    [size_of::<Tile>(), size_of::<IntervisRecord>()]
        .iter()
        .map(|&size| alignment / gcd(alignment, size))
        .max()
        .unwrap_or(1)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
