//! The sweep stage: `shaders/sweep.wgsl` recorded into the caller's command encoder, on
//! buffers the caller keeps. Its CPU twin is [`crate::low_level::sweep`](crate::low_level::sweep);
//! [`SweepPipeline`](super::SweepPipeline) is the blocking convenience built on it.

use super::buffers::{ErrorScopes, create_buffer};
use super::buffers::{check_binding, largest_binding};
use super::kernel::{Access, Bindings, Kernel, Shader, Workgroups};
use crate::answers::TimeOfImpact;
use crate::error::{Counted, Error};
use crate::layout::{BodyRecord, ImpactRecord, SweepDispatch, SweepParams, bytes_of};
use crate::options::SweepOptions;

/// The WGSL source of the sweep stage: `shaders/shared.wgsl` followed by `shaders/sweep.wgsl`.
pub const SWEEP_WGSL: &str = concat!(
    include_str!("../../shaders/shared.wgsl"),
    include_str!("../../shaders/sweep.wgsl")
);

// sweep.wgsl's bindings.
const BODIES: u32 = 0;
const PAIRS: u32 = 1;
const IMPACTS: u32 = 2;
const PARAMS: u32 = 3;
const DISPATCH: u32 = 4;
const DISPATCH_OUT: u32 = 5;
const TIMES: u32 = 6;

use Access::{Read, Uniform, Write};
const MAIN: Bindings = &[
    (BODIES, Read),
    (PAIRS, Read),
    (IMPACTS, Write),
    (PARAMS, Uniform),
    (DISPATCH, Read),
];
const TIMES_MAIN: Bindings = &[
    (BODIES, Read),
    (PAIRS, Read),
    (TIMES, Write),
    (PARAMS, Uniform),
    (DISPATCH, Read),
];
const PREPARE_INDIRECT: Bindings = &[(PARAMS, Uniform), (DISPATCH_OUT, Write)];

/// sweep.wgsl's entry points as the stage builds them.
pub(super) const SWEEP_SHADER: Shader = Shader {
    file: "sweep.wgsl",
    source: SWEEP_WGSL,
    entry_points: &[
        ("main", MAIN),
        ("times_main", TIMES_MAIN),
        ("prepare_indirect", PREPARE_INDIRECT),
    ],
};

/// The swept test of every candidate pair, one invocation per pair, as a stage that records
/// into the caller's [`wgpu::CommandEncoder`] (in the manner of `wgpu_sort`): the caller
/// submits, so the sweep chains with the caller's own passes (moving the bodies, a broad
/// phase, a reduction) in one submission, and nothing is read back unless the caller copies
/// it. Every pair given is swept: the caller chose them, and the bodies' collision groups
/// (their records' `groups` word) are not read.
///
/// Used by: `docs/guide.md` ("On your own device: the stage API"), `examples/stage_outputs.rs`.
///
/// # Buffers
/// The stage reads bodies and pairs and writes one output a pair in the layout of
/// [`crate::low_level::layout`]: [`BodyRecord`] (32 bytes a body), `[u32; 2]` (8 bytes a pair; both
/// indices must name bodies of the buffer: the stage does not check them, and the GPU's
/// bounds-checked access makes a pair past the bodies an unspecified answer, never a fault)
/// and, as the buffers' [`SweepOutput`] says, [`ImpactRecord`]s (32 bytes a pair: time,
/// point, normal, status) or [`TimeOfImpact`]s (4 bytes a pair: all that the step's
/// earliest impact needs). Either the stage creates them for a capacity
/// ([`SweepStage::create_buffers`], [`SweepStage::create_time_buffers`]) or the caller hands
/// over its own ([`SweepStage::bind_buffers`], [`SweepStage::bind_time_buffers`]); either way
/// [`SweepBuffers`] keeps them with the stage's small uniform and dispatch buffers and the
/// bind groups.
///
/// # Example
/// ```no_run
/// use sweepcast::gpu::GpuContext;
/// use sweepcast::low_level::SweepStage;
/// use sweepcast::low_level::layout::BodyRecord;
/// use sweepcast::{glam::Vec3, MovingSphere, SweepOptions};
///
/// let context = GpuContext::new_blocking()?;
/// let (device, queue) = (context.device(), context.queue());
/// let stage = SweepStage::new(device)?;
/// let buffers = stage.create_buffers(device, 2, 1)?;
/// let bodies = [
///     MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(10.0, 0.0, 0.0)),
///     MovingSphere::new(Vec3::new(5.0, 0.0, 0.0), 1.0, Vec3::ZERO),
/// ];
/// let records: Vec<BodyRecord> = bodies.iter().map(|&b| b.into()).collect();
/// queue.write_buffer(buffers.bodies(), 0, bytemuck::cast_slice(&records));
/// queue.write_buffer(buffers.pairs(), 0, bytemuck::cast_slice(&[[0u32, 1]]));
/// let mut encoder = device.create_command_encoder(&Default::default());
/// stage.record(queue, &mut encoder, &buffers, 1, SweepOptions::default())?;
/// // ... the caller's own passes, and a copy of buffers.output() to read back ...
/// queue.submit([encoder.finish()]);
/// # Ok::<(), sweepcast::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SweepStage {
    main: Kernel,
    times_main: Kernel,
    prepare_indirect: Kernel,
    /// The largest storage binding of the device, in bytes.
    largest_binding: u64,
}

/// What a [`SweepStage`] writes for each pair: the buffers' choice, made when they are
/// created or bound.
///
/// Used by: `examples/stage_outputs.rs`, `examples/headless.rs` (the kernel alone, each output).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SweepOutput {
    /// An [`ImpactRecord`] a pair, 32 bytes: time, contact point, normal, status (the
    /// shader's `main`).
    Impacts,
    /// A [`TimeOfImpact`] a pair, 4 bytes: the time and whether it is a contact, an overlap
    /// or a miss (the shader's `times_main`).
    Times,
}

impl SweepOutput {
    /// Bytes a pair of this output.
    #[must_use]
    pub const fn size(self) -> u64 {
        match self {
            Self::Impacts => bytes_of::<ImpactRecord>(1),
            Self::Times => bytes_of::<TimeOfImpact>(1),
        }
    }

    /// Its buffer's name in [`Error::InvalidBuffer`].
    fn name(self) -> &'static str {
        match self {
            Self::Impacts => "impacts",
            Self::Times => "times",
        }
    }

    /// The label of its device objects.
    pub(super) fn label(self) -> &'static str {
        match self {
            Self::Impacts => "sweep impacts",
            Self::Times => "sweep times",
        }
    }
}

/// The buffers of one [`SweepStage`]: bodies, pairs and the output (the stage's or the
/// caller's), the stage's uniform and dispatch buffers, and the bind groups over them.
/// Cheap to clone (wgpu handles are reference counted).
///
/// Used by: `docs/guide.md` ("On your own device: the stage API"), `examples/stage_outputs.rs`.
#[derive(Debug, Clone)]
pub struct SweepBuffers {
    bodies: wgpu::Buffer,
    pairs: wgpu::Buffer,
    output: wgpu::Buffer,
    output_kind: SweepOutput,
    params: wgpu::Buffer,
    dispatch: wgpu::Buffer,
    sweep_group: wgpu::BindGroup,
    prepare_group: wgpu::BindGroup,
    body_capacity: u64,
    pair_capacity: u64,
}

impl SweepStage {
    /// Compiles the stage's shader on `device` (any device: the caller's own, or a
    /// [`GpuContext`](super::GpuContext)'s).
    ///
    /// # Errors
    /// [`Error::Device`] when the device rejects the shader or a pipeline (caught in error
    /// scopes around this call only).
    pub fn new(device: &wgpu::Device) -> Result<Self, Error> {
        let scopes = ErrorScopes::push(device);
        let stage = Self::create(device);
        pollster::block_on(scopes.finish())?;
        Ok(stage)
    }

    fn create(device: &wgpu::Device) -> Self {
        let module = SWEEP_SHADER.module(device);
        let kernel = |name| SWEEP_SHADER.kernel(device, &module, name);
        Self {
            main: kernel("main"),
            times_main: kernel("times_main"),
            prepare_indirect: kernel("prepare_indirect"),
            largest_binding: largest_binding(device),
        }
    }

    /// The most bodies one buffer of this device can bind.
    #[must_use]
    pub fn max_bodies(&self) -> u64 {
        self.largest_binding / bytes_of::<BodyRecord>(1)
    }

    /// The most pairs one buffer of impact records of this device can bind.
    #[must_use]
    pub fn max_pairs(&self) -> u64 {
        self.max_pairs_of(SweepOutput::Impacts)
    }

    /// The most pairs whose pairs and `output` one binding each of this device holds.
    #[must_use]
    pub fn max_pairs_of(&self, output: SweepOutput) -> u64 {
        self.largest_binding / output.size().max(bytes_of::<[u32; 2]>(1))
    }

    /// Creates buffers for `body_capacity` bodies and `pair_capacity` pairs (at least one
    /// each) and binds them, with impact records as the output. Usages: bodies and pairs
    /// `STORAGE | COPY_DST` (write them with `Queue::write_buffer` or a copy, or from the
    /// caller's own passes), impact records `STORAGE | COPY_SRC` (copy them to a `MAP_READ`
    /// buffer to read them back).
    ///
    /// # Errors
    /// [`Error::TooManyBodies`] or [`Error::CapacityExceeded`] beyond what one binding of
    /// this device holds ([`SweepStage::max_bodies`], [`SweepStage::max_pairs`]);
    /// [`Error::OutOfDeviceMemory`] when the device cannot back them, [`Error::Device`] when
    /// it fails to create them otherwise.
    pub fn create_buffers(
        &self,
        device: &wgpu::Device,
        body_capacity: u64,
        pair_capacity: u64,
    ) -> Result<SweepBuffers, Error> {
        self.create_output_buffers(device, body_capacity, pair_capacity, SweepOutput::Impacts)
    }

    /// [`SweepStage::create_buffers`] with [`TimeOfImpact`]s as the output, 4 bytes a pair
    /// instead of 32.
    ///
    /// # Errors
    /// As [`SweepStage::create_buffers`], with the limit
    /// [`SweepStage::max_pairs_of`]`(SweepOutput::Times)`.
    pub fn create_time_buffers(
        &self,
        device: &wgpu::Device,
        body_capacity: u64,
        pair_capacity: u64,
    ) -> Result<SweepBuffers, Error> {
        self.create_output_buffers(device, body_capacity, pair_capacity, SweepOutput::Times)
    }

    fn create_output_buffers(
        &self,
        device: &wgpu::Device,
        body_capacity: u64,
        pair_capacity: u64,
        output: SweepOutput,
    ) -> Result<SweepBuffers, Error> {
        if body_capacity > self.max_bodies() {
            return Err(Error::TooManyBodies {
                count: body_capacity as usize,
                max: self.max_bodies() as usize,
            });
        }
        if pair_capacity > self.max_pairs_of(output) {
            return Err(Error::CapacityExceeded {
                what: Counted::Pairs,
                at_least: pair_capacity as usize,
                capacity: self.max_pairs_of(output) as usize,
            });
        }
        use wgpu::BufferUsages as Usage;
        let scopes = ErrorScopes::push(device);
        let buffer = |label, size, usage| create_buffer(device, label, usage, size);
        let bodies = buffer(
            "sweep bodies",
            bytes_of::<BodyRecord>(body_capacity.max(1)),
            Usage::STORAGE | Usage::COPY_DST,
        );
        let pairs = buffer(
            "sweep pairs",
            bytes_of::<[u32; 2]>(pair_capacity.max(1)),
            Usage::STORAGE | Usage::COPY_DST,
        );
        let output_buffer = buffer(
            output.label(),
            pair_capacity.max(1) * output.size(),
            Usage::STORAGE | Usage::COPY_SRC,
        );
        let buffers = self.bind(device, bodies, pairs, output_buffer, output);
        pollster::block_on(scopes.finish())?;
        Ok(buffers)
    }

    /// Binds the caller's own buffers: bodies as [`BodyRecord`]s, pairs as `[u32; 2]`,
    /// impact records as [`ImpactRecord`]s, each with usage `STORAGE` (and whatever else the
    /// caller needs: `COPY_DST` to upload, `COPY_SRC` to read back). The capacity is what
    /// they hold: `bodies.size() / 32` bodies and the smaller of `pairs.size() / 8` and
    /// `impacts.size() / 32` pairs.
    ///
    /// # Errors
    /// [`Error::InvalidBuffer`] when a buffer lacks `STORAGE`, is not a whole number (at
    /// least one) of its elements, or is larger than one binding of this device;
    /// [`Error::Device`] when the device rejects the bind groups.
    pub fn bind_buffers(
        &self,
        device: &wgpu::Device,
        bodies: &wgpu::Buffer,
        pairs: &wgpu::Buffer,
        impacts: &wgpu::Buffer,
    ) -> Result<SweepBuffers, Error> {
        self.bind_output_buffers(device, bodies, pairs, impacts, SweepOutput::Impacts)
    }

    /// [`SweepStage::bind_buffers`] with [`TimeOfImpact`]s as the output: `times` holds 4
    /// bytes a pair, and the capacity is the smaller of `pairs.size() / 8` and
    /// `times.size() / 4` pairs.
    ///
    /// # Errors
    /// As [`SweepStage::bind_buffers`].
    pub fn bind_time_buffers(
        &self,
        device: &wgpu::Device,
        bodies: &wgpu::Buffer,
        pairs: &wgpu::Buffer,
        times: &wgpu::Buffer,
    ) -> Result<SweepBuffers, Error> {
        self.bind_output_buffers(device, bodies, pairs, times, SweepOutput::Times)
    }

    /// [`SweepStage::bind_buffers`] or [`SweepStage::bind_time_buffers`], as `output` says.
    pub(super) fn bind_output_buffers(
        &self,
        device: &wgpu::Device,
        bodies: &wgpu::Buffer,
        pairs: &wgpu::Buffer,
        output_buffer: &wgpu::Buffer,
        output: SweepOutput,
    ) -> Result<SweepBuffers, Error> {
        for (name, buffer, element_size) in [
            ("bodies", bodies, bytes_of::<BodyRecord>(1)),
            ("pairs", pairs, bytes_of::<[u32; 2]>(1)),
            (output.name(), output_buffer, output.size()),
        ] {
            check_binding(name, buffer, element_size, self.largest_binding)?;
        }
        let scopes = ErrorScopes::push(device);
        let buffers = self.bind(
            device,
            bodies.clone(),
            pairs.clone(),
            output_buffer.clone(),
            output,
        );
        pollster::block_on(scopes.finish())?;
        Ok(buffers)
    }

    fn bind(
        &self,
        device: &wgpu::Device,
        bodies: wgpu::Buffer,
        pairs: wgpu::Buffer,
        output_buffer: wgpu::Buffer,
        output: SweepOutput,
    ) -> SweepBuffers {
        use wgpu::BufferUsages as Usage;
        let small = |label, size, usage| create_buffer(device, label, usage, size);
        let params = small(
            "sweep params",
            bytes_of::<SweepParams>(1),
            Usage::UNIFORM | Usage::COPY_DST,
        );
        let dispatch = small(
            "sweep dispatch",
            bytes_of::<SweepDispatch>(1),
            Usage::STORAGE | Usage::INDIRECT | Usage::COPY_DST | Usage::COPY_SRC,
        );
        let group = |kernel: &Kernel| {
            kernel.bind(device, |binding| match binding {
                BODIES => &bodies,
                PAIRS => &pairs,
                IMPACTS | TIMES => &output_buffer,
                PARAMS => &params,
                DISPATCH | DISPATCH_OUT => &dispatch,
                _ => unreachable!("no binding {binding} in sweep.wgsl"),
            })
        };
        let sweep_group = group(self.kernel(output));
        let prepare_group = group(&self.prepare_indirect);
        SweepBuffers {
            body_capacity: bodies.size() / bytes_of::<BodyRecord>(1),
            pair_capacity: (pairs.size() / bytes_of::<[u32; 2]>(1))
                .min(output_buffer.size() / output.size()),
            bodies,
            pairs,
            output: output_buffer,
            output_kind: output,
            params,
            dispatch,
            sweep_group,
            prepare_group,
        }
    }

    /// The entry point that writes `output`.
    fn kernel(&self, output: SweepOutput) -> &Kernel {
        match output {
            SweepOutput::Impacts => &self.main,
            SweepOutput::Times => &self.times_main,
        }
    }

    /// Records the sweep of the first `pair_count` pairs of `buffers` into `encoder`, with
    /// `options`, writing the buffers' [`SweepOutput`]. Record 0 to sweep nothing.
    ///
    /// The count and the options reach the device through `queue.write_buffer` into the
    /// buffers' own small uniform and dispatch buffers, which takes effect at the next
    /// submission, before its command buffers run: record at most one sweep per
    /// [`SweepBuffers`] per submission (use another `SweepBuffers`, or
    /// [`SweepStage::record_indirect`], for more).
    ///
    /// # Errors
    /// [`Error::CapacityExceeded`] when `pair_count` exceeds the buffers' capacity. Device
    /// errors of the recorded work surface where the caller finishes the encoder and submits.
    pub fn record(
        &self,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &SweepBuffers,
        pair_count: u32,
        options: SweepOptions,
    ) -> Result<(), Error> {
        if u64::from(pair_count) > buffers.pair_capacity {
            return Err(Error::CapacityExceeded {
                what: Counted::Pairs,
                at_least: pair_count as usize,
                capacity: buffers.pair_capacity as usize,
            });
        }
        let dispatch = SweepDispatch::new(pair_count);
        buffers.write_params(queue, &options);
        queue.write_buffer(&buffers.dispatch, 0, bytemuck::bytes_of(&dispatch));
        let workgroups = Workgroups::Direct(dispatch.workgroups_x, dispatch.workgroups_y);
        self.kernel(buffers.output_kind)
            .record(encoder, &buffers.sweep_group, workgroups);
        Ok(())
    }

    /// Records the sweep of as many pairs as the `u32` at `count_offset` of `count` says, read
    /// on the device when the work runs: a broad phase that writes its pair count on the
    /// device feeds the sweep without a read back. `count` needs usage `COPY_SRC`; the offset
    /// must be a multiple of 4.
    ///
    /// A count above the buffers' capacity sweeps only the capacity and raises the
    /// `overflowed` flag of the buffers' [`SweepDispatch`] (see [`SweepBuffers::dispatch`]),
    /// which a caller that cannot bound its count reads back to grow the buffers and run
    /// again. The options reach the device as in [`SweepStage::record`].
    ///
    /// # Errors
    /// [`Error::InvalidBuffer`] when `count` lacks `COPY_SRC` or the offset is not a multiple
    /// of 4 or past its end.
    pub fn record_indirect(
        &self,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &SweepBuffers,
        count: &wgpu::Buffer,
        count_offset: u64,
        options: SweepOptions,
    ) -> Result<(), Error> {
        let reason = if !count.usage().contains(wgpu::BufferUsages::COPY_SRC) {
            Some(format!("usage {:?} lacks COPY_SRC", count.usage()))
        } else if !count_offset.is_multiple_of(4)
            || count_offset
                .checked_add(4)
                .is_none_or(|end| end > count.size())
        {
            Some(format!(
                "offset {count_offset} is not that of a u32 within its {} bytes (a multiple of 4, at most the size less 4)",
                count.size()
            ))
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(Error::InvalidBuffer {
                name: "count",
                reason,
            });
        }
        buffers.write_params(queue, &options);
        self.record_counted(encoder, buffers, count, count_offset);
        Ok(())
    }

    /// [`SweepStage::record_indirect`] on buffers whose options were written before (by
    /// [`SweepBuffers::write_params`]), with a count checked by the caller: records no queue
    /// write, so that several steps recorded in one submission each sweep their own count.
    pub(super) fn record_counted(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &SweepBuffers,
        count: &wgpu::Buffer,
        count_offset: u64,
    ) {
        let requested = std::mem::offset_of!(SweepDispatch, requested_pairs) as u64;
        encoder.copy_buffer_to_buffer(count, count_offset, &buffers.dispatch, requested, 4);
        self.prepare_indirect
            .record(encoder, &buffers.prepare_group, Workgroups::Direct(1, 1));
        self.kernel(buffers.output_kind).record(
            encoder,
            &buffers.sweep_group,
            Workgroups::Indirect(&buffers.dispatch),
        );
    }
}

impl SweepBuffers {
    pub(super) fn write_params(&self, queue: &wgpu::Queue, options: &SweepOptions) {
        let params = SweepParams::new(options, self.pair_capacity as u32);
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
    }

    /// The bodies, as [`BodyRecord`]s.
    #[must_use]
    pub fn bodies(&self) -> &wgpu::Buffer {
        &self.bodies
    }

    /// The candidate pairs, as `[u32; 2]`.
    #[must_use]
    pub fn pairs(&self) -> &wgpu::Buffer {
        &self.pairs
    }

    /// What the sweep writes, one per pair: [`ImpactRecord`]s or [`TimeOfImpact`]s, as
    /// [`SweepBuffers::output_kind`] says.
    #[must_use]
    pub fn output(&self) -> &wgpu::Buffer {
        &self.output
    }

    /// Which output these buffers hold.
    #[must_use]
    pub fn output_kind(&self) -> SweepOutput {
        self.output_kind
    }

    /// The [`SweepDispatch`] of the last recorded sweep (32 bytes, usage `COPY_SRC`): copy it
    /// out to read how many pairs an indirect sweep ran and whether its count overflowed.
    #[must_use]
    pub fn dispatch(&self) -> &wgpu::Buffer {
        &self.dispatch
    }

    /// Bodies the body buffer holds.
    #[must_use]
    pub fn body_capacity(&self) -> u64 {
        self.body_capacity
    }

    /// Pairs the pair and output buffers hold.
    #[must_use]
    pub fn pair_capacity(&self) -> u64 {
        self.pair_capacity
    }

    /// Bytes of device memory of these buffers.
    #[must_use]
    pub(crate) fn device_memory_bytes(&self) -> u64 {
        [
            &self.bodies,
            &self.pairs,
            &self.output,
            &self.params,
            &self.dispatch,
        ]
        .iter()
        .map(|buffer| buffer.size())
        .sum()
    }
}
