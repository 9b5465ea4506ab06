//! Weak scaling of the step across ranks: `bodies` bodies a rank in a periodic box that
//! grows with the ranks along x (one brick a rank, each a cube), each step timed on every
//! rank apart from its exchange. Prints, on rank 0, the median over the steps of each rank's
//! step time and exchange time (the slowest rank's), the halo's share of the bodies a rank
//! holds, and the bytes a rank sends.
//!
//! ```text
//! RAYON_NUM_THREADS=1 mpirun --oversubscribe -np 2 mpi/target/release/weak_scaling 100000 9
//! ```

use std::time::Duration;

use mpi::collective::SystemOperation;
use mpi::traits::*;
use sweepcast::bricks::Bricks;
use sweepcast::glam::{DVec3, Vec3};
use sweepcast::{MovingSphere, PeriodicBox, SweepOptions};
use sweepcast_mpi::{MpiStep, Owned};

/// The gas's number density (bodies a unit volume), radius and largest displacement a
/// component: a dilute hard-sphere gas, as the examples' gases.
const DENSITY: f64 = 0.2;
const RADIUS: f32 = 0.5;
const SPEED: f64 = 0.5;

fn main() {
    sweepcast_mpi::exit_on_panic();
    let universe = mpi::initialize().expect("MPI initialises once a process");
    let world = universe.world();
    let mut args = std::env::args().skip(1);
    let per_rank: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let steps: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(9);
    let ranks = world.size() as usize;
    let side = (per_rank as f64 / DENSITY).cbrt();
    let period = Vec3::new((side * ranks as f64) as f32, side as f32, side as f32);
    let periodic_box = PeriodicBox::new(period).expect("a valid box");
    let options = SweepOptions::default().with_periodic_box(periodic_box);
    let bricks = Bricks::new([0.0; 3], [0.0; 3], [ranks as u32, 1, 1], &options).expect("bricks");
    let mut step = MpiStep::new(&world, bricks).expect("one rank a brick");
    // Every rank makes only its own bodies: the same numbers for rank r on any run.
    let mut rng = sweepcast_rng(1 + world.rank() as u64);
    let lower = side * f64::from(world.rank());
    let mut owned = Owned::default();
    for k in 0..per_rank {
        let unit = DVec3::new(rng(), rng(), rng());
        let center = DVec3::new(lower + unit.x * side, unit.y * side, unit.z * side);
        let displacement = (DVec3::new(rng(), rng(), rng()) * 2.0 - DVec3::ONE) * SPEED;
        let body = MovingSphere::new(center.as_vec3(), RADIUS, displacement.as_vec3());
        // A centre rounded onto the next brick's face is not this rank's: left out.
        if step.bricks().owner(body.center) == step.brick() {
            owned.bodies.push(body);
            owned
                .global
                .push((world.rank() as usize * per_rank + k) as u32);
        }
    }
    let (mut step_times, mut exchange_times) = (Vec::new(), Vec::new());
    let (mut halo, mut bytes, mut contacts) = (0, 0, 0);
    for _ in 0..steps {
        let (answers, report) = step.find(&owned, &[], options).expect("a valid gas");
        let slowest = |time: Duration| {
            let mut max = 0.0f64;
            world.all_reduce_into(&time.as_secs_f64(), &mut max, SystemOperation::max());
            max
        };
        step_times.push(slowest(report.step));
        exchange_times.push(slowest(report.exchange));
        (halo, bytes, contacts) = (
            report.halo_bodies,
            report.bytes_sent,
            answers.contacts.len(),
        );
    }
    let median = |times: &mut Vec<f64>| {
        times.sort_by(f64::total_cmp);
        times[times.len() / 2] * 1e3
    };
    if world.rank() == 0 {
        println!(
            "{ranks} ranks, {per_rank} bodies a rank: step {:.2} ms, exchange {:.2} ms (medians of {steps}, slowest rank), halo {:.1} % of the bodies held ({halo} of {}), {:.2} MB sent, {contacts} contacts on rank 0",
            median(&mut step_times),
            median(&mut exchange_times),
            100.0 * halo as f64 / (halo + owned.bodies.len()) as f64,
            halo + owned.bodies.len(),
            bytes as f64 / 1e6,
        );
    }
}

/// SplitMix64 from `seed`, as uniform numbers in [0, 1).
fn sweepcast_rng(seed: u64) -> impl FnMut() -> f64 {
    let mut state = seed;
    move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}
