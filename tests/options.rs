//! The sweep options on every path, held to the oracle with the same options.
//!
//! * A periodic box, 3D (`PeriodicBox::cube`) and 2D (`PeriodicBox::rectangle`, circles):
//!   seeded worlds in `[0, L)^d` whose bodies fit the box (some at the very edge of the
//!   validity condition), with pairs straddling faces, edges and corners that can meet only
//!   through the wrap, plus random pairs; explicit pairs across a face, an edge and a corner,
//!   exactly half a box apart (the tie) and at 0 against the largest f32 below `L`; the wrap
//!   against sweeping an explicitly shifted copy of the second body; the same cases in boxes
//!   scaled by powers of two from 2^-100 to 2^90; and one GPU pipeline called in turn with
//!   each set of options, whole and in chunks.
//! * The separating option (`SweepOptions::event_driven`): a seeded world of post-collision
//!   states (touching exactly, or within rounding, or overlapping by a few ulps; moving apart,
//!   tangentially, not at all, or towards each other) plus random pairs, and explicit cases,
//!   alone and combined with the box.
//! * The typed errors of a box too small for a body (`Error::PeriodicBoxTooSmall`) and of an
//!   invalid box (`Error::InvalidPeriodicBox`), and an axis of infinite period not wrapping.
//! * The judge failing wrong answers under the options.
//!
//! Every batch runs on the CPU twin (`cpu::sweep_batch`), the single-pair function (which
//! must equal the batch exactly), the fast batch (`cpu::times_of_impact_into`, equal to the
//! twin to the bit wherever both report a contact) and, when an adapter exists, the GPU
//! (`SweepPipeline::sweep`); each is judged by `parity::compare` / `compare_times` with its
//! bound.

mod common;

use glam::{DVec3, Vec2, Vec3};
use sweepcast::TimeOfImpact;
use sweepcast::cpu;
use sweepcast::gpu::SweepPipeline;
use sweepcast::parity::{self, CPU_BOUND, GPU_BOUND, ParityReport};
use sweepcast::reference::{self, Body, ReferenceImpact};
use sweepcast::{
    Error, Impact, ImpactStatus, MovingCircle, MovingSphere, PeriodicBox, SweepOptions,
    low_level::MAX_MAGNITUDE,
};
use testkit::{SplitMix64, Workload, WorkloadConfig};

// ---------------------------------------------------------------------------------------
// Running every path
// ---------------------------------------------------------------------------------------

/// A path's answer for one pair: time and status, `None` for a miss.
type Answer = Option<(f32, ImpactStatus)>;

fn answer(impact: &Option<Impact>) -> Answer {
    impact.map(|impact| (impact.time_of_impact, impact.status))
}

/// Every f32 field of an answer as bits, for comparisons to the bit.
fn bits(impact: &Option<Impact>) -> Option<(u32, [u32; 3], [u32; 3], ImpactStatus)> {
    impact.map(|impact| {
        (
            impact.time_of_impact.to_bits(),
            impact.point.to_array().map(f32::to_bits),
            impact.normal.to_array().map(f32::to_bits),
            impact.status,
        )
    })
}

fn answer_bits(answer: Answer) -> Option<(u32, ImpactStatus)> {
    answer.map(|(time, status)| (time.to_bits(), status))
}

/// Every path's answers for one batch, each already judged against the oracle.
struct Swept {
    twin: Vec<Option<Impact>>,
    fast: Vec<TimeOfImpact>,
    gpu: Option<Vec<Option<Impact>>>,
    oracle: Vec<Option<ReferenceImpact>>,
    /// The parity report of each path, named.
    reports: Vec<(&'static str, ParityReport)>,
}

impl Swept {
    /// Each path's answer for pair `k`, named.
    fn answers(&self, k: usize) -> Vec<(&'static str, Answer)> {
        let mut answers = vec![
            ("CPU twin", answer(&self.twin[k])),
            ("fast batch", self.fast[k].get()),
        ];
        if let Some(gpu) = &self.gpu {
            answers.push(("GPU", answer(&gpu[k])));
        }
        answers
    }
}

/// Sweeps `pairs` with `options` on every path, judges each against the oracle with the same
/// options and its bound, prints the reports, and checks that the single-pair function equals
/// the batch exactly and that the fast batch gives the twin's times to the bit.
fn sweep_every_path<B>(
    test: &str,
    name: &str,
    bodies: &[B],
    pairs: &[[u32; 2]],
    options: SweepOptions,
) -> Swept
where
    B: Copy + Into<MovingSphere> + Sync,
{
    let twin = cpu::sweep_batch(bodies, pairs, options)
        .unwrap_or_else(|error| panic!("{name}: CPU twin: {error}"));
    assert_eq!(twin.len(), pairs.len(), "{name}: one answer per pair");
    for (k, &[i, j]) in pairs.iter().enumerate() {
        let single = cpu::sweep_sphere_sphere(&bodies[i as usize], &bodies[j as usize], options);
        assert_eq!(
            bits(&single),
            bits(&twin[k]),
            "{name} pair {k}: the single-pair function must equal the batch exactly"
        );
        assert_eq!(single, twin[k], "{name} pair {k}");
    }
    let mut fast = vec![TimeOfImpact::OVERLAPPING; 3];
    cpu::times_of_impact_into(bodies, pairs, options, &mut fast)
        .unwrap_or_else(|error| panic!("{name}: fast batch: {error}"));
    assert_eq!(fast.len(), pairs.len(), "{name}: one time per pair");
    let gpu = common::shared_pipeline(test).map(|pipeline| {
        let impacts = pipeline
            .sweep(bodies, pairs, options)
            .unwrap_or_else(|error| panic!("{name}: GPU: {error}"));
        assert_eq!(
            impacts.len(),
            pairs.len(),
            "{name}: one GPU answer per pair"
        );
        impacts
    });

    let mut reports = vec![
        (
            "CPU twin",
            parity::compare(bodies, pairs, options, &twin, CPU_BOUND),
        ),
        (
            "fast batch",
            parity::compare_times(bodies, pairs, options, &fast, CPU_BOUND),
        ),
    ];
    if let Some(gpu) = &gpu {
        reports.push((
            "GPU",
            parity::compare(bodies, pairs, options, gpu, GPU_BOUND),
        ));
    }
    for (path, report) in &reports {
        println!("{name} [{path}]: {report}");
        assert!(report.passed(), "{name} [{path}]: {report}");
    }
    assert_fast_equals_twin(name, &fast, &twin);
    Swept {
        twin,
        fast,
        gpu,
        oracle: reference::sweep_batch(bodies, pairs, options),
        reports,
    }
}

/// The fast batch gives the twin's time and status to the bit wherever both report a hit.
/// They may part only where the twin's reach escape (which the fast batch leaves out) fired
/// at a contact within rounding of t = 1: a twin miss against a fast contact, which
/// `compare_times` has judged within the bound.
fn assert_fast_equals_twin(name: &str, fast: &[TimeOfImpact], twin: &[Option<Impact>]) {
    let mut differing = 0;
    for (k, (fast, twin)) in fast.iter().zip(twin).enumerate() {
        let (fast, twin) = (fast.get(), answer(twin));
        if answer_bits(fast) == answer_bits(twin) {
            continue;
        }
        differing += 1;
        assert!(
            twin.is_none() && matches!(fast, Some((_, ImpactStatus::Contact))),
            "{name} pair {k}: fast batch {fast:?}, twin {twin:?}"
        );
    }
    println!(
        "{name}: the fast batch equals the twin to the bit on all but {differing} pairs \
         (twin miss, fast contact near t = 1, within the bound)"
    );
}

// ---------------------------------------------------------------------------------------
// Explicit cases with known answers
// ---------------------------------------------------------------------------------------

/// The answer a case must get on every path and from the oracle.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Expect {
    Miss,
    /// A miss by the oracle, by a margin within the bound of a contact at t = 1: the f32
    /// paths may report either (the judge holds them to the bound).
    NearMiss,
    /// A contact at this time (relative tolerance 1e-5; exactly 0 for touching at t = 0).
    Contact(f64),
    /// Overlapping at t = 0.
    Overlap,
}

impl Expect {
    /// Whether an f32 path's answer meets the expectation.
    fn holds(self, answer: Option<(f64, ImpactStatus)>) -> bool {
        match (self, answer) {
            (Self::Miss | Self::NearMiss, None) => true,
            (Self::NearMiss, Some((time, ImpactStatus::Contact))) => time >= 0.999,
            (Self::Overlap, Some((time, ImpactStatus::Overlapping))) => time == 0.0,
            (Self::Contact(expected), Some((time, ImpactStatus::Contact))) => {
                (time - expected).abs() <= 1e-5 * expected
            }
            _ => false,
        }
    }
}

/// A pair and its expected answer under the default options (`plain`) and under the
/// separating option (`event`), both with the same periodic box (or none).
#[derive(Copy, Clone, Debug)]
struct Case<B> {
    name: &'static str,
    a: B,
    b: B,
    plain: Expect,
    event: Expect,
}

fn case<B>(name: &'static str, a: B, b: B, plain: Expect, event: Expect) -> Case<B> {
    Case {
        name,
        a,
        b,
        plain,
        event,
    }
}

/// A case whose answer does not depend on the separating option.
fn same<B>(name: &'static str, a: B, b: B, expect: Expect) -> Case<B> {
    case(name, a, b, expect, expect)
}

fn sphere(center: [f32; 3], radius: f32, displacement: [f32; 3]) -> MovingSphere {
    MovingSphere::new(
        Vec3::from_array(center),
        radius,
        Vec3::from_array(displacement),
    )
}

fn circle(center: [f32; 2], radius: f32, displacement: [f32; 2]) -> MovingCircle {
    MovingCircle::new(
        Vec2::from_array(center),
        radius,
        Vec2::from_array(displacement),
    )
}

/// Runs `cases` (each the pair `[2k, 2k + 1]`) on every path under the default options and
/// under the separating option, each with `periodic_box`, and checks each path's answer and
/// the oracle's against the expectation.
fn check_cases<B>(test: &str, name: &str, periodic_box: Option<PeriodicBox>, cases: &[Case<B>])
where
    B: Copy + Into<MovingSphere> + Sync + std::fmt::Debug,
{
    let bodies: Vec<B> = cases.iter().flat_map(|c| [c.a, c.b]).collect();
    let pairs: Vec<[u32; 2]> = (0..cases.len() as u32)
        .map(|k| [2 * k, 2 * k + 1])
        .collect();
    let runs = [
        ("default", SweepOptions::DEFAULT, false),
        ("event-driven", SweepOptions::event_driven(), true),
    ];
    for (option_name, options, event) in runs {
        let options = SweepOptions {
            periodic_box,
            ..options
        };
        let run = format!("{name}, {option_name}");
        let swept = sweep_every_path(test, &run, &bodies, &pairs, options);
        for (k, case) in cases.iter().enumerate() {
            let expect = if event { case.event } else { case.plain };
            let oracle = swept.oracle[k].map(|r| (r.time_of_impact, r.status));
            let oracle_expect = if expect == Expect::NearMiss {
                Expect::Miss
            } else {
                expect
            };
            assert!(
                oracle_expect.holds(oracle),
                "{run}: {}: oracle says {oracle:?}, expected {expect:?} ({case:?})",
                case.name
            );
            for (path, answer) in swept.answers(k) {
                let answer = answer.map(|(time, status)| (f64::from(time), status));
                assert!(
                    expect.holds(answer),
                    "{run}: {}: {path} says {answer:?}, expected {expect:?} ({case:?})",
                    case.name
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Periodic worlds
// ---------------------------------------------------------------------------------------

/// Half the bodies have centres on a grid of 2^-12: every `b - k L` of theirs is then exact
/// in f32, so that an explicitly shifted copy is the very input the wrap sweeps.
const GRID: f64 = 4096.0;

/// `x` wrapped into `[0, period)` as f32 (on the grid if asked); an axis of infinite period
/// keeps `x`.
fn place(x: f64, period: f64, on_grid: bool) -> f32 {
    if !period.is_finite() {
        return x as f32;
    }
    let mut x = x.rem_euclid(period);
    if on_grid {
        x = (x * GRID).floor() / GRID;
    }
    let x = x as f32;
    // Within rounding of the period is within rounding of 0.
    if f64::from(x) >= period { 0.0 } else { x }
}

/// The largest `d` with `radius + d < limit` exactly: a body at the very edge of the
/// validity condition `radius + |displacement_i| < L_i / 4`.
fn largest_reach_below(limit: f64, radius: f32) -> f32 {
    let fits = |d: f32| f64::from(radius) + f64::from(d) < limit;
    let mut d = (limit - f64::from(radius)) as f32;
    while !fits(d) {
        d = d.next_down();
    }
    while fits(d.next_up()) {
        d = d.next_up();
    }
    d
}

/// A body that fits the box (reach at most 0.9 of the limit on every axis), of which one in
/// eight then moves as far as the box allows along one axis (the largest f32 below the
/// limit).
fn fitted_body(
    rng: &mut SplitMix64,
    center: Vec3,
    radius: f32,
    displacement: DVec3,
    limit: DVec3,
    dimensions: u32,
) -> MovingSphere {
    let r = f64::from(radius);
    let mut scale: f64 = 1.0;
    for axis in 0..3 {
        if limit[axis].is_finite() && displacement[axis] != 0.0 {
            scale = scale.min((0.9 * limit[axis] - r) / displacement[axis].abs());
        }
    }
    let mut d = (displacement * scale).as_vec3();
    if rng.below(8) == 0 {
        let axis = rng.below(u64::from(dimensions)) as usize;
        let sign = if d[axis] < 0.0 { -1.0 } else { 1.0 };
        d[axis] = sign * largest_reach_below(limit[axis], radius);
    }
    MovingSphere::new(center, radius, d)
}

/// Bodies in `[0, L)^d` and candidate pairs: pairs `0..crossing` straddle a face, an edge or
/// a corner of the box (in turn) and can meet only through the wrap; one in five of them
/// touches or nearly touches at t = 0 (post-collision states across the boundary). The
/// rest are random pairs among all bodies, with `free` more bodies scattered in the box.
struct PeriodicWorld {
    bodies: Vec<MovingSphere>,
    pairs: Vec<[u32; 2]>,
    /// For each crossing pair, how many axes it straddles (1 a face, 2 an edge, 3 a corner).
    crossed: Vec<usize>,
}

fn periodic_world(
    seed: u64,
    periodic_box: &PeriodicBox,
    dimensions: u32,
    crossing: usize,
    free: usize,
    random: usize,
) -> PeriodicWorld {
    let mut rng = SplitMix64::new(seed);
    let period = periodic_box.period().as_dvec3();
    let limit = period / 4.0;
    let dims = dimensions as usize;
    let mut bodies = Vec::new();
    let mut pairs = Vec::new();
    let mut crossed_axes = Vec::new();
    for k in 0..crossing {
        let on_grid = k % 2 == 0;
        let crossed_count = 1 + k % dims;
        let mut axes: Vec<usize> = (0..dims).collect();
        for i in (1..dims).rev() {
            axes.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let crossed = &axes[..crossed_count];
        let (ra, rb) = (rng.range(0.05, 1.2) as f32, rng.range(0.05, 1.2) as f32);
        let sum = f64::from(ra) + f64::from(rb);
        // From a to b's nearest image: well across every crossed axis, along the others.
        let direction = loop {
            let d = rng.in_ball(1.0, dimensions).as_dvec3().normalize_or_zero();
            if crossed.iter().all(|&axis| d[axis].abs() >= 0.25) {
                break d;
            }
        };
        let distance = if k % 5 == 0 {
            rng.range(0.999, 1.001)
        } else {
            rng.range(0.98, 2.5)
        } * sum;
        let s = direction * distance;
        let mut a = DVec3::ZERO;
        for axis in 0..dims {
            let l = period[axis];
            a[axis] = if crossed.contains(&axis) {
                // Close enough to the face that b's image lies across it.
                let u = rng.range(0.05, 0.95);
                if s[axis] > 0.0 {
                    l - s[axis] * u
                } else {
                    -s[axis] * u
                }
            } else {
                rng.range((-s[axis]).max(0.0), l - s[axis].max(0.0))
            };
        }
        let b = a + s;
        let center =
            |p: DVec3| Vec3::from_array(std::array::from_fn(|i| place(p[i], period[i], on_grid)));
        // Relative motion mostly along the line of centres (towards or away), some random.
        let v = if rng.below(4) == 0 {
            rng.in_ball(3.0 * sum, dimensions).as_dvec3()
        } else {
            direction * rng.range(-0.3, 1.5) * distance
                + rng.in_ball(0.5 * sum, dimensions).as_dvec3()
        };
        let common = rng.in_ball(1.0, dimensions).as_dvec3();
        let alpha = rng.unit();
        let body_a = fitted_body(
            &mut rng,
            center(a),
            ra,
            common + v * alpha,
            limit,
            dimensions,
        );
        let body_b = fitted_body(
            &mut rng,
            center(b),
            rb,
            common - v * (1.0 - alpha),
            limit,
            dimensions,
        );
        let index = bodies.len() as u32;
        bodies.extend([body_a, body_b]);
        pairs.push(if rng.below(2) == 0 {
            [index, index + 1]
        } else {
            [index + 1, index]
        });
        crossed_axes.push(crossed_count);
    }
    for k in 0..free {
        let c = DVec3::new(
            rng.range(0.0, period.x),
            rng.range(0.0, period.y),
            if dims == 3 {
                rng.range(0.0, period.z)
            } else {
                0.0
            },
        );
        let center = Vec3::from_array(std::array::from_fn(|i| place(c[i], period[i], k % 2 == 0)));
        let radius = rng.range(0.05, 1.5) as f32;
        let d = rng.in_ball(3.0, dimensions).as_dvec3();
        bodies.push(fitted_body(&mut rng, center, radius, d, limit, dimensions));
    }
    let n = bodies.len() as u64;
    for _ in 0..random {
        pairs.push([rng.below(n) as u32, rng.below(n) as u32]);
    }
    PeriodicWorld {
        bodies,
        pairs,
        crossed: crossed_axes,
    }
}

/// The same bodies as circles (the world of a rectangle has z = 0 throughout).
fn circles(bodies: &[MovingSphere]) -> Vec<MovingCircle> {
    bodies
        .iter()
        .map(|b| {
            assert_eq!((b.center.z, b.displacement.z), (0.0, 0.0));
            MovingCircle::new(b.center.truncate(), b.radius, b.displacement.truncate())
        })
        .collect()
}

/// Sweeps a periodic world on every path under `options` (which hold its box) and checks
/// what makes it a test of the wrap: bodies in `[0, L)` that fit the box, some at the edge
/// of the validity condition; many hits; and crossing pairs that meet only through the wrap.
fn check_periodic_world<B>(
    test: &str,
    name: &str,
    bodies: &[B],
    world: &PeriodicWorld,
    options: SweepOptions,
) -> Swept
where
    B: Copy + Into<MovingSphere> + Sync,
{
    let periodic_box = options.periodic_box.expect("a periodic world has a box");
    let period = periodic_box.period();
    sweepcast::low_level::validate_periodic_reach(bodies, &periodic_box)
        .expect("every body fits the box");
    let mut near_limit = 0;
    for &body in bodies {
        let body: MovingSphere = body.into();
        for axis in (0..3).filter(|&axis| periodic_box.wraps(axis)) {
            assert!(
                (0.0..period[axis]).contains(&body.center[axis]),
                "{name}: {body:?} outside [0, L)"
            );
            let reach = f64::from(body.radius) + f64::from(body.displacement[axis].abs());
            let quarter = f64::from(period[axis]) / 4.0;
            near_limit += usize::from(
                f64::from(largest_reach_below(quarter, body.radius)) + f64::from(body.radius)
                    == reach,
            );
        }
    }
    assert!(
        near_limit * 20 >= bodies.len(),
        "{name}: only {near_limit} bodies at the edge of the validity condition"
    );

    let swept = sweep_every_path(test, name, bodies, &world.pairs, options);
    for (path, report) in &swept.reports {
        assert!(
            report.candidate_hits * 5 >= report.pairs,
            "{name} [{path}]: too few hits for a test of the wrap: {report}"
        );
    }

    // The crossing pairs lie about L apart without the wrap: they meet only through it.
    let crossing = &world.pairs[..world.crossed.len()];
    let unwrapped = SweepOptions {
        periodic_box: None,
        ..options
    };
    let without_box = reference::sweep_batch(bodies, crossing, unwrapped);
    assert!(
        without_box.iter().all(Option::is_none),
        "{name}: a crossing pair meets without the wrap"
    );
    let mut hits = [0usize; 4];
    let mut counts = [0usize; 4];
    for (k, &crossed) in world.crossed.iter().enumerate() {
        counts[crossed] += 1;
        hits[crossed] += usize::from(swept.oracle[k].is_some());
    }
    println!(
        "{name}: crossing pairs meeting only through the wrap: {} of {} across a face, {} of {} \
         across an edge, {} of {} across a corner; {near_limit} (body, axis) at the edge of the \
         validity condition",
        hits[1], counts[1], hits[2], counts[2], hits[3], counts[3]
    );
    for crossed in 1..4 {
        assert!(
            hits[crossed] * 4 >= counts[crossed],
            "{name}: too few crossing pairs meet across {crossed} axes: {} of {}",
            hits[crossed],
            counts[crossed]
        );
    }
    swept
}

/// A cube of side 40 (reach limit 10) and a rectangle of 48 by 30 (limits 12 and 7.5).
fn boxes() -> (PeriodicBox, PeriodicBox) {
    (
        PeriodicBox::cube(40.0).unwrap(),
        PeriodicBox::rectangle(Vec2::new(48.0, 30.0)).unwrap(),
    )
}

fn world_3d(cube: &PeriodicBox) -> PeriodicWorld {
    periodic_world(31, cube, 3, 4_000, 2_000, 4_000)
}

fn world_2d(rectangle: &PeriodicBox) -> PeriodicWorld {
    periodic_world(32, rectangle, 2, 3_000, 2_000, 3_000)
}

#[test]
fn periodic_worlds_pass_the_bound_on_every_path() {
    const TEST: &str = "periodic_worlds_pass_the_bound_on_every_path";
    let (cube, rectangle) = boxes();
    let world = world_3d(&cube);
    let flat = world_2d(&rectangle);
    let flat_circles = circles(&flat.bodies);
    for (option_name, options) in [
        ("default", SweepOptions::DEFAULT),
        ("event-driven", SweepOptions::event_driven()),
    ] {
        check_periodic_world(
            TEST,
            &format!("periodic 3D, {option_name}"),
            &world.bodies,
            &world,
            options.with_periodic_box(cube),
        );
        check_periodic_world(
            TEST,
            &format!("periodic 2D, {option_name}"),
            &flat_circles,
            &flat,
            options.with_periodic_box(rectangle),
        );
    }
}

/// The largest f32 below `x`.
fn below(x: f32) -> f32 {
    x.next_down()
}

/// The options reach the device with every call and every chunk of a call: one pipeline
/// called in turn with different options gives each call the answers of its own options
/// (nothing stale from the call before), and a call split into many dispatches gives the
/// answers of one dispatch.
#[test]
fn every_gpu_call_and_chunk_gets_its_own_options() {
    const TEST: &str = "every_gpu_call_and_chunk_gets_its_own_options";
    let Some(context) = common::gpu_context(TEST) else {
        return;
    };
    let whole = SweepPipeline::new(&context).unwrap();
    let chunked = SweepPipeline::new(&context)
        .unwrap()
        .with_max_pairs_per_dispatch(1_000);
    let (cube, _) = boxes();
    let world = world_3d(&cube);
    let runs = [
        (
            "event-driven in the box",
            SweepOptions::event_driven().with_periodic_box(cube),
        ),
        ("default", SweepOptions::DEFAULT),
        (
            "default in the box",
            SweepOptions::DEFAULT.with_periodic_box(cube),
        ),
        ("event-driven", SweepOptions::event_driven()),
    ];
    let mut first = Vec::new();
    for round in 0..2 {
        for (k, (name, options)) in runs.iter().enumerate() {
            let answers = whole.sweep(&world.bodies, &world.pairs, *options).unwrap();
            let in_chunks = chunked
                .sweep(&world.bodies, &world.pairs, *options)
                .unwrap();
            assert!(
                answers.iter().map(bits).eq(in_chunks.iter().map(bits)),
                "{name}: {} chunks must give the answers of one dispatch",
                world.pairs.len().div_ceil(1_000)
            );
            if round == 0 {
                let report =
                    parity::compare(&world.bodies, &world.pairs, *options, &answers, GPU_BOUND);
                println!("GPU call {k}, {name}: {report}");
                assert!(report.passed(), "{name}: {report}");
                first.push(answers);
            } else {
                assert!(
                    answers.iter().map(bits).eq(first[k].iter().map(bits)),
                    "{name}: the second call with these options must repeat the first"
                );
            }
        }
    }
    // The four option sets do give four different sets of answers.
    for k in 1..first.len() {
        assert_ne!(
            first[k - 1],
            first[k],
            "{} and {}",
            runs[k - 1].0,
            runs[k].0
        );
    }
}

/// Pairs with known answers in the cube of side 40.
fn cube_cases() -> Vec<Case<MovingSphere>> {
    let l = 40.0f32;
    let top = below(l);
    // The relative reach at 0.9 of the limit (9 of 10), and at its very edge.
    let edge = largest_reach_below(10.0, 1.0);
    let corner_time = 1.0 - 0.5 / 3f64.sqrt();
    let edge_time = 1.0 - 0.5 / 2f64.sqrt();
    vec![
        same(
            "across the x face",
            sphere([39.5, 20.0, 20.0], 0.25, [1.0, 0.0, 0.0]),
            sphere([0.5, 20.0, 20.0], 0.25, [0.0; 3]),
            Expect::Contact(0.5),
        ),
        same(
            "across the x face, the other way round",
            sphere([0.5, 20.0, 20.0], 0.25, [0.0; 3]),
            sphere([39.5, 20.0, 20.0], 0.25, [1.0, 0.0, 0.0]),
            Expect::Contact(0.5),
        ),
        same(
            "across the z face, both moving",
            sphere([7.0, 7.0, 39.75], 0.125, [0.0, 0.0, 0.5]),
            sphere([7.0, 7.0, 0.25], 0.125, [0.0, 0.0, -0.5]),
            Expect::Contact(0.25),
        ),
        same(
            "across the y-z edge",
            sphere([3.0, 39.5, 39.5], 0.25, [0.0, 1.0, 1.0]),
            sphere([3.0, 0.5, 0.5], 0.25, [0.0; 3]),
            Expect::Contact(edge_time),
        ),
        same(
            "across a corner",
            sphere([39.5, 39.5, 39.5], 0.25, [1.0, 1.0, 1.0]),
            sphere([0.5, 0.5, 0.5], 0.25, [0.0; 3]),
            Expect::Contact(corner_time),
        ),
        same(
            "across a corner, the other way round",
            sphere([0.5, 0.5, 0.5], 0.25, [-1.0, -1.0, -1.0]),
            sphere([39.5, 39.5, 39.5], 0.25, [0.0; 3]),
            Expect::Contact(corner_time),
        ),
        same(
            "across a corner, moving apart",
            sphere([39.5, 39.5, 39.5], 0.25, [-1.0, -1.0, -1.0]),
            sphere([0.5, 0.5, 0.5], 0.25, [0.0; 3]),
            Expect::Miss,
        ),
        same(
            "half a box apart on x, closing by 16 of 20 (the tie)",
            sphere([10.0, 20.0, 20.0], 1.0, [8.0, 0.0, 0.0]),
            sphere([30.0, 20.0, 20.0], 1.0, [-8.0, 0.0, 0.0]),
            Expect::Miss,
        ),
        same(
            "half a box apart on x, at rest",
            sphere([30.0, 5.0, 5.0], 1.0, [0.0; 3]),
            sphere([10.0, 5.0, 5.0], 9.0, [0.0; 3]),
            Expect::Miss,
        ),
        same(
            "half a box apart on y, near on x",
            sphere([20.0, 5.0, 20.0], 1.0, [0.5, 8.0, 0.0]),
            sphere([21.0, 25.0, 20.0], 1.0, [0.0, -8.0, 0.0]),
            Expect::Miss,
        ),
        same(
            "half a box apart on every axis (eight images tie)",
            sphere([10.0, 10.0, 10.0], 1.0, [5.0, 5.0, 5.0]),
            sphere([30.0, 30.0, 30.0], 1.0, [-5.0, -5.0, -5.0]),
            Expect::Miss,
        ),
        same(
            "half a box apart on x, each at the edge of the validity condition",
            sphere([0.0, 20.0, 20.0], 1.0, [edge, 0.0, 0.0]),
            sphere([20.0, 20.0, 20.0], 1.0, [-edge, 0.0, 0.0]),
            Expect::NearMiss,
        ),
        // At rest (s . v = 0): not approaching, so a miss under the separating option.
        case(
            "at 0 and at the largest f32 below L: overlapping, at rest",
            sphere([0.0, 20.0, 20.0], 0.25, [0.0; 3]),
            sphere([top, 20.0, 20.0], 0.25, [0.0; 3]),
            Expect::Overlap,
            Expect::Miss,
        ),
        case(
            "at the largest f32 below L and at 0: overlapping, at rest",
            sphere([top, 20.0, 20.0], 0.25, [0.0; 3]),
            sphere([0.0, 20.0, 20.0], 0.25, [0.0; 3]),
            Expect::Overlap,
            Expect::Miss,
        ),
        same(
            "points at 0 and one ulp below L: contact after one ulp of travel",
            sphere([0.0, 20.0, 20.0], 0.0, [-1.0, 0.0, 0.0]),
            sphere([top, 20.0, 20.0], 0.0, [0.0; 3]),
            Expect::Contact(f64::from(l - top)),
        ),
        same(
            "points at the largest f32 below L and at 0, moving apart",
            sphere([top, 20.0, 20.0], 0.0, [-1.0, 0.0, 0.0]),
            sphere([0.0, 20.0, 20.0], 0.0, [0.0; 3]),
            Expect::Miss,
        ),
        case(
            "at 0 and just below L on every axis: overlapping across the corner, at rest",
            sphere([0.0; 3], 0.25, [0.0; 3]),
            sphere([top; 3], 0.25, [0.0; 3]),
            Expect::Overlap,
            Expect::Miss,
        ),
        same(
            "at 0 and just below L on every axis: overlapping across the corner, approaching",
            sphere([0.0; 3], 0.25, [-0.5, -0.5, -0.5]),
            sphere([top; 3], 0.25, [0.0; 3]),
            Expect::Overlap,
        ),
        same(
            "at 0 and just below L, 1.5 apart on y: meeting across the x face",
            sphere([0.0, 5.0, 5.0], 0.5, [0.0; 3]),
            sphere([top, 6.5, 5.0], 0.5, [0.0, -1.0, 0.0]),
            Expect::Contact(0.5),
        ),
        // The separating option across the boundary.
        case(
            "touching across the x face, moving apart",
            sphere([39.75, 20.0, 20.0], 0.25, [-1.0, 0.0, 0.0]),
            sphere([0.25, 20.0, 20.0], 0.25, [0.0; 3]),
            Expect::Contact(0.0),
            Expect::Miss,
        ),
        same(
            "touching across the x face, approaching",
            sphere([39.75, 20.0, 20.0], 0.25, [1.0, 0.0, 0.0]),
            sphere([0.25, 20.0, 20.0], 0.25, [0.0; 3]),
            Expect::Contact(0.0),
        ),
        case(
            "touching across a corner along (1, 2, 2) / 3, moving apart",
            sphere([39.875, 39.75, 39.75], 0.375, [-0.25, -0.5, -0.5]),
            sphere([0.125, 0.25, 0.25], 0.375, [0.0; 3]),
            Expect::Contact(0.0),
            Expect::Miss,
        ),
        same(
            "touching across a corner along (1, 2, 2) / 3, approaching",
            sphere([39.875, 39.75, 39.75], 0.375, [0.25, 0.5, 0.5]),
            sphere([0.125, 0.25, 0.25], 0.375, [0.0; 3]),
            Expect::Contact(0.0),
        ),
        case(
            "touching across the y face, sliding tangentially (s . v = 0)",
            sphere([5.0, 0.25, 5.0], 0.25, [1.0, 0.0, 0.5]),
            sphere([5.0, 39.75, 5.0], 0.25, [0.0; 3]),
            Expect::Contact(0.0),
            Expect::Miss,
        ),
        case(
            "overlapping by an ulp across the x face (at 0 and below L), moving apart",
            sphere([0.0, 20.0, 20.0], 0.25, [1.0, 0.0, 0.0]),
            sphere([top, 20.0, 20.0], 0.25, [0.0; 3]),
            Expect::Overlap,
            Expect::Miss,
        ),
        same(
            "overlapping by an ulp across the x face, approaching",
            sphere([0.0, 20.0, 20.0], 0.25, [-1.0, 0.0, 0.0]),
            sphere([top, 20.0, 20.0], 0.25, [0.0; 3]),
            Expect::Overlap,
        ),
    ]
}

/// Pairs with known answers in the rectangle of 48 by 30 (circles).
fn rectangle_cases() -> Vec<Case<MovingCircle>> {
    let (top_x, top_y) = (below(48.0), below(30.0));
    vec![
        same(
            "across the x edge",
            circle([47.5, 10.0], 0.25, [1.0, 0.0]),
            circle([0.5, 10.0], 0.25, [0.0, 0.0]),
            Expect::Contact(0.5),
        ),
        same(
            "across the y edge",
            circle([10.0, 0.5], 0.25, [0.0, -1.0]),
            circle([10.0, 29.5], 0.25, [0.0, 0.0]),
            Expect::Contact(0.5),
        ),
        same(
            "across a corner",
            circle([47.5, 29.5], 0.25, [1.0, 1.0]),
            circle([0.5, 0.5], 0.25, [0.0, 0.0]),
            Expect::Contact(1.0 - 0.5 / 2f64.sqrt()),
        ),
        same(
            "half a box apart on y (the tie)",
            circle([10.0, 5.0], 1.0, [0.0, 5.0]),
            circle([10.0, 20.0], 1.0, [0.0, -5.0]),
            Expect::Miss,
        ),
        same(
            "half a box apart on x and y",
            circle([0.0, 0.0], 1.0, [8.0, 5.0]),
            circle([24.0, 15.0], 1.0, [-8.0, -5.0]),
            Expect::Miss,
        ),
        case(
            "at 0 and just below the period on both axes, at rest",
            circle([0.0, 0.0], 0.25, [0.0, 0.0]),
            circle([top_x, top_y], 0.25, [0.0, 0.0]),
            Expect::Overlap,
            Expect::Miss,
        ),
        case(
            "at 0 and just below the period on both axes, moving apart",
            circle([0.0, 0.0], 0.25, [0.5, 0.25]),
            circle([top_x, top_y], 0.25, [0.0, 0.0]),
            Expect::Overlap,
            Expect::Miss,
        ),
        same(
            "at 0 and just below the period on both axes, approaching",
            circle([0.0, 0.0], 0.25, [-0.5, -0.25]),
            circle([top_x, top_y], 0.25, [0.0, 0.0]),
            Expect::Overlap,
        ),
        case(
            "touching across the x edge, moving apart",
            circle([47.75, 3.0], 0.25, [-1.0, 0.0]),
            circle([0.25, 3.0], 0.25, [0.0, 0.0]),
            Expect::Contact(0.0),
            Expect::Miss,
        ),
        same(
            "touching across the y edge, approaching",
            circle([3.0, 0.25], 0.25, [0.0, -1.0]),
            circle([3.0, 29.75], 0.25, [0.0, 0.0]),
            Expect::Contact(0.0),
        ),
    ]
}

#[test]
fn periodic_box_cases_on_every_path() {
    const TEST: &str = "periodic_box_cases_on_every_path";
    let (cube, rectangle) = boxes();
    check_cases(TEST, "cube cases", Some(cube), &cube_cases());
    check_cases(TEST, "rectangle cases", Some(rectangle), &rectangle_cases());
    // Every case that meets does so only through the wrap: without the box, a miss.
    for case in cube_cases() {
        let (a, b) = (Body::from(case.a), Body::from(case.b));
        assert!(
            reference::sweep_sphere_sphere(&a, &b, SweepOptions::DEFAULT).is_none(),
            "{}: meets without the box",
            case.name
        );
    }
    for case in rectangle_cases() {
        let (a, b) = (Body::from(case.a), Body::from(case.b));
        assert!(
            reference::sweep_sphere_sphere(&a, &b, SweepOptions::DEFAULT).is_none(),
            "{}: meets without the box",
            case.name
        );
    }
}

/// The equivalence of the wrap and an explicit copy: sweeping `pairs` in `periodic_box`
/// gives, pair by pair, the answer of sweeping without a box the pair whose second body is
/// shifted by the image (`b.center - k L`, the oracle's k). Where that shift is exact in
/// f32 the two are the same input: the oracle's answers are equal, and so are the CPU
/// twin's and the fast batch's, to the bit. Everywhere the shifted copies pass the bound
/// against the oracle without a box.
fn check_wrap_equals_shift(
    name: &str,
    bodies: &[MovingSphere],
    pairs: &[[u32; 2]],
    periodic_box: PeriodicBox,
) {
    let options = SweepOptions::DEFAULT.with_periodic_box(periodic_box);
    let plain = SweepOptions::DEFAULT;
    let period = periodic_box.period().as_dvec3();
    let mut copies = Vec::with_capacity(2 * pairs.len());
    let mut exact = Vec::with_capacity(pairs.len());
    let mut shifted_pairs = 0;
    for &[i, j] in pairs {
        let (a, b) = (bodies[i as usize], bodies[j as usize]);
        let (ca, cb) = (a.center.as_dvec3(), b.center.as_dvec3());
        let shifted = DVec3::from_array(std::array::from_fn(|axis| {
            if periodic_box.wraps(axis) {
                let image = ((cb[axis] - ca[axis]) / period[axis]).round_ties_even();
                cb[axis] - image * period[axis]
            } else {
                cb[axis]
            }
        }));
        shifted_pairs += usize::from(shifted != cb);
        exact.push(shifted.as_vec3().as_dvec3() == shifted);
        copies.extend([
            a,
            MovingSphere::new(shifted.as_vec3(), b.radius, b.displacement),
        ]);
    }
    let copy_pairs: Vec<[u32; 2]> = (0..pairs.len() as u32)
        .map(|k| [2 * k, 2 * k + 1])
        .collect();

    let wrapped = cpu::sweep_batch(bodies, pairs, options).unwrap();
    let shifted = cpu::sweep_batch(&copies, &copy_pairs, plain).unwrap();
    let (mut wrapped_times, mut shifted_times) = (Vec::new(), Vec::new());
    cpu::times_of_impact_into(bodies, pairs, options, &mut wrapped_times).unwrap();
    cpu::times_of_impact_into(&copies, &copy_pairs, plain, &mut shifted_times).unwrap();
    let report = parity::compare(&copies, &copy_pairs, plain, &shifted, CPU_BOUND);
    println!("{name}, shifted copies without a box [CPU twin]: {report}");
    assert!(report.passed(), "{name}: shifted copies: {report}");
    let report = parity::compare_times(&copies, &copy_pairs, plain, &shifted_times, CPU_BOUND);
    assert!(
        report.passed(),
        "{name}: shifted copies, fast batch: {report}"
    );

    let oracle_wrapped = reference::sweep_batch(bodies, pairs, options);
    let oracle_shifted = reference::sweep_batch(&copies, &copy_pairs, plain);
    let (mut equal, mut equal_hits, mut equal_shifted) = (0, 0, 0);
    for k in (0..pairs.len()).filter(|&k| exact[k]) {
        assert_eq!(
            oracle_wrapped[k], oracle_shifted[k],
            "{name} pair {k}: the oracle in the box and on the shifted copy"
        );
        assert_eq!(
            bits(&wrapped[k]),
            bits(&shifted[k]),
            "{name} pair {k}: the CPU twin in the box and on the shifted copy: {:?} vs {:?}",
            wrapped[k],
            shifted[k]
        );
        assert_eq!(
            answer_bits(wrapped_times[k].get()),
            answer_bits(shifted_times[k].get()),
            "{name} pair {k}: the fast batch in the box and on the shifted copy"
        );
        equal += 1;
        equal_hits += usize::from(wrapped[k].is_some());
        let [_, j] = pairs[k];
        equal_shifted += usize::from(bodies[j as usize].center != copies[2 * k + 1].center);
    }
    println!(
        "{name}: {equal} of {} pairs exactly shiftable in f32 ({equal_shifted} of them shifted, \
         {equal_hits} hits) give the same answer in the box and on the shifted copy, to the \
         bit; {shifted_pairs} pairs shifted in all",
        pairs.len()
    );
    assert!(equal * 2 >= pairs.len(), "{name}: too few exact shifts");
    assert!(
        equal_shifted * 4 >= equal,
        "{name}: too few exact shifts move a body"
    );
    assert!(equal_hits * 8 >= equal, "{name}: too few hits among them");
}

#[test]
fn the_wrap_equals_sweeping_an_explicitly_shifted_copy() {
    let (cube, rectangle) = boxes();
    let world = world_3d(&cube);
    check_wrap_equals_shift("periodic 3D", &world.bodies, &world.pairs, cube);
    let flat = world_2d(&rectangle);
    check_wrap_equals_shift("periodic 2D", &flat.bodies, &flat.pairs, rectangle);
    let cases = cube_cases();
    let bodies: Vec<MovingSphere> = cases.iter().flat_map(|c| [c.a, c.b]).collect();
    let pairs: Vec<[u32; 2]> = (0..cases.len() as u32)
        .map(|k| [2 * k, 2 * k + 1])
        .collect();
    check_wrap_equals_shift("cube cases", &bodies, &pairs, cube);
}

/// The wrap is exact under scaling by powers of two: the cube cases in a box of side
/// `40 · 2^k` with every length scaled by `2^k` (from 2^-100, periods near 3e-29, to 2^90,
/// periods near 5e28) give on every path the unscaled answers: the same time, status and
/// normal to the bit, and the point scaled exactly; and so does the oracle.
#[test]
fn a_box_scaled_by_a_power_of_two_gives_the_same_answers() {
    const TEST: &str = "a_box_scaled_by_a_power_of_two_gives_the_same_answers";
    let cases = cube_cases();
    let bodies: Vec<MovingSphere> = cases.iter().flat_map(|c| [c.a, c.b]).collect();
    let pairs: Vec<[u32; 2]> = (0..cases.len() as u32)
        .map(|k| [2 * k, 2 * k + 1])
        .collect();
    let scaled_impact = |impact: &Option<Impact>, factor: f32| {
        bits(&impact.map(|impact| Impact {
            point: impact.point * factor,
            ..impact
        }))
    };
    let same_frame = |a: &Option<Impact>, b: &Option<Impact>| {
        a.map(|a| {
            (
                a.time_of_impact.to_bits(),
                a.normal.to_array().map(f32::to_bits),
                a.status,
            )
        }) == b.map(|b| {
            (
                b.time_of_impact.to_bits(),
                b.normal.to_array().map(f32::to_bits),
                b.status,
            )
        })
    };
    for (option_name, options) in [
        ("default", SweepOptions::DEFAULT),
        ("event-driven", SweepOptions::event_driven()),
    ] {
        let unscaled = sweep_every_path(
            TEST,
            &format!("cube cases, {option_name}"),
            &bodies,
            &pairs,
            options.with_periodic_box(PeriodicBox::cube(40.0).unwrap()),
        );
        for exponent in [-100, -60, 60, 90] {
            let factor = 2f32.powi(exponent);
            let scaled: Vec<MovingSphere> = bodies
                .iter()
                .map(|b| {
                    MovingSphere::new(
                        b.center * factor,
                        b.radius * factor,
                        b.displacement * factor,
                    )
                })
                .collect();
            let periodic_box = PeriodicBox::cube(40.0 * factor).unwrap();
            let name = format!("cube cases scaled by 2^{exponent}, {option_name}");
            let swept = sweep_every_path(
                TEST,
                &name,
                &scaled,
                &pairs,
                options.with_periodic_box(periodic_box),
            );
            for (k, case) in cases.iter().enumerate() {
                let what = format!("{name}: {}", case.name);
                assert!(
                    same_frame(&swept.twin[k], &unscaled.twin[k]),
                    "{what}: CPU twin"
                );
                assert_eq!(
                    bits(&swept.twin[k]),
                    scaled_impact(&unscaled.twin[k], factor),
                    "{what}: CPU twin point"
                );
                assert_eq!(
                    answer_bits(swept.fast[k].get()),
                    answer_bits(unscaled.fast[k].get()),
                    "{what}: fast batch"
                );
                if let (Some(gpu), Some(unscaled_gpu)) = (&swept.gpu, &unscaled.gpu) {
                    assert!(same_frame(&gpu[k], &unscaled_gpu[k]), "{what}: GPU");
                    assert_eq!(
                        bits(&gpu[k]),
                        scaled_impact(&unscaled_gpu[k], factor),
                        "{what}: GPU point"
                    );
                }
                let oracle = |swept: &Swept| swept.oracle[k].map(|r| (r.time_of_impact, r.status));
                assert_eq!(oracle(&swept), oracle(&unscaled), "{what}: oracle");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The separating option
// ---------------------------------------------------------------------------------------

/// How a post-collision pair moves relative to its line of centres.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Motion {
    Apart,
    /// `s · v == 0` exactly.
    Tangential,
    Resting,
    Approaching,
}

/// Integer directions of integer length `[p, q, r, m]`, `p² + q² + r² = m²`: exact touching.
const QUADRUPLES: [[i32; 4]; 10] = [
    [1, 2, 2, 3],
    [2, 3, 6, 7],
    [1, 4, 8, 9],
    [4, 4, 7, 9],
    [2, 6, 9, 11],
    [6, 6, 7, 11],
    [2, 10, 11, 15],
    [3, 4, 0, 5],
    [5, 12, 0, 13],
    [0, 0, 1, 1],
];

/// Post-collision states: pairs `[2k, 2k + 1]` touching exactly (integer directions of
/// integer length on a dyadic grid, where every square is exact in f32), overlapping by a
/// few ulps, or touching within rounding along a random direction; each moving apart,
/// tangentially, not at all, or towards each other. For the exact ones the motion is
/// returned, and for the tangential ones `s · v` is exactly 0 in f32 and f64.
fn post_collision_world(seed: u64, count: usize) -> (Vec<MovingSphere>, Vec<Option<Motion>>) {
    let mut rng = SplitMix64::new(seed);
    let mut bodies = Vec::with_capacity(2 * count);
    let mut exact = Vec::with_capacity(count);
    let motions = [
        Motion::Apart,
        Motion::Tangential,
        Motion::Resting,
        Motion::Approaching,
    ];
    for k in 0..count {
        let motion = motions[k % 4];
        let kind = (k / 4) % 3;
        let (a, b) = if kind < 2 {
            // Integer direction, permuted, with random signs, times a dyadic h.
            let [p, q, r, m] = QUADRUPLES[rng.below(QUADRUPLES.len() as u64) as usize];
            let mut n = [p, q, r];
            for i in (1..3).rev() {
                n.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let n = n.map(|c| if rng.below(2) == 0 { c } else { -c });
            let h = (1 + rng.below(255)) as f32 * 2f32.powi(-(4 + rng.below(9) as i32));
            let s = Vec3::from_array(n.map(|c| c as f32)) * h;
            let m_a = rng.below(m as u64 + 1) as f32;
            let (ra, rb) = (m_a * h, (m as f32 - m_a) * h);
            let grid = |x: f64| ((x * GRID).round() / GRID) as f32;
            let ca = Vec3::new(
                grid(rng.range(-64.0, 64.0)),
                grid(rng.range(-64.0, 64.0)),
                grid(rng.range(-64.0, 64.0)),
            );
            let mut cb = ca + s;
            assert_eq!(
                cb.as_dvec3(),
                ca.as_dvec3() + s.as_dvec3(),
                "exact placement"
            );
            if kind == 1 {
                // Overlapping by 1 to 4 ulps: b moved towards a along its largest offset.
                let axis = s.abs().max_position();
                for _ in 0..1 + rng.below(4) {
                    cb[axis] = if s[axis] > 0.0 {
                        cb[axis].next_down()
                    } else {
                        cb[axis].next_up()
                    };
                }
            }
            // Motion: exact integer multiples of a power of two, so that a tangential
            // s · v is exactly 0 (every product and partial sum fits in 24 bits).
            let f = 2f32.powi(-(rng.below(6) as i32));
            let w = loop {
                let w = [0; 3].map(|_| rng.below(15) as i32 - 7);
                let cross = [
                    n[1] * w[2] - n[2] * w[1],
                    n[2] * w[0] - n[0] * w[2],
                    n[0] * w[1] - n[1] * w[0],
                ];
                if cross != [0; 3] {
                    break Vec3::from_array(cross.map(|c| c as f32));
                }
            };
            let tangent = w * f;
            let along = Vec3::from_array(n.map(|c| c as f32)) * f;
            let v = match motion {
                Motion::Apart => -along * (1 + rng.below(4)) as f32 + tangent,
                Motion::Tangential => tangent,
                Motion::Resting => Vec3::ZERO,
                Motion::Approaching => along * (1 + rng.below(4)) as f32 + tangent,
            };
            let db = Vec3::from_array([0; 3].map(|_| rng.below(15) as f32 - 7.0)) * f;
            let da = db + v;
            assert_eq!(da - db, v, "exact relative motion");
            if kind == 0 {
                if motion == Motion::Tangential {
                    assert_eq!(s.dot(v), 0.0);
                }
                exact.push(Some(motion));
            } else {
                exact.push(None);
            }
            (MovingSphere::new(ca, ra, da), MovingSphere::new(cb, rb, db))
        } else {
            // A random direction at a random scale: touching within rounding, or overlapping
            // by a few ulps of the radius sum.
            let scale = 2f64.powi(rng.below(12) as i32 - 6);
            let ra = rng.range(0.0, 1.0) * scale;
            let rb = rng.range(0.1, 1.0) * scale;
            let n = rng.in_ball(1.0, 3).as_dvec3().normalize_or(DVec3::X);
            let distance = (ra + rb) * (1.0 - rng.below(5) as f64 * f64::from(f32::EPSILON));
            let ca = rng.in_ball(4.0 * scale, 3);
            let cb = (ca.as_dvec3() + n * distance).as_vec3();
            let tangent = n.any_orthonormal_vector() * rng.range(0.0, 2.0) * scale;
            let speed = rng.range(0.1, 2.0) * scale;
            let v = match motion {
                Motion::Apart => tangent - n * speed,
                Motion::Tangential => tangent,
                Motion::Resting => DVec3::ZERO,
                Motion::Approaching => tangent + n * speed,
            };
            let db = rng.in_ball(scale, 3);
            exact.push(None);
            (
                MovingSphere::new(ca, ra as f32, db + v.as_vec3()),
                MovingSphere::new(cb, rb as f32, db),
            )
        };
        bodies.extend([a, b]);
    }
    (bodies, exact)
}

#[test]
fn post_collision_worlds_pass_the_bound_under_the_separating_option() {
    const TEST: &str = "post_collision_worlds_pass_the_bound_under_the_separating_option";
    let count = 8_000;
    let (mut bodies, exact) = post_collision_world(41, count);
    let mut pairs: Vec<[u32; 2]> = (0..count as u32).map(|k| [2 * k, 2 * k + 1]).collect();
    // Plus random pairs (a good share of them overlapping at t = 0, moving every way).
    let random = Workload::random(&WorkloadConfig {
        bodies: 3_000,
        pairs: 6_000,
        seed: 42,
        ..Default::default()
    });
    let offset = bodies.len() as u32;
    bodies.extend(&random.bodies);
    pairs.extend(random.pairs.iter().map(|&[i, j]| [i + offset, j + offset]));

    let event = sweep_every_path(
        TEST,
        "post-collision, event-driven",
        &bodies,
        &pairs,
        SweepOptions::event_driven(),
    );
    let plain = sweep_every_path(
        TEST,
        "post-collision, default",
        &bodies,
        &pairs,
        SweepOptions::DEFAULT,
    );

    // Touching exactly: a contact at t = 0 under the default options on every path; under
    // the separating option a miss unless approaching.
    let mut asserted = [0usize; 4];
    for (k, motion) in exact.iter().enumerate() {
        let Some(motion) = *motion else { continue };
        asserted[motion as usize] += 1;
        let event_expect = if motion == Motion::Approaching {
            Some((0.0, ImpactStatus::Contact))
        } else {
            None
        };
        let oracle = |swept: &Swept| swept.oracle[k].map(|r| (r.time_of_impact as f32, r.status));
        assert_eq!(
            oracle(&plain),
            Some((0.0, ImpactStatus::Contact)),
            "pair {k}"
        );
        assert_eq!(oracle(&event), event_expect, "pair {k}, {motion:?}");
        for (path, answer) in plain.answers(k) {
            assert_eq!(
                answer,
                Some((0.0, ImpactStatus::Contact)),
                "default, {path}, pair {k}, {motion:?}: {:?} {:?}",
                bodies[2 * k],
                bodies[2 * k + 1]
            );
        }
        for (path, answer) in event.answers(k) {
            assert_eq!(
                answer,
                event_expect,
                "event-driven, {path}, pair {k}, {motion:?}: {:?} {:?}",
                bodies[2 * k],
                bodies[2 * k + 1]
            );
        }
    }
    println!(
        "exactly touching pairs asserted on every path: {} apart, {} tangential (s . v = 0), \
         {} resting, {} approaching",
        asserted[0], asserted[1], asserted[2], asserted[3]
    );
    assert!(asserted.iter().all(|&n| n >= 200), "{asserted:?}");

    // The option releases the pairs touching or overlapping while separating, and only them.
    let hit = |swept: &Swept, k: usize| swept.oracle[k].is_some();
    let released = (0..pairs.len())
        .filter(|&k| hit(&plain, k) && !hit(&event, k))
        .count();
    let gained = (0..pairs.len())
        .filter(|&k| !hit(&plain, k) && hit(&event, k))
        .count();
    println!(
        "the separating option releases {released} of {} pairs the default options report",
        pairs.len()
    );
    assert_eq!(gained, 0, "the separating option never adds a hit");
    assert!(
        released * 3 >= count,
        "too few separating pairs: {released}"
    );
    for (k, (p, e)) in plain.oracle.iter().zip(&event.oracle).enumerate() {
        if let (Some(p), Some(e)) = (p, e) {
            assert_eq!(p, e, "pair {k}: a hit under both options is the same hit");
        }
    }
    for ((path, plain_report), (_, event_report)) in plain.reports.iter().zip(&event.reports) {
        assert!(
            event_report.candidate_hits * 5 >= event_report.pairs
                && event_report.candidate_hits * 5 <= plain_report.candidate_hits * 4,
            "{path}: {event_report} against {plain_report}"
        );
    }
}

/// Pairs with known answers under the default options and the separating option, no box.
fn separating_cases() -> Vec<Case<MovingSphere>> {
    let two = below(2.0);
    vec![
        case(
            "touching, moving apart",
            sphere([0.0; 3], 1.0, [-1.0, 0.0, 0.0]),
            sphere([2.0, 0.0, 0.0], 1.0, [1.0, 0.0, 0.0]),
            Expect::Contact(0.0),
            Expect::Miss,
        ),
        case(
            "touching along (3, 4, 0) / 5, moving apart",
            sphere([0.0; 3], 2.5, [-3.0, -4.0, 1.0]),
            sphere([3.0, 4.0, 0.0], 2.5, [0.0; 3]),
            Expect::Contact(0.0),
            Expect::Miss,
        ),
        case(
            "overlapping by half the radius sum, moving apart",
            sphere([0.0; 3], 1.0, [-0.5, 0.25, 0.0]),
            sphere([1.5, 0.0, 0.0], 1.0, [0.0; 3]),
            Expect::Overlap,
            Expect::Miss,
        ),
        case(
            "overlapping by an ulp, moving apart",
            sphere([0.0; 3], 1.0, [0.0; 3]),
            sphere([two, 0.0, 0.0], 1.0, [0.5, 0.5, 0.0]),
            Expect::Overlap,
            Expect::Miss,
        ),
        same(
            "overlapping, approaching",
            sphere([0.0; 3], 1.0, [1.0, 0.0, 0.0]),
            sphere([1.5, 0.0, 0.0], 1.0, [0.0; 3]),
            Expect::Overlap,
        ),
        same(
            "overlapping by an ulp, approaching",
            sphere([0.0; 3], 1.0, [0.0; 3]),
            sphere([two, 0.0, 0.0], 1.0, [-0.5, 0.5, 0.0]),
            Expect::Overlap,
        ),
        same(
            "touching, approaching",
            sphere([0.0; 3], 1.0, [1.0, 0.0, 0.0]),
            sphere([2.0, 0.0, 0.0], 1.0, [0.0; 3]),
            Expect::Contact(0.0),
        ),
        case(
            "touching, sliding tangentially (s . v = 0)",
            sphere([0.0; 3], 1.0, [0.0, 1.0, 0.0]),
            sphere([2.0, 0.0, 0.0], 1.0, [0.0; 3]),
            Expect::Contact(0.0),
            Expect::Miss,
        ),
        case(
            "touching along (3, 4, 0) / 5, sliding along (-4, 3, 0) (s . v = 0)",
            sphere([0.0; 3], 2.5, [-2.0, 1.5, 0.0]),
            sphere([3.0, 4.0, 0.0], 2.5, [0.0; 3]),
            Expect::Contact(0.0),
            Expect::Miss,
        ),
        case(
            "touching, both at rest",
            sphere([0.0; 3], 1.0, [0.5, 0.5, 0.5]),
            sphere([0.0, 0.0, 2.0], 1.0, [0.5, 0.5, 0.5]),
            Expect::Contact(0.0),
            Expect::Miss,
        ),
        case(
            "a body with itself (overlapping, no relative motion)",
            sphere([1.0; 3], 1.0, [1.0, 0.0, 0.0]),
            sphere([1.0; 3], 1.0, [1.0, 0.0, 0.0]),
            Expect::Overlap,
            Expect::Miss,
        ),
        same(
            "apart at t = 0, meeting at t = 0.75",
            sphere([0.0; 3], 1.0, [4.0, 0.0, 0.0]),
            sphere([5.0, 0.0, 0.0], 1.0, [0.0; 3]),
            Expect::Contact(0.75),
        ),
    ]
}

fn separating_circle_cases() -> Vec<Case<MovingCircle>> {
    vec![
        case(
            "circles touching, moving apart",
            circle([0.0, 0.0], 1.0, [0.0, -1.0]),
            circle([0.0, 2.0], 1.0, [0.0, 1.0]),
            Expect::Contact(0.0),
            Expect::Miss,
        ),
        case(
            "circles touching, sliding tangentially",
            circle([0.0, 0.0], 1.0, [1.0, 0.0]),
            circle([0.0, 2.0], 1.0, [0.0, 0.0]),
            Expect::Contact(0.0),
            Expect::Miss,
        ),
        same(
            "circles overlapping, approaching",
            circle([0.0, 0.0], 1.0, [0.0, 1.0]),
            circle([0.0, 1.0], 1.0, [0.0, 0.0]),
            Expect::Overlap,
        ),
    ]
}

#[test]
fn separating_option_cases_on_every_path() {
    const TEST: &str = "separating_option_cases_on_every_path";
    check_cases(TEST, "separating cases", None, &separating_cases());
    check_cases(TEST, "separating circles", None, &separating_circle_cases());
}

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
    assert_eq!(
        (one_axis.wraps(0), one_axis.wraps(1), one_axis.wraps(2)),
        (false, true, false)
    );
    let rectangle = PeriodicBox::rectangle(Vec2::new(48.0, 30.0)).unwrap();
    assert_eq!(rectangle.period(), Vec3::new(48.0, 30.0, inf));
    assert!(!rectangle.wraps(2));
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
    let report = parity::compare_times(&bodies, &pairs, options, &wrong, CPU_BOUND);
    assert_eq!(report.failures, 3, "{report}");
    let right_times = [
        TimeOfImpact::MISS,
        TimeOfImpact::OVERLAPPING,
        TimeOfImpact::contact(0.5).unwrap(),
    ];
    let report = parity::compare_times(&bodies, &pairs, options, &right_times, CPU_BOUND);
    assert!(report.passed(), "{report}");
    let wrong_impacts = [Some(at_start), None, None];
    let report = parity::compare(&bodies, &pairs, options, &wrong_impacts, CPU_BOUND);
    assert_eq!(report.failures, 3, "{report}");
    assert_eq!(report.disagreements, 3, "{report}");
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
