//! Position scoring on a ring node graph built on the fly around a point of interest (Slant
//! Six Games, *Situational Awareness: Terrain Reasoning for Tactical Shooter AI*).
//!
//! 1. **Nodes** ([`RingGraph::build`], `build.rs`; many graphs on every core with
//!    [`RingGraph::build_many`]): a centre on the walkable ground at the point, and rings of
//!    nodes around it (default 32 rings of 32 over 50 m).
//! 2. **Connections**: each node to the node of the previous ring on its spoke and to its
//!    neighbour on its own ring, by a straight walk on the [`WalkSurface`] (the nav mesh's
//!    raycast). A walk that fails after more than [`RingParams::clamp`] of its length moves
//!    the node it was heading for to where the walk stopped, which snaps nodes against walls:
//!    to cover. A node off its ring's walks takes the ground at its spot on the storey of the
//!    node inside it. Designer annotations become nodes; leashing zones keep nodes inside
//!    them. Wall followers explore from the centre's part along walls, through doorways and
//!    up or down stair flights, adding nodes on storeys the straight walks miss
//!    (`build/explore.rs`). Parts the straight walks left cut off from the centre (a room
//!    behind a doorway, a creek bed below its stairs) are joined by ways that wall followers
//!    find on the surface (`build/join.rs`, `build/follow.rs`). Nodes left with no connection
//!    are dropped.
//! 3. **Scoring** ([`Score`], `score.rs`): criteria (in cover, in a friendly or an enemy field
//!    of fire, distance to target or to move, line of sight to the target, zones), each through
//!    a response curve, combined with filters and fuzzy boolean operations. Every ray of every
//!    criterion of every graph in a batch goes to the [`crate::Engine`] in one submission.
//! 4. **Paths** ([`RingGraph::path`], `path.rs`): A* across the network where entering a node
//!    costs the distance plus `f(score)`, joined to a nav graph at both ends.
//! 5. **Incremental** ([`Incremental`]): the same build and scoring spread over ticks under a
//!    budget of walks and rays, with the same result.

mod build;
mod incremental;
mod path;
mod score;

pub use build::{BuildReport, FOLLOW_STEP, MAX_FOLLOW};
pub use incremental::Incremental;
pub use path::{Route, ScoreCost};
pub use score::{score_batch, Criterion, Curve, Score, Scores, Shooter, Situation};

pub use crate::nav::WalkSurface;

use crate::{Error, Result};
use glam::{Vec2, Vec3};
use rayon::prelude::*;

/// Most rings a graph may have.
pub const MAX_RINGS: u32 = 256;
/// Most nodes per ring.
pub const MAX_PER_RING: u32 = 1024;
/// Most generated nodes (rings x nodes per ring).
pub const MAX_RING_NODES: u32 = 1 << 16;
/// Largest radius (metres).
pub const MAX_RADIUS: f32 = 2000.0;
/// Most steps the joining wall followers of one build may take ([`RingParams::search`]), and
/// the exploring ones ([`RingParams::explore`]).
pub const MAX_JOIN_SEARCH: u32 = 1 << 20;
/// Most annotations, and most leashing zones, per graph.
pub const MAX_ANNOTATIONS: usize = 4096;
pub const MAX_ZONES: usize = 256;
/// Most corners of one zone polygon.
pub const MAX_ZONE_CORNERS: usize = 4096;
/// Most graphs one [`RingGraph::build_many`] call builds.
pub const MAX_BUILD_BATCH: usize = 1 << 14;

/// How a ring graph is laid out and connected.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RingParams {
    /// Rings around the centre. Default 32.
    pub rings: u32,
    /// Nodes on each ring. Default 32.
    pub per_ring: u32,
    /// Radius of the outermost ring (metres). Default 50.
    pub radius: f32,
    /// A connection whose walk fails after more than this share of its length clamps the node
    /// it heads for to where it stopped (the paper's C%). Default 0.5.
    pub clamp: f32,
    /// A node whose spot has no walkable ground takes the nearest ground within this many
    /// metres. Default 0.5.
    pub snap: f32,
    /// Ground is searched within this height of the point of interest (the centre) or of the
    /// node inside on the same spoke (metres). Default 3.
    pub max_rise: f32,
    /// Most steps the wall followers that join parts cut off from the centre (a room behind
    /// a doorway, a creek bed below its stairs) take in one build, one walk-surface place
    /// each; 0 turns joining off. Default 2048 (512 m of wall at 0.25 m spacing).
    pub search: u32,
    /// Most steps the wall followers that explore from the centre's part (along walls,
    /// through doorways, up and down stair flights: storeys the straight walks miss) take in
    /// one build, one walk-surface place each; 0 turns exploring off. Default 1024.
    pub explore: u32,
}

impl Default for RingParams {
    fn default() -> Self {
        Self::standard()
    }
}

impl RingParams {
    /// 32 rings of 32 over 50 m, clamping past half a connection, 0.5 m snap, 3 m rise,
    /// joining followers of up to 2048 steps.
    #[must_use]
    pub const fn standard() -> RingParams {
        RingParams {
            rings: 32,
            per_ring: 32,
            radius: 50.0,
            clamp: 0.5,
            snap: 0.5,
            max_rise: 3.0,
            search: 2048,
            explore: 1024,
        }
    }

    /// Checks every size before anything is allocated.
    pub fn validate(&self) -> Result<()> {
        if !(1..=MAX_RINGS).contains(&self.rings) {
            return Err(Error::param(
                "rings",
                self.rings,
                format!("1..={MAX_RINGS} (default 32)"),
            ));
        }
        if !(3..=MAX_PER_RING).contains(&self.per_ring) {
            return Err(Error::param(
                "nodes per ring",
                self.per_ring,
                format!("3..={MAX_PER_RING} (default 32)"),
            ));
        }
        let nodes = u64::from(self.rings) * u64::from(self.per_ring);
        if nodes > u64::from(MAX_RING_NODES) {
            return Err(Error::too_large(
                "ring graph nodes (rings x nodes per ring)",
                nodes,
                u64::from(MAX_RING_NODES),
                "use fewer rings or fewer nodes per ring",
            ));
        }
        if !(self.radius > 0.0 && self.radius <= MAX_RADIUS) {
            return Err(Error::param(
                "radius",
                self.radius,
                format!("metres in (0, {MAX_RADIUS}] (default 50)"),
            ));
        }
        if !(0.0..=1.0).contains(&self.clamp) {
            return Err(Error::param(
                "clamp",
                self.clamp,
                "a share in [0, 1] (default 0.5)",
            ));
        }
        if !(0.0..=10.0).contains(&self.snap) {
            return Err(Error::param(
                "snap",
                self.snap,
                "metres in [0, 10] (default 0.5)",
            ));
        }
        if !(self.max_rise > 0.0 && self.max_rise <= 100.0) {
            return Err(Error::param(
                "max rise",
                self.max_rise,
                "metres in (0, 100] (default 3)",
            ));
        }
        if self.search > MAX_JOIN_SEARCH {
            return Err(Error::param(
                "search",
                self.search,
                format!("steps in 0..={MAX_JOIN_SEARCH} (default 2048; 0: no joining)"),
            ));
        }
        if self.explore > MAX_JOIN_SEARCH {
            return Err(Error::param(
                "explore",
                self.explore,
                format!("steps in 0..={MAX_JOIN_SEARCH} (default 1024; 0: no exploring)"),
            ));
        }
        Ok(())
    }

    /// Distance between neighbouring rings (metres).
    #[must_use]
    pub fn ring_gap(&self) -> f32 {
        self.radius / self.rings as f32
    }
}

/// A designer's tactical position, inserted into the graph as a node.
#[derive(Clone, Debug, PartialEq)]
pub struct Annotation {
    pub position: Vec3,
    pub label: String,
}

/// A leashing or preferred zone on the ground plane (x, z).
#[derive(Clone, Debug, PartialEq)]
pub enum Zone {
    Circle {
        centre: Vec2,
        radius: f32,
    },
    /// Corners in order (either winding); at least three.
    Polygon(Vec<Vec2>),
}

impl Zone {
    /// Whether the ground point (x, z) lies inside.
    #[must_use]
    pub fn contains(&self, p: Vec2) -> bool {
        match self {
            Zone::Circle { centre, radius } => p.distance_squared(*centre) <= radius * radius,
            Zone::Polygon(c) => {
                let mut inside = false;
                let mut j = c.len() - 1;
                for i in 0..c.len() {
                    let (a, b) = (c[i], c[j]);
                    if (a.y > p.y) != (b.y > p.y)
                        && p.x < (b.x - a.x) * (p.y - a.y) / (b.y - a.y) + a.x
                    {
                        inside = !inside;
                    }
                    j = i;
                }
                inside
            }
        }
    }

    fn validate(&self, index: usize) -> Result<()> {
        let bad = |why: &str| Err(Error::InvalidInput(format!("zone {index}: {why}")));
        match self {
            Zone::Circle { centre, radius } => {
                if !(centre.is_finite() && *radius > 0.0 && radius.is_finite()) {
                    return bad("a circle needs a finite centre and a positive radius in metres");
                }
            }
            Zone::Polygon(c) => {
                if c.len() < 3 || c.len() > MAX_ZONE_CORNERS {
                    return bad(&format!(
                        "a polygon needs 3..={MAX_ZONE_CORNERS} corners, not {}",
                        c.len()
                    ));
                }
                if c.iter().any(|p| !p.is_finite()) {
                    return bad("a polygon corner is NaN or infinite");
                }
            }
        }
        Ok(())
    }
}

/// What a designer adds to a graph: annotations and leashing zones (when any zone is given,
/// generated nodes outside every zone are left out).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Design {
    pub annotations: Vec<Annotation>,
    pub leash: Vec<Zone>,
}

impl Design {
    pub fn validate(&self) -> Result<()> {
        if self.annotations.len() > MAX_ANNOTATIONS || self.leash.len() > MAX_ZONES {
            return Err(Error::too_large(
                "annotations or leashing zones",
                self.annotations.len().max(self.leash.len()) as u64,
                MAX_ANNOTATIONS.min(MAX_ZONES) as u64,
                format!("give at most {MAX_ANNOTATIONS} annotations and {MAX_ZONES} zones"),
            ));
        }
        for (i, a) in self.annotations.iter().enumerate() {
            if !a.position.is_finite() {
                return Err(Error::InvalidInput(format!(
                    "annotation {i} ({}) has a NaN or infinite position",
                    a.label
                )));
            }
        }
        for (i, z) in self.leash.iter().enumerate() {
            z.validate(i)?;
        }
        Ok(())
    }

    /// Whether generated nodes may stand at (x, z).
    #[must_use]
    pub fn allows(&self, p: Vec2) -> bool {
        self.leash.is_empty() || self.leash.iter().any(|z| z.contains(p))
    }
}

/// How a node came to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// On the walkable ground at the point of interest.
    Centre,
    /// At its place on a ring (or the nearest ground within the snap distance).
    Ring,
    /// Moved to where a failing connection stopped.
    Clamped,
    /// A designer's annotation (its index in [`Design::annotations`]).
    Annotation(u32),
    /// On a way found on the walk surface beyond the straight walks: one that joins a part of
    /// the graph they left cut off from the centre (through a doorway, up a stair), or one a
    /// wall follower exploring from the centre took to a storey with no node (a stair
    /// flight, the floor below).
    Passage,
}

/// One node of a ring graph.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Node {
    /// Ground position.
    pub position: Vec3,
    /// The walk surface place it stands on.
    pub place: u32,
    /// Ring (0 for the centre and annotations) and slot on the ring.
    pub ring: u32,
    pub slot: u32,
    pub kind: NodeKind,
}

/// Nodes and their connections around a point of interest.
#[derive(Clone, Debug, PartialEq)]
pub struct RingGraph {
    nodes: Vec<Node>,
    /// Undirected edges, lower index first, sorted, and their lengths (metres).
    edges: Vec<[u32; 2]>,
    lengths: Vec<f32>,
    /// `adjacency[offsets[i]..offsets[i + 1]]`: `(neighbour, edge)` of node `i`.
    offsets: Vec<u32>,
    adjacency: Vec<(u32, u32)>,
    report: BuildReport,
}

impl RingGraph {
    /// Builds the graph around `at` on `surface` in one go (see the module docs); `at.y` is a
    /// hint: the centre stands on the ground nearest to it.
    pub fn build(
        surface: &WalkSurface,
        at: Vec3,
        params: &RingParams,
        design: &Design,
    ) -> Result<RingGraph> {
        let mut b = build::Builder::new(surface, at, params, design)?;
        b.step(surface, u64::MAX)?;
        Ok(b.finish(surface))
    }

    /// [`RingGraph::build`] around each of `centres`, on every core: one result per centre, in
    /// order (a centre with no ground near it fails alone). Each graph is the one
    /// [`RingGraph::build`] gives. Score them together with [`score_batch`].
    pub fn build_many(
        surface: &WalkSurface,
        centres: &[Vec3],
        params: &RingParams,
        design: &Design,
    ) -> Result<Vec<Result<RingGraph>>> {
        if centres.len() > MAX_BUILD_BATCH {
            return Err(Error::too_large(
                "ring graphs in one build_many call",
                centres.len() as u64,
                MAX_BUILD_BATCH as u64,
                "build fewer graphs per call",
            ));
        }
        params.validate()?;
        design.validate()?;
        Ok(centres
            .par_iter()
            .map(|&at| RingGraph::build(surface, at, params, design))
            .collect())
    }

    fn from_parts(nodes: Vec<Node>, mut edges: Vec<[u32; 2]>, report: BuildReport) -> RingGraph {
        edges.sort_unstable();
        edges.dedup();
        let lengths = edges
            .iter()
            .map(|e| {
                nodes[e[0] as usize]
                    .position
                    .distance(nodes[e[1] as usize].position)
            })
            .collect();
        let mut offsets = vec![0u32; nodes.len() + 1];
        for e in &edges {
            offsets[e[0] as usize + 1] += 1;
            offsets[e[1] as usize + 1] += 1;
        }
        for i in 0..nodes.len() {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut adjacency = vec![(0, 0); 2 * edges.len()];
        for (k, e) in edges.iter().enumerate() {
            for (u, v) in [(e[0], e[1]), (e[1], e[0])] {
                adjacency[fill[u as usize] as usize] = (v, k as u32);
                fill[u as usize] += 1;
            }
        }
        RingGraph {
            nodes,
            edges,
            lengths,
            offsets,
            adjacency,
            report,
        }
    }

    #[must_use]
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Index of the centre node (always 0).
    #[must_use]
    pub fn centre(&self) -> u32 {
        0
    }

    #[must_use]
    pub fn edges(&self) -> &[[u32; 2]] {
        &self.edges
    }

    /// Length of each edge (metres), in the order of [`RingGraph::edges`].
    #[must_use]
    pub fn lengths(&self) -> &[f32] {
        &self.lengths
    }

    /// `(neighbour, edge index)` of node `i`.
    ///
    /// # Panics
    /// When `i` is not a node index, like a slice index.
    #[must_use]
    pub fn neighbours(&self, i: u32) -> &[(u32, u32)] {
        &self.adjacency[self.offsets[i as usize] as usize..self.offsets[i as usize + 1] as usize]
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// What the build did.
    #[must_use]
    pub fn report(&self) -> &BuildReport {
        &self.report
    }

    /// The node nearest to `p` (straight-line distance; ties to the lower index).
    #[must_use]
    pub fn nearest(&self, p: Vec3) -> u32 {
        let d = |n: &Node| n.position.distance_squared(p);
        (0..self.nodes.len() as u32)
            .min_by(|&a, &b| d(&self.nodes[a as usize]).total_cmp(&d(&self.nodes[b as usize])))
            .unwrap_or(0)
    }
}
