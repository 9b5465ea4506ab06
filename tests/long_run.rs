//! What a long simulation relies on: a wait for the device that gives up with a typed error
//! and leaves the pipeline usable, ten thousand calls of batches that grow and shrink with
//! every answer right and memory bounded by the largest batch, one pipeline shared by four
//! threads, and a lost device that fails every later call at once instead of hanging.

mod common;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use sweepcast::SweepOptions;
use sweepcast::gpu::SweepPipeline;
use sweepcast::parity::{self, GPU_BOUND};
use sweepcast::{Error, Impact};
use testkit::{SplitMix64, Workload, WorkloadConfig};

/// Holds `impacts` to the GPU bound against the f64 oracle, as `tests/gpu_parity.rs` does.
fn assert_right(name: &str, workload: &Workload, impacts: &[Option<Impact>]) {
    assert_eq!(
        impacts.len(),
        workload.pairs.len(),
        "{name}: one result per pair"
    );
    let report = parity::compare(
        &workload.bodies,
        &workload.pairs,
        SweepOptions::DEFAULT,
        impacts,
        None,
        GPU_BOUND,
    );
    assert!(report.passed(), "{name}: {report}");
}

/// A random world of `pairs` candidate pairs among a quarter as many bodies.
fn world(pairs: usize, seed: u64) -> Workload {
    Workload::random(&WorkloadConfig {
        bodies: (pairs / 4).max(2),
        pairs,
        seed,
        dimensions: 2 + (seed % 2) as u32,
        ..Default::default()
    })
}

/// Log-uniform in `low..=high`.
fn log_uniform(rng: &mut SplitMix64, low: usize, high: usize) -> usize {
    let (low, high) = (low as f64, high as f64 + 1.0);
    (rng.range(low.ln(), high.ln()).exp() as usize).min(high as usize - 1)
}

/// `cap(n)` of [`SweepPipeline::device_memory_bytes`]: the elements a buffer sized for `n` holds.
fn capacity(n: u64) -> u64 {
    n.next_power_of_two().max(1024)
}

/// `c(n)` of [`SweepPipeline::device_memory_bytes`]: the pairs of each chunk of a call of
/// `pairs` pairs on `pipeline` (the split rule of [`SweepPipeline`]'s documentation).
fn chunk(pipeline: &SweepPipeline, pairs: u64) -> u64 {
    let even = pairs.div_ceil(sweepcast::low_level::PIPELINE_CHUNKS as u64);
    (even.max(sweepcast::low_level::PIPELINE_MIN_CHUNK as u64))
        .min(pipeline.max_pairs_per_dispatch() as u64)
        .min(pairs)
}

/// [`SweepPipeline::device_memory_bytes`] after calls of at most `bodies` bodies and chunks of
/// at most `pairs` pairs, none failed: the stage's parameters and dispatch, 32 bytes each;
/// bodies 2 x 32 (device, upload), pairs 3 x 8 and records 3 x 32 (device, two staging
/// buffers in rotation; the sizes of `src/layout.rs`).
fn expected_memory(bodies: u64, pairs: u64) -> u64 {
    2 * 32 + 2 * 32 * capacity(bodies) + (3 * 8 + 3 * 32) * capacity(pairs)
}

/// The bound [`expected_memory`] keeps below: a power of two at most doubles a count.
fn memory_bound(bodies: u64, pairs: u64) -> u64 {
    2 * 32 + 2 * 32 * (2 * bodies).max(1024) + (3 * 8 + 3 * 32) * (2 * pairs).max(1024)
}

#[test]
fn a_wait_past_the_poll_timeout_is_a_typed_error_and_the_pipeline_recovers() {
    let test = "a_wait_past_the_poll_timeout_is_a_typed_error_and_the_pipeline_recovers";
    let Some(context) = common::gpu_context(test) else {
        return;
    };
    assert_eq!(
        SweepPipeline::new(&context).unwrap().poll_timeout(),
        Some(SweepPipeline::DEFAULT_POLL_TIMEOUT)
    );
    let large = world(1_000_000, 40);
    let other = world(300_000, 41);
    let pipeline = SweepPipeline::new(&context)
        .unwrap()
        .with_poll_timeout(Some(Duration::ZERO));
    assert_eq!(pipeline.poll_timeout(), Some(Duration::ZERO));
    let backend = context.adapter_info().backend;
    let lavapipe = common::lavapipe(context.adapter_info());
    let mut timeouts = 0;
    for (name, workload) in [("large", &large), ("other", &other), ("large", &large)] {
        match pipeline.sweep(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT) {
            Err(error @ Error::Timeout { waited }) => {
                eprintln!("{test}: {name} batch on {backend:?}: timed out after {waited:?}");
                assert!(error.to_string().contains("poll timeout"), "{error}");
                timeouts += 1;
            }
            // wgpu's GL backend runs the whole dispatch inside `Queue::submit` on Mesa's
            // llvmpipe, so the first wait finds the queue empty; a real GPU may finish the
            // batch before the first wait (an H200 did: a fraction of a millisecond of work);
            // and lavapipe, whose submit blocks while its threads run the work, may finish a
            // pipelined chunk of the 300,000-pair batch (75,000 pairs) before its wait (seen
            // in CI). Lavapipe must time out on one batch at least (below).
            Ok(impacts) => {
                eprintln!(
                    "{test}: {name} batch on {backend:?}: finished within a zero timeout (the \
                     work was done before the first wait: GL completes it inside \
                     Queue::submit, a GPU may be that fast)"
                );
                assert_right(name, workload, &impacts);
            }
            Err(other) => panic!(
                "{test}: {name} batch on {backend:?}: expected Error::Timeout or the answers, got {other:?}"
            ),
        }
    }
    // A million pairs take lavapipe some 100 ms: its waits with a zero limit time out.
    assert!(
        !lavapipe || timeouts > 0,
        "{test}: no batch timed out on lavapipe"
    );
    // The same pipeline, its device buffers kept, with the limit lifted: the abandoned work
    // is waited for and every answer is right and the same as a fresh pipeline's.
    let pipeline = pipeline.with_poll_timeout(None);
    let fresh = SweepPipeline::new(&context).unwrap();
    for (name, workload) in [("other", &other), ("large", &large)] {
        let impacts = pipeline
            .sweep(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT)
            .unwrap();
        assert_right(name, workload, &impacts);
        let expected = fresh
            .sweep(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT)
            .unwrap();
        assert_eq!(impacts, expected, "{name}: as a fresh pipeline answers");
    }
    // A timed-out call drops the host-visible buffers; the next makes them again, sized for
    // itself: never more than the largest batch's.
    let memory = pipeline.device_memory_bytes();
    let chunk = chunk(&pipeline, large.pairs.len() as u64);
    let bound = expected_memory(large.bodies.len() as u64, chunk);
    assert!(memory <= bound, "{memory} > {bound} bytes");
}

#[test]
fn ten_thousand_calls_of_growing_and_shrinking_batches_stay_right_and_bounded() {
    let test = "ten_thousand_calls_of_growing_and_shrinking_batches_stay_right_and_bounded";
    let Some(context) = common::gpu_context(test) else {
        return;
    };
    let start = Instant::now();
    let pipeline = SweepPipeline::new(&context).unwrap();
    let mut rng = SplitMix64::new(4);
    let (mut most_bodies, mut most_pairs, mut high_water) = (0, 0, 0);
    let (mut total_pairs, mut grown, mut shrunk) = (0, 0, 0);
    let mut previous = 0;
    let mut impacts = Vec::new();
    for call in 0..10_000u64 {
        // Mostly small steps, one in a hundred large; the extremes at fixed calls.
        let pairs = match call {
            0 => 1,
            5_000 => 100_000,
            _ if rng.below(100) == 0 => log_uniform(&mut rng, 10_000, 100_000),
            _ => log_uniform(&mut rng, 1, 4_096),
        };
        let workload = world(pairs, call);
        pipeline
            .sweep_into(
                &workload.bodies,
                &workload.pairs,
                SweepOptions::DEFAULT,
                &mut impacts,
            )
            .unwrap_or_else(|error| panic!("call {call}, {pairs} pairs: {error}"));
        assert_right(&format!("call {call}, {pairs} pairs"), &workload, &impacts);

        most_bodies = most_bodies.max(workload.bodies.len() as u64);
        most_pairs = most_pairs.max(pairs as u64);
        let memory = pipeline.device_memory_bytes();
        high_water = high_water.max(memory);
        let largest = chunk(&pipeline, most_pairs);
        assert_eq!(
            memory,
            expected_memory(most_bodies, largest),
            "call {call}: buffers sized for the largest batch so far"
        );
        let bound = memory_bound(most_bodies, largest);
        assert!(memory <= bound, "call {call}: {memory} > {bound} bytes");
        total_pairs += pairs;
        grown += usize::from(pairs > previous);
        shrunk += usize::from(pairs < previous);
        previous = pairs;
    }
    let bound = memory_bound(most_bodies, chunk(&pipeline, most_pairs));
    eprintln!(
        "{test}: 10000 calls, {total_pairs} pairs ({grown} larger than the call before, \
         {shrunk} smaller), largest batch {most_pairs} pairs and {most_bodies} bodies; \
         device memory high-water mark {high_water} bytes ({:.2} MiB), bound {bound} bytes; \
         wgpu's allocator holds {:?} bytes of the device (None: no report on this backend); \
         {:.1} s",
        high_water as f64 / f64::from(1 << 20),
        context
            .device()
            .generate_allocator_report()
            .map(|report| report.total_allocated_bytes),
        start.elapsed().as_secs_f64()
    );
}

/// Four threads call one pipeline at once. Calls are serialised inside it, so what the test
/// needs is calls that overlap in time (one waiting while another runs, buffers growing under
/// a waiting caller): it asserts that some did, repeating the round (at most five times) in
/// the unlikely case that the scheduler ran every call alone, and checks every answer.
#[test]
fn four_threads_share_one_pipeline_with_overlapping_calls() {
    let test = "four_threads_share_one_pipeline_with_overlapping_calls";
    let Some(context) = common::gpu_context(test) else {
        return;
    };
    let pipeline = Arc::new(SweepPipeline::new(&context).unwrap());
    for round in 0..5u64 {
        let overlapping = four_threads_one_round(test, &pipeline, round);
        eprintln!(
            "{test}: round {round}: {overlapping} of 100 calls overlapped in time with another \
             thread's call"
        );
        if overlapping > 0 {
            return;
        }
    }
    panic!("{test}: in five rounds no two threads' calls overlapped: nothing shared was tested");
}

/// One round of [`four_threads_share_one_pipeline_with_overlapping_calls`]: checks every
/// answer and returns how many calls overlapped in time with another thread's.
fn four_threads_one_round(test: &str, pipeline: &Arc<SweepPipeline>, round: u64) -> usize {
    // Each thread its own sizes, in its own order, so that buffers grow while others wait.
    let workloads: Vec<Vec<Workload>> = (0..4u64)
        .map(|thread| {
            (0..25u64)
                .map(|call| {
                    let pairs = [1, 700, 20_000, 64, 5_000][((call + thread) % 5) as usize];
                    world(
                        pairs + thread as usize,
                        1_000 * thread + call + 100_000 * round,
                    )
                })
                .collect()
        })
        .collect();
    let start = Arc::new(Barrier::new(workloads.len()));
    let threads: Vec<_> = workloads
        .into_iter()
        .map(|workloads| {
            let (pipeline, start) = (Arc::clone(pipeline), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                let mut calls = Vec::new();
                for workload in workloads {
                    let began = Instant::now();
                    let impacts =
                        pipeline.sweep(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT);
                    calls.push((workload, impacts.unwrap(), began..Instant::now()));
                }
                calls
            })
        })
        .collect();
    let calls: Vec<_> = threads
        .into_iter()
        .map(|handle| handle.join().unwrap())
        .collect();
    let spans: Vec<_> = (calls.iter().enumerate())
        .flat_map(|(thread, own)| own.iter().map(move |(_, _, span)| (thread, span)))
        .collect();
    let overlapping = spans
        .iter()
        .filter(|&&(thread, span)| {
            (spans.iter()).any(|&(other, them)| {
                other != thread && them.start < span.end && span.start < them.end
            })
        })
        .count();
    for (thread, own) in calls.iter().enumerate() {
        for (call, (workload, impacts, _)) in own.iter().enumerate() {
            let name = format!("{test}: round {round}, thread {thread}, call {call}");
            assert_right(&name, workload, impacts);
            // The same answers as one thread alone gets: no call saw another's data.
            let alone = pipeline
                .sweep(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT)
                .unwrap();
            assert_eq!(impacts, &alone, "{name}");
        }
    }
    overlapping
}

#[test]
fn a_destroyed_device_fails_every_later_call_at_once() {
    let test = "a_destroyed_device_fails_every_later_call_at_once";
    let Some(context) = common::gpu_context(test) else {
        return;
    };
    // The limit only turns a hang into a failure; it is not what the test checks.
    let hang = Some(Duration::from_secs(30));
    let pipeline = SweepPipeline::new(&context)
        .unwrap()
        .with_poll_timeout(hang);
    let workload = world(10_000, 50);
    let before = pipeline
        .sweep(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT)
        .unwrap();
    context.device().destroy();
    let assert_lost = |pipeline: &SweepPipeline, name: &str| match pipeline.sweep(
        &workload.bodies,
        &workload.pairs,
        SweepOptions::DEFAULT,
    ) {
        Err(Error::Device(message)) => {
            assert!(message.contains("device lost"), "{name}: {message}");
            eprintln!("{test}: {name}: {message}");
        }
        other => panic!(
            "{name}: expected Error::Device, got {:?}",
            other.map(|impacts| impacts.len())
        ),
    };
    for call in 0..3 {
        assert_lost(&pipeline, &format!("call {call} after destroy"));
    }
    // Building a pipeline on the lost device fails the same way, at once.
    match SweepPipeline::new(&context) {
        Err(Error::Device(message)) => assert!(message.contains("device lost"), "{message}"),
        other => panic!(
            "a pipeline built after the loss: expected Error::Device, got {:?}",
            other.map(|_| "a pipeline")
        ),
    }
    // A new context is the way on.
    let again = common::gpu_context(test).expect("the adapter is still there");
    let after = SweepPipeline::new(&again)
        .unwrap()
        .sweep(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT)
        .unwrap();
    assert_eq!(after, before);
}
