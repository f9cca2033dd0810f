//! The intervis measurement on the GPU: a scene pass per view, a stencil pass per target, a
//! reduction workgroup per target; only the 48-byte records are read back.
//!
//! Textures (reused by every view and target of a call): the view's scene brightness and
//! depth copy (R32Float) with a Depth32Float attachment, and `layers` target slots, each a
//! Depth24PlusStencil8 layer plus an R32Float brightness layer. A view's targets go through
//! the slots in chunks: a render pass per target (scissored to its box), then one compute
//! dispatch with a workgroup per target of the chunk. Slots per chunk are bounded by the
//! device's `max_texture_array_layers` and a 256 MiB budget. Work is encoded in groups of at
//! most `GROUP_JOBS` targets, each with its own job and record buffers, so all groups go into
//! one command buffer and all groups' records are read back at the end (`pass.rs`:
//! [`super::IntervisPass`]). The geometry is uploaded once per scene revision and the textures
//! and buffers are pooled between calls (`resources.rs`).

use super::{PixelBox, View};
use bytemuck::{Pod, Zeroable};
use glam::{Mat4, Vec3};

/// Uniform block of the render passes. Mirrors `struct ViewBlock` in
/// `shaders/intervis_render.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct ViewBlock {
    pub view_proj: [[f32; 4]; 4],
    pub model: [[f32; 4]; 4],
    pub eye: [f32; 4],
}
const _: () = assert!(std::mem::size_of::<ViewBlock>() == 144);

/// Lighting and camera constants. Mirrors `struct Light` in both intervis shaders.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Light {
    /// xyz: unit direction toward the sun; w: ambient share.
    pub sun: [f32; 4],
    pub sky: f32,
    pub focal: f32,
    pub resolution: u32,
    pub _pad: u32,
}
const _: () = assert!(std::mem::size_of::<Light>() == 32);

/// One target of the reduction. Mirrors `struct Job` in `shaders/intervis_reduce.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Job {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
    /// Slot in the group's record buffer.
    pub record: u32,
    /// Stencil and brightness layer.
    pub layer: u32,
    pub _pad: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<Job>() == 32);

/// Per-dispatch uniform. Mirrors `struct Batch` in `shaders/intervis_reduce.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Batch {
    pub first: u32,
    pub _pad: [u32; 3],
}

pub(super) const SCENE_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R32Float;
pub(super) const Z_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
pub(super) const STENCIL_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth24PlusStencil8;
/// Texture memory the target slots may use.
pub(super) const TEXTURE_BUDGET: u64 = 256 << 20;
/// Targets per submission (each has its own job and record buffers).
pub(super) const GROUP_JOBS: usize = 4096;
/// Scene triangles per frustum-culling block.
pub(super) const CULL_BLOCK: usize = 256;
/// Stencil reference of a target fragment that passes the depth test (Darken, McCue and Guerrero).
pub(super) const TARGET_ID: u32 = 127;

/// Whether the world box `lo..hi` may reach into the part of `view`'s frustum behind the
/// pixel rectangle `px` (conservative: each of the four side planes and the near plane is
/// tested against the box's farthest corner along its normal; the rectangle grows by a pixel).
pub(super) fn in_frustum(view: &View, px: PixelBox, lo: Vec3, hi: Vec3) -> bool {
    let c = view.resolution as f32 * 0.5;
    let a = |x: u32, grow: f32| (x as f32 + grow - c) / view.focal;
    let (f, r, u) = (view.forward, view.right, view.up);
    let planes = [
        (f, -super::NEAR),
        (r - f * a(px.x0, -1.0), 0.0),
        (-r + f * a(px.x1, 1.0), 0.0),
        (-u - f * a(px.y0, -1.0), 0.0),
        (u + f * a(px.y1, 1.0), 0.0),
    ];
    planes.iter().all(|&(n, d)| {
        let corner = Vec3::select(n.cmpge(Vec3::ZERO), hi, lo);
        (corner - view.eye).dot(n) + d >= 0.0
    })
}

pub(super) fn view_block(view: &View, model: Mat4) -> ViewBlock {
    ViewBlock {
        view_proj: view.view_proj().to_cols_array_2d(),
        model: model.to_cols_array_2d(),
        eye: view.eye.extend(0.0).into(),
    }
}

pub(super) fn clear_attachment(
    view: &wgpu::TextureView,
    value: f64,
) -> wgpu::RenderPassColorAttachment<'_> {
    wgpu::RenderPassColorAttachment {
        view,
        depth_slice: None,
        resolve_target: None,
        ops: wgpu::Operations {
            load: wgpu::LoadOp::Clear(wgpu::Color {
                r: value,
                g: 0.0,
                b: 0.0,
                a: 1.0,
            }),
            store: wgpu::StoreOp::Store,
        },
    }
}
