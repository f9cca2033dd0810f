//! With no matching adapter, `Engine::headless` falls back to the CPU backend and still traces.
//! (Its own test binary: it sets WGPU_ADAPTER_NAME for the whole process.)

use glam::Vec3;
use sightline::{scene::procedural, Backend, Engine, EngineOptions, Mask, Segment};

#[test]
fn no_adapter_falls_back_to_the_cpu_backend() {
    std::env::set_var("WGPU_ADAPTER_NAME", "no-such-adapter-anywhere");
    let err = Engine::headless_gpu(EngineOptions::default())
        .err()
        .expect("no adapter matches");
    assert!(err.to_string().contains("mesa-vulkan-drivers"), "{err}");
    let engine = Engine::headless();
    assert_eq!(engine.backend(), Backend::Cpu);
    let scene = procedural::rock(1, 1);
    let seg = Segment::new(Vec3::new(-30.0, 1.0, 0.0), Vec3::new(30.0, 1.0, 0.0));
    assert!(engine.occluded(&scene, &[seg], Mask::SIGHT).unwrap().get(0));
}
