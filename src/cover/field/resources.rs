//! What the cover field pass keeps between calls (see `crate::pool`): the masked triangles
//! of each scene tier in vertex buffers, uploaded once per tier revision and mask, and pooled
//! workspaces: the depth views' textures, the per-call buffers and their bind groups.

use super::gpu::{COLOR, DEPTH, OP};
use super::pipelines::{entry, Kit};
use crate::gpu::GpuTracer;
use crate::pool::{GrowBuffer, Pool, Staging, TierCache, Trim};
use crate::receipt::ReceiptBuffers;
use crate::scene::{Mask, Tier};
use std::num::NonZeroU64;

/// Bytes of one vertex (a world-space position).
const VERTEX_BYTES: u64 = 12;

/// One scene tier's triangles matching a mask, three vertices each, in vertex buffers of at
/// most the device's buffer size.
pub(super) struct TierVertices {
    pub buffers: Vec<(wgpu::Buffer, u32)>,
    pub triangles: usize,
}

impl TierVertices {
    /// Extracts and uploads `tier`'s triangles matching `mask` (counted under [`OP`]).
    fn upload(tracer: &GpuTracer, tier: &Tier, mask: Mask) -> TierVertices {
        let vertices: Vec<[f32; 3]> = tier
            .triangles
            .iter()
            .filter(|t| t.flags & mask.bits() != 0)
            .flat_map(|t| t.vertices().map(Into::into))
            .collect();
        let max = tracer.device().limits().max_buffer_size;
        let per_buffer = (max / (3 * VERTEX_BYTES)).clamp(1, u64::from(u32::MAX) / 3) as usize * 3;
        TierVertices {
            buffers: crate::pool::vertex_buffers(
                tracer,
                OP,
                "cover field vertices",
                &vertices,
                per_buffer,
            ),
            triangles: vertices.len() / 3,
        }
    }
}

/// The pass's per-device store, kept by [`GpuTracer::cached_pool`].
#[derive(Default)]
pub(super) struct FieldCache {
    vertices: TierCache<TierVertices>,
    pub pool: Pool<Workspace>,
}

impl Trim for FieldCache {
    fn trim(&self) {
        self.pool.clear();
    }
}

impl FieldCache {
    /// Both tiers' masked triangles of `scene`, uploaded unless this revision was.
    pub fn vertices(
        &self,
        tracer: &GpuTracer,
        scene: &crate::scene::Scene,
        mask: Mask,
    ) -> crate::Result<[std::sync::Arc<TierVertices>; 2]> {
        self.vertices.tiers(
            tracer,
            scene,
            mask,
            "the cover field's scene triangles",
            |t| TierVertices::upload(tracer, t, mask),
        )
    }
}

/// What one call needs of a workspace.
pub(super) struct Needs {
    /// Face side in texels and texture layers (6 per observer of a group).
    pub res: u32,
    pub layers: u32,
    /// Bytes of the padded face uniforms and of the face list.
    pub face_uniform_bytes: u64,
    pub face_list_bytes: u64,
    /// Byte stride of the classify params blocks, one per (slice, observer group).
    pub params_stride: u64,
    pub groups: usize,
    /// Ground points per slice.
    pub slice_points: Vec<usize>,
}

/// One binding's worth of ground points: the points, the result bits and their readback.
pub(super) struct SliceBuffers {
    pub cells: GrowBuffer,
    pub hidden: GrowBuffer,
    pub readback: GrowBuffer,
}

/// The distance faces (R32Float, a layer per face) and the depth attachment, with views.
pub(super) struct Textures {
    res: u32,
    layers: u32,
    pub layer_views: Vec<wgpu::TextureView>,
    pub array_view: wgpu::TextureView,
    pub depth_view: wgpu::TextureView,
    _textures: [wgpu::Texture; 2],
}

impl Textures {
    fn new(tracer: &GpuTracer, res: u32, layers: u32) -> Textures {
        let texture = |label, format, usage, layers| {
            crate::gpu::texture_array(tracer, OP, label, res, layers, format, usage)
        };
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
        let layer_views = (0..layers)
            .map(|l| {
                distances.create_view(&wgpu::TextureViewDescriptor {
                    dimension: Some(wgpu::TextureViewDimension::D2),
                    base_array_layer: l,
                    array_layer_count: Some(1),
                    ..Default::default()
                })
            })
            .collect();
        Textures {
            res,
            layers,
            layer_views,
            array_view: distances.create_view(&wgpu::TextureViewDescriptor {
                dimension: Some(wgpu::TextureViewDimension::D2Array),
                ..Default::default()
            }),
            depth_view: depth.create_view(&Default::default()),
            _textures: [distances, depth],
        }
    }
}

/// Everything a call creates, reused by later calls (see `crate::pool`).
pub(super) struct Workspace {
    pub textures: Textures,
    /// `UNIFORM`: the faces at the render passes' dynamic-offset stride.
    pub face_uniforms: GrowBuffer,
    /// `STORAGE`: the faces, packed, for the classify pass.
    pub face_list: GrowBuffer,
    /// `UNIFORM`: a params block per (slice, observer group).
    pub params: GrowBuffer,
    pub slices: Vec<SliceBuffers>,
    pub receipt: ReceiptBuffers,
    pub staging: Staging,
    pub render_group: Option<wgpu::BindGroup>,
    /// Per slice, a classify bind group per observer group.
    pub classify_groups: Vec<Vec<wgpu::BindGroup>>,
    /// The (slices, groups) the bind groups were made for; `None` after any buffer or texture
    /// was replaced.
    bound: Option<(usize, usize)>,
}

impl Workspace {
    /// An idle workspace from `pool` grown to `needs`, or a new one; bound for this call.
    pub fn take(tracer: &GpuTracer, pool: &Pool<Workspace>, kit: &Kit, needs: &Needs) -> Self {
        let fits = |w: &Workspace| {
            w.textures.res == needs.res
                && w.textures.layers >= needs.layers
                && w.slices.len() >= needs.slice_points.len()
        };
        let mut w = match pool.take(fits) {
            Some(w) => w,
            None => Workspace::new(tracer, needs),
        };
        w.grow(tracer, needs);
        w.bind(tracer, kit, needs);
        w
    }

    fn new(tracer: &GpuTracer, needs: &Needs) -> Workspace {
        let max = tracer.device().limits().max_buffer_size;
        let grow = |label, usage, need| GrowBuffer::new(tracer, OP, label, usage, need, max);
        Workspace {
            textures: Textures::new(tracer, needs.res, needs.layers),
            face_uniforms: grow(
                "cover field faces",
                wgpu::BufferUsages::UNIFORM,
                needs.face_uniform_bytes,
            ),
            face_list: grow(
                "cover field faces",
                wgpu::BufferUsages::STORAGE,
                needs.face_list_bytes,
            ),
            params: grow(
                "cover field params",
                wgpu::BufferUsages::UNIFORM,
                needs.params_bytes(),
            ),
            slices: Vec::new(),
            receipt: ReceiptBuffers::new(tracer, OP),
            staging: Staging::new(tracer, OP, needs.upload_bytes()),
            render_group: None,
            classify_groups: Vec::new(),
            bound: None,
        }
    }

    /// Replaces whatever is too small for `needs` (textures of another size, buffers too
    /// short); a replacement unbinds the bind groups.
    fn grow(&mut self, tracer: &GpuTracer, needs: &Needs) {
        let limits = tracer.device().limits();
        let (max, binding) = (
            limits.max_buffer_size,
            limits
                .max_storage_buffer_binding_size
                .min(limits.max_buffer_size),
        );
        let mut replaced = false;
        let t = &self.textures;
        if t.res != needs.res || t.layers < needs.layers {
            self.textures = Textures::new(tracer, needs.res, needs.layers);
            replaced = true;
        }
        replaced |= self
            .face_uniforms
            .ensure(tracer, OP, needs.face_uniform_bytes, max);
        replaced |= self
            .face_list
            .ensure(tracer, OP, needs.face_list_bytes, binding);
        replaced |= self.params.ensure(tracer, OP, needs.params_bytes(), max);
        for (s, &points) in needs.slice_points.iter().enumerate() {
            let bits = points as u64 * 4;
            if s == self.slices.len() {
                let grow =
                    |label, usage, need, cap| GrowBuffer::new(tracer, OP, label, usage, need, cap);
                self.slices.push(SliceBuffers {
                    cells: grow(
                        "cover field cells",
                        wgpu::BufferUsages::STORAGE,
                        points as u64 * 16,
                        binding,
                    ),
                    hidden: grow(
                        "cover field bits",
                        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                        bits,
                        binding,
                    ),
                    readback: grow(
                        "cover field readback",
                        wgpu::BufferUsages::MAP_READ,
                        bits,
                        max,
                    ),
                });
                replaced = true;
                continue;
            }
            let b = &mut self.slices[s];
            replaced |= b.cells.ensure(tracer, OP, points as u64 * 16, binding);
            replaced |= b.hidden.ensure(tracer, OP, bits, binding);
            replaced |= b.readback.ensure(tracer, OP, bits, max);
        }
        if replaced {
            self.bound = None;
        }
    }

    /// Makes the bind groups unless those of the last call fit.
    fn bind(&mut self, tracer: &GpuTracer, kit: &Kit, needs: &Needs) {
        let shape = (needs.slice_points.len(), needs.groups);
        if self.bound == Some(shape) {
            return;
        }
        let device = tracer.device();
        self.render_group = Some(device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("depth map"),
            layout: &kit.render_layout,
            entries: &[entry(0, sized(self.face_uniforms.buffer(), 0, 80))],
        }));
        let blocks = needs.params_stride;
        self.classify_groups = (0..shape.0)
            .map(|s| {
                let b = &self.slices[s];
                (0..shape.1)
                    .map(|g| {
                        let at = (s * shape.1 + g) as u64 * blocks;
                        device.create_bind_group(&wgpu::BindGroupDescriptor {
                            label: Some("cover field"),
                            layout: &kit.classify_layout,
                            entries: &[
                                entry(0, sized(self.params.buffer(), at, 48)),
                                entry(1, self.face_list.buffer().as_entire_binding()),
                                entry(2, b.cells.buffer().as_entire_binding()),
                                entry(
                                    3,
                                    wgpu::BindingResource::TextureView(&self.textures.array_view),
                                ),
                                entry(4, b.hidden.buffer().as_entire_binding()),
                            ],
                        })
                    })
                    .collect()
            })
            .collect();
        self.bound = Some(shape);
    }
}

impl Needs {
    fn params_bytes(&self) -> u64 {
        (self.slice_points.len() * self.groups) as u64 * self.params_stride
    }

    /// Bytes of one call's uploads: faces, params, ground points and the receipt's word.
    fn upload_bytes(&self) -> u64 {
        let points: usize = self.slice_points.iter().sum();
        self.face_uniform_bytes
            + self.face_list_bytes
            + self.params_bytes()
            + points as u64 * 16
            + 4
    }
}

/// `size` bytes of `buffer` from `offset`.
fn sized(buffer: &wgpu::Buffer, offset: u64, size: u64) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer,
        offset,
        size: NonZeroU64::new(size),
    })
}
