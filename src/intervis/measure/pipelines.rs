//! The intervis pipelines (scene pass, depth restore, target stencil pass, reduction) and
//! their layouts, built once per device and kept by [`crate::gpu::GpuTracer::cached`].

use super::gpu::{SCENE_FORMAT, STENCIL_FORMAT, Z_FORMAT};
use std::num::NonZeroU64;

/// Pipelines and layouts, built once per device.
pub(super) struct Kit {
    pub(super) render_layout: wgpu::BindGroupLayout,
    pub(super) depth_layout: wgpu::BindGroupLayout,
    pub(super) scene: wgpu::RenderPipeline,
    pub(super) restore: wgpu::RenderPipeline,
    pub(super) target: wgpu::RenderPipeline,
    pub(super) reduce_layout: wgpu::BindGroupLayout,
    pub(super) reduce: wgpu::ComputePipeline,
}

impl Kit {
    pub(super) fn new(device: &wgpu::Device) -> Kit {
        let module = |label, source: &str| {
            device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            })
        };
        let uniform = |binding, dynamic, size: u64, visibility| wgpu::BindGroupLayoutEntry {
            binding,
            visibility,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: dynamic,
                min_binding_size: NonZeroU64::new(size),
            },
            count: None,
        };
        let texture =
            |binding, sample_type, view_dimension, visibility| wgpu::BindGroupLayoutEntry {
                binding,
                visibility,
                ty: wgpu::BindingType::Texture {
                    sample_type,
                    view_dimension,
                    multisampled: false,
                },
                count: None,
            };
        let float = wgpu::TextureSampleType::Float { filterable: false };
        let vf = wgpu::ShaderStages::VERTEX_FRAGMENT;
        let render_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("intervis view"),
            entries: &[uniform(0, true, 144, vf), uniform(1, false, 32, vf)],
        });
        let depth_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("intervis scene depth"),
            entries: &[texture(
                0,
                float,
                wgpu::TextureViewDimension::D2,
                wgpu::ShaderStages::FRAGMENT,
            )],
        });
        let render = module(
            "intervis_render",
            include_str!("../../../shaders/intervis_render.wgsl"),
        );
        let scene_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("intervis scene"),
            bind_group_layouts: &[Some(&render_layout)],
            immediate_size: 0,
        });
        let target_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("intervis target"),
            bind_group_layouts: &[Some(&render_layout), Some(&depth_layout)],
            immediate_size: 0,
        });
        let vertex_buffers = [Some(wgpu::VertexBufferLayout {
            array_stride: 32,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: &wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x4],
        })];
        let color = |format| {
            Some(wgpu::ColorTargetState {
                format,
                blend: None,
                write_mask: wgpu::ColorWrites::RED,
            })
        };
        // Both faces everywhere: scenes hold single-sided walls and ground (ray casting sees
        // them from either side), and the target counts its own overdraw in the stencil.
        let scene = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("intervis scene"),
            layout: Some(&scene_layout),
            vertex: wgpu::VertexState {
                module: &render,
                entry_point: Some("intervis_render_vertex"),
                compilation_options: Default::default(),
                buffers: &vertex_buffers,
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: Some(wgpu::DepthStencilState {
                format: Z_FORMAT,
                depth_write_enabled: Some(true),
                depth_compare: Some(wgpu::CompareFunction::Greater),
                stencil: Default::default(),
                bias: Default::default(),
            }),
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &render,
                entry_point: Some("intervis_render_scene_fragment"),
                compilation_options: Default::default(),
                targets: &[color(SCENE_FORMAT), color(SCENE_FORMAT)],
            }),
            multiview_mask: None,
            cache: None,
        });
        let face = |compare, pass_op, depth_fail_op| wgpu::StencilFaceState {
            compare,
            fail_op: wgpu::StencilOperation::Keep,
            depth_fail_op,
            pass_op,
        };
        let stencil = |f: wgpu::StencilFaceState| wgpu::StencilState {
            front: f,
            back: f,
            read_mask: 0xff,
            write_mask: 0xff,
        };
        // Restore: scene depth back in, stencil to 0, whatever was there before.
        let zero = wgpu::StencilOperation::Zero;
        let restore = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("intervis restore"),
            layout: Some(&target_layout),
            vertex: wgpu::VertexState {
                module: &render,
                entry_point: Some("intervis_render_restore_vertex"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: Some(wgpu::DepthStencilState {
                format: STENCIL_FORMAT,
                depth_write_enabled: Some(true),
                depth_compare: Some(wgpu::CompareFunction::Always),
                stencil: stencil(face(wgpu::CompareFunction::Always, zero, zero)),
                bias: Default::default(),
            }),
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &render,
                entry_point: Some("intervis_render_restore_fragment"),
                compilation_options: Default::default(),
                targets: &[color(SCENE_FORMAT)],
            }),
            multiview_mask: None,
            cache: None,
        });
        // Darken, McCue and Guerrero's stencil: 127 where the depth test passes, +1 where it fails.
        let target = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("intervis target"),
            layout: Some(&target_layout),
            vertex: wgpu::VertexState {
                module: &render,
                entry_point: Some("intervis_render_vertex"),
                compilation_options: Default::default(),
                buffers: &vertex_buffers,
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: Some(wgpu::DepthStencilState {
                format: STENCIL_FORMAT,
                depth_write_enabled: Some(true),
                depth_compare: Some(wgpu::CompareFunction::GreaterEqual),
                stencil: stencil(face(
                    wgpu::CompareFunction::Always,
                    wgpu::StencilOperation::Replace,
                    wgpu::StencilOperation::IncrementClamp,
                )),
                bias: Default::default(),
            }),
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &render,
                entry_point: Some("intervis_render_target_fragment"),
                compilation_options: Default::default(),
                targets: &[color(SCENE_FORMAT)],
            }),
            multiview_mask: None,
            cache: None,
        });
        let c = wgpu::ShaderStages::COMPUTE;
        let storage = crate::gpu::storage_entry;
        let array = wgpu::TextureViewDimension::D2Array;
        let reduce_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("intervis reduce"),
            entries: &[
                uniform(0, false, 32, c),
                uniform(1, true, 16, c),
                storage(2, true),
                texture(3, wgpu::TextureSampleType::Uint, array, c),
                texture(4, float, array, c),
                texture(5, float, wgpu::TextureViewDimension::D2, c),
                storage(6, false),
            ],
        });
        let reduce_module = module(
            "intervis_reduce",
            include_str!("../../../shaders/intervis_reduce.wgsl"),
        );
        let reduce = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("intervis reduce"),
            layout: Some(
                &device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some("intervis reduce"),
                    bind_group_layouts: &[Some(&reduce_layout)],
                    immediate_size: 0,
                }),
            ),
            module: &reduce_module,
            entry_point: Some("intervis_reduce"),
            compilation_options: Default::default(),
            cache: None,
        });
        Kit {
            render_layout,
            depth_layout,
            scene,
            restore,
            target,
            reduce_layout,
            reduce,
        }
    }
}
