// walls.wgsl: one invocation per body; its earliest impact on the step's static walls
// (segments and planes, WallRecord). shared.wgsl (the structs, constants and the sweep's
// core, first_touch) is prepended to this file.
//
// A plane: the centre's height above it falls to the radius. A segment: the segment inflated
// by the radius is a capsule (a band in 2D, a cylinder in 3D, with a ball on each end point),
// and the centre's path enters it first through the side, where the time is first_touch with
// the components across the segment only, at a moment when the centre projects inside the
// segment, or through an end ball, where it is first_touch against that end point. Its Rust
// twin, line for line, is src/cpu/walls.rs; its f64 oracle is
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
    return ImpactRecord(body.center + normal * body.radius, 0.0, normal,
                        select(STATUS_CONTACT, STATUS_OVERLAPPING, overlapping));
}

fn sweep_plane(body: BodyRecord, wall: WallRecord) -> ImpactRecord {
    // Relative coordinates, rescaled by a power of two (exact) as the pair sweep does, so
    // that nothing below overflows or flushes to zero on one path and not another.
    let raw_offset = body.center - wall.point;
    let largest = max(max(largest_component(raw_offset), largest_component(body.displacement)),
                      body.radius);
    let scale = power_of_two_scale(largest);
    let normal = wall.vector;
    let motion = body.displacement * scale;
    // The centre's height above the plane, and how far it falls towards it over the step.
    let height = dot(normal, raw_offset * scale);
    let fall = -dot(normal, motion);
    let gap = height - body.radius * scale;
    if (gap <= 0.0) {
        return at_start(body, -normal, motion, gap < 0.0);
    }
    // The gap closes at gap / fall (written so that no fall, and NaN, miss).
    let time_of_impact = gap / fall;
    if (!(fall > 0.0) || !(time_of_impact <= 1.0)) {
        return miss();
    }
    let center = body.center + body.displacement * time_of_impact;
    return ImpactRecord(center - normal * body.radius, time_of_impact, -normal, STATUS_CONTACT);
}

fn sweep_segment(body: BodyRecord, wall: WallRecord) -> ImpactRecord {
    // Relative to the body's centre: the end points, and the edge between them.
    let raw_to_start = wall.point - body.center;
    let raw_to_end = wall.vector - body.center;
    let largest = max(max(max(largest_component(raw_to_start), largest_component(raw_to_end)),
                          largest_component(body.displacement)), body.radius);
    let scale = power_of_two_scale(largest);
    let to_start = raw_to_start * scale;
    let to_end = raw_to_end * scale;
    let edge = (wall.vector - wall.point) * scale;
    let motion = body.displacement * scale;
    let radius = body.radius * scale;
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
    let center = body.center + body.displacement * time_of_impact;
    return ImpactRecord(center + normal * body.radius, time_of_impact, normal, STATUS_CONTACT);
}

// The body against one wall: the body first, the wall second (the normal points from the
// body's centre towards the wall).
fn sweep_wall(body: BodyRecord, wall: WallRecord) -> ImpactRecord {
    if (wall.kind == WALL_PLANE) {
        return sweep_plane(body, wall);
    }
    return sweep_segment(body, wall);
}

// One invocation per body: its earliest impact over every wall, the lowest wall index among
// equal times.
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
    var earliest = WallContactRecord(miss(), 0u, 0u, 0u, 0u);
    for (var wall = 0u; wall < params.wall_count; wall++) {
        let impact = sweep_wall(body, walls[wall]);
        if (impact.status != STATUS_MISS && (earliest.impact.status == STATUS_MISS
            || impact.time_of_impact < earliest.impact.time_of_impact)) {
            earliest = WallContactRecord(impact, wall, 0u, 0u, 0u);
        }
    }
    wall_contacts[index] = earliest;
}
