//! The event loop (`sweepcast::events`): hand-computed sequences (a Newton's cradle, a ball
//! between two walls, a perfectly inelastic pair), the conservation laws of elastic
//! collisions on random scenes (energy always, momentum without walls), no overlap at any
//! event, and the typed errors.

use sweepcast::events::{Elastic, Event, EventBody, EventLoop};
use sweepcast::glam::{DVec3, Vec3};
use sweepcast::{Error, Wall};
use testkit::SplitMix64;

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
    let pairs: Vec<[usize; 2]> = seen
        .iter()
        .map(|event| match event {
            Event::Pair { bodies, .. } => *bodies,
            Event::Wall { .. } => panic!("no walls here"),
        })
        .collect();
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
                        worst_gap = worst_gap.min(smallest_gap(now, 6.0));
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
    // No bodies, and a step of 0: nothing happens.
    assert_eq!(run(&mut [], &[], 1.0).unwrap(), 0);
    let mut still = [good];
    assert_eq!(run(&mut still, &[], 0.0).unwrap(), 0);
    assert_eq!(still[0], good);
}
