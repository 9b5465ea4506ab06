//! What a small batch costs: per call, for 1, 16, 256 and 4,096 pairs of a world of 100,000
//! bodies, against a `cpu::World` built once (`World::times_of_impact_into`,
//! `World::sweep_into`), through the slice-taking `cpu::times_of_impact_into` (which
//! validates and packs the whole world every call), and against a world of only the bodies
//! the pairs name ("alone": the cost of the pairs themselves). Also measures what waking
//! rayon's pool costs and the serial sweep's cost per pair, and from them the batch size
//! above which the pool pays on this machine (compare `low_level::SERIAL_PAIRS`).
//!
//! ```text
//! cargo run --release --example small_batches -- [--rounds R]
//! ```

mod common;

use std::collections::HashMap;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use common::{bad_options, parse};
use rayon::prelude::*;
use sweepcast::cpu::{self, World};
use sweepcast::low_level::SERIAL_PAIRS;
use sweepcast::{MovingSphere, SweepOptions};
use testkit::{Workload, WorkloadConfig};

/// The median over `rounds` of the mean cost of one call, in µs, over enough calls to
/// take about a millisecond.
fn per_call_us(rounds: usize, mut call: impl FnMut()) -> f64 {
    let start = Instant::now();
    call();
    let calls = (1e-3 / start.elapsed().as_secs_f64().max(1e-8)).clamp(1.0, 1e5) as usize;
    let mut costs: Vec<f64> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..calls {
                call();
            }
            start.elapsed().as_secs_f64() * 1e6 / calls as f64
        })
        .collect();
    costs.sort_by(f64::total_cmp);
    costs[costs.len() / 2]
}

/// The bodies `pairs` name, and the pairs renumbered into them.
fn alone(bodies: &[MovingSphere], pairs: &[[u32; 2]]) -> (Vec<MovingSphere>, Vec<[u32; 2]>) {
    let mut index = HashMap::new();
    let mut own = Vec::new();
    let mut renumber = |i: u32| {
        *index.entry(i).or_insert_with(|| {
            own.push(bodies[i as usize]);
            (own.len() - 1) as u32
        })
    };
    let pairs = pairs
        .iter()
        .map(|&[i, j]| [renumber(i), renumber(j)])
        .collect();
    (own, pairs)
}

fn main() -> ExitCode {
    let mut rounds = 15;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next().as_deref().map(parse)) {
            ("--rounds", Some(Ok(r))) => rounds = r,
            _ => return bad_options("usage: small_batches [--rounds R]"),
        }
    }
    let w = Workload::random(&WorkloadConfig {
        bodies: 100_000,
        pairs: 4096,
        ..WorkloadConfig::default()
    });
    let options = SweepOptions::default();
    let mut world = World::new();
    world.update(&w.bodies, options).expect("valid");
    let (mut times, mut impacts) = (Vec::new(), Vec::new());
    println!(
        "per-call cost in µs, world of {} bodies, median of {rounds} rounds",
        w.bodies.len()
    );
    println!(
        "{:>6} {:>12} {:>12} {:>10} {:>12} {:>12} {:>12}",
        "pairs", "World times", "alone times", "ratio", "World full", "alone full", "slice times"
    );
    for n in [1, 16, 256, 4096] {
        let pairs = &w.pairs[..n];
        let (own_bodies, own_pairs) = alone(&w.bodies, pairs);
        let mut own = World::new();
        own.update(&own_bodies, options).expect("valid");
        let world_times = per_call_us(rounds, || {
            world
                .times_of_impact_into(black_box(pairs), &mut times)
                .expect("valid");
        });
        let alone_times = per_call_us(rounds, || {
            own.times_of_impact_into(black_box(&own_pairs), &mut times)
                .expect("valid");
        });
        let world_full = per_call_us(rounds, || {
            world
                .sweep_into(black_box(pairs), &mut impacts)
                .expect("valid");
        });
        let alone_full = per_call_us(rounds, || {
            own.sweep_into(black_box(&own_pairs), &mut impacts)
                .expect("valid");
        });
        let slice = per_call_us(rounds, || {
            cpu::times_of_impact_into(&w.bodies, black_box(pairs), options, &mut times)
                .expect("valid");
        });
        println!(
            "{n:>6} {world_times:>12.3} {alone_times:>12.3} {:>10.2} {world_full:>12.3} {alone_full:>12.3} {slice:>12.1}",
            world_times / alone_times
        );
    }
    // Where the pool pays: serially a batch of n pairs costs n c; on the pool of p threads
    // about n c / p plus the cost P of waking it, so the pool pays above n = P p / (c (p - 1)).
    let threads = rayon::current_num_threads();
    let mut out = vec![0u32; 2 * threads];
    let pool = per_call_us(rounds, || {
        out.par_chunks_mut(2).for_each(|chunk| chunk[0] += 1);
    });
    let per_pair = per_call_us(rounds, || {
        world
            .times_of_impact_into(black_box(&w.pairs[..2048]), &mut times)
            .expect("valid");
    }) / 2048.0;
    println!(
        "\nwaking the pool of {threads} threads: {pool:.2} µs; serial sweep: {:.2} ns a pair",
        per_pair * 1e3
    );
    if threads > 1 {
        let breakeven = pool * threads as f64 / (per_pair * (threads - 1) as f64);
        println!(
            "the pool pays above about {breakeven:.0} pairs (low_level::SERIAL_PAIRS = {SERIAL_PAIRS})"
        );
    }
    ExitCode::SUCCESS
}
