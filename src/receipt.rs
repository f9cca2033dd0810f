//! Proof that a pass a caller encoded was also submitted, so that reading it too early is an
//! error instead of a silent answer.
//!
//! Mapping a buffer that no submission uses succeeds at once and yields its initial zeros,
//! so a pass that was read before its command buffer was submitted would hand back zeros as if
//! they were results. A [`Receipt`] is a 4-byte readback buffer the pass's `encode` fills with
//! a non-zero word by a copy recorded after all the pass's work: it holds that word only once
//! the caller's command buffer has run.

use crate::gpu::{buffer_with, GpuTracer};
use crate::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};

/// The word `stamp` copies into the readback.
const STAMP: u32 = 0x5157_4C54;

/// A pass's proof of submission (see the module docs). A pass with no GPU work (its answer
/// known at prepare) holds an empty receipt: encoding it records nothing, but is still required
/// before read, so a caller's code is right for every input.
pub(crate) struct Receipt {
    buffers: Option<(wgpu::Buffer, wgpu::Buffer)>,
    encoded: AtomicBool,
}

impl Receipt {
    pub fn new(tracer: &GpuTracer, op: &'static str) -> Receipt {
        let stamp = buffer_with(
            tracer,
            op,
            "pass stamp",
            wgpu::BufferUsages::COPY_SRC,
            bytemuck::bytes_of(&STAMP),
        );
        let readback = tracer.create_buffer(
            op,
            &wgpu::BufferDescriptor {
                label: Some("pass receipt"),
                size: 4,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            },
        );
        Receipt {
            buffers: Some((stamp, readback)),
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

    /// Records the copy that marks the pass as run; call after encoding all of its work.
    pub fn stamp(&self, encoder: &mut wgpu::CommandEncoder) {
        if let Some((stamp, readback)) = &self.buffers {
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
        self.buffers.as_ref().map(|(_, r)| r)
    }

    /// After mapping [`Receipt::buffer`]: an error unless the stamp arrived (the command buffer
    /// ran). Unmaps it.
    pub fn check_submitted(&self, what: &str) -> Result<()> {
        let Some((_, readback)) = &self.buffers else {
            return Ok(());
        };
        let word = readback
            .get_mapped_range(..)
            .map_err(|e| Error::Gpu(e.to_string()))
            .map(|v| bytemuck::pod_read_unaligned::<u32>(&v[..4]));
        readback.unmap();
        match word? {
            STAMP => Ok(()),
            _ => Err(not_run(what, "submission")),
        }
    }
}

pub(crate) fn not_run(what: &str, step: &str) -> Error {
    Error::InvalidInput(format!(
        "{what} was read before its commands ran (no {step} seen): encode the pass into a \
         command encoder and submit that encoder's command buffer before read"
    ))
}
