//! Reused GPU resources of the render passes (the cover field's and intervis'): per scene tier
//! vertex data uploaded once per tier revision ([`TierCache`]), a take/give-back [`Pool`] of
//! whole per-pass workspaces (textures, buffers, bind groups), grow-only buffers
//! ([`GrowBuffer`]) and a mapped upload buffer that carries a pass's per-call data
//! ([`Staging`]) instead of a fresh staging buffer per write.
//!
//! The rule that keeps two live passes apart is the trace workspace's (`gpu.rs`): a pass takes
//! its workspace out of the pool at prepare and gives it back when dropped, so no two live
//! passes hold the same texture or buffer; a pass encoded but never read is dropped with its
//! workspace (a caller's unsubmitted command buffer may still write it).

use crate::gpu::{buffer_with, GpuTracer};
use crate::scene::{Mask, Scene, Tier};
use crate::{Error, Result};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// Idle workspaces a pool keeps; more are freed when their passes are dropped.
const MAX_IDLE: usize = 2;

/// Tier entries a [`TierCache`] keeps: three (scene, mask) pairs of two tiers each.
const TIER_ENTRIES: usize = 6;

/// Largest [`Staging`] buffer: a call with more per-call data than this (millions of ground
/// points) writes it with `Queue::write_buffer` instead of keeping that much mapped.
const MAX_STAGING: u64 = 64 << 20;

/// Something [`GpuTracer::trim_workspace`] can empty.
pub(crate) trait Trim: Send + Sync {
    /// Frees what is idle.
    fn trim(&self);
}

/// Idle values waiting for the next pass (see the module docs).
pub(crate) struct Pool<T> {
    idle: Mutex<Vec<T>>,
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Pool {
            idle: Mutex::new(Vec::new()),
        }
    }
}

impl<T> Pool<T> {
    /// The most recently given back idle value that `fits`, else the most recent one (for the
    /// caller to grow), else `None`.
    pub fn take(&self, fits: impl Fn(&T) -> bool) -> Option<T> {
        let mut idle = self.idle.lock().unwrap();
        match idle.iter().rposition(fits) {
            Some(i) => Some(idle.remove(i)),
            None => idle.pop(),
        }
    }

    /// Keeps `value` for a later pass, unless `MAX_IDLE` are already waiting.
    pub fn give_back(&self, value: T) {
        let mut idle = self.idle.lock().unwrap();
        if idle.len() < MAX_IDLE {
            idle.push(value);
        }
    }

    /// Frees every idle value.
    pub fn clear(&self) {
        self.idle.lock().unwrap().clear();
    }
}

/// A buffer replaced by a larger one when a call needs more, never shrunk: the next power of
/// two of the need, at most `cap` (a binding limit) and at least the need.
pub(crate) struct GrowBuffer {
    label: &'static str,
    usage: wgpu::BufferUsages,
    buffer: wgpu::Buffer,
}

impl GrowBuffer {
    /// A buffer of at least `need` bytes (and 16), counted under `op`; `COPY_DST` is added to
    /// `usage`.
    pub fn new(
        tracer: &GpuTracer,
        op: &'static str,
        label: &'static str,
        usage: wgpu::BufferUsages,
        need: u64,
        cap: u64,
    ) -> GrowBuffer {
        let usage = usage | wgpu::BufferUsages::COPY_DST;
        GrowBuffer {
            label,
            usage,
            buffer: Self::create(tracer, op, label, usage, need, cap),
        }
    }

    fn create(
        tracer: &GpuTracer,
        op: &'static str,
        label: &str,
        usage: wgpu::BufferUsages,
        need: u64,
        cap: u64,
    ) -> wgpu::Buffer {
        let size = need.next_power_of_two().min(cap).max(need).max(16);
        tracer.create_buffer(
            op,
            &wgpu::BufferDescriptor {
                label: Some(label),
                size: size.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT),
                usage,
                mapped_at_creation: false,
            },
        )
    }

    /// Makes the buffer hold at least `need` bytes; true when it was replaced (bind groups
    /// over the old one must be made again).
    pub fn ensure(&mut self, tracer: &GpuTracer, op: &'static str, need: u64, cap: u64) -> bool {
        if self.buffer.size() >= need {
            return false;
        }
        self.buffer = Self::create(tracer, op, self.label, self.usage, need, cap);
        true
    }

    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }
}

/// States of a [`Staging`] buffer.
const UNMAPPED: u8 = 0;
const MAPPING: u8 = 1;
const MAPPED: u8 = 2;

/// One piece of a pass's per-call data: `bytes` for `dst` at `offset` (multiples of 4).
pub(crate) struct Write<'a> {
    pub dst: wgpu::Buffer,
    pub offset: u64,
    pub bytes: &'a [u8],
}

impl<'a> Write<'a> {
    /// `bytes` for the start of `dst`.
    pub fn at_start(dst: &wgpu::Buffer, bytes: &'a [u8]) -> Write<'a> {
        Write {
            dst: dst.clone(),
            offset: 0,
            bytes,
        }
    }
}

/// The copies out of a [`Staging`] buffer that a pass records before its work.
#[derive(Default)]
pub(crate) struct Copies(Vec<(u64, wgpu::Buffer, u64, u64)>);

impl Copies {
    /// Records the copies from `staging` into their destinations.
    pub fn record(&self, staging: &Staging, encoder: &mut wgpu::CommandEncoder) {
        for (from, dst, to, size) in &self.0 {
            encoder.copy_buffer_to_buffer(&staging.buffer, *from, dst, *to, *size);
        }
    }
}

/// A `MAP_WRITE | COPY_SRC` buffer kept mapped between a pass's read and the next prepare: the
/// next pass writes its per-call data straight into it and copies it where it belongs, so
/// repeated calls make no temporary staging buffers (`Queue::write_buffer` does, one per call).
pub(crate) struct Staging {
    buffer: wgpu::Buffer,
    state: Arc<AtomicU8>,
}

impl Staging {
    /// A mapped buffer of at least `need` bytes (at most `MAX_STAGING`), counted under `op`.
    pub fn new(tracer: &GpuTracer, op: &'static str, need: u64) -> Staging {
        let size = need
            .next_power_of_two()
            .clamp(256, MAX_STAGING)
            .next_multiple_of(wgpu::MAP_ALIGNMENT);
        let buffer = tracer.create_buffer(
            op,
            &wgpu::BufferDescriptor {
                label: Some("pass upload"),
                size,
                usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            },
        );
        Staging {
            buffer,
            state: Arc::new(AtomicU8::new(MAPPED)),
        }
    }

    /// Puts `writes` where they belong, counted under `op`: through this buffer when it is
    /// mapped (grown first, mapped at creation, when too small), returning the copies the pass
    /// records; otherwise (its mapping is still pending, or the writes exceed `MAX_STAGING`)
    /// with `Queue::write_buffer`, and no copies.
    pub fn write(
        &mut self,
        tracer: &GpuTracer,
        op: &'static str,
        writes: &[Write<'_>],
    ) -> Result<Copies> {
        let mut at = Vec::with_capacity(writes.len());
        let mut total = 0u64;
        for w in writes {
            at.push(total);
            total += (w.bytes.len() as u64).next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
        }
        if self.buffer.size() < total && total <= MAX_STAGING {
            *self = Staging::new(tracer, op, total);
        }
        if self.buffer.size() < total || self.state.load(Ordering::Acquire) != MAPPED {
            for w in writes.iter().filter(|w| !w.bytes.is_empty()) {
                tracer.write_buffer(op, &w.dst, w.offset, w.bytes);
            }
            return Ok(Copies::default());
        }
        let mut copies = Vec::with_capacity(writes.len());
        {
            let mut view = self
                .buffer
                .get_mapped_range_mut(..)
                .map_err(|e| Error::Gpu(e.to_string()))?;
            for (w, &from) in writes.iter().zip(&at) {
                if w.bytes.is_empty() {
                    continue;
                }
                let len = w.bytes.len();
                view.slice(from as usize..from as usize + len)
                    .copy_from_slice(w.bytes);
                copies.push((from, w.dst.clone(), w.offset, len as u64));
            }
        }
        self.buffer.unmap();
        self.state.store(UNMAPPED, Ordering::Release);
        let bytes = writes.iter().map(|w| w.bytes.len() as u64).sum::<u64>();
        tracer.count(op, |c| c.bytes_uploaded += bytes);
        Ok(Copies(copies))
    }

    /// Maps the buffer again for the next pass (the next poll finishes it, no wait). Call only
    /// when no submitted work still reads it: after the pass was read, or when it was never
    /// encoded.
    pub fn remap(&self) {
        let state = self.state.clone();
        if state
            .compare_exchange(UNMAPPED, MAPPING, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.buffer.map_async(wgpu::MapMode::Write, .., move |r| {
                state.store(if r.is_ok() { MAPPED } else { UNMAPPED }, Ordering::Release);
            });
        }
    }
}

/// One tier's value in a [`TierCache`].
struct TierEntry<T> {
    scene: u64,
    tier: usize,
    revision: u64,
    mask: u32,
    value: Arc<T>,
}

/// Values built from one scene tier's triangles (a pass's vertex buffers), kept per (scene,
/// tier revision, mask): a call on a scene revision already seen uploads nothing, a moved
/// object rebuilds its tier's value only. Holds the latest `TIER_ENTRIES`; an entry for an
/// older revision of the same tier and mask is dropped when the new one is built (live passes
/// keep theirs through the `Arc`).
pub(crate) struct TierCache<T> {
    entries: Mutex<Vec<TierEntry<T>>>,
}

impl<T> Default for TierCache<T> {
    fn default() -> Self {
        TierCache {
            entries: Mutex::new(Vec::new()),
        }
    }
}

impl<T> TierCache<T> {
    /// Both tiers' values for `scene` and `mask`, building the missing ones with `build`
    /// inside error scopes (`what` names them in the error): running out of GPU memory is an
    /// error, and a failed build is not kept.
    pub fn tiers(
        &self,
        tracer: &GpuTracer,
        scene: &Scene,
        mask: Mask,
        what: &str,
        build: impl Fn(&Tier) -> T,
    ) -> Result<[Arc<T>; 2]> {
        let (uid, revisions) = scene.cache_key();
        let tiers = scene.tiers();
        let mut entries = self.entries.lock().unwrap();
        let mut out = Vec::with_capacity(2);
        for (t, tier) in tiers.into_iter().enumerate() {
            let same = |e: &TierEntry<T>| e.scene == uid && e.tier == t && e.mask == mask.bits();
            let hit = entries
                .iter()
                .position(|e| same(e) && e.revision == revisions[t]);
            let entry = match hit {
                Some(i) => entries.remove(i),
                None => {
                    entries.retain(|e| !same(e));
                    TierEntry {
                        scene: uid,
                        tier: t,
                        revision: revisions[t],
                        mask: mask.bits(),
                        value: Arc::new(checked_build(tracer, what, "simplify the scene", || {
                            build(tier)
                        })?),
                    }
                }
            };
            out.push(entry.value.clone());
            entries.push(entry); // most recently used last
        }
        let excess = entries.len().saturating_sub(TIER_ENTRIES);
        entries.drain(..excess);
        let [a, b]: [Arc<T>; 2] = out
            .try_into()
            .map_err(|_| Error::Gpu("a scene has two tiers".into()))?;
        Ok([a, b])
    }
}

/// `build()` inside out-of-memory and validation error scopes: either error is returned
/// (`what` names the work, `fix` says what to lower), and so is `build`'s own.
pub(crate) fn checked_build<T>(
    tracer: &GpuTracer,
    what: &str,
    fix: &str,
    build: impl FnOnce() -> T,
) -> Result<T> {
    let device = tracer.device();
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let value = build();
    if let Some(e) = pollster::block_on(validation.pop()) {
        return Err(Error::Gpu(format!("{what} failed: {e}")));
    }
    if let Some(e) = pollster::block_on(oom.pop()) {
        return Err(Error::Gpu(format!(
            "out of GPU memory for {what}: {e}; {fix}"
        )));
    }
    Ok(value)
}

/// Vertex buffers of at most `per_buffer` vertices holding `vertices`, counted under `op`:
/// `(buffer, vertex count)` each.
pub(crate) fn vertex_buffers<V: bytemuck::Pod>(
    tracer: &GpuTracer,
    op: &'static str,
    label: &str,
    vertices: &[V],
    per_buffer: usize,
) -> Vec<(wgpu::Buffer, u32)> {
    vertices
        .chunks(per_buffer.max(1))
        .map(|c| {
            let usage = wgpu::BufferUsages::VERTEX;
            let b = buffer_with(tracer, op, label, usage, bytemuck::cast_slice(c));
            (b, c.len() as u32)
        })
        .collect()
}
