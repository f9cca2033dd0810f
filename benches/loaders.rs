//! Loading meshes: a generated OBJ with 200,000 distinct `usemtl` names (one triangle each), the
//! case that was superlinear, and the real `dungeon.obj` when `../shared/data` is present; the
//! peer is the `tobj` crate parsing the same bytes in the same run (it parses only: no material
//! rules, no validation, no scene).
//!
//! ```text
//! cargo bench --bench loaders
//! ```

use criterion::{Criterion, Throughput};
use sightline::scene::{load_obj, LoadOptions};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

const NAMES: usize = 200_000;

fn many_materials() -> String {
    let mut s = String::with_capacity(NAMES * 60);
    for k in 0..NAMES {
        let (x, z) = ((k % 1000) as f32, (k / 1000) as f32);
        s += &format!(
            "v {x} 0 {z}\nv {} 0 {z}\nv {x} 0 {}\nusemtl mat_{k}\nf -3 -2 -1\n",
            x + 0.5,
            z + 0.5
        );
    }
    s
}

fn tobj_peer(text: &str) -> usize {
    let (models, _) = tobj::load_obj_buf(
        &mut text.as_bytes(),
        &tobj::LoadOptions {
            triangulate: true,
            single_index: false,
            ..Default::default()
        },
        |_| Ok(Default::default()),
    )
    .unwrap();
    models.iter().map(|m| m.mesh.indices.len() / 3).sum()
}

fn benches(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("sightline-bench-obj-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cases = vec![("usemtl_200k", dir.join("usemtl.obj"))];
    std::fs::write(&cases[0].1, many_materials()).unwrap();
    let data = std::env::var_os("SIGHTLINE_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data"));
    if data.join("dungeon.obj").exists() {
        cases.push(("dungeon", data.join("dungeon.obj")));
    }
    for (name, path) in cases {
        let text = std::fs::read_to_string(&path).unwrap();
        let (_, report) = load_obj(&path, &LoadOptions::default()).unwrap();
        assert_eq!(
            tobj_peer(&text),
            report.triangles + report.degenerate_dropped
        );
        let mut g = c.benchmark_group(format!("load_obj/{name}"));
        g.sample_size(10)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(5));
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function("sightline", |b| {
            b.iter(|| black_box(load_obj(&path, &LoadOptions::default()).unwrap()))
        });
        g.bench_function("tobj_peer", |b| b.iter(|| black_box(tobj_peer(&text))));
        g.finish();
    }
    std::fs::remove_dir_all(&dir).ok();
}

criterion::criterion_group!(group, benches);
criterion::criterion_main!(group);
