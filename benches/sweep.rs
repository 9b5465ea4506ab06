//! Criterion benches of the CPU paths on one generated workload: the f32 batch (the shader's
//! twin) and the f64 oracle. Run with `cargo bench`; the GPU is measured by
//! `cargo run --release --example headless`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sweepcast::workload::{Workload, WorkloadConfig};
use sweepcast::{cpu, reference};

fn cpu_paths(c: &mut Criterion) {
    let config = WorkloadConfig {
        bodies: 50_000,
        pairs: 200_000,
        seed: 1,
        ..Default::default()
    };
    let workload = Workload::random(&config);
    let (bodies, pairs) = (&workload.bodies, &workload.pairs);
    let mut group = c.benchmark_group("sweep");
    group.throughput(Throughput::Elements(pairs.len() as u64));
    let mut impacts = Vec::new();
    group.bench_function(BenchmarkId::new("cpu_f32_batch", pairs.len()), |b| {
        b.iter(|| cpu::sweep_batch_into(bodies, pairs, &mut impacts).unwrap());
    });
    group.bench_function(BenchmarkId::new("reference_f64_batch", pairs.len()), |b| {
        b.iter(|| reference::sweep_batch(bodies, pairs));
    });
    group.finish();
}

criterion_group!(benches, cpu_paths);
criterion_main!(benches);
