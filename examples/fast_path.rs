//! The CPU fast paths (`cpu::times_of_impact_into`, and `cpu::sweep_batch_into` for the full
//! answer, beside the twin called pair by pair) against parry3d's ball-specific cast
//! (`cast_shapes_ball_ball`) on one core, pair for pair, each writing one time per pair into
//! a buffer kept between runs, alternating so that both see the same machine load.
//!
//! ```text
//! cargo run --release --example fast_path -- [--rounds R] [--only sweepcast|full|twin|parry]
//!                                            [--workload lattice|bullets]
//! ```
//!
//! Workloads: the lattice of `cargo bench` (25,000 bodies, 200,000 neighbour pairs, seed 1)
//! and 100,000 bullets (seed 1; two bodies a pair, so packing and validating them counts).
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
use sweepcast::cpu;

fn main() -> ExitCode {
    let mut rounds = 15;
    let mut only = None;
    let mut workload_name = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next();
        let parsed = match (flag.as_str(), value) {
            ("--rounds", Some(v)) => parse(&v).map(|r| rounds = r),
            ("--only", Some(v)) if ["sweepcast", "full", "twin", "parry"].contains(&v.as_str()) => {
                only = Some(v);
                Ok(())
            }
            ("--workload", Some(v)) if v == "lattice" || v == "bullets" => {
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
    for (name, workload) in workloads.iter().filter(|(name, _)| chosen(name)) {
        let (bodies, pairs) = (&workload.bodies[..], &workload.pairs[..]);
        let mut times = Vec::with_capacity(pairs.len());
        let mut parry_times = Vec::with_capacity(pairs.len());
        let mut impacts = Vec::with_capacity(pairs.len());
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        let mut full = Vec::new();
        let mut twin = Vec::new();
        for _ in 0..rounds {
            if runs("sweepcast") {
                let timing = time_runs(1, || {
                    single
                        .install(|| {
                            cpu::times_of_impact_into(
                                bodies,
                                pairs,
                                SweepOptions::DEFAULT,
                                &mut times,
                            )
                        })
                        .expect("valid input");
                });
                ours.push(timing.rates(pairs.len()).0 / 1e6);
            }
            if runs("full") {
                let timing = time_runs(1, || {
                    single
                        .install(|| {
                            cpu::sweep_batch_into(
                                bodies,
                                pairs,
                                SweepOptions::DEFAULT,
                                &mut impacts,
                            )
                        })
                        .expect("valid input");
                });
                full.push(timing.rates(pairs.len()).0 / 1e6);
            }
            if runs("twin") {
                let timing = time_runs(1, || {
                    impacts.clear();
                    impacts.extend(pairs.iter().map(|&[i, j]| {
                        let (a, b) = (&bodies[i as usize], &bodies[j as usize]);
                        cpu::sweep_sphere_sphere(a, b, SweepOptions::DEFAULT)
                    }));
                });
                twin.push(timing.rates(pairs.len()).0 / 1e6);
            }
            if runs("parry") {
                let timing = time_runs(1, || {
                    parry_times.clear();
                    parry_times.extend(
                        pairs
                            .iter()
                            .map(|pair| peers::parry_ball_ball_time(bodies, pair)),
                    );
                });
                theirs.push(timing.rates(pairs.len()).0 / 1e6);
            }
        }
        let hits = times.iter().filter(|t| t.get().is_some()).count();
        let parry_hits = parry_times.iter().flatten().count();
        println!(
            "{name}: {} pairs, hits {hits} (parry {parry_hits})",
            pairs.len()
        );
        for (method, rates) in [
            ("sweepcast times only", &ours),
            ("sweepcast full answer", &full),
            ("twin pair by pair", &twin),
            ("parry3d ball_ball", &theirs),
        ] {
            if let Some((median, low, high)) = summary(rates) {
                println!("  {method:22} {median:7.1} M pairs/s ({low:.1}-{high:.1})");
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
