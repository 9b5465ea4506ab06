//! The step's buffers' lifecycle: made over the caller's bodies, the walls set and bound, the
//! host's parameters written, and what the buffers say of themselves.

use super::capacities::StepCapacities;
use super::stage::{StepBuffers, StepStage, StepWalls};
use crate::error::Error;
use crate::geometry::Wall;
use crate::gpu::buffers::{ErrorScopes, MIN_CAPACITY, capacity_for, create_buffer};
use crate::gpu::contacts::{ContactBuffers, ContactInputs};
use crate::gpu::grid::GridBuffers;
use crate::gpu::walls::WallBuffers;
use crate::layout::{WallContactRecord, WallRecord, bytes_of};
use crate::options::SweepOptions;

/// The fewest walls the step's wall buffer holds: it grows by powers of two from there, within
/// one binding.
const MIN_WALLS: u64 = 16;

impl StepStage {
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
    /// [`GRID_MAX_BODIES`](crate::low_level::grid::GRID_MAX_BODIES); [`Error::OutOfDeviceMemory`]
    /// when the device cannot back the buffers, [`Error::Device`] when it rejects them.
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
        let (mut grid, ordered) = self.outputs(
            device,
            queue,
            bodies,
            options,
            ordered_contacts,
            [capacities.contacts, capacities.saved_queries],
            None,
        )?;
        grid.set_resume_passes(capacities.resume_passes);
        // What the grid holds: the resumes at most MAX_RESUME_PASSES, the slots within a
        // binding.
        let capacities = StepCapacities {
            resume_passes: grid.resume_passes(),
            saved_queries: u64::from(grid.saved_capacity()),
            ..capacities
        };
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

    /// The grid's buffers over `bodies` (room for `saved` walks past their budget a chain)
    /// and, with ordered contacts, the outputs over the hits it lists (`contacts` of them),
    /// the latter with `sorter` where one is handed over.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn outputs(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        bodies: &wgpu::Buffer,
        options: SweepOptions,
        ordered: bool,
        [contacts, saved]: [u64; 2],
        sorter: Option<lampshade::KeyValueSorter>,
    ) -> Result<(GridBuffers, Option<ContactBuffers>), Error> {
        let listed = if ordered { contacts.max(1) } else { 0 };
        let grid = self
            .grid
            .create_buffers_with(device, queue, bodies, options, listed, saved)?;
        if !ordered {
            return Ok((grid, None));
        }
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
            // Each body's earliest contact is the grid's: none of the contacts stage's earliest
            // passes run, and their buffers hold one record.
            [grid.body_capacity(), 1],
            Some(contacts),
            Some(sorter),
        )?;
        Ok((grid, Some(outputs)))
    }

    /// A contact capacity within one binding (of contact records, 64 bytes each), rounded
    /// up to a power of two, at least [`MIN_CAPACITY`].
    pub(super) fn clamp_contacts(&self, wanted: u64) -> u64 {
        capacity_for(wanted, MIN_CAPACITY, self.max_contacts())
    }

    /// Sets the step's static walls (validated; written with `queue`, taking effect at the
    /// next submission): each body's earliest contact then counts walls as well as bodies.
    /// An empty slice removes them.
    ///
    /// # Errors
    /// [`Error::InvalidWall`] for a bad wall or more than one binding holds;
    /// [`Error::OutOfDeviceMemory`] when the device cannot back the buffers, [`Error::Device`]
    /// when it rejects them.
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
                bytes_of::<WallRecord>(capacity_for(
                    walls.len() as u64,
                    MIN_WALLS,
                    self.walls.max_walls(),
                )),
            );
            let contacts = create_buffer(
                device,
                "step wall contacts",
                Usage::STORAGE | Usage::COPY_SRC,
                bytes_of::<WallContactRecord>(buffers.body_capacity()),
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

    /// Binds the walls stage's output for the merge into each body's earliest contact (the
    /// grid's records, with or without ordered contacts), or none.
    pub(super) fn bind_walls(
        &self,
        device: &wgpu::Device,
        buffers: &mut StepBuffers,
        wall_contacts: Option<&wgpu::Buffer>,
    ) {
        let params = buffers.grid.step_params();
        let earliest = buffers.grid.earliest();
        buffers.walls_merge = wall_contacts.map(|wall_contacts| {
            self.contacts
                .walls_merge(device, params, earliest, wall_contacts)
        });
    }
}

impl StepBuffers {
    /// Writes the host's parameters of the step's walls (options, body count, walls' count)
    /// with `queue`: they take effect at the next submission, for every step recorded in it.
    pub(super) fn write(&mut self, queue: &wgpu::Queue) {
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
    /// steps whose [`StepCounts::valid`](crate::low_level::layout::StepCounts::valid) is 0.
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
    pub(super) fn body_count(&self) -> u32 {
        self.grid.body_count()
    }

    /// Whether the buffers were made with ordered contacts.
    #[must_use]
    pub(crate) fn has_ordered_contacts(&self) -> bool {
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
    pub(crate) fn options(&self) -> SweepOptions {
        self.grid.options()
    }

    /// The step's [`StepCounts`](crate::low_level::layout::StepCounts) (`STORAGE | COPY_SRC | COPY_DST`, 48 bytes), written by
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
        self.grid.earliest()
    }

    /// The contacts in the step's order (by time, then pair), as
    /// [`ContactRecord`](crate::low_level::layout::ContactRecord)s (`STORAGE | COPY_SRC`): the first
    /// [`StepCounts::contacts`](crate::low_level::layout::StepCounts::contacts) hold them. `None` unless the buffers were made with ordered
    /// contacts.
    #[must_use]
    pub fn ordered_contacts(&self) -> Option<&wgpu::Buffer> {
        self.ordered
            .as_ref()
            .and_then(ContactBuffers::ordered_contacts)
    }

    /// Per body, the complement of the position of its earliest contact in
    /// [`StepBuffers::ordered_contacts`] (0: none), with ordered contacts.
    pub(crate) fn earliest_positions(&self) -> Option<&wgpu::Buffer> {
        self.ordered
            .as_ref()
            .and_then(ContactBuffers::earliest_positions)
    }

    /// The walls stage's buffers, with walls.
    pub(crate) fn walls(&self) -> Option<&WallBuffers> {
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
