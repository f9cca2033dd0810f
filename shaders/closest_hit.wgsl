// Kernel `closest_hit`: the nearest blocking triangle per ray. Dispatched once per scene chunk;
// with `accumulate` set it starts from the record an earlier chunk wrote.
// CPU twin: `trace::cpu::closest_hit`. Prepended with common.wgsl and a walk of the scene
// (bvh_walk.wgsl or ray_query.wgsl).

@group(0) @binding(3) var<storage, read> rays: array<Ray>;
@group(0) @binding(4) var<storage, read_write> hits: array<HitRecord>;

@compute @workgroup_size(64)
fn closest_hit(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.count {
        return;
    }
    var best = miss();
    if params.accumulate != 0u {
        best = hits[i];
    }
    let ray = rays[i];
    let r = ray_prep(ray.origin, ray.dir);
    hits[i] = trace_closest(r, ray.t_max, params.mask, best);
}
