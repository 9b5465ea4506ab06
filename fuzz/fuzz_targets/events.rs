//! Fuzzes the event loop with arbitrary bytes: `cargo +nightly fuzz run events` from the
//! repository root.
//!
//! The bytes are read as a byte of flags (bit 0: a periodic box; bit 1: walls; bit 2: local
//! skins; bit 3: the grid `Cells` as the broad phase, else every pair; bit 4: a skin from the
//! bytes; bit 5: raw f64 bits for every value, hostile ones included; bit 6: a response of
//! the bytes' restitution, else elastic), a byte of restitution (`r / 200`, so above 1 too), a
//! byte of body count (at most 12) and one of wall count (at most 4), the step and the skin,
//! the box's periods, then per body its position, velocity, radius and mass, then per wall
//! its kind and two points. Values are 16-bit integers over 64 (a scene of some tens of
//! units), or with bit 5 raw f64 bits (NaN, infinities, subnormals, 1e300).
//!
//! Each run is bounded (`with_max_work`, `with_max_events`, `with_max_partners`) and must:
//! * return `Ok` or a typed error, never panic or hang (libFuzzer's timeout catches a hang);
//! * leave every body finite whenever the input was (on an error as at the last event);
//! * report no event at which two bodies overlap, or a body overlaps a wall (its centre
//!   wrapped into the box), by more than 10⁻⁹ of the scene's scale, except pairs and walls
//!   already overlapping at the start;
//! * keep the energy to 10⁻⁹ (relative) for restitution 1 where every mass is finite;
//! * report events in order, within the step; hold the end of the step to the same bound;
//! * never return `UnresolvedImpact` or `NoProgress` for finite masses in an ordinary scene
//!   (not raw bits);
//! * give the same events and bodies, to the bit, with the other broad phase (every pair or
//!   the grid) where both run within the limits;
//! * go on into a second step with the same checks.
//!
//! A wall that comes within a radius of a face of a periodic box is held to nothing: it is not
//! repeated beyond the face, so a body's image may enter the box overlapping it (and meets it
//! then, as the docs say). `FUZZ_DEBUG=1` prints each input's scene, to reproduce a finding.

#![no_main]

use libfuzzer_sys::fuzz_target;

use glam::{DVec3, Vec2, Vec3};
use sweepcast::events::{AllPairs, BroadPhase, Cells, Elastic, Event, EventBody, EventLoop};
use sweepcast::{Error, PeriodicBox, Wall};

fuzz_target!(|data: &[u8]| check(data));

/// Reads values off the bytes, zero once they run out.
struct Reader<'a> {
    data: &'a [u8],
    raw: bool,
}

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        let Some((&first, rest)) = self.data.split_first() else {
            return 0;
        };
        self.data = rest;
        first
    }

    /// A value: 16 bits over 64, or raw f64 bits.
    fn value(&mut self) -> f64 {
        if self.raw {
            f64::from_bits(u64::from_le_bytes(std::array::from_fn(|_| self.byte())))
        } else {
            f64::from(i16::from_le_bytes([self.byte(), self.byte()])) / 64.0
        }
    }

    fn vector(&mut self) -> DVec3 {
        DVec3::new(self.value(), self.value(), self.value())
    }

    fn point(&mut self) -> Vec3 {
        self.vector().as_vec3()
    }
}

fn check(data: &[u8]) {
    let mut input = Reader { data, raw: false };
    let flags = input.byte();
    input.raw = flags & 32 != 0;
    let restitution = f64::from(input.byte()) / 200.0;
    let count = usize::from(input.byte() % 13);
    let wall_count = usize::from(input.byte() % 5);
    let step = input.value().abs();
    let skin = input.value().abs();
    let period = input.vector().abs().as_vec3();
    let periodic_box = if flags & 1 != 0 {
        // A period on some axes only: the others (a zero) do not wrap.
        let period = Vec3::select(period.cmpgt(Vec3::ZERO), period, Vec3::INFINITY);
        match PeriodicBox::new(period) {
            Ok(periodic_box) => Some(periodic_box),
            Err(Error::InvalidPeriodicBox { .. }) => return,
            Err(error) => panic!("PeriodicBox::new: {error}"),
        }
    } else {
        None
    };
    let mut bodies: Vec<EventBody> = (0..count)
        .map(|_| {
            let position = input.vector();
            let velocity = input.vector();
            let radius = input.value().abs() / 8.0;
            let mass = match input.byte() {
                0 => f64::INFINITY,
                byte => f64::from(byte) / 16.0,
            };
            EventBody::new(position, velocity, radius, mass)
        })
        .collect();
    let walls: Vec<Wall> = if flags & 2 != 0 {
        (0..wall_count)
            .map(|_| {
                let kind = input.byte();
                let (a, b) = (input.point(), input.point());
                match kind % 3 {
                    0 => Wall::segment(Vec2::new(a.x, a.y), Vec2::new(b.x, b.y)),
                    1 => Wall::segment_3d(a, b),
                    _ => Wall::plane(a, b),
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut events = EventLoop::new()
        .with_max_work(200_000)
        .with_max_events(20_000)
        .with_max_partners(1 << 16);
    if let Some(periodic_box) = periodic_box {
        events = events.with_periodic_box(periodic_box);
    }
    if flags & 4 != 0 {
        events = events.with_local_skins();
    }
    if flags & 16 != 0 {
        events = events.with_skin(skin);
    }
    // A second loop as the first was made, for the other broad phase.
    let mut configured = events.clone();
    // The response's coefficient: `restitution` where the input chose one, else 1.
    let coefficient = if flags & 64 != 0 { restitution } else { 1.0 };
    let mut response = if flags & 64 != 0 {
        match Elastic::new(restitution) {
            Ok(response) => response,
            Err(Error::InvalidRestitution { .. }) => {
                assert!(!(0.0..=1.0).contains(&restitution));
                return;
            }
            Err(error) => panic!("Elastic::new: {error}"),
        }
    } else {
        Elastic::perfect()
    };
    let mut broad_phase: Box<dyn BroadPhase> = if flags & 8 != 0 {
        Box::new(Cells::new())
    } else {
        Box::new(AllPairs)
    };
    let period = periodic_box.map_or(DVec3::INFINITY, |b| b.period().as_dvec3());
    if std::env::var("FUZZ_DEBUG").is_ok() {
        eprintln!(
            "flags {flags:#b} restitution {restitution} step {step} skin {skin} box {periodic_box:?}\nbodies {bodies:?}\nwalls {walls:?}"
        );
    }
    let finite_input = bodies
        .iter()
        .all(|b| b.position.is_finite() && b.velocity.is_finite() && b.radius.is_finite());
    // The scene's scale, for the overlap bound.
    let scale = bodies
        .iter()
        .map(|b| b.position.abs().max_element() + b.radius + b.velocity.length() * step)
        .fold(1e-300, f64::max);
    let largest = bodies.iter().map(|b| b.radius).fold(0.0, f64::max);
    let start_gaps = gaps(&bodies, &walls, period);
    let energy = |bodies: &[EventBody]| bodies.iter().map(EventBody::kinetic_energy).sum::<f64>();
    let start_energy = energy(&bodies);
    // No overlap beyond the bound but those at the start, and walls near the faces of the
    // box (not repeated beyond them: a body's image may enter the box overlapping one, and
    // meets it then, as the docs say).
    let held = |now: &[EventBody], when: &dyn std::fmt::Debug| {
        for ((what, gap), (_, start)) in gaps(now, &walls, period).iter().zip(&start_gaps) {
            let clear = match *what {
                ('w', _, wall) => clear_of_the_faces(&walls[wall], period, largest),
                _ => true,
            };
            assert!(
                *gap >= -1e-9 * scale || *start < 0.0 || !clear,
                "{when:?}: {what:?} overlaps by {gap:e} (scale {scale:e})"
            );
        }
    };
    let original = bodies.clone();
    let mut seen = Vec::new();
    let result = events.advance_with(
        &mut bodies,
        &walls,
        step,
        &mut response,
        &mut broad_phase,
        |event, moment| {
            let now: Vec<EventBody> = moment.bodies().collect();
            held(&now, event);
            if let Some([a, b]) = event.pair() {
                assert!(a < b && b < now.len());
            }
            // In order, within the step.
            let time = event.time;
            assert!((0.0..=step).contains(&time), "{event:?}");
            assert!(seen.last().is_none_or(|last: &Event| last.time <= time));
            seen.push(*event);
        },
    );
    if finite_input {
        for body in &bodies {
            assert!(
                body.position.is_finite() && body.velocity.is_finite(),
                "{result:?}: a body left non-finite: {body:?}"
            );
        }
    }
    // Elastic impacts of finite masses, from an ordinary scene, are always resolved.
    if !input.raw && original.iter().all(|b| b.mass.is_finite()) {
        assert!(
            !matches!(
                result,
                Err(Error::UnresolvedImpact { .. } | Error::NoProgress { .. })
            ),
            "{result:?}"
        );
    }
    let Ok(_) = result else {
        return;
    };
    held(&bodies, &"the end of the step");
    if coefficient == 1.0 && bodies.iter().all(|b| b.mass.is_finite()) && start_energy.is_finite() {
        let drift = (energy(&bodies) - start_energy).abs();
        assert!(
            drift <= 1e-9 * start_energy.max(1e-300),
            "energy drift {drift:e}"
        );
    }
    // The other broad phase gives the same events and bodies, to the bit, where it runs
    // within its limits too.
    let mut other: Box<dyn BroadPhase> = if flags & 8 != 0 {
        Box::new(AllPairs)
    } else {
        Box::new(Cells::new())
    };
    let mut again = original.clone();
    let mut seen_again = Vec::new();
    if configured
        .advance_with(
            &mut again,
            &walls,
            step,
            &mut response,
            &mut other,
            |event, _| {
                seen_again.push(*event);
            },
        )
        .is_ok()
    {
        assert_eq!(seen_again, seen, "the other broad phase's events");
        assert_eq!(again, bodies, "the other broad phase's bodies");
    }
    // The loop goes on into a second step from where it handed the bodies out.
    let before = energy(&bodies);
    if events
        .advance_with(
            &mut bodies,
            &walls,
            step,
            &mut response,
            &mut broad_phase,
            |event, moment| {
                let now: Vec<EventBody> = moment.bodies().collect();
                held(&now, event);
            },
        )
        .is_ok()
    {
        held(&bodies, &"the end of the second step");
        if coefficient == 1.0 && bodies.iter().all(|b| b.mass.is_finite()) {
            let drift = (energy(&bodies) - before).abs();
            assert!(drift <= 1e-9 * before.max(1e-300), "energy drift {drift:e}");
        }
    }
}

/// Whether `wall` keeps more than `reach` from every face of the box along the axes that
/// wrap: a plane parallel to them, or a segment inside the box that far from its faces.
fn clear_of_the_faces(wall: &Wall, period: DVec3, reach: f64) -> bool {
    (0..3)
        .filter(|&axis| period[axis].is_finite())
        .all(|axis| match *wall {
            Wall::Plane { normal, .. } => normal[axis] == 0.0,
            Wall::Segment { start, end } => [start, end].iter().all(|point| {
                let x = f64::from(point[axis]);
                x > reach && x < period[axis] - reach
            }),
        })
}

/// Every pair's gap (`('b', a, b)`: the distance at the nearest image less the radius sum) and every body's gap
/// to every wall (`('w', body, wall)`, its centre wrapped into the box), in a fixed order.
fn gaps(bodies: &[EventBody], walls: &[Wall], period: DVec3) -> Vec<((char, usize, usize), f64)> {
    let wraps = period.is_finite_mask();
    let nearest =
        |offset: DVec3| DVec3::select(wraps, offset - period * (offset / period).round(), offset);
    let wrapped = |p: DVec3| DVec3::select(wraps, p - period * (p / period).floor(), p);
    let mut gaps = Vec::new();
    for a in 0..bodies.len() {
        for b in a + 1..bodies.len() {
            let offset = nearest(bodies[b].position - bodies[a].position);
            let gap = offset.length() - (bodies[a].radius + bodies[b].radius);
            gaps.push((('b', a, b), gap));
        }
        for (w, wall) in walls.iter().enumerate() {
            let centre = wrapped(bodies[a].position);
            let distance = match *wall {
                Wall::Plane { point, normal } => {
                    normal.as_dvec3().normalize().dot(centre - point.as_dvec3())
                }
                Wall::Segment { start, end } => {
                    let (start, end) = (start.as_dvec3(), end.as_dvec3());
                    let along = end - start;
                    let t = if along.length_squared() > 0.0 {
                        ((centre - start).dot(along) / along.length_squared()).clamp(0.0, 1.0)
                    } else {
                        0.0
                    };
                    (centre - (start + along * t)).length()
                }
            };
            gaps.push((('w', a, w), distance - bodies[a].radius));
        }
    }
    gaps
}
