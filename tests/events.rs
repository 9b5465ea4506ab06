//! The event loop (`sweepcast::events`): hand-computed sequences (a Newton's cradle, a ball
//! between two walls, a perfectly inelastic pair), the conservation laws of elastic
//! collisions on random scenes (energy always, momentum without walls), no overlap at any
//! event, and the typed errors.

use sweepcast::events::{AllPairs, BroadPhase, Cells, Elastic, Event, EventBody, EventLoop};
use sweepcast::glam::{DVec3, Vec3};
use sweepcast::{Error, PeriodicBox, Wall, cpu};
use testkit::SplitMix64;

use common::pairs_of;

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
    assert!((seen[0].time - 0.001).abs() < 1e-12);
    assert!((seen[1].time - 0.002).abs() < 1e-12);
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
                times.push(event.time);
                if let Some(wall) = event.wall() {
                    which.push(wall);
                    assert_eq!(event.normal.x.signum(), if wall == 0 { -1.0 } else { 1.0 });
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
            &mut Elastic::new(0.0).unwrap(),
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

/// Each event's impulse is the momentum its body received (its partner the opposite): over
/// a step among walls, every body's momentum changes by the sum of its impulses. Elastic's
/// impulse lies along the normal, against it, and a wall's takes back twice the approach.
#[test]
fn the_impulses_of_the_events_add_up_to_each_bodys_change_of_momentum() {
    for dimensions in [2, 3] {
        let mut bodies = random_gas(60, dimensions, 11);
        let walls = Wall::box_interior(Vec3::splat(-6.0), Vec3::splat(6.0));
        let momenta = |bodies: &[EventBody]| {
            bodies
                .iter()
                .map(|b| b.velocity * b.mass)
                .collect::<Vec<_>>()
        };
        let before = momenta(&bodies);
        let mut received = vec![DVec3::ZERO; bodies.len()];
        let (mut pairs, mut walls_hit) = (0, 0);
        let mut events = EventLoop::new();
        for _ in 0..40 {
            events
                .advance(
                    &mut bodies,
                    &walls,
                    0.1,
                    &mut Elastic::perfect(),
                    |event, _| {
                        // Along -normal, and pushing the bodies apart.
                        let along = event.impulse.dot(event.normal);
                        assert!(along < 0.0, "{event:?}");
                        let across = (event.impulse - event.normal * along).length();
                        assert!(across <= 1e-12 * along.abs(), "{event:?}");
                        received[event.body as usize] += event.impulse;
                        match event.pair() {
                            Some([_, other]) => {
                                received[other] -= event.impulse;
                                pairs += 1;
                            }
                            None => walls_hit += 1,
                        }
                    },
                )
                .unwrap();
        }
        assert!(
            pairs > 50 && walls_hit > 10,
            "{pairs} pairs, {walls_hit} walls"
        );
        let scale: f64 = before.iter().map(|p| p.length()).sum::<f64>();
        for (index, body) in bodies.iter().enumerate() {
            let change = body.velocity * body.mass - before[index];
            let error = (change - received[index]).length();
            assert!(
                error < 1e-12 * scale,
                "body {index}: momentum changed by {change}, impulses add to {}",
                received[index]
            );
        }
    }
}

#[test]
fn in_a_box_and_in_open_space_every_skin_gives_the_events_of_every_pair() {
    // Mixed radii (0.2 to 0.8) and masses, in 2D and 3D: in a box of six walls, and in open
    // space, where the bodies fly apart beyond the grid laid over where they started (its
    // edge cells hold them). Thin skins (0.05), left often. The CPU step and the cells with
    // the skins renewed together, and the cells and every pair with each body renewing its
    // own: the events and bodies of every pair, to the bit.
    for dimensions in [2, 3] {
        for boxed in [true, false] {
            let start = random_gas(60, dimensions, 13);
            let walls: Vec<Wall> = if boxed {
                Wall::box_interior(Vec3::splat(-6.0), Vec3::splat(6.0)).to_vec()
            } else {
                Vec::new()
            };
            let run = |events: EventLoop, broad_phase: &mut dyn BroadPhase| {
                let mut events = events.with_skin(0.05);
                let mut bodies = start.clone();
                let mut seen = Vec::new();
                for _ in 0..20 {
                    events
                        .advance_with(
                            &mut bodies,
                            &walls,
                            0.1,
                            &mut Elastic::perfect(),
                            &mut &mut *broad_phase,
                            |event, _| seen.push(*event),
                        )
                        .unwrap();
                }
                (seen, bodies)
            };
            let reference = run(EventLoop::new(), &mut AllPairs);
            assert!(reference.0.len() > 20, "{}", reference.0.len());
            let cases: [(&str, EventLoop, Box<dyn BroadPhase>); 4] = [
                (
                    "CPU step",
                    EventLoop::new(),
                    Box::new(cpu::ContactFinder::new()),
                ),
                ("cells", EventLoop::new(), Box::new(Cells::new())),
                (
                    "cells, local skins",
                    EventLoop::new().with_local_skins(),
                    Box::new(Cells::new()),
                ),
                (
                    "every pair, local skins",
                    EventLoop::new().with_local_skins(),
                    Box::new(AllPairs),
                ),
            ];
            for (name, events, mut broad_phase) in cases {
                let got = run(events, &mut *broad_phase);
                assert!(got == reference, "{name}, {dimensions}D, in a box: {boxed}");
            }
        }
    }
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
    // A periodic box too small for a radius plus twice the skin: a typed error, with every
    // pair as the broad phase too (it checks nothing itself).
    let mut events = EventLoop::new()
        .with_periodic_box(PeriodicBox::cube(10.0).unwrap())
        .with_skin(1.0);
    let mut big = [EventBody::new(DVec3::splat(5.0), DVec3::X, 0.5, 1.0)];
    let error = events
        .advance(&mut big, &[], 1.0, &mut Elastic::perfect(), |_, _| {})
        .unwrap_err();
    assert!(
        matches!(error, Error::PeriodicBoxTooSmall { body: 0, .. }),
        "{error}"
    );
    // The default skin shrinks to fit the box; a radius that does not fit is an error.
    let mut fits = [EventBody::new(DVec3::splat(5.0), DVec3::X, 2.4, 1.0)];
    let mut events = EventLoop::new().with_periodic_box(PeriodicBox::cube(10.0).unwrap());
    assert_eq!(
        events
            .advance(&mut fits, &[], 1.0, &mut Elastic::perfect(), |_, _| {})
            .unwrap(),
        0
    );
    let mut too_big = [EventBody::new(DVec3::splat(5.0), DVec3::X, 2.6, 1.0)];
    assert!(matches!(
        events.advance(&mut too_big, &[], 1.0, &mut Elastic::perfect(), |_, _| {}),
        Err(Error::PeriodicBoxTooSmall { body: 0, .. })
    ));
    // A skin that is not a finite distance above 0.
    for skin in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let mut bodies = [good];
        let error = EventLoop::new()
            .with_skin(skin)
            .advance(&mut bodies, &[], 1.0, &mut Elastic::perfect(), |_, _| {})
            .unwrap_err();
        assert!(matches!(error, Error::InvalidSkin { .. }), "{error}");
        assert_eq!(bodies[0], good);
    }
    // No bodies, and a step of 0: nothing happens.
    assert_eq!(run(&mut [], &[], 1.0).unwrap(), 0);
    let mut still = [good];
    assert_eq!(run(&mut still, &[], 0.0).unwrap(), 0);
    assert_eq!(still[0], good);
}

mod common;

/// Runs `steps` steps of a periodic gas with `broad_phase`, returning every event.
fn run_gas(
    bodies: &mut [EventBody],
    side: f32,
    steps: usize,
    broad_phase: &mut impl BroadPhase,
) -> Vec<Event> {
    let mut events = EventLoop::new().with_periodic_box(PeriodicBox::cube(side).unwrap());
    common::run_steps(&mut events, bodies, steps, broad_phase)
}

#[test]
fn a_broad_phase_gives_the_events_of_every_pair() {
    // 300 bodies at a packing fraction of about 0.1: the CPU step's pairs within reach
    // give the same events, to the bit, as sweeping every pair.
    let side = 12.0;
    let start = testkit::periodic_gas(300, side, 3);
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

/// Runs `bodies` for `steps` steps of `step` with `events` and `broad_phase`: every event,
/// and how many times the broad phase was asked for pairs.
fn run_loop(
    events: &mut EventLoop,
    bodies: &mut [EventBody],
    steps: usize,
    step: f64,
    broad_phase: &mut impl BroadPhase,
) -> (Vec<Event>, usize) {
    let mut seen = Vec::new();
    let mut runs = 0;
    for _ in 0..steps {
        events
            .advance_with(
                bodies,
                &[],
                step,
                &mut Elastic::perfect(),
                broad_phase,
                |event, _| seen.push(*event),
            )
            .unwrap();
        runs += events.broad_phase_runs();
    }
    (seen, runs)
}

#[test]
fn a_body_that_leaves_its_skin_finds_its_new_partners() {
    // A heavy body at speed 1 meets a light one coming at 0.5: the light one leaves at about
    // 2.5 and, far beyond the thin skin of the pairs first asked for, meets a third body 3.5
    // away. The loop asks for the pairs again each time a body leaves its skin (or, with
    // local skins, finds the body's new partners itself) and gives the events of sweeping
    // every pair, to the bit.
    let start = [
        EventBody::new(DVec3::ZERO, DVec3::new(1.0, 0.0, 0.0), 0.5, 1000.0),
        EventBody::new(
            DVec3::new(1.5, 0.0, 0.0),
            DVec3::new(-0.5, 0.0, 0.0),
            0.5,
            1.0,
        ),
        EventBody::new(DVec3::new(5.0, 0.0, 0.0), DVec3::ZERO, 0.5, 1.0),
    ];
    let thin = || EventLoop::new().with_skin(0.1);
    let mut all = start;
    let (everything, _) = run_loop(&mut thin(), &mut all, 1, 2.0, &mut AllPairs);
    assert_eq!(pairs_of(&everything)[..2], [[0, 1], [1, 2]]);
    let mut global = start;
    let (events, runs) = run_loop(
        &mut thin(),
        &mut global,
        1,
        2.0,
        &mut cpu::ContactFinder::new(),
    );
    assert!(runs > 2, "the skins of 0.1 were left many times: {runs}");
    assert_eq!(events, everything);
    assert_eq!(global, all);
    let mut local = start;
    let (events, runs) = run_loop(
        &mut thin().with_local_skins(),
        &mut local,
        1,
        2.0,
        &mut Cells::new(),
    );
    assert_eq!(runs, 1, "local skins ask the broad phase only at the start");
    assert_eq!(events, everything);
    assert_eq!(local, all);
}

#[test]
fn every_broad_phase_and_skin_gives_the_same_events_in_steps_of_any_length() {
    // A periodic gas of 400 bodies for one unit of time: every pair, the CPU step or the
    // cells as the broad phase, with the skins renewed together or each alone, in 40 steps
    // of 0.025 or 4 of 0.25. In steps of the same length: the same events and bodies, to
    // the bit. In steps of the other length: the same impacts in the same order, at the
    // same times from the start to within the rounding of adding up the steps. The loop's
    // predictions depend neither on the pairs beyond a body's skin nor on where steps end.
    let side = 13.0;
    let start = testkit::periodic_gas(400, side, 11);
    let periodic = || EventLoop::new().with_periodic_box(PeriodicBox::cube(side as f32).unwrap());
    // Each event's time from the start of the run.
    let timed = |events: &mut EventLoop,
                 bodies: &mut Vec<EventBody>,
                 steps: usize,
                 broad_phase: &mut dyn BroadPhase|
     -> Vec<(f64, Event)> {
        let step = 1.0 / steps as f64;
        let mut seen = Vec::new();
        for k in 0..steps {
            let (events, _) = run_loop(events, bodies, 1, step, &mut &mut *broad_phase);
            seen.extend(
                events
                    .into_iter()
                    .map(|event| (k as f64 * step + event.time, event)),
            );
        }
        seen
    };
    let mut reference = start.clone();
    let everything = timed(&mut periodic(), &mut reference, 40, &mut AllPairs);
    assert!(everything.len() > 300, "{}", everything.len());
    let cases: [(&str, EventLoop, usize, Box<dyn BroadPhase>); 5] = [
        (
            "CPU step",
            periodic(),
            40,
            Box::new(cpu::ContactFinder::new()),
        ),
        ("cells", periodic(), 40, Box::new(Cells::new())),
        (
            "cells, local skins",
            periodic().with_local_skins(),
            40,
            Box::new(Cells::new()),
        ),
        ("cells, 4 steps", periodic(), 4, Box::new(Cells::new())),
        (
            "every pair, local skins, 4 steps",
            periodic().with_local_skins(),
            4,
            Box::new(AllPairs),
        ),
    ];
    for (name, mut events, steps, mut broad_phase) in cases {
        let mut bodies = start.clone();
        let seen = timed(&mut events, &mut bodies, steps, &mut *broad_phase);
        if steps == 40 {
            assert_eq!(seen, everything, "{name}");
            assert_eq!(bodies, reference, "{name}");
            continue;
        }
        let event_pairs = |events: &[(f64, Event)]| {
            pairs_of(&events.iter().map(|(_, event)| *event).collect::<Vec<_>>())
        };
        assert_eq!(event_pairs(&seen), event_pairs(&everything), "{name}");
        for ((time, _), (expected, _)) in seen.iter().zip(&everything) {
            assert!(
                (time - expected).abs() < 1e-12,
                "{name}: {time} against {expected}"
            );
        }
        for (body, expected) in bodies.iter().zip(&reference) {
            assert!(
                (body.position - expected.position).length() < 1e-12,
                "{name}"
            );
            assert_eq!(body.velocity, expected.velocity, "{name}");
        }
    }
}

#[test]
fn bodies_changed_between_steps_make_the_loop_start_afresh() {
    // Two balls head on, 2 apart at speed 1 each: they would meet at t = 1. Stopped after a
    // step of 0.5 (the caller's change), the first is met by the second at t = 1.5.
    let mut bodies = [ball(0.0, 1.0), ball(4.0, -1.0)];
    let mut events = EventLoop::new();
    let mut seen = Vec::new();
    events
        .advance(&mut bodies, &[], 0.5, &mut Elastic::perfect(), |e, _| {
            seen.push(*e)
        })
        .unwrap();
    assert!(seen.is_empty());
    bodies[0].velocity = DVec3::ZERO;
    events
        .advance(&mut bodies, &[], 1.5, &mut Elastic::perfect(), |e, _| {
            seen.push(*e)
        })
        .unwrap();
    assert_eq!(seen.len(), 1);
    // From the second step's start: the gap of 1 closed at speed 1.
    assert!((seen[0].time - 1.0).abs() < 1e-12, "{:?}", seen[0]);
    assert_eq!(bodies[0].velocity.x, -1.0);
    assert_eq!(bodies[1].velocity.x, 0.0);
}

#[test]
fn each_impact_time_is_where_the_bodies_touch() {
    // 20,000 random pairs, each alone in a loop: where it reports an impact, the centres at
    // that time are the sum of the radii apart, to a backward error of a few ulps of the
    // distances involved; where it reports none, the f64 oracle finds none either (or only
    // a graze within that bound). The bound: the separation at the impact is formed from
    // positions of size up to |p| + |v| t and rounded about eight times.
    let mut random = SplitMix64::new(5);
    let mut impacts = 0;
    for _ in 0..20_000 {
        let body = |random: &mut SplitMix64| {
            EventBody::new(
                random.in_ball(3.0, 3).as_dvec3(),
                random.in_ball(4.0, 3).as_dvec3(),
                random.range(0.01, 1.0),
                1.0,
            )
        };
        let (a, b) = (body(&mut random), body(&mut random));
        if (a.position - b.position).length() <= a.radius + b.radius {
            continue;
        }
        let mut bodies = [a, b];
        let mut seen = None;
        EventLoop::new()
            .advance(
                &mut bodies,
                &[],
                1.0,
                &mut Elastic::perfect(),
                |event, now| {
                    if seen.is_none() {
                        seen = Some((*event, now.body(0), now.body(1)));
                    }
                },
            )
            .unwrap();
        let oracle = sweepcast::reference::sweep_sphere_sphere(
            &sweepcast::reference::Body {
                center: a.position,
                radius: a.radius,
                displacement: a.velocity,
            },
            &sweepcast::reference::Body {
                center: b.position,
                radius: b.radius,
                displacement: b.velocity,
            },
            sweepcast::SweepOptions::event_driven(),
        );
        let scale = a
            .position
            .abs()
            .max_element()
            .max(b.position.abs().max_element())
            + a.velocity.length()
            + b.velocity.length()
            + a.radius
            + b.radius;
        let bound = 16.0 * f64::EPSILON * scale;
        match (seen, oracle) {
            (Some((event, at_a, at_b)), _) => {
                impacts += 1;
                // The velocities after the impact do not matter: the positions at it do.
                let gap = (at_b.position - at_a.position).length() - a.radius - b.radius;
                assert!(gap.abs() <= bound, "gap {gap:e} beyond {bound:e}");
                if let Some(oracle) = oracle {
                    assert!(
                        (event.time - oracle.time_of_impact).abs() <= 1e-9,
                        "{} against the oracle's {}",
                        event.time,
                        oracle.time_of_impact
                    );
                }
            }
            (None, Some(oracle)) => {
                // A graze at most: the oracle's contact within the bound of a miss.
                let at = |body: &EventBody| body.position + body.velocity * oracle.time_of_impact;
                let gap = (at(&b) - at(&a)).length() - a.radius - b.radius;
                assert!(gap.abs() <= bound, "missed an impact: gap {gap:e}");
            }
            (None, None) => {}
        }
    }
    assert!(impacts > 500, "{impacts}");
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
    assert!((seen[0].time - 0.1).abs() < 1e-12);
    assert!(seen[0].pair().is_some());
    assert!((seen[0].normal - DVec3::X).length() < 1e-12);
    assert!((bodies[0].position.x - 9.6).abs() < 1e-12);
    assert!((bodies[1].position.x - 1.0).abs() < 1e-12);
}

#[test]
#[cfg(feature = "gpu")]
fn the_gpu_step_as_the_broad_phase_gives_the_cpu_steps_events() {
    let Some(context) =
        common::gpu_context("the_gpu_step_as_the_broad_phase_gives_the_cpu_steps_events")
    else {
        return;
    };
    let pipeline = sweepcast::gpu::ContactPipeline::new(&context).unwrap();
    let side = 12.0;
    let start = testkit::periodic_gas(300, side, 8);
    let (mut on_gpu, mut on_cpu) = (start.clone(), start);
    let gpu = run_gas(&mut on_gpu, side as f32, 10, &mut &pipeline);
    let cpu = run_gas(&mut on_cpu, side as f32, 10, &mut cpu::ContactFinder::new());
    assert!(cpu.len() > 50, "the gas must collide: {}", cpu.len());
    assert_eq!(gpu, cpu);
    assert_eq!(on_gpu, on_cpu);
}

#[test]
fn the_cells_find_every_touching_pair() {
    // Random spheres of similar and of mixed sizes, in open space (3D and in a plane) and in
    // periodic boxes from one cell a side (every body its own neighbour across the faces)
    // to many: the cells give every pair whose spheres touch or overlap (at the nearest
    // image), each once, as testing every pair in f64 does.
    use sweepcast::MovingSphere;
    let mut random = SplitMix64::new(21);
    let mut cells = Cells::new();
    let mut pairs = Vec::new();
    for case in 0..60 {
        let n = 1 + (random.next_u64() % 300) as usize;
        let side = random.range(2.0, 30.0) as f32;
        let periodic = case % 3 != 0;
        let planar = case % 5 == 0;
        let largest = if case % 2 == 0 { 0.5 } else { 2.0 };
        let spheres: Vec<MovingSphere> = (0..n)
            .map(|_| {
                let mut coordinate = || random.range(0.0, f64::from(side)) as f32;
                let mut centre = Vec3::new(
                    coordinate(),
                    coordinate(),
                    if planar { 0.0 } else { coordinate() },
                );
                if !periodic {
                    centre -= Vec3::splat(side / 2.0);
                }
                let radius = (random.range(0.05, largest) as f32).min(side / 4.0 * 0.99);
                MovingSphere::new(centre, radius, Vec3::ZERO)
            })
            .collect();
        let mut options = sweepcast::SweepOptions::default();
        if periodic {
            options = options.with_periodic_box(PeriodicBox::cube(side).unwrap());
        }
        cells
            .touching_pairs(&spheres, &[], options, &mut pairs)
            .unwrap();
        let mut found: Vec<[u32; 2]> = pairs.iter().map(|&[a, b]| [a.min(b), a.max(b)]).collect();
        found.sort_unstable();
        let length = found.len();
        found.dedup();
        assert_eq!(found.len(), length, "case {case}: a pair found twice");
        let side = f64::from(side);
        let mut expected = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                let mut offset = spheres[b].center.as_dvec3() - spheres[a].center.as_dvec3();
                if periodic {
                    offset -= (offset / side).round() * side;
                }
                let reach = f64::from(spheres[a].radius) + f64::from(spheres[b].radius);
                if offset.length_squared() <= reach * reach {
                    expected.push([a as u32, b as u32]);
                }
            }
        }
        assert_eq!(
            found, expected,
            "case {case}: n {n}, side {side}, periodic {periodic}"
        );
    }
    // No spheres, no pairs; a bad sphere is a typed error.
    cells
        .touching_pairs(&[], &[], sweepcast::SweepOptions::default(), &mut pairs)
        .unwrap();
    assert!(pairs.is_empty());
    let bad = [MovingSphere::new(
        Vec3::new(f32::NAN, 0.0, 0.0),
        1.0,
        Vec3::ZERO,
    )];
    assert!(matches!(
        cells.touching_pairs(&bad, &[], sweepcast::SweepOptions::default(), &mut pairs),
        Err(Error::NonFinite { body: 0, .. })
    ));
}

/// The smallest gap between two bodies at their nearest image in a cube of period `period`,
/// at every event of `steps` steps of `step` of `bodies` with `events`.
fn smallest_gap_at_events(
    events: &mut EventLoop,
    mut bodies: Vec<EventBody>,
    steps: usize,
    step: f64,
    period: f64,
) -> f64 {
    let mut worst = f64::INFINITY;
    for _ in 0..steps {
        events
            .advance(&mut bodies, &[], step, &mut Elastic::perfect(), |_, now| {
                let now: Vec<EventBody> = now.bodies().collect();
                for (i, a) in now.iter().enumerate() {
                    for b in &now[i + 1..] {
                        let d = b.position - a.position;
                        let d = d - (d / period).round() * period;
                        worst = worst.min(d.length() - a.radius - b.radius);
                    }
                }
            })
            .unwrap();
    }
    worst
}

#[test]
fn in_a_small_periodic_box_no_pair_is_missed_and_local_skins_agree() {
    // Boxes of 3.2 to 6 a side: bodies meet their partners at several images over a run,
    // and no two ever overlap. The boxes hold one, two or three of the grid's cells (1.2
    // wide: the radius sum 1 and twice the skin of 0.1) a side: with fewer than three, a
    // body's neighbours across the faces are in its own cells, each offset wrapped. Local
    // skins give the events of every pair, to the bit.
    for (k, side) in [3.2, 4.0, 4.9, 6.0].into_iter().enumerate() {
        let start = testkit::periodic_gas(6 + 3 * k, side, 17 + k as u64);
        let periodic = || {
            EventLoop::new()
                .with_periodic_box(PeriodicBox::cube(side as f32).unwrap())
                .with_skin(0.1)
        };
        let mut all = start.clone();
        let (everything, _) = run_loop(&mut periodic(), &mut all, 100, 0.1, &mut AllPairs);
        assert!(everything.len() > 20, "side {side}: {}", everything.len());
        // No two bodies ever overlap, at any image: a pair that separates at one image may
        // meet at another once they have moved far enough, and must be predicted again.
        // The box's period as the loop has it (an f32).
        let period = f64::from(side as f32);
        let worst = smallest_gap_at_events(&mut periodic(), start.clone(), 100, 0.1, period);
        assert!(worst > -1e-9, "side {side}: an overlap of {worst:e}");
        let mut local = start;
        let (events, _) = run_loop(
            &mut periodic().with_local_skins(),
            &mut local,
            100,
            0.1,
            &mut Cells::new(),
        );
        assert_eq!(events, everything, "side {side}");
        assert_eq!(local, all, "side {side}");
    }
}

#[test]
fn a_period_f32_cannot_represent_is_kept_in_f64_and_no_broad_phase_misses_a_pair() {
    // The side of a gas at a chosen packing: its f32 rounding is 80.599594 (4e-6 short).
    let side = 80.59959770082348;
    let periodic_box = PeriodicBox::new_f64(DVec3::splat(side)).unwrap();
    assert_eq!(periodic_box.period_f64(), DVec3::splat(side));
    assert_ne!(f64::from(periodic_box.period().x), side);
    // One body crossing the face x = L: it comes back at x + v t - L in f64, to the bit
    // (81 - L is exact: the two are within a factor of two).
    let mut lone = [EventBody::new(
        DVec3::new(80.0, 1.0, 1.0),
        DVec3::X,
        0.5,
        1.0,
    )];
    EventLoop::new()
        .with_periodic_box(periodic_box)
        .advance(&mut lone, &[], 1.0, &mut Elastic::perfect(), |_, _| {})
        .unwrap();
    assert_eq!(lone[0].position, DVec3::new(81.0 - side, 1.0, 1.0));
    // A gas whose bodies meet across the faces of a box whose side f32 cannot represent
    // either: the broad phases see the f32 period, the loop the f64 one; every broad phase
    // gives the events of every pair, to the bit, and no two bodies ever overlap at the f64
    // period's nearest image.
    let side = 8.059959770082348;
    let periodic_box = PeriodicBox::new_f64(DVec3::splat(side)).unwrap();
    assert_ne!(f64::from(periodic_box.period().x), side);
    let start = testkit::periodic_gas(40, side, 91);
    let periodic = || {
        EventLoop::new()
            .with_periodic_box(periodic_box)
            .with_skin(0.1)
    };
    let mut all = start.clone();
    let (everything, _) = run_loop(&mut periodic(), &mut all, 100, 0.1, &mut AllPairs);
    assert!(everything.len() > 50, "{} events", everything.len());
    for (name, broad_phase) in [
        ("cells", &mut Cells::new() as &mut dyn BroadPhase),
        ("the CPU step", &mut cpu::ContactFinder::new()),
    ] {
        let mut bodies = start.clone();
        let (events, _) = run_loop(
            &mut periodic(),
            &mut bodies,
            100,
            0.1,
            &mut &mut *broad_phase,
        );
        assert_eq!(events, everything, "{name}");
        assert_eq!(bodies, all, "{name}");
    }
    let mut local = start.clone();
    let (events, _) = run_loop(
        &mut periodic().with_local_skins(),
        &mut local,
        100,
        0.1,
        &mut Cells::new(),
    );
    assert_eq!(events, everything, "local skins");
    let worst = smallest_gap_at_events(&mut periodic(), start, 100, 0.1, side);
    assert!(worst > -1e-9, "an overlap of {worst:e}");
}
