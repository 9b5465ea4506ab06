//! The GPU step as one stage that stays on the device: [`StepStage`] records, into the
//! caller's command encoder, from the caller's body buffer to device buffers of each body's
//! earliest contact and the step's counts, with no host read between, one of two chains:
//!
//! - each body's earliest contact only: the grid ([`GridStage`](super::GridStage),
//!   `shaders/grid.wgsl`, twin [`crate::low_level::grid`]), whose one pass finds, sweeps and
//!   keeps, then the walls ([`WallStage`], `shaders/walls.wgsl`) merged in
//!   (`earliest_walls` of `shaders/contacts.wgsl`);
//! - with ordered contacts: the tree's broad phase ([`BroadPhaseStage`](super::broad_phase),
//!   `shaders/broad_phase.wgsl`), the walls, the sweep of the candidates ([`SweepStage`],
//!   `shaders/sweep.wgsl`) and the outputs (`shaders/contacts.wgsl`), following the CPU twins'
//!   entry points in the same order: [`crate::low_level::broad_phase`],
//!   [`crate::low_level::walls`], [`crate::low_level::sweep`](crate::low_level::sweep) and
//!   [`crate::low_level::contacts`](crate::low_level::contacts).

use super::broad_phase::{
    BroadPhaseBuffers, BroadPhaseCapacities, BroadPhaseStage, CONTINUATION_SIZE,
    COUNTER_CANDIDATES, COUNTER_CANDIDATES_OVERFLOWED, COUNTER_SAVED_OVERFLOWED,
};
use super::buffers::{ErrorScopes, create_buffer};
use super::contacts::{ContactBuffers, ContactInputs, ContactStage};
use super::grid::{GridBuffers, GridStage};
use super::kernel::{
    Observed, ObservedWorkgroups, STORAGE_BUFFERS_PER_STAGE, StageEnd, check_count, check_limits,
    observed, required_limits,
};
use super::sweep::{BODY_SIZE, SweepBuffers, SweepStage};
use super::walls::{WallBuffers, WallStage};
use crate::cpu::broad_phase::INVALID_BODIES;
use crate::cpu::grid::GRID_BUDGET;
use crate::error::{Counted, Error};
use crate::geometry::Wall;
use crate::layout::{StepCounts, SweepDispatch};
use crate::options::SweepOptions;

/// The sorters the stages' buffers keep: the broad phase's, and the ordered contacts'.
struct Sorters {
    broad_phase: lampshade::KeyValueSorter,
    ordered: Option<lampshade::KeyValueSorter>,
}

/// Bytes of an impact record.
const IMPACT_SIZE: u64 = 32;

/// What a [`StepBuffers`] with ordered contacts (the tree's path) holds besides the bodies:
/// candidate pairs, ordered contacts, saved queries in each of the broad phase's two queues,
/// and how many times a step resumes the queries that ran out of steps. [`StepStage::grow`]
/// raises them from a step's [`StepCounts`]. The grid's path (earliest contacts only) has no
/// buffer that a scene can outgrow: it keeps them, unused, for the caller to read back.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StepCapacities {
    /// Candidate pairs of the broad phase (8 bytes each, and their impacts, 32).
    pub candidates: u64,
    /// Ordered contacts (64 bytes each, twice, and two sort records), when asked.
    pub contacts: u64,
    /// Saved queries in each queue (404 bytes each).
    pub saved_queries: u64,
    /// Dispatches of the broad phase's `resume_candidates` a step records.
    pub resume_passes: u32,
}

impl Default for StepCapacities {
    /// 16,384 candidates and contacts, 1,024 saved queries, 2 resume dispatches.
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
    /// Each swept candidate pair (indirect, from the candidates the broad phase counted,
    /// at most the buffers' capacity).
    Candidates,
    /// Each contact (indirect, from the contacts compacted; ordered contacts only).
    Contacts,
    /// Each saved query a resume of the broad phase's queries takes up (indirect).
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
        /// The shader file: `broad_phase.wgsl` ([`BROAD_PHASE_WGSL`](crate::low_level::BROAD_PHASE_WGSL)),
        /// `sweep.wgsl`, `walls.wgsl` or `contacts.wgsl`.
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
    /// Capacities that fit a typical scene of `bodies` bodies without a rerun: 4 candidates
    /// and 2 contacts a body (the test scenes have 2.6 and 0.8 uniformly spread, 3.9 and 1.4
    /// clustered; 12.5 and 5.5 with radii spread 100-fold, which grow once), at least the
    /// defaults.
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

/// The most dispatches of `resume_candidates` a step records: at 4,096 steps each (`BUDGET`
/// in broad_phase.wgsl), enough for a query that meets 2²⁸ leaves.
pub(crate) const MAX_RESUME_PASSES: u32 = 1 << 17;

/// The whole collision step as one stage recorded into the caller's encoder, from the
/// caller's body buffer ([`BodyRecord`](super::BodyRecord)s, usage `STORAGE`) to
/// device buffers of each body's earliest contact ([`StepBuffers::earliest`]) and the step's
/// counts ([`StepBuffers::counts`]), with nothing mapped or read by the host within a step.
/// (The repository's `docs/step.md` has the stage's design and a frame loop in full.)
///
/// ```text
/// earliest contacts only (the grid):
///  caller's bodies ─► grid ──────────────────────────────────────► earliest per body
///  (BodyRecord,       (bounds, frame, levels, cell keys, sort,      (EarliestRecord)
///   STORAGE)           cells, plan, gather: find, sweep, keep)      counts + valid
///  walls ──────────────────────────────────────────────────────► (merged into earliest)
///
/// with ordered contacts (the tree):
///  caller's bodies ─► broad phase ─► candidates ─► sweep ─► earliest ─► earliest per body
///                     (bounds, frame, (pairs +      (impacts)  (keys,     counts + valid
///                      codes, sort,    count)                   records)
///                      tree, queries)              └─► ordered contacts
///  walls ─────────────────────────────────────────────────────► (merged into earliest)
/// ```
///
/// Without ordered contacts, [`StepCounts::candidates`] counts the pairs whose swept boxes
/// meet (and whose groups interact), each once, and [`StepCounts::contacts`] those that hit
/// or overlap: the CPU step's contacts. `unfinished_queries` is 1 where a body's walk of the
/// grid ran past its budget ([`GRID_BUDGET`](crate::low_level::grid::GRID_BUDGET) steps: a
/// pile of tens of thousands of bodies in one place, a body whose path crosses a crowded
/// scene), and [`StepStage::grow`] then returns [`Error::CapacityExceeded`] with
/// [`Counted::WalkSteps`](crate::Counted::WalkSteps): take shorter steps, or make the buffers
/// with ordered contacts, whose tree resumes its queries. The other overflow flags stay 0.
///
/// # Several frames in one submission
/// What changes from frame to frame reaches the device in the encoder: the body count
/// (copied from the caller's buffer), the step's parameters (made by the `frame` pass from
/// the bodies and copied into the uniform), the candidate and contact counts. What the host
/// sets with `Queue::write_buffer` ([`StepBuffers::set_options`],
/// [`StepBuffers::set_body_count`], [`StepStage::set_walls`]) applies to every frame of the
/// next submission.
///
/// # Overflow, with no host round trip and no tunnelling
/// Every count keeps counting past its buffer's capacity, and the step still runs to its
/// end; [`StepCounts::valid`] is then 0. A consumer pass recorded after the step checks it
/// and does nothing, so a partial answer is never applied: the bodies are as the frame found
/// them. The caller reads the counts with whatever it reads (a few bytes a frame, or every
/// few frames), calls [`StepStage::grow`] once (every capacity the counts prove short, to the
/// next power of two; the resume dispatches doubled where queries were left unfinished), and
/// records the frame again from the bodies it kept. A count that exceeds one binding is
/// [`Error::CapacityExceeded`]; a body count past the body buffer, [`Error::TooManyBodies`].
/// Frames recorded in one submission cannot grow between them: make the buffers with room
/// ([`StepCapacities`]; the defaults, 16,384 candidates, overflow at a few thousand bodies of
/// a scene with radii 100× apart) and keep the last valid frame's bodies until the counts are
/// read.
///
/// # Bad bodies
/// The host does not see the bodies, so the step checks them: a centre, displacement or
/// radius that is NaN or infinite, or a negative radius, sets
/// [`StepCounts::invalid_bodies`] and makes the step invalid (the consumer skips it,
/// [`StepStage::grow`] returns [`Error::InvalidBuffer`]). Every pass's work is bounded
/// whatever the buffer holds.
///
/// # Limits
/// Each entry point binds at most 7 storage buffers, within wgpu's default limits (8 a
/// stage); [`StepStage::required_limits`] says what to ask for, and a device below it gets
/// [`Error::DeviceLimit`] from [`StepStage::new`], not a validation panic.
///
/// **Collision groups.** The broad phase reads each body's groups from its record's spare
/// word ([`BodyRecord::groups`](crate::layout::BodyRecord#structfield.groups), the
/// complement of [`CollisionGroups::bits`](crate::CollisionGroups::bits), so that a zeroed
/// word lets the body meet every other): the caller writes it in its own bodies' buffer
/// ([`BodyRecord::with_groups`](crate::layout::BodyRecord::with_groups)), and a pair whose
/// groups do not interact is never a candidate. Walls are not filtered.
#[derive(Debug, Clone)]
pub struct StepStage {
    grid: GridStage,
    broad_phase: BroadPhaseStage,
    sweep: SweepStage,
    contacts: ContactStage,
    walls: WallStage,
    /// The largest storage binding of the device, in bytes.
    largest_binding: u64,
}

/// The buffers of one [`StepStage`]: the caller's bodies (bound), each stage's buffers at
/// their capacities (with the radix sorters' state: lampshade's sorter records with `&mut
/// self` and keeps its workspace from step to step), and the walls. Made once by
/// [`StepStage::create_buffers`]; [`StepStage::grow`] replaces what outgrew its capacity.
pub struct StepBuffers {
    path: Path,
    walls: Option<StepWalls>,
    capacities: StepCapacities,
}

/// Which broad phase a step's buffers run.
enum Path {
    /// Each body's earliest contact only: the grid, whose one pass finds, sweeps and keeps.
    Grid(Box<GridPath>),
    /// With ordered contacts: the tree's candidates, their sweep and the outputs.
    Tree(Box<TreePath>),
}

/// The grid's buffers, and the merge of the walls into its earliest contacts.
struct GridPath {
    grid: GridBuffers,
    walls_merge: Option<wgpu::BindGroup>,
}

/// The tree's broad phase, the sweep of its candidates and the outputs.
struct TreePath {
    broad_phase: BroadPhaseBuffers,
    impacts: wgpu::Buffer,
    sweep: SweepBuffers,
    outputs: ContactBuffers,
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
    /// The most dispatches of `resume_candidates` a step records: at 4,096 steps each, enough
    /// for a query that meets 2²⁸ leaves.
    pub const MAX_RESUME_PASSES: u32 = MAX_RESUME_PASSES;

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
        let sweep = SweepStage::new(device)?;
        let walls = WallStage::new(device)?;
        let (grid, broad_phase, contacts) = match adapter {
            Some(adapter) => (
                GridStage::for_adapter(device, adapter)?,
                BroadPhaseStage::for_adapter(device, adapter)?,
                ContactStage::for_adapter(device, adapter)?,
            ),
            None => (
                GridStage::new(device)?,
                BroadPhaseStage::new(device)?,
                ContactStage::new(device)?,
            ),
        };
        debug_assert!(
            broad_phase
                .storage_buffers()
                .max(contacts.storage_buffers())
                <= STORAGE_BUFFERS_PER_STAGE
        );
        let limits = device.limits();
        Ok(Self {
            grid,
            broad_phase,
            sweep,
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
    /// (`max_storage_buffer_binding_size`, `max_buffer_size`) let a step hold more bodies,
    /// candidates and contacts.
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
    /// for `options` and `capacities` (each clamped to what one binding holds; rounded up
    /// to a power of two), with the ordered contacts' buffers when `ordered_contacts` is set.
    /// Without ordered contacts the step runs the grid (145 bytes a body at 10⁶ uniform
    /// bodies besides the bodies; `capacities` unused); with them, the tree, its candidates
    /// and the ordered contacts' sort. The body count is the body capacity until [`StepBuffers::set_body_count`] or a count
    /// buffer given to [`StepStage::record`] says otherwise; no walls until
    /// [`StepStage::set_walls`].
    ///
    /// # Errors
    /// [`Error::InvalidBuffer`] for a body buffer without `STORAGE` or of a size that is not
    /// a whole number of records or exceeds a binding; [`Error::TooManyBodies`] beyond
    /// [`MAX_BODIES`](crate::cpu::ContactFinder::MAX_BODIES); [`Error::Device`] when the device cannot make
    /// the buffers.
    pub fn create_buffers(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        bodies: &wgpu::Buffer,
        options: SweepOptions,
        capacities: StepCapacities,
        ordered_contacts: bool,
    ) -> Result<StepBuffers, Error> {
        let capacities = self.clamp(capacities);
        let path = if ordered_contacts {
            let sorters = Sorters {
                broad_phase: self.broad_phase.sorter(device, queue, bodies),
                ordered: Some(self.contacts.sorter(device, queue)),
            };
            let mut tree = self.assemble(device, bodies, capacities, None, sorters)?;
            let body_capacity = tree.broad_phase.body_capacity() as u32;
            tree.broad_phase.set_options(queue, options);
            tree.broad_phase.set_body_count(queue, body_capacity);
            Path::Tree(Box::new(tree))
        } else {
            let grid = self.grid.create_buffers(device, queue, bodies, options)?;
            Path::Grid(Box::new(GridPath {
                grid,
                walls_merge: None,
            }))
        };
        let mut buffers = StepBuffers {
            path,
            walls: None,
            capacities,
        };
        buffers.write(queue);
        Ok(buffers)
    }

    /// Capacities within one binding, rounded up to powers of two.
    fn clamp(&self, wanted: StepCapacities) -> StepCapacities {
        let grow = |count: u64, least: u64, max: u64| {
            count.min(max).next_power_of_two().max(least).min(max)
        };
        StepCapacities {
            candidates: grow(wanted.candidates, 1024, self.max_candidates()),
            contacts: grow(wanted.contacts, 1024, self.max_contacts()),
            saved_queries: grow(wanted.saved_queries, 1, self.max_saved_queries()),
            resume_passes: wanted.resume_passes.clamp(1, MAX_RESUME_PASSES),
        }
    }

    /// The tree's buffers at `capacities` over `bodies`, with the walls stage's output
    /// `wall_contacts` and `sorters`; the host's parameters are left for
    /// [`StepBuffers::write`].
    fn assemble(
        &self,
        device: &wgpu::Device,
        bodies: &wgpu::Buffer,
        capacities: StepCapacities,
        wall_contacts: Option<&wgpu::Buffer>,
        sorters: Sorters,
    ) -> Result<TreePath, Error> {
        let broad_phase = self.broad_phase.create_buffers_with(
            device,
            bodies,
            BroadPhaseCapacities {
                candidates: capacities.candidates,
                saved_queries: capacities.saved_queries,
                resume_passes: capacities.resume_passes,
            },
            sorters.broad_phase,
        )?;
        let scopes = ErrorScopes::push(device);
        let impacts = create_buffer(
            device,
            "step impacts",
            wgpu::BufferUsages::STORAGE,
            IMPACT_SIZE * capacities.candidates,
        );
        pollster::block_on(scopes.finish())?;
        let sweep = self
            .sweep
            .bind_buffers(device, bodies, broad_phase.pairs(), &impacts)?;
        let mut outputs = self.contacts.create_buffers_with(
            device,
            &ContactInputs {
                params: broad_phase.params(),
                bodies,
                pairs: broad_phase.pairs(),
                impacts: &impacts,
                sweep_dispatch: sweep.dispatch(),
            },
            broad_phase.body_capacity(),
            Some(capacities.contacts),
            sorters.ordered,
        )?;
        // The merge of the walls binds the new outputs.
        self.contacts
            .bind_walls(device, broad_phase.params(), &mut outputs, wall_contacts);
        Ok(TreePath {
            broad_phase,
            impacts,
            sweep,
            outputs,
        })
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
    /// none.
    fn bind_walls(
        &self,
        device: &wgpu::Device,
        buffers: &mut StepBuffers,
        wall_contacts: Option<&wgpu::Buffer>,
    ) {
        match &mut buffers.path {
            Path::Grid(path) => {
                let grid = &path.grid;
                path.walls_merge = wall_contacts.map(|wall_contacts| {
                    let params = grid.step_params();
                    self.contacts
                        .walls_merge(device, params, grid.earliest(), wall_contacts)
                });
            }
            Path::Tree(tree) => {
                let params = tree.broad_phase.params();
                self.contacts
                    .bind_walls(device, params, &mut tree.outputs, wall_contacts);
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
    /// the bodies hold (a query walks at most 4,096 steps a dispatch, the resumes are
    /// counted), so a hostile buffer gives an invalid step, never a hang.
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
    /// with the stage's name (without ordered contacts, the grid's `bounds`, `sort`, `cells`,
    /// `gather`, `levels`, then `walls` when there are walls; with them, `bounds`, `sort`,
    /// `hierarchy`, `candidates`, `walls` when there are walls, `sweep`, `earliest`,
    /// `contacts`, `counts`), where the
    /// benchmark may write a timestamp, or finish the encoder (replacing it with a new one),
    /// submit and wait. Returns every command the step recorded, with the name of its stage
    /// (see [`StepCommand`]).
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
        let pair_count = std::mem::offset_of!(SweepDispatch, pair_count) as u64;
        match &mut buffers.path {
            Path::Grid(path) => {
                self.grid
                    .record_stages(encoder, &mut path.grid, count, stage_end)?;
                if let (Some(walls), Some(merge)) = (&buffers.walls, &path.walls_merge) {
                    let body_dispatch = path.grid.body_dispatch();
                    self.walls.record_counted(
                        encoder,
                        &walls.buffers,
                        (body_dispatch, pair_count),
                        body_dispatch,
                    );
                    self.contacts
                        .record_walls_merge(encoder, merge, body_dispatch);
                    stage_end(encoder, "walls")?;
                }
                Ok(())
            }
            Path::Tree(tree) => {
                self.record_tree(encoder, tree, buffers.walls.as_ref(), count, stage_end)
            }
        }
    }

    /// The tree's path of [`StepStage::record_stages`]: with ordered contacts.
    fn record_tree(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        tree: &mut TreePath,
        walls: Option<&StepWalls>,
        count: Option<(&wgpu::Buffer, u64)>,
        stage_end: &mut StageEnd<'_>,
    ) -> Result<(), Error> {
        self.broad_phase
            .record_stages(encoder, &mut tree.broad_phase, count, stage_end)?;
        let broad_phase = &tree.broad_phase;
        let body_dispatch = broad_phase.body_dispatch();
        let body_count = (
            body_dispatch,
            std::mem::offset_of!(SweepDispatch, pair_count) as u64,
        );
        if let Some(walls) = walls {
            self.walls
                .record_counted(encoder, &walls.buffers, body_count, body_dispatch);
            stage_end(encoder, "walls")?;
        }
        self.sweep.record_counted(
            encoder,
            &tree.sweep,
            broad_phase.counters(),
            4 * COUNTER_CANDIDATES,
        );
        stage_end(encoder, "sweep")?;
        let sweep_dispatch = tree.sweep.dispatch();
        self.contacts
            .record_earliest(encoder, &tree.outputs, sweep_dispatch, body_dispatch);
        let counts = &tree.outputs.counts;
        let hit_count = tree.outputs.hit_count();
        copy_word(encoder, hit_count, 0, counts, field(Field::Contacts));
        stage_end(encoder, "earliest")?;
        self.contacts
            .record_ordered(encoder, &mut tree.outputs, sweep_dispatch)?;
        let ordered = tree.outputs.ordered.as_ref().expect("made with them");
        let overflowed = std::mem::offset_of!(SweepDispatch, overflowed) as u64;
        let counts = &tree.outputs.counts;
        copy_word(
            encoder,
            ordered.dispatch(),
            overflowed,
            counts,
            field(Field::ContactsOverflowed),
        );
        stage_end(encoder, "contacts")?;
        let broad_phase = &tree.broad_phase;
        copy_word(
            encoder,
            body_count.0,
            body_count.1,
            counts,
            field(Field::Bodies),
        );
        let counters = broad_phase.counters();
        for (word, into) in [
            (COUNTER_CANDIDATES, Field::Candidates),
            (COUNTER_CANDIDATES_OVERFLOWED, Field::CandidatesOverflowed),
            (COUNTER_SAVED_OVERFLOWED, Field::SavedQueriesOverflowed),
        ] {
            copy_word(encoder, counters, 4 * word, counts, field(into));
        }
        copy_word(
            encoder,
            broad_phase.unfinished_queries(),
            0,
            counts,
            field(Field::UnfinishedQueries),
        );
        copy_word(
            encoder,
            broad_phase.bounds(),
            4 * INVALID_BODIES as u64,
            counts,
            field(Field::InvalidBodies),
        );
        self.contacts.record_finish(encoder, &tree.outputs);
        stage_end(encoder, "counts")
    }

    /// Grows `buffers` for the step whose counts are `counts` (read back from
    /// [`StepBuffers::counts`] after a step with `valid` 0): the candidates, contacts and
    /// saved queries to the next power of two at or above what the step counted (what it
    /// could count: where the candidates overflowed, the contacts among those that fitted,
    /// scaled up), and twice the resume dispatches where queries were left unfinished.
    /// Returns whether anything grew (false for a valid step). Then record the frame again
    /// from the bodies it started from.
    ///
    /// # Errors
    /// [`Error::InvalidBuffer`] (`bodies`) when a body of the step is one it cannot sweep
    /// ([`StepCounts::invalid_bodies`]: growing does not help);
    /// [`Error::TooManyBodies`] when the step's body count exceeds the body buffer (bind a
    /// larger one with new buffers); [`Error::CapacityExceeded`] when the step proved that
    /// it needs more than one binding holds; [`Error::Device`] when the device cannot make
    /// the buffers.
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
        let held = buffers.capacities;
        let tree = match &mut buffers.path {
            Path::Tree(tree) => tree,
            Path::Grid(_) if counts.unfinished_queries != 0 => {
                return Err(Error::CapacityExceeded {
                    what: Counted::WalkSteps,
                    at_least: GRID_BUDGET as usize + 1,
                    capacity: GRID_BUDGET as usize,
                });
            }
            Path::Grid(_) => {
                return Err(Error::Device(format!(
                    "the grid step was not valid, yet its counts say nothing was wrong: {counts:?}"
                )));
            }
        };
        let next = self.next_capacities(held, counts, true)?;
        let bodies = tree.broad_phase.bodies().clone();
        let (options, body_count) = (*tree.broad_phase.options(), tree.broad_phase.body_count());
        // The replaced buffers hand over their sorters (and the sorters' workspace); where the
        // new ones cannot be made, the old get sorters again and stay usable.
        let sorters = Sorters {
            broad_phase: tree
                .broad_phase
                .take_sorter()
                .unwrap_or_else(|| self.broad_phase.sorter(device, queue, &bodies)),
            ordered: Some(
                tree.outputs
                    .take_sorter()
                    .unwrap_or_else(|| self.contacts.sorter(device, queue)),
            ),
        };
        let wall_contacts = buffers.walls.as_ref().map(|walls| walls.buffers.contacts());
        let next = self.clamp(next);
        let grown = self.assemble(device, &bodies, next, wall_contacts, sorters);
        let mut grown = match grown {
            Ok(grown) => grown,
            Err(error) => {
                tree.broad_phase
                    .restore_sorter(|| self.broad_phase.sorter(device, queue, &bodies));
                tree.outputs
                    .restore_sorter(|| self.contacts.sorter(device, queue));
                return Err(error);
            }
        };
        grown.broad_phase.set_options(queue, options);
        grown.broad_phase.set_body_count(queue, body_count);
        **tree = grown;
        buffers.capacities = next;
        buffers.write(queue);
        Ok(true)
    }

    /// The capacities for the rerun of a step that `counts` says was incomplete with
    /// buffers of `held`; an error where the step proved that it needs more than one binding
    /// holds.
    fn next_capacities(
        &self,
        held: StepCapacities,
        counts: &StepCounts,
        ordered: bool,
    ) -> Result<StepCapacities, Error> {
        let mut next = held;
        let candidates = candidates_at_least(counts, held.candidates);
        // Hits among the candidates that fitted, which were all that was swept.
        let contacts = u64::from(counts.contacts);
        let mut limits = vec![(Counted::Candidates, candidates, self.max_candidates())];
        if ordered {
            limits.push((Counted::Contacts, contacts, self.max_contacts()));
        }
        for (what, at_least, max) in limits {
            if at_least > max {
                return Err(Error::CapacityExceeded {
                    what,
                    at_least: usize::try_from(at_least).unwrap_or(usize::MAX),
                    capacity: max as usize,
                });
            }
        }
        if counts.unfinished_queries != 0 {
            // Queries still walking: give them more dispatches. The counts above are then
            // lower bounds, still worth growing to.
            next.resume_passes = held.resume_passes.saturating_mul(2);
            if next.resume_passes > MAX_RESUME_PASSES {
                return Err(Error::Device(format!(
                    "the broad phase's queries did not finish in {MAX_RESUME_PASSES} dispatches"
                )));
            }
        }
        if counts.saved_queries_overflowed != 0 {
            next.saved_queries = (held.saved_queries * 4).min(self.max_saved_queries().max(1));
            if next.saved_queries == held.saved_queries {
                return Err(Error::CapacityExceeded {
                    what: Counted::SavedQueries,
                    at_least: held.saved_queries as usize + 1,
                    capacity: held.saved_queries as usize,
                });
            }
        }
        next.candidates = next.candidates.max(candidates);
        // Only the candidates that fitted were swept: expect the contacts of the rest in the
        // same proportion. A guess to grow to, within one binding; only a counted excess
        // (above) is an error.
        let swept = candidates.min(held.candidates).max(1);
        let expected = contacts.saturating_mul(candidates.div_ceil(swept));
        next.contacts = next.contacts.max(expected.min(self.max_contacts()));
        Ok(next)
    }

    /// Candidates one binding of impact records (32 bytes each) holds.
    fn max_candidates(&self) -> u64 {
        self.largest_binding / IMPACT_SIZE
    }

    /// Contacts one binding of contact records (64 bytes each) holds.
    fn max_contacts(&self) -> u64 {
        self.largest_binding / 64
    }

    /// Saved queries one binding holds.
    fn max_saved_queries(&self) -> u64 {
        (self.largest_binding - 16) / CONTINUATION_SIZE
    }
}

impl StepBuffers {
    /// Writes the host's parameters of the step (options, capacities, body count, walls'
    /// count) with `queue`: they take effect at the next submission, for every step
    /// recorded in it.
    fn write(&mut self, queue: &wgpu::Queue) {
        let (options, body_count) = (self.options(), self.body_count());
        if let Path::Tree(tree) = &mut self.path {
            tree.broad_phase
                .set_contact_capacity(queue, self.capacities.contacts);
            tree.sweep.write_params(queue, &options);
            let capacity = (tree.broad_phase.body_capacity() as u32).to_le_bytes();
            queue.write_buffer(&tree.outputs.counts, field(Field::BodyCapacity), &capacity);
        }
        if let Some(walls) = &self.walls {
            walls
                .buffers
                .write_params(queue, &options, body_count, walls.count);
        }
    }

    /// Sets the options of the steps recorded from now on (written with `queue`: they take
    /// effect at the next submission, for every step recorded in it).
    pub fn set_options(&mut self, queue: &wgpu::Queue, options: SweepOptions) {
        match &mut self.path {
            Path::Grid(path) => path.grid.set_options(queue, options),
            Path::Tree(tree) => tree.broad_phase.set_options(queue, options),
        }
        self.write(queue);
    }

    /// Sets the body count of the steps recorded without a count buffer (written with
    /// `queue`, taking effect at the next submission). A count above the body capacity gives
    /// steps whose [`StepCounts::valid`] is 0.
    pub fn set_body_count(&mut self, queue: &wgpu::Queue, body_count: u32) {
        match &mut self.path {
            Path::Grid(path) => path.grid.set_any_body_count(queue, body_count),
            Path::Tree(tree) => tree.broad_phase.set_body_count(queue, body_count),
        }
        self.write(queue);
    }

    /// Lowers the steps one body's walk of the grid may take to `steps` (at most, and 0 for,
    /// [`GRID_BUDGET`](crate::low_level::grid::GRID_BUDGET); written with `queue`): for tests
    /// and experiments, which then meet a walk past its budget without a pile of 60,000
    /// bodies. Nothing changes with ordered contacts (the tree's path).
    pub fn set_walk_budget(&mut self, queue: &wgpu::Queue, steps: u32) {
        if let Path::Grid(path) = &mut self.path {
            path.grid.set_budget(queue, steps);
        }
    }

    /// The body count set by [`StepBuffers::set_body_count`].
    fn body_count(&self) -> u32 {
        match &self.path {
            Path::Grid(path) => path.grid.body_count(),
            Path::Tree(tree) => tree.broad_phase.body_count(),
        }
    }

    /// Whether the buffers were made with ordered contacts (the tree's path; without them,
    /// the grid's).
    #[must_use]
    pub fn has_ordered_contacts(&self) -> bool {
        matches!(self.path, Path::Tree(_))
    }

    /// The bodies the buffers are bound to (the caller's).
    #[must_use]
    pub fn bodies(&self) -> &wgpu::Buffer {
        match &self.path {
            Path::Grid(path) => path.grid.bodies(),
            Path::Tree(tree) => tree.broad_phase.bodies(),
        }
    }

    /// Bodies the body buffer holds.
    #[must_use]
    pub fn body_capacity(&self) -> u64 {
        match &self.path {
            Path::Grid(path) => path.grid.body_capacity(),
            Path::Tree(tree) => tree.broad_phase.body_capacity(),
        }
    }

    /// The capacities the buffers were made for (the grid's path, without ordered contacts,
    /// has none to fill: they apply once [`StepStage::create_buffers`] makes buffers with
    /// ordered contacts).
    #[must_use]
    pub fn capacities(&self) -> StepCapacities {
        self.capacities
    }

    /// The options of the steps recorded now.
    #[must_use]
    pub fn options(&self) -> SweepOptions {
        match &self.path {
            Path::Grid(path) => path.grid.options(),
            Path::Tree(tree) => *tree.broad_phase.options(),
        }
    }

    /// The step's [`StepCounts`] (`STORAGE | COPY_SRC | COPY_DST`, 48 bytes), written by
    /// each step: a consumer pass binds it (read-only) and skips a step whose `valid` is 0.
    #[must_use]
    pub fn counts(&self) -> &wgpu::Buffer {
        match &self.path {
            Path::Grid(path) => path.grid.step_counts(),
            Path::Tree(tree) => &tree.outputs.counts,
        }
    }

    /// Each body's earliest contact, with a body or a wall, as an
    /// [`EarliestRecord`](crate::low_level::layout::EarliestRecord) (`STORAGE | COPY_SRC`, 32 bytes a
    /// body): the least time, then the lowest partner; a wall only where strictly earlier
    /// than every body. An all-zero record (kind
    /// [`EARLIEST_NONE`](crate::low_level::layout::EARLIEST_NONE)) for a body that meets nothing.
    #[must_use]
    pub fn earliest(&self) -> &wgpu::Buffer {
        match &self.path {
            Path::Grid(path) => path.grid.earliest(),
            Path::Tree(tree) => tree.outputs.earliest(),
        }
    }

    /// The contacts in the step's order (by time, then pair), as
    /// [`ContactRecord`](crate::low_level::layout::ContactRecord)s (`STORAGE | COPY_SRC`): the first
    /// [`StepCounts::contacts`] hold them. `None` unless the buffers were made with ordered
    /// contacts.
    #[must_use]
    pub fn ordered_contacts(&self) -> Option<&wgpu::Buffer> {
        match &self.path {
            Path::Grid(_) => None,
            Path::Tree(tree) => tree.outputs.ordered_contacts(),
        }
    }

    /// Per body, the complement of the position of its earliest contact in
    /// [`StepBuffers::ordered_contacts`] (0: none), with ordered contacts.
    pub(super) fn earliest_positions(&self) -> Option<&wgpu::Buffer> {
        match &self.path {
            Path::Grid(_) => None,
            Path::Tree(tree) => tree.outputs.earliest_positions(),
        }
    }

    /// What the step runs an indirect dispatch for, by the buffer it reads its workgroups
    /// from, or a sort for, by the buffer it reads its count from.
    fn domain_of(&self, buffer: &wgpu::Buffer) -> StepDomain {
        let tree = match &self.path {
            Path::Grid(path) => {
                let grid = &path.grid;
                assert!(
                    buffer == grid.body_dispatch() || buffer == grid.sort_count(),
                    "the grid dispatches and sorts only from its body count"
                );
                return StepDomain::Bodies;
            }
            Path::Tree(tree) => tree,
        };
        let broad_phase = &tree.broad_phase;
        let ordered = tree.outputs.ordered.as_ref();
        if *buffer == broad_phase.body_dispatch || *buffer == broad_phase.body_count {
            StepDomain::Bodies
        } else if buffer == tree.sweep.dispatch() {
            StepDomain::Candidates
        } else if *buffer == broad_phase.resume_dispatch {
            StepDomain::SavedQueries
        } else if ordered.is_some_and(|o| buffer == o.dispatch() || *buffer == o.contact_count) {
            StepDomain::Contacts
        } else {
            unreachable!("the step dispatches and sorts only from counts of its own")
        }
    }

    /// The walls stage's buffers, with walls.
    pub(super) fn walls(&self) -> Option<&WallBuffers> {
        self.walls.as_ref().map(|walls| &walls.buffers)
    }

    /// Bytes of device memory the buffers hold (not the caller's bodies, nor the sorter's
    /// workspace).
    #[must_use]
    pub fn device_memory_bytes(&self) -> u64 {
        let walls = self.walls.as_ref().map_or(0, |walls| {
            walls.buffers.walls().size() + walls.buffers.contacts().size()
        });
        walls
            + match &self.path {
                Path::Grid(path) => path.grid.device_memory_bytes(),
                Path::Tree(tree) => {
                    tree.broad_phase.device_memory_bytes()
                        + tree.impacts.size()
                        + tree.sweep.device_memory_bytes_own()
                        + tree.outputs.device_memory_bytes()
                }
            }
    }
}

/// The words of [`StepCounts`] the step copies in.
#[derive(Clone, Copy)]
enum Field {
    Bodies,
    Candidates,
    Contacts,
    BodyCapacity,
    CandidatesOverflowed,
    UnfinishedQueries,
    SavedQueriesOverflowed,
    ContactsOverflowed,
    InvalidBodies,
}

/// The byte offset of `field` in [`StepCounts`].
fn field(field: Field) -> u64 {
    use std::mem::offset_of;
    (match field {
        Field::Bodies => offset_of!(StepCounts, bodies),
        Field::Candidates => offset_of!(StepCounts, candidates),
        Field::Contacts => offset_of!(StepCounts, contacts),
        Field::BodyCapacity => offset_of!(StepCounts, body_capacity),
        Field::CandidatesOverflowed => offset_of!(StepCounts, candidates_overflowed),
        Field::UnfinishedQueries => offset_of!(StepCounts, unfinished_queries),
        Field::SavedQueriesOverflowed => offset_of!(StepCounts, saved_queries_overflowed),
        Field::ContactsOverflowed => offset_of!(StepCounts, contacts_overflowed),
        Field::InvalidBodies => offset_of!(StepCounts, invalid_bodies),
    }) as u64
}

fn copy_word(
    encoder: &mut wgpu::CommandEncoder,
    from: &wgpu::Buffer,
    offset: u64,
    to: &wgpu::Buffer,
    to_offset: u64,
) {
    encoder.copy_buffer_to_buffer(from, offset, to, to_offset, 4);
}

/// A proven lower bound of the step's candidates from what the device counted with buffers
/// for `held`. The count read back is the true count less a multiple of 2³² (`atomicAdd`
/// wraps), so never above it; where the overflow flag is up (a candidate was counted at a
/// slot past the capacity) yet the count is within the capacity, it wrapped at least once.
pub(super) fn candidates_at_least(counts: &StepCounts, held: u64) -> u64 {
    let counted = u64::from(counts.candidates);
    if counts.candidates_overflowed != 0 && counted <= held {
        counted + (1 << 32)
    } else {
        counted
    }
}

impl StepCounts {
    /// Whether the step's outputs are whole (`valid` is 1).
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.valid != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The candidates' lower bound is the count read back, or, where the flag says that the
    /// count wrapped past 2³², that count plus 2³²: never an extrapolation.
    #[test]
    fn candidates_at_least_is_the_count_or_past_its_wrap() {
        let counts = |candidates, candidates_overflowed| StepCounts {
            candidates,
            candidates_overflowed,
            ..StepCounts::default()
        };
        let held = 1 << 20;
        assert_eq!(candidates_at_least(&counts(5, 0), held), 5);
        assert_eq!(
            candidates_at_least(&counts(held as u32 + 7, 1), held),
            held + 7
        );
        assert_eq!(
            candidates_at_least(&counts(u32::MAX, 1), held),
            u64::from(u32::MAX)
        );
        // Counted past the capacity, yet the count is within it: it wrapped.
        assert_eq!(candidates_at_least(&counts(3, 1), held), (1 << 32) + 3);
        assert_eq!(
            candidates_at_least(&counts(held as u32, 1), held),
            (1 << 32) + held
        );
    }
}
