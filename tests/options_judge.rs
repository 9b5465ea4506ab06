//! The judge under the sweep options: it fails wrong answers under the separating option
//! and in a periodic box, or the options' tests prove nothing.

mod common;

use common::options::*;
use glam::Vec3;
use sweepcast::TimeOfImpact;
use sweepcast::parity::{self, CPU_BOUND, GPU_BOUND};
use sweepcast::reference::{self, Body};
use sweepcast::{Impact, ImpactStatus, MovingSphere, PeriodicBox, SweepOptions};

// ---------------------------------------------------------------------------------------
// The judge under the options
// ---------------------------------------------------------------------------------------

/// The judge must fail wrong answers under the options, or the tests above prove nothing.
#[test]
fn the_judge_fails_wrong_answers_under_the_options() {
    let event = SweepOptions::event_driven();
    let plain = SweepOptions::DEFAULT;
    let boxed = SweepOptions::DEFAULT.with_periodic_box(PeriodicBox::cube(40.0).unwrap());
    let impact = |time: f32, status, normal: Vec3, point: Vec3| Impact {
        time_of_impact: time,
        point,
        normal,
        displacement_a: Vec3::ZERO,
        displacement_b: Vec3::ZERO,
        status,
    };
    // Judges one answer of the pair (a, b) with `options` by check_pair with both bounds:
    // the failure, if any (the same under both). check_time, which sees the time and status
    // alone, fails the same answers unless only the normal or the point is wrong.
    let judge =
        |a: MovingSphere, b: MovingSphere, options: &SweepOptions, candidate: Option<Impact>| {
            let (a64, b64) = (Body::from(a), Body::from(b));
            let oracle = reference::sweep_sphere_sphere(&a64, &b64, *options);
            let time = candidate.map(|c| (c.time_of_impact, c.status));
            let verdicts: Vec<_> = [CPU_BOUND, GPU_BOUND]
                .into_iter()
                .map(|bound| {
                    let check = parity::check_pair(
                        &a64,
                        &b64,
                        *options,
                        candidate.as_ref(),
                        oracle.as_ref(),
                        bound,
                    );
                    let (_, time_failure) = parity::check_time(&a64, &b64, *options, time, bound);
                    if time_failure.is_some() {
                        assert_eq!(check.failure, time_failure, "{candidate:?}");
                    }
                    (check.failure, time_failure)
                })
                .collect();
            assert_eq!(
                verdicts[0].0.is_some(),
                verdicts[1].0.is_some(),
                "{candidate:?}: the bounds disagree"
            );
            verdicts[0]
        };
    let fails = |verdict: (Option<&str>, Option<&str>)| verdict.0.is_some() && verdict.1.is_some();
    let passes = |verdict: (Option<&str>, Option<&str>)| verdict == (None, None);

    // Touching and clearly separating: a contact at t = 0 is right by default, wrong under
    // the separating option; a miss the other way round.
    let a = sphere([0.0; 3], 1.0, [-1.0, 0.0, 0.0]);
    let b = sphere([2.0, 0.0, 0.0], 1.0, [1.0, 0.0, 0.0]);
    let at_start = impact(0.0, ImpactStatus::Contact, Vec3::X, Vec3::X);
    assert!(passes(judge(a, b, &plain, Some(at_start))));
    assert!(
        fails(judge(a, b, &event, Some(at_start))),
        "a separating pair reported at t = 0"
    );
    // (A miss passes under both: touching exactly and moving apart is a graze within the
    // bound by default too.)
    assert!(passes(judge(a, b, &event, None)));
    assert!(passes(judge(a, b, &plain, None)));
    // Overlapping and separating: an overlap is wrong under the separating option.
    let b_near = sphere([1.5, 0.0, 0.0], 1.0, [1.0, 0.0, 0.0]);
    let overlap = impact(0.0, ImpactStatus::Overlapping, Vec3::X, Vec3::X);
    assert!(passes(judge(a, b_near, &plain, Some(overlap))));
    assert!(
        fails(judge(a, b_near, &event, Some(overlap))),
        "an overlap reported while separating"
    );
    assert!(passes(judge(a, b_near, &event, None)));
    assert!(
        fails(judge(a, b_near, &plain, None)),
        "a miss of an overlap by default"
    );

    // Overlapping and approaching: a miss is wrong under both options.
    let a_in = sphere([0.0; 3], 1.0, [1.0, 0.0, 0.0]);
    let b_in = sphere([1.5, 0.0, 0.0], 1.0, [0.0; 3]);
    for options in [&plain, &event] {
        assert!(passes(judge(a_in, b_in, options, Some(overlap))));
        assert!(
            fails(judge(a_in, b_in, options, None)),
            "a miss of an approaching overlap"
        );
    }

    // Across the x face of the box: a miss is wrong, and so is a contact at the wrong time;
    // the right contact is wrong without the box (the bodies are 39 apart there).
    let a_face = sphere([39.5, 20.0, 20.0], 0.25, [1.0, 0.0, 0.0]);
    let b_face = sphere([0.5, 20.0, 20.0], 0.25, [0.0; 3]);
    let right = impact(
        0.5,
        ImpactStatus::Contact,
        Vec3::X,
        Vec3::new(40.25, 20.0, 20.0),
    );
    assert!(passes(judge(a_face, b_face, &boxed, Some(right))));
    assert!(
        fails(judge(a_face, b_face, &boxed, None)),
        "a miss across the face"
    );
    let early = Impact {
        time_of_impact: 0.25,
        point: Vec3::new(40.0, 20.0, 20.0),
        ..right
    };
    assert!(
        fails(judge(a_face, b_face, &boxed, Some(early))),
        "a contact before they touch"
    );
    let flipped = Impact {
        normal: -Vec3::X,
        point: Vec3::new(39.75, 20.0, 20.0),
        ..right
    };
    let verdict = judge(a_face, b_face, &boxed, Some(flipped));
    assert!(verdict.0.is_some(), "the normal of the unwrapped pair");
    assert_eq!(verdict.1, None, "the time alone is right");
    assert!(
        fails(judge(a_face, b_face, &plain, Some(right))),
        "the wrapped answer without the box"
    );
    assert!(passes(judge(a_face, b_face, &plain, None)));

    // The batch judges count the same failures.
    let bodies = [a, b, a_in, b_in, a_face, b_face];
    let pairs = [[0, 1], [2, 3], [4, 5]];
    let wrong = [
        TimeOfImpact::contact(0.0).unwrap(),
        TimeOfImpact::MISS,
        TimeOfImpact::MISS,
    ];
    let options = SweepOptions::event_driven().with_periodic_box(PeriodicBox::cube(40.0).unwrap());
    let report = parity::compare(&bodies, &pairs, options, &wrong, None, CPU_BOUND);
    assert_eq!(report.failures, 3, "{report}");
    let right_times = [
        TimeOfImpact::MISS,
        TimeOfImpact::OVERLAPPING,
        TimeOfImpact::contact(0.5).unwrap(),
    ];
    let report = parity::compare(&bodies, &pairs, options, &right_times, None, CPU_BOUND);
    assert!(report.passed(), "{report}");
    let wrong_impacts = [Some(at_start), None, None];
    let report = parity::compare(&bodies, &pairs, options, &wrong_impacts, None, CPU_BOUND);
    assert_eq!(report.failures, 3, "{report}");
    assert_eq!(report.disagreements, 3, "{report}");
}
