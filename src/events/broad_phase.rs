//! Where the event loop gets its pairs: the [`BroadPhase`] trait, its limits of pairs and
//! work, and its implementations for every pair ([`AllPairs`]), the CPU step and the GPU
//! step (the grid, [`Cells`](super::Cells), is in `cells.rs`).

use crate::ContactStep;
use crate::error::Error;
use crate::geometry::MovingSphere;
use crate::groups::{CollisionGroups, interact};
use crate::options::SweepOptions;
use crate::validate::check_length;

/// The work a broad phase is charged for each body it is asked about (besides a unit a pair):
/// a grid's cells, up to two a body, each visited with its neighbours.
const WORK_PER_BODY: u64 = 32;

/// Where the event loop gets the pairs of bodies that may meet: the loop asks for the pairs
/// of spheres (centred on the bodies, at rest, each grown by the skin and a hair for f32's
/// rounding) that touch or overlap; only those pairs are swept until a body leaves its skin.
/// A broad phase may give more pairs than that (every pair, say): never fewer.
///
/// Used by: `examples/gas.rs` (in `examples/hard_spheres/mod.rs`), `python/src/events.rs`.
pub trait BroadPhase {
    /// Writes into `pairs` every pair of `spheres` that touch or overlap and whose collision
    /// groups interact (each once, in any order), with `options`' periodic box. `groups` is
    /// empty (every pair interacts) or holds one a sphere; a pair that does not interact may
    /// be written too (the loop drops it), but a broad phase that leaves it out saves the
    /// loop that work and counts it against no limit.
    ///
    /// Used by: `examples/gas.rs` (the smallest gap between its bodies).
    ///
    /// # Errors
    /// The broad phase's own (validation, the device), and [`Error::GroupsLength`] for
    /// `groups` of another length.
    fn touching_pairs(
        &mut self,
        spheres: &[MovingSphere],
        groups: &[CollisionGroups],
        options: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
    ) -> Result<(), Error>;

    /// [`touching_pairs`](Self::touching_pairs) within limits: [`Error::TooManyPartners`]
    /// where there are more than `max_pairs`, [`Error::WorkLimit`] where it would take more
    /// than `max_work` units of work (about a pair tested each); else the work it took. What
    /// the event loop calls, with its partner and work limits
    /// ([`EventLoop::with_max_partners`](super::EventLoop::with_max_partners), [`EventLoop::with_max_work`](super::EventLoop::with_max_work)). The default finds
    /// every pair, then counts them, and takes 32 units a body and one a pair; a broad phase
    /// whose pairs or tests could outgrow the limits (every pair of many bodies, a grid under
    /// a huge skin) stops soon after it passes one ([`AllPairs`], [`Cells`](super::Cells) and the CPU step
    /// do).
    ///
    /// Used by: `docs/guide.md` ("Simulations: the event loop": a broad phase of your own).
    ///
    /// # Errors
    /// As [`touching_pairs`](Self::touching_pairs), [`Error::TooManyPartners`] and
    /// [`Error::WorkLimit`].
    fn touching_pairs_within(
        &mut self,
        spheres: &[MovingSphere],
        groups: &[CollisionGroups],
        options: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
        max_pairs: usize,
        max_work: u64,
    ) -> Result<u64, Error> {
        self.touching_pairs(spheres, groups, options, pairs)?;
        too_many_pairs(pairs.len() as u64, max_pairs)?;
        within_work(
            WORK_PER_BODY * spheres.len() as u64 + pairs.len() as u64,
            max_work,
        )
    }
}

/// `work`, or [`Error::WorkLimit`] where it exceeds `max_work`.
pub(crate) fn within_work(work: u64, max_work: u64) -> Result<u64, Error> {
    if work > max_work {
        return Err(Error::WorkLimit { limit: max_work });
    }
    Ok(work)
}

/// [`Error::TooManyPartners`] (each pair two partners) where `pairs` exceed `max_pairs`.
pub(crate) fn too_many_pairs(pairs: u64, max_pairs: usize) -> Result<(), Error> {
    if pairs > max_pairs as u64 {
        return Err(Error::TooManyPartners {
            at_least: 2 * pairs,
            limit: 2 * max_pairs as u64,
        });
    }
    Ok(())
}

/// A broad phase chosen at run time, behind a mutable reference.
impl<'a> BroadPhase for &mut (dyn BroadPhase + 'a) {
    fn touching_pairs(
        &mut self,
        spheres: &[MovingSphere],
        groups: &[CollisionGroups],
        options: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
    ) -> Result<(), Error> {
        (**self).touching_pairs(spheres, groups, options, pairs)
    }

    fn touching_pairs_within(
        &mut self,
        spheres: &[MovingSphere],
        groups: &[CollisionGroups],
        options: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
        max_pairs: usize,
        max_work: u64,
    ) -> Result<u64, Error> {
        (**self).touching_pairs_within(spheres, groups, options, pairs, max_pairs, max_work)
    }
}

/// A broad phase chosen at run time, boxed.
impl<'a> BroadPhase for Box<dyn BroadPhase + 'a> {
    fn touching_pairs(
        &mut self,
        spheres: &[MovingSphere],
        groups: &[CollisionGroups],
        options: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
    ) -> Result<(), Error> {
        (**self).touching_pairs(spheres, groups, options, pairs)
    }

    fn touching_pairs_within(
        &mut self,
        spheres: &[MovingSphere],
        groups: &[CollisionGroups],
        options: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
        max_pairs: usize,
        max_work: u64,
    ) -> Result<u64, Error> {
        (**self).touching_pairs_within(spheres, groups, options, pairs, max_pairs, max_work)
    }
}

/// Every pair: no broad phase, for a few hundred bodies or fewer.
///
/// Used by: the README's quick start (the event loop: `EventLoop::advance` sweeps every pair),
/// `docs/guide.md` ("Simulations: the event loop"), `python/src/events.rs` (`broad_phase="all"`).
#[derive(Copy, Clone, Debug, Default)]
pub struct AllPairs;

impl BroadPhase for AllPairs {
    fn touching_pairs(
        &mut self,
        spheres: &[MovingSphere],
        groups: &[CollisionGroups],
        options: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
    ) -> Result<(), Error> {
        self.touching_pairs_within(spheres, groups, options, pairs, usize::MAX, u64::MAX)
            .map(|_| ())
    }

    /// Counts the pairs that interact before it makes them (a unit of work a pair of
    /// bodies, whether their groups interact or not).
    fn touching_pairs_within(
        &mut self,
        spheres: &[MovingSphere],
        groups: &[CollisionGroups],
        _: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
        max_pairs: usize,
        max_work: u64,
    ) -> Result<u64, Error> {
        pairs.clear();
        check_length(groups, spheres.len())?;
        let n = spheres.len() as u64;
        let all = n * n.saturating_sub(1) / 2;
        if groups.is_empty() {
            too_many_pairs(all, max_pairs)?;
        }
        within_work(all, max_work)?;
        if !groups.is_empty() {
            too_many_pairs(interacting_pairs(groups), max_pairs)?;
        }
        let n = spheres.len() as u32;
        pairs.extend(
            (0..n)
                .flat_map(|a| (a + 1..n).map(move |b| [a, b]))
                .filter(|&[a, b]| interact(groups, a as usize, b as usize)),
        );
        Ok(all)
    }
}

/// How many pairs of bodies of `groups` interact, from the count of each distinct groups
/// value (at most as many steps as there are pairs of bodies).
fn interacting_pairs(groups: &[CollisionGroups]) -> u64 {
    let mut counts = std::collections::HashMap::<CollisionGroups, u64>::new();
    for &own in groups {
        *counts.entry(own).or_default() += 1;
    }
    let counts: Vec<(CollisionGroups, u64)> = counts.into_iter().collect();
    let mut pairs = 0;
    for (k, &(own, count)) in counts.iter().enumerate() {
        if own.interacts_with(own) {
            pairs += count * (count - 1) / 2;
        }
        for &(other, others) in &counts[k + 1..] {
            if own.interacts_with(other) {
                pairs += count * others;
            }
        }
    }
    pairs
}

/// Either whole step ([`ContactFinder`](crate::cpu::ContactFinder),
/// [`ContactPipeline`](crate::gpu::ContactPipeline) or a shared reference to it, or a
/// mutable reference to any [`ContactStep`]): the pairs of its contacts. The step runs with
/// the spheres' groups; its own are put back after it.
impl<S: ContactStep + ?Sized> BroadPhase for S {
    fn touching_pairs(
        &mut self,
        spheres: &[MovingSphere],
        groups: &[CollisionGroups],
        options: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
    ) -> Result<(), Error> {
        self.touching_pairs_within(spheres, groups, options, pairs, usize::MAX, u64::MAX)
            .map(|_| ())
    }

    /// With the step's output held to what `max_pairs` touching pairs take (each a
    /// candidate and a contact): on the CPU step,
    /// [`Error::OutputLimit`] soon after it is passed.
    fn touching_pairs_within(
        &mut self,
        spheres: &[MovingSphere],
        groups: &[CollisionGroups],
        options: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
        max_pairs: usize,
        max_work: u64,
    ) -> Result<u64, Error> {
        let per_pair = crate::cpu::ContactFinder::OUTPUT_BYTES_PER_CANDIDATE
            + crate::cpu::ContactFinder::OUTPUT_BYTES_PER_CONTACT;
        let bytes = max_pairs.saturating_add(1).saturating_mul(per_pair);
        let own = self.replace_groups(groups.to_vec());
        let found = self.contact_pairs_within(spheres, options, bytes, pairs);
        self.replace_groups(own);
        let work = WORK_PER_BODY * spheres.len() as u64 + found? as u64;
        too_many_pairs(pairs.len() as u64, max_pairs)?;
        within_work(work, max_work)
    }
}
