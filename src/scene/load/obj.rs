//! Wavefront OBJ, parsed in one pass over the text. Every problem is an error naming the file
//! and the 1-based line. Faces are fan-triangulated in place (`f a b c d` makes `a b c` and
//! `a c d`); a face's material is the last `usemtl` before it, or the rules' default.

use super::{load_error, Builder, LoadOptions, LoadReport};
use crate::limits::{MAX_TRIANGLES, MAX_VERTICES};
use crate::scene::Scene;
use crate::Error;
use glam::Vec3;
use std::collections::HashMap;
use std::path::Path;

/// Statements that carry no triangle geometry and are ignored.
const HARMLESS: &[&str] = &[
    "vt",
    "vn",
    "vp",
    "s",
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
    let parsed = parse(&text, &mut b)?;

    let dir = path.parent().unwrap_or(Path::new(""));
    for lib in &parsed.mtllib {
        let full = dir.join(lib);
        if let Err(e) = tobj::load_mtl(&full) {
            b.warn(format!(
                "material library {} could not be loaded ({e}); material names are taken from `usemtl` statements",
                full.display()
            ));
        }
    }
    if let Some((line, text)) = &parsed.first_unknown {
        b.warn(format!(
            "{} unrecognised statements ignored (first at line {line}: {text:?})",
            parsed.unknown
        ));
    }

    let n = b.mesh.positions.len();
    for (k, face) in parsed.faces.iter().enumerate() {
        let end = parsed
            .faces
            .get(k + 1)
            .map_or(parsed.corners.len(), |f| f.start);
        let corners = &parsed.corners[face.start..end];
        if let Some(&v) = corners.iter().find(|&&v| v as usize >= n) {
            return Err(Error::load_at(
                path.display(),
                face.line,
                format!(
                    "face {} refers to vertex {} but the file has only {n} vertices; the file may be truncated, or fix the index",
                    face.number,
                    u64::from(v) + 1
                ),
            ));
        }
        let material = face.material.map(|m| parsed.materials[m as usize].as_str());
        for pair in corners[1..].windows(2) {
            b.add_triangle([corners[0], pair[0], pair[1]], material);
        }
    }
    b.report.skipped = parsed.skipped;
    b.report.objects = parsed.objects;
    b.finish()
}

/// A face: its corners are `corners[start..next face's start]`, as 0-based vertex indices.
struct Face {
    line: usize,
    /// 1-based count of `f` statements.
    number: usize,
    start: usize,
    /// Index into [`Parsed::materials`]; `None` before the first `usemtl`.
    material: Option<u32>,
}

/// What one pass over the text found. Vertices go straight into the builder.
#[derive(Default)]
struct Parsed {
    faces: Vec<Face>,
    corners: Vec<u32>,
    /// Distinct `usemtl` names in order of appearance.
    materials: Vec<String>,
    mtllib: Vec<String>,
    skipped: usize,
    objects: usize,
    unknown: usize,
    first_unknown: Option<(usize, String)>,
}

/// Parses the statements, converting vertices into `b` and collecting faces.
fn parse(text: &str, b: &mut Builder) -> crate::Result<Parsed> {
    let mut r = Reader::new(text);
    for (line_no, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l)) {
        let mut words = line.split_whitespace();
        let Some(key) = words.next() else { continue };
        if key.starts_with('#') {
            continue;
        }
        r.recognised += 1;
        match key {
            "v" => r.vertex(b, words, line_no)?,
            "f" => r.face(b, words, line_no)?,
            "o" | "g" => {
                r.p.objects += usize::from(r.section_has_faces);
                r.section_has_faces = false;
            }
            "usemtl" | "mtllib" => r.name(key, line, line_no, b.path)?,
            "l" | "p" | "curv" | "curv2" | "surf" => r.p.skipped += 1,
            k if HARMLESS.contains(&k) => {}
            _ => {
                r.recognised -= 1;
                r.p.unknown += 1;
                if r.p.first_unknown.is_none() {
                    r.p.first_unknown = Some((line_no, line.chars().take(40).collect()));
                }
            }
        }
    }
    r.finish(b.path)
}

/// The state of the pass over an OBJ text beside what it found: the materials by name, the
/// current `usemtl`, the statements recognised, whether the current object has faces, the
/// triangles and `f` statements so far.
struct Reader<'t> {
    p: Parsed,
    by_name: HashMap<&'t str, u32>,
    material: Option<u32>,
    recognised: usize,
    section_has_faces: bool,
    triangles: u64,
    face_statements: usize,
    /// The last line, when the file does not end with a newline: a face cut short there means
    /// the file was truncated.
    unterminated: usize,
}

impl<'t> Reader<'t> {
    fn new(text: &str) -> Reader<'t> {
        Reader {
            p: Parsed::default(),
            by_name: HashMap::new(),
            material: None,
            recognised: 0,
            section_has_faces: false,
            triangles: 0,
            face_statements: 0,
            unterminated: if text.ends_with('\n') {
                0
            } else {
                text.lines().count()
            },
        }
    }

    /// A `v` statement: the vertex, converted, into `b` (at most [`MAX_VERTICES`]).
    fn vertex<'w>(
        &mut self,
        b: &mut Builder,
        words: impl Iterator<Item = &'w str>,
        line_no: usize,
    ) -> crate::Result<()> {
        let at = |msg: String| Error::load_at(b.path.display(), line_no, msg);
        let v = b.mesh.positions.len() + 1;
        if v as u64 > MAX_VERTICES {
            return Err(at(format!(
                "more than {MAX_VERTICES} vertices (the limit); split the mesh into several files"
            )));
        }
        let q = vertex(words)
            .and_then(|p| b.point(p))
            .map_err(|m| at(format!("vertex {v} {m}")))?;
        b.mesh.positions.push(q);
        Ok(())
    }

    /// An `f` statement: its corners, kept as a face when there are three or more (at most
    /// [`MAX_TRIANGLES`] triangles in all), else skipped; a face cut short on an unterminated
    /// last line is an error.
    fn face<'w>(
        &mut self,
        b: &Builder,
        words: impl Iterator<Item = &'w str>,
        line_no: usize,
    ) -> crate::Result<()> {
        let at = |msg: String| Error::load_at(b.path.display(), line_no, msg);
        let p = &mut self.p;
        self.face_statements += 1;
        let number = self.face_statements;
        let start = p.corners.len();
        for word in words {
            let i = corner(word, b.mesh.positions.len())
                .map_err(|m| at(format!("face {number} {m}")))?;
            p.corners.push(i);
        }
        let count = p.corners.len() - start;
        if count >= 3 {
            self.triangles += count as u64 - 2;
            if self.triangles > MAX_TRIANGLES {
                return Err(at(format!(
                    "the faces so far make {} triangles, over the limit of {MAX_TRIANGLES}; simplify the mesh or split the level",
                    self.triangles
                )));
            }
            p.faces.push(Face {
                line: line_no,
                number,
                start,
                material: self.material,
            });
            self.section_has_faces = true;
        } else {
            p.corners.truncate(start);
            p.skipped += 1;
            if line_no == self.unterminated {
                return Err(at(format!(
                    "the file ends inside face {number} ({count} vertices); the file is truncated, re-export it"
                )));
            }
        }
        Ok(())
    }

    /// A `usemtl` (the material of the faces after it) or `mtllib` statement (a library to
    /// read); either needs a name.
    fn name(&mut self, key: &str, line: &'t str, line_no: usize, path: &Path) -> crate::Result<()> {
        let rest = line.trim_start()[key.len()..].trim();
        if rest.is_empty() {
            return Err(Error::load_at(
                path.display(),
                line_no,
                format!("`{key}` without a name; write `{key} NAME` or delete the line"),
            ));
        }
        if key == "mtllib" {
            self.p.mtllib.push(rest.to_string());
            return Ok(());
        }
        let next = self.p.materials.len() as u32;
        let m = *self.by_name.entry(rest).or_insert(next);
        if m == next {
            self.p.materials.push(rest.to_string());
        }
        self.material = Some(m);
        Ok(())
    }

    /// What the pass found, the last object counted; a text with no OBJ statement at all is
    /// an error naming its first line.
    fn finish(self, path: &Path) -> crate::Result<Parsed> {
        let mut p = self.p;
        p.objects += usize::from(self.section_has_faces);
        if self.recognised == 0 {
            if let Some((line, text)) = &p.first_unknown {
                return Err(Error::load_at(
                    path.display(),
                    *line,
                    format!("no OBJ statements found (this line reads {text:?}); this does not look like a Wavefront OBJ file"),
                ));
            }
        }
        Ok(p)
    }
}

/// The position of a `v` statement (`v x y z`, `v x y z w` or `v x y z r g b`); errors are
/// messages that follow "vertex N".
fn vertex<'a>(words: impl Iterator<Item = &'a str>) -> Result<Vec3, String> {
    let words: Vec<&str> = words.take(8).collect();
    let mut xyz = [0f32; 3];
    for (k, c) in xyz.iter_mut().enumerate() {
        let Some(word) = words.get(k) else {
            return Err(format!(
                "has only {} coordinates; write `v x y z` with decimal numbers (or the file is truncated)",
                words.len()
            ));
        };
        *c = word.parse().map_err(|_| {
            format!("has a malformed coordinate {word:?}; write `v x y z` with decimal numbers")
        })?;
        if !c.is_finite() {
            return Err(format!(
                "has a non-finite {} coordinate ({word}); replace it with a finite number, or delete the vertex and the faces using it",
                ["x", "y", "z"][k]
            ));
        }
    }
    let p = Vec3::from(xyz);
    match words.len() {
        3 | 6 => Ok(p), // 6: a vertex colour, which does not matter here
        4 => match words[3].parse::<f32>() {
            Ok(w) if w.is_finite() && w != 0.0 => Ok(p / w),
            _ => Err(format!(
                "has weight w = {:?}; write a finite non-zero w, or drop it (w = 1)",
                words[3]
            )),
        },
        n => Err(format!(
            "has {n} numbers; write `v x y z`, `v x y z w` or `v x y z r g b`"
        )),
    }
}

/// One corner of a face (`v`, `v/vt`, `v//vn` or `v/vt/vn`) as a 0-based vertex index, given
/// the `n` vertices read so far (negative indices count back from there; positive ones may
/// refer to vertices defined later, checked once the file is read). Errors follow "face N".
fn corner(word: &str, n: usize) -> Result<u32, String> {
    let malformed = || {
        format!("has a malformed vertex reference {word:?}; use v, v/vt, v//vn or v/vt/vn with integer indices")
    };
    let mut parts = word.split('/');
    let i: i64 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(malformed)?;
    let rest: Vec<&str> = parts.collect();
    if rest.len() > 2
        || rest
            .iter()
            .any(|s| !s.is_empty() && s.parse::<i64>().is_err())
    {
        return Err(malformed());
    }
    let bad = |why: String| format!("refers to vertex {i}, {why}; fix the index");
    if i == 0 {
        Err(bad("but OBJ indices start at 1".into()))
    } else if i < 0 {
        let back = i.unsigned_abs();
        if back > n as u64 {
            return Err(bad(format!("but only {n} vertices precede it")));
        }
        Ok((n as u64 - back) as u32)
    } else if i as u64 > MAX_VERTICES {
        Err(bad(format!(
            "beyond the limit of {MAX_VERTICES} vertices a mesh may have"
        )))
    } else {
        Ok((i - 1) as u32)
    }
}
