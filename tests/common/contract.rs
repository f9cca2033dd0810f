//! Dense cover answers compared by contract, not bit for bit: a GPU may fuse `a * b + c`, so
//! ground heights and path lengths may differ in their last bits between backends.
#![allow(dead_code)]

use sightline::cover::dense::DenseChoice;

/// Metres two backends' positions and path lengths may differ by.
pub const TOLERANCE: f32 = 1e-3;

/// Whether two choices are the same decision: both none, or the same spot (within
/// [`TOLERANCE`]), posture and deciding check, and paths of the same length.
pub fn same_choice(a: &Option<DenseChoice>, b: &Option<DenseChoice>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.posture == b.posture
                && a.decided_by == b.decided_by
                && a.position.distance(b.position) <= TOLERANCE
                && (a.path_length - b.path_length).abs() <= TOLERANCE
        }
        _ => false,
    }
}
