//! The stages of `shaders/broad_phase.wgsl` that build the GPU step's tree, each run alone on
//! the device and beside its twin in `sweepcast::cpu::broad_phase` on the same input: every
//! output equal, bit for bit.
//!
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

use sweepcast::cpu::broad_phase::{
    self as twin, Aabb, Continuation, Found, Leaf, Node, Queried, STACK_SIZE, Tree,
};
use sweepcast::gpu::BROAD_PHASE_WGSL;
use sweepcast::layout::{BodyRecord, KeyValue, StepParams};
use sweepcast::{MovingSphere, SweepOptions};
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
    let records: Vec<BodyRecord> = bodies.iter().map(|&body| body.into()).collect();
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

#[test]
fn tree_building_stages_equal_their_twins() {
    let Some(context) = common::gpu_context("tree_building_stages_equal_their_twins") else {
        return;
    };
    let stages = StageRunner::new(&context, "broad_phase.wgsl", BROAD_PHASE_WGSL);
    for (name, bodies, options) in scenes() {
        let built = build(&bodies, &options);
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
        assert_eq!(cast::<[u32; 2]>(&out[2], n), built.codes, "{name}: codes");
        assert_eq!(cast::<KeyValue>(&out[3], n), built.sort_in, "{name}: keys");

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
                (2, bytemuck::cast_slice(&built.boxes)),
                (3, bytemuck::cast_slice(&built.codes)),
                (5, bytemuck::cast_slice(&sort_out)),
                (6, &unwritten::<Leaf>(n)),
                (7, &unwritten::<[u32; 2]>(n)),
            ],
        );
        assert_eq!(cast::<Leaf>(&out[3], n), built.leaves, "{name}: leaves");
        assert_eq!(
            cast::<[u32; 2]>(&out[4], n),
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
    let saved_words: Vec<u32> = saved.iter().flat_map(Continuation::to_words).collect();
    let saved_count = [saved.len() as u32];
    let mut bindings: Vec<(u32, Vec<u8>)> = vec![
        (6, bytemuck::cast_slice(queried.leaves).to_vec()),
        (8, bytemuck::cast_slice(queried.nodes).to_vec()),
        (11, bytemuck::cast_slice(queried.node_boxes).to_vec()),
        (
            12,
            unwritten::<[u32; 2]>(params.candidate_capacity as usize),
        ),
        (13, vec![0; 4]),
        (14, vec![0; 4]),
        (
            17,
            unwritten::<u32>(words * params.continuation_capacity as usize),
        ),
        (18, vec![0; 4]),
        (19, vec![0; 4]),
    ];
    let invocations = if entry == "resume_candidates" {
        bindings.push((15, bytemuck::cast_slice(&saved_words).to_vec()));
        bindings.push((16, bytemuck::cast_slice(&saved_count).to_vec()));
        saved.len()
    } else {
        params.body_count as usize
    };
    let borrowed: Vec<(u32, &[u8])> = bindings.iter().map(|(b, bytes)| (*b, &bytes[..])).collect();
    let out = stages.run(entry, Some(params), invocations.max(1), &borrowed);
    let word = |index: usize| cast::<u32>(&out[index], 1)[0];
    let candidate_count = word(4);
    let continuation_count = word(7);
    let written = candidate_count.min(params.candidate_capacity) as usize;
    let saved_written = continuation_count.min(params.continuation_capacity) as usize;
    let continuation_words: Vec<u32> = cast(&out[6], words * saved_written);
    Found {
        pairs: cast(&out[3], written),
        candidate_count,
        candidates_overflowed: word(5),
        continuations: continuation_words
            .chunks(words)
            .map(Continuation::from_words)
            .collect(),
        continuation_count,
        continuations_overflowed: word(8),
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
    for (name, bodies, options) in cases {
        let mut built = build(&bodies, &options);
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
