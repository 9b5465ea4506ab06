//! The stage itself: what it holds, how it is made, the list of stage calls a step records
//! (`record_stages`) and the overflow policy (`grow`).

use super::capacities::StepCapacities;

use crate::error::{Counted, Error};
use crate::gpu::buffers::{check_count, largest_binding};
use crate::gpu::contacts::{ContactBuffers, ContactStage};
use crate::gpu::context::{STORAGE_BUFFERS_PER_STAGE, check_limits, required_limits};
use crate::gpu::grid::{GridBuffers, GridStage, most_saved_walks};
use crate::gpu::kernel::StageEnd;
use crate::gpu::walls::{WallBuffers, WallStage};
use crate::layout::{BodyRecord, ContactRecord, StepCounts, SweepDispatch, bytes_of};

/// The whole collision step as one stage recorded into the caller's encoder, from the
/// caller's body buffer ([`BodyRecord`](crate::layout::BodyRecord)s, usage `STORAGE`) to
/// device buffers of each body's earliest contact ([`StepBuffers::earliest`]) and the step's
/// counts ([`StepBuffers::counts`]), with nothing mapped or read by the host within a step.
/// (The repository's `docs/step.md` has the stage's design and a frame loop in full.)
///
/// ```text
///  caller's bodies ─► grid ──────────────────────────────────────► earliest per body
///  (BodyRecord,       (bounds, frame, levels, cell keys, sort,      (EarliestRecord)
///   STORAGE)           cells, plan, gather: find, sweep, keep)      counts + valid
///  walls ──────────────────────────────────────────────────────► (merged into earliest)
///
///  with ordered contacts, the counted gather also lists each hit once:
///        ─► hits (pairs, impacts) ─► ordered contacts (contacts.wgsl)
/// ```
///
/// **Counts.** With ordered contacts, [`StepCounts::candidates`] counts the pairs whose swept
/// boxes meet (and whose groups interact), each once, and [`StepCounts::contacts`] those that
/// hit or overlap: the CPU step's contacts. Without them the gather counts nothing (counting
/// cost the H200 a quarter of the gather) and both are 0. A body's walk that runs past its
/// budget ([`GRID_BUDGET`](crate::low_level::grid::GRID_BUDGET) steps: a pile of tens of
/// thousands of bodies in one place, a body whose path crosses a crowded scene) is saved and
/// resumed in the next dispatch ([`StepCapacities::resume_passes`] of them after each chain
/// of walks). `unfinished_queries` is 1 where one was still running after the last resume,
/// and `saved_queries_overflowed` where one found no slot to be saved in
/// ([`StepCapacities::saved_queries`]); [`StepStage::grow`] then doubles the resumes or the
/// slots, and past 16 resumes
/// ([`GRID_MAX_RESUME_PASSES`](crate::low_level::grid::GRID_MAX_RESUME_PASSES)) returns [`Error::CapacityExceeded`] with
/// [`Counted::WalkSteps`](crate::Counted::WalkSteps): take shorter steps.
/// `candidates_overflowed` stays 0 (no candidate buffer).
///
/// # Several frames in one submission
/// What changes from frame to frame reaches the device in the encoder: the body count
/// (copied from the caller's buffer), the step's parameters (made by the `frame` pass from
/// the bodies and copied into the uniform), the grid's levels and the contact count. What the host
/// sets with `Queue::write_buffer` ([`StepBuffers::set_options`],
/// [`StepBuffers::set_body_count`], [`StepStage::set_walls`]) applies to every frame of the
/// next submission.
///
/// # Overflow, with no host round trip and no tunnelling
/// Every count keeps counting past its buffer's capacity, and the step still runs to its
/// end; [`StepCounts::valid`] is then 0. A consumer pass recorded after the step checks it
/// and does nothing, so a partial answer is never applied: the bodies are as the frame found
/// them. The caller reads the counts with whatever it reads (a few bytes a frame, or every
/// few frames), calls [`StepStage::grow`] once (the ordered contacts to the next power of two
/// at or above their count), and records the frame again from the bodies it kept. The only
/// buffer a scene can outgrow is the ordered contacts'; each body's earliest contact alone
/// never overflows. A count that exceeds one binding is [`Error::CapacityExceeded`]; a body
/// count past the body buffer, [`Error::TooManyBodies`]. Frames recorded in one submission
/// cannot grow between them: make the buffers with room ([`StepCapacities`]) and keep the
/// last valid frame's bodies until the counts are read.
///
/// # Bad bodies
/// The host does not see the bodies, so the step checks them: a centre, displacement or
/// radius that is NaN or infinite, or a negative radius, sets
/// [`StepCounts::invalid_bodies`] and makes the step invalid (the consumer skips it,
/// [`StepStage::grow`] returns [`Error::InvalidBuffer`]). Every pass's work is bounded
/// whatever the buffer holds.
///
/// # Limits
/// Each entry point binds at most 8 storage buffers, within wgpu's default limits (8 a
/// stage); [`StepStage::required_limits`] says what to ask for, and a device below it gets
/// [`Error::DeviceLimit`] from [`StepStage::new`], not a validation panic.
///
/// **Collision groups.** The grid reads each body's groups from its record's spare
/// word ([`BodyRecord::groups`](crate::layout::BodyRecord#structfield.groups), the
/// complement of [`CollisionGroups::bits`](crate::CollisionGroups::bits), so that a zeroed
/// word lets the body meet every other): the caller writes it in its own bodies' buffer
/// ([`BodyRecord::with_groups`](crate::layout::BodyRecord::with_groups)), and a pair whose
/// groups do not interact is never swept. Walls are not filtered.
#[derive(Debug, Clone)]
pub struct StepStage {
    pub(super) grid: GridStage,
    pub(super) contacts: ContactStage,
    pub(super) walls: WallStage,
    /// The largest storage binding of the device, in bytes.
    pub(super) largest_binding: u64,
}

/// The buffers of one [`StepStage`]: the caller's bodies (bound), the grid's buffers (with
/// its radix sorter's state: lampshade's sorter records with `&mut self` and keeps its
/// workspace from step to step), the ordered contacts' when asked, and the walls. Made once
/// by [`StepStage::create_buffers`]; [`StepStage::grow`] replaces what outgrew its capacity.
///
/// Used by: `docs/step.md` ("Resident on the device: the step stage"), `examples/resident_step.rs`.
pub struct StepBuffers {
    pub(super) grid: GridBuffers,
    /// With walls, their merge into the grid's earliest records.
    pub(super) walls_merge: Option<wgpu::BindGroup>,
    /// With ordered contacts: the outputs over the hits the grid listed (the contacts in
    /// order, and each body's place among them).
    pub(super) ordered: Option<ContactBuffers>,
    pub(super) walls: Option<StepWalls>,
    pub(super) capacities: StepCapacities,
}

/// The walls stage's buffers over the step's bodies and the count of walls.
#[derive(Clone)]
pub(super) struct StepWalls {
    pub(super) buffers: WallBuffers,
    pub(super) count: u32,
}

impl std::fmt::Debug for StepBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepBuffers")
            .field("capacities", &self.capacities)
            .field("body_capacity", &self.body_capacity())
            .field("ordered", &self.has_ordered_contacts())
            .finish_non_exhaustive()
    }
}

impl StepStage {
    /// The most resumes [`StepStage::grow`] gives each chain of walks past their budget: a
    /// walk then takes at most 17 budgets ([`GRID_BUDGET`](crate::low_level::grid::GRID_BUDGET)
    /// steps each) before the step is [`Error::CapacityExceeded`] for
    /// [`Counted::WalkSteps`](crate::Counted::WalkSteps).
    pub(crate) const MAX_RESUME_PASSES: u32 = crate::cpu::grid::GRID_MAX_RESUME_PASSES;

    /// Compiles every stage of the step on `device`. The radix sorter takes its portable
    /// path; [`StepStage::for_adapter`] lets it choose the adapter's fast one.
    ///
    /// # Errors
    /// [`Error::DeviceLimit`] when the device's limits are below
    /// [`StepStage::required_limits`]; [`Error::Device`] when it rejects a shader or
    /// pipeline.
    pub fn new(device: &wgpu::Device) -> Result<Self, Error> {
        Self::create(device, None)
    }

    /// As [`StepStage::new`], with the sorter specialised for `adapter` (lampshade's 8-bit
    /// kernel on NVIDIA Vulkan with subgroups, its 4-bit one on some others).
    ///
    /// # Errors
    /// As [`StepStage::new`].
    pub fn for_adapter(device: &wgpu::Device, adapter: &wgpu::AdapterInfo) -> Result<Self, Error> {
        Self::create(device, Some(adapter))
    }

    fn create(device: &wgpu::Device, adapter: Option<&wgpu::AdapterInfo>) -> Result<Self, Error> {
        check_limits(&device.limits())?;
        let walls = WallStage::new(device)?;
        let (grid, contacts) = match adapter {
            Some(adapter) => (
                GridStage::for_adapter(device, adapter)?,
                ContactStage::for_adapter(device, adapter)?,
            ),
            None => (GridStage::new(device)?, ContactStage::new(device)?),
        };
        debug_assert!(
            grid.storage_buffers().max(contacts.storage_buffers()) <= STORAGE_BUFFERS_PER_STAGE
        );
        Ok(Self {
            grid,
            contacts,
            walls,
            largest_binding: largest_binding(device),
        })
    }

    /// The limits the step's stages need of a device: wgpu's defaults (8 storage buffers a
    /// stage, 65,535 workgroups a dimension, 256 invocations a workgroup). Ask for them (or
    /// more) when creating a device for the step; a device below them gets
    /// [`Error::DeviceLimit`] from [`StepStage::new`]. Larger storage bindings
    /// (`max_storage_buffer_binding_size`, `max_buffer_size`) let a step hold more bodies
    /// and contacts.
    #[must_use]
    pub fn required_limits() -> wgpu::Limits {
        required_limits()
    }

    /// Bodies one body buffer may hold on this device: one storage binding of 32-byte
    /// records.
    #[must_use]
    pub fn max_bodies(&self) -> u64 {
        (self.largest_binding / bytes_of::<BodyRecord>(1))
            .min(crate::cpu::ContactFinder::MAX_BODIES as u64)
    }
    /// Records one step of `buffers` into `encoder`. The body count is the `u32` at the
    /// given offset of `count` (usage `COPY_SRC`, copied in the encoder: each recorded step
    /// reads its own), or where `count` is `None`, the one set by
    /// [`StepBuffers::set_body_count`]. Nothing is mapped or read by the host: the outputs
    /// are [`StepBuffers::earliest`], [`StepBuffers::counts`] and, when asked,
    /// [`StepBuffers::ordered_contacts`]. Steps recorded one after another (in one encoder
    /// or one submission) each give their own answers, from the bodies as the passes
    /// recorded before each left them.
    ///
    /// The bodies on the device are checked there, not by the host: a step with a body whose
    /// centre, displacement or radius is not finite, or whose radius is negative, sets
    /// [`StepCounts::invalid_bodies`] and is not valid. Every pass's work is bounded whatever
    /// the bodies hold (a body's walk takes at most
    /// [`GRID_BUDGET`](crate::low_level::grid::GRID_BUDGET) steps), so a hostile buffer gives an
    /// invalid step, never a hang.
    ///
    /// # Errors
    /// [`Error::InvalidBuffer`] when `count` lacks `COPY_SRC` or the offset is not that of
    /// a `u32` within it; [`Error::Device`] when the sorter cannot record.
    pub fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &mut StepBuffers,
        count: Option<(&wgpu::Buffer, u64)>,
    ) -> Result<(), Error> {
        self.record_stages(encoder, buffers, count, &mut |_, _| Ok(()))
    }

    /// [`StepStage::record`], calling `stage_end` after each stage's passes with the
    /// stage's name, as [`record_step_observed`](crate::low_level::record_step_observed) says.
    pub(crate) fn record_stages(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &mut StepBuffers,
        count: Option<(&wgpu::Buffer, u64)>,
        stage_end: &mut StageEnd<'_>,
    ) -> Result<(), Error> {
        if let Some((count, offset)) = count {
            check_count(count, offset)?;
        }
        self.grid
            .record_stages(encoder, &mut buffers.grid, count, stage_end)?;
        let body_dispatch = buffers.grid.body_dispatch();
        let pair_count = std::mem::offset_of!(SweepDispatch, pair_count) as u64;
        if let Some(walls) = &buffers.walls {
            self.walls.record_counted(
                encoder,
                &walls.buffers,
                (body_dispatch, pair_count),
                body_dispatch,
            );
            if let Some(merge) = &buffers.walls_merge {
                self.contacts
                    .record_walls_merge(encoder, merge, body_dispatch);
            }
            stage_end(encoder, "walls")?;
        }
        // The ordered contacts from the hits the counted gather listed; each body's earliest
        // contact is the gather's own (contacts.wgsl's earliest passes over the hits would give
        // the same records a second time).
        if let Some(outputs) = &mut buffers.ordered {
            let hit_dispatch = buffers.grid.hits()[2];
            self.contacts
                .record_ordered(encoder, outputs, hit_dispatch)?;
            stage_end(encoder, "contacts")?;
        }
        Ok(())
    }

    /// Grows `buffers` for the step whose counts are `counts` (read back from
    /// [`StepBuffers::counts`] after a step with `valid` 0): the ordered contacts to the next
    /// power of two at or above what the step counted. Returns whether anything grew (false
    /// for a valid step). Then record the frame again from the bodies it started from.
    ///
    /// # Errors
    /// [`Error::InvalidBuffer`] (`bodies`) when a body of the step is one it cannot sweep
    /// ([`StepCounts::invalid_bodies`]: growing does not help);
    /// [`Error::TooManyBodies`] when the step's body count exceeds the body buffer (bind a
    /// larger one with new buffers); [`Error::CapacityExceeded`] when a body's walk ran past
    /// its budget ([`Counted::WalkSteps`](crate::Counted::WalkSteps)), or when the contacts
    /// need more than one binding holds; [`Error::OutOfDeviceMemory`] when the device cannot
    /// back the buffers (`buffers` stay as they were, usable).
    pub fn grow(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        buffers: &mut StepBuffers,
        counts: &StepCounts,
    ) -> Result<bool, Error> {
        if counts.valid != 0 {
            return Ok(false);
        }
        if counts.invalid_bodies != 0 {
            return Err(Error::InvalidBuffer {
                name: "bodies",
                reason: "a body of the step has a centre, displacement or radius that is not finite, or a negative radius: the step cannot sweep it (StepCounts::invalid_bodies); correct the bodies and record the frame again".into(),
            });
        }
        let body_capacity = buffers.body_capacity();
        if u64::from(counts.bodies) > body_capacity {
            return Err(Error::TooManyBodies {
                count: counts.bodies as usize,
                max: body_capacity as usize,
            });
        }
        // A walk still past its budget after the last resume: more resumes, up to
        // MAX_RESUME_PASSES (each a dispatch a chain, recorded whether or not a walk needs it).
        let mut grew = false;
        if counts.unfinished_queries != 0 {
            let passes = buffers.capacities.resume_passes;
            if passes >= Self::MAX_RESUME_PASSES {
                let steps = (passes as usize + 1) * buffers.grid.walk_budget() as usize;
                return Err(Error::CapacityExceeded {
                    what: Counted::WalkSteps,
                    at_least: steps + 1,
                    capacity: steps,
                });
            }
            let next = (2 * passes).clamp(1, Self::MAX_RESUME_PASSES);
            buffers.capacities.resume_passes = next;
            buffers.grid.set_resume_passes(next);
            grew = true;
        }
        // Walks that found no slot to be saved in: twice the slots, up to what one binding
        // holds (past it, growing mends nothing: a typed error, not a rerun without end).
        let held_saved = u64::from(buffers.grid.saved_capacity());
        let saved = if counts.saved_queries_overflowed != 0 {
            let most = most_saved_walks(self.largest_binding);
            if held_saved >= most {
                return Err(Error::CapacityExceeded {
                    what: Counted::SavedQueries,
                    at_least: held_saved as usize + 1,
                    capacity: held_saved as usize,
                });
            }
            (2 * held_saved).min(most)
        } else {
            held_saved
        };
        // Contacts counted past the capacity (modulo 2^32: a count that wrapped reads low,
        // and the rerun grows again).
        let held = buffers.capacities.contacts;
        let mut contacts = held;
        if counts.contacts_overflowed != 0 && buffers.ordered.is_some() {
            let counted = u64::from(counts.contacts);
            if counted > self.max_contacts() {
                return Err(Error::CapacityExceeded {
                    what: Counted::Contacts,
                    at_least: counted as usize,
                    capacity: self.max_contacts() as usize,
                });
            }
            contacts = self.clamp_contacts(counted.max(held * 2));
        }
        if contacts == held && saved == held_saved {
            if grew {
                return Ok(true);
            }
            return Err(Error::Device(format!(
                "the step was not valid, yet its counts say nothing that growing mends: {counts:?}"
            )));
        }
        let bodies = buffers.bodies().clone();
        let options = buffers.options();
        let body_count = buffers.body_count();
        let ordered = buffers.ordered.is_some();
        // The replaced outputs hand over their sorter (and its workspace); where the new
        // ones cannot be made, the old get a sorter again and stay usable.
        let sorter = buffers
            .ordered
            .as_mut()
            .and_then(|outputs| outputs.take_sorter());
        let made = self.outputs(
            device,
            queue,
            &bodies,
            options,
            ordered,
            [contacts, saved],
            sorter,
        );
        let (grid, outputs) = match made {
            Ok(made) => made,
            Err(error) => {
                if let Some(outputs) = buffers.ordered.as_mut() {
                    outputs.restore_sorter(|| self.contacts.sorter(device, queue));
                }
                return Err(error);
            }
        };
        // The new grid keeps the old one's resumes and walk budget.
        let (passes, budget) = (buffers.grid.resume_passes(), buffers.grid.budget_set());
        buffers.grid = grid;
        buffers.grid.set_resume_passes(passes);
        buffers.grid.set_budget(queue, budget);
        buffers.ordered = outputs;
        buffers.capacities.contacts = contacts;
        buffers.capacities.saved_queries = u64::from(buffers.grid.saved_capacity());
        let wall_contacts = buffers
            .walls
            .as_ref()
            .map(|walls| walls.buffers.contacts().clone());
        self.bind_walls(device, buffers, wall_contacts.as_ref());
        buffers.grid.set_any_body_count(queue, body_count);
        buffers.write(queue);
        Ok(true)
    }

    /// Contacts one binding of contact records holds.
    pub(super) fn max_contacts(&self) -> u64 {
        self.largest_binding / bytes_of::<ContactRecord>(1)
    }
}

impl StepCounts {
    /// Whether the step's outputs are whole (`valid` is 1).
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.valid != 0
    }
}
