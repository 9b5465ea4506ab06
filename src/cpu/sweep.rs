//! The f32 twin of `shaders/sweep.wgsl`, line for line: same names, same operations in the
//! same order, entry points included, so a reader can diff the two and a test can run both
//! on one input. WGSL's `dot`, `cross`, `normalize`, `select`, `round` map to glam's, to `if`
//! and to `round_ties_even`; the shader's module-scope `params` is an argument here.

use glam::{UVec3, Vec3};

use crate::answers::TimeOfImpact;
use crate::layout::{
    BodyRecord, FLAG_PERIODIC, FLAG_SEPARATING_MISSES, ImpactRecord, LIFT_LOG2, MIN_NORMAL,
    NO_TOUCH, SMALL_DIRECTION, STATUS_CONTACT, STATUS_MISS, STATUS_OVERLAPPING, SweepDispatch,
    SweepParams, TIME_MISS_BITS, TIME_OVERLAPPING, TINY_EXPONENT, WORKGROUP_SIZE,
};

pub(crate) fn miss() -> ImpactRecord {
    ImpactRecord {
        point: [0.0; 3],
        time_of_impact: 0.0,
        normal: [0.0; 3],
        status: STATUS_MISS,
    }
}

// Unit vector from the first centre to the second. Coincident centres (point bodies at
// contact, identical bodies) have no such direction: fall back to the relative motion, then +x.
pub(crate) fn contact_normal(separation: Vec3, relative_motion: Vec3) -> Vec3 {
    if separation.dot(separation) >= MIN_NORMAL {
        return direction(separation);
    }
    if relative_motion.dot(relative_motion) >= MIN_NORMAL {
        return direction(relative_motion);
    }
    Vec3::X
}

// v / |v|, for |v|^2 at least MIN_NORMAL. Below SMALL_DIRECTION a component's square may lie
// below MIN_NORMAL, where a device that flushes loses it (and with it the unit length): such
// a v is first scaled by a power of two (exact) so that its largest component lies in [1, 2).
pub(crate) fn direction(v: Vec3) -> Vec3 {
    let largest = largest_component(v);
    if largest < SMALL_DIRECTION {
        return (v * power_of_two_scale(largest)).normalize();
    }
    v.normalize()
}

pub(crate) fn largest_component(v: Vec3) -> f32 {
    v.x.abs().max(v.y.abs()).max(v.z.abs())
}

// The power of two that brings `largest` (>= 0, below 2^127) into [1, 2): 2^(127 - E) for
// the biased exponent E of `largest`. Zero and subnormals (E = 0) get 2^127.
pub(crate) fn power_of_two_scale(largest: f32) -> f32 {
    let biased_exponent = (largest.to_bits() >> 23) & 0xff;
    f32::from_bits((254 - biased_exponent) << 23)
}

/// `exponent_fields` of `shared.wgsl`: the exponent field of each component of `v` (0 for zero
/// and subnormals), read from bits.
#[must_use]
pub fn exponent_fields(v: Vec3) -> UVec3 {
    UVec3::from_array(v.to_array().map(|x| (x.to_bits() >> 23) & 0xff))
}

/// `lift_for` of `shared.wgsl`: [`LIFT_LOG2`] for each component whose exponent field (the
/// largest of its operands') is below [`TINY_EXPONENT`], 0 for the others.
#[must_use]
pub fn lift_for(exponents: UVec3) -> UVec3 {
    UVec3::select(
        exponents.cmplt(UVec3::splat(TINY_EXPONENT)),
        UVec3::splat(LIFT_LOG2),
        UVec3::ZERO,
    )
}

/// `lift` of `shared.wgsl`: `x * 2^log2` (`log2` is 0 or [`LIFT_LOG2`]; `|x|` below 2⁻⁴⁷ when
/// it is not 0), exactly, built from `x`'s bits: no float operation reads `x`, so a device
/// that flushes subnormal inputs sees none, and the result is normal or zero.
#[must_use]
pub fn lift(x: f32, log2: u32) -> f32 {
    let bits = x.to_bits();
    let exponent = (bits >> 23) & 0xff;
    let mantissa = bits & 0x7f_ffff;
    if log2 == 0 {
        return x;
    }
    if exponent != 0 {
        return f32::from_bits(bits + (log2 << 23));
    }
    // A subnormal, mantissa * 2^-149 with its leading bit at `leading`: normalised, its
    // exponent field is leading - 149 + 127 + log2. Zero (mantissa 0) keeps its bits, with
    // no test of the whole value for zero: LLVM may turn `(bits & 0x7fff_ffff) == 0` into
    // `x == 0.0`, a float comparison that a device flushing subnormal inputs answers true
    // for every subnormal (the dev profile's code did, and left them unlifted).
    let leading = 31 - (mantissa | 1).leading_zeros();
    let fraction = (mantissa << (23 - leading)) & 0x7f_ffff;
    let field = if mantissa != 0 {
        leading + log2 - 22
    } else {
        0
    };
    f32::from_bits((bits & 0x8000_0000) | (field << 23) | fraction)
}

/// [`lift`] per component.
#[must_use]
pub fn lift3(v: Vec3, log2: UVec3) -> Vec3 {
    Vec3::new(lift(v.x, log2.x), lift(v.y, log2.y), lift(v.z, log2.z))
}

/// `unlift` of `shared.wgsl`: `x * 2^-log2` (`log2` at most 23) rounded to nearest, ties to
/// even, built from `x`'s bits: the inverse of [`lift`], a subnormal result included, which a
/// device that flushes could not produce by a multiplication.
#[must_use]
pub fn unlift(x: f32, log2: u32) -> f32 {
    let bits = x.to_bits();
    let exponent = (bits >> 23) & 0xff;
    if log2 == 0 || exponent > log2 {
        return f32::from_bits(bits - (log2 << 23));
    }
    // Below f32::MIN_POSITIVE: the significand, mantissa * 2^(max(exponent, 1) - 150), on the
    // subnormal grid 2^-149 after the division by 2^log2.
    let significand = (bits & 0x7f_ffff) | if exponent > 0 { 0x80_0000 } else { 0 };
    let shift = log2 + 1 - exponent.max(1);
    let kept = significand >> shift;
    let rest = significand & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    let round_up = rest > half || (rest == half && (kept & 1) == 1);
    f32::from_bits((bits & 0x8000_0000) | (kept + u32::from(round_up)))
}

/// [`unlift`] per component.
#[must_use]
pub fn unlift3(v: Vec3, log2: u32) -> Vec3 {
    Vec3::new(unlift(v.x, log2), unlift(v.y, log2), unlift(v.z, log2))
}

/// `rescale` of `shared.wgsl`: `2^(127 - exponent - log2)`, or 0 where that lies below f32's
/// normal range: the rescale of a component lifted by `2^log2` in a pair whose largest
/// unlifted length has the exponent field `exponent` (`power_of_two_scale` without the lift).
#[must_use]
pub fn rescale(exponent: u32, log2: u32) -> f32 {
    if exponent + log2 < 254 {
        f32::from_bits((254 - exponent - log2) << 23)
    } else {
        0.0
    }
}

/// [`rescale`] per component.
#[must_use]
pub fn rescale3(exponent: u32, log2: UVec3) -> Vec3 {
    Vec3::new(
        rescale(exponent, log2.x),
        rescale(exponent, log2.y),
        rescale(exponent, log2.z),
    )
}

/// `unlifted_length_exponent` of `shared.wgsl`: [`unlifted_exponent`] of one length `x`
/// lifted by `2^log2`.
#[must_use]
pub fn unlifted_length_exponent(x: f32, log2: u32) -> u32 {
    unlifted_exponent(Vec3::splat(x), UVec3::splat(log2))
}

/// `unlifted_exponent` of `shared.wgsl`: the exponent field of the largest component of `v`
/// (lifted by `2^log2` per component) before its lift; 0 for zero and subnormals, as
/// `power_of_two_scale` reads them.
#[must_use]
pub fn unlifted_exponent(v: Vec3, log2: UVec3) -> u32 {
    (exponent_fields(v).max(log2) - log2).max_element()
}

/// `body_lift` of `shared.wgsl`: [`LIFT_LOG2`] where all of `body`'s inputs (centre,
/// displacement, radius) lie below 2⁻⁴⁷, else 0.
#[must_use]
pub fn body_lift(body: &BodyRecord) -> u32 {
    let exponents = exponent_fields(Vec3::from_array(body.center))
        .max(exponent_fields(Vec3::from_array(body.displacement)))
        .max(exponent_fields(Vec3::splat(body.radius)));
    lift_for(UVec3::splat(exponents.max_element())).x
}

/// `surface_point` of `shared.wgsl`: the point of `body`'s surface along `normal` at `time`,
/// centre + displacement × time + normal × radius, computed lifted for a body below 2⁻⁴⁷
/// ([`body_lift`]) and put back on f32's grid, subnormal or not, by one rounding to nearest
/// even ([`unlift`]).
#[must_use]
pub fn surface_point(body: &BodyRecord, time: f32, normal: Vec3) -> Vec3 {
    let log2 = body_lift(body);
    let center = lift3(Vec3::from_array(body.center), UVec3::splat(log2))
        + lift3(Vec3::from_array(body.displacement), UVec3::splat(log2)) * time;
    unlift3(center + normal * lift(body.radius, log2), log2)
}

// b's centre relative to a's, each component lifted by 2^`lift` (see `sweep_pair`). In a
// periodic box, relative to the nearest image of b: the image index comes from the rounded
// difference, and the shift is applied to one centre before the subtraction, where it is exact
// (Sterbenz) for centres in [0, period): the one rounding is that of the wrapped difference
// itself, as without a box. Ties (exactly half a box apart) may go either way; validation
// keeps such pairs out of reach of each other. The inverse period takes the lift out of the
// image (it stays the image of the unlifted centres, bit for bit); the period is lifted with
// the centres where it lies below 2^-43, and elsewhere meets only image 0 (lifted centres lie
// less than 2^-46 apart), whose shift `image_offset` discards.
#[inline]
pub(crate) fn center_offset(a: Vec3, b: Vec3, lift: UVec3, params: &SweepParams) -> Vec3 {
    if (params.flags & FLAG_PERIODIC) == 0 {
        return b - a;
    }
    let period = Vec3::from_array(params.period);
    let period_lift = UVec3::select(
        exponent_fields(period).cmplt(UVec3::splat(TINY_EXPONENT + 4)),
        lift,
        UVec3::ZERO,
    );
    let inverse_period = Vec3::from_array(params.inverse_period) * rescale3(127, lift);
    image_offset(
        a,
        b,
        nearest_image(a, b, inverse_period),
        lift3(period, period_lift),
    )
}

/// `image_offset` of `shared.wgsl`: `b` minus `a`, with `b` taken `image` periods away (per
/// axis): `(b - image * period) - a`. The shift is applied to whichever of the two lies near
/// it (`b` for a positive image, `a` for a negative one), where it is exact (Sterbenz) for
/// points in `[0, period)` a period apart: the one rounding is that of the difference itself,
/// as without a box.
#[must_use]
#[inline]
pub fn image_offset(a: Vec3, b: Vec3, image: Vec3, period: Vec3) -> Vec3 {
    let shift_b = Vec3::select(image.cmpgt(Vec3::ZERO), image * period, Vec3::ZERO);
    let shift_a = Vec3::select(image.cmplt(Vec3::ZERO), -image * period, Vec3::ZERO);
    (b - shift_b) - (a - shift_a)
}

// The image of b nearest to a, in periods per axis: b's centre minus the image times the
// period is the nearest. 0 on an axis that does not wrap, whose inverse period is 0.
#[inline]
pub(crate) fn nearest_image(a: Vec3, b: Vec3, inverse_period: Vec3) -> Vec3 {
    ((b - a) * inverse_period).map(f32::round_ties_even)
}

/// `first_touch` of `shared.wgsl`: when a point moving by `motion` from `position` (relative
/// to a fixed point; both scaled so that no square overflows) first comes within `radius` of
/// it: the time in [0, 1], 0 if it already is, or [`NO_TOUCH`] (above 1) if it never is in
/// the step. The core of the pair sweep, shared with the walls (an end point, or a line
/// across which only the components count).
#[must_use]
#[inline]
pub fn first_touch(position: Vec3, motion: Vec3, radius: f32) -> f32 {
    let radius_squared = radius * radius;
    let distance_squared = position.dot(position);
    let gap_product = distance_squared - radius_squared;
    if gap_product <= 0.0 {
        return 0.0;
    }
    let motion_squared = motion.dot(motion);
    // Early escape: the movement is shorter than the gap, |V| < |C| - R.
    let reach = motion_squared.sqrt() + radius;
    if reach * reach < distance_squared {
        return NO_TOUCH;
    }
    // Early escape: not moving towards the point (zero relative motion lands here too).
    let approach = position.dot(motion);
    if approach <= 0.0 {
        return NO_TOUCH;
    }
    // Early escape: closest approach beyond the radius. |C x V|^2 is |V|^2 times the
    // squared closest distance, without the source's |C|^2 - D^2 cancellation.
    let offset = position.cross(motion);
    let discriminant = motion_squared * radius_squared - offset.dot(offset);
    if discriminant < 0.0 {
        return NO_TOUCH;
    }
    // The smaller root of |C - V t|^2 = R^2 in its stable form: every term is positive,
    // so nothing cancels (the source's D - sqrt(T) does) and the divisor is > 0.
    let mut time_of_impact = gap_product / (approach + discriminant.sqrt());
    // The first root never comes after the vertex approach / motion_squared of |C - V t|^2.
    // Where rounding has made a slightly negative discriminant 0 (bodies touching at
    // t = 0 and sliding apart), the quotient above is noise over noise: the vertex, where
    // the bodies come closest, is the answer the bound allows. (motion_squared > 0 here
    // whenever the test holds, so the division is guarded.)
    if time_of_impact * motion_squared > approach {
        time_of_impact = approach / motion_squared;
    }
    // Final check: contact must come within this step (written so that NaN misses).
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(time_of_impact <= 1.0) {
        return NO_TOUCH;
    }
    time_of_impact
}

/// `sweep_pair` of the shader: the impact record of bodies `a` and `b`.
#[must_use]
#[inline]
pub fn sweep_pair(a: &BodyRecord, b: &BodyRecord, params: &SweepParams) -> ImpactRecord {
    let (a_center, b_center) = (Vec3::from_array(a.center), Vec3::from_array(b.center));
    let (a_displacement, b_displacement) = (
        Vec3::from_array(a.displacement),
        Vec3::from_array(b.displacement),
    );
    // Relative coordinates first: b stands still and a moves by the difference of the
    // displacements. Nothing below squares an absolute coordinate. Validation keeps every
    // input within f32::MAX / 8, so these differences and sums are finite.
    // A device may flush subnormal values to zero (WGSL allows it): each component whose
    // operands all lie below 2^-47 is first lifted by 2^LIFT_LOG2 from its bits (`lift`), which
    // makes the difference exact and never subnormal, as it is on an IEEE device; the rescale
    // takes the lift out again. Elsewhere the lift is 0 and changes nothing.
    let position_lift = lift_for(exponent_fields(a_center).max(exponent_fields(b_center)));
    let motion_lift =
        lift_for(exponent_fields(a_displacement).max(exponent_fields(b_displacement)));
    let radii_lift = lift_for(UVec3::splat(
        exponent_fields(Vec3::new(a.radius, b.radius, 0.0)).max_element(),
    ))
    .x;
    let raw_position = center_offset(
        lift3(a_center, position_lift),
        lift3(b_center, position_lift),
        position_lift,
        params,
    );
    let raw_motion = lift3(a_displacement, motion_lift) - lift3(b_displacement, motion_lift);
    let raw_sum_radii = lift(a.radius, radii_lift) + lift(b.radius, radii_lift);
    // Rescale by a power of two (exact) so that the largest relative length lies in [1, 2):
    // no square or product below can overflow, and none that matters underflows. The time,
    // a ratio, does not change; the normal is a direction. The power comes from the exponent
    // fields of the unlifted lengths (`power_of_two_scale` of the largest), each component's
    // lift taken out of its own factor.
    let exponent = unlifted_exponent(raw_position, position_lift)
        .max(unlifted_exponent(raw_motion, motion_lift))
        .max(unlifted_length_exponent(raw_sum_radii, radii_lift));
    let relative_position = raw_position * rescale3(exponent, position_lift);
    let relative_motion = raw_motion * rescale3(exponent, motion_lift);
    let sum_radii = raw_sum_radii * rescale(exponent, radii_lift);
    let sum_radii_squared = sum_radii * sum_radii;
    let distance_squared = relative_position.dot(relative_position);
    // |C|^2 - R^2: zero or below means touching or overlapping at t = 0.
    let gap_product = distance_squared - sum_radii_squared;

    let mut time_of_impact = 0.0;
    let status;
    if gap_product <= 0.0 {
        // Touching or overlapping at t = 0 and not moving towards each other: under the
        // separating option (event-driven simulations, after a collision is resolved) the
        // pair only moves apart, so it is no hit.
        let separating = relative_position.dot(relative_motion) <= 0.0;
        if (params.flags & FLAG_SEPARATING_MISSES) != 0 && separating {
            return miss();
        }
        status = if gap_product < 0.0 {
            STATUS_OVERLAPPING
        } else {
            STATUS_CONTACT
        };
    } else {
        time_of_impact = first_touch(relative_position, relative_motion, sum_radii);
        if time_of_impact > 1.0 {
            return miss();
        }
        status = STATUS_CONTACT;
    }

    let separation = relative_position - relative_motion * time_of_impact;
    let normal = contact_normal(separation, relative_motion);
    ImpactRecord {
        point: surface_point(a, time_of_impact, normal).to_array(),
        time_of_impact,
        normal: normal.to_array(),
        status,
    }
}

/// `main` of the shader for one invocation: the pair at `index` of a dispatch (nothing past
/// `dispatch.pair_count`), gathered from `bodies` and `pairs`, swept, written to `impacts`.
///
/// # Panics
/// If a pair names a body past `bodies` (the GPU's robust access would read something else;
/// validation keeps such pairs out of every path).
pub fn main(
    index: u32,
    bodies: &[BodyRecord],
    pairs: &[[u32; 2]],
    impacts: &mut [ImpactRecord],
    params: &SweepParams,
    dispatch: &SweepDispatch,
) {
    if index >= dispatch.pair_count {
        return;
    }
    let pair = pairs[index as usize];
    impacts[index as usize] =
        sweep_pair(&bodies[pair[0] as usize], &bodies[pair[1] as usize], params);
}

/// `encode_time` of the shader: a record in the times-only encoding, as the bits of an f32.
#[must_use]
pub fn encode_time(record: &ImpactRecord) -> u32 {
    if record.status == STATUS_MISS {
        return TIME_MISS_BITS;
    }
    if record.status == STATUS_OVERLAPPING {
        return TIME_OVERLAPPING.to_bits();
    }
    record.time_of_impact.to_bits()
}

/// `times_main` of the shader for one invocation: [`main`] with the times-only output, 4
/// bytes a pair (the shader's `array<u32>` holds the bits of a [`TimeOfImpact`]).
///
/// # Panics
/// As [`main`].
pub fn times_main(
    index: u32,
    bodies: &[BodyRecord],
    pairs: &[[u32; 2]],
    times: &mut [TimeOfImpact],
    params: &SweepParams,
    dispatch: &SweepDispatch,
) {
    if index >= dispatch.pair_count {
        return;
    }
    let pair = pairs[index as usize];
    times[index as usize] = bytemuck::cast(encode_time(&sweep_pair(
        &bodies[pair[0] as usize],
        &bodies[pair[1] as usize],
        params,
    )));
}

/// Every invocation index the GPU would run for `dispatch`, in order.
fn invocations(dispatch: &SweepDispatch) -> std::ops::Range<u32> {
    0..dispatch.workgroups_x * dispatch.workgroups_y * WORKGROUP_SIZE
}

/// The whole dispatch of [`main`]: every invocation the GPU would run, in order.
pub fn run_dispatch(
    bodies: &[BodyRecord],
    pairs: &[[u32; 2]],
    impacts: &mut [ImpactRecord],
    params: &SweepParams,
    dispatch: &SweepDispatch,
) {
    for index in invocations(dispatch) {
        main(index, bodies, pairs, impacts, params, dispatch);
    }
}

/// The whole dispatch of [`times_main`]: every invocation the GPU would run, in order.
pub fn run_times_dispatch(
    bodies: &[BodyRecord],
    pairs: &[[u32; 2]],
    times: &mut [TimeOfImpact],
    params: &SweepParams,
    dispatch: &SweepDispatch,
) {
    for index in invocations(dispatch) {
        times_main(index, bodies, pairs, times, params, dispatch);
    }
}

/// `prepare_indirect` of the shader: caps `dispatch.requested_pairs` at the capacity, flags
/// an overflow and writes the workgroups to run.
pub fn prepare_indirect(dispatch: &mut SweepDispatch, params: &SweepParams) {
    let requested = dispatch.requested_pairs;
    let capped = SweepDispatch::new(requested.min(params.pair_capacity));
    *dispatch = SweepDispatch {
        requested_pairs: requested,
        overflowed: u32::from(requested > capped.pair_count),
        ..capped
    };
}
