//! What the GPU cover field renders for each observer: a depth cube around the eye, or, when
//! the whole field lies in front of the eye, one square view that just covers the field.
//!
//! A cube spends its `face_resolution` on all directions, so a field far away falls in a few
//! texels and each texel spans metres of ground. The single view aims at the centre of the
//! box every template point lies in ([`FieldBounds`]) and opens just wide enough for its eight
//! corners, so the field gets the full resolution at any distance: a 20 m field is about 2 cm a
//! texel whether the threat is 100 m or 100 km away.

use crate::cover::Agent;
use bytemuck::{Pod, Zeroable};
// wgpu's clip space is DirectX's: y up, z in 0..1.
use glam::camera::rh::{proj::directx::perspective_infinite_reverse, view::look_to_mat4};
use glam::dcamera::rh::{
    proj::directx::perspective_infinite_reverse as perspective_infinite_reverse_f64,
    view::look_to_mat4 as look_to_mat4_f64,
};
use glam::{DVec3, Vec3};

/// One face of one observer's depth view. Mirrors `struct Face` in `shaders/depth_map.wgsl`
/// and `shaders/cover_field.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub struct Face {
    /// Projection * view, column-major.
    pub view_proj: [[f32; 4]; 4],
    /// xyz: the eye. w: 0 for a cube face; for a single view, the tangent of its half field of
    /// view (> 0).
    pub eye: [f32; 4],
}
const _: () = assert!(std::mem::size_of::<Face>() == 80);

/// Near plane of every view (metres): surfaces closer to an eye are not drawn.
const NEAR: f32 = 0.01;

/// Widest single view, as the tangent of its half field of view: 1 (90 degrees, a cube face).
/// Wider, a single view's texels would be coarser than the cube's, so the cube is used.
const MAX_TAN_HALF: f64 = 1.0;

/// View directions and up vectors of the cube faces, in the order `cube_face` in
/// `shaders/cover_field.wgsl` numbers them.
const FACES: [(Vec3, Vec3); 6] = [
    (Vec3::X, Vec3::Y),
    (Vec3::NEG_X, Vec3::Y),
    (Vec3::Y, Vec3::NEG_Z),
    (Vec3::NEG_Y, Vec3::Z),
    (Vec3::Z, Vec3::Y),
    (Vec3::NEG_Z, Vec3::Y),
];

/// The six faces of the depth cube around `eye` (`eye.w` = 0).
#[must_use]
pub fn cube_faces(eye: Vec3) -> [Face; 6] {
    let proj = perspective_infinite_reverse(std::f32::consts::FRAC_PI_2, 1.0, NEAR);
    FACES.map(|(dir, up)| Face {
        view_proj: (proj * look_to_mat4(eye, dir, up)).to_cols_array_2d(),
        eye: eye.extend(0.0).into(),
    })
}

/// The box every template point of a cover field lies in: the ground points' x/z extent padded
/// by the agent's radius, their y range stretched to the lowest and highest head height.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldBounds {
    pub min: Vec3,
    pub max: Vec3,
}

impl FieldBounds {
    /// The bounds of the template points of `agent` on `ground` points; `None` without points.
    #[must_use]
    pub fn around(ground: &[Vec3], agent: &Agent) -> Option<FieldBounds> {
        let (first, rest) = ground.split_first()?;
        let (lo, hi) = rest
            .iter()
            .fold((*first, *first), |(lo, hi), &p| (lo.min(p), hi.max(p)));
        let heads = agent.head_heights;
        let (below, above) = heads
            .iter()
            .fold((0.0f32, 0.0f32), |(b, a), &h| (b.min(h), a.max(h)));
        let pad = Vec3::new(agent.radius, 0.0, agent.radius);
        Some(FieldBounds {
            min: lo - pad + Vec3::Y * below,
            max: hi + pad + Vec3::Y * above,
        })
    }

    /// The view an observer at `eye` gets of these bounds with `face_resolution` texels a side:
    /// one square view when the eye is outside the box and a view of at most 90 degrees covers
    /// all eight corners with two texels to spare on each side, else the cube.
    #[must_use]
    pub fn depth_view(&self, eye: Vec3, face_resolution: u32) -> DepthView {
        let (lo, hi, e) = (self.min.as_dvec3(), self.max.as_dvec3(), eye.as_dvec3());
        if e.cmpge(lo).all() && e.cmple(hi).all() {
            return DepthView::Cube;
        }
        let target = (lo + hi) / 2.0;
        let Some(dir) = (target - e).try_normalize() else {
            return DepthView::Cube;
        };
        let view = look_to_mat4_f64(e, dir, up_for(dir));
        let mut widest = 0.0f64;
        for k in 0..8 {
            let corner = DVec3::new(
                if k & 1 == 0 { lo.x } else { hi.x },
                if k & 2 == 0 { lo.y } else { hi.y },
                if k & 4 == 0 { lo.z } else { hi.z },
            );
            let v = view.transform_point3(corner);
            let depth = -v.z;
            if depth <= f64::from(NEAR) {
                return DepthView::Cube;
            }
            widest = widest.max(v.x.abs().max(v.y.abs()) / depth);
        }
        // Two spare texels a side keep the 2x2 lookup of the classify pass on the face, and a
        // floor keeps the projection finite for a field that is one point.
        let tan_half = (widest * (1.0 + 4.0 / f64::from(face_resolution.max(1)))).max(1e-6);
        if tan_half > MAX_TAN_HALF {
            return DepthView::Cube;
        }
        DepthView::Frustum {
            target: target.as_vec3(),
            tan_half: tan_half as f32,
        }
    }
}

/// An up vector for a view along `dir` (unit): +Y unless `dir` is nearly vertical.
fn up_for(dir: DVec3) -> DVec3 {
    if dir.y.abs() < 0.99 {
        DVec3::Y
    } else {
        DVec3::Z
    }
}

/// What the GPU renders for one observer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DepthView {
    /// Six 90-degree faces around the eye: the eye is inside the field's bounds or too close
    /// for one view of at most 90 degrees to cover them.
    Cube,
    /// One square view from the eye towards `target` (the bounds' centre) whose half field of
    /// view has tangent `tan_half`.
    Frustum { target: Vec3, tan_half: f32 },
}

impl DepthView {
    /// Tangent of the half field of view of each face (1 for the cube).
    #[must_use]
    pub fn tan_half(&self) -> f32 {
        match *self {
            DepthView::Cube => 1.0,
            DepthView::Frustum { tan_half, .. } => tan_half,
        }
    }

    /// Width of one texel per metre of distance from the eye, at a face's centre: `2 tan_half /
    /// face_resolution`. The classify pass's slack is `bias` plus this times the distance.
    #[must_use]
    pub fn footprint_per_metre(&self, face_resolution: u32) -> f32 {
        2.0 * self.tan_half() / face_resolution as f32
    }

    /// Faces rendered: 6 for the cube, 1 for a single view.
    #[must_use]
    pub fn face_count(&self) -> usize {
        match self {
            DepthView::Cube => 6,
            DepthView::Frustum { .. } => 1,
        }
    }

    /// The faces of this view from `eye`: the cube's six, or the single view in every slot
    /// (only the first is rendered and sampled).
    #[must_use]
    pub fn faces(&self, eye: Vec3) -> [Face; 6] {
        match *self {
            DepthView::Cube => cube_faces(eye),
            DepthView::Frustum { target, tan_half } => {
                // In f64, then rounded: the translation of an eye 100 km out keeps its
                // millimetres, and the rows across the view stay small (they are
                // perpendicular to the eye's offset from the target).
                let e = eye.as_dvec3();
                let dir = (target.as_dvec3() - e).normalize();
                let fov = 2.0 * f64::from(tan_half).atan();
                let proj = perspective_infinite_reverse_f64(fov, 1.0, f64::from(NEAR));
                let face = Face {
                    view_proj: (proj * look_to_mat4_f64(e, dir, up_for(dir)))
                        .as_mat4()
                        .to_cols_array_2d(),
                    eye: eye.extend(tan_half).into(),
                };
                [face; 6]
            }
        }
    }
}
