//! Input checks shared by every batched path: bad input never reaches the sweep or the GPU.

use crate::error::{BodyField, Error};
use crate::geometry::{MovingSphere, Wall};
use crate::groups::CollisionGroups;
use crate::layout::BodyRecord;
use crate::limits::MAX_MAGNITUDE;
use crate::options::PeriodicBox;
#[cfg(feature = "gpu")]
use crate::options::SweepOptions;

/// Whether `x` is finite and at most [`MAX_MAGNITUDE`] in magnitude: `x * 8` (exact) is
/// finite exactly then.
#[inline(always)]
fn in_range(x: f32) -> bool {
    (x * 8.0).is_finite()
}

/// Checks one body: finite centre, radius and displacement of magnitude at most
/// [`MAX_MAGNITUDE`], and a radius of at least zero.
///
/// # Errors
/// [`Error::NonFinite`], [`Error::TooLarge`] or [`Error::NegativeRadius`], naming `index`.
pub fn validate_body(index: usize, body: &MovingSphere) -> Result<(), Error> {
    let fields = [
        (BodyField::Center, body.center.to_array()),
        (BodyField::Radius, [body.radius; 3]),
        (BodyField::Displacement, body.displacement.to_array()),
    ];
    for (field, components) in fields {
        for value in components {
            if !value.is_finite() {
                return Err(Error::NonFinite { body: index, field });
            }
            if !in_range(value) {
                return Err(Error::TooLarge {
                    body: index,
                    field,
                    value,
                    limit: MAX_MAGNITUDE,
                });
            }
        }
        if field == BodyField::Radius && body.radius < 0.0 {
            return Err(Error::NegativeRadius {
                body: index,
                radius: body.radius,
            });
        }
    }
    Ok(())
}

/// Checks that every pair names two existing bodies (a body paired with itself is allowed:
/// it overlaps itself).
///
/// # Errors
/// [`Error::PairIndexOutOfRange`] for the first pair that names a missing body.
pub fn validate_pairs(pairs: &[[u32; 2]], body_count: usize) -> Result<(), Error> {
    // One pass without branches decides (a comparison per index that the compiler
    // vectorises); only a batch that fails is walked again to name the first offending pair.
    // A count beyond u32's range holds every index.
    let Ok(count) = u32::try_from(body_count) else {
        return Ok(());
    };
    // Blocks of 64 Ki pairs (512 KiB) on all cores.
    let largest = {
        use crate::par::prelude::*;
        let indices: &[u32] = bytemuck::cast_slice(pairs);
        indices
            .par_chunks(1 << 17)
            .map(largest_index)
            .reduce(|| 0, u32::max)
    };
    if pairs.is_empty() || largest < count {
        return Ok(());
    }
    let (pair, index) = pairs
        .iter()
        .enumerate()
        .find_map(|(pair, indices)| {
            indices
                .iter()
                .find(|&&index| index as usize >= body_count)
                .map(|&index| (pair, index))
        })
        .expect("the largest index is out of range");
    Err(Error::PairIndexOutOfRange {
        pair,
        index,
        body_count,
    })
}

/// The largest of `indices` (0 for none), in a loop the compiler vectorises: with AVX2
/// where the CPU has it (the unsigned maximum needs SSE4.1 at least).
fn largest_index(indices: &[u32]) -> u32 {
    let largest = |indices: &[u32]| indices.iter().fold(0, |largest, &i| largest.max(i));
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        #[target_feature(enable = "avx2")]
        fn largest_avx2(indices: &[u32], largest: impl Fn(&[u32]) -> u32) -> u32 {
            largest(indices)
        }
        // SAFETY: the CPU supports AVX2, as just checked.
        return unsafe { largest_avx2(indices, largest) };
    }
    largest(indices)
}

/// Checks every body with [`validate_body`].
///
/// # Errors
/// The first body's error, naming its index.
pub fn validate_bodies<B: Copy + Into<MovingSphere>>(bodies: &[B]) -> Result<(), Error> {
    let all_valid = bodies
        .iter()
        .fold(true, |valid, &body| valid & is_valid(&body.into()));
    if all_valid {
        Ok(())
    } else {
        name_first_invalid(bodies)
    }
}

/// Whether [`validate_body`] accepts `b`, without branches (`&`, not `&&`), so that a pass
/// over a batch runs at memory speed.
#[inline(always)]
fn is_valid(b: &MovingSphere) -> bool {
    in_range(b.center.x)
        & in_range(b.center.y)
        & in_range(b.center.z)
        & in_range(b.radius)
        & (b.radius >= 0.0)
        & in_range(b.displacement.x)
        & in_range(b.displacement.y)
        & in_range(b.displacement.z)
}

/// The error of the first body [`validate_body`] rejects: only a batch that failed the fast
/// pass is walked again, to name it.
#[cold]
fn name_first_invalid<B: Copy + Into<MovingSphere>>(bodies: &[B]) -> Result<(), Error> {
    bodies
        .iter()
        .enumerate()
        .try_for_each(|(index, &body)| validate_body(index, &body.into()))
}

/// Validates `bodies` and writes their GPU layout into `out` (cleared first, capacity kept).
/// `out` is left empty on error.
pub(crate) fn pack_bodies<B: Copy + Into<MovingSphere>>(
    bodies: &[B],
    out: &mut Vec<BodyRecord>,
) -> Result<(), Error> {
    out.clear();
    out.reserve(bodies.len());
    let mut all_valid = true;
    for block in bodies.chunks(PACK_BLOCK) {
        all_valid &= pack_block(block, out);
    }
    if all_valid {
        Ok(())
    } else {
        out.clear();
        name_first_invalid(bodies)
    }
}

/// Validates `bodies` and hands their GPU layout to `write` one block of [`PACK_BLOCK`]
/// bodies at a time, block `i` with `targets[i]` (as many targets as blocks), on all cores:
/// each block is packed and checked in a buffer of the thread's own, in its cache, and only
/// then written, so that the target (a mapped upload buffer, which may be write-combining
/// memory) is written once and never read. On error the targets hold unspecified bytes.
#[cfg(feature = "gpu")]
pub(crate) fn pack_bodies_into<B, T>(
    bodies: &[B],
    targets: Vec<T>,
    write: impl Fn(T, &[u8]) + Sync,
) -> Result<(), Error>
where
    B: Copy + Into<MovingSphere> + Sync,
    T: Send,
{
    use crate::par::prelude::*;
    assert_eq!(
        targets.len(),
        bodies.len().div_ceil(PACK_BLOCK),
        "a target a block"
    );
    let pack = |block: &mut Vec<BodyRecord>, (target, bodies): (T, &[B])| {
        block.clear();
        block.extend(bodies.iter().map(|&body| BodyRecord::from(body.into())));
        let valid = all_packed_valid(block);
        write(target, bytemuck::cast_slice(block));
        valid
    };
    let blocks = targets.into_iter().zip(bodies.chunks(PACK_BLOCK));
    let all_valid = if bodies.len() < PARALLEL_BLOCKS * PACK_BLOCK {
        let mut block = Vec::with_capacity(PACK_BLOCK);
        blocks.fold(true, |all, item| all & pack(&mut block, item))
    } else {
        blocks
            .collect::<Vec<_>>()
            .into_par_iter()
            .map_init(|| Vec::with_capacity(PACK_BLOCK), pack)
            .reduce(|| true, |a, b| a & b)
    };
    if all_valid {
        Ok(())
    } else {
        name_first_invalid(bodies)
    }
}

/// Bodies packed and then checked at a time: 32 KiB of packed bodies, which stay in the L1
/// cache between the two.
pub(crate) const PACK_BLOCK: usize = 1024;

/// Blocks below which packing stays on the calling thread: the pool's start costs more than
/// it saves (measured: 1,250 bodies took 56 us on two threads, 18 us on one).
#[cfg(feature = "gpu")]
const PARALLEL_BLOCKS: usize = 16;

/// Appends the GPU layout of `block` to `out`; whether every body in it is valid.
fn pack_block<B: Copy + Into<MovingSphere>>(block: &[B], out: &mut Vec<BodyRecord>) -> bool {
    let start = out.len();
    out.extend(block.iter().map(|&body| BodyRecord::from(body.into())));
    all_packed_valid(&out[start..])
}

/// [`is_valid`] for packed bodies, in straight-line arithmetic the compiler vectorises: a
/// field times 8 times 0 is 0 when the field is in range ([`in_range`]) and NaN otherwise
/// (the padding is 0), and a NaN survives every sum; the smallest radius is kept to find a
/// negative one.
fn all_packed_valid(packed: &[BodyRecord]) -> bool {
    let mut poison = [0.0f32; 8];
    let mut smallest_radius = 0.0f32;
    for body in packed {
        let fields = bytemuck::cast::<BodyRecord, [f32; 8]>(*body);
        for (sum, field) in poison.iter_mut().zip(fields) {
            *sum += field * 8.0 * 0.0;
        }
        smallest_radius = if body.radius < smallest_radius {
            body.radius
        } else {
            smallest_radius
        };
    }
    poison.iter().all(|&sum| sum == 0.0) & (smallest_radius >= 0.0)
}

/// Checks that every body fits the periodic box: on every axis that wraps, its radius plus
/// the magnitude of its displacement along the axis is below a quarter of the period, so
/// that any pair can reach only the nearest image of the other within the step, and its
/// centre lies within [`MAX_PERIODS`] periods of the origin (see [`PeriodicBox`]). Computed
/// in f64, where the sum is exact.
///
/// # Errors
/// For the first body (in index order) that does not fit, on its first axis (x, y, z) that
/// it does not fit: [`Error::PeriodicBoxTooSmall`] for its reach, else
/// [`Error::OutsidePeriodicBox`] for its centre; [`validate_body`]'s error where that body
/// is not valid (a NaN radius, say, when this is called without [`validate_bodies`]).
pub fn validate_periodic_reach<B: Copy + Into<MovingSphere>>(
    bodies: &[B],
    periodic_box: &PeriodicBox,
) -> Result<(), Error> {
    let period = periodic_box.period().to_array();
    // A quarter period per axis; infinite (nothing fails) where the axis does not wrap.
    let quarter = period.map(|period| f64::from(period) / 4.0);
    let reach = |body: &MovingSphere, axis: usize| {
        f64::from(body.radius) + f64::from(body.displacement[axis].abs())
    };
    let limit = period.map(|period| f64::from(period) * MAX_PERIODS);
    let inside =
        |body: &MovingSphere, axis: usize| f64::from(body.center[axis].abs()) < limit[axis];
    let fits_axis =
        |body: &MovingSphere, axis: usize| reach(body, axis) < quarter[axis] && inside(body, axis);
    let fits = |body: &MovingSphere| (0..3).all(|axis| fits_axis(body, axis));
    // One pass that decides; only a batch that fails is walked again to name the offender.
    if bodies
        .iter()
        .fold(true, |all, &body| all & fits(&body.into()))
    {
        return Ok(());
    }
    let (body, axis) = bodies
        .iter()
        .enumerate()
        .find_map(|(index, &body)| {
            let body = body.into();
            (0..3)
                .find(|&axis| !fits_axis(&body, axis))
                .map(|axis| (index, axis))
        })
        .expect("a body does not fit");
    let culprit: MovingSphere = bodies[body].into();
    // A body that is not valid at all (a NaN radius fits no box) is named for what it is.
    validate_body(body, &culprit)?;
    Err(if reach(&culprit, axis) >= quarter[axis] {
        Error::PeriodicBoxTooSmall {
            body,
            axis,
            reach: reach(&culprit, axis) as f32,
            period: period[axis],
        }
    } else {
        Error::OutsidePeriodicBox {
            body,
            axis,
            center: culprit.center[axis],
            period: period[axis],
        }
    })
}

/// How far from the origin a centre may lie along an axis that wraps, in periods: 2²⁴,
/// beyond which the spacing of f32 is a period or more, so that the body has no place
/// within the box, and the wrap of a relative position (`(b - a) / L`) may overflow.
pub const MAX_PERIODS: f64 = 16_777_216.0;

/// [`pack_bodies`] on all cores, with each body's collision groups (`groups` empty: every
/// pair interacts; else one a body) set in its record: each block of [`PACK_BLOCK`] bodies
/// is packed in place and checked while it is in the cache. `out` keeps its length where it
/// already has one a body (a step of the same world writes over the last one's records,
/// with no pass to clear them); it is left empty on error.
#[cfg(feature = "gpu")]
pub(crate) fn pack_bodies_with_groups<B: Copy + Into<MovingSphere> + Sync>(
    bodies: &[B],
    groups: &[crate::groups::CollisionGroups],
    out: &mut Vec<BodyRecord>,
) -> Result<(), Error> {
    use crate::par::prelude::*;
    out.resize(bodies.len(), bytemuck::Zeroable::zeroed());
    let pack = |(block, (records, bodies)): (usize, (&mut [BodyRecord], &[B]))| {
        for (record, &body) in records.iter_mut().zip(bodies) {
            *record = BodyRecord::from(body.into());
        }
        // Checked before the groups are set: their bits, read as an f32 field, may be NaN.
        let valid = all_packed_valid(records);
        let start = block * PACK_BLOCK;
        if let Some(groups) = groups.get(start..start + records.len()) {
            for (record, &groups) in records.iter_mut().zip(groups) {
                *record = record.with_groups(groups);
            }
        }
        valid
    };
    let blocks = out.len().div_ceil(PACK_BLOCK);
    let all_valid = if blocks < PARALLEL_BLOCKS {
        let blocks = out.chunks_mut(PACK_BLOCK).zip(bodies.chunks(PACK_BLOCK));
        blocks
            .enumerate()
            .fold(true, |all, block| all & pack(block))
    } else {
        let blocks = out
            .par_chunks_mut(PACK_BLOCK)
            .zip(bodies.par_chunks(PACK_BLOCK));
        blocks.enumerate().map(pack).reduce(|| true, |a, b| a & b)
    };
    if all_valid {
        return Ok(());
    }
    // The records are left whole should the bodies, checked one by one, all be valid.
    let named = name_first_invalid(bodies);
    if named.is_err() {
        out.clear();
    }
    named
}

#[cfg(feature = "gpu")]
/// A pipeline's checks of a batch in the order its packing paths make them (the bodies' own,
/// then [`check_against`]), without packing: for a call that uploads nothing.
pub(crate) fn check_batch<B: Copy + Into<MovingSphere>>(
    bodies: &[B],
    pairs: &[[u32; 2]],
    options: &SweepOptions,
    max_bodies: usize,
) -> Result<(), Error> {
    validate_bodies(bodies)?;
    check_against(bodies, pairs, options, max_bodies)
}

#[cfg(feature = "gpu")]
/// The checks after the bodies' own: [`validate_batch`], then at most `max_bodies`.
pub(crate) fn check_against<B: Copy + Into<MovingSphere>>(
    bodies: &[B],
    pairs: &[[u32; 2]],
    options: &SweepOptions,
    max_bodies: usize,
) -> Result<(), Error> {
    validate_batch(bodies, pairs, options)?;
    if bodies.len() > max_bodies {
        return Err(Error::TooManyBodies {
            count: bodies.len(),
            max: max_bodies,
        });
    }
    Ok(())
}

#[cfg(feature = "gpu")]
/// What every batch path checks before it sweeps: the bodies (already checked one by one
/// where they were packed) against the options, and the pairs against the bodies.
pub(crate) fn validate_batch<B: Copy + Into<MovingSphere>>(
    bodies: &[B],
    pairs: &[[u32; 2]],
    options: &SweepOptions,
) -> Result<(), Error> {
    if let Some(periodic_box) = &options.periodic_box {
        validate_periodic_reach(bodies, periodic_box)?;
    }
    validate_pairs(pairs, bodies.len())
}

/// Checks every wall: finite coordinates within [`MAX_MAGNITUDE`], and for a plane a normal
/// that is not zero (any other length is normalised, in f64). A segment whose end points coincide is valid: it is a point.
///
/// # Errors
/// [`Error::InvalidWall`] for the first wall that fails, naming it.
pub fn validate_walls(walls: &[Wall]) -> Result<(), Error> {
    for (index, wall) in walls.iter().enumerate() {
        let (first, second) = match *wall {
            Wall::Segment { start, end } => (start, end),
            Wall::Plane { point, normal } => (point, normal),
        };
        let components = first.to_array().into_iter().chain(second.to_array());
        let fail = |reason| {
            Err(Error::InvalidWall {
                wall: index,
                reason,
            })
        };
        if components.clone().any(|x| !x.is_finite()) {
            return fail("a coordinate is not finite (NaN or infinity)");
        }
        if !components.clone().all(in_range) {
            return fail("a coordinate is above the limit f32::MAX / 8; scale the world down");
        }
        if let Wall::Plane { normal, .. } = wall
            && *normal == glam::Vec3::ZERO
        {
            return fail(
                "the plane's normal is zero; give the direction out of the wall, into free space",
            );
        }
    }
    Ok(())
}

/// [`Error::GroupsLength`] unless `groups` is empty or holds one
/// group a body.
pub(crate) fn check_length(groups: &[CollisionGroups], bodies: usize) -> Result<(), Error> {
    if groups.is_empty() || groups.len() == bodies {
        Ok(())
    } else {
        Err(Error::GroupsLength {
            groups: groups.len(),
            bodies,
        })
    }
}
