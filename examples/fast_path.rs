//! The CPU fast paths (`cpu::times_of_impact_into`, and `cpu::sweep_batch_into` for the full
//! answer, beside the twin called pair by pair) against parry3d's ball-specific cast
//! (`cast_shapes_ball_ball`) on one core, pair for pair, each writing one time per pair into
//! a buffer kept between runs, alternating so that both see the same machine load.
//!
//! ```text
//! cargo run --release --example fast_path -- [--rounds R]
//!     [--only sweepcast|world|full|world-full|twin|parry|limits]
//!     [--workload lattice|bullets|independent]
//! ```
//!
//! Methods: `sweepcast` is the slice call `cpu::times_of_impact_into`, which validates and
//! packs the bodies every call; `world` is `World::times_of_impact_into` against a world
//! updated once before the rounds (the per-batch cost a step pays after its one update);
//! `full` and `world-full` are the same for the full answer (`cpu::sweep_batch_into`,
//! `World::sweep_into`).
//!
//! Limits, measured in the same rounds on the same core: **memory**, a streaming pass over
//! the bytes the world path moves (the world's packed bodies read once, 8 bytes of pair read
//! and 4 bytes of time written a pair: the same sizes, so the same level of the memory
//! hierarchy), as pairs a second; **arithmetic**, the world path on a world of 64 bodies
//! (L1-resident) with the same number of pairs. Each path is printed as a fraction of the
//! tighter of the two.
//!
//! Workloads: the lattice of `cargo bench` (25,000 bodies, 200,000 neighbour pairs, seed 1)
//! and 100,000 bullets (seed 1; two bodies a pair, so packing and validating them counts),
//! whose 7.6 MB a world path moves stay in the CPU's caches; and 1,000,000 independent pairs
//! (bullets, seed 2: 2,000,000 bodies, 76 MB a world path moves), which must come from main
//! memory.
//! Prints, per workload, each method's median M pairs/s over the rounds with the slowest and
//! fastest, and the median of the per-round ratios. With `--only` and `--workload`, runs just
//! one method on one workload, for counting instructions: `valgrind --tool=callgrind
//! target/release/examples/fast_path --rounds 5 --only parry --workload lattice` (the
//! workloads' generation and each round's warm-up run are counted too: subtract a run with
//! `--rounds 0`, and divide by 2 × rounds × pairs).

mod common;
mod peers;

use std::process::ExitCode;

use common::{parse, time_runs};
use sweepcast::SweepOptions;
use sweepcast::cpu::{self, World};
use sweepcast::low_level::layout::BodyRecord;
use testkit::Workload;

fn main() -> ExitCode {
    let mut rounds = 15;
    let mut only = None;
    let mut workload_name = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next();
        let parsed = match (flag.as_str(), value) {
            ("--rounds", Some(v)) => parse(&v).map(|r| rounds = r),
            ("--only", Some(v))
                if [
                    "sweepcast",
                    "world",
                    "full",
                    "world-full",
                    "twin",
                    "parry",
                    "limits",
                ]
                .contains(&v.as_str()) =>
            {
                only = Some(v);
                Ok(())
            }
            ("--workload", Some(v))
                if ["lattice", "bullets", "independent"].contains(&v.as_str()) =>
            {
                workload_name = Some(v);
                Ok(())
            }
            _ => Err(format!("bad option {flag}; see the file's header")),
        };
        if let Err(message) = parsed {
            return common::bad_options(&message);
        }
    }
    let (workloads, single) = peers::fast_path_workloads();
    println!("{}", common::machine());
    let runs = |name: &str| only.as_deref().is_none_or(|only| only == name);
    let chosen = |name: &str| workload_name.as_deref().is_none_or(|chosen| chosen == name);
    let independent = chosen("independent").then(|| Workload::bullets(1_000_000, 2));
    let workloads = workloads
        .iter()
        .map(|(name, workload)| (*name, workload))
        .chain(
            independent
                .as_ref()
                .map(|workload| ("independent", workload)),
        );
    for (name, workload) in workloads.filter(|(name, _)| chosen(name)) {
        let (bodies, pairs) = (&workload.bodies[..], &workload.pairs[..]);
        let mut times = Vec::with_capacity(pairs.len());
        let mut parry_times = Vec::with_capacity(pairs.len());
        let mut impacts = Vec::with_capacity(pairs.len());
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        let mut full = Vec::new();
        let mut twin = Vec::new();
        let mut world_rates = Vec::new();
        let mut world_full = Vec::new();
        let (mut memory, mut arithmetic) = (Vec::new(), Vec::new());
        let mut world = World::new();
        world
            .update(bodies, SweepOptions::DEFAULT)
            .expect("valid input");
        // The arithmetic limit's world: 64 bodies, the same number of pairs among them.
        let mut small = World::new();
        small
            .update(&bodies[..64], SweepOptions::DEFAULT)
            .expect("valid input");
        let small_pairs: Vec<[u32; 2]> = (0..pairs.len() as u32)
            .map(|k| [k % 64, (k * 7 + 1) % 64])
            .collect();
        let mut stream_out = vec![0u32; pairs.len()];
        let bytes_per_pair = (size_of_val(world.bodies())
            + size_of_val(pairs)
            + size_of_val(stream_out.as_slice())) as f64
            / pairs.len() as f64;
        // M pairs/s of one run of `work` after a warm-up run.
        let rate = |work: &mut dyn FnMut()| time_runs(1, work).rates(pairs.len()).0 / 1e6;
        for _ in 0..rounds {
            if runs("world") {
                world_rates.push(rate(&mut || {
                    single
                        .install(|| world.times_of_impact_into(pairs, &mut times))
                        .expect("valid pairs");
                }));
            }
            if runs("world-full") {
                world_full.push(rate(&mut || {
                    single
                        .install(|| world.sweep_into(pairs, &mut impacts))
                        .expect("valid pairs");
                }));
            }
            if runs("limits") {
                memory.push(rate(&mut || stream(world.bodies(), pairs, &mut stream_out)));
                let mut small_times = Vec::with_capacity(pairs.len());
                arithmetic.push(rate(&mut || {
                    single
                        .install(|| small.times_of_impact_into(&small_pairs, &mut small_times))
                        .expect("valid pairs");
                }));
            }
            if runs("sweepcast") {
                ours.push(rate(&mut || {
                    single
                        .install(|| {
                            let options = SweepOptions::DEFAULT;
                            cpu::times_of_impact_into(bodies, pairs, options, &mut times)
                        })
                        .expect("valid input");
                }));
            }
            if runs("full") {
                full.push(rate(&mut || {
                    single
                        .install(|| {
                            let options = SweepOptions::DEFAULT;
                            cpu::sweep_batch_into(bodies, pairs, options, &mut impacts)
                        })
                        .expect("valid input");
                }));
            }
            if runs("twin") {
                twin.push(rate(&mut || {
                    impacts.clear();
                    impacts.extend(pairs.iter().map(|&[i, j]| {
                        let (a, b) = (&bodies[i as usize], &bodies[j as usize]);
                        cpu::sweep_sphere_sphere(a, b, SweepOptions::DEFAULT)
                    }));
                }));
            }
            if runs("parry") {
                theirs.push(rate(&mut || {
                    parry_times.clear();
                    let time = |pair| peers::parry_ball_ball_time(bodies, pair);
                    parry_times.extend(pairs.iter().map(time));
                }));
            }
        }
        let hits = times.iter().filter(|t| t.get().is_some()).count();
        let parry_hits = parry_times.iter().flatten().count();
        println!(
            "{name}: {} pairs, hits {hits} (parry {parry_hits})",
            pairs.len()
        );
        let limit = match (summary(&memory), summary(&arithmetic)) {
            (Some((memory, ..)), Some((arithmetic, ..))) => {
                let seconds = pairs.len() as f64 / (memory * 1e6);
                println!(
                    "  limits: memory {memory:.1} M pairs/s ({bytes_per_pair:.1} B a pair at {:.1} GB/s), arithmetic {arithmetic:.1} M pairs/s (64-body world); tighter: {}",
                    bytes_per_pair * pairs.len() as f64 / seconds / 1e9,
                    if memory < arithmetic {
                        "memory"
                    } else {
                        "arithmetic"
                    }
                );
                Some(memory.min(arithmetic))
            }
            _ => None,
        };
        for (method, rates) in [
            ("sweepcast times only", &ours),
            ("world times only", &world_rates),
            ("sweepcast full answer", &full),
            ("world full answer", &world_full),
            ("twin pair by pair", &twin),
            ("parry3d ball_ball", &theirs),
        ] {
            if let Some((median, low, high)) = summary(rates) {
                let fraction = limit
                    .map(|limit| format!(", {:.2} of the tighter limit", median / limit))
                    .unwrap_or_default();
                println!("  {method:22} {median:7.1} M pairs/s ({low:.1}-{high:.1}){fraction}");
            }
            let ratios: Vec<f64> = rates.iter().zip(&theirs).map(|(o, t)| o / t).collect();
            if let Some((median, low, high)) = summary(&ratios).filter(|_| rates != &theirs) {
                println!(
                    "  {:22} ratio to parry {median:.2} ({low:.2}-{high:.2}), median of per-round ratios",
                    ""
                );
            }
        }
    }
    ExitCode::SUCCESS
}

/// Median, smallest and largest, or `None` for no values.
fn summary(values: &[f64]) -> Option<(f64, f64, f64)> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some((*sorted.get(sorted.len() / 2)?, sorted[0], *sorted.last()?))
}

/// The memory limit's pass: reads every body once and every pair, writes a `u32` a pair,
/// streaming (the same bytes as the world path, with no gather and no arithmetic to speak
/// of); what it writes depends on what it read, so that nothing is optimised away.
fn stream(bodies: &[BodyRecord], pairs: &[[u32; 2]], out: &mut [u32]) {
    let words: &[u32] = bytemuck::cast_slice(bodies);
    let mut lanes = [0u32; 16];
    for chunk in words.chunks_exact(16) {
        for (lane, word) in lanes.iter_mut().zip(chunk) {
            *lane ^= word;
        }
    }
    let seed = lanes.iter().fold(0, |acc, lane| acc ^ lane);
    for (out, &[i, j]) in out.iter_mut().zip(pairs) {
        *out = i ^ j ^ seed;
    }
    std::hint::black_box(out);
}
