//! Levels wound the other way: a file written with clockwise fronts (DirectX) loads as the same
//! level as its counter-clockwise original, with the same nav graph, walk surface, underlay and
//! cover answers; one inside-out part is turned back alone; a level loaded as written while
//! inside out names the cause.

mod common;
#[path = "common/gpu.rs"]
mod gpu;

use glam::{Vec2, Vec3};
use sightline::cover::dense::{find_cover, DenseParams, DenseQuery};
use sightline::cover::Agent;
use sightline::nav::{self, CostParams, NavParams, WalkSurface};
use sightline::scene::{LoadOptions, LoadReport, Winding};
use sightline::trace::SplitMix64;
use sightline::{Engine, Mask, Scene};
use std::path::{Path, PathBuf};

/// A scratch folder for this test binary's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sightline-winding-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The OBJ text with every face's winding reversed: its first vertex kept, the rest in
/// reverse order, so each fan triangle is the original's mirror image.
fn clockwise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() == Some("f") {
            let v: Vec<&str> = words.collect();
            out.push_str("f ");
            out.push_str(v[0]);
            for w in v[1..].iter().rev() {
                out.push(' ');
                out.push_str(w);
            }
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

fn load(path: &Path, winding: Winding) -> (Scene, LoadReport) {
    let options = LoadOptions {
        winding,
        ..LoadOptions::default()
    };
    sightline::scene::load(path, &options).unwrap()
}

/// `name` from the data folder as written, and a clockwise copy of it, both loaded with
/// [`Winding::Auto`].
fn both_windings(name: &str) -> ((Scene, LoadReport), (Scene, LoadReport)) {
    let original = common::data_dir().join(name);
    let copy = scratch(&format!("cw-{name}"));
    std::fs::write(
        &copy,
        clockwise(&std::fs::read_to_string(&original).unwrap()),
    )
    .unwrap();
    (load(&original, Winding::Auto), load(&copy, Winding::Auto))
}

#[test]
fn a_level_wound_clockwise_loads_as_the_same_level() {
    for name in ["dungeon.obj", "nav_test.obj"] {
        let ((ccw, a), (cw, b)) = both_windings(name);
        assert_eq!(a.winding.triangles_flipped, 0, "{name}: {:?}", a.winding);
        assert!(b.winding.whole_file_flipped, "{name}: {:?}", b.winding);
        assert_eq!(b.winding.triangles_flipped, b.triangles, "{name}");
        // The same triangles; a polygon's fan comes out in the other order.
        let sorted = |s: &Scene| {
            let mut t: Vec<_> = (s.world_triangles().into_iter())
                .map(|(v, m)| (v.map(|p| p.to_array().map(f32::to_bits)), m))
                .collect();
            t.sort_unstable();
            t
        };
        assert!(sorted(&ccw) == sorted(&cw), "{name}: the triangles differ");
        assert!(
            b.warnings.iter().any(|w| w.contains("wound clockwise")),
            "{name}"
        );
    }
}

#[test]
fn both_windings_give_the_same_graph_surface_underlay_and_cover() {
    let engine = gpu::gpu_engine().unwrap_or_else(Engine::cpu);
    let ((ccw, _), (cw, _)) = both_windings("dungeon.obj");
    let params = NavParams::standard();
    let costs = CostParams::standard();
    let (ga, _) = nav::generate(&engine, &ccw, &params, &costs).unwrap();
    let (gb, _) = nav::generate(&engine, &cw, &params, &costs).unwrap();
    assert!(ga.len() > 500, "{} nodes", ga.len());
    assert_eq!((ga.nodes(), ga.edges()), (gb.nodes(), gb.edges()));
    let (sa, sb) = (
        WalkSurface::build(&engine, &ccw, &params).unwrap(),
        WalkSurface::build(&engine, &cw, &params).unwrap(),
    );
    assert_eq!(sa.len(), sb.len());
    assert!((0..sa.len() as u32).all(|i| sa.position(i) == sb.position(i)));
    let (lo, hi) = ccw.bounds().unwrap();
    let under = |s: &Scene| {
        let u = sightline::underlay::underlay(&engine, s, Vec2::new(lo.x, lo.z), 0.5, 200, 200)
            .unwrap();
        (
            u.elevation.iter().map(|e| e.to_bits()).collect::<Vec<_>>(),
            u.surface,
            u.cover,
        )
    };
    assert_eq!(under(&ccw), under(&cw));
    let queries = agents(&ccw, lo, hi, 40);
    let dense = DenseParams {
        radius: 6.0,
        ..DenseParams::standard()
    };
    let ca = find_cover(&engine, &ccw, &queries, &dense).unwrap();
    let cb = find_cover(&engine, &cw, &queries, &dense).unwrap();
    assert!(ca.iter().filter(|a| a.choice.is_some()).count() >= 5);
    assert_eq!(ca, cb);
}

/// Agents on the nav graph's first nodes' ground, each with one observer 6 m off.
fn agents(scene: &Scene, lo: Vec3, hi: Vec3, n: usize) -> Vec<DenseQuery> {
    let engine = Engine::cpu();
    let mut rng = SplitMix64(5);
    let mut out = Vec::new();
    while out.len() < n {
        let p = rng.in_box(lo, hi).with_y(hi.y + 1.0);
        let ray = sightline::Ray::new(p, Vec3::NEG_Y, hi.y - lo.y + 2.0);
        let Some(h) = engine.closest_hit(scene, &[ray], Mask::ANY_SOLID).unwrap()[0] else {
            continue;
        };
        if h.back || h.normal.y < 0.8 {
            continue;
        }
        let g = p - Vec3::Y * h.t;
        let eye = g + Vec3::new(rng.range(-6.0, 6.0), 1.7, rng.range(-6.0, 6.0));
        out.push(DenseQuery {
            agent: Agent::soldier(g),
            observers: vec![eye],
            mask: Mask::SIGHT,
        });
    }
    out
}

/// A 2 m crate at `x` written inside out (clockwise seen from outside), as OBJ text.
fn inside_out_crate(first_vertex: usize, x: f32) -> String {
    let mut s = String::new();
    for k in 0..8 {
        let (dx, dy, dz) = ((k & 1) as f32, ((k >> 1) & 1) as f32, ((k >> 2) & 1) as f32);
        s += &format!("v {} {} {}\n", x + 2.0 * dx, 2.0 * dy, 2.0 * dz);
    }
    // Counter-clockwise from outside, then reversed below.
    let faces = [
        [0, 4, 6, 2],
        [1, 3, 7, 5],
        [0, 1, 5, 4],
        [2, 6, 7, 3],
        [0, 2, 3, 1],
        [4, 5, 7, 6],
    ];
    for f in faces {
        let v = f.map(|i| i + first_vertex);
        s += &format!("f {} {} {} {}\n", v[0], v[3], v[2], v[1]);
    }
    s
}

#[test]
fn one_inside_out_part_is_turned_back_alone() {
    let text = std::fs::read_to_string(common::data_dir().join("nav_test.obj")).unwrap();
    let vertices = text.lines().filter(|l| l.starts_with("v ")).count();
    let path = scratch("crate-inside-out.obj");
    std::fs::write(&path, text + &inside_out_crate(vertices + 1, 200.0)).unwrap();
    let (scene, report) = load(&path, Winding::Auto);
    assert!(!report.winding.whole_file_flipped, "{:?}", report.winding);
    assert_eq!(
        (
            report.winding.parts_flipped,
            report.winding.triangles_flipped
        ),
        (1, 12)
    );
    // Every face of the crate now points away from its centre.
    let centre = Vec3::new(201.0, 1.0, 1.0);
    let crate_faces: Vec<_> = scene
        .world_triangles()
        .into_iter()
        .filter(|([a, ..], _)| a.x >= 199.0)
        .collect();
    assert_eq!(crate_faces.len(), 12);
    for ([a, b, c], _) in crate_faces {
        let n = (b - a).cross(c - a);
        assert!(n.dot((a + b + c) / 3.0 - centre) > 0.0);
    }
    let (_, kept) = load(&path, Winding::Ccw);
    assert_eq!(kept.winding.triangles_flipped, 0);
    assert_eq!(kept.winding.clockwise_parts, 1);
}

#[test]
fn an_inside_out_level_loaded_as_written_names_the_cause() {
    let engine = Engine::cpu();
    let slope = NavParams::standard().sample.max_slope;
    for name in ["dungeon.obj", "nav_test.obj"] {
        let ((ccw, _), _) = both_windings(name);
        let (cw, report) = load(&scratch(&format!("cw-{name}")), Winding::Ccw);
        assert_eq!(report.winding.triangles_flipped, 0);
        // The dungeon's ceilings face down into its rooms: seen from above, the survey passes
        // their backs and finds the floors under them.
        let good = sightline::ground::survey(&engine, &ccw, slope).unwrap();
        let bad = sightline::ground::survey(&engine, &cw, slope).unwrap();
        assert!(
            !good.inside_out() && good.standable > good.hit / 2,
            "{name}: {good:?}"
        );
        assert!(bad.inside_out(), "{name}: {bad:?}");
        assert!(bad.cause().contains("--winding"), "{}", bad.cause());
        // Loaded as written, the level falls apart into pieces.
        let params = NavParams::standard();
        let (g, _) = nav::generate(&engine, &cw, &params, &CostParams::standard()).unwrap();
        assert!(g.components().largest_share() < 0.2, "{name}");
    }
}
