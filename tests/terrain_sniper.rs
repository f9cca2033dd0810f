//! Terrain reasoning on the built-in copy of van der Sterren's sniper level (*Terrain Reasoning
//! for 3D Action Games*, "The Terrain"; east is +X): the relations on both backends, door
//! patches against full recomputes, and where the top sniping spots fall.

#[path = "common/contract.rs"]
mod contract;
#[path = "common/gpu.rs"]
mod gpu;

use glam::Vec3;
use sightline::nav::{generate, CostParams, NavGraph, NavParams};
use sightline::scene::procedural::{sniper, sniper_layout};
use sightline::terrain::experience::{Activity, Actor, Experience};
use sightline::terrain::patch::DoorPatch;
use sightline::terrain::sniping::{Sniping, SnipingParams};
use sightline::terrain::{Direction, RelationParams, Relations, Survey, SurveyParams};
use sightline::{Engine, Mask, Scene};
use std::sync::OnceLock;

fn level() -> &'static (Scene, NavGraph) {
    static L: OnceLock<(Scene, NavGraph)> = OnceLock::new();
    L.get_or_init(|| {
        let scene = sniper(1, 1);
        let (g, _) = generate(
            &Engine::cpu(),
            &scene,
            &NavParams::standard(),
            &CostParams::standard(),
        )
        .unwrap();
        (scene, g)
    })
}

/// The GPU and the fused CPU twins against the plain twin, by the agreement contract: a sight
/// pair may differ only where its eye-to-eye segment grazes a triangle edge (on an NVIDIA H100,
/// 20 of 902,496 pairs did, moved by fused multiply-adds).
#[test]
fn relations_agree_across_backends() {
    let (scene, g) = level();
    let p = RelationParams::standard();
    let cpu = Relations::compute(&Engine::cpu(), scene, g, &p).unwrap();
    let tris = contract::triangles(scene, Mask::SIGHT);
    let lift = Vec3::Y * p.eye_height;
    for (name, other) in gpu::twins() {
        let theirs = Relations::compute(&other, scene, g, &p).unwrap();
        if name == "gpu" {
            // Every pair went through the los_table kernel, none as an uploaded segment.
            let counters = other.counters();
            let (los, segments) = (
                counters.operation("los_table"),
                counters.operation("occluded"),
            );
            assert!(
                los.submissions > 0 && segments.submissions == 0,
                "{los}; {segments}"
            );
        }
        let (a, b) = (cpu.sight_table(), theirs.sight_table());
        let n = cpu.len() as u32;
        let mut differ = 0;
        for i in 0..n {
            for j in i + 1..n {
                if a.visible(i, j) == b.visible(i, j) {
                    continue;
                }
                differ += 1;
                let (x, y) = (
                    cpu.nodes()[i as usize] + lift,
                    cpu.nodes()[j as usize] + lift,
                );
                assert!(
                    contract::near_boundary(&tris, x, y),
                    "{name}: pair {i}-{j} differs but its sight line passes clear of every edge"
                );
            }
        }
        eprintln!("{name}: {differ} of {} pairs differ", a.bit_count());
        assert!(
            differ * 10_000 <= a.bit_count() as usize,
            "{name}: {differ} pairs differ"
        );
        if differ == 0 {
            assert_eq!(cpu, theirs, "{name}");
        }
    }
}

#[test]
fn closing_a_door_patches_exactly_what_a_full_recompute_gives() {
    let (scene, g) = level();
    let engine = Engine::cpu();
    let p = RelationParams::standard();
    let open = Relations::compute(&engine, scene, g, &p).unwrap();
    let layout = sniper_layout();
    for b in &layout.buildings {
        let mut scene = scene.clone();
        let patch =
            DoorPatch::new(&open, &scene, b.door_object, &[b.door_open, b.door_closed]).unwrap();
        // The door only touches pairs near it: a small share of all pairs.
        let all = open.len() * (open.len() - 1) / 2;
        assert!(
            !patch.pairs.is_empty() && patch.pairs.len() * 20 < all,
            "{} of {all} pairs",
            patch.pairs.len()
        );
        scene.set_transform(b.door_object, b.door_closed).unwrap();
        let mut patched = open.clone();
        let report = patched.apply(&engine, &scene, &patch).unwrap();
        let full = Relations::compute(&engine, &scene, g, &p).unwrap();
        assert!(report.changed_pairs > 0, "{report:?}");
        assert!(
            report.changed_edges > 0,
            "closing the door closes the doorway: {report:?}"
        );
        assert!(
            patched == full,
            "patched relations differ from a full recompute: {report:?}"
        );
        // Inside the building, the way out is now longer (or gone).
        let inside = g
            .nearest(Vec3::new(
                (b.min.x + b.max.x) / 2.0,
                0.0,
                (b.min.z + b.max.z) / 2.0,
            ))
            .unwrap();
        let outside = g.nearest(b.door + b.door_normal * 3.0).unwrap();
        let before = open.travel_time(inside, outside).unwrap();
        assert!(full.travel_time(inside, outside).is_none_or(|t| t > before));
        // Opening it again restores the original relations.
        scene.set_transform(b.door_object, b.door_open).unwrap();
        patched.apply(&engine, &scene, &patch).unwrap();
        assert!(patched == open, "reopened door");
    }
}

#[test]
fn a_patch_for_other_relations_or_objects_is_refused() {
    let (scene, g) = level();
    let rel = Relations::compute(&Engine::cpu(), scene, g, &RelationParams::standard()).unwrap();
    let b = &sniper_layout().buildings[0];
    // Object 0 is the static level.
    assert!(DoorPatch::new(&rel, scene, sightline::ObjectId(0), &[b.door_open]).is_err());
    assert!(DoorPatch::new(&rel, scene, b.door_object, &[]).is_err());
    let mut patch =
        DoorPatch::new(&rel, scene, b.door_object, &[b.door_open, b.door_closed]).unwrap();
    patch.pairs.push((0, rel.len() as u32));
    let mut r = rel.clone();
    assert!(r.apply(&Engine::cpu(), scene, &patch).is_err());
}

/// The level's largest component (roof tops nobody can reach left out), surveyed on the CPU.
fn surveyed() -> &'static Survey {
    static S: OnceLock<Survey> = OnceLock::new();
    S.get_or_init(|| {
        let (scene, g) = level();
        let label = g.components().label;
        let (g, _) = g
            .subgraph(|i| label[i as usize] == 0, &CostParams::standard())
            .unwrap();
        Survey::compute(
            &Engine::cpu(),
            scene,
            &g,
            &SurveyParams::standard(),
            None,
            None,
        )
        .unwrap()
    })
}

/// The waypoints of the top `share` of scores in direction `d`.
fn top(s: &Sniping, d: Direction, share: f32) -> Vec<Vec3> {
    let scores = s.scores(d);
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let nodes = surveyed().relations.nodes();
    let k = (scores.len() as f32 * share).ceil() as usize;
    order[..k].iter().map(|&w| nodes[w]).collect()
}

/// Where van der Sterren's static ranking puts good eastward sniping spots ("Ranking Sniping
/// Spots using Static Info" and the discussion of focus): the western edge of the level (here
/// its westernmost sixth, 14 m), the rooms, windows and alley of the south-western building,
/// the northern stairs from the creek, the spot between the northern stairs wall and the
/// bridge wall, and the north-west west of the full-height wall. `mirror` turns the level half
/// a turn (the level is point-symmetric) for sniping west.
fn in_named_region(p: Vec3, mirror: bool) -> bool {
    let l = sniper_layout();
    let p = if mirror {
        Vec3::new(-p.x, p.y, -p.z)
    } else {
        p
    };
    let inside = |lo: Vec3, hi: Vec3| (lo.x..=hi.x).contains(&p.x) && (lo.z..=hi.z).contains(&p.z);
    let b = &l.buildings[0];
    let west_edge = p.x <= l.min.x + 14.0;
    let building_and_alley = inside(
        b.min - Vec3::new(1.5, 0.0, 1.5),
        Vec3::new(b.max.x + 1.5, 0.0, l.full_walls[1][0].z + 0.5),
    );
    let stairs = inside(
        Vec3::new(l.creek_x[0], 0.0, -16.0),
        Vec3::new(-2.0, 0.0, -10.5),
    );
    let stairs_to_bridge = inside(
        Vec3::new(l.creek_x[0], 0.0, -10.5),
        Vec3::new(-2.0, 0.0, -2.0),
    );
    let north_west = inside(Vec3::new(l.min.x, 0.0, -22.0), Vec3::new(-18.0, 0.0, -12.0));
    west_edge || building_and_alley || stairs || stairs_to_bridge || north_west
}

#[test]
fn top_sniping_spots_fall_where_the_paper_says() {
    let sv = surveyed();
    let (doors, windows) = sv.key_counts();
    assert!(
        doors >= 2 && windows == 4,
        "{doors} doors, {windows} windows"
    );
    let s = Sniping::compute(&sv.relations, &sv.site(vec![]), &SnipingParams::standard()).unwrap();
    let creek = sniper_layout().creek_x;
    for (d, mirror) in [(Direction::EAST, false), (Direction::WEST, true)] {
        let best = top(&s, d, 0.10);
        let n = best.len() as f32;
        let behind = best
            .iter()
            .filter(|p| {
                if mirror {
                    p.x > creek[1]
                } else {
                    p.x < creek[0]
                }
            })
            .count() as f32;
        let named = best.iter().filter(|p| in_named_region(**p, mirror)).count() as f32;
        println!(
            "sniping {}: of the top 10 % ({n} waypoints), {:.0} % on the sniper's side of the \
             creek and {:.0} % in the paper's regions",
            d.name(),
            100.0 * behind / n,
            100.0 * named / n
        );
        assert!(behind >= 0.9 * n && named >= 0.75 * n);
    }
}

/// Runs the command-line tool, returning its status and output.
fn cli(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sightline"))
        .args(args)
        .env("WGPU_BACKEND", "vulkan")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn the_command_writes_a_csv_and_a_heat_map_for_every_query() {
    let dir = std::env::temp_dir().join(format!("sightline-terrain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sv = surveyed();
    let nodes = sv.relations.nodes();
    // Experience: the player snipes east for ten minutes from a waypoint on the east bank,
    // issuing 1,000 damage; the AI walks north through the middle of the west bank.
    let spot = sv
        .relations
        .graph()
        .nearest(Vec3::new(10.0, 0.0, 10.0))
        .unwrap();
    let mut e = Experience::new(nodes).unwrap();
    e.record_sniping(
        spot,
        Direction::EAST,
        Actor::Player,
        Activity {
            seconds: 600.0,
            issued: 1000.0,
            taken: 0.0,
        },
    )
    .unwrap();
    for z in -10..10 {
        let w = sv
            .relations
            .graph()
            .nearest(Vec3::new(-20.0, 0.0, 2.0 * z as f32))
            .unwrap();
        e.record_traffic(w, Direction::NORTH, Actor::Ai, 5.0)
            .unwrap();
    }
    let exp = dir.join("experience.json");
    e.save(&exp).unwrap();
    for (query, extra) in [
        ("sniping", vec!["--experience", exp.to_str().unwrap()]),
        ("ambush", vec!["--dir", "north", "--trips", "300"]),
        ("combat", vec![]),
        ("strongholds", vec![]),
        ("sentry", vec![]),
    ] {
        let csv = dir.join(format!("{query}.csv"));
        let png = dir.join(format!("{query}.png"));
        let mut args = vec![
            "terrain",
            "--scene",
            "sniper",
            "--backend",
            "cpu",
            "--query",
            query,
            "--csv",
            csv.to_str().unwrap(),
            "--png",
            png.to_str().unwrap(),
        ];
        args.extend(extra);
        let (ok, text) = cli(&args);
        assert!(ok, "{query}: {text}");
        let table = std::fs::read_to_string(&csv).unwrap();
        let mut lines = table.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(header[..4], ["waypoint", "x", "y", "z"], "{query}");
        assert_eq!(*header.last().unwrap(), "score");
        let rows: Vec<Vec<String>> = lines
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect();
        assert_eq!(rows.len(), nodes.len(), "{query}: one row per waypoint");
        assert!(rows.iter().all(|r| r.len() == header.len()));
        let img = image::open(&png).unwrap();
        assert!(img.width() >= 512 && img.height() >= 512);
        if query == "sniping" {
            for q in [
                "a_inconspicuous",
                "b_overlooks_distant",
                "c_hard_to_reach",
                "d_cover_nearby",
                "e_overlooked_exposed",
                "f_overlooks_keys",
                "g_approach_observed",
                "h_focus",
                "i_moves_freely",
                "traffic",
                "experience",
            ] {
                assert!(header.contains(&q), "no {q} column");
            }
            let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
            let row = &rows[spot as usize];
            let (pre, exp, score): (f32, f32, f32) = (
                row[col("precomputed")].parse().unwrap(),
                row[col("experience")].parse().unwrap(),
                row[col("score")].parse().unwrap(),
            );
            assert!(exp > 0.0 && (pre + exp - score).abs() < 1e-3 * score.abs().max(1.0));
            // The recorded traffic re-ran the rating: somebody overlooks it.
            assert!(rows
                .iter()
                .any(|r| r[col("traffic")].parse::<f32>().unwrap() > 0.0));
        }
    }
    // Bad input is an error that says what is wrong.
    for (args, says) in [
        (vec!["--dir", "up"], "direction"),
        (vec!["--horizon", "nan"], "horizon"),
        (vec!["--experience", "/nonexistent/exp.json"], "exp.json"),
    ] {
        let mut a = vec!["terrain", "--scene", "sniper", "--backend", "cpu"];
        a.extend(args);
        let (ok, text) = cli(&a);
        assert!(
            !ok && text.contains("error") && text.contains(says),
            "{a:?}: {text}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
