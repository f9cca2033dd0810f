//! Intervis (Darken, McCue and Guerrero): how much of a target an observer sees and how well it stands out, and
//! the detection probability that follows.
//!
//! - [`measure`]: exposed, occluded and background pixels and brightness from a stencil render
//!   pass reduced on the GPU, and its CPU ray-casting twin.
//! - [`detection`]: the ACQUIRE-style target acquisition model.

pub mod detection;
pub mod measure;

pub use measure::IntervisPass;

use bytemuck::{Pod, Zeroable};

/// The intervis record of one ordered (observer, target) pair in one target posture.
/// Mirrors `struct IntervisRecord` in `shaders/intervis_reduce.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct IntervisRecord {
    /// Exposed target pixels (stencil test: depth passed), `n_t`.
    pub exposed: u32,
    /// Occluded target pixels (depth failed), `n_o`.
    pub occluded: u32,
    /// Background pixels in the padded box, `n_b`.
    pub background: u32,
    /// Pixels in the padded bounding box.
    pub box_pixels: u32,
    /// Mean target brightness `B_t` and background brightness `B_b` (0..1).
    pub target_brightness: f32,
    pub background_brightness: f32,
    /// Contrast `C = |B_t - B_b| / B_b` (0 where `B_b` is 0 or nothing is exposed).
    pub contrast: f32,
    /// Occlusion `O = n_o / (n_t + n_o)` (1 where the target is not in view at all).
    pub occlusion: f32,
    /// Exposed solid angle in steradians (`n_t` times one pixel's solid angle at its position).
    pub solid_angle: f32,
    pub _pad: [u32; 3],
}

const _: () = assert!(std::mem::size_of::<IntervisRecord>() == 48);
