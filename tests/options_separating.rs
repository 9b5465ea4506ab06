//! The sweep options on every path, held to the oracle with the same options: the
//! separating option (`SweepOptions::event_driven`): a seeded world of post-collision states
//! (touching exactly, or within rounding, or overlapping by a few ulps; moving apart,
//! tangentially, not at all, or towards each other) plus random pairs, and explicit cases,
//! alone and combined with the box.
//!
//! Every batch runs on the CPU twin (`cpu::sweep_batch`), the single-pair function (which
//! must equal the batch exactly), the fast batch (`cpu::times_of_impact_into`, equal to the
//! twin to the bit wherever both report a contact) and, when an adapter exists, the GPU
//! (`SweepPipeline::sweep`); each is judged by `parity::compare` (impacts or times) with its
//! bound (the helpers are in `tests/common/options.rs`).

mod common;

use common::options::*;
use glam::{DVec3, Vec3};
use sweepcast::{ImpactStatus, MovingCircle, MovingSphere, SweepOptions};
use testkit::{SplitMix64, Workload, WorkloadConfig};

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
