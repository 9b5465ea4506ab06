//! The f32 twin of `shaders/walls.wgsl`, line for line, entry point included: each body's
//! earliest impact on the step's static walls ([`Wall`](crate::Wall): segments and planes),
//! in a periodic box that of its image in the primary cell ([`path_in_box`],
//! [`sweep_wall_in_box`]). Its f64 oracle is [`crate::reference::sweep_sphere_wall`].

use glam::{BVec3, IVec3, UVec3, Vec3};

use super::sweep::{
    body_lift, contact_normal, exponent_fields, first_touch, lift, lift_for, lift3, miss, rescale,
    rescale3, surface_point, unlift, unlift3, unlifted_exponent, unlifted_length_exponent,
};
use crate::layout::{
    BodyRecord, FLAG_PERIODIC, FLAG_SEPARATING_MISSES, ImpactRecord, MIN_NORMAL, NO_TOUCH,
    STATUS_CONTACT, STATUS_MISS, STATUS_OVERLAPPING, WALL_PLANE, WallContactRecord, WallParams,
    WallRecord,
};

// The record of the body touching or overlapping the wall at t = 0, the wall lying along
// `towards` from its centre (scaled): a miss under the separating option when the body is
// not moving towards the wall.
fn at_start(
    body: &BodyRecord,
    towards: Vec3,
    motion: Vec3,
    overlapping: bool,
    params: &WallParams,
) -> ImpactRecord {
    if (params.flags & FLAG_SEPARATING_MISSES) != 0 && towards.dot(motion) <= 0.0 {
        return miss();
    }
    let normal = contact_normal(towards, motion);
    // The centre's point along the normal, lifted as `surface_point` lifts it.
    let log2 = body_lift(body);
    let point =
        lift3(Vec3::from_array(body.center), UVec3::splat(log2)) + normal * lift(body.radius, log2);
    ImpactRecord {
        point: unlift3(point, log2).to_array(),
        time_of_impact: 0.0,
        normal: normal.to_array(),
        status: if overlapping {
            STATUS_OVERLAPPING
        } else {
            STATUS_CONTACT
        },
    }
}

// The body's displacement and radius, each component lifted by 2^log2 where it lies below
// 2^-47 (as `sweep_pair` lifts its inputs), with the lifts.
fn lifted_motion(body: &BodyRecord) -> (Vec3, UVec3, f32, u32) {
    let displacement = Vec3::from_array(body.displacement);
    let motion_lift = lift_for(exponent_fields(displacement));
    let radius_lift = lift_for(exponent_fields(Vec3::splat(body.radius))).x;
    (
        lift3(displacement, motion_lift),
        motion_lift,
        lift(body.radius, radius_lift),
        radius_lift,
    )
}

// The body against a plane, its centre at `raw_offset` from the plane's point (each
// component lifted by 2^offset_lift).
fn sweep_plane(
    body: &BodyRecord,
    raw_offset: Vec3,
    offset_lift: UVec3,
    wall: &WallRecord,
    params: &WallParams,
) -> ImpactRecord {
    let (displacement, motion_lift, radius, radius_lift) = lifted_motion(body);
    // The relative coordinates, rescaled by a power of two (exact) as the pair sweep does,
    // so that nothing below overflows or flushes to zero on one path and not another; the
    // power from the bits, each component's lift taken out of its own factor.
    let exponent = unlifted_exponent(raw_offset, offset_lift)
        .max(unlifted_exponent(displacement, motion_lift))
        .max(unlifted_length_exponent(radius, radius_lift));
    let normal = Vec3::from_array(wall.vector);
    let motion = displacement * rescale3(exponent, motion_lift);
    // The centre's height above the plane, and how far it falls towards it over the step.
    let height = normal.dot(raw_offset * rescale3(exponent, offset_lift));
    let fall = -normal.dot(motion);
    let gap = height - radius * rescale(exponent, radius_lift);
    if gap <= 0.0 {
        return at_start(body, -normal, motion, gap < 0.0, params);
    }
    // The gap closes at gap / fall (written so that no fall, and NaN, miss).
    let time_of_impact = gap / fall;
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(fall > 0.0) || !(time_of_impact <= 1.0) {
        return miss();
    }
    ImpactRecord {
        point: surface_point(body, time_of_impact, -normal).to_array(),
        time_of_impact,
        normal: (-normal).to_array(),
        status: STATUS_CONTACT,
    }
}

// The body against a segment, its end points at `raw_to_start` and `raw_to_end` from the
// body's centre (each component lifted by 2^start_lift, 2^end_lift).
fn sweep_segment(
    body: &BodyRecord,
    (raw_to_start, start_lift): (Vec3, UVec3),
    (raw_to_end, end_lift): (Vec3, UVec3),
    wall: &WallRecord,
    params: &WallParams,
) -> ImpactRecord {
    let (displacement, motion_lift, radius, radius_lift) = lifted_motion(body);
    let (start, end) = (Vec3::from_array(wall.point), Vec3::from_array(wall.vector));
    let edge_lift = lift_for(exponent_fields(start).max(exponent_fields(end)));
    let raw_edge = lift3(end, edge_lift) - lift3(start, edge_lift);
    // Relative to the body's centre: the end points, and the edge between them.
    let exponent = unlifted_exponent(raw_to_start, start_lift)
        .max(unlifted_exponent(raw_to_end, end_lift))
        .max(unlifted_exponent(displacement, motion_lift))
        .max(unlifted_length_exponent(radius, radius_lift));
    let to_start = raw_to_start * rescale3(exponent, start_lift);
    let to_end = raw_to_end * rescale3(exponent, end_lift);
    let edge = raw_edge * rescale3(exponent, edge_lift);
    let motion = displacement * rescale3(exponent, motion_lift);
    let radius = radius * rescale(exponent, radius_lift);
    let edge_squared = edge.dot(edge);
    // A segment too short to give a direction is its start point.
    let has_edge = edge_squared >= MIN_NORMAL;

    // At t = 0: the segment's nearest point.
    let mut along = 0.0;
    if has_edge {
        along = (-edge.dot(to_start) / edge_squared).clamp(0.0, 1.0);
    }
    let nearest = to_start + edge * along;
    let nearest_gap = nearest.dot(nearest) - radius * radius;
    if nearest_gap <= 0.0 {
        return at_start(body, nearest, motion, nearest_gap < 0.0, params);
    }

    // The end balls, then the side; the earliest wins (an end on a tie).
    let mut time_of_impact = first_touch(to_start, motion, radius);
    let mut position = to_start;
    let mut moving = motion;
    let end_time = first_touch(to_end, motion, radius);
    if end_time < time_of_impact {
        time_of_impact = end_time;
        position = to_end;
    }
    if has_edge {
        // The components across the edge: the sweep of a point against the segment's line.
        let side = to_start - edge * (edge.dot(to_start) / edge_squared);
        let side_motion = motion - edge * (edge.dot(motion) / edge_squared);
        // A path that starts within reach of the line can meet the segment only at an end.
        if side.dot(side) > radius * radius {
            let side_time = first_touch(side, side_motion, radius);
            // Where the centre then projects on the segment, from its start.
            let projection = edge.dot(motion * side_time - to_start) / edge_squared;
            if side_time < time_of_impact && (0.0..=1.0).contains(&projection) {
                time_of_impact = side_time;
                position = side;
                moving = side_motion;
            }
        }
    }
    if time_of_impact > 1.0 {
        return miss();
    }
    let normal = contact_normal(position - moving * time_of_impact, motion);
    ImpactRecord {
        point: surface_point(body, time_of_impact, normal).to_array(),
        time_of_impact,
        normal: normal.to_array(),
        status: STATUS_CONTACT,
    }
}

/// `sweep_wall` of the shader: the body against one wall in open space, the body first, the
/// wall second (the normal points from the body's centre towards the wall).
#[must_use]
pub fn sweep_wall(body: &BodyRecord, wall: &WallRecord, params: &WallParams) -> ImpactRecord {
    // Each component of an offset whose operands both lie below 2^-47 is lifted first, as in
    // `sweep_pair`, so that a device that flushes subnormal values forms it exactly.
    let (center, point) = (Vec3::from_array(body.center), Vec3::from_array(wall.point));
    let lifted_offset = |to: Vec3, from: Vec3| {
        let log2 = lift_for(exponent_fields(to).max(exponent_fields(from)));
        (lift3(to, log2) - lift3(from, log2), log2)
    };
    if wall.kind == WALL_PLANE {
        let (offset, log2) = lifted_offset(center, point);
        return sweep_plane(body, offset, log2, wall, params);
    }
    let end = Vec3::from_array(wall.vector);
    let to_start = lifted_offset(point, center);
    sweep_segment(body, to_start, lifted_offset(end, center), wall, params)
}

// WGSL's `select` of two boolean vectors: `if_true` where `mask` holds, else `if_false`.
fn select_mask(mask: BVec3, if_true: BVec3, if_false: BVec3) -> BVec3 {
    (mask & if_true) | (!mask & if_false)
}

/// `Path` of the shader: a body's step in the periodic box, as the walls see it.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Path {
    /// Per axis: the image (in periods) whose centre lies in the primary cell at t = 0.
    pub image: Vec3,
    /// Per axis: when the centre crosses a face of the cell, or [`NO_TOUCH`] if not in the
    /// step.
    pub crossing: Vec3,
    /// Per axis: how the image changes there (1 moving up, -1 moving down, 0 without one).
    pub step: Vec3,
}

/// `path_in_box` of the shader: where `body`'s step lies in the periodic box of `params`.
/// On each axis where the centre, the displacement and the period all lie below 2⁻⁴⁷ they
/// are lifted by 2^`LIFT_LOG2` first (as `sweep_pair` lifts its inputs), so that a device
/// that flushes subnormal values finds the same image and crossing (a time, which the lift
/// leaves as it is).
#[must_use]
pub fn path_in_box(body: &BodyRecord, params: &WallParams) -> Path {
    let (raw_center, raw_displacement, raw_period) = (
        Vec3::from_array(body.center),
        Vec3::from_array(body.displacement),
        Vec3::from_array(params.period),
    );
    let log2 = lift_for(
        exponent_fields(raw_center)
            .max(exponent_fields(raw_displacement))
            .max(exponent_fields(raw_period)),
    );
    let (center, displacement, period) = (
        lift3(raw_center, log2),
        lift3(raw_displacement, log2),
        lift3(raw_period, log2),
    );
    let wraps = period.cmpgt(Vec3::ZERO);
    // floor(centre / period), put right where the product has rounded across a face, so that
    // a centre in [0, period) is its own image (0) and `in_cell` below is exact for it. The
    // upper face is compared with the centre itself ((image + 1) × period is exact for the
    // images -1, 0 and 1), so that a centre below the cell by less than half an ulp of the
    // period keeps its image -1, as in exact arithmetic, though its image in the cell rounds
    // onto the upper face. Against the face at the origin the centre's sign is read from its
    // bits (lifted where it lies below 2^-47), which a device that flushes it keeps.
    let inverse_period = Vec3::from_array(params.inverse_period) * rescale3(127, log2);
    let signed = lift3(center, lift_for(exponent_fields(center)));
    let mut image = (center * inverse_period).floor();
    let below = wraps
        & select_mask(
            image.cmpeq(Vec3::ZERO),
            signed.cmplt(Vec3::ZERO),
            (center - image * period).cmplt(Vec3::ZERO),
        );
    image -= Vec3::select(below, Vec3::ONE, Vec3::ZERO);
    let above = wraps
        & select_mask(
            image.cmpeq(Vec3::NEG_ONE),
            signed.cmpge(Vec3::ZERO),
            center.cmpge((image + Vec3::ONE) * period),
        );
    image += Vec3::select(above, Vec3::ONE, Vec3::ZERO);
    // The centre itself (its bits) where the image is 0.
    let shifted = center - image * period;
    let in_cell = Vec3::select(image.cmpeq(Vec3::ZERO), center, shifted);
    // The face ahead: the upper one moving up, the lower one moving down. A centre that
    // rounding leaves just past it crosses at t = 0. The direction from the displacement's
    // bits. Moving down, the distance is the centre in the cell; moving up from the image -1,
    // the centre's negation (the face is the origin: exact, where the period less the centre
    // in the cell would round); the distance and the speed are then lifted together where
    // both lie below 2^-47 (in a period that is not), so that a crossing by less than f32's
    // smallest normal is found as on an IEEE device. Moving up otherwise, the face lies at
    // least an ulp of the period away (2^-70 or more), beyond such a speed.
    let moving_up = lift3(displacement, lift_for(exponent_fields(displacement))).cmpgt(Vec3::ZERO);
    let from_below = moving_up & image.cmpeq(Vec3::NEG_ONE);
    // The centre's own bits where the image is 0 or the face is the origin, chosen after the
    // lift, so that no float operation reads them (as `sweep_image` chooses its operands).
    let own = image.cmpeq(Vec3::ZERO) | from_below;
    let near_exponents = UVec3::select(own, exponent_fields(center), exponent_fields(shifted));
    let near_lift = lift_for(near_exponents.max(exponent_fields(displacement)));
    let lifted_near = Vec3::select(own, lift3(center, near_lift), lift3(shifted, near_lift));
    let plain_up = moving_up & !from_below;
    let ahead = Vec3::select(
        plain_up,
        period - in_cell,
        Vec3::select(from_below, -lifted_near, lifted_near),
    );
    let speed = Vec3::select(plain_up, displacement, lift3(displacement, near_lift)).abs();
    let crosses = wraps & speed.cmpgt(Vec3::ZERO) & ahead.cmple(speed);
    let crossing = Vec3::select(
        crosses,
        (ahead / speed).clamp(Vec3::ZERO, Vec3::ONE),
        Vec3::splat(NO_TOUCH),
    );
    let step = Vec3::select(
        crosses,
        Vec3::select(moving_up, Vec3::ONE, Vec3::NEG_ONE),
        Vec3::ZERO,
    );
    Path {
        image,
        crossing,
        step,
    }
}

// The body's image `image` periods away (per axis), from `start` to the end of the step,
// against one wall. The offsets between the image and the wall are formed before any
// position is moved (as `image_offset`: the shift taken from the centre for a positive image,
// from the wall's points for a negative one, exact for a body in the cell crossing a face and
// a wall near the face it reaches), and the image's motion up to `start` is added to them, so
// that they round as open space's do. Each component whose operands (the centre, the
// displacement, the shift by the image and the wall's points) all lie below 2^-47 is lifted
// first, as in open space; so is, on another axis, each whose shifted operands (the centre
// and the wall's points less their shifts, exact there and normal or zero) and displacement
// all do: a centre on a face of the cell and a wall point within 2^-47 of it, whose difference
// a device that flushes would lose. The piece's centre and displacement are put back from
// the lift with one rounding to nearest even. The impact's time is of the piece: 0 at `start`.
fn sweep_image(
    body: &BodyRecord,
    wall: &WallRecord,
    image: Vec3,
    start: f32,
    params: &WallParams,
) -> ImpactRecord {
    let (raw_center, raw_displacement, raw_period) = (
        Vec3::from_array(body.center),
        Vec3::from_array(body.displacement),
        Vec3::from_array(params.period),
    );
    let (raw_point, raw_end) = (Vec3::from_array(wall.point), Vec3::from_array(wall.vector));
    let segment = wall.kind != WALL_PLANE;
    // The shift by the image (0 where the image is, the period infinite or not).
    let shift = Vec3::select(image.cmpne(Vec3::ZERO), image * raw_period, Vec3::ZERO);
    let mut exponents = exponent_fields(raw_center)
        .max(exponent_fields(raw_displacement))
        .max(exponent_fields(shift))
        .max(exponent_fields(raw_point));
    if segment {
        exponents = exponents.max(exponent_fields(raw_end));
    }
    let log2 = lift_for(exponents);
    // The period lifted with the rest where it lies below 2^-47 too; elsewhere the image is 0
    // on a lifted axis, and the shift 0 either way.
    let period = lift3(
        raw_period,
        lift_for(exponents.max(exponent_fields(raw_period))),
    );
    let (center, displacement) = (lift3(raw_center, log2), lift3(raw_displacement, log2));
    let (point, end) = (lift3(raw_point, log2), lift3(raw_end, log2));
    // The centre and the wall's points less their shifts, and their own bits where there is
    // none, chosen after the second lift below, so that no float operation reads an unshifted
    // subnormal (`x - 0` is 0 for one on a device that flushes).
    let (shifts_center, shifts_wall) = (image.cmpgt(Vec3::ZERO), image.cmplt(Vec3::ZERO));
    let near = |shifts: BVec3, own: Vec3, shifted: Vec3| {
        let exponents = UVec3::select(shifts, exponent_fields(shifted), exponent_fields(own));
        ((shifts, own, shifted), exponents)
    };
    let (center_parts, center_exponents) = near(shifts_center, center, center - image * period);
    let (point_parts, point_exponents) = near(shifts_wall, point, point + image * period);
    let (end_parts, end_exponents) = near(shifts_wall, end, end + image * period);
    // The second lift, on the axes the first left as they are.
    let mut near_exponents = center_exponents
        .max(point_exponents)
        .max(exponent_fields(displacement));
    if segment {
        near_exponents = near_exponents.max(end_exponents);
    }
    let second = UVec3::select(
        log2.cmpeq(UVec3::ZERO),
        lift_for(near_exponents),
        UVec3::ZERO,
    );
    let lifted = |(shifts, own, shifted): (BVec3, Vec3, Vec3)| {
        Vec3::select(shifts, lift3(shifted, second), lift3(own, second))
    };
    let offset_lift = log2 + second;
    let moved = lift3(displacement, second) * start;
    let piece = BodyRecord {
        center: unlift_each(center - image * period + displacement * start, log2).to_array(),
        radius: body.radius,
        displacement: unlift_each(lift3(displacement, second) * (1.0 - start), offset_lift)
            .to_array(),
        groups: 0,
    };
    let (near_center, near_point) = (lifted(center_parts), lifted(point_parts));
    if !segment {
        let raw_offset = near_center - near_point + moved;
        return sweep_plane(&piece, raw_offset, offset_lift, wall, params);
    }
    let raw_to_start = near_point - near_center - moved;
    let raw_to_end = lifted(end_parts) - near_center - moved;
    sweep_segment(
        &piece,
        (raw_to_start, offset_lift),
        (raw_to_end, offset_lift),
        wall,
        params,
    )
}

// `unlift` per component, each by its own lift.
fn unlift_each(v: Vec3, log2: UVec3) -> Vec3 {
    Vec3::new(
        unlift(v.x, log2.x),
        unlift(v.y, log2.y),
        unlift(v.z, log2.z),
    )
}

/// `sweep_wall_in_box` of the shader: the body against one wall in the periodic box of
/// `params`, along its `path` ([`path_in_box`]). The step in pieces, cut where the centre
/// crosses a face of the cell (piece 0 from t = 0, then one from each crossing, in the order
/// of time and then axis); on each, the image then in the cell, swept from the piece's
/// start (touching or overlapping the wall there counts then, as at t = 0, the separating
/// option included) and counted if it touches the wall by the piece's end. The earliest wins
/// (the first piece on a tie); a touch after t = 0 is a contact.
#[must_use]
pub fn sweep_wall_in_box(
    body: &BodyRecord,
    wall: &WallRecord,
    path: &Path,
    params: &WallParams,
) -> ImpactRecord {
    let mut earliest = miss();
    let axes = IVec3::new(0, 1, 2);
    for piece in -1..3 {
        let mut start = 0.0;
        if piece >= 0 {
            start = path.crossing[piece as usize];
        }
        if start > 1.0 {
            continue;
        }
        // The faces crossed by the piece's start, and the next crossing, where it ends.
        let crossed = path.crossing.cmplt(Vec3::splat(start))
            | (path.crossing.cmpeq(Vec3::splat(start)) & axes.cmple(IVec3::splat(piece)));
        let later = Vec3::select(crossed, Vec3::splat(NO_TOUCH), path.crossing);
        let end = later.x.min(later.y).min(later.z).min(1.0);
        let image = path.image + Vec3::select(crossed, path.step, Vec3::ZERO);
        let impact = sweep_image(body, wall, image, start, params);
        let time_of_impact = start + impact.time_of_impact * (1.0 - start);
        if impact.status != STATUS_MISS
            && time_of_impact <= end
            && (earliest.status == STATUS_MISS || time_of_impact < earliest.time_of_impact)
        {
            earliest = ImpactRecord {
                time_of_impact,
                status: if time_of_impact > 0.0 {
                    STATUS_CONTACT
                } else {
                    impact.status
                },
                ..impact
            };
        }
    }
    earliest
}

/// `main` of the shader for one invocation: the earliest impact of body `index` over every
/// wall (the lowest wall index among equal times; in a periodic box, of its image in the
/// primary cell), written to `wall_contacts`; nothing past `params.body_count`.
///
/// # Panics
/// If `bodies`, `walls` or `wall_contacts` are shorter than `params` says.
pub fn main(
    index: u32,
    bodies: &[BodyRecord],
    walls: &[WallRecord],
    wall_contacts: &mut [WallContactRecord],
    params: &WallParams,
) {
    if index >= params.body_count {
        return;
    }
    let body = &bodies[index as usize];
    let periodic = (params.flags & FLAG_PERIODIC) != 0;
    let path = path_in_box(body, params);
    let mut earliest = WallContactRecord {
        impact: miss(),
        wall: 0,
        ..Default::default()
    };
    for wall in 0..params.wall_count {
        let impact = if periodic {
            sweep_wall_in_box(body, &walls[wall as usize], &path, params)
        } else {
            sweep_wall(body, &walls[wall as usize], params)
        };
        if impact.status != STATUS_MISS
            && (earliest.impact.status == STATUS_MISS
                || impact.time_of_impact < earliest.impact.time_of_impact)
        {
            earliest = WallContactRecord {
                impact,
                wall,
                ..Default::default()
            };
        }
    }
    wall_contacts[index as usize] = earliest;
}
