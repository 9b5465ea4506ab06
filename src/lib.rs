//! # sweepcast
//!
//! When do moving circles and spheres first touch? sweepcast answers for millions of
//! candidate pairs per step on the GPU (wgpu, WGSL compute) and on the CPU, and proves the two
//! agree with an f64 oracle.
//!
//! The pipeline, top to bottom:
//!
//! * [`geometry`]: the bodies ([`MovingCircle`], [`MovingSphere`], ...) and the [`Impact`].
//! * [`reference`](mod@reference): the f64 oracle, the swept test of the source documents made numerically
//!   stable.
//! * [`cpu`]: the f32 twin of each shader, line for line, and the batched CPU path.
//! * [`gpu`]: [`gpu::GpuContext`] and [`gpu::SweepPipeline`], which runs `shaders/sweep.wgsl`.
//! * [`parity`]: the backward-error bound the f32 paths are held to.
//! * [`workload`]: reproducible random and adversarial inputs.
//!
//! # Example
//! ```
//! use glam::Vec3;
//! use sweepcast::{cpu, ImpactStatus, MovingSphere};
//!
//! // Two unit spheres 10 apart, closing at 8 per step: the gap of 8 closes at t = 1.
//! let a = MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(4.0, 0.0, 0.0));
//! let b = MovingSphere::new(Vec3::new(10.0, 0.0, 0.0), 1.0, Vec3::new(-4.0, 0.0, 0.0));
//! let impact = cpu::sweep(&a, &b).expect("touching at t = 1 is a hit");
//! assert_eq!(impact.time_of_impact, 1.0);
//! assert_eq!(impact.status, ImpactStatus::Contact);
//! assert_eq!(impact.normal, Vec3::X);
//! assert_eq!(impact.point, Vec3::new(5.0, 0.0, 0.0));
//! ```

#![warn(missing_docs)]

pub mod cpu;
mod error;
pub mod geometry;
pub mod gpu;
pub mod parity;
pub mod reference;
mod validate;
pub mod workload;

pub use error::{BodyField, Error};
pub use geometry::{Circle, Impact, ImpactStatus, MovingCircle, MovingSphere, Sphere};
pub use validate::{MAX_MAGNITUDE, validate_bodies, validate_body, validate_pairs};

/// The README's Rust examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
