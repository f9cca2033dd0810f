//! Mesh loaders: OBJ and glTF, good files, bad files, real files.

mod common;

use glam::Vec3;
use sightline::scene::{
    load_gltf, load_obj, LoadOptions, LoadReport, MaterialRules, UpAxis, Winding,
};
use sightline::{Error, MaterialFlags, Scene};
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

/// The 1-based line an OBJ load error names, and its message.
fn load_err_at(path: &Path) -> (Option<usize>, String) {
    match load_obj(path, &LoadOptions::default()) {
        Ok((_, r)) => panic!("expected an error, got {r}"),
        Err(e @ Error::Load { line, .. }) => (line, e.to_string()),
        Err(e) => panic!("expected Error::Load, got {e:?}"),
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
    let (line, msg) = load_err_at(&path);
    assert_eq!(line, Some(2), "{msg}");
    assert!(
        msg.contains("nan.obj:2: ") && msg.contains("vertex 2") && msg.contains("non-finite y"),
        "{msg}"
    );
    let (_dir, path) = obj("inf", "v 0 0 0\nv 1 0 0\nv 1 1 -inf\nf 1 2 3\n");
    let (line, msg) = load_err_at(&path);
    assert!(line == Some(3) && msg.contains("vertex 3"), "{msg}");
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
        let (line, msg) = load_err_at(&path);
        assert_eq!(line, Some(5), "{name}: {msg}");
        assert!(
            msg.contains(needle) && msg.contains("face 2") && msg.contains(":5: "),
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
fn obj_without_triangles_is_an_error_not_an_empty_scene() {
    for (name, text, detail) in [
        ("empty", "", "0 vertices"),
        ("comments", "# nothing here\n\n", "0 vertices"),
        ("verts_only", "v 0 0 0\nv 1 0 0\nv 1 1 0\n", "3 vertices"),
        ("lines_only", "v 0 0 0\nv 1 0 0\nl 1 2\n", "1 non-triangle"),
        (
            "all_degenerate",
            "v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n",
            "1 degenerate",
        ),
    ] {
        let (_dir, path) = obj(name, text);
        let msg = load_err(&path);
        assert!(
            msg.contains(&format!("{name}.obj: no triangles")) && msg.contains(detail),
            "{name}: {msg}"
        );
    }
}

#[test]
fn obj_truncated_files_are_errors_naming_the_line() {
    // Cut inside the vertex list: the faces after the cut refer to vertices that never came.
    let (_dir, path) = obj("cut_vertices", "v 0 0 0\nv 1 0 0\nf 1 2 3\nf 1 3 4\n");
    let (line, msg) = load_err_at(&path);
    assert_eq!(line, Some(3), "{msg}");
    assert!(
        msg.contains("face 1 refers to vertex 3") && msg.contains("only 2 vertices"),
        "{msg}"
    );
    // Cut in the middle of a vertex line, and in the middle of the last face.
    for (name, text, at, needle) in [
        (
            "mid_vertex",
            "v 0 0 0\nv 1 0 0\nv 1 1",
            3,
            "only 2 coordinates",
        ),
        (
            "mid_number",
            "v 0 0 0\nv 1 0 0\nv 1 1 0.\nv 1 1e",
            4,
            "malformed",
        ),
        (
            "mid_face",
            "v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3\nf 3 2",
            5,
            "ends inside face 2",
        ),
    ] {
        let (_dir, path) = obj(name, text);
        let (line, msg) = load_err_at(&path);
        assert_eq!(line, Some(at), "{name}: {msg}");
        assert!(msg.contains(needle), "{name}: {msg}");
    }
    // A short face in the middle of a complete file is a skipped element, as before.
    let (_dir, path) = obj("short_face", "v 0 0 0\nv 1 0 0\nv 1 1 0\nf 3 2\nf 1 2 3");
    assert_eq!(load_ok(&path).1.skipped, 1);
}

#[test]
fn obj_coordinates_beyond_the_limit_are_errors_naming_the_line() {
    let far = sightline::limits::MAX_COORDINATE * 2.0;
    let (_dir, path) = obj("far", &format!("v 0 0 0\nv 1 0 0\nv 1 {far} 0\nf 1 2 3\n"));
    let (line, msg) = load_err_at(&path);
    assert_eq!(line, Some(3), "{msg}");
    assert!(msg.contains("vertex 3") && msg.contains("limit"), "{msg}");
    // In range in the file but not after the scale.
    let (_dir, path) = obj("scaled", "v 0 0 0\nv 1 0 0\nv 1 5e8 0\nf 1 2 3\n");
    let options = LoadOptions {
        scale: 100.0,
        ..LoadOptions::default()
    };
    let e = load_obj(&path, &options).unwrap_err();
    assert!(
        matches!(e, Error::Load { line: Some(3), .. }) && e.to_string().contains("scale 100"),
        "{e}"
    );
}

#[test]
fn obj_vertex_weights_and_colours_follow_the_format() {
    let (_dir, path) = obj(
        "weights",
        "v 0 0 0 1\nv 2 0 0 2\nv 0 1 0 0.5 0.5 0.5\nf 1 2 3\n",
    );
    let (scene, _) = load_ok(&path);
    let t = scene.world_triangles()[0].0;
    assert_eq!(
        t,
        [Vec3::ZERO, Vec3::X, Vec3::Y],
        "w divides, rgb is ignored"
    );
    for (name, v, needle) in [
        ("w_zero", "v 1 1 0 0", "weight"),
        ("five", "v 1 1 0 1 1", "5 numbers"),
    ] {
        let (_dir, path) = obj(name, &format!("v 0 0 0\nv 1 0 0\n{v}\nf 1 2 3\n"));
        let (line, msg) = load_err_at(&path);
        assert!(line == Some(3) && msg.contains(needle), "{name}: {msg}");
    }
    let (_dir, path) = obj(
        "usemtl_empty",
        "v 0 0 0\nv 1 0 0\nv 1 1 0\nusemtl\nf 1 2 3\n",
    );
    let (line, msg) = load_err_at(&path);
    assert!(line == Some(4) && msg.contains("usemtl"), "{msg}");
}

#[test]
fn obj_with_200000_usemtl_names_loads_in_linear_time() {
    const NAMES: usize = 200_000;
    let mut text = String::from("v 0 0 0\nv 1 0 0\nv 1 1 0\n");
    for i in 0..NAMES {
        text.push_str(&format!("usemtl material_{i}\nf 1 2 3\n"));
    }
    text.push_str("usemtl material_7\nf 3 2 1\n");
    let (_dir, path) = obj("usemtl", &text);
    let start = std::time::Instant::now();
    let (scene, report) = load_ok(&path);
    let secs = start.elapsed().as_secs_f64();
    println!("{NAMES} usemtl names: loaded in {secs:.3} s");
    assert_eq!(report.triangles, NAMES + 1);
    assert_eq!(report.materials.len(), NAMES);
    assert_eq!(scene.materials().len(), NAMES);
    assert_eq!(report.materials[7], "material_7");
    assert_eq!(
        scene.world_triangles()[NAMES].1,
        7,
        "a repeated name reuses its entry"
    );
    let bound = if cfg!(debug_assertions) { 60.0 } else { 5.0 };
    assert!(secs < bound, "{secs:.3} s for {NAMES} usemtl names");
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

/// Options that read the file's winding as written: these test quads face down with nothing
/// under them, which [`Winding::Auto`] would turn over.
fn as_written() -> LoadOptions {
    LoadOptions {
        winding: Winding::Ccw,
        ..LoadOptions::default()
    }
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
    let (scene, report) = load_gltf(&path, &as_written()).unwrap_or_else(|e| panic!("{e}"));
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
    let (scene, report) = load_gltf(&path, &as_written()).unwrap_or_else(|e| panic!("{e}"));
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

/// Standard base64 of `bytes`, for `data:` URIs.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|f| f.to_le_bytes()).collect()
}

/// A one-node, one-mesh glTF whose buffer is `bin`, embedded as base64.
fn gltf_with(bin: &[u8], views: &str, accessors: &str, primitive: &str) -> String {
    format!(
        r#"{{"asset": {{"version": "2.0"}}, "scene": 0, "scenes": [{{"nodes": [0]}}],
"nodes": [{{"mesh": 0}}], "meshes": [{{"name": "m", "primitives": [{primitive}]}}],
"accessors": [{accessors}], "bufferViews": [{views}],
"buffers": [{{"uri": "data:application/octet-stream;base64,{}", "byteLength": {}}}]}}"#,
        base64(bin),
        bin.len()
    )
}

/// Four positions (a unit quad in y = 0) then six u16 indices: 60 bytes.
const QUAD_VIEWS: &str = r#"{"buffer": 0, "byteOffset": 0, "byteLength": 48},
{"buffer": 0, "byteOffset": 48, "byteLength": 12}"#;
const INDEXED: &str = r#"{"attributes": {"POSITION": 0}, "indices": 1}"#;

fn position_accessor(count: u64, extra: &str) -> String {
    format!(
        r#"{{"bufferView": 0, "componentType": 5126, "count": {count}, "type": "VEC3", "min": [0, 0, 0], "max": [1, 0, 1]{extra}}}"#
    )
}

fn index_accessor(count: u64) -> String {
    format!(r#"{{"bufferView": 1, "componentType": 5123, "count": {count}, "type": "SCALAR"}}"#)
}

fn quad_with(positions: &[f32; 12], indices: [u16; 6]) -> Vec<u8> {
    let mut bin = f32_bytes(positions);
    bin.extend(indices.iter().flat_map(|i| i.to_le_bytes()));
    bin
}

const QUAD: [f32; 12] = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0];

fn gltf_err(test: &str, json: &str) -> String {
    let dir = TempDir::new(test);
    let path = dir.write(&format!("{test}.gltf"), json);
    match load_gltf(&path, &LoadOptions::default()) {
        Ok((_, r)) => panic!("{test}: expected an error, got {r}"),
        Err(e @ Error::Load { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(&format!("{test}.gltf")), "{msg}");
            msg
        }
        Err(e) => panic!("{test}: expected Error::Load, got {e:?}"),
    }
}

/// The unit quad as mesh 0, under the given `nodes` (a JSON array body) and `scenes` (a JSON
/// array body; empty for a file without scenes).
fn gltf_nodes(nodes: &str, scenes: &str) -> String {
    let bin = quad_with(&QUAD, [0, 1, 2, 0, 2, 3]);
    let scene = if scenes.is_empty() {
        ""
    } else {
        r#""scene": 0,"#
    };
    format!(
        r#"{{"asset": {{"version": "2.0"}}, {scene} "scenes": [{scenes}], "nodes": [{nodes}],
"meshes": [{{"name": "quad", "primitives": [{INDEXED}]}}],
"accessors": [{}, {}], "bufferViews": [{QUAD_VIEWS}],
"buffers": [{{"uri": "data:application/octet-stream;base64,{}", "byteLength": {}}}]}}"#,
        position_accessor(4, ""),
        index_accessor(6),
        base64(&bin),
        bin.len()
    )
}

#[test]
fn gltf_shared_subtrees_are_refused_at_once() {
    // 40 nodes, each listing the next one twice as a child: 2^40 paths to the last node.
    let mut nodes: Vec<String> = (0..39)
        .map(|i| format!(r#"{{"name": "n{i}", "children": [{0}, {0}]}}"#, i + 1))
        .collect();
    nodes.push(r#"{"name": "n39", "mesh": 0}"#.into());
    let json = gltf_nodes(&nodes.join(","), r#"{"nodes": [0]}"#);
    let start = std::time::Instant::now();
    let msg = gltf_err("shared_twice", &json);
    assert!(start.elapsed().as_secs_f64() < 2.0, "{:?}", start.elapsed());
    assert!(
        msg.contains(r#"node 1 "n1" is listed as a child of node 0 and again of node 0"#)
            && msg.contains("only one parent"),
        "{msg}"
    );
    // The same sharing through two parents: node 2 is a child of nodes 0 and 1.
    let json = gltf_nodes(
        r#"{"children": [1, 2]}, {"children": [2]}, {"mesh": 0}"#,
        r#"{"nodes": [0]}"#,
    );
    let msg = gltf_err("two_parents", &json);
    assert!(
        msg.contains("node 2 \"\" is listed as a child of node 0 and again of node 1"),
        "{msg}"
    );
    // A root that is also a child, and a root listed twice.
    let json = gltf_nodes(r#"{"children": [1]}, {"mesh": 0}"#, r#"{"nodes": [0, 1]}"#);
    let msg = gltf_err("root_child", &json);
    assert!(
        msg.contains("node 1 \"\" is a root of scene 0 and also a child of node 0"),
        "{msg}"
    );
    let json = gltf_nodes(r#"{"mesh": 0}"#, r#"{"nodes": [0, 0]}"#);
    assert!(gltf_err("root_twice", &json).contains("node 0 \"\" is listed twice in scene 0"));
    // Without scenes, a cycle of parents would otherwise be left out silently.
    let json = gltf_nodes(
        r#"{"mesh": 0}, {"name": "a", "children": [2]}, {"name": "b", "children": [1], "mesh": 0}"#,
        "",
    );
    let msg = gltf_err("cycle", &json);
    assert!(msg.contains("is its own ancestor"), "{msg}");
    // With a scene, a cycle through its root is a root with a parent.
    let json = gltf_nodes(
        r#"{"children": [1]}, {"children": [0], "mesh": 0}"#,
        r#"{"nodes": [0]}"#,
    );
    assert!(gltf_err("scene_cycle", &json).contains("also a child of node 1"));
}

#[test]
fn gltf_mesh_instanced_by_several_nodes_loads() {
    // One mesh under three nodes (two of them siblings under a parent), each placed apart.
    let json = gltf_nodes(
        r#"{"translation": [0, 0, 0], "mesh": 0, "children": [1, 2]},
{"translation": [10, 0, 0], "mesh": 0}, {"translation": [20, 0, 0], "mesh": 0},
{"translation": [0, 5, 0], "mesh": 0}"#,
        r#"{"nodes": [0, 3]}"#,
    );
    let dir = TempDir::new("instanced");
    let path = dir.write("instanced.gltf", json);
    let (scene, report) =
        load_gltf(&path, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((report.objects, report.triangles), (4, 8), "{report:?}");
    let corners: Vec<Vec3> = scene
        .world_triangles()
        .iter()
        .step_by(2)
        .map(|t| t.0[0])
        .collect();
    let want = [(0.0, 0.0), (10.0, 0.0), (20.0, 0.0), (0.0, 5.0)];
    for (got, (x, y)) in corners.iter().zip(want) {
        assert!(close(*got, Vec3::new(x, y, 0.0)), "{corners:?}");
    }
}

#[test]
fn gltf_claiming_2_pow_31_vertices_is_refused_at_once() {
    // A sparse accessor without a bufferView: 2^31 zero vertices, one of them replaced.
    let mut bin = 0u32.to_le_bytes().to_vec();
    bin.extend(f32_bytes(&[1.0, 2.0, 3.0]));
    let views = r#"{"buffer": 0, "byteOffset": 0, "byteLength": 4},
{"buffer": 0, "byteOffset": 4, "byteLength": 12}"#;
    let accessor = r#"{"componentType": 5126, "count": 2147483648, "type": "VEC3", "min": [0, 0, 0], "max": [1, 2, 3],
"sparse": {"count": 1, "indices": {"bufferView": 0, "componentType": 5125}, "values": {"bufferView": 1}}}"#;
    let json = gltf_with(&bin, views, accessor, r#"{"attributes": {"POSITION": 0}}"#);
    assert!(json.len() < 800, "{} bytes", json.len());
    let start = std::time::Instant::now();
    let msg = gltf_err("huge_sparse", &json);
    assert!(start.elapsed().as_secs_f64() < 1.0, "{:?}", start.elapsed());
    let limit = sightline::limits::MAX_VERTICES.to_string();
    assert!(
        msg.contains("POSITION accessor 0") && msg.contains("2147483648") && msg.contains(&limit),
        "{msg}"
    );
    // The same claim on an indices accessor.
    let json = gltf_with(
        &quad_with(&QUAD, [0, 1, 2, 0, 2, 3]),
        QUAD_VIEWS,
        &format!("{}, {}", position_accessor(4, ""), index_accessor(1 << 31)),
        INDEXED,
    );
    let msg = gltf_err("huge_indices", &json);
    assert!(
        msg.contains("indices accessor 1") && msg.contains("2147483648") && msg.contains("limit"),
        "{msg}"
    );
}

#[test]
fn gltf_accessors_must_fit_their_buffer_views_and_buffers() {
    let bin = quad_with(&QUAD, [0, 1, 2, 0, 2, 3]);
    let indices = index_accessor(6);
    // Count x stride past the view: 5 vertices of 12 bytes in a 48-byte view.
    let json = gltf_with(
        &bin,
        QUAD_VIEWS,
        &format!("{}, {indices}", position_accessor(5, "")),
        INDEXED,
    );
    let msg = gltf_err("count_past_view", &json);
    assert!(
        msg.contains("POSITION accessor 0 reads 5 elements") && msg.contains("48 bytes"),
        "{msg}"
    );
    // A stride that makes 4 vertices span 60 bytes of a 48-byte view.
    let views = r#"{"buffer": 0, "byteOffset": 0, "byteLength": 48, "byteStride": 16},
{"buffer": 0, "byteOffset": 48, "byteLength": 12}"#;
    let json = gltf_with(
        &bin,
        views,
        &format!("{}, {indices}", position_accessor(4, "")),
        INDEXED,
    );
    assert!(gltf_err("stride_past_view", &json).contains("past its 48 bytes"));
    // A view past the end of its buffer.
    let views = r#"{"buffer": 0, "byteOffset": 0, "byteLength": 48},
{"buffer": 0, "byteOffset": 48, "byteLength": 120}"#;
    let json = gltf_with(
        &bin,
        views,
        &format!("{}, {}", position_accessor(4, ""), index_accessor(60)),
        INDEXED,
    );
    let msg = gltf_err("view_past_buffer", &json);
    assert!(
        msg.contains("buffer view 1") && msg.contains("holds 60 bytes"),
        "{msg}"
    );
}

#[test]
fn gltf_index_values_must_name_existing_vertices() {
    let bin = quad_with(&QUAD, [0, 1, 2, 0, 2, 7]);
    let json = gltf_with(
        &bin,
        QUAD_VIEWS,
        &format!("{}, {}", position_accessor(4, ""), index_accessor(6)),
        INDEXED,
    );
    let msg = gltf_err("index_range", &json);
    assert!(
        msg.contains("indices accessor 1")
            && msg.contains("index 5 (triangle 1) is vertex 7")
            && msg.contains("only 4"),
        "{msg}"
    );
}

#[test]
fn gltf_sparse_accessors_are_checked_and_applied() {
    // Quad positions, indices, then a sparse section: u16 index(es) and VEC3 value(s).
    let sparse = |indices: &[u16], values: &[f32]| {
        let mut bin = quad_with(&QUAD, [0, 1, 2, 0, 2, 3]);
        let mut idx: Vec<u8> = indices.iter().flat_map(|i| i.to_le_bytes()).collect();
        idx.resize(8, 0);
        bin.extend(idx);
        bin.extend(f32_bytes(values));
        bin
    };
    let views = r#"{"buffer": 0, "byteOffset": 0, "byteLength": 48},
{"buffer": 0, "byteOffset": 48, "byteLength": 12},
{"buffer": 0, "byteOffset": 60, "byteLength": 8},
{"buffer": 0, "byteOffset": 68, "byteLength": 24}"#;
    let accessors = |count: usize| {
        let extra = format!(
            r#", "sparse": {{"count": {count}, "indices": {{"bufferView": 2, "componentType": 5123}}, "values": {{"bufferView": 3}}}}"#
        );
        format!("{}, {}", position_accessor(4, &extra), index_accessor(6))
    };
    // A good one: vertex 2 moves up to y = 3.
    let dir = TempDir::new("sparse_ok");
    let json = gltf_with(
        &sparse(&[2], &[1.0, 3.0, 1.0, 0.0, 0.0, 0.0]),
        views,
        &accessors(1),
        INDEXED,
    );
    let path = dir.write("sparse_ok.gltf", json);
    let (scene, report) = load_gltf(&path, &as_written()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.triangles, 2);
    assert_eq!(scene.world_triangles()[0].0[2], Vec3::new(1.0, 3.0, 1.0));

    let values = [0.0; 6];
    for (name, idx, count, needle) in [
        (
            "sparse_index_range",
            &[9u16][..],
            1,
            "entry 0 is element 9, but the accessor has only 4",
        ),
        (
            "sparse_not_increasing",
            &[2, 1],
            2,
            "entry 1 is element 1 after 2",
        ),
        ("sparse_count", &[0, 1], 5, "sparse section of count 5"),
    ] {
        let json = gltf_with(&sparse(idx, &values), views, &accessors(count), INDEXED);
        let msg = gltf_err(name, &json);
        assert!(
            msg.contains("POSITION accessor 0") && msg.contains(needle),
            "{name}: {msg}"
        );
    }
    // Sparse values that run past their view: 3 values of 12 bytes in 24 bytes.
    let json = gltf_with(&sparse(&[0, 1, 2], &values), views, &accessors(3), INDEXED);
    let msg = gltf_err("sparse_values_past_view", &json);
    assert!(msg.contains("sparse values reads 3 elements"), "{msg}");
}

#[test]
fn gltf_bad_positions_are_errors_naming_the_accessor() {
    let far = sightline::limits::MAX_COORDINATE * 2.0;
    for (name, bad, needle) in [("nan", f32::NAN, "not finite"), ("far", far, "limit")] {
        let mut q = QUAD;
        q[4] = bad;
        let json = gltf_with(
            &quad_with(&q, [0, 1, 2, 0, 2, 3]),
            QUAD_VIEWS,
            &format!("{}, {}", position_accessor(4, ""), index_accessor(6)),
            INDEXED,
        );
        let msg = gltf_err(name, &json);
        assert!(
            msg.contains("vertex 1 of POSITION accessor 0") && msg.contains(needle),
            "{name}: {msg}"
        );
    }
}

#[test]
fn gltf_without_triangles_is_an_error() {
    let json = gltf_with(
        &quad_with(&QUAD, [0, 1, 2, 0, 2, 3]),
        QUAD_VIEWS,
        &format!("{}, {}", position_accessor(4, ""), index_accessor(6)),
        r#"{"attributes": {"POSITION": 0}, "indices": 1, "mode": 1}"#,
    );
    let msg = gltf_err("lines_only", &json);
    assert!(
        msg.contains("no triangles") && msg.contains("1 non-triangle"),
        "{msg}"
    );
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
    let start = std::time::Instant::now();
    let (scene, report) =
        load_obj(&path, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "{report} (loaded in {:.1} ms)",
        start.elapsed().as_secs_f64() * 1e3
    );
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

    // The same triangles, in the same order, as `tobj` makes of the file, less the dropped
    // degenerate ones.
    #[allow(clippy::needless_update)]
    let options = tobj::LoadOptions {
        triangulate: true,
        ignore_points: true,
        ignore_lines: true,
        ..Default::default()
    };
    let (models, _) = tobj::load_obj(&path, &options).unwrap();
    let reference: Vec<[Vec3; 3]> = models
        .iter()
        .flat_map(|m| {
            let p = &m.mesh.positions;
            let v = |i: u32| Vec3::from_slice(&p[3 * i as usize..3 * i as usize + 3]);
            m.mesh
                .indices
                .chunks_exact(3)
                .map(move |t| [v(t[0]), v(t[1]), v(t[2])])
        })
        .collect();
    assert_eq!(
        reference.len(),
        report.triangles + report.degenerate_dropped
    );
    let mut rest = reference.iter();
    for (i, (t, _)) in scene.world_triangles().iter().enumerate() {
        assert!(
            rest.any(|r| r == t),
            "{name}: triangle {i} {t:?} is not in tobj's order"
        );
    }
}

#[test]
fn real_dungeon_obj_loads() {
    check_real("dungeon.obj");
}

#[test]
fn real_nav_test_obj_loads() {
    check_real("nav_test.obj");
}
