//! The sweep stage as a caller uses it: on a device the caller made, with buffers the caller
//! owns, recorded into the caller's encoder beside the caller's own passes.
//!
//! * `caller_device_and_buffers_match_the_pipeline_and_the_cpu_twin`: the stage on caller
//!   buffers gives exactly (`==`) the answers of `SweepPipeline::sweep` (on the same device,
//!   wrapped, and on the default context), and passes the judge beside its CPU twin.
//! * `record_indirect_sweeps_the_count_the_device_wrote`: a count written by the caller's own
//!   compute pass in the same encoder drives the sweep; the records equal a direct `record`
//!   of that count, a count above the capacity sweeps the capacity and says so.
//! * `record_indirect_runs_two_dimensional_dispatches`: more than 65,535 workgroups.
//! * `the_times_output_is_the_records_time_and_passes_the_judge`: the 4-byte output of
//!   `times_main`, direct and indirect, beside the records of `main` on the same buffers,
//!   its CPU twin and the oracle.
//! * `caller_errors_stay_with_the_caller`, `the_stages_own_device_errors_are_returned`,
//!   `typed_errors_of_the_stage`: device errors go to whoever caused them.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use sweepcast::gpu::{GpuContext, SweepPipeline};
use sweepcast::low_level::layout::{
    BodyRecord, ImpactRecord, MAX_WORKGROUPS_PER_DIMENSION, STATUS_CONTACT, STATUS_MISS,
    STATUS_OVERLAPPING, SweepDispatch, SweepParams, WORKGROUP_SIZE,
};
use sweepcast::low_level::{ContactInputs, ContactStage, SweepBuffers, SweepOutput, SweepStage};
use sweepcast::parity::{self, GPU_BOUND};
use sweepcast::reference::Body;
use sweepcast::{Counted, Error, Impact, ImpactStatus, SweepOptions, TimeOfImpact};
use testkit::{Workload, WorkloadConfig};
use wgpu::BufferUsages as Usage;
use wgpu::util::DeviceExt;

const RECORD_SIZE: u64 = size_of::<ImpactRecord>() as u64;
const BODY_SIZE: u64 = size_of::<BodyRecord>() as u64;
const PAIR_SIZE: u64 = size_of::<[u32; 2]>() as u64;
/// What the tests fill impact buffers with before a sweep: every byte 0xff (a status no
/// record has, a NaN time), so that a record the sweep did not write is told apart from a
/// miss (which is all zero bytes).
const UNTOUCHED: u8 = 0xff;

/// A device the test makes itself on the context's adapter, with its own error handler.
struct Caller {
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// Every error the device reported outside an error scope.
    errors: Arc<Mutex<Vec<String>>>,
}

impl Caller {
    fn new(context: &GpuContext) -> Self {
        let adapter = context.adapter().clone();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("the caller's device"),
            required_limits: adapter.limits(),
            ..Default::default()
        }))
        .expect("a second device on the adapter");
        let errors = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&errors);
        device.on_uncaptured_error(Arc::new(move |error: wgpu::Error| {
            sink.lock().unwrap().push(error.to_string());
        }));
        Self {
            adapter,
            device,
            queue,
            errors,
        }
    }

    /// What the caller's handler has received so far.
    fn errors(&self) -> Vec<String> {
        self.errors.lock().unwrap().clone()
    }

    /// The caller's device wrapped for sweepcast's pipeline.
    fn context(&self) -> GpuContext {
        GpuContext::from_device(
            self.adapter.clone(),
            self.device.clone(),
            self.queue.clone(),
        )
        .unwrap()
    }

    fn buffer(&self, label: &str, size: u64, usage: Usage) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        })
    }

    fn buffer_with(&self, label: &str, contents: &[u8], usage: Usage) -> wgpu::Buffer {
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage,
            })
    }

    /// The caller's own buffers of `workload`'s bodies and pairs, with the usages the stage
    /// documents (and COPY_DST, which the caller needs to upload).
    fn world_buffers(&self, workload: &Workload) -> (wgpu::Buffer, wgpu::Buffer) {
        let usage = Usage::STORAGE | Usage::COPY_DST;
        let records = body_records(workload);
        (
            self.buffer_with("caller bodies", bytemuck::cast_slice(&records), usage),
            self.buffer_with("caller pairs", bytemuck::cast_slice(&workload.pairs), usage),
        )
    }

    fn encoder(&self) -> wgpu::CommandEncoder {
        self.device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("the caller's encoder"),
            })
    }

    /// Maps a `MAP_READ` buffer after the work submitted so far and copies it out.
    fn read(&self, buffer: &wgpu::Buffer) -> Vec<u8> {
        common::read_mapped(&self.device, buffer)
    }
}

/// The bodies as the stage reads them.
fn body_records(workload: &Workload) -> Vec<BodyRecord> {
    workload.bodies.iter().map(|&body| body.into()).collect()
}

/// The records decoded as `SweepPipeline::sweep` decodes them.
fn decode(
    records: &[ImpactRecord],
    bodies: &[BodyRecord],
    pairs: &[[u32; 2]],
) -> Vec<Option<Impact>> {
    records
        .iter()
        .zip(pairs)
        .map(|(record, &[i, j])| record.to_impact(&bodies[i as usize], &bodies[j as usize]))
        .collect()
}

/// Several workloads as one: the pairs of each part index its own bodies.
fn concatenate(parts: &[Workload]) -> Workload {
    let mut whole = Workload::default();
    for part in parts {
        let first = whole.bodies.len() as u32;
        whole.bodies.extend_from_slice(&part.bodies);
        whole
            .pairs
            .extend(part.pairs.iter().map(|&[i, j]| [first + i, first + j]));
    }
    whole
}

/// Random 3D and 2D worlds and the adversarial set: several thousand pairs.
fn mixed_workload(seed: u64) -> Workload {
    concatenate(&[
        Workload::random(&WorkloadConfig {
            bodies: 2_000,
            pairs: 6_000,
            seed,
            ..Default::default()
        }),
        Workload::random(&WorkloadConfig {
            bodies: 1_000,
            pairs: 2_000,
            seed: seed + 1,
            dimensions: 2,
            ..Default::default()
        }),
        Workload::adversarial(seed + 2),
    ])
}

fn status(impact: &Option<Impact>) -> Option<ImpactStatus> {
    impact.map(|impact| impact.status)
}

#[test]
fn caller_device_and_buffers_match_the_pipeline_and_the_cpu_twin() {
    let Some(context) =
        common::gpu_context("caller_device_and_buffers_match_the_pipeline_and_the_cpu_twin")
    else {
        return;
    };
    let start = Instant::now();
    let caller = Caller::new(&context);
    let workload = mixed_workload(31);
    let (pairs, count) = (&workload.pairs, workload.pairs.len());
    let records = body_records(&workload);
    let record_bytes = count as u64 * RECORD_SIZE;

    // The caller's own buffers, with the usages the stage documents (and what the caller
    // needs besides: COPY_DST to upload, COPY_SRC to read back).
    let (body_buffer, pair_buffer) = caller.world_buffers(&workload);
    let impact_buffer = caller.buffer(
        "caller impacts",
        record_bytes,
        Usage::STORAGE | Usage::COPY_SRC,
    );
    let readback = caller.buffer(
        "caller readback",
        record_bytes,
        Usage::MAP_READ | Usage::COPY_DST,
    );
    let stage = SweepStage::new(&caller.device).unwrap();
    let bound = stage
        .bind_buffers(&caller.device, &body_buffer, &pair_buffer, &impact_buffer)
        .unwrap();
    assert_eq!(bound.body_capacity(), records.len() as u64);
    assert_eq!(bound.pair_capacity(), count as u64);

    let wrapped = SweepPipeline::new(&caller.context()).unwrap();
    let default = SweepPipeline::new(&context).unwrap();
    for (name, options) in [
        ("default options", SweepOptions::default()),
        ("event-driven options", SweepOptions::event_driven()),
    ] {
        // The stage in the caller's encoder, with the caller's copy after it.
        let mut encoder = caller.encoder();
        stage
            .record(&caller.queue, &mut encoder, &bound, count as u32, options)
            .unwrap();
        encoder.copy_buffer_to_buffer(&impact_buffer, 0, &readback, 0, record_bytes);
        caller.queue.submit([encoder.finish()]);
        let gpu_records: Vec<ImpactRecord> = bytemuck::pod_collect_to_vec(&caller.read(&readback));
        let gpu = decode(&gpu_records, &records, pairs);

        let on_same_device = wrapped.sweep(&workload.bodies, pairs, options).unwrap();
        assert!(
            gpu == on_same_device,
            "{name}: the stage on caller buffers must give exactly the pipeline's answers on the same device"
        );
        let on_default = default.sweep(&workload.bodies, pairs, options).unwrap();
        assert!(
            gpu == on_default,
            "{name}: the stage on caller buffers must give exactly the pipeline's answers on the default context"
        );

        // The whole dispatch of the stage's CPU twin on the same records, params and dispatch.
        let params = SweepParams::new(&options, count as u32);
        let dispatch = SweepDispatch::new(count as u32);
        let mut twin_records = vec![ImpactRecord::default(); count];
        sweepcast::low_level::sweep::run_dispatch(
            &records,
            pairs,
            &mut twin_records,
            &params,
            &dispatch,
        );
        let twin = decode(&twin_records, &records, pairs);

        let gpu_report = parity::compare(&workload.bodies, pairs, options, &gpu, None, GPU_BOUND);
        let twin_report = parity::compare(&workload.bodies, pairs, options, &twin, None, GPU_BOUND);
        println!("{name}: GPU stage {gpu_report}");
        println!("{name}: CPU twin {twin_report}");
        assert!(gpu_report.passed(), "{name}: GPU stage {gpu_report}");
        assert!(twin_report.passed(), "{name}: CPU twin {twin_report}");
        assert!(
            gpu_report.candidate_hits > count / 10 && gpu_report.candidate_hits < count,
            "{name}: a workload of hits and misses: {gpu_report}"
        );
        // Status: the same everywhere except where both answers are within the bound of the
        // oracle's (grazing, touching or end-of-step contacts), each judged on its own.
        let mut differing = 0;
        for (k, &[i, j]) in pairs.iter().enumerate() {
            if status(&gpu[k]) == status(&twin[k]) {
                continue;
            }
            differing += 1;
            let (a, b) = (
                Body::from(workload.bodies[i as usize]),
                Body::from(workload.bodies[j as usize]),
            );
            for (who, answer) in [("GPU", &gpu[k]), ("CPU twin", &twin[k])] {
                let check = parity::check_pair(&a, &b, options, answer.as_ref(), None, GPU_BOUND);
                assert_eq!(
                    check.failure, None,
                    "{name}: pair {k}: GPU {:?} and CPU twin {:?} differ in status and the {who}'s answer is beyond the bound",
                    gpu[k], twin[k]
                );
            }
        }
        println!("{name}: {differing} of {count} pairs differ in status, each within the bound");
        assert!(
            differing * 100 <= count,
            "{name}: {differing} of {count} pairs differ in status between the GPU and its twin"
        );
    }
    assert!(
        caller.errors().is_empty(),
        "the caller's handler: {:?}",
        caller.errors()
    );
    println!("{} pairs in {:.2?}", count, start.elapsed());
}

#[test]
fn the_times_output_is_the_records_time_and_passes_the_judge() {
    let Some(context) =
        common::gpu_context("the_times_output_is_the_records_time_and_passes_the_judge")
    else {
        return;
    };
    let caller = Caller::new(&context);
    let workload = mixed_workload(41);
    let (pairs, count) = (&workload.pairs, workload.pairs.len());
    let records = body_records(&workload);
    let (record_bytes, time_bytes) = (count as u64 * RECORD_SIZE, count as u64 * 4);
    // Both outputs on the same bodies and pairs; each SweepBuffers has its own parameters
    // and dispatch, so both sweeps go in one submission.
    let (body_buffer, pair_buffer) = caller.world_buffers(&workload);
    // COPY_DST besides the stage's usages: the indirect run below fills them first.
    let usage = Usage::STORAGE | Usage::COPY_SRC | Usage::COPY_DST;
    let output = |label, size| caller.buffer(label, size, usage);
    let (impact_buffer, time_buffer) = (
        output("caller impacts", record_bytes),
        output("caller times", time_bytes),
    );
    let readback = |label, size| caller.buffer(label, size, Usage::MAP_READ | Usage::COPY_DST);
    let (impact_readback, time_readback) = (
        readback("impact readback", record_bytes),
        readback("time readback", time_bytes),
    );
    let stage = SweepStage::new(&caller.device).unwrap();
    let impacts = stage
        .bind_buffers(&caller.device, &body_buffer, &pair_buffer, &impact_buffer)
        .unwrap();
    let times = stage
        .bind_time_buffers(&caller.device, &body_buffer, &pair_buffer, &time_buffer)
        .unwrap();
    assert_eq!(times.output_kind(), SweepOutput::Times);
    assert_eq!(times.pair_capacity(), count as u64);
    assert!(stage.max_pairs_of(SweepOutput::Times) >= stage.max_pairs());
    let created = stage.create_time_buffers(&caller.device, 10, 100).unwrap();
    assert_eq!(created.output().size(), 400, "4 bytes a pair");

    for (name, options) in [
        ("default options", SweepOptions::default()),
        ("event-driven options", SweepOptions::event_driven()),
    ] {
        let mut encoder = caller.encoder();
        for buffers in [&impacts, &times] {
            stage
                .record(&caller.queue, &mut encoder, buffers, count as u32, options)
                .unwrap();
        }
        encoder.copy_buffer_to_buffer(&impact_buffer, 0, &impact_readback, 0, record_bytes);
        encoder.copy_buffer_to_buffer(&time_buffer, 0, &time_readback, 0, time_bytes);
        caller.queue.submit([encoder.finish()]);
        let gpu_records: Vec<ImpactRecord> =
            bytemuck::pod_collect_to_vec(&caller.read(&impact_readback));
        let gpu_times: Vec<TimeOfImpact> =
            bytemuck::pod_collect_to_vec(&caller.read(&time_readback));

        // The same `sweep_pair` on the same device: the times are the records' own, to the
        // bit (an adapter that compiled the two entry points' arithmetic differently, by
        // contracting one and not the other, would fail here).
        for (k, (record, time)) in gpu_records.iter().zip(&gpu_times).enumerate() {
            let expected: TimeOfImpact =
                bytemuck::cast(sweepcast::low_level::sweep::encode_time(record));
            assert_eq!(
                bytemuck::cast::<TimeOfImpact, u32>(*time),
                bytemuck::cast::<TimeOfImpact, u32>(expected),
                "{name}: pair {k}: times_main wrote {time:?} for the record {record:?}"
            );
        }

        // The twin's whole dispatch, and both judged against the oracle.
        let params = SweepParams::new(&options, count as u32);
        let dispatch = SweepDispatch::new(count as u32);
        let mut twin_times: Vec<TimeOfImpact> = vec![bytemuck::cast(u32::MAX); count];
        sweepcast::low_level::sweep::run_times_dispatch(
            &records,
            pairs,
            &mut twin_times,
            &params,
            &dispatch,
        );
        for (who, answers) in [("GPU times", &gpu_times), ("CPU twin", &twin_times)] {
            let report =
                parity::compare(&workload.bodies, pairs, options, answers, None, GPU_BOUND);
            println!("{name}: {who} {report}");
            assert!(report.passed(), "{name}: {who} {report}");
            assert!(
                report.candidate_hits > count / 10 && report.candidate_hits < count,
                "{name}: a workload of hits and misses: {report}"
            );
        }
        let differing = gpu_times
            .iter()
            .zip(&twin_times)
            .filter(|(gpu, twin)| gpu.status() != twin.status())
            .count();
        println!("{name}: {differing} of {count} pairs differ in status from the twin");
        assert!(
            differing * 100 <= count,
            "{name}: {differing} of {count} pairs differ in status between the GPU and its twin"
        );

        // Indirect: half the pairs, counted by the caller's buffer; the rest stays untouched.
        let half = count as u32 / 2;
        let count_buffer = caller.buffer_with(
            "caller count",
            bytemuck::bytes_of(&half),
            Usage::STORAGE | Usage::COPY_SRC,
        );
        let untouched = vec![UNTOUCHED; time_bytes as usize];
        caller.queue.write_buffer(&time_buffer, 0, &untouched);
        let mut encoder = caller.encoder();
        stage
            .record_indirect(
                &caller.queue,
                &mut encoder,
                &times,
                &count_buffer,
                0,
                options,
            )
            .unwrap();
        encoder.copy_buffer_to_buffer(&time_buffer, 0, &time_readback, 0, time_bytes);
        caller.queue.submit([encoder.finish()]);
        let indirect: Vec<u32> = bytemuck::pod_collect_to_vec(&caller.read(&time_readback));
        for (k, &bits) in indirect.iter().enumerate() {
            let direct = bytemuck::cast::<TimeOfImpact, u32>(gpu_times[k]);
            let expected = if k < half as usize {
                direct
            } else {
                u32::from_ne_bytes([UNTOUCHED; 4])
            };
            assert_eq!(bits, expected, "{name}: indirect pair {k} of {half} swept");
        }
    }
    assert!(
        caller.errors().is_empty(),
        "the caller's handler: {:?}",
        caller.errors()
    );
}

/// The caller's own pass: writes the count of its uniform into a slot of its storage buffer,
/// as a broad phase writes the number of pairs it found.
const COUNT_WGSL: &str = "
struct Wanted {
    count: u32,
    slot: u32,
    _pad0: u32,
    _pad1: u32,
}
@group(0) @binding(0) var<uniform> wanted: Wanted;
@group(0) @binding(1) var<storage, read_write> counts: array<u32>;

@compute @workgroup_size(1)
fn write_count() {
    counts[wanted.slot] = wanted.count;
}
";

/// The slot of the count buffer the caller's pass writes (at byte offset 12: not the start).
const COUNT_SLOT: u32 = 3;

/// The caller's count pass: its pipeline, uniform, count buffer and bind group.
struct CountPass {
    pipeline: wgpu::ComputePipeline,
    wanted: wgpu::Buffer,
    counts: wgpu::Buffer,
    group: wgpu::BindGroup,
}

impl CountPass {
    fn new(caller: &Caller) -> Self {
        let device = &caller.device;
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("write_count"),
            source: wgpu::ShaderSource::Wgsl(COUNT_WGSL.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("write_count"),
            layout: None,
            module: &module,
            entry_point: Some("write_count"),
            compilation_options: Default::default(),
            cache: None,
        });
        let wanted = caller.buffer("wanted count", 16, Usage::UNIFORM | Usage::COPY_DST);
        // Whatever was there before: the sweep must read only the slot the pass writes.
        let counts = caller.buffer_with(
            "counts",
            bytemuck::cast_slice(&[7u32; 8]),
            Usage::STORAGE | Usage::COPY_SRC,
        );
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("write_count"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wanted.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: counts.as_entire_binding(),
                },
            ],
        });
        Self {
            pipeline,
            wanted,
            counts,
            group,
        }
    }

    /// Records the pass that writes `count` (uploaded for the next submission).
    fn record(&self, queue: &wgpu::Queue, encoder: &mut wgpu::CommandEncoder, count: u32) {
        queue.write_buffer(
            &self.wanted,
            0,
            bytemuck::cast_slice(&[count, COUNT_SLOT, 0, 0]),
        );
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("write_count"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.group, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }
}

/// What the CPU twin of `prepare_indirect` makes of `requested` pairs at `capacity`.
fn prepared(requested: u32, capacity: u32, options: &SweepOptions) -> SweepDispatch {
    let mut dispatch = SweepDispatch {
        requested_pairs: requested,
        ..Default::default()
    };
    sweepcast::low_level::sweep::prepare_indirect(
        &mut dispatch,
        &SweepParams::new(options, capacity),
    );
    dispatch
}

/// Checks a readback of impact records after a sweep of `swept` pairs: each written before
/// `swept`, none after.
fn assert_written_up_to(bytes: &[u8], swept: usize, what: &str) {
    let records: Vec<ImpactRecord> = bytemuck::pod_collect_to_vec(bytes);
    for (k, record) in records.iter().enumerate() {
        let untouched = bytemuck::bytes_of(record).iter().all(|&b| b == UNTOUCHED);
        if k < swept {
            assert!(
                [STATUS_MISS, STATUS_CONTACT, STATUS_OVERLAPPING].contains(&record.status),
                "{what}: record {k} of {swept} swept was not written: {record:?}"
            );
        } else {
            assert!(
                untouched,
                "{what}: record {k} past the {swept} swept was written: {record:?}"
            );
        }
    }
}

#[test]
fn record_indirect_sweeps_the_count_the_device_wrote() {
    let Some(context) = common::gpu_context("record_indirect_sweeps_the_count_the_device_wrote")
    else {
        return;
    };
    let start = Instant::now();
    let caller = Caller::new(&context);
    const CAPACITY: u32 = 20_000;
    // Impact buffers hold 64 records more than the pairs: the capacity is the pairs', and a
    // sweep capped at it must leave the records past it untouched.
    const SPARE: u64 = 64;
    let workload = Workload::random(&WorkloadConfig {
        bodies: 5_000,
        pairs: CAPACITY as usize,
        seed: 57,
        ..Default::default()
    });
    let records = body_records(&workload);
    let (body_buffer, pair_buffer) = caller.world_buffers(&workload);
    let impact_bytes = (u64::from(CAPACITY) + SPARE) * RECORD_SIZE;
    let impacts = |label| {
        caller.buffer(
            label,
            impact_bytes,
            Usage::STORAGE | Usage::COPY_SRC | Usage::COPY_DST,
        )
    };
    let (indirect_impacts, direct_impacts) =
        (impacts("indirect impacts"), impacts("direct impacts"));
    let readback = |label, size| caller.buffer(label, size, Usage::MAP_READ | Usage::COPY_DST);
    let indirect_readback = readback("indirect readback", impact_bytes);
    let direct_readback = readback("direct readback", impact_bytes);
    let dispatch_readback = readback("dispatch readback", 32);

    let stage = SweepStage::new(&caller.device).unwrap();
    let bind = |impacts: &wgpu::Buffer| {
        stage
            .bind_buffers(&caller.device, &body_buffer, &pair_buffer, impacts)
            .unwrap()
    };
    let (indirect, direct): (SweepBuffers, SweepBuffers) =
        (bind(&indirect_impacts), bind(&direct_impacts));
    assert_eq!(indirect.pair_capacity(), u64::from(CAPACITY));
    let count_pass = CountPass::new(&caller);
    let untouched = vec![UNTOUCHED; impact_bytes as usize];

    let counts = [
        0,
        1,
        63,
        64,
        65,
        4_097,
        CAPACITY - 1,
        CAPACITY,
        CAPACITY + 1,
        CAPACITY + 12_345,
        u32::MAX,
    ];
    for (run, &count) in counts.iter().enumerate() {
        let options = if run % 2 == 0 {
            SweepOptions::default()
        } else {
            SweepOptions::event_driven()
        };
        let swept = count.min(CAPACITY);
        let what = format!("count {count} ({options:?})");
        caller.queue.write_buffer(&indirect_impacts, 0, &untouched);
        caller.queue.write_buffer(&direct_impacts, 0, &untouched);
        // One encoder: the caller's pass writes the count, the stage sweeps that many pairs
        // on one set of buffers, and directly `swept` pairs on another; then the copies.
        let mut encoder = caller.encoder();
        count_pass.record(&caller.queue, &mut encoder, count);
        let offset = u64::from(COUNT_SLOT) * 4;
        stage
            .record_indirect(
                &caller.queue,
                &mut encoder,
                &indirect,
                &count_pass.counts,
                offset,
                options,
            )
            .unwrap();
        stage
            .record(&caller.queue, &mut encoder, &direct, swept, options)
            .unwrap();
        encoder.copy_buffer_to_buffer(&indirect_impacts, 0, &indirect_readback, 0, impact_bytes);
        encoder.copy_buffer_to_buffer(&direct_impacts, 0, &direct_readback, 0, impact_bytes);
        encoder.copy_buffer_to_buffer(indirect.dispatch(), 0, &dispatch_readback, 0, 32);
        caller.queue.submit([encoder.finish()]);

        let from_indirect = caller.read(&indirect_readback);
        let from_direct = caller.read(&direct_readback);
        let dispatch: SweepDispatch =
            bytemuck::pod_read_unaligned(&caller.read(&dispatch_readback));
        assert_written_up_to(&from_indirect, swept as usize, &what);
        assert!(
            from_indirect == from_direct,
            "{what}: the indirect sweep's records must equal the direct sweep's"
        );
        assert_eq!(dispatch.requested_pairs, count, "{what}: {dispatch:?}");
        assert_eq!(dispatch.pair_count, swept, "{what}: {dispatch:?}");
        assert_eq!(
            dispatch.overflowed,
            u32::from(count > CAPACITY),
            "{what}: {dispatch:?}"
        );
        assert_eq!(
            dispatch,
            prepared(count, CAPACITY, &options),
            "{what}: the device's prepare_indirect must equal its CPU twin"
        );
        assert_eq!(
            (dispatch.workgroups_x, dispatch.workgroups_y),
            (swept.div_ceil(WORKGROUP_SIZE), 1),
            "{what}"
        );
    }
    // The largest count judged against the oracle (the direct sweep's equality above makes
    // the rest follow).
    let options = SweepOptions::default();
    let decoded = decode(
        &bytemuck::pod_collect_to_vec::<u8, ImpactRecord>(
            &caller.read(&indirect_readback)[..(CAPACITY as usize * RECORD_SIZE as usize)],
        ),
        &records,
        &workload.pairs,
    );
    let report = parity::compare(
        &workload.bodies,
        &workload.pairs,
        options,
        &decoded,
        None,
        GPU_BOUND,
    );
    assert!(report.passed(), "{report}");
    assert!(
        caller.errors().is_empty(),
        "the caller's handler: {:?}",
        caller.errors()
    );
    println!(
        "{} indirect sweeps in {:.2?}",
        counts.len(),
        start.elapsed()
    );
}

#[test]
fn record_indirect_runs_two_dimensional_dispatches() {
    // One workgroup more than one dimension holds: 65,536 workgroups, as 65,535 x 2.
    const PAIRS: u32 = (MAX_WORKGROUPS_PER_DIMENSION + 1) * WORKGROUP_SIZE;
    // Whatever the device, prepare_indirect's CPU twin (the host's SweepDispatch::new) splits
    // the workgroups along y past 65,535.
    let options = SweepOptions::default();
    for (requested, capacity, x, y) in [
        (
            PAIRS - WORKGROUP_SIZE,
            PAIRS,
            MAX_WORKGROUPS_PER_DIMENSION,
            1,
        ),
        (
            PAIRS - WORKGROUP_SIZE + 1,
            PAIRS,
            MAX_WORKGROUPS_PER_DIMENSION,
            2,
        ),
        (PAIRS, PAIRS, MAX_WORKGROUPS_PER_DIMENSION, 2),
        (u32::MAX, PAIRS, MAX_WORKGROUPS_PER_DIMENSION, 2),
        (u32::MAX, u32::MAX, MAX_WORKGROUPS_PER_DIMENSION, 1025),
    ] {
        let dispatch = prepared(requested, capacity, &options);
        assert_eq!(
            (
                dispatch.workgroups_x,
                dispatch.workgroups_y,
                dispatch.workgroups_z
            ),
            (x, y, 1),
            "{requested} pairs at capacity {capacity}: {dispatch:?}"
        );
        assert_eq!(dispatch.pair_count, requested.min(capacity));
        assert_eq!(dispatch.overflowed, u32::from(requested > capacity));
        assert!(
            u64::from(dispatch.workgroups_x * dispatch.workgroups_y) * u64::from(WORKGROUP_SIZE)
                >= u64::from(dispatch.pair_count)
        );
    }

    let Some(context) = common::gpu_context("record_indirect_runs_two_dimensional_dispatches")
    else {
        return;
    };
    let caller = Caller::new(&context);
    let stage = SweepStage::new(&caller.device).unwrap();
    let limits = caller.device.limits();
    if stage.max_pairs() < u64::from(PAIRS)
        || limits.max_compute_workgroups_per_dimension < MAX_WORKGROUPS_PER_DIMENSION
    {
        eprintln!(
            "!!!!!!!! record_indirect_runs_two_dimensional_dispatches: {PAIRS} pairs do not fit in one binding of {} (at most {} pairs); only prepare_indirect's CPU twin was tested for that count",
            context.describe(),
            stage.max_pairs()
        );
        return;
    }
    let start = Instant::now();
    let workload = Workload::random(&WorkloadConfig {
        bodies: 10_000,
        pairs: PAIRS as usize,
        seed: 65,
        ..Default::default()
    });
    let records = body_records(&workload);
    let (body_buffer, pair_buffer) = caller.world_buffers(&workload);
    let impact_bytes = u64::from(PAIRS) * RECORD_SIZE;
    let impacts = caller.buffer(
        "caller impacts",
        impact_bytes,
        Usage::STORAGE | Usage::COPY_SRC | Usage::COPY_DST,
    );
    let readback = caller.buffer(
        "caller readback",
        impact_bytes,
        Usage::MAP_READ | Usage::COPY_DST,
    );
    let dispatch_readback =
        caller.buffer("dispatch readback", 32, Usage::MAP_READ | Usage::COPY_DST);
    let buffers = stage
        .bind_buffers(&caller.device, &body_buffer, &pair_buffer, &impacts)
        .unwrap();
    let count_pass = CountPass::new(&caller);
    let untouched = vec![UNTOUCHED; impact_bytes as usize];

    // Indirect, with a count above the capacity: all of it is swept, in 65,535 x 2 workgroups.
    let requested = PAIRS + 1_000;
    caller.queue.write_buffer(&impacts, 0, &untouched);
    let mut encoder = caller.encoder();
    count_pass.record(&caller.queue, &mut encoder, requested);
    stage
        .record_indirect(
            &caller.queue,
            &mut encoder,
            &buffers,
            &count_pass.counts,
            u64::from(COUNT_SLOT) * 4,
            options,
        )
        .unwrap();
    encoder.copy_buffer_to_buffer(&impacts, 0, &readback, 0, impact_bytes);
    encoder.copy_buffer_to_buffer(buffers.dispatch(), 0, &dispatch_readback, 0, 32);
    caller.queue.submit([encoder.finish()]);
    let from_indirect = caller.read(&readback);
    let dispatch: SweepDispatch = bytemuck::pod_read_unaligned(&caller.read(&dispatch_readback));
    assert_eq!(dispatch, prepared(requested, PAIRS, &options));
    assert_eq!(
        (dispatch.workgroups_x, dispatch.workgroups_y),
        (MAX_WORKGROUPS_PER_DIMENSION, 2)
    );
    assert_eq!(
        (
            dispatch.pair_count,
            dispatch.requested_pairs,
            dispatch.overflowed
        ),
        (PAIRS, requested, 1)
    );
    assert_written_up_to(&from_indirect, PAIRS as usize, "indirect 2D");

    // Direct, the same count: the host's 2D dispatch.
    caller.queue.write_buffer(&impacts, 0, &untouched);
    let mut encoder = caller.encoder();
    stage
        .record(&caller.queue, &mut encoder, &buffers, PAIRS, options)
        .unwrap();
    encoder.copy_buffer_to_buffer(&impacts, 0, &readback, 0, impact_bytes);
    caller.queue.submit([encoder.finish()]);
    let from_direct = caller.read(&readback);
    assert!(
        from_indirect == from_direct,
        "the indirect 2D sweep's records must equal the direct sweep's"
    );

    // The records of the second row of workgroups (y = 1) and the last ones of the first,
    // judged against the oracle.
    let tail = (PAIRS - 2 * MAX_WORKGROUPS_PER_DIMENSION) as usize..PAIRS as usize;
    let all: Vec<ImpactRecord> = bytemuck::pod_collect_to_vec(&from_indirect);
    let pairs = &workload.pairs[tail.clone()];
    let decoded = decode(&all[tail], &records, pairs);
    let report = parity::compare(&workload.bodies, pairs, options, &decoded, None, GPU_BOUND);
    println!("2D dispatch, last {} records: {report}", pairs.len());
    assert!(report.passed(), "{report}");
    assert!(report.candidate_hits > 0, "{report}");
    assert!(
        caller.errors().is_empty(),
        "the caller's handler: {:?}",
        caller.errors()
    );
    println!(
        "{PAIRS} pairs in 65,535 x 2 workgroups, indirect and direct, in {:.2?}",
        start.elapsed()
    );
}

/// A buffer the device rejects: mapped for reading and for writing at once.
fn invalid_buffer(caller: &Caller) -> wgpu::Buffer {
    caller.buffer("invalid", 64, Usage::MAP_READ | Usage::MAP_WRITE)
}

#[test]
fn caller_errors_stay_with_the_caller() {
    let Some(context) = common::gpu_context("caller_errors_stay_with_the_caller") else {
        return;
    };
    let caller = Caller::new(&context);
    let workload = Workload::random(&WorkloadConfig {
        bodies: 1_000,
        pairs: 4_000,
        seed: 71,
        ..Default::default()
    });
    let (bodies, pairs) = (&workload.bodies, &workload.pairs);
    let options = SweepOptions::default();
    let expected = SweepPipeline::new(&context)
        .unwrap()
        .sweep(bodies, pairs, options)
        .unwrap();

    // The caller's own validation error, outside any scope: its handler gets it.
    let _invalid = invalid_buffer(&caller);
    let pipeline = SweepPipeline::new(&caller.context()).unwrap();
    let impacts = pipeline.sweep(bodies, pairs, options).unwrap();
    assert!(
        impacts == expected,
        "a sweep after the caller's error must give the right answers"
    );
    let report = parity::compare(bodies, pairs, options, &impacts, None, GPU_BOUND);
    assert!(report.passed(), "{report}");
    let errors = caller.errors();
    assert_eq!(
        errors.len(),
        1,
        "the caller's handler must receive its one error and nothing of sweepcast's: {errors:?}"
    );
    assert!(
        errors[0].to_lowercase().contains("usage"),
        "the caller's error is about the buffer's usage: {errors:?}"
    );

    // The caller's own error scope around sweepcast's work catches nothing of it.
    let scope = caller
        .device
        .push_error_scope(wgpu::ErrorFilter::Validation);
    let impacts = pipeline.sweep(bodies, pairs, options).unwrap();
    let stage = SweepStage::new(&caller.device).unwrap();
    let buffers = stage.create_buffers(&caller.device, 16, 16).unwrap();
    let mut encoder = caller.encoder();
    stage
        .record(&caller.queue, &mut encoder, &buffers, 16, options)
        .unwrap();
    caller.queue.submit([encoder.finish()]);
    let caught = pollster::block_on(scope.pop());
    assert!(
        caught.is_none(),
        "the caller's scope caught {caught:?} from sweepcast's work"
    );
    assert!(impacts == expected);

    // And sweepcast leaves the caller's scopes as they were: the caller's error inside its
    // own scope, after a sweep, lands in that scope, not in the handler.
    let scope = caller
        .device
        .push_error_scope(wgpu::ErrorFilter::Validation);
    assert!(pipeline.sweep(bodies, pairs, options).unwrap() == expected);
    let _invalid = invalid_buffer(&caller);
    let caught = pollster::block_on(scope.pop());
    assert!(
        caught
            .as_ref()
            .is_some_and(|error| error.to_string().to_lowercase().contains("usage")),
        "the caller's scope must catch the caller's own error: {caught:?}"
    );
    assert_eq!(caller.errors().len(), 1, "{:?}", caller.errors());
}

#[test]
fn the_stages_own_device_errors_are_returned() {
    let Some(context) = common::gpu_context("the_stages_own_device_errors_are_returned") else {
        return;
    };
    let caller = Caller::new(&context);
    let stage = SweepStage::new(&caller.device).unwrap();
    let storage = |label| caller.buffer(label, 4 * RECORD_SIZE, Usage::STORAGE | Usage::COPY_DST);
    let (bodies, pairs, impacts) = (storage("bodies"), storage("pairs"), storage("impacts"));

    // A destroyed buffer: the device rejects the bind group sweepcast makes of it.
    let destroyed = storage("destroyed impacts");
    destroyed.destroy();
    // Inside a scope of the caller's: sweepcast's error must not reach it either.
    let scope = caller
        .device
        .push_error_scope(wgpu::ErrorFilter::Validation);
    let result = stage.bind_buffers(&caller.device, &bodies, &pairs, &destroyed);
    let caught = pollster::block_on(scope.pop());
    assert!(
        matches!(result, Err(Error::Device(_))),
        "binding a destroyed buffer: {result:?}"
    );
    assert!(caught.is_none(), "the caller's scope caught {caught:?}");
    println!("destroyed buffer: {}", result.unwrap_err());

    // A buffer of another device: the default context's.
    let foreign = context.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("another device's bodies"),
        size: 4 * BODY_SIZE,
        usage: Usage::STORAGE,
        mapped_at_creation: false,
    });
    let result = stage.bind_buffers(&caller.device, &foreign, &pairs, &impacts);
    assert!(
        matches!(result, Err(Error::Device(_))),
        "binding another device's buffer: {result:?}"
    );
    println!("another device's buffer: {}", result.unwrap_err());

    // Still usable afterwards.
    stage
        .bind_buffers(&caller.device, &bodies, &pairs, &impacts)
        .unwrap();
    assert!(
        caller.errors().is_empty(),
        "sweepcast's own errors must not reach the caller's handler: {:?}",
        caller.errors()
    );
}

/// The contact stage's capacities beyond one binding of its widest buffers (or `u32`
/// indices) are typed errors before any buffer is made: unchecked, a capacity past 2⁶¹ wrapped
/// its buffers' sizes to the minimum (a panic in a dev build), and the passes were recorded
/// over buffers far smaller than the shaders read, an error only in the caller's encoder.
#[test]
fn contact_stage_capacities_beyond_a_binding_are_typed_errors() {
    let Some(context) =
        common::gpu_context("contact_stage_capacities_beyond_a_binding_are_typed_errors")
    else {
        return;
    };
    let caller = Caller::new(&context);
    let device = &caller.device;
    let stage = ContactStage::new(device).unwrap();
    let storage = Usage::STORAGE | Usage::COPY_DST;
    let params = caller.buffer("params", 256, Usage::UNIFORM | Usage::COPY_DST);
    let bodies = caller.buffer("bodies", 4 * BODY_SIZE, storage);
    let pairs = caller.buffer("pairs", 4 * PAIR_SIZE, storage);
    let impacts = caller.buffer("impacts", 4 * RECORD_SIZE, storage);
    let dispatch = caller.buffer("dispatch", 16, storage | Usage::INDIRECT);
    let inputs = ContactInputs {
        params: &params,
        bodies: &bodies,
        pairs: &pairs,
        impacts: &impacts,
        sweep_dispatch: &dispatch,
    };
    let create = |bodies: u64, contacts: Option<u64>| {
        stage.create_buffers(device, &caller.queue, &inputs, bodies, contacts)
    };
    for (bodies, contacts) in [(1 << 62, Some(1 << 61)), (1 << 62, None), (1 << 33, None)] {
        let result = create(bodies, contacts);
        assert!(
            matches!(result, Err(Error::TooManyBodies { count, .. }) if count as u64 == bodies),
            "{bodies}, {contacts:?}: {result:?}"
        );
    }
    for contacts in [1 << 61, 1 << 40, u64::MAX] {
        let result = create(4, Some(contacts));
        assert!(
            matches!(
                result,
                Err(Error::CapacityExceeded { what: Counted::Contacts, at_least, .. })
                    if at_least as u64 == contacts
            ),
            "{contacts}: {result:?}"
        );
    }
    // Within the limits, the buffers are made.
    let buffers = create(4, Some(16)).expect("small capacities");
    assert!(buffers.device_memory_bytes() > 0);
}

#[test]
fn typed_errors_of_the_stage() {
    let Some(context) = common::gpu_context("typed_errors_of_the_stage") else {
        return;
    };
    let caller = Caller::new(&context);
    let device = &caller.device;
    let stage = SweepStage::new(device).unwrap();
    let storage = Usage::STORAGE | Usage::COPY_DST;
    let bodies = caller.buffer("bodies", 4 * BODY_SIZE, storage);
    let pairs = caller.buffer("pairs", 4 * PAIR_SIZE, storage);
    let impacts = caller.buffer("impacts", 4 * RECORD_SIZE, storage);

    let invalid = |result: Result<SweepBuffers, Error>, which: &str| match result {
        Err(Error::InvalidBuffer { name, reason }) => {
            assert_eq!(name, which, "{reason}");
            println!("{name}: {reason}");
        }
        other => panic!("{which}: expected Error::InvalidBuffer, got {other:?}"),
    };
    // Lacking STORAGE.
    let copy_only = caller.buffer("copy only", 4 * BODY_SIZE, Usage::COPY_DST);
    invalid(
        stage.bind_buffers(device, &copy_only, &pairs, &impacts),
        "bodies",
    );
    invalid(
        stage.bind_buffers(device, &bodies, &copy_only, &impacts),
        "pairs",
    );
    invalid(
        stage.bind_buffers(device, &bodies, &pairs, &copy_only),
        "impacts",
    );
    // Not a whole number of elements (or none at all).
    let odd = |size| caller.buffer("odd", size, storage);
    invalid(
        stage.bind_buffers(device, &odd(BODY_SIZE + 16), &pairs, &impacts),
        "bodies",
    );
    invalid(
        stage.bind_buffers(device, &odd(16), &pairs, &impacts),
        "bodies",
    );
    invalid(
        stage.bind_buffers(device, &bodies, &odd(12), &impacts),
        "pairs",
    );
    invalid(
        stage.bind_buffers(device, &bodies, &pairs, &odd(RECORD_SIZE + 8)),
        "impacts",
    );
    invalid(
        stage.bind_buffers(device, &bodies, &pairs, &odd(0)),
        "impacts",
    );
    // Capacities beyond one binding.
    assert!(matches!(
        stage.create_buffers(device, stage.max_bodies() + 1, 1),
        Err(Error::TooManyBodies { .. })
    ));
    assert!(matches!(
        stage.create_buffers(device, 1, stage.max_pairs() + 1),
        Err(Error::CapacityExceeded { .. })
    ));

    // Counts: the capacity is the smaller of the pair and impact buffers'.
    let small_impacts = caller.buffer("impacts", 3 * RECORD_SIZE, storage);
    let buffers = stage
        .bind_buffers(device, &bodies, &pairs, &small_impacts)
        .unwrap();
    assert_eq!(buffers.pair_capacity(), 3);
    let options = SweepOptions::default();
    let mut encoder = caller.encoder();
    let result = stage.record(&caller.queue, &mut encoder, &buffers, 4, options);
    assert!(
        matches!(
            result,
            Err(Error::CapacityExceeded {
                what: Counted::Pairs,
                at_least: 4,
                capacity: 3
            })
        ),
        "{result:?}"
    );
    stage
        .record(&caller.queue, &mut encoder, &buffers, 3, options)
        .unwrap();

    let count_without_copy = caller.buffer("count", 16, Usage::STORAGE);
    let count = caller.buffer("count", 16, Usage::STORAGE | Usage::COPY_SRC);
    for (buffer, offset, why) in [
        (&count_without_copy, 0, "lacks COPY_SRC"),
        (&count, 2, "misaligned"),
        (&count, 16, "past the end"),
        (&count, 14, "misaligned and past the end"),
        (&count, u64::MAX - 3, "aligned, far past the end"),
    ] {
        let mut scratch = caller.encoder();
        match stage.record_indirect(
            &caller.queue,
            &mut scratch,
            &buffers,
            buffer,
            offset,
            options,
        ) {
            Err(Error::InvalidBuffer {
                name: "count",
                reason,
            }) => {
                println!("count at {offset} ({why}): {reason}");
            }
            other => {
                panic!("count at {offset} ({why}): expected Error::InvalidBuffer, got {other:?}")
            }
        }
        // Nothing was recorded: the encoder is still valid.
        caller.queue.submit([scratch.finish()]);
    }
    caller.queue.submit([encoder.finish()]);
    let mut encoder = caller.encoder();
    stage
        .record_indirect(&caller.queue, &mut encoder, &buffers, &count, 12, options)
        .unwrap();
    caller.queue.submit([encoder.finish()]);
    caller.device.poll(wgpu::PollType::wait_indefinitely()).ok();
    assert!(
        caller.errors().is_empty(),
        "typed errors record nothing the device rejects: {:?}",
        caller.errors()
    );
}
