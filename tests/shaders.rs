//! Every stage's WGSL (the data contract `shaders/shared.wgsl` followed by the stage's file)
//! parses and validates with naga, and the contract matches its Rust mirror in
//! `sweepcast::low_level::layout`: every struct's size and field offsets, every constant's value, every
//! entry point's workgroup size; the frame's and the grid's own structs and constants match
//! their mirrors in their twins, `sweepcast::low_level::frame` and `grid`. Needs no GPU.

use std::path::Path;

use naga::valid::{Capabilities, ValidationFlags, Validator};
use sweepcast::TimeOfImpact;
use sweepcast::low_level::layout::{
    BodyRecord, ContactRecord, EARLIEST_BODY, EARLIEST_NONE, EARLIEST_WALL, EarliestRecord,
    FLAG_PERIODIC, FLAG_SEPARATING_MISSES, ImpactRecord, KeyValue, LEAF, LIFT_LOG2,
    MAX_WORKGROUPS_PER_DIMENSION, MIN_NORMAL, MORTON_BITS, NO_TOUCH, SMALL_DIRECTION,
    STATUS_CONTACT, STATUS_MISS, STATUS_OVERLAPPING, SUBNORMAL_MARGIN, StepCounts, StepParams,
    SweepDispatch, SweepParams, TIME_MISS_BITS, TIME_OVERLAPPING, TINY_EXPONENT, WALL_PLANE,
    WALL_SEGMENT, WORKGROUP_SIZE, WallContactRecord, WallParams, WallRecord,
};
use sweepcast::low_level::{SHARED_WGSL, SWEEP_WGSL};

fn parse_and_validate(name: &str, source: &str) -> naga::Module {
    let module = naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|error| panic!("{}", error.emit_to_string_with_path(source, name)));
    Validator::new(ValidationFlags::all(), Capabilities::empty())
        .validate(&module)
        .unwrap_or_else(|error| panic!("{}", error.emit_to_string_with_path(source, name)));
    module
}

/// Every stage file in shaders/ with the contract prepended, as the crate compiles it.
#[test]
fn every_stage_parses_and_validates_after_the_contract() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let mut stages = 0;
    for entry in std::fs::read_dir(&dir).expect("shaders/ exists") {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.extension().is_some_and(|e| e == "wgsl") && name != "shared.wgsl" {
            let stage = std::fs::read_to_string(&path).expect("readable shader");
            // The grid calls the sweep's `sweep_pair`: the crate compiles it after sweep.wgsl.
            let before = if name == "grid.wgsl" {
                SWEEP_WGSL
            } else {
                SHARED_WGSL
            };
            parse_and_validate(&name, &format!("{before}{stage}"));
            stages += 1;
        }
    }
    assert!(stages >= 1, "no stage files found in {}", dir.display());
    parse_and_validate("shared.wgsl", SHARED_WGSL);
}

/// Size and member names and offsets of the WGSL struct `handle`, as naga lays it out.
fn struct_layout(
    module: &naga::Module,
    layouter: &naga::proc::Layouter,
    handle: naga::Handle<naga::Type>,
) -> (usize, Vec<(String, u32)>) {
    let naga::TypeInner::Struct { members, .. } = &module.types[handle].inner else {
        unreachable!("only structs are asked for");
    };
    let offsets = members
        .iter()
        .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
        .collect();
    (layouter[handle].size as usize, offsets)
}

/// The Rust struct's size, field names and offsets, in declaration order.
macro_rules! rust_layout {
    ($ty:ty: $($field:ident),+) => {
        (
            stringify!($ty),
            size_of::<$ty>(),
            vec![$((stringify!($field).to_string(), std::mem::offset_of!($ty, $field) as u32)),+],
        )
    };
}

#[test]
fn every_shared_struct_matches_its_rust_mirror() {
    let module = parse_and_validate("shared.wgsl", SHARED_WGSL);
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).expect("layout");
    let mirrors = [
        rust_layout!(BodyRecord: center, radius, displacement, groups),
        rust_layout!(ImpactRecord: point, time_of_impact, normal, status),
        rust_layout!(SweepParams: period, flags, inverse_period, pair_capacity),
        rust_layout!(SweepDispatch: workgroups_x, workgroups_y, workgroups_z, pair_count,
            requested_pairs, overflowed, _pad0, _pad1),
        rust_layout!(StepParams: period, flags, inverse_period, body_count, origin,
            candidate_capacity, morton_origin, contact_capacity, morton_scale,
            continuation_capacity),
        rust_layout!(StepCounts: valid, bodies, candidates, contacts, body_capacity,
            candidates_overflowed, unfinished_queries, saved_queries_overflowed,
            contacts_overflowed, invalid_bodies, _pad1, _pad2),
        rust_layout!(KeyValue: key, value),
        rust_layout!(ContactRecord: pair, _pad0, image, _pad1, impact),
        rust_layout!(WallRecord: point, kind, vector, _pad),
        rust_layout!(
            WallParams: period,
            flags,
            inverse_period,
            body_count,
            wall_count,
            _pad0,
            _pad1,
            _pad2
        ),
        rust_layout!(WallContactRecord: impact, wall, _pad0, _pad1, _pad2),
        rust_layout!(EarliestRecord: time_of_impact, other, status, kind, image, _pad),
    ];
    let mut structs = 0;
    for (handle, ty) in module.types.iter() {
        let (Some(name), naga::TypeInner::Struct { .. }) = (&ty.name, &ty.inner) else {
            continue;
        };
        structs += 1;
        let (_, rust_size, rust_offsets) = mirrors
            .iter()
            .find(|(rust_name, ..)| rust_name == name)
            .unwrap_or_else(|| panic!("struct {name} of shared.wgsl has no mirror in layout.rs"));
        let (size, offsets) = struct_layout(&module, &layouter, handle);
        assert_eq!(size, *rust_size, "size of {name}");
        assert_eq!(&offsets, rust_offsets, "fields of {name}");
    }
    assert_eq!(structs, mirrors.len(), "every mirror has its WGSL struct");
}

/// The frame's own constants are those of its twin (`low_level::frame`), and its entry
/// points run the contract's workgroup size (one invocation for `frame`).
#[test]
fn the_frame_constants_match_their_twins_mirrors() {
    use sweepcast::low_level::frame::{
        BOUNDS_WORDS, FRAME_BINS, FRAME_WORDS, INVALID_BODIES, OCCUPANCY,
    };
    let module = parse_and_validate("frame.wgsl", sweepcast::low_level::FRAME_WGSL);
    let mirrors = [
        ("FRAME_BINS", FRAME_BINS),
        ("FRAME_WORDS", FRAME_WORDS as u32),
        ("OCCUPANCY", OCCUPANCY as u32),
        ("INVALID_BODIES", INVALID_BODIES as u32),
        ("BOUNDS_WORDS", BOUNDS_WORDS as u32),
    ];
    assert_u32_constants_match(&module, "frame.wgsl", &mirrors);
    let size = |name: &str| workgroup_size(&module, name);
    assert_eq!(size("scene_bounds"), [WORKGROUP_SIZE, 1, 1]);
    assert_eq!(size("frame"), [1, 1, 1]);
}

/// The grid's structs and constants are those of its twin (`low_level::grid`), and its entry
/// points run the contract's workgroup size (one invocation for the planning passes).
#[test]
fn the_grid_matches_its_twins_mirrors() {
    use sweepcast::low_level::grid::{
        GRID_BUDGET, GRID_MAX_LEVELS, GRID_WORDS, GridCounts, GridEntry, GridLevel, GridParams,
        RESUME_HEAD, WALK_WORDS, WORD_CANDIDATES, WORD_CONTACTS, WORD_PENDING, WORD_RESUME_CHAIN,
        WORD_SAVED, WORD_SAVED_OVERFLOWED, WORD_UNFINISHED,
    };
    let module = parse_and_validate("grid.wgsl", sweepcast::low_level::GRID_WGSL);
    let mirrors = [
        rust_layout!(GridLevel: size, inverse, searches, population),
        rust_layout!(GridParams: level_count, table_bits, ratio_log2, spread_axes, corner_lo,
            single_span_log2, corner_hi, budget, levels),
        rust_layout!(GridEntry: lo, body, hi, groups),
        rust_layout!(GridCounts: valid, bodies, levels, unfinished, invalid_bodies, candidates,
            contacts, saved_overflowed),
    ];
    assert_structs_match(&module, "grid.wgsl", &mirrors);
    let constants = [
        ("GRID_MAX_LEVELS", GRID_MAX_LEVELS as u32),
        ("GRID_BUDGET", GRID_BUDGET),
        ("GRID_WORDS", GRID_WORDS as u32),
        ("WORD_UNFINISHED", WORD_UNFINISHED as u32),
        ("WORD_CANDIDATES", WORD_CANDIDATES as u32),
        ("WORD_CONTACTS", WORD_CONTACTS as u32),
        ("WORD_SAVED", WORD_SAVED as u32),
        ("WORD_PENDING", WORD_PENDING as u32),
        ("WORD_SAVED_OVERFLOWED", WORD_SAVED_OVERFLOWED as u32),
        ("WORD_RESUME_CHAIN", WORD_RESUME_CHAIN as u32),
        ("RESUME_HEAD", RESUME_HEAD as u32),
        ("WALK_WORDS", WALK_WORDS as u32),
    ];
    assert_u32_constants_match(&module, "grid.wgsl", &constants);
    let size = |name: &str| workgroup_size(&module, name);
    for name in [
        "grid_widths",
        "grid_keys",
        "grid_cells",
        "grid_gather",
        "grid_gather_counted",
        "grid_partners",
        "grid_records",
        "grid_resume",
    ] {
        assert_eq!(size(name), [WORKGROUP_SIZE, 1, 1], "{name}");
    }
    for name in [
        "grid_frame",
        "grid_plan",
        "grid_hits_dispatch",
        "grid_resume_dispatch",
        "grid_finish",
    ] {
        assert_eq!(size(name), [1, 1, 1], "{name}");
    }
}

/// A Rust struct as `rust_layout!` gives it: its name, size and fields with their offsets.
type Mirror = (&'static str, usize, Vec<(String, u32)>);

/// Each of `mirrors` (a Rust struct's name, size and field offsets) has a struct of that name
/// in `module` (of `file`) with the same size and fields.
fn assert_structs_match(module: &naga::Module, file: &str, mirrors: &[Mirror]) {
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).expect("layout");
    for (name, rust_size, rust_offsets) in mirrors {
        let (handle, _) = module
            .types
            .iter()
            .find(|(_, ty)| ty.name.as_deref() == Some(*name))
            .unwrap_or_else(|| panic!("{file} has no struct {name}"));
        let (size, offsets) = struct_layout(module, &layouter, handle);
        assert_eq!(size, *rust_size, "size of {name}");
        assert_eq!(&offsets, rust_offsets, "fields of {name}");
    }
}

/// Each of `mirrors` (a constant's name and the Rust value) is a u32 constant of `module` (of
/// `file`) with that value.
fn assert_u32_constants_match(module: &naga::Module, file: &str, mirrors: &[(&str, u32)]) {
    for &(name, rust) in mirrors {
        let (_, constant) = module
            .constants
            .iter()
            .find(|(_, constant)| constant.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("{file} has no constant {name}"));
        let naga::Expression::Literal(naga::Literal::U32(value)) =
            module.global_expressions[constant.init]
        else {
            panic!("{name}: a u32 literal expected");
        };
        assert_eq!(value, rust, "{name}");
    }
}

/// The workgroup size of `module`'s entry point named `name`.
fn workgroup_size(module: &naga::Module, name: &str) -> [u32; 3] {
    module
        .entry_points
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("entry point {name}"))
        .workgroup_size
}

/// A constant's value as WGSL declares it.
#[derive(Debug, PartialEq)]
enum Value {
    U32(u32),
    F32(f32),
}

#[test]
fn every_shared_constant_matches_its_rust_mirror() {
    let module = parse_and_validate("shared.wgsl", SHARED_WGSL);
    let mirrors = [
        ("WALL_SEGMENT", Value::U32(WALL_SEGMENT)),
        ("WALL_PLANE", Value::U32(WALL_PLANE)),
        ("STATUS_MISS", Value::U32(STATUS_MISS)),
        ("STATUS_CONTACT", Value::U32(STATUS_CONTACT)),
        ("STATUS_OVERLAPPING", Value::U32(STATUS_OVERLAPPING)),
        ("FLAG_PERIODIC", Value::U32(FLAG_PERIODIC)),
        ("FLAG_SEPARATING_MISSES", Value::U32(FLAG_SEPARATING_MISSES)),
        ("WORKGROUP_SIZE", Value::U32(WORKGROUP_SIZE)),
        (
            "MAX_WORKGROUPS_PER_DIMENSION",
            Value::U32(MAX_WORKGROUPS_PER_DIMENSION),
        ),
        ("TIME_MISS_BITS", Value::U32(TIME_MISS_BITS)),
        ("TIME_OVERLAPPING", Value::F32(TIME_OVERLAPPING)),
        ("MIN_NORMAL", Value::F32(MIN_NORMAL)),
        ("NO_TOUCH", Value::F32(NO_TOUCH)),
        ("LIFT_LOG2", Value::U32(LIFT_LOG2)),
        ("TINY_EXPONENT", Value::U32(TINY_EXPONENT)),
        ("SMALL_DIRECTION", Value::F32(SMALL_DIRECTION)),
        ("SUBNORMAL_MARGIN", Value::F32(SUBNORMAL_MARGIN)),
        ("MORTON_BITS", Value::U32(MORTON_BITS)),
        ("LEAF", Value::U32(LEAF)),
        ("EARLIEST_NONE", Value::U32(EARLIEST_NONE)),
        ("EARLIEST_BODY", Value::U32(EARLIEST_BODY)),
        ("EARLIEST_WALL", Value::U32(EARLIEST_WALL)),
    ];
    let mut constants = 0;
    for (_, constant) in module.constants.iter() {
        let name = constant.name.as_deref().expect("named constants");
        constants += 1;
        let value = match module.global_expressions[constant.init] {
            naga::Expression::Literal(naga::Literal::U32(value)) => Value::U32(value),
            naga::Expression::Literal(naga::Literal::F32(value)) => Value::F32(value),
            ref other => panic!("{name}: a literal expected, found {other:?}"),
        };
        let (_, rust) = mirrors
            .iter()
            .find(|(rust_name, _)| *rust_name == name)
            .unwrap_or_else(|| panic!("constant {name} of shared.wgsl has no mirror in layout.rs"));
        assert_eq!(&value, rust, "{name}");
    }
    assert_eq!(
        constants,
        mirrors.len(),
        "every mirror has its WGSL constant"
    );
}

#[test]
fn entry_points_run_the_contract_workgroup_size() {
    let module = parse_and_validate("sweep stage", SWEEP_WGSL);
    let size = |name: &str| workgroup_size(&module, name);
    assert_eq!(size("main"), [WORKGROUP_SIZE, 1, 1]);
    assert_eq!(size("times_main"), [WORKGROUP_SIZE, 1, 1]);
    assert_eq!(size("prepare_indirect"), [1, 1, 1]);
}

/// The times-only encoding's constants are those of [`TimeOfImpact`], which reads them back.
#[test]
fn the_times_encoding_is_that_of_time_of_impact() {
    let miss: TimeOfImpact = bytemuck::cast(TIME_MISS_BITS);
    assert_eq!(miss, TimeOfImpact::MISS);
    assert_eq!(miss.get(), None);
    assert_eq!(
        bytemuck::cast::<f32, TimeOfImpact>(TIME_OVERLAPPING).status(),
        Some(sweepcast::ImpactStatus::Overlapping)
    );
}
