//! Tracing on both backends: brute-force references, GPU vs CPU on millions of seeded rays,
//! watertightness, exact geometry, batch and scene splitting, bad input, determinism.

mod common;
#[path = "common/contract.rs"]
mod contract;
#[path = "common/gpu.rs"]
mod gpu;

use glam::{Affine3A, Vec3};
use sightline::bvh::GpuTriangle;
use sightline::scene::{load_obj, procedural, LoadOptions};
use sightline::trace::{cpu, HitRecord, Ray, Segment, SplitMix64};
use sightline::{
    Engine, EngineOptions, Fusion, Mask, Material, MaterialFlags, Mesh, Mobility, Scene,
};

fn solid() -> Vec<Material> {
    vec![Material::new(
        "solid",
        MaterialFlags::SOLID | MaterialFlags::WALKABLE,
        0.5,
    )]
}

/// Half short segments (1-30 m), half spanning the whole scene.
fn random_segments(scene: &Scene, n: usize, seed: u64) -> Vec<Segment> {
    let (lo, hi) = scene.bounds().expect("non-empty scene");
    let pad = (hi - lo) * 0.05;
    let (lo, hi) = (lo - pad, hi + pad);
    let mut rng = SplitMix64(seed);
    (0..n)
        .map(|i| {
            let a = rng.in_box(lo, hi);
            let b = if i % 2 == 0 {
                a + rng.unit_vector() * rng.range(1.0, 30.0)
            } else {
                rng.in_box(lo, hi)
            };
            Segment::new(a, b)
        })
        .collect()
}

fn random_rays(scene: &Scene, n: usize, seed: u64) -> Vec<Ray> {
    random_segments(scene, n, seed)
        .iter()
        .map(|s| {
            Ray::new(
                s.start(),
                s.end() - s.start(),
                if s.length() > 20.0 {
                    f32::INFINITY
                } else {
                    1.0
                },
            )
        })
        .collect()
}

fn all_triangles(scene: &Scene) -> Vec<GpuTriangle> {
    scene
        .tiers()
        .iter()
        .flat_map(|t| t.triangles.iter().copied())
        .collect()
}

fn random_triangle_scene(n: usize, seed: u64) -> Scene {
    let mut rng = SplitMix64(seed);
    let mut mesh = Mesh::default();
    for i in 0..n {
        let c = rng.in_box(Vec3::splat(-20.0), Vec3::splat(20.0));
        let (a, b) = (
            rng.unit_vector() * rng.range(0.5, 4.0),
            rng.unit_vector() * rng.range(0.5, 4.0),
        );
        mesh.push_triangle(c, c + a, c + b, (i % 3) as u32);
    }
    let mats = vec![
        Material::new("wall", MaterialFlags::SOLID, 0.5),
        Material::new("foliage", MaterialFlags::BLOCKS_SIGHT, 0.3),
        Material::new("glass", MaterialFlags::BLOCKS_FIRE, 0.6),
    ];
    Scene::from_mesh(mesh, mats).unwrap()
}

/// Two coincident floors: the same 24 m x 24 m plane at y = 0.37, tiled by two grids offset by
/// half a cell, so overlapping triangles lie in different leaves. The hits on both are at (or
/// within rounding of) one distance, where a walk that culls a box entered at the limit by
/// rounding misses the nearer hit or the tie's lower id.
fn coplanar_floors() -> Scene {
    let mut mesh = Mesh::default();
    for offset in [0.0, 0.5] {
        for i in 0..24 {
            for k in 0..24 {
                let p = |dx: f32, dz: f32| {
                    Vec3::new(
                        i as f32 + dx + offset - 12.0,
                        0.37,
                        k as f32 + dz + offset - 12.0,
                    )
                };
                mesh.push_triangle(p(0.0, 0.0), p(0.0, 1.0), p(1.0, 0.0), 0);
                mesh.push_triangle(p(1.0, 0.0), p(0.0, 1.0), p(1.0, 1.0), 0);
            }
        }
    }
    Scene::from_mesh(mesh, solid()).unwrap()
}

/// Rays from up to 20 m above the floors to random points on them, unbounded.
fn rays_onto_floors(n: usize, seed: u64) -> Vec<Ray> {
    let mut rng = SplitMix64(seed);
    (0..n)
        .map(|_| {
            let from = rng.in_box(Vec3::new(-14.0, 0.5, -14.0), Vec3::new(14.0, 20.0, 14.0));
            let to = rng.in_box(Vec3::new(-12.0, 0.37, -12.0), Vec3::new(12.0, 0.37, 12.0));
            Ray::new(from, to - from, f32::INFINITY)
        })
        .collect()
}

#[test]
fn bvh_walks_agree_with_brute_force() {
    let engines: Vec<Engine> = std::iter::once(Engine::cpu())
        .chain(gpu::gpu_engine())
        .collect();
    for (scene, label) in [
        (random_triangle_scene(3_000, 1), "random"),
        (procedural::rock(3, 1), "rock"),
        (coplanar_floors(), "coplanar floors"),
    ] {
        let tris = all_triangles(&scene);
        let rays = if label == "coplanar floors" {
            rays_onto_floors(20_000, 11)
        } else {
            random_rays(&scene, 20_000, 11)
        };
        for mask in [Mask::SIGHT, Mask::FIRE] {
            let reference: Vec<HitRecord> = rays
                .iter()
                .map(|r| cpu::brute_force_closest(&tris, r, mask.bits()))
                .collect();
            let segs: Vec<Segment> = rays
                .iter()
                .map(|r| Segment::new(r.origin(), r.origin() + r.dir()))
                .collect();
            let occluded_ref: Vec<bool> = segs
                .iter()
                .map(|s| {
                    !cpu::is_miss(&cpu::brute_force_closest(
                        &tris,
                        &Ray::new(s.start(), s.end() - s.start(), 1.0),
                        mask.bits(),
                    ))
                })
                .collect();
            let masked = contract::triangles(&scene, mask);
            for engine in &engines {
                let got = engine.closest_hit_records(&scene, &rays, mask).unwrap();
                let bits = engine.occluded(&scene, &segs, mask).unwrap();
                let mut bad = 0;
                for i in 0..rays.len() {
                    let (g, r) = (&got[i], &reference[i]);
                    let same_hit = g.triangle == r.triangle && (cpu::is_miss(g) || g.t == r.t);
                    let same_bit = bits.get(i) == occluded_ref[i];
                    if same_hit && same_bit {
                        continue;
                    }
                    // The CPU twin walks to the brute force's answer bit for bit; a GPU keeps
                    // the agreement contract, the hit and the segment's bit each on its own.
                    let gpu = engine.backend() == sightline::Backend::Gpu;
                    let ray = &rays[i];
                    let far = if cpu::is_miss(g) { r.t } else { g.t.max(r.t) };
                    let end = ray.origin() + ray.dir() * far.min(1e4) * 1.001;
                    let hit_ok = same_hit
                        || contract::near_boundary(&masked, ray.origin(), end)
                        || (!cpu::is_miss(g)
                            && !cpu::is_miss(r)
                            && contract::same_depth(
                                ray.origin(),
                                ray.dir(),
                                g.t,
                                r.t,
                                r.normal.into(),
                            ));
                    let bit_ok = same_bit
                        || contract::near_boundary(&masked, segs[i].start(), segs[i].end());
                    if !(gpu && hit_ok && bit_ok) {
                        bad += 1;
                    }
                }
                assert_eq!(
                    bad,
                    0,
                    "{label} {mask:?} {:?}: {bad} of {} rays disagree with brute force",
                    engine.backend(),
                    rays.len()
                );
            }
        }
    }
}

fn gpu_vs_cpu(scene: &Scene, label: &str, n: usize) {
    let Some(gpu) = gpu::gpu_engine() else { return };
    agree_by_contract(scene, label, n, &gpu);
}

/// `other`'s occlusion bits of `n` seeded segments and closest hits of `n / 10` rays against
/// the plain CPU twin's, judged by the agreement contract (`common/contract.rs`): every
/// differing bit, and every other triangle or hit point off the other's surface, on a segment
/// or ray that passes within the boundary band of a triangle edge or ends there. The differences
/// are few: at most 2 in 100,000 bits.
fn agree_by_contract(scene: &Scene, label: &str, n: usize, other: &Engine) {
    let cpu = Engine::cpu();
    let tris = contract::triangles(scene, Mask::SIGHT);
    let segs = random_segments(scene, n, 2024);
    let a = cpu.occluded(scene, &segs, Mask::SIGHT).unwrap();
    let b = other.occluded(scene, &segs, Mask::SIGHT).unwrap();
    let differ: Vec<usize> = (0..n).filter(|&i| a.get(i) != b.get(i)).collect();
    for &i in &differ {
        let s = &segs[i];
        assert!(
            contract::near_boundary(&tris, s.start(), s.end()),
            "{label}: segment {i} {s:?} disagrees but passes clear of every edge"
        );
    }
    assert!(
        differ.len() as f64 <= 2e-5 * n as f64,
        "{label}: {} of {n} segments disagree",
        differ.len()
    );
    let rays = random_rays(scene, n / 10, 77);
    let ha = cpu.closest_hit_records(scene, &rays, Mask::SIGHT).unwrap();
    let hb = other
        .closest_hit_records(scene, &rays, Mask::SIGHT)
        .unwrap();
    let (mut moved, mut other_tri) = (0, 0);
    for (r, (x, y)) in rays.iter().zip(ha.iter().zip(&hb)) {
        if x.triangle == y.triangle && (cpu::is_miss(x) || x.t == y.t) {
            continue;
        }
        let both = !cpu::is_miss(x) && !cpu::is_miss(y);
        if both && contract::same_depth(r.origin(), r.dir(), x.t, y.t, x.normal.into()) {
            // The same triangle, or two surfaces at the same distance (coincident faces).
            moved += 1;
            continue;
        }
        other_tri += 1;
        let far = [x, y]
            .iter()
            .filter(|h| !cpu::is_miss(h))
            .map(|h| h.t)
            .fold(0.0f32, f32::max);
        let end = r.origin() + r.dir() * (far * 1.001);
        assert!(
            contract::near_boundary(&tris, r.origin(), end),
            "{label}: ray {r:?} hits {x:?} and {y:?}, clear of every edge"
        );
    }
    eprintln!(
        "{label}: {} triangles, {} of {n} segments blocked, {} bits differ; of {} rays, {moved} \
         hits moved along the surface (or to a coincident face), {other_tri} near an edge hit \
         another triangle",
        tris.len(),
        a.count_ones(),
        differ.len(),
        rays.len(),
    );
}

/// The scenes the contract suites trace: the real level and two built-in scenes.
fn contract_scenes() -> [(Scene, &'static str); 3] {
    let (dungeon, _) = load_obj(
        common::data_dir().join("dungeon.obj"),
        &LoadOptions::default(),
    )
    .unwrap();
    [
        (procedural::village(1, 1), "village"),
        (procedural::urban(1, 1), "urban"),
        (dungeon, "dungeon.obj"),
    ]
}

/// The fused CPU twins (`a * b + c` in one rounding, as a contracting GPU compiler may) keep
/// the contract with the plain one, as a real GPU must.
#[test]
fn fused_twins_agree_with_the_plain_twin_by_contract() {
    for (scene, label) in contract_scenes() {
        for fusion in [Fusion::First, Fusion::Last] {
            let label = format!("{label}, fused {fusion:?}");
            agree_by_contract(&scene, &label, 300_000, &Engine::cpu_fused(fusion));
        }
    }
}

#[test]
fn gpu_matches_cpu_on_a_million_segments_over_village() {
    gpu_vs_cpu(&procedural::village(1, 1), "village", 1_000_000);
}

#[test]
fn gpu_matches_cpu_on_a_million_segments_over_urban() {
    gpu_vs_cpu(&procedural::urban(1, 1), "urban", 1_000_000);
}

#[test]
fn gpu_matches_cpu_on_a_million_segments_over_dungeon() {
    let (scene, _) = load_obj(
        common::data_dir().join("dungeon.obj"),
        &LoadOptions::default(),
    )
    .unwrap();
    gpu_vs_cpu(&scene, "dungeon.obj", 1_000_000);
}

fn icosphere(subdivisions: u32) -> Mesh {
    let t = (1.0 + 5f32.sqrt()) / 2.0;
    let mut pos: Vec<Vec3> = [
        (-1.0, t, 0.0),
        (1.0, t, 0.0),
        (-1.0, -t, 0.0),
        (1.0, -t, 0.0),
        (0.0, -1.0, t),
        (0.0, 1.0, t),
        (0.0, -1.0, -t),
        (0.0, 1.0, -t),
        (t, 0.0, -1.0),
        (t, 0.0, 1.0),
        (-t, 0.0, -1.0),
        (-t, 0.0, 1.0),
    ]
    .iter()
    .map(|&(x, y, z)| Vec3::new(x, y, z).normalize())
    .collect();
    let mut faces: Vec<[u32; 3]> = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    for _ in 0..subdivisions {
        let mut mid = std::collections::HashMap::new();
        let mut midpoint = |a: u32, b: u32, pos: &mut Vec<Vec3>| {
            *mid.entry((a.min(b), a.max(b))).or_insert_with(|| {
                pos.push(((pos[a as usize] + pos[b as usize]) * 0.5).normalize());
                pos.len() as u32 - 1
            })
        };
        faces = faces
            .iter()
            .flat_map(|&[a, b, c]| {
                let (ab, bc, ca) = (
                    midpoint(a, b, &mut pos),
                    midpoint(b, c, &mut pos),
                    midpoint(c, a, &mut pos),
                );
                [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
            })
            .collect();
    }
    let materials = vec![0; faces.len()];
    Mesh {
        positions: pos.iter().map(|p| *p * 10.0).collect(),
        triangles: faces,
        materials,
    }
}

#[test]
fn closed_icosphere_and_fine_plane_do_not_leak() {
    let sphere = Scene::from_mesh(icosphere(5), solid()).unwrap();
    let mut rng = SplitMix64(5);
    let n = 500_000;
    let rays: Vec<Ray> = (0..n)
        .map(|_| {
            Ray::new(
                rng.unit_vector() * rng.range(0.0, 9.0),
                rng.unit_vector(),
                f32::INFINITY,
            )
        })
        .collect();
    // A 400 x 400 grid (320,000 triangles) in y = 0, crossed by segments at random angles.
    let mut plane = Mesh::default();
    let k = 400;
    for i in 0..=k {
        for j in 0..=k {
            plane.positions.push(Vec3::new(
                i as f32 * 0.05 - 10.0,
                0.0,
                j as f32 * 0.05 - 10.0,
            ));
        }
    }
    for i in 0..k {
        for j in 0..k {
            let v = |a: u32, b: u32| a * (k + 1) + b;
            plane
                .triangles
                .push([v(i, j), v(i + 1, j), v(i + 1, j + 1)]);
            plane
                .triangles
                .push([v(i, j), v(i + 1, j + 1), v(i, j + 1)]);
        }
    }
    plane.materials = vec![0; plane.triangles.len()];
    let plane = Scene::from_mesh(plane, solid()).unwrap();
    let segs: Vec<Segment> = (0..n)
        .map(|_| {
            let p = Vec3::new(rng.range(-9.0, 9.0), 0.0, rng.range(-9.0, 9.0));
            let d = Vec3::new(
                rng.range(-1.0, 1.0),
                rng.range(0.1, 1.0),
                rng.range(-1.0, 1.0),
            );
            Segment::new(p + d * rng.range(0.01, 2.0), p - d * rng.range(0.01, 2.0))
        })
        .collect();
    for engine in std::iter::once(Engine::cpu()).chain(gpu::gpu_engine()) {
        let hits = engine
            .closest_hit_records(&sphere, &rays, Mask::SIGHT)
            .unwrap();
        let sphere_misses = hits.iter().filter(|h| cpu::is_miss(h)).count();
        let plane_misses = n - engine
            .occluded(&plane, &segs, Mask::SIGHT)
            .unwrap()
            .count_ones();
        let allowed = (2e-5 * n as f64) as usize;
        assert!(
            sphere_misses <= allowed && plane_misses <= allowed,
            "{:?}: {sphere_misses} sphere and {plane_misses} plane leaks in {n}",
            engine.backend()
        );
    }
}

#[test]
fn a_wall_hides_exactly_what_is_behind_it() {
    // A 4 m x 2 m wall in the plane z = 0, x in [-2, 2], y in [0, 2]; eye at z = -5.
    let mut wall = Mesh::default();
    let (a, b, c, d) = (
        Vec3::new(-2.0, 0.0, 0.0),
        Vec3::new(2.0, 0.0, 0.0),
        Vec3::new(2.0, 2.0, 0.0),
        Vec3::new(-2.0, 2.0, 0.0),
    );
    wall.push_quad(a, b, c, d, 0);
    let scene = Scene::from_mesh(wall, solid()).unwrap();
    let eye = Vec3::new(0.3, 1.0, -5.0);
    let mut rng = SplitMix64(77);
    let targets: Vec<Vec3> = (0..100_000)
        .map(|_| {
            Vec3::new(
                rng.range(-8.0, 8.0),
                rng.range(-3.0, 5.0),
                rng.range(0.5, 10.0),
            )
        })
        .collect();
    let segs: Vec<Segment> = targets.iter().map(|&t| Segment::new(eye, t)).collect();
    for engine in std::iter::once(Engine::cpu()).chain(gpu::gpu_engine()) {
        let bits = engine.occluded(&scene, &segs, Mask::SIGHT).unwrap();
        let mut checked = 0;
        for (i, &t) in targets.iter().enumerate() {
            let s = -eye.z / (t.z - eye.z);
            let p = eye + (t - eye) * s; // where the sight line crosses z = 0
            let margin = (p.x.abs() - 2.0)
                .abs()
                .min((p.y - 0.0).abs())
                .min((p.y - 2.0).abs());
            if margin < 1e-4 {
                continue;
            }
            let expected = p.x.abs() < 2.0 && p.y > 0.0 && p.y < 2.0;
            assert_eq!(
                bits.get(i),
                expected,
                "{:?}: target {t} (crosses the wall plane at {p})",
                engine.backend()
            );
            checked += 1;
        }
        assert!(checked > 99_000);
    }
}

#[test]
fn huge_batches_and_small_bindings_split_without_changing_answers() {
    let Some(gpu) = gpu::gpu_engine() else { return };
    // Over one dispatch: 65,535 workgroups x 64 + 1.
    let scene = procedural::rock(1, 1);
    let n = 65_535 * 64 + 1;
    let segs = random_segments(&scene, n, 9);
    let whole = gpu.occluded(&scene, &segs, Mask::SIGHT).unwrap();
    let mut parts = Vec::new();
    for chunk in segs.chunks(1 << 20) {
        parts.extend(gpu.occluded(&scene, chunk, Mask::SIGHT).unwrap().iter());
    }
    assert_eq!(whole.iter().collect::<Vec<_>>(), parts);
    assert!(whole.get(n - 1) == parts[n - 1] && whole.count_ones() > 0);

    // A scene over a 64 KiB binding limit is traced as many chunks, with identical answers.
    let village = procedural::village(2, 1);
    let small = gpu::gpu_engine_with(EngineOptions {
        max_binding_bytes: Some(64 << 10),
        ..Default::default()
    })
    .unwrap();
    let segs = random_segments(&village, 100_000, 10);
    let rays = random_rays(&village, 100_000, 12);
    assert_eq!(
        small.occluded(&village, &segs, Mask::SIGHT).unwrap(),
        gpu.occluded(&village, &segs, Mask::SIGHT).unwrap()
    );
    let split = small
        .closest_hit_records(&village, &rays, Mask::FIRE)
        .unwrap();
    let whole = gpu
        .closest_hit_records(&village, &rays, Mask::FIRE)
        .unwrap();
    if !gpu.uses_ray_query() {
        assert_eq!(split, whole);
        return;
    }
    // The hardware walk commits a hit at the hardware's own distance, which may cut off a
    // coincident face at the same depth: chunks can then pick the other of the two faces.
    let mut coincident = 0;
    for (r, (x, y)) in rays.iter().zip(split.iter().zip(&whole)) {
        if x == y {
            continue;
        }
        coincident += 1;
        assert!(
            !cpu::is_miss(x)
                && !cpu::is_miss(y)
                && contract::same_depth(r.origin(), r.dir(), x.t, y.t, x.normal.into()),
            "ray {r:?}: {x:?} split, {y:?} whole"
        );
    }
    assert!(coincident <= 100, "{coincident} of 100,000 hits moved");
}

#[test]
fn same_inputs_give_bit_identical_outputs() {
    let scene = procedural::village(4, 1);
    let segs = random_segments(&scene, 200_000, 1);
    let rays = random_rays(&scene, 200_000, 2);
    for engine in std::iter::once(Engine::cpu()).chain(gpu::gpu_engine()) {
        let (a, b) = (
            engine.occluded(&scene, &segs, Mask::SIGHT).unwrap(),
            engine.occluded(&scene, &segs, Mask::SIGHT).unwrap(),
        );
        assert_eq!(a, b);
        let (h1, h2) = (
            engine
                .closest_hit_records(&scene, &rays, Mask::SIGHT)
                .unwrap(),
            engine
                .closest_hit_records(&scene, &rays, Mask::SIGHT)
                .unwrap(),
        );
        assert!(bytemuck::cast_slice::<_, u8>(&h1) == bytemuck::cast_slice::<_, u8>(&h2));
    }
}

#[test]
fn bad_queries_are_errors_and_empty_scenes_block_nothing() {
    let scene = procedural::rock(1, 1);
    let empty = Scene::default();
    let good = Segment::new(Vec3::new(-30.0, 1.0, 0.0), Vec3::new(30.0, 1.0, 0.0));
    for engine in std::iter::once(Engine::cpu()).chain(gpu::gpu_engine()) {
        let bad = [good, Segment::new(Vec3::new(f32::NAN, 0.0, 0.0), Vec3::ONE)];
        let err = engine
            .occluded(&scene, &bad, Mask::SIGHT)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("query 1") && err.contains("NaN or infinite"),
            "{err}"
        );
        // Coordinates beyond the limit are refused (their squared distances would overflow),
        // not traced to an infinite distance.
        let far = [Segment::new(
            Vec3::new(-1e19, 1.0, 0.0),
            Vec3::new(1e19, 1.0, 0.0),
        )];
        let err = engine.occluded(&scene, &far, Mask::SIGHT).unwrap_err();
        assert!(
            matches!(err, sightline::Error::NonFiniteQuery { index: 0, .. }),
            "{err}"
        );
        // A zero-length segment crosses nothing, even inside the rock.
        let inside = scene
            .bounds()
            .unwrap()
            .0
            .lerp(scene.bounds().unwrap().1, 0.5);
        let zero = [Segment::new(inside, inside), good];
        let bits = engine.occluded(&scene, &zero, Mask::SIGHT).unwrap();
        assert!(!bits.get(0) && bits.get(1));
        let rays = [Ray::new(Vec3::ZERO, Vec3::ZERO, 1.0)];
        assert!(engine.closest_hit(&scene, &rays, Mask::SIGHT).is_err());
        let rays = [
            Ray::new(Vec3::ZERO, Vec3::X, f32::INFINITY),
            Ray::new(Vec3::ZERO, Vec3::new(0.0, f32::INFINITY, 0.0), 1.0),
        ];
        assert!(engine.closest_hit(&scene, &rays, Mask::SIGHT).is_err());
        assert_eq!(
            engine
                .occluded(&empty, &[good; 40], Mask::SIGHT)
                .unwrap()
                .count_ones(),
            0
        );
        assert!(engine
            .closest_hit(&empty, &[Ray::new(Vec3::ZERO, Vec3::X, 9.0)], Mask::SIGHT)
            .unwrap()[0]
            .is_none());
        assert!(engine
            .occluded(&scene, &[], Mask::SIGHT)
            .unwrap()
            .is_empty());
        assert!(
            engine
                .occluded(&scene, &[good], Mask::SIGHT)
                .unwrap()
                .get(0),
            "the rock blocks a line through its middle"
        );
    }
}

/// A batch large enough to be traced on every core is checked as it is traced: a bad end point
/// deep in it is the same named error as in a small batch (nothing answered), a bad stage is
/// refused, and valid staged runs get the bits of the same segments plain on the CPU (which
/// traces every staged segment).
#[test]
fn large_batches_are_checked_as_they_are_traced() {
    let scene = procedural::village(2, 1);
    let plain = random_segments(&scene, 50_000, 77);
    for engine in std::iter::once(Engine::cpu()).chain(gpu::gpu_engine()) {
        for (bad, what) in [(f32::INFINITY, "NaN or infinite"), (2e9, "too far")] {
            let mut segs = plain.clone();
            segs[37_123].end[1] = bad;
            match engine.occluded(&scene, &segs, Mask::SIGHT) {
                Err(sightline::Error::NonFiniteQuery { index, .. }) => assert_eq!(index, 37_123),
                other => panic!("{what}: {other:?}"),
            }
        }
    }
    let cpu = Engine::cpu();
    let staged: Vec<Segment> = plain
        .iter()
        .enumerate()
        .map(|(i, s)| s.staged((i % 3) as u32, (i % 3) as u32))
        .collect();
    let want = cpu.occluded(&scene, &plain, Mask::SIGHT).unwrap();
    let got = cpu.occluded(&scene, &staged, Mask::SIGHT).unwrap();
    assert!(want.count_ones() > 1000, "{} blocked", want.count_ones());
    assert!(got.iter().eq(want.iter()));
    // Segment 40,000 (lead 1 in its run) claims lead 2 after a segment of lead 0.
    let mut broken = staged.clone();
    broken[40_000] = plain[40_000].staged(2, 0);
    let err = cpu.occluded(&scene, &broken, Mask::SIGHT).unwrap_err();
    assert!(err.to_string().contains("segment 40000"), "{err}");
}

#[test]
fn moving_objects_between_queries_updates_both_backends() {
    let mut scene = procedural::rock(1, 1);
    let mut door = Mesh::default();
    door.push_quad(
        Vec3::new(-1.0, 0.0, 0.0),
        Vec3::new(1.0, 0.0, 0.0),
        Vec3::new(1.0, 2.0, 0.0),
        Vec3::new(-1.0, 2.0, 0.0),
        0,
    );
    let start = Affine3A::from_translation(Vec3::new(20.0, 0.0, 20.0));
    let id = scene.add_object(door, start, Mobility::Movable).unwrap();
    let through = Segment::new(Vec3::new(20.0, 1.0, 18.0), Vec3::new(20.0, 1.0, 22.0));
    let engines: Vec<Engine> = std::iter::once(Engine::cpu())
        .chain(gpu::gpu_engine())
        .collect();
    for e in &engines {
        assert!(e.occluded(&scene, &[through], Mask::SIGHT).unwrap().get(0));
    }
    scene
        .set_transform(id, Affine3A::from_translation(Vec3::new(23.0, 0.0, 20.0)))
        .unwrap(); // slide it open
    for e in &engines {
        assert!(
            !e.occluded(&scene, &[through], Mask::SIGHT).unwrap().get(0),
            "{:?} still sees the closed door",
            e.backend()
        );
    }
    scene.set_transform(id, start).unwrap();
    for e in &engines {
        assert!(e.occluded(&scene, &[through], Mask::SIGHT).unwrap().get(0));
    }
    let mesh = scene.remove_object(id).unwrap();
    for e in &engines {
        assert!(!e.occluded(&scene, &[through], Mask::SIGHT).unwrap().get(0));
    }
    assert!(scene.set_transform(id, start).is_err());
    let again = scene.add_object(mesh, start, Mobility::Static).unwrap();
    for e in &engines {
        let hit = e
            .closest_hit(
                &scene,
                &[Ray::new(through.start(), Vec3::Z, 10.0)],
                Mask::SIGHT,
            )
            .unwrap()[0]
            .unwrap();
        assert_eq!(scene.triangle_owner(hit.triangle).unwrap().0, again);
        assert!((hit.t - 2.0).abs() < 1e-5);
    }
}

#[test]
fn a_lost_device_is_an_error_not_a_panic() {
    let Some(engine) = gpu::gpu_engine() else {
        return;
    };
    let scene = procedural::rock(1, 1);
    let segs = random_segments(&scene, 1000, 3);
    assert!(engine.occluded(&scene, &segs, Mask::SIGHT).is_ok());
    engine.gpu().unwrap().device().destroy();
    let err = engine.occluded(&scene, &segs, Mask::SIGHT).unwrap_err();
    assert!(
        matches!(
            err,
            sightline::Error::DeviceLost(_) | sightline::Error::Gpu(_)
        ),
        "{err}"
    );
}

#[test]
fn every_real_level_loads_and_traces_alike_on_both_backends() {
    let mut levels = 0;
    for entry in std::fs::read_dir(common::data_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "obj") {
            continue;
        }
        let (scene, report) = load_obj(&path, &LoadOptions::default()).unwrap();
        assert!(report.triangles > 0, "{report}");
        let segs = random_segments(&scene, 100_000, 8);
        let cpu_bits = Engine::cpu().occluded(&scene, &segs, Mask::SIGHT).unwrap();
        assert!(
            cpu_bits.count_ones() > 0 && cpu_bits.count_ones() < segs.len(),
            "{report}: a level blocks some lines, not all"
        );
        if let Some(gpu) = gpu::gpu_engine() {
            let gpu_bits = gpu.occluded(&scene, &segs, Mask::SIGHT).unwrap();
            let differ = (0..segs.len())
                .filter(|&i| cpu_bits.get(i) != gpu_bits.get(i))
                .count();
            assert!(
                differ <= 2,
                "{report}: {differ} of {} segments differ",
                segs.len()
            );
        }
        levels += 1;
    }
    assert!(
        levels >= 2,
        "expected dungeon.obj and nav_test.obj in {}",
        common::data_dir().display()
    );
}

/// The wall of `a_wall_hides_exactly_what_is_behind_it` and, per entry of `blocked`, a sight
/// line from its eye that crosses the wall's plane at least 0.1 m inside the wall (true) or
/// outside it (false), so both backends must agree bit for bit.
fn wall_and_sight_lines(blocked: &[bool], seed: u64) -> (Scene, Vec<Segment>) {
    let mut wall = Mesh::default();
    wall.push_quad(
        Vec3::new(-2.0, 0.0, 0.0),
        Vec3::new(2.0, 0.0, 0.0),
        Vec3::new(2.0, 2.0, 0.0),
        Vec3::new(-2.0, 2.0, 0.0),
        0,
    );
    let scene = Scene::from_mesh(wall, solid()).unwrap();
    let eye = Vec3::new(0.3, 1.0, -5.0);
    let mut rng = SplitMix64(seed);
    let segs = blocked
        .iter()
        .map(|&b| {
            let p = if b {
                Vec3::new(rng.range(-1.9, 1.9), rng.range(0.1, 1.9), 0.0)
            } else {
                let side = if rng.f32() < 0.5 { -1.0 } else { 1.0 };
                Vec3::new(side * rng.range(2.1, 6.0), rng.range(-1.0, 3.0), 0.0)
            };
            Segment::new(eye, eye + (p - eye) * rng.range(1.1, 3.0))
        })
        .collect();
    (scene, segs)
}

#[test]
fn reused_gpu_buffers_never_leak_answers_between_calls() {
    let Some(gpu) = gpu::gpu_engine() else { return };
    // 64 KiB bindings: at most 2,048 queries per slice, so 5,000 take three slots at once.
    let small = gpu::gpu_engine_with(EngineOptions {
        max_binding_bytes: Some(64 << 10),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(small.gpu().unwrap().max_queries_per_dispatch(), 2048);
    let cpu = Engine::cpu();
    let mut rng = SplitMix64(5);
    let mixed = |n: usize, rng: &mut SplitMix64| (0..n).map(|_| rng.f32() < 0.5).collect();
    // Sizes and patterns in an order where stale bits or hits would show: big and blocked,
    // then small and clear; empty batches in between.
    let calls: Vec<Vec<bool>> = vec![
        vec![],
        vec![true],
        mixed(33, &mut rng),
        vec![true; 5000],
        vec![false; 33],
        vec![false],
        vec![],
        mixed(4097, &mut rng),
        vec![false; 64],
        vec![true; 2049],
        vec![false; 2049],
    ];
    let rays = |segs: &[Segment]| -> Vec<Ray> {
        segs.iter()
            .enumerate()
            .map(|(i, s)| {
                let t_max = if i % 2 == 0 { 1.0 } else { f32::INFINITY };
                Ray::new(s.start(), s.end() - s.start(), t_max)
            })
            .collect()
    };
    for engine in [&gpu, &small] {
        for (k, blocked) in calls.iter().enumerate() {
            let (scene, segs) = wall_and_sight_lines(blocked, k as u64);
            let what = format!("call {k} ({} segments)", segs.len());
            let got = engine.occluded(&scene, &segs, Mask::SIGHT).unwrap();
            assert_eq!(
                got,
                cpu.occluded(&scene, &segs, Mask::SIGHT).unwrap(),
                "{what}"
            );
            assert_eq!(got.iter().collect::<Vec<bool>>(), *blocked, "{what}");
            let rays = rays(&segs);
            let hits = engine.closest_hit(&scene, &rays, Mask::SIGHT).unwrap();
            let want = cpu.closest_hit(&scene, &rays, Mask::SIGHT).unwrap();
            assert_eq!(hits.len(), rays.len(), "{what}");
            for (i, (h, w)) in hits.iter().zip(&want).enumerate() {
                assert_eq!(h.is_some(), blocked[i], "{what}: ray {i}");
                let same = match (h, w) {
                    (Some(h), Some(w)) => {
                        h.triangle == w.triangle && (h.t - w.t).abs() <= 1e-6 * w.t.max(1.0)
                    }
                    (None, None) => true,
                    _ => false,
                };
                assert!(same, "{what}: ray {i}: gpu {h:?}, cpu {w:?}");
            }
        }
        // Several live passes in one submission each keep their own buffers.
        let (scene, blocked_segs) = wall_and_sight_lines(&[true; 3000], 40);
        let (_, clear_segs) = wall_and_sight_lines(&[false; 100], 41);
        let many = engine
            .occluded_many(
                &scene,
                &[
                    (&blocked_segs, Mask::SIGHT),
                    (&[], Mask::SIGHT),
                    (&clear_segs, Mask::SIGHT),
                    (&blocked_segs[..7], Mask::SIGHT),
                ],
            )
            .unwrap();
        assert_eq!(many[0].count_ones(), 3000);
        assert!(many[1].is_empty());
        assert_eq!((many[2].len(), many[2].count_ones()), (100, 0));
        assert_eq!(many[3].count_ones(), 7);
    }

    // A caller's passes: two live at once in one encoder; reading before the submission is an
    // error, not an earlier call's answer left in a reused buffer.
    let tracer = small.gpu().unwrap();
    let (scene, blocked_segs) = wall_and_sight_lines(&[true; 300], 50);
    let (_, clear_segs) = wall_and_sight_lines(&[false; 300], 51);
    let a = tracer
        .prepare_occluded(&scene, &blocked_segs, Mask::SIGHT)
        .unwrap();
    let b = tracer
        .prepare_occluded(&scene, &clear_segs, Mask::SIGHT)
        .unwrap();
    assert!(a.read_occlusion(tracer).is_err(), "read before encode");
    let mut encoder = tracer.device().create_command_encoder(&Default::default());
    a.encode(tracer, &mut encoder);
    b.encode(tracer, &mut encoder);
    assert!(
        matches!(
            b.read_occlusion(tracer),
            Err(sightline::Error::InvalidInput(_))
        ),
        "read before submit"
    );
    tracer.queue().submit([encoder.finish()]);
    assert_eq!(a.read_occlusion(tracer).unwrap().count_ones(), 300);
    assert_eq!(b.read_occlusion(tracer).unwrap().count_ones(), 0);
    drop((a, b));
    // A pass dropped after encode but before any read frees its buffers instead of giving them
    // back: the caller's command buffer, still unsubmitted, may use them.
    let idle = tracer.workspace_stats().idle_slots;
    let c = tracer
        .prepare_occluded(&scene, &blocked_segs, Mask::SIGHT)
        .unwrap();
    let mut encoder = tracer.device().create_command_encoder(&Default::default());
    c.encode(tracer, &mut encoder);
    drop(c);
    assert_eq!(tracer.workspace_stats().idle_slots, idle - 1);
    let clear = small.occluded(&scene, &clear_segs, Mask::SIGHT).unwrap();
    tracer.queue().submit([encoder.finish()]);
    assert_eq!(clear.count_ones(), 0);

    // Warm, repeated calls of the same or smaller size create no buffer and no bind group;
    // empty batches and empty scenes create nothing and trace nothing.
    let (_, segs) = wall_and_sight_lines(&[true; 3000], 60);
    small.occluded(&scene, &segs, Mask::SIGHT).unwrap();
    let warm = tracer.workspace_stats();
    assert!(warm.idle_slots >= 2 && warm.idle_bytes > 0, "{warm:?}");
    for n in [3000, 2048, 1, 700, 3000] {
        let bits = small.occluded(&scene, &segs[..n], Mask::SIGHT).unwrap();
        assert_eq!(bits.count_ones(), n);
    }
    let empty = Scene::default();
    assert_eq!(
        small
            .occluded(&empty, &segs, Mask::SIGHT)
            .unwrap()
            .count_ones(),
        0
    );
    assert!(small.occluded(&scene, &[], Mask::SIGHT).unwrap().is_empty());
    let none = small
        .closest_hit(&empty, &rays(&segs[..40]), Mask::SIGHT)
        .unwrap();
    assert!(none.len() == 40 && none.iter().all(Option::is_none));
    assert!(small
        .closest_hit(&scene, &[], Mask::SIGHT)
        .unwrap()
        .is_empty());
    assert!(
        small
            .occluded_many(&empty, &[(&segs, Mask::SIGHT)])
            .unwrap()[0]
            .count_ones()
            == 0
    );
    let after = tracer.workspace_stats();
    assert_eq!(
        (after.buffers_created, after.bind_groups_created),
        (warm.buffers_created, warm.bind_groups_created),
        "{warm:?} -> {after:?}"
    );
    tracer.trim_workspace();
    assert_eq!(tracer.workspace_stats().idle_slots, 0);
}

/// A corridor of `panes` glass panes (they block fire, not sight) across the x axis, 0.5 m
/// apart from x = 0, and a solid wall across it at x = `across`.
fn glass_corridor(panes: usize, across: f32) -> Scene {
    let glass = Material::new("glass", MaterialFlags::BLOCKS_FIRE, 0.5);
    let mut mesh = Mesh::default();
    let quad = |mesh: &mut Mesh, x: f32, material| {
        mesh.push_quad(
            Vec3::new(x, -1.0, -1.0),
            Vec3::new(x, 1.0, -1.0),
            Vec3::new(x, 1.0, 1.0),
            Vec3::new(x, -1.0, 1.0),
            material,
        )
    };
    for i in 0..panes {
        quad(&mut mesh, i as f32 * 0.5, 1);
    }
    quad(&mut mesh, across, 0);
    let mut materials = solid();
    materials.push(glass);
    Scene::from_mesh(mesh, materials).unwrap()
}

#[test]
fn sight_lines_down_a_long_corridor_keep_a_deep_stack_and_find_the_wall() {
    // A sight line down the corridor crosses every pane's box (and pane, which does not block
    // it), so the walk keeps more than eight subtrees pending at once; the deepest, near the start, are
    // pushed last. Walls across the corridor there and far off must both be found. (A kernel
    // that walked on an 8-entry stack and fell back to `walk` when it overflowed got this
    // wrong on lavapipe, though it passed the random-segment tests.)
    let (cpu, gpu) = (Engine::cpu(), gpu::gpu_engine());
    let panes = 8192;
    for across in [0.7, 1.45, 2.95, 5.45, 10.45, 20.45, 3000.45] {
        let scene = glass_corridor(panes, across);
        let mut rng = SplitMix64(31);
        let mut blocked = Vec::new();
        let segs: Vec<Segment> = (0..512)
            .map(|i| {
                let mut inside = |x: f32| Vec3::new(x, rng.range(-0.9, 0.9), rng.range(-0.9, 0.9));
                let a = inside(-1.0);
                let past = i % 2 == 0;
                let b = inside(if past {
                    panes as f32 * 0.5
                } else {
                    across - 0.2
                });
                blocked.push(past);
                Segment::new(a, b)
            })
            .collect();
        for engine in [Some(&cpu), gpu.as_ref()].into_iter().flatten() {
            let bits = engine.occluded(&scene, &segs, Mask::SIGHT).unwrap();
            assert_eq!(
                bits.iter().collect::<Vec<_>>(),
                blocked,
                "{:?}, wall across at x = {across}",
                engine.backend()
            );
        }
    }
}

/// A GPU engine on each walk, whatever `SIGHTLINE_RAY_QUERY` says: the compute kernels, and
/// ray queries where the adapter offers them. Without ray queries the second is `None`, and
/// under `SIGHTLINE_RAY_QUERY=on` (CI, with Mesa 25's lavapipe) that is a failure.
fn both_walks() -> Option<(Engine, Option<Engine>)> {
    let with = |ray_query| EngineOptions {
        ray_query,
        ..Default::default()
    };
    let compute = gpu::gpu_engine_with(with(sightline::RayQuery::Off))?;
    assert!(!compute.uses_ray_query());
    let rq = match Engine::headless_gpu(with(sightline::RayQuery::On)) {
        Ok(e) => Some(e),
        Err(e) if std::env::var("SIGHTLINE_RAY_QUERY").is_ok_and(|v| v == "on") => {
            panic!("SIGHTLINE_RAY_QUERY=on but no ray-query engine: {e}")
        }
        Err(e) => {
            eprintln!("skipping the ray-query half of this test: {e}");
            None
        }
    };
    assert!(rq.as_ref().is_none_or(Engine::uses_ray_query));
    Some((compute, rq))
}

/// The hardware walk keeps the contract with the CPU twin on the real level and the built-in
/// scenes (occlusion with SIGHT, closest hits), as the compute walk does.
#[test]
fn the_ray_query_walk_keeps_the_contract_on_real_and_built_in_scenes() {
    let Some((compute, Some(rq))) = both_walks() else {
        return;
    };
    for (scene, label) in contract_scenes() {
        agree_by_contract(&scene, &format!("{label}, ray queries"), 300_000, &rq);
        agree_by_contract(&scene, &format!("{label}, compute"), 100_000, &compute);
    }
}

/// Ends are strict on the hardware walk too (a segment that ends on a face, or starts on one,
/// is not blocked by it), and the instance masks cull by material class exactly as the flags
/// say: glass stops fire only, foliage hides only, a fence blocks nothing.
#[test]
fn ray_queries_keep_strict_ends_and_material_classes() {
    let Some((_, Some(rq))) = both_walks() else {
        return;
    };
    let materials = vec![
        Material::new("wall", MaterialFlags::SOLID, 0.5),
        Material::new("glass", MaterialFlags::BLOCKS_FIRE, 0.6),
        Material::new("foliage", MaterialFlags::BLOCKS_SIGHT, 0.25),
        Material::new("fence", MaterialFlags::NONE, 0.4),
    ];
    // Four 4 m x 4 m panes across the x axis at x = 0, 2, 4, 6 (walls, glass, foliage, fence).
    let mut mesh = Mesh::default();
    for m in 0..4u32 {
        let x = 2.0 * m as f32;
        let p = |y: f32, z: f32| Vec3::new(x, y, z);
        mesh.push_quad(p(-2.0, -2.0), p(-2.0, 2.0), p(2.0, 2.0), p(2.0, -2.0), m);
    }
    let scene = Scene::from_mesh(mesh, materials).unwrap();
    let seg = |a: f32, b: f32| Segment::new(Vec3::new(a, 0.1, 0.2), Vec3::new(b, 0.1, 0.2));
    // (segment, blocked for SIGHT, blocked for FIRE)
    let cases = [
        (seg(-1.0, 0.0), false, false), // ends on the wall
        (seg(0.0, 1.0), false, false),  // starts on it
        (seg(-1.0, 1.0), true, true),   // through the wall
        (seg(1.0, 3.0), false, true),   // through the glass
        (seg(3.0, 5.0), true, false),   // through the foliage
        (seg(5.0, 7.0), false, false),  // through the fence
        (seg(1.0, 2.0), false, false),  // ends on the glass
    ];
    let segs: Vec<Segment> = cases.iter().map(|c| c.0).collect();
    for (mask, expect) in [(Mask::SIGHT, 1), (Mask::FIRE, 2)] {
        for (e, label) in [(&rq, "ray queries"), (&Engine::cpu(), "cpu")] {
            let bits = e.occluded(&scene, &segs, mask).unwrap();
            for (i, c) in cases.iter().enumerate() {
                let want = if expect == 1 { c.1 } else { c.2 };
                assert_eq!(bits.get(i), want, "{label} {mask:?}: {:?}", c.0);
            }
        }
    }
    // Closest hits for FIRE down the x axis: the wall from x = -1, the glass from x = 1 (the
    // same side of both panes), and past x = 5 only the fence, which blocks nothing.
    let ray = |x: f32| Ray::new(Vec3::new(x, 0.1, 0.2), Vec3::X, f32::INFINITY);
    let rays = [ray(-1.0), ray(1.0), ray(5.0)];
    let want = Engine::cpu()
        .closest_hit_records(&scene, &rays, Mask::FIRE)
        .unwrap();
    let got = rq.closest_hit_records(&scene, &rays, Mask::FIRE).unwrap();
    assert_eq!(got, want);
    assert_eq!((got[0].t, got[0].material), (1.0, 0));
    assert_eq!(
        (got[1].t, got[1].material, got[1].back),
        (1.0, 1, got[0].back)
    );
    assert!(cpu::is_miss(&got[2]));
    // A scene of triangles that block nothing has acceleration structures without instances.
    let mut fence = Mesh::default();
    let p = |y: f32, z: f32| Vec3::new(0.0, y, z);
    fence.push_quad(p(-2.0, -2.0), p(-2.0, 2.0), p(2.0, 2.0), p(2.0, -2.0), 0);
    let open = Scene::from_mesh(
        fence,
        vec![Material::new("fence", MaterialFlags::NONE, 0.4)],
    );
    let open = open.unwrap();
    let bits = rq
        .occluded(&open, &[seg(-1.0, 1.0)], Mask::ANY_SOLID)
        .unwrap();
    assert!(!bits.get(0));
    let hits = rq.closest_hit_records(&open, &[ray(-1.0)], Mask::ANY_SOLID);
    assert!(cpu::is_miss(&hits.unwrap()[0]));
}

/// On the hardware walk a tier that changes is rebuilt (a moved door blocks where it now
/// stands), and the builds ride in the submission of the trace that needs them: a first call
/// on a scene makes one submission and one wait, as on the compute walk.
#[test]
fn acceleration_structures_follow_moved_objects_without_extra_submissions() {
    let Some((_, Some(rq))) = both_walks() else {
        return;
    };
    let mut scene = procedural::rock(1, 1);
    let mut door = Mesh::default();
    let p = |x: f32, y: f32| Vec3::new(x, y, 0.0);
    door.push_quad(p(-1.0, 0.0), p(1.0, 0.0), p(1.0, 2.0), p(-1.0, 2.0), 0);
    let at = |x: f32| Affine3A::from_translation(Vec3::new(x, 0.0, 20.0));
    let id = scene.add_object(door, at(20.0), Mobility::Movable).unwrap();
    let through = Segment::new(Vec3::new(20.0, 1.0, 18.0), Vec3::new(20.0, 1.0, 22.0));
    let before = rq.counters().total;
    assert!(rq.occluded(&scene, &[through], Mask::SIGHT).unwrap().get(0));
    let first = rq.counters().total.since(&before);
    assert_eq!((first.submissions, first.waits), (1, 1), "{first:?}");
    for (x, blocked) in [(23.0, false), (20.0, true), (20.5, true), (22.0, false)] {
        scene.set_transform(id, at(x)).unwrap();
        let before = rq.counters().total;
        let bits = rq.occluded(&scene, &[through], Mask::SIGHT).unwrap();
        assert_eq!(bits.get(0), blocked, "door at x = {x}");
        let d = rq.counters().total.since(&before);
        assert_eq!((d.submissions, d.waits), (1, 1), "door at x = {x}: {d:?}");
    }
}
