//! The intervis pipelines (scene, target stencil, reduction) and their layouts, built once per
//! device and kept by [`crate::gpu::GpuTracer::cached`].

use super::gpu::{Tile, BRIGHTNESS_FORMAT, STENCIL_FORMAT};
use crate::intervis::IntervisRecord;
use std::num::NonZeroU64;

/// Pipelines and layouts, built once per device.
pub(super) struct Kit {
    /// Group 0 of the render pass: the light and the fill's tiles.
    pub(super) render_layout: wgpu::BindGroupLayout,
    pub(super) scene: wgpu::RenderPipeline,
    pub(super) target: wgpu::RenderPipeline,
    pub(super) reduce_layout: wgpu::BindGroupLayout,
    pub(super) reduce: wgpu::ComputePipeline,
}

fn layout_entry(
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

fn uniform(size: u64) -> wgpu::BindingType {
    wgpu::BindingType::Buffer {
        ty: wgpu::BufferBindingType::Uniform,
        has_dynamic_offset: false,
        min_binding_size: NonZeroU64::new(size),
    }
}

/// A storage buffer bound at a dynamic offset, entries of `size` bytes.
fn windowed(read_only: bool, size: usize) -> wgpu::BindingType {
    wgpu::BindingType::Buffer {
        ty: wgpu::BufferBindingType::Storage { read_only },
        has_dynamic_offset: true,
        min_binding_size: NonZeroU64::new(size as u64),
    }
}

fn texture(sample_type: wgpu::TextureSampleType) -> wgpu::BindingType {
    wgpu::BindingType::Texture {
        sample_type,
        view_dimension: wgpu::TextureViewDimension::D2,
        multisampled: false,
    }
}

/// What a render pipeline differs in.
struct Stage<'a> {
    label: &'a str,
    vertex: &'a str,
    fragment: &'a str,
    buffers: &'a [Option<wgpu::VertexBufferLayout<'a>>],
    cull: Option<wgpu::Face>,
    /// Depth compare (depth writes on, `STENCIL_FORMAT`) and stencil state.
    compare: wgpu::CompareFunction,
    stencil: wgpu::StencilState,
}

impl Kit {
    pub(super) fn new(device: &wgpu::Device) -> Kit {
        let (v, f) = (wgpu::ShaderStages::VERTEX, wgpu::ShaderStages::FRAGMENT);
        let render_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("intervis render"),
            entries: &[
                layout_entry(0, v | f, uniform(32)),
                layout_entry(1, v, windowed(true, size_of::<Tile>())),
            ],
        });
        let render = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("intervis_render"),
            source: wgpu::ShaderSource::Wgsl(
                include_str!("../../../shaders/intervis_render.wgsl").into(),
            ),
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("intervis render"),
            bind_group_layouts: &[Some(&render_layout)],
            immediate_size: 0,
        });
        let pipeline = |s: Stage| render_pipeline(device, &render, &layout, s);
        use wgpu::CompareFunction::{Always, Greater, GreaterEqual};
        use wgpu::StencilOperation::{IncrementClamp, Keep, Replace};
        // Scene vertices: position, then the normal with the albedo in w; target vertices:
        // position (w unused).
        let scene_vertices = [Some(wgpu::VertexBufferLayout {
            array_stride: 32,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: &wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x4],
        })];
        let target_vertices = [Some(wgpu::VertexBufferLayout {
            array_stride: 16,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: &wgpu::vertex_attr_array![0 => Float32x3],
        })];
        let scene = pipeline(Stage {
            label: "intervis scene",
            vertex: "intervis_render_scene_vertex",
            fragment: "intervis_render_scene_fragment",
            buffers: &scene_vertices,
            cull: None,
            compare: Greater,
            stencil: Default::default(),
        });
        // Darken, McCue and Guerrero's stencil: 127 where the depth test passes, +1 where it fails.
        let target = pipeline(Stage {
            label: "intervis target",
            vertex: "intervis_render_target_vertex",
            fragment: "intervis_render_target_fragment",
            buffers: &target_vertices,
            // The humanoid is closed and wound outward: its nearest surface along any ray from
            // outside is a front face, so back faces never change a pixel's class.
            cull: Some(wgpu::Face::Back),
            compare: GreaterEqual,
            stencil: stencil(Always, Keep, IncrementClamp, Replace),
        });
        let (reduce_layout, reduce) = reduce_pipeline(device);
        Kit {
            render_layout,
            scene,
            target,
            reduce_layout,
            reduce,
        }
    }
}

/// The reduction's layout and pipeline.
fn reduce_pipeline(device: &wgpu::Device) -> (wgpu::BindGroupLayout, wgpu::ComputePipeline) {
    let c = wgpu::ShaderStages::COMPUTE;
    let float = wgpu::TextureSampleType::Float { filterable: false };
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("intervis reduce"),
        entries: &[
            layout_entry(1, c, windowed(true, size_of::<Tile>())),
            layout_entry(2, c, texture(wgpu::TextureSampleType::Uint)),
            layout_entry(3, c, texture(float)),
            layout_entry(4, c, windowed(false, size_of::<IntervisRecord>())),
        ],
    });
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("intervis_reduce"),
        source: wgpu::ShaderSource::Wgsl(
            include_str!("../../../shaders/intervis_reduce.wgsl").into(),
        ),
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("intervis reduce"),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("intervis reduce"),
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some("intervis_reduce"),
        compilation_options: Default::default(),
        cache: None,
    });
    (layout, pipeline)
}

/// The same stencil operations on both faces.
fn stencil(
    compare: wgpu::CompareFunction,
    fail_op: wgpu::StencilOperation,
    depth_fail_op: wgpu::StencilOperation,
    pass_op: wgpu::StencilOperation,
) -> wgpu::StencilState {
    let face = wgpu::StencilFaceState {
        compare,
        fail_op,
        depth_fail_op,
        pass_op,
    };
    wgpu::StencilState {
        front: face,
        back: face,
        read_mask: 0xff,
        write_mask: 0xff,
    }
}

/// A pipeline writing one R32Float brightness; both faces everywhere (scenes hold single-sided
/// walls and ground, which ray casting sees from either side, and the target counts its own
/// overdraw in the stencil).
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
            buffers: s.buffers,
        },
        primitive: wgpu::PrimitiveState {
            cull_mode: s.cull,
            ..Default::default()
        },
        depth_stencil: Some(wgpu::DepthStencilState {
            format: STENCIL_FORMAT,
            depth_write_enabled: Some(true),
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
                format: BRIGHTNESS_FORMAT,
                blend: None,
                write_mask: wgpu::ColorWrites::RED,
            })],
        }),
        multiview_mask: None,
        cache: None,
    })
}
