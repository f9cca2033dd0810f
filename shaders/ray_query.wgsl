// The hardware walk of the scene: wgpu ray queries over an acceleration structure at binding 0
// (`enable wgpu_ray_query;` goes in front of common.wgsl). Defines `trace_any` and
// `trace_closest` as bvh_walk.wgsl does, with the same answers under the agreement contract.
// Rust side: src/gpu/ray_query.rs.
//
// A scene chunk's top-level structure holds one instance per class of material flags, its mask
// the class's flags, so the ray's cull mask (the query's mask) skips every class that cannot
// block. Each query first runs on the hardware alone (forced opaque: no shader code during the
// walk, as RT cores like it), and the triangle it reports is checked with common.wgsl's
// watertight `intersect` and the strict ends (0 < t < t_max) that the compute walk and the CPU
// twin use; the hit's distance, normal and id are computed by that test. Only when the test
// refuses the hardware's triangle (a segment that ends on a face, a ray along an edge) does
// the query run again with every candidate decided by the exact test (forced non-opaque). So
// a segment ending on a face is not blocked by it here either, and answers keep the agreement
// contract. `tri_index[instance_custom_data + primitive_index]` is a triangle's index in
// `triangles` (the chunk's triangles, shared with the compute walk).

@group(0) @binding(0) var scene_as: acceleration_structure;
@group(0) @binding(5) var<storage, read> tri_index: array<u32>;

// The hardware's window is [0, t_max] widened by this factor, so that its own rounding never
// drops a candidate the exact test accepts; the exact test cuts at t_max.
const RQ_WINDOW: f32 = 1.0001;

fn rq_desc(r: RayPrep, t_max: f32, mask: u32, flags: u32) -> RayDesc {
    let window = min(t_max, INF / RQ_WINDOW) * RQ_WINDOW;
    return RayDesc(flags, mask & 0xffu, 0.0, window, r.org, r.dir);
}

// A candidate's or a committed hit's triangle. (naga's SPIR-V writer cannot pass a ray query
// to a function, so the walks read the intersection themselves.)
fn rq_triangle(c: RayIntersection) -> Triangle {
    return triangles[tri_index[c.instance_custom_data + c.primitive_index]];
}

// Whether a triangle matching `mask` lies strictly between t = 0 and `t_max` along `r`. Fast
// path: the hardware alone (forced opaque, first hit ends the walk), its hit confirmed by the
// exact test. A hit the exact test refuses (the segment ends on that face, or grazes its edge)
// sends the segment to the exact walk.
fn trace_any(r: RayPrep, t_max: f32, mask: u32) -> bool {
    if (mask & 0xffu) == 0u {
        return false;
    }
    var rq: ray_query;
    let flags = RAY_FLAG_FORCE_OPAQUE | RAY_FLAG_TERMINATE_ON_FIRST_HIT;
    rayQueryInitialize(&rq, scene_as, rq_desc(r, t_max, mask, flags));
    rayQueryProceed(&rq);
    let c = rayQueryGetCommittedIntersection(&rq);
    if c.kind == RAY_QUERY_INTERSECTION_NONE {
        return false;
    }
    if intersect(r, rq_triangle(c), t_max) > 0.0 {
        return true;
    }
    return any_exact(r, t_max, mask);
}

// `trace_any` with every candidate decided by the exact test; stops at the first one it takes.
fn any_exact(r: RayPrep, t_max: f32, mask: u32) -> bool {
    var rq: ray_query;
    rayQueryInitialize(&rq, scene_as, rq_desc(r, t_max, mask, RAY_FLAG_FORCE_NO_OPAQUE));
    var blocked = false;
    while rayQueryProceed(&rq) {
        let tri = rq_triangle(rayQueryGetCandidateIntersection(&rq));
        if (tri.flags & mask) != 0u && intersect(r, tri, t_max) > 0.0 {
            blocked = true;
            rayQueryTerminate(&rq);
        }
    }
    return blocked;
}

// The closest triangle matching `mask` before `t_max`, improving on `best_in` (ties to the
// lower triangle id). Fast path: the hardware's closest hit (forced opaque), its distance,
// normal and id computed by the exact test; where the exact test refuses that triangle, the
// exact walk.
fn trace_closest(r: RayPrep, t_max: f32, mask: u32, best_in: HitRecord) -> HitRecord {
    if (mask & 0xffu) == 0u {
        return best_in;
    }
    var rq: ray_query;
    let window = min(best_in.t, t_max);
    rayQueryInitialize(&rq, scene_as, rq_desc(r, window, mask, RAY_FLAG_FORCE_OPAQUE));
    rayQueryProceed(&rq);
    let c = rayQueryGetCommittedIntersection(&rq);
    if c.kind == RAY_QUERY_INTERSECTION_NONE {
        return best_in;
    }
    let tri = rq_triangle(c);
    let d = intersect(r, tri, t_max);
    if d <= 0.0 {
        return closest_exact(r, t_max, mask, best_in);
    }
    if d < best_in.t || (d == best_in.t && tri.id < best_in.triangle) {
        return hit_record(r, tri, d);
    }
    return best_in;
}

// `trace_closest` with every candidate decided by the exact test. Each better candidate is
// committed, which shortens the hardware's window to it.
fn closest_exact(r: RayPrep, t_max: f32, mask: u32, best_in: HitRecord) -> HitRecord {
    var best = best_in;
    var rq: ray_query;
    let window = min(best.t, t_max);
    rayQueryInitialize(&rq, scene_as, rq_desc(r, window, mask, RAY_FLAG_FORCE_NO_OPAQUE));
    while rayQueryProceed(&rq) {
        let tri = rq_triangle(rayQueryGetCandidateIntersection(&rq));
        if (tri.flags & mask) == 0u {
            continue;
        }
        let d = intersect(r, tri, t_max);
        if d > 0.0 && (d < best.t || (d == best.t && tri.id < best.triangle)) {
            best = hit_record(r, tri, d);
            rayQueryConfirmIntersection(&rq);
        }
    }
    return best;
}
