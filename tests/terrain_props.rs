//! Per-waypoint properties (`sightline::terrain::props`), proved on scenes with known answers:
//!
//! - key locations: every door and window of the sniper level, and exactly the two openings of
//!   a hand-made wall;
//! - light: a white open plane is 1, a spot in a wall's shadow keeps exactly its sky share
//!   (checked against sky rays intersected with the wall by hand), rooms are darker than open
//!   ground, and the GPU gives the CPU's levels;
//! - movement: creek nodes wade, door nodes are at doors, open ground is plain;
//! - areas: rooms hold no outdoor node, the creek separates west from east, files round trip;
//! - bad input returns errors that say what to change.

#[path = "common/gpu.rs"]
mod gpu;

use glam::{Affine3A, Vec3};
use sightline::nav::{self, CostParams, NavGraph, NavParams};
use sightline::scene::procedural::{self, sniper_layout};
use sightline::terrain::props::{
    find_areas, find_key_locations, light_levels, movement_types, read_areas, read_key_locations,
    sky_directions, AreaParams, KeyKind, KeyLocation, KeyParams, LightParams, Movement,
};
use sightline::{Engine, Error, Material, MaterialFlags, Mesh, Mobility, Scene};
use std::sync::OnceLock;

/// The sniper level, its nav graph and the key locations found in it (built once).
fn sniper() -> &'static (Scene, NavGraph, Vec<KeyLocation>) {
    static S: OnceLock<(Scene, NavGraph, Vec<KeyLocation>)> = OnceLock::new();
    S.get_or_init(|| {
        let engine = Engine::cpu();
        let scene = procedural::sniper(1, 1);
        let (graph, _) = nav::generate(
            &engine,
            &scene,
            &NavParams::standard(),
            &CostParams::standard(),
        )
        .unwrap();
        let keys = find_key_locations(&engine, &scene, &graph, &KeyParams::standard()).unwrap();
        (scene, graph, keys)
    })
}

fn horizontal(a: Vec3, b: Vec3) -> f32 {
    (a - b).with_y(0.0).length()
}

/// A closed box `lo..hi`.
fn cuboid(mesh: &mut Mesh, lo: Vec3, hi: Vec3) {
    let c: [Vec3; 8] = std::array::from_fn(|k| {
        Vec3::new(
            if k & 1 == 0 { lo.x } else { hi.x },
            if k & 2 == 0 { lo.y } else { hi.y },
            if k & 4 == 0 { lo.z } else { hi.z },
        )
    });
    for [a, b, cc, d] in [
        [0, 4, 6, 2],
        [1, 3, 7, 5],
        [0, 1, 5, 4],
        [2, 6, 7, 3],
        [0, 2, 3, 1],
        [4, 5, 7, 6],
    ] {
        mesh.push_quad(c[a], c[b], c[cc], c[d], 0);
    }
}

/// A 40 m white floor at y = 0 (albedo 1, solid and walkable).
fn white_floor() -> Mesh {
    let mut m = Mesh::default();
    let h = 20.0;
    m.push_quad(
        Vec3::new(-h, 0.0, -h),
        Vec3::new(-h, 0.0, h),
        Vec3::new(h, 0.0, h),
        Vec3::new(h, 0.0, -h),
        0,
    );
    m
}

fn scene_of(mesh: Mesh) -> Scene {
    let white = Material::new("white", MaterialFlags::SOLID | MaterialFlags::WALKABLE, 1.0);
    let mut scene = Scene::new(vec![white]);
    scene
        .add_object(mesh, Affine3A::IDENTITY, Mobility::Static)
        .unwrap();
    scene
}

/// A 12 m x 3 m wall along x at z = 0 (0.3 m thick) with a 0.9 m x 2.1 m doorway centred at
/// x = -3 and a 1.2 m x 1.0 m window with a 1 m sill centred at x = 3, on the white floor.
fn wall_with_door_and_window() -> Scene {
    let mut m = white_floor();
    let (z0, z1) = (-0.15, 0.15);
    let mut piece = |x0: f32, x1: f32, y0: f32, y1: f32| {
        cuboid(&mut m, Vec3::new(x0, y0, z0), Vec3::new(x1, y1, z1));
    };
    piece(-6.0, -3.45, 0.0, 3.0);
    piece(-3.45, -2.55, 2.1, 3.0);
    piece(-2.55, 2.4, 0.0, 3.0);
    piece(2.4, 3.6, 0.0, 1.0);
    piece(2.4, 3.6, 2.0, 3.0);
    piece(3.6, 6.0, 0.0, 3.0);
    scene_of(m)
}

// ---------------------------------------------------------------------------------------------
// Key locations

#[test]
fn sniper_doors_and_windows_are_found() {
    let (_, _, keys) = sniper();
    let layout = sniper_layout();
    let mut truth: Vec<(KeyKind, Vec3)> = Vec::new();
    for b in &layout.buildings {
        truth.extend(b.windows.iter().map(|&w| (KeyKind::Window, w)));
        truth.push((KeyKind::Door, b.door));
    }
    let mut used = vec![false; keys.len()];
    for (kind, at) in &truth {
        let best = keys
            .iter()
            .enumerate()
            .filter(|(_, k)| k.kind == *kind)
            .min_by(|a, b| horizontal(a.1.position, *at).total_cmp(&horizontal(b.1.position, *at)));
        let (i, k) = best.unwrap_or_else(|| panic!("no {kind:?} found at all: {keys:?}"));
        let d = horizontal(k.position, *at);
        eprintln!("{kind:?} at {at}: found at {} ({d:.3} m)", k.position);
        assert!(d <= 0.75, "{kind:?} at {at}: nearest is {k:?}, {d} m away");
        used[i] = true;
    }
    let extra: Vec<_> = keys.iter().zip(&used).filter(|(_, u)| !**u).collect();
    eprintln!("extra detections: {extra:?}");
    assert!(extra.len() <= 2, "more than 2 extra detections: {extra:?}");
}

#[test]
fn a_wall_with_one_door_and_one_window_has_exactly_those() {
    let scene = wall_with_door_and_window();
    let mut nodes = Vec::new();
    for x in (-9..=9).step_by(2) {
        for z in [-3.0, -1.0, 1.0, 3.0] {
            nodes.push(Vec3::new(x as f32, 0.0, z));
        }
    }
    let graph = NavGraph::new(nodes, Vec::new(), &CostParams::standard()).unwrap();
    let keys = find_key_locations(&Engine::cpu(), &scene, &graph, &KeyParams::standard()).unwrap();
    assert_eq!(keys.len(), 2, "{keys:?}");
    let door = keys
        .iter()
        .find(|k| k.kind == KeyKind::Door)
        .expect("a door");
    let window = keys
        .iter()
        .find(|k| k.kind == KeyKind::Window)
        .expect("a window");
    eprintln!("door {door:?}\nwindow {window:?}");
    assert!(
        door.position.distance(Vec3::new(-3.0, 0.0, 0.0)) < 0.1,
        "{door:?}"
    );
    assert!(
        window.position.distance(Vec3::new(3.0, 1.5, 0.0)) < 0.1,
        "{window:?}"
    );
    for k in &keys {
        assert!(k.normal.z.abs() > 0.99, "the wall's normal is +-z: {k:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Light

#[test]
fn an_open_white_plane_is_fully_lit() {
    let scene = scene_of(white_floor());
    let pts = [Vec3::ZERO, Vec3::new(5.0, 0.0, -7.0)];
    let levels = light_levels(&Engine::cpu(), &scene, &pts, &LightParams::standard()).unwrap();
    for l in levels {
        assert!((l - 1.0).abs() < 1e-3, "{l}");
    }
}

#[test]
fn a_spot_in_a_walls_shadow_keeps_exactly_its_sky_share() {
    // A 10 m high wall in the plane x = 0 (z -50..50); the sun is to the east (+x).
    let mut m = white_floor();
    let (h, w) = (10.0, 50.0);
    m.push_quad(
        Vec3::new(0.0, 0.0, -w),
        Vec3::new(0.0, 0.0, w),
        Vec3::new(0.0, h, w),
        Vec3::new(0.0, h, -w),
        0,
    );
    let scene = scene_of(m);
    let p = LightParams::standard();
    let point = Vec3::new(-1.0, 0.0, 0.0);
    let level = light_levels(&Engine::cpu(), &scene, &[point], &p).unwrap()[0];
    // The sky rays that the wall stops, intersected by hand.
    let eye = point + Vec3::Y * p.height;
    let blocked = sky_directions(p.sky_samples)
        .iter()
        .filter(|d| {
            let t = (0.0 - eye.x) / d.x;
            let hit = eye + **d * t;
            d.x > 0.0 && t < p.reach && hit.y > 0.0 && hit.y < h && hit.z.abs() < w
        })
        .count();
    assert!(blocked > 0 && blocked < p.sky_samples as usize);
    let open = 1.0 - blocked as f32 / p.sky_samples as f32;
    let sun = p.toward_sun.normalize();
    let expected = p.sky * open / (p.sun * sun.y + p.sky);
    eprintln!("shadow level {level}, expected {expected} ({blocked} sky rays blocked)");
    assert!((level - expected).abs() < 1e-6, "{level} vs {expected}");
    // The sun side of the same wall sees the sun.
    let sunny = light_levels(&Engine::cpu(), &scene, &[Vec3::new(1.0, 0.0, 0.0)], &p).unwrap();
    assert!(sunny[0] > level + 0.5 * p.sun * sun.y / (p.sun * sun.y + p.sky));
}

#[test]
fn rooms_are_darker_than_open_ground_and_the_gpu_agrees() {
    let (scene, graph, _) = sniper();
    let inside = graph.nearest(Vec3::new(-33.0, 0.0, 16.0)).unwrap();
    let open = graph.nearest(Vec3::new(-12.0, 0.0, 2.0)).unwrap();
    let nodes = graph.nodes();
    let p = LightParams::standard();
    let cpu = light_levels(&Engine::cpu(), scene, nodes, &p).unwrap();
    let (a, b) = (cpu[inside as usize], cpu[open as usize]);
    eprintln!(
        "inside {} at {}, open {} at {}",
        a, nodes[inside as usize], b, nodes[open as usize]
    );
    assert!(a < b, "inside {a} must be darker than open ground {b}");
    assert!(cpu.iter().all(|l| (0.0..=1.0).contains(l)));
    if let Some(gpu) = gpu::gpu_engine() {
        let g = light_levels(&gpu, scene, nodes, &p).unwrap();
        let worst = cpu
            .iter()
            .zip(&g)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        eprintln!("largest GPU-CPU difference: {worst}");
        assert!(worst <= 1e-6, "GPU and CPU light levels differ by {worst}");
    }
}

// ---------------------------------------------------------------------------------------------
// Movement

#[test]
fn creek_nodes_wade_door_nodes_are_doors_open_ground_is_plain() {
    let (_, graph, keys) = sniper();
    let moves = movement_types(graph, keys, 1.5);
    let layout = sniper_layout();
    let nodes = graph.nodes();
    let creek: Vec<usize> = (0..nodes.len())
        .filter(|&i| nodes[i].y < layout.water_y + 0.1)
        .collect();
    assert!(creek.len() > 20, "{} creek nodes", creek.len());
    for &i in &creek {
        assert!(
            moves[i].contains(Movement::WATER),
            "creek node {} is {:?}",
            nodes[i],
            moves[i]
        );
    }
    let mut at_doors = 0;
    for b in &layout.buildings {
        for (i, &q) in nodes.iter().enumerate() {
            if horizontal(q, b.door) < 1.0 && (q.y - b.door.y).abs() < 1.0 {
                at_doors += 1;
                assert!(
                    moves[i].contains(Movement::DOOR),
                    "{q} by the door is {:?}",
                    moves[i]
                );
            }
        }
    }
    assert!(at_doors >= 2, "{at_doors} nodes at doors");
    let field: Vec<usize> = (0..nodes.len())
        .filter(|&i| {
            let q = nodes[i];
            (10.0..20.0).contains(&q.x.abs()) && q.z.abs() < 6.0 && q.y.abs() < 0.1
        })
        .collect();
    assert!(field.len() > 20);
    for i in field {
        assert!(moves[i].is_plain(), "{} is {}", nodes[i], moves[i].names());
    }
    assert_eq!(
        Movement::STAIRS.union(Movement::WATER).names(),
        "stairs+water"
    );
    assert_eq!(Movement::PLAIN.names(), "");
}

// ---------------------------------------------------------------------------------------------
// Areas

#[test]
fn rooms_hold_no_outdoor_node_and_the_creek_divides() {
    let (scene, graph, keys) = sniper();
    let areas = find_areas(&Engine::cpu(), scene, graph, keys, &AreaParams::standard()).unwrap();
    let nodes = graph.nodes();
    assert_eq!(areas.of_node.len(), nodes.len());
    assert!(areas.of_node.iter().all(|&a| a < areas.count));
    let sw = &sniper_layout().buildings[0];
    let within = |q: Vec3, margin: f32| {
        q.y < 1.0
            && q.x > sw.min.x - margin
            && q.x < sw.max.x + margin
            && q.z > sw.min.z - margin
            && q.z < sw.max.z + margin
    };
    let inside: Vec<usize> = (0..nodes.len())
        .filter(|&i| within(nodes[i], -0.5))
        .collect();
    assert!(inside.len() > 10, "{} nodes inside", inside.len());
    let rooms: std::collections::BTreeSet<u32> = inside.iter().map(|&i| areas.of_node[i]).collect();
    eprintln!(
        "{} areas; the south-west building's nodes are in {rooms:?}",
        areas.count
    );
    for (j, &q) in nodes.iter().enumerate() {
        if rooms.contains(&areas.of_node[j]) {
            assert!(
                within(q, 0.5),
                "node {q} shares a room with the building's inside"
            );
        }
    }
    assert!(rooms.iter().all(|&r| areas.indoor[r as usize]));
    for (i, &a) in nodes.iter().enumerate() {
        for (j, &b) in nodes.iter().enumerate() {
            let (ai, aj) = (areas.of_node[i], areas.of_node[j]);
            if a.x < -4.5 && b.x > 4.5 && ai == aj {
                panic!(
                    "{a} and {b} (outdoor: {}) share area {ai}",
                    !areas.indoor[ai as usize]
                );
            }
        }
    }
    // The file round trip.
    let dir = std::env::temp_dir().join(format!("sightline-areas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("areas.csv");
    std::fs::write(&path, areas.to_csv()).unwrap();
    assert_eq!(read_areas(&path, nodes.len()).unwrap(), areas);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn area_files_name_what_is_wrong() {
    let dir = std::env::temp_dir().join(format!("sightline-area-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let check = |text: &str, line: Option<usize>, says: &str| {
        let path = dir.join("a.csv");
        std::fs::write(&path, text).unwrap();
        match read_areas(&path, 3) {
            Err(Error::Load {
                path: p,
                line: l,
                message,
            }) => {
                assert!(p.ends_with("a.csv"), "{p}");
                assert_eq!(l, line, "{message}");
                assert!(message.contains(says), "{message}");
            }
            other => panic!("{text:?}: {other:?}"),
        }
    };
    let ok = dir.join("ok.csv");
    std::fs::write(&ok, "waypoint,area\n0,0\n1,1\n2,0\n").unwrap();
    let a = read_areas(&ok, 3).unwrap();
    assert_eq!(
        (a.of_node, a.count, a.indoor),
        (vec![0, 1, 0], 2, vec![false, false])
    );
    check("0,0\n1,x\n2,0\n", Some(2), "area `x`");
    check("0,0\n2,0\n", None, "waypoint 1 has no area");
    check("0,0\n1,0\n1,0\n2,0\n", Some(3), "listed twice");
    check("0,0\n1,0\n7,0\n", Some(3), "waypoint `7`");
    check("0,0\n1,2\n2,2\n", None, "area 1 has no waypoint");
    check("0,0,1\n1,0,0\n2,0,1\n", Some(2), "indoor");
    check("0,0\n1,0\n2\n", Some(3), "found 1 fields");
    assert!(matches!(
        read_areas(dir.join("missing.csv"), 3),
        Err(Error::Load { .. })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Bad input

#[test]
fn bad_parameters_and_files_are_errors() {
    let engine = Engine::cpu();
    let scene = scene_of(white_floor());
    let pts = [Vec3::ZERO];
    let param = |p: LightParams| match light_levels(&engine, &scene, &pts, &p) {
        Err(Error::InvalidParameter { name, .. }) => name,
        other => panic!("{other:?}"),
    };
    let s = LightParams::standard();
    assert_eq!(param(LightParams { sun: f32::NAN, ..s }), "sun");
    assert_eq!(
        param(LightParams {
            toward_sun: Vec3::NAN,
            ..s
        }),
        "toward_sun"
    );
    assert_eq!(
        param(LightParams {
            sky_samples: 0,
            ..s
        }),
        "sky_samples"
    );
    assert_eq!(
        param(LightParams {
            sky_samples: 5000,
            ..s
        }),
        "sky_samples"
    );
    assert_eq!(param(LightParams { reach: -1.0, ..s }), "reach");
    assert_eq!(
        param(LightParams {
            sky: 0.0,
            toward_sun: Vec3::NEG_Y,
            ..s
        }),
        "sky"
    );
    assert!(matches!(
        light_levels(&engine, &scene, &[Vec3::new(f32::NAN, 0.0, 0.0)], &s),
        Err(Error::NonFiniteQuery { index: 0, .. })
    ));
    let graph = NavGraph::new(vec![Vec3::ZERO], Vec::new(), &CostParams::standard()).unwrap();
    let bad_keys = KeyParams {
        directions: 0,
        ..KeyParams::standard()
    };
    assert!(matches!(
        find_key_locations(&engine, &scene, &graph, &bad_keys),
        Err(Error::InvalidParameter {
            name: "directions",
            ..
        })
    ));
    let bad_areas = AreaParams {
        cell: f32::INFINITY,
        ..AreaParams::standard()
    };
    assert!(matches!(
        find_areas(&engine, &scene, &graph, &[], &bad_areas),
        Err(Error::InvalidParameter { name: "cell", .. })
    ));

    let dir = std::env::temp_dir().join(format!("sightline-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("keys.csv");
    std::fs::write(&path, "kind,x,y,z,nx,nz\ndoor,1,0,2,0,1\nwindow,3,1.5,4\n").unwrap();
    let keys = read_key_locations(&path).unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0].kind, KeyKind::Door);
    assert_eq!(keys[0].normal, Vec3::Z);
    assert_eq!(keys[1].position, Vec3::new(3.0, 1.5, 4.0));
    for empty in ["", "kind,x,y,z\n"] {
        std::fs::write(&path, empty).unwrap();
        let e = read_key_locations(&path).unwrap_err().to_string();
        assert!(
            e.contains("keys.csv") && e.contains("no key locations"),
            "{e}"
        );
    }
    for (text, line, says) in [
        ("door,1,0,2\nhatch,1,2,3\n", 2, "hatch"),
        ("door,1,0\n", 1, "fields"),
        ("window,1,nan,2\n", 1, "nan"),
        ("door,1,0,2,0,0\n", 1, "zero"),
    ] {
        std::fs::write(&path, text).unwrap();
        match read_key_locations(&path) {
            Err(Error::Load {
                line: Some(l),
                message,
                ..
            }) => {
                assert_eq!(l, line, "{message}");
                assert!(message.contains(says), "{message}");
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
