//! The f32 CPU twin of the shader against the f64 oracle, judged by backward error
//! (see `sweepcast::parity` for the bound and its derivation).

use sweepcast::cpu;
use sweepcast::parity::{self, CPU_BOUND};
use sweepcast::workload::{Workload, WorkloadConfig};

/// The target: parry3d's f32 ball-ball cast keeps the backward error under one ε on
/// exact f32 inputs; the f32 twin must match it on these sets (the derived worst case,
/// `CPU_BOUND`, is what every single pair is held to).
const PARRY_TARGET: f64 = 1.0;

fn check(name: &str, workload: &Workload) {
    let impacts = cpu::sweep_batch(&workload.bodies, &workload.pairs).expect("valid workload");
    let report = parity::compare(&workload.bodies, &workload.pairs, &impacts, CPU_BOUND);
    println!("{name}: {report}");
    assert!(report.passed(), "{name}: {report}");
    assert!(
        report.max_backward_error <= PARRY_TARGET,
        "{name}: backward error {} eps above parry's 1 eps",
        report.max_backward_error
    );
    assert!(
        report.candidate_hits > 0,
        "{name}: the set must contain hits"
    );
    assert!(report.candidate_hits < report.pairs, "{name}: and misses");
}

#[test]
fn million_random_pairs_3d_within_bound() {
    let config = WorkloadConfig {
        bodies: 200_000,
        pairs: 1_000_000,
        seed: 7,
        ..Default::default()
    };
    check("random 3D", &Workload::random(&config));
}

#[test]
fn random_pairs_2d_within_bound() {
    let config = WorkloadConfig {
        bodies: 100_000,
        pairs: 300_000,
        seed: 8,
        dimensions: 2,
        ..Default::default()
    };
    check("random 2D", &Workload::random(&config));
}

#[test]
fn random_pairs_far_from_origin_within_bound() {
    for offset in [1e3, 1e6] {
        let config = WorkloadConfig {
            bodies: 100_000,
            pairs: 300_000,
            seed: 9,
            offset,
            ..Default::default()
        };
        check(
            &format!("random 3D at offset {offset:e}"),
            &Workload::random(&config),
        );
    }
}

#[test]
fn adversarial_set_within_bound() {
    check("adversarial", &Workload::adversarial(3));
}
