//! Mesh loaders: Wavefront OBJ and glTF 2.0 (`.gltf`, `.glb`, via `gltf`).
//!
//! Every loader produces one [`Scene`] holding a single static object. Material names from the
//! file are mapped to flags by [`MaterialRules`]; the scene's material table has one entry per
//! distinct material used by a kept triangle, in order of first use.
//!
//! Scene triangle ids follow the file: triangle `i` is the `i`-th kept triangle in file order
//! (OBJ: faces in order, polygons fan-triangulated in place; glTF: the default scene's nodes
//! depth-first, parent before children, primitives and their triangles in order). Degenerate
//! (zero-area) triangles are dropped and counted in [`LoadReport::degenerate_dropped`]; anything
//! else that is not a triangle is counted in [`LoadReport::skipped`]. A file that yields no
//! triangle at all is an error ("no triangles"), not an empty scene. Bad input is an
//! [`Error::Load`](crate::Error::Load) whose message says what to fix (with the line, for OBJ),
//! never a panic; vertex positions must be finite and within [`MAX_COORDINATE`] metres of the
//! origin after axis conversion and scale.

mod gltf;
mod obj;
mod winding;

pub use self::gltf::load_gltf;
pub use self::obj::load_obj;
pub use self::winding::{winding_of, Winding, WindingReport};

use super::{Material, MaterialRules, Mesh, Scene};
use crate::limits::MAX_COORDINATE;
use glam::{DVec3, Vec3};
use std::collections::HashMap;
use std::fmt;
use std::path::Path;

/// Which axis points up in the file. Scenes are Y-up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UpAxis {
    /// Y up (OBJ from most tools, and every glTF file by specification).
    #[default]
    Y,
    /// Z up (Blender, 3ds Max, many CAD exports): `(x, y, z)` becomes `(x, z, -y)`.
    Z,
}

/// How to interpret a mesh file.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Maps the file's material names to flags.
    pub rules: MaterialRules,
    /// The file's up axis; converted to Y-up.
    pub up: UpAxis,
    /// Metres per file unit (0.01 for centimetres). Applied after the axis conversion.
    pub scale: f32,
    /// Which way the file's fronts are wound; [`Winding::Auto`] turns inside-out files and
    /// parts the right way out and reports it in [`LoadReport::winding`].
    pub winding: Winding,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            rules: MaterialRules::standard(),
            up: UpAxis::Y,
            scale: 1.0,
            winding: Winding::Auto,
        }
    }
}

/// What a loader found and what it did with it.
#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    /// The file, as given.
    pub path: String,
    /// Vertices in the scene mesh.
    pub vertices: usize,
    /// Triangles kept; these are the scene's triangles, in file order.
    pub triangles: usize,
    /// Zero-area triangles dropped (repeated index, coincident or collinear vertices).
    pub degenerate_dropped: usize,
    /// Elements that are not triangles and were not loaded: OBJ points (`p`), lines (`l`),
    /// faces with fewer than 3 vertices and free-form curves/surfaces; glTF primitives whose
    /// mode is not `TRIANGLES`.
    pub skipped: usize,
    /// Names of the scene's materials, in material-table order.
    pub materials: Vec<String>,
    /// OBJ: `o`/`g` sections with faces (1 if the file has faces but no sections);
    /// glTF: node instances of meshes.
    pub objects: usize,
    /// Things worth telling the user that did not stop the load (missing `.mtl`, triangles
    /// flipped to face the right way, ...).
    pub warnings: Vec<String>,
    /// Which parts of the file read as inside out, and what was flipped.
    pub winding: WindingReport,
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = Path::new(&self.path)
            .file_name()
            .map_or(self.path.clone(), |n| n.to_string_lossy().into_owned());
        write!(f, "{name}: {} triangles", thousands(self.triangles))?;
        if self.degenerate_dropped > 0 {
            write!(
                f,
                " ({} degenerate dropped)",
                thousands(self.degenerate_dropped)
            )?;
        }
        let m = self.materials.len();
        write!(f, ", {m} material{}", if m == 1 { "" } else { "s" })?;
        if self.skipped > 0 {
            write!(
                f,
                ", {} non-triangle elements skipped",
                thousands(self.skipped)
            )?;
        }
        if !self.warnings.is_empty() {
            write!(f, ", {} warning(s)", self.warnings.len())?;
        }
        Ok(())
    }
}

fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Loads a mesh file, choosing the loader by extension (`.obj`, `.gltf`, `.glb`).
pub fn load(path: impl AsRef<Path>, options: &LoadOptions) -> crate::Result<(Scene, LoadReport)> {
    let path = path.as_ref();
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "obj" => load_obj(path, options),
        "gltf" | "glb" => load_gltf(path, options),
        _ => Err(load_error(
            path,
            format!(
                "unsupported mesh format {:?}; supported: .obj (Wavefront), .gltf and .glb (glTF 2.0)",
                if ext.is_empty() { "(no extension)".to_string() } else { format!(".{ext}") }
            ),
        )),
    }
}

pub(crate) fn load_error(path: &Path, message: impl Into<String>) -> crate::Error {
    crate::Error::load(path.display(), message)
}

/// Accumulates converted vertices, kept triangles and the material table.
struct Builder<'a> {
    path: &'a Path,
    options: &'a LoadOptions,
    mesh: Mesh,
    materials: Vec<Material>,
    by_name: HashMap<String, u32>,
    resolver: crate::scene::material::Resolver<'a>,
    report: LoadReport,
}

impl<'a> Builder<'a> {
    fn new(path: &'a Path, options: &'a LoadOptions) -> crate::Result<Self> {
        if !(options.scale.is_finite() && options.scale > 0.0) {
            return Err(load_error(
                path,
                format!("scale {} is not a positive finite number; pass metres per file unit, e.g. 1.0 or 0.01", options.scale),
            ));
        }
        Ok(Builder {
            path,
            options,
            mesh: Mesh::default(),
            materials: Vec::new(),
            by_name: HashMap::new(),
            resolver: options.rules.resolver(),
            report: LoadReport {
                path: path.display().to_string(),
                ..LoadReport::default()
            },
        })
    }

    /// Converts a file-space point to the scene's Y-up metres.
    fn convert(&self, p: Vec3) -> Vec3 {
        let p = match self.options.up {
            UpAxis::Y => p,
            UpAxis::Z => Vec3::new(p.x, p.z, -p.y),
        };
        p * self.options.scale
    }

    /// Converts a file-space point, refusing non-finite results and positions beyond
    /// [`MAX_COORDINATE`]. Errors are messages that follow the vertex's name.
    fn point(&self, p: Vec3) -> Result<Vec3, String> {
        let q = self.convert(p);
        let scale = self.options.scale;
        if !q.is_finite() {
            return Err(format!(
                "is {p} in the file and {q} after axis conversion and scale {scale} (not finite); fix the vertex or use a smaller scale"
            ));
        }
        if q.abs().max_element() > MAX_COORDINATE {
            return Err(format!(
                "is at {q} m after axis conversion and scale {scale}, beyond the limit of {MAX_COORDINATE:e} m from the origin; fix the vertex, use a smaller scale, or move the level nearer the origin"
            ));
        }
        Ok(q)
    }

    /// Appends already-transformed file-space points; returns the index of the first one.
    /// `what` names the points' source in errors, e.g. "POSITION accessor 3". Errors are
    /// messages; the caller adds the file and the element.
    fn add_vertices(
        &mut self,
        points: impl ExactSizeIterator<Item = Vec3>,
        what: &dyn Fn() -> String,
    ) -> Result<u32, String> {
        let base = self.mesh.positions.len();
        let total = base as u64 + points.len() as u64;
        if total > crate::limits::MAX_VERTICES {
            return Err(format!(
                "{} brings the mesh to {total} vertices, over the limit of {}; split the level into several files",
                what(),
                crate::limits::MAX_VERTICES
            ));
        }
        for (i, p) in points.enumerate() {
            let q = self
                .point(p)
                .map_err(|m| format!("vertex {i} of {} {m}", what()))?;
            self.mesh.positions.push(q);
        }
        Ok(base as u32)
    }

    /// Adds a triangle of scene vertex indices (already range-checked), or counts it as
    /// degenerate. `material` is the file's material name; `None` is the rules' default.
    fn add_triangle(&mut self, tri: [u32; 3], material: Option<&str>) {
        let [a, b, c] = tri.map(|i| self.mesh.positions[i as usize].as_dvec3());
        if is_degenerate(a, b, c) {
            self.report.degenerate_dropped += 1;
            return;
        }
        let name = material.unwrap_or("default");
        let index = match self.by_name.get(name) {
            Some(&i) => i,
            None => {
                let m = match material {
                    Some(n) => self.resolver.resolve(n),
                    None => Material {
                        name: name.to_string(),
                        ..self.options.rules.default.clone()
                    },
                };
                self.materials.push(m);
                let i = self.materials.len() as u32 - 1;
                self.by_name.insert(name.to_string(), i);
                i
            }
        };
        self.mesh.triangles.push(tri);
        self.mesh.materials.push(index);
    }

    fn warn(&mut self, message: String) {
        log::warn!("{}: {message}", self.path.display());
        self.report.warnings.push(message);
    }

    fn finish(mut self) -> crate::Result<(Scene, LoadReport)> {
        let r = &mut self.report;
        if self.mesh.triangles.is_empty() {
            return Err(load_error(
                self.path,
                format!(
                    "no triangles: the file has {} vertices, {} degenerate (zero-area) triangles and {} non-triangle elements; it may be truncated, empty or hold only points and lines, so check the export",
                    self.mesh.positions.len(),
                    r.degenerate_dropped,
                    r.skipped
                ),
            ));
        }
        r.vertices = self.mesh.positions.len();
        r.triangles = self.mesh.triangles.len();
        r.materials = self.materials.iter().map(|m| m.name.clone()).collect();
        if r.degenerate_dropped > 0 {
            log::info!(
                "{}: dropped {} degenerate triangles",
                r.path,
                r.degenerate_dropped
            );
        }
        if r.skipped > 0 {
            log::info!("{}: skipped {} non-triangle elements", r.path, r.skipped);
        }
        r.winding = winding::orient(&mut self.mesh, &self.materials, self.options.winding);
        if let Some(flipped) = self.report.winding.describe() {
            self.warn(flipped);
        }
        let scene = Scene::from_mesh(self.mesh, self.materials)
            .map_err(|e| load_error(self.path, e.to_string()))?;
        Ok((scene, self.report))
    }
}

/// Zero area, robustly: `|ab x ac|^2 <= 1e-12 * (longest edge)^4`, in f64. Catches repeated
/// vertices, coincident points and collinear points, at any scale.
fn is_degenerate(a: DVec3, b: DVec3, c: DVec3) -> bool {
    let cross = (b - a).cross(c - a).length_squared();
    let longest = (b - a)
        .length_squared()
        .max((c - a).length_squared())
        .max((c - b).length_squared());
    cross <= 1e-12 * longest * longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degenerate_test_is_scale_free() {
        let d = |a: [f64; 3], b: [f64; 3], c: [f64; 3]| is_degenerate(a.into(), b.into(), c.into());
        for s in [1e-3, 1.0, 1e4] {
            assert!(!d([0.0; 3], [s, 0.0, 0.0], [0.0, s, 0.0]));
            assert!(d([0.0; 3], [s, 0.0, 0.0], [2.0 * s, 0.0, 0.0]), "collinear");
            assert!(d([0.0; 3], [s, 0.0, 0.0], [s, 0.0, 0.0]), "coincident");
        }
        assert!(d([1.0; 3], [1.0; 3], [1.0; 3]));
        assert!(
            !d([0.0; 3], [1000.0, 0.0, 0.0], [0.0, 0.01, 0.0]),
            "thin but real sliver"
        );
    }

    #[test]
    fn load_dispatches_on_extension_and_lists_supported_formats() {
        let msg = load("level.stl", &LoadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains(".stl")
                && msg.contains(".obj")
                && msg.contains(".gltf")
                && msg.contains(".glb"),
            "{msg}"
        );
        assert!(load("level", &LoadOptions::default())
            .unwrap_err()
            .to_string()
            .contains("no extension"));
        let msg = load("/no/such/level.OBJ", &LoadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("cannot read"), "{msg}");
        let msg = load("/no/such/level.glb", &LoadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("cannot read"), "{msg}");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(12345), "12,345");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
