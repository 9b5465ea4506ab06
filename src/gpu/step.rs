//! The GPU step as one stage that stays on the device: [`StepStage`] records, into the
//! caller's command encoder, from the caller's body buffer to device buffers of each body's
//! earliest contact and the step's counts, with no host read between: the grid
//! ([`GridStage`](super::GridStage), `shaders/grid.wgsl`, twin [`crate::low_level::grid`]),
//! whose one pass finds, sweeps and keeps; the walls ([`WallStage`], `shaders/walls.wgsl`)
//! merged in (`earliest_walls` of `shaders/contacts.wgsl`); and, with ordered contacts, the
//! hits the grid listed ordered by `shaders/contacts.wgsl` ([`ContactStage`], twin
//! [`crate::low_level::contacts`](crate::low_level::contacts)).

use super::buffers::{ErrorScopes, create_buffer};
use super::contacts::{ContactBuffers, ContactInputs, ContactStage};
use super::grid::{GridBuffers, GridStage};
use super::kernel::{
    Observed, ObservedWorkgroups, STORAGE_BUFFERS_PER_STAGE, StageEnd, check_count, check_limits,
    observed, required_limits,
};
use super::sweep::BODY_SIZE;
use super::walls::{WallBuffers, WallStage};
use crate::cpu::grid::GRID_BUDGET;
use crate::error::{Counted, Error};
use crate::geometry::Wall;
use crate::layout::{StepCounts, SweepDispatch};
use crate::options::SweepOptions;

/// What a [`StepBuffers`] holds besides the bodies: the ordered contacts, when asked.
/// [`StepStage::grow`] raises them from a step's [`StepCounts`]. The other fields are the
/// capacities of the tree the step ran before the grid, kept so that code which names them
/// still compiles: the grid has no candidate buffer and no saved queries, and ignores them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StepCapacities {
    /// Unused since the grid (it has no candidate buffer).
    pub candidates: u64,
    /// Ordered contacts (the listed hit, 40 bytes; the contact, 64 bytes, twice; two sort
    /// records), when asked.
    pub contacts: u64,
    /// Unused since the grid (it saves no queries).
    pub saved_queries: u64,
    /// Unused since the grid (it resumes no queries).
    pub resume_passes: u32,
}

impl Default for StepCapacities {
    /// 16,384 contacts (and the unused fields as they were: 16,384 candidates, 1,024 saved
    /// queries, 2 resume dispatches).
    fn default() -> Self {
        Self {
            candidates: 1 << 14,
            contacts: 1 << 14,
            saved_queries: 1024,
            resume_passes: 2,
        }
    }
}

/// What a recorded dispatch runs once for, or a recorded sort sorts, in the step's own
/// counts (see [`StepCommand`]).
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
    /// Each saved query a resume of the tree's queries takes up (indirect; since the grid,
    /// no step records one).
    SavedQueries,
    /// As many workgroups as the host said (x by y), each of the entry point's workgroup
    /// size.
    Workgroups(u32, u32),
}

/// One command a step recorded, as [`StepStage::record_observed`] reports it: wgpu cannot
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

impl StepCapacities {
    /// Capacities that fit a typical scene of `bodies` bodies without a rerun: 2 contacts a
    /// body (the test scenes have 0.8 uniformly spread, 1.4 clustered; 5.5 with radii spread
    /// 100-fold, which grow once), at least the defaults.
    #[must_use]
    pub fn for_bodies(bodies: u64) -> Self {
        let default = Self::default();
        Self {
            candidates: default.candidates.max(bodies.saturating_mul(4)),
            contacts: default.contacts.max(bodies.saturating_mul(2)),
            ..default
        }
    }

    /// Each capacity the larger of the two.
    #[must_use]
    pub fn max(self, other: Self) -> Self {
        Self {
            candidates: self.candidates.max(other.candidates),
            contacts: self.contacts.max(other.contacts),
            saved_queries: self.saved_queries.max(other.saved_queries),
            resume_passes: self.resume_passes.max(other.resume_passes),
        }
    }
}

/// The whole collision step as one stage recorded into the caller's encoder, from the
/// caller's body buffer ([`BodyRecord`](super::BodyRecord)s, usage `STORAGE`) to
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
///        ─► hits (pairs, impacts) ─► earliest, ordered contacts (contacts.wgsl)
/// ```
///
/// **Counts.** With ordered contacts, [`StepCounts::candidates`] counts the pairs whose swept
/// boxes meet (and whose groups interact), each once, and [`StepCounts::contacts`] those that
/// hit or overlap: the CPU step's contacts. Without them the gather counts nothing (counting
/// cost the H200 a quarter of the gather) and both are 0. `unfinished_queries` is 1 where a
/// body's walk ran past its budget ([`GRID_BUDGET`](crate::low_level::grid::GRID_BUDGET)
/// steps: a pile of tens of thousands of bodies in one place, a body whose path crosses a
/// crowded scene), and [`StepStage::grow`] then returns [`Error::CapacityExceeded`] with
/// [`Counted::WalkSteps`](crate::Counted::WalkSteps): take shorter steps.
/// `candidates_overflowed` and `saved_queries_overflowed` stay 0 (no candidate buffer, no
/// saved queries).
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
    grid: GridStage,
    contacts: ContactStage,
    walls: WallStage,
    /// The largest storage binding of the device, in bytes.
    largest_binding: u64,
}

/// The buffers of one [`StepStage`]: the caller's bodies (bound), the grid's buffers (with
/// its radix sorter's state: lampshade's sorter records with `&mut self` and keeps its
/// workspace from step to step), the ordered contacts' when asked, and the walls. Made once
/// by [`StepStage::create_buffers`]; [`StepStage::grow`] replaces what outgrew its capacity.
pub struct StepBuffers {
    grid: GridBuffers,
    /// Without ordered contacts, the merge of the walls into the grid's earliest records.
    walls_merge: Option<wgpu::BindGroup>,
    /// With ordered contacts: the outputs over the hits the grid listed (each body's earliest
    /// contact, the walls merged, and the contacts in order).
    ordered: Option<ContactBuffers>,
    walls: Option<StepWalls>,
    capacities: StepCapacities,
}

/// The walls stage's buffers over the step's bodies and the count of walls.
#[derive(Clone)]
struct StepWalls {
    buffers: WallBuffers,
    count: u32,
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
        let limits = device.limits();
        Ok(Self {
            grid,
            contacts,
            walls,
            largest_binding: limits
                .max_storage_buffer_binding_size
                .min(limits.max_buffer_size),
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
        (self.largest_binding / BODY_SIZE).min(crate::cpu::ContactFinder::MAX_BODIES as u64)
    }

    /// The step's buffers over the caller's `bodies` (usage `STORAGE`, a whole number of
    /// [`BodyRecord`](crate::low_level::layout::BodyRecord)s: its size is the step's body capacity),
    /// for `options`, with the ordered contacts' buffers (for `capacities.contacts`, clamped
    /// to what one binding holds and rounded up to a power of two) when `ordered_contacts` is
    /// set. Without them: 113 bytes a body at 10⁶ uniform bodies besides the bodies. The body
    /// count is the body capacity until [`StepBuffers::set_body_count`] or a count buffer
    /// given to [`StepStage::record`] says otherwise; no walls until [`StepStage::set_walls`].
    ///
    /// # Errors
    /// [`Error::InvalidBuffer`] for a body buffer without `STORAGE` or of a size that is not
    /// a whole number of records or exceeds a binding; [`Error::TooManyBodies`] beyond
    /// [`GRID_MAX_BODIES`](crate::low_level::grid::GRID_MAX_BODIES); [`Error::Device`] when
    /// the device cannot make the buffers.
    pub fn create_buffers(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        bodies: &wgpu::Buffer,
        options: SweepOptions,
        capacities: StepCapacities,
        ordered_contacts: bool,
    ) -> Result<StepBuffers, Error> {
        let capacities = StepCapacities {
            contacts: self.clamp_contacts(capacities.contacts),
            ..capacities
        };
        let (grid, ordered) = self.outputs(
            device,
            queue,
            bodies,
            options,
            ordered_contacts,
            capacities.contacts,
            None,
        )?;
        let mut buffers = StepBuffers {
            grid,
            walls_merge: None,
            ordered,
            walls: None,
            capacities,
        };
        buffers.write(queue);
        Ok(buffers)
    }

    /// The grid's buffers over `bodies` and, with ordered contacts, the outputs over the
    /// hits it lists (`contacts` of them), the latter with `sorter` where one is handed over.
    #[allow(clippy::too_many_arguments)]
    fn outputs(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        bodies: &wgpu::Buffer,
        options: SweepOptions,
        ordered: bool,
        contacts: u64,
        sorter: Option<lampshade::KeyValueSorter>,
    ) -> Result<(GridBuffers, Option<ContactBuffers>), Error> {
        if !ordered {
            let grid = self.grid.create_buffers(device, queue, bodies, options)?;
            return Ok((grid, None));
        }
        let grid = self
            .grid
            .create_buffers_counted(device, queue, bodies, options, contacts)?;
        let [pairs, impacts, dispatch] = grid.hits();
        let sorter = sorter.unwrap_or_else(|| self.contacts.sorter(device, queue));
        let outputs = self.contacts.create_buffers_with(
            device,
            &ContactInputs {
                params: grid.step_params(),
                bodies,
                pairs,
                impacts,
                sweep_dispatch: dispatch,
            },
            grid.body_capacity(),
            Some(contacts),
            Some(sorter),
        )?;
        Ok((grid, Some(outputs)))
    }

    /// A contact capacity within one binding (of contact records, 64 bytes each), rounded
    /// up to a power of two, at least 1,024.
    fn clamp_contacts(&self, wanted: u64) -> u64 {
        let max = self.max_contacts();
        wanted.min(max).next_power_of_two().max(1024).min(max)
    }

    /// Sets the step's static walls (validated; written with `queue`, taking effect at the
    /// next submission): each body's earliest contact then counts walls as well as bodies.
    /// An empty slice removes them.
    ///
    /// # Errors
    /// [`Error::InvalidWall`] for a bad wall or more than one binding holds;
    /// [`Error::Device`] when the device cannot make the buffers.
    pub fn set_walls(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        buffers: &mut StepBuffers,
        walls: &[Wall],
    ) -> Result<(), Error> {
        crate::validate::validate_walls(walls)?;
        if walls.is_empty() {
            buffers.walls = None;
            self.bind_walls(device, buffers, None);
            return Ok(());
        }
        let fits = buffers
            .walls
            .as_ref()
            .is_some_and(|held| held.buffers.wall_capacity() >= walls.len() as u64);
        if !fits {
            if walls.len() as u64 > self.walls.max_walls() {
                return Err(Error::InvalidWall {
                    wall: walls.len(),
                    reason: "more walls than one binding of this device holds",
                });
            }
            use wgpu::BufferUsages as Usage;
            let bodies = buffers.bodies();
            let scopes = ErrorScopes::push(device);
            let wall_buffer = create_buffer(
                device,
                "step walls",
                Usage::STORAGE | Usage::COPY_DST,
                32 * (walls.len() as u64).next_power_of_two().max(16),
            );
            let contacts = create_buffer(
                device,
                "step wall contacts",
                Usage::STORAGE | Usage::COPY_SRC,
                48 * buffers.body_capacity(),
            );
            pollster::block_on(scopes.finish())?;
            let bound = self
                .walls
                .bind_buffers(device, bodies, &wall_buffer, &contacts)?;
            self.bind_walls(device, buffers, Some(&contacts));
            buffers.walls = Some(StepWalls {
                buffers: bound,
                count: 0,
            });
        }
        let held = buffers.walls.as_mut().expect("made above");
        held.buffers.write_walls(queue, walls)?;
        held.count = walls.len() as u32;
        buffers.write(queue);
        Ok(())
    }

    /// Binds the walls stage's output for the merge into each body's earliest contact, or
    /// none: into the grid's records, or with ordered contacts into the outputs'.
    fn bind_walls(
        &self,
        device: &wgpu::Device,
        buffers: &mut StepBuffers,
        wall_contacts: Option<&wgpu::Buffer>,
    ) {
        let params = buffers.grid.step_params();
        match &mut buffers.ordered {
            Some(outputs) => {
                self.contacts
                    .bind_walls(device, params, outputs, wall_contacts);
            }
            None => {
                let earliest = buffers.grid.earliest();
                buffers.walls_merge = wall_contacts.map(|wall_contacts| {
                    self.contacts
                        .walls_merge(device, params, earliest, wall_contacts)
                });
            }
        }
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

    /// [`StepStage::record`] for a benchmark: calls `stage_end` after each stage's passes
    /// with the stage's name (the grid's `bounds`, `sort`, `cells`, `gather`, `levels`; then
    /// `walls` when there are walls; with ordered contacts `earliest` and `contacts`), where
    /// the benchmark may write a timestamp, or finish the encoder (replacing it with a new
    /// one), submit and wait. Returns every command the step recorded, with the name of its
    /// stage (see [`StepCommand`]).
    ///
    /// # Errors
    /// As [`StepStage::record`], and any error of `stage_end`.
    pub fn record_observed(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &mut StepBuffers,
        count: Option<(&wgpu::Buffer, u64)>,
        stage_end: &mut dyn FnMut(&mut wgpu::CommandEncoder, &'static str) -> Result<(), Error>,
    ) -> Result<Vec<(&'static str, StepCommand)>, Error> {
        let (recorded, log) = observed(|| {
            self.record_stages(encoder, buffers, count, &mut |encoder, stage| {
                super::kernel::observe(|| Observed::StageEnd(stage));
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

    /// [`StepStage::record`], calling `stage_end` after each stage's passes with the
    /// stage's name, as [`StepStage::record_observed`] says.
    pub(super) fn record_stages(
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
        if let Some(outputs) = &mut buffers.ordered {
            let hit_dispatch = buffers.grid.hits()[2];
            self.contacts
                .record_earliest(encoder, outputs, hit_dispatch, body_dispatch);
            stage_end(encoder, "earliest")?;
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
    /// need more than one binding holds; [`Error::Device`] when the device cannot make the
    /// buffers.
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
        if counts.unfinished_queries != 0 {
            return Err(Error::CapacityExceeded {
                what: Counted::WalkSteps,
                at_least: GRID_BUDGET as usize + 1,
                capacity: GRID_BUDGET as usize,
            });
        }
        if counts.contacts_overflowed == 0 || buffers.ordered.is_none() {
            return Err(Error::Device(format!(
                "the step was not valid, yet its counts say nothing that growing mends: {counts:?}"
            )));
        }
        // Counted past the capacity (modulo 2^32: a count that wrapped reads low, and the
        // rerun grows again).
        let contacts = u64::from(counts.contacts);
        if contacts > self.max_contacts() {
            return Err(Error::CapacityExceeded {
                what: Counted::Contacts,
                at_least: contacts as usize,
                capacity: self.max_contacts() as usize,
            });
        }
        let held = buffers.capacities.contacts;
        let next = self.clamp_contacts(contacts.max(held * 2));
        let bodies = buffers.bodies().clone();
        let options = buffers.options();
        let body_count = buffers.body_count();
        // The replaced outputs hand over their sorter (and its workspace); where the new
        // ones cannot be made, the old get a sorter again and stay usable.
        let outputs = buffers.ordered.as_mut().expect("checked above");
        let sorter = outputs.take_sorter();
        let (grid, ordered) =
            match self.outputs(device, queue, &bodies, options, true, next, sorter) {
                Ok(made) => made,
                Err(error) => {
                    outputs.restore_sorter(|| self.contacts.sorter(device, queue));
                    return Err(error);
                }
            };
        buffers.grid = grid;
        buffers.ordered = ordered;
        buffers.capacities.contacts = next;
        let wall_contacts = buffers
            .walls
            .as_ref()
            .map(|walls| walls.buffers.contacts().clone());
        self.bind_walls(device, buffers, wall_contacts.as_ref());
        buffers.grid.set_any_body_count(queue, body_count);
        buffers.write(queue);
        Ok(true)
    }

    /// Contacts one binding of contact records (64 bytes each) holds.
    fn max_contacts(&self) -> u64 {
        self.largest_binding / 64
    }
}

impl StepBuffers {
    /// Writes the host's parameters of the step's walls (options, body count, walls' count)
    /// with `queue`: they take effect at the next submission, for every step recorded in it.
    fn write(&mut self, queue: &wgpu::Queue) {
        if let Some(walls) = &self.walls {
            walls.buffers.write_params(
                queue,
                &self.grid.options(),
                self.grid.body_count(),
                walls.count,
            );
        }
    }

    /// Sets the options of the steps recorded from now on (written with `queue`: they take
    /// effect at the next submission, for every step recorded in it).
    pub fn set_options(&mut self, queue: &wgpu::Queue, options: SweepOptions) {
        self.grid.set_options(queue, options);
        self.write(queue);
    }

    /// Sets the body count of the steps recorded without a count buffer (written with
    /// `queue`, taking effect at the next submission). A count above the body capacity gives
    /// steps whose [`StepCounts::valid`] is 0.
    pub fn set_body_count(&mut self, queue: &wgpu::Queue, body_count: u32) {
        self.grid.set_any_body_count(queue, body_count);
        self.write(queue);
    }

    /// Lowers the steps one body's walk of the grid may take to `steps` (at most, and 0 for,
    /// [`GRID_BUDGET`](crate::low_level::grid::GRID_BUDGET); written with `queue`): for tests
    /// and experiments, which then meet a walk past its budget without a pile of 60,000
    /// bodies.
    pub fn set_walk_budget(&mut self, queue: &wgpu::Queue, steps: u32) {
        self.grid.set_budget(queue, steps);
    }

    /// The body count set by [`StepBuffers::set_body_count`].
    fn body_count(&self) -> u32 {
        self.grid.body_count()
    }

    /// Whether the buffers were made with ordered contacts.
    #[must_use]
    pub fn has_ordered_contacts(&self) -> bool {
        self.ordered.is_some()
    }

    /// The bodies the buffers are bound to (the caller's).
    #[must_use]
    pub fn bodies(&self) -> &wgpu::Buffer {
        self.grid.bodies()
    }

    /// Bodies the body buffer holds.
    #[must_use]
    pub fn body_capacity(&self) -> u64 {
        self.grid.body_capacity()
    }

    /// The capacities the buffers were made for.
    #[must_use]
    pub fn capacities(&self) -> StepCapacities {
        self.capacities
    }

    /// The options of the steps recorded now.
    #[must_use]
    pub fn options(&self) -> SweepOptions {
        self.grid.options()
    }

    /// The step's [`StepCounts`] (`STORAGE | COPY_SRC | COPY_DST`, 48 bytes), written by
    /// each step: a consumer pass binds it (read-only) and skips a step whose `valid` is 0.
    #[must_use]
    pub fn counts(&self) -> &wgpu::Buffer {
        self.grid.step_counts()
    }

    /// Each body's earliest contact, with a body or a wall, as an
    /// [`EarliestRecord`](crate::low_level::layout::EarliestRecord) (`STORAGE | COPY_SRC`, 32 bytes a
    /// body): the least time, then the lowest partner; a wall only where strictly earlier
    /// than every body. An all-zero record (kind
    /// [`EARLIEST_NONE`](crate::low_level::layout::EARLIEST_NONE)) for a body that meets nothing.
    #[must_use]
    pub fn earliest(&self) -> &wgpu::Buffer {
        match &self.ordered {
            Some(outputs) => outputs.earliest(),
            None => self.grid.earliest(),
        }
    }

    /// The contacts in the step's order (by time, then pair), as
    /// [`ContactRecord`](crate::low_level::layout::ContactRecord)s (`STORAGE | COPY_SRC`): the first
    /// [`StepCounts::contacts`] hold them. `None` unless the buffers were made with ordered
    /// contacts.
    #[must_use]
    pub fn ordered_contacts(&self) -> Option<&wgpu::Buffer> {
        self.ordered
            .as_ref()
            .and_then(ContactBuffers::ordered_contacts)
    }

    /// Per body, the complement of the position of its earliest contact in
    /// [`StepBuffers::ordered_contacts`] (0: none), with ordered contacts.
    pub(super) fn earliest_positions(&self) -> Option<&wgpu::Buffer> {
        self.ordered
            .as_ref()
            .and_then(ContactBuffers::earliest_positions)
    }

    /// What the step runs an indirect dispatch for, by the buffer it reads its workgroups
    /// from, or a sort for, by the buffer it reads its count from.
    fn domain_of(&self, buffer: &wgpu::Buffer) -> StepDomain {
        let grid = &self.grid;
        if buffer == grid.body_dispatch() || buffer == grid.sort_count() {
            return StepDomain::Bodies;
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

    /// The walls stage's buffers, with walls.
    pub(super) fn walls(&self) -> Option<&WallBuffers> {
        self.walls.as_ref().map(|walls| &walls.buffers)
    }

    /// Bytes of device memory the buffers hold (not the caller's bodies, nor the sorters'
    /// workspace).
    #[must_use]
    pub fn device_memory_bytes(&self) -> u64 {
        let walls = self.walls.as_ref().map_or(0, |walls| {
            walls.buffers.walls().size() + walls.buffers.contacts().size()
        });
        walls
            + self.grid.device_memory_bytes()
            + self
                .ordered
                .as_ref()
                .map_or(0, ContactBuffers::device_memory_bytes)
    }
}

impl StepCounts {
    /// Whether the step's outputs are whole (`valid` is 1).
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.valid != 0
    }
}
