//! The GPU paths: a [`GpuContext`] (adapter, device, queue: its own or the caller's) and the
//! blocking conveniences, built on the resident stages of [`crate::low_level`] (one stage
//! per shader, recorded into a command encoder).
//!
//! * [`SweepPipeline`] runs [`low_level::SweepStage`](crate::low_level::SweepStage)
//!   (`shaders/sweep.wgsl`, twin [`crate::low_level::sweep`]) on the caller's slices and
//!   blocks until the answers are back.
//! * [`ContactPipeline`] runs [`low_level::StepStage`](crate::low_level::StepStage) from host
//!   slices and blocks until the answers are back; the CPU step that gives the same contacts
//!   is [`crate::cpu::ContactFinder`]. The step stage records the whole step from a body
//!   buffer: the local frame made on the device (`shaders/frame.wgsl`, `src/gpu/frame.rs`,
//!   twin [`crate::low_level::frame`]); the [`GridStage`](crate::low_level::GridStage), in
//!   which each body finds, sweeps and keeps its earliest contact (`shaders/grid.wgsl`, twin
//!   [`crate::low_level::grid`]); the walls stage ([`crate::low_level::WallStage`],
//!   `shaders/walls.wgsl`, twin [`crate::low_level::walls`]) merged into those records; and,
//!   when asked, the ordered contacts from the hits the grid lists (`shaders/contacts.wgsl`,
//!   `src/gpu/contacts.rs`, twin [`crate::low_level::contacts`]). Its composition,
//!   `src/gpu/step/mod.rs`, follows the twins' entry points in order.
//!
//! Each stage's source is `shaders/shared.wgsl` (the data contract, mirrored by
//! [`crate::low_level::layout`]) followed by the stage's own file.
//!
//! Used by: the README's quick start (the GPU step), `docs/guide.md` ("Batches of candidate
//! pairs"), `docs/step.md`.

#[cfg(test)]
mod bindings_tests;
mod buffers;
mod contact_pipeline;
pub(crate) mod contacts;
mod context;
pub(crate) mod frame;
pub(crate) mod grid;
pub(crate) mod host_profile;
pub(crate) mod kernel;
mod observe;
pub(crate) mod pipeline;
mod sort;
pub(crate) mod step;
pub(crate) mod sweep;
pub(crate) mod walls;

pub use contact_pipeline::ContactPipeline;
pub(crate) use contacts::{ContactBuffers, ContactStage};
pub use context::GpuContext;
pub use pipeline::SweepPipeline;
pub use step::StepCapacities;
pub(crate) use step::{StepBuffers, StepStage};
pub(crate) use sweep::{SweepBuffers, SweepStage};
pub(crate) use walls::{WallBuffers, WallStage};

// Shared across a simulation's threads.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<GpuContext>();
    send_sync::<SweepStage>();
    send_sync::<SweepBuffers>();
    send_sync::<SweepPipeline>();
    send_sync::<ContactPipeline>();
    send_sync::<WallStage>();
    send_sync::<WallBuffers>();
    send_sync::<StepStage>();
    send_sync::<ContactStage>();
    send_sync::<ContactBuffers>();
    send_sync::<StepBuffers>();
};
