//! The sniping qualities against a brute-force oracle on a level they were not tuned on
//! (`village`): for sampled waypoints, every quality in every direction recomputed from scratch
//! by tracing each segment it needs and searching the graph anew, then compared with the
//! table-driven values. The GPU survey gives the same scores as the CPU one.

#[path = "common/gpu.rs"]
mod gpu;

use glam::Vec3;
use sightline::nav::{generate, CostParams, NavGraph, NavParams};
use sightline::terrain::sniping::{Sniping, SnipingParams};
use sightline::terrain::{Direction, Relations, Survey, SurveyParams};
use sightline::trace::SplitMix64;
use sightline::{Engine, Mask, Scene, Segment};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::OnceLock;

fn village() -> &'static (Scene, NavGraph, Survey) {
    static V: OnceLock<(Scene, NavGraph, Survey)> = OnceLock::new();
    V.get_or_init(|| {
        let scene = sightline::scene::procedural::village(7, 1);
        let engine = Engine::cpu();
        let (g, _) = generate(
            &engine,
            &scene,
            &NavParams::standard(),
            &CostParams::standard(),
        )
        .unwrap();
        let label = g.components().label;
        let (g, _) = g
            .subgraph(|i| label[i as usize] == 0, &CostParams::standard())
            .unwrap();
        let s =
            Survey::compute(&engine, &scene, &g, &SurveyParams::standard(), None, None).unwrap();
        (scene, g, s)
    })
}

/// Travel time in seconds from `from` to every node over the open edges (plain Dijkstra).
fn times(rel: &Relations, from: u32) -> Vec<f32> {
    let g = rel.graph();
    let mut t = vec![f32::INFINITY; g.len()];
    let mut heap = BinaryHeap::new();
    t[from as usize] = 0.0;
    heap.push(Reverse((0u32, from)));
    while let Some(Reverse((bits, u))) = heap.pop() {
        let c = f32::from_bits(bits);
        if c > t[u as usize] {
            continue;
        }
        for &(v, e) in g.neighbours(u) {
            let nc = c + g.costs()[e as usize];
            if rel.edge_open(e) && nc < t[v as usize] {
                t[v as usize] = nc;
                heap.push(Reverse((nc.to_bits(), v)));
            }
        }
    }
    t.iter().map(|c| c / rel.params().speed).collect()
}

/// Whether the eye-to-eye segments of `pairs` are clear of `mask`, traced now (lower waypoint
/// first, as the tables trace them).
fn clear(
    engine: &Engine,
    scene: &Scene,
    nodes: &[Vec3],
    pairs: &[(u32, u32)],
    mask: Mask,
) -> Vec<bool> {
    let eye = Vec3::Y * 1.7;
    let segs: Vec<Segment> = pairs
        .iter()
        .map(|&(a, b)| (a.min(b), a.max(b)))
        .map(|(a, b)| Segment::new(nodes[a as usize] + eye, nodes[b as usize] + eye))
        .collect();
    let occ = engine.occluded(scene, &segs, mask).unwrap();
    (0..pairs.len()).map(|i| !occ.get(i)).collect()
}

#[test]
fn sniping_qualities_match_a_brute_force_oracle() {
    let (scene, _, sv) = village();
    let engine = Engine::cpu();
    let rel = &sv.relations;
    let nodes = rel.nodes();
    let n = nodes.len() as u32;
    let p = SnipingParams::standard();
    let s = Sniping::compute(rel, &sv.site(vec![]), &p).unwrap();
    let free: Vec<bool> = sv.movement.iter().map(|m| m.is_plain()).collect();
    let mut rng = SplitMix64(11);
    let mut checked = 0;
    for _ in 0..12 {
        let w = (rng.next_u64() % u64::from(n)) as u32;
        let others: Vec<(u32, u32)> = (0..n).filter(|&j| j != w).map(|j| (w, j)).collect();
        let sight = clear(&engine, scene, nodes, &others, Mask::SIGHT);
        let fire = clear(&engine, scene, nodes, &others, Mask::FIRE);
        let tw = times(rel, w);
        let near_w: Vec<u32> = (0..n).filter(|&m| tw[m as usize] <= p.cover_time).collect();
        let horizon: Vec<u32> = (0..n)
            .filter(|&m| m != w && tw[m as usize] <= 3.0)
            .collect();
        let g_expect = horizon
            .iter()
            .filter(|&&m| sight[(m - u32::from(m > w)) as usize])
            .count() as f32
            / horizon.len().max(1) as f32;
        let pool: Vec<u32> = (0..n).filter(|&m| tw[m as usize] <= 3.0).collect();
        let i_expect =
            pool.iter().filter(|&&m| free[m as usize]).count() as f32 / pool.len() as f32;
        // Per direction: count, B, C, D, E, F sums.
        let mut sums = [[0f64; 6]; 8];
        for (k, &(_, o)) in others.iter().enumerate() {
            let code = u8::from(sight[k]) | u8::from(fire[k]) << 1;
            if code == 0 {
                continue;
            }
            let v = [0.0, 0.5, 0.25, 1.0][code as usize];
            let d = Direction::between(nodes[w as usize], nodes[o as usize]).index();
            let dist = nodes[w as usize].distance(nodes[o as usize]);
            let far = ((dist - 10.0) / 30.0).clamp(0.0, 1.0);
            let to = times(rel, o);
            let cover_pairs: Vec<(u32, u32)> = near_w
                .iter()
                .filter(|&&m| m != o)
                .map(|&m| (o, m))
                .collect();
            let covered = clear(&engine, scene, nodes, &cover_pairs, Mask::FIRE)
                .iter()
                .any(|c| !c);
            let near_o: Vec<u32> = (0..n).filter(|&m| to[m as usize] <= p.cover_time).collect();
            let from_w: Vec<(u32, u32)> = near_o
                .iter()
                .filter(|&&m| m != w)
                .map(|&m| (w, m))
                .collect();
            let exposed = clear(&engine, scene, nodes, &from_w, Mask::FIRE)
                .iter()
                .filter(|c| **c)
                .count()
                + usize::from(near_o.contains(&w));
            let s = &mut sums[d];
            s[0] += 1.0;
            s[1] += f64::from(v * far);
            s[2] += f64::from((tw[o as usize] / p.reach).min(1.0));
            s[3] += f64::from(u8::from(covered));
            s[4] += exposed as f64 / near_o.len() as f64;
            s[5] += f64::from(u8::from(sight[k] && sv.key_nodes.contains(&o)));
        }
        for d in Direction::all() {
            let r = s.row(w, d);
            let e = &sums[d.index()];
            let c = e[0].max(1.0);
            let want = [
                (1.0 - sv.light[w as usize]) as f64,
                e[1] / c,
                e[2] / c,
                e[3] / c,
                e[4] / c,
                e[5] / sv.key_nodes.len().max(1) as f64,
                f64::from(g_expect),
                f64::from(i_expect),
                e[0],
            ];
            let got = [
                r.a_inconspicuous,
                r.b_overlooks_distant,
                r.c_hard_to_reach,
                r.d_cover_nearby,
                r.e_overlooked_exposed,
                r.f_overlooks_keys,
                r.g_approach_observed,
                r.i_moves_freely,
                r.value as f32,
            ];
            for (k, (g, e)) in got.iter().zip(want).enumerate() {
                assert!(
                    (f64::from(*g) - e).abs() <= 1e-4 * e.abs().max(1.0),
                    "waypoint {w} {} quality {k}: table {g}, oracle {e}",
                    d.name()
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 12 * 8);
}

#[test]
fn gpu_survey_rates_like_the_cpu() {
    let (scene, g, sv) = village();
    let Some(gpu) = gpu::gpu_engine() else { return };
    let on_gpu = Survey::compute(&gpu, scene, g, &SurveyParams::standard(), None, None).unwrap();
    let p = SnipingParams::standard();
    let a = Sniping::compute(&sv.relations, &sv.site(vec![]), &p).unwrap();
    let b = Sniping::compute(&on_gpu.relations, &on_gpu.site(vec![]), &p).unwrap();
    let differ = sv
        .relations
        .sight_table()
        .bits()
        .iter()
        .zip(on_gpu.relations.sight_table().bits())
        .map(|(x, y)| (x ^ y).count_ones())
        .sum::<u32>();
    assert_eq!(
        differ,
        0,
        "{differ} of {} sight pairs differ",
        sv.relations.sight_table().bit_count()
    );
    for d in Direction::all() {
        assert_eq!(a.scores(d), b.scores(d), "{}", d.name());
    }
    assert_eq!(sv.light, on_gpu.light);
    // Openings are measured from hit points, which the agreement contract lets move by a few
    // ulps (ARCHITECTURE.md, "Agreement between backends"): the same openings, within 1 mm.
    assert_eq!(sv.keys.len(), on_gpu.keys.len(), "{:?}", on_gpu.keys);
    for (a, b) in sv.keys.iter().zip(&on_gpu.keys) {
        assert!(
            a.kind == b.kind && a.normal == b.normal && a.position.distance(b.position) <= 1e-3,
            "{a:?} on the CPU, {b:?} on the GPU"
        );
    }
}
