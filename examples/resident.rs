//! A resident simulation: the bodies live on the device for the whole run.
//!
//! Every step records, into one command encoder and one submission:
//! 1. the sweep stage ([`SweepStage::record`]) on the bodies as they are, over a fixed list of
//!    candidate pairs (every pair of the bodies, uploaded once);
//! 2. a copy of the impact records to a host-visible buffer: the only thing read back each
//!    step (a simulation needs each contact's time, point and normal to respond to it; here
//!    the host counts the contacts and judges them);
//! 3. the example's own compute pass (`move_bodies` below, its own pipeline): each body moves
//!    by its displacement and reflects off the walls of a cube, written in place as the next
//!    step's [`BodyRecord`]s.
//!
//! The host mirrors the motion in f32 with the shader's arithmetic (one addition, and at a
//! wall one subtraction from an exact doubling: each correctly rounded in WGSL and in Rust),
//! so the device's positions should equal the host's to the bit; the run reads the bodies
//! back once, after the last step, and checks that they do. Every step's records are
//! judged against the host's bodies with [`parity::compare`] at [`GPU_BOUND`]. Bodies do not
//! respond to contacts: the example shows the data flow, not a collision response.
//!
//! ```text
//! cargo run --release --example resident -- [--steps N] [--bodies N] [--seed S]
//! ```
//!
//! Exits 1 when a check fails, 2 when no GPU adapter is found, 3 on bad arguments.

mod common;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use common::parse;
use sweepcast::glam::Vec3;
use sweepcast::gpu::{GpuContext, SHARED_WGSL, SweepStage};
use sweepcast::layout::{BodyRecord, ImpactRecord, WORKGROUP_SIZE};
use sweepcast::parity::{self, GPU_BOUND};
use sweepcast::{ImpactStatus, MovingSphere, SweepOptions};
use testkit::SplitMix64;
use wgpu::BufferUsages as Usage;
use wgpu::util::DeviceExt;

/// The example's own pass: move each body by its displacement and reflect it off the walls
/// of the cube [0, side]^3 (its centre kept within [radius, side - radius] on each axis).
/// `shared.wgsl` (for `BodyRecord`) is prepended.
const MOVE_WGSL: &str = "
struct World {
    side: f32,
    count: u32,
    _pad0: u32,
    _pad1: u32,
}
@group(0) @binding(0) var<storage, read_write> bodies: array<BodyRecord>;
@group(0) @binding(1) var<uniform> world: World;

@compute @workgroup_size(64)
fn move_bodies(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= world.count) {
        return;
    }
    let body = bodies[id.x];
    let low = vec3<f32>(body.radius);
    let high = vec3<f32>(world.side - body.radius);
    let moved = body.center + body.displacement;
    let below = moved < low;
    let above = moved > high;
    var center = select(moved, 2.0 * low - moved, below);
    center = select(center, 2.0 * high - moved, above);
    let displacement = select(body.displacement, -body.displacement, below | above);
    bodies[id.x] = BodyRecord(center, body.radius, displacement, 0.0);
}
";

/// `move_bodies` on the host, with the same operations in the same order.
fn move_body(body: &BodyRecord, side: f32) -> BodyRecord {
    let (low, high) = (body.radius, side - body.radius);
    let mut center = [0.0; 3];
    let mut displacement = [0.0; 3];
    for axis in 0..3 {
        let moved = body.center[axis] + body.displacement[axis];
        let (below, above) = (moved < low, moved > high);
        center[axis] = if below {
            2.0 * low - moved
        } else if above {
            2.0 * high - moved
        } else {
            moved
        };
        displacement[axis] = if below || above {
            -body.displacement[axis]
        } else {
            body.displacement[axis]
        };
    }
    BodyRecord {
        center,
        radius: body.radius,
        displacement,
        _pad: 0.0,
    }
}

struct Options {
    steps: usize,
    bodies: usize,
    seed: u64,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        steps: 40,
        bodies: 400,
        seed: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--steps" => options.steps = parse(&value()?)?,
            "--bodies" => options.bodies = parse(&value()?)?,
            "--seed" => options.seed = parse(&value()?)?,
            "--help" | "-h" => {
                return Err("usage: resident [--steps N] [--bodies N] [--seed S]".into());
            }
            other => return Err(format!("unknown option {other}; try --help")),
        }
    }
    if options.bodies < 2 {
        return Err("--bodies must be at least 2".into());
    }
    Ok(options)
}

/// The side of the cube for `count` bodies: 8 units of volume a body.
fn box_side(count: usize) -> f32 {
    2.0 * (count as f32).cbrt()
}

/// Bodies of radius 0.1 to 0.4 scattered in the cube, each moving up to 0.6 a step.
fn initial_bodies(count: usize, side: f32, seed: u64) -> Vec<BodyRecord> {
    let mut rng = SplitMix64::new(seed);
    (0..count)
        .map(|_| {
            let radius = rng.range(0.1, 0.4) as f32;
            let mut coordinate = || rng.range(f64::from(radius), f64::from(side - radius)) as f32;
            let center = [coordinate(), coordinate(), coordinate()];
            BodyRecord {
                center,
                radius,
                displacement: rng.in_ball(0.6, 3).to_array(),
                _pad: 0.0,
            }
        })
        .collect()
}

fn sphere(body: &BodyRecord) -> MovingSphere {
    MovingSphere::new(
        Vec3::from_array(body.center),
        body.radius,
        Vec3::from_array(body.displacement),
    )
}

/// Maps a `MAP_READ` buffer once the work submitted so far is done and copies it out.
fn read(device: &wgpu::Device, buffer: &wgpu::Buffer) -> Result<Vec<u8>, String> {
    let slice = buffer.slice(..);
    let (sender, receiver) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |result| {
        let _ = sender.send(result);
    });
    common::wait_for(device)?;
    receiver
        .recv()
        .map_err(|error| error.to_string())?
        .map_err(|error| format!("mapping the readback: {error}"))?;
    let bytes = slice
        .get_mapped_range()
        .map_err(|error| error.to_string())?
        .to_vec();
    buffer.unmap();
    Ok(bytes)
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => return common::bad_options(&message),
    };
    let context = match GpuContext::new_blocking() {
        Ok(context) => context,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let stage = match SweepStage::new(context.device()) {
        Ok(stage) => stage,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    // Every pair of the bodies must fit in one binding (and one dispatch's u32 count).
    let pair_count = (options.bodies as u64) * (options.bodies as u64 - 1) / 2;
    if pair_count > stage.max_pairs().min(u64::from(u32::MAX)) {
        return common::bad_options(&format!(
            "{} bodies make {pair_count} pairs, more than one binding of this device holds ({}); use fewer bodies",
            options.bodies,
            stage.max_pairs()
        ));
    }
    match run(&context, &stage, &options) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the simulation; whether every check passed.
fn run(context: &GpuContext, stage: &SweepStage, options: &Options) -> Result<bool, String> {
    let (device, queue) = (context.device(), context.queue());
    let count = options.bodies;
    let pairs: Vec<[u32; 2]> = (0..count as u32)
        .flat_map(|i| (i + 1..count as u32).map(move |j| [i, j]))
        .collect();
    let side = box_side(count);
    let sweep_options = SweepOptions::default();
    println!("adapter: {}", context.describe());
    println!(
        "{} steps, {count} bodies in a cube of side {side:.2}, {} pairs (every pair, uploaded once)",
        options.steps,
        pairs.len()
    );

    // The device's buffers: bodies (written once here, then only by the passes), pairs
    // (uploaded once), impact records and their host-visible copy.
    let mut bodies = initial_bodies(count, side, options.seed);
    let body_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("resident bodies"),
        contents: bytemuck::cast_slice(&bodies),
        usage: Usage::STORAGE | Usage::COPY_SRC,
    });
    let pair_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("resident pairs"),
        contents: bytemuck::cast_slice(&pairs),
        usage: Usage::STORAGE,
    });
    let record_bytes = (pairs.len() * size_of::<ImpactRecord>()) as u64;
    let buffer = |label, size, usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        })
    };
    let impact_buffer = buffer(
        "resident impacts",
        record_bytes,
        Usage::STORAGE | Usage::COPY_SRC,
    );
    let readback = buffer(
        "resident readback",
        record_bytes,
        Usage::MAP_READ | Usage::COPY_DST,
    );
    let sweep = stage
        .bind_buffers(device, &body_buffer, &pair_buffer, &impact_buffer)
        .map_err(|error| error.to_string())?;

    // The example's own pass on the same body buffer.
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("move_bodies"),
        source: wgpu::ShaderSource::Wgsl(format!("{SHARED_WGSL}{MOVE_WGSL}").into()),
    });
    let move_pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("move_bodies"),
        layout: None,
        module: &module,
        entry_point: Some("move_bodies"),
        compilation_options: Default::default(),
        cache: None,
    });
    let world = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("world"),
        contents: bytemuck::cast_slice(&[side.to_bits(), count as u32, 0, 0]),
        usage: Usage::UNIFORM,
    });
    let move_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("move_bodies"),
        layout: &move_pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: body_buffer.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: world.as_entire_binding(),
            },
        ],
    });
    let move_workgroups = (count as u32).div_ceil(WORKGROUP_SIZE);

    let (mut total_contacts, mut total_overlaps, mut failed_steps) = (0, 0, 0);
    let mut reflections = 0;
    let (mut device_time, mut check_time) = (Duration::ZERO, Duration::ZERO);
    let mut max_backward_error: f64 = 0.0;
    let mut impacts = Vec::with_capacity(pairs.len());
    for step in 0..options.steps {
        let start = Instant::now();
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("resident step"),
        });
        stage
            .record(
                queue,
                &mut encoder,
                &sweep,
                pairs.len() as u32,
                &sweep_options,
            )
            .map_err(|error| error.to_string())?;
        encoder.copy_buffer_to_buffer(&impact_buffer, 0, &readback, 0, record_bytes);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("move_bodies"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&move_pipeline);
            pass.set_bind_group(0, &move_group, &[]);
            pass.dispatch_workgroups(move_workgroups, 1, 1);
        }
        queue.submit([encoder.finish()]);
        let bytes = read(device, &readback)?;
        device_time += start.elapsed();

        // The host's side: decode against its own copy of the bodies, judge, move them.
        let start = Instant::now();
        let records: &[ImpactRecord] = bytemuck::cast_slice(&bytes);
        impacts.clear();
        impacts.extend(
            records.iter().zip(&pairs).map(|(record, &[i, j])| {
                record.to_impact(&bodies[i as usize], &bodies[j as usize])
            }),
        );
        let spheres: Vec<MovingSphere> = bodies.iter().map(sphere).collect();
        let report = parity::compare(&spheres, &pairs, &sweep_options, &impacts, GPU_BOUND);
        let hits: Vec<_> = impacts.iter().flatten().collect();
        let overlaps = hits
            .iter()
            .filter(|impact| impact.status == ImpactStatus::Overlapping)
            .count();
        total_contacts += hits.len();
        total_overlaps += overlaps;
        max_backward_error = max_backward_error.max(report.max_backward_error);
        println!(
            "step {step:>4}: {:>5} contacts ({overlaps} overlapping at t = 0); judge: {}",
            hits.len(),
            if report.passed() {
                format!(
                    "pass (max backward error {:.3} eps)",
                    report.max_backward_error
                )
            } else {
                format!("FAIL: {report}")
            }
        );
        if !report.passed() {
            failed_steps += 1;
        }
        for body in &mut bodies {
            let moved = move_body(body, side);
            reflections += (0..3)
                .filter(|&axis| moved.displacement[axis] != body.displacement[axis])
                .count();
            *body = moved;
        }
        check_time += start.elapsed();
    }

    // Once, after the last step: the device's bodies against the host's mirror, to the bit.
    let body_readback = buffer(
        "resident body readback",
        body_buffer.size(),
        Usage::MAP_READ | Usage::COPY_DST,
    );
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&body_buffer, 0, &body_readback, 0, body_buffer.size());
    queue.submit([encoder.finish()]);
    let device_bodies: Vec<BodyRecord> =
        bytemuck::pod_collect_to_vec(&read(device, &body_readback)?);
    let differing = device_bodies
        .iter()
        .zip(&bodies)
        .filter(|(gpu, cpu)| bytemuck::bytes_of(*gpu) != bytemuck::bytes_of(*cpu))
        .count();

    println!(
        "total: {total_contacts} contacts over {} steps ({total_overlaps} overlapping at t = 0), {:.1} a step",
        options.steps,
        total_contacts as f64 / options.steps.max(1) as f64
    );
    println!(
        "time: {:.2?} on the device and reading back, {:.2?} on the host (oracle judge and mirror)",
        device_time, check_time
    );
    println!(
        "bodies after {} steps ({reflections} reflections off the walls): {} of {count} differ from the host's f32 mirror ({})",
        options.steps,
        differing,
        if differing == 0 {
            "equal to the bit"
        } else {
            "FAIL"
        }
    );
    let passed = failed_steps == 0 && differing == 0;
    if passed {
        println!(
            "checks: PASS (every step within {GPU_BOUND} eps of the oracle, max {max_backward_error:.3} eps; positions equal to the bit)"
        );
    } else {
        println!(
            "checks: FAIL ({failed_steps} steps beyond the bound, {differing} bodies off the mirror)"
        );
    }
    Ok(passed)
}
