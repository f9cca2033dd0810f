//! Mesh loaders: OBJ and glTF, good files, bad files, real files.

mod common;

use glam::Vec3;
use sightline::scene::{load_gltf, load_obj, LoadOptions, LoadReport, MaterialRules, UpAxis};
use sightline::{MaterialFlags, Scene};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh folder under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "sightline-loaders-{}-{test}-{n}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn obj(test: &str, text: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new(test);
    let path = dir.write(&format!("{test}.obj"), text);
    (dir, path)
}

fn load_ok(path: &Path) -> (Scene, LoadReport) {
    let (scene, report) = load_obj(path, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scene.triangle_count(), report.triangles);
    (scene, report)
}

fn load_err(path: &Path) -> String {
    match load_obj(path, &LoadOptions::default()) {
        Ok((_, r)) => panic!("expected an error, got {r}"),
        Err(e) => e.to_string(),
    }
}

/// Bounds of the scene's triangles, computed without the BVH.
fn bounds(scene: &Scene) -> (Vec3, Vec3) {
    let tris = scene.world_triangles();
    let pts = tris.iter().flat_map(|(t, _)| t.iter().copied());
    pts.fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), p| {
        (lo.min(p), hi.max(p))
    })
}

fn close(a: Vec3, b: Vec3) -> bool {
    (a - b).abs().max_element() < 1e-5
}

const CUBE: &str = "\
# a 1 x 2 x 3 box
v 0 0 0
v 1 0 0
v 1 2 0
v 0 2 0
v 0 0 3
v 1 0 3
v 1 2 3
v 0 2 3
o box
f 1 4 3 2
f 5 6 7 8
f 1 2 6 5
f 2 3 7 6
f 3 4 8 7
f 4 1 5 8
";

#[test]
fn obj_cube_has_12_triangles_and_its_bounds() {
    let (_dir, path) = obj("cube", CUBE);
    let (scene, report) = load_ok(&path);
    assert_eq!(report.triangles, 12);
    assert_eq!(
        (report.degenerate_dropped, report.skipped, report.objects),
        (0, 0, 1)
    );
    assert_eq!(report.materials, ["default"]);
    assert_eq!(
        scene.materials()[0].flags,
        MaterialFlags::SOLID | MaterialFlags::WALKABLE
    );
    assert_eq!(bounds(&scene), (Vec3::ZERO, Vec3::new(1.0, 2.0, 3.0)));
    // Triangle ids follow the file: the first face's fan comes first.
    let first = scene.world_triangles()[0].0;
    assert_eq!(
        first,
        [
            Vec3::ZERO,
            Vec3::new(0.0, 2.0, 0.0),
            Vec3::new(1.0, 2.0, 0.0)
        ]
    );
    assert_eq!(report.to_string(), "cube.obj: 12 triangles, 1 material");
}

#[test]
fn obj_materials_come_from_the_mtl_and_are_mapped_by_rules() {
    let dir = TempDir::new("mtl");
    dir.write(
        "walls.mtl",
        "newmtl Window_Glass\nKd 0.8 0.9 1.0\n\nnewmtl concrete\nKd 0.5 0.5 0.5\n",
    );
    let path = dir.write(
        "walls.obj",
        "mtllib walls.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n\
         usemtl concrete\nf 1 2 3\nusemtl Window_Glass\nf 1 3 4\nusemtl concrete\nf 3 2 1\n",
    );
    let (scene, report) = load_ok(&path);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(report.materials, ["concrete", "Window_Glass"]);
    let mats = scene.materials();
    assert_eq!(mats.len(), 2, "one table entry per distinct material");
    assert_eq!(
        mats[1].flags,
        MaterialFlags::BLOCKS_FIRE,
        "glass stops bullets but not sight"
    );
    assert_eq!(
        mats[0].flags,
        MaterialFlags::SOLID | MaterialFlags::WALKABLE
    );
    let per_tri: Vec<u32> = scene.world_triangles().iter().map(|t| t.1).collect();
    assert_eq!(per_tri, [0, 1, 0]);

    // User rules come first.
    let rules = MaterialRules::standard().with_rule("concrete", MaterialFlags::BLOCKS_SIGHT, 0.9);
    let options = LoadOptions {
        rules,
        ..LoadOptions::default()
    };
    let (scene, _) = load_obj(&path, &options).unwrap();
    assert_eq!(scene.materials()[0].flags, MaterialFlags::BLOCKS_SIGHT);
}

#[test]
fn obj_missing_mtl_warns_and_keeps_usemtl_names() {
    let (_dir, path) = obj(
        "nomtl",
        "mtllib gone.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3\nusemtl hedge_01\nf 1 3 2\n",
    );
    let (scene, report) = load_ok(&path);
    assert_eq!(report.materials, ["default", "hedge_01"]);
    assert_eq!(scene.materials()[1].flags, MaterialFlags::BLOCKS_SIGHT);
    assert_eq!(report.warnings.len(), 1);
    assert!(
        report.warnings[0].contains("gone.mtl"),
        "{:?}",
        report.warnings
    );
}

#[test]
fn obj_nan_coordinate_is_an_error_naming_file_line_and_vertex() {
    let (_dir, path) = obj("nan", "v 0 0 0\nv 1 nan 0\nv 1 1 0\nf 1 2 3\n");
    let msg = load_err(&path);
    assert!(
        msg.contains("nan.obj") && msg.contains("vertex 2") && msg.contains("line 2"),
        "{msg}"
    );
    let (_dir, path) = obj("inf", "v 0 0 0\nv 1 0 0\nv 1 1 -inf\nf 1 2 3\n");
    assert!(load_err(&path).contains("vertex 3"));
}

#[test]
fn obj_out_of_range_indices_are_errors_not_panics() {
    for (name, face, needle) in [
        ("past_end", "f 1 2 9", "vertex 9"),
        ("zero", "f 0 1 2", "start at 1"),
        ("negative", "f -1 -2 -7", "vertex -7"),
        ("huge", "f 1 2 99999999999999999999", "malformed"),
        ("malformed", "f 1 2 x", "malformed"),
    ] {
        let (_dir, path) = obj(
            name,
            &format!("v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3\n{face}\n"),
        );
        let msg = load_err(&path);
        assert!(
            msg.contains(needle) && msg.contains("face 2") && msg.contains("line 5"),
            "{name}: {msg}"
        );
    }
}

#[test]
fn obj_degenerate_faces_are_dropped_and_counted() {
    let (_dir, path) = obj(
        "degenerate",
        "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 2 0 0\nv 0 1 0\n\
         f 1 2 3\nf 1 1 3\nf 1 2 4\nf 1 3 5\n",
    );
    let (scene, report) = load_ok(&path);
    assert_eq!((report.triangles, report.degenerate_dropped), (2, 2));
    assert!(
        report.to_string().contains("(2 degenerate dropped)"),
        "{report}"
    );
    let kept: Vec<[Vec3; 3]> = scene.world_triangles().iter().map(|t| t.0).collect();
    assert_eq!(
        kept[1],
        [
            Vec3::ZERO,
            Vec3::new(1.0, 1.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0)
        ]
    );
}

#[test]
fn obj_empty_file_is_an_empty_scene() {
    for (name, text) in [
        ("empty", ""),
        ("comments", "# nothing here\n\n"),
        ("verts_only", "v 0 0 0\n"),
    ] {
        let (_dir, path) = obj(name, text);
        let (scene, report) = load_ok(&path);
        assert_eq!(
            (scene.triangle_count(), report.triangles, report.objects),
            (0, 0, 0),
            "{name}"
        );
    }
}

#[test]
fn obj_points_and_lines_are_skipped_and_counted() {
    let (_dir, path) = obj(
        "lines",
        "v 0 0 0\nv 1 0 0\nv 1 1 0\nl 1 2\np 1\nf 1 2\nf 1 2 3\n",
    );
    let (_, report) = load_ok(&path);
    assert_eq!((report.triangles, report.skipped), (1, 3));
}

#[test]
fn garbage_and_binary_files_are_errors() {
    let (_dir, path) = obj("text", "hello world\nthis is not a mesh\n");
    assert!(load_err(&path).contains("not look like a Wavefront OBJ"));
    let dir = TempDir::new("binary");
    let bytes: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let path = dir.write("binary.obj", &bytes);
    assert!(load_err(&path).contains("binary"));
    let path = dir.write("binary.gltf", &bytes);
    assert!(load_gltf(&path, &LoadOptions::default()).is_err());
    let path = dir.write("binary.glb", &bytes);
    assert!(load_gltf(&path, &LoadOptions::default()).is_err());
}

#[test]
fn missing_files_are_errors_naming_the_path() {
    let path = std::env::temp_dir().join("sightline-no-such-dir/level.obj");
    let msg = load_err(&path);
    assert!(
        msg.contains("sightline-no-such-dir/level.obj") && msg.contains("check the path"),
        "{msg}"
    );
    let path = path.with_extension("gltf");
    let msg = load_gltf(&path, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("sightline-no-such-dir/level.gltf"), "{msg}");
}

#[test]
fn z_up_files_are_converted_to_y_up_and_scaled() {
    let (_dir, path) = obj(
        "zup",
        "v 0 0 0\nv 1 0 0\nv 0 0 5\nv 1 2 5\nf 1 2 3\nf 2 4 3\n",
    );
    let options = LoadOptions {
        up: UpAxis::Z,
        ..LoadOptions::default()
    };
    let (scene, _) = load_obj(&path, &options).unwrap();
    let tris = scene.world_triangles();
    assert_eq!(
        tris[0].0[2],
        Vec3::new(0.0, 5.0, 0.0),
        "z = 5 becomes y = 5"
    );
    assert_eq!(
        tris[1].0[1],
        Vec3::new(1.0, 5.0, -2.0),
        "(x, y, z) -> (x, z, -y)"
    );
    let options = LoadOptions {
        up: UpAxis::Z,
        scale: 0.5,
        ..LoadOptions::default()
    };
    let (scene, _) = load_obj(&path, &options).unwrap();
    assert_eq!(scene.world_triangles()[1].0[1], Vec3::new(0.5, 2.5, -1.0));
    let options = LoadOptions {
        scale: f32::NAN,
        ..LoadOptions::default()
    };
    assert!(load_obj(&path, &options)
        .unwrap_err()
        .to_string()
        .contains("scale"));
}

// ---- glTF ----

/// A quad (4 positions, 6 u16 indices) followed by nothing: 60 bytes.
fn quad_bin() -> Vec<u8> {
    let pos: [f32; 12] = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0];
    let idx: [u16; 6] = [0, 1, 2, 0, 2, 3];
    let mut bin: Vec<u8> = pos.iter().flat_map(|f| f.to_le_bytes()).collect();
    bin.extend(idx.iter().flat_map(|i| i.to_le_bytes()));
    bin
}

/// Parent (translate x+10) -> child (scale 2, 90 degrees about +Y) with the quad, material
/// "Window_Glass", plus a lines primitive; root "plain" (translate y+5) with a non-indexed
/// triangle and no material.
fn quad_gltf(buffer: &str, index_count: usize) -> String {
    format!(
        r#"{{
  "asset": {{"version": "2.0"}},
  "scene": 0,
  "scenes": [{{"nodes": [0, 2]}}],
  "nodes": [
    {{"name": "parent", "translation": [10, 0, 0], "children": [1]}},
    {{"name": "child", "scale": [2, 2, 2], "rotation": [0, 0.70710677, 0, 0.70710677], "mesh": 0}},
    {{"name": "plain", "translation": [0, 5, 0], "mesh": 1}}
  ],
  "meshes": [
    {{"name": "quad", "primitives": [
      {{"attributes": {{"POSITION": 0}}, "indices": 1, "material": 0}},
      {{"attributes": {{"POSITION": 0}}, "indices": 1, "mode": 1}}
    ]}},
    {{"name": "tri", "primitives": [{{"attributes": {{"POSITION": 2}}}}]}}
  ],
  "materials": [{{"name": "Window_Glass"}}],
  "accessors": [
    {{"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3", "min": [0, 0, 0], "max": [1, 0, 1]}},
    {{"bufferView": 1, "componentType": 5123, "count": {index_count}, "type": "SCALAR"}},
    {{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3", "min": [0, 0, 0], "max": [1, 0, 1]}}
  ],
  "bufferViews": [
    {{"buffer": 0, "byteOffset": 0, "byteLength": 48}},
    {{"buffer": 0, "byteOffset": 48, "byteLength": 12}}
  ],
  "buffers": [{{{buffer} "byteLength": 60}}]
}}"#
    )
}

fn check_quad_scene(scene: &Scene, report: &LoadReport) {
    assert_eq!(
        (report.triangles, report.skipped, report.objects),
        (3, 1, 2),
        "{report:?}"
    );
    assert_eq!(report.materials, ["Window_Glass", "default"]);
    assert_eq!(scene.materials()[0].flags, MaterialFlags::BLOCKS_FIRE);
    let v = |x, y, z| Vec3::new(x, y, z);
    let expect = [
        [v(10.0, 0.0, 0.0), v(10.0, 0.0, -2.0), v(12.0, 0.0, -2.0)],
        [v(10.0, 0.0, 0.0), v(12.0, 0.0, -2.0), v(12.0, 0.0, 0.0)],
        [v(0.0, 5.0, 0.0), v(1.0, 5.0, 0.0), v(1.0, 5.0, 1.0)],
    ];
    let tris = scene.world_triangles();
    for (i, (got, want)) in tris.iter().zip(&expect).enumerate() {
        assert!(
            got.0.iter().zip(want).all(|(&a, &b)| close(a, b)),
            "triangle {i}: {:?} != {want:?}",
            got.0
        );
    }
    assert_eq!(tris.iter().map(|t| t.1).collect::<Vec<_>>(), [0, 0, 1]);
}

#[test]
fn gltf_node_transforms_and_materials_are_applied() {
    let dir = TempDir::new("gltf");
    dir.write("quad.bin", quad_bin());
    let path = dir.write("quad.gltf", quad_gltf(r#""uri": "quad.bin","#, 6));
    let (scene, report) =
        load_gltf(&path, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    check_quad_scene(&scene, &report);
}

#[test]
fn glb_loads_like_gltf() {
    let dir = TempDir::new("glb");
    let mut json = quad_gltf("", 6).into_bytes();
    while !json.len().is_multiple_of(4) {
        json.push(b' ');
    }
    let bin = quad_bin(); // 60 bytes, already a multiple of 4
    let mut glb = Vec::new();
    glb.extend(b"glTF");
    glb.extend(2u32.to_le_bytes());
    glb.extend((12 + 8 + json.len() as u32 + 8 + bin.len() as u32).to_le_bytes());
    glb.extend((json.len() as u32).to_le_bytes());
    glb.extend(b"JSON");
    glb.extend(&json);
    glb.extend((bin.len() as u32).to_le_bytes());
    glb.extend(b"BIN\0");
    glb.extend(&bin);
    let path = dir.write("quad.glb", glb);
    let (scene, report) =
        load_gltf(&path, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    check_quad_scene(&scene, &report);
}

#[test]
fn gltf_broken_buffers_are_errors_not_panics() {
    let dir = TempDir::new("gltf_broken");
    // The .bin is shorter than the buffer's declared byteLength.
    dir.write("short.bin", &quad_bin()[..40]);
    let path = dir.write("short.gltf", quad_gltf(r#""uri": "short.bin","#, 6));
    let msg = load_gltf(&path, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("short.gltf") && msg.contains("buffer"),
        "{msg}"
    );
    // The .bin is missing.
    let path = dir.write("nobin.gltf", quad_gltf(r#""uri": "nobin.bin","#, 6));
    assert!(load_gltf(&path, &LoadOptions::default()).is_err());
    // An accessor reads past its buffer view.
    dir.write("quad.bin", quad_bin());
    let path = dir.write("overrun.gltf", quad_gltf(r#""uri": "quad.bin","#, 600));
    let msg = load_gltf(&path, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("indices accessor 1") && msg.contains("primitive 0"),
        "{msg}"
    );
    // Indices that are not whole triangles.
    let path = dir.write("partial.gltf", quad_gltf(r#""uri": "quad.bin","#, 5));
    let msg = load_gltf(&path, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("multiple of 3"), "{msg}");
    // Not JSON at all.
    let path = dir.write("text.gltf", "{ this is not json");
    assert!(load_gltf(&path, &LoadOptions::default())
        .unwrap_err()
        .to_string()
        .contains("glTF"));
}

// ---- real data ----

/// Triangles the `f` lines of an OBJ make, counting an n-gon as a fan of n - 2.
fn count_obj_triangles(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| l.starts_with("f "))
        .map(|l| l.split_whitespace().count() - 1)
        .map(|n| n.saturating_sub(2))
        .sum()
}

fn check_real(name: &str) {
    let path = common::data_dir().join(name);
    let (scene, report) =
        load_obj(&path, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    println!("{report}");
    assert!(report.triangles > 0, "{report}");
    assert_eq!(scene.triangle_count(), report.triangles);
    assert_eq!(
        report.triangles + report.degenerate_dropped,
        count_obj_triangles(&path),
        "{report}"
    );
    let (lo, hi) = bounds(&scene);
    assert!(
        lo.is_finite() && hi.is_finite() && lo.cmple(hi).all(),
        "{lo} {hi}"
    );
    assert_eq!(report.materials.len(), scene.materials().len());
}

#[test]
fn real_dungeon_obj_loads() {
    check_real("dungeon.obj");
}

#[test]
fn real_nav_test_obj_loads() {
    check_real("nav_test.obj");
}
