//! The pool break of `examples/pool_break.rs`, shared with its test (`tests/simulations.rs`):
//! a 9-foot table whose six cushions are segments with the pockets as the gaps between them,
//! fifteen racked balls and a cue ball struck hard, run by sweepcast's event loop.

#![allow(dead_code)] // the example and the test each take what they need

use sweepcast::Wall;
use sweepcast::events::{Elastic, Event, EventBody, EventLoop};
use sweepcast::glam::{DVec3, Vec2};

/// The playing surface, in metres (a 9-foot table: 100 by 50 inches).
pub const LENGTH: f64 = 2.54;
pub const WIDTH: f64 = 1.27;
/// A ball: 2¼ inches across, 170 grams.
pub const RADIUS: f64 = 0.028_575;
pub const MASS: f64 = 0.17;
/// The pockets' mouths, measured along the rails: corners 0.11 m on each rail, sides 0.13 m.
pub const CORNER_MOUTH: f64 = 0.11;
pub const SIDE_MOUTH: f64 = 0.13;
/// The gap left between racked balls, so that no three touch at once (a real rack is never
/// perfectly tight, and the order of simultaneous impacts would otherwise be arbitrary).
pub const RACK_GAP: f64 = 1e-4;

/// The six cushions, each a segment along a rail between two pockets.
pub fn cushions() -> Vec<Wall> {
    let (l, w, c, s) = (
        LENGTH as f32,
        WIDTH as f32,
        CORNER_MOUTH as f32,
        SIDE_MOUTH as f32 / 2.0,
    );
    let segment = |x0, y0, x1, y1| Wall::segment(Vec2::new(x0, y0), Vec2::new(x1, y1));
    vec![
        segment(c, 0.0, l / 2.0 - s, 0.0),
        segment(l / 2.0 + s, 0.0, l - c, 0.0),
        segment(c, w, l / 2.0 - s, w),
        segment(l / 2.0 + s, w, l - c, w),
        segment(0.0, c, 0.0, w - c),
        segment(l, c, l, w - c),
    ]
}

/// Where the six pockets are: the middle of each gap between cushions.
pub fn pockets() -> [DVec3; 6] {
    let (l, w) = (LENGTH, WIDTH);
    [
        DVec3::new(0.0, 0.0, 0.0),
        DVec3::new(l / 2.0, 0.0, 0.0),
        DVec3::new(l, 0.0, 0.0),
        DVec3::new(0.0, w, 0.0),
        DVec3::new(l / 2.0, w, 0.0),
        DVec3::new(l, w, 0.0),
    ]
}

/// The cue ball (index 0) on the head spot, moving at `speed` towards the apex of the rack
/// aimed `offset` metres off its centre, and fifteen balls racked in a triangle whose apex is
/// on the foot spot.
pub fn rack(speed: f64, offset: f64) -> Vec<EventBody> {
    let foot = DVec3::new(0.75 * LENGTH, 0.5 * WIDTH, 0.0);
    let head = DVec3::new(0.25 * LENGTH, 0.5 * WIDTH, 0.0);
    let aim = (foot + DVec3::new(0.0, offset, 0.0) - head).normalize();
    let mut bodies = vec![EventBody::new(head, aim * speed, RADIUS, MASS)];
    let spacing = 2.0 * RADIUS + RACK_GAP;
    for row in 0..5 {
        for k in 0..=row {
            let position = foot
                + DVec3::new(
                    row as f64 * spacing * 3f64.sqrt() / 2.0,
                    (k as f64 - row as f64 / 2.0) * spacing,
                    0.0,
                );
            bodies.push(EventBody::new(position, DVec3::ZERO, RADIUS, MASS));
        }
    }
    bodies
}

/// What a break did.
pub struct Break {
    /// Every impact, in order, with the time from the stroke.
    pub events: Vec<(f64, Event)>,
    /// Each ball's path: its centre at the stroke, at each of its impacts, when it was
    /// pocketed and at the end.
    pub paths: Vec<Vec<DVec3>>,
    /// When each ball was pocketed, and in which pocket.
    pub pocketed: Vec<Option<(f64, usize)>>,
    /// The kinetic energy at the stroke, and at the end (on the table plus what the
    /// pocketed balls carried in).
    pub energy_before: f64,
    pub energy_after: f64,
    /// The smallest gap ever seen between two balls, or a ball and a cushion, at any impact
    /// and at the end of any step (negative: an overlap).
    pub smallest_gap: f64,
}

/// The distance from `point` to the segment `wall`.
fn distance_to(point: DVec3, wall: &Wall) -> f64 {
    let Wall::Segment { start, end } = *wall else {
        unreachable!("the table's cushions are segments")
    };
    let (start, edge) = (start.as_dvec3(), (end - start).as_dvec3());
    let along = (edge.dot(point - start) / edge.length_squared()).clamp(0.0, 1.0);
    (start + edge * along - point).length()
}

/// The smallest gap between balls on the table, and between a ball and a cushion.
fn smallest_gap(bodies: &[EventBody], on_table: &[bool], cushions: &[Wall]) -> f64 {
    let mut gap = f64::INFINITY;
    for (i, a) in bodies.iter().enumerate().filter(|(i, _)| on_table[*i]) {
        for (j, b) in bodies.iter().enumerate().skip(i + 1) {
            if on_table[j] {
                gap = gap.min((a.position - b.position).length() - a.radius - b.radius);
            }
        }
        for cushion in cushions {
            gap = gap.min(distance_to(a.position, cushion) - a.radius);
        }
    }
    gap
}

/// Breaks the rack with the cue ball at `speed` (m/s, aimed `offset` off the apex) and runs
/// the table for `duration` seconds in steps of `step`, without friction (every impact
/// elastic). A ball whose centre leaves the table through a pocket's mouth is pocketed: it
/// leaves the table and the simulation.
pub fn simulate(
    speed: f64,
    offset: f64,
    duration: f64,
    step: f64,
) -> Result<Break, sweepcast::Error> {
    let cushions = cushions();
    let mut bodies = rack(speed, offset);
    let energy = |bodies: &[EventBody]| bodies.iter().map(EventBody::kinetic_energy).sum::<f64>();
    let energy_before = energy(&bodies);
    let mut paths: Vec<Vec<DVec3>> = bodies.iter().map(|b| vec![b.position]).collect();
    let mut pocketed = vec![None; bodies.len()];
    let mut on_table = vec![true; bodies.len()];
    let mut carried_in = 0.0;
    let mut events = Vec::new();
    let mut smallest = f64::INFINITY;
    let mut event_loop = EventLoop::new();
    let steps = (duration / step).round() as usize;
    for k in 0..steps {
        let start = k as f64 * step;
        event_loop.advance(
            &mut bodies,
            &cushions,
            step,
            &mut Elastic::perfect(),
            |event, now| {
                events.push((start + event.time, *event));
                let body = event.body as usize;
                let involved = event.pair().unwrap_or([body, body]);
                for body in involved {
                    paths[body].push(now.body(body).position);
                }
                let now: Vec<EventBody> = now.bodies().collect();
                smallest = smallest.min(smallest_gap(&now, &on_table, &cushions));
            },
        )?;
        smallest = smallest.min(smallest_gap(&bodies, &on_table, &cushions));
        // Through a mouth and off the table: pocketed, in the nearest pocket.
        for (index, body) in bodies.iter_mut().enumerate() {
            let p = body.position;
            if on_table[index] && (p.x < 0.0 || p.x > LENGTH || p.y < 0.0 || p.y > WIDTH) {
                let pocket = (0..6)
                    .min_by(|&a, &b| {
                        let d = |k: usize| (pockets()[k] - p).length();
                        d(a).total_cmp(&d(b))
                    })
                    .expect("six pockets");
                pocketed[index] = Some((start + step, pocket));
                on_table[index] = false;
                paths[index].push(p);
                carried_in += body.kinetic_energy();
                // Out of everyone's way, at rest.
                body.velocity = DVec3::ZERO;
                body.position = DVec3::new(-10.0 - index as f64, -10.0, 0.0);
            }
        }
    }
    for (index, body) in bodies.iter().enumerate() {
        if on_table[index] {
            paths[index].push(body.position);
        }
    }
    Ok(Break {
        events,
        paths,
        pocketed,
        energy_before,
        energy_after: energy(&bodies) + carried_in,
        smallest_gap: smallest,
    })
}
