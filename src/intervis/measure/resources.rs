//! What the intervis pass keeps between calls (see `crate::pool`): the triangles that block
//! sight, per scene tier in vertex buffers of whole culling blocks (uploaded once per tier
//! revision and mask), the posture meshes (once per target height and albedo), and pooled
//! workspaces: the view and slot textures, the per-group buffers and their bind groups.

use super::gpu::{CULL_BLOCK, SCENE_FORMAT, STENCIL_FORMAT, Z_FORMAT};
use super::pass::OP;
use super::pipelines::Kit;
use super::{IntervisParams, Plan};
use crate::gpu::{buffer_with, GpuTracer};
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

/// Posture meshes a cache keeps (target heights and albedos in use).
const TARGET_ENTRIES: usize = 2;

/// A vertex buffer of whole culling blocks, with each block's bounds.
pub(super) struct SceneRun {
    pub buffer: wgpu::Buffer,
    pub vertices: u32,
    pub cull: Vec<(Vec3, Vec3)>,
}

/// One scene tier's triangles that block sight under a mask, in BVH leaf order (spatially
/// compact blocks of `CULL_BLOCK`, so each view draws only the blocks inside its frustum).
pub(super) struct SceneTier {
    pub runs: Vec<SceneRun>,
    pub triangles: usize,
}

impl SceneTier {
    fn upload(tracer: &GpuTracer, tier: &Tier, mask: Mask, albedo: &[f32]) -> SceneTier {
        let mut vertices: Vec<Vertex> = Vec::new();
        for t in tier.triangles.iter().filter(|t| t.flags & mask.bits() != 0) {
            let [a, b, c] = t.vertices();
            let n = (b - a).cross(c - a).normalize_or_zero();
            let al = albedo[t.material as usize];
            vertices.extend([vertex(a, n, al), vertex(b, n, al), vertex(c, n, al)]);
        }
        let limits = tracer.device().limits();
        let per_buffer = ((limits.max_buffer_size / 96).clamp(1, u64::from(u32::MAX) / 3) as usize
            / CULL_BLOCK)
            .max(1)
            * CULL_BLOCK
            * 3;
        let runs = crate::pool::vertex_buffers(
            tracer,
            OP,
            "intervis scene vertices",
            &vertices,
            per_buffer,
        );
        let runs = (runs.into_iter().zip(vertices.chunks(per_buffer)))
            .map(|((buffer, n), vs)| SceneRun {
                buffer,
                vertices: n,
                cull: vs.chunks(CULL_BLOCK * 3).map(bounds).collect(),
            })
            .collect();
        SceneTier {
            runs,
            triangles: vertices.len() / 3,
        }
    }
}

fn bounds(vs: &[Vertex]) -> (Vec3, Vec3) {
    vs.iter()
        .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(l, h), v| {
            let p = Vec3::new(v[0], v[1], v[2]);
            (l.min(p), h.max(p))
        })
}

/// The three posture meshes in one vertex buffer, and each posture's vertex range.
pub(super) struct Targets {
    pub buffer: wgpu::Buffer,
    pub ranges: Vec<Range<u32>>,
}

impl Targets {
    fn upload(tracer: &GpuTracer, plan: &Plan, albedo: f32) -> Targets {
        let mut vertices: Vec<Vertex> = Vec::new();
        let mut ranges = Vec::new();
        for mesh in &plan.meshes {
            let first = vertices.len() as u32;
            for t in &mesh.triangles {
                let [a, b, c] = t.map(|v| mesh.positions[v as usize]);
                let n = (b - a).cross(c - a).normalize_or_zero();
                vertices.extend([
                    vertex(a, n, albedo),
                    vertex(b, n, albedo),
                    vertex(c, n, albedo),
                ]);
            }
            ranges.push(first..vertices.len() as u32);
        }
        let buffer = buffer_with(
            tracer,
            OP,
            "intervis target vertices",
            wgpu::BufferUsages::VERTEX,
            bytemuck::cast_slice(&vertices),
        );
        Targets { buffer, ranges }
    }
}

/// A call's geometry: both tiers' scene runs, then the posture meshes.
pub(super) struct Geometry {
    pub tiers: [Arc<SceneTier>; 2],
    pub targets: Arc<Targets>,
}

impl Geometry {
    /// The scene's runs, static tier first.
    pub fn runs(&self) -> impl Iterator<Item = &SceneRun> {
        self.tiers.iter().flat_map(|t| t.runs.iter())
    }

    /// Run `i` of [`Geometry::runs`].
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

/// Posture meshes by (target height, target albedo) bits.
struct TargetEntry {
    key: (u32, u32),
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
        let key = (
            params.target_height.to_bits(),
            params.target_albedo.to_bits(),
        );
        let mut cached = self.targets.lock().unwrap();
        let entry = match cached.iter().position(|e| e.key == key) {
            Some(i) => cached.remove(i),
            None => {
                let made =
                    checked_build(tracer, "the intervis targets", "free GPU memory", || {
                        Targets::upload(tracer, plan, params.target_albedo)
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

/// What one call needs of a workspace.
pub(super) struct Needs {
    pub res: u32,
    /// Target slots (stencil and brightness layers).
    pub slots: u32,
    pub groups: Vec<GroupNeeds>,
}

/// Bytes one group of targets needs.
pub(super) struct GroupNeeds {
    pub view_blocks: u64,
    pub batches: u64,
    pub jobs: usize,
}

/// The view's textures: scene brightness and depth copy (R32Float), the Depth32Float
/// attachment, and the bind group the target passes restore depth from.
pub(super) struct SceneTextures {
    res: u32,
    pub brightness: wgpu::TextureView,
    pub depth: wgpu::TextureView,
    pub z: wgpu::TextureView,
    pub depth_group: wgpu::BindGroup,
    _textures: [wgpu::Texture; 3],
}

impl SceneTextures {
    fn new(tracer: &GpuTracer, kit: &Kit, res: u32) -> SceneTextures {
        let texture = |label, format, usage| {
            crate::gpu::texture_array(tracer, OP, label, res, 1, format, usage)
        };
        let attach_and_read =
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING;
        let brightness = texture("intervis scene brightness", SCENE_FORMAT, attach_and_read);
        let depth = texture("intervis scene depth", SCENE_FORMAT, attach_and_read);
        let z = texture(
            "intervis scene z",
            Z_FORMAT,
            wgpu::TextureUsages::RENDER_ATTACHMENT,
        );
        let view_of = |t: &wgpu::Texture| t.create_view(&Default::default());
        let depth_view = view_of(&depth);
        let depth_group = tracer
            .device()
            .create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("intervis scene depth"),
                layout: &kit.depth_layout,
                entries: &[wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::TextureView(&depth_view),
                }],
            });
        SceneTextures {
            res,
            brightness: view_of(&brightness),
            depth: depth_view,
            z: view_of(&z),
            depth_group,
            _textures: [brightness, depth, z],
        }
    }
}

/// The target slots: a Depth24PlusStencil8 and an R32Float brightness layer each.
pub(super) struct SlotTextures {
    res: u32,
    slots: u32,
    pub stencil_layers: Vec<wgpu::TextureView>,
    pub brightness_layers: Vec<wgpu::TextureView>,
    stencil_array: wgpu::TextureView,
    brightness_array: wgpu::TextureView,
    _textures: [wgpu::Texture; 2],
}

impl SlotTextures {
    fn new(tracer: &GpuTracer, res: u32, slots: u32) -> SlotTextures {
        let usage = wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING;
        let texture =
            |label, format| crate::gpu::texture_array(tracer, OP, label, res, slots, format, usage);
        let stencil = texture("intervis stencil", STENCIL_FORMAT);
        let brightness = texture("intervis target brightness", SCENE_FORMAT);
        let layers = |t: &wgpu::Texture| -> Vec<wgpu::TextureView> {
            (0..slots)
                .map(|l| {
                    t.create_view(&wgpu::TextureViewDescriptor {
                        dimension: Some(wgpu::TextureViewDimension::D2),
                        base_array_layer: l,
                        array_layer_count: Some(1),
                        ..Default::default()
                    })
                })
                .collect()
        };
        let array = |t: &wgpu::Texture, aspect| {
            t.create_view(&wgpu::TextureViewDescriptor {
                dimension: Some(wgpu::TextureViewDimension::D2Array),
                aspect,
                ..Default::default()
            })
        };
        SlotTextures {
            res,
            slots,
            stencil_layers: layers(&stencil),
            brightness_layers: layers(&brightness),
            stencil_array: array(&stencil, wgpu::TextureAspect::StencilOnly),
            brightness_array: array(&brightness, wgpu::TextureAspect::All),
            _textures: [stencil, brightness],
        }
    }
}

/// One group's buffers (`GROUP_JOBS` targets at most) and the bind groups over them.
pub(super) struct GroupBuffers {
    /// `UNIFORM`: a view block per rendered view and per target, at the dynamic-offset stride.
    view_blocks: GrowBuffer,
    /// `UNIFORM`: a batch block per chunk, at the dynamic-offset stride.
    batches: GrowBuffer,
    /// `STORAGE`: the jobs.
    jobs: GrowBuffer,
    /// `STORAGE | COPY_SRC`: the records, and their readback.
    pub records: GrowBuffer,
    pub readback: GrowBuffer,
    pub view_group: Option<wgpu::BindGroup>,
    pub reduce_group: Option<wgpu::BindGroup>,
}

impl GroupBuffers {
    pub fn view_blocks(&self) -> &wgpu::Buffer {
        self.view_blocks.buffer()
    }

    pub fn batches(&self) -> &wgpu::Buffer {
        self.batches.buffer()
    }

    pub fn jobs(&self) -> &wgpu::Buffer {
        self.jobs.buffer()
    }
}

/// Everything a call creates, reused by later calls (see `crate::pool`).
pub(super) struct Workspace {
    pub scene: SceneTextures,
    pub slots: SlotTextures,
    /// `UNIFORM`: the `Light` block.
    pub light: GrowBuffer,
    pub groups: Vec<GroupBuffers>,
    pub receipt: ReceiptBuffers,
    pub staging: Staging,
}

impl Workspace {
    /// An idle workspace from `pool` grown to `needs`, or a new one; bound for this call.
    pub fn take(tracer: &GpuTracer, pool: &Pool<Workspace>, kit: &Kit, needs: &Needs) -> Self {
        let fits = |w: &Workspace| {
            w.scene.res == needs.res && w.slots.res == needs.res && w.slots.slots >= needs.slots
        };
        let mut w = pool.take(fits).unwrap_or_else(|| Workspace {
            scene: SceneTextures::new(tracer, kit, needs.res),
            slots: SlotTextures::new(tracer, needs.res, needs.slots),
            light: GrowBuffer::new(
                tracer,
                OP,
                "intervis light",
                wgpu::BufferUsages::UNIFORM,
                32,
                32,
            ),
            groups: Vec::new(),
            receipt: ReceiptBuffers::new(tracer, OP),
            staging: Staging::new(tracer, OP, needs.upload_bytes()),
        });
        let mut replaced = false;
        if w.scene.res != needs.res {
            w.scene = SceneTextures::new(tracer, kit, needs.res);
            replaced = true;
        }
        if w.slots.res != needs.res || w.slots.slots < needs.slots {
            w.slots = SlotTextures::new(tracer, needs.res, needs.slots);
            replaced = true;
        }
        if replaced {
            for g in &mut w.groups {
                (g.view_group, g.reduce_group) = (None, None);
            }
        }
        w.grow_groups(tracer, needs);
        w.bind(tracer, kit, needs.groups.len());
        w
    }

    /// Grows (or adds) each group's buffers to `needs`; a replaced buffer unbinds the group's
    /// bind groups.
    fn grow_groups(&mut self, tracer: &GpuTracer, needs: &Needs) {
        let limits = tracer.device().limits();
        let max = limits.max_buffer_size;
        let binding = limits.max_storage_buffer_binding_size.min(max);
        let record = size_of::<crate::intervis::IntervisRecord>() as u64;
        for (i, n) in needs.groups.iter().enumerate() {
            let (jobs, records) = (n.jobs as u64 * 32, n.jobs as u64 * record);
            if i == self.groups.len() {
                let grow =
                    |label, usage, need, cap| GrowBuffer::new(tracer, OP, label, usage, need, cap);
                let storage = wgpu::BufferUsages::STORAGE;
                self.groups.push(GroupBuffers {
                    view_blocks: grow(
                        "intervis views",
                        wgpu::BufferUsages::UNIFORM,
                        n.view_blocks,
                        max,
                    ),
                    batches: grow(
                        "intervis batches",
                        wgpu::BufferUsages::UNIFORM,
                        n.batches,
                        max,
                    ),
                    jobs: grow("intervis jobs", storage, jobs, binding),
                    records: grow(
                        "intervis records",
                        storage | wgpu::BufferUsages::COPY_SRC,
                        records,
                        binding,
                    ),
                    readback: grow(
                        "intervis readback",
                        wgpu::BufferUsages::MAP_READ,
                        records,
                        max,
                    ),
                    view_group: None,
                    reduce_group: None,
                });
                continue;
            }
            let g = &mut self.groups[i];
            let mut changed = g.view_blocks.ensure(tracer, OP, n.view_blocks, max);
            changed |= g.batches.ensure(tracer, OP, n.batches, max);
            changed |= g.jobs.ensure(tracer, OP, jobs, binding);
            changed |= g.records.ensure(tracer, OP, records, binding);
            changed |= g.readback.ensure(tracer, OP, records, max);
            if changed {
                (g.view_group, g.reduce_group) = (None, None);
            }
        }
    }

    /// Makes the bind groups of the first `groups` groups that have none.
    fn bind(&mut self, tracer: &GpuTracer, kit: &Kit, groups: usize) {
        let device = tracer.device();
        let entry = |binding, resource| wgpu::BindGroupEntry { binding, resource };
        let texture = wgpu::BindingResource::TextureView;
        let light = self.light.buffer();
        for g in self.groups.iter_mut().take(groups) {
            if g.view_group.is_some() && g.reduce_group.is_some() {
                continue;
            }
            g.view_group = Some(device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("intervis view"),
                layout: &kit.render_layout,
                entries: &[
                    entry(0, sized(g.view_blocks.buffer(), 144)),
                    entry(1, light.as_entire_binding()),
                ],
            }));
            g.reduce_group = Some(device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("intervis reduce"),
                layout: &kit.reduce_layout,
                entries: &[
                    entry(0, light.as_entire_binding()),
                    entry(1, sized(g.batches.buffer(), 16)),
                    entry(2, g.jobs.buffer().as_entire_binding()),
                    entry(3, texture(&self.slots.stencil_array)),
                    entry(4, texture(&self.slots.brightness_array)),
                    entry(5, texture(&self.scene.brightness)),
                    entry(6, g.records.buffer().as_entire_binding()),
                ],
            }));
        }
    }
}

impl Needs {
    /// Bytes of one call's uploads: view blocks, batches, jobs, the light and the receipt word.
    fn upload_bytes(&self) -> u64 {
        let groups: u64 = (self.groups.iter())
            .map(|g| g.view_blocks + g.batches + g.jobs as u64 * 32)
            .sum();
        groups + 32 + 4
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
