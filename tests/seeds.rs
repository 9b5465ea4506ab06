//! The worked cases of the source documents (`../shared/seeds/`), with answers computed by
//! hand, run through every path: the f32 twin, the f64 oracle and (when an adapter exists)
//! the GPU. Plus one test per known error of the sources, showing the fix.

mod common;

use glam::{Vec2, Vec3};
use sweepcast::SweepOptions;
#[cfg(feature = "gpu")]
use sweepcast::gpu::SweepPipeline;
#[cfg(feature = "gpu")]
use sweepcast::parity::GPU_BOUND;
use sweepcast::parity::{self, CPU_BOUND};
use sweepcast::reference::{self, Body};
use sweepcast::{Circle, ImpactStatus, MovingCircle, MovingSphere, cpu};

/// Expected contact: time, point, normal, shortened displacements of a and b.
struct Expected {
    time: f64,
    point: Vec3,
    normal: Vec3,
    displacement_a: Vec3,
    displacement_b: Vec3,
}

/// Tolerance of the f32 paths on hand-computed answers for inputs of order 10: a few f32
/// roundings of quantities up to ~400 (|V|^2), relative to t, the point and the normal.
const CLOSE: f32 = 1e-5;
/// Tolerance of the f64 oracle: the inputs are f32 (1.8 and 2.4 are not exact in f32, off by
/// up to 1.2e-7, which moves t by dt/dF * dF ~ 1e-8), then f64 roundings (~1e-15).
const ORACLE_CLOSE: f64 = 1e-7;

fn assert_case(name: &str, a: MovingSphere, b: MovingSphere, expected: Option<Expected>) {
    let oracle =
        reference::sweep_sphere_sphere(&Body::from(a), &Body::from(b), SweepOptions::DEFAULT);
    assert_eq!(
        oracle.is_some(),
        expected.is_some(),
        "{name}: oracle hit/miss"
    );
    #[allow(unused_mut)]
    let mut answers = vec![(
        "f32 twin",
        cpu::sweep_sphere_sphere(&a, &b, SweepOptions::DEFAULT),
        CPU_BOUND,
    )];
    #[cfg(feature = "gpu")]
    if let Some(context) = common::gpu_context(name) {
        let gpu = SweepPipeline::new(&context)
            .unwrap()
            .sweep(&[a, b], &[[0, 1]], SweepOptions::DEFAULT)
            .unwrap();
        answers.push(("GPU", gpu[0], GPU_BOUND));
    }
    let (a64, b64) = (Body::from(a), Body::from(b));
    for (path, impact, bound) in answers {
        let check = parity::check_pair(
            &a64,
            &b64,
            SweepOptions::DEFAULT,
            impact.as_ref(),
            oracle.as_ref(),
            bound,
        );
        assert_eq!(check.failure, None, "{name}: {path} fails the parity bound");
        // The twin rounds correctly, so it must give the hand-computed hit or miss. WGSL may
        // round `/` and `sqrt` off by a few ULP: at a contact exactly at t = 1 the GPU may
        // report a miss, which the bound (checked above) allows.
        if path == "f32 twin" || impact.is_some() {
            assert_eq!(
                impact.is_some(),
                expected.is_some(),
                "{name}: {path} hit/miss"
            );
        }
        let (Some(impact), Some(e)) = (impact, expected.as_ref()) else {
            continue;
        };
        let t = f64::from(impact.time_of_impact);
        assert_eq!(impact.status, ImpactStatus::Contact, "{name}: {path}");
        assert!(
            (t - e.time).abs() < f64::from(CLOSE),
            "{name}: {path} t = {t}"
        );
        assert!(
            impact.point.abs_diff_eq(e.point, CLOSE),
            "{name}: {path} point {}",
            impact.point
        );
        assert!(
            impact.normal.abs_diff_eq(e.normal, CLOSE),
            "{name}: {path} normal {}",
            impact.normal
        );
        assert!(
            impact.displacement_a.abs_diff_eq(e.displacement_a, CLOSE),
            "{name}: {path} shortened a"
        );
        assert!(
            impact.displacement_b.abs_diff_eq(e.displacement_b, CLOSE),
            "{name}: {path} shortened b"
        );
    }
    if let (Some(oracle), Some(e)) = (oracle, expected) {
        assert!(
            (oracle.time_of_impact - e.time).abs() < ORACLE_CLOSE,
            "{name}: oracle t"
        );
        assert!(
            oracle.normal.as_vec3().abs_diff_eq(e.normal, CLOSE),
            "{name}: oracle normal"
        );
    }
}

/// Pool Hall Lessons, dynamic-static: A (radius 2) moves (20, 0) towards a resting B
/// (radius 3) at (10, 3). C = (10, 3), N = (1, 0), D = N.C = 10, F = |C|^2 - D^2 = 9,
/// T = (2 + 3)^2 - F = 16, distance = D - sqrt(T) = 6 of |V| = 20: t = 0.3. A stops at
/// (6, 0), the centres are (4, 3) apart: normal (0.8, 0.6), contact (6, 0) + 2 (0.8, 0.6).
#[test]
fn circle_reaching_a_stationary_circle() {
    let a = MovingCircle::new(Vec2::ZERO, 2.0, Vec2::new(20.0, 0.0));
    let b = Circle::new(Vec2::new(10.0, 3.0), 3.0);
    let expected = || Expected {
        time: 0.3,
        point: Vec3::new(7.6, 1.2, 0.0),
        normal: Vec3::new(0.8, 0.6, 0.0),
        displacement_a: Vec3::new(6.0, 0.0, 0.0),
        displacement_b: Vec3::ZERO,
    };
    assert_case("dynamic-static", a.into(), b.into(), Some(expected()));
    let static_impact = cpu::sweep_sphere_sphere(&a, &b, SweepOptions::DEFAULT).expect("hit");
    assert_eq!(
        Some(static_impact),
        cpu::sweep_sphere_sphere(&a, &b, SweepOptions::DEFAULT),
        "the convenience is the same test"
    );
}

/// The same case tilted out of the plane: 3D reduces to the same algebra. B sits at
/// (10, 3 * 0.6, 3 * 0.8), still 3 from A's path: t = 0.3, normal (4, 1.8, 2.4) / 5.
#[test]
fn sphere_reaching_a_stationary_sphere_in_3d() {
    let a = MovingSphere::new(Vec3::ZERO, 2.0, Vec3::new(20.0, 0.0, 0.0));
    let b = MovingSphere::new(Vec3::new(10.0, 1.8, 2.4), 3.0, Vec3::ZERO);
    let normal = Vec3::new(0.8, 0.36, 0.48);
    let expected = Expected {
        time: 0.3,
        point: Vec3::new(6.0, 0.0, 0.0) + 2.0 * normal,
        normal,
        displacement_a: Vec3::new(6.0, 0.0, 0.0),
        displacement_b: Vec3::ZERO,
    };
    assert_case("3D dynamic-static", a, b, Some(expected));
}

/// Pool Hall Lessons, figure 10 (left): paths that cross, bodies that do not meet. A (radius
/// 0.5) moves (10, 0) from the origin and passes (5, 0) at t = 0.5; B (radius 0.5) moves
/// (0, 10) from (5, -10) and reaches (5, 0) only at t = 1. Relative to B, A starts at
/// (-5, 10) and moves (10, -10): the centres come closest at t = 0.75, sqrt(12.5) ~ 3.54
/// apart, more than the radius sum 1.
#[test]
fn moving_circles_whose_paths_cross_without_touching() {
    let a = MovingCircle::new(Vec2::ZERO, 0.5, Vec2::new(10.0, 0.0));
    let b = MovingCircle::new(Vec2::new(5.0, -10.0), 0.5, Vec2::new(0.0, 10.0));
    assert_case("paths cross, no contact", a.into(), b.into(), None);
}

/// Pool Hall Lessons, figure 10 (right): parallel paths that never cross, bodies that
/// touch. A (radius 1.25) moves (10, 0) from the origin, B (radius 1.25) moves (-10, 0) from
/// (10, 1.5). Relative to B, A moves (20, 0) towards C = (10, 1.5): D = 10, F = 2.25,
/// T = 2.5^2 - F = 4, distance = 10 - 2 = 8 of 20: t = 0.4. A is then at (4, 0), B at
/// (6, 1.5): normal (0.8, 0.6), contact (4, 0) + 1.25 (0.8, 0.6) = (5, 0.75).
#[test]
fn moving_circles_that_touch_although_their_paths_do_not_cross() {
    let a = MovingCircle::new(Vec2::ZERO, 1.25, Vec2::new(10.0, 0.0));
    let b = MovingCircle::new(Vec2::new(10.0, 1.5), 1.25, Vec2::new(-10.0, 0.0));
    let expected = Expected {
        time: 0.4,
        point: Vec3::new(5.0, 0.75, 0.0),
        normal: Vec3::new(0.8, 0.6, 0.0),
        displacement_a: Vec3::new(4.0, 0.0, 0.0),
        displacement_b: Vec3::new(-4.0, 0.0, 0.0),
    };
    assert_case(
        "parallel paths, contact",
        a.into(),
        b.into(),
        Some(expected),
    );
}

/// The collinear special case of the 3D reduction ("is V greater than C - sumRadii?"):
/// head-on, 10 apart, radius sum 2, closing by 8: contact exactly at t = 1, which is a hit.
#[test]
fn head_on_collinear_contact_at_the_end_of_the_step() {
    let a = MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(0.0, 0.0, 5.0));
    let b = MovingSphere::new(Vec3::new(0.0, 0.0, 10.0), 1.0, Vec3::new(0.0, 0.0, -3.0));
    let expected = Expected {
        time: 1.0,
        point: Vec3::new(0.0, 0.0, 6.0),
        normal: Vec3::Z,
        displacement_a: Vec3::new(0.0, 0.0, 5.0),
        displacement_b: Vec3::new(0.0, 0.0, -3.0),
    };
    assert_case("collinear, t = 1", a, b, Some(expected));
}

/// The web copy of the Java listing drops `dist -= sumRadii`, so its first escape compares
/// the movement with the centre distance instead of the gap. A (radius 1) moving 4 towards B
/// (radius 1) 5 away closes the gap of 3 at t = 0.75; the broken escape (4 < 5) calls it a
/// miss.
#[test]
fn movement_escape_compares_with_the_gap_not_the_centre_distance() {
    let a = MovingCircle::new(Vec2::ZERO, 1.0, Vec2::new(4.0, 0.0));
    let b = Circle::new(Vec2::new(5.0, 0.0), 1.0);
    let impact =
        cpu::sweep_sphere_sphere(&a, &b, SweepOptions::DEFAULT).expect("the gap of 3 is covered");
    assert_eq!(impact.time_of_impact, 0.75);
}

/// The source's `D - sqrt(T)` cancels when contact is near t = 0 (D ~ sqrt(T)): in f32 it
/// loses most digits and can even go negative. The conjugate form `(|C|^2 - R^2) /
/// (D + sqrt(T))` keeps t accurate to a few roundings. Here the gap is 2^-20 on centres 2
/// apart, so |C|^2 - R^2 = 2^-18 (+2^-40) is computed almost exactly.
#[test]
fn stable_root_keeps_early_contacts_accurate() {
    let a = MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(1.0, 0.5, 0.25));
    let b = MovingSphere::new(Vec3::new(2.0 + 2f32.powi(-20), 0.0, 0.0), 1.0, Vec3::ZERO);
    let exact = reference::sweep_sphere_sphere(&a.into(), &b.into(), SweepOptions::DEFAULT)
        .expect("hit")
        .time_of_impact;
    let stable = f64::from(
        cpu::sweep_sphere_sphere(&a, &b, SweepOptions::DEFAULT)
            .expect("hit")
            .time_of_impact,
    );

    // The source's formula, in f32.
    let c = b.center - a.center;
    let n = a.displacement.normalize();
    let d = n.dot(c);
    let f = c.length_squared() - d * d;
    let t_source = f64::from((d - (4.0 - f).sqrt()) / a.displacement.length());

    let stable_error = (stable - exact).abs() / exact;
    let source_error = (t_source - exact).abs() / exact;
    assert!(
        stable_error < 1e-6,
        "stable form: relative error {stable_error:e}"
    );
    assert!(
        source_error > 1e-2,
        "source form should lose digits, got {source_error:e}"
    );
}

/// Pool Hall Lessons never checks for bodies that already overlap; its later escapes call an
/// overlapping pair that moves apart a miss. Overlap at t = 0 is reported as such.
#[test]
fn overlap_at_the_start_is_reported_even_when_moving_apart() {
    let a = MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(-3.0, 0.0, 0.0));
    let b = MovingSphere::new(Vec3::new(1.5, 0.0, 0.0), 1.0, Vec3::ZERO);
    let impact = cpu::sweep_sphere_sphere(&a, &b, SweepOptions::DEFAULT).expect("overlapping");
    assert_eq!(impact.status, ImpactStatus::Overlapping);
    assert!(impact.is_overlapping());
    assert_eq!(impact.time_of_impact, 0.0);
    assert_eq!(impact.normal, Vec3::X);
    assert_eq!(impact.displacement_a, Vec3::ZERO);
    let oracle = reference::sweep_sphere_sphere(&a.into(), &b.into(), SweepOptions::DEFAULT)
        .expect("overlapping");
    assert_eq!(oracle.status, ImpactStatus::Overlapping);
}
