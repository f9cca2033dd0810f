// Shared by every tracing kernel: buffer structs, the scene bindings, the watertight
// ray/triangle test and the BVH walks. Rust twins: src/bvh.rs (structs), src/trace/cpu.rs
// (functions). Keep the two in step; tests/shaders.rs checks the struct layouts with naga.

struct BvhNode {
    min: vec3<f32>,
    left_or_first: u32,
    max: vec3<f32>,
    count: u32,
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
    _pad0: u32,
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
    _pad0: u32,
    _pad1: u32,
}

struct Params {
    // Queries in this dispatch.
    count: u32,
    // Material flag bits that block.
    mask: u32,
    // 0: first scene chunk (start fresh), 1: improve on what earlier chunks wrote.
    accumulate: u32,
    _pad: u32,
}

const NO_HIT: u32 = 0xffffffffu;
const STACK_SIZE: u32 = 64u;
const BOX_PAD: f32 = 1.0000004;
const INF: f32 = 3.40282347e38; // f32::MAX stands in for +inf, which WGSL cannot spell

@group(0) @binding(0) var<storage, read> nodes: array<BvhNode>;
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
    let u = cx * by - cy * bx;
    let v = ax * cy - ay * cx;
    let w = bx * ay - by * ax;
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

// Slab test: entry distance, or INF when the box is missed before t_max.
fn box_entry(r: RayPrep, n: BvhNode, t_max: f32) -> f32 {
    let t0 = (n.min - r.org) * r.inv;
    let t1 = (n.max - r.org) * r.inv;
    let lo = min(t0, t1);
    let hi = max(t0, t1);
    let near = max(max(max(lo.x, lo.y), lo.z), 0.0);
    let far = min(min(min(hi.x, hi.y), hi.z), t_max) * BOX_PAD;
    return select(INF, near, near <= far);
}

fn any_hit(r: RayPrep, t_max: f32, mask: u32) -> bool {
    if arrayLength(&nodes) == 0u || box_entry(r, nodes[0], t_max) == INF {
        return false;
    }
    var stack: array<u32, STACK_SIZE>;
    var sp = 0u;
    var node = 0u;
    loop {
        let n = nodes[node];
        if n.count > 0u {
            for (var i = n.left_or_first; i < n.left_or_first + n.count; i++) {
                let tri = triangles[i];
                if (tri.flags & mask) != 0u && intersect(r, tri, t_max) > 0.0 {
                    return true;
                }
            }
        } else {
            let l = n.left_or_first;
            let dl = box_entry(r, nodes[l], t_max);
            let dr = box_entry(r, nodes[l + 1u], t_max);
            let left_first = dl <= dr;
            let near = select(l + 1u, l, left_first);
            let far = select(l, l + 1u, left_first);
            if min(dl, dr) != INF {
                if max(dl, dr) != INF && sp < STACK_SIZE {
                    stack[sp] = far;
                    sp++;
                }
                node = near;
                continue;
            }
        }
        if sp == 0u {
            return false;
        }
        sp--;
        node = stack[sp];
    }
    return false;
}

fn hit_record(r: RayPrep, tri: Triangle, t: f32) -> HitRecord {
    var n = cross(tri.v1 - tri.v0, tri.v2 - tri.v0);
    let len2 = dot(n, n);
    n = select(vec3<f32>(0.0), n * inverseSqrt(len2), len2 > 0.0);
    if dot(n, r.dir) > 0.0 {
        n = -n;
    }
    var h: HitRecord;
    h.normal = n;
    h.t = t;
    h.triangle = tri.id;
    h.material = tri.material;
    return h;
}

// Improves `best` with the closest blocking triangle; ties go to the lower triangle id.
fn closest(r: RayPrep, t_max: f32, mask: u32, best_in: HitRecord) -> HitRecord {
    var best = best_in;
    if arrayLength(&nodes) == 0u || box_entry(r, nodes[0], min(best.t, t_max)) == INF {
        return best;
    }
    var stack: array<u32, STACK_SIZE>;
    var sp = 0u;
    var node = 0u;
    loop {
        let n = nodes[node];
        var descend = false;
        if n.count > 0u {
            for (var i = n.left_or_first; i < n.left_or_first + n.count; i++) {
                let tri = triangles[i];
                if (tri.flags & mask) == 0u {
                    continue;
                }
                let t = intersect(r, tri, t_max);
                if t > 0.0 && (t < best.t || (t == best.t && tri.id < best.triangle)) {
                    best = hit_record(r, tri, t);
                }
            }
        } else {
            let l = n.left_or_first;
            let limit = min(best.t, t_max);
            let dl = box_entry(r, nodes[l], limit);
            let dr = box_entry(r, nodes[l + 1u], limit);
            let left_first = dl <= dr;
            let near = select(l + 1u, l, left_first);
            let far = select(l, l + 1u, left_first);
            if min(dl, dr) != INF {
                if max(dl, dr) != INF && sp < STACK_SIZE {
                    stack[sp] = far;
                    sp++;
                }
                node = near;
                descend = true;
            }
        }
        if descend {
            continue;
        }
        // Pop, skipping boxes that now start beyond the best hit.
        var found = false;
        loop {
            if sp == 0u {
                break;
            }
            sp--;
            node = stack[sp];
            if box_entry(r, nodes[node], min(best.t, t_max)) != INF {
                found = true;
                break;
            }
        }
        if !found {
            return best;
        }
    }
    return best;
}
