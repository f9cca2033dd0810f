// Intervis render pass (Darken, McCue and Guerrero, "Visibility Precomputation") into an atlas.
// Self-contained (no common.wgsl). Rust twins: `intervis::measure::gpu::{Light, SceneTile,
// TargetTile}`.
//
// Every matrix here maps world space straight to atlas clip space: the view's projection
// followed by the shift and scale that put the view's pixel `(x, y)` at atlas pixel
// `(x, y) - box origin + tile origin`, so a tile holds exactly its target's box.
//
// One render pass per batch fill into the atlas (R32Float brightness, Depth24PlusStencil8,
// reversed infinite Z `near / z`), cleared to sky brightness, depth 0 (infinitely far) and
// stencil 0:
// - each tile's scene triangles that block sight (culled to the tile's frustum, drawn through
//   an index buffer), depth compare Greater, scissored to the tile, shaded grey in the vertex
//   stage (`albedo * (ambient + (1 - ambient) * max(0, n . sun))`, `n` turned toward the eye);
// - then every tile's humanoid (one instanced, indexed draw per posture):
//   front faces only (the body is closed and wound outward), depth compare GreaterEqual with
//   depth writes (the nearest surface's brightness wins), stencil reference 127: pass ->
//   Replace (127), depth fail -> IncrementClamp; normals from the derivatives of the world
//   position. Stencil >= 127: exposed (the pixel holds the target's brightness); 1..126:
//   occluded; 0: background (both hold the scene's). Fragments outside their own box are
//   discarded (a box clamped to its view's edge).

struct Light {
    // xyz: unit direction toward the sun; w: the ambient share.
    sun: vec4<f32>,
    sky: f32,
    target_albedo: f32,
    // Width and height of the atlas in pixels.
    atlas: vec2<f32>,
}

struct Tile {
    // World to atlas clip space.
    view_proj: mat4x4<f32>,
    // The target's local to world transform.
    model: mat4x4<f32>,
    // xyz: the eye; w: the focal length of the target's view in pixels.
    eye: vec4<f32>,
    // The target's padded box [x0, x1) x [y0, y1) in the atlas.
    rect: vec4<u32>,
    // xy: the view pixel of the box's first pixel; z: the view's resolution; w unused.
    view_pixel: vec4<u32>,
}

@group(0) @binding(0) var<uniform> light: Light;
// The fill's tiles (a dynamic offset): instance `i` of a draw is tile `i`.
@group(0) @binding(1) var<storage, read> tiles: array<Tile>;

// Grey level of a surface of `albedo` with normal `n` seen from `eye` at `world`: the normal
// turned toward the eye (a triangle's plane keeps the eye on one side, so any of its points
// decides).
fn shade(albedo: f32, n: vec3<f32>, world: vec3<f32>, eye: vec3<f32>) -> f32 {
    var m = n;
    if dot(m, world - eye) > 0.0 {
        m = -m;
    }
    let ambient = light.sun.w;
    return albedo * (ambient + (1.0 - ambient) * max(0.0, dot(m, light.sun.xyz)));
}

struct SceneVaryings {
    @builtin(position) clip: vec4<f32>,
    @location(0) @interpolate(flat) brightness: f32,
}

// Scene vertex: world position, and the triangle's unit geometric normal with the surface's
// albedo in w (the same for the triangle's three vertices), shaded here (flat: the provoking
// vertex's value colours the triangle). The instance is the tile.
@vertex
fn intervis_render_scene_vertex(
    @location(0) position: vec3<f32>,
    @location(1) normal_albedo: vec4<f32>,
    @builtin(instance_index) tile: u32,
) -> SceneVaryings {
    let eye = tiles[tile].eye.xyz;
    return SceneVaryings(
        tiles[tile].view_proj * vec4<f32>(position, 1.0),
        shade(normal_albedo.w, normal_albedo.xyz, position, eye),
    );
}

@fragment
fn intervis_render_scene_fragment(v: SceneVaryings) -> @location(0) f32 {
    return v.brightness;
}

struct TargetVaryings {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) @interpolate(flat) eye: vec3<f32>,
    @location(2) @interpolate(flat) rect: vec4<u32>,
}

// Target vertex: the posture mesh in its own frame (indexed, vertices shared); the instance is
// the tile.
@vertex
fn intervis_render_target_vertex(
    @location(0) position: vec3<f32>,
    @builtin(instance_index) tile: u32,
) -> TargetVaryings {
    var out: TargetVaryings;
    let world = tiles[tile].model * vec4<f32>(position, 1.0);
    out.clip = tiles[tile].view_proj * world;
    out.world = world.xyz;
    out.eye = tiles[tile].eye.xyz;
    out.rect = tiles[tile].rect;
    return out;
}

// The triangle's normal from the screen-space derivatives of the world position (the plane
// the rasteriser interpolates over), turned toward the eye, shaded like the scene.
@fragment
fn intervis_render_target_fragment(v: TargetVaryings) -> @location(0) f32 {
    let p = vec2<u32>(v.clip.xy);
    if any(p < v.rect.xy) || any(p >= v.rect.zw) {
        discard;
    }
    let c = cross(dpdx(v.world), dpdy(v.world));
    return shade(light.target_albedo, c * inverseSqrt(max(dot(c, c), 1e-30)), v.world, v.eye);
}
