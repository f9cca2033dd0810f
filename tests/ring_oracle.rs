//! Is the ring graph's cover choice one a soldier would agree with? On three built-in levels,
//! seeded random situations (a point of interest on walkable ground, four threats 15-45 m
//! away) are answered by the default take-cover score and by an exhaustive search: every
//! walkable place of the surface within the radius, reached by Dijkstra over the surface's
//! links, tested for cover from every threat by its own rays.
//!
//! The choice holds when it is in cover by the oracle's rays and the walk to it (on the
//! surface, by the oracle's Dijkstra) is at most 1.5 times the walk to the nearest covered
//! place plus 5 m (the ring graph sees the ground at its node spacing, not at 0.25 m).
//!
//! - `sniper` (the level the joining of cut-off parts was developed on): measured 30 of 30.
//!   Before the joining and the storey rule, 22 of 30: all eight misses had covered nodes
//!   the centre could not reach along the graph (the creek bed below its stairs, the far bank
//!   past the bridge, a house behind its door, a house's floor under nodes put on its roof),
//!   so the choice fell on a far node or on none.
//! - `urban` (held out from the joining: measured once that method was settled, never tuned
//!   on; its own 30 situations, generated the same way): measured 30 of 30; 23 of 30 before
//!   the joining, 26 with it. In each of the four misses left by the joining the nearest cover
//!   was on a stair flight of a building (the centre on an upper floor or roof, or in the
//!   street before a doorway) that no straight walk and no joining follower found, so the
//!   graph had no node there the centre reached. The wall followers that explore from the
//!   centre's part (`RingParams::explore`) follow the walls to the flights and down or up
//!   them; with them off, 26 of 30 again. On three other sets of 30 (other situation seeds
//!   and other `urban` layouts, not part of the test): 29, 29 and 29 of 30 without exploring,
//!   30, 30 and 30 with it.
//! - `village` (held out from both: measured, never tuned on): 27 of 30 with and without
//!   exploring. In the three misses the graph has no node in cover at all: the nearest cover
//!   is 33-47 m away, behind things the outer rings' nodes (about 10 m apart there) miss.
//!
//! Each test requires two fewer than measured, so a change that makes choices worse fails.

use glam::Vec3;
use sightline::nav::{NavParams, WalkSurface};
use sightline::ring::{Design, RingGraph, RingParams, Score, Shooter, Situation};
use sightline::scene::procedural;
use sightline::{Engine, Mask, Scene, Segment};
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

/// How the ring graph's choices fared in `n` situations.
#[derive(Debug, Default)]
struct Tally {
    asked: u32,
    held: u32,
    answered: u32,
    oracle_none: u32,
    /// (ring walk, nearest cover walk) in metres, for answered situations.
    walks: Vec<(f32, f32)>,
}

/// Dijkstra over the surface's links from `centre`, within `radius` of `at`: the walk to
/// every place, and the places reached in order.
fn oracle_walks(surface: &WalkSurface, centre: u32, at: Vec3, radius: f32) -> (Vec<f32>, Vec<u32>) {
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
            if (p - at).length() > radius {
                continue;
            }
            let nd = d + surface.position(u).distance(p);
            if nd < dist[v as usize] {
                dist[v as usize] = nd;
                heap.push((Reverse(nd.to_bits()), v));
            }
        }
    }
    (dist, reached)
}

/// The walk to the nearest place in cover from every threat (infinite: none).
fn nearest_cover(
    e: &Engine,
    scene: &Scene,
    threats: &[Shooter],
    reached: &[u32],
    dist: &[f32],
    surface: &WalkSurface,
) -> f32 {
    let segs: Vec<Segment> = reached
        .iter()
        .flat_map(|&p| {
            let body = surface.position(p) + Vec3::Y;
            threats.iter().map(move |t| Segment::new(t.eye, body))
        })
        .collect();
    let blocked = e.occluded(scene, &segs, Mask::FIRE).unwrap();
    let n = threats.len();
    (0..reached.len())
        .filter(|&k| (0..n).all(|t| blocked.get(n * k + t)))
        .map(|k| dist[reached[k] as usize])
        .fold(f32::INFINITY, f32::min)
}

fn cover_choice(scene: &Scene, situations: u32) -> Tally {
    let e = Engine::cpu();
    let surface = WalkSurface::build(&e, scene, &NavParams::standard()).unwrap();
    let params = RingParams::standard();
    let mut rng = Lcg(7);
    let mut t = Tally::default();
    while t.asked < situations {
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
        t.asked += 1;
        let s = Situation::new(threats.clone());
        let scores = graph.score(&e, scene, &s, &Score::take_cover()).unwrap();
        let centre = graph.nodes()[0].place;
        let (dist, reached) = oracle_walks(&surface, centre, at, params.radius);
        let nearest = nearest_cover(&e, scene, &threats, &reached, &dist, &surface);
        let Some(b) = scores.best() else {
            // No choice: right only when the oracle finds no cover either.
            if nearest.is_infinite() {
                t.held += 1;
                t.oracle_none += 1;
            }
            continue;
        };
        t.answered += 1;
        let node = graph.nodes()[b as usize];
        let body = node.position + Vec3::Y;
        let segs: Vec<Segment> = threats.iter().map(|t| Segment::new(t.eye, body)).collect();
        let in_cover = e.occluded(scene, &segs, Mask::FIRE).unwrap().count_ones() == 4;
        // How far the agent really walks to it (the oracle's own Dijkstra).
        let walk = dist[node.place as usize];
        t.walks.push((walk, nearest));
        if in_cover && walk <= 1.5 * nearest + 5.0 {
            t.held += 1;
        }
    }
    t
}

fn report(name: &str, t: &Tally) {
    println!(
        "ring cover choice on {name}: holds in {} of {} situations ({} answered, {} where \
         neither finds cover); (ring walk, nearest cover walk) in metres: {:?}",
        t.held, t.asked, t.answered, t.oracle_none, t.walks
    );
}

#[test]
fn the_cover_choice_holds_against_an_exhaustive_search() {
    let t = cover_choice(&procedural::sniper(1, 1), 30);
    report("sniper", &t);
    assert!(t.held >= 28, "held in {} of {}", t.held, t.asked);
}

#[test]
fn the_cover_choice_holds_on_a_level_it_was_not_tuned_on() {
    let t = cover_choice(&procedural::urban(1, 1), 30);
    report("urban", &t);
    assert!(t.held >= 28, "held in {} of {}", t.held, t.asked);
}

#[test]
fn the_cover_choice_holds_on_a_level_never_tuned_on() {
    let t = cover_choice(&procedural::village(1, 1), 30);
    report("village", &t);
    assert!(t.held >= 25, "held in {} of {}", t.held, t.asked);
}
