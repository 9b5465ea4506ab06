//! Shared by the GPU tests: get a context, or skip loudly (fail with SWEEPCAST_REQUIRE_GPU=1).

use std::sync::OnceLock;

use sweepcast::gpu::{GpuContext, SweepPipeline};
use sweepcast::layout::{StepParams, WORKGROUP_SIZE};
use wgpu::BufferUsages as Usage;
use wgpu::util::DeviceExt;

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

/// What a stage's outputs hold before it runs.
#[allow(dead_code)]
pub const UNWRITTEN: u8 = 0xab;

/// A stage file's module on the device, to run one entry point at a time beside its twin.
#[allow(dead_code)]
pub struct StageRunner<'a> {
    context: &'a GpuContext,
    module: wgpu::ShaderModule,
}

#[allow(dead_code)]
impl<'a> StageRunner<'a> {
    /// The module of `source` (a stage file after the contract), labelled `label`.
    pub fn new(context: &'a GpuContext, label: &str, source: &str) -> Self {
        let module = context
            .device()
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
        Self { context, module }
    }

    /// Runs `entry` for `invocations` invocations with `params` at binding 0 (for an entry
    /// point that reads them) and each of `bindings` (binding, contents) as a storage buffer;
    /// returns every binding's contents afterwards, in the order given.
    pub fn run(
        &self,
        entry: &str,
        params: Option<&StepParams>,
        invocations: usize,
        bindings: &[(u32, &[u8])],
    ) -> Vec<Vec<u8>> {
        let device = self.context.device();
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: None,
            module: &self.module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: None,
        });
        let uniform = params.map(|params| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("params"),
                contents: bytemuck::bytes_of(params),
                usage: Usage::UNIFORM,
            })
        });
        let buffers: Vec<wgpu::Buffer> = bindings
            .iter()
            .map(|(binding, contents)| {
                device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(&format!("{entry} binding {binding}")),
                    contents,
                    usage: Usage::STORAGE | Usage::COPY_SRC,
                })
            })
            .collect();
        let mut entries: Vec<wgpu::BindGroupEntry> = uniform
            .iter()
            .map(|uniform| wgpu::BindGroupEntry {
                binding: 0,
                resource: uniform.as_entire_binding(),
            })
            .collect();
        entries.extend(bindings.iter().zip(&buffers).map(|((binding, _), buffer)| {
            wgpu::BindGroupEntry {
                binding: *binding,
                resource: buffer.as_entire_binding(),
            }
        }));
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(entry),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            let workgroups = invocations.div_ceil(WORKGROUP_SIZE as usize).max(1);
            pass.dispatch_workgroups(workgroups as u32, 1, 1);
        }
        let staging: Vec<wgpu::Buffer> = buffers
            .iter()
            .map(|buffer| {
                let copy = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("readback"),
                    size: buffer.size(),
                    usage: Usage::MAP_READ | Usage::COPY_DST,
                    mapped_at_creation: false,
                });
                encoder.copy_buffer_to_buffer(buffer, 0, &copy, 0, buffer.size());
                copy
            })
            .collect();
        self.context.queue().submit([encoder.finish()]);
        staging
            .iter()
            .map(|buffer| read_mapped(self.context.device(), buffer))
            .collect()
    }
}

/// `count` elements of `T`'s size, every byte [`UNWRITTEN`].
#[allow(dead_code)]
pub fn unwritten<T>(count: usize) -> Vec<u8> {
    vec![UNWRITTEN; (count * size_of::<T>()).max(4)]
}

/// `bytes` as `T`s (copied, so that alignment does not matter), the first `count`.
#[allow(dead_code)]
pub fn cast<T: bytemuck::Pod>(bytes: &[u8], count: usize) -> Vec<T> {
    bytemuck::pod_collect_to_vec(&bytes[..count * size_of::<T>()])
}

/// A twin output that starts as the device's does: every byte [`UNWRITTEN`].
#[allow(dead_code)]
pub fn unwritten_twin<T: bytemuck::Pod>(count: usize) -> Vec<T> {
    bytemuck::pod_collect_to_vec(&vec![UNWRITTEN; count * size_of::<T>()])
}
