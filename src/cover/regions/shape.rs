//! Cover regions on a square-celled ground grid.
//!
//! A GPU pass classifies every cell of a top-down grid (x to the right, z "up" on the page,
//! y is height) as in cover or not for one body posture. This module turns such a cell set
//! into regions a game AI can use: [`erode`] it by the agent's radius (so that a region means
//! the body fits), [`label`] its connected regions, [`outline`] each one as a [`Polygon`] with
//! holes in world coordinates, find the cell [`deepest`] inside each region, and plan
//! [`routes`] over the ground grid that prefer cover.
//!
//! All distances are in metres. Masks and per-cell arrays are indexed like the [`Grid`]:
//! cell (c, r) has index `r * width + c`.

use glam::DVec2;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A grid of square cells: cell (c, r) spans x in [origin.x + c*cell, origin.x + (c+1)*cell]
/// and z in [origin.y + r*cell, origin.y + (r+1)*cell]; its index is r * width + c; its
/// centre is at origin + (c + 0.5, r + 0.5) * cell.
///
/// `origin.x` is the world x and `origin.y` the world z of the corner of cell (0, 0) with the
/// smallest coordinates, in metres. `cell` is the side of a cell in metres and must be finite
/// and positive for the geometric functions of this module to be meaningful.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    /// World (x, z) of the lowest corner of cell (0, 0), in metres.
    pub origin: DVec2,
    /// Side length of a cell in metres (finite, > 0).
    pub cell: f64,
    /// Number of cell columns (along x).
    pub width: usize,
    /// Number of cell rows (along z).
    pub height: usize,
}

impl Grid {
    /// Number of cells, `width * height`.
    pub fn len(&self) -> usize {
        self.width * self.height
    }

    /// Whether the grid has no cells.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// World (x, z) of the centre of cell `i`, in metres. Precondition: `i < self.len()`
    /// (other indices give the centre of the cell they would address in an unbounded grid
    /// of the same width).
    pub fn centre(&self, i: usize) -> DVec2 {
        let w = self.width.max(1);
        let c = (i % w) as f64;
        let r = (i / w) as f64;
        self.origin + DVec2::new(c + 0.5, r + 0.5) * self.cell
    }
}

/// The label of cells outside every region (see [`label`]); also the parent of cells without
/// one in [`Routes`].
pub const NONE: u32 = u32::MAX;

/// The 4-neighbours of cell `i` that lie inside the grid (left, right, below, above).
fn neighbours4(g: &Grid, i: usize) -> impl Iterator<Item = usize> {
    let (w, h) = (g.width, g.height);
    let (c, r) = (i % w, i / w);
    [
        if c > 0 { Some(i - 1) } else { None },
        if c + 1 < w { Some(i + 1) } else { None },
        if r > 0 { Some(i - w) } else { None },
        if r + 1 < h { Some(i + w) } else { None },
    ]
    .into_iter()
    .flatten()
}

// ---------------------------------------------------------------------------------------------
// Distance transform, erosion, labelling, deepest cell
// ---------------------------------------------------------------------------------------------

/// Per cell, the Euclidean distance in metres from its centre to the nearest centre of a cell
/// NOT in `mask`, where the cells just outside the grid (a one-cell ring around it) count as
/// not in the mask; 0 for cells not in the mask. Exact (Felzenszwalb-Huttenlocher squared
/// distance transform, two 1-D passes), O(cells).
///
/// Every cell of the mask therefore gets at least `g.cell`. The squared distance is computed
/// exactly in whole cells and the result is `sqrt(squared cells) * g.cell`.
///
/// Precondition: `mask.len() == g.len()`.
pub fn distance_to_outside(mask: &[bool], g: &Grid) -> Vec<f64> {
    debug_assert_eq!(mask.len(), g.len());
    let (w, h) = (g.width, g.height);
    let column = column_pass(mask, w, h);
    let mut out = vec![0.0; w * h];
    // Positions 0 and w + 1 stand for the ring columns c = -1 and c = w (always outside).
    let n = w + 2;
    let mut f = vec![0.0; n];
    let mut d = vec![0.0; n];
    let mut v = vec![0usize; n];
    let mut z = vec![0.0; n + 1];
    for r in 0..h {
        let row = r * w..(r + 1) * w;
        f[1..=w].copy_from_slice(&column[row.clone()]);
        lower_envelope(&f, &mut d, &mut v, &mut z);
        let cells = out[row.clone()].iter_mut().zip(&mask[row]);
        for ((o, &inside), &d2) in cells.zip(&d[1..=w]) {
            *o = if inside { d2.sqrt() * g.cell } else { 0.0 };
        }
    }
    out
}

/// Per cell, the squared distance in cells to the nearest cell of the same column that is not
/// in the mask, counting rows -1 and `h` as not in the mask.
fn column_pass(mask: &[bool], w: usize, h: usize) -> Vec<f64> {
    let mut col = vec![0.0; w * h];
    for c in 0..w {
        let mut last = -1isize;
        for r in 0..h {
            let i = r * w + c;
            if !mask[i] {
                last = r as isize;
            }
            col[i] = (r as isize - last) as f64;
        }
        let mut next = h as isize;
        for r in (0..h).rev() {
            let i = r * w + c;
            if !mask[i] {
                next = r as isize;
            }
            let up = (next - r as isize) as f64;
            let best = col[i].min(up);
            col[i] = best * best;
        }
    }
    col
}

/// One-dimensional squared distance transform of sampled function `f` (all values finite):
/// `d[q] = min_p (q - p)^2 + f[p]`, via the lower envelope of parabolas. `v` and `z` are
/// scratch buffers of lengths `f.len()` and `f.len() + 1`.
fn lower_envelope(f: &[f64], d: &mut [f64], v: &mut [usize], z: &mut [f64]) {
    let n = f.len();
    if n == 0 {
        return;
    }
    let mut k = 0usize;
    v[0] = 0;
    z[0] = f64::NEG_INFINITY;
    z[1] = f64::INFINITY;
    for q in 1..n {
        let qf = q as f64;
        loop {
            let p = v[k];
            let pf = p as f64;
            let s = ((f[q] + qf * qf) - (f[p] + pf * pf)) / (2.0 * (qf - pf));
            if k > 0 && s <= z[k] {
                k -= 1;
            } else {
                k += 1;
                v[k] = q;
                z[k] = s;
                z[k + 1] = f64::INFINITY;
                break;
            }
        }
    }
    k = 0;
    for (q, dq) in d.iter_mut().enumerate().take(n) {
        let qf = q as f64;
        while z[k + 1] < qf {
            k += 1;
        }
        let p = v[k];
        let dist = qf - p as f64;
        *dq = dist * dist + f[p];
    }
}

/// The cells of `mask` whose every neighbour within `radius` metres (centre to centre,
/// inclusive) is in the mask and inside the grid: `distance_to_outside > radius`.
///
/// A cell not in `mask` is never kept. With `radius < g.cell` (including 0 and negative
/// radii) the result equals `mask`. A NaN radius keeps nothing.
///
/// Precondition: `mask.len() == g.len()`.
pub fn erode(mask: &[bool], g: &Grid, radius: f64) -> Vec<bool> {
    let distance = distance_to_outside(mask, g);
    mask.iter()
        .zip(&distance)
        .map(|(&inside, &d)| inside && d > radius)
        .collect()
}

/// 4-connected components of `mask`: a label per cell ([`NONE`] = u32::MAX outside the mask),
/// labels 0..count numbered in order of each component's lowest cell index; returns
/// (labels, count).
///
/// Precondition: `mask.len() == g.len()` and fewer than `u32::MAX` components.
pub fn label(mask: &[bool], g: &Grid) -> (Vec<u32>, usize) {
    debug_assert_eq!(mask.len(), g.len());
    let mut labels = vec![NONE; mask.len()];
    let mut count = 0usize;
    let mut stack = Vec::new();
    for seed in 0..mask.len() {
        if !mask[seed] || labels[seed] != NONE {
            continue;
        }
        let id = count as u32;
        labels[seed] = id;
        stack.push(seed);
        while let Some(i) = stack.pop() {
            for j in neighbours4(g, i) {
                if mask[j] && labels[j] == NONE {
                    labels[j] = id;
                    stack.push(j);
                }
            }
        }
        count += 1;
    }
    (labels, count)
}

/// The cell of region `label` farthest from every cell outside it (largest
/// [`distance_to_outside`] of the region's own mask `labels[i] == label`; ties: lowest index)
/// and its margin: that distance minus half a cell, i.e. the clearance in metres from the
/// cell's centre to the region's edge along the grid axes (>= cell/2 - cell/2 = 0). None if
/// the label has no cells.
///
/// For example a 5x5 solid square region has its centre cell as the deepest, 3 cells from
/// the nearest outside centre, so its margin is `2.5 * cell`.
///
/// Precondition: `labels.len() == g.len()`.
pub fn deepest(labels: &[u32], g: &Grid, label: u32) -> Option<(usize, f64)> {
    debug_assert_eq!(labels.len(), g.len());
    let mask: Vec<bool> = labels.iter().map(|&l| l == label).collect();
    let distance = distance_to_outside(&mask, g);
    let mut best: Option<(usize, f64)> = None;
    for (i, (&inside, &d)) in mask.iter().zip(&distance).enumerate() {
        if inside && best.is_none_or(|(_, b)| d > b) {
            best = Some((i, d));
        }
    }
    best.map(|(i, d)| (i, d - 0.5 * g.cell))
}

// ---------------------------------------------------------------------------------------------
// Polygons and outlines
// ---------------------------------------------------------------------------------------------

/// A polygon on the ground in world (x, z) metres: `outer` counter-clockwise (positive
/// shoelace area in (x, z)), each of `holes` clockwise; rings are implicitly closed (first
/// point not repeated) and have no collinear or repeated consecutive vertices.
///
/// A ring may pass through the same vertex twice (non-consecutively) and different rings may
/// share vertices, where cells touch only at a corner; rings never cross.
#[derive(Clone, Debug, PartialEq)]
pub struct Polygon {
    /// The outer boundary as [x, z] points in metres, counter-clockwise.
    pub outer: Vec<[f64; 2]>,
    /// The boundaries of the holes as [x, z] points in metres, each clockwise.
    pub holes: Vec<Vec<[f64; 2]>>,
}

impl Polygon {
    /// Area in square metres (outer minus holes): the absolute shoelace area of `outer` minus
    /// the absolute shoelace areas of the holes.
    pub fn area(&self) -> f64 {
        let holes: f64 = self.holes.iter().map(|h| ring_signed_area(h).abs()).sum();
        ring_signed_area(&self.outer).abs() - holes
    }

    /// Whether (x, z) is inside (even-odd over all rings; points on the boundary: either
    /// answer).
    pub fn contains(&self, p: [f64; 2]) -> bool {
        let mut inside = ring_odd_crossings(&self.outer, p);
        for hole in &self.holes {
            inside ^= ring_odd_crossings(hole, p);
        }
        inside
    }
}

/// Shoelace signed area of a closed ring (positive when counter-clockwise in (x, z)),
/// computed relative to the first vertex to limit cancellation.
fn ring_signed_area(ring: &[[f64; 2]]) -> f64 {
    let Some(&o) = ring.first() else {
        return 0.0;
    };
    let mut twice = 0.0;
    for (i, a) in ring.iter().enumerate() {
        let b = ring[(i + 1) % ring.len()];
        twice += (a[0] - o[0]) * (b[1] - o[1]) - (b[0] - o[0]) * (a[1] - o[1]);
    }
    0.5 * twice
}

/// Whether a ray from `p` towards +x crosses the closed ring an odd number of times.
fn ring_odd_crossings(ring: &[[f64; 2]], p: [f64; 2]) -> bool {
    let mut inside = false;
    let Some(mut j) = ring.len().checked_sub(1) else {
        return false;
    };
    for (i, a) in ring.iter().enumerate() {
        let b = ring[j];
        if (a[1] > p[1]) != (b[1] > p[1]) {
            let x = a[0] + (b[0] - a[0]) * (p[1] - a[1]) / (b[1] - a[1]);
            if p[0] < x {
                inside = !inside;
            }
        }
        j = i;
    }
    inside
}

/// Unit steps on the corner lattice for edge directions 0..4: +x, +z, -x, -z.
const STEPS: [(i64, i64); 4] = [(1, 0), (0, 1), (-1, 0), (0, -1)];

/// A directed boundary edge of unit length on the corner lattice: it starts at corner
/// (x, z) and runs in direction `dir` (an index into [`STEPS`]), with the region on its left.
#[derive(Clone, Copy, Debug)]
struct Edge {
    x: i64,
    z: i64,
    dir: usize,
}

/// Inclusive cell bounds (c0, c1, r0, r1) of the cells labelled `label`, if any.
fn label_bounds(labels: &[u32], g: &Grid, label: u32) -> Option<(usize, usize, usize, usize)> {
    let mut bounds: Option<(usize, usize, usize, usize)> = None;
    for (i, _) in labels.iter().enumerate().filter(|&(_, &l)| l == label) {
        let (c, r) = (i % g.width, i / g.width);
        bounds = Some(match bounds {
            None => (c, c, r, r),
            Some((c0, c1, r0, r1)) => (c0.min(c), c1.max(c), r0.min(r), r1.max(r)),
        });
    }
    bounds
}

/// The boundary edges of the cells labelled `label` within inclusive cell bounds `b`, in
/// order of cell index and, per cell, bottom, right, top, left side.
fn boundary_edges(
    labels: &[u32],
    g: &Grid,
    label: u32,
    b: (usize, usize, usize, usize),
) -> Vec<Edge> {
    let (w, h) = (g.width as i64, g.height as i64);
    let inside = |c: i64, r: i64| {
        c >= 0 && r >= 0 && c < w && r < h && labels[(r * w + c) as usize] == label
    };
    let mut edges = Vec::new();
    for r in b.2 as i64..=b.3 as i64 {
        for c in b.0 as i64..=b.1 as i64 {
            if !inside(c, r) {
                continue;
            }
            // (neighbour across the side, start corner of the side, direction)
            let sides = [
                ((c, r - 1), (c, r), 0),
                ((c + 1, r), (c + 1, r), 1),
                ((c, r + 1), (c + 1, r + 1), 2),
                ((c - 1, r), (c, r + 1), 3),
            ];
            for ((nc, nr), (x, z), dir) in sides {
                if !inside(nc, nr) {
                    edges.push(Edge { x, z, dir });
                }
            }
        }
    }
    edges
}

/// For every edge, the index of the edge that follows it on its ring. At the end corner of
/// an edge the left turn is preferred, then straight on, then the right turn; the only corners
/// with a choice are diagonal pinches, where preferring the left turn keeps the two region
/// cells that touch only at that corner on separate rings (4-connectivity of the region).
fn successors(edges: &[Edge], b: (usize, usize, usize, usize)) -> Vec<usize> {
    let (x0, z0) = (b.0 as i64, b.2 as i64);
    let vw = (b.1 - b.0 + 2) as i64;
    let vh = (b.3 - b.2 + 2) as i64;
    let corner = |x: i64, z: i64| ((z - z0) * vw + (x - x0)) as usize;
    let mut out = vec![usize::MAX; (vw * vh) as usize * 4];
    for (k, e) in edges.iter().enumerate() {
        out[corner(e.x, e.z) * 4 + e.dir] = k;
    }
    edges
        .iter()
        .enumerate()
        .map(|(k, e)| {
            let (dx, dz) = STEPS[e.dir];
            let v = corner(e.x + dx, e.z + dz);
            [1, 0, 3]
                .iter()
                .map(|turn| out[v * 4 + (e.dir + turn) % 4])
                .find(|&next| next != usize::MAX)
                .unwrap_or(k)
        })
        .collect()
}

/// The cycles of the successor permutation, each as a list of edge indices, in order of their
/// lowest edge index.
fn cycles(next: &[usize]) -> Vec<Vec<usize>> {
    let mut seen = vec![false; next.len()];
    let mut rings = Vec::new();
    for start in 0..next.len() {
        if seen[start] {
            continue;
        }
        let mut ring = Vec::new();
        let mut k = start;
        while !seen[k] {
            seen[k] = true;
            ring.push(k);
            k = next[k];
        }
        rings.push(ring);
    }
    rings
}

/// The corners of a ring of edges on the lattice (the start points of edges whose direction
/// differs from the previous edge's), rotated to begin at the corner with the lowest z and,
/// among those, the lowest x.
fn ring_corners(edges: &[Edge], ring: &[usize]) -> Vec<(i64, i64)> {
    let mut corners = Vec::new();
    for (j, &k) in ring.iter().enumerate() {
        let prev = ring[(j + ring.len() - 1) % ring.len()];
        if edges[prev].dir != edges[k].dir {
            corners.push((edges[k].x, edges[k].z));
        }
    }
    let first = (0..corners.len()).min_by_key(|&j| (corners[j].1, corners[j].0));
    if let Some(first) = first {
        corners.rotate_left(first);
    }
    corners
}

/// Twice the signed shoelace area of a lattice ring (exact).
fn lattice_twice_area(ring: &[(i64, i64)]) -> i64 {
    let n = ring.len();
    (0..n)
        .map(|j| {
            let (a, b) = (ring[j], ring[(j + 1) % n]);
            a.0 * b.1 - b.0 * a.1
        })
        .sum()
}

/// The outline of the cells labelled `label`: rings along cell boundaries, the outer ring and
/// one ring per hole (a hole is any 8-connected set of cells not labelled `label` that the
/// region encloses). Where two cells of the region touch only at a corner, the rings keep them
/// apart (they may touch at that vertex, never cross), consistent with 4-connectivity.
/// Its area equals the region's cell count times cell^2 exactly (up to f64 rounding).
///
/// Conventions: every ring starts at its vertex with the lowest z and, among those, the lowest
/// x; holes are sorted by that starting vertex (z, then x). Vertices are computed on the
/// integer corner lattice and converted to world coordinates as
/// `origin + (corner column, corner row) * cell` only at the end.
///
/// A label with no cells gives an empty polygon (no vertices, no holes). Precondition:
/// `labels.len() == g.len()` and the cells labelled `label` are 4-connected (as produced by
/// [`label`]); otherwise `outer` is the largest of the several outer rings (ties: the one
/// containing the lowest cell index) and the others are dropped, while all hole rings are kept.
pub fn outline(labels: &[u32], g: &Grid, label: u32) -> Polygon {
    debug_assert_eq!(labels.len(), g.len());
    let empty = Polygon {
        outer: Vec::new(),
        holes: Vec::new(),
    };
    let Some(bounds) = label_bounds(labels, g, label) else {
        return empty;
    };
    let edges = boundary_edges(labels, g, label, bounds);
    let next = successors(&edges, bounds);
    let mut outer: Option<(i64, Vec<(i64, i64)>)> = None;
    let mut holes = Vec::new();
    for ring in cycles(&next) {
        let corners = ring_corners(&edges, &ring);
        let area = lattice_twice_area(&corners);
        if area < 0 {
            holes.push(corners);
        } else if outer.as_ref().is_none_or(|(a, _)| area > *a) {
            outer = Some((area, corners));
        }
    }
    holes.sort_by_key(|h| h.first().map(|&(x, z)| (z, x)));
    let world = |ring: &[(i64, i64)]| -> Vec<[f64; 2]> {
        ring.iter()
            .map(|&(x, z)| {
                [
                    g.origin.x + x as f64 * g.cell,
                    g.origin.y + z as f64 * g.cell,
                ]
            })
            .collect()
    };
    Polygon {
        outer: outer.map(|(_, r)| world(&r)).unwrap_or_default(),
        holes: holes.iter().map(|h| world(h)).collect(),
    }
}

// ---------------------------------------------------------------------------------------------
// Routing
// ---------------------------------------------------------------------------------------------

/// Shortest paths over the ground grid from one start cell, preferring cover (see
/// [`routes`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Routes {
    /// Per cell, the cost of the cheapest path from the start (0 at the start,
    /// `f64::INFINITY` where unreached), in metres weighted by exposure.
    pub cost: Vec<f64>,
    /// Per cell, the previous cell on its cheapest path; [`NONE`] for the start and for
    /// unreached cells.
    pub parent: Vec<u32>,
}

impl Routes {
    /// Cells from the start to `goal`, both included; None if `goal` was not reached (or is
    /// not a cell of the grid).
    pub fn path_to(&self, goal: usize) -> Option<Vec<usize>> {
        if !self.reached(goal) {
            return None;
        }
        let mut path = vec![goal];
        let mut at = goal;
        while let Some(&p) = self.parent.get(at) {
            if p == NONE || path.len() > self.parent.len() {
                break;
            }
            at = p as usize;
            path.push(at);
        }
        path.reverse();
        Some(path)
    }

    /// Whether cell `i` was reached (finite cost); false for indices outside the grid.
    pub fn reached(&self, i: usize) -> bool {
        self.cost.get(i).is_some_and(|c| c.is_finite())
    }
}

/// A heap entry ordered so that `BinaryHeap` pops the lowest cost first (ties: lowest cell).
#[derive(Clone, Copy, Debug)]
struct Entry {
    cost: f64,
    cell: usize,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .cost
            .total_cmp(&self.cost)
            .then_with(|| other.cell.cmp(&self.cell))
    }
}

/// Calls `visit(destination, length in metres)` for every move allowed from cell `u` (see
/// [`routes`] for the rules). Precondition: `ground[u]` is not NaN.
fn for_each_move(
    g: &Grid,
    ground: &[f32],
    u: usize,
    max_step: f32,
    mut visit: impl FnMut(usize, f64),
) {
    let (w, h) = (g.width as i64, g.height as i64);
    let (c, r) = ((u % g.width) as i64, (u / g.width) as i64);
    let from = ground[u];
    let step_ok = |c: i64, r: i64| -> Option<usize> {
        if c < 0 || r < 0 || c >= w || r >= h {
            return None;
        }
        let i = (r * w + c) as usize;
        ((ground[i] - from).abs() <= max_step).then_some(i)
    };
    let diagonal = g.cell * std::f64::consts::SQRT_2;
    for dr in -1..=1i64 {
        for dc in -1..=1i64 {
            if dc == 0 && dr == 0 {
                continue;
            }
            let Some(v) = step_ok(c + dc, r + dr) else {
                continue;
            };
            if dc == 0 || dr == 0 {
                visit(v, g.cell);
            } else if step_ok(c + dc, r).is_some() && step_ok(c, r + dr).is_some() {
                visit(v, diagonal);
            }
        }
    }
}

/// Dijkstra from cell `start` over cells with ground (`ground[i]` not NaN), 8 neighbours: a
/// move is allowed when both cells have ground, |ground difference| <= max_step metres, and
/// for a diagonal move both cells sharing its two orthogonal sides have ground and are within
/// max_step of the start cell of the move (no corner cutting). A move costs its length in
/// metres (cell or cell*sqrt2) times (1 + exposure_weight) when the destination cell is NOT in
/// `cover`, else its length. Unreached cells have cost f64::INFINITY. `start` without ground
/// (or outside the grid): every cost infinite.
///
/// `ground` holds the ground height in metres per cell (NaN: no ground). Preconditions:
/// `ground.len() == cover.len() == g.len() < u32::MAX`, `max_step >= 0` and
/// `exposure_weight >= 0`, both finite. Ties between equally cheap paths are resolved
/// deterministically (cells are settled in order of cost, then index; a parent is replaced
/// only by a strictly cheaper one).
pub fn routes(
    g: &Grid,
    ground: &[f32],
    cover: &[bool],
    start: usize,
    max_step: f32,
    exposure_weight: f64,
) -> Routes {
    debug_assert_eq!(ground.len(), g.len());
    debug_assert_eq!(cover.len(), g.len());
    let n = g.len();
    let mut cost = vec![f64::INFINITY; n];
    let mut parent = vec![NONE; n];
    if start >= n || ground[start].is_nan() {
        return Routes { cost, parent };
    }
    let exposed = 1.0 + exposure_weight;
    let mut heap = BinaryHeap::new();
    cost[start] = 0.0;
    heap.push(Entry {
        cost: 0.0,
        cell: start,
    });
    while let Some(Entry { cost: at, cell: u }) = heap.pop() {
        if at > cost[u] {
            continue;
        }
        for_each_move(g, ground, u, max_step, |v, length| {
            let step = if cover[v] { length } else { length * exposed };
            let c = at + step;
            if c < cost[v] {
                cost[v] = c;
                parent[v] = u as u32;
                heap.push(Entry { cost: c, cell: v });
            }
        });
    }
    Routes { cost, parent }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic xorshift64 generator.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    fn grid(w: usize, h: usize, cell: f64) -> Grid {
        Grid {
            origin: DVec2::new(-3.25, 7.5),
            cell,
            width: w,
            height: h,
        }
    }

    fn random_mask(rng: &mut Rng, n: usize, density: f64) -> Vec<bool> {
        (0..n).map(|_| rng.unit() < density).collect()
    }

    const DENSITIES: [f64; 6] = [0.0, 0.2, 0.5, 0.75, 0.95, 1.0];
    const CELLS: [f64; 4] = [0.25, 0.3, 1.0, 0.7];

    /// A random grid of 1x1..25x30 cells with a random mask at one of several densities.
    fn random_case(rng: &mut Rng) -> (Grid, Vec<bool>) {
        let g = grid(1 + rng.below(25), 1 + rng.below(30), CELLS[rng.below(4)]);
        let density = DENSITIES[rng.below(DENSITIES.len())];
        let mask = random_mask(rng, g.len(), density);
        (g, mask)
    }

    fn mask_at(mask: &[bool], g: &Grid, c: i64, r: i64) -> bool {
        let (w, h) = (g.width as i64, g.height as i64);
        c >= 0 && r >= 0 && c < w && r < h && mask[(r * w + c) as usize]
    }

    fn brute_distance(mask: &[bool], g: &Grid) -> Vec<f64> {
        let (w, h) = (g.width as i64, g.height as i64);
        (0..g.len())
            .map(|i| {
                if !mask[i] {
                    return 0.0;
                }
                let (c, r) = ((i % g.width) as i64, (i / g.width) as i64);
                let mut best = f64::INFINITY;
                for rr in -1..=h {
                    for cc in -1..=w {
                        if !mask_at(mask, g, cc, rr) {
                            let d2 = ((cc - c).pow(2) + (rr - r).pow(2)) as f64;
                            best = best.min(d2.sqrt() * g.cell);
                        }
                    }
                }
                best
            })
            .collect()
    }

    #[test]
    fn distance_matches_brute_force() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..200 {
            let (g, mask) = random_case(&mut rng);
            let fast = distance_to_outside(&mask, &g);
            let slow = brute_distance(&mask, &g);
            for (a, b) in fast.iter().zip(&slow) {
                assert!((a - b).abs() < 1e-9, "{a} vs {b} on {g:?}");
            }
        }
    }

    #[test]
    fn distance_single_cell_and_empty_grid() {
        let g = grid(1, 1, 0.5);
        assert_eq!(distance_to_outside(&[true], &g), vec![0.5]);
        assert_eq!(distance_to_outside(&[false], &g), vec![0.0]);
        assert!(distance_to_outside(&[], &grid(0, 4, 1.0)).is_empty());
        assert!(distance_to_outside(&[], &grid(4, 0, 1.0)).is_empty());
    }

    fn brute_erode(mask: &[bool], g: &Grid, radius: f64) -> Vec<bool> {
        let reach = (radius / g.cell).ceil().max(0.0) as i64 + 1;
        (0..g.len())
            .map(|i| {
                let (c, r) = ((i % g.width) as i64, (i / g.width) as i64);
                mask[i]
                    && (-reach..=reach).all(|dr| {
                        (-reach..=reach).all(|dc| {
                            let d = ((dc * dc + dr * dr) as f64).sqrt() * g.cell;
                            d > radius || mask_at(mask, g, c + dc, r + dr)
                        })
                    })
            })
            .collect()
    }

    #[test]
    fn erode_matches_brute_force() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for _ in 0..60 {
            let (g, mask) = random_case(&mut rng);
            let c = g.cell;
            let radii = [
                0.0,
                c / 2.0,
                0.3,
                0.25,
                c,
                c * std::f64::consts::SQRT_2,
                1.5 * c,
                2.0 * c,
                2.3 * c,
                3.7 * c,
            ];
            for radius in radii {
                assert_eq!(erode(&mask, &g, radius), brute_erode(&mask, &g, radius));
            }
        }
    }

    #[test]
    fn erode_small_radius_keeps_mask() {
        let g = grid(3, 3, 1.0);
        let mask = vec![true; 9];
        assert_eq!(erode(&mask, &g, 0.0), mask);
        assert_eq!(erode(&mask, &g, 0.99), mask);
        let one = erode(&mask, &g, 1.0);
        assert_eq!(one.iter().filter(|&&b| b).count(), 1);
        assert!(one[4]);
    }

    /// Labels by repeated minimum propagation, then renumbered by first appearance.
    fn brute_label(mask: &[bool], g: &Grid) -> (Vec<u32>, usize) {
        let mut root: Vec<usize> = (0..g.len()).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for i in 0..g.len() {
                if !mask[i] {
                    continue;
                }
                for j in neighbours4(g, i) {
                    if mask[j] && root[j] < root[i] {
                        root[i] = root[j];
                        changed = true;
                    }
                }
            }
        }
        let mut ids = std::collections::HashMap::new();
        let labels = (0..g.len())
            .map(|i| {
                if !mask[i] {
                    return NONE;
                }
                let next = ids.len() as u32;
                *ids.entry(root[i]).or_insert(next)
            })
            .collect();
        (labels, ids.len())
    }

    #[test]
    fn label_matches_brute_force() {
        let mut rng = Rng(0xdead_beef_cafe_f00d);
        for _ in 0..150 {
            let (g, mask) = random_case(&mut rng);
            assert_eq!(label(&mask, &g), brute_label(&mask, &g));
        }
    }

    /// Number of 8-connected sets of cells not labelled `id` that do not reach the ring
    /// around the grid.
    fn brute_hole_count(labels: &[u32], g: &Grid, id: u32) -> usize {
        let (w, h) = (g.width as i64 + 2, g.height as i64 + 2);
        let free = |c: i64, r: i64| {
            let (gc, gr) = (c - 1, r - 1);
            let inside = gc >= 0 && gr >= 0 && gc < g.width as i64 && gr < g.height as i64;
            !(inside && labels[(gr * g.width as i64 + gc) as usize] == id)
        };
        let mut seen = vec![false; (w * h) as usize];
        let mut components = 0;
        for s in 0..w * h {
            if seen[s as usize] || !free(s % w, s / w) {
                continue;
            }
            components += 1;
            seen[s as usize] = true;
            let mut stack = vec![s];
            while let Some(k) = stack.pop() {
                let (c, r) = (k % w, k / w);
                for (dc, dr) in (-1..=1).flat_map(|a| (-1..=1).map(move |b| (a, b))) {
                    let (nc, nr) = (c + dc, r + dr);
                    if nc >= 0 && nr >= 0 && nc < w && nr < h && free(nc, nr) {
                        let j = nr * w + nc;
                        if !seen[j as usize] {
                            seen[j as usize] = true;
                            stack.push(j);
                        }
                    }
                }
            }
        }
        components - 1
    }

    fn check_ring(ring: &[[f64; 2]]) {
        assert!(ring.len() >= 4);
        let n = ring.len();
        for j in 0..n {
            let (a, b, c) = (ring[j], ring[(j + 1) % n], ring[(j + 2) % n]);
            assert_ne!(a, b, "repeated vertex");
            assert!(a[0] == b[0] || a[1] == b[1], "edge not axis-aligned");
            let ab_vertical = a[0] == b[0];
            let bc_vertical = b[0] == c[0];
            assert_ne!(ab_vertical, bc_vertical, "collinear vertex {b:?}");
        }
    }

    fn check_outline(labels: &[u32], g: &Grid, id: u32) {
        let p = outline(labels, g, id);
        let count = labels.iter().filter(|&&l| l == id).count();
        let expected = count as f64 * g.cell * g.cell;
        assert!((p.area() - expected).abs() < 1e-9 * expected.max(1.0));
        assert!(ring_signed_area(&p.outer) > 0.0);
        check_ring(&p.outer);
        for hole in &p.holes {
            assert!(ring_signed_area(hole) < 0.0);
            check_ring(hole);
        }
        assert_eq!(p.holes.len(), brute_hole_count(labels, g, id));
        for (i, &l) in labels.iter().enumerate() {
            let c = g.centre(i);
            assert_eq!(p.contains([c.x, c.y]), l == id, "cell {i} of {g:?}");
        }
    }

    #[test]
    fn outline_random_regions() {
        let mut rng = Rng(0x0123_4567_89ab_cdef);
        for _ in 0..120 {
            let (g, mask) = random_case(&mut rng);
            let (labels, count) = label(&mask, &g);
            for id in 0..count as u32 {
                check_outline(&labels, &g, id);
            }
        }
    }

    fn labels_from(rows: &[&str]) -> (Grid, Vec<u32>, usize) {
        // rows[0] is the top row (highest z), as drawn on the page.
        let g = grid(rows[0].len(), rows.len(), 0.5);
        let mask: Vec<bool> = rows
            .iter()
            .rev()
            .flat_map(|s| s.bytes().map(|b| b == b'#'))
            .collect();
        let (labels, count) = label(&mask, &g);
        (g, labels, count)
    }

    fn lattice(g: &Grid, ring: &[[f64; 2]]) -> Vec<(f64, f64)> {
        ring.iter()
            .map(|p| ((p[0] - g.origin.x) / g.cell, (p[1] - g.origin.y) / g.cell))
            .collect()
    }

    #[test]
    fn outline_annulus_has_one_hole() {
        let (g, labels, count) = labels_from(&["#####", "#...#", "#...#", "#...#", "#####"]);
        assert_eq!(count, 1);
        let p = outline(&labels, &g, 0);
        let square = |a: f64, b: f64| vec![(a, a), (b, a), (b, b), (a, b)];
        assert_eq!(lattice(&g, &p.outer), square(0.0, 5.0));
        assert_eq!(p.holes.len(), 1);
        assert_eq!(
            lattice(&g, &p.holes[0]),
            vec![(1.0, 1.0), (1.0, 4.0), (4.0, 4.0), (4.0, 1.0)]
        );
        assert!((p.area() - 16.0 * 0.25).abs() < 1e-12);
        check_outline(&labels, &g, 0);
    }

    #[test]
    fn outline_diagonal_hole_cells_form_one_hole() {
        let (g, labels, count) = labels_from(&["####", "##.#", "#.##", "####"]);
        assert_eq!(count, 1);
        let p = outline(&labels, &g, 0);
        assert_eq!(p.holes.len(), 1);
        assert_eq!(p.holes[0].len(), 8);
        check_outline(&labels, &g, 0);
    }

    #[test]
    fn outline_region_touching_itself_at_a_corner() {
        // The cell left of centre and the cell above centre touch only at a corner; the gap
        // cell in the centre is 8-connected to the outside, so there is no hole.
        let (g, labels, count) = labels_from(&[".##", "#.#", "###"]);
        assert_eq!(count, 1);
        let p = outline(&labels, &g, 0);
        assert!(p.holes.is_empty());
        let corner = [g.origin.x + g.cell, g.origin.y + 2.0 * g.cell];
        assert_eq!(p.outer.iter().filter(|&&v| v == corner).count(), 2);
        check_outline(&labels, &g, 0);
    }

    #[test]
    fn outline_checkerboard_pinch_keeps_cells_apart() {
        let (g, labels, count) = labels_from(&["#.#.", ".#.#", "#.#.", ".#.#"]);
        assert_eq!(count, 8);
        for id in 0..8u32 {
            let p = outline(&labels, &g, id);
            assert_eq!(p.outer.len(), 4);
            assert!(p.holes.is_empty());
            let cell = labels.iter().position(|&l| l == id).unwrap_or(usize::MAX);
            let (c, r) = ((cell % 4) as f64, (cell / 4) as f64);
            assert_eq!(
                lattice(&g, &p.outer),
                vec![(c, r), (c + 1.0, r), (c + 1.0, r + 1.0), (c, r + 1.0)]
            );
            check_outline(&labels, &g, id);
        }
    }

    #[test]
    fn outline_l_shape_exact_world_coordinates() {
        let g = Grid {
            origin: DVec2::new(10.0, -5.0),
            cell: 0.5,
            width: 3,
            height: 2,
        };
        let mask = [true, true, true, true, false, false];
        let (labels, count) = label(&mask, &g);
        assert_eq!(count, 1);
        let p = outline(&labels, &g, 0);
        let expected = vec![
            [10.0, -5.0],
            [11.5, -5.0],
            [11.5, -4.5],
            [10.5, -4.5],
            [10.5, -4.0],
            [10.0, -4.0],
        ];
        assert_eq!(p.outer, expected);
        assert!(p.holes.is_empty());
        assert_eq!(p.area(), 1.0);
    }

    #[test]
    fn outline_of_missing_label_is_empty() {
        let (g, labels, _) = labels_from(&["#."]);
        let p = outline(&labels, &g, 7);
        assert!(p.outer.is_empty() && p.holes.is_empty());
        assert_eq!(p.area(), 0.0);
        assert!(!p.contains([0.0, 0.0]));
    }

    #[test]
    fn deepest_matches_brute_force() {
        let mut rng = Rng(0xfeed_face_0bad_c0de);
        for _ in 0..80 {
            let (g, mask) = random_case(&mut rng);
            let (labels, count) = label(&mask, &g);
            for id in 0..count as u32 {
                let own: Vec<bool> = labels.iter().map(|&l| l == id).collect();
                let d = brute_distance(&own, &g);
                let mut best = (usize::MAX, f64::NEG_INFINITY);
                for (i, &di) in d.iter().enumerate() {
                    if own[i] && di > best.1 + 1e-12 {
                        best = (i, di);
                    }
                }
                let got = deepest(&labels, &g, id);
                let Some((cell, margin)) = got else {
                    panic!("label {id} has cells");
                };
                assert_eq!(cell, best.0);
                assert!((margin - (best.1 - 0.5 * g.cell)).abs() < 1e-9);
            }
            assert_eq!(deepest(&labels, &g, count as u32), None);
        }
    }

    #[test]
    fn deepest_of_solid_square_is_its_centre() {
        let (g, labels, _) = labels_from(&[
            ".......", ".#####.", ".#####.", ".#####.", ".#####.", ".#####.", ".......",
        ]);
        let centre = 3 * 7 + 3;
        assert_eq!(deepest(&labels, &g, 0), Some((centre, 2.5 * g.cell)));
        // The same square filling its whole grid: the ring outside the grid is the edge.
        let g5 = grid(5, 5, 0.3);
        let all = vec![0u32; 25];
        let (cell, margin) = deepest(&all, &g5, 0).unwrap_or((usize::MAX, 0.0));
        assert_eq!(cell, 12);
        assert!((margin - 2.5 * 0.3).abs() < 1e-12);
    }

    /// Length of the move from `u` to `v` if allowed, by the rules of `routes`.
    fn brute_move(g: &Grid, ground: &[f32], u: usize, v: usize, max_step: f32) -> Option<f64> {
        let (cu, ru) = ((u % g.width) as i64, (u / g.width) as i64);
        let (cv, rv) = ((v % g.width) as i64, (v / g.width) as i64);
        let (dc, dr) = (cv - cu, rv - ru);
        if dc.abs().max(dr.abs()) != 1 {
            return None;
        }
        let near = |c: i64, r: i64| {
            let h = ground[(r * g.width as i64 + c) as usize];
            !h.is_nan() && !ground[u].is_nan() && (h - ground[u]).abs() <= max_step
        };
        if !near(cv, rv) {
            return None;
        }
        if dc != 0 && dr != 0 {
            (near(cu + dc, ru) && near(cu, ru + dr)).then_some(g.cell * 2f64.sqrt())
        } else {
            Some(g.cell)
        }
    }

    fn bellman_ford(
        g: &Grid,
        ground: &[f32],
        cover: &[bool],
        start: usize,
        step: f32,
        wgt: f64,
    ) -> Vec<f64> {
        let n = g.len();
        let mut cost = vec![f64::INFINITY; n];
        if ground[start].is_nan() {
            return cost;
        }
        cost[start] = 0.0;
        let mut changed = true;
        while changed {
            changed = false;
            for u in 0..n {
                if !cost[u].is_finite() {
                    continue;
                }
                for v in 0..n {
                    if let Some(len) = brute_move(g, ground, u, v, step) {
                        let c = cost[u] + if cover[v] { len } else { len * (1.0 + wgt) };
                        if c < cost[v] - 1e-12 {
                            cost[v] = c;
                            changed = true;
                        }
                    }
                }
            }
        }
        cost
    }

    fn check_routes_against_brute_force(rng: &mut Rng, heights: &[f32]) {
        let g = grid(1 + rng.below(9), 1 + rng.below(9), CELLS[rng.below(4)]);
        let ground: Vec<f32> = (0..g.len())
            .map(|_| {
                if rng.unit() < 0.15 {
                    f32::NAN
                } else {
                    heights[rng.below(heights.len())]
                }
            })
            .collect();
        let cover = random_mask(rng, g.len(), 0.5);
        let start = rng.below(g.len());
        let wgt = [0.0, 0.5, 3.0][rng.below(3)];
        let r = routes(&g, &ground, &cover, start, 0.5, wgt);
        let slow = bellman_ford(&g, &ground, &cover, start, 0.5, wgt);
        for v in 0..g.len() {
            let (a, b) = (r.cost[v], slow[v]);
            assert!(a == b || (a - b).abs() < 1e-9, "{a} vs {b}");
            assert_eq!(r.reached(v), b.is_finite());
            if v == start || !b.is_finite() {
                assert_eq!(r.parent[v], NONE);
                continue;
            }
            let u = r.parent[v] as usize;
            let len = brute_move(&g, &ground, u, v, 0.5);
            let Some(len) = len else {
                panic!("parent move {u}->{v} not allowed");
            };
            let step = if cover[v] { len } else { len * (1.0 + wgt) };
            assert!((r.cost[u] + step - a).abs() < 1e-9);
            let path = r.path_to(v).unwrap_or_default();
            assert_eq!((path.first(), path.last()), (Some(&start), Some(&v)));
        }
    }

    #[test]
    fn routes_match_bellman_ford_on_flat_ground() {
        let mut rng = Rng(0x5555_aaaa_3333_cccc);
        for _ in 0..60 {
            check_routes_against_brute_force(&mut rng, &[0.0]);
        }
    }

    #[test]
    fn routes_match_bellman_ford_on_stepped_ground() {
        let mut rng = Rng(0x7777_1111_eeee_2222);
        for _ in 0..60 {
            check_routes_against_brute_force(&mut rng, &[0.0, 0.3, 0.6, 1.2]);
        }
    }

    #[test]
    fn routes_detour_through_cover_when_exposure_is_expensive() {
        // 9 x 7 cells, all covered except an exposed block x 2..=6, z 1..=5.
        let g = grid(9, 7, 1.0);
        let ground = vec![0.0f32; g.len()];
        let cover: Vec<bool> = (0..g.len())
            .map(|i| {
                let (c, r) = (i % 9, i / 9);
                !((2..=6).contains(&c) && (1..=5).contains(&r))
            })
            .collect();
        let (start, goal) = (3 * 9, 3 * 9 + 8);
        let straight = routes(&g, &ground, &cover, start, 0.1, 0.0);
        assert_eq!(straight.path_to(goal), Some((start..=goal).collect()));
        assert_eq!(straight.cost[goal], 8.0);
        let careful = routes(&g, &ground, &cover, start, 0.1, 100.0);
        let path = careful.path_to(goal).unwrap_or_default();
        assert!(path.len() > 9);
        assert!(path.iter().all(|&i| cover[i]));
        assert!(careful.cost[goal] < 20.0);
    }

    #[test]
    fn routes_step_higher_than_max_step_blocks() {
        let g = grid(5, 3, 1.0);
        let ground: Vec<f32> = (0..g.len())
            .map(|i| if i % 5 == 2 { 1.0 } else { 0.0 })
            .collect();
        let cover = vec![true; g.len()];
        let blocked = routes(&g, &ground, &cover, 0, 0.5, 0.0);
        assert!(!blocked.reached(4));
        assert!(!blocked.reached(2));
        assert!(blocked.reached(1 + 2 * 5));
        assert_eq!(blocked.path_to(4), None);
        let open = routes(&g, &ground, &cover, 0, 1.0, 0.0);
        assert_eq!(open.path_to(4), Some(vec![0, 1, 2, 3, 4]));
    }

    #[test]
    fn routes_do_not_cut_corners() {
        let g = grid(2, 2, 1.0);
        let cover = vec![true; 4];
        // Cell 1 = (1, 0) has no ground: (0, 0) -> (1, 1) must go around through (0, 1).
        let ground = [0.0, f32::NAN, 0.0, 0.0];
        let r = routes(&g, &ground, &cover, 0, 0.5, 0.0);
        assert_eq!(r.path_to(3), Some(vec![0, 2, 3]));
        assert_eq!(r.cost[3], 2.0);
        assert!(!r.reached(1));
        // Cell 1 has ground but is a step too high from the start of the diagonal.
        let ground = [0.0, 2.0, 0.0, 0.0];
        let r = routes(&g, &ground, &cover, 0, 0.5, 0.0);
        assert_eq!(r.path_to(3), Some(vec![0, 2, 3]));
        // With every side walkable the diagonal is taken.
        let r = routes(&g, &[0.0; 4], &cover, 0, 0.5, 0.0);
        assert_eq!(r.path_to(3), Some(vec![0, 3]));
        assert!((r.cost[3] - 2f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn routes_start_cases() {
        let g = grid(3, 1, 1.0);
        let cover = vec![false; 3];
        let r = routes(&g, &[0.0; 3], &cover, 1, 0.5, 1.0);
        assert_eq!(r.path_to(1), Some(vec![1]));
        assert_eq!(r.parent[1], NONE);
        assert_eq!(r.cost, vec![2.0, 0.0, 2.0]);
        assert_eq!(r.path_to(99), None);
        assert!(!r.reached(99));
        let none = routes(&g, &[0.0, f32::NAN, 0.0], &cover, 1, 0.5, 1.0);
        assert!(none.cost.iter().all(|c| c.is_infinite()));
        assert!(none.parent.iter().all(|&p| p == NONE));
        assert_eq!(none.path_to(1), None);
        let outside = routes(&g, &[0.0; 3], &cover, 3, 0.5, 1.0);
        assert!(outside.cost.iter().all(|c| c.is_infinite()));
    }

    #[test]
    fn grid_centre_and_len() {
        let g = grid(4, 3, 0.5);
        assert_eq!(g.len(), 12);
        assert!(!g.is_empty());
        assert!(grid(0, 3, 0.5).is_empty());
        assert_eq!(g.centre(5), DVec2::new(-3.25 + 0.75, 7.5 + 0.75));
    }
}
