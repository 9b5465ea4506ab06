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
//! [`sort_by_key`](super::broad_phase::sort_by_key).

use glam::Vec3;

use crate::layout::{
    ContactRecord, ImpactRecord, KeyValue, STATUS_MISS, StepParams, SweepDispatch,
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
    bodies: &[crate::layout::BodyRecord],
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
