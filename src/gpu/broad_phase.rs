//! The broad phase stage: `shaders/broad_phase.wgsl` recorded into the caller's command
//! encoder, from a body buffer on the device to a counted buffer of candidate pairs, with no
//! host read between. Its f32 twin, one function per entry point, is
//! [`crate::low_level::broad_phase`]; [`StepStage`](super::StepStage) composes it with the sweep
//! and the outputs.
//!
//! ```text
//! bodies ─► scene_bounds ─► frame ─► swept_boxes ─► sort ×2 ─► leaves ─► hierarchy ─► refit
//!           (atomic min,    (origin,  (box, code)    (63-bit   (sorted)  (Karras)    (atomic
//!            max, bins)      grid)                   Morton)                          min/max)
//!                                              candidates ─► resume_candidates × passes
//!                                              (pairs + count)  (queries past the budget)
//! ```

use super::buffers::{BufferSet, COUNTED};
use super::kernel::{
    Access, Bindings, Kernel, StageEnd, Workgroups, check_binding, check_count, clear,
    compile_checked, module, new_sorter, record_sort,
};
use super::sweep::BODY_SIZE;
use crate::cpu::broad_phase::{BOUNDS_WORDS, STACK_SIZE};
use crate::error::Error;
use crate::layout::{MORTON_BITS, StepParams, SweepDispatch};
use crate::options::SweepOptions;

/// The WGSL source of the broad phase: `shaders/shared.wgsl` followed by
/// `shaders/broad_phase.wgsl`.
pub const BROAD_PHASE_WGSL: &str = concat!(
    include_str!("../../shaders/shared.wgsl"),
    include_str!("../../shaders/broad_phase.wgsl")
);

/// Bytes of one saved query (`Continuation` in broad_phase.wgsl: four words and the stack).
pub(super) const CONTINUATION_SIZE: u64 = 4 * (4 + STACK_SIZE as u64);
/// Bytes of a queue's head (its count and three words of padding) before its queries.
const QUEUE_HEAD: u64 = 16;
pub(super) const PARAMS_SIZE: u64 = size_of::<StepParams>() as u64;
pub(super) const DISPATCH_SIZE: u64 = size_of::<SweepDispatch>() as u64;

/// Bytes per body of the broad phase's own buffers: its box (32), code (8), two sort records
/// (16), its leaf (32) and leaf code (8), an internal node (16) and its box (32), and two
/// parents (8).
pub const BROAD_PHASE_BYTES_PER_BODY: u64 = 32 + 8 + 16 + 32 + 8 + 16 + 32 + 8;
/// Bytes per candidate pair of the broad phase's output.
pub const BROAD_PHASE_BYTES_PER_CANDIDATE: u64 = 8;

// The shader's bindings.
const PARAMS: u32 = 0;
pub(super) const BODIES: u32 = 1;
const BOXES: u32 = 2;
const CODES: u32 = 3;
const SORT_IN: u32 = 4;
const SORT_OUT: u32 = 5;
const LEAVES: u32 = 6;
const LEAF_CODES: u32 = 7;
const NODES: u32 = 8;
const NODE_PARENTS: u32 = 9;
const LEAF_PARENTS: u32 = 10;
const NODE_BOXES: u32 = 11;
const PAIRS: u32 = 12;
const COUNTERS: u32 = 13;
const QUEUE_IN: u32 = 15;
const QUEUE_OUT: u32 = 17;
const RESUME_DISPATCH: u32 = 21;
pub(super) const FRAME_INPUT: u32 = 22;
pub(super) const BOUNDS: u32 = 23;
pub(super) const FRAME_OUTPUT: u32 = 24;
pub(super) const BODY_DISPATCH: u32 = 25;

use Access::{Read, Uniform, Write};
pub(super) const SCENE_BOUNDS: Bindings = &[(FRAME_INPUT, Read), (BODIES, Read), (BOUNDS, Write)];
pub(super) const FRAME: Bindings = &[
    (FRAME_INPUT, Read),
    (BOUNDS, Write),
    (FRAME_OUTPUT, Write),
    (BODY_DISPATCH, Write),
];
const SWEPT_BOXES: Bindings = &[
    (PARAMS, Uniform),
    (BODIES, Read),
    (BOXES, Write),
    (CODES, Write),
    (SORT_IN, Write),
];
const KEY_BY_HIGH: Bindings = &[
    (PARAMS, Uniform),
    (CODES, Write),
    (SORT_IN, Write),
    (SORT_OUT, Read),
];
const LEAVES_IN_ORDER: Bindings = &[
    (PARAMS, Uniform),
    (BODIES, Read),
    (BOXES, Write),
    (CODES, Write),
    (SORT_OUT, Read),
    (LEAVES, Write),
    (LEAF_CODES, Write),
];
const HIERARCHY: Bindings = &[
    (PARAMS, Uniform),
    (LEAVES, Write),
    (LEAF_CODES, Write),
    (NODES, Write),
    (NODE_PARENTS, Write),
    (LEAF_PARENTS, Write),
    (NODE_BOXES, Write),
];
const REFIT: Bindings = &[
    (PARAMS, Uniform),
    (LEAVES, Write),
    (NODE_PARENTS, Write),
    (LEAF_PARENTS, Write),
    (NODE_BOXES, Write),
];
const CANDIDATES: Bindings = &[
    (PARAMS, Uniform),
    (LEAVES, Write),
    (NODES, Write),
    (NODE_BOXES, Write),
    (PAIRS, Write),
    (COUNTERS, Write),
    (QUEUE_OUT, Write),
];
const RESUME_CANDIDATES: Bindings = &[
    (PARAMS, Uniform),
    (LEAVES, Write),
    (NODES, Write),
    (NODE_BOXES, Write),
    (PAIRS, Write),
    (COUNTERS, Write),
    (QUEUE_IN, Read),
    (QUEUE_OUT, Write),
];
const PREPARE_RESUME: Bindings = &[
    (PARAMS, Uniform),
    (QUEUE_IN, Read),
    (RESUME_DISPATCH, Write),
];

/// The broad phase of the GPU step as a stage that records into the caller's encoder: from a
/// body buffer on the device to a counted buffer of candidate pairs, every entry point of
/// `shaders/broad_phase.wgsl` with a bind group layout of the bindings it uses (at most 7
/// storage buffers: wgpu's default limits hold it). [`StepStage`](super::StepStage) chains
/// it with the sweep and the outputs; it is usable alone as a broad phase.
///
/// # Buffers
/// It binds the caller's bodies ([`BodyRecord`](crate::low_level::layout::BodyRecord)s, 32 bytes,
/// usage `STORAGE`) and makes the rest ([`BroadPhaseStage::create_buffers`]): the candidate
/// pairs (`[u32; 2]`, lower index first, `STORAGE`) and the counters (three `u32`: the
/// candidates counted, also past the capacity; a flag set when a candidate was counted
/// past it; a flag set when a query was saved past a queue's capacity; `STORAGE | COPY_SRC
/// | COPY_DST`), the step's parameters as a uniform ([`StepParams`], made on the device),
/// the per-body dispatch, the tree and lampshade's sorter.
#[derive(Debug, Clone)]
pub struct BroadPhaseStage {
    scene_bounds: Kernel,
    frame: Kernel,
    swept_boxes: Kernel,
    key_by_high: Kernel,
    leaves_in_order: Kernel,
    hierarchy: Kernel,
    refit: Kernel,
    candidates: Kernel,
    resume_candidates: Kernel,
    prepare_resume: Kernel,
    adapter: Option<wgpu::AdapterInfo>,
}

/// What the broad phase's buffers hold beyond the bodies: candidate pairs, saved queries in
/// each of its two queues, and the resume dispatches a step records.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BroadPhaseCapacities {
    /// Candidate pairs (8 bytes each).
    pub candidates: u64,
    /// Saved queries in each queue (404 bytes each).
    pub saved_queries: u64,
    /// Dispatches of `resume_candidates` a step records.
    pub resume_passes: u32,
}

impl Default for BroadPhaseCapacities {
    /// 16,384 candidates, 1,024 saved queries, 2 resume dispatches.
    fn default() -> Self {
        Self {
            candidates: 1 << 14,
            saved_queries: 1024,
            resume_passes: 2,
        }
    }
}

/// The buffers of one [`BroadPhaseStage`]: the caller's bodies (bound, never copied), the
/// stage's own buffers for [`BroadPhaseCapacities`], their bind groups, and the state of
/// lampshade's radix sorter (which records with `&mut self` and keeps its workspace from step
/// to step).
pub struct BroadPhaseBuffers {
    pub(super) capacities: BroadPhaseCapacities,
    body_capacity: u64,
    options: SweepOptions,
    body_count_set: u32,
    contact_capacity: u64,
    /// Always present but while [`StepStage::grow`](super::StepStage::grow) hands it over.
    sorter: Option<lampshade::KeyValueSorter>,
    /// The step's input parameters (options, capacities and body count) as the host wrote
    /// them: each step copies them to `frame_input` before a count buffer's count, so that a
    /// step without one counts the host's count, not the last count copied.
    host_input: wgpu::Buffer,
    /// The step's input parameters, copied from `host_input` and, for the count, from the
    /// caller's count buffer in the encoder; `frame` completes them into `frame_output`,
    /// copied to `params` (the uniform every later pass reads).
    pub(super) frame_input: wgpu::Buffer,
    pub(super) params: wgpu::Buffer,
    frame_output: wgpu::Buffer,
    bounds: wgpu::Buffer,
    /// The per-body dispatch (`SweepDispatch` of the body count), written by `frame`.
    pub(super) body_dispatch: wgpu::Buffer,
    /// The body count alone, for the sorter.
    pub(super) body_count: wgpu::Buffer,
    bodies: wgpu::Buffer,
    body_sort: [wgpu::Buffer; 2],
    pub(super) pairs: wgpu::Buffer,
    pub(super) counters: wgpu::Buffer,
    pub(super) queues: [wgpu::Buffer; 2],
    /// The workgroups of each resume of the saved queries, written by `prepare_resume`.
    pub(super) resume_dispatch: wgpu::Buffer,
    groups: Groups,
    all: Vec<wgpu::Buffer>,
}

/// The bind groups of each entry point; the queries' come in two, as the queues alternate.
struct Groups {
    scene_bounds: wgpu::BindGroup,
    frame: wgpu::BindGroup,
    swept_boxes: wgpu::BindGroup,
    key_by_high: wgpu::BindGroup,
    leaves_in_order: wgpu::BindGroup,
    hierarchy: wgpu::BindGroup,
    refit: wgpu::BindGroup,
    /// Saves to queue 0.
    candidates: wgpu::BindGroup,
    /// `[q]` resumes queue `1 - q` and saves to queue `q`.
    resume_candidates: [wgpu::BindGroup; 2],
    /// `[q]` sizes the resume of queue `q`.
    prepare_resume: [wgpu::BindGroup; 2],
}

impl std::fmt::Debug for BroadPhaseBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BroadPhaseBuffers")
            .field("capacities", &self.capacities)
            .field("body_capacity", &self.body_capacity)
            .finish_non_exhaustive()
    }
}

impl BroadPhaseStage {
    /// Compiles the broad phase on `device`; its sorter takes lampshade's portable path
    /// ([`BroadPhaseStage::for_adapter`] lets it choose the adapter's fast one).
    ///
    /// # Errors
    /// [`Error::DeviceLimit`] below [`StepStage::required_limits`](super::StepStage::required_limits);
    /// [`Error::Device`] when the device rejects a shader or pipeline.
    pub fn new(device: &wgpu::Device) -> Result<Self, Error> {
        compile_checked(device, || Self::compile(device, None))
    }

    /// As [`BroadPhaseStage::new`], with the sorter specialised for `adapter`.
    ///
    /// # Errors
    /// As [`BroadPhaseStage::new`].
    pub fn for_adapter(device: &wgpu::Device, adapter: &wgpu::AdapterInfo) -> Result<Self, Error> {
        compile_checked(device, || Self::compile(device, Some(adapter)))
    }

    fn compile(device: &wgpu::Device, adapter: Option<&wgpu::AdapterInfo>) -> Self {
        let shader = "broad_phase.wgsl";
        let module = module(device, shader, BROAD_PHASE_WGSL);
        let kernel = |name, bindings| Kernel::new(device, &module, shader, name, bindings);
        Self {
            scene_bounds: kernel("scene_bounds", SCENE_BOUNDS),
            frame: kernel("frame", FRAME),
            swept_boxes: kernel("swept_boxes", SWEPT_BOXES),
            key_by_high: kernel("key_by_high", KEY_BY_HIGH),
            leaves_in_order: kernel("leaves_in_order", LEAVES_IN_ORDER),
            hierarchy: kernel("hierarchy", HIERARCHY),
            refit: kernel("refit", REFIT),
            candidates: kernel("candidates", CANDIDATES),
            resume_candidates: kernel("resume_candidates", RESUME_CANDIDATES),
            prepare_resume: kernel("prepare_resume", PREPARE_RESUME),
            adapter: adapter.cloned(),
        }
    }

    /// The buffers over the caller's `bodies` (usage `STORAGE`, a whole number of
    /// [`BodyRecord`]s: its size is the body capacity) for `options` and `capacities` (as
    /// given: [`StepStage`](super::StepStage) rounds and clamps its own), with a new sorter.
    /// The body count is the capacity until [`BroadPhaseBuffers::set_body_count`].
    ///
    /// # Errors
    /// [`Error::InvalidBuffer`] for a body buffer without `STORAGE`, of a size that is not a
    /// whole number of records, or beyond one binding; [`Error::TooManyBodies`] beyond
    /// [`MAX_BODIES`](crate::cpu::ContactFinder::MAX_BODIES); [`Error::Device`] when the device cannot make
    /// the buffers.
    ///
    /// [`BodyRecord`]: crate::low_level::layout::BodyRecord
    pub fn create_buffers(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        bodies: &wgpu::Buffer,
        options: SweepOptions,
        capacities: BroadPhaseCapacities,
    ) -> Result<BroadPhaseBuffers, Error> {
        let mut buffers = self.create_buffers_with(
            device,
            bodies,
            capacities,
            self.sorter(device, queue, bodies),
        )?;
        buffers.options = options;
        buffers.body_count_set = buffers.body_capacity as u32;
        buffers.write_input(queue);
        Ok(buffers)
    }

    /// A new sorter for this stage's adapter, for the codes of the bodies `bodies` holds.
    pub(super) fn sorter(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        bodies: &wgpu::Buffer,
    ) -> lampshade::KeyValueSorter {
        new_sorter(
            device,
            queue,
            self.adapter.as_ref(),
            bodies.size() / BODY_SIZE,
        )
    }

    /// The buffers over `bodies` for `capacities`, with `sorter`; the host's input is left
    /// for [`BroadPhaseBuffers::write_input`].
    pub(super) fn create_buffers_with(
        &self,
        device: &wgpu::Device,
        bodies: &wgpu::Buffer,
        capacities: BroadPhaseCapacities,
        sorter: lampshade::KeyValueSorter,
    ) -> Result<BroadPhaseBuffers, Error> {
        let limits = device.limits();
        let largest_binding = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        check_binding("bodies", bodies, BODY_SIZE, largest_binding)?;
        let body_capacity = bodies.size() / BODY_SIZE;
        // A leaf's position shares its word with the tree's LEAF bit.
        if body_capacity > crate::cpu::ContactFinder::MAX_BODIES as u64 {
            return Err(Error::TooManyBodies {
                count: usize::try_from(body_capacity).unwrap_or(usize::MAX),
                max: crate::cpu::ContactFinder::MAX_BODIES,
            });
        }
        use wgpu::BufferUsages as Usage;
        let storage = Usage::STORAGE;
        let counted = COUNTED;
        let mut set = BufferSet::new(device);
        let mut buffer = |label, size: u64, usage| set.make(label, size, usage);
        let host_input = buffer(
            "step host input",
            PARAMS_SIZE,
            Usage::COPY_SRC | Usage::COPY_DST,
        );
        let frame_input = buffer("step frame input", PARAMS_SIZE, storage | Usage::COPY_DST);
        let params = buffer("step params", PARAMS_SIZE, Usage::UNIFORM | Usage::COPY_DST);
        let frame_output = buffer("step frame output", PARAMS_SIZE, storage | Usage::COPY_SRC);
        let bounds = buffer("step bounds", 4 * BOUNDS_WORDS as u64, counted);
        let body_dispatch = buffer(
            "step body dispatch",
            DISPATCH_SIZE,
            storage | Usage::INDIRECT | Usage::COPY_SRC,
        );
        let body_count = buffer("step body count", 4, counted);
        let n = body_capacity;
        let boxes = buffer("step boxes", 32 * n, storage);
        let codes = buffer("step codes", 8 * n, storage);
        let body_sort = [
            buffer("step body sort in", 8 * n, storage),
            buffer("step body sort out", 8 * n, storage),
        ];
        let leaves = buffer("step leaves", 32 * n, storage);
        let leaf_codes = buffer("step leaf codes", 8 * n, storage);
        let nodes = buffer("step nodes", 16 * n, storage);
        let node_parents = buffer("step node parents", 4 * n, storage);
        let leaf_parents = buffer("step leaf parents", 4 * n, storage);
        let node_boxes = buffer("step node boxes", 32 * n, storage);
        let pairs = buffer("step candidates", 8 * capacities.candidates, storage);
        let counters = buffer("step broad phase counters", 16, counted);
        let queue_size = QUEUE_HEAD + CONTINUATION_SIZE * capacities.saved_queries;
        let queues = [
            buffer("step saved queries 0", queue_size, counted),
            buffer("step saved queries 1", queue_size, counted),
        ];
        let resume_dispatch = buffer("step resume dispatch", 16, storage | Usage::INDIRECT);
        let group = |kernel: &Kernel, queue_in: usize, queue_out: usize| {
            kernel.bind(device, |binding| match binding {
                PARAMS => &params,
                BODIES => bodies,
                BOXES => &boxes,
                CODES => &codes,
                SORT_IN => &body_sort[0],
                SORT_OUT => &body_sort[1],
                LEAVES => &leaves,
                LEAF_CODES => &leaf_codes,
                NODES => &nodes,
                NODE_PARENTS => &node_parents,
                LEAF_PARENTS => &leaf_parents,
                NODE_BOXES => &node_boxes,
                PAIRS => &pairs,
                COUNTERS => &counters,
                QUEUE_IN => &queues[queue_in],
                QUEUE_OUT => &queues[queue_out],
                RESUME_DISPATCH => &resume_dispatch,
                FRAME_INPUT => &frame_input,
                BOUNDS => &bounds,
                FRAME_OUTPUT => &frame_output,
                BODY_DISPATCH => &body_dispatch,
                _ => unreachable!("broad_phase.wgsl has no binding {binding}"),
            })
        };
        let groups = Groups {
            scene_bounds: group(&self.scene_bounds, 0, 0),
            frame: group(&self.frame, 0, 0),
            swept_boxes: group(&self.swept_boxes, 0, 0),
            key_by_high: group(&self.key_by_high, 0, 0),
            leaves_in_order: group(&self.leaves_in_order, 0, 0),
            hierarchy: group(&self.hierarchy, 0, 0),
            refit: group(&self.refit, 0, 0),
            candidates: group(&self.candidates, 1, 0),
            resume_candidates: [0, 1].map(|saved| group(&self.resume_candidates, 1 - saved, saved)),
            prepare_resume: [0, 1].map(|queue| group(&self.prepare_resume, queue, queue)),
        };
        let all = set.finish()?;
        Ok(BroadPhaseBuffers {
            capacities,
            body_capacity,
            options: SweepOptions::default(),
            body_count_set: 0,
            contact_capacity: 0,
            sorter: Some(sorter),
            host_input,
            frame_input,
            params,
            frame_output,
            bounds,
            body_dispatch,
            body_count,
            bodies: bodies.clone(),
            body_sort,
            pairs,
            counters,
            queues,
            resume_dispatch,
            groups,
            all,
        })
    }

    /// Records the broad phase of `buffers`' bodies into `encoder`: the frame of the scene,
    /// the tree and the queries, ending with the candidates in
    /// [`BroadPhaseBuffers::pairs`] and their count in [`BroadPhaseBuffers::counters`].
    /// Where `count` is given (a buffer with usage `COPY_SRC` and the offset of a `u32` in
    /// it), the body count is that `u32`, copied in the encoder; else the one set on the
    /// buffers. Nothing is mapped or read by the host.
    ///
    /// # Errors
    /// [`Error::InvalidBuffer`] for a bad count buffer or offset; [`Error::Device`] when the
    /// sorter cannot record.
    pub fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &mut BroadPhaseBuffers,
        count: Option<(&wgpu::Buffer, u64)>,
    ) -> Result<(), Error> {
        if let Some((count, offset)) = count {
            check_count(count, offset)?;
        }
        self.record_stages(encoder, buffers, count, &mut |_, _| Ok(()))
    }

    /// Records the broad phase of `buffers`' bodies into `encoder`: the frame of the scene,
    /// the tree and the queries, ending with the candidates in `buffers.pairs`, their count
    /// in the counters, and the queries still saved (after `resume_passes` resumes) counted
    /// at the head of queue `resume_passes % 2`. Where `count` is given, the body count is
    /// the `u32` at its offset, copied in the encoder over the one the host wrote.
    ///
    /// `stage_end` is called after each stage's passes with its name (`bounds`, `sort`,
    /// `hierarchy`, `candidates`).
    pub(super) fn record_stages(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &mut BroadPhaseBuffers,
        count: Option<(&wgpu::Buffer, u64)>,
        stage_end: &mut StageEnd<'_>,
    ) -> Result<(), Error> {
        encoder.copy_buffer_to_buffer(&buffers.host_input, 0, &buffers.frame_input, 0, PARAMS_SIZE);
        if let Some((count, offset)) = count {
            let field = std::mem::offset_of!(StepParams, body_count) as u64;
            encoder.copy_buffer_to_buffer(count, offset, &buffers.frame_input, field, 4);
        }
        clear(encoder, &buffers.bounds, 0, None);
        clear(encoder, &buffers.counters, 0, None);
        let sorter = buffers.sorter.as_mut().ok_or_else(lost_sorter)?;
        let groups = &buffers.groups;
        // The count is not known on the host: one invocation per body the buffer holds,
        // those past the count doing nothing.
        let whole = SweepDispatch::new(buffers.body_capacity as u32);
        self.scene_bounds.record(
            encoder,
            &groups.scene_bounds,
            Workgroups::Direct(whole.workgroups_x, whole.workgroups_y),
        );
        self.frame
            .record(encoder, &groups.frame, Workgroups::Direct(1, 1));
        encoder.copy_buffer_to_buffer(&buffers.frame_output, 0, &buffers.params, 0, PARAMS_SIZE);
        let count_field = std::mem::offset_of!(SweepDispatch, pair_count) as u64;
        encoder.copy_buffer_to_buffer(
            &buffers.body_dispatch,
            count_field,
            &buffers.body_count,
            0,
            4,
        );
        let per_body = || Workgroups::Indirect(&buffers.body_dispatch);
        let capacity = buffers.body_capacity as u32;
        let [sort_in, sort_out] = &buffers.body_sort;
        self.swept_boxes
            .record(encoder, &groups.swept_boxes, per_body());
        stage_end(encoder, "bounds")?;
        let sort = [sort_in, sort_out];
        record_sort(sorter, encoder, sort, &buffers.body_count, capacity, 32)?;
        self.key_by_high
            .record(encoder, &groups.key_by_high, per_body());
        // The high words hold 31 bits of the 63-bit code.
        let high_bits = 3 * MORTON_BITS - 32;
        record_sort(
            sorter,
            encoder,
            sort,
            &buffers.body_count,
            capacity,
            high_bits,
        )?;
        stage_end(encoder, "sort")?;
        self.leaves_in_order
            .record(encoder, &groups.leaves_in_order, per_body());
        self.hierarchy
            .record(encoder, &groups.hierarchy, per_body());
        self.refit.record(encoder, &groups.refit, per_body());
        stage_end(encoder, "hierarchy")?;
        clear(encoder, &buffers.queues[0], 0, Some(QUEUE_HEAD));
        self.candidates
            .record(encoder, &groups.candidates, per_body());
        // The queries that ran out of steps go on, dispatch after dispatch, alternating
        // between the two queues: pass k resumes queue (k - 1) % 2 and saves to k % 2.
        for pass in 1..=buffers.capacities.resume_passes as usize {
            let (resumed, saved) = ((pass - 1) % 2, pass % 2);
            clear(encoder, &buffers.queues[saved], 0, Some(QUEUE_HEAD));
            self.prepare_resume.record(
                encoder,
                &groups.prepare_resume[resumed],
                Workgroups::Direct(1, 1),
            );
            self.resume_candidates.record(
                encoder,
                &groups.resume_candidates[saved],
                Workgroups::Indirect(&buffers.resume_dispatch),
            );
        }
        stage_end(encoder, "candidates")
    }
}

impl BroadPhaseBuffers {
    /// Writes the step's input (options, capacities and body count) with `queue`: it takes
    /// effect at the next submission, for every step recorded in it.
    pub(super) fn write_input(&self, queue: &wgpu::Queue) {
        let mut input = StepParams::new(&[], &self.options);
        input.body_count = self.body_count_set;
        input.candidate_capacity = self.capacities.candidates as u32;
        input.contact_capacity = self.contact_capacity as u32;
        input.continuation_capacity = self.capacities.saved_queries as u32;
        queue.write_buffer(&self.host_input, 0, bytemuck::bytes_of(&input));
    }

    /// Sets the options of the steps recorded from now on (written with `queue`: they take
    /// effect at the next submission, for every step recorded in it).
    pub fn set_options(&mut self, queue: &wgpu::Queue, options: SweepOptions) {
        self.options = options;
        self.write_input(queue);
    }

    /// Sets the body count of the steps recorded without a count buffer (written with
    /// `queue`, taking effect at the next submission).
    pub fn set_body_count(&mut self, queue: &wgpu::Queue, body_count: u32) {
        self.body_count_set = body_count;
        self.write_input(queue);
    }

    /// The bodies the buffers are bound to (the caller's).
    #[must_use]
    pub fn bodies(&self) -> &wgpu::Buffer {
        &self.bodies
    }

    /// Bodies the body buffer holds.
    #[must_use]
    pub fn body_capacity(&self) -> u64 {
        self.body_capacity
    }

    /// The capacities the buffers were made for.
    #[must_use]
    pub fn capacities(&self) -> BroadPhaseCapacities {
        self.capacities
    }

    /// The candidate pairs (`[u32; 2]`, lower index first; `STORAGE`): the first
    /// `min(count, capacity)` hold them, in no particular order.
    #[must_use]
    pub fn pairs(&self) -> &wgpu::Buffer {
        &self.pairs
    }

    /// The counters (`STORAGE | COPY_SRC | COPY_DST`): the candidates counted (word 0, also
    /// past the capacity, modulo 2³²), a flag set when one was counted past the capacity
    /// (word 1), and a flag set when a query was saved past a queue's capacity (word 2).
    #[must_use]
    pub fn counters(&self) -> &wgpu::Buffer {
        &self.counters
    }

    /// The step's parameters as the later stages read them ([`StepParams`], a uniform made
    /// on the device and copied in the encoder).
    #[must_use]
    pub fn params(&self) -> &wgpu::Buffer {
        &self.params
    }

    /// The per-body dispatch (a [`SweepDispatch`] of the step's body count, written on the
    /// device: `STORAGE | INDIRECT | COPY_SRC`), its first three words an indirect dispatch.
    #[must_use]
    pub fn body_dispatch(&self) -> &wgpu::Buffer {
        &self.body_dispatch
    }

    /// The queue that holds the queries still unfinished after the last resume: its first
    /// word counts them (`STORAGE | COPY_SRC | COPY_DST`); nonzero means the step's
    /// candidates are incomplete.
    #[must_use]
    pub fn unfinished_queries(&self) -> &wgpu::Buffer {
        &self.queues[self.capacities.resume_passes as usize % 2]
    }

    /// Bytes of device memory the buffers hold (not the caller's bodies, nor the sorter's
    /// workspace).
    #[must_use]
    pub fn device_memory_bytes(&self) -> u64 {
        self.all.iter().map(wgpu::Buffer::size).sum()
    }
}

/// The error of a sorter that was handed over and not given back (a failed growth that was
/// not retried): never seen through the public API.
pub(super) fn lost_sorter() -> Error {
    Error::Device("the step's buffers lost their sorter in a failed growth".into())
}
