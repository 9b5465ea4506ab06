//! Where the blocking GPU paths spend their host time: each stage of `SweepPipeline::sweep`,
//! `times_of_impact` (given bodies, and against bodies set once with `set_bodies`),
//! `ContactPipeline::find` and `find_earliest` (validation and packing,
//! staging writes, waits, mapping, copies out of mapped memory, decoding), timed with
//! `low_level::host_profile`, beside the time its bytes would take at this machine's memory
//! rate (a streaming copy measured in the same run, on one thread and on all).
//!
//! ```text
//! cargo run --release --example host_profile -- [--runs R] [--pairs N,N,...] [--bodies N,N,...]
//! ```
//!
//! Each figure is the median over R runs after a warm-up; a stage's "bound" is its bytes at the
//! copy rate of as many threads as it ran on, and "x" its time over that bound. `wait` holds the
//! device's own time (and, on a software adapter, the CPU's work as the device). Exits 2 when no
//! GPU adapter is found, 3 on bad arguments.

mod common;

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use common::parse;
use rayon::prelude::*;
use sweepcast::SweepOptions;
use sweepcast::gpu::{ContactPipeline, GpuContext, SweepPipeline};
use sweepcast::low_level::{HostSpan, host_profile};
use testkit::{Scene, Workload, WorkloadConfig};

struct Options {
    runs: usize,
    pairs: Vec<usize>,
    bodies: Vec<usize>,
}

fn parse_list(text: &str) -> Result<Vec<usize>, String> {
    text.split(',')
        .map(parse::<f64>)
        .map(|n| n.map(|n| n as usize))
        .collect()
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        runs: 5,
        pairs: vec![10_000, 100_000, 1_000_000, 4_000_000],
        bodies: vec![10_000, 100_000, 1_000_000],
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--runs" => options.runs = parse::<usize>(&value()?)?.max(1),
            "--pairs" => options.pairs = parse_list(&value()?)?,
            "--bodies" => options.bodies = parse_list(&value()?)?,
            "--help" | "-h" => {
                return Err(
                    "usage: host_profile [--runs R] [--pairs N,...] [--bodies N,...]".into(),
                );
            }
            other => return Err(format!("unknown option {other}; try --help")),
        }
    }
    Ok(options)
}

/// The streaming-copy rate (bytes read plus bytes written, per second) on one thread and on
/// rayon's pool: the median of `runs` copies of 256 MiB.
fn copy_rates(runs: usize) -> (f64, f64) {
    const BYTES: usize = 256 << 20;
    let source = vec![1u64; BYTES / 8];
    let mut target = vec![0u64; BYTES / 8];
    let mut median = |copy: &mut dyn FnMut(&mut [u64])| {
        copy(&mut target);
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let start = Instant::now();
                copy(&mut target);
                start.elapsed()
            })
            .collect();
        times.sort();
        2.0 * BYTES as f64 / times[times.len() / 2].as_secs_f64()
    };
    let one = median(&mut |target| target.copy_from_slice(&source));
    let chunk = BYTES / 8 / (4 * rayon::current_num_threads());
    let all = median(&mut |target| {
        target
            .par_chunks_mut(chunk)
            .zip(source.par_chunks(chunk))
            .for_each(|(target, source)| target.copy_from_slice(source));
    });
    (one, all)
}

/// One call's spans summed by stage (a chunked call repeats its stages), in first-seen order.
fn by_stage(spans: &[HostSpan]) -> Vec<(&'static str, Duration, u64, usize)> {
    let mut stages: Vec<(&'static str, Duration, u64, usize)> = Vec::new();
    for span in spans {
        match stages.iter_mut().find(|stage| stage.0 == span.stage) {
            Some(stage) => {
                stage.1 += span.elapsed;
                stage.2 += span.bytes;
            }
            None => stages.push((span.stage, span.elapsed, span.bytes, span.threads)),
        }
    }
    stages
}

/// Runs `call` once to warm up and `runs` times profiled; prints the median of each stage and
/// of the whole call.
fn profile(
    name: &str,
    runs: usize,
    rates: (f64, f64),
    mut call: impl FnMut() -> Result<(), sweepcast::Error>,
) -> Result<(), sweepcast::Error> {
    call()?;
    let mut totals = Vec::new();
    let mut stages: BTreeMap<usize, (&'static str, Vec<Duration>, u64, usize)> = BTreeMap::new();
    for _ in 0..runs {
        let start = Instant::now();
        let (result, spans) = host_profile(&mut call);
        totals.push(start.elapsed());
        result?;
        for (index, (stage, elapsed, bytes, threads)) in by_stage(&spans).into_iter().enumerate() {
            let entry = stages
                .entry(index)
                .or_insert((stage, Vec::new(), bytes, threads));
            entry.1.push(elapsed);
        }
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2].as_secs_f64() * 1e3
    };
    println!(
        "{name}: {:.3} ms a call (median of {runs})",
        median(&mut totals)
    );
    println!(
        "  {:<16} {:>9} {:>11} {:>7} {:>9} {:>9} {:>6}",
        "stage", "ms", "MB", "threads", "GB/s", "bound ms", "x"
    );
    let mut host = 0.0;
    for (stage, mut times, bytes, threads) in stages.into_values() {
        let ms = median(&mut times);
        let rate = if threads > 1 { rates.1 } else { rates.0 };
        let bound = bytes as f64 / rate * 1e3;
        if stage != "wait" {
            host += ms;
        }
        let (speed, ratio) = if bytes > 0 {
            (
                format!("{:.2}", bytes as f64 / ms / 1e6),
                format!("{:.1}", ms / bound),
            )
        } else {
            ("-".into(), "-".into())
        };
        println!(
            "  {stage:<16} {ms:>9.3} {:>11.2} {threads:>7} {speed:>9} {bound:>9.3} {ratio:>6}",
            bytes as f64 / 1e6
        );
    }
    println!("  host stages (all but wait): {host:.3} ms");
    Ok(())
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => return common::bad_options(&message),
    };
    let context = match common::gpu_context() {
        Ok(context) => context,
        Err(code) => return code,
    };
    println!(
        "CPU: {}; {} threads",
        common::machine(),
        rayon::current_num_threads()
    );
    println!("adapter: {}", context.describe());
    let rates = copy_rates(options.runs.max(3));
    println!(
        "memory (streaming copy of 256 MiB, read + write): {:.2} GB/s on one thread, {:.2} GB/s on {}",
        rates.0 / 1e9,
        rates.1 / 1e9,
        rayon::current_num_threads()
    );
    match run(&context, &options, rates) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(context: &GpuContext, options: &Options, rates: (f64, f64)) -> Result<(), sweepcast::Error> {
    let sweep = SweepPipeline::new(context)?;
    for &pairs in &options.pairs {
        let workload = Workload::random(&WorkloadConfig {
            bodies: (pairs / 8).max(2),
            pairs,
            ..WorkloadConfig::default()
        });
        let (bodies, pairs) = (&workload.bodies, &workload.pairs);
        let count = format!("{} bodies, {} pairs", bodies.len(), pairs.len());
        let mut impacts = Vec::new();
        profile(
            &format!("SweepPipeline::sweep, {count}"),
            options.runs,
            rates,
            || sweep.sweep_into(bodies, pairs, SweepOptions::DEFAULT, &mut impacts),
        )?;
        let mut times = Vec::new();
        profile(
            &format!("SweepPipeline::times_of_impact, {count}"),
            options.runs,
            rates,
            || sweep.times_of_impact_into(bodies, pairs, SweepOptions::DEFAULT, &mut times),
        )?;
        // The same pairs against bodies set once: the calls pay only for their pairs.
        sweep.set_bodies(bodies, SweepOptions::DEFAULT)?;
        profile(
            &format!("SweepPipeline::sweep_pairs_into (bodies set), {count}"),
            options.runs,
            rates,
            || sweep.sweep_pairs_into(pairs, &mut impacts),
        )?;
        profile(
            &format!("SweepPipeline::times_of_impact_pairs_into (bodies set), {count}"),
            options.runs,
            rates,
            || sweep.times_of_impact_pairs_into(pairs, &mut times),
        )?;
    }
    let step = ContactPipeline::new(context)?;
    for &n in &options.bodies {
        let (bodies, scene_options) = Scene::Uniform.bodies(n, 3, 1);
        let mut contacts = sweepcast::Contacts::default();
        profile(
            &format!("ContactPipeline::find, {n} bodies (uniform)"),
            options.runs,
            rates,
            || step.find_into(&bodies, &[], scene_options, &mut contacts),
        )?;
        let mut earliest = Vec::new();
        profile(
            &format!("ContactPipeline::find_earliest, {n} bodies (uniform)"),
            options.runs,
            rates,
            || step.find_earliest_into(&bodies, &[], scene_options, &mut earliest),
        )?;
    }
    Ok(())
}
