// Kernel `los_table`: line of sight between waypoint pairs, one "blocked" bit per pair, each
// thread deriving its pair from its index, so only the waypoints and a few words per row are
// uploaded (never a segment per pair). Dispatched once per scene chunk; a bit set by an earlier
// chunk is kept (atomicOr) and its pair is not traced again. Prepended with common.wgsl and a
// walk of the scene (bvh_walk.wgsl or ray_query.wgsl).
// CPU twin: the CPU path of `tables::los::trace_rows` (one `Segment::new(a + lift, b + lift)`
// per pair through `trace::cpu::occluded`); the Rust side is `src/tables/los_gpu.rs`.
//
// `los_input.data` holds the call's row offsets from 0 (`rows + 1` entries: pairs before each
// row of the call, counted from its first row's first pair), then the waypoints from
// `call.waypoints` (three words each: x, y, z). Thread t takes pair p = t + skip: row r is the
// last row of the call whose offset is at most p, waypoint i = first_row + r * row_step, and
// j = i + 1 + p - offsets[r].

// The head of the input buffer. Rust twin: `tables::los_gpu::LosCall`.
struct LosCall {
    // Pairs (threads) in this call.
    count: u32,
    // Pairs of the first row before the call's first pair.
    skip: u32,
    // Waypoint index of the call's first row, and the step between rows (the shard count).
    first_row: u32,
    row_step: u32,
    // Rows in the call.
    rows: u32,
    // Index in `data` of the first waypoint's x.
    waypoints: u32,
    // Eye height above each waypoint (metres).
    eye_height: f32,
    // Pairs whose squared distance exceeds this are not traced and count as blocked. The host
    // passes the squared range widened past any rounding difference and then applies the exact
    // test to the visible pairs itself; f32::MAX when there is no range.
    range2: f32,
}

struct LosInput {
    call: LosCall,
    data: array<u32>,
}

@group(0) @binding(3) var<storage, read> los_input: LosInput;
@group(0) @binding(4) var<storage, read_write> blocked: array<atomic<u32>>;

fn los_waypoint(k: u32) -> vec3<f32> {
    let w = los_input.call.waypoints + 3u * k;
    return vec3<f32>(
        bitcast<f32>(los_input.data[w]),
        bitcast<f32>(los_input.data[w + 1u]),
        bitcast<f32>(los_input.data[w + 2u]),
    );
}

// The last row r < rows whose first pair is at or before pair p (offsets[0] is 0).
fn los_row(p: u32) -> u32 {
    var lo = 0u;
    var hi = los_input.call.rows;
    while hi - lo > 1u {
        let mid = (lo + hi) / 2u;
        if los_input.data[mid] <= p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

@compute @workgroup_size(64)
fn los_table(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    // A 2D grid when the call has more workgroups than one dimension takes.
    let t = gid.y * groups.x * 64u + gid.x;
    if t >= los_input.call.count {
        return;
    }
    let word = t / 32u;
    let bit = 1u << (t % 32u);
    if (atomicLoad(&blocked[word]) & bit) != 0u {
        return;
    }
    let p = t + los_input.call.skip;
    let r = los_row(p);
    let i = los_input.call.first_row + r * los_input.call.row_step;
    let j = i + 1u + (p - los_input.data[r]);
    let a = los_waypoint(i);
    let b = los_waypoint(j);
    let d = a - b;
    if dot(d, d) > los_input.call.range2 {
        atomicOr(&blocked[word], bit);
        return;
    }
    // Exactly the CPU's segment: Segment::new(a + lift, b + lift), traced as `occluded` does.
    let lift = vec3<f32>(0.0, los_input.call.eye_height, 0.0);
    let start = a + lift;
    let end = b + lift;
    let ray = ray_prep(start, end - start);
    if trace_any(ray, 1.0, params.mask) {
        atomicOr(&blocked[word], bit);
    }
}
