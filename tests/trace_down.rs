//! `trace::down::closest_hit_down` against `cpu::closest_hit`: the same records, bit for bit,
//! for grids of straight-down rays over real and adversarial scenes (coincident, coplanar,
//! vertical, sliver and tiny triangles; rays exactly over vertices and box faces), with varying
//! origin heights and limits, partial rows, odd widths, every mask; and against brute force.

use glam::{Affine3A, Vec3};
use sightline::scene::{procedural, Tier};
use sightline::trace::{cpu, down, HitRecord, Ray, SplitMix64};
use sightline::{Material, MaterialFlags, Mesh, Mobility, Scene};

const MASKS: [u32; 4] = [7, 1, 2, 4];

/// Asserts `down` equals `cpu::closest_hit` byte for byte.
fn check(scene: &Scene, rays: &[Ray], width: usize, mask: u32, label: &str) -> usize {
    let tiers = scene.tiers();
    let want = cpu::closest_hit(&tiers, rays, mask);
    let got = down::closest_hit_down(&tiers, rays, width, mask);
    assert_eq!(got.len(), want.len(), "{label}: length");
    let bad: Vec<usize> = (0..rays.len())
        .filter(|&i| bytemuck::bytes_of(&got[i]) != bytemuck::bytes_of(&want[i]))
        .collect();
    if let Some(&i) = bad.first() {
        panic!(
            "{label} mask {mask} width {width}: {} of {} rays differ; first {i}: ray {:?}\n got  {:?}\n want {:?}",
            bad.len(),
            rays.len(),
            rays[i],
            got[i],
            want[i]
        );
    }
    want.iter().filter(|h| !cpu::is_miss(h)).count()
}

/// `rows` x `width` rays (the last row cut to `last` rays when given), origin
/// `(x0 + (c + off) * step, top, z0 + (r + off) * step)`, straight down.
#[allow(clippy::too_many_arguments)]
fn grid(
    x0: f32,
    z0: f32,
    step: f32,
    off: f32,
    width: usize,
    rows: usize,
    last: Option<usize>,
    top: f32,
    t_max: f32,
) -> Vec<Ray> {
    let n = width * (rows - 1) + last.unwrap_or(width);
    (0..n)
        .map(|k| {
            let (r, c) = ((k / width) as f32, (k % width) as f32);
            Ray::new(
                Vec3::new(x0 + (c + off) * step, top, z0 + (r + off) * step),
                Vec3::NEG_Y,
                t_max,
            )
        })
        .collect()
}

/// The second pass of a top-down picture: each ray restarts 1 cm below its first hit and runs
/// to `floor`; misses (and every seventh ray) get `t_max = 0`.
fn beneath(rays: &[Ray], first: &[HitRecord], floor: f32) -> Vec<Ray> {
    rays.iter()
        .zip(first)
        .enumerate()
        .map(|(i, (r, h))| {
            let mut r = *r;
            if cpu::is_miss(h) || i % 7 == 3 {
                r.t_max = 0.0;
            } else {
                r.origin[1] -= h.t + 0.01;
                r.t_max = (r.origin[1] - floor).max(0.0);
            }
            r
        })
        .collect()
}

fn materials() -> Vec<Material> {
    vec![
        Material::new("solid", MaterialFlags::SOLID, 0.5),
        Material::new("foliage", MaterialFlags::BLOCKS_SIGHT, 0.3),
        Material::new("glass", MaterialFlags::BLOCKS_FIRE, 0.6),
        Material::new("floor", MaterialFlags::WALKABLE, 0.4),
        Material::new("all", MaterialFlags::SOLID | MaterialFlags::WALKABLE, 0.4),
    ]
}

/// Random triangles of every awkward kind over about 44 m x 44 m, ids in push order, and a
/// movable object so both tiers are walked.
fn tricky_scene(seed: u64) -> Scene {
    let mut rng = SplitMix64(seed);
    let mut m = Pusher::default();
    // Random triangles.
    for _ in 0..1500 {
        let c = rng.in_box(Vec3::new(-20.0, -2.0, -20.0), Vec3::new(20.0, 8.0, 20.0));
        let a = rng.unit_vector() * rng.range(0.2, 4.0);
        let b = rng.unit_vector() * rng.range(0.2, 4.0);
        m.push(c, c + a, c + b);
        // Every tenth one twice more: coincident, and reversed (equal distances, other ids).
        if rng.f32() < 0.1 {
            m.push(c, c + a, c + b);
            m.push(c, c + b, c + a);
        }
    }
    floors_and_roofs(&mut rng, &mut m);
    verticals(&mut rng, &mut m);
    // Slivers (nearly collinear on the ground) and tiny triangles.
    for _ in 0..150 {
        let p = rng.in_box(Vec3::new(-20.0, -1.0, -20.0), Vec3::new(20.0, 5.0, 20.0));
        let u = rng.unit_vector() * rng.range(0.5, 5.0);
        let w = rng.unit_vector() * 1e-4;
        m.push(p, p + u, p + 0.5 * u + w);
        let t = rng.unit_vector() * 1e-3;
        m.push(p, p + t, p + t.cross(Vec3::Y));
    }
    let mesh = m.mesh;
    let mut scene = Scene::from_mesh(mesh, materials()).unwrap();
    // A movable slab (second tier) overlapping the floors.
    let mut slab = Mesh::default();
    for (i, m) in [(0, 0u32), (1, 3)] {
        let y = i as f32 * 0.25;
        let p = |x: f32, z: f32| Vec3::new(x, y, z);
        slab.push_triangle(p(-3.0, -3.0), p(-3.0, 3.0), p(3.0, -3.0), m);
        slab.push_triangle(p(3.0, -3.0), p(-3.0, 3.0), p(3.0, 3.0), m);
    }
    scene
        .add_object(
            slab,
            Affine3A::from_translation(Vec3::new(2.0, 1.5, -1.0)),
            Mobility::Movable,
        )
        .unwrap();
    scene
}

/// A mesh built a triangle at a time, materials taken in turn.
#[derive(Default)]
struct Pusher {
    mesh: Mesh,
    mat: u32,
}

impl Pusher {
    fn push(&mut self, a: Vec3, b: Vec3, c: Vec3) {
        self.mesh.push_triangle(a, b, c, self.mat % 5);
        self.mat += 1;
    }
}

/// Two coplanar floors at integer and half-integer vertices, a third on top of the first at
/// the same height (ties broken by id), and tilted roofs at integer corners.
fn floors_and_roofs(rng: &mut SplitMix64, m: &mut Pusher) {
    for (offset, y) in [(0.0, 0.0), (0.5, 0.0), (0.0, 0.0)] {
        for i in -10..10 {
            for k in -10..10 {
                let p =
                    |dx: f32, dz: f32| Vec3::new(i as f32 + dx + offset, y, k as f32 + dz + offset);
                m.push(p(0.0, 0.0), p(0.0, 1.0), p(1.0, 0.0));
                m.push(p(1.0, 0.0), p(0.0, 1.0), p(1.0, 1.0));
            }
        }
    }
    for _ in 0..40 {
        let (x, z) = (
            rng.range(-18.0, 18.0).round(),
            rng.range(-18.0, 18.0).round(),
        );
        let (h, s) = (rng.range(1.0, 6.0), rng.range(0.0, 1.0));
        let p = |dx: f32, dz: f32| Vec3::new(x + dx, h + s * dx, z + dz);
        m.push(p(0.0, 0.0), p(0.0, 2.0), p(2.0, 0.0));
        m.push(p(2.0, 0.0), p(0.0, 2.0), p(2.0, 2.0));
    }
}

/// Vertical triangles: along the axes, and in random vertical planes with three different
/// ground points (gables) or two over each other (walls).
fn verticals(rng: &mut SplitMix64, m: &mut Pusher) {
    for _ in 0..150 {
        let p = rng.in_box(Vec3::new(-20.0, -1.0, -20.0), Vec3::new(20.0, 5.0, 20.0));
        let d = rng.range(0.5, 4.0);
        let h = rng.range(0.5, 3.0);
        match rng.next_u64() % 4 {
            0 => m.push(
                p,
                p + Vec3::new(d, 0.0, 0.0),
                p + Vec3::new(0.5 * d, h, 0.0),
            ),
            1 => m.push(
                p,
                p + Vec3::new(0.0, 0.0, d),
                p + Vec3::new(0.0, h, 0.3 * d),
            ),
            2 => {
                let a = rng.range(0.0, std::f32::consts::TAU);
                let u = Vec3::new(a.cos(), 0.0, a.sin()) * d;
                m.push(p, p + u, p + 0.5 * u + Vec3::Y * h);
            }
            _ => {
                let a = rng.range(0.0, std::f32::consts::TAU);
                let u = Vec3::new(a.cos(), 0.0, a.sin()) * d;
                m.push(p, p + u, p + Vec3::Y * h);
                m.push(p + u, p + u + Vec3::Y * h, p + Vec3::Y * h);
            }
        }
    }
}

#[test]
fn village_top_down_and_beneath() {
    let scene = procedural::village(1, 1);
    let (lo, hi) = scene.bounds().unwrap();
    let c = (lo + hi) * 0.5;
    let (top, depth) = (hi.y + 1.0, hi.y - lo.y + 2.0);
    let width = 512;
    let step = 100.0 / width as f32;
    // 512 x 512 over 100 m x 100 m, the last row cut short.
    let rays = grid(
        c.x - 50.0,
        c.z - 50.0,
        step,
        0.5,
        width,
        width,
        Some(300),
        top,
        depth,
    );
    for mask in MASKS {
        let hits = check(&scene, &rays, width, mask, "village");
        if mask == 7 {
            assert!(hits > rays.len() * 9 / 10, "village: only {hits} hits");
        }
    }
    let first = cpu::closest_hit(&scene.tiers(), &rays, 7);
    let under = beneath(&rays, &first, lo.y - 1.0);
    let hits = check(&scene, &under, width, 7, "village beneath");
    assert!(hits > 1000, "village beneath: only {hits} hits");
    for mask in [1, 2, 4] {
        check(&scene, &under, width, mask, "village beneath");
    }
}

#[test]
fn tricky_scene_grids() {
    let scene = tricky_scene(7);
    let (lo, hi) = scene.bounds().unwrap();
    let top = hi.y + 1.0;
    for mask in MASKS {
        // Origins exactly over integer vertices and the floors' box faces.
        let on = grid(
            -22.0,
            -22.0,
            0.25,
            0.0,
            177,
            177,
            Some(100),
            top,
            f32::INFINITY,
        );
        check(&scene, &on, 177, mask, "tricky, on vertices");
        // Between them, an odd step, a bounded limit.
        let off = grid(
            -22.0,
            -22.0,
            44.0 / 201.0,
            0.5,
            201,
            150,
            None,
            top,
            top - lo.y,
        );
        let hits = check(&scene, &off, 201, mask, "tricky, between");
        assert!(hits > 1000, "tricky: only {hits} hits with mask {mask}");
    }
}

#[test]
fn tricky_scene_varying_heights_and_limits() {
    let scene = tricky_scene(8);
    let (lo, hi) = scene.bounds().unwrap();
    let mut rng = SplitMix64(99);
    let width = 160;
    let base = grid(
        -21.0,
        -21.0,
        0.265,
        0.0,
        width,
        160,
        Some(37),
        hi.y + 1.0,
        1.0,
    );
    let rays: Vec<Ray> = base
        .iter()
        .map(|r| {
            let y = if rng.f32() < 0.2 {
                // On the floors, on roofs' heights, at the floors' height exactly.
                [0.0, 0.01, -0.01, 2.0, 3.0][(rng.next_u64() % 5) as usize]
            } else {
                rng.range(lo.y - 1.0, hi.y + 1.0)
            };
            let t_max = match rng.next_u64() % 6 {
                0 => 0.0,
                1 => f32::INFINITY,
                2 => y - lo.y,
                3 => y, // exactly to the floors' height
                _ => rng.range(0.0, 6.0),
            }
            .max(0.0);
            Ray::new(Vec3::new(r.origin[0], y, r.origin[2]), Vec3::NEG_Y, t_max)
        })
        .collect();
    for mask in MASKS {
        check(&scene, &rays, width, mask, "tricky, varying heights");
    }
    // The second pass of a picture.
    let top = grid(
        -21.0,
        -21.0,
        0.2,
        0.5,
        210,
        210,
        None,
        hi.y + 1.0,
        hi.y - lo.y + 2.0,
    );
    let first = cpu::closest_hit(&scene.tiers(), &top, 7);
    let under = beneath(&top, &first, lo.y - 1.0);
    for mask in MASKS {
        check(&scene, &under, 210, mask, "tricky, beneath");
    }
}

#[test]
fn rays_off_a_grid_and_odd_widths() {
    let scene = tricky_scene(9);
    let (lo, hi) = scene.bounds().unwrap();
    let mut rng = SplitMix64(5);
    // Scattered origins: the tiles are not grids, correctness must not care.
    let scattered: Vec<Ray> = (0..20_000)
        .map(|_| {
            let p = rng.in_box(
                Vec3::new(lo.x - 1.0, lo.y, lo.z - 1.0),
                Vec3::new(hi.x + 1.0, hi.y + 1.0, hi.z + 1.0),
            );
            Ray::new(p, Vec3::NEG_Y, rng.range(0.0, 12.0))
        })
        .collect();
    for width in [1, 3, 16, 17, 100, 20_000] {
        check(&scene, &scattered, width, 7, "scattered");
    }
    check(&scene, &scattered, 64, 2, "scattered");
    // A grid whose rows are shuffled in x: still a grid by rows, not by columns.
    let mut jittered = grid(-20.0, -20.0, 0.3, 0.5, 130, 130, Some(7), hi.y + 1.0, 30.0);
    for r in jittered.iter_mut().step_by(3) {
        r.origin[0] += 0.01;
    }
    check(&scene, &jittered, 130, 7, "jittered");
    // Small batches run on the calling thread, width 1 and widths over the batch.
    for (n, width) in [
        (1usize, 1usize),
        (5, 1),
        (5, 2),
        (40, 7),
        (300, 1000),
        (1000, 31),
    ] {
        let small = grid(
            -10.0,
            -10.0,
            0.37,
            0.5,
            width,
            n.div_ceil(width),
            None,
            9.0,
            12.0,
        );
        let small = &small[..n.min(small.len())];
        check(&scene, small, width, 7, "small");
    }
}

#[test]
fn empty_inputs_and_fallback() {
    let scene = tricky_scene(10);
    let tiers = scene.tiers();
    assert!(down::closest_hit_down(&tiers, &[], 16, 7).is_empty());
    // An empty scene and an empty tier list: every ray misses.
    let empty = Scene::new(materials());
    let rays = grid(-5.0, -5.0, 0.5, 0.5, 20, 20, None, 10.0, 20.0);
    let got = down::closest_hit_down(&empty.tiers(), &rays, 20, 7);
    assert!(got.iter().all(cpu::is_miss) && got.len() == rays.len());
    check(&empty, &rays, 20, 7, "empty scene");
    let none: [&Tier; 0] = [];
    assert!(down::closest_hit_down(&none, &rays, 20, 7)
        .iter()
        .all(cpu::is_miss));
    // A ray that is not straight down (or has a negative zero), and width 0: the whole batch
    // goes to the general kernel.
    for dir in [
        Vec3::new(0.0, -1.0, 1e-3),
        Vec3::new(-0.0, -1.0, 0.0),
        Vec3::Y,
    ] {
        let mut odd = grid(-20.0, -20.0, 0.3, 0.5, 130, 130, None, 9.0, 30.0);
        odd[4321].dir = dir.into();
        check(&scene, &odd, 130, 7, "one odd direction");
    }
    let rays = grid(-20.0, -20.0, 0.3, 0.5, 130, 30, None, 9.0, 30.0);
    check(&scene, &rays, 0, 7, "width 0");
}

/// Vertical triangles with three different ground points lie on a ground line only up to
/// rounding, and a ray exactly on that line, far outside the triangle, can be reported to hit
/// it (the three cross products round to one sign). `cpu` reports such hits wherever the leaf's
/// box admits the ray; the kernel must test those triangles against every such ray.
#[test]
fn edge_on_triangles_hit_along_their_line() {
    let mut rng = SplitMix64(21);
    let mut mesh = Mesh::default();
    let mut lines = Vec::new();
    // A dense cluster, so leaves hold several triangles and their boxes reach past each one.
    for i in 0..400 {
        let a = rng.in_box(Vec3::new(-2.0, 0.0, -2.0), Vec3::new(2.0, 3.0, 2.0));
        let u = rng.unit_vector() * rng.range(0.3, 1.5);
        let d = Vec3::new(u.x, 0.0, u.z);
        let b = a + d + Vec3::Y * rng.range(-1.0, 1.0);
        let c = a + d * rng.range(0.2, 0.8) + Vec3::Y * rng.range(0.5, 2.0);
        mesh.push_triangle(a, b, c, (i % 5) as u32);
        lines.push((a, d));
    }
    let scene = Scene::from_mesh(mesh, materials()).unwrap();
    // Origins on each line, beyond either end, inside the cluster.
    let mut rays = Vec::new();
    for (a, d) in lines {
        for _ in 0..40 {
            let k = if rng.f32() < 0.5 {
                rng.range(1.05, 4.0)
            } else {
                rng.range(-3.0, -0.05)
            };
            let (x, z) = (a.x + d.x * k, a.z + d.z * k);
            if x.abs() < 2.5 && z.abs() < 2.5 {
                rays.push(Ray::new(Vec3::new(x, 6.0, z), Vec3::NEG_Y, 10.0));
            }
        }
    }
    for mask in MASKS {
        for width in [1, 64] {
            check(&scene, &rays, width, mask, "edge-on");
        }
    }
}

/// Brute force over every triangle. The rays keep off the scene's integer and half-integer
/// coordinates: `cpu`'s slab test (and so this kernel) does not enter a box whose upper `x` or
/// `z` face holds a downward ray's origin, unless the origin lies within the box's heights,
/// so a hit on a triangle edge there is the one place where brute force answers otherwise.
#[test]
fn small_scene_matches_brute_force() {
    let scene = tricky_scene(11);
    let tris: Vec<_> = scene
        .tiers()
        .iter()
        .flat_map(|t| t.triangles.iter().copied())
        .collect();
    let (lo, hi) = scene.bounds().unwrap();
    let width = 97;
    let rays = grid(
        -21.1234,
        -21.1234,
        0.4337,
        0.5,
        width,
        97,
        None,
        hi.y + 1.0,
        hi.y - lo.y + 2.0,
    );
    for mask in MASKS {
        let got = down::closest_hit_down(&scene.tiers(), &rays, width, mask);
        for (i, r) in rays.iter().enumerate() {
            let want = cpu::brute_force_closest(&tris, r, mask);
            assert_eq!(
                bytemuck::bytes_of(&got[i]),
                bytemuck::bytes_of(&want),
                "mask {mask}, ray {i} {r:?}: {:?} vs brute force {:?}",
                got[i],
                want
            );
        }
    }
}

/// `closest_hit_grid` (rays given by the grid's frame and a start height per cell) against the
/// general kernel on the same rays, bit for bit: the top of `village` and of the tricky scene,
/// then starts at random heights with NaN (no ray) mixed in, a partial last row; and the
/// engine's form refuses a grid that reaches too far or a start that is infinite.
#[test]
fn rays_given_by_a_grid_frame_equal_the_rays_built_out() {
    let mut rng = SplitMix64(31);
    for (name, scene) in [
        ("village", procedural::village(1, 1)),
        ("tricky", tricky_scene(11)),
    ] {
        let (lo, hi) = scene.bounds().unwrap();
        let frame = down::DownGrid {
            origin: glam::Vec2::new(lo.x - 1.3, lo.z + 0.7),
            cell: (hi.x - lo.x + 2.0) / 173.0,
            width: 173,
            floor: lo.y - 1.0,
        };
        let n = 173 * 160 + 41;
        let top = vec![hi.y + 1.0; n];
        let mixed: Vec<f32> = (0..n)
            .map(|_| match rng.next_u64() % 5 {
                0 => f32::NAN,
                1 => lo.y - 2.0,
                _ => rng.range(lo.y - 0.5, hi.y + 1.0),
            })
            .collect();
        for (what, starts) in [("top", &top), ("mixed", &mixed)] {
            let rays: Vec<Ray> = (0..n).map(|i| frame.ray(i, starts[i])).collect();
            let want = cpu::closest_hit(&scene.tiers(), &rays, 7);
            let got = down::closest_hit_grid(&scene.tiers(), &frame, starts, 7).unwrap();
            let bad = (0..n)
                .filter(|&i| bytemuck::bytes_of(&got[i]) != bytemuck::bytes_of(&want[i]))
                .count();
            assert_eq!(bad, 0, "{name} {what}: {bad} of {n} records differ");
            let hits = want.iter().filter(|h| !cpu::is_miss(h)).count();
            let least = if what == "top" { n / 2 } else { n / 10 };
            assert!(hits > least, "{name} {what}: only {hits} hits");
            assert!((0..n).all(|i| !starts[i].is_nan() || cpu::is_miss(&got[i])));
        }
        if name == "tricky" {
            on_vertices_and_beneath(&scene);
        }
        engine_form(name, &scene, &frame, &top, &mixed);
    }
}

/// The engine's form of `closest_hit_grid` on `scene`: the kernel's records, what `keep` makes
/// of them (on the grid kernel and a fused twin's general kernel), and the grids and starts it
/// refuses.
fn engine_form(name: &str, scene: &Scene, frame: &down::DownGrid, top: &[f32], mixed: &[f32]) {
    let frame = *frame;
    let engine = sightline::Engine::cpu();
    let all = sightline::Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
    let got = engine.closest_hit_grid(scene, &frame, mixed, all).unwrap();
    let want = down::closest_hit_grid(&scene.tiers(), &frame, mixed, 7).unwrap();
    assert_eq!(
        bytemuck::cast_slice::<_, u8>(&got),
        bytemuck::cast_slice::<_, u8>(&want)
    );
    // Keeping a few fields of each record: what `keep` makes of the same records, on the
    // grid kernel and on a fused twin's general kernel.
    let keep = |h: &HitRecord| (h.t.to_bits(), h.triangle);
    for engine in [
        sightline::Engine::cpu(),
        sightline::Engine::cpu_fused(sightline::Fusion::First),
    ] {
        let records = engine.closest_hit_grid(scene, &frame, mixed, all).unwrap();
        let kept = engine
            .closest_hit_grid_with(scene, &frame, mixed, all, keep)
            .unwrap();
        assert_eq!(kept, records.iter().map(keep).collect::<Vec<_>>(), "{name}");
    }
    let far = down::DownGrid { cell: 1e9, ..frame };
    let err = engine.closest_hit_grid(scene, &far, top, all).unwrap_err();
    assert!(err.to_string().contains("smaller grid"), "{err}");
    let mut bad = top.to_vec();
    bad[77] = f32::INFINITY;
    let err = engine
        .closest_hit_grid(scene, &frame, &bad, all)
        .unwrap_err();
    assert!(err.to_string().contains("ray start"), "{err}");
    for cell in [0.0, -0.5, f32::NAN] {
        let flipped = down::DownGrid { cell, ..frame };
        let err = engine
            .closest_hit_grid(scene, &flipped, top, all)
            .unwrap_err();
        assert!(err.to_string().contains("above 0"), "{err}");
    }
    let zero = down::DownGrid { width: 0, ..frame };
    assert!(engine.closest_hit_grid(scene, &zero, top, all).is_err());
    // The kernel's own entry point refuses the same grids.
    assert!(down::closest_hit_grid(&scene.tiers(), &zero, top, 7).is_err());
    assert!(down::closest_hit_grid(&scene.tiers(), &far, top, 7).is_err());
    assert!(engine
        .closest_hit_grid(scene, &zero, &[], all)
        .unwrap()
        .is_empty());
}

/// `closest_hit_grid` with pixel centres exactly over the tricky scene's integer vertices and
/// its floors' box faces, every mask, then the pass beneath the first hits: equal to the
/// general kernel bit for bit.
fn on_vertices_and_beneath(scene: &Scene) {
    let (lo, hi) = scene.bounds().unwrap();
    let frame = down::DownGrid {
        origin: glam::Vec2::new(-22.125, -22.125),
        cell: 0.25,
        width: 177,
        floor: lo.y - 1.0,
    };
    let n = 177 * 177;
    let check = |starts: &[f32], mask: u32, what: &str| {
        let rays: Vec<Ray> = (0..n).map(|i| frame.ray(i, starts[i])).collect();
        let want = cpu::closest_hit(&scene.tiers(), &rays, mask);
        let got = down::closest_hit_grid(&scene.tiers(), &frame, starts, mask).unwrap();
        let bad = (0..n)
            .filter(|&i| bytemuck::bytes_of(&got[i]) != bytemuck::bytes_of(&want[i]))
            .count();
        assert_eq!(
            bad, 0,
            "tricky {what}, mask {mask}: {bad} of {n} records differ"
        );
        want
    };
    let top = vec![hi.y + 1.0; n];
    for mask in MASKS {
        check(&top, mask, "on vertices");
    }
    let first = check(&top, 7, "on vertices");
    let beneath: Vec<f32> = (0..n)
        .map(|i| match cpu::is_miss(&first[i]) {
            true => f32::NAN,
            false => top[i] - first[i].t - 0.01,
        })
        .collect();
    for mask in MASKS {
        let hits = check(&beneath, mask, "beneath");
        if mask == 7 {
            let found = hits.iter().filter(|h| !cpu::is_miss(h)).count();
            assert!(found > 1000, "tricky beneath: only {found} hits");
        }
    }
}
