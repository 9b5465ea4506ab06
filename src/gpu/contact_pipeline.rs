//! `ContactPipeline`: the blocking convenience on [`StepStage`]: the whole collision step on
//! the GPU from host slices, in the manner of [`SweepPipeline`](super::SweepPipeline) on
//! [`SweepStage`](super::SweepStage). It uploads the bodies, records the step, reads back the
//! counts (growing the buffers and recording again where a step overflowed: the bodies stay
//! on the device) and then only what was asked: the ordered contacts up to their count.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::par::prelude::*;

use super::buffers::{
    BufferSet, DeviceWaiter, ErrorScopes, GrowingBuffer, MIN_CAPACITY, PerItem, UPLOAD, Upload,
    bytes_per_item, capacity_for,
};
use super::context::GpuContext;
use super::host_profile::{Timer, pool_threads, span};
use super::pipeline::DEFAULT_POLL_TIMEOUT;
use super::step::{StepBuffers, StepCapacities, StepStage};
use crate::answers::EarliestImpact;
use crate::cpu::{Contact, Contacts, Earliest, wall_contacts_into, wall_records_into};
use crate::error::Error;
use crate::geometry::{MovingSphere, Wall};
use crate::groups::CollisionGroups;
use crate::layout::{
    BodyRecord, ContactRecord, EarliestRecord, StepCounts, WallContactRecord, bytes_of,
};
use crate::options::SweepOptions;
use crate::validate::check_length;
use crate::validate::{check_against, pack_bodies_with_groups};

/// The usage of a readback buffer.
const READBACK: wgpu::BufferUsages =
    wgpu::BufferUsages::MAP_READ.union(wgpu::BufferUsages::COPY_DST);

/// The bodies the step reads, a record a body.
const BODIES: PerItem = PerItem::of::<BodyRecord>(
    "step bodies",
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_DST),
);

/// The kept buffer the bodies are uploaded from, a record a body.
const BODY_UPLOAD: PerItem = PerItem::of::<BodyRecord>("step body upload", UPLOAD);

/// The first readback, by its record a body on [`ContactPipeline::find`]'s path: each body's
/// earliest contact's position in the order. It also holds the counts, and with walls each
/// body's earliest wall contact; [`ContactPipeline::find_earliest`] reads each body's
/// earliest record there instead of its position.
const READBACK_PER_BODY: PerItem = PerItem::of::<u32>("step readback", READBACK);

/// The ordered contacts' readback, a record a contact.
const CONTACTS_READBACK: PerItem = PerItem::of::<ContactRecord>("step contacts readback", READBACK);

/// The pipeline's own buffers of a record a body, besides the step's.
const PER_BODY: [PerItem; 3] = [BODIES, BODY_UPLOAD, READBACK_PER_BODY];

/// The whole collision step on the GPU from the bodies alone: every pair that touches during
/// the step (or overlaps at its start), ordered by time and pair, each body's earliest
/// contact and the step's earliest, as [`crate::cpu::find_contacts`] gives them, with no
/// candidate pair ever leaving the device.
///
/// Build it once and call [`ContactPipeline::find`] every step. It records [`StepStage`]
/// on the bodies it uploads, in one submission, and reads back the counts, then the ordered
/// contacts up to their count:
///
/// ```text
/// bodies ─ upload ─► scene_bounds ─► frame ─► grid_widths ─► grid_frame ─► grid_keys ─► sort
///   (32 B/body)      (atomic min/   (local    (extents)      (levels)      (cell key)   (one)
///                     max, bins)     frame)
///   grid_cells ─► grid_plan ─► grid_gather_counted ─► earliest_* ─► compact ─► sort ×3
///   (entries,     (who          (find, sweep, keep;     (no sort)     (hits)     (second,
///    ranges)       searches)     each hit listed once)                           first, time)
///   ─► order_contacts ─► readback: counts and earliest positions; then the contacts
/// ```
///
/// Used by: the README's quick start (the GPU step), `examples/bullets.rs`, `examples/gas.rs`.
///
/// # Overflow
/// The contacts have a capacity: at first one that fits a typical scene of the bodies
/// ([`StepCapacities::for_bodies`]: 2 contacts a body, at least 16,384), or the caller's
/// ([`ContactPipeline::with_capacities`]). The gather counts every hit, listing only those
/// that fit; when the count exceeds the capacity, the pipeline grows the buffers to the next
/// power of two at or above it and runs the step again on the bodies already on the device,
/// so nothing is dropped ([`ContactPipeline::reruns`] says how often the last step ran
/// again). The buffers keep their size for later steps.
///
/// A body's walk of the grid takes at most
/// [`GRID_BUDGET`](crate::low_level::grid::GRID_BUDGET) steps a dispatch (Mesa's software
/// adapters end an invocation after 65,535 loop iterations, silently); one that runs out is
/// saved and resumed in the next dispatch, and the pipeline grows the resumes (up to
/// 16, [`GRID_MAX_RESUME_PASSES`](crate::low_level::grid::GRID_MAX_RESUME_PASSES)) and the slots
/// as it grows its buffers. A walk longer than that (some hundreds of thousands of bodies
/// piled in one place) is [`Error::CapacityExceeded`] for
/// [`Counted::WalkSteps`](crate::Counted::WalkSteps), never a partial answer.
///
/// # Limits
/// The bodies of one step must fit one storage binding of the device, 32 bytes a body
/// ([`ContactPipeline::max_bodies`]); more is [`Error::TooManyBodies`], not chunked. More
/// contacts than one binding holds is [`Error::CapacityExceeded`], whose `at_least` is the
/// count the device made, not an extrapolation; the step stops there rather than growing
/// past it. So one step's device memory is bounded by one binding per buffer.
///
/// # Example
/// ```no_run
/// use sweepcast::glam::Vec3;
/// use sweepcast::gpu::{ContactPipeline, GpuContext};
/// use sweepcast::{MovingSphere, SweepOptions};
///
/// let context = GpuContext::new_blocking()?;
/// let pipeline = ContactPipeline::new(&context)?;
/// let bodies = [
///     MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(10.0, 0.0, 0.0)),
///     MovingSphere::new(Vec3::new(5.0, 0.0, 0.0), 1.0, Vec3::ZERO),
///     MovingSphere::new(Vec3::new(0.0, 50.0, 0.0), 1.0, Vec3::ZERO),
/// ];
/// let contacts = pipeline.find(&bodies, SweepOptions::default())?;
/// assert_eq!(contacts.contacts().len(), 1);
/// assert_eq!(contacts.contacts().first().and_then(|c| c.pair()), Some([0, 1]));
/// # Ok::<(), sweepcast::Error>(())
/// ```
pub struct ContactPipeline {
    device: wgpu::Device,
    queue: wgpu::Queue,
    waiter: DeviceWaiter,
    stage: StepStage,
    state: Mutex<State>,
}

impl std::fmt::Debug for ContactPipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContactPipeline")
            .field("max_bodies", &self.stage.max_bodies())
            .finish_non_exhaustive()
    }
}

/// What a step writes, kept from step to step.
struct State {
    upload: Upload,
    packed: Vec<BodyRecord>,
    /// The bodies on the device, and the step's buffers over them.
    bodies: Option<wgpu::Buffer>,
    buffers: Option<StepBuffers>,
    /// The capacities the next buffers are made for.
    capacities: StepCapacities,
    /// Whether the caller chose them ([`ContactPipeline::with_capacities`]); else the first
    /// buffers fit the bodies ([`StepCapacities::for_bodies`]).
    capacities_chosen: bool,
    /// The counts, each body's earliest position and its earliest wall; the ordered contacts.
    readback: GrowingBuffer,
    contact_readback: GrowingBuffer,
    /// Whether the device failed to make `upload` and the readbacks after a failed call (out
    /// of memory, say): the next call makes them again, in its own error scopes.
    transfers_stale: bool,
    reruns: u32,
    /// Whether `find` submits and times each stage on its own.
    profiling: bool,
    stage_times: crate::StageTimes,
    wall_records: Vec<crate::layout::WallRecord>,
    /// Per body, the partner of its earliest contact, while the ordered contacts are decoded.
    partners: Vec<AtomicU32>,
    /// Per body, the complement of its earliest contact's position, copied out of the
    /// readback while the ordered contacts are decoded.
    positions: Vec<u32>,
    /// Per body, its collision groups; empty where every pair interacts.
    groups: Vec<CollisionGroups>,
}

impl State {
    /// With stage times on, records the readback's, from `start`.
    fn readback_took(&mut self, start: Instant) {
        if self.profiling {
            self.stage_times.push("readback", start.elapsed());
        }
    }
}

/// Where the first readback holds each output: the counts, each body's earliest position,
/// then each body's earliest wall.
struct ReadbackLayout {
    positions: u64,
    walls: u64,
    size: u64,
}

impl ReadbackLayout {
    fn new(n: u64, walls: bool) -> Self {
        let positions = bytes_of::<StepCounts>(1);
        let walls_at = (positions + READBACK_PER_BODY.bytes() * n).next_multiple_of(16);
        Self {
            positions,
            walls: walls_at,
            size: walls_at
                + if walls {
                    bytes_of::<WallContactRecord>(n)
                } else {
                    0
                },
        }
    }
}

// The GPU step through the trait both steps share, also on a shared reference (the pipeline's
// calls take `&self`, so threads can share one).
crate::contact_step::contact_step_by_inherent!(ContactPipeline, ContactPipeline);
crate::contact_step::contact_step_by_inherent!(&ContactPipeline, ContactPipeline);

impl ContactPipeline {
    /// Bytes per body the pipeline holds on the device on [`find`](Self::find)'s path without
    /// walls, the sum of the buffers it makes a body: its own (the body, 32; the body's
    /// upload, 32; the readback of its earliest position, 4), the grid's (96, those the grid
    /// makes a body; its table's ranges, 8 B a slot at one to two slots a body, are not
    /// counted here; its earliest record is each body's earliest contact) and the ordered
    /// contacts' (each body's earliest position in the order, 4): 168.
    /// [`find_earliest`](Self::find_earliest) reads back each body's earliest record (32) in
    /// place of its position and keeps no positions on the device (192, the larger readback
    /// kept once made); walls add each body's earliest wall contact on the device and in the
    /// readback (48 each).
    ///
    /// Used by: `docs/step.md` ("On the GPU"), `docs/guarantees.md` ("Guarantees").
    pub const DEVICE_BYTES_PER_BODY: u64 = bytes_per_item(&PER_BODY)
        + super::grid::GRID_BYTES_PER_BODY
        + super::contacts::ORDERED_BYTES_PER_BODY;
    /// Bytes per contact: the hit the grid lists (its pair, 8, and impact record, 32), the
    /// ordered contacts' buffers
    /// ([`ORDERED_BYTES_PER_CONTACT`](crate::low_level::ORDERED_BYTES_PER_CONTACT), 144) and the
    /// readback of the contact record (64): 248.
    ///
    /// Used by: `docs/step.md` ("On the GPU").
    pub const DEVICE_BYTES_PER_CONTACT: u64 = super::grid::GRID_BYTES_PER_HIT
        + super::contacts::ORDERED_BYTES_PER_CONTACT
        + CONTACTS_READBACK.bytes();

    /// Compiles the step's shaders on the context's device.
    ///
    /// Used by: the README's quick start (the GPU step), `examples/bullets.rs`, `examples/gas.rs`,
    /// `python/src/gpu.rs` (`GpuStep`).
    ///
    /// # Errors
    /// [`Error::Device`] when the device rejects a shader or pipeline (a lost device among
    /// them); [`Error::DeviceLimit`] when its limits are below
    /// [`StepStage::required_limits`].
    pub fn new(context: &GpuContext) -> Result<Self, Error> {
        context.loss().check()?;
        let device = context.device().clone();
        let queue = context.queue().clone();
        let stage = StepStage::for_adapter(&device, context.adapter_info())?;
        let scopes = ErrorScopes::push(&device);
        let upload = body_upload(&device);
        let (readback, contact_readback) = readbacks(&device);
        pollster::block_on(scopes.finish())?;
        Ok(Self {
            waiter: DeviceWaiter::new(
                device.clone(),
                Some(DEFAULT_POLL_TIMEOUT),
                context.loss().clone(),
            ),
            device,
            queue,
            stage,
            state: Mutex::new(State {
                upload,
                packed: Vec::new(),
                bodies: None,
                buffers: None,
                capacities: StepCapacities::default(),
                capacities_chosen: false,
                readback,
                contact_readback,
                transfers_stale: false,
                reruns: 0,
                profiling: false,
                stage_times: crate::StageTimes::default(),
                wall_records: Vec::new(),
                partners: Vec::new(),
                positions: Vec::new(),
                groups: Vec::new(),
            }),
        })
    }

    /// Starts the step's buffers at these capacities instead of ones that fit a typical scene
    /// of the step's bodies ([`StepCapacities::for_bodies`]; the contacts rounded up to a
    /// power of two of at least 1,024): smaller to hold less memory (tests use the least to
    /// force the overflow and rerun of [`ContactPipeline::find`]), larger to avoid the reruns
    /// of the first steps of a dense world. No example calls it; the tests of the reruns
    /// (`tests/gpu_contacts.rs`) do.
    ///
    /// Any value is accepted: the contacts and saved walks are clamped to what one storage
    /// binding of the device holds (as the buffers' growth is), 0 counting as 1, and the
    /// resumes to at most 16 (a step past them is [`Error::CapacityExceeded`]).
    ///
    /// Used by: `docs/step.md` ("On the GPU"), `docs/guarantees.md` ("Bad input").
    #[must_use]
    pub fn with_capacities(self, capacities: StepCapacities) -> Self {
        {
            let mut state = self.lock();
            state.capacities = StepCapacities {
                contacts: capacities.contacts.max(1),
                saved_queries: capacities.saved_queries.max(1),
                resume_passes: capacities.resume_passes,
            };
            state.capacities_chosen = true;
            state.buffers = None;
        }
        self
    }

    /// Sets how long one wait for the device may last, as
    /// [`SweepPipeline::with_poll_timeout`](super::SweepPipeline::with_poll_timeout).
    ///
    /// Used by: `docs/guarantees.md` ("Guarantees" and "Bad input").
    #[must_use]
    pub fn with_poll_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.waiter.set_poll_timeout(timeout);
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The most bodies one step takes: one storage binding of 32-byte records.
    ///
    /// Used by: `docs/guarantees.md` ("Limits").
    #[must_use]
    pub fn max_bodies(&self) -> usize {
        self.stage.max_bodies() as usize
    }

    /// How many times the last [`find`](Self::find) ran the step again after a buffer
    /// overflowed (0 when the buffers were large enough).
    ///
    /// Used by: `docs/step.md` ("On the GPU").
    #[must_use]
    pub fn reruns(&self) -> u32 {
        self.lock().reruns
    }

    /// Makes [`find`](Self::find) submit each stage on its own and wait for it, so that
    /// [`ContactPipeline::stage_times`] can say what each took (wall clock). This costs a
    /// submission and a wait per stage; leave it off outside benchmarks.
    ///
    /// Used by: `docs/step.md` ("On the GPU": where the time goes).
    #[must_use]
    pub fn with_stage_times(self, profiling: bool) -> Self {
        self.lock().profiling = profiling;
        self
    }

    /// The wall-clock time of each stage of the last [`find`](Self::find)'s last run of the
    /// step, with [`with_stage_times`](Self::with_stage_times) on (empty otherwise): `bounds`
    /// (the bodies' copy from the upload buffer, the scene's bounds and frame, the levels and
    /// the cells' keys), `sort` (the radix sort of the keys), `cells` (the sorted entries,
    /// the cells' ranges, the plan), `gather` (each body's walk: find, sweep, keep, list
    /// each hit once), `levels` (the cross-level partners, the counts), `walls`, `earliest`
    /// (each body's earliest among the hits), `contacts` (compaction, three sorts, order and
    /// earliest per body) and `readback` (copies, mapping, decoding).
    ///
    /// Used by: `docs/step.md` ("On the GPU": where the time goes).
    #[must_use]
    pub fn stage_times(&self) -> crate::StageTimes {
        self.lock().stage_times.clone()
    }

    /// Bytes of device memory the pipeline holds now (its buffers at their present
    /// capacities: see [`Self::DEVICE_BYTES_PER_BODY`] and
    /// [`Self::DEVICE_BYTES_PER_CONTACT`]), besides the sorter's own workspace.
    ///
    /// Used by: `docs/step.md` ("On the GPU"), `examples/step_bench.rs`.
    #[must_use]
    pub fn device_memory_bytes(&self) -> u64 {
        let state = self.lock();
        state.upload.buffer().size()
            + state.bodies.as_ref().map_or(0, wgpu::Buffer::size)
            + state
                .buffers
                .as_ref()
                .map_or(0, StepBuffers::device_memory_bytes)
            + state.readback.buffer().size()
            + state.contact_readback.buffer().size()
    }

    /// Sets the bodies' collision groups for the next steps, one a body in the order of the
    /// bodies (copied), as [`ContactFinder::set_groups`](crate::cpu::ContactFinder::set_groups)
    /// does on the CPU: a pair whose groups do not interact is never a candidate of the
    /// broad phase. Each body's groups go to the device in its record's spare word
    /// ([`BodyRecord::groups`](crate::layout::BodyRecord#structfield.groups)). Empty, the
    /// default, lets every pair interact; walls are not filtered. A step whose bodies are not
    /// as many as the groups (and the groups not empty) is [`Error::GroupsLength`].
    ///
    /// Used by: the README's "Collision groups", `examples/bullets.rs`, `python/src/gpu.rs`.
    pub fn set_groups(&self, groups: &[CollisionGroups]) {
        let mut state = self.lock();
        state.groups.clear();
        state.groups.extend_from_slice(groups);
    }

    /// Puts `groups` in place of the pipeline's own, which it returns (the event loop's
    /// broad phase).
    pub(crate) fn swap_groups(&self, groups: Vec<CollisionGroups>) -> Vec<CollisionGroups> {
        std::mem::replace(&mut self.lock().groups, groups)
    }

    /// The contacts of the step of `bodies` with `options`, as [`crate::cpu::find_contacts`]
    /// gives them: the same contacts in the same order, the same earliest contact per body
    /// (the lowest partner among equal times) and the same earliest of the step, where the
    /// GPU's sweep gives the CPU's times; the candidate count is the GPU broad phase's. On
    /// Mesa's lavapipe the contacts' pairs, images, times and statuses, the earliest partners
    /// and the earliest contact equal the CPU's to the bit, and normals and points differ by
    /// an ulp or two (WGSL's `normalize` is `v · inverseSqrt(v · v)`). Where division and
    /// square root are not correctly rounded (llvmpipe's GL), some times differ from the
    /// CPU's within the GPU's [parity bound](crate::parity::GPU_BOUND), and two contacts so
    /// reordered may give a different earliest partner.
    ///
    /// Used by: the README's quick start (the GPU step), `docs/step.md`, `examples/bullets.rs`,
    /// `examples/step_bench.rs`.
    ///
    /// # Errors
    /// The input errors of the batch paths ([`Error::NonFinite`], [`Error::TooLarge`],
    /// [`Error::NegativeRadius`], [`Error::PeriodicBoxTooSmall`],
    /// [`Error::OutsidePeriodicBox`]), [`Error::TooManyBodies`] beyond
    /// [`ContactPipeline::max_bodies`], [`Error::GroupsLength`] where
    /// [`set_groups`](Self::set_groups) gave groups for another number of bodies,
    /// [`Error::CapacityExceeded`] when the contacts outgrow one binding or a body's walk
    /// its budget, and the device errors [`Error::Device`],
    /// [`Error::Mapping`] and [`Error::Timeout`]. No bodies, or one, give no contacts.
    pub fn find<B>(&self, bodies: &[B], options: SweepOptions) -> Result<Contacts, Error>
    where
        B: Copy + Into<MovingSphere> + Sync,
    {
        self.find_with_walls(bodies, &[], options)
    }

    /// The contacts of the step, as [`find`](Self::find) gives them, and each body's earliest
    /// impact on `walls` ([`Contacts::earliest_walls`]), as
    /// [`crate::cpu::ContactFinder::find_with_walls`] gives them: the walls stage
    /// ([`WallStage`](super::WallStage)) runs on the step's bodies in the same submission,
    /// and its contacts come back with the step's. (A world of one body has no step to join:
    /// its walls are swept by the stage's CPU twin.)
    ///
    /// Used by: `docs/guide.md` ("Walls: segments and planes").
    ///
    /// # Errors
    /// As [`find`](Self::find), and [`Error::InvalidWall`] for a bad wall or more walls than
    /// one binding holds.
    pub fn find_with_walls<B>(
        &self,
        bodies: &[B],
        walls: &[Wall],
        options: SweepOptions,
    ) -> Result<Contacts, Error>
    where
        B: Copy + Into<MovingSphere> + Sync,
    {
        let mut contacts = Contacts::default();
        self.find_into(bodies, walls, options, &mut contacts)?;
        Ok(contacts)
    }

    /// The contacts of the step, as [`find_with_walls`](Self::find_with_walls) gives them,
    /// into `out`, reusing its memory: the calling convention the GPU pipeline and the CPU
    /// finder ([`ContactFinder::find_into`](crate::cpu::ContactFinder::find_into)) share.
    ///
    /// Used by: `docs/python.md` ("What it offers": `find_contacts`), `examples/host_profile.rs`,
    /// `python/src/gpu.rs`.
    ///
    /// # Errors
    /// As [`find`](Self::find); `out` is then left empty.
    pub fn find_into<B>(
        &self,
        bodies: &[B],
        walls: &[Wall],
        options: SweepOptions,
        out: &mut Contacts,
    ) -> Result<(), Error>
    where
        B: Copy + Into<MovingSphere> + Sync,
    {
        let found = self.with_step(bodies, walls, options, |state, walls| {
            if state.packed.len() < 2 {
                *out = without_step(state, walls, &options);
                return Ok(());
            }
            self.run_ordered(state, walls, &options, out)
        });
        if found.is_err() {
            out.refill(0);
        }
        found
    }

    /// Each body's earliest contact in the step of `bodies` with `options` and `walls`: with
    /// a body (the least time, then the lowest partner) or a wall (only where strictly
    /// earlier than every body), as [`Contacts::earliest_impacts`] gives it on the CPU step,
    /// `None` for a body that meets nothing. The step sorts nothing
    /// ([`StepBuffers::earliest`]) and reads back 48 bytes of counts and 32 bytes a body.
    ///
    /// Used by: `docs/step.md` ("Resident on the device: the step stage"), `docs/guarantees.md`
    /// ("Bad input").
    ///
    /// # Errors
    /// As [`find_with_walls`](Self::find_with_walls).
    pub fn find_earliest<B>(
        &self,
        bodies: &[B],
        walls: &[Wall],
        options: SweepOptions,
    ) -> Result<Vec<Option<EarliestImpact>>, Error>
    where
        B: Copy + Into<MovingSphere> + Sync,
    {
        let mut earliest = Vec::new();
        self.find_earliest_into(bodies, walls, options, &mut earliest)?;
        Ok(earliest)
    }

    /// Each body's earliest contact, as [`find_earliest`](Self::find_earliest) gives it,
    /// into `out`, reusing its memory (the shared convention: see
    /// [`find_into`](Self::find_into)).
    ///
    /// Used by: `docs/step.md` ("Resident on the device: the step stage"),
    /// `examples/host_profile.rs`.
    ///
    /// # Errors
    /// As [`find_with_walls`](Self::find_with_walls); `out` is then left empty.
    pub fn find_earliest_into<B>(
        &self,
        bodies: &[B],
        walls: &[Wall],
        options: SweepOptions,
        out: &mut Vec<Option<EarliestImpact>>,
    ) -> Result<(), Error>
    where
        B: Copy + Into<MovingSphere> + Sync,
    {
        out.clear();
        let found = self.with_step(bodies, walls, options, |state, walls| {
            if state.packed.len() < 2 {
                out.extend(without_step(state, walls, &options).earliest_impacts());
                return Ok(());
            }
            let n = state.packed.len() as u64;
            let size = bytes_of::<StepCounts>(1) + bytes_of::<EarliestRecord>(n);
            self.run_step(
                state,
                walls,
                &options,
                false,
                size,
                &|buffers, encoder, readback| {
                    encoder.copy_buffer_to_buffer(
                        buffers.earliest(),
                        0,
                        readback,
                        bytes_of::<StepCounts>(1),
                        bytes_of::<EarliestRecord>(n),
                    );
                },
            )?;
            let readback_start = Instant::now();
            let decode_bytes =
                n * (bytes_of::<EarliestRecord>(1) + size_of::<Option<EarliestImpact>>() as u64);
            let stage = ("decode earliest", decode_bytes);
            self.read(state.readback.buffer(), ..size, stage, |view| {
                let records: &[EarliestRecord] =
                    bytemuck::cast_slice(&view[bytes_of::<StepCounts>(1) as usize..]);
                out.par_extend(records.par_iter().map(EarliestRecord::decode));
            })?;
            state.readback_took(readback_start);
            Ok(())
        });
        if found.is_err() {
            out.clear();
        }
        found
    }

    /// Validates and packs `bodies` and `walls`, then `run`s; on an error, drops the buffers
    /// a failed wait or mapping may have left mapped.
    fn with_step<B, T>(
        &self,
        bodies: &[B],
        walls: &[Wall],
        options: SweepOptions,
        run: impl FnOnce(&mut State, &[Wall]) -> Result<T, Error>,
    ) -> Result<T, Error>
    where
        B: Copy + Into<MovingSphere> + Sync,
    {
        let mut state = self.lock();
        let state = &mut *state;
        self.waiter.check_loss()?;
        check_length(&state.groups, bodies.len())?;
        let pack_bytes = bodies.len() * (size_of::<B>() + size_of::<BodyRecord>())
            + std::mem::size_of_val(state.groups.as_slice());
        span("pack", pack_bytes as u64, pool_threads(), || {
            pack_bodies_with_groups(bodies, &state.groups, &mut state.packed)?;
            check_against(bodies, &[], &options, self.max_bodies())?;
            wall_records_into(walls, &mut state.wall_records)
        })?;
        state.reruns = 0;
        let scopes = ErrorScopes::push(&self.device);
        if state.transfers_stale {
            state.upload = body_upload(&self.device);
            (state.readback, state.contact_readback) = readbacks(&self.device);
            state.transfers_stale = false;
        }
        let result = run(state, walls);
        // A caught device error explains a failed wait or wrong results: it wins.
        let result = pollster::block_on(scopes.finish()).and(result);
        if result.is_err() {
            // A failed wait or mapping may leave a readback or the upload mapped, or their
            // copies pending, and a buffer the device could not back is invalid: the next
            // call starts from fresh buffers (of the same capacities), made in scopes of their
            // own so that this call's error is the one reported. Should the device fail to
            // make them too, the next call makes them again.
            let scopes = ErrorScopes::push(&self.device);
            state.buffers = None;
            state.bodies = None;
            state.upload = body_upload(&self.device);
            (state.readback, state.contact_readback) = readbacks(&self.device);
            state.transfers_stale = pollster::block_on(scopes.finish()).is_err();
        }
        result
    }

    /// The step with ordered contacts, and its readback: the counts, each body's earliest
    /// position and wall, then the ordered contacts up to their count.
    fn run_ordered(
        &self,
        state: &mut State,
        walls: &[Wall],
        options: &SweepOptions,
        out: &mut Contacts,
    ) -> Result<(), Error> {
        let n = state.packed.len() as u64;
        let layout = ReadbackLayout::new(n, !walls.is_empty());
        let counts = self.run_step(
            state,
            walls,
            options,
            true,
            layout.size,
            &|buffers, encoder, readback| {
                let positions = buffers
                    .earliest_positions()
                    .expect("made with ordered contacts");
                encoder.copy_buffer_to_buffer(
                    positions,
                    0,
                    readback,
                    layout.positions,
                    bytes_of::<u32>(n),
                );
                if let Some(walls) = buffers.walls() {
                    encoder.copy_buffer_to_buffer(
                        walls.contacts(),
                        0,
                        readback,
                        layout.walls,
                        bytes_of::<WallContactRecord>(n),
                    );
                }
            },
        )?;
        let readback_start = Instant::now();
        let buffers = state.buffers.as_ref().expect("made by the step");
        let contacts = u64::from(counts.contacts);
        state.contact_readback.ensure(
            &self.device,
            bytes_of::<ContactRecord>(contacts.max(1)).div_ceil(READBACK_BLOCK),
        );
        let contact_readback = state.contact_readback.buffer();
        let packed = &state.packed;
        let (partners, positions) = (&mut state.partners, &mut state.positions);
        let (out_contacts, out_earliest, out_walls) = out.refill(counts.candidates as usize);
        if contacts > 0 {
            let mut encoder = self.device.create_command_encoder(&Default::default());
            let ordered = buffers
                .ordered_contacts()
                .expect("made with ordered contacts");
            encoder.copy_buffer_to_buffer(
                ordered,
                0,
                contact_readback,
                0,
                bytes_of::<ContactRecord>(contacts),
            );
            self.queue.submit([encoder.finish()]);
            let decode_bytes = contacts
                * (bytes_of::<ContactRecord>(1)
                    + bytes_of::<BodyRecord>(2)
                    + bytes_of::<Contact>(1));
            self.read(
                contact_readback,
                ..bytes_of::<ContactRecord>(contacts),
                ("decode contacts", decode_bytes),
                |view| {
                    let records: &[ContactRecord] = bytemuck::cast_slice(view);
                    out_contacts.par_extend(records.par_iter().map(|record| {
                        let [a, b] = record.pair;
                        let impact = record
                            .impact
                            .to_impact(&packed[a as usize], &packed[b as usize])
                            .expect("only hits are compacted");
                        Contact::of_pair(record.pair, record.image, impact)
                    }));
                },
            )?;
        }
        // Each contact's pair, and its bodies' positions and partners; each body's position,
        // partner and earliest contact; each body's wall record, body and wall contact.
        let mut decode_bytes = bytes_of::<[u32; 2 + 2 + 2]>(contacts)
            + n * (bytes_of::<[u32; 4]>(1) + size_of::<Option<Earliest>>() as u64);
        if !walls.is_empty() {
            decode_bytes += n
                * (bytes_of::<WallContactRecord>(1)
                    + bytes_of::<BodyRecord>(1)
                    + size_of::<Option<Contact>>() as u64);
        }
        self.read(
            state.readback.buffer(),
            ..layout.size,
            ("decode per body", decode_bytes),
            |view| {
                // Read once, in order, into memory of our own: the pass below reads a body's
                // position at random, which costs far more in a mapping (on lavapipe, 4 MB
                // of positions read at random took 47 ms from the mapping, 15 ms copied).
                let mapped: &[u32] = bytemuck::cast_slice(
                    &view[layout.positions as usize..][..bytes_of::<u32>(n) as usize],
                );
                positions.clear();
                positions.extend_from_slice(mapped);
                let positions = positions.as_slice();
                // Per body, the complement of its earliest contact's position (0 for none).
                // Its partner is scattered from the contacts in one pass in order (a contact
                // is the earliest of each of its bodies whose position names it): gathered
                // per body, it would cost a random contact's cache line a body.
                partners.resize_with(n as usize, || AtomicU32::new(0));
                out_contacts
                    .par_iter()
                    .enumerate()
                    .for_each(|(position, contact)| {
                        let [a, b] = contact.pair().expect("the ordered contacts are pairs");
                        let named = !(position as u32);
                        if positions[a as usize] == named {
                            partners[a as usize].store(b, Ordering::Relaxed);
                        }
                        if positions[b as usize] == named {
                            partners[b as usize].store(a, Ordering::Relaxed);
                        }
                    });
                // The pass above has joined: every store is seen.
                out_earliest.par_extend(positions.par_iter().zip(partners.par_iter()).map(
                    |(&complement, partner)| {
                        (complement != 0).then(|| Earliest {
                            contact: !complement,
                            partner: partner.load(Ordering::Relaxed),
                        })
                    },
                ));
                if !walls.is_empty() {
                    let records: &[WallContactRecord] = bytemuck::cast_slice(
                        &view[layout.walls as usize..]
                            [..(bytes_of::<WallContactRecord>(n)) as usize],
                    );
                    out_walls.par_extend(records.par_iter().zip(packed).enumerate().map(
                        |(index, (record, body))| {
                            crate::cpu::wall_contact(record, index as u32, body)
                        },
                    ));
                }
            },
        )?;
        state.readback_took(readback_start);
        Ok(())
    }

    /// Uploads the bodies and runs the step (with ordered contacts or not) until its buffers
    /// hold every candidate, contact and saved query and its queries have finished: the
    /// bodies stay on the device between runs. Each run copies its counts to the head of the
    /// readback (made `readback_size` bytes) and records `copies` after them; returns the
    /// valid step's counts.
    fn run_step(
        &self,
        state: &mut State,
        walls: &[Wall],
        options: &SweepOptions,
        ordered: bool,
        readback_size: u64,
        copies: &dyn Fn(&StepBuffers, &mut wgpu::CommandEncoder, &wgpu::Buffer),
    ) -> Result<StepCounts, Error> {
        let n = state.packed.len() as u64;
        let timer = Timer::start();
        self.ensure_buffers(state, n, walls, options, ordered)?;
        timer.end("buffers", 0, 1);
        state.upload.ensure(&self.device, n);
        let body_bytes = bytemuck::cast_slice(&state.packed);
        pollster::block_on(state.upload.write(&self.waiter, body_bytes))?;
        state
            .readback
            .ensure(&self.device, readback_size.div_ceil(READBACK_BLOCK));
        let mut upload = true;
        loop {
            let timer = Timer::start();
            let buffers = state.buffers.as_mut().expect("made above");
            let mut encoder = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("contact step"),
                });
            if upload {
                let bodies = state.bodies.as_ref().expect("made above");
                encoder.copy_buffer_to_buffer(
                    state.upload.buffer(),
                    0,
                    bodies,
                    0,
                    bytes_of::<BodyRecord>(n),
                );
            }
            state.stage_times.clear();
            let mut last = Instant::now();
            let profiling = state.profiling;
            let times = &mut state.stage_times;
            let mut stage_end = |encoder: &mut wgpu::CommandEncoder, stage: &'static str| {
                if !profiling {
                    return Ok(());
                }
                let done = std::mem::replace(
                    encoder,
                    self.device.create_command_encoder(&Default::default()),
                );
                self.queue.submit([done.finish()]);
                self.waiter.wait()?;
                let now = Instant::now();
                times.push(stage, now - last);
                last = now;
                Ok(())
            };
            self.stage
                .record_stages(&mut encoder, buffers, None, &mut stage_end)?;
            let readback = state.readback.buffer();
            encoder.copy_buffer_to_buffer(
                buffers.counts(),
                0,
                readback,
                0,
                bytes_of::<StepCounts>(1),
            );
            copies(buffers, &mut encoder, readback);
            self.queue.submit([encoder.finish()]);
            timer.end("record", 0, 1);
            let counts = self.read(
                readback,
                ..bytes_of::<StepCounts>(1),
                ("decode counts", bytes_of::<StepCounts>(1)),
                bytemuck::pod_read_unaligned::<StepCounts>,
            )?;
            if counts.is_valid() {
                return Ok(counts);
            }
            upload = false;
            state.reruns += 1;
            self.stage
                .grow(&self.device, &self.queue, buffers, &counts)?;
            state.capacities = buffers.capacities();
        }
    }

    /// Maps `range` of `buffer`, reads it with `read` (the host stage `stage`, which touches
    /// `bytes` of host memory on rayon's threads) and unmaps it.
    fn read<T>(
        &self,
        buffer: &wgpu::Buffer,
        range: std::ops::RangeTo<u64>,
        (stage, bytes): (&'static str, u64),
        read: impl FnOnce(&[u8]) -> T,
    ) -> Result<T, Error> {
        let slice = buffer.slice(range);
        let timer = Timer::start();
        pollster::block_on(self.waiter.map(&slice, wgpu::MapMode::Read))?;
        timer.end("wait", 0, 1);
        let value = span(stage, bytes, pool_threads(), || {
            slice.get_mapped_range().map(|view| read(&view))
        });
        span("unmap", 0, 1, || buffer.unmap());
        value.map_err(|error| Error::Mapping(error.to_string()))
    }

    /// The body buffer for `n` bodies and the step's buffers over it, with `walls` and
    /// `options`: those of the last step where they hold them.
    fn ensure_buffers(
        &self,
        state: &mut State,
        n: u64,
        walls: &[Wall],
        options: &SweepOptions,
        ordered: bool,
    ) -> Result<(), Error> {
        if state
            .buffers
            .as_ref()
            .is_some_and(|buffers| buffers.has_ordered_contacts() != ordered)
        {
            state.buffers = None;
        }
        if state
            .bodies
            .as_ref()
            .is_none_or(|bodies| bodies.size() < bytes_of::<BodyRecord>(n))
        {
            let capacity = capacity_for(n, MIN_CAPACITY, self.stage.max_bodies());
            let mut set = BufferSet::new(&self.device);
            let bodies = set.per_item(BODIES, capacity);
            set.finish()?;
            state.bodies = Some(bodies);
            state.buffers = None;
        }
        let buffers = match state.buffers.take() {
            Some(mut buffers) => {
                buffers.set_options(&self.queue, *options);
                buffers
            }
            None => {
                if !state.capacities_chosen {
                    state.capacities = state.capacities.max(StepCapacities::for_bodies(n));
                }
                self.stage.create_buffers(
                    &self.device,
                    &self.queue,
                    state.bodies.as_ref().expect("made above"),
                    *options,
                    state.capacities,
                    ordered,
                )?
            }
        };
        let buffers = state.buffers.insert(buffers);
        buffers.set_body_count(&self.queue, n as u32);
        self.stage
            .set_walls(&self.device, &self.queue, buffers, walls)
    }
}

/// The contacts of a world of fewer than two bodies: none between bodies, and its walls swept
/// by the walls stage's CPU twin (there is no step to join).
fn without_step(state: &State, walls: &[Wall], options: &SweepOptions) -> Contacts {
    let mut earliest_walls = Vec::new();
    if !walls.is_empty() {
        wall_contacts_into(
            &state.packed,
            &state.wall_records,
            options,
            &mut earliest_walls,
        );
    }
    Contacts::from_parts(Vec::new(), vec![None; state.packed.len()], 0).with_walls(earliest_walls)
}

/// The granularity in bytes of the two readbacks, whose records differ in size (`StepCounts`,
/// `u32` positions, `WallContactRecord`s; `ContactRecord`s): each grows by blocks of 16 bytes,
/// from [`MIN_CAPACITY`](super::buffers::MIN_CAPACITY) blocks.
const READBACK_BLOCK: u64 = 16;

/// The two kept readback buffers: the counts with each body's outputs, and the ordered
/// contacts, in blocks of [`READBACK_BLOCK`] bytes.
fn readbacks(device: &wgpu::Device) -> (GrowingBuffer, GrowingBuffer) {
    let readback = |buffer: PerItem| {
        GrowingBuffer::new(
            device,
            buffer.label(),
            buffer.usage(),
            READBACK_BLOCK,
            u64::MAX,
        )
    };
    (readback(READBACK_PER_BODY), readback(CONTACTS_READBACK))
}

/// The kept buffer the bodies are uploaded from, a `BodyRecord` a body.
fn body_upload(device: &wgpu::Device) -> Upload {
    Upload::new(device, BODY_UPLOAD.label(), BODY_UPLOAD.bytes(), u64::MAX)
}
