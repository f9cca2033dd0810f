//! What the GPU backend costs in round trips: submissions, blocking waits, bytes moved each way
//! and GPU objects created, per operation and in total ([`crate::Engine::counters`]).
//!
//! On real hardware a wait for the GPU costs far more than the kernel it waits for, so these
//! are the figures to watch: a repeated trace call should create nothing and make one
//! submission and one wait; a second cover-field call on the same scene should upload only its
//! own queries. The CPU backend does no GPU work and counts nothing.

use std::fmt;
use std::sync::Mutex;

/// GPU work counted since an engine was made (or for one operation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Command buffers handed to the queue (`Queue::submit` calls).
    pub submissions: u64,
    /// Times the CPU blocked until the GPU finished something (a readback or a map).
    pub waits: u64,
    /// Bytes sent to the GPU: scene data, queries, parameters.
    pub bytes_uploaded: u64,
    /// Bytes mapped and read back from the GPU.
    pub bytes_read_back: u64,
    /// Buffers created.
    pub buffers_created: u64,
    /// Textures created.
    pub textures_created: u64,
    /// `Queue::write_buffer` calls, each of which copies through a temporary staging buffer
    /// (repeated trace calls write through persistent mapped buffers instead).
    pub staging_writes: u64,
}

impl Counters {
    /// Buffers and textures created.
    #[must_use]
    pub fn created(&self) -> u64 {
        self.buffers_created + self.textures_created
    }

    /// What was counted after `earlier` (a snapshot of the same engine's counters).
    #[must_use]
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            submissions: self.submissions - earlier.submissions,
            waits: self.waits - earlier.waits,
            bytes_uploaded: self.bytes_uploaded - earlier.bytes_uploaded,
            bytes_read_back: self.bytes_read_back - earlier.bytes_read_back,
            buffers_created: self.buffers_created - earlier.buffers_created,
            textures_created: self.textures_created - earlier.textures_created,
            staging_writes: self.staging_writes - earlier.staging_writes,
        }
    }

    /// The sum of two counts (two engines', or two operations').
    #[must_use]
    pub fn plus(mut self, o: &Counters) -> Counters {
        self.add(o);
        self
    }

    fn add(&mut self, o: &Counters) {
        self.submissions += o.submissions;
        self.waits += o.waits;
        self.bytes_uploaded += o.bytes_uploaded;
        self.bytes_read_back += o.bytes_read_back;
        self.buffers_created += o.buffers_created;
        self.textures_created += o.textures_created;
        self.staging_writes += o.staging_writes;
    }

    /// The counters as a JSON object (the CLI's `counters` field).
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "submissions": self.submissions,
            "waits": self.waits,
            "bytes_uploaded": self.bytes_uploaded,
            "bytes_read_back": self.bytes_read_back,
            "buffers_created": self.buffers_created,
            "textures_created": self.textures_created,
            "staging_writes": self.staging_writes,
            "created": self.created(),
        })
    }
}

impl fmt::Display for Counters {
    /// `submissions N, waits N, uploaded N B, read back N B, created N`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "submissions {}, waits {}, uploaded {} B, read back {} B, created {}",
            self.submissions,
            self.waits,
            self.bytes_uploaded,
            self.bytes_read_back,
            self.created()
        )
    }
}

/// The counters of an engine: the total and each operation's share, in the order the
/// operations first ran. Operations: `scene` (uploads of scene tiers), `occluded`,
/// `closest_hit`, `los_table`, `cover_field`, `intervis`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterReport {
    pub total: Counters,
    pub by_operation: Vec<(&'static str, Counters)>,
}

impl CounterReport {
    /// One operation's counters (zero when it never ran).
    #[must_use]
    pub fn operation(&self, name: &str) -> Counters {
        self.by_operation
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| *c)
            .unwrap_or_default()
    }

    /// The report as JSON: `{"total": {...}, "by_operation": {"occluded": {...}, ...}}`.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        let ops: serde_json::Map<String, serde_json::Value> = self
            .by_operation
            .iter()
            .map(|(n, c)| ((*n).to_string(), c.to_json()))
            .collect();
        serde_json::json!({ "total": self.total.to_json(), "by_operation": ops })
    }
}

/// The running tally a GPU tracer keeps (shared by every module that does GPU work on it).
#[derive(Default)]
pub(crate) struct Tally(Mutex<Vec<(&'static str, Counters)>>);

impl Tally {
    /// Adds to operation `op`'s counters.
    pub(crate) fn add(&self, op: &'static str, f: impl FnOnce(&mut Counters)) {
        let mut ops = self.0.lock().unwrap();
        let i = match ops.iter().position(|(n, _)| *n == op) {
            Some(i) => i,
            None => {
                ops.push((op, Counters::default()));
                ops.len() - 1
            }
        };
        f(&mut ops[i].1);
    }

    pub(crate) fn report(&self) -> CounterReport {
        let ops = self.0.lock().unwrap();
        let mut total = Counters::default();
        for (_, c) in ops.iter() {
            total.add(c);
        }
        CounterReport {
            total,
            by_operation: ops.clone(),
        }
    }
}
