//! What a benchmark sees of the commands a step records: wgpu cannot list an encoder's
//! commands, so the step's recording helpers say what they record
//! ([`record_step_observed`]).

use super::stage::{StepBuffers, StepStage};
use crate::error::Error;
use crate::gpu::observe::{Observed, ObservedWorkgroups, observed};

/// What a recorded dispatch runs once for, or a recorded sort sorts, in the step's own
/// counts (see [`StepCommand`]). Used by `examples/step_bench.rs`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StepDomain {
    /// Each body of the step (indirect, from the body count the device holds).
    Bodies,
    /// Each swept candidate pair (indirect; since the grid, no step records one).
    Candidates,
    /// Each contact (indirect, from the hits the grid listed or the contacts compacted;
    /// ordered contacts only).
    Contacts,
    /// Each walk past its budget saved for a resume (indirect, from the walks the step
    /// saved: `grid_resume`).
    SavedQueries,
    /// As many workgroups as the host said (x by y), each of the entry point's workgroup
    /// size.
    Workgroups(u32, u32),
}

/// One command a step recorded, as [`record_step_observed`] reports it: wgpu cannot
/// list the commands of an encoder, so the step's recording helpers say what they record.
/// A benchmark counts dispatches, and with the step's counts the bytes they move, from
/// these. The step's copies of single words between its small buffers are not listed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StepCommand {
    /// One dispatch of an entry point of one of the step's shaders.
    Dispatch {
        /// The shader file: `frame.wgsl` ([`FRAME_WGSL`](crate::low_level::FRAME_WGSL)),
        /// `grid.wgsl`, `walls.wgsl` or `contacts.wgsl`.
        shader: &'static str,
        /// The entry point.
        entry_point: &'static str,
        /// What it runs one invocation for.
        domain: StepDomain,
    },
    /// A stable radix sort of 8-byte key-value records recorded by lampshade's
    /// `KeyValueSorter::record_sort_counted_with_key_bits`: one command here, as its own
    /// dispatches (which depend on the path lampshade chose for the adapter) are recorded by
    /// lampshade.
    Sort {
        /// What it sorts one record for: [`StepDomain::Bodies`] or [`StepDomain::Contacts`].
        items: StepDomain,
        /// The most records it sorts (the buffers' capacity, which sizes lampshade's
        /// histograms).
        capacity: u32,
        /// The bits of its keys: one radix pass a digit of them.
        key_bits: u32,
    },
    /// A buffer (or its head) cleared to zero.
    Clear {
        /// The bytes cleared.
        bytes: u64,
    },
}

/// [`StepStage::record`] for a benchmark (`examples/step_bench.rs` and
/// `examples/grid_bench.rs`): calls `stage_end` after each stage's passes with the stage's
/// name (the grid's `bounds`, `sort`, `cells`, `gather`, `levels`; then `walls` when there
/// are walls; with ordered contacts `contacts`), where the benchmark may write a timestamp,
/// or finish the encoder (replacing it with a new one), submit and wait. Returns every
/// command the step recorded, with the name of its stage (see [`StepCommand`]).
///
/// # Errors
/// As [`StepStage::record`], and any error of `stage_end`.
pub fn record_step_observed(
    stage: &StepStage,
    encoder: &mut wgpu::CommandEncoder,
    buffers: &mut StepBuffers,
    count: Option<(&wgpu::Buffer, u64)>,
    stage_end: &mut dyn FnMut(&mut wgpu::CommandEncoder, &'static str) -> Result<(), Error>,
) -> Result<Vec<(&'static str, StepCommand)>, Error> {
    let (recorded, log) = observed(|| {
        stage.record_stages(encoder, buffers, count, &mut |encoder, stage| {
            crate::gpu::observe::observe(|| Observed::StageEnd(stage));
            stage_end(encoder, stage)
        })
    });
    recorded?;
    let mut commands = Vec::with_capacity(log.len());
    let mut stage_start = 0;
    for observed in log {
        let command = match observed {
            Observed::StageEnd(stage) => {
                for (named, _) in &mut commands[stage_start..] {
                    *named = stage;
                }
                stage_start = commands.len();
                continue;
            }
            Observed::Dispatch {
                shader,
                entry_point,
                workgroups,
            } => StepCommand::Dispatch {
                shader,
                entry_point,
                domain: match workgroups {
                    ObservedWorkgroups::Direct(x, y) => StepDomain::Workgroups(x, y),
                    ObservedWorkgroups::Indirect(buffer) => buffers.domain_of(&buffer),
                },
            },
            Observed::Sort {
                count,
                capacity,
                key_bits,
            } => StepCommand::Sort {
                items: buffers.domain_of(&count),
                capacity,
                key_bits,
            },
            Observed::Clear { bytes } => StepCommand::Clear { bytes },
        };
        commands.push(("", command));
    }
    Ok(commands)
}

impl StepBuffers {
    /// What the step runs an indirect dispatch for, by the buffer it reads its workgroups
    /// from, or a sort for, by the buffer it reads its count from.
    fn domain_of(&self, buffer: &wgpu::Buffer) -> StepDomain {
        let grid = &self.grid;
        if buffer == grid.body_dispatch() || buffer == grid.sort_count() {
            return StepDomain::Bodies;
        }
        if buffer == grid.resume_dispatch() {
            return StepDomain::SavedQueries;
        }
        let ordered = self.ordered.as_ref().and_then(|o| o.ordered.as_ref());
        if buffer == grid.hits()[2]
            || ordered.is_some_and(|o| buffer == o.dispatch() || *buffer == o.contact_count)
        {
            StepDomain::Contacts
        } else {
            unreachable!("the step dispatches and sorts only from counts of its own")
        }
    }
}
