// Kernel `occluded`: one bit per segment, set when a blocking triangle lies strictly between
// its ends. Dispatched once per scene chunk; a bit set by an earlier chunk is kept (atomicOr).
// CPU twin: `trace::cpu::occluded`. Prepended with common.wgsl and a walk of the scene
// (bvh_walk.wgsl or ray_query.wgsl).

@group(0) @binding(3) var<storage, read> segments: array<Segment>;
@group(0) @binding(4) var<storage, read_write> bits: array<atomic<u32>>;

@compute @workgroup_size(64)
fn occluded(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.count {
        return;
    }
    let word = i / 32u;
    let bit = 1u << (i % 32u);
    if params.accumulate != 0u && (atomicLoad(&bits[word]) & bit) != 0u {
        return;
    }
    let s = segments[i];
    let r = ray_prep(s.start, s.end - s.start);
    if trace_any(r, 1.0, params.mask) {
        atomicOr(&bits[word], bit);
    }
}
