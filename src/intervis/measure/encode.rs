//! Recording an [`super::IntervisPass`]: the chunks of targets that share the slots, the
//! scene draws each view needs (culled once, at prepare), and the passes `encode` replays.

use super::gpu::{clear_attachment, in_frustum, Geometry, CULL_BLOCK, TARGET_ID};
use super::pass::{Target, Work};
use super::pipelines::Kit;
use super::{PixelBox, Plan, View};
use std::ops::Range;

/// Targets of one view sharing the slots, and the scene draws when the chunk renders its view
/// (first chunk of a view): `(vertex buffer, vertex range)` runs of blocks in its frustum.
pub(super) struct Chunk {
    pub jobs: Range<usize>,
    pub scene: Option<(PixelBox, Vec<(usize, Range<u32>)>)>,
}

impl Work {
    pub(super) fn encode(&self, kit: &Kit, encoder: &mut wgpu::CommandEncoder) {
        for g in &self.groups {
            let mut block = 0u64;
            for (i, ch) in self.chunks[g.chunks.clone()].iter().enumerate() {
                if let Some((u, draws)) = &ch.scene {
                    let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                        label: Some("intervis scene"),
                        color_attachments: &[
                            Some(clear_attachment(&self.scene_brightness, self.sky)),
                            Some(clear_attachment(&self.scene_depth, 0.0)),
                        ],
                        depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                            view: &self.scene_z,
                            depth_ops: Some(wgpu::Operations {
                                load: wgpu::LoadOp::Clear(0.0), // reversed Z: 0 is infinitely far
                                store: wgpu::StoreOp::Discard,
                            }),
                            stencil_ops: None,
                        }),
                        timestamp_writes: None,
                        occlusion_query_set: None,
                        multiview_mask: None,
                    });
                    // Only the view's target boxes are ever read: the blocks that reach into
                    // their union, scissored to it.
                    pass.set_scissor_rect(u.x0, u.y0, u.x1 - u.x0, u.y1 - u.y0);
                    pass.set_pipeline(&kit.scene);
                    pass.set_bind_group(0, &g.view_group, &[(block * self.stride) as u32]);
                    let mut bound = usize::MAX;
                    for (b, range) in draws {
                        if *b != bound {
                            pass.set_vertex_buffer(0, self.geometry.scene_buffers[*b].0.slice(..));
                            bound = *b;
                        }
                        pass.draw(range.clone(), 0..1);
                    }
                    block += 1;
                }
                for (slot, t) in self.targets[ch.jobs.clone()].iter().enumerate() {
                    let b = t.bbox;
                    let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                        label: Some("intervis target"),
                        color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                            view: &self.brightness_layers[slot],
                            depth_slice: None,
                            resolve_target: None,
                            ops: wgpu::Operations {
                                load: wgpu::LoadOp::Load,
                                store: wgpu::StoreOp::Store,
                            },
                        })],
                        depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                            view: &self.stencil_layers[slot],
                            depth_ops: Some(wgpu::Operations {
                                load: wgpu::LoadOp::Load,
                                store: wgpu::StoreOp::Store,
                            }),
                            stencil_ops: Some(wgpu::Operations {
                                load: wgpu::LoadOp::Load,
                                store: wgpu::StoreOp::Store,
                            }),
                        }),
                        timestamp_writes: None,
                        occlusion_query_set: None,
                        multiview_mask: None,
                    });
                    pass.set_scissor_rect(b.x0, b.y0, b.x1 - b.x0, b.y1 - b.y0);
                    pass.set_bind_group(0, &g.view_group, &[(block * self.stride) as u32]);
                    pass.set_bind_group(1, &self.depth_group, &[]);
                    pass.set_pipeline(&kit.restore);
                    pass.draw(0..3, 0..1);
                    pass.set_pipeline(&kit.target);
                    pass.set_stencil_reference(TARGET_ID);
                    pass.set_vertex_buffer(0, self.geometry.target_buffer.slice(..));
                    pass.draw(self.geometry.ranges[t.posture as usize].clone(), 0..1);
                    block += 1;
                }
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("intervis reduce"),
                    timestamp_writes: None,
                });
                pass.set_pipeline(&kit.reduce);
                let offset = (i as u64 * self.batch_stride) as u32;
                pass.set_bind_group(0, &g.reduce_group, &[offset]);
                pass.dispatch_workgroups(ch.jobs.len() as u32, 1, 1);
            }
            encoder.copy_buffer_to_buffer(&g.records, 0, &g.readback, 0, g.bytes);
        }
    }
}

/// A view's jobs, at most `slots` at a time; the first chunk of each view renders it, drawing
/// the scene blocks in the frustum of the union of the view's target boxes.
pub(super) fn chunks(
    plan: &Plan,
    geometry: &Geometry,
    targets: &[Target],
    slots: usize,
) -> Vec<Chunk> {
    let mut union = vec![
        PixelBox {
            x0: u32::MAX,
            y0: u32::MAX,
            x1: 0,
            y1: 0,
        };
        plan.views.len()
    ];
    for t in targets {
        let (u, b) = (&mut union[t.view], t.bbox);
        *u = PixelBox {
            x0: u.x0.min(b.x0),
            y0: u.y0.min(b.y0),
            x1: u.x1.max(b.x1),
            y1: u.y1.max(b.y1),
        };
    }
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut start = 0;
    while start < targets.len() {
        let v = targets[start].view;
        let mut end = start;
        while end < targets.len() && targets[end].view == v && end - start < slots {
            end += 1;
        }
        let renders = chunks
            .last()
            .is_none_or(|c| targets[c.jobs.start].view != v);
        let scene = renders.then(|| (union[v], scene_draws(geometry, &plan.views[v].0, union[v])));
        chunks.push(Chunk {
            jobs: start..end,
            scene,
        });
        start = end;
    }
    chunks
}

/// Runs of culling blocks of `geometry` that reach into the frustum behind `u` of `view`:
/// `(vertex buffer, vertex range)`, adjacent blocks merged into one draw.
fn scene_draws(geometry: &Geometry, view: &View, u: PixelBox) -> Vec<(usize, Range<u32>)> {
    let per = geometry.blocks_per_buffer;
    let mut draws = Vec::new();
    for (b, (_, n)) in geometry.scene_buffers.iter().enumerate() {
        let blocks = &geometry.cull[b * per..(b * per + per).min(geometry.cull.len())];
        let mut run: Option<Range<u32>> = None;
        for (k, &(lo, hi)) in blocks.iter().enumerate() {
            if !in_frustum(view, u, lo, hi) {
                continue;
            }
            let a = (k * CULL_BLOCK * 3) as u32;
            let e = (a + (CULL_BLOCK * 3) as u32).min(*n);
            run = match run {
                Some(r) if r.end == a => Some(r.start..e),
                Some(r) => {
                    draws.push((b, r));
                    Some(a..e)
                }
                None => Some(a..e),
            };
        }
        if let Some(r) = run {
            draws.push((b, r));
        }
    }
    draws
}
