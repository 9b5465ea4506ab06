//! The GPU paths: a [`GpuContext`] (adapter, device, queue) and one pipeline object per job.
//!
//! * [`SweepPipeline`] runs `shaders/sweep.wgsl`, whose f32 twin is [`crate::cpu::sweep`](mod@crate::cpu::sweep).
//! * [`layout`] holds the `#[repr(C)]` copies of the shader structs.

mod context;
pub mod layout;
mod sweep;

pub use context::GpuContext;
pub use sweep::{DEFAULT_POLL_TIMEOUT, SWEEP_WGSL, SweepPipeline};

// Both are shared across a simulation's threads.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<GpuContext>();
    send_sync::<SweepPipeline>();
};
