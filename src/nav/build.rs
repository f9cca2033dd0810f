//! Building a nav graph: grid nodes on every floor, walk tests between neighbours, and the
//! passage search for openings narrower than the grid.

use super::fine::Fine;
use super::walk::{walk, Stroll, Walk, WalkParams};
use super::WalkSurface;
use super::{CostParams, Edge, NavGraph, NavParams, MAX_EDGES, MAX_NODES};
use crate::scene::Scene;
use crate::tables::EdgeKinds;
use crate::{Engine, Error, Result};
use glam::{IVec2, Vec2, Vec3};
use rustc_hash::{FxHashMap, FxHashSet};

/// What [`generate`] and [`connect`] did: counts a person checks a graph by.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NavReport {
    /// Grid cells searched (`width x height`).
    pub grid: (usize, usize),
    /// Walkable, standable surfaces found under the grid cell centres.
    pub floors: usize,
    /// Of those, surfaces where not even a crouching body fits (no node).
    pub no_room: usize,
    /// Cells with more surfaces than `max_layers` (lower floors not searched there).
    pub truncated_cells: usize,
    /// Small walkable spots (fewer than four fine places, no way out of their cell) left
    /// without a node.
    pub dropped_spots: usize,
    /// Nodes of the cells' regions, and corner nodes added by the passages.
    pub grid_nodes: usize,
    pub passage_nodes: usize,
    /// Walks tested between nodes, and of those passed (the edges).
    pub walks: usize,
    pub edges: usize,
    /// Straight walks between neighbouring regions that failed and were string-pulled; the
    /// pieces walked; the passage edges made of them.
    pub failed_walks: usize,
    pub pieces: usize,
    pub passage_edges: usize,
    /// Edges by kind: stairs, water, crouch.
    pub stairs_edges: usize,
    pub water_edges: usize,
    pub crouch_edges: usize,
    /// Rays traced (ground, head room, sweeps) and the time taken (seconds).
    pub rays: u64,
    pub seconds: f64,
}

impl NavParams {
    fn walk_params(&self) -> WalkParams {
        WalkParams {
            agent: self.sample.agent,
            step_height: self.step_height,
            max_slope: self.sample.max_slope,
            sample_step: self.sample_step,
            probe_up: self.probe_up,
            foot: 0.1,
        }
    }
    /// Highest climb worth testing over a horizontal run: stairs up to about 56 degrees.
    fn reach(&self, run: f32) -> f32 {
        1.5 * run + self.step_height
    }
}

/// A nav graph for `scene` (see the module docs).
///
/// 1. The fine grid (`fine.rs`): every place the body fits, `spacing / fine` apart, and the
///    links between neighbouring places.
/// 2. **Nodes**: within each node cell, the fine places joined by links inside the cell form
///    regions (a cell cut by a wall has one on each side; a stair flight crossing a corner of a
///    cell, its own); each region gets one node, at its place nearest the cell's centre. Regions
///    of fewer than four places with no link out of their cell are dropped (counted).
/// 3. **Edges**: two regions a link joins get an edge when the body walks straight between
///    their nodes (the walk test of `walk.rs`).
/// 4. **Passages** (`params.passages`): where that straight walk fails, the linked path
///    between the two nodes through the two regions is string-pulled into straight pieces whose
///    corners become nodes; pieces that still fail are split at their middle (three rounds), so
///    a doorway at an angle to the grid or a stair between grid lines is walked piece by piece.
///    Corner nodes left at a dead end are linked to every node within the link radius whose
///    walk passes.
pub fn generate(
    engine: &Engine,
    scene: &Scene,
    params: &NavParams,
    costs: &CostParams,
) -> Result<(NavGraph, NavReport)> {
    let t = std::time::Instant::now();
    let surface = WalkSurface::build(engine, scene, params)?;
    let (graph, mut report) = generate_on(engine, scene, &surface, params, costs)?;
    report.seconds = t.elapsed().as_secs_f64();
    Ok((graph, report))
}

/// [`generate`] on a walk surface already built for `scene` with the same `params` (steps 2
/// to 4), so a caller that also walks the surface ([`crate::ring`]) builds it once.
pub fn generate_on(
    engine: &Engine,
    scene: &Scene,
    surface: &WalkSurface,
    params: &NavParams,
    costs: &CostParams,
) -> Result<(NavGraph, NavReport)> {
    params.validate()?;
    let t = std::time::Instant::now();
    let fine = surface.fine();
    let mut report = NavReport {
        grid: (fine.width / fine.per, fine.height / fine.per),
        floors: fine.floors,
        no_room: fine.no_room,
        truncated_cells: fine.truncated,
        rays: fine.rays,
        ..NavReport::default()
    };
    let region = regions(fine);
    let (anchors, dropped) = anchors(fine, &region, params);
    report.dropped_spots = dropped;
    // Nodes in fine-point order, so the graph does not depend on hash order.
    let mut draft = Draft {
        nodes: Vec::with_capacity(anchors.len()),
        edges: Vec::new(),
        node_of_point: FxHashMap::default(),
    };
    let mut node_of_region: FxHashMap<u32, u32> = FxHashMap::default();
    for &i in &anchors {
        draft.node_of_point.insert(i, draft.nodes.len() as u32);
        node_of_region.insert(region[i as usize], draft.nodes.len() as u32);
        draft.nodes.push(fine.pos[i as usize]);
    }
    report.grid_nodes = draft.nodes.len();
    check_count(draft.nodes.len(), "nodes")?;
    let pairs = candidate_pairs(fine, &region, &node_of_region);
    check_count(pairs.len(), "candidate edges")?;
    let wp = params.walk_params();
    let verdicts = walk_pairs(engine, scene, &draft.nodes, &pairs, &wp, &mut report)?;
    let mut failed = Vec::new();
    for (&(a, b), w) in pairs.iter().zip(&verdicts) {
        match *w {
            Walk::Pass { kinds, length, .. } => draft.edges.push(edge(a, b, kinds, length)),
            Walk::Fail { .. } => failed.push((a, b)),
        }
    }
    if params.passages && !failed.is_empty() {
        let site = Site {
            engine,
            scene,
            fine,
            params,
        };
        passages(&site, &region, &anchors, &mut draft, &failed, &mut report)?;
    }
    report.passage_nodes = draft.nodes.len() - report.grid_nodes;
    finish(draft.nodes, draft.edges, costs, report, t)
}

/// The graph being built: its nodes, its edges, and the node standing on each fine point
/// that has one.
struct Draft {
    nodes: Vec<Vec3>,
    edges: Vec<Edge>,
    node_of_point: FxHashMap<u32, u32>,
}

/// What the passage search works in: the engine, the scene, its fine walk grid and the
/// graph's parameters.
struct Site<'a> {
    engine: &'a Engine,
    scene: &'a Scene,
    fine: &'a Fine,
    params: &'a NavParams,
}

/// The root of `i` in a union-find forest, halving the path on the way.
fn root(parent: &mut [u32], mut i: u32) -> u32 {
    while parent[i as usize] != i {
        parent[i as usize] = parent[parent[i as usize] as usize];
        i = parent[i as usize];
    }
    i
}

/// Per fine point, its region: the lowest point it reaches by links inside its node cell
/// (union-find).
fn regions(fine: &Fine) -> Vec<u32> {
    let n = fine.len();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    for i in 0..n as u32 {
        for &j in fine.links(i) {
            if j > i && fine.cell_of(i) == fine.cell_of(j) {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                parent[a.max(b) as usize] = a.min(b);
            }
        }
    }
    (0..n as u32).map(|i| root(&mut parent, i)).collect()
}

/// One node per region, at its place nearest the cell centre, in fine-point order; regions
/// of fewer than four places with no link out of their cell get none (their count is
/// returned beside).
fn anchors(fine: &Fine, region: &[u32], params: &NavParams) -> (Vec<u32>, usize) {
    let n = fine.len();
    let mut size = vec![0u32; n];
    let mut outward = vec![false; n];
    for i in 0..n as u32 {
        size[region[i as usize] as usize] += 1;
        if fine
            .links(i)
            .iter()
            .any(|&j| fine.cell_of(j) != fine.cell_of(i))
        {
            outward[region[i as usize] as usize] = true;
        }
    }
    let half = 0.5 * params.sample.spacing;
    let centre = |i: u32| {
        let c = fine.cell_of(i).as_vec2() * params.sample.spacing + Vec2::splat(half);
        fine.origin + c
    };
    let mut best: FxHashMap<u32, (f32, u32)> = FxHashMap::default();
    for i in 0..n as u32 {
        let r = region[i as usize];
        if size[r as usize] < 4 && !outward[r as usize] {
            continue;
        }
        let p = fine.pos[i as usize];
        let d = Vec2::new(p.x, p.z).distance_squared(centre(i));
        let e = best.entry(r).or_insert((d, i));
        if d < e.0 {
            *e = (d, i);
        }
    }
    let dropped = (0..n)
        .filter(|&r| region[r] == r as u32 && !best.contains_key(&(r as u32)))
        .count();
    let mut anchors: Vec<u32> = best.values().map(|&(_, i)| i).collect();
    anchors.sort_unstable();
    (anchors, dropped)
}

/// Candidate edges: the node pairs of regions a link joins, sorted, each once.
fn candidate_pairs(
    fine: &Fine,
    region: &[u32],
    node_of_region: &FxHashMap<u32, u32>,
) -> Vec<(u32, u32)> {
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    for i in 0..fine.len() as u32 {
        for &j in fine.links(i) {
            let (ri, rj) = (region[i as usize], region[j as usize]);
            if j > i && ri != rj {
                if let (Some(&a), Some(&b)) = (node_of_region.get(&ri), node_of_region.get(&rj)) {
                    pairs.push((a.min(b), a.max(b)));
                }
            }
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// The graph, with the report's edge counts and time filled in.
fn finish(
    nodes: Vec<Vec3>,
    edges: Vec<Edge>,
    costs: &CostParams,
    mut report: NavReport,
    t: std::time::Instant,
) -> Result<(NavGraph, NavReport)> {
    report.edges = edges.len();
    for e in &edges {
        report.stairs_edges += usize::from(e.kinds.contains(EdgeKinds::STAIRS));
        report.water_edges += usize::from(e.kinds.contains(EdgeKinds::WATER));
        report.crouch_edges += usize::from(e.kinds.contains(EdgeKinds::CROUCH));
    }
    let graph = NavGraph::new(nodes, edges, costs)?;
    report.seconds = t.elapsed().as_secs_f64();
    Ok((graph, report))
}

fn walk_pairs(
    engine: &Engine,
    scene: &Scene,
    nodes: &[Vec3],
    pairs: &[(u32, u32)],
    wp: &WalkParams,
    report: &mut NavReport,
) -> Result<Vec<Walk>> {
    let strolls: Vec<Stroll> = pairs
        .iter()
        .map(|&(u, v)| Stroll {
            a: nodes[u as usize],
            b: nodes[v as usize],
            anchored: true,
        })
        .collect();
    let (verdicts, rays) = walk(engine, scene, &strolls, wp)?;
    report.rays += rays;
    report.walks += pairs.len();
    Ok(verdicts)
}

/// Rounds of splitting a passage piece that fails its walk.
const SPLIT_ROUNDS: usize = 3;

/// Step 4 of [`generate`]: string-pulled fine paths for the region pairs whose straight walk
/// failed.
fn passages(
    site: &Site<'_>,
    region: &[u32],
    point_of_node: &[u32],
    draft: &mut Draft,
    failed: &[(u32, u32)],
    report: &mut NavReport,
) -> Result<()> {
    report.failed_walks = failed.len();
    let mut pieces = pulled_pieces(site.fine, region, point_of_node, failed);
    report.pieces = pieces.len();
    let mut new_edges: FxHashSet<(u32, u32)> = FxHashSet::default();
    for _round in 0..=SPLIT_ROUNDS {
        if pieces.is_empty() {
            break;
        }
        pieces = walk_pieces(site, &pieces, draft, &mut new_edges, report)?;
    }
    // Grid edges may repeat a passage edge (two grid nodes joined by a one-piece path).
    let mut have: FxHashSet<(u32, u32)> = FxHashSet::default();
    draft.edges.retain(|e| have.insert((e.a, e.b)));
    report.passage_edges = new_edges.len();
    link_dead_ends(
        site.engine,
        site.scene,
        &draft.nodes,
        &mut draft.edges,
        &mut have,
        point_of_node.len(),
        site.params,
        report,
    )
}

/// Pieces to walk: for each failed pair, the cheapest fine path through the two regions,
/// string-pulled greedily (from each corner, the farthest path point in straight line); the
/// pieces' ends become nodes.
fn pulled_pieces(
    fine: &Fine,
    region: &[u32],
    point_of_node: &[u32],
    failed: &[(u32, u32)],
) -> Vec<Vec<u32>> {
    let mut pieces: Vec<Vec<u32>> = Vec::new();
    for &(a, b) in failed {
        let (pa, pb) = (point_of_node[a as usize], point_of_node[b as usize]);
        let (ra, rb) = (region[pa as usize], region[pb as usize]);
        let allowed = |q: u32| region[q as usize] == ra || region[q as usize] == rb;
        let Some(path) = fine_path(fine, pa, pb, &allowed) else {
            continue;
        };
        let mut i = 0;
        while i + 1 < path.len() {
            let j = (i + 1..path.len())
                .rev()
                .find(|&j| j == i + 1 || fine.straight(path[i], path[j], allowed))
                .unwrap();
            pieces.push(path[i..=j].to_vec());
            i = j;
        }
    }
    pieces
}

/// One round of the passage walks: each piece's ends as nodes (shared by every piece through
/// the same fine point), a passing piece an edge (once), a failing one split in two, or a
/// single diagonal step walked as its two straight steps. Returns the pieces for the next
/// round.
fn walk_pieces(
    site: &Site<'_>,
    pieces: &[Vec<u32>],
    draft: &mut Draft,
    new_edges: &mut FxHashSet<(u32, u32)>,
    report: &mut NavReport,
) -> Result<Vec<Vec<u32>>> {
    let fine = site.fine;
    let mut pairs = Vec::with_capacity(pieces.len());
    for piece in pieces {
        let ends = [piece[0], *piece.last().unwrap()].map(|p| {
            *draft.node_of_point.entry(p).or_insert_with(|| {
                draft.nodes.push(fine.pos[p as usize]);
                draft.nodes.len() as u32 - 1
            })
        });
        pairs.push((ends[0].min(ends[1]), ends[0].max(ends[1])));
    }
    check_count(draft.nodes.len(), "nodes")?;
    let wp = &site.params.walk_params();
    let verdicts = walk_pairs(site.engine, site.scene, &draft.nodes, &pairs, wp, report)?;
    let mut next = Vec::new();
    for ((piece, &(a, b)), w) in pieces.iter().zip(&pairs).zip(&verdicts) {
        match *w {
            Walk::Pass { kinds, length, .. } => {
                if new_edges.insert((a, b)) {
                    draft.edges.push(edge(a, b, kinds, length));
                }
            }
            Walk::Fail { .. } if piece.len() > 2 => {
                let mid = piece.len() / 2;
                next.push(piece[..=mid].to_vec());
                next.push(piece[mid..].to_vec());
            }
            Walk::Fail { .. } => {
                // One diagonal fine step (the body's sides sweep wide of it, into a door
                // jamb): walk it as its two straight steps, through the place beside both.
                if let Some(q) = beside(fine, piece[0], piece[1]) {
                    next.push(vec![piece[0], q]);
                    next.push(vec![q, piece[1]]);
                }
            }
        }
    }
    Ok(next)
}

/// Passage nodes left with one edge or none (a last piece too short to split failed, say
/// against the side of a stair flight) are linked to every node within the link radius whose
/// walk passes.
#[allow(clippy::too_many_arguments)]
fn link_dead_ends(
    engine: &Engine,
    scene: &Scene,
    nodes: &[Vec3],
    edges: &mut Vec<Edge>,
    have: &mut FxHashSet<(u32, u32)>,
    first_passage: usize,
    params: &NavParams,
    report: &mut NavReport,
) -> Result<()> {
    let mut degree = vec![0u32; nodes.len()];
    for e in edges.iter() {
        degree[e.a as usize] += 1;
        degree[e.b as usize] += 1;
    }
    let r = params.link_radius;
    let all = Buckets::new(nodes, r);
    let mut pairs = Vec::new();
    for u in first_passage as u32..nodes.len() as u32 {
        if degree[u as usize] > 1 {
            continue;
        }
        let a = nodes[u as usize];
        all.near(a, r, |v| {
            let b = nodes[v as usize];
            let run = Vec2::new(b.x - a.x, b.z - a.z).length();
            let key = (u.min(v), u.max(v));
            if v != u && run <= r && (b.y - a.y).abs() <= params.reach(run) && !have.contains(&key)
            {
                pairs.push(key);
            }
        });
    }
    pairs.sort_unstable();
    pairs.dedup();
    check_count(pairs.len(), "candidate edges")?;
    let verdicts = walk_pairs(engine, scene, nodes, &pairs, &params.walk_params(), report)?;
    for (&(a, b), w) in pairs.iter().zip(&verdicts) {
        if let Walk::Pass { kinds, length, .. } = *w {
            have.insert((a, b));
            edges.push(edge(a, b, kinds, length));
        }
    }
    Ok(())
}

/// For fine points `a` and `b` in diagonal columns, a point in one of the two columns beside
/// both that is linked to both.
fn beside(fine: &Fine, a: u32, b: u32) -> Option<u32> {
    let (ca, cb) = (fine.column_of(a), fine.column_of(b));
    let d = cb - ca;
    if d.x.abs() != 1 || d.y.abs() != 1 {
        return None;
    }
    [IVec2::new(cb.x, ca.y), IVec2::new(ca.x, cb.y)]
        .into_iter()
        .flat_map(|c| fine.points_in(c))
        .find(|&q| fine.links(q).contains(&a) && fine.links(q).contains(&b))
}

/// The cheapest linked path from fine point `a` to `b` through points `allowed`: each step
/// costs its length, more next to obstacles (a quarter more per missing link of the eight), so
/// the path keeps to the middle of a doorway or a flight of stairs instead of brushing a jamb.
fn fine_path(fine: &Fine, a: u32, b: u32, allowed: &impl Fn(u32) -> bool) -> Option<Vec<u32>> {
    use std::cmp::Reverse;
    let mut prev: FxHashMap<u32, (u32, f32)> = FxHashMap::default();
    prev.insert(a, (a, 0.0));
    let mut heap = std::collections::BinaryHeap::from([(Reverse(0u32), a)]);
    while let Some((Reverse(d), x)) = heap.pop() {
        let d = f32::from_bits(d);
        if d > prev[&x].1 {
            continue;
        }
        if x == b {
            let mut path = vec![b];
            let mut c = b;
            while c != a {
                c = prev[&c].0;
                path.push(c);
            }
            path.reverse();
            return Some(path);
        }
        let px = fine.pos[x as usize];
        for &y in fine.links(x) {
            if !allowed(y) {
                continue;
            }
            let crowd = 1.0 + 0.25 * 8u32.saturating_sub(fine.links(y).len() as u32) as f32;
            let nd = d + px.distance(fine.pos[y as usize]) * crowd;
            if prev.get(&y).is_none_or(|&(_, old)| nd < old) {
                prev.insert(y, (x, nd));
                // Non-negative f32 bits order like the numbers.
                heap.push((Reverse(nd.to_bits()), y));
            }
        }
    }
    None
}

/// Edges for nodes the user placed (a waypoint file): every pair within
/// `params.link_radius` whose walk passes. The nodes are checked (finite, at most
/// [`MAX_NODES`]); their order is kept.
pub fn connect(
    engine: &Engine,
    scene: &Scene,
    nodes: Vec<Vec3>,
    params: &NavParams,
    costs: &CostParams,
) -> Result<(NavGraph, NavReport)> {
    params.validate()?;
    check_count(nodes.len(), "nodes")?;
    if let Some(k) = nodes.iter().position(|p| !p.is_finite()) {
        return Err(Error::InvalidInput(format!(
            "node {k} is {}: nodes must be finite (metres)",
            nodes[k]
        )));
    }
    let t = std::time::Instant::now();
    let r = params.link_radius;
    let buckets = Buckets::new(&nodes, r);
    let mut pairs = Vec::new();
    for (u, &a) in nodes.iter().enumerate() {
        buckets.near(a, r, |v| {
            let b = nodes[v as usize];
            let run = Vec2::new(b.x - a.x, b.z - a.z).length();
            if v > u as u32 && (b.y - a.y).abs() <= params.reach(run) {
                pairs.push((u as u32, v));
            }
        });
        check_count(pairs.len(), "candidate edges")?;
    }
    let mut report = NavReport {
        grid_nodes: nodes.len(),
        ..NavReport::default()
    };
    let verdicts = walk_pairs(
        engine,
        scene,
        &nodes,
        &pairs,
        &params.walk_params(),
        &mut report,
    )?;
    let edges: Vec<Edge> = pairs
        .iter()
        .zip(&verdicts)
        .filter_map(|(&(u, v), w)| match *w {
            Walk::Pass { kinds, length, .. } => Some(edge(u, v, kinds, length)),
            Walk::Fail { .. } => None,
        })
        .collect();
    finish(nodes, edges, costs, report, t)
}

fn edge(u: u32, v: u32, kinds: EdgeKinds, length: f32) -> Edge {
    Edge {
        a: u.min(v),
        b: u.max(v),
        kinds,
        length,
    }
}

fn check_count(n: usize, what: &str) -> Result<()> {
    let limit = if what == "nodes" {
        MAX_NODES
    } else {
        MAX_EDGES
    };
    if n > limit {
        return Err(Error::InvalidInput(format!(
            "the nav graph would have more than {limit} {what}; use a larger spacing or a \
             smaller link radius"
        )));
    }
    Ok(())
}

/// Points bucketed on a square grid of side `r` (x/z), for "every point within r".
struct Buckets {
    r: f32,
    map: FxHashMap<(i32, i32), Vec<u32>>,
}

impl Buckets {
    fn new(points: &[Vec3], r: f32) -> Buckets {
        let mut b = Buckets {
            r,
            map: FxHashMap::default(),
        };
        for (i, &p) in points.iter().enumerate() {
            b.insert(i as u32, p);
        }
        b
    }
    fn key(&self, p: Vec3) -> (i32, i32) {
        ((p.x / self.r).floor() as i32, (p.z / self.r).floor() as i32)
    }
    fn insert(&mut self, i: u32, p: Vec3) {
        let k = self.key(p);
        self.map.entry(k).or_default().push(i);
    }
    /// Calls `f` with every point whose bucket lies within `r` of `p` (a superset of the
    /// points within `r`; callers filter by height and the walk test).
    fn near(&self, p: Vec3, r: f32, mut f: impl FnMut(u32)) {
        let (kx, kz) = self.key(p);
        let reach = (r / self.r).ceil() as i32;
        for dz in -reach..=reach {
            for dx in -reach..=reach {
                if let Some(v) = self.map.get(&(kx + dx, kz + dz)) {
                    v.iter().copied().for_each(&mut f);
                }
            }
        }
    }
}
