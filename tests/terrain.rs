//! Terrain reasoning: each quality on tiny hand-made graphs with hand-computed answers, the
//! directions and levelling, experience files, and the tactics ratings.

use glam::Vec3;
use sightline::nav::{CostParams, NavGraph};
use sightline::tables::{Edge, EdgeKinds, LosTable};
use sightline::terrain::experience::{Activity, Actor, Experience, ExperienceParams, Levelling};
use sightline::terrain::sniping::{Site, Sniping, SnipingParams};
use sightline::terrain::tactics::{self, TacticsParams, Traffic};
use sightline::terrain::{Direction, RelationParams, Relations};

/// A graph of `nodes` chained in order by straight edges, with line of sight and fire exactly
/// between `sight` pairs and `fire` pairs.
fn chain(nodes: &[Vec3], order: &[u32], sight: &[(u32, u32)], fire: &[(u32, u32)]) -> Relations {
    let edges: Vec<Edge> = order
        .windows(2)
        .map(|p| Edge {
            a: p[0].min(p[1]),
            b: p[0].max(p[1]),
            kinds: EdgeKinds::NONE,
            length: nodes[p[0] as usize].distance(nodes[p[1] as usize]),
        })
        .collect();
    let n = nodes.len() as u32;
    let g = NavGraph::new(nodes.to_vec(), edges.clone(), &CostParams::standard()).unwrap();
    Relations::from_tables(
        g,
        vec![false; edges.len()],
        LosTable::from_pairs(n, sight.iter().copied()).unwrap(),
        LosTable::from_pairs(n, fire.iter().copied()).unwrap(),
        &RelationParams::standard(),
    )
    .unwrap()
}

fn x(v: f32) -> Vec3 {
    Vec3::new(v, 0.0, 0.0)
}

/// w0 at the origin; w1, w2, w3 east at 5, 20 and 45 m; w4 west at 10 m. Chained 4-0-1-2-3.
/// w0 sees and can shoot at w1, w2, w3; nothing else sees anything.
fn line() -> Relations {
    let nodes = [x(0.0), x(5.0), x(20.0), x(45.0), x(-10.0)];
    let pairs = [(0, 1), (0, 2), (0, 3)];
    chain(&nodes, &[4, 0, 1, 2, 3], &pairs, &pairs)
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() < 1e-5
}

#[test]
fn relations_of_the_line() {
    let r = line();
    assert!(r.sight(0, 3) && r.fire(3, 0) && !r.sight(1, 2) && !r.fire(0, 4));
    assert_eq!(r.los_lof(0, 2), 1.0);
    assert_eq!(r.los_lof(1, 2), 0.0);
    // Far distance: 0 up to 10 m, 1 from 40 m.
    assert_eq!(r.far_distance(0, 1), 0.0);
    assert!(close(r.far_distance(0, 2), 1.0 / 3.0));
    assert_eq!(r.far_distance(0, 3), 1.0);
    // Travel at 4 m/s; the 3 s horizon holds 12 m of path.
    assert_eq!(r.travel_time(3, 4), Some(55.0 / 4.0));
    let h: Vec<u32> = r.within_horizon(0).iter().map(|p| p.0).collect();
    assert_eq!(h, [0, 1, 4]);
    assert_eq!(r.within_horizon(0)[2].1, 2.5);
    let east: Vec<u32> = r.interactions(0).iter().map(|i| i.other).collect();
    assert_eq!(east, [1, 2, 3]);
    assert!(r
        .interactions(0)
        .iter()
        .all(|i| i.sector == Direction::EAST));
}

#[test]
fn each_sniping_quality_on_the_line() {
    let r = line();
    let site = Site {
        light: vec![0.2, 0.5, 0.5, 0.5, 0.5],
        free: vec![true, false, true, true, true],
        keys: vec![3],
        traffic: vec![0.0, 0.0, 2.0, 4.0, 1.0],
    };
    let s = Sniping::compute(&r, &site, &SnipingParams::standard()).unwrap();
    let q = s.row(0, Direction::EAST);
    // A: 1 - light.
    assert!(close(q.a_inconspicuous, 0.8));
    // B: (0 x 1 + 1/3 x 1 + 1 x 1) / 3 overlooked.
    assert!(close(q.b_overlooks_distant, (1.0 / 3.0 + 1.0) / 3.0));
    // C: travel 1.25, 5 and 11.25 s over a 20 s reach.
    assert!(close(q.c_hard_to_reach, (1.25 + 5.0 + 11.25) / 20.0 / 3.0));
    // D: within 2 s of w0 are w0 and w1. From w1 both are in its line of fire; from w2 and
    // w3, w1 is out of it: cover from 2 of 3.
    assert!(close(q.d_cover_nearby, 2.0 / 3.0));
    // E: every overlooked spot has nothing within 2 s that w0 cannot shoot at.
    assert!(close(q.e_overlooked_exposed, 1.0));
    // F: the one key location (w3) is seen.
    assert!(close(q.f_overlooks_keys, 1.0));
    // G: within the horizon are w1 (seen) and w4 (not).
    assert!(close(q.g_approach_observed, 0.5));
    // H: 3 x 3 forward, nothing behind: divide by one.
    assert_eq!(q.h_focus, 9.0);
    assert_eq!(q.value, 3);
    // I: w0, w1 (not free), w4 within the horizon.
    assert!(close(q.i_moves_freely, 2.0 / 3.0));
    // Traffic: (1/3 x 2 + 1 x 4) / 7.
    assert!(close(q.traffic, (2.0 / 3.0 + 4.0) / 7.0));
    let directional = q.b_overlooks_distant
        + q.c_hard_to_reach
        + q.d_cover_nearby
        + q.e_overlooked_exposed
        + q.f_overlooks_keys
        + q.traffic;
    let properties = q.a_inconspicuous + q.g_approach_observed + q.i_moves_freely;
    assert!(close(q.score, properties + 9.0 * directional));
    // West: nothing overlooked, so only the properties count.
    let w = s.row(0, Direction::WEST);
    assert_eq!((w.value, w.h_focus), (0, 0.0));
    assert!(close(w.score, properties));
    // Weights scale their term only.
    let mut p = SnipingParams::standard();
    p.d = 3.0;
    let heavier = Sniping::compute(&r, &site, &p)
        .unwrap()
        .row(0, Direction::EAST);
    assert!(close(heavier.score, q.score + 9.0 * 2.0 * q.d_cover_nearby));
}

#[test]
fn sight_without_fire_counts_half() {
    let nodes = [x(0.0), x(30.0), x(60.0)];
    // w0 sees w1 through glass (sight, no fire) and shoots w2 through foliage (fire, no sight).
    let r = chain(&nodes, &[0, 1, 2], &[(0, 1)], &[(0, 2)]);
    assert_eq!(r.los_lof(0, 1), 0.5);
    assert_eq!(r.los_lof(0, 2), 0.25);
    let s = Sniping::compute(&r, &Site::default(), &SnipingParams::standard()).unwrap();
    let q = s.row(0, Direction::EAST);
    assert_eq!(q.value, 2);
    // far(30 m) = 2/3, far(60 m) = 1.
    assert!(close(q.b_overlooks_distant, (0.5 * 2.0 / 3.0 + 0.25) / 2.0));
}

#[test]
fn focus_rewards_a_protected_back() {
    // w0 and w1 both overlook three waypoints to the east; w1 is also seen from two waypoints
    // to its west. Everything else equal, w0 rates higher.
    let nodes = [
        Vec3::new(0.0, 0.0, -3.0),
        Vec3::new(0.0, 0.0, 3.0),
        x(30.0),
        Vec3::new(30.0, 0.0, 6.0),
        Vec3::new(30.0, 0.0, -6.0),
        Vec3::new(-30.0, 0.0, 3.0),
        Vec3::new(-30.0, 0.0, 9.0),
    ];
    let mut pairs = vec![
        (0, 2),
        (0, 3),
        (0, 4),
        (1, 2),
        (1, 3),
        (1, 4),
        (1, 5),
        (1, 6),
    ];
    pairs.sort();
    let r = chain(&nodes, &[6, 5, 1, 0, 2, 3, 4], &pairs, &pairs);
    let s = Sniping::compute(&r, &Site::default(), &SnipingParams::standard()).unwrap();
    let (a, b) = (s.row(0, Direction::EAST), s.row(1, Direction::EAST));
    assert_eq!((a.h_focus, b.h_focus), (9.0, 4.5));
    assert!(a.score > b.score);
}

#[test]
fn levelling_keeps_order() {
    let xs = [-50.0f32, -3.0, -0.5, 0.0, 0.2, 1.0, 7.0, 1e4];
    for l in [Levelling::Log, Levelling::Sqrt, Levelling::None] {
        let ys: Vec<f32> = xs.iter().map(|&x| l.apply(x)).collect();
        assert!(ys.windows(2).all(|p| p[0] < p[1]), "{l:?}: {ys:?}");
        assert_eq!(l.apply(0.0), 0.0);
    }
    assert!(close(Levelling::Log.apply(std::f32::consts::E - 1.0), 1.0));
    assert_eq!(Levelling::Sqrt.apply(-16.0), -4.0);
}

#[test]
fn experience_adjusts_and_round_trips() {
    let r = line();
    let ep = ExperienceParams::standard();
    let mut e = Experience::new(r.nodes()).unwrap();
    // The player snipes east from w1 for two minutes, issuing 300 damage and taking 100; the
    // AI from w2 for a minute, taking 200.
    let east = Direction::EAST;
    e.record_sniping(
        1,
        east,
        Actor::Player,
        Activity {
            seconds: 120.0,
            issued: 300.0,
            taken: 100.0,
        },
    )
    .unwrap();
    e.record_sniping(
        2,
        east,
        Actor::Ai,
        Activity {
            seconds: 60.0,
            issued: 0.0,
            taken: 200.0,
        },
    )
    .unwrap();
    // The paper's sum, actors weighted: 3 x (0.05 x 120 + 0.02 x 200) = 30; 1 x (3 - 4) = -1.
    assert!(close(e.sniping_experience(1, east, &ep), 30.0f32.ln_1p()));
    assert!(close(e.sniping_experience(2, east, &ep), -(1.0f32.ln_1p())));
    assert_eq!(e.sniping_experience(0, east, &ep), 0.0);
    let base = vec![10.0; 5];
    let adjusted = e.adjust(&base, east, &ep);
    assert!(adjusted[1] > adjusted[0] && adjusted[0] > adjusted[2]);
    e.record_traffic(3, Direction::WEST, Actor::Ai, 4.0)
        .unwrap();
    e.record_traffic(3, Direction::NORTH, Actor::Player, 1.0)
        .unwrap();
    assert!(close(e.traffic(&ep)[3], 7.0f32.ln_1p()));
    // The file reads back equal, for the same waypoints only.
    let dir = std::env::temp_dir().join(format!("sightline-exp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("exp.json");
    e.save(&path).unwrap();
    assert_eq!(Experience::load(&path, r.nodes()).unwrap(), e);
    let moved: Vec<Vec3> = r.nodes().iter().map(|p| *p + Vec3::X).collect();
    let err = Experience::load(&path, &moved).unwrap_err().to_string();
    assert!(
        err.contains("other waypoints") && err.contains("exp.json"),
        "{err}"
    );
    std::fs::write(
        &path,
        "{\"format\": \"sightline-experience\", \"version\": 1, \"waypoints\": 5}",
    )
    .unwrap();
    assert!(Experience::load(&path, r.nodes()).is_err());
    std::fs::write(&path, "not json").unwrap();
    assert!(Experience::load(&path, r.nodes())
        .unwrap_err()
        .to_string()
        .contains("not JSON"));
    // Bad records are refused.
    assert!(e
        .record_sniping(9, east, Actor::Ai, Activity::default())
        .is_err());
    assert!(e.record_traffic(0, east, Actor::Ai, f32::NAN).is_err());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn traffic_rerun_favours_spots_overlooking_traffic() {
    // Two identical spots, w0 looking at w2 and w1 looking at w3; only w3 carries traffic.
    let nodes = [
        Vec3::new(0.0, 0.0, -20.0),
        Vec3::new(0.0, 0.0, 20.0),
        Vec3::new(40.0, 0.0, -20.0),
        Vec3::new(40.0, 0.0, 20.0),
    ];
    let pairs = [(0, 2), (1, 3)];
    let r = chain(&nodes, &[2, 0, 1, 3], &pairs, &pairs);
    let p = SnipingParams::standard();
    let before = Sniping::compute(&r, &Site::default(), &p)
        .unwrap()
        .scores(Direction::EAST);
    assert!(close(before[0], before[1]));
    let mut e = Experience::new(r.nodes()).unwrap();
    e.record_traffic(3, Direction::NORTH, Actor::Player, 30.0)
        .unwrap();
    let site = Site {
        traffic: e.traffic(&ExperienceParams::standard()),
        ..Site::default()
    };
    let after = Sniping::compute(&r, &site, &p)
        .unwrap()
        .scores(Direction::EAST);
    assert!(
        after[1] > after[0] && close(after[0], before[0]),
        "{before:?} {after:?}"
    );
}

#[test]
fn ambush_prefers_hidden_spots_over_crossing_traffic() {
    // w0 and w1 overlook the road waypoint w2, 10 m east; w1 is also seen from w3 behind it.
    let nodes = [
        Vec3::new(0.0, 0.0, -2.0),
        Vec3::new(0.0, 0.0, 2.0),
        x(10.0),
        Vec3::new(-20.0, 0.0, 2.0),
    ];
    let pairs = [(0, 2), (1, 2), (1, 3)];
    let r = chain(&nodes, &[3, 1, 0, 2], &pairs, &pairs);
    // Traffic at w2 crosses the attack direction (heading north).
    let mut t = Traffic {
        by_heading: vec![[0.0; 8]; 4],
    };
    t.by_heading[2][Direction::NORTH.index()] = 5.0;
    let p = TacticsParams::standard();
    let a = tactics::ambush(&r, &t, Direction::EAST, &p).unwrap();
    assert_eq!((a[0].hidden, a[1].hidden), (1.0, 0.5));
    assert_eq!((a[0].nearby, a[0].traffic), (1.0, 1.0));
    assert!(a[0].score > a[1].score);
    // Traffic coming straight at the ambusher (heading west) does not count.
    t.by_heading[2] = [0.0; 8];
    t.by_heading[2][Direction::WEST.index()] = 5.0;
    assert_eq!(
        tactics::ambush(&r, &t, Direction::EAST, &p).unwrap()[0].traffic,
        0.0
    );
    // Traffic moving away counts in full.
    t.by_heading[2] = [0.0; 8];
    t.by_heading[2][Direction::EAST.index()] = 5.0;
    assert_eq!(
        tactics::ambush(&r, &t, Direction::EAST, &p).unwrap()[0].traffic,
        1.0
    );
    // Estimated traffic follows shortest paths: every trip between the ends passes w1 and w0.
    let est = Traffic::estimate(&r, 200, 7).unwrap();
    let totals = est.totals();
    assert!(totals[0] > 0.0 && totals[1] > 0.0);
    assert_eq!(est, Traffic::estimate(&r, 200, 7).unwrap());
}

#[test]
fn strongholds_rate_areas_by_outside_interactions_only() {
    // Area 0: w0, w1 see each other and, from w0, the outside waypoint w2. Area 1: w2, w3
    // see each other only.
    let nodes = [x(0.0), x(3.0), x(30.0), x(33.0)];
    let pairs = [(0, 1), (0, 2), (2, 3)];
    let r = chain(&nodes, &[0, 1, 2, 3], &pairs, &pairs);
    let p = TacticsParams::standard();
    let s = tactics::strongholds(&r, &[0, 0, 1, 1], &p).unwrap();
    // w1 interacts with nobody outside its area: no overview.
    assert_eq!(s[1].combat.overview, 0.0);
    assert_eq!(s[0].combat.overview, 1.0);
    assert!(close(
        s[0].area_rating,
        (s[0].combat.score + s[1].combat.score) / 2.0
    ));
    assert!(close(s[2].area_rating, s[3].area_rating));
    // The whole-level combat rating counts the inside interactions too.
    let c = tactics::combat(&r, &p).unwrap();
    assert!(c[1].overview > 0.0);
    assert!(tactics::strongholds(&r, &[0, 0, 1], &p).is_err());
}

#[test]
fn sentry_counts_field_of_fire_and_keys() {
    let r = line();
    let s = tactics::sentry(&r, &[3], &TacticsParams::standard()).unwrap();
    // Within 15 m of w0 are w1 (shot) and w4 (not).
    assert_eq!(s[0].field_of_fire, 0.5);
    assert_eq!(s[0].keys, 1.0);
    assert_eq!(s[4].keys, 0.0);
    assert!(tactics::sentry(&r, &[9], &TacticsParams::standard()).is_err());
}

#[test]
fn bad_parameters_are_errors() {
    let r = line();
    let mut p = SnipingParams::standard();
    p.reach = f32::NAN;
    assert!(Sniping::compute(&r, &Site::default(), &p).is_err());
    let site = Site {
        light: vec![0.5; 3],
        ..Site::default()
    };
    assert!(Sniping::compute(&r, &site, &SnipingParams::standard()).is_err());
    let site = Site {
        keys: vec![99],
        ..Site::default()
    };
    assert!(Sniping::compute(&r, &site, &SnipingParams::standard()).is_err());
    let mut rp = RelationParams::standard();
    rp.horizon = -1.0;
    assert!(rp.validate().is_err());
    assert!(LosTable::from_pairs(3, [(1, 1)]).is_err());
    assert!(Direction::parse("upward").is_err());
}
