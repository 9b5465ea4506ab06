//! Criterion benches of the CPU paths beside the peers users would pick, on the same pairs in
//! the same run: sweepcast's f32 batch (the shader's twin) on one core and on all cores, the
//! f64 oracle, parry3d's ball–ball cast (generic `cast_shapes` and its ball-specific path)
//! and the seeds' time-sliced method, all on one core. Run with `cargo bench`; the GPU and
//! the miss counts are measured by `cargo run --release --example compare`.

#[path = "../examples/peers/mod.rs"]
mod peers;

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sweepcast::SweepOptions;
use sweepcast::{MovingSphere, cpu, reference};
use testkit::{Workload, WorkloadConfig};

type Method = Box<dyn Fn(&[MovingSphere], &[[u32; 2]]) -> usize + Sync>;

/// Each method returns its hit count, so that nothing it computes can be optimised away.
fn methods() -> Vec<(&'static str, Method)> {
    let hits = |t: peers::Times| t.iter().flatten().count();
    vec![
        (
            "sweepcast_cpu_f32_batch",
            Box::new(|b, p| {
                cpu::sweep_batch(b, p, SweepOptions::DEFAULT)
                    .unwrap()
                    .iter()
                    .flatten()
                    .count()
            }),
        ),
        (
            "sweepcast_cpu_times_of_impact",
            Box::new(|b, p| {
                let mut times = Vec::new();
                cpu::times_of_impact_into(b, p, SweepOptions::DEFAULT, &mut times).unwrap();
                times.iter().filter(|t| t.get().is_some()).count()
            }),
        ),
        (
            "sweepcast_reference_f64",
            Box::new(|b, p| {
                reference::sweep_batch(b, p, SweepOptions::DEFAULT)
                    .iter()
                    .flatten()
                    .count()
            }),
        ),
        (
            "parry3d_cast_shapes",
            Box::new(move |b, p| hits(peers::parry_cast_shapes(b, p))),
        ),
        (
            "parry3d_ball_ball",
            Box::new(move |b, p| hits(peers::parry_ball_ball(b, p))),
        ),
        (
            "parry3d_f64_cast_shapes",
            Box::new(move |b, p| hits(peers::parry_f64_cast_shapes(b, p))),
        ),
        (
            "time_sliced_k150",
            Box::new(move |b, p| hits(peers::time_sliced(b, p, 150))),
        ),
        (
            "time_sliced_k4",
            Box::new(move |b, p| hits(peers::time_sliced(b, p, 4))),
        ),
    ]
}

fn cpu_paths(c: &mut Criterion) {
    let config = WorkloadConfig {
        bodies: 25_000,
        pairs: 200_000,
        seed: 1,
        ..Default::default()
    };
    let workload = Workload::random(&config);
    let (bodies, pairs) = (&workload.bodies[..], &workload.pairs[..]);
    // Built once, so that no iteration pays for starting a thread.
    let single = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");
    let mut group = c.benchmark_group("lattice");
    group.throughput(Throughput::Elements(pairs.len() as u64));
    for (name, method) in methods() {
        group.bench_function(
            BenchmarkId::new(format!("{name}_one_core"), pairs.len()),
            |b| {
                b.iter(|| {
                    single.install(|| black_box(method(black_box(bodies), black_box(pairs))))
                });
            },
        );
    }
    let all = rayon::current_num_threads();
    for (name, method) in methods().iter().take(2) {
        let id = BenchmarkId::new(format!("{name}_{all}_cores"), pairs.len());
        group.bench_function(id, |b| {
            b.iter(|| black_box(method(black_box(bodies), black_box(pairs))));
        });
    }
    group.finish();
}

/// The fast path beside parry's ball-specific cast, pair for pair, each writing one time per
/// pair into a buffer kept between iterations (as a simulation would), on one core, on the
/// lattice and on the bullets (two bodies a pair, so packing and validating the bodies count).
fn fast_path_against_parry(c: &mut Criterion) {
    let (workloads, single) = peers::fast_path_workloads();
    for (name, workload) in &workloads {
        let (bodies, pairs) = (&workload.bodies[..], &workload.pairs[..]);
        let mut group = c.benchmark_group(format!("fast_path_{name}"));
        group.throughput(Throughput::Elements(pairs.len() as u64));
        let mut times = Vec::with_capacity(pairs.len());
        group.bench_function(
            BenchmarkId::new("sweepcast_times_of_impact_into", pairs.len()),
            |b| {
                b.iter(|| {
                    single.install(|| {
                        cpu::times_of_impact_into(
                            black_box(bodies),
                            black_box(pairs),
                            SweepOptions::DEFAULT,
                            &mut times,
                        )
                    })
                });
            },
        );
        let mut parry_times = Vec::with_capacity(pairs.len());
        group.bench_function(BenchmarkId::new("parry3d_ball_ball", pairs.len()), |b| {
            b.iter(|| {
                parry_times.clear();
                parry_times.extend(
                    black_box(pairs)
                        .iter()
                        .map(|pair| peers::parry_ball_ball_time(black_box(bodies), pair)),
                );
            });
        });
        group.finish();
    }
}

criterion_group!(benches, cpu_paths, fast_path_against_parry);
criterion_main!(benches);
