//! glTF 2.0 (`.gltf` with its buffers, or `.glb`). Images are not loaded: only geometry and
//! material names matter here, and a missing texture must not stop a level from loading.

use super::{load_error, Builder, LoadOptions, LoadReport};
use crate::limits::{vec_with_capacity, MAX_TRIANGLES, MAX_VERTICES};
use crate::scene::Scene;
use ::gltf::accessor::{DataType, Dimensions};
use ::gltf::mesh::Mode;
use ::gltf::{buffer, Accessor, Document, Node, Semantic};
use glam::{Mat4, Vec3};
use std::path::Path;

/// Loads the default scene (else the first scene, else every root node) of a glTF 2.0 file.
///
/// The node hierarchy must be a forest, as the glTF specification requires: a node listed as a
/// child more than once (by one node or by several), a scene root that is also a child, a root
/// listed twice, or a cycle is refused with an error naming the node. So every node is visited
/// at most once and the work is bounded by the file's size; a mesh used by several nodes
/// (instancing) is fine, and each instance counts against [`MAX_TRIANGLES`] before it is read.
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
    let parents = node_parents(&document).map_err(fail)?;
    let roots = scene_roots(&document, &parents).map_err(fail)?;
    add_nodes(&mut b, &buffers, roots, document.nodes().len()).map_err(fail)?;
    b.finish()
}

/// `node 3 "Door"`: how errors name a node.
fn node_label(node: &Node) -> String {
    format!("node {} {:?}", node.index(), node.name().unwrap_or(""))
}

/// Each node's parent. A node listed as a child twice (in one `children` list or in two) is an
/// error naming it and both parents: glTF requires every node to have at most one parent, and a
/// file that shares subtrees that way can describe 2^40 paths in a kilobyte.
fn node_parents(document: &Document) -> Result<Vec<Option<usize>>, String> {
    let mut parents: Vec<Option<usize>> = vec![None; document.nodes().len()];
    for node in document.nodes() {
        for child in node.children() {
            if let Some(first) = parents[child.index()] {
                return Err(format!(
                    "{} is listed as a child of node {first} and again of node {}; a glTF node may have only one parent, so use a separate node per instance of a mesh",
                    node_label(&child),
                    node.index()
                ));
            }
            parents[child.index()] = Some(node.index());
        }
    }
    Ok(parents)
}

/// The root nodes to load: the default scene's (else the first scene's), which must be distinct
/// and have no parent; without scenes, every node without a parent, and then no node may be in a
/// cycle of parents, which would leave it out without a word.
fn scene_roots<'a>(
    document: &'a Document,
    parents: &[Option<usize>],
) -> Result<Vec<Node<'a>>, String> {
    let Some(scene) = document
        .default_scene()
        .or_else(|| document.scenes().next())
    else {
        if let Some(cycle) = parent_cycle(parents) {
            let node = document
                .nodes()
                .nth(cycle)
                .map_or(format!("node {cycle}"), |n| node_label(&n));
            return Err(format!(
                "{node} is its own ancestor; the node hierarchy must be a tree"
            ));
        }
        return Ok(document
            .nodes()
            .filter(|n| parents[n.index()].is_none())
            .collect());
    };
    let mut listed = vec![false; parents.len()];
    let roots: Vec<Node> = scene.nodes().collect();
    for root in &roots {
        if let Some(parent) = parents[root.index()] {
            return Err(format!("{} is a root of scene {} and also a child of node {parent}; a scene lists only root nodes, remove one of the two", node_label(root), scene.index()));
        }
        if std::mem::replace(&mut listed[root.index()], true) {
            return Err(format!(
                "{} is listed twice in scene {}; list each root once",
                node_label(root),
                scene.index()
            ));
        }
    }
    Ok(roots)
}

/// A node on a cycle of parents, if any. Each node has at most one parent, so walking up from a
/// node either ends at a root, joins a walk already known to end at one, or comes back to a node
/// of the same walk: that node is on a cycle. Every node is walked over once.
fn parent_cycle(parents: &[Option<usize>]) -> Option<usize> {
    const NEW: u8 = 0;
    const WALKING: u8 = 1;
    const ROOTED: u8 = 2;
    let mut state = vec![NEW; parents.len()];
    for start in 0..parents.len() {
        let mut at = Some(start);
        while let Some(node) = at.filter(|&n| state[n] == NEW) {
            state[node] = WALKING;
            at = parents[node];
        }
        if at.is_some_and(|n| state[n] == WALKING) {
            return at;
        }
        let mut mark = Some(start);
        while let Some(node) = mark.filter(|&n| state[n] == WALKING) {
            state[node] = ROOTED;
            mark = parents[node];
        }
    }
    None
}

/// Adds the meshes of `roots` and their descendants: depth-first, parent before children,
/// children in file order. A node reached twice is an error, so at most `node_count` visits.
fn add_nodes(
    b: &mut Builder,
    buffers: &[buffer::Data],
    roots: Vec<Node>,
    node_count: usize,
) -> Result<(), String> {
    let mut stack: Vec<(Node, Mat4)> = roots
        .into_iter()
        .rev()
        .map(|n| (n, Mat4::IDENTITY))
        .collect();
    let mut visited = vec![false; node_count];
    while let Some((node, parent)) = stack.pop() {
        let label = node_label(&node);
        if std::mem::replace(&mut visited[node.index()], true) {
            return Err(format!(
                "{label} is reached twice; the node hierarchy must be a tree"
            ));
        }
        let local = Mat4::from_cols_array_2d(&node.transform().matrix());
        if !local.is_finite() {
            return Err(format!(
                "{label} has a non-finite transform; fix its matrix or translation/rotation/scale"
            ));
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
                add_primitive(b, buffers, &prim, world, &what)
                    .map_err(|m| format!("{what}: {m}"))?;
            }
        }
        let children: Vec<Node> = node.children().collect();
        stack.extend(children.into_iter().rev().map(|c| (c, world)));
    }
    Ok(())
}

/// Adds one primitive's triangles; errors are messages to prefix with the primitive's name.
/// Every accessor is checked (type, count against its limit, bytes against its buffer view and
/// buffer, sparse indices) before anything is read or allocated.
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
    let sizes = check_primitive(b, buffers, prim)?;
    let points = read_points(buffers, prim, &sizes)?;
    let indices = read_indices(buffers, prim, &sizes)?;
    let pos_id = &sizes.pos_id;
    let base = b.add_vertices(points.iter().map(|&p| world.transform_point3(p)), &|| {
        pos_id.clone()
    })?;
    let material = prim.material();
    let name = material.index().map(|i| {
        material
            .name()
            .map_or(format!("material_{i}"), str::to_string)
    });
    for tri in indices.chunks_exact(3) {
        b.add_triangle(
            [tri[0] + base, tri[1] + base, tri[2] + base],
            name.as_deref(),
        );
    }
    Ok(())
}

/// A triangle primitive's sizes, checked by [`check_primitive`] before anything is read.
struct PrimitiveSizes<'a> {
    /// `POSITION accessor 3`: how errors name the positions.
    pos_id: String,
    /// Vertices (the positions' count).
    vertices: usize,
    /// The indices accessor, if the primitive has one.
    indices: Option<Accessor<'a>>,
    /// Indices (the vertex count when there is no indices accessor), a multiple of 3.
    index_count: usize,
}

/// Checks the positions and indices accessors and that the primitive keeps the file within
/// [`MAX_VERTICES`] and [`MAX_TRIANGLES`].
fn check_primitive<'a>(
    b: &Builder,
    buffers: &[buffer::Data],
    prim: &::gltf::Primitive<'a>,
) -> Result<PrimitiveSizes<'a>, String> {
    let positions = prim
        .get(&Semantic::Positions)
        .ok_or("has no POSITION attribute; re-export with vertex positions")?;
    let pos_id = format!("POSITION accessor {}", positions.index());
    check_accessor(
        &positions,
        buffers,
        Dimensions::Vec3,
        &[DataType::F32],
        (&pos_id, MAX_VERTICES, "vertices"),
    )?;
    let n = positions.count();
    let total = b.mesh.positions.len() as u64 + n as u64;
    if total > MAX_VERTICES {
        return Err(format!(
            "{pos_id} brings the mesh to {total} vertices, over the limit of {MAX_VERTICES}; split the level into several files"
        ));
    }
    let indices = prim.indices();
    let index_count = match &indices {
        Some(acc) => {
            let id = format!("indices accessor {}", acc.index());
            check_accessor(
                acc,
                buffers,
                Dimensions::Scalar,
                &[DataType::U8, DataType::U16, DataType::U32],
                (&id, 3 * MAX_TRIANGLES, "indices"),
            )?;
            acc.count()
        }
        None => n,
    };
    if !index_count.is_multiple_of(3) {
        return Err(format!("{index_count} indices (vertices) is not a multiple of 3, so they are not whole triangles; re-export the file"));
    }
    let triangles =
        (b.mesh.triangles.len() + b.report.degenerate_dropped) as u64 + index_count as u64 / 3;
    if triangles > MAX_TRIANGLES {
        return Err(format!(
            "brings the file to {triangles} triangles, over the limit of {MAX_TRIANGLES}; simplify the meshes or split the level"
        ));
    }
    Ok(PrimitiveSizes {
        pos_id,
        vertices: n,
        indices,
        index_count,
    })
}

/// Reads a checked primitive's vertex positions (in the mesh's own space).
fn read_points(
    buffers: &[buffer::Data],
    prim: &::gltf::Primitive,
    sizes: &PrimitiveSizes,
) -> Result<Vec<Vec3>, String> {
    let (pos_id, n) = (&sizes.pos_id, sizes.vertices);
    let reader = prim.reader(|buf| buffers.get(buf.index()).map(|d| &d.0[..]));
    let mut points: Vec<Vec3> = vec_with_capacity(n, pos_id, "split the level into several files")
        .map_err(|e| e.to_string())?;
    points.extend(
        reader
            .read_positions()
            .ok_or_else(|| format!("{pos_id}: data lies outside its buffer; re-export the file"))?
            .map(Vec3::from),
    );
    if points.len() != n {
        return Err(format!(
            "{pos_id} has {} readable vertices of {n}; re-export the file",
            points.len()
        ));
    }
    Ok(points)
}

/// Reads a checked primitive's indices (`0..n` without an indices accessor), each checked
/// against the vertex count.
fn read_indices(
    buffers: &[buffer::Data],
    prim: &::gltf::Primitive,
    sizes: &PrimitiveSizes,
) -> Result<Vec<u32>, String> {
    let (pos_id, n, index_count) = (&sizes.pos_id, sizes.vertices, sizes.index_count);
    let Some(acc) = &sizes.indices else {
        return Ok((0..n as u32).collect());
    };
    let reader = prim.reader(|buf| buffers.get(buf.index()).map(|d| &d.0[..]));
    let mut idx = vec_with_capacity(index_count, "the index buffer", "split the level")
        .map_err(|e| e.to_string())?;
    idx.extend(
        reader
            .read_indices()
            .ok_or("index data lies outside its buffer; re-export the file")?
            .into_u32(),
    );
    if idx.len() != index_count {
        return Err(format!(
            "indices accessor {}: {} readable indices of {index_count}; re-export the file",
            acc.index(),
            idx.len()
        ));
    }
    if let Some((k, &v)) = idx.iter().enumerate().find(|(_, &v)| v as usize >= n) {
        return Err(format!(
            "indices accessor {}: index {k} (triangle {}) is vertex {v}, but {pos_id} has only {n} vertices; fix the index buffer",
            acc.index(),
            k / 3
        ));
    }
    Ok(idx)
}

/// Checks an accessor's type, that its count is within `limit` (`id` names it, `unit` says
/// what it counts), that every byte it reads lies inside its buffer view and buffer, and that
/// its sparse indices are in range and increasing, so that reading it cannot panic, allocate
/// more than the file justifies, or silently drop data.
fn check_accessor(
    acc: &Accessor,
    buffers: &[buffer::Data],
    dims: Dimensions,
    types: &[DataType],
    (id, limit, unit): (&str, u64, &str),
) -> Result<(), String> {
    if acc.dimensions() != dims || !types.contains(&acc.data_type()) || acc.normalized() {
        return Err(format!(
            "{id} is {:?} of {:?}{}, expected {dims:?} of one of {types:?}; re-export without quantization or compression",
            acc.dimensions(),
            acc.data_type(),
            if acc.normalized() { " (normalized)" } else { "" }
        ));
    }
    let count = acc.count();
    if count == 0 {
        return Err(format!(
            "{id} has count 0; remove the empty primitive or re-export"
        ));
    }
    if count as u64 > limit {
        return Err(format!(
            "{id} has count {count}, over the limit of {limit} {unit}; split the mesh, or fix the count if the file is damaged"
        ));
    }
    let elem = acc.size();
    if let Some(view) = acc.view() {
        check_range(&view, acc.offset(), count, elem, buffers, id)?;
    }
    match acc.sparse() {
        None if acc.view().is_none() => Err(format!("{id} has no bufferView (all zeros, or compressed with Draco/meshopt); re-export without mesh compression")),
        None => Ok(()),
        Some(sparse) => {
            let k = sparse.count();
            if k == 0 || k > count {
                return Err(format!(
                    "{id} has a sparse section of count {k}, but it must be 1 to the accessor's count {count}; re-export the file"
                ));
            }
            let idx = sparse.indices();
            let size = idx.index_type().size();
            let sid = format!("{id} sparse indices");
            check_range(&idx.view(), idx.offset(), k, size, buffers, &sid)?;
            let vals = sparse.values();
            check_range(&vals.view(), vals.offset(), k, elem, buffers, &format!("{id} sparse values"))?;
            check_sparse_indices(&idx, k, count, buffers, &sid)
        }
    }
}

/// Sparse indices must strictly increase and stay below the accessor's count; a reader would
/// otherwise drop the values they carry without a word. Assumes [`check_range`] passed.
fn check_sparse_indices(
    idx: &::gltf::accessor::sparse::Indices,
    k: usize,
    count: usize,
    buffers: &[buffer::Data],
    id: &str,
) -> Result<(), String> {
    let view = idx.view();
    let size = idx.index_type().size();
    let stride = view.stride().unwrap_or(size);
    let data = &buffers[view.buffer().index()].0[view.offset()..][idx.offset()..];
    let mut previous: Option<u64> = None;
    for j in 0..k {
        let at = j * stride;
        let v = data[at..at + size]
            .iter()
            .rev()
            .fold(0u64, |acc, &byte| acc << 8 | u64::from(byte));
        if v >= count as u64 {
            return Err(format!(
                "{id}: entry {j} is element {v}, but the accessor has only {count}; fix the sparse indices"
            ));
        }
        if previous.is_some_and(|p| v <= p) {
            return Err(format!(
                "{id}: entry {j} is element {v} after {}; sparse indices must strictly increase, fix them",
                previous.unwrap_or(0)
            ));
        }
        previous = Some(v);
    }
    Ok(())
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
