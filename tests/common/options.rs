//! The options tests' shared helpers: every path's answers to one batch, each judged
//! against the oracle with the same options ([`sweep_every_path`]), and explicit cases with
//! known answers ([`check_cases`]).
#![allow(dead_code)]

#[cfg(feature = "gpu")]
use crate::common;

use glam::{Vec2, Vec3};
use sweepcast::TimeOfImpact;
use sweepcast::cpu;
use sweepcast::parity::{self, CPU_BOUND, GPU_BOUND, ParityReport};
use sweepcast::reference::{self, ReferenceImpact};
use sweepcast::{Impact, ImpactStatus, MovingCircle, MovingSphere, PeriodicBox, SweepOptions};

// ---------------------------------------------------------------------------------------
// Running every path
// ---------------------------------------------------------------------------------------

/// A path's answer for one pair: time and status, `None` for a miss.
pub type Answer = Option<(f32, ImpactStatus)>;

pub fn answer(impact: &Option<Impact>) -> Answer {
    impact.map(|impact| (impact.time_of_impact, impact.status))
}

/// Every f32 field of an answer as bits, for comparisons to the bit.
pub fn bits(impact: &Option<Impact>) -> Option<(u32, [u32; 3], [u32; 3], ImpactStatus)> {
    impact.map(|impact| {
        (
            impact.time_of_impact.to_bits(),
            impact.point.to_array().map(f32::to_bits),
            impact.normal.to_array().map(f32::to_bits),
            impact.status,
        )
    })
}

pub fn answer_bits(answer: Answer) -> Option<(u32, ImpactStatus)> {
    answer.map(|(time, status)| (time.to_bits(), status))
}

/// Every path's answers for one batch, each already judged against the oracle.
pub struct Swept {
    pub twin: Vec<Option<Impact>>,
    pub fast: Vec<TimeOfImpact>,
    pub gpu: Option<Vec<Option<Impact>>>,
    pub oracle: Vec<Option<ReferenceImpact>>,
    /// The parity report of each path, named.
    pub reports: Vec<(&'static str, ParityReport)>,
}

impl Swept {
    /// Each path's answer for pair `k`, named.
    pub fn answers(&self, k: usize) -> Vec<(&'static str, Answer)> {
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
pub fn sweep_every_path<B>(
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
    // Without the `gpu` feature, the CPU paths alone.
    #[cfg(not(feature = "gpu"))]
    let gpu: Option<Vec<Option<Impact>>> = {
        let _ = test;
        None
    };
    #[cfg(feature = "gpu")]
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
            parity::compare(bodies, pairs, options, &twin, None, CPU_BOUND),
        ),
        (
            "fast batch",
            parity::compare(bodies, pairs, options, &fast, None, CPU_BOUND),
        ),
    ];
    if let Some(gpu) = &gpu {
        reports.push((
            "GPU",
            parity::compare(bodies, pairs, options, gpu, None, GPU_BOUND),
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
/// `parity::compare` has judged within the bound.
pub fn assert_fast_equals_twin(name: &str, fast: &[TimeOfImpact], twin: &[Option<Impact>]) {
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
pub enum Expect {
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
    pub fn holds(self, answer: Option<(f64, ImpactStatus)>) -> bool {
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
pub struct Case<B> {
    pub name: &'static str,
    pub a: B,
    pub b: B,
    pub plain: Expect,
    pub event: Expect,
}

pub fn case<B>(name: &'static str, a: B, b: B, plain: Expect, event: Expect) -> Case<B> {
    Case {
        name,
        a,
        b,
        plain,
        event,
    }
}

/// A case whose answer does not depend on the separating option.
pub fn same<B>(name: &'static str, a: B, b: B, expect: Expect) -> Case<B> {
    case(name, a, b, expect, expect)
}

pub fn sphere(center: [f32; 3], radius: f32, displacement: [f32; 3]) -> MovingSphere {
    MovingSphere::new(
        Vec3::from_array(center),
        radius,
        Vec3::from_array(displacement),
    )
}

pub fn circle(center: [f32; 2], radius: f32, displacement: [f32; 2]) -> MovingCircle {
    MovingCircle::new(
        Vec2::from_array(center),
        radius,
        Vec2::from_array(displacement),
    )
}

/// Runs `cases` (each the pair `[2k, 2k + 1]`) on every path under the default options and
/// under the separating option, each with `periodic_box`, and checks each path's answer and
/// the oracle's against the expectation.
pub fn check_cases<B>(test: &str, name: &str, periodic_box: Option<PeriodicBox>, cases: &[Case<B>])
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

/// Half the bodies have centres on a grid of 2^-12: every `b - k L` of theirs is then exact
/// in f32, so that an explicitly shifted copy is the very input the wrap sweeps.
pub const GRID: f64 = 4096.0;

/// The largest f32 below `x`.
pub fn below(x: f32) -> f32 {
    x.next_down()
}

/// The largest `d` with `radius + d < limit` exactly: a body at the very edge of the
/// validity condition `radius + |displacement_i| < L_i / 4`.
pub fn largest_reach_below(limit: f64, radius: f32) -> f32 {
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
