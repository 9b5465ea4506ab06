//! Extreme inputs (issue 4): every edge of f32 gets a right answer, judged against the f64
//! oracle by the same backward-error bound as ordinary inputs, or a typed error; never NaN,
//! never a panic. And large worlds: 1e6 from the origin keeps the origin's bound.

mod common;

use glam::Vec3;
use sweepcast::SweepOptions;
#[cfg(feature = "gpu")]
use sweepcast::gpu::SweepPipeline;
#[cfg(feature = "gpu")]
use sweepcast::parity::GPU_BOUND;
use sweepcast::parity::{self, CPU_BOUND};
use sweepcast::reference::ReferenceImpact;
use sweepcast::{BodyField, Error, Impact, MovingSphere, cpu, low_level::MAX_MAGNITUDE, reference};
use testkit::{Workload, WorkloadConfig};

/// Every reported hit is finite: time in [0, 1], unit normal, finite point.
fn assert_finite(name: &str, impacts: &[Option<Impact>]) {
    for (pair, impact) in impacts.iter().enumerate() {
        let Some(impact) = impact else { continue };
        assert!(
            (0.0..=1.0).contains(&impact.time_of_impact)
                && impact.normal.is_finite()
                && impact.point.is_finite(),
            "{name}: pair {pair} reports {impact:?}"
        );
    }
}

/// The fast batch's times, judged pair by pair against the oracle's `oracle`.
fn check_fast_path(name: &str, workload: &Workload, oracle: &[Option<ReferenceImpact>]) {
    let mut times = Vec::new();
    cpu::times_of_impact_into(
        &workload.bodies,
        &workload.pairs,
        SweepOptions::DEFAULT,
        &mut times,
    )
    .expect("valid");
    let report = parity::compare(
        &workload.bodies,
        &workload.pairs,
        SweepOptions::DEFAULT,
        &times,
        Some(oracle),
        CPU_BOUND,
    );
    eprintln!("{name}, fast path: {report}");
    assert!(report.passed(), "{name}, fast path: {report}");
}

#[test]
fn extreme_inputs_get_right_answers_on_the_cpu() {
    let workload = Workload::extreme(1);
    let impacts = cpu::sweep_batch(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT)
        .expect("all in range");
    assert_finite("extreme, CPU", &impacts);
    let oracle = reference::sweep_batch(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT);
    let report = parity::compare(
        &workload.bodies,
        &workload.pairs,
        SweepOptions::DEFAULT,
        &impacts,
        Some(&oracle),
        CPU_BOUND,
    );
    eprintln!("extreme, CPU twin: {report}");
    assert!(report.passed(), "{report}");
    assert!(report.candidate_hits > workload.pairs.len() / 2, "{report}");
    check_fast_path("extreme", &workload, &oracle);
    // The oracle itself reports only finite hits in [0, 1].
    for (pair, hit) in oracle.iter().enumerate() {
        if let Some(hit) = hit {
            assert!(
                (0.0..=1.0).contains(&hit.time_of_impact),
                "oracle pair {pair}"
            );
        }
    }
}

#[test]
#[cfg(feature = "gpu")]
fn extreme_inputs_get_right_answers_on_the_gpu() {
    let Some(context) = common::gpu_context("extreme_inputs_get_right_answers_on_the_gpu") else {
        return;
    };
    let workload = Workload::extreme(1);
    let impacts = SweepPipeline::new(&context)
        .unwrap()
        .sweep(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT)
        .expect("all in range");
    assert_finite("extreme, GPU", &impacts);
    let report = parity::compare(
        &workload.bodies,
        &workload.pairs,
        SweepOptions::DEFAULT,
        &impacts,
        None,
        GPU_BOUND,
    );
    eprintln!("extreme, GPU: {report}");
    assert!(report.passed(), "{report}");
}

/// Without the rescaling these overflow f32 when squared (or underflow to nothing): the
/// pairs every path must still get right. Each is a contact the oracle finds.
#[test]
fn squaring_would_overflow_or_underflow_without_rescaling() {
    for (scale, offset) in [(1e20f32, 0.0f32), (1e30, 0.0), (1e30, 1e30), (1e-40, 0.0)] {
        let o = Vec3::splat(offset);
        let bodies = [
            MovingSphere::new(o, scale, Vec3::new(10.0 * scale, 0.0, 0.0)),
            MovingSphere::new(o + Vec3::new(5.0 * scale, 0.0, 0.0), scale, Vec3::ZERO),
        ];
        let impact = cpu::sweep_sphere_sphere(&bodies[0], &bodies[1], SweepOptions::DEFAULT)
            .unwrap_or_else(|| panic!("scale {scale:e}: a contact at t = 0.3 was missed"));
        assert!(
            (impact.time_of_impact - 0.3).abs() < 1e-6,
            "scale {scale:e} at offset {offset:e}: t = {}",
            impact.time_of_impact
        );
        assert_eq!(impact.normal, Vec3::X, "scale {scale:e}");
    }
}

#[test]
fn components_beyond_the_limit_are_typed_errors() {
    let ok = MovingSphere::new(Vec3::ZERO, 1.0, Vec3::ZERO);
    let at_limit = MovingSphere::new(Vec3::splat(-MAX_MAGNITUDE), MAX_MAGNITUDE, Vec3::ZERO);
    cpu::sweep_batch(&[ok, at_limit], &[[0, 1]], SweepOptions::DEFAULT)
        .expect("the limit itself is accepted");
    let beyond = f32::from_bits(MAX_MAGNITUDE.to_bits() + 1);
    let cases = [
        (
            MovingSphere::new(Vec3::new(0.0, beyond, 0.0), 1.0, Vec3::ZERO),
            BodyField::Center,
        ),
        (
            MovingSphere::new(Vec3::ZERO, f32::MAX, Vec3::ZERO),
            BodyField::Radius,
        ),
        (
            MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(0.0, 0.0, -f32::MAX)),
            BodyField::Displacement,
        ),
    ];
    for (body, field) in cases {
        let bodies = [ok, body];
        let mut times = Vec::new();
        let results = [
            cpu::sweep_batch(&bodies, &[[0, 1]], SweepOptions::DEFAULT).map(|_| ()),
            cpu::times_of_impact_into(&bodies, &[[0, 1]], SweepOptions::DEFAULT, &mut times),
            sweepcast::low_level::validate_bodies(&bodies),
        ];
        for result in results {
            match result {
                Err(Error::TooLarge {
                    body: 1,
                    field: f,
                    limit,
                    ..
                }) if f == field && limit == MAX_MAGNITUDE => {}
                other => panic!("{field}: expected TooLarge, got {other:?}"),
            }
        }
        assert!(times.is_empty(), "{field}: times left behind on error");
    }
}

/// Bodies 1e3, 1e5 and 1e6 from the origin: the difference of nearby centres is exact in
/// f32 and nothing squares an absolute coordinate, so a million random pairs at each offset
/// pass the same bound as at the origin, on the CPU twin, the fast path and the GPU.
#[test]
fn large_worlds_keep_the_bound_of_the_origin() {
    #[cfg(feature = "gpu")]
    let context = common::gpu_context("large_worlds_keep_the_bound_of_the_origin");
    #[cfg(feature = "gpu")]
    let pipeline = context
        .as_ref()
        .map(|context| SweepPipeline::new(context).unwrap());
    for offset in [0.0, 1e3, 1e5, 1e6] {
        let workload = Workload::random(&WorkloadConfig {
            bodies: 200_000,
            pairs: 1_000_000,
            seed: 11,
            offset,
            // At 1e6 an f32 step is 0.0625: a spacing of 64 keeps bodies many steps wide.
            spacing: 64.0,
            ..Default::default()
        });
        let oracle =
            reference::sweep_batch(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT);
        let judge = |path: &str, impacts: &[Option<Impact>], bound| {
            let report = parity::compare(
                &workload.bodies,
                &workload.pairs,
                SweepOptions::DEFAULT,
                impacts,
                Some(&oracle),
                bound,
            );
            eprintln!("offset {offset:e}, {path}: {report}");
            assert!(report.passed(), "offset {offset:e}, {path}: {report}");
            assert!(report.reference_hits > 10_000, "{report}");
        };
        let impacts = cpu::sweep_batch(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT)
            .expect("valid");
        judge("CPU twin", &impacts, CPU_BOUND);
        check_fast_path(&format!("offset {offset:e}"), &workload, &oracle);
        #[cfg(feature = "gpu")]
        if let Some(pipeline) = &pipeline {
            let impacts = pipeline
                .sweep(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT)
                .expect("valid");
            judge("GPU", &impacts, GPU_BOUND);
        }
    }
}
