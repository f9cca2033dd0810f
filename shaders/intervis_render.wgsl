// Intervis render passes (Darken, McCue and Guerrero, "Visibility Precomputation"). Self-contained (no
// common.wgsl). Rust twins: `intervis::measure::gpu::{ViewBlock, Light}`.
//
// - Scene pass, once per view: the triangles that block sight, shaded grey
//   (`albedo * (ambient + (1 - ambient) * max(0, n . sun))`, `n` turned toward the eye), into
//   an R32Float brightness target, and their depth (reversed infinite Z, `near / z`) into an
//   R32Float copy that the target passes restore from. Depth32Float attachment, compare
//   Greater; cleared to sky brightness and depth 0 (infinitely far).
// - Target pass, once per target into its own Depth24PlusStencil8 layer, scissored to the
//   target's padded box: a full-screen triangle restores the scene depth (frag_depth from the
//   copy) and zeroes the stencil, then the humanoid is drawn with both faces, depth compare
//   GreaterEqual and depth writes on (so its nearest surface's colour wins), stencil
//   reference 127: pass -> Replace (127), depth fail -> IncrementClamp. Stencil >= 127:
//   exposed; 1..126: occluded; 0: background. Its shaded grey goes to an R32Float layer.

struct ViewBlock {
    // Projection * view of the pair's view (reversed infinite Z).
    view_proj: mat4x4<f32>,
    // Local to world: identity for the scene, the target's placement for a target.
    model: mat4x4<f32>,
    // xyz: the eye; w unused.
    eye: vec4<f32>,
}

struct Light {
    // xyz: unit direction toward the sun; w: the ambient share.
    sun: vec4<f32>,
    sky: f32,
    // Focal length in pixels.
    focal: f32,
    resolution: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> view: ViewBlock;
@group(0) @binding(1) var<uniform> light: Light;
@group(1) @binding(0) var scene_depth: texture_2d<f32>;

struct Varyings {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) @interpolate(flat) normal: vec3<f32>,
    @location(2) @interpolate(flat) albedo: f32,
}

// Vertex: world (or target-local) position, and the triangle's unit geometric normal with
// the surface's albedo in w (the same for the triangle's three vertices).
@vertex
fn intervis_render_vertex(
    @location(0) position: vec3<f32>,
    @location(1) normal_albedo: vec4<f32>,
) -> Varyings {
    var out: Varyings;
    let world = view.model * vec4<f32>(position, 1.0);
    out.clip = view.view_proj * world;
    out.world = world.xyz;
    out.normal = (view.model * vec4<f32>(normal_albedo.xyz, 0.0)).xyz;
    out.albedo = normal_albedo.w;
    return out;
}

fn shade(v: Varyings) -> f32 {
    var n = v.normal;
    if dot(n, v.world - view.eye.xyz) > 0.0 {
        n = -n;
    }
    let ambient = light.sun.w;
    return v.albedo * (ambient + (1.0 - ambient) * max(0.0, dot(n, light.sun.xyz)));
}

struct SceneOut {
    @location(0) brightness: f32,
    @location(1) depth: f32,
}

@fragment
fn intervis_render_scene_fragment(v: Varyings) -> SceneOut {
    var out: SceneOut;
    out.brightness = shade(v);
    out.depth = v.clip.z;
    return out;
}

@fragment
fn intervis_render_target_fragment(v: Varyings) -> @location(0) f32 {
    return shade(v);
}

// A triangle covering the view; the scissor rectangle limits it to the target's box.
@vertex
fn intervis_render_restore_vertex(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    let xy = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u)) * 2.0 - 1.0;
    return vec4<f32>(xy, 0.0, 1.0);
}

struct RestoreOut {
    @builtin(frag_depth) depth: f32,
    @location(0) brightness: f32,
}

@fragment
fn intervis_render_restore_fragment(@builtin(position) p: vec4<f32>) -> RestoreOut {
    var out: RestoreOut;
    out.depth = textureLoad(scene_depth, vec2<i32>(p.xy), 0).r;
    out.brightness = 0.0;
    return out;
}
