//! [`World`]: the bodies of one step, validated and packed once, against which any number of
//! batches of pairs are swept.

use crate::par::prelude::*;

use super::lanes::{self, LANES};
use crate::answers::TimeOfImpact;
use crate::error::Error;
use crate::geometry::{Impact, MovingSphere};
use crate::layout::{BodyRecord, SweepParams};
use crate::options::SweepOptions;
use crate::validate::{pack_bodies, validate_pairs, validate_periodic_reach};

/// Pairs per rayon task (times and full answer): large enough to amortise scheduling, a
/// multiple of every [`Simd`](super::Simd) set's lanes.
const TASK_PAIRS: usize = 32 * LANES;

/// Below this many pairs a batch runs on the calling thread. Waking rayon's pool of two
/// threads costs 12–28 µs, and the times-only sweep 4–6 ns a pair on one core (two 2-core
/// AMD EPYCs, with and without AVX-512, `cargo run --release --example small_batches`), so
/// the pool pays only above about 6,400–9,500 pairs there; the next power of two leaves room
/// for faster cores.
pub const SERIAL_PAIRS: usize = 16_384;

/// The bodies of one step, validated and packed in the shader's layout once; any number of
/// batches of pairs are then swept against them, each checking only its own pair indices.
///
/// An event-driven simulation re-sweeps the few pairs of the two bodies that just collided
/// many times per step: with a `World`, such a call costs only its pairs (no validation or
/// packing of the whole world, no thread pool below [`SERIAL_PAIRS`] pairs, and nothing
/// allocated once the output vector has grown). [`World::update`] reuses the world's memory
/// from step to step.
///
/// Every body is validated, referenced by a pair or not: a world is a whole step's bodies,
/// and a bad body is reported when the world is built (with the typed errors of
/// [`validate_body`](crate::low_level::validate_body) and, with a periodic box,
/// [`Error::PeriodicBoxTooSmall`]), not when a pair first names it.
///
/// Used by: `docs/guide.md` ("The fast batch and `World`"), `examples/small_batches.rs`,
/// `examples/fast_path.rs`.
///
/// # Example
/// ```
/// use sweepcast::glam::Vec3;
/// use sweepcast::{cpu, MovingSphere, SweepOptions};
///
/// let bodies = [
///     MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(10.0, 0.0, 0.0)),
///     MovingSphere::new(Vec3::new(5.0, 0.0, 0.0), 1.0, Vec3::ZERO),
///     MovingSphere::new(Vec3::new(0.0, 5.0, 0.0), 1.0, Vec3::ZERO),
/// ];
/// let mut world = cpu::World::new();
/// world.update(&bodies, SweepOptions::default())?;
/// let (mut times, mut impacts) = (Vec::new(), Vec::new());
/// world.times_of_impact_into(&[[0, 1], [0, 2]], &mut times)?;
/// world.sweep_into(&[[0, 1]], &mut impacts)?;
/// assert_eq!(times[0].time(), Some(0.3));
/// assert!(!times[1].is_hit());
/// assert_eq!(impacts[0].map(|impact| impact.time_of_impact), Some(0.3));
/// # Ok::<(), sweepcast::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct World {
    bodies: Vec<BodyRecord>,
    pub(crate) params: SweepParams,
}

impl Default for World {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl World {
    /// An empty world, as a constant.
    pub(crate) const EMPTY: Self = Self {
        bodies: Vec::new(),
        params: SweepParams::DEFAULT,
    };

    /// An empty world (no bodies; every pair index is out of range).
    ///
    /// Used by: `examples/small_batches.rs`, `examples/fast_path.rs`.
    #[must_use]
    pub fn new() -> Self {
        Self::EMPTY
    }

    /// Validates `bodies` (and their fit in the options' periodic box) and packs them,
    /// reusing the world's memory.
    ///
    /// Used by: `docs/guide.md` ("The fast batch and `World`"), `examples/small_batches.rs`,
    /// `examples/fast_path.rs`.
    ///
    /// # Errors
    /// The first bad body's [`Error::NonFinite`], [`Error::TooLarge`] or
    /// [`Error::NegativeRadius`], then [`Error::PeriodicBoxTooSmall`]; the world is left
    /// empty on error.
    pub fn update<B>(&mut self, bodies: &[B], options: SweepOptions) -> Result<(), Error>
    where
        B: Copy + Into<MovingSphere>,
    {
        pack_bodies(bodies, &mut self.bodies)?;
        if let Some(periodic_box) = &options.periodic_box
            && let Err(error) = validate_periodic_reach(bodies, periodic_box)
        {
            self.bodies.clear();
            return Err(error);
        }
        self.params = SweepParams::new(&options, 0);
        Ok(())
    }

    /// The bytes of memory the world holds.
    pub(crate) fn memory_bytes(&self) -> usize {
        super::memory::bytes(&self.bodies)
    }

    /// The number of bodies.
    pub(crate) fn len(&self) -> usize {
        self.bodies.len()
    }

    /// The packed bodies, in the shader's layout.
    ///
    /// Used by: `examples/fast_path.rs` (the memory limit's stream).
    #[must_use]
    pub fn bodies(&self) -> &[BodyRecord] {
        &self.bodies
    }

    /// The time and status of every pair (4 bytes a pair), vectorised ([`Simd`](super::Simd)),
    /// on the calling thread below [`SERIAL_PAIRS`] pairs and on all cores above: the path of
    /// [`times_of_impact_into`](super::times_of_impact_into), which documents its answers.
    ///
    /// Used by: `docs/guide.md` ("The fast batch and `World`"), `examples/small_batches.rs`,
    /// `examples/fast_path.rs`.
    ///
    /// # Errors
    /// [`Error::PairIndexOutOfRange`] for the first pair that names a missing body; `times`
    /// is left empty on error.
    pub fn times_of_impact_into(
        &self,
        pairs: &[[u32; 2]],
        times: &mut Vec<TimeOfImpact>,
    ) -> Result<(), Error> {
        self.times_into::<false>(pairs, times)
    }

    /// The time and status of every pair as [`sweep_into`](Self::sweep_into) finds them:
    /// with the twin's reach escape, so that its hits and misses, and the bits of its times,
    /// are those of the full answer's impacts; 4 bytes a pair rather than 56. Validated and
    /// split as [`times_of_impact_into`](Self::times_of_impact_into).
    pub(crate) fn exact_times_into(
        &self,
        pairs: &[[u32; 2]],
        times: &mut Vec<TimeOfImpact>,
    ) -> Result<(), Error> {
        self.times_into::<true>(pairs, times)
    }

    /// The times-only batch, with the twin's reach escape if `EXACT`.
    fn times_into<const EXACT: bool>(
        &self,
        pairs: &[[u32; 2]],
        times: &mut Vec<TimeOfImpact>,
    ) -> Result<(), Error> {
        times.clear();
        validate_pairs(pairs, self.bodies.len())?;
        times.resize(pairs.len(), TimeOfImpact::MISS);
        // SAFETY: `validate_pairs` has checked every index against the bodies.
        split(pairs, times, |pairs, times| unsafe {
            lanes::sweep_block::<EXACT>(&self.bodies, pairs, times, &self.params);
        });
        Ok(())
    }

    /// The whole [`Impact`] of every pair, exactly the twin's (the shader's f32 mirror),
    /// vectorised ([`Simd`](super::Simd)): hit or miss and time from the branch-free lanes
    /// of the times-only path (with the twin's reach escape), the normal on lanes for every
    /// block with a hit, the contact point per hit; on the calling thread below
    /// [`SERIAL_PAIRS`] pairs and on all cores above. The path of
    /// [`sweep_batch`](super::sweep_batch), which documents its answers.
    ///
    /// Used by: `docs/guide.md` ("The fast batch and `World`"), `examples/small_batches.rs`,
    /// `examples/fast_path.rs`.
    ///
    /// # Errors
    /// [`Error::PairIndexOutOfRange`] for the first pair that names a missing body; `impacts`
    /// is left empty on error.
    pub fn sweep_into(
        &self,
        pairs: &[[u32; 2]],
        impacts: &mut Vec<Option<Impact>>,
    ) -> Result<(), Error> {
        impacts.clear();
        validate_pairs(pairs, self.bodies.len())?;
        impacts.reserve(pairs.len());
        let spare = &mut impacts.spare_capacity_mut()[..pairs.len()];
        // SAFETY: `validate_pairs` has checked every index against the bodies.
        split(pairs, spare, |pairs, impacts| unsafe {
            lanes::sweep_impacts(&self.bodies, pairs, impacts, &self.params);
        });
        // SAFETY: `sweep_impacts` has written every element of `spare`, the first
        // `pairs.len()` of the spare capacity (a panic on the way leaves the length at 0).
        unsafe { impacts.set_len(pairs.len()) };
        Ok(())
    }
}

/// Runs `sweep` on all of `pairs` and `out` on the calling thread below [`SERIAL_PAIRS`]
/// pairs, else on chunks of [`TASK_PAIRS`] on all cores.
fn split<T: Send>(pairs: &[[u32; 2]], out: &mut [T], sweep: impl Fn(&[[u32; 2]], &mut [T]) + Sync) {
    if pairs.len() < SERIAL_PAIRS {
        sweep(pairs, out);
    } else {
        out.par_chunks_mut(TASK_PAIRS)
            .zip(pairs.par_chunks(TASK_PAIRS))
            .for_each(|(out, pairs)| sweep(pairs, out));
    }
}
