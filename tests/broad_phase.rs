//! The stages of `shaders/broad_phase.wgsl` that build the GPU step's frame and tree, each run
//! alone on the device and beside its twin in `sweepcast::low_level::broad_phase` on the same
//! input: every output equal, bit for bit.
//!
//! * `scene_bounds` and `frame`: the bounds' words and the step's parameters and dispatch
//!   made from them on the device (the Morton scale's division aside on adapters that do not
//!   round it correctly), equal to the twins' and to `StepParams::new`'s, on the scenes below
//!   and on no body, one, a cluster across a periodic box's faces, every slice of a box
//!   occupied, every other one and tied gaps; also over a dispatch with a y dimension.
//! * `swept_boxes`: boxes, Morton codes and the first sort's keys, on the uniform, 100×-radii,
//!   fast and periodic scenes in 3D and 2D, and in worlds far from the origin and in large
//!   periodic boxes (across their faces, and with centres periods outside them).
//! * `key_by_high` and `leaves_in_order`: the second sort's keys and the sorted leaves, from
//!   the twin's sorts.
//! * `hierarchy`: Karras's nodes and every node's and leaf's parent, also where many bodies
//!   share a code (one point, one cell).
//! * `refit`: every node's box, from the twin's hierarchy.
//! * `candidates`, then `resume_candidates` until no query is left: the pairs (as sets: the
//!   invocations append in any order), their count, the saved queries and the overflow
//!   flags, also for a query longer than one dispatch and past both capacities.
//!
//! Each entry point runs in a pipeline of its own (its bindings from the shader, the rest of
//! the file untouched) over buffers the test fills; buffers the stage writes start as `0xab`
//! bytes, so that an output it failed to write differs from the twin's.

mod common;

use common::{StageRunner, cast, unwritten, unwritten_twin};

use sweepcast::low_level::BROAD_PHASE_WGSL;
use sweepcast::low_level::broad_phase::{
    self as twin, Aabb, BOUNDS_WORDS, Continuation, FRAME_BINS, Found, Leaf, Node, Queried,
    STACK_SIZE, Tree,
};
use sweepcast::low_level::layout::{
    BodyRecord, KeyValue, MORTON_BITS, StepParams, SweepDispatch, SweepParams,
};
use sweepcast::{CollisionGroups, MovingSphere, SweepOptions};
use testkit::Scene;

/// The broad phase's build of `bodies` through `swept_boxes`, the sorts, `key_by_high` and
/// `leaves_in_order` on the twin: what the later stages read.
struct Built {
    params: StepParams,
    records: Vec<BodyRecord>,
    boxes: Vec<Aabb>,
    codes: Vec<[u32; 2]>,
    sort_in: Vec<KeyValue>,
    leaves: Vec<Leaf>,
    leaf_codes: Vec<[u32; 2]>,
}

fn build(bodies: &[MovingSphere], options: &SweepOptions) -> Built {
    build_grouped(bodies, &[], options)
}

/// [`build`] with each body's collision groups in its record (`groups` empty: none set).
fn build_grouped(
    bodies: &[MovingSphere],
    groups: &[CollisionGroups],
    options: &SweepOptions,
) -> Built {
    let records: Vec<BodyRecord> = bodies
        .iter()
        .enumerate()
        .map(|(i, &body)| {
            let record = BodyRecord::from(body);
            groups.get(i).map_or(record, |&g| record.with_groups(g))
        })
        .collect();
    let params = StepParams::new(&records, options);
    let n = records.len();
    let mut boxes = unwritten_twin::<Aabb>(n);
    let mut codes = unwritten_twin::<[u32; 2]>(n);
    let mut sort_in = unwritten_twin::<KeyValue>(n);
    for i in 0..n {
        twin::swept_boxes(i, &params, &records, &mut boxes, &mut codes, &mut sort_in);
    }
    let mut sort_out = sort_in.clone();
    twin::sort_by_key(&sort_in, &mut sort_out);
    let mut by_high = sort_in.clone();
    for i in 0..n {
        twin::key_by_high(i, &params, &sort_out, &codes, &mut by_high);
    }
    twin::sort_by_key(&by_high, &mut sort_out);
    let mut leaves = unwritten_twin::<Leaf>(n);
    let mut leaf_codes = unwritten_twin::<[u32; 2]>(n);
    for i in 0..n {
        twin::leaves_in_order(
            i,
            &params,
            &records,
            &sort_out,
            &boxes,
            &codes,
            &mut leaves,
            &mut leaf_codes,
        );
    }
    Built {
        params,
        records,
        boxes,
        codes,
        sort_in,
        leaves,
        leaf_codes,
    }
}

/// The scenes the stages are held to their twins on: every kind in 3D and 2D, bodies that
/// share codes (all in one point; all in one Morton cell of a wide grid), and boxes that meet
/// through two images of a periodic box.
fn scenes() -> Vec<(String, Vec<MovingSphere>, SweepOptions)> {
    let mut scenes = Vec::new();
    for scene in Scene::ALL {
        for dimensions in [3, 2] {
            let (bodies, options) = scene.bodies(3000, dimensions, 7);
            scenes.push((format!("{scene:?} {dimensions}D"), bodies, options));
        }
    }
    let point = MovingSphere::new(glam::Vec3::splat(1.5), 0.5, glam::Vec3::ZERO);
    scenes.push((
        "one point".into(),
        vec![point; 300],
        SweepOptions::default(),
    ));
    let mut cell: Vec<MovingSphere> = (0..300)
        .map(|i| MovingSphere::new(glam::Vec3::splat(i as f32 * 1e-6), 0.5, glam::Vec3::ZERO))
        .collect();
    cell.push(MovingSphere::new(
        glam::Vec3::splat(1e5),
        0.5,
        glam::Vec3::ZERO,
    ));
    scenes.push(("one cell".into(), cell, SweepOptions::default()));
    // Boxes wider than half a small periodic box, so that pairs meet through two images (the
    // validation of a step refuses such a box; the stages take it as given).
    let mut state = 5u32;
    let mut random = move || {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (state >> 8) as f32 / (1u32 << 24) as f32 * 10.0
    };
    let crowded: Vec<MovingSphere> = (0..60)
        .map(|_| {
            let center = glam::Vec3::new(random(), random(), random());
            MovingSphere::new(center, 2.6, glam::Vec3::new(0.3, 0.0, 0.0))
        })
        .collect();
    let small_box = sweepcast::PeriodicBox::cube(10.0).expect("a valid box");
    scenes.push((
        "boxes across half a periodic box".into(),
        crowded,
        SweepOptions::default().with_periodic_box(small_box),
    ));
    // Worlds far from the origin and in large periodic boxes, across their faces, and with
    // centres given more than a period outside the box: every branch of the local frame.
    for world in testkit::sparse_cube_far_away(3000, 7) {
        scenes.push((world.label, world.bodies, world.options));
    }
    let adversarial = testkit::Workload::adversarial(3).bodies;
    scenes.extend(testkit::in_large_boxes("adversarial", &adversarial));
    let in_cube = SweepOptions::default()
        .with_periodic_box(sweepcast::PeriodicBox::cube(1e6).expect("a valid box"));
    // (Few bodies: so far outside, each margin is 2⁻¹⁶ of the coordinates, and every pair
    // a candidate.)
    for corner in [-2.5e6, 2.5e6] {
        scenes.push((
            format!("periods outside cube(1e6), at {corner:e}"),
            testkit::sparse_cube(300, 7, glam::DVec3::splat(corner)),
            in_cube,
        ));
    }
    scenes
}

/// Each case with no groups, and the cases named in `grouped` again with random collision
/// groups in their records.
fn with_groups(
    cases: Vec<(String, Vec<MovingSphere>, SweepOptions)>,
    grouped: &[&str],
) -> Vec<common::GroupedWorld> {
    let mut out = Vec::new();
    for (name, bodies, options) in cases {
        if grouped.contains(&name.as_str()) {
            let groups = testkit::random_groups(bodies.len(), 11);
            out.push((format!("{name}, grouped"), bodies.clone(), options, groups));
        }
        out.push((name, bodies, options, Vec::new()));
    }
    out
}

/// The cases run again with random collision groups.
const GROUPED: [&str; 4] = ["Uniform 3D", "Periodic 2D", "one point", "one large body"];

#[test]
fn tree_building_stages_equal_their_twins() {
    let Some(context) = common::gpu_context("tree_building_stages_equal_their_twins") else {
        return;
    };
    let stages = StageRunner::new(&context, "broad_phase.wgsl", BROAD_PHASE_WGSL);
    let exact = common::lavapipe(context.adapter_info());
    for (name, bodies, options, groups) in with_groups(scenes(), &GROUPED) {
        let built = build_grouped(&bodies, &groups, &options);
        let n = bodies.len();
        let params = &built.params;

        // swept_boxes: boxes, codes and the first sort's keys.
        let out = stages.run(
            "swept_boxes",
            Some(params),
            n,
            &[
                (1, bytemuck::cast_slice(&built.records)),
                (2, &unwritten::<Aabb>(n)),
                (3, &unwritten::<[u32; 2]>(n)),
                (4, &unwritten::<KeyValue>(n)),
            ],
        );
        let boxes = cast::<Aabb>(&out[1], n);
        let differ = (0..n)
            .filter(|&i| bytemuck::bytes_of(&boxes[i]) != bytemuck::bytes_of(&built.boxes[i]))
            .count();
        assert_eq!(differ, 0, "{name}: swept boxes differ from the twin's");
        let codes = cast::<[u32; 2]>(&out[2], n);
        assert_codes_near(&name, &codes, &built.codes, exact);
        // The first sort's keys: each body's low word and its index, from its own codes.
        let keys: Vec<KeyValue> = (0..n)
            .map(|i| KeyValue {
                key: codes[i][1],
                value: i as u32,
            })
            .collect();
        assert_eq!(cast::<KeyValue>(&out[3], n), keys, "{name}: keys");
        if exact {
            assert_eq!(keys, built.sort_in, "{name}: keys");
        }

        // key_by_high, after the twin's first sort.
        let mut sort_out = built.sort_in.clone();
        twin::sort_by_key(&built.sort_in, &mut sort_out);
        let mut by_high = unwritten_twin::<KeyValue>(n);
        for i in 0..n {
            twin::key_by_high(i, params, &sort_out, &built.codes, &mut by_high);
        }
        let out = stages.run(
            "key_by_high",
            Some(params),
            n,
            &[
                (3, bytemuck::cast_slice(&built.codes)),
                (4, &unwritten::<KeyValue>(n)),
                (5, bytemuck::cast_slice(&sort_out)),
            ],
        );
        assert_eq!(cast::<KeyValue>(&out[1], n), by_high, "{name}: second keys");

        // leaves_in_order, after the twin's second sort.
        twin::sort_by_key(&by_high, &mut sort_out);
        let out = stages.run(
            "leaves_in_order",
            Some(params),
            n,
            &[
                (1, bytemuck::cast_slice(&built.records)),
                (2, bytemuck::cast_slice(&built.boxes)),
                (3, bytemuck::cast_slice(&built.codes)),
                (5, bytemuck::cast_slice(&sort_out)),
                (6, &unwritten::<Leaf>(n)),
                (7, &unwritten::<[u32; 2]>(n)),
            ],
        );
        assert_eq!(cast::<Leaf>(&out[4], n), built.leaves, "{name}: leaves");
        assert_eq!(
            cast::<[u32; 2]>(&out[5], n),
            built.leaf_codes,
            "{name}: leaf codes"
        );

        // hierarchy: nodes, parents and emptied boxes.
        let mut tree = twin_hierarchy(&built);
        let out = stages.run(
            "hierarchy",
            Some(params),
            n - 1,
            &[
                (6, bytemuck::cast_slice(&built.leaves)),
                (7, bytemuck::cast_slice(&built.leaf_codes)),
                (8, &unwritten::<Node>(n - 1)),
                (9, &unwritten::<u32>(n - 1)),
                (10, &unwritten::<u32>(n)),
                (11, &unwritten::<u32>(8 * (n - 1))),
            ],
        );
        let device_tree = Tree {
            nodes: cast(&out[2], n - 1),
            node_parents: cast(&out[3], n - 1),
            leaf_parents: cast(&out[4], n),
            node_boxes: cast(&out[5], 8 * (n - 1)),
        };
        assert!(
            device_tree == tree,
            "{name}: the hierarchy differs from the twin's"
        );

        // refit: every node's box.
        for i in 0..n {
            twin::refit(i, params, &built.leaves, &mut tree);
        }
        let out = stages.run(
            "refit",
            Some(params),
            n,
            &[
                (6, bytemuck::cast_slice(&built.leaves)),
                (9, bytemuck::cast_slice(&device_tree.node_parents)),
                (10, bytemuck::cast_slice(&device_tree.leaf_parents)),
                (11, bytemuck::cast_slice(&device_tree.node_boxes)),
            ],
        );
        let node_boxes: Vec<u32> = cast(&out[3], 8 * (n - 1));
        assert!(
            node_boxes == tree.node_boxes,
            "{name}: refit boxes differ from the twin's"
        );
        // And the boxes are right: the root's holds every leaf.
        for leaf in &built.leaves {
            for (k, &root_lo) in node_boxes[..3].iter().enumerate() {
                assert!(
                    root_lo <= twin::ordered(f32::from_bits(leaf.lo[k])),
                    "{name}"
                );
            }
        }
        eprintln!("{name}: {n} bodies, every stage equal to its twin");
    }
}

/// The twin's hierarchy over `built`, its outputs starting as the device's do.
fn twin_hierarchy(built: &Built) -> Tree {
    let n = built.leaves.len();
    let mut tree = Tree {
        nodes: unwritten_twin::<Node>(n - 1),
        node_parents: unwritten_twin::<u32>(n - 1),
        leaf_parents: unwritten_twin::<u32>(n),
        node_boxes: unwritten_twin::<u32>(8 * (n - 1)),
    };
    for index in 0..n - 1 {
        twin::hierarchy(
            index,
            &built.params,
            &built.leaves,
            &built.leaf_codes,
            &mut tree,
        );
    }
    tree
}

/// The twin's tree over `built`: hierarchy and refit.
fn twin_tree(built: &Built) -> Tree {
    let mut tree = twin_hierarchy(built);
    for i in 0..built.leaves.len() {
        twin::refit(i, &built.params, &built.leaves, &mut tree);
    }
    tree
}

/// One dispatch of `entry` (`candidates`, or `resume_candidates` of `saved`) on the device:
/// what it found, read back.
fn queries_on_device(
    stages: &StageRunner,
    entry: &str,
    queried: Queried,
    saved: &[Continuation],
) -> Found {
    let params = queried.params;
    let words = 4 + STACK_SIZE;
    // A queue: its count and three words of padding, then the queries.
    let mut saved_queue: Vec<u32> = vec![saved.len() as u32, 0, 0, 0];
    saved_queue.extend(saved.iter().flat_map(Continuation::to_words));
    let mut bindings: Vec<(u32, Vec<u8>)> = vec![
        (6, bytemuck::cast_slice(queried.leaves).to_vec()),
        (8, bytemuck::cast_slice(queried.nodes).to_vec()),
        (11, bytemuck::cast_slice(queried.node_boxes).to_vec()),
        (
            12,
            unwritten::<[u32; 2]>(params.candidate_capacity as usize),
        ),
        (13, vec![0; 16]),
        (17, {
            let mut queue = vec![0; 16];
            queue.extend(unwritten::<u32>(
                words * params.continuation_capacity as usize,
            ));
            queue
        }),
    ];
    let invocations = if entry == "resume_candidates" {
        bindings.push((15, bytemuck::cast_slice(&saved_queue).to_vec()));
        saved.len()
    } else {
        params.body_count as usize
    };
    let borrowed: Vec<(u32, &[u8])> = bindings.iter().map(|(b, bytes)| (*b, &bytes[..])).collect();
    let out = stages.run(entry, Some(params), invocations.max(1), &borrowed);
    let counters: Vec<u32> = cast(&out[4], 3);
    let queue: Vec<u32> = cast(&out[5], out[5].len() / 4);
    let continuation_count = queue[0];
    let candidate_count = counters[0];
    let written = candidate_count.min(params.candidate_capacity) as usize;
    let saved_written = continuation_count.min(params.continuation_capacity) as usize;
    Found {
        pairs: cast(&out[3], written),
        candidate_count,
        candidates_overflowed: counters[1],
        continuations: queue[4..4 + words * saved_written]
            .chunks(words)
            .map(Continuation::from_words)
            .collect(),
        continuation_count,
        continuations_overflowed: counters[2],
    }
}

/// `found` with its pairs and saved queries sorted: the device appends them in any order.
fn sorted(mut found: Found) -> Found {
    found.pairs.sort_unstable();
    found.continuations.sort_unstable_by(|a, b| {
        (a.position, a.image, &a.stack).cmp(&(b.position, b.image, &b.stack))
    });
    found
}

#[test]
fn queries_equal_their_twins() {
    let Some(context) = common::gpu_context("queries_equal_their_twins") else {
        return;
    };
    let stages = StageRunner::new(&context, "broad_phase.wgsl", BROAD_PHASE_WGSL);
    // One large body, sorting first, over 22³ small ones: a query of more than twice BUDGET
    // steps.
    let mut long = vec![MovingSphere::new(glam::Vec3::ZERO, 150.0, glam::Vec3::ZERO)];
    for i in 0..22 * 22 * 22 {
        let cell = glam::Vec3::new((i % 22) as f32, ((i / 22) % 22) as f32, (i / 484) as f32);
        long.push(MovingSphere::new(cell * 3.0 + 1.0, 1.0, glam::Vec3::X));
    }
    let mut cases = scenes();
    cases.push((
        "one large body".into(),
        long.clone(),
        SweepOptions::default(),
    ));
    // The same, with room for a third of the pairs and one saved query.
    cases.push((
        "one large body, past the capacities".into(),
        long,
        SweepOptions::default(),
    ));
    for (name, bodies, options, groups) in with_groups(cases, &GROUPED) {
        let mut built = build_grouped(&bodies, &groups, &options);
        let tight = name.ends_with("past the capacities");
        built.params.candidate_capacity = if tight { 4000 } else { 1 << 20 };
        built.params.continuation_capacity = if tight { 1 } else { 4096 };
        let tree = twin_tree(&built);
        let queried = Queried {
            params: &built.params,
            leaves: &built.leaves,
            nodes: &tree.nodes,
            node_boxes: &tree.node_boxes,
        };
        let n = bodies.len();
        let mut expected = Found::default();
        for p in 0..n {
            twin::candidates(p, queried, &mut expected);
        }
        let mut found = sorted(queries_on_device(&stages, "candidates", queried, &[]));
        let mut expected = sorted(expected);
        if !groups.is_empty() {
            // No pair the groups keep apart is a candidate, and some were kept apart.
            let interacts =
                |&[a, b]: &[u32; 2]| groups[a as usize].interacts_with(groups[b as usize]);
            assert!(
                expected.pairs.iter().all(interacts),
                "{name}: a filtered pair"
            );
            let ungrouped = build(&bodies, &options);
            let ungrouped_tree = twin_tree(&ungrouped);
            let mut all = Found::default();
            for p in 0..n {
                let queried = Queried {
                    params: &built.params,
                    leaves: &ungrouped.leaves,
                    nodes: &ungrouped_tree.nodes,
                    node_boxes: &ungrouped_tree.node_boxes,
                };
                twin::candidates(p, queried, &mut all);
            }
            assert!(
                all.candidate_count > expected.candidate_count,
                "{name}: the groups filtered nothing"
            );
        }
        let mut rounds = 0;
        loop {
            if expected.candidates_overflowed == 0 && expected.continuations_overflowed == 0 {
                assert_eq!(found, expected, "{name}, dispatch {rounds}");
            } else {
                // Past a capacity, which of the counted ones are written depends on the
                // order of the invocations: the counts and flags are the twin's, and what
                // is written is among what the twin finds with room for everything.
                assert!(tight, "{name}: an overflow the test did not ask for");
                assert_eq!(
                    (found.candidate_count, found.candidates_overflowed),
                    (expected.candidate_count, expected.candidates_overflowed),
                    "{name}, dispatch {rounds}"
                );
                assert_eq!(
                    (found.continuation_count, found.continuations_overflowed),
                    (
                        expected.continuation_count,
                        expected.continuations_overflowed
                    ),
                    "{name}, dispatch {rounds}"
                );
                assert_eq!(found.pairs.len(), 4000);
                assert_eq!(found.continuations.len(), 1);
                let roomy_params = StepParams {
                    candidate_capacity: 1 << 20,
                    continuation_capacity: 4096,
                    ..*queried.params
                };
                let mut roomy = Found::default();
                for p in 0..n {
                    let queried = Queried {
                        params: &roomy_params,
                        ..queried
                    };
                    twin::candidates(p, queried, &mut roomy);
                }
                let roomy = sorted(roomy);
                assert!(
                    found
                        .pairs
                        .iter()
                        .all(|pair| roomy.pairs.binary_search(pair).is_ok())
                );
                assert!(roomy.continuations.contains(&found.continuations[0]));
                break;
            }
            if expected.continuations.is_empty() {
                break;
            }
            rounds += 1;
            let saved = expected.continuations.clone();
            let mut next = Found::default();
            for i in 0..saved.len() {
                twin::resume_candidates(i, queried, &saved, saved.len() as u32, &mut next);
            }
            found = sorted(queries_on_device(
                &stages,
                "resume_candidates",
                queried,
                &saved,
            ));
            expected = sorted(next);
        }
        if name == "one large body" {
            assert!(
                rounds >= 2,
                "{name}: the query did not outlast two dispatches"
            );
        }
        eprintln!("{name}: {n} bodies, {rounds} resumes, the queries equal to their twins");
    }
}

/// The scenes the frame is held to its twin on: the tree's, and no body, one body (in open
/// space and in a box), a cluster across two faces of a periodic box (centres given on both
/// sides of them), every slice of a box occupied, every other one (every gap tied), and two
/// equal gaps.
fn frame_scenes() -> Vec<(String, Vec<MovingSphere>, SweepOptions)> {
    let open = SweepOptions::default();
    let in_cube = |side: f32| {
        open.with_periodic_box(sweepcast::PeriodicBox::cube(side).expect("a valid box"))
    };
    let at =
        |x: f32, y: f32, z: f32| MovingSphere::new(glam::Vec3::new(x, y, z), 0.5, glam::Vec3::ZERO);
    let mut scenes = scenes();
    scenes.push(("no bodies".into(), Vec::new(), open));
    scenes.push(("no bodies in cube(100)".into(), Vec::new(), in_cube(100.0)));
    let one = MovingSphere::new(
        glam::Vec3::new(3.0, -4.0, 5.0),
        0.5,
        glam::Vec3::new(-1.0, 2.0, 0.0),
    );
    scenes.push(("one body".into(), vec![one], open));
    scenes.push(("one body in cube(100)".into(), vec![one], in_cube(100.0)));
    let mut rng = testkit::SplitMix64::new(11);
    let across: Vec<MovingSphere> = (0..500)
        .map(|_| {
            let center = glam::DVec3::new(
                rng.range(-5.0, 5.0),
                rng.range(95.0, 105.0),
                rng.range(40.0, 45.0),
            );
            MovingSphere::new(center.as_vec3(), 0.5, rng.in_ball(0.5, 3))
        })
        .collect();
    scenes.push((
        "a cluster across two faces of cube(100)".into(),
        across,
        in_cube(100.0),
    ));
    let side = FRAME_BINS as f32;
    let every: Vec<MovingSphere> = (0..FRAME_BINS)
        .map(|bin| at(bin as f32 + 0.5, bin as f32 + 0.5, side - bin as f32 - 0.5))
        .collect();
    scenes.push(("every slice occupied".into(), every, in_cube(side)));
    let every_other: Vec<MovingSphere> = (0..FRAME_BINS / 2)
        .map(|i| at(2.0 * i as f32 + 1.5, 2.0 * i as f32 + 0.5, 7.0))
        .collect();
    scenes.push((
        "every other slice occupied".into(),
        every_other,
        in_cube(side),
    ));
    let tied = vec![at(100.5, 100.5, 0.5), at(2148.5, 2147.5, 2049.5)];
    scenes.push(("two equal gaps".into(), tied, in_cube(side)));
    scenes
}

/// What `scene_bounds` and `frame` read of the host: the options and the count of
/// `records` (the periods of `options`), capacities, and frame fields that are not to be
/// read (the `0xab` bytes of an unwritten output).
fn frame_input(records: &[BodyRecord], options: &SweepOptions) -> StepParams {
    let sweep = SweepParams::new(options, 0);
    let unread = [f32::from_bits(0xabab_abab); 3];
    StepParams {
        period: sweep.period,
        flags: sweep.flags,
        inverse_period: sweep.inverse_period,
        body_count: records.len() as u32,
        origin: unread,
        candidate_capacity: 1000,
        morton_origin: unread,
        contact_capacity: 2000,
        morton_scale: unread,
        continuation_capacity: 3000,
    }
}

/// The parameters' words (bits), for comparisons to the bit.
fn words(params: &StepParams) -> [u32; 20] {
    bytemuck::cast(*params)
}

/// Holds the device's Morton codes to the twin's: to the bit where the adapter rounds as the
/// twin does (`exact`); elsewhere each axis's cell within one of the twin's. A cell is
/// `floor((mid - origin) · scale)` of a value below 2²¹, which a few ulps of difference in
/// its three operations (a fused multiply-add, WGSL's accuracy) move by far less than one
/// cell: only a body that close to a cell's edge falls on the other side (34 of 3,000 on an
/// H200). The codes only order the leaves; the later stages here take the twin's.
fn assert_codes_near(name: &str, device: &[[u32; 2]], twin: &[[u32; 2]], exact: bool) {
    if exact {
        assert_eq!(device, twin, "{name}: codes");
        return;
    }
    let cells = |[high, low]: [u32; 2]| {
        let code = (u64::from(high) << 32) | u64::from(low);
        let mut cell = [0i64; 3];
        for bit in 0..MORTON_BITS {
            for (axis, cell) in cell.iter_mut().enumerate() {
                let position = 3 * bit + 2 - axis as u32;
                *cell |= (((code >> position) & 1) as i64) << bit;
            }
        }
        cell
    };
    assert_eq!(device.len(), twin.len(), "{name}: codes");
    for (i, (&ours, &theirs)) in device.iter().zip(twin).enumerate() {
        let (ours, theirs) = (cells(ours), cells(theirs));
        assert!(
            ours.iter().zip(&theirs).all(|(a, b)| (a - b).abs() <= 1),
            "{name}: body {i}'s Morton cell {ours:?} is beyond one of the twin's {theirs:?}"
        );
    }
}

/// The words of `morton_scale` in [`StepParams`].
const MORTON_SCALE_WORDS: std::ops::Range<usize> = 16..19;

/// Holds the device's parameters to the twin's: every word to the bit but the Morton
/// scale's, a quotient that WGSL allows 2.5 ulps (so within 3 ulps of the host's correctly
/// rounded one), and those too where `division_is_exact` (Mesa's software adapters). Only
/// the Morton codes depend on the scale, not the candidates or the contacts.
fn assert_frame_equal(name: &str, device: &StepParams, twin: &StepParams, division_is_exact: bool) {
    let (device_words, twin_words) = (words(device), words(twin));
    for (word, (&ours, &theirs)) in device_words.iter().zip(&twin_words).enumerate() {
        if MORTON_SCALE_WORDS.contains(&word) && !division_is_exact {
            assert!(
                ours.abs_diff(theirs) <= 3,
                "{name}: Morton scale {word}: {ours:#x} beyond 3 ulps of {theirs:#x}"
            );
        } else {
            assert_eq!(
                ours, theirs,
                "{name}: word {word} of the parameters: {device:?} differs from {twin:?}"
            );
        }
    }
}

/// Whether `context` is one of Mesa's software adapters (lavapipe, llvmpipe), whose f32
/// division is correctly rounded.
fn division_is_exact(context: &sweepcast::gpu::GpuContext) -> bool {
    context.describe().contains("llvmpipe")
}

/// `scene_bounds` on the device over `workgroups`: the bounds' words.
fn bounds_on_device(
    stages: &StageRunner,
    records: &[BodyRecord],
    input: &StepParams,
    workgroups: [u32; 3],
) -> Vec<u32> {
    // A buffer of no bytes cannot be bound: one unread record.
    let stored = if records.is_empty() {
        &[BodyRecord::default()][..]
    } else {
        records
    };
    let out = stages.run_workgroups(
        "scene_bounds",
        None,
        workgroups,
        &[
            (1, bytemuck::cast_slice(stored)),
            (22, bytemuck::bytes_of(input)),
            (23, &vec![0; 4 * BOUNDS_WORDS]),
        ],
    );
    cast(&out[2], BOUNDS_WORDS)
}

/// `frame` on the device: the parameters and the dispatch it writes.
fn frame_on_device(
    stages: &StageRunner,
    input: &StepParams,
    bounds: &[u32],
) -> (StepParams, SweepDispatch) {
    let out = stages.run(
        "frame",
        None,
        1,
        &[
            (22, bytemuck::bytes_of(input)),
            (23, bytemuck::cast_slice(bounds)),
            (24, &unwritten::<StepParams>(1)),
            (25, &unwritten::<SweepDispatch>(1)),
        ],
    );
    (cast(&out[2], 1)[0], cast(&out[3], 1)[0])
}

/// The device's frame of every scene, from bodies that stay on it: `scene_bounds`' words
/// equal the twin's bit for bit, and `frame`'s parameters and dispatch equal the twin's bit
/// for bit (the Morton scale as [`assert_frame_equal`] says), and the twin's are
/// [`StepParams::new`]'s (its capacities aside). The frame fields of the input are `0xab`
/// bytes, so that a frame that read them, or failed to write its own, differs; the crafted
/// scenes' origins are checked by hand too.
#[test]
fn the_frame_stages_equal_their_twins() {
    let Some(context) = common::gpu_context("the_frame_stages_equal_their_twins") else {
        return;
    };
    let stages = StageRunner::new(&context, "broad_phase.wgsl", BROAD_PHASE_WGSL);
    let exact = division_is_exact(&context);
    let mut periodic_origins = 0;
    for (name, bodies, options) in frame_scenes() {
        let records: Vec<BodyRecord> = bodies.iter().map(|&body| body.into()).collect();
        let n = records.len();
        let input = frame_input(&records, &options);
        let mut bounds = vec![0; BOUNDS_WORDS];
        for i in 0..n {
            twin::scene_bounds(i, &input, &records, &mut bounds);
        }
        let workgroups = n.div_ceil(64).max(1) as u32;
        let device_bounds = bounds_on_device(&stages, &records, &input, [workgroups, 1, 1]);
        assert!(
            device_bounds == bounds,
            "{name}: the bounds differ from the twin's"
        );

        let (expected, expected_dispatch) = twin::frame(&input, &bounds);
        let (params, dispatch) = frame_on_device(&stages, &input, &device_bounds);
        assert_frame_equal(&name, &params, &expected, exact);
        assert_eq!(dispatch, expected_dispatch, "{name}: the dispatch");
        assert_eq!(
            dispatch,
            SweepDispatch::new(n as u32),
            "{name}: the dispatch"
        );
        let host = StepParams {
            candidate_capacity: input.candidate_capacity,
            contact_capacity: input.contact_capacity,
            continuation_capacity: input.continuation_capacity,
            ..StepParams::new(&records, &options)
        };
        assert_frame_equal(&format!("{name}: StepParams::new"), &params, &host, exact);
        // The crafted scenes' origins, by hand: the point of a path nearest 0; the start of
        // the slice after the longest gap, the first found of tied ones.
        let slice = 100.0 / FRAME_BINS as f32;
        match name.as_str() {
            "one body" => assert_eq!(params.origin, [2.0, -2.0, 5.0]),
            "one body in cube(100)" => {
                // Slices 122 and 3932 (-4 wrapped to 96): their starts, on f32's grid at
                // 100 (2⁻¹⁷).
                assert_eq!(
                    params.origin,
                    [122.0 * slice, 3932.0 * slice, 204.0 * slice]
                );
            }
            "a cluster across two faces of cube(100)" => {
                for (k, corner) in [95.0, 95.0, 40.0].into_iter().enumerate() {
                    let origin = params.origin[k];
                    assert!(
                        origin <= corner && origin > corner - slice,
                        "{name}: {origin}"
                    );
                }
            }
            "every slice occupied" => assert_eq!(params.origin, [0.0; 3]),
            "every other slice occupied" => assert_eq!(params.origin, [3.0, 2.0, 7.0]),
            "two equal gaps" => assert_eq!(params.origin, [2148.0, 100.0, 2049.0]),
            _ => {}
        }
        if params
            .origin
            .iter()
            .zip(params.period)
            .any(|(&o, l)| l > 0.0 && o > 0.0)
        {
            periodic_origins += 1;
        }
        eprintln!(
            "{name}: {n} bodies, origin {:?}, the frame equal to its twin",
            params.origin
        );
    }
    assert!(
        periodic_origins >= 5,
        "too few scenes exercise a periodic origin"
    );
}

/// `scene_bounds` indexes a dispatch with a y dimension as the per-body passes do (one of 2
/// by 3 workgroups here, where the step's have 65,535 along x), and reads no body past the
/// count: the last records lie far out and must not widen the bounds. `frame` sizes the
/// dispatch of more bodies than one dimension of workgroups holds.
#[test]
fn the_frame_stages_index_a_dispatch_in_two_dimensions() {
    let Some(context) = common::gpu_context("the_frame_stages_index_a_dispatch_in_two_dimensions")
    else {
        return;
    };
    let stages = StageRunner::new(&context, "broad_phase.wgsl", BROAD_PHASE_WGSL);
    let (bodies, options) = testkit::Scene::Periodic.bodies(380, 3, 5);
    let mut records: Vec<BodyRecord> = bodies.iter().map(|&body| body.into()).collect();
    let input = frame_input(&records, &options);
    let far = MovingSphere::new(glam::Vec3::splat(-1e30), 0.5, glam::Vec3::splat(1e29));
    records.resize(6 * 64, far.into());
    let mut bounds = vec![0; BOUNDS_WORDS];
    for i in 0..records.len() {
        twin::scene_bounds(i, &input, &records, &mut bounds);
    }
    let device_bounds = bounds_on_device(&stages, &records, &input, [2, 3, 1]);
    assert!(device_bounds == bounds, "the bounds differ from the twin's");
    let (expected, _) = twin::frame(&input, &bounds);
    let host = StepParams::new(&records[..380], &options);
    assert_eq!(expected.origin, host.origin);
    assert_eq!(expected.morton_origin, host.morton_origin);
    // Every body counted: a bound of the last ones in the dispatch's second row.
    let low_x = (0..380)
        .map(|i| records[i].center[0] + records[i].displacement[0].min(0.0))
        .fold(f32::INFINITY, f32::min);
    assert_eq!(twin::unordered(!device_bounds[0]), low_x);

    let many = StepParams {
        body_count: 5_000_000,
        ..input
    };
    let (params, dispatch) = frame_on_device(&stages, &many, &device_bounds);
    let (expected, expected_dispatch) = twin::frame(&many, &bounds);
    assert_frame_equal(
        "5,000,000 bodies",
        &params,
        &expected,
        division_is_exact(&context),
    );
    assert_eq!(dispatch, expected_dispatch);
    assert_eq!(
        (
            dispatch.workgroups_x,
            dispatch.workgroups_y,
            dispatch.pair_count
        ),
        (65_535, 2, 5_000_000)
    );
}

/// `prepare_resume` sizes the next resume from the count at the head of the queue it resumes,
/// capped at the queue's capacity, as its twin says: below, at and past the capacity, and past
/// one dimension of workgroups.
#[test]
fn prepare_resume_equals_its_twin() {
    let Some(context) = common::gpu_context("prepare_resume_equals_its_twin") else {
        return;
    };
    let stages = StageRunner::new(&context, "broad_phase.wgsl", BROAD_PHASE_WGSL);
    for (saved, capacity) in common::COUNTS_AND_CAPACITIES {
        let params = StepParams {
            continuation_capacity: capacity,
            ..StepParams::default()
        };
        // The queue's head (its count and three words of padding) and room for one query
        // (a binding holds at least one), which is not read.
        let mut head: Vec<u8> = bytemuck::cast_slice(&[saved, 0, 0, 0]).to_vec();
        head.extend(unwritten::<u32>(4 + STACK_SIZE));
        let out = stages.run(
            "prepare_resume",
            Some(&params),
            1,
            &[(15, &head), (21, &unwritten::<[u32; 4]>(1))],
        );
        let workgroups: [u32; 3] = cast::<[u32; 3]>(&out[1], 1)[0];
        let expected = twin::prepare_resume(&params, saved);
        assert_eq!(workgroups, expected, "{saved} saved, capacity {capacity}");
        assert!(
            u64::from(expected[0]) * u64::from(expected[1]) * 64 >= u64::from(saved.min(capacity)),
            "{saved} of {capacity}: too few workgroups"
        );
    }
}
