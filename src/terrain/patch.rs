//! Doors and other movable objects: patching the relations when one moves (van der Sterren,
//! "Dynamics and Pre-Processing": "The lines-of-sight affected by a door can be pre-computed,
//! and the changes can be applied on the fly when the door changes state").
//!
//! [`DoorPatch::new`] lists, once, the waypoint pairs whose eye-to-eye segment passes through
//! the box the door sweeps over all its poses, and the nav edges that pass through it. When
//! the door moves, [`Relations::apply`] retraces only those pairs (sight and fire, one batched
//! call each), retests only those edges, rebuilds the lists, and re-searches the time horizon
//! of only the waypoints that can reach a changed edge within it. The result equals
//! [`Relations::compute`] on the changed scene, bit for bit (a test checks it).

use super::Relations;
use crate::scene::{Mask, Mobility, ObjectId};
use crate::trace::Segment;
use crate::{Engine, Error, Result, Scene};
use glam::{Affine3A, Vec3};

/// Height above each node (metres) of the segment that tests whether a movable object closes a
/// nav edge: a body's middle, below a door's lintel and above its threshold.
pub const EDGE_TEST_HEIGHT: f32 = 1.0;

/// Which nav edges the scene's movable objects close: an edge is closed when the segment
/// between its nodes, [`EDGE_TEST_HEIGHT`] above them, hits a movable triangle that blocks sight
/// or fire. Only the movable tier is traced (static geometry was the graph's to judge), on the
/// CPU kernel, so both backends agree.
#[must_use]
pub fn blocked_edges(scene: &Scene, graph: &crate::nav::NavGraph) -> Vec<bool> {
    let all: Vec<u32> = (0..graph.edges().len() as u32).collect();
    edges_blocked(scene, graph, &all)
}

fn edges_blocked(scene: &Scene, graph: &crate::nav::NavGraph, edges: &[u32]) -> Vec<bool> {
    let movable = scene.tiers()[1];
    if movable.triangles.is_empty() {
        return vec![false; edges.len()];
    }
    let up = Vec3::Y * EDGE_TEST_HEIGHT;
    let segs: Vec<Segment> = edges
        .iter()
        .map(|&e| {
            let e = graph.edges()[e as usize];
            let n = graph.nodes();
            Segment::new(n[e.a as usize] + up, n[e.b as usize] + up)
        })
        .collect();
    let hits = crate::trace::cpu::occluded(&[movable], &segs, Mask::ANY_SOLID.bits());
    (0..edges.len()).map(|i| hits.get(i)).collect()
}

/// The pairs and edges one movable object (a door) can change.
#[derive(Clone, Debug, PartialEq)]
pub struct DoorPatch {
    pub object: ObjectId,
    /// The box the object covers over all its poses (metres, world space).
    pub lo: Vec3,
    pub hi: Vec3,
    /// Waypoint pairs `(a < b)` whose eye-to-eye segment crosses the box.
    pub pairs: Vec<(u32, u32)>,
    /// Nav edges whose edge-test segment crosses the box.
    pub edges: Vec<u32>,
}

impl DoorPatch {
    /// Lists what door `object` can change when it takes any of `poses` (its open and closed
    /// transforms, say). Every pair is tested against the swept box (a segment-box test per
    /// pair, no tracing).
    pub fn new(
        relations: &Relations,
        scene: &Scene,
        object: ObjectId,
        poses: &[Affine3A],
    ) -> Result<DoorPatch> {
        if scene.mobility(object) != Some(Mobility::Movable) {
            return Err(Error::InvalidInput(format!(
                "object {} is not a movable object of the scene; doors must be added as \
                 Mobility::Movable",
                object.0
            )));
        }
        if poses.is_empty() {
            return Err(Error::InvalidInput(
                "a door patch needs the door's poses (open and closed transforms)".into(),
            ));
        }
        let (mut lo, mut hi) = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
        for t in poses {
            let (a, b) = scene.object_bounds(object, *t).ok_or_else(|| {
                Error::InvalidInput(format!("object {} has no triangles", object.0))
            })?;
            lo = lo.min(a);
            hi = hi.max(b);
        }
        // A hair of margin: a segment grazing the box still counts.
        let (lo, hi) = (lo - Vec3::splat(1e-3), hi + Vec3::splat(1e-3));
        let nodes = relations.nodes();
        let eye = Vec3::Y * relations.params().eye_height;
        let mut pairs = Vec::new();
        for a in 0..nodes.len() as u32 {
            let pa = nodes[a as usize] + eye;
            for b in a + 1..nodes.len() as u32 {
                if crosses_box(pa, nodes[b as usize] + eye, lo, hi) {
                    pairs.push((a, b));
                }
            }
        }
        let g = relations.graph();
        let up = Vec3::Y * EDGE_TEST_HEIGHT;
        let edges = (0..g.edges().len() as u32)
            .filter(|&e| {
                let e = g.edges()[e as usize];
                crosses_box(
                    g.nodes()[e.a as usize] + up,
                    g.nodes()[e.b as usize] + up,
                    lo,
                    hi,
                )
            })
            .collect();
        Ok(DoorPatch {
            object,
            lo,
            hi,
            pairs,
            edges,
        })
    }
}

/// Whether the segment `a..b` meets the box `lo..hi` (slab test).
fn crosses_box(a: Vec3, b: Vec3, lo: Vec3, hi: Vec3) -> bool {
    let d = b - a;
    let (mut t0, mut t1) = (0.0f32, 1.0f32);
    for k in 0..3 {
        if d[k].abs() < 1e-12 {
            if a[k] < lo[k] || a[k] > hi[k] {
                return false;
            }
        } else {
            let (ta, tb) = ((lo[k] - a[k]) / d[k], (hi[k] - a[k]) / d[k]);
            t0 = t0.max(ta.min(tb));
            t1 = t1.min(ta.max(tb));
            if t0 > t1 {
                return false;
            }
        }
    }
    true
}

/// What a patch changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PatchReport {
    /// Pairs retraced, and those whose sight or fire changed.
    pub pairs: usize,
    pub changed_pairs: usize,
    /// Edges retested, and those that opened or closed.
    pub edges: usize,
    pub changed_edges: usize,
    /// Waypoints whose time-horizon list was searched again.
    pub horizons: usize,
}

impl Relations {
    /// Brings the relations up to date after the door of `patch` moved in `scene` (call it
    /// after `scene.set_transform`): retraces the patch's pairs through `engine` and retests
    /// its edges. Equal to [`Relations::compute`] on the scene as it is now.
    pub fn apply(
        &mut self,
        engine: &Engine,
        scene: &Scene,
        patch: &DoorPatch,
    ) -> Result<PatchReport> {
        let mut report = PatchReport {
            pairs: patch.pairs.len(),
            edges: patch.edges.len(),
            ..PatchReport::default()
        };
        let n = self.len() as u32;
        if patch.pairs.iter().any(|&(a, b)| a >= b || b >= n)
            || patch
                .edges
                .iter()
                .any(|&e| e as usize >= self.graph().edges().len())
        {
            return Err(Error::InvalidInput(
                "this door patch was made for other relations (pair or edge out of range); \
                 make it again with DoorPatch::new"
                    .into(),
            ));
        }
        let eye = Vec3::Y * self.params().eye_height;
        let nodes = self.nodes();
        let segs: Vec<Segment> = patch
            .pairs
            .iter()
            .map(|&(a, b)| Segment::new(nodes[a as usize] + eye, nodes[b as usize] + eye))
            .collect();
        // The same test as the full trace: waypoint to waypoint, squared.
        let r2 = self.params().range.map_or(f32::INFINITY, |r| r * r);
        let in_range: Vec<bool> = patch
            .pairs
            .iter()
            .map(|&(a, b)| nodes[a as usize].distance_squared(nodes[b as usize]) <= r2)
            .collect();
        if !segs.is_empty() {
            let sight = engine.occluded(scene, &segs, Mask::SIGHT)?;
            // As the full trace does: one pass when no material blocks only one of them.
            let fire = if super::relations::fire_is_sight(scene) {
                sight.clone()
            } else {
                engine.occluded(scene, &segs, Mask::FIRE)?
            };
            let mut touched = vec![false; n as usize];
            let (st, ft) = self.tables_mut();
            for (i, &(a, b)) in patch.pairs.iter().enumerate() {
                let s = in_range[i] && !sight.get(i);
                let f = in_range[i] && !fire.get(i);
                if st.visible(a, b) != s || ft.visible(a, b) != f {
                    report.changed_pairs += 1;
                    touched[a as usize] = true;
                    touched[b as usize] = true;
                }
                st.set_pair(a, b, s);
                ft.set_pair(a, b, f);
            }
            if report.changed_pairs > 0 {
                // Only the rows of waypoints with a changed pair differ.
                st.rebuild_sees_rows(&touched)?;
                ft.rebuild_sees_rows(&touched)?;
                self.rebuild_interactions(&touched)?;
            }
        }
        let blocked = edges_blocked(scene, self.graph(), &patch.edges);
        let changed: Vec<u32> = patch
            .edges
            .iter()
            .zip(&blocked)
            .filter(|(&e, &b)| self.edge_open(e) == b)
            .map(|(&e, _)| e)
            .collect();
        report.changed_edges = changed.len();
        if !changed.is_empty() {
            report.horizons = self.patch_horizons(&changed, &patch.edges, &blocked)?;
        }
        Ok(report)
    }

    /// Sets the changed edges' state and searches again the horizon of every waypoint that can
    /// reach one of them within the horizon with all of them open.
    fn patch_horizons(
        &mut self,
        changed: &[u32],
        edges: &[u32],
        blocked: &[bool],
    ) -> Result<usize> {
        let limit = self.params().horizon * self.params().speed;
        let mut open = self.open_mut().clone();
        for &e in changed {
            open[e as usize] = true;
        }
        let mut search = super::relations::Search::new(self.len());
        let mut affected = vec![false; self.len()];
        for &e in changed {
            let edge = self.graph().edges()[e as usize];
            for end in [edge.a, edge.b] {
                for (v, _) in search.run(self.graph(), &open, end, limit) {
                    affected[v as usize] = true;
                }
            }
        }
        {
            let state = self.open_mut();
            for (&e, &b) in edges.iter().zip(blocked) {
                state[e as usize] = !b;
            }
        }
        let list: Vec<u32> = (0..self.len() as u32)
            .filter(|&v| affected[v as usize])
            .collect();
        self.research_horizons(&list)?;
        Ok(list.len())
    }
}
