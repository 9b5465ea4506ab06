//! Every WGSL shader parses and validates with naga, and its structs have the byte layout of
//! their Rust copies in `sweepcast::gpu::layout`. Needs no GPU.

use std::path::Path;

use naga::valid::{Capabilities, ValidationFlags, Validator};
use sweepcast::gpu::layout::{GpuBody, ImpactRecord, Params, WORKGROUP_SIZE};

fn parse_and_validate(path: &Path) -> naga::Module {
    let source = std::fs::read_to_string(path).expect("readable shader");
    let module = naga::front::wgsl::parse_str(&source).unwrap_or_else(|error| {
        panic!(
            "{}",
            error.emit_to_string_with_path(&source, &path.display().to_string())
        )
    });
    Validator::new(ValidationFlags::all(), Capabilities::empty())
        .validate(&module)
        .unwrap_or_else(|error| {
            panic!(
                "{}",
                error.emit_to_string_with_path(&source, &path.display().to_string())
            )
        });
    module
}

#[test]
fn every_shader_parses_and_validates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("shaders/ exists") {
        let path = entry.expect("directory entry").path();
        if path.extension().is_some_and(|e| e == "wgsl") {
            parse_and_validate(&path);
            count += 1;
        }
    }
    assert!(count >= 1, "no .wgsl files found in {}", dir.display());
}

#[test]
fn the_embedded_sweep_source_is_the_file() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders/sweep.wgsl");
    assert_eq!(
        sweepcast::gpu::SWEEP_WGSL,
        std::fs::read_to_string(path).unwrap()
    );
}

/// Size and member offsets of the WGSL struct `name`, as naga lays it out.
fn struct_layout(module: &naga::Module, name: &str) -> (u32, Vec<(String, u32)>) {
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).expect("layout");
    let (handle, ty) = module
        .types
        .iter()
        .find(|(_, ty)| ty.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("struct {name} not in the shader"));
    let naga::TypeInner::Struct { members, .. } = &ty.inner else {
        panic!("{name} is not a struct");
    };
    let offsets = members
        .iter()
        .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
        .collect();
    (layouter[handle].size, offsets)
}

/// The Rust struct's field names and offsets, in declaration order.
macro_rules! rust_offsets {
    ($ty:ty: $($field:ident),+) => {
        vec![$((stringify!($field).to_string(), std::mem::offset_of!($ty, $field) as u32)),+]
    };
}

#[test]
fn shader_structs_match_their_rust_copies() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders/sweep.wgsl");
    let module = parse_and_validate(&path);
    let expected = [
        (
            "Body",
            size_of::<GpuBody>(),
            rust_offsets!(GpuBody: center, radius, displacement, _pad),
        ),
        (
            "ImpactRecord",
            size_of::<ImpactRecord>(),
            rust_offsets!(ImpactRecord: point, time_of_impact, normal, status),
        ),
        (
            "Params",
            size_of::<Params>(),
            rust_offsets!(Params: pair_count, _pad),
        ),
    ];
    for (name, rust_size, rust_offsets) in expected {
        let (size, offsets) = struct_layout(&module, name);
        assert_eq!(size as usize, rust_size, "size of {name}");
        if name == "Params" {
            // The shader spells the padding as three u32 fields, Rust as one array.
            assert_eq!(offsets[0], rust_offsets[0], "{name}");
        } else {
            assert_eq!(offsets, rust_offsets, "fields of {name}");
        }
    }

    let entry = module
        .entry_points
        .iter()
        .find(|e| e.name == "main")
        .expect("main");
    assert_eq!(entry.workgroup_size, [WORKGROUP_SIZE, 1, 1]);
}
