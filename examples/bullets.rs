//! Collision groups in a 2D game: streams of bullets that pass through each other, and the
//! targets they hit. The step is run with and without groups, on the CPU
//! (`cpu::ContactFinder`) and, where an adapter exists, on the GPU (`gpu::ContactPipeline`;
//! skipped loudly otherwise), and the candidates, contacts and median step times are printed
//! side by side (the two steps alternate, so that both see the same load on the machine).
//!
//! ```text
//! cargo run --release --example bullets -- [--bullets N] [--targets M] [--repeats R]
//!     [--seed K] [--check]
//! ```
//!
//! The scene: `N` bullets (radius 0.2) fired in streams of 250 from guns scattered over a
//! square field, 0.5 apart along a stream, each moving 3 a step with a spread of ±2°, so that
//! a bullet's swept box meets a dozen of its stream's and the streams cross; `M` targets
//! (radius 2 to 4) drifting slowly. Bullets are in group 1 and meet group 2 only; targets in
//! group 2 and meet both. Without groups the step finds every bullet–bullet candidate and
//! contact, which the game would throw away.
//!
//! `--check` exits 1 unless, on each path, the grouped step's contacts are the ungrouped
//! step's with the bullet–bullet pairs removed (the same pairs, the same impacts, in the
//! same order), and the ungrouped step had bullet–bullet contacts to remove.

mod common;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use common::{bad_options, machine, parse};
use sweepcast::glam::Vec2;
use sweepcast::{CollisionGroups, MovingCircle, SweepOptions, cpu};

const BULLET: u16 = 1 << 0;
const TARGET: u16 = 1 << 1;
/// Bullets a gun fires in one stream.
const STREAM: usize = 250;

fn main() -> ExitCode {
    let (mut bullets, mut targets, mut repeats, mut seed, mut check) =
        (100_000usize, 2_000usize, 7usize, 1u64, false);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--check" {
            check = true;
            continue;
        }
        let value = args.next().unwrap_or_default();
        let parsed = match flag.as_str() {
            "--bullets" => parse(&value).map(|n| bullets = n),
            "--targets" => parse(&value).map(|n| targets = n),
            "--repeats" => parse(&value).map(|n: usize| repeats = n.max(1)),
            "--seed" => parse(&value).map(|n| seed = n),
            _ => Err(format!("bad option {flag}; see the file's header")),
        };
        if let Err(message) = parsed {
            return bad_options(&message);
        }
    }
    let (bodies, groups) = scene(bullets, targets, seed);
    let is_bullet = |body: u32| (body as usize) < bullets;
    println!("{}, {} threads", machine(), rayon::current_num_threads());
    println!(
        "{bullets} bullets in streams of {STREAM}, {targets} targets; median of {repeats} steps"
    );
    let mut ok = true;

    let mut finder = cpu::ContactFinder::new();
    let [ungrouped, grouped] = side_by_side(repeats, &groups, |groups| {
        finder.set_groups(groups);
        let start = Instant::now();
        let contacts = finder
            .find(&bodies, SweepOptions::default())
            .expect("valid bodies")
            .clone();
        (contacts, start.elapsed())
    });
    let stages: Vec<String> = finder
        .stage_times()
        .iter()
        .map(|(stage, time)| format!("{stage} {:.2} ms", time.as_secs_f64() * 1e3))
        .collect();
    println!(
        "CPU  the last step's stages with groups: {}",
        stages.join(", ")
    );
    ok &= report("CPU", &ungrouped, &grouped, &is_bullet, check);

    ok &= gpu_steps(&bodies, &groups, repeats, &is_bullet, check);
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The GPU's steps without and with groups, reported as [`report`] does; skipped loudly
/// without an adapter (true then).
#[cfg(feature = "gpu")]
fn gpu_steps(
    bodies: &[MovingCircle],
    groups: &[CollisionGroups],
    repeats: usize,
    is_bullet: &impl Fn(u32) -> bool,
    check: bool,
) -> bool {
    use sweepcast::gpu::{ContactPipeline, GpuContext};
    match GpuContext::new_blocking() {
        Ok(context) => {
            let pipeline = ContactPipeline::new(&context).expect("the step compiles");
            println!("GPU: {}", context.describe());
            let [ungrouped, grouped] = side_by_side(repeats, groups, |groups| {
                pipeline.set_groups(groups);
                let start = Instant::now();
                let contacts = pipeline
                    .find(bodies, SweepOptions::default())
                    .expect("valid bodies");
                (contacts, start.elapsed())
            });
            report("GPU", &ungrouped, &grouped, is_bullet, check)
        }
        Err(error) => {
            eprintln!("\n!!!!!!!! SKIPPED the GPU step: {error}\n");
            true
        }
    }
}

/// Without the `gpu` feature: the GPU's steps skipped, loudly.
#[cfg(not(feature = "gpu"))]
fn gpu_steps(
    _: &[MovingCircle],
    _: &[CollisionGroups],
    _: usize,
    _: &impl Fn(u32) -> bool,
    _: bool,
) -> bool {
    eprintln!("\n!!!!!!!! SKIPPED the GPU step: built without the gpu feature\n");
    true
}

/// The step without groups and with `groups`, alternating (so that both see the same load
/// on the machine), once to warm up and then `repeats` times each: the last contacts and the
/// median time of each.
fn side_by_side(
    repeats: usize,
    groups: &[CollisionGroups],
    mut step: impl FnMut(&[CollisionGroups]) -> (sweepcast::Contacts, Duration),
) -> [(sweepcast::Contacts, Duration); 2] {
    let sets: [&[CollisionGroups]; 2] = [&[], groups];
    for set in sets {
        step(set);
    }
    let mut times = [Vec::new(), Vec::new()];
    let mut last = [None, None];
    for _ in 0..repeats {
        for (k, set) in sets.iter().enumerate() {
            let (contacts, time) = step(set);
            times[k].push(time);
            last[k] = Some(contacts);
        }
    }
    std::array::from_fn(|k| {
        times[k].sort();
        (
            last[k].take().expect("one run at least"),
            times[k][repeats / 2],
        )
    })
}

/// The bullets (first) and targets of the scene, and their groups.
fn scene(bullets: usize, targets: usize, seed: u64) -> (Vec<MovingCircle>, Vec<CollisionGroups>) {
    let mut state = seed;
    // SplitMix64, uniform in [0, 1).
    let mut unit = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
    };
    // About 125 × 125 of field a stream.
    let side = 125.0 * (bullets.div_ceil(STREAM) as f32).sqrt().max(1.0);
    let mut bodies = Vec::with_capacity(bullets + targets);
    let (mut gun, mut aim) = (Vec2::ZERO, 0.0f32);
    for i in 0..bullets {
        if i % STREAM == 0 {
            gun = Vec2::new(unit(), unit()) * side;
            aim = unit() * std::f32::consts::TAU;
        }
        let along = (i % STREAM) as f32 * 0.5;
        let spread = aim + (unit() - 0.5) * 4f32.to_radians();
        let direction = Vec2::from_angle(aim);
        bodies.push(MovingCircle::new(
            gun + direction * along,
            0.2,
            Vec2::from_angle(spread) * 3.0,
        ));
    }
    for _ in 0..targets {
        bodies.push(MovingCircle::new(
            Vec2::new(unit(), unit()) * side,
            2.0 + 2.0 * unit(),
            Vec2::from_angle(unit() * std::f32::consts::TAU) * 0.5,
        ));
    }
    let groups = (0..bullets + targets)
        .map(|i| {
            if i < bullets {
                CollisionGroups::new(BULLET, TARGET)
            } else {
                CollisionGroups::new(TARGET, BULLET | TARGET)
            }
        })
        .collect();
    (bodies, groups)
}

/// Prints one path's steps without and with groups; with `check`, whether the grouped
/// contacts are the ungrouped ones less the bullet–bullet pairs (false where not).
fn report(
    path: &str,
    (ungrouped, without): &(sweepcast::Contacts, Duration),
    (grouped, with): &(sweepcast::Contacts, Duration),
    is_bullet: &impl Fn(u32) -> bool,
    check: bool,
) -> bool {
    let ms = |d: &Duration| d.as_secs_f64() * 1e3;
    println!(
        "{path}  without groups: {:>10} candidates {:>8} contacts {:>9.2} ms",
        ungrouped.candidates(),
        ungrouped.contacts().len(),
        ms(without)
    );
    println!(
        "{path}  with groups:    {:>10} candidates {:>8} contacts {:>9.2} ms  ({:.1}× the candidates saved, {:.2}× faster)",
        grouped.candidates(),
        grouped.contacts().len(),
        ms(with),
        ungrouped.candidates() as f64 / grouped.candidates().max(1) as f64,
        without.as_secs_f64() / with.as_secs_f64()
    );
    if !check {
        return true;
    }
    let between_bullets =
        |contact: &&sweepcast::Contact| contact.pair().unwrap().iter().all(|&b| is_bullet(b));
    let kept: Vec<&sweepcast::Contact> = ungrouped
        .contacts()
        .iter()
        .filter(|contact| !between_bullets(contact))
        .collect();
    let removed = ungrouped.contacts().len() - kept.len();
    let same = kept.len() == grouped.contacts().len()
        && kept.iter().zip(grouped.contacts()).all(|(a, b)| **a == *b);
    if same && removed > 0 {
        println!(
            "{path}  check: the grouped contacts are the ungrouped less {removed} bullet–bullet pairs"
        );
        true
    } else if removed == 0 {
        eprintln!(
            "{path}  check FAILED: no bullet–bullet contact to remove (the scene is too sparse)"
        );
        false
    } else {
        eprintln!(
            "{path}  check FAILED: the grouped contacts are not the ungrouped less the bullet–bullet pairs"
        );
        false
    }
}
