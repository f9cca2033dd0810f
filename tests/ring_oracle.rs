//! Is the ring graph's cover choice one a soldier would agree with? On `sniper`, a level the
//! ring graph was never tuned on, seeded random situations (a point of interest on walkable
//! ground, four threats 15-45 m away) are answered by the default take-cover score and by an
//! exhaustive search: every walkable place of the surface within the radius, reached by
//! Dijkstra over the surface's links, tested for cover from every threat by its own rays.
//!
//! The choice holds when it is in cover by the oracle's rays and the walk to it (on the
//! surface, by the oracle's Dijkstra) is at most 1.5 times the walk to the nearest covered
//! place plus 5 m (the ring graph sees the ground at its node
//! spacing, not at 0.25 m). The test prints how often it holds. Measured: 20 of 30. Of the
//! ten misses, six are situations where the ring graph has no node in cover although the
//! surface has covered places (small pockets between the nodes, which stand up to 10 m apart
//! on the outer rings), four a covered node further than the bound. The test requires 60 %
//! (18 of 30) so a change that makes choices worse fails.

use glam::Vec3;
use sightline::nav::{NavParams, WalkSurface};
use sightline::ring::{Design, RingGraph, RingParams, Score, Shooter, Situation};
use sightline::scene::procedural;
use sightline::{Engine, Mask, Segment};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
}

#[test]
fn the_cover_choice_holds_against_an_exhaustive_search() {
    let scene = procedural::sniper(1, 1);
    let e = Engine::cpu();
    let surface = WalkSurface::build(&e, &scene, &NavParams::standard()).unwrap();
    let params = RingParams::standard();
    let mut rng = Lcg(7);
    let (mut asked, mut held, mut answered, mut oracle_none) = (0, 0, 0, 0);
    let mut ratios = Vec::new();
    while asked < 30 {
        let start = rng.next() % surface.len() as u32;
        let at = surface.position(start);
        let threats: Vec<Shooter> = (0..4)
            .map(|k| {
                let a =
                    (rng.next() % 3600) as f32 / 3600.0 * std::f32::consts::TAU + k as f32 * 1.57;
                let d = 15.0 + (rng.next() % 30) as f32;
                Shooter::at(at + Vec3::new(d * a.cos(), 1.6, d * a.sin()))
            })
            .collect();
        let Ok(graph) = RingGraph::build(&surface, at, &params, &Design::default()) else {
            continue;
        };
        if graph.len() < 100 {
            continue; // a closed room or a roof: nothing to choose between
        }
        asked += 1;
        let s = Situation::new(threats.clone());
        let scores = graph.score(&e, &scene, &s, &Score::take_cover()).unwrap();

        // The oracle: Dijkstra over the surface within the radius, cover by its own rays.
        let centre = graph.nodes()[0].place;
        let mut dist = vec![f32::INFINITY; surface.len()];
        dist[centre as usize] = 0.0;
        let mut heap = BinaryHeap::from([(Reverse(0u32), centre)]);
        let mut reached = Vec::new();
        while let Some((Reverse(d), u)) = heap.pop() {
            let d = f32::from_bits(d);
            if d > dist[u as usize] {
                continue;
            }
            reached.push(u);
            for &v in surface.links(u) {
                let p = surface.position(v);
                if (p - at).length() > params.radius {
                    continue;
                }
                let nd = d + surface.position(u).distance(p);
                if nd < dist[v as usize] {
                    dist[v as usize] = nd;
                    heap.push((Reverse(nd.to_bits()), v));
                }
            }
        }
        let segs: Vec<Segment> = reached
            .iter()
            .flat_map(|&p| {
                let body = surface.position(p) + Vec3::Y;
                threats.iter().map(move |t| Segment::new(t.eye, body))
            })
            .collect();
        let blocked = e.occluded(&scene, &segs, Mask::FIRE).unwrap();
        let covered = |k: usize| (0..4).all(|t| blocked.get(4 * k + t));
        let nearest = (0..reached.len())
            .filter(|&k| covered(k))
            .map(|k| dist[reached[k] as usize])
            .fold(f32::INFINITY, f32::min);

        match scores.best() {
            None => {
                // No choice: right only when the oracle finds no cover either.
                if nearest.is_infinite() {
                    held += 1;
                    oracle_none += 1;
                }
            }
            Some(b) => {
                answered += 1;
                let node = graph.nodes()[b as usize];
                let body = node.position + Vec3::Y;
                let segs: Vec<Segment> =
                    threats.iter().map(|t| Segment::new(t.eye, body)).collect();
                let in_cover = e.occluded(&scene, &segs, Mask::FIRE).unwrap().count_ones() == 4;
                // How far the agent really walks to it (the oracle's own Dijkstra).
                let walk = dist[node.place as usize];
                ratios.push((walk, nearest));
                if in_cover && walk <= 1.5 * nearest + 5.0 {
                    held += 1;
                }
            }
        }
    }
    println!(
        "ring cover choice on sniper: holds in {held} of {asked} situations ({answered} \
         answered, {oracle_none} where neither finds cover); (ring walk, nearest cover walk) \
         in metres: {ratios:?}"
    );
    assert!(held * 10 >= asked * 6, "held in {held} of {asked}");
}
