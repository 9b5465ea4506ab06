//! The sweep options' typed errors on every batch path: a box too small for a body
//! (`Error::PeriodicBoxTooSmall`), a centre too far out (`Error::OutsidePeriodicBox`), an
//! invalid box (`Error::InvalidPeriodicBox`), and an axis of infinite period not wrapping.

mod common;

use common::options::*;
use glam::{Vec2, Vec3};
use sweepcast::TimeOfImpact;
use sweepcast::cpu;
use sweepcast::{Error, MovingSphere, PeriodicBox, SweepOptions, low_level::MAX_MAGNITUDE};

// ---------------------------------------------------------------------------------------
// Typed errors
// ---------------------------------------------------------------------------------------

/// Every batch path with `options` rejects `bodies` with `PeriodicBoxTooSmall` naming `body`
/// and `axis`, with the body's reach and the axis's period.
fn assert_too_small(
    test: &str,
    bodies: &[MovingSphere],
    options: SweepOptions,
    body: usize,
    axis: usize,
) {
    let culprit = bodies[body];
    let expected = Error::PeriodicBoxTooSmall {
        body,
        axis,
        reach: (f64::from(culprit.radius) + f64::from(culprit.displacement[axis].abs())) as f32,
        period: options.periodic_box.expect("a box").period()[axis],
    };
    assert_rejected(test, bodies, options, &expected);
}

/// Every batch path with `options` rejects `bodies` with `expected` (compared by its
/// message, which names every field).
fn assert_rejected(test: &str, bodies: &[MovingSphere], options: SweepOptions, expected: &Error) {
    let periodic_box = options.periodic_box.expect("a box");
    let pairs: Vec<[u32; 2]> = (0..bodies.len() as u32 - 1).map(|i| [i, i + 1]).collect();
    let check = |path: &str, result: Result<(), Error>| match result {
        Err(error) => assert_eq!(error.to_string(), expected.to_string(), "{test}: {path}"),
        Ok(()) => panic!("{test}: {path}: expected {expected}, got Ok"),
    };
    check(
        "validate_periodic_reach",
        sweepcast::low_level::validate_periodic_reach(bodies, &periodic_box),
    );
    check(
        "CPU batch",
        cpu::sweep_batch(bodies, &pairs, options).map(drop),
    );
    let mut times = vec![TimeOfImpact::MISS; 5];
    check(
        "fast batch",
        cpu::times_of_impact_into(bodies, &pairs, options, &mut times),
    );
    assert!(
        times.is_empty(),
        "{test}: the fast batch leaves its times empty on error"
    );
    #[cfg(feature = "gpu")]
    if let Some(pipeline) = common::shared_pipeline(test) {
        check("GPU", pipeline.sweep(bodies, &pairs, options).map(drop));
        check(
            "GPU, no pairs",
            pipeline.sweep(bodies, &[], options).map(drop),
        );
    }
    // The bodies are checked even when no pair names them.
    check(
        "CPU batch, no pairs",
        cpu::sweep_batch(bodies, &[], options).map(drop),
    );
    check(
        "fast batch, no pairs",
        cpu::times_of_impact_into(bodies, &[], options, &mut times),
    );
    // Without the box the same bodies are valid.
    let unboxed = SweepOptions {
        periodic_box: None,
        ..options
    };
    cpu::sweep_batch(bodies, &pairs, unboxed).expect("valid without a box");
}

/// A centre 2²⁴ periods or more from the origin along an axis that wraps is a typed error on
/// every path, naming body and axis; just inside the limit is accepted.
#[test]
fn a_centre_beyond_two_to_the_24_periods_is_a_typed_error() {
    const TEST: &str = "a_centre_beyond_two_to_the_24_periods_is_a_typed_error";
    // Wraps on x and y only: z may lie anywhere.
    let periodic_box = PeriodicBox::new(Vec3::new(4.0, 2.0, f32::INFINITY)).unwrap();
    let options = SweepOptions::DEFAULT.with_periodic_box(periodic_box);
    let fine = sphere([1.0, 1.0, 1e30], 0.25, [0.1, 0.0, 0.0]);
    let limit_y = 2.0 * sweepcast::low_level::MAX_PERIODS as f32;
    for (body, axis, culprit) in [
        (1, 1, sphere([1.0, limit_y, 0.0], 0.25, [0.0; 3])),
        (2, 1, sphere([1.0, -limit_y, 0.0], 0.25, [0.0; 3])),
        (0, 0, sphere([2f32.powi(121), 1.0, 0.0], 0.0, [0.0; 3])),
    ] {
        let mut bodies = vec![fine; 3];
        bodies[body] = culprit;
        let expected = Error::OutsidePeriodicBox {
            body,
            axis,
            center: culprit.center[axis],
            period: periodic_box.period()[axis],
        };
        assert_rejected(TEST, &bodies, options, &expected);
        // Just inside the limit, accepted.
        bodies[body].center[axis] = below(bodies[body].center[axis].abs().min(limit_y));
        cpu::sweep_batch(&bodies, &[[0, 1], [1, 2]], options).expect("inside the limit");
    }
}

#[test]
fn a_box_too_small_for_a_body_is_a_typed_error_naming_body_and_axis() {
    const TEST: &str = "a_box_too_small_for_a_body_is_a_typed_error_naming_body_and_axis";
    // Limits: 10 on x, 5 on y, 10 on z.
    let periodic_box = PeriodicBox::new(Vec3::new(40.0, 20.0, 40.0)).unwrap();
    let fine = |i: usize| sphere([4.0 * i as f32 + 1.0, 10.0, 10.0], 1.0, [1.0, -1.0, 0.5]);
    let bodies = |culprit: usize, body: MovingSphere| -> Vec<MovingSphere> {
        (0..5)
            .map(|i| if i == culprit { body } else { fine(i) })
            .collect()
    };
    for options in [SweepOptions::DEFAULT, SweepOptions::event_driven()] {
        let options = options.with_periodic_box(periodic_box);
        // A radius too large for y alone (x and z fit).
        let big = sphere([5.0, 5.0, 5.0], 5.0, [0.0; 3]);
        assert_too_small(TEST, &bodies(2, big), options, 2, 1);
        // Motion too large along z.
        let fast = sphere([5.0, 5.0, 5.0], 1.0, [0.0, 0.0, 9.5]);
        assert_too_small(TEST, &bodies(1, fast), options, 1, 2);
        // Exactly at the limit along x (1 + 9 == 10), moving backwards.
        let at_limit = sphere([5.0, 5.0, 5.0], 1.0, [-9.0, 0.0, 0.0]);
        assert_too_small(TEST, &bodies(3, at_limit), options, 3, 0);
        // Exactly at the limit along y (0.5 + 4.5 == 5).
        let at_limit = sphere([5.0, 5.0, 5.0], 0.5, [0.0, 4.5, 0.0]);
        assert_too_small(TEST, &bodies(4, at_limit), options, 4, 1);
        // A radius at the limit of every axis: the first axis that fails is named.
        let huge = sphere([5.0, 5.0, 5.0], 10.0, [0.0; 3]);
        assert_too_small(TEST, &bodies(0, huge), options, 0, 0);
    }

    // Just below the limit is accepted on every path, and its answers pass the bound.
    let just_below = [
        sphere(
            [5.0, 5.0, 5.0],
            1.0,
            [-largest_reach_below(10.0, 1.0), 0.0, 0.0],
        ),
        sphere(
            [5.0, 5.0, 5.0],
            0.5,
            [0.0, largest_reach_below(5.0, 0.5), 0.0],
        ),
        sphere(
            [5.0, 5.0, 5.0],
            0.5,
            [0.0, 0.0, largest_reach_below(10.0, 0.5)],
        ),
        sphere([5.0, 5.0, 5.0], below(5.0), [0.0; 3]),
    ];
    for (k, body) in just_below.into_iter().enumerate() {
        let world = bodies(k, body);
        let pairs: Vec<[u32; 2]> = (0..5).flat_map(|i| (0..5).map(move |j| [i, j])).collect();
        for options in [SweepOptions::DEFAULT, SweepOptions::event_driven()] {
            sweep_every_path(
                TEST,
                &format!("just below the limit {k}"),
                &world,
                &pairs,
                options.with_periodic_box(periodic_box),
            );
        }
    }
}

#[test]
fn invalid_periodic_boxes_are_typed_errors() {
    let invalid = |period: Vec3, axis: usize| match PeriodicBox::new(period) {
        Err(Error::InvalidPeriodicBox { axis: a, period: p }) => {
            assert_eq!(a, axis, "{period}");
            assert!(
                p.to_bits() == period[axis].to_bits() || (p.is_nan() && period[axis].is_nan()),
                "{period}: reported {p}"
            );
        }
        other => panic!("{period}: expected InvalidPeriodicBox, got {other:?}"),
    };
    let inf = f32::INFINITY;
    invalid(Vec3::new(40.0, f32::NAN, 40.0), 1);
    invalid(Vec3::new(40.0, 40.0, 0.0), 2);
    invalid(Vec3::new(-0.0, 40.0, 40.0), 0);
    invalid(Vec3::new(-5.0, 40.0, 40.0), 0);
    invalid(Vec3::new(40.0, f32::MAX, 40.0), 1);
    invalid(Vec3::new(40.0, 40.0, MAX_MAGNITUDE.next_up()), 2);
    invalid(Vec3::new(40.0, f32::NEG_INFINITY, 40.0), 1);
    // Subnormal periods: their reciprocal, by which the wrap multiplies, overflows.
    invalid(Vec3::new(40.0, 1e-40, 40.0), 1);
    invalid(Vec3::new(f32::MIN_POSITIVE.next_down(), 40.0, 40.0), 0);
    invalid(Vec3::new(40.0, 40.0, f32::from_bits(1)), 2);
    // No axis wraps.
    assert!(matches!(
        PeriodicBox::new(Vec3::splat(inf)),
        Err(Error::InvalidPeriodicBox { .. })
    ));
    assert!(matches!(
        PeriodicBox::cube(inf),
        Err(Error::InvalidPeriodicBox { .. })
    ));
    assert!(matches!(
        PeriodicBox::rectangle(Vec2::splat(inf)),
        Err(Error::InvalidPeriodicBox { .. })
    ));
    for side in [0.0, -1.0, f32::NAN, f32::MAX] {
        assert!(
            matches!(
                PeriodicBox::cube(side),
                Err(Error::InvalidPeriodicBox { .. })
            ),
            "cube({side})"
        );
    }
    match PeriodicBox::rectangle(Vec2::new(10.0, -1.0)) {
        Err(Error::InvalidPeriodicBox { axis: 1, period }) => assert_eq!(period, -1.0),
        other => panic!("rectangle(10, -1): {other:?}"),
    }

    // Valid: the limits themselves, and one wrapping axis among infinite ones.
    let largest = PeriodicBox::cube(MAX_MAGNITUDE).unwrap();
    assert_eq!(largest.period(), Vec3::splat(MAX_MAGNITUDE));
    let smallest = PeriodicBox::cube(f32::MIN_POSITIVE).unwrap();
    assert_eq!(smallest.period(), Vec3::splat(f32::MIN_POSITIVE));
    let one_axis = PeriodicBox::new(Vec3::new(inf, 3.0, inf)).unwrap();
    assert_eq!(one_axis.period(), Vec3::new(inf, 3.0, inf));
    let rectangle = PeriodicBox::rectangle(Vec2::new(48.0, 30.0)).unwrap();
    assert_eq!(rectangle.period(), Vec3::new(48.0, 30.0, inf));
}

#[test]
fn invalid_f64_periodic_boxes_are_typed_errors_and_valid_ones_are_kept_exactly() {
    use glam::DVec3;
    let invalid = |period: DVec3, axis: usize| match PeriodicBox::new_f64(period) {
        Err(Error::InvalidPeriodicBox { axis: a, .. }) => assert_eq!(a, axis, "{period}"),
        other => panic!("{period}: expected InvalidPeriodicBox, got {other:?}"),
    };
    invalid(DVec3::new(40.0, f64::NAN, 40.0), 1);
    invalid(DVec3::new(40.0, 40.0, 0.0), 2);
    invalid(DVec3::new(-5.0, 40.0, 40.0), 0);
    invalid(DVec3::new(40.0, f64::NEG_INFINITY, 40.0), 1);
    // Beyond the bound (and beyond f32, where it would round to infinity: not "no wrap").
    invalid(DVec3::new(40.0, 1e300, 40.0), 1);
    invalid(DVec3::new(40.0, 40.0, f64::from(MAX_MAGNITUDE) * 2.0), 2);
    // Rounds to a subnormal or to zero in f32.
    invalid(DVec3::new(1e-40, 40.0, 40.0), 0);
    invalid(DVec3::new(40.0, 1e-300, 40.0), 1);
    // No axis wraps.
    assert!(matches!(
        PeriodicBox::new_f64(DVec3::splat(f64::INFINITY)),
        Err(Error::InvalidPeriodicBox { .. })
    ));
    // Valid: kept exactly for the event loop, rounded to nearest for the f32 paths.
    let side = 80.59959770082348;
    let kept = PeriodicBox::new_f64(DVec3::new(side, f64::INFINITY, 0.1)).unwrap();
    assert_eq!(kept.period_f64(), DVec3::new(side, f64::INFINITY, 0.1));
    assert_eq!(kept.period(), Vec3::new(side as f32, f32::INFINITY, 0.1));
    // An f32 box widens exactly.
    let narrow = PeriodicBox::new(Vec3::new(3.3, 4.4, f32::INFINITY)).unwrap();
    assert_eq!(narrow.period_f64(), narrow.period().as_dvec3());
}

#[test]
fn an_axis_of_infinite_period_does_not_wrap() {
    const TEST: &str = "an_axis_of_infinite_period_does_not_wrap";
    // x and y wrap with period 40; z does not.
    let periodic_box = PeriodicBox::new(Vec3::new(40.0, 40.0, f32::INFINITY)).unwrap();
    let options = SweepOptions::DEFAULT.with_periodic_box(periodic_box);
    let cases = [
        same(
            "across the x face: meets through the wrap",
            sphere([39.5, 20.0, 20.0], 0.25, [1.0, 0.0, 0.0]),
            sphere([0.5, 20.0, 20.0], 0.25, [0.0; 3]),
            Expect::Contact(0.5),
        ),
        same(
            "the same pair across z: no wrap, a miss",
            sphere([20.0, 20.0, 39.5], 0.25, [0.0, 0.0, 1.0]),
            sphere([20.0, 20.0, 0.5], 0.25, [0.0; 3]),
            Expect::Miss,
        ),
        // z is not checked against the box: a displacement of 2000 along it is valid.
        same(
            "far along z, moving 2000 along it",
            sphere([20.0, 20.0, 1000.0], 1.0, [0.0, 0.0, -2000.0]),
            sphere([20.0, 20.0, 0.0], 1.0, [0.0; 3]),
            Expect::Contact(0.499),
        ),
        same(
            "below z = 0 and far above the period",
            sphere([20.0, 20.0, -500.0], 1.0, [0.0, 0.0, 250.0]),
            sphere([20.0, 20.0, -252.0], 1.0, [0.0, 0.0, 0.0]),
            Expect::Contact(0.984),
        ),
    ];
    check_cases(TEST, "infinite z", Some(periodic_box), &cases);
    // Where x and y need no wrap, the box changes nothing: every path gives the answer of
    // the plain sweep, to the bit.
    let bodies: Vec<MovingSphere> = cases[1..].iter().flat_map(|c| [c.a, c.b]).collect();
    let pairs: Vec<[u32; 2]> = (0..cases.len() as u32 - 1)
        .map(|k| [2 * k, 2 * k + 1])
        .collect();
    let boxed = sweep_every_path(TEST, "infinite z, boxed", &bodies, &pairs, options);
    let plain = sweep_every_path(
        TEST,
        "infinite z, plain",
        &bodies,
        &pairs,
        SweepOptions::DEFAULT,
    );
    for k in 0..pairs.len() {
        assert_eq!(bits(&boxed.twin[k]), bits(&plain.twin[k]), "pair {k}");
        assert_eq!(
            answer_bits(boxed.fast[k].get()),
            answer_bits(plain.fast[k].get()),
            "pair {k}"
        );
        if let (Some(boxed), Some(plain)) = (&boxed.gpu, &plain.gpu) {
            assert_eq!(bits(&boxed[k]), bits(&plain[k]), "GPU pair {k}");
        }
        assert_eq!(boxed.oracle[k], plain.oracle[k], "oracle pair {k}");
    }
}

/// A batch with several bodies too large for the box names the first of them in index
/// order, and that body's first axis that does not fit, on every batch path.
#[test]
fn the_first_body_too_large_for_the_box_is_named_whatever_its_axis() {
    let cube = PeriodicBox::cube(8.0).expect("a valid box");
    let options = SweepOptions::default().with_periodic_box(cube);
    let fits = sphere([1.0, 1.0, 1.0], 0.5, [0.5, 0.5, 0.5]);
    let bodies = [
        fits,
        sphere([1.0, 1.0, 1.0], 0.5, [0.0, 0.0, 1.5]), // body 1: z only (reach 2.0 = L/4)
        fits,
        sphere([1.0, 1.0, 1.0], 0.5, [3.0, 3.0, 0.0]), // body 3: x and y
    ];
    let expected = |error: Error| match error {
        Error::PeriodicBoxTooSmall {
            body,
            axis,
            reach,
            period,
        } => assert_eq!((body, axis, reach, period), (1, 2, 2.0, 8.0), "{error}"),
        other => panic!("expected PeriodicBoxTooSmall, got {other}"),
    };
    expected(sweepcast::low_level::validate_periodic_reach(&bodies, &cube).unwrap_err());
    expected(cpu::sweep_batch(&bodies, &[[0, 2]], options).unwrap_err());
    let mut times = Vec::new();
    expected(cpu::times_of_impact_into(&bodies, &[[0, 2]], options, &mut times).unwrap_err());
}

/// Called alone, the periodic check names a body that is not valid at all for what it is: a
/// NaN radius fits no box, and was reported as a centre outside it.
#[test]
fn the_periodic_check_alone_names_an_invalid_body_for_what_it_is() {
    let cube = PeriodicBox::cube(8.0).expect("a valid box");
    let fits = sphere([1.0, 1.0, 1.0], 0.5, [0.5, 0.5, 0.5]);
    let nan = sphere([1.0, 1.0, 1.0], f32::NAN, [0.0, 0.0, 0.0]);
    match sweepcast::low_level::validate_periodic_reach(&[fits, nan], &cube) {
        Err(Error::NonFinite { body: 1, field }) => {
            assert_eq!(field, sweepcast::BodyField::Radius)
        }
        other => panic!("expected NonFinite for body 1's radius, got {other:?}"),
    }
}
