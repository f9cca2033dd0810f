//! Scenes: triangle soup with a material per triangle, grouped into objects that can be
//! moved, added or removed between queries.
//!
//! Geometry is split into two tiers, each with its own BVH: `Static` objects (the level) and
//! `Movable` objects (doors, vehicles). Changing a movable object refits or rebuilds only the
//! movable tier, so the level is never rebuilt or re-uploaded because a door opened.

mod load;
mod material;
pub mod procedural;

pub use load::{
    load, load_gltf, load_obj, winding_of, LoadOptions, LoadReport, UpAxis, Winding, WindingReport,
};
pub use material::{Mask, Material, MaterialFlags, MaterialRules};

use crate::bvh::{Bvh, BvhNode, GpuTriangle};
use glam::{Affine3A, Vec3};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Indexed triangles in an object's local space, with a material index per triangle.
///
/// Material indices point into the [`Scene`]'s material table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    pub positions: Vec<Vec3>,
    pub triangles: Vec<[u32; 3]>,
    pub materials: Vec<u32>,
}

impl Mesh {
    /// Appends a triangle with the given material.
    pub fn push_triangle(&mut self, a: Vec3, b: Vec3, c: Vec3, material: u32) {
        let base = self.positions.len() as u32;
        self.positions.extend_from_slice(&[a, b, c]);
        self.triangles.push([base, base + 1, base + 2]);
        self.materials.push(material);
    }

    /// Appends a planar quad `a b c d` (counter-clockwise seen from the front) as two triangles.
    pub fn push_quad(&mut self, a: Vec3, b: Vec3, c: Vec3, d: Vec3, material: u32) {
        let base = self.positions.len() as u32;
        self.positions.extend_from_slice(&[a, b, c, d]);
        self.triangles.push([base, base + 1, base + 2]);
        self.triangles.push([base, base + 2, base + 3]);
        self.materials.extend_from_slice(&[material, material]);
    }

    /// Appends another mesh, transformed.
    pub fn append(&mut self, other: &Mesh, transform: Affine3A) {
        let base = self.positions.len() as u32;
        self.positions.extend(
            other
                .positions
                .iter()
                .map(|&p| transform.transform_point3(p)),
        );
        self.triangles
            .extend(other.triangles.iter().map(|t| t.map(|i| i + base)));
        self.materials.extend_from_slice(&other.materials);
    }

    pub fn triangle_count(&self) -> usize {
        self.triangles.len()
    }
}

/// Whether an object belongs to the level (rarely changes) or moves between queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mobility {
    Static,
    Movable,
}

/// Handle of an object in a [`Scene`]. Stays valid until the object is removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(pub u32);

#[derive(Clone, Debug)]
struct Object {
    mesh: Mesh,
    transform: Affine3A,
    mobility: Mobility,
    /// Scene-wide id of the object's first triangle; ids are never reused.
    first_triangle: u32,
}

/// One tier's flattened world-space triangles in BVH leaf order, and the BVH over them.
#[derive(Clone, Debug, Default)]
pub struct Tier {
    /// The binary tree both backends share (the GPU walks it).
    pub nodes: Vec<BvhNode>,
    /// The same tree collapsed to four children per node (the CPU walks it).
    pub wide: Vec<crate::bvh::WideNode>,
    pub triangles: Vec<GpuTriangle>,
}

impl Tier {
    fn build(objects: &[Option<Object>], materials: &[Material], mobility: Mobility) -> Tier {
        let mut tris = Vec::new();
        for obj in objects.iter().flatten() {
            if obj.mobility == mobility {
                push_world_triangles(obj, materials, &mut tris);
            }
        }
        let bvh = Bvh::build(&tris);
        bvh.into_tier(tris)
    }
}

fn push_world_triangles(obj: &Object, materials: &[Material], out: &mut Vec<GpuTriangle>) {
    for (i, (tri, &mat)) in obj
        .mesh
        .triangles
        .iter()
        .zip(&obj.mesh.materials)
        .enumerate()
    {
        let [a, b, c] = tri.map(|v| {
            obj.transform
                .transform_point3(obj.mesh.positions[v as usize])
        });
        let flags = materials[mat as usize].flags.bits();
        out.push(GpuTriangle::new(
            a,
            b,
            c,
            obj.first_triangle + i as u32,
            mat,
            flags,
        ));
    }
}

static NEXT_SCENE_UID: AtomicU64 = AtomicU64::new(1);

/// A scene: materials, objects, and the acceleration structures built from them on demand.
#[derive(Debug)]
pub struct Scene {
    materials: Vec<Material>,
    objects: Vec<Option<Object>>,
    next_triangle: u32,
    uid: u64,
    revisions: [u64; 2],
    tiers: [OnceLock<Tier>; 2],
    /// How the scene reads as wound ([`Scene::winding`]), worked out on first use after a
    /// change.
    winding: OnceLock<WindingReport>,
}

impl Clone for Scene {
    fn clone(&self) -> Self {
        Scene {
            materials: self.materials.clone(),
            objects: self.objects.clone(),
            next_triangle: self.next_triangle,
            uid: NEXT_SCENE_UID.fetch_add(1, Ordering::Relaxed),
            revisions: self.revisions,
            tiers: self.tiers.clone(),
            winding: self.winding.clone(),
        }
    }
}

impl Default for Scene {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

fn tier_index(m: Mobility) -> usize {
    match m {
        Mobility::Static => 0,
        Mobility::Movable => 1,
    }
}

impl Scene {
    /// An empty scene with a material table. An empty scene is valid: nothing blocks anything.
    pub fn new(materials: Vec<Material>) -> Scene {
        Scene {
            materials,
            objects: Vec::new(),
            next_triangle: 0,
            uid: NEXT_SCENE_UID.fetch_add(1, Ordering::Relaxed),
            revisions: [0; 2],
            tiers: [OnceLock::new(), OnceLock::new()],
            winding: OnceLock::new(),
        }
    }

    /// A scene holding one static mesh (a loaded level).
    pub fn from_mesh(mesh: Mesh, materials: Vec<Material>) -> crate::Result<Scene> {
        let mut scene = Scene::new(materials);
        scene.add_object(mesh, Affine3A::IDENTITY, Mobility::Static)?;
        Ok(scene)
    }

    pub fn materials(&self) -> &[Material] {
        &self.materials
    }

    /// Adds a material and returns its index.
    pub fn add_material(&mut self, material: Material) -> u32 {
        self.materials.push(material);
        self.materials.len() as u32 - 1
    }

    /// Adds an object. Fails if the mesh indexes a missing vertex or material, or has NaN/Inf
    /// coordinates.
    pub fn add_object(
        &mut self,
        mesh: Mesh,
        transform: Affine3A,
        mobility: Mobility,
    ) -> crate::Result<ObjectId> {
        validate_mesh(&mesh, self.materials.len(), "object")?;
        validate_transform(&transform)?;
        let first_triangle = self.next_triangle;
        let count = u32::try_from(mesh.triangles.len())
            .ok()
            .and_then(|n| self.next_triangle.checked_add(n))
            .filter(|&n| u64::from(n) <= crate::limits::MAX_TRIANGLES)
            .ok_or_else(|| {
                crate::Error::too_large(
                    "scene triangles",
                    u64::from(self.next_triangle) + mesh.triangles.len() as u64,
                    crate::limits::MAX_TRIANGLES,
                    "simplify the meshes or split the level",
                )
            })?;
        self.next_triangle = count;
        self.objects.push(Some(Object {
            mesh,
            transform,
            mobility,
            first_triangle,
        }));
        self.invalidate(mobility);
        Ok(ObjectId(self.objects.len() as u32 - 1))
    }

    /// Removes an object; its triangle ids are not reused.
    pub fn remove_object(&mut self, id: ObjectId) -> crate::Result<Mesh> {
        let obj = self
            .objects
            .get_mut(id.0 as usize)
            .and_then(Option::take)
            .ok_or(crate::Error::NoSuchObject(id.0))?;
        self.invalidate(obj.mobility);
        Ok(obj.mesh)
    }

    /// Moves an object. A movable object's tier is refitted in place (no rebuild); a static
    /// object's tier is rebuilt on the next query.
    pub fn set_transform(&mut self, id: ObjectId, transform: Affine3A) -> crate::Result<()> {
        validate_transform(&transform)?;
        let obj = self
            .objects
            .get_mut(id.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(crate::Error::NoSuchObject(id.0))?;
        obj.transform = transform;
        let mobility = obj.mobility;
        let t = tier_index(mobility);
        self.revisions[t] += 1;
        self.winding = OnceLock::new();
        if mobility == Mobility::Movable {
            if let Some(mut tier) = self.tiers[t].take() {
                self.refit(&mut tier);
                let _ = self.tiers[t].set(tier);
            }
        } else {
            self.tiers[t] = OnceLock::new();
        }
        Ok(())
    }

    pub fn transform(&self, id: ObjectId) -> Option<Affine3A> {
        self.object(id).map(|o| o.transform)
    }

    fn object(&self, id: ObjectId) -> Option<&Object> {
        self.objects.get(id.0 as usize).and_then(Option::as_ref)
    }

    /// World-space bounds of object `id`'s mesh placed with `transform` (not necessarily its
    /// current one), or `None` if there is no such object or it has no triangles.
    pub fn object_bounds(&self, id: ObjectId, transform: Affine3A) -> Option<(Vec3, Vec3)> {
        let obj = self.object(id)?;
        let mut lo = Vec3::splat(f32::INFINITY);
        let mut hi = Vec3::splat(f32::NEG_INFINITY);
        for tri in &obj.mesh.triangles {
            for &v in tri {
                let p = transform.transform_point3(obj.mesh.positions[v as usize]);
                lo = lo.min(p);
                hi = hi.max(p);
            }
        }
        (lo.x <= hi.x).then_some((lo, hi))
    }

    /// Whether object `id` is movable (`None` if there is no such object).
    pub fn mobility(&self, id: ObjectId) -> Option<Mobility> {
        self.object(id).map(|o| o.mobility)
    }

    /// The object that owns a scene-wide triangle id, and the triangle's index in its mesh.
    pub fn triangle_owner(&self, triangle: u32) -> Option<(ObjectId, u32)> {
        self.objects.iter().enumerate().find_map(|(i, o)| {
            let o = o.as_ref()?;
            let local = triangle.checked_sub(o.first_triangle)?;
            ((local as usize) < o.mesh.triangles.len()).then_some((ObjectId(i as u32), local))
        })
    }

    /// Ids of the live objects.
    pub fn object_ids(&self) -> impl Iterator<Item = ObjectId> + '_ {
        self.objects
            .iter()
            .enumerate()
            .filter(|(_, o)| o.is_some())
            .map(|(i, _)| ObjectId(i as u32))
    }

    /// Number of live triangles.
    pub fn triangle_count(&self) -> usize {
        self.objects
            .iter()
            .flatten()
            .map(|o| o.mesh.triangles.len())
            .sum()
    }

    /// All live objects' meshes in world space, in one mesh (their vertices stay shared).
    pub(crate) fn world_mesh(&self) -> Mesh {
        let mut out = Mesh::default();
        for obj in self.objects.iter().flatten() {
            out.append(&obj.mesh, obj.transform);
        }
        out
    }

    /// All live triangles in world space, with their material indices, in scene-id order.
    pub fn world_triangles(&self) -> Vec<([Vec3; 3], u32)> {
        let mut out = Vec::with_capacity(self.triangle_count());
        for obj in self.objects.iter().flatten() {
            for (tri, &m) in obj.mesh.triangles.iter().zip(&obj.mesh.materials) {
                out.push((
                    tri.map(|v| {
                        obj.transform
                            .transform_point3(obj.mesh.positions[v as usize])
                    }),
                    m,
                ));
            }
        }
        out
    }

    /// A digest of the geometry queries see: FNV-1a 64 over every live triangle's world-space
    /// vertex bits, its material index and that material's flags and albedo bits, in
    /// scene-id order (static and movable alike). Tables record it so a table is not used
    /// with a scene that changed since it was computed.
    #[must_use]
    pub fn geometry_digest(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut write = |w: u32| {
            for b in w.to_le_bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        };
        for obj in self.objects.iter().flatten() {
            for (tri, &m) in obj.mesh.triangles.iter().zip(&obj.mesh.materials) {
                for v in tri {
                    let p = obj
                        .transform
                        .transform_point3(obj.mesh.positions[*v as usize]);
                    p.to_array().into_iter().for_each(|c| write(c.to_bits()));
                }
                let mat = &self.materials[m as usize];
                for w in [m, mat.flags.bits(), mat.albedo.to_bits()] {
                    write(w);
                }
            }
        }
        h
    }

    /// World-space bounds of all live geometry, or `None` for an empty scene.
    pub fn bounds(&self) -> Option<(Vec3, Vec3)> {
        let mut lo = Vec3::splat(f32::INFINITY);
        let mut hi = Vec3::splat(f32::NEG_INFINITY);
        for tier in self.tiers() {
            if let Some((min, max)) = crate::bvh::root_bounds(&tier.nodes) {
                lo = lo.min(min);
                hi = hi.max(max);
            }
        }
        (lo.x <= hi.x).then_some((lo, hi))
    }

    /// The two BVH tiers (static, movable), built on first use after a change.
    pub fn tiers(&self) -> [&Tier; 2] {
        [0, 1].map(|t| {
            self.tiers[t].get_or_init(|| {
                let mobility = if t == 0 {
                    Mobility::Static
                } else {
                    Mobility::Movable
                };
                Tier::build(&self.objects, &self.materials, mobility)
            })
        })
    }

    /// Identity of this scene and the revisions of its tiers, for GPU upload caches.
    pub fn cache_key(&self) -> (u64, [u64; 2]) {
        (self.uid, self.revisions)
    }

    fn invalidate(&mut self, mobility: Mobility) {
        let t = tier_index(mobility);
        self.revisions[t] += 1;
        self.tiers[t] = OnceLock::new();
        self.winding = OnceLock::new();
    }

    /// What [`Winding::Auto`] would flip in this scene's world triangles, read as a loader
    /// reads a file ([`winding_of`]); kept until the scene changes.
    pub fn winding(&self) -> &WindingReport {
        self.winding.get_or_init(|| winding_of(self))
    }

    fn refit(&self, tier: &mut Tier) {
        for tri in &mut tier.triangles {
            let (obj, local) = self
                .triangle_owner(tri.id)
                .expect("refit: every tier triangle belongs to a live object");
            let o = self.object(obj).expect("live object");
            let [a, b, c] = o.mesh.triangles[local as usize]
                .map(|v| o.transform.transform_point3(o.mesh.positions[v as usize]));
            tri.set_vertices(a, b, c);
        }
        crate::bvh::refit(&mut tier.nodes, &tier.triangles);
        tier.wide = crate::bvh::collapse(&tier.nodes);
    }
}

fn validate_transform(t: &Affine3A) -> crate::Result<()> {
    if !t.is_finite() {
        return Err(crate::Error::InvalidInput(
            "object transform has NaN or infinite entries; pass a finite affine transform".into(),
        ));
    }
    Ok(())
}

/// Checks indices, materials and coordinates; `source` names the file or object in errors.
pub(crate) fn validate_mesh(mesh: &Mesh, material_count: usize, source: &str) -> crate::Result<()> {
    if mesh.materials.len() != mesh.triangles.len() {
        return Err(crate::Error::InvalidInput(format!(
            "{source}: {} triangles but {} material entries; give one material index per triangle",
            mesh.triangles.len(),
            mesh.materials.len()
        )));
    }
    if let Some((i, p)) = mesh
        .positions
        .iter()
        .enumerate()
        .find(|(_, p)| !p.is_finite())
    {
        return Err(crate::Error::InvalidInput(format!(
            "{source}: vertex {i} has a non-finite coordinate {p}; remove or fix that vertex"
        )));
    }
    let n = mesh.positions.len();
    for (t, tri) in mesh.triangles.iter().enumerate() {
        if let Some(&v) = tri.iter().find(|&&v| v as usize >= n) {
            return Err(crate::Error::InvalidInput(format!(
                "{source}: triangle {t} uses vertex {v} but there are only {n} vertices; fix the index"
            )));
        }
        let m = mesh.materials[t];
        if m as usize >= material_count {
            return Err(crate::Error::InvalidInput(format!(
                "{source}: triangle {t} uses material {m} but the scene has {material_count}; add the material first"
            )));
        }
    }
    Ok(())
}
