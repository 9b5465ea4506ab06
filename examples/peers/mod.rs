//! The methods users would otherwise pick, on the same bodies and pairs as sweepcast: parry's
//! ball–ball shape cast (f32 and f64, through the generic `cast_shapes` and through its
//! ball-specific path) and the seeds' time-sliced method. Shared by `examples/compare.rs`
//! and `benches/sweep.rs`; not part of the library API.

#![allow(dead_code)] // each user takes what it needs

use rayon::prelude::*;
use sweepcast::MovingSphere;
use testkit::{Workload, WorkloadConfig};

/// The workloads on which the fast path meets parry's ball-specific cast, in `cargo bench`
/// and `examples/fast_path.rs`: the lattice (25,000 bodies, 200,000 neighbour pairs, seed 1)
/// and 100,000 bullets (seed 1), with a one-thread pool to run them on one core.
pub fn fast_path_workloads() -> ([(&'static str, Workload); 2], rayon::ThreadPool) {
    let lattice = Workload::random(&WorkloadConfig {
        bodies: 25_000,
        pairs: 200_000,
        seed: 1,
        ..Default::default()
    });
    let single = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");
    let workloads = [
        ("lattice", lattice),
        ("bullets", Workload::bullets(100_000, 1)),
    ];
    (workloads, single)
}

/// One method's answer per pair: the time of first contact, or `None` for a miss.
pub type Times = Vec<Option<f64>>;

fn pair_bodies<'a>(
    bodies: &'a [MovingSphere],
    pair: &[u32; 2],
) -> (&'a MovingSphere, &'a MovingSphere) {
    (&bodies[pair[0] as usize], &bodies[pair[1] as usize])
}

/// `query::cast_shapes` with two `Ball`s, the generic entry point a user calls, from the
/// parry crate `$parry` (f32 or f64; inputs are widened exactly).
macro_rules! parry_cast_shapes {
    ($name:ident, $parry:ident, $doc:literal) => {
        #[doc = $doc]
        pub fn $name(bodies: &[MovingSphere], pairs: &[[u32; 2]]) -> Times {
            use $parry::math::{Pose, Vector};
            use $parry::query::{ShapeCastOptions, cast_shapes};
            use $parry::shape::Ball;
            let vector = |v: glam::Vec3| Vector::new(v.x.into(), v.y.into(), v.z.into());
            pairs
                .par_iter()
                .map(|pair| {
                    let (a, b) = pair_bodies(bodies, pair);
                    let hit = cast_shapes(
                        &Pose::from_translation(vector(a.center)),
                        vector(a.displacement),
                        &Ball::new(a.radius.into()),
                        &Pose::from_translation(vector(b.center)),
                        vector(b.displacement),
                        &Ball::new(b.radius.into()),
                        ShapeCastOptions::with_max_time_of_impact(1.0),
                    )
                    .expect("ball-ball is supported");
                    hit.map(|hit| hit.time_of_impact.into())
                })
                .collect()
        }
    };
}

parry_cast_shapes!(
    parry_cast_shapes,
    parry3d,
    "parry3d (f32) `query::cast_shapes` with two `Ball`s."
);
parry_cast_shapes!(
    parry_f64_cast_shapes,
    parry3d_f64,
    "parry3d-f64 `query::cast_shapes` with two `Ball`s, on the f32 inputs widened exactly."
);

/// parry3d (f32) `query::details::cast_shapes_ball_ball`: its ball-specific path, given the
/// relative pose and velocity directly.
pub fn parry_ball_ball(bodies: &[MovingSphere], pairs: &[[u32; 2]]) -> Times {
    pairs
        .par_iter()
        .map(|pair| parry_ball_ball_time(bodies, pair).map(f64::from))
        .collect()
}

/// One pair of [`parry_ball_ball`]: the time of impact in parry's f32.
pub fn parry_ball_ball_time(bodies: &[MovingSphere], pair: &[u32; 2]) -> Option<f32> {
    use parry3d::math::{Pose, Vector};
    use parry3d::query::ShapeCastOptions;
    use parry3d::query::details::cast_shapes_ball_ball;
    use parry3d::shape::Ball;
    let (a, b) = pair_bodies(bodies, pair);
    let offset = b.center - a.center;
    let velocity = b.displacement - a.displacement;
    cast_shapes_ball_ball(
        &Pose::from_translation(Vector::new(offset.x, offset.y, offset.z)),
        Vector::new(velocity.x, velocity.y, velocity.z),
        &Ball::new(a.radius),
        &Ball::new(b.radius),
        ShapeCastOptions::with_max_time_of_impact(1.0),
    )
    .map(|hit| hit.time_of_impact)
}

/// The time-sliced method of the seeds' tutorial (`time-sliced-spheres.txt`): move both
/// bodies through `slices` equal sub-steps, test static overlap after each, and report the
/// slice before the first overlap. Unlike the tutorial, the radii are the bodies' own (it
/// hard-codes 2 x 20) and there is no pre-filter on the distance to the ray.
pub fn time_sliced(bodies: &[MovingSphere], pairs: &[[u32; 2]], slices: u32) -> Times {
    pairs
        .par_iter()
        .map(|pair| time_sliced_pair(bodies, pair, slices))
        .collect()
}

/// One pair of [`time_sliced`].
fn time_sliced_pair(bodies: &[MovingSphere], pair: &[u32; 2], slices: u32) -> Option<f64> {
    let (a, b) = pair_bodies(bodies, pair);
    let sum_radii = a.radius + b.radius;
    let step = 1.0 / slices as f32;
    (1..=slices).find_map(|slice| {
        let t = slice as f32 * step;
        let gap = (b.center + b.displacement * t) - (a.center + a.displacement * t);
        (gap.length_squared() <= sum_radii * sum_radii)
            .then(|| f64::from((slice - 1) as f32 * step))
    })
}
