//! Hand-made scene pieces shared by the cover tests.
#![allow(dead_code)]

use glam::Vec3;
use sightline::{Material, MaterialFlags, Mesh};

pub const GROUND: u32 = 0;
pub const SOLID: u32 = 1;
pub const FOLIAGE: u32 = 2;
pub const GLASS: u32 = 3;

pub fn materials() -> Vec<Material> {
    vec![
        Material::new(
            "ground",
            MaterialFlags::SOLID | MaterialFlags::WALKABLE,
            0.4,
        ),
        Material::new("wall", MaterialFlags::SOLID, 0.6),
        Material::new("foliage", MaterialFlags::BLOCKS_SIGHT, 0.3),
        Material::new("glass", MaterialFlags::BLOCKS_FIRE, 0.7),
    ]
}

/// A closed axis-aligned box.
pub fn cuboid(mesh: &mut Mesh, lo: Vec3, hi: Vec3, material: u32) {
    let c =
        |x: usize, y: usize, z: usize| Vec3::new([lo.x, hi.x][x], [lo.y, hi.y][y], [lo.z, hi.z][z]);
    let faces = [
        [c(0, 0, 0), c(0, 0, 1), c(0, 1, 1), c(0, 1, 0)],
        [c(1, 0, 0), c(1, 1, 0), c(1, 1, 1), c(1, 0, 1)],
        [c(0, 0, 0), c(1, 0, 0), c(1, 0, 1), c(0, 0, 1)],
        [c(0, 1, 0), c(0, 1, 1), c(1, 1, 1), c(1, 1, 0)],
        [c(0, 0, 0), c(0, 1, 0), c(1, 1, 0), c(1, 0, 0)],
        [c(0, 0, 1), c(1, 0, 1), c(1, 1, 1), c(0, 1, 1)],
    ];
    for [a, b, cc, d] in faces {
        mesh.push_quad(a, b, cc, d, material);
    }
}

pub fn ground(mesh: &mut Mesh, half: f32, y: f32) {
    mesh.push_quad(
        Vec3::new(-half, y, -half),
        Vec3::new(-half, y, half),
        Vec3::new(half, y, half),
        Vec3::new(half, y, -half),
        GROUND,
    );
}
