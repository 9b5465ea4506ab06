//! Walls (segments and planes): hand-computed cases on the f32 path and the f64 oracle, the
//! f32 twin of `shaders/walls.wgsl` against the oracle on random bodies and walls (judged by
//! backward error), the earliest wall per body, and the typed errors of bad walls.

use glam::{Vec2, Vec3};
use sweepcast::reference::{self, Body};
use sweepcast::{
    Error, ImpactStatus, MovingCircle, MovingSphere, PeriodicBox, SweepOptions, Wall, cpu,
    low_level::validate_walls,
};
use testkit::SplitMix64;

/// Both paths on one case: the f32 path's answer, after checking that the oracle agrees on
/// hit or miss, status and (to f32 precision) time and normal.
fn both(
    body: impl Into<MovingSphere>,
    wall: &Wall,
    options: SweepOptions,
) -> Option<sweepcast::Impact> {
    let body = body.into();
    let f32_answer = cpu::sweep_sphere_wall(&body, wall, options);
    let f64_answer = reference::sweep_sphere_wall(&Body::from(body), wall, options);
    match (f32_answer, f64_answer) {
        (None, None) => {}
        (Some(a), Some(b)) => {
            assert_eq!(a.status, b.status, "{body:?} {wall:?}");
            assert!(
                (f64::from(a.time_of_impact) - b.time_of_impact).abs() < 1e-6,
                "{a:?} {b:?}"
            );
            assert!(
                (a.normal.as_dvec3() - b.normal).length() < 1e-6,
                "{a:?} {b:?}"
            );
        }
        (a, b) => panic!("{body:?} {wall:?}: f32 {a:?}, f64 {b:?}"),
    }
    f32_answer
}

fn circle(x: f32, y: f32, radius: f32, dx: f32, dy: f32) -> MovingCircle {
    MovingCircle::new(Vec2::new(x, y), radius, Vec2::new(dx, dy))
}

#[test]
fn a_circle_meets_a_segment_through_its_side() {
    // Radius 1 from the origin along x by 8; the cushion x = 5, y in [-2, 2]: the gap of 4
    // closes at t = 0.5, the point (5, 0) on the cushion.
    let cushion = Wall::segment(Vec2::new(5.0, -2.0), Vec2::new(5.0, 2.0));
    let impact = both(
        circle(0.0, 0.0, 1.0, 8.0, 0.0),
        &cushion,
        SweepOptions::DEFAULT,
    )
    .unwrap();
    assert_eq!(impact.time_of_impact, 0.5);
    assert_eq!(impact.normal, Vec3::X);
    assert_eq!(impact.point, Vec3::new(5.0, 0.0, 0.0));
    assert_eq!(impact.status, ImpactStatus::Contact);
    assert_eq!(impact.displacement_a, Vec3::new(4.0, 0.0, 0.0));
    assert_eq!(impact.displacement_b, Vec3::ZERO);
    // The cushion's other face, from the other side, the same way.
    let impact = both(
        circle(10.0, 0.0, 1.0, -8.0, 0.0),
        &cushion,
        SweepOptions::DEFAULT,
    )
    .unwrap();
    assert_eq!((impact.time_of_impact, impact.normal), (0.5, Vec3::NEG_X));
}

#[test]
fn a_circle_meets_a_segment_at_its_end_points() {
    // The end (5, 0.6): (x - 5)² + 0.6² = 1 at x = 4.2, t = 4.2 / 8; the normal is the
    // 3-4-5 direction (0.8, 0.6) and the point the end itself.
    let wall = Wall::segment(Vec2::new(5.0, 0.6), Vec2::new(5.0, 5.0));
    let impact = both(
        circle(0.0, 0.0, 1.0, 8.0, 0.0),
        &wall,
        SweepOptions::DEFAULT,
    )
    .unwrap();
    assert!((impact.time_of_impact - 0.525).abs() < 1e-7, "{impact:?}");
    assert!(
        (impact.normal - Vec3::new(0.8, 0.6, 0.0)).length() < 1e-6,
        "{impact:?}"
    );
    assert!(
        (impact.point - Vec3::new(5.0, 0.6, 0.0)).length() < 1e-6,
        "{impact:?}"
    );
    // The same end as the segment's `end` rather than its `start`.
    let reversed = Wall::segment(Vec2::new(5.0, 5.0), Vec2::new(5.0, 0.6));
    let again = both(
        circle(0.0, 0.0, 1.0, 8.0, 0.0),
        &reversed,
        SweepOptions::DEFAULT,
    )
    .unwrap();
    assert_eq!(again.time_of_impact, impact.time_of_impact);
    // Along the segment's own line: the near end at x = -1, t = 0.4, head on.
    let rail = Wall::segment(Vec2::ZERO, Vec2::new(4.0, 0.0));
    let impact = both(
        circle(-5.0, 0.0, 1.0, 10.0, 0.0),
        &rail,
        SweepOptions::DEFAULT,
    )
    .unwrap();
    assert!((impact.time_of_impact - 0.4).abs() < 1e-7);
    assert_eq!(impact.normal, Vec3::X);
    // Passing 1.5 below an end with radius 1: a miss, as the seeds' vertical-line case
    // (which ignores the segment's extent) would not say.
    let short = Wall::segment(Vec2::new(5.0, 1.5), Vec2::new(5.0, 3.0));
    assert!(
        both(
            circle(0.0, 0.0, 1.0, 8.0, 0.0),
            &short,
            SweepOptions::DEFAULT
        )
        .is_none()
    );
    // A segment whose ends coincide is a point: the gap of 4 closes at t = 0.5.
    let point = Wall::segment(Vec2::new(5.0, 0.0), Vec2::new(5.0, 0.0));
    let impact = both(
        circle(0.0, 0.0, 1.0, 8.0, 0.0),
        &point,
        SweepOptions::DEFAULT,
    )
    .unwrap();
    assert_eq!((impact.time_of_impact, impact.normal), (0.5, Vec3::X));
}

#[test]
fn a_circle_misses_a_segment_it_stops_short_of_or_moves_away_from() {
    let cushion = Wall::segment(Vec2::new(5.0, -2.0), Vec2::new(5.0, 2.0));
    // Stops 1 short.
    assert!(
        both(
            circle(0.0, 0.0, 1.0, 3.0, 0.0),
            &cushion,
            SweepOptions::DEFAULT
        )
        .is_none()
    );
    // Moves away, or along it.
    assert!(
        both(
            circle(0.0, 0.0, 1.0, -8.0, 0.0),
            &cushion,
            SweepOptions::DEFAULT
        )
        .is_none()
    );
    assert!(
        both(
            circle(0.0, 0.0, 1.0, 0.0, 8.0),
            &cushion,
            SweepOptions::DEFAULT
        )
        .is_none()
    );
    // Reaches it exactly at t = 1: a hit.
    let impact = both(
        circle(0.0, 0.0, 1.0, 4.0, 0.0),
        &cushion,
        SweepOptions::DEFAULT,
    )
    .unwrap();
    assert_eq!(impact.time_of_impact, 1.0);
}

#[test]
fn a_circle_overlapping_a_segment_is_flagged_and_the_separating_option_drops_it() {
    let cushion = Wall::segment(Vec2::new(5.0, -2.0), Vec2::new(5.0, 2.0));
    let impact = both(
        circle(4.5, 0.0, 1.0, 1.0, 0.0),
        &cushion,
        SweepOptions::DEFAULT,
    )
    .unwrap();
    assert_eq!(impact.status, ImpactStatus::Overlapping);
    assert_eq!((impact.time_of_impact, impact.normal), (0.0, Vec3::X));
    // Touching exactly: a contact at t = 0.
    let touching = both(
        circle(4.0, 0.0, 1.0, 1.0, 0.0),
        &cushion,
        SweepOptions::DEFAULT,
    )
    .unwrap();
    assert_eq!(
        (touching.status, touching.time_of_impact),
        (ImpactStatus::Contact, 0.0)
    );
    // Just resolved and moving away: a miss under the separating option, still a hit without.
    let leaving = circle(4.0, 0.0, 1.0, -1.0, 0.0);
    assert!(both(leaving, &cushion, SweepOptions::event_driven()).is_none());
    assert!(both(leaving, &cushion, SweepOptions::DEFAULT).is_some());
    // Moving into it: still reported under the separating option.
    let entering = circle(4.0, 0.0, 1.0, 1.0, 0.0);
    assert!(both(entering, &cushion, SweepOptions::event_driven()).is_some());
}

#[test]
fn a_sphere_meets_a_rod_in_space() {
    // The rod through (5, 0, 0) along (0, 1, 1): the path along x meets it at x = 4.
    let rod = Wall::segment_3d(Vec3::new(5.0, -3.0, -3.0), Vec3::new(5.0, 3.0, 3.0));
    let body = MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(8.0, 0.0, 0.0));
    let impact = both(body, &rod, SweepOptions::DEFAULT).unwrap();
    assert_eq!((impact.time_of_impact, impact.normal), (0.5, Vec3::X));
    // Beside it, 1.5 off along z and y's opposite: the distance to the line is 1.5 · √2 > 1.
    let aside = MovingSphere::new(Vec3::new(0.0, 1.5, -1.5), 1.0, Vec3::new(8.0, 0.0, 0.0));
    assert!(both(aside, &rod, SweepOptions::DEFAULT).is_none());
}

#[test]
fn a_sphere_meets_a_plane() {
    let floor = Wall::plane(Vec3::ZERO, Vec3::new(0.0, 2.0, 0.0)); // any length of normal
    let falling = MovingSphere::new(Vec3::new(1.0, 3.0, -2.0), 1.0, Vec3::new(2.0, -4.0, 0.0));
    let impact = both(falling, &floor, SweepOptions::DEFAULT).unwrap();
    assert_eq!((impact.time_of_impact, impact.normal), (0.5, Vec3::NEG_Y));
    assert_eq!(impact.point, Vec3::new(2.0, 0.0, -2.0));
    // Parallel to the floor, or rising: a miss. Short of it: a miss.
    let sliding = MovingSphere::new(Vec3::new(0.0, 3.0, 0.0), 1.0, Vec3::new(5.0, 0.0, 0.0));
    assert!(both(sliding, &floor, SweepOptions::DEFAULT).is_none());
    let rising = MovingSphere::new(Vec3::new(0.0, 3.0, 0.0), 1.0, Vec3::Y);
    assert!(both(rising, &floor, SweepOptions::DEFAULT).is_none());
    let short = MovingSphere::new(Vec3::new(0.0, 3.0, 0.0), 1.0, Vec3::NEG_Y);
    assert!(both(short, &floor, SweepOptions::DEFAULT).is_none());
    // Behind the plane (inside the solid), however far: overlapping at t = 0.
    let buried = MovingSphere::new(Vec3::new(0.0, -50.0, 0.0), 1.0, Vec3::ZERO);
    let impact = both(buried, &floor, SweepOptions::DEFAULT).unwrap();
    assert_eq!(
        (impact.status, impact.normal),
        (ImpactStatus::Overlapping, Vec3::NEG_Y)
    );
    // Resting on it and lifting off: a miss under the separating option.
    let lifting = MovingSphere::new(Vec3::new(0.0, 1.0, 0.0), 1.0, Vec3::Y);
    assert!(both(lifting, &floor, SweepOptions::event_driven()).is_none());
    let resting = both(lifting, &floor, SweepOptions::DEFAULT).unwrap();
    assert_eq!(
        (resting.status, resting.time_of_impact),
        (ImpactStatus::Contact, 0.0)
    );
    // A zero normal: the unvalidated query misses; validation names it.
    let degenerate = Wall::plane(Vec3::ZERO, Vec3::ZERO);
    assert!(cpu::sweep_sphere_wall(&falling, &degenerate, SweepOptions::DEFAULT).is_none());
    assert!(
        reference::sweep_sphere_wall(&Body::from(falling), &degenerate, SweepOptions::DEFAULT)
            .is_none()
    );
}

#[test]
fn the_earliest_wall_of_each_body_inside_a_box() {
    let room = Wall::box_interior(Vec3::ZERO, Vec3::splat(10.0));
    let bodies = [
        // To x = 10 at t = 0.5 and to y = 10 at t = 0.75: the +x face (wall 1) first.
        MovingSphere::new(Vec3::splat(5.0), 1.0, Vec3::new(8.0, 5.333_333_5, 0.0)),
        // Into the corner x = 0, z = 0 at the same time: the lower index (wall 0) wins.
        MovingSphere::new(Vec3::new(3.0, 5.0, 3.0), 1.0, Vec3::new(-4.0, 0.0, -4.0)),
        // Stays inside, clear of every face.
        MovingSphere::new(Vec3::splat(5.0), 1.0, Vec3::ONE),
        // Half through the floor at the start.
        MovingSphere::new(Vec3::new(5.0, 0.5, 5.0), 1.0, Vec3::ZERO),
    ];
    let contacts = cpu::earliest_wall_contacts(&bodies, &room, SweepOptions::DEFAULT).unwrap();
    let first = contacts[0].unwrap();
    assert_eq!(
        (first.wall().unwrap(), first.impact.time_of_impact),
        (1, 0.5)
    );
    let corner = contacts[1].unwrap();
    assert_eq!(
        (corner.wall().unwrap(), corner.impact.time_of_impact),
        (0, 0.5)
    );
    assert!(contacts[2].is_none());
    let floor = contacts[3].unwrap();
    assert_eq!(
        (floor.wall().unwrap(), floor.impact.status),
        (2, ImpactStatus::Overlapping)
    );
    // Each one is the earliest of the body's single-wall sweeps.
    for (body, contact) in bodies.iter().zip(&contacts) {
        let earliest = room
            .iter()
            .enumerate()
            .filter_map(|(w, wall)| {
                Some((
                    cpu::sweep_sphere_wall(body, wall, SweepOptions::DEFAULT)?,
                    w,
                ))
            })
            .min_by(|a, b| {
                a.0.time_of_impact
                    .total_cmp(&b.0.time_of_impact)
                    .then(a.1.cmp(&b.1))
            });
        assert_eq!(
            contact.map(|c| (c.impact, c.wall().unwrap() as usize)),
            earliest
        );
    }
    // No walls, or no bodies: nothing.
    assert!(
        cpu::earliest_wall_contacts(&bodies, &[], SweepOptions::DEFAULT)
            .unwrap()
            .iter()
            .all(Option::is_none)
    );
    assert!(
        cpu::earliest_wall_contacts::<MovingSphere>(&[], &room, SweepOptions::DEFAULT)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn bad_walls_and_bodies_are_typed_errors() {
    let good = Wall::segment(Vec2::ZERO, Vec2::X);
    let body = [MovingSphere::new(Vec3::ZERO, 1.0, Vec3::X)];
    let cases = [
        Wall::segment(Vec2::new(f32::NAN, 0.0), Vec2::X),
        Wall::segment_3d(Vec3::ZERO, Vec3::new(0.0, 0.0, f32::INFINITY)),
        Wall::plane(Vec3::new(0.0, f32::MAX, 0.0), Vec3::Y),
        Wall::plane(Vec3::ZERO, Vec3::ZERO),
        Wall::plane(Vec3::ZERO, Vec3::new(f32::NAN, 1.0, 0.0)),
    ];
    for bad in cases {
        let walls = [good, bad];
        let error = validate_walls(&walls).unwrap_err();
        assert!(
            matches!(error, Error::InvalidWall { wall: 1, .. }),
            "{bad:?}: {error}"
        );
        let error = cpu::earliest_wall_contacts(&body, &walls, SweepOptions::DEFAULT).unwrap_err();
        assert!(
            matches!(error, Error::InvalidWall { wall: 1, .. }),
            "{bad:?}: {error}"
        );
    }
    // A degenerate segment is a point, not an error.
    assert!(validate_walls(&[Wall::segment(Vec2::ONE, Vec2::ONE)]).is_ok());
    let nan_body = [MovingSphere::new(Vec3::NAN, 1.0, Vec3::X)];
    assert!(matches!(
        cpu::earliest_wall_contacts(&nan_body, &[good], SweepOptions::DEFAULT),
        Err(Error::NonFinite { body: 0, .. })
    ));
    let negative = [MovingSphere::new(Vec3::ZERO, -1.0, Vec3::X)];
    assert!(matches!(
        cpu::earliest_wall_contacts(&negative, &[good], SweepOptions::DEFAULT),
        Err(Error::NegativeRadius { body: 0, .. })
    ));
}

#[test]
fn the_f32_path_is_held_to_the_oracle_on_random_walls() {
    let mut random = SplitMix64::new(7);
    let epsilon = f64::from(f32::EPSILON) / 2.0;
    let options = [SweepOptions::DEFAULT, SweepOptions::event_driven()];
    let (mut hits, mut worst, mut disagreements) = (0, 0.0f64, 0);
    for case in 0..200_000 {
        let dimensions = if case % 2 == 0 { 2 } else { 3 };
        let point = |random: &mut SplitMix64, size: f64| random.in_ball(size, dimensions);
        let body = MovingSphere::new(
            point(&mut random, 10.0),
            random.range(0.0, 2.0) as f32,
            point(&mut random, 12.0),
        );
        let wall = match case % 5 {
            0 | 1 => Wall::segment_3d(point(&mut random, 8.0), point(&mut random, 8.0)),
            // Short segments, nearly points.
            2 => {
                let start = point(&mut random, 8.0);
                Wall::segment_3d(start, start + point(&mut random, 1e-3))
            }
            _ => Wall::plane(point(&mut random, 8.0), point(&mut random, 1.0)),
        };
        if validate_walls(&[wall]).is_err() {
            continue;
        }
        let options = options[case % 2];
        let f32_answer = cpu::sweep_sphere_wall(&body, &wall, options);
        let f64_answer = reference::sweep_sphere_wall(&Body::from(body), &wall, options);
        let bound = common::WALL_BOUND * epsilon * common::scale_of(&body, &wall).powi(2);
        let radius_squared = f64::from(body.radius).powi(2);
        // The oracle on the same body with its squared radius moved by the bound.
        let oracle_with = |extra: f64| {
            let mut widened = Body::from(body);
            widened.radius = (radius_squared + extra).max(0.0).sqrt();
            reference::sweep_sphere_wall(&widened, &wall, options)
        };
        match (f32_answer, f64_answer) {
            (Some(impact), _) => {
                hits += 1;
                let t = f64::from(impact.time_of_impact);
                let center = body.center.as_dvec3() + body.displacement.as_dvec3() * t;
                let gap = common::distance_squared_to(center, &wall) - radius_squared;
                if impact.status == ImpactStatus::Overlapping || (t == 0.0 && gap < 0.0) {
                    assert!(gap <= bound, "case {case}: overlap reported at gap {gap:e}");
                } else {
                    assert!(
                        gap.abs() <= bound,
                        "case {case}: {body:?} {wall:?} {impact:?}: gap {gap:e} beyond {bound:e}"
                    );
                    worst =
                        worst.max(gap.abs() / (epsilon * common::scale_of(&body, &wall).powi(2)));
                }
                if f64_answer.is_none() {
                    // A hit the oracle misses: only within the bound of grazing or of the
                    // end of the step, where a radius larger by the bound hits.
                    assert!(
                        oracle_with(bound).is_some(),
                        "case {case}: {body:?} {wall:?} {impact:?}"
                    );
                    disagreements += 1;
                }
            }
            (None, Some(reference)) => {
                // A miss where the oracle hits: only within the bound of grazing or of the
                // end of the step, where a radius smaller by the bound misses.
                assert!(
                    oracle_with(-bound).is_none(),
                    "case {case}: {body:?} {wall:?} f32 misses, oracle {reference:?}"
                );
                disagreements += 1;
            }
            (None, None) => {}
        }
    }
    println!(
        "{hits} hits; worst backward error {worst:.2} ε s² (bound {}); {disagreements} hit/miss disagreements within the bound",
        common::WALL_BOUND
    );
    assert!(
        hits > 20_000,
        "the random cases must hit often enough to test something: {hits}"
    );
}

mod common;

/// Submits `encoder` with a copy of the stage's contacts, and reads the first `count` back.
fn submit_and_read(
    context: &sweepcast::gpu::GpuContext,
    mut encoder: wgpu::CommandEncoder,
    buffers: &sweepcast::low_level::WallBuffers,
    count: usize,
) -> Vec<sweepcast::low_level::layout::WallContactRecord> {
    let size = buffers.contacts().size();
    let readback = context.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("walls readback"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    encoder.copy_buffer_to_buffer(buffers.contacts(), 0, &readback, 0, size);
    context.queue().submit([encoder.finish()]);
    common::cast(&common::read_mapped(context.device(), &readback), count)
}

/// Records the walls stage on `bodies` and `walls` with each of `options` and holds every
/// record to the twin's (`low_level::walls::main`): equal to the bit, or passing the judge.
fn stage_against_twin(
    context: &sweepcast::gpu::GpuContext,
    bodies: &[MovingSphere],
    walls: &[Wall],
    options: &[SweepOptions],
) {
    let (device, queue) = (context.device(), context.queue());
    let stage = sweepcast::low_level::WallStage::new(device).unwrap();
    validate_walls(walls).unwrap();
    let records: Vec<sweepcast::low_level::layout::BodyRecord> =
        bodies.iter().map(|&b| b.into()).collect();
    let wall_records: Vec<sweepcast::low_level::layout::WallRecord> =
        walls.iter().map(Into::into).collect();
    let buffers = stage
        .create_buffers(device, bodies.len() as u64, walls.len() as u64)
        .unwrap();
    queue.write_buffer(buffers.bodies(), 0, bytemuck::cast_slice(&records));
    buffers.write_walls(queue, walls).unwrap();
    for options in options {
        let mut encoder = device.create_command_encoder(&Default::default());
        stage
            .record(
                queue,
                &mut encoder,
                &buffers,
                bodies.len() as u32,
                walls.len() as u32,
                *options,
            )
            .unwrap();
        let gpu = submit_and_read(context, encoder, &buffers, bodies.len());
        // The twin, entry point by entry point.
        let params = sweepcast::low_level::layout::WallParams::new(
            options,
            bodies.len() as u32,
            walls.len() as u32,
        );
        let mut twin =
            vec![sweepcast::low_level::layout::WallContactRecord::default(); bodies.len()];
        for index in 0..bodies.len() as u32 {
            sweepcast::low_level::walls::main(index, &records, &wall_records, &mut twin, &params);
        }
        let (mut hits, mut equal) = (0, 0);
        for (k, (ours, theirs)) in gpu.iter().zip(&twin).enumerate() {
            let hit = |r: &sweepcast::low_level::layout::WallContactRecord| {
                (r.impact.status != sweepcast::low_level::layout::STATUS_MISS)
                    .then_some((r.wall, r.impact.time_of_impact))
            };
            hits += usize::from(hit(ours).is_some());
            if ours == theirs {
                equal += 1;
                continue;
            }
            if let Err(why) =
                common::judge_earliest_wall(&bodies[k], walls, options, hit(ours), hit(theirs))
            {
                panic!("body {k}: {why}: {ours:?} against the twin's {theirs:?}");
            }
        }
        println!(
            "{options:?}: {hits} of {} bodies meet a wall on the device; {equal} records equal the twin's to the bit",
            bodies.len()
        );
        assert!(
            hits > bodies.len() / 10,
            "the cases must hit often enough to test something"
        );
    }
}

#[test]
fn the_gpu_stage_gives_its_twins_earliest_walls() {
    let Some(context) = common::gpu_context("the_gpu_stage_gives_its_twins_earliest_walls") else {
        return;
    };
    let mut random = SplitMix64::new(11);
    // A box, a table's cushions as segments, rods in space, tilted planes and points.
    let mut walls: Vec<Wall> = Wall::box_interior(Vec3::splat(-20.0), Vec3::splat(20.0)).to_vec();
    for _ in 0..6 {
        walls.push(Wall::segment_3d(
            random.in_ball(15.0, 2),
            random.in_ball(15.0, 2),
        ));
        walls.push(Wall::segment_3d(
            random.in_ball(15.0, 3),
            random.in_ball(15.0, 3),
        ));
    }
    walls.push(Wall::plane(random.in_ball(10.0, 3), random.in_ball(1.0, 3)));
    walls.push(Wall::segment(Vec2::splat(3.0), Vec2::splat(3.0)));
    let bodies: Vec<MovingSphere> = (0..50_000)
        .map(|k| {
            let dimensions = if k % 2 == 0 { 2 } else { 3 };
            MovingSphere::new(
                random.in_ball(18.0, dimensions),
                random.range(0.0, 1.5) as f32,
                random.in_ball(20.0, dimensions),
            )
        })
        .collect();
    let options = [SweepOptions::DEFAULT, SweepOptions::event_driven()];
    stage_against_twin(&context, &bodies, &walls, &options);
}

#[test]
fn the_gpu_stage_gives_its_twins_earliest_walls_in_a_periodic_box() {
    let Some(context) =
        common::gpu_context("the_gpu_stage_gives_its_twins_earliest_walls_in_a_periodic_box")
    else {
        return;
    };
    let mut random = SplitMix64::new(13);
    // x and y wrap, z does not; bodies cross the faces often.
    let periodic_box = PeriodicBox::new(Vec3::new(16.0, 12.0, f32::INFINITY)).unwrap();
    let bodies: Vec<MovingSphere> = (0..50_000)
        .map(|k| body_in_box(&mut random, &periodic_box, 2 + k % 2, 1.5))
        .collect();
    // Segments and rods in the cell, some near its faces, points, a floor and a ceiling
    // (along z, which does not wrap), and planes tilted across the axes that wrap.
    let mut walls = vec![
        Wall::plane(Vec3::new(0.0, 0.0, -1.0), Vec3::Z),
        Wall::plane(Vec3::new(0.0, 0.0, 15.0), Vec3::NEG_Z),
        Wall::plane(Vec3::new(8.0, 6.0, 0.0), Vec3::new(1.0, -2.0, 0.5)),
        Wall::segment(Vec2::new(0.5, 1.0), Vec2::new(0.5, 11.0)),
        Wall::segment(Vec2::new(2.0, 11.75), Vec2::new(14.0, 11.75)),
        Wall::segment(Vec2::splat(6.0), Vec2::splat(6.0)),
    ];
    for _ in 0..6 {
        walls.push(Wall::segment_3d(
            in_cell(&mut random, &periodic_box, 2),
            in_cell(&mut random, &periodic_box, 2),
        ));
        walls.push(Wall::segment_3d(
            in_cell(&mut random, &periodic_box, 3),
            in_cell(&mut random, &periodic_box, 3),
        ));
    }
    let options = [SweepOptions::DEFAULT, SweepOptions::event_driven()]
        .map(|options| options.with_periodic_box(periodic_box));
    stage_against_twin(&context, &bodies, &walls, &options);
}

#[test]
fn the_gpu_stage_checks_its_counts_and_walls() {
    let Some(context) = common::gpu_context("the_gpu_stage_checks_its_counts_and_walls") else {
        return;
    };
    let (device, queue) = (context.device(), context.queue());
    let stage = sweepcast::low_level::WallStage::new(device).unwrap();
    let buffers = stage.create_buffers(device, 4, 2).unwrap();
    let mut encoder = device.create_command_encoder(&Default::default());
    let options = SweepOptions::DEFAULT;
    assert!(matches!(
        stage.record(queue, &mut encoder, &buffers, 5, 1, options),
        Err(Error::TooManyBodies { count: 5, max: 4 })
    ));
    assert!(matches!(
        stage.record(queue, &mut encoder, &buffers, 4, 3, options),
        Err(Error::InvalidWall { wall: 3, .. })
    ));
    let three = [Wall::plane(Vec3::ZERO, Vec3::Y); 3];
    assert!(matches!(
        buffers.write_walls(queue, &three),
        Err(Error::InvalidWall { wall: 3, .. })
    ));
    let zero_normal = [Wall::plane(Vec3::ZERO, Vec3::ZERO)];
    assert!(matches!(
        buffers.write_walls(queue, &zero_normal),
        Err(Error::InvalidWall { wall: 0, .. })
    ));
    assert!(matches!(
        stage.create_buffers(device, stage.max_bodies() + 1, 1),
        Err(Error::TooManyBodies { .. })
    ));
    // A body against the floor, then with no walls (each submitted on its own: the
    // parameters are a queue write, which the last record before a submission sets), then
    // no bodies at all.
    let body: sweepcast::low_level::layout::BodyRecord =
        MovingSphere::new(Vec3::new(0.0, 2.0, 0.0), 1.0, Vec3::NEG_Y).into();
    queue.write_buffer(buffers.bodies(), 0, bytemuck::bytes_of(&body));
    buffers.write_walls(queue, &three[..1]).unwrap();
    let run = |body_count: u32, wall_count: u32| {
        let mut encoder = device.create_command_encoder(&Default::default());
        stage
            .record(
                queue,
                &mut encoder,
                &buffers,
                body_count,
                wall_count,
                options,
            )
            .unwrap();
        submit_and_read(&context, encoder, &buffers, 1)[0]
    };
    let hit = run(1, 1);
    assert_eq!(
        (hit.impact.status, hit.impact.time_of_impact),
        (sweepcast::low_level::layout::STATUS_CONTACT, 1.0)
    );
    assert_eq!(
        run(1, 0).impact.status,
        sweepcast::low_level::layout::STATUS_MISS
    );
    // No bodies: nothing runs, and the last answer stays.
    assert_eq!(
        run(0, 1).impact.status,
        sweepcast::low_level::layout::STATUS_MISS
    );
}

#[test]
fn walls_in_the_cpu_step_are_the_earliest_wall_contacts() {
    let (bodies, options) = testkit::Scene::Uniform.bodies(3_000, 3, 4);
    let walls = Wall::box_interior(Vec3::splat(5.0), Vec3::splat(25.0));
    let mut finder = cpu::ContactFinder::new();
    let without = finder.find(&bodies, options).unwrap().clone();
    assert!(without.earliest_walls().is_empty());
    let with = finder.find_with_walls(&bodies, &walls, options).unwrap();
    assert_eq!(with.contacts(), without.contacts());
    let alone = cpu::earliest_wall_contacts(&bodies, &walls, options).unwrap();
    assert_eq!(with.earliest_walls(), &alone[..]);
    assert!(alone.iter().filter(|c| c.is_some()).count() > 100);
    // A bad wall fails the step, and the finder works after it.
    let bad = [Wall::plane(Vec3::ZERO, Vec3::ZERO)];
    assert!(matches!(
        finder.find_with_walls(&bodies, &bad, options),
        Err(Error::InvalidWall { wall: 0, .. })
    ));
    assert_eq!(
        finder.find(&bodies, options).unwrap().contacts(),
        without.contacts()
    );
}

/// A box of period 10 along x only (y and z do not wrap).
fn periodic_along_x() -> SweepOptions {
    let periodic_box = PeriodicBox::new(Vec3::new(10.0, f32::INFINITY, f32::INFINITY)).unwrap();
    SweepOptions::DEFAULT.with_periodic_box(periodic_box)
}

#[test]
fn a_body_that_wraps_meets_a_wall_beyond_the_face_it_crossed() {
    // From x = 9.5 by +2: the centre crosses x = 10 at t = 0.25 and its image goes on from
    // x = 0; the cushion x = 1 (y from 4 to 6) stops it at x = 0.75, at t = 0.625.
    let cushion = Wall::segment(Vec2::new(1.0, 4.0), Vec2::new(1.0, 6.0));
    let options = periodic_along_x();
    let impact = both(circle(9.5, 5.0, 0.25, 2.0, 0.0), &cushion, options).expect("it wraps");
    assert_eq!((impact.time_of_impact, impact.normal), (0.625, Vec3::X));
    assert_eq!(impact.point, Vec3::new(1.0, 5.0, 0.0));
    assert_eq!(impact.status, ImpactStatus::Contact);
    // Handed in unwrapped, periods away on either side: the same answer, to the bit.
    for x in [29.5, -0.5, -20.5] {
        let again = both(circle(x, 5.0, 0.25, 2.0, 0.0), &cushion, options);
        assert_eq!(again, Some(impact), "x = {x}");
    }
    // Without the box the body stays clear of it, as before.
    assert!(
        both(
            circle(9.5, 5.0, 0.25, 2.0, 0.0),
            &cushion,
            SweepOptions::DEFAULT
        )
        .is_none()
    );
    // The other way, through x = 0: the image from x = 10 meets the cushion x = 9 from its
    // right at x = 9.25, at t = 0.25 + 0.75 / 2.
    let far_cushion = Wall::segment(Vec2::new(9.0, 4.0), Vec2::new(9.0, 6.0));
    let impact = both(circle(0.5, 5.0, 0.25, -2.0, 0.0), &far_cushion, options).unwrap();
    assert_eq!((impact.time_of_impact, impact.normal), (0.625, Vec3::NEG_X));
    assert_eq!(impact.point, Vec3::new(9.0, 5.0, 0.0));
    // And the earliest wall of such bodies, with the reach checked.
    let bodies = [
        circle(9.5, 5.0, 0.25, 2.0, 0.0),
        circle(29.5, 5.0, 0.25, 2.0, 0.0),
    ];
    let contacts = cpu::earliest_wall_contacts(&bodies, &[cushion], options).unwrap();
    assert!(
        contacts
            .iter()
            .all(|c| c.map(|c| c.impact.time_of_impact) == Some(0.625))
    );
    let too_fast = [circle(9.5, 5.0, 0.25, 2.5, 0.0)];
    assert!(matches!(
        cpu::earliest_wall_contacts(&too_fast, &[cushion], options),
        Err(Error::PeriodicBoxTooSmall {
            body: 0,
            axis: 0,
            ..
        })
    ));
}

#[test]
fn a_body_that_wraps_meets_a_plane_as_its_image_in_the_cell() {
    // A floor y = 1 in a cube of side 10: a body handed in at y = 21.5 is the image at
    // y = 1.5, which falls to the floor (at y = 1.25) at t = 0.25.
    let floor = Wall::plane(Vec3::new(0.0, 1.0, 0.0), Vec3::Y);
    let options = SweepOptions::DEFAULT.with_periodic_box(PeriodicBox::cube(10.0).unwrap());
    let falling = |y| MovingSphere::new(Vec3::new(5.0, y, 5.0), 0.25, Vec3::NEG_Y);
    let impact = both(falling(1.5), &floor, options).unwrap();
    assert_eq!((impact.time_of_impact, impact.normal), (0.25, Vec3::NEG_Y));
    assert_eq!(both(falling(21.5), &floor, options), Some(impact));
    assert_eq!(both(falling(-8.5), &floor, options), Some(impact));
    // A plane that cuts a periodic axis: x = 9 + y (free side below-right, x - y > 9).
    // Moving +x from (9.75, 0.25), the centre crosses x = 10 at t = 0.25 and its image
    // appears at x = 0, deep in the solid: it meets the plane then, as a contact; under the
    // separating option it is moving out of the solid (towards its free side), a miss.
    let slope = Wall::plane(Vec3::new(9.0, 0.0, 0.0), Vec3::new(1.0, -1.0, 0.0));
    let body = circle(9.75, 0.25, 0.1, 1.0, 0.0);
    let options = periodic_along_x();
    let impact = both(body, &slope, options).expect("its image appears in the solid");
    assert_eq!(impact.time_of_impact, 0.25);
    assert_eq!(impact.status, ImpactStatus::Contact);
    let event_driven =
        SweepOptions::event_driven().with_periodic_box(options.periodic_box.unwrap());
    assert!(both(body, &slope, event_driven).is_none());
    // Open space: the body stays on the free side.
    assert!(both(body, &slope, SweepOptions::DEFAULT).is_none());
}

#[test]
fn the_periodic_judge_rejects_wrong_answers() {
    let options = periodic_along_x();
    let body: MovingSphere = circle(9.5, 5.0, 0.25, 2.0, 0.0).into();
    let cushion = Wall::segment(Vec2::new(1.0, 4.0), Vec2::new(1.0, 6.0));
    let judge = |wall: &Wall, time| common::judge_wall(&body, wall, &options, time).is_ok();
    assert!(judge(&cushion, Some(0.625)));
    // A miss; a time short of touching; the image leaving the cushion's far side (touching
    // then too, but not first).
    for wrong in [None, Some(0.6), Some(0.875)] {
        assert!(!judge(&cushion, wrong), "{wrong:?}");
    }
    // A wall beyond the face x = 10, which the body's path in open space meets at t = 0.375
    // (x = 10.25) but no image in the cell does.
    let beyond = Wall::segment(Vec2::new(10.5, 4.0), Vec2::new(10.5, 6.0));
    assert!(judge(&beyond, None));
    assert!(!judge(&beyond, Some(0.375)));
}

/// A random periodic box for the wall tests: in 2D x and y may wrap, in 3D any axis, at
/// least one; periods from 4 to 20.
fn random_periodic_box(random: &mut SplitMix64, dimensions: u32) -> PeriodicBox {
    loop {
        let period = Vec3::from_array(std::array::from_fn(|axis| {
            let wraps = axis < dimensions as usize && random.unit() < 0.7;
            if wraps {
                random.range(4.0, 20.0) as f32
            } else {
                f32::INFINITY
            }
        }));
        if let Ok(periodic_box) = PeriodicBox::new(period) {
            return periodic_box;
        }
    }
}

/// A random point of the box's primary cell ([0, L) where an axis wraps, [0, 20) where it
/// does not), in `dimensions`.
fn in_cell(random: &mut SplitMix64, periodic_box: &PeriodicBox, dimensions: u32) -> Vec3 {
    Vec3::from_array(std::array::from_fn(|axis| {
        let period = periodic_box.period()[axis];
        let side = if period.is_finite() { period } else { 20.0 };
        if axis < dimensions as usize {
            (random.unit() * f64::from(side)) as f32 % side
        } else {
            0.0
        }
    }))
}

/// A random body in the box's primary cell, of radius below `largest_radius` and within the
/// validated reach (radius plus displacement below a quarter period). Half the time on each
/// axis that wraps, it starts where its centre crosses the face ahead at a random time of
/// the step.
fn body_in_box(
    random: &mut SplitMix64,
    periodic_box: &PeriodicBox,
    dimensions: u32,
    largest_radius: f64,
) -> MovingSphere {
    let shortest = f64::from(periodic_box.period().min_element());
    let radius = random.range(0.0, largest_radius);
    let displacement = random.in_ball((shortest / 4.0 - radius) * 0.999, dimensions);
    let mut center = in_cell(random, periodic_box, dimensions);
    for axis in (0..3).filter(|&axis| periodic_box.period()[axis].is_finite()) {
        let motion = f64::from(displacement[axis]);
        if random.unit() < 0.5 {
            let before_face = motion.abs() * random.unit();
            let period = f64::from(periodic_box.period()[axis]);
            center[axis] = if motion > 0.0 {
                period - before_face
            } else {
                before_face
            } as f32;
        }
    }
    let body = MovingSphere::new(center, radius as f32, displacement);
    assert!(sweepcast::low_level::validate_periodic_reach(&[body], periodic_box).is_ok());
    body
}

/// Where `body`'s image in the box's primary cell ends the step.
fn end_in_cell(body: &MovingSphere, periodic_box: &PeriodicBox) -> Vec3 {
    Vec3::from_array(std::array::from_fn(|axis| {
        let end = body.center[axis] + body.displacement[axis];
        let period = periodic_box.period()[axis];
        if period.is_finite() {
            end.rem_euclid(period)
        } else {
            end
        }
    }))
}

/// Whether the image of `body` (which starts in the primary cell) that met a wall is not
/// the body itself: it met it after crossing a face.
fn met_after_a_crossing(
    body: &MovingSphere,
    impact: &sweepcast::Impact,
    periodic_box: &PeriodicBox,
) -> bool {
    let image = impact.point - impact.normal * body.radius;
    let unwrapped = body.center + body.displacement * impact.time_of_impact;
    (image - unwrapped).abs().max_element() > periodic_box.period().min_element() / 2.0
}

#[test]
fn the_f32_path_is_held_to_the_oracle_in_periodic_boxes() {
    let mut random = SplitMix64::new(23);
    let (mut hits, mut crossing_hits, mut worst, mut disagreements) = (0, 0, 0.0f64, 0);
    for case in 0..100_000 {
        let dimensions = if case % 2 == 0 { 2 } else { 3 };
        let periodic_box = random_periodic_box(&mut random, dimensions);
        let options = [SweepOptions::DEFAULT, SweepOptions::event_driven()][case / 2 % 2]
            .with_periodic_box(periodic_box);
        let shortest = f64::from(periodic_box.period().min_element());
        let body = body_in_box(&mut random, &periodic_box, dimensions, shortest / 10.0);
        // Where the body's image in the cell ends the step: walls about it are met after a
        // crossing as often as before.
        let end = end_in_cell(&body, &periodic_box);
        let near_end = |random: &mut SplitMix64, size: f64| end + random.in_ball(size, dimensions);
        let wall = match case % 6 {
            0 => Wall::segment_3d(
                in_cell(&mut random, &periodic_box, dimensions),
                in_cell(&mut random, &periodic_box, dimensions),
            ),
            1 => Wall::segment_3d(near_end(&mut random, 2.0), near_end(&mut random, 4.0)),
            // Short segments, nearly points.
            2 => {
                let start = near_end(&mut random, 1.0);
                Wall::segment_3d(start, start + random.in_ball(1e-3, dimensions))
            }
            // Planes, tilted across the axes that wrap (an image entering the cell may then
            // appear behind one), or along an axis.
            3 => Wall::plane(near_end(&mut random, 1.0), random.in_ball(1.0, dimensions)),
            4 => Wall::plane(
                in_cell(&mut random, &periodic_box, dimensions),
                random.in_ball(1.0, dimensions),
            ),
            _ => {
                let mut normal = Vec3::ZERO;
                normal[(random.unit() * f64::from(dimensions)) as usize] = 1.0;
                Wall::plane(near_end(&mut random, 1.0), normal)
            }
        };
        if validate_walls(&[wall]).is_err() {
            continue;
        }
        let answer = cpu::sweep_sphere_wall(&body, &wall, options);
        let time = answer.map(|impact| impact.time_of_impact);
        let verdict = common::judge_wall(&body, &wall, &options, time).unwrap_or_else(|why| {
            panic!("case {case}: {why}: {body:?} {wall:?} {options:?}: {answer:?}")
        });
        if let Some(impact) = answer {
            hits += 1;
            crossing_hits += usize::from(met_after_a_crossing(&body, &impact, &periodic_box));
        }
        if let Some(error) = verdict.backward_error {
            worst = worst.max(error);
        }
        disagreements += usize::from(verdict.disagrees);
    }
    println!(
        "{hits} hits ({crossing_hits} after a crossing); worst backward error {worst:.2} ε s² (bound {}); {disagreements} hit/miss disagreements within the bound",
        common::WALL_BOUND
    );
    assert!(
        hits > 10_000 && crossing_hits > 1_000,
        "the random cases must hit, and after a crossing, often enough to test something: {hits}, {crossing_hits}"
    );
}

#[test]
fn walls_in_the_cpu_step_in_a_periodic_box_are_held_to_the_oracle() {
    let (bodies, options) = testkit::Scene::Periodic.bodies(10_000, 3, 5);
    let periodic_box = options.periodic_box.expect("a periodic scene");
    let side = periodic_box.period().x;
    let mut random = SplitMix64::new(17);
    // A plane across x (its solid side x > 0.9 L, which bodies crossing x = 0 downwards
    // enter), long segments through the cell and short ones along its faces, within a unit
    // of them.
    let mut walls = vec![Wall::plane(Vec3::new(0.9 * side, 0.0, 0.0), Vec3::NEG_X)];
    for k in 0..36 {
        if k % 3 == 0 {
            walls.push(Wall::segment_3d(
                in_cell(&mut random, &periodic_box, 3),
                in_cell(&mut random, &periodic_box, 3),
            ));
            continue;
        }
        let axis = (random.unit() * 3.0) as usize;
        let mut start = in_cell(&mut random, &periodic_box, 3);
        start[axis] = random.range(0.0, 1.0) as f32;
        if k % 3 == 2 {
            start[axis] = side - start[axis];
        }
        let mut along = random.in_ball(8.0, 3);
        along[axis] = 0.0;
        walls.push(Wall::segment_3d(start, start + along));
    }
    let mut finder = cpu::ContactFinder::new();
    let without = finder.find(&bodies, options).unwrap().clone();
    let with = finder.find_with_walls(&bodies, &walls, options).unwrap();
    assert_eq!(with.contacts(), without.contacts());
    let alone = cpu::earliest_wall_contacts(&bodies, &walls, options).unwrap();
    assert_eq!(with.earliest_walls(), &alone[..]);
    let (mut hits, mut crossing_hits, mut equal) = (0, 0, 0);
    for (k, (body, contact)) in bodies.iter().zip(with.earliest_walls()).enumerate() {
        // The oracle's earliest wall: the lowest index among equal times.
        let oracle = walls
            .iter()
            .enumerate()
            .filter_map(|(w, wall)| {
                let impact = reference::sweep_sphere_wall(&Body::from(*body), wall, options)?;
                Some((w as u32, impact.time_of_impact))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
            .map(|(w, t)| (w, t as f32));
        let ours = contact.map(|c| (c.wall().unwrap(), c.impact.time_of_impact));
        if ours == oracle {
            equal += 1;
        } else if let Err(why) = common::judge_earliest_wall(body, &walls, &options, ours, oracle) {
            panic!("body {k}: {why}: {contact:?} against the oracle's {oracle:?}");
        }
        if let Some(contact) = contact {
            hits += 1;
            crossing_hits +=
                usize::from(met_after_a_crossing(body, &contact.impact, &periodic_box));
        }
    }
    println!(
        "{} bodies, {} walls: {hits} meet a wall ({crossing_hits} after crossing a face), {equal} as the oracle's to f32",
        bodies.len(),
        walls.len()
    );
    assert!(
        hits > 300 && crossing_hits > 30,
        "the walls must be met, and after a crossing, often enough to test something: {hits}, {crossing_hits}"
    );
}
