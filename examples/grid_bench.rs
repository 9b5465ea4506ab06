//! The grid step (`GridStage`: each body's earliest contact by the grid, issue 32) beside
//! the resident step (`StepStage` with earliest contacts only), side by side on the same
//! device and bodies, alternating round by round; and the two constants a cost model of a
//! GPU needs: the device time of a chain of empty dispatches, and of lampshade's sort of 10⁶
//! key-value records. The code calls the resident step "the tree", as it was when this
//! bench was written: since d691a6c `StepStage` runs the grid too, so the two columns now
//! differ only by the step's own passes around the grid. The tree against the grid is
//! measured by `step_bench` at a commit before d691a6c beside one after it (BENCHMARKS.md,
//! "Issue 32 (second part)").
//!
//! ```text
//! cargo run --release --example grid_bench -- [--bodies N,N,...] [--scene S|all] [--dims 2|3]
//!     [--rounds R] [--seed K] [--no-subgroups] [--no-tree]
//! ```
//!
//! The device is the adapter `GpuContext::new` picks (`WGPU_BACKEND`), opened with the
//! timestamp queries (and, unless `--no-subgroups`, the subgroups) it offers, as
//! `step_bench` opens it. Per scene and N it prints: the median time from the submission to
//! the counts mapped of each step (nothing else read back), their device time from
//! timestamps (the tree's per stage as `low_level::record_step_observed` reports them, the grid's
//! per stage by `GridStage::record_timed`), the grid's levels, device memory a body, and how
//! many bodies' earliest records differ between the two steps (on lavapipe none may: the
//! bench exits non-zero).

mod common;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use common::{Timestamps, bad_options, machine, parse, read_mapped as read};
use sweepcast::gpu::{GpuContext, StepCapacities};
use sweepcast::low_level::grid::{GridCounts, GridParams};
use sweepcast::low_level::layout::EarliestRecord;
use sweepcast::low_level::layout::{BodyRecord, StepCounts};
use sweepcast::low_level::record_step_observed;
use sweepcast::low_level::{GridBuffers, GridStage, StepBuffers, StepStage};
use sweepcast::{MovingSphere, SweepOptions, wgpu};
use testkit::Scene;

/// Timestamps a profiled step writes at most.
const STAMPS: u32 = 32;

struct Gpu {
    context: GpuContext,
    tree: StepStage,
    grid: GridStage,
    stamps: Option<Timestamps>,
}

impl Gpu {
    fn create(subgroups: bool) -> Result<Self, String> {
        let text = |error: sweepcast::Error| error.to_string();
        let (context, features) = common::bench_context("grid_bench", subgroups)?;
        let info = context.adapter_info().clone();
        let tree = StepStage::for_adapter(context.device(), &info).map_err(text)?;
        let grid = GridStage::for_adapter(context.device(), &info).map_err(text)?;
        let stamps = Timestamps::new(&context, STAMPS);
        println!(
            "GPU: {}; features asked for and offered: {features:?}",
            context.describe()
        );
        Ok(Self {
            context,
            tree,
            grid,
            stamps,
        })
    }

    /// Records `body` into one encoder between timestamps (one after each call of its
    /// `stamp`), submits it and returns the intervals, named; `None` without timestamps.
    fn timed(
        &self,
        body: impl FnOnce(
            &mut wgpu::CommandEncoder,
            &mut dyn FnMut(&mut wgpu::CommandEncoder, &'static str),
        ),
    ) -> Result<Option<Vec<(&'static str, Duration)>>, String> {
        let Some(stamps) = &self.stamps else {
            return Ok(None);
        };
        let (device, queue) = (self.context.device(), self.context.queue());
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.write_timestamp(&stamps.queries, 0);
        let mut names = Vec::new();
        body(&mut encoder, &mut |encoder, name| {
            names.push(name);
            encoder.write_timestamp(&stamps.queries, names.len() as u32);
        });
        let written = names.len() as u32 + 1;
        encoder.resolve_query_set(&stamps.queries, 0..written, &stamps.resolve, 0);
        let bytes = 8 * u64::from(written);
        encoder.copy_buffer_to_buffer(&stamps.resolve, 0, &stamps.readback, 0, bytes);
        queue.submit([encoder.finish()]);
        let ticks: Vec<u64> = read(device, &stamps.readback, |view| {
            bytemuck::pod_collect_to_vec(&view[..bytes as usize])
        })?;
        Ok(Some(
            names
                .iter()
                .zip(ticks.windows(2))
                .map(|(&name, pair)| {
                    let ns = pair[1].saturating_sub(pair[0]) as f64 * stamps.period_ns;
                    (name, Duration::from_secs_f64(ns / 1e9))
                })
                .collect(),
        ))
    }

    /// The device time of `count` empty dispatches of one workgroup, each its own compute
    /// pass (as every stage records them), and of lampshade's counted sort of 10⁶ records
    /// with 32- and 20-bit keys; medians of 5.
    fn constants(&self) -> Result<(), String> {
        let device = self.context.device();
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("empty"),
            source: wgpu::ShaderSource::Wgsl("@compute @workgroup_size(64) fn main() {}".into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("empty"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let count = 200;
        let mut chains = Vec::new();
        for _ in 0..6 {
            let times = self.timed(|encoder, stamp| {
                for _ in 0..count {
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    pass.set_pipeline(&pipeline);
                    pass.dispatch_workgroups(1, 1, 1);
                }
                stamp(encoder, "chain");
            })?;
            let Some(times) = times else {
                println!("constants: no timestamp queries inside encoders on this device");
                return Ok(());
            };
            chains.push(times[0].1);
        }
        chains.remove(0);
        let chain = median(&mut chains);
        println!(
            "constants: {count} empty dispatches (one pass each) {:.1} µs: {:.2} µs a dispatch \
             (median of 5)",
            chain.as_secs_f64() * 1e6,
            chain.as_secs_f64() * 1e6 / f64::from(count)
        );
        let n = 1_000_000u32;
        use wgpu::util::DeviceExt;
        let keys: Vec<[u32; 2]> = (0..n).map(|i| [i.wrapping_mul(0x9e37_79b1), i]).collect();
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let input = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("sort in"),
            contents: bytemuck::cast_slice(&keys),
            usage,
        });
        let output = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("sort out"),
            contents: bytemuck::cast_slice(&keys),
            usage,
        });
        let count_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("sort count"),
            contents: bytemuck::bytes_of(&n),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let mut sorter = lampshade::KeyValueSorter::new_for_adapter(
            device,
            self.context.queue(),
            self.context.adapter_info(),
        );
        for key_bits in [32, 20] {
            let mut sorts = Vec::new();
            for _ in 0..6 {
                let mut failed = None;
                let times = self.timed(|encoder, stamp| {
                    if let Err(error) = sorter.record_sort_counted_with_key_bits(
                        encoder,
                        &input,
                        &output,
                        &count_buffer,
                        n,
                        key_bits,
                    ) {
                        failed = Some(error.to_string());
                    }
                    stamp(encoder, "sort");
                })?;
                if let Some(error) = failed {
                    return Err(error);
                }
                sorts.push(times.expect("timestamps, as above")[0].1);
            }
            sorts.remove(0);
            println!(
                "constants: lampshade's counted sort of 10⁶ records, {key_bits}-bit keys: {:.1} µs \
                 (median of 5)",
                median(&mut sorts).as_secs_f64() * 1e6
            );
        }
        Ok(())
    }
}

/// One scene and N on the device: the tree's buffers (settled: grown until its step is
/// valid), the grid's, and a readback for either's counts and earliest records.
struct Scenario {
    tree: StepBuffers,
    grid: GridBuffers,
    readback: wgpu::Buffer,
    n: usize,
    bodies_bytes: u64,
}

const COUNTS_BYTES: u64 = 48;

impl Scenario {
    fn new(gpu: &Gpu, bodies: &[MovingSphere], options: SweepOptions) -> Result<Self, String> {
        let (device, queue) = (gpu.context.device(), gpu.context.queue());
        let records: Vec<BodyRecord> = bodies.iter().map(|&body| body.into()).collect();
        use wgpu::util::DeviceExt;
        let body_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("bench bodies"),
            contents: bytemuck::cast_slice(&records),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let n = bodies.len();
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bench readback"),
            size: COUNTS_BYTES + (size_of::<EarliestRecord>() * n) as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let text = |error: sweepcast::Error| error.to_string();
        let tree = gpu
            .tree
            .create_buffers(
                device,
                queue,
                &body_buffer,
                options,
                StepCapacities::default(),
                false,
            )
            .map_err(text)?;
        let grid = gpu
            .grid
            .create_buffers(device, queue, &body_buffer, options)
            .map_err(text)?;
        let mut scenario = Self {
            tree,
            grid,
            readback,
            n,
            bodies_bytes: body_buffer.size(),
        };
        loop {
            let (_, counts) = scenario.tree_step(gpu)?;
            if counts.is_valid() {
                break;
            }
            gpu.tree
                .grow(device, queue, &mut scenario.tree, &counts)
                .map_err(text)?;
        }
        Ok(scenario)
    }

    /// One step of the tree: the time from the submission to its counts mapped, and the
    /// counts.
    fn tree_step(&mut self, gpu: &Gpu) -> Result<(Duration, StepCounts), String> {
        let (device, queue) = (gpu.context.device(), gpu.context.queue());
        let mut encoder = device.create_command_encoder(&Default::default());
        gpu.tree
            .record(&mut encoder, &mut self.tree, None)
            .map_err(|error| error.to_string())?;
        encoder.copy_buffer_to_buffer(self.tree.counts(), 0, &self.readback, 0, COUNTS_BYTES);
        let commands = encoder.finish();
        let start = Instant::now();
        queue.submit([commands]);
        let counts = read(device, &self.readback, |view| {
            bytemuck::pod_read_unaligned::<StepCounts>(&view[..COUNTS_BYTES as usize])
        })?;
        Ok((start.elapsed(), counts))
    }

    /// One step of the grid, as [`Scenario::tree_step`].
    fn grid_step(&mut self, gpu: &Gpu) -> Result<(Duration, GridCounts), String> {
        let (device, queue) = (gpu.context.device(), gpu.context.queue());
        let mut encoder = device.create_command_encoder(&Default::default());
        gpu.grid
            .record(&mut encoder, &mut self.grid)
            .map_err(|error| error.to_string())?;
        let size = size_of::<GridCounts>() as u64;
        encoder.copy_buffer_to_buffer(self.grid.counts(), 0, &self.readback, 0, size);
        let commands = encoder.finish();
        let start = Instant::now();
        queue.submit([commands]);
        let counts = read(device, &self.readback, |view| {
            bytemuck::pod_read_unaligned::<GridCounts>(&view[..size as usize])
        })?;
        Ok((start.elapsed(), counts))
    }

    /// The earliest records `buffer` holds after the last step.
    fn earliest(&self, gpu: &Gpu, buffer: &wgpu::Buffer) -> Result<Vec<EarliestRecord>, String> {
        let (device, queue) = (gpu.context.device(), gpu.context.queue());
        let bytes = (size_of::<EarliestRecord>() * self.n) as u64;
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(buffer, 0, &self.readback, COUNTS_BYTES, bytes);
        queue.submit([encoder.finish()]);
        read(device, &self.readback, |view| {
            bytemuck::pod_collect_to_vec(
                &view[COUNTS_BYTES as usize..(COUNTS_BYTES + bytes) as usize],
            )
        })
    }
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// The median of each named interval over the runs, in the first run's order, and their sum.
fn stage_medians(runs: &[Vec<(&'static str, Duration)>]) -> (String, Duration) {
    let Some(first) = runs.first() else {
        return (String::new(), Duration::ZERO);
    };
    let mut total = Duration::ZERO;
    let parts: Vec<String> = first
        .iter()
        .enumerate()
        .map(|(k, (name, _))| {
            let mut times: Vec<Duration> = runs
                .iter()
                .filter_map(|run| run.get(k))
                .map(|s| s.1)
                .collect();
            let m = median(&mut times);
            total += m;
            format!("{name} {:.3}", ms(m))
        })
        .collect();
    (parts.join(", "), total)
}

#[allow(clippy::too_many_lines)]
fn main() -> ExitCode {
    let mut sizes = vec![10_000usize, 100_000, 1_000_000];
    let mut scenes = vec![Scene::Uniform];
    let mut dimensions = 3;
    let mut rounds = 5;
    let mut seed = 1;
    let mut subgroups = true;
    let mut with_tree = true;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--no-subgroups" => {
                subgroups = false;
                continue;
            }
            "--no-tree" => {
                with_tree = false;
                continue;
            }
            _ => {}
        }
        let value = args.next().unwrap_or_default();
        let parsed = match flag.as_str() {
            "--bodies" => value
                .split(',')
                .map(parse)
                .collect::<Result<Vec<usize>, _>>()
                .map(|s| sizes = s),
            "--scene" => match value.as_str() {
                "uniform" => Ok(vec![Scene::Uniform]),
                "clustered" => Ok(vec![Scene::Clustered]),
                "radii100" => Ok(vec![Scene::Radii100]),
                "fast" => Ok(vec![Scene::Fast]),
                "periodic" => Ok(vec![Scene::Periodic]),
                "all" => Ok(Scene::ALL.to_vec()),
                _ => Err(format!("unknown scene {value}")),
            }
            .map(|s| scenes = s),
            "--dims" if value == "2" || value == "3" => parse(&value).map(|d| dimensions = d),
            "--rounds" => parse(&value).map(|r: usize| rounds = r.max(1)),
            "--seed" => parse(&value).map(|s| seed = s),
            _ => Err(format!("bad option {flag}; see the file's header")),
        };
        if let Err(message) = parsed {
            return bad_options(&message);
        }
    }
    println!("{}", machine());
    let gpu = match Gpu::create(subgroups) {
        Ok(gpu) => gpu,
        Err(error) => {
            eprintln!("no GPU: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(error) = gpu.constants() {
        eprintln!("constants: {error}");
        return ExitCode::FAILURE;
    }
    let lavapipe = {
        let info = gpu.context.adapter_info();
        info.backend == wgpu::Backend::Vulkan && info.device_type == wgpu::DeviceType::Cpu
    };
    let mut failed = false;
    for &scene in &scenes {
        for &n in &sizes {
            let (bodies, options) = scene.bodies(n, dimensions, seed);
            let mut scenario = match Scenario::new(&gpu, &bodies, options) {
                Ok(scenario) => scenario,
                Err(error) => {
                    println!("{scene:?} {dimensions}D N = {n}: {error}");
                    continue;
                }
            };
            let rounds = rounds * (100_000 / n.max(1)).clamp(1, 10);
            let (mut tree_times, mut grid_times) = (Vec::new(), Vec::new());
            let (mut tree_stages, mut grid_stages) = (Vec::new(), Vec::new());
            let mut grid_counts = GridCounts::default();
            for round in 0..=rounds {
                let tree = if with_tree {
                    Some(scenario.tree_step(&gpu))
                } else {
                    None
                };
                let grid = scenario.grid_step(&gpu);
                let (grid_time, counts) = match grid {
                    Ok(result) => result,
                    Err(error) => {
                        eprintln!("grid step: {error}");
                        return ExitCode::FAILURE;
                    }
                };
                grid_counts = counts;
                let tree_profile = if with_tree {
                    gpu.timed(|encoder, stamp| {
                        let _ = record_step_observed(
                            &gpu.tree,
                            encoder,
                            &mut scenario.tree,
                            None,
                            &mut |encoder, stage| {
                                stamp(encoder, stage);
                                Ok(())
                            },
                        );
                    })
                } else {
                    Ok(None)
                };
                let grid_profile = gpu.timed(|encoder, stamp| {
                    let _ = gpu.grid.record_timed(
                        encoder,
                        &mut scenario.grid,
                        &mut |encoder, stage| {
                            stamp(encoder, stage);
                            Ok(())
                        },
                    );
                });
                if round == 0 {
                    continue;
                }
                if let Some(Ok((time, _))) = tree {
                    tree_times.push(time);
                }
                grid_times.push(grid_time);
                if let Ok(Some(profile)) = tree_profile {
                    tree_stages.push(profile);
                }
                if let Ok(Some(profile)) = grid_profile {
                    grid_stages.push(profile);
                }
            }
            let grid_median = median(&mut grid_times);
            let (grid_stage_text, grid_device) = stage_medians(&grid_stages);
            let grid_params: GridParams = {
                let (device, queue) = (gpu.context.device(), gpu.context.queue());
                let size = size_of::<GridParams>() as u64;
                let mut encoder = device.create_command_encoder(&Default::default());
                encoder.copy_buffer_to_buffer(
                    scenario.grid.grid_params(),
                    0,
                    &scenario.readback,
                    0,
                    size,
                );
                queue.submit([encoder.finish()]);
                match read(device, &scenario.readback, |view| {
                    bytemuck::pod_read_unaligned::<GridParams>(&view[..size as usize])
                }) {
                    Ok(grid) => grid,
                    Err(error) => {
                        eprintln!("{error}");
                        return ExitCode::FAILURE;
                    }
                }
            };
            let levels: Vec<String> = (0..grid_params.level_count as usize)
                .map(|k| {
                    let level = grid_params.levels[k];
                    format!(
                        "{:.3} ×{} searches {:b}",
                        level.size, level.population, level.searches
                    )
                })
                .collect();
            println!(
                "{scene:?} {dimensions}D N = {n}: grid {:.3} ms (submission to counts mapped, median \
                 of {rounds}), device {:.3} ms ({grid_stage_text}); valid {}, levels [{}]; \
                 {:.0} B a body (its buffers and the bodies, not lampshade's workspace)",
                ms(grid_median),
                ms(grid_device),
                grid_counts.valid,
                levels.join("; "),
                (scenario.grid.device_memory_bytes() + scenario.bodies_bytes) as f64 / n as f64,
            );
            if with_tree {
                let tree_median = median(&mut tree_times);
                let (tree_stage_text, tree_device) = stage_medians(&tree_stages);
                println!(
                    "          tree {:.3} ms, device {:.3} ms ({tree_stage_text}); {:.0} B a body; \
                     tree / grid: {:.2}x wall, {:.2}x device",
                    ms(tree_median),
                    ms(tree_device),
                    (scenario.tree.device_memory_bytes() + scenario.bodies_bytes) as f64 / n as f64,
                    tree_median.as_secs_f64() / grid_median.as_secs_f64(),
                    tree_device.as_secs_f64() / grid_device.as_secs_f64().max(1e-12),
                );
                let trees = scenario.earliest(&gpu, scenario.tree.earliest());
                let grids = scenario.earliest(&gpu, scenario.grid.earliest());
                match (trees, grids) {
                    (Ok(trees), Ok(grids)) => {
                        let differ = trees.iter().zip(&grids).filter(|(a, b)| a != b).count();
                        println!(
                            "          earliest records that differ between the two steps: {differ} of {n}"
                        );
                        if differ > 0 && lavapipe {
                            failed = true;
                        }
                    }
                    (Err(error), _) | (_, Err(error)) => {
                        eprintln!("{error}");
                        return ExitCode::FAILURE;
                    }
                }
            }
        }
    }
    if failed {
        eprintln!("!!!!!!!! the steps differ on lavapipe, where they must be equal to the bit");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
