//! Fuzzing the strict table reader: valid files (a complete version-3 table with intervis and
//! a nav graph, a shard file, the version-2 fixture) are mutated (bit flips, byte overwrites,
//! truncation, extension, section length and count edits, float fields set to NaN, infinity
//! or negative values), their length field and checksum are recomputed so the mutation
//! reaches the content checks, and the reader must never panic; every file it accepts must
//! write back to identical bytes (version 3) and keep the table's invariants. A fixed number
//! of mutants from a fixed seed, a few seconds in release.

use glam::Vec3;
use sightline::intervis::IntervisRecord;
use sightline::scene::procedural;
use sightline::tables::{self, Edge, EdgeKinds, PrecomputeParams, TableFile};
use sightline::trace::SplitMix64;
use sightline::Engine;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

const MUTANTS_PER_FILE: usize = 4000;

fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Section head offsets of a version-3 file, walked as the reader does; `None` when the
/// mutation broke the walk (the checksum then stays as it is).
fn heads_v3(b: &[u8]) -> Option<(usize, [usize; 5])> {
    if b.len() < 88 {
        return None;
    }
    let name = u32::from_le_bytes(b[68..72].try_into().unwrap()) as usize;
    let header = 80usize.checked_add(name)?.next_multiple_of(8);
    let end = b.len() - 8;
    let mut heads = [0; 5];
    let mut pos = header;
    for h in &mut heads {
        if pos + 16 > end {
            return None;
        }
        *h = pos;
        let len = usize::try_from(u64_at(b, pos + 8)).ok()?;
        pos = pos.checked_add(16 + len)?.next_multiple_of(8);
    }
    (pos == end).then_some((header, heads))
}

/// Recomputes the trailing checksum the way the file's version defines it.
fn fix_checksum(b: &mut [u8]) {
    if b.len() < 24 {
        return;
    }
    let end = b.len() - 8;
    let version = u32::from_le_bytes(b[8..12].try_into().unwrap());
    let sum = if version >= 3 {
        let Some((header, heads)) = heads_v3(b) else {
            return;
        };
        let mut parts: Vec<&[u8]> = (0..5)
            .map(|s| &b[heads[s] + 16..heads.get(s + 1).copied().unwrap_or(end)])
            .collect();
        parts.push(&b[..header]);
        parts.extend(heads.iter().map(|&h| &b[h..h + 16]));
        fnv(&parts)
    } else {
        fnv(&[&b[..end]])
    };
    b[end..].copy_from_slice(&sum.to_le_bytes());
}

fn pick(rng: &mut SplitMix64, n: usize) -> usize {
    (rng.next_u64() % n.max(1) as u64) as usize
}

/// One random mutation; returns its name.
fn mutate(b: &mut Vec<u8>, rng: &mut SplitMix64) -> &'static str {
    let len = b.len();
    let put32 = |b: &mut Vec<u8>, at: usize, v: u32| {
        if at + 4 <= b.len() {
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
    };
    let put64 = |b: &mut Vec<u8>, at: usize, v: u64| {
        if at + 8 <= b.len() {
            b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
    };
    let heads = heads_v3(b).map(|h| h.1);
    match rng.next_u64() % 10 {
        0 => {
            let at = pick(rng, len);
            b[at] ^= 1 << (rng.next_u64() % 8);
            "bit flip"
        }
        1 => {
            let at = pick(rng, len);
            b[at] = rng.next_u64() as u8;
            "byte overwrite"
        }
        2 => {
            b.truncate(pick(rng, len));
            "truncation"
        }
        3 => {
            for _ in 0..1 + pick(rng, 64) {
                b.push(rng.next_u64() as u8);
            }
            "extension"
        }
        4 => match heads {
            Some(h) => {
                let at = h[pick(rng, 5)] + 8;
                let old = u64_at(b, at);
                let new = match rng.next_u64() % 4 {
                    0 => old.wrapping_add(8),
                    1 => old.wrapping_sub(1 + pick(rng, 16) as u64),
                    2 => 1 << 40,
                    _ => rng.next_u64() % (len as u64 + 64),
                };
                put64(b, at, new);
                "section length"
            }
            None => {
                put64(b, 24, 1 << 40);
                "count"
            }
        },
        5 => {
            let (at, v): (usize, u64) = match rng.next_u64() % 5 {
                0 => (
                    24,
                    [0, 1, 1 << 40, u64::MAX, rng.next_u64() % 200][pick(rng, 5)],
                ),
                1 => (60, rng.next_u64() % 8),
                2 => (64, [0, 1, 2, 70_000, u64::from(u32::MAX)][pick(rng, 5)]),
                3 => (68, [0, 3, 9, 5000, u64::from(u32::MAX)][pick(rng, 5)]),
                _ => match heads {
                    // A sees offset or neighbour, an intervis observer or target.
                    Some(h) => (
                        h[2 + pick(rng, 2)] + 16 + 4 * pick(rng, 40),
                        rng.next_u64() % 80,
                    ),
                    None => (24, rng.next_u64() % 80),
                },
            };
            if at == 24 {
                put64(b, at, v);
            } else {
                put32(b, at, v as u32);
            }
            "count"
        }
        6 => {
            let f = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -1.0, -0.0][pick(rng, 5)];
            let at = match (rng.next_u64() % 3, heads) {
                (0, _) | (_, None) => 40 + 4 * pick(rng, 4),
                (1, Some(h)) => h[0] + 16 + 4 * pick(rng, 30),
                (_, Some(h)) => h[4] + 16 + 12 + 16 * pick(rng, 8),
            };
            put32(b, at, f.to_bits());
            "float field"
        }
        7 => {
            // A half float of an intervis entry: NaN, infinity, negative, or -0.
            if let Some(h) = heads {
                let at = h[3] + 16 + 28 * pick(rng, 20) + 24 + 2 * pick(rng, 2);
                let v: u16 = [0x7e00, 0x7c00, 0xbc00, 0x8000, 0x3c00][pick(rng, 5)];
                if at + 2 <= b.len() {
                    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
                }
            }
            "intervis half float"
        }
        8 => {
            put32(b, 12, 1 << pick(rng, 32));
            "flags"
        }
        _ => {
            let at = match heads {
                Some(h) => h[pick(rng, 5)] + 4,
                None => 12,
            };
            put32(b, at, 1 + pick(rng, 255) as u32);
            "reserved bytes"
        }
    }
}

/// What every accepted table satisfies.
fn check_invariants(t: &TableFile, bytes: &[u8]) {
    let n = t.los.n();
    assert_eq!(t.waypoints.len(), n as usize);
    assert!(t.waypoints.iter().all(|p| p.is_finite()));
    if t.los.is_complete() {
        for i in 0..n {
            let want: Vec<u32> = (0..n).filter(|&j| j != i && t.los.visible(i, j)).collect();
            assert_eq!(
                t.los.sees(i),
                &want[..],
                "sees({i}) disagrees with the bits"
            );
        }
    }
    if let Some(iv) = &t.intervis {
        for (i, j, r) in iv.entries() {
            assert!(i != j && *i < n && *j < n && r.exposed > 0);
            assert!(t.los.holds_row(*i));
            let fields = [
                r.target_brightness,
                r.background_brightness,
                r.contrast,
                r.occlusion,
                r.solid_angle,
            ];
            assert!(fields.iter().all(|x| x.is_finite() && *x >= 0.0), "{r:?}");
            assert_eq!(tables::quantise(r), *r);
        }
    }
    if let Some(r) = t.meta.range {
        for i in 0..n {
            for j in (i + 1..n).filter(|&j| t.los.holds_row(i) && t.los.visible(i, j)) {
                let d = t.waypoints[i as usize].distance(t.waypoints[j as usize]);
                assert!(
                    d <= r * 1.0001,
                    "visible pair ({i}, {j}) {d} m apart, range {r} m"
                );
            }
        }
    }
    for e in t.edges.iter().flatten() {
        let d = t.waypoints[e.a as usize].distance(t.waypoints[e.b as usize]);
        assert!(e.length >= d * 0.9999, "edge {e:?} shorter than {d} m");
    }
    let again = t.to_bytes().expect("an accepted table writes");
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    if version == tables::FORMAT_VERSION {
        assert_eq!(again, bytes, "an accepted file wrote back other bytes");
    }
    assert_eq!(&TableFile::from_bytes(&again, "again.slt").unwrap(), t);
}

fn fake_measure(w: &[Vec3]) -> impl sightline::tables::IntervisFn + '_ {
    move |_, pairs| {
        Ok(pairs
            .iter()
            .map(|&(i, j)| {
                let d = w[i as usize].distance(w[j as usize]);
                let exposed = (i * 7 + j) % 4;
                IntervisRecord {
                    exposed,
                    occluded: 1,
                    background: 90 - exposed,
                    box_pixels: 90,
                    target_brightness: 0.2,
                    background_brightness: 0.6,
                    contrast: d / 10.0,
                    occlusion: 0.25,
                    solid_angle: 1.0 / (1.0 + d * d),
                    _pad: [0; 3],
                }
            })
            .collect())
    }
}

/// Small valid files: a complete table with intervis and edges, one shard of it, and the
/// version-2 fixture.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let (engine, scene) = (Engine::cpu(), procedural::urban(1, 1));
    let all = tables::sample_waypoints(&engine, &scene, 10.0, 0.7).unwrap();
    let w: Vec<Vec3> = all.into_iter().take(24).collect();
    let edges = (0..23)
        .map(|a| Edge {
            a,
            b: a + 1,
            kinds: EdgeKinds(a % 8),
            length: w[a as usize].distance(w[a as usize + 1]) + a as f32,
        })
        .collect();
    let p = PrecomputeParams {
        waypoints: Some(w.clone()),
        edges: Some(edges),
        range: Some(60.0),
        ..PrecomputeParams::default()
    };
    let table = |shard| {
        let mut m = fake_measure(&w);
        tables::precompute(
            &engine,
            &scene,
            "urban",
            &p,
            shard,
            Some(&mut m),
            |_, _, _| {},
        )
        .unwrap()
        .to_bytes()
        .unwrap()
    };
    let v2 = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/v2-rock-nav.slt");
    vec![
        ("complete", table(None)),
        ("shard 1/3", table(Some((1, 3)))),
        ("version 2", std::fs::read(v2).unwrap()),
    ]
}

#[test]
fn mutated_tables_are_refused_or_consistent_never_a_panic() {
    let start = std::time::Instant::now();
    let mut rng = SplitMix64(0x5eed_7ab1e);
    for (name, good) in seeds() {
        check_invariants(&TableFile::from_bytes(&good, name).unwrap(), &good);
        let (mut accepted, mut refused) = (0, 0);
        let mut by_kind = std::collections::BTreeMap::<&str, (u32, u32)>::new();
        for k in 0..MUTANTS_PER_FILE {
            let mut bad = good.clone();
            let mut kinds = Vec::new();
            for _ in 0..1 + pick(&mut rng, 2) {
                kinds.push(mutate(&mut bad, &mut rng));
            }
            if rng.next_u64().is_multiple_of(2) && bad.len() >= 24 {
                let len = bad.len() as u64;
                bad[16..24].copy_from_slice(&len.to_le_bytes());
            }
            fix_checksum(&mut bad);
            let result = catch_unwind(AssertUnwindSafe(|| TableFile::from_bytes(&bad, "fuzz.slt")));
            let parsed = result.unwrap_or_else(|_| {
                let path = std::env::temp_dir().join(format!("table-fuzz-panic-{k}.slt"));
                std::fs::write(&path, &bad).unwrap();
                panic!(
                    "{name} mutant {k} ({kinds:?}) panicked the reader; input saved to {}",
                    path.display()
                )
            });
            let entry = by_kind.entry(kinds[0]).or_default();
            match parsed {
                Ok(t) => {
                    accepted += 1;
                    entry.0 += 1;
                    let ok = catch_unwind(AssertUnwindSafe(|| check_invariants(&t, &bad)));
                    assert!(
                        ok.is_ok(),
                        "{name} mutant {k} ({kinds:?}) was accepted but is inconsistent"
                    );
                }
                Err(e) => {
                    refused += 1;
                    entry.1 += 1;
                    assert!(matches!(e, sightline::Error::Load { .. }), "{e:?}");
                    assert!(e.to_string().contains("fuzz.slt"));
                }
            }
        }
        println!("{name}: {MUTANTS_PER_FILE} mutants, {accepted} accepted, {refused} refused");
        for (kind, (a, r)) in &by_kind {
            println!("  {kind:20} accepted {a:5} refused {r:5}");
        }
        assert!(refused > MUTANTS_PER_FILE / 2, "{name}: too few refused");
        assert!(
            accepted > 0,
            "{name}: no mutant accepted: the harness only tests the checksum"
        );
    }
    println!("fuzzed in {:.2?}", start.elapsed());
}

/// A file claiming 2^40 waypoints (checksum valid) is refused before anything is allocated.
#[test]
fn huge_counts_are_refused_before_allocating() {
    let (_, good) = seeds().remove(0);
    for (at, v) in [(24usize, 1u64 << 40), (24, 1 << 22 | 1)] {
        let mut bad = good.clone();
        bad[at..at + 8].copy_from_slice(&v.to_le_bytes());
        fix_checksum(&mut bad);
        let msg = TableFile::from_bytes(&bad, "huge.slt")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("huge.slt"), "{msg}");
    }
    let mut bad = good.clone();
    bad[24..32].copy_from_slice(&(1u64 << 40).to_le_bytes());
    fix_checksum(&mut bad);
    let msg = TableFile::from_bytes(&bad, "huge.slt")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("over the limit"), "{msg}");
    let (h, heads) = heads_v3(&good).unwrap();
    assert!(h >= 80);
    let mut bad = good.clone();
    bad[heads[3] + 8..heads[3] + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    fix_checksum(&mut bad);
    let msg = TableFile::from_bytes(&bad, "huge.slt")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("IVIS") && msg.contains("remain"), "{msg}");
}

/// Checksum-valid files with one inconsistency each: the error names what is wrong.
#[test]
fn consistent_checksum_inconsistent_content_is_named() {
    let (_, good) = seeds().remove(0);
    let (_, heads) = heads_v3(&good).unwrap();
    let t = TableFile::from_bytes(&good, "good.slt").unwrap();
    type Corrupt = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Corrupt)> = vec![
        (
            "eye height",
            Box::new(|b| b[40..44].copy_from_slice(&f32::NAN.to_bits().to_le_bytes())),
        ),
        (
            "range",
            Box::new(|b| b[44..48].copy_from_slice(&(-3.0f32).to_bits().to_le_bytes())),
        ),
        (
            "max slope",
            Box::new(|b| b[52..56].copy_from_slice(&f32::INFINITY.to_bits().to_le_bytes())),
        ),
        (
            "shard",
            Box::new(|b| b[60..64].copy_from_slice(&1u32.to_le_bytes())),
        ),
        (
            "shard",
            Box::new(|b| b[64..68].copy_from_slice(&0u32.to_le_bytes())),
        ),
        (
            "shard",
            Box::new(|b| b[64..68].copy_from_slice(&70_000u32.to_le_bytes())),
        ),
        ("flag", Box::new(|b| b[12] |= 0x40)),
        ("reserved", Box::new(move |b| b[heads[1] + 4] = 1)),
        (
            "waypoint",
            Box::new(move |b| {
                b[heads[0] + 16..heads[0] + 20].copy_from_slice(&f32::NAN.to_bits().to_le_bytes())
            }),
        ),
        (
            "sees lists",
            Box::new(|b| {
                let (_, h) = heads_v3(b).unwrap();
                // Clear one set LOS bit: its pair is still listed.
                let at = (h[1] + 16..h[2]).find(|&k| b[k] != 0).unwrap();
                b[at] &= b[at] - 1;
            }),
        ),
        (
            "intervis entry",
            Box::new(move |b| {
                let at = heads[3] + 16 + 24;
                b[at..at + 2].copy_from_slice(&0x7e00u16.to_le_bytes());
            }),
        ),
    ];
    let _ = t;
    for (want, edit) in cases {
        let mut bad = good.clone();
        edit(&mut bad);
        fix_checksum(&mut bad);
        let msg = TableFile::from_bytes(&bad, "bad.slt")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("bad.slt") && msg.contains(want),
            "{want}: {msg}"
        );
        assert!(
            !msg.contains("checksum"),
            "{want}: stopped at the checksum: {msg}"
        );
    }
}

/// A nav edge shorter than the straight line between its waypoints (here 0 m long), in a file
/// whose checksum is right: refused, naming the edge and both lengths. The writer refuses it too.
#[test]
fn edges_shorter_than_the_straight_line_are_refused() {
    let (_, good) = seeds().remove(0);
    let t = TableFile::from_bytes(&good, "good.slt").unwrap();
    let edges = t.edges.as_ref().unwrap();
    let straight = |e: &Edge| t.waypoints[e.a as usize].distance(t.waypoints[e.b as usize]);
    let k = (0..edges.len())
        .max_by(|&x, &y| straight(&edges[x]).total_cmp(&straight(&edges[y])))
        .unwrap();
    let (e, straight) = (edges[k], straight(&edges[k]));
    assert!(straight > 1.0, "{straight}");
    let (_, heads) = heads_v3(&good).unwrap();
    let at = heads[4] + 16 + 16 * k + 12;
    for (length, refused) in [
        (0.0, true),
        (0.9 * straight, true),
        (straight * (1.0 - 1e-7), false), // rounding: within the slack
        (straight, false),
    ] {
        let mut bad = good.clone();
        bad[at..at + 4].copy_from_slice(&length.to_bits().to_le_bytes());
        fix_checksum(&mut bad);
        match TableFile::from_bytes(&bad, "short.slt") {
            Ok(_) => assert!(!refused, "a {length} m edge {straight} m long loaded"),
            Err(err) => {
                let msg = err.to_string();
                assert!(refused, "{msg}");
                assert!(
                    msg.contains("short.slt")
                        && msg.contains(&format!("edge {k} ({}, {}) is {length} m long", e.a, e.b))
                        && msg.contains(&format!("{straight:.3}"))
                        && msg.contains("straight line"),
                    "{msg}"
                );
            }
        }
    }
    let mut table = t.clone();
    table.edges.as_mut().unwrap()[k].length = 0.0;
    let msg = table.to_bytes().unwrap_err().to_string();
    assert!(
        msg.contains(&format!("edge {k} ")) && msg.contains("0 m long"),
        "{msg}"
    );
}

/// A line-of-sight bit set for a pair farther apart than the table's range, with the sees lists
/// rebuilt to match and the checksum right: refused, naming the pair, its distance and the
/// range. The writer refuses such a table too.
#[test]
fn visible_pairs_beyond_the_range_are_refused() {
    let (_, good) = seeds().remove(0);
    let t = TableFile::from_bytes(&good, "good.slt").unwrap();
    let range = t.meta.range.unwrap();
    let n = t.los.n();
    // The last waypoint moved twice the range away from the first, the pair marked visible,
    // every other pair of it blocked (and no edges or intervis records that would involve it).
    let (i, j) = (0, n - 1);
    let mut pairs: Vec<(u32, u32)> = (0..n - 1)
        .flat_map(|a| (a + 1..n - 1).map(move |b| (a, b)))
        .filter(|&(a, b)| t.los.visible(a, b))
        .collect();
    pairs.push((i, j));
    let mut far = t.clone();
    far.waypoints[j as usize] = far.waypoints[0] + Vec3::X * 2.0 * range;
    far.los = tables::LosTable::from_pairs(n, pairs).unwrap();
    (far.edges, far.intervis) = (None, None);
    let msg = far.to_bytes().unwrap_err().to_string();
    assert!(msg.contains(&format!("waypoints {i} and {j}")), "{msg}");
    // Written as an unlimited table, then given the range back in its header.
    far.meta.range = None;
    let mut bad = far.to_bytes().unwrap();
    bad[44..48].copy_from_slice(&range.to_bits().to_le_bytes());
    fix_checksum(&mut bad);
    let msg = TableFile::from_bytes(&bad, "far.slt")
        .unwrap_err()
        .to_string();
    let d = far.waypoints[i as usize].distance(far.waypoints[j as usize]);
    assert!(
        msg.contains("far.slt")
            && msg.contains(&format!("waypoints {i} and {j} are {d} m apart"))
            && msg.contains(&format!("range of {range} m")),
        "{msg}"
    );
    // The same file with its own bits back reads.
    let mut own = t.clone();
    own.meta.range = None;
    let mut ok = own.to_bytes().unwrap();
    ok[44..48].copy_from_slice(&range.to_bits().to_le_bytes());
    fix_checksum(&mut ok);
    assert_eq!(TableFile::from_bytes(&ok, "ok.slt").unwrap(), t);
}
