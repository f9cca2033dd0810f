// Intervis render passes (Darken, McCue and Guerrero, "Visibility Precomputation") into two
// atlases of the same size. Self-contained (no common.wgsl). Rust twins:
// `intervis::measure::gpu::{Light, SceneTile, TargetTile}`.
//
// Every matrix here maps world space straight to atlas clip space: the view's projection
// followed by the shift and scale that put the view's pixel `(x, y)` at atlas pixel
// `(x, y) - box origin + tile origin`, so a tile holds exactly the box's pixels.
//
// - Scene pass, once per batch fill into the scene atlas (R32Float brightness, Depth32Float
//   depth, reversed infinite Z `near / z`): `clear` writes sky brightness and depth 0
//   (infinitely far) over every scene tile (one instanced draw), then each tile's triangles
//   that block sight are drawn with depth compare Greater, scissored to the tile, shaded grey
//   (`albedo * (ambient + (1 - ambient) * max(0, n . sun))`, `n` turned toward the eye).
// - Target pass, once per fill into the target atlas (Depth24PlusStencil8, R32Float
//   brightness): `restore` (one instanced draw over every target tile) copies the scene depth
//   of the tile's pixels from the scene atlas and zeroes the stencil; then the humanoids (one
//   instanced draw per posture) with both faces, depth compare GreaterEqual and depth writes
//   on (so the nearest surface's colour wins), stencil reference 127: pass -> Replace (127),
//   depth fail -> IncrementClamp. Stencil >= 127: exposed; 1..126: occluded; 0: background.
//   Fragments outside their own tile are discarded (a box clamped to its view's edge).

struct Light {
    // xyz: unit direction toward the sun; w: the ambient share.
    sun: vec4<f32>,
    sky: f32,
    _pad: u32,
    // Width and height of both atlases in pixels.
    atlas: vec2<f32>,
}

struct SceneTile {
    // World to scene-atlas clip space.
    view_proj: mat4x4<f32>,
    // xyz: the eye; w unused.
    eye: vec4<f32>,
    // The tile [x0, x1) x [y0, y1) in atlas pixels.
    rect: vec4<u32>,
}

struct TargetTile {
    // World to target-atlas clip space.
    view_proj: mat4x4<f32>,
    // The target's local to world transform.
    model: mat4x4<f32>,
    // xyz: the eye; w: the focal length of the target's view in pixels.
    eye: vec4<f32>,
    // The tile [x0, x1) x [y0, y1) in the target atlas.
    rect: vec4<u32>,
    // xy: where the tile's first pixel lies in the scene atlas; zw: which pixel of the view.
    origin: vec4<u32>,
    // x: the view's resolution; yzw unused.
    info: vec4<u32>,
}

@group(0) @binding(0) var<uniform> light: Light;
@group(0) @binding(1) var<storage, read> scene_tiles: array<SceneTile>;
@group(0) @binding(2) var<storage, read> target_tiles: array<TargetTile>;
@group(1) @binding(0) var scene_depth: texture_depth_2d;

struct Varyings {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) @interpolate(flat) normal: vec3<f32>,
    @location(2) @interpolate(flat) albedo: f32,
    @location(3) @interpolate(flat) eye: vec3<f32>,
    @location(4) @interpolate(flat) rect: vec4<u32>,
}

fn shade(v: Varyings) -> f32 {
    var n = v.normal;
    if dot(n, v.world - v.eye) > 0.0 {
        n = -n;
    }
    let ambient = light.sun.w;
    return v.albedo * (ambient + (1.0 - ambient) * max(0.0, dot(n, light.sun.xyz)));
}

// Scene vertex: world position, and the triangle's unit geometric normal with the surface's
// albedo in w (the same for the triangle's three vertices). The instance is the tile.
@vertex
fn intervis_render_scene_vertex(
    @location(0) position: vec3<f32>,
    @location(1) normal_albedo: vec4<f32>,
    @builtin(instance_index) tile: u32,
) -> Varyings {
    let t = scene_tiles[tile];
    var out: Varyings;
    out.clip = t.view_proj * vec4<f32>(position, 1.0);
    out.world = position;
    out.normal = normal_albedo.xyz;
    out.albedo = normal_albedo.w;
    out.eye = t.eye.xyz;
    out.rect = t.rect;
    return out;
}

struct SceneOut {
    @location(0) brightness: f32,
}

@fragment
fn intervis_render_scene_fragment(v: Varyings) -> SceneOut {
    var out: SceneOut;
    out.brightness = shade(v);
    return out;
}

// Target vertex: the posture mesh in its own frame; the instance is the target tile.
@vertex
fn intervis_render_target_vertex(
    @location(0) position: vec3<f32>,
    @location(1) normal_albedo: vec4<f32>,
    @builtin(instance_index) tile: u32,
) -> Varyings {
    let t = target_tiles[tile];
    var out: Varyings;
    let world = t.model * vec4<f32>(position, 1.0);
    out.clip = t.view_proj * world;
    out.world = world.xyz;
    out.normal = (t.model * vec4<f32>(normal_albedo.xyz, 0.0)).xyz;
    out.albedo = normal_albedo.w;
    out.eye = t.eye.xyz;
    out.rect = t.rect;
    return out;
}

@fragment
fn intervis_render_target_fragment(v: Varyings) -> @location(0) f32 {
    let p = vec2<u32>(v.clip.xy);
    if any(p < v.rect.xy) || any(p >= v.rect.zw) {
        discard;
    }
    return shade(v);
}

// Corner `i` (0..6, two triangles) of `rect`, in atlas clip space at depth `z`.
fn rect_corner(rect: vec4<u32>, i: u32, z: f32) -> vec4<f32> {
    let corner = array<vec2<u32>, 6>(
        vec2<u32>(0u, 0u), vec2<u32>(1u, 0u), vec2<u32>(0u, 1u),
        vec2<u32>(0u, 1u), vec2<u32>(1u, 0u), vec2<u32>(1u, 1u),
    )[i];
    let px = vec2<f32>(select(rect.xy, rect.zw, corner == vec2<u32>(1u)));
    let ndc = vec2<f32>(px.x / light.atlas.x * 2.0 - 1.0, 1.0 - px.y / light.atlas.y * 2.0);
    return vec4<f32>(ndc, z, 1.0);
}

struct Flat {
    @builtin(position) clip: vec4<f32>,
    @location(0) @interpolate(flat) tile: u32,
}

// Sky brightness at depth 0 over scene tile `instance`.
@vertex
fn intervis_render_clear_vertex(
    @builtin(vertex_index) i: u32,
    @builtin(instance_index) tile: u32,
) -> Flat {
    return Flat(rect_corner(scene_tiles[tile].rect, i, 0.0), tile);
}

@fragment
fn intervis_render_clear_fragment(v: Flat) -> SceneOut {
    return SceneOut(light.sky);
}

// The scene depth back under target tile `instance`, stencil zeroed by the pipeline.
@vertex
fn intervis_render_restore_vertex(
    @builtin(vertex_index) i: u32,
    @builtin(instance_index) tile: u32,
) -> Flat {
    return Flat(rect_corner(target_tiles[tile].rect, i, 0.0), tile);
}

struct RestoreOut {
    @builtin(frag_depth) depth: f32,
    @location(0) brightness: f32,
}

@fragment
fn intervis_render_restore_fragment(v: Flat) -> RestoreOut {
    let t = target_tiles[v.tile];
    let p = vec2<u32>(v.clip.xy) - t.rect.xy + t.origin.xy;
    var out: RestoreOut;
    out.depth = textureLoad(scene_depth, vec2<i32>(p), 0);
    out.brightness = 0.0;
    return out;
}
