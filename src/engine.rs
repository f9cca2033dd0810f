//! `Engine`: one entry point over both backends.

use crate::gpu::{GpuTracer, RayQuery, TracePass};
use crate::scene::{Mask, Scene};
use crate::trace::cpu::Fusion;
use crate::trace::{self, cpu, Hit, HitRecord, Occlusion, Ray, Segment};
use crate::{Error, Result};
use glam::Vec3;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Held while the engine creates or destroys a Vulkan instance, adapter or device of its own:
/// NVIDIA's driver and older Vulkan loaders race when threads do that concurrently (a test
/// binary running engines on 16 threads hung in the driver about one run in three on an H100;
/// the loader walks its list of devices while another thread frees from it).
static LIFECYCLE: Mutex<()> = Mutex::new(());

fn lifecycle() -> MutexGuard<'static, ()> {
    LIFECYCLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Which backend an engine runs its kernels on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// WGSL compute kernels through wgpu.
    Gpu,
    /// The CPU twins, parallel with rayon.
    Cpu,
}

/// Engine settings.
#[derive(Clone, Debug, Default)]
pub struct EngineOptions {
    /// Caps the bytes of one storage binding below the device's limit. Scenes and batches larger
    /// than this are split (tests use it to force splitting on small inputs).
    pub max_binding_bytes: Option<u64>,
    /// Whether the kernels walk the scene with hardware ray queries (acceleration structures)
    /// or with the compute BVH walk; by default ray queries wherever a GPU offers them, the
    /// compute walk on a CPU adapter (lavapipe) ([`RayQuery::Auto`]).
    pub ray_query: RayQuery,
}

/// Batched visibility queries over a [`Scene`], on the GPU or the CPU.
///
/// The backends agree by contract, not bit for bit (a GPU compiler may fuse `a * b + c`): an
/// occlusion bit may differ only for a segment within `eps` of a triangle edge or ending within
/// `eps` of a triangle, and closest hits lie within `eps` of each other along the surface
/// normal, where `eps` is 1e-5 times the largest coordinate magnitude involved (at least 1 m).
/// Decisions built on them are identical except at such boundaries. ARCHITECTURE.md,
/// "Agreement between backends", has the whole contract; [`Engine::cpu_fused`] is a CPU twin
/// that rounds as a contracting GPU compiler does.
pub struct Engine {
    gpu: Option<GpuTracer>,
    adapter: Option<String>,
    /// Why [`Engine::headless`] chose the CPU backend, when it did.
    reason: Option<String>,
    /// How the CPU backend rounds `a * b + c` in its triangle tests.
    fusion: Fusion,
}

impl Drop for Engine {
    /// Releases the device (and with the last reference its instance) under the lock that
    /// creating one takes.
    fn drop(&mut self) {
        if let Some(gpu) = self.gpu.take() {
            let _serial = lifecycle();
            drop(gpu);
        }
    }
}

impl Engine {
    /// The CPU backend.
    #[must_use]
    pub fn cpu() -> Engine {
        Self::cpu_fused(Fusion::None)
    }

    /// The CPU backend with its triangle tests' products and sums fused as a contracting GPU
    /// compiler may fuse them ([`Fusion`]): a twin that differs from the plain one the way a
    /// real GPU does, in the last bits of distances and in the bits of grazing segments.
    #[must_use]
    pub fn cpu_fused(fusion: Fusion) -> Engine {
        Engine {
            gpu: None,
            adapter: None,
            reason: None,
            fusion,
        }
    }

    /// The CPU backend, with why it was chosen.
    fn cpu_because(reason: String) -> Engine {
        let mut cpu = Self::cpu();
        cpu.reason = Some(reason);
        cpu
    }

    /// How this engine's CPU kernels round (always [`Fusion::None`] on the GPU backend).
    #[must_use]
    pub fn fusion(&self) -> Fusion {
        self.fusion
    }

    /// Features the engine needs on a caller's device (none beyond WebGPU's defaults). A
    /// caller's device that also has `wgpu::Features::EXPERIMENTAL_RAY_QUERY` (requested with
    /// `wgpu::ExperimentalFeatures::enabled()` and the adapter's acceleration-structure limits)
    /// lets the engine walk the scene with hardware ray queries ([`EngineOptions::ray_query`]).
    #[must_use]
    pub fn required_features() -> wgpu::Features {
        wgpu::Features::empty()
    }

    /// Limits to request when creating a device for the engine: WebGPU's defaults, raised to
    /// the adapter's storage-binding and buffer sizes so large scenes stay in one chunk.
    #[must_use]
    pub fn required_limits(adapter_limits: &wgpu::Limits) -> wgpu::Limits {
        wgpu::Limits {
            max_storage_buffer_binding_size: adapter_limits.max_storage_buffer_binding_size,
            max_buffer_size: adapter_limits.max_buffer_size,
            ..wgpu::Limits::default()
        }
    }

    /// Shares a caller's device and queue (a renderer's). Nothing is created beyond the
    /// engine's pipelines and buffers; the device's error and device-lost handlers stay the
    /// caller's.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        options: EngineOptions,
    ) -> Result<Engine> {
        let lost = Arc::new(Mutex::new(None));
        let ray_query = options
            .ray_query
            .choose(device.features(), device.adapter_info().device_type)?;
        Ok(Engine {
            fusion: Fusion::None,
            gpu: Some(GpuTracer::new(
                device,
                queue,
                options.max_binding_bytes,
                ray_query,
                lost,
            )?),
            adapter: None,
            reason: None,
        })
    }

    /// The backend that fits the machine: a headless GPU engine on its own device when the
    /// adapter is a real GPU; the CPU backend when no adapter exists (one log line says how to
    /// get one) or when the only adapter is a software rasterizer (`DeviceType::Cpu`: lavapipe,
    /// llvmpipe, SwiftShader, WARP), which runs the kernels several times slower than the CPU
    /// backend does ([`Engine::backend_reason`] says so; [`Engine::headless_gpu`] forces the
    /// GPU path). Honours `WGPU_BACKEND` and `WGPU_ADAPTER_NAME`.
    ///
    /// On a machine without a desktop session (`XDG_RUNTIME_DIR` unset), Mesa's device-select
    /// layer makes libwayland print "error: XDG_RUNTIME_DIR is invalid" while adapters are
    /// listed; set `NODEVICE_SELECT=1` in the process environment before the first engine is
    /// made to silence it (the `sightline` command does).
    #[must_use]
    pub fn headless() -> Engine {
        Self::headless_with(EngineOptions::default())
    }

    /// [`Engine::headless`] with `options` for the GPU engine it makes (when it makes one).
    #[must_use]
    pub fn headless_with(options: EngineOptions) -> Engine {
        let _serial = lifecycle();
        let adapter = instance_and_adapter();
        let software = match &adapter {
            Ok(a) if a.get_info().device_type == wgpu::DeviceType::Cpu => Some(a.get_info()),
            _ => None,
        };
        if let Some(info) = software {
            let reason = format!(
                "the only adapter, {} ({:?}), is a software rasterizer, slower than the CPU \
                 backend: using the CPU backend (--backend gpu forces the adapter)",
                info.name, info.backend
            );
            log::debug!("{reason}");
            return Self::cpu_because(reason);
        }
        match adapter.and_then(|a| Self::on_adapter(&a, options)) {
            Ok(e) => e,
            Err(e) => {
                let reason = format!("{e}; falling back to the CPU backend");
                log::warn!("{reason}");
                Self::cpu_because(reason)
            }
        }
    }

    /// Why [`Engine::headless`] chose the CPU backend (no adapter, or only a software one);
    /// `None` for an engine on a GPU or one made with [`Engine::cpu`].
    #[must_use]
    pub fn backend_reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// A headless GPU engine on any adapter, software rasterizers included, or an error (never
    /// the CPU fallback).
    pub fn headless_gpu(options: EngineOptions) -> Result<Engine> {
        let _serial = lifecycle();
        Self::on_adapter(&instance_and_adapter()?, options)
    }

    /// The device the engine asks `adapter` for: [`Engine::required_features`] and
    /// [`Engine::required_limits`], plus, for the ray-query path, `EXPERIMENTAL_RAY_QUERY` with
    /// the adapter's own acceleration-structure limits (lavapipe offers less than wgpu's
    /// stated minimums, which it would refuse).
    fn device_descriptor(
        adapter: &wgpu::Adapter,
        ray_query: bool,
    ) -> wgpu::DeviceDescriptor<'static> {
        let plain = wgpu::DeviceDescriptor {
            label: Some("sightline"),
            required_features: Self::required_features(),
            required_limits: Self::required_limits(&adapter.limits()),
            ..Default::default()
        };
        if !ray_query {
            return plain;
        }
        wgpu::DeviceDescriptor {
            required_features: plain.required_features | wgpu::Features::EXPERIMENTAL_RAY_QUERY,
            required_limits: plain
                .required_limits
                .using_acceleration_structure_values(adapter.limits()),
            // SAFETY: wgpu marks ray queries experimental (their validation is incomplete);
            // the engine builds its acceleration structures from validated, finite triangles
            // and binds them only to its own kernels.
            experimental_features: unsafe { wgpu::ExperimentalFeatures::enabled() },
            ..plain
        }
    }

    /// A GPU engine on its own device of `adapter`.
    fn on_adapter(adapter: &wgpu::Adapter, options: EngineOptions) -> Result<Engine> {
        let info = adapter.get_info();
        let ray_query = options
            .ray_query
            .choose(adapter.features(), info.device_type)?;
        let (device, queue) = pollster::block_on(
            adapter.request_device(&Self::device_descriptor(adapter, ray_query)),
        )
        .map_err(|e| Error::RequestDevice(e.to_string()))?;
        let lost = Arc::new(Mutex::new(None));
        let flag = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            *flag.lock().unwrap() = Some(format!("{reason:?}: {message}"));
        });
        // We own this device: report stray errors in the log instead of wgpu's default panic.
        device.on_uncaptured_error(Arc::new(|e| log::error!("wgpu: {e}")));
        let gpu = GpuTracer::new(&device, &queue, options.max_binding_bytes, ray_query, lost)?;
        log::info!(
            "GPU backend on {} ({:?}), {}",
            info.name,
            info.backend,
            if ray_query {
                "ray queries"
            } else {
                "compute kernels"
            }
        );
        Ok(Engine {
            fusion: Fusion::None,
            gpu: Some(gpu),
            adapter: Some(format!(
                "{} ({:?}, {:?})",
                info.name, info.backend, info.device_type
            )),
            reason: None,
        })
    }

    #[must_use]
    pub fn backend(&self) -> Backend {
        if self.gpu.is_some() {
            Backend::Gpu
        } else {
            Backend::Cpu
        }
    }

    /// Whether the GPU backend walks the scene with hardware ray queries (false on the CPU
    /// backend and on the compute kernels).
    #[must_use]
    pub fn uses_ray_query(&self) -> bool {
        self.gpu.as_ref().is_some_and(GpuTracer::uses_ray_query)
    }

    /// Adapter name for headless engines (for logs and benchmark reports).
    #[must_use]
    pub fn adapter_name(&self) -> Option<&str> {
        self.adapter.as_deref()
    }

    /// GPU work done through this engine so far, per operation and in total: submissions,
    /// blocking waits, bytes uploaded and read back, buffers and textures created. All zero on
    /// the CPU backend. Take a snapshot before a call and [`Counters::since`] after it to
    /// count one call.
    ///
    /// [`Counters::since`]: crate::Counters::since
    #[must_use]
    pub fn counters(&self) -> crate::CounterReport {
        self.gpu
            .as_ref()
            .map(GpuTracer::counters)
            .unwrap_or_default()
    }

    /// The GPU backend, for encoding passes into a caller's command encoder.
    #[must_use]
    pub fn gpu(&self) -> Option<&GpuTracer> {
        self.gpu.as_ref()
    }

    /// One bit per segment: set when a triangle matching `mask` lies strictly between its ends.
    ///
    /// Staged segments ([`Segment::staged`]) form runs of consecutive segments, each at a
    /// stage (0, 1 or 2), for questions a run answers with the first stage that holds an
    /// unblocked segment (a body whose postures count only while the lower ones hide). A
    /// backend may then leave a staged segment's bit clear without tracing it once its run has
    /// an unblocked segment at its stage or an earlier one, so the runs' answers are those of
    /// tracing every segment while its other bits are not. The GPU does so in one scene chunk
    /// or two; the CPU backend traces every segment.
    pub fn occluded(&self, scene: &Scene, segments: &[Segment], mask: Mask) -> Result<Occlusion> {
        match &self.gpu {
            None => cpu::occluded_checked(&scene.tiers(), segments, mask.bits(), self.fusion),
            Some(gpu) => {
                let pass = gpu.prepare_occluded(scene, segments, mask)?;
                gpu.run(&pass)?;
                pass.read_occlusion(gpu)
            }
        }
    }

    /// A fan: one bit per end, set when a triangle matching `mask` lies strictly between `eye`
    /// and that end ([`Engine::occluded`] of the segments `eye -> end`). The CPU backend traces
    /// segments that share their start in packets, so a fan costs less a segment than scattered
    /// ones; [`Engine::occluded`] finds such runs by itself, so listing a grid's segments eye by
    /// eye gains the same.
    pub fn occluded_from(
        &self,
        scene: &Scene,
        eye: Vec3,
        ends: &[Vec3],
        mask: Mask,
    ) -> Result<Occlusion> {
        let segments: Vec<Segment> = ends.iter().map(|&e| Segment::new(eye, e)).collect();
        self.occluded(scene, &segments, mask)
    }

    /// [`Engine::occluded`] for several batches, each with its own mask: on the GPU all of
    /// them are encoded into one submission, on the CPU traced in turn. Empty batches trace
    /// nothing.
    pub fn occluded_many(
        &self,
        scene: &Scene,
        batches: &[(&[Segment], Mask)],
    ) -> Result<Vec<Occlusion>> {
        match &self.gpu {
            None => batches
                .iter()
                .map(|&(s, m)| self.occluded(scene, s, m))
                .collect(),
            Some(gpu) => {
                let passes = batches
                    .iter()
                    .filter(|b| !b.0.is_empty())
                    .map(|&(s, m)| gpu.prepare_occluded(scene, s, m))
                    .collect::<Result<Vec<_>>>()?;
                gpu.run_all(&passes)?;
                gpu.map_passes(&passes)?;
                let mut read = passes.iter();
                batches
                    .iter()
                    .map(|b| match b.0.is_empty() {
                        true => Ok(Occlusion::new(0)),
                        false => read.next().expect("one pass per batch").read_occlusion(gpu),
                    })
                    .collect()
            }
        }
    }

    /// [`Engine::occluded`] for a stream of batches, all with `mask`: `each(k, bits)` gets
    /// batch `k`'s answer, in order. On the GPU the engine uploads and submits batch `k + 1`
    /// before it waits for batch `k`, so the caller's work making the next batch, validation,
    /// upload and readback overlap the GPU's tracing (two batches in flight, one submission and
    /// one wait each); on the CPU the batches are traced in turn. The first error (a bad
    /// batch, or one `each` returns) stops the stream.
    pub fn occluded_stream<S: AsRef<[Segment]>>(
        &self,
        scene: &Scene,
        batches: impl IntoIterator<Item = S>,
        mask: Mask,
        each: impl FnMut(usize, Occlusion) -> Result<()>,
    ) -> Result<()> {
        self.stream(
            batches,
            |b| self.occluded(scene, b, mask),
            |gpu, b| gpu.prepare_occluded(scene, b, mask),
            |gpu, pass| pass.read_occlusion(gpu),
            each,
        )
    }

    /// [`Engine::closest_hit`] for a stream of batches, pipelined as
    /// [`Engine::occluded_stream`] is.
    pub fn closest_hit_stream<S: AsRef<[Ray]>>(
        &self,
        scene: &Scene,
        batches: impl IntoIterator<Item = S>,
        mask: Mask,
        each: impl FnMut(usize, Vec<Option<Hit>>) -> Result<()>,
    ) -> Result<()> {
        let hits = |records: Vec<HitRecord>| records.iter().map(HitRecord::to_hit).collect();
        self.stream(
            batches,
            |b| self.closest_hit(scene, b, mask),
            |gpu, b| gpu.prepare_closest_hit(scene, b, mask),
            |gpu, pass| pass.read_hits(gpu).map(hits),
            each,
        )
    }

    /// Two batches in flight on the GPU: batch `k + 1` is prepared and submitted before batch
    /// `k` is read. On the CPU, `cpu` answers each batch in turn.
    fn stream<Q, S: AsRef<[Q]>, T>(
        &self,
        batches: impl IntoIterator<Item = S>,
        cpu: impl Fn(&[Q]) -> Result<T>,
        prepare: impl Fn(&GpuTracer, &[Q]) -> Result<TracePass>,
        read: impl Fn(&GpuTracer, &TracePass) -> Result<T>,
        mut each: impl FnMut(usize, T) -> Result<()>,
    ) -> Result<()> {
        let Some(gpu) = &self.gpu else {
            for (k, b) in batches.into_iter().enumerate() {
                each(k, cpu(b.as_ref())?)?;
            }
            return Ok(());
        };
        let mut in_flight: Option<(usize, TracePass)> = None;
        for (k, b) in batches.into_iter().enumerate() {
            let pass = prepare(gpu, b.as_ref())?;
            gpu.run(&pass)?;
            if let Some((j, done)) = in_flight.replace((k, pass)) {
                each(j, read(gpu, &done)?)?;
            }
        }
        match in_flight {
            Some((j, done)) => each(j, read(gpu, &done)?),
            None => Ok(()),
        }
    }

    /// The closest hit per ray (`None` where nothing matching `mask` is hit before `t_max`).
    pub fn closest_hit(&self, scene: &Scene, rays: &[Ray], mask: Mask) -> Result<Vec<Option<Hit>>> {
        Ok(self
            .closest_hit_records(scene, rays, mask)?
            .iter()
            .map(HitRecord::to_hit)
            .collect())
    }

    /// [`Engine::closest_hit`] as raw records, exactly as the kernels write them.
    pub fn closest_hit_records(
        &self,
        scene: &Scene,
        rays: &[Ray],
        mask: Mask,
    ) -> Result<Vec<HitRecord>> {
        match &self.gpu {
            None => {
                trace::validate_rays(rays)?;
                Ok(cpu::closest_hit_with(
                    &scene.tiers(),
                    rays,
                    mask.bits(),
                    self.fusion,
                ))
            }
            Some(gpu) => {
                let pass: TracePass = gpu.prepare_closest_hit(scene, rays, mask)?;
                gpu.run(&pass)?;
                pass.read_hits(gpu)
            }
        }
    }
}

impl Engine {
    /// [`Engine::closest_hit_records`] for the straight-down rays of a row-major grid given by
    /// its frame ([`trace::down::DownGrid`]): ray `i` leaves from height `starts[i]` over the
    /// centre of cell `i` (a NaN start meets nothing), as a top-down picture traces them. The
    /// GPU runs its ordinary kernel on the rays; the CPU lays the tree's leaves onto the grid
    /// and never builds a buffer of rays. The answers are the same, bit for bit.
    pub fn closest_hit_grid(
        &self,
        scene: &Scene,
        grid: &trace::down::DownGrid,
        starts: &[f32],
        mask: Mask,
    ) -> Result<Vec<HitRecord>> {
        self.closest_hit_grid_with(scene, grid, starts, mask, |h| *h)
    }

    /// [`Engine::closest_hit_grid`], keeping only what `keep` makes of each record (a picture
    /// of a million pixels need not hold 32 bytes a pixel).
    pub fn closest_hit_grid_with<T: bytemuck::Zeroable + Send>(
        &self,
        scene: &Scene,
        grid: &trace::down::DownGrid,
        starts: &[f32],
        mask: Mask,
        keep: impl Fn(&HitRecord) -> T + Sync,
    ) -> Result<Vec<T>> {
        if starts.is_empty() {
            return Ok(Vec::new());
        }
        match &self.gpu {
            // The grid kernel is a plain twin (it checks the grid); a fused engine takes the
            // general kernel.
            None if self.fusion == Fusion::None => {
                trace::down::closest_hit_grid_with(&scene.tiers(), grid, starts, mask.bits(), keep)
            }
            _ => {
                use rayon::prelude::*;
                grid.check(starts)?;
                let rays: Vec<Ray> = (starts.par_iter().enumerate())
                    .map(|(i, &y)| grid.ray(i, y))
                    .collect();
                let records = self.closest_hit_records(scene, &rays, mask)?;
                Ok(records.par_iter().map(&keep).collect())
            }
        }
    }
}

/// The adapter `WGPU_ADAPTER_NAME` names, or the high-performance one.
fn instance_and_adapter() -> Result<wgpu::Adapter> {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    pollster::block_on(pick_adapter(&instance))
}

async fn pick_adapter(instance: &wgpu::Instance) -> Result<wgpu::Adapter> {
    if let Ok(name) = std::env::var("WGPU_ADAPTER_NAME") {
        let want = name.to_lowercase();
        let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        return adapters
            .into_iter()
            .find(|a| a.get_info().name.to_lowercase().contains(&want))
            .ok_or_else(|| {
                log::warn!("WGPU_ADAPTER_NAME={name} matches none of the adapters {names:?}");
                Error::NoAdapter
            });
    }
    instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: None,
            ..Default::default()
        })
        .await
        .map_err(|_| Error::NoAdapter)
}
