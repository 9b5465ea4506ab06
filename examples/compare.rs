//! sweepcast beside the methods users would otherwise pick, on the same pairs in one run:
//! throughput, collisions missed against the f64 oracle, and the largest time error.
//!
//! ```text
//! cargo run --release --example compare -- [--pairs N] [--runs R] [--seed S]
//!                                          [--bandwidth-gbs B]
//! ```
//!
//! Workloads: "lattice" (bodies on a jittered lattice, radii 0.05 to 0.5 of the spacing,
//! displacements up to 1.5 spacings, pairs between lattice neighbours) and "bullets" (fast
//! small bodies: radius 0.01 moving 50 radii per step against resting targets of radius
//! 0.01). Every CPU method runs on all cores through rayon, so ratios compare like with like.

mod common;
mod peers;

use std::process::ExitCode;

use common::{Timings, parse, time_runs};
use peers::Times;
use sweepcast::SweepOptions;
use sweepcast::gpu::SweepPipeline;
use sweepcast::low_level::SweepOutput;
use sweepcast::{Impact, cpu, reference};
use testkit::{Workload, WorkloadConfig};

/// Bytes one invocation of `shaders/sweep.wgsl` moves: two 32-byte bodies and an 8-byte pair
/// read, a 32-byte record written; the copy of the record to the readback buffer reads and
/// writes 32 more.
const BYTES_PER_PAIR: f64 = 2.0 * 32.0 + 8.0 + 32.0 + 2.0 * 32.0;
/// Arithmetic per pair on the longest path (a contact): 3 subtractions each for the relative
/// position and motion, the radius sum and square, 3 dot products (5 flops each), the cross
/// product (9), the discriminant (3), reach test (3), 2 square roots, the division and its
/// sum, the separation (6), the normal (dot, inverse square root, 3 products), the point (12).
const FLOPS_PER_PAIR: f64 = 80.0;

struct Options {
    pairs: usize,
    runs: usize,
    seed: u64,
    bandwidth_gbs: Option<f64>,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        pairs: 1_000_000,
        runs: 3,
        seed: 1,
        bandwidth_gbs: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--pairs" => options.pairs = parse(&value()?)?,
            "--runs" => options.runs = parse(&value()?)?,
            "--seed" => options.seed = parse(&value()?)?,
            "--bandwidth-gbs" => options.bandwidth_gbs = Some(parse(&value()?)?),
            other => return Err(format!("unknown option {other}; see the file's header")),
        }
    }
    Ok(options)
}

fn times(impacts: &[Option<Impact>]) -> Times {
    impacts
        .iter()
        .map(|i| i.map(|i| f64::from(i.time_of_impact)))
        .collect()
}

/// One row of the table.
struct Row {
    method: String,
    timings: Option<Timings>,
    answers: Times,
}

fn print_table(workload: &Workload, rows: &[Row], oracle: &Times) {
    let pairs = workload.pairs.len();
    let baseline = rows
        .iter()
        .find(|r| r.method.starts_with("sweepcast CPU"))
        .and_then(|r| r.timings.as_ref())
        .map(|t| t.rates(pairs).0);
    println!(
        "| method | M pairs/s, median (slowest to fastest) | ratio to sweepcast CPU | hits | missed vs f64 | extra vs f64 | max abs(t - t_f64) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for row in rows {
        let (mut missed, mut extra, mut hits, mut worst) = (0, 0, 0, 0.0f64);
        for (answer, exact) in row.answers.iter().zip(oracle) {
            hits += usize::from(answer.is_some());
            match (answer, exact) {
                (None, Some(_)) => missed += 1,
                (Some(_), None) => extra += 1,
                (Some(t), Some(e)) => worst = worst.max((t - e).abs()),
                (None, None) => {}
            }
        }
        let (speed, ratio) = match &row.timings {
            Some(t) => {
                let (median, slowest, fastest) = t.rates(pairs);
                (
                    format!(
                        "{:.2} ({:.2} to {:.2})",
                        median / 1e6,
                        slowest / 1e6,
                        fastest / 1e6
                    ),
                    baseline.map_or("-".into(), |b| format!("{:.2}", median / b)),
                )
            }
            None => ("-".into(), "-".into()),
        };
        println!(
            "| {} | {speed} | {ratio} | {hits} | {missed} | {extra} | {worst:.2e} |",
            row.method
        );
    }
}

fn run_workload(
    name: &str,
    workload: &Workload,
    runs: usize,
    pipeline: Option<&SweepPipeline>,
) -> Option<f64> {
    let (bodies, pairs) = (&workload.bodies[..], &workload.pairs[..]);
    println!(
        "\n### {name}: {} bodies, {} pairs\n",
        bodies.len(),
        pairs.len()
    );
    let mut rows = Vec::new();
    let mut gpu_rate = None;
    if let Some(pipeline) = pipeline {
        let mut impacts = Vec::new();
        let timings = time_runs(runs, || {
            pipeline
                .sweep_into(bodies, pairs, SweepOptions::DEFAULT, &mut impacts)
                .expect("valid workload");
        });
        gpu_rate = Some(timings.rates(pairs.len()).0);
        rows.push(Row {
            method: "sweepcast GPU (end to end)".into(),
            timings: Some(timings),
            answers: times(&impacts),
        });
    }
    let mut impacts = Vec::new();
    let timings = time_runs(runs, || {
        cpu::sweep_batch_into(bodies, pairs, SweepOptions::DEFAULT, &mut impacts)
            .expect("valid workload");
    });
    rows.push(Row {
        method: "sweepcast CPU f32 batch".into(),
        timings: Some(timings),
        answers: times(&impacts),
    });

    let mut fast = Vec::new();
    let timings = time_runs(runs, || {
        cpu::times_of_impact_into(bodies, pairs, SweepOptions::DEFAULT, &mut fast)
            .expect("valid workload");
    });
    rows.push(Row {
        method: "sweepcast CPU f32 times only (lanes)".into(),
        timings: Some(timings),
        answers: fast
            .iter()
            .map(|t| t.get().map(|(t, _)| f64::from(t)))
            .collect(),
    });

    let mut oracle = Vec::new();
    let timings = time_runs(runs, || {
        oracle = reference::sweep_batch(bodies, pairs, SweepOptions::DEFAULT)
    });
    let oracle: Times = oracle.iter().map(|r| r.map(|r| r.time_of_impact)).collect();
    rows.push(Row {
        method: "sweepcast f64 reference".into(),
        timings: Some(timings),
        answers: oracle.clone(),
    });

    type Method = fn(&[sweepcast::MovingSphere], &[[u32; 2]]) -> Times;
    let peers: [(&str, Method); 6] = [
        ("parry3d f32 cast_shapes", peers::parry_cast_shapes),
        ("parry3d f32 cast_shapes_ball_ball", peers::parry_ball_ball),
        ("parry3d-f64 cast_shapes", peers::parry_f64_cast_shapes),
        ("time-sliced k = 150", |b, p| peers::time_sliced(b, p, 150)),
        ("time-sliced k = 4", |b, p| peers::time_sliced(b, p, 4)),
        ("time-sliced k = 1 (discrete)", |b, p| {
            peers::time_sliced(b, p, 1)
        }),
    ];
    for (method, run) in peers {
        let mut answers = Vec::new();
        let timings = time_runs(runs, || answers = run(bodies, pairs));
        rows.push(Row {
            method: method.into(),
            timings: Some(timings),
            answers,
        });
    }
    print_table(workload, &rows, &oracle);
    gpu_rate
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => return common::bad_options(&message),
    };
    println!(
        "# sweepcast compare: {} CPU threads, median of {} runs after a warm-up, seed {}",
        rayon::current_num_threads(),
        options.runs,
        options.seed
    );
    // A device with the timestamp queries the adapter offers, to time the kernel alone.
    let context = common::bench_context("compare", false).map(|(context, _)| context);
    let pipeline = match &context {
        Ok(context) => {
            println!("adapter: {}", context.describe());
            Some(SweepPipeline::new(context).unwrap())
        }
        Err(error) => {
            println!("no GPU row: {error}");
            None
        }
    };
    let lattice = Workload::random(&WorkloadConfig {
        bodies: options.pairs / 8,
        pairs: options.pairs,
        seed: options.seed,
        ..WorkloadConfig::default()
    });
    let gpu_rate = run_workload("lattice", &lattice, options.runs, pipeline.as_ref());
    // Where the GPU row's time goes: the kernel alone and the bus's rate, same bytes.
    if let Ok(context) = &context {
        for kind in [SweepOutput::Impacts, SweepOutput::Times] {
            let measured = common::kernel_and_bus::measure(
                context,
                &lattice.bodies,
                &lattice.pairs,
                kind,
                options.runs,
            );
            match measured {
                Ok(measured) => {
                    println!("GPU {kind:?}: {}", measured.describe(lattice.pairs.len()))
                }
                Err(error) => println!("GPU {kind:?}: not measured: {error}"),
            }
        }
    }
    let bullets = Workload::bullets(options.pairs, options.seed);
    run_workload(
        "bullets (fast small bodies)",
        &bullets,
        options.runs,
        pipeline.as_ref(),
    );

    println!("\n### The GPU kernel's limit\n");
    println!(
        "per pair: {BYTES_PER_PAIR} bytes moved (two 32 B bodies and an 8 B pair read, a 32 B record written and copied back), about {FLOPS_PER_PAIR} flops: {:.2} flop/byte, so memory bandwidth bounds it",
        FLOPS_PER_PAIR / BYTES_PER_PAIR
    );
    let adapter = context.as_ref().ok().map(|c| c.adapter_info().clone());
    let known = adapter.as_ref().and_then(|info| {
        // Peak memory bandwidths from the vendors' data sheets (SXM parts).
        [("H200", 4800.0), ("H100", 3350.0), ("A100", 2039.0)]
            .into_iter()
            .find(|(name, _)| info.name.contains(name))
            .map(|(_, gbs)| gbs)
    });
    match (options.bandwidth_gbs.or(known), adapter, gpu_rate) {
        (Some(gbs), Some(info), Some(rate)) if info.device_type != wgpu::DeviceType::Cpu => {
            let bound = gbs * 1e9 / BYTES_PER_PAIR;
            println!(
                "{}: {gbs} GB/s bounds the kernel at {:.0} M pairs/s; measured end to end (host validation, upload and decoding included) {:.0} M pairs/s = {:.1}% of it",
                info.name,
                bound / 1e6,
                rate / 1e6,
                100.0 * rate / bound
            );
        }
        (_, Some(info), _) if info.device_type == wgpu::DeviceType::Cpu => println!(
            "{} is a software adapter on the CPU: a GPU memory bound means nothing here",
            info.name
        ),
        _ => println!("no GPU bandwidth known: pass --bandwidth-gbs to get the bound"),
    }
    ExitCode::SUCCESS
}
