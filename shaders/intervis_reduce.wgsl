// Intervis reduction (Darken, McCue and Guerrero): one workgroup per target reduces the target's padded box of
// its stencil layer to an IntervisRecord. Self-contained (no common.wgsl). Rust twins:
// `intervis::IntervisRecord`, `intervis::measure::gpu::{Light, Job, Batch}`; the CPU twin of
// the reduction is `intervis::measure::Sums` (same fields, same `finish`).
//
// Per pixel of the box: stencil >= 127 is exposed (adds its target brightness and its solid
// angle `f / (f^2 + x^2 + y^2)^(3/2)`); otherwise background (adds the scene brightness) and,
// when the stencil is not 0, also occluded. Each invocation sums a strided share, then a tree
// reduction in workgroup memory (an associative combine of counts and sums, identity zero),
// and invocation 0 writes the record. Sums are f32 and their order is fixed, so a record is
// deterministic.

struct Light {
    sun: vec4<f32>,
    sky: f32,
    focal: f32,
    resolution: u32,
    _pad: u32,
}

// One target: its box [x0, x1) x [y0, y1), its record slot and its stencil layer.
struct Job {
    x0: u32,
    y0: u32,
    x1: u32,
    y1: u32,
    record: u32,
    layer: u32,
    _pad0: u32,
    _pad1: u32,
}

// The dispatch's first job (workgroup w reduces job first + w).
struct Batch {
    first: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
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

@group(0) @binding(0) var<uniform> light: Light;
@group(0) @binding(1) var<uniform> batch: Batch;
@group(0) @binding(2) var<storage, read> jobs: array<Job>;
@group(0) @binding(3) var stencil: texture_2d_array<u32>;
@group(0) @binding(4) var target_brightness: texture_2d_array<f32>;
@group(0) @binding(5) var scene_brightness: texture_2d<f32>;
@group(0) @binding(6) var<storage, read_write> records: array<IntervisRecord>;

const WORKGROUP: u32 = 256u;

// x: exposed, y: occluded, z: background.
var<workgroup> counts: array<vec3<u32>, 256>;
// x: target brightness, y: background brightness, z: solid angle.
var<workgroup> sums: array<vec3<f32>, 256>;

fn pixel_solid_angle(px: vec2<u32>) -> f32 {
    let c = f32(light.resolution) * 0.5;
    let d = vec2<f32>(px) + 0.5 - c;
    let r2 = light.focal * light.focal + dot(d, d);
    return light.focal / (r2 * sqrt(r2));
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

@compute @workgroup_size(256)
fn intervis_reduce(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let job = jobs[batch.first + wg.x];
    let width = job.x1 - job.x0;
    let n = width * (job.y1 - job.y0);
    var c = vec3<u32>(0u);
    var s = vec3<f32>(0.0);
    for (var k = lid; k < n; k += WORKGROUP) {
        let px = vec2<u32>(job.x0 + k % width, job.y0 + k / width);
        let st = textureLoad(stencil, px, job.layer, 0).r;
        if st >= 127u {
            c.x += 1u;
            s.x += textureLoad(target_brightness, px, job.layer, 0).r;
            s.z += pixel_solid_angle(px);
        } else {
            if st > 0u {
                c.y += 1u;
            }
            c.z += 1u;
            s.y += textureLoad(scene_brightness, px, 0).r;
        }
    }
    counts[lid] = c;
    sums[lid] = s;
    workgroupBarrier();
    for (var stride = WORKGROUP / 2u; stride > 0u; stride >>= 1u) {
        if lid < stride {
            counts[lid] += counts[lid + stride];
            sums[lid] += sums[lid + stride];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        records[job.record] = finish(counts[0], sums[0], n);
    }
}
