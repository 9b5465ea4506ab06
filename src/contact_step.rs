//! What both whole steps share: the [`ContactStep`] trait, the [`Contact`]s and
//! [`Contacts`] they answer with, and their [`StageTimes`].

use std::time::Duration;

use crate::answers::EarliestImpact;
use crate::error::Error;
use crate::geometry::Impact;
use crate::geometry::Partner;
use crate::geometry::{MovingSphere, Wall};
use crate::groups::CollisionGroups;
use crate::options::SweepOptions;

/// A whole collision step, on the CPU ([`ContactFinder`](crate::cpu::ContactFinder)) or on
/// the GPU ([`ContactPipeline`](crate::gpu::ContactPipeline)): every pair of bodies that
/// touches during the step, and each body's earliest contact with a body or a wall, given
/// the bodies alone. Code written against the trait (the event loop's
/// [`BroadPhase`](crate::events::BroadPhase) among it) takes either engine; both give the
/// same contacts, to the bit where the device rounds as the CPU does.
///
/// Both calls write into the caller's memory, so that a simulation that calls them every
/// step allocates nothing once it has grown.
///
/// Sealed: the crate's steps implement it (`ContactFinder`, `ContactPipeline`, a shared
/// reference to it, and a mutable reference to any of them), with what the event loop asks
/// of a step besides these two calls kept private.
///
/// Used by: `docs/step.md` ("Either step, one code path"); through the event loop's broad
/// phase (every `ContactStep` is a [`BroadPhase`](crate::events::BroadPhase)),
/// `examples/gas.rs` and `python/src/events.rs` (`broad_phase="cpu"` or a `GpuStep`).
///
/// # Example
/// ```
/// use sweepcast::glam::Vec3;
/// use sweepcast::{ContactStep, Contacts, MovingSphere, SweepOptions, cpu};
///
/// fn closing_pairs(step: &mut impl ContactStep, bodies: &[MovingSphere]) -> usize {
///     let mut contacts = Contacts::default();
///     step.find_into(bodies, &[], SweepOptions::default(), &mut contacts)
///         .expect("valid bodies");
///     contacts.contacts().len()
/// }
///
/// let bodies = [
///     MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(4.0, 0.0, 0.0)),
///     MovingSphere::new(Vec3::new(5.0, 0.0, 0.0), 1.0, Vec3::ZERO),
/// ];
/// assert_eq!(closing_pairs(&mut cpu::ContactFinder::new(), &bodies), 1);
/// ```
pub trait ContactStep: sealed::EventStep {
    /// The contacts of the step of `bodies` among `walls` with `options`, into `out` (its
    /// memory reused).
    ///
    /// Used by: `docs/step.md` ("Either step, one code path").
    ///
    /// # Errors
    /// The engine's own: a bad body or wall ([`Error::NonFinite`], [`Error::NegativeRadius`],
    /// ...), a limit passed, a device error; `out` is then left empty.
    fn find_into(
        &mut self,
        bodies: &[MovingSphere],
        walls: &[Wall],
        options: SweepOptions,
        out: &mut Contacts,
    ) -> Result<(), Error>;

    /// Each body's earliest contact in the step, with a body or a wall, into `out`
    /// ([`Contacts::earliest_impacts`] says which); `None` for a body that meets nothing.
    ///
    /// Used by: `docs/step.md` ("Either step, one code path").
    ///
    /// # Errors
    /// As [`find_into`](Self::find_into); `out` is then left empty.
    fn find_earliest_into(
        &mut self,
        bodies: &[MovingSphere],
        walls: &[Wall],
        options: SweepOptions,
        out: &mut Vec<Option<EarliestImpact>>,
    ) -> Result<(), Error>;
}

mod sealed {
    #[cfg(feature = "gpu")]
    use super::ContactStep;
    use super::{CollisionGroups, Contacts, Error, MovingSphere, SweepOptions};

    /// What the event loop asks of a step used as its broad phase, besides the calls of
    /// [`ContactStep`](crate::ContactStep): sealed, so that only the crate's two steps (and
    /// references to them) implement the trait, and these stay out of the public API.
    pub trait EventStep {
        /// Sets the collision groups of the steps from now on (one a body, or empty: every pair
        /// interacts; see [`CollisionGroups`]), returning those set before so that a caller that
        /// borrows the step (the event loop) can put them back.
        fn replace_groups(&mut self, groups: Vec<CollisionGroups>) -> Vec<CollisionGroups>;

        /// [`find_into`](crate::ContactStep::find_into) with the step's output held to about
        /// `max_bytes` (candidates and contacts, as
        /// [`ContactFinder::with_max_output_bytes`](crate::cpu::ContactFinder::with_max_output_bytes)
        /// counts them): [`Error::OutputLimit`] soon after it is passed, so that a caller that
        /// wants only a few contacts (the event loop's partner limit) does not wait for many.
        /// Without a limit of its own, the engine's limits apply (the GPU step's are its
        /// device's).
        ///
        /// # Errors
        /// As [`find_into`](crate::ContactStep::find_into), and [`Error::OutputLimit`].
        fn find_within_into(
            &mut self,
            bodies: &[MovingSphere],
            options: SweepOptions,
            max_bytes: usize,
            out: &mut Contacts,
        ) -> Result<(), Error>;

        /// The pairs of bodies among the step's contacts (no walls), into `pairs`, with the
        /// output held as [`find_within_into`](EventStep::find_within_into) holds it; returns how
        /// many candidate pairs the broad phase gave. What the event loop asks of a step used
        /// as its broad phase. The GPU step's goes through `find_within_into` into a new
        /// [`Contacts`]; the CPU step reads its own, so that it keeps their memory from call
        /// to call.
        ///
        /// # Errors
        /// As [`find_within_into`](EventStep::find_within_into).
        fn contact_pairs_within(
            &mut self,
            bodies: &[MovingSphere],
            options: SweepOptions,
            max_bytes: usize,
            pairs: &mut Vec<[u32; 2]>,
        ) -> Result<usize, Error>;
    }

    /// [`EventStep::find_within_into`] for a step with no output limit of its own: the
    /// engine's limits apply (the GPU step's are its device's; the CPU step has its own).
    #[cfg(feature = "gpu")]
    pub fn find_within_into<S: ContactStep + ?Sized>(
        step: &mut S,
        bodies: &[MovingSphere],
        options: SweepOptions,
        out: &mut Contacts,
    ) -> Result<(), Error> {
        step.find_into(bodies, &[], options, out)
    }

    /// [`EventStep::contact_pairs_within`] through [`find_within_into`] into a new
    /// [`Contacts`].
    #[cfg(feature = "gpu")]
    pub fn contact_pairs_within<S: ContactStep + ?Sized>(
        step: &mut S,
        bodies: &[MovingSphere],
        options: SweepOptions,
        max_bytes: usize,
        pairs: &mut Vec<[u32; 2]>,
    ) -> Result<usize, Error> {
        let mut contacts = Contacts::default();
        step.find_within_into(bodies, options, max_bytes, &mut contacts)?;
        Ok(contacts.pairs_into(pairs))
    }
}
pub(crate) use sealed::EventStep;
#[cfg(feature = "gpu")]
pub(crate) use sealed::{contact_pairs_within, find_within_into};

// Code may choose the engine at run time (`Box<dyn ContactStep>`): the trait stays dyn
// compatible (cargo-semver-checks caught a sealed version that was not).
const _: Option<&dyn ContactStep> = None;

/// A step behind a mutable reference.
impl<S: ContactStep + ?Sized> ContactStep for &mut S {
    fn find_into(
        &mut self,
        bodies: &[MovingSphere],
        walls: &[Wall],
        options: SweepOptions,
        out: &mut Contacts,
    ) -> Result<(), Error> {
        (**self).find_into(bodies, walls, options, out)
    }

    fn find_earliest_into(
        &mut self,
        bodies: &[MovingSphere],
        walls: &[Wall],
        options: SweepOptions,
        out: &mut Vec<Option<EarliestImpact>>,
    ) -> Result<(), Error> {
        (**self).find_earliest_into(bodies, walls, options, out)
    }
}

impl<S: ContactStep + ?Sized> EventStep for &mut S {
    fn replace_groups(&mut self, groups: Vec<CollisionGroups>) -> Vec<CollisionGroups> {
        (**self).replace_groups(groups)
    }

    fn find_within_into(
        &mut self,
        bodies: &[MovingSphere],
        options: SweepOptions,
        max_bytes: usize,
        out: &mut Contacts,
    ) -> Result<(), Error> {
        (**self).find_within_into(bodies, options, max_bytes, out)
    }

    fn contact_pairs_within(
        &mut self,
        bodies: &[MovingSphere],
        options: SweepOptions,
        max_bytes: usize,
        pairs: &mut Vec<[u32; 2]>,
    ) -> Result<usize, Error> {
        (**self).contact_pairs_within(bodies, options, max_bytes, pairs)
    }
}

/// Implements [`ContactStep`] for `$ty` by the inherent `find_into` and `find_earliest_into`
/// of `$engine` (the two steps' calls have the trait's signatures), with any more of the
/// trait's methods given after, in braces.
macro_rules! contact_step_by_inherent {
    ($ty:ty, $engine:ty) => {
        $crate::contact_step::contact_step_by_inherent!($ty, $engine, {
            fn find_within_into(
                &mut self,
                bodies: &[$crate::MovingSphere],
                options: $crate::SweepOptions,
                _max_bytes: usize,
                out: &mut $crate::Contacts,
            ) -> Result<(), $crate::Error> {
                $crate::contact_step::find_within_into(self, bodies, options, out)
            }

            fn contact_pairs_within(
                &mut self,
                bodies: &[$crate::MovingSphere],
                options: $crate::SweepOptions,
                max_bytes: usize,
                pairs: &mut Vec<[u32; 2]>,
            ) -> Result<usize, $crate::Error> {
                $crate::contact_step::contact_pairs_within(self, bodies, options, max_bytes, pairs)
            }
        });
    };
    ($ty:ty, $engine:ty, { $($more:tt)* }) => {
        impl $crate::ContactStep for $ty {
            fn find_into(
                &mut self,
                bodies: &[$crate::MovingSphere],
                walls: &[$crate::Wall],
                options: $crate::SweepOptions,
                out: &mut $crate::Contacts,
            ) -> Result<(), $crate::Error> {
                <$engine>::find_into(self, bodies, walls, options, out)
            }

            fn find_earliest_into(
                &mut self,
                bodies: &[$crate::MovingSphere],
                walls: &[$crate::Wall],
                options: $crate::SweepOptions,
                out: &mut Vec<Option<$crate::EarliestImpact>>,
            ) -> Result<(), $crate::Error> {
                <$engine>::find_earliest_into(self, bodies, walls, options, out)
            }

        }

        impl $crate::contact_step::EventStep for $ty {
            fn replace_groups(
                &mut self,
                groups: Vec<$crate::CollisionGroups>,
            ) -> Vec<$crate::CollisionGroups> {
                <$engine>::swap_groups(self, groups)
            }

            $($more)*
        }
    };
}
pub(crate) use contact_step_by_inherent;

/// The wall-clock time of each stage of a step, in the order they ran, as both steps report
/// it ([`ContactFinder::stage_times`](crate::cpu::ContactFinder::stage_times),
/// [`ContactPipeline::stage_times`](crate::gpu::ContactPipeline::stage_times)).
///
/// Used by: `docs/step.md` ("On the CPU"), `examples/bullets.rs`, `examples/step_bench.rs`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageTimes {
    stages: Vec<(&'static str, Duration)>,
}

impl StageTimes {
    /// Each stage's name and time, in the order they ran.
    ///
    /// Used by: `examples/bullets.rs` (the CPU step's stages).
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, Duration)> + '_ {
        self.stages.iter().copied()
    }

    /// The time of the stage named `stage` (summed, if it ran more than once); `None` if it
    /// did not run.
    ///
    /// Used by: `examples/step_bench.rs` (each stage's median).
    #[must_use]
    pub fn get(&self, stage: &str) -> Option<Duration> {
        self.stages
            .iter()
            .filter(|(name, _)| *name == stage)
            .map(|(_, time)| *time)
            .reduce(|a, b| a + b)
    }

    /// Forgets every stage.
    pub(crate) fn clear(&mut self) {
        self.stages.clear();
    }

    /// Appends the time of `stage`.
    pub(crate) fn push(&mut self, stage: &'static str, time: Duration) {
        self.stages.push((stage, time));
    }
}

/// A body met something during the step: another body or a wall. The one shape of an answer
/// of both steps ([`Contacts::contacts`] for pairs, [`Contacts::earliest_walls`] for walls).
///
/// Used by: the README's quick start (the CPU step: `Contact::pair`), `examples/step_bench.rs`,
/// `python/src/contacts.rs`.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Contact {
    /// The body; of a pair, the lower index.
    pub body: u32,
    /// What it met: of a pair, the other body (the higher index) and, in a periodic box, the
    /// image of it that `body` met, in periods per axis (the other body's centre taken at
    /// `center - image · period`: the nearest image, as the sweep picks it,
    /// `round((b - a) / period)` per axis in f32; `[0, 0, 0]` without a periodic box, and
    /// saturated at the limits of `i32` for centres more than 2³¹ periods apart, far outside
    /// the box where the sweep's guarantees do not hold); or a wall (the lowest index among
    /// walls met at the same time).
    pub partner: Partner,
    /// When, where and how they touch: the sweep of `body` against its partner.
    pub impact: Impact,
}

impl Contact {
    /// The two bodies of a contact between bodies, the lower first; `None` for a wall.
    ///
    /// Used by: the README's quick start (the CPU step) and "Collision groups",
    /// `examples/bullets.rs`, `examples/resident_step.rs`, `python/src/contacts.rs`.
    #[must_use]
    pub fn pair(&self) -> Option<[u32; 2]> {
        match self.partner {
            Partner::Body { index, .. } => Some([self.body, index]),
            Partner::Wall { .. } => None,
        }
    }

    /// The image of the other body that `body` met (see [`Contact::partner`]); `[0, 0, 0]`
    /// for a wall.
    ///
    /// Used by: `python/src/contacts.rs` (the contacts' images).
    #[must_use]
    pub fn image(&self) -> [i32; 3] {
        match self.partner {
            Partner::Body { image, .. } => image,
            Partner::Wall { .. } => [0; 3],
        }
    }

    /// The wall's index of a contact with a wall; `None` for a pair.
    ///
    /// Used by: `docs/guide.md` ("Walls: segments and planes").
    #[must_use]
    pub fn wall(&self) -> Option<u32> {
        match self.partner {
            Partner::Wall { index } => Some(index),
            Partner::Body { .. } => None,
        }
    }

    /// A pair's contact from its parts.
    pub(crate) fn of_pair(pair: [u32; 2], image: [i32; 3], impact: Impact) -> Self {
        Self {
            body: pair[0],
            partner: Partner::Body {
                index: pair[1],
                image,
            },
            impact,
        }
    }
}

/// A body's earliest contact in the step, as [`Contacts`] keeps it: its index in
/// [`Contacts::contacts`] ([`Contacts::earliest_of`] gives the contact).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Earliest {
    /// The contact's index in [`Contacts::contacts`].
    pub(crate) contact: u32,
    /// The other body.
    pub(crate) partner: u32,
}

/// The contacts of one step, as [`find_contacts`](crate::cpu::find_contacts) and [`ContactFinder::find`](crate::cpu::ContactFinder::find) give them.
///
/// Used by: the README's quick start (the CPU and GPU steps), `docs/step.md`,
/// `examples/bullets.rs`.
#[derive(Clone, Debug, Default)]
pub struct Contacts {
    pub(crate) contacts: Vec<Contact>,
    pub(crate) earliest: Vec<Option<Earliest>>,
    pub(crate) candidates: usize,
    pub(crate) walls: Vec<Option<Contact>>,
}

impl Contacts {
    /// Each body's earliest contact with a body or a wall, as the GPU step's
    /// [`StepBuffers::earliest`](crate::low_level::StepBuffers::earliest) records say it
    /// ([`EarliestRecord::decode`](crate::low_level::layout::EarliestRecord::decode)): the body's
    /// earliest pair contact (the lowest partner among equal times), replaced by its earliest
    /// wall only where that is strictly earlier; `None` for a body that meets nothing.
    ///
    /// Used by: `docs/step.md` ("Resident on the device: the step stage"), `examples/arrays.rs`,
    /// `examples/resident_step.rs`, `mpi/examples/gas_across_ranks.rs`.
    #[must_use]
    pub fn earliest_impacts(&self) -> Vec<Option<EarliestImpact>> {
        let bodies = self.earliest.len().max(self.walls.len());
        (0..bodies)
            .map(|body| {
                let pair = self.earliest_of(body as u32).map(|contact| {
                    let pair = contact.pair().expect("a contact of two bodies");
                    let first = pair[0] == body as u32;
                    let image = if first {
                        contact.image()
                    } else {
                        contact.image().map(i32::wrapping_neg)
                    };
                    EarliestImpact {
                        time_of_impact: contact.impact.time_of_impact,
                        status: contact.impact.status,
                        partner: Partner::Body {
                            index: pair[usize::from(first)],
                            image,
                        },
                    }
                });
                let wall = self
                    .walls
                    .get(body)
                    .copied()
                    .flatten()
                    .map(|wall| EarliestImpact {
                        time_of_impact: wall.impact.time_of_impact,
                        status: wall.impact.status,
                        partner: wall.partner,
                    });
                match (pair, wall) {
                    (Some(pair), Some(wall)) if wall.time_of_impact < pair.time_of_impact => {
                        Some(wall)
                    }
                    (pair, wall) => pair.or(wall),
                }
            })
            .collect()
    }

    /// Every contact of the step, ordered by time of impact, then by the pair's indices:
    /// the same order on every run and on every path.
    ///
    /// Used by: the README's quick start (the CPU and GPU steps) and "Collision groups",
    /// `examples/bullets.rs`, `examples/step_bench.rs`, `python/src/contacts.rs`.
    #[must_use]
    pub fn contacts(&self) -> &[Contact] {
        &self.contacts
    }

    /// The earliest contact of `body` with another body, the lowest partner index first among
    /// contacts at the same time, or `None` (also for an index out of range). The step's
    /// earliest contact of all is `contacts().first()`; a body's earliest of bodies and walls
    /// together is [`Contacts::earliest_impacts`].
    ///
    /// Used by: the README's quick start (the CPU step).
    #[must_use]
    pub fn earliest_of(&self, body: u32) -> Option<&Contact> {
        let earliest = (*self.earliest.get(body as usize)?)?;
        Some(&self.contacts[earliest.contact as usize])
    }

    /// Per body (by index), its earliest impact on the step's walls (the lowest wall index
    /// among equal times), as [`crate::cpu::earliest_wall_contacts`] gives it; `None` for a body
    /// that meets no wall. Empty when the step had no walls.
    ///
    /// Used by: `docs/guide.md` ("Walls: segments and planes"), `python/src/contacts.rs`,
    /// `mpi/src/bin/same_answers.rs`.
    #[must_use]
    pub fn earliest_walls(&self) -> &[Option<Contact>] {
        &self.walls
    }

    /// How many candidate pairs the broad phase gave the narrow phase (at least the number
    /// of contacts).
    ///
    /// Used by: `examples/bullets.rs` (the candidates groups save), `examples/step_bench.rs`,
    /// `python/src/contacts.rs`.
    #[must_use]
    pub fn candidates(&self) -> usize {
        self.candidates
    }

    /// The pairs of the contacts between bodies, into `pairs`; the candidates.
    pub(crate) fn pairs_into(&self, pairs: &mut Vec<[u32; 2]>) -> usize {
        pairs.clear();
        pairs.extend(self.contacts.iter().filter_map(Contact::pair));
        self.candidates
    }

    /// The contacts of a step from their parts (the GPU pipeline's decoding).
    #[cfg(feature = "gpu")]
    pub(crate) fn from_parts(
        contacts: Vec<Contact>,
        earliest: Vec<Option<Earliest>>,
        candidates: usize,
    ) -> Self {
        Self {
            contacts,
            earliest,
            candidates,
            walls: Vec::new(),
        }
    }

    /// These contacts with each body's earliest wall (the GPU pipeline's decoding).
    #[cfg(feature = "gpu")]
    pub(crate) fn with_walls(mut self, walls: Vec<Option<Contact>>) -> Self {
        self.walls = walls;
        self
    }

    /// Empties these contacts for a step of `candidates` candidates to refill, keeping
    /// their memory: the contacts, each body's earliest and each body's earliest wall.
    #[allow(clippy::type_complexity)]
    pub(crate) fn refill(
        &mut self,
        candidates: usize,
    ) -> (
        &mut Vec<Contact>,
        &mut Vec<Option<Earliest>>,
        &mut Vec<Option<Contact>>,
    ) {
        self.contacts.clear();
        self.earliest.clear();
        self.walls.clear();
        self.candidates = candidates;
        (&mut self.contacts, &mut self.earliest, &mut self.walls)
    }
}
