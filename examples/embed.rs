//! Embedding: a renderer creates its own device, asks the engine which features and limits it
//! needs first, hands its device and queue in, and encodes the engine's work into its own
//! command encoder alongside its frame.
//!
//! `cargo run --release --example embed`

use glam::Vec3;
use sightline::cover::field::{cover_field, field_ground, CoverFieldParams, CoverFieldPass};
use sightline::cover::Agent;
use sightline::intervis::measure::{measure, IntervisPair, IntervisParams};
use sightline::intervis::IntervisPass;
use sightline::{
    agent::Posture, scene::procedural, trace::SplitMix64, Engine, EngineOptions, Mask, Segment,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The renderer's own setup.
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))
        .map_err(|e| format!("no GPU adapter ({e}); install mesa-vulkan-drivers for lavapipe"))?;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("renderer"),
        required_features: Engine::required_features(),
        required_limits: Engine::required_limits(&adapter.limits()),
        ..Default::default()
    }))?;
    println!("renderer device on {}", adapter.get_info().name);

    // The engine borrows that device.
    let engine = Engine::new(&device, &queue, EngineOptions::default())?;
    let tracer = engine.gpu().expect("a GPU engine");
    let scene = procedural::village(1, 1);
    let mut rng = SplitMix64(1);
    let (lo, hi) = scene.bounds().expect("village has geometry");
    let segments: Vec<Segment> = (0..100_000)
        .map(|_| Segment::new(rng.in_box(lo, hi), rng.in_box(lo, hi)))
        .collect();

    // The cover field around a point for two threats: the ground search is a blocking step
    // (ray casting through the engine), done once per area, before the frame.
    let center = Vec3::new(8.0, 0.0, -22.0);
    let threats = [Vec3::new(22.0, 2.0, -5.0), Vec3::new(-6.0, 2.0, -12.0)];
    let agent = Agent::soldier(Vec3::ZERO);
    let field_params = CoverFieldParams::default();
    let ground = field_ground(&engine, &scene, center, &field_params)?;
    // Intervis: each threat looking for a standing soldier at a few spots of that ground.
    let spots = ground
        .points()
        .iter()
        .step_by(ground.points().len() / 8 + 1);
    let pairs: Vec<IntervisPair> = spots
        .flat_map(|&target| {
            threats.map(|observer| IntervisPair {
                observer,
                target,
                posture: Posture::Standing,
            })
        })
        .collect();
    let intervis_params = IntervisParams::default();

    // Prepare all three, encode them into the renderer's encoder, submit once with its frame,
    // read afterwards.
    let pass = tracer.prepare_occluded(&scene, &segments, Mask::SIGHT)?;
    let field_pass = CoverFieldPass::prepare(
        tracer,
        &scene,
        &ground,
        &agent,
        &threats,
        Mask::FIRE,
        &field_params,
    )?;
    let intervis_pass = IntervisPass::prepare(tracer, &scene, &pairs, &intervis_params)?;
    let mut encoder = device.create_command_encoder(&Default::default());
    // ... the renderer's own passes would be recorded here ...
    pass.encode(tracer, &mut encoder);
    field_pass.encode(tracer, &mut encoder);
    intervis_pass.encode(tracer, &mut encoder);
    queue.submit([encoder.finish()]);
    let bits = pass.read_occlusion(tracer)?;
    let field = field_pass.read(tracer)?;
    let records = intervis_pass.read(tracer)?;
    println!(
        "{} of {} random segments blocked",
        bits.count_ones(),
        bits.len()
    );
    let hidden = field.cells.len()
        - field.count(sightline::cover::field::CellCover::NotGround)
        - field.count(sightline::cover::field::CellCover::Exposed);
    println!(
        "cover field: {hidden} of {} cells give cover from both threats",
        field.cells.len()
    );
    println!(
        "intervis: the target is in sight in {} of {} pairs",
        records.iter().filter(|r| r.exposed > 0).count(),
        records.len()
    );

    // Same answers as the one-call APIs (and, for the segments, the CPU twin).
    assert_eq!(
        bits,
        Engine::cpu().occluded(&scene, &segments, Mask::SIGHT)?
    );
    let one_call = cover_field(
        &engine,
        &scene,
        center,
        &agent,
        &threats,
        Mask::FIRE,
        &field_params,
    )?;
    assert_eq!(field.cells, one_call.cells);
    assert_eq!(records, measure(&engine, &scene, &pairs, &intervis_params)?);
    println!("matches the one-call API and the CPU backend");
    Ok(())
}
