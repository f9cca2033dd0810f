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

use super::pipelines::{buffer_with, entry, Kit};
use super::view::{DepthView, Face, FieldBounds};
use super::{CoverField, CoverFieldParams, FieldGround, ALL_HIDDEN};
use crate::cover::Agent;
use crate::gpu::GpuTracer;
use crate::receipt::Receipt;
use crate::scene::{Mask, Scene};
use crate::{Error, Result};
use bytemuck::{Pod, Zeroable};
use glam::Vec3;
use std::num::NonZeroU64;
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
const OP: &str = "cover_field";
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
    vertex_buffers: Vec<(wgpu::Buffer, u32)>,
    render_group: wgpu::BindGroup,
    /// Byte stride of the faces' uniform slots.
    stride: u64,
    /// Faces drawn per observer (1 for a single view, 6 for a cube).
    face_counts: Vec<usize>,
    per_group: usize,
    layer_views: Vec<wgpu::TextureView>,
    depth_view: wgpu::TextureView,
    slices: Vec<Slice>,
    _textures: [wgpu::Texture; 2],
}

impl CoverFieldPass {
    /// Validates the inputs (`params` must have `ground`'s `cell`, `size` and `max_slope`;
    /// `face_resolution` and `bias` are this pass's), uploads the triangles matching `mask`,
    /// the observers' views and the ground points, and binds them. All resources are created
    /// inside error scopes: running out of GPU memory is an error, not a panic.
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
        // The masked triangles, three world-space vertices each.
        let vertices: Vec<[f32; 3]> = scene
            .tiers()
            .iter()
            .flat_map(|t| t.triangles.iter())
            .filter(|t| t.flags & mask.bits() != 0)
            .flat_map(|t| t.vertices().map(Into::into))
            .collect();
        if vertices.is_empty() {
            return Ok(trivial(0)); // nothing blocks: every point is seen
        }
        let Some(bounds) = FieldBounds::around(points, agent) else {
            return Ok(trivial(ALL_HIDDEN));
        };
        let device = tracer.device();
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let kit = tracer.cached(Kit::new);
        let work = Work::new(
            tracer, &kit, &vertices, points, &bounds, agent, observers, params,
        );
        let receipt = Receipt::new(tracer, OP);
        if let Some(e) = pollster::block_on(validation.pop()) {
            return Err(Error::Gpu(format!("cover field pass failed: {e}")));
        }
        if let Some(e) = pollster::block_on(oom.pop()) {
            return Err(Error::Gpu(format!(
                "out of GPU memory for the cover field: {e}; lower face_resolution or pass \
                 fewer observers per call"
            )));
        }
        log::debug!(
            "cover field pass prepared: {} points, {} observers in groups of {}, {} \
             triangles: pipelines and uploads {:?}",
            points.len(),
            observers.len(),
            work.per_group,
            vertices.len() / 3,
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
                let readbacks = w.slices.iter().map(|s| &s.readback);
                crate::gpu::map_read_all(
                    tracer,
                    OP,
                    readbacks.chain(self.receipt.buffer()),
                    "the cover field",
                )?;
                if let Err(e) = self.receipt.check_submitted(WHAT) {
                    w.slices.iter().for_each(|s| s.readback.unmap());
                    return Err(e);
                }
                w.read(n)?
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

impl Work {
    #[allow(clippy::too_many_arguments)]
    fn new(
        tracer: &GpuTracer,
        kit: &Kit,
        vertices: &[[f32; 3]],
        points: &[Vec3],
        bounds: &FieldBounds,
        agent: &Agent,
        observers: &[Vec3],
        params: &CoverFieldParams,
    ) -> Work {
        let device = tracer.device();
        let limits = device.limits();
        let res = params.face_resolution.min(limits.max_texture_dimension_2d);
        if res < params.face_resolution {
            log::warn!(
                "face_resolution {} exceeds the device's limit; using {res}",
                params.face_resolution
            );
        }
        let with = |label, usage, bytes: &[u8]| buffer_with(tracer, OP, label, usage, bytes);
        // Vertex buffers of at most max_buffer_size bytes.
        let per_buffer =
            (limits.max_buffer_size / 36).clamp(1, u64::from(u32::MAX) / 3) as usize * 3;
        let vertex_buffers: Vec<(wgpu::Buffer, u32)> = vertices
            .chunks(per_buffer)
            .map(|c| {
                let b = with(
                    "cover field vertices",
                    wgpu::BufferUsages::VERTEX,
                    bytemuck::cast_slice(c),
                );
                (b, c.len() as u32)
            })
            .collect();
        // Each observer's view of the field's bounds: a cube, or one face aimed at the field.
        let views: Vec<DepthView> = observers
            .iter()
            .map(|&o| bounds.depth_view(o, res))
            .collect();
        // Faces, six slots per observer: one list for the classify pass, one padded to the
        // uniform offset alignment for the render passes' dynamic offsets.
        let faces: Vec<Face> = (observers.iter().zip(&views))
            .flat_map(|(&o, v)| v.faces(o))
            .collect();
        let stride = 80u64.next_multiple_of(u64::from(limits.min_uniform_buffer_offset_alignment));
        let mut padded = vec![0u8; faces.len() * stride as usize];
        for (i, f) in faces.iter().enumerate() {
            padded[i * stride as usize..][..80].copy_from_slice(bytemuck::bytes_of(f));
        }
        let face_uniforms = with("cover field faces", wgpu::BufferUsages::UNIFORM, &padded);
        let face_list = with(
            "cover field faces",
            wgpu::BufferUsages::STORAGE,
            bytemuck::cast_slice(&faces),
        );
        let render_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("depth map"),
            layout: &kit.render_layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &face_uniforms,
                    offset: 0,
                    size: NonZeroU64::new(80),
                }),
            }],
        });
        // Observers per group: the layer limit and the texture budget.
        let layer_bytes = u64::from(res) * u64::from(res) * 4;
        let per_group = ((limits.max_texture_array_layers / 6) as usize)
            .min((TEXTURE_BUDGET / (6 * layer_bytes)) as usize)
            .clamp(1, observers.len());
        let texture = |label, format, usage, layers| {
            crate::gpu::texture_array(tracer, OP, label, res, layers, format, usage)
        };
        let layers = per_group as u32 * 6;
        let distances = texture(
            "cover field depth views",
            COLOR,
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
            layers,
        );
        let depth = texture(
            "cover field z",
            DEPTH,
            wgpu::TextureUsages::RENDER_ATTACHMENT,
            1,
        );
        let depth_view = depth.create_view(&Default::default());
        let layer_views: Vec<wgpu::TextureView> = (0..layers)
            .map(|l| {
                distances.create_view(&wgpu::TextureViewDescriptor {
                    dimension: Some(wgpu::TextureViewDimension::D2),
                    base_array_layer: l,
                    array_layer_count: Some(1),
                    ..Default::default()
                })
            })
            .collect();
        let array_view = distances.create_view(&wgpu::TextureViewDescriptor {
            dimension: Some(wgpu::TextureViewDimension::D2Array),
            ..Default::default()
        });
        // Ground points in slices that fit one storage binding and one 2D dispatch.
        let max_binding = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        let per_slice = ((max_binding / 16) as usize).max(WORKGROUP as usize);
        let max_x = limits.max_compute_workgroups_per_dimension.max(1);
        let mut slices = Vec::new();
        for (s, chunk) in points.chunks(per_slice).enumerate() {
            let cells: Vec<[f32; 4]> = chunk.iter().map(|p| p.extend(0.0).into()).collect();
            let cells = with(
                "cover field cells",
                wgpu::BufferUsages::STORAGE,
                bytemuck::cast_slice(&cells),
            );
            let bytes = chunk.len() as u64 * 4;
            let hidden = tracer.create_buffer(
                OP,
                &wgpu::BufferDescriptor {
                    label: Some("cover field bits"),
                    size: bytes,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                },
            );
            let readback = tracer.create_buffer(
                OP,
                &wgpu::BufferDescriptor {
                    label: Some("cover field readback"),
                    size: bytes,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                },
            );
            let groups = (chunk.len() as u32).div_ceil(WORKGROUP);
            let dispatch = (groups.min(max_x), groups.div_ceil(max_x));
            let bind_groups: Vec<wgpu::BindGroup> = (0..observers.len())
                .step_by(per_group)
                .map(|first| {
                    let p = FieldParams {
                        count: chunk.len() as u32,
                        row_stride: dispatch.0 * WORKGROUP,
                        observers: (observers.len() - first).min(per_group) as u32,
                        first_observer: first as u32,
                        face_resolution: res,
                        accumulate: u32::from(first > 0),
                        radius: agent.radius,
                        bias: params.bias,
                        heads: [
                            agent.head_heights[0],
                            agent.head_heights[1],
                            agent.head_heights[2],
                            0.0,
                        ],
                    };
                    let p = with(
                        "cover field params",
                        wgpu::BufferUsages::UNIFORM,
                        bytemuck::bytes_of(&p),
                    );
                    device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: Some("cover field"),
                        layout: &kit.classify_layout,
                        entries: &[
                            entry(0, p.as_entire_binding()),
                            entry(1, face_list.as_entire_binding()),
                            entry(2, cells.as_entire_binding()),
                            entry(3, wgpu::BindingResource::TextureView(&array_view)),
                            entry(4, hidden.as_entire_binding()),
                        ],
                    })
                })
                .collect();
            slices.push(Slice {
                start: s * per_slice,
                hidden,
                readback,
                bytes,
                dispatch,
                bind_groups,
            });
        }
        Work {
            vertex_buffers,
            render_group,
            stride,
            face_counts: views.iter().map(DepthView::face_count).collect(),
            per_group,
            layer_views,
            depth_view,
            slices,
            _textures: [distances, depth],
        }
    }

    fn encode(&self, kit: &Kit, encoder: &mut wgpu::CommandEncoder) {
        let observers = self.face_counts.len();
        for (g, first) in (0..observers).step_by(self.per_group).enumerate() {
            let count = (observers - first).min(self.per_group);
            // Layer 6 * o + f holds face f of the group's observer o; a single view fills only
            // f = 0.
            let layers =
                (0..count).flat_map(|o| (0..self.face_counts[first + o]).map(move |f| o * 6 + f));
            for layer in layers {
                let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some("depth map face"),
                    color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                        view: &self.layer_views[layer],
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
                        view: &self.depth_view,
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
                let offset = ((first * 6 + layer) as u64 * self.stride) as u32;
                pass.set_bind_group(0, &self.render_group, &[offset]);
                for (vb, n) in &self.vertex_buffers {
                    pass.set_vertex_buffer(0, vb.slice(..));
                    pass.draw(0..*n, 0..1);
                }
            }
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("cover field classify"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&kit.classify);
            for s in &self.slices {
                pass.set_bind_group(0, &s.bind_groups[g], &[]);
                pass.dispatch_workgroups(s.dispatch.0, s.dispatch.1, 1);
            }
        }
        for s in &self.slices {
            encoder.copy_buffer_to_buffer(&s.hidden, 0, &s.readback, 0, s.bytes);
        }
    }

    /// The posture bits of the `n` ground points from the mapped readbacks; unmaps them.
    fn read(&self, n: usize) -> Result<Vec<u32>> {
        let mut out = vec![ALL_HIDDEN; n];
        let mut result = Ok(());
        for s in &self.slices {
            match s.readback.get_mapped_range(..) {
                Ok(view) => {
                    let bits: &[u32] = bytemuck::cast_slice(&view);
                    out[s.start..][..bits.len()].copy_from_slice(bits);
                }
                Err(e) => result = Err(Error::Gpu(e.to_string())),
            }
            s.readback.unmap();
        }
        result.map(|()| out)
    }
}

/// One binding's worth of ground points: its result bits, and a bind group per observer group.
struct Slice {
    start: usize,
    hidden: wgpu::Buffer,
    readback: wgpu::Buffer,
    bytes: u64,
    dispatch: (u32, u32),
    bind_groups: Vec<wgpu::BindGroup>,
}
