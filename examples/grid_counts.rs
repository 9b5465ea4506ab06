//! Issue 32's counts, on the CPU twin: per body, the work of the grid's gather (cells looked
//! up, entries visited, box tests, sweeps) at each level ratio, on every `testkit::Scene` in
//! 2D and 3D. What settled the levels and which level searches which. (The tree's queries
//! it was weighed against, and their counts in BENCHMARKS.md, left the crate with the GPU
//! tree; `git show 8749a00:examples/grid_counts.rs` counts both.)
//!
//! ```text
//! cargo run --release --example grid_counts -- [--bodies N] [--seed S]
//! ```

use sweepcast::MovingSphere;
use sweepcast::low_level::grid::{GridWork, earliest_by_grid};
use sweepcast::low_level::layout::{BodyRecord, StepParams};
use testkit::Scene;

fn main() {
    let mut bodies = 100_000usize;
    let mut seed = 1u64;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().expect("a value after the flag");
        match arg.as_str() {
            "--bodies" => bodies = value().parse().expect("a count"),
            "--seed" => seed = value().parse().expect("a seed"),
            other => panic!("unknown argument {other}"),
        }
    }
    println!(
        "| scene | D | broad phase | levels | cells / body | entries / body | box tests / body \
         | sweeps / body | steps: mean / max |"
    );
    println!("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for scene in Scene::ALL {
        for dims in [2u32, 3] {
            let (spheres, options): (Vec<MovingSphere>, _) = scene.bodies(bodies, dims, seed);
            let records: Vec<BodyRecord> = spheres.iter().copied().map(BodyRecord::from).collect();
            let params = StepParams::new(&records, &options);
            let n = records.len();
            for ratios in [[0u32, 0], [0, 1], [0, 2], [2, 1]] {
                let run = earliest_by_grid(&params, &records, ratios);
                let mut total = GridWork::default();
                for work in &run.work {
                    total += *work;
                }
                let max_steps = run
                    .work
                    .iter()
                    .map(|w| w.cells + w.entries)
                    .max()
                    .unwrap_or(0);
                let label = match ratios {
                    [_, 0] => "grid, one level".to_string(),
                    [0, r] => format!("grid, ratio {}", 1 << r),
                    [f, r] => format!("grid, ratio {}, one level within {}×", 1 << r, 1 << f),
                };
                let plan: Vec<String> = (0..run.grid.level_count as usize)
                    .map(|k| {
                        let level = run.grid.levels[k];
                        format!(
                            "{:.3}:{}:{:b}",
                            level.size, level.population, level.searches
                        )
                    })
                    .collect();
                println!(
                    "| {scene:?} | {dims} | {label} | {} | {:.1} | {:.1} | {:.1} | {:.2} | {:.1} / {max_steps}{} |",
                    run.grid.level_count,
                    total.cells as f64 / n as f64,
                    total.entries as f64 / n as f64,
                    total.box_tests as f64 / n as f64,
                    total.sweeps as f64 / n as f64,
                    (total.cells + total.entries) as f64 / n as f64,
                    if run.unfinished { " UNFINISHED" } else { "" },
                );
                eprintln!(
                    "  {scene:?} {dims}D {label}: levels (size:population:searches) {plan:?}"
                );
            }
        }
    }
}
