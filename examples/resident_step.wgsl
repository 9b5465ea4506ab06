// The passes of examples/resident_step.rs around the step stage; shaders/shared.wgsl (for
// BodyRecord and EarliestRecord) is prepended. One invocation a body in each.
//
// A frame: `prepare` (displacement = velocity · dt) → the step on the bodies → `plan` (each
// body's motion and velocity from its earliest contact) → rounds of [the step on the planned
// motions → `mark` → `shorten`] → `commit`. See the example's header for the rule.

struct Frame {
    dt: f32,
    body_count: u32,
    _pad0: u32,
    _pad1: u32,
}

// A body's plan for the frame. 32 bytes.
struct Plan {
    // The velocity after the frame, if the plan is kept.
    velocity: vec3<f32>,
    // The fraction of the frame the body advances.
    fraction: f32,
    // PLAN_FREE, PLAN_PAIR, PLAN_WALL or PLAN_UNMATCHED.
    kind: u32,
    // The other body of the pair (PLAN_PAIR, PLAN_UNMATCHED) or the wall (PLAN_WALL).
    partner: u32,
    _pad0: u32,
    _pad1: u32,
}

// How far a body's planned motion goes (`levels`): the whole frame, past its contact with
// the new velocity; only to its contact; not at all.
const LEVEL_WHOLE: u32 = 2u;
const LEVEL_CONTACT: u32 = 1u;
const LEVEL_FROZEN: u32 = 0u;

// What the host reads each frame besides the per-workgroup sums. 48 bytes.
struct Summary {
    // StepCounts.valid of the step on the bodies and of the last step on the plans (copied
    // in by the encoder).
    frame_valid: u32,
    plan_valid: u32,
    // Bodies with an earliest contact; in mutually earliest pairs; at a wall; meeting a body
    // whose earliest contact is another.
    contacts: atomic<u32>,
    pairs: atomic<u32>,
    walls: atomic<u32>,
    unmatched: atomic<u32>,
    // Bodies demoted by the last round; over the frame's rounds, cut to their contact and
    // frozen.
    demoted_now: atomic<u32>,
    cut: atomic<u32>,
    frozen: atomic<u32>,
    // 1 once `commit` applied the frame.
    committed: u32,
    _pad0: u32,
    _pad1: u32,
}

const PLAN_FREE: u32 = 0u;
const PLAN_PAIR: u32 = 1u;
const PLAN_WALL: u32 = 2u;
const PLAN_UNMATCHED: u32 = 3u;

@group(0) @binding(0) var<uniform> frame: Frame;
// The step's bodies: centre at the frame's start, radius, displacement = velocity · dt.
@group(0) @binding(1) var<storage, read_write> bodies: array<BodyRecord>;
// xyz: the velocity; w: the mass (radius³).
@group(0) @binding(2) var<storage, read_write> velocities: array<vec4<f32>>;
// The step's earliest contacts on `bodies`.
@group(0) @binding(3) var<storage, read> earliest: array<EarliestRecord>;
// The planned motions (centre, radius, displacement · fraction): the second step's bodies.
@group(0) @binding(4) var<storage, read_write> planned: array<BodyRecord>;
// The second step's earliest contacts on `planned`.
@group(0) @binding(5) var<storage, read> planned_earliest: array<EarliestRecord>;
@group(0) @binding(6) var<storage, read_write> plans: array<Plan>;
@group(0) @binding(7) var<storage, read_write> levels: array<u32>;
// Per body, written by `mark` and only read by `shorten`: CONFLICTS where it conflicts, and
// CUTTABLE where it could be cut to its contact at the round's start (so that `shorten` reads
// the round's levels as they were, never one another invocation is writing).
@group(0) @binding(8) var<storage, read_write> conflicts: array<u32>;
const CONFLICTS: u32 = 1u;
const CUTTABLE: u32 = 2u;
@group(0) @binding(9) var<storage, read_write> summary: Summary;
// Per workgroup of `commit`: the kinetic energy and the fractions advanced, summed.
@group(0) @binding(10) var<storage, read_write> partials: array<vec2<f32>>;

@compute @workgroup_size(64)
fn prepare(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i >= frame.body_count) {
        return;
    }
    let body = bodies[i];
    bodies[i] = BodyRecord(body.center, body.radius, velocities[i].xyz * frame.dt, body.groups);
}

// The velocity of a body of `velocity` (w: mass) after an elastic collision with one of
// `other` whose centre lies along `apart` at the contact: the components along the normal
// exchanged as for masses m and M (v - 2M/(m+M) ((v - V)·n) n). Both bodies compute the same
// normal (negated) and approach to the bit, so that the impulses are opposite.
fn collide(velocity: vec4<f32>, other: vec4<f32>, apart: vec3<f32>) -> vec3<f32> {
    let length_squared = dot(apart, apart);
    if (length_squared < MIN_NORMAL) {
        return velocity.xyz;
    }
    let normal = apart * inverseSqrt(length_squared);
    let approach = dot(velocity.xyz - other.xyz, normal);
    if (approach <= 0.0) {
        return velocity.xyz;
    }
    return velocity.xyz - (2.0 * other.w / (velocity.w + other.w) * approach) * normal;
}

// The walls are Wall::box_interior's six planes: wall w faces +axis (w even) or -axis (w odd)
// along axis w / 2. A reflection negates that component: exact, so it keeps the energy.
fn reflect_off(velocity: vec3<f32>, wall: u32) -> vec3<f32> {
    let axis = wall / 2u;
    let inward = select(-1.0, 1.0, wall % 2u == 0u);
    var reflected = velocity;
    if (velocity[axis] * inward < 0.0) {
        reflected[axis] = -velocity[axis];
    }
    return reflected;
}

@compute @workgroup_size(64)
fn plan(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i >= frame.body_count || summary.frame_valid == 0u) {
        return;
    }
    let body = bodies[i];
    let velocity = velocities[i];
    let hit = earliest[i];
    var plan = Plan(velocity.xyz, 1.0, PLAN_FREE, 0u, 0u, 0u);
    if (hit.kind == EARLIEST_BODY) {
        let other = hit.other;
        let back = earliest[other];
        plan.fraction = hit.time_of_impact;
        plan.kind = PLAN_UNMATCHED;
        plan.partner = other;
        // Mutually earliest: the same impact record seen from both sides, so the same time.
        if (back.kind == EARLIEST_BODY && back.other == i
            && bitcast<u32>(back.time_of_impact) == bitcast<u32>(hit.time_of_impact)) {
            plan.kind = PLAN_PAIR;
            // The centres at the contact (a closed box: the image is always 0).
            let t = hit.time_of_impact;
            let partner = bodies[other];
            let here = body.center + body.displacement * t;
            let there = partner.center + partner.displacement * t;
            plan.velocity = collide(velocity, velocities[other], there - here);
        }
    } else if (hit.kind == EARLIEST_WALL) {
        plan.fraction = hit.time_of_impact;
        plan.kind = PLAN_WALL;
        plan.partner = hit.other;
        plan.velocity = reflect_off(velocity.xyz, hit.other);
    }
    if (hit.kind != EARLIEST_NONE) {
        atomicAdd(&summary.contacts, 1u);
    }
    switch plan.kind {
        case PLAN_PAIR: { atomicAdd(&summary.pairs, 1u); }
        case PLAN_WALL: { atomicAdd(&summary.walls, 1u); }
        case PLAN_UNMATCHED: { atomicAdd(&summary.unmatched, 1u); }
        default: {}
    }
    plans[i] = plan;
    planned[i] = BodyRecord(body.center, body.radius, planned_motion(body, plan, LEVEL_WHOLE), body.groups);
    levels[i] = LEVEL_WHOLE;
}

// The displacement of a body planned to go as far as `level`: with a contact, the whole
// frame is the path to the contact and on with the new velocity (a body stopped at a contact
// that is not mutually earliest goes on with its own).
fn planned_motion(body: BodyRecord, plan: Plan, level: u32) -> vec3<f32> {
    let to_contact = body.displacement * plan.fraction;
    switch level {
        case LEVEL_WHOLE: {
            if (plan.kind == PLAN_PAIR || plan.kind == PLAN_WALL) {
                return to_contact + plan.velocity * (frame.dt * (1.0 - plan.fraction));
            }
            return body.displacement;
        }
        case LEVEL_CONTACT: { return to_contact; }
        default: { return vec3<f32>(0.0); }
    }
}

// A body conflicts when the step on the planned motions finds it meeting anything but the
// contact its plan is built on: its partner of a mutually earliest pair, planned as far as it,
// or its wall. (Bouncing off each other or off a wall, the two chords of the bent paths stay
// apart: the relative path reflects off the sphere of the radius sum, or the body's off the
// plane, and a chord of a path that bounces off a convex body stays outside it; stopped at
// the contact, they end touching.)
@compute @workgroup_size(64)
fn mark(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i >= frame.body_count || summary.frame_valid == 0u || summary.plan_valid == 0u) {
        return;
    }
    conflicts[i] = 0u;
    let level = levels[i];
    if (level == LEVEL_FROZEN) {
        return;
    }
    let seen = planned_earliest[i];
    let plan = plans[i];
    let own_pair = seen.kind == EARLIEST_BODY && plan.kind == PLAN_PAIR
        && seen.other == plan.partner && levels[plan.partner] == level;
    let own_wall = seen.kind == EARLIEST_WALL && plan.kind == PLAN_WALL
        && seen.other == plan.partner;
    if (!(seen.kind == EARLIEST_NONE || own_pair || own_wall)) {
        conflicts[i] = CONFLICTS | select(0u, CUTTABLE, cuttable(plan, level));
    }
}

// Whether a body planned as far as `level` can be cut to its contact rather than frozen.
fn cuttable(plan: Plan, level: u32) -> bool {
    return level == LEVEL_WHOLE && plan.kind != PLAN_FREE;
}

// A conflicting body goes less far: from the whole frame to its contact (or, without one, not
// at all), from its contact to not at all. A body that would be frozen waits instead while the
// body it meets is cut this round (a bounce that went on too far yields first); the next round
// sweeps the pair again.
@compute @workgroup_size(64)
fn shorten(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i >= frame.body_count || summary.frame_valid == 0u || summary.plan_valid == 0u) {
        return;
    }
    if ((conflicts[i] & CONFLICTS) == 0u) {
        return;
    }
    let plan = plans[i];
    let seen = planned_earliest[i];
    if (!cuttable(plan, levels[i]) && seen.kind == EARLIEST_BODY) {
        let other = seen.other;
        // The other's flags, as `mark` left them: not its level, which this pass may be
        // writing.
        if ((conflicts[other] & CUTTABLE) != 0u) {
            return;
        }
    }
    var level = LEVEL_FROZEN;
    if (cuttable(plan, levels[i])) {
        level = LEVEL_CONTACT;
        atomicAdd(&summary.cut, 1u);
    } else {
        atomicAdd(&summary.frozen, 1u);
    }
    levels[i] = level;
    let body = bodies[i];
    planned[i] = BodyRecord(body.center, body.radius, planned_motion(body, plan, level), body.groups);
    atomicAdd(&summary.demoted_now, 1u);
}

var<workgroup> sums: array<vec2<f32>, 64>;

// Applies the plans once a round demoted nothing (and both steps were whole): each body moves
// by its planned displacement; a pair's velocities change only if neither body is frozen.
// Writes each workgroup's kinetic energy and fractions advanced.
@compute @workgroup_size(64)
fn commit(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
    @builtin(workgroup_id) group: vec3<u32>,
) {
    let i = id.x;
    let settled = summary.frame_valid != 0u && summary.plan_valid != 0u
        && atomicLoad(&summary.demoted_now) == 0u;
    var sum = vec2<f32>(0.0);
    if (i < frame.body_count && settled) {
        var velocity = velocities[i];
        let level = levels[i];
        if (level != LEVEL_FROZEN) {
            let plan = plans[i];
            let motion = planned[i];
            bodies[i] = BodyRecord(
                motion.center + motion.displacement, motion.radius, motion.displacement, motion.groups
            );
            let responds = plan.kind == PLAN_WALL
                || (plan.kind == PLAN_PAIR && levels[plan.partner] != LEVEL_FROZEN);
            if (responds) {
                velocity = vec4<f32>(plan.velocity, velocity.w);
                velocities[i] = velocity;
            }
            sum.y = select(plan.fraction, 1.0, level == LEVEL_WHOLE);
        }
        sum.x = 0.5 * velocity.w * dot(velocity.xyz, velocity.xyz);
    }
    sums[lane] = sum;
    workgroupBarrier();
    for (var stride = 32u; stride > 0u; stride = stride / 2u) {
        if (lane < stride) {
            sums[lane] = sums[lane] + sums[lane + stride];
        }
        workgroupBarrier();
    }
    if (lane == 0u && settled) {
        partials[group.x] = sums[0];
        if (group.x == 0u) {
            summary.committed = 1u;
        }
    }
}
