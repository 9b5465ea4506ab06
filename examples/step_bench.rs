//! The whole collision step from the bodies alone, on the CPU (`cpu::ContactFinder`), beside
//! the step a Rust user would build today from parry3d 0.31: a `Bvh` over the same swept
//! boxes (`Bvh::from_leaves`), its pairs of overlapping leaves, `cast_shapes_ball_ball` on
//! each, and the same ordering and earliest impact per body. Both on all cores (parry's
//! self-traversal with its `parallel` feature, its casts with rayon); alternating, so that
//! both see the same machine load.
//!
//! ```text
//! cargo run --release --example step_bench -- [--bodies N,N,...] [--scene S] [--dims 2|3]
//!     [--rounds R] [--seed K] [--no-parry]
//! ```
//!
//! Scenes (`testkit::Scene`): `uniform` (the default: about 10% of the volume in bodies of
//! radius 0.5 to 1, displacements up to 2), `clustered`, `radii100` (radii 0.05 to 5),
//! `fast` (one body in fifty a bullet crossing the scene) and `periodic`. Prints per N the
//! median step time of each path over the rounds, the CPU path's median time per stage,
//! candidates and contacts, memory per body, the ratio to parry's step, and at the end the
//! growth exponent of each path's step time between the last two sizes.

mod common;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use common::{bad_options, machine, parse};
use rayon::prelude::*;
use sweepcast::{MovingSphere, cpu};
use testkit::Scene;

fn main() -> ExitCode {
    let mut sizes = vec![10_000usize, 100_000, 1_000_000];
    let mut scene = Scene::Uniform;
    let mut dimensions = 3;
    let mut rounds = 5;
    let mut seed = 1;
    let mut with_parry = true;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--no-parry" {
            with_parry = false;
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
    println!("scene {scene:?}, {dimensions}D, {rounds} rounds, seed {seed}");
    let mut medians = Vec::new();
    let mut finder = cpu::ContactFinder::new();
    for &n in &sizes {
        let (bodies, options) = scene.bodies(n, dimensions, seed);
        let mut ours = Vec::new();
        let mut stages = Vec::new();
        let mut theirs = Vec::new();
        let (mut contacts, mut candidates) = (0, 0);
        let mut parry_counts = (0, 0);
        // A warm-up step of each, then alternating rounds.
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
            if with_parry && options.periodic_box.is_none() {
                let start = Instant::now();
                parry_counts = parry_step(&bodies);
                if round > 0 {
                    theirs.push(start.elapsed());
                }
            }
        }
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
        let theirs_median = (!theirs.is_empty()).then(|| median(&mut theirs));
        if let Some(theirs_median) = theirs_median {
            println!(
                "          parry3d step {:.2} ms: {} leaf pairs, {} contacts; sweepcast {:.2}x",
                ms(theirs_median),
                parry_counts.0,
                parry_counts.1,
                theirs_median.as_secs_f64() / ours_median.as_secs_f64()
            );
        }
        medians.push((n, ours_median, theirs_median));
    }
    if let [.., (n0, ours0, theirs0), (n1, ours1, theirs1)] = medians[..] {
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
        println!();
    }
    ExitCode::SUCCESS
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
