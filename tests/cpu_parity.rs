//! The f32 CPU twin of the shader against the f64 oracle, judged by backward error
//! (see `sweepcast::parity` for the bound and its derivation).

use sweepcast::SweepOptions;
use sweepcast::cpu;
use sweepcast::parity::{self, CPU_BOUND};
use testkit::{Workload, WorkloadConfig};

/// The target set for the twin: parry3d's f32 ball-ball cast keeps the backward error under
/// one ε on exact f32 inputs, and so must the twin on these fixed, seeded sets. This is a
/// measured target and a regression gate (the sets and the twin's arithmetic are
/// deterministic), not a derived bound: the derived worst case, `CPU_BOUND`, is what every
/// single pair is held to.
const PARRY_TARGET: f64 = 1.0;

fn check(name: &str, workload: &Workload) {
    let impacts = cpu::sweep_batch(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT)
        .expect("valid workload");
    let report = parity::compare(
        &workload.bodies,
        &workload.pairs,
        SweepOptions::DEFAULT,
        &impacts,
        None,
        CPU_BOUND,
    );
    println!("{name}: {report}");
    assert!(report.passed(), "{name}: {report}");
    assert!(
        report.max_backward_error <= PARRY_TARGET,
        "{name}: backward error {} eps above parry's 1 eps",
        report.max_backward_error
    );
    assert!(
        report.candidate_hits > 0,
        "{name}: the set must contain hits"
    );
    assert!(report.candidate_hits < report.pairs, "{name}: and misses");
}

#[test]
fn million_random_pairs_3d_within_bound() {
    let config = WorkloadConfig {
        bodies: 200_000,
        pairs: 1_000_000,
        seed: 7,
        ..Default::default()
    };
    check("random 3D", &Workload::random(&config));
}

#[test]
fn random_pairs_2d_within_bound() {
    let config = WorkloadConfig {
        bodies: 100_000,
        pairs: 300_000,
        seed: 8,
        dimensions: 2,
        ..Default::default()
    };
    check("random 2D", &Workload::random(&config));
}

#[test]
fn random_pairs_far_from_origin_within_bound() {
    for offset in [1e3, 1e6] {
        let config = WorkloadConfig {
            bodies: 100_000,
            pairs: 300_000,
            seed: 9,
            offset,
            ..Default::default()
        };
        check(
            &format!("random 3D at offset {offset:e}"),
            &Workload::random(&config),
        );
    }
}

#[test]
fn fast_small_bodies_within_bound() {
    check("bullets", &Workload::bullets(200_000, 12));
}

#[test]
fn adversarial_set_within_bound() {
    check("adversarial", &Workload::adversarial(3));
}

/// The judge itself must reject wrong answers, or the parity tests prove nothing.
#[test]
fn parity_judge_rejects_wrong_answers() {
    use glam::Vec3;
    use sweepcast::parity::check_pair;
    use sweepcast::reference::{self, Body};
    use sweepcast::{ImpactStatus, MovingSphere};

    // Head-on: 10 apart, radius sum 2, closing by 16: touches at t = 0.5, leaves at t = 0.75.
    let a = MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(16.0, 0.0, 0.0));
    let b = MovingSphere::new(Vec3::new(10.0, 0.0, 0.0), 1.0, Vec3::ZERO);
    let (a64, b64) = (Body::from(a), Body::from(b));
    let oracle = reference::sweep_sphere_sphere(&a64, &b64, SweepOptions::DEFAULT);
    let right = cpu::sweep_sphere_sphere(&a, &b, SweepOptions::DEFAULT).expect("hit");
    assert_eq!(right.time_of_impact, 0.5);
    let judge = |candidate: Option<sweepcast::Impact>| {
        check_pair(
            &a64,
            &b64,
            SweepOptions::DEFAULT,
            candidate.as_ref(),
            oracle.as_ref(),
            CPU_BOUND,
        )
        .failure
    };
    assert_eq!(judge(Some(right)), None);
    let at = |t: f32, status| {
        Some(sweepcast::Impact {
            time_of_impact: t,
            status,
            ..right
        })
    };
    assert!(judge(None).is_some(), "a miss of a deep collision");
    assert!(
        judge(at(0.75, ImpactStatus::Contact)).is_some(),
        "the exit root"
    );
    assert!(
        judge(at(0.5001, ImpactStatus::Contact)).is_some(),
        "a time off by 1e-4"
    );
    assert!(
        judge(at(0.0, ImpactStatus::Overlapping)).is_some(),
        "overlap of bodies apart"
    );
    assert!(
        judge(at(1.5, ImpactStatus::Contact)).is_some(),
        "a time past the step"
    );
    let unnormalised = Some(sweepcast::Impact {
        normal: Vec3::new(2.0, 0.0, 0.0),
        ..right
    });
    assert!(
        judge(unnormalised).is_some(),
        "a normal that is not unit length"
    );
    let flipped = Some(sweepcast::Impact {
        normal: -right.normal,
        ..right
    });
    assert!(judge(flipped).is_some(), "a normal pointing from b to a");
    let tilted = Some(sweepcast::Impact {
        normal: Vec3::new(0.6, 0.8, 0.0),
        ..right
    });
    assert!(judge(tilted).is_some(), "a normal off the line of centres");
    let misplaced = Some(sweepcast::Impact {
        point: right.point + Vec3::Y * 1e-3,
        ..right
    });
    assert!(
        judge(misplaced).is_some(),
        "a point off the surface by 1e-3"
    );

    // The batch judge of the fast path's times fails the same wrong times, counting each.
    use sweepcast::TimeOfImpact;
    let bodies = [a, b];
    let times_report = |times: &[TimeOfImpact]| {
        parity::compare(
            &bodies,
            &vec![[0, 1]; times.len()],
            SweepOptions::DEFAULT,
            times,
            None,
            CPU_BOUND,
        )
    };
    assert!(times_report(&[TimeOfImpact::contact(0.5).unwrap()]).passed());
    let wrong = [
        TimeOfImpact::MISS,
        TimeOfImpact::contact(0.75).unwrap(),
        TimeOfImpact::contact(0.5001).unwrap(),
        TimeOfImpact::OVERLAPPING,
    ];
    let report = times_report(&wrong);
    assert_eq!(report.failures, wrong.len(), "{report}");
    assert_eq!(
        report.disagreements, 2,
        "the miss and the overlap: {report}"
    );
}

/// The fast batch runs the twin's algebra with selects instead of branches: where both report
/// a contact the time is the same to the bit; they may differ only where the twin's reach
/// escape (which the fast batch leaves out) fired at a contact within rounding of t = 1, and
/// there the fast answer must pass the bound.
#[test]
fn fast_batch_equals_the_twin_or_passes_the_bound() {
    use sweepcast::ImpactStatus;
    use sweepcast::parity::check_time;
    use sweepcast::reference::Body;

    let sets = [
        (
            "random 3D",
            Workload::random(&WorkloadConfig {
                bodies: 100_000,
                pairs: 500_000,
                seed: 21,
                ..Default::default()
            }),
        ),
        (
            "random 2D",
            Workload::random(&WorkloadConfig {
                bodies: 50_000,
                pairs: 200_000,
                seed: 22,
                dimensions: 2,
                ..Default::default()
            }),
        ),
        (
            "offset 1e6",
            Workload::random(&WorkloadConfig {
                bodies: 50_000,
                pairs: 200_000,
                seed: 23,
                offset: 1e6,
                ..Default::default()
            }),
        ),
        ("bullets", Workload::bullets(200_000, 24)),
        ("adversarial", Workload::adversarial(25)),
    ];
    for (name, workload) in sets {
        let (bodies, pairs) = (&workload.bodies, &workload.pairs);
        let mut times = Vec::new();
        cpu::times_of_impact_into(bodies, pairs, SweepOptions::DEFAULT, &mut times).unwrap();
        let twin = cpu::sweep_batch(bodies, pairs, SweepOptions::DEFAULT).unwrap();
        assert_eq!(times.len(), pairs.len(), "{name}");
        let bits = |answer: Option<(f32, ImpactStatus)>| answer.map(|(t, s)| (t.to_bits(), s));
        let mut differing = 0;
        for (k, (fast, twin)) in times.iter().zip(&twin).enumerate() {
            let twin = twin.map(|i| (i.time_of_impact, i.status));
            if bits(fast.get()) == bits(twin) {
                continue;
            }
            differing += 1;
            assert!(
                twin.is_none() && matches!(fast.get(), Some((_, ImpactStatus::Contact))),
                "{name} pair {k}: fast {:?}, twin {twin:?}",
                fast.get()
            );
            let [i, j] = pairs[k];
            let (a, b) = (
                Body::from(bodies[i as usize]),
                Body::from(bodies[j as usize]),
            );
            let (_, failure) = check_time(&a, &b, SweepOptions::DEFAULT, fast.get(), CPU_BOUND);
            assert_eq!(failure, None, "{name} pair {k}: {:?}", fast.get());
        }
        println!(
            "{name}: {} pairs, {differing} differ from the twin (within the bound)",
            pairs.len()
        );
    }
}
