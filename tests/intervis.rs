//! Intervis (Darken, McCue and Guerrero): the GPU stencil passes against the CPU ray-casting twin on seeded
//! random pairs in `urban`, exact properties on both paths (fully visible, hidden, a wall over
//! the lower half, known albedos), scaling with resolution and field of view, the humanoid
//! target, bad input, and the pass encoded into a caller's encoder.

#[path = "common/gpu.rs"]
mod gpu;

use glam::{Vec2, Vec3};
use sightline::cover::Posture;
use sightline::intervis::measure::{
    exposed_ray_cast, humanoid, measure, measure_ray_cast, IntervisPair, IntervisParams,
};
use sightline::intervis::{IntervisPass, IntervisRecord};
use sightline::scene::procedural;
use sightline::trace::{Ray, SplitMix64};
use sightline::{Engine, Error, Mask, Material, MaterialFlags, Mesh, Scene};
use std::collections::HashMap;
use std::time::Instant;

const H: f32 = 1.8;

/// Records from the CPU engine, and from the GPU engine when there is one.
fn both(
    scene: &Scene,
    pairs: &[IntervisPair],
    params: &IntervisParams,
) -> Vec<(&'static str, Vec<IntervisRecord>)> {
    let mut out = vec![(
        "cpu",
        measure(&Engine::cpu(), scene, pairs, params).unwrap(),
    )];
    if let Some(g) = gpu::gpu_engine() {
        out.push(("gpu", measure(&g, scene, pairs, params).unwrap()));
    }
    out
}

fn material(albedo: f32) -> Material {
    Material::new("m", MaterialFlags::SOLID | MaterialFlags::WALKABLE, albedo)
}

/// A scene of axis-aligned quads facing the z axis (`(x0, x1, y0, y1, z)`) and an optional
/// ground quad at y = 0, all of one albedo.
fn scene_of(walls: &[(f32, f32, f32, f32, f32)], ground: bool, albedo: f32) -> Scene {
    let mut m = Mesh::default();
    for &(x0, x1, y0, y1, z) in walls {
        m.push_quad(
            Vec3::new(x0, y0, z),
            Vec3::new(x1, y0, z),
            Vec3::new(x1, y1, z),
            Vec3::new(x0, y1, z),
            0,
        );
    }
    if ground {
        m.push_quad(
            Vec3::new(-100.0, 0.0, -100.0),
            Vec3::new(-100.0, 0.0, 100.0),
            Vec3::new(100.0, 0.0, 100.0),
            Vec3::new(100.0, 0.0, -100.0),
            0,
        );
    }
    if m.triangles.is_empty() {
        return Scene::new(vec![material(albedo)]);
    }
    Scene::from_mesh(m, vec![material(albedo)]).unwrap()
}

fn pair(observer: Vec3, target: Vec3, posture: Posture) -> IntervisPair {
    IntervisPair {
        observer,
        target,
        posture,
    }
}

#[test]
fn humanoid_is_a_closed_low_poly_body_scaled_to_its_height() {
    for p in Posture::ALL {
        let m = humanoid(p, H);
        let n = m.triangle_count();
        assert!((200..=500).contains(&n), "{p:?}: {n} triangles");
        assert!(m.positions.iter().all(|v| v.is_finite()));
        // Closed: every edge is shared by exactly two triangles.
        let mut edges: HashMap<(u32, u32), u32> = HashMap::new();
        for t in &m.triangles {
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                *edges.entry((a.min(b), a.max(b))).or_default() += 1;
            }
        }
        assert!(edges.values().all(|&c| c == 2), "{p:?} is not closed");
        // Deterministic.
        assert_eq!(m, humanoid(p, H));
    }
    let top = |p, h| {
        let m = humanoid(p, h);
        let lo = m
            .positions
            .iter()
            .map(|v| v.y)
            .fold(f32::INFINITY, f32::min);
        let hi = m
            .positions
            .iter()
            .map(|v| v.y)
            .fold(f32::NEG_INFINITY, f32::max);
        (lo, hi)
    };
    assert_eq!(top(Posture::Standing, H), (0.0, H));
    assert_eq!(top(Posture::Standing, 1.6), (0.0, 1.6));
    let (_, crouch) = top(Posture::Crouching, H);
    let (_, prone) = top(Posture::Prone, H);
    assert!(
        prone < 0.5 && crouch > 0.9 && crouch < 1.3,
        "{prone} {crouch}"
    );
    // Heights scale every length.
    let (a, b) = (humanoid(Posture::Prone, 1.0), humanoid(Posture::Prone, 2.0));
    for (p, q) in a.positions.iter().zip(&b.positions) {
        assert!((*p * 2.0 - *q).length() < 1e-5);
    }
}

#[test]
fn fully_visible_target_has_no_occlusion() {
    let params = IntervisParams::default();
    let pairs: Vec<IntervisPair> = Posture::ALL
        .iter()
        .map(|&p| pair(Vec3::new(0.0, 1.7, 0.0), Vec3::new(0.0, 0.0, 20.0), p))
        .collect();
    for ground in [false, true] {
        let scene = scene_of(&[], ground, 0.35);
        for (name, recs) in both(&scene, &pairs, &params) {
            for r in &recs {
                assert!(r.exposed > 20, "{name} ground {ground}: {r:?}");
                assert_eq!(
                    (r.occluded, r.occlusion),
                    (0, 0.0),
                    "{name} {ground}: {r:?}"
                );
                assert_eq!(r.exposed + r.background, r.box_pixels);
                assert!(r.solid_angle > 0.0);
            }
        }
    }
}

#[test]
fn target_behind_a_wall_is_hidden() {
    let params = IntervisParams::default();
    let scene = scene_of(&[(-5.0, 5.0, -1.0, 4.0, 10.0)], true, 0.5);
    let pairs: Vec<IntervisPair> = Posture::ALL
        .iter()
        .map(|&p| pair(Vec3::new(0.0, 1.7, 0.0), Vec3::new(0.5, 0.0, 20.0), p))
        .collect();
    for (name, recs) in both(&scene, &pairs, &params) {
        for r in &recs {
            assert_eq!(r.exposed, 0, "{name}: {r:?}");
            assert!(r.occluded > 20, "{name}: {r:?}");
            // A GPU may divide through a reciprocal: 0.99999994 is a whole occlusion.
            assert!((r.occlusion - 1.0).abs() <= 1e-6, "{name}: {r:?}");
            assert_eq!((r.solid_angle, r.contrast), (0.0, 0.0), "{name}: {r:?}");
        }
    }
}

/// The eye at the target's mid-height (0.9 m) looks level at its centre, so mid-height projects
/// onto the boundary between the view's two middle rows. A wall whose top edge is at that
/// height hides exactly the target's rows below it; a wall from there up hides exactly the
/// rows above. The two occluded counts partition the target's pixels, and each wall's exposed
/// pixels are the other's occluded ones.
#[test]
fn wall_over_the_lower_half_hides_the_lower_rows() {
    let params = IntervisParams::default();
    let eye = Vec3::new(0.0, H / 2.0, 0.0);
    let target = Vec3::new(0.0, 0.0, 20.0);
    let pairs = [pair(eye, target, Posture::Standing)];
    let free = both(&scene_of(&[], false, 0.5), &pairs, &params);
    let lower = both(
        &scene_of(&[(-10.0, 10.0, -5.0, H / 2.0, 10.0)], false, 0.5),
        &pairs,
        &params,
    );
    let upper = both(
        &scene_of(&[(-10.0, 10.0, H / 2.0, 10.0, 10.0)], false, 0.5),
        &pairs,
        &params,
    );
    for k in 0..free.len() {
        let (name, f) = (free[k].0, free[k].1[0]);
        let (l, u) = (lower[k].1[0], upper[k].1[0]);
        // One pixel row of the target is at most its box width (box pixels / box rows; the
        // box is at least 8 % wider than the target's own width).
        let rows = (f.box_pixels as f32).sqrt(); // generous: boxes here are taller than wide
        let row = f.box_pixels as f32 / rows.max(1.0);
        eprintln!(
            "{name}: free {} px; lower wall n_t {} n_o {} O {:.3}; upper wall n_t {} n_o {} \
             O {:.3}",
            f.exposed, l.exposed, l.occluded, l.occlusion, u.exposed, u.occluded, u.occlusion
        );
        assert_eq!(l.exposed + l.occluded, f.exposed, "{name}");
        assert_eq!(u.exposed + u.occluded, f.exposed, "{name}");
        assert!(
            (l.occluded as f32 - u.exposed as f32).abs() <= row,
            "{name}: lower wall hides {}, upper wall shows {}",
            l.occluded,
            u.exposed
        );
        assert!(
            (l.occlusion + u.occlusion - 1.0).abs() <= row / f.exposed as f32,
            "{name}"
        );
        // The lower half of a humanoid's height holds a bit under half its pixels (legs
        // are narrower than torso and arms).
        assert!(
            l.occlusion > 0.3 && l.occlusion < 0.55,
            "{name}: O {}",
            l.occlusion
        );
    }
    // Both paths agree to the pixel row.
    if lower.len() == 2 {
        let (c, g) = (lower[0].1[0], lower[1].1[0]);
        assert!((c.occlusion - g.occlusion).abs() < 0.01, "{c:?} {g:?}");
    }
}

#[test]
fn known_albedos_give_the_formula_contrast() {
    // Flat light: every surface shows its albedo.
    let params = IntervisParams {
        ambient: 1.0,
        target_albedo: 0.3,
        ..IntervisParams::default()
    };
    let eye = Vec3::new(0.0, H / 2.0, 0.0);
    let pairs: Vec<IntervisPair> = Posture::ALL
        .iter()
        .map(|&p| pair(eye, Vec3::new(0.0, 0.0, 20.0), p))
        .collect();
    // A wall behind the target fills the box: B_b = 0.6.
    let wall = scene_of(&[(-30.0, 30.0, -30.0, 30.0, 30.0)], false, 0.6);
    // Nothing at all: B_b = sky = 0.8.
    let sky = scene_of(&[], false, 0.6);
    for (scene, bb) in [(wall, 0.6f32), (sky, 0.8)] {
        for (name, recs) in both(&scene, &pairs, &params) {
            for r in &recs {
                assert!((r.target_brightness - 0.3).abs() < 1e-5, "{name}: {r:?}");
                assert!((r.background_brightness - bb).abs() < 1e-5, "{name}: {r:?}");
                let c = (0.3 - bb).abs() / bb;
                assert!((r.contrast - c).abs() < 1e-5, "{name}: {r:?} want C {c}");
            }
        }
    }
    // Directional light: a sunlit wall facing the sun is brighter than ambient alone.
    let lit = IntervisParams {
        sun: Vec3::new(0.0, 0.0, -1.0),
        ambient: 0.25,
        ..IntervisParams::default()
    };
    let scene = scene_of(&[(-30.0, 30.0, -30.0, 30.0, 30.0)], false, 0.6);
    for (name, recs) in both(&scene, &pairs, &lit) {
        assert!((recs[2].background_brightness - 0.6).abs() < 1e-5, "{name}");
    }
}

#[test]
fn results_scale_with_resolution_and_field_of_view() {
    let scene = scene_of(&[], true, 0.35);
    let pairs = [pair(
        Vec3::new(0.0, 1.7, 0.0),
        Vec3::new(2.0, 0.0, 12.0),
        Posture::Standing,
    )];
    let base = IntervisParams::default();
    let variants = [
        IntervisParams {
            resolution: 1024,
            ..base
        },
        IntervisParams {
            fov_degrees: 30.0,
            ..base
        },
    ];
    for (name, b) in both(&scene, &pairs, &base) {
        for v in &variants {
            let engine = if name == "gpu" {
                gpu::gpu_engine().unwrap()
            } else {
                Engine::cpu()
            };
            let r = measure(&engine, &scene, &pairs, v).unwrap()[0];
            // Pixel counts scale with the focal length squared.
            let focal =
                |p: &IntervisParams| p.resolution as f32 / (p.fov_degrees.to_radians() / 2.0).tan();
            let want = (focal(v) / focal(&base)).powi(2);
            let ratio = r.exposed as f32 / b[0].exposed as f32;
            assert!(
                (ratio / want - 1.0).abs() < 0.05,
                "{name} {v:?}: n_t ratio {ratio}, want {want}"
            );
            let sa = r.solid_angle / b[0].solid_angle;
            eprintln!("{name} {v:?}: n_t ratio {ratio}, solid angle ratio {sa}");
            assert!(
                (sa - 1.0).abs() < 0.05,
                "{name} {v:?}: solid angle ratio {sa}"
            );
        }
        // The exposed solid angle of a standing target 12 m away: about its silhouette area
        // (0.4 to 1.7 m^2, the humanoid is 1.8 m by up to 0.8 m) over 12^2.
        assert!(
            b[0].solid_angle > 0.003 && b[0].solid_angle < 0.012,
            "{:?}",
            b[0]
        );
    }
}

#[test]
fn bad_input_is_rejected() {
    let scene = scene_of(&[], true, 0.35);
    let ok = pair(
        Vec3::new(0.0, 1.7, 0.0),
        Vec3::new(0.0, 0.0, 9.0),
        Posture::Prone,
    );
    let nan = pair(Vec3::new(f32::NAN, 1.7, 0.0), Vec3::ZERO, Posture::Prone);
    let mut engines = vec![Engine::cpu()];
    engines.extend(gpu::gpu_engine());
    for e in &engines {
        let p = IntervisParams::default();
        assert!(matches!(
            measure(e, &scene, &[ok, nan], &p),
            Err(Error::InvalidInput(_))
        ));
        for bad in [
            IntervisParams {
                fov_degrees: f32::NAN,
                ..p
            },
            IntervisParams { resolution: 0, ..p },
            IntervisParams {
                sun: Vec3::ZERO,
                ..p
            },
            IntervisParams {
                padding: f32::NAN,
                ..p
            },
            IntervisParams {
                max_box_pixels: 0,
                ..p
            },
            IntervisParams {
                max_box_pixels: u32::MAX,
                ..p
            },
        ] {
            assert!(matches!(
                measure(e, &scene, &[ok], &bad),
                Err(Error::InvalidInput(_))
            ));
        }
        assert!(measure(e, &scene, &[], &p).unwrap().is_empty());
    }
}

/// Walkable ground under (x, z), found with a downward ray: `None` off the walkable surfaces.
fn ground(scene: &Scene, xz: &[Vec2]) -> Vec<Option<Vec3>> {
    let rays: Vec<Ray> = xz
        .iter()
        .map(|p| Ray::new(Vec3::new(p.x, 100.0, p.y), Vec3::NEG_Y, 200.0))
        .collect();
    Engine::cpu()
        .closest_hit(scene, &rays, Mask::ANY_SOLID)
        .unwrap()
        .iter()
        .zip(xz)
        .map(|(h, p)| {
            let h = (*h)?;
            let walkable = scene.materials()[h.material as usize]
                .flags
                .contains(MaterialFlags::WALKABLE);
            (walkable && h.normal.y > 0.8).then(|| Vec3::new(p.x, 100.0 - h.t, p.y))
        })
        .collect()
}

/// Observers with targets 5..60 m away on walkable ground in `urban`, seeded.
fn urban_pairs(scene: &Scene, observers: usize, per_observer: usize) -> Vec<IntervisPair> {
    let mut rng = SplitMix64(2024);
    let lo = Vec2::new(-49.0, -60.0);
    let hi = Vec2::new(49.0, 60.0);
    let mut pairs = Vec::new();
    while pairs.len() < observers * per_observer {
        let o = Vec2::new(rng.range(lo.x, hi.x), rng.range(lo.y, hi.y));
        let Some(og) = ground(scene, &[o])[0] else {
            continue;
        };
        let eye = og + Vec3::Y * 1.7;
        let mut found = 0;
        while found < per_observer {
            let cands: Vec<Vec2> = (0..64)
                .map(|_| {
                    let a = rng.range(0.0, std::f32::consts::TAU);
                    let d = rng.range(5.0, 60.0);
                    o + Vec2::new(a.cos(), a.sin()) * d
                })
                .filter(|p| p.cmpge(lo).all() && p.cmple(hi).all())
                .collect();
            for g in ground(scene, &cands).into_iter().flatten() {
                if found == per_observer {
                    break;
                }
                let posture = Posture::ALL[(rng.next_u64() % 3) as usize];
                pairs.push(pair(eye, g, posture));
                found += 1;
            }
        }
    }
    pairs
}

/// Two measurements of the same pairs compared by the agreement contract: pixel counts within
/// 2 % (plus 2 pixels) and occlusion within 0.02 (plus what 2 pixels of the target change it
/// by, `2 / (n_t + n_o)`) for every pair (`bad` lists the others), and
/// contrast within 0.05 (`shading` lists the others: background pixels where coplanar scene
/// surfaces of different albedo meet are a depth-test tie the rasteriser and the ray caster,
/// or two rasterisations at different atlas places, may break differently; the tests allow 1 %).
struct Agreement {
    visible: usize,
    bad: Vec<(usize, IntervisRecord, IntervisRecord)>,
    shading: Vec<(usize, IntervisRecord, IntervisRecord)>,
    /// n_t deviation as a share of its tolerance, occlusion and contrast deviations.
    worst: (f32, f32, f32),
}

fn agreement(g: &[IntervisRecord], c: &[IntervisRecord]) -> Agreement {
    let mut out = Agreement {
        visible: 0,
        bad: Vec::new(),
        shading: Vec::new(),
        worst: (0.0, 0.0, 0.0),
    };
    for (k, (g, c)) in g.iter().zip(c).enumerate() {
        assert_eq!(g.box_pixels, c.box_pixels, "pair {k}: boxes differ");
        if g.exposed == 0 && c.exposed == 0 {
            continue;
        }
        out.visible += 1;
        let tolerance = c.exposed as f32 * 0.02 + 2.0;
        let dn = (g.exposed as f32 - c.exposed as f32).abs();
        let (d_o, d_c) = (
            (g.occlusion - c.occlusion).abs(),
            (g.contrast - c.contrast).abs(),
        );
        let w = &mut out.worst;
        *w = (w.0.max(dn / tolerance), w.1.max(d_o), w.2.max(d_c));
        let seen = (c.exposed + c.occluded).max(1) as f32;
        if dn > tolerance || d_o > 0.02 + 2.0 / seen {
            out.bad.push((k, *g, *c));
        } else if d_c > 0.05 {
            out.shading.push((k, *g, *c));
        }
    }
    out
}

/// The exposure-only count (each pair in a view of its own, the scene traced on the target's
/// pixels alone, up to the target) equals the twin's `exposed` for the pair measured alone, on
/// `urban`'s seeded pairs (5-60 m) and on pairs 2.5 m apart (targets over the pixel budget,
/// measured at a lower resolution), under both masks: hidden, partly and wholly visible
/// targets all occur.
#[test]
fn exposed_pixels_alone_equal_the_twins_counts() {
    let scene = procedural::urban(1, 1);
    let engine = Engine::cpu();
    let mut pairs = urban_pairs(&scene, 30, 20);
    let near: Vec<IntervisPair> = pairs
        .iter()
        .step_by(7)
        .map(|p| {
            let d = (p.target - p.observer) * Vec3::new(1.0, 0.0, 1.0);
            let target = p.observer + d.normalize_or(Vec3::X) * 2.5 - Vec3::Y * 1.7;
            pair(p.observer, target, p.posture)
        })
        .collect();
    pairs.extend(near);
    for mask in [Mask::SIGHT, Mask::FIRE] {
        let params = IntervisParams {
            mask,
            ..IntervisParams::default()
        };
        let twin: Vec<IntervisRecord> = pairs
            .iter()
            .map(|p| {
                measure_ray_cast(&engine, &scene, std::slice::from_ref(p), &params).unwrap()[0]
            })
            .collect();
        let alone = exposed_ray_cast(&engine, &scene, &pairs, &params).unwrap();
        let differ: Vec<usize> = (0..pairs.len())
            .filter(|&i| alone[i] != twin[i].exposed)
            .collect();
        assert!(differ.is_empty(), "{mask:?}: pairs {differ:?} differ");
        let hidden = twin
            .iter()
            .filter(|r| r.exposed == 0 && r.occluded > 0)
            .count();
        let partly = twin
            .iter()
            .filter(|r| r.exposed > 0 && r.occluded > 0)
            .count();
        let whole = twin
            .iter()
            .filter(|r| r.exposed > 0 && r.occluded == 0)
            .count();
        eprintln!(
            "{mask:?}: {} pairs: {hidden} hidden, {partly} partly, {whole} wholly seen",
            pairs.len()
        );
        assert!(hidden > 20 && partly > 20 && whole > 20);
    }
}

#[test]
fn gpu_matches_the_ray_cast_twin_in_urban() {
    let Some(engine) = gpu::gpu_engine() else {
        return;
    };
    let scene = procedural::urban(1, 1);
    let params = IntervisParams::default();
    // 50 observers with 20 targets each: the seed's access pattern (one observer's row of
    // waypoints), so views are shared.
    let pairs = urban_pairs(&scene, 50, 20);
    let t = Instant::now();
    let g = measure(&engine, &scene, &pairs, &params).unwrap();
    let t_gpu = t.elapsed();
    let t = Instant::now();
    let c = measure_ray_cast(&Engine::cpu(), &scene, &pairs, &params).unwrap();
    let t_cpu = t.elapsed();
    let Agreement {
        visible,
        bad,
        shading,
        worst: (worst_n, worst_o, worst_c),
    } = agreement(&g, &c);
    eprintln!(
        "{} pairs ({visible} with the target at least partly visible): GPU {:.2?} ({:.0} \
         pairs/s), CPU twin {:.2?} ({:.0} pairs/s); worst n_t deviation {worst_n:.2} of the \
         tolerance, O {worst_o:.4}, C {worst_c:.4}; {} outside the count tolerance, {} outside \
         the contrast tolerance",
        pairs.len(),
        t_gpu,
        pairs.len() as f64 / t_gpu.as_secs_f64(),
        t_cpu,
        pairs.len() as f64 / t_cpu.as_secs_f64(),
        bad.len(),
        shading.len()
    );
    for (k, g, c) in bad.iter().chain(&shading).take(10) {
        eprintln!("pair {k} {:?}\n  gpu {g:?}\n  cpu {c:?}", pairs[*k]);
    }
    assert!(visible > 200, "only {visible} visible pairs");
    assert!(bad.is_empty(), "{} of {visible} pairs disagree", bad.len());
    assert!(
        shading.len() * 100 <= visible,
        "{} of {visible} pairs differ in contrast",
        shading.len()
    );
    assert!(bad.is_empty(), "{} of {visible} pairs disagree", bad.len());
}

/// `IntervisRecord` has the layout of its WGSL twin in `shaders/intervis_reduce.wgsl`.
#[test]
fn record_matches_its_wgsl_twin() {
    use std::mem::{offset_of, size_of};
    let source = include_str!("../shaders/intervis_reduce.wgsl");
    let module = naga::front::wgsl::parse_str(source).unwrap();
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    let (handle, ty) = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some("IntervisRecord"))
        .unwrap();
    let naga::TypeInner::Struct { members, .. } = &ty.inner else {
        panic!("IntervisRecord is not a struct")
    };
    assert_eq!(layouter[handle].size as usize, size_of::<IntervisRecord>());
    let offset = |n: &str| {
        members
            .iter()
            .find(|m| m.name.as_deref() == Some(n))
            .unwrap()
            .offset
    };
    for (field, want) in [
        ("exposed", offset_of!(IntervisRecord, exposed)),
        ("occluded", offset_of!(IntervisRecord, occluded)),
        ("background", offset_of!(IntervisRecord, background)),
        ("box_pixels", offset_of!(IntervisRecord, box_pixels)),
        (
            "target_brightness",
            offset_of!(IntervisRecord, target_brightness),
        ),
        (
            "background_brightness",
            offset_of!(IntervisRecord, background_brightness),
        ),
        ("contrast", offset_of!(IntervisRecord, contrast)),
        ("occlusion", offset_of!(IntervisRecord, occlusion)),
        ("solid_angle", offset_of!(IntervisRecord, solid_angle)),
    ] {
        assert_eq!(offset(field) as usize, want, "IntervisRecord.{field}");
    }
}

fn record_bytes(r: &[IntervisRecord]) -> &[u8] {
    bytemuck::cast_slice(r)
}

fn not_run(r: sightline::Result<Vec<IntervisRecord>>, what: &str) {
    match r {
        Err(Error::InvalidInput(m)) => println!("{what}: {m}"),
        other => panic!(
            "{what}: expected InvalidInput, got {:?}",
            other.map(|r| r.len())
        ),
    }
}

#[test]
fn pass_encoded_into_a_callers_encoder_matches_the_convenience_call() {
    let Some(engine) = gpu::gpu_engine() else {
        return;
    };
    let tracer = engine.gpu().unwrap();
    let scene = procedural::urban(1, 1);
    // Small views keep 4500 targets cheap, all in the caller's one command buffer.
    let params = IntervisParams {
        resolution: 128,
        ..IntervisParams::default()
    };
    let pairs = urban_pairs(&scene, 50, 90);
    let pass = IntervisPass::prepare(tracer, &scene, &pairs, &params).unwrap();
    assert_eq!(pass.len(), pairs.len());
    not_run(pass.read(tracer), "read before encode");
    // The caller's own work in the same command buffer: clearing one of its buffers.
    let device = tracer.device();
    let own = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("the caller's"),
        size: 1 << 20,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.clear_buffer(&own, 0, None);
    pass.encode(tracer, &mut encoder);
    not_run(pass.read(tracer), "read before submit");
    tracer.queue().submit([encoder.finish()]);
    let got = pass.read(tracer).unwrap();
    let want = measure(&engine, &scene, &pairs, &params).unwrap();
    assert_eq!(got.len(), pairs.len());
    assert_eq!(record_bytes(&got), record_bytes(&want), "pass vs measure");
    // The same pairs in two calls (split between observers, so the views are the same).
    let half = 25 * 90;
    let mut split = measure(&engine, &scene, &pairs[..half], &params).unwrap();
    split.extend(measure(&engine, &scene, &pairs[half..], &params).unwrap());
    // Two calls lay the targets out in the atlases differently: the same records by the
    // agreement contract (tile placement moves sample positions in the last bits).
    let a = agreement(&split, &got);
    assert!(
        a.bad.is_empty(),
        "one call vs two: {:?}",
        &a.bad[..a.bad.len().min(3)]
    );
    assert!(
        a.shading.len() * 100 <= a.visible,
        "one call vs two: {} shading",
        a.shading.len()
    );
    let visible = got.iter().filter(|r| r.exposed > 0).count();
    println!(
        "{} pairs in one command buffer, {visible} with the target in sight: the same records \
         as measure in one call and in two",
        pairs.len()
    );
    assert!(visible > 500, "only {visible} visible pairs");
    // No pairs: nothing to draw, still encode before read.
    let empty = IntervisPass::prepare(tracer, &scene, &[], &params).unwrap();
    not_run(empty.read(tracer), "empty, read before encode");
    let mut encoder = device.create_command_encoder(&Default::default());
    empty.encode(tracer, &mut encoder);
    tracer.queue().submit([encoder.finish()]);
    assert!(empty.read(tracer).unwrap().is_empty());
    // Bad input is an error at prepare.
    let bad = [pair(Vec3::NAN, Vec3::ZERO, Posture::Standing)];
    assert!(matches!(
        IntervisPass::prepare(tracer, &scene, &bad, &params),
        Err(Error::InvalidInput(_))
    ));
}

/// Counters of intervis' GPU work during `f`.
fn counted<T>(engine: &Engine, f: impl FnOnce() -> T) -> (T, sightline::Counters) {
    let before = engine.counters().operation("intervis");
    let out = f();
    (out, engine.counters().operation("intervis").since(&before))
}

/// Where the movable wall of [`walled_village`] stands: 2 m ahead (+x) of `eye`, shifted
/// `dz` metres sideways.
fn wall_at(eye: Vec3, dz: f32) -> glam::Affine3A {
    glam::Affine3A::from_translation(eye + Vec3::new(2.0, 0.0, dz))
}

/// `village` with an observer whose view along +x a movable 4 x 4 m wall fills ([`wall_at`]),
/// and pairs from it to targets 10-30 m away on the ground all around.
fn walled_village() -> (Scene, sightline::ObjectId, Vec3, Vec<IntervisPair>) {
    let mut scene = procedural::village(1, 1);
    let eye = ground(&scene, &[Vec2::new(8.0, -22.0)])[0].unwrap() + Vec3::Y * 1.7;
    let m = scene.add_material(material(0.5));
    let mut wall = Mesh::default();
    let q = |y: f32, z: f32| Vec3::new(0.0, y, z);
    wall.push_quad(q(-2.0, -2.0), q(2.0, -2.0), q(2.0, 2.0), q(-2.0, 2.0), m);
    let door = scene
        .add_object(wall, wall_at(eye, 0.0), sightline::Mobility::Movable)
        .unwrap();
    let around: Vec<Vec2> = (0..60)
        .map(|k| {
            let (a, d) = (k as f32 * 0.105 - 3.1, 10.0 + (k % 5) as f32 * 5.0);
            Vec2::new(eye.x + d * a.cos(), eye.z + d * a.sin())
        })
        .collect();
    let pairs = (ground(&scene, &around).into_iter().flatten())
        .enumerate()
        .map(|(k, t)| pair(eye, t, Posture::ALL[k % 3]))
        .collect();
    (scene, door, eye, pairs)
}

#[test]
fn a_repeated_call_uploads_only_its_pairs_and_creates_nothing() {
    let Some(engine) = gpu::gpu_engine() else {
        return;
    };
    let tracer = engine.gpu().unwrap();
    let (scene, _, _, pairs) = walled_village();
    let params = IntervisParams::default();
    let run = || measure(&engine, &scene, &pairs, &params).unwrap();
    let (first, once) = counted(&engine, run);
    let pass = IntervisPass::prepare(tracer, &scene, &pairs, &params).unwrap();
    let (tiles, culled) = (pass.tiles(), pass.scene_triangles());
    drop(pass);
    let (second, again) = counted(&engine, run);
    assert_eq!(
        record_bytes(&second),
        record_bytes(&first),
        "the same call twice"
    );
    // The call's own data: per drawn target a 176-byte tile and its culled scene triangles
    // (12 bytes each), the light (32 bytes) and the receipt's word; fills start at aligned
    // slots, so up to a dynamic-offset alignment's worth of zeroed slots more per fill.
    let drawn = second.iter().filter(|r| r.box_pixels > 0).count() as u64;
    let queries = drawn * 176 + culled * 12 + 32 + 4;
    println!(
        "{} pairs, {drawn} drawn in {tiles} tiles: first call {once}; repeated call \
         {again}, staging writes {}; {queries} bytes of queries",
        pairs.len(),
        again.staging_writes
    );
    let triangles: u64 = scene.tiers().iter().map(|t| t.triangles.len() as u64).sum();
    assert!(
        once.bytes_uploaded >= triangles * 96,
        "the first call uploads the scene"
    );
    assert!(
        drawn > 20 && tiles as u64 == drawn,
        "{drawn} targets drawn in {tiles} tiles"
    );
    assert!(
        (queries..=queries + (64 << 10)).contains(&again.bytes_uploaded),
        "{again}: uploads beyond the queries"
    );
    assert_eq!(again.created(), 0, "{again}: created buffers or textures");
    assert_eq!((again.submissions, again.waits), (1, 1), "{again}");
    assert_eq!(
        again.staging_writes, 0,
        "{again}: through the mapped upload buffer"
    );
}

#[test]
fn moving_an_object_uploads_its_tier_again_and_the_records_follow() {
    let Some(engine) = gpu::gpu_engine() else {
        return;
    };
    let (mut scene, door, eye, pairs) = walled_village();
    let params = IntervisParams::default();
    let tracer = engine.gpu().unwrap();
    let run = |scene: &Scene| measure(&engine, scene, &pairs, &params).unwrap();
    // Scene triangles the call culls into its index buffer (12 bytes each).
    let culled = |scene: &Scene| {
        let pass = IntervisPass::prepare(tracer, scene, &pairs, &params).unwrap();
        pass.scene_triangles()
    };
    let (first, _) = counted(&engine, || run(&scene));
    let (_, again) = counted(&engine, || run(&scene));
    let before = culled(&scene);
    // Moving the wall aside uploads the movable tier again (96 bytes a triangle), not the
    // static one; the call's index buffer follows what its tiles now see.
    scene.set_transform(door, wall_at(eye, 8.0)).unwrap();
    let movable = scene.tiers()[1]
        .triangles
        .iter()
        .filter(|t| t.flags & Mask::SIGHT.bits() != 0)
        .count() as u64;
    let (after, move_cost) = counted(&engine, || run(&scene));
    let after_culled = culled(&scene);
    assert_eq!(
        move_cost.bytes_uploaded + before * 12,
        again.bytes_uploaded + movable * 96 + after_culled * 12,
        "{move_cost}: the movable tier and the pairs"
    );
    assert_eq!(
        move_cost.created(),
        1,
        "{move_cost}: the tier's vertex buffer"
    );
    // The same records as a scene never seen (a clone is uploaded afresh), not the old ones.
    assert_eq!(
        record_bytes(&after),
        record_bytes(&run(&scene.clone())),
        "after the move"
    );
    let changed = (after.iter().zip(&first)).filter(|(a, b)| a != b).count();
    println!(
        "moving the wall changed {changed} records; the move's call: {move_cost} ({movable} \
         movable triangles)"
    );
    assert!(
        changed > 0,
        "the wall no longer hides the targets behind it"
    );
}

#[test]
fn one_submission_and_one_wait_whatever_the_pair_count() {
    let Some(engine) = gpu::gpu_engine() else {
        return;
    };
    let tracer = engine.gpu().unwrap();
    let scene = procedural::urban(1, 1);
    let params = IntervisParams::default();
    // 1 pair, 1,000 pairs, and 16,000 pairs (20 targets per observer, 5-60 m away): the last
    // needs more than one fill of the atlas, all in the one command buffer.
    let many = urban_pairs(&scene, 800, 20);
    let mut fills = Vec::new();
    for n in [1, 1000, many.len()] {
        let pairs = &many[..n];
        let pass = IntervisPass::prepare(tracer, &scene, pairs, &params).unwrap();
        fills.push(pass.fills());
        drop(pass);
        let (records, c) = counted(&engine, || {
            measure(&engine, &scene, pairs, &params).unwrap()
        });
        assert_eq!(records.len(), n);
        assert_eq!((c.submissions, c.waits), (1, 1), "{n} pairs: {c}");
        let record = size_of::<IntervisRecord>() as u64;
        assert!(
            c.bytes_read_back <= (n as u64 + 256) * record + 4,
            "{n} pairs: {c}"
        );
    }
    println!(
        "1, 1000 and {} pairs in {fills:?} fills: one submission and one wait each",
        many.len()
    );
    assert!(fills[2] > 1, "{fills:?}: the large call fits one fill");
}
