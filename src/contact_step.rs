//! What both whole steps share: the [`ContactStep`] trait, their [`StageTimes`], and (in
//! `cpu/step.rs`) the [`Contact`](crate::Contact) and [`Contacts`](crate::Contacts) they
//! answer with.

use std::time::Duration;

use crate::Contacts;
use crate::error::Error;
use crate::geometry::{MovingSphere, Wall};
use crate::layout::EarliestImpact;
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
pub trait ContactStep {
    /// The contacts of the step of `bodies` among `walls` with `options`, into `out` (its
    /// memory reused).
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
    /// # Errors
    /// As [`find_into`](Self::find_into); `out` is then left empty.
    fn find_earliest_into(
        &mut self,
        bodies: &[MovingSphere],
        walls: &[Wall],
        options: SweepOptions,
        out: &mut Vec<Option<EarliestImpact>>,
    ) -> Result<(), Error>;

    /// [`find_into`](Self::find_into) with the step's output held to about `max_bytes`
    /// (candidates and contacts, as
    /// [`ContactFinder::with_max_output_bytes`](crate::cpu::ContactFinder::with_max_output_bytes)
    /// counts them): [`Error::OutputLimit`] soon after it is passed, so that a caller that
    /// wants only a few contacts (the event loop's partner limit) does not wait for many.
    /// By default the engine's own limits apply (the GPU step's are its device's).
    ///
    /// # Errors
    /// As [`find_into`](Self::find_into), and [`Error::OutputLimit`].
    fn find_within_into(
        &mut self,
        bodies: &[MovingSphere],
        options: SweepOptions,
        max_bytes: usize,
        out: &mut Contacts,
    ) -> Result<(), Error> {
        let _ = max_bytes;
        self.find_into(bodies, &[], options, out)
    }
}

/// Implements [`ContactStep`] for `$ty` by the inherent `find_into` and `find_earliest_into`
/// of `$engine` (the two steps' calls have the trait's signatures), with any more of the
/// trait's methods given after.
macro_rules! contact_step_by_inherent {
    ($ty:ty, $engine:ty $(, $($more:tt)*)?) => {
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

            $($($more)*)?
        }
    };
}
pub(crate) use contact_step_by_inherent;

/// The wall-clock time of each stage of a step, in the order they ran, as both steps report
/// it ([`ContactFinder::stage_times`](crate::cpu::ContactFinder::stage_times),
/// [`ContactPipeline::stage_times`](crate::gpu::ContactPipeline::stage_times)).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageTimes {
    stages: Vec<(&'static str, Duration)>,
}

impl StageTimes {
    /// Each stage's name and time, in the order they ran.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, Duration)> + '_ {
        self.stages.iter().copied()
    }

    /// The time of the stage named `stage` (summed, if it ran more than once); `None` if it
    /// did not run.
    #[must_use]
    pub fn get(&self, stage: &str) -> Option<Duration> {
        self.stages
            .iter()
            .filter(|(name, _)| *name == stage)
            .map(|(_, time)| *time)
            .reduce(|a, b| a + b)
    }

    /// The stages' times together.
    #[must_use]
    pub fn total(&self) -> Duration {
        self.stages.iter().map(|(_, time)| *time).sum()
    }

    /// Whether no stage was timed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
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
