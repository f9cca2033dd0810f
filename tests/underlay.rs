//! The top-down underlay on scenes whose answer is known exactly: a wall's footprint, a
//! plateau's rim, a roofed room whose walls touch the roof, a door, eaves, water and foliage;
//! GPU against CPU on a built-in scene and a real level; bad input.

#[path = "common/mod.rs"]
mod common;
#[path = "common/contract.rs"]
mod contract;
#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/scenes.rs"]
mod scenes;

use glam::{Affine3A, Vec2, Vec3};
use scenes::{cuboid, ground, materials, FOLIAGE, GROUND, SOLID};
use sightline::underlay::{underlay, Cover, Surface, Underlay, HEADROOM, STEP};
use sightline::{ground, Engine, Error, Mask, Material, MaterialFlags, Mesh, Mobility, Scene};

// The plateau's 1 m rise reads as a wall; the room's 2.5 m under the roof is headroom.
const _: () = assert!(STEP < 1.0 && HEADROOM < 2.5);

/// Metres per pixel of the hand-made cases, over the square -5..5.
const PX: f32 = 0.1;
const N: usize = 100;

fn scene(mesh: Mesh) -> Scene {
    let mut s = Scene::new(materials());
    s.add_object(mesh, Affine3A::IDENTITY, Mobility::Static)
        .unwrap();
    s
}

fn draw(engine: &Engine, s: &Scene) -> Underlay {
    underlay(engine, s, Vec2::splat(-5.0), PX, N, N).unwrap()
}

/// Pixel centres (x, z) with their index.
fn pixels() -> impl Iterator<Item = (usize, Vec2)> {
    (0..N * N).map(|i| {
        let c = Vec2::new((i % N) as f32 + 0.5, (i / N) as f32 + 0.5) * PX - 5.0;
        (i, c)
    })
}

fn inside(p: Vec2, lo: Vec2, hi: Vec2) -> bool {
    p.x > lo.x && p.x < hi.x && p.y > lo.y && p.y < hi.y
}

#[test]
fn a_thin_wall_is_dark_over_exactly_its_footprint_and_a_plateau_along_its_rim() {
    let mut m = Mesh::default();
    ground(&mut m, 20.0, 0.0);
    // A wall 0.3 m thick, 2.5 m high; a plateau 4 m x 3 m, 1 m high.
    let (wall_lo, wall_hi) = (Vec2::new(-4.0, -3.2), Vec2::new(0.0, -2.9));
    cuboid(
        &mut m,
        Vec3::new(-4.0, 0.0, -3.2),
        Vec3::new(0.0, 2.5, -2.9),
        SOLID,
    );
    let (plat_lo, plat_hi) = (Vec2::new(0.5, 0.5), Vec2::new(4.5, 3.5));
    cuboid(
        &mut m,
        Vec3::new(0.5, 0.0, 0.5),
        Vec3::new(4.5, 1.0, 3.5),
        SOLID,
    );
    let s = scene(m);
    let u = draw(&Engine::cpu(), &s);
    let reach = (sightline::underlay::WALL_REACH / PX).round();
    for (i, p) in pixels() {
        let (surface, y) = (u.surface[i], u.elevation[i]);
        if inside(p, wall_lo, wall_hi) {
            assert_eq!(surface, Surface::Wall, "wall footprint at {p}");
            assert!((y - 2.5).abs() < 1e-4, "wall top at {p}: {y}");
        } else if inside(p, plat_lo, plat_hi) {
            // Within `reach` pixels of the plateau's edge: its rim.
            let edge = (p - plat_lo).min(plat_hi - p).min_element() / PX;
            let want = if edge < reach {
                Surface::Wall
            } else {
                Surface::Ground
            };
            assert_eq!(surface, want, "plateau at {p} ({edge:.2} px from its edge)");
            assert!((y - 1.0).abs() < 1e-4, "plateau top at {p}: {y}");
        } else {
            assert_eq!(surface, Surface::Ground, "open ground at {p}");
            assert!(y.abs() < 1e-4, "ground at {p}: {y}");
        }
        assert_eq!(u.cover[i], Cover::Open, "{p}");
        assert!(
            (u.normal[i] - Vec3::Y).length() < 1e-5,
            "flat everywhere seen from above"
        );
    }
    assert_eq!(u.count(Surface::Empty), 0);
}

/// A 6 m x 4 m room: walls 0.2 m thick and 2.5 m high whose tops touch a 0.2 m roof slab that
/// overhangs them by 0.5 m; a 1 m door in the south wall (z = 2).
fn roofed_room() -> Mesh {
    let mut m = Mesh::default();
    ground(&mut m, 20.0, 0.0);
    let (x0, x1, z0, z1, t, h) = (-3.0, 3.0, -2.0, 2.0, 0.2, 2.5);
    cuboid(
        &mut m,
        Vec3::new(x0, 0.0, z0),
        Vec3::new(x1, h, z0 + t),
        SOLID,
    ); // north
    cuboid(
        &mut m,
        Vec3::new(x0, 0.0, z1 - t),
        Vec3::new(-0.5, h, z1),
        SOLID,
    ); // south, west of the door
    cuboid(
        &mut m,
        Vec3::new(0.5, 0.0, z1 - t),
        Vec3::new(x1, h, z1),
        SOLID,
    ); // south, east
    cuboid(
        &mut m,
        Vec3::new(x0, 0.0, z0 + t),
        Vec3::new(x0 + t, h, z1 - t),
        SOLID,
    ); // west
    cuboid(
        &mut m,
        Vec3::new(x1 - t, 0.0, z0 + t),
        Vec3::new(x1, h, z1 - t),
        SOLID,
    ); // east
    cuboid(
        &mut m,
        Vec3::new(x0 - 0.5, h, z0 - 0.5),
        Vec3::new(x1 + 0.5, h + 0.2, z1 + 0.5),
        SOLID,
    );
    m
}

fn check_roofed_room(u: &Underlay) {
    let walls = [
        (Vec2::new(-3.0, -2.0), Vec2::new(3.0, -1.8)),
        (Vec2::new(-3.0, 1.8), Vec2::new(-0.5, 2.0)),
        (Vec2::new(0.5, 1.8), Vec2::new(3.0, 2.0)),
        (Vec2::new(-3.0, -1.8), Vec2::new(-2.8, 1.8)),
        (Vec2::new(2.8, -1.8), Vec2::new(3.0, 1.8)),
    ];
    let roof = (Vec2::new(-3.5, -2.5), Vec2::new(3.5, 2.5));
    let mut counts = [0usize; 3];
    for (i, p) in pixels() {
        if walls.iter().any(|&(lo, hi)| inside(p, lo, hi)) {
            // Under the roof, but solid from the roof down: a wall, not a room.
            assert_eq!(u.surface[i], Surface::Wall, "wall under the roof at {p}");
            assert_eq!(u.cover[i], Cover::Open, "wall at {p}");
            counts[0] += 1;
        } else if inside(p, roof.0, roof.1) {
            // The floor under the roof: the room, the doorway and the eaves.
            assert_eq!(u.cover[i], Cover::Overhang, "under the roof at {p}");
            assert!(u.elevation[i].abs() < 1e-4, "floor under the roof at {p}");
            assert!((u.top[i] - 2.7).abs() < 1e-4, "roof top at {p}");
            let near_wall = walls
                .iter()
                .any(|&(lo, hi)| inside(p, lo - Vec2::splat(PX), hi + Vec2::splat(PX)));
            if !near_wall {
                assert_eq!(u.surface[i], Surface::Ground, "floor at {p}");
            }
            counts[1] += 1;
        } else {
            assert_eq!(
                (u.surface[i], u.cover[i]),
                (Surface::Ground, Cover::Open),
                "{p}"
            );
            counts[2] += 1;
        }
    }
    // The doorway, 1 m wide, is open floor under the roof.
    for x in [-0.45, 0.0, 0.45] {
        let i = ((1.95 + 5.0) / PX) as usize * N + ((x + 5.0) / PX) as usize;
        assert_eq!(
            (u.surface[i], u.cover[i]),
            (Surface::Ground, Cover::Overhang),
            "door at x {x}"
        );
    }
    assert!(counts.iter().all(|&c| c > 100), "{counts:?}");
}

#[test]
fn a_roofed_room_shows_its_floor_hatched_its_walls_dark_and_its_door_open() {
    let s = scene(roofed_room());
    check_roofed_room(&draw(&Engine::cpu(), &s));
}

#[test]
fn water_is_water_and_foliage_tints_what_it_covers() {
    let mut mats = materials();
    mats.push(Material::new("water", MaterialFlags::WALKABLE, 0.1));
    let water = mats.len() as u32 - 1;
    let mut m = Mesh::default();
    // A creek: bed at -1 m, water surface at -0.3 m, x in -1..1.
    m.push_quad(
        Vec3::new(-1.0, -1.0, -5.0),
        Vec3::new(-1.0, -1.0, 5.0),
        Vec3::new(1.0, -1.0, 5.0),
        Vec3::new(1.0, -1.0, -5.0),
        GROUND,
    );
    m.push_quad(
        Vec3::new(-1.0, -0.3, -5.0),
        Vec3::new(-1.0, -0.3, 5.0),
        Vec3::new(1.0, -0.3, 5.0),
        Vec3::new(1.0, -0.3, -5.0),
        water,
    );
    for (x0, x1) in [(-6.0, -1.0), (1.0, 6.0)] {
        m.push_quad(
            Vec3::new(x0, 0.0, -6.0),
            Vec3::new(x0, 0.0, 6.0),
            Vec3::new(x1, 0.0, 6.0),
            Vec3::new(x1, 0.0, -6.0),
            GROUND,
        );
    }
    // A canopy 2..4 m up over x 2..4, z -4..-2; a bush 0..1 m at x -4..-3, z 2..3.
    cuboid(
        &mut m,
        Vec3::new(2.0, 2.0, -4.0),
        Vec3::new(4.0, 4.0, -2.0),
        FOLIAGE,
    );
    cuboid(
        &mut m,
        Vec3::new(-4.0, 0.0, 2.0),
        Vec3::new(-3.0, 1.0, 3.0),
        FOLIAGE,
    );
    let mut s = Scene::new(mats);
    s.add_object(m, Affine3A::IDENTITY, Mobility::Static)
        .unwrap();
    let u = draw(&Engine::cpu(), &s);
    for (i, p) in pixels() {
        if p.x.abs() < 1.0 - PX {
            assert_eq!(u.surface[i], Surface::Water, "creek at {p}");
            assert!((u.elevation[i] + 0.3).abs() < 1e-4);
        } else if inside(p, Vec2::new(2.0, -4.0), Vec2::new(4.0, -2.0)) {
            assert_eq!(u.cover[i], Cover::Foliage, "canopy at {p}");
            assert!(
                u.elevation[i].abs() < 1e-4,
                "the ground under the canopy at {p}"
            );
        } else if inside(p, Vec2::new(-4.0, 2.0), Vec2::new(-3.0, 3.0)) {
            assert_eq!(u.cover[i], Cover::Foliage, "bush at {p}");
            assert!((u.elevation[i] - 1.0).abs() < 1e-4, "the bush's top at {p}");
        } else {
            assert_eq!(u.cover[i], Cover::Open, "{p}");
        }
    }
}

#[test]
fn empty_scenes_and_bad_input() {
    let e = Engine::cpu();
    let empty = Scene::new(materials());
    let u = underlay(&e, &empty, Vec2::ZERO, 1.0, 8, 4).unwrap();
    assert_eq!(u.count(Surface::Empty), 32);
    assert_eq!(u.elevation_range(), None);
    let s = scene(roofed_room());
    let u = underlay(&e, &s, Vec2::ZERO, 1.0, 0, 0).unwrap();
    assert!(u.surface.is_empty());
    for px in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        let err = underlay(&e, &s, Vec2::ZERO, px, 4, 4).unwrap_err();
        assert!(
            matches!(err, Error::InvalidParameter { name: "pixel", .. }),
            "{err}"
        );
    }
    let err = underlay(&e, &s, Vec2::new(f32::NAN, 0.0), 1.0, 4, 4).unwrap_err();
    assert!(err.to_string().contains("not finite"), "{err}");
    let err = underlay(&e, &s, Vec2::ZERO, 1.0, 1 << 14, 1 << 14).unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
}

#[test]
fn gpu_draws_the_same_underlay_as_the_cpu() {
    let cpu = Engine::cpu();
    let room = scene(roofed_room());
    for (_, other) in gpu::twins() {
        check_roofed_room(&draw(&other, &room));
    }
    let village = sightline::scene::procedural::village(3, 1);
    let dungeon = sightline::scene::load_obj(
        common::data_dir().join("dungeon.obj"),
        &sightline::scene::LoadOptions::default(),
    )
    .unwrap()
    .0;
    for (name, s) in [("village", &village), ("dungeon.obj", &dungeon)] {
        let (lo, hi) = s.bounds().unwrap();
        let n = 256;
        let px = (hi.x - lo.x).max(hi.z - lo.z) / n as f32;
        let origin = Vec2::new(lo.x, lo.z);
        let a = underlay(&cpu, s, origin, px, n, n).unwrap();
        for (twin, other) in gpu::twins() {
            let b = underlay(&other, s, origin, px, n, n).unwrap();
            let exact = (0..n * n)
                .filter(|&i| a.elevation[i].to_bits() == b.elevation[i].to_bits())
                .count();
            // By contract: the same classes, heights within the boundary band (a fused
            // last bit moves a height, never a class, unless a pixel's ray grazes an edge).
            let same = (0..n * n)
                .filter(|&i| {
                    let (x, y) = (a.elevation[i], b.elevation[i]);
                    let band = 1e-5 * x.abs().max(y.abs()).max(1.0);
                    a.surface[i] == b.surface[i]
                        && a.cover[i] == b.cover[i]
                        && ((x - y).abs() <= band || x.to_bits() == y.to_bits())
                })
                .count();
            eprintln!(
                "{name}, {twin}: {same} of {} pixels the same by contract, {exact} heights bit \
                 for bit",
                n * n
            );
            assert!(
                same * 10_000 >= n * n * 9_999,
                "{name}, {twin}: another underlay"
            );
            // Each pixel that changes class has an edge or coincident faces under it.
            let tris = contract::triangles(s, Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE));
            for i in
                (0..n * n).filter(|&i| a.surface[i] != b.surface[i] || a.cover[i] != b.cover[i])
            {
                let c = ground::cell_centre(origin, px, n, i);
                let ambiguous = [a.elevation[i], b.elevation[i], a.top[i], b.top[i]]
                    .into_iter()
                    .filter(|y| y.is_finite())
                    .any(|y| contract::vertical_ambiguous(&tris, c.x, c.y, y));
                assert!(
                    ambiguous,
                    "{name}, {twin}: pixel {i} at {c} is {:?} {:?} / {:?} {:?} on clear ground",
                    a.surface[i], a.cover[i], b.surface[i], b.cover[i]
                );
            }
        }
        for k in [Surface::Ground, Surface::Wall] {
            assert!(a.count(k) > n * n / 200, "{name}: {k:?} {}", a.count(k));
        }
    }
}
