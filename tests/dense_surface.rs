//! The dense search's kept walk surface: the whole-disc fit, tiles kept between calls and
//! rebuilt only where an object moved, and the GPU's round trips for a batch on cached tiles.

#[path = "common/contract.rs"]
mod contract;
#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/scenes.rs"]
mod scenes;

use glam::{Affine3A, Vec3};
use scenes::{cuboid, ground, materials, SOLID};
use sightline::agent::fitting_postures;
use sightline::cover::dense::{
    find_cover_on, DenseAnswer, DenseParams, DenseQuery, Surface, INTERVIS_AHEAD,
    INTERVIS_AHEAD_AGAIN,
};
use sightline::cover::{Agent, Posture};
use sightline::scene::procedural;
use sightline::trace::{Ray, SplitMix64};
use sightline::{Engine, Mask, MaterialFlags, Mesh, Mobility, Scene};

fn engines() -> Vec<Engine> {
    let mut v = vec![Engine::cpu()];
    v.extend(gpu::gpu_engine());
    v
}

/// `n` agents on floors (front-facing walkable ground) within `span` metres of `centre`, all
/// facing the same four observers 12-25 m away at eye height.
fn batch(engine: &Engine, scene: &Scene, centre: Vec3, n: usize, span: f32) -> Vec<DenseQuery> {
    let mut rng = SplitMix64(7);
    let ground_at = |rng: &mut SplitMix64, r: f32| loop {
        let p = centre + Vec3::new(rng.range(-r, r), 30.0, rng.range(-r, r));
        let hit = engine
            .closest_hit(scene, &[Ray::new(p, Vec3::NEG_Y, 60.0)], Mask::ANY_SOLID)
            .unwrap()[0];
        if let Some(h) = hit.filter(|h| {
            !h.back
                && h.normal.y > 0.8
                && scene.materials()[h.material as usize]
                    .flags
                    .contains(MaterialFlags::WALKABLE)
        }) {
            return p - Vec3::Y * h.t;
        }
    };
    let observers: Vec<Vec3> = (0..4)
        .map(|k| {
            let a = k as f32 * std::f32::consts::FRAC_PI_2 + 0.4;
            let far =
                centre + Vec3::new(a.cos(), 0.0, a.sin()) * rng.range(12.0, 25.0) + Vec3::Y * 30.0;
            let hit = engine
                .closest_hit(scene, &[Ray::new(far, Vec3::NEG_Y, 60.0)], Mask::ANY_SOLID)
                .unwrap()[0];
            let y = hit.map_or(centre.y, |h| far.y - h.t);
            far.with_y(y + 1.7)
        })
        .collect();
    (0..n)
        .map(|k| DenseQuery {
            agent: Agent::soldier(ground_at(&mut rng, span)),
            observers: observers.clone(),
            mask: if k % 2 == 0 { Mask::SIGHT } else { Mask::FIRE },
        })
        .collect()
}

fn agents(q: &[DenseQuery]) -> Vec<Agent> {
    q.iter().map(|q| q.agent).collect()
}

/// A wall corner 0.23 m from a spot on the diagonal cuts the body there: the disc fit says so,
/// where the two diameters of the nav clearance test miss it.
#[test]
fn a_wall_corner_inside_the_body_on_the_diagonal_means_nothing_fits() {
    let params = DenseParams::standard();
    let (i, j) = (8, 8);
    let centre = Vec3::new(
        (i as f32 + 0.5) * params.cell,
        0.0,
        (j as f32 + 0.5) * params.cell,
    );
    let corner = centre + Vec3::new(1.0, 0.0, 1.0) * (0.23 / std::f32::consts::SQRT_2);
    let mut mesh = Mesh::default();
    ground(&mut mesh, 20.0, 0.0);
    cuboid(&mut mesh, corner, corner + Vec3::new(4.0, 3.0, 4.0), SOLID);
    let mut scene = Scene::new(materials());
    scene
        .add_object(mesh, Affine3A::IDENTITY, Mobility::Static)
        .unwrap();
    for engine in engines() {
        let agent = Agent::soldier(centre);
        let two_diameters = fitting_postures(&engine, &scene, &agent, &[centre], 0.1).unwrap();
        assert_eq!(
            two_diameters[0],
            Some(Posture::Standing),
            "the old test misses it"
        );
        let mut surface = Surface::new();
        surface.prepare(&engine, &scene, &[agent], &params).unwrap();
        let shape = surface.shape_of(&agent);
        let here = surface.floors(shape, i, j);
        assert_eq!(here.len(), 1);
        assert_eq!(here[0].fit, 0, "a corner inside the disc: nothing fits");
        // Two cells further from the corner, the body is clear.
        let clear = surface.floors(shape, i - 2, j - 2);
        assert_eq!(clear[0].fit, 1 + Posture::Standing as u8);
    }
}

/// Tiles are kept between calls (a second call builds none and answers alike) and a moved
/// crate drops only the tiles it touches; the answers then equal a fresh surface's.
#[test]
fn tiles_are_kept_and_rebuilt_only_where_an_object_moved() {
    let params = DenseParams {
        verify_intervis: false,
        ..DenseParams::standard()
    };
    for engine in engines() {
        let mut scene = procedural::village(1, 1);
        let mut crate_mesh = Mesh::default();
        cuboid(&mut crate_mesh, Vec3::ZERO, Vec3::new(1.0, 1.2, 1.0), SOLID);
        let id = scene
            .add_object(
                crate_mesh,
                Affine3A::from_translation(Vec3::new(3.0, 0.0, 3.0)),
                Mobility::Movable,
            )
            .unwrap();
        let queries = batch(&engine, &scene, Vec3::ZERO, 40, 30.0);
        let mut surface = Surface::new();
        let first = find_cover_on(&engine, &scene, &mut surface, &queries, &params).unwrap();
        let built = surface.stats().built;
        assert!(built >= 9, "{built} tiles for a 40 m square and more");
        let again = find_cover_on(&engine, &scene, &mut surface, &queries, &params).unwrap();
        assert_eq!(surface.stats().built, built, "a second call builds nothing");
        assert_eq!(first, again);
        scene
            .set_transform(id, Affine3A::from_translation(Vec3::new(-6.0, 0.0, 2.0)))
            .unwrap();
        let moved = find_cover_on(&engine, &scene, &mut surface, &queries, &params).unwrap();
        let s = surface.stats();
        assert!(s.dropped >= 1 && s.dropped < built, "{s:?} of {built}");
        assert_eq!(
            s.built,
            built + s.dropped,
            "only the dropped tiles are built again"
        );
        let fresh = find_cover_on(&engine, &scene, &mut Surface::new(), &queries, &params).unwrap();
        assert_eq!(moved, fresh, "kept tiles answer as a fresh surface does");
    }
}

/// On the GPU a batch on cached tiles costs at most four waits, whatever its size: the two
/// up-front visibility calls, one gathered wave for agents whose cover lies beyond them, and
/// one intervis measurement of every agent's next [`INTERVIS_AHEAD`] candidates; plus, where
/// the humanoid turned an agent's first candidates all down, one measurement for each further
/// [`INTERVIS_AHEAD_AGAIN`] of that agent's.
#[test]
fn dense_cover_waits_at_most_four_times_per_batch_on_cached_tiles() {
    let Some(gpu) = gpu::gpu_engine() else { return };
    let scene = procedural::village(1, 1);
    let params = DenseParams::standard();
    let all = batch(&gpu, &scene, Vec3::ZERO, 400, 25.0);
    let mut surface = Surface::new();
    surface
        .prepare(&gpu, &scene, &agents(&all), &params)
        .unwrap();
    let cpu = Engine::cpu();
    for n in [1, 50, 400] {
        let queries = &all[..n];
        let (before, ops) = (gpu.counters().total, gpu.counters());
        let answers = find_cover_on(&gpu, &scene, &mut surface, queries, &params).unwrap();
        let d = gpu.counters().total.since(&before);
        let by_op: Vec<_> = gpu
            .counters()
            .by_operation
            .iter()
            .map(|(name, c)| (*name, c.since(&ops.operation(name)).waits))
            .filter(|x| x.1 > 0)
            .collect();
        let most = answers.iter().map(|a| a.rejected.len()).max().unwrap_or(0);
        // One more intervis call once a query has its first spots all turned down, and one
        // more for each further run of spots measured again.
        let more = match most.checked_sub(INTERVIS_AHEAD) {
            None => 0,
            Some(after) => 1 + after / INTERVIS_AHEAD_AGAIN,
        };
        assert!(
            d.waits as usize <= 4 + more && d.submissions as usize <= 4 + more,
            "{n} queries, at most {most} rejections: {d:?}, waits by operation {by_op:?}"
        );
        eprintln!("{n} queries: {} waits, at most {most} rejections", d.waits);
        let found = answers.iter().filter(|a| a.choice.is_some()).count();
        assert!(
            n < 50 || found * 2 >= n,
            "{n} queries, only {found} found cover"
        );
        // The CPU's lazy search chooses alike (on the body check: the intervis measurement's
        // two backends agree by contract, not pixel for pixel).
        let body = DenseParams {
            verify_intervis: false,
            ..params
        };
        let eager = find_cover_on(&gpu, &scene, &mut surface, queries, &body).unwrap();
        let lazy = find_cover_on(&cpu, &scene, &mut Surface::new(), queries, &body).unwrap();
        for (k, (a, b)) in eager.iter().zip(&lazy).enumerate() {
            let at = |x: &DenseAnswer| x.choice.as_ref().map(|c| (c.position, c.posture));
            assert!(
                contract::same_choice(&a.choice, &b.choice),
                "{n} queries, query {k}: gpu {:?} ({} rejected), cpu {:?} ({} rejected)",
                at(a),
                a.rejected.len(),
                at(b),
                b.rejected.len()
            );
        }
    }
}

/// A batch chooses as its queries do one at a time, with the intervis measurement on: the
/// shared visibility cache and the verdicts agents of a group share (one measurement per spot)
/// change the work, never a choice or a rejection. 150 agents sharing 4 observers on
/// `village`, in three chunks, on the CPU backend.
#[test]
fn a_batch_chooses_as_its_queries_one_at_a_time() {
    let cpu = Engine::cpu();
    let scene = procedural::village(1, 1);
    let params = DenseParams::standard();
    let queries = batch(&cpu, &scene, Vec3::ZERO, 150, 20.0);
    let mut surface = Surface::new();
    let together = find_cover_on(&cpu, &scene, &mut surface, &queries, &params).unwrap();
    // The spots turned down, not their pixel counts: a measurement places several targets
    // in one view where they fit, so the pixel grid a target falls on depends on the others
    // measured with it.
    let rejected = |a: &DenseAnswer| -> Vec<(Vec3, Posture)> {
        a.rejected.iter().map(|r| (r.position, r.posture)).collect()
    };
    for (k, q) in queries.iter().enumerate() {
        let alone = find_cover_on(&cpu, &scene, &mut surface, std::slice::from_ref(q), &params)
            .unwrap()
            .remove(0);
        let spot = |a: &DenseAnswer| {
            a.choice
                .as_ref()
                .map(|c| (c.position, c.posture, c.path.clone()))
        };
        assert_eq!(spot(&together[k]), spot(&alone), "query {k}");
        assert_eq!(rejected(&together[k]), rejected(&alone), "query {k}");
    }
    let found = together.iter().filter(|a| a.choice.is_some()).count();
    let turned_down: usize = together.iter().map(|a| a.rejected.len()).sum();
    eprintln!("150 agents: {found} found cover, {turned_down} spots turned down");
    assert!(
        found >= 75 && turned_down > 0,
        "{found} found cover, {turned_down} turned down"
    );
}

/// The surface refuses bad settings and bodies, and a batch spread too wide, with errors.
#[test]
fn a_surface_refuses_bad_input_with_errors() {
    let engine = Engine::cpu();
    let scene = procedural::rock(1, 1);
    let fine = DenseParams::standard();
    let here = Agent::soldier(Vec3::ZERO);
    let mut s = Surface::new();
    let zero_cell = DenseParams { cell: 0.0, ..fine };
    assert!(s.prepare(&engine, &scene, &[here], &zero_cell).is_err());
    let nan = Agent::soldier(Vec3::new(f32::NAN, 0.0, 0.0));
    assert!(s.prepare(&engine, &scene, &[nan], &fine).is_err());
    let spread: Vec<Agent> = (0..5000)
        .map(|k| Agent::soldier(Vec3::new(k as f32 * 100.0, 0.0, 0.0)))
        .collect();
    let err = s
        .prepare(&engine, &scene, &spread, &fine)
        .unwrap_err()
        .to_string();
    assert!(err.contains("split the batch"), "{err}");
    assert_eq!(s.tiles(), 0, "nothing built before the errors");
    s.prepare(&engine, &scene, &[here], &fine).unwrap();
    assert!(s.tiles() >= 9);
}
