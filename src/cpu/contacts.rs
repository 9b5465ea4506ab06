//! The f32 twin of `shaders/contacts.wgsl`, the GPU step's outputs: one function per entry
//! point, each one invocation of it (index, gather, compute, write), written to be read
//! beside the shader. `tests/contact_stages.rs` runs each entry point on the device and its
//! twin here on the same input and holds the outputs equal: bit for bit, and as a set for
//! `compact`, whose invocations append in any order on the device.
//!
//! The CPU step ([`find_contacts`](super::find_contacts)) orders its contacts its own way (a
//! sample sort, buckets sorted in parallel) into the same order with the same earliest
//! contact per body.
//!
//! The sorts between the key passes are lampshade's stable radix sorts; their twin is
//! [`sort_by_key`](super::frame::sort_by_key).
//!
//! Without any sort, [`earliest_times`], [`earliest_partners`], [`earliest_records`] and
//! [`earliest_walls`] give each body's earliest contact alone ([`EarliestRecord`]): the
//! earliest time, then the lowest partner, kept by maxima of complements (the shader's
//! `atomicMax`), so that the answer does not depend on the order the candidates are visited
//! in; a wall only where strictly earlier than the body's earliest pair.

use glam::Vec3;

use crate::layout::{
    BodyRecord, ContactRecord, EARLIEST_BODY, EARLIEST_NONE, EARLIEST_WALL, EarliestRecord,
    ImpactRecord, KeyValue, STATUS_MISS, StepParams, SweepDispatch, WallContactRecord,
};

/// `image_of`: the image of `b`'s centre nearest to `a`'s, in periods (`nearest_image` of
/// the sweep, which the sweep took).
#[must_use]
pub fn image_of(params: &StepParams, a: [f32; 3], b: [f32; 3]) -> [i32; 3] {
    ((Vec3::from_array(b) - Vec3::from_array(a)) * Vec3::from_array(params.inverse_period))
        .to_array()
        .map(|periods| periods.round_ties_even() as i32)
}

/// `compact`, invocation `i`: candidate `i`, if the sweep hit, appended as a contact at the
/// count (counted past the capacity, not written).
#[allow(clippy::too_many_arguments)]
pub fn compact(
    i: usize,
    params: &StepParams,
    bodies: &[BodyRecord],
    pairs: &[[u32; 2]],
    impacts: &[ImpactRecord],
    sweep_dispatch: &SweepDispatch,
    contact_count: &mut u32,
    contacts: &mut [ContactRecord],
) {
    if i >= sweep_dispatch.pair_count as usize {
        return;
    }
    let impact = impacts[i];
    if impact.status == STATUS_MISS {
        return;
    }
    let slot = *contact_count;
    *contact_count = contact_count.wrapping_add(1);
    if slot >= params.contact_capacity {
        return;
    }
    let pair = pairs[i];
    let image = image_of(
        params,
        bodies[pair[0] as usize].center,
        bodies[pair[1] as usize].center,
    );
    contacts[slot as usize] = ContactRecord {
        pair,
        _pad0: [0; 2],
        image,
        _pad1: 0,
        impact,
    };
}

/// `prepare_contacts`, its one invocation: the dispatch of the passes below, from the count.
pub fn prepare_contacts(params: &StepParams, contact_count: u32, dispatch: &mut SweepDispatch) {
    let count = contact_count.min(params.contact_capacity);
    // `workgroups_for` of the contract: the host's copy is `SweepDispatch::new`.
    let workgroups = SweepDispatch::new(count);
    dispatch.workgroups_x = workgroups.workgroups_x;
    dispatch.workgroups_y = workgroups.workgroups_y;
    dispatch.workgroups_z = workgroups.workgroups_z;
    dispatch.pair_count = count;
    dispatch.requested_pairs = contact_count;
    dispatch.overflowed = u32::from(count < dispatch.requested_pairs);
}

/// `key_by_second`, invocation `i`: the first sort's key-value, contact `i`'s second body.
pub fn key_by_second(
    i: usize,
    dispatched: &SweepDispatch,
    contacts: &[ContactRecord],
    sort_in: &mut [KeyValue],
) {
    if i >= dispatched.pair_count as usize {
        return;
    }
    sort_in[i] = KeyValue {
        key: contacts[i].pair[1],
        value: i as u32,
    };
}

/// `key_by_first`, invocation `i`: the second sort's key-value, the first body of the
/// contact at the first sort's position `i`.
pub fn key_by_first(
    i: usize,
    dispatched: &SweepDispatch,
    contacts: &[ContactRecord],
    sort_out: &[KeyValue],
    sort_in: &mut [KeyValue],
) {
    key_in_order(i, dispatched, contacts, sort_out, sort_in, |contact| {
        contact.pair[0]
    });
}

/// `key_by_time`, invocation `i`: the third sort's key-value, the time's bits (times are in
/// [0, 1], so their bits order them) of the contact at the second sort's position `i`.
pub fn key_by_time(
    i: usize,
    dispatched: &SweepDispatch,
    contacts: &[ContactRecord],
    sort_out: &[KeyValue],
    sort_in: &mut [KeyValue],
) {
    key_in_order(i, dispatched, contacts, sort_out, sort_in, |contact| {
        contact.impact.time_of_impact.to_bits()
    });
}

/// The body of `key_by_first` and `key_by_time`, which differ in their key only.
fn key_in_order(
    i: usize,
    dispatched: &SweepDispatch,
    contacts: &[ContactRecord],
    sort_out: &[KeyValue],
    sort_in: &mut [KeyValue],
    key: impl Fn(&ContactRecord) -> u32,
) {
    if i >= dispatched.pair_count as usize {
        return;
    }
    let contact = sort_out[i].value;
    sort_in[i] = KeyValue {
        key: key(&contacts[contact as usize]),
        value: contact,
    };
}

/// `order_contacts`, invocation `i`: the contact at the last sort's position `i` in its
/// place, and each of its bodies' earliest (the complement of its first position: the
/// shader's `atomicMax`).
pub fn order_contacts(
    i: usize,
    dispatched: &SweepDispatch,
    contacts: &[ContactRecord],
    sort_out: &[KeyValue],
    ordered_contacts: &mut [ContactRecord],
    earliest: &mut [u32],
) {
    if i >= dispatched.pair_count as usize {
        return;
    }
    let contact = contacts[sort_out[i].value as usize];
    ordered_contacts[i] = contact;
    for body in contact.pair {
        let slot = &mut earliest[body as usize];
        *slot = (*slot).max(!(i as u32));
    }
}

/// `is_swept_hit`: whether candidate `i` was swept and hit.
fn is_swept_hit(i: usize, sweep_dispatch: &SweepDispatch, impacts: &[ImpactRecord]) -> bool {
    i < sweep_dispatch.pair_count as usize && impacts[i].status != STATUS_MISS
}

/// `time_key`: the first word of a body's earliest keys for a hit at `time_of_impact`, the
/// complement of its bits (times are in [0, 1], so their bits order them, and the largest
/// complement is the least time; 0, below every complement, is no hit).
fn time_key(time_of_impact: f32) -> u32 {
    !time_of_impact.to_bits()
}

/// `earliest_times`, invocation `i`: candidate `i`, if the sweep hit, counted in `hit_count`,
/// and its time kept as each body's least (word `2 · body` of `earliest_keys`, two words a
/// body: the shader's `atomicMax` of `time_key`).
pub fn earliest_times(
    i: usize,
    pairs: &[[u32; 2]],
    impacts: &[ImpactRecord],
    sweep_dispatch: &SweepDispatch,
    earliest_keys: &mut [u32],
    hit_count: &mut u32,
) {
    if !is_swept_hit(i, sweep_dispatch, impacts) {
        return;
    }
    *hit_count = hit_count.wrapping_add(1);
    let key = time_key(impacts[i].time_of_impact);
    for body in pairs[i] {
        let slot = &mut earliest_keys[2 * body as usize];
        *slot = (*slot).max(key);
    }
}

/// `keep_partner`: `partner` as the lowest partner of `body` (the complement's maximum in
/// word `2 · body + 1`), if this hit at `key` is at the body's least time.
fn keep_partner(body: u32, partner: u32, key: u32, earliest_keys: &mut [u32]) {
    let body = body as usize;
    if earliest_keys[2 * body] == key {
        let slot = &mut earliest_keys[2 * body + 1];
        *slot = (*slot).max(!partner);
    }
}

/// `earliest_partners`, invocation `i` (after every invocation of [`earliest_times`]):
/// candidate `i`, if a hit at a body's least time, kept as that body's lowest partner at it.
pub fn earliest_partners(
    i: usize,
    pairs: &[[u32; 2]],
    impacts: &[ImpactRecord],
    sweep_dispatch: &SweepDispatch,
    earliest_keys: &mut [u32],
) {
    if !is_swept_hit(i, sweep_dispatch, impacts) {
        return;
    }
    let key = time_key(impacts[i].time_of_impact);
    let [a, b] = pairs[i];
    keep_partner(a, b, key, earliest_keys);
    keep_partner(b, a, key, earliest_keys);
}

/// `write_if_earliest`: the hit `impact` of `body` with `partner` (through its image
/// `image`) as the body's record, if it is the one both of the body's keys name.
fn write_if_earliest(
    body: u32,
    partner: u32,
    impact: &ImpactRecord,
    image: [i32; 3],
    earliest_keys: &[u32],
    earliest_contacts: &mut [EarliestRecord],
) {
    let body = body as usize;
    if earliest_keys[2 * body] == time_key(impact.time_of_impact)
        && earliest_keys[2 * body + 1] == !partner
    {
        earliest_contacts[body] = EarliestRecord {
            time_of_impact: impact.time_of_impact,
            other: partner,
            status: impact.status,
            kind: EARLIEST_BODY,
            image,
            _pad: 0,
        };
    }
}

/// `earliest_records`, invocation `i` (after every invocation of [`earliest_partners`]):
/// candidate `i`, if the hit both keys of one of its bodies name, written as that body's
/// [`EarliestRecord`], with the image `compact` takes for the pair (negated for the second
/// body, which sees the first at the opposite image). A pair is one candidate, so each
/// record is written once.
#[allow(clippy::too_many_arguments)]
pub fn earliest_records(
    i: usize,
    params: &StepParams,
    bodies: &[BodyRecord],
    pairs: &[[u32; 2]],
    impacts: &[ImpactRecord],
    sweep_dispatch: &SweepDispatch,
    earliest_keys: &[u32],
    earliest_contacts: &mut [EarliestRecord],
) {
    if !is_swept_hit(i, sweep_dispatch, impacts) {
        return;
    }
    let impact = &impacts[i];
    let [a, b] = pairs[i];
    let image = image_of(params, bodies[a as usize].center, bodies[b as usize].center);
    write_if_earliest(a, b, impact, image, earliest_keys, earliest_contacts);
    write_if_earliest(
        b,
        a,
        impact,
        image.map(i32::wrapping_neg),
        earliest_keys,
        earliest_contacts,
    );
}

/// `earliest_walls`, invocation `i` (body `i`, after [`earliest_records`] and the walls
/// stage): the body's earliest wall (`wall_contacts`, the walls stage's output) as its
/// record where it has no pair contact or the wall is strictly earlier; at the same time the
/// pair wins (a fixed rule, so that every path names the same one, and the two bodies of the
/// pair keep naming each other). The record of a wall has image 0.
pub fn earliest_walls(
    i: usize,
    params: &StepParams,
    wall_contacts: &[WallContactRecord],
    earliest_contacts: &mut [EarliestRecord],
) {
    if i >= params.body_count as usize {
        return;
    }
    let wall = &wall_contacts[i];
    if wall.impact.status == STATUS_MISS {
        return;
    }
    let pair = &earliest_contacts[i];
    if pair.kind == EARLIEST_NONE || wall.impact.time_of_impact < pair.time_of_impact {
        earliest_contacts[i] = EarliestRecord {
            time_of_impact: wall.impact.time_of_impact,
            other: wall.wall,
            status: wall.impact.status,
            kind: EARLIEST_WALL,
            image: [0; 3],
            _pad: 0,
        };
    }
}
