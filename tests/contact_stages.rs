//! The stages of `shaders/contacts.wgsl`, the GPU step's outputs, each run alone on the device
//! and beside its twin in `sweepcast::cpu::contacts` on the same input.
//!
//! * `compact`: the contacts of swept candidates (hits and overlaps kept, misses dropped),
//!   each with the image of its second body; as a set (the invocations append in any order),
//!   with its count, also past the capacity.
//! * `prepare_contacts`: the dispatch of the passes after it, from counts below, at and past
//!   the capacity and past one dimension of workgroups.
//! * `key_by_second`, `key_by_first`, `key_by_time` and `order_contacts`: keys, ordered
//!   contacts and each body's earliest, bit for bit, after the twin's sorts.
//!
//! Candidates are every pair of bodies within 8 of each other (through the nearest image in a
//! periodic box), swept by the f32 twin of the sweep; uniform, 100×-radii and periodic scenes.

mod common;

use common::{StageRunner, cast, unwritten, unwritten_twin};
use sweepcast::cpu::broad_phase::sort_by_key;
use sweepcast::cpu::contacts as twin;
use sweepcast::gpu::CONTACTS_WGSL;
use sweepcast::layout::{
    BodyRecord, ContactRecord, FLAG_PERIODIC, ImpactRecord, KeyValue, StepParams, SweepDispatch,
    SweepParams,
};
use sweepcast::{MovingSphere, SweepOptions};
use testkit::Scene;

/// `bodies`' candidates (every pair within 8, through the nearest image) and their impacts.
fn candidates(records: &[BodyRecord], sweep: &SweepParams) -> (Vec<[u32; 2]>, Vec<ImpactRecord>) {
    let mut pairs = Vec::new();
    for a in 0..records.len() {
        for b in a + 1..records.len() {
            let close = (0..3).all(|k| {
                let mut d = records[b].center[k] - records[a].center[k];
                if sweep.flags & FLAG_PERIODIC != 0 {
                    d -= sweep.period[k] * (d * sweep.inverse_period[k]).round();
                }
                d.abs() < 8.0
            });
            if close {
                pairs.push([a as u32, b as u32]);
            }
        }
    }
    let impacts = pairs
        .iter()
        .map(|&[a, b]| {
            sweepcast::cpu::sweep::sweep_pair(&records[a as usize], &records[b as usize], sweep)
        })
        .collect();
    (pairs, impacts)
}

/// Contacts sorted by their bytes (the device appends in any order).
fn sorted(mut contacts: Vec<ContactRecord>) -> Vec<ContactRecord> {
    contacts.sort_by(|a, b| bytemuck::bytes_of(a).cmp(bytemuck::bytes_of(b)));
    contacts
}

/// Whether two runs of contacts are equal byte for byte.
fn same(a: &[ContactRecord], b: &[ContactRecord]) -> bool {
    bytemuck::cast_slice::<ContactRecord, u8>(a) == bytemuck::cast_slice::<ContactRecord, u8>(b)
}

#[test]
fn contact_stages_equal_their_twins() {
    let Some(context) = common::gpu_context("contact_stages_equal_their_twins") else {
        return;
    };
    let stages = StageRunner::new(&context, "contacts.wgsl", CONTACTS_WGSL);
    let cases = [
        (Scene::Uniform, 3),
        (Scene::Radii100, 3),
        (Scene::Periodic, 3),
        (Scene::Periodic, 2),
    ];
    for (scene, dimensions) in cases {
        let name = format!("{scene:?} {dimensions}D");
        let (bodies, options): (Vec<MovingSphere>, SweepOptions) =
            scene.bodies(1500, dimensions, 3);
        let records: Vec<BodyRecord> = bodies.iter().map(|&body| body.into()).collect();
        let sweep = SweepParams::new(&options, 0);
        let (pairs, impacts) = candidates(&records, &sweep);
        let mut params = StepParams {
            period: sweep.period,
            flags: sweep.flags,
            inverse_period: sweep.inverse_period,
            body_count: records.len() as u32,
            contact_capacity: pairs.len() as u32,
            ..StepParams::default()
        };
        let sweep_dispatch = SweepDispatch::new(pairs.len() as u32);

        // compact, with room for every hit and then for half of them.
        let mut full = Vec::new();
        for capacity in [pairs.len(), 0] {
            let capacity = if capacity == 0 {
                full.len() / 2
            } else {
                capacity
            };
            params.contact_capacity = capacity as u32;
            let mut count = 0;
            let mut contacts = unwritten_twin::<ContactRecord>(capacity);
            for i in 0..pairs.len() {
                twin::compact(
                    i,
                    &params,
                    &records,
                    &pairs,
                    &impacts,
                    &sweep_dispatch,
                    &mut count,
                    &mut contacts,
                );
            }
            let out = stages.run(
                "compact",
                Some(&params),
                pairs.len(),
                &[
                    (1, bytemuck::cast_slice(&records)),
                    (2, bytemuck::cast_slice(&pairs)),
                    (3, bytemuck::cast_slice(&impacts)),
                    (4, bytemuck::bytes_of(&sweep_dispatch)),
                    (5, &[0; 4]),
                    (6, &unwritten::<ContactRecord>(capacity)),
                ],
            );
            let device_count = cast::<u32>(&out[4], 1)[0];
            assert_eq!(device_count, count, "{name}: contacts counted");
            let written = (count as usize).min(capacity);
            let device = sorted(cast::<ContactRecord>(&out[5], written));
            if capacity == pairs.len() {
                assert!(
                    same(&device, &sorted(contacts[..written].to_vec())),
                    "{name}: contacts"
                );
                assert!(count > 100, "{name}: too few contacts to test");
                full = contacts[..written].to_vec();
            } else {
                let all = sorted(full.clone());
                assert!(
                    device
                        .iter()
                        .all(|contact| all.iter().any(|c| same(&[*c], &[*contact]))),
                    "{name}: past the capacity, a contact the twin does not find"
                );
            }
        }
        params.contact_capacity = pairs.len() as u32;
        if options.periodic_box.is_some() {
            assert!(
                full.iter().any(|contact| contact.image != [0; 3]),
                "{name}: no contact across the box, the image is not tested"
            );
        }

        // prepare_contacts: below, at and past the capacity, and past one dimension.
        for (count, capacity) in [
            (0u32, 10u32),
            (1, 10),
            (64, 64),
            (65, 1000),
            (900, 800),
            // Exactly 65,536 workgroups (one past a dimension), and more.
            (4_194_304, 5_000_000),
            (5_000_000, 6_000_000),
        ] {
            let prepared_params = StepParams {
                contact_capacity: capacity,
                ..params
            };
            let mut dispatch =
                bytemuck::pod_read_unaligned::<SweepDispatch>(&unwritten::<SweepDispatch>(1));
            twin::prepare_contacts(&prepared_params, count, &mut dispatch);
            let out = stages.run(
                "prepare_contacts",
                Some(&prepared_params),
                1,
                &[
                    (5, bytemuck::bytes_of(&count)),
                    (7, &unwritten::<SweepDispatch>(1)),
                ],
            );
            assert_eq!(
                cast::<SweepDispatch>(&out[1], 1)[0],
                dispatch,
                "{count} of {capacity}"
            );
        }

        // The keys, the order and the earliest, from the twin's contacts and sorts.
        let n = full.len();
        let dispatched = SweepDispatch::new(n as u32);
        let run = |entry: &str, bindings: &[(u32, &[u8])]| stages.run(entry, None, n, bindings);
        let mut keys = unwritten_twin::<KeyValue>(n);
        for i in 0..n {
            twin::key_by_second(i, &dispatched, &full, &mut keys);
        }
        let out = run(
            "key_by_second",
            &[
                (6, bytemuck::cast_slice(&full)),
                (8, &unwritten::<KeyValue>(n)),
                (12, bytemuck::bytes_of(&dispatched)),
            ],
        );
        assert_eq!(cast::<KeyValue>(&out[1], n), keys, "{name}: keys by second");
        let mut sort_out = keys.clone();
        for (entry, step) in [
            (
                "key_by_first",
                twin::key_by_first
                    as fn(usize, &SweepDispatch, &[ContactRecord], &[KeyValue], &mut [KeyValue]),
            ),
            ("key_by_time", twin::key_by_time),
        ] {
            sort_by_key(&keys, &mut sort_out);
            for i in 0..n {
                step(i, &dispatched, &full, &sort_out, &mut keys);
            }
            let out = run(
                entry,
                &[
                    (6, bytemuck::cast_slice(&full)),
                    (8, &unwritten::<KeyValue>(n)),
                    (9, bytemuck::cast_slice(&sort_out)),
                    (12, bytemuck::bytes_of(&dispatched)),
                ],
            );
            assert_eq!(cast::<KeyValue>(&out[1], n), keys, "{name}: {entry}");
        }
        sort_by_key(&keys, &mut sort_out);
        let mut ordered = unwritten_twin::<ContactRecord>(n);
        let mut earliest = vec![0u32; records.len()];
        for i in 0..n {
            twin::order_contacts(
                i,
                &dispatched,
                &full,
                &sort_out,
                &mut ordered,
                &mut earliest,
            );
        }
        let out = run(
            "order_contacts",
            &[
                (6, bytemuck::cast_slice(&full)),
                (9, bytemuck::cast_slice(&sort_out)),
                (10, &unwritten::<ContactRecord>(n)),
                (11, &vec![0; 4 * records.len()]),
                (12, bytemuck::bytes_of(&dispatched)),
            ],
        );
        assert!(
            same(&cast::<ContactRecord>(&out[2], n), &ordered),
            "{name}: ordered contacts"
        );
        assert_eq!(
            cast::<u32>(&out[3], records.len()),
            earliest,
            "{name}: earliest per body"
        );
        // And the order is the step's: by time, then pair.
        assert!(ordered.windows(2).all(|w| {
            let key = |c: &ContactRecord| (c.impact.time_of_impact.to_bits(), c.pair);
            key(&w[0]) <= key(&w[1])
        }));
        eprintln!(
            "{name}: {} candidates, {n} contacts, every stage equal to its twin",
            pairs.len()
        );
    }
}
