//! The whole collision step from the bodies alone, on the GPU and on the CPU
//! (`cpu::ContactFinder`), beside the step a Rust user would build today from parry3d 0.31: a
//! `Bvh` over the same swept boxes (`Bvh::from_leaves`), its pairs of overlapping leaves,
//! `cast_shapes_ball_ball` on each, and the same ordering and earliest impact per body. Both
//! on all cores (parry's self-traversal with its `parallel` feature, its casts with rayon);
//! alternating, so that all paths see the same machine load.
//!
//! ```text
//! cargo run --release --example step_bench -- [--bodies N,N,...] [--scene S] [--dims 2|3]
//!     [--rounds R] [--seed K] [--no-parry] [--no-gpu] [--no-cpu] [--no-subgroups]
//! ```
//!
//! Scenes (`testkit::Scene`): `uniform` (the default: about 10% of the volume in bodies of
//! radius 0.5 to 1, displacements up to 2), `clustered`, `radii100` (radii 0.05 to 5),
//! `fast` (one body in fifty a bullet crossing the scene) and `periodic`. Prints per N the
//! median step time of each path over the rounds, the CPU's median time per stage,
//! candidates and contacts, memory per body, the ratio to parry's step (the median of the
//! rounds' ratios, and the ratio of the medians), and at the end the growth exponent of each
//! path's step time between the last two sizes. `--no-cpu` runs the CPU step once per N (its
//! counts still check the GPU's; its time is of that one cold run), so that a lent GPU's
//! minutes go to the GPU rows.
//!
//! The GPU is whatever adapter `WGPU_BACKEND` selects (without one the GPU rows are skipped,
//! loudly), on a device of the bench's own that asks for the timestamp queries and
//! subgroups the adapter offers (`--no-subgroups`: not subgroups, as `GpuContext::new`).
//! Two GPU steps are timed side by side, medians over the rounds:
//! * the **resident step**: `StepStage` recorded from a body buffer already on the device,
//!   each body's earliest contact only, read back nothing but the 48-byte counts: from the
//!   submission to the counts mapped (the recording beside it);
//! * `ContactPipeline::find`: upload, the step with ordered contacts, readback, decoding.
//!
//! Their device time per stage comes from `low_level::record_step_observed`: with timestamps
//! written between the stages where the adapter has `TIMESTAMP_QUERY_INSIDE_ENCODERS`, or
//! else by wall clock, submitting and waiting after each stage. The same call lists the
//! commands each stage recorded, from which the bench counts dispatches and bytes (see
//! `Gpu::cost`) and prints a cost model of both steps on an H100, per stage: a model, not a
//! measurement.

mod common;

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use common::{Timestamps, bad_options, machine, parse, read_mapped as read};
use rayon::prelude::*;
use sweepcast::gpu::{ContactPipeline, GpuContext, StepCapacities};
use sweepcast::low_level::layout::{BodyRecord, StepCounts};
use sweepcast::low_level::{
    CONTACTS_WGSL, FRAME_WGSL, SWEEP_WGSL, StepCommand, StepDomain, WALLS_WGSL,
    record_step_observed,
};
use sweepcast::low_level::{StepBuffers, StepStage};
use sweepcast::{
    Contact, Impact, ImpactStatus, MovingSphere, Partner, SweepOptions, cpu, parity, reference,
};
use testkit::Scene;

fn main() -> ExitCode {
    let mut sizes = vec![10_000usize, 100_000, 1_000_000];
    let mut scene = Scene::Uniform;
    let mut dimensions = 3;
    let mut rounds = 5;
    let mut seed = 1;
    let mut with_parry = true;
    let mut with_gpu = true;
    let mut with_cpu = true;
    let mut subgroups = true;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--no-parry" => with_parry = false,
            "--no-gpu" => with_gpu = false,
            "--no-cpu" => with_cpu = false,
            "--no-subgroups" => subgroups = false,
            _ => {}
        }
        if flag.starts_with("--no-") {
            continue;
        }
        let value = args.next().unwrap_or_default();
        let parsed = match flag.as_str() {
            "--bodies" => value
                .split(',')
                .map(parse)
                .collect::<Result<Vec<usize>, _>>()
                .map(|s| sizes = s),
            "--scene" => match value.as_str() {
                "uniform" => Ok(Scene::Uniform),
                "clustered" => Ok(Scene::Clustered),
                "radii100" => Ok(Scene::Radii100),
                "fast" => Ok(Scene::Fast),
                "periodic" => Ok(Scene::Periodic),
                _ => Err(format!("unknown scene {value}")),
            }
            .map(|s| scene = s),
            "--dims" if value == "2" || value == "3" => parse(&value).map(|d| dimensions = d),
            "--rounds" => parse(&value).map(|r: usize| rounds = r.max(1)),
            "--seed" => parse(&value).map(|s| seed = s),
            _ => Err(format!("bad option {flag}; see the file's header")),
        };
        if let Err(message) = parsed {
            return bad_options(&message);
        }
    }
    println!("{}, {} threads", machine(), rayon::current_num_threads());
    println!(
        "scene {scene:?}, {dimensions}D, {rounds} rounds (times 10⁵/N, at most 10, below 10⁵ bodies), \
         seed {seed}"
    );
    let mut gpu = with_gpu.then(|| Gpu::new(subgroups)).flatten();
    let mut medians = Vec::new();
    let mut finder = cpu::ContactFinder::new();
    for &n in &sizes {
        let (bodies, options) = scene.bodies(n, dimensions, seed);
        let mut ours = Vec::new();
        let mut stages = Vec::new();
        let mut theirs = Vec::new();
        let (mut contacts, mut candidates) = (0, 0);
        let mut parry_counts = (0, 0);
        let mut resident =
            gpu.as_ref()
                .and_then(|gpu| match Resident::new(gpu, &bodies, options) {
                    Ok(resident) => Some(resident),
                    // Beyond one binding of the device (128 MiB on the software adapters: 4,194,304
                    // candidates, 2,097,152 contacts): no GPU row for this N.
                    Err(error) => {
                        println!("          GPU step: {error}");
                        None
                    }
                });
        let mut runs = GpuRuns::default();
        // A warm-up step of each, then alternating rounds: more of them below 10⁵ bodies,
        // where a step takes milliseconds and the machine's noise is larger.
        // At most ten times: a hundred bodies would otherwise ask for a thousand times the
        // rounds, each with a GPU step of some 100 ms on a software adapter.
        let rounds = rounds * (100_000 / n.max(1)).clamp(1, 10);
        for round in 0..=rounds {
            // With --no-cpu, the CPU step runs once (its counts check the GPU's) and is timed
            // once: the device's minutes go to the GPU.
            if with_cpu || round == 0 {
                let start = Instant::now();
                let found = match finder.find(&bodies, options) {
                    Ok(found) => found,
                    Err(error) => {
                        eprintln!("find_contacts: {error}");
                        return ExitCode::FAILURE;
                    }
                };
                let elapsed = start.elapsed();
                (contacts, candidates) = (found.contacts().len(), found.candidates());
                if round > 0 || !with_cpu {
                    ours.push(elapsed);
                    stages.push(finder.stage_times());
                }
            }
            if let (Some(gpu), Some(state)) = (gpu.as_ref(), resident.as_mut())
                && let Err(error) = runs.round(gpu, state, &bodies, options, round > 0)
            {
                eprintln!("GPU step: {error}");
                return ExitCode::FAILURE;
            }
            if with_parry && options.periodic_box.is_none() {
                let start = Instant::now();
                parry_counts = parry_step(&bodies);
                if round > 0 {
                    theirs.push(start.elapsed());
                }
            }
        }
        // Each round's ratio, of two steps run one after the other: their median follows the
        // machine's drift less than the ratio of the two medians does.
        let mut ratios: Vec<f64> = theirs
            .iter()
            .zip(&ours)
            .map(|(theirs, ours)| theirs.as_secs_f64() / ours.as_secs_f64())
            .collect();
        ratios.sort_by(f64::total_cmp);
        let ours_median = median(&mut ours);
        let stage = |name: &str| {
            median(
                &mut stages
                    .iter()
                    .map(|times| times.get(name).unwrap_or_default())
                    .collect::<Vec<_>>(),
            )
        };
        println!(
            "N = {n}: sweepcast step {:.2} ms ({:.1} M bodies/s); stages: validate {:.2}, \
             build {:.2}, candidates and sweep {:.2}, order {:.2} ms; {candidates} candidates, \
             {contacts} contacts; {:.0} B a body",
            ms(ours_median),
            n as f64 / ours_median.as_secs_f64() / 1e6,
            ms(stage("validate")),
            ms(stage("build")),
            ms(stage("candidates_and_sweep")),
            ms(stage("order")),
            finder.memory_bytes() as f64 / n as f64,
        );
        let gpu_median = match (gpu.as_mut(), resident.as_ref()) {
            (Some(gpu), Some(state)) => runs.report(gpu, state, n, (candidates, contacts)),
            _ => None,
        };
        if let Some(gpu) = gpu.as_ref()
            && resident.is_some()
            && runs.find_counts != (candidates, contacts)
            && let Err(error) = explain_difference(gpu, &mut finder, &bodies, options)
        {
            eprintln!("GPU step: {error}");
            return ExitCode::FAILURE;
        }
        let theirs_median = (!theirs.is_empty()).then(|| median(&mut theirs));
        if let Some(theirs_median) = theirs_median {
            println!(
                "          parry3d step {:.2} ms: {} leaf pairs, {} contacts; sweepcast {:.2}x \
                 (median of the rounds' ratios; ratio of the medians {:.2}x)",
                ms(theirs_median),
                parry_counts.0,
                parry_counts.1,
                ratios[ratios.len() / 2],
                theirs_median.as_secs_f64() / ours_median.as_secs_f64()
            );
        }
        medians.push((n, ours_median, theirs_median, gpu_median));
    }
    if let [.., (n0, ours0, theirs0, gpu0), (n1, ours1, theirs1, gpu1)] = medians[..] {
        let exponent = |t0: Duration, t1: Duration| {
            (t1.as_secs_f64() / t0.as_secs_f64()).ln() / (n1 as f64 / n0 as f64).ln()
        };
        print!(
            "growth exponent of the step time from N = {n0} to {n1}: sweepcast {:.2}",
            exponent(ours0, ours1)
        );
        if let (Some(t0), Some(t1)) = (theirs0, theirs1) {
            print!(", parry3d {:.2}", exponent(t0, t1));
        }
        if let (Some((r0, f0)), Some((r1, f1))) = (gpu0, gpu1) {
            print!(
                ", GPU resident {:.2}, GPU find {:.2}",
                exponent(r0, r1),
                exponent(f0, f1)
            );
        }
        println!();
    }
    ExitCode::SUCCESS
}

/// The H100 of the cost model: HBM3 bandwidth, an assumed cost of a dispatch (launch and
/// barrier), and PCIe for the transfers of `ContactPipeline::find`.
const BANDWIDTH: f64 = 3.35e12;
const DISPATCH: f64 = 5e-6;
const PCIE: f64 = 25e9;
/// Node visits a query, the CPU's count on the uniform scene: each a node (16 bytes) and its
/// box (32), counted as DRAM reads although an H100's 50 MB L2 holds the 48 MB tree of a
/// million bodies.
const VISITS: f64 = 28.0;
/// Timestamps a profiled step writes at most: one before it and one after each stage.
const STAMPS: u32 = 16;

/// The bench's device: the adapter `GpuContext::new` picks from the environment, opened with
/// the timestamp queries (and, unless `--no-subgroups`, the subgroups) it offers; a
/// `ContactPipeline` and a `StepStage` on it.
struct Gpu {
    context: GpuContext,
    pipeline: ContactPipeline,
    stage: StepStage,
    timestamps: Option<Timestamps>,
    /// The path lampshade's sorter takes on this device, and the items a block of its
    /// reduce-then-scan paths (which size their histograms).
    sort_path: SortPath,
    items_per_block: u32,
    shaders: Shaders,
    /// Dispatches of lampshade's sort of (capacity, key bits), counted from its own profile.
    profiled_sorts: HashMap<(u32, u32), Option<usize>>,
}

impl Gpu {
    fn new(subgroups: bool) -> Option<Self> {
        match Self::create(subgroups) {
            Ok(gpu) => Some(gpu),
            Err(error) => {
                eprintln!("!!!!!!!! no GPU rows: {error}");
                None
            }
        }
    }

    fn create(subgroups: bool) -> Result<Self, String> {
        let text = |error: sweepcast::Error| error.to_string();
        let (context, features) = common::bench_context("step_bench", subgroups)?;
        let pipeline = ContactPipeline::new(&context).map_err(text)?;
        let stage =
            StepStage::for_adapter(context.device(), context.adapter_info()).map_err(text)?;
        let device = context.device();
        let timestamps = Timestamps::new(&context, STAMPS);
        let limits = device.limits();
        let sort_path = SortPath::of(context.adapter_info(), device.features(), &limits);
        let gpu = Self {
            sort_path,
            items_per_block: if limits.max_compute_workgroup_storage_size >= 32_768 {
                2048
            } else {
                512
            },
            shaders: Shaders::parse()?,
            timestamps,
            pipeline,
            stage,
            context,
            profiled_sorts: HashMap::new(),
        };
        println!(
            "GPU: {}; features asked for and offered: {features:?}; lampshade's sort: {}; \
             stage times: {}",
            gpu.context.describe(),
            sort_path.name(),
            if gpu.timestamps.is_some() {
                "timestamp queries between the stages, one submission"
            } else {
                "wall clock, a submission and a wait after each stage (no timestamp queries \
                 inside encoders)"
            }
        );
        Ok(gpu)
    }

    /// One resident step of `buffers`: records it and a copy of its counts to `readback`,
    /// submits and waits for the counts mapped. Returns the recording's time, the time from
    /// the submission to the counts mapped, and the counts.
    fn step(
        &self,
        buffers: &mut StepBuffers,
        readback: &wgpu::Buffer,
    ) -> Result<(Duration, Duration, StepCounts), String> {
        let (device, queue) = (self.context.device(), self.context.queue());
        let start = Instant::now();
        let mut encoder = device.create_command_encoder(&Default::default());
        self.stage
            .record(&mut encoder, buffers, None)
            .map_err(|error| error.to_string())?;
        encoder.copy_buffer_to_buffer(buffers.counts(), 0, readback, 0, 48);
        let commands = encoder.finish();
        let recorded = start.elapsed();
        let submitted = Instant::now();
        queue.submit([commands]);
        let counts = read(device, readback, bytemuck::pod_read_unaligned::<StepCounts>)?;
        Ok((recorded, submitted.elapsed(), counts))
    }

    /// Runs the step of `buffers` until its buffers hold it (growing them as
    /// `ContactPipeline::find` does); its counts.
    fn settle(
        &self,
        buffers: &mut StepBuffers,
        readback: &wgpu::Buffer,
    ) -> Result<StepCounts, String> {
        loop {
            let (_, _, counts) = self.step(buffers, readback)?;
            if counts.is_valid() {
                return Ok(counts);
            }
            let (device, queue) = (self.context.device(), self.context.queue());
            self.stage
                .grow(device, queue, buffers, &counts)
                .map_err(|error| error.to_string())?;
        }
    }

    /// One step of `buffers` with its device time per stage (timestamps, or wall clock with
    /// a submission and a wait per stage), and the commands each stage recorded.
    #[allow(clippy::type_complexity)]
    fn profile(
        &self,
        buffers: &mut StepBuffers,
    ) -> Result<
        (
            Vec<(&'static str, Duration)>,
            Vec<(&'static str, StepCommand)>,
        ),
        String,
    > {
        let (device, queue) = (self.context.device(), self.context.queue());
        let mut encoder = device.create_command_encoder(&Default::default());
        let mut times = Vec::new();
        let commands = if let Some(stamps) = &self.timestamps {
            let mut stages = Vec::new();
            encoder.write_timestamp(&stamps.queries, 0);
            let commands = record_step_observed(
                &self.stage,
                &mut encoder,
                buffers,
                None,
                &mut |encoder, stage| {
                    stages.push(stage);
                    encoder.write_timestamp(&stamps.queries, stages.len() as u32);
                    Ok(())
                },
            )
            .map_err(|error| error.to_string())?;
            let written = stages.len() as u32 + 1;
            encoder.resolve_query_set(&stamps.queries, 0..written, &stamps.resolve, 0);
            let bytes = 8 * u64::from(written);
            encoder.copy_buffer_to_buffer(&stamps.resolve, 0, &stamps.readback, 0, bytes);
            queue.submit([encoder.finish()]);
            let ticks: Vec<u64> = read(device, &stamps.readback, |view| {
                bytemuck::pod_collect_to_vec(&view[..bytes as usize])
            })?;
            times = stages
                .iter()
                .zip(ticks.windows(2))
                .map(|(&stage, pair)| {
                    let ns = pair[1].saturating_sub(pair[0]) as f64 * stamps.period_ns;
                    (stage, Duration::from_secs_f64(ns / 1e9))
                })
                .collect();
            commands
        } else {
            let mut last = Instant::now();
            let commands = record_step_observed(
                &self.stage,
                &mut encoder,
                buffers,
                None,
                &mut |encoder, stage| {
                    let done = std::mem::replace(
                        encoder,
                        device.create_command_encoder(&Default::default()),
                    );
                    queue.submit([done.finish()]);
                    common::wait_for(device).map_err(sweepcast::Error::Device)?;
                    let now = Instant::now();
                    times.push((stage, now - last));
                    last = now;
                    Ok(())
                },
            )
            .map_err(|error| error.to_string())?;
            queue.submit([encoder.finish()]);
            commands
        };
        Ok((times, commands))
    }

    /// The dispatches of lampshade's counted sort of `capacity` records with `key_bits`-bit
    /// keys on this device, as its own profile (one timestamped span a compute pass) counts
    /// them; `None` without timestamp queries.
    fn profiled_sort_dispatches(&mut self, capacity: u32, key_bits: u32) -> Option<usize> {
        self.timestamps.as_ref()?;
        let (device, queue) = (self.context.device(), self.context.queue());
        let info = self.context.adapter_info();
        *self
            .profiled_sorts
            .entry((capacity, key_bits))
            .or_insert_with(|| {
                let mut sorter = lampshade::KeyValueSorter::new_for_adapter(device, queue, info);
                let buffer = |size| {
                    device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("profiled sort"),
                        size,
                        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    })
                };
                let (input, output, count) = (
                    buffer(8 * u64::from(capacity)),
                    buffer(8 * u64::from(capacity)),
                    buffer(4),
                );
                queue.write_buffer(&count, 0, bytemuck::bytes_of(&capacity));
                let profile = sorter.profile_sort_counted_gpu_to_gpu_with_key_bits(
                    &input, &output, &count, capacity, key_bits,
                );
                pollster::block_on(profile)
                    .ok()
                    .map(|profile| profile.spans.len())
            })
    }
}

/// One N's bodies on the device, once, and the step's buffers over them: each body's
/// earliest contact only (the resident step), and with ordered contacts (the device part of
/// `ContactPipeline::find`, for its stages).
struct Resident {
    bodies: wgpu::Buffer,
    earliest: StepBuffers,
    ordered: StepBuffers,
    counts: StepCounts,
    ordered_counts: StepCounts,
    readback: wgpu::Buffer,
}

impl Resident {
    fn new(gpu: &Gpu, bodies: &[MovingSphere], options: SweepOptions) -> Result<Self, String> {
        let (device, queue) = (gpu.context.device(), gpu.context.queue());
        let records: Vec<BodyRecord> = bodies.iter().map(|&body| body.into()).collect();
        use wgpu::util::DeviceExt;
        let body_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("bench bodies"),
            contents: bytemuck::cast_slice(&records),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bench counts"),
            size: 48,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let settled = |ordered| {
            let mut buffers = gpu
                .stage
                .create_buffers(
                    device,
                    queue,
                    &body_buffer,
                    options,
                    StepCapacities::default(),
                    ordered,
                )
                .map_err(|error| error.to_string())?;
            let counts = gpu.settle(&mut buffers, &readback)?;
            Ok::<_, String>((buffers, counts))
        };
        let (earliest, counts) = settled(false)?;
        let (ordered, ordered_counts) = settled(true)?;
        Ok(Self {
            bodies: body_buffer,
            earliest,
            ordered,
            counts,
            ordered_counts,
            readback,
        })
    }
}

/// The GPU's measurements of one N over the rounds, and the commands the last profiled
/// steps recorded.
#[derive(Default)]
struct GpuRuns {
    resident: Vec<Duration>,
    recorded: Vec<Duration>,
    find: Vec<Duration>,
    find_counts: (usize, usize),
    resident_stages: Vec<Vec<(&'static str, Duration)>>,
    ordered_stages: Vec<Vec<(&'static str, Duration)>>,
    resident_commands: Vec<(&'static str, StepCommand)>,
    ordered_commands: Vec<(&'static str, StepCommand)>,
}

/// Where `ContactPipeline::find`'s contacts and the CPU step's differ, each differing pair
/// judged against the f64 oracle. A real GPU's f32 arithmetic need not be the CPU's to the
/// bit (fused multiply-adds, WGSL's division and square root within a few ulp), so a pair
/// at a grazing or end-of-step contact may be a hit on one and a miss on the other: the
/// parity bound allows that and nothing more, and this prints which it is.
fn explain_difference(
    gpu: &Gpu,
    finder: &mut cpu::ContactFinder,
    bodies: &[MovingSphere],
    options: SweepOptions,
) -> Result<(), String> {
    let by_pair = |contacts: &[Contact]| -> HashMap<[u32; 2], Impact> {
        contacts
            .iter()
            .filter_map(|contact| match contact.partner {
                Partner::Body { index, .. } => Some(([contact.body, index], contact.impact)),
                Partner::Wall { .. } => None,
            })
            .collect()
    };
    let found = gpu
        .pipeline
        .find(bodies, options)
        .map_err(|error| format!("ContactPipeline::find: {error}"))?;
    let on_gpu = by_pair(found.contacts());
    let on_cpu = by_pair(
        finder
            .find(bodies, options)
            .map_err(|error| format!("find_contacts: {error}"))?
            .contacts(),
    );
    let only = |these: &HashMap<[u32; 2], Impact>, those: &HashMap<[u32; 2], Impact>| {
        these
            .keys()
            .filter(|pair| !those.contains_key(*pair))
            .copied()
            .collect::<Vec<_>>()
    };
    let mut pairs = only(&on_gpu, &on_cpu);
    pairs.extend(only(&on_cpu, &on_gpu));
    pairs.sort_unstable();
    let oracle = reference::sweep_batch(bodies, &pairs, options);
    let answers = |found: &HashMap<[u32; 2], Impact>, pairs: &[[u32; 2]]| {
        pairs
            .iter()
            .map(|pair| found.get(pair).copied())
            .collect::<Vec<_>>()
    };
    let judge = |found: &HashMap<[u32; 2], Impact>, range: std::ops::Range<usize>, bound| {
        parity::compare(
            bodies,
            &pairs[range.clone()],
            options,
            &answers(found, &pairs[range.clone()]),
            Some(&oracle[range]),
            bound,
        )
    };
    println!(
        "          {} pairs are contacts on one step only; against the f64 oracle, GPU (bound \
         {} eps): {}; CPU (bound {} eps): {}",
        pairs.len(),
        parity::GPU_BOUND,
        judge(&on_gpu, 0..pairs.len(), parity::GPU_BOUND),
        parity::CPU_BOUND,
        judge(&on_cpu, 0..pairs.len(), parity::CPU_BOUND),
    );
    // Each side's time as it computed it (f32 or f64), or a miss.
    fn time(answer: Option<(ImpactStatus, impl std::fmt::LowerExp)>) -> String {
        answer.map_or("miss".to_string(), |(status, t)| {
            format!("{status:?} at t = {t:e}")
        })
    }
    for (k, pair) in pairs.iter().enumerate().take(8) {
        let verdict = |found: &HashMap<[u32; 2], Impact>, bound| {
            let report = judge(found, k..k + 1, bound);
            format!(
                "{} (backward error {:.3} eps{})",
                time(found.get(pair).map(|i| (i.status, i.time_of_impact))),
                report.max_backward_error,
                if report.passed() {
                    ""
                } else {
                    ", FAILS the bound"
                }
            )
        };
        println!(
            "          pair {pair:?}: GPU {}; CPU {}; oracle {}",
            verdict(&on_gpu, parity::GPU_BOUND),
            verdict(&on_cpu, parity::CPU_BOUND),
            time(oracle[k].map(|i| (i.status, i.time_of_impact))),
        );
    }
    Ok(())
}

/// A step's counts as the model takes them: bodies, candidates, contacts.
#[derive(Clone, Copy)]
struct Counts {
    n: f64,
    c: f64,
    k: f64,
}

impl GpuRuns {
    /// One round: `ContactPipeline::find`, the resident step, and a profiled step of each
    /// kind of buffers; kept when `timed` (not the warm-up).
    fn round(
        &mut self,
        gpu: &Gpu,
        state: &mut Resident,
        bodies: &[MovingSphere],
        options: SweepOptions,
        timed: bool,
    ) -> Result<(), String> {
        let start = Instant::now();
        let found = gpu
            .pipeline
            .find(bodies, options)
            .map_err(|error| format!("ContactPipeline::find: {error}"))?;
        let elapsed = start.elapsed();
        self.find_counts = (found.candidates(), found.contacts().len());
        drop(found);
        let (recorded, resident, counts) = gpu.step(&mut state.earliest, &state.readback)?;
        if !counts.is_valid() || counts.candidates != state.counts.candidates {
            return Err(format!("the resident step changed its counts: {counts:?}"));
        }
        let (resident_stages, commands) = gpu.profile(&mut state.earliest)?;
        self.resident_commands = commands;
        let (ordered_stages, commands) = gpu.profile(&mut state.ordered)?;
        self.ordered_commands = commands;
        if timed {
            self.find.push(elapsed);
            self.resident.push(resident);
            self.recorded.push(recorded);
            self.resident_stages.push(resident_stages);
            self.ordered_stages.push(ordered_stages);
        }
        Ok(())
    }

    /// Prints the GPU rows of one N; the medians of the resident step and of `find`.
    fn report(
        &mut self,
        gpu: &mut Gpu,
        state: &Resident,
        n: usize,
        cpu_counts: (usize, usize),
    ) -> Option<(Duration, Duration)> {
        if self.resident.is_empty() {
            return None;
        }
        let resident = median(&mut self.resident);
        let find = median(&mut self.find);
        let recorded = median(&mut self.recorded);
        let counts = state.counts;
        let (c, k) = (counts.candidates as usize, counts.contacts as usize);
        // The resident step (earliest contacts only) counts nothing; the ordered one counts
        // the pairs whose swept boxes meet and the contacts, each once: the CPU's.
        let agree = (c, k) == (0, 0)
            && self.find_counts == cpu_counts
            && (
                state.ordered_counts.candidates as usize,
                state.ordered_counts.contacts as usize,
            ) == cpu_counts;
        println!(
            "          GPU resident step {:.2} ms (submission to the counts mapped, median; \
             recording it took {:.2} ms before), ContactPipeline::find {:.2} ms: find / \
             resident {:.2}x; {} pairs swept, {} contacts ({})",
            ms(resident),
            ms(recorded),
            ms(find),
            find.as_secs_f64() / resident.as_secs_f64(),
            state.ordered_counts.candidates,
            state.ordered_counts.contacts,
            if agree {
                "the same in find, the ordered step and on the CPU; the resident step counts none"
                    .to_string()
            } else {
                format!(
                    "!!!!!!!! find {:?}, CPU {cpu_counts:?}, ordered step {}/{}",
                    self.find_counts,
                    state.ordered_counts.candidates,
                    state.ordered_counts.contacts
                )
            }
        );
        let per_body = |bytes: u64| bytes as f64 / n as f64;
        println!(
            "          device memory a body: resident step {:.0} B (its buffers {:.0} and the \
             bodies 32; not lampshade's workspace), ContactPipeline {:.0} B (its \
             device_memory_bytes)",
            per_body(state.earliest.device_memory_bytes() + state.bodies.size()),
            per_body(state.earliest.device_memory_bytes()),
            per_body(gpu.pipeline.device_memory_bytes()),
        );
        let source = if gpu.timestamps.is_some() {
            "timestamps"
        } else {
            "wall clock, submitted per stage"
        };
        for (name, runs) in [
            ("resident step", &self.resident_stages),
            ("find's step (ordered contacts)", &self.ordered_stages),
        ] {
            println!(
                "          {name}, device time per stage ({source}, median): {}",
                stage_medians(runs)
            );
        }
        let measured = Counts {
            n: n as f64,
            c: state.ordered_counts.candidates as f64,
            k: state.ordered_counts.contacts as f64,
        };
        // The commands as this adapter's lampshade path records them.
        for (name, commands) in [
            ("resident step", &self.resident_commands),
            ("find's step", &self.ordered_commands),
        ] {
            let local = gpu.cost(commands, measured, gpu.sort_path, gpu.items_per_block);
            let dispatches: Vec<String> = local
                .iter()
                .map(|(stage, cost)| format!("{stage} {:.0}", cost.dispatches))
                .collect();
            let total: f64 = local.iter().map(|(_, cost)| cost.dispatches).sum();
            println!(
                "          {name}: dispatches per stage on this adapter: {}; {total:.0} in all",
                dispatches.join(", ")
            );
        }
        let mut checks = Vec::new();
        for command in self.ordered_commands.iter().map(|(_, command)| command) {
            if let &StepCommand::Sort {
                capacity, key_bits, ..
            } = command
            {
                let derived = gpu
                    .sort_path
                    .cost(0.0, capacity, key_bits, gpu.items_per_block)
                    .0;
                let profiled = gpu.profiled_sort_dispatches(capacity, key_bits);
                checks.push(format!(
                    "{key_bits}-bit keys, capacity {capacity}: {derived:.0} derived, {}",
                    profiled.map_or("no profile (no timestamp queries)".into(), |count| {
                        format!("{count} in lampshade's profile")
                    })
                ));
            }
        }
        checks.dedup();
        println!(
            "          lampshade's dispatches a sort ({}; derived from its 0.13 source, checked \
             against its own timestamped profile where the adapter has one): {}",
            gpu.sort_path.name(),
            checks.join("; ")
        );
        print_models(
            gpu,
            &self.resident_commands,
            &self.ordered_commands,
            measured,
        );
        Some((resident, find))
    }
}

/// The median time of each stage over the runs, in the order of the first run, and their
/// sum.
fn stage_medians(runs: &[Vec<(&'static str, Duration)>]) -> String {
    let Some(first) = runs.first() else {
        return String::new();
    };
    let mut total = Duration::ZERO;
    let mut stages: Vec<String> = first
        .iter()
        .enumerate()
        .map(|(k, (name, _))| {
            let mut times: Vec<Duration> = runs.iter().map(|run| run[k].1).collect();
            let time = median(&mut times);
            total += time;
            format!("{name} {:.2}", ms(time))
        })
        .collect();
    stages.push(format!("sum {:.2} ms", ms(total)));
    stages.join(", ")
}

/// The path lampshade 0.13's `KeyValueSorter::new_for_adapter` takes for counted sorts
/// (`RadixVariant::for_adapter` in lampshade:src/sort/pipeline.rs, as `record_sort_counted`
/// dispatches it in lampshade:src/sort/key_value_sorter.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SortPath {
    /// 2 bits a pass, reduce-then-scan (lampshade:src/sort/counted.rs with
    /// lampshade:counted.wgsl).
    Portable,
    /// 4 bits a pass, reduce-then-scan (lampshade:counted_wide.wgsl): NVIDIA Vulkan discrete GPUs
    /// without subgroups enabled, Intel Vulkan.
    Wide,
    /// 8 bits a pass: one histogram of every digit, a prefix and one scatter a pass with
    /// decoupled look-back (lampshade:src/sort/eight_bit.rs): NVIDIA Vulkan with `SUBGROUP` enabled
    /// and fixed 32-wide subgroups.
    EightBit,
}

impl SortPath {
    fn of(info: &wgpu::AdapterInfo, features: wgpu::Features, limits: &wgpu::Limits) -> Self {
        let nvidia = info.vendor == 0x10de;
        let workgroup = |invocations, storage| {
            limits.max_compute_invocations_per_workgroup >= invocations
                && limits.max_compute_workgroup_size_x >= invocations
                && limits.max_compute_workgroup_storage_size >= storage
        };
        if info.backend != wgpu::Backend::Vulkan {
            Self::Portable
        } else if nvidia
            && features.contains(wgpu::Features::SUBGROUP)
            && (info.subgroup_min_size, info.subgroup_max_size) == (32, 32)
            && workgroup(256, 16_388)
        {
            Self::EightBit
        } else if (nvidia && info.device_type == wgpu::DeviceType::DiscreteGpu)
            || (info.vendor == 0x8086 && workgroup(128, 128 * 4 * 16))
        {
            Self::Wide
        } else {
            Self::Portable
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Portable => "lampshade's portable 2-bit reduce-then-scan",
            Self::Wide => "lampshade's 4-bit reduce-then-scan",
            Self::EightBit => "lampshade's 8-bit one-sweep (subgroups)",
        }
    }

    /// Dispatches and bytes of one counted sort of `items` 8-byte records (at most
    /// `capacity`: the histograms are sized by it) with `key_bits`-bit keys, from lampshade
    /// 0.13's source: reduce-then-scan records a dispatch preparation, then a pass a digit
    /// of a reduce (reads the records), a scan of the histograms (a dispatch and an add a
    /// level) and a scatter (reads and writes them): 24 bytes a record a pass. The 8-bit
    /// path records a preparation, one histogram of every digit (reads the records once), a
    /// prefix, and one scatter a pass (reads and writes them: 16 bytes).
    fn cost(self, items: f64, capacity: u32, key_bits: u32, items_per_block: u32) -> (f64, f64) {
        let bits = match self {
            Self::Portable => 2,
            Self::Wide => 4,
            Self::EightBit => 8,
        };
        let passes = f64::from(key_bits.max(1).div_ceil(bits));
        if self == Self::EightBit {
            return (3.0 + passes, 8.0 * items + 16.0 * items * passes);
        }
        let histogram = capacity.div_ceil(items_per_block) * (1 << bits);
        let levels = f64::from(scan_levels(histogram, items_per_block));
        let histogram_bytes = 4.0 * f64::from(histogram);
        (
            1.0 + passes * (2.0 + 2.0 * levels),
            passes * (24.0 * items + 6.0 * histogram_bytes),
        )
    }
}

/// The levels of lampshade's scan of `items` words, `per_block` a workgroup.
fn scan_levels(mut items: u32, per_block: u32) -> u32 {
    let mut levels = 0;
    while items > 1 {
        items = items.div_ceil(per_block);
        levels += 1;
    }
    levels
}

/// A stage's dispatches and bytes in the model.
#[derive(Clone, Copy, Default)]
struct Cost {
    dispatches: f64,
    bytes: f64,
}

impl Cost {
    fn seconds(self) -> f64 {
        self.bytes / BANDWIDTH + self.dispatches * DISPATCH
    }
}

impl Gpu {
    /// The cost per stage (in the order recorded) of `commands` for `counts`, with
    /// lampshade's sorts on `path`.
    fn cost(
        &self,
        commands: &[(&'static str, StepCommand)],
        counts: Counts,
        path: SortPath,
        items_per_block: u32,
    ) -> Vec<(&'static str, Cost)> {
        let mut stages: Vec<(&'static str, Cost)> = Vec::new();
        for (stage, command) in commands {
            let (dispatches, bytes) = match *command {
                StepCommand::Dispatch {
                    shader,
                    entry_point,
                    domain,
                } => (1.0, self.shaders.bytes(shader, entry_point, domain, counts)),
                StepCommand::Sort {
                    items,
                    capacity,
                    key_bits,
                } => path.cost(counts.of(items), capacity, key_bits, items_per_block),
                StepCommand::Clear { bytes } => (0.0, bytes as f64),
                _ => (0.0, 0.0),
            };
            if stages.last().is_none_or(|(last, _)| last != stage) {
                stages.push((stage, Cost::default()));
            }
            let cost = &mut stages.last_mut().expect("pushed above").1;
            cost.dispatches += dispatches;
            cost.bytes += bytes;
        }
        stages
    }
}

impl Counts {
    /// Invocations of an indirect dispatch over `domain` (none for the resumes of saved
    /// queries: the counts do not say how many were saved; on these scenes few or none).
    fn of(self, domain: StepDomain) -> f64 {
        match domain {
            StepDomain::Bodies => self.n,
            StepDomain::Candidates => self.c,
            StepDomain::Contacts => self.k,
            _ => 0.0,
        }
    }
}

/// Each entry point of the step's shaders: its workgroup size and the bindings it uses,
/// found by naga's analysis of the WGSL the stages compile (not listed by hand).
struct Shaders(HashMap<(String, String), EntryPoint>);

struct EntryPoint {
    workgroup: u32,
    bindings: Vec<(String, Touch)>,
}

/// How a binding counts in the model: an array touched once an invocation (its element's
/// bytes), or a fixed block (a uniform, a dispatch, counters) read once a dispatch.
enum Touch {
    PerInvocation(f64),
    Once(f64),
}

impl Shaders {
    fn parse() -> Result<Self, String> {
        use naga::{ArraySize, TypeInner};
        let mut entry_points = HashMap::new();
        for (shader, source) in [
            ("frame.wgsl", FRAME_WGSL),
            ("contacts.wgsl", CONTACTS_WGSL),
            ("sweep.wgsl", SWEEP_WGSL),
            ("walls.wgsl", WALLS_WGSL),
        ] {
            let module = naga::front::wgsl::parse_str(source)
                .map_err(|error| format!("{shader}: {}", error.emit_to_string(source)))?;
            let info = naga::valid::Validator::new(
                naga::valid::ValidationFlags::all(),
                naga::valid::Capabilities::all(),
            )
            .validate(&module)
            .map_err(|error| format!("{shader}: {error:?}"))?;
            for (index, entry) in module.entry_points.iter().enumerate() {
                let uses = info.get_entry_point(index);
                let dynamic_stride = |inner: &TypeInner| match *inner {
                    TypeInner::Array {
                        size: ArraySize::Dynamic,
                        stride,
                        ..
                    } => Some(f64::from(stride)),
                    _ => None,
                };
                let bindings = module
                    .global_variables
                    .iter()
                    .filter(|(handle, global)| {
                        global.binding.is_some() && !uses[*handle].is_empty()
                    })
                    .map(|(_, global)| {
                        let inner = &module.types[global.ty].inner;
                        let trailing = match inner {
                            TypeInner::Struct { members, .. } => members
                                .last()
                                .and_then(|last| dynamic_stride(&module.types[last.ty].inner)),
                            _ => None,
                        };
                        let touch = match dynamic_stride(inner).or(trailing) {
                            Some(stride) => Touch::PerInvocation(stride),
                            None => Touch::Once(f64::from(inner.size(module.to_ctx()))),
                        };
                        (global.name.clone().unwrap_or_default(), touch)
                    })
                    .collect();
                entry_points.insert(
                    (shader.to_string(), entry.name.clone()),
                    EntryPoint {
                        workgroup: entry.workgroup_size.iter().product(),
                        bindings,
                    },
                );
            }
        }
        Ok(Self(entry_points))
    }

    /// The bytes one dispatch of `entry_point` moves, for `counts`: each binding it uses
    /// touched once an invocation (an element of an array, read or written; a fixed block
    /// once a dispatch), but for what the binding's own count says otherwise (below).
    fn bytes(&self, shader: &str, entry_point: &str, domain: StepDomain, counts: Counts) -> f64 {
        let Some(entry) = self.0.get(&(shader.to_string(), entry_point.to_string())) else {
            return 0.0;
        };
        let invocations = match domain {
            // A direct dispatch over the body buffer's capacity: those past the count do
            // nothing.
            StepDomain::Workgroups(x, y) => (f64::from(x * y * entry.workgroup)).min(counts.n),
            other => counts.of(other),
        };
        entry
            .bindings
            .iter()
            .map(|(name, touch)| match *touch {
                Touch::Once(bytes) => bytes,
                Touch::PerInvocation(stride) => {
                    let (touches, words) = binding_count(entry_point, name, invocations, counts);
                    touches * stride * words
                }
            })
            .sum()
    }
}

/// How often a binding of `entry_point` is touched when it runs `invocations` times, and
/// how many of its elements make one record, where that is not once an invocation and one:
/// - the queries read a node and its box `VISITS` times a body, write a pair a candidate
///   (not a body), and save a query only when it runs out of steps (none in the model);
/// - `compact` writes a contact a hit;
/// - arrays of atomic words hold a record of several words: a node's box 8, a body's two
///   earliest keys 2;
/// - the small counters and bounds are touched once a dispatch.
fn binding_count(entry_point: &str, name: &str, invocations: f64, counts: Counts) -> (f64, f64) {
    let queries = entry_point == "candidates" || entry_point == "resume_candidates";
    let touches = match name {
        "nodes" | "node_boxes" if queries => invocations * VISITS,
        "pairs" if entry_point == "candidates" => counts.c,
        "continuations_out" | "continuations_in" => 0.0,
        "contacts" if entry_point == "compact" => counts.k,
        "counters" | "bounds" => 1.0,
        _ => invocations,
    };
    let words = match name {
        "node_boxes" => 8.0,
        "earliest_keys" => 2.0,
        _ => 1.0,
    };
    (touches, words)
}

/// The cost model of the resident step and of `find` on an H100, per stage, with
/// lampshade's sorts on the path `GpuContext::new` gives an NVIDIA GPU today (4-bit: it
/// enables no subgroups) and with subgroups enabled (8-bit); and the sort of our own it
/// would take to beat them.
fn print_models(
    gpu: &Gpu,
    resident: &[(&'static str, StepCommand)],
    ordered: &[(&'static str, StepCommand)],
    counts: Counts,
) {
    const H100_BLOCK: u32 = 2048;
    let paths = [SortPath::Wide, SortPath::EightBit];
    for (name, commands, transfers) in [
        ("resident step (earliest only, no transfer)", resident, 0.0),
        (
            "find (ordered contacts; PCIe: bodies up, counts, positions and contacts down)",
            ordered,
            32.0 * counts.n + 48.0 + 4.0 * counts.n + 64.0 * counts.k,
        ),
    ] {
        let [wide, eight] = paths.map(|path| gpu.cost(commands, counts, path, H100_BLOCK));
        let rows: Vec<String> = wide
            .iter()
            .zip(&eight)
            .map(|((stage, w), (_, e))| {
                format!(
                    "{stage} {:.0}/{:.1}/{:.0} | {:.0}/{:.1}/{:.0}",
                    w.dispatches,
                    w.bytes / 1e6,
                    w.seconds() * 1e6,
                    e.dispatches,
                    e.bytes / 1e6,
                    e.seconds() * 1e6
                )
            })
            .collect();
        let total = |costs: &[(&str, Cost)]| {
            costs.iter().fold(Cost::default(), |sum, (_, cost)| Cost {
                dispatches: sum.dispatches + cost.dispatches,
                bytes: sum.bytes + cost.bytes,
            })
        };
        let (w, e) = (total(&wide), total(&eight));
        println!(
            "          model, H100, {name}: stage dispatches/MB/µs with lampshade 4-bit | \
             8-bit: {}; total {:.0}/{:.1}/{:.0} µs | {:.0}/{:.1}/{:.0} µs{}",
            rows.join(", "),
            w.dispatches,
            w.bytes / 1e6,
            w.seconds() * 1e6,
            e.dispatches,
            e.bytes / 1e6,
            e.seconds() * 1e6,
            if transfers > 0.0 {
                format!(
                    "; plus {:.1} MB over PCIe, {:.0} µs: {:.0} | {:.0} µs",
                    transfers / 1e6,
                    transfers / PCIE * 1e6,
                    (w.seconds() + transfers / PCIE) * 1e6,
                    (e.seconds() + transfers / PCIE) * 1e6
                )
            } else {
                String::new()
            }
        );
    }
    // The two sorts of the codes, on each path, and an 8-bit reduce-then-scan of our own:
    // a reduce, a scan of 256 buckets a block (a dispatch and an add a level) and a scatter
    // a pass, 24 bytes a record a pass.
    let sorts: Vec<(u32, u32)> = resident
        .iter()
        .filter_map(|(_, command)| match *command {
            StepCommand::Sort {
                capacity, key_bits, ..
            } => Some((capacity, key_bits)),
            _ => None,
        })
        .collect();
    let of_path = |path: SortPath| {
        sorts
            .iter()
            .fold(Cost::default(), |sum, &(capacity, bits)| {
                let (dispatches, bytes) = path.cost(counts.n, capacity, bits, H100_BLOCK);
                Cost {
                    dispatches: sum.dispatches + dispatches,
                    bytes: sum.bytes + bytes,
                }
            })
    };
    let own = sorts
        .iter()
        .fold(Cost::default(), |sum, &(capacity, bits)| {
            let passes = f64::from(bits.div_ceil(8));
            let levels = f64::from(scan_levels(capacity.div_ceil(H100_BLOCK) * 256, H100_BLOCK));
            Cost {
                dispatches: sum.dispatches + passes * (2.0 + 2.0 * levels),
                bytes: sum.bytes + passes * 24.0 * counts.n,
            }
        });
    let show = |cost: Cost| {
        format!(
            "{:.0} dispatches, {:.1} MB, {:.0} µs",
            cost.dispatches,
            cost.bytes / 1e6,
            cost.seconds() * 1e6
        )
    };
    println!(
        "          model, H100, the codes' two sorts: lampshade 4-bit {}; lampshade 8-bit {}; \
         an 8-bit reduce-then-scan of our own {}",
        show(of_path(SortPath::Wide)),
        show(of_path(SortPath::EightBit)),
        show(own)
    );
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// The parry-based step: a `Bvh` over the swept boxes, its overlapping leaf pairs (the
/// parallel self-traversal), `cast_shapes_ball_ball` on each pair, the hits ordered by
/// (time, pair) and the earliest per body. Returns the leaf pairs and the contacts.
fn parry_step(bodies: &[MovingSphere]) -> (usize, usize) {
    use parry3d::bounding_volume::Aabb;
    use parry3d::math::{Pose, Vector};
    use parry3d::partitioning::{Bvh, BvhBuildStrategy};
    use parry3d::query::ShapeCastOptions;
    use parry3d::query::details::cast_shapes_ball_ball;
    use parry3d::shape::Ball;

    let vector = |v: sweepcast::glam::Vec3| Vector::new(v.x, v.y, v.z);
    let leaves: Vec<Aabb> = bodies
        .par_iter()
        .map(|body| {
            let end = body.center + body.displacement;
            let reach = sweepcast::glam::Vec3::splat(body.radius);
            Aabb::new(
                vector(body.center.min(end) - reach),
                vector(body.center.max(end) + reach),
            )
        })
        .collect();
    let bvh = Bvh::from_leaves(BvhBuildStrategy::Binned, &leaves);
    let pairs = bvh.traverse_bvtt_single_tree_parallel::<false>();
    let mut hits: Vec<(u32, u32, u32)> = pairs
        .par_iter()
        .filter_map(|&(i, j)| {
            let (a, b) = (&bodies[i as usize], &bodies[j as usize]);
            let hit = cast_shapes_ball_ball(
                &Pose::from_translation(vector(b.center - a.center)),
                vector(b.displacement - a.displacement),
                &Ball::new(a.radius),
                &Ball::new(b.radius),
                ShapeCastOptions::with_max_time_of_impact(1.0),
            )?;
            Some((hit.time_of_impact.to_bits(), i.min(j), i.max(j)))
        })
        .collect();
    hits.par_sort_unstable();
    let mut earliest: Vec<Option<(u32, u32)>> = vec![None; bodies.len()];
    for (index, &(_, a, b)) in hits.iter().enumerate() {
        for (body, partner) in [(a, b), (b, a)] {
            earliest[body as usize].get_or_insert((index as u32, partner));
        }
    }
    std::hint::black_box(&earliest);
    (pairs.len(), hits.len())
}
