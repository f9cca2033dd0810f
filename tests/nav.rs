//! The nav graph (`sightline::nav`), proved on scenes with known answers and checked by an
//! oracle that shares no code with `src/nav/walk.rs`:
//!
//! - hand-made scenes: a wall whose only way through is a 0.9 m doorway off the 2 m grid
//!   (axis-aligned and diagonal walls), a wall with a window, floors joined by stairs off the
//!   grid lines and by a 30 degree ramp but not by a 50 degree slope, low ceilings;
//! - the built-in sniper and urban levels and the Recast dungeon: connectivity facts;
//! - an independent walk oracle: no edge of those graphs goes through a wall or off a ledge;
//! - the GPU and CPU build the same graph;
//! - JSON and CSV files round trip and bad files are named; `.slt` storage with shards;
//! - bad input returns errors that say what to change.

#[path = "common/mod.rs"]
mod common;
#[path = "common/gpu.rs"]
mod gpu;

use glam::{Affine3A, Vec2, Vec3, Vec3A};
use sightline::nav::{
    self, CostParams, Edge, EdgeKinds, NavGraph, NavParams, NavReport, WalkSurface,
};
use sightline::scene::procedural;
use sightline::tables::{self, PrecomputeParams, TableFile};
use sightline::underlay::{underlay, Cover};
use sightline::{
    ground, Engine, Error, Mask, Material, MaterialFlags, Mesh, Mobility, Ray, Scene, Segment,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;
use std::time::Instant;

// ---------------------------------------------------------------------------------------------
// Hand-made scenes

/// Every surface is solid and walkable (as the built-in levels' walls are): tops of walls,
/// sills and platforms are candidates the builder itself must reject or connect.
fn materials() -> Vec<Material> {
    vec![Material::new(
        "ground",
        MaterialFlags::SOLID | MaterialFlags::WALKABLE,
        0.4,
    )]
}

fn scene_of(mesh: Mesh) -> Scene {
    let mut scene = Scene::new(materials());
    scene
        .add_object(mesh, Affine3A::IDENTITY, Mobility::Static)
        .unwrap();
    scene
}

/// A closed hexahedron (planar faces, pointing outwards) from 8 corners indexed
/// `x | y << 1 | z << 2` (bit set = the far side on that axis).
fn hexa(mesh: &mut Mesh, c: [Vec3; 8]) {
    hexa_open(mesh, c, &[]);
}

/// Faces of [`hexa_open`]: -x, +x, -y, +y, -z, +z.
const FACES: [[usize; 4]; 6] = [
    [0, 4, 6, 2],
    [1, 3, 7, 5],
    [0, 1, 5, 4],
    [2, 6, 7, 3],
    [0, 2, 3, 1],
    [4, 5, 7, 6],
];

/// [`hexa`] without the faces listed in `open` (indices into [`FACES`]).
fn hexa_open(mesh: &mut Mesh, c: [Vec3; 8], open: &[usize]) {
    for (k, [a, b, cc, d]) in FACES.into_iter().enumerate() {
        if !open.contains(&k) {
            mesh.push_quad(c[a], c[b], c[cc], c[d], 0);
        }
    }
}

/// The corners of the box `lo..hi`, as [`hexa`] indexes them.
fn corners(lo: Vec3, hi: Vec3) -> [Vec3; 8] {
    std::array::from_fn(|k| {
        Vec3::new(
            if k & 1 == 0 { lo.x } else { hi.x },
            if k & 2 == 0 { lo.y } else { hi.y },
            if k & 4 == 0 { lo.z } else { hi.z },
        )
    })
}

/// A closed box `lo..hi` in the frame `xf`.
fn cuboid(mesh: &mut Mesh, lo: Vec3, hi: Vec3, xf: Affine3A) {
    hexa(mesh, corners(lo, hi).map(|c| xf.transform_point3(c)));
}

/// The 20 m x 20 m floor slab (top at y = 0) over x and z in `-10..10`, or a part of it.
fn floor(mesh: &mut Mesh, z: [f32; 2]) {
    cuboid(
        mesh,
        Vec3::new(-10.0, -0.2, z[0]),
        Vec3::new(10.0, 0.0, z[1]),
        Affine3A::IDENTITY,
    );
}

/// A straight wall standing on y = 0 with one rectangular hole. Local frame: `v` along the
/// wall from `origin` (direction `(cos a, 0, sin a)`), `u` across it.
#[derive(Clone, Copy, Debug)]
struct Wall {
    origin: Vec3,
    angle_deg: f32,
    length: f32,
    thickness: f32,
    height: f32,
    /// The hole: along the wall `v0..v1`, from `bottom` to `top` above the floor.
    hole: [f32; 4],
}

impl Wall {
    fn door(origin: Vec3, angle_deg: f32, length: f32, centre: f32, width: f32) -> Wall {
        Wall {
            origin,
            angle_deg,
            length,
            thickness: 0.3,
            height: 3.0,
            hole: [centre - 0.5 * width, centre + 0.5 * width, 0.0, 2.2],
        }
    }
    fn along(&self) -> Vec3 {
        let a = self.angle_deg.to_radians();
        Vec3::new(a.cos(), 0.0, a.sin())
    }
    fn across(&self) -> Vec3 {
        let a = self.angle_deg.to_radians();
        Vec3::new(-a.sin(), 0.0, a.cos())
    }
    /// `(v, u)`: along and across the wall.
    fn local(&self, p: Vec3) -> (f32, f32) {
        let q = p - self.origin;
        (q.dot(self.along()), q.dot(self.across()))
    }
    fn build(&self, mesh: &mut Mesh) {
        let xf = Affine3A::from_cols(
            Vec3A::from(self.along()),
            Vec3A::Y,
            Vec3A::from(self.across()),
            Vec3A::from(self.origin),
        );
        let (h, t, l) = (self.height, 0.5 * self.thickness, 0.5 * self.length);
        let [v0, v1, bottom, top] = self.hole;
        let mut piece = |a: f32, b: f32, y0: f32, y1: f32| {
            if b > a && y1 > y0 {
                cuboid(mesh, Vec3::new(a, y0, -t), Vec3::new(b, y1, t), xf);
            }
        };
        piece(-l, v0, 0.0, h);
        piece(v1, l, 0.0, h);
        piece(v0, v1, 0.0, bottom);
        piece(v0, v1, top, h);
    }
}

fn wall_scene(wall: &Wall) -> Scene {
    let mut mesh = Mesh::default();
    floor(&mut mesh, [-10.0, 10.0]);
    wall.build(&mut mesh);
    scene_of(mesh)
}

/// How two floors are joined: the platform (top at y = 3, z in 4..10) and the ground floor
/// (z in -10..4).
#[derive(Clone, Copy, Debug)]
enum Connector {
    /// 12 steps of 0.25 m x 0.3 m, 1.2 m wide, x in 1.37..2.57 (off the 2 m and 0.25 m
    /// grid lines), foot at z = 0.4.
    Stair,
    /// A 0.3 m thick slab sloping at this many degrees, 1.6 m wide, x in 1.37..2.97.
    Slope(f32),
}

const PLATFORM_Y: f32 = 3.0;
const PLATFORM_Z: f32 = 4.0;

fn platform_scene(connector: Connector) -> Scene {
    let mut mesh = Mesh::default();
    floor(&mut mesh, [-10.0, PLATFORM_Z]);
    cuboid(
        &mut mesh,
        Vec3::new(-10.0, -0.2, PLATFORM_Z),
        Vec3::new(10.0, PLATFORM_Y, 10.0),
        Affine3A::IDENTITY,
    );
    match connector {
        Connector::Stair => {
            let foot = PLATFORM_Z - 12.0 * 0.3;
            for i in 0..12 {
                cuboid(
                    &mut mesh,
                    Vec3::new(1.37, 0.0, foot + 0.3 * i as f32),
                    Vec3::new(2.57, 0.25 * (i + 1) as f32, foot + 0.3 * (i + 1) as f32),
                    Affine3A::IDENTITY,
                );
            }
        }
        Connector::Slope(deg) => {
            let run = PLATFORM_Y / deg.to_radians().tan();
            hexa(
                &mut mesh,
                std::array::from_fn(|k| {
                    let far = k & 4 != 0;
                    let top = if far { PLATFORM_Y } else { 0.0 };
                    Vec3::new(
                        if k & 1 == 0 { 1.37 } else { 2.97 },
                        if k & 2 == 0 { top - 0.3 } else { top },
                        if far { PLATFORM_Z } else { PLATFORM_Z - run },
                    )
                }),
            );
        }
    }
    scene_of(mesh)
}

/// The floor with a slab whose underside is `clearance` above it over x in -3.3..3.7,
/// z in -3.1..3.9 (off the grid).
const SLAB: [f32; 4] = [-3.3, 3.7, -3.1, 3.9];

fn ceiling_scene(clearance: f32) -> Scene {
    let mut mesh = Mesh::default();
    floor(&mut mesh, [-10.0, 10.0]);
    cuboid(
        &mut mesh,
        Vec3::new(SLAB[0], clearance, SLAB[2]),
        Vec3::new(SLAB[1], clearance + 0.2, SLAB[3]),
        Affine3A::IDENTITY,
    );
    scene_of(mesh)
}

fn under_slab(p: Vec3, margin: f32) -> bool {
    p.x > SLAB[0] + margin
        && p.x < SLAB[1] - margin
        && p.z > SLAB[2] + margin
        && p.z < SLAB[3] - margin
}

// ---------------------------------------------------------------------------------------------
// Graph helpers

fn generate(engine: &Engine, scene: &Scene, params: &NavParams) -> (NavGraph, NavReport) {
    nav::generate(engine, scene, params, &CostParams::standard())
        .unwrap_or_else(|e| panic!("nav::generate failed: {e}"))
}

fn radius() -> f32 {
    NavParams::standard().agent().radius
}

fn summary(name: &str, g: &NavGraph, r: &NavReport) -> String {
    let c = g.components();
    format!(
        "{name}: {} nodes ({} grid, {} passage), {} edges ({} stairs, {} water, {} crouch), \
         {} components (largest {:.1} %, sizes {:?}), {} walks, {} failed straight walks, {} rays, \
         {:.2} s",
        g.len(),
        r.grid_nodes,
        r.passage_nodes,
        g.edges().len(),
        r.stairs_edges,
        r.water_edges,
        r.crouch_edges,
        c.sizes.len(),
        100.0 * c.largest_share(),
        &c.sizes[..c.sizes.len().min(12)],
        r.walks,
        r.failed_walks,
        r.rays,
        r.seconds
    )
}

fn horizontal(a: Vec3, b: Vec3) -> f32 {
    glam::Vec2::new(a.x - b.x, a.z - b.z).length()
}

/// Whether node `from` reaches a node satisfying `goal` through nodes satisfying `keep`.
fn reaches(
    g: &NavGraph,
    from: &[u32],
    keep: impl Fn(Vec3) -> bool,
    goal: impl Fn(Vec3) -> bool,
) -> bool {
    let mut seen = vec![false; g.len()];
    let mut stack: Vec<u32> = from.to_vec();
    for &s in from {
        seen[s as usize] = true;
    }
    while let Some(u) = stack.pop() {
        if goal(g.nodes()[u as usize]) {
            return true;
        }
        for &(v, _) in g.neighbours(u) {
            if !seen[v as usize] && keep(g.nodes()[v as usize]) {
                seen[v as usize] = true;
                stack.push(v);
            }
        }
    }
    false
}

/// What edges and nodes do inside a wall's slab (`|u| <= thickness / 2`).
#[derive(Debug, Default)]
struct WallCheck {
    /// Edges whose ends lie on opposite sides of the wall's middle plane (`u < 0` and
    /// `u >= 0`).
    crossings: usize,
    /// Edges and nodes with any part inside the slab.
    inside: usize,
    /// Smallest distance (along the wall) from a part inside the slab to the hole's sides.
    min_margin: f32,
    /// Parts inside the slab closer than `radius - tolerance` to a side, or outside the hole.
    violations: Vec<String>,
}

fn check_wall(g: &NavGraph, w: &Wall, tolerance: f32) -> WallCheck {
    let half = 0.5 * w.thickness;
    let [h0, h1, ..] = w.hole;
    let need = radius() - tolerance;
    let mut out = WallCheck {
        min_margin: f32::INFINITY,
        ..WallCheck::default()
    };
    let judge = |what: String, v: f32, out: &mut WallCheck| {
        let margin = (v - h0).min(h1 - v);
        out.min_margin = out.min_margin.min(margin);
        if margin < need {
            out.violations.push(format!(
                "{what} is inside the wall {margin:.3} m from the hole's side (v = {v:.3}, hole \
                 {h0:.3}..{h1:.3})"
            ));
        }
    };
    for (i, &p) in g.nodes().iter().enumerate() {
        let (v, u) = w.local(p);
        if u.abs() <= half {
            out.inside += 1;
            judge(format!("node {i} at {p}"), v, &mut out);
        }
    }
    for e in g.edges() {
        let (a, b) = (g.nodes()[e.a as usize], g.nodes()[e.b as usize]);
        let ((va, ua), (vb, ub)) = (w.local(a), w.local(b));
        if (ua < 0.0) != (ub < 0.0) {
            out.crossings += 1;
        }
        // The part of the edge inside the slab, as a range of the way from a to b.
        let (t0, t1) = if (ub - ua).abs() < 1e-9 {
            if ua.abs() <= half {
                (0.0, 1.0)
            } else {
                continue;
            }
        } else {
            let (s0, s1) = ((-half - ua) / (ub - ua), (half - ua) / (ub - ua));
            (s0.min(s1).max(0.0), s0.max(s1).min(1.0))
        };
        if t0 > t1 {
            continue;
        }
        out.inside += 1;
        for t in [t0, t1] {
            judge(
                format!("edge {}-{} ({a} to {b}, {:?})", e.a, e.b, e.kinds),
                va + (vb - va) * t,
                &mut out,
            );
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// 1a. Doorways off the grid

#[test]
fn an_off_grid_doorway_is_the_only_way_through_a_wall_and_every_crossing_edge_uses_it() {
    let engine = Engine::cpu();
    let params = NavParams::standard();
    let straight = Vec3::new(0.0, 0.0, 0.3);
    let diagonal = Vec3::new(0.5, 0.0, 0.0);
    let cases = [
        Wall::door(straight, 0.0, 20.0, 0.37, 0.9),
        Wall::door(straight, 0.0, 20.0, -3.13, 0.9),
        Wall::door(straight, 0.0, 20.0, 2.71, 0.9),
        Wall::door(straight, 0.0, 20.0, 6.05, 0.9),
        Wall::door(diagonal, 45.0, 30.0, 0.37, 0.9),
        Wall::door(diagonal, 45.0, 30.0, -4.21, 0.9),
        Wall::door(diagonal, 45.0, 30.0, 3.3, 0.9),
        Wall::door(Vec3::new(0.0, 0.0, -0.6), 20.0, 24.0, 1.13, 0.9),
    ];
    let mut failures = Vec::new();
    for w in &cases {
        let scene = wall_scene(w);
        let (g, r) = generate(&engine, &scene, &params);
        let name = format!(
            "wall at {} deg, door centre {} m along it",
            w.angle_deg,
            0.5 * (w.hole[0] + w.hole[1])
        );
        let c = g.components();
        let half = 0.5 * w.thickness;
        let sides = [
            g.nodes().iter().filter(|&&p| w.local(p).1 < -half).count(),
            g.nodes().iter().filter(|&&p| w.local(p).1 > half).count(),
        ];
        let check = check_wall(&g, w, 0.03);
        println!(
            "{}\n  nodes per side {sides:?}, {} edges cross the wall's middle plane, {} edges or \
             nodes inside the wall, smallest margin to a jamb {:.3} m (radius {})",
            summary(&name, &g, &r),
            check.crossings,
            check.inside,
            check.min_margin,
            radius()
        );
        if sides[0] < 20 || sides[1] < 20 {
            failures.push(format!("{name}: nodes per side {sides:?}"));
        }
        if c.sizes.len() != 1 {
            failures.push(format!(
                "{name}: {} components, sizes {:?} (want one: the doorway joins both sides)",
                c.sizes.len(),
                c.sizes
            ));
        }
        if check.crossings == 0 {
            failures.push(format!("{name}: no edge crosses the wall"));
        }
        for v in check.violations.iter().take(5) {
            failures.push(format!("{name}: {v}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// 1b. A window is no way through.

#[test]
fn a_window_with_a_sill_lets_no_edge_through_and_leaves_one_component_per_side() {
    let engine = Engine::cpu();
    let mut failures = Vec::new();
    for (origin, angle, length) in [
        (Vec3::new(0.0, 0.0, 0.3), 0.0, 20.0),
        (Vec3::new(0.5, 0.0, 0.0), 45.0, 30.0),
    ] {
        let w = Wall {
            hole: [0.37 - 1.0, 0.37 + 1.0, 1.0, 2.2],
            ..Wall::door(origin, angle, length, 0.0, 1.0)
        };
        let scene = wall_scene(&w);
        let (g, r) = generate(&engine, &scene, &NavParams::standard());
        let name = format!("wall at {angle} deg with a 2 m window");
        let c = g.components();
        let check = check_wall(&g, &w, 0.03);
        println!(
            "{}\n  {} edges cross the wall's middle plane, {} edges or nodes inside the wall",
            summary(&name, &g, &r),
            check.crossings,
            check.inside
        );
        if check.crossings > 0 || check.inside > 0 {
            failures.push(format!(
                "{name}: {} edges cross the wall, {} edges or nodes inside it: {:?}",
                check.crossings,
                check.inside,
                &check.violations[..check.violations.len().min(5)]
            ));
        }
        if c.sizes.len() != 2 {
            failures.push(format!(
                "{name}: {} components, sizes {:?} (want two, one per side)",
                c.sizes.len(),
                c.sizes
            ));
        }
        // Each component lies on one side only.
        let mut side_of: HashMap<u32, bool> = HashMap::new();
        for (i, &p) in g.nodes().iter().enumerate() {
            let side = w.local(p).1 > 0.0;
            if *side_of.entry(c.label[i]).or_insert(side) != side {
                failures.push(format!(
                    "{name}: component {} holds nodes on both sides (node {i} at {p})",
                    c.label[i]
                ));
                break;
            }
        }
        if let Some(p) = g.nodes().iter().find(|p| p.y.abs() > 0.1) {
            failures.push(format!(
                "{name}: a node off the floor at {p} (on the sill?)"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// 1c. Stairs and slopes between floors.

/// Nodes on the ground floor and on the platform's top, and which components hold both.
fn floors_joined(name: &str, scene: &Scene) -> (NavGraph, usize, usize, bool) {
    let (g, r) = generate(&Engine::cpu(), scene, &NavParams::standard());
    println!("{}", summary(name, &g, &r));
    let c = g.components();
    let ground: Vec<usize> = (0..g.len())
        .filter(|&i| g.nodes()[i].y.abs() < 0.1)
        .collect();
    let top: Vec<usize> = (0..g.len())
        .filter(|&i| (g.nodes()[i].y - PLATFORM_Y).abs() < 0.1)
        .collect();
    let joined = ground
        .iter()
        .any(|&i| top.iter().any(|&j| c.label[i] == c.label[j]));
    (g, ground.len(), top.len(), joined)
}

/// Nodes strictly inside the closed platform block (below its top, above its bottom).
fn inside_platform(g: &NavGraph) -> Vec<Vec3> {
    g.nodes()
        .iter()
        .copied()
        .filter(|p| p.z > PLATFORM_Z + 0.01 && p.y < PLATFORM_Y - 0.1 && p.y > -0.2 - 0.1)
        .collect()
}

#[test]
fn a_stair_between_grid_lines_joins_two_floors_with_stairs_edges() {
    let scene = platform_scene(Connector::Stair);
    let (g, ground, top, joined) = floors_joined("12-step stair at x 1.37..2.57", &scene);
    let stairs = g
        .edges()
        .iter()
        .filter(|e| e.kinds.contains(EdgeKinds::STAIRS))
        .count();
    let on_flight = g
        .nodes()
        .iter()
        .filter(|p| p.y > 0.1 && p.y < PLATFORM_Y - 0.1)
        .count();
    let c = g.components();
    println!(
        "  {ground} ground nodes, {top} platform nodes, {on_flight} on the flight, {stairs} \
         stairs edges, components {:?}",
        c.sizes
    );
    assert!(
        ground > 50 && top > 20,
        "{ground} ground and {top} platform nodes"
    );
    assert!(joined, "the stair does not join the floors");
    assert!(stairs >= 1, "no edge is marked STAIRS");
    let inside = inside_platform(&g);
    assert!(
        inside.is_empty(),
        "{} nodes inside the solid platform block, e.g. {:?}",
        inside.len(),
        &inside[..inside.len().min(5)]
    );
    assert_eq!(c.sizes.len(), 1, "components {:?}", c.sizes);
}

#[test]
fn a_30_degree_ramp_joins_two_floors_and_a_50_degree_slope_does_not() {
    let (g, ground, top, joined) =
        floors_joined("30 degree ramp", &platform_scene(Connector::Slope(30.0)));
    let c = g.components();
    let on_ramp = g
        .nodes()
        .iter()
        .filter(|p| p.y > 0.1 && p.y < PLATFORM_Y - 0.1 && p.z < PLATFORM_Z)
        .count();
    println!(
        "  {ground} ground, {top} platform, {on_ramp} ramp nodes, components {:?}",
        c.sizes
    );
    let (steep, steep_ground, steep_top, steep_joined) =
        floors_joined("50 degree slope", &platform_scene(Connector::Slope(50.0)));
    let on_slope = steep
        .nodes()
        .iter()
        .filter(|p| p.y > 0.35 && p.y < PLATFORM_Y - 0.35 && p.z < PLATFORM_Z)
        .count();
    println!("  {steep_ground} ground, {steep_top} platform, {on_slope} slope nodes");
    assert!(ground > 50 && top > 20 && on_ramp > 0);
    assert!(joined, "the 30 degree ramp does not join the floors");
    assert!(steep_ground > 50 && steep_top > 20);
    assert!(!steep_joined, "a 50 degree slope joins the floors");
    assert_eq!(on_slope, 0, "nodes on a 50 degree slope");
    let inside = inside_platform(&g);
    assert!(
        inside.is_empty(),
        "{} nodes inside the solid platform block, e.g. {:?}",
        inside.len(),
        &inside[..inside.len().min(5)]
    );
    assert_eq!(c.sizes.len(), 1, "components {:?}", c.sizes);
}

/// A closed block taller than a crouching body: its inside is no place to stand, and its
/// bottom face (which a downward ray from inside hits, facing it) is no floor.
#[test]
fn no_node_stands_inside_a_closed_solid_block() {
    let mut mesh = Mesh::default();
    floor(&mut mesh, [-10.0, 10.0]);
    let (lo, hi) = (Vec3::new(-3.3, 0.0, -2.9), Vec3::new(3.7, 2.5, 4.1));
    cuboid(&mut mesh, lo, hi, Affine3A::IDENTITY);
    let (g, r) = generate(&Engine::cpu(), &scene_of(mesh), &NavParams::standard());
    println!(
        "{}",
        summary("a 7 m x 7 m x 2.5 m block on the floor", &g, &r)
    );
    let inside: Vec<Vec3> = g
        .nodes()
        .iter()
        .copied()
        .filter(|p| p.x > lo.x && p.x < hi.x && p.z > lo.z && p.z < hi.z && p.y < hi.y - 0.1)
        .collect();
    let on_top = g
        .nodes()
        .iter()
        .filter(|p| (p.y - hi.y).abs() < 0.1)
        .count();
    println!(
        "  {} nodes inside the block, {on_top} on its top; e.g. {:?}",
        inside.len(),
        &inside[..inside.len().min(5)]
    );
    assert!(on_top >= 4, "{on_top} nodes on the block's top");
    assert!(
        inside.is_empty(),
        "{} nodes inside a closed solid block, e.g. {:?}",
        inside.len(),
        &inside[..inside.len().min(5)]
    );
}

// 1c'. Ground inside a solid: a closed solid sunk into the ground (the village's plateau), and
// one cut open where the scene ends (a terrain tile cut through a hill). The terrain under it
// lies inside the rock: no node, no waypoint, and no picture shows it under a roof.

/// What stands in the footprint `lo..hi` (x, z) of a solid whose flat top is at `top`.
#[derive(Debug)]
struct SolidCheck {
    /// Nav graph nodes below the top (inside the solid).
    nodes_inside: Vec<Vec3>,
    /// Nav graph nodes on the top.
    nodes_on_top: usize,
    /// Table waypoints below the top.
    waypoints_inside: Vec<Vec3>,
    /// Underlay pixels over the footprint (shrunk by 2 m) drawn under a roof, or not at the top.
    pixels_not_top: Vec<(Vec2, Cover, f32)>,
}

fn check_solid(
    engine: &Engine,
    name: &str,
    scene: &Scene,
    lo: Vec2,
    hi: Vec2,
    top: f32,
) -> SolidCheck {
    let over = |p: Vec3| p.x > lo.x && p.x < hi.x && p.z > lo.y && p.z < hi.y;
    let (g, r) = generate(engine, scene, &NavParams::standard());
    println!("{}", summary(name, &g, &r));
    let nodes_inside = g
        .nodes()
        .iter()
        .copied()
        .filter(|&p| over(p) && p.y < top - 0.1)
        .collect();
    let nodes_on_top = g
        .nodes()
        .iter()
        .filter(|&&p| over(p) && (p.y - top).abs() < 0.1)
        .count();
    let sample = tables::sample_floors(engine, scene, &tables::SampleParams::standard()).unwrap();
    let waypoints_inside = sample
        .points
        .iter()
        .copied()
        .filter(|&p| over(p) && p.y < top - 0.1)
        .collect();
    // 2 m in from the edges: the village plateau's west face is a slope 1.73 m wide.
    let (a, b) = (lo + 2.0, hi - 2.0);
    let px = 0.5;
    let size = ((b - a) / px).as_uvec2();
    let u = underlay(engine, scene, a, px, size.x as usize, size.y as usize).unwrap();
    let pixels_not_top = (0..u.width * u.height)
        .filter(|&i| u.cover[i] != Cover::Open || (u.elevation[i] - top).abs() > 1e-3)
        .map(|i| {
            let c = ground::cell_centre(a, px, u.width, i);
            (c, u.cover[i], u.elevation[i])
        })
        .collect();
    let check = SolidCheck {
        nodes_inside,
        nodes_on_top,
        waypoints_inside,
        pixels_not_top,
    };
    println!(
        "  {name}: {} nodes and {} waypoints inside, {} nodes on top, {} of {} pixels over it not \
         drawn as its open top",
        check.nodes_inside.len(),
        check.waypoints_inside.len(),
        check.nodes_on_top,
        check.pixels_not_top.len(),
        u.width * u.height
    );
    check
}

fn assert_nothing_inside(c: &SolidCheck, min_on_top: usize) {
    let first = |v: &[Vec3]| v[..v.len().min(5)].to_vec();
    assert!(
        c.nodes_inside.is_empty(),
        "{} nodes inside the solid, e.g. {:?}",
        c.nodes_inside.len(),
        first(&c.nodes_inside)
    );
    assert!(
        c.waypoints_inside.is_empty(),
        "{} waypoints inside the solid, e.g. {:?}",
        c.waypoints_inside.len(),
        first(&c.waypoints_inside)
    );
    assert!(
        c.pixels_not_top.is_empty(),
        "{} pixels over the solid drawn otherwise than its open top, e.g. {:?}",
        c.pixels_not_top.len(),
        &c.pixels_not_top[..c.pixels_not_top.len().min(5)]
    );
    assert!(
        c.nodes_on_top >= min_on_top,
        "{} nodes on the solid's top",
        c.nodes_on_top
    );
}

/// The village's plateau (x 25..60, z -60..-25, top at y = 3) is a closed solid sunk 0.5 m into
/// the terrain, wider than any fixed reach of a sideways probe and touching the scene's bounds
/// on two sides: the terrain inside it is no floor.
#[test]
fn ground_inside_a_solid_is_not_a_floor() {
    let scene = procedural::village(1, 1);
    let c = check_solid(
        &Engine::cpu(),
        "village plateau",
        &scene,
        Vec2::new(25.0, -60.0),
        Vec2::new(60.0, -25.0),
        3.0,
    );
    // 17 x 18 nodes on the 2 m grid over the top.
    assert_nothing_inside(&c, 300);
}

/// The 20 m floor slab with a block `lo..hi` sunk 0.1 m into it, the faces listed in `open`
/// (indices into [`FACES`]) left out: a solid cut open where the scene's bounds cut it.
fn cut_block_scene(lo: Vec3, hi: Vec3, open: &[usize]) -> Scene {
    let mut mesh = Mesh::default();
    floor(&mut mesh, [-10.0, 10.0]);
    hexa_open(&mut mesh, corners(lo, hi), open);
    scene_of(mesh)
}

/// A solid cut open at the scene's bounds (a user's terrain tile cut through a hill): the rays
/// that leave the scene through the cut meet nothing, the others meet the solid from the back,
/// and the ground inside is still no floor; ground beside it and its top still are.
#[test]
fn ground_inside_a_solid_cut_open_at_the_scene_bounds_is_not_a_floor() {
    let engine = Engine::cpu();
    let top = 2.5;
    // A corner of the tile (open at +x and +z), and a ridge across it (open at -x and +x).
    let cases = [
        (
            "corner",
            Vec3::new(-4.0, -0.1, -4.0),
            Vec3::new(10.0, top, 10.0),
            [1, 5],
        ),
        (
            "ridge",
            Vec3::new(-10.0, -0.1, -3.0),
            Vec3::new(10.0, top, 3.0),
            [0, 1],
        ),
    ];
    for (name, lo, hi, open) in cases {
        let scene = cut_block_scene(lo, hi, &open);
        let (bounds_lo, bounds_hi) = scene.bounds().unwrap();
        assert_eq!(
            (bounds_lo.x, bounds_lo.z, bounds_hi.x, bounds_hi.z),
            (-10.0, -10.0, 10.0, 10.0),
            "{name}: the block ends where the scene does"
        );
        // Ground inside, up to the cut; ground around it; the top.
        let grid = |y: f32| {
            (0..40).flat_map(move |i| {
                (0..40).map(move |j| Vec3::new(-9.75 + 0.5 * i as f32, y, -9.75 + 0.5 * j as f32))
            })
        };
        let (x0, z0, x1, z1) = (lo.x, lo.z, hi.x, hi.z);
        let within = |p: Vec3, m: f32| p.x > x0 + m && p.x < x1 - m && p.z > z0 + m && p.z < z1 - m;
        let inside: Vec<Vec3> = grid(0.0).filter(|&p| within(p, 0.5)).collect();
        let around: Vec<Vec3> = grid(0.0).filter(|&p| !within(p, -1.0)).collect();
        let on_top: Vec<Vec3> = grid(top).filter(|&p| within(p, 0.5)).collect();
        for (what, points, want) in [
            ("inside", &inside, false),
            ("around", &around, true),
            ("on top", &on_top, true),
        ] {
            let (outside, _) = ground::outside_solids(&engine, &scene, points, 0.35).unwrap();
            let wrong: Vec<Vec3> = points
                .iter()
                .zip(&outside)
                .filter(|(_, &o)| o != want)
                .map(|(p, _)| *p)
                .collect();
            assert!(
                wrong.is_empty(),
                "{name}: {} of {} points {what} the block read as {}, e.g. {:?}",
                wrong.len(),
                points.len(),
                if want { "inside" } else { "outside" },
                &wrong[..wrong.len().min(5)]
            );
        }
        let c = check_solid(
            &engine,
            name,
            &scene,
            Vec2::new(x0, z0),
            Vec2::new(x1, z1),
            top,
        );
        assert_nothing_inside(&c, 4);
    }
}

// 1d. Low ceilings.

#[test]
fn a_ceiling_at_1_4_m_makes_crouch_edges_and_one_at_0_7_m_leaves_no_node_under_it() {
    let engine = Engine::cpu();
    let (g, r) = generate(&engine, &ceiling_scene(1.4), &NavParams::standard());
    println!("{}", summary("slab 1.4 m above the floor", &g, &r));
    let c = g.components();
    let on_floor: Vec<usize> = (0..g.len())
        .filter(|&i| g.nodes()[i].y.abs() < 0.1)
        .collect();
    let under: Vec<usize> = on_floor
        .iter()
        .copied()
        .filter(|&i| under_slab(g.nodes()[i], 0.0))
        .collect();
    let floor_labels: std::collections::BTreeSet<u32> =
        on_floor.iter().map(|&i| c.label[i]).collect();
    let (mut inside, mut inside_crouch, mut outside, mut outside_crouch) = (0, 0, 0, 0);
    for e in g.edges() {
        let (a, b) = (g.nodes()[e.a as usize], g.nodes()[e.b as usize]);
        if a.y.abs() > 0.1 || b.y.abs() > 0.1 {
            continue;
        }
        let crouch = e.kinds.contains(EdgeKinds::CROUCH);
        if under_slab(a, 0.0) && under_slab(b, 0.0) {
            inside += 1;
            inside_crouch += usize::from(crouch);
        } else if !under_slab(a, -radius() - 0.1) && !under_slab(b, -radius() - 0.1) {
            // Both ends (so the whole straight edge) stay clear of the slab's footprint.
            let clear = (0..=20).all(|k| !under_slab(a.lerp(b, k as f32 / 20.0), -radius() - 0.1));
            if clear {
                outside += 1;
                outside_crouch += usize::from(crouch);
            }
        }
    }
    println!(
        "  {} floor nodes, {} under the slab; edges under it {inside} ({inside_crouch} crouch), \
         clear of it {outside} ({outside_crouch} crouch); floor components {floor_labels:?}",
        on_floor.len(),
        under.len()
    );
    assert!(under.len() >= 9, "{} nodes under the slab", under.len());
    assert!(inside >= 10, "{inside} edges under the slab");
    assert_eq!(
        inside_crouch, inside,
        "edges under a 1.4 m ceiling must be CROUCH"
    );
    assert!(outside > 100);
    assert_eq!(outside_crouch, 0, "edges in the open marked CROUCH");
    assert_eq!(
        floor_labels.len(),
        1,
        "the floor (under the slab and around it) is not one component"
    );

    let (g, r) = generate(&engine, &ceiling_scene(0.7), &NavParams::standard());
    println!("{}", summary("slab 0.7 m above the floor", &g, &r));
    let under: Vec<Vec3> = g
        .nodes()
        .iter()
        .copied()
        .filter(|&p| p.y.abs() < 0.1 && under_slab(p, 0.01))
        .collect();
    let through = g
        .edges()
        .iter()
        .filter(|e| {
            let (a, b) = (g.nodes()[e.a as usize], g.nodes()[e.b as usize]);
            a.y.abs() < 0.1
                && b.y.abs() < 0.1
                && (0..=20).any(|k| under_slab(a.lerp(b, k as f32 / 20.0), 0.01))
        })
        .count();
    let c = g.components();
    for (k, &size) in c.sizes.iter().enumerate() {
        let p = g.nodes()[c.label.iter().position(|&l| l == k as u32).unwrap()];
        println!("  component {k}: {size} nodes, e.g. {p}");
    }
    println!(
        "  {} floor nodes under it, {through} floor edges pass under it",
        under.len()
    );
    assert!(under.is_empty(), "nodes under a 0.7 m slab: {under:?}");
    assert_eq!(through, 0, "floor edges pass under a 0.7 m slab");
    assert!(g.len() > 50);
}

/// A slab at table height (0.7..0.9 m) cuts the crouching body (1.1 m, radius 0.3) of anyone
/// whose centre is within a radius of its edge: no node may stand there, though the
/// node's clearance segments (the axis, and rings at the knee and crouching head) all miss a
/// slab between those heights.
#[test]
fn no_node_stands_where_a_table_high_slab_cuts_the_crouching_body() {
    let (g, r) = generate(&Engine::cpu(), &ceiling_scene(0.7), &NavParams::standard());
    println!("{}", summary("slab 0.7 m above the floor", &g, &r));
    let gap = |p: Vec3| {
        let dx = (SLAB[0] - p.x).max(p.x - SLAB[1]).max(0.0);
        let dz = (SLAB[2] - p.z).max(p.z - SLAB[3]).max(0.0);
        (dx * dx + dz * dz).sqrt()
    };
    // 5 cm of slack, as the clearance tests keep under the head.
    let cut: Vec<(Vec3, f32)> = g
        .nodes()
        .iter()
        .filter(|p| p.y.abs() < 0.1 && gap(**p) < radius() - 0.05)
        .map(|&p| (p, gap(p)))
        .collect();
    let near = g
        .nodes()
        .iter()
        .filter(|p| p.y.abs() < 0.1 && gap(**p) < 1.0)
        .count();
    println!(
        "  {near} floor nodes within 1 m of the slab's edge; {} closer than {} m (node, \
         distance): {cut:?}",
        cut.len(),
        radius() - 0.05
    );
    assert!(near > 10, "{near} nodes near the slab");
    assert!(
        cut.is_empty(),
        "nodes whose crouching body the 0.7 m slab cuts: {cut:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Built-in and real levels (graphs shared by the tests that need them)

struct Level {
    scene: Scene,
    graph: NavGraph,
    report: NavReport,
}

fn level(name: &str, scene: Scene) -> Level {
    let t = Instant::now();
    let (graph, report) = generate(&Engine::cpu(), &scene, &NavParams::standard());
    println!(
        "{} (CPU, {:.1} s)",
        summary(name, &graph, &report),
        t.elapsed().as_secs_f64()
    );
    Level {
        scene,
        graph,
        report,
    }
}

fn sniper() -> &'static Level {
    static L: OnceLock<Level> = OnceLock::new();
    L.get_or_init(|| level("sniper", procedural::sniper(1, 1)))
}

fn urban() -> &'static Level {
    static L: OnceLock<Level> = OnceLock::new();
    L.get_or_init(|| level("urban", procedural::urban(1, 1)))
}

fn dungeon() -> &'static Level {
    static L: OnceLock<Level> = OnceLock::new();
    L.get_or_init(|| {
        let (scene, _) =
            sightline::scene::load_obj(common::data_dir().join("dungeon.obj"), &Default::default())
                .unwrap();
        level("dungeon", scene)
    })
}

#[test]
fn sniper_creek_banks_and_bridge_are_one_walkable_network() {
    let l = sniper();
    let g = &l.graph;
    let c = g.components();
    let water = |p: Vec3| (p.y + 2.7).abs() < 0.1 && p.x.abs() < 4.0;
    let bank = |p: Vec3, west: bool| p.y.abs() < 0.1 && if west { p.x < -4.0 } else { p.x > 4.0 };
    let creek: Vec<usize> = (0..g.len()).filter(|&i| water(g.nodes()[i])).collect();
    let west: Vec<usize> = (0..g.len()).filter(|&i| bank(g.nodes()[i], true)).collect();
    let east: Vec<usize> = (0..g.len())
        .filter(|&i| bank(g.nodes()[i], false))
        .collect();
    let in_largest = |v: &[usize]| v.iter().filter(|&&i| c.label[i] == 0).count();
    println!(
        "creek {} nodes ({} in the largest component), west bank {} ({}), east bank {} ({})",
        creek.len(),
        in_largest(&creek),
        west.len(),
        in_largest(&west),
        east.len(),
        in_largest(&east)
    );
    assert!(creek.len() > 40 && west.len() > 200 && east.len() > 200);
    let stray: Vec<Vec3> = creek
        .iter()
        .filter(|&&i| c.label[i] != 0)
        .map(|&i| g.nodes()[i])
        .collect();
    assert!(
        stray.is_empty(),
        "creek nodes outside the banks' component: {stray:?}"
    );
    assert!(in_largest(&west) > 0 && in_largest(&east) > 0);
    for (side, v) in [("west", &west), ("east", &east)] {
        let share = in_largest(v) as f64 / v.len() as f64;
        assert!(
            share > 0.9,
            "{side} bank: only {:.1} % in the creek's component",
            100.0 * share
        );
    }

    // Across the deck: from the west bank to the east bank through deck and bank nodes
    // between the parapets only (the creek and its stairs are not allowed).
    let deck = |p: Vec3| p.y.abs() < 0.1 && p.z.abs() < 1.75 && p.x.abs() < 8.0;
    let on_deck = g
        .nodes()
        .iter()
        .filter(|&&p| deck(p) && p.x.abs() < 4.0)
        .count();
    let starts: Vec<u32> = (0..g.len() as u32)
        .filter(|&i| deck(g.nodes()[i as usize]) && g.nodes()[i as usize].x < -5.0)
        .collect();
    println!(
        "{on_deck} deck nodes, {} west bank nodes by the bridge",
        starts.len()
    );
    assert!(on_deck >= 2, "{on_deck} nodes on the deck");
    assert!(
        reaches(g, &starts, deck, |p| p.x > 5.0),
        "no path across the bridge deck"
    );

    // Along the creek: every edge between two water nodes wades.
    let (mut along, mut wet) = (0, 0);
    for e in g.edges() {
        if water(g.nodes()[e.a as usize]) && water(g.nodes()[e.b as usize]) {
            along += 1;
            wet += usize::from(e.kinds.contains(EdgeKinds::WATER));
        }
    }
    println!("{along} edges along the creek, {wet} WATER");
    assert!(along > 50);
    assert_eq!(wet, along, "creek edges not marked WATER");
    assert!(
        l.report.stairs_edges > 0,
        "the creek stairs give no STAIRS edge"
    );
}

#[test]
fn urban_streets_reach_most_nodes_and_building_roofs() {
    let l = urban();
    let g = &l.graph;
    let c = g.components();
    let share = c.largest_share();
    println!(
        "urban: largest component {} of {} nodes ({:.1} %)",
        c.sizes[0],
        g.len(),
        100.0 * share
    );
    // The street (ground level, |x| < 5) is in the largest component.
    let street: Vec<usize> = (0..g.len())
        .filter(|&i| g.nodes()[i].y.abs() < 0.2 && g.nodes()[i].x.abs() < 4.0)
        .collect();
    let street_in = street.iter().filter(|&&i| c.label[i] == 0).count();
    println!(
        "street nodes {} ({} in the largest component)",
        street.len(),
        street_in
    );
    // Roofs: the top node of its spot (nothing within 0.5 m horizontally above it), over
    // 5 m up; grouped into roofs by height (0.5 m) and 2.9 m horizontal neighbourhood.
    let mut columns: HashMap<(i32, i32), f32> = HashMap::new();
    for p in g.nodes() {
        let k = ((p.x * 2.0).round() as i32, (p.z * 2.0).round() as i32);
        let top = columns.entry(k).or_insert(f32::NEG_INFINITY);
        *top = top.max(p.y);
    }
    let roof: Vec<usize> = (0..g.len())
        .filter(|&i| {
            let p = g.nodes()[i];
            let k = ((p.x * 2.0).round() as i32, (p.z * 2.0).round() as i32);
            p.y > 5.0 && columns[&k] <= p.y
        })
        .collect();
    let mut group: Vec<usize> = (0..roof.len()).collect();
    fn find(group: &mut [usize], mut i: usize) -> usize {
        while group[i] != i {
            group[i] = group[group[i]];
            i = group[i];
        }
        i
    }
    for a in 0..roof.len() {
        for b in a + 1..roof.len() {
            let (p, q) = (g.nodes()[roof[a]], g.nodes()[roof[b]]);
            if (p.y - q.y).abs() < 0.5 && horizontal(p, q) < 2.9 {
                let (ra, rb) = (find(&mut group, a), find(&mut group, b));
                group[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    let mut roofs: BTreeMap<usize, (usize, usize, f32)> = BTreeMap::new();
    for (k, &i) in roof.iter().enumerate() {
        let r = find(&mut group, k);
        let e = roofs.entry(r).or_insert((0, 0, g.nodes()[i].y));
        e.0 += 1;
        e.1 += usize::from(c.label[i] == 0);
    }
    let big: Vec<&(usize, usize, f32)> = roofs.values().filter(|r| r.0 >= 4).collect();
    let reached = big.iter().filter(|r| r.1 > 0).count();
    println!(
        "roofs over 5 m (4+ nodes): {}, reached from the street: {reached}; (nodes, in largest, \
         height): {:?}",
        big.len(),
        big
    );
    // The other components: for each, its ground-floor nodes (y < 0.3) and knee-high lines
    // (0.5 m) from them to street-component ground nodes within 2.9 m. A building without a
    // street door is sealed at knee height (windows have 0.9 m sills); a clear line would
    // be an opening the graph missed.
    let engine = Engine::cpu();
    let low = |i: usize| g.nodes()[i].y.abs() < 0.3;
    let street_low: Vec<usize> = (0..g.len())
        .filter(|&i| c.label[i] == 0 && low(i))
        .collect();
    let mut pairs = Vec::new();
    for i in (0..g.len()).filter(|&i| c.label[i] != 0 && low(i)) {
        for &j in &street_low {
            if horizontal(g.nodes()[i], g.nodes()[j]) < 2.9 {
                pairs.push((i, j));
            }
        }
    }
    let segs: Vec<Segment> = pairs
        .iter()
        .map(|&(i, j)| Segment::new(g.nodes()[i] + Vec3::Y * 0.5, g.nodes()[j] + Vec3::Y * 0.5))
        .collect();
    let blocked = engine.occluded(&l.scene, &segs, Mask::FIRE).unwrap();
    let open: Vec<(Vec3, Vec3)> = pairs
        .iter()
        .enumerate()
        .filter(|&(k, _)| !blocked.get(k))
        .map(|(_, &(i, j))| (g.nodes()[i], g.nodes()[j]))
        .collect();
    for (k, &size) in c.sizes.iter().enumerate().skip(1) {
        let idx: Vec<usize> = (0..g.len()).filter(|&i| c.label[i] == k as u32).collect();
        let (mut lo, mut hi) = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
        for &i in &idx {
            lo = lo.min(g.nodes()[i]);
            hi = hi.max(g.nodes()[i]);
        }
        let ground = idx.iter().filter(|&&i| low(i)).count();
        let near = pairs.iter().filter(|p| c.label[p.0] == k as u32).count();
        println!(
            "component {k}: {size} nodes over {lo} .. {hi}, {ground} on the ground floor, {near} \
             knee-high lines to the street component nearby"
        );
    }
    println!(
        "{} knee-high lines from cut-off ground floors to the street component, {} clear: {:?}",
        pairs.len(),
        open.len(),
        &open[..open.len().min(10)]
    );
    // Upper storeys cut off from a ground floor the street reaches: a component with no
    // ground-floor node whose nodes stand right above (within 0.75 m horizontally) street-
    // component nodes. Every building gets a stairwell, so a building with a street door is
    // reachable on every storey.
    let mut cut_off = Vec::new();
    for k in 1..c.sizes.len() as u32 {
        let idx: Vec<usize> = (0..g.len()).filter(|&i| c.label[i] == k).collect();
        if idx.iter().any(|&i| low(i)) {
            continue;
        }
        let over: Vec<Vec3> = idx
            .iter()
            .map(|&i| g.nodes()[i])
            .filter(|&p| {
                street_low
                    .iter()
                    .any(|&j| horizontal(p, g.nodes()[j]) < 0.75 && p.y > g.nodes()[j].y + 1.0)
            })
            .collect();
        if !over.is_empty() {
            let (lo, hi) = idx.iter().fold(
                (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
                |(lo, hi), &i| (lo.min(g.nodes()[i]), hi.max(g.nodes()[i])),
            );
            cut_off.push(format!(
                "component {k} ({} nodes, {lo} .. {hi}): {} of them over the street \
                 component's ground floor",
                idx.len(),
                over.len()
            ));
        }
    }
    println!("upper storeys cut off from a reachable ground floor: {cut_off:#?}");
    assert!(
        share >= 0.8,
        "largest component holds {:.1} %",
        100.0 * share
    );
    assert!(
        street.len() > 100 && street_in == street.len(),
        "street nodes split"
    );
    assert!(big.len() >= 10, "{} roofs found", big.len());
    assert!(
        reached as f64 >= 0.8 * big.len() as f64,
        "{reached} of {} roofs reached from the street",
        big.len()
    );
    assert!(
        open.is_empty(),
        "cut-off ground floors with a clear knee-high line to the street component"
    );
    assert!(
        cut_off.is_empty(),
        "storeys of buildings with a street door are not reachable: {cut_off:#?}"
    );
}

#[test]
fn dungeon_floors_are_connected_across_levels() {
    let l = dungeon();
    let g = &l.graph;
    let c = g.components();
    let largest: Vec<usize> = (0..g.len()).filter(|&i| c.label[i] == 0).collect();
    // Floor heights: 0.5 m bins holding at least 10 largest-component nodes.
    let mut bins: BTreeMap<i32, usize> = BTreeMap::new();
    for &i in &largest {
        *bins
            .entry((g.nodes()[i].y * 2.0).floor() as i32)
            .or_default() += 1;
    }
    let heights: Vec<f32> = bins
        .iter()
        .filter(|(_, &n)| n >= 10)
        .map(|(&b, _)| b as f32 * 0.5)
        .collect();
    let mut levels: Vec<f32> = Vec::new();
    for &h in &heights {
        if levels.last().is_none_or(|&l| h - l >= 4.0) {
            levels.push(h);
        }
    }
    // Nodes outside the largest component that do not stand above it (roofs, ceiling tops).
    let above = |p: Vec3| {
        largest.iter().any(|&j| {
            let q = g.nodes()[j];
            horizontal(p, q) < 1.5 && p.y - q.y > 1.0
        })
    };
    let others: Vec<usize> = (0..g.len()).filter(|&i| c.label[i] != 0).collect();
    let not_above = others.iter().filter(|&&i| !above(g.nodes()[i])).count();
    let share = largest.len() as f64 / (largest.len() + not_above) as f64;
    println!(
        "dungeon: {} nodes, largest component {}, levels 4 m apart {levels:?} (floor bins \
         {heights:?}); {} nodes elsewhere, {not_above} of them not above the largest: it holds \
         {:.1} % of the rest",
        g.len(),
        largest.len(),
        others.len(),
        100.0 * share
    );
    assert!(levels.len() >= 3, "levels {levels:?}");
    assert!(
        share > 0.5,
        "largest component holds only {:.1} %",
        100.0 * share
    );
}

// ---------------------------------------------------------------------------------------------
// 3. An independent oracle: no edge through a wall, off a ledge or up a wall

const ORACLE_SAMPLES: usize = 40;

/// What the oracle found: edges whose ground profile fails (a hole, a ledge, a riser over
/// 0.35 m between samples 2.5 to 7 cm apart) and edges whose body segments are blocked (through
/// a wall), each with descriptions of the first 20.
#[derive(Debug, Default)]
struct OracleVerdict {
    ground: usize,
    ground_notes: Vec<String>,
    body: usize,
    body_notes: Vec<String>,
}

/// Walks every edge again with its own sampling (40 points): ground under each point (from
/// 1.2 m above the straight line) within 0.35 m of the previous point's, and segments at 0.5 m
/// and 1.0 m above the ground profile between neighbouring points clear of fire-blocking
/// geometry.
fn oracle(engine: &Engine, scene: &Scene, g: &NavGraph) -> OracleVerdict {
    let ground_mask = Mask(MaterialFlags::BLOCKS_FIRE | MaterialFlags::WALKABLE);
    let mut out = OracleVerdict::default();
    for chunk in g.edges().chunks(4096) {
        let mut rays = Vec::with_capacity(chunk.len() * ORACLE_SAMPLES);
        for e in chunk {
            let (a, b) = (g.nodes()[e.a as usize], g.nodes()[e.b as usize]);
            let reach = 4.2 + horizontal(a, b);
            for k in 0..ORACLE_SAMPLES {
                let t = k as f32 / (ORACLE_SAMPLES - 1) as f32;
                rays.push(Ray::new(a.lerp(b, t) + Vec3::Y * 1.2, Vec3::NEG_Y, reach));
            }
        }
        let hits = engine.closest_hit(scene, &rays, ground_mask).unwrap();
        // Ground failures are found first; body segments are traced only where the ground holds.
        let mut fails: Vec<Option<(bool, String)>> = vec![None; chunk.len()];
        let mut segs = Vec::new();
        let mut owner = Vec::new();
        for (n, e) in chunk.iter().enumerate() {
            let (a, b) = (g.nodes()[e.a as usize], g.nodes()[e.b as usize]);
            let heights: Vec<Option<f32>> = (0..ORACLE_SAMPLES)
                .map(|k| {
                    let i = n * ORACLE_SAMPLES + k;
                    hits[i].map(|h| rays[i].origin().y - h.t)
                })
                .collect();
            let mut prev = a.y;
            let mut profile = Vec::with_capacity(ORACLE_SAMPLES);
            for (k, y) in heights.iter().enumerate() {
                let Some(y) = *y else {
                    fails[n] = Some((false, format!("no ground under sample {k}")));
                    break;
                };
                if (y - prev).abs() > 0.35 {
                    fails[n] = Some((
                        false,
                        format!("ground jumps from {prev:.3} to {y:.3} at sample {k}"),
                    ));
                    break;
                }
                prev = y;
                let o = rays[n * ORACLE_SAMPLES + k].origin();
                profile.push(Vec3::new(o.x, y, o.z));
            }
            if fails[n].is_none() && (prev - b.y).abs() > 0.35 {
                fails[n] = Some((
                    false,
                    format!("ground ends at {prev:.3}, node at {:.3}", b.y),
                ));
            }
            if let Some((_, f)) = &mut fails[n] {
                // The whole ground profile, run-length coded, with the sample spacing.
                let mut runs: Vec<(String, usize)> = Vec::new();
                for y in &heights {
                    let label = y.map_or("none".to_string(), |y| format!("{y:.2}"));
                    match runs.last_mut() {
                        Some((l, c)) if *l == label => *c += 1,
                        _ => runs.push((label, 1)),
                    }
                }
                let runs: Vec<String> = runs.iter().map(|(l, c)| format!("{l} x{c}")).collect();
                *f += &format!(
                    "; ground every {:.3} m: {}",
                    horizontal(a, b) / (ORACLE_SAMPLES - 1) as f32,
                    runs.join(", ")
                );
            }
            if fails[n].is_some() {
                continue;
            }
            for w in profile.windows(2) {
                for h in [0.5, 1.0] {
                    segs.push(Segment::new(w[0] + Vec3::Y * h, w[1] + Vec3::Y * h));
                    owner.push((n, h));
                }
            }
        }
        let blocked = engine.occluded(scene, &segs, Mask::FIRE).unwrap();
        for (s, &(n, h)) in owner.iter().enumerate() {
            if blocked.get(s) && fails[n].is_none() {
                fails[n] = Some((
                    true,
                    format!(
                        "the segment {h} m above the ground is blocked from {} to {}",
                        segs[s].start(),
                        segs[s].end()
                    ),
                ));
            }
        }
        for (e, f) in chunk.iter().zip(fails) {
            if let Some((body, f)) = f {
                let (count, notes) = if body {
                    (&mut out.body, &mut out.body_notes)
                } else {
                    (&mut out.ground, &mut out.ground_notes)
                };
                *count += 1;
                if notes.len() < 20 {
                    notes.push(format!(
                        "edge {}-{} {} -> {} ({:?}, {:.2} m): {f}",
                        e.a,
                        e.b,
                        g.nodes()[e.a as usize],
                        g.nodes()[e.b as usize],
                        e.kinds,
                        e.length
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn no_edge_goes_through_a_wall_or_off_a_ledge_by_an_independent_walk() {
    // Body segments (through a wall): none may be blocked. Ground profiles: the oracle samples
    // 3 to 6 times finer than the walk test's 0.25 m, so it sees slivers narrower than that
    // step where an edge clips the corner of a stairwell opening or of a tread (seen: one or two
    // samples, up to 0.15 m of the way) or a crack in a loaded mesh; fewer than 0.1 % of the
    // edges may show one, and every one is printed with its whole ground profile.
    let engine = Engine::cpu();
    let mut failures = Vec::new();
    for (name, l) in [
        ("sniper", sniper()),
        ("urban", urban()),
        ("dungeon", dungeon()),
    ] {
        let t = Instant::now();
        let v = oracle(&engine, &l.scene, &l.graph);
        let total = l.graph.edges().len();
        println!(
            "{name}: of {total} edges, {} have a blocked body segment and {} a ground profile \
             failing the oracle ({:.3} %) ({:.1} s)",
            v.body,
            v.ground,
            100.0 * v.ground as f64 / total as f64,
            t.elapsed().as_secs_f64()
        );
        for n in v.body_notes.iter().chain(&v.ground_notes) {
            println!("  {n}");
        }
        assert!(total > 1000, "{name}: {total} edges");
        if v.body > 0 {
            failures.push(format!(
                "{name}: {} edges go through fire-blocking geometry: {:#?}",
                v.body, v.body_notes
            ));
        }
        if v.ground as f64 >= 0.001 * total as f64 {
            failures.push(format!(
                "{name}: {} of {total} edges fail the ground profile: {:#?}",
                v.ground, v.ground_notes
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// 4. GPU = CPU

/// Position bits of a node (graphs from two backends are compared by where nodes are).
fn key(p: Vec3) -> [u32; 3] {
    p.to_array().map(f32::to_bits)
}

/// The GPU and the fused CPU twins build the plain twin's graph on `sniper`.
#[test]
fn gpu_and_cpu_build_the_same_sniper_graph() {
    for (name, other) in gpu::twins() {
        same_graph_as_the_plain_twin(&name, &other);
    }
}

/// The GPU and the fused CPU twins build the plain twin's walk surface, place for place and
/// link for link, on `sniper` (walls one body radius from places), `urban` and `dungeon.obj`.
#[test]
fn every_twin_builds_the_same_walk_surface() {
    let params = NavParams::standard();
    let twins = gpu::twins();
    for (label, level) in [
        ("sniper", sniper()),
        ("urban", urban()),
        ("dungeon", dungeon()),
    ] {
        let plain = WalkSurface::build(&Engine::cpu(), &level.scene, &params).unwrap();
        let places = |w: &WalkSurface| -> Vec<([u32; 3], Vec<u32>)> {
            (0..w.len() as u32)
                .map(|i| (key(w.position(i)), w.links(i).to_vec()))
                .collect()
        };
        let want = places(&plain);
        assert!(want.len() > 1000, "{label}: {} places", want.len());
        for (name, other) in &twins {
            let got = places(&WalkSurface::build(other, &level.scene, &params).unwrap());
            assert_eq!(got.len(), want.len(), "{label}, {name}: places");
            // A height that lies within ulps of a midpoint of the 1/1024 m ground grid may
            // round to either neighbour (the contract's one exception); its links stay.
            let (mut tie, mut other) = (0, 0);
            for (a, b) in want.iter().zip(&got).filter(|(a, b)| a != b) {
                let (p, q) = (a.0.map(f32::from_bits), b.0.map(f32::from_bits));
                let step = (p[1] - q[1]).abs() * ground::HEIGHT_STEPS;
                if a.1 == b.1 && p[0] == q[0] && p[2] == q[2] && step == 1.0 {
                    tie += 1;
                } else {
                    other += 1;
                }
            }
            println!(
                "{label}, {name}: {} places; {tie} a grid step apart (a rounding tie), {other} \
                 otherwise different",
                got.len()
            );
            assert!(
                other == 0 && tie * 1000 <= want.len(),
                "{label}, {name}: {tie} ties, {other} other places differ"
            );
        }
    }
}

fn same_graph_as_the_plain_twin(name: &str, gpu: &Engine) {
    let cpu = sniper();
    let scene = &cpu.scene;
    let t = Instant::now();
    let (g, r) = generate(gpu, scene, &NavParams::standard());
    println!(
        "{} ({name} {:?}, {:.1} s)",
        summary("sniper", &g, &r),
        gpu.adapter_name(),
        t.elapsed().as_secs_f64()
    );
    let c = &cpu.graph;
    if &g == c {
        println!(
            "{name}: identical, {} nodes, {} edges",
            g.len(),
            g.edges().len()
        );
        return;
    }
    let nodes_of = |g: &NavGraph| -> HashMap<[u32; 3], usize> {
        g.nodes()
            .iter()
            .enumerate()
            .map(|(i, &p)| (key(p), i))
            .collect()
    };
    let (nc, ng) = (nodes_of(c), nodes_of(&g));
    let node_diff = nc.keys().filter(|k| !ng.contains_key(*k)).count()
        + ng.keys().filter(|k| !nc.contains_key(*k)).count();
    let edges_of = |g: &NavGraph| -> HashMap<([u32; 3], [u32; 3]), (EdgeKinds, f32)> {
        g.edges()
            .iter()
            .map(|e| {
                let (a, b) = (key(g.nodes()[e.a as usize]), key(g.nodes()[e.b as usize]));
                ((a.min(b), a.max(b)), (e.kinds, e.length))
            })
            .collect()
    };
    let (ec, eg) = (edges_of(c), edges_of(&g));
    let mut edge_diff = 0;
    let mut examples = Vec::new();
    for (k, v) in &ec {
        let same = eg
            .get(k)
            .is_some_and(|w| w.0 == v.0 && (w.1 - v.1).abs() <= 1e-4 * v.1.max(1.0));
        if !same {
            edge_diff += 1;
            if examples.len() < 10 {
                examples.push(format!("CPU edge {k:?} {v:?}, GPU {:?}", eg.get(k)));
            }
        }
    }
    edge_diff += eg.keys().filter(|k| !ec.contains_key(*k)).count();
    let node_share = node_diff as f64 / (c.len() + g.len()) as f64;
    let edge_share = edge_diff as f64 / (c.edges().len() + g.edges().len()) as f64;
    println!(
        "differ: {node_diff} nodes ({:.3} %), {edge_diff} edges ({:.3} %); CPU {} / {} , GPU {} \
         / {}\n{examples:#?}",
        100.0 * node_share,
        100.0 * edge_share,
        c.len(),
        c.edges().len(),
        g.len(),
        g.edges().len()
    );
    // The fit tests trace 1/1024 of the radius inside the body and walks measure quantised
    // ground, so walls on the grid lines one radius from a place no longer hang on a fused
    // last bit (ARCHITECTURE.md, "Agreement between backends"): the graphs are identical.
    panic!("{name}: the graph differs from the plain twin's ({node_share:.5} of nodes, {edge_share:.5} of edges)");
}

// ---------------------------------------------------------------------------------------------
// 5. Graph files

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sightline-nav-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn json_and_csv_graph_files_round_trip_exactly() {
    let g = &sniper().graph;
    let costs = CostParams::standard();
    assert!(g.edges().iter().any(|e| e.kinds != EdgeKinds::NONE));
    let json = g.to_json().to_string();
    let (nodes, edges) = nav::parse_graph_json(&json, "g.json").unwrap();
    let back = NavGraph::new(nodes, edges, &costs).unwrap();
    assert_eq!(&back, g, "JSON round trip changed the graph");
    let csv = g.to_csv();
    let (nodes, edges) = nav::parse_graph_csv(&csv, "g.csv").unwrap();
    let back = NavGraph::new(nodes, edges, &costs).unwrap();
    assert_eq!(&back, g, "CSV round trip changed the graph");
    for (name, text) in [("g.json", &json), ("g.csv", &csv)] {
        let path = tmp(name);
        std::fs::write(&path, text).unwrap();
        assert_eq!(&nav::read_graph(&path, &costs).unwrap(), g, "{name}");
    }
    // Other costs change costs only.
    let other = CostParams {
        water: 5.0,
        ..costs
    };
    let path = tmp("g.json");
    let o = nav::read_graph(&path, &other).unwrap();
    assert_eq!(o.edges(), g.edges());
    let k = g
        .edges()
        .iter()
        .position(|e| e.kinds.contains(EdgeKinds::WATER))
        .unwrap();
    assert!(o.costs()[k] > g.costs()[k]);
    println!(
        "{} nodes, {} edges: JSON {} bytes, CSV {} bytes",
        g.len(),
        g.edges().len(),
        json.len(),
        csv.len()
    );
}

#[test]
fn bad_graph_files_are_errors_naming_the_line_or_element() {
    let costs = CostParams::standard();
    let nodes = "node,0,0,0\nnode,1,0,0\nnode,0,0,1\n";
    let csv_cases: [(&str, String, &[&str]); 8] = [
        (
            "nan.csv",
            "node,0,0,0\nnode,NaN,0,0\n".into(),
            &["line 2", "finite"],
        ),
        (
            "missing.csv",
            format!("{nodes}edge,0,5\n"),
            &["edge 0", "below 3"],
        ),
        (
            "loop.csv",
            format!("{nodes}edge,0,1\nedge,2,2\n"),
            &["edge 1", "different"],
        ),
        (
            "kind.csv",
            format!("{nodes}edge,0,1,flying\n"),
            &["line 4", "flying", "stairs"],
        ),
        (
            "dup.csv",
            format!("{nodes}edge,0,1\nedge,1,0\n"),
            &["repeated"],
        ),
        (
            "fields.csv",
            "node,0,0,0\nnode,1,2\n".into(),
            &["line 2", "node,x,y,z"],
        ),
        (
            "fields2.csv",
            format!("{nodes}edge,0,1,,1,7\n"),
            &["line 4", "edge,a,b"],
        ),
        ("empty.csv", String::new(), &["no nodes"]),
    ];
    let json_cases: [(&str, &str, &[&str]); 5] = [
        (
            "nan.json",
            r#"{"nodes": [[0, 0, 0], [0, "NaN", 0]], "edges": []}"#,
            &["nodes[1]"],
        ),
        (
            "nan2.json",
            r#"{"nodes": [[0, 0, 0], [NaN, 0, 0]], "edges": []}"#,
            &["line 1"],
        ),
        (
            "kind.json",
            r#"{"nodes": [[0,0,0],[1,0,0]], "edges": [[0, 1]], "kinds": ["swim"]}"#,
            &["kinds[0]", "swim"],
        ),
        (
            "missing.json",
            r#"{"nodes": [[0,0,0],[1,0,0]], "edges": [[0, 2]]}"#,
            &["edge 0"],
        ),
        ("array.json", r#"[[0, 0, 0], [1, 0, 0]]"#, &["line 1"]),
    ];
    let mut failures = Vec::new();
    let all = csv_cases
        .iter()
        .map(|(n, t, w)| (*n, t.as_str(), *w))
        .chain(json_cases.iter().map(|&(n, t, w)| (n, t, w)));
    for (name, text, want) in all {
        let path = tmp(name);
        std::fs::write(&path, text).unwrap();
        match nav::read_graph(&path, &costs) {
            Err(e @ Error::Load { .. }) => {
                let Error::Load { path: p, line, .. } = &e else {
                    unreachable!()
                };
                let message = e.to_string();
                println!("{message}");
                if !p.ends_with(name) {
                    failures.push(format!("{name}: error names {p}"));
                }
                for w in want {
                    // "line N" is the structured 1-based line, shown as `file:N:`.
                    let said = match w.strip_prefix("line ") {
                        Some(n) => {
                            line.map(|l| l.to_string()).as_deref() == Some(n) || message.contains(w)
                        }
                        None => message.contains(w),
                    };
                    if !said {
                        failures.push(format!("{name}: `{message}` does not say `{w}`"));
                    }
                }
            }
            other => failures.push(format!("{name}: {other:?}")),
        }
    }
    // The parsers name the element themselves.
    let e = nav::parse_graph_json("[1, 2]", "g.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("JSON object"), "{e}");
    let e = nav::parse_graph_json(
        r#"{"nodes": [[0,0,0],[1,0,0]], "edges": [[1, 1]]}"#,
        "g.json",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("edge 0"), "{e}");
    let e = nav::parse_graph_json(r#"{"nodes": [[0,0,0]], "edges": [[0, 1.5]]}"#, "g.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("edges[0]"), "{e}");
    assert!(nav::read_graph(tmp("does-not-exist.json"), &costs).is_err());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// 6. The `.slt` file

#[test]
fn slt_tables_store_the_nav_graph_and_shards_merge_byte_for_byte() {
    let engine = Engine::cpu();
    let scene = procedural::sniper(1, 1);
    let costs = CostParams::standard();
    let (graph, r) = generate(&engine, &scene, &NavParams::with_spacing(4.0));
    println!("{}", summary("sniper at 4 m", &graph, &r));
    assert!(graph.len() > 100 && graph.edges().len() > 100);
    let p = PrecomputeParams {
        range: Some(30.0),
        ..PrecomputeParams::default()
    };
    let single = nav::precompute(
        &engine,
        &scene,
        "sniper",
        &graph,
        &p,
        None,
        None,
        |_, _, _| {},
    )
    .unwrap();
    assert_eq!(single.waypoints, graph.nodes());
    assert_eq!(single.edges.as_deref(), Some(graph.edges()));
    let bytes = single.to_bytes().unwrap();
    assert_eq!(&bytes[..8], &tables::MAGIC);
    assert_eq!(
        u32::from_le_bytes(bytes[8..12].try_into().unwrap()),
        tables::FORMAT_VERSION
    );
    let back = TableFile::from_bytes(&bytes, "sniper.slt").unwrap();
    assert_eq!(back, single);
    assert_eq!(back.to_bytes().unwrap(), bytes);
    let path = tmp("sniper.slt");
    single.write_to(&path).unwrap();
    let read = TableFile::read_from(&path).unwrap();
    assert_eq!(
        NavGraph::from_table(&read, &costs).unwrap().as_ref(),
        Some(&graph),
        "the graph read from the file differs"
    );
    assert!(read
        .summary(sightline::tables::FORMAT_VERSION)
        .contains(&format!("nav graph: {} edges", graph.edges().len())));
    // Shards, merged in any order, give the single run's bytes.
    let mut shards: Vec<TableFile> = (0..3)
        .map(|k| {
            let s = nav::precompute(
                &engine,
                &scene,
                "sniper",
                &graph,
                &p,
                Some((k, 3)),
                None,
                |_, _, _| {},
            )
            .unwrap();
            let b = TableFile::from_bytes(&s.to_bytes().unwrap(), "shard.slt").unwrap();
            assert_eq!(b.edges, single.edges, "shard {k} lost the edges");
            b
        })
        .collect();
    shards.swap(0, 2);
    let merged = tables::merge(&shards).unwrap();
    assert_eq!(
        merged.to_bytes().unwrap(),
        bytes,
        "merged shards differ from the single run"
    );
    // A shard with other edges is refused.
    let mut other = shards.clone();
    other[1].edges.as_mut().unwrap().pop();
    assert!(tables::merge(&other).is_err());
    // A table without a graph says so.
    let plain = tables::precompute(
        &engine,
        &scene,
        "sniper",
        &PrecomputeParams {
            waypoints: Some(graph.nodes().to_vec()),
            ..p.clone()
        },
        None,
        None,
        |_, _, _| {},
    )
    .unwrap();
    assert!(NavGraph::from_table(&plain, &costs).unwrap().is_none());
    // Edges that do not fit the waypoints are refused.
    let mut bad = PrecomputeParams {
        waypoints: Some(graph.nodes().to_vec()),
        edges: Some(graph.edges().to_vec()),
        ..p.clone()
    };
    bad.edges.as_mut().unwrap().push(Edge {
        a: 0,
        b: graph.len() as u32,
        kinds: EdgeKinds::NONE,
        length: 1.0,
    });
    let e = tables::precompute(&engine, &scene, "sniper", &bad, None, None, |_, _, _| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("edges"), "{e}");
    println!(
        "{} bytes, {} edges stored",
        bytes.len(),
        graph.edges().len()
    );
}

// ---------------------------------------------------------------------------------------------
// 7. Bad input

fn expect_error(
    what: &str,
    r: sightline::Result<(NavGraph, NavReport)>,
    words: &[&str],
) -> Option<String> {
    match r {
        Err(e) => {
            let m = e.to_string();
            println!("{what}: {m}");
            let missing: Vec<&&str> = words.iter().filter(|w| !m.contains(**w)).collect();
            (!missing.is_empty()).then(|| format!("{what}: `{m}` does not mention {missing:?}"))
        }
        Ok((g, _)) => Some(format!(
            "{what}: no error (a graph of {} nodes and {} edges)",
            g.len(),
            g.edges().len()
        )),
    }
}

#[test]
fn bad_parameters_and_scenes_are_errors_that_say_what_to_change() {
    let engine = Engine::cpu();
    let costs = CostParams::standard();
    let scene = wall_scene(&Wall::door(Vec3::new(0.0, 0.0, 0.3), 0.0, 20.0, 0.37, 0.9));
    let mut failures = Vec::new();
    let mut check = |what: &str, r, words: &[&str]| {
        if let Some(f) = expect_error(what, r, words) {
            failures.push(f);
        }
    };
    for s in [f32::NAN, -2.0, 0.0, f32::INFINITY] {
        let mut p = NavParams::standard();
        p.sample.spacing = s;
        check(
            &format!("spacing {s}"),
            nav::generate(&engine, &scene, &p, &costs),
            &["spacing"],
        );
        check(
            &format!("with_spacing({s})"),
            nav::generate(&engine, &scene, &NavParams::with_spacing(s), &costs),
            &["spacing"],
        );
    }
    check(
        "spacing 1 mm over the sniper level",
        nav::generate(
            &engine,
            &procedural::sniper(1, 1),
            &NavParams::with_spacing(0.001),
            &costs,
        ),
        &["larger spacing"],
    );
    check(
        "an empty scene",
        nav::generate(
            &engine,
            &Scene::new(materials()),
            &NavParams::standard(),
            &costs,
        ),
        &["empty"],
    );
    let mut mesh = Mesh::default();
    floor(&mut mesh, [-10.0, 10.0]);
    let mut bare = Scene::new(vec![Material::new("wall", MaterialFlags::SOLID, 0.5)]);
    bare.add_object(mesh, Affine3A::IDENTITY, Mobility::Static)
        .unwrap();
    check(
        "a scene with no walkable surface",
        nav::generate(&engine, &bare, &NavParams::standard(), &costs),
        &["walkable"],
    );
    let mut far = NavParams::standard();
    far.link_radius = 1e9;
    check(
        "generate, link radius 1e9",
        nav::generate(&engine, &scene, &far, &costs),
        &["link radius", "8 x spacing"],
    );
    let nodes = vec![Vec3::new(-5.0, 0.0, -5.0), Vec3::new(-4.0, 0.0, -5.0)];
    check(
        "connect, link radius 1e9",
        nav::connect(&engine, &scene, nodes.clone(), &far, &costs),
        &["link radius"],
    );
    let mut nan = nodes.clone();
    nan.push(Vec3::new(f32::NAN, 0.0, 0.0));
    check(
        "connect with a NaN node",
        nav::connect(&engine, &scene, nan, &NavParams::standard(), &costs),
        &["node 2", "finite"],
    );
    let mut p = NavParams::standard();
    p.fine = 0;
    check(
        "fine 0",
        nav::generate(&engine, &scene, &p, &costs),
        &["fine"],
    );
    let mut p = NavParams::standard();
    p.step_height = 2.0;
    check(
        "step height above the crouching head",
        nav::generate(&engine, &scene, &p, &costs),
        &["step height"],
    );
    check(
        "a NaN water cost",
        nav::generate(
            &engine,
            &scene,
            &NavParams::standard(),
            &CostParams {
                water: f32::NAN,
                ..costs
            },
        ),
        &["water"],
    );
    // What does work: connect keeps the user's nodes and links the two 1 m apart.
    let (g, _) = nav::connect(&engine, &scene, nodes, &NavParams::standard(), &costs).unwrap();
    assert_eq!(g.edges().len(), 1);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every built-in scene is one walkable network at ground level: its largest component holds
/// at least 98% of the nodes with nothing under them (roofs without stairs and upper storeys
/// stand over other nodes and are reported apart), over three seeds each.
#[test]
fn built_in_scenes_reach_their_ground_from_one_network() {
    let engine = Engine::cpu();
    for name in procedural::NAMES {
        for seed in 1..=3 {
            let scene = procedural::by_name(name, seed, 1).unwrap();
            let (g, _) = generate(&engine, &scene, &NavParams::standard());
            let c = g.components();
            let ground = g.ground_level();
            let (best, share) = c.best_share(&ground);
            let high: Vec<u32> = (0..g.len())
                .filter(|&i| !ground[i] && c.label[i] != best)
                .map(|i| i as u32)
                .collect();
            println!(
                "{name} seed {seed}: {:.2} % of {} ground-level nodes in one network; {} nodes \
                 over others (roofs without stairs) apart from it",
                100.0 * share,
                ground.iter().filter(|&&b| b).count(),
                high.len()
            );
            let cut_off: Vec<Vec3> = (0..g.len())
                .filter(|&i| ground[i] && c.label[i] != best)
                .map(|i| g.nodes()[i])
                .collect();
            assert!(
                share >= 0.98,
                "{name} seed {seed}: {:.2} %; cut off: {:?}",
                100.0 * share,
                &cut_off[..cut_off.len().min(20)]
            );
        }
    }
}
