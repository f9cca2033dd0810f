//! The shadow-volume pass's pipelines (prime, volume, flag, resolve; reduce) and their layouts,
//! built once per device.

use super::gpu::{Tile, EXPOSED, FORMAT};
use std::num::NonZeroU64;

/// The five pipelines and two layouts.
pub(super) struct Kit {
    pub render_layout: wgpu::BindGroupLayout,
    pub prime: wgpu::RenderPipeline,
    pub volume: wgpu::RenderPipeline,
    pub flag: wgpu::RenderPipeline,
    pub resolve: wgpu::RenderPipeline,
    pub reduce_layout: wgpu::BindGroupLayout,
    pub reduce: wgpu::ComputePipeline,
}

/// What differs between the three render pipelines.
struct Stage {
    label: &'static str,
    vertex: &'static str,
    fragment: &'static str,
    /// The channels of the `exposed` colour target the stage writes.
    writes: wgpu::ColorWrites,
    compare: wgpu::CompareFunction,
    write: bool,
    stencil: wgpu::StencilState,
}

impl Kit {
    pub fn new(device: &wgpu::Device) -> Kit {
        let render_layout = render_layout(device);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("shadow_volumes"),
            source: wgpu::ShaderSource::Wgsl(
                include_str!("../../../shaders/shadow_volumes.wgsl").into(),
            ),
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("shadow volumes"),
            bind_group_layouts: &[Some(&render_layout)],
            immediate_size: 0,
        });
        let [prime, volume, flag, resolve] =
            stages().map(|s| render_pipeline(device, &module, &layout, s));
        let (reduce_layout, reduce) = reduce_pipeline(device);
        Kit {
            render_layout,
            prime,
            volume,
            flag,
            resolve,
            reduce_layout,
            reduce,
        }
    }
}

/// The render stages: prime, volume, flag, resolve.
fn stages() -> [Stage; 4] {
    use wgpu::CompareFunction::{Always, Equal, Less};
    use wgpu::StencilOperation::{DecrementWrap, IncrementWrap, Keep};
    let prime = Stage {
        label: "shadow prime",
        vertex: "shadow_volumes_tile",
        fragment: "shadow_volumes_prime",
        writes: wgpu::ColorWrites::empty(),
        compare: Always,
        write: true,
        stencil: Default::default(),
    };
    // Depth-fail: a volume face behind the sample point counts +1 or -1 by its facing.
    let face = |depth_fail_op| wgpu::StencilFaceState {
        compare: Always,
        fail_op: Keep,
        depth_fail_op,
        pass_op: Keep,
    };
    let volume = Stage {
        label: "shadow volumes",
        vertex: "shadow_volumes_volume",
        fragment: "shadow_volumes_count",
        writes: wgpu::ColorWrites::empty(),
        compare: Less,
        write: false,
        stencil: wgpu::StencilState {
            front: face(DecrementWrap),
            back: face(IncrementWrap),
            read_mask: 0xff,
            write_mask: 0xff,
        },
    };
    // The volumes again, untested: steep faces flag their pixels in alpha.
    let flag = Stage {
        label: "shadow flag",
        vertex: "shadow_volumes_volume",
        fragment: "shadow_volumes_flag",
        writes: wgpu::ColorWrites::ALPHA,
        compare: Always,
        write: false,
        stencil: Default::default(),
    };
    // Drawn where the stencil is still 0: the sample is lit.
    let lit = wgpu::StencilFaceState {
        compare: Equal,
        fail_op: Keep,
        depth_fail_op: Keep,
        pass_op: Keep,
    };
    let resolve = Stage {
        label: "shadow resolve",
        vertex: "shadow_volumes_tile",
        fragment: "shadow_volumes_resolve",
        writes: wgpu::ColorWrites::COLOR,
        compare: Always,
        write: false,
        stencil: wgpu::StencilState {
            front: lit,
            back: lit,
            read_mask: 0xff,
            write_mask: 0,
        },
    };
    [prime, volume, flag, resolve]
}

fn entry(
    binding: u32,
    visibility: wgpu::ShaderStages,
    ty: wgpu::BindingType,
) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility,
        ty,
        count: None,
    }
}

fn uniform(dynamic: bool, size: usize) -> wgpu::BindingType {
    wgpu::BindingType::Buffer {
        ty: wgpu::BufferBindingType::Uniform,
        has_dynamic_offset: dynamic,
        min_binding_size: NonZeroU64::new(size as u64),
    }
}

fn storage(read_only: bool) -> wgpu::BindingType {
    wgpu::BindingType::Buffer {
        ty: wgpu::BufferBindingType::Storage { read_only },
        has_dynamic_offset: false,
        min_binding_size: None,
    }
}

/// Frame (0), tile (1, dynamic), the two tiers' vertices (2, 3), casters (4), heights (5).
fn render_layout(device: &wgpu::Device) -> wgpu::BindGroupLayout {
    use wgpu::ShaderStages as S;
    let both = S::VERTEX | S::FRAGMENT;
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("shadow volumes"),
        entries: &[
            entry(0, both, uniform(false, size_of::<super::gpu::Frame>())),
            entry(1, both, uniform(true, size_of::<Tile>())),
            entry(2, S::VERTEX, storage(true)),
            entry(3, S::VERTEX, storage(true)),
            entry(4, S::VERTEX, storage(true)),
            entry(5, S::FRAGMENT, storage(true)),
        ],
    })
}

fn render_pipeline(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    layout: &wgpu::PipelineLayout,
    s: Stage,
) -> wgpu::RenderPipeline {
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some(s.label),
        layout: Some(layout),
        vertex: wgpu::VertexState {
            module,
            entry_point: Some(s.vertex),
            compilation_options: Default::default(),
            buffers: &[],
        },
        // Both faces: the stencil counts front and back faces apart.
        primitive: wgpu::PrimitiveState::default(),
        depth_stencil: Some(wgpu::DepthStencilState {
            format: FORMAT,
            depth_write_enabled: Some(s.write),
            depth_compare: Some(s.compare),
            stencil: s.stencil,
            bias: Default::default(),
        }),
        multisample: Default::default(),
        fragment: Some(wgpu::FragmentState {
            module,
            entry_point: Some(s.fragment),
            compilation_options: Default::default(),
            targets: &[Some(wgpu::ColorTargetState {
                format: EXPOSED,
                // The maximum over passes: a channel once set stays set (an OR).
                blend: Some(wgpu::BlendState {
                    color: wgpu::BlendComponent {
                        src_factor: wgpu::BlendFactor::One,
                        dst_factor: wgpu::BlendFactor::One,
                        operation: wgpu::BlendOperation::Max,
                    },
                    alpha: wgpu::BlendComponent {
                        src_factor: wgpu::BlendFactor::One,
                        dst_factor: wgpu::BlendFactor::One,
                        operation: wgpu::BlendOperation::Max,
                    },
                }),
                write_mask: s.writes,
            })],
        }),
        multiview_mask: None,
        cache: None,
    })
}

/// The reduction: params (0), heights (1), the exposed target (2), packed bits (3), counts (4).
fn reduce_pipeline(device: &wgpu::Device) -> (wgpu::BindGroupLayout, wgpu::ComputePipeline) {
    let c = wgpu::ShaderStages::COMPUTE;
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("shadow reduce"),
        entries: &[
            entry(0, c, uniform(false, size_of::<super::gpu::Reduce>())),
            entry(1, c, storage(true)),
            entry(
                2,
                c,
                wgpu::BindingType::Texture {
                    sample_type: wgpu::TextureSampleType::Float { filterable: false },
                    view_dimension: wgpu::TextureViewDimension::D2,
                    multisampled: false,
                },
            ),
            entry(3, c, storage(false)),
            entry(4, c, storage(false)),
        ],
    });
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("shadow_reduce"),
        source: wgpu::ShaderSource::Wgsl(
            include_str!("../../../shaders/shadow_reduce.wgsl").into(),
        ),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("shadow reduce"),
        layout: Some(
            &device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("shadow reduce"),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            }),
        ),
        module: &module,
        entry_point: Some("shadow_reduce"),
        compilation_options: Default::default(),
        cache: None,
    });
    (layout, pipeline)
}
