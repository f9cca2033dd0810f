//! The depth-map cover field (Morgan, IV.E): the GPU depth views against exact ray casting on
//! the built-in scenes and outside a ray-cast edge band for threats from 1 m to 100 km, the
//! choice of view per observer, exact classes behind a rock, a half-height wall and a foliage
//! wall, cover versus concealment, bad input, and the pass encoded into a caller's encoder.

#[path = "common/gpu.rs"]
mod gpu;

use glam::{Vec2, Vec3};
use sightline::cover::field::{
    cover_field, cover_field_ray_cast, field_ground, CellCover, CoverField, CoverFieldParams,
    CoverFieldPass, DepthView, FieldBounds,
};
use sightline::cover::{template_points, Agent, Posture};
use sightline::scene::procedural;
use sightline::{Engine, Error, Mask, Material, MaterialFlags, Mesh, Scene, Segment};

const EYE: f32 = 1.7;

fn params() -> CoverFieldParams {
    CoverFieldParams {
        face_resolution: 1024,
        ..CoverFieldParams::default()
    }
}

fn soldier() -> Agent {
    Agent::soldier(Vec3::ZERO)
}

/// An eye `EYE` metres above the ground at (x, z).
fn eye(scene: &Scene, x: f32, z: f32) -> Vec3 {
    let g = sightline::ground::ground_grid(
        &Engine::cpu(),
        scene,
        Vec2::new(x, z) - 0.005,
        0.01,
        1,
        1,
        std::f32::consts::FRAC_PI_2,
    )
    .unwrap()[0];
    assert!(!g.is_nan(), "no ground under the observer at ({x}, {z})");
    Vec3::new(x, g + EYE, z)
}

/// (agreeing, compared): cells whose 8 neighbours all have the reference's class (farther than
/// one cell from a shadow edge), and how many of those `field` classifies the same.
fn agreement(field: &CoverField, reference: &CoverField) -> (usize, usize) {
    assert_eq!(
        (field.width, field.height),
        (reference.width, reference.height)
    );
    let w = reference.width;
    let (mut agree, mut compared) = (0, 0);
    for r in 1..reference.height - 1 {
        for c in 1..w - 1 {
            let i = r * w + c;
            let class = reference.cells[i];
            let interior = (-1..=1).all(|dr: isize| {
                (-1..=1).all(|dc: isize| {
                    reference.cells[(r as isize + dr) as usize * w + (c as isize + dc) as usize]
                        == class
                })
            });
            if interior {
                compared += 1;
                agree += usize::from(field.cells[i] == class);
            }
        }
    }
    (agree, compared)
}

fn histogram(f: &CoverField) -> String {
    let mut classes = vec![CellCover::NotGround, CellCover::Exposed];
    classes.extend(Posture::ALL.map(CellCover::Hidden));
    classes
        .iter()
        .map(|&c| format!("{c:?}={}", f.count(c)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The GPU field agrees with ray casting on >= 99% of cells away from shadow edges.
fn check_gpu_against_ray_cast(name: &str, scene: &Scene, center: Vec3, observers: &[Vec3]) {
    let Some(engine) = gpu::gpu_engine() else {
        return;
    };
    let p = params();
    let reference = cover_field_ray_cast(
        &Engine::cpu(),
        scene,
        center,
        &soldier(),
        observers,
        Mask::SIGHT,
        &p,
    )
    .unwrap();
    let field = cover_field(
        &engine,
        scene,
        center,
        &soldier(),
        observers,
        Mask::SIGHT,
        &p,
    )
    .unwrap();
    let (agree, compared) = agreement(&field, &reference);
    let share = agree as f64 / compared.max(1) as f64;
    let everywhere = (field.cells.iter())
        .zip(&reference.cells)
        .filter(|(a, b)| a == b)
        .count();
    println!(
        "{name}: {} observers, GPU agrees with ray casting on {agree}/{compared} cells away from \
         shadow edges ({:.3}%), {everywhere}/{} of all cells; GPU {:.0} ms ({:.0} cells/s), CPU ray cast {:.0} ms ({:.0} cells/s)\n  \
         ray cast: {}\n  GPU:      {}",
        observers.len(),
        100.0 * share,
        field.cells.len(),
        field.elapsed.as_secs_f64() * 1e3,
        field.cells_per_second(),
        reference.elapsed.as_secs_f64() * 1e3,
        reference.cells_per_second(),
        histogram(&reference),
        histogram(&field),
    );
    assert!(
        compared > field.cells.len() / 2,
        "{name}: too few cells compared"
    );
    let hidden = reference.cells.len()
        - reference.count(CellCover::NotGround)
        - reference.count(CellCover::Exposed);
    assert!(
        hidden >= 100,
        "{name}: only {hidden} hidden cells, a weak comparison"
    );
    assert!(share >= 0.99, "{name}: only {:.3}% agree", 100.0 * share);
    // The ground search is the same kernel on the same cells: NotGround agrees exactly.
    let not_ground = |f: &CoverField| {
        f.cells
            .iter()
            .map(|&c| c == CellCover::NotGround)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        not_ground(&field),
        not_ground(&reference),
        "{name}: ground differs"
    );
}

#[test]
fn gpu_agrees_with_ray_casting_in_the_village() {
    let scene = procedural::village(1, 1);
    let near_building = Vec3::new(-15.0, 0.0, 16.0);
    check_gpu_against_ray_cast(
        "village, building, 1 observer",
        &scene,
        near_building,
        &[eye(&scene, -8.0, 32.0)],
    );
    let boxes_and_cliff = Vec3::new(8.0, 0.0, -22.0);
    check_gpu_against_ray_cast(
        "village, boxes and cliff, 3 observers",
        &scene,
        boxes_and_cliff,
        &[
            eye(&scene, 22.0, -5.0),
            eye(&scene, -6.0, -12.0),
            eye(&scene, 40.0, -40.0), // on the plateau
        ],
    );
}

#[test]
fn gpu_agrees_with_ray_casting_around_the_rock() {
    let scene = procedural::rock(1, 1);
    check_gpu_against_ray_cast(
        "rock, 2 observers",
        &scene,
        Vec3::new(8.0, 0.0, 0.0),
        &[Vec3::new(-8.0, EYE, 1.0), Vec3::new(-6.0, EYE, -5.0)],
    );
}

#[test]
fn observers_beyond_one_texture_array_are_processed_in_groups() {
    // At 1024 texels a side, a 256 MiB budget holds 10 observers' cubes: 12 take two groups,
    // whose bits are AND-ed on the GPU.
    let scene = procedural::rock(1, 1);
    let observers: Vec<Vec3> = (0..12)
        .map(|i| {
            Vec3::new(
                -9.0 - (i % 3) as f32,
                EYE + 0.2 * (i / 3) as f32,
                -3.0 + 0.5 * i as f32,
            )
        })
        .collect();
    check_gpu_against_ray_cast(
        "rock, 12 observers",
        &scene,
        Vec3::new(8.0, 0.0, 0.0),
        &observers,
    );
}

/// How far the edge band reaches, in texel footprints at each template point's distance.
const BAND_FOOTPRINTS: f32 = 2.0;

/// The edge band of a ray-cast field for one observer: the ground cells whose ray-cast posture
/// bits change when every template point of the cell is displaced together by up to
/// `BAND_FOOTPRINTS` texel footprints (`footprint_per_metre` times the point's distance) across
/// its ray, in any of 8 directions, or by up to `bias` plus that much along it, towards or away
/// from the eye (sampled every half footprint across, every quarter of the reach along). The
/// depth map can only err where such a move matters: a silhouette or a grazing surface within
/// the 2x2 texels around the point's projection, or a surface within the slack of the point;
/// outside the band the GPU must agree with ray casting. `reference` must be the ray-cast field
/// of `observer` alone; the bits of the undisplaced points are checked against it.
fn edge_band(
    scene: &Scene,
    reference: &CoverField,
    observer: Vec3,
    footprint_per_metre: f32,
    bias: f32,
    mask: Mask,
) -> Vec<bool> {
    const STEPS: usize = 4; // magnitudes per direction
    const DISPLACEMENTS: usize = 1 + 8 * STEPS + 2 * STEPS;
    let agent = soldier();
    let ground: Vec<usize> = (0..reference.cells.len())
        .filter(|&i| reference.cells[i] != CellCover::NotGround)
        .collect();
    // Displacement j of a template point: none, then 8 directions across the ray, then towards
    // and away from the eye, each at STEPS growing magnitudes.
    let displace = |t: Vec3, j: usize| -> Vec3 {
        let to = t - observer;
        let (r, dist) = (to.normalize(), to.length());
        let u = (r.cross(Vec3::Y).try_normalize()).unwrap_or_else(|| r.cross(Vec3::X).normalize());
        let v = u.cross(r);
        let across = BAND_FOOTPRINTS * footprint_per_metre * dist;
        if j == 0 {
            return t;
        }
        let (direction, step) = ((j - 1) / STEPS, ((j - 1) % STEPS + 1) as f32 / STEPS as f32);
        match direction {
            0..8 => {
                let a = direction as f32 * std::f32::consts::FRAC_PI_4;
                t + (u * a.cos() + v * a.sin()) * across * step
            }
            8 => t - r * (bias + across) * step,
            _ => t + r * (bias + across) * step,
        }
    };
    let mut segments = Vec::with_capacity(ground.len() * DISPLACEMENTS * 9);
    for &i in &ground {
        let g = reference.cell_center(i);
        for j in 0..DISPLACEMENTS {
            for p in Posture::ALL {
                for t in template_points(&agent, g, p, observer) {
                    segments.push(Segment::new(observer, displace(t, j)));
                }
            }
        }
    }
    let blocked = Engine::cpu().occluded(scene, &segments, mask).unwrap();
    let mut band = vec![false; reference.cells.len()];
    for (k, &i) in ground.iter().enumerate() {
        let bits = |j: usize| -> u32 {
            (0..3)
                .filter(|&p| (0..3).all(|q| blocked.get(((k * DISPLACEMENTS + j) * 3 + p) * 3 + q)))
                .map(|p| 1 << p)
                .sum()
        };
        let centre = bits(0);
        assert_eq!(
            CellCover::from_bits(centre),
            reference.cells[i],
            "the band's ray casting differs from cover_field_ray_cast at cell {i}"
        );
        band[i] = (1..DISPLACEMENTS).any(|j| bits(j) != centre);
    }
    band
}

/// Counts of one threat's comparison, for the report and the sweep's totals.
#[derive(Default)]
struct BandCounts {
    ground: usize,
    band: usize,
    hidden_outside: usize,
    exposed_outside: usize,
}

/// GPU against ray casting for one observer: equal on every ground cell outside the edge band,
/// and the band under 10% of the ground.
fn check_outside_the_band(
    engine: &Engine,
    name: &str,
    scene: &Scene,
    center: Vec3,
    observer: Vec3,
    p: &CoverFieldParams,
) -> BandCounts {
    let agent = soldier();
    let observers = [observer];
    let reference = cover_field_ray_cast(
        &Engine::cpu(),
        scene,
        center,
        &agent,
        &observers,
        Mask::SIGHT,
        p,
    )
    .unwrap();
    let field = cover_field(engine, scene, center, &agent, &observers, Mask::SIGHT, p).unwrap();
    let view = reference
        .bounds(&agent)
        .expect("ground in the field")
        .depth_view(observer, p.face_resolution);
    let footprint = view.footprint_per_metre(p.face_resolution);
    let band = edge_band(scene, &reference, observer, footprint, p.bias, Mask::SIGHT);
    let mut c = BandCounts::default();
    let (mut differ, mut differ_outside) = (0, 0);
    let mut first_outside = None;
    for (i, ((&want, &got), &in_band)) in (reference.cells.iter().zip(&field.cells))
        .zip(&band)
        .enumerate()
    {
        assert_eq!(
            got == CellCover::NotGround,
            want == CellCover::NotGround,
            "{name}: ground differs at cell {i}"
        );
        if want == CellCover::NotGround {
            continue;
        }
        c.ground += 1;
        differ += usize::from(got != want);
        if in_band {
            c.band += 1;
            continue;
        }
        if want == CellCover::Exposed {
            c.exposed_outside += 1;
        } else {
            c.hidden_outside += 1;
        }
        if got != want {
            differ_outside += 1;
            first_outside.get_or_insert((reference.cell_center(i), want, got));
        }
    }
    let share = |n: usize| 100.0 * n as f64 / c.ground.max(1) as f64;
    let at_centre = footprint * (center - observer).length();
    println!(
        "{name}: {} view, footprint {:.1} cm at the centre; {} ground cells, band {} ({:.2}%), \
         GPU differs on {differ} ({:.2}%), {differ_outside} outside the band; outside: {} \
         hidden, {} exposed; GPU {:.0} ms",
        match view {
            DepthView::Cube => "cube".to_string(),
            DepthView::Frustum { tan_half, .. } => format!("single (tan_half {tan_half:.2e})"),
        },
        100.0 * at_centre,
        c.ground,
        c.band,
        share(c.band),
        share(differ),
        c.hidden_outside,
        c.exposed_outside,
        field.elapsed.as_secs_f64() * 1e3,
    );
    assert!(
        differ_outside == 0,
        "{name}: GPU differs from ray casting on {differ_outside} cells outside the edge band, \
         first at {:?} (ray cast {:?}, GPU {:?})",
        first_outside.unwrap().0,
        first_outside.unwrap().1,
        first_outside.unwrap().2,
    );
    assert!(
        share(c.band) < 10.0,
        "{name}: the edge band is {:.2}% of the ground",
        share(c.band)
    );
    c
}

/// Horizontal threat distances of the sweep (metres).
const DISTANCES: [f32; 7] = [1.0, 10.0, 100.0, 1e3, 3e3, 1e4, 1e5];
/// Eye heights of the sweep above the field centre's ground: standing, and a tower.
const HEIGHTS: [f32; 2] = [2.0, 30.0];

/// The sweep on one scene: a 20 m field around `center` (ground at y = 0) and one threat at a
/// time along `bearing` (x, z) at every distance and height.
fn sweep(scene_name: &str, scene: &Scene, center: Vec3, bearing: Vec2) {
    let engine = gpu::gpu_engine().expect("the sweep needs a GPU adapter");
    let p = CoverFieldParams {
        size: 20.0,
        ..params()
    };
    let bearing = bearing.normalize();
    let mut total = BandCounts::default();
    for d in DISTANCES {
        for h in HEIGHTS {
            let observer = center + Vec3::new(bearing.x * d, h, bearing.y * d);
            let c = check_outside_the_band(
                &engine,
                &format!("{scene_name}, threat {d} m out, {h} m up"),
                scene,
                center,
                observer,
                &p,
            );
            total.ground += c.ground;
            total.band += c.band;
            total.hidden_outside += c.hidden_outside;
            total.exposed_outside += c.exposed_outside;
        }
    }
    println!(
        "{scene_name}: band {:.2}% of {} ground cells over the sweep; outside it {} hidden and \
         {} exposed cells compared",
        100.0 * total.band as f64 / total.ground as f64,
        total.ground,
        total.hidden_outside,
        total.exposed_outside
    );
    assert!(
        total.hidden_outside >= 1000 && total.exposed_outside >= 1000,
        "{scene_name}: a weak comparison"
    );
}

#[test]
fn gpu_agrees_with_ray_casting_outside_the_edge_band_at_any_distance_in_the_sniper_level() {
    // Around the bridge: the creek, its banks and the parapets, threats from the south-east.
    sweep(
        "sniper",
        &procedural::sniper(1, 1),
        Vec3::ZERO,
        Vec2::new(1.0, 0.4),
    );
}

#[test]
fn gpu_agrees_with_ray_casting_outside_the_edge_band_at_any_distance_in_the_village() {
    // Around the building (rooms, doors, windows, roof), threats from the south.
    sweep(
        "village",
        &procedural::village(1, 1),
        Vec3::new(-15.0, 0.0, 10.0),
        Vec2::new(-0.3, 1.0),
    );
}

#[test]
fn distant_observers_get_one_view_and_near_ones_the_cube() {
    let agent = soldier();
    let res = 1024;
    // A 20 m square of ground points at y = 0 with one at -3.
    let mut ground: Vec<Vec3> = (0..=20)
        .flat_map(|i| (0..=20).map(move |j| Vec3::new(i as f32 - 10.0, 0.0, j as f32 - 10.0)))
        .collect();
    ground.push(Vec3::new(0.0, -3.0, 0.0));
    let bounds = FieldBounds::around(&ground, &agent).unwrap();
    assert_eq!(bounds.min, Vec3::new(-10.3, -3.0, -10.3));
    assert_eq!(bounds.max, Vec3::new(10.3, 1.75, 10.3));
    let corners: Vec<Vec3> = (0..8)
        .map(|k| {
            Vec3::select(
                glam::BVec3::new(k & 1 == 1, k & 2 == 2, k & 4 == 4),
                bounds.max,
                bounds.min,
            )
        })
        .collect();
    // Inside the bounds, just above them, and beside them: the cube.
    for eye in [
        Vec3::new(0.0, 1.0, 0.0),
        Vec3::new(1.0, 2.0, 0.0),
        Vec3::new(11.0, 1.0, 0.0),
    ] {
        let view = bounds.depth_view(eye, res);
        assert_eq!(view, DepthView::Cube, "eye at {eye}");
        assert!(view.faces(eye).iter().all(|f| f.eye[3] == 0.0));
        assert_eq!(view.footprint_per_metre(res), 2.0 / 1024.0);
    }
    // Far out, and high above: one view covering every corner, tight (the widest corner within
    // a few texels of the edge), whose footprint at the field does not grow with distance.
    for eye in [
        Vec3::new(100.0, 2.0, 40.0),
        Vec3::new(3e3, 2.0, 5.0),
        Vec3::new(1e5, 2.0, 0.0),
        Vec3::new(-7e4, 30.0, 7e4),
        Vec3::new(0.0, 60.0, 0.0),
    ] {
        let view = bounds.depth_view(eye, res);
        let DepthView::Frustum { tan_half, .. } = view else {
            panic!("eye at {eye}: {view:?}, want a single view");
        };
        let faces = view.faces(eye);
        assert_eq!(faces[0].eye[3], tan_half);
        let m = glam::Mat4::from_cols_array_2d(&faces[0].view_proj);
        let widest = corners
            .iter()
            .map(|&c| {
                let clip = m * c.extend(1.0);
                assert!(clip.w > 0.0, "eye at {eye}: corner {c} behind the view");
                (clip.truncate().truncate() / clip.w).abs().max_element()
            })
            .fold(0.0f32, f32::max);
        assert!(
            (0.99..1.0).contains(&widest),
            "eye at {eye}: widest corner at {widest} of the half-face"
        );
        let at_field =
            view.footprint_per_metre(res) * (eye - bounds.min.midpoint(bounds.max)).length();
        assert!(
            at_field < 0.05,
            "eye at {eye}: a texel spans {at_field} m at the field"
        );
    }
}

/// Both paths: the CPU twin, and when there is a GPU the depth views and ray casting through
/// the GPU tracer.
fn both(
    scene: &Scene,
    center: Vec3,
    observers: &[Vec3],
    mask: Mask,
) -> Vec<(&'static str, CoverField)> {
    let p = params();
    let mut out = vec![(
        "ray cast",
        cover_field_ray_cast(
            &Engine::cpu(),
            scene,
            center,
            &soldier(),
            observers,
            mask,
            &p,
        )
        .unwrap(),
    )];
    if let Some(engine) = gpu::gpu_engine() {
        out.push((
            "GPU",
            cover_field(&engine, scene, center, &soldier(), observers, mask, &p).unwrap(),
        ));
        out.push((
            "ray cast on the GPU tracer",
            cover_field_ray_cast(&engine, scene, center, &soldier(), observers, mask, &p).unwrap(),
        ));
    }
    out
}

/// Every ground cell whose centre lies in the box x0..x1, z0..z1 has class `want`; returns how
/// many there were.
fn assert_region(
    f: &CoverField,
    path: &str,
    (x0, x1): (f32, f32),
    (z0, z1): (f32, f32),
    want: CellCover,
) -> usize {
    let mut n = 0;
    for i in 0..f.cells.len() {
        let c = f.cell_center(i);
        if c.x < x0 || c.x > x1 || c.z < z0 || c.z > z1 || f.cells[i] == CellCover::NotGround {
            continue;
        }
        assert_eq!(f.cells[i], want, "{path}: cell at ({}, {})", c.x, c.z);
        n += 1;
    }
    assert!(n > 0, "{path}: no ground cells in the region");
    n
}

#[test]
fn behind_the_rock_is_hidden_standing_and_the_near_side_exposed() {
    let scene = procedural::rock(1, 1);
    // The rock is at least 3.5 m wide and 4.4 m tall around the origin; the eye 20 m west.
    let observer = Vec3::new(-20.0, EYE, 0.0);
    for (path, f) in both(&scene, Vec3::ZERO, &[observer], Mask::SIGHT) {
        let hidden = assert_region(
            &f,
            path,
            (3.0, 6.0),
            (-0.5, 0.5),
            CellCover::Hidden(Posture::Standing),
        );
        let exposed = assert_region(&f, path, (-15.0, -4.0), (-15.0, 15.0), CellCover::Exposed);
        println!(
            "{path}: {hidden} cells behind the rock hidden standing, {exposed} in front exposed"
        );
    }
}

fn ground_and_wall(wall_height: f32, wall: MaterialFlags) -> Scene {
    let materials = vec![
        Material::new(
            "ground",
            MaterialFlags::SOLID | MaterialFlags::WALKABLE,
            0.3,
        ),
        Material::new("wall", wall, 0.5),
    ];
    let mut mesh = Mesh::default();
    let q = |x: f32, y: f32, z: f32| Vec3::new(x, y, z);
    mesh.push_quad(
        q(-30.0, 0.0, -30.0),
        q(-30.0, 0.0, 30.0),
        q(30.0, 0.0, 30.0),
        q(30.0, 0.0, -30.0),
        0,
    );
    // A box x -0.15..0.15, z -5..5, y 0..wall_height.
    let (x0, x1, z0, z1, h) = (-0.15, 0.15, -5.0, 5.0, wall_height);
    mesh.push_quad(
        q(x0, 0.0, z0),
        q(x0, h, z0),
        q(x0, h, z1),
        q(x0, 0.0, z1),
        1,
    );
    mesh.push_quad(
        q(x1, 0.0, z0),
        q(x1, 0.0, z1),
        q(x1, h, z1),
        q(x1, h, z0),
        1,
    );
    mesh.push_quad(
        q(x0, 0.0, z0),
        q(x1, 0.0, z0),
        q(x1, h, z0),
        q(x0, h, z0),
        1,
    );
    mesh.push_quad(
        q(x0, 0.0, z1),
        q(x0, h, z1),
        q(x1, h, z1),
        q(x1, 0.0, z1),
        1,
    );
    mesh.push_quad(q(x0, h, z0), q(x1, h, z0), q(x1, h, z1), q(x0, h, z1), 1);
    Scene::from_mesh(mesh, materials).unwrap()
}

#[test]
fn behind_a_half_height_wall_only_prone_hides() {
    // Eye 1.7 m up, 10 m from a 1 m wall. Just behind it, the sight line to a prone head
    // (0.35 m) passes the wall below 0.55 m; to a crouching head (1.1 m) above 1.1 m.
    let scene = ground_and_wall(1.0, MaterialFlags::SOLID);
    let observer = Vec3::new(-10.0, EYE, 0.0);
    for (path, f) in both(&scene, Vec3::ZERO, &[observer], Mask::FIRE) {
        assert_region(
            &f,
            path,
            (0.4, 1.6),
            (-2.0, 2.0),
            CellCover::Hidden(Posture::Prone),
        );
        assert_region(&f, path, (-8.0, -1.0), (-10.0, 10.0), CellCover::Exposed);
        // The wall's shadow widens to 7.5 m off the axis at x = 5 and 9 m at x = 8.
        assert_region(&f, path, (1.0, 8.0), (11.0, 15.0), CellCover::Exposed);
        assert_eq!(
            f.at(Vec3::new(0.0, 0.0, 0.0)),
            Some(CellCover::NotGround),
            "{path}: wall top"
        );
    }
}

#[test]
fn foliage_conceals_but_gives_no_cover() {
    let scene = ground_and_wall(3.0, MaterialFlags::BLOCKS_SIGHT);
    let observer = Vec3::new(-10.0, EYE, 0.0);
    for (path, f) in both(&scene, Vec3::ZERO, &[observer], Mask::SIGHT) {
        assert_region(
            &f,
            path,
            (0.4, 3.0),
            (-2.0, 2.0),
            CellCover::Hidden(Posture::Standing),
        );
    }
    for (path, f) in both(&scene, Vec3::ZERO, &[observer], Mask::FIRE) {
        assert_region(&f, path, (0.4, 3.0), (-2.0, 2.0), CellCover::Exposed);
    }
}

#[test]
fn with_no_observers_every_ground_cell_hides_standing() {
    let scene = ground_and_wall(1.0, MaterialFlags::SOLID);
    for (path, f) in both(&scene, Vec3::ZERO, &[], Mask::SIGHT) {
        let ground = f.cells.len() - f.count(CellCover::NotGround);
        assert_eq!(
            f.count(CellCover::Hidden(Posture::Standing)),
            ground,
            "{path}"
        );
        assert_eq!(
            f.cells.len(),
            160 * 160,
            "{path}: the default 40 m grid of 0.25 m cells"
        );
    }
}

#[test]
fn bad_input_is_an_error() {
    let scene = ground_and_wall(1.0, MaterialFlags::SOLID);
    let obs = [Vec3::new(-10.0, EYE, 0.0)];
    let p = params();
    let mut engines = vec![Engine::cpu()];
    engines.extend(gpu::gpu_engine());
    for engine in &engines {
        let run = |center: Vec3, observers: &[Vec3], p: CoverFieldParams| {
            cover_field(
                engine,
                &scene,
                center,
                &soldier(),
                observers,
                Mask::SIGHT,
                &p,
            )
        };
        let invalid = |r: sightline::Result<CoverField>, what: &str| match r {
            Err(Error::InvalidInput(m)) => println!("{what}: {m}"),
            other => panic!(
                "{what}: expected InvalidInput, got {:?}",
                other.map(|f| f.cells.len())
            ),
        };
        invalid(run(Vec3::new(f32::NAN, 0.0, 0.0), &obs, p), "NaN centre");
        invalid(
            run(Vec3::ZERO, &[Vec3::new(0.0, f32::INFINITY, 0.0)], p),
            "infinite observer",
        );
        invalid(
            run(Vec3::ZERO, &obs, CoverFieldParams { cell: 0.0, ..p }),
            "zero cell",
        );
        invalid(
            run(
                Vec3::ZERO,
                &obs,
                CoverFieldParams {
                    cell: f32::NAN,
                    ..p
                },
            ),
            "NaN cell",
        );
        invalid(
            run(Vec3::ZERO, &obs, CoverFieldParams { size: -1.0, ..p }),
            "negative size",
        );
        invalid(
            run(
                Vec3::ZERO,
                &obs,
                CoverFieldParams {
                    size: 5000.0,
                    cell: 0.1,
                    ..p
                },
            ),
            "huge grid",
        );
        invalid(
            run(
                Vec3::ZERO,
                &obs,
                CoverFieldParams {
                    face_resolution: 0,
                    ..p
                },
            ),
            "no texels",
        );
        invalid(
            run(
                Vec3::ZERO,
                &obs,
                CoverFieldParams {
                    bias: f32::NAN,
                    ..p
                },
            ),
            "NaN bias",
        );
        let mut agent = soldier();
        agent.radius = f32::NAN;
        invalid(
            cover_field(engine, &scene, Vec3::ZERO, &agent, &obs, Mask::SIGHT, &p),
            "NaN radius",
        );
    }
}

/// Bitwise equality of two fields' grids, ground heights (NaN included) and classes.
fn assert_same_field(got: &CoverField, want: &CoverField, what: &str) {
    assert_eq!(
        (got.center, got.origin, got.cell, got.width, got.height),
        (want.center, want.origin, want.cell, want.width, want.height),
        "{what}: grid"
    );
    let bits = |f: &CoverField| f.ground.iter().map(|g| g.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(got), bits(want), "{what}: ground heights");
    assert_eq!(got.cells, want.cells, "{what}: classes");
}

fn not_run(r: sightline::Result<CoverField>, what: &str) {
    match r {
        Err(Error::InvalidInput(m)) => println!("{what}: {m}"),
        other => panic!(
            "{what}: expected InvalidInput, got {:?}",
            other.map(|f| f.cells.len())
        ),
    }
}

#[test]
fn pass_encoded_into_a_callers_encoder_matches_the_convenience_call() {
    let Some(engine) = gpu::gpu_engine() else {
        return;
    };
    let tracer = engine.gpu().unwrap();
    let scene = procedural::village(1, 1);
    let center = Vec3::new(8.0, 0.0, -22.0);
    let p = params();
    // One ground, two sets of observers: near ones (cubes) and a distant one (a single view).
    let ground = field_ground(&engine, &scene, center, &p).unwrap();
    let sets = [
        vec![
            eye(&scene, 22.0, -5.0),
            eye(&scene, -6.0, -12.0),
            eye(&scene, 40.0, -40.0),
        ],
        vec![eye(&scene, -8.0, 32.0), Vec3::new(300.0, 60.0, -300.0)],
    ];
    // The caller's own work in the same command buffer: a trace pass.
    let mut rng = sightline::trace::SplitMix64(7);
    let (lo, hi) = scene.bounds().unwrap();
    let segments: Vec<Segment> = (0..20_000)
        .map(|_| Segment::new(rng.in_box(lo, hi), rng.in_box(lo, hi)))
        .collect();
    let trace = tracer
        .prepare_occluded(&scene, &segments, Mask::SIGHT)
        .unwrap();
    let passes: Vec<CoverFieldPass> = sets
        .iter()
        .map(|o| {
            CoverFieldPass::prepare(tracer, &scene, &ground, &soldier(), o, Mask::SIGHT, &p)
                .unwrap()
        })
        .collect();
    not_run(passes[0].read(tracer), "read before encode");
    let mut encoder = tracer.device().create_command_encoder(&Default::default());
    passes[0].encode(tracer, &mut encoder);
    trace.encode(tracer, &mut encoder);
    passes[1].encode(tracer, &mut encoder);
    not_run(passes[1].read(tracer), "read before submit");
    tracer.queue().submit([encoder.finish()]);
    for (pass, observers) in passes.iter().zip(&sets) {
        let want = cover_field(
            &engine,
            &scene,
            center,
            &soldier(),
            observers,
            Mask::SIGHT,
            &p,
        )
        .unwrap();
        let got = pass.read(tracer).unwrap();
        assert_same_field(&got, &want, &format!("{} observers", observers.len()));
        let hidden =
            got.cells.len() - got.count(CellCover::NotGround) - got.count(CellCover::Exposed);
        println!(
            "{} observers: {hidden} hidden and {} exposed cells, the same bits as cover_field",
            observers.len(),
            got.count(CellCover::Exposed)
        );
        assert!(got.count(CellCover::Exposed) > 100, "too few exposed cells");
        if observers.len() == 3 {
            assert!(
                hidden >= 100,
                "too few hidden cells for a strong comparison"
            );
        }
        // Reading again gives the same field.
        assert_same_field(&pass.read(tracer).unwrap(), &want, "second read");
    }
    assert_eq!(
        trace.read_occlusion(tracer).unwrap(),
        engine.occluded(&scene, &segments, Mask::SIGHT).unwrap(),
        "the caller's trace pass in the same command buffer"
    );
}

#[test]
fn pass_without_gpu_work_still_answers_and_checks_its_order() {
    let Some(engine) = gpu::gpu_engine() else {
        return;
    };
    let tracer = engine.gpu().unwrap();
    let scene = ground_and_wall(1.0, MaterialFlags::SOLID);
    let p = params();
    let ground = field_ground(&engine, &scene, Vec3::ZERO, &p).unwrap();
    let observer = [Vec3::new(-10.0, EYE, 0.0)];
    let nothing_blocks = Mask(MaterialFlags::NONE);
    let cases: [(&[Vec3], Mask, &str); 2] = [
        (&[], Mask::SIGHT, "no observers"),
        (&observer, nothing_blocks, "no triangle in the mask"),
    ];
    for (observers, mask, what) in cases {
        let pass =
            CoverFieldPass::prepare(tracer, &scene, &ground, &soldier(), observers, mask, &p)
                .unwrap();
        not_run(pass.read(tracer), what);
        let mut encoder = tracer.device().create_command_encoder(&Default::default());
        pass.encode(tracer, &mut encoder);
        tracer.queue().submit([encoder.finish()]);
        let got = pass.read(tracer).unwrap();
        let want =
            cover_field(&engine, &scene, Vec3::ZERO, &soldier(), observers, mask, &p).unwrap();
        assert_same_field(&got, &want, what);
        let class = if observers.is_empty() {
            CellCover::Hidden(Posture::Standing)
        } else {
            CellCover::Exposed
        };
        assert_eq!(
            got.count(class),
            got.cells.len() - got.count(CellCover::NotGround),
            "{what}"
        );
    }
    // A ground with no cells on the ground (a grid far off the scene).
    let off = field_ground(&engine, &scene, Vec3::new(500.0, 0.0, 500.0), &p).unwrap();
    assert!(off.points().is_empty());
    let pass =
        CoverFieldPass::prepare(tracer, &scene, &off, &soldier(), &observer, Mask::SIGHT, &p)
            .unwrap();
    let mut encoder = tracer.device().create_command_encoder(&Default::default());
    pass.encode(tracer, &mut encoder);
    tracer.queue().submit([encoder.finish()]);
    let f = pass.read(tracer).unwrap();
    assert_eq!(f.count(CellCover::NotGround), f.cells.len());
    // Params whose grid differs from the ground's are an error, as is bad input.
    let other = CoverFieldParams { cell: 0.5, ..p };
    let prepare = |observers: &[Vec3], p: &CoverFieldParams| {
        CoverFieldPass::prepare(
            tracer,
            &scene,
            &ground,
            &soldier(),
            observers,
            Mask::SIGHT,
            p,
        )
        .map(|_| ())
    };
    assert!(matches!(
        prepare(&observer, &other),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(
        prepare(&[Vec3::new(f32::NAN, 0.0, 0.0)], &p),
        Err(Error::InvalidInput(_))
    ));
}

/// `scene` with a movable wall (a 6 m wide, 3 m tall double-sided quad facing x, in a
/// `SOLID` material of its own) at `at`.
fn with_movable_wall(mut scene: Scene, at: Vec3) -> (Scene, sightline::ObjectId) {
    let m = scene.add_material(Material::new("movable wall", MaterialFlags::SOLID, 0.5));
    let mut mesh = Mesh::default();
    let q = |y: f32, z: f32| Vec3::new(0.0, y, z);
    mesh.push_quad(q(0.0, -3.0), q(3.0, -3.0), q(3.0, 3.0), q(0.0, 3.0), m);
    mesh.push_quad(q(0.0, -3.0), q(0.0, 3.0), q(3.0, 3.0), q(3.0, -3.0), m);
    let place = glam::Affine3A::from_translation(at);
    let id = scene
        .add_object(mesh, place, sightline::Mobility::Movable)
        .unwrap();
    (scene, id)
}

/// Counters of the cover field's GPU work during `f`.
fn counted<T>(engine: &Engine, f: impl FnOnce() -> T) -> (T, sightline::Counters) {
    let before = engine.counters().operation("cover_field");
    let out = f();
    (
        out,
        engine.counters().operation("cover_field").since(&before),
    )
}

/// Centre of the fields of the counter tests, in `village`.
const WALLED: Vec3 = Vec3::new(8.0, 0.0, -22.0);

/// `village` with a movable wall at [`WALLED`], and three observers around it.
fn walled_village() -> (Scene, sightline::ObjectId, [Vec3; 3]) {
    let (scene, wall) = with_movable_wall(procedural::village(1, 1), WALLED);
    let observers = [
        eye(&scene, 22.0, -5.0),
        eye(&scene, -6.0, -12.0),
        eye(&scene, 40.0, -40.0),
    ];
    (scene, wall, observers)
}

/// The field around [`WALLED`], hiding from `observers` by sight.
fn walled_field(engine: &Engine, scene: &Scene, observers: &[Vec3]) -> CoverField {
    cover_field(
        engine,
        scene,
        WALLED,
        &soldier(),
        observers,
        Mask::SIGHT,
        &params(),
    )
    .unwrap()
}

#[test]
fn a_repeated_call_uploads_only_its_queries_and_creates_nothing() {
    let Some(engine) = gpu::gpu_engine() else {
        return;
    };
    let (scene, _, observers) = walled_village();
    let (first, once) = counted(&engine, || walled_field(&engine, &scene, &observers));
    let (second, again) = counted(&engine, || walled_field(&engine, &scene, &observers));
    assert_same_field(&second, &first, "the same call twice");
    // The call's own data: a vec4 per ground point, and per observer six faces (80 bytes),
    // once packed and once at the uniform offset alignment.
    let ground = field_ground(&engine, &scene, WALLED, &params()).unwrap();
    let points = ground.points().len() as u64;
    let limits = engine.gpu().unwrap().device().limits();
    let align = u64::from(limits.min_uniform_buffer_offset_alignment);
    let faces = observers.len() as u64 * 6;
    let queries = points * 16 + faces * (80 + 80u64.next_multiple_of(align));
    println!(
        "first call: {once}; repeated call: {again}, staging writes {}; {points} ground \
         points and {faces} faces make {queries} bytes of queries",
        again.staging_writes
    );
    let triangles: u64 = scene.tiers().iter().map(|t| t.triangles.len() as u64).sum();
    assert!(
        once.bytes_uploaded >= triangles * 36,
        "the first call uploads the scene"
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
    // Trimming frees the idle textures and buffers, not the scene's vertices.
    engine.gpu().unwrap().trim_workspace();
    let (third, trimmed) = counted(&engine, || walled_field(&engine, &scene, &observers));
    assert_same_field(&third, &first, "after trim_workspace");
    assert!(
        trimmed.created() > 0,
        "{trimmed}: trim_workspace kept the textures"
    );
    assert_eq!(trimmed.bytes_uploaded, again.bytes_uploaded, "{trimmed}");
}

#[test]
fn moving_an_object_uploads_its_tier_again_and_the_field_follows() {
    let Some(engine) = gpu::gpu_engine() else {
        return;
    };
    let (mut scene, wall, observers) = walled_village();
    let (first, _) = counted(&engine, || walled_field(&engine, &scene, &observers));
    let (_, again) = counted(&engine, || walled_field(&engine, &scene, &observers));
    // Moving the wall uploads the movable tier again (36 bytes a triangle), not the static.
    let moved = glam::Affine3A::from_translation(WALLED + Vec3::new(6.0, 0.0, 4.0));
    scene.set_transform(wall, moved).unwrap();
    let movable = scene.tiers()[1]
        .triangles
        .iter()
        .filter(|t| t.flags & Mask::SIGHT.bits() != 0)
        .count() as u64;
    let (after, move_cost) = counted(&engine, || walled_field(&engine, &scene, &observers));
    assert_eq!(
        move_cost.bytes_uploaded,
        again.bytes_uploaded + movable * 36,
        "{move_cost}: the movable tier and the queries"
    );
    assert_eq!(
        move_cost.created(),
        1,
        "{move_cost}: the tier's vertex buffer"
    );
    // The same answer as a scene never seen (a clone is uploaded afresh), and not the old one.
    let fresh = walled_field(&engine, &scene.clone(), &observers);
    assert_same_field(&after, &fresh, "after the move");
    let changed = (after.cells.iter().zip(&first.cells))
        .filter(|(a, b)| a != b)
        .count();
    println!(
        "moving the wall changed {changed} cells; the move's call: {move_cost} ({movable} \
         movable triangles)"
    );
    assert!(changed > 20, "the wall's shadow moved");
}

#[test]
fn a_pass_encoded_but_never_read_keeps_its_workspace_from_later_calls() {
    let Some(engine) = gpu::gpu_engine() else {
        return;
    };
    let tracer = engine.gpu().unwrap();
    let (scene, _, observers) = walled_village();
    let p = params();
    let want = walled_field(&engine, &scene, &observers);
    let ground = field_ground(&engine, &scene, WALLED, &p).unwrap();
    let agent = soldier();
    let prepare = || {
        CoverFieldPass::prepare(tracer, &scene, &ground, &agent, &observers, Mask::SIGHT, &p)
            .unwrap()
    };
    // Prepared and dropped unencoded: its workspace goes back to the pool.
    drop(prepare());
    let (_, reused) = counted(&engine, || walled_field(&engine, &scene, &observers));
    assert_eq!(reused.created(), 0, "{reused}");
    // Encoded and dropped unread: the caller could still submit it, so the next call makes
    // its own workspace, and the late submission changes nothing.
    let pass = prepare();
    let mut encoder = tracer.device().create_command_encoder(&Default::default());
    pass.encode(tracer, &mut encoder);
    drop(pass);
    let (got, fresh) = counted(&engine, || walled_field(&engine, &scene, &observers));
    tracer.queue().submit([encoder.finish()]);
    assert!(
        fresh.created() > 0,
        "{fresh}: reused an unread pass's workspace"
    );
    assert_same_field(&got, &want, "beside an unread pass");
    assert_same_field(
        &walled_field(&engine, &scene, &observers),
        &want,
        "after its late submission",
    );
}
