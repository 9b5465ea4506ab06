//! Properties of every sweep path on generated pairs (proptest), judged by the backward-error
//! bound of `sweepcast::parity`, on the f32 CPU twin (`cpu::sweep`), the fast CPU batch
//! (`cpu::times_of_impact_into`), the f64 oracle (`reference::sweep`) and, one batch per
//! generated case, the GPU (`gpu::SweepPipeline`):
//!
//! * answers: a reported contact touches at its time and not at any earlier one, a miss never
//!   comes closer than touching, every time is finite and in [0, 1], and a pair that overlaps
//!   at t = 0 is reported `Overlapping` at t = 0 (all within the path's bound);
//! * symmetries: swapping the bodies, translating both, or scaling every length leaves the
//!   answer a valid answer for the original pair: bit for bit on the CPU paths where the
//!   transformation is exact in f32 (every swap, translations and power-of-two scalings on a
//!   grid), within the bound where rounding the transformed input moves it (see [`widened`]).
//!
//! Generated pairs: 2D and 3D, centres within 1e4 of a world offset of up to 1e6, radii from 0
//! (exact) to 100, displacements and relative motions from 0 (exact) to 1e4 per axis, laid out
//! to be free, aimed at a contact time (0 and 1 included), grazing, sliding past from touching
//! at t = 0, overlapping or touching.
//!
//! Every tolerance is `bound ε S²` of `sweepcast::parity` with the path's bound (plus the few
//! f64 roundings of evaluating f here, and [`widened`] where the input itself moved): none is
//! tuned to what the paths happen to do.
//!
//! The answer properties found bodies that touch at t = 0 and slide past each other, which
//! the f32 paths reported as contacts far into the step; `tests/regressions.rs` holds the
//! minimal inputs and the cause (fixed by clamping the time to the vertex), and
//! `tests/properties.proptest-regressions` the seeds, replayed first on every run.

mod common;

use std::cell::Cell;

use glam::{DVec3, Vec3};
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestCaseError};
use sweepcast::SweepOptions;
use sweepcast::gpu::SweepPipeline;
use sweepcast::parity::{self, CPU_BOUND, EPSILON, GPU_BOUND};
use sweepcast::reference::{self, Body, ReferenceImpact};
use sweepcast::{Impact, ImpactStatus, MovingSphere, cpu};

/// Generated pairs per CPU property.
const CPU_CASES: u32 = 32768;
/// Generated batches per GPU property, each one dispatch of up to [`GPU_BATCH`] pairs.
const GPU_CASES: u32 = 128;
const GPU_BATCH: usize = 1024;
/// Earlier times sampled before a reported contact, evenly from t = 0.
const SAMPLES: u32 = 16;
/// Unit roundoff of f32 (half of ε) and of f64.
const U32: f64 = EPSILON / 2.0;
const U64: f64 = f64::EPSILON / 2.0;
/// The f64 oracle's bound, in ε: the twin's derivation (`sweepcast::parity`) with f64's unit
/// roundoff 2^-53 in place of f32's 2^-24 scales `CPU_BOUND` by 2^-29; 2^8 of room for the
/// oracle's extra operations (|C| by `sqrt`, the normalised motion, `distance / magnitude`)
/// makes it 2^-18 ε, 2^21 times below `CPU_BOUND`: the judge errs far less than what it judges.
const ORACLE_BOUND: f64 = CPU_BOUND / 2_097_152.0;

/// `cases` generated cases, failures kept in `tests/properties.proptest-regressions` (and
/// replayed first on every run).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::with_cases(cases)
    }
}

// ---------------------------------------------------------------------------------------------
// Generated pairs

/// Two bodies, in the order they are passed.
#[derive(Copy, Clone, Debug)]
struct Pair {
    a: MovingSphere,
    b: MovingSphere,
}

/// Where the second body starts, relative to the first and to their relative motion `v`.
#[derive(Copy, Clone, Debug)]
enum Layout {
    /// Anywhere within 1e3 per axis.
    Free(DVec3),
    /// Closing in so that the bodies first touch at `time` (up to rounding).
    Aimed { time: f64, direction: DVec3 },
    /// Passing at `factor` times the radius sum, closest at `time`.
    Grazing {
        time: f64,
        direction: DVec3,
        factor: f64,
    },
    /// Touching at t = 0 and sliding past: centres the radius sum apart across the motion
    /// (grazing at t = 0, where rounding decides between a contact at 0 and a miss).
    Sliding { direction: DVec3 },
    /// Centres `fraction` of the radius sum apart at t = 0 (0: coincident).
    Overlapping { fraction: f64, direction: DVec3 },
    /// Centres the radius sum apart along x at t = 0.
    Touching,
}

fn vector(max: f64) -> impl Strategy<Value = DVec3> + Clone {
    [-max..=max, -max..=max, -max..=max].prop_map(DVec3::from_array)
}

fn zero_or(vectors: impl Strategy<Value = DVec3> + Clone) -> impl Strategy<Value = DVec3> + Clone {
    prop_oneof![1 => Just(DVec3::ZERO), 4 => vectors]
}

fn radius() -> impl Strategy<Value = f64> + Clone {
    prop_oneof![1 => Just(0.0), 1 => 0.0..1.0, 3 => 0.0..=100.0]
}

fn time() -> impl Strategy<Value = f64> + Clone {
    prop_oneof![1 => Just(0.0), 1 => Just(1.0), 4 => 0.0..=1.0]
}

fn layout() -> impl Strategy<Value = Layout> + Clone {
    let direction = vector(1.0);
    prop_oneof![
        2 => vector(1e3).prop_map(Layout::Free),
        3 => (time(), direction.clone())
            .prop_map(|(time, direction)| Layout::Aimed { time, direction }),
        2 => (time(), direction.clone(), prop_oneof![Just(1.0), 0.999..1.001])
            .prop_map(|(time, direction, factor)| Layout::Grazing { time, direction, factor }),
        1 => direction.clone().prop_map(|direction| Layout::Sliding { direction }),
        1 => (prop_oneof![Just(0.0), 0.0..1.0], direction)
            .prop_map(|(fraction, direction)| Layout::Overlapping { fraction, direction }),
        1 => Just(Layout::Touching),
    ]
}

/// A unit vector across `motion` (any direction where there is no motion).
fn across(direction: DVec3, motion: DVec3, flat: bool) -> DVec3 {
    let along = motion.normalize_or_zero();
    let fallback = if flat {
        DVec3::new(-along.y, along.x, 0.0)
    } else {
        along.any_orthogonal_vector()
    };
    (direction - along * direction.dot(along))
        .try_normalize()
        .or_else(|| fallback.try_normalize())
        .unwrap_or(DVec3::X)
}

/// Generated pairs. `grid`: every coordinate a multiple of 2^-8 (see
/// [`scaling_by_powers_of_two_is_exact`]); `far`: centres moved by a world offset of up to 1e6.
fn pair(grid: bool, far: bool) -> impl Strategy<Value = Pair> + Clone {
    let offset = if far {
        prop_oneof![2 => Just(DVec3::ZERO), 1 => vector(1e6)].boxed()
    } else {
        Just(DVec3::ZERO).boxed()
    };
    let motion = prop_oneof![
        1 => Just(DVec3::ZERO),
        1 => vector(1.0),
        3 => vector(1e3),
        1 => vector(1e4),
    ];
    (
        any::<bool>(),
        vector(1e4),
        offset,
        (radius(), radius()),
        zero_or(vector(1e3)),
        motion,
        layout(),
    )
        .prop_map(
            move |(flat, first, offset, (ra, rb), displacement, motion, layout)| {
                let flatten = |v: DVec3| if flat { v.with_z(0.0) } else { v };
                let round = |x: f64| {
                    let x = x as f32;
                    if grid { (x * 256.0).round() / 256.0 } else { x }
                };
                let round3 = |v: DVec3| Vec3::from_array(flatten(v).to_array().map(round));
                let (ra, rb) = (f64::from(round(ra)), f64::from(round(rb)));
                let (r, v) = (ra + rb, flatten(motion));
                let s = match layout {
                    Layout::Free(s) => s,
                    Layout::Aimed { time, direction } => {
                        let n = flatten(direction).normalize_or(DVec3::X);
                        v * time + if n.dot(v) < 0.0 { -n } else { n } * r
                    }
                    Layout::Grazing {
                        time,
                        direction,
                        factor,
                    } => v * time + across(flatten(direction), v, flat) * r * factor,
                    Layout::Sliding { direction } => across(flatten(direction), v, flat) * r,
                    Layout::Overlapping {
                        fraction,
                        direction,
                    } => flatten(direction).normalize_or(DVec3::X) * r * fraction,
                    Layout::Touching => DVec3::X * r,
                };
                let first = first + offset;
                Pair {
                    a: MovingSphere::new(round3(first), ra as f32, round3(displacement)),
                    b: MovingSphere::new(round3(first + s), rb as f32, round3(displacement - v)),
                }
            },
        )
}

/// A shift of both centres, up to `max` per axis.
fn shift(max: f64) -> impl Strategy<Value = Vec3> + Clone {
    vector(max).prop_map(|shift| shift.as_vec3())
}

/// A power of two to scale every length by, 2^-8 to 2^8.
fn power_of_two() -> impl Strategy<Value = f32> + Clone {
    (-8..=8).prop_map(|k| 2f32.powi(k))
}

/// A factor to scale every length by, 2^-10 to 2^10.
fn factor() -> impl Strategy<Value = f32> + Clone {
    (-10.0..=10.0f64).prop_map(|exponent| 2f64.powf(exponent) as f32)
}

impl Pair {
    fn map(self, f: impl Fn(MovingSphere) -> MovingSphere) -> Self {
        Self {
            a: f(self.a),
            b: f(self.b),
        }
    }

    fn swapped(self) -> Self {
        Self {
            a: self.b,
            b: self.a,
        }
    }

    /// Both centres moved by `shift`, each coordinate rounded once (f32 addition).
    fn translated(self, shift: Vec3) -> Self {
        self.map(|body| MovingSphere {
            center: body.center + shift,
            ..body
        })
    }

    /// Every length times `factor`, each rounded once (f32 multiplication).
    fn scaled(self, factor: f32) -> Self {
        self.map(|body| {
            MovingSphere::new(
                body.center * factor,
                body.radius * factor,
                body.displacement * factor,
            )
        })
    }

    /// How far rounding may have moved the relative geometry of [`Pair::translated`] from
    /// the exact translation: u per coordinate of the exactly translated centres.
    fn translation_rounding(self, shift: Vec3) -> f64 {
        let moved = |center: Vec3| (center.as_dvec3() + shift.as_dvec3()).length();
        U32 * (moved(self.a.center) + moved(self.b.center))
    }

    /// How far rounding may have moved the relative geometry of [`Pair::scaled`], in this
    /// pair's units: u per coordinate of every centre, radius and displacement.
    fn scaling_rounding(self) -> f64 {
        let size = |body: MovingSphere| {
            body.center.as_dvec3().length()
                + f64::from(body.radius)
                + body.displacement.as_dvec3().length()
        };
        U32 * (size(self.a) + size(self.b))
    }

    /// Whether the centres coincide and do not move apart: no direction for a normal.
    fn coincident(self) -> bool {
        let exact = Exact::new(&self);
        exact.s == DVec3::ZERO && exact.v == DVec3::ZERO
    }

    fn bodies(self) -> (Body, Body) {
        (Body::from(self.a), Body::from(self.b))
    }
}

// ---------------------------------------------------------------------------------------------
// The exact geometry and the properties of one answer

/// The exact (f64) relative geometry of a pair, as `sweepcast::parity` defines it.
struct Exact {
    /// s: second centre minus first at t = 0.
    s: DVec3,
    /// v: first displacement minus second.
    v: DVec3,
    /// R: the radius sum.
    r: f64,
    /// S = |s| + |v| + R.
    scale: f64,
}

impl Exact {
    fn new(pair: &Pair) -> Self {
        let (a, b) = pair.bodies();
        let (s, v, r) = (
            b.center - a.center,
            a.displacement - b.displacement,
            a.radius + b.radius,
        );
        Self {
            s,
            v,
            r,
            scale: s.length() + v.length() + r,
        }
    }

    /// f(t) = |s - v t|² - R²: the squared distance of the centres at time t minus the squared
    /// radius sum (negative while the bodies overlap).
    fn gap(&self, t: f64) -> f64 {
        (self.s - self.v * t).length_squared() - self.r * self.r
    }

    /// When the centres are closest over the step: the vertex of f, clamped to [0, 1].
    fn closest(&self) -> f64 {
        let motion_squared = self.v.length_squared();
        if motion_squared > 0.0 {
            (self.s.dot(self.v) / motion_squared).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// How far f may be from its ideal value for an answer held to `bound` (in ε): `bound ε
    /// S²`, plus what evaluating f here in f64 may err (a few roundings of terms of S²).
    fn tolerance(&self, bound: f64) -> f64 {
        (bound * EPSILON + 8.0 * U64) * self.scale * self.scale
    }
}

/// The bound (in ε) that an answer meets on a pair when it meets `bound` on a copy of the pair
/// whose s, v and R differ from the pair's by at most `rho` in all (rounding a translated or
/// scaled input to f32 moves them so). With w = s - v t, |w| + R <= S: f moves by at most
/// 2|w|ρ + ρ² + 2Rρ + ρ² <= 2Sρ + 2ρ², and the copy's S is at most S + ρ, so the copy's
/// `bound ε S'²` becomes `bound ε (S + ρ)²` on the pair.
fn widened(bound: f64, scale: f64, rho: f64) -> f64 {
    if scale == 0.0 {
        return bound;
    }
    let grown = 1.0 + rho / scale;
    bound * grown * grown + (2.0 * scale * rho + 2.0 * rho * rho) / (EPSILON * scale * scale)
}

/// The time and status of an impact.
fn time_of(impact: Option<&Impact>) -> Option<(f32, ImpactStatus)> {
    impact.map(|impact| (impact.time_of_impact, impact.status))
}

fn widen(answer: Option<(f32, ImpactStatus)>) -> Option<(f64, ImpactStatus)> {
    answer.map(|(t, status)| (f64::from(t), status))
}

/// The properties every answer has, on any path held to `bound` (in ε):
/// * a contact at t: t finite in [0, 1], |f(t)| within the bound (the bodies touch), and f at
///   `SAMPLES` earlier times no lower than minus the bound (they did not meet before);
/// * an overlap: t = 0 exactly and f(0) at most the bound;
/// * a miss: f at the closest approach over the whole step no lower than minus the bound;
/// * f(0) below minus the bound (overlapping at the start) is reported `Overlapping` at 0.
fn check_answer(
    pair: &Pair,
    answer: Option<(f64, ImpactStatus)>,
    bound: f64,
) -> Result<(), TestCaseError> {
    let exact = Exact::new(pair);
    let tolerance = exact.tolerance(bound);
    match answer {
        None => {
            let t = exact.closest();
            prop_assert!(
                exact.gap(t) >= -tolerance,
                "a miss, but at t = {t} f = {:e} is below -{tolerance:e}",
                exact.gap(t)
            );
        }
        Some((t, ImpactStatus::Overlapping)) => {
            prop_assert_eq!(t, 0.0, "an overlap is reported at t = 0");
            prop_assert!(
                exact.gap(0.0) <= tolerance,
                "overlap reported, but f(0) = {:e} > {tolerance:e}",
                exact.gap(0.0)
            );
        }
        Some((t, ImpactStatus::Contact)) => {
            prop_assert!(t.is_finite() && (0.0..=1.0).contains(&t), "t = {t}");
            prop_assert!(
                exact.gap(t).abs() <= tolerance,
                "not touching at t = {t}: f = {:e}, tolerance {tolerance:e}",
                exact.gap(t)
            );
            for k in 0..SAMPLES {
                let earlier = t * f64::from(k) / f64::from(SAMPLES);
                prop_assert!(
                    exact.gap(earlier) >= -tolerance,
                    "contact at t = {t}, but already f = {:e} at t = {earlier}",
                    exact.gap(earlier)
                );
            }
        }
        Some((_, status)) => prop_assert!(false, "a status the test does not know: {status:?}"),
    }
    if exact.gap(0.0) < -tolerance {
        prop_assert_eq!(answer, Some((0.0, ImpactStatus::Overlapping)));
    }
    Ok(())
}

/// `parity::check_pair` and [`check_answer`] on one impact of `pair`.
fn check_impact(pair: &Pair, impact: Option<&Impact>, bound: f64) -> Result<(), TestCaseError> {
    let (a, b) = pair.bodies();
    let check = parity::check_pair(&a, &b, SweepOptions::DEFAULT, impact, None, bound);
    prop_assert_eq!(check.failure, None, "{:?}", impact);
    check_answer(pair, widen(time_of(impact)), bound)
}

/// `parity::check_time` and [`check_answer`] on a time and status of `pair`.
fn check_time(
    pair: &Pair,
    time: Option<(f32, ImpactStatus)>,
    bound: f64,
) -> Result<(), TestCaseError> {
    let (a, b) = pair.bodies();
    let (_, failure) = parity::check_time(&a, &b, SweepOptions::DEFAULT, time, bound);
    prop_assert_eq!(failure, None, "{:?}", time);
    check_answer(pair, widen(time), bound)
}

// ---------------------------------------------------------------------------------------------
// The paths

fn twin(pair: &Pair) -> Option<Impact> {
    cpu::sweep_sphere_sphere(&pair.a, &pair.b, SweepOptions::DEFAULT)
}

fn fast(pair: &Pair) -> Option<(f32, ImpactStatus)> {
    let mut times = Vec::new();
    cpu::times_of_impact_into(
        &[pair.a, pair.b],
        &[[0, 1]],
        SweepOptions::DEFAULT,
        &mut times,
    )
    .expect("valid pair");
    times[0].get()
}

fn oracle(pair: &Pair) -> Option<ReferenceImpact> {
    let (a, b) = pair.bodies();
    reference::sweep_sphere_sphere(&a, &b, SweepOptions::DEFAULT)
}

fn oracle_time(pair: &Pair) -> Option<(f64, ImpactStatus)> {
    oracle(pair).map(|r| (r.time_of_impact, r.status))
}

/// The time and status of the three CPU paths, bit for bit, and their normals (compared by
/// value: a zero component keeps its sign, +0, when the bodies are swapped).
#[derive(Debug, PartialEq)]
struct CpuAnswers {
    twin: Option<(u32, ImpactStatus, Vec3)>,
    fast: Option<(u32, ImpactStatus)>,
    oracle: Option<(u64, ImpactStatus, DVec3)>,
}

impl CpuAnswers {
    fn of(pair: &Pair) -> Self {
        Self {
            twin: twin(pair).map(|i| (i.time_of_impact.to_bits(), i.status, i.normal)),
            fast: fast(pair).map(|(t, status)| (t.to_bits(), status)),
            oracle: oracle(pair).map(|r| (r.time_of_impact.to_bits(), r.status, r.normal)),
        }
    }

    /// The same answers with every normal reversed, but for `coincident` pairs (the centres
    /// coincide and do not move apart): they have no direction, and every path reports `X`.
    fn reversed(mut self, coincident: bool) -> Self {
        if let Some((_, _, normal)) = &mut self.twin {
            *normal = if coincident { Vec3::X } else { -*normal };
        }
        if let Some((_, _, normal)) = &mut self.oracle {
            *normal = if coincident { DVec3::X } else { -*normal };
        }
        self
    }
}

/// Every CPU path's answer for `copy`, a transformed `pair` whose relative geometry rounding
/// moved by at most `rho`, judged on `pair` with the path's bound [`widened`] by `rho`.
fn check_cpu_copy(pair: &Pair, copy: &Pair, rho: f64) -> Result<(), TestCaseError> {
    let scale = Exact::new(pair).scale;
    check_time(
        pair,
        time_of(twin(copy).as_ref()),
        widened(CPU_BOUND, scale, rho),
    )?;
    check_time(pair, fast(copy), widened(CPU_BOUND, scale, rho))?;
    check_answer(pair, oracle_time(copy), widened(ORACLE_BOUND, scale, rho))
}

// ---------------------------------------------------------------------------------------------
// CPU properties

/// How many answers of each kind a property saw, so that it can insist the generator reaches
/// every branch.
#[derive(Copy, Clone, Debug, Default)]
struct Seen {
    contacts: u32,
    overlaps: u32,
    misses: u32,
}

impl Seen {
    fn count(&mut self, answer: Option<(f32, ImpactStatus)>) {
        match answer {
            None => self.misses += 1,
            Some((_, ImpactStatus::Contact)) => self.contacts += 1,
            Some((_, ImpactStatus::Overlapping)) => self.overlaps += 1,
            Some((_, status)) => panic!("a status the test does not know: {status:?}"),
        }
    }

    fn assert_all_seen(&self, what: &str) {
        println!("{what}: {self:?}");
        assert!(
            self.contacts > 0 && self.overlaps > 0 && self.misses > 0,
            "{what}: the generator must reach contacts, overlaps and misses: {self:?}"
        );
    }
}

/// Contacts touch at their time and not before, misses never come within the bound of
/// touching, times are finite and in [0, 1], overlaps are reported at t = 0: on the twin and
/// the fast batch within `CPU_BOUND`, on the oracle within `ORACLE_BOUND`.
#[test]
fn cpu_answers_touch_at_their_time_and_misses_stay_apart() {
    let seen = Cell::new(Seen::default());
    proptest!(config(CPU_CASES), |(pair in pair(false, true))| {
        let impact = twin(&pair);
        check_impact(&pair, impact.as_ref(), CPU_BOUND)?;
        check_time(&pair, fast(&pair), CPU_BOUND)?;
        check_answer(&pair, oracle_time(&pair), ORACLE_BOUND)?;
        let mut counts = seen.get();
        counts.count(time_of(impact.as_ref()));
        seen.set(counts);
    });
    seen.get().assert_all_seen("CPU twin");
}

/// The fast batch runs the twin's algebra without its reach escape: where both report a
/// contact the time is the same to the bit, and where they differ the twin missed a contact
/// the fast batch reports (within the bound, checked above).
#[test]
fn fast_batch_equals_the_twin_bit_for_bit_where_both_hit() {
    proptest!(config(CPU_CASES), |(pair in pair(false, true))| {
        let (twin, fast) = (time_of(twin(&pair).as_ref()), fast(&pair));
        let bits = |answer: Option<(f32, ImpactStatus)>| answer.map(|(t, s)| (t.to_bits(), s));
        if bits(twin) != bits(fast) {
            prop_assert!(
                twin.is_none() && matches!(fast, Some((_, ImpactStatus::Contact))),
                "twin {:?}, fast {:?}", twin, fast
            );
        }
    });
}

/// Swapping the bodies negates s and v exactly (f32 subtraction is symmetric), so every
/// product, the time and the status are the same to the bit and the normal is exactly reversed,
/// on all three CPU paths.
#[test]
fn swapping_the_bodies_gives_the_same_time_and_the_opposite_normal() {
    proptest!(config(CPU_CASES), |(pair in pair(false, true))| {
        let reversed = CpuAnswers::of(&pair).reversed(pair.coincident());
        prop_assert_eq!(CpuAnswers::of(&pair.swapped()), reversed);
    });
}

/// On the grid (multiples of 2^-8 below 2^16 in magnitude, where f32 holds every one) a shift
/// moves both centres exactly, s is unchanged, and so are the time, the status and the normal,
/// to the bit, on all three CPU paths.
#[test]
fn translating_on_the_grid_changes_nothing() {
    let shift = shift(3e4).prop_map(|v| (v * 256.0).round() / 256.0);
    proptest!(config(CPU_CASES), |(pair in pair(true, false), shift in shift)| {
        let moved = pair.translated(shift);
        // The precondition, checked: every translated coordinate is exact.
        for (before, after) in [(pair.a, moved.a), (pair.b, moved.b)] {
            assert_eq!(
                after.center.as_dvec3(),
                before.center.as_dvec3() + shift.as_dvec3(),
                "the grid translation must be exact"
            );
        }
        prop_assert_eq!(CpuAnswers::of(&moved), CpuAnswers::of(&pair));
    });
}

/// Anywhere (shifts up to 1e6 on pairs already up to 1e6 from the origin), the translated
/// answer is a valid answer for the untranslated pair within the bound widened by what
/// rounding the translated centres moved (`widened`), on all three CPU paths.
#[test]
fn translating_anywhere_stays_within_the_bound() {
    proptest!(
        config(CPU_CASES),
        |(pair in pair(false, true), shift in shift(1e6))| {
            check_cpu_copy(&pair, &pair.translated(shift), pair.translation_rounding(shift))?;
        }
    );
}

/// On the grid (inputs multiples of 2^-8, which every rounding keeps them) every product and
/// sum before the square root is a multiple of 2^-32, at least 2^-32 when not 0, and every
/// intermediate is below 2^100 in magnitude: scaled by 2^k (|k| <= 8) each stays a normal f32
/// (or f64) and scales exactly. So the time, status and normal are the same to the bit and the
/// contact point is scaled exactly, on all three CPU paths.
#[test]
fn scaling_by_powers_of_two_is_exact() {
    proptest!(
        config(CPU_CASES),
        |(pair in pair(true, true), factor in power_of_two())| {
            let scaled = pair.scaled(factor);
            prop_assert_eq!(CpuAnswers::of(&scaled), CpuAnswers::of(&pair));
            let points = |pair: &Pair| twin(pair).map(|impact| impact.point);
            prop_assert_eq!(points(&scaled), points(&pair).map(|point| point * factor));
        }
    );
}

/// By any factor from 2^-10 to 2^10, the scaled answer is a valid answer for the unscaled pair
/// within the bound widened by what rounding the scaled inputs moved (`widened`), on all three
/// CPU paths.
#[test]
fn scaling_by_any_factor_stays_within_the_bound() {
    proptest!(
        config(CPU_CASES),
        |(pair in pair(false, true), factor in factor())| {
            check_cpu_copy(&pair, &pair.scaled(factor), pair.scaling_rounding())?;
        }
    );
}

// ---------------------------------------------------------------------------------------------
// GPU properties: one dispatch per generated batch

/// Every pair of `pairs` swept in one dispatch.
fn gpu_sweep(pipeline: &SweepPipeline, pairs: &[Pair]) -> Vec<Option<Impact>> {
    let bodies: Vec<MovingSphere> = pairs.iter().flat_map(|pair| [pair.a, pair.b]).collect();
    let indices: Vec<[u32; 2]> = (0..pairs.len() as u32)
        .map(|k| [2 * k, 2 * k + 1])
        .collect();
    pipeline
        .sweep(&bodies, &indices, SweepOptions::DEFAULT)
        .expect("valid pairs")
}

/// The answer properties of the CPU test above, on the GPU within `GPU_BOUND`.
#[test]
fn gpu_answers_touch_at_their_time_and_misses_stay_apart() {
    let Some(pipeline) =
        common::shared_pipeline("gpu_answers_touch_at_their_time_and_misses_stay_apart")
    else {
        return;
    };
    let seen = Cell::new(Seen::default());
    let batch = prop::collection::vec(pair(false, true), 1..=GPU_BATCH);
    proptest!(config(GPU_CASES), |(pairs in batch)| {
        let mut counts = seen.get();
        for (pair, impact) in pairs.iter().zip(gpu_sweep(pipeline, &pairs)) {
            check_impact(pair, impact.as_ref(), GPU_BOUND)?;
            counts.count(time_of(impact.as_ref()));
        }
        seen.set(counts);
    });
    seen.get().assert_all_seen("GPU");
}

/// Swapping, translating (up to 1e6) and scaling (by 2^k and by any factor) on the GPU: each
/// transformed answer is a valid answer for the original pair within `GPU_BOUND`, widened by
/// what rounding the transformed input moved. WGSL promises no correctly rounded `sqrt` or
/// `/`, so bit-identity is counted, not required.
#[test]
fn gpu_swapped_translated_and_scaled_answers_stay_within_the_bound() {
    let Some(pipeline) =
        common::shared_pipeline("gpu_swapped_translated_and_scaled_answers_stay_within_the_bound")
    else {
        return;
    };
    let identical = Cell::new([0usize; 3]);
    let transform = (shift(1e6), power_of_two(), factor());
    let batch = prop::collection::vec((pair(false, true), transform), 1..=GPU_BATCH / 5);
    proptest!(config(GPU_CASES), |(cases in batch)| {
        let n = cases.len();
        let mut pairs: Vec<Pair> = cases.iter().map(|(pair, _)| *pair).collect();
        pairs.extend(cases.iter().map(|(pair, _)| pair.swapped()));
        pairs.extend(cases.iter().map(|(pair, (shift, _, _))| pair.translated(*shift)));
        pairs.extend(cases.iter().map(|(pair, (_, power, _))| pair.scaled(*power)));
        pairs.extend(cases.iter().map(|(pair, (_, _, factor))| pair.scaled(*factor)));
        for (pair, (_, power, _)) in &cases {
            // The precondition of judging 2^k with the unwidened bound: the scaling is exact.
            assert_eq!(pair.scaled(*power).scaled(power.recip()).bodies(), pair.bodies());
        }
        let impacts = gpu_sweep(pipeline, &pairs);
        // Every answer on its own bodies (normal and point included) ...
        for (copy, impact) in pairs.iter().zip(&impacts) {
            check_impact(copy, impact.as_ref(), GPU_BOUND)?;
        }
        // ... and each transformed one on the original pair.
        let [original, swapped, translated, doubled, scaled] =
            [0, 1, 2, 3, 4].map(|k| &impacts[k * n..(k + 1) * n]);
        let time = |impact: &Option<Impact>| time_of(impact.as_ref());
        let mut counts = identical.get();
        for (k, (pair, (shift, _, _))) in cases.iter().enumerate() {
            let scale = Exact::new(pair).scale;
            check_time(pair, time(&swapped[k]), GPU_BOUND)?;
            let rho = pair.translation_rounding(*shift);
            check_time(pair, time(&translated[k]), widened(GPU_BOUND, scale, rho))?;
            check_time(pair, time(&doubled[k]), GPU_BOUND)?;
            let rho = pair.scaling_rounding();
            check_time(pair, time(&scaled[k]), widened(GPU_BOUND, scale, rho))?;
            let bits = |impact: &Option<Impact>, reverse: bool| {
                impact.map(|i| {
                    let normal = if reverse && !pair.coincident() { -i.normal } else { i.normal };
                    (i.time_of_impact.to_bits(), i.status, normal)
                })
            };
            counts[0] += usize::from(bits(&swapped[k], false) == bits(&original[k], true));
            counts[1] += usize::from(bits(&doubled[k], false) == bits(&original[k], false));
            counts[2] += 1;
        }
        identical.set(counts);
    });
    let [swapped, doubled, pairs] = identical.get();
    println!(
        "GPU: of {pairs} pairs, {swapped} swapped and {doubled} scaled by 2^k gave the same time, \
         status and (reversed) normal to the bit"
    );
}
