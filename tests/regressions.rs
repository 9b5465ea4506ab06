//! Minimal inputs of failures the property tests (`tests/properties.rs`) found, each run
//! through every f32 path (the CPU twin, the fast CPU batch and, when an adapter exists, the
//! GPU) and judged by `sweepcast::parity` with the path's bound.
//!
//! KNOWN FAILING (issue 4): bodies that touch at t = 0 (up to rounding) and slide past each
//! other. The sweep's `t = c / (b + sqrt(disc))` divides two quantities that rounding has
//! reduced to noise: c = |s|² - R² is near 0 because the bodies touch, b = s·v is near 0
//! because they move across the line of centres, and disc rounds to 0 though it is slightly
//! negative. The quotient lands anywhere in (0, 1] (t = 1 below), where the bodies are far
//! apart. `parity`'s derivation assumes the c of the numerator and the c implied by the
//! computed disc agree, which fails here. The first root never comes after the vertex of
//! f(t) = a t² - 2 b t + c, so `t = min(c / (b + sqrt(disc)), b / a)` (a = v·v) bounds it;
//! on 600,000 grazing, sliding, random and adversarial pairs that leaves no failure and a
//! largest backward error of 0.35 ε (the unclamped sweep: 306 failures). These tests pass
//! once the sweep (`src/cpu/sweep.rs`, `src/cpu/lanes.rs`, `shaders/sweep.wgsl`) has the fix.

mod common;

use glam::Vec3;
use sweepcast::gpu::SweepPipeline;
use sweepcast::parity::{CPU_BOUND, GPU_BOUND, check_pair, check_time};
use sweepcast::reference::{self, Body};
use sweepcast::{MovingSphere, cpu};

/// Every f32 path on one pair, judged by the parity bound; the failures of all paths are
/// reported together.
fn assert_within_bound(name: &str, a: MovingSphere, b: MovingSphere) {
    let (a64, b64) = (Body::from(a), Body::from(b));
    let oracle = reference::sweep(&a64, &b64);
    let mut failures = Vec::new();
    let twin = cpu::sweep(&a, &b);
    let check = check_pair(&a64, &b64, twin.as_ref(), oracle.as_ref(), CPU_BOUND);
    if let Some(failure) = check.failure {
        failures.push(format!(
            "CPU twin: {failure}: t = {:?}, backward error {:.3e} eps",
            twin.map(|i| i.time_of_impact),
            check.backward_error
        ));
    }
    let mut times = Vec::new();
    cpu::times_of_impact_into(&[a, b], &[[0, 1]], &mut times).expect("valid pair");
    let (backward_error, failure) = check_time(&a64, &b64, times[0].get(), CPU_BOUND);
    if let Some(failure) = failure {
        failures.push(format!(
            "fast batch: {failure}: {:?}, backward error {backward_error:.3e} eps",
            times[0].get()
        ));
    }
    if let Some(context) = common::gpu_context(name) {
        let gpu = SweepPipeline::new(&context)
            .sweep(&[a, b], &[[0, 1]])
            .expect("valid pair");
        let check = check_pair(&a64, &b64, gpu[0].as_ref(), oracle.as_ref(), GPU_BOUND);
        if let Some(failure) = check.failure {
            failures.push(format!(
                "GPU: {failure}: t = {:?}, backward error {:.3e} eps",
                gpu[0].map(|i| i.time_of_impact),
                check.backward_error
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{name} (oracle: {:?}):\n  {}",
        oracle.map(|r| (r.time_of_impact, r.status)),
        failures.join("\n  ")
    );
}

/// Two unit spheres, touching at t = 0 (the centres 2 + 4.4e-8 apart), the second sliding
/// by 10 across the line of centres: a miss, or a contact at t = 0. The f32 paths report a
/// contact at t = 1, where the centres are 10.2 apart (backward error 4.3e6 ε).
#[test]
fn touching_unit_spheres_sliding_apart_are_no_contact_at_the_end_of_the_step() {
    assert_within_bound(
        "sliding unit spheres",
        MovingSphere::new(Vec3::ZERO, 1.0, Vec3::ZERO),
        MovingSphere::new(
            Vec3::new(0.6363358, 1.8960688, 0.0),
            1.0,
            Vec3::new(9.480344, -3.181679, 0.0),
        ),
    );
}

/// As found (and shrunk) by `cpu_answers_touch_at_their_time_and_misses_stay_apart` in 2D:
/// the twin reports t = 0.0179 (backward error 1.7e3 ε).
#[test]
fn touching_circles_sliding_past_found_by_the_cpu_property() {
    assert_within_bound(
        "sliding circles (CPU property)",
        MovingSphere::new(Vec3::new(5407.832, 5604.573, 0.0), 87.67597, Vec3::ZERO),
        MovingSphere::new(
            Vec3::new(5317.915, 5491.7373, 0.0),
            56.60505,
            Vec3::new(865.96875, -690.07446, 0.0),
        ),
    );
}

/// As found by `gpu_answers_touch_at_their_time_and_misses_stay_apart` (lavapipe and
/// llvmpipe alike): the GPU and the twin report t = 0.25 (backward error 2.8e5 ε).
#[test]
fn touching_circles_sliding_past_found_by_the_gpu_property() {
    assert_within_bound(
        "sliding circles (GPU property)",
        MovingSphere::new(
            Vec3::new(-2651.0845, 1142.4413, 0.0),
            65.16467,
            Vec3::new(493.96005, -98.38001, 0.0),
        ),
        MovingSphere::new(
            Vec3::new(-2554.0786, 1255.6561, 0.0),
            83.92501,
            Vec3::new(1090.9244, -609.87695, 0.0),
        ),
    );
}

/// In 3D, as found by `scaling_by_any_factor_stays_within_the_bound` (a pair the twin answers
/// correctly, scaled by 149.87929): the twin reports t = 0.0833 (backward error 3.3e4 ε).
#[test]
fn touching_spheres_sliding_past_in_3d_found_by_the_scaling_property() {
    assert_within_bound(
        "sliding spheres (scaling property)",
        MovingSphere::new(
            Vec3::new(0.0, 0.0, -146948.11),
            7952.9326,
            Vec3::new(0.0, -117320.805, 0.0),
        ),
        MovingSphere::new(
            Vec3::new(-18714.402, -8442.824, -144244.83),
            12754.985,
            Vec3::new(22046.479, -125822.555, 126071.78),
        ),
    );
}
