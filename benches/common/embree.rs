//! Embree 3 (Intel's CPU ray tracing kernels) as a peer in the tracing bench: the least FFI that
//! builds a triangle scene and answers occlusion and closest-hit queries, checked against the
//! headers of `libembree-dev` 3.13 (`/usr/include/embree3`). Bench-only: compiled with the
//! `embree` feature, installed by `.ci/install-embree`.
#![allow(non_camel_case_types, non_snake_case, dead_code)]

use rayon::prelude::*;
use sightline::trace::{Ray, Segment};
use sightline::{MaterialFlags, Scene};
use std::ffi::c_void;
use std::os::raw::{c_char, c_int, c_uint};
use std::sync::atomic::{AtomicI64, Ordering};

type RTCDevice = *mut c_void;
type RTCScene = *mut c_void;
type RTCGeometry = *mut c_void;

const RTC_GEOMETRY_TYPE_TRIANGLE: c_int = 0;
const RTC_BUFFER_TYPE_INDEX: c_int = 0;
const RTC_BUFFER_TYPE_VERTEX: c_int = 1;
const RTC_FORMAT_UINT3: c_int = 0x5003;
const RTC_FORMAT_FLOAT3: c_int = 0x9003;
const RTC_SCENE_FLAG_ROBUST: c_int = 1 << 2;
const RTC_INTERSECT_CONTEXT_FLAG_INCOHERENT: c_int = 0;
const RTC_INTERSECT_CONTEXT_FLAG_COHERENT: c_int = 1;
const RTC_INVALID_GEOMETRY_ID: c_uint = u32::MAX;

/// `struct RTCIntersectContext` with `RTC_MAX_INSTANCE_LEVEL_COUNT == 1` and `RTC_MIN_WIDTH == 0`
/// (see `rtcore_config.h`).
#[repr(C)]
struct RTCIntersectContext {
    flags: c_int,
    filter: *const c_void,
    instID: [c_uint; 1],
}

#[repr(C, align(16))]
#[derive(Clone, Copy, Default)]
struct RTCRay {
    org: [f32; 3],
    tnear: f32,
    dir: [f32; 3],
    time: f32,
    tfar: f32,
    mask: c_uint,
    id: c_uint,
    flags: c_uint,
}

#[repr(C, align(16))]
#[derive(Clone, Copy, Default)]
struct RTCHit {
    Ng: [f32; 3],
    u: f32,
    v: f32,
    primID: c_uint,
    geomID: c_uint,
    instID: [c_uint; 1],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RTCRayHit {
    ray: RTCRay,
    hit: RTCHit,
}

/// The valid mask of a 16-wide call: Embree reads it with aligned vector loads, so it must sit
/// on 64 bytes as the packet does (an unaligned stack array crashes AVX-512 builds).
#[repr(C, align(64))]
struct Valid16([c_int; 16]);

#[repr(C, align(64))]
struct RTCRay16 {
    org_x: [f32; 16],
    org_y: [f32; 16],
    org_z: [f32; 16],
    tnear: [f32; 16],
    dir_x: [f32; 16],
    dir_y: [f32; 16],
    dir_z: [f32; 16],
    time: [f32; 16],
    tfar: [f32; 16],
    mask: [c_uint; 16],
    id: [c_uint; 16],
    flags: [c_uint; 16],
}

const _: () = assert!(std::mem::size_of::<RTCIntersectContext>() == 24);
const _: () = assert!(std::mem::size_of::<RTCRay>() == 48);
const _: () = assert!(std::mem::size_of::<RTCRayHit>() == 80);
const _: () = assert!(std::mem::size_of::<RTCRay16>() == 768);

#[link(name = "embree3")]
extern "C" {
    fn rtcNewDevice(config: *const c_char) -> RTCDevice;
    fn rtcReleaseDevice(device: RTCDevice);
    fn rtcGetDeviceError(device: RTCDevice) -> c_int;
    fn rtcSetDeviceMemoryMonitorFunction(
        device: RTCDevice,
        monitor: extern "C" fn(*mut c_void, isize, bool) -> bool,
        user: *mut c_void,
    );
    fn rtcNewScene(device: RTCDevice) -> RTCScene;
    fn rtcSetSceneFlags(scene: RTCScene, flags: c_int);
    fn rtcReleaseScene(scene: RTCScene);
    fn rtcAttachGeometry(scene: RTCScene, geometry: RTCGeometry) -> c_uint;
    fn rtcCommitScene(scene: RTCScene);
    fn rtcNewGeometry(device: RTCDevice, kind: c_int) -> RTCGeometry;
    fn rtcSetNewGeometryBuffer(
        geometry: RTCGeometry,
        kind: c_int,
        slot: c_uint,
        format: c_int,
        stride: usize,
        count: usize,
    ) -> *mut c_void;
    fn rtcCommitGeometry(geometry: RTCGeometry);
    fn rtcReleaseGeometry(geometry: RTCGeometry);
    fn rtcOccluded1(scene: RTCScene, context: *mut RTCIntersectContext, ray: *mut RTCRay);
    fn rtcOccluded16(
        valid: *const c_int,
        scene: RTCScene,
        context: *mut RTCIntersectContext,
        ray: *mut RTCRay16,
    );
    fn rtcIntersect1(scene: RTCScene, context: *mut RTCIntersectContext, rayhit: *mut RTCRayHit);
}

extern "C" fn count_bytes(user: *mut c_void, bytes: isize, _post: bool) -> bool {
    // SAFETY: `user` is the `AtomicI64` owned by the `EmbreeScene` that registered it.
    unsafe { &*(user as *const AtomicI64) }.fetch_add(bytes as i64, Ordering::Relaxed);
    true
}

fn context(coherent: bool) -> RTCIntersectContext {
    RTCIntersectContext {
        flags: if coherent {
            RTC_INTERSECT_CONTEXT_FLAG_COHERENT
        } else {
            RTC_INTERSECT_CONTEXT_FLAG_INCOHERENT
        },
        filter: std::ptr::null(),
        instID: [RTC_INVALID_GEOMETRY_ID],
    }
}

/// Our queries ask for a hit with `0 < t < t_max`; Embree reports `tnear <= t <= tfar`. With
/// `RTC_SCENE_FLAG_ROBUST` a ray starting exactly on a triangle hits it at `t = 0` when
/// `tnear = 0` (without the flag it does not), so `tnear` is the least normal float, which no
/// positive `t` falls below (a subnormal could be flushed to zero), and a segment's `tfar` is the
/// float below 1.
const TNEAR: f32 = f32::MIN_POSITIVE;
const SEGMENT_TFAR: f32 = 1.0 - f32::EPSILON / 2.0;

/// One Embree device and scene over a scene's sight-blocking triangles.
pub struct EmbreeScene {
    device: RTCDevice,
    scene: RTCScene,
    /// Scene-wide triangle id of each Embree primitive.
    ids: Vec<u32>,
    /// Bytes Embree allocated for the scene (its memory monitor), geometry buffers included.
    pub bytes: i64,
    _counter: Box<AtomicI64>,
}

// SAFETY: Embree scenes are safe to query from many threads once committed.
unsafe impl Send for EmbreeScene {}
unsafe impl Sync for EmbreeScene {}

impl EmbreeScene {
    /// `robust` sets `RTC_SCENE_FLAG_ROBUST` (watertight triangle tests).
    pub fn new(scene: &Scene, robust: bool) -> EmbreeScene {
        let materials = scene.materials();
        let (mut vertices, mut ids) = (Vec::new(), Vec::new());
        for (k, (tri, m)) in scene.world_triangles().into_iter().enumerate() {
            if materials[m as usize]
                .flags
                .contains(MaterialFlags::BLOCKS_SIGHT)
            {
                vertices.extend(tri.map(|v| v.to_array()));
                ids.push(k as u32);
            }
        }
        let counter = Box::new(AtomicI64::new(0));
        // SAFETY: plain FFI calls in the order the Embree 3 API documents; the buffers Embree
        // allocates are written within their sizes before the geometry is committed.
        unsafe {
            let device = rtcNewDevice(c"threads=0".as_ptr());
            assert!(!device.is_null(), "rtcNewDevice failed");
            let user = &*counter as *const AtomicI64 as *mut c_void;
            rtcSetDeviceMemoryMonitorFunction(device, count_bytes, user);
            let before = counter.load(Ordering::Relaxed);
            let scene = rtcNewScene(device);
            if robust {
                rtcSetSceneFlags(scene, RTC_SCENE_FLAG_ROBUST);
            }
            let geometry = rtcNewGeometry(device, RTC_GEOMETRY_TYPE_TRIANGLE);
            let n = ids.len();
            let v = rtcSetNewGeometryBuffer(
                geometry,
                RTC_BUFFER_TYPE_VERTEX,
                0,
                RTC_FORMAT_FLOAT3,
                12,
                3 * n,
            ) as *mut [f32; 3];
            std::ptr::copy_nonoverlapping(vertices.as_ptr(), v, 3 * n);
            let index = rtcSetNewGeometryBuffer(
                geometry,
                RTC_BUFFER_TYPE_INDEX,
                0,
                RTC_FORMAT_UINT3,
                12,
                n,
            ) as *mut [u32; 3];
            for i in 0..n {
                let k = 3 * i as u32;
                index.add(i).write([k, k + 1, k + 2]);
            }
            rtcCommitGeometry(geometry);
            rtcAttachGeometry(scene, geometry);
            rtcReleaseGeometry(geometry);
            rtcCommitScene(scene);
            assert_eq!(rtcGetDeviceError(device), 0, "Embree scene build failed");
            let bytes = counter.load(Ordering::Relaxed) - before;
            EmbreeScene {
                device,
                scene,
                ids,
                bytes,
                _counter: counter,
            }
        }
    }

    pub fn primitives(&self) -> usize {
        self.ids.len()
    }

    fn ray(s: &Segment) -> RTCRay {
        RTCRay {
            org: s.start,
            tnear: TNEAR,
            dir: (s.end() - s.start()).to_array(),
            tfar: SEGMENT_TFAR,
            mask: u32::MAX,
            ..Default::default()
        }
    }

    /// `rtcOccluded1` per segment, in parallel.
    pub fn occluded1(&self, segments: &[Segment]) -> Vec<bool> {
        let mut out = vec![false; segments.len()];
        out.par_chunks_mut(256)
            .zip(segments.par_chunks(256))
            .for_each(|(out, segs)| {
                let mut ctx = context(false);
                for (o, s) in out.iter_mut().zip(segs) {
                    let mut r = Self::ray(s);
                    // SAFETY: a committed scene, a valid context and ray.
                    unsafe { rtcOccluded1(self.scene, &mut ctx, &mut r) };
                    *o = r.tfar == f32::NEG_INFINITY;
                }
            });
        out
    }

    /// `rtcOccluded16` on consecutive groups of 16 segments, in parallel; `coherent` sets the
    /// context's coherent-rays hint.
    pub fn occluded16(&self, segments: &[Segment], coherent: bool) -> Vec<bool> {
        let mut out = vec![false; segments.len()];
        out.par_chunks_mut(256)
            .zip(segments.par_chunks(256))
            .for_each(|(out, segs)| {
                let mut ctx = context(coherent);
                // SAFETY: all-zero is a valid RTCRay16 (plain floats and integers).
                let mut p: Box<RTCRay16> = Box::new(unsafe { std::mem::zeroed() });
                for (out, segs) in out.chunks_mut(16).zip(segs.chunks(16)) {
                    let mut valid = Valid16([0; 16]);
                    for (l, s) in segs.iter().enumerate() {
                        let r = Self::ray(s);
                        (p.org_x[l], p.org_y[l], p.org_z[l]) = (r.org[0], r.org[1], r.org[2]);
                        (p.dir_x[l], p.dir_y[l], p.dir_z[l]) = (r.dir[0], r.dir[1], r.dir[2]);
                        (p.tnear[l], p.tfar[l], p.mask[l]) = (TNEAR, SEGMENT_TFAR, u32::MAX);
                        valid.0[l] = -1;
                    }
                    // SAFETY: a committed scene, a 64-byte aligned packet and valid mask.
                    unsafe { rtcOccluded16(valid.0.as_ptr(), self.scene, &mut ctx, &mut *p) };
                    for (l, o) in out.iter_mut().enumerate() {
                        *o = p.tfar[l] == f32::NEG_INFINITY;
                    }
                }
            });
        out
    }

    /// `rtcIntersect1` per ray, in parallel: `(t, scene-wide triangle id)` or `None`.
    pub fn intersect1(&self, rays: &[Ray]) -> Vec<Option<(f32, u32)>> {
        let mut out = vec![None; rays.len()];
        out.par_chunks_mut(256)
            .zip(rays.par_chunks(256))
            .for_each(|(out, rays)| {
                let mut ctx = context(false);
                for (o, ray) in out.iter_mut().zip(rays) {
                    let mut rh = RTCRayHit {
                        ray: RTCRay {
                            org: ray.origin,
                            tnear: TNEAR,
                            dir: ray.dir,
                            tfar: ray.t_max,
                            mask: u32::MAX,
                            ..Default::default()
                        },
                        hit: RTCHit {
                            geomID: RTC_INVALID_GEOMETRY_ID,
                            ..Default::default()
                        },
                    };
                    // SAFETY: a committed scene, a valid context and ray/hit.
                    unsafe { rtcIntersect1(self.scene, &mut ctx, &mut rh) };
                    *o = (rh.hit.geomID != RTC_INVALID_GEOMETRY_ID)
                        .then(|| (rh.ray.tfar, self.ids[rh.hit.primID as usize]));
                }
            });
        out
    }
}

impl Drop for EmbreeScene {
    fn drop(&mut self) {
        // SAFETY: both were created in `new` and are released once.
        unsafe {
            rtcReleaseScene(self.scene);
            rtcReleaseDevice(self.device);
        }
    }
}
