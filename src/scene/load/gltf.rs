//! glTF 2.0 (`.gltf` with its buffers, or `.glb`). Images are not loaded: only geometry and
//! material names matter here, and a missing texture must not stop a level from loading.

use super::{load_error, Builder, LoadOptions, LoadReport};
use crate::scene::Scene;
use ::gltf::accessor::{DataType, Dimensions};
use ::gltf::mesh::Mode;
use ::gltf::{buffer, Accessor, Node, Semantic};
use glam::{Mat4, Vec3};
use std::path::Path;

/// More node visits than this means a hierarchy that shares subtrees explosively.
const MAX_NODE_VISITS: usize = 1 << 24;

/// Loads the default scene (else the first scene, else every root node) of a glTF 2.0 file.
pub fn load_gltf(
    path: impl AsRef<Path>,
    options: &LoadOptions,
) -> crate::Result<(Scene, LoadReport)> {
    let path = path.as_ref();
    let fail = |m: String| load_error(path, m);
    std::fs::metadata(path)
        .map_err(|e| fail(format!("cannot read the file ({e}); check the path")))?;
    let ::gltf::Gltf { document, blob } = ::gltf::Gltf::open(path).map_err(|e| {
        fail(format!("cannot parse glTF: {e}; check that the file is a valid glTF 2.0 export (.gltf JSON or .glb)"))
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let buffers = ::gltf::import_buffers(&document, Some(base), blob).map_err(|e| {
        fail(format!("cannot load the glTF buffers: {e}; the .bin file next to the .gltf may be missing, truncated or from another export"))
    })?;
    let mut b = Builder::new(path, options)?;

    let roots: Vec<Node> = match document
        .default_scene()
        .or_else(|| document.scenes().next())
    {
        Some(scene) => scene.nodes().collect(),
        None => {
            let mut is_child = vec![false; document.nodes().len()];
            document
                .nodes()
                .flat_map(|n| n.children())
                .for_each(|c| is_child[c.index()] = true);
            document.nodes().filter(|n| !is_child[n.index()]).collect()
        }
    };
    // Depth-first, parent before children, children in file order; `path` holds the
    // ancestors of the node being visited so that cycles are errors, not stack overflows.
    let mut stack: Vec<(Node, Mat4, usize)> = roots
        .into_iter()
        .rev()
        .map(|n| (n, Mat4::IDENTITY, 0))
        .collect();
    let mut ancestors: Vec<usize> = Vec::new();
    let mut visits = 0usize;
    while let Some((node, parent, depth)) = stack.pop() {
        ancestors.truncate(depth);
        let label = format!("node {} {:?}", node.index(), node.name().unwrap_or(""));
        if ancestors.contains(&node.index()) {
            return Err(fail(format!(
                "{label} is its own ancestor; the node hierarchy must be a tree"
            )));
        }
        visits += 1;
        if visits > MAX_NODE_VISITS {
            return Err(fail(format!("more than {MAX_NODE_VISITS} node visits; the hierarchy shares subtrees too often, flatten it")));
        }
        ancestors.push(node.index());
        let local = Mat4::from_cols_array_2d(&node.transform().matrix());
        if !local.is_finite() {
            return Err(fail(format!(
                "{label} has a non-finite transform; fix its matrix or translation/rotation/scale"
            )));
        }
        let world = parent * local;
        if let Some(mesh) = node.mesh() {
            b.report.objects += 1;
            for (pi, prim) in mesh.primitives().enumerate() {
                let what = format!(
                    "mesh {} {:?} primitive {pi} ({label})",
                    mesh.index(),
                    mesh.name().unwrap_or("")
                );
                add_primitive(&mut b, &buffers, &prim, world, &what)
                    .map_err(|m| fail(format!("{what}: {m}")))?;
            }
        }
        let children: Vec<Node> = node.children().collect();
        stack.extend(children.into_iter().rev().map(|c| (c, world, depth + 1)));
    }
    b.finish()
}

/// Adds one primitive's triangles; errors are messages to prefix with the primitive's name.
fn add_primitive(
    b: &mut Builder,
    buffers: &[buffer::Data],
    prim: &::gltf::Primitive,
    world: Mat4,
    what: &str,
) -> Result<(), String> {
    if prim.mode() != Mode::Triangles {
        log::warn!(
            "{}: {what}: mode {:?} skipped (only TRIANGLES are loaded)",
            b.path.display(),
            prim.mode()
        );
        b.report.skipped += 1;
        return Ok(());
    }
    let positions = prim
        .get(&Semantic::Positions)
        .ok_or("has no POSITION attribute; re-export with vertex positions")?;
    check_accessor(
        &positions,
        buffers,
        Dimensions::Vec3,
        &[DataType::F32],
        "POSITION",
    )?;
    let reader = prim.reader(|buf| buffers.get(buf.index()).map(|d| &d.0[..]));
    let points: Vec<Vec3> = reader
        .read_positions()
        .ok_or("POSITION data lies outside its buffer; re-export the file")?
        .map(Vec3::from)
        .collect();
    let n = points.len();
    if n != positions.count() {
        return Err(format!(
            "POSITION has {n} readable vertices of {}; re-export the file",
            positions.count()
        ));
    }
    if let Some((i, p)) = points.iter().enumerate().find(|(_, p)| !p.is_finite()) {
        return Err(format!(
            "vertex {i} has a non-finite position {p}; fix or remove that vertex"
        ));
    }
    let indices: Vec<u32> = match prim.indices() {
        Some(acc) => {
            check_accessor(
                &acc,
                buffers,
                Dimensions::Scalar,
                &[DataType::U8, DataType::U16, DataType::U32],
                "indices",
            )?;
            let idx: Vec<u32> = reader
                .read_indices()
                .ok_or("index data lies outside its buffer; re-export the file")?
                .into_u32()
                .collect();
            if idx.len() != acc.count() {
                return Err(format!(
                    "{} readable indices of {}; re-export the file",
                    idx.len(),
                    acc.count()
                ));
            }
            idx
        }
        None => (0..n as u32).collect(),
    };
    if !indices.len().is_multiple_of(3) {
        return Err(format!("{} indices (vertices) is not a multiple of 3, so they are not whole triangles; re-export the file", indices.len()));
    }
    let base = b
        .add_vertices(points.iter().map(|&p| world.transform_point3(p)), &|| {
            what.to_string()
        })
        .map_err(|e| e.to_string())?;
    let material = prim.material();
    let name = material.index().map(|i| {
        material
            .name()
            .map_or(format!("material_{i}"), str::to_string)
    });
    for (t, tri) in indices.chunks_exact(3).enumerate() {
        if let Some(&v) = tri.iter().find(|&&v| v as usize >= n) {
            return Err(format!(
                "triangle {t} uses vertex {v} but POSITION has only {n}; fix the index buffer"
            ));
        }
        b.add_triangle(
            [tri[0] + base, tri[1] + base, tri[2] + base],
            name.as_deref(),
        );
    }
    Ok(())
}

/// Checks an accessor's type and that every byte it reads lies inside its buffer view and
/// buffer, so that reading it cannot panic.
fn check_accessor(
    acc: &Accessor,
    buffers: &[buffer::Data],
    dims: Dimensions,
    types: &[DataType],
    role: &str,
) -> Result<(), String> {
    let id = format!("{role} accessor {}", acc.index());
    if acc.dimensions() != dims || !types.contains(&acc.data_type()) || acc.normalized() {
        return Err(format!(
            "{id} is {:?} of {:?}{}, expected {dims:?} of one of {types:?}; re-export without quantization or compression",
            acc.dimensions(),
            acc.data_type(),
            if acc.normalized() { " (normalized)" } else { "" }
        ));
    }
    if acc.count() == 0 {
        return Err(format!(
            "{id} has count 0; remove the empty primitive or re-export"
        ));
    }
    let elem = acc.size();
    match (acc.sparse(), acc.view()) {
        (None, None) => Err(format!("{id} has no bufferView (all zeros, or compressed with Draco/meshopt); re-export without mesh compression")),
        (None, Some(view)) => check_range(&view, acc.offset(), acc.count(), elem, buffers, &id),
        (Some(sparse), view) => {
            if let Some(view) = view {
                check_range(&view, acc.offset(), acc.count(), elem, buffers, &id)?;
            }
            if sparse.count() == 0 {
                return Err(format!("{id} has a sparse section with count 0; re-export the file"));
            }
            let idx = sparse.indices();
            check_range(&idx.view(), idx.offset(), sparse.count(), idx.index_type().size(), buffers, &id)?;
            let vals = sparse.values();
            check_range(&vals.view(), vals.offset(), sparse.count(), elem, buffers, &id)
        }
    }
}

fn check_range(
    view: &buffer::View,
    offset: usize,
    count: usize,
    elem: usize,
    buffers: &[buffer::Data],
    id: &str,
) -> Result<(), String> {
    let stride = view.stride().unwrap_or(elem);
    if stride < elem {
        return Err(format!(
            "{id}: buffer view {} has stride {stride} < element size {elem}; re-export the file",
            view.index()
        ));
    }
    let end = (count - 1)
        .checked_mul(stride)
        .and_then(|x| x.checked_add(elem))
        .and_then(|x| x.checked_add(offset));
    if end.is_none_or(|end| end > view.length()) {
        return Err(format!(
            "{id} reads {count} elements from byte {offset} of buffer view {}, past its {} bytes; re-export the file",
            view.index(),
            view.length()
        ));
    }
    let have = buffers.get(view.buffer().index()).map_or(0, |d| d.len());
    let view_end = view.offset().checked_add(view.length());
    if view_end.is_none_or(|e| e > have) {
        return Err(format!(
            "{id}: buffer view {} spans bytes {}..{} of buffer {}, which holds {have} bytes; the buffer is truncated or the wrong file",
            view.index(),
            view.offset(),
            view_end.map_or("overflow".into(), |e| e.to_string()),
            view.buffer().index()
        ));
    }
    Ok(())
}
