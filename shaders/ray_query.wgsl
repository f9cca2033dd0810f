// The hardware walk of the scene: wgpu ray queries over an acceleration structure at binding 0
// (`enable wgpu_ray_query;` goes in front of common.wgsl). Defines `trace_any` and
// `trace_closest` as bvh_walk.wgsl does, with the same answers under the agreement contract.
// Rust side: src/gpu/ray_query.rs.
//
// A scene chunk's top-level structure holds one instance per class of material flags, its mask
// the class's flags, so the ray's cull mask (the query's mask) skips every class that cannot
// block. The geometry is not opaque: the hardware only proposes candidate triangles, and each is
// decided by common.wgsl's watertight `intersect` with the strict ends (0 < t < t_max) the
// compute walk and the CPU twin use. So a segment that ends on a face is not blocked by it
// here either, and a hit's distance, normal and id are computed as the compute walk computes
// them. `tri_index[instance_custom_data + primitive_index]` is a candidate's index in
// `triangles` (the chunk's triangles in BVH leaf order, shared with the compute walk).

@group(0) @binding(0) var scene_as: acceleration_structure;
@group(0) @binding(5) var<storage, read> tri_index: array<u32>;

// The hardware's window is [0, t_max] widened by this factor, so that its own rounding never
// drops a candidate the exact test accepts; the exact test cuts at t_max.
const RQ_WINDOW: f32 = 1.0001;

fn rq_desc(r: RayPrep, t_max: f32, mask: u32) -> RayDesc {
    let window = min(t_max, INF / RQ_WINDOW) * RQ_WINDOW;
    return RayDesc(RAY_FLAG_FORCE_NO_OPAQUE, mask & 0xffu, 0.0, window, r.org, r.dir);
}

// A candidate's triangle. (naga's SPIR-V writer cannot pass a ray query to a function, so the
// walks read the candidate themselves.)
fn rq_triangle(c: RayIntersection) -> Triangle {
    return triangles[tri_index[c.instance_custom_data + c.primitive_index]];
}

// Whether a triangle matching `mask` lies strictly between t = 0 and `t_max` along `r`; stops
// at the first one.
fn trace_any(r: RayPrep, t_max: f32, mask: u32) -> bool {
    if (mask & 0xffu) == 0u {
        return false;
    }
    var rq: ray_query;
    rayQueryInitialize(&rq, scene_as, rq_desc(r, t_max, mask));
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
// lower triangle id). Each better candidate is committed, which shortens the hardware's
// window to it.
fn trace_closest(r: RayPrep, t_max: f32, mask: u32, best_in: HitRecord) -> HitRecord {
    var best = best_in;
    if (mask & 0xffu) == 0u {
        return best;
    }
    var rq: ray_query;
    rayQueryInitialize(&rq, scene_as, rq_desc(r, min(best.t, t_max), mask));
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
