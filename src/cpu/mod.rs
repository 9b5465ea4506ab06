//! The CPU paths in f32: the twin of each shader ([`sweep`](mod@sweep) mirrors
//! `shaders/sweep.wgsl`), the single-pair conveniences built on it, and the batched path.
//!
//! See also [`crate::reference`] for the f64 oracle and [`crate::gpu`] for the same sweep
//! on the GPU.

mod lanes;
pub mod sweep;

pub use lanes::{LANES, TimeOfImpact};

use std::cell::Cell;

use rayon::prelude::*;

use crate::error::Error;
use crate::geometry::{Impact, MovingSphere, Sphere};
use crate::gpu::layout::GpuBody;
use crate::validate::{pack_bodies, validate_bodies, validate_pairs};

/// When two moving bodies (circles or spheres) first touch during the step.
///
/// # Arguments
/// * `a`, `b`: the two bodies; any of [`MovingSphere`], [`MovingCircle`](crate::MovingCircle),
///   [`Sphere`], [`Circle`](crate::Circle) (the stationary ones do not move).
///
/// # Returns
/// `None` when they stay apart for the whole step; otherwise the [`Impact`] at the first
/// time they touch, or at t = 0 with [`ImpactStatus::Overlapping`](crate::ImpactStatus) when
/// they already overlap. Inputs are not validated here: NaN gives `None`, and components
/// beyond [`MAX_MAGNITUDE`](crate::MAX_MAGNITUDE) may give a miss or a non-finite point. Use
/// [`sweep_batch`] (or [`crate::validate_body`]) for checked input.
///
/// # Example
/// ```
/// use glam::Vec2;
/// use sweepcast::{cpu, MovingCircle};
///
/// // A circle of radius 1 moving 10 to the right towards a resting circle 5 away.
/// let a = MovingCircle::new(Vec2::ZERO, 1.0, Vec2::new(10.0, 0.0));
/// let b = MovingCircle::new(Vec2::new(5.0, 0.0), 1.0, Vec2::ZERO);
/// let impact = cpu::sweep(&a, &b).expect("they collide");
/// assert!((impact.time_of_impact - 0.3).abs() < 1e-6); // the gap of 3 closes at t = 0.3
/// ```
#[must_use]
pub fn sweep<A, B>(a: &A, b: &B) -> Option<Impact>
where
    A: Copy + Into<MovingSphere>,
    B: Copy + Into<MovingSphere>,
{
    let (a, b) = (GpuBody::from((*a).into()), GpuBody::from((*b).into()));
    sweep::sweep_pair(&a, &b).to_impact(&a, &b)
}

/// The dynamic–static case: a moving body against one that stays put.
///
/// Equivalent to [`sweep()`] with a zero displacement for `fixed`.
#[must_use]
pub fn sweep_against_static<A, S>(moving: &A, fixed: &S) -> Option<Impact>
where
    A: Copy + Into<MovingSphere>,
    S: Copy + Into<Sphere>,
{
    let fixed: MovingSphere = (*fixed).into().into();
    sweep(moving, &fixed)
}

/// Static proximity test: whether two stationary circles or spheres overlap or touch.
///
/// Compares squared distances, so it takes no square root.
#[must_use]
pub fn overlaps<A, B>(a: &A, b: &B) -> bool
where
    A: Copy + Into<Sphere>,
    B: Copy + Into<Sphere>,
{
    let (a, b): (Sphere, Sphere) = ((*a).into(), (*b).into());
    let sum_radii = a.radius + b.radius;
    (b.center - a.center).length_squared() <= sum_radii * sum_radii
}

/// Sweeps every candidate pair, in parallel on all cores (rayon), with the same f32 code as
/// the GPU shader.
///
/// # Arguments
/// * `bodies`: the moving bodies.
/// * `pairs`: candidate pairs, each two indices into `bodies`.
///
/// # Returns
/// One entry per pair, in order: `None` for a miss, else the [`Impact`].
///
/// # Errors
/// The same typed errors as the GPU path, before any work is done:
/// [`Error::NonFinite`], [`Error::TooLarge`], [`Error::NegativeRadius`],
/// [`Error::PairIndexOutOfRange`].
pub fn sweep_batch<B>(bodies: &[B], pairs: &[[u32; 2]]) -> Result<Vec<Option<Impact>>, Error>
where
    B: Copy + Into<MovingSphere> + Sync,
{
    let mut impacts = Vec::new();
    sweep_batch_into(bodies, pairs, &mut impacts)?;
    Ok(impacts)
}

/// [`sweep_batch`] into a vector the caller keeps, so a simulation allocates nothing per step
/// once the vector has grown to its batch size.
///
/// # Errors
/// As [`sweep_batch`]; `impacts` is left empty on error.
pub fn sweep_batch_into<B>(
    bodies: &[B],
    pairs: &[[u32; 2]],
    impacts: &mut Vec<Option<Impact>>,
) -> Result<(), Error>
where
    B: Copy + Into<MovingSphere> + Sync,
{
    impacts.clear();
    validate_bodies(bodies)?;
    validate_pairs(pairs, bodies.len())?;
    let gpu_body = |index: u32| GpuBody::from(bodies[index as usize].into());
    pairs
        .par_iter()
        .map(|&[i, j]| {
            let (a, b) = (gpu_body(i), gpu_body(j));
            sweep::sweep_pair(&a, &b).to_impact(&a, &b)
        })
        .collect_into_vec(impacts);
    Ok(())
}

/// The fast batch: only the time and status of each pair, vectorised across [`LANES`] pairs
/// and parallel on all cores.
///
/// Same test and same typed errors as [`sweep_batch`], 4 bytes a pair out instead of an
/// [`Impact`]. Where both report a contact the time is the same to the bit; at a contact
/// within rounding of t = 1 it may report a contact where [`sweep_batch`]'s reach escape
/// reported a miss (both are within the parity bound).
///
/// # Errors
/// As [`sweep_batch`]; `times` is left empty on error.
///
/// # Example
/// ```
/// use glam::Vec3;
/// use sweepcast::{cpu, ImpactStatus, MovingSphere};
///
/// let bodies = [
///     MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(10.0, 0.0, 0.0)),
///     MovingSphere::new(Vec3::new(5.0, 0.0, 0.0), 1.0, Vec3::ZERO),
///     MovingSphere::new(Vec3::new(0.0, 1.0, 0.0), 1.0, Vec3::ZERO),
/// ];
/// let mut times = Vec::new();
/// cpu::times_of_impact_into(&bodies, &[[0, 1], [0, 2], [1, 2]], &mut times)?;
/// assert_eq!(times[0].get(), Some((0.3, ImpactStatus::Contact)));
/// assert_eq!(times[1].get(), Some((0.0, ImpactStatus::Overlapping)));
/// assert_eq!(times[2].get(), None);
/// # Ok::<(), sweepcast::Error>(())
/// ```
pub fn times_of_impact_into<B>(
    bodies: &[B],
    pairs: &[[u32; 2]],
    times: &mut Vec<TimeOfImpact>,
) -> Result<(), Error>
where
    B: Copy + Into<MovingSphere> + Sync,
{
    /// Pairs per rayon task: large enough to amortise scheduling, a multiple of LANES.
    const TASK: usize = 64 * LANES;
    thread_local! {
        /// The packed bodies of the last call on this thread, kept so that a simulation that
        /// calls every step allocates nothing once the buffer has grown to its body count.
        static PACKED: Cell<Vec<GpuBody>> = const { Cell::new(Vec::new()) };
    }
    times.clear();
    // Taken, not borrowed: a call nested in another on the same thread (a rayon task stolen
    // while this one waits) gets an empty buffer of its own instead of a borrow panic.
    let mut packed = PACKED.take();
    let result = pack_bodies(bodies, &mut packed).and_then(|()| {
        validate_pairs(pairs, bodies.len())?;
        times.resize(pairs.len(), TimeOfImpact::MISS);
        times
            .par_chunks_mut(TASK)
            .zip(pairs.par_chunks(TASK))
            // SAFETY: `validate_pairs` has checked every index against the packed bodies.
            .for_each(|(times, pairs)| unsafe { lanes::sweep_block(&packed, pairs, times) });
        Ok(())
    });
    PACKED.set(packed);
    result
}
