//! What the intervis pass keeps between calls (see `crate::pool`): the triangles that block
//! sight, per scene tier in vertex buffers of whole culling blocks (uploaded once per tier
//! revision and mask), the posture meshes (once per target height), and pooled
//! workspaces: the atlas, the tile, index, record and readback buffers and their bind groups.

use super::gpu::{Tile, BRIGHTNESS_FORMAT, STENCIL_FORMAT};
use super::pass::OP;
use super::pipelines::Kit;
use super::{IntervisParams, Plan};
use crate::gpu::{buffer_with, GpuTracer};
use crate::intervis::IntervisRecord;
use crate::pool::{checked_build, GrowBuffer, Pool, Staging, TierCache, Trim};
use crate::receipt::ReceiptBuffers;
use crate::scene::{Mask, Scene, Tier};
use crate::Result;
use glam::Vec3;
use std::num::NonZeroU64;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// Vertex: position, then unit normal with albedo in w (32 bytes).
type Vertex = [f32; 8];

fn vertex(p: Vec3, n: Vec3, albedo: f32) -> Vertex {
    [p.x, p.y, p.z, n.x, n.y, n.z, albedo, 0.0]
}

/// Posture meshes a cache keeps (target heights in use).
const TARGET_ENTRIES: usize = 2;

/// A vertex buffer of scene triangles (three vertices each).
pub(super) struct SceneRun {
    pub buffer: wgpu::Buffer,
}

/// One scene tier's triangles that block sight under a mask, in the tier's order, in vertex
/// buffers of at most `per_run` vertices; `first_vertex[t]` is where tier triangle `t` starts
/// (counting across runs), `u32::MAX` for a triangle the mask leaves out. A tile draws the
/// triangles of the BVH leaves in its frustum through an index buffer (`atlas.rs`).
pub(super) struct SceneTier {
    pub runs: Vec<SceneRun>,
    pub triangles: usize,
    pub per_run: u32,
    pub first_vertex: Vec<u32>,
}

impl SceneTier {
    fn upload(tracer: &GpuTracer, tier: &Tier, mask: Mask, albedo: &[f32]) -> SceneTier {
        let mut vertices: Vec<Vertex> = Vec::new();
        let mut first_vertex = Vec::with_capacity(tier.triangles.len());
        for t in &tier.triangles {
            if t.flags & mask.bits() == 0 {
                first_vertex.push(u32::MAX);
                continue;
            }
            first_vertex.push(vertices.len() as u32);
            let [a, b, c] = t.vertices();
            let n = (b - a).cross(c - a).normalize_or_zero();
            let al = albedo[t.material as usize];
            vertices.extend([vertex(a, n, al), vertex(b, n, al), vertex(c, n, al)]);
        }
        let limits = tracer.device().limits();
        let per_run = (limits.max_buffer_size / 96).clamp(1, u64::from(u32::MAX) / 3) as usize * 3;
        let runs =
            crate::pool::vertex_buffers(tracer, OP, "intervis scene vertices", &vertices, per_run);
        SceneTier {
            runs: runs
                .into_iter()
                .map(|(buffer, _)| SceneRun { buffer })
                .collect(),
            triangles: vertices.len() / 3,
            per_run: per_run as u32,
            first_vertex,
        }
    }
}

/// The three posture meshes, indexed: their positions (`[x, y, z, 1]`) in one vertex buffer,
/// their triangles in one index buffer, and each posture's index range and first vertex.
pub(super) struct Targets {
    pub buffer: wgpu::Buffer,
    pub index: wgpu::Buffer,
    pub ranges: Vec<(Range<u32>, i32)>,
}

impl Targets {
    fn upload(tracer: &GpuTracer, plan: &Plan) -> Targets {
        let mut vertices: Vec<[f32; 4]> = Vec::new();
        let mut indices: Vec<u32> = Vec::new();
        let mut ranges = Vec::new();
        for mesh in &plan.meshes {
            let (base, first) = (vertices.len() as i32, indices.len() as u32);
            vertices.extend(mesh.positions.iter().map(|p| p.extend(1.0).to_array()));
            indices.extend(mesh.triangles.iter().flatten());
            ranges.push((first..indices.len() as u32, base));
        }
        let buffer = |label, usage, bytes: &[u8]| buffer_with(tracer, OP, label, usage, bytes);
        Targets {
            buffer: buffer(
                "intervis target vertices",
                wgpu::BufferUsages::VERTEX,
                bytemuck::cast_slice(&vertices),
            ),
            index: buffer(
                "intervis target indices",
                wgpu::BufferUsages::INDEX,
                bytemuck::cast_slice(&indices),
            ),
            ranges,
        }
    }
}

/// A call's geometry: both tiers' scene runs, then the posture meshes.
pub(super) struct Geometry {
    pub tiers: [Arc<SceneTier>; 2],
    pub targets: Arc<Targets>,
}

impl Geometry {
    /// Vertex buffer `i` of the scene, static tier first.
    pub fn run(&self, i: usize) -> &SceneRun {
        let first = self.tiers[0].runs.len();
        match i.checked_sub(first) {
            Some(k) => &self.tiers[1].runs[k],
            None => &self.tiers[0].runs[i],
        }
    }

    pub fn scene_triangles(&self) -> usize {
        self.tiers[0].triangles + self.tiers[1].triangles
    }
}

/// Posture meshes by target height bits.
struct TargetEntry {
    key: u32,
    targets: Arc<Targets>,
}

/// The pass's per-device store, kept by [`GpuTracer::cached_pool`].
#[derive(Default)]
pub(super) struct IntervisCache {
    tiers: TierCache<SceneTier>,
    /// Posture meshes, most recently used last.
    targets: Mutex<Vec<TargetEntry>>,
    pub pool: Pool<Workspace>,
}

impl Trim for IntervisCache {
    fn trim(&self) {
        self.pool.clear();
    }
}

impl IntervisCache {
    /// The call's geometry: uploaded only for a scene revision, mask or target not seen
    /// recently.
    pub fn geometry(
        &self,
        tracer: &GpuTracer,
        scene: &Scene,
        plan: &Plan,
        params: &IntervisParams,
    ) -> Result<Geometry> {
        let albedo: Vec<f32> = scene.materials().iter().map(|m| m.albedo).collect();
        let tiers = self.tiers.tiers(
            tracer,
            scene,
            params.mask,
            "the intervis scene triangles",
            |t| SceneTier::upload(tracer, t, params.mask, &albedo),
        )?;
        let key = params.target_height.to_bits();
        let mut cached = self.targets.lock().unwrap();
        let entry = match cached.iter().position(|e| e.key == key) {
            Some(i) => cached.remove(i),
            None => {
                let made =
                    checked_build(tracer, "the intervis targets", "free GPU memory", || {
                        Targets::upload(tracer, plan)
                    })?;
                TargetEntry {
                    key,
                    targets: Arc::new(made),
                }
            }
        };
        let targets = entry.targets.clone();
        cached.push(entry);
        let excess = cached.len().saturating_sub(TARGET_ENTRIES);
        cached.drain(..excess);
        Ok(Geometry { tiers, targets })
    }
}

/// What one call needs of a workspace: the atlas side, the entries one fill's dynamic-offset
/// bindings span, and where the last fill's windows start (its window must fit after).
pub(super) struct Needs {
    /// Scene vertex indices of the call.
    pub indices: usize,
    pub window: usize,
    pub last: usize,
    /// Tile slots of the call (its records and readback).
    pub tiles: usize,
}

/// The atlas: brightness and depth-stencil, and the stencil aspect the reduction reads.
pub(super) struct Atlas {
    side: u32,
    pub brightness: wgpu::TextureView,
    pub depth_stencil: wgpu::TextureView,
    stencil_only: wgpu::TextureView,
    _textures: [wgpu::Texture; 2],
}

impl Atlas {
    fn new(tracer: &GpuTracer, side: u32) -> Atlas {
        let usage = wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING;
        let texture =
            |label, format| crate::gpu::texture_array(tracer, OP, label, side, 1, format, usage);
        let textures = [
            texture("intervis atlas brightness", BRIGHTNESS_FORMAT),
            texture("intervis atlas depth and stencil", STENCIL_FORMAT),
        ];
        let view = |t: &wgpu::Texture, aspect| {
            t.create_view(&wgpu::TextureViewDescriptor {
                dimension: Some(wgpu::TextureViewDimension::D2),
                aspect,
                ..Default::default()
            })
        };
        let all = wgpu::TextureAspect::All;
        Atlas {
            side,
            brightness: view(&textures[0], all),
            depth_stencil: view(&textures[1], all),
            stencil_only: view(&textures[1], wgpu::TextureAspect::StencilOnly),
            _textures: textures,
        }
    }
}

/// Everything a call creates, reused by later calls (see `crate::pool`).
pub(super) struct Workspace {
    pub atlas: Atlas,
    /// `UNIFORM`: the `Light` block.
    pub light: GrowBuffer,
    /// `STORAGE`: scene tiles, target tiles, records; the records' readback.
    pub tiles: GrowBuffer,
    pub records: GrowBuffer,
    pub readback: GrowBuffer,
    /// `INDEX`: the scene tiles' triangles.
    pub indices: GrowBuffer,
    /// Entries each dynamic-offset binding spans.
    window: usize,
    pub groups: Option<Groups>,
    pub receipt: ReceiptBuffers,
    pub staging: Staging,
}

/// The bind groups over a workspace's buffers and atlas.
pub(super) struct Groups {
    pub render: wgpu::BindGroup,
    pub reduce: wgpu::BindGroup,
}

impl Workspace {
    /// An idle workspace from `pool` whose atlas is at least `side` pixels square (another
    /// idle one gets a new atlas of `side`), or a new one.
    pub fn take(tracer: &GpuTracer, pool: &Pool<Workspace>, side: u32) -> Self {
        let Some(mut w) = pool.take(|w: &Workspace| w.atlas.side >= side) else {
            return Workspace::new(tracer, side);
        };
        if w.atlas.side < side {
            w.atlas = Atlas::new(tracer, side);
            w.groups = None;
        }
        w
    }

    /// The atlas side.
    pub fn side(&self) -> u32 {
        self.atlas.side
    }

    /// Grows the buffers to `needs` and binds them when anything changed.
    pub fn fit(&mut self, tracer: &GpuTracer, kit: &Kit, needs: &Needs) {
        let max = tracer.device().limits().max_buffer_size;
        let mut changed = self.window < needs.window;
        self.window = self.window.max(needs.window);
        let span = |last: usize, size: usize| ((last + self.window) * size) as u64;
        let (tiles, records) = (
            span(needs.last, size_of::<Tile>()),
            span(needs.last, size_of::<IntervisRecord>()),
        );
        let record = size_of::<IntervisRecord>() as u64;
        changed |= self.tiles.ensure(tracer, OP, tiles, max);
        changed |= self.records.ensure(tracer, OP, records, max);
        self.readback
            .ensure(tracer, OP, needs.tiles as u64 * record, max);
        self.indices
            .ensure(tracer, OP, needs.indices as u64 * 4, max);
        if changed || self.groups.is_none() {
            self.groups = Some(self.bind(tracer, kit));
        }
    }

    fn new(tracer: &GpuTracer, side: u32) -> Workspace {
        let max = tracer.device().limits().max_buffer_size;
        let grow = |label, usage, need| GrowBuffer::new(tracer, OP, label, usage, need, max);
        let storage = wgpu::BufferUsages::STORAGE;
        Workspace {
            atlas: Atlas::new(tracer, side),
            light: grow("intervis light", wgpu::BufferUsages::UNIFORM, 32),
            tiles: grow("intervis tiles", storage, 0),
            records: grow(
                "intervis records",
                storage | wgpu::BufferUsages::COPY_SRC,
                0,
            ),
            readback: grow("intervis readback", wgpu::BufferUsages::MAP_READ, 0),
            indices: grow("intervis scene indices", wgpu::BufferUsages::INDEX, 0),
            window: 0,
            groups: None,
            receipt: ReceiptBuffers::new(tracer, OP),
            staging: Staging::new(tracer, OP, 4096),
        }
    }

    /// The bind groups over the current buffers: each storage binding spans `window` entries.
    fn bind(&self, tracer: &GpuTracer, kit: &Kit) -> Groups {
        let device = tracer.device();
        let entry = |binding, resource| wgpu::BindGroupEntry { binding, resource };
        let texture = wgpu::BindingResource::TextureView;
        let span = |size: usize| (self.window * size) as u64;
        let light = self.light.buffer().as_entire_binding();
        let a = &self.atlas;
        Groups {
            render: device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("intervis render"),
                layout: &kit.render_layout,
                entries: &[
                    entry(0, light),
                    entry(1, sized(self.tiles.buffer(), span(size_of::<Tile>()))),
                ],
            }),
            reduce: device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("intervis reduce"),
                layout: &kit.reduce_layout,
                entries: &[
                    entry(1, sized(self.tiles.buffer(), span(size_of::<Tile>()))),
                    entry(2, texture(&a.stencil_only)),
                    entry(3, texture(&a.brightness)),
                    entry(
                        4,
                        sized(self.records.buffer(), span(size_of::<IntervisRecord>())),
                    ),
                ],
            }),
        }
    }
}

/// The first `size` bytes of `buffer` (a dynamic-offset binding).
fn sized(buffer: &wgpu::Buffer, size: u64) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer,
        offset: 0,
        size: NonZeroU64::new(size),
    })
}
