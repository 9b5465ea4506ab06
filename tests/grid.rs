//! The grid broad phase (`shaders/grid.wgsl` and its twin `low_level::grid`): each body's
//! earliest contact equals the CPU step's, on every scene.

use sweepcast::low_level::grid::{
    GRID_RATIO_LOG2, GRID_SINGLE_SPAN_LOG2, GridResume, earliest_by_grid, earliest_by_grid_with,
};
use sweepcast::low_level::layout::{BodyRecord, StepParams};
use sweepcast::{MovingSphere, SweepOptions, cpu};
use testkit::Scene;

/// The twin's earliest contacts for `bodies`, decoded.
fn twin_earliest(
    bodies: &[MovingSphere],
    options: SweepOptions,
    ratios: [u32; 2],
) -> Vec<Option<sweepcast::EarliestImpact>> {
    let records: Vec<BodyRecord> = bodies.iter().copied().map(BodyRecord::from).collect();
    let step = StepParams::new(&records, &options);
    let run = earliest_by_grid(&step, &records, ratios);
    assert!(!run.unfinished, "an invocation ran out of its budget");
    run.earliest.iter().map(|record| record.decode()).collect()
}

fn assert_twin_is_the_cpu_step(label: &str, bodies: &[MovingSphere], options: SweepOptions) {
    let cpu = cpu::find_contacts(bodies, options).expect("valid bodies");
    let expected = cpu.earliest_impacts();
    for ratios in [
        [GRID_SINGLE_SPAN_LOG2, GRID_RATIO_LOG2],
        [0, 1],
        [0, 2],
        [0, 0],
    ] {
        let twin = twin_earliest(bodies, options, ratios);
        let differ: Vec<_> = (0..bodies.len())
            .filter(|&i| twin[i] != expected[i])
            .take(5)
            .map(|i| (i, twin[i], expected[i]))
            .collect();
        assert!(
            differ.is_empty(),
            "{label}, ratios {ratios:?}: bodies whose earliest contact differs from the CPU \
             step's (grid, CPU): {differ:?}"
        );
    }
}

/// Walks past their budget, saved and resumed (`grid_resume`): with the budget lowered to 7
/// steps, so that nearly every walk stops many times, enough resumes give each body the
/// earliest contact of the walks that never stopped, on every scene in 2D and 3D, and the
/// same pairs and hits counted: a resumed walk goes on exactly where it stopped, no entry
/// skipped and none visited twice. With no resume the step is unfinished, and with one slot a
/// chain the saved walks overflow it: never a silent partial answer.
#[test]
fn walks_past_their_budget_resume_where_they_stopped() {
    let totals = |run: &sweepcast::low_level::grid::GridRun| {
        run.work.iter().fold((0, 0), |(pairs, hits), work| {
            (pairs + work.pairs, hits + work.hits)
        })
    };
    for scene in Scene::ALL {
        for dims in [2, 3] {
            let (bodies, options) = scene.bodies(700, dims, 3);
            let label = format!("{scene:?} {dims}D");
            let records: Vec<BodyRecord> = bodies.iter().copied().map(BodyRecord::from).collect();
            let step = StepParams::new(&records, &options);
            let ratios = [GRID_SINGLE_SPAN_LOG2, GRID_RATIO_LOG2];
            let whole = earliest_by_grid(&step, &records, ratios);
            assert!(!whole.unfinished && !whole.saved_overflowed, "{label}");
            let capacity = bodies.len() as u32;
            let with = |budget, passes, capacity| {
                let resume = GridResume {
                    budget,
                    passes,
                    capacity,
                };
                earliest_by_grid_with(&step, &records, ratios, resume)
            };
            // Twice the resumes until every walk finishes (a walk of s steps needs s / 7).
            let mut passes = 1;
            let resumed = loop {
                let run = with(7, passes, capacity);
                if !run.unfinished {
                    break run;
                }
                assert!(
                    passes < 1 << 14,
                    "{label}: unfinished after {passes} resumes"
                );
                passes *= 2;
            };
            assert!(!resumed.saved_overflowed, "{label}");
            assert!(passes > 1, "{label}: the budget of 7 stopped no walk twice");
            let differ = (0..bodies.len()).find(|&i| resumed.earliest[i] != whole.earliest[i]);
            assert_eq!(
                differ, None,
                "{label}: resumed {passes} times, first body differing"
            );
            assert_eq!(totals(&resumed), totals(&whole), "{label}: pairs and hits");
            assert!(with(7, 0, capacity).unfinished, "{label}: no resume");
            let crowded = with(7, passes, 1);
            assert!(crowded.saved_overflowed, "{label}: one slot a chain");
        }
    }
}

/// Periodic boxes whose coarsest level has two cells an axis (`testkit::two_cells_an_axis`):
/// the premise (each such level's cell over a third of the period, at most half of it), and
/// the twin's earliest contacts equal the CPU step's at every level ratio, so its stencil
/// visits no cell twice.
#[test]
fn the_grid_twin_equals_the_cpu_step_in_boxes_of_two_cells_an_axis() {
    for case in 0..3 {
        let (bodies, options) = testkit::two_cells_an_axis(case, 7);
        let records: Vec<BodyRecord> = bodies.iter().copied().map(BodyRecord::from).collect();
        let step = StepParams::new(&records, &options);
        let ratios = [GRID_SINGLE_SPAN_LOG2, GRID_RATIO_LOG2];
        let grid = earliest_by_grid(&step, &records, ratios).grid;
        let coarsest = grid.levels[0].size;
        let period = step.period[0];
        assert!(
            coarsest > period / 3.0 && coarsest <= period / 2.0,
            "case {case}: the coarsest cell {coarsest} of a period {period}"
        );
        // One level for one size; finer levels under the coarse one for case 2.
        assert_eq!(grid.level_count > 1, case == 2, "case {case}: {grid:?}");
        assert_twin_is_the_cpu_step(&format!("two cells an axis, case {case}"), &bodies, options);
    }
}

/// Every scene in 2D and 3D, with and without the separating option, at three level ratios.
#[test]
fn the_grid_twin_equals_the_cpu_step_on_every_scene() {
    for scene in Scene::ALL {
        for dims in [2, 3] {
            for (n, seed) in [(1, 1), (500, 1), (3_000, 2)] {
                let (bodies, options) = scene.bodies(n, dims, seed);
                let label = format!("{scene:?} {dims}D {n}");
                assert_twin_is_the_cpu_step(&label, &bodies, options);
                let separating = SweepOptions {
                    stop_at_penetration: false,
                    ..options
                };
                assert_twin_is_the_cpu_step(&format!("{label} separating"), &bodies, separating);
            }
        }
    }
}

/// No body at all.
#[test]
fn the_grid_twin_of_no_body_is_empty() {
    assert!(twin_earliest(&[], SweepOptions::default(), [0, GRID_RATIO_LOG2]).is_empty());
}

#[cfg(feature = "gpu")]
mod common;

#[cfg(feature = "gpu")]
mod on_the_device {
    use super::common;
    use sweepcast::gpu::{ContactPipeline, GpuContext};
    use sweepcast::low_level::GridStage;
    use sweepcast::low_level::grid::{
        GRID_RATIO_LOG2, GRID_RESUME_PASSES, GRID_SAVED_WALKS, GRID_SINGLE_SPAN_LOG2, GridCounts,
        GridParams,
    };
    use sweepcast::low_level::layout::{BodyRecord, EarliestRecord, StepParams};
    use sweepcast::{EarliestImpact, MovingSphere, SweepOptions, cpu, wgpu};
    use testkit::Scene;

    /// One step of the grid on the device: each body's earliest contact, the counts and the
    /// grid it made.
    struct Run {
        earliest: Vec<Option<EarliestImpact>>,
        counts: GridCounts,
        grid: GridParams,
    }

    fn run(
        context: &GpuContext,
        stage: &GridStage,
        bodies: &[MovingSphere],
        count: usize,
        options: SweepOptions,
    ) -> Run {
        run_with_budget(context, stage, bodies, count, options, 0, None)
    }

    /// The step with the walks' `budget` (0: the full one), with the counted gather where
    /// `listed` says how many hits it lists.
    fn run_with_budget(
        context: &GpuContext,
        stage: &GridStage,
        bodies: &[MovingSphere],
        count: usize,
        options: SweepOptions,
        budget: u32,
        listed: Option<u64>,
    ) -> Run {
        let resume = [GRID_RESUME_PASSES, GRID_SAVED_WALKS];
        run_with(
            context, stage, bodies, count, options, budget, listed, resume,
        )
    }

    /// [`run_with_budget`] with `passes` resumes and `saved` slots a chain.
    #[allow(clippy::too_many_arguments)]
    fn run_with(
        context: &GpuContext,
        stage: &GridStage,
        bodies: &[MovingSphere],
        count: usize,
        options: SweepOptions,
        budget: u32,
        listed: Option<u64>,
        [passes, saved]: [u32; 2],
    ) -> Run {
        let (device, queue) = (context.device(), context.queue());
        let records: Vec<BodyRecord> = bodies.iter().copied().map(BodyRecord::from).collect();
        let body_buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bodies"),
            size: (size_of::<BodyRecord>() * records.len()) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        queue.write_buffer(&body_buffer, 0, bytemuck::cast_slice(&records));
        let listed = listed.unwrap_or(0);
        let mut buffers = stage
            .create_buffers_with(device, queue, &body_buffer, options, listed, saved.into())
            .expect("the buffers");
        buffers.set_resume_passes(passes);
        buffers
            .set_body_count(queue, count as u32)
            .expect("within the capacity");
        buffers.set_budget(queue, budget);
        let earliest_size = (size_of::<EarliestRecord>() * records.len()) as u64;
        let counts_size = size_of::<GridCounts>() as u64;
        let grid_size = size_of::<GridParams>() as u64;
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: earliest_size + counts_size + grid_size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        stage.record(&mut encoder, &mut buffers).expect("recorded");
        encoder.copy_buffer_to_buffer(buffers.earliest(), 0, &readback, 0, earliest_size);
        encoder.copy_buffer_to_buffer(buffers.counts(), 0, &readback, earliest_size, counts_size);
        encoder.copy_buffer_to_buffer(
            buffers.grid_params(),
            0,
            &readback,
            earliest_size + counts_size,
            grid_size,
        );
        queue.submit([encoder.finish()]);
        let bytes = common::read_mapped(device, &readback);
        let (earliest, rest) = bytes.split_at(earliest_size as usize);
        let (counts, grid) = rest.split_at(counts_size as usize);
        let records: Vec<EarliestRecord> = bytemuck::pod_collect_to_vec(earliest);
        Run {
            earliest: records[..count]
                .iter()
                .map(EarliestRecord::decode)
                .collect(),
            counts: bytemuck::pod_read_unaligned(counts),
            grid: bytemuck::pod_read_unaligned(grid),
        }
    }

    /// What the device must give: on lavapipe (whose sweep rounds as the CPU twin does) the
    /// CPU step's answer and the twin's grid, to the bit; elsewhere (GL's division and square
    /// root are not correctly rounded) the blocking `ContactPipeline`'s answer on the same
    /// device, to the bit.
    fn assert_right(
        context: &GpuContext,
        pipeline: Option<&ContactPipeline>,
        stage: &GridStage,
        label: &str,
        bodies: &[MovingSphere],
        options: SweepOptions,
    ) {
        let device = run(context, stage, bodies, bodies.len(), options);
        assert_eq!(device.counts.valid, 1, "{label}: {:?}", device.counts);
        assert_eq!(device.counts.bodies as usize, bodies.len(), "{label}");
        // The plain gather counts nothing; the counted one (room for every hit) counts and
        // gives the same earliest contacts.
        assert_eq!(
            (device.counts.candidates, device.counts.contacts),
            (0, 0),
            "{label}"
        );
        let listed = 8 * bodies.len() as u64 + 1024;
        let counted = run_with_budget(
            context,
            stage,
            bodies,
            bodies.len(),
            options,
            0,
            Some(listed),
        );
        assert_eq!(counted.counts.valid, 1, "{label}: {:?}", counted.counts);
        assert_eq!(
            counted.earliest, device.earliest,
            "{label}: the counted gather's earliest"
        );
        // The ordered contacts' path (the tree's) on the same device, or the CPU step.
        let expected = match pipeline {
            Some(pipeline) => pipeline.find(bodies, options).expect("valid bodies"),
            None => {
                let records: Vec<BodyRecord> =
                    bodies.iter().copied().map(BodyRecord::from).collect();
                let step = StepParams::new(&records, &options);
                let twin = sweepcast::low_level::grid::earliest_by_grid(
                    &step,
                    &records,
                    [GRID_SINGLE_SPAN_LOG2, GRID_RATIO_LOG2],
                );
                assert_eq!(device.grid.level_count, twin.grid.level_count, "{label}");
                let levels = twin.grid.level_count as usize;
                assert_eq!(
                    device.grid.levels[..levels],
                    twin.grid.levels[..levels],
                    "{label}"
                );
                let (pairs, hits) = twin.work.iter().fold((0, 0), |(pairs, hits), work| {
                    (pairs + work.pairs, hits + work.hits)
                });
                assert_eq!(u64::from(counted.counts.candidates), pairs, "{label}");
                assert_eq!(u64::from(counted.counts.contacts), hits, "{label}");
                cpu::find_contacts(bodies, options).expect("valid bodies")
            }
        };
        // Each pair counted once: the contacts of the reference.
        assert_eq!(
            counted.counts.contacts as usize,
            expected.contacts().len(),
            "{label}: contacts"
        );
        let expected = expected.earliest_impacts();
        assert_eq!(device.counts.levels, device.grid.level_count, "{label}");
        if let Some(k) = (0..bodies.len()).find(|&k| device.earliest[k] != expected[k]) {
            let differ = (0..bodies.len())
                .filter(|&k| device.earliest[k] != expected[k])
                .count();
            panic!(
                "{label}: body {k}: the grid says {:?}, the reference {:?} ({differ} of {} differ)",
                device.earliest[k],
                expected[k],
                bodies.len()
            );
        }
    }

    fn set_up(test: &str) -> Option<(GpuContext, GridStage, Option<ContactPipeline>)> {
        let context = common::gpu_context(test)?;
        let stage = GridStage::new(context.device()).expect("the grid compiles");
        let pipeline = (!common::lavapipe(context.adapter_info()))
            .then(|| ContactPipeline::new(&context).expect("the step compiles"));
        Some((context, stage, pipeline))
    }

    /// Every scene in 2D and 3D, with and without the separating option.
    #[test]
    fn the_grid_step_equals_the_cpu_step_on_every_scene() {
        let Some((context, stage, pipeline)) =
            set_up("the_grid_step_equals_the_cpu_step_on_every_scene")
        else {
            return;
        };
        for scene in Scene::ALL {
            for dims in [2, 3] {
                for (n, seed) in [(1, 1), (700, 1), (5_000, 2)] {
                    let (bodies, options) = scene.bodies(n, dims, seed);
                    for stop_at_penetration in [true, false] {
                        let options = SweepOptions {
                            stop_at_penetration,
                            ..options
                        };
                        let label = format!("{scene:?} {dims}D {n} {stop_at_penetration}");
                        assert_right(
                            &context,
                            pipeline.as_ref(),
                            &stage,
                            &label,
                            &bodies,
                            options,
                        );
                    }
                }
            }
        }
    }

    /// A step of no body (the count set to 0 over a buffer of one) meets nothing and is valid.
    #[test]
    fn a_grid_step_of_no_body_is_valid_and_empty() {
        let Some((context, stage, _)) = set_up("a_grid_step_of_no_body_is_valid_and_empty") else {
            return;
        };
        let (bodies, options) = Scene::Uniform.bodies(1, 3, 1);
        let device = run(&context, &stage, &bodies, 0, options);
        assert_eq!(device.counts.valid, 1, "{:?}", device.counts);
        assert_eq!(device.counts.bodies, 0);
        assert!(device.earliest.is_empty());
    }

    /// The `fast` scene at 10⁵ bodies: its bullets' walks over the fine cells they cross are
    /// the longest of the scenes (some 32,000 steps), past where Mesa would end an invocation
    /// that counted only its cells and entries.
    #[test]
    fn bullets_whose_walks_are_long_get_the_cpu_steps_answer() {
        let Some((context, stage, pipeline)) =
            set_up("bullets_whose_walks_are_long_get_the_cpu_steps_answer")
        else {
            return;
        };
        let (bodies, options) = Scene::Fast.bodies(100_000, 3, 1);
        assert_right(
            &context,
            pipeline.as_ref(),
            &stage,
            "fast 3D 10⁵",
            &bodies,
            options,
        );
    }

    /// A walk past its budget (lowered, so that a small scene reaches it) raises the
    /// unfinished flag and the step is not valid: never a silent partial answer. With the
    /// budget back, the same buffers give the whole answer.
    #[test]
    fn a_walk_past_its_budget_makes_the_step_invalid() {
        let Some((context, stage, _)) = set_up("a_walk_past_its_budget_makes_the_step_invalid")
        else {
            return;
        };
        // 400 bodies at one point: each walk visits 400 entries.
        let bodies = vec![MovingSphere::new(glam::Vec3::ZERO, 1.0, glam::Vec3::X); 400];
        let options = SweepOptions::default();
        let cut = run_with_budget(&context, &stage, &bodies, bodies.len(), options, 100, None);
        assert_eq!(cut.counts.valid, 0, "{:?}", cut.counts);
        assert_eq!(cut.counts.unfinished, 1, "{:?}", cut.counts);
        let whole = run(&context, &stage, &bodies, bodies.len(), options);
        assert_eq!(whole.counts.valid, 1, "{:?}", whole.counts);
        assert!(whole.earliest.iter().all(Option::is_some));
    }

    /// Walks past their budget resumed on the device (`grid_resume`): with the budget
    /// lowered to 50 steps and enough resumes (each walk of a few hundred steps stops several
    /// times), every scene's step is whole and gives the CPU step's answer (`assert_right`'s
    /// rule), the counted gather's pairs and hits too; with one slot a chain the saved walks
    /// overflow it (`saved_overflowed`, not valid).
    #[test]
    fn walks_past_their_budget_are_resumed_on_the_device() {
        let Some((context, stage, pipeline)) =
            set_up("walks_past_their_budget_are_resumed_on_the_device")
        else {
            return;
        };
        for scene in [Scene::Uniform, Scene::Radii100, Scene::Periodic] {
            for dims in [2, 3] {
                let (bodies, options) = scene.bodies(1_500, dims, 5);
                let label = format!("{scene:?} {dims}D, budget 50");
                let expected = match &pipeline {
                    Some(pipeline) => pipeline.find_earliest(&bodies, &[], options),
                    None => cpu::find_contacts(&bodies, options).map(|c| c.earliest_impacts()),
                }
                .expect("valid bodies");
                for counted in [None, Some(8 * bodies.len() as u64)] {
                    // A slot for every body: with 50 steps nearly every walk stops once.
                    let resume = [64, bodies.len() as u32];
                    let device = run_resumed(&context, &stage, &bodies, options, counted, resume);
                    assert_eq!(device.counts.valid, 1, "{label}: {:?}", device.counts);
                    let differ = (0..bodies.len()).find(|&i| device.earliest[i] != expected[i]);
                    assert_eq!(
                        differ, None,
                        "{label}, counted {counted:?}: first body differing"
                    );
                }
                let crowded = run_resumed(&context, &stage, &bodies, options, None, [64, 1]);
                assert_eq!(
                    crowded.counts.saved_overflowed, 1,
                    "{label}: {:?}",
                    crowded.counts
                );
                assert_eq!(crowded.counts.valid, 0, "{label}");
            }
        }
    }

    /// The step of `bodies` with the walks' budget at 50 steps, `passes` resumes and `saved`
    /// slots a chain, listing `counted` hits where given.
    fn run_resumed(
        context: &GpuContext,
        stage: &GridStage,
        bodies: &[MovingSphere],
        options: SweepOptions,
        counted: Option<u64>,
        [passes, saved]: [u32; 2],
    ) -> Run {
        let (count, budget) = (bodies.len(), 50);
        run_with(
            context,
            stage,
            bodies,
            count,
            options,
            budget,
            counted,
            [passes, saved],
        )
    }

    /// The counted gather lists each hit once: as many hits as its buffers hold is a valid
    /// step, one more is not (counted past the capacity, so that the caller knows how many
    /// to make room for).
    #[test]
    fn hits_at_the_listing_capacity_fit_and_one_more_does_not() {
        let Some((context, stage, _)) =
            set_up("hits_at_the_listing_capacity_fit_and_one_more_does_not")
        else {
            return;
        };
        let (bodies, options) = Scene::Clustered.bodies(2_000, 3, 5);
        let n = bodies.len();
        let roomy = run_with_budget(&context, &stage, &bodies, n, options, 0, Some(1 << 16));
        let hits = roomy.counts.contacts;
        assert!(hits > 100, "{:?}", roomy.counts);
        let exact = run_with_budget(&context, &stage, &bodies, n, options, 0, Some(hits.into()));
        assert_eq!(exact.counts.valid, 1, "{:?}", exact.counts);
        assert_eq!(exact.counts.contacts, hits);
        let short = run_with_budget(
            &context,
            &stage,
            &bodies,
            n,
            options,
            0,
            Some(u64::from(hits) - 1),
        );
        assert_eq!(short.counts.valid, 0, "{:?}", short.counts);
        assert_eq!(short.counts.contacts, hits, "counted past the capacity");
        assert_eq!(
            short.earliest, roomy.earliest,
            "the gather's own answer is whole"
        );
    }

    /// A body the step cannot sweep (a NaN centre, as a buffer the host never checked may
    /// hold) makes the step invalid, as it makes `StepStage`'s.
    #[test]
    fn an_invalid_body_makes_the_grid_step_invalid() {
        let Some((context, stage, _)) = set_up("an_invalid_body_makes_the_grid_step_invalid")
        else {
            return;
        };
        let (mut bodies, options) = Scene::Uniform.bodies(300, 3, 4);
        bodies[17].center.x = f32::NAN;
        let device = run(&context, &stage, &bodies, bodies.len(), options);
        assert_eq!(device.counts.valid, 0, "{:?}", device.counts);
        assert_eq!(device.counts.invalid_bodies, 1, "{:?}", device.counts);
    }

    /// A body buffer the grid cannot bind, and a count above the buffer's, are typed errors.
    #[test]
    fn bad_buffers_and_counts_are_typed_errors() {
        let Some((context, stage, _)) = set_up("bad_buffers_and_counts_are_typed_errors") else {
            return;
        };
        let (device, queue) = (context.device(), context.queue());
        let buffer = |size, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("bodies"),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        let options = SweepOptions::default();
        let no_storage = buffer(64, wgpu::BufferUsages::COPY_DST);
        let ragged = buffer(48, wgpu::BufferUsages::STORAGE);
        for bodies in [&no_storage, &ragged] {
            assert!(matches!(
                stage.create_buffers(device, queue, bodies, options),
                Err(sweepcast::Error::InvalidBuffer { name: "bodies", .. })
            ));
        }
        let two = buffer(64, wgpu::BufferUsages::STORAGE);
        let mut buffers = stage
            .create_buffers(device, queue, &two, options)
            .expect("two bodies");
        assert!(matches!(
            buffers.set_body_count(queue, 3),
            Err(sweepcast::Error::TooManyBodies { count: 3, max: 2 })
        ));
        buffers
            .set_body_count(queue, 2)
            .expect("within the capacity");
    }

    /// The sort the stages record, lampshade's counted sort with a bound on the key bits
    /// (`record_sort_counted_with_key_bits`, as `src/gpu/kernel.rs` calls it), with the
    /// kernel a stage made `for_adapter` gets (`new_for_adapter`) and the portable one,
    /// against a stable sort on the CPU (`low_level::frame::sort_by_key`, the twins' sort):
    /// random keys of 8, 20 and 32 bits (the grid's table bits lie between), keys of few
    /// values (many duplicates), all equal, and the largest key of the bits, each with the
    /// values in their input order so that a tie put out of order shows; a count below the
    /// capacity (only the counted records are sorted; lampshade leaves the rest unspecified).
    #[test]
    fn the_radix_sort_equals_a_stable_sort() {
        use sweepcast::low_level::frame::sort_by_key;
        use sweepcast::low_level::layout::KeyValue;
        let Some(context) = common::gpu_context("the_radix_sort_equals_a_stable_sort") else {
            return;
        };
        let (device, queue) = (context.device(), context.queue());
        let mut random = testkit::SplitMix64::new(17);
        let capacity = 40_000u32;
        let mut cases: Vec<(String, u32, Vec<u32>)> = Vec::new();
        for bits in [8u32, 20, 32] {
            let largest = if bits == 32 {
                u32::MAX
            } else {
                (1 << bits) - 1
            };
            let draw = |random: &mut testkit::SplitMix64, below: u64| {
                (random.below(below.min(u64::from(largest) + 1))) as u32
            };
            let keys = (0..capacity).map(|_| draw(&mut random, 1 << 32)).collect();
            cases.push((format!("random, {bits} bits"), bits, keys));
            let few = (0..capacity).map(|_| draw(&mut random, 7)).collect();
            cases.push((format!("seven values, {bits} bits"), bits, few));
            cases.push((
                format!("all equal, {bits} bits"),
                bits,
                vec![largest / 3; 3_000],
            ));
            let mut with_largest: Vec<u32> =
                (0..capacity).map(|_| draw(&mut random, 1 << 32)).collect();
            for i in (0..with_largest.len()).step_by(97) {
                with_largest[i] = largest;
            }
            with_largest[0] = 0;
            cases.push((format!("the largest key, {bits} bits"), bits, with_largest));
        }
        cases.push(("a count below the capacity".into(), 32, vec![5, 3, 5, 0, 3]));
        use wgpu::BufferUsages as Usage;
        let bytes = u64::from(capacity) * size_of::<KeyValue>() as u64;
        let buffer = |label, size, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        let input = buffer("sort input", bytes, Usage::STORAGE | Usage::COPY_DST);
        let output = buffer("sort output", bytes, Usage::STORAGE | Usage::COPY_SRC);
        let count = buffer("sort count", 4, Usage::STORAGE | Usage::COPY_DST);
        let readback = buffer("readback", bytes, Usage::MAP_READ | Usage::COPY_DST);
        for specialised in [false, true] {
            let mut sorter = if specialised {
                lampshade::KeyValueSorter::new_for_adapter(device, queue, context.adapter_info())
            } else {
                lampshade::KeyValueSorter::new(device, queue)
            };
            for (label, bits, keys) in &cases {
                let records: Vec<KeyValue> = keys
                    .iter()
                    .enumerate()
                    .map(|(value, &key)| KeyValue {
                        key,
                        value: value as u32,
                    })
                    .collect();
                let mut expected = records.clone();
                sort_by_key(&records, &mut expected);
                queue.write_buffer(&input, 0, bytemuck::cast_slice(&records));
                queue.write_buffer(&count, 0, bytemuck::bytes_of(&(records.len() as u32)));
                let mut encoder = device.create_command_encoder(&Default::default());
                sorter
                    .record_sort_counted_with_key_bits(
                        &mut encoder,
                        &input,
                        &output,
                        &count,
                        capacity,
                        *bits,
                    )
                    .expect("the sort records");
                encoder.copy_buffer_to_buffer(&output, 0, &readback, 0, bytes);
                queue.submit([encoder.finish()]);
                let sorted: Vec<KeyValue> =
                    bytemuck::pod_collect_to_vec(&common::read_mapped(device, &readback));
                assert!(
                    sorted[..records.len()] == expected[..],
                    "{label}, specialised kernel {specialised}: not the stable sort"
                );
            }
        }
    }
}
