//! The GPU step as one stage that stays on the device: [`StepStage`] records, into the
//! caller's command encoder, from the caller's body buffer to device buffers of each body's
//! earliest contact and the step's counts, with no host read between: the grid
//! ([`GridStage`](crate::low_level::GridStage), `shaders/grid.wgsl`, twin
//! [`crate::low_level::grid`]), whose one pass finds, sweeps and keeps; the walls
//! ([`WallStage`], `shaders/walls.wgsl`) merged in (`earliest_walls` of
//! `shaders/contacts.wgsl`); and, with ordered contacts, the hits the grid listed ordered by
//! `shaders/contacts.wgsl` ([`ContactStage`], twin
//! [`crate::low_level::contacts`](crate::low_level::contacts)).
//!
//! Its files, one concern each: `stage.rs`, the stage and the list of stage calls a step
//! records (`record_stages`) and the overflow policy (`grow`); `buffers.rs`, the buffers'
//! lifecycle (made, walls set, bound, the host's parameters written); `capacities.rs`, what
//! the buffers hold; `observed.rs`, what a benchmark sees of the recorded commands.

mod buffers;
mod capacities;
pub(crate) mod observed;
mod stage;

pub use capacities::StepCapacities;
pub use stage::{StepBuffers, StepStage};
