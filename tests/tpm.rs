//! The Threat Probability Model and visual search: bounds, decay only where seen, diffusion that
//! conserves mass, accrual as documented, batches equal to single maps, views from tables and
//! from the engine, and a search that goes where the threat is.

#[path = "common/gpu.rs"]
mod gpu;

use glam::Vec3;
use sightline::agent::Posture;
use sightline::intervis::measure::{measure_ray_cast, IntervisPair, IntervisParams};
use sightline::nav::{self, CostParams, Edge, EdgeKinds, NavGraph, NavParams};
use sightline::scene::procedural;
use sightline::tables::{self, PrecomputeParams};
use sightline::tpm::{
    pick_sector, sector_threat, Member, Observation, SearchParams, Searcher, TpmParams, TpmSet,
    View, ViewParams,
};
use sightline::trace::SplitMix64;
use sightline::{Engine, Material, MaterialFlags, Mesh, Mobility, Scene};

/// An 8-connected grid graph, `w x h` nodes 2 m apart, centred on the origin.
fn grid(w: u32, h: u32) -> NavGraph {
    let nodes: Vec<Vec3> = (0..h)
        .flat_map(|r| (0..w).map(move |c| Vec3::new(c as f32 * 2.0, 0.0, r as f32 * 2.0)))
        .map(|p| p - Vec3::new((w - 1) as f32, 0.0, (h - 1) as f32))
        .collect();
    let id = |c: u32, r: u32| r * w + c;
    let mut edges = Vec::new();
    for r in 0..h {
        for c in 0..w {
            for (dc, dr) in [(1i32, 0i32), (0, 1), (1, 1), (-1, 1)] {
                let (c2, r2) = (c as i32 + dc, r as i32 + dr);
                if c2 >= 0 && (c2 as u32) < w && (r2 as u32) < h {
                    let (a, b) = (id(c, r), id(c2 as u32, r2 as u32));
                    let length = nodes[a as usize].distance(nodes[b as usize]);
                    edges.push(Edge {
                        a,
                        b,
                        kinds: EdgeKinds::NONE,
                        length,
                    });
                }
            }
        }
    }
    NavGraph::new(nodes, edges, &CostParams::standard()).unwrap()
}

fn random_values(set: &mut TpmSet, seed: u64) {
    let mut rng = SplitMix64(seed);
    for t in 0..set.count() as u32 {
        for i in 0..set.nodes() as u32 {
            set.set(t, i, rng.f32()).unwrap();
        }
    }
}

fn random_observations(set: &TpmSet, rng: &mut SplitMix64, n: usize) -> Vec<Observation> {
    (0..n)
        .map(|_| Observation {
            tpm: (rng.next_u64() % set.count() as u64) as u32,
            node: (rng.next_u64() % set.nodes() as u64) as u32,
            rate: rng.range(0.0, 2.0),
        })
        .collect()
}

#[test]
fn values_stay_in_unit_interval_and_never_reach_zero() {
    let g = grid(30, 20);
    let mut set = TpmSet::new(&g, 5, TpmParams::standard()).unwrap();
    random_values(&mut set, 1);
    let mut rng = SplitMix64(2);
    for step in 0..300 {
        let obs = random_observations(&set, &mut rng, 400);
        let dt = rng.range(0.05, 3.0);
        set.step(dt, &obs).unwrap();
        for &v in set.raw() {
            assert!(v > 0.0 && v <= 1.0, "step {step}: value {v}");
        }
    }
    // Watched for a long time with the strongest rate, a node sits at the floor, not zero.
    let mut s = TpmSet::new(&g, 1, TpmParams::standard()).unwrap();
    let stare = [Observation {
        tpm: 0,
        node: 7,
        rate: 50.0,
    }];
    for _ in 0..100 {
        s.step(1.0, &stare).unwrap();
    }
    assert_eq!(s.get(0, 7), TpmParams::standard().floor);
}

#[test]
fn threat_decays_only_where_seen_and_as_the_exponential_says() {
    let g = grid(12, 12);
    let p = TpmParams {
        diffusion_rate: 0.0,
        accrual_rate: 0.0,
        ..TpmParams::standard()
    };
    let mut set = TpmSet::new(&g, 2, p).unwrap();
    random_values(&mut set, 3);
    let before = set.raw().to_vec();
    let seen = [3u32, 40, 41, 100];
    let obs: Vec<Observation> = seen
        .iter()
        .map(|&node| Observation {
            tpm: 1,
            node,
            rate: 0.3,
        })
        .chain([Observation {
            tpm: 1,
            node: 40,
            rate: 0.2,
        }])
        .collect();
    set.step(2.0, &obs).unwrap();
    for i in 0..g.len() as u32 {
        for t in 0..2 {
            let (old, new) = (before[i as usize * 2 + t as usize], set.get(t, i));
            if t == 1 && seen.contains(&i) {
                // Two observers of node 40: their rates add.
                let rate = if i == 40 { 0.5 } else { 0.3 };
                let want = (old * (-rate * 2.0f32).exp()).max(p.floor);
                assert!((new - want).abs() < 1e-6, "node {i}: {new} vs {want}");
                assert!(new < old);
            } else {
                assert_eq!(new, old, "map {t} node {i} changed without being seen");
            }
        }
    }
}

#[test]
fn diffusion_conserves_the_total_and_evens_it_out() {
    let g = grid(25, 15);
    let p = TpmParams {
        accrual_rate: 0.0,
        diffusion_rate: 0.7,
        ..TpmParams::standard()
    };
    let mut set = TpmSet::new(&g, 3, p).unwrap();
    random_values(&mut set, 4);
    set.set(2, 0, 1.0).unwrap();
    let totals: Vec<f64> = (0..3).map(|t| set.total(t)).collect();
    let spread = |s: &TpmSet, t| {
        let v = s.values(t);
        v.iter().copied().fold(0.0f32, f32::max) - v.iter().copied().fold(1.0f32, f32::min)
    };
    let spread0 = spread(&set, 2);
    for _ in 0..400 {
        set.step(0.5, &[]).unwrap();
    }
    for t in 0..3 {
        let rel = (set.total(t) - totals[t as usize]).abs() / totals[t as usize];
        assert!(
            rel < 1e-4,
            "map {t}: total {} -> {}",
            totals[t as usize],
            set.total(t)
        );
    }
    assert!(
        spread(&set, 2) < 0.05 * spread0,
        "diffusion did not even the map out"
    );
}

#[test]
fn accrual_returns_the_total_toward_the_prior_as_documented() {
    let g = grid(10, 10);
    let p = TpmParams {
        diffusion_rate: 0.0,
        accrual_rate: 0.05,
        prior: 0.4,
        floor: 0.001,
    };
    let mut set = TpmSet::new(&g, 1, p).unwrap();
    random_values(&mut set, 5);
    let (n, t0) = (g.len() as f64, set.total(0));
    for k in 1..=60 {
        set.step(0.5, &[]).unwrap();
        let t = 0.5 * k as f64;
        let want = n * 0.4 + (t0 - n * 0.4) * (-0.05 * t).exp();
        assert!(
            (set.total(0) - want).abs() < 1e-3 * n,
            "t {t}: {} vs {want}",
            set.total(0)
        );
    }
}

#[test]
fn a_batch_of_maps_equals_the_maps_one_by_one() {
    let g = grid(20, 20);
    let k = 7;
    let mut batch = TpmSet::new(&g, k, TpmParams::standard()).unwrap();
    random_values(&mut batch, 6);
    let mut singles: Vec<TpmSet> = (0..k as u32)
        .map(|t| {
            let mut s = TpmSet::new(&g, 1, TpmParams::standard()).unwrap();
            for i in 0..g.len() as u32 {
                s.set(0, i, batch.get(t, i)).unwrap();
            }
            s
        })
        .collect();
    let mut rng = SplitMix64(7);
    for _ in 0..50 {
        let obs = random_observations(&batch, &mut rng, 300);
        batch.step(0.7, &obs).unwrap();
        for (t, s) in singles.iter_mut().enumerate() {
            let mine: Vec<Observation> = obs
                .iter()
                .filter(|o| o.tpm == t as u32)
                .map(|o| Observation { tpm: 0, ..*o })
                .collect();
            s.step(0.7, &mine).unwrap();
        }
    }
    for (t, s) in singles.iter().enumerate() {
        assert_eq!(batch.values(t as u32), s.values(0), "map {t}");
    }
    // Big enough to be updated in parallel chunks: still equal.
    let g = grid(70, 70);
    let mut big = TpmSet::new(&g, 4, TpmParams::standard()).unwrap();
    random_values(&mut big, 8);
    let mut one = TpmSet::new(&g, 1, TpmParams::standard()).unwrap();
    for i in 0..g.len() as u32 {
        one.set(0, i, big.get(2, i)).unwrap();
    }
    for _ in 0..10 {
        big.step(1.0, &[]).unwrap();
        one.step(1.0, &[]).unwrap();
    }
    assert_eq!(big.values(2), one.values(0));
}

#[test]
fn bad_steps_and_sizes_are_errors() {
    let g = grid(5, 5);
    let mut set = TpmSet::new(&g, 2, TpmParams::standard()).unwrap();
    for dt in [0.0, -1.0, f32::NAN, f32::INFINITY, 1e9] {
        assert!(set.step(dt, &[]).is_err(), "dt {dt}");
    }
    for o in [
        Observation {
            tpm: 2,
            node: 0,
            rate: 1.0,
        },
        Observation {
            tpm: 0,
            node: 25,
            rate: 1.0,
        },
        Observation {
            tpm: 0,
            node: 0,
            rate: -1.0,
        },
        Observation {
            tpm: 0,
            node: 0,
            rate: f32::NAN,
        },
    ] {
        let msg = set.step(1.0, &[o]).unwrap_err().to_string();
        assert!(msg.contains("observation"), "{msg}");
    }
    assert!(TpmSet::new(&g, 0, TpmParams::standard()).is_err());
    assert!(TpmSet::new(&g, usize::MAX / 4, TpmParams::standard()).is_err());
    let bad = TpmParams {
        prior: 1.5,
        ..TpmParams::standard()
    };
    assert!(TpmSet::new(&g, 1, bad).is_err());
    assert!(set.set(0, 0, 2.0).is_err());
    assert!(Searcher::new(
        SearchParams {
            sectors: 0,
            ..SearchParams::standard()
        },
        1
    )
    .is_err());
}

/// An observer in the middle of an open grid who sees every node.
fn open_view(g: &NavGraph) -> View {
    let vp = ViewParams::standard();
    let eye = Vec3::new(0.0, 1.7, 0.0);
    View {
        eye,
        targets: (0..g.len() as u32)
            .map(|j| {
                (
                    j,
                    vp.rate_at(eye.distance(g.nodes()[j as usize] + Vec3::Y * 1.7)),
                )
            })
            .collect(),
    }
}

#[test]
fn search_looks_at_the_most_threatening_sector() {
    let g = grid(21, 21);
    let view = open_view(&g);
    let mut set = TpmSet::new(&g, 1, TpmParams::standard()).unwrap();
    for i in 0..g.len() as u32 {
        set.set(0, i, 0.1).unwrap();
    }
    // Threat to the south-west (x < 0, z > 0): yaw about 135 degrees, sector 3 of 8.
    for (i, p) in g.nodes().iter().enumerate() {
        if p.x < -4.0 && p.z > 4.0 && (p.x + p.z).abs() < 4.0 {
            set.set(0, i as u32, 0.9).unwrap();
        }
    }
    let threat = sector_threat(&set, 0, &view, g.nodes(), 8);
    let best = (0..8)
        .max_by(|&a, &b| threat[a].total_cmp(&threat[b]))
        .unwrap();
    assert_eq!(best, 3, "{threat:?}");
    let mut s = Searcher::new(SearchParams::standard(), 9).unwrap();
    let gaze = s
        .frame(
            &mut set,
            g.nodes(),
            &[Member {
                tpm: 0,
                view: &view,
            }],
        )
        .unwrap();
    assert_eq!(gaze[0].sector, 3);
    assert!((gaze[0].yaw.to_degrees() - 157.5).abs() < 1e-3);
    // Ties go to a seeded draw: the same seed, the same choice; over seeds, every tied sector.
    let flat = vec![1.0; 8];
    let draws: Vec<u32> = (0..64)
        .map(|seed| pick_sector(&flat, &mut SplitMix64(seed)))
        .collect();
    assert_eq!(
        draws,
        (0..64)
            .map(|seed| pick_sector(&flat, &mut SplitMix64(seed)))
            .collect::<Vec<_>>()
    );
    for s in 0..8 {
        assert!(draws.contains(&s), "sector {s} never drawn among ties");
    }
}

#[test]
fn search_scans_every_sector_with_threat_in_order_of_threat_not_a_sweep() {
    let g = grid(21, 21);
    let view = open_view(&g);
    let mut set = TpmSet::new(&g, 1, TpmParams::standard()).unwrap();
    random_values(&mut set, 11);
    let mut s = Searcher::new(SearchParams::standard(), 12).unwrap();
    let members = [Member {
        tpm: 0,
        view: &view,
    }];
    let mut order = Vec::new();
    for frame in 0..40 {
        let threat = sector_threat(&set, 0, &view, g.nodes(), 8);
        let before = threat.clone();
        let gaze = s.frame(&mut set, g.nodes(), &members).unwrap()[0];
        let max = before.iter().copied().fold(f32::MIN, f32::max);
        assert_eq!(
            before[gaze.sector as usize], max,
            "frame {frame}: not the most threatening"
        );
        // Looking lowered the sector it looked at.
        let after = sector_threat(&set, 0, &view, g.nodes(), 8);
        assert!(after[gaze.sector as usize] < before[gaze.sector as usize]);
        order.push(gaze.sector);
    }
    let mut seen = order.clone();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(
        seen,
        (0..8).collect::<Vec<_>>(),
        "every sector holds threat: {order:?}"
    );
    // Not a fixed sweep: the gaze does not simply step to the next sector each frame.
    let sweeps = order
        .windows(2)
        .filter(|w| w[1] == (w[0] + 1) % 8 || w[0] == (w[1] + 1) % 8)
        .count();
    assert!(sweeps < order.len() / 2, "{order:?}");
    // A member whose view holds threat in two sectors only looks at those two.
    let half = View {
        eye: view.eye,
        targets: view
            .targets
            .iter()
            .copied()
            .filter(|&(j, _)| {
                let p = g.nodes()[j as usize];
                p.x > 1.0 && p.z.abs() < 0.5 * p.x
            })
            .collect(),
    };
    let mut set = TpmSet::new(&g, 1, TpmParams::standard()).unwrap();
    let mut looked = Vec::new();
    for _ in 0..20 {
        looked.push(
            s.frame(
                &mut set,
                g.nodes(),
                &[Member {
                    tpm: 0,
                    view: &half,
                }],
            )
            .unwrap()[0]
                .sector,
        );
    }
    assert!(looked.iter().all(|&x| x == 0 || x == 7), "{looked:?}");
    assert!(looked.contains(&0) && looked.contains(&7), "{looked:?}");
}

/// The built-in humanoid's silhouette, measured: the solid angle it fills 10 m away on an open
/// plane, times the distance squared. `ViewParams::standard().silhouette` quotes these.
#[test]
fn line_of_sight_model_uses_the_humanoid_silhouette() {
    let mut scene = Scene::new(vec![Material::new(
        "ground",
        MaterialFlags::SOLID | MaterialFlags::WALKABLE,
        0.35,
    )]);
    let mut m = Mesh::default();
    for (a, b, c) in [
        ([-50.0, 0.0, -50.0], [50.0, 0.0, -50.0], [50.0, 0.0, 50.0]),
        ([-50.0, 0.0, -50.0], [50.0, 0.0, 50.0], [-50.0, 0.0, 50.0]),
    ] {
        m.push_triangle(Vec3::from(a), Vec3::from(b), Vec3::from(c), 0);
    }
    scene
        .add_object(m, glam::Affine3A::IDENTITY, Mobility::Static)
        .unwrap();
    let engine = Engine::cpu();
    let d = 10.0;
    let pairs: Vec<IntervisPair> = Posture::ALL
        .iter()
        .map(|&posture| IntervisPair {
            observer: Vec3::new(0.0, 1.7, 0.0),
            target: Vec3::new(d, 0.0, 0.0),
            posture,
        })
        .collect();
    let recs = measure_ray_cast(&engine, &scene, &pairs, &IntervisParams::standard()).unwrap();
    let quoted = ViewParams::standard().silhouette;
    let mut areas: Vec<f32> = Vec::new();
    for (k, r) in recs.iter().enumerate() {
        let area = r.solid_angle * d * d;
        println!(
            "{}: {area:.3} m^2 (quoted {}), contrast {:.2}",
            Posture::ALL[k].name(),
            quoted[k],
            r.contrast
        );
        areas.push(area);
    }
    for (k, area) in areas.iter().enumerate() {
        assert!(
            (area - quoted[k]).abs() < 0.1 * quoted[k],
            "{:?}: {area}",
            Posture::ALL[k]
        );
    }
}

#[test]
fn views_from_tables_and_from_the_engine_agree() {
    let scene = procedural::sniper(1, 1);
    let cpu = Engine::cpu();
    let (graph, _) = nav::generate(
        &cpu,
        &scene,
        &NavParams::with_spacing(4.0),
        &CostParams::standard(),
    )
    .unwrap();
    let params = PrecomputeParams {
        range: Some(40.0),
        ..PrecomputeParams::default()
    };
    let table = nav::precompute(
        &cpu,
        &scene,
        "sniper",
        &graph,
        &params,
        None,
        None,
        |_, _, _| {},
    )
    .unwrap();
    let vp = ViewParams {
        range: 40.0,
        ..ViewParams::standard()
    };
    let observers: Vec<u32> = (0..graph.len() as u32).step_by(17).collect();
    let eyes: Vec<Vec3> = observers
        .iter()
        .map(|&o| graph.nodes()[o as usize] + Vec3::Y * 1.7)
        .collect();
    let traced = View::from_engine(&cpu, &scene, &graph, &eyes, &vp).unwrap();
    let mut gpu_views = None;
    if let Some(gpu) = gpu::gpu_engine() {
        gpu_views = Some(View::from_engine(&gpu, &scene, &graph, &eyes, &vp).unwrap());
    }
    let mut compared = 0;
    for (k, &o) in observers.iter().enumerate() {
        let from_table = View::from_table(&table, o, &vp).unwrap();
        // The same nodes in view (range measured eye to eye in both).
        let a: Vec<u32> = from_table.targets.iter().map(|t| t.0).collect();
        let b: Vec<u32> = traced[k].targets.iter().map(|t| t.0).collect();
        assert_eq!(a, b, "observer {o}");
        for (x, y) in from_table.targets.iter().zip(&traced[k].targets) {
            assert!((x.1 - y.1).abs() <= 1e-6 * x.1.max(1.0));
        }
        if let Some(g) = &gpu_views {
            assert_eq!(g[k], traced[k], "observer {o}: GPU and CPU views differ");
        }
        compared += a.len();
    }
    assert!(compared > 100, "{compared}");
    // Rates follow ACQUIRE's P_inf / tau: a standing soldier in the open is all but certain to
    // be seen within these ranges (P_inf = 1); at kilometres, or in low contrast, less so.
    let top = 1.0 / vp.acquire.tau_seconds;
    assert!((vp.rate_at(5.0) - top).abs() < 1e-6 && (vp.rate_at(30.0) - top).abs() < 1e-6);
    assert!(vp.rate_at(5000.0) < 0.5 * top);
    assert!(vp.rate(1e-4, 0.003) < vp.rate(1e-4, 0.3));
    // Intervis records from a table of another posture are refused, with the fix.
    let mut with_iv = table.clone();
    with_iv.intervis = Some(tables::IntervisTable::default());
    let prone = ViewParams {
        posture: Posture::Prone,
        ..vp
    };
    let msg = View::from_table(&with_iv, 0, &prone)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("--posture prone"), "{msg}");
    assert!(View::from_table(&table, graph.len() as u32, &vp).is_err());
    assert!(View::from_engine(&cpu, &scene, &graph, &[Vec3::NAN], &vp).is_err());
}

/// The search's choice against a brute-force oracle on the urban block (a scene the model was
/// not tuned on): for members at random nodes and random threat maps, the oracle sums the map
/// over every node the line-of-sight bits mark visible (not the sees lists the views read),
/// sector by sector, and the searcher must pick its most threatening sector every time.
#[test]
fn search_choices_match_a_brute_force_oracle_on_urban() {
    let scene = procedural::urban(1, 1);
    let cpu = Engine::cpu();
    let (graph, _) = nav::generate(
        &cpu,
        &scene,
        &NavParams::with_spacing(4.0),
        &CostParams::standard(),
    )
    .unwrap();
    let range = 60.0;
    let params = PrecomputeParams {
        range: Some(range),
        ..PrecomputeParams::default()
    };
    let table = nav::precompute(
        &cpu,
        &scene,
        "urban",
        &graph,
        &params,
        None,
        None,
        |_, _, _| {},
    )
    .unwrap();
    let vp = ViewParams {
        range,
        ..ViewParams::standard()
    };
    let nodes = graph.nodes();
    let mut rng = SplitMix64(21);
    let mut set = TpmSet::new(&graph, 1, TpmParams::standard()).unwrap();
    let (mut cases, mut agree) = (0, 0);
    for _ in 0..200 {
        random_values(&mut set, rng.next_u64());
        let o = (rng.next_u64() % graph.len() as u64) as u32;
        let view = View::from_table(&table, o, &vp).unwrap();
        let eye = nodes[o as usize] + Vec3::Y * 1.7;
        let mut oracle = [0.0f64; 8];
        for j in 0..graph.len() as u32 {
            let p = nodes[j as usize];
            let (dx, dz) = (p.x - eye.x, p.z - eye.z);
            if j == o || !table.los.visible(o, j) || eye.distance(p + Vec3::Y * 1.7) > range {
                continue;
            }
            if dx * dx + dz * dz < 0.25 {
                continue;
            }
            let yaw = dz.atan2(dx).rem_euclid(std::f32::consts::TAU);
            let s = ((yaw / std::f32::consts::TAU * 8.0) as usize).min(7);
            oracle[s] += f64::from(set.get(0, j));
        }
        if oracle.iter().all(|&t| t == 0.0) {
            continue;
        }
        let best = (0..8)
            .max_by(|&a, &b| oracle[a].total_cmp(&oracle[b]))
            .unwrap();
        let mut s = Searcher::new(SearchParams::standard(), rng.next_u64()).unwrap();
        let mut probe = set.clone();
        let gaze = s
            .frame(
                &mut probe,
                nodes,
                &[Member {
                    tpm: 0,
                    view: &view,
                }],
            )
            .unwrap()[0];
        cases += 1;
        // Agreement up to float summation order: the chosen sector's oracle threat is the
        // oracle's maximum within rounding.
        if oracle[gaze.sector as usize] >= oracle[best] * (1.0 - 1e-5) {
            agree += 1;
        }
    }
    println!("search vs brute-force oracle on urban: {agree} of {cases} choices agree");
    assert!(cases > 150, "{cases}");
    assert_eq!(agree, cases);
}
