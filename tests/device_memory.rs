//! A buffer the device cannot back (issue 33, point 5): a typed error on every blocking GPU
//! path, and the same pipeline works afterwards.
//!
//! A software adapter's memory is the host's, so the device runs out of it when the process
//! does: each case runs in a child process of its own (`common::run_isolated`) that makes its
//! pipeline and inputs, then lowers its own address-space limit (`RLIMIT_AS`) to what it uses
//! plus [`SLACK`], calls with a batch whose buffers need several times that, and raises the
//! limit again. The driver's allocation fails (`VK_ERROR_OUT_OF_DEVICE_MEMORY` from lavapipe),
//! wgpu reports its out-of-memory error, and the call must return
//! [`Error::OutOfDeviceMemory`] with the caller's vector empty; then, with memory free again,
//! a small call and the large one must give exactly what they gave before the failure
//! (the same device, the same inputs: to the bit).
//!
//! The host's own allocations under the limit stay small: every input and the output's
//! capacity are made before the limit is lowered, and [`SLACK`] leaves room for the call's
//! bookkeeping. Where the host runs out first, Rust aborts the child and the test fails with
//! its output (never a hang: the child has a timeout). Lavapipe only, as measured: through
//! GL, llvmpipe's failed allocation reaches wgpu as a validation error on an invalid buffer
//! (`Error::Device`, not out of memory) and the GL context is lost, so every later call is
//! `Error::Device` (lost) until a new `GpuContext`; and a real GPU's memory is not the host's.
#![cfg(all(target_os = "linux", feature = "gpu"))]

mod common;

use std::time::Duration;

use glam::Vec3;

use sweepcast::Error;
use sweepcast::gpu::{ContactPipeline, GpuContext, StepCapacities, SweepPipeline};
use sweepcast::low_level::StepStage;
use sweepcast::{MovingSphere, SweepOptions};

/// Address space the child may add while the limit holds: room for the host's bookkeeping
/// of a call (thread-local packing blocks, wgpu's command records), far below the device
/// memory the large batch needs (100 MiB or more for each path, [`LARGE_BODIES`]).
const SLACK: u64 = 48 << 20;

/// A child's wall-clock limit: lavapipe sweeps the large batches twice in well under a
/// minute here; the limit only ends a hang.
const TIMEOUT: Duration = Duration::from_secs(600);

const TEST: &str = "a_buffer_the_device_cannot_back_is_a_typed_error_and_the_pipeline_recovers";

/// Bodies of the large batch: 2^20 bodies (32 MiB on the device, as much again to upload),
/// with 2^22 pairs, which the split rule cuts into four chunks of 2^20 (8 MiB of pairs three
/// times, device and two uploads; 32 MiB of impacts three times, device and two readbacks):
/// about 184 MiB for the sweep, 100 MiB for the times, and the step's buffers for 2^20
/// bodies (well above 300 MiB) for `find`.
const LARGE_BODIES: usize = 1 << 20;
const LARGE_PAIRS: usize = 1 << 22;

/// A line of spheres closing on their neighbours: every pair of the batch a contact or a
/// miss by construction, so that the answers compared after recovery are not all misses.
fn world(count: usize) -> Vec<MovingSphere> {
    (0..count)
        .map(|i| {
            let x = i as f32 * 3.0;
            let towards = if i % 2 == 0 { 1.5 } else { -1.5 };
            MovingSphere::new(
                Vec3::new(x, (i % 7) as f32 * 0.25, 0.0),
                1.0,
                Vec3::X * towards,
            )
        })
        .collect()
}

fn pairs(bodies: usize, count: usize) -> Vec<[u32; 2]> {
    (0..count)
        .map(|k| {
            let a = k % bodies;
            let b = (a + 1 + k / bodies) % bodies;
            [a as u32, b as u32]
        })
        .collect()
}

/// The process's address space now, in bytes (`VmSize` of `/proc/self/status`).
fn address_space() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|line| line.starts_with("VmSize:"))
        .expect("a VmSize line");
    let kib: u64 = line
        .trim_start_matches("VmSize:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .expect("VmSize in kB");
    kib << 10
}

fn set_soft_limit(bytes: libc::rlim_t) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain system calls on a valid, writable `rlimit`.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_AS, &mut limit), 0);
        limit.rlim_cur = bytes.min(limit.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_AS, &limit), 0);
    }
}

/// Runs `call` with the address space limited to what the process uses now plus [`SLACK`],
/// then lifts the limit.
fn with_memory_taken<T>(call: impl FnOnce() -> T) -> T {
    set_soft_limit(address_space() + SLACK);
    let result = call();
    set_soft_limit(libc::RLIM_INFINITY);
    result
}

fn expect_out_of_memory<T: std::fmt::Debug>(path: &str, result: Result<T, Error>) {
    match result {
        Err(Error::OutOfDeviceMemory(message)) => {
            eprintln!("{path}: out of device memory, as due: {message}");
        }
        other => panic!("{path}: expected Error::OutOfDeviceMemory, got {other:?}"),
    }
}

/// The answers of `pipeline` for `bodies` and `pairs`, printed (so that both outputs compare
/// as one type, to the bit: `Debug` of f32 round-trips).
fn swept(
    pipeline: &SweepPipeline,
    bodies: &[MovingSphere],
    pairs: &[[u32; 2]],
    times_only: bool,
) -> Result<Vec<String>, Error> {
    let options = SweepOptions::DEFAULT;
    Ok(if times_only {
        let times = pipeline.times_of_impact(bodies, pairs, options)?;
        times.iter().map(|time| format!("{time:?}")).collect()
    } else {
        let impacts = pipeline.sweep(bodies, pairs, options)?;
        impacts.iter().map(|impact| format!("{impact:?}")).collect()
    })
}

fn sweep_case(context: &GpuContext, times_only: bool) {
    let path = if times_only {
        "times_of_impact"
    } else {
        "sweep"
    };
    let small = world(4096);
    let small_pairs = pairs(small.len(), 8192);
    let large = world(LARGE_BODIES);
    let large_pairs = pairs(large.len(), LARGE_PAIRS);
    let options = SweepOptions::DEFAULT;
    let reference = SweepPipeline::new(context).expect("a pipeline");
    let small_before = swept(&reference, &small, &small_pairs, times_only).expect("before");
    drop(reference);
    // A fresh pipeline, so that its buffers must grow under the limit; the outputs' capacity
    // made before it.
    let pipeline = SweepPipeline::new(context).expect("a pipeline");
    let mut times = Vec::with_capacity(LARGE_PAIRS);
    let mut impacts = Vec::with_capacity(LARGE_PAIRS);
    let failed = with_memory_taken(|| {
        if times_only {
            pipeline.times_of_impact_into(&large, &large_pairs, options, &mut times)
        } else {
            pipeline.sweep_into(&large, &large_pairs, options, &mut impacts)
        }
    });
    expect_out_of_memory(path, failed);
    assert!(
        times.is_empty() && impacts.is_empty(),
        "{path}: left results behind"
    );
    // Memory is free again: the same pipeline answers as the reference did, to the bit, and
    // takes the large batch.
    let small_after = swept(&pipeline, &small, &small_pairs, times_only);
    assert_eq!(
        small_after.expect("after"),
        small_before,
        "{path}: the answers differ"
    );
    let large_after = swept(&pipeline, &large, &large_pairs, times_only);
    let large_after = large_after.unwrap_or_else(|error| panic!("{path}: large after: {error}"));
    assert_eq!(large_after.len(), LARGE_PAIRS);
}

fn find_case(context: &GpuContext, earliest: bool) {
    let small = world(4096);
    let large = world(LARGE_BODIES);
    let options = SweepOptions::DEFAULT;
    let answer = |pipeline: &ContactPipeline, bodies: &[MovingSphere]| {
        if earliest {
            let found = pipeline
                .find_earliest(bodies, &[], options)
                .expect("earliest");
            format!("{found:?}")
        } else {
            let found = pipeline.find(bodies, options).expect("contacts");
            format!("{found:?}")
        }
    };
    let reference = ContactPipeline::new(context).expect("a pipeline");
    let small_before = answer(&reference, &small);
    drop(reference);
    let pipeline = ContactPipeline::new(context).expect("a pipeline");
    // How many bodies or contacts the large world gives, or the error.
    let count = |pipeline: &ContactPipeline| {
        if earliest {
            pipeline
                .find_earliest(&large, &[], options)
                .map(|found| found.len())
        } else {
            pipeline
                .find(&large, options)
                .map(|found| found.contacts().len())
        }
    };
    let failed = with_memory_taken(|| count(&pipeline));
    let path = if earliest { "find_earliest" } else { "find" };
    expect_out_of_memory(path, failed);
    assert_eq!(
        answer(&pipeline, &small),
        small_before,
        "{path}: the answers after differ"
    );
    let found = count(&pipeline);
    let found = found.unwrap_or_else(|error| panic!("{path}: the large world after: {error}"));
    eprintln!("{path}: {found} after the failure");
}

/// Bodies set once (`SweepPipeline::set_bodies`): the upload fails, no bodies are set, and
/// once memory is free they are set again and answer as a call given them.
fn set_bodies_case(context: &GpuContext) {
    let large = world(LARGE_BODIES);
    let large_pairs = pairs(large.len(), LARGE_PAIRS);
    let options = SweepOptions::DEFAULT;
    let pipeline = SweepPipeline::new(context).expect("a pipeline");
    let failed = with_memory_taken(|| pipeline.set_bodies(&large, options));
    expect_out_of_memory("set_bodies", failed);
    let mut times = Vec::with_capacity(LARGE_PAIRS);
    let none_set = pipeline.times_of_impact_pairs_into(&large_pairs[..10], &mut times);
    assert!(
        matches!(none_set, Err(Error::InvalidBuffer { name: "bodies", .. })),
        "set_bodies: {none_set:?}"
    );
    pipeline
        .set_bodies(&large, options)
        .expect("set_bodies after");
    pipeline
        .times_of_impact_pairs_into(&large_pairs, &mut times)
        .expect("the pairs after");
    let given = pipeline.times_of_impact(&large, &large_pairs, options);
    let given = given.expect("a call given the bodies");
    let bits = |times: &[sweepcast::TimeOfImpact]| format!("{times:?}");
    assert!(
        bits(&times) == bits(&given),
        "set_bodies: the answers differ"
    );
}

/// The resident step's own buffers, made by the caller over its body buffer: the lowest
/// level, where the caller holds the buffers between steps.
fn step_buffers_case(context: &GpuContext) {
    let (device, queue) = (context.device(), context.queue());
    let stage = StepStage::for_adapter(device, context.adapter_info()).expect("a stage");
    let bodies = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("the caller's bodies"),
        size: 32 * LARGE_BODIES as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let options = SweepOptions::DEFAULT;
    let capacities = StepCapacities::for_bodies(LARGE_BODIES as u64);
    let failed = with_memory_taken(|| {
        stage
            .create_buffers(device, queue, &bodies, options, capacities, true)
            .map(|_| ())
    });
    expect_out_of_memory("StepStage::create_buffers", failed);
    let made = stage.create_buffers(device, queue, &bodies, options, capacities, true);
    made.unwrap_or_else(|error| panic!("StepStage::create_buffers after: {error}"));
}

fn run_case(case: &str) {
    let Some(context) = common::gpu_context(TEST) else {
        return;
    };
    if !common::lavapipe(context.adapter_info()) {
        eprintln!(
            "{TEST}: not lavapipe ({}), nothing to run",
            context.describe()
        );
        return;
    }
    match case {
        "sweep" => sweep_case(&context, false),
        "times_of_impact" => sweep_case(&context, true),
        "find" => find_case(&context, false),
        "find_earliest" => find_case(&context, true),
        "step_buffers" => step_buffers_case(&context),
        "set_bodies" => set_bodies_case(&context),
        other => panic!("no case {other}"),
    }
}

#[test]
fn a_buffer_the_device_cannot_back_is_a_typed_error_and_the_pipeline_recovers() {
    if let Some(case) = common::isolated_case() {
        run_case(&case);
        return;
    }
    for case in [
        "sweep",
        "times_of_impact",
        "find",
        "find_earliest",
        "step_buffers",
        "set_bodies",
    ] {
        let outcome = common::run_isolated(TEST, case, TIMEOUT, libc::RLIM_INFINITY);
        assert!(outcome.passed(), "{outcome}");
        eprintln!(
            "{case}: passed in {:.1?}; its output:\n{}",
            outcome.elapsed, outcome.output
        );
    }
}
