//! The dense cover search and the whole-body model: Darken, Morgan and Paull's rock, the bridge deck and the
//! crest, an exhaustive search on generated scenes, and GPU = CPU on real levels.

#[path = "common/mod.rs"]
mod common;
#[path = "common/contract.rs"]
mod contract;
#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/oracle.rs"]
mod oracle;
#[path = "common/scenes.rs"]
mod scenes;

use glam::{Affine3A, Vec3};
use scenes::{cuboid, ground, materials, SOLID};
use sightline::cover::body::{body_points, BodyParams};
use sightline::cover::dense::{find_cover, DenseAnswer, DenseParams, DenseQuery};
use sightline::cover::sensor_grid::{self, CoverQuery, SensorGridParams};
use sightline::cover::verify::{body_exposure, Candidate, Check};
use sightline::cover::{nearest_cover, template_points, Agent, Posture};
use sightline::scene::procedural;
use sightline::trace::{Ray, Segment, SplitMix64};
use sightline::{Engine, Fusion, Mask, MaterialFlags, Mesh, Mobility, Scene};

fn engines() -> Vec<Engine> {
    std::iter::once(Engine::cpu())
        .chain(gpu::gpu_engine())
        .collect()
}

fn scene_of(mesh: Mesh) -> Scene {
    let mut s = Scene::new(materials());
    s.add_object(mesh, Affine3A::IDENTITY, Mobility::Static)
        .unwrap();
    s
}

/// Darken, Morgan and Paull's thought experiment: an agent 5 m from the rock on the observer's side, at 8
/// compass directions, hides behind the rock standing, with both methods on both backends. (The
/// rock narrows toward the ground, so the grid's sparse sensors behind it often show the legs:
/// its choice is judged by the seed's own three points here.)
#[test]
fn behind_the_rock_from_five_metres_at_eight_directions_with_both_methods() {
    let scene = procedural::rock(1, 1);
    for engine in engines() {
        let mut dense = Vec::new();
        let mut grid = Vec::new();
        for k in 0..8 {
            let a = k as f32 * std::f32::consts::TAU / 8.0;
            let dir = Vec3::new(a.cos(), 0.0, a.sin());
            let observers = vec![dir * 30.0 + Vec3::Y * 1.7];
            dense.push(DenseQuery {
                agent: Agent::soldier(dir * 5.0),
                observers: observers.clone(),
                mask: Mask::FIRE,
            });
            grid.push(CoverQuery {
                agent: Agent::soldier(dir * 5.0),
                observers,
                mask: Mask::FIRE,
                waypoints: Vec::new(),
            });
        }
        let d = find_cover(&engine, &scene, &dense, &DenseParams::standard()).unwrap();
        // The seed's method as published (its three points per posture).
        let g =
            sensor_grid::find_cover(&engine, &scene, &grid, &SensorGridParams::standard()).unwrap();
        for k in 0..8 {
            let dir = dense[k].agent.position / 5.0;
            for (name, pos, posture, decided) in [
                d[k].choice
                    .as_ref()
                    .map(|c| ("dense", c.position, c.posture, c.decided_by)),
                g[k].choice
                    .as_ref()
                    .map(|c| ("sensor grid", c.position, c.posture, c.decided_by)),
            ]
            .into_iter()
            .map(|c| c.unwrap_or_else(|| panic!("{:?} direction {k}: no cover", engine.backend())))
            {
                assert!(
                    pos.dot(dir) < -1.0 && pos.length() < 9.0,
                    "{:?} {name} direction {k}: {pos} is not behind the rock",
                    engine.backend()
                );
                // The grid's three points hide standing; the dense search's whole body may first
                // fit crouching where the rock narrows toward the ground.
                if name == "sensor grid" {
                    assert_eq!(posture, Posture::Standing, "{name} direction {k}");
                } else {
                    assert!(
                        posture >= Posture::Crouching,
                        "{name} direction {k}: {posture:?}"
                    );
                }
                let check = if name == "dense" {
                    Check::Intervis
                } else {
                    Check::Template
                };
                assert_eq!(decided, check, "{name} direction {k}");
            }
        }
    }
}

/// The dense answer for an agent at `at` with the cells its search closed listed, after
/// checking that the simple call (the defaults: cells counted, none listed) answers alike.
fn listed_answer(engine: &Engine, scene: &Scene, at: Vec3, observer: Vec3) -> DenseAnswer {
    let simple = nearest_cover(engine, scene, at, &[observer], Mask::FIRE).unwrap();
    let query = DenseQuery {
        agent: Agent::soldier(at),
        observers: vec![observer],
        mask: Mask::FIRE,
    };
    let params = DenseParams {
        explored: true,
        ..DenseParams::standard()
    };
    let answer = find_cover(engine, scene, &[query], &params)
        .unwrap()
        .remove(0);
    assert!(simple.explored.is_empty());
    assert_eq!(simple.explored_cells, answer.explored.len());
    assert_eq!(answer.explored_cells, answer.explored.len());
    assert_eq!((&simple.choice, simple.rays), (&answer.choice, answer.rays));
    answer
}

/// A deck 1.6-1.8 m above the ground: a standing head sits inside it, so the seed's three
/// points are hidden while the body below is seen. The body model calls it exposed and the
/// body does not fit standing there; no method chooses it.
#[test]
fn standing_under_a_bridge_deck_is_neither_hidden_nor_possible() {
    let mut m = Mesh::default();
    ground(&mut m, 40.0, 0.0);
    cuboid(
        &mut m,
        Vec3::new(-3.0, 1.6, -3.0),
        Vec3::new(3.0, 1.8, 3.0),
        SOLID,
    );
    let scene = scene_of(m);
    let engine = Engine::cpu();
    let observer = Vec3::new(-15.0, 1.2, 0.0);
    let agent = Agent::soldier(Vec3::ZERO);
    let seed: Vec<Segment> = template_points(&agent, Vec3::ZERO, Posture::Standing, observer)
        .map(|p| Segment::new(observer, p))
        .to_vec();
    let bits = engine.occluded(&scene, &seed, Mask::FIRE).unwrap();
    assert!(
        (0..3).all(|i| bits.get(i)),
        "the seed's template calls it hidden"
    );
    let e = body_exposure(
        &engine,
        &scene,
        &[Candidate {
            agent: &agent,
            ground: Vec3::ZERO,
            posture: Posture::Standing,
            observers: &[observer],
            mask: Mask::FIRE,
        }],
        &BodyParams::standard(),
    )
    .unwrap();
    assert!(e[0][0] > 0.8, "the body is {}% exposed", e[0][0] * 100.0);
    let answer = listed_answer(&engine, &scene, Vec3::new(-1.0, 0.0, 0.5), observer);
    let under = |p: Vec3| p.x.abs() < 3.0 && p.z.abs() < 3.0;
    assert!(answer.explored.iter().any(|e| under(e.position)));
    for e in answer.explored.iter().filter(|e| under(e.position)) {
        assert_eq!(
            e.cover,
            sightline::cover::field::CellCover::Exposed,
            "{e:?}"
        );
    }
    if let Some(c) = &answer.choice {
        assert!(!under(c.position), "chose {c:?}");
    }
    let grid = sensor_grid::find_cover(
        &engine,
        &scene,
        &[CoverQuery {
            agent: Agent::soldier(Vec3::new(-1.0, 0.0, 0.5)),
            observers: vec![observer],
            mask: Mask::FIRE,
            waypoints: Vec::new(),
        }],
        &SensorGridParams::standard(),
    )
    .unwrap();
    assert!(
        !grid[0].sensors[0].hidden[2],
        "clearance: the seed's grid no longer calls the agent's own spot standing-hidden"
    );
}

/// Prone just behind a 0.5 m berm, watched from a hill: the head centre and its sides are hidden
/// but the back of the head shows over the berm. The seed's points miss it; the body does not.
#[test]
fn prone_behind_a_crest_seen_from_above_is_exposed() {
    let mut m = Mesh::default();
    ground(&mut m, 40.0, 0.0);
    cuboid(
        &mut m,
        Vec3::new(-0.6, 0.0, -3.0),
        Vec3::new(-0.4, 0.5, 3.0),
        SOLID,
    );
    let scene = scene_of(m);
    let engine = Engine::cpu();
    let observer = Vec3::new(-20.0, 6.0, 0.0);
    let agent = Agent::soldier(Vec3::ZERO);
    let seed: Vec<Segment> = template_points(&agent, Vec3::ZERO, Posture::Prone, observer)
        .map(|p| Segment::new(observer, p))
        .to_vec();
    let bits = engine.occluded(&scene, &seed, Mask::FIRE).unwrap();
    assert!(
        (0..3).all(|i| bits.get(i)),
        "the seed's template calls it hidden"
    );
    let cand = Candidate {
        agent: &agent,
        ground: Vec3::ZERO,
        posture: Posture::Prone,
        observers: &[observer],
        mask: Mask::FIRE,
    };
    let e = body_exposure(&engine, &scene, &[cand], &BodyParams::standard()).unwrap();
    assert!(e[0][0] > 0.0, "the back of the head shows");
}

/// The body sample against a brute-force one (2,000 random points in the cylinder): where the
/// sample calls a posture hidden, brute force sees under 1% of the body; where brute force
/// sees nothing, neither does the sample.
#[test]
fn the_body_sample_agrees_with_a_brute_force_body() {
    let scene = procedural::village(1, 1);
    let engine = Engine::cpu();
    let mut rng = SplitMix64(7);
    let mut spots = Vec::new();
    while spots.len() < 300 {
        let p = rng.in_box(Vec3::new(-30.0, 20.0, -30.0), Vec3::new(30.0, 20.0, 30.0));
        let h = engine
            .closest_hit(&scene, &[Ray::new(p, Vec3::NEG_Y, 40.0)], Mask::ANY_SOLID)
            .unwrap()[0];
        if let Some(h) = h {
            let g = p - Vec3::Y * h.t;
            let o = g + Vec3::new(rng.range(-25.0, 25.0), 0.0, rng.range(-25.0, 25.0));
            let o = o.with_y(g.y + rng.range(1.0, 8.0));
            spots.push((g, o, Posture::ALL[spots.len() % 3]));
        }
    }
    let agent = Agent::soldier(Vec3::ZERO);
    let (mut hidden, mut bad) = (0, 0);
    for &(g, o, p) in &spots {
        let mut pts = Vec::new();
        body_points(&agent, g, p, o, &BodyParams::standard(), &mut pts);
        let sample = engine
            .occluded(
                &scene,
                &pts.iter().map(|&t| Segment::new(o, t)).collect::<Vec<_>>(),
                Mask::SIGHT,
            )
            .unwrap();
        let sample_hidden = (0..pts.len()).all(|i| sample.get(i));
        let brute: Vec<Segment> = (0..2000)
            .map(|_| {
                let a = rng.range(0.0, std::f32::consts::TAU);
                let r = agent.radius * rng.f32().sqrt();
                let y = rng.range(0.1, agent.head_height(p));
                Segment::new(o, g + Vec3::new(a.cos() * r, y, a.sin() * r))
            })
            .collect();
        let bits = engine.occluded(&scene, &brute, Mask::SIGHT).unwrap();
        let seen = (0..brute.len()).filter(|&i| !bits.get(i)).count() as f32 / 2000.0;
        if sample_hidden {
            hidden += 1;
            if seen >= 0.01 {
                bad += 1;
            }
        } else {
            assert!(
                seen > 0.0 || !sample_hidden,
                "sample sees what brute force cannot"
            );
        }
    }
    assert!(
        hidden >= 20,
        "only {hidden} hidden spots: the test needs more"
    );
    assert_eq!(
        bad, 0,
        "{bad} of {hidden} sample-hidden spots show 1% or more"
    );
}

/// Boxes of random size on a plane; random agents and observers.
fn boxes(seed: u64) -> Scene {
    let mut rng = SplitMix64(seed);
    let mut m = Mesh::default();
    ground(&mut m, 60.0, 0.0);
    for _ in 0..14 {
        let c = rng.in_box(Vec3::new(-12.0, 0.0, -12.0), Vec3::new(12.0, 0.0, 12.0));
        let half = Vec3::new(rng.range(0.25, 2.0), 0.0, rng.range(0.25, 2.0));
        let h = rng.range(0.4, 2.5);
        cuboid(&mut m, c - half, c + half + Vec3::Y * h, SOLID);
    }
    scene_of(m)
}

/// The dense search finds exactly the exhaustive search's nearest hidden cell (same grid path
/// length, same posture) on scenes it was not tuned on.
#[test]
fn dense_search_equals_an_exhaustive_search_on_generated_scenes() {
    let engine = Engine::cpu();
    let params = DenseParams {
        radius: 8.0,
        posture_tie: 0.0,
        verify_intervis: false,
        ..DenseParams::standard()
    };
    let (mut found, mut none) = (0, 0);
    for seed in 0..6u64 {
        let scene = boxes(seed);
        let mut rng = SplitMix64(100 + seed);
        let mut queries = Vec::new();
        while queries.len() < 12 {
            let p = rng.in_box(Vec3::new(-10.0, 0.0, -10.0), Vec3::new(10.0, 0.0, 10.0));
            let up = engine
                .occluded(
                    &scene,
                    &[Segment::new(p + Vec3::Y * 0.05, p + Vec3::Y * 3.0)],
                    Mask::ANY_SOLID,
                )
                .unwrap();
            if up.get(0) {
                continue; // inside a box
            }
            let observers: Vec<Vec3> = (0..1 + queries.len() % 3)
                .map(|_| {
                    let a = rng.range(0.0, std::f32::consts::TAU);
                    p + Vec3::new(a.cos(), 0.0, a.sin()) * rng.range(8.0, 25.0) + Vec3::Y * 1.7
                })
                .collect();
            queries.push(DenseQuery {
                agent: Agent::soldier(p),
                observers,
                mask: Mask::FIRE,
            });
        }
        let answers = find_cover(&engine, &scene, &queries, &params).unwrap();
        for (q, a) in queries.iter().zip(&answers) {
            let o = oracle::exhaustive(
                &engine,
                &scene,
                &q.agent,
                &q.observers,
                q.mask,
                params.radius,
                params.cell,
                &params.body,
                params.step_height,
            );
            match (o.nearest_hidden(), &a.choice) {
                (None, None) => none += 1,
                (Some((_, g, p)), Some(c)) => {
                    found += 1;
                    let at = o
                        .at(c.position, params.cell)
                        .expect("chosen cell in the grid");
                    assert!(
                        (at.g - g).abs() < 1e-3,
                        "seed {seed}, agent {}: chose a cell {} m away, the nearest hidden is {g} m",
                        q.agent.position,
                        at.g
                    );
                    assert_eq!(c.posture, p, "agent {}", q.agent.position);
                    assert_eq!(Some(c.posture), at.hidden);
                    // The path starts at the agent's feet, the grid at its cell's centre.
                    assert!(
                        c.path_length <= at.g + params.cell,
                        "string pulling never lengthens: {} > {}",
                        c.path_length,
                        at.g
                    );
                }
                (o, c) => panic!(
                    "seed {seed}, agent {}: exhaustive {o:?}, dense {c:?}",
                    q.agent.position
                ),
            }
        }
    }
    assert!(found > 30, "{found} found, {none} without cover");
}

/// Agents on walkable ground of real and built-in levels, each seen by its observers.
fn seen_agents(engine: &Engine, scene: &Scene, n: usize, seed: u64, span: f32) -> Vec<DenseQuery> {
    let (lo, hi) = scene.bounds().expect("a scene with triangles");
    let mut rng = SplitMix64(seed);
    let mut out = Vec::new();
    let mut tries = 0;
    while out.len() < n && tries < n * 200 {
        tries += 1;
        let p = rng.in_box(lo, hi).with_y(hi.y + 1.0);
        let Some(h) = engine
            .closest_hit(
                scene,
                &[Ray::new(p, Vec3::NEG_Y, hi.y - lo.y + 2.0)],
                Mask::ANY_SOLID,
            )
            .unwrap()[0]
        else {
            continue;
        };
        if !scene.materials()[h.material as usize]
            .flags
            .contains(MaterialFlags::WALKABLE)
            || h.normal.y < 0.8
            || h.back
        {
            continue; // not ground: a wall, or a ceiling seen from above (its back)
        }
        let g = p - Vec3::Y * h.t;
        let observers: Vec<Vec3> = (0..2)
            .map(|_| {
                g + Vec3::new(
                    rng.range(-span, span),
                    rng.range(1.0, 4.0),
                    rng.range(-span, span),
                )
            })
            .collect();
        let head = g + Vec3::Y * 1.75;
        let segs: Vec<Segment> = observers.iter().map(|&o| Segment::new(o, head)).collect();
        let bits = engine.occluded(scene, &segs, Mask::SIGHT).unwrap();
        if (0..segs.len()).any(|i| bits.get(i)) {
            continue;
        }
        out.push(DenseQuery {
            agent: Agent::soldier(g),
            observers,
            mask: if out.len() % 2 == 0 {
                Mask::SIGHT
            } else {
                Mask::FIRE
            },
        });
    }
    out
}

/// The search of the agreement tests: 6 m, judged by the body sample alone (the intervis
/// measurement's two backends agree by contract, not pixel for pixel).
fn agreement_params() -> DenseParams {
    DenseParams {
        radius: 6.0,
        verify_intervis: false,
        ..DenseParams::standard()
    }
}

fn dungeon() -> Scene {
    sightline::scene::load(common::data_dir().join("dungeon.obj"), &Default::default())
        .unwrap()
        .0
}

#[test]
fn gpu_and_cpu_choices_agree_on_real_levels() {
    let Some(gpu) = gpu::gpu_engine() else { return };
    let cpu = Engine::cpu();
    let (params, dungeon) = (agreement_params(), dungeon());
    let mut total = 0;
    // (Agents stand on floors, not on the backs of ceilings: in the dungeon's open rooms few
    // have cover within 6 m.)
    for (name, scene, span, least) in [
        ("village", procedural::village(1, 1), 15.0, 25),
        ("dungeon", dungeon, 8.0, 10),
    ] {
        let queries = seen_agents(&cpu, &scene, 1000, 11, span);
        assert!(
            queries.len() >= 800,
            "{name}: only {} seen agents",
            queries.len()
        );
        let a = find_cover(&cpu, &scene, &queries, &params).unwrap();
        let b = find_cover(&gpu, &scene, &queries, &params).unwrap();
        let with_cover = a.iter().filter(|x| x.choice.is_some()).count();
        assert!(with_cover >= least, "{name}: only {with_cover} with cover");
        // The GPU traces more up front (the eager strategy), and a GPU may fuse arithmetic:
        // the choices agree by contract (same spot, posture and path length within 1 mm).
        if let Some(k) = (0..a.len()).find(|&k| !contract::same_choice(&a[k].choice, &b[k].choice))
        {
            panic!(
                "{name}: GPU and CPU choices differ at query {k} (agent {}): cpu {:?}, gpu {:?}",
                queries[k].agent.position, a[k].choice, b[k].choice
            );
        }
        total += queries.len();
    }
    assert!(total >= 1600, "{total} queries");
}

/// The fused CPU twins (`a * b + c` in one rounding, as a contracting GPU compiler may) choose
/// as the plain twin does on 3,000 seen agents on each of `village` and `dungeon.obj`: at
/// least 999 in 1,000 choices the same by contract, the rest where a fused last bit decided.
#[test]
fn fused_twins_choose_as_the_plain_twin_on_6000_agents() {
    let cpu = Engine::cpu();
    let (params, dungeon) = (agreement_params(), dungeon());
    let scenes = [
        ("village", procedural::village(1, 1), 15.0),
        ("dungeon", dungeon, 8.0),
    ];
    let asked: Vec<Vec<DenseQuery>> = (scenes.iter())
        .map(|(_, scene, span)| seen_agents(&cpu, scene, 3000, 12, *span))
        .collect();
    let plain: Vec<_> = (scenes.iter().zip(&asked))
        .map(|((_, scene, _), q)| find_cover(&cpu, scene, q, &params).unwrap())
        .collect();
    for fusion in [Fusion::First, Fusion::Last] {
        let fused = Engine::cpu_fused(fusion);
        let (mut n, mut differ) = (0, 0);
        for (((name, scene, _), q), a) in scenes.iter().zip(&asked).zip(&plain) {
            let b = find_cover(&fused, scene, q, &params).unwrap();
            let d = (a.iter().zip(&b))
                .filter(|(x, y)| !contract::same_choice(&x.choice, &y.choice))
                .count();
            eprintln!(
                "{name}, fused {fusion:?}: {d} of {} choices differ ({} with cover)",
                q.len(),
                a.iter().filter(|x| x.choice.is_some()).count()
            );
            n += q.len();
            differ += d;
        }
        assert!(n >= 5000, "only {n} seen agents");
        assert!(
            differ * 1000 <= n,
            "fused {fusion:?}: {differ} of {n} choices differ"
        );
    }
}

#[test]
fn bad_queries_are_errors() {
    let scene = procedural::rock(1, 1);
    let engine = Engine::cpu();
    let q = |p: Vec3, o: Vec3| DenseQuery {
        agent: Agent::soldier(p),
        observers: vec![o],
        mask: Mask::FIRE,
    };
    let ok = DenseParams::standard();
    for (query, params) in [
        (q(Vec3::NAN, Vec3::ONE), ok),
        (q(Vec3::ZERO, Vec3::new(f32::INFINITY, 0.0, 0.0)), ok),
        (q(Vec3::ZERO, Vec3::ONE), DenseParams { cell: 0.0, ..ok }),
        (q(Vec3::ZERO, Vec3::ONE), DenseParams { radius: 1e9, ..ok }),
        (
            q(Vec3::ZERO, Vec3::ONE),
            DenseParams {
                radius: f32::NAN,
                ..ok
            },
        ),
        (
            q(Vec3::ZERO, Vec3::ONE),
            DenseParams {
                body: BodyParams {
                    row_spacing: 0.0,
                    ..BodyParams::standard()
                },
                ..ok
            },
        ),
    ] {
        let e = find_cover(&engine, &scene, &[query], &params).unwrap_err();
        assert!(matches!(e, sightline::Error::InvalidInput(_)), "{e}");
    }
    // No observers: hidden where it stands.
    let a = find_cover(
        &engine,
        &scene,
        &[DenseQuery {
            observers: vec![],
            ..q(Vec3::ONE, Vec3::ONE)
        }],
        &ok,
    )
    .unwrap();
    assert_eq!(a[0].choice.as_ref().unwrap().path_length, 0.0);
}
