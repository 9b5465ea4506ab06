//! The grid step: `shaders/grid.wgsl` recorded into the caller's command encoder, from a body
//! buffer on the device to each body's earliest contact with another body
//! ([`EarliestRecord`](crate::low_level::layout::EarliestRecord)s), with no candidate buffer and
//! no host read between. Its f32 twin, one function per entry point, is
//! [`crate::low_level::grid`].
//!
//! ```text
//! bodies ─► scene_bounds ─► frame ─► grid_widths ─► grid_frame ─► grid_keys ─► sort (hash)
//!           (frame.wgsl: the local frame)          (levels)     (cell hash,   (lampshade)
//!                                                                 populations)
//!        ─► grid_cells ─► grid_plan ─► grid_gather ─► grid_partners ─► grid_records ─► grid_finish
//!           (entries,     (who         (find, sweep,  (several levels only: the      (GridCounts)
//!            ranges)       searches)    keep)          cross-level partners)
//! ```

use super::buffers::{BufferSet, COUNTED, PerItem, bytes_per_item};
use super::buffers::{check_binding, largest_binding};
use super::frame::{BODIES, BODY_DISPATCH, BOUNDS, FRAME_INPUT, FRAME_OUTPUT, FRAME_SHADER};
use super::kernel::{
    Access, Bindings, Kernel, Shader, StageEnd, Workgroups, clear, compile_checked,
    most_storage_buffers,
};
use super::sort::{new_sorter, record_sort};
use crate::cpu::frame::BOUNDS_WORDS;
use crate::cpu::grid::{
    GRID_BUDGET, GRID_MAX_BODIES, GRID_MAX_RESUME_PASSES, GRID_RATIO_LOG2, GRID_RESUME_PASSES,
    GRID_SAVED_WALKS, GRID_SINGLE_SPAN_LOG2, GridCounts, GridEntry, GridParams, RESUME_HEAD,
    WALK_WORDS, grid_words, table_bits,
};
use crate::error::Error;
use crate::layout::{
    BodyRecord, EarliestRecord, KeyValue, StepCounts, StepParams, SweepDispatch, SweepParams,
    bytes_of,
};
use crate::options::SweepOptions;

/// The WGSL source of the grid: `shaders/shared.wgsl`, `shaders/sweep.wgsl` (its
/// `sweep_pair`) and `shaders/grid.wgsl`.
pub const GRID_WGSL: &str = concat!(
    include_str!("../../shaders/shared.wgsl"),
    include_str!("../../shaders/sweep.wgsl"),
    include_str!("../../shaders/grid.wgsl")
);

/// The grid's buffers of one record a body, as [`GridStage::create_buffers_with`] makes
/// them: the sort's records in and out, the sorted entries, each body's own best and time
/// words, and each body's earliest record.
const PER_BODY: [PerItem; 5] = [
    PerItem::of::<KeyValue>("grid sort in", wgpu::BufferUsages::STORAGE),
    PerItem::of::<KeyValue>("grid sort out", wgpu::BufferUsages::STORAGE),
    PerItem::of::<GridEntry>("grid entries", wgpu::BufferUsages::STORAGE),
    PerItem::of::<[u32; 4]>("grid time words", COUNTED),
    PerItem::of::<EarliestRecord>("grid earliest", COUNTED),
];

/// The counted gather's list of hits, a pair and its impact record a hit, as
/// [`GridStage::create_buffers_with`] makes it.
const PER_HIT: [PerItem; 2] = [
    PerItem::of::<[u32; 2]>("grid hit pairs", wgpu::BufferUsages::STORAGE),
    PerItem::of::<crate::layout::ImpactRecord>("grid hit impacts", wgpu::BufferUsages::STORAGE),
];

/// Bytes per hit the counted gather lists (40): those of `PER_HIT`.
pub(crate) const GRID_BYTES_PER_HIT: u64 = bytes_per_item(&PER_HIT);

/// Bytes per body of the grid's own buffers, beyond the caller's bodies: those of
/// `PER_BODY` (96), not the hash table's ranges (8 a slot, one to two slots a body: counted
/// at the capacity's power of two by [`GridBuffers::device_memory_bytes`]).
pub(crate) const GRID_BYTES_PER_BODY: u64 = bytes_per_item(&PER_BODY);

// grid.wgsl's bindings (and sweep.wgsl's `params`).
const SWEEP_PARAMS: u32 = 3;
const STEP: u32 = 40;
const GRID: u32 = 41;
const GRID_OUT: u32 = 42;
const GRID_IN: u32 = 43;
const WORDS: u32 = 44;
const SORT_IN: u32 = 45;
const SORT_OUT: u32 = 46;
const ENTRIES: u32 = 47;
const RANGES: u32 = 48;
const TIME_WORDS: u32 = 50;
const EARLIEST: u32 = 51;
const SCENE_WORDS: u32 = 52;
const COUNTS: u32 = 53;
const STEP_COUNTS: u32 = 54;
const HIT_PAIRS: u32 = 55;
const HIT_IMPACTS: u32 = 56;
const HIT_DISPATCH: u32 = 57;
const RESUME_DISPATCH: u32 = 58;

use Access::{Read, Uniform, Write};
const GRID_WIDTHS: Bindings = &[(STEP, Uniform), (BODIES_0, Read), (WORDS, Write)];
const GRID_FRAME: Bindings = &[
    (STEP, Uniform),
    (GRID_IN, Read),
    (WORDS, Write),
    (GRID_OUT, Write),
];
const GRID_KEYS: Bindings = &[
    (STEP, Uniform),
    (GRID, Uniform),
    (BODIES_0, Read),
    (WORDS, Write),
    (SORT_IN, Write),
];
const GRID_CELLS: Bindings = &[
    (STEP, Uniform),
    (GRID, Uniform),
    (BODIES_0, Read),
    (SORT_OUT, Read),
    (ENTRIES, Write),
    (RANGES, Write),
];
const GRID_PLAN: Bindings = &[(GRID, Uniform), (WORDS, Write), (GRID_OUT, Write)];
/// The gathers' (the counted one's too): eight storage buffers, wgpu's default limit.
const GRID_GATHER: Bindings = &[
    (SWEEP_PARAMS, Uniform),
    (STEP, Uniform),
    (GRID, Uniform),
    (BODIES_0, Read),
    (WORDS, Write),
    (ENTRIES, Write),
    (RANGES, Write),
    (TIME_WORDS, Write),
    (EARLIEST, Write),
    (HIT_PAIRS, Write),
    (HIT_IMPACTS, Write),
];
const GRID_PARTNERS: Bindings = &[
    (SWEEP_PARAMS, Uniform),
    (STEP, Uniform),
    (GRID, Uniform),
    (BODIES_0, Read),
    (WORDS, Write),
    (ENTRIES, Write),
    (RANGES, Write),
    (TIME_WORDS, Write),
    (HIT_PAIRS, Write),
    (HIT_IMPACTS, Write),
];
const GRID_HITS_DISPATCH: Bindings = &[(STEP, Uniform), (WORDS, Write), (HIT_DISPATCH, Write)];
const GRID_RESUME_DISPATCH: Bindings = &[(STEP, Uniform), (WORDS, Write), (RESUME_DISPATCH, Write)];
const GRID_RECORDS: Bindings = &[
    (SWEEP_PARAMS, Uniform),
    (STEP, Uniform),
    (GRID, Uniform),
    (BODIES_0, Read),
    (TIME_WORDS, Write),
    (EARLIEST, Write),
];
const GRID_FINISH: Bindings = &[
    (STEP, Uniform),
    (GRID, Uniform),
    (BODIES_0, Read),
    (WORDS, Write),
    (SCENE_WORDS, Read),
    (COUNTS, Write),
    (STEP_COUNTS, Write),
];
/// sweep.wgsl's `bodies`.
const BODIES_0: u32 = 0;

/// grid.wgsl's entry points as the stage builds them.
pub(super) const GRID_SHADER: Shader = Shader {
    file: "grid.wgsl",
    source: GRID_WGSL,
    entry_points: &[
        ("grid_widths", GRID_WIDTHS),
        ("grid_frame", GRID_FRAME),
        ("grid_keys", GRID_KEYS),
        ("grid_cells", GRID_CELLS),
        ("grid_plan", GRID_PLAN),
        ("grid_gather", GRID_GATHER),
        ("grid_gather_counted", GRID_GATHER),
        ("grid_resume_dispatch", GRID_RESUME_DISPATCH),
        ("grid_resume", GRID_GATHER),
        ("grid_hits_dispatch", GRID_HITS_DISPATCH),
        ("grid_partners", GRID_PARTNERS),
        ("grid_records", GRID_RECORDS),
        ("grid_finish", GRID_FINISH),
    ],
};

/// The grid step as a stage that records into the caller's encoder: each body's earliest
/// contact with another body, from the bodies alone. Every entry point has a bind group
/// layout of the bindings it uses (at most 7 storage buffers: wgpu's default limits hold
/// it).
///
/// Used by: `docs/step.md` ("The grid step: each body's earliest contact in one pass"),
/// `examples/grid_bench.rs`.
///
/// # What bounds the work
/// An invocation of the gather takes at most [`GRID_BUDGET`](crate::low_level::grid::GRID_BUDGET)
/// steps (a cell looked up, an entry visited); a walk that runs out is saved and resumed by
/// the next dispatch, [`GridBuffers::set_resume_passes`] times (one by default). One still
/// running after the last raises `unfinished` in the step's [`GridCounts`], one that found no
/// slot `saved_overflowed`, and the step is not `valid`: never a silent partial answer.
#[derive(Debug, Clone)]
pub struct GridStage {
    scene_bounds: Kernel,
    frame: Kernel,
    grid_widths: Kernel,
    grid_frame: Kernel,
    grid_keys: Kernel,
    grid_cells: Kernel,
    grid_plan: Kernel,
    grid_gather: Kernel,
    grid_gather_counted: Kernel,
    grid_resume_dispatch: Kernel,
    grid_resume: Kernel,
    grid_hits_dispatch: Kernel,
    grid_partners: Kernel,
    grid_records: Kernel,
    grid_finish: Kernel,
    adapter: Option<wgpu::AdapterInfo>,
}

/// The buffers of one [`GridStage`] over the caller's bodies.
///
/// Used by: `docs/step.md` ("The grid step: each body's earliest contact in one pass"),
/// `examples/grid_bench.rs`.
pub struct GridBuffers {
    body_capacity: u64,
    body_count: u32,
    options: SweepOptions,
    table_bits: u32,
    budget: u32,
    /// Hits the gather lists (0: the plain gather, which neither counts nor lists).
    contacts: u64,
    /// Walks past their budget each chain may save, and the resumes recorded after each.
    saved_capacity: u32,
    resume_passes: u32,
    sorter: lampshade::KeyValueSorter,
    bodies: wgpu::Buffer,
    host_input: wgpu::Buffer,
    frame_input: wgpu::Buffer,
    frame_output: wgpu::Buffer,
    bounds: wgpu::Buffer,
    body_dispatch: wgpu::Buffer,
    sort_count: wgpu::Buffer,
    step: wgpu::Buffer,
    sweep_params: wgpu::Buffer,
    grid: wgpu::Buffer,
    grid_in: wgpu::Buffer,
    grid_out: wgpu::Buffer,
    words: wgpu::Buffer,
    sort: [wgpu::Buffer; 2],
    ranges: wgpu::Buffer,
    earliest: wgpu::Buffer,
    time_words: wgpu::Buffer,
    counts: wgpu::Buffer,
    step_counts: wgpu::Buffer,
    hit_pairs: wgpu::Buffer,
    hit_impacts: wgpu::Buffer,
    hit_dispatch: wgpu::Buffer,
    resume_dispatch: wgpu::Buffer,
    groups: Vec<wgpu::BindGroup>,
    all: Vec<wgpu::Buffer>,
}

impl std::fmt::Debug for GridBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GridBuffers")
            .field("body_capacity", &self.body_capacity)
            .field("body_count", &self.body_count)
            .finish_non_exhaustive()
    }
}

/// The most walks past their budget a chain may save in buffers of `largest_binding` bytes:
/// the grid's words (the counters, then two chains of 64-byte slots) in one binding.
pub(super) fn most_saved_walks(largest_binding: u64) -> u64 {
    let words = largest_binding / bytes_of::<u32>(1);
    let slots = words.saturating_sub(RESUME_HEAD as u64) / (2 * WALK_WORDS as u64);
    slots.min(u64::from(u32::MAX))
}

impl GridStage {
    /// Compiles the grid step on `device`; its sorter takes lampshade's portable path
    /// ([`GridStage::for_adapter`] lets it choose the adapter's fast one).
    ///
    /// # Errors
    /// [`Error::Device`] when the device rejects a shader or pipeline.
    pub fn new(device: &wgpu::Device) -> Result<Self, Error> {
        compile_checked(device, || Self::compile(device, None))
    }

    /// As [`GridStage::new`], with the sorter specialised for `adapter`.
    ///
    /// # Errors
    /// As [`GridStage::new`].
    pub fn for_adapter(device: &wgpu::Device, adapter: &wgpu::AdapterInfo) -> Result<Self, Error> {
        compile_checked(device, || Self::compile(device, Some(adapter)))
    }

    /// The most storage buffers one of its entry points binds.
    pub(super) fn storage_buffers(&self) -> u32 {
        most_storage_buffers(&[
            &self.scene_bounds,
            &self.frame,
            &self.grid_widths,
            &self.grid_frame,
            &self.grid_keys,
            &self.grid_cells,
            &self.grid_plan,
            &self.grid_gather,
            &self.grid_gather_counted,
            &self.grid_resume_dispatch,
            &self.grid_resume,
            &self.grid_hits_dispatch,
            &self.grid_partners,
            &self.grid_records,
            &self.grid_finish,
        ])
    }

    fn compile(device: &wgpu::Device, adapter: Option<&wgpu::AdapterInfo>) -> Self {
        let frame_module = FRAME_SHADER.module(device);
        let grid_module = GRID_SHADER.module(device);
        let kernel = |name| GRID_SHADER.kernel(device, &grid_module, name);
        Self {
            scene_bounds: FRAME_SHADER.kernel(device, &frame_module, "scene_bounds"),
            frame: FRAME_SHADER.kernel(device, &frame_module, "frame"),
            grid_widths: kernel("grid_widths"),
            grid_frame: kernel("grid_frame"),
            grid_keys: kernel("grid_keys"),
            grid_cells: kernel("grid_cells"),
            grid_plan: kernel("grid_plan"),
            grid_gather: kernel("grid_gather"),
            grid_gather_counted: kernel("grid_gather_counted"),
            grid_resume_dispatch: kernel("grid_resume_dispatch"),
            grid_resume: kernel("grid_resume"),
            grid_hits_dispatch: kernel("grid_hits_dispatch"),
            grid_partners: kernel("grid_partners"),
            grid_records: kernel("grid_records"),
            grid_finish: kernel("grid_finish"),
            adapter: adapter.cloned(),
        }
    }

    /// The buffers over the caller's `bodies` (usage `STORAGE`, a whole number of
    /// [`BodyRecord`](crate::low_level::layout::BodyRecord)s: its size is the body capacity)
    /// for `options`. The body count is the capacity until [`GridBuffers::set_body_count`].
    ///
    /// # Errors
    /// [`Error::InvalidBuffer`] for a body buffer without `STORAGE`, of a size that is not a
    /// whole number of records, or beyond one binding; [`Error::TooManyBodies`] beyond
    /// [`GRID_MAX_BODIES`](crate::low_level::grid::GRID_MAX_BODIES); [`Error::OutOfDeviceMemory`]
    /// when the device cannot back the buffers, [`Error::Device`] when it rejects them.
    pub fn create_buffers(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        bodies: &wgpu::Buffer,
        options: SweepOptions,
    ) -> Result<GridBuffers, Error> {
        let saved = u64::from(GRID_SAVED_WALKS);
        self.create_buffers_with(device, queue, bodies, options, 0, saved)
    }

    /// As [`GridStage::create_buffers`], with a gather that counts each pair and lists each
    /// hit once, in buffers of `contacts` hits (at least 1; what one binding holds at most):
    /// the candidates of the ordered contacts ([`StepStage`](super::StepStage)). Counted past
    /// the capacity: [`GridCounts::contacts`] then exceeds it and the step is not `valid`.
    ///
    /// # Errors
    /// As [`GridStage::create_buffers`].
    pub fn create_buffers_counted(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        bodies: &wgpu::Buffer,
        options: SweepOptions,
        contacts: u64,
    ) -> Result<GridBuffers, Error> {
        let saved = u64::from(GRID_SAVED_WALKS);
        self.create_buffers_with(device, queue, bodies, options, contacts.max(1), saved)
    }

    /// The buffers, with a gather that lists up to `contacts` hits where it is not 0 (as
    /// [`GridStage::create_buffers_counted`]; the plain gather of
    /// [`GridStage::create_buffers`] for 0), and room for `saved_walks` walks past their
    /// budget a chain of walks (clamped to 1 and to one binding of 64-byte slots; 1,024 by
    /// default, [`GRID_SAVED_WALKS`](crate::low_level::grid::GRID_SAVED_WALKS)).
    ///
    /// # Errors
    /// As [`GridStage::create_buffers`].
    pub fn create_buffers_with(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        bodies: &wgpu::Buffer,
        options: SweepOptions,
        contacts: u64,
        saved_walks: u64,
    ) -> Result<GridBuffers, Error> {
        let (contacts, saved) = (contacts, saved_walks);
        let largest_binding = largest_binding(device);
        check_binding("bodies", bodies, bytes_of::<BodyRecord>(1), largest_binding)?;
        let n = bodies.size() / bytes_of::<BodyRecord>(1);
        if n > GRID_MAX_BODIES {
            return Err(Error::TooManyBodies {
                count: usize::try_from(n).unwrap_or(usize::MAX),
                max: GRID_MAX_BODIES as usize,
            });
        }
        let table_bits = table_bits(n as usize);
        use wgpu::BufferUsages as Usage;
        let storage = Usage::STORAGE;
        let mut set = BufferSet::new(device);
        let [sort_in, sort_out, entries, time_words, earliest] =
            PER_BODY.map(|buffer| set.per_item(buffer, n));
        // The hits the counted gather lists, within one binding of the larger record.
        let impact_size = bytes_of::<crate::layout::ImpactRecord>(1);
        let contacts = contacts.min(largest_binding / impact_size);
        let [hit_pairs, hit_impacts] = PER_HIT.map(|buffer| set.per_item(buffer, contacts.max(1)));
        let mut buffer = |label, size: u64, usage| set.make(label, size, usage);
        let host_input = buffer(
            "grid host input",
            bytes_of::<StepParams>(1),
            Usage::COPY_SRC | Usage::COPY_DST,
        );
        let frame_input = buffer(
            "grid frame input",
            bytes_of::<StepParams>(1),
            storage | Usage::COPY_DST,
        );
        let frame_output = buffer(
            "grid frame output",
            bytes_of::<StepParams>(1),
            storage | Usage::COPY_SRC,
        );
        let bounds = buffer(
            "grid scene bounds",
            bytes_of::<u32>(BOUNDS_WORDS as u64),
            COUNTED,
        );
        let body_dispatch = buffer(
            "grid body dispatch",
            bytes_of::<SweepDispatch>(1),
            storage | Usage::INDIRECT | Usage::COPY_SRC,
        );
        let sort_count = buffer("grid sort count", bytes_of::<u32>(1), COUNTED);
        let step = buffer(
            "grid step params",
            bytes_of::<StepParams>(1),
            Usage::UNIFORM | Usage::COPY_DST,
        );
        let sweep_params = buffer(
            "grid sweep params",
            bytes_of::<SweepParams>(1),
            Usage::UNIFORM | Usage::COPY_DST,
        );
        let grid_size = bytes_of::<GridParams>(1);
        let grid = buffer("grid params", grid_size, Usage::UNIFORM | Usage::COPY_DST);
        let grid_in = buffer("grid input", grid_size, storage | Usage::COPY_DST);
        let grid_out = buffer("grid output", grid_size, storage | Usage::COPY_SRC);
        let saved_capacity = saved.clamp(1, most_saved_walks(largest_binding)) as u32;
        let words = buffer(
            "grid words",
            bytes_of::<u32>(grid_words(saved_capacity) as u64),
            COUNTED,
        );
        let sort = [sort_in, sort_out];
        let ranges = buffer(
            "grid ranges",
            bytes_of::<[u32; 2]>(1 << table_bits),
            COUNTED,
        );
        let hit_dispatch = buffer(
            "grid hit dispatch",
            bytes_of::<SweepDispatch>(1),
            storage | Usage::INDIRECT,
        );
        let resume_dispatch = buffer(
            "grid resume dispatch",
            bytes_of::<SweepDispatch>(1),
            storage | Usage::INDIRECT,
        );
        let counts = buffer("grid counts", bytes_of::<GridCounts>(1), COUNTED);
        let step_counts = buffer("grid step counts", bytes_of::<StepCounts>(1), COUNTED);
        let all = set.finish()?;
        let bind = |kernel: &Kernel| {
            kernel.bind(device, |binding| match binding {
                BODIES_0 => bodies,
                SWEEP_PARAMS => &sweep_params,
                STEP => &step,
                GRID => &grid,
                GRID_OUT => &grid_out,
                GRID_IN => &grid_in,
                WORDS => &words,
                SORT_IN => &sort[0],
                SORT_OUT => &sort[1],
                ENTRIES => &entries,
                RANGES => &ranges,
                HIT_PAIRS => &hit_pairs,
                HIT_IMPACTS => &hit_impacts,
                HIT_DISPATCH => &hit_dispatch,
                RESUME_DISPATCH => &resume_dispatch,
                TIME_WORDS => &time_words,
                EARLIEST => &earliest,
                SCENE_WORDS => &bounds,
                COUNTS => &counts,
                STEP_COUNTS => &step_counts,
                _ => unreachable!("grid.wgsl has no binding {binding}"),
            })
        };
        let bind_frame = |kernel: &Kernel| {
            kernel.bind(device, |binding| match binding {
                BODIES => bodies,
                FRAME_INPUT => &frame_input,
                BOUNDS => &bounds,
                FRAME_OUTPUT => &frame_output,
                BODY_DISPATCH => &body_dispatch,
                _ => unreachable!("scene_bounds and frame have no binding {binding}"),
            })
        };
        let groups = vec![
            bind_frame(&self.scene_bounds),
            bind_frame(&self.frame),
            bind(&self.grid_widths),
            bind(&self.grid_frame),
            bind(&self.grid_keys),
            bind(&self.grid_cells),
            bind(&self.grid_plan),
            bind(if contacts == 0 {
                &self.grid_gather
            } else {
                &self.grid_gather_counted
            }),
            bind(&self.grid_resume_dispatch),
            bind(&self.grid_resume),
            bind(&self.grid_hits_dispatch),
            bind(&self.grid_partners),
            bind(&self.grid_records),
            bind(&self.grid_finish),
        ];
        let buffers = GridBuffers {
            body_capacity: n,
            body_count: n as u32,
            options,
            table_bits,
            budget: 0,
            contacts,
            saved_capacity,
            resume_passes: GRID_RESUME_PASSES,
            sorter: new_sorter(device, queue, self.adapter.as_ref(), n),
            bodies: bodies.clone(),
            host_input,
            frame_input,
            frame_output,
            bounds,
            body_dispatch,
            sort_count,
            step,
            sweep_params,
            grid,
            grid_in,
            grid_out,
            words,
            sort,
            ranges,
            earliest,
            time_words,
            counts,
            step_counts,
            hit_pairs,
            hit_impacts,
            hit_dispatch,
            resume_dispatch,
            groups,
            all,
        };
        buffers.write_input(queue);
        Ok(buffers)
    }

    /// Records the step into `encoder`: afterwards [`GridBuffers::earliest`] holds each
    /// body's earliest contact and [`GridBuffers::counts`] the step's [`GridCounts`].
    ///
    /// # Errors
    /// [`Error::Device`] where lampshade's sort cannot be recorded.
    pub fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &mut GridBuffers,
    ) -> Result<(), Error> {
        self.record_stages(encoder, buffers, None, &mut |_, _| Ok(()))
    }

    /// [`GridStage::record`], calling `stage_end` after each of its stages (`bounds`, `sort`,
    /// `cells`, `gather`, `levels`) with the encoder: where a benchmark writes a timestamp,
    /// or submits and waits.
    ///
    /// # Errors
    /// As [`GridStage::record`], and any error of `stage_end`.
    pub fn record_timed(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &mut GridBuffers,
        stage_end: &mut dyn FnMut(&mut wgpu::CommandEncoder, &'static str) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.record_stages(encoder, buffers, None, stage_end)
    }

    /// [`GridStage::record`], with the body count the `u32` at the given offset of `count`
    /// where it is given (copied in the encoder; checked by the caller), calling `stage_end`
    /// after each stage.
    pub(super) fn record_stages(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &mut GridBuffers,
        count: Option<(&wgpu::Buffer, u64)>,
        stage_end: &mut StageEnd<'_>,
    ) -> Result<(), Error> {
        let [
            scene_bounds,
            frame,
            widths,
            grid_frame,
            keys,
            cells,
            plan,
            gather,
            resume_dispatch,
            resume,
            hits_dispatch,
            partners,
            records,
            finish,
        ] = buffers.groups.as_slice()
        else {
            unreachable!("one bind group an entry point");
        };
        encoder.copy_buffer_to_buffer(
            &buffers.host_input,
            0,
            &buffers.frame_input,
            0,
            bytes_of::<StepParams>(1),
        );
        // Where the count is not known on the host: one invocation per body the buffer holds,
        // those past the count doing nothing.
        let whole = match count {
            Some((count, offset)) => {
                let field = std::mem::offset_of!(StepParams, body_count) as u64;
                encoder.copy_buffer_to_buffer(count, offset, &buffers.frame_input, field, 4);
                SweepDispatch::new(buffers.body_capacity as u32)
            }
            None => SweepDispatch::new(buffers.body_count.min(buffers.body_capacity as u32)),
        };
        let per_body = || Workgroups::Indirect(&buffers.body_dispatch);
        let grid_size = bytes_of::<GridParams>(1);
        clear(encoder, &buffers.bounds, 0, None);
        // The counters and the saved walks' heads; the slots are written before they are read.
        clear(
            encoder,
            &buffers.words,
            0,
            Some(bytes_of::<u32>(RESUME_HEAD as u64)),
        );
        self.scene_bounds.record(
            encoder,
            scene_bounds,
            Workgroups::Direct(whole.workgroups_x, whole.workgroups_y),
        );
        self.frame.record(encoder, frame, Workgroups::Direct(1, 1));
        encoder.copy_buffer_to_buffer(
            &buffers.frame_output,
            0,
            &buffers.step,
            0,
            bytes_of::<StepParams>(1),
        );
        let count_field = std::mem::offset_of!(SweepDispatch, pair_count) as u64;
        encoder.copy_buffer_to_buffer(
            &buffers.body_dispatch,
            count_field,
            &buffers.sort_count,
            0,
            4,
        );
        self.grid_widths.record(encoder, widths, per_body());
        self.grid_frame
            .record(encoder, grid_frame, Workgroups::Direct(1, 1));
        encoder.copy_buffer_to_buffer(&buffers.grid_out, 0, &buffers.grid, 0, grid_size);
        self.grid_keys.record(encoder, keys, per_body());
        stage_end(encoder, "bounds")?;
        record_sort(
            &mut buffers.sorter,
            encoder,
            [&buffers.sort[0], &buffers.sort[1]],
            &buffers.sort_count,
            buffers.body_capacity as u32,
            buffers.table_bits,
        )?;
        stage_end(encoder, "sort")?;
        clear(encoder, &buffers.ranges, 0, None);
        self.grid_cells.record(encoder, cells, per_body());
        self.grid_plan
            .record(encoder, plan, Workgroups::Direct(1, 1));
        encoder.copy_buffer_to_buffer(&buffers.grid_out, 0, &buffers.grid, 0, grid_size);
        stage_end(encoder, "cells")?;
        clear(encoder, &buffers.earliest, 0, None);
        clear(encoder, &buffers.time_words, 0, None);
        // Each chain of walks (the gathers', then the partners'), and its walks past the
        // budget resumed where they stopped, `resume_passes` times.
        let resumes = |encoder: &mut wgpu::CommandEncoder| {
            if buffers.resume_passes == 0 {
                return;
            }
            self.grid_resume_dispatch
                .record(encoder, resume_dispatch, Workgroups::Direct(1, 1));
            for _ in 0..buffers.resume_passes {
                self.grid_resume.record(
                    encoder,
                    resume,
                    Workgroups::Indirect(&buffers.resume_dispatch),
                );
            }
        };
        if buffers.contacts == 0 {
            self.grid_gather.record(encoder, gather, per_body());
            resumes(encoder);
        } else {
            self.grid_gather_counted.record(encoder, gather, per_body());
            resumes(encoder);
            self.grid_hits_dispatch
                .record(encoder, hits_dispatch, Workgroups::Direct(1, 1));
        }
        stage_end(encoder, "gather")?;
        self.grid_partners.record(encoder, partners, per_body());
        resumes(encoder);
        self.grid_records.record(encoder, records, per_body());
        self.grid_finish
            .record(encoder, finish, Workgroups::Direct(1, 1));
        stage_end(encoder, "levels")
    }
}

impl GridBuffers {
    fn write_input(&self, queue: &wgpu::Queue) {
        let mut input = StepParams::new(&[], &self.options);
        input.body_count = self.body_count;
        input.contact_capacity = self.contacts as u32;
        input.continuation_capacity = self.saved_capacity;
        queue.write_buffer(&self.host_input, 0, bytemuck::bytes_of(&input));
        let sweep = SweepParams::new(&self.options, 0);
        queue.write_buffer(&self.sweep_params, 0, bytemuck::bytes_of(&sweep));
        let grid = GridParams {
            table_bits: self.table_bits,
            ratio_log2: GRID_RATIO_LOG2,
            single_span_log2: GRID_SINGLE_SPAN_LOG2,
            budget: self.budget,
            ..GridParams::default()
        };
        queue.write_buffer(&self.grid_in, 0, bytemuck::bytes_of(&grid));
    }

    /// Sets how many of the buffer's bodies (from the first) the next steps take.
    ///
    /// # Errors
    /// [`Error::TooManyBodies`] beyond the body buffer's capacity.
    pub fn set_body_count(&mut self, queue: &wgpu::Queue, body_count: u32) -> Result<(), Error> {
        if u64::from(body_count) > self.body_capacity {
            return Err(Error::TooManyBodies {
                count: body_count as usize,
                max: self.body_capacity as usize,
            });
        }
        self.body_count = body_count;
        self.write_input(queue);
        Ok(())
    }

    /// Sets the body count of the next steps, whatever it is: one above the capacity makes
    /// steps that are not `valid` (the GPU step's rule for a count it cannot check).
    pub(super) fn set_any_body_count(&mut self, queue: &wgpu::Queue, body_count: u32) {
        self.body_count = body_count;
        self.write_input(queue);
    }

    /// Lowers the steps one invocation may take (see [`GridStage`]'s "What bounds the
    /// work") to `steps`, at most (and 0 for)
    /// [`GRID_BUDGET`](crate::low_level::grid::GRID_BUDGET): for tests and experiments with
    /// hostile scenes, which then see the unfinished flag without a pile of 60,000 bodies.
    pub fn set_budget(&mut self, queue: &wgpu::Queue, steps: u32) {
        self.budget = steps;
        self.write_input(queue);
    }

    /// The budget [`GridBuffers::set_budget`] set (0: the full one).
    pub(super) fn budget_set(&self) -> u32 {
        self.budget
    }

    /// The steps a walk takes before it is saved for a resume: the budget set, at most
    /// [`GRID_BUDGET`](crate::low_level::grid::GRID_BUDGET) (0 for it).
    #[must_use]
    pub(crate) fn walk_budget(&self) -> u32 {
        if self.budget == 0 {
            GRID_BUDGET
        } else {
            self.budget.min(GRID_BUDGET)
        }
    }

    /// Sets how many times the steps recorded next resume each chain's walks past their
    /// budget (0: none, and such a walk makes the step unfinished), at most
    /// [`GRID_MAX_RESUME_PASSES`](crate::low_level::grid::GRID_MAX_RESUME_PASSES) (more is
    /// taken as that: each resume is a dispatch recorded every step). Each resume is one
    /// dispatch of one invocation a saved walk; a walk takes at most `(passes + 1)` budgets.
    pub fn set_resume_passes(&mut self, passes: u32) {
        self.resume_passes = passes.min(GRID_MAX_RESUME_PASSES);
    }

    /// The resumes recorded after each chain of walks.
    #[must_use]
    pub(crate) fn resume_passes(&self) -> u32 {
        self.resume_passes
    }

    /// The walks past their budget each chain may save.
    #[must_use]
    pub(crate) fn saved_capacity(&self) -> u32 {
        self.saved_capacity
    }

    /// Sets the options of the next steps.
    pub(crate) fn set_options(&mut self, queue: &wgpu::Queue, options: SweepOptions) {
        self.options = options;
        self.write_input(queue);
    }

    /// Each body's earliest contact with another body: one
    /// [`EarliestRecord`](crate::low_level::layout::EarliestRecord) a body (usage `STORAGE |
    /// COPY_SRC`).
    #[must_use]
    pub fn earliest(&self) -> &wgpu::Buffer {
        &self.earliest
    }

    /// The step's [`GridCounts`] (usage `STORAGE | COPY_SRC`).
    #[must_use]
    pub fn counts(&self) -> &wgpu::Buffer {
        &self.counts
    }

    /// The step's counts as the GPU step reports them ([`StepCounts`], usage `STORAGE |
    /// COPY_SRC`): `candidates` and `contacts` the gather's pairs and hits, each pair once;
    /// `unfinished_queries` the budget's flag; nothing overflows.
    #[must_use]
    pub fn step_counts(&self) -> &wgpu::Buffer {
        &self.step_counts
    }

    /// The bodies the buffers are bound to (the caller's).
    #[must_use]
    pub fn bodies(&self) -> &wgpu::Buffer {
        &self.bodies
    }

    /// Bodies the body buffer holds.
    #[must_use]
    pub(crate) fn body_capacity(&self) -> u64 {
        self.body_capacity
    }

    /// The body count set by [`GridBuffers::set_body_count`].
    #[must_use]
    pub fn body_count(&self) -> u32 {
        self.body_count
    }

    /// The options of the next steps.
    #[must_use]
    pub(crate) fn options(&self) -> SweepOptions {
        self.options
    }

    /// The step's parameters as `frame` made them (`StepParams`, `UNIFORM`).
    pub(super) fn step_params(&self) -> &wgpu::Buffer {
        &self.step
    }

    /// The per-body passes' indirect dispatch; its `pair_count` is the step's body count.
    pub(super) fn body_dispatch(&self) -> &wgpu::Buffer {
        &self.body_dispatch
    }

    /// Hits the counted gather lists (0 for the plain gather).
    #[must_use]
    pub fn contact_capacity(&self) -> u64 {
        self.contacts
    }

    /// The listed hits' pairs (`[u32; 2]`, the lower index first), their sweeps
    /// (`ImpactRecord`s) and their dispatch (`SweepDispatch`, `INDIRECT`): the candidates of
    /// [`ContactStage`](super::contacts::ContactStage).
    pub(super) fn hits(&self) -> [&wgpu::Buffer; 3] {
        [&self.hit_pairs, &self.hit_impacts, &self.hit_dispatch]
    }

    /// The resumes' dispatch (`SweepDispatch`, `INDIRECT`).
    pub(super) fn resume_dispatch(&self) -> &wgpu::Buffer {
        &self.resume_dispatch
    }

    /// The sort's count buffer (the body count).
    pub(super) fn sort_count(&self) -> &wgpu::Buffer {
        &self.sort_count
    }

    /// The grid's parameters as the last step made them ([`GridParams`], `COPY_SRC`).
    #[must_use]
    pub fn grid_params(&self) -> &wgpu::Buffer {
        &self.grid_out
    }

    /// Bytes of device memory these buffers hold (not the caller's bodies, not lampshade's
    /// workspace).
    #[must_use]
    pub fn device_memory_bytes(&self) -> u64 {
        self.all.iter().map(wgpu::Buffer::size).sum()
    }
}
