//! One test per row of the bad-input table (`docs/guarantees.md`, "Bad input") that names this
//! file: each gets its typed error, from the CPU batch and from the GPU pipeline alike, before
//! any work is done. The last test checks that every test the table names here exists.

mod common;

use glam::Vec3;
use sweepcast::SweepOptions;
#[cfg(feature = "gpu")]
use sweepcast::gpu::SweepPipeline;
use sweepcast::{BodyField, Error, Impact, MovingSphere, Wall, cpu};

fn bodies() -> Vec<MovingSphere> {
    (0..4)
        .map(|i| MovingSphere::new(Vec3::new(3.0 * i as f32, 0.0, 0.0), 1.0, Vec3::X))
        .collect()
}

const PAIRS: [[u32; 2]; 3] = [[0, 1], [1, 2], [2, 3]];

/// Runs the CPU batch and (with the `gpu` feature, when an adapter exists) the GPU on the
/// same input.
#[cfg_attr(not(feature = "gpu"), allow(unused_variables))]
fn both(
    test: &str,
    bodies: &[MovingSphere],
    pairs: &[[u32; 2]],
) -> Vec<Result<Vec<Option<Impact>>, Error>> {
    #[allow(unused_mut)]
    let mut results = vec![cpu::sweep_batch(bodies, pairs, SweepOptions::DEFAULT)];
    #[cfg(feature = "gpu")]
    if let Some(context) = common::gpu_context(test) {
        results.push(SweepPipeline::new(&context).unwrap().sweep(
            bodies,
            pairs,
            SweepOptions::DEFAULT,
        ));
    }
    results
}

fn assert_non_finite(test: &str, bodies: &[MovingSphere], body: usize, field: BodyField) {
    for result in both(test, bodies, &PAIRS) {
        match result {
            Err(Error::NonFinite { body: b, field: f }) => {
                assert_eq!((b, f), (body, field), "{test}")
            }
            other => panic!("{test}: expected NonFinite, got {other:?}"),
        }
    }
}

#[test]
fn nan_center_is_rejected_naming_the_body() {
    let mut b = bodies();
    b[2].center.y = f32::NAN;
    assert_non_finite("nan_center", &b, 2, BodyField::Center);
}

#[test]
fn infinite_center_is_rejected() {
    let mut b = bodies();
    b[0].center.z = f32::NEG_INFINITY;
    assert_non_finite("infinite_center", &b, 0, BodyField::Center);
}

#[test]
fn nan_or_infinite_radius_is_rejected() {
    let mut b = bodies();
    b[1].radius = f32::NAN;
    assert_non_finite("nan_radius", &b, 1, BodyField::Radius);
    b[1].radius = f32::INFINITY;
    assert_non_finite("infinite_radius", &b, 1, BodyField::Radius);
}

#[test]
fn nan_or_infinite_displacement_is_rejected() {
    let mut b = bodies();
    b[3].displacement.x = f32::INFINITY;
    assert_non_finite("infinite_displacement", &b, 3, BodyField::Displacement);
    b[3].displacement.x = f32::NAN;
    assert_non_finite("nan_displacement", &b, 3, BodyField::Displacement);
}

#[test]
fn negative_radius_is_rejected_but_zero_and_negative_zero_are_points() {
    let mut b = bodies();
    b[2].radius = -0.5;
    for result in both("negative_radius", &b, &PAIRS) {
        match result {
            Err(
                error @ Error::NegativeRadius {
                    body: 2,
                    radius: -0.5,
                },
            ) => {
                assert!(error.to_string().contains("body 2"), "{error}");
            }
            other => panic!("expected NegativeRadius, got {other:?}"),
        }
    }
    for radius in [0.0, -0.0] {
        b[2].radius = radius;
        for result in both("zero_radius", &b, &PAIRS) {
            assert_eq!(result.expect("a point is a valid body").len(), PAIRS.len());
        }
    }
}

#[test]
fn pair_index_out_of_range_is_rejected_naming_the_pair() {
    let pairs = [[0, 1], [1, 2], [3, 4]];
    for result in both("pair_out_of_range", &bodies(), &pairs) {
        match result {
            Err(
                error @ Error::PairIndexOutOfRange {
                    pair: 2,
                    index: 4,
                    body_count: 4,
                },
            ) => {
                assert!(error.to_string().contains("pair 2"), "{error}");
            }
            other => panic!("expected PairIndexOutOfRange, got {other:?}"),
        }
    }
    // u32::MAX must not wrap into range.
    for result in both("pair_u32_max", &bodies(), &[[u32::MAX, 0]]) {
        assert!(matches!(
            result,
            Err(Error::PairIndexOutOfRange {
                index: u32::MAX,
                ..
            })
        ));
    }
}

#[test]
fn pairs_without_bodies_are_out_of_range() {
    for result in both("no_bodies", &[], &[[0, 0]]) {
        assert!(
            matches!(
                result,
                Err(Error::PairIndexOutOfRange { body_count: 0, .. })
            ),
            "{result:?}"
        );
    }
}

#[test]
fn empty_batch_returns_empty_without_touching_the_device() {
    for result in both("empty_batch", &bodies(), &[]) {
        assert_eq!(result.expect("empty is fine").len(), 0);
    }
    for result in both("empty_everything", &[], &[]) {
        assert_eq!(result.expect("empty is fine").len(), 0);
    }
    #[cfg(feature = "gpu")]
    if let Some(context) = common::gpu_context("empty_batch_allocates_nothing") {
        let pipeline = SweepPipeline::new(&context).unwrap();
        let before = pipeline.device_memory_bytes();
        assert!(
            pipeline
                .sweep(&bodies(), &[], SweepOptions::DEFAULT)
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            pipeline.device_memory_bytes(),
            before,
            "no buffer was created"
        );
    }
}

#[test]
fn a_body_paired_with_itself_overlaps_itself() {
    for result in both("self_pair", &bodies(), &[[1, 1]]) {
        let impact = result.unwrap()[0].expect("a body overlaps itself");
        assert!(impact.is_overlapping());
        assert_eq!(impact.time_of_impact, 0.0);
    }
}

#[test]
#[cfg(feature = "gpu")]
fn more_bodies_than_one_binding_holds_is_rejected() {
    let Some(context) = common::gpu_context("too_many_bodies") else {
        return;
    };
    let pipeline = SweepPipeline::new(&context).unwrap();
    let max = pipeline.max_bodies();
    // Software adapters allow 128 MiB bindings (4 Mi bodies); skip the allocation on devices
    // whose limit would make this test hold gigabytes.
    if max > 16 << 20 {
        eprintln!("too_many_bodies: this device takes {max} bodies; not allocating {max} + 1");
        return;
    }
    let bodies = vec![MovingSphere::default(); max + 1];
    match pipeline.sweep(&bodies, &[[0, 1]], SweepOptions::DEFAULT) {
        Err(error @ Error::TooManyBodies { count, max: limit }) => {
            assert_eq!((count, limit), (max + 1, max));
            assert!(error.to_string().contains("split the world"), "{error}");
        }
        other => panic!("expected TooManyBodies, got {:?}", other.map(|v| v.len())),
    }
    // The largest allowed batch of bodies still works.
    assert_eq!(
        pipeline
            .sweep(&bodies[..max], &[[0, 1]], SweepOptions::DEFAULT)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn the_fast_batch_rejects_bad_input_like_the_others() {
    let mut nan = bodies();
    nan[1].displacement.z = f32::NAN;
    let mut negative = bodies();
    negative[0].radius = -1.0;
    type Case = (&'static str, Vec<MovingSphere>, Vec<[u32; 2]>);
    let cases: [Case; 4] = [
        ("nan", nan, PAIRS.to_vec()),
        ("negative", negative, PAIRS.to_vec()),
        ("out of range", bodies(), vec![[0, 9]]),
        ("no bodies", vec![], vec![[0, 0]]),
    ];
    for (name, bodies, pairs) in cases {
        let mut times = vec![sweepcast::TimeOfImpact::MISS; 3];
        let fast = cpu::times_of_impact_into(&bodies, &pairs, SweepOptions::DEFAULT, &mut times)
            .unwrap_err();
        let batch = cpu::sweep_batch(&bodies, &pairs, SweepOptions::DEFAULT).unwrap_err();
        assert_eq!(format!("{fast:?}"), format!("{batch:?}"), "{name}");
        assert!(
            times.is_empty(),
            "{name}: nothing is left in the output on error"
        );
    }
    let mut times = vec![sweepcast::TimeOfImpact::MISS; 3];
    cpu::times_of_impact_into(&bodies(), &[], SweepOptions::DEFAULT, &mut times).unwrap();
    assert!(times.is_empty(), "an empty batch gives an empty result");
}

/// The bad-input table, as `docs/guarantees.md` gives it: its rows name the tests that hold
/// them, `errors.rs` among them.
const GUARANTEES: &str = include_str!("../docs/guarantees.md");

#[test]
fn every_test_the_bad_input_table_names_in_this_file_exists() {
    let table = GUARANTEES
        .split("\n## Bad input\n")
        .nth(1)
        .expect("docs/guarantees.md has a section \"Bad input\"")
        .split("\n## ")
        .next()
        .unwrap();
    let this_file = include_str!("errors.rs");
    let mut named = Vec::new();
    for row in table.lines().filter(|line| line.starts_with('|')) {
        // Each `errors.rs`: `name`, `name` runs to the next file the row names (after a ';').
        for (at, file) in row.match_indices("`errors.rs`:") {
            let names = &row[at + file.len()..];
            let names = names.split([';', '|']).next().unwrap();
            named.extend(names.split('`').skip(1).step_by(2).map(str::to_owned));
        }
    }
    assert!(
        named.len() >= 10,
        "the table names only {} tests of errors.rs: {named:?}",
        named.len()
    );
    for name in &named {
        // `#[test]`, then any attributes (`#[cfg(feature = "gpu")]`), then the function.
        let is_test = this_file
            .match_indices(&format!("\nfn {name}()"))
            .any(|(at, _)| {
                this_file[..at]
                    .lines()
                    .rev()
                    .take_while(|line| line.starts_with("#["))
                    .any(|line| line == "#[test]")
            });
        assert!(
            is_test,
            "docs/guarantees.md names `{name}` in errors.rs, which has no such test"
        );
    }
}

/// The walls' earliest contacts name each body by a `u32` index: more bodies than that names
/// are `TooManyBodies` before anything is read (they wrapped the index, naming another body).
/// Bodies of a type of no size, so that 2³² + 1 of them take no memory.
#[test]
fn more_bodies_than_u32_indices_name_is_rejected_by_the_walls_contacts() {
    #[derive(Copy, Clone)]
    struct Point;
    impl From<Point> for MovingSphere {
        fn from(_: Point) -> Self {
            MovingSphere::default()
        }
    }
    let most = u32::MAX as usize + 1;
    let bodies = vec![Point; most + 1];
    let walls = [Wall::plane(Vec3::ZERO, Vec3::X)];
    match cpu::earliest_wall_contacts(&bodies, &walls, SweepOptions::DEFAULT) {
        Err(Error::TooManyBodies { count, max }) => assert_eq!((count, max), (most + 1, most)),
        other => panic!("expected TooManyBodies, got {:?}", other.map(|v| v.len())),
    }
}

/// An earliest record read from a buffer decodes to a contact only where its time is one of
/// the step's: a NaN, negative or late time is no contact (as an unknown kind or status is),
/// not a contact at that time.
#[test]
fn an_earliest_record_whose_time_is_not_in_the_step_decodes_to_nothing() {
    use sweepcast::low_level::layout::{EARLIEST_BODY, EarliestRecord, STATUS_CONTACT};
    let record = |time_of_impact| EarliestRecord {
        time_of_impact,
        other: 1,
        status: STATUS_CONTACT,
        kind: EARLIEST_BODY,
        image: [0; 3],
        _pad: 0,
    };
    for time in [0.0, 0.5, 1.0] {
        assert_eq!(record(time).decode().map(|e| e.time_of_impact), Some(time));
    }
    for time in [f32::NAN, -0.25, 1.5, f32::INFINITY] {
        assert!(record(time).decode().is_none(), "{time}");
    }
}
