//! # sweepcast
//!
//! When do moving circles and spheres first touch? sweepcast answers for millions of
//! candidate pairs per step on the GPU (wgpu, WGSL compute) and on the CPU, and proves the two
//! agree with an f64 oracle.
//!
//! The crate, top to bottom:
//!
//! * [`geometry`]: the bodies ([`MovingCircle`], [`MovingSphere`], ...) and the [`Impact`].
//! * [`SweepOptions`]: what every path takes besides the bodies (the separating option for
//!   event-driven simulations, a [`PeriodicBox`]).
//! * [`layout`]: the data contract shared by the shaders (`shaders/shared.wgsl`), their CPU
//!   twins, the batched CPU paths and validation.
//! * [`reference`](mod@reference): the f64 oracle, the swept test of the source documents made
//!   numerically stable.
//! * [`cpu`]: the f32 twin of each shader, line for line, the shape-named single-pair
//!   queries and the batched CPU paths.
//! * [`gpu`]: [`gpu::GpuContext`], the stages that record into a caller's encoder
//!   ([`gpu::SweepStage`]), the blocking [`gpu::SweepPipeline`], and the whole step from the
//!   bodies alone ([`gpu::ContactPipeline`]: broad phase, sweep, ordered contacts).
//! * [`events`]: an event loop in f64 for event-driven simulations (advance to the earliest
//!   impact, resolve it, predict again), with neighbour lists kept by skins, one next event
//!   a body, a grid broad phase ([`events::Cells`]) and an elastic response.
//! * [`parity`]: the backward-error judge the f32 paths are held to, for checking any
//!   driver's answers against the oracle.
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
//! | `gpu` | yes | [`gpu`] (the device, its stages and pipelines), the GPU step as an event loop's broad phase, the re-exported `wgpu` | wgpu, lampshade, pollster, futures-intrusive |
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

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// Without `gpu`, the links of the CPU modules' docs to their GPU counterparts
// (`crate::gpu::…`) have nothing to point to; the builds with `gpu` (docs.rs's among them)
// check every link.
#![cfg_attr(not(feature = "gpu"), allow(rustdoc::broken_intra_doc_links))]

pub mod cpu;
mod error;
pub mod events;
pub mod geometry;
#[cfg(feature = "gpu")]
#[cfg_attr(docsrs, doc(cfg(feature = "gpu")))]
pub mod gpu;
pub mod layout;
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

pub use error::{BodyField, Counted, Error};
pub use geometry::{Circle, Impact, ImpactStatus, MovingCircle, MovingSphere, Sphere, Wall};
pub use options::{PeriodicBox, SweepOptions};
pub use validate::{
    MAX_MAGNITUDE, MAX_PERIODS, validate_bodies, validate_body, validate_pairs,
    validate_periodic_reach, validate_walls,
};

/// The README's Rust examples, compiled and run as doctests (with the `gpu` feature, which
/// its GPU examples need).
#[doc = include_str!("../README.md")]
#[cfg(all(doctest, feature = "gpu"))]
pub struct ReadmeDoctests;
