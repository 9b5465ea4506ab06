// contacts.wgsl: the step's outputs from the hits the grid listed (grid_gather_counted, each
// with its sweep) and the walls. shared.wgsl is prepended to this file.
//
// The entry points, in the order src/gpu/step/mod.rs records them after the grid. Each body's
// earliest contact, with no sort and no `compact` (earliest_keys and hit_count cleared to
// zero, earliest_contacts to EARLIEST_NONE, before the first):
//   earliest_times     one per swept candidate (dispatched indirectly from the sweep's own
//                      dispatch): each hit counted, and the least time kept per body
//   earliest_partners  one per swept candidate: among the hits at a body's least time, the
//                      lowest partner kept
//   earliest_records   one per swept candidate: the hit at both keys of a body written as its
//                      EarliestRecord (one per body: a pair is one candidate)
//   earliest_walls     one per body, after the walls stage (with walls only): the body's
//                      earliest wall, where it is strictly earlier than its earliest pair
// Each answer is a maximum of atomics, so it is the same whatever order the invocations run
// in: that of the ordered path and of the CPU step (earliest time, then lowest partner).
//
// Then, only when the ordered contacts are asked for:
//   compact            one invocation per swept candidate: each hit appended as a
//                      ContactRecord
//   prepare_contacts   one invocation: the workgroups of the passes below, from the count
//   key_by_second      one per contact: the first sort key, the second body
//   key_by_first       one per contact: the second key, the first body, in the sort's order
//   key_by_time        one per contact: the third key, the time's bits, in the sort's order
//   order_contacts     one per contact: the contacts in order (time, then pair), and each
//                      body's earliest contact's position in it
// The sorts between them are lampshade's stable radix sort, so that three passes order the
// contacts by (time, first, second).
//
// The twin, one function per entry point, is src/cpu/contacts.rs (tests/contact_stages.rs
// holds each stage to it); the CPU step's own ordering (src/cpu/step.rs) gives the same order
// and the same earliest contacts.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> bodies: array<BodyRecord>;
@group(0) @binding(2) var<storage, read> pairs: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> impacts: array<ImpactRecord>;
// The sweep's dispatch: how many candidates it swept.
@group(0) @binding(4) var<storage, read> sweep_dispatch: SweepDispatch;
// How many hits `compact` found (those beyond the capacity are counted, not written).
@group(0) @binding(5) var<storage, read_write> contact_count: atomic<u32>;
@group(0) @binding(6) var<storage, read_write> contacts: array<ContactRecord>;
// The contacts' dispatch, written by `prepare_contacts` (in a bind group of its own, as the
// buffer is also the indirect argument of the passes that read it as `contacts_dispatched`).
@group(0) @binding(7) var<storage, read_write> contact_dispatch: SweepDispatch;
@group(0) @binding(12) var<storage, read> contacts_dispatched: SweepDispatch;
@group(0) @binding(8) var<storage, read_write> sort_in: array<KeyValue>;
@group(0) @binding(9) var<storage, read> sort_out: array<KeyValue>;
@group(0) @binding(10) var<storage, read_write> ordered_contacts: array<ContactRecord>;
// Per body: the complement (!k) of the position k of its earliest contact in the order, or 0
// for none: atomicMax then keeps the first.
@group(0) @binding(11) var<storage, read_write> earliest: array<atomic<u32>>;
// The earliest passes'. Per body, two words: the complement of the bits of its least time
// (times are in [0, 1], so their bits order them, and atomicMax of the complement keeps the
// least; 0, below every complement, for none), then the complement of its lowest partner at
// that time.
@group(0) @binding(13) var<storage, read_write> earliest_keys: array<atomic<u32>>;
// Every hit among the swept candidates: the step's contact count, without `compact`.
@group(0) @binding(14) var<storage, read_write> hit_count: atomic<u32>;
@group(0) @binding(15) var<storage, read_write> earliest_contacts: array<EarliestRecord>;
// The walls stage's output: each body's earliest wall (walls.wgsl).
@group(0) @binding(16) var<storage, read> wall_contacts: array<WallContactRecord>;

// The image of b's centre nearest to a's, in periods: `nearest_image` of sweep.wgsl and of
// src/cpu/sweep.rs, which the sweep took.
fn image_of(a: vec3<f32>, b: vec3<f32>) -> vec3<i32> {
    return vec3<i32>(round((b - a) * params.inverse_period));
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn compact(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (i >= sweep_dispatch.pair_count) {
        return;
    }
    let impact = impacts[i];
    if (impact.status == STATUS_MISS) {
        return;
    }
    let slot = atomicAdd(&contact_count, 1u);
    if (slot >= params.contact_capacity) {
        return;
    }
    let pair = pairs[i];
    let image = image_of(bodies[pair.x].center, bodies[pair.y].center);
    contacts[slot] = ContactRecord(pair, vec2<u32>(0u), image, 0u, impact);
}

@compute @workgroup_size(1)
fn prepare_contacts() {
    let count = min(atomicLoad(&contact_count), params.contact_capacity);
    let workgroups = workgroups_for(count);
    contact_dispatch.workgroups_x = workgroups.x;
    contact_dispatch.workgroups_y = workgroups.y;
    contact_dispatch.workgroups_z = workgroups.z;
    contact_dispatch.pair_count = count;
    contact_dispatch.requested_pairs = atomicLoad(&contact_count);
    contact_dispatch.overflowed = select(0u, 1u, count < contact_dispatch.requested_pairs);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn key_by_second(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (i >= contacts_dispatched.pair_count) {
        return;
    }
    sort_in[i] = KeyValue(contacts[i].pair.y, i);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn key_by_first(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (i >= contacts_dispatched.pair_count) {
        return;
    }
    let contact = sort_out[i].value;
    sort_in[i] = KeyValue(contacts[contact].pair.x, contact);
}

// Times are in [0, 1] (0 for an overlap), so their bits order them.
@compute @workgroup_size(WORKGROUP_SIZE)
fn key_by_time(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (i >= contacts_dispatched.pair_count) {
        return;
    }
    let contact = sort_out[i].value;
    sort_in[i] = KeyValue(bitcast<u32>(contacts[contact].impact.time_of_impact), contact);
}

// In this order a body's first contact is its earliest, and among equal times the one with
// the lowest partner: the pairs (p, body) with p < body come first, by p, then (body, p).
@compute @workgroup_size(WORKGROUP_SIZE)
fn order_contacts(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (i >= contacts_dispatched.pair_count) {
        return;
    }
    let contact = contacts[sort_out[i].value];
    ordered_contacts[i] = contact;
    atomicMax(&earliest[contact.pair.x], ~i);
    atomicMax(&earliest[contact.pair.y], ~i);
}

// Whether candidate `i` was swept and hit.
fn is_swept_hit(i: u32) -> bool {
    return i < sweep_dispatch.pair_count && impacts[i].status != STATUS_MISS;
}

// The first word of a body's earliest keys for a hit at `time_of_impact`.
fn time_key(time_of_impact: f32) -> u32 {
    return ~bitcast<u32>(time_of_impact);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn earliest_times(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (!is_swept_hit(i)) {
        return;
    }
    atomicAdd(&hit_count, 1u);
    let key = time_key(impacts[i].time_of_impact);
    let pair = pairs[i];
    atomicMax(&earliest_keys[2u * pair.x], key);
    atomicMax(&earliest_keys[2u * pair.y], key);
}

// `partner` as the lowest partner of `body`, if this hit is at the body's least time.
fn keep_partner(body: u32, partner: u32, key: u32) {
    if (atomicLoad(&earliest_keys[2u * body]) == key) {
        atomicMax(&earliest_keys[2u * body + 1u], ~partner);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn earliest_partners(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (!is_swept_hit(i)) {
        return;
    }
    let key = time_key(impacts[i].time_of_impact);
    let pair = pairs[i];
    keep_partner(pair.x, pair.y, key);
    keep_partner(pair.y, pair.x, key);
}

// The hit `impact` of `body` with `partner` (through its image `image`) as the body's record,
// if it is the one both keys name.
fn write_if_earliest(body: u32, partner: u32, impact: ImpactRecord, image: vec3<i32>) {
    if (atomicLoad(&earliest_keys[2u * body]) == time_key(impact.time_of_impact)
        && atomicLoad(&earliest_keys[2u * body + 1u]) == ~partner) {
        earliest_contacts[body] = EarliestRecord(impact.time_of_impact, partner, impact.status,
                                                 EARLIEST_BODY, image, 0u);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn earliest_records(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (!is_swept_hit(i)) {
        return;
    }
    let impact = impacts[i];
    let pair = pairs[i];
    // As `compact` takes it: the image of the second body the first met; the first body,
    // seen from the second, is at the opposite one.
    let image = image_of(bodies[pair.x].center, bodies[pair.y].center);
    write_if_earliest(pair.x, pair.y, impact, image);
    write_if_earliest(pair.y, pair.x, impact, -image);
}

// A wall replaces the body's pair contact only when strictly earlier: at the same time the
// pair wins (a fixed rule, so that every path names the same one), and the two bodies of the
// pair keep naming each other.
@compute @workgroup_size(WORKGROUP_SIZE)
fn earliest_walls(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (i >= params.body_count) {
        return;
    }
    let wall = wall_contacts[i];
    if (wall.impact.status == STATUS_MISS) {
        return;
    }
    let pair = earliest_contacts[i];
    if (pair.kind == EARLIEST_NONE || wall.impact.time_of_impact < pair.time_of_impact) {
        earliest_contacts[i] = EarliestRecord(wall.impact.time_of_impact, wall.wall,
                                              wall.impact.status, EARLIEST_WALL, vec3<i32>(0),
                                              0u);
    }
}
