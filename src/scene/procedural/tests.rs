use super::*;
use crate::scene::MaterialFlags;
use glam::Vec2;

fn tris(scene: &Scene) -> Vec<([Vec3; 3], u32)> {
    scene.world_triangles()
}

fn bounds(scene: &Scene) -> (Vec3, Vec3) {
    tris(scene).iter().flat_map(|(t, _)| *t).fold(
        (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
        |(lo, hi), p| (lo.min(p), hi.max(p)),
    )
}

/// Highest surface at (x, z) whose material has any of `flags`, by brute force.
fn surface_at(scene: &Scene, x: f32, z: f32, flags: MaterialFlags) -> Option<f32> {
    surfaces_at(scene, x, z, flags).into_iter().reduce(f32::max)
}

/// Heights of every surface at (x, z) whose material has any of `flags`.
fn surfaces_at(scene: &Scene, x: f32, z: f32, flags: MaterialFlags) -> Vec<f32> {
    let mats = scene.materials();
    let p = Vec2::new(x, z);
    tris(scene)
        .iter()
        .filter(|(_, m)| mats[*m as usize].flags.intersects(flags))
        .filter_map(|([a, b, c], _)| {
            let (a2, b2, c2) = (
                Vec2::new(a.x, a.z),
                Vec2::new(b.x, b.z),
                Vec2::new(c.x, c.z),
            );
            let area = (b2 - a2).perp_dot(c2 - a2);
            if area.abs() < 1e-9 {
                return None;
            }
            let u = (c2 - b2).perp_dot(p - b2) / area;
            let v = (a2 - c2).perp_dot(p - c2) / area;
            let w = 1.0 - u - v;
            (u >= -1e-5 && v >= -1e-5 && w >= -1e-5).then_some(u * a.y + v * b.y + w * c.y)
        })
        .collect()
}

fn check_valid(scene: &Scene) {
    for (i, ([a, b, c], m)) in tris(scene).iter().enumerate() {
        assert!(
            a.is_finite() && b.is_finite() && c.is_finite(),
            "triangle {i} not finite"
        );
        let area = (*b - *a).cross(*c - *a).length() / 2.0;
        assert!(area > 1e-7, "triangle {i} is degenerate: {a} {b} {c}");
        assert!((*m as usize) < scene.materials().len());
    }
}

#[test]
fn every_scene_is_valid_deterministic_and_grows_with_detail() {
    for name in NAMES {
        let a = by_name(name, 7, 1).unwrap();
        let b = by_name(name, 7, 1).unwrap();
        assert_eq!(
            a.world_triangles(),
            b.world_triangles(),
            "{name} not deterministic"
        );
        check_valid(&a);
        let c = by_name(name, 7, 2).unwrap();
        assert!(
            c.triangle_count() * 2 > 3 * a.triangle_count(),
            "{name}: detail 2 should be much finer"
        );
        assert_eq!(
            by_name(name, 7, 0).unwrap().world_triangles(),
            a.world_triangles(),
            "detail 0 is 1"
        );
        assert!(default_observer(name).is_some());
    }
    assert!(by_name("nope", 1, 1).is_err());
    let e = by_name("urban", 1, 2000).unwrap_err();
    assert!(
        matches!(
            e,
            crate::Error::TooLarge {
                requested: 2000,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("--detail"), "{e}");
    assert!(default_observer("nope").is_none());
}

#[test]
fn seeds_change_the_seeded_scenes() {
    for name in ["rock", "village", "urban"] {
        let a = by_name(name, 1, 1).unwrap().world_triangles();
        let b = by_name(name, 2, 1).unwrap().world_triangles();
        assert_ne!(a, b, "{name} ignores its seed");
    }
}

#[test]
fn urban_reaches_a_million_triangles() {
    let d = detail_for_triangles("urban", 1, 1_000_000).unwrap();
    assert!(d <= 12, "detail {d} is not reasonable");
    assert!(urban(1, d).triangle_count() >= 1_000_000);
    assert!(urban(1, d - 1).triangle_count() < 1_000_000);
    assert_eq!(detail_for_triangles("rock", 1, 10), Some(1));
    assert_eq!(detail_for_triangles("nope", 1, 10), None);
}

#[test]
fn footprints_match_the_spec() {
    let (lo, hi) = bounds(&urban(3, 1));
    let size = hi - lo;
    assert!(
        (size.x - 100.0).abs() < 0.1 && (size.z - 122.0).abs() < 0.1,
        "urban {size}"
    );
    assert!(size.y > 6.0, "urban needs multi-storey buildings");
    let (lo, hi) = bounds(&village(3, 1));
    assert!((hi.x - lo.x - 120.0).abs() < 0.1 && (hi.z - lo.z - 120.0).abs() < 0.1);
    let (lo, hi) = bounds(&rock(3, 1));
    assert!(
        (hi.x - lo.x - 100.0).abs() < 0.1 && hi.y > 4.0 && hi.y < 6.5,
        "rock {lo} {hi}"
    );
    let (lo, hi) = bounds(&sniper(3, 1));
    assert!((hi.x - lo.x - 80.0).abs() < 0.1 && (hi.z - lo.z - 60.0).abs() < 0.1);
}

#[test]
fn rock_is_about_four_metres_wide_and_five_tall() {
    let s = rock(11, 1);
    let solid = MaterialFlags::SOLID;
    let top = surface_at(&s, 0.0, 0.0, solid).unwrap();
    assert!(top > 4.3 && top < 6.0, "rock top {top}");
    assert_eq!(surface_at(&s, 4.0, 0.0, solid), Some(0.0));
    assert!(surface_at(&s, 1.5, 0.0, solid).unwrap() > 1.0);
}

#[test]
fn village_cliff_slope_and_features() {
    let s = village(5, 1);
    let l = village_layout();
    let solid = MaterialFlags::SOLID;
    let mid = (l.cliff_edge[0] + l.cliff_edge[1]) / 2.0;
    let top = surface_at(&s, mid.x, mid.z - 0.5, solid).unwrap();
    let foot = surface_at(&s, mid.x, mid.z + 0.5, solid).unwrap();
    assert!((top - foot - 3.0).abs() < 1e-3, "cliff {top} - {foot}");
    // The steep slope: triangles around its centre lean more than 45 degrees.
    let c = l.steep_slope_center;
    let steep = tris(&s)
        .iter()
        .filter(|(t, _)| ((t[0] + t[1] + t[2]) / 3.0).distance(c) < 1.0)
        .map(|(t, _)| (t[1] - t[0]).cross(t[2] - t[0]).normalize())
        .filter(|n| n.y > 0.1 && n.y < std::f32::consts::FRAC_1_SQRT_2)
        .count();
    assert!(steep > 0, "no steep triangles at the slope");
    assert!(
        l.steep_slope_normal.y < std::f32::consts::FRAC_1_SQRT_2 && l.steep_slope_degrees > 45.0
    );
    // Flat ground at the features; a roof over the room; open sky in a doorway.
    for p in [
        l.building_center + Vec3::X * 12.0,
        l.vehicles[0].position + Vec3::X * 3.0,
    ] {
        assert!(surface_at(&s, p.x, p.z, solid).unwrap().abs() < 1e-4);
    }
    let roof = surface_at(&s, l.room_center.x, l.room_center.z, solid).unwrap();
    assert!((roof - 3.0).abs() < 1e-4, "roof {roof}");
    for d in &l.doorways {
        let p = d.center + d.normal * 0.02;
        let hs = surfaces_at(&s, p.x, p.z, solid);
        assert!(
            hs.iter().all(|&h| !(0.06..=2.09).contains(&h)),
            "doorway {p} blocked: {hs:?}"
        );
        assert!(
            hs.iter().any(|&h| (h - d.height).abs() < 0.06),
            "no lintel over {p}"
        );
    }
    assert!(l.doorways.iter().all(|d| (d.width - 0.9).abs() < 1e-6));
    assert_eq!(l.doors.len(), 3);
    assert_eq!(s.object_ids().count(), 1 + l.vehicles.len() + l.doors.len());
    for door in &l.doors {
        assert_eq!(s.transform(door.object), Some(door.open));
    }
    // Closing a door fills its doorway.
    let mut s2 = s.clone();
    for door in &l.doors {
        s2.set_transform(door.object, door.closed).unwrap();
        let c = l.doorways[door.doorway].center;
        let hs = surfaces_at(&s2, c.x, c.z, solid);
        assert!(
            hs.iter().any(|&h| h > 1.9 && h < 2.09),
            "door at {c} does not close: {hs:?}"
        );
    }
    let wp = village_waypoints();
    assert!(wp.len() > 30);
    // Waypoints sit on a surface (floor or ground), within 6 cm.
    for p in &wp {
        let g = surface_at(&s, p.x, p.z, MaterialFlags::WALKABLE).unwrap();
        assert!(g >= p.y - 0.06, "waypoint {p} below ground {g}");
    }
}

#[test]
fn village_vehicles_can_be_seen_under() {
    let s = village(5, 1);
    let l = village_layout();
    let mats = s.materials();
    for v in &l.vehicles {
        // No solid triangle between 5 cm and the clearance height right under the middle.
        let p = v.position;
        let blocked = tris(&s).iter().any(|(t, m)| {
            mats[*m as usize].flags.contains(MaterialFlags::SOLID)
                && t.iter()
                    .all(|q| Vec2::new(q.x - p.x, q.z - p.z).length() < 0.5)
                && t.iter().any(|q| q.y > 0.05 && q.y < v.clearance - 0.01)
        });
        assert!(!blocked, "vehicle at {p} has no clearance");
        let under = surface_at(&s, p.x, p.z, MaterialFlags::SOLID).unwrap();
        assert!(under >= v.clearance - 1e-3, "no body over {p}");
    }
}

#[test]
fn sniper_creek_is_below_the_banks() {
    let s = sniper(1, 1);
    let l = sniper_layout();
    let solid = MaterialFlags::SOLID;
    let bed = surface_at(&s, 0.0, 10.0, solid).unwrap();
    let west = surface_at(&s, -20.0, 10.0, solid).unwrap();
    let east = surface_at(&s, 20.0, 10.0, solid).unwrap();
    assert!(
        bed < west - 2.5 && bed < east - 2.5,
        "bed {bed} banks {west} {east}"
    );
    let water = surface_at(&s, 0.0, 10.0, MaterialFlags::WALKABLE).unwrap();
    assert!((water - l.water_y).abs() < 1e-4);
    // The bridge deck is at bank level, the parapets 1 m above it.
    assert!(surface_at(&s, 0.0, 0.0, solid).unwrap().abs() < 1e-4);
    assert!((surface_at(&s, 0.0, 1.9, solid).unwrap() - 1.0).abs() < 1e-4);
    // Stairs climb out of the creek.
    let [foot, head] = l.stairs[0];
    assert!(
        surface_at(&s, foot.x, foot.z + 0.2 * (head.z - foot.z).signum(), solid).unwrap() < -2.5
    );
    assert!(surface_at(&s, head.x, head.z, solid).unwrap().abs() < 1e-4);
}

/// Every directed edge of `mesh` is matched by exactly one reverse edge (closed and
/// consistently oriented), comparing positions bit for bit.
fn assert_watertight(mesh: &Mesh, what: &str) {
    use std::collections::HashMap;
    let key = |p: Vec3| p.to_array().map(f32::to_bits);
    let mut edges: HashMap<([u32; 3], [u32; 3]), i32> = HashMap::new();
    for t in &mesh.triangles {
        for k in 0..3 {
            let (a, b) = (
                mesh.positions[t[k] as usize],
                mesh.positions[t[(k + 1) % 3] as usize],
            );
            *edges.entry((key(a), key(b))).or_default() += 1;
        }
    }
    for ((a, b), n) in &edges {
        assert_eq!(*n, 1, "{what}: edge used {n} times");
        assert_eq!(edges.get(&(*b, *a)), Some(&1), "{what}: open edge");
    }
}

#[test]
fn closed_solids_are_watertight() {
    use super::geom::{blob, cuboid, hexa, wall, wheel, Bumps, Hole};
    for density in [0.3, 1.0, 2.7] {
        let mut b = Builder::new(density);
        let holes = [
            Hole {
                u0: 1.0,
                u1: 1.9,
                v0: 0.0,
                v1: 2.1,
                glass: false,
            },
            Hole {
                u0: 3.0,
                u1: 4.2,
                v0: 1.0,
                v1: 2.0,
                glass: false,
            },
            Hole {
                u0: 5.0,
                u1: 6.2,
                v0: 1.0,
                v1: 2.4,
                glass: false,
            },
        ];
        let xf = super::geom::frame(Vec3::new(3.0, 0.5, -2.0), Vec2::new(0.3, 0.8));
        wall(&mut b, 8.0, 3.0, 0.3, &holes, 0, xf);
        assert_watertight(&b.level, "wall with holes");
        let mut m = Mesh::default();
        let bumps = Bumps::new(&mut Rng::new(3), 0.15);
        blob(
            &mut m,
            Vec3::new(1.0, 2.0, 3.0),
            Vec3::new(2.0, 2.6, 1.5),
            7,
            &bumps,
            0,
        );
        assert_watertight(&m, "blob");
        let mut m = Mesh::default();
        cuboid(&mut m, Vec3::ZERO, Vec3::new(1.2, 0.7, 3.3), density, 0, xf);
        assert_watertight(&m, "cuboid");
        let mut m = Mesh::default();
        let c = super::geom::box_corners(Vec3::ZERO, Vec3::ONE).map(|p| p + Vec3::X * p.y * 0.4);
        hexa(&mut m, &c, density, [0; 6]);
        assert_watertight(&m, "sheared hexahedron");
        let mut m = Mesh::default();
        wheel(&mut m, Vec3::ONE, 0.4, 0.1, 12, 0);
        assert_watertight(&m, "wheel");
    }
}
