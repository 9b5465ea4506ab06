//! The GPU paths: a [`GpuContext`] (adapter, device, queue: its own or the caller's), one
//! stage per shader, and the blocking conveniences built on the stages.
//!
//! * [`SweepStage`] records `shaders/sweep.wgsl` into the caller's command encoder, on
//!   [`SweepBuffers`] the caller keeps; its f32 twin is [`crate::cpu::sweep`](mod@crate::cpu::sweep).
//! * [`SweepPipeline`] runs the stage on the caller's slices and blocks until the answers are
//!   back.
//! * [`WallStage`] records `shaders/walls.wgsl`, each body's earliest impact on static
//!   walls, on [`WallBuffers`]; its f32 twin is [`crate::cpu::walls`].
//! * [`StepStage`] records the whole step from the caller's body buffer into the caller's
//!   encoder, on [`StepBuffers`]: the broad phase (`shaders/broad_phase.wgsl`, a linear BVH
//!   whose frame is made on the device; `src/gpu/broad_phase.rs`, twin
//!   [`crate::cpu::broad_phase`]), the walls stage, the sweep stage on the candidates, and the
//!   outputs (`shaders/contacts.wgsl`: each body's earliest contact without sorting, the
//!   counts and their validity word, the ordered contacts when asked; `src/gpu/contacts.rs`,
//!   twin [`crate::cpu::contacts`](mod@crate::cpu::contacts)). Its composition,
//!   `src/gpu/step.rs`, follows the twins' entry points in order.
//! * [`ContactPipeline`] runs the step stage from host slices and blocks until the answers
//!   are back; the CPU step that gives the same contacts is [`crate::cpu::ContactFinder`].
//!
//! Each stage's source is `shaders/shared.wgsl` (the data contract, mirrored by
//! [`crate::layout`]) followed by the stage's own file.

mod broad_phase;
mod buffers;
mod contact_pipeline;
mod contacts;
mod context;
mod kernel;
mod pipeline;
mod step;
mod sweep;
mod walls;

pub use broad_phase::{
    BROAD_PHASE_BYTES_PER_BODY, BROAD_PHASE_BYTES_PER_CANDIDATE, BROAD_PHASE_WGSL,
    BroadPhaseBuffers, BroadPhaseCapacities, BroadPhaseStage,
};
pub use contact_pipeline::{
    ContactPipeline, DEVICE_BYTES_PER_BODY, DEVICE_BYTES_PER_CANDIDATE, DEVICE_BYTES_PER_CONTACT,
};
pub use contacts::{
    CONTACTS_WGSL, ContactBuffers, ContactInputs, ContactStage, EARLIEST_BYTES_PER_BODY,
    ORDERED_BYTES_PER_CONTACT,
};
pub use context::GpuContext;
pub use pipeline::{DEFAULT_POLL_TIMEOUT, SweepPipeline};
pub use step::{
    MAX_RESUME_PASSES, StepBuffers, StepCapacities, StepCommand, StepDomain, StepStage,
};
pub use sweep::{SWEEP_WGSL, SweepBuffers, SweepOutput, SweepStage};
pub use walls::{WALLS_WGSL, WallBuffers, WallStage};

/// The data contract every stage's source begins with (`shaders/shared.wgsl`).
pub const SHARED_WGSL: &str = include_str!("../../shaders/shared.wgsl");

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
    send_sync::<BroadPhaseStage>();
    send_sync::<BroadPhaseBuffers>();
    send_sync::<ContactStage>();
    send_sync::<ContactBuffers>();
    send_sync::<StepBuffers>();
};
