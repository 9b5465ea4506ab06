//! One entry point of a stage's shader as the stages record it: its pipeline, with a bind
//! group layout of exactly the bindings it uses, so that no entry point binds more storage
//! buffers than wgpu's default limits allow (8 a stage), however many its shader declares;
//! and the helpers every stage builds on (a shader module, the check of a caller's buffer).
//! Also what a benchmark observes of the commands a step records ([`observed`]): wgpu cannot
//! list an encoder's commands, so the step's own recording helpers say what they record.

/// The data contract every stage's source begins with (`shaders/shared.wgsl`).
pub const SHARED_WGSL: &str = include_str!("../../shaders/shared.wgsl");

use std::cell::RefCell;

use crate::error::Error;

/// How many workgroups a dispatch runs: given by the host, or read on the device from the
/// first three words of a buffer with usage `INDIRECT`.
pub(super) enum Workgroups<'a> {
    Direct(u32, u32),
    Indirect(&'a wgpu::Buffer),
}

/// Checks a caller's buffer for one binding of `element_size`-byte elements: usage
/// `STORAGE`, a whole number (at least one) of elements, within the device's largest binding.
pub(super) fn check_binding(
    name: &'static str,
    buffer: &wgpu::Buffer,
    element_size: u64,
    largest_binding: u64,
) -> Result<(), Error> {
    let reason = if !buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
        format!("usage {:?} lacks STORAGE", buffer.usage())
    } else if buffer.size() < element_size || !buffer.size().is_multiple_of(element_size) {
        format!(
            "{} bytes is not a whole number of {element_size}-byte elements",
            buffer.size()
        )
    } else if buffer.size() > largest_binding {
        format!(
            "{} bytes exceed this device's largest storage binding of {largest_binding} bytes",
            buffer.size()
        )
    } else {
        return Ok(());
    };
    Err(Error::InvalidBuffer { name, reason })
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
        observe(|| Observed::dispatch(self.shader, self.name, &workgroups));
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
    dyn FnMut(&mut wgpu::CommandEncoder, &'static str) -> Result<(), crate::error::Error> + 'a;

/// The limits every stage of the step needs: see
/// [`StepStage::required_limits`](super::StepStage::required_limits).
pub(super) fn required_limits() -> wgpu::Limits {
    let mut limits = wgpu::Limits::downlevel_defaults();
    limits.max_storage_buffers_per_shader_stage = STORAGE_BUFFERS_PER_STAGE;
    limits.max_compute_workgroups_per_dimension = 65_535;
    limits.max_compute_invocations_per_workgroup = 256;
    limits.max_compute_workgroup_size_x = 256;
    limits
}

/// Storage buffers the step's entry points bind at most (wgpu's default limit).
pub(super) const STORAGE_BUFFERS_PER_STAGE: u32 = 8;

/// [`crate::error::Error::DeviceLimit`] where `limits` are below [`StepStage::required_limits`].
pub(super) fn check_limits(limits: &wgpu::Limits) -> Result<(), crate::error::Error> {
    let required = required_limits();
    for (limit, have, need) in [
        (
            "max_storage_buffers_per_shader_stage",
            limits.max_storage_buffers_per_shader_stage,
            required.max_storage_buffers_per_shader_stage,
        ),
        (
            "max_compute_workgroups_per_dimension",
            limits.max_compute_workgroups_per_dimension,
            required.max_compute_workgroups_per_dimension,
        ),
        (
            "max_compute_invocations_per_workgroup",
            limits.max_compute_invocations_per_workgroup,
            required.max_compute_invocations_per_workgroup,
        ),
        (
            "max_compute_workgroup_size_x",
            limits.max_compute_workgroup_size_x,
            required.max_compute_workgroup_size_x,
        ),
    ] {
        if have < need {
            return Err(crate::error::Error::DeviceLimit {
                limit,
                required: u64::from(need),
                available: u64::from(have),
            });
        }
    }
    Ok(())
}

/// [`crate::error::Error::InvalidBuffer`] unless `offset` is that of a `u32` within `count`, which has
/// usage `COPY_SRC`.
pub(super) fn check_count(count: &wgpu::Buffer, offset: u64) -> Result<(), crate::error::Error> {
    let reason = if !count.usage().contains(wgpu::BufferUsages::COPY_SRC) {
        format!("usage {:?} lacks COPY_SRC", count.usage())
    } else if !offset.is_multiple_of(4)
        || offset.checked_add(4).is_none_or(|end| end > count.size())
    {
        format!(
            "offset {offset} is not that of a u32 within its {} bytes",
            count.size()
        )
    } else {
        return Ok(());
    };
    Err(crate::error::Error::InvalidBuffer {
        name: "count",
        reason,
    })
}

/// `compile()`'s stage, made on a device whose limits hold the step's, in error scopes of its
/// own.
pub(super) fn compile_checked<T>(
    device: &wgpu::Device,
    compile: impl FnOnce() -> T,
) -> Result<T, crate::error::Error> {
    check_limits(&device.limits())?;
    let scopes = super::buffers::ErrorScopes::push(device);
    let stage = compile();
    pollster::block_on(scopes.finish())?;
    Ok(stage)
}

/// A radix sorter of key-value records for sorts of at most `capacity` records: specialised
/// for `adapter` where known (lampshade's 8-bit kernel on NVIDIA Vulkan with subgroups, its
/// 4-bit one on some others), else its portable 2-bit kernel. The 8-bit kernel refuses sorts
/// above [`eight_bit_limit`] records (`RadixElementCountLimitExceeded`), so a capacity above
/// it takes the portable kernel, which has no such limit.
pub(super) fn new_sorter(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    adapter: Option<&wgpu::AdapterInfo>,
    capacity: u64,
) -> lampshade::KeyValueSorter {
    match adapter {
        Some(adapter) if capacity <= eight_bit_limit(device) => {
            lampshade::KeyValueSorter::new_for_adapter(device, queue, adapter)
        }
        _ => lampshade::KeyValueSorter::new(device, queue),
    }
}

/// The most records lampshade 0.13's 8-bit sort takes on `device`: 1,792 a workgroup of its
/// one-sweep tiles times the workgroups of one dimension, at most 2^28 - 1 (its packed count;
/// `element_count_limit` in lampshade:src/sort/eight_bit.rs). 117,438,720 on a device of 65,535
/// workgroups a dimension.
pub(super) fn eight_bit_limit(device: &wgpu::Device) -> u64 {
    (u64::from(device.limits().max_compute_workgroups_per_dimension) * 1792).min(0x0fff_ffff)
}

/// One command of a step as its recording helpers observe it: a dispatch (with the buffer an
/// indirect one reads its workgroups from), a sort of lampshade's (with its count buffer), a
/// clear, or the end of a stage.
pub(super) enum Observed {
    Dispatch {
        shader: &'static str,
        entry_point: &'static str,
        workgroups: ObservedWorkgroups,
    },
    Sort {
        count: wgpu::Buffer,
        capacity: u32,
        key_bits: u32,
    },
    Clear {
        bytes: u64,
    },
    StageEnd(&'static str),
}

/// The workgroups of an observed dispatch: given by the host, or read from a buffer.
pub(super) enum ObservedWorkgroups {
    Direct(u32, u32),
    Indirect(wgpu::Buffer),
}

impl Observed {
    pub(super) fn dispatch(
        shader: &'static str,
        entry_point: &'static str,
        workgroups: &Workgroups<'_>,
    ) -> Self {
        let workgroups = match *workgroups {
            Workgroups::Direct(x, y) => ObservedWorkgroups::Direct(x, y),
            Workgroups::Indirect(buffer) => ObservedWorkgroups::Indirect(buffer.clone()),
        };
        Self::Dispatch {
            shader,
            entry_point,
            workgroups,
        }
    }
}

thread_local! {
    /// The commands observed on this thread while [`observed`] runs; `None` otherwise, when
    /// [`observe`] costs a thread-local read.
    static OBSERVED: RefCell<Option<Vec<Observed>>> = const { RefCell::new(None) };
}

/// Adds a command to the log of the [`observed`] call running on this thread, if any.
pub(super) fn observe(command: impl FnOnce() -> Observed) {
    OBSERVED.with_borrow_mut(|log| {
        if let Some(log) = log {
            log.push(command());
        }
    });
}

/// Runs `record`, returning what it returns and the commands the recording helpers observed
/// meanwhile on this thread (recording is single-threaded: one encoder, one `&mut`).
pub(super) fn observed<T>(record: impl FnOnce() -> T) -> (T, Vec<Observed>) {
    /// Puts back the log of an enclosing call (normally `None`), also when `record` panics.
    struct Restore(Option<Vec<Observed>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OBSERVED.set(self.0.take());
        }
    }
    let restore = Restore(OBSERVED.replace(Some(Vec::new())));
    let value = record();
    let log = OBSERVED.take().unwrap_or_default();
    drop(restore);
    (value, log)
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

/// Records lampshade's stable sort of the key-value records of `input` into `output`, as
/// many as the `u32` in `count` says (at most `capacity`), keys of `key_bits` bits; observed
/// as one command, since its own dispatches are lampshade's.
pub(super) fn record_sort(
    sorter: &mut lampshade::KeyValueSorter,
    encoder: &mut wgpu::CommandEncoder,
    [input, output]: [&wgpu::Buffer; 2],
    count: &wgpu::Buffer,
    capacity: u32,
    key_bits: u32,
) -> Result<(), Error> {
    observe(|| Observed::Sort {
        count: count.clone(),
        capacity,
        key_bits,
    });
    sorter
        .record_sort_counted_with_key_bits(encoder, input, output, count, capacity, key_bits)
        .map_err(|error| Error::Device(format!("radix sort: {error}")))
}

/// The error of a sorter that was handed over and not given back (a failed growth that was
/// not retried): never seen through the public API.
pub(super) fn lost_sorter() -> Error {
    Error::Device("the step's buffers lost their sorter in a failed growth".into())
}
