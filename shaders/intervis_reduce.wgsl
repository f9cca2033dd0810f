// Intervis reduction (Darken, McCue and Guerrero): one workgroup per tile of a batch fill
// reduces the target's padded box in the atlas to an IntervisRecord.
// Self-contained (no common.wgsl). Rust twins: `intervis::IntervisRecord`,
// `intervis::measure::gpu::Tile`; the CPU twin of the reduction is
// `intervis::measure::Sums` (same fields, same `finish`).
//
// Per pixel of the box: stencil >= 127 is exposed (adds its brightness, the target's, and
// its solid angle `f / (f^2 + x^2 + y^2)^(3/2)`, `x, y` the pixel centre's offset from its
// view's centre); otherwise background (adds its brightness, the scene's) and, when the
// stencil is not 0, also occluded. Each invocation sums a strided share
// into workgroup memory; after one barrier invocation 0 adds the shares in order and writes
// the record. Sums are f32 and their order is fixed, so a record is deterministic on a given
// device.

struct Tile {
    view_proj: mat4x4<f32>,
    model: mat4x4<f32>,
    eye: vec4<f32>,
    rect: vec4<u32>,
    view_pixel: vec4<u32>,
}

struct IntervisRecord {
    exposed: u32,
    occluded: u32,
    background: u32,
    box_pixels: u32,
    target_brightness: f32,
    background_brightness: f32,
    contrast: f32,
    occlusion: f32,
    solid_angle: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// The fill's tiles and records (dynamic offsets): workgroup w reduces tile w.
@group(0) @binding(1) var<storage, read> tiles: array<Tile>;
@group(0) @binding(2) var stencil: texture_2d<u32>;
@group(0) @binding(3) var brightness: texture_2d<f32>;
@group(0) @binding(4) var<storage, read_write> records: array<IntervisRecord>;

const WORKGROUP: u32 = 16u;

// x: exposed, y: occluded, z: background.
var<workgroup> counts: array<vec3<u32>, 16>;
// x: target brightness, y: background brightness, z: solid angle.
var<workgroup> sums: array<vec3<f32>, 16>;

// `px`: the pixel of a view of `resolution` pixels and focal length `focal`.
fn pixel_solid_angle(px: vec2<u32>, focal: f32, resolution: u32) -> f32 {
    let c = f32(resolution) * 0.5;
    let d = vec2<f32>(px) + 0.5 - c;
    let r2 = focal * focal + dot(d, d);
    return focal / (r2 * sqrt(r2));
}

fn finish(c: vec3<u32>, s: vec3<f32>, box_pixels: u32) -> IntervisRecord {
    var r: IntervisRecord;
    r.exposed = c.x;
    r.occluded = c.y;
    r.background = c.z;
    r.box_pixels = box_pixels;
    r.target_brightness = select(0.0, s.x / f32(c.x), c.x > 0u);
    r.background_brightness = select(0.0, s.y / f32(c.z), c.z > 0u);
    let bt = r.target_brightness;
    let bb = r.background_brightness;
    r.contrast = select(0.0, abs(bt - bb) / bb, c.x > 0u && bb > 0.0);
    let seen = c.x + c.y;
    r.occlusion = select(1.0, f32(c.y) / f32(seen), seen > 0u);
    r.solid_angle = s.z;
    return r;
}

@compute @workgroup_size(16)
fn intervis_reduce(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = tiles[wg.x];
    let width = t.rect.z - t.rect.x;
    let n = width * (t.rect.w - t.rect.y);
    var c = vec3<u32>(0u);
    var s = vec3<f32>(0.0);
    for (var k = lid; k < n; k += WORKGROUP) {
        let d = vec2<u32>(k % width, k / width);
        let px = t.rect.xy + d;
        let st = textureLoad(stencil, px, 0).r;
        let b = textureLoad(brightness, px, 0).r;
        if st >= 127u {
            c.x += 1u;
            s.x += b;
            s.z += pixel_solid_angle(t.view_pixel.xy + d, t.eye.w, t.view_pixel.z);
        } else {
            if st > 0u {
                c.y += 1u;
            }
            c.z += 1u;
            s.y += b;
        }
    }
    counts[lid] = c;
    sums[lid] = s;
    // One barrier, then invocation 0 adds the partial sums in order (a tree would take four
    // barriers, and barriers are what a CPU implementation pays for; 16 invocations a box
    // measured faster than 64 on lavapipe, boxes being a few hundred pixels).
    workgroupBarrier();
    if lid == 0u {
        for (var k = 1u; k < WORKGROUP; k++) {
            c += counts[k];
            s += sums[k];
        }
        records[wg.x] = finish(c, s, n);
    }
}
