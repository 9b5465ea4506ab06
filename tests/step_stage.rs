//! The step stage (`low_level::StepStage`) as a caller uses it: on a device the caller made with
//! `StepStage::required_limits`, from the caller's body buffer (usage `STORAGE` alone),
//! recorded into the caller's encoder beside the caller's own passes, one submission a frame,
//! nothing read by the host between.
//!
//! * `a_consumer_pass_reads_the_step_in_the_same_submission`: every scene in 2D and 3D, with
//!   and without walls, with the scene's options and with `stop_at_penetration: false`; each
//!   body's earliest record is the reference's ([`Reference`]) and the caller's pass after the
//!   step copied exactly what the records say.
//! * `two_frames_in_one_submission_each_give_their_own_answer`: step, the caller's pass that
//!   moves the bodies, step again: each frame's answer is that of its own bodies.
//! * `the_body_count_comes_from_the_callers_buffer`: counts below the capacity from two
//!   buffers in one submission; a record without one then counts the host's count; a count
//!   above the capacity gives an invalid step that the consumer skips.
//! * `an_overflow_is_invalid_until_grown_then_whole`: the least capacities on 5,000 bodies:
//!   `valid` is 0 and the consumer writes nothing; grown and recorded again, the whole
//!   answer, earliest records and ordered contacts alike.
//! * `a_device_below_the_limits_is_a_typed_error`, `a_device_with_the_default_limits_runs_the_step`.
//! * `the_same_step_gives_the_same_bytes`: twice in a submission, again in another, and on
//!   fresh buffers.
//! * `bad_buffers_are_typed_errors_and_leave_the_encoder_usable`.

mod common;

use std::time::Instant;

use sweepcast::EarliestImpact;
use sweepcast::glam::Vec3;
use sweepcast::gpu::{ContactPipeline, GpuContext, StepCapacities};
use sweepcast::low_level::SHARED_WGSL;
use sweepcast::low_level::grid::GRID_MAX_RESUME_PASSES;
use sweepcast::low_level::layout::{BodyRecord, ContactRecord, EarliestRecord, StepCounts};
use sweepcast::low_level::{StepBuffers, StepStage};
use sweepcast::{Counted, Error, MovingSphere, Partner, SweepOptions, Wall, cpu};
use testkit::Scene;
use wgpu::BufferUsages as Usage;
use wgpu::util::DeviceExt;

const COUNTS_SIZE: u64 = size_of::<StepCounts>() as u64;
const EARLIEST_SIZE: u64 = size_of::<EarliestRecord>() as u64;
/// Bytes the consumer pass writes a body: the words of its earliest record it read.
const CONSUMED_SIZE: u64 = size_of::<[u32; 4]>() as u64;
/// What the consumer's output holds before it runs: no record has these words (a time that
/// is a negative float, an index, a kind and a status past any valid one).
const SENTINEL: u32 = 0xdead_beef;
/// Capacities that hold every step of these tests at once (the defaults' 16,384 candidates
/// overflow on 3,000 bodies of the fast or 100x-radii scenes, rightly invalid steps), so that
/// a frame recorded beside others in one submission is valid without growing.
const ROOMY: StepCapacities = StepCapacities {
    contacts: 1 << 16,
    saved_queries: 1024,
    resume_passes: 2,
};

/// The caller's pass after the step: a step whose outputs are partial (`valid` 0) is not
/// applied; otherwise each body's earliest record is copied out as four words.
const CONSUME_WGSL: &str = r"
@group(0) @binding(0) var<storage, read> counts: StepCounts;
@group(0) @binding(1) var<storage, read> earliest: array<EarliestRecord>;
@group(0) @binding(2) var<storage, read_write> consumed: array<vec4<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if counts.valid == 0u || id.x >= counts.bodies || id.x >= arrayLength(&consumed) {
        return;
    }
    let record = earliest[id.x];
    consumed[id.x] = vec4<u32>(
        bitcast<u32>(record.time_of_impact), record.other, record.kind, record.status);
}
";

/// The caller's pass between two frames: every body to where its step ends.
const ADVANCE_WGSL: &str = r"
@group(0) @binding(0) var<storage, read_write> bodies: array<BodyRecord>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= arrayLength(&bodies) {
        return;
    }
    bodies[id.x].center = bodies[id.x].center + bodies[id.x].displacement;
}
";

/// The adapter the environment names (`WGPU_BACKEND`, `WGPU_ADAPTER_NAME`,
/// `WGPU_POWER_PREF`) on an instance of the test's own, or `None` (loudly; a failure under
/// `SWEEPCAST_REQUIRE_GPU=1`).
fn adapter(test: &str) -> Option<wgpu::Adapter> {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    match pollster::block_on(wgpu::util::initialize_adapter_from_env_or_default(
        &instance, None,
    )) {
        Ok(adapter) => {
            let info = adapter.get_info();
            eprintln!("{test}: running on {} ({:?})", info.name, info.backend);
            Some(adapter)
        }
        Err(error) => {
            common::skip_without_gpu(test, &error);
            None
        }
    }
}

/// A device of the caller's on `adapter` with `limits`.
fn request(
    adapter: &wgpu::Adapter,
    limits: wgpu::Limits,
) -> Result<(wgpu::Device, wgpu::Queue), wgpu::RequestDeviceError> {
    pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("the caller's device"),
        required_limits: limits,
        ..Default::default()
    }))
}

/// A compute pass of the caller's own: [`SHARED_WGSL`] then `source`, entry point `main`,
/// its storage buffers bound in order from binding 0.
struct CallerPass(wgpu::ComputePipeline);

impl CallerPass {
    fn new(device: &wgpu::Device, label: &str, source: &str) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(format!("{SHARED_WGSL}\n{source}").into()),
        });
        Self(
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            }),
        )
    }

    fn record(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &[&wgpu::Buffer],
        invocations: u64,
    ) {
        let entries: Vec<wgpu::BindGroupEntry> = (0..)
            .zip(buffers)
            .map(|(binding, buffer)| wgpu::BindGroupEntry {
                binding,
                resource: buffer.as_entire_binding(),
            })
            .collect();
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &self.0.get_bind_group_layout(0),
            entries: &entries,
        });
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&self.0);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(invocations.div_ceil(64) as u32, 1, 1);
    }
}

/// A device the test made itself, with its own passes around the step.
struct Caller {
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    consume: CallerPass,
    advance: CallerPass,
}

impl Caller {
    /// A device with [`StepStage::required_limits`] on the environment's adapter, or `None`
    /// (loudly) without one.
    fn new(test: &str) -> Option<Self> {
        let adapter = adapter(test)?;
        Some(
            Self::on(adapter, StepStage::required_limits())
                .expect("the adapter offers the step's required limits"),
        )
    }

    /// [`Caller::new`], the step's stage on its device and the reference of its answers.
    fn with_step(test: &str) -> Option<(Self, StepStage, Reference)> {
        let caller = Self::new(test)?;
        let (stage, reference) = (caller.stage(), Reference::new(&caller));
        Some((caller, stage, reference))
    }

    fn on(adapter: wgpu::Adapter, limits: wgpu::Limits) -> Result<Self, wgpu::RequestDeviceError> {
        let (device, queue) = request(&adapter, limits)?;
        Ok(Self {
            consume: CallerPass::new(&device, "consume the step", CONSUME_WGSL),
            advance: CallerPass::new(&device, "advance the bodies", ADVANCE_WGSL),
            adapter,
            device,
            queue,
        })
    }

    /// Whether the adapter's sweep rounds as the CPU twin does (lavapipe), so that the step
    /// equals the CPU's to the bit.
    fn exact(&self) -> bool {
        common::lavapipe(&self.adapter.get_info())
    }

    /// The caller's device wrapped, for the blocking pipeline on it.
    fn context(&self) -> GpuContext {
        GpuContext::from_device(
            self.adapter.clone(),
            self.device.clone(),
            self.queue.clone(),
        )
        .expect("a compute-capable adapter")
    }

    /// The step's stage, its sorter chosen for the adapter.
    fn stage(&self) -> StepStage {
        StepStage::for_adapter(&self.device, &self.adapter.get_info()).expect("the step compiles")
    }

    /// The caller's body buffer: `bodies`, then zeros up to `capacity`; usage `STORAGE`
    /// alone, filled while mapped at creation.
    fn bodies(&self, bodies: &[MovingSphere], capacity: usize) -> wgpu::Buffer {
        let mut records: Vec<BodyRecord> = bodies.iter().map(|&body| body.into()).collect();
        records.resize(capacity, BodyRecord::default());
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("the caller's bodies"),
            size: (records.len() * size_of::<BodyRecord>()) as u64,
            usage: Usage::STORAGE,
            mapped_at_creation: true,
        });
        buffer
            .get_mapped_range_mut(..)
            .expect("mapped at creation")
            .copy_from_slice(bytemuck::cast_slice(&records));
        buffer.unmap();
        buffer
    }

    fn words(&self, label: &str, words: &[u32], usage: Usage) -> wgpu::Buffer {
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::cast_slice(words),
                usage,
            })
    }

    /// The step's buffers over `bodies` at `capacities`, with `walls`.
    fn step_buffers(
        &self,
        stage: &StepStage,
        bodies: &wgpu::Buffer,
        options: &SweepOptions,
        walls: &[Wall],
        capacities: StepCapacities,
        ordered: bool,
    ) -> StepBuffers {
        let mut buffers = stage
            .create_buffers(
                &self.device,
                &self.queue,
                bodies,
                *options,
                capacities,
                ordered,
            )
            .expect("the step's buffers");
        stage
            .set_walls(&self.device, &self.queue, &mut buffers, walls)
            .expect("valid walls");
        buffers
    }

    fn encoder(&self) -> wgpu::CommandEncoder {
        self.device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("the caller's frame"),
            })
    }

    /// Records one frame into `encoder`: the step (its body count from `count` where
    /// given), the consumer pass into an output of [`SENTINEL`]s, and copies of both to a
    /// readback.
    fn record_frame(
        &self,
        stage: &StepStage,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &mut StepBuffers,
        count: Option<(&wgpu::Buffer, u64)>,
    ) -> Readback {
        stage
            .record(encoder, buffers, count)
            .expect("the step records");
        let capacity = buffers.body_capacity();
        let consumed = self.words(
            "consumed",
            &vec![SENTINEL; 4 * capacity as usize],
            Usage::STORAGE | Usage::COPY_SRC,
        );
        self.consume.record(
            &self.device,
            encoder,
            &[buffers.counts(), buffers.earliest(), &consumed],
            capacity,
        );
        let readback = Readback::new(&self.device, buffers);
        readback.copy(encoder, buffers, &consumed);
        readback
    }

    /// Records the pass that moves every body of `bodies` to where its step ends.
    fn record_advance(&self, encoder: &mut wgpu::CommandEncoder, bodies: &wgpu::Buffer) {
        let capacity = bodies.size() / size_of::<BodyRecord>() as u64;
        self.advance
            .record(&self.device, encoder, &[bodies], capacity);
    }

    fn submit(&self, encoder: wgpu::CommandEncoder) {
        self.queue.submit([encoder.finish()]);
    }

    /// The frame `readback` holds, after the work submitted so far.
    fn read(&self, readback: &Readback) -> Frame {
        let bytes = common::read_mapped(&self.device, &readback.buffer);
        let capacity = readback.capacity as usize;
        let (counts, rest) = bytes.split_at(COUNTS_SIZE as usize);
        let (earliest, rest) = rest.split_at(capacity * EARLIEST_SIZE as usize);
        let (consumed, ordered) = rest.split_at(capacity * CONSUMED_SIZE as usize);
        Frame {
            counts: bytemuck::pod_read_unaligned(counts),
            earliest: bytemuck::pod_collect_to_vec(earliest),
            consumed: bytemuck::pod_collect_to_vec(consumed),
            ordered: bytemuck::pod_collect_to_vec(ordered),
        }
    }

    /// Runs one frame in a submission of its own and reads it.
    fn run_frame(&self, stage: &StepStage, buffers: &mut StepBuffers) -> Frame {
        let mut encoder = self.encoder();
        let readback = self.record_frame(stage, &mut encoder, buffers, None);
        self.submit(encoder);
        self.read(&readback)
    }
}

/// Where one frame's outputs are copied: the counts, each body's earliest record, the
/// consumer's words, and the ordered contacts (where the buffers have them).
struct Readback {
    buffer: wgpu::Buffer,
    capacity: u64,
}

impl Readback {
    fn new(device: &wgpu::Device, buffers: &StepBuffers) -> Self {
        let capacity = buffers.body_capacity();
        let ordered = buffers.ordered_contacts().map_or(0, wgpu::Buffer::size);
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("the caller's readback"),
            size: COUNTS_SIZE + (EARLIEST_SIZE + CONSUMED_SIZE) * capacity + ordered,
            usage: Usage::MAP_READ | Usage::COPY_DST,
            mapped_at_creation: false,
        });
        Self { buffer, capacity }
    }

    fn copy(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &StepBuffers,
        consumed: &wgpu::Buffer,
    ) {
        let mut at = 0;
        let ordered = buffers.ordered_contacts();
        for from in [buffers.counts(), buffers.earliest(), consumed]
            .into_iter()
            .chain(ordered)
        {
            encoder.copy_buffer_to_buffer(from, 0, &self.buffer, at, from.size());
            at += from.size();
        }
    }
}

/// What one frame wrote, read back.
struct Frame {
    counts: StepCounts,
    /// One a body the buffer holds.
    earliest: Vec<EarliestRecord>,
    consumed: Vec<[u32; 4]>,
    /// The whole buffer: the first `counts.contacts` hold the contacts.
    ordered: Vec<ContactRecord>,
}

impl Frame {
    /// The first `n` bodies' earliest impacts.
    fn impacts(&self, n: usize) -> Vec<Option<EarliestImpact>> {
        self.earliest[..n]
            .iter()
            .map(EarliestRecord::decode)
            .collect()
    }

    /// The ordered contacts, decoded as `ContactPipeline::find` decodes them.
    fn contacts(&self, bodies: &[MovingSphere]) -> Vec<sweepcast::Contact> {
        let record = |body: u32| BodyRecord::from(bodies[body as usize]);
        self.ordered[..self.counts.contacts as usize]
            .iter()
            .map(|contact| {
                let [a, b] = contact.pair;
                sweepcast::Contact {
                    body: a,
                    partner: sweepcast::Partner::Body {
                        index: b,
                        image: contact.image,
                    },
                    impact: contact
                        .impact
                        .to_impact(&record(a), &record(b))
                        .expect("only hits are ordered"),
                }
            })
            .collect()
    }

    /// The bytes that must repeat from step to step: the counts, the first `n` earliest
    /// records and the ordered contacts up to their count.
    fn answer_bytes(&self, n: usize) -> Vec<u8> {
        let mut bytes = bytemuck::bytes_of(&self.counts).to_vec();
        bytes.extend_from_slice(bytemuck::cast_slice(&self.earliest[..n]));
        let contacts = (self.counts.contacts as usize).min(self.ordered.len());
        bytes.extend_from_slice(bytemuck::cast_slice(&self.ordered[..contacts]));
        bytes
    }

    /// The consumer pass wrote each counted body's record where the step was valid, and
    /// nothing anywhere where it was not.
    fn assert_consumed(&self, label: &str) {
        let counted = if self.counts.is_valid() {
            self.counts.bodies as usize
        } else {
            0
        };
        for (body, (words, record)) in self.consumed.iter().zip(&self.earliest).enumerate() {
            let expected = if body < counted {
                [
                    record.time_of_impact.to_bits(),
                    record.other,
                    record.kind,
                    record.status,
                ]
            } else {
                [SENTINEL; 4]
            };
            assert_eq!(
                *words, expected,
                "{label}: the consumer's words of body {body} (step valid: {})",
                self.counts.valid
            );
        }
    }
}

/// What the step on the device must give. Where the adapter's sweep rounds as the CPU twin
/// does (lavapipe on Vulkan), the CPU step's answer, to the bit. Elsewhere (GL: its division
/// and square root are not correctly rounded, see `sweepcast::parity`) the blocking
/// `ContactPipeline`'s on the same device, to the bit: the ordered step's rule against the
/// CPU's is held in `tests/gpu_contacts.rs`; the differences from the CPU are counted here.
struct Reference {
    finder: cpu::ContactFinder,
    pipeline: Option<ContactPipeline>,
}

impl Reference {
    fn new(caller: &Caller) -> Self {
        let pipeline = (!caller.exact())
            .then(|| ContactPipeline::new(&caller.context()).expect("the step compiles"));
        Self {
            finder: cpu::ContactFinder::new(),
            pipeline,
        }
    }

    fn against(&self) -> &'static str {
        if self.pipeline.is_some() {
            "ContactPipeline on the same device"
        } else {
            "the CPU step"
        }
    }

    /// `frame` is valid, counted `bodies` and holds each body's earliest impact as the
    /// reference does; its consumer copied the records.
    fn assert_earliest(
        &mut self,
        label: &str,
        bodies: &[MovingSphere],
        walls: &[Wall],
        options: SweepOptions,
        frame: &Frame,
    ) {
        let counts = frame.counts;
        assert!(counts.is_valid(), "{label}: {counts:?}");
        assert_eq!(counts.bodies as usize, bodies.len(), "{label}: {counts:?}");
        let gpu = frame.impacts(bodies.len());
        let cpu = self
            .finder
            .find_with_walls(bodies, walls, options)
            .expect("valid bodies");
        let (cpu_earliest, cpu_contacts) = (cpu.earliest_impacts(), cpu.contacts().len());
        let cpu_differ = gpu
            .iter()
            .zip(&cpu_earliest)
            .filter(|(a, b)| a != b)
            .count();
        let expected = match &self.pipeline {
            None => {
                // With ordered contacts the step counts each pair that hits once: the CPU
                // step's contacts. Without them it counts nothing.
                if frame.ordered.is_empty() {
                    assert_eq!((counts.candidates, counts.contacts), (0, 0), "{label}");
                } else {
                    assert_eq!(counts.contacts as usize, cpu_contacts, "{label}: contacts");
                }
                cpu_earliest
            }
            Some(pipeline) => pipeline
                .find_earliest(bodies, walls, options)
                .expect("valid bodies"),
        };
        assert_same(label, self.against(), &gpu, &expected);
        frame.assert_consumed(label);
        let met = gpu.iter().flatten().count();
        let walls_first = gpu
            .iter()
            .flatten()
            .filter(|impact| matches!(impact.partner, Partner::Wall { .. }))
            .count();
        println!(
            "{label}: {} bodies, {met} meet something ({walls_first} a wall first), {} candidates, \
             {} contacts: equal to {}; {cpu_differ} differ from the CPU step's",
            bodies.len(),
            counts.candidates,
            counts.contacts,
            self.against(),
        );
        assert!(met > bodies.len() / 20, "{label}: too few contacts to test");
        assert!(
            walls.is_empty() || walls_first > 0,
            "{label}: no wall met first"
        );
    }

    /// `frame`'s ordered contacts are the reference's: all of each contact to the bit
    /// against the pipeline on the same device; against the CPU step, the pair, image, time
    /// and status to the bit and the point and normal within a few ulps (the device's
    /// normalisation is not the CPU's to the bit: `tests/gpu_contacts.rs` holds only the
    /// times, by the parity judge).
    fn assert_contacts(
        &mut self,
        label: &str,
        bodies: &[MovingSphere],
        options: SweepOptions,
        frame: &Frame,
    ) {
        let gpu = frame.contacts(bodies);
        let close =
            |a: Vec3, b: Vec3| (a - b).abs().max_element() <= 1e-6 * a.abs().max_element().max(1.0);
        let (expected, geometry_differ) = match &self.pipeline {
            None => {
                let cpu = self
                    .finder
                    .find(bodies, options)
                    .expect("valid")
                    .contacts()
                    .to_vec();
                let key = |c: &sweepcast::Contact| {
                    (
                        c.pair().unwrap(),
                        c.image(),
                        c.impact.time_of_impact.to_bits(),
                        c.impact.status,
                    )
                };
                assert_same(
                    label,
                    self.against(),
                    &gpu.iter().map(key).collect::<Vec<_>>(),
                    &cpu.iter().map(key).collect::<Vec<_>>(),
                );
                let mut differ = 0;
                for (ours, theirs) in gpu.iter().zip(&cpu) {
                    let (a, b) = (&ours.impact, &theirs.impact);
                    assert!(
                        close(a.point, b.point) && close(a.normal, b.normal),
                        "{label}: {ours:?}, the CPU step's {theirs:?}"
                    );
                    differ += usize::from(a != b);
                }
                (cpu, differ)
            }
            Some(pipeline) => (
                pipeline
                    .find(bodies, options)
                    .expect("valid")
                    .contacts()
                    .to_vec(),
                0,
            ),
        };
        if self.pipeline.is_some() {
            assert_same(label, self.against(), &gpu, &expected);
        }
        println!(
            "{label}: {} ordered contacts equal to {}; {geometry_differ} of their points or \
             normals differ from the CPU's within a few ulps",
            gpu.len(),
            self.against()
        );
    }
}

/// `ours` equals `theirs`, element by element; a failure names the first that differs.
fn assert_same<T: PartialEq + std::fmt::Debug>(
    label: &str,
    against: &str,
    ours: &[T],
    theirs: &[T],
) {
    assert_eq!(
        ours.len(),
        theirs.len(),
        "{label}: lengths against {against}"
    );
    if let Some(k) = (0..ours.len()).find(|&k| ours[k] != theirs[k]) {
        let differ = ours.iter().zip(theirs).filter(|(a, b)| a != b).count();
        panic!(
            "{label}: element {k} is {:?}, {against} says {:?} ({differ} of {} differ)",
            ours[k],
            theirs[k],
            ours.len()
        );
    }
}

/// The scene's walls (`walls_through`) or none.
fn walls_or_none(bodies: &[MovingSphere], dims: u32, with_walls: bool) -> Vec<Wall> {
    if with_walls {
        common::walls_through(bodies, dims)
    } else {
        Vec::new()
    }
}

/// Every scene in 2D and 3D, with and without walls, with the scene's options and with
/// `stop_at_penetration: false`: one encoder a frame holds the step, the caller's consumer
/// pass and the copies; one submission.
#[test]
fn a_consumer_pass_reads_the_step_in_the_same_submission() {
    let Some((caller, stage, mut reference)) =
        Caller::with_step("a_consumer_pass_reads_the_step_in_the_same_submission")
    else {
        return;
    };
    let start = Instant::now();
    for scene in Scene::ALL {
        for dims in [2, 3] {
            let (bodies, options) = scene.bodies(3_000, dims, 17);
            let body_buffer = caller.bodies(&bodies, bodies.len());
            let mut buffers =
                caller.step_buffers(&stage, &body_buffer, &options, &[], ROOMY, false);
            for with_walls in [false, true] {
                let walls = walls_or_none(&bodies, dims, with_walls);
                stage
                    .set_walls(&caller.device, &caller.queue, &mut buffers, &walls)
                    .expect("valid walls");
                for stop_at_penetration in [true, false] {
                    let options = SweepOptions {
                        stop_at_penetration,
                        ..options
                    };
                    buffers.set_options(&caller.queue, options);
                    let frame = caller.run_frame(&stage, &mut buffers);
                    let label = format!(
                        "{scene:?} {dims}D, {} walls, stop at penetration {stop_at_penetration}",
                        walls.len()
                    );
                    reference.assert_earliest(&label, &bodies, &walls, options, &frame);
                }
            }
        }
    }
    println!("every scene in {:?}", start.elapsed());
}

/// The step, the caller's pass that moves every body to where its step ends, and the step
/// again, in one submission, each frame's outputs copied out between: each frame's answer
/// is that of its own bodies (the second's computed on the host with the same f32 sums).
#[test]
fn two_frames_in_one_submission_each_give_their_own_answer() {
    let Some((caller, stage, mut reference)) =
        Caller::with_step("two_frames_in_one_submission_each_give_their_own_answer")
    else {
        return;
    };
    let start = Instant::now();
    for (scene, dims, with_walls) in [
        (Scene::Uniform, 3, false),
        (Scene::Periodic, 2, false),
        (Scene::Fast, 3, true),
    ] {
        let (bodies, options) = scene.bodies(3_000, dims, 29);
        let walls = walls_or_none(&bodies, dims, with_walls);
        let body_buffer = caller.bodies(&bodies, bodies.len());
        let mut buffers = caller.step_buffers(&stage, &body_buffer, &options, &walls, ROOMY, false);
        let mut encoder = caller.encoder();
        let first = caller.record_frame(&stage, &mut encoder, &mut buffers, None);
        caller.record_advance(&mut encoder, &body_buffer);
        let second = caller.record_frame(&stage, &mut encoder, &mut buffers, None);
        caller.submit(encoder);
        let (first, second) = (caller.read(&first), caller.read(&second));
        let moved: Vec<MovingSphere> = bodies
            .iter()
            .map(|body| MovingSphere {
                center: body.center + body.displacement,
                ..*body
            })
            .collect();
        let label = format!("{scene:?} {dims}D, {} walls", walls.len());
        reference.assert_earliest(
            &format!("{label}, frame 1"),
            &bodies,
            &walls,
            options,
            &first,
        );
        reference.assert_earliest(
            &format!("{label}, frame 2"),
            &moved,
            &walls,
            options,
            &second,
        );
        assert_ne!(
            first.impacts(bodies.len()),
            second.impacts(bodies.len()),
            "{label}: the bodies moved, the answers must differ"
        );
    }
    println!("two frames of three scenes in {:?}", start.elapsed());
}

/// The body count from the caller's buffers: two steps in one submission, each counting
/// from its own buffer (at an offset), give the answers of their first bodies; a step
/// recorded after them without a count buffer counts the host's count (the capacity, then
/// what `set_body_count` says); a count above the capacity is an invalid step the consumer
/// skips, and `grow` says the body buffer is too small.
#[test]
fn the_body_count_comes_from_the_callers_buffer() {
    let Some((caller, stage, mut reference)) =
        Caller::with_step("the_body_count_comes_from_the_callers_buffer")
    else {
        return;
    };
    let start = Instant::now();
    let capacity = 3_000;
    let (bodies, options) = Scene::Radii100.bodies(capacity, 3, 41);
    let walls = common::walls_through(&bodies, 3);
    let body_buffer = caller.bodies(&bodies, capacity);
    let mut buffers = caller.step_buffers(&stage, &body_buffer, &options, &walls, ROOMY, false);
    let (first, second) = (1_200, 2_500);
    let counts_a = caller.words("count a", &[7, first, 9], Usage::COPY_SRC);
    let counts_b = caller.words("count b", &[second], Usage::COPY_SRC);
    let mut encoder = caller.encoder();
    let readbacks = [
        caller.record_frame(&stage, &mut encoder, &mut buffers, Some((&counts_a, 4))),
        caller.record_frame(&stage, &mut encoder, &mut buffers, Some((&counts_b, 0))),
        caller.record_frame(&stage, &mut encoder, &mut buffers, None),
    ];
    caller.submit(encoder);
    for (n, readback) in [first as usize, second as usize, capacity]
        .into_iter()
        .zip(&readbacks)
    {
        let frame = caller.read(readback);
        let label = format!("{n} of {capacity} bodies");
        reference.assert_earliest(&label, &bodies[..n], &walls, options, &frame);
    }
    // A submission after one that counted from a buffer: the host's count still holds,
    // the capacity until `set_body_count` says otherwise.
    let frame = caller.run_frame(&stage, &mut buffers);
    let label = format!("{capacity} of {capacity} bodies in the next submission");
    reference.assert_earliest(&label, &bodies, &walls, options, &frame);
    let host = 1_700;
    buffers.set_body_count(&caller.queue, host);
    let frame = caller.run_frame(&stage, &mut buffers);
    reference.assert_earliest(
        &format!("{host} of {capacity} bodies, the host's count"),
        &bodies[..host as usize],
        &walls,
        options,
        &frame,
    );
    // More bodies than the buffer holds.
    let beyond = caller.words("count beyond", &[capacity as u32 + 1], Usage::COPY_SRC);
    let mut encoder = caller.encoder();
    let readback = caller.record_frame(&stage, &mut encoder, &mut buffers, Some((&beyond, 0)));
    caller.submit(encoder);
    let frame = caller.read(&readback);
    println!("a count above the capacity: {:?}", frame.counts);
    assert!(!frame.counts.is_valid());
    frame.assert_consumed("a count above the capacity");
    assert!(matches!(
        stage.grow(&caller.device, &caller.queue, &mut buffers, &frame.counts),
        Err(Error::TooManyBodies { count, max }) if count == capacity + 1 && max == capacity
    ));
    println!("counts from buffers in {:?}", start.elapsed());
}

/// Grows `buffers` and runs the frame again until the step is valid; returns the valid
/// frame and how many times it ran. Each invalid frame's consumer wrote nothing.
fn run_until_valid(
    caller: &Caller,
    stage: &StepStage,
    buffers: &mut StepBuffers,
    label: &str,
) -> (Frame, u32) {
    for run in 1..=12 {
        let frame = caller.run_frame(stage, buffers);
        println!(
            "{label}, run {run} at {:?}: {:?}",
            buffers.capacities(),
            frame.counts
        );
        frame.assert_consumed(label);
        let grew = stage
            .grow(&caller.device, &caller.queue, buffers, &frame.counts)
            .expect("grows");
        assert_eq!(
            grew,
            !frame.counts.is_valid(),
            "{label}: grow on {:?}",
            frame.counts
        );
        if frame.counts.is_valid() {
            return (frame, run);
        }
    }
    panic!("{label}: no valid step after 12 runs");
}

/// The least capacities (what `create_buffers` clamps 1 up to) on 5,000 bodies with more
/// contacts, with ordered contacts (without them nothing can overflow): the step completes
/// with `valid` 0 and the consumer writes nothing;
/// grown from its counts and recorded again from the same bodies (as often as it takes),
/// the whole answer: the earliest records, with walls and without, and the ordered
/// contacts.
#[test]
fn an_overflow_is_invalid_until_grown_then_whole() {
    let Some((caller, stage, mut reference)) =
        Caller::with_step("an_overflow_is_invalid_until_grown_then_whole")
    else {
        return;
    };
    let start = Instant::now();
    let least = StepCapacities {
        contacts: 1,
        saved_queries: 1,
        resume_passes: 1,
    };
    let (bodies, options) = Scene::Uniform.bodies(5_000, 3, 53);
    let body_buffer = caller.bodies(&bodies, bodies.len());
    for with_walls in [false, true] {
        let walls = walls_or_none(&bodies, 3, with_walls);
        let mut buffers = caller.step_buffers(&stage, &body_buffer, &options, &walls, least, true);
        assert_eq!(
            buffers.capacities(),
            StepCapacities {
                contacts: 1024,
                ..least
            },
            "the contacts clamped up to the least"
        );
        let label = format!("least capacities, {} walls", walls.len());
        let (frame, runs) = run_until_valid(&caller, &stage, &mut buffers, &label);
        assert!(runs > 1, "{label}: the first step must overflow");
        assert!(frame.counts.contacts > 1024, "{label}: {:?}", frame.counts);
        reference.assert_earliest(&label, &bodies, &walls, options, &frame);
        reference.assert_contacts(&label, &bodies, options, &frame);
        // The grown buffers hold the next step at once.
        let again = caller.run_frame(&stage, &mut buffers);
        assert_eq!(
            again.answer_bytes(bodies.len()),
            frame.answer_bytes(bodies.len())
        );
    }
    println!("overflow and growth in {:?}", start.elapsed());
}

/// Walks past their budget are saved and resumed (`StepCapacities::resume_passes`, one by
/// default): with the budget lowered to 20 steps a clustered scene's walks stop several times;
/// a step with a walk still unfinished after the last resume has `unfinished_queries` and
/// `valid` 0, the consumer skips it, and `grow` doubles the resumes until the step is whole and
/// the CPU step's answer. With a budget of 1 no walk of more than 17 steps can finish within
/// `low_level::grid::GRID_MAX_RESUME_PASSES`: `grow` then says so with a typed error. The full budget
/// gives the CPU step's answer again.
#[test]
fn a_walk_past_its_budget_is_resumed_or_a_typed_error() {
    let Some((caller, stage, mut reference)) =
        Caller::with_step("a_walk_past_its_budget_is_resumed_or_a_typed_error")
    else {
        return;
    };
    let (bodies, options) = Scene::Clustered.bodies(3_000, 3, 61);
    let body_buffer = caller.bodies(&bodies, bodies.len());
    let mut buffers = caller.step_buffers(&stage, &body_buffer, &options, &[], ROOMY, false);
    buffers.set_walk_budget(&caller.queue, 20);
    let frame = caller.run_frame(&stage, &mut buffers);
    assert!(!frame.counts.is_valid(), "{:?}", frame.counts);
    assert_eq!(frame.counts.unfinished_queries, 1, "{:?}", frame.counts);
    frame.assert_consumed("a walk past its budget");
    let (frame, runs) = run_until_valid(&caller, &stage, &mut buffers, "budget 20");
    assert!(
        runs > 1 && buffers.capacities().resume_passes > 1,
        "{runs} runs"
    );
    reference.assert_earliest("budget 20, resumed", &bodies, &[], options, &frame);

    buffers.set_walk_budget(&caller.queue, 1);
    let error = loop {
        let frame = caller.run_frame(&stage, &mut buffers);
        assert!(!frame.counts.is_valid(), "{:?}", frame.counts);
        frame.assert_consumed("a walk past every resume");
        match stage.grow(&caller.device, &caller.queue, &mut buffers, &frame.counts) {
            Ok(grew) => assert!(grew),
            Err(error) => break error,
        }
    };
    assert_eq!(buffers.capacities().resume_passes, GRID_MAX_RESUME_PASSES);
    let steps = GRID_MAX_RESUME_PASSES as usize + 1;
    assert!(
        matches!(
            error,
            Error::CapacityExceeded { what: Counted::WalkSteps, at_least, capacity }
                if capacity == steps && at_least == steps + 1
        ),
        "{error:?}"
    );
    buffers.set_walk_budget(&caller.queue, 0);
    let frame = caller.run_frame(&stage, &mut buffers);
    reference.assert_earliest("the full budget", &bodies, &[], options, &frame);
}

/// A device below the step's limits gets `Error::DeviceLimit` naming the limit, not a
/// panic.
#[test]
fn a_device_below_the_limits_is_a_typed_error() {
    let Some(adapter) = adapter("a_device_below_the_limits_is_a_typed_error") else {
        return;
    };
    let required = StepStage::required_limits();
    let lowered = [
        (
            "max_storage_buffers_per_shader_stage",
            wgpu::Limits {
                max_storage_buffers_per_shader_stage: 4,
                ..required.clone()
            },
        ),
        (
            "max_compute_workgroups_per_dimension",
            wgpu::Limits {
                max_compute_workgroups_per_dimension: 65_534,
                ..required.clone()
            },
        ),
        (
            "max_compute_invocations_per_workgroup",
            wgpu::Limits {
                max_compute_invocations_per_workgroup: 128,
                ..required.clone()
            },
        ),
        (
            "max_compute_workgroup_size_x",
            wgpu::Limits {
                max_compute_workgroup_size_x: 128,
                ..required
            },
        ),
    ];
    for (name, limits) in lowered {
        let (device, _queue) = request(&adapter, limits).expect("lower limits are granted");
        let error = StepStage::new(&device).expect_err("a device below the limits");
        println!("{name} lowered: {error}");
        assert!(
            matches!(error, Error::DeviceLimit { limit, required, available }
                if limit == name && available < required),
            "{name}: {error:?}"
        );
    }
}

/// Saved walks past every slot one binding holds: on a device of 1 MiB storage bindings the
/// grid's words hold 8,190 slots a chain ((2²⁰ / 4 − 40) / 32). A lattice of 8,379 bodies 3
/// apart (every other one closing on its neighbour), each walk some tens of steps over its 27
/// cells, with the budget lowered to 10 steps (so
/// every walk is saved, and every one finishes within the 16 resumes), overflows them: `grow`
/// doubles the slots from 1,024 to the most, then returns `CapacityExceeded` for the saved
/// walks instead of growing (and rerunning) without end. With the full budget the same
/// buffers give the CPU step's answer.
#[test]
fn saved_walks_past_a_binding_are_a_typed_error() {
    let test = "saved_walks_past_a_binding_are_a_typed_error";
    let Some(adapter) = adapter(test) else {
        return;
    };
    let limits = wgpu::Limits {
        max_storage_buffer_binding_size: 1 << 20,
        ..StepStage::required_limits()
    };
    let caller = Caller::on(adapter, limits).expect("lower limits are granted");
    let stage = StepStage::new(&caller.device).expect("compiles");
    let mut reference = Reference::new(&caller);
    let bodies: Vec<MovingSphere> = (0..21 * 21 * 19)
        .map(|i| {
            let at = Vec3::new((i % 21) as f32, (i / 21 % 21) as f32, (i / 441) as f32);
            // Every other body closes 2.5 on its neighbour along x: contacts to check.
            let moves = if i % 2 == 0 { 2.5 } else { 0.0 };
            MovingSphere::new(at * 3.0, 0.5, Vec3::new(moves, 0.0, 0.0))
        })
        .collect();
    let options = SweepOptions::default();
    let capacities = StepCapacities {
        resume_passes: GRID_MAX_RESUME_PASSES,
        ..StepCapacities::default()
    };
    let body_buffer = caller.bodies(&bodies, bodies.len());
    let mut buffers = caller.step_buffers(&stage, &body_buffer, &options, &[], capacities, false);
    buffers.set_walk_budget(&caller.queue, 10);
    let most = ((1 << 20) / 4 - 40) / 32;
    let mut grows = 0;
    let error = loop {
        let frame = caller.run_frame(&stage, &mut buffers);
        assert!(!frame.counts.is_valid(), "{:?}", frame.counts);
        assert_eq!(
            frame.counts.saved_queries_overflowed, 1,
            "{:?}",
            frame.counts
        );
        assert_eq!(frame.counts.unfinished_queries, 0, "{:?}", frame.counts);
        frame.assert_consumed("saved walks past their slots");
        match stage.grow(&caller.device, &caller.queue, &mut buffers, &frame.counts) {
            Ok(grew) => assert!(grew),
            Err(error) => break error,
        }
        grows += 1;
        assert!(grows <= 4, "grew {grows} times");
    };
    assert_eq!(buffers.capacities().saved_queries, most as u64);
    assert!(
        matches!(
            error,
            Error::CapacityExceeded { what: Counted::SavedQueries, at_least, capacity }
                if capacity == most && at_least == most + 1
        ),
        "{error:?}"
    );
    buffers.set_walk_budget(&caller.queue, 0);
    let frame = caller.run_frame(&stage, &mut buffers);
    reference.assert_earliest("the full budget", &bodies, &[], options, &frame);
}

/// A device made with `wgpu::Limits::default()` (which meets the step's limits) runs it.
#[test]
fn a_device_with_the_default_limits_runs_the_step() {
    let test = "a_device_with_the_default_limits_runs_the_step";
    let Some(adapter) = adapter(test) else {
        return;
    };
    let caller = Caller::on(adapter, wgpu::Limits::default()).expect("the default limits");
    let stage = StepStage::new(&caller.device).expect("the default limits meet the step's");
    let mut reference = Reference::new(&caller);
    let (bodies, options) = Scene::Clustered.bodies(2_000, 3, 61);
    let walls = common::walls_through(&bodies, 3);
    let body_buffer = caller.bodies(&bodies, bodies.len());
    let mut buffers = caller.step_buffers(&stage, &body_buffer, &options, &walls, ROOMY, true);
    let frame = caller.run_frame(&stage, &mut buffers);
    reference.assert_earliest("the default limits", &bodies, &walls, options, &frame);
    reference.assert_contacts("the default limits", &bodies, options, &frame);
}

/// The same step gives the same bytes (counts, earliest records, ordered contacts): twice
/// in one submission, again in a later one, and on buffers made afresh.
#[test]
fn the_same_step_gives_the_same_bytes() {
    let Some((caller, stage, mut reference)) =
        Caller::with_step("the_same_step_gives_the_same_bytes")
    else {
        return;
    };
    for (scene, dims) in [(Scene::Fast, 3), (Scene::Periodic, 3)] {
        let (bodies, options) = scene.bodies(3_000, dims, 71);
        let walls = common::walls_through(&bodies, dims);
        let body_buffer = caller.bodies(&bodies, bodies.len());
        let make = || caller.step_buffers(&stage, &body_buffer, &options, &walls, ROOMY, true);
        let mut buffers = make();
        let mut encoder = caller.encoder();
        let twice = [
            caller.record_frame(&stage, &mut encoder, &mut buffers, None),
            caller.record_frame(&stage, &mut encoder, &mut buffers, None),
        ];
        caller.submit(encoder);
        let frames = [
            caller.read(&twice[0]),
            caller.read(&twice[1]),
            caller.run_frame(&stage, &mut buffers),
            caller.run_frame(&stage, &mut make()),
        ];
        let label = format!("{scene:?} {dims}D");
        reference.assert_earliest(&label, &bodies, &walls, options, &frames[0]);
        reference.assert_contacts(&label, &bodies, options, &frames[0]);
        let first = frames[0].answer_bytes(bodies.len());
        for (k, frame) in frames.iter().enumerate().skip(1) {
            assert!(
                frame.answer_bytes(bodies.len()) == first,
                "{label}: step {k} differs from the first"
            );
        }
        println!("{label}: 4 steps, {} bytes each, the same", first.len());
    }
}

/// A count buffer without `COPY_SRC` or with an offset that is not that of a `u32` within
/// it, and a body buffer without `STORAGE` or not of whole records, are
/// `Error::InvalidBuffer`; a failed `record` leaves the encoder as it was, and the step
/// recorded after it gives its answer.
#[test]
fn bad_buffers_are_typed_errors_and_leave_the_encoder_usable() {
    let Some((caller, stage, mut reference)) =
        Caller::with_step("bad_buffers_are_typed_errors_and_leave_the_encoder_usable")
    else {
        return;
    };
    let (bodies, options) = Scene::Uniform.bodies(1_000, 2, 83);
    let records: Vec<BodyRecord> = bodies.iter().map(|&body| body.into()).collect();
    let record_bytes: &[u8] = bytemuck::cast_slice(&records);
    for (what, contents, usage) in [
        (
            "without STORAGE",
            record_bytes,
            Usage::COPY_DST | Usage::COPY_SRC,
        ),
        ("not whole records", &record_bytes[..40], Usage::STORAGE),
        ("empty", &[][..], Usage::STORAGE),
    ] {
        let body_buffer = caller
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(what),
                contents,
                usage,
            });
        let result = stage.create_buffers(
            &caller.device,
            &caller.queue,
            &body_buffer,
            options,
            ROOMY,
            false,
        );
        println!("a body buffer {what}: {:?}", result.as_ref().err());
        assert!(
            matches!(result, Err(Error::InvalidBuffer { name: "bodies", .. })),
            "a body buffer {what}: {result:?}"
        );
    }
    let body_buffer = caller.bodies(&bodies, bodies.len());
    let mut buffers = caller.step_buffers(&stage, &body_buffer, &options, &[], ROOMY, false);
    let no_copy = caller.words("count without COPY_SRC", &[500], Usage::STORAGE);
    let count = caller.words("count", &[500, 600, 700, 800], Usage::COPY_SRC);
    let mut encoder = caller.encoder();
    for (what, buffer, offset) in [
        ("without COPY_SRC", &no_copy, 0),
        ("at an unaligned offset", &count, 2),
        ("at its end", &count, 16),
        ("past u64's end", &count, u64::MAX - 3),
    ] {
        let result = stage.record(&mut encoder, &mut buffers, Some((buffer, offset)));
        println!("a count buffer {what}: {:?}", result.as_ref().err());
        assert!(
            matches!(result, Err(Error::InvalidBuffer { name: "count", .. })),
            "a count buffer {what}: {result:?}"
        );
    }
    let readback = caller.record_frame(&stage, &mut encoder, &mut buffers, Some((&count, 12)));
    caller.submit(encoder);
    let frame = caller.read(&readback);
    reference.assert_earliest(
        "after the failed records",
        &bodies[..800],
        &[],
        options,
        &frame,
    );
}

/// Bodies on the device are not validated by the host: a body the step cannot sweep (a
/// centre, displacement or radius that is NaN or infinite, or a negative radius) makes the
/// step invalid (`StepCounts::invalid_bodies`), the consumer skips it, and `grow` is a typed
/// error rather than more memory. A radius of -0 is a radius of 0: a valid step.
#[test]
fn a_body_the_step_cannot_sweep_makes_it_invalid() {
    let Some((caller, stage, mut reference)) =
        Caller::with_step("a_body_the_step_cannot_sweep_makes_it_invalid")
    else {
        return;
    };
    let (bodies, options) = Scene::Uniform.bodies(2_000, 3, 61);
    let walls = common::walls_through(&bodies, 3);
    let bad = 1_234;
    type Spoil = fn(&mut MovingSphere);
    let hostile: [(&str, Spoil); 6] = [
        ("a NaN centre", |body| body.center.y = f32::NAN),
        ("an infinite centre", |body| body.center.x = f32::INFINITY),
        ("a NaN displacement", |body| body.displacement.z = f32::NAN),
        ("an infinite displacement", |body| {
            body.displacement.x = f32::NEG_INFINITY
        }),
        ("a NaN radius", |body| body.radius = f32::NAN),
        ("a negative radius", |body| body.radius = -0.5),
    ];
    for (what, spoil) in hostile {
        let mut spoiled = bodies.clone();
        spoil(&mut spoiled[bad]);
        let body_buffer = caller.bodies(&spoiled, spoiled.len());
        let mut buffers = caller.step_buffers(&stage, &body_buffer, &options, &walls, ROOMY, false);
        let frame = caller.run_frame(&stage, &mut buffers);
        assert_eq!(frame.counts.invalid_bodies, 1, "{what}: {:?}", frame.counts);
        assert!(!frame.counts.is_valid(), "{what}");
        frame.assert_consumed(what);
        assert!(
            matches!(
                stage.grow(&caller.device, &caller.queue, &mut buffers, &frame.counts),
                Err(Error::InvalidBuffer { name: "bodies", .. })
            ),
            "{what}: grow"
        );
    }
    let mut zero = bodies.clone();
    zero[bad].radius = -0.0;
    let body_buffer = caller.bodies(&zero, zero.len());
    let mut buffers = caller.step_buffers(&stage, &body_buffer, &options, &walls, ROOMY, false);
    let frame = caller.run_frame(&stage, &mut buffers);
    assert_eq!(frame.counts.invalid_bodies, 0, "{:?}", frame.counts);
    assert!(frame.counts.is_valid());
    reference.assert_earliest("a radius of -0", &zero, &walls, options, &frame);
}
