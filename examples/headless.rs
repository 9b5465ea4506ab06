//! Headless run: generate a world, sweep it on the GPU, on the CPU in f32 (the full answer
//! and times only, each way) and with the f64 oracle, print each one's throughput and the
//! parity verdict. Beside the GPU's end-to-end figures: the kernel alone (timestamp queries,
//! where the adapter has them) and the bus's rate with the same bytes, measured in the same
//! run (`common::kernel_and_bus`), so that a GPU run shows where its time goes.
//!
//! ```text
//! cargo run --release --example headless -- [--bodies N] [--pairs N] [--seed S] [--dims 2|3]
//!                                           [--offset X] [--runs R]
//! ```
//!
//! Exits 1 on a parity failure, 2 when no GPU adapter is found, 3 on bad arguments.

mod common;

use common::{Timings, parse, time_runs};
use std::process::ExitCode;

use sweepcast::SweepOptions;
use sweepcast::gpu::SweepPipeline;
use sweepcast::low_level::SweepOutput;
use sweepcast::parity::{self, CPU_BOUND, GPU_BOUND};
use sweepcast::{cpu, reference};
use testkit::{Workload, WorkloadConfig};

struct Options {
    config: WorkloadConfig,
    runs: usize,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        config: WorkloadConfig {
            bodies: 250_000,
            pairs: 2_000_000,
            ..WorkloadConfig::default()
        },
        runs: 5,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        let c = &mut options.config;
        match flag.as_str() {
            "--bodies" => c.bodies = parse(&value()?)?,
            "--pairs" => c.pairs = parse(&value()?)?,
            "--seed" => c.seed = parse(&value()?)?,
            "--dims" => c.dimensions = parse(&value()?)?,
            "--offset" => c.offset = parse(&value()?)?,
            "--runs" => options.runs = parse::<usize>(&value()?)?.max(1),
            "--help" | "-h" => {
                return Err(
                    "usage: headless [--bodies N] [--pairs N] [--seed S] [--dims 2|3] \
                            [--offset X] [--runs R]"
                        .into(),
                );
            }
            other => return Err(format!("unknown option {other}; try --help")),
        }
    }
    if !matches!(options.config.dimensions, 2 | 3) {
        return Err("--dims must be 2 or 3".into());
    }
    if options.config.bodies < 2 {
        return Err("--bodies must be at least 2".into());
    }
    Ok(options)
}

fn report_throughput(name: &str, pairs: usize, timings: &Timings) {
    let (median, slowest, fastest) = timings.rates(pairs);
    println!(
        "{name:<28} {:>9.2} M pairs/s median ({:.2} to {:.2} over {} runs; median {:.1} ms)",
        median / 1e6,
        slowest / 1e6,
        fastest / 1e6,
        timings.0.len(),
        timings.median().as_secs_f64() * 1e3,
    );
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => return common::bad_options(&message),
    };
    let config = options.config;
    // A device with the timestamp queries the adapter offers, to time the kernel alone.
    let context = match common::bench_context("headless", false) {
        Ok((context, _)) => context,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let info = context.adapter_info();
    println!(
        "adapter: {} | backend {:?} | type {:?} | driver {} {}",
        info.name, info.backend, info.device_type, info.driver, info.driver_info
    );
    let pipeline = SweepPipeline::new(&context).unwrap();
    println!(
        "device limits: {} pairs per dispatch, {} bodies per batch",
        pipeline.max_pairs_per_dispatch(),
        pipeline.max_bodies()
    );
    println!(
        "workload: {} bodies, {} pairs, {}D, seed {}, offset {}; median of {} runs after a warm-up; {} CPU threads",
        config.bodies,
        config.pairs,
        config.dimensions,
        config.seed,
        config.offset,
        options.runs,
        rayon::current_num_threads()
    );
    let workload = Workload::random(&config);
    let (bodies, pairs) = (&workload.bodies, &workload.pairs);

    let mut gpu = Vec::new();
    let mut gpu_error = None;
    let gpu_time = time_runs(options.runs, || {
        if let Err(error) = pipeline.sweep_into(bodies, pairs, SweepOptions::DEFAULT, &mut gpu) {
            gpu_error.get_or_insert(error);
        }
    });
    if let Some(error) = gpu_error {
        eprintln!("error: the GPU sweep failed: {error}");
        return ExitCode::FAILURE;
    }
    let mut gpu_times = Vec::new();
    let gpu_times_time = time_runs(options.runs, || {
        let result =
            pipeline.times_of_impact_into(bodies, pairs, SweepOptions::DEFAULT, &mut gpu_times);
        if let Err(error) = result {
            gpu_error.get_or_insert(error);
        }
    });
    if let Some(error) = gpu_error {
        eprintln!("error: the GPU times-only sweep failed: {error}");
        return ExitCode::FAILURE;
    }
    // The kernel alone and the bus's rate with the same bytes, in the same run.
    let kernel_and_bus =
        |kind| common::kernel_and_bus::measure(&context, bodies, pairs, kind, options.runs);
    let (impacts_floor, times_floor) = match (
        kernel_and_bus(SweepOutput::Impacts),
        kernel_and_bus(SweepOutput::Times),
    ) {
        (Ok(impacts), Ok(times)) => (impacts, times),
        (Err(error), _) | (_, Err(error)) => {
            eprintln!("error: timing the kernel and the bus: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut cpu_times = Vec::new();
    let cpu_times_time = time_runs(options.runs, || {
        cpu::times_of_impact_into(bodies, pairs, SweepOptions::DEFAULT, &mut cpu_times)
            .expect("generated input is valid");
    });
    let mut cpu_f32 = Vec::new();
    let cpu_time = time_runs(options.runs, || {
        cpu::sweep_batch_into(bodies, pairs, SweepOptions::DEFAULT, &mut cpu_f32)
            .expect("generated input is valid");
    });
    let mut oracle = Vec::new();
    let oracle_time = time_runs(options.runs, || {
        oracle = reference::sweep_batch(bodies, pairs, SweepOptions::DEFAULT)
    });

    println!();
    report_throughput("GPU sweep (end to end)", pairs.len(), &gpu_time);
    report_throughput("GPU times only (end to end)", pairs.len(), &gpu_times_time);
    for (name, floor, end_to_end) in [
        ("GPU sweep", &impacts_floor, &gpu_time),
        ("GPU times only", &times_floor, &gpu_times_time),
    ] {
        println!("  {name}: {}", floor.describe(pairs.len()));
        if let Some(least) = floor.floor() {
            println!(
                "  {name}: end to end {:.2}x the kernel plus the bus",
                end_to_end.median().as_secs_f64() / least.as_secs_f64()
            );
        }
    }
    report_throughput("CPU f32 batch (all cores)", pairs.len(), &cpu_time);
    report_throughput("CPU times only (all cores)", pairs.len(), &cpu_times_time);
    report_throughput("f64 reference (all cores)", pairs.len(), &oracle_time);
    println!(
        "hits: GPU {}, CPU f32 {}, f64 reference {}",
        gpu.iter().flatten().count(),
        cpu_f32.iter().flatten().count(),
        oracle.iter().flatten().count()
    );

    println!();
    let gpu_report = parity::compare(
        bodies,
        pairs,
        SweepOptions::DEFAULT,
        &gpu,
        Some(&oracle),
        GPU_BOUND,
    );
    let cpu_report = parity::compare(
        bodies,
        pairs,
        SweepOptions::DEFAULT,
        &cpu_f32,
        Some(&oracle),
        CPU_BOUND,
    );
    let times_report = |times, bound| {
        parity::compare(
            bodies,
            pairs,
            SweepOptions::DEFAULT,
            times,
            Some(&oracle),
            bound,
        )
    };
    let gpu_times_report = times_report(&gpu_times, GPU_BOUND);
    let cpu_times_report = times_report(&cpu_times, CPU_BOUND);
    println!("parity GPU (bound {GPU_BOUND} eps): {gpu_report}");
    println!("parity GPU times (bound {GPU_BOUND} eps): {gpu_times_report}");
    println!("parity CPU f32 (bound {CPU_BOUND} eps): {cpu_report}");
    println!("parity CPU times (bound {CPU_BOUND} eps): {cpu_times_report}");
    let reports = [gpu_report, gpu_times_report, cpu_report, cpu_times_report];
    if reports.iter().all(|report| report.passed()) {
        println!("parity: PASS (0 failures beyond the documented bound)");
        ExitCode::SUCCESS
    } else {
        let failures: Vec<usize> = reports.iter().map(|report| report.failures).collect();
        println!(
            "parity: FAIL (pairs beyond the bound: GPU {}, GPU times {}, CPU {}, CPU times {})",
            failures[0], failures[1], failures[2], failures[3]
        );
        ExitCode::FAILURE
    }
}
