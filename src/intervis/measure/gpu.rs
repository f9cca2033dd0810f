//! The intervis measurement on the GPU, a batch of pairs in one submission and one wait.
//!
//! An atlas (R32Float brightness, Depth24PlusStencil8) gets a *tile* per target holding
//! exactly its padded box's view pixels ([`atlas_proj`]: the view's projection followed by a
//! shift and scale into the atlas; `atlas.rs` packs them). When the tiles of a batch do not fit
//! in one atlas they go in *fills*, each recorded one after another into the same command
//! buffer:
//!
//! 1. one render pass, cleared to sky, infinite depth and stencil 0: each tile's culled scene
//!    triangles (through an index buffer), scissored to the tile; then every target's
//!    humanoid with the stencil operations of Darken, McCue and Guerrero, one instanced draw
//!    per posture;
//! 2. one compute dispatch, a workgroup per tile, reduces each box to a record.
//!
//! The fill's tiles and records are bound at dynamic offsets; after the last fill the records
//! are copied to one readback buffer. Only the 48-byte records come back.

use super::View;
use bytemuck::{Pod, Zeroable};
use glam::{DMat4, DVec3, DVec4, Mat4, Vec3};

/// Lighting and atlas constants. Mirrors `struct Light` in `shaders/intervis_render.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Light {
    /// xyz: unit direction toward the sun; w: ambient share.
    pub sun: [f32; 4],
    pub sky: f32,
    pub target_albedo: f32,
    /// Width and height of both atlases, pixels.
    pub atlas: [f32; 2],
}
const _: () = assert!(std::mem::size_of::<Light>() == 32);

/// A target's tile. Mirrors `struct Tile` in both intervis shaders.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Tile {
    /// World to atlas clip space.
    pub view_proj: [[f32; 4]; 4],
    /// The target's local to world transform.
    pub model: [[f32; 4]; 4],
    /// xyz: the eye; w: the focal length of the target's view, pixels.
    pub eye: [f32; 4],
    /// The padded box `[x0, y0, x1, y1]` in the atlas.
    pub rect: [u32; 4],
    /// xy: the view pixel of the box's first pixel; z: the view's resolution.
    pub view_pixel: [u32; 4],
}
const _: () = assert!(std::mem::size_of::<Tile>() == 176);

pub(super) const BRIGHTNESS_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R32Float;
pub(super) const STENCIL_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth24PlusStencil8;
/// Stencil reference of a target fragment that passes the depth test (Darken, McCue and Guerrero).
pub(super) const TARGET_ID: u32 = 127;

/// World to atlas clip space for `view`'s pixel `box_origin` placed at atlas pixel
/// `tile_origin` of an atlas `atlas` pixels square: the view's projection (reversed infinite Z,
/// depth `NEAR / z`) followed by `x' = x r / W + w ((r + 2 dx) / W - 1)`, `y' = y r / W +
/// w (1 - (r + 2 dy) / W)` with `d = tile_origin - box_origin`. Computed in f64.
pub(super) fn atlas_proj(
    view: &View,
    box_origin: [u32; 2],
    tile_origin: [u32; 2],
    atlas: u32,
) -> Mat4 {
    let d = |v: Vec3| DVec3::new(f64::from(v.x), f64::from(v.y), f64::from(v.z));
    let (r, u, f, e) = (d(view.right), d(view.up), d(view.forward), d(view.eye));
    let view_m = DMat4::from_cols(
        DVec4::new(r.x, u.x, -f.x, 0.0),
        DVec4::new(r.y, u.y, -f.y, 0.0),
        DVec4::new(r.z, u.z, -f.z, 0.0),
        DVec4::new(-r.dot(e), -u.dot(e), f.dot(e), 1.0),
    );
    let res = f64::from(view.resolution);
    let s = 2.0 * f64::from(view.focal) / res;
    let near = f64::from(super::NEAR);
    let proj = DMat4::from_cols(
        DVec4::new(s, 0.0, 0.0, 0.0),
        DVec4::new(0.0, s, 0.0, 0.0),
        DVec4::new(0.0, 0.0, 0.0, -1.0),
        DVec4::new(0.0, 0.0, near, 0.0),
    );
    let w = f64::from(atlas);
    let dx = f64::from(tile_origin[0]) - f64::from(box_origin[0]);
    let dy = f64::from(tile_origin[1]) - f64::from(box_origin[1]);
    let to_atlas = DMat4::from_cols(
        DVec4::new(res / w, 0.0, 0.0, 0.0),
        DVec4::new(0.0, res / w, 0.0, 0.0),
        DVec4::new(0.0, 0.0, 1.0, 0.0),
        DVec4::new(
            (res + 2.0 * dx) / w - 1.0,
            1.0 - (res + 2.0 * dy) / w,
            0.0,
            1.0,
        ),
    );
    (to_atlas * proj * view_m).as_mat4()
}

/// The part of a view's frustum behind a pixel rectangle: the near plane and four side
/// planes through the eye (the rectangle grown by a pixel), each as an inward normal and an
/// offset along it from the eye.
pub(super) struct Frustum {
    eye: Vec3,
    planes: [(Vec3, f32); 5],
}

impl Frustum {
    pub(super) fn new(view: &View, px: super::PixelBox) -> Frustum {
        let c = view.resolution as f32 * 0.5;
        let a = |x: u32, grow: f32| (x as f32 + grow - c) / view.focal;
        let (f, r, u) = (view.forward, view.right, view.up);
        Frustum {
            eye: view.eye,
            planes: [
                (f, -super::NEAR),
                (r - f * a(px.x0, -1.0), 0.0),
                (-r + f * a(px.x1, 1.0), 0.0),
                (-u - f * a(px.y0, -1.0), 0.0),
                (u + f * a(px.y1, 1.0), 0.0),
            ],
        }
    }

    /// Whether the world box `lo..hi` may reach into the frustum (conservative: each plane is
    /// tested against the box's farthest corner along its normal).
    pub(super) fn touches(&self, lo: Vec3, hi: Vec3) -> bool {
        self.planes.iter().all(|&(n, d)| {
            let corner = Vec3::select(n.cmpge(Vec3::ZERO), hi, lo);
            (corner - self.eye).dot(n) + d >= 0.0
        })
    }
}
