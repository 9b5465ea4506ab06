//! `SweepPipeline`: `shaders/sweep.wgsl` on the GPU, built once and run every step.

use std::time::{Duration, Instant};

use futures_intrusive::sync::Mutex;
use rayon::prelude::*;

use super::context::{ErrorSink, GpuContext};
use super::layout::{GpuBody, ImpactRecord, Params, WORKGROUP_SIZE};
use crate::error::Error;
use crate::geometry::{Impact, MovingSphere};
use crate::validate::{pack_bodies, validate_pairs};

/// The WGSL source of the sweep stage.
pub const SWEEP_WGSL: &str = include_str!("../../shaders/sweep.wgsl");

const BODY_SIZE: u64 = size_of::<GpuBody>() as u64;
const PAIR_SIZE: u64 = size_of::<[u32; 2]>() as u64;
const RECORD_SIZE: u64 = size_of::<ImpactRecord>() as u64;
const PARAMS_SIZE: u64 = size_of::<Params>() as u64;
/// Smallest buffer capacity, in elements; below it growth by doubling is not worth a buffer.
const MIN_CAPACITY: u64 = 1024;

/// How long one wait for the device may last before a call gives up with [`Error::Timeout`],
/// unless [`SweepPipeline::with_poll_timeout`] says otherwise.
///
/// Finite so that a hung device turns into an error instead of a thread blocked for ever
/// (holding the pipeline, so that every other thread calling it blocks too). One wait covers
/// one dispatch of at most [`SweepPipeline::max_pairs_per_dispatch`] pairs: on Mesa's
/// software adapters with 2 cores a whole call of the largest dispatch (4,194,240 pairs)
/// took 0.8 to 1.6 s, so a minute is far above any honest wait.
pub const DEFAULT_POLL_TIMEOUT: Duration = Duration::from_secs(60);

/// The swept test of every candidate pair on the GPU, one invocation per pair.
///
/// Build it once from a [`GpuContext`] and call it every step: the device buffers, the staging
/// buffer and the bind group are kept between calls and only grow (to the next power of two)
/// when a batch is larger than any before. Batches larger than one dispatch or one storage
/// binding can hold are split into chunks transparently. `SweepPipeline` is `Send + Sync`;
/// concurrent calls are serialised.
///
/// Memory is bounded by the largest batch seen: the buffers never shrink, so a long run that
/// once sweeps a large batch keeps that batch's buffers (at most twice its size, see
/// [`SweepPipeline::device_memory_bytes`]) for the pipeline's life. Drop the pipeline and
/// build a new one to give the memory back.
///
/// # Example
/// ```no_run
/// use glam::Vec3;
/// use sweepcast::{gpu::{GpuContext, SweepPipeline}, MovingSphere};
///
/// let context = GpuContext::new_blocking()?;
/// let pipeline = SweepPipeline::new(&context);
/// let bodies = [
///     MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(10.0, 0.0, 0.0)),
///     MovingSphere::new(Vec3::new(5.0, 0.0, 0.0), 1.0, Vec3::ZERO),
/// ];
/// let impacts = pipeline.sweep(&bodies, &[[0, 1]])?;
/// assert!(impacts[0].is_some());
/// # Ok::<(), sweepcast::Error>(())
/// ```
#[derive(Debug)]
pub struct SweepPipeline {
    device: wgpu::Device,
    queue: wgpu::Queue,
    errors: ErrorSink,
    pipeline: wgpu::ComputePipeline,
    max_bodies: u64,
    max_pairs_per_dispatch: u64,
    poll_timeout: Option<Duration>,
    buffers: Mutex<Buffers>,
}

/// Everything a call writes: kept between calls, grown when a batch outgrows it.
#[derive(Debug)]
struct Buffers {
    params: wgpu::Buffer,
    bodies: Option<wgpu::Buffer>,
    pairs: Option<wgpu::Buffer>,
    impacts: Option<wgpu::Buffer>,
    /// Host-visible source of `bodies`.
    body_upload: Option<Upload>,
    /// Host-visible source of `params` (first 16 bytes) and `pairs` (after them).
    pair_upload: Option<Upload>,
    /// Host-visible copy of `impacts`, mapped to read the results.
    readback: Option<wgpu::Buffer>,
    bind_group: Option<wgpu::BindGroup>,
    packed_bodies: Vec<GpuBody>,
}

/// A buffer the host writes while it is mapped and the GPU copies from once it is unmapped.
/// Kept between calls so that no step allocates staging memory.
#[derive(Debug)]
struct Upload {
    buffer: wgpu::Buffer,
    mapped: bool,
}

/// How to size and use one of the grown buffers.
#[derive(Copy, Clone)]
struct BufferSpec {
    label: &'static str,
    usage: wgpu::BufferUsages,
    element_size: u64,
    /// Bytes before the elements.
    header: u64,
    /// Most elements the buffer may hold.
    max: u64,
}

impl SweepPipeline {
    /// Compiles the shader and sizes the batch limits from the device's limits.
    #[must_use]
    pub fn new(context: &GpuContext) -> Self {
        let device = context.device().clone();
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("sweep.wgsl"),
            source: wgpu::ShaderSource::Wgsl(SWEEP_WGSL.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("sweep"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let limits = device.limits();
        let largest_binding = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        let max_bodies = largest_binding / BODY_SIZE;
        let max_dispatch_pairs =
            u64::from(limits.max_compute_workgroups_per_dimension) * u64::from(WORKGROUP_SIZE);
        // Impact records are the largest per-pair buffer.
        let max_pairs_per_dispatch = max_dispatch_pairs.min(largest_binding / RECORD_SIZE);
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("sweep params"),
            size: PARAMS_SIZE,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Self {
            queue: context.queue().clone(),
            errors: context.errors().clone(),
            device,
            pipeline,
            max_bodies,
            max_pairs_per_dispatch,
            poll_timeout: Some(DEFAULT_POLL_TIMEOUT),
            buffers: Mutex::new(
                Buffers {
                    params,
                    bodies: None,
                    pairs: None,
                    impacts: None,
                    body_upload: None,
                    pair_upload: None,
                    readback: None,
                    bind_group: None,
                    packed_bodies: Vec::new(),
                },
                true,
            ),
        }
    }

    /// Caps the pairs per dispatch below the device's own limit (at least one workgroup).
    /// Smaller chunks bound the device memory a call holds; tests use it to exercise chunking.
    #[must_use]
    pub fn with_max_pairs_per_dispatch(mut self, max_pairs: usize) -> Self {
        self.max_pairs_per_dispatch = (max_pairs as u64)
            .max(u64::from(WORKGROUP_SIZE))
            .min(self.max_pairs_per_dispatch);
        self
    }

    /// Sets how long one wait for the device may last: `Some(limit)` makes a wait that has not
    /// finished after `limit` return [`Error::Timeout`]; `None` waits for as long as it takes.
    /// The default is [`DEFAULT_POLL_TIMEOUT`].
    ///
    /// A call waits once per dispatch (for its results) and, from the second call on, once
    /// per upload buffer (for the previous call's copies to finish), so the limit bounds each
    /// wait, not the whole call; nor does it bound the wait for the pipeline's lock while
    /// another thread's call runs. After a timeout the pipeline stays usable: the next call
    /// waits for the abandoned work to finish before its own and returns correct results.
    ///
    /// Backends differ in what a wait covers. On Vulkan (lavapipe included) the dispatch runs
    /// after `Queue::submit` returns, and a wait that outlasts the limit times out. wgpu's GL
    /// backend on Mesa's llvmpipe runs the whole dispatch inside `Queue::submit`, which no
    /// limit covers: the wait then finds the work done and cannot time out. GL also caps one
    /// wait at about 2.1 s (`i32::MAX` ns); longer limits, and `None`, are honoured by waiting
    /// again.
    #[must_use]
    pub fn with_poll_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.poll_timeout = timeout;
        self
    }

    /// How long one wait for the device may last (see [`SweepPipeline::with_poll_timeout`]).
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Duration> {
        self.poll_timeout
    }

    /// The most pairs one dispatch takes; larger batches are split into chunks of this size.
    #[must_use]
    pub fn max_pairs_per_dispatch(&self) -> usize {
        self.max_pairs_per_dispatch as usize
    }

    /// The most bodies one call takes (one storage binding of this device).
    #[must_use]
    pub fn max_bodies(&self) -> usize {
        self.max_bodies as usize
    }

    /// Bytes of device memory this pipeline holds now: its buffers, grown to the largest
    /// batch so far (bounded by the device limits, whatever the batch).
    ///
    /// With `B` the most bodies and `P` the most pairs of any call so far (`P` capped at
    /// [`SweepPipeline::max_pairs_per_dispatch`]) and `cap(n)` the next power of two at or
    /// above `n` but at least 1024 (and at most the device limit), this is at most
    /// `32 + 64 cap(B) + 80 cap(P)` bytes: the 16-byte parameters twice (uniform and upload),
    /// bodies twice (device and upload, 32 bytes each), pairs twice (8 bytes each) and
    /// records twice (device and readback, 32 bytes each). It is exactly that unless a call
    /// failed since the largest batch (the failed call drops the host-visible buffers and the
    /// next one makes them again, sized for itself).
    #[must_use]
    pub fn device_memory_bytes(&self) -> u64 {
        let buffers = pollster::block_on(self.buffers.lock());
        let size = |buffer: Option<&wgpu::Buffer>| buffer.map_or(0, wgpu::Buffer::size);
        let upload = |upload: &Option<Upload>| size(upload.as_ref().map(|u| &u.buffer));
        buffers.params.size()
            + size(buffers.bodies.as_ref())
            + size(buffers.pairs.as_ref())
            + size(buffers.impacts.as_ref())
            + size(buffers.readback.as_ref())
            + upload(&buffers.body_upload)
            + upload(&buffers.pair_upload)
    }

    /// Sweeps every candidate pair on the GPU, blocking until the results are back.
    ///
    /// # Arguments
    /// * `bodies`: the moving bodies (circles or spheres).
    /// * `pairs`: candidate pairs, each two indices into `bodies`.
    ///
    /// # Returns
    /// One entry per pair, in order: `None` for a miss, else the [`Impact`].
    ///
    /// # Errors
    /// Input errors before anything reaches the GPU: [`Error::NonFinite`],
    /// [`Error::NegativeRadius`], [`Error::PairIndexOutOfRange`], [`Error::TooManyBodies`].
    /// Device errors after: [`Error::Device`], [`Error::Mapping`], and [`Error::Timeout`]
    /// when one wait for the device outlasts the [poll timeout](Self::with_poll_timeout).
    /// After any of them the pipeline stays usable (unless the device was lost).
    pub fn sweep<B>(&self, bodies: &[B], pairs: &[[u32; 2]]) -> Result<Vec<Option<Impact>>, Error>
    where
        B: Copy + Into<MovingSphere>,
    {
        let mut impacts = Vec::new();
        pollster::block_on(self.sweep_into_async(bodies, pairs, &mut impacts))?;
        Ok(impacts)
    }

    /// [`SweepPipeline::sweep`] into a vector the caller keeps between steps.
    ///
    /// # Errors
    /// As [`SweepPipeline::sweep`]; `impacts` is left empty on error.
    pub fn sweep_into<B>(
        &self,
        bodies: &[B],
        pairs: &[[u32; 2]],
        impacts: &mut Vec<Option<Impact>>,
    ) -> Result<(), Error>
    where
        B: Copy + Into<MovingSphere>,
    {
        pollster::block_on(self.sweep_into_async(bodies, pairs, impacts))
    }

    /// The async form of [`SweepPipeline::sweep`].
    ///
    /// # Errors
    /// As [`SweepPipeline::sweep`].
    pub async fn sweep_async<B>(
        &self,
        bodies: &[B],
        pairs: &[[u32; 2]],
    ) -> Result<Vec<Option<Impact>>, Error>
    where
        B: Copy + Into<MovingSphere>,
    {
        let mut impacts = Vec::new();
        self.sweep_into_async(bodies, pairs, &mut impacts).await?;
        Ok(impacts)
    }

    /// The async form of [`SweepPipeline::sweep_into`].
    ///
    /// # Errors
    /// As [`SweepPipeline::sweep`].
    pub async fn sweep_into_async<B>(
        &self,
        bodies: &[B],
        pairs: &[[u32; 2]],
        impacts: &mut Vec<Option<Impact>>,
    ) -> Result<(), Error>
    where
        B: Copy + Into<MovingSphere>,
    {
        impacts.clear();
        let mut buffers = self.buffers.lock().await;
        let buffers = &mut *buffers;
        // An error recorded since the last call (the caller's own use of the device, a lost
        // device) is reported now, before it could be mistaken for one of this call's.
        self.errors.take()?;
        pack_bodies(bodies, &mut buffers.packed_bodies)?;
        validate_pairs(pairs, bodies.len())?;
        if bodies.len() as u64 > self.max_bodies {
            return Err(Error::TooManyBodies {
                count: bodies.len(),
                max: self.max_bodies as usize,
            });
        }
        // wgpu rejects zero-sized bindings, and there is nothing to do.
        if pairs.is_empty() {
            return Ok(());
        }
        impacts.reserve(pairs.len());
        let chunk_capacity = (pairs.len() as u64).min(self.max_pairs_per_dispatch);
        self.ensure_capacity(buffers, bodies.len() as u64, chunk_capacity);
        let result = self.sweep_chunks(buffers, pairs, impacts).await;
        if result.is_err() {
            impacts.clear();
            buffers.discard_transfers();
        }
        result
    }

    /// Grows each buffer that is too small to the next power of two (capped at the device
    /// limit) and rebuilds the bind group if a bound buffer changed.
    fn ensure_capacity(&self, buffers: &mut Buffers, body_count: u64, pair_count: u64) {
        use wgpu::BufferUsages as Usage;
        let bodies = BufferSpec {
            label: "sweep bodies",
            usage: Usage::STORAGE | Usage::COPY_DST,
            element_size: BODY_SIZE,
            header: 0,
            max: self.max_bodies,
        };
        let pairs = BufferSpec {
            label: "sweep pairs",
            element_size: PAIR_SIZE,
            max: self.max_pairs_per_dispatch,
            ..bodies
        };
        let impacts = BufferSpec {
            label: "sweep impacts",
            usage: Usage::STORAGE | Usage::COPY_SRC,
            element_size: RECORD_SIZE,
            ..pairs
        };
        let upload = Usage::MAP_WRITE | Usage::COPY_SRC;
        let body_upload = BufferSpec {
            label: "sweep body upload",
            usage: upload,
            ..bodies
        };
        let pair_upload = BufferSpec {
            label: "sweep params and pairs upload",
            usage: upload,
            header: PARAMS_SIZE,
            ..pairs
        };
        let readback = BufferSpec {
            label: "sweep readback",
            usage: Usage::MAP_READ | Usage::COPY_DST,
            ..impacts
        };

        let device = &self.device;
        let mut rebind = buffers.bind_group.is_none();
        rebind |= grow(device, &mut buffers.bodies, bodies, body_count);
        rebind |= grow(device, &mut buffers.pairs, pairs, pair_count);
        rebind |= grow(device, &mut buffers.impacts, impacts, pair_count);
        grow(device, &mut buffers.readback, readback, pair_count);
        for (upload, spec, count) in [
            (&mut buffers.body_upload, body_upload, body_count),
            (&mut buffers.pair_upload, pair_upload, pair_count),
        ] {
            let was_mapped = upload.as_ref().is_some_and(|u| u.mapped);
            let mut buffer = upload.take().map(|u| u.buffer);
            // A new upload buffer is mapped at creation.
            let created = grow(device, &mut buffer, spec, count);
            *upload = buffer.map(|buffer| Upload {
                buffer,
                mapped: created || was_mapped,
            });
        }
        if rebind {
            fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
                wgpu::BindGroupEntry {
                    binding,
                    resource: buffer.as_entire_binding(),
                }
            }
            let layout = self.pipeline.get_bind_group_layout(0);
            buffers.bind_group = Some(device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("sweep"),
                layout: &layout,
                entries: &[
                    entry(0, buffers.bodies.as_ref().expect("sized above")),
                    entry(1, buffers.pairs.as_ref().expect("sized above")),
                    entry(2, buffers.impacts.as_ref().expect("sized above")),
                    entry(3, &buffers.params),
                ],
            }));
        }
    }

    /// Uploads the bodies once, then runs one dispatch per chunk of pairs.
    async fn sweep_chunks(
        &self,
        buffers: &mut Buffers,
        pairs: &[[u32; 2]],
        impacts: &mut Vec<Option<Impact>>,
    ) -> Result<(), Error> {
        let body_bytes: &[u8] = bytemuck::cast_slice(&buffers.packed_bodies);
        let body_upload = buffers.body_upload.as_mut().expect("sized above");
        self.fill(body_upload, &[body_bytes]).await?;
        let mut upload_bodies = true;
        for chunk in pairs.chunks(self.max_pairs_per_dispatch as usize) {
            self.sweep_chunk(buffers, chunk, upload_bodies, impacts)
                .await?;
            upload_bodies = false;
        }
        Ok(())
    }

    /// One dispatch: upload the chunk's pairs (and on the first, the bodies), run, copy
    /// the records back, map, decode.
    async fn sweep_chunk(
        &self,
        buffers: &mut Buffers,
        chunk: &[[u32; 2]],
        upload_bodies: bool,
        impacts: &mut Vec<Option<Impact>>,
    ) -> Result<(), Error> {
        let pair_count = chunk.len() as u32;
        let params = Params {
            pair_count,
            _pad: [0; 3],
        };
        let pair_upload = buffers.pair_upload.as_mut().expect("sized above");
        self.fill(
            pair_upload,
            &[bytemuck::bytes_of(&params), bytemuck::cast_slice(chunk)],
        )
        .await?;

        let buffer = |b: &Option<wgpu::Buffer>| b.clone().expect("sized above");
        let (bodies, pairs, records, readback) = (
            buffer(&buffers.bodies),
            buffer(&buffers.pairs),
            buffer(&buffers.impacts),
            buffer(&buffers.readback),
        );
        let pair_upload = &buffers.pair_upload.as_ref().expect("sized above").buffer;
        let pair_bytes = u64::from(pair_count) * PAIR_SIZE;
        let record_bytes = u64::from(pair_count) * RECORD_SIZE;
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("sweep"),
            });
        if upload_bodies {
            let body_upload = &buffers.body_upload.as_ref().expect("sized above").buffer;
            let body_bytes = buffers.packed_bodies.len() as u64 * BODY_SIZE;
            encoder.copy_buffer_to_buffer(body_upload, 0, &bodies, 0, body_bytes);
        }
        encoder.copy_buffer_to_buffer(pair_upload, 0, &buffers.params, 0, PARAMS_SIZE);
        encoder.copy_buffer_to_buffer(pair_upload, PARAMS_SIZE, &pairs, 0, pair_bytes);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("sweep"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, buffers.bind_group.as_ref(), &[]);
            pass.dispatch_workgroups(pair_count.div_ceil(WORKGROUP_SIZE), 1, 1);
        }
        encoder.copy_buffer_to_buffer(&records, 0, &readback, 0, record_bytes);
        self.queue.submit([encoder.finish()]);

        let slice = readback.slice(..record_bytes);
        self.map(&slice, wgpu::MapMode::Read).await?;
        let decoded = slice.get_mapped_range().map(|view| {
            let records: &[ImpactRecord] = bytemuck::cast_slice(&view);
            let packed = &buffers.packed_bodies;
            impacts.par_extend(records.par_iter().zip(chunk.par_iter()).map(
                |(record, &[i, j])| record.to_impact(&packed[i as usize], &packed[j as usize]),
            ));
        });
        // Unmap on every path, or the next call could not map it again.
        readback.unmap();
        decoded.map_err(|error| Error::Mapping(error.to_string()))
    }

    /// Writes `pieces` one after another into `upload` from its start (waiting for it to be
    /// mapped first) and unmaps it, ready to be copied from.
    async fn fill(&self, upload: &mut Upload, pieces: &[&[u8]]) -> Result<(), Error> {
        if !upload.mapped {
            self.map(&upload.buffer.slice(..), wgpu::MapMode::Write)
                .await?;
            upload.mapped = true;
        }
        let total: usize = pieces.iter().map(|piece| piece.len()).sum();
        let written = upload
            .buffer
            .slice(..total as u64)
            .get_mapped_range_mut()
            .map(|mut view| {
                let mut offset = 0;
                for piece in pieces {
                    view.slice(offset..offset + piece.len())
                        .copy_from_slice(piece);
                    offset += piece.len();
                }
            });
        upload.buffer.unmap();
        upload.mapped = false;
        written.map_err(|error| Error::Mapping(error.to_string()))
    }

    /// Maps `slice` and waits for it, polling the device (which also waits for the work
    /// submitted before). A device error recorded meanwhile wins over the mapping's result;
    /// on any error the caller discards the buffer (see [`Buffers::discard_transfers`]).
    async fn map(&self, slice: &wgpu::BufferSlice<'_>, mode: wgpu::MapMode) -> Result<(), Error> {
        let (sender, receiver) = futures_intrusive::channel::shared::oneshot_channel();
        slice.map_async(mode, move |result| {
            // A failed send only means the receiver was dropped: the wait below gave up.
            let _ = sender.send(result);
        });
        // Without a completed wait the callback may never run: do not wait for it then.
        self.wait_for_device()?;
        let mapped = receiver.receive().await;
        self.errors.take()?;
        match mapped {
            Some(Ok(())) => Ok(()),
            Some(Err(error)) => Err(Error::Mapping(error.to_string())),
            None => Err(Error::Mapping("the map callback was dropped".into())),
        }
    }

    /// Blocks until the work submitted so far has finished (running the callbacks of the
    /// mappings it completes), or [`Error::Timeout`] once the poll timeout has passed.
    fn wait_for_device(&self) -> Result<(), Error> {
        let start = Instant::now();
        loop {
            let timeout = self
                .poll_timeout
                .map(|limit| limit.saturating_sub(start.elapsed()));
            let poll = || {
                self.device.poll(wgpu::PollType::Wait {
                    submission_index: None,
                    timeout,
                })
            };
            // wgpu panics in `poll` when the driver reports the device lost while waiting
            // (`handle_error_fatal` in its wgpu-core backend): make that the typed, lasting
            // loss it is. `Device::destroy` takes another path, which the tests provoke; this
            // one needs a real driver failure and is not tested.
            let polled =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(poll)).map_err(|panic| {
                    let message = panic
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| panic.downcast_ref::<&str>().copied())
                        .unwrap_or("no message");
                    self.errors.record_lost(format!(
                        "device lost: wgpu panicked while waiting for it ({message})"
                    ));
                    self.errors.take().expect_err("recorded above")
                })?;
            match polled {
                Ok(_) => return Ok(()),
                // GL ends a wait after about 2.1 s whatever was asked: wait again until the
                // pipeline's own limit has passed.
                Err(wgpu::PollError::Timeout) => {
                    let waited = start.elapsed();
                    if self.poll_timeout.is_some_and(|limit| waited >= limit) {
                        return Err(Error::Timeout { waited });
                    }
                }
                Err(error) => return Err(Error::Mapping(error.to_string())),
            }
        }
    }
}

impl Buffers {
    /// Drops the buffers the host maps. After a failed call one of them may be left mapped
    /// or with a mapping pending; the next call creates fresh ones. The device buffers and
    /// the bind group are kept.
    fn discard_transfers(&mut self) {
        self.body_upload = None;
        self.pair_upload = None;
        self.readback = None;
    }
}

/// Replaces `buffer` with a larger one when it holds fewer than `count` elements: the next
/// power of two above `count` (at least [`MIN_CAPACITY`], at most `spec.max`), plus the
/// header. Upload buffers are created mapped. Returns whether it was replaced.
fn grow(
    device: &wgpu::Device,
    buffer: &mut Option<wgpu::Buffer>,
    spec: BufferSpec,
    count: u64,
) -> bool {
    let needed = spec.header + count.max(1) * spec.element_size;
    if buffer.as_ref().is_some_and(|b| b.size() >= needed) {
        return false;
    }
    let capacity = count
        .next_power_of_two()
        .clamp(MIN_CAPACITY.min(spec.max), spec.max.max(count));
    *buffer = Some(device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(spec.label),
        size: spec.header + capacity * spec.element_size,
        usage: spec.usage,
        mapped_at_creation: spec.usage.contains(wgpu::BufferUsages::MAP_WRITE),
    }));
    true
}
