//! The GPU path of the line-of-sight table: kernel `los_table` (`shaders/los_table.wgsl`).
//!
//! The waypoints are uploaded once per table; each call then uploads a 32-byte head and one
//! word per row it covers, and every thread derives its pair from its index, so the bytes
//! uploaded grow with the waypoints, never with the pairs. A call covers up to
//! [`LosParams::pairs_per_gpu_call`] consecutive pairs of the table (at most
//! [`PAIRS_PER_CALL`]) and costs one submission (a clear, one dispatch per scene chunk over the
//! tracer's bind-group layout, a copy) and one wait; only its bits are read back and merged
//! into the table's words at the call's first bit, which need not be word-aligned. The
//! buffers are made once per table and reused by all its calls. Counted under `los_table`.
//!
//! Range: the kernel skips pairs whose squared distance, as the GPU rounds it (it may fuse the
//! sum of squares), exceeds the squared range widened by [`RANGE_SLACK`]; the host then clears
//! every visible pair that glam's `distance_squared` puts beyond the range. Every pair the CPU
//! keeps is traced, so the table holds the CPU's decision exactly.

use super::bits::{for_each_set_bit, or_bits};
use super::los::{LosParams, LosTable};
use crate::gpu::{kernel_source_for, map_read_ranges, submit_checked, GpuTracer, Params};
use crate::{Error, Result, Scene};
use glam::Vec3;

const OP: &str = "los_table";

/// Most pairs one call traces (one bit each on the GPU: 8 MB).
pub(crate) const PAIRS_PER_CALL: usize = 1 << 26;

/// Relative widening of the squared range the kernel tests (see the module docs): far above
/// the few ulps by which fused and unfused sums of three squares differ.
const RANGE_SLACK: f32 = 1.0 / 65536.0;

const WORKGROUP: u32 = 64;

/// The head of the kernel's input buffer, one per call. Mirrors `struct LosCall` in
/// `shaders/los_table.wgsl` (field docs there).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LosCall {
    pub count: u32,
    pub skip: u32,
    pub first_row: u32,
    pub row_step: u32,
    pub rows: u32,
    pub waypoints: u32,
    pub eye_height: f32,
    pub range2: f32,
}
const HEAD: u64 = 32;
const _: () = assert!(size_of::<LosCall>() == HEAD as usize);
const _: () = assert!(std::mem::offset_of!(LosCall, range2) == 28);

/// The `los_table` pipeline, built once per tracer over its bind-group layout and on its walk
/// (the compute BVH walk or ray queries).
struct Kit {
    pipeline: std::result::Result<wgpu::ComputePipeline, String>,
}

impl Kit {
    fn new(device: &wgpu::Device, layout: &wgpu::BindGroupLayout, ray_query: bool) -> Kit {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(OP),
            bind_group_layouts: &[Some(layout)],
            immediate_size: 0,
        });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(OP),
            source: wgpu::ShaderSource::Wgsl(kernel_source_for(OP, ray_query).into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(OP),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some(OP),
            compilation_options: Default::default(),
            cache: None,
        });
        let pipeline = match pollster::block_on(scope.pop()) {
            Some(e) => Err(format!("building the los_table kernel failed: {e}")),
            None => Ok(pipeline),
        };
        Kit { pipeline }
    }
}

/// Sizes of one table's GPU work.
struct Plan {
    /// Pairs per call (the last call may have fewer).
    per_call: u32,
    /// Words reserved for row offsets at the start of the input's data; the waypoints follow.
    offsets: u32,
    input_bytes: u64,
    output_bytes: u64,
}

impl Plan {
    /// `None` when the input does not fit one storage binding.
    fn new(tracer: &GpuTracer, table: &LosTable, params: &LosParams) -> Option<Plan> {
        let (n, (k, m)) = (table.n(), table.shard());
        let rows = if k < n { (n - k).div_ceil(m) } else { 0 };
        let offsets = rows + 1;
        let input_bytes = HEAD + 4 * (u64::from(offsets) + 3 * u64::from(n));
        if input_bytes > tracer.max_binding() {
            return None;
        }
        // Whole words of output bits in one binding; two dispatch dimensions of workgroups.
        let per_binding = tracer.max_binding() / 4 * 32;
        let max_dim = u64::from(
            tracer
                .device()
                .limits()
                .max_compute_workgroups_per_dimension,
        );
        let per_grid = max_dim * max_dim * u64::from(WORKGROUP);
        let per_call = (params.pairs_per_gpu_call.clamp(1, PAIRS_PER_CALL) as u64)
            .min(per_binding)
            .min(per_grid)
            .min(table.bit_count().max(1)) as u32;
        Some(Plan {
            per_call,
            offsets,
            input_bytes,
            output_bytes: u64::from(per_call.div_ceil(32)) * 4,
        })
    }
}

/// One call: `head.count` consecutive pairs of the table from bit `first_bit`, with the row
/// offsets the kernel searches (`head.rows + 1` entries).
struct Call {
    first_bit: u64,
    head: LosCall,
    offsets: Vec<u32>,
}

/// Cuts a shard's rows into calls of at most `limit` pairs, in table order.
struct Calls {
    n: u32,
    step: u32,
    /// The next pair to plan: `done` pairs into row `row`.
    row: u32,
    done: u32,
    limit: u32,
}

impl Calls {
    fn new(table: &LosTable, limit: u32) -> Calls {
        let (k, m) = table.shard();
        Calls {
            n: table.n(),
            step: m,
            row: k,
            done: 0,
            limit,
        }
    }

    fn row_len(&self) -> u32 {
        self.n - 1 - self.row
    }

    /// The next call, `base` filled in with its rows; `None` when every pair is planned.
    fn next_call(&mut self, table: &LosTable, base: LosCall) -> Option<Call> {
        while self.row < self.n && self.done == self.row_len() {
            self.row += self.step;
            self.done = 0;
        }
        if self.row >= self.n {
            return None;
        }
        let (first_row, skip) = (self.row, self.done);
        let first_bit = table.row_bits(first_row).0 + u64::from(skip);
        let (mut offsets, mut count) = (vec![0u32], 0u32);
        while self.row < self.n && count < self.limit {
            let len = self.row_len();
            let take = (len - self.done).min(self.limit - count);
            count += take;
            offsets.push(offsets[offsets.len() - 1] + len);
            self.done += take;
            if self.done == len {
                self.row += self.step;
                self.done = 0;
            }
        }
        let head = LosCall {
            count,
            skip,
            first_row,
            rows: offsets.len() as u32 - 1,
            ..base
        };
        Some(Call {
            first_bit,
            head,
            offsets,
        })
    }
}

/// The buffers of one table, reused by all its calls.
struct Resources {
    /// The head and row offsets (rewritten per call), then the waypoints (written once).
    input: wgpu::Buffer,
    /// One "blocked" bit per pair of a call.
    output: wgpu::Buffer,
    readback: wgpu::Buffer,
    /// One per scene chunk (they also hold the `Params` buffer).
    bind_groups: Vec<wgpu::BindGroup>,
}

impl Resources {
    fn new(
        tracer: &GpuTracer,
        scene: &Scene,
        plan: &Plan,
        waypoints: &[Vec3],
        params: &LosParams,
    ) -> Resources {
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let buffer = |label, size, usage| {
            let desc = wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            };
            tracer.create_buffer(OP, &desc)
        };
        let input = buffer("los_table input", plan.input_bytes, storage);
        let output = buffer(
            "los_table bits",
            plan.output_bytes,
            storage | wgpu::BufferUsages::COPY_SRC,
        );
        let readback = buffer(
            "los_table readback",
            plan.output_bytes,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        let uniform = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
        let params_buffer = buffer("los_table params", size_of::<Params>() as u64, uniform);
        // The kernel reads `mask` only (the call's count is in the head).
        let block = Params {
            count: 0,
            mask: params.mask.bits(),
            accumulate: 1,
            stamp: 0,
        };
        tracer.write_buffer(OP, &params_buffer, 0, bytemuck::bytes_of(&block));
        let coords: Vec<f32> = waypoints.iter().flat_map(|p| p.to_array()).collect();
        let at = HEAD + 4 * u64::from(plan.offsets);
        tracer.write_buffer(OP, &input, at, bytemuck::cast_slice(&coords));
        let bind_groups = tracer.bind_scene(scene, &params_buffer, &input, &output);
        Resources {
            input,
            output,
            readback,
            bind_groups,
        }
    }
}

/// Workgroups `(x, y)` covering `count` threads: one row while it fits the device's limit per
/// dimension, else rows of `max_dim` workgroups (the kernel's index is `y * x * 64 + x`).
fn grid(count: u32, max_dim: u32) -> (u32, u32) {
    let groups = count.div_ceil(WORKGROUP);
    if groups <= max_dim {
        (groups, 1)
    } else {
        (max_dim, groups.div_ceil(max_dim))
    }
}

/// Traces `table`'s rows on the GPU (see the module docs), calling `progress` after each call.
/// `Ok(false)`, with nothing done, when the scene has no triangles or the waypoints do not fit
/// one storage binding: the caller then traces segments.
pub(crate) fn trace_rows(
    tracer: &GpuTracer,
    scene: &Scene,
    waypoints: &[Vec3],
    params: &LosParams,
    range: Option<f32>,
    table: &mut LosTable,
    progress: &mut impl FnMut(u64, u64),
) -> Result<bool> {
    let total = table.bit_count();
    if total == 0 || scene.tiers().iter().all(|t| t.triangles.is_empty()) {
        return Ok(false); // nothing to trace: the segment path answers without the GPU
    }
    let Some(plan) = Plan::new(tracer, table, params) else {
        log::info!(
            "{} waypoints do not fit one storage binding of {} bytes: tracing the \
             line-of-sight table as segments",
            table.n(),
            tracer.max_binding()
        );
        return Ok(false);
    };
    tracer.check_lost()?;
    let kit =
        tracer.cached(|device| Kit::new(device, tracer.trace_layout(), tracer.uses_ray_query()));
    let pipeline = kit.pipeline.as_ref().map_err(|e| Error::Gpu(e.clone()))?;
    let oom = tracer
        .device()
        .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let res = Resources::new(tracer, scene, &plan, waypoints, params);
    if let Some(e) = pollster::block_on(oom.pop()) {
        return Err(Error::Gpu(format!(
            "out of GPU memory for the line-of-sight table: {e}; lower \
             LosParams::pairs_per_gpu_call, or use fewer waypoints"
        )));
    }
    let base = LosCall {
        row_step: table.shard().1,
        waypoints: plan.offsets,
        eye_height: params.eye_height,
        range2: range.map_or(f32::MAX, |r| (r * r * (1.0 + RANGE_SLACK)).min(f32::MAX)),
        ..LosCall::default()
    };
    let mut calls = Calls::new(table, plan.per_call);
    while let Some(call) = calls.next_call(table, base) {
        run_call(tracer, pipeline, &res, &call, table.bits_mut())?;
        progress(call.first_bit + u64::from(call.head.count), total);
    }
    if let Some(r) = range {
        drop_out_of_range(table, waypoints, r * r);
    }
    Ok(true)
}

/// One call: writes its head and row offsets, submits the clear, the dispatches over every
/// scene chunk and the copy, waits for the bits and ORs its visible pairs into `bits`.
fn run_call(
    tracer: &GpuTracer,
    pipeline: &wgpu::ComputePipeline,
    res: &Resources,
    call: &Call,
    bits: &mut [u64],
) -> Result<()> {
    let mut head = bytemuck::bytes_of(&call.head).to_vec();
    head.extend_from_slice(bytemuck::cast_slice(&call.offsets));
    tracer.write_buffer(OP, &res.input, 0, &head);
    let count = call.head.count;
    let bytes = u64::from(count.div_ceil(32)) * 4;
    let max_dim = tracer
        .device()
        .limits()
        .max_compute_workgroups_per_dimension;
    let (x, y) = grid(count, max_dim);
    submit_checked(
        tracer,
        OP,
        "the line-of-sight table",
        "lower LosParams::pairs_per_gpu_call",
        |encoder| {
            encoder.clear_buffer(&res.output, 0, Some(bytes));
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(OP),
                    timestamp_writes: None,
                });
                pass.set_pipeline(pipeline);
                for bg in &res.bind_groups {
                    pass.set_bind_group(0, bg, &[]);
                    pass.dispatch_workgroups(x, y, 1);
                }
            }
            encoder.copy_buffer_to_buffer(&res.output, 0, &res.readback, 0, bytes);
        },
    )?;
    let readback = [(&res.readback, bytes)];
    map_read_ranges(tracer, OP, readback, None, "the line-of-sight bits")?;
    let merged = res
        .readback
        .get_mapped_range(..bytes)
        .map(|view| merge(bits, call.first_bit, count, bytemuck::cast_slice(&view)))
        .map_err(|e| Error::Gpu(e.to_string()));
    res.readback.unmap();
    merged
}

/// ORs the visible pairs of a call (`count` "blocked" bits, least significant first) into the
/// table's words from bit `first_bit`.
fn merge(bits: &mut [u64], first_bit: u64, count: u32, blocked: &[u32]) {
    let mut done = 0u32;
    for pair in blocked.chunks(2) {
        let word = u64::from(pair[0]) | pair.get(1).map_or(0, |&w| u64::from(w) << 32);
        let len = (count - done).min(64);
        let mask = if len == 64 { u64::MAX } else { (1 << len) - 1 };
        let visible = !word & mask;
        if visible != 0 {
            or_bits(bits, first_bit + u64::from(done), len, visible);
        }
        done += len;
    }
}

/// Clears the visible pairs that glam's `distance_squared` puts beyond `r2`: the kernel
/// traced them only because its own rounding of the distance could not rule them out.
fn drop_out_of_range(table: &mut LosTable, waypoints: &[Vec3], r2: f32) {
    let mut far = Vec::new();
    for i in (0..table.n()).filter(|&i| table.holds_row(i)) {
        let (start, len) = table.row_bits(i);
        let a = waypoints[i as usize];
        for_each_set_bit(table.bits(), start, len, |d| {
            let j = i + 1 + d as u32;
            if a.distance_squared(waypoints[j as usize]) > r2 {
                far.push((i, j));
            }
        });
    }
    for (i, j) in far {
        table.set_pair(i, j, false);
    }
}
