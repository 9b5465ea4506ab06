//! Shared by the GPU tests: get a context, or skip loudly (fail with SWEEPCAST_REQUIRE_GPU=1).

use std::sync::OnceLock;

use sweepcast::gpu::{GpuContext, SweepPipeline};

/// The context every GPU test uses, or `None` (after a loud message) when no adapter exists
/// and `SWEEPCAST_REQUIRE_GPU` is not `1`.
#[allow(dead_code)]
pub fn gpu_context(test: &str) -> Option<GpuContext> {
    match GpuContext::new_blocking() {
        Ok(context) => {
            eprintln!("{test}: running on {}", context.describe());
            Some(context)
        }
        Err(error) => {
            if std::env::var("SWEEPCAST_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("{test}: SWEEPCAST_REQUIRE_GPU=1 but {error}");
            }
            eprintln!(
                "\n!!!!!!!! SKIPPED {test}: {error}\n!!!!!!!! GPU parity is NOT tested on this machine; set SWEEPCAST_REQUIRE_GPU=1 to make this a failure\n"
            );
            None
        }
    }
}

/// One context and pipeline shared by every test of a binary, or `None` (loudly, for each
/// `test` that asks) when no adapter exists and `SWEEPCAST_REQUIRE_GPU` is not `1`.
#[allow(dead_code)]
pub fn shared_pipeline(test: &str) -> Option<&'static SweepPipeline> {
    static GPU: OnceLock<Option<(GpuContext, SweepPipeline)>> = OnceLock::new();
    let gpu = GPU.get_or_init(|| {
        gpu_context(test).map(|context| {
            let pipeline = SweepPipeline::new(&context).unwrap();
            (context, pipeline)
        })
    });
    if gpu.is_none() {
        eprintln!("!!!!!!!! SKIPPED the GPU part of {test}: no GPU adapter (see above)");
    }
    gpu.as_ref().map(|(_, pipeline)| pipeline)
}

/// Maps a `MAP_READ` buffer after the work submitted to `device` so far and copies it out.
#[allow(dead_code)]
pub fn read_mapped(device: &wgpu::Device, buffer: &wgpu::Buffer) -> Vec<u8> {
    let slice = buffer.slice(..);
    let (sender, receiver) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |result| {
        sender.send(result).unwrap();
    });
    // GL ends one wait after about 2.1 s whatever was asked: wait again.
    loop {
        match device.poll(wgpu::PollType::wait_indefinitely()) {
            Ok(_) => break,
            Err(wgpu::PollError::Timeout) => continue,
            Err(error) => panic!("waiting for the device: {error}"),
        }
    }
    receiver.recv().unwrap().expect("the readback maps");
    let bytes = slice.get_mapped_range().expect("mapped").to_vec();
    buffer.unmap();
    bytes
}
