//! Wavefront OBJ. A quick scan of the text checks what `tobj` does not report precisely
//! (non-finite coordinates, bad indices, with their line numbers) and collects `usemtl` names;
//! `tobj` then builds the triangles.

use super::{load_error, Builder, LoadOptions, LoadReport};
use crate::scene::Scene;
use glam::Vec3;
use std::cell::RefCell;
use std::io::Read;
use std::path::Path;

/// A `mtllib` line fed to tobj ahead of the file. Its "library" holds one material per `usemtl`
/// name in the file, so every model keeps its material name even when the `.mtl` file is
/// missing. It cannot clash with a real file name: files holding NUL bytes are rejected.
const USEMTL_NAMES: &str = "\0sightline-usemtl-names";

/// Statements tobj ignores that carry no triangle geometry.
const HARMLESS: &[&str] = &[
    "vt",
    "vn",
    "vp",
    "s",
    "mtllib",
    "cstype",
    "deg",
    "bmat",
    "step",
    "parm",
    "trim",
    "hole",
    "scrv",
    "sp",
    "end",
    "con",
    "mg",
    "bevel",
    "c_interp",
    "d_interp",
    "lod",
    "usemap",
    "maplib",
    "shadow_obj",
    "trace_obj",
    "ctech",
    "stech",
];

/// Loads a Wavefront OBJ file (and its `.mtl`, whose absence is only a warning).
pub fn load_obj(
    path: impl AsRef<Path>,
    options: &LoadOptions,
) -> crate::Result<(Scene, LoadReport)> {
    let path = path.as_ref();
    let bytes = std::fs::read(path)
        .map_err(|e| load_error(path, format!("cannot read the file ({e}); check the path")))?;
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        return Err(load_error(
            path,
            format!("binary data (NUL byte at offset {at}), not a Wavefront OBJ text file; check the file, or use load_gltf for .glb"),
        ));
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut b = Builder::new(path, options)?;
    if matches!(text, std::borrow::Cow::Owned(_)) {
        b.warn("the file is not valid UTF-8; invalid bytes were replaced".into());
    }
    let scan = scan(&text).map_err(|m| load_error(path, m))?;

    // `..Default::default()` covers the fields tobj's optional features add.
    #[allow(clippy::needless_update)]
    let tobj_options = tobj::LoadOptions {
        triangulate: true,
        single_index: false,
        ignore_points: true,
        ignore_lines: true,
        ..Default::default()
    };
    let header = format!("mtllib {USEMTL_NAMES}\n");
    let mut reader = header.as_bytes().chain(text.as_bytes());
    let dir = path.parent().unwrap_or(Path::new(""));
    let mtl_warnings = RefCell::new(Vec::new());
    let (models, _) = tobj::load_obj_buf(&mut reader, &tobj_options, |lib| {
        if lib == Path::new(USEMTL_NAMES) {
            let mats = scan.usemtl.iter().map(|n| tobj::Material { name: n.clone(), ..Default::default() });
            let map = scan.usemtl.iter().enumerate().map(|(i, n)| (n.clone(), i));
            return Ok((mats.collect(), map.collect()));
        }
        let full = dir.join(lib);
        if let Err(e) = tobj::load_mtl(&full) {
            mtl_warnings.borrow_mut().push(format!(
                "material library {} could not be loaded ({e}); material names are taken from `usemtl` statements",
                full.display()
            ));
        }
        Ok(Default::default())
    })
    .map_err(|e| load_error(path, format!("OBJ parse error: {e}; check that the file is a complete Wavefront OBJ export")))?;
    for w in mtl_warnings.into_inner() {
        b.warn(w);
    }
    if let Some((line, text)) = &scan.first_unknown {
        b.warn(format!(
            "{} unrecognised statements ignored (first at line {line}: {text:?})",
            scan.unknown
        ));
    }

    for model in &models {
        let m = &model.mesh;
        let n = m.positions.len() / 3;
        let what = || format!("object {:?}", model.name);
        let points = m
            .positions
            .chunks_exact(3)
            .map(|c| Vec3::new(c[0], c[1], c[2]));
        let base = b.add_vertices(points, &what)?;
        let material = m
            .material_id
            .and_then(|i| scan.usemtl.get(i))
            .map(String::as_str);
        for t in m.indices.chunks_exact(3) {
            if let Some(&v) = t.iter().find(|&&v| v as usize >= n) {
                return Err(load_error(
                    path,
                    format!(
                        "{}: face uses vertex {v} of {n}; fix the face indices",
                        what()
                    ),
                ));
            }
            b.add_triangle([t[0] + base, t[1] + base, t[2] + base], material);
        }
    }
    b.report.skipped = scan.skipped;
    b.report.objects = scan.objects;
    let loaded = b.mesh.triangles.len() + b.report.degenerate_dropped;
    if loaded != scan.triangles {
        b.warn(format!(
            "the file's faces make {} triangles but {loaded} were loaded",
            scan.triangles
        ));
    }
    b.finish()
}

/// What the pre-scan found.
#[derive(Debug, Default)]
struct Scan {
    vertices: usize,
    /// Triangles the faces with 3+ vertices make when fan-triangulated.
    triangles: usize,
    skipped: usize,
    objects: usize,
    /// Distinct `usemtl` names in order of appearance, extracted exactly as tobj does.
    usemtl: Vec<String>,
    recognised: usize,
    unknown: usize,
    first_unknown: Option<(usize, String)>,
}

/// Checks vertices and face indices, naming the line of the first problem.
fn scan(text: &str) -> Result<Scan, String> {
    let mut s = Scan::default();
    let mut section_has_faces = false;
    let mut faces = 0usize;
    // Positive indices beyond the vertices read so far: tobj allows them if defined later.
    let mut forward: Vec<(usize, usize, usize)> = Vec::new();
    for (line_no, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l)) {
        let mut words = line.split_whitespace();
        let Some(key) = words.next() else { continue };
        if key.starts_with('#') {
            continue;
        }
        s.recognised += 1;
        match key {
            "v" => {
                s.vertices += 1;
                let v = s.vertices;
                for k in 0..3 {
                    let word = words.next().unwrap_or("");
                    let x: f32 = word.parse().map_err(|_| {
                        format!("line {line_no}: vertex {v} has a malformed coordinate {word:?}; write `v x y z` with decimal numbers")
                    })?;
                    if !x.is_finite() {
                        return Err(format!(
                            "line {line_no}: vertex {v} has a non-finite {} coordinate ({word}); replace it with a finite number, or delete the vertex and the faces using it",
                            ["x", "y", "z"][k]
                        ));
                    }
                }
            }
            "f" => {
                faces += 1;
                let mut count = 0usize;
                for word in words {
                    count += 1;
                    let first = word.split('/').next().unwrap_or("");
                    let i: i64 = first.parse().map_err(|_| {
                        format!("line {line_no}: face {faces} has a malformed vertex reference {word:?}; use v, v/vt, v//vn or v/vt/vn")
                    })?;
                    let bad = |why: String| {
                        format!("line {line_no}: face {faces} refers to vertex {i}, {why}; fix the index")
                    };
                    if i == 0 {
                        return Err(bad("but OBJ indices start at 1".into()));
                    } else if i < 0 && i.unsigned_abs() as usize > s.vertices {
                        return Err(bad(format!("but only {} vertices precede it", s.vertices)));
                    } else if i > 0 && i as usize > s.vertices {
                        forward.push((line_no, faces, i as usize));
                    }
                }
                if count >= 3 {
                    s.triangles += count - 2;
                    section_has_faces = true;
                } else {
                    s.skipped += 1;
                }
            }
            "o" | "g" => {
                s.objects += usize::from(section_has_faces);
                section_has_faces = false;
            }
            "usemtl" => {
                let name = line.split_once(' ').unwrap_or_default().1.trim();
                if !name.is_empty() && !s.usemtl.iter().any(|n| n == name) {
                    s.usemtl.push(name.to_string());
                }
            }
            "l" | "p" | "curv" | "curv2" | "surf" => s.skipped += 1,
            k if HARMLESS.contains(&k) => {}
            _ => {
                s.recognised -= 1;
                s.unknown += 1;
                if s.first_unknown.is_none() {
                    s.first_unknown = Some((line_no, line.chars().take(40).collect()));
                }
            }
        }
    }
    s.objects += usize::from(section_has_faces);
    if let Some(&(line, face, i)) = forward.iter().find(|f| f.2 > s.vertices) {
        return Err(format!(
            "line {line}: face {face} refers to vertex {i} but the file has only {} vertices; fix the index",
            s.vertices
        ));
    }
    if s.recognised == 0 {
        if let Some((line, text)) = &s.first_unknown {
            return Err(format!(
                "no OBJ statements found (line {line} reads {text:?}); this does not look like a Wavefront OBJ file"
            ));
        }
    }
    Ok(s)
}
