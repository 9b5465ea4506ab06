//! The whole collision step from the bodies alone, on the GPU (`gpu::ContactPipeline`) and on
//! the CPU (`cpu::ContactFinder`), beside the step a Rust user would build today from parry3d
//! 0.31: a `Bvh` over the same swept
//! boxes (`Bvh::from_leaves`), its pairs of overlapping leaves, `cast_shapes_ball_ball` on
//! each, and the same ordering and earliest impact per body. Both on all cores (parry's
//! self-traversal with its `parallel` feature, its casts with rayon); alternating, so that
//! both see the same machine load.
//!
//! ```text
//! cargo run --release --example step_bench -- [--bodies N,N,...] [--scene S] [--dims 2|3]
//!     [--rounds R] [--seed K] [--no-parry] [--no-gpu]
//! ```
//!
//! Scenes (`testkit::Scene`): `uniform` (the default: about 10% of the volume in bodies of
//! radius 0.5 to 1, displacements up to 2), `clustered`, `radii100` (radii 0.05 to 5),
//! `fast` (one body in fifty a bullet crossing the scene) and `periodic`. Prints per N the
//! median step time of each path over the rounds, each path's median time per stage (the
//! GPU's from a second pipeline that submits and waits per stage, wall clock), candidates and
//! contacts, memory per body, the ratio to parry's step (the median of the rounds' ratios,
//! and the ratio of the medians), a cost model of the GPU step (bytes
//! and dispatches per stage, and what they predict for an H100: a model, not a measurement),
//! and at the end the growth exponent of each path's step time between the last two sizes.
//! The GPU is whatever adapter `WGPU_BACKEND` selects; without one the GPU rows are skipped,
//! loudly.

mod common;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use common::{bad_options, machine, parse};
use rayon::prelude::*;
use sweepcast::gpu::{ContactPipeline, GpuContext};
use sweepcast::{MovingSphere, cpu};
use testkit::Scene;

fn main() -> ExitCode {
    let mut sizes = vec![10_000usize, 100_000, 1_000_000];
    let mut scene = Scene::Uniform;
    let mut dimensions = 3;
    let mut rounds = 5;
    let mut seed = 1;
    let mut with_parry = true;
    let mut with_gpu = true;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--no-parry" {
            with_parry = false;
            continue;
        }
        if flag == "--no-gpu" {
            with_gpu = false;
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
    let gpu = with_gpu.then(gpu_pipelines).flatten();
    let mut medians = Vec::new();
    let mut finder = cpu::ContactFinder::new();
    for &n in &sizes {
        let (bodies, options) = scene.bodies(n, dimensions, seed);
        let mut ours = Vec::new();
        let mut stages = Vec::new();
        let mut theirs = Vec::new();
        let (mut contacts, mut candidates) = (0, 0);
        let mut parry_counts = (0, 0);
        let mut gpu_times = Vec::new();
        let mut gpu_stages: Vec<Vec<(&str, Duration)>> = Vec::new();
        let mut gpu_counts = (0, 0);
        let mut gpu_failed = false;
        // A warm-up step of each, then alternating rounds: more of them below 10⁵ bodies,
        // where a step takes milliseconds and the machine's noise is larger.
        // At most ten times: a hundred bodies would otherwise ask for a thousand times the
        // rounds, each with a GPU step of some 100 ms on a software adapter.
        let rounds = rounds * (100_000 / n.max(1)).clamp(1, 10);
        for round in 0..=rounds {
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
            if round > 0 {
                ours.push(elapsed);
                stages.push(finder.stage_times());
            }
            if let Some((_, pipeline, profiled)) = gpu.as_ref().filter(|_| !gpu_failed) {
                let start = Instant::now();
                match pipeline.find(&bodies, options) {
                    Ok(found) => gpu_counts = (found.candidates(), found.contacts().len()),
                    // Beyond one binding of the device (128 MiB on the software adapters:
                    // 4,194,304 candidates, 2,097,152 contacts): no GPU row for this N.
                    Err(error @ sweepcast::Error::CapacityExceeded { .. }) => {
                        println!("          GPU step: {error}");
                        gpu_failed = true;
                    }
                    Err(error) => {
                        eprintln!("ContactPipeline::find: {error}");
                        return ExitCode::FAILURE;
                    }
                }
                let elapsed = start.elapsed();
                if round > 0 && !gpu_failed {
                    gpu_times.push(elapsed);
                    match profiled.find(&bodies, options) {
                        Ok(_) => gpu_stages.push(profiled.stage_times()),
                        Err(error) => eprintln!("GPU stage times: {error}"),
                    }
                }
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
        let stage = |f: fn(&cpu::StageTimes) -> Duration| {
            median(&mut stages.iter().map(f).collect::<Vec<_>>())
        };
        println!(
            "N = {n}: sweepcast step {:.2} ms ({:.1} M bodies/s); stages: validate {:.2}, \
             build {:.2}, candidates and sweep {:.2}, order {:.2} ms; {candidates} candidates, \
             {contacts} contacts; {:.0} B a body",
            ms(ours_median),
            n as f64 / ours_median.as_secs_f64() / 1e6,
            ms(stage(|s| s.validate)),
            ms(stage(|s| s.build)),
            ms(stage(|s| s.candidates_and_sweep)),
            ms(stage(|s| s.order)),
            finder.memory_bytes() as f64 / n as f64,
        );
        let gpu_median = (!gpu_times.is_empty()).then(|| median(&mut gpu_times));
        if let (Some(gpu_median), Some((_, pipeline, _))) = (gpu_median, &gpu) {
            let stages: Vec<String> = gpu_stages
                .first()
                .map(|first| {
                    first
                        .iter()
                        .enumerate()
                        .map(|(k, (name, _))| {
                            let mut times: Vec<Duration> =
                                gpu_stages.iter().map(|run| run[k].1).collect();
                            format!("{name} {:.2}", ms(median(&mut times)))
                        })
                        .collect()
                })
                .unwrap_or_default();
            println!(
                "          GPU step {:.2} ms ({:.1} M bodies/s; {:.2}x the CPU step); stages \
                 (submitted one by one): {} ms; {} candidates, {} contacts; {:.0} B of device \
                 memory a body",
                ms(gpu_median),
                n as f64 / gpu_median.as_secs_f64() / 1e6,
                ours_median.as_secs_f64() / gpu_median.as_secs_f64(),
                stages.join(", "),
                gpu_counts.0,
                gpu_counts.1,
                pipeline.device_memory_bytes() as f64 / n as f64,
            );
            print_model(n, gpu_counts.0, gpu_counts.1);
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
        if let (Some(t0), Some(t1)) = (gpu0, gpu1) {
            print!(", GPU {:.2}", exponent(t0, t1));
        }
        println!();
    }
    ExitCode::SUCCESS
}

/// A context and two contact pipelines on it: one timed whole, one timed per stage. `None`,
/// loudly, without an adapter.
fn gpu_pipelines() -> Option<(GpuContext, ContactPipeline, ContactPipeline)> {
    let made = GpuContext::new_blocking().and_then(|context| {
        let pipeline = ContactPipeline::new(&context)?;
        let profiled = ContactPipeline::new(&context)?.with_stage_times(true);
        Ok((context, pipeline, profiled))
    });
    match made {
        Ok(gpu) => {
            println!("GPU: {}", gpu.0.describe());
            Some(gpu)
        }
        Err(error) => {
            eprintln!("!!!!!!!! no GPU rows: {error}");
            None
        }
    }
}

/// The GPU step's cost model: bytes read and written and dispatches per stage, from the
/// buffer sizes and the counts of this step, with what they predict for an H100 (3.35 TB/s
/// of HBM3, and an assumed 5 µs a dispatch for launch and barrier). A model, not a
/// measurement: it counts each buffer a kernel streams once, the tree's traversal as 48
/// bytes (a node and its box) for each of `VISITS` node visits a query (the CPU's count on
/// the uniform scene; the GPU's L2 would hold much of the tree), and lampshade's portable
/// sort as 4-bit passes (the kernel it picks on NVIDIA Vulkan without subgroups) of 24
/// bytes an item each (read twice, written once).
fn print_model(n: usize, candidates: usize, contacts: usize) {
    const BANDWIDTH: f64 = 3.35e12;
    const DISPATCH: f64 = 5e-6;
    const VISITS: f64 = 28.0;
    let (n, c, k) = (n as f64, candidates as f64, contacts as f64);
    let index_bits = (n.log2().ceil()).max(1.0);
    let sort = |items: f64, bits: f64| {
        let passes = (bits / 4.0).ceil();
        (passes * 24.0 * items, passes * 4.0)
    };
    let (sort_codes, sort_codes_dispatches) = sort(n, 63.0);
    let (sort_contacts, sort_contacts_dispatches) = sort(k, 2.0 * index_bits + 30.0);
    let stages = [
        ("bounds", 80.0 * n, 1.0),
        ("sort", sort_codes + 24.0 * n, sort_codes_dispatches + 1.0),
        ("hierarchy", (88.0 + 72.0 + 100.0) * n, 3.0),
        ("candidates", VISITS * 48.0 * n + 8.0 * c, 1.0),
        ("sweep", 104.0 * c, 2.0),
        (
            "contacts",
            40.0 * c + 128.0 * k + 3.0 * 80.0 * k + sort_contacts + 136.0 * k,
            sort_contacts_dispatches + 6.0,
        ),
    ];
    let mut total = (0.0, 0.0, 0.0);
    let rows: Vec<String> = stages
        .iter()
        .map(|&(name, bytes, dispatches)| {
            let seconds = bytes / BANDWIDTH + dispatches * DISPATCH;
            total = (total.0 + bytes, total.1 + dispatches, total.2 + seconds);
            format!(
                "{name} {:.1} MB/{dispatches:.0}/{:.0} µs",
                bytes / 1e6,
                seconds * 1e6
            )
        })
        .collect();
    println!(
        "          model (bytes/dispatches/H100 µs): {}; total {:.1} MB, {:.0} dispatches, \
         {:.0} µs on an H100 (model), plus the readback over PCIe ({:.1} MB)",
        rows.join(", "),
        total.0 / 1e6,
        total.1,
        total.2 * 1e6,
        (8.0 + 4.0 * n + 64.0 * k) / 1e6,
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
