//! The event loop's checks of the bodies: those handed in (`validate`) and those a response
//! leaves (`check_response`), against the loop's range.

use glam::DVec3;

use super::body::{Event, EventBody, MAX_MAGNITUDE, MIN_LENGTH};
use crate::error::{BodyField, Error};

/// Checks what a response made of body `index` at `event` as [`validate`] checks a body
/// handed in: finite, within the range, a radius of at least 0, a valid mass
/// ([`Error::InvalidResponse`] naming the first field that is not).
pub(super) fn check_response(event: &Event, index: usize, body: &EventBody) -> Result<(), Error> {
    // The checks of a body handed in (its path over no time is its position).
    let field = match validate(std::slice::from_ref(body), 0.0, DVec3::INFINITY) {
        Ok(()) => return Ok(()),
        Err(Error::NonFinite { field, .. } | Error::OutOfRange { field, .. }) => field,
        Err(Error::NegativeRadius { .. }) => BodyField::Radius,
        Err(_) => BodyField::Mass,
    };
    Err(Error::InvalidResponse {
        event: *event,
        body: index,
        field,
    })
}

/// Checks every body: finite, within the loop's range ([`MAX_MAGNITUDE`], [`MIN_LENGTH`])
/// and, in open space (along each axis that does not wrap), along its whole path over `step`;
/// a radius of at least 0; a valid mass.
pub(super) fn validate(bodies: &[EventBody], step: f64, period: DVec3) -> Result<(), Error> {
    for (index, body) in bodies.iter().enumerate() {
        let fields = [
            (BodyField::Center, body.position.is_finite()),
            (BodyField::Velocity, body.velocity.is_finite()),
            (BodyField::Radius, body.radius.is_finite()),
        ];
        for (field, finite) in fields {
            if !finite {
                return Err(Error::NonFinite { body: index, field });
            }
        }
        if body.radius < 0.0 {
            return Err(Error::NegativeRadius {
                body: index,
                radius: body.radius as f32,
            });
        }
        check_range(index, body)?;
        // Where it would be at the end of the step, along the axes that do not wrap.
        if let Some(value) = beyond(body.position + body.velocity * step, period) {
            return Err(Error::OutOfRange {
                body: index,
                field: BodyField::Center,
                value,
            });
        }
        if !valid_mass(body.mass) {
            return Err(Error::InvalidMass {
                body: index,
                mass: body.mass,
            });
        }
    }
    Ok(())
}

/// `point`'s largest coordinate along the axes that do not wrap (those of `period` that are
/// infinite), where it is beyond [`MAX_MAGNITUDE`] or NaN.
pub(super) fn beyond(point: DVec3, period: DVec3) -> Option<f64> {
    let largest = DVec3::select(period.is_finite_mask(), DVec3::ZERO, point.abs()).max_element();
    (largest.is_nan() || largest > MAX_MAGNITUDE).then_some(largest)
}

/// A mass above 0 whose inverse is finite, or infinity.
fn valid_mass(mass: f64) -> bool {
    mass > 0.0 && (mass == f64::INFINITY || mass.recip().is_finite())
}

/// Checks a body's finite position, velocity and radius against the loop's range.
fn check_range(index: usize, body: &EventBody) -> Result<(), Error> {
    let out = |field, value| {
        Err(Error::OutOfRange {
            body: index,
            field,
            value,
        })
    };
    for (field, vector) in [
        (BodyField::Center, body.position),
        (BodyField::Velocity, body.velocity),
    ] {
        let largest = vector.abs().max_element();
        if largest > MAX_MAGNITUDE {
            return out(field, largest);
        }
    }
    if body.radius > MAX_MAGNITUDE || (body.radius > 0.0 && body.radius < MIN_LENGTH) {
        return out(BodyField::Radius, body.radius);
    }
    Ok(())
}
