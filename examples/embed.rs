//! Embedding: a renderer creates its own device, asks the engine which features and limits it
//! needs first, hands its device and queue in, and encodes the engine's work into its own
//! command encoder alongside its frame.
//!
//! `cargo run --release --example embed`

use sightline::{scene::procedural, trace::SplitMix64, Engine, EngineOptions, Mask, Segment};

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

    // Encode into the renderer's encoder, submit with its frame, read afterwards.
    let pass = tracer.prepare_occluded(&scene, &segments, Mask::SIGHT)?;
    let mut encoder = device.create_command_encoder(&Default::default());
    // ... the renderer's own passes would be recorded here ...
    pass.encode(tracer, &mut encoder);
    queue.submit([encoder.finish()]);
    let bits = pass.read_occlusion(tracer)?;
    println!(
        "{} of {} random segments blocked",
        bits.count_ones(),
        bits.len()
    );

    // Same answer as the one-call API and the CPU twin.
    assert_eq!(
        bits,
        Engine::cpu().occluded(&scene, &segments, Mask::SIGHT)?
    );
    println!("matches the CPU backend");
    Ok(())
}
