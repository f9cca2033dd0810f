// Cover bits per cell from the shadow-volume passes (shadow_volumes.wgsl): a posture is in
// cover where it was asked for and no pass found its sample points lit (its channel of the
// `exposed` target is still 0); bit 3 flags a cell under a steep volume face. Eight cells a word, four
// bits each; the count of cells in cover per posture summed in `stats`.

struct Reduce {
    cells: u32,
    postures: u32,
    // Cells per side of the square grid.
    side: u32,
    pad: u32,
};

const NO_GROUND: f32 = 1.0e30;

@group(0) @binding(0) var<uniform> reduce: Reduce;
@group(0) @binding(1) var<storage, read> heights: array<f32>;
@group(0) @binding(2) var exposed: texture_2d<f32>;
@group(0) @binding(3) var<storage, read_write> bits: array<u32>;
@group(0) @binding(4) var<storage, read_write> stats: array<atomic<u32>, 4>;

@compute @workgroup_size(64)
fn shadow_reduce(@builtin(global_invocation_id) gid: vec3<u32>) {
    let first = gid.x * 8u;
    if first >= reduce.cells {
        return;
    }
    var packed = 0u;
    var counts = vec3<u32>(0u);
    for (var k = 0u; k < 8u && first + k < reduce.cells; k++) {
        let i = first + k;
        if heights[i] >= NO_GROUND {
            continue;
        }
        let texel = textureLoad(exposed, vec2<u32>(i % reduce.side, i / reduce.side), 0);
        let lit = texel.rgb > vec3(0.5);
        let seen = select(0u, 1u, lit.r) | select(0u, 2u, lit.g) | select(0u, 4u, lit.b);
        let b = reduce.postures & ~seen;
        // Bit 3: a steep volume face lay over the cell; the caller ray-casts it.
        packed |= select(0u, 8u, texel.a > 0.5) << (4u * k);
        packed |= b << (4u * k);
        counts += vec3<u32>(b & 1u, (b >> 1u) & 1u, (b >> 2u) & 1u);
    }
    bits[gid.x] = packed;
    for (var p = 0u; p < 3u; p++) {
        if counts[p] != 0u {
            atomicAdd(&stats[p], counts[p]);
        }
    }
}
