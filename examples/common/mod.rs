//! Helpers shared by the examples: argument parsing and timing.

#![allow(dead_code)] // each example takes what it needs

#[cfg(feature = "gpu")]
pub mod kernel_and_bus;
pub mod picture;

use std::time::{Duration, Instant};

/// Reports options that could not be parsed: the message on stderr, and the exit code every
/// example uses for bad arguments (3).
pub fn bad_options(message: &str) -> std::process::ExitCode {
    eprintln!("{message}");
    std::process::ExitCode::from(3)
}

/// Parses one option value.
pub fn parse<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("cannot parse {text:?}"))
}

/// Durations of the timed runs, sorted.
pub struct Timings(pub Vec<Duration>);

impl Timings {
    /// The median run.
    pub fn median(&self) -> Duration {
        self.0[self.0.len() / 2]
    }

    /// Pairs per second of the median run, the slowest and the fastest.
    pub fn rates(&self, pairs: usize) -> (f64, f64, f64) {
        let rate = |d: Duration| pairs as f64 / d.as_secs_f64();
        (
            rate(self.median()),
            rate(self.0[self.0.len() - 1]),
            rate(self.0[0]),
        )
    }
}

/// Runs `work` once to warm up, then `runs` times.
pub fn time_runs(runs: usize, mut work: impl FnMut()) -> Timings {
    work();
    let mut times: Vec<Duration> = (0..runs.max(1))
        .map(|_| {
            let start = Instant::now();
            work();
            start.elapsed()
        })
        .collect();
    times.sort();
    Timings(times)
}

/// The CPU's model name (from /proc/cpuinfo on Linux) and the instruction set the
/// vectorised batches run on, for the first line of a benchmark's output: numbers differ
/// from CPU to CPU.
pub fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("model name"))
                .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let simd = sweepcast::low_level::Simd::active();
    format!(
        "{model}, {simd:?} ({} pairs a block)",
        sweepcast::low_level::LANES
    )
}

/// The GPU context every GPU example runs on, or the exit code they use without an adapter
/// (2), the reason printed.
#[cfg(feature = "gpu")]
pub fn gpu_context() -> Result<sweepcast::gpu::GpuContext, std::process::ExitCode> {
    sweepcast::gpu::GpuContext::new_blocking().map_err(|error| {
        eprintln!("error: {error}");
        std::process::ExitCode::from(2)
    })
}

/// Waits until the work submitted to `device` so far is done. GL ends one wait after about
/// 2.1 s whatever was asked: wait again.
#[cfg(feature = "gpu")]
#[allow(dead_code)]
pub fn wait_for(device: &wgpu::Device) -> Result<(), String> {
    loop {
        match device.poll(wgpu::PollType::wait_indefinitely()) {
            Ok(_) => return Ok(()),
            Err(wgpu::PollError::Timeout) => continue,
            Err(error) => return Err(format!("waiting for the device: {error}")),
        }
    }
}

/// Maps `buffer` (usage `MAP_READ`) once the work submitted so far is done, reads it with
/// `read` and unmaps it.
#[cfg(feature = "gpu")]
#[allow(dead_code)]
pub fn read_mapped<T>(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
    read: impl FnOnce(&[u8]) -> T,
) -> Result<T, String> {
    let slice = buffer.slice(..);
    let (sender, receiver) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |result| {
        let _ = sender.send(result);
    });
    wait_for(device)?;
    receiver
        .recv()
        .map_err(|error| error.to_string())?
        .map_err(|error| format!("mapping the readback: {error}"))?;
    let value = {
        let view = slice
            .get_mapped_range()
            .map_err(|error| error.to_string())?;
        read(&view)
    };
    buffer.unmap();
    Ok(value)
}

/// A device of a benchmark's own on the adapter `GpuContext::new` picks from the environment,
/// opened with the adapter's limits and the timestamp queries (and, with `subgroups`, the
/// subgroups) it offers: the features it got.
#[cfg(feature = "gpu")]
pub fn bench_context(
    label: &str,
    subgroups: bool,
) -> Result<(sweepcast::gpu::GpuContext, wgpu::Features), String> {
    use sweepcast::gpu::GpuContext;
    let text = |error: sweepcast::Error| error.to_string();
    let adapter = GpuContext::new_blocking().map_err(text)?.adapter().clone();
    let mut wanted =
        wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
    if subgroups {
        wanted |= wgpu::Features::SUBGROUP;
    }
    let features = adapter.features() & wanted;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some(label),
        required_features: features,
        required_limits: adapter.limits(),
        memory_hints: wgpu::MemoryHints::Performance,
        ..Default::default()
    }))
    .map_err(|error| error.to_string())?;
    let context = GpuContext::from_device(adapter, device, queue).map_err(text)?;
    Ok((context, features))
}

/// A query set of `count` timestamps written inside an encoder, its resolve buffer and its
/// readback, and the device's tick in nanoseconds.
#[cfg(feature = "gpu")]
pub struct Timestamps {
    pub queries: wgpu::QuerySet,
    pub resolve: wgpu::Buffer,
    pub readback: wgpu::Buffer,
    pub period_ns: f64,
}

#[cfg(feature = "gpu")]
impl Timestamps {
    /// Timestamps on `context`'s device, where it has `TIMESTAMP_QUERY_INSIDE_ENCODERS`.
    pub fn new(context: &sweepcast::gpu::GpuContext, count: u32) -> Option<Self> {
        let device = context.device();
        if !device
            .features()
            .contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS)
        {
            return None;
        }
        let buffer = |label, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 8 * u64::from(count),
                usage,
                mapped_at_creation: false,
            })
        };
        use wgpu::BufferUsages as Usage;
        Some(Self {
            queries: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count,
            }),
            resolve: buffer("timestamps", Usage::QUERY_RESOLVE | Usage::COPY_SRC),
            readback: buffer("timestamps readback", Usage::MAP_READ | Usage::COPY_DST),
            period_ns: f64::from(context.queue().get_timestamp_period()),
        })
    }
}
