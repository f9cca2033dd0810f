//! Proof that a pass a caller encoded was also submitted, so that reading it too early is an
//! error instead of a silent answer.
//!
//! Mapping a buffer that no submission uses succeeds at once and yields its initial zeros,
//! so a pass that was read before its command buffer was submitted would hand back zeros as if
//! they were results. A [`Receipt`] is a 4-byte readback buffer the pass's `encode` fills with
//! a non-zero word by a copy recorded after all the pass's work: it holds that word only once
//! the caller's command buffer has run. Receipt buffers are reused by later passes, so each
//! pass expects its own word (uploaded with its other per-call data).

use crate::gpu::GpuTracer;
use crate::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// The next word a receipt expects (never 0, the word of a readback no submission wrote).
static NEXT_WORD: AtomicU32 = AtomicU32::new(1);

/// A receipt's two buffers, kept in a pass's pooled workspace and reused by every pass that
/// takes it: the 4-byte stamp source (`COPY_SRC | COPY_DST`) and its readback.
pub(crate) struct ReceiptBuffers {
    stamp: wgpu::Buffer,
    readback: wgpu::Buffer,
}

impl ReceiptBuffers {
    /// The two buffers, counted under `op`.
    pub fn new(tracer: &GpuTracer, op: &'static str) -> ReceiptBuffers {
        let buffer = |label, usage| {
            tracer.create_buffer(
                op,
                &wgpu::BufferDescriptor {
                    label: Some(label),
                    size: 4,
                    usage: usage | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                },
            )
        };
        ReceiptBuffers {
            stamp: buffer("pass stamp", wgpu::BufferUsages::COPY_SRC),
            readback: buffer("pass receipt", wgpu::BufferUsages::MAP_READ),
        }
    }
}

/// A pass's proof of submission (see the module docs). A pass with no GPU work (its answer
/// known at prepare) holds an empty receipt: encoding it records nothing, but is still required
/// before read, so a caller's code is right for every input.
pub(crate) struct Receipt {
    /// The stamp source and readback, and the word this pass expects in the readback.
    buffers: Option<(wgpu::Buffer, wgpu::Buffer, u32)>,
    encoded: AtomicBool,
}

impl Receipt {
    /// A receipt over reused buffers, expecting a word no recent pass used (a readback still
    /// holding an earlier pass's word proves nothing). The pass must put [`Receipt::word`]
    /// into `buffers`' stamp source ([`Receipt::stamp_source`]) before its work runs.
    pub fn new(buffers: &ReceiptBuffers) -> Receipt {
        let word = loop {
            let w = NEXT_WORD.fetch_add(1, Ordering::Relaxed);
            if w != 0 {
                break w;
            }
        };
        Receipt {
            buffers: Some((buffers.stamp.clone(), buffers.readback.clone(), word)),
            encoded: AtomicBool::new(false),
        }
    }

    /// The receipt of a pass without GPU work.
    pub fn empty() -> Receipt {
        Receipt {
            buffers: None,
            encoded: AtomicBool::new(false),
        }
    }

    /// The word to upload into [`Receipt::stamp_source`] (little-endian bytes).
    pub fn word(&self) -> [u8; 4] {
        self.buffers
            .as_ref()
            .map_or(0, |(_, _, w)| *w)
            .to_le_bytes()
    }

    /// The buffer the pass uploads [`Receipt::word`] into (`None` without GPU work).
    pub fn stamp_source(&self) -> Option<&wgpu::Buffer> {
        self.buffers.as_ref().map(|(s, _, _)| s)
    }

    /// Records the copy that marks the pass as run; call after encoding all of its work.
    pub fn stamp(&self, encoder: &mut wgpu::CommandEncoder) {
        if let Some((stamp, readback, _)) = &self.buffers {
            encoder.copy_buffer_to_buffer(stamp, 0, readback, 0, 4);
        }
        self.encoded.store(true, Ordering::Relaxed);
    }

    /// An error naming `what` unless `encode` was called (check before mapping anything).
    pub fn check_encoded(&self, what: &str) -> Result<()> {
        if self.encoded.load(Ordering::Relaxed) {
            Ok(())
        } else {
            Err(not_run(what, "encode"))
        }
    }

    /// The readback to map together with the pass's own, if the pass has GPU work.
    pub fn buffer(&self) -> Option<&wgpu::Buffer> {
        self.buffers.as_ref().map(|(_, r, _)| r)
    }

    /// After mapping [`Receipt::buffer`]: an error unless this pass's word arrived (the
    /// command buffer ran). Unmaps it.
    pub fn check_submitted(&self, what: &str) -> Result<()> {
        let Some((_, readback, want)) = &self.buffers else {
            return Ok(());
        };
        let word = readback
            .get_mapped_range(..)
            .map_err(|e| Error::Gpu(e.to_string()))
            .map(|v| bytemuck::pod_read_unaligned::<u32>(&v[..4]));
        readback.unmap();
        if word? == *want {
            Ok(())
        } else {
            Err(not_run(what, "submission"))
        }
    }
}

pub(crate) fn not_run(what: &str, step: &str) -> Error {
    Error::InvalidInput(format!(
        "{what} was read before its commands ran (no {step} seen): encode the pass into a \
         command encoder and submit that encoder's command buffer before read"
    ))
}
