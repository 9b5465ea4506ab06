//! The sweep stage's two outputs side by side on bodies and pairs resident on the device:
//! impact records (32 bytes a pair, `main`) against times only (4 bytes a pair,
//! `times_main`), each recorded, submitted and waited for, alternating so that both see the
//! same machine load; then each with the copy of its output to a host-visible buffer.
//!
//! ```text
//! cargo run --release --example stage_outputs -- [--rounds R]
//! ```
//!
//! Workloads: those of `fast_path` (the lattice: 25,000 bodies, 200,000 pairs; the bullets:
//! 200,000 bodies, 100,000 pairs). Prints the adapter, the cost model (bytes a pair moves in
//! each case, a model, not a measurement) and each output's median M pairs/s over the rounds
//! with the ratio of the two. On a software adapter (lavapipe, llvmpipe) the shader runs on
//! the host's CPU cores: the ratio says how much the output's bytes cost there, not on a GPU.
//! Exits 2 without an adapter.

mod common;
mod peers;

use std::error::Error;
use std::process::ExitCode;
use std::time::Instant;

use common::parse;
use sweepcast::SweepOptions;
use sweepcast::gpu::GpuContext;
use sweepcast::low_level::layout::BodyRecord;
use sweepcast::low_level::{SweepBuffers, SweepOutput, SweepStage};

fn main() -> ExitCode {
    let mut rounds = 15usize;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let parsed = match (flag.as_str(), args.next()) {
            ("--rounds", Some(v)) => parse(&v).map(|r| rounds = r),
            _ => Err(format!("bad option {flag}; see the file's header")),
        };
        if let Err(message) = parsed {
            return common::bad_options(&message);
        }
    }
    let context = match common::gpu_context() {
        Ok(context) => context,
        Err(code) => return code,
    };
    match run(&context, rounds) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(context: &GpuContext, rounds: usize) -> Result<(), Box<dyn Error>> {
    let (device, queue) = (context.device(), context.queue());
    println!("adapter: {}", context.describe());
    println!("host: {}", common::machine());
    let stage = SweepStage::new(device)?;
    let (workloads, _) = peers::fast_path_workloads();
    for (name, workload) in &workloads {
        let records: Vec<BodyRecord> = workload.bodies.iter().map(|&b| b.into()).collect();
        let count = workload.pairs.len() as u64;
        let outputs = [SweepOutput::Impacts, SweepOutput::Times].map(|output| {
            let buffers = match output {
                SweepOutput::Impacts => stage.create_buffers(device, records.len() as u64, count),
                SweepOutput::Times => {
                    stage.create_time_buffers(device, records.len() as u64, count)
                }
            }?;
            queue.write_buffer(buffers.bodies(), 0, bytemuck::cast_slice(&records));
            queue.write_buffer(buffers.pairs(), 0, bytemuck::cast_slice(&workload.pairs));
            let readback = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback"),
                size: count * output.size(),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            Ok((buffers, readback))
        });
        let outputs = outputs
            .into_iter()
            .collect::<Result<Vec<_>, sweepcast::Error>>()?;
        // Bodies read: each at most once from memory when the cache holds it across its
        // pairs, twice a pair when it never does.
        let body_bytes = 32.0 * records.len() as f64 / count as f64;
        println!(
            "{name}: {} bodies, {count} pairs; cost model, bytes a pair: pair 8, bodies {body_bytes:.0} (cached) to 64 (uncached), output as below",
            records.len()
        );
        for (buffers, _) in &outputs {
            let output = buffers.output_kind();
            let size = output.size() as f64;
            println!(
                "  {output:?}: writes {size:.0}; stage {:.0}-{:.0} (one dispatch), with the copy back {:.0}-{:.0} (and one copy)",
                8.0 + body_bytes + size,
                8.0 + 64.0 + size,
                8.0 + body_bytes + 3.0 * size,
                8.0 + 64.0 + 3.0 * size
            );
        }
        for copy_back in [false, true] {
            let mut rates = vec![Vec::new(); outputs.len()];
            for _ in 0..=rounds {
                for (k, (buffers, readback)) in outputs.iter().enumerate() {
                    let seconds = sweep_once(context, &stage, buffers, readback, copy_back)?;
                    rates[k].push(count as f64 / seconds / 1e6);
                }
            }
            let what = if copy_back {
                "with the copy back"
            } else {
                "stage only"
            };
            let medians: Vec<f64> = rates
                .iter_mut()
                .map(|rates| {
                    // The first round warms up.
                    let rates = &mut rates[1..];
                    rates.sort_by(f64::total_cmp);
                    rates[rates.len() / 2]
                })
                .collect();
            println!(
                "  {what:18}: Impacts {:.1} M pairs/s, Times {:.1} M pairs/s, ratio {:.2}",
                medians[0],
                medians[1],
                medians[1] / medians[0]
            );
        }
    }
    Ok(())
}

/// One sweep of every pair of `buffers` (and the copy of its output to `readback`, mapped),
/// submitted and waited for; its seconds.
fn sweep_once(
    context: &GpuContext,
    stage: &SweepStage,
    buffers: &SweepBuffers,
    readback: &wgpu::Buffer,
    copy_back: bool,
) -> Result<f64, Box<dyn Error>> {
    let (device, queue) = (context.device(), context.queue());
    let count = buffers.pair_capacity();
    let output_bytes = count * buffers.output_kind().size();
    let start = Instant::now();
    let mut encoder = device.create_command_encoder(&Default::default());
    stage.record(
        queue,
        &mut encoder,
        buffers,
        count as u32,
        SweepOptions::DEFAULT,
    )?;
    if copy_back {
        encoder.copy_buffer_to_buffer(buffers.output(), 0, readback, 0, output_bytes);
    }
    queue.submit([encoder.finish()]);
    if !copy_back {
        common::wait_for(device)?;
        return Ok(start.elapsed().as_secs_f64());
    }
    let (sender, receiver) = std::sync::mpsc::channel();
    readback
        .slice(..)
        .map_async(wgpu::MapMode::Read, move |result| {
            let _ = sender.send(result);
        });
    common::wait_for(device)?;
    receiver.recv()??;
    readback.unmap();
    Ok(start.elapsed().as_secs_f64())
}
