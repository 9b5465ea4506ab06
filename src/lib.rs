//! # sweepcast
//!
//! When do moving circles and spheres first touch? sweepcast answers for millions of
//! candidate pairs per step on the GPU (wgpu, WGSL compute) and on the CPU, and proves the two
//! agree with an f64 oracle.
//!
//! The crate, top to bottom:
//!
//! * The bodies ([`MovingCircle`], [`MovingSphere`], [`Circle`], [`Sphere`], [`Wall`]) and
//!   the answers ([`Impact`], [`TimeOfImpact`], [`EarliestImpact`] and its [`Partner`]).
//! * [`CollisionGroups`]: which pairs of bodies the steps and the event loop look at.
//! * [`SweepOptions`]: what every path takes besides the bodies (the separating option for
//!   event-driven simulations, a [`PeriodicBox`]).
//! * [`reference`](mod@reference): the f64 oracle, the swept test of the source documents made
//!   numerically stable.
//! * [`cpu`]: the f32 twin of each shader, line for line, the shape-named single-pair
//!   queries and the batched CPU paths.
//! * [`gpu`]: [`gpu::GpuContext`], the blocking [`gpu::SweepPipeline`] (your pairs), and the
//!   whole step from the bodies alone ([`gpu::ContactPipeline`]: broad phase, sweep, ordered
//!   contacts).
//! * [`events`]: an event loop in f64 for event-driven simulations (advance to the earliest
//!   impact, resolve it, predict again), with neighbour lists kept by skins, one next event
//!   a body, a grid broad phase ([`events::Cells`]) and an elastic response.
//! * [`parity`]: the backward-error judge the f32 paths are held to, for checking any
//!   driver's answers against the oracle.
//! * [`low_level`]: the builders' door, for those who record sweepcast into their own GPU
//!   work or extend and check its shaders: the stages that record into a caller's encoder on
//!   the caller's buffers ([`low_level::StepStage`], [`low_level::SweepStage`]) and the data
//!   contract those buffers follow (`shaders/shared.wgsl`), each shader's f32 twin and
//!   source, the validation the batched paths run and the batches' tuning.
//!
//! # Example
//! ```
//! use sweepcast::glam::Vec3;
//! use sweepcast::{cpu, ImpactStatus, MovingSphere, SweepOptions};
//!
//! // Two unit spheres 10 apart, closing at 8 per step: the gap of 8 closes at t = 1.
//! let a = MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(4.0, 0.0, 0.0));
//! let b = MovingSphere::new(Vec3::new(10.0, 0.0, 0.0), 1.0, Vec3::new(-4.0, 0.0, 0.0));
//! let impact = cpu::sweep_sphere_sphere(&a, &b, SweepOptions::default())
//!     .expect("touching at t = 1 is a hit");
//! assert_eq!(impact.time_of_impact, 1.0);
//! assert_eq!(impact.status, ImpactStatus::Contact);
//! assert_eq!(impact.normal, Vec3::X);
//! assert_eq!(impact.point, Vec3::new(5.0, 0.0, 0.0));
//! ```
//!
//! # Features
//!
//! | Feature | Default | Enables | Brings |
//! |---|---|---|---|
//! | `gpu` | yes | [`gpu`] (the device and the blocking pipelines), the resident stages in [`low_level`], the GPU step as an event loop's broad phase, the re-exported `wgpu` | wgpu, lampshade, pollster, futures-intrusive |
//! | `parallel` | yes | the CPU paths on all cores; without it they run on the calling thread with the same answers, to the bit | rayon |
//! | `serde` | no | `Serialize` and `Deserialize` on the bodies, walls, options, impacts, contacts and events | serde, and glam's `serde` |
//!
//! `default-features = false, features = ["parallel"]` is the CPU-only build (a server, or a
//! game without GPU compute): no wgpu and no shader compiler in the dependency tree.
//!
//! # Versions and the re-exported crates
//!
//! The API takes and gives [`glam`] vectors and, with `gpu`, `wgpu` devices, buffers and
//! encoders; both are re-exported (`sweepcast::glam`, `sweepcast::wgpu`) so that a caller
//! uses the versions sweepcast was built with. While sweepcast is below 1.0, a new major
//! version of wgpu or a new minor version of glam (0.x) is a new minor version of sweepcast
//! (0.2 to 0.3), never a patch release; sweepcast's own breaking changes follow the same
//! rule. No wgpu type appears in [`Error`]: an error wgpu reported is held as its source
//! (a boxed `std::error::Error`), so the error type does not change with wgpu.
//!
//! Work in f32 relative to a local origin when the world is large: a coordinate of
//! magnitude `m` carries a rounding of `m · 2⁻²⁴`, and the answers are exact for inputs
//! within a few such roundings (see [`parity`]); centring the step's bodies near the origin
//! keeps that small beside the bodies' sizes.
//!
//! # Which path
//!
//! * One pair: [`cpu::sweep_sphere_sphere`], [`cpu::sweep_circle_circle`], a body against a
//!   static [`Wall`] ([`cpu::sweep_sphere_wall`]). These do no validation: NaN input gives
//!   `None`, and components beyond [`low_level::MAX_MAGNITUDE`] may give a wrong answer; check
//!   with [`low_level::validate_body`] and [`low_level::validate_periodic_reach`], or use a
//!   batch.
//! * Candidate pairs you already have: [`cpu::sweep_batch`] (the full answer),
//!   [`cpu::times_of_impact_into`] (4 bytes a pair, on SIMD lanes), a [`cpu::World`] packed
//!   once for many small batches a step, or [`gpu::SweepPipeline`] on the GPU.
//! * The whole step from the bodies alone (broad phase, sweep, contacts in time order, each
//!   body's earliest): [`cpu::find_contacts`] or a [`cpu::ContactFinder`] kept from step to
//!   step; [`gpu::ContactPipeline`] on the GPU, which gives the same contacts.
//! * Bodies that live in a GPU buffer, laid out by the data contract
//!   ([`low_level::layout::BodyRecord`]): [`low_level::StepStage`] (the whole step) and
//!   [`low_level::SweepStage`] (your own pairs) record into your command encoder, on your
//!   device.
//! * A simulation advanced impact by impact, in f64: [`events::EventLoop`].
//!
//! Every path takes one [`SweepOptions`]: [`SweepOptions::event_driven`] for a simulation that
//! resolves its collisions (a pair touching at t = 0 while separating is a miss), and
//! [`SweepOptions::with_periodic_box`] for a world that wraps ([`PeriodicBox`]).
//!
//! # What counts as a hit
//!
//! Two bodies touch if at some `t ∈ [0, 1]` their centres are at most the radius sum apart.
//! The answer is the first such `t`: touching exactly at `t = 1`, or tangentially, is a hit.
//! A pair that overlaps at `t = 0` reports `t = 0` and [`ImpactStatus::Overlapping`]; one
//! that touches exactly at `t = 0` reports `t = 0` and [`ImpactStatus::Contact`].
//!
//! # Guarantees
//!
//! For valid input (every component finite and at most [`low_level::MAX_MAGNITUDE`] =
//! `f32::MAX / 8` in magnitude, radii at least 0, pair indices in range):
//!
//! * **The bound.** Every answer of every f32 path passes the backward-error bound against
//!   the f64 oracle ([`reference`](mod@reference)): [`parity::CPU_BOUND`] = 8 ε on the CPU,
//!   [`parity::GPU_BOUND`] = 16 ε on the GPU. A reported miss never comes closer than the
//!   radius sum less the bound; a reported contact touches at its time and at no earlier one.
//! * **Always finite.** Times in [0, 1], unit normals, finite points; no NaN and no panic,
//!   from subnormal bodies to the limit, and bodies far from the origin keep the bound of
//!   the origin (each pair is rescaled by a power of two, and nothing squares an absolute
//!   coordinate).
//! * **CPU and GPU agree.** The fast batch gives the twin's time to the bit wherever both
//!   report a contact; the GPU step finds the CPU step's contacts (on Mesa's lavapipe their
//!   pairs and times to the bit; where the device's division and square root are not
//!   correctly rounded, times within the GPU's bound).
//! * **Bad input is a typed [`Error`]**, returned before any work, naming the body or pair;
//!   nothing is dropped or truncated, and nothing bad reaches the GPU.
//! * **Bounded work and memory.** The CPU step's output is limited in bytes
//!   ([`Error::OutputLimit`]), the GPU step's buffers to one binding each
//!   ([`Error::CapacityExceeded`]), the event loop's work, events and partners to stated
//!   limits; a wait for the device past its timeout is [`Error::Timeout`].
//!
//! The repository's `docs/guarantees.md` lists every promise with the tests that hold it, and
//! every bad input with its error.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// Without `gpu`, the links of the CPU modules' docs to their GPU counterparts
// (`crate::gpu::…`) have nothing to point to; the builds with `gpu` (docs.rs's among them)
// check every link.
#![cfg_attr(not(feature = "gpu"), allow(rustdoc::broken_intra_doc_links))]

mod answers;
mod arrays;
pub mod bricks;
mod contact_step;
pub mod cpu;
mod error;
pub mod events;
mod geometry;
#[cfg(feature = "gpu")]
#[cfg_attr(docsrs, doc(cfg(feature = "gpu")))]
pub mod gpu;
mod groups;
mod layout;
mod limits;
pub mod low_level;
mod options;
mod par;
pub mod parity;
pub mod reference;
mod validate;

/// The vector types of the API: glam 0.34, re-exported so that callers use the same version.
pub use glam;
/// The GPU API the stages take and give (devices, buffers, encoders): wgpu 30, re-exported so
/// that callers use the same version. A new wgpu major release is a new minor release of
/// sweepcast while sweepcast is below 1.0 (see the crate docs' [semver
/// policy](crate#versions-and-the-re-exported-crates)).
#[cfg(feature = "gpu")]
#[cfg_attr(docsrs, doc(cfg(feature = "gpu")))]
pub use wgpu;

pub use answers::{EarliestImpact, TimeOfImpact};
pub use contact_step::{Contact, ContactStep, Contacts, StageTimes};
pub use error::{BodyField, Counted, Error};
pub use geometry::{
    Circle, Impact, ImpactStatus, MovingCircle, MovingSphere, Partner, Sphere, Wall,
};
pub use groups::CollisionGroups;
pub use options::{PeriodicBox, SweepOptions};

/// The README's Rust examples, compiled and run as doctests (with the `gpu` feature, which
/// its GPU examples need).
#[doc = include_str!("../README.md")]
#[cfg(all(doctest, feature = "gpu"))]
pub struct ReadmeDoctests;

/// The Rust examples of `docs/guide.md`, compiled and run as doctests (with the `gpu`
/// feature, which its GPU examples need).
#[doc = include_str!("../docs/guide.md")]
#[cfg(all(doctest, feature = "gpu"))]
pub struct GuideDoctests;

/// The Rust examples of `docs/step.md`, compiled and run as doctests (with the `gpu`
/// feature).
#[doc = include_str!("../docs/step.md")]
#[cfg(all(doctest, feature = "gpu"))]
pub struct StepDoctests;
