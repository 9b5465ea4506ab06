// walls.wgsl: one invocation per body; its earliest impact on the step's static walls
// (segments and planes, WallRecord). shared.wgsl (the structs, constants and the sweep's
// core, first_touch) is prepended to this file.
//
// A plane: the centre's height above it falls to the radius. A segment: the segment inflated
// by the radius is a capsule (a band in 2D, a cylinder in 3D, with a ball on each end point),
// and the centre's path enters it first through the side, where the time is first_touch with
// the components across the segment only, at a moment when the centre projects inside the
// segment, or through an end ball, where it is first_touch against that end point.
//
// In a periodic box the walls lie in the primary cell ([0, period) on each axis that wraps)
// and a body meets a wall when its image in that cell does: the step is cut where the
// centre crosses a face of the cell (once an axis at most, as validation keeps the reach
// below a quarter period), and on each piece the image then in the cell is swept (path_in_box,
// sweep_wall_in_box). Its Rust twin, line for line, is src/cpu/walls.rs; its f64 oracle is
// reference::sweep_sphere_wall. Change the three together.

@group(0) @binding(0) var<storage, read> bodies: array<BodyRecord>;
@group(0) @binding(1) var<storage, read> walls: array<WallRecord>;
@group(0) @binding(2) var<storage, read_write> wall_contacts: array<WallContactRecord>;
@group(0) @binding(3) var<uniform> params: WallParams;

// The record of the body touching or overlapping the wall at t = 0, the wall lying along
// `towards` from its centre (scaled): a miss under the separating option when the body is
// not moving towards the wall.
fn at_start(body: BodyRecord, towards: vec3<f32>, motion: vec3<f32>, overlapping: bool)
    -> ImpactRecord {
    if ((params.flags & FLAG_SEPARATING_MISSES) != 0u && dot(towards, motion) <= 0.0) {
        return miss();
    }
    let normal = contact_normal(towards, motion);
    // The centre's point along the normal, lifted as `surface_point` lifts it.
    let log2 = body_lift(body);
    let point = lift3(body.center, vec3<u32>(log2)) + normal * lift(body.radius, log2);
    return ImpactRecord(unlift3(point, log2), 0.0, normal,
                        select(STATUS_CONTACT, STATUS_OVERLAPPING, overlapping));
}

// The body's displacement and radius, each component lifted by 2^log2 where it lies below
// 2^-47 (as `sweep_pair` lifts its inputs), with the lifts.
struct LiftedMotion {
    displacement: vec3<f32>,
    motion_lift: vec3<u32>,
    radius: f32,
    radius_lift: u32,
}

fn lifted_motion(body: BodyRecord) -> LiftedMotion {
    let motion_lift = lift_for(exponent_fields(body.displacement));
    let radius_lift = lift_for(exponent_fields(vec3<f32>(body.radius))).x;
    return LiftedMotion(lift3(body.displacement, motion_lift), motion_lift,
                        lift(body.radius, radius_lift), radius_lift);
}

// The body against a plane, its centre at `raw_offset` from the plane's point (each
// component lifted by 2^offset_lift).
fn sweep_plane(body: BodyRecord, raw_offset: vec3<f32>, offset_lift: vec3<u32>, wall: WallRecord)
    -> ImpactRecord {
    let lifted = lifted_motion(body);
    // The relative coordinates, rescaled by a power of two (exact) as the pair sweep does,
    // so that nothing below overflows or flushes to zero on one path and not another; the
    // power from the bits, each component's lift taken out of its own factor.
    let exponent = max(max(unlifted_exponent(raw_offset, offset_lift),
                           unlifted_exponent(lifted.displacement, lifted.motion_lift)),
                       unlifted_length_exponent(lifted.radius, lifted.radius_lift));
    let normal = wall.vector;
    let motion = lifted.displacement * rescale3(exponent, lifted.motion_lift);
    // The centre's height above the plane, and how far it falls towards it over the step.
    let height = dot(normal, raw_offset * rescale3(exponent, offset_lift));
    let fall = -dot(normal, motion);
    let gap = height - lifted.radius * rescale(exponent, lifted.radius_lift);
    if (gap <= 0.0) {
        return at_start(body, -normal, motion, gap < 0.0);
    }
    // The gap closes at gap / fall (written so that no fall, and NaN, miss).
    let time_of_impact = gap / fall;
    if (!(fall > 0.0) || !(time_of_impact <= 1.0)) {
        return miss();
    }
    return ImpactRecord(surface_point(body, time_of_impact, -normal), time_of_impact, -normal,
                        STATUS_CONTACT);
}

// The body against a segment, its end points at `raw_to_start` and `raw_to_end` from the
// body's centre (each component lifted by 2^start_lift, 2^end_lift).
fn sweep_segment(body: BodyRecord, raw_to_start: vec3<f32>, start_lift: vec3<u32>,
                 raw_to_end: vec3<f32>, end_lift: vec3<u32>, wall: WallRecord) -> ImpactRecord {
    let lifted = lifted_motion(body);
    let edge_lift = lift_for(max(exponent_fields(wall.point), exponent_fields(wall.vector)));
    let raw_edge = lift3(wall.vector, edge_lift) - lift3(wall.point, edge_lift);
    // Relative to the body's centre: the end points, and the edge between them.
    let exponent = max(max(max(unlifted_exponent(raw_to_start, start_lift),
                               unlifted_exponent(raw_to_end, end_lift)),
                           unlifted_exponent(lifted.displacement, lifted.motion_lift)),
                       unlifted_length_exponent(lifted.radius, lifted.radius_lift));
    let to_start = raw_to_start * rescale3(exponent, start_lift);
    let to_end = raw_to_end * rescale3(exponent, end_lift);
    let edge = raw_edge * rescale3(exponent, edge_lift);
    let motion = lifted.displacement * rescale3(exponent, lifted.motion_lift);
    let radius = lifted.radius * rescale(exponent, lifted.radius_lift);
    let edge_squared = dot(edge, edge);
    // A segment too short to give a direction is its start point.
    let has_edge = edge_squared >= MIN_NORMAL;

    // At t = 0: the segment's nearest point.
    var along = 0.0;
    if (has_edge) {
        along = clamp(-dot(edge, to_start) / edge_squared, 0.0, 1.0);
    }
    let nearest = to_start + edge * along;
    let nearest_gap = dot(nearest, nearest) - radius * radius;
    if (nearest_gap <= 0.0) {
        return at_start(body, nearest, motion, nearest_gap < 0.0);
    }

    // The end balls, then the side; the earliest wins (an end on a tie).
    var time_of_impact = first_touch(to_start, motion, radius);
    var position = to_start;
    var moving = motion;
    let end_time = first_touch(to_end, motion, radius);
    if (end_time < time_of_impact) {
        time_of_impact = end_time;
        position = to_end;
    }
    if (has_edge) {
        // The components across the edge: the sweep of a point against the segment's line.
        let side = to_start - edge * (dot(edge, to_start) / edge_squared);
        let side_motion = motion - edge * (dot(edge, motion) / edge_squared);
        // A path that starts within reach of the line can meet the segment only at an end.
        if (dot(side, side) > radius * radius) {
            let side_time = first_touch(side, side_motion, radius);
            // Where the centre then projects on the segment, from its start.
            let projection = dot(edge, motion * side_time - to_start) / edge_squared;
            if (side_time < time_of_impact && projection >= 0.0 && projection <= 1.0) {
                time_of_impact = side_time;
                position = side;
                moving = side_motion;
            }
        }
    }
    if (time_of_impact > 1.0) {
        return miss();
    }
    let normal = contact_normal(position - moving * time_of_impact, motion);
    return ImpactRecord(surface_point(body, time_of_impact, normal), time_of_impact, normal,
                        STATUS_CONTACT);
}

// The body against one wall in open space: the body first, the wall second (the normal
// points from the body's centre towards the wall).
// Each component of an offset whose operands both lie below 2^-47 is lifted first, as in
// `sweep_pair`, so that a device that flushes subnormal values forms it exactly.
fn sweep_wall(body: BodyRecord, wall: WallRecord) -> ImpactRecord {
    if (wall.kind == WALL_PLANE) {
        let log2 = lift_for(max(exponent_fields(body.center), exponent_fields(wall.point)));
        return sweep_plane(body, lift3(body.center, log2) - lift3(wall.point, log2), log2, wall);
    }
    let start_lift = lift_for(max(exponent_fields(wall.point), exponent_fields(body.center)));
    let end_lift = lift_for(max(exponent_fields(wall.vector), exponent_fields(body.center)));
    return sweep_segment(body, lift3(wall.point, start_lift) - lift3(body.center, start_lift),
                         start_lift, lift3(wall.vector, end_lift) - lift3(body.center, end_lift),
                         end_lift, wall);
}

// A body's step in the periodic box, as the walls see it.
struct Path {
    // Per axis: the image (in periods) whose centre lies in the primary cell at t = 0.
    image: vec3<f32>,
    // Per axis: when the centre crosses a face of the cell, or NO_TOUCH if not in the step.
    crossing: vec3<f32>,
    // Per axis: how the image changes there (1 moving up, -1 moving down, 0 without one).
    step: vec3<f32>,
}

// On each axis where the centre, the displacement and the period all lie below 2^-47 they
// are lifted by 2^LIFT_LOG2 first (as `sweep_pair` lifts its inputs), so that a device that
// flushes subnormal values finds the same image and crossing (a time, which the lift leaves
// as it is).
fn path_in_box(body: BodyRecord) -> Path {
    let log2 = lift_for(max(max(exponent_fields(body.center), exponent_fields(body.displacement)),
                            exponent_fields(params.period)));
    let center = lift3(body.center, log2);
    let displacement = lift3(body.displacement, log2);
    let period = lift3(params.period, log2);
    let wraps = period > vec3<f32>(0.0);
    // floor(centre / period), put right where the product has rounded across a face, so that
    // a centre in [0, period) is its own image (0) and `in_cell` below is exact for it. The
    // upper face is compared with the centre itself ((image + 1) * period is exact for the
    // images -1, 0 and 1), so that a centre below the cell by less than half an ulp of the
    // period keeps its image -1, as in exact arithmetic, though its image in the cell rounds
    // onto the upper face. Against the face at the origin the centre's sign is read from its
    // bits (lifted where it lies below 2^-47), which a device that flushes it keeps.
    let inverse_period = params.inverse_period * rescale3(127u, log2);
    let signed = lift3(center, lift_for(exponent_fields(center)));
    var image = floor(center * inverse_period);
    let below = wraps & select(center - image * period < vec3<f32>(0.0), signed < vec3<f32>(0.0),
                               image == vec3<f32>(0.0));
    image -= select(vec3<f32>(0.0), vec3<f32>(1.0), below);
    let above = wraps & select(center >= (image + vec3<f32>(1.0)) * period,
                               signed >= vec3<f32>(0.0), image == vec3<f32>(-1.0));
    image += select(vec3<f32>(0.0), vec3<f32>(1.0), above);
    // The centre itself (its bits) where the image is 0.
    let shifted = center - image * period;
    let in_cell = select(shifted, center, image == vec3<f32>(0.0));
    // The face ahead: the upper one moving up, the lower one moving down. A centre that
    // rounding leaves just past it crosses at t = 0. The direction from the displacement's
    // bits. Moving down, the distance is the centre in the cell; moving up from the image -1,
    // the centre's negation (the face is the origin: exact, where the period less the centre
    // in the cell would round); the distance and the speed are then lifted together where
    // both lie below 2^-47 (in a period that is not), so that a crossing by less than f32's
    // smallest normal is found as on an IEEE device. Moving up otherwise, the face lies at
    // least an ulp of the period away (2^-70 or more), beyond such a speed.
    let moving_up = lift3(displacement, lift_for(exponent_fields(displacement))) > vec3<f32>(0.0);
    let from_below = moving_up & (image == vec3<f32>(-1.0));
    // The centre's own bits where the image is 0 or the face is the origin, chosen after the
    // lift, so that no float operation reads them (as `sweep_image` chooses its operands).
    let own = (image == vec3<f32>(0.0)) | from_below;
    let near_exponents = select(exponent_fields(shifted), exponent_fields(center), own);
    let near_lift = lift_for(max(near_exponents, exponent_fields(displacement)));
    let lifted_near = select(lift3(shifted, near_lift), lift3(center, near_lift), own);
    let plain_up = moving_up & !from_below;
    let ahead = select(select(lifted_near, -lifted_near, from_below), period - in_cell, plain_up);
    let speed = abs(select(lift3(displacement, near_lift), displacement, plain_up));
    let crosses = wraps & (speed > vec3<f32>(0.0)) & (ahead <= speed);
    let crossing = select(vec3<f32>(NO_TOUCH),
                          clamp(ahead / speed, vec3<f32>(0.0), vec3<f32>(1.0)), crosses);
    let step = select(vec3<f32>(0.0), select(vec3<f32>(-1.0), vec3<f32>(1.0), moving_up),
                      crosses);
    return Path(image, crossing, step);
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
fn sweep_image(body: BodyRecord, wall: WallRecord, image: vec3<f32>, start: f32)
    -> ImpactRecord {
    let segment = wall.kind != WALL_PLANE;
    // The shift by the image (0 where the image is, the period infinite or not).
    let shift = select(vec3<f32>(0.0), image * params.period, image != vec3<f32>(0.0));
    var exponents = max(max(max(exponent_fields(body.center), exponent_fields(body.displacement)),
                            exponent_fields(shift)), exponent_fields(wall.point));
    if (segment) {
        exponents = max(exponents, exponent_fields(wall.vector));
    }
    let log2 = lift_for(exponents);
    // The period lifted with the rest where it lies below 2^-47 too; elsewhere the image is 0
    // on a lifted axis, and the shift 0 either way.
    let period = lift3(params.period, lift_for(max(exponents, exponent_fields(params.period))));
    let center = lift3(body.center, log2);
    let displacement = lift3(body.displacement, log2);
    let point = lift3(wall.point, log2);
    let end = lift3(wall.vector, log2);
    // The centre and the wall's points less their shifts, and their own bits where there is
    // none, chosen after the second lift below, so that no float operation reads an unshifted
    // subnormal (`x - 0` is 0 for one on a device that flushes).
    let shifts_center = image > vec3<f32>(0.0);
    let shifts_wall = image < vec3<f32>(0.0);
    let shifted_center = center - image * period;
    let shifted_point = point + image * period;
    let shifted_end = end + image * period;
    // The second lift, on the axes the first left as they are.
    var near_exponents = max(max(
        select(exponent_fields(center), exponent_fields(shifted_center), shifts_center),
        select(exponent_fields(point), exponent_fields(shifted_point), shifts_wall)),
        exponent_fields(displacement));
    if (segment) {
        near_exponents = max(near_exponents,
                             select(exponent_fields(end), exponent_fields(shifted_end), shifts_wall));
    }
    let second = select(vec3<u32>(0u), lift_for(near_exponents), log2 == vec3<u32>(0u));
    let offset_lift = log2 + second;
    let moved = lift3(displacement, second) * start;
    let piece = BodyRecord(unlift_each(center - image * period + displacement * start, log2),
                           body.radius,
                           unlift_each(lift3(displacement, second) * (1.0 - start), offset_lift),
                           0u);
    let lifted_center = select(lift3(center, second), lift3(shifted_center, second),
                               shifts_center);
    let lifted_point = select(lift3(point, second), lift3(shifted_point, second), shifts_wall);
    if (!segment) {
        return sweep_plane(piece, lifted_center - lifted_point + moved, offset_lift, wall);
    }
    let raw_to_start = lifted_point - lifted_center - moved;
    let raw_to_end = select(lift3(end, second), lift3(shifted_end, second), shifts_wall)
        - lifted_center - moved;
    return sweep_segment(piece, raw_to_start, offset_lift, raw_to_end, offset_lift, wall);
}

// `unlift` per component, each by its own lift.
fn unlift_each(v: vec3<f32>, log2: vec3<u32>) -> vec3<f32> {
    return vec3<f32>(unlift(v.x, log2.x), unlift(v.y, log2.y), unlift(v.z, log2.z));
}

// The body against one wall in the periodic box: the step in pieces, cut where the centre
// crosses a face of the cell (piece 0 from t = 0, then one from each crossing, in the order
// of time and then axis); on each, the image then in the cell, swept from the piece's start
// (touching or overlapping the wall there counts then, as at t = 0, the separating option
// included) and counted if it touches the wall by the piece's end. The earliest wins (the
// first piece on a tie); a touch after t = 0 is a contact.
fn sweep_wall_in_box(body: BodyRecord, wall: WallRecord, path: Path) -> ImpactRecord {
    var earliest = miss();
    let axes = vec3<i32>(0, 1, 2);
    for (var piece = -1; piece < 3; piece++) {
        var start = 0.0;
        if (piece >= 0) {
            start = path.crossing[piece];
        }
        if (start > 1.0) {
            continue;
        }
        // The faces crossed by the piece's start, and the next crossing, where it ends.
        let crossed = (path.crossing < vec3<f32>(start))
            | ((path.crossing == vec3<f32>(start)) & (axes <= vec3<i32>(piece)));
        let later = select(path.crossing, vec3<f32>(NO_TOUCH), crossed);
        let end = min(min(min(later.x, later.y), later.z), 1.0);
        let image = path.image + select(vec3<f32>(0.0), path.step, crossed);
        let impact = sweep_image(body, wall, image, start);
        let time_of_impact = start + impact.time_of_impact * (1.0 - start);
        if (impact.status != STATUS_MISS && time_of_impact <= end
            && (earliest.status == STATUS_MISS || time_of_impact < earliest.time_of_impact)) {
            earliest = ImpactRecord(impact.point, time_of_impact, impact.normal,
                                    select(impact.status, STATUS_CONTACT, time_of_impact > 0.0));
        }
    }
    return earliest;
}

// One invocation per body: its earliest impact over every wall, the lowest wall index among
// equal times (in a periodic box, of its image in the primary cell).
@compute @workgroup_size(WORKGROUP_SIZE)
fn main(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let index = linear_index(id, workgroups.x);
    if (index >= params.body_count) {
        return;
    }
    let body = bodies[index];
    let periodic = (params.flags & FLAG_PERIODIC) != 0u;
    let path = path_in_box(body);
    var earliest = WallContactRecord(miss(), 0u, 0u, 0u, 0u);
    for (var wall = 0u; wall < params.wall_count; wall++) {
        var impact: ImpactRecord;
        if (periodic) {
            impact = sweep_wall_in_box(body, walls[wall], path);
        } else {
            impact = sweep_wall(body, walls[wall]);
        }
        if (impact.status != STATUS_MISS && (earliest.impact.status == STATUS_MISS
            || impact.time_of_impact < earliest.impact.time_of_impact)) {
            earliest = WallContactRecord(impact, wall, 0u, 0u, 0u);
        }
    }
    wall_contacts[index] = earliest;
}
