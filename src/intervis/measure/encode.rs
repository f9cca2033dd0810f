//! Recording an [`super::IntervisPass`]: the chunks of targets that share the slots, the
//! scene draws each view needs (culled once, at prepare), and the passes `encode` replays.

use super::gpu::{clear_attachment, in_frustum, CULL_BLOCK, TARGET_ID};
use super::pass::{Target, Work};
use super::pipelines::Kit;
use super::resources::{Geometry, GroupBuffers, Workspace};
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
        let Some(space) = &self.space else { return };
        self.copies.record(&space.staging, encoder);
        for (g, buffers) in self.groups.iter().zip(&space.groups) {
            let (Some(view_group), Some(reduce_group)) =
                (&buffers.view_group, &buffers.reduce_group)
            else {
                continue; // bound at prepare for every group in use
            };
            let mut block = 0u64;
            for (i, ch) in self.chunks[g.chunks.clone()].iter().enumerate() {
                if let Some((u, draws)) = &ch.scene {
                    let offset = (block * self.stride) as u32;
                    self.encode_scene(kit, space, view_group, offset, *u, draws, encoder);
                    block += 1;
                }
                for (slot, t) in self.targets[ch.jobs.clone()].iter().enumerate() {
                    let offset = (block * self.stride) as u32;
                    self.encode_target(kit, space, view_group, offset, slot, t, encoder);
                    block += 1;
                }
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("intervis reduce"),
                    timestamp_writes: None,
                });
                pass.set_pipeline(&kit.reduce);
                let offset = (i as u64 * self.batch_stride) as u32;
                pass.set_bind_group(0, reduce_group, &[offset]);
                pass.dispatch_workgroups(ch.jobs.len() as u32, 1, 1);
            }
            copy_records(buffers, g.bytes, encoder);
        }
    }

    /// The view's scene pass: the blocks that reach into the union `u` of its target boxes
    /// (only those pixels are ever read), scissored to it.
    #[allow(clippy::too_many_arguments)]
    fn encode_scene(
        &self,
        kit: &Kit,
        space: &Workspace,
        view_group: &wgpu::BindGroup,
        offset: u32,
        u: PixelBox,
        draws: &[(usize, Range<u32>)],
        encoder: &mut wgpu::CommandEncoder,
    ) {
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("intervis scene"),
            color_attachments: &[
                Some(clear_attachment(&space.scene.brightness, self.sky)),
                Some(clear_attachment(&space.scene.depth, 0.0)),
            ],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &space.scene.z,
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
        pass.set_scissor_rect(u.x0, u.y0, u.x1 - u.x0, u.y1 - u.y0);
        pass.set_pipeline(&kit.scene);
        pass.set_bind_group(0, view_group, &[offset]);
        let mut bound = usize::MAX;
        for (b, range) in draws {
            if *b != bound {
                pass.set_vertex_buffer(0, self.geometry.run(*b).buffer.slice(..));
                bound = *b;
            }
            pass.draw(range.clone(), 0..1);
        }
    }

    /// A target's pass into its slot, scissored to its box: the scene depth restored, then the
    /// humanoid with the stencil operations.
    #[allow(clippy::too_many_arguments)]
    fn encode_target(
        &self,
        kit: &Kit,
        space: &Workspace,
        view_group: &wgpu::BindGroup,
        offset: u32,
        slot: usize,
        t: &Target,
        encoder: &mut wgpu::CommandEncoder,
    ) {
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("intervis target"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &space.slots.brightness_layers[slot],
                depth_slice: None,
                resolve_target: None,
                ops: load_store(),
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &space.slots.stencil_layers[slot],
                depth_ops: Some(load_store()),
                stencil_ops: Some(load_store()),
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        let b = t.bbox;
        pass.set_scissor_rect(b.x0, b.y0, b.x1 - b.x0, b.y1 - b.y0);
        pass.set_bind_group(0, view_group, &[offset]);
        pass.set_bind_group(1, &space.scene.depth_group, &[]);
        pass.set_pipeline(&kit.restore);
        pass.draw(0..3, 0..1);
        pass.set_pipeline(&kit.target);
        pass.set_stencil_reference(TARGET_ID);
        let targets = &self.geometry.targets;
        pass.set_vertex_buffer(0, targets.buffer.slice(..));
        pass.draw(targets.ranges[t.posture as usize].clone(), 0..1);
    }
}

/// Keep what is there, store what is drawn.
fn load_store<V>() -> wgpu::Operations<V> {
    wgpu::Operations {
        load: wgpu::LoadOp::Load,
        store: wgpu::StoreOp::Store,
    }
}

/// The group's records into its readback.
fn copy_records(buffers: &GroupBuffers, bytes: u64, encoder: &mut wgpu::CommandEncoder) {
    let (records, readback) = (buffers.records.buffer(), buffers.readback.buffer());
    encoder.copy_buffer_to_buffer(records, 0, readback, 0, bytes);
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
/// `(run index, vertex range)`, adjacent blocks merged into one draw.
fn scene_draws(geometry: &Geometry, view: &View, u: PixelBox) -> Vec<(usize, Range<u32>)> {
    let mut draws = Vec::new();
    for (b, scene_run) in geometry.runs().enumerate() {
        let n = scene_run.vertices;
        let mut run: Option<Range<u32>> = None;
        for (k, &(lo, hi)) in scene_run.cull.iter().enumerate() {
            if !in_frustum(view, u, lo, hi) {
                continue;
            }
            let a = (k * CULL_BLOCK * 3) as u32;
            let e = (a + (CULL_BLOCK * 3) as u32).min(n);
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
