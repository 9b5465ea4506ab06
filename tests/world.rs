//! `cpu::World`: the bodies validated and packed once, then swept by many batches. Its answers
//! are those of the twin (full answer) and of the slice-taking fast batch, on batches below
//! and above `SERIAL_PAIRS` (the calling thread and the pool), under every option; bad input
//! gives the same typed errors, and a world reused from step to step keeps its memory.

use glam::Vec3;
use sweepcast::TimeOfImpact;
use sweepcast::cpu::{self, World};
use sweepcast::low_level::SERIAL_PAIRS;
use sweepcast::low_level::layout::BodyRecord;
use sweepcast::{BodyField, Error, MovingSphere, PeriodicBox, SweepOptions};
use testkit::{Workload, WorkloadConfig};

fn workload(pairs: usize, seed: u64) -> Workload {
    Workload::random(&WorkloadConfig {
        bodies: 4096,
        pairs,
        seed,
        offset: 1.0,
        ..WorkloadConfig::default()
    })
}

/// The options every path is checked under: the default, the separating option, and a
/// periodic box large enough for the workload's bodies.
fn all_options() -> [SweepOptions; 3] {
    let periodic = PeriodicBox::cube(20.0).expect("a valid box");
    [
        SweepOptions::default(),
        SweepOptions::event_driven(),
        SweepOptions::event_driven().with_periodic_box(periodic),
    ]
}

#[test]
fn the_world_gives_the_twins_answers_serial_and_parallel() {
    for (seed, pairs) in [
        (1, 1),
        (2, 17),
        (3, SERIAL_PAIRS - 1),
        (4, 3 * SERIAL_PAIRS + 5),
    ] {
        let w = workload(pairs, seed);
        for options in all_options() {
            let mut world = World::new();
            world.update(&w.bodies, options).expect("valid bodies");
            assert_eq!(world.bodies().len(), w.bodies.len());
            let (mut impacts, mut times) = (Vec::new(), Vec::new());
            world
                .sweep_into(&w.pairs, &mut impacts)
                .expect("valid pairs");
            world
                .times_of_impact_into(&w.pairs, &mut times)
                .expect("valid");
            assert_eq!((impacts.len(), times.len()), (pairs, pairs));
            let mut hits = 0;
            for (k, &[i, j]) in w.pairs.iter().enumerate() {
                let (a, b) = (w.bodies[i as usize], w.bodies[j as usize]);
                let twin = cpu::sweep_sphere_sphere(&a, &b, options);
                assert_eq!(impacts[k], twin, "pair {k} under {options:?}");
                hits += usize::from(twin.is_some());
                // The fast batch leaves out the twin's reach escape: where both hit, the time
                // is the twin's to the bit.
                if let (Some(twin), Some((time, status))) = (twin, times[k].get()) {
                    assert_eq!(time.to_bits(), twin.time_of_impact.to_bits(), "pair {k}");
                    assert_eq!(status, twin.status, "pair {k}");
                }
            }
            // The slice-taking paths are wrappers of the world: the same answers.
            let mut slice_times = Vec::new();
            cpu::times_of_impact_into(&w.bodies, &w.pairs, options, &mut slice_times)
                .expect("valid");
            assert_eq!(slice_times, times);
            assert_eq!(
                cpu::sweep_batch(&w.bodies, &w.pairs, options).expect("valid"),
                impacts
            );
            if pairs > 1000 {
                assert!(
                    hits > pairs / 20,
                    "the workload must hit: {hits} of {pairs}"
                );
            }
        }
    }
}

#[test]
fn many_small_batches_against_one_world_answer_as_one_batch() {
    let w = workload(2 * SERIAL_PAIRS, 9);
    let mut world = World::new();
    world
        .update(&w.bodies, SweepOptions::default())
        .expect("valid");
    let mut whole = Vec::new();
    world
        .times_of_impact_into(&w.pairs, &mut whole)
        .expect("valid");
    let mut batch = Vec::new();
    for (chunk, expected) in w.pairs.chunks(16).zip(whole.chunks(16)) {
        world
            .times_of_impact_into(chunk, &mut batch)
            .expect("valid");
        assert_eq!(batch, expected);
    }
}

#[test]
fn a_world_reused_from_step_to_step_keeps_its_memory() {
    let w = workload(64, 5);
    let mut world = World::new();
    world
        .update(&w.bodies, SweepOptions::default())
        .expect("valid");
    let first = world.bodies().as_ptr();
    let mut moved = w.bodies.clone();
    for step in 0..5 {
        for body in &mut moved {
            body.center += body.displacement * 0.1;
        }
        world
            .update(&moved, SweepOptions::default())
            .expect("valid");
        assert_eq!(world.bodies().as_ptr(), first, "step {step} reallocated");
        assert_eq!(world.bodies()[3], BodyRecord::from(moved[3]));
    }
}

#[test]
fn bad_input_gives_the_typed_errors_and_leaves_nothing_behind() {
    let body = MovingSphere::new(Vec3::ZERO, 1.0, Vec3::X);
    let mut world = World::new();
    world
        .update(&[body, body], SweepOptions::default())
        .expect("valid");
    let mut nan = body;
    nan.center.y = f32::NAN;
    assert!(matches!(
        world.update(&[body, nan], SweepOptions::default()),
        Err(Error::NonFinite {
            body: 1,
            field: BodyField::Center
        })
    ));
    assert!(
        world.bodies().is_empty(),
        "a failed update leaves the world empty"
    );
    let mut times = vec![TimeOfImpact::MISS; 3];
    assert!(matches!(
        world.times_of_impact_into(&[[0, 0]], &mut times),
        Err(Error::PairIndexOutOfRange {
            pair: 0,
            index: 0,
            body_count: 0
        })
    ));
    assert!(times.is_empty());

    world
        .update(&[body, body], SweepOptions::default())
        .expect("valid");
    let mut impacts = vec![None; 2];
    assert!(matches!(
        world.sweep_into(&[[0, 1], [1, 2]], &mut impacts),
        Err(Error::PairIndexOutOfRange {
            pair: 1,
            index: 2,
            body_count: 2
        })
    ));
    assert!(impacts.is_empty());

    let small = SweepOptions::default().with_periodic_box(PeriodicBox::cube(4.0).expect("box"));
    assert!(matches!(
        world.update(&[body, body], small),
        Err(Error::PeriodicBoxTooSmall { body: 0, .. })
    ));
    assert!(world.bodies().is_empty());

    // An empty batch against any world is an empty answer.
    world
        .update(&[body], SweepOptions::default())
        .expect("valid");
    world.times_of_impact_into(&[], &mut times).expect("empty");
    world.sweep_into(&[], &mut impacts).expect("empty");
    assert!(times.is_empty() && impacts.is_empty());
}
