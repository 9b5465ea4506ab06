//! The f32 twin of `shaders/walls.wgsl`, line for line, entry point included: each body's
//! earliest impact on the step's static walls ([`Wall`](crate::Wall): segments and planes).
//! Its f64 oracle is [`crate::reference::sweep_sphere_wall`].

use glam::Vec3;

use super::sweep::{contact_normal, first_touch, largest_component, miss, power_of_two_scale};
use crate::layout::{
    BodyRecord, FLAG_SEPARATING_MISSES, ImpactRecord, MIN_NORMAL, STATUS_CONTACT, STATUS_MISS,
    STATUS_OVERLAPPING, WALL_PLANE, WallContactRecord, WallParams, WallRecord,
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
    ImpactRecord {
        point: (Vec3::from_array(body.center) + normal * body.radius).to_array(),
        time_of_impact: 0.0,
        normal: normal.to_array(),
        status: if overlapping {
            STATUS_OVERLAPPING
        } else {
            STATUS_CONTACT
        },
    }
}

fn sweep_plane(body: &BodyRecord, wall: &WallRecord, params: &WallParams) -> ImpactRecord {
    let (center, displacement) = (
        Vec3::from_array(body.center),
        Vec3::from_array(body.displacement),
    );
    // Relative coordinates, rescaled by a power of two (exact) as the pair sweep does, so
    // that nothing below overflows or flushes to zero on one path and not another.
    let raw_offset = center - Vec3::from_array(wall.point);
    let largest = largest_component(raw_offset)
        .max(largest_component(displacement))
        .max(body.radius);
    let scale = power_of_two_scale(largest);
    let normal = Vec3::from_array(wall.vector);
    let motion = displacement * scale;
    // The centre's height above the plane, and how far it falls towards it over the step.
    let height = normal.dot(raw_offset * scale);
    let fall = -normal.dot(motion);
    let gap = height - body.radius * scale;
    if gap <= 0.0 {
        return at_start(body, -normal, motion, gap < 0.0, params);
    }
    // The gap closes at gap / fall (written so that no fall, and NaN, miss).
    let time_of_impact = gap / fall;
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(fall > 0.0) || !(time_of_impact <= 1.0) {
        return miss();
    }
    let center = center + displacement * time_of_impact;
    ImpactRecord {
        point: (center - normal * body.radius).to_array(),
        time_of_impact,
        normal: (-normal).to_array(),
        status: STATUS_CONTACT,
    }
}

fn sweep_segment(body: &BodyRecord, wall: &WallRecord, params: &WallParams) -> ImpactRecord {
    let (center, displacement) = (
        Vec3::from_array(body.center),
        Vec3::from_array(body.displacement),
    );
    let (start, end) = (Vec3::from_array(wall.point), Vec3::from_array(wall.vector));
    // Relative to the body's centre: the end points, and the edge between them.
    let raw_to_start = start - center;
    let raw_to_end = end - center;
    let largest = largest_component(raw_to_start)
        .max(largest_component(raw_to_end))
        .max(largest_component(displacement))
        .max(body.radius);
    let scale = power_of_two_scale(largest);
    let to_start = raw_to_start * scale;
    let to_end = raw_to_end * scale;
    let edge = (end - start) * scale;
    let motion = displacement * scale;
    let radius = body.radius * scale;
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
    let center = center + displacement * time_of_impact;
    ImpactRecord {
        point: (center + normal * body.radius).to_array(),
        time_of_impact,
        normal: normal.to_array(),
        status: STATUS_CONTACT,
    }
}

/// `sweep_wall` of the shader: the body against one wall, the body first, the wall second
/// (the normal points from the body's centre towards the wall).
#[must_use]
pub fn sweep_wall(body: &BodyRecord, wall: &WallRecord, params: &WallParams) -> ImpactRecord {
    if wall.kind == WALL_PLANE {
        return sweep_plane(body, wall, params);
    }
    sweep_segment(body, wall, params)
}

/// `main` of the shader for one invocation: the earliest impact of body `index` over every
/// wall (the lowest wall index among equal times), written to `wall_contacts`; nothing past
/// `params.body_count`.
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
    let mut earliest = WallContactRecord {
        impact: miss(),
        wall: 0,
        ..Default::default()
    };
    for wall in 0..params.wall_count {
        let impact = sweep_wall(body, &walls[wall as usize], params);
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
