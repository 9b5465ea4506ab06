//! The CPU paths in f32: the twin of each shader ([`sweep`](crate::low_level::sweep) mirrors
//! `shaders/sweep.wgsl`, entry points included; [`frame`](crate::low_level::frame),
//! [`grid`](crate::low_level::grid) and [`contacts`](crate::low_level::contacts) those of
//! `shaders/frame.wgsl`, `grid.wgsl` and `contacts.wgsl`), the shape-named
//! single-pair queries built on it, the batched paths and the whole step.
//!
//! See also [`crate::reference`] for the f64 oracle and [`crate::gpu`] for the same sweep
//! on the GPU.
//!
//! Used by: the README's quick start, `docs/guide.md`, `docs/step.md` ("On the CPU").

mod bvh;
pub(crate) mod contacts;
pub(crate) mod frame;
pub(crate) mod grid;
pub(crate) mod lanes;
mod memory;
mod scatter;
mod sort;
pub(crate) mod step;
pub(crate) mod sweep;
mod wall_contacts;
pub(crate) mod walls;
pub(crate) mod world;

pub(crate) use crate::contact_step::Contact;
#[cfg(feature = "gpu")]
pub(crate) use crate::contact_step::Contacts;
#[cfg(feature = "gpu")]
pub(crate) use crate::contact_step::Earliest;
pub(crate) use lanes::Simd;
pub use step::{ContactFinder, find_contacts};
#[cfg(feature = "gpu")]
pub(crate) use wall_contacts::wall_contact;
pub(crate) use wall_contacts::{wall_contacts_into, wall_records_into};
pub use world::World;

use std::cell::Cell;

use crate::answers::TimeOfImpact;
use crate::error::Error;

use crate::geometry::{Impact, MovingCircle, MovingSphere, Wall};
use crate::layout::{BodyRecord, SweepParams, WallContactRecord, WallParams, WallRecord};
use crate::options::SweepOptions;

/// When two moving spheres first touch during the step.
///
/// Used by: `docs/guide.md` (the separating option), `examples/fast_path.rs`,
/// `examples/tunneling.rs` (its rocks, in `examples/tunnel/mod.rs`).
///
/// # Arguments
/// * `a`, `b`: the two bodies; any of [`MovingSphere`], [`Sphere`](crate::Sphere) (which
///   does not move), or their 2D forms [`MovingCircle`] and [`Circle`](crate::Circle) (see
///   also [`sweep_circle_circle`]).
/// * `options`: [`SweepOptions::default()`] for the plain answer; the separating option and
///   a periodic box as documented there.
///
/// # Returns
/// `None` when they stay apart for the whole step; otherwise the [`Impact`] at the first
/// time they touch, or at t = 0 with [`ImpactStatus::Overlapping`](crate::ImpactStatus) when
/// they already overlap. Inputs are not validated here: NaN gives `None`, and components
/// beyond [`MAX_MAGNITUDE`](crate::low_level::MAX_MAGNITUDE) (or bodies too large for the periodic box)
/// may give wrong answers. Use [`sweep_batch`] (or [`crate::low_level::validate_body`]) for checked
/// input.
///
/// # Example
/// ```
/// use sweepcast::glam::Vec3;
/// use sweepcast::{cpu, MovingSphere, Sphere, SweepOptions};
///
/// // A sphere of radius 1 moving 10 along x towards a resting sphere 5 away.
/// let a = MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(10.0, 0.0, 0.0));
/// let b = Sphere::new(Vec3::new(5.0, 0.0, 0.0), 1.0);
/// let impact = cpu::sweep_sphere_sphere(&a, &b, SweepOptions::default()).expect("they collide");
/// assert!((impact.time_of_impact - 0.3).abs() < 1e-6); // the gap of 3 closes at t = 0.3
/// ```
///
/// See also [`crate::reference::sweep_sphere_sphere`], the f64 oracle of the same test.
#[must_use]
pub fn sweep_sphere_sphere<A, B>(a: &A, b: &B, options: SweepOptions) -> Option<Impact>
where
    A: Copy + Into<MovingSphere>,
    B: Copy + Into<MovingSphere>,
{
    let (a, b) = (BodyRecord::from((*a).into()), BodyRecord::from((*b).into()));
    sweep::sweep_pair(&a, &b, &SweepParams::new(&options, 0)).to_impact(&a, &b)
}

/// When two moving circles first touch during the step: [`sweep_sphere_sphere`] in the
/// plane z = 0 (every vector of the [`Impact`] has z = 0).
///
/// Used by: the README's quick start (one pair).
///
/// # Example
/// ```
/// use sweepcast::glam::Vec2;
/// use sweepcast::{cpu, MovingCircle, SweepOptions};
///
/// let a = MovingCircle::new(Vec2::ZERO, 1.0, Vec2::new(10.0, 0.0));
/// let b = MovingCircle::new(Vec2::new(5.0, 0.0), 1.0, Vec2::ZERO);
/// let impact = cpu::sweep_circle_circle(&a, &b, SweepOptions::default()).expect("they collide");
/// assert!((impact.time_of_impact - 0.3).abs() < 1e-6);
/// ```
#[must_use]
pub fn sweep_circle_circle(
    a: &MovingCircle,
    b: &MovingCircle,
    options: SweepOptions,
) -> Option<Impact> {
    sweep_sphere_sphere(a, b, options)
}

/// When a moving sphere (or circle) first touches a static [`Wall`] during the step: a
/// segment (its interior or either end point) or a plane (solid behind it).
///
/// Used by: `docs/guide.md` ("Walls: segments and planes"), `examples/tunneling.rs` (its plates, in
/// `examples/tunnel/mod.rs`).
///
/// # Returns
/// `None` when the body stays clear of the wall for the whole step; otherwise the [`Impact`]
/// with the body first and the wall second: the normal points from the body's centre towards
/// the wall, the point is on the body's surface, `displacement_b` is zero. A body already
/// touching or overlapping the wall at t = 0 is reported at t = 0
/// ([`ImpactStatus::Overlapping`](crate::ImpactStatus) for an overlap, also for a centre
/// behind a plane), or is a miss under the separating option when it is not moving towards
/// the wall. In a periodic box in `options`, the wall lies in the box's primary cell and the
/// body meets it when its image in the cell does, across any faces it crosses in the step
/// (see [`crate::reference::sweep_sphere_wall`]; an overlap found where the image enters
/// the cell after t = 0 is a contact then). Inputs are not validated here (a plane with a
/// zero normal is a miss; beyond the periodic box's reach, one crossing an axis is followed);
/// [`earliest_wall_contacts`] validates.
///
/// # Example
/// ```
/// use sweepcast::glam::{Vec2, Vec3};
/// use sweepcast::{cpu, MovingCircle, MovingSphere, SweepOptions, Wall};
///
/// // A ball of radius 1 rolling along x towards a cushion at x = 5 from y = -2 to y = 2.
/// let ball = MovingCircle::new(Vec2::ZERO, 1.0, Vec2::new(8.0, 0.0));
/// let cushion = Wall::segment(Vec2::new(5.0, -2.0), Vec2::new(5.0, 2.0));
/// let impact = cpu::sweep_sphere_wall(&ball, &cushion, SweepOptions::default())
///     .expect("the gap of 4 closes at t = 0.5");
/// assert_eq!(impact.time_of_impact, 0.5);
/// assert_eq!(impact.normal, Vec3::X);
/// assert_eq!(impact.point, Vec3::new(5.0, 0.0, 0.0));
///
/// // A sphere falling onto the floor y = 0.
/// let falling = MovingSphere::new(Vec3::new(0.0, 3.0, 0.0), 1.0, Vec3::new(0.0, -4.0, 0.0));
/// let floor = Wall::plane(Vec3::ZERO, Vec3::Y);
/// let impact = cpu::sweep_sphere_wall(&falling, &floor, SweepOptions::default()).unwrap();
/// assert_eq!(impact.time_of_impact, 0.5);
/// assert_eq!(impact.normal, Vec3::NEG_Y);
/// ```
///
/// See also [`crate::reference::sweep_sphere_wall`], the f64 oracle of the same test, and
/// [`walls::main`], the twin of the shader's entry point this calls.
#[must_use]
pub fn sweep_sphere_wall<B>(body: &B, wall: &Wall, options: SweepOptions) -> Option<Impact>
where
    B: Copy + Into<MovingSphere>,
{
    let body = BodyRecord::from((*body).into());
    let params = WallParams::new(&options, 1, 1);
    let mut contact = [WallContactRecord::default()];
    walls::main(0, &[body], &[WallRecord::from(wall)], &mut contact, &params);
    contact[0].impact.to_impact(&body, &BodyRecord::default())
}

/// Each body's earliest impact on any of `walls` during the step, in parallel on all cores:
/// the twin of the walls shader's entry point (`walls::main`) on every body. In a periodic
/// box, of the body's image in the box's primary cell, where the walls lie (see
/// [`sweep_sphere_wall`]).
///
/// Used by: `docs/guide.md` ("Walls: segments and planes").
///
/// # Errors
/// [`Error::NonFinite`], [`Error::TooLarge`] or [`Error::NegativeRadius`] for a bad body,
/// [`Error::PeriodicBoxTooSmall`] or [`Error::OutsidePeriodicBox`] for a body that does not
/// fit the options' periodic box ([`crate::low_level::validate_periodic_reach`]),
/// [`Error::InvalidWall`] for a bad wall (a non-finite or too large coordinate, a plane with
/// a zero normal, or more walls than `u32` indices name), [`Error::TooManyBodies`] beyond
/// `u32` indices. No walls, or no bodies, give no contacts.
///
/// # Example
/// ```
/// use sweepcast::glam::{Vec2, Vec3};
/// use sweepcast::{cpu, MovingCircle, SweepOptions, Wall};
///
/// let table = Wall::rectangle_interior(Vec2::ZERO, Vec2::new(20.0, 10.0));
/// let balls = [
///     MovingCircle::new(Vec2::new(10.0, 5.0), 1.0, Vec2::new(12.0, 0.0)), // reaches x = 19 at 0.75
///     MovingCircle::new(Vec2::new(10.0, 5.0), 1.0, Vec2::new(1.0, 1.0)),  // stays clear
/// ];
/// let contacts = cpu::earliest_wall_contacts(&balls, &table, SweepOptions::default())?;
/// let first = contacts[0].expect("the first ball reaches the side x = 20");
/// assert_eq!((first.wall(), first.impact.time_of_impact), (Some(1), 0.75));
/// assert!(contacts[1].is_none());
/// # Ok::<(), sweepcast::Error>(())
/// ```
pub fn earliest_wall_contacts<B>(
    bodies: &[B],
    walls: &[Wall],
    options: SweepOptions,
) -> Result<Vec<Option<Contact>>, Error>
where
    B: Copy + Into<MovingSphere> + Sync,
{
    // Each contact names its body by a `u32` index: more bodies would wrap it.
    let most = u32::MAX as usize + 1;
    if bodies.len() > most {
        return Err(Error::TooManyBodies {
            count: bodies.len(),
            max: most,
        });
    }
    crate::validate::validate_bodies(bodies)?;
    if let Some(periodic_box) = &options.periodic_box {
        crate::validate::validate_periodic_reach(bodies, periodic_box)?;
    }
    let mut records = Vec::new();
    wall_records_into(walls, &mut records)?;
    let bodies: Vec<BodyRecord> = bodies.iter().map(|&body| body.into().into()).collect();
    let mut contacts = Vec::new();
    wall_contacts_into(&bodies, &records, &options, &mut contacts);
    Ok(contacts)
}

/// Sweeps every candidate pair, in parallel on all cores (rayon) above
/// [`SERIAL_PAIRS`](crate::low_level::SERIAL_PAIRS) pairs, giving exactly the answers of the shader's f32 twin
/// ([`sweep_sphere_sphere`] on each pair).
///
/// Each pair's hit or miss and time come from the branch-free lanes of
/// [`times_of_impact_into`] (with the twin's reach escape); the normal is computed on the
/// same lanes for every block of pairs with a hit, and the contact point per hit, each with
/// the twin's operations in the twin's order, so that every answer is the twin's to the bit
/// and a batch that mostly misses costs little more than its times. A simulation that
/// sweeps several batches a step builds a [`World`] once instead.
///
/// Every pair given is swept: the caller chose them, and no
/// [`CollisionGroups`](crate::CollisionGroups) filter them (as for the single-pair queries;
/// the steps filter their candidates).
///
/// Used by: `docs/guide.md` ("Batches of candidate pairs"), `python/src/step.rs` (`sweep` with
/// `full=True`).
///
/// # Arguments
/// * `bodies`: the moving bodies.
/// * `pairs`: candidate pairs, each two indices into `bodies`.
/// * `options`: see [`SweepOptions`].
///
/// # Returns
/// One entry per pair, in order: `None` for a miss, else the [`Impact`].
///
/// # Errors
/// The same typed errors as the GPU path, before any work is done:
/// [`Error::NonFinite`], [`Error::TooLarge`], [`Error::NegativeRadius`],
/// [`Error::PeriodicBoxTooSmall`], [`Error::PairIndexOutOfRange`].
pub fn sweep_batch<B>(
    bodies: &[B],
    pairs: &[[u32; 2]],
    options: SweepOptions,
) -> Result<Vec<Option<Impact>>, Error>
where
    B: Copy + Into<MovingSphere> + Sync,
{
    let mut impacts = Vec::new();
    sweep_batch_into(bodies, pairs, options, &mut impacts)?;
    Ok(impacts)
}

/// [`sweep_batch`] into a vector the caller keeps, so a simulation allocates nothing per step
/// once the vector has grown to its batch size.
///
/// Used by: `examples/headless.rs`, `examples/fast_path.rs`, `examples/compare.rs`.
///
/// # Errors
/// As [`sweep_batch`]; `impacts` is left empty on error.
pub fn sweep_batch_into<B>(
    bodies: &[B],
    pairs: &[[u32; 2]],
    options: SweepOptions,
    impacts: &mut Vec<Option<Impact>>,
) -> Result<(), Error>
where
    B: Copy + Into<MovingSphere> + Sync,
{
    impacts.clear();
    with_world(bodies, options, |world| world.sweep_into(pairs, impacts))
}

/// Runs `sweep` on a world of `bodies` kept per thread, so that the slice-taking paths,
/// called every step, allocate nothing once it has grown to the body count.
fn with_world<B>(
    bodies: &[B],
    options: SweepOptions,
    sweep: impl FnOnce(&World) -> Result<(), Error>,
) -> Result<(), Error>
where
    B: Copy + Into<MovingSphere>,
{
    thread_local! {
        static WORLD: Cell<World> = const { Cell::new(World::EMPTY) };
    }
    // Taken, not borrowed: a call nested in another on the same thread (a rayon task stolen
    // while this one waits) gets an empty world of its own instead of a borrow panic.
    let mut world = WORLD.take();
    let result = world.update(bodies, options).and_then(|()| sweep(&world));
    WORLD.set(world);
    result
}

/// The fast batch: only the time and status of each pair, vectorised across blocks of up to
/// [`LANES`](crate::low_level::LANES) pairs (see [`Simd`]) and parallel on all cores.
///
/// Same test and same typed errors as [`sweep_batch`], 4 bytes a pair out instead of an
/// [`Impact`]. Where both report a contact the time is the same to the bit; at a contact
/// within rounding of t = 1 it may report a contact where [`sweep_batch`]'s reach escape
/// reported a miss (both are within the parity bound).
///
/// Used by: `docs/guide.md` ("The fast batch and `World`"), `examples/headless.rs`,
/// `examples/fast_path.rs`.
///
/// # Errors
/// As [`sweep_batch`]; `times` is left empty on error.
///
/// # Example
/// ```
/// use sweepcast::glam::Vec3;
/// use sweepcast::{cpu, ImpactStatus, MovingSphere, SweepOptions};
///
/// let bodies = [
///     MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(10.0, 0.0, 0.0)),
///     MovingSphere::new(Vec3::new(5.0, 0.0, 0.0), 1.0, Vec3::ZERO),
///     MovingSphere::new(Vec3::new(0.0, 1.0, 0.0), 1.0, Vec3::ZERO),
/// ];
/// let mut times = Vec::new();
/// cpu::times_of_impact_into(&bodies, &[[0, 1], [0, 2], [1, 2]], SweepOptions::default(), &mut times)?;
/// assert_eq!(times[0].get(), Some((0.3, ImpactStatus::Contact)));
/// assert_eq!(times[1].get(), Some((0.0, ImpactStatus::Overlapping)));
/// assert_eq!(times[2].get(), None);
/// # Ok::<(), sweepcast::Error>(())
/// ```
pub fn times_of_impact_into<B>(
    bodies: &[B],
    pairs: &[[u32; 2]],
    options: SweepOptions,
    times: &mut Vec<TimeOfImpact>,
) -> Result<(), Error>
where
    B: Copy + Into<MovingSphere> + Sync,
{
    times.clear();
    with_world(bodies, options, |world| {
        world.times_of_impact_into(pairs, times)
    })
}
