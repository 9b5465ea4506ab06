//! The sweep options on every path, held to the oracle with the same options: a periodic
//! box, 3D (`PeriodicBox::cube`) and 2D (`PeriodicBox::rectangle`, circles): seeded worlds
//! in `[0, L)^d` whose bodies fit the box (some at the very edge of the validity
//! condition), with pairs straddling faces, edges and corners that can meet only through the
//! wrap, plus random pairs; explicit pairs across a face, an edge and a corner, exactly half
//! a box apart (the tie) and at 0 against the largest f32 below `L`; the wrap against
//! sweeping an explicitly shifted copy of the second body; the same cases in boxes scaled by
//! powers of two from 2^-100 to 2^90; and one GPU pipeline called in turn with each set of
//! options, whole and in chunks.
//!
//! Every batch runs on the CPU twin (`cpu::sweep_batch`), the single-pair function (which
//! must equal the batch exactly), the fast batch (`cpu::times_of_impact_into`, equal to the
//! twin to the bit wherever both report a contact) and, when an adapter exists, the GPU
//! (`SweepPipeline::sweep`); each is judged by `parity::compare` (impacts or times) with its
//! bound (the helpers are in `tests/common/options.rs`).

mod common;

use common::options::*;
use glam::{DVec3, Vec2, Vec3};
use sweepcast::cpu;
use sweepcast::gpu::SweepPipeline;
use sweepcast::parity::{self, CPU_BOUND, GPU_BOUND};
use sweepcast::reference::{self, Body};
use sweepcast::{Impact, MovingCircle, MovingSphere, PeriodicBox, SweepOptions};
use testkit::SplitMix64;

// ---------------------------------------------------------------------------------------
// Periodic worlds
// ---------------------------------------------------------------------------------------

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
        for axis in (0..3).filter(|&axis| periodic_box.period()[axis].is_finite()) {
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
                let report = parity::compare(
                    &world.bodies,
                    &world.pairs,
                    *options,
                    &answers,
                    None,
                    GPU_BOUND,
                );
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
            if periodic_box.period()[axis].is_finite() {
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
    let report = parity::compare(&copies, &copy_pairs, plain, &shifted, None, CPU_BOUND);
    println!("{name}, shifted copies without a box [CPU twin]: {report}");
    assert!(report.passed(), "{name}: shifted copies: {report}");
    let report = parity::compare(&copies, &copy_pairs, plain, &shifted_times, None, CPU_BOUND);
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
