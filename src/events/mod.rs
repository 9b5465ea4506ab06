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
//! Used by: the README's quick start (the event loop), `docs/guide.md` ("Simulations: the event
//! loop"), `examples/pool_break.rs`, `examples/gas.rs`.
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
//! assert_eq!(seen[0].time, 1.0); // the gap of 2 closes at 2 a unit of time
//! assert_eq!(bodies[0].velocity, DVec3::new(-1.0, 0.0, 0.0));
//! assert_eq!(bodies[1].velocity, DVec3::new(1.0, 0.0, 0.0));
//! assert_eq!(bodies[0].position, DVec3::new(0.0, 0.0, 0.0)); // back where it started
//! // The impulse body 0 received: the change of its momentum, m (v' - v).
//! assert_eq!(seen[0].impulse, DVec3::new(-2.0, 0.0, 0.0));
//! # Ok::<(), sweepcast::Error>(())
//! ```

// This file is the loop itself (`EventLoop`, its settings, and the steps: `advance_with`).
// The loop's operations are split by what they do: each body's plan (its next event, the
// walls' impacts) in plans.rs, on the records of next.rs, the skins and the partners asked for again in skins.rs, the
// impacts resolved in impacts.rs. Its parts: the bodies, events and a body at an event in
// body.rs, responses in response.rs, the broad phases in broad_phase.rs and cells.rs, the
// pair predictions in predict.rs, the queue of events in queue.rs, each body's partners in
// partners.rs, the periodic box's images in images.rs, the checks of the bodies in
// checks.rs.
mod body;
mod broad_phase;
mod cells;
mod checks;
mod images;
mod impacts;
mod next;
mod partners;
mod plans;
mod predict;
mod queue;
mod response;
mod skins;

pub use body::{Event, EventBody, Moment};
use body::{MAX_MAGNITUDE, MIN_LENGTH};
use body::{Motion, groups_of};
pub use broad_phase::{AllPairs, BroadPhase};
use broad_phase::{too_many_pairs, within_work};
pub use cells::Cells;
use cells::SkinGrid;
use checks::{beyond, check_response, validate};
use images::{Images, wrap};
use next::{Kind, Next, Plan};
use partners::Partners;
use predict::Prediction;
use queue::EventQueue;
pub use response::{Elastic, Response};

use glam::DVec3;

use crate::cpu::Simd;
use crate::error::{BodyField, Error};
use crate::geometry::Partner;
use crate::geometry::{MovingSphere, Wall};
use crate::groups::{CollisionGroups, interact};
use crate::options::{PeriodicBox, SweepOptions};
use crate::reference::{self, Body};

/// The default work limit of a step ([`EventLoop::with_max_work`]).
const DEFAULT_MAX_WORK: u64 = 1 << 32;

/// The default limit of partner slots ([`EventLoop::with_max_partners`]).
const DEFAULT_MAX_PARTNERS: u64 = 1 << 27;

/// The event loop's memory, kept from step to step: the bodies as it knows them (each at its
/// own time), each body's next event and the queue of them, the skins and the pairs. See the
/// [module](self).
///
/// Used by: the README's quick start (the event loop), `examples/pool_break.rs`, `examples/gas.rs`.
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
    ///
    /// Used by: `docs/guide.md` ("Simulations: the event loop"), `docs/guarantees.md` ("Bad
    /// input").
    pub const MAX_MAGNITUDE: f64 = MAX_MAGNITUDE;

    /// The smallest radius above 0 and the smallest skin: 2⁻¹²⁶ (`f32::MIN_POSITIVE`), so
    /// that the predictions' squares do not underflow at any distance where two bodies can
    /// touch.
    ///
    /// Used by: `docs/guide.md` ("Simulations: the event loop"), `docs/guarantees.md` ("Bad
    /// input").
    pub const MIN_LENGTH: f64 = MIN_LENGTH;

    /// A loop that allows up to 1,000,000 events a step, in open space, with the default skin.
    ///
    /// Used by: the README's quick start (the event loop), `examples/pool_break.rs` (in
    /// `examples/pool/mod.rs`), `examples/gas.rs` (in `examples/hard_spheres/mod.rs`),
    /// `python/src/events.rs`.
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
    ///
    /// Used by: `docs/guide.md` ("Simulations: the event loop"), `docs/guarantees.md` ("Bad
    /// input"), `python/src/events.rs` (`max_events`).
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
    ///
    /// Used by: `docs/guide.md` ("Simulations: the event loop"), `docs/guarantees.md` ("Guarantees"
    /// and "Bad input").
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
    ///
    /// Used by: `docs/guide.md` ("Simulations: the event loop"), `docs/guarantees.md` ("Guarantees"
    /// and "Bad input").
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
    ///
    /// Used by: `examples/gas.rs` (in `examples/hard_spheres/mod.rs`), `examples/arrays.rs`,
    /// `python/src/events.rs`.
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
    ///
    /// Used by: `docs/guide.md` ("Simulations: the event loop"), `examples/gas.rs` (in
    /// `examples/hard_spheres/mod.rs`), `python/src/events.rs`.
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
    ///
    /// Used by: `docs/guide.md` ("Simulations: the event loop"), `examples/gas.rs` (in
    /// `examples/hard_spheres/mod.rs`), `python/src/events.rs`.
    #[must_use]
    pub fn with_local_skins(mut self) -> Self {
        self.local = true;
        self
    }

    /// How many times the last step asked its broad phase for pairs: once where the loop
    /// started afresh, and (without [local skins](Self::with_local_skins)) once each time a
    /// body left its skin.
    ///
    /// Used by: `python/src/events.rs` (`EventLoop.broad_phase_runs`, which
    /// `python/examples/gas.py` reads).
    #[must_use]
    pub fn broad_phase_runs(&self) -> usize {
        self.rebuilds
    }

    /// [`advance_with`](Self::advance_with) with every pair swept ([`AllPairs`]): for a few
    /// hundred bodies or fewer.
    ///
    /// Used by: the README's quick start (the event loop), `docs/guide.md` ("Simulations: the event
    /// loop"), `examples/pool_break.rs` (in `examples/pool/mod.rs`).
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
    /// Used by: `docs/guide.md` ("Simulations: the event loop"), `examples/gas.rs` (in
    /// `examples/hard_spheres/mod.rs`), `examples/arrays.rs`, `python/src/events.rs`.
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
    /// [`Error::PairIndexOutOfRange`] where it gives a pair naming no body,
    /// [`Error::TooManyEvents`], [`Error::WorkLimit`] (also where it reports more work than
    /// remained), [`Error::TooManyPartners`],
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
