//! `ContactPipeline`: the whole collision step on the GPU from the bodies alone, in one
//! submission: the broad phase (`shaders/broad_phase.wgsl`, a linear BVH), the sweep of its
//! candidates ([`SweepStage::record_indirect`], dispatched from the broad phase's count), and
//! the step's outputs (`shaders/contacts.wgsl`: compacted, ordered contacts and each body's
//! earliest). The radix sorts are lampshade's. Each shader's f32 twin, entry point by entry
//! point, is [`crate::cpu::broad_phase`] and [`crate::cpu::contacts`](mod@crate::cpu::contacts);
//! the CPU step, which gives the same contacts its own faster way, is
//! [`crate::cpu::ContactFinder`].

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::WallBuffers;
use super::buffers::{DeviceWaiter, ErrorScopes, Upload, create_buffer};
use super::context::GpuContext;
use super::pipeline::DEFAULT_POLL_TIMEOUT;
use super::sweep::{
    SweepBuffers, SweepStage, Workgroups, compute_pipeline, dispatch, group_entry, layout_entry,
};
use super::walls::WallStage;
use crate::cpu::{Contact, Contacts, Earliest, WallContact, wall_contacts_into, wall_records_into};
use crate::error::{Counted, Error};
use crate::geometry::{MovingSphere, Wall};
use crate::layout::{
    BodyRecord, ContactRecord, MORTON_BITS, StepParams, SweepDispatch, WallContactRecord,
    WallRecord,
};

/// Bytes of a [`WallContactRecord`].
const WALL_CONTACT_SIZE: u64 = size_of::<WallContactRecord>() as u64;
use crate::options::SweepOptions;
use crate::validate::pack_batch;

/// The WGSL source of the broad phase: `shaders/shared.wgsl` followed by
/// `shaders/broad_phase.wgsl`.
pub const BROAD_PHASE_WGSL: &str = concat!(
    include_str!("../../shaders/shared.wgsl"),
    include_str!("../../shaders/broad_phase.wgsl")
);

/// The WGSL source of the step's outputs: `shaders/shared.wgsl` followed by
/// `shaders/contacts.wgsl`.
pub const CONTACTS_WGSL: &str = concat!(
    include_str!("../../shaders/shared.wgsl"),
    include_str!("../../shaders/contacts.wgsl")
);

/// Bytes per body of the broad phase's buffers: the body (32), its box (32), code (8), two
/// sort records (16), its leaf (32) and leaf code (8), an internal node (16), its box (32)
/// and two parents (8), and its earliest contact (4); and the body's upload (32) and the
/// earliest contact's readback (4).
pub const DEVICE_BYTES_PER_BODY: u64 = 32 + 32 + 8 + 16 + 32 + 8 + 16 + 32 + 8 + 4 + 32 + 4;
/// Bytes per candidate pair: the pair (8) and its impact record (32).
pub const DEVICE_BYTES_PER_CANDIDATE: u64 = 8 + 32;
/// Bytes per contact: the contact (64) in the order of discovery and in the step's order, two
/// sort records (16) and its readback (64).
pub const DEVICE_BYTES_PER_CONTACT: u64 = 64 + 64 + 16 + 64;

/// The capacities a pipeline starts with, in candidate pairs and contacts; they grow (to the
/// next power of two) when a step needs more.
const INITIAL_CAPACITY: u64 = 1 << 14;

/// The whole collision step on the GPU from the bodies alone: every pair that touches during
/// the step (or overlaps at its start), ordered by time and pair, each body's earliest
/// contact and the step's earliest, as [`crate::cpu::find_contacts`] gives them, with no
/// candidate pair ever leaving the device.
///
/// Build it once and call [`ContactPipeline::find`] every step. One step is one submission:
///
/// ```text
/// bodies ─ upload ─► swept_boxes ─► sort ×2 ─► leaves ─► hierarchy ─► refit ─► candidates
///   (32 B/body)     (box, Morton)  (63-bit)   (sorted)   (Karras)    (atomic    │ pairs +
///                                                                     min/max)  ▼ count
///        readback ◄─ order_contacts ◄─ sort ×3 ◄─ compact ◄─ sweep (indirect, from the count)
///   (counts, earliest   (ordered contacts,  (second, first,  (hits → contact
///    per body, contacts) earliest per body)   time)            records)
/// ```
///
/// # Overflow
/// The candidate and contact buffers have capacities (16,384 each at first,
/// [`ContactPipeline::with_capacities`]). The broad phase and the compaction count every
/// pair and hit, writing only those that fit; when a count exceeds its capacity, the
/// pipeline grows the buffers to the next power of two at or above the count and runs the
/// step again, so nothing is dropped ([`ContactPipeline::reruns`] says how often the last
/// step ran again). The buffers keep their size for later steps.
///
/// A query walks at most 4,096 steps a dispatch (Mesa's software adapters end an invocation
/// after 65,535 loop iterations, silently); a longer one is saved to a queue and resumed by
/// the next dispatch. A queue that overflows, or queries left unfinished after the recorded
/// resume dispatches, likewise grow the queue or the dispatches and rerun the step
/// ([`ContactPipeline::with_saved_queries`]).
///
/// # Limits
/// The bodies of one step must fit one storage binding of the device, 32 bytes a body
/// ([`ContactPipeline::max_bodies`]); more is [`Error::TooManyBodies`], not chunked. More
/// candidates or contacts than one binding holds is [`Error::CapacityExceeded`], whose
/// `at_least` is a count the device made (the candidates it counted, or the contacts among
/// those that fitted), not an extrapolation; the step stops there rather than counting the
/// whole explosion. So one step's device memory is bounded by one binding per buffer.
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
/// assert_eq!(contacts.earliest().map(|c| c.pair), Some([0, 1]));
/// # Ok::<(), sweepcast::Error>(())
/// ```
pub struct ContactPipeline {
    device: wgpu::Device,
    queue: wgpu::Queue,
    waiter: DeviceWaiter,
    sweep: SweepStage,
    walls: WallStage,
    /// The broad phase's kernels: those that build the tree on one bind group layout, the
    /// queries on another (`query_layout`), as GL allows 16 storage buffers a stage.
    broad_phase: Kernels<7>,
    query_layout: wgpu::BindGroupLayout,
    outputs: Kernels<5>,
    prepare_contacts: wgpu::ComputePipeline,
    prepare_layout: wgpu::BindGroupLayout,
    prepare_resume: wgpu::ComputePipeline,
    prepare_resume_layout: wgpu::BindGroupLayout,
    /// The largest storage binding of the device, in bytes.
    largest_binding: u64,
    state: Mutex<State>,
}

impl std::fmt::Debug for ContactPipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContactPipeline")
            .field("largest_binding", &self.largest_binding)
            .finish_non_exhaustive()
    }
}

/// The entry points of one shader, sharing one bind group layout.
struct Kernels<const N: usize> {
    pipelines: [wgpu::ComputePipeline; N],
    layout: wgpu::BindGroupLayout,
}

/// The broad phase's entry points, in `Kernels::pipelines`.
const SWEPT_BOXES: usize = 0;
const KEY_BY_HIGH: usize = 1;
const LEAVES: usize = 2;
const HIERARCHY: usize = 3;
const REFIT: usize = 4;
const CANDIDATES: usize = 5;
const RESUME_CANDIDATES: usize = 6;
const BROAD_PHASE_ENTRY_POINTS: [&str; 7] = [
    "swept_boxes",
    "key_by_high",
    "leaves_in_order",
    "hierarchy",
    "refit",
    "candidates",
    "resume_candidates",
];
/// Bytes of one saved query (`Continuation` in broad_phase.wgsl: four words and a stack of 97).
const CONTINUATION_SIZE: u64 = 4 * (4 + 97);
/// The outputs' entry points (besides `prepare_contacts`).
const COMPACT: usize = 0;
const KEY_BY_SECOND: usize = 1;
const KEY_BY_FIRST: usize = 2;
const KEY_BY_TIME: usize = 3;
const ORDER: usize = 4;
const OUTPUT_ENTRY_POINTS: [&str; 5] = [
    "compact",
    "key_by_second",
    "key_by_first",
    "key_by_time",
    "order_contacts",
];

/// What a step writes, kept from step to step.
struct State {
    sorter: lampshade::KeyValueSorter,
    upload: Upload,
    packed: Vec<BodyRecord>,
    buffers: Option<StepBuffers>,
    /// The capacities the next step's buffers are made for.
    capacities: Capacities,
    reruns: u32,
    elapsed: Duration,
    /// Whether `find` submits and times each stage on its own.
    profiling: bool,
    stage_times: Vec<(&'static str, Duration)>,
    /// The step's walls as records, and the walls stage's buffers over the step's bodies.
    wall_records: Vec<WallRecord>,
    walls: Option<StepWalls>,
}

/// The walls stage's buffers of a step: its walls and contacts, bound over the step's
/// bodies, and the contacts' readback.
struct StepWalls {
    buffers: WallBuffers,
    readback: wgpu::Buffer,
}

/// What a step's buffers hold, and how many times a step resumes the queries that ran out of
/// steps; each grows when a step needs more.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Capacities {
    candidates: u64,
    contacts: u64,
    /// Saved queries, in each of the two queues.
    continuations: u64,
    /// Dispatches of `resume_candidates` recorded after `candidates`.
    resume_passes: u32,
}

impl Capacities {
    const INITIAL: Self = Self {
        candidates: INITIAL_CAPACITY,
        contacts: INITIAL_CAPACITY,
        continuations: 1024,
        resume_passes: 2,
    };

    /// Whether buffers made for `self` hold `other`.
    fn holds(&self, other: &Self) -> bool {
        self.candidates >= other.candidates
            && self.contacts >= other.contacts
            && self.continuations >= other.continuations
    }
}

/// The device buffers of a step, for a body count and its [`Capacities`], with the bind
/// groups over them.
struct StepBuffers {
    body_capacity: u64,
    capacities: Capacities,
    params: wgpu::Buffer,
    bodies: wgpu::Buffer,
    body_sort: [wgpu::Buffer; 2],
    candidate_count: wgpu::Buffer,
    candidates_overflowed: wgpu::Buffer,
    continuation_counts: [wgpu::Buffer; 2],
    continuations_overflowed: wgpu::Buffer,
    resume_dispatch: wgpu::Buffer,
    contact_count: wgpu::Buffer,
    contact_sort: [wgpu::Buffer; 2],
    ordered: wgpu::Buffer,
    earliest: wgpu::Buffer,
    readback: wgpu::Buffer,
    sweep: SweepBuffers,
    /// The bind group of the kernels that build the tree.
    build_group: wgpu::BindGroup,
    /// The queries' bind groups: group `q` saves queries to queue `q` and resumes those of
    /// the other.
    query_groups: [wgpu::BindGroup; 2],
    /// `prepare_resume`'s: group `q` reads the count of queue `q`.
    prepare_resume_groups: [wgpu::BindGroup; 2],
    outputs_group: wgpu::BindGroup,
    prepare_group: wgpu::BindGroup,
    contact_dispatch: wgpu::Buffer,
    /// Every buffer, for the memory count.
    all: Vec<wgpu::Buffer>,
}

/// Where the readback holds each output: after eight words of counts and flags (see
/// [`Counts`]), the earliest contact of each body, then the ordered contacts.
struct ReadbackLayout {
    earliest: u64,
    contacts: u64,
    size: u64,
}

impl ReadbackLayout {
    fn new(body_capacity: u64, contact_capacity: u64) -> Self {
        let earliest = size_of::<Counts>() as u64;
        let contacts = (earliest + 4 * body_capacity).next_multiple_of(64);
        Self {
            earliest,
            contacts,
            size: contacts + 64 * contact_capacity,
        }
    }
}

/// The counts and flags at the head of the readback.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Counts {
    candidates: u32,
    contacts: u32,
    /// A candidate was counted past the capacity (set even where the count wrapped).
    candidates_overflowed: u32,
    /// Queries still saved after the last resume: the step is incomplete.
    unfinished_queries: u32,
    /// A query was saved past a queue's capacity.
    continuations_overflowed: u32,
    _pad: [u32; 3],
}

impl ContactPipeline {
    /// Compiles the step's shaders on the context's device.
    ///
    /// # Errors
    /// [`Error::Device`] when the device rejects a shader or pipeline (a lost device among
    /// them).
    pub fn new(context: &GpuContext) -> Result<Self, Error> {
        context.loss().check()?;
        let device = context.device().clone();
        let queue = context.queue().clone();
        let sweep = SweepStage::new(&device)?;
        let walls = WallStage::new(&device)?;
        let scopes = ErrorScopes::push(&device);
        let created = Self::create(&device);
        let sorter =
            lampshade::KeyValueSorter::new_for_adapter(&device, &queue, context.adapter_info());
        let upload = body_upload(&device);
        pollster::block_on(scopes.finish())?;
        let (broad_phase, query_layout, outputs, [prepare_contacts, prepare_resume]) = created;
        let (prepare_contacts, prepare_layout) = prepare_contacts;
        let (prepare_resume, prepare_resume_layout) = prepare_resume;
        let limits = device.limits();
        Ok(Self {
            waiter: DeviceWaiter::new(
                device.clone(),
                Some(DEFAULT_POLL_TIMEOUT),
                context.loss().clone(),
            ),
            device,
            queue,
            sweep,
            walls,
            broad_phase,
            query_layout,
            outputs,
            prepare_contacts,
            prepare_layout,
            prepare_resume,
            prepare_resume_layout,
            largest_binding: limits
                .max_storage_buffer_binding_size
                .min(limits.max_buffer_size),
            state: Mutex::new(State {
                sorter,
                upload,
                packed: Vec::new(),
                buffers: None,
                capacities: Capacities::INITIAL,
                reruns: 0,
                elapsed: Duration::ZERO,
                profiling: false,
                stage_times: Vec::new(),
                wall_records: Vec::new(),
                walls: None,
            }),
        })
    }

    /// The kernels of the two shaders, and the two one-invocation kernels (`prepare_contacts`,
    /// `prepare_resume`) with their own bind group layouts.
    #[allow(clippy::type_complexity)]
    fn create(
        device: &wgpu::Device,
    ) -> (
        Kernels<7>,
        wgpu::BindGroupLayout,
        Kernels<5>,
        [(wgpu::ComputePipeline, wgpu::BindGroupLayout); 2],
    ) {
        use wgpu::BufferBindingType::{Storage, Uniform};
        let read = Storage { read_only: true };
        let write = Storage { read_only: false };
        let layout = |label, entries: &[(u32, wgpu::BufferBindingType)]| {
            let entries: Vec<_> = entries
                .iter()
                .map(|&(binding, ty)| layout_entry(binding, ty, 0))
                .collect();
            device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(label),
                entries: &entries,
            })
        };
        let broad_phase_layout = layout(
            "broad phase",
            &[
                (0, Uniform),
                (1, read),
                (2, write),
                (3, write),
                (4, write),
                (5, read),
                (6, write),
                (7, write),
                (8, write),
                (9, write),
                (10, write),
                (11, write),
            ],
        );
        let query_layout = layout(
            "broad phase queries",
            &[
                (0, Uniform),
                (6, write),
                (8, write),
                (11, write),
                (12, write),
                (13, write),
                (14, write),
                (15, read),
                (16, read),
                (17, write),
                (18, write),
                (19, write),
            ],
        );
        let outputs_layout = layout(
            "step outputs",
            &[
                (0, Uniform),
                (1, read),
                (2, read),
                (3, read),
                (4, read),
                (5, write),
                (6, write),
                (8, write),
                (9, read),
                (10, write),
                (11, write),
                (12, read),
            ],
        );
        let prepare_layout = layout("prepare_contacts", &[(0, Uniform), (5, write), (7, write)]);
        let prepare_resume_layout =
            layout("prepare_resume", &[(0, Uniform), (20, read), (21, write)]);
        let module = |label, source: &str| {
            device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            })
        };
        let broad_phase_module = module("broad_phase.wgsl", BROAD_PHASE_WGSL);
        let outputs_module = module("contacts.wgsl", CONTACTS_WGSL);
        let pipeline = |module: &wgpu::ShaderModule, layout: &wgpu::BindGroupLayout, entry| {
            compute_pipeline(device, module, layout, entry)
        };
        let broad_phase = Kernels {
            pipelines: std::array::from_fn(|kernel| {
                let layout = if kernel >= CANDIDATES {
                    &query_layout
                } else {
                    &broad_phase_layout
                };
                pipeline(
                    &broad_phase_module,
                    layout,
                    BROAD_PHASE_ENTRY_POINTS[kernel],
                )
            }),
            layout: broad_phase_layout,
        };
        let outputs = Kernels {
            pipelines: OUTPUT_ENTRY_POINTS
                .map(|entry| pipeline(&outputs_module, &outputs_layout, entry)),
            layout: outputs_layout,
        };
        let prepare_contacts = pipeline(&outputs_module, &prepare_layout, "prepare_contacts");
        let prepare_resume = pipeline(
            &broad_phase_module,
            &prepare_resume_layout,
            "prepare_resume",
        );
        (
            broad_phase,
            query_layout,
            outputs,
            [
                (prepare_contacts, prepare_layout),
                (prepare_resume, prepare_resume_layout),
            ],
        )
    }

    /// Starts the candidate and contact buffers at these capacities instead of 16,384 (each
    /// rounded up to a power of two of at least 1,024): smaller to hold less memory in small
    /// worlds (tests use the least to force the overflow and rerun of
    /// [`ContactPipeline::find`]), larger to avoid the reruns of the first steps of a large
    /// world.
    ///
    /// Any value is accepted: each is clamped to what one storage binding of the device holds
    /// (as the buffers' growth is), and 0 counts as 1.
    #[must_use]
    pub fn with_capacities(self, candidates: u64, contacts: u64) -> Self {
        {
            let mut state = self.lock();
            state.capacities.candidates = candidates.clamp(1, self.max_candidates().max(1));
            state.capacities.contacts = contacts.clamp(1, self.max_contacts().max(1));
            state.buffers = None;
        }
        self
    }

    /// Starts the broad phase's two queues of saved queries at this capacity (rounded up to a
    /// power of two; 1,024 by default). A query that meets many boxes (a dense pile, a huge
    /// body) takes its walk in slices of a few thousand steps, one dispatch each, and waits in
    /// a queue of 404 bytes an entry between them; a queue that overflows is grown four-fold
    /// and the step rerun, as are the resume dispatches (2 at first, doubled) when queries
    /// are left unfinished.
    ///
    /// Any value is accepted: it is clamped to what one storage binding holds, and 0 counts
    /// as 1.
    #[must_use]
    pub fn with_saved_queries(self, capacity: u64) -> Self {
        {
            let mut state = self.lock();
            state.capacities.continuations = capacity.clamp(1, self.max_continuations().max(1));
            state.buffers = None;
        }
        self
    }

    /// Sets how long one wait for the device may last, as
    /// [`SweepPipeline::with_poll_timeout`](super::SweepPipeline::with_poll_timeout).
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
    #[must_use]
    pub fn max_bodies(&self) -> usize {
        (self.largest_binding / 32).min(crate::cpu::MAX_BODIES as u64) as usize
    }

    /// How many times the last [`find`](Self::find) ran the step again after a buffer
    /// overflowed (0 when the buffers were large enough).
    #[must_use]
    pub fn reruns(&self) -> u32 {
        self.lock().reruns
    }

    /// The wall-clock time of the last [`find`](Self::find): validation, upload, every run of
    /// the step on the device, readback and decoding.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.lock().elapsed
    }

    /// Makes [`find`](Self::find) submit each stage on its own and wait for it, so that
    /// [`ContactPipeline::stage_times`] can say what each took (wall clock: the adapters at
    /// hand have no timestamp queries in common). This costs a submission and a wait per stage;
    /// leave it off outside benchmarks.
    #[must_use]
    pub fn with_stage_times(self, profiling: bool) -> Self {
        self.lock().profiling = profiling;
        self
    }

    /// The wall-clock time of each stage of the last [`find`](Self::find)'s last run of the
    /// step, with [`with_stage_times`](Self::with_stage_times) on (empty otherwise): `bounds`
    /// (the bodies' copy from the upload buffer, swept boxes and Morton codes), `sort` (the
    /// two radix sorts of the codes), `hierarchy` (leaves in order, Karras's nodes, refit),
    /// `candidates` (the queries), `sweep`, `contacts` (compaction, three sorts, order and
    /// earliest per body) and `readback` (copies, mapping, decoding).
    #[must_use]
    pub fn stage_times(&self) -> Vec<(&'static str, Duration)> {
        self.lock().stage_times.clone()
    }

    /// Bytes of device memory the pipeline holds now (its buffers at their present
    /// capacities: see [`DEVICE_BYTES_PER_BODY`], [`DEVICE_BYTES_PER_CANDIDATE`] and
    /// [`DEVICE_BYTES_PER_CONTACT`]), besides the sorter's own workspace.
    #[must_use]
    pub fn device_memory_bytes(&self) -> u64 {
        let state = self.lock();
        state.upload.buffer().size()
            + state.buffers.as_ref().map_or(0, |buffers| {
                buffers.all.iter().map(wgpu::Buffer::size).sum::<u64>()
            })
            + state.walls.as_ref().map_or(0, |walls| {
                walls.buffers.walls().size()
                    + walls.buffers.contacts().size()
                    + walls.readback.size()
            })
    }

    /// The contacts of the step of `bodies` with `options`, as [`crate::cpu::find_contacts`]
    /// gives them: the same contacts in the same order, the same earliest contact per body
    /// (the lowest partner among equal times) and the same earliest of the step, where the
    /// GPU's sweep gives the CPU's times (see the README on parity); the candidate count is
    /// the GPU broad phase's.
    ///
    /// # Errors
    /// The input errors of the batch paths ([`Error::NonFinite`], [`Error::TooLarge`],
    /// [`Error::NegativeRadius`], [`Error::PeriodicBoxTooSmall`],
    /// [`Error::OutsidePeriodicBox`]), [`Error::TooManyBodies`] beyond
    /// [`ContactPipeline::max_bodies`], [`Error::CapacityExceeded`] when the candidates or
    /// contacts outgrow one binding, and the device errors [`Error::Device`],
    /// [`Error::Mapping`] and [`Error::Timeout`]. No bodies, or one, give no contacts.
    pub fn find<B>(&self, bodies: &[B], options: SweepOptions) -> Result<Contacts, Error>
    where
        B: Copy + Into<MovingSphere>,
    {
        self.find_with_walls(bodies, &[], options)
    }

    /// The contacts of the step, as [`find`](Self::find) gives them, and each body's earliest
    /// impact on `walls` ([`Contacts::earliest_walls`]), as
    /// [`crate::cpu::ContactFinder::find_with_walls`] gives them: the walls stage
    /// ([`WallStage`]) runs on the step's bodies in the same submission, and its contacts
    /// come back with the step's. (A world of one body has no step to join: its walls are
    /// swept by the stage's CPU twin.)
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
        B: Copy + Into<MovingSphere>,
    {
        let start = Instant::now();
        let mut state = self.lock();
        let state = &mut *state;
        self.waiter.check_loss()?;
        pack_batch(bodies, &[], &options, self.max_bodies(), &mut state.packed)?;
        wall_records_into(walls, &mut state.wall_records)?;
        if walls.len() as u64 > self.walls.max_walls() {
            return Err(Error::InvalidWall {
                wall: walls.len(),
                reason: "more walls than one binding of this device holds",
            });
        }
        state.reruns = 0;
        if bodies.len() < 2 {
            state.elapsed = start.elapsed();
            let mut earliest_walls = Vec::new();
            if !walls.is_empty() {
                wall_contacts_into(
                    &state.packed,
                    &state.wall_records,
                    &options,
                    &mut earliest_walls,
                );
            }
            return Ok(
                Contacts::from_parts(Vec::new(), vec![None; bodies.len()], 0)
                    .with_walls(earliest_walls),
            );
        }
        let scopes = ErrorScopes::push(&self.device);
        let result = self.run(state, &options);
        // A caught device error explains a failed wait or wrong results: it wins.
        let result = pollster::block_on(scopes.finish()).and(result);
        if result.is_err() {
            // A failed wait or mapping may leave the readback or the upload mapped, or their
            // copies pending: the next call starts from fresh buffers (of the same
            // capacities), made in scopes of their own so that this call's error is the one
            // reported.
            let scopes = ErrorScopes::push(&self.device);
            state.buffers = None;
            state.walls = None;
            state.upload = body_upload(&self.device);
            let _ = pollster::block_on(scopes.finish());
        }
        state.elapsed = start.elapsed();
        result
    }

    /// Uploads the bodies and runs the step until its buffers hold every candidate, contact
    /// and saved query, and its queries have finished.
    fn run(&self, state: &mut State, options: &SweepOptions) -> Result<Contacts, Error> {
        let n = state.packed.len() as u64;
        state.upload.ensure(&self.device, n);
        let body_bytes = bytemuck::cast_slice(&state.packed);
        pollster::block_on(state.upload.write(&self.waiter, body_bytes))?;
        let params = StepParams::new(&state.packed, options);
        loop {
            self.ensure_buffers(state, n)?;
            let buffers = state.buffers.as_ref().expect("made above");
            let held = buffers.capacities;
            let mut params = params;
            params.candidate_capacity = held.candidates as u32;
            params.contact_capacity = held.contacts as u32;
            params.continuation_capacity = held.continuations as u32;
            self.queue
                .write_buffer(&buffers.params, 0, bytemuck::bytes_of(&params));
            let mut encoder = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("contact step"),
                });
            state.stage_times.clear();
            let mut stages = Stages {
                pipeline: self,
                times: state.profiling.then_some(&mut state.stage_times),
                last: Instant::now(),
            };
            encoder.copy_buffer_to_buffer(state.upload.buffer(), 0, &buffers.bodies, 0, n * 32);
            // The walls first, on the bodies as uploaded.
            let wall_count = state.wall_records.len() as u32;
            if wall_count > 0 {
                let walls =
                    self.step_walls(&mut state.walls, &buffers.bodies, u64::from(wall_count))?;
                self.queue.write_buffer(
                    walls.buffers.walls(),
                    0,
                    bytemuck::cast_slice(&state.wall_records),
                );
                self.walls.record(
                    &self.queue,
                    &mut encoder,
                    &walls.buffers,
                    n as u32,
                    wall_count,
                    options,
                )?;
                encoder.copy_buffer_to_buffer(
                    walls.buffers.contacts(),
                    0,
                    &walls.readback,
                    0,
                    n * WALL_CONTACT_SIZE,
                );
            }
            let resume_passes = state.capacities.resume_passes;
            let step = Step {
                buffers,
                n: n as u32,
                resume_passes,
            };
            self.record(&mut state.sorter, &mut encoder, &mut stages, &step, options)?;
            self.queue.submit([encoder.finish()]);
            let readback_start = stages.last;
            let layout = ReadbackLayout::new(buffers.body_capacity, held.contacts);
            let slice = buffers.readback.slice(..layout.size);
            pollster::block_on(self.waiter.map(&slice, wgpu::MapMode::Read))?;
            let decoded = slice.get_mapped_range().map(|view| {
                let counts: Counts =
                    bytemuck::pod_read_unaligned(&view[..layout.earliest as usize]);
                let complete = counts.unfinished_queries == 0
                    && counts.continuations_overflowed == 0
                    && u64::from(counts.candidates) <= held.candidates
                    && counts.candidates_overflowed == 0
                    && u64::from(counts.contacts) <= held.contacts;
                if !complete {
                    return Err(counts);
                }
                let earliest = &view[layout.earliest as usize..][..4 * n as usize];
                let records = &view[layout.contacts as usize..][..64 * counts.contacts as usize];
                Ok(decode(
                    &state.packed,
                    bytemuck::cast_slice(earliest),
                    bytemuck::cast_slice(records),
                    counts.candidates as usize,
                ))
            });
            buffers.readback.unmap();
            if state.profiling {
                state
                    .stage_times
                    .push(("readback", readback_start.elapsed()));
            }
            match decoded.map_err(|error| Error::Mapping(error.to_string()))? {
                Ok(contacts) => {
                    let walls = match (&state.walls, state.wall_records.is_empty()) {
                        (Some(walls), false) => self.read_walls(walls, &state.packed)?,
                        _ => Vec::new(),
                    };
                    return Ok(contacts.with_walls(walls));
                }
                Err(counts) => {
                    state.capacities = self.next_capacities(state.capacities, &held, &counts)?;
                    state.reruns += 1;
                }
            }
        }
    }

    /// The walls stage's buffers over the step's `bodies` for `wall_count` walls: those of
    /// the last step, or new ones where the bodies' buffer was replaced or the walls outgrew
    /// them.
    fn step_walls<'a>(
        &self,
        walls: &'a mut Option<StepWalls>,
        bodies: &wgpu::Buffer,
        wall_count: u64,
    ) -> Result<&'a StepWalls, Error> {
        let fits = walls.as_ref().is_some_and(|held| {
            held.buffers.bodies() == bodies && held.buffers.wall_capacity() >= wall_count
        });
        if !fits {
            use wgpu::BufferUsages as Usage;
            let body_capacity = bodies.size() / 32;
            let wall_capacity = wall_count.next_power_of_two().max(16);
            let scopes = ErrorScopes::push(&self.device);
            let buffer = |label, size, usage| create_buffer(&self.device, label, usage, size);
            let wall_buffer = buffer(
                "step walls",
                32 * wall_capacity,
                Usage::STORAGE | Usage::COPY_DST,
            );
            let contacts = buffer(
                "step wall contacts",
                WALL_CONTACT_SIZE * body_capacity,
                Usage::STORAGE | Usage::COPY_SRC,
            );
            let readback = buffer(
                "step wall readback",
                WALL_CONTACT_SIZE * body_capacity,
                Usage::MAP_READ | Usage::COPY_DST,
            );
            pollster::block_on(scopes.finish())?;
            let buffers = self
                .walls
                .bind_buffers(&self.device, bodies, &wall_buffer, &contacts)?;
            *walls = Some(StepWalls { buffers, readback });
        }
        Ok(walls.as_ref().expect("made above"))
    }

    /// Each body's earliest wall, read back from the walls stage's contacts.
    fn read_walls(
        &self,
        walls: &StepWalls,
        bodies: &[BodyRecord],
    ) -> Result<Vec<Option<WallContact>>, Error> {
        let slice = walls
            .readback
            .slice(..WALL_CONTACT_SIZE * bodies.len() as u64);
        pollster::block_on(self.waiter.map(&slice, wgpu::MapMode::Read))?;
        let decoded = slice.get_mapped_range().map(|view| {
            let records: &[WallContactRecord] = bytemuck::cast_slice(&view);
            records
                .par_iter()
                .zip(bodies)
                .map(|(record, body)| WallContact::from_record(record, body))
                .collect()
        });
        walls.readback.unmap();
        decoded.map_err(|error| Error::Mapping(error.to_string()))
    }

    /// The capacities for the rerun of a step that `counts` says was incomplete with
    /// buffers of `held`; an error where the step proved that it needs more than one binding
    /// holds.
    fn next_capacities(
        &self,
        mut next: Capacities,
        held: &Capacities,
        counts: &Counts,
    ) -> Result<Capacities, Error> {
        let candidates = candidates_at_least(counts, held.candidates);
        // Hits among the candidates that fitted, which were all that was swept.
        let contacts = u64::from(counts.contacts);
        for (what, at_least, max) in [
            (Counted::Candidates, candidates, self.max_candidates()),
            (Counted::Contacts, contacts, self.max_contacts()),
        ] {
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
            next.resume_passes = next.resume_passes.saturating_mul(2);
            if next.resume_passes > MAX_RESUME_PASSES {
                return Err(Error::Device(format!(
                    "the broad phase's queries did not finish in {MAX_RESUME_PASSES} dispatches"
                )));
            }
        }
        if counts.continuations_overflowed != 0 {
            next.continuations = (held.continuations * 4).min(self.max_continuations().max(1));
            if next.continuations == held.continuations {
                return Err(Error::CapacityExceeded {
                    what: Counted::SavedQueries,
                    at_least: held.continuations as usize + 1,
                    capacity: held.continuations as usize,
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
        self.largest_binding / 32
    }

    /// Contacts one binding of contact records (64 bytes each) holds.
    fn max_contacts(&self) -> u64 {
        self.largest_binding / 64
    }

    /// Saved queries one binding holds.
    fn max_continuations(&self) -> u64 {
        self.largest_binding / CONTINUATION_SIZE
    }

    /// Makes the buffers for `n` bodies and the state's capacities (each rounded up to a
    /// power of two), unless those made before hold them.
    fn ensure_buffers(&self, state: &mut State, n: u64) -> Result<(), Error> {
        if let Some(buffers) = &state.buffers
            && buffers.body_capacity >= n
            && buffers.capacities.holds(&state.capacities)
        {
            return Ok(());
        }
        let grow = |count: u64, least: u64, max: u64| {
            count.min(max).next_power_of_two().max(least).min(max)
        };
        let wanted = state.capacities;
        let capacities = Capacities {
            candidates: grow(wanted.candidates, 1024, self.max_candidates()),
            contacts: grow(wanted.contacts, 1024, self.max_contacts()),
            continuations: grow(wanted.continuations, 1, self.max_continuations()),
            resume_passes: wanted.resume_passes,
        };
        let body_capacity = grow(n, 1024, self.max_bodies() as u64);
        state.buffers = None;
        state.buffers = Some(self.create_buffers(body_capacity, capacities)?);
        Ok(())
    }

    fn create_buffers(&self, bodies_held: u64, held: Capacities) -> Result<StepBuffers, Error> {
        let (candidates_held, contacts_held) = (held.candidates, held.contacts);
        use wgpu::BufferUsages as Usage;
        let device = &self.device;
        let storage = Usage::STORAGE;
        let mut all = Vec::new();
        let mut buffer = |label, size: u64, usage| {
            let buffer = create_buffer(device, label, usage, size.max(4));
            all.push(buffer.clone());
            buffer
        };
        let params = buffer("step params", 80, Usage::UNIFORM | Usage::COPY_DST);
        let bodies = buffer("step bodies", 32 * bodies_held, storage | Usage::COPY_DST);
        let boxes = buffer("step boxes", 32 * bodies_held, storage);
        let codes = buffer("step codes", 8 * bodies_held, storage);
        let body_sort = [
            buffer("step body sort in", 8 * bodies_held, storage),
            buffer("step body sort out", 8 * bodies_held, storage),
        ];
        let leaves = buffer("step leaves", 32 * bodies_held, storage);
        let leaf_codes = buffer("step leaf codes", 8 * bodies_held, storage);
        let nodes = buffer("step nodes", 16 * bodies_held, storage);
        let node_parents = buffer("step node parents", 4 * bodies_held, storage);
        let leaf_parents = buffer("step leaf parents", 4 * bodies_held, storage);
        let node_boxes = buffer("step node boxes", 32 * bodies_held, storage);
        let counted = storage | Usage::COPY_SRC | Usage::COPY_DST;
        let pairs = buffer("step candidates", 8 * candidates_held, storage);
        let candidate_count = buffer("step candidate count", 4, counted);
        let candidates_overflowed = buffer("step candidates overflowed", 4, counted);
        let continuations = [
            buffer(
                "step saved queries 0",
                CONTINUATION_SIZE * held.continuations,
                storage,
            ),
            buffer(
                "step saved queries 1",
                CONTINUATION_SIZE * held.continuations,
                storage,
            ),
        ];
        let continuation_counts = [
            buffer("step saved query count 0", 4, counted),
            buffer("step saved query count 1", 4, counted),
        ];
        let continuations_overflowed = buffer("step saved queries overflowed", 4, counted);
        let resume_dispatch = buffer("step resume dispatch", 16, storage | Usage::INDIRECT);
        let impacts = buffer("step impacts", 32 * candidates_held, storage);
        let contact_count = buffer("step contact count", 4, counted);
        let contacts = buffer("step contacts", 64 * contacts_held, storage);
        let contact_dispatch = buffer(
            "step contact dispatch",
            32,
            storage | Usage::INDIRECT | Usage::COPY_SRC,
        );
        let contact_sort = [
            buffer("step contact sort in", 8 * contacts_held, storage),
            buffer("step contact sort out", 8 * contacts_held, storage),
        ];
        let ordered = buffer("step ordered contacts", 64 * contacts_held, counted);
        let earliest = buffer("step earliest", 4 * bodies_held, counted);
        let layout = ReadbackLayout::new(bodies_held, contacts_held);
        let readback = buffer(
            "step readback",
            layout.size,
            Usage::MAP_READ | Usage::COPY_DST,
        );
        let sweep = self.sweep.bind_buffers(device, &bodies, &pairs, &impacts)?;
        let group = |label, layout: &wgpu::BindGroupLayout, entries: &[(u32, &wgpu::Buffer)]| {
            let entries: Vec<_> = entries
                .iter()
                .map(|&(binding, buffer)| group_entry(binding, buffer))
                .collect();
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(label),
                layout,
                entries: &entries,
            })
        };
        let build_group = group(
            "broad phase",
            &self.broad_phase.layout,
            &[
                (0, &params),
                (1, &bodies),
                (2, &boxes),
                (3, &codes),
                (4, &body_sort[0]),
                (5, &body_sort[1]),
                (6, &leaves),
                (7, &leaf_codes),
                (8, &nodes),
                (9, &node_parents),
                (10, &leaf_parents),
                (11, &node_boxes),
            ],
        );
        let query_groups = [0, 1].map(|saved| {
            let resumed = 1 - saved;
            group(
                "broad phase queries",
                &self.query_layout,
                &[
                    (0, &params),
                    (6, &leaves),
                    (8, &nodes),
                    (11, &node_boxes),
                    (12, &pairs),
                    (13, &candidate_count),
                    (14, &candidates_overflowed),
                    (15, &continuations[resumed]),
                    (16, &continuation_counts[resumed]),
                    (17, &continuations[saved]),
                    (18, &continuation_counts[saved]),
                    (19, &continuations_overflowed),
                ],
            )
        });
        let prepare_resume_groups = [0, 1].map(|queue| {
            group(
                "prepare_resume",
                &self.prepare_resume_layout,
                &[
                    (0, &params),
                    (20, &continuation_counts[queue]),
                    (21, &resume_dispatch),
                ],
            )
        });
        let outputs_group = group(
            "step outputs",
            &self.outputs.layout,
            &[
                (0, &params),
                (1, &bodies),
                (2, &pairs),
                (3, &impacts),
                (4, sweep.dispatch()),
                (5, &contact_count),
                (6, &contacts),
                (8, &contact_sort[0]),
                (9, &contact_sort[1]),
                (10, &ordered),
                (11, &earliest),
                (12, &contact_dispatch),
            ],
        );
        let prepare_group = group(
            "prepare_contacts",
            &self.prepare_layout,
            &[(0, &params), (5, &contact_count), (7, &contact_dispatch)],
        );
        Ok(StepBuffers {
            body_capacity: bodies_held,
            capacities: held,
            params,
            bodies,
            body_sort,
            candidate_count,
            candidates_overflowed,
            continuation_counts,
            continuations_overflowed,
            resume_dispatch,
            contact_count,
            contact_sort,
            ordered,
            earliest,
            readback,
            sweep,
            build_group,
            query_groups,
            prepare_resume_groups,
            outputs_group,
            prepare_group,
            contact_dispatch,
            all,
        })
    }

    /// Records one step of `n` bodies (already in `buffers.bodies`) into `encoder`, with the
    /// copies of its outputs to the readback.
    fn record(
        &self,
        sorter: &mut lampshade::KeyValueSorter,
        encoder: &mut wgpu::CommandEncoder,
        stages: &mut Stages<'_>,
        step: &Step<'_>,
        options: &SweepOptions,
    ) -> Result<(), Error> {
        let (buffers, n) = (step.buffers, step.n);
        let sort_error = |error: lampshade::Error| Error::Device(format!("radix sort: {error}"));
        encoder.clear_buffer(&buffers.candidate_count, 0, None);
        encoder.clear_buffer(&buffers.candidates_overflowed, 0, None);
        encoder.clear_buffer(&buffers.continuations_overflowed, 0, None);
        encoder.clear_buffer(&buffers.contact_count, 0, None);
        encoder.clear_buffer(&buffers.earliest, 0, Some(4 * u64::from(n)));
        let per_body = SweepDispatch::new(n);
        let broad = |encoder: &mut wgpu::CommandEncoder, kernel: usize| {
            // The first queries save to queue 0.
            let group = if kernel >= CANDIDATES {
                &buffers.query_groups[0]
            } else {
                &buffers.build_group
            };
            dispatch(
                encoder,
                BROAD_PHASE_ENTRY_POINTS[kernel],
                &self.broad_phase.pipelines[kernel],
                group,
                Workgroups::Direct(per_body.workgroups_x, per_body.workgroups_y),
            );
        };
        let [sort_in, sort_out] = &buffers.body_sort;
        broad(encoder, SWEPT_BOXES);
        stages.end(encoder, "bounds")?;
        sorter
            .record_sort(encoder, sort_in, sort_out, n)
            .map_err(sort_error)?;
        broad(encoder, KEY_BY_HIGH);
        // The high words hold 31 bits of the 63-bit code.
        sorter
            .record_sort_with_key_bits(encoder, sort_in, sort_out, n, 3 * MORTON_BITS - 32)
            .map_err(sort_error)?;
        stages.end(encoder, "sort")?;
        for kernel in [LEAVES, HIERARCHY, REFIT] {
            broad(encoder, kernel);
        }
        stages.end(encoder, "hierarchy")?;
        encoder.clear_buffer(&buffers.continuation_counts[0], 0, None);
        broad(encoder, CANDIDATES);
        // The queries that ran out of steps go on, dispatch after dispatch, alternating
        // between the two queues: pass k resumes queue (k - 1) % 2 and saves to k % 2.
        for pass_index in 1..=step.resume_passes as usize {
            let (resumed, saved) = ((pass_index - 1) % 2, pass_index % 2);
            encoder.clear_buffer(&buffers.continuation_counts[saved], 0, None);
            dispatch(
                encoder,
                "prepare_resume",
                &self.prepare_resume,
                &buffers.prepare_resume_groups[resumed],
                Workgroups::Direct(1, 1),
            );
            dispatch(
                encoder,
                BROAD_PHASE_ENTRY_POINTS[RESUME_CANDIDATES],
                &self.broad_phase.pipelines[RESUME_CANDIDATES],
                &buffers.query_groups[saved],
                Workgroups::Indirect(&buffers.resume_dispatch),
            );
        }
        stages.end(encoder, "candidates")?;
        self.sweep.record_indirect(
            &self.queue,
            encoder,
            &buffers.sweep,
            &buffers.candidate_count,
            0,
            options,
        )?;
        stages.end(encoder, "sweep")?;
        let outputs = |encoder: &mut wgpu::CommandEncoder, kernel: usize| {
            // The compaction runs over the swept candidates, the rest over the contacts.
            let workgroups = if kernel == COMPACT {
                buffers.sweep.dispatch()
            } else {
                &buffers.contact_dispatch
            };
            dispatch(
                encoder,
                OUTPUT_ENTRY_POINTS[kernel],
                &self.outputs.pipelines[kernel],
                &buffers.outputs_group,
                Workgroups::Indirect(workgroups),
            );
        };
        outputs(encoder, COMPACT);
        dispatch(
            encoder,
            "prepare_contacts",
            &self.prepare_contacts,
            &buffers.prepare_group,
            Workgroups::Direct(1, 1),
        );
        // Stable sorts by the second body, the first, then the time: the order (time, pair).
        let index_bits = u32::BITS - (n - 1).leading_zeros();
        // Times are in [0, 1]: their bits are below 2^30.
        let time_bits = 30;
        let [contact_in, contact_out] = &buffers.contact_sort;
        let capacity = buffers.capacities.contacts as u32;
        for (kernel, key_bits) in [
            (KEY_BY_SECOND, index_bits),
            (KEY_BY_FIRST, index_bits),
            (KEY_BY_TIME, time_bits),
        ] {
            outputs(encoder, kernel);
            sorter
                .record_sort_counted_with_key_bits(
                    encoder,
                    contact_in,
                    contact_out,
                    &buffers.contact_count,
                    capacity,
                    key_bits.max(1),
                )
                .map_err(sort_error)?;
        }
        outputs(encoder, ORDER);
        stages.end(encoder, "contacts")?;
        let layout = ReadbackLayout::new(buffers.body_capacity, buffers.capacities.contacts);
        let readback = &buffers.readback;
        let unfinished = &buffers.continuation_counts[step.resume_passes as usize % 2];
        for (buffer, field) in [
            (
                &buffers.candidate_count,
                std::mem::offset_of!(Counts, candidates),
            ),
            (
                &buffers.contact_count,
                std::mem::offset_of!(Counts, contacts),
            ),
            (
                &buffers.candidates_overflowed,
                std::mem::offset_of!(Counts, candidates_overflowed),
            ),
            (unfinished, std::mem::offset_of!(Counts, unfinished_queries)),
            (
                &buffers.continuations_overflowed,
                std::mem::offset_of!(Counts, continuations_overflowed),
            ),
        ] {
            encoder.copy_buffer_to_buffer(buffer, 0, readback, field as u64, 4);
        }
        encoder.copy_buffer_to_buffer(
            &buffers.earliest,
            0,
            readback,
            layout.earliest,
            4 * u64::from(n),
        );
        encoder.copy_buffer_to_buffer(
            &buffers.ordered,
            0,
            readback,
            layout.contacts,
            buffers.ordered.size(),
        );
        Ok(())
    }
}

/// One run of the step: its buffers, its body count and how many resume dispatches to record.
struct Step<'a> {
    buffers: &'a StepBuffers,
    n: u32,
    resume_passes: u32,
}

/// The most dispatches of `resume_candidates` a step records before it gives up: at 4,096
/// steps each (`BUDGET` in broad_phase.wgsl), enough for a query that meets 2²⁸ leaves.
const MAX_RESUME_PASSES: u32 = 1 << 17;

/// A proven lower bound of the step's candidates from what the device counted with buffers
/// for `held`. The count read back is the true count less a multiple of 2³² (`atomicAdd`
/// wraps), so never above it; where the overflow flag is up (a candidate was counted at a
/// slot past the capacity) yet the count is within the capacity, it wrapped at least once.
fn candidates_at_least(counts: &Counts, held: u64) -> u64 {
    let counted = u64::from(counts.candidates);
    if counts.candidates_overflowed != 0 && counted <= held {
        counted + (1 << 32)
    } else {
        counted
    }
}

/// The kept buffer the bodies are uploaded from, 32 bytes a body.
fn body_upload(device: &wgpu::Device) -> Upload {
    Upload::new(device, "step body upload", 32, u64::MAX)
}

/// With stage times on, ends a stage: submits what was recorded since the last, waits for it
/// and records the time since; otherwise nothing.
struct Stages<'a> {
    pipeline: &'a ContactPipeline,
    times: Option<&'a mut Vec<(&'static str, Duration)>>,
    last: Instant,
}

impl Stages<'_> {
    fn end(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        stage: &'static str,
    ) -> Result<(), Error> {
        let Some(times) = self.times.as_deref_mut() else {
            return Ok(());
        };
        let device = &self.pipeline.device;
        let done = std::mem::replace(encoder, device.create_command_encoder(&Default::default()));
        self.pipeline.queue.submit([done.finish()]);
        self.pipeline.waiter.wait()?;
        let now = Instant::now();
        times.push((stage, now - self.last));
        self.last = now;
        Ok(())
    }
}

/// The step's [`Contacts`] from what the device wrote: the ordered contact records and, per
/// body, the complement of its earliest contact's position (0 for none).
fn decode(
    bodies: &[BodyRecord],
    earliest: &[u32],
    records: &[ContactRecord],
    candidates: usize,
) -> Contacts {
    let contacts: Vec<Contact> = records
        .par_iter()
        .map(|record| {
            let [a, b] = record.pair;
            Contact {
                pair: record.pair,
                image: record.image,
                impact: record
                    .impact
                    .to_impact(&bodies[a as usize], &bodies[b as usize])
                    .expect("only hits are compacted"),
            }
        })
        .collect();
    let earliest = earliest
        .par_iter()
        .enumerate()
        .map(|(body, &complement)| {
            (complement != 0).then(|| {
                let contact = !complement;
                let [a, b] = contacts[contact as usize].pair;
                Earliest {
                    contact,
                    partner: if a == body as u32 { b } else { a },
                }
            })
        })
        .collect();
    Contacts::from_parts(contacts, earliest, candidates)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The candidates' lower bound is the count read back, or, where the flag says that the
    /// count wrapped past 2³², that count plus 2³²: never an extrapolation.
    #[test]
    fn candidates_at_least_is_the_count_or_past_its_wrap() {
        let counts = |candidates, candidates_overflowed| Counts {
            candidates,
            candidates_overflowed,
            ..Counts::default()
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
