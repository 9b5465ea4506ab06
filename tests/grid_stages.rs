//! The stages of `shaders/grid.wgsl`, the GPU step's broad phase, each run alone on the device
//! and beside its twin in `sweepcast::low_level::grid` on the same input: every output equal,
//! bit for bit (where a stage's float arithmetic is not one that WGSL rounds exactly, on
//! lavapipe only, as each comparison says).
//!
//! * `grid_widths`: the counters' words (maxima of the atomics).
//! * `grid_frame`: the grid's parameters (each level's inverse, a quotient, to the bit on
//!   lavapipe, within 3 ulps elsewhere).
//! * `grid_keys`: the sort's key-values and the levels' populations (sums of the atomics).
//! * `grid_cells`: the sorted entries and each hash's range, after the twin's sort.
//! * `grid_plan`: the levels' populations and which level searches which.
//! * `grid_gather` and `grid_gather_counted`: each body's record (one level) or its time
//!   words (several), the counters, and the counted gather's listed hits as a set, which is
//!   every pair a sweep of all pairs finds (the invocations append in any order). The sweep's
//!   times, normals and points come of division and square roots: they are held to the twin's
//!   on lavapipe only (the normals within a tolerance there), as `assert_close` says.
//! * `grid_hits_dispatch`: the listed hits' dispatch, below, at and past the capacity.
//! * `grid_partners` and `grid_records`: the lowest partner at each body's least time, and
//!   the records from it (several levels).
//! * `grid_finish`: the step's counts, also with a body it cannot sweep, an unfinished walk,
//!   hits past the capacity, a walk still pending after its resumes and one without a slot.
//!   (`grid_resume_dispatch` and `grid_resume`, which only walks past their budget reach, are
//!   held to the CPU step through their answers in `tests/grid.rs`.)
//!
//! On every scene in 3D and 2D at 3,000 bodies (several levels on `Radii100` and `Fast`, a periodic
//! box on `Periodic`). Each entry point runs in a pipeline of its own (its bindings from the shader)
//! over buffers the test fills with the twin's outputs of the stages before it, so that a
//! difference is located in one stage; buffers the stage writes and does not join by atomics
//! start as `0xab` bytes, so that an output it failed to write differs from the twin's.

mod common;

use common::{StageRunner, cast, unwritten, unwritten_twin};

use sweepcast::low_level::GRID_WGSL;
use sweepcast::low_level::contacts::prepare_contacts;
use sweepcast::low_level::frame::{BOUNDS_WORDS, INVALID_BODIES, interacts, sort_by_key};
use sweepcast::low_level::grid::{
    self as twin, GRID_RATIO_LOG2, GRID_SINGLE_SPAN_LOG2, GridCounts, GridEntry, GridParams,
    RESUME_HEAD, WORD_CANDIDATES, WORD_CONTACTS, WORD_PENDING, WORD_SAVED_OVERFLOWED,
    WORD_UNFINISHED, table_bits,
};
use sweepcast::low_level::layout::{
    BodyRecord, EarliestRecord, FLAG_PERIODIC, ImpactRecord, KeyValue, STATUS_MISS, StepCounts,
    StepParams, SweepDispatch, SweepParams,
};
use sweepcast::low_level::sweep::sweep_pair;
use testkit::Scene;

// grid.wgsl's bindings (src/gpu/grid.rs's, which are private to it).
const BODIES: u32 = 0;
const SWEEP_PARAMS: u32 = 3;
const STEP: u32 = 40;
const GRID: u32 = 41;
const GRID_OUT: u32 = 42;
const GRID_IN: u32 = 43;
const WORDS: u32 = 44;
const SORT_IN: u32 = 45;
const SORT_OUT: u32 = 46;
const ENTRIES: u32 = 47;
const RANGES: u32 = 48;
const TIME_WORDS: u32 = 50;
const EARLIEST: u32 = 51;
const SCENE_WORDS: u32 = 52;
const COUNTS: u32 = 53;
const STEP_COUNTS: u32 = 54;
const HIT_PAIRS: u32 = 55;
const HIT_IMPACTS: u32 = 56;
const HIT_DISPATCH: u32 = 57;

/// The words of `levels[k].inverse` and of `levels[k].searches` in [`GridParams`]: the levels
/// start at word 12, four words each, the inverse second and the searches third.
fn is_level_word(word: usize, field: usize) -> bool {
    word >= 12 && (word - 12) % 4 == field
}

/// Holds `device` to `twin` element by element, bit for bit, naming the first that differs
/// and how many do.
fn assert_same<T: bytemuck::Pod + std::fmt::Debug>(what: &str, device: &[T], twin: &[T]) {
    assert_eq!(device.len(), twin.len(), "{what}: lengths");
    let differ = |i: &usize| bytemuck::bytes_of(&device[*i]) != bytemuck::bytes_of(&twin[*i]);
    if let Some(first) = (0..device.len()).find(differ) {
        let count = (0..device.len()).filter(differ).count();
        panic!(
            "{what}: element {first} differs ({count} of {} do): the device's {:?}, the \
             twin's {:?}",
            device.len(),
            device[first],
            twin[first]
        );
    }
}

/// Holds `device` to `twin` element by element, bit for bit where `exact` (lavapipe); else
/// every word of each element but those named by `unchecked`: the sweep's times (or their
/// complements' bits) and the words made from them, which are not held to a tolerance. The
/// time is `gap / (approach + sqrt(discriminant))`, whose discriminant, a difference of
/// products, cancels near a graze; off lavapipe WGSL rounds the square root and the division
/// otherwise and may fuse the products, so that no bound in ulps holds (llvmpipe through GL:
/// 3,000 ulps on one hit of `Uniform 3D`). The project's bound on such devices is the
/// parity bound on the step's answer, which `tests/grid.rs` and `tests/gpu_contacts.rs`
/// judge.
fn assert_close<T: bytemuck::Pod + std::fmt::Debug>(
    what: &str,
    device: &[T],
    twin: &[T],
    exact: bool,
    unchecked: &[usize],
) {
    if exact {
        return assert_same(what, device, twin);
    }
    assert_eq!(device.len(), twin.len(), "{what}: lengths");
    for (i, (ours, theirs)) in device.iter().zip(twin).enumerate() {
        let ours_words: &[u32] = bytemuck::cast_slice(std::slice::from_ref(ours));
        let theirs_words: &[u32] = bytemuck::cast_slice(std::slice::from_ref(theirs));
        let close = (0..ours_words.len()).all(|word| {
            let (a, b) = (ours_words[word], theirs_words[word]);
            unchecked.contains(&word) || a == b
        });
        assert!(
            close,
            "{what}: element {i} differs: the device's {ours:?}, the twin's {theirs:?}"
        );
    }
}

/// Holds the device's grid parameters to the twin's: every word to the bit where
/// `division_is_exact` (lavapipe). Elsewhere the levels' inverses, `1 / size`, a quotient that
/// WGSL allows 2.5 ulps, within 3 ulps of the host's correctly rounded one; and where
/// `planned`, which levels each searches, `grid_plan`'s choice by a cost model of quotients,
/// need only be a plan:
/// each level searches itself and of two levels one searches the other. The later stages
/// read the twin's parameters, so these roundings go no further here.
fn assert_grid_equal(
    what: &str,
    device: &GridParams,
    twin: &GridParams,
    division_is_exact: bool,
    planned: bool,
) {
    let device_words: &[u32] = bytemuck::cast_slice(std::slice::from_ref(device));
    let twin_words: &[u32] = bytemuck::cast_slice(std::slice::from_ref(twin));
    for (word, (&ours, &theirs)) in device_words.iter().zip(twin_words).enumerate() {
        let searches = planned && is_level_word(word, 2);
        if division_is_exact || !(is_level_word(word, 1) || searches) {
            assert_eq!(
                ours, theirs,
                "{what}: word {word} of the grid: {device:?} differs from {twin:?}"
            );
        } else if is_level_word(word, 1) {
            assert!(
                ours.abs_diff(theirs) <= 3,
                "{what}: inverse word {word}: {ours:#x} beyond 3 ulps of {theirs:#x}"
            );
        }
    }
    if !planned {
        return;
    }
    let levels = &device.levels[..device.level_count as usize];
    for (k, level) in levels.iter().enumerate() {
        assert!(
            level.searches & (1 << k) != 0,
            "{what}: level {k} searches not itself"
        );
        for (j, other) in levels.iter().enumerate().skip(k + 1) {
            let searched = (level.searches >> j & 1) + (other.searches >> k & 1);
            assert_eq!(searched, 1, "{what}: levels {k} and {j}: {levels:?}");
        }
    }
}

/// How far a component of a listed hit's normal may lie from the twin's on lavapipe: 16 ×
/// 2⁻²⁴. WGSL prescribes no rounding for `normalize`: its accuracy is inherited from `x /
/// length(x)`, a division (2.5 ulps) by `sqrt` of the dot product, itself inherited from `1 /
/// inverseSqrt` (2 and 2.5 ulps), some 7 ulps of a unit component, where the twin's `x * (1 /
/// sqrt)` rounds twice; lavapipe's differs from it by an ulp on about half the hits. Twice
/// their sum leaves a margin.
const NORMAL_TOLERANCE: f32 = 16.0 / 16_777_216.0;

/// The spacing of f32s at `x`'s magnitude (an ulp).
fn ulp(x: f32) -> f32 {
    let x = x.abs();
    f32::from_bits(x.to_bits() + 1) - x
}

/// Holds the listed hits' sweeps to the twin's: the status to the bit; where `exact`
/// (lavapipe, whose division and square root round as the twin's do) the time to the bit,
/// the normal within [`NORMAL_TOLERANCE`] a component, and the point, `center + normal *
/// radius` of the pair's first body, within the normal's tolerance times the radius and an
/// ulp for each of the product and the sum. Elsewhere neither time, normal nor point is held
/// to a tolerance ([`assert_close`] says why).
fn assert_impacts_close(
    what: &str,
    records: &[BodyRecord],
    pairs: &[[u32; 2]],
    device: &[ImpactRecord],
    twin: &[ImpactRecord],
    exact: bool,
) {
    assert_eq!(device.len(), twin.len(), "{what}: lengths");
    for (i, ((ours, theirs), pair)) in device.iter().zip(twin).zip(pairs).enumerate() {
        let radius = records[pair[0] as usize].radius;
        let same_time = ours.time_of_impact.to_bits() == theirs.time_of_impact.to_bits();
        let close = (0..3).all(|k| {
            let (a, b) = (ours.point[k], theirs.point[k]);
            let point_tolerance = NORMAL_TOLERANCE * radius + 2.0 * ulp(a.abs().max(b.abs()));
            (ours.normal[k] - theirs.normal[k]).abs() <= NORMAL_TOLERANCE
                && (a - b).abs() <= point_tolerance
        });
        assert!(
            ours.status == theirs.status && (!exact || (same_time && close)),
            "{what}: hit {i} of {pair:?} differs: the device's {ours:?}, the twin's {theirs:?}"
        );
    }
}

/// Every pair (the lower index first) whose groups interact and whose sweep hits or overlaps,
/// with its sweep: the hits the counted gather lists, found without the grid (a pair hits
/// only where [`common::may_meet`]; the sweep decides the rest).
fn every_hit(records: &[BodyRecord], sweep: &SweepParams) -> Vec<([u32; 2], ImpactRecord)> {
    let mut hits = Vec::new();
    for a in 0..records.len() {
        for b in a + 1..records.len() {
            let (first, second) = (&records[a], &records[b]);
            if !common::may_meet(first, second, sweep) || !interacts(first.groups, second.groups) {
                continue;
            }
            let impact = sweep_pair(first, second, sweep);
            if impact.status != STATUS_MISS {
                hits.push(([a as u32, b as u32], impact));
            }
        }
    }
    hits
}

/// Listed hits sorted by their bytes (the device appends in any order).
fn sorted(mut hits: Vec<([u32; 2], ImpactRecord)>) -> Vec<([u32; 2], ImpactRecord)> {
    let key =
        |(pair, impact): &([u32; 2], ImpactRecord)| (*pair, bytemuck::bytes_of(impact).to_vec());
    hits.sort_by_key(key);
    hits
}

/// The words of the grid's counters and of the saved walks' heads: the scenes' walks take the
/// full budget, so none is saved (the step's `continuation_capacity` is 0: a walk saved would
/// only set `WORD_SAVED_OVERFLOWED`, within these words).
const WORDS_LEN: usize = RESUME_HEAD;

/// `grid_finish`'s counts, which the twin has no function for: the words and the bounds'
/// flag as the shader reads them.
fn finish_twin(
    step: &StepParams,
    grid: &GridParams,
    held: u32,
    words: &[u32],
    scene_words: &[u32],
) -> (GridCounts, StepCounts) {
    let pending = words[WORD_PENDING] + words[WORD_PENDING + 1];
    let unfinished = u32::from(words[WORD_UNFINISHED] != 0 || pending != 0);
    let saved_overflowed = words[WORD_SAVED_OVERFLOWED];
    let invalid = scene_words[INVALID_BODIES];
    let (candidates, contacts) = (words[WORD_CANDIDATES], words[WORD_CONTACTS]);
    let count = step.body_count;
    let overflowed = u32::from(contacts > step.contact_capacity);
    let valid = u32::from(
        unfinished == 0
            && invalid == 0
            && count <= held
            && overflowed == 0
            && saved_overflowed == 0,
    );
    let grid_counts = GridCounts {
        valid,
        bodies: count,
        levels: grid.level_count,
        unfinished,
        invalid_bodies: invalid,
        candidates,
        contacts,
        saved_overflowed,
    };
    let step_counts = StepCounts {
        valid,
        bodies: count,
        candidates,
        contacts,
        body_capacity: held,
        candidates_overflowed: 0,
        unfinished_queries: unfinished,
        saved_queries_overflowed: saved_overflowed,
        contacts_overflowed: overflowed,
        invalid_bodies: invalid,
        _pad1: 0,
        _pad2: 0,
    };
    (grid_counts, step_counts)
}

/// One scene's stages: the runner and the uniforms every entry point reads.
struct Stages<'a> {
    runner: &'a StageRunner<'a>,
    records: &'a [BodyRecord],
    step: StepParams,
    sweep: SweepParams,
}

impl Stages<'_> {
    /// Runs `entry` over `invocations` with the step's parameters, the grid's `grid` where
    /// given and the sweep's where `sweeps`, the bodies where `bodies`, and `bindings`;
    /// returns the contents of `bindings` afterwards, in order.
    fn run(
        &self,
        entry: &str,
        grid: Option<&GridParams>,
        sweeps: bool,
        invocations: usize,
        bindings: &[(u32, &[u8])],
    ) -> Vec<Vec<u8>> {
        let mut uniforms: Vec<(u32, &[u8])> = vec![(STEP, bytemuck::bytes_of(&self.step))];
        uniforms.extend(grid.map(|grid| (GRID, bytemuck::bytes_of(grid))));
        if sweeps {
            uniforms.push((SWEEP_PARAMS, bytemuck::bytes_of(&self.sweep)));
        }
        let mut storage: Vec<(u32, &[u8])> = vec![(BODIES, bytemuck::cast_slice(self.records))];
        storage.extend_from_slice(bindings);
        let workgroups = invocations.div_ceil(64).max(1) as u32;
        self.runner
            .run_with_uniforms(entry, &uniforms, [workgroups, 1, 1], &storage)
            .split_off(1)
    }
}

/// `grid_hits_dispatch` on the device over `words` with the step's parameters `step`, and
/// its twin's: `prepare_contacts`' own computation over the listed hits' count, the padding 0.
fn hits_dispatch(
    runner: &StageRunner,
    step: &StepParams,
    words: &[u32],
) -> (SweepDispatch, SweepDispatch) {
    let mut expected = SweepDispatch::default();
    prepare_contacts(step, words[WORD_CONTACTS], &mut expected);
    let out = runner.run_with_uniforms(
        "grid_hits_dispatch",
        &[(STEP, bytemuck::bytes_of(step))],
        [1, 1, 1],
        &[
            (WORDS, bytemuck::cast_slice(words)),
            (HIT_DISPATCH, &unwritten::<SweepDispatch>(1)),
        ],
    );
    (cast::<SweepDispatch>(&out[1], 1)[0], expected)
}

/// Every entry point of the grid on every scene, each on the twin's outputs of the ones
/// before: equal to its twin.
#[test]
fn the_grid_stages_equal_their_twins() {
    let Some(context) = common::gpu_context("the_grid_stages_equal_their_twins") else {
        return;
    };
    let runner = StageRunner::new(&context, "grid.wgsl", GRID_WGSL);
    // Lavapipe rounds division and square root correctly, as the twin does; GL's llvmpipe
    // and real GPUs need not (WGSL allows division 2.5 ulps, and the sweep's times and
    // normals come of both): see `common::lavapipe`.
    let exact = common::lavapipe(context.adapter_info());
    let (mut several_levels, mut periodic) = (0, 0);
    for scene in Scene::ALL {
        for dimensions in [3, 2] {
            let name = format!("{scene:?} {dimensions}D");
            let (bodies, options) = scene.bodies(3000, dimensions, 7);
            let records: Vec<BodyRecord> = bodies.iter().map(|&body| body.into()).collect();
            let n = records.len();
            let mut step = StepParams::new(&records, &options);
            // The sweep's parameters as the twin's walk takes them from the step.
            let sweep = SweepParams {
                period: step.period,
                flags: step.flags,
                inverse_period: step.inverse_period,
                pair_capacity: 0,
            };
            let hits = sorted(every_hit(&records, &sweep));
            // Room for every hit the counted gather lists.
            step.contact_capacity = hits.len() as u32 + 16;
            let stages = Stages {
                runner: &runner,
                records: &records,
                step,
                sweep: SweepParams::new(&options, 0),
            };
            let what = |stage: &str| format!("{name}: {stage}");

            // grid_widths: maxima (atomicMax), whatever the order of the invocations.
            let mut words = vec![0u32; WORDS_LEN];
            for i in 0..n {
                twin::grid_widths(i, &step, &records, &mut words);
            }
            let out = stages.run(
                "grid_widths",
                None,
                false,
                n,
                &[(WORDS, &[0; 4 * WORDS_LEN])],
            );
            assert_same(
                &what("grid_widths"),
                &cast::<u32>(&out[0], WORDS_LEN),
                &words,
            );

            // grid_frame: the levels, from the host's input and the words.
            let input = GridParams {
                table_bits: table_bits(n),
                ratio_log2: GRID_RATIO_LOG2,
                single_span_log2: GRID_SINGLE_SPAN_LOG2,
                ..GridParams::default()
            };
            let grid = twin::grid_frame(&input, &step, &words);
            let out = stages.runner.run_with_uniforms(
                "grid_frame",
                &[(STEP, bytemuck::bytes_of(&step))],
                [1, 1, 1],
                &[
                    (GRID_IN, bytemuck::bytes_of(&input)),
                    (WORDS, bytemuck::cast_slice(&words)),
                    (GRID_OUT, &unwritten::<GridParams>(1)),
                ],
            );
            assert_same(
                &what("grid_frame's words"),
                &cast::<u32>(&out[1], WORDS_LEN),
                &words,
            );
            assert_grid_equal(
                &what("grid_frame"),
                &cast::<GridParams>(&out[2], 1)[0],
                &grid,
                exact,
                false,
            );

            // grid_keys: each body's key-value; the populations are sums (atomicAdd).
            let words_before_keys = words.clone();
            let mut sort_in = unwritten_twin::<KeyValue>(n);
            for i in 0..n {
                twin::grid_keys(i, &step, &grid, &records, &mut sort_in, &mut words);
            }
            let out = stages.run(
                "grid_keys",
                Some(&grid),
                false,
                n,
                &[
                    (WORDS, bytemuck::cast_slice(&words_before_keys)),
                    (SORT_IN, &unwritten::<KeyValue>(n)),
                ],
            );
            assert_same(
                &what("grid_keys' words"),
                &cast::<u32>(&out[0], WORDS_LEN),
                &words,
            );
            assert_same(&what("grid_keys"), &cast::<KeyValue>(&out[1], n), &sort_in);

            // grid_cells, after the twin of lampshade's sort; the ranges start cleared.
            let mut sort_out = vec![KeyValue::default(); n];
            sort_by_key(&sort_in, &mut sort_out);
            let slots = 2 << grid.table_bits;
            let mut entries = unwritten_twin::<GridEntry>(n);
            let mut ranges = vec![0u32; slots];
            for p in 0..n {
                twin::grid_cells(
                    p,
                    &step,
                    &grid,
                    &records,
                    &sort_out,
                    &mut entries,
                    &mut ranges,
                );
            }
            let out = stages.run(
                "grid_cells",
                Some(&grid),
                false,
                n,
                &[
                    (SORT_OUT, bytemuck::cast_slice(&sort_out)),
                    (ENTRIES, &unwritten::<GridEntry>(n)),
                    (RANGES, &vec![0; 4 * slots]),
                ],
            );
            assert_same(
                &what("grid_cells' entries"),
                &cast::<GridEntry>(&out[1], n),
                &entries,
            );
            assert_same(
                &what("grid_cells' ranges"),
                &cast::<u32>(&out[2], slots),
                &ranges,
            );

            // grid_plan: from the grid of grid_frame and the words of grid_keys.
            let planned = twin::grid_plan(&grid, &words);
            let out = stages.runner.run_with_uniforms(
                "grid_plan",
                &[(GRID, bytemuck::bytes_of(&grid))],
                [1, 1, 1],
                &[
                    (WORDS, bytemuck::cast_slice(&words)),
                    (GRID_OUT, &unwritten::<GridParams>(1)),
                ],
            );
            assert_grid_equal(
                &what("grid_plan"),
                &cast::<GridParams>(&out[1], 1)[0],
                &planned,
                exact,
                true,
            );
            let grid = planned;

            // The gathers. The time words' first word of a body joins by atomicMax (a
            // maximum), the others are its own invocation's; the counters' words by sum.
            let words_before_gather = words.clone();
            let mut time_words = vec![0u32; 4 * n];
            let mut earliest = unwritten_twin::<EarliestRecord>(n);
            for p in 0..n {
                twin::grid_gather(
                    p,
                    &step,
                    &grid,
                    &records,
                    &entries,
                    &ranges,
                    &mut time_words,
                    &mut earliest,
                    &mut words,
                );
            }
            let saved = [WORD_PENDING, WORD_PENDING + 1, WORD_SAVED_OVERFLOWED].map(|w| words[w]);
            assert_eq!(saved, [0; 3], "{name}: a walk ran out");
            let listed = hits.len() + 16;
            for entry in ["grid_gather", "grid_gather_counted"] {
                let out = stages.run(
                    entry,
                    Some(&grid),
                    true,
                    n,
                    &[
                        (WORDS, bytemuck::cast_slice(&words_before_gather)),
                        (ENTRIES, bytemuck::cast_slice(&entries)),
                        (RANGES, bytemuck::cast_slice(&ranges)),
                        (TIME_WORDS, &vec![0; 16 * n]),
                        (EARLIEST, &unwritten::<EarliestRecord>(n)),
                        (HIT_PAIRS, &unwritten::<[u32; 2]>(listed)),
                        (HIT_IMPACTS, &unwritten::<ImpactRecord>(listed)),
                    ],
                );
                let what = |output: &str| what(&format!("{entry}'s {output}"));
                // The plain gather neither counts nor lists: its counters stay as they were.
                let mut expected_words = words.clone();
                if entry == "grid_gather" {
                    for word in [WORD_CANDIDATES, WORD_CONTACTS] {
                        expected_words[word] = words_before_gather[word];
                    }
                }
                assert_same(
                    &what("words"),
                    &cast::<u32>(&out[0], WORDS_LEN),
                    &expected_words,
                );
                assert_same(&what("entries"), &cast::<GridEntry>(&out[1], n), &entries);
                assert_same(&what("ranges"), &cast::<u32>(&out[2], slots), &ranges);
                // Off lavapipe the sweep's times round otherwise: the partners, statuses
                // and images exactly, the times not (see `assert_close`).
                assert_close(
                    &what("time words"),
                    &cast::<[u32; 4]>(&out[3], n),
                    &cast::<[u32; 4]>(bytemuck::cast_slice(&time_words), n),
                    exact,
                    &[0, 2],
                );
                assert_close(
                    &what("records"),
                    &cast::<EarliestRecord>(&out[4], n),
                    &earliest,
                    exact,
                    &[0],
                );
                let count = (words[WORD_CONTACTS] - words_before_gather[WORD_CONTACTS]) as usize;
                assert_eq!(count, hits.len(), "{}", what("hits counted"));
                if entry == "grid_gather" {
                    assert!(
                        out[5]
                            .iter()
                            .chain(&out[6])
                            .all(|&byte| byte == common::UNWRITTEN),
                        "{}",
                        what("listed hits")
                    );
                    continue;
                }
                // The listed hits as a set: the invocations take their slots in any order.
                let pairs = cast::<[u32; 2]>(&out[5], count);
                let impacts = cast::<ImpactRecord>(&out[6], count);
                let listed = sorted(pairs.into_iter().zip(impacts).collect());
                let (pairs, impacts): (Vec<_>, Vec<_>) = listed.into_iter().unzip();
                let (expected_pairs, expected_impacts): (Vec<_>, Vec<_>) =
                    hits.iter().copied().unzip();
                assert_same(&what("listed pairs"), &pairs, &expected_pairs);
                assert_impacts_close(
                    &what("listed impacts"),
                    &records,
                    &expected_pairs,
                    &impacts,
                    &expected_impacts,
                    exact,
                );
            }

            // grid_hits_dispatch, from the counted gather's words.
            let (device, expected) = hits_dispatch(&runner, &step, &words);
            assert_same(&what("grid_hits_dispatch"), &[device], &[expected]);

            // grid_partners (several levels; with one it writes nothing): the partner words
            // join by atomicMax (maxima).
            let time_words_before_partners = time_words.clone();
            for p in 0..n {
                twin::grid_partners(
                    p,
                    &step,
                    &grid,
                    &records,
                    &entries,
                    &ranges,
                    &mut time_words,
                    &mut words,
                );
            }
            let out = stages.run(
                "grid_partners",
                Some(&grid),
                true,
                n,
                &[
                    (WORDS, bytemuck::cast_slice(&words)),
                    (ENTRIES, bytemuck::cast_slice(&entries)),
                    (RANGES, bytemuck::cast_slice(&ranges)),
                    (
                        TIME_WORDS,
                        bytemuck::cast_slice(&time_words_before_partners),
                    ),
                    (HIT_PAIRS, &unwritten::<[u32; 2]>(1)),
                    (HIT_IMPACTS, &unwritten::<ImpactRecord>(1)),
                ],
            );
            assert_same(
                &what("grid_partners' words"),
                &cast::<u32>(&out[0], WORDS_LEN),
                &words,
            );
            // Off lavapipe the partners' walk sweeps again and matches each hit to its
            // partner's least time (from the twin, here) by equality of the time's bits,
            // which the device's rounding may miss: the partner words (the second of each
            // body's four) are held to the twin's only there. (tests/grid.rs holds the whole
            // step on such a device to its tree's on the same device.)
            assert_close(
                &what("grid_partners' time words"),
                &cast::<[u32; 4]>(&out[3], n),
                &cast::<[u32; 4]>(bytemuck::cast_slice(&time_words), n),
                exact,
                &[0, 1, 2],
            );

            // grid_records (several levels): each body's record from its two words.
            let earliest_before_records = earliest.clone();
            for i in 0..n {
                twin::grid_records(i, &step, &grid, &records, &time_words, &mut earliest);
            }
            let out = stages.run(
                "grid_records",
                Some(&grid),
                true,
                n,
                &[
                    (TIME_WORDS, bytemuck::cast_slice(&time_words)),
                    (EARLIEST, bytemuck::cast_slice(&earliest_before_records)),
                ],
            );
            assert_close(
                &what("grid_records"),
                &cast::<EarliestRecord>(&out[1], n),
                &earliest,
                exact,
                &[0],
            );

            // grid_finish: the step as it is, and with a body it cannot sweep, an unfinished
            // walk, one hit past the capacity, a walk still pending after its resumes (of
            // either chain), and one that found no slot.
            let mut scene_words = vec![0u32; BOUNDS_WORDS];
            for case in 0..7 {
                let (mut finish_step, mut finish_words) = (step, words.clone());
                scene_words[INVALID_BODIES] = u32::from(case == 1);
                finish_words[WORD_UNFINISHED] = u32::from(case == 2);
                finish_words[WORD_PENDING] = u32::from(case == 4);
                finish_words[WORD_PENDING + 1] = u32::from(case == 5);
                finish_words[WORD_SAVED_OVERFLOWED] = u32::from(case == 6);
                if case == 3 {
                    finish_step.contact_capacity = words[WORD_CONTACTS] - 1;
                }
                let expected =
                    finish_twin(&finish_step, &grid, n as u32, &finish_words, &scene_words);
                let finish = Stages {
                    step: finish_step,
                    ..stages
                };
                let out = finish.run(
                    "grid_finish",
                    Some(&grid),
                    false,
                    1,
                    &[
                        (WORDS, bytemuck::cast_slice(&finish_words)),
                        (SCENE_WORDS, bytemuck::cast_slice(&scene_words)),
                        (COUNTS, &unwritten::<GridCounts>(1)),
                        (STEP_COUNTS, &unwritten::<StepCounts>(1)),
                    ],
                );
                let what = what(&format!("grid_finish, case {case}"));
                assert_same(&what, &cast::<GridCounts>(&out[2], 1), &[expected.0]);
                assert_same(&what, &cast::<StepCounts>(&out[3], 1), &[expected.1]);
                assert_eq!(expected.0.valid, u32::from(case == 0), "{what}");
            }

            several_levels += usize::from(grid.level_count > 1);
            periodic += usize::from(step.flags & FLAG_PERIODIC != 0);
            eprintln!(
                "{name}: {n} bodies, {} levels, {} hits, every stage held to its twin",
                grid.level_count,
                hits.len()
            );
            assert!(hits.len() > 100, "{name}: too few hits to test");
        }
    }
    assert!(several_levels >= 2, "too few scenes with several levels");
    assert!(periodic >= 2, "too few periodic scenes");
}

/// `grid_hits_dispatch` from counts below, at and past the capacity, and past one dimension
/// of workgroups: `prepare_contacts`' dispatch, the padding 0.
#[test]
fn the_hits_dispatch_equals_its_twin() {
    let Some(context) = common::gpu_context("the_hits_dispatch_equals_its_twin") else {
        return;
    };
    let runner = StageRunner::new(&context, "grid.wgsl", GRID_WGSL);
    for (count, capacity) in common::COUNTS_AND_CAPACITIES {
        let step = StepParams {
            contact_capacity: capacity,
            ..StepParams::default()
        };
        let mut words = vec![0u32; WORDS_LEN];
        words[WORD_CONTACTS] = count;
        let (device, expected) = hits_dispatch(&runner, &step, &words);
        assert_same(&format!("{count} of {capacity}"), &[device], &[expected]);
    }
}
