//! One entry point of a stage's shader as the stages record it: its pipeline, with a bind
//! group layout of exactly the bindings it uses, so that no entry point binds more storage
//! buffers than wgpu's default limits allow (8 a stage), however many its shader declares;
//! and the helpers every stage builds on (a shader module, a stage compiled in error scopes,
//! a clear recorded). The device's limits are `context.rs`'s, the checks of a caller's
//! buffers `buffers.rs`'s, the radix sorter `sort.rs`'s and the log of recorded commands
//! `observe.rs`'s.

/// The data contract every stage's source begins with (`shaders/shared.wgsl`).
pub const SHARED_WGSL: &str = include_str!("../../shaders/shared.wgsl");

use super::observe::{Observed, ObservedWorkgroups, observe};
use crate::error::Error;

/// How many workgroups a dispatch runs: given by the host, or read on the device from the
/// first three words of a buffer with usage `INDIRECT`.
pub(super) enum Workgroups<'a> {
    Direct(u32, u32),
    Indirect(&'a wgpu::Buffer),
}

/// How an entry point uses one of its bindings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Access {
    /// A uniform block (the step's parameters).
    Uniform,
    /// Read-only storage.
    Read,
    /// Read-write storage (atomics among them).
    Write,
}

/// The bindings of one entry point: `(binding, access)` in group 0.
pub(super) type Bindings = &'static [(u32, Access)];

/// A stage's shader as the stage compiles it: its file (the label of its module and its
/// kernels), its source, and each entry point the stage builds with its bindings. The stage
/// builds its kernels from this list, and `bindings_tests.rs` checks each table against
/// naga's reflection of the source, so that the tables cannot drift from the shaders.
pub(super) struct Shader {
    pub(super) file: &'static str,
    pub(super) source: &'static str,
    pub(super) entry_points: &'static [(&'static str, Bindings)],
}

impl Shader {
    /// The shader module of the source, labelled with the file.
    pub(super) fn module(&self, device: &wgpu::Device) -> wgpu::ShaderModule {
        module(device, self.file, self.source)
    }

    /// The kernel of the entry point named `name` of `module` (made by [`Shader::module`]),
    /// with the bindings the list gives it; panics where the list lacks it.
    pub(super) fn kernel(
        &self,
        device: &wgpu::Device,
        module: &wgpu::ShaderModule,
        name: &str,
    ) -> Kernel {
        let &(name, bindings) = self
            .entry_points
            .iter()
            .find(|(entry_point, _)| *entry_point == name)
            .unwrap_or_else(|| panic!("{name} is not among the entry points of {}", self.file));
        Kernel::new(device, module, self.file, name, bindings)
    }
}

/// One entry point: its pipeline and the layout of its bind group.
#[derive(Debug, Clone)]
pub(super) struct Kernel {
    /// The shader file, as the stage labels its module.
    shader: &'static str,
    name: &'static str,
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    bindings: Bindings,
}

impl Kernel {
    /// The pipeline of `name` in `module` (made from the file `shader`), with a layout of
    /// `bindings`.
    pub(super) fn new(
        device: &wgpu::Device,
        module: &wgpu::ShaderModule,
        shader: &'static str,
        name: &'static str,
        bindings: Bindings,
    ) -> Self {
        use wgpu::BufferBindingType::{Storage, Uniform};
        let entries: Vec<_> = bindings
            .iter()
            .map(|&(binding, access)| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: match access {
                        Access::Uniform => Uniform,
                        Access::Read => Storage { read_only: true },
                        Access::Write => Storage { read_only: false },
                    },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(name),
            entries: &entries,
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(name),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(name),
            layout: Some(&pipeline_layout),
            module,
            entry_point: Some(name),
            compilation_options: Default::default(),
            cache: None,
        });
        Self {
            shader,
            name,
            pipeline,
            layout,
            bindings,
        }
    }

    /// The storage buffers the entry point binds: what it needs of the device's
    /// `max_storage_buffers_per_shader_stage`.
    pub(super) fn storage_buffers(&self) -> u32 {
        self.bindings
            .iter()
            .filter(|(_, access)| *access != Access::Uniform)
            .count() as u32
    }

    /// Its bind group over the buffer `buffer(binding)` of each binding it uses.
    pub(super) fn bind<'a>(
        &self,
        device: &wgpu::Device,
        buffer: impl Fn(u32) -> &'a wgpu::Buffer,
    ) -> wgpu::BindGroup {
        let entries: Vec<_> = self
            .bindings
            .iter()
            .map(|&(binding, _)| wgpu::BindGroupEntry {
                binding,
                resource: buffer(binding).as_entire_binding(),
            })
            .collect();
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(self.name),
            layout: &self.layout,
            entries: &entries,
        })
    }

    /// Records one dispatch of the entry point on `group` (made by [`Kernel::bind`]).
    pub(super) fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        group: &wgpu::BindGroup,
        workgroups: Workgroups<'_>,
    ) {
        observe(|| Observed::Dispatch {
            shader: self.shader,
            entry_point: self.name,
            workgroups: match workgroups {
                Workgroups::Direct(x, y) => ObservedWorkgroups::Direct(x, y),
                Workgroups::Indirect(buffer) => ObservedWorkgroups::Indirect(buffer.clone()),
            },
        });
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(self.name),
            timestamp_writes: None,
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, group, &[]);
        match workgroups {
            Workgroups::Direct(x, y) => pass.dispatch_workgroups(x, y, 1),
            Workgroups::Indirect(buffer) => pass.dispatch_workgroups_indirect(buffer, 0),
        }
    }
}

/// The shader module of a stage's source, labelled with its file.
pub(super) fn module(
    device: &wgpu::Device,
    label: &'static str,
    source: &str,
) -> wgpu::ShaderModule {
    device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    })
}

/// The most storage buffers one of `kernels` binds.
pub(super) fn most_storage_buffers(kernels: &[&Kernel]) -> u32 {
    kernels
        .iter()
        .map(|kernel| kernel.storage_buffers())
        .max()
        .unwrap_or(0)
}

/// Called after each stage's passes with the stage's name: a benchmark submits and waits
/// there, or writes a timestamp.
pub(super) type StageEnd<'a> =
    dyn FnMut(&mut wgpu::CommandEncoder, &'static str) -> Result<(), Error> + 'a;

/// `compile()`'s stage, made on a device whose limits hold the step's, in error scopes of its
/// own.
pub(super) fn compile_checked<T>(
    device: &wgpu::Device,
    compile: impl FnOnce() -> T,
) -> Result<T, Error> {
    super::context::check_limits(&device.limits())?;
    let scopes = super::buffers::ErrorScopes::push(device);
    let stage = compile();
    pollster::block_on(scopes.finish())?;
    Ok(stage)
}

/// Records a clear of `buffer` from `offset` (`size` bytes, or to its end), observed.
pub(super) fn clear(
    encoder: &mut wgpu::CommandEncoder,
    buffer: &wgpu::Buffer,
    offset: u64,
    size: Option<u64>,
) {
    observe(|| Observed::Clear {
        bytes: size.unwrap_or(buffer.size() - offset),
    });
    encoder.clear_buffer(buffer, offset, size);
}
