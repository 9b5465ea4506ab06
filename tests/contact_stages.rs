//! The stages of `shaders/contacts.wgsl`, the GPU step's outputs, each run alone on the device
//! and beside its twin in `sweepcast::low_level::contacts` on the same input.
//!
//! * `compact`: the contacts of swept candidates (hits and overlaps kept, misses dropped),
//!   each with the image of its second body; as a set (the invocations append in any order),
//!   with its count, also past the capacity.
//! * `prepare_contacts`: the dispatch of the passes after it, from counts below, at and past
//!   the capacity and past one dimension of workgroups.
//! * `key_by_second`, `key_by_first`, `key_by_time` and `order_contacts`: keys, ordered
//!   contacts and each body's earliest, bit for bit, after the twin's sorts.
//! * `earliest_times`, `earliest_partners`, `earliest_records` and `earliest_walls`, the
//!   earliest contact per body without a sort: keys, hit count and records bit for bit, each
//!   from the twin's output of the pass before; the twin's records, in any order of the
//!   candidates, are the CPU step's earliest contact (or wall, where strictly earlier) of
//!   every body, and its count the CPU step's contacts. Also on scenes of exact ties (at
//!   t = 0 and after, pair against wall too), so that every tie-break is exercised.
//!
//! Candidates are every pair of bodies whose swept boxes can meet (through the nearest image
//! in a periodic box): every pair the CPU step could find, swept by the f32 twin of the sweep;
//! uniform, 100×-radii and periodic scenes.

mod common;

use common::{StageRunner, cast, unwritten, unwritten_twin};
use sweepcast::EarliestImpact;
use sweepcast::glam::{Vec2, Vec3};
use sweepcast::low_level::CONTACTS_WGSL;
use sweepcast::low_level::contacts as twin;
use sweepcast::low_level::frame::sort_by_key;
use sweepcast::low_level::layout::{
    BodyRecord, ContactRecord, EARLIEST_BODY, EARLIEST_WALL, EarliestRecord, ImpactRecord,
    KeyValue, STATUS_MISS, StepParams, SweepDispatch, SweepParams, WallContactRecord, WallParams,
    WallRecord,
};
use sweepcast::{MovingSphere, Partner, PeriodicBox, SweepOptions, Wall, cpu};
use testkit::Scene;

/// `bodies`' candidates and their impacts: every pair whose swept boxes can meet
/// ([`common::may_meet`]), so every pair the CPU step could find.
fn candidates(records: &[BodyRecord], sweep: &SweepParams) -> (Vec<[u32; 2]>, Vec<ImpactRecord>) {
    let mut pairs = Vec::new();
    for a in 0..records.len() {
        for b in a + 1..records.len() {
            if common::may_meet(&records[a], &records[b], sweep) {
                pairs.push([a as u32, b as u32]);
            }
        }
    }
    let impacts = pairs
        .iter()
        .map(|&[a, b]| {
            sweepcast::low_level::sweep::sweep_pair(
                &records[a as usize],
                &records[b as usize],
                sweep,
            )
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
        for (count, capacity) in common::COUNTS_AND_CAPACITIES {
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

/// A scene of exact ties (coordinates and times are dyadic, so that every sweep is exact):
/// clusters of bodies of radius 1/2, 8 apart on a grid of 64 (8 by 8 in 2D, 4 by 4 by 4 in
/// 3D), of four kinds in turn:
///
/// * spokes: a resting hub met at t = 1/2 by a body along each axis from either side, half
///   of them before the hub in index order and half after;
/// * overlaps: a hub overlapping a body along each axis from either side at t = 0 (hub and
///   bodies all at time 0 with each other);
/// * a wall tie: a body that meets a segment and another body both at t = 1/2 (the pair
///   wins);
/// * a wall first: the same with the segment nearer, met at t = 1/4 (the wall wins).
///
/// With `periodic`, in a box of the grid's side on each axis that wraps, where the clusters at
/// 0 straddle the
/// box's faces (spokes and overlaps only there: the walls lie inside the box).
fn ties(dimensions: u32, periodic: bool) -> (Vec<MovingSphere>, Vec<Wall>, SweepOptions) {
    const SPACING: f32 = 8.0;
    let per_axis = if dimensions == 2 { 8 } else { 4 };
    let period = SPACING * per_axis as f32;
    let axes = &[Vec3::X, Vec3::Y, Vec3::Z][..dimensions as usize];
    let wrap = |center: Vec3| {
        if periodic {
            // z = 0 in 2D, where it does not wrap.
            center.map(|x| x.rem_euclid(period))
        } else {
            center
        }
    };
    let body =
        |center: Vec3, displacement: Vec3| MovingSphere::new(wrap(center), 0.5, displacement);
    let (mut bodies, mut walls) = (Vec::new(), Vec::new());
    let z_clusters = if dimensions == 3 { per_axis } else { 1 };
    let mut cluster = 0;
    for ix in 0..per_axis {
        for iy in 0..per_axis {
            for iz in 0..z_clusters {
                let center = Vec3::new(ix as f32, iy as f32, iz as f32) * SPACING;
                let on_face = ix == 0 || iy == 0 || (dimensions == 3 && iz == 0);
                let kind = if on_face { cluster % 2 } else { cluster % 4 };
                cluster += 1;
                match kind {
                    0 | 1 => {
                        // Spokes from 1.5 away (gap 1/2, closing at 1), or overlaps.
                        let distance = if kind == 0 { 1.5 } else { 0.5 };
                        let spokes: Vec<Vec3> =
                            axes.iter().flat_map(|&axis| [axis, -axis]).collect();
                        let (before, after) = spokes.split_at(spokes.len() / 2);
                        bodies.extend(before.iter().map(|&d| body(center + d * distance, -d)));
                        bodies.push(body(center, Vec3::ZERO));
                        bodies.extend(after.iter().map(|&d| body(center + d * distance, -d)));
                    }
                    _ => {
                        // Moving 1 along x towards a segment across x, `gap` ahead; a partner
                        // moving along with it and closing 1/2 along y at t = 1/2.
                        let gap = if kind == 2 { 1.0 } else { 0.75 };
                        bodies.push(body(center, Vec3::X));
                        bodies.push(body(center + Vec3::Y * 1.5, Vec3::X - Vec3::Y));
                        walls.push(Wall::segment_3d(
                            center + Vec3::new(gap, -0.25, 0.0),
                            center + Vec3::new(gap, 0.25, 0.0),
                        ));
                    }
                }
            }
        }
    }
    let mut options = SweepOptions::default();
    if periodic {
        let periodic_box = if dimensions == 2 {
            PeriodicBox::rectangle(Vec2::splat(period))
        } else {
            PeriodicBox::cube(period)
        };
        options = options.with_periodic_box(periodic_box.expect("a positive side"));
    }
    (bodies, walls, options)
}

/// The twin's earliest passes over `order` (the candidates' indices, in the order visited)
/// and then over the bodies: the keys after `earliest_times` and after `earliest_partners`,
/// the hit count, and the records after `earliest_records` and after `earliest_walls`.
struct EarliestTwin {
    time_keys: Vec<u32>,
    keys: Vec<u32>,
    hit_count: u32,
    pair_records: Vec<EarliestRecord>,
    records: Vec<EarliestRecord>,
}

#[allow(clippy::too_many_arguments)]
fn earliest_twin(
    order: &[usize],
    params: &StepParams,
    records: &[BodyRecord],
    pairs: &[[u32; 2]],
    impacts: &[ImpactRecord],
    sweep_dispatch: &SweepDispatch,
    wall_contacts: &[WallContactRecord],
) -> EarliestTwin {
    let mut keys = vec![0u32; 2 * records.len()];
    let mut hit_count = 0;
    for &i in order {
        twin::earliest_times(i, pairs, impacts, sweep_dispatch, &mut keys, &mut hit_count);
    }
    let time_keys = keys.clone();
    for &i in order {
        twin::earliest_partners(i, pairs, impacts, sweep_dispatch, &mut keys);
    }
    let mut earliest = vec![EarliestRecord::default(); records.len()];
    for &i in order {
        twin::earliest_records(
            i,
            params,
            records,
            pairs,
            impacts,
            sweep_dispatch,
            &keys,
            &mut earliest,
        );
    }
    let pair_records = earliest.clone();
    for body in (0..records.len()).rev() {
        twin::earliest_walls(body, params, wall_contacts, &mut earliest);
    }
    EarliestTwin {
        time_keys,
        keys,
        hit_count,
        pair_records,
        records: earliest,
    }
}

/// Whether two runs of records are equal byte for byte.
fn same_records(a: &[EarliestRecord], b: &[EarliestRecord]) -> bool {
    bytemuck::cast_slice::<EarliestRecord, u8>(a) == bytemuck::cast_slice::<EarliestRecord, u8>(b)
}

/// A decoded record with its time as bits, to compare to the bit.
fn exactly(impact: Option<EarliestImpact>) -> Option<(u32, sweepcast::ImpactStatus, Partner)> {
    impact.map(|impact| {
        (
            impact.time_of_impact.to_bits(),
            impact.status,
            impact.partner,
        )
    })
}

#[test]
fn earliest_stages_equal_their_twins_and_the_cpu_step() {
    let Some(context) = common::gpu_context("earliest_stages_equal_their_twins_and_the_cpu_step")
    else {
        return;
    };
    let stages = StageRunner::new(&context, "contacts.wgsl", CONTACTS_WGSL);
    let mut finder = cpu::ContactFinder::new();
    let mut cases = Vec::new();
    for (scene, dimensions) in [
        (Scene::Uniform, 3),
        (Scene::Radii100, 3),
        (Scene::Periodic, 3),
        (Scene::Periodic, 2),
    ] {
        let (bodies, options) = scene.bodies(1500, dimensions, 3);
        let walls = common::walls_through(&bodies, dimensions);
        cases.push((
            format!("{scene:?} {dimensions}D"),
            bodies,
            walls,
            options,
            false,
        ));
    }
    for (dimensions, periodic) in [(2, false), (3, false), (2, true), (3, true)] {
        let (bodies, walls, options) = ties(dimensions, periodic);
        let name = format!(
            "ties {dimensions}D{}",
            if periodic { " periodic" } else { "" }
        );
        cases.push((name, bodies, walls, options, true));
    }
    for (name, bodies, walls, options, exact_ties) in cases {
        let records: Vec<BodyRecord> = bodies.iter().map(|&body| body.into()).collect();
        let sweep = SweepParams::new(&options, 0);
        let (pairs, impacts) = candidates(&records, &sweep);
        let params = StepParams {
            period: sweep.period,
            flags: sweep.flags,
            inverse_period: sweep.inverse_period,
            body_count: records.len() as u32,
            ..StepParams::default()
        };
        let sweep_dispatch = SweepDispatch::new(pairs.len() as u32);
        let wall_records: Vec<WallRecord> = walls.iter().map(WallRecord::from).collect();
        let wall_params = WallParams::new(&options, records.len() as u32, walls.len() as u32);
        let mut wall_contacts = vec![WallContactRecord::default(); records.len()];
        for body in 0..records.len() as u32 {
            sweepcast::low_level::walls::main(
                body,
                &records,
                &wall_records,
                &mut wall_contacts,
                &wall_params,
            );
        }
        let twin_over = |order: &[usize]| {
            earliest_twin(
                order,
                &params,
                &records,
                &pairs,
                &impacts,
                &sweep_dispatch,
                &wall_contacts,
            )
        };
        let order: Vec<usize> = (0..pairs.len()).collect();
        let ours = twin_over(&order);

        // Each pass on the device from the twin's output of the pass before.
        let n = records.len();
        let zeros = vec![0u8; 8 * n];
        // The passes over the candidates: bindings 2 to 4 (pairs, impacts, the sweep's
        // dispatch) and `more`, whose contents afterwards they return, in order.
        let over_candidates = |entry: &str, params: Option<&StepParams>, more: &[(u32, &[u8])]| {
            let mut bindings: Vec<(u32, &[u8])> = vec![
                (2, bytemuck::cast_slice(&pairs)),
                (3, bytemuck::cast_slice(&impacts)),
                (4, bytemuck::bytes_of(&sweep_dispatch)),
            ];
            bindings.extend_from_slice(more);
            stages
                .run(entry, params, pairs.len(), &bindings)
                .split_off(3)
        };
        let out = over_candidates("earliest_times", None, &[(13, &zeros), (14, &[0; 4])]);
        assert_eq!(cast::<u32>(&out[0], 2 * n), ours.time_keys, "{name}: times");
        assert_eq!(cast::<u32>(&out[1], 1)[0], ours.hit_count, "{name}: hits");
        let out = over_candidates(
            "earliest_partners",
            None,
            &[(13, bytemuck::cast_slice(&ours.time_keys))],
        );
        assert_eq!(cast::<u32>(&out[0], 2 * n), ours.keys, "{name}: partners");
        let out = over_candidates(
            "earliest_records",
            Some(&params),
            &[
                (1, bytemuck::cast_slice(&records)),
                (13, bytemuck::cast_slice(&ours.keys)),
                (15, &vec![0; size_of::<EarliestRecord>() * n]),
            ],
        );
        assert!(
            same_records(&cast::<EarliestRecord>(&out[2], n), &ours.pair_records),
            "{name}: pair records"
        );
        let out = stages.run(
            "earliest_walls",
            Some(&params),
            n,
            &[
                (15, bytemuck::cast_slice(&ours.pair_records)),
                (16, bytemuck::cast_slice(&wall_contacts)),
            ],
        );
        assert!(
            same_records(&cast::<EarliestRecord>(&out[0], n), &ours.records),
            "{name}: records with walls"
        );

        // The answer does not depend on the order the candidates are visited in.
        let reversed: Vec<usize> = order.iter().rev().copied().collect();
        let theirs = twin_over(&reversed);
        assert_eq!(theirs.keys, ours.keys, "{name}: keys in reverse order");
        assert!(
            same_records(&theirs.records, &ours.records),
            "{name}: records in reverse order"
        );

        // The CPU step's earliest contacts and walls, and its count.
        let step = finder
            .find_with_walls(&bodies, &walls, options)
            .expect("a valid scene");
        assert_eq!(
            ours.hit_count as usize,
            step.contacts().len(),
            "{name}: the candidates hold every contact of the step"
        );
        // The CPU step's answer in the records' terms (`Contacts::earliest_impacts`: the
        // partner seen from each body, the image negated for a pair's second body, a wall
        // only where strictly earlier).
        let cpu_earliest = step.earliest_impacts();
        assert_eq!(cpu_earliest.len(), n, "{name}");
        for (body, (record, cpu)) in ours.records.iter().zip(&cpu_earliest).enumerate() {
            assert_eq!(
                exactly(record.decode()),
                exactly(*cpu),
                "{name}: body {body}"
            );
        }
        assert!(
            ours.records
                .iter()
                .all(|record| record.decode().is_some() || *record == EarliestRecord::default()),
            "{name}: a record that decodes to nothing is all zero"
        );

        // What the scene exercised: ties of time at a body (at t = 0 and after), walls that
        // win, pairs that win a tie with a wall, images across the box.
        let mut least = vec![(u32::MAX, 0u32); n];
        for (&pair, impact) in pairs.iter().zip(&impacts) {
            if impact.status == STATUS_MISS {
                continue;
            }
            for body in pair {
                let (time, count) = &mut least[body as usize];
                let bits = impact.time_of_impact.to_bits();
                if bits < *time {
                    (*time, *count) = (bits, 1);
                } else if bits == *time {
                    *count += 1;
                }
            }
        }
        let tied = |at_zero: bool| {
            least
                .iter()
                .filter(|&&(time, count)| count > 1 && (time == 0) == at_zero)
                .count()
        };
        let wall_wins = ours
            .records
            .iter()
            .filter(|record| record.kind == EARLIEST_WALL)
            .count();
        let pair_wins_tie = ours
            .pair_records
            .iter()
            .zip(&wall_contacts)
            .filter(|(record, wall)| {
                record.kind == EARLIEST_BODY
                    && wall.impact.status != STATUS_MISS
                    && wall.impact.time_of_impact == record.time_of_impact
            })
            .count();
        let across = ours
            .records
            .iter()
            .filter(|record| record.kind == EARLIEST_BODY && record.image != [0; 3])
            .count();
        eprintln!(
            "{name}: {} candidates, {} hits, ties at a body: {} at t = 0, {} after; {wall_wins} \
             walls first, {pair_wins_tie} pairs win a tie with a wall, {across} across the box",
            pairs.len(),
            ours.hit_count,
            tied(true),
            tied(false),
        );
        assert!(ours.hit_count > 100, "{name}: too few hits to test");
        assert!(wall_wins > 0, "{name}: no wall is met first");
        if exact_ties {
            assert!(tied(true) > 10 && tied(false) > 10, "{name}: too few ties");
            assert!(pair_wins_tie > 0, "{name}: no pair ties with a wall");
        }
        if options.periodic_box.is_some() {
            assert!(across > 0, "{name}: no earliest partner across the box");
        }
    }
}
