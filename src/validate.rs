//! Input checks shared by every batched path: bad input never reaches the sweep or the GPU.

use crate::error::{BodyField, Error};
use crate::geometry::MovingSphere;
use crate::gpu::layout::GpuBody;

/// Checks one body: finite centre, radius and displacement, and a radius of at least zero.
///
/// # Errors
/// [`Error::NonFinite`] or [`Error::NegativeRadius`], naming `index`.
pub fn validate_body(index: usize, body: &MovingSphere) -> Result<(), Error> {
    let non_finite = |field| Error::NonFinite { body: index, field };
    if !body.center.is_finite() {
        return Err(non_finite(BodyField::Center));
    }
    if !body.radius.is_finite() {
        return Err(non_finite(BodyField::Radius));
    }
    if body.radius < 0.0 {
        return Err(Error::NegativeRadius {
            body: index,
            radius: body.radius,
        });
    }
    if !body.displacement.is_finite() {
        return Err(non_finite(BodyField::Displacement));
    }
    Ok(())
}

/// Checks that every pair names two existing bodies (a body paired with itself is allowed:
/// it overlaps itself).
///
/// # Errors
/// [`Error::PairIndexOutOfRange`] for the first pair that names a missing body.
pub fn validate_pairs(pairs: &[[u32; 2]], body_count: usize) -> Result<(), Error> {
    // Compare in usize so that no count of bodies can wrap the test.
    let out_of_range = pairs.iter().enumerate().find_map(|(pair, indices)| {
        indices
            .iter()
            .find(|&&index| index as usize >= body_count)
            .map(|&index| (pair, index))
    });
    match out_of_range {
        Some((pair, index)) => Err(Error::PairIndexOutOfRange {
            pair,
            index,
            body_count,
        }),
        None => Ok(()),
    }
}

/// Checks every body with [`validate_body`].
///
/// # Errors
/// The first body's error, naming its index.
pub fn validate_bodies<B: Copy + Into<MovingSphere>>(bodies: &[B]) -> Result<(), Error> {
    // A first pass without branches (`&`, not `&&`) runs at memory speed; only a batch that
    // fails it is walked again to name the first offending body.
    let all_valid = bodies.iter().fold(true, |valid, &body| {
        let b: MovingSphere = body.into();
        let finite = f32::is_finite; // |x| < infinity: one comparison, no branch
        valid
            & finite(b.center.x)
            & finite(b.center.y)
            & finite(b.center.z)
            & finite(b.radius)
            & (b.radius >= 0.0)
            & finite(b.displacement.x)
            & finite(b.displacement.y)
            & finite(b.displacement.z)
    });
    if all_valid {
        return Ok(());
    }
    bodies
        .iter()
        .enumerate()
        .try_for_each(|(index, &body)| validate_body(index, &body.into()))
}

/// Validates `bodies` and writes their GPU layout into `out` (cleared first, capacity kept).
pub(crate) fn pack_bodies<B: Copy + Into<MovingSphere>>(
    bodies: &[B],
    out: &mut Vec<GpuBody>,
) -> Result<(), Error> {
    out.clear();
    validate_bodies(bodies)?;
    out.extend(bodies.iter().map(|&body| GpuBody::from(body.into())));
    Ok(())
}
