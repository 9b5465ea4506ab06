//! The event loop's bodies and what it reports: [`EventBody`] and the range it takes
//! (`MAX_MAGNITUDE`, `MIN_LENGTH`), an [`Event`], and a body as the loop keeps it
//! (`Motion`) and hands it to the caller at an event ([`Moment`]).

use glam::DVec3;

use crate::geometry::Partner;
use crate::groups::CollisionGroups;

/// The largest magnitude of a component of an event body's position or velocity, of its
/// radius and of a skin: 2¹²² (about 5.3 × 10³⁶), a power of two below a quarter of
/// [`crate::low_level::MAX_MAGNITUDE`], so that a body grown by twice the skin still fits the f32
/// spheres every broad phase is given. In open space a body's path over the step must stay
/// within it too. Within it the predictions' largest products (the square of a relative
/// speed times the square of a radius sum, about 2⁵⁰⁰ at most) are far from overflowing f64.
pub(crate) const MAX_MAGNITUDE: f64 = f64::from_bits((1023 + 122) << 52);

/// The smallest radius above 0 and the smallest skin: 2⁻¹²⁶ (`f32::MIN_POSITIVE`, the
/// smallest normal f32). A radius sum of at least that has a square of at least 2⁻²⁵², so
/// the predictions' squares do not underflow at any distance where two bodies can touch;
/// what a tinier relative speed loses to underflow moves the bodies less than 2⁻²⁵⁹ of their
/// radii a unit of time.
pub(crate) const MIN_LENGTH: f64 = f64::from_bits((1023 - 126) << 52);

/// A body of an event loop, in f64.
///
/// Used by: the README's quick start (the event loop), `examples/pool_break.rs`, `examples/gas.rs`.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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
    /// Its collision groups: the loop never pairs two bodies whose groups do not interact
    /// (they pass through each other). [`CollisionGroups::ALL`] by default. Walls are not
    /// filtered. A response's change to them is not taken (they change between steps).
    pub groups: CollisionGroups,
}

impl EventBody {
    /// A body at `position` moving at `velocity`, in every collision group
    /// ([`CollisionGroups::ALL`]).
    ///
    /// Used by: the README's quick start (the event loop), `examples/pool_break.rs` (in
    /// `examples/pool/mod.rs`), `examples/gas.rs` (in `examples/hard_spheres/mod.rs`),
    /// `python/src/events.rs`.
    #[must_use]
    pub const fn new(position: DVec3, velocity: DVec3, radius: f64, mass: f64) -> Self {
        Self {
            position,
            velocity,
            radius,
            mass,
            groups: CollisionGroups::ALL,
        }
    }

    /// The body with collision groups `groups`.
    ///
    /// Used by: `python/src/events.rs` (the loop's `groups`).
    #[must_use]
    pub const fn with_groups(mut self, groups: CollisionGroups) -> Self {
        self.groups = groups;
        self
    }

    /// Its kinetic energy, `m v² / 2` (0 for a body of infinite mass at rest).
    ///
    /// Used by: `examples/pool_break.rs` (the energy before and after, in `examples/pool/mod.rs`),
    /// `python/src/events.rs` (`EventLoop.kinetic_energy`).
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

/// One resolved impact of a step: a body met another body or a wall, in the same words as a
/// step's [`Contact`](crate::Contact) (the body and its [`Partner`]), in f64.
///
/// Used by: the README's quick start (the event loop), `examples/pool_break.rs`,
/// `python/src/events.rs`.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Event {
    /// When, from the start of the step.
    pub time: f64,
    /// The body; of a pair, the lower index.
    pub body: u32,
    /// What it met: the other body (the higher index; in a periodic box, the image of it
    /// that `body` met, in periods per axis: its centre taken at `position - image · period`)
    /// or a wall (its index).
    pub partner: Partner,
    /// The body's surface point facing its partner.
    pub point: DVec3,
    /// Unit normal from the body's centre towards its partner.
    pub normal: DVec3,
    /// The impulse `body` received: the change of its momentum, `m (v' - v)`, as the
    /// response left it (for [`Elastic`](super::Elastic), along `-normal`). A partner body
    /// received the opposite. Where `body`'s mass is infinite, the opposite of its partner
    /// body's change; zero where neither mass is finite, and at a wall for a body of
    /// infinite mass. What a pressure sums: the virial `Σ r · impulse` of the pairs, the
    /// impulses on a wall over its area and the time.
    pub impulse: DVec3,
}

impl Event {
    /// The two bodies of an impact between bodies, the lower first (as indices into the
    /// bodies); `None` for a wall.
    ///
    /// Used by: `examples/pool_break.rs` (also in `examples/pool/mod.rs`).
    #[must_use]
    pub fn pair(&self) -> Option<[usize; 2]> {
        match self.partner {
            Partner::Body { index, .. } => Some([self.body as usize, index as usize]),
            Partner::Wall { .. } => None,
        }
    }

    /// The wall's index of an impact with a wall; `None` for a pair.
    ///
    /// Used by: the README's quick start (the event loop), `examples/pool_break.rs`.
    #[must_use]
    pub fn wall(&self) -> Option<usize> {
        match self.partner {
            Partner::Wall { index } => Some(index as usize),
            Partner::Body { .. } => None,
        }
    }
}

/// What a sweep reads of a body, in one cache line: where it is at its own time (from the
/// start of the step), its velocity and its radius.
#[derive(Copy, Clone, Debug, PartialEq)]
#[repr(C, align(64))]
pub(super) struct Motion {
    pub(super) position: DVec3,
    pub(super) time: f64,
    pub(super) velocity: DVec3,
    pub(super) radius: f64,
}

impl Motion {
    /// Where it is at `time` (not wrapped).
    pub(super) fn at(&self, time: f64) -> DVec3 {
        self.position + self.velocity * (time - self.time)
    }
}

/// A body's state at the moment of an event: what the loop hands to the callback of
/// [`EventLoop::advance`](super::EventLoop::advance). The loop moves only the bodies an event
/// involves (each keeps the time it was last moved to); this view gives any body where it is
/// at the event's time ([`Event::time`]).
///
/// Used by: `examples/pool_break.rs` (each ball's path and the smallest gap, in
/// `examples/pool/mod.rs`), `python/src/events.rs`.
#[derive(Copy, Clone, Debug)]
pub struct Moment<'a> {
    pub(super) motions: &'a [Motion],
    pub(super) masses: &'a [f64],
    /// Per body, its groups (empty: all [`CollisionGroups::ALL`]).
    pub(super) groups: &'a [CollisionGroups],
    /// The event's time on the loop's clock.
    pub(super) time: f64,
}

impl Moment<'_> {
    /// Body `index` at the event's time (its position moved along its velocity to it; in a
    /// periodic box not wrapped back into it).
    ///
    /// Used by: `examples/pool_break.rs` (each ball's path, in `examples/pool/mod.rs`).
    ///
    /// # Panics
    /// If `index` is out of range.
    #[must_use]
    pub fn body(&self, index: usize) -> EventBody {
        let motion = &self.motions[index];
        EventBody {
            position: motion.at(self.time),
            velocity: motion.velocity,
            radius: motion.radius,
            mass: self.masses[index],
            groups: groups_of(self.groups, index),
        }
    }

    /// Every body at the event's time.
    ///
    /// Used by: `examples/pool_break.rs` (the smallest gap, in `examples/pool/mod.rs`).
    pub fn bodies(&self) -> impl Iterator<Item = EventBody> + '_ {
        (0..self.motions.len()).map(|index| self.body(index))
    }
}

/// Body `index`'s groups among `groups` (empty: every body's are [`CollisionGroups::ALL`]).
pub(super) fn groups_of(groups: &[CollisionGroups], index: usize) -> CollisionGroups {
    groups.get(index).copied().unwrap_or(CollisionGroups::ALL)
}
