//! Recording an [`super::IntervisPass`]: per fill of the atlas the render pass (scene tiles,
//! then the humanoids) and the reduction (see `gpu.rs`), then the copy of every record to the
//! readback.

use super::atlas::Fill;
use super::gpu::{Tile, TARGET_ID};
use super::pass::Work;
use super::pipelines::Kit;
use super::resources::{Groups, Workspace};
use crate::intervis::IntervisRecord;

/// Byte offset of slot `slot` of entries of `T`.
fn offset<T>(slot: usize) -> u32 {
    (slot * size_of::<T>()) as u32
}

fn clear<V>(value: V) -> wgpu::Operations<V> {
    wgpu::Operations {
        load: wgpu::LoadOp::Clear(value),
        store: wgpu::StoreOp::Store,
    }
}

impl Work {
    pub(super) fn encode(&self, kit: &Kit, encoder: &mut wgpu::CommandEncoder) {
        let Some(space) = &self.space else { return };
        let Some(groups) = &space.groups else { return };
        self.copies.record(&space.staging, encoder);
        for fill in &self.fills {
            self.encode_render(kit, space, groups, fill, encoder);
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("intervis reduce"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&kit.reduce);
            let first = fill.tiles.start;
            let offsets = [offset::<Tile>(first), offset::<IntervisRecord>(first)];
            pass.set_bind_group(0, &groups.reduce, &offsets);
            pass.dispatch_workgroups(fill.tiles.len() as u32, 1, 1);
        }
        let bytes = (self.slots * size_of::<IntervisRecord>()) as u64;
        let (records, readback) = (space.records.buffer(), space.readback.buffer());
        encoder.copy_buffer_to_buffer(records, 0, readback, 0, bytes);
    }

    /// The fill's render pass: the atlas cleared to sky at infinite depth, each tile's culled
    /// scene triangles (through the index buffer) scissored to it, then the humanoids, one
    /// instanced draw per posture.
    fn encode_render(
        &self,
        kit: &Kit,
        space: &Workspace,
        groups: &Groups,
        fill: &Fill,
        encoder: &mut wgpu::CommandEncoder,
    ) {
        let a = &space.atlas;
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("intervis"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &a.brightness,
                depth_slice: None,
                resolve_target: None,
                ops: clear(wgpu::Color {
                    r: self.sky,
                    g: 0.0,
                    b: 0.0,
                    a: 1.0,
                }),
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &a.depth_stencil,
                depth_ops: Some(clear(0.0)), // reversed Z: 0 is infinitely far
                stencil_ops: Some(clear(0)),
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_bind_group(0, &groups.render, &[offset::<Tile>(fill.tiles.start)]);
        pass.set_pipeline(&kit.scene);
        pass.set_index_buffer(space.indices.buffer().slice(..), wgpu::IndexFormat::Uint32);
        let mut bound = usize::MAX;
        for (k, (s, draws)) in fill.scissors.iter().zip(&fill.draws).enumerate() {
            if draws.is_empty() {
                continue;
            }
            pass.set_scissor_rect(s.x0, s.y0, s.x1 - s.x0, s.y1 - s.y0);
            let k = k as u32;
            for (b, range) in draws {
                if *b != bound {
                    pass.set_vertex_buffer(0, self.geometry.run(*b).buffer.slice(..));
                    bound = *b;
                }
                pass.draw_indexed(range.clone(), 0, k..k + 1);
            }
        }
        let side = space.side();
        pass.set_scissor_rect(0, 0, side, side);
        pass.set_pipeline(&kit.target);
        pass.set_stencil_reference(TARGET_ID);
        let targets = &self.geometry.targets;
        pass.set_vertex_buffer(0, targets.buffer.slice(..));
        pass.set_index_buffer(targets.index.slice(..), wgpu::IndexFormat::Uint32);
        for ((mesh, base), instances) in targets.ranges.iter().zip(&fill.postures) {
            if !instances.is_empty() {
                pass.draw_indexed(mesh.clone(), *base, instances.clone());
            }
        }
    }
}
