//! Rounds of play on the sniper level that record experience, as in van der Sterren's
//! experiment ("some 40 game rounds were run, with one or two snipers defending the western
//! building, and three or four attackers storming that building from the east side"), then the
//! ratings adjusted with it.
//!
//! Each round, two defenders take sniping spots drawn from the best-rated eastward spots (the
//! first a player, the rest AI), and three attackers walk the shortest path from the east edge
//! to the south-western building's door at 4 m/s. Every second, a defender who sees an attacker
//! snipes at it (damage 40 x (1 - far distance / 2), a hit chance of 0.6) and an attacker who
//! sees a defender fires back (damage 20, a hit chance of 0.3); everything the defenders do is
//! recorded per waypoint and direction, and every attacker step as traffic.
//!
//! ```sh
//! cargo run --release --example sniping_rounds -- experience.json
//! sightline terrain --scene sniper --experience experience.json --csv sniping.csv --png sniping.png
//! ```

use glam::Vec3;
use sightline::nav::{generate, CostParams, NavParams};
use sightline::terrain::experience::{Activity, Actor, Experience, ExperienceParams};
use sightline::terrain::sniping::{Sniping, SnipingParams};
use sightline::terrain::{Direction, Survey, SurveyParams};
use sightline::trace::SplitMix64;
use sightline::Engine;

const ROUNDS: usize = 40;
const DEFENDERS: usize = 2;
const ATTACKERS: usize = 3;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "experience.json".into());
    let engine = Engine::headless();
    let scene = sightline::scene::procedural::sniper(1, 1);
    // The graph `sightline terrain` rates: the largest component of the default nav graph.
    let (g, _) = generate(
        &engine,
        &scene,
        &NavParams::standard(),
        &CostParams::standard(),
    )?;
    let label = g.components().label;
    let (g, _) = g.subgraph(|i| label[i as usize] == 0, &CostParams::standard())?;
    let survey = Survey::compute(&engine, &scene, &g, &SurveyParams::standard(), None, None)?;
    let rel = &survey.relations;
    let east = Direction::EAST;
    let scores =
        Sniping::compute(rel, &survey.site(vec![]), &SnipingParams::standard())?.scores(east);
    let mut best: Vec<u32> = (0..g.len() as u32).collect();
    best.sort_by(|&a, &b| scores[b as usize].total_cmp(&scores[a as usize]));
    best.truncate(g.len() / 20);
    let door = sightline::scene::procedural::sniper_layout().buildings[0].door;
    let goal = g
        .nearest(door + Vec3::new(0.0, 0.0, -1.5))
        .ok_or("no waypoint near the door")?;
    let starts: Vec<u32> = (0..g.len() as u32)
        .filter(|&w| g.nodes()[w as usize].x > 36.0)
        .collect();
    let mut exp = Experience::new(g.nodes())?;
    let mut rng = SplitMix64(2026);
    let mut pick = |n: usize| (rng.next_u64() % n as u64) as usize;
    let (mut issued, mut taken) = (0.0f32, 0.0f32);
    for _ in 0..ROUNDS {
        let defenders: Vec<u32> = (0..DEFENDERS).map(|_| best[pick(best.len())]).collect();
        let paths: Vec<Vec<u32>> = (0..ATTACKERS)
            .map(|_| shortest(rel, starts[pick(starts.len())], goal))
            .collect();
        let seconds = paths.iter().map(Vec::len).max().unwrap_or(0);
        for t in 0..seconds {
            for (k, &d) in defenders.iter().enumerate() {
                let who = if k == 0 { Actor::Player } else { Actor::Ai };
                let mut activity = Activity {
                    seconds: 1.0,
                    ..Activity::default()
                };
                let mut aim = east;
                for path in &paths {
                    let a = path[t.min(path.len() - 1)];
                    if a != d && rel.sight(d, a) {
                        aim = Direction::between(g.nodes()[d as usize], g.nodes()[a as usize]);
                        if pick(10) < 6 {
                            activity.issued += 40.0 * (1.0 - rel.far_distance(d, a) / 2.0);
                        }
                        if rel.fire(a, d) && pick(10) < 3 {
                            activity.taken += 20.0;
                        }
                    }
                }
                issued += activity.issued;
                taken += activity.taken;
                exp.record_sniping(d, aim, who, activity)?;
            }
        }
        for path in &paths {
            for step in path.windows(2) {
                let h =
                    Direction::between(g.nodes()[step[0] as usize], g.nodes()[step[1] as usize]);
                exp.record_traffic(step[0], h, Actor::Ai, 1.0)?;
            }
        }
    }
    exp.save(&out)?;
    let ep = ExperienceParams::standard();
    let adjusted = exp.adjust(&scores, east, &ep);
    let rank = |v: &[f32], w: u32| v.iter().filter(|&&s| s > v[w as usize]).count();
    let mut moved: Vec<(u32, usize, usize)> = (0..g.len() as u32)
        .map(|w| (w, rank(&scores, w), rank(&adjusted, w)))
        .filter(|&(_, a, b)| a != b)
        .collect();
    moved.sort_by_key(|&(_, a, b)| std::cmp::Reverse(a.abs_diff(b)));
    println!(
        "{ROUNDS} rounds: defenders issued {issued:.0} and took {taken:.0} damage; wrote {out}"
    );
    for (w, a, b) in moved.iter().take(5) {
        let p = g.nodes()[*w as usize];
        println!(
            "  waypoint {w} at ({:.1}, {:.1}): rank {a} before, {b} after",
            p.x, p.z
        );
    }
    Ok(())
}

/// The waypoints of a shortest walk from `a` to `b`, one per second of walking (waypoints
/// repeat while a long edge is walked).
fn shortest(rel: &sightline::terrain::Relations, a: u32, b: u32) -> Vec<u32> {
    let g = rel.graph();
    let path = pathfinding::prelude::dijkstra(
        &a,
        |&u| {
            g.neighbours(u)
                .iter()
                .filter(|&&(_, e)| rel.edge_open(e))
                .map(|&(v, e)| (v, (g.costs()[e as usize] * 1000.0) as u64))
                .collect::<Vec<_>>()
        },
        |&u| u == b,
    );
    let Some((nodes, _)) = path else {
        return vec![a];
    };
    let speed = rel.params().speed;
    let mut out = vec![nodes[0]];
    let mut walked = 0.0;
    for step in nodes.windows(2) {
        walked += g.nodes()[step[0] as usize].distance(g.nodes()[step[1] as usize]) / speed;
        while (out.len() as f32) < walked {
            out.push(step[1]);
        }
    }
    out
}
