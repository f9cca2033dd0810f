// Shared by every tracing kernel: buffer structs, the scene bindings, the watertight
// ray/triangle test. The walk of the scene follows it (bvh_walk.wgsl or ray_query.wgsl), then
// the kernel. Rust twins: src/bvh.rs (structs), src/trace/cpu.rs (functions). Keep the two in
// step; tests/shaders.rs checks the struct layouts with naga.

// The boxes of a node's two children, per axis [lo0, lo1, hi0, hi1]. count[i] == 0: child i
// is the inner node child[i]; count[i] > 0: a leaf of triangles child[i] .. child[i] + count[i];
// child[i] == EMPTY_CHILD: no child.
struct BvhNode {
    x: vec4<f32>,
    y: vec4<f32>,
    z: vec4<f32>,
    child: vec2<u32>,
    count: vec2<u32>,
}

struct Triangle {
    v0: vec3<f32>,
    id: u32,
    v1: vec3<f32>,
    material: u32,
    v2: vec3<f32>,
    flags: u32,
}

struct Segment {
    start: vec3<f32>,
    // 0: not staged; else the segments of its run before it (bits 2 and up) and its stage
    // plus one (bits 0 and 1). Read by the `occluded` kernel only.
    stage: u32,
    end: vec3<f32>,
    _pad1: u32,
}

struct Ray {
    origin: vec3<f32>,
    t_max: f32,
    dir: vec3<f32>,
    _pad: u32,
}

struct HitRecord {
    normal: vec3<f32>,
    t: f32,
    triangle: u32,
    material: u32,
    // 1 when the ray met the triangle's back (its winding normal points along the ray).
    back: u32,
    _pad1: u32,
}

struct Params {
    // Queries in this dispatch.
    count: u32,
    // Material flag bits that block.
    mask: u32,
    // 0: first scene chunk (start fresh), 1: improve on what earlier chunks wrote; 2 as 1,
    // and `occluded` stages its staged segments (the last chunk).
    accumulate: u32,
    // Not read here: the host copies it behind the results as proof that the pass ran.
    stamp: u32,
}

const NO_HIT: u32 = 0xffffffffu;
const EMPTY_CHILD: u32 = 0xffffffffu;
const STACK_SIZE: u32 = 66u; // depth bound (64) + 2, as in src/trace/cpu.rs
const BOX_PAD: f32 = 1.0000004;
// An edge function within this share of its larger product is read as exactly 0 (the ray on
// the edge), as `EDGE_SNAP` in src/trace/cpu.rs: a compiler may fuse one product of
// `p - q` (WGSL allows it), leaving the other's rounding error, of the same sign for both
// triangles of a shared edge, where the plain difference gives +-0 to both; read as 0 it
// keeps the test watertight however the compiler rounds.
const EDGE_SNAP: f32 = 1.1920929e-7;
const INF: f32 = 3.40282347e38; // f32::MAX stands in for +inf, which WGSL cannot spell

// Binding 0 is the scene's walk structure: the BVH nodes (bvh_walk.wgsl) or an acceleration
// structure (ray_query.wgsl).
@group(0) @binding(1) var<storage, read> triangles: array<Triangle>;
@group(0) @binding(2) var<uniform> params: Params;

// Woop et al.'s permute-and-shear as three dot products (see RayPrep in src/trace/cpu.rs).
struct RayPrep {
    org: vec3<f32>,
    dir: vec3<f32>,
    inv: vec3<f32>,
    row_x: vec3<f32>,
    row_y: vec3<f32>,
    row_z: vec3<f32>,
}

fn safe_component(d: f32) -> f32 {
    if abs(d) < 1e-30 {
        return select(1e-30, -1e-30, d < 0.0);
    }
    return d;
}

fn unit_axis(k: u32) -> vec3<f32> {
    return vec3<f32>(f32(k == 0u), f32(k == 1u), f32(k == 2u));
}

fn ray_prep(org: vec3<f32>, dir: vec3<f32>) -> RayPrep {
    let a = abs(dir);
    var kz = 2u;
    if a.x >= a.y && a.x >= a.z {
        kz = 0u;
    } else if a.y >= a.z {
        kz = 1u;
    }
    var kx = (kz + 1u) % 3u;
    var ky = (kx + 1u) % 3u;
    if dir[kz] < 0.0 {
        let tmp = kx;
        kx = ky;
        ky = tmp;
    }
    let ez = unit_axis(kz);
    var r: RayPrep;
    r.org = org;
    r.dir = dir;
    r.inv = vec3<f32>(1.0) / vec3<f32>(safe_component(dir.x), safe_component(dir.y), safe_component(dir.z));
    r.row_x = unit_axis(kx) - (dir[kx] / dir[kz]) * ez;
    r.row_y = unit_axis(ky) - (dir[ky] / dir[kz]) * ez;
    r.row_z = (1.0 / dir[kz]) * ez;
    return r;
}

// Watertight test: t with 0 < t < t_max, or -1 for a miss.
fn snap_edge(d: f32, p: f32, q: f32) -> f32 {
    return select(d, 0.0, abs(d) <= EDGE_SNAP * max(abs(p), abs(q)));
}

fn intersect(r: RayPrep, tri: Triangle, t_max: f32) -> f32 {
    let a = tri.v0 - r.org;
    let b = tri.v1 - r.org;
    let c = tri.v2 - r.org;
    let ax = dot(r.row_x, a);
    let ay = dot(r.row_y, a);
    let bx = dot(r.row_x, b);
    let by = dot(r.row_y, b);
    let cx = dot(r.row_x, c);
    let cy = dot(r.row_y, c);
    let u = snap_edge(cx * by - cy * bx, cx * by, cy * bx);
    let v = snap_edge(ax * cy - ay * cx, ax * cy, ay * cx);
    let w = snap_edge(bx * ay - by * ax, bx * ay, by * ax);
    if (u < 0.0 || v < 0.0 || w < 0.0) && (u > 0.0 || v > 0.0 || w > 0.0) {
        return -1.0;
    }
    let det = u + v + w;
    if det == 0.0 {
        return -1.0;
    }
    let t_scaled = u * dot(r.row_z, a) + v * dot(r.row_z, b) + w * dot(r.row_z, c);
    let sign = select(1.0, -1.0, det < 0.0);
    let ts = t_scaled * sign;
    let ds = det * sign;
    if ts <= 0.0 || ts >= t_max * ds {
        return -1.0;
    }
    return ts / ds;
}

struct Entry {
    // Bit i: the ray meets child i before t_max.
    mask: u32,
    near: vec2<f32>,
}

// Slab test of both children at once.
fn children_entry(r: RayPrep, n: BvhNode, t_max: f32) -> Entry {
    let tx = (n.x - vec4<f32>(r.org.x)) * r.inv.x;
    let ty = (n.y - vec4<f32>(r.org.y)) * r.inv.y;
    let tz = (n.z - vec4<f32>(r.org.z)) * r.inv.z;
    let sx = tx.zwxy;
    let sy = ty.zwxy;
    let sz = tz.zwxy;
    let near = max(max(min(tx, sx), min(ty, sy)), max(min(tz, sz), vec4<f32>(0.0)));
    let far = min(min(max(tx, sx), max(ty, sy)), min(max(tz, sz), vec4<f32>(t_max))) * BOX_PAD;
    var e: Entry;
    e.mask = select(0u, 1u, near.x <= far.x && n.child.x != EMPTY_CHILD)
        | select(0u, 2u, near.y <= far.y && n.child.y != EMPTY_CHILD);
    e.near = near.xy;
    return e;
}

fn hit_record(r: RayPrep, tri: Triangle, t: f32) -> HitRecord {
    var n = cross(tri.v1 - tri.v0, tri.v2 - tri.v0);
    let len2 = dot(n, n);
    n = select(vec3<f32>(0.0), n * inverseSqrt(len2), len2 > 0.0);
    let back = dot(n, r.dir) > 0.0;
    if back {
        n = -n;
    }
    var h: HitRecord;
    h.normal = n;
    h.back = select(0u, 1u, back);
    h.t = t;
    h.triangle = tri.id;
    h.material = tri.material;
    return h;
}

fn miss() -> HitRecord {
    var h: HitRecord;
    h.t = INF;
    h.triangle = NO_HIT;
    return h;
}
