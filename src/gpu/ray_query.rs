//! The hardware walk: wgpu ray queries (`Features::EXPERIMENTAL_RAY_QUERY`) over acceleration
//! structures, in place of the compute kernels' BVH walk (`shaders/ray_query.wgsl`).
//!
//! Each uploaded scene chunk gets one bottom-level structure per class of material flags (the
//! triangles whose flags are the same; a class larger than the device's primitive limit is
//! cut into several) and a top-level structure with one instance per bottom-level one, its
//! mask the class's flags, so a query's mask culls the classes that cannot block it.
//! Triangles that block nothing are left out. Each query runs on the hardware alone first and
//! the triangle it reports is confirmed by the same watertight test the compute walk and the
//! CPU twin use; where that test refuses it, the query runs again with every candidate decided
//! by the test (`shaders/ray_query.wgsl`).
//!
//! wgpu cannot refit an acceleration structure yet, so a tier that changes (a door that moves)
//! is rebuilt whole with its upload. The builds are encoded into the next command encoder a
//! trace encodes into ([`GpuTracer::encode_builds`]), so they cost no submission of their own.

use super::GpuTracer;
use crate::bvh::GpuTriangle;
use crate::{Error, Result};
use std::sync::Mutex;

/// Whether an engine walks the scene with hardware ray queries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RayQuery {
    /// Ray queries when a GPU offers them, else the compute kernels. An adapter that runs on
    /// the CPU (lavapipe) gets the compute kernels even where it offers ray queries: it walks
    /// its acceleration structures in software on the same cores, slower than the compute
    /// walk. The environment variable `SIGHTLINE_RAY_QUERY` (`on`, `off` or `auto`) overrides
    /// it, so a test suite can run on either path unchanged.
    #[default]
    Auto,
    /// Ray queries, or an error when the adapter (or a caller's device) lacks them.
    On,
    /// The compute kernels.
    Off,
}

impl RayQuery {
    /// Parses `auto`, `on` or `off`.
    pub fn parse(s: &str) -> Result<RayQuery> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(RayQuery::Auto),
            "on" => Ok(RayQuery::On),
            "off" => Ok(RayQuery::Off),
            other => Err(Error::InvalidInput(format!(
                "ray-query setting '{other}' is not one of auto, on, off"
            ))),
        }
    }

    /// `Auto` as `SIGHTLINE_RAY_QUERY` sets it (unset or empty: `Auto`); `On` and `Off` as
    /// they are. An unknown value in the variable is an error.
    pub fn resolved(self) -> Result<RayQuery> {
        if self != RayQuery::Auto {
            return Ok(self);
        }
        match std::env::var("SIGHTLINE_RAY_QUERY") {
            Ok(v) if !v.trim().is_empty() => RayQuery::parse(&v)
                .map_err(|e| Error::InvalidInput(format!("SIGHTLINE_RAY_QUERY: {e}"))),
            _ => Ok(RayQuery::Auto),
        }
    }

    /// Whether to use ray queries on a device with `features` of type `kind`: an error for
    /// `On` without them.
    pub(crate) fn choose(self, features: wgpu::Features, kind: wgpu::DeviceType) -> Result<bool> {
        let offered = features.contains(wgpu::Features::EXPERIMENTAL_RAY_QUERY);
        match self.resolved()? {
            RayQuery::Off => Ok(false),
            RayQuery::Auto => Ok(offered && kind != wgpu::DeviceType::Cpu),
            RayQuery::On if offered => Ok(true),
            RayQuery::On => Err(Error::Gpu(
                "ray queries were asked for (--ray-query on, RayQuery::On or \
                 SIGHTLINE_RAY_QUERY=on) but the device lacks EXPERIMENTAL_RAY_QUERY: use a \
                 driver that offers it (Mesa 24.1 or later for lavapipe) or --ray-query auto"
                    .into(),
            )),
        }
    }
}

/// Vertex stride of the bottom-level geometry: three `f32` per vertex, three per triangle.
const VERTEX_BYTES: u64 = 12;

/// One bottom-level structure: `count` triangles from vertex `3 * first` of the chunk's
/// vertex buffer, whose indices in the chunk start at `first` in `tri_index`.
struct Piece {
    blas: wgpu::Blas,
    size: wgpu::BlasTriangleGeometrySizeDescriptor,
    first: u32,
}

/// A chunk's acceleration structures and the candidate-to-triangle map the shader reads.
pub(super) struct ChunkAccel {
    pub(super) tlas: wgpu::Tlas,
    pub(super) tri_index: wgpu::Buffer,
    pieces: Vec<Piece>,
    /// The positions the bottom-level builds read; dropped once they are encoded.
    vertices: Mutex<Option<wgpu::Buffer>>,
}

/// Flag classes of the triangles that can block some mask (flags 1 to 7; 0 blocks nothing).
const CLASSES: u32 = 8;

/// The chunk's triangle indices grouped by class (class 1 first), and each class's range.
fn group_by_class(triangles: &[GpuTriangle]) -> (Vec<u32>, Vec<(u32, std::ops::Range<u32>)>) {
    let class = |i: &u32| triangles[*i as usize].flags & (CLASSES - 1);
    let mut order: Vec<u32> = (0..triangles.len() as u32)
        .filter(|i| class(i) != 0)
        .collect();
    order.sort_by_key(class);
    let mut start = 0;
    let ranges = order
        .chunk_by(|a, b| class(a) == class(b))
        .map(|run| {
            let range = start..start + run.len() as u32;
            start = range.end;
            (class(&run[0]), range)
        })
        .collect();
    (order, ranges)
}

/// The positions of the triangles in `order`, three vertices each.
fn positions(triangles: &[GpuTriangle], order: &[u32]) -> Vec<[f32; 3]> {
    order
        .iter()
        .flat_map(|&i| {
            let t = &triangles[i as usize];
            [t.v0, t.v1, t.v2]
        })
        .collect()
}

const IDENTITY: [f32; 12] = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0];

impl GpuTracer {
    /// The acceleration structures of one chunk of triangles (built by the next
    /// [`GpuTracer::encode_builds`]).
    pub(super) fn chunk_accel(&self, triangles: &[GpuTriangle]) -> ChunkAccel {
        let (order, ranges) = group_by_class(triangles);
        let max_prims = self.device.limits().max_blas_primitive_count.max(1);
        let mut pieces = Vec::new();
        let mut instances = Vec::new();
        for (class, range) in ranges {
            for first in range.clone().step_by(max_prims as usize) {
                let count = (range.end - first).min(max_prims);
                let size = wgpu::BlasTriangleGeometrySizeDescriptor {
                    vertex_format: wgpu::VertexFormat::Float32x3,
                    vertex_count: 3 * count,
                    index_format: None,
                    index_count: None,
                    flags: wgpu::AccelerationStructureGeometryFlags::empty(),
                };
                let blas = self.device.create_blas(
                    &wgpu::CreateBlasDescriptor {
                        label: Some("sightline blas"),
                        flags: wgpu::AccelerationStructureFlags::PREFER_FAST_TRACE,
                        update_mode: wgpu::AccelerationStructureUpdateMode::Build,
                    },
                    wgpu::BlasGeometrySizeDescriptors::Triangles {
                        descriptors: vec![size.clone()],
                    },
                );
                self.count("scene", |c| c.buffers_created += 1);
                instances.push(wgpu::TlasInstance::new(&blas, IDENTITY, first, class as u8));
                pieces.push(Piece { blas, size, first });
            }
        }
        let mut tlas = self.device.create_tlas(&wgpu::CreateTlasDescriptor {
            label: Some("sightline tlas"),
            max_instances: (instances.len() as u32).max(1),
            flags: wgpu::AccelerationStructureFlags::PREFER_FAST_TRACE,
            update_mode: wgpu::AccelerationStructureUpdateMode::Build,
        });
        self.count("scene", |c| c.buffers_created += 1);
        for (i, instance) in instances.into_iter().enumerate() {
            tlas[i] = Some(instance);
        }
        let vertices = super::buffer_with(
            self,
            "scene",
            "blas vertices",
            wgpu::BufferUsages::BLAS_INPUT,
            bytemuck::cast_slice(&positions(triangles, &order)),
        );
        let tri_index = super::buffer_with(
            self,
            "scene",
            "candidate triangles",
            wgpu::BufferUsages::STORAGE,
            bytemuck::cast_slice(&order),
        );
        ChunkAccel {
            tlas,
            tri_index,
            pieces,
            vertices: Mutex::new(Some(vertices)),
        }
    }

    /// Encodes the builds of every acceleration structure uploaded since the last call into
    /// `encoder`. Every trace on the ray-query path calls it before its dispatches, so the
    /// builds ride in the first submission that needs them; a caller who encodes passes into
    /// several encoders must submit the first one encoded first (or with the others).
    pub fn encode_builds(&self, encoder: &mut wgpu::CommandEncoder) {
        let pending = std::mem::take(&mut *self.pending_builds.lock().unwrap());
        if pending.is_empty() {
            return;
        }
        let accels: Vec<&ChunkAccel> = pending
            .iter()
            .flat_map(|t| t.chunks.iter())
            .filter_map(|c| match &c.walk {
                super::Walk::Accel(a) => Some(a),
                super::Walk::Nodes(_) => None,
            })
            .collect();
        let vertices: Vec<Option<wgpu::Buffer>> = accels
            .iter()
            .map(|a| a.vertices.lock().unwrap().take())
            .collect();
        let mut entries = Vec::new();
        for (accel, vertices) in accels.iter().zip(&vertices) {
            let Some(vertices) = vertices else { continue };
            for piece in &accel.pieces {
                entries.push(wgpu::BlasBuildEntry {
                    blas: &piece.blas,
                    geometry: wgpu::BlasGeometries::TriangleGeometries(vec![
                        wgpu::BlasTriangleGeometry {
                            size: &piece.size,
                            vertex_buffer: vertices,
                            first_vertex: 3 * piece.first,
                            vertex_stride: VERTEX_BYTES,
                            index_buffer: None,
                            first_index: None,
                            transform_buffer: None,
                            transform_buffer_offset: None,
                        },
                    ]),
                });
            }
        }
        encoder.build_acceleration_structures(entries.iter(), accels.iter().map(|a| &a.tlas));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tri(flags: u32) -> GpuTriangle {
        GpuTriangle {
            v0: [0.0; 3],
            id: 0,
            v1: [1.0, 0.0, 0.0],
            material: 0,
            v2: [0.0, 1.0, 0.0],
            flags,
        }
    }

    #[test]
    fn classes_group_triangles_by_flags_and_leave_out_those_that_block_nothing() {
        let tris: Vec<GpuTriangle> = [3, 0, 1, 3, 4, 1, 0, 3].map(tri).to_vec();
        let (order, ranges) = group_by_class(&tris);
        assert_eq!(order, vec![2, 5, 0, 3, 7, 4]);
        assert_eq!(ranges, vec![(1, 0..2), (3, 2..5), (4, 5..6)]);
        assert_eq!(positions(&tris, &order).len(), 18);
    }

    #[test]
    fn settings_parse_and_refuse_unknown_words() {
        assert_eq!(RayQuery::parse(" ON ").unwrap(), RayQuery::On);
        assert_eq!(RayQuery::parse("off").unwrap(), RayQuery::Off);
        assert!(RayQuery::parse("yes")
            .unwrap_err()
            .to_string()
            .contains("auto, on, off"));
        let (all, none) = (wgpu::Features::all(), wgpu::Features::empty());
        let gpu = wgpu::DeviceType::DiscreteGpu;
        assert!(!RayQuery::Off.choose(all, gpu).unwrap());
        assert!(RayQuery::On.choose(none, gpu).is_err());
        assert!(RayQuery::On.choose(all, wgpu::DeviceType::Cpu).unwrap());
        // Auto as the environment leaves it: on a CPU adapter the compute kernels.
        if RayQuery::Auto.resolved().unwrap() == RayQuery::Auto {
            assert!(RayQuery::Auto.choose(all, gpu).unwrap());
            assert!(!RayQuery::Auto.choose(all, wgpu::DeviceType::Cpu).unwrap());
            assert!(!RayQuery::Auto.choose(none, gpu).unwrap());
        }
    }
}
