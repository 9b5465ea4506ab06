//! A resident gas: the bodies live on the device for the whole run, and every frame is one
//! command encoder: the example's own passes move them, [`StepStage`] finds each body's
//! earliest contact with a body or a wall, and a response pass changes the velocities.
//!
//! ```text
//! cargo run --release --example resident_step -- [--bodies N] [--frames N] [--seed S] [--check] [--out PNG]
//! (defaults: 100,000 bodies, 10 frames, seed 1, pictures/resident_step.png)
//! ```
//!
//! Hard spheres (radius 0.1 to 0.4, mass ∝ radius³, speeds up to 0.6 a frame) start on a
//! jittered lattice, one to 4.1 units of volume, inside the closed box of six planes
//! [`Wall::box_interior`]. Velocities are a buffer of the example's own; the step's bodies
//! ([`BodyRecord`], the spare word kept 0) carry displacement = velocity · dt.
//!
//! # The rule: one contact a body a frame, and only motions proven apart
//!
//! The step gives each body's earliest contact within the frame (options
//! [`SweepOptions::event_driven`]: bodies that touch while separating, as after a collision,
//! do not meet again). `plan` (examples/resident_step.wgsl) turns it into a motion:
//!
//! * **no contact**: the body moves the whole frame;
//! * **mutually earliest pair** (A's earliest is B and B's is A, the same impact at time t):
//!   both move to t and collide elastically, masses ∝ r³, along the normal between their
//!   centres at t: `v_A -= 2 m_B / (m_A + m_B) ((v_A - v_B)·n) n`, and likewise for B; then
//!   each goes on with its new velocity for the rest of the frame;
//! * **a wall** at t: the body moves to t, its velocity reflects about the wall's normal (a
//!   face of the box: one component negated, exactly), and it goes on;
//! * **a body that is not mutually earliest** (its partner meets something else first): the
//!   body keeps its velocity and moves the whole frame, since its partner will not be where
//!   it expected.
//!
//! None of these motions is safe by itself: a body that goes on after a bounce may meet a
//! second body in the rest of the frame, which one contact a body cannot see; a body whose
//! partner went elsewhere may meet that partner's actual path. So the planned motions (each
//! body's straight segment from its start to its end, travelled uniformly over the frame) are
//! swept again by the same stage, and `mark` flags every body that meets anything but the
//! contact its plan is built on (its pair partner planned as far as it, its wall). A flagged
//! body is **cut** to its contact (it unmatched there, with its new velocity) or, without a
//! contact or if already cut, **frozen** (it stays where it is, with its velocity, and its
//! partner's velocity is kept too); a body that would be frozen waits while the body it meets
//! is cut in the same round. Rounds of the second step run until one shortens nothing
//! (usually one to ten); only then does `commit` move the bodies and write the new
//! velocities. Shortening only ends motions, so the rounds end; every committed motion is one
//! the step swept and found apart from every other, up to the contact it is built on. (A
//! bounce's segment is the chord of its bent path: the relative path of a colliding pair
//! reflects off the sphere of their radius sum, a body's off the plane, and the chord of a
//! path that bounces off a convex body stays outside it.)
//!
//! The price of one contact a body a frame is time: a cut body loses the rest of its frame,
//! a frozen one the whole frame. Losing time where bodies crowd makes them crowd more, so the
//! gas slowly clusters: at 20,000 bodies the mean advance falls from 0.999 of a frame at
//! frame 0 to about 0.85 by frame 50 (more cut and frozen bodies, more candidates). A frame
//! is a fixed step of the dynamics, not an event-driven one.
//!
//! A step whose [`StepCounts::valid`] is 0 (a buffer overflowed) is partial: the passes after
//! it do nothing, the host grows that step's buffers ([`StepStage::grow`]) and records again
//! from the bodies and velocities the frame started from.
//!
//! The host reads back, each frame, only a summary (48 bytes: validity, counts of contacts,
//! pairs, walls, unmatched, frozen bodies), the two steps' counts and, per workgroup of 64 bodies,
//! the kinetic energy and the fractions advanced; under `--check` it reads everything.
//!
//! # `--check`
//!
//! 1. **No pass-through.** The motions the device applied (the centres before and after,
//!    as f64) are swept with the CPU step (`cpu::find_contacts`, every pair that comes within
//!    its radius sum), and each such pair is judged by the f64 oracle
//!    ([`reference::sweep_sphere_sphere`] and the least of `f(s) = |s - v s|² - R²` over
//!    the frame): the pair may not overlap by more than
//!    `GPU_BOUND ε S² + 2 R δ + δ²`, with `S = |s| + max(|v|, |v_frame|) + R` the pair's
//!    scale (relative position, relative motion applied or planned, radius sum), and
//!    `δ = u (|c_A'| + |c_B'|)` (u = 2⁻²⁴). The first term is the parity bound of the step's
//!    answers ([`parity`]): the second step declared the planned segments apart, or touching
//!    at their end, within it; the second is what the final addition `c + d` costs: each end
//!    centre is rounded by up to `u |c'|` per axis, which moves the pair's distance by at most
//!    `δ`, and near contact (distance ≈ R) the squared distance by `2Rδ + δ²`. So a hit of the
//!    applied motions must be at their end or grazing within that bound. No centre may pass a
//!    wall by more than `GPU_BOUND ε (|h| + |d| + r) + u |c'|` (the height above it, the
//!    displacement, the radius; and the final rounding).
//! 2. **The step equals the CPU's.** Each frame's earliest contacts equal
//!    `cpu::ContactFinder::find_with_walls` on the same bodies: to the bit on lavapipe (Mesa's
//!    software Vulkan adapter); elsewhere (llvmpipe through GL, real GPUs), whose division
//!    and square root need not be correctly rounded and which may fuse multiply-adds, a
//!    different answer is accepted only where the GPU's contact passes the parity judge at
//!    `GPU_BOUND` and the CPU's earlier partner was not met before the GPU's time beyond the
//!    bound.
//! 3. **Progress and energy.** The mean fraction of the frame advanced a body must exceed
//!    [`LEAST_MEAN_ADVANCE`] (freezing every body gives 0). The kinetic energy (f64, from the
//!    f32 velocities) may change each frame by at most `128 u (m_A + m_B)(|v_A| + |v_B|)²`
//!    summed over the pairs that collided: to first order the normal's length (off 1 by up to
//!    8u: inverseSqrt is 2 ulp in WGSL), the approach (4u |v_A - v_B|) and their product give
//!    20u, the share 2m/(m + M) (8u, times the impulse and the velocity, twice) 48u, and the
//!    final roundings of the two velocities 18u: 86u, rounded up to 128u for second-order
//!    terms. Reflections off the box's faces are exact.
//! 4. **An invalid step.** The step (the grid: earliest contacts only) has no buffer a scene
//!    outgrows; what makes it invalid is a body's walk past its budget and its one resume. The
//!    run starts with that budget lowered to a few steps (`StepBuffers::set_walk_budget`), so
//!    that frame 0's
//!    step is invalid: its `valid` must be 0, the bodies and velocities unchanged to the bit,
//!    and after the budget is restored the rerun whole; a run in which no step was invalid
//!    fails.
//!
//! It prints the adapter, the frames, the contacts and the frames a second, writes a picture
//! of the last frame (a slab of the box: paths, contacts, frozen bodies) and exits 1 if a
//! check fails, 2 without an adapter, 3 on bad arguments.

mod common;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytemuck::{Pod, Zeroable};
use common::parse;
use common::picture::{paint, text};
use sweepcast::glam::{DVec3, Vec3};
use sweepcast::gpu::{GpuContext, StepCapacities};
use sweepcast::low_level::SHARED_WGSL;
use sweepcast::low_level::layout::{BodyRecord, EarliestRecord, StepCounts, WORKGROUP_SIZE};
use sweepcast::low_level::{StepBuffers, StepStage};
use sweepcast::parity::{self, EPSILON, GPU_BOUND};
use sweepcast::reference::{self, Body};
use sweepcast::{EarliestImpact, ImpactStatus, MovingSphere, Partner, SweepOptions, Wall, cpu};
use tiny_skia::{Color, FillRule, PathBuilder, Pixmap, Stroke, Transform};
use wgpu::BufferUsages as Usage;
use wgpu::util::DeviceExt;

/// The example's passes (`shared.wgsl` is prepended).
const PASSES_WGSL: &str = include_str!("resident_step.wgsl");

/// The unit roundoff of f32, 2⁻²⁴.
const UNIT_ROUNDOFF: f64 = EPSILON / 2.0;

/// The least mean fraction of a frame a body must advance under `--check`. In this dilute gas
/// (about 2% of the volume filled) some percent of the bodies are cut or frozen each frame
/// (the mean advance is about 0.96 over the first dozen frames); freezing every body gives 0.
const LEAST_MEAN_ADVANCE: f64 = 0.9;

/// The energy bound's coefficient, in units of u: see the header.
const ENERGY_BOUND: f64 = 128.0;
/// The walk budget of `--check`'s first steps: a few steps, which a body among its
/// neighbours exceeds, so that the step is invalid (check 4).
const LOWERED_BUDGET: u32 = 4;

/// `Frame` of the passes: a uniform block.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, Default)]
struct Frame {
    dt: f32,
    body_count: u32,
    _pad: [u32; 2],
}

/// `Plan`: a body's motion and velocity for the frame.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, Default)]
struct Plan {
    velocity: [f32; 3],
    fraction: f32,
    kind: u32,
    partner: u32,
    _pad: [u32; 2],
}

const PLAN_FREE: u32 = 0;
const PLAN_PAIR: u32 = 1;
const PLAN_WALL: u32 = 2;
const PLAN_UNMATCHED: u32 = 3;

/// The planned motion's reach (`levels`): the whole frame, to the contact, not at all.
const LEVEL_WHOLE: u32 = 2;
const LEVEL_FROZEN: u32 = 0;

/// `Summary`: what the host reads each frame.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, Default)]
struct Summary {
    frame_valid: u32,
    plan_valid: u32,
    contacts: u32,
    pairs: u32,
    walls: u32,
    unmatched: u32,
    demoted_now: u32,
    cut: u32,
    frozen: u32,
    committed: u32,
    _pad: [u32; 2],
}

const _: () = assert!(size_of::<Frame>() == 16);
const _: () = assert!(size_of::<Plan>() == 32);
const _: () = assert!(size_of::<Summary>() == 48);

/// Bytes of the summary and of a step's counts.
const SUMMARY_SIZE: u64 = size_of::<Summary>() as u64;
const COUNTS_SIZE: u64 = size_of::<StepCounts>() as u64;

struct Options {
    bodies: usize,
    frames: usize,
    seed: u64,
    check: bool,
    out: String,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        bodies: 100_000,
        frames: 10,
        seed: 1,
        check: false,
        out: "pictures/resident_step.png".into(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--bodies" => options.bodies = parse(&value()?)?,
            "--frames" => options.frames = parse(&value()?)?,
            "--seed" => options.seed = parse(&value()?)?,
            "--out" => options.out = value()?,
            "--check" => options.check = true,
            "--help" | "-h" => {
                return Err("usage: resident_step [--bodies N] [--frames N] [--seed S] [--check] [--out PNG]".into());
            }
            other => return Err(format!("unknown option {other}; try --help")),
        }
    }
    if options.bodies < 2 || options.frames == 0 {
        return Err("--bodies must be at least 2 and --frames at least 1".into());
    }
    Ok(options)
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => return common::bad_options(&message),
    };
    let context = match common::gpu_context() {
        Ok(context) => context,
        Err(code) => return code,
    };
    match run(&context, &options) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The side of the lattice's cells, one body a cell at most: 4.1 units of volume a body.
const CELL: f64 = 1.6;

/// The gas at the start: bodies (displacement 0 until `prepare`), velocities with the mass
/// in w, and the side of the box.
struct Gas {
    bodies: Vec<BodyRecord>,
    velocities: Vec<[f32; 4]>,
    side: f32,
}

impl Gas {
    /// `count` bodies in cells of side [`CELL`] chosen at random, each inside its own cell (so no
    /// two overlap and none crosses a wall), moving in a random direction at up to 0.6.
    fn new(count: usize, seed: u64) -> Self {
        let lattice = testkit::jittered_lattice(count, CELL, (0.1, 0.4), 0.6, seed);
        let bodies = lattice
            .bodies
            .iter()
            .map(|body| BodyRecord {
                center: body.center.to_array(),
                radius: body.radius,
                displacement: [0.0; 3],
                groups: 0,
            })
            .collect();
        let velocities = (lattice.velocities.iter().zip(&lattice.bodies))
            .map(|(v, body)| [v.x, v.y, v.z, body.radius * body.radius * body.radius])
            .collect();
        Self {
            bodies,
            velocities,
            side: lattice.side,
        }
    }

    fn walls(&self) -> [Wall; 6] {
        Wall::box_interior(Vec3::ZERO, Vec3::splat(self.side))
    }
}

/// The example's compute pipelines, one an entry point, and the bindings each reads.
struct Passes {
    prepare: wgpu::ComputePipeline,
    plan: wgpu::ComputePipeline,
    mark: wgpu::ComputePipeline,
    demote: wgpu::ComputePipeline,
    commit: wgpu::ComputePipeline,
}

impl Passes {
    fn new(device: &wgpu::Device) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("resident_step passes"),
            source: wgpu::ShaderSource::Wgsl(format!("{SHARED_WGSL}{PASSES_WGSL}").into()),
        });
        let pipeline = |entry: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: None,
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        Self {
            prepare: pipeline("prepare"),
            plan: pipeline("plan"),
            mark: pipeline("mark"),
            demote: pipeline("shorten"),
            commit: pipeline("commit"),
        }
    }
}

/// The bindings of `resident_step.wgsl`, by number.
#[derive(Copy, Clone)]
enum Binding {
    Frame = 0,
    Bodies,
    Velocities,
    Earliest,
    Planned,
    PlannedEarliest,
    Plans,
    Levels,
    Conflicts,
    Summary,
    Partials,
}

/// The bind groups of the passes over the current step buffers (rebuilt when a step grows).
struct BindGroups {
    prepare: wgpu::BindGroup,
    plan: wgpu::BindGroup,
    mark: wgpu::BindGroup,
    demote: wgpu::BindGroup,
    commit: wgpu::BindGroup,
}

/// What `--check` and the picture read of a frame: the step's bodies and velocities before
/// it, the step's earliest contacts, and after it the bodies, velocities, plans and which
/// bodies froze.
struct Capture {
    before: Vec<BodyRecord>,
    velocities_before: Vec<[f32; 4]>,
    earliest: Vec<EarliestRecord>,
    after: Vec<BodyRecord>,
    velocities_after: Vec<[f32; 4]>,
    plans: Vec<Plan>,
    levels: Vec<u32>,
}

/// The example's own device buffers, bound by number ([`Binding`]).
struct Buffers {
    frame: wgpu::Buffer,
    bodies: wgpu::Buffer,
    velocities: wgpu::Buffer,
    planned: wgpu::Buffer,
    plans: wgpu::Buffer,
    levels: wgpu::Buffer,
    conflicts: wgpu::Buffer,
    summary: wgpu::Buffer,
    partials: wgpu::Buffer,
}

/// The device's side: the stage, its two step buffers (on the bodies, on the planned
/// motions), the example's buffers, passes and readbacks.
struct Resident {
    device: wgpu::Device,
    queue: wgpu::Queue,
    stage: StepStage,
    /// The step on the bodies, and the step on the planned motions.
    step: StepBuffers,
    recheck: StepBuffers,
    buffers: Buffers,
    passes: Passes,
    groups: BindGroups,
    /// The summary, the two steps' counts and the partial sums.
    readback: wgpu::Buffer,
    /// Everything `--check` and the picture read.
    capture: wgpu::Buffer,
    count: usize,
    workgroups: u32,
}

/// What one submission ended with.
struct Outcome {
    summary: Summary,
    step_counts: StepCounts,
    recheck_counts: StepCounts,
    /// Per workgroup: kinetic energy, fractions advanced.
    partials: Vec<[f32; 2]>,
}

impl Resident {
    fn new(
        context: &GpuContext,
        gas: &Gas,
        options: &SweepOptions,
        capacities: StepCapacities,
    ) -> Result<Self, String> {
        let (device, queue) = (context.device().clone(), context.queue().clone());
        let count = gas.bodies.len();
        let stage = StepStage::for_adapter(&device, context.adapter_info())
            .map_err(|error| error.to_string())?;
        let init = |label, contents: &[u8], usage| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage,
            })
        };
        let storage = Usage::STORAGE | Usage::COPY_SRC | Usage::COPY_DST;
        let bodies = init("bodies", bytemuck::cast_slice(&gas.bodies), storage);
        // The planned motions start as the bodies at rest, so that a round recorded after an
        // overflowed step sweeps something sane.
        let planned = init("planned", bytemuck::cast_slice(&gas.bodies), storage);
        let velocities = init("velocities", bytemuck::cast_slice(&gas.velocities), storage);
        let frame = Frame {
            dt: 1.0,
            body_count: count as u32,
            _pad: [0; 2],
        };
        let frame = init("frame", bytemuck::bytes_of(&frame), Usage::UNIFORM);
        let zeroed = |label, size| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: storage,
                mapped_at_creation: false,
            })
        };
        let n = count as u64;
        let workgroups = (count as u32).div_ceil(WORKGROUP_SIZE);
        let plans = zeroed("plans", n * size_of::<Plan>() as u64);
        let levels = zeroed("levels", n * 4);
        let conflicts = zeroed("conflicts", n * 4);
        let summary = zeroed("summary", SUMMARY_SIZE);
        let partials = zeroed("partials", u64::from(workgroups) * 8);
        let readback_buffer = |label, size| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: Usage::MAP_READ | Usage::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let readback = readback_buffer(
            "summary readback",
            SUMMARY_SIZE + 2 * COUNTS_SIZE + u64::from(workgroups) * 8,
        );
        let capture = readback_buffer("capture readback", capture_size(n));
        let made = |error: sweepcast::Error| error.to_string();
        let mut step = stage
            .create_buffers(&device, &queue, &bodies, *options, capacities, false)
            .map_err(made)?;
        let mut recheck = stage
            .create_buffers(&device, &queue, &planned, *options, capacities, false)
            .map_err(made)?;
        for buffers in [&mut step, &mut recheck] {
            stage
                .set_walls(&device, &queue, buffers, &gas.walls())
                .map_err(made)?;
        }
        let buffers = Buffers {
            frame,
            bodies,
            velocities,
            planned,
            plans,
            levels,
            conflicts,
            summary,
            partials,
        };
        let passes = Passes::new(&device);
        let groups = bind_groups(&device, &passes, &buffers, &step, &recheck);
        Ok(Self {
            device,
            queue,
            stage,
            step,
            recheck,
            buffers,
            passes,
            groups,
            readback,
            capture,
            count,
            workgroups,
        })
    }

    fn dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        pipeline: &wgpu::ComputePipeline,
        group: &wgpu::BindGroup,
    ) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: None,
            timestamp_writes: None,
        });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, group, &[]);
        pass.dispatch_workgroups(self.workgroups, 1, 1);
    }

    /// Records a submission: with `whole`, the frame from its start (`prepare`, the step,
    /// `plan`); then one round (the step on the plans, `mark`, `freeze`) and `commit`, which
    /// acts only if the round froze nothing. With `capture`, the copies `--check` reads.
    fn submit(&mut self, whole: bool, capture: bool) -> Result<Outcome, String> {
        let mut encoder = self.device.create_command_encoder(&Default::default());
        let n = self.count as u64;
        let demoted_now = std::mem::offset_of!(Summary, demoted_now) as u64;
        if whole {
            encoder.clear_buffer(&self.buffers.summary, 0, None);
            self.dispatch(&mut encoder, &self.passes.prepare, &self.groups.prepare);
            self.stage
                .record(&mut encoder, &mut self.step, None)
                .map_err(|error| error.to_string())?;
            encoder.copy_buffer_to_buffer(self.step.counts(), 0, &self.buffers.summary, 0, 4);
            self.dispatch(&mut encoder, &self.passes.plan, &self.groups.plan);
            if capture {
                let layout = CaptureLayout::new(n);
                encoder.copy_buffer_to_buffer(
                    &self.buffers.bodies,
                    0,
                    &self.capture,
                    layout.before,
                    32 * n,
                );
                encoder.copy_buffer_to_buffer(
                    &self.buffers.velocities,
                    0,
                    &self.capture,
                    layout.velocities_before,
                    16 * n,
                );
                encoder.copy_buffer_to_buffer(
                    self.step.earliest(),
                    0,
                    &self.capture,
                    layout.earliest,
                    32 * n,
                );
            }
        }
        encoder.clear_buffer(&self.buffers.summary, demoted_now, Some(4));
        self.stage
            .record(&mut encoder, &mut self.recheck, None)
            .map_err(|error| error.to_string())?;
        encoder.copy_buffer_to_buffer(self.recheck.counts(), 0, &self.buffers.summary, 4, 4);
        self.dispatch(&mut encoder, &self.passes.mark, &self.groups.mark);
        self.dispatch(&mut encoder, &self.passes.demote, &self.groups.demote);
        self.dispatch(&mut encoder, &self.passes.commit, &self.groups.commit);
        encoder.copy_buffer_to_buffer(&self.buffers.summary, 0, &self.readback, 0, SUMMARY_SIZE);
        encoder.copy_buffer_to_buffer(
            self.step.counts(),
            0,
            &self.readback,
            SUMMARY_SIZE,
            COUNTS_SIZE,
        );
        encoder.copy_buffer_to_buffer(
            self.recheck.counts(),
            0,
            &self.readback,
            SUMMARY_SIZE + COUNTS_SIZE,
            COUNTS_SIZE,
        );
        encoder.copy_buffer_to_buffer(
            &self.buffers.partials,
            0,
            &self.readback,
            SUMMARY_SIZE + 2 * COUNTS_SIZE,
            self.buffers.partials.size(),
        );
        if capture {
            let layout = CaptureLayout::new(n);
            for (buffer, offset, size) in [
                (&self.buffers.bodies, layout.after, 32 * n),
                (&self.buffers.velocities, layout.velocities_after, 16 * n),
                (&self.buffers.plans, layout.plans, 32 * n),
                (&self.buffers.levels, layout.levels, 4 * n),
            ] {
                encoder.copy_buffer_to_buffer(buffer, 0, &self.capture, offset, size);
            }
        }
        self.queue.submit([encoder.finish()]);
        let bytes = read(&self.device, &self.readback)?;
        let (summary, rest) = bytes.split_at(SUMMARY_SIZE as usize);
        let (counts, partials) = rest.split_at(2 * COUNTS_SIZE as usize);
        let (step_counts, recheck_counts) = counts.split_at(COUNTS_SIZE as usize);
        Ok(Outcome {
            summary: bytemuck::pod_read_unaligned(summary),
            step_counts: bytemuck::pod_read_unaligned(step_counts),
            recheck_counts: bytemuck::pod_read_unaligned(recheck_counts),
            partials: bytemuck::pod_collect_to_vec(partials),
        })
    }

    /// Grows the step on the bodies (`frame`) or on the plans for the counts of a step that
    /// overflowed, and binds the passes to the new buffers. Returns the new capacities.
    fn grow(&mut self, frame: bool, counts: &StepCounts) -> Result<StepCapacities, String> {
        let buffers = if frame {
            &mut self.step
        } else {
            &mut self.recheck
        };
        self.stage
            .grow(&self.device, &self.queue, buffers, counts)
            .map_err(|error| error.to_string())?;
        let capacities = buffers.capacities();
        self.groups = bind_groups(
            &self.device,
            &self.passes,
            &self.buffers,
            &self.step,
            &self.recheck,
        );
        Ok(capacities)
    }

    fn read_capture(&self) -> Result<Capture, String> {
        let bytes = read(&self.device, &self.capture)?;
        let layout = CaptureLayout::new(self.count as u64);
        let n = self.count;
        let slice = |offset: u64, size: usize| &bytes[offset as usize..offset as usize + size * n];
        Ok(Capture {
            before: bytemuck::pod_collect_to_vec(slice(layout.before, 32)),
            velocities_before: bytemuck::pod_collect_to_vec(slice(layout.velocities_before, 16)),
            earliest: bytemuck::pod_collect_to_vec(slice(layout.earliest, 32)),
            after: bytemuck::pod_collect_to_vec(slice(layout.after, 32)),
            velocities_after: bytemuck::pod_collect_to_vec(slice(layout.velocities_after, 16)),
            plans: bytemuck::pod_collect_to_vec(slice(layout.plans, 32)),
            levels: bytemuck::pod_collect_to_vec(slice(layout.levels, 4)),
        })
    }
}

impl Buffers {
    fn get<'a>(
        &'a self,
        binding: Binding,
        step: &'a StepBuffers,
        recheck: &'a StepBuffers,
    ) -> &'a wgpu::Buffer {
        match binding {
            Binding::Frame => &self.frame,
            Binding::Bodies => &self.bodies,
            Binding::Velocities => &self.velocities,
            Binding::Earliest => step.earliest(),
            Binding::Planned => &self.planned,
            Binding::PlannedEarliest => recheck.earliest(),
            Binding::Plans => &self.plans,
            Binding::Levels => &self.levels,
            Binding::Conflicts => &self.conflicts,
            Binding::Summary => &self.summary,
            Binding::Partials => &self.partials,
        }
    }
}

/// The passes' bind groups over `buffers` and the two steps' outputs; each pass binds only
/// what its entry point uses (its layout is the one naga derives).
fn bind_groups(
    device: &wgpu::Device,
    passes: &Passes,
    buffers: &Buffers,
    step: &StepBuffers,
    recheck: &StepBuffers,
) -> BindGroups {
    use Binding::*;
    let bind = |pipeline: &wgpu::ComputePipeline, bindings: &[Binding]| {
        let entries: Vec<_> = bindings
            .iter()
            .map(|&binding| wgpu::BindGroupEntry {
                binding: binding as u32,
                resource: buffers.get(binding, step, recheck).as_entire_binding(),
            })
            .collect();
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        })
    };
    BindGroups {
        prepare: bind(&passes.prepare, &[Frame, Bodies, Velocities]),
        plan: bind(
            &passes.plan,
            &[
                Frame, Bodies, Velocities, Earliest, Planned, Plans, Levels, Summary,
            ],
        ),
        mark: bind(
            &passes.mark,
            &[Frame, PlannedEarliest, Plans, Levels, Conflicts, Summary],
        ),
        demote: bind(
            &passes.demote,
            &[
                Frame,
                Bodies,
                Planned,
                PlannedEarliest,
                Plans,
                Levels,
                Conflicts,
                Summary,
            ],
        ),
        commit: bind(
            &passes.commit,
            &[
                Frame, Bodies, Velocities, Planned, Plans, Levels, Summary, Partials,
            ],
        ),
    }
}

/// Where the capture readback holds each array, for `n` bodies.
struct CaptureLayout {
    before: u64,
    velocities_before: u64,
    earliest: u64,
    after: u64,
    velocities_after: u64,
    plans: u64,
    levels: u64,
}

impl CaptureLayout {
    fn new(n: u64) -> Self {
        Self {
            before: 0,
            velocities_before: 32 * n,
            earliest: 48 * n,
            after: 80 * n,
            velocities_after: 112 * n,
            plans: 128 * n,
            levels: 160 * n,
        }
    }
}

fn capture_size(n: u64) -> u64 {
    164 * n
}

/// Maps a `MAP_READ` buffer once the work submitted so far is done and copies it out.
fn read(device: &wgpu::Device, buffer: &wgpu::Buffer) -> Result<Vec<u8>, String> {
    common::read_mapped(device, buffer, <[u8]>::to_vec)
}

/// Totals over the run.
#[derive(Default)]
struct Totals {
    contacts: u64,
    pairs: u64,
    walls: u64,
    unmatched: u64,
    cut: u64,
    frozen: u64,
    rounds: u64,
    advanced: f64,
    device_time: Duration,
    check_time: Duration,
}

/// Runs the gas; whether every check passed.
fn run(context: &GpuContext, options: &Options) -> Result<bool, String> {
    let gas = Gas::new(options.bodies, options.seed);
    let sweep_options = SweepOptions::event_driven();
    println!("adapter: {}", context.describe());
    println!("host: {}", common::machine());
    println!(
        "{} bodies in a closed box of side {}, {} frames{}",
        options.bodies,
        gas.side,
        options.frames,
        if options.check { ", checked" } else { "" }
    );
    let mut resident = Resident::new(context, &gas, &sweep_options, StepCapacities::default())?;
    // Under --check the first step must be invalid: a walk budget of a few steps.
    let mut budget_lowered = options.check;
    if budget_lowered {
        resident
            .step
            .set_walk_budget(&resident.queue, LOWERED_BUDGET);
    }
    let mut checker = options.check.then(|| Checker::new(&gas, sweep_options));
    let mut totals = Totals::default();
    let mut last = None;
    let start_energy = energy(&gas.velocities);
    let mut energy_now = start_energy;
    let mut overflow_seen = false;
    for frame in 0..options.frames {
        let capture = options.check || frame + 1 == options.frames;
        let start = Instant::now();
        let mut whole = true;
        let mut rounds = 0;
        let outcome = loop {
            let outcome = resident.submit(whole, capture)?;
            rounds += 1;
            let summary = &outcome.summary;
            if summary.frame_valid == 0 {
                let counts = outcome.step_counts;
                if let Some(checker) = &mut checker {
                    checker.overflowed(&resident, frame, "the step on the bodies", &counts)?;
                    overflow_seen = true;
                }
                if counts.unfinished_queries != 0 && budget_lowered {
                    resident.step.set_walk_budget(&resident.queue, 0);
                    budget_lowered = false;
                    println!(
                        "frame {frame}: a walk ran past the budget of {LOWERED_BUDGET} steps: valid 0, nothing applied; budget restored, rerun"
                    );
                } else {
                    let grown = resident.grow(true, &counts)?;
                    println!(
                        "frame {frame}: the step was not valid ({counts:?}): nothing applied; grown to {grown:?}, rerun"
                    );
                }
                whole = true;
                continue;
            }
            if summary.plan_valid == 0 {
                let counts = outcome.recheck_counts;
                if let Some(checker) = &mut checker {
                    checker.overflowed(&resident, frame, "the step on the plans", &counts)?;
                }
                let grown = resident.grow(false, &counts)?;
                println!(
                    "frame {frame}: the step on the plans was not valid ({counts:?}): nothing applied; grown to {grown:?}, rerun"
                );
                whole = false;
                continue;
            }
            if summary.demoted_now != 0 {
                whole = false;
                continue;
            }
            if summary.committed == 0 {
                return Err(format!("frame {frame}: a settled round did not commit"));
            }
            break outcome;
        };
        totals.device_time += start.elapsed();
        let summary = outcome.summary;
        let (kinetic, advanced) = outcome.partials.iter().fold((0.0, 0.0), |(e, a), p| {
            (e + f64::from(p[0]), a + f64::from(p[1]))
        });
        energy_now = kinetic;
        let mean_advance = advanced / options.bodies as f64;
        totals.contacts += u64::from(summary.contacts);
        totals.pairs += u64::from(summary.pairs) / 2;
        totals.walls += u64::from(summary.walls);
        totals.unmatched += u64::from(summary.unmatched);
        totals.cut += u64::from(summary.cut);
        totals.frozen += u64::from(summary.frozen);
        totals.rounds += rounds;
        totals.advanced += advanced;
        print!(
            "frame {frame:>3}: {:>6} candidates, {:>6} contacts ({} pairs, {} walls, {} not mutual), {} cut, {} frozen, {rounds} submissions; advanced {:.4} of the frame a body; energy {kinetic:.6}",
            outcome.step_counts.candidates,
            summary.contacts,
            summary.pairs / 2,
            summary.walls,
            summary.unmatched,
            summary.cut,
            summary.frozen,
            mean_advance
        );
        if capture {
            let data = resident.read_capture()?;
            if let Some(checker) = &mut checker {
                let start = Instant::now();
                let verdict = checker.frame(frame, &data, context);
                totals.check_time += start.elapsed();
                println!("; check: {verdict}");
            } else {
                println!();
            }
            last = Some(data);
        } else {
            println!();
        }
    }

    let frames = options.frames as f64;
    let mean_advance = totals.advanced / (frames * options.bodies as f64);
    println!(
        "total: {} contacts over {} frames ({} mutually earliest pairs, {} wall hits, {} contacts not mutual; {} motions cut to the contact, {} frozen), {} submissions",
        totals.contacts,
        options.frames,
        totals.pairs,
        totals.walls,
        totals.unmatched,
        totals.cut,
        totals.frozen,
        totals.rounds
    );
    println!(
        "mean fraction of a frame advanced a body: {mean_advance:.4}; kinetic energy {start_energy:.6} at the start, {energy_now:.6} at the end (the device's f32 sums)"
    );
    println!(
        "time: {:.2?} on the device for {} frames ({:.2} frames a second, {:.1} ms a frame, readbacks of the summary included){}",
        totals.device_time,
        options.frames,
        frames / totals.device_time.as_secs_f64(),
        1e3 * totals.device_time.as_secs_f64() / frames,
        if options.check {
            format!(
                "; {:.2?} checking (and the frames ran with the copies --check reads)",
                totals.check_time
            )
        } else {
            String::new()
        }
    );
    if let Some(data) = &last {
        match draw(data, gas.side, options.frames - 1, &options.out) {
            Ok(()) => println!("picture: {}", options.out),
            Err(error) => return Err(format!("could not write {}: {error}", options.out)),
        }
    }
    let Some(checker) = checker else {
        return Ok(true);
    };
    Ok(checker.finish(mean_advance, overflow_seen))
}

/// `½ Σ m |v|²` in f64.
fn energy(velocities: &[[f32; 4]]) -> f64 {
    velocities
        .iter()
        .map(|v| {
            let speed = DVec3::new(v[0].into(), v[1].into(), v[2].into());
            0.5 * f64::from(v[3]) * speed.length_squared()
        })
        .sum()
}

fn sphere(body: &BodyRecord) -> MovingSphere {
    MovingSphere::new(
        Vec3::from_array(body.center),
        body.radius,
        Vec3::from_array(body.displacement),
    )
}

fn center(body: &BodyRecord) -> DVec3 {
    Vec3::from_array(body.center).as_dvec3()
}

/// `--check`'s state: the host's copy of the gas before each frame, the CPU step, and what
/// failed so far.
struct Checker {
    bodies: Vec<BodyRecord>,
    velocities: Vec<[f32; 4]>,
    walls: [Wall; 6],
    side: f64,
    options: SweepOptions,
    finder: cpu::ContactFinder,
    failures: Vec<String>,
    overflow_reported: bool,
    worst_overlap: f64,
    worst_energy: f64,
    energy_drift: f64,
    differing: usize,
}

impl Checker {
    fn new(gas: &Gas, options: SweepOptions) -> Self {
        Self {
            bodies: gas.bodies.clone(),
            velocities: gas.velocities.clone(),
            walls: gas.walls(),
            side: f64::from(gas.side),
            options,
            finder: cpu::ContactFinder::new(),
            failures: Vec::new(),
            overflow_reported: false,
            worst_overlap: 0.0,
            worst_energy: 0.0,
            energy_drift: 0.0,
            differing: 0,
        }
    }

    fn fail(&mut self, message: String) {
        eprintln!("FAIL: {message}");
        self.failures.push(message);
    }

    /// (4): a step that overflowed must leave the bodies and velocities as they were.
    fn overflowed(
        &mut self,
        resident: &Resident,
        frame: usize,
        which: &str,
        counts: &StepCounts,
    ) -> Result<(), String> {
        let data = resident.read_capture()?;
        let centres_kept = data
            .after
            .iter()
            .zip(&self.bodies)
            .all(|(a, b)| a.center == b.center && a.radius == b.radius);
        let velocities_kept = bytemuck::cast_slice::<_, u8>(&data.velocities_after)
            == bytemuck::cast_slice::<_, u8>(&self.velocities);
        println!(
            "frame {frame}: check (4): {which} was not valid (valid {}, unfinished walks {}, overflow flags {}/{}): bodies {}, velocities {}",
            counts.valid,
            counts.unfinished_queries,
            counts.candidates_overflowed,
            counts.contacts_overflowed,
            if centres_kept { "unchanged" } else { "CHANGED" },
            if velocities_kept {
                "unchanged"
            } else {
                "CHANGED"
            },
        );
        if !(centres_kept && velocities_kept) {
            self.fail(format!(
                "frame {frame}: {which} was not valid and the response still acted"
            ));
        }
        self.overflow_reported = true;
        Ok(())
    }

    /// Checks (1) to (3) on one frame; a one-line verdict.
    fn frame(&mut self, frame: usize, data: &Capture, context: &GpuContext) -> String {
        let failures = self.failures.len();
        // The frame started from the bodies and velocities the last one ended with.
        let started_right = data
            .before
            .iter()
            .zip(&self.bodies)
            .all(|(a, b)| a.center == b.center && a.radius == b.radius)
            && bytemuck::cast_slice::<_, u8>(&data.velocities_before)
                == bytemuck::cast_slice::<_, u8>(&self.velocities);
        if !started_right {
            self.fail(format!(
                "frame {frame}: the frame did not start where the last one ended"
            ));
        }
        let overlaps = self.pass_through(frame, data);
        let walls = self.walls_kept(frame, data);
        let differing = self.same_as_cpu(frame, data, context);
        let energy = self.energy(frame, data);
        self.bodies.clone_from(&data.after);
        self.velocities.clone_from(&data.velocities_after);
        let verdict = format!(
            "{overlaps} pairs of applied motions within reach, deepest {:.3} of its bound; walls {walls}; {differing} earliest differ from the CPU; energy change {:.3} of its bound",
            self.worst_overlap, energy
        );
        if self.failures.len() == failures {
            format!("pass ({verdict})")
        } else {
            format!("FAIL ({verdict})")
        }
    }

    /// (1) Sweeps the applied motions: every pair the CPU step finds within reach, judged
    /// by the f64 oracle. Returns how many pairs were judged.
    fn pass_through(&mut self, frame: usize, data: &Capture) -> usize {
        let applied: Vec<MovingSphere> = data
            .before
            .iter()
            .zip(&data.after)
            .map(|(before, after)| {
                let motion = center(after) - center(before);
                MovingSphere::new(
                    Vec3::from_array(before.center),
                    before.radius,
                    motion.as_vec3(),
                )
            })
            .collect();
        let contacts = match cpu::find_contacts(&applied, SweepOptions::default()) {
            Ok(contacts) => contacts,
            Err(error) => {
                self.fail(format!(
                    "frame {frame}: the CPU step on the applied motions: {error}"
                ));
                return 0;
            }
        };
        let mut judged = 0;
        for contact in contacts.contacts() {
            let [i, j] = contact.pair().unwrap().map(|k| k as usize);
            let (before, after) = (&data.before, &data.after);
            let a = Body {
                center: center(&before[i]),
                radius: f64::from(before[i].radius),
                displacement: center(&after[i]) - center(&before[i]),
            };
            let b = Body {
                center: center(&before[j]),
                radius: f64::from(before[j].radius),
                displacement: center(&after[j]) - center(&before[j]),
            };
            judged += 1;
            let Some(hit) = reference::sweep_sphere_sphere(&a, &b, SweepOptions::default()) else {
                continue;
            };
            let offset = b.center - a.center;
            let motion = a.displacement - b.displacement;
            let frame_motion = Vec3::from_array(before[i].displacement).as_dvec3()
                - Vec3::from_array(before[j].displacement).as_dvec3();
            let sum_radii = a.radius + b.radius;
            let scale = offset.length() + motion.length().max(frame_motion.length()) + sum_radii;
            let rounding =
                UNIT_ROUNDOFF * (center(&after[i]).length() + center(&after[j]).length());
            let bound = GPU_BOUND * EPSILON * scale * scale
                + 2.0 * sum_radii * rounding
                + rounding * rounding;
            let depth = -least_residual(offset, motion, sum_radii, hit.time_of_impact, 1.0);
            self.worst_overlap = self.worst_overlap.max(depth / bound);
            if depth > bound {
                self.fail(format!(
                    "frame {frame}: bodies {i} and {j} pass into each other: the applied motions meet at {:.6} and overlap by {depth:e} (squared), beyond the bound {bound:e}",
                    hit.time_of_impact
                ));
            }
        }
        judged
    }

    /// (1) No centre passes a wall: the heights at both ends of each (straight) motion.
    fn walls_kept(&mut self, frame: usize, data: &Capture) -> &'static str {
        let mut kept = true;
        for (k, (before, after)) in data.before.iter().zip(&data.after).enumerate() {
            for wall in 0..6 {
                let (height, scale) = self.height(before, wall, 0.0);
                let end = self.height(after, wall, 0.0).0;
                let axis = wall / 2;
                let bound = GPU_BOUND * EPSILON * scale
                    + UNIT_ROUNDOFF * f64::from(after.center[axis].abs());
                if height.min(end) < -bound {
                    kept = false;
                    self.fail(format!(
                        "frame {frame}: body {k} passes wall {wall} by {:e} (bound {bound:e})",
                        -height.min(end)
                    ));
                }
            }
        }
        if kept { "kept" } else { "CROSSED" }
    }

    /// The gap between `body` (moved by `t` of its displacement) and wall `wall` of the box
    /// (its height above the plane less its radius), and the scale of its rounding.
    fn height(&self, body: &BodyRecord, wall: usize, t: f64) -> (f64, f64) {
        let axis = wall / 2;
        let (plane, inward) = if wall.is_multiple_of(2) {
            (0.0, 1.0)
        } else {
            (self.side, -1.0)
        };
        let c = f64::from(body.center[axis]);
        let d = f64::from(body.displacement[axis]);
        let r = f64::from(body.radius);
        let height = inward * (c + d * t - plane);
        (height - r, (c - plane).abs() + d.abs() + r)
    }

    /// (2) The step's earliest contacts against the CPU step's; how many differ.
    fn same_as_cpu(&mut self, frame: usize, data: &Capture, context: &GpuContext) -> usize {
        let bodies: Vec<MovingSphere> = data.before.iter().map(sphere).collect();
        let walls = self.walls;
        let cpu = match self.finder.find_with_walls(&bodies, &walls, self.options) {
            Ok(contacts) => contacts.earliest_impacts(),
            Err(error) => {
                self.fail(format!("frame {frame}: the CPU step: {error}"));
                return 0;
            }
        };
        // Bit-equal is known of lavapipe alone (Mesa's software Vulkan adapter, measured);
        // llvmpipe through GL and real GPUs (an H200 through Vulkan: times 1 to 2 ulps
        // apart on 8 % of the bodies) are held to the bound.
        let info = context.adapter_info();
        let exact =
            info.backend == wgpu::Backend::Vulkan && info.device_type == wgpu::DeviceType::Cpu;
        let mut differing = 0;
        for (k, (gpu, cpu)) in data.earliest.iter().zip(&cpu).enumerate() {
            let gpu = gpu.decode();
            if gpu == *cpu {
                continue;
            }
            differing += 1;
            let accepted = !exact && self.within_bound(&data.before, k, gpu, *cpu);
            if !accepted {
                self.fail(format!(
                    "frame {frame}: body {k}: the GPU's earliest {gpu:?}, the CPU's {cpu:?}"
                ));
            }
        }
        self.differing += differing;
        differing
    }

    /// Off lavapipe: whether the GPU's earliest for body `k` is right within the parity bound where
    /// it differs from the CPU's: its own contact passes the judge, and the CPU's was not
    /// met before the GPU's time beyond the bound.
    fn within_bound(
        &self,
        bodies: &[BodyRecord],
        k: usize,
        gpu: Option<EarliestImpact>,
        cpu: Option<EarliestImpact>,
    ) -> bool {
        let tolerance = GPU_BOUND * EPSILON;
        let body = Body::from(sphere(&bodies[k]));
        let gpu_right = match gpu {
            None => true,
            Some(impact) => match impact.partner {
                Partner::Body { index, .. } => {
                    let other = Body::from(sphere(&bodies[index as usize]));
                    let time = Some((impact.time_of_impact, impact.status));
                    parity::check_time(&body, &other, self.options, time, GPU_BOUND)
                        .1
                        .is_none()
                }
                Partner::Wall { index } => {
                    let t = f64::from(impact.time_of_impact);
                    let (gap, scale) = self.height(&bodies[k], index as usize, t);
                    match impact.status {
                        ImpactStatus::Overlapping => gap <= tolerance * scale,
                        _ => gap.abs() <= tolerance * scale,
                    }
                }
            },
        };
        let until = gpu.map_or(1.0, |impact| f64::from(impact.time_of_impact));
        let cpu_not_skipped = match cpu {
            None => true,
            Some(impact) => match impact.partner {
                Partner::Body { index, .. } => {
                    let other = Body::from(sphere(&bodies[index as usize]));
                    let offset = other.center - body.center;
                    let motion = body.displacement - other.displacement;
                    let sum_radii = body.radius + other.radius;
                    let scale = offset.length() + motion.length() + sum_radii;
                    least_residual(offset, motion, sum_radii, 0.0, until)
                        >= -tolerance * scale * scale
                }
                Partner::Wall { index } => {
                    let (gap, scale) = self.height(&bodies[k], index as usize, until);
                    gap >= -tolerance * scale
                }
            },
        };
        gpu_right && cpu_not_skipped
    }

    /// (3) The energy may change only by the rounding of the collisions; the change as a
    /// fraction of its bound.
    fn energy(&mut self, frame: usize, data: &Capture) -> f64 {
        let mut bound = 0.0;
        for (k, plan) in data.plans.iter().enumerate() {
            let partner = plan.partner as usize;
            let collided = plan.kind == PLAN_PAIR
                && k < partner
                && data.levels[k] != LEVEL_FROZEN
                && data.levels[partner] != LEVEL_FROZEN;
            if collided {
                let [a, b] = [k, partner].map(|i| data.velocities_before[i]);
                let speed = |v: [f32; 4]| Vec3::new(v[0], v[1], v[2]).as_dvec3().length();
                let masses = f64::from(a[3]) + f64::from(b[3]);
                bound += ENERGY_BOUND * UNIT_ROUNDOFF * masses * (speed(a) + speed(b)).powi(2);
            }
        }
        let change = energy(&data.velocities_after) - energy(&data.velocities_before);
        self.energy_drift += change;
        let ratio = if bound > 0.0 {
            change.abs() / bound
        } else if change == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
        self.worst_energy = self.worst_energy.max(ratio);
        if ratio > 1.0 {
            self.fail(format!(
                "frame {frame}: the kinetic energy changed by {change:e}, beyond the bound {bound:e}"
            ));
        }
        ratio
    }

    /// (3) and (4) over the run; prints the verdict and returns it.
    fn finish(mut self, mean_advance: f64, overflow_seen: bool) -> bool {
        if mean_advance <= LEAST_MEAN_ADVANCE {
            self.fail(format!(
                "the bodies advanced {mean_advance:.4} of a frame on average, not above {LEAST_MEAN_ADVANCE}"
            ));
        }
        if !(overflow_seen && self.overflow_reported) {
            self.fail("no step was invalid under the lowered walk budget".into());
        }
        let energy = energy(&self.velocities);
        println!(
            "checks: kinetic energy {energy:.9} at the end, drift {:e} (relative {:e}), worst frame {:.3} of its bound; deepest meeting of applied motions {:.3} of its bound; {} earliest contacts differed from the CPU's",
            self.energy_drift,
            self.energy_drift / energy,
            self.worst_energy,
            self.worst_overlap,
            self.differing
        );
        if self.failures.is_empty() {
            println!("checks: PASS");
            true
        } else {
            println!("checks: FAIL ({} failures)", self.failures.len());
            false
        }
    }
}

/// The least of `(|s - v x|² - R²)` over x in [from, to] (a convex quadratic: at an end or
/// at its vertex), in f64.
fn least_residual(offset: DVec3, motion: DVec3, sum_radii: f64, from: f64, to: f64) -> f64 {
    let residual = |x: f64| (offset - motion * x).length_squared() - sum_radii * sum_radii;
    let speed = motion.length_squared();
    let vertex = if speed > 0.0 {
        (offset.dot(motion) / speed).clamp(from, to)
    } else {
        from
    };
    residual(from).min(residual(to)).min(residual(vertex))
}

/// Where body `k` touched its partner or its wall, for a body whose pair collided or which
/// hit a wall (and was not frozen).
fn contact_centre(data: &Capture, k: usize) -> Option<Vec3> {
    let (plan, body) = (&data.plans[k], &data.before[k]);
    let collided = match plan.kind {
        PLAN_PAIR => data.levels[plan.partner as usize] != LEVEL_FROZEN,
        PLAN_WALL => true,
        _ => false,
    };
    (collided && data.levels[k] != LEVEL_FROZEN).then(|| {
        Vec3::from_array(body.center) + Vec3::from_array(body.displacement) * plan.fraction
    })
}

/// Pixels a unit of length, the side of the window drawn (units) and the margin (pixels).
const SCALE: f32 = 48.0;
const WINDOW: f32 = 16.0;
const MARGIN: f32 = 24.0;
const LEGEND: f32 = 64.0;

/// The last frame in a slab of the box (centres within 1.5 of its middle plane z = side/2),
/// seen from +z, in the window [0, 16]² at the corner of the box: each body's start (faint),
/// its path and its end, coloured by its plan; each contact point.
fn draw(data: &Capture, side: f32, frame: usize, out: &str) -> Result<(), String> {
    let window = WINDOW.min(side);
    let size = (2.0 * MARGIN + window * SCALE).ceil() as u32;
    let mut pixmap = Pixmap::new(size, size + LEGEND as u32).ok_or("the picture's size")?;
    pixmap.fill(Color::from_rgba8(16, 18, 28, 255));
    let pixel = |x: f32, y: f32| (MARGIN + x * SCALE, MARGIN + (window - y) * SCALE);
    // The box's two faces x = 0 and y = 0.
    let mut faces = PathBuilder::new();
    let corner = pixel(0.0, 0.0);
    faces.move_to(pixel(0.0, window).0, pixel(0.0, window).1);
    faces.line_to(corner.0, corner.1);
    faces.line_to(pixel(window, 0.0).0, pixel(window, 0.0).1);
    if let Some(path) = faces.finish() {
        let stroke = Stroke {
            width: 3.0,
            ..Stroke::default()
        };
        pixmap.stroke_path(
            &path,
            &paint([200, 200, 210], 255),
            &stroke,
            Transform::identity(),
            None,
        );
    }
    let colour = |k: usize| -> [u8; 3] {
        match data.levels[k] {
            LEVEL_FROZEN => return [60, 200, 255],
            LEVEL_WHOLE => {}
            _ => return [210, 90, 255],
        }
        match data.plans[k].kind {
            PLAN_PAIR => [255, 70, 70],
            PLAN_WALL => [255, 220, 0],
            PLAN_UNMATCHED => [255, 150, 40],
            PLAN_FREE => [130, 140, 160],
            _ => [255, 0, 255],
        }
    };
    let shown = |body: &BodyRecord| {
        let [x, y, z] = body.center;
        (z - side / 2.0).abs() < 1.5 && x < window + 1.0 && y < window + 1.0
    };
    let line = Stroke {
        width: 2.0,
        ..Stroke::default()
    };
    let circle = |pixmap: &mut Pixmap, at: [f32; 2], radius: f32, rgb: [u8; 3], alpha: u8| {
        let (x, y) = pixel(at[0], at[1]);
        if let Some(path) = PathBuilder::from_circle(x, y, radius * SCALE) {
            pixmap.fill_path(
                &path,
                &paint(rgb, alpha),
                FillRule::Winding,
                Transform::identity(),
                None,
            );
        }
    };
    for (k, (before, after)) in data.before.iter().zip(&data.after).enumerate() {
        if !shown(before) {
            continue;
        }
        let rgb = colour(k);
        circle(
            &mut pixmap,
            [before.center[0], before.center[1]],
            before.radius,
            rgb,
            50,
        );
        // A body that bounced and went on: its path bends at the contact.
        let mut corners = vec![before.center];
        if let Some(contact) = contact_centre(data, k) {
            corners.push(contact.to_array());
        }
        corners.push(after.center);
        let mut path = PathBuilder::new();
        for (n, corner) in corners.iter().enumerate() {
            let (x, y) = pixel(corner[0], corner[1]);
            if n == 0 {
                path.move_to(x, y);
            } else {
                path.line_to(x, y);
            }
        }
        if let Some(path) = path.finish() {
            pixmap.stroke_path(&path, &paint(rgb, 220), &line, Transform::identity(), None);
        }
        circle(
            &mut pixmap,
            [after.center[0], after.center[1]],
            after.radius,
            rgb,
            200,
        );
    }
    // The contact points: on the surface of each body towards its partner or its wall.
    for (k, before) in data.before.iter().enumerate() {
        let plan = &data.plans[k];
        let Some(centre) = contact_centre(data, k).filter(|_| shown(before)) else {
            continue;
        };
        let towards = if plan.kind == PLAN_PAIR {
            let partner = plan.partner as usize;
            let there = contact_centre(data, partner).unwrap_or(centre);
            (there - centre).normalize_or_zero()
        } else {
            let mut normal = Vec3::ZERO;
            normal[plan.partner as usize / 2] = if plan.partner.is_multiple_of(2) {
                -1.0
            } else {
                1.0
            };
            normal
        };
        let point = centre + towards * before.radius;
        circle(&mut pixmap, [point.x, point.y], 0.07, [255, 255, 255], 255);
    }
    let top = size as f32 + 4.0;
    text(
        &mut pixmap,
        &format!(
            "resident_step: frame {frame}, |z - {:.0}| < 1.5",
            side / 2.0
        ),
        MARGIN,
        top,
        2.0,
        [230, 230, 230],
    );
    let mut x = MARGIN;
    for (label, rgb) in [
        ("free", [130, 140, 160]),
        ("pair", [255, 70, 70]),
        ("wall", [255, 220, 0]),
        ("not mutual", [255, 150, 40]),
        ("cut", [210, 90, 255]),
        ("frozen", [60, 200, 255]),
        ("contact", [255, 255, 255]),
    ] {
        text(&mut pixmap, label, x, top + 24.0, 2.0, rgb);
        x += (label.len() as f32 + 1.5) * 16.0;
    }
    if let Some(folder) = std::path::Path::new(out).parent() {
        std::fs::create_dir_all(folder).map_err(|e| e.to_string())?;
    }
    pixmap.save_png(out).map_err(|e| e.to_string())
}
