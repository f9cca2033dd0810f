// Kernel `occluded`: one bit per segment, set when a blocking triangle lies strictly between
// its ends. Dispatched once per scene chunk; a bit set by an earlier chunk is kept (atomicOr).
// CPU twin: `trace::cpu::occluded`. Prepended with common.wgsl and a walk of the scene
// (bvh_walk.wgsl or ray_query.wgsl).
//
// Staged segments (`Segment::stage` non-zero) belong to runs of consecutive segments. In the
// last chunk's dispatch (`accumulate` 2; earlier chunks trace them plain), a staged segment
// whose run already has an unblocked segment at its stage or an earlier one leaves its bit
// clear without tracing: which stage of a run first holds an unblocked segment is the same as
// if every segment were traced. Per run, four flag bits (one per stage found unblocked)
// follow the answer bits, at the run's first segment.

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
    let staged = params.accumulate == 2u && (s.stage & 3u) != 0u;
    let stage = (s.stage & 3u) - 1u;
    // A run that began in an earlier slice of the batch restarts at this slice's first.
    let first = i - min(s.stage >> 2u, i);
    let flag_word = (params.count + 31u) / 32u + first / 8u;
    let flag_shift = (first % 8u) * 4u;
    if staged && ((atomicLoad(&bits[flag_word]) >> flag_shift) & ((2u << stage) - 1u)) != 0u {
        return;
    }
    let r = ray_prep(s.start, s.end - s.start);
    if trace_any(r, 1.0, params.mask) {
        atomicOr(&bits[word], bit);
    } else if staged {
        atomicOr(&bits[flag_word], (1u << stage) << flag_shift);
    }
}
