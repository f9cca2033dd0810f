//! Movement edges between waypoints: the nav graph's edges as a table file stores them
//! (`sightline::nav` builds and searches the graph; the file only keeps its data).

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

/// How an edge is walked; each kind multiplies the edge's cost (`nav::CostParams`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
#[repr(transparent)]
pub struct EdgeKinds(pub u32);

impl EdgeKinds {
    pub const NONE: EdgeKinds = EdgeKinds(0);
    /// The ground climbs or drops through steps (at least two risers in one direction).
    pub const STAIRS: EdgeKinds = EdgeKinds(1);
    /// Part of the way is on a walkable surface that stops nothing (water: the agent wades).
    pub const WATER: EdgeKinds = EdgeKinds(2);
    /// A standing body does not fit somewhere along the way; the agent crouches.
    pub const CROUCH: EdgeKinds = EdgeKinds(4);
    /// Every kind, with the name files use for it.
    pub const NAMED: [(EdgeKinds, &'static str); 3] = [
        (EdgeKinds::STAIRS, "stairs"),
        (EdgeKinds::WATER, "water"),
        (EdgeKinds::CROUCH, "crouch"),
    ];
    const ALL: u32 = 7;

    #[must_use]
    pub const fn contains(self, other: EdgeKinds) -> bool {
        self.0 & other.0 == other.0
    }
    #[must_use]
    pub const fn union(self, other: EdgeKinds) -> EdgeKinds {
        EdgeKinds(self.0 | other.0)
    }
    /// Whether only known kind bits are set.
    #[must_use]
    pub const fn is_valid(self) -> bool {
        self.0 & !Self::ALL == 0
    }

    /// The kinds as names joined by `+` (`"stairs+water"`), `""` for none.
    #[must_use]
    pub fn names(self) -> String {
        Self::NAMED
            .iter()
            .filter(|(k, _)| self.contains(*k))
            .map(|(_, n)| *n)
            .collect::<Vec<_>>()
            .join("+")
    }

    /// Parses names separated by `+`, `;`, `|` or spaces (`"stairs+water"`, `""`).
    pub fn parse(text: &str) -> Result<EdgeKinds, String> {
        let mut k = EdgeKinds::NONE;
        for word in text
            .split(['+', ';', '|', ' '])
            .map(str::trim)
            .filter(|w| !w.is_empty())
        {
            let (kind, _) = Self::NAMED
                .iter()
                .find(|(_, n)| n.eq_ignore_ascii_case(word))
                .ok_or_else(|| {
                    format!("unknown edge kind `{word}` (known: stairs, water, crouch)")
                })?;
            k = k.union(*kind);
        }
        Ok(k)
    }
}

/// One undirected movement edge between waypoints `a < b`: how long the walk is along the
/// ground (metres) and how it is walked. 16 bytes in the table file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Edge {
    pub a: u32,
    pub b: u32,
    pub kinds: EdgeKinds,
    /// Length of the walk (metres), at least the straight distance between the ends.
    pub length: f32,
}

const _: () = assert!(std::mem::size_of::<Edge>() == 16);

/// Checks edges against `waypoints`: ends in range, `a < b`, sorted by `(a, b)` without
/// repeats, known kinds, finite lengths of at least the straight distance between the ends
/// (less a rounding slack of 10 parts per million of the distance plus the ends' coordinates).
/// The error names the first bad edge.
pub fn check_edges(edges: &[Edge], waypoints: &[Vec3]) -> Result<(), String> {
    check_edges_at(edges, waypoints.len(), |i| waypoints[i as usize])
}

/// [`check_edges`] with waypoint `i` at `position(i)` (for `i < n`).
pub(crate) fn check_edges_at(
    edges: &[Edge],
    n: usize,
    position: impl Fn(u32) -> Vec3,
) -> Result<(), String> {
    for (k, e) in edges.iter().enumerate() {
        if e.a >= e.b || e.b as usize >= n {
            return Err(format!(
                "edge {k} ({}, {}) needs two different waypoints below {n}, the smaller first",
                e.a, e.b
            ));
        }
        if !(e.kinds.is_valid() && e.length.is_finite() && e.length >= 0.0) {
            return Err(format!(
                "edge {k} ({}, {}) has unknown kind bits {:#x} or a bad length {}",
                e.a, e.b, e.kinds.0, e.length
            ));
        }
        let (pa, pb) = (position(e.a), position(e.b));
        let straight = pa.as_dvec3().distance(pb.as_dvec3());
        if f64::from(e.length) < straight - length_slack(pa, pb) {
            return Err(format!(
                "edge {k} ({}, {}) is {} m long, but its waypoints are {straight:.3} m apart; an \
                 edge's length is the walk along the ground, never shorter than the straight line",
                e.a, e.b, e.length
            ));
        }
        if k > 0 && (edges[k - 1].a, edges[k - 1].b) >= (e.a, e.b) {
            return Err(format!(
                "edges {} and {k} are out of order or repeated: edges are sorted by (a, b)",
                k - 1
            ));
        }
    }
    Ok(())
}

/// How far (m) an edge between `a` and `b` may fall short of their straight distance: the
/// rounding of an `f32` length measured between `f32` positions, 10 parts per million of the
/// distance plus the ends' coordinates (about 80 units in the last place).
fn length_slack(a: Vec3, b: Vec3) -> f64 {
    let scale = a.abs().max(b.abs()).max_element();
    1e-5 * (f64::from(a.distance(b)) + f64::from(scale))
}
