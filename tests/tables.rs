//! Precomputed tables: line of sight against direct occlusion queries, sees lists, the `.slt`
//! file (round trip, determinism, corruption), shard merging, waypoint sampling and parsing.

use glam::Vec3;
use sightline::intervis::IntervisRecord;
use sightline::scene::procedural;
use sightline::tables::{self, LosParams, PrecomputeParams, TableFile};
use sightline::trace::{Ray, Segment, SplitMix64};
use sightline::{Engine, Error, Mask, MaterialFlags, Scene};
use std::path::PathBuf;
use std::time::Instant;

fn small_urban() -> Scene {
    procedural::urban(1, 1)
}

fn params(spacing: f32) -> PrecomputeParams {
    PrecomputeParams {
        spacing,
        ..PrecomputeParams::default()
    }
}

/// A deterministic stand-in for the intervis measurement: records from the pair's distance,
/// with some pairs fully occluded (exposed == 0) so they are dropped.
fn fake_measure(waypoints: &[Vec3]) -> impl sightline::tables::IntervisFn + '_ {
    move |_, pairs| {
        Ok(pairs
            .iter()
            .map(|&(i, j)| {
                let d = waypoints[i as usize].distance(waypoints[j as usize]);
                let exposed = ((d * 10.0) as u32 + i) % 5;
                IntervisRecord {
                    exposed,
                    occluded: 5 - exposed,
                    background: 100 - exposed,
                    box_pixels: 100,
                    target_brightness: d / 200.0,
                    background_brightness: 0.5,
                    contrast: d.fract(),
                    occlusion: (5 - exposed) as f32 / 5.0,
                    solid_angle: 1.0 / (1.0 + d * d),
                    _pad: [0; 3],
                }
            })
            .collect())
    }
}

fn table_with_intervis(
    engine: &Engine,
    scene: &Scene,
    p: &PrecomputeParams,
    shard: Option<(u32, u32)>,
) -> TableFile {
    let waypoints = tables::sample_waypoints(engine, scene, p.spacing, p.max_slope).unwrap();
    let mut m = fake_measure(&waypoints);
    tables::precompute(engine, scene, "urban", p, shard, Some(&mut m), |_, _, _| {}).unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sightline-tables-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn los_is_symmetric_and_matches_direct_occlusion_queries() {
    let (engine, scene) = (Engine::cpu(), small_urban());
    let p = params(7.0);
    let w = tables::sample_waypoints(&engine, &scene, p.spacing, p.max_slope).unwrap();
    assert!(w.len() > 100, "{} waypoints", w.len());
    let los = tables::compute_los(&engine, &scene, &w, &p.los, None, |_, _| {}).unwrap();
    let n = los.n();
    assert_eq!(los.bit_count(), u64::from(n) * u64::from(n - 1) / 2);
    let vis = los.visible_pairs();
    assert!(
        vis > 0 && vis < los.bit_count(),
        "{vis} of {} visible",
        los.bit_count()
    );
    let mut rng = SplitMix64(42);
    let pairs: Vec<(u32, u32)> = (0..2000)
        .map(|_| {
            (
                (rng.next_u64() % u64::from(n)) as u32,
                (rng.next_u64() % u64::from(n)) as u32,
            )
        })
        .filter(|(i, j)| i != j)
        .collect();
    let lift = Vec3::new(0.0, 1.7, 0.0);
    let segs: Vec<Segment> = pairs
        .iter()
        .map(|&(i, j)| Segment::new(w[i as usize] + lift, w[j as usize] + lift))
        .collect();
    let occ = engine.occluded(&scene, &segs, Mask::SIGHT).unwrap();
    for (k, &(i, j)) in pairs.iter().enumerate() {
        assert_eq!(los.visible(i, j), !occ.get(k), "pair ({i}, {j})");
        assert_eq!(los.visible(i, j), los.visible(j, i));
    }
    // Sees lists agree with the bits, ascending, without self.
    let mut total = 0;
    for i in 0..n {
        let want: Vec<u32> = (0..n).filter(|&j| j != i && los.visible(i, j)).collect();
        assert_eq!(los.sees(i), &want[..], "sees({i})");
        total += want.len() as u64;
    }
    assert_eq!(total, 2 * vis);
    // A range: far pairs are not visible, near ones unchanged; small chunks change nothing.
    let small = LosParams {
        chunk_segments: 1000,
        ..p.los
    };
    let ranged = tables::compute_los(&engine, &scene, &w, &small, Some(30.0), |_, _| {}).unwrap();
    for i in 0..n {
        for j in i + 1..n {
            let near = w[i as usize].distance(w[j as usize]) <= 30.0;
            assert_eq!(
                ranged.visible(i, j),
                near && los.visible(i, j),
                "({i}, {j})"
            );
        }
    }
}

#[test]
fn waypoints_stand_on_every_walkable_floor_with_head_room() {
    let (engine, scene) = (Engine::cpu(), small_urban());
    let slope = std::f32::consts::FRAC_PI_4;
    let w = tables::sample_waypoints(&engine, &scene, 6.0, slope).unwrap();
    let (lo, hi) = scene.bounds().unwrap();
    assert!(w
        .iter()
        .all(|p| p.x >= lo.x && p.x <= hi.x && p.z >= lo.z && p.z <= hi.z));
    // A walkable, standable surface right under each waypoint (a short ray from 5 cm above).
    let rays: Vec<Ray> = w
        .iter()
        .map(|p| Ray::new(*p + Vec3::Y * 0.05, Vec3::NEG_Y, 0.1))
        .collect();
    let all = Mask(MaterialFlags::SOLID | MaterialFlags::WALKABLE);
    for (p, hit) in w
        .iter()
        .zip(engine.closest_hit(&scene, &rays, all).unwrap())
    {
        let hit = hit.unwrap_or_else(|| panic!("{p}: no ground under the waypoint"));
        let flags = scene.materials()[hit.material as usize].flags;
        assert!(flags.contains(MaterialFlags::WALKABLE), "{p}: not walkable");
        assert!(hit.normal.y >= slope.cos() - 1e-5, "{p}: too steep");
    }
    // Head room for a crouching soldier over every waypoint.
    let up: Vec<Segment> = w
        .iter()
        .map(|p| Segment::new(*p + Vec3::Y * 0.1, *p + Vec3::Y * 1.1))
        .collect();
    assert_eq!(
        engine
            .occluded(&scene, &up, Mask::FIRE)
            .unwrap()
            .count_ones(),
        0
    );
    // Roofs count, and so do the floors under them: some cells hold several waypoints.
    assert!(w.iter().any(|p| p.y > 5.0) && w.iter().any(|p| p.y.abs() < 0.2));
    let stacked = w
        .windows(2)
        .filter(|p| p[0].x == p[1].x && p[0].z == p[1].z && p[0].y > p[1].y + 2.0)
        .count();
    assert!(stacked > 10, "{stacked} cells with a floor under a floor");
    assert!(tables::sample_waypoints(&engine, &scene, 0.0, slope).is_err());
}

/// A table written by format version 1 (before nav graphs were stored) still reads.
#[test]
fn version_one_files_still_read() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/v1-rock.slt");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 1);
    let t = TableFile::from_bytes(&bytes, "v1-rock.slt").unwrap();
    assert_eq!(t.waypoints.len(), 64);
    assert_eq!(t.los.visible_pairs(), 469);
    assert_eq!(t.intervis.as_ref().unwrap().len(), 941);
    assert_eq!(t.meta.posture, sightline::agent::Posture::Standing);
    assert_eq!(t.meta.range, Some(30.0));
    assert!(t.edges.is_none());
    // Written again it is a version-3 file that reads back equal (records were quantised as
    // they were read).
    let again = t.to_bytes().unwrap();
    assert_eq!(u32::from_le_bytes(again[8..12].try_into().unwrap()), 3);
    assert_eq!(TableFile::from_bytes(&again, "v3.slt").unwrap(), t);
    // A version-1 header claiming version-2 flags is refused.
    let mut bad = bytes.clone();
    bad[12] |= 4;
    assert!(TableFile::from_bytes(&bad, "v1-flags.slt").is_err());
}

#[test]
fn file_round_trips_and_writes_are_byte_identical() {
    let (engine, scene) = (Engine::cpu(), small_urban());
    let p = PrecomputeParams {
        range: Some(60.0),
        ..params(8.0)
    };
    let a = table_with_intervis(&engine, &scene, &p, None);
    let b = table_with_intervis(&engine, &scene, &p, None);
    let iv = a.intervis.as_ref().unwrap();
    assert!(!iv.is_empty() && iv.entries().iter().all(|e| e.2.exposed > 0));
    let (i, j, r) = iv.entries()[iv.len() / 2];
    assert_eq!(iv.get(i, j), Some(&r));
    assert!(iv.row(i).iter().all(|e| e.0 == i));
    let path = tmp("roundtrip.slt");
    a.write_to(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(
        bytes,
        b.to_bytes().unwrap(),
        "two runs wrote different bytes"
    );
    assert_eq!(&bytes[..8], b"SLTABLE\0");
    assert_eq!(bytes.len() % 8, 0);
    let back = TableFile::read_from(&path).unwrap();
    assert_eq!(back, a);
    assert_eq!(back.to_bytes().unwrap(), bytes);
    let s = back.summary(tables::FORMAT_VERSION);
    assert!(s.contains("urban") && s.contains("intervis"), "{s}");
    // Without intervis, and with waypoints from a file: round trips too.
    let q = PrecomputeParams {
        waypoints: Some(a.waypoints[..40].to_vec()),
        ..params(8.0)
    };
    let c = tables::precompute(&engine, &scene, "", &q, None, None, |_, _, _| {}).unwrap();
    assert_eq!(c.meta.spacing, None);
    assert_eq!(
        TableFile::from_bytes(&c.to_bytes().unwrap(), "c.slt").unwrap(),
        c
    );
}

fn load_err(bytes: &[u8], name: &str) -> String {
    let path = tmp(name);
    std::fs::write(&path, bytes).unwrap();
    match TableFile::read_from(&path) {
        Ok(_) => panic!("{name}: a damaged file loaded"),
        Err(e @ Error::Load { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(name), "{msg}: does not name the file");
            msg
        }
        Err(e) => panic!("{name}: wrong error kind {e:?}"),
    }
}

#[test]
fn damaged_files_are_clear_errors_not_panics() {
    let (engine, scene) = (Engine::cpu(), small_urban());
    let p = PrecomputeParams {
        range: Some(40.0),
        ..params(8.0)
    };
    let good = table_with_intervis(&engine, &scene, &p, None)
        .to_bytes()
        .unwrap();
    let msg = load_err(&good[..good.len() - 100], "truncated.slt");
    assert!(
        msg.contains("truncated") && msg.contains("recompute"),
        "{msg}"
    );
    assert!(load_err(&good[..5], "stub.slt").contains("truncated"));
    assert!(load_err(b"", "empty.slt").contains("magic"));
    let mut bad = good.clone();
    bad[0] = b'X';
    assert!(load_err(&bad, "magic.slt").contains("not a sightline table"));
    let mut bad = good.clone();
    bad[8..12].copy_from_slice(&99u32.to_le_bytes());
    let msg = load_err(&bad, "version.slt");
    assert!(
        msg.contains("version 99") && msg.contains("recompute"),
        "{msg}"
    );
    let mut bad = good.clone();
    let mid = good.len() / 2;
    bad[mid] ^= 0x10;
    assert!(load_err(&bad, "flipped.slt").contains("checksum"));
    // A flipped bit anywhere (every header byte, then a stride through the sections): an
    // error, never a panic.
    let stride = (good.len() / 400).max(1);
    for at in (0..good.len()).filter(|&at| at < 256 || at % stride == 0 || at + 8 >= good.len()) {
        let mut bad = good.clone();
        bad[at] ^= 1 << (at % 8);
        assert!(
            TableFile::from_bytes(&bad, "x.slt").is_err(),
            "flip at byte {at} loaded"
        );
    }
    assert!(TableFile::read_from(tmp("missing.slt")).is_err());
}

#[test]
fn merged_shards_equal_a_single_run_byte_for_byte() {
    let (engine, scene) = (Engine::cpu(), small_urban());
    let p = PrecomputeParams {
        range: Some(70.0),
        ..params(8.0)
    };
    let single = table_with_intervis(&engine, &scene, &p, None);
    let mut shards: Vec<TableFile> = (0..3)
        .map(|k| table_with_intervis(&engine, &scene, &p, Some((k, 3))))
        .collect();
    for s in &shards {
        // Shards survive the file too.
        let back = TableFile::from_bytes(&s.to_bytes().unwrap(), "shard.slt").unwrap();
        assert_eq!(&back, s);
    }
    shards.reverse();
    let merged = tables::merge(&shards).unwrap();
    assert_eq!(merged.to_bytes().unwrap(), single.to_bytes().unwrap());
    assert!(tables::merge(&shards[..2])
        .unwrap_err()
        .to_string()
        .contains("missing"));
    let twice = vec![shards[0].clone(), shards[0].clone(), shards[1].clone()];
    assert!(tables::merge(&twice)
        .unwrap_err()
        .to_string()
        .contains("twice"));
    let mut other = shards.clone();
    other[1].meta.eye_height = 1.0;
    assert!(tables::merge(&other).is_err());
    assert_eq!(tables::parse_shard("2/3").unwrap(), (2, 3));
    for bad in ["3/3", "1", "a/b", "0/0"] {
        assert!(tables::parse_shard(bad).is_err(), "{bad}");
    }
}

#[test]
fn waypoint_files_parse_and_bad_lines_are_named() {
    let csv = "x,y,z\n1,2,3\n\n# comment\n4.5, 0, -6e1\n";
    let w = tables::parse_waypoints_csv(csv, "w.csv").unwrap();
    assert_eq!(
        w,
        vec![Vec3::new(1.0, 2.0, 3.0), Vec3::new(4.5, 0.0, -60.0)]
    );
    let err = tables::parse_waypoints_csv("1,2,3\n4,5\n", "w.csv").unwrap_err();
    assert!(matches!(err, Error::Load { line: Some(2), .. }), "{err}");
    let err = tables::parse_waypoints_csv("x,y,z\n1,2,3\n1,nan,3\n", "w.csv").unwrap_err();
    assert!(err.to_string().starts_with("w.csv:3: "), "{err}");
    // A header is field names only: a malformed number on the first line is an error.
    for first in ["0x1p3,0,0", "1O,2,3", "inf,1,2"] {
        let err = tables::parse_waypoints_csv(&format!("{first}\n1,2,3\n"), "w.csv").unwrap_err();
        assert!(
            matches!(err, Error::Load { line: Some(1), .. }),
            "{first}: {err}"
        );
    }
    // JSON that is not an array of points is not taken for a header.
    let err = tables::parse_waypoints_csv("{\"points\": [[1, 2, 3]]}\n", "w.csv").unwrap_err();
    assert!(matches!(err, Error::Load { line: Some(1), .. }), "{err}");
    let j = tables::parse_waypoints_json(" [[1, 2, 3], [4,5,6]] ", "w.json").unwrap();
    assert_eq!(j[1], Vec3::new(4.0, 5.0, 6.0));
    assert!(tables::parse_waypoints_json("[]", "w.json")
        .unwrap()
        .is_empty());
    assert!(tables::parse_waypoints_json("[[1,2,3],[4,5]]", "w.json")
        .unwrap_err()
        .to_string()
        .contains("element 1"));
    for (name, text) in [
        ("empty.csv", ""),
        ("comments.csv", "# none\nx,y,z\n"),
        ("empty.json", "[]"),
    ] {
        let path = tmp(name);
        std::fs::write(&path, text).unwrap();
        let msg = tables::read_waypoints(&path).unwrap_err().to_string();
        assert!(msg.contains(name) && msg.contains("no waypoints"), "{msg}");
    }
    let path = tmp("waypoints.csv");
    std::fs::write(&path, "x,y,z\n0,0,0\n1,1\n").unwrap();
    let msg = tables::read_waypoints(&path).unwrap_err().to_string();
    assert!(msg.contains("waypoints.csv:3: "), "{msg}");
}

/// A spreadsheet's CSV: a UTF-8 byte-order mark, a header line, CRLF line ends. Waypoint,
/// segment and nav graph files all load it.
#[test]
fn csv_with_a_byte_order_mark_and_a_header_loads() {
    let path = tmp("bom-waypoints.csv");
    std::fs::write(&path, "\u{feff}x,y,z\r\n1,2,3\r\n4,5,6\r\n").unwrap();
    let w = tables::read_waypoints(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(w, vec![Vec3::new(1.0, 2.0, 3.0), Vec3::new(4.0, 5.0, 6.0)]);
    let path = tmp("bom-segments.csv");
    std::fs::write(&path, "\u{feff}x0,y0,z0,x1,y1,z1\r\n0,1,0,5,1,0\r\n").unwrap();
    let s = sightline::trace::read_segments(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.len(), 1);
    let g = sightline::nav::parse_graph_csv(
        "\u{feff}kind,a,b,c\nnode,0,0,0\nnode,1,0,0\nedge,0,1\n",
        "g.csv",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((g.0.len(), g.1.len()), (2, 1));
}

/// Darken, McCue and Guerrero's numbers: 3,784 waypoints at 2 m over the 100 m x 122 m block, LOS bits 0.89 MB.
#[test]
fn urban_at_two_metres_numbers() {
    let (engine, scene) = (Engine::cpu(), small_urban());
    let t = Instant::now();
    let w = tables::sample_waypoints(&engine, &scene, 2.0, std::f32::consts::FRAC_PI_4).unwrap();
    let sample = t.elapsed();
    let t = Instant::now();
    let los =
        tables::compute_los(&engine, &scene, &w, &LosParams::standard(), None, |_, _| {}).unwrap();
    let el = t.elapsed();
    let pairs = los.bit_count();
    println!(
        "urban(1,1) at 2 m: {} waypoints (Darken, McCue and Guerrero: 3,784) sampled in {sample:.2?}; LOS on the \
         CPU engine ({} threads): {pairs} pairs in {el:.2?} ({:.2} M segments/s), {} visible \
         ({:.1} %); bits {:.3} MB (Darken, McCue and Guerrero Table 3: 0.895 MB), sees lists {:.2} MB",
        w.len(),
        rayon::current_num_threads(),
        pairs as f64 / el.as_secs_f64() / 1e6,
        los.visible_pairs(),
        100.0 * los.visible_pairs() as f64 / pairs as f64,
        pairs.div_ceil(8) as f64 / 1e6,
        (8 * (w.len() + 1) + 4 * 2 * los.visible_pairs() as usize) as f64 / 1e6,
    );
    let file = tables::TableFile {
        meta: tables::TableMeta {
            scene: "urban".into(),
            scene_digest: Some(scene.geometry_digest()),
            eye_height: 1.7,
            range: None,
            spacing: Some(2.0),
            max_slope: std::f32::consts::FRAC_PI_4,
            mask: Mask::SIGHT,
            posture: sightline::agent::Posture::Standing,
        },
        waypoints: w,
        los,
        intervis: None,
        edges: None,
    };
    let path = tmp("urban2.slt");
    let t = Instant::now();
    file.write_to(&path).unwrap();
    let write = t.elapsed();
    let t = Instant::now();
    let back = TableFile::read_from(&path).unwrap();
    println!(
        "urban2.slt: {} bytes, written in {write:.2?}, read and checked in {:.2?}",
        std::fs::metadata(&path).unwrap().len(),
        t.elapsed()
    );
    assert_eq!(back, file);
    println!("{}", back.summary(tables::FORMAT_VERSION));
    let missing = tmp("no-such-dir").join("x").join("t.slt");
    let msg = file.write_to(&missing).unwrap_err().to_string();
    assert!(msg.contains("t.slt"), "{msg}");
}

/// A table written by format version 2 (nav graph, crouching targets, 56-byte intervis
/// entries, no scene digest) still reads, and still cannot be used with a scene.
#[test]
fn version_two_files_still_read() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/v2-rock-nav.slt");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 2);
    let t = TableFile::read_from(&path).unwrap();
    assert_eq!(t.waypoints.len(), 64);
    assert_eq!(t.los.visible_pairs(), 469);
    assert_eq!(t.intervis.as_ref().unwrap().len(), 941);
    assert_eq!(t.edges.as_ref().unwrap().len(), 119);
    assert_eq!(t.meta.posture, sightline::agent::Posture::Crouching);
    assert_eq!(t.meta.scene_digest, None);
    let m = tables::MappedTable::open(&path).unwrap();
    assert_eq!(m.version(), 2);
    assert_eq!(
        m.intervis(0, 1),
        t.intervis.as_ref().unwrap().get(0, 1).copied()
    );
    let again = TableFile::from_bytes(&t.to_bytes().unwrap(), "v3.slt").unwrap();
    assert_eq!(again, t);
    let msg = m.check_scene(&small_urban()).unwrap_err().to_string();
    assert!(
        msg.contains("v2-rock-nav.slt") && msg.contains("recompute"),
        "{msg}"
    );
}

/// The raw `f32` intervis records of the version-1 fixture (real measurements on a rock
/// scene), read without the reader's quantisation.
fn raw_v1_records() -> Vec<IntervisRecord> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/v1-rock.slt");
    let b = std::fs::read(path).unwrap();
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let name = u32::from_le_bytes(b[68..72].try_into().unwrap()) as usize;
    let mut pos = (72 + name).next_multiple_of(8);
    for tag in [b"WAYP", b"LOSB", b"SEES"] {
        assert_eq!(&b[pos..pos + 4], tag);
        pos = (pos + 16 + u64_at(pos + 8) as usize).next_multiple_of(8);
    }
    assert_eq!(&b[pos..pos + 4], b"IVIS");
    let body = &b[pos + 16..pos + 16 + u64_at(pos + 8) as usize];
    body.chunks_exact(56)
        .map(|c| bytemuck::pod_read_unaligned::<IntervisRecord>(&c[8..]))
        .collect()
}

/// The packed intervis entry's quantisation error over real records, field by field, within
/// the bounds `tables::packed` states (and `deploy/README.md` quotes).
#[test]
fn packed_intervis_error_is_within_its_stated_bounds() {
    let raw = raw_v1_records();
    assert_eq!(raw.len(), 941);
    let mut stats: Vec<(&str, f64, f64)> = Vec::new();
    let mut field = |name, err: &dyn Fn(&IntervisRecord, &IntervisRecord) -> f64| {
        let (mut max, mut sum) = (0f64, 0f64);
        for r in &raw {
            let e = err(r, &tables::quantise(r));
            max = max.max(e);
            sum += e;
        }
        stats.push((name, max, sum / raw.len() as f64));
    };
    let abs = |a: f32, b: f32| f64::from((a - b).abs());
    let rel = |a: f32, b: f32| {
        if a == 0.0 {
            0.0
        } else {
            abs(a, b) / f64::from(a)
        }
    };
    field("exposed (px)", &|r, q| {
        f64::from(r.exposed.abs_diff(q.exposed))
    });
    field("occluded (px)", &|r, q| {
        f64::from(r.occluded.abs_diff(q.occluded))
    });
    field("background (px)", &|r, q| {
        f64::from(r.background.abs_diff(q.background))
    });
    field("target brightness", &|r, q| {
        abs(r.target_brightness, q.target_brightness)
    });
    field("background brightness", &|r, q| {
        abs(r.background_brightness, q.background_brightness)
    });
    field("occlusion", &|r, q| abs(r.occlusion, q.occlusion));
    field("contrast (relative)", &|r, q| rel(r.contrast, q.contrast));
    field("solid angle (relative)", &|r, q| {
        rel(r.solid_angle, q.solid_angle)
    });
    let max_box = raw.iter().map(|r| r.box_pixels).max().unwrap();
    println!(
        "quantisation error over {} v1-rock records (largest box {max_box} px):",
        raw.len()
    );
    for (name, max, mean) in &stats {
        println!("  {name:24} max {max:.3e}  mean {mean:.3e}");
    }
    let bound = |name: &str| match name {
        // Checked record by record below: one step of each record's own box.
        n if n.ends_with("(px)") => f64::INFINITY,
        n if n.ends_with("(relative)") => 1.0 / 2048.0,
        _ => 0.5 / 65535.0 + 1e-7,
    };
    for (name, max, _) in &stats {
        assert!(
            *max <= bound(name),
            "{name}: max error {max} over {}",
            bound(name)
        );
    }
    assert!(raw
        .iter()
        .all(|r| tables::quantise(r).box_pixels == r.box_pixels));
    // Pixel counts: within one step, box / 65535 pixels, and exact up to 65,535 pixels.
    for r in &raw {
        let q = tables::quantise(r);
        let step = if r.box_pixels <= 65_535 {
            0.0
        } else {
            f64::from(r.box_pixels) / 65_535.0
        };
        for (a, b) in [
            (r.exposed, q.exposed),
            (r.occluded, q.occluded),
            (r.background, q.background),
        ] {
            assert!(
                f64::from(a.abs_diff(b)) <= step,
                "{r:?} reads back as {q:?}"
            );
        }
    }
}

/// The streaming path (precompute straight to a file, sees lists built from the bits 64 rows
/// at a time) writes the same bytes as the in-memory table, and the mapped reader answers
/// every query the in-memory table does. Shards merged from files equal the single run.
#[test]
fn streaming_writer_and_mapped_reader_agree_with_the_eager_table() {
    let (engine, scene) = (Engine::cpu(), small_urban());
    let base = params(8.0);
    let w = tables::sample_waypoints(&engine, &scene, 8.0, base.max_slope).unwrap();
    let n = w.len() as u32;
    assert!(n > 130, "{n} waypoints: want more than two sees blocks");
    let edges: Vec<tables::Edge> = (0..n - 1)
        .step_by(3)
        .map(|a| tables::Edge {
            a,
            b: a + 1,
            kinds: tables::EdgeKinds::STAIRS,
            length: w[a as usize].distance(w[a as usize + 1]),
        })
        .collect();
    let p = PrecomputeParams {
        range: Some(50.0),
        waypoints: Some(w.clone()),
        edges: Some(edges.clone()),
        ..base
    };
    let run = |shard, path: Option<&PathBuf>| {
        let mut m = fake_measure(&w);
        match path {
            None => Err(Box::new(
                tables::precompute(
                    &engine,
                    &scene,
                    "urban",
                    &p,
                    shard,
                    Some(&mut m),
                    |_, _, _| {},
                )
                .unwrap(),
            )),
            Some(path) => Ok(tables::precompute_to_file(
                &engine,
                &scene,
                "urban",
                &p,
                shard,
                Some(&mut m),
                path,
                |_, _, _| {},
            )
            .unwrap()),
        }
    };
    let eager = run(None, None).unwrap_err();
    let path = tmp("streamed.slt");
    let mapped = run(None, Some(&path)).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes, eager.to_bytes().unwrap(), "streamed bytes differ");
    eager.write_to(tmp("eager.slt")).unwrap();
    assert_eq!(std::fs::read(tmp("eager.slt")).unwrap(), bytes);
    assert_eq!(mapped.meta(), &eager.meta);
    assert_eq!(mapped.visible_pairs(), eager.los.visible_pairs());
    for i in 0..n {
        assert_eq!(mapped.waypoint(i), eager.waypoints[i as usize]);
        assert_eq!(
            mapped.sees(i).collect::<Vec<_>>(),
            eager.los.sees(i),
            "sees({i})"
        );
        for j in 0..n {
            assert_eq!(mapped.visible(i, j), eager.los.visible(i, j), "({i}, {j})");
        }
    }
    let iv = eager.intervis.as_ref().unwrap();
    assert_eq!(mapped.intervis_len(), iv.len());
    assert!(iv.len() > 100);
    for (e, (i, j, r)) in iv.entries().iter().enumerate() {
        assert_eq!(mapped.intervis_entry(e), (*i, *j, *r));
        assert_eq!(mapped.intervis(*i, *j), Some(*r));
    }
    assert_eq!(mapped.intervis(0, 0), None);
    assert_eq!(mapped.edges().unwrap(), edges);
    // Shards streamed to files, merged from the files (any order) without loading them.
    let shard_paths: Vec<PathBuf> = (0..3)
        .rev()
        .map(|k| {
            let sp = tmp(&format!("stream-shard-{k}.slt"));
            run(Some((k, 3)), Some(&sp)).unwrap();
            sp
        })
        .collect();
    let merged = tmp("stream-merged.slt");
    tables::merge_files(&shard_paths, &merged).unwrap();
    assert_eq!(std::fs::read(&merged).unwrap(), bytes);
    let msg = tables::merge_files(&shard_paths[..2], tmp("m2.slt"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("missing"), "{msg}");
    let twice = [
        &shard_paths[0],
        &shard_paths[0],
        &shard_paths[1],
        &shard_paths[2],
    ];
    let msg = tables::merge_files(&twice, tmp("m3.slt"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("twice"), "{msg}");
    let mixed = [&shard_paths[0], &shard_paths[1], &path];
    assert!(tables::merge_files(&mixed, tmp("m4.slt")).is_err());
}

/// A table records the geometry it was computed on; a changed scene refuses it.
#[test]
fn a_table_for_a_changed_scene_is_refused() {
    let (engine, mut scene) = (Engine::cpu(), small_urban());
    let p = PrecomputeParams {
        range: Some(30.0),
        ..params(10.0)
    };
    let t = tables::precompute(&engine, &scene, "urban", &p, None, None, |_, _, _| {}).unwrap();
    assert_eq!(t.meta.scene_digest, Some(scene.geometry_digest()));
    t.check_scene(&scene).unwrap();
    assert_eq!(small_urban().geometry_digest(), scene.geometry_digest());
    let path = tmp("digest.slt");
    t.write_to(&path).unwrap();
    tables::MappedTable::open(&path)
        .unwrap()
        .check_scene(&scene)
        .unwrap();
    // Moving a crate of the scene changes the digest.
    let mut crate_mesh = sightline::scene::Mesh::default();
    crate_mesh.push_quad(Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y, 0);
    let id = scene
        .add_object(
            crate_mesh,
            glam::Affine3A::IDENTITY,
            sightline::scene::Mobility::Movable,
        )
        .unwrap();
    let msg = t.check_scene(&scene).unwrap_err().to_string();
    assert!(msg.contains("recompute"), "{msg}");
    let before = scene.geometry_digest();
    scene
        .set_transform(id, glam::Affine3A::from_translation(Vec3::X))
        .unwrap();
    assert_ne!(scene.geometry_digest(), before);
    let msg = tables::MappedTable::open(&path)
        .unwrap()
        .check_scene(&scene)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("digest.slt") && msg.contains("recompute"),
        "{msg}"
    );
}

/// `--shard` is bounded by `limits::MAX_SHARDS`, and the error names the limit.
#[test]
fn shard_counts_are_bounded() {
    for bad in [
        "0/4000000000",
        "0/65537",
        "70000/70001",
        "5/5",
        "-1/3",
        "1/2/3",
        "x",
    ] {
        let e = tables::parse_shard(bad).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::InvalidParameter { .. }), "{bad}: {e:?}");
        assert!(
            msg.contains("65536") && msg.contains("--shard"),
            "{bad}: {msg}"
        );
    }
    assert_eq!(tables::parse_shard("65535/65536").unwrap(), (65535, 65536));
}
