//! The stages of `shaders/frame.wgsl` that make the GPU step's local frame, each run alone on
//! the device and beside its twin in `sweepcast::low_level::frame` on the same input: every
//! output equal, bit for bit.
//!
//! * `scene_bounds` and `frame`: the bounds' words and the step's parameters and dispatch
//!   made from them on the device (the Morton scale's division aside on adapters that do not
//!   round it correctly), equal to the twins' and to `StepParams::new`'s, on every scene in 3D
//!   and 2D, bodies in one point and in one cell of a wide grid, boxes wider than half a
//!   periodic box, worlds far from the origin and in large periodic boxes (across their
//!   faces, and with centres periods outside them), no body, one, a cluster across a periodic
//!   box's faces, every slice of a box occupied, every other one and tied gaps; also over a
//!   dispatch with a y dimension.
//!
//! Each entry point runs in a pipeline of its own (its bindings from the shader, the rest of
//! the file untouched) over buffers the test fills; buffers the stage writes start as `0xab`
//! bytes, so that an output it failed to write differs from the twin's.

mod common;

use common::{StageRunner, cast, unwritten};

use sweepcast::low_level::FRAME_WGSL;
use sweepcast::low_level::frame::{self as twin, BOUNDS_WORDS, FRAME_BINS};
use sweepcast::low_level::layout::{BodyRecord, StepParams, SweepDispatch, SweepParams};
use sweepcast::{MovingSphere, SweepOptions};
use testkit::Scene;

/// Scenes of every kind in 3D and 2D, bodies in one point and in one cell of a wide grid,
/// boxes wider than half a small periodic box, and worlds far from the origin and in large
/// periodic boxes.
fn scenes() -> Vec<(String, Vec<MovingSphere>, SweepOptions)> {
    let mut scenes = Vec::new();
    for scene in Scene::ALL {
        for dimensions in [3, 2] {
            let (bodies, options) = scene.bodies(3000, dimensions, 7);
            scenes.push((format!("{scene:?} {dimensions}D"), bodies, options));
        }
    }
    let point = MovingSphere::new(glam::Vec3::splat(1.5), 0.5, glam::Vec3::ZERO);
    scenes.push((
        "one point".into(),
        vec![point; 300],
        SweepOptions::default(),
    ));
    let mut cell: Vec<MovingSphere> = (0..300)
        .map(|i| MovingSphere::new(glam::Vec3::splat(i as f32 * 1e-6), 0.5, glam::Vec3::ZERO))
        .collect();
    cell.push(MovingSphere::new(
        glam::Vec3::splat(1e5),
        0.5,
        glam::Vec3::ZERO,
    ));
    scenes.push(("one cell".into(), cell, SweepOptions::default()));
    // Boxes wider than half a small periodic box, so that pairs meet through two images (the
    // validation of a step refuses such a box; the stages take it as given).
    let mut state = 5u32;
    let mut random = move || {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (state >> 8) as f32 / (1u32 << 24) as f32 * 10.0
    };
    let crowded: Vec<MovingSphere> = (0..60)
        .map(|_| {
            let center = glam::Vec3::new(random(), random(), random());
            MovingSphere::new(center, 2.6, glam::Vec3::new(0.3, 0.0, 0.0))
        })
        .collect();
    let small_box = sweepcast::PeriodicBox::cube(10.0).expect("a valid box");
    scenes.push((
        "boxes across half a periodic box".into(),
        crowded,
        SweepOptions::default().with_periodic_box(small_box),
    ));
    // Worlds far from the origin and in large periodic boxes, across their faces, and with
    // centres given more than a period outside the box: every branch of the local frame.
    for world in testkit::sparse_cube_far_away(3000, 7) {
        scenes.push((world.label, world.bodies, world.options));
    }
    let adversarial = testkit::Workload::adversarial(3).bodies;
    scenes.extend(testkit::in_large_boxes("adversarial", &adversarial));
    let in_cube = SweepOptions::default()
        .with_periodic_box(sweepcast::PeriodicBox::cube(1e6).expect("a valid box"));
    // (Few bodies: so far outside, each margin is 2⁻¹⁶ of the coordinates, and every pair
    // a candidate.)
    for corner in [-2.5e6, 2.5e6] {
        scenes.push((
            format!("periods outside cube(1e6), at {corner:e}"),
            testkit::sparse_cube(300, 7, glam::DVec3::splat(corner)),
            in_cube,
        ));
    }
    scenes
}

/// The scenes the frame is held to its twin on: [`scenes`], and no body, one body (in open
/// space and in a box), a cluster across two faces of a periodic box (centres given on both
/// sides of them), every slice of a box occupied, every other one (every gap tied), and two
/// equal gaps.
fn frame_scenes() -> Vec<(String, Vec<MovingSphere>, SweepOptions)> {
    let open = SweepOptions::default();
    let in_cube = |side: f32| {
        open.with_periodic_box(sweepcast::PeriodicBox::cube(side).expect("a valid box"))
    };
    let at =
        |x: f32, y: f32, z: f32| MovingSphere::new(glam::Vec3::new(x, y, z), 0.5, glam::Vec3::ZERO);
    let mut scenes = scenes();
    scenes.push(("no bodies".into(), Vec::new(), open));
    scenes.push(("no bodies in cube(100)".into(), Vec::new(), in_cube(100.0)));
    let one = MovingSphere::new(
        glam::Vec3::new(3.0, -4.0, 5.0),
        0.5,
        glam::Vec3::new(-1.0, 2.0, 0.0),
    );
    scenes.push(("one body".into(), vec![one], open));
    scenes.push(("one body in cube(100)".into(), vec![one], in_cube(100.0)));
    let mut rng = testkit::SplitMix64::new(11);
    let across: Vec<MovingSphere> = (0..500)
        .map(|_| {
            let center = glam::DVec3::new(
                rng.range(-5.0, 5.0),
                rng.range(95.0, 105.0),
                rng.range(40.0, 45.0),
            );
            MovingSphere::new(center.as_vec3(), 0.5, rng.in_ball(0.5, 3))
        })
        .collect();
    scenes.push((
        "a cluster across two faces of cube(100)".into(),
        across,
        in_cube(100.0),
    ));
    let side = FRAME_BINS as f32;
    let every: Vec<MovingSphere> = (0..FRAME_BINS)
        .map(|bin| at(bin as f32 + 0.5, bin as f32 + 0.5, side - bin as f32 - 0.5))
        .collect();
    scenes.push(("every slice occupied".into(), every, in_cube(side)));
    let every_other: Vec<MovingSphere> = (0..FRAME_BINS / 2)
        .map(|i| at(2.0 * i as f32 + 1.5, 2.0 * i as f32 + 0.5, 7.0))
        .collect();
    scenes.push((
        "every other slice occupied".into(),
        every_other,
        in_cube(side),
    ));
    let tied = vec![at(100.5, 100.5, 0.5), at(2148.5, 2147.5, 2049.5)];
    scenes.push(("two equal gaps".into(), tied, in_cube(side)));
    scenes
}

/// What `scene_bounds` and `frame` read of the host: the options and the count of
/// `records` (the periods of `options`), capacities, and frame fields that are not to be
/// read (the `0xab` bytes of an unwritten output).
fn frame_input(records: &[BodyRecord], options: &SweepOptions) -> StepParams {
    let sweep = SweepParams::new(options, 0);
    let unread = [f32::from_bits(0xabab_abab); 3];
    StepParams {
        period: sweep.period,
        flags: sweep.flags,
        inverse_period: sweep.inverse_period,
        body_count: records.len() as u32,
        origin: unread,
        candidate_capacity: 1000,
        morton_origin: unread,
        contact_capacity: 2000,
        morton_scale: unread,
        continuation_capacity: 3000,
    }
}

/// The parameters' words (bits), for comparisons to the bit.
fn words(params: &StepParams) -> [u32; 20] {
    bytemuck::cast(*params)
}

/// The words of `morton_scale` in [`StepParams`].
const MORTON_SCALE_WORDS: std::ops::Range<usize> = 16..19;

/// Holds the device's parameters to the twin's: every word to the bit but the Morton
/// scale's, a quotient that WGSL allows 2.5 ulps (so within 3 ulps of the host's correctly
/// rounded one), and those too where `division_is_exact` (Mesa's software adapters). The
/// step's grid does not read the scale.
fn assert_frame_equal(name: &str, device: &StepParams, twin: &StepParams, division_is_exact: bool) {
    let (device_words, twin_words) = (words(device), words(twin));
    for (word, (&ours, &theirs)) in device_words.iter().zip(&twin_words).enumerate() {
        if MORTON_SCALE_WORDS.contains(&word) && !division_is_exact {
            assert!(
                ours.abs_diff(theirs) <= 3,
                "{name}: Morton scale {word}: {ours:#x} beyond 3 ulps of {theirs:#x}"
            );
        } else {
            assert_eq!(
                ours, theirs,
                "{name}: word {word} of the parameters: {device:?} differs from {twin:?}"
            );
        }
    }
}

/// Whether `context` is one of Mesa's software adapters (lavapipe, llvmpipe), whose f32
/// division is correctly rounded.
fn division_is_exact(context: &sweepcast::gpu::GpuContext) -> bool {
    context.describe().contains("llvmpipe")
}

/// `scene_bounds` on the device over `workgroups`: the bounds' words.
fn bounds_on_device(
    stages: &StageRunner,
    records: &[BodyRecord],
    input: &StepParams,
    workgroups: [u32; 3],
) -> Vec<u32> {
    // A buffer of no bytes cannot be bound: one unread record.
    let stored = if records.is_empty() {
        &[BodyRecord::default()][..]
    } else {
        records
    };
    let out = stages.run_workgroups(
        "scene_bounds",
        None,
        workgroups,
        &[
            (1, bytemuck::cast_slice(stored)),
            (22, bytemuck::bytes_of(input)),
            (23, &vec![0; 4 * BOUNDS_WORDS]),
        ],
    );
    cast(&out[2], BOUNDS_WORDS)
}

/// `frame` on the device: the parameters and the dispatch it writes.
fn frame_on_device(
    stages: &StageRunner,
    input: &StepParams,
    bounds: &[u32],
) -> (StepParams, SweepDispatch) {
    let out = stages.run(
        "frame",
        None,
        1,
        &[
            (22, bytemuck::bytes_of(input)),
            (23, bytemuck::cast_slice(bounds)),
            (24, &unwritten::<StepParams>(1)),
            (25, &unwritten::<SweepDispatch>(1)),
        ],
    );
    (cast(&out[2], 1)[0], cast(&out[3], 1)[0])
}

/// The device's frame of every scene, from bodies that stay on it: `scene_bounds`' words
/// equal the twin's bit for bit, and `frame`'s parameters and dispatch equal the twin's bit
/// for bit (the Morton scale as [`assert_frame_equal`] says), and the twin's are
/// [`StepParams::new`]'s (its capacities aside). The frame fields of the input are `0xab`
/// bytes, so that a frame that read them, or failed to write its own, differs; the crafted
/// scenes' origins are checked by hand too.
#[test]
fn the_frame_stages_equal_their_twins() {
    let Some(context) = common::gpu_context("the_frame_stages_equal_their_twins") else {
        return;
    };
    let stages = StageRunner::new(&context, "frame.wgsl", FRAME_WGSL);
    let exact = division_is_exact(&context);
    let mut periodic_origins = 0;
    for (name, bodies, options) in frame_scenes() {
        let records: Vec<BodyRecord> = bodies.iter().map(|&body| body.into()).collect();
        let n = records.len();
        let input = frame_input(&records, &options);
        let mut bounds = vec![0; BOUNDS_WORDS];
        for i in 0..n {
            twin::scene_bounds(i, &input, &records, &mut bounds);
        }
        let workgroups = n.div_ceil(64).max(1) as u32;
        let device_bounds = bounds_on_device(&stages, &records, &input, [workgroups, 1, 1]);
        assert!(
            device_bounds == bounds,
            "{name}: the bounds differ from the twin's"
        );

        let (expected, expected_dispatch) = twin::frame(&input, &bounds);
        let (params, dispatch) = frame_on_device(&stages, &input, &device_bounds);
        assert_frame_equal(&name, &params, &expected, exact);
        assert_eq!(dispatch, expected_dispatch, "{name}: the dispatch");
        assert_eq!(
            dispatch,
            SweepDispatch::new(n as u32),
            "{name}: the dispatch"
        );
        let host = StepParams {
            candidate_capacity: input.candidate_capacity,
            contact_capacity: input.contact_capacity,
            continuation_capacity: input.continuation_capacity,
            ..StepParams::new(&records, &options)
        };
        assert_frame_equal(&format!("{name}: StepParams::new"), &params, &host, exact);
        // The crafted scenes' origins, by hand: the point of a path nearest 0; the start of
        // the slice after the longest gap, the first found of tied ones.
        let slice = 100.0 / FRAME_BINS as f32;
        match name.as_str() {
            "one body" => assert_eq!(params.origin, [2.0, -2.0, 5.0]),
            "one body in cube(100)" => {
                // Slices 122 and 3932 (-4 wrapped to 96): their starts, on f32's grid at
                // 100 (2⁻¹⁷).
                assert_eq!(
                    params.origin,
                    [122.0 * slice, 3932.0 * slice, 204.0 * slice]
                );
            }
            "a cluster across two faces of cube(100)" => {
                for (k, corner) in [95.0, 95.0, 40.0].into_iter().enumerate() {
                    let origin = params.origin[k];
                    assert!(
                        origin <= corner && origin > corner - slice,
                        "{name}: {origin}"
                    );
                }
            }
            "every slice occupied" => assert_eq!(params.origin, [0.0; 3]),
            "every other slice occupied" => assert_eq!(params.origin, [3.0, 2.0, 7.0]),
            "two equal gaps" => assert_eq!(params.origin, [2148.0, 100.0, 2049.0]),
            _ => {}
        }
        if params
            .origin
            .iter()
            .zip(params.period)
            .any(|(&o, l)| l > 0.0 && o > 0.0)
        {
            periodic_origins += 1;
        }
        eprintln!(
            "{name}: {n} bodies, origin {:?}, the frame equal to its twin",
            params.origin
        );
    }
    assert!(
        periodic_origins >= 5,
        "too few scenes exercise a periodic origin"
    );
}

/// `scene_bounds` indexes a dispatch with a y dimension as the per-body passes do (one of 2
/// by 3 workgroups here, where the step's have 65,535 along x), and reads no body past the
/// count: the last records lie far out and must not widen the bounds. `frame` sizes the
/// dispatch of more bodies than one dimension of workgroups holds.
#[test]
fn the_frame_stages_index_a_dispatch_in_two_dimensions() {
    let Some(context) = common::gpu_context("the_frame_stages_index_a_dispatch_in_two_dimensions")
    else {
        return;
    };
    let stages = StageRunner::new(&context, "frame.wgsl", FRAME_WGSL);
    let (bodies, options) = testkit::Scene::Periodic.bodies(380, 3, 5);
    let mut records: Vec<BodyRecord> = bodies.iter().map(|&body| body.into()).collect();
    let input = frame_input(&records, &options);
    let far = MovingSphere::new(glam::Vec3::splat(-1e30), 0.5, glam::Vec3::splat(1e29));
    records.resize(6 * 64, far.into());
    let mut bounds = vec![0; BOUNDS_WORDS];
    for i in 0..records.len() {
        twin::scene_bounds(i, &input, &records, &mut bounds);
    }
    let device_bounds = bounds_on_device(&stages, &records, &input, [2, 3, 1]);
    assert!(device_bounds == bounds, "the bounds differ from the twin's");
    let (expected, _) = twin::frame(&input, &bounds);
    let host = StepParams::new(&records[..380], &options);
    assert_eq!(expected.origin, host.origin);
    assert_eq!(expected.morton_origin, host.morton_origin);
    // Every body counted: a bound of the last ones in the dispatch's second row.
    let low_x = (0..380)
        .map(|i| records[i].center[0] + records[i].displacement[0].min(0.0))
        .fold(f32::INFINITY, f32::min);
    assert_eq!(twin::unordered(!device_bounds[0]), low_x);

    let many = StepParams {
        body_count: 5_000_000,
        ..input
    };
    let (params, dispatch) = frame_on_device(&stages, &many, &device_bounds);
    let (expected, expected_dispatch) = twin::frame(&many, &bounds);
    assert_frame_equal(
        "5,000,000 bodies",
        &params,
        &expected,
        division_is_exact(&context),
    );
    assert_eq!(dispatch, expected_dispatch);
    assert_eq!(
        (
            dispatch.workgroups_x,
            dispatch.workgroups_y,
            dispatch.pair_count
        ),
        (65_535, 2, 5_000_000)
    );
}
