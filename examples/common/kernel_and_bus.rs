//! Where a blocking sweep's time goes on the device side: the kernel alone (timestamp queries
//! around one dispatch on bodies and pairs already on the device) and the bus's own rate
//! (a plain upload of the same bytes from a mapped staging buffer, and a plain readback of the
//! output's bytes into host memory), measured in the same run as the end-to-end figure.

use std::time::{Duration, Instant};

use sweepcast::MovingSphere;
use sweepcast::gpu::GpuContext;
use sweepcast::low_level::layout::BodyRecord;
use sweepcast::low_level::{SweepOutput, SweepStage};

use super::{Timestamps, read_mapped, wait_for};

/// The kernel's device time and the bus's rates for one batch.
pub struct KernelAndBus {
    /// The kernel's median device time over the runs; `None` where the adapter has no
    /// timestamps inside encoders.
    pub kernel: Option<Duration>,
    /// Bytes uploaded a call (bodies and pairs) and their median time, host write included.
    pub upload: (u64, Duration),
    /// Bytes read back a call (the output) and their median time, copy out of the mapping
    /// included.
    pub readback: (u64, Duration),
}

impl KernelAndBus {
    /// What the bytes and the kernel add up to: the least a blocking call could take.
    pub fn floor(&self) -> Option<Duration> {
        self.kernel
            .map(|kernel| kernel + self.upload.1 + self.readback.1)
    }

    /// One line: the kernel, the bus's rates and the floor they make.
    pub fn describe(&self, pairs: usize) -> String {
        let rate = |(bytes, time): (u64, Duration)| bytes as f64 / time.as_secs_f64() / 1e9;
        let ms = |time: Duration| time.as_secs_f64() * 1e3;
        let kernel = self
            .kernel
            .map_or("no timestamps on this adapter".into(), |kernel| {
                format!(
                    "{:.3} ms ({:.0} M pairs/s)",
                    ms(kernel),
                    pairs as f64 / kernel.as_secs_f64() / 1e6
                )
            });
        let floor = self.floor().map_or(String::new(), |floor| {
            format!("; kernel + bus {:.3} ms", ms(floor))
        });
        format!(
            "kernel alone {kernel}; bus up {:.2} GB/s ({:.3} ms for {:.1} MB), down {:.2} GB/s ({:.3} ms for {:.1} MB){floor}",
            rate(self.upload),
            ms(self.upload.1),
            self.upload.0 as f64 / 1e6,
            rate(self.readback),
            ms(self.readback.1),
            self.readback.0 as f64 / 1e6,
        )
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Measures the sweep's kernel (output `kind`) on `bodies` and `pairs`, and the bus with the
/// same bytes, `runs` times each after a warm-up.
pub fn measure(
    context: &GpuContext,
    bodies: &[MovingSphere],
    pairs: &[[u32; 2]],
    kind: SweepOutput,
    runs: usize,
) -> Result<KernelAndBus, String> {
    let text = |error: sweepcast::Error| error.to_string();
    let (device, queue) = (context.device(), context.queue());
    let stage = SweepStage::new(device).map_err(text)?;
    let (n, p) = (bodies.len() as u64, pairs.len() as u64);
    let buffers = match kind {
        SweepOutput::Times => stage.create_time_buffers(device, n, p),
        _ => stage.create_buffers(device, n, p),
    }
    .map_err(text)?;
    let records: Vec<BodyRecord> = bodies.iter().map(|&body| body.into()).collect();
    let up: Vec<u8> = [bytemuck::cast_slice(&records), bytemuck::cast_slice(pairs)].concat();
    let body_bytes = std::mem::size_of_val(records.as_slice()) as u64;
    let down_bytes = p * kind.size();
    use wgpu::BufferUsages as Usage;
    let staging = |label, size, usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        })
    };
    let upload = staging(
        "bus upload",
        up.len() as u64,
        Usage::MAP_WRITE | Usage::COPY_SRC,
    );
    let readback = staging(
        "bus readback",
        down_bytes,
        Usage::MAP_READ | Usage::COPY_DST,
    );
    let map_for_writing = |buffer: &wgpu::Buffer| -> Result<(), String> {
        let (sender, receiver) = std::sync::mpsc::channel();
        buffer
            .slice(..)
            .map_async(wgpu::MapMode::Write, move |result| {
                let _ = sender.send(result);
            });
        wait_for(device)?;
        receiver
            .recv()
            .map_err(|error| error.to_string())?
            .map_err(|error| format!("mapping the upload: {error}"))
    };
    let mut host = vec![0u8; down_bytes as usize];
    let mut ups = Vec::new();
    let mut downs = Vec::new();
    let mut kernels = Vec::new();
    let timestamps = Timestamps::new(context, 2);
    for run in 0..=runs {
        // Up: write the mapped staging buffer, copy it to the stage's bodies and pairs.
        let start = Instant::now();
        map_for_writing(&upload)?;
        upload
            .slice(..)
            .get_mapped_range_mut()
            .map_err(|error| error.to_string())?
            .copy_from_slice(&up);
        upload.unmap();
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&upload, 0, buffers.bodies(), 0, body_bytes);
        encoder.copy_buffer_to_buffer(&upload, body_bytes, buffers.pairs(), 0, 8 * p);
        queue.submit([encoder.finish()]);
        wait_for(device)?;
        let up_time = start.elapsed();
        // The kernel alone, between two timestamps.
        let mut encoder = device.create_command_encoder(&Default::default());
        if let Some(stamps) = &timestamps {
            encoder.write_timestamp(&stamps.queries, 0);
        }
        stage
            .record(queue, &mut encoder, &buffers, p as u32, Default::default())
            .map_err(text)?;
        if let Some(stamps) = &timestamps {
            encoder.write_timestamp(&stamps.queries, 1);
            encoder.resolve_query_set(&stamps.queries, 0..2, &stamps.resolve, 0);
            encoder.copy_buffer_to_buffer(&stamps.resolve, 0, &stamps.readback, 0, 16);
        }
        queue.submit([encoder.finish()]);
        wait_for(device)?;
        if let Some(stamps) = &timestamps {
            let ticks: [u64; 2] = read_mapped(device, &stamps.readback, |bytes| {
                bytemuck::pod_read_unaligned(&bytes[..16])
            })?;
            let nanos = ticks[1].saturating_sub(ticks[0]) as f64 * stamps.period_ns;
            if run > 0 {
                kernels.push(Duration::from_nanos(nanos as u64));
            }
        }
        // Down: copy the output to the readback, map it, copy it out.
        let start = Instant::now();
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(buffers.output(), 0, &readback, 0, down_bytes);
        queue.submit([encoder.finish()]);
        read_mapped(device, &readback, |bytes| host.copy_from_slice(bytes))?;
        if run > 0 {
            ups.push(up_time);
            downs.push(start.elapsed());
        }
    }
    Ok(KernelAndBus {
        kernel: (!kernels.is_empty()).then(|| median(kernels)),
        upload: (up.len() as u64, median(ups)),
        readback: (down_bytes, median(downs)),
    })
}
