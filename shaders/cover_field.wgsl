// Cover field classification (Morgan, IV.E, done per cell): for every ground cell, which
// postures are hidden from every observer of this group, judged against the observers' depth
// views (shaders/depth_map.wgsl): a cube of six faces, or one square frustum aimed at the field
// (`eye.w` > 0). A template point is hidden when all four texels around its projection hold a
// surface nearer than its distance minus the slack (`bias` plus one texel's footprint at its
// distance). One invocation per ground cell; the result is a bit per posture (bit 0 prone,
// 1 crouching, 2 standing) AND-ed over observers, so groups of observers combine by AND with
// identity 0b111. CPU twin: `cover::field::cover_field_ray_cast` (exact ray casting of the same
// template points). Self-contained (no common.wgsl).
// Rust twins of the structs: `cover::field::{Face, FieldParams}`.

struct Face {
    view_proj: mat4x4<f32>,
    // xyz: the eye. w: 0 for a cube face; > 0 for a single view, the tangent of its half field
    // of view (then only face 0 of the observer exists).
    eye: vec4<f32>,
}

struct FieldParams {
    // Ground cells in this dispatch.
    count: u32,
    // Invocations per row of the 2D dispatch (workgroups in x * 64).
    row_stride: u32,
    // Observers in this group, and the global index of its first one (faces are global).
    observers: u32,
    first_observer: u32,
    // Side of a face in texels.
    face_resolution: u32,
    // 0: first group (write), 1: later groups (AND into what is there).
    accumulate: u32,
    // Agent's collision radius (metres).
    radius: f32,
    // Constant depth slack (metres).
    bias: f32,
    // Head heights above the ground: prone, crouching, standing; w unused.
    heads: vec4<f32>,
}

@group(0) @binding(0) var<uniform> params: FieldParams;
@group(0) @binding(1) var<storage, read> faces: array<Face>;
// xyz: the ground point under the cell centre; w unused.
@group(0) @binding(2) var<storage, read> cells: array<vec4<f32>>;
// Layer 6 * o + f: face f of the group's observer o (f = 0 only, for a single view). Texels
// with no surface hold 3e38, never nearer than a point.
@group(0) @binding(3) var depth: texture_2d_array<f32>;
@group(0) @binding(4) var<storage, read_write> hidden: array<u32>;

// The face a direction leaves the cube through: 0 +X, 1 -X, 2 +Y, 3 -Y, 4 +Z, 5 -Z.
fn cube_face(d: vec3<f32>) -> u32 {
    let a = abs(d);
    if a.x >= a.y && a.x >= a.z {
        return select(0u, 1u, d.x < 0.0);
    }
    if a.y >= a.z {
        return select(2u, 3u, d.y < 0.0);
    }
    return select(4u, 5u, d.z < 0.0);
}

// Whether the depth view of the group's observer `o` has a surface in front of `p`.
fn point_hidden(p: vec3<f32>, o: u32) -> bool {
    let first = (params.first_observer + o) * 6u;
    let eye = faces[first].eye;
    let d = p - eye.xyz;
    let dist = length(d);
    if dist < 1.0e-6 {
        return false; // at the eye: nothing lies between
    }
    let single = eye.w > 0.0;
    let f = select(cube_face(d), 0u, single);
    let tan_half = select(1.0, eye.w, single);
    let clip = faces[first + f].view_proj * vec4<f32>(p, 1.0);
    if clip.w <= 0.0 {
        return false; // behind a single view (the field's bounds keep points in front)
    }
    let ndc = clip.xy / clip.w;
    let res = f32(params.face_resolution);
    let fb = vec2<f32>(ndc.x * 0.5 + 0.5, 0.5 - ndc.y * 0.5) * res;
    // Constant slack plus one texel's footprint at this distance (a face spans 2 tan_half units
    // at distance 1), so a surface just behind the point, seen at a slant, does not hide it.
    let limit = dist - (params.bias + dist * 2.0 * tan_half / res);
    // The 2x2 texels whose centres surround the point (its bilinear neighbourhood), clamped to
    // the face: hidden only if every one holds a nearer surface, so a silhouette edge or ground
    // seen at a grazing angle within a texel of the point leaves it exposed.
    let corner = vec2<i32>(floor(fb - 0.5));
    let last = vec2<i32>(i32(params.face_resolution) - 1);
    let layer = i32(o * 6u + f);
    for (var k = 0; k < 4; k++) {
        let texel = clamp(corner + vec2<i32>(k & 1, k >> 1u), vec2<i32>(0), last);
        if textureLoad(depth, texel, layer, 0).x >= limit {
            return false;
        }
    }
    return true;
}

// Mirrors `cover::template_points`: head height over the spot, and one radius to each side,
// perpendicular to the direction to the observer.
fn posture_hidden(ground: vec3<f32>, head_height: f32, o: u32) -> bool {
    let eye = faces[(params.first_observer + o) * 6u].eye.xyz;
    let head = ground + vec3<f32>(0.0, head_height, 0.0);
    let to_obs = vec3<f32>(eye.x - head.x, 0.0, eye.z - head.z);
    var side = vec3<f32>(params.radius, 0.0, 0.0);
    if dot(to_obs, to_obs) > 1.0e-12 {
        side = normalize(vec3<f32>(-to_obs.z, 0.0, to_obs.x)) * params.radius;
    }
    return point_hidden(head, o) && point_hidden(head - side, o) && point_hidden(head + side, o);
}

@compute @workgroup_size(64)
fn cover_field(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.y * params.row_stride + gid.x;
    if i >= params.count {
        return;
    }
    let ground = cells[i].xyz;
    var bits = 0u;
    for (var k = 0u; k < 3u; k++) {
        var all = true;
        for (var o = 0u; o < params.observers && all; o++) {
            all = posture_hidden(ground, params.heads[k], o);
        }
        bits |= select(0u, 1u << k, all);
    }
    if params.accumulate != 0u {
        bits &= hidden[i];
    }
    hidden[i] = bits;
}
