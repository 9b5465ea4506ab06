//! The WGSL sweep on a real adapter against the f64 oracle, judged by backward error with the
//! GPU bound (see `sweepcast::parity`). `tests/seeds.rs` compares it with its f32 twin on
//! hand-computed cases.

mod common;

use sweepcast::gpu::SweepPipeline;
use sweepcast::parity::{self, GPU_BOUND};
use sweepcast::{Error, Impact, SweepOptions};
use testkit::{Workload, WorkloadConfig};

fn check(pipeline: &SweepPipeline, name: &str, workload: &Workload) -> Vec<Option<Impact>> {
    let impacts = pipeline
        .sweep(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT)
        .expect("valid workload");
    assert_eq!(
        impacts.len(),
        workload.pairs.len(),
        "{name}: one result per pair"
    );
    let report = parity::compare(
        &workload.bodies,
        &workload.pairs,
        SweepOptions::DEFAULT,
        &impacts,
        None,
        GPU_BOUND,
    );
    println!("{name}: {report}");
    assert!(report.passed(), "{name}: {report}");
    assert!(
        report.candidate_hits > 0 && report.candidate_hits < report.pairs,
        "{name}: {report}"
    );
    impacts
}

#[test]
fn gpu_matches_oracle_on_random_and_adversarial_sets() {
    let Some(context) = common::gpu_context("gpu_matches_oracle_on_random_and_adversarial_sets")
    else {
        return;
    };
    let pipeline = SweepPipeline::new(&context).unwrap();
    let million = WorkloadConfig {
        bodies: 200_000,
        pairs: 1_000_000,
        seed: 7,
        ..Default::default()
    };
    check(&pipeline, "GPU random 3D", &Workload::random(&million));
    let flat = WorkloadConfig {
        bodies: 100_000,
        pairs: 300_000,
        seed: 8,
        dimensions: 2,
        ..Default::default()
    };
    check(&pipeline, "GPU random 2D", &Workload::random(&flat));
    for offset in [1e3, 1e6] {
        let far = WorkloadConfig {
            offset,
            seed: 9,
            bodies: 100_000,
            pairs: 300_000,
            ..Default::default()
        };
        check(
            &pipeline,
            &format!("GPU random 3D at offset {offset:e}"),
            &Workload::random(&far),
        );
    }
    check(&pipeline, "GPU adversarial", &Workload::adversarial(3));
    check(&pipeline, "GPU bullets", &Workload::bullets(200_000, 12));
}

#[test]
fn chunked_dispatches_equal_one_dispatch() {
    let Some(context) = common::gpu_context("chunked_dispatches_equal_one_dispatch") else {
        return;
    };
    let workload = Workload::random(&WorkloadConfig {
        bodies: 5_000,
        pairs: 20_000,
        seed: 11,
        ..Default::default()
    });
    let whole = SweepPipeline::new(&context).unwrap();
    let chunked = SweepPipeline::new(&context)
        .unwrap()
        .with_max_pairs_per_dispatch(1_000);
    assert_eq!(chunked.max_pairs_per_dispatch(), 1_000);
    let expected = whole
        .sweep(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT)
        .unwrap();
    let got = chunked
        .sweep(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT)
        .unwrap();
    assert_eq!(
        got, expected,
        "20 chunks of 1000 pairs must give the single dispatch's answers"
    );
}

#[test]
fn pipeline_reused_across_growing_and_shrinking_batches() {
    let Some(context) = common::gpu_context("pipeline_reused_across_growing_and_shrinking_batches")
    else {
        return;
    };
    let pipeline = SweepPipeline::new(&context).unwrap();
    let mut impacts = Vec::new();
    let (mut largest, mut memory) = (0, pipeline.device_memory_bytes());
    for (step, pairs) in [10usize, 5_000, 3, 70_000, 1, 2_000]
        .into_iter()
        .enumerate()
    {
        let config = WorkloadConfig {
            bodies: 1 + pairs / 4,
            pairs,
            seed: step as u64,
            ..Default::default()
        };
        let workload = Workload::random(&config);
        pipeline
            .sweep_into(
                &workload.bodies,
                &workload.pairs,
                SweepOptions::DEFAULT,
                &mut impacts,
            )
            .unwrap();
        assert_eq!(impacts.len(), pairs, "step {step}");
        // Stale records from a larger earlier batch would fail the bound here.
        let report = parity::compare(
            &workload.bodies,
            &workload.pairs,
            SweepOptions::DEFAULT,
            &impacts,
            None,
            GPU_BOUND,
        );
        assert!(report.passed(), "step {step}: {report}");
        // Buffers grow only when a batch is larger than any before and than the 1,024 pairs
        // and bodies they are made for.
        let now = pipeline.device_memory_bytes();
        if pairs > largest.max(1024) {
            assert!(
                now > memory,
                "step {step}: a larger batch must grow the buffers"
            );
            largest = pairs;
        } else {
            assert_eq!(
                now, memory,
                "step {step}: a smaller batch must reuse the buffers"
            );
        }
        memory = now;
    }
}

#[test]
fn twenty_million_pairs_in_chunks_none_dropped() {
    let Some(context) = common::gpu_context("twenty_million_pairs_in_chunks_none_dropped") else {
        return;
    };
    let pipeline = SweepPipeline::new(&context).unwrap();
    let config = WorkloadConfig {
        bodies: 1_000_000,
        pairs: 20_000_000,
        seed: 20,
        ..Default::default()
    };
    let workload = Workload::random(&config);
    let chunks = workload
        .pairs
        .len()
        .div_ceil(pipeline.max_pairs_per_dispatch());
    println!(
        "20M pairs in {chunks} dispatches of at most {}",
        pipeline.max_pairs_per_dispatch()
    );
    check(&pipeline, "GPU 20M pairs", &workload);
}

/// `SweepPipeline::times_of_impact`: the times of the records `sweep` gives on the same
/// pipeline, to the bit, in chunks; within the bound of the oracle; its memory is made on the
/// first call only and is what `device_memory_bytes` documents; a bad pair is a typed error
/// that leaves the vector empty.
#[test]
fn pipeline_times_are_the_records_times() {
    let Some(context) = common::gpu_context("pipeline_times_are_the_records_times") else {
        return;
    };
    // Chunks of 4,096 pairs: a batch of 12,000 runs three dispatches.
    const CHUNK: usize = 4_096;
    let pipeline = SweepPipeline::new(&context)
        .unwrap()
        .with_max_pairs_per_dispatch(CHUNK);
    let mut workload = Workload::random(&WorkloadConfig {
        bodies: 3_000,
        pairs: 12_000,
        seed: 23,
        ..Default::default()
    });
    let adversarial = Workload::adversarial(24);
    let first = workload.bodies.len() as u32;
    workload.bodies.extend_from_slice(&adversarial.bodies);
    workload.pairs.extend(
        adversarial
            .pairs
            .iter()
            .map(|&[i, j]| [first + i, first + j]),
    );
    let (bodies, pairs) = (&workload.bodies, &workload.pairs);

    let before = pipeline.device_memory_bytes();
    let mut times = Vec::new();
    for options in [SweepOptions::default(), SweepOptions::event_driven()] {
        let impacts = pipeline.sweep(bodies, pairs, options).unwrap();
        let with_records = pipeline.device_memory_bytes();
        pipeline
            .times_of_impact_into(bodies, pairs, options, &mut times)
            .unwrap();
        // The times' own buffers: 32-byte parameters and dispatch, 4-byte times on the device
        // and in the two readbacks, for a chunk of at most CHUNK pairs (already a power of
        // two).
        let added = pipeline.device_memory_bytes() - with_records;
        if with_records == before || options == SweepOptions::default() {
            assert_eq!(
                added,
                64 + 12 * CHUNK as u64,
                "the first times call's buffers"
            );
        } else {
            assert_eq!(added, 0, "later calls of the same size reuse them");
        }
        assert_eq!(times.len(), pairs.len());
        for (k, (time, impact)) in times.iter().zip(&impacts).enumerate() {
            let expected = impact.map(|impact| (impact.time_of_impact.to_bits(), impact.status));
            let got = time.get().map(|(time, status)| (time.to_bits(), status));
            assert_eq!(
                got, expected,
                "{options:?}: pair {k}: {time:?} against the record's {impact:?}"
            );
        }
        let report = parity::compare(bodies, pairs, options, &times, None, GPU_BOUND);
        println!("{options:?}: {report}");
        assert!(report.passed(), "{options:?}: {report}");
        assert!(
            report.candidate_hits > 100 && report.candidate_hits < pairs.len(),
            "{report}"
        );
    }
    let bad = [[0, bodies.len() as u32]];
    let error = pipeline
        .times_of_impact_into(bodies, &bad, SweepOptions::DEFAULT, &mut times)
        .unwrap_err();
    assert!(
        matches!(error, Error::PairIndexOutOfRange { .. }),
        "{error:?}"
    );
    assert!(times.is_empty(), "left empty on error");
}

/// `low_level::host_profile` sees every stage of a chunked call, once per chunk where the
/// stage is per chunk, with the bytes the stage's doc counts; it does not change the answers,
/// and outside it (or nested in it) nothing leaks between calls.
#[test]
fn host_profile_names_each_stage_of_a_chunked_call() {
    use sweepcast::low_level::host_profile;
    let Some(context) = common::gpu_context("host_profile_names_each_stage_of_a_chunked_call")
    else {
        return;
    };
    let workload = Workload::random(&WorkloadConfig {
        bodies: 500,
        pairs: 2_500,
        seed: 3,
        ..Default::default()
    });
    let (bodies, pairs) = (&workload.bodies, &workload.pairs);
    let pipeline = SweepPipeline::new(&context)
        .unwrap()
        .with_max_pairs_per_dispatch(1_000);
    let plain = pipeline
        .sweep(bodies, pairs, SweepOptions::DEFAULT)
        .unwrap();
    let ((profiled, inner), outer) = host_profile(|| {
        host_profile(|| {
            pipeline
                .sweep(bodies, pairs, SweepOptions::DEFAULT)
                .unwrap()
        })
    });
    assert_eq!(profiled, plain, "profiling changes nothing");
    assert!(
        outer.is_empty(),
        "a nested profile takes the inner call's spans"
    );
    let count = |stage: &str| inner.iter().filter(|span| span.stage == stage).count();
    // Three chunks; the bodies are packed straight into their upload buffer once, the pairs
    // checked once and written once a chunk; the staging buffers were mapped by the first
    // call, so this call maps each before writing it.
    for (stage, times) in [
        ("pack", 1),
        ("check", 1),
        ("map upload", 4),
        ("write upload", 3),
        ("unmap", 4 + 3),
        ("record", 3),
        ("wait", 3),
        ("decode", 3),
    ] {
        assert_eq!(count(stage), times, "{stage} in {inner:?}");
    }
    let bytes = |stage: &str| -> u64 {
        inner
            .iter()
            .filter(|span| span.stage == stage)
            .map(|span| span.bytes)
            .sum()
    };
    let body = std::mem::size_of::<sweepcast::MovingSphere>() as u64;
    assert_eq!(
        bytes("pack"),
        500 * (body + 32),
        "each body read, its record written"
    );
    assert_eq!(bytes("check"), 2_500 * 8, "each pair read");
    assert_eq!(
        bytes("write upload"),
        2 * 2_500 * 8,
        "each pair read and written"
    );
    let (_, none) = host_profile(|| ());
    assert!(none.is_empty());
}

/// Split calls give the unsplit answers to the bit, both outputs, with a chunk boundary on
/// either side of every pair count tried and a last chunk of one pair: the chunks pipelined
/// (two, three, four and five of them in rotation over the two staging buffers).
#[test]
fn split_calls_equal_the_unsplit_call_at_every_boundary() {
    let Some(context) = common::gpu_context("split_calls_equal_the_unsplit_call_at_every_boundary")
    else {
        return;
    };
    let workload = Workload::random(&WorkloadConfig {
        bodies: 2_000,
        pairs: 4_001,
        seed: 17,
        ..Default::default()
    });
    let whole = SweepPipeline::new(&context).unwrap();
    let split = SweepPipeline::new(&context)
        .unwrap()
        .with_max_pairs_per_dispatch(1_000);
    for count in [999, 1_000, 1_001, 2_001, 3_001, 4_001] {
        let pairs = &workload.pairs[..count];
        let options = SweepOptions::DEFAULT;
        let expected = whole.sweep(&workload.bodies, pairs, options).unwrap();
        let got = split.sweep(&workload.bodies, pairs, options).unwrap();
        assert_eq!(got, expected, "{count} pairs in chunks of 1000");
        let expected = whole
            .times_of_impact(&workload.bodies, pairs, options)
            .unwrap();
        let got = split
            .times_of_impact(&workload.bodies, pairs, options)
            .unwrap();
        assert_eq!(
            time_bits(&got),
            time_bits(&expected),
            "{count} times in chunks of 1000"
        );
    }
}

/// The bits of each time, to compare to the bit.
fn time_bits(times: &[sweepcast::TimeOfImpact]) -> Vec<u32> {
    bytemuck::cast_slice(times).to_vec()
}

/// A call that the split rule itself cuts into chunks (2^18 + 1 pairs: four chunks of
/// 65,537 pairs, the last of 65,534, on a device whose dispatch takes them) gives, both
/// outputs, to the bit, what calls on pieces of 2^16 pairs (one chunk each) give, and
/// the oracle's answers within the bound.
#[test]
fn a_call_the_split_rule_cuts_equals_calls_on_its_pieces() {
    use sweepcast::low_level::host_profile;
    let test = "a_call_the_split_rule_cuts_equals_calls_on_its_pieces";
    let Some(context) = common::gpu_context(test) else {
        return;
    };
    let workload = Workload::random(&WorkloadConfig {
        bodies: 100_000,
        pairs: (1 << 18) + 1,
        seed: 31,
        ..Default::default()
    });
    let (bodies, pairs) = (&workload.bodies, &workload.pairs);
    let pipeline = SweepPipeline::new(&context).unwrap();
    let options = SweepOptions::DEFAULT;
    let (impacts, spans) = host_profile(|| pipeline.sweep(bodies, pairs, options).unwrap());
    let chunk = pairs
        .len()
        .div_ceil(sweepcast::low_level::PIPELINE_CHUNKS)
        .max(sweepcast::low_level::PIPELINE_MIN_CHUNK)
        .min(pipeline.max_pairs_per_dispatch());
    let dispatches = spans.iter().filter(|span| span.stage == "record").count();
    assert_eq!(
        dispatches,
        pairs.len().div_ceil(chunk),
        "{chunk} pairs a chunk"
    );
    assert!(dispatches >= 4, "{dispatches} chunks");
    let times = pipeline.times_of_impact(bodies, pairs, options).unwrap();
    let piece = sweepcast::low_level::PIPELINE_MIN_CHUNK;
    let mut pieces = Vec::new();
    let mut piece_times = Vec::new();
    for part in pairs.chunks(piece) {
        pieces.extend(pipeline.sweep(bodies, part, options).unwrap());
        piece_times.extend(pipeline.times_of_impact(bodies, part, options).unwrap());
    }
    assert!(
        impacts == pieces,
        "{test}: the impacts differ from the pieces'"
    );
    assert!(
        time_bits(&times) == time_bits(&piece_times),
        "{test}: the times differ from the pieces'"
    );
    let report = parity::compare(bodies, pairs, options, &impacts, None, GPU_BOUND);
    println!("{test}: {dispatches} chunks of {chunk} pairs: {report}");
    assert!(report.passed(), "{report}");
}

/// Bodies set once answer every later batch of pairs as calls given them do, to the bit (a
/// batch the split rule cuts into chunks among them), on an open and a periodic box; a call
/// given bodies of its own replaces them (a later batch of pairs is then a typed error until
/// they are set again); a bad pair or bad bodies are typed errors that leave the vector empty,
/// and the set bodies survive a bad pair.
#[test]
fn bodies_set_once_answer_as_calls_given_them() {
    use sweepcast::PeriodicBox;
    let test = "bodies_set_once_answer_as_calls_given_them";
    let Some(context) = common::gpu_context(test) else {
        return;
    };
    let workload = Workload::random(&WorkloadConfig {
        bodies: 20_000,
        pairs: (1 << 18) + 3,
        seed: 41,
        ..Default::default()
    });
    let (bodies, pairs) = (&workload.bodies, &workload.pairs);
    let plain = SweepPipeline::new(&context).unwrap();
    let set = SweepPipeline::new(&context).unwrap();
    let periodic = SweepOptions::DEFAULT.with_periodic_box(PeriodicBox::cube(4096.0).unwrap());
    let (mut impacts, mut times) = (Vec::new(), Vec::new());
    for options in [SweepOptions::DEFAULT, periodic] {
        set.set_bodies(bodies, options).unwrap();
        for batch in [&pairs[..1], &pairs[..1000], &pairs[5..70_000], &pairs[..]] {
            set.sweep_pairs_into(batch, &mut impacts).unwrap();
            set.times_of_impact_pairs_into(batch, &mut times).unwrap();
            let expected = plain.sweep(bodies, batch, options).unwrap();
            let expected_times = plain.times_of_impact(bodies, batch, options).unwrap();
            assert!(
                impacts == expected,
                "{test}: {} pairs' impacts",
                batch.len()
            );
            assert!(
                time_bits(&times) == time_bits(&expected_times),
                "{test}: {} pairs' times",
                batch.len()
            );
        }
    }
    // A pair beyond the bodies: typed, the vector empty, the bodies still set.
    let beyond = [[0, bodies.len() as u32]];
    let error = set.sweep_pairs_into(&beyond, &mut impacts).unwrap_err();
    assert!(
        matches!(error, Error::PairIndexOutOfRange { .. }),
        "{error:?}"
    );
    assert!(impacts.is_empty());
    set.times_of_impact_pairs_into(&pairs[..10], &mut times)
        .unwrap();
    assert_eq!(times.len(), 10);
    // A call given bodies replaces them.
    set.times_of_impact(bodies, &pairs[..10], SweepOptions::DEFAULT)
        .unwrap();
    let error = set
        .sweep_pairs_into(&pairs[..10], &mut impacts)
        .unwrap_err();
    assert!(
        matches!(error, Error::InvalidBuffer { name: "bodies", .. }),
        "{error:?}"
    );
    assert!(impacts.is_empty());
    // Bad bodies: typed, and none set.
    let mut bad = bodies.clone();
    bad[12_345].radius = -1.0;
    let error = set.set_bodies(&bad, SweepOptions::DEFAULT).unwrap_err();
    assert!(
        matches!(error, Error::NegativeRadius { body: 12_345, .. }),
        "{error:?}"
    );
    let error = set
        .times_of_impact_pairs_into(&pairs[..10], &mut times)
        .unwrap_err();
    assert!(matches!(error, Error::InvalidBuffer { .. }), "{error:?}");
    // No bodies: every pair names a missing one; no pairs, nothing.
    set.set_bodies::<sweepcast::MovingSphere>(&[], SweepOptions::DEFAULT)
        .unwrap();
    set.times_of_impact_pairs_into(&[], &mut times).unwrap();
    assert!(times.is_empty());
    let error = set
        .times_of_impact_pairs_into(&[[0, 1]], &mut times)
        .unwrap_err();
    assert!(
        matches!(error, Error::PairIndexOutOfRange { .. }),
        "{error:?}"
    );
}

/// A batch large enough to be packed on all cores names the first invalid body however the
/// blocks are shared out, leaves the caller's vector empty, and the pipeline's next call is
/// right.
#[test]
fn bodies_packed_on_all_cores_name_the_first_invalid_body() {
    let Some(pipeline) =
        common::shared_pipeline("bodies_packed_on_all_cores_name_the_first_invalid_body")
    else {
        return;
    };
    let workload = Workload::random(&WorkloadConfig {
        bodies: 40_000,
        pairs: 5_000,
        seed: 23,
        ..Default::default()
    });
    let mut bodies = workload.bodies.clone();
    bodies[35_000].radius = -1.0;
    bodies[30_001].center.y = f32::NAN;
    let mut impacts = vec![None; 3];
    let error = pipeline
        .sweep_into(
            &bodies,
            &workload.pairs,
            SweepOptions::DEFAULT,
            &mut impacts,
        )
        .unwrap_err();
    assert!(
        matches!(error, Error::NonFinite { body: 30_001, .. }),
        "the first invalid body: {error:?}"
    );
    assert!(
        impacts.is_empty(),
        "the caller's vector is empty after an error"
    );
    let right = pipeline
        .sweep(&workload.bodies, &workload.pairs, SweepOptions::DEFAULT)
        .unwrap();
    check(pipeline, "after an error", &workload);
    assert_eq!(right.len(), workload.pairs.len());
}
