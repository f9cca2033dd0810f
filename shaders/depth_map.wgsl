// Depth views for the cover field (Morgan, IV.E): one render pass per face of each observer's
// view (a cube of six 90-degree faces, or one square frustum aimed at the field) draws the
// masked triangles and stores, per texel, the straight-line distance from the eye to the
// nearest surface (R32Float colour; a reversed-Z Depth32Float attachment picks the nearest).
// Texels with no surface keep the clear value (3e38, "nothing there"). Self-contained (no
// common.wgsl). Rust twin of `Face`: `cover::field::Face`.

struct Face {
    // Projection * view of this face, reversed infinite Z: a 90-degree square frustum for a
    // cube face, a square frustum just covering the field for a single view.
    view_proj: mat4x4<f32>,
    // xyz: the observer's eye. w: 0 for a cube face; for a single view, the tangent of its half
    // field of view (read by the classify pass only).
    eye: vec4<f32>,
}

@group(0) @binding(0) var<uniform> face: Face;

struct Varyings {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
}

@vertex
fn depth_map_vertex(@location(0) position: vec3<f32>) -> Varyings {
    var out: Varyings;
    out.clip = face.view_proj * vec4<f32>(position, 1.0);
    out.world = position;
    return out;
}

@fragment
fn depth_map_fragment(v: Varyings) -> @location(0) f32 {
    return distance(v.world, face.eye.xyz);
}
