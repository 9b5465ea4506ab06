//! The builders' door: for those who record sweepcast into their own GPU work, and for those
//! who extend or check its shaders.
//!
//! The front hall ([`crate::cpu`], [`crate::gpu`], [`crate::events`], the single-pair
//! queries) takes bodies and gives answers; a user of it does not need what is here. What is
//! here works one level down, on the device's buffers and the shaders' records:
//!
//! * With the `gpu` feature, the resident stages: [`StepStage`] (the whole step) and
//!   [`SweepStage`] (the sweep of the caller's pairs) record into the caller's command encoder
//!   on the caller's device and body buffer, which the caller lays out by [`layout`]; their
//!   buffers ([`StepBuffers`], [`SweepBuffers`], [`SweepOutput`]); and the stages a step
//!   composes, [`GridStage`] (each body's earliest contact, with [`GridBuffers`]),
//!   [`WallStage`] and [`ContactStage`], with their memory per item.
//!   `examples/resident_step.rs` and `docs/step.md` are their documented path.
//! * [`layout`]: the data contract of `shaders/shared.wgsl`, every record and constant: the
//!   records a resident stage's user binds (`BodyRecord`, `EarliestRecord`, `StepCounts`)
//!   are read and written from here.
//! * [`sweep`], [`walls`], [`frame`], [`grid`], [`contacts`]: the f32 twin of each shader
//!   (`shaders/sweep.wgsl`, `walls.wgsl`, `frame.wgsl`, `grid.wgsl`, `contacts.wgsl`), line
//!   for line, entry points included (sources `src/cpu/sweep.rs`, `walls.rs`, `frame.rs`,
//!   `grid.rs`, `contacts.rs`), so that a test, a fuzz target or a new stage can run each
//!   entry point on the CPU and diff it against the device.
//! * The validation the batched paths run ([`validate_bodies`], [`validate_pairs`],
//!   [`validate_walls`], [`validate_periodic_reach`], [`validate_body`]) and its bounds
//!   ([`MAX_MAGNITUDE`], [`MAX_PERIODS`]).
//! * The batches' tuning: the CPU batch's [`LANES`], [`Simd`], [`SERIAL_PAIRS`]; with the
//!   `gpu` feature, how `SweepPipeline` cuts a call into chunks ([`PIPELINE_CHUNKS`],
//!   [`PIPELINE_MIN_CHUNK`]).
//! * With the `gpu` feature: the shaders' sources ([`SHARED_WGSL`], ...); what a benchmark
//!   sees of a step's commands ([`record_step_observed`]); and [`host_profile`], where a
//!   blocking GPU call's host time goes.
//!
//! They follow the shaders and the device, not semver ergonomics: an item here may change
//! in any minor release, and the CHANGELOG says how.

/// The f32 twin of `shaders/sweep.wgsl`, line for line: same names, same operations in the
/// same order, entry points included (source `src/cpu/sweep.rs`).
pub mod sweep {
    pub use crate::cpu::sweep::*;
}

/// The f32 twin of `shaders/walls.wgsl`: each body's earliest impact on static walls
/// (source `src/cpu/walls.rs`).
pub mod walls {
    pub use crate::cpu::walls::*;
}

/// The f32 twin of `shaders/frame.wgsl`: the step's local frame made from the bodies, and
/// the helpers of `shaders/shared.wgsl` that place and box a body in it (source
/// `src/cpu/frame.rs`).
pub mod frame {
    pub use crate::cpu::frame::*;
}

/// The f32 twin of `shaders/grid.wgsl`: the grid broad phase in which each body finds, sweeps
/// and keeps its own earliest contact (source `src/cpu/grid.rs`).
pub mod grid {
    pub use crate::cpu::grid::*;
}

/// The f32 twin of `shaders/contacts.wgsl`: each body's earliest contact, the ordered
/// contacts and the step's counts (source `src/cpu/contacts.rs`).
pub mod contacts {
    pub use crate::cpu::contacts::*;
}

/// The data contract: Rust copies of the structs and constants of `shaders/shared.wgsl`,
/// byte for byte (source `src/layout.rs`; `tests/shaders.rs` checks each against the WGSL).
pub mod layout {
    pub use crate::layout::*;
}

pub use crate::cpu::lanes::{LANES, Simd};
pub use crate::cpu::world::SERIAL_PAIRS;
pub use crate::limits::MAX_MAGNITUDE;
pub use crate::validate::{
    MAX_PERIODS, validate_bodies, validate_body, validate_pairs, validate_periodic_reach,
    validate_walls,
};

#[cfg(feature = "gpu")]
#[cfg_attr(docsrs, doc(cfg(feature = "gpu")))]
pub use crate::gpu::contacts::{
    CONTACTS_WGSL, ContactBuffers, ContactInputs, ContactStage, EARLIEST_BYTES_PER_BODY,
    ORDERED_BYTES_PER_CONTACT,
};
#[cfg(feature = "gpu")]
#[cfg_attr(docsrs, doc(cfg(feature = "gpu")))]
pub use crate::gpu::frame::FRAME_WGSL;
#[cfg(feature = "gpu")]
#[cfg_attr(docsrs, doc(cfg(feature = "gpu")))]
pub use crate::gpu::grid::{GRID_WGSL, GridBuffers, GridStage};
#[cfg(feature = "gpu")]
#[cfg_attr(docsrs, doc(cfg(feature = "gpu")))]
pub use crate::gpu::host_profile::{HostSpan, host_profile};
#[cfg(feature = "gpu")]
#[cfg_attr(docsrs, doc(cfg(feature = "gpu")))]
pub use crate::gpu::kernel::SHARED_WGSL;
#[cfg(feature = "gpu")]
#[cfg_attr(docsrs, doc(cfg(feature = "gpu")))]
pub use crate::gpu::pipeline::{PIPELINE_CHUNKS, PIPELINE_MIN_CHUNK};
#[cfg(feature = "gpu")]
#[cfg_attr(docsrs, doc(cfg(feature = "gpu")))]
pub use crate::gpu::step::observed::{StepCommand, StepDomain, record_step_observed};
#[cfg(feature = "gpu")]
#[cfg_attr(docsrs, doc(cfg(feature = "gpu")))]
pub use crate::gpu::step::{StepBuffers, StepStage};
#[cfg(feature = "gpu")]
#[cfg_attr(docsrs, doc(cfg(feature = "gpu")))]
pub use crate::gpu::sweep::{SWEEP_WGSL, SweepBuffers, SweepOutput, SweepStage};
#[cfg(feature = "gpu")]
#[cfg_attr(docsrs, doc(cfg(feature = "gpu")))]
pub use crate::gpu::walls::{WALLS_WGSL, WallBuffers, WallStage};
