//! sightline: batched line-of-sight on the GPU (wgpu compute) with a CPU twin for every kernel.
//!
//! ```no_run
//! use sightline::{Engine, Mask, Segment, scene::procedural};
//! let scene = procedural::village(7, 1);
//! let engine = Engine::headless(); // a real GPU if there is one, else the CPU backend
//! let segs = [Segment::new([0.0, 1.7, 0.0].into(), [30.0, 1.0, 5.0].into())];
//! let bits = engine.occluded(&scene, &segs, Mask::SIGHT).unwrap();
//! println!("blocked: {}", bits.get(0));
//! ```

pub mod agent;
pub mod bvh;
pub mod counters;
pub mod cover;
mod csv;
mod engine;
mod error;
pub mod fireteam;
mod gpu;
pub mod ground;
pub mod intervis;
pub mod limits;
pub mod nav;
mod pool;
mod receipt;
pub mod ring;
pub mod scene;
pub mod tables;
pub mod terrain;
pub mod tpm;
pub mod trace;
pub mod underlay;
pub mod viewshed;

pub use counters::{CounterReport, Counters};
pub use engine::{Backend, Engine, EngineOptions};
pub use error::{Error, Result};
/// The WGSL sources and the uniform block they read, for the shader validation and layout
/// tests; not part of the API.
#[doc(hidden)]
pub use gpu::{
    kernel_source as gpu_kernel_source, kernel_source_for as gpu_kernel_source_for,
    Params as GpuParams,
};
pub use gpu::{GpuTracer, RayQuery, TracePass, WorkspaceStats};
pub use scene::{Mask, Material, MaterialFlags, Mesh, Mobility, ObjectId, Scene};
pub use trace::cpu::Fusion;
pub use trace::{Hit, Occlusion, Ray, Segment};
