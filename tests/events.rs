//! The event loop (`sweepcast::events`): hand-computed sequences (a Newton's cradle, a ball
//! between two walls, a perfectly inelastic pair), the conservation laws of elastic
//! collisions on random scenes (energy always, momentum without walls), no overlap at any
//! event, and the typed errors.

use sweepcast::events::{AllPairs, BroadPhase, Elastic, Event, EventBody, EventLoop};
use sweepcast::glam::{DVec3, Vec3};
use sweepcast::{Error, PeriodicBox, Wall, cpu};
use testkit::SplitMix64;

/// The pairs of `events`, which must all be between bodies.
fn pairs_of(events: &[Event]) -> Vec<[usize; 2]> {
    events
        .iter()
        .map(|event| match event {
            Event::Pair { bodies, .. } => *bodies,
            Event::Wall { .. } => panic!("no walls here"),
        })
        .collect()
}

fn ball(x: f64, velocity: f64) -> EventBody {
    EventBody::new(
        DVec3::new(x, 0.0, 0.0),
        DVec3::new(velocity, 0.0, 0.0),
        1.0,
        1.0,
    )
}

#[test]
fn a_newtons_cradle_passes_the_velocity_along() {
    // Three equal balls in a row with small gaps: the first's velocity ends in the last.
    let mut bodies = [ball(0.0, 1.0), ball(2.001, 0.0), ball(4.002, 0.0)];
    let mut seen = Vec::new();
    let count = EventLoop::new()
        .advance(
            &mut bodies,
            &[],
            1.0,
            &mut Elastic::perfect(),
            |event, _| seen.push(*event),
        )
        .unwrap();
    assert_eq!(count, 2);
    let pairs = pairs_of(&seen);
    assert_eq!(pairs, [[0, 1], [1, 2]]);
    assert!((seen[0].time() - 0.001).abs() < 1e-12);
    assert!((seen[1].time() - 0.002).abs() < 1e-12);
    let velocities: Vec<f64> = bodies.iter().map(|b| b.velocity.x).collect();
    assert_eq!(velocities, [0.0, 0.0, 1.0]);
    // Where they end: the first two where they met, the last moved on.
    assert!((bodies[0].position.x - 0.001).abs() < 1e-12);
    assert!((bodies[2].position.x - (4.002 + 0.998)).abs() < 1e-12);
}

#[test]
fn a_ball_between_two_walls_bounces_on_time() {
    // Radius 0.5 between the walls x = -1 and x = 1 at speed 10: a wall every 0.1, the
    // first at 0.05; ten in the step, the last on the left wall, and back at x = 0.
    let walls = [
        Wall::plane(Vec3::new(-1.0, 0.0, 0.0), Vec3::X),
        Wall::plane(Vec3::new(1.0, 0.0, 0.0), Vec3::NEG_X),
    ];
    let mut bodies = [EventBody::new(
        DVec3::ZERO,
        DVec3::new(10.0, 0.0, 0.0),
        0.5,
        2.0,
    )];
    let mut times = Vec::new();
    let mut which = Vec::new();
    EventLoop::new()
        .advance(
            &mut bodies,
            &walls,
            1.0,
            &mut Elastic::perfect(),
            |event, _| {
                times.push(event.time());
                if let Event::Wall { wall, normal, .. } = event {
                    which.push(*wall);
                    assert_eq!(normal.x.signum(), if *wall == 0 { -1.0 } else { 1.0 });
                }
            },
        )
        .unwrap();
    assert_eq!(times.len(), 10);
    for (k, time) in times.iter().enumerate() {
        assert!((time - (0.05 + 0.1 * k as f64)).abs() < 1e-12, "{times:?}");
    }
    assert_eq!(which, [1, 0, 1, 0, 1, 0, 1, 0, 1, 0]);
    assert!(bodies[0].position.x.abs() < 1e-12);
    assert_eq!(bodies[0].velocity.x, 10.0);
    // A limit below the ten events is a typed error.
    let mut again = [EventBody::new(
        DVec3::ZERO,
        DVec3::new(10.0, 0.0, 0.0),
        0.5,
        2.0,
    )];
    let error = EventLoop::new()
        .with_max_events(3)
        .advance(&mut again, &walls, 1.0, &mut Elastic::perfect(), |_, _| {})
        .unwrap_err();
    assert!(matches!(error, Error::TooManyEvents { limit: 3 }));
}

#[test]
fn a_perfectly_inelastic_pair_moves_on_together() {
    let mut bodies = [
        EventBody::new(DVec3::ZERO, DVec3::new(3.0, 0.0, 0.0), 1.0, 1.0),
        EventBody::new(DVec3::new(4.0, 0.0, 0.0), DVec3::ZERO, 1.0, 2.0),
    ];
    EventLoop::new()
        .advance(
            &mut bodies,
            &[],
            1.0,
            &mut Elastic { restitution: 0.0 },
            |_, _| {},
        )
        .unwrap();
    // Momentum 3 shared by mass 3.
    assert!((bodies[0].velocity.x - 1.0).abs() < 1e-15);
    assert!((bodies[1].velocity.x - 1.0).abs() < 1e-15);
    // A body of infinite mass is not moved by the impact.
    let mut bodies = [
        EventBody::new(DVec3::ZERO, DVec3::new(3.0, 0.0, 0.0), 1.0, 1.0),
        EventBody::new(DVec3::new(4.0, 0.0, 0.0), DVec3::ZERO, 1.0, f64::INFINITY),
    ];
    EventLoop::new()
        .advance(&mut bodies, &[], 1.0, &mut Elastic::perfect(), |_, _| {})
        .unwrap();
    assert_eq!(bodies[0].velocity.x, -3.0);
    assert_eq!(bodies[1].velocity, DVec3::ZERO);
}

/// `n` bodies of random radii, masses and velocities, clear of each other, inside the box
/// from -6 to 6 (in the plane z = 0 for `dimensions` 2).
fn random_gas(n: usize, dimensions: u32, seed: u64) -> Vec<EventBody> {
    let mut random = SplitMix64::new(seed);
    let mut bodies: Vec<EventBody> = Vec::new();
    while bodies.len() < n {
        let radius = random.range(0.2, 0.8);
        let position = random.in_ball(6.0, dimensions).as_dvec3();
        if position.abs().max_element() > 6.0 - radius
            || bodies
                .iter()
                .any(|b| (b.position - position).length() <= b.radius + radius)
        {
            continue;
        }
        let velocity = random.in_ball(5.0, dimensions).as_dvec3();
        bodies.push(EventBody::new(
            position,
            velocity,
            radius,
            random.range(0.5, 3.0),
        ));
    }
    bodies
}

/// The smallest gap between any two bodies, and between a body and the box's faces.
fn smallest_gap(bodies: &[EventBody], half_side: f64) -> f64 {
    let mut gap = f64::INFINITY;
    for (i, a) in bodies.iter().enumerate() {
        for b in &bodies[i + 1..] {
            gap = gap.min((a.position - b.position).length() - a.radius - b.radius);
        }
        gap = gap.min(half_side - a.radius - a.position.abs().max_element());
    }
    gap
}

#[test]
fn an_elastic_gas_in_a_box_conserves_energy_and_never_overlaps() {
    for dimensions in [2, 3] {
        let mut bodies = random_gas(60, dimensions, 5);
        let walls = Wall::box_interior(Vec3::splat(-6.0), Vec3::splat(6.0));
        let energy =
            |bodies: &[EventBody]| bodies.iter().map(EventBody::kinetic_energy).sum::<f64>();
        let before = energy(&bodies);
        let mut events = EventLoop::new();
        let (mut count, mut worst_gap) = (0, f64::INFINITY);
        for _ in 0..50 {
            count += events
                .advance(
                    &mut bodies,
                    &walls,
                    0.1,
                    &mut Elastic::perfect(),
                    |_, now| {
                        worst_gap =
                            worst_gap.min(smallest_gap(&now.bodies().collect::<Vec<_>>(), 6.0));
                    },
                )
                .unwrap();
        }
        let drift = (energy(&bodies) - before).abs() / before;
        println!(
            "{dimensions}D: {count} events, energy drift {drift:e}, smallest gap {worst_gap:e}"
        );
        assert!(count > 200, "the gas must collide: {count}");
        assert!(drift < 1e-12, "energy drift {drift:e}");
        // Touching at each event: within about a thousand roundings (2⁻⁵³ of coordinates of 6).
        assert!(worst_gap > -1e-12, "an overlap of {worst_gap:e}");
    }
}

#[test]
fn without_walls_momentum_is_conserved_too() {
    let mut bodies = random_gas(60, 3, 9);
    let momentum = |bodies: &[EventBody]| bodies.iter().map(|b| b.velocity * b.mass).sum::<DVec3>();
    let before = momentum(&bodies);
    let scale: f64 = bodies.iter().map(|b| b.mass * b.velocity.length()).sum();
    let count = EventLoop::new()
        .advance(&mut bodies, &[], 3.0, &mut Elastic::perfect(), |_, _| {})
        .unwrap();
    assert!(count > 10, "they must collide: {count}");
    assert!((momentum(&bodies) - before).length() < 1e-13 * scale);
}

#[test]
fn bad_bodies_steps_and_walls_are_typed_errors() {
    let good = ball(0.0, 1.0);
    let mut events = EventLoop::new();
    let mut run = |bodies: &mut [EventBody], walls: &[Wall], step: f64| {
        events.advance(bodies, walls, step, &mut Elastic::perfect(), |_, _| {})
    };
    for mass in [0.0, -1.0, f64::NAN] {
        let mut bodies = [good, EventBody { mass, ..good }];
        assert!(matches!(
            run(&mut bodies, &[], 1.0),
            Err(Error::InvalidMass { body: 1, .. })
        ));
    }
    for step in [-1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            run(&mut [good], &[], step),
            Err(Error::InvalidStep { .. })
        ));
    }
    let mut bodies = [EventBody {
        position: DVec3::new(f64::NAN, 0.0, 0.0),
        ..good
    }];
    assert!(matches!(
        run(&mut bodies, &[], 1.0),
        Err(Error::NonFinite { body: 0, .. })
    ));
    let mut bodies = [EventBody {
        radius: -1.0,
        ..good
    }];
    assert!(matches!(
        run(&mut bodies, &[], 1.0),
        Err(Error::NegativeRadius { body: 0, .. })
    ));
    let bad = [Wall::plane(Vec3::ZERO, Vec3::ZERO)];
    let mut bodies = [good];
    assert!(matches!(
        run(&mut bodies, &bad, 1.0),
        Err(Error::InvalidWall { wall: 0, .. })
    ));
    assert_eq!(bodies[0], good, "an error leaves the bodies as they were");
    // A periodic box too small for how far the bodies may travel in the step: a typed
    // error, with every pair as the broad phase too (it checks nothing itself).
    let mut events = EventLoop::new().with_periodic_box(PeriodicBox::cube(10.0).unwrap());
    let mut fast = [EventBody::new(
        DVec3::splat(5.0),
        DVec3::new(3.0, 0.0, 0.0),
        0.5,
        1.0,
    )];
    let error = events
        .advance(&mut fast, &[], 1.0, &mut Elastic::perfect(), |_, _| {})
        .unwrap_err();
    assert!(
        matches!(error, Error::PeriodicBoxTooSmall { body: 0, .. }),
        "{error}"
    );
    // No bodies, and a step of 0: nothing happens.
    assert_eq!(run(&mut [], &[], 1.0).unwrap(), 0);
    let mut still = [good];
    assert_eq!(run(&mut still, &[], 0.0).unwrap(), 0);
    assert_eq!(still[0], good);
}

mod common;

/// `n` bodies of radius 0.5 and unit mass, clear of each other, in the periodic cube of
/// side `side`, with random velocities.
fn periodic_gas(n: usize, side: f64, seed: u64) -> Vec<EventBody> {
    let mut random = SplitMix64::new(seed);
    let mut bodies: Vec<EventBody> = Vec::new();
    let nearest = |a: DVec3, b: DVec3| {
        let d = a - b;
        (d - (d / side).round() * side).length()
    };
    while bodies.len() < n {
        let position = DVec3::new(
            random.range(0.0, side),
            random.range(0.0, side),
            random.range(0.0, side),
        );
        if bodies.iter().any(|b| nearest(b.position, position) <= 1.0) {
            continue;
        }
        let velocity = random.in_ball(2.0, 3).as_dvec3();
        bodies.push(EventBody::new(position, velocity, 0.5, 1.0));
    }
    bodies
}

/// Runs `steps` steps of a periodic gas with `broad_phase`, returning every event.
fn run_gas(
    bodies: &mut [EventBody],
    side: f32,
    steps: usize,
    broad_phase: &mut impl BroadPhase,
) -> Vec<Event> {
    let mut events = EventLoop::new().with_periodic_box(PeriodicBox::cube(side).unwrap());
    let mut seen = Vec::new();
    for _ in 0..steps {
        events
            .advance_with(
                bodies,
                &[],
                0.05,
                &mut Elastic::perfect(),
                broad_phase,
                |event, _| seen.push(*event),
            )
            .unwrap();
    }
    seen
}

#[test]
fn a_broad_phase_gives_the_events_of_every_pair() {
    // 300 bodies at a packing fraction of about 0.1: the CPU step's pairs within reach
    // give the same events, to the bit, as sweeping every pair.
    let side = 12.0;
    let start = periodic_gas(300, side, 3);
    let (mut all, mut cpu) = (start.clone(), start.clone());
    let everything = run_gas(&mut all, side as f32, 20, &mut AllPairs);
    let mut finder = cpu::ContactFinder::new();
    let near = run_gas(&mut cpu, side as f32, 20, &mut finder);
    assert!(
        everything.len() > 100,
        "the gas must collide: {}",
        everything.len()
    );
    assert_eq!(near, everything);
    assert_eq!(cpu, all);
    // Every body stays in the box.
    assert!(
        cpu.iter()
            .all(|b| b.position.min_element() >= 0.0 && b.position.max_element() < side)
    );
}

#[test]
fn a_body_faster_than_the_pairs_allow_asks_for_them_again() {
    // A heavy body at speed 1 meets a light one coming at 0.5: the light one leaves at about
    // 2.5, beyond twice the fastest speed at the step's start, so the pairs are asked for
    // again from the impact on; it then meets a third body, and the events are those of
    // sweeping every pair. (The pairs' reach counts both bodies' bound, so the first pairs
    // would have held here too: the rebuild is the guarantee for larger jumps in speed.)
    let mut bodies = [
        EventBody::new(DVec3::ZERO, DVec3::new(1.0, 0.0, 0.0), 0.5, 1000.0),
        EventBody::new(
            DVec3::new(1.5, 0.0, 0.0),
            DVec3::new(-0.5, 0.0, 0.0),
            0.5,
            1.0,
        ),
        EventBody::new(DVec3::new(5.0, 0.0, 0.0), DVec3::ZERO, 0.5, 1.0),
    ];
    let mut all = bodies;
    let mut finder = cpu::ContactFinder::new();
    let mut events = EventLoop::new();
    let mut seen = Vec::new();
    events
        .advance_with(
            &mut bodies,
            &[],
            2.0,
            &mut Elastic::perfect(),
            &mut finder,
            |event, _| seen.push(*event),
        )
        .unwrap();
    assert_eq!(events.broad_phase_runs(), 2);
    let pairs = pairs_of(&seen);
    assert_eq!(pairs[..2], [[0, 1], [1, 2]]);
    let mut everything = Vec::new();
    EventLoop::new()
        .advance(&mut all, &[], 2.0, &mut Elastic::perfect(), |event, _| {
            everything.push(*event)
        })
        .unwrap();
    assert_eq!(seen, everything);
    assert_eq!(bodies, all);
}

#[test]
fn bodies_meet_across_the_periodic_box() {
    // Side 10: a body at x = 9.5 moving +x meets one at rest at x = 0.6 across the face
    // (gap 0.1 at speed 1: t = 0.1), and stops there; the other leaves at speed 1 and is at
    // x = 1.0 when the step of 0.5 ends.
    let mut bodies = [
        EventBody::new(
            DVec3::new(9.5, 5.0, 5.0),
            DVec3::new(1.0, 0.0, 0.0),
            0.5,
            1.0,
        ),
        EventBody::new(DVec3::new(0.6, 5.0, 5.0), DVec3::ZERO, 0.5, 1.0),
    ];
    let mut seen = Vec::new();
    EventLoop::new()
        .with_periodic_box(PeriodicBox::cube(10.0).unwrap())
        .advance(
            &mut bodies,
            &[],
            0.5,
            &mut Elastic::perfect(),
            |event, _| seen.push(*event),
        )
        .unwrap();
    assert_eq!(seen.len(), 1);
    assert!((seen[0].time() - 0.1).abs() < 1e-12);
    if let Event::Pair { normal, .. } = seen[0] {
        assert!((normal - DVec3::X).length() < 1e-12);
    }
    assert!((bodies[0].position.x - 9.6).abs() < 1e-12);
    assert!((bodies[1].position.x - 1.0).abs() < 1e-12);
}

#[test]
fn the_gpu_step_as_the_broad_phase_gives_the_cpu_steps_events() {
    let Some(context) =
        common::gpu_context("the_gpu_step_as_the_broad_phase_gives_the_cpu_steps_events")
    else {
        return;
    };
    let pipeline = sweepcast::gpu::ContactPipeline::new(&context).unwrap();
    let side = 12.0;
    let start = periodic_gas(300, side, 8);
    let (mut on_gpu, mut on_cpu) = (start.clone(), start);
    let gpu = run_gas(&mut on_gpu, side as f32, 10, &mut &pipeline);
    let cpu = run_gas(&mut on_cpu, side as f32, 10, &mut cpu::ContactFinder::new());
    assert!(cpu.len() > 50, "the gas must collide: {}", cpu.len());
    assert_eq!(gpu, cpu);
    assert_eq!(on_gpu, on_cpu);
}
