//! The cover field's two pipelines (depth-view render, classify compute) and buffer helpers.

use super::gpu::{COLOR, DEPTH};
use std::num::NonZeroU64;

/// The two pipelines and their layouts.
pub(super) struct Kit {
    pub render_layout: wgpu::BindGroupLayout,
    pub render: wgpu::RenderPipeline,
    pub classify_layout: wgpu::BindGroupLayout,
    pub classify: wgpu::ComputePipeline,
}

impl Kit {
    pub fn new(device: &wgpu::Device) -> Kit {
        let (render_layout, render) = depth_map(device);
        let (classify_layout, classify) = classify(device);
        Kit {
            render_layout,
            render,
            classify_layout,
            classify,
        }
    }
}

/// A WGSL shader module.
fn shader(device: &wgpu::Device, label: &str, source: &str) -> wgpu::ShaderModule {
    device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    })
}

/// The depth-view render pipeline and its bind group layout (one dynamic uniform per view).
fn depth_map(device: &wgpu::Device) -> (wgpu::BindGroupLayout, wgpu::RenderPipeline) {
    let render_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("depth map"),
        entries: &[wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: true,
                min_binding_size: NonZeroU64::new(80),
            },
            count: None,
        }],
    });
    let depth_map = shader(
        device,
        "depth_map",
        include_str!("../../../shaders/depth_map.wgsl"),
    );
    let render = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some("depth map"),
        layout: Some(
            &device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("depth map"),
                bind_group_layouts: &[Some(&render_layout)],
                immediate_size: 0,
            }),
        ),
        vertex: wgpu::VertexState {
            module: &depth_map,
            entry_point: Some("depth_map_vertex"),
            compilation_options: Default::default(),
            buffers: &[Some(wgpu::VertexBufferLayout {
                array_stride: 12,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &wgpu::vertex_attr_array![0 => Float32x3],
            })],
        },
        // Both faces: ray casting counts single-sided walls and ground from either side.
        primitive: wgpu::PrimitiveState::default(),
        depth_stencil: Some(wgpu::DepthStencilState {
            format: DEPTH,
            depth_write_enabled: Some(true),
            depth_compare: Some(wgpu::CompareFunction::Greater),
            stencil: Default::default(),
            bias: Default::default(),
        }),
        multisample: Default::default(),
        fragment: Some(wgpu::FragmentState {
            module: &depth_map,
            entry_point: Some("depth_map_fragment"),
            compilation_options: Default::default(),
            targets: &[Some(wgpu::ColorTargetState {
                format: COLOR,
                blend: None,
                write_mask: wgpu::ColorWrites::RED,
            })],
        }),
        multiview_mask: None,
        cache: None,
    });
    (render_layout, render)
}

/// The classify compute pipeline and its bind group layout.
fn classify(device: &wgpu::Device) -> (wgpu::BindGroupLayout, wgpu::ComputePipeline) {
    let storage = crate::gpu::storage_entry;
    let classify_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("cover field"),
        entries: &[
            wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            },
            storage(1, true),
            storage(2, true),
            wgpu::BindGroupLayoutEntry {
                binding: 3,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Texture {
                    sample_type: wgpu::TextureSampleType::Float { filterable: false },
                    view_dimension: wgpu::TextureViewDimension::D2Array,
                    multisampled: false,
                },
                count: None,
            },
            storage(4, false),
        ],
    });
    let cover_field = shader(
        device,
        "cover_field",
        include_str!("../../../shaders/cover_field.wgsl"),
    );
    let classify = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("cover field"),
        layout: Some(
            &device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("cover field"),
                bind_group_layouts: &[Some(&classify_layout)],
                immediate_size: 0,
            }),
        ),
        module: &cover_field,
        entry_point: Some("cover_field"),
        compilation_options: Default::default(),
        cache: None,
    });
    (classify_layout, classify)
}

pub(super) fn entry(binding: u32, resource: wgpu::BindingResource<'_>) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry { binding, resource }
}
