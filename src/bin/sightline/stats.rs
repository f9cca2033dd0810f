//! The engines a run made, so `--stats` and every `--json` answer can report the GPU work
//! counted on them (submissions, waits, bytes, objects created: [`sightline::Counters`]).

use sightline::{Counters, Engine};
use std::sync::Mutex;

/// Every engine this process made. A run makes one or two and exits, so they live as long as
/// the process.
static ENGINES: Mutex<Vec<&'static Engine>> = Mutex::new(Vec::new());

/// Keeps `engine` for the rest of the run and lends it out.
pub fn keep(engine: Engine) -> &'static Engine {
    let kept: &'static Engine = Box::leak(Box::new(engine));
    ENGINES.lock().unwrap().push(kept);
    kept
}

/// The counters of every engine of the run so far, added up.
pub fn total() -> Counters {
    ENGINES
        .lock()
        .unwrap()
        .iter()
        .fold(Counters::default(), |sum, e| sum.plus(&e.counters().total))
}

/// `doc` with the run's counters so far under `counters` (when it is a JSON object).
pub fn with_counters(mut doc: serde_json::Value) -> serde_json::Value {
    if let Some(map) = doc.as_object_mut() {
        map.insert("counters".into(), total().to_json());
    }
    doc
}

/// The `--stats` line: `counters: submissions N, waits N, uploaded N B, read back N B,
/// created N`.
pub fn line() -> String {
    format!("counters: {}", total())
}
