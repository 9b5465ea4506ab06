//! Issue 32's counts, on the CPU twins: per body, the work of the grid's gather (cells looked
//! up, entries visited, box tests, sweeps) at each level ratio, against the tree's queries
//! (node visits, candidates), on every `testkit::Scene` in 2D and 3D. What settles the
//! levels and which level searches which.
//!
//! ```text
//! cargo run --release --example grid_counts -- [--bodies N] [--seed S]
//! ```

use sweepcast::MovingSphere;
use sweepcast::low_level::broad_phase::{self as tree, Aabb, Found, Leaf, Node, Queried, Tree};
use sweepcast::low_level::grid::{GridWork, earliest_by_grid};
use sweepcast::low_level::layout::{BodyRecord, KeyValue, StepParams};
use testkit::Scene;

/// The tree's queries over `records`: per sorted leaf, the steps of its walk (resumes
/// included) and the candidates it found.
fn tree_counts(params: &StepParams, records: &[BodyRecord]) -> (Vec<u64>, u64) {
    let n = records.len();
    let mut params = *params;
    params.candidate_capacity = u32::MAX;
    params.continuation_capacity = u32::MAX;
    let mut boxes = vec![Aabb::default(); n];
    let mut codes = vec![[0u32; 2]; n];
    let mut sort_in = vec![KeyValue::default(); n];
    for i in 0..n {
        tree::swept_boxes(i, &params, records, &mut boxes, &mut codes, &mut sort_in);
    }
    let mut sort_out = sort_in.clone();
    tree::sort_by_key(&sort_in, &mut sort_out);
    let mut by_high = sort_in.clone();
    for i in 0..n {
        tree::key_by_high(i, &params, &sort_out, &codes, &mut by_high);
    }
    tree::sort_by_key(&by_high, &mut sort_out);
    let mut leaves = vec![Leaf::default(); n];
    let mut leaf_codes = vec![[0u32; 2]; n];
    for i in 0..n {
        tree::leaves_in_order(
            i,
            &params,
            records,
            &sort_out,
            &boxes,
            &codes,
            &mut leaves,
            &mut leaf_codes,
        );
    }
    let mut built = Tree {
        nodes: vec![Node::default(); n.saturating_sub(1)],
        node_parents: vec![0; n.saturating_sub(1)],
        leaf_parents: vec![0; n],
        node_boxes: vec![0; 8 * n.saturating_sub(1)],
    };
    for index in 0..n.saturating_sub(1) {
        tree::hierarchy(index, &params, &leaves, &leaf_codes, &mut built);
    }
    for i in 0..n {
        tree::refit(i, &params, &leaves, &mut built);
    }
    let queried = || Queried {
        params: &params,
        leaves: &leaves,
        nodes: &built.nodes,
        node_boxes: &built.node_boxes,
    };
    let mut steps = vec![0u64; n];
    let mut found = Found::default();
    let mut candidates = 0u64;
    for (p, steps) in steps.iter_mut().enumerate() {
        *steps += u64::from(tree::candidates(p, queried(), &mut found));
        // Resume this leaf's query until it finishes, counting every step.
        while !found.continuations.is_empty() {
            let saved = std::mem::take(&mut found.continuations);
            found.continuation_count = 0;
            for i in 0..saved.len() {
                *steps += u64::from(tree::resume_candidates(
                    i,
                    queried(),
                    &saved,
                    saved.len() as u32,
                    &mut found,
                ));
            }
        }
        candidates += found.pairs.len() as u64;
        found.pairs.clear();
    }
    (steps, candidates)
}

fn mean(values: impl Iterator<Item = u64>, n: usize) -> f64 {
    values.sum::<u64>() as f64 / n.max(1) as f64
}

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
            let (steps, candidates) = tree_counts(&params, &records);
            println!(
                "| {scene:?} | {dims} | tree | — | — | — | {:.1} (node visits) | {:.2} (candidates) \
                 | {:.1} / {} |",
                mean(steps.iter().copied(), n),
                candidates as f64 / n as f64,
                mean(steps.iter().copied(), n),
                steps.iter().max().unwrap_or(&0),
            );
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
