//! The cover field on the GPU: a depth view per observer (render), then one classify dispatch
//! per group of observers (compute), results AND-ed in place; one `u32` per ground cell is read
//! back, never the textures.
//!
//! An observer whose eye sees the whole field within 90 degrees gets one square view aimed at
//! it; any other gets a depth cube (see [`super::view`]). Faces are R32Float straight-line
//! distances from the eye (the fragment's interpolated world position, so no depth
//! linearisation), drawn with a reversed infinite-Z Depth32Float attachment (near plane 1 cm)
//! that keeps the nearest surface. Every observer owns six layers of the texture array; a
//! single view fills the first and the other five are neither drawn nor read. Observers are
//! processed in groups that fit the device's `max_texture_array_layers` and a 256 MiB texture
//! budget; the same texture array is reused by every group.
//!
//! Precision far out: the single view's matrix is built in f64 and then rounded to f32, and
//! distances are f32, so with an eye 100 km from the field both positions and distances are
//! good to about a centimetre (the f32 step there is 8 mm). The default 0.05 m `bias` covers
//! that (`tests/cover_field.rs` checks threats out to 100 km with it), so the slack grows with
//! distance only through the texel footprint term; for threats much farther than 100 km the
//! rounding grows in proportion (about 1 cm per 100 km) and `bias` should grow with it.

use super::pipelines::Kit;
use super::resources::{FieldCache, Needs, TierVertices, Workspace};
use super::view::{DepthView, Face, FieldBounds};
use super::{CoverField, CoverFieldParams, FieldGround, ALL_HIDDEN};
use crate::cover::Agent;
use crate::gpu::GpuTracer;
use crate::pool::{Copies, Write};
use crate::receipt::Receipt;
use crate::scene::{Mask, Scene};
use crate::{Error, Result};
use bytemuck::{Pod, Zeroable};
use glam::Vec3;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Uniform block of the classify pass. Mirrors `struct FieldParams` in
/// `shaders/cover_field.wgsl` (field docs there).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct FieldParams {
    pub count: u32,
    pub row_stride: u32,
    pub observers: u32,
    pub first_observer: u32,
    pub face_resolution: u32,
    pub accumulate: u32,
    pub radius: f32,
    pub bias: f32,
    pub heads: [f32; 4],
}
const _: () = assert!(std::mem::size_of::<FieldParams>() == 48);
const _: () = assert!(std::mem::offset_of!(FieldParams, heads) == 32);

const WORKGROUP: u32 = 64;
/// The operation the pass's GPU work is counted under (see [`crate::Counters`]).
pub(super) const OP: &str = "cover_field";
/// Clear value of the distance faces: "no surface", farther than any point, so it hides none.
const NOTHING: f64 = 3.0e38;
/// Texture memory one group of observers may use.
const TEXTURE_BUDGET: u64 = 256 << 20;
pub(super) const COLOR: wgpu::TextureFormat = wgpu::TextureFormat::R32Float;
pub(super) const DEPTH: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// The cover field of one set of observers over a [`FieldGround`], uploaded and bound, ready
/// to be encoded into any command encoder.
///
/// [`super::cover_field`] prepares, encodes, submits and reads in one call; a renderer can
/// instead [`CoverFieldPass::encode`] into its own encoder, submit it with its frame, and
/// [`CoverFieldPass::read`] afterwards. Inputs whose answer needs no GPU work (no observers, no
/// ground, no triangles matching the mask) give a pass whose `encode` records nothing; `read`
/// still returns the right field.
///
/// The scene's masked triangles are uploaded once per scene revision and mask and kept by the
/// tracer; the textures and buffers come from a pool the pass gives them back to when it is
/// dropped (a pass encoded but never read frees them instead), so repeated calls of the same
/// sizes upload only their faces, params and ground points and create nothing.
pub struct CoverFieldPass {
    ground: FieldGround,
    /// Posture bits of every ground point when they are known without the GPU.
    known: Option<u32>,
    work: Option<Work>,
    receipt: Receipt,
    started: Instant,
}

/// The GPU side of a pass.
struct Work {
    tiers: [Arc<TierVertices>; 2],
    plan: Plan,
    copies: Copies,
    /// Taken from `cache`'s pool at prepare, given back on drop unless `unread`.
    space: Option<Workspace>,
    cache: Arc<FieldCache>,
    /// Encoded since the last complete read: a caller's command buffer may still use the
    /// workspace, so dropping the pass frees it instead of giving it back.
    unread: AtomicBool,
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

/// Sizes and per-call data of a pass.
struct Plan {
    res: u32,
    /// Faces drawn per observer (1 for a single view, 6 for a cube).
    face_counts: Vec<usize>,
    /// The observers' faces, six slots each.
    faces: Vec<Face>,
    per_group: usize,
    /// Byte stride of the faces' uniform slots and of the params blocks.
    stride: u64,
    params_stride: u64,
    slices: Vec<Slice>,
}

/// One binding's worth of ground points.
struct Slice {
    start: usize,
    count: usize,
    dispatch: (u32, u32),
}

impl CoverFieldPass {
    /// Validates the inputs (`params` must have `ground`'s `cell`, `size` and `max_slope`;
    /// `face_resolution` and `bias` are this pass's), uploads the triangles matching `mask`
    /// unless this scene revision's are on the GPU already, the observers' views and the ground
    /// points, and binds them. All resources are created inside error scopes: running out of
    /// GPU memory is an error, not a panic.
    pub fn prepare(
        tracer: &GpuTracer,
        scene: &Scene,
        ground: &FieldGround,
        agent: &Agent,
        observers: &[Vec3],
        mask: Mask,
        params: &CoverFieldParams,
    ) -> Result<CoverFieldPass> {
        let started = Instant::now();
        super::validate(agent, observers, params)?;
        ground.check_params(params)?;
        let points = ground.points();
        let trivial = |bits| CoverFieldPass {
            ground: ground.clone(),
            known: Some(bits),
            work: None,
            receipt: Receipt::empty(),
            started,
        };
        if observers.is_empty() || points.is_empty() {
            return Ok(trivial(ALL_HIDDEN));
        }
        tracer.check_lost()?;
        let cache = tracer.cached_pool(|_| FieldCache::default());
        let tiers = cache.vertices(tracer, scene, mask)?;
        let triangles = tiers[0].triangles + tiers[1].triangles;
        if triangles == 0 {
            return Ok(trivial(0)); // nothing blocks: every point is seen
        }
        let Some(bounds) = FieldBounds::around(points, agent) else {
            return Ok(trivial(ALL_HIDDEN));
        };
        let plan = Plan::new(tracer, points, &bounds, observers, params);
        let (work, receipt) = crate::pool::checked_build(
            tracer,
            "the cover field",
            "lower face_resolution or pass fewer observers per call",
            || Work::new(tracer, cache, tiers, plan, points, agent, params),
        )??;
        log::debug!(
            "cover field pass prepared: {} points, {} observers in groups of {}, {triangles} \
             triangles: pipelines and uploads {:?}",
            points.len(),
            observers.len(),
            work.plan.per_group,
            started.elapsed()
        );
        Ok(CoverFieldPass {
            ground: ground.clone(),
            known: None,
            work: Some(work),
            receipt,
            started,
        })
    }

    /// Records the depth views' render passes, the classify dispatches and the copies to the
    /// readback buffers into `encoder`; nothing when the answer needed no GPU work. Never
    /// blocks. `tracer` must be the one the pass was prepared on.
    pub fn encode(&self, tracer: &GpuTracer, encoder: &mut wgpu::CommandEncoder) {
        if let Some(w) = &self.work {
            w.encode(&tracer.cached(Kit::new), encoder);
            w.unread.store(true, Ordering::Relaxed);
        }
        self.receipt.stamp(encoder);
    }

    /// Waits for the submission holding the encoded pass and returns the field. Its `elapsed`
    /// is the ground search's time plus the time from `prepare` to the end of `read`.
    ///
    /// Errors: [`Error::InvalidInput`] when the pass was not encoded, or its command buffer
    /// was not submitted (or failed) before this call; [`Error::DeviceLost`] when the readback
    /// fails.
    pub fn read(&self, tracer: &GpuTracer) -> Result<CoverField> {
        const WHAT: &str = "the cover field pass";
        self.receipt.check_encoded(WHAT)?;
        let n = self.ground.points().len();
        let hidden = match (&self.work, self.known) {
            (Some(w), _) => {
                let readbacks = w.readbacks();
                let receipt = self.receipt.buffer().map(|b| (b, 4));
                crate::gpu::map_read_ranges(
                    tracer,
                    OP,
                    readbacks.iter().copied().chain(receipt),
                    None,
                    "the cover field",
                )?;
                if let Err(e) = self.receipt.check_submitted(WHAT) {
                    readbacks.iter().for_each(|(b, _)| b.unmap());
                    return Err(e);
                }
                let bits = w.read(n)?;
                w.unread.store(false, Ordering::Relaxed);
                bits
            }
            (None, known) => vec![known.unwrap_or(ALL_HIDDEN); n],
        };
        Ok(self
            .ground
            .field(&hidden, self.ground.elapsed() + self.started.elapsed()))
    }

    /// Encodes, submits and checks the submission for errors (the convenience path).
    pub(super) fn run(&self, tracer: &GpuTracer) -> Result<()> {
        crate::gpu::submit_checked(
            tracer,
            OP,
            "the cover field",
            "lower face_resolution or pass fewer observers per call",
            |e| self.encode(tracer, e),
        )
    }
}

impl Plan {
    /// Each observer's view of the field's bounds (a cube, or one face aimed at the field),
    /// the observer groups that fit the texture limits, and the ground points' slices that fit
    /// one storage binding and one 2D dispatch.
    fn new(
        tracer: &GpuTracer,
        points: &[Vec3],
        bounds: &FieldBounds,
        observers: &[Vec3],
        params: &CoverFieldParams,
    ) -> Plan {
        let limits = tracer.device().limits();
        let res = params.face_resolution.min(limits.max_texture_dimension_2d);
        if res < params.face_resolution {
            log::warn!(
                "face_resolution {} exceeds the device's limit; using {res}",
                params.face_resolution
            );
        }
        let views: Vec<DepthView> = observers
            .iter()
            .map(|&o| bounds.depth_view(o, res))
            .collect();
        let faces: Vec<Face> = (observers.iter().zip(&views))
            .flat_map(|(&o, v)| v.faces(o))
            .collect();
        let align = u64::from(limits.min_uniform_buffer_offset_alignment);
        // Observers per group: the layer limit and the texture budget.
        let layer_bytes = u64::from(res) * u64::from(res) * 4;
        let per_group = ((limits.max_texture_array_layers / 6) as usize)
            .min((TEXTURE_BUDGET / (6 * layer_bytes)) as usize)
            .clamp(1, observers.len());
        let max_binding = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        let per_slice = ((max_binding / 16) as usize).max(WORKGROUP as usize);
        let max_x = limits.max_compute_workgroups_per_dimension.max(1);
        let slices = (0..points.len())
            .step_by(per_slice)
            .map(|start| {
                let count = (points.len() - start).min(per_slice);
                let groups = (count as u32).div_ceil(WORKGROUP);
                Slice {
                    start,
                    count,
                    dispatch: (groups.min(max_x), groups.div_ceil(max_x)),
                }
            })
            .collect();
        Plan {
            res,
            face_counts: views.iter().map(DepthView::face_count).collect(),
            faces,
            per_group,
            stride: 80u64.next_multiple_of(align),
            params_stride: 48u64.next_multiple_of(align),
            slices,
        }
    }

    fn groups(&self) -> usize {
        self.face_counts.len().div_ceil(self.per_group)
    }

    fn needs(&self) -> Needs {
        Needs {
            res: self.res,
            layers: self.per_group as u32 * 6,
            face_uniform_bytes: self.faces.len() as u64 * self.stride,
            face_list_bytes: self.faces.len() as u64 * 80,
            params_stride: self.params_stride,
            groups: self.groups(),
            slice_points: self.slices.iter().map(|s| s.count).collect(),
        }
    }

    /// The classify params of every (slice, observer group), at `params_stride`.
    fn params_blocks(&self, agent: &Agent, bias: f32) -> Vec<u8> {
        let observers = self.face_counts.len();
        let groups = self.groups();
        let mut out = vec![0u8; self.slices.len() * groups * self.params_stride as usize];
        for (s, slice) in self.slices.iter().enumerate() {
            for (g, first) in (0..observers).step_by(self.per_group).enumerate() {
                let p = FieldParams {
                    count: slice.count as u32,
                    row_stride: slice.dispatch.0 * WORKGROUP,
                    observers: (observers - first).min(self.per_group) as u32,
                    first_observer: first as u32,
                    face_resolution: self.res,
                    accumulate: u32::from(first > 0),
                    radius: agent.radius,
                    bias,
                    heads: [
                        agent.head_heights[0],
                        agent.head_heights[1],
                        agent.head_heights[2],
                        0.0,
                    ],
                };
                let at = (s * groups + g) * self.params_stride as usize;
                out[at..at + 48].copy_from_slice(bytemuck::bytes_of(&p));
            }
        }
        out
    }

    /// The faces padded to the uniform offset alignment, for the render passes' dynamic
    /// offsets.
    fn padded_faces(&self) -> Vec<u8> {
        let stride = self.stride as usize;
        let mut padded = vec![0u8; self.faces.len() * stride];
        for (i, f) in self.faces.iter().enumerate() {
            padded[i * stride..][..80].copy_from_slice(bytemuck::bytes_of(f));
        }
        padded
    }
}

impl Work {
    /// Takes a workspace and writes the call's faces, params, ground points and receipt word
    /// into it.
    fn new(
        tracer: &GpuTracer,
        cache: Arc<FieldCache>,
        tiers: [Arc<TierVertices>; 2],
        plan: Plan,
        points: &[Vec3],
        agent: &Agent,
        params: &CoverFieldParams,
    ) -> Result<(Work, Receipt)> {
        let kit = tracer.cached(Kit::new);
        let mut space = Workspace::take(tracer, &cache.pool, &kit, &plan.needs());
        let receipt = Receipt::new(&space.receipt);
        let padded = plan.padded_faces();
        let blocks = plan.params_blocks(agent, params.bias);
        let cells: Vec<Vec<[f32; 4]>> = plan
            .slices
            .iter()
            .map(|s| {
                let chunk = &points[s.start..s.start + s.count];
                chunk.iter().map(|p| p.extend(0.0).into()).collect()
            })
            .collect();
        let word = receipt.word();
        let mut writes = vec![
            Write::at_start(space.face_uniforms.buffer(), &padded),
            Write::at_start(space.face_list.buffer(), bytemuck::cast_slice(&plan.faces)),
            Write::at_start(space.params.buffer(), &blocks),
        ];
        for (b, c) in space.slices.iter().zip(&cells) {
            writes.push(Write::at_start(b.cells.buffer(), bytemuck::cast_slice(c)));
        }
        writes.extend(receipt.stamp_source().map(|b| Write::at_start(b, &word)));
        let copies = space.staging.write(tracer, OP, &writes)?;
        let work = Work {
            tiers,
            plan,
            copies,
            space: Some(space),
            cache,
            unread: AtomicBool::new(false),
        };
        Ok((work, receipt))
    }

    /// The slices' readbacks and the bytes of results each holds.
    fn readbacks(&self) -> Vec<(&wgpu::Buffer, u64)> {
        let Some(space) = &self.space else {
            return Vec::new();
        };
        (space.slices.iter().zip(&self.plan.slices))
            .map(|(b, s)| (b.readback.buffer(), s.count as u64 * 4))
            .collect()
    }

    fn encode(&self, kit: &Kit, encoder: &mut wgpu::CommandEncoder) {
        let Some(space) = &self.space else { return };
        self.copies.record(&space.staging, encoder);
        let observers = self.plan.face_counts.len();
        let per_group = self.plan.per_group;
        for (g, first) in (0..observers).step_by(per_group).enumerate() {
            let count = (observers - first).min(per_group);
            self.encode_faces(kit, space, first, count, encoder);
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("cover field classify"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&kit.classify);
            for (s, slice) in self.plan.slices.iter().enumerate() {
                pass.set_bind_group(0, &space.classify_groups[s][g], &[]);
                pass.dispatch_workgroups(slice.dispatch.0, slice.dispatch.1, 1);
            }
        }
        for (b, s) in space.slices.iter().zip(&self.plan.slices) {
            let (hidden, readback) = (b.hidden.buffer(), b.readback.buffer());
            encoder.copy_buffer_to_buffer(hidden, 0, readback, 0, s.count as u64 * 4);
        }
    }

    /// The render passes of the `count` observers of the group starting at `first`: layer
    /// 6 * o + f holds face f of the group's observer o; a single view fills only f = 0.
    fn encode_faces(
        &self,
        kit: &Kit,
        space: &Workspace,
        first: usize,
        count: usize,
        encoder: &mut wgpu::CommandEncoder,
    ) {
        let counts = &self.plan.face_counts;
        let layers = (0..count).flat_map(|o| (0..counts[first + o]).map(move |f| o * 6 + f));
        let Some(render_group) = &space.render_group else {
            return;
        };
        for layer in layers {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("depth map face"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &space.textures.layer_views[layer],
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color {
                            r: NOTHING,
                            g: 0.0,
                            b: 0.0,
                            a: 1.0,
                        }),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &space.textures.depth_view,
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
            pass.set_pipeline(&kit.render);
            let offset = ((first * 6 + layer) as u64 * self.plan.stride) as u32;
            pass.set_bind_group(0, render_group, &[offset]);
            for (vb, n) in self.tiers.iter().flat_map(|t| t.buffers.iter()) {
                pass.set_vertex_buffer(0, vb.slice(..));
                pass.draw(0..*n, 0..1);
            }
        }
    }

    /// The posture bits of the `n` ground points from the mapped readbacks; unmaps them.
    fn read(&self, n: usize) -> Result<Vec<u32>> {
        let mut out = vec![ALL_HIDDEN; n];
        let mut result = Ok(());
        for ((b, bytes), s) in self.readbacks().into_iter().zip(&self.plan.slices) {
            match b.get_mapped_range(..bytes) {
                Ok(view) => {
                    let bits: &[u32] = bytemuck::cast_slice(&view);
                    out[s.start..][..bits.len()].copy_from_slice(bits);
                }
                Err(e) => result = Err(Error::Gpu(e.to_string())),
            }
            b.unmap();
        }
        result.map(|()| out)
    }
}
