// Shadow volumes of a point threat, counted in a top-down stencil (Morgan, "Algorithmic
// approaches to finding cover", IV.D). One render pass per (threat, sample height), over a
// depth-stencil target of one pixel per cell:
//
// 1. prime: each pixel's depth is its cell's sample point (ground + lift) on an orthographic
//    view looking straight down, depth 0 at `y_top`, 1 at `y_top - y_span`;
// 2. volume: every caster (a triangle facing away from the threat) drawn as a closed volume,
//    the triangle and its extrusion away from the threat past every sample point, depth-fail
//    counted: a face behind (below) the sample point adds or takes one, by its facing. The
//    count is the number of casters the segment from the threat to the point crosses (modulo
//    256), so it is non-zero exactly where the point is in shadow. The volumes' fragments
//    write their depth from their height, clamped, so nothing is clipped by depth and every
//    face below the depth range still counts;
// 3. resolve: where the stencil is still 0 the point is lit: the pass writes its posture's
//    channel into the `exposed` colour target, whose blend keeps the maximum over passes (an
//    OR per posture). The shader has no side effect, so the late stencil test discards it.

struct Frame {
    // World position every other coordinate is relative to (w unused).
    anchor: vec4<f32>,
    // x, z of cell (0, 0)'s corner.
    origin: vec2<f32>,
    cell: f32,
    // Cells per side of the square grid (and pixels per side of a tile).
    side: u32,
    // y of depth 0 and the height span to depth 1.
    y_top: f32,
    y_span: f32,
    postures: u32,
    cells: u32,
};

struct Tile {
    // The threat, relative to the anchor (w unused).
    light: vec4<f32>,
    // Height of this pass's sample points above the ground.
    lift: f32,
    // The bits of the postures this pass's samples stand for.
    bit: u32,
    pad0: u32,
    pad1: u32,
};

// Ground heights relative to the anchor at or above this mean "no ground".
const NO_GROUND: f32 = 1.0e30;

@group(0) @binding(0) var<uniform> frame: Frame;
@group(0) @binding(1) var<uniform> tile: Tile;
// Casters' vertices of the static and movable tiers: nine floats a triangle.
@group(0) @binding(2) var<storage, read> tier0: array<f32>;
@group(0) @binding(3) var<storage, read> tier1: array<f32>;
// Caster ids: the triangle's index in its tier, the top bit set for the movable tier.
@group(0) @binding(4) var<storage, read> casters: array<u32>;
@group(0) @binding(5) var<storage, read> heights: array<f32>;

// The volume's 8 triangles, outward: near cap (0 2 1), far cap (3 4 5), a quad per edge.
const CORNERS = array<u32, 24>(
    0u, 2u, 1u, 3u, 4u, 5u,
    0u, 1u, 4u, 0u, 4u, 3u,
    1u, 2u, 5u, 1u, 5u, 4u,
    2u, 0u, 3u, 2u, 3u, 5u,
);

// Top-down orthographic clip position of a point. Depth is not taken from z: the volume's
// fragments write it from their height (`Volume::y`), clamped into [0, 1] by the shader, so
// no part of a volume is clipped by depth and no driver's depth clamp is relied on.
fn to_clip(p: vec3<f32>) -> vec4<f32> {
    let extent = frame.cell * f32(frame.side);
    let x = (p.x - frame.origin.x) / extent * 2.0 - 1.0;
    let y = 1.0 - (p.z - frame.origin.y) / extent * 2.0;
    return vec4<f32>(x, y, 0.5, 1.0);
}

// Depth of a height relative to the anchor: 0 at `y_top`, 1 at `y_top - y_span`.
fn depth_of(y: f32) -> f32 {
    return clamp((frame.y_top - y) / frame.y_span, 0.0, 1.0);
}

struct Volume {
    @builtin(position) position: vec4<f32>,
    // Height relative to the anchor, interpolated linearly (exact for an orthographic view).
    @location(0) y: f32,
    // 1 where the face is steeper than MAX_SLOPE.
    @location(1) @interpolate(flat) steep: u32,
};

fn caster_vertex(id: u32, k: u32) -> vec3<f32> {
    let i = (id & 0x7fffffffu) * 9u + k * 3u;
    if (id & 0x80000000u) != 0u {
        return vec3<f32>(tier1[i], tier1[i + 1u], tier1[i + 2u]);
    }
    return vec3<f32>(tier0[i], tier0[i + 1u], tier0[i + 2u]);
}

// Most a far corner's distance from the threat exceeds the threat's distance to the anchor
// plus `reach`, as a factor: a caster seen almost edge-on would need an unbounded volume; its
// sliver of shadow beyond lies within the band of its plane.
const MAX_STRETCH: f32 = 64.0;

// Corner `k` of caster `id`'s volume, relative to the anchor: 0-2 the caster's corners, 3-5
// their far counterparts.
fn corner(id: u32, k: u32) -> vec3<f32> {
    let v = caster_vertex(id, k % 3u) - frame.anchor.xyz;
    if k < 3u {
        return v;
    }
    let light = tile.light.xyz;
    let reach = frame.cell * f32(frame.side) + frame.y_span;
    let a = caster_vertex(id, 0u) - frame.anchor.xyz - light;
    let b = caster_vertex(id, 1u) - frame.anchor.xyz - light;
    let c = caster_vertex(id, 2u) - frame.anchor.xyz - light;
    let m = far_normal(a, b, c);
    // The far cap lies on the plane m.(x - light) = far, beyond the caster and every sample
    // point (each within `reach` of the anchor), so every point of the area in the caster's
    // shadow lies inside the volume. A flat cap at a fixed distance would cut across a wide
    // shadow close to the threat.
    let far = max(dot(m, -light) + reach, max(dot(m, a), max(dot(m, b), dot(m, c)))) + 1.0;
    let most = MAX_STRETCH * (length(light) + reach);
    if m.y == 0.0 {
        // A vertical far plane: the scale along (v - light) depends on v's x and z alone, so
        // the corners of a vertical edge keep one x and z and the volume's face through that
        // edge stays exactly edge-on (no sliver).
        let h = vec2<f32>(dot(m.xz, (v - light).xz), length((v - light).xz));
        let scale = clamp(far / h.x, 1.0, max(most / h.y, 1.0));
        return light + (v - light) * scale;
    }
    let d = normalize(v - light);
    let t = clamp(far / max(dot(m, d), 1.0e-30), length(v - light), most);
    return light + d * t;
}

// Steepest face (height change per metre across) whose interpolated height the pass trusts:
// the rasterizer snaps corners to its sub-pixel grid, which moves a steep face's height at a
// pixel by the snap times the slope. Pixels under steeper faces are flagged and answered by
// exact ray casts (GPU_BAND_CELLS in the crate).
const MAX_SLOPE: f32 = 16.0;

@vertex
fn shadow_volumes_volume(
    @builtin(vertex_index) vi: u32,
    @builtin(instance_index) ii: u32,
) -> Volume {
    var corners = CORNERS;
    let id = casters[ii];
    // The position from one call site, so a corner shared by two faces comes out with the
    // same bits in both (a compiler may round the same expression differently where it is
    // inlined twice); the slope needs no such care.
    let p = corner(id, corners[vi]);
    let first = vi - vi % 3u;
    let p0 = corner(id, corners[first]);
    let n = cross(corner(id, corners[first + 1u]) - p0, corner(id, corners[first + 2u]) - p0);
    let steep = abs(n.y) * MAX_SLOPE < length(n.xz);
    return Volume(to_clip(p), p.y, u32(steep));
}

// Least cosine between a far-cap normal and the caster's rays for the normal to be horizontal.
const LEVEL_COS: f32 = 0.05;

// The far cap's normal. Horizontal where every ray (from the threat to the corners `a`, `b`,
// `c`) leaves it at a cosine of at least LEVEL_COS (see the volume's vertical edges); else, of
// the caster's own normal and its rays' mean direction, the one the rays meet least obliquely.
fn far_normal(a: vec3<f32>, b: vec3<f32>, c: vec3<f32>) -> vec3<f32> {
    let ha = a.xz / length(a.xz);
    let hb = b.xz / length(b.xz);
    let hc = c.xz / length(c.xz);
    let level = normalize(ha + hb + hc);
    let on_level = min(dot(level, ha), min(dot(level, hb), dot(level, hc)));
    if on_level >= LEVEL_COS {
        // The rays' projections have length up to |ray|, so m.d >= on_level * |d.xz|: checked
        // again below through the scale's clamp.
        return vec3<f32>(level.x, 0.0, level.y);
    }
    let da = normalize(a);
    let db = normalize(b);
    let dc = normalize(c);
    let n = normalize(cross(b - a, c - a));
    let mean = normalize(da + db + dc);
    let on_n = min(dot(n, da), min(dot(n, db), dot(n, dc)));
    let on_mean = min(dot(mean, da), min(dot(mean, db), dot(mean, dc)));
    return select(n, mean, on_mean > on_n);
}

// One triangle covering the whole target.
@vertex
fn shadow_volumes_tile(@builtin(vertex_index) vi: u32) -> @builtin(position) vec4<f32> {
    let uv = vec2<f32>(f32((vi << 1u) & 2u), f32(vi & 2u));
    return vec4<f32>(uv * 2.0 - 1.0, 0.0, 1.0);
}

fn cell_at(pos: vec4<f32>) -> u32 {
    let p = vec2<u32>(pos.xy);
    return p.y * frame.side + p.x;
}

@fragment
fn shadow_volumes_prime(@builtin(position) pos: vec4<f32>) -> @builtin(frag_depth) f32 {
    let h = heights[cell_at(pos)];
    if h >= NO_GROUND {
        return 0.0;
    }
    return depth_of(h + tile.lift);
}

// Drawn where the stencil is 0: the sample is lit; its postures' channels are set.
@fragment
fn shadow_volumes_resolve() -> @location(0) vec4<f32> {
    return vec4<f32>(vec3<f32>((vec3<u32>(tile.bit) & vec3<u32>(1u, 2u, 4u)) != vec3<u32>(0u)), 0.0);
}

// The volumes only count in the stencil, at the depth of their height.
@fragment
fn shadow_volumes_count(@location(0) y: f32) -> @builtin(frag_depth) f32 {
    return depth_of(y);
}

// Drawn a second time without tests: a steep face flags the pixels under it (alpha).
@fragment
fn shadow_volumes_flag(@location(1) @interpolate(flat) steep: u32) -> @location(0) vec4<f32> {
    if steep == 0u {
        discard;
    }
    return vec4<f32>(0.0, 0.0, 0.0, 1.0);
}
