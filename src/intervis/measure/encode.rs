//! Recording an [`super::IntervisPass`]: per fill of the atlases the scene pass, the target
//! pass and the reduction (see `gpu.rs`), then the copy of every record to the readback.

use super::atlas::Fill;
use super::gpu::{SceneTile, TargetTile, TARGET_ID};
use super::pass::Work;
use super::pipelines::Kit;
use super::resources::{Groups, Workspace};
use crate::intervis::IntervisRecord;

/// Keep what is there, store what is drawn.
fn load_store<V>() -> wgpu::Operations<V> {
    wgpu::Operations {
        load: wgpu::LoadOp::Load,
        store: wgpu::StoreOp::Store,
    }
}

fn color(view: &wgpu::TextureView) -> Option<wgpu::RenderPassColorAttachment<'_>> {
    Some(wgpu::RenderPassColorAttachment {
        view,
        depth_slice: None,
        resolve_target: None,
        ops: load_store(),
    })
}

/// Byte offset of slot `slot` of entries of `T`.
fn offset<T>(slot: usize) -> u32 {
    (slot * size_of::<T>()) as u32
}

impl Work {
    pub(super) fn encode(&self, kit: &Kit, encoder: &mut wgpu::CommandEncoder) {
        let Some(space) = &self.space else { return };
        let Some(groups) = &space.groups else { return };
        self.copies.record(&space.staging, encoder);
        for fill in &self.fills {
            self.encode_scene(kit, space, groups, fill, encoder);
            self.encode_targets(kit, space, groups, fill, encoder);
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("intervis reduce"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&kit.reduce);
            let first = fill.targets.start;
            let offsets = [offset::<TargetTile>(first), offset::<IntervisRecord>(first)];
            pass.set_bind_group(0, &groups.reduce, &offsets);
            if std::env::var("SKIP").as_deref() != Ok("reduce") { pass.dispatch_workgroups(fill.targets.len() as u32, 1, 1); }
        }
        let bytes = (self.slots * size_of::<IntervisRecord>()) as u64;
        let (records, readback) = (space.records.buffer(), space.readback.buffer());
        encoder.copy_buffer_to_buffer(records, 0, readback, 0, bytes);
    }

    /// The fill's scene atlas: every tile cleared to sky at infinite depth, then each tile's
    /// culled scene triangles (through the index buffer), scissored to it.
    fn encode_scene(
        &self,
        kit: &Kit,
        space: &Workspace,
        groups: &Groups,
        fill: &Fill,
        encoder: &mut wgpu::CommandEncoder,
    ) {
        let a = &space.atlases;
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("intervis scene"),
            color_attachments: &[color(&a.scene_brightness)],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &a.scene_z,
                depth_ops: Some(load_store()),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        let offsets = [
            offset::<SceneTile>(fill.tiles.start),
            offset::<TargetTile>(fill.targets.start),
        ];
        pass.set_bind_group(0, &groups.render, &offsets);
        pass.set_pipeline(&kit.clear);
        pass.draw(0..6, 0..fill.scissors.len() as u32);
        pass.set_pipeline(&kit.scene);
        pass.set_index_buffer(space.indices.buffer().slice(..), wgpu::IndexFormat::Uint32);
        let mut bound = usize::MAX;
        for (k, (s, draws)) in fill.scissors.iter().zip(&fill.draws).enumerate() {
            if draws.is_empty() {
                continue;
            }
            pass.set_scissor_rect(s.x0, s.y0, s.x1 - s.x0, s.y1 - s.y0);
            let k = k as u32;
            if std::env::var("SKIP").as_deref() == Ok("scene") { continue; }
            for (b, range) in draws {
                if *b != bound {
                    pass.set_vertex_buffer(0, self.geometry.run(*b).buffer.slice(..));
                    bound = *b;
                }
                pass.draw_indexed(range.clone(), 0, k..k + 1);
            }
        }
    }

    /// The fill's target atlas: the scene depth restored under every target tile, then the
    /// humanoids, one instanced draw per posture.
    fn encode_targets(
        &self,
        kit: &Kit,
        space: &Workspace,
        groups: &Groups,
        fill: &Fill,
        encoder: &mut wgpu::CommandEncoder,
    ) {
        let a = &space.atlases;
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("intervis targets"),
            color_attachments: &[color(&a.target_brightness)],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &a.stencil,
                depth_ops: Some(load_store()),
                stencil_ops: Some(load_store()),
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        let offsets = [
            offset::<SceneTile>(fill.tiles.start),
            offset::<TargetTile>(fill.targets.start),
        ];
        pass.set_bind_group(0, &groups.render, &offsets);
        pass.set_bind_group(1, &groups.depth, &[]);
        pass.set_pipeline(&kit.restore);
        pass.draw(0..6, 0..fill.targets.len() as u32);
        pass.set_pipeline(&kit.target);
        pass.set_stencil_reference(TARGET_ID);
        let targets = &self.geometry.targets;
        pass.set_vertex_buffer(0, targets.buffer.slice(..));
        pass.set_index_buffer(targets.index.slice(..), wgpu::IndexFormat::Uint32);
        for ((mesh, base), instances) in targets.ranges.iter().zip(&fill.postures) {
            if !instances.is_empty() && std::env::var("SKIP").as_deref() != Ok("human") {
                pass.draw_indexed(mesh.clone(), *base, instances.clone());
            }
        }
    }
}
