//! The two strategies side by side on one engine: the eager one (the GPU's: the batch's
//! visibility traced up front from one flood per observer group, several spots a query
//! measured at once and the answers worked out before the measurement) answers exactly as the
//! lazy one does, rejections, pixels and explored cells included.

use super::{answer, DenseAnswer, DenseParams, DenseQuery, Surface, INTERVIS_AHEAD};
use crate::cover::Agent;
use crate::scene::{procedural, MaterialFlags};
use crate::trace::{Ray, SplitMix64};
use crate::{Engine, Mask, Scene};
use glam::Vec3;

/// A point on walkable, front-facing ground near `(x, z)`, if there is one.
fn ground(engine: &Engine, scene: &Scene, x: f32, z: f32) -> Option<Vec3> {
    let top = Vec3::new(x, 40.0, z);
    let hit = engine
        .closest_hit(scene, &[Ray::new(top, Vec3::NEG_Y, 80.0)], Mask::ANY_SOLID)
        .unwrap()[0]?;
    let walk = scene.materials()[hit.material as usize]
        .flags
        .contains(MaterialFlags::WALKABLE);
    (walk && !hit.back && hit.normal.y > 0.8).then(|| top - Vec3::Y * hit.t)
}

/// `n` agents within 20 m of the origin facing 4 observers: the same 4 for all (two groups:
/// sight and fire), or 4 of each agent's own (a group each).
fn queries(engine: &Engine, scene: &Scene, n: usize, seed: u64, own: bool) -> Vec<DenseQuery> {
    let mut rng = SplitMix64(seed);
    let mut at = |r: f32| loop {
        if let Some(p) = ground(engine, scene, rng.range(-r, r), rng.range(-r, r)) {
            return p;
        }
    };
    let mut observers: Vec<Vec3> = (0..4).map(|_| at(28.0) + Vec3::Y * 1.7).collect();
    (0..n)
        .map(|k| {
            if own {
                observers = (0..4).map(|_| at(28.0) + Vec3::Y * 1.7).collect();
            }
            DenseQuery {
                agent: Agent::soldier(at(20.0)),
                observers: observers.clone(),
                mask: if k % 3 == 0 { Mask::FIRE } else { Mask::SIGHT },
            }
        })
        .collect()
}

#[test]
fn the_eager_strategy_answers_as_the_lazy_one() {
    let engine = Engine::cpu();
    let scene = procedural::village(1, 1);
    let params = DenseParams {
        explored: true,
        ..DenseParams::standard()
    };
    let mut surface = Surface::new();
    let (mut rejected, mut most) = (0, 0);
    // Shared observers (one flood per group, every floor kept), then a group per agent (each
    // flood one floor per cell).
    for (seed, own) in [(3, false), (4, false), (5, true)] {
        let qs = queries(&engine, &scene, 120, seed, own);
        let lazy = answer(&engine, &scene, &mut surface, &qs, &params, false).unwrap();
        let eager = answer(&engine, &scene, &mut surface, &qs, &params, true).unwrap();
        let same = |a: &DenseAnswer, b: &DenseAnswer| {
            a.choice == b.choice
                && a.rejected == b.rejected
                && a.explored == b.explored
                && a.explored_cells == b.explored_cells
        };
        for (k, (a, b)) in lazy.iter().zip(&eager).enumerate() {
            assert!(
                same(a, b),
                "seed {seed}, query {k}: {:?} / {:?}",
                a.choice,
                b.choice
            );
        }
        // Without the list of closed cells, every answer is the same but for it, on either
        // strategy, and keeps its count.
        let bare = DenseParams {
            explored: false,
            ..params
        };
        for gpu in [false, true] {
            let short = answer(&engine, &scene, &mut surface, &qs, &bare, gpu).unwrap();
            let full = if gpu { &eager } else { &lazy };
            for (k, (a, b)) in full.iter().zip(&short).enumerate() {
                assert_eq!(a.explored_cells, a.explored.len(), "query {k}");
                assert!(b.explored.is_empty(), "query {k}");
                let strip = DenseAnswer {
                    explored: Vec::new(),
                    ..a.clone()
                };
                assert_eq!(&strip, b, "seed {seed}, query {k}, eager {gpu}");
            }
        }
        rejected += lazy.iter().map(|a| a.rejected.len()).sum::<usize>();
        most = most.max(lazy.iter().map(|a| a.rejected.len()).max().unwrap_or(0));
        let found = lazy.iter().filter(|a| a.choice.is_some()).count();
        assert!(
            (40..120).contains(&found),
            "seed {seed}: {found} of 120 found cover"
        );
    }
    // Rejections exercise the answers worked out ahead beyond the first spot, and a query
    // with every spot measured at once turned down runs its search again.
    assert!(rejected >= 20, "{rejected} spots turned down");
    assert!(
        most > INTERVIS_AHEAD,
        "at most {most} spots turned down for a query"
    );
}

#[test]
fn a_batch_too_large_for_memory_is_refused_before_its_search() {
    // 4,096 queries of a 500 m radius keeping their closed cells: 16 M cells of 20 bytes each,
    // over a terabyte at worst.
    let wide = DenseParams {
        radius: 500.0,
        explored: true,
        ..DenseParams::standard()
    };
    match super::check_memory(4096, &wide) {
        Err(crate::Error::OutOfMemory { needed, fix, .. }) => {
            assert!(needed > 1 << 40, "{needed} bytes");
            assert!(fix.contains("DenseParams::explored"), "{fix}");
        }
        other => panic!("{other:?}"),
    }
    // The defaults' batch of the same size holds 64 squares of 163 x 163 cells.
    super::check_memory(4096, &DenseParams::standard()).unwrap();
}
