//! Every shader in `shaders/` parses and validates with naga, and every WGSL buffer struct has
//! the size and field offsets of its Rust twin.

use naga::valid::{Capabilities, ValidationFlags, Validator};
use std::collections::HashMap;
use std::mem::{offset_of, size_of};

fn validate(name: &str, source: &str) -> naga::Module {
    let module = naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("{name} does not parse:\n{}", e.emit_to_string(source)));
    Validator::new(ValidationFlags::all(), Capabilities::empty())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name} does not validate:\n{}", e.emit_to_string(source)));
    module
}

/// Shaders that do not use common.wgsl (the cover field's render and classify passes, the
/// intervis render and reduce passes).
const SELF_CONTAINED: [&str; 6] = [
    "shadow_volumes",
    "shadow_reduce",
    "depth_map",
    "cover_field",
    "intervis_render",
    "intervis_reduce",
];

/// The two walks of the scene, compiled between common.wgsl and a kernel.
const WALKS: [&str; 2] = ["bvh_walk", "ray_query"];

/// The tracing kernels, each compiled on both walks.
const KERNELS: [&str; 3] = ["occluded", "closest_hit", "los_table"];

/// Every tracing kernel validates on the compute walk and, with naga's ray-query capability,
/// on the hardware walk; each walk's source holds its file, and the hardware walk binds an
/// acceleration structure where the compute walk binds the BVH nodes.
#[test]
fn every_kernel_compiles_on_both_walks() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/shaders");
    for kernel in KERNELS {
        for (walk, ray_query) in [("bvh_walk", false), ("ray_query", true)] {
            let source = sightline::gpu_kernel_source_for(kernel, ray_query);
            let file = std::fs::read_to_string(format!("{dir}/{walk}.wgsl")).unwrap();
            assert!(
                source.contains(file.trim_end()),
                "{kernel}: {walk}.wgsl missing"
            );
            let module = naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| {
                panic!(
                    "{kernel} on {walk} does not parse:\n{}",
                    e.emit_to_string(&source)
                )
            });
            let caps = if ray_query {
                Capabilities::RAY_QUERY
            } else {
                Capabilities::empty()
            };
            Validator::new(ValidationFlags::all(), caps)
                .validate(&module)
                .unwrap_or_else(|e| {
                    panic!(
                        "{kernel} on {walk} does not validate:\n{}",
                        e.emit_to_string(&source)
                    )
                });
            let binds_accel = module.global_variables.iter().any(|(_, v)| {
                matches!(
                    module.types[v.ty].inner,
                    naga::TypeInner::AccelerationStructure { .. }
                )
            });
            assert_eq!(binds_accel, ray_query, "{kernel} on {walk}");
        }
        assert_eq!(
            sightline::gpu_kernel_source(kernel),
            sightline::gpu_kernel_source_for(kernel, false)
        );
    }
}

#[test]
fn every_shader_parses_and_validates() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/shaders");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("shaders/ exists") {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "wgsl") {
            continue;
        }
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        let source = std::fs::read_to_string(&path).unwrap();
        // Kernel files are compiled with common.wgsl in front, exactly as the engine does;
        // self-contained shaders are compiled as they are.
        let full = if name == "common" || SELF_CONTAINED.contains(&name.as_str()) {
            source
        } else if WALKS.contains(&name.as_str()) {
            // A walk is compiled inside each kernel; see `every_kernel_compiles_on_both_walks`.
            seen += 1;
            continue;
        } else {
            let full = sightline::gpu_kernel_source(&name);
            assert!(
                full.ends_with(source.trim_end()) || full.contains(&source),
                "{name}: engine source differs from the file"
            );
            full
        };
        let module = validate(&name, &full);
        if name != "common" {
            // A render shader names its stages `{name}_vertex` and `{name}_fragment`.
            assert!(
                module
                    .entry_points
                    .iter()
                    .any(|e| e.name == name || e.name.starts_with(&format!("{name}_"))),
                "{name}.wgsl has no entry point `{name}` (or `{name}_*`)"
            );
        }
        seen += 1;
    }
    assert!(seen >= 5, "found only {seen} shaders in {dir}");
}

#[test]
fn wgsl_structs_match_their_rust_twins() {
    let module = validate(
        "common",
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/common.wgsl"))
            .unwrap(),
    );
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    let mut structs = HashMap::new();
    for (handle, ty) in module.types.iter() {
        if let (Some(name), naga::TypeInner::Struct { members, span }) = (&ty.name, &ty.inner) {
            let offsets: Vec<(String, u32)> = members
                .iter()
                .map(|m| (m.name.clone().unwrap(), m.offset))
                .collect();
            structs.insert(name.clone(), (*span, layouter[handle].size, offsets));
        }
    }
    let check = |wgsl: &str, size: usize, fields: &[(&str, usize)]| {
        let (span, lsize, offsets) = structs
            .get(wgsl)
            .unwrap_or_else(|| panic!("no struct {wgsl} in common.wgsl"));
        assert_eq!(
            (*span as usize, *lsize as usize),
            (size, size),
            "size of {wgsl}"
        );
        for (f, off) in fields {
            let got = offsets
                .iter()
                .find(|(n, _)| n == f)
                .unwrap_or_else(|| panic!("{wgsl}.{f} missing"))
                .1;
            assert_eq!(got as usize, *off, "offset of {wgsl}.{f}");
        }
    };
    use sightline::bvh::{BvhNode, GpuTriangle};
    use sightline::trace::{HitRecord, Ray, Segment};
    check(
        "BvhNode",
        size_of::<BvhNode>(),
        &[
            ("x", offset_of!(BvhNode, x)),
            ("y", offset_of!(BvhNode, y)),
            ("z", offset_of!(BvhNode, z)),
            ("child", offset_of!(BvhNode, child)),
            ("count", offset_of!(BvhNode, count)),
        ],
    );
    check(
        "Triangle",
        size_of::<GpuTriangle>(),
        &[
            ("v0", 0),
            ("id", offset_of!(GpuTriangle, id)),
            ("v1", offset_of!(GpuTriangle, v1)),
            ("material", offset_of!(GpuTriangle, material)),
            ("v2", offset_of!(GpuTriangle, v2)),
            ("flags", offset_of!(GpuTriangle, flags)),
        ],
    );
    check(
        "Segment",
        size_of::<Segment>(),
        &[
            ("start", offset_of!(Segment, start)),
            ("end", offset_of!(Segment, end)),
        ],
    );
    check(
        "Ray",
        size_of::<Ray>(),
        &[
            ("origin", offset_of!(Ray, origin)),
            ("t_max", offset_of!(Ray, t_max)),
            ("dir", offset_of!(Ray, dir)),
        ],
    );
    check(
        "HitRecord",
        size_of::<HitRecord>(),
        &[
            ("normal", offset_of!(HitRecord, normal)),
            ("t", offset_of!(HitRecord, t)),
            ("triangle", offset_of!(HitRecord, triangle)),
            ("material", offset_of!(HitRecord, material)),
            ("back", offset_of!(HitRecord, back)),
        ],
    );
    check(
        "Params",
        size_of::<sightline::GpuParams>(),
        &[
            ("count", offset_of!(sightline::GpuParams, count)),
            ("mask", offset_of!(sightline::GpuParams, mask)),
            ("accumulate", offset_of!(sightline::GpuParams, accumulate)),
            ("stamp", offset_of!(sightline::GpuParams, stamp)),
        ],
    );
}

/// Size and member offsets of struct `name` in a shader file (a kernel file with common.wgsl
/// in front, as the engine compiles it).
fn struct_layout(file: &str, name: &str) -> (usize, HashMap<String, usize>) {
    let source = if SELF_CONTAINED.contains(&file) {
        let path = format!("{}/shaders/{file}.wgsl", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(path).unwrap()
    } else {
        sightline::gpu_kernel_source(file)
    };
    let module = validate(file, &source);
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    let (handle, ty) = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no struct {name} in {file}.wgsl"));
    let naga::TypeInner::Struct { members, .. } = &ty.inner else {
        panic!("{name} is not a struct")
    };
    let offsets = members
        .iter()
        .map(|m| (m.name.clone().unwrap(), m.offset as usize))
        .collect();
    (layouter[handle].size as usize, offsets)
}

#[test]
fn cover_field_structs_match_their_rust_twins() {
    use sightline::cover::field::{Face, FieldParams};
    for file in ["depth_map", "cover_field"] {
        let (size, offsets) = struct_layout(file, "Face");
        assert_eq!(size, size_of::<Face>(), "size of Face in {file}.wgsl");
        assert_eq!(offsets["view_proj"], offset_of!(Face, view_proj));
        assert_eq!(
            offsets["eye"],
            offset_of!(Face, eye),
            "Face.eye in {file}.wgsl"
        );
    }
    let (size, offsets) = struct_layout("cover_field", "FieldParams");
    assert_eq!(size, size_of::<FieldParams>(), "size of FieldParams");
    for (field, offset) in [
        ("count", offset_of!(FieldParams, count)),
        ("row_stride", offset_of!(FieldParams, row_stride)),
        ("observers", offset_of!(FieldParams, observers)),
        ("first_observer", offset_of!(FieldParams, first_observer)),
        ("face_resolution", offset_of!(FieldParams, face_resolution)),
        ("accumulate", offset_of!(FieldParams, accumulate)),
        ("radius", offset_of!(FieldParams, radius)),
        ("bias", offset_of!(FieldParams, bias)),
        ("heads", offset_of!(FieldParams, heads)),
    ] {
        assert_eq!(offsets[field], offset, "offset of FieldParams.{field}");
    }
}

/// Struct `name` in `file`.wgsl is `size` bytes with exactly `fields` at their offsets.
fn check(file: &str, name: &str, size: usize, fields: &[(&str, usize)]) {
    let (s, offsets) = struct_layout(file, name);
    assert_eq!(s, size, "size of {name} in {file}.wgsl");
    assert_eq!(
        offsets.len(),
        fields.len(),
        "{name} in {file}.wgsl has other fields"
    );
    for (f, o) in fields {
        assert_eq!(offsets[*f], *o, "offset of {name}.{f} in {file}.wgsl");
    }
}

#[test]
fn intervis_structs_match_their_rust_twins() {
    use sightline::intervis::measure::{Light, Tile};
    let light = [
        ("sun", offset_of!(Light, sun)),
        ("sky", offset_of!(Light, sky)),
        ("target_albedo", offset_of!(Light, target_albedo)),
        ("atlas", offset_of!(Light, atlas)),
    ];
    let tile = [
        ("view_proj", offset_of!(Tile, view_proj)),
        ("model", offset_of!(Tile, model)),
        ("eye", offset_of!(Tile, eye)),
        ("rect", offset_of!(Tile, rect)),
        ("view_pixel", offset_of!(Tile, view_pixel)),
    ];
    check("intervis_render", "Light", size_of::<Light>(), &light);
    for file in ["intervis_render", "intervis_reduce"] {
        check(file, "Tile", size_of::<Tile>(), &tile);
    }
}

#[test]
fn los_table_struct_matches_its_rust_twin() {
    use sightline::tables::GpuLosCall as LosCall;
    let (size, offsets) = struct_layout("los_table", "LosCall");
    assert_eq!(size, size_of::<LosCall>(), "size of LosCall");
    for (field, offset) in [
        ("count", offset_of!(LosCall, count)),
        ("skip", offset_of!(LosCall, skip)),
        ("first_row", offset_of!(LosCall, first_row)),
        ("row_step", offset_of!(LosCall, row_step)),
        ("rows", offset_of!(LosCall, rows)),
        ("waypoints", offset_of!(LosCall, waypoints)),
        ("eye_height", offset_of!(LosCall, eye_height)),
        ("range2", offset_of!(LosCall, range2)),
    ] {
        assert_eq!(offsets[field], offset, "offset of LosCall.{field}");
    }
    assert_eq!(offsets.len(), 8, "LosCall has fields the Rust twin lacks");
    // The data words follow the head directly: the host writes the row offsets at byte 32.
    let (_, input) = struct_layout("los_table", "LosInput");
    assert_eq!(
        input["data"],
        size_of::<LosCall>(),
        "offset of LosInput.data"
    );
}

#[test]
fn shadow_volume_structs_match_their_rust_twins() {
    use sightline::cover::regions::{Frame, Reduce, Tile};
    let frame = [
        ("anchor", offset_of!(Frame, anchor)),
        ("origin", offset_of!(Frame, origin)),
        ("cell", offset_of!(Frame, cell)),
        ("side", offset_of!(Frame, side)),
        ("y_top", offset_of!(Frame, y_top)),
        ("y_span", offset_of!(Frame, y_span)),
        ("postures", offset_of!(Frame, postures)),
        ("cells", offset_of!(Frame, cells)),
    ];
    check("shadow_volumes", "Frame", size_of::<Frame>(), &frame);
    let tile = [
        ("light", offset_of!(Tile, light)),
        ("lift", offset_of!(Tile, lift)),
        ("bit", offset_of!(Tile, bit)),
        ("pad0", offset_of!(Tile, pad)),
        ("pad1", offset_of!(Tile, pad) + 4),
    ];
    check("shadow_volumes", "Tile", size_of::<Tile>(), &tile);
    let reduce = [
        ("cells", offset_of!(Reduce, cells)),
        ("postures", offset_of!(Reduce, postures)),
        ("side", offset_of!(Reduce, side)),
        ("pad", offset_of!(Reduce, pad)),
    ];
    check("shadow_reduce", "Reduce", size_of::<Reduce>(), &reduce);
}
