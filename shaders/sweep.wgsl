// sweep.wgsl: one invocation per candidate pair; when do its two bodies first touch?
// shared.wgsl (the structs and constants) is prepended to this file.
//
// The method is Pool Hall Lessons' swept test (dynamic-static with early escapes, the
// dynamic-dynamic case by relative motion, 3D by the same algebra, 2D as z = 0), with the
// source's unstable formulas replaced by stable ones. Its Rust twin, line for line, is
// src/cpu/sweep.rs; its f64 oracle is src/reference.rs. Change the three together.

@group(0) @binding(0) var<storage, read> bodies: array<BodyRecord>;
@group(0) @binding(1) var<storage, read> pairs: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> impacts: array<ImpactRecord>;
@group(0) @binding(3) var<uniform> params: SweepParams;
@group(0) @binding(4) var<storage, read> dispatch: SweepDispatch;
// The same buffer as `dispatch`, written by `prepare_indirect` (in a bind group of its own).
@group(0) @binding(5) var<storage, read_write> dispatch_out: SweepDispatch;
// The times-only output of `times_main` (in a bind group of its own, without `impacts`).
@group(0) @binding(6) var<storage, read_write> times: array<u32>;

// b's centre relative to a's, each component lifted by 2^lift (see `sweep_pair`). In a
// periodic box, relative to the nearest image of b: the image index comes from the rounded
// difference, and the shift is applied to one centre before the subtraction, where it is exact
// (Sterbenz) for centres in [0, period): the one rounding is that of the wrapped difference
// itself, as without a box. Ties (exactly half a box apart) may go either way; validation
// keeps such pairs out of reach of each other. The inverse period takes the lift out of the
// image (it stays the image of the unlifted centres, bit for bit); the period is lifted with
// the centres where it lies below 2^-43, and elsewhere meets only image 0 (lifted centres lie
// less than 2^-46 apart), whose shift `image_offset` discards.
fn center_offset(a: vec3<f32>, b: vec3<f32>, lift: vec3<u32>) -> vec3<f32> {
    if ((params.flags & FLAG_PERIODIC) == 0u) {
        return b - a;
    }
    let period_lift = select(vec3<u32>(0u), lift,
                             exponent_fields(params.period) < vec3<u32>(TINY_EXPONENT + 4u));
    let inverse_period = params.inverse_period * rescale3(127u, lift);
    return image_offset(a, b, nearest_image(a, b, inverse_period), lift3(params.period, period_lift));
}

// The image of b nearest to a, in periods per axis (round is half to even). 0 on an axis
// that does not wrap, whose inverse period is 0.
fn nearest_image(a: vec3<f32>, b: vec3<f32>, inverse_period: vec3<f32>) -> vec3<f32> {
    return round((b - a) * inverse_period);
}

fn sweep_pair(a: BodyRecord, b: BodyRecord) -> ImpactRecord {
    // Relative coordinates first: b stands still and a moves by the difference of the
    // displacements. Nothing below squares an absolute coordinate. Validation keeps every
    // input within f32::MAX / 8, so these differences and sums are finite.
    // A device may flush subnormal values to zero (WGSL allows it): each component whose
    // operands all lie below 2^-47 is first lifted by 2^LIFT_LOG2 from its bits (`lift`), which
    // makes the difference exact and never subnormal, as it is on an IEEE device; the rescale
    // takes the lift out again. Elsewhere the lift is 0 and changes nothing.
    let position_lift = lift_for(max(exponent_fields(a.center), exponent_fields(b.center)));
    let motion_lift = lift_for(max(exponent_fields(a.displacement), exponent_fields(b.displacement)));
    let radii_exponents = exponent_fields(vec3<f32>(a.radius, b.radius, 0.0));
    let radii_lift = lift_for(vec3<u32>(max(radii_exponents.x, radii_exponents.y))).x;
    let raw_position = center_offset(lift3(a.center, position_lift), lift3(b.center, position_lift),
                                     position_lift);
    let raw_motion = lift3(a.displacement, motion_lift) - lift3(b.displacement, motion_lift);
    let raw_sum_radii = lift(a.radius, radii_lift) + lift(b.radius, radii_lift);
    // Rescale by a power of two (exact) so that the largest relative length lies in [1, 2):
    // no square or product below can overflow, and none that matters underflows. The time,
    // a ratio, does not change; the normal is a direction. The power comes from the exponent
    // fields of the unlifted lengths (`power_of_two_scale` of the largest), each component's
    // lift taken out of its own factor.
    let exponent = max(max(unlifted_exponent(raw_position, position_lift),
                           unlifted_exponent(raw_motion, motion_lift)),
                       unlifted_length_exponent(raw_sum_radii, radii_lift));
    let relative_position = raw_position * rescale3(exponent, position_lift);
    let relative_motion = raw_motion * rescale3(exponent, motion_lift);
    let sum_radii = raw_sum_radii * rescale(exponent, radii_lift);
    let sum_radii_squared = sum_radii * sum_radii;
    let distance_squared = dot(relative_position, relative_position);
    // |C|^2 - R^2: zero or below means touching or overlapping at t = 0.
    let gap_product = distance_squared - sum_radii_squared;

    var time_of_impact = 0.0;
    var status = STATUS_OVERLAPPING;
    if (gap_product <= 0.0) {
        // Touching or overlapping at t = 0 and not moving towards each other: under the
        // separating option (event-driven simulations, after a collision is resolved) the
        // pair only moves apart, so it is no hit.
        let separating = dot(relative_position, relative_motion) <= 0.0;
        if ((params.flags & FLAG_SEPARATING_MISSES) != 0u && separating) {
            return miss();
        }
        status = select(STATUS_CONTACT, STATUS_OVERLAPPING, gap_product < 0.0);
    } else {
        time_of_impact = first_touch(relative_position, relative_motion, sum_radii);
        if (time_of_impact > 1.0) {
            return miss();
        }
        status = STATUS_CONTACT;
    }

    let separation = relative_position - relative_motion * time_of_impact;
    let normal = contact_normal(separation, relative_motion);
    return ImpactRecord(surface_point(a, time_of_impact, normal), time_of_impact, normal, status);
}

// One invocation: the pair count comes from `dispatch`, written by the host for a direct
// dispatch or by `prepare_indirect` from the caller's count buffer.

@compute @workgroup_size(WORKGROUP_SIZE)
fn main(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let index = linear_index(id, workgroups.x);
    if (index >= dispatch.pair_count) {
        return;
    }
    let pair = pairs[index];
    impacts[index] = sweep_pair(bodies[pair.x], bodies[pair.y]);
}

// A record in the times-only encoding of shared.wgsl: 4 bytes instead of 32.
fn encode_time(record: ImpactRecord) -> u32 {
    if (record.status == STATUS_MISS) {
        return TIME_MISS_BITS;
    }
    if (record.status == STATUS_OVERLAPPING) {
        return bitcast<u32>(TIME_OVERLAPPING);
    }
    return bitcast<u32>(record.time_of_impact);
}

// `main` with the times-only output: what an earliest-impact reduction needs, 4 bytes a pair.
// The point and normal of `sweep_pair` are computed for nothing but never stored, so the
// shader compiler drops them (after inlining, they are dead code).
@compute @workgroup_size(WORKGROUP_SIZE)
fn times_main(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let index = linear_index(id, workgroups.x);
    if (index >= dispatch.pair_count) {
        return;
    }
    let pair = pairs[index];
    times[index] = encode_time(sweep_pair(bodies[pair.x], bodies[pair.y]));
}

// One invocation before an indirect sweep: caps the requested count (copied into
// `requested_pairs` from the caller's buffer) at the capacity, flags an overflow, and writes
// the workgroups to run, in two dimensions when one is not enough.
@compute @workgroup_size(1)
fn prepare_indirect() {
    let requested = dispatch_out.requested_pairs;
    let pair_count = min(requested, params.pair_capacity);
    let workgroups = workgroups_for(pair_count);
    dispatch_out.workgroups_x = workgroups.x;
    dispatch_out.workgroups_y = workgroups.y;
    dispatch_out.workgroups_z = workgroups.z;
    dispatch_out.pair_count = pair_count;
    dispatch_out.overflowed = select(0u, 1u, requested > pair_count);
}
