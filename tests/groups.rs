//! Collision groups (`sweepcast::CollisionGroups`) on every path that finds pairs:
//!
//! * `the_cpu_step_with_groups_is_brute_force_with_groups`: every scene, 2D and 3D, with
//!   random groups, every body in every group, in none, and bullets among targets: the CPU
//!   step's contacts, earliest per body and earliest of the step are those of every pair swept
//!   (`cpu::sweep_sphere_sphere`) and kept where their groups interact.
//! * `no_filtered_pair_is_a_candidate`: bodies split in two groups, once meeting only the
//!   other group and once only their own: the two steps' candidates add up to those of the
//!   step without groups, so that no pair is a candidate of both (a filtered pair is never a
//!   candidate); the same on the GPU step.
//! * `the_gpu_step_with_groups_is_brute_force_with_groups` and
//!   `the_step_stage_reads_the_groups_in_the_callers_records` (with an adapter): the GPU
//!   step's contacts with groups are its own without groups, less the filtered pairs, on
//!   any adapter, and brute force's pairs and times where its sweep rounds as the CPU's
//!   (lavapipe); the
//!   resident stage, with the groups written in the caller's records, gives the pipeline's.
//! * `bodies_of_groups_that_do_not_interact_pass_through_each_other` and
//!   `every_broad_phase_gives_the_events_of_every_pair_with_groups`: the event loop.
//! * `groups_of_another_length_are_a_typed_error`.

mod common;

use sweepcast::events::{AllPairs, BroadPhase, Cells, Elastic, Event, EventBody, EventLoop};
use sweepcast::glam::{DVec3, Vec3};
use sweepcast::{CollisionGroups, Error, Impact, MovingSphere, PeriodicBox, SweepOptions, cpu};
use testkit::Scene;

use testkit::{BULLET, TARGET};

/// Every pair that interacts and hits, swept by `cpu::sweep_sphere_sphere`, in the step's
/// order (time, then pair).
fn brute_force(
    bodies: &[MovingSphere],
    groups: &[CollisionGroups],
    options: SweepOptions,
) -> Vec<([u32; 2], Impact)> {
    let n = bodies.len() as u32;
    let mut hits: Vec<([u32; 2], Impact)> = (0..n)
        .flat_map(|a| (a + 1..n).map(move |b| [a, b]))
        .filter(|&[a, b]| groups[a as usize].interacts_with(groups[b as usize]))
        .filter_map(|[a, b]| {
            let impact =
                cpu::sweep_sphere_sphere(&bodies[a as usize], &bodies[b as usize], options)?;
            Some(([a, b], impact))
        })
        .collect();
    hits.sort_by_key(|(pair, impact)| (impact.time_of_impact.to_bits(), *pair));
    hits
}

/// The group sets a world is checked with: random ones, every body in every group, in
/// none, and bullets (meeting targets only) with one target in ten.
fn group_sets(n: usize, seed: u64) -> Vec<(&'static str, Vec<CollisionGroups>)> {
    let bullet = CollisionGroups::new(BULLET, TARGET);
    let target = CollisionGroups::new(TARGET, BULLET | TARGET);
    vec![
        ("random", testkit::random_groups(n, seed)),
        ("all", vec![CollisionGroups::ALL; n]),
        ("none", vec![CollisionGroups::NONE; n]),
        (
            "bullets",
            (0..n)
                .map(|i| if i % 10 == 0 { target } else { bullet })
                .collect(),
        ),
    ]
}

/// `contacts` are `hits` (pairs and impacts, in order), with the earliest per body and of
/// the step that follow from them.
fn assert_contacts(
    label: &str,
    n: usize,
    contacts: &sweepcast::Contacts,
    hits: &[([u32; 2], Impact)],
) {
    let found: Vec<([u32; 2], Impact)> = contacts
        .contacts()
        .iter()
        .map(|contact| (contact.pair().unwrap(), contact.impact))
        .collect();
    assert_eq!(found.len(), hits.len(), "{label}: contact count");
    if let Some((got, want)) = found.iter().zip(hits).find(|(got, want)| got != want) {
        panic!("{label}: {got:?} where brute force has {want:?}");
    }
    let mut earliest: Vec<Option<u32>> = vec![None; n];
    for &([a, b], _) in hits {
        earliest[a as usize].get_or_insert(b);
        earliest[b as usize].get_or_insert(a);
    }
    let partners: Vec<Option<u32>> = testkit::earliest_per_body(contacts, n)
        .iter()
        .map(|earliest| earliest.map(|e| e.1))
        .collect();
    assert_eq!(partners, earliest, "{label}: earliest partners");
    assert_eq!(
        contacts.contacts().first().map(|c| c.pair().unwrap()),
        hits.first().map(|(pair, _)| *pair),
        "{label}: earliest of the step"
    );
}

/// Every scene (2D and 3D) and its group sets.
fn worlds(n: usize) -> Vec<common::GroupedWorld> {
    let mut worlds = Vec::new();
    for (k, scene) in Scene::ALL.into_iter().enumerate() {
        for dimensions in [2, 3] {
            let (bodies, options) = scene.bodies(n, dimensions, 5 + k as u64);
            for (name, groups) in group_sets(n, 17 + k as u64) {
                worlds.push((
                    format!("{scene:?} {dimensions}D, {name} groups"),
                    bodies.clone(),
                    options,
                    groups,
                ));
            }
        }
    }
    worlds
}

#[test]
fn the_cpu_step_with_groups_is_brute_force_with_groups() {
    let mut finder = cpu::ContactFinder::new();
    let mut filtered_any = false;
    for (label, bodies, options, groups) in worlds(1000) {
        let hits = brute_force(&bodies, &groups, options);
        finder.set_groups(&groups);
        let contacts = finder.find(&bodies, options).expect("valid bodies");
        assert_contacts(&label, bodies.len(), contacts, &hits);
        let candidates = contacts.candidates();
        finder.set_groups(&[]);
        let ungrouped = finder.find(&bodies, options).expect("valid bodies");
        assert!(candidates <= ungrouped.candidates(), "{label}");
        if label.ends_with("none groups") {
            assert_eq!(candidates, 0, "{label}");
        }
        filtered_any |= ungrouped.contacts().len() > hits.len();
        println!(
            "{label}: {candidates} candidates ({} without groups), {} contacts ({} without)",
            ungrouped.candidates(),
            hits.len(),
            ungrouped.contacts().len()
        );
    }
    assert!(filtered_any, "the groups filtered no contact");
}

/// Bodies split into two groups by index parity: `across`, each meets only the other group;
/// not, only its own.
fn split(n: usize, across: bool) -> Vec<CollisionGroups> {
    (0..n)
        .map(|i| {
            let own = 1 << (i % 2);
            CollisionGroups::new(own, if across { 3 ^ own } else { own })
        })
        .collect()
}

#[test]
fn no_filtered_pair_is_a_candidate() {
    let mut finder = cpu::ContactFinder::new();
    for scene in Scene::ALL {
        for dimensions in [2, 3] {
            let (bodies, options) = scene.bodies(3000, dimensions, 3);
            let mut candidates = |groups: &[CollisionGroups]| {
                finder.set_groups(groups);
                finder.find(&bodies, options).unwrap().candidates()
            };
            let all = candidates(&[]);
            let across = candidates(&split(bodies.len(), true));
            let within = candidates(&split(bodies.len(), false));
            assert_eq!(across + within, all, "{scene:?} {dimensions}D");
            assert!(across > 0 && within > 0, "{scene:?} {dimensions}D");
        }
    }
}

/// Two equal balls moving towards each other along x, from x = ∓3: they touch at t = 1.
fn head_on(groups: [CollisionGroups; 2]) -> [EventBody; 2] {
    let ball = |x: f64, v: f64, groups| {
        EventBody::new(DVec3::new(x, 0.0, 0.0), DVec3::new(v, 0.0, 0.0), 1.0, 1.0)
            .with_groups(groups)
    };
    [ball(-3.0, 1.0, groups[0]), ball(3.0, -1.0, groups[1])]
}

/// The broad phases and skins the loop is checked with.
fn loops() -> Vec<(&'static str, EventLoop, Box<dyn BroadPhase>)> {
    vec![
        ("every pair", EventLoop::new(), Box::new(AllPairs)),
        ("cells", EventLoop::new(), Box::new(Cells::new())),
        (
            "CPU step",
            EventLoop::new(),
            Box::new(cpu::ContactFinder::new()),
        ),
        (
            "every pair, local skins",
            EventLoop::new().with_local_skins(),
            Box::new(AllPairs),
        ),
        (
            "cells, local skins",
            EventLoop::new().with_local_skins(),
            Box::new(Cells::new()),
        ),
    ]
}

#[test]
fn bodies_of_groups_that_do_not_interact_pass_through_each_other() {
    let bullet = CollisionGroups::new(BULLET, TARGET);
    let target = CollisionGroups::new(TARGET, BULLET | TARGET);
    for (name, mut events, mut broad_phase) in loops() {
        for (groups, meet) in [
            ([bullet, bullet], false),
            ([bullet, target], true),
            ([target, target], true),
            ([CollisionGroups::NONE, target], false),
        ] {
            let mut bodies = head_on(groups);
            let mut seen = Vec::new();
            events
                .advance_with(
                    &mut bodies,
                    &[],
                    4.0,
                    &mut Elastic::perfect(),
                    &mut broad_phase,
                    |event, _| seen.push(*event),
                )
                .unwrap();
            let label = format!("{name}, {groups:?}");
            if meet {
                assert_eq!(seen.len(), 1, "{label}");
                assert_eq!(seen[0].time, 2.0, "{label}");
                assert_eq!(bodies[0].velocity.x, -1.0, "{label}: bounced");
            } else {
                assert!(seen.is_empty(), "{label}: {seen:?}");
                // Through each other and on: each 4 along x.
                assert_eq!(bodies[0].position.x, 1.0, "{label}");
                assert_eq!(bodies[1].position.x, -1.0, "{label}");
            }
            assert_eq!([bodies[0].groups, bodies[1].groups], groups, "{label}");
        }
    }
}

/// A periodic gas of `n` bodies of radius 0.5 apart from each other, with random groups.
fn periodic_gas(n: usize, side: f64, seed: u64) -> Vec<EventBody> {
    let groups = testkit::random_groups(n, seed);
    testkit::periodic_gas(n, side, seed)
        .into_iter()
        .zip(groups)
        .map(|(body, groups)| body.with_groups(groups))
        .collect()
}

/// Every event of `steps` steps of `bodies` with `events` and `broad_phase`.
fn run(
    events: &mut EventLoop,
    bodies: &mut [EventBody],
    steps: usize,
    broad_phase: &mut dyn BroadPhase,
) -> Vec<Event> {
    common::run_steps(events, bodies, steps, &mut &mut *broad_phase)
}

#[test]
fn every_broad_phase_gives_the_events_of_every_pair_with_groups() {
    let side = 12.0;
    let start = periodic_gas(300, side, 3);
    let periodic =
        |events: EventLoop| events.with_periodic_box(PeriodicBox::cube(side as f32).unwrap());
    let interacts = |bodies: [usize; 2]| {
        start[bodies[0]]
            .groups
            .interacts_with(start[bodies[1]].groups)
    };
    let pairs = common::pairs_of;
    let mut reference = start.clone();
    let everything = run(
        &mut periodic(EventLoop::new()),
        &mut reference,
        20,
        &mut AllPairs,
    );
    assert!(
        everything.len() > 50,
        "the gas must collide: {}",
        everything.len()
    );
    assert!(pairs(&everything).into_iter().all(interacts));
    // Without the groups, some of those bodies would have met.
    let mut ungrouped: Vec<EventBody> = start
        .iter()
        .map(|body| body.with_groups(CollisionGroups::ALL))
        .collect();
    let all_met = run(
        &mut periodic(EventLoop::new()),
        &mut ungrouped,
        20,
        &mut AllPairs,
    );
    assert!(!pairs(&all_met).into_iter().all(interacts));
    for (name, events, mut broad_phase) in loops() {
        let mut bodies = start.clone();
        let seen = run(&mut periodic(events), &mut bodies, 20, &mut *broad_phase);
        assert_eq!(seen, everything, "{name}");
        assert_eq!(bodies, reference, "{name}");
    }
}

/// `result` is the error of two groups given for three bodies.
fn assert_two_for_three(result: Result<(), Error>) {
    assert!(
        matches!(
            result,
            Err(Error::GroupsLength {
                groups: 2,
                bodies: 3
            })
        ),
        "{result:?}"
    );
}

#[test]
fn groups_of_another_length_are_a_typed_error() {
    let bodies = [MovingSphere::new(Vec3::ZERO, 1.0, Vec3::X); 3];
    let two = [CollisionGroups::ALL; 2];
    let expected = assert_two_for_three;
    let mut finder = cpu::ContactFinder::new();
    finder.set_groups(&two);
    expected(finder.find(&bodies, SweepOptions::DEFAULT).map(|_| ()));
    // Every length is one: the finder stays usable.
    finder.set_groups(&[CollisionGroups::ALL; 3]);
    assert_eq!(
        finder
            .find(&bodies, SweepOptions::DEFAULT)
            .unwrap()
            .contacts()
            .len(),
        3
    );
    let mut pairs = Vec::new();
    expected(AllPairs.touching_pairs(&bodies, &two, SweepOptions::DEFAULT, &mut pairs));
    expected(Cells::new().touching_pairs(&bodies, &two, SweepOptions::DEFAULT, &mut pairs));
    expected(cpu::ContactFinder::new().touching_pairs(
        &bodies,
        &two,
        SweepOptions::DEFAULT,
        &mut pairs,
    ));
}

/// The GPU step with collision groups: the blocking pipeline and the resident stage.
#[cfg(feature = "gpu")]
mod gpu {
    use super::*;
    use sweepcast::gpu::{ContactPipeline, GpuContext, StepCapacities};
    use sweepcast::low_level::layout::{BodyRecord, ContactRecord, StepCounts};
    use wgpu::util::DeviceExt;

    /// Whether the adapter's sweep rounds as the CPU's does (lavapipe), so that the GPU
    /// step equals brute force to the bit.
    fn exact(context: &GpuContext) -> bool {
        common::lavapipe(context.adapter_info())
    }

    /// The pairs and impacts of a step's contacts.
    fn listed(contacts: &sweepcast::Contacts) -> Vec<([u32; 2], Impact)> {
        contacts
            .contacts()
            .iter()
            .map(|contact| (contact.pair().unwrap(), contact.impact))
            .collect()
    }

    /// A context and a contact pipeline on it, or `None` (loudly) without an adapter.
    fn context_and_pipeline(test: &str) -> Option<(GpuContext, ContactPipeline)> {
        let context = common::gpu_context(test)?;
        let pipeline = ContactPipeline::new(&context).unwrap();
        Some((context, pipeline))
    }

    /// The contacts of `bodies` on `pipeline` with the default options.
    fn contact_count(pipeline: &ContactPipeline, bodies: &[MovingSphere]) -> usize {
        let contacts = pipeline.find(bodies, SweepOptions::DEFAULT).unwrap();
        contacts.contacts().len()
    }

    #[test]
    fn the_gpu_step_with_groups_is_brute_force_with_groups() {
        let Some((context, pipeline)) =
            context_and_pipeline("the_gpu_step_with_groups_is_brute_force_with_groups")
        else {
            return;
        };
        for (label, bodies, options, groups) in worlds(1000) {
            pipeline.set_groups(&[]);
            let ungrouped = pipeline.find(&bodies, options).expect("valid bodies");
            pipeline.set_groups(&groups);
            let contacts = pipeline.find(&bodies, options).expect("valid bodies");
            // On any adapter: the step's own contacts without groups, less the filtered
            // pairs (each pair's sweep does not depend on the groups).
            let expected: Vec<([u32; 2], Impact)> = listed(&ungrouped)
                .into_iter()
                .filter(|&([a, b], _)| groups[a as usize].interacts_with(groups[b as usize]))
                .collect();
            assert_contacts(&label, bodies.len(), &contacts, &expected);
            assert!(contacts.candidates() <= ungrouped.candidates(), "{label}");
            if exact(&context) {
                // The same pairs at the same times (the normals of overlapping pairs may
                // differ in their last bit: see tests/gpu_contacts.rs).
                let timed = |list: &[([u32; 2], Impact)]| -> Vec<([u32; 2], u32)> {
                    list.iter()
                        .map(|(pair, impact)| (*pair, impact.time_of_impact.to_bits()))
                        .collect()
                };
                let hits = brute_force(&bodies, &groups, options);
                assert_eq!(timed(&listed(&contacts)), timed(&hits), "{label}");
            }
        }
        for scene in Scene::ALL {
            let (bodies, options) = scene.bodies(3000, 3, 3);
            let candidates = |groups: &[CollisionGroups]| {
                pipeline.set_groups(groups);
                pipeline.find(&bodies, options).unwrap().candidates()
            };
            let all = candidates(&[]);
            let across = candidates(&split(bodies.len(), true));
            let within = candidates(&split(bodies.len(), false));
            assert_eq!(
                across + within,
                all,
                "{scene:?}: a filtered pair was a candidate"
            );
        }
    }

    /// A world large enough to be packed on all cores (more than 16 blocks of 1,024 bodies)
    /// gets each body's groups in its own record, whatever thread packed its block: the
    /// contacts with groups are those without, less the filtered pairs. A NaN past the first
    /// blocks is named, and the next call gives the same contacts again.
    #[test]
    fn groups_reach_every_block_packed_on_all_cores() {
        let Some((_context, pipeline)) =
            context_and_pipeline("groups_reach_every_block_packed_on_all_cores")
        else {
            return;
        };
        let n = 40_000;
        let (mut bodies, options) = Scene::Uniform.bodies(n, 3, 29);
        let groups = testkit::random_groups(n, 31);
        let ungrouped = pipeline.find(&bodies, options).expect("valid bodies");
        pipeline.set_groups(&groups);
        let contacts = pipeline.find(&bodies, options).expect("valid bodies");
        let expected: Vec<([u32; 2], Impact)> = listed(&ungrouped)
            .into_iter()
            .filter(|&([a, b], _)| groups[a as usize].interacts_with(groups[b as usize]))
            .collect();
        assert!(
            !expected.is_empty() && expected.len() < ungrouped.contacts().len(),
            "the groups filter some contacts and keep others"
        );
        assert_contacts("40,000 bodies", n, &contacts, &expected);
        let valid = bodies[30_001];
        bodies[30_001].center.y = f32::NAN;
        let error = pipeline.find(&bodies, options).expect_err("a NaN centre");
        assert!(
            matches!(error, Error::NonFinite { body: 30_001, .. }),
            "{error:?}"
        );
        bodies[30_001] = valid;
        let again = pipeline.find(&bodies, options).expect("valid bodies");
        assert_eq!(
            listed(&again),
            listed(&contacts),
            "the call after the error"
        );
    }

    #[test]
    fn the_step_stage_reads_the_groups_in_the_callers_records() {
        let Some(context) =
            common::gpu_context("the_step_stage_reads_the_groups_in_the_callers_records")
        else {
            return;
        };
        let (device, queue) = (context.device(), context.queue());
        let pipeline = ContactPipeline::new(&context).unwrap();
        // The stage the pipeline makes: the same device, and the adapter's sort.
        let stage =
            sweepcast::low_level::StepStage::for_adapter(device, context.adapter_info()).unwrap();
        for (label, bodies, options, groups) in worlds(600) {
            let records: Vec<BodyRecord> = bodies
                .iter()
                .zip(&groups)
                .map(|(&body, &groups)| BodyRecord::from(body).with_groups(groups))
                .collect();
            let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("the caller's bodies"),
                contents: bytemuck::cast_slice(&records),
                usage: wgpu::BufferUsages::STORAGE,
            });
            let capacities = StepCapacities {
                contacts: 1 << 16,
                ..StepCapacities::default()
            };
            let mut buffers = stage
                .create_buffers(device, queue, &buffer, options, capacities, true)
                .expect("the step's buffers");
            let mut encoder = device.create_command_encoder(&Default::default());
            stage
                .record(&mut encoder, &mut buffers, None)
                .expect("the step records");
            let ordered = buffers
                .ordered_contacts()
                .expect("ordered contacts asked for");
            let counts_size = size_of::<StepCounts>() as u64;
            let readback = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback"),
                size: counts_size + ordered.size(),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            encoder.copy_buffer_to_buffer(buffers.counts(), 0, &readback, 0, counts_size);
            encoder.copy_buffer_to_buffer(ordered, 0, &readback, counts_size, ordered.size());
            queue.submit([encoder.finish()]);
            let bytes = common::read_mapped(device, &readback);
            let counts: StepCounts = bytemuck::pod_read_unaligned(&bytes[..counts_size as usize]);
            assert_eq!(counts.valid, 1, "{label}");
            let records: Vec<ContactRecord> =
                bytemuck::pod_collect_to_vec(&bytes[counts_size as usize..]);
            let found: Vec<([u32; 2], u32)> = records[..counts.contacts as usize]
                .iter()
                .map(|record| (record.pair, record.impact.time_of_impact.to_bits()))
                .collect();
            pipeline.set_groups(&groups);
            let expected = pipeline.find(&bodies, options).unwrap();
            let expected: Vec<([u32; 2], u32)> = expected
                .contacts()
                .iter()
                .map(|c| (c.pair().unwrap(), c.impact.time_of_impact.to_bits()))
                .collect();
            assert_eq!(found, expected, "{label}");
            assert!(
                found
                    .iter()
                    .all(|&([a, b], _)| { groups[a as usize].interacts_with(groups[b as usize]) })
            );
        }
    }

    #[test]
    fn groups_of_another_length_are_a_typed_error_on_the_gpu() {
        let Some(context) =
            common::gpu_context("groups_of_another_length_are_a_typed_error_on_the_gpu")
        else {
            return;
        };
        let bodies = [MovingSphere::new(Vec3::ZERO, 1.0, Vec3::X); 3];
        let pipeline = ContactPipeline::new(&context).unwrap();
        pipeline.set_groups(&[CollisionGroups::ALL; 2]);
        assert_two_for_three(pipeline.find(&bodies, SweepOptions::DEFAULT).map(|_| ()));
        pipeline.set_groups(&[]);
        assert_eq!(contact_count(&pipeline, &bodies), 3);
    }

    #[test]
    fn the_gpu_step_as_the_broad_phase_keeps_the_groups() {
        let Some((_context, pipeline)) =
            context_and_pipeline("the_gpu_step_as_the_broad_phase_keeps_the_groups")
        else {
            return;
        };
        let side = 12.0;
        let start = periodic_gas(300, side, 3);
        let periodic =
            || EventLoop::new().with_periodic_box(PeriodicBox::cube(side as f32).unwrap());
        let (mut on_gpu, mut on_cpu) = (start.clone(), start);
        let gpu = run(&mut periodic(), &mut on_gpu, 20, &mut &pipeline);
        let cpu = run(&mut periodic(), &mut on_cpu, 20, &mut AllPairs);
        assert!(cpu.len() > 50, "the gas must collide: {}", cpu.len());
        assert_eq!(gpu, cpu);
        assert_eq!(on_gpu, on_cpu);
        // The pipeline's own groups (none) are back.
        let bodies = head_on([CollisionGroups::NONE; 2]).map(|body| {
            MovingSphere::new(body.position.as_vec3(), 1.0, body.velocity.as_vec3() * 4.0)
        });
        assert_eq!(contact_count(&pipeline, &bodies), 1);
    }
}
