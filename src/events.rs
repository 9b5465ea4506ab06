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
//! outdated by an earlier collision of one of its bodies is skipped when it comes up. Only
//! the bodies an event involves are moved (each keeps its own time), and a resolved body is
//! swept again against its possible partners only: the pairs a [`BroadPhase`] gives at the
//! step's start, those whose spheres, grown by how far any body can travel in the step,
//! touch. [`AllPairs`] (every pair: for a table's few bodies), the CPU step
//! ([`crate::cpu::ContactFinder`]) and the GPU step ([`crate::gpu::ContactPipeline`]) are
//! broad phases; the same pairs give the same events, to the bit. A body that becomes faster
//! than the pairs allow for (twice the fastest speed at the step's start) makes the loop ask
//! for them again. In a periodic box ([`EventLoop::with_periodic_box`]) pairs meet at their
//! nearest image and positions are wrapped back into the box.
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
use crate::geometry::{MovingSphere, Wall};
use crate::options::{PeriodicBox, SweepOptions};
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

/// A body's state at the moment of an event: what the loop hands to the callback of
/// [`EventLoop::advance`]. The loop moves only the bodies an event involves (each keeps the
/// time it was last moved to); this view gives any body where it is at the event's time.
#[derive(Copy, Clone, Debug)]
pub struct Moment<'a> {
    bodies: &'a [EventBody],
    times: &'a [f64],
    time: f64,
}

impl Moment<'_> {
    /// The event's time, from the start of the step.
    #[must_use]
    pub fn time(&self) -> f64 {
        self.time
    }

    /// How many bodies there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.bodies.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bodies.is_empty()
    }

    /// Body `index` at the event's time (its position moved along its velocity to it; in a
    /// periodic box not wrapped back into it).
    ///
    /// # Panics
    /// If `index` is out of range.
    #[must_use]
    pub fn body(&self, index: usize) -> EventBody {
        let body = self.bodies[index];
        EventBody {
            position: body.position + body.velocity * (self.time - self.times[index]),
            ..body
        }
    }

    /// Every body at the event's time.
    pub fn bodies(&self) -> impl Iterator<Item = EventBody> + '_ {
        (0..self.bodies.len()).map(|index| self.body(index))
    }
}

/// Where the event loop gets the pairs of bodies that may meet: every pair that can come
/// within reach during what is left of a step. The loop asks for the pairs of spheres
/// (centred on the bodies, at rest, each grown by how far any body can travel in the rest
/// of the step) that touch or overlap; only those pairs are swept.
pub trait BroadPhase {
    /// Writes into `pairs` every pair of `spheres` that touch or overlap (each once, in any
    /// order), with `options`' periodic box.
    ///
    /// # Errors
    /// The broad phase's own (validation, the device).
    fn touching_pairs(
        &mut self,
        spheres: &[MovingSphere],
        options: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
    ) -> Result<(), Error>;
}

/// Every pair: no broad phase, for a few hundred bodies or fewer.
#[derive(Copy, Clone, Debug, Default)]
pub struct AllPairs;

impl BroadPhase for AllPairs {
    fn touching_pairs(
        &mut self,
        spheres: &[MovingSphere],
        _: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
    ) -> Result<(), Error> {
        pairs.clear();
        let n = spheres.len() as u32;
        pairs.extend((0..n).flat_map(|a| (a + 1..n).map(move |b| [a, b])));
        Ok(())
    }
}

/// The CPU step's broad phase and sweep: the pairs of its contacts.
impl BroadPhase for crate::cpu::ContactFinder {
    fn touching_pairs(
        &mut self,
        spheres: &[MovingSphere],
        options: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
    ) -> Result<(), Error> {
        contact_pairs(self.find(spheres, options)?, pairs);
        Ok(())
    }
}

/// The GPU step: the pairs of its contacts.
impl BroadPhase for &crate::gpu::ContactPipeline {
    fn touching_pairs(
        &mut self,
        spheres: &[MovingSphere],
        options: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
    ) -> Result<(), Error> {
        contact_pairs(&self.find(spheres, options)?, pairs);
        Ok(())
    }
}

/// The pairs of a step's contacts, into `pairs`.
fn contact_pairs(contacts: &crate::cpu::Contacts, pairs: &mut Vec<[u32; 2]>) {
    pairs.clear();
    pairs.extend(contacts.contacts().iter().map(|contact| contact.pair));
}

/// How much faster than the fastest body at its start any body may become within what the
/// broad phase covers: an elastic impact of equal masses leaves each at most √2 times the
/// faster one's speed; a body that exceeds this makes the loop ask for the pairs again.
const SPEED_MARGIN: f64 = 2.0;

/// The event loop's memory, kept from step to step: its queue, each body's collision count
/// and time, and the pairs that may meet. See the [module](self).
#[derive(Clone, Debug)]
pub struct EventLoop {
    queue: BinaryHeap<Predicted>,
    counts: Vec<u64>,
    /// Per body, the time (from the start of the step) its position is at.
    times: Vec<f64>,
    /// Per body, its possible partners: `partners[starts[i]..starts[i + 1]]`.
    starts: Vec<usize>,
    partners: Vec<u32>,
    pairs: Vec<[u32; 2]>,
    spheres: Vec<MovingSphere>,
    /// The speed no body may exceed for the pairs to hold.
    speed_bound: f64,
    periodic_box: Option<PeriodicBox>,
    max_events: usize,
    /// How many times the pairs were asked for in the last step.
    rebuilds: usize,
}

impl Default for EventLoop {
    fn default() -> Self {
        Self::new()
    }
}

impl EventLoop {
    /// A loop that allows up to 1,000,000 events a step, in open space.
    #[must_use]
    pub fn new() -> Self {
        Self {
            queue: BinaryHeap::new(),
            counts: Vec::new(),
            times: Vec::new(),
            starts: Vec::new(),
            partners: Vec::new(),
            pairs: Vec::new(),
            spheres: Vec::new(),
            speed_bound: 0.0,
            periodic_box: None,
            max_events: 1_000_000,
            rebuilds: 0,
        }
    }

    /// This loop with at most `max_events` events a step.
    #[must_use]
    pub fn with_max_events(mut self, max_events: usize) -> Self {
        self.max_events = max_events;
        self
    }

    /// This loop in a periodic box: bodies meet across its faces (each pair at its nearest
    /// image), and positions are wrapped back into it. Each body's radius plus the reach of the
    /// step's pairs (twice the fastest speed at its start, times the step) must stay below a
    /// quarter of the period ([`Error::PeriodicBoxTooSmall`] otherwise, whatever the broad
    /// phase): take shorter steps in a small box. Walls are not repeated.
    #[must_use]
    pub fn with_periodic_box(mut self, periodic_box: PeriodicBox) -> Self {
        self.periodic_box = Some(periodic_box);
        self
    }

    /// How many times the last step asked its broad phase for pairs: once, and once more
    /// each time a body became faster than the pairs allowed for.
    #[must_use]
    pub fn broad_phase_runs(&self) -> usize {
        self.rebuilds
    }

    /// [`advance_with`](Self::advance_with) with every pair swept ([`AllPairs`]): for a few
    /// hundred bodies or fewer.
    ///
    /// # Errors
    /// As [`advance_with`](Self::advance_with).
    pub fn advance(
        &mut self,
        bodies: &mut [EventBody],
        walls: &[Wall],
        step: f64,
        response: &mut impl Response,
        on_event: impl FnMut(&Event, &Moment<'_>),
    ) -> Result<usize, Error> {
        self.advance_with(bodies, walls, step, response, &mut AllPairs, on_event)
    }

    /// Advances `bodies` by `step` units of time among `walls`: each impact in time order is
    /// resolved by `response` and then reported to `on_event` with the bodies as they are
    /// right after it ([`Moment`]); at the end every body has moved to the end of the step
    /// (wrapped into the periodic box, if there is one). Only the pairs that `broad_phase`
    /// gives are swept: those within reach of each other for the rest of the step, asked for
    /// at its start and again whenever a body has become faster than they allow. Returns how
    /// many events there were.
    ///
    /// # Errors
    /// [`Error::NonFinite`] or [`Error::NegativeRadius`] for a bad position, velocity or
    /// radius, [`Error::InvalidMass`], [`Error::InvalidStep`], [`Error::InvalidWall`] (the
    /// bodies are unchanged); the broad phase's errors, and [`Error::TooManyEvents`] (the
    /// bodies are then left where they were at the last event).
    pub fn advance_with(
        &mut self,
        bodies: &mut [EventBody],
        walls: &[Wall],
        step: f64,
        response: &mut impl Response,
        broad_phase: &mut impl BroadPhase,
        mut on_event: impl FnMut(&Event, &Moment<'_>),
    ) -> Result<usize, Error> {
        validate(bodies, step)?;
        crate::validate_walls(walls)?;
        self.counts.clear();
        self.counts.resize(bodies.len(), 0);
        self.times.clear();
        self.times.resize(bodies.len(), 0.0);
        self.rebuilds = 0;
        self.rebuild(bodies, walls, 0.0, step, broad_phase)?;
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
                let last = self.times.iter().copied().fold(0.0, f64::max);
                self.move_all(bodies, last);
                return Err(Error::TooManyEvents {
                    limit: self.max_events,
                });
            }
            events += 1;
            let now = next.time;
            self.move_to(bodies, next.first, now);
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
                self.move_to(bodies, next.second, now);
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
            on_event(
                &event,
                &Moment {
                    bodies,
                    times: &self.times,
                    time: now,
                },
            );
            let involved = [
                next.first,
                if next.is_wall {
                    next.first
                } else {
                    next.second
                },
            ];
            if involved
                .iter()
                .any(|&body| bodies[body].velocity.length() > self.speed_bound)
            {
                // Faster than the pairs allow for: ask for them again from here.
                self.rebuild(bodies, walls, now, step, broad_phase)?;
            } else {
                for body in involved {
                    self.predict(bodies, walls, body, false, now, step);
                }
            }
        }
        self.move_all(bodies, step);
        Ok(events)
    }

    /// Moves every body to `now`, asks `broad_phase` for the pairs that may meet before
    /// `step`, and predicts every event from `now` again.
    fn rebuild(
        &mut self,
        bodies: &mut [EventBody],
        walls: &[Wall],
        now: f64,
        step: f64,
        broad_phase: &mut impl BroadPhase,
    ) -> Result<(), Error> {
        self.rebuilds += 1;
        self.move_all(bodies, now);
        self.queue.clear();
        let fastest = bodies
            .iter()
            .map(|body| body.velocity.length())
            .fold(0.0, f64::max);
        self.speed_bound = SPEED_MARGIN * fastest;
        // Every body grown by how far any may travel in the rest of the step, and a little
        // more for the spheres' rounding to f32 (a relative 2⁻²⁰ of their coordinates).
        let reach = self.speed_bound * (step - now);
        self.spheres.clear();
        self.spheres.extend(bodies.iter().map(|body| {
            let slack = body.position.abs().max_element().max(body.radius + reach) * 1e-6;
            MovingSphere::new(
                body.position.as_vec3(),
                (body.radius + reach + slack) as f32,
                glam::Vec3::ZERO,
            )
        }));
        let options = SweepOptions {
            periodic_box: self.periodic_box,
            ..SweepOptions::DEFAULT
        };
        // Each grown sphere within a quarter period: only the nearest image of a partner is
        // swept, whatever the broad phase (every pair checks nothing itself).
        if let Some(periodic_box) = &self.periodic_box {
            crate::validate_periodic_reach(&self.spheres, periodic_box)?;
        }
        broad_phase.touching_pairs(&self.spheres, options, &mut self.pairs)?;
        // Each body's partners, both ways, in one array.
        self.starts.clear();
        self.starts.resize(bodies.len() + 1, 0);
        for &[a, b] in &self.pairs {
            self.starts[a as usize + 1] += 1;
            self.starts[b as usize + 1] += 1;
        }
        for k in 1..self.starts.len() {
            self.starts[k] += self.starts[k - 1];
        }
        self.partners.clear();
        self.partners.resize(self.starts[bodies.len()], 0);
        let mut next = self.starts.clone();
        for &[a, b] in &self.pairs {
            self.partners[next[a as usize]] = b;
            next[a as usize] += 1;
            self.partners[next[b as usize]] = a;
            next[b as usize] += 1;
        }
        for body in 0..bodies.len() {
            self.predict(bodies, walls, body, true, now, step);
        }
        Ok(())
    }

    /// Sweeps body `first`, from `now` to the end of the step, against its partners (only
    /// those after it in index where `later_only`, so that a full prediction sweeps each
    /// pair once) and every wall, and queues what it meets.
    fn predict(
        &mut self,
        bodies: &[EventBody],
        walls: &[Wall],
        first: usize,
        later_only: bool,
        now: f64,
        step: f64,
    ) {
        let remaining = step - now;
        let options = SweepOptions {
            periodic_box: self.periodic_box,
            ..SweepOptions::event_driven()
        };
        let swept = |index: usize| {
            let body = bodies[index];
            Body {
                center: body.position + body.velocity * (now - self.times[index]),
                radius: body.radius,
                displacement: body.velocity * remaining,
            }
        };
        let own = swept(first);
        let at = |fraction: f64| now + fraction * remaining;
        for &other in &self.partners[self.starts[first]..self.starts[first + 1]] {
            let other = other as usize;
            if later_only && other < first {
                continue;
            }
            let theirs = swept(other);
            if let Some(impact) = reference::sweep_sphere_sphere(&own, &theirs, &options) {
                // Kept as the pair (lower, higher), its normal from the lower's centre.
                let (low, high, normal, point) = if first < other {
                    (first, other, impact.normal, impact.point)
                } else {
                    let centre = theirs.center + theirs.displacement * impact.time_of_impact;
                    (
                        other,
                        first,
                        -impact.normal,
                        centre - impact.normal * theirs.radius,
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

    /// Moves body `index` along its velocity to `time`, wrapped into the periodic box.
    fn move_to(&mut self, bodies: &mut [EventBody], index: usize, time: f64) {
        let body = &mut bodies[index];
        body.position += body.velocity * (time - self.times[index]);
        self.times[index] = time;
        if let Some(periodic_box) = &self.periodic_box {
            let period = periodic_box.period().as_dvec3();
            for axis in 0..3 {
                if periodic_box.wraps(axis) {
                    body.position[axis] = body.position[axis].rem_euclid(period[axis]);
                }
            }
        }
    }

    /// Moves every body to `time`.
    fn move_all(&mut self, bodies: &mut [EventBody], time: f64) {
        for index in 0..bodies.len() {
            self.move_to(bodies, index, time);
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
