//! An event loop within a step, in f64: advance to the earliest impact, resolve it, sweep
//! the bodies it changed again over the rest of the step, and repeat, until the step ends.
//!
//! This is what an event-driven simulation does with the swept test (a pool table, a
//! hard-sphere gas, a projectile against thin targets), written once: the bodies carry a
//! position, a velocity, a radius and a mass; the step's walls are [`Wall`]s; the collision
//! response is the caller's ([`Response`]), and [`Elastic`] offers the impulse of two rigid
//! spheres with a restitution. Every sweep is the f64 oracle's
//! ([`crate::reference::sweep_sphere_sphere`], [`crate::reference::sweep_sphere_wall`]) with
//! the separating option (a pair just resolved, touching and moving apart, is not collided
//! again), so that a simulation conserves energy to f64's rounding.
//!
//! The method is the classic one of event-driven molecular dynamics: a priority queue of
//! predicted events, each stamped with its bodies' collision counts so that an event
//! outdated by an earlier collision of one of its bodies is skipped when it comes up. All
//! bodies are advanced to each event's time (O(N) an event) and a resolved body is swept
//! against every other body and wall (O(N) an event): the loop is meant for the hundreds to
//! few thousands of bodies of a table or a small gas; for larger worlds the candidates would
//! come from the step's broad phase ([`crate::cpu::ContactFinder`]).
//!
//! # Example
//! ```
//! use sweepcast::events::{Elastic, EventBody, EventLoop};
//! use sweepcast::glam::DVec3;
//!
//! // Two equal balls head on: an elastic collision exchanges their velocities.
//! let mut bodies = [
//!     EventBody::new(DVec3::ZERO, DVec3::new(1.0, 0.0, 0.0), 0.5, 1.0),
//!     EventBody::new(DVec3::new(3.0, 0.0, 0.0), DVec3::new(-1.0, 0.0, 0.0), 0.5, 1.0),
//! ];
//! let mut events = EventLoop::new();
//! let mut seen = Vec::new();
//! events.advance(&mut bodies, &[], 2.0, &mut Elastic::perfect(), |event, _| seen.push(*event))?;
//! assert_eq!(seen.len(), 1);
//! assert_eq!(seen[0].time(), 1.0); // the gap of 2 closes at 2 a unit of time
//! assert_eq!(bodies[0].velocity, DVec3::new(-1.0, 0.0, 0.0));
//! assert_eq!(bodies[1].velocity, DVec3::new(1.0, 0.0, 0.0));
//! assert_eq!(bodies[0].position, DVec3::new(0.0, 0.0, 0.0)); // back where it started
//! # Ok::<(), sweepcast::Error>(())
//! ```

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use glam::DVec3;

use crate::error::{BodyField, Error};
use crate::geometry::Wall;
use crate::options::SweepOptions;
use crate::reference::{self, Body};

/// A body of an event loop, in f64.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct EventBody {
    /// The centre now.
    pub position: DVec3,
    /// Distance a unit of time.
    pub velocity: DVec3,
    /// Radius (at least 0).
    pub radius: f64,
    /// Mass (above 0; `f64::INFINITY` for a body that nothing moves).
    pub mass: f64,
}

impl EventBody {
    /// A body at `position` moving at `velocity`.
    #[must_use]
    pub const fn new(position: DVec3, velocity: DVec3, radius: f64, mass: f64) -> Self {
        Self {
            position,
            velocity,
            radius,
            mass,
        }
    }

    /// Its kinetic energy, `m v² / 2` (0 for a body of infinite mass at rest).
    #[must_use]
    pub fn kinetic_energy(&self) -> f64 {
        let speed_squared = self.velocity.length_squared();
        if speed_squared == 0.0 {
            0.0
        } else {
            0.5 * self.mass * speed_squared
        }
    }
}

/// One resolved impact of a step.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Event {
    /// Two bodies met.
    Pair {
        /// When, from the start of the step.
        time: f64,
        /// The two bodies, the lower index first.
        bodies: [usize; 2],
        /// The first body's surface point facing the second.
        point: DVec3,
        /// Unit normal from the first body's centre towards the second's.
        normal: DVec3,
    },
    /// A body met a wall.
    Wall {
        /// When, from the start of the step.
        time: f64,
        /// The body.
        body: usize,
        /// The wall's index.
        wall: usize,
        /// The body's surface point facing the wall.
        point: DVec3,
        /// Unit normal from the body's centre towards the wall.
        normal: DVec3,
    },
}

impl Event {
    /// When it happened, from the start of the step.
    #[must_use]
    pub fn time(&self) -> f64 {
        match *self {
            Self::Pair { time, .. } | Self::Wall { time, .. } => time,
        }
    }
}

/// What happens at an impact: the velocities (or anything else of the bodies) after it. The
/// loop calls it with the bodies touching, at the impact's time.
pub trait Response {
    /// Two bodies touch; `normal` points from `a`'s centre towards `b`'s.
    fn pair(&mut self, a: &mut EventBody, b: &mut EventBody, normal: DVec3);
    /// A body touches a wall; `normal` points from its centre towards the wall.
    fn wall(&mut self, body: &mut EventBody, normal: DVec3);
}

/// The impulse of smooth rigid spheres: along the normal, the approach speed comes back
/// times `restitution` (1: elastic, energy conserved; 0: perfectly inelastic), momentum
/// conserved; walls are of infinite mass. Bodies that are not approaching are left alone.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Elastic {
    /// The coefficient of restitution, from 0 to 1.
    pub restitution: f64,
}

impl Elastic {
    /// Restitution 1: energy is conserved.
    #[must_use]
    pub const fn perfect() -> Self {
        Self { restitution: 1.0 }
    }
}

impl Response for Elastic {
    fn pair(&mut self, a: &mut EventBody, b: &mut EventBody, normal: DVec3) {
        let approach = (a.velocity - b.velocity).dot(normal);
        let inverse_masses = a.mass.recip() + b.mass.recip();
        if approach <= 0.0 || inverse_masses == 0.0 {
            return;
        }
        let impulse = (1.0 + self.restitution) * approach / inverse_masses;
        a.velocity -= normal * (impulse / a.mass);
        b.velocity += normal * (impulse / b.mass);
    }

    fn wall(&mut self, body: &mut EventBody, normal: DVec3) {
        let approach = body.velocity.dot(normal);
        if approach > 0.0 && body.mass.is_finite() {
            body.velocity -= normal * ((1.0 + self.restitution) * approach);
        }
    }
}

/// An event predicted by a sweep: its time, what it involves, and the collision counts of
/// its bodies when it was predicted (it is outdated if either has collided since).
#[derive(Copy, Clone, Debug)]
struct Predicted {
    time: f64,
    /// A pair (`second` a body) or a wall (`second` the wall's index, `is_wall`).
    first: usize,
    second: usize,
    is_wall: bool,
    counts: [u64; 2],
    point: DVec3,
    normal: DVec3,
}

impl PartialEq for Predicted {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Predicted {}

impl PartialOrd for Predicted {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Predicted {
    /// Reversed, so that the heap's top is the earliest; ties by walls after pairs, then by
    /// indices, so that the order of the events does not depend on the heap's.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time
            .total_cmp(&self.time)
            .then_with(|| other.is_wall.cmp(&self.is_wall))
            .then_with(|| other.first.cmp(&self.first))
            .then_with(|| other.second.cmp(&self.second))
    }
}

/// The event loop's memory, kept from step to step: its queue and each body's collision
/// count. See the [module](self).
#[derive(Clone, Debug)]
pub struct EventLoop {
    queue: BinaryHeap<Predicted>,
    counts: Vec<u64>,
    max_events: usize,
}

impl Default for EventLoop {
    fn default() -> Self {
        Self::new()
    }
}

impl EventLoop {
    /// A loop that allows up to 1,000,000 events a step.
    #[must_use]
    pub fn new() -> Self {
        Self {
            queue: BinaryHeap::new(),
            counts: Vec::new(),
            max_events: 1_000_000,
        }
    }

    /// This loop with at most `max_events` events a step.
    #[must_use]
    pub fn with_max_events(mut self, max_events: usize) -> Self {
        self.max_events = max_events;
        self
    }

    /// Advances `bodies` by `step` units of time among `walls`: each impact in time order is
    /// resolved by `response` and then reported to `on_event` with the bodies as they are
    /// right after it (at the event's time); at the end every body has moved to the end of
    /// the step. Returns how many events there were.
    ///
    /// # Errors
    /// [`Error::NonFinite`] or [`Error::NegativeRadius`] for a bad position, velocity or
    /// radius, [`Error::InvalidMass`], [`Error::InvalidStep`], [`Error::InvalidWall`] (the
    /// bodies are unchanged), or [`Error::TooManyEvents`] (the bodies are left at the last
    /// event's time).
    pub fn advance(
        &mut self,
        bodies: &mut [EventBody],
        walls: &[Wall],
        step: f64,
        response: &mut impl Response,
        mut on_event: impl FnMut(&Event, &[EventBody]),
    ) -> Result<usize, Error> {
        validate(bodies, step)?;
        crate::validate_walls(walls)?;
        self.queue.clear();
        self.counts.clear();
        self.counts.resize(bodies.len(), 0);
        let mut now = 0.0;
        for first in 0..bodies.len() {
            self.predict(bodies, walls, first, first + 1, now, step);
        }
        let mut events = 0;
        while let Some(next) = self.queue.pop() {
            if next.time > step {
                break;
            }
            let counts = [
                self.counts[next.first],
                if next.is_wall {
                    0
                } else {
                    self.counts[next.second]
                },
            ];
            if counts != next.counts {
                continue;
            }
            if events == self.max_events {
                return Err(Error::TooManyEvents {
                    limit: self.max_events,
                });
            }
            events += 1;
            move_all(bodies, next.time - now);
            now = next.time;
            let event = if next.is_wall {
                response.wall(&mut bodies[next.first], next.normal);
                Event::Wall {
                    time: now,
                    body: next.first,
                    wall: next.second,
                    point: next.point,
                    normal: next.normal,
                }
            } else {
                let (low, high) = bodies.split_at_mut(next.second);
                response.pair(&mut low[next.first], &mut high[0], next.normal);
                self.counts[next.second] += 1;
                Event::Pair {
                    time: now,
                    bodies: [next.first, next.second],
                    point: next.point,
                    normal: next.normal,
                }
            };
            self.counts[next.first] += 1;
            on_event(&event, bodies);
            self.predict(bodies, walls, next.first, 0, now, step);
            if !next.is_wall {
                self.predict(bodies, walls, next.second, 0, now, step);
            }
        }
        move_all(bodies, step - now);
        Ok(events)
    }

    /// Sweeps body `first` from `now` to the end of the step against the bodies from
    /// `others_from` on (all but itself) and every wall, and queues what it meets.
    fn predict(
        &mut self,
        bodies: &[EventBody],
        walls: &[Wall],
        first: usize,
        others_from: usize,
        now: f64,
        step: f64,
    ) {
        let remaining = step - now;
        let swept = |body: &EventBody| Body {
            center: body.position,
            radius: body.radius,
            displacement: body.velocity * remaining,
        };
        let options = SweepOptions::event_driven();
        let own = swept(&bodies[first]);
        let at = |fraction: f64| now + fraction * remaining;
        for (other, body) in bodies.iter().enumerate().skip(others_from) {
            if other == first {
                continue;
            }
            if let Some(impact) = reference::sweep_sphere_sphere(&own, &swept(body), &options) {
                // Kept as the pair (lower, higher), its normal from the lower's centre.
                let (low, high, normal, point) = if first < other {
                    (first, other, impact.normal, impact.point)
                } else {
                    let centre =
                        body.position + body.velocity * (impact.time_of_impact * remaining);
                    (
                        other,
                        first,
                        -impact.normal,
                        centre - impact.normal * body.radius,
                    )
                };
                self.queue.push(Predicted {
                    time: at(impact.time_of_impact),
                    first: low,
                    second: high,
                    is_wall: false,
                    counts: [self.counts[low], self.counts[high]],
                    point,
                    normal,
                });
            }
        }
        for (index, wall) in walls.iter().enumerate() {
            if let Some(impact) = reference::sweep_sphere_wall(&own, wall, &options) {
                self.queue.push(Predicted {
                    time: at(impact.time_of_impact),
                    first,
                    second: index,
                    is_wall: true,
                    counts: [self.counts[first], 0],
                    point: impact.point,
                    normal: impact.normal,
                });
            }
        }
    }
}

/// Moves every body along its velocity for `duration`.
fn move_all(bodies: &mut [EventBody], duration: f64) {
    if duration > 0.0 {
        for body in bodies {
            body.position += body.velocity * duration;
        }
    }
}

fn validate(bodies: &[EventBody], step: f64) -> Result<(), Error> {
    if !(step.is_finite() && step >= 0.0) {
        return Err(Error::InvalidStep { step });
    }
    for (index, body) in bodies.iter().enumerate() {
        let fields = [
            (BodyField::Center, body.position.is_finite()),
            (BodyField::Displacement, body.velocity.is_finite()),
            (BodyField::Radius, body.radius.is_finite()),
        ];
        for (field, finite) in fields {
            if !finite {
                return Err(Error::NonFinite { body: index, field });
            }
        }
        if body.radius < 0.0 {
            return Err(Error::NegativeRadius {
                body: index,
                radius: body.radius as f32,
            });
        }
        if body.mass.is_nan() || body.mass <= 0.0 {
            return Err(Error::InvalidMass {
                body: index,
                mass: body.mass,
            });
        }
    }
    Ok(())
}
