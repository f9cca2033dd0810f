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
//   instanced, indexed draw per posture; their normals from the derivatives of the world
//   position) with both faces, depth compare GreaterEqual and depth writes
//   on (so the nearest surface's colour wins), stencil reference 127: pass -> Replace (127),
//   depth fail -> IncrementClamp. Stencil >= 127: exposed; 1..126: occluded; 0: background.
//   Fragments outside their own tile are discarded (a box clamped to its view's edge).

struct Light {
    // xyz: unit direction toward the sun; w: the ambient share.
    sun: vec4<f32>,
    sky: f32,
    target_albedo: f32,
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
    let eye = scene_tiles[tile].eye.xyz;
    return SceneVaryings(
        scene_tiles[tile].view_proj * vec4<f32>(position, 1.0),
        shade(normal_albedo.w, normal_albedo.xyz, position, eye),
    );
}

struct SceneOut {
    @location(0) brightness: f32,
}

@fragment
fn intervis_render_scene_fragment(v: SceneVaryings) -> SceneOut {
    return SceneOut(v.brightness);
}

struct TargetVaryings {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) @interpolate(flat) eye: vec3<f32>,
    @location(2) @interpolate(flat) rect: vec4<u32>,
}

// Target vertex: the posture mesh in its own frame (indexed, vertices shared); the instance is
// the target tile.
@vertex
fn intervis_render_target_vertex(
    @location(0) position: vec3<f32>,
    @builtin(instance_index) tile: u32,
) -> TargetVaryings {
    var out: TargetVaryings;
    let world = target_tiles[tile].model * vec4<f32>(position, 1.0);
    out.clip = target_tiles[tile].view_proj * world;
    out.world = world.xyz;
    out.eye = target_tiles[tile].eye.xyz;
    out.rect = target_tiles[tile].rect;
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
