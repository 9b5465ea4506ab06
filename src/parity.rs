//! Judging an f32 answer against exact arithmetic by its backward error.
//!
//! This is a user feature as much as the test suite's judge: a driver, a port of the shader
//! to another API, or a simulation's own fast path can hold its answers to the oracle with
//! [`compare`] (or [`check_pair`] for one pair), and get a [`ParityReport`] that says which
//! answers fail and by how much.
//!
//! A time of impact is ill-conditioned near a grazing contact (a tiny change of input moves
//! it far), so comparing times with the oracle's says little. What can be promised is that
//! the answer is exactly right for inputs within a few roundings of the given ones. With
//! `s` the relative position (second centre minus first), `v` the relative displacement
//! (first minus second), `R` the radius sum, all exact in f64, and
//!
//! ```text
//! f(t) = |s - v t|^2 - R^2        (negative while the bodies overlap)
//! S    = |s| + |v| + R            (the scale of the inputs)
//! ```
//!
//! an answer passes with bound `k` (in units of `f32::EPSILON`, ε = 2^-23) when
//!
//! * a contact at `t`: `t` is in [0, 1], `|f(t)| <= k ε S²` (the bodies touch there) and
//!   `min f over [0, t] >= -k ε S²` (they did not meet earlier);
//! * an overlap at t = 0: `f(0) <= k ε S²`;
//! * a miss: `min f over [0, 1] >= -k ε S²`: any contact the oracle finds is within the bound of
//!   a grazing or end-of-step contact.
//!
//! Used by: `examples/headless.rs` (its parity verdict), `examples/step_bench.rs`,
//! `python/src/judge.rs` (`check_times`).
//!
//! # The bounds
//!
//! Write u = 2^-24 for the unit roundoff, so ε = 2u. To first order in u, the f32 sweep
//! (`cpu::sweep`, `shaders/sweep.wgsl`) commits these errors in f at the reported time, each
//! a multiple of a term of `S² = |s|² + |v|² + R² + 2|s||v| + 2|s|R + 2|v|R`:
//!
//! | step | error in f(t) |
//! | --- | --- |
//! | rounding `s`, `v`, `R` (one subtraction or addition each), with `|s - v t| ≈ R` at contact | `2uR(|s| + |v| + R)` |
//! | `a = v·v`, `b = s·v`: three-term dot products (b's row is generous: b enters t only once) | `3u|v|²`, `2·3u|s||v|` |
//! | `c = s·s - R²` | `4u|s|² + 2uR²` |
//! | `disc = a R² - |s×v|²`: `aR²` carries 6u (a's 3u, R²'s, the product's, the difference's); each cross component errs by at most `2u(|s_j v_k| + |s_k v_j|)`, so `|s×v|` by `2√2 u|s||v|`, and `|s×v| ≤ R|v|` wherever disc matters; divided by `a` as it enters f | `9uR² + 4√2 u R|s|` |
//! | `sqrt`, `+`, `/` in `t = c / (b + sqrt(disc))`: relative error `θ` in t, times `|f'(t)| t = 2 sqrt(disc) t ≤ 2R|v|` | `2R|v| θ` |
//!
//! On the CPU every operation is correctly rounded and θ ≤ 3u. The total is at most
//! `13u R² + 7.7u R|s| + 8u R|v| + 4u|s|² + 6u|s||v| + 3u|v|²`; term by term against `S²` that
//! is at most `13u S²` = 6.5 ε: [`CPU_BOUND`] = 8 ε leaves room for second-order terms.
//!
//! The early escapes stay inside the same bound. `disc < 0` wrongly taken leaves the least
//! f at `-disc/a` within the disc row; the reach test `|v| + R < |s|` wrongly taken leaves a
//! closest approach within the roundings of `|s|`, `|v|` and `R` (3u S) of the radius sum,
//! so f ≥ -6u R S ≥ -3 ε S²; `s·v ≤ 0` wrongly taken needs `|s·v| ≤ 3u|s||v|`, which leaves
//! f ≥ c - 9u²|s|² > 0, no contact at all; and `t > 1` wrongly taken leaves `f(1)` within
//! the bound of the rows above. The opposite error, `disc ≥ 0` where the exact disc is
//! slightly negative (bodies touching at t = 0 and sliding apart), leaves no root at all,
//! and `c / (b + sqrt(disc))` is then noise over noise; the sweep clamps t to the vertex
//! `b / a`, after which no first root can come, and there `f = -disc/a` for the exact disc,
//! which is within the disc row.
//!
//! WGSL does not round `sqrt` and `/` correctly: `inverseSqrt` may be off by 2 ULP, `sqrt`
//! inherits that through `1 / inverseSqrt`, and `x / y` may be off by 2.5 ULP (an ULP is up
//! to 2u). That gives θ ≤ 2u·4.5 + u + 2u·2.5 = 15u, so the last row grows to `30u R|v|` and
//! the `R|v|` coefficient to 32u; against the `2R|v|` of `S²` the total is at most `16u S²`
//! = 8 ε (a compiler that fuses `a*b + c` only removes roundings). [`GPU_BOUND`] = 16 ε
//! doubles it for second-order terms and flushed subnormals.
//!
//! The sweep first rescales each pair by a power of two so that its largest relative length
//! lies in [1, 2) (`shaders/sweep.wgsl`, `power_of_two_scale`). That is exact, so every row
//! above holds unchanged for the scaled inputs, and f(t) / S² does not depend on the scale;
//! what it adds is that no square or product can overflow (lengths up to
//! [`MAX_MAGNITUDE`](crate::low_level::MAX_MAGNITUDE) = f32::MAX / 8 work) and that only terms below
//! 2^-126 of the largest (far below u S²) can underflow.
//!
//! # Devices that flush subnormals
//!
//! WGSL lets a device flush subnormal f32 inputs and results to zero (FTZ and DAZ), and real
//! GPUs do. The bounds above hold there unchanged, for these reasons (`tests/ftz.rs` runs the
//! sweep twin under x86's FTZ and DAZ and holds it to [`GPU_BOUND`]):
//!
//! * A component of `s`, `v` or `R` whose two operands both lie below 2^-47 is lifted by
//!   2^23 from its bits (`lift` in `shaders/shared.wgsl`) before any float operation reads it:
//!   a subnormal spacing of 2^-149 becomes 2^-126, so the difference is exact where it was
//!   exact (a subnormal result) and rounded as before elsewhere, never subnormal, and the
//!   rescale (whose power comes from the bits, the lift taken out) gives the same scaled
//!   components as an IEEE device, bit for bit. A lifted component that the rescale takes
//!   below 2^-126 was below 2^-150 unlifted: zero on every device.
//! * A component with an operand of 2^-47 or more may lose a subnormal operand: an error
//!   below 2^-126, at most 2^-79 of the component, far below u. Its difference is never
//!   subnormal (two operands within 2^-126 of each other and above 2^-47 are multiples of
//!   2^-71).
//! * After the rescale the largest relative length lies in [1, 2) (in [2^-22, 2) for a pair
//!   whose relative lengths are all subnormal), so S² ≥ 2^-44, and a product or sum that
//!   flushes errs by less than 2^-126 < 2^-82 S²: second order, as on an IEEE device.
//! * The normal: a vector whose largest component is below 2^-50 is scaled by a power of two
//!   before `normalize` (`direction`); otherwise its squared length is at least 2^-100 and the
//!   squares a flushing device loses (three, each below 2^-126) are below 2^-24 of it, so the
//!   normal stays a unit vector within 2^-25.
//! * The point `c_a + d_a t + n r_a`: for a first body whose inputs all lie below 2^-47 it is
//!   computed lifted and put back by one rounding to nearest even from the bits (`unlift`):
//!   each of the four products and sums that may flush errs by less than 2^-126 lifted, 2^-149
//!   in place, so a component errs by at most 4.5 × 2^-149 beyond the relative roundings, the
//!   vector by √3 × 4.5 < 8 spacings, within the judge's `k × 2^-149` for [`GPU_BOUND`] (on an
//!   IEEE device only the last rounding, 2^-150 a component, is left). Otherwise the body's
//!   size is at least 2^-47 and at most six flushes of less than 2^-126 a component stay far
//!   below `k ε` times it.
//!
//! The walls (`shaders/walls.wgsl`) lift the same way, in open space: each component of the
//! body's offsets from the wall's points, of the segment's edge, of the displacement and the
//! radius, and the point by `surface_point`; the arguments above carry over to the walls'
//! bound (`tests/common`'s `WALL_BOUND`). In a periodic box too: each component of a piece's
//! offsets whose operands (the centre, the displacement, the image's shift and the wall's
//! points) all lie below 2^-47 is lifted, the piece's centre and displacement are put back by
//! `unlift`, the image and the crossing times are found from the centre, displacement and
//! period lifted where all three lie below 2^-47, the image's side of the origin from the
//! centre's bits, and a crossing towards the origin's face (down from image 0, up from image
//! -1) from the distance and the speed lifted together where both do (a period of 2^-47 or
//! more has an ulp of 2^-70 or more, beyond any speed below 2^-47 upwards). On an axis where
//! the image is not 0 and its shift is not below 2^-47, the centre and the wall's points less
//! their shifts are formed first: exactly (Sterbenz, for a centre within a period of the cell
//! and a point in it near the face the image is across), and each is then normal or zero, a
//! multiple of an ulp of the shift (2^-71 or coarser), or else rounded and of magnitude half a
//! period or more. Where these and the displacement all lie below 2^-47 (a centre on a face,
//! a wall point by it) they are lifted before their difference (an unshifted one from its own
//! bits, chosen after the lift: `x - 0` would flush it), which is then as on an IEEE device; elsewhere one of them is 2^-47 or more, so the scale (the largest offset,
//! displacement or radius) is within 2^-126 of that or more, and a flushed operand errs by less
//! than 2^-126, below 2^-78 of it. `tests/ftz.rs` holds this from periods of 1 down to 3e-38
//! (`PeriodicBox` refuses subnormal ones), bodies on a face with subnormal radii by walls at
//! subnormal distances among them.
//!
//! On an IEEE device the lift changes no time, status or scaled length (the bit-for-bit
//! argument above); what changes is a point of a body below 2^-47 whose computation passed
//! through the subnormal range (now one rounding instead of one a step) and a normal whose
//! squared length had subnormal terms (now none). Measured on 270,000 extreme, adversarial,
//! random and random-bit pairs in five boxes: 0.06 % of the points and 0.002 % of the
//! normals changed, each component by one ulp at most.
//!
//! # Options
//!
//! The judge takes the [`SweepOptions`] the answer was computed with. In a periodic box `s`
//! is the exact nearest image (as the oracle computes it); for centres in `[0, L)` the f32
//! wrap adds no rounding (its shift is exact), so the rows above stand. Under the separating
//! option (`stop_at_penetration` false) a miss is also right for a pair that touches or
//! overlaps at t = 0 within the bound (`f(0) <= k ε S²`) and does not approach beyond the
//! rounding of a dot product of rounded inputs (`s · v <= k ε S²`), and an answer at t = 0 is
//! wrong for a pair that clearly separates (`s · v < -k ε S²`).
//!
//! Every test holds every pair to these bounds. The measured largest backward error on
//! millions of random and adversarial pairs is below 0.4 ε on the CPU and on Mesa's
//! software adapters.

use crate::par::prelude::*;
use glam::DVec3;

use crate::answers::TimeOfImpact;
use crate::geometry::{Impact, ImpactStatus, MovingSphere};
use crate::options::SweepOptions;
use crate::reference::{self, Body, ReferenceImpact};

/// `f32::EPSILON` as f64: the unit every bound is given in.
///
/// Used by: `examples/resident_step.rs` (its check's tolerances), `python/src/lib.rs`
/// (`sweepcast.EPSILON`).
pub const EPSILON: f64 = f32::EPSILON as f64;
/// The spacing of f32 below `f32::MIN_POSITIVE` (the smallest subnormal, 2^-149).
const SUBNORMAL_SPACING: f64 = f32::from_bits(1) as f64;
/// Bound on the backward error of the f32 CPU sweep, in units of [`EPSILON`].
///
/// Used by: `examples/headless.rs`, `examples/step_bench.rs`, `python/src/lib.rs`
/// (`sweepcast.CPU_BOUND`).
pub const CPU_BOUND: f64 = 8.0;
/// Bound on the backward error of the WGSL sweep, in units of [`EPSILON`].
///
/// Used by: `examples/headless.rs`, `examples/step_bench.rs`, `examples/resident_step.rs`.
pub const GPU_BOUND: f64 = 16.0;

/// The exact (f64) relative geometry of a pair.
#[derive(Copy, Clone, Debug)]
struct PairGeometry {
    relative_position: DVec3,
    relative_motion: DVec3,
    sum_radii: f64,
    scale_squared: f64,
    /// Whether a pair touching or overlapping at t = 0 while separating is a miss.
    separating_misses: bool,
}

impl PairGeometry {
    fn new(a: &Body, b: &Body, options: &SweepOptions) -> Self {
        let relative_position = reference::center_offset(a, b, *options);
        let relative_motion = a.displacement - b.displacement;
        let sum_radii = a.radius + b.radius;
        let scale = relative_position.length() + relative_motion.length() + sum_radii;
        Self {
            relative_position,
            relative_motion,
            sum_radii,
            // Two coincident resting points: f is identically 0; any positive scale will do.
            scale_squared: if scale > 0.0 { scale * scale } else { 1.0 },
            separating_misses: !options.stop_at_penetration,
        }
    }

    /// `s · v / S²`: positive while the bodies approach each other.
    fn approach(&self) -> f64 {
        self.relative_position.dot(self.relative_motion) / self.scale_squared
    }

    /// f(t) / S²: the squared centre distance minus the squared radius sum, normalised.
    fn residual(&self, t: f64) -> f64 {
        let separation = self.relative_position - self.relative_motion * t;
        (separation.length_squared() - self.sum_radii * self.sum_radii) / self.scale_squared
    }

    /// The least of f / S² over [0, end].
    fn least_residual(&self, end: f64) -> f64 {
        let motion_squared = self.relative_motion.length_squared();
        let closest = if motion_squared > 0.0 {
            (self.relative_position.dot(self.relative_motion) / motion_squared).clamp(0.0, end)
        } else {
            0.0
        };
        self.residual(0.0)
            .min(self.residual(end))
            .min(self.residual(closest))
    }
}

/// The verdict on one pair's answer.
///
/// Used by: `docs/guide.md` ("Checking answers against the oracle").
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct PairCheck {
    /// `|f(t)| / S²` in units of [`EPSILON`] at a reported contact; 0 otherwise.
    pub backward_error: f64,
    /// Whether the answer disagrees with the oracle on hit, miss or overlap.
    pub disagrees: bool,
    /// Why the answer fails the bound, if it does.
    pub failure: Option<&'static str>,
}

/// Judges one answer (`candidate`) for bodies `a`, `b` against the bound `bound` (in ε), and
/// records whether it disagrees with the oracle's `reference`.
///
/// Used by: `docs/guide.md` ("Checking answers against the oracle").
#[must_use]
pub fn check_pair(
    a: &Body,
    b: &Body,
    options: SweepOptions,
    candidate: Option<&Impact>,
    reference: Option<&ReferenceImpact>,
    bound: f64,
) -> PairCheck {
    let geometry = PairGeometry::new(a, b, &options);
    let time = candidate.map(|impact| (impact.time_of_impact, impact.status));
    let (backward_error, time_failure) = judge_time(&geometry, time, bound);
    let failure = time_failure.or_else(|| {
        let impact = candidate?;
        // f32 normalisation errs by a few ulp; 1e-5 catches a missing normalisation.
        if (f64::from(impact.normal.length()) - 1.0).abs() > 1e-5 {
            return Some("normal is not a unit vector");
        }
        contact_frame_failure(a, &geometry, impact, bound)
    });
    PairCheck {
        backward_error,
        disagrees: disagrees(time, reference),
        failure,
    }
}

/// Whether an answer (`None` for a miss) disagrees with the oracle's on hit, miss or overlap.
fn disagrees(time: Option<(f32, ImpactStatus)>, reference: Option<&ReferenceImpact>) -> bool {
    match (time, reference) {
        (None, None) => false,
        (Some((_, status)), Some(r)) => status != r.status,
        _ => true,
    }
}

/// Judges a time and status alone (`None` for a miss), as the fast CPU batch
/// ([`crate::cpu::times_of_impact_into`]) reports them: the time part of [`check_pair`].
///
/// Used by: `docs/guide.md` ("Checking answers against the oracle"),
/// `examples/resident_step.rs` (`--check`), `python/src/judge.rs` (`check_times`).
///
/// # Returns
/// The backward error of a contact in units of [`EPSILON`] (0 otherwise), and why the answer
/// fails the bound, if it does.
#[must_use]
pub fn check_time(
    a: &Body,
    b: &Body,
    options: SweepOptions,
    time: Option<(f32, ImpactStatus)>,
    bound: f64,
) -> (f64, Option<&'static str>) {
    judge_time(&PairGeometry::new(a, b, &options), time, bound)
}

fn judge_time(
    geometry: &PairGeometry,
    time: Option<(f32, ImpactStatus)>,
    bound: f64,
) -> (f64, Option<&'static str>) {
    let tolerance = bound * EPSILON;
    // Under the separating option a pair touching or overlapping at t = 0 (within the bound)
    // and not approaching (within the bound: `s · v` is a dot product of rounded inputs) is
    // rightly a miss, and one clearly separating must not be reported.
    let separating_at_start = geometry.separating_misses
        && geometry.residual(0.0) <= tolerance
        && geometry.approach() <= tolerance;
    let Some((t, status)) = time else {
        let failure = (geometry.least_residual(1.0) < -tolerance && !separating_at_start)
            .then_some("missed a contact deeper than the bound");
        return (0.0, failure);
    };
    let t = f64::from(t);
    if !(0.0..=1.0).contains(&t) {
        return (0.0, Some("time of impact outside [0, 1]"));
    }
    if t == 0.0 && geometry.separating_misses && geometry.approach() < -tolerance {
        return (
            0.0,
            Some("reported a pair separating at t = 0 under the separating option"),
        );
    }
    match status {
        ImpactStatus::Overlapping if t != 0.0 => (0.0, Some("overlap reported at t != 0")),
        ImpactStatus::Overlapping => {
            let failure = (geometry.residual(0.0) > tolerance)
                .then_some("overlap reported for bodies apart at t = 0");
            (0.0, failure)
        }
        ImpactStatus::Contact => {
            let backward_error = geometry.residual(t).abs() / EPSILON;
            let failure = if backward_error > bound {
                Some("bodies do not touch at the reported time")
            } else if geometry.least_residual(t) < -tolerance {
                Some("bodies met before the reported time")
            } else {
                None
            };
            (backward_error, failure)
        }
    }
}

/// Checks the normal and the point of an answer at its reported time `t`.
///
/// * The normal must be the unit vector from the first centre to the second, `w / |w|` with
///   `w = s - v t`. Computing `w` in f32 errs by at most `u(|s| + 2|v| + |w|) <= 2u(S + |w|)`,
///   which turns the direction by at most twice that over `|w|`, and normalising adds a few
///   u: the bound `k ε (1 + S / |w|)` covers it (for k >= 4). Where the centres coincide
///   (`|w| = 0`) there is no direction to check.
/// * The point must be `c_a + d_a t + n r_a` with the reported normal `n`: four roundings of
///   quantities up to `|c_a| + |d_a| + r_a`, within `k ε (|c_a| + |d_a| + r_a)` (k >= 2),
///   plus `k` times the spacing of subnormal f32 (2^-149), which is what a rounding errs by
///   in absolute terms when the point is below `f32::MIN_POSITIVE`.
fn contact_frame_failure(
    a: &Body,
    geometry: &PairGeometry,
    impact: &Impact,
    bound: f64,
) -> Option<&'static str> {
    let t = f64::from(impact.time_of_impact);
    let normal = impact.normal.as_dvec3();
    let separation = geometry.relative_position - geometry.relative_motion * t;
    let distance = separation.length();
    if distance > 0.0 {
        let tolerance = bound * EPSILON * (1.0 + geometry.scale_squared.sqrt() / distance);
        if (normal - separation / distance).length() > tolerance {
            return Some("normal does not point from the first centre to the second");
        }
    }
    let expected_point = a.center + a.displacement * t + normal * a.radius;
    let size = a.center.length() + a.displacement.length() + a.radius;
    // Below f32::MIN_POSITIVE the spacing of f32 is the fixed 2^-149, not relative: each of
    // the point's roundings may err by that much in each coordinate.
    let tolerance = bound * EPSILON * size + bound * SUBNORMAL_SPACING;
    ((impact.point.as_dvec3() - expected_point).length() > tolerance)
        .then_some("point is not on the first body's surface along the normal")
}

/// What a batch's answers look like beside the oracle.
///
/// Used by: `examples/headless.rs` (its parity verdict), `examples/step_bench.rs`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParityReport {
    /// Pairs judged.
    pub pairs: usize,
    /// Pairs the candidate reports as contact or overlap.
    pub candidate_hits: usize,
    /// Pairs the oracle reports as contact or overlap.
    pub reference_hits: usize,
    /// Pairs where candidate and oracle disagree on hit, miss or overlap (allowed within the
    /// bound of a grazing, touching or end-of-step contact).
    pub disagreements: usize,
    /// Pairs whose answer fails the bound.
    pub failures: usize,
    /// Largest backward error of a reported contact, in units of [`EPSILON`].
    pub max_backward_error: f64,
    /// Largest |t - t_oracle| where both report a contact (informative only: the time is
    /// ill-conditioned near grazing).
    pub max_time_difference: f64,
    /// The first few failures: pair index and reason.
    pub first_failures: Vec<(usize, &'static str)>,
}

impl ParityReport {
    /// True when no pair fails the bound.
    ///
    /// Used by: `examples/headless.rs` (its parity verdict), `examples/step_bench.rs`.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.failures == 0
    }
}

impl std::fmt::Display for ParityReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} pairs, {} hits (oracle {}), {} hit/miss disagreements within the bound, \
             max backward error {:.3} eps, max |dt| {:.2e}, {} failures",
            self.pairs,
            self.candidate_hits,
            self.reference_hits,
            self.disagreements,
            self.max_backward_error,
            self.max_time_difference,
            self.failures
        )?;
        for (pair, reason) in &self.first_failures {
            write!(f, "\n  pair {pair}: {reason}")?;
        }
        Ok(())
    }
}

/// An answer [`compare`] judges, one a pair: an impact (`Option<Impact>`, as
/// [`crate::cpu::sweep_batch`] and [`crate::gpu::SweepPipeline::sweep`] give it, judged by
/// [`check_pair`], its normal and point included) or a time alone ([`TimeOfImpact`], as
/// [`crate::cpu::times_of_impact_into`] and [`crate::gpu::SweepPipeline::times_of_impact`]
/// give it, judged by [`check_time`]). Sealed: these two are the answers there are.
///
/// Used by: `examples/headless.rs`, which judges impacts and times alike with [`compare`].
pub trait Answer: Sync + sealed::Judge {}

impl Answer for Option<Impact> {}
impl Answer for TimeOfImpact {}

mod sealed {
    use super::{Body, ImpactStatus, PairCheck, ReferenceImpact, SweepOptions};

    /// One pair as [`super::compare`] judges it: the bodies, the options, the oracle's
    /// answer and the bound.
    pub struct Pair<'a> {
        pub a: &'a Body,
        pub b: &'a Body,
        pub options: SweepOptions,
        pub oracle: Option<&'a ReferenceImpact>,
        pub bound: f64,
    }

    /// How [`super::compare`] judges one answer.
    pub trait Judge {
        /// The verdict on this answer for `pair`, and its time and status.
        fn judge(&self, pair: &Pair<'_>) -> (PairCheck, Option<(f32, ImpactStatus)>);
    }
}

impl sealed::Judge for Option<Impact> {
    fn judge(&self, pair: &sealed::Pair<'_>) -> (PairCheck, Option<(f32, ImpactStatus)>) {
        let candidate = self.as_ref();
        let check = check_pair(
            pair.a,
            pair.b,
            pair.options,
            candidate,
            pair.oracle,
            pair.bound,
        );
        (check, candidate.map(|c| (c.time_of_impact, c.status)))
    }
}

impl sealed::Judge for TimeOfImpact {
    fn judge(&self, pair: &sealed::Pair<'_>) -> (PairCheck, Option<(f32, ImpactStatus)>) {
        let time = self.get();
        let (backward_error, failure) = check_time(pair.a, pair.b, pair.options, time, pair.bound);
        let check = PairCheck {
            backward_error,
            disagrees: disagrees(time, pair.oracle),
            failure,
        };
        (check, time)
    }
}

/// Judges `answers`, one a pair, against the f64 oracle with bound `bound` (in ε): each
/// impact by [`check_pair`], each time by [`check_time`] (see [`Answer`]). The oracle's
/// answers are `oracle` where given ([`reference::sweep_batch`] of the same bodies, pairs
/// and options, for a caller that judges several answers of one batch), else computed here,
/// in parallel.
///
/// Used by: `docs/guide.md` ("Checking answers against the oracle"), the README's parity
/// check (`examples/headless.rs`).
///
/// # Panics
/// If `answers`, `oracle` (when given) and `pairs` differ in length, or a pair index is out
/// of range.
#[must_use]
pub fn compare<B, A>(
    bodies: &[B],
    pairs: &[[u32; 2]],
    options: SweepOptions,
    answers: &[A],
    oracle: Option<&[Option<ReferenceImpact>]>,
    bound: f64,
) -> ParityReport
where
    B: Copy + Into<MovingSphere> + Sync,
    A: Answer,
{
    assert_eq!(pairs.len(), answers.len(), "one answer per pair");
    let computed;
    let oracle = match oracle {
        Some(oracle) => oracle,
        None => {
            computed = reference::sweep_batch(bodies, pairs, options);
            &computed
        }
    };
    judge_batch(bodies, pairs, oracle, |k, a, b, oracle| {
        let pair = sealed::Pair {
            a,
            b,
            options,
            oracle,
            bound,
        };
        sealed::Judge::judge(&answers[k], &pair)
    })
}

/// Judges every pair with `judge` (given the pair's index, its bodies and the oracle's
/// answer; returning the verdict and the candidate's time and status) and gathers the
/// verdicts into a report.
fn judge_batch<B>(
    bodies: &[B],
    pairs: &[[u32; 2]],
    oracle: &[Option<ReferenceImpact>],
    judge: impl Fn(
        usize,
        &Body,
        &Body,
        Option<&ReferenceImpact>,
    ) -> (PairCheck, Option<(f32, ImpactStatus)>)
    + Sync,
) -> ParityReport
where
    B: Copy + Into<MovingSphere> + Sync,
{
    assert_eq!(pairs.len(), oracle.len(), "one oracle answer per pair");
    let body = |index: u32| Body::from(bodies[index as usize]);
    let checks: Vec<(PairCheck, bool, bool, f64)> = pairs
        .par_iter()
        .zip(oracle.par_iter())
        .enumerate()
        .map(|(k, (&[i, j], oracle))| {
            let (check, candidate) = judge(k, &body(i), &body(j), oracle.as_ref());
            let time_difference = match (candidate, oracle) {
                (Some((t, ImpactStatus::Contact)), Some(r)) => {
                    (f64::from(t) - r.time_of_impact).abs()
                }
                _ => 0.0,
            };
            (
                check,
                candidate.is_some(),
                oracle.is_some(),
                time_difference,
            )
        })
        .collect();
    let mut report = ParityReport {
        pairs: pairs.len(),
        ..ParityReport::default()
    };
    for (index, (check, candidate_hit, oracle_hit, time_difference)) in checks.iter().enumerate() {
        report.candidate_hits += usize::from(*candidate_hit);
        report.reference_hits += usize::from(*oracle_hit);
        report.disagreements += usize::from(check.disagrees);
        report.max_backward_error = report.max_backward_error.max(check.backward_error);
        report.max_time_difference = report.max_time_difference.max(*time_difference);
        if let Some(reason) = check.failure {
            report.failures += 1;
            if report.first_failures.len() < 10 {
                report.first_failures.push((index, reason));
            }
        }
    }
    report
}
