//! The tunnelling scenario of `examples/tunneling.rs`, shared with its test
//! (`tests/simulations.rs`): the targets, the projectiles, the time-sliced method of the
//! seeds' tutorial and sweepcast's swept test on them.

#![allow(dead_code)] // the example and the test each take what they need

use sweepcast::glam::Vec2;
use sweepcast::reference::{self, Body};
use sweepcast::{Circle, MovingCircle, SweepOptions, Wall, cpu};

/// The field, in metres, and the frame: 25 Hz, as in the post.
/// A method's first hit of a projectile: when (a fraction of the frame) and which target.
pub type Hit<T> = Option<(T, usize)>;

pub const FIELD: Vec2 = Vec2::new(120.0, 60.0);
pub const FRAME: f32 = 1.0 / 25.0;
pub const PROJECTILE_RADIUS: f32 = 0.05;

/// A target: a thin plate or a small rock.
#[derive(Copy, Clone, Debug)]
pub enum Target {
    Plate(Wall),
    Rock(Circle),
}

pub fn targets() -> Vec<Target> {
    let plate =
        |x: f32, y0: f32, y1: f32| Target::Plate(Wall::segment(Vec2::new(x, y0), Vec2::new(x, y1)));
    let mut targets = vec![plate(40.0, 2.0, 28.0), plate(95.0, 32.0, 58.0)];
    // A column of rocks, and a slanted plate.
    targets.extend(
        (0..7).map(|k| Target::Rock(Circle::new(Vec2::new(70.0, 33.0 + 4.0 * k as f32), 0.6))),
    );
    targets.push(Target::Plate(Wall::segment(
        Vec2::new(60.0, 4.0),
        Vec2::new(75.0, 26.0),
    )));
    targets
}

/// Thirty projectiles from the left edge, one every 2 m up the field, at speeds from 500 to
/// 5,000 m/s (20 to 200 m a frame), rising or falling a little.
pub fn projectiles() -> Vec<MovingCircle> {
    (0..30)
        .map(|k| {
            let speed = 500.0 + 4_500.0 * ((k * 7) % 30) as f32 / 29.0;
            let climb = ((k % 5) as f32 - 2.0) * 0.04;
            let direction = Vec2::new(1.0, climb).normalize();
            MovingCircle::new(
                Vec2::new(0.0, 1.0 + 2.0 * k as f32),
                PROJECTILE_RADIUS,
                direction * speed * FRAME,
            )
        })
        .collect()
}

/// Whether the projectile, centred at `centre`, overlaps `target` (the static test of each
/// slice).
pub fn overlaps(centre: Vec2, target: &Target) -> bool {
    match *target {
        Target::Rock(rock) => centre.distance(rock.center) <= rock.radius + PROJECTILE_RADIUS,
        Target::Plate(Wall::Segment { start, end }) => {
            let (start, edge) = (start.truncate(), (end - start).truncate());
            let along = (edge.dot(centre - start) / edge.length_squared()).clamp(0.0, 1.0);
            (start + edge * along).distance(centre) <= PROJECTILE_RADIUS
        }
        Target::Plate(Wall::Plane { .. }) => unreachable!("the plates are segments"),
    }
}

/// The time-sliced method: the first of `slices` sub-steps after which the projectile
/// overlaps a target, reported (as the tutorial does) at the start of that slice.
pub fn time_sliced(projectile: &MovingCircle, targets: &[Target], slices: u32) -> Hit<f32> {
    (1..=slices).find_map(|slice| {
        let t = slice as f32 / slices as f32;
        let centre = projectile.center + projectile.displacement * t;
        let hit = targets.iter().position(|target| overlaps(centre, target))?;
        Some(((slice - 1) as f32 / slices as f32, hit))
    })
}

/// sweepcast: the earliest swept impact over the targets (f32), and the oracle's (f64).
pub fn swept(projectile: &MovingCircle, targets: &[Target]) -> (Hit<f32>, Hit<f64>) {
    let options = SweepOptions::default();
    let body = Body::from(*projectile);
    let mut ours: Hit<f32> = None;
    let mut oracle: Hit<f64> = None;
    for (index, target) in targets.iter().enumerate() {
        let (time, exact) = match target {
            Target::Rock(rock) => (
                cpu::sweep_sphere_sphere(projectile, rock, options).map(|i| i.time_of_impact),
                reference::sweep_sphere_sphere(&body, &Body::from(*rock), options)
                    .map(|i| i.time_of_impact),
            ),
            Target::Plate(wall) => (
                cpu::sweep_sphere_wall(projectile, wall, options).map(|i| i.time_of_impact),
                reference::sweep_sphere_wall(&body, wall, options).map(|i| i.time_of_impact),
            ),
        };
        if let Some(time) = time
            && ours.is_none_or(|(best, _)| time < best)
        {
            ours = Some((time, index));
        }
        if let Some(time) = exact
            && oracle.is_none_or(|(best, _)| time < best)
        {
            oracle = Some((time, index));
        }
    }
    (ours, oracle)
}
