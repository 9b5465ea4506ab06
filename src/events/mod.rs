//! An event loop, in f64: advance to the earliest impact, resolve it, predict again what
//! the bodies it changed will meet, and repeat, to the end of the step; and on from there in
//! the next step.
//!
//! This is what an event-driven simulation does with the swept test (a pool table, a
//! hard-sphere gas, a projectile against thin targets), written once: the bodies carry a
//! position, a velocity, a radius and a mass; the walls are [`Wall`]s; the collision
//! response is the caller's ([`Response`]), and [`Elastic`] offers the impulse of two rigid
//! spheres with a restitution. Walls are swept with the f64 oracle
//! ([`crate::reference::sweep_sphere_wall`]); pairs with the same algebra in the form an
//! event loop needs (from velocities, with no horizon: see `events/predict.rs`), both
//! with the separating option (a pair just resolved, touching and moving apart, is not
//! collided again), so that a simulation conserves energy to f64's rounding.
//!
//! # The method
//!
//! That of event-driven molecular dynamics with neighbour lists (Allen and Tildesley,
//! *Computer Simulation of Liquids*, 2nd ed., ch. 3 and §5.3; Smallenburg, *Efficient
//! event-driven simulations of hard spheres*, Eur. Phys. J. E 45, 22 (2022)):
//!
//! * **Skins.** Each body has a skin: a sphere of radius [`EventLoop::with_skin`] around
//!   where it was when its partners were last found. Its partners are the bodies whose
//!   skins' spheres, grown by the radii, touch its own; while two bodies stay in their
//!   skins, only partners can meet. Leaving its skin is an event of the body.
//! * **Partners.** Found by a [`BroadPhase`] over the bodies grown by the skin: [`AllPairs`]
//!   (every pair: for a table's few bodies), [`Cells`] (a grid, for bodies of similar size),
//!   the CPU step ([`crate::cpu::ContactFinder`]) or the GPU step
//!   ([`crate::gpu::ContactPipeline`]). When a body leaves its skin, the broad phase is asked
//!   again for every body; or, with [`EventLoop::with_local_skins`], only that body renews
//!   its skin and finds its new partners in the loop's own grid of skin centres. Two bodies
//!   whose [`CollisionGroups`] do not interact ([`EventBody::groups`]) are never partners,
//!   whatever the broad phase gives: they pass through each other.
//! * **One event a body.** Each body keeps its next event (the earliest of its impacts with
//!   its partners and walls and its leaving its skin) in a queue ordered by time. A pair's
//!   event stays right until either body is struck again: each body's impact count, noted
//!   when the event was predicted, tells an outdated one, and its body is then predicted
//!   again. Only the bodies an event involves are moved.
//! * **One clock.** Every time the loop keeps is counted from where it started afresh, and
//!   what it predicts depends on the two bodies' states alone: so the same bodies give the
//!   same events, to the bit, whatever the broad phase, the skins, or the steps' lengths
//!   (the tests check it). The loop goes on across steps while the caller hands back the
//!   bodies it was given; changed bodies make it start afresh. (The clock's rounding grows
//!   with it: after a time `T`, about `T · 2⁻⁵²` of time, so a loop that runs for very long
//!   may be started afresh from time to time by the caller.)
//!
//! In a periodic box ([`EventLoop::with_periodic_box`]) pairs meet at their nearest image and
//! positions are wrapped back into the box. A pair is predicted at the image nearest when it
//! is predicted, which alone can touch until the two have moved half the smallest period
//! (less their radii) relative to each other; a body whose pairs have found nothing sooner
//! is predicted again then, so that two bodies that pass each other meet at the next image.
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
//! // The impulse body 0 received: the change of its momentum, m (v' - v).
//! assert_eq!(seen[0].impulse, DVec3::new(-2.0, 0.0, 0.0));
//! # Ok::<(), sweepcast::Error>(())
//! ```

// This file is the loop itself (`EventLoop`: each body's next event, its walls and skins,
// the steps). Its parts: the bodies, events and a body at an event in body.rs, responses in
// response.rs, the broad phases in broad_phase.rs and cells.rs, the pair predictions in
// predict.rs, the queue of events in queue.rs, each body's partners in partners.rs, the
// periodic box's images in images.rs, the checks of the bodies in checks.rs.
mod body;
mod broad_phase;
mod cells;
mod checks;
mod images;
mod partners;
mod predict;
mod queue;
mod response;

pub use body::{Event, EventBody, Moment};
use body::{MAX_MAGNITUDE, MIN_LENGTH};
use body::{Motion, groups_of};
pub use broad_phase::{AllPairs, BroadPhase};
use broad_phase::{too_many_pairs, within_work};
pub use cells::Cells;
use cells::SkinGrid;
use checks::{beyond, check_response, validate};
use images::{Images, wrap};
use partners::Partners;
use predict::Prediction;
use queue::EventQueue;
pub use response::{Elastic, Response};

use std::cmp::Ordering;

use glam::DVec3;

use crate::cpu::Simd;
use crate::error::{BodyField, Error};
use crate::geometry::Partner;
use crate::geometry::{MovingSphere, Wall};
use crate::groups::{CollisionGroups, interact};
use crate::options::{PeriodicBox, SweepOptions};
use crate::reference::{self, Body};

/// What a body's next event is: a pair, a wall, leaving its skin (the pairs must then be
/// asked for again), or nothing (it is at rest, no partner coming).
#[derive(Copy, Clone, Debug, PartialEq)]
enum Kind {
    /// With body `other`, predicted when `other` had collided `count` times: outdated if it
    /// has collided since.
    Pair { other: u32, count: u64 },
    /// With wall `wall` (its point and normal are found again when it comes: the body's
    /// motion is the same, so its sweep too).
    Wall { wall: u32 },
    /// The body leaves its skin: every pair is asked for again.
    Skin,
    /// In a periodic box, a partner's nearest image may change from now on: the body is
    /// predicted again (from the image nearest then).
    Recheck,
    /// In a periodic box with walls, the body crosses a face of the box: its image in the
    /// box jumps, and its walls are swept again from there.
    Wrap,
    /// Nothing.
    Nothing,
}

impl Kind {
    /// Ties in time go first to what only looks again (a recheck of an image, a skin, a
    /// wrap: each may find an impact at that very instant), then to pairs, then walls, then
    /// by index, so that the order of the events depends on nothing but the bodies, not on
    /// when the loop learnt of them.
    fn rank(&self) -> (u8, u32) {
        match *self {
            Self::Recheck => (0, 0),
            Self::Skin => (1, 0),
            Self::Wrap => (2, 0),
            Self::Pair { other, .. } => (3, other),
            Self::Wall { wall, .. } => (4, wall),
            Self::Nothing => (5, 0),
        }
    }
}

/// A body's next event: the earliest of its collisions with its partners, its walls and its
/// leaving the skin.
#[derive(Copy, Clone, Debug, PartialEq)]
struct Next {
    time: f64,
    kind: Kind,
}

impl Next {
    const NOTHING: Self = Self {
        time: f64::INFINITY,
        kind: Kind::Nothing,
    };

    fn is_before(&self, other: &Self) -> bool {
        self.time
            .total_cmp(&other.time)
            .then_with(|| self.kind.rank().cmp(&other.kind.rank()))
            == Ordering::Less
    }
}

/// What the loop plans for a body, in one cache line (written together when the body is
/// predicted): its next event; the earliest of its pairs' events, which may come after it
/// (it stands while the partner has not collided, when the skin is renewed); and when its
/// skin was centred.
#[derive(Copy, Clone, Debug, PartialEq)]
#[repr(C, align(64))]
struct Plan {
    next: Next,
    pair: Next,
    skin_time: f64,
}

// Two events (24 bytes each: a time and a kind) and a time fill one line.
const _: () = assert!(std::mem::size_of::<Plan>() == 64);

/// The default work limit of a step ([`EventLoop::with_max_work`]).
const DEFAULT_MAX_WORK: u64 = 1 << 32;

/// The default limit of partner slots ([`EventLoop::with_max_partners`]).
const DEFAULT_MAX_PARTNERS: u64 = 1 << 27;

impl Plan {
    const NONE: Self = Self {
        next: Next::NOTHING,
        pair: Next::NOTHING,
        skin_time: 0.0,
    };
}

/// The event loop's memory, kept from step to step: the bodies as it knows them (each at its
/// own time), each body's next event and the queue of them, the skins and the pairs. See the
/// [module](self).
#[derive(Clone, Debug)]
pub struct EventLoop {
    periodic_box: Option<PeriodicBox>,
    /// Per axis, the period, infinite where the axis does not wrap.
    period: DVec3,
    /// The largest difference between a period and its f32 rounding, which the broad phases
    /// take (0 without a box).
    period_rounding: f64,
    box_: Images,
    /// The instruction set of the pair predictions.
    simd: Simd,
    skin_setting: Option<f64>,
    max_events: usize,
    /// The most work a step may take (see [`EventLoop::with_max_work`]), and what this step
    /// has taken.
    max_work: u64,
    work: u64,
    /// The most partner slots the loop may hold ([`EventLoop::with_max_partners`]).
    max_partners: u64,
    /// The skin of this run of steps.
    skin: f64,
    /// The time of the step's start, counted from where the loop last started afresh: every
    /// time the loop keeps is on this clock, so that what it predicts does not depend on
    /// the step in which it predicted it.
    clock: f64,
    /// The bodies as the loop knows them, each at its own time: moved only at its impacts,
    /// so that what the loop predicts depends on the bodies alone.
    motions: Vec<Motion>,
    masses: Vec<f64>,
    /// Per body, its collision groups; empty where every body's are
    /// [`CollisionGroups::ALL`].
    groups: Vec<CollisionGroups>,
    /// Per body, how many impacts it has had.
    counts: Vec<u64>,
    /// Per body, its next event, the earliest of its pairs' and its skin's time.
    plans: Vec<Plan>,
    queue: EventQueue,
    /// Per body, the centre of its skin: where it was at its plan's `skin_time`, when its
    /// partners were last found.
    centres: Vec<DVec3>,
    /// Per body, its partners: the bodies whose skins touch its own; the last ones, to
    /// tell the new pairs.
    lists: Partners,
    old_lists: Partners,
    /// Per body, a mark of the last pass that saw it, and the pass's own.
    marks: Vec<u32>,
    stamp: u32,
    /// Whether each body renews its skin on its own, in `grid`.
    local: bool,
    grid: SkinGrid,
    near: Vec<u32>,
    pairs: Vec<[u32; 2]>,
    spheres: Vec<MovingSphere>,
    /// The walls of the last step: the state goes on if the next step gets them, and the
    /// bodies as the last step handed them out, unchanged.
    walls: Vec<Wall>,
    live: bool,
    /// How many times the pairs were asked for in the last step.
    rebuilds: usize,
}

impl Default for EventLoop {
    fn default() -> Self {
        Self::new()
    }
}

impl EventLoop {
    /// The largest magnitude of a component of an event body's position or velocity, of its
    /// radius and of a skin: 2¹²² (about 5.3 × 10³⁶), a power of two below a quarter of
    /// [`MAX_MAGNITUDE`](crate::low_level::MAX_MAGNITUDE), so that a body grown by twice the
    /// skin still fits the f32 spheres every broad phase is given. In open space a body's
    /// path over the step must stay within it too.
    pub const MAX_MAGNITUDE: f64 = MAX_MAGNITUDE;

    /// The smallest radius above 0 and the smallest skin: 2⁻¹²⁶ (`f32::MIN_POSITIVE`), so
    /// that the predictions' squares do not underflow at any distance where two bodies can
    /// touch.
    pub const MIN_LENGTH: f64 = MIN_LENGTH;

    /// A loop that allows up to 1,000,000 events a step, in open space, with the default skin.
    #[must_use]
    pub fn new() -> Self {
        Self {
            periodic_box: None,
            period: DVec3::INFINITY,
            period_rounding: 0.0,
            box_: Images::new(DVec3::INFINITY),
            simd: Simd::active(),
            skin_setting: None,
            max_events: 1_000_000,
            max_work: DEFAULT_MAX_WORK,
            work: 0,
            max_partners: DEFAULT_MAX_PARTNERS,
            skin: 0.0,
            clock: 0.0,
            motions: Vec::new(),
            masses: Vec::new(),
            groups: Vec::new(),
            counts: Vec::new(),
            plans: Vec::new(),
            queue: EventQueue::default(),
            centres: Vec::new(),
            lists: Partners::default(),
            old_lists: Partners::default(),
            marks: Vec::new(),
            stamp: 0,
            local: false,
            grid: SkinGrid::default(),
            near: Vec::new(),
            pairs: Vec::new(),
            spheres: Vec::new(),
            walls: Vec::new(),
            live: false,
            rebuilds: 0,
        }
    }

    /// This loop with at most `max_events` events a step.
    #[must_use]
    pub fn with_max_events(mut self, max_events: usize) -> Self {
        self.max_events = max_events;
        self
    }

    /// This loop with at most `max_work` units of work a step ([`Error::WorkLimit`] past
    /// it; 2³² by default, some tens of seconds of one core). A unit is one pair predicted,
    /// one wall swept, one partner found when a skin is renewed, one pair of a broad-phase
    /// run and 32 a body (the grid's cells; 64 more a run), or one turn of the loop. A gas of hard spheres
    /// takes some 30 units an impact.
    #[must_use]
    pub fn with_max_work(mut self, max_work: u64) -> Self {
        self.max_work = max_work;
        self
    }

    /// This loop with at most `max_partners` partner slots ([`Error::TooManyPartners`] past
    /// it; 2²⁷ by default, 512 MiB of them). The loop keeps each body's partners side by side
    /// in one array of the bodies times the most partners any body has (rounded up to a
    /// power of two), each pair twice; a broad phase is asked for at most half that many
    /// pairs. It bounds the loop's memory: at most 16 bytes a slot of the limit (2 GiB by
    /// default) for the partners of this broad-phase run and the last (4 bytes a slot each)
    /// and the broad phase's pairs (8 bytes each, and as much again inside [`Cells`] or the
    /// CPU step while it finds them), besides some 300 bytes a body. One body with many
    /// partners among many bodies (a large body among small ones) takes its partners' count
    /// of slots for every body: keep such scenes to the default skins and a limit that fits.
    #[must_use]
    pub fn with_max_partners(mut self, max_partners: u64) -> Self {
        self.max_partners = max_partners;
        self
    }

    /// This loop in a periodic box: bodies meet across its faces (each pair at its nearest
    /// image), and positions are wrapped back into it. Each body's radius plus twice the
    /// skin must stay below a quarter of the period ([`Error::PeriodicBoxTooSmall`]
    /// otherwise, whatever the broad phase; the default skin shrinks to fit). The walls are
    /// given once, in the box's primary cell (`[0, L)` on each wrapping axis): a body meets a
    /// wall when its image in the box (its centre wrapped into it) touches it, after any
    /// number of wraps; each piece of its path between two crossings of the box's faces is
    /// swept on its own.
    ///
    /// The loop keeps the period in f64: a box made with
    /// [`PeriodicBox::new_f64`](crate::PeriodicBox::new_f64) keeps a side such as
    /// 80.59959770082348 exactly (positions wrap by it, pairs meet at its nearest image). The
    /// broad phases, which take f32 spheres, see the period rounded to f32; the spheres they
    /// are given are grown by that rounding besides their own (a pair that meets across a face
    /// has a body at least a quarter period from the origin, whose 2⁻²⁰ relative slack already
    /// exceeds the period's rounding of at most 2⁻²⁴ of it).
    #[must_use]
    pub fn with_periodic_box(mut self, periodic_box: PeriodicBox) -> Self {
        self.periodic_box = Some(periodic_box);
        self.period = periodic_box.period_f64();
        self.period_rounding = (periodic_box.period().as_dvec3() - self.period)
            .abs()
            .to_array()
            .into_iter()
            .filter(|rounding| rounding.is_finite())
            .fold(0.0, f64::max);
        self.box_ = Images::new(self.period);
        self
    }

    /// This loop with the skin `skin` (a distance above 0; [`Error::InvalidSkin`] otherwise):
    /// the broad phase is asked for the pairs of the bodies grown by it, and again whenever a
    /// body has moved that far from where it was then. A thicker skin asks less often and
    /// sweeps more partners at each impact. The default is half the largest radius (where
    /// every radius is 0, the distance the fastest body covers in the step), shrunk in a
    /// periodic box to fit it.
    #[must_use]
    pub fn with_skin(mut self, skin: f64) -> Self {
        self.skin_setting = Some(skin);
        self
    }

    /// This loop with each body renewing its skin on its own when it leaves it: its new
    /// partners are found in the loop's own grid of skin centres (cells as wide as the
    /// largest radius sum plus twice the skin), and the broad phase is asked for pairs only
    /// where the loop starts afresh. A skin then costs the bodies around it rather than
    /// every body: the choice for many bodies of similar size (a gas), where the fastest of
    /// them would otherwise make the loop ask for every pair again many times a collision
    /// time. Bodies of very different sizes crowd the grid's cells: there, keep the default,
    /// which asks the broad phase for every pair whenever the first body leaves its skin.
    #[must_use]
    pub fn with_local_skins(mut self) -> Self {
        self.local = true;
        self
    }

    /// How many times the last step asked its broad phase for pairs: once where the loop
    /// started afresh, and (without [local skins](Self::with_local_skins)) once each time a
    /// body left its skin.
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
    /// gives are swept: those of the bodies grown by the skin, asked for where the loop
    /// starts and again whenever a body has left its skin, less those whose collision groups
    /// do not interact ([`EventBody::groups`]). Returns how many impacts there were.
    ///
    /// The loop goes on from where the last step left it (its predictions, its pairs) when
    /// it gets back the bodies and walls it handed out, to the bit; bodies changed between
    /// steps (moved, sped up, removed) make it start afresh. The step is then only how often
    /// the caller sees the bodies: a step need not be short.
    ///
    /// # Bounds
    /// Whatever the input, a call returns after at most [`with_max_events`](Self::with_max_events)
    /// impacts, [`with_max_work`](Self::with_max_work) units of work and `16 n + 1024` turns
    /// of the loop at one instant between two impacts, holding at most
    /// [`with_max_partners`](Self::with_max_partners) partner slots.
    ///
    /// # Errors
    /// [`Error::NonFinite`] or [`Error::NegativeRadius`] for a bad position, velocity or
    /// radius, [`Error::OutOfRange`] for one beyond the loop's range ([`EventLoop::MAX_MAGNITUDE`],
    /// [`EventLoop::MIN_LENGTH`]; in open space along the whole step), [`Error::InvalidMass`],
    /// [`Error::InvalidStep`], [`Error::InvalidWall`], [`Error::InvalidSkin`],
    /// [`Error::PeriodicBoxTooSmall`], [`Error::SkinTooThin`] where the fastest body would
    /// renew its skin more times than the work limit (the bodies are unchanged). Then, with
    /// the bodies left as they were at the last completed event (at its time; at the step's
    /// start if there was none), never NaN: the broad phase's errors,
    /// [`Error::TooManyEvents`], [`Error::WorkLimit`], [`Error::TooManyPartners`],
    /// [`Error::NoProgress`], [`Error::SkinTooThin`] (a renewed skin the clock cannot move
    /// past), [`Error::UnresolvedImpact`] and [`Error::InvalidResponse`] where the response
    /// leaves the bodies approaching or invalid.
    pub fn advance_with(
        &mut self,
        bodies: &mut [EventBody],
        walls: &[Wall],
        step: f64,
        response: &mut impl Response,
        broad_phase: &mut impl BroadPhase,
        mut on_event: impl FnMut(&Event, &Moment<'_>),
    ) -> Result<usize, Error> {
        if !(step.is_finite() && step >= 0.0 && (self.clock + step).is_finite()) {
            return Err(Error::InvalidStep { step });
        }
        crate::validate::validate_walls(walls)?;
        if let Some(skin) = self.skin_setting
            && !(MIN_LENGTH..=MAX_MAGNITUDE).contains(&skin)
        {
            return Err(Error::InvalidSkin { skin });
        }
        self.rebuilds = 0;
        self.work = 0;
        // Bodies just as the last step handed them out were valid then: only others are
        // checked (one pass over the bodies a step where the loop goes on); the paths over
        // this step are checked either way.
        let goes_on = self.live
            && self.walls.as_slice() == walls
            && bodies.len() == self.motions.len()
            && bodies
                .iter()
                .enumerate()
                .all(|(index, body)| *body == self.handed_out(index, self.clock));
        if goes_on {
            self.check_paths(step)?;
            self.check_skin(bodies, step)?;
        } else {
            validate(bodies, step, self.period)?;
            self.live = false;
            self.check_skin(bodies, step)?;
            self.start(bodies, walls, step, broad_phase)?;
        }
        // Until the step ends well: an error leaves the loop to start afresh.
        self.live = false;
        let mut events = 0;
        // The time of the last completed event (the step's start before any): where an
        // error leaves the bodies.
        let mut settled = self.clock;
        // The turns of the loop at one instant since its last impact, to tell a loop that
        // does not move on.
        let (mut instant, mut rounds) = (f64::NAN, 0);
        let most_rounds = 16 * self.motions.len() + 1024;
        // Each pass predicts the body's next event again, which moves it in the queue.
        while let Some((body, now)) = self.queue.first() {
            if now > self.clock + step {
                break;
            }
            if now == instant {
                rounds += 1;
                if rounds > most_rounds {
                    self.hand_out(bodies, settled);
                    return Err(Error::NoProgress {
                        time: now - self.clock,
                        rounds,
                    });
                }
            } else {
                (instant, rounds) = (now, 0);
            }
            self.work += 1;
            if self.work > self.max_work {
                self.hand_out(bodies, settled);
                return Err(Error::WorkLimit {
                    limit: self.max_work,
                });
            }
            self.prefetch(body);
            let kind = self.plans[body].next.kind;
            if matches!(kind, Kind::Pair { other, count } if self.counts[other as usize] == count)
                || matches!(kind, Kind::Wall { .. })
            {
                // An impact: bounded by the events' limit, it starts the count again (a
                // burst at one instant, a Newton's cradle or a pile, may make many).
                rounds = 0;
            }
            let outcome = match kind {
                Kind::Nothing => Ok(()),
                Kind::Recheck => {
                    self.predict(walls, body, now);
                    Ok(())
                }
                Kind::Wrap => {
                    self.replan(walls, body, now);
                    Ok(())
                }
                Kind::Skin if self.local => self
                    .renew(walls, body, now)
                    .and_then(|()| self.check_renewed(body, now)),
                Kind::Skin => self
                    .rebuild(walls, now, false, broad_phase)
                    .and_then(|()| self.check_renewed(body, now)),
                Kind::Pair { other, count } if self.counts[other as usize] != count => {
                    // Its partner has collided since: predict it again.
                    self.predict(walls, body, now);
                    Ok(())
                }
                kind => {
                    if events == self.max_events {
                        self.hand_out(bodies, settled);
                        return Err(Error::TooManyEvents {
                            limit: self.max_events,
                        });
                    }
                    self.impact(walls, body, kind, now, response, broad_phase, &mut on_event)
                        .map(|resolved| {
                            if resolved {
                                events += 1;
                                settled = now;
                            }
                        })
                }
            };
            if let Err(error) = outcome {
                self.hand_out(bodies, settled);
                return Err(error);
            }
        }
        if let Some((index, value)) = self.beyond_range(self.clock + step) {
            self.hand_out(bodies, settled);
            return Err(Error::OutOfRange {
                body: index,
                field: BodyField::Center,
                value,
            });
        }
        self.hand_out(bodies, self.clock + step);
        self.finish(walls, step);
        Ok(events)
    }

    /// The skin for `bodies` (the one set, or the default), checked against the step: the
    /// fastest body, unhindered, would renew its skin `speed × step / skin` times, each
    /// renewal a unit of work at least; more than the work limit is [`Error::SkinTooThin`]
    /// at once.
    fn check_skin(&self, bodies: &[EventBody], step: f64) -> Result<(), Error> {
        let skin = match (self.live, self.skin_setting) {
            (true, _) => self.skin,
            (false, Some(skin)) => skin,
            (false, None) => default_skin(bodies, step, self.period),
        };
        let Some((body, speed)) = bodies
            .iter()
            .map(|body| body.velocity.length())
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))
        else {
            return Ok(());
        };
        let renewals = speed * step / skin;
        if renewals > self.max_work as f64 {
            return Err(Error::SkinTooThin {
                body,
                skin,
                speed,
                renewals,
            });
        }
        Ok(())
    }

    /// Body `index`, its skin just renewed at `now`, must leave it later than `now`: else the
    /// clock cannot move on at its speed ([`Error::SkinTooThin`]).
    fn check_renewed(&self, index: usize, now: f64) -> Result<(), Error> {
        let next = self.plans[index].next;
        if next.kind == Kind::Skin && next.time <= now {
            return Err(Error::SkinTooThin {
                body: index,
                skin: self.skin,
                speed: self.motions[index].velocity.length(),
                renewals: f64::INFINITY,
            });
        }
        Ok(())
    }

    /// The bodies where the loop goes on: each path over the step within the range.
    fn check_paths(&self, step: f64) -> Result<(), Error> {
        match self.beyond_range(self.clock + step) {
            Some((body, value)) => Err(Error::OutOfRange {
                body,
                field: BodyField::Center,
                value,
            }),
            None => Ok(()),
        }
    }

    /// The first body (and its coordinate) that is beyond [`MAX_MAGNITUDE`] at `time` along
    /// an axis that does not wrap.
    fn beyond_range(&self, time: f64) -> Option<(usize, f64)> {
        let open = !self.period.is_finite_mask();
        if !open.any() {
            return None;
        }
        self.motions.iter().enumerate().find_map(|(index, motion)| {
            beyond(motion.at(time), self.period).map(|value| (index, value))
        })
    }

    /// Resolves `body`'s impact `kind` at `now` and predicts what it changed: the response,
    /// its check, the callback, then the bodies' next events (every pair asked for again if
    /// the response moved a body). `false` where a wall's impact is not found again (the body
    /// is then predicted again).
    #[allow(clippy::too_many_arguments)]
    fn impact(
        &mut self,
        walls: &[Wall],
        body: usize,
        kind: Kind,
        now: f64,
        response: &mut impl Response,
        broad_phase: &mut impl BroadPhase,
        on_event: &mut impl FnMut(&Event, &Moment<'_>),
    ) -> Result<bool, Error> {
        let Some((event, involved, moved)) = self.resolve(walls, body, kind, now, response)? else {
            self.predict(walls, body, now);
            return Ok(false);
        };
        on_event(
            &event,
            &Moment {
                motions: &self.motions,
                masses: &self.masses,
                groups: &self.groups,
                time: now,
                start: self.clock,
            },
        );
        if moved {
            // The response moved a body or changed a radius: the pairs are asked for again,
            // and every event predicted again.
            self.rebuild(walls, now, true, broad_phase)?;
        } else {
            self.predict(walls, involved[0], now);
            if involved[1] != involved[0] {
                self.predict(walls, involved[1], now);
            }
        }
        Ok(true)
    }

    /// Body `index`'s next event again from `now`: its earliest pair kept if its partner has
    /// not collided since (its motion has not changed), against its walls and skin found
    /// again; else every partner predicted again.
    fn replan(&mut self, walls: &[Wall], index: usize, now: f64) {
        let pair = self.plans[index].pair;
        if self.is_current(&pair) {
            let own = self.own_events(walls, index, now);
            self.set_next(index, if pair.is_before(&own) { pair } else { own });
        } else {
            self.predict(walls, index, now);
        }
    }

    /// Starts afresh from `bodies`, at the start of the step.
    fn start(
        &mut self,
        bodies: &[EventBody],
        walls: &[Wall],
        step: f64,
        broad_phase: &mut impl BroadPhase,
    ) -> Result<(), Error> {
        let n = bodies.len();
        self.skin = self
            .skin_setting
            .unwrap_or_else(|| default_skin(bodies, step, self.period));
        self.motions.clear();
        self.motions.extend(bodies.iter().map(|body| Motion {
            position: wrap(body.position, self.period),
            time: 0.0,
            velocity: body.velocity,
            radius: body.radius,
        }));
        self.masses.clear();
        self.masses.extend(bodies.iter().map(|body| body.mass));
        self.groups.clear();
        if bodies
            .iter()
            .any(|body| body.groups != CollisionGroups::ALL)
        {
            self.groups.extend(bodies.iter().map(|body| body.groups));
        }
        self.counts.clear();
        self.counts.resize(n, 0);
        self.plans.clear();
        self.plans.resize(n, Plan::NONE);
        self.centres.clear();
        self.centres.resize(n, DVec3::ZERO);
        self.queue.clear(n);
        self.clock = 0.0;
        self.rebuild(walls, 0.0, true, broad_phase)
    }

    /// Centres every body's skin where it is at `now`, asks `broad_phase` for the pairs of
    /// the bodies grown by the skin, and predicts again what may have changed: the next
    /// event of each body that was to leave its skin, the skins' new times, and the pairs
    /// that are new (`afresh`: every event of every body).
    fn rebuild(
        &mut self,
        walls: &[Wall],
        now: f64,
        afresh: bool,
        broad_phase: &mut impl BroadPhase,
    ) -> Result<(), Error> {
        self.rebuilds += 1;
        let n = self.motions.len();
        let skin = self.skin;
        self.spheres.clear();
        for plan in &mut self.plans {
            plan.skin_time = now;
        }
        for index in 0..n {
            let motion = &self.motions[index];
            let position = wrap(motion.at(now), self.period);
            self.centres[index] = position;
            // Grown by the skin, and a little more for the spheres' rounding to f32 (a
            // relative 2⁻²⁰ of their coordinates) and for the period's (the broad phases
            // take the nearest image with the f32 period, at most one period away: each
            // sphere grown by the largest rounding of a period grows a pair's radius sum by
            // twice it, beyond the √3 times it that the offset can move). The displacement
            // of twice the skin is only for the check below.
            let slack = position.abs().max_element().max(motion.radius + skin) * 1e-6
                + self.period_rounding;
            self.spheres.push(MovingSphere::new(
                position.as_vec3(),
                (motion.radius + skin + slack) as f32,
                glam::Vec3::splat(skin as f32),
            ));
        }
        // Each body's radius plus twice the skin within a quarter period: while every body
        // stays in its skin, a pair that can touch is nearest at the image that touches,
        // whatever the broad phase (every pair checks nothing itself).
        if let Some(periodic_box) = &self.periodic_box {
            crate::validate::validate_periodic_reach(&self.spheres, periodic_box)?;
        }
        for sphere in &mut self.spheres {
            sphere.displacement = glam::Vec3::ZERO;
        }
        let options = SweepOptions {
            periodic_box: self.periodic_box,
            ..SweepOptions::DEFAULT
        };
        // Each pair takes two slots of the partners.
        let max_pairs = usize::try_from(self.max_partners / 2).unwrap_or(usize::MAX);
        let remaining = self.max_work.saturating_sub(self.work + 64);
        let work = broad_phase
            .touching_pairs_within(
                &self.spheres,
                &self.groups,
                options,
                &mut self.pairs,
                max_pairs,
                remaining,
            )
            .map_err(|error| match error {
                Error::WorkLimit { .. } => Error::WorkLimit {
                    limit: self.max_work,
                },
                error => error,
            })?;
        self.work += 64 + work;
        // A pair the groups keep apart is never a partner, whatever the broad phase gave.
        if !self.groups.is_empty() {
            let groups = &self.groups;
            self.pairs
                .retain(|&[a, b]| interact(groups, a as usize, b as usize));
        }
        std::mem::swap(&mut self.lists, &mut self.old_lists);
        if afresh {
            self.old_lists.clear(n, 0, self.max_partners)?;
            self.queue.clear(n);
            for plan in &mut self.plans {
                plan.pair = Next::NOTHING;
            }
            if self.local {
                let largest = self.motions.iter().map(|m| m.radius).fold(0.0, f64::max);
                let width = (2.0 * (largest + skin)) * (1.0 + 1e-9);
                let radii: Vec<f64> = self.motions.iter().map(|m| m.radius).collect();
                self.grid
                    .build(&self.centres, &radii, &self.groups, width, self.period);
            }
        }
        self.partner_lists(n)?;
        // The skins. A body that was to leave its skin takes the earliest of its pairs
        // (still right if its partner has not collided since; else it is predicted again),
        // its walls and its new skin; any other may now leave its new skin first.
        for index in 0..n {
            if afresh || self.plans[index].next.kind == Kind::Skin {
                self.replan(walls, index, now);
            } else {
                let exit = Next {
                    time: self.skin_exit(index).max(now),
                    kind: Kind::Skin,
                };
                self.offer(index, exit);
            }
        }
        // The new pairs (every pair, afresh): each is offered to both bodies.
        for first in 0..n {
            let stamp = self.next_stamp();
            for &other in self.old_lists.of(first) {
                self.marks[other as usize] = stamp;
            }
            for slot in 0..self.lists.of(first).len() {
                let other = self.lists.of(first)[slot] as usize;
                if other > first && self.marks[other] != stamp {
                    let prediction = self.pair_time(first, other, now);
                    self.offer_pair(first, other, prediction, now);
                    self.offer_pair(other, first, prediction, now);
                }
            }
        }
        Ok(())
    }

    /// Each body's partners, both ways, from the broad phase's pairs.
    fn partner_lists(&mut self, n: usize) -> Result<(), Error> {
        // The most partners a body has, so that the lists are laid out (and checked against
        // the limit) once.
        let degrees = &mut self.marks;
        degrees.clear();
        degrees.resize(n, 0);
        for &[a, b] in &self.pairs {
            degrees[a as usize] += 1;
            degrees[b as usize] += 1;
        }
        let most = degrees.iter().copied().max().unwrap_or(0) as usize;
        self.stamp = u32::MAX;
        self.lists.clear(n, most, self.max_partners)?;
        for &[a, b] in &self.pairs {
            self.lists.push(a as usize, b)?;
            self.lists.push(b as usize, a)?;
        }
        Ok(())
    }

    /// A mark no body has yet.
    fn next_stamp(&mut self) -> u32 {
        let n = self.motions.len();
        if self.marks.len() != n || self.stamp == u32::MAX {
            self.marks.clear();
            self.marks.resize(n, 0);
            self.stamp = 0;
        }
        self.stamp += 1;
        self.stamp
    }

    /// Body `index` has left its skin (local skins): its skin is centred where it is at
    /// `now`, its partners found again in the grid (those whose skins touch its new one),
    /// each new one offered their pair's impact, and its own next event predicted.
    fn renew(&mut self, walls: &[Wall], index: usize, now: f64) -> Result<(), Error> {
        let centre = wrap(self.motions[index].at(now), self.period);
        self.centres[index] = centre;
        self.plans[index].skin_time = now;
        self.grid.relocate(index, centre);
        let mut near = std::mem::take(&mut self.near);
        near.clear();
        let reach = self.motions[index].radius + 2.0 * self.skin;
        self.work += self.grid.near(
            index,
            centre,
            reach,
            groups_of(&self.groups, index),
            self.period,
            &mut near,
        );
        // Its earliest pair stands (its motion has not changed) if its partner has not
        // collided since; the new partners may come first.
        let kept = self.plans[index].pair;
        let mut pair = if self.is_current(&kept) {
            kept
        } else {
            Next::NOTHING
        };
        let old = self.next_stamp();
        for &other in self.lists.of(index) {
            self.marks[other as usize] = old;
        }
        let new = self.next_stamp();
        for &other in &near {
            let other = other as usize;
            if self.marks[other] != old {
                self.lists.push(other, index as u32)?;
                let prediction = self.pair_time(index, other, now);
                self.offer_pair(other, index, prediction, now);
                if let Some(candidate) = self.pair_next(other, prediction, now)
                    && candidate.is_before(&pair)
                {
                    pair = candidate;
                }
            }
            self.marks[other] = new;
        }
        for slot in 0..self.lists.of(index).len() {
            let other = self.lists.of(index)[slot] as usize;
            if self.marks[other] != new {
                self.lists.remove(other, index as u32);
            }
        }
        self.lists.replace(index, &near)?;
        self.near = near;
        if self.is_current(&kept) {
            self.plans[index].pair = pair;
        }
        self.replan(walls, index, now);
        Ok(())
    }

    /// Asks the CPU to bring into its cache what the next events will read (the gas's
    /// bodies fill more than a core's cache), in two stages a pass apart, so that each
    /// stage reads only lines the last one asked for: for the queue's second body (most
    /// often the next one), its own lines; for `first`, the body whose event comes now, its
    /// partners' motions, and its partner's own lines.
    fn prefetch(&self, first: usize) {
        if let Some(second) = self.queue.second() {
            self.prefetch_own(second);
        }
        for &other in self.lists.of(first) {
            prefetch(&raw const self.motions[other as usize]);
        }
        if let Kind::Pair { other, .. } = self.plans[first].next.kind {
            self.prefetch_own(other as usize);
        }
    }

    /// Asks for body `index`'s own lines: its motion, plan, partners and skin.
    fn prefetch_own(&self, index: usize) {
        prefetch(&raw const self.motions[index]);
        prefetch(&raw const self.plans[index]);
        prefetch(self.lists.of(index).as_ptr());
        prefetch(&raw const self.centres[index]);
    }

    /// The body `index` as the response sees it.
    fn body(&self, index: usize) -> EventBody {
        let motion = &self.motions[index];
        EventBody {
            position: motion.position,
            velocity: motion.velocity,
            radius: motion.radius,
            mass: self.masses[index],
            groups: groups_of(&self.groups, index),
        }
    }

    /// Takes back what the response made of body `index`: whether it moved the body or
    /// changed its radius (what the pairs depend on).
    fn take_back(&mut self, index: usize, body: &EventBody) -> bool {
        let motion = &mut self.motions[index];
        let moved = motion.position != body.position || motion.radius != body.radius;
        motion.position = body.position;
        motion.velocity = body.velocity;
        motion.radius = body.radius;
        self.masses[index] = body.mass;
        moved
    }

    /// Resolves `body`'s event `kind` at `now` with `response`: the event, the bodies it
    /// involved, and whether the response moved one of them or changed its radius; `None`
    /// where a wall's impact is not found again. The response is checked: the bodies it leaves
    /// must be valid and no longer approaching, else they are put back as they were just
    /// before it and the error returned.
    fn resolve(
        &mut self,
        walls: &[Wall],
        body: usize,
        kind: Kind,
        now: f64,
        response: &mut impl Response,
    ) -> Result<Option<(Event, [usize; 2], bool)>, Error> {
        match kind {
            Kind::Wall { wall } => {
                let Some((_, point, normal)) = self.wall_impact(&walls[wall as usize], body, now)
                else {
                    return Ok(None);
                };
                self.move_to(body, now);
                let mut own = self.body(body);
                let velocity = own.velocity;
                let before = velocity.length();
                response.wall(&mut own, normal);
                let event = Event {
                    time: now - self.clock,
                    body: body as u32,
                    partner: Partner::Wall { index: wall },
                    point,
                    normal,
                    impulse: momentum_change(&own, velocity).unwrap_or(DVec3::ZERO),
                };
                check_response(&event, body, &own)?;
                let speeds = before + own.velocity.length();
                if still_approaching(own.velocity.dot(normal), speeds) {
                    return Err(Error::UnresolvedImpact { event });
                }
                self.counts[body] += 1;
                Ok(Some((event, [body, body], self.take_back(body, &own))))
            }
            Kind::Pair { other, .. } => {
                let other = other as usize;
                let (low, high) = (body.min(other), body.max(other));
                self.move_to(low, now);
                self.move_to(high, now);
                let (mut a, mut b) = (self.body(low), self.body(high));
                let offset = b.position - a.position;
                let shift = self.box_.shift(offset);
                let normal = (offset - shift)
                    .try_normalize()
                    .or_else(|| (a.velocity - b.velocity).try_normalize())
                    .unwrap_or(DVec3::X);
                let point = a.position + normal * a.radius;
                let (velocity_a, velocity_b) = (a.velocity, b.velocity);
                let before = velocity_a.length() + velocity_b.length();
                response.pair(&mut a, &mut b, normal);
                let impulse = momentum_change(&a, velocity_a)
                    .or_else(|| momentum_change(&b, velocity_b).map(|change| -change))
                    .unwrap_or(DVec3::ZERO);
                let event = Event {
                    time: now - self.clock,
                    body: low as u32,
                    partner: Partner::Body {
                        index: high as u32,
                        image: self.box_.periods(shift),
                    },
                    point,
                    normal,
                    impulse,
                };
                check_response(&event, low, &a)?;
                check_response(&event, high, &b)?;
                let speeds = before + a.velocity.length() + b.velocity.length();
                if still_approaching((a.velocity - b.velocity).dot(normal), speeds) {
                    return Err(Error::UnresolvedImpact { event });
                }
                self.counts[low] += 1;
                self.counts[high] += 1;
                let moved = self.take_back(low, &a) | self.take_back(high, &b);
                Ok(Some((event, [low, high], moved)))
            }
            Kind::Skin | Kind::Recheck | Kind::Wrap | Kind::Nothing => {
                unreachable!("not an impact")
            }
        }
    }

    /// Whether `next`, a pair's event or nothing, is still right: its partner has not
    /// collided since it was predicted.
    fn is_current(&self, next: &Next) -> bool {
        match next.kind {
            Kind::Pair { other, count } => self.counts[other as usize] == count,
            Kind::Recheck | Kind::Nothing => true,
            Kind::Wall { .. } | Kind::Skin | Kind::Wrap => false,
        }
    }

    /// Predicts body `index`'s next event from `now`: its partners, its walls, its skin.
    fn predict(&mut self, walls: &[Wall], index: usize, now: f64) {
        // The earliest impact: by time, then by partner (the order of the partners does not
        // matter); and the earliest recheck of an image.
        let predict::Earliest {
            time,
            partner,
            recheck,
        } = {
            self.work += self.lists.of(index).len() as u64;
            predict::earliest(
                self.simd,
                &self.motions,
                &self.box_,
                index,
                self.lists.of(index),
                now,
            )
        };
        let recheck = now + recheck.sqrt();
        let mut pair = if partner == u32::MAX {
            Next::NOTHING
        } else {
            Next {
                time,
                kind: Kind::Pair {
                    other: partner,
                    count: self.counts[partner as usize],
                },
            }
        };
        let again = Next {
            time: recheck,
            kind: Kind::Recheck,
        };
        if recheck.is_finite() && again.is_before(&pair) {
            pair = again;
        }
        self.plans[index].pair = pair;
        let own = self.own_events(walls, index, now);
        self.set_next(index, if pair.is_before(&own) { pair } else { own });
    }

    /// The earliest of body `index`'s leaving its skin, meeting a wall and (in a periodic
    /// box with walls) crossing a face of the box.
    fn own_events(&mut self, walls: &[Wall], index: usize, now: f64) -> Next {
        let exit = self.skin_exit(index);
        if !exit.is_finite() {
            return Next::NOTHING;
        }
        let mut best = Next {
            time: exit.max(now),
            kind: Kind::Skin,
        };
        if walls.is_empty() {
            return best;
        }
        self.work += walls.len() as u64;
        // Each wall swept from the start of the body's piece of path in the box (its own
        // time, or where it last crossed a face) over a horizon of its own motion, not to the
        // skin's exit (which depends on where the skin was centred), with the f64 oracle and
        // the separating option: so the time does not depend on when it was predicted.
        let piece = self.piece(index, now);
        if piece.end.is_finite() {
            let wrap = Next {
                time: piece.end,
                kind: Kind::Wrap,
            };
            if wrap.is_before(&best) {
                best = wrap;
            }
        }
        for (wall_index, wall) in walls.iter().enumerate() {
            if let Some((time, ..)) = wall_impact(wall, &piece.motion)
                && time < piece.end
            {
                let candidate = Next {
                    time: time.max(now),
                    kind: Kind::Wall {
                        wall: wall_index as u32,
                    },
                };
                if candidate.is_before(&best) {
                    best = candidate;
                }
            }
        }
        best
    }

    /// Body `index`'s first impact with `wall` in its piece of path at `now` (as
    /// [`EventLoop::own_events`] predicted it).
    fn wall_impact(&self, wall: &Wall, index: usize, now: f64) -> Option<(f64, DVec3, DVec3)> {
        let piece = self.piece(index, now);
        wall_impact(wall, &piece.motion).filter(|&(time, ..)| time < piece.end)
    }

    /// The piece of body `index`'s path that holds `now`, in the box: in open space (or
    /// where the body does not move along an axis that wraps) its whole motion; in a periodic
    /// box, from the later of its own time and its last crossing of a face before `now` to
    /// its next one after `now` (each crossing's time from the body's motion alone, so the
    /// pieces do not depend on `now`), its centre there shifted back into the box by the
    /// periods crossed.
    fn piece(&self, index: usize, now: f64) -> Piece {
        let motion = self.motions[index];
        let mut piece = Piece {
            motion,
            end: f64::INFINITY,
        };
        if !self.box_.wraps {
            return piece;
        }
        let mut start = motion.time;
        let mut shift = DVec3::ZERO;
        for axis in 0..3 {
            let (period, speed) = (self.period[axis], motion.velocity[axis]);
            if !period.is_finite() || speed == 0.0 {
                continue;
            }
            let from = motion.position[axis];
            // The time at which the path reaches the face `cell × period`.
            let reaches = |cell: f64| motion.time + (cell * period - from) / speed;
            let ahead = if speed > 0.0 { 1.0 } else { 0.0 };
            let mut cell = ((from + speed * (now - motion.time)) / period).floor();
            // The cell whose crossings hold `now`: entered at or before it, left after it.
            for _ in 0..2 {
                if reaches(cell + ahead) <= now {
                    cell += speed.signum();
                } else if reaches(cell + 1.0 - ahead) > now {
                    cell -= speed.signum();
                }
            }
            start = start.max(reaches(cell + 1.0 - ahead));
            piece.end = piece.end.min(reaches(cell + ahead));
            shift[axis] = cell * period;
        }
        piece.motion.position = motion.at(start) - shift;
        piece.motion.time = start;
        piece
    }

    /// The prediction for bodies `a` and `b` from `now` (see [`predict`]).
    fn pair_time(&self, a: usize, b: usize, now: f64) -> Prediction {
        predict::pair_time(&self.motions, &self.box_, a, b, now)
    }

    /// When body `index` leaves its skin (its centre `skin` from the skin's centre), from its
    /// motion: `|d + v t| = skin` for the offset `d` from the centre (at the later of the
    /// skin's time and the body's), the positive root taken without cancellation; infinite
    /// for a body at rest.
    fn skin_exit(&self, index: usize) -> f64 {
        let motion = &self.motions[index];
        let speed_squared = motion.velocity.length_squared();
        if speed_squared == 0.0 {
            return f64::INFINITY;
        }
        let from = motion.time.max(self.plans[index].skin_time);
        let offset = self.box_.nearest(motion.at(from) - self.centres[index]);
        let room = self.skin * self.skin - offset.length_squared();
        if room <= 0.0 {
            return from;
        }
        let outward = offset.dot(motion.velocity);
        let root = (outward * outward + speed_squared * room).sqrt();
        let duration = if outward >= 0.0 {
            room / (outward + root)
        } else {
            (root - outward) / speed_squared
        };
        from + duration
    }

    /// Makes `next` body `index`'s next event, and queues it.
    fn set_next(&mut self, index: usize, next: Next) {
        self.plans[index].next = next;
        self.queue.set(index, next.time);
    }

    /// Makes `candidate` body `index`'s next event if it comes first.
    fn offer(&mut self, index: usize, candidate: Next) {
        if candidate.is_before(&self.plans[index].next) {
            self.set_next(index, candidate);
        }
    }

    /// Body `index`'s event of `prediction` for its pair with `other`, if any.
    fn pair_next(&self, other: usize, prediction: Prediction, now: f64) -> Option<Next> {
        match prediction {
            Prediction::Impact(time) => Some(Next {
                time: time.max(now),
                kind: Kind::Pair {
                    other: other as u32,
                    count: self.counts[other],
                },
            }),
            Prediction::Recheck(lasts) => Some(Next {
                time: now + lasts.sqrt(),
                kind: Kind::Recheck,
            }),
            Prediction::Never => None,
        }
    }

    /// Offers body `index` the event of `prediction` for its pair with `other`: kept as its
    /// earliest pair's if it comes first, and as its next event if it comes first.
    fn offer_pair(&mut self, index: usize, other: usize, prediction: Prediction, now: f64) {
        let Some(candidate) = self.pair_next(other, prediction, now) else {
            return;
        };
        if candidate.is_before(&self.plans[index].pair) {
            self.plans[index].pair = candidate;
        }
        self.offer(index, candidate);
    }

    /// Moves body `index` along its velocity to `time`, wrapped into the periodic box.
    fn move_to(&mut self, index: usize, time: f64) {
        let motion = &mut self.motions[index];
        motion.position = wrap(motion.at(time), self.period);
        motion.time = time;
    }

    /// Body `index` as the loop hands it out at `time`: moved there and wrapped into the box.
    fn handed_out(&self, index: usize, time: f64) -> EventBody {
        EventBody {
            position: wrap(self.motions[index].at(time), self.period),
            ..self.body(index)
        }
    }

    /// Writes every body, moved to `time`, into `bodies`.
    fn hand_out(&self, bodies: &mut [EventBody], time: f64) {
        for (index, body) in bodies.iter_mut().enumerate() {
            *body = self.handed_out(index, time);
        }
    }

    /// Ends a step of `step`: the clock moves to the next step's start (where the bodies were
    /// handed out), and the walls are kept to tell whether the next step goes on.
    fn finish(&mut self, walls: &[Wall], step: f64) {
        self.clock += step;
        self.walls.clear();
        self.walls.extend_from_slice(walls);
        self.live = true;
    }
}

/// A piece of a body's path in a periodic box: its motion from the piece's start (the centre
/// in the box), and when it leaves the box.
#[derive(Copy, Clone, Debug)]
struct Piece {
    motion: Motion,
    end: f64,
}

/// Asks the CPU to bring the cache line at `item` into its cache (nothing where the
/// architecture has no hint here).
#[inline(always)]
fn prefetch<T>(item: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it reads nothing and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(item.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = item;
}

/// `motion`'s first impact with `wall`, swept with the f64 oracle and the separating option
/// over [`wall_horizon`]: its time on the loop's clock, the point and the normal.
fn wall_impact(wall: &Wall, motion: &Motion) -> Option<(f64, DVec3, DVec3)> {
    let horizon = wall_horizon(wall, motion)?;
    let swept = Body {
        center: motion.position,
        radius: motion.radius,
        displacement: motion.velocity * horizon,
    };
    let impact = reference::sweep_sphere_wall(&swept, wall, SweepOptions::event_driven())?;
    // Touching at once, the body approaches only beyond what a response's rounding leaves
    // of its speed (as a pair's, [`predict::SETTLED`]).
    let speed = motion.velocity.abs().element_sum();
    if impact.time_of_impact == 0.0
        && motion.velocity.dot(impact.normal) <= predict::SETTLED * speed
    {
        return None;
    }
    Some((
        motion.time + impact.time_of_impact * horizon,
        impact.point,
        impact.normal,
    ))
}

/// How long to sweep `motion` against `wall` to be sure of its first impact, from the
/// motion alone (so that the impact's time does not depend on when it was predicted): a
/// plane, if approached, is met once the approach has closed the gap; a segment while the
/// centre is within the radius of it, so before the centre has travelled the radius plus
/// its distance to the segment's farther end (a segment's farthest point from anywhere is
/// an end). Twice that, and a unit of travel more, so that the impact falls well within.
/// `None` where the body is at rest or moves away from a plane: no impact.
fn wall_horizon(wall: &Wall, motion: &Motion) -> Option<f64> {
    let speed = motion.velocity.length();
    let travel = match *wall {
        Wall::Plane { point, normal } => {
            let normal = normal.as_dvec3().normalize();
            let approach = -normal.dot(motion.velocity);
            if approach.is_nan() || approach <= 0.0 {
                return None;
            }
            let height = normal.dot(motion.position - point.as_dvec3());
            (height.abs() + motion.radius) * (speed / approach)
        }
        Wall::Segment { start, end } => {
            let (start, end) = (start.as_dvec3(), end.as_dvec3());
            let farther = (motion.position - start)
                .length()
                .max((motion.position - end).length());
            farther + motion.radius
        }
    };
    (speed > 0.0).then(|| (2.0 * travel + 1.0) / speed)
}

/// Half the largest radius; where every radius is 0, the distance the fastest body covers in
/// the step (1 if nothing moves). In a periodic box, shrunk so that every radius plus twice
/// the skin stays within 90% of a quarter period.
fn default_skin(bodies: &[EventBody], step: f64, period: DVec3) -> f64 {
    let largest = bodies.iter().map(|body| body.radius).fold(0.0, f64::max);
    let mut skin = if largest > 0.0 {
        0.5 * largest
    } else {
        let fastest = bodies
            .iter()
            .map(|body| body.velocity.length())
            .fold(0.0, f64::max);
        let reach = fastest * step;
        if reach > 0.0 { reach } else { 1.0 }
    };
    let room = 0.45 * (period.min_element() / 4.0 - largest);
    if room > 0.0 {
        skin = skin.min(room);
    }
    skin.clamp(MIN_LENGTH, MAX_MAGNITUDE)
}

/// The change of `body`'s momentum from `before` (its velocity before the response) to its
/// velocity now; `None` for a body of infinite mass (its momentum is not a number).
fn momentum_change(body: &EventBody, before: DVec3) -> Option<DVec3> {
    body.mass
        .is_finite()
        .then(|| (body.velocity - before) * body.mass)
}

/// Whether a response left an approach speed `approach` along the normal beyond rounding:
/// more than [`predict::SETTLED`] of `speeds`, the speeds before and after it (a perfectly
/// inelastic impulse leaves a few ε of those before, either way, where the normal is not
/// along an axis; a head-on one leaves nothing else).
fn still_approaching(approach: f64, speeds: f64) -> bool {
    approach > predict::SETTLED * speeds
}
