//! `SweepPipeline`: `shaders/sweep.wgsl` on the GPU, built once and run every step.

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
/// Smallest buffer capacity, in elements; below it growth by doubling is not worth a buffer.
const MIN_CAPACITY: u64 = 1024;

/// The swept test of every candidate pair on the GPU, one invocation per pair.
///
/// Build it once from a [`GpuContext`] and call it every step: the device buffers, the staging
/// buffer and the bind group are kept between calls and only grow (to the next power of two)
/// when a batch is larger than any before. Batches larger than one dispatch or one storage
/// binding can hold are split into chunks transparently. `SweepPipeline` is `Send + Sync`;
/// concurrent calls are serialised.
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
    buffers: Mutex<Buffers>,
}

/// Everything a call writes: kept between calls, grown when a batch outgrows it.
#[derive(Debug)]
struct Buffers {
    params: wgpu::Buffer,
    bodies: Option<wgpu::Buffer>,
    pairs: Option<wgpu::Buffer>,
    impacts: Option<wgpu::Buffer>,
    staging: Option<wgpu::Buffer>,
    bind_group: Option<wgpu::BindGroup>,
    packed_bodies: Vec<GpuBody>,
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
            size: size_of::<Params>() as u64,
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
            buffers: Mutex::new(
                Buffers {
                    params,
                    bodies: None,
                    pairs: None,
                    impacts: None,
                    staging: None,
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
    #[must_use]
    pub fn device_memory_bytes(&self) -> u64 {
        let buffers = pollster::block_on(self.buffers.lock());
        let size = |buffer: &Option<wgpu::Buffer>| buffer.as_ref().map_or(0, wgpu::Buffer::size);
        buffers.params.size()
            + size(&buffers.bodies)
            + size(&buffers.pairs)
            + size(&buffers.impacts)
            + size(&buffers.staging)
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
    /// Device errors after: [`Error::Device`], [`Error::Readback`].
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
        self.queue.write_buffer(
            buffers.bodies.as_ref().expect("sized above"),
            0,
            bytemuck::cast_slice(&buffers.packed_bodies),
        );
        for chunk in pairs.chunks(self.max_pairs_per_dispatch as usize) {
            self.sweep_chunk(buffers, chunk, impacts)
                .await
                .inspect_err(|_| impacts.clear())?;
        }
        Ok(())
    }

    /// Grows each buffer that is too small to the next power of two (capped at the device
    /// limit) and rebuilds the bind group if any buffer changed.
    fn ensure_capacity(&self, buffers: &mut Buffers, body_count: u64, pair_count: u64) {
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let mut changed = grow(
            &self.device,
            &mut buffers.bodies,
            "sweep bodies",
            storage,
            body_count,
            self.max_bodies,
            BODY_SIZE,
        );
        changed |= grow(
            &self.device,
            &mut buffers.pairs,
            "sweep pairs",
            storage,
            pair_count,
            self.max_pairs_per_dispatch,
            PAIR_SIZE,
        );
        changed |= grow(
            &self.device,
            &mut buffers.impacts,
            "sweep impacts",
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            pair_count,
            self.max_pairs_per_dispatch,
            RECORD_SIZE,
        );
        grow(
            &self.device,
            &mut buffers.staging,
            "sweep staging",
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            pair_count,
            self.max_pairs_per_dispatch,
            RECORD_SIZE,
        );
        if changed || buffers.bind_group.is_none() {
            let layout = self.pipeline.get_bind_group_layout(0);
            fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
                wgpu::BindGroupEntry {
                    binding,
                    resource: buffer.as_entire_binding(),
                }
            }
            buffers.bind_group = Some(self.device.create_bind_group(&wgpu::BindGroupDescriptor {
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

    /// One dispatch: upload the chunk's pairs, run, copy back, map, decode.
    async fn sweep_chunk(
        &self,
        buffers: &Buffers,
        chunk: &[[u32; 2]],
        impacts: &mut Vec<Option<Impact>>,
    ) -> Result<(), Error> {
        let (pairs, staging, impacts_buffer) = (
            buffers.pairs.as_ref().expect("sized"),
            buffers.staging.as_ref().expect("sized"),
            buffers.impacts.as_ref().expect("sized"),
        );
        let pair_count = chunk.len() as u32;
        self.queue
            .write_buffer(pairs, 0, bytemuck::cast_slice(chunk));
        self.queue.write_buffer(
            &buffers.params,
            0,
            bytemuck::bytes_of(&Params {
                pair_count,
                _pad: [0; 3],
            }),
        );
        let record_bytes = u64::from(pair_count) * RECORD_SIZE;
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("sweep"),
            });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("sweep"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, buffers.bind_group.as_ref(), &[]);
            pass.dispatch_workgroups(pair_count.div_ceil(WORKGROUP_SIZE), 1, 1);
        }
        encoder.copy_buffer_to_buffer(impacts_buffer, 0, staging, 0, record_bytes);
        self.queue.submit([encoder.finish()]);

        let slice = staging.slice(..record_bytes);
        let (sender, receiver) = futures_intrusive::channel::shared::oneshot_channel();
        slice.map_async(wgpu::MapMode::Read, move |result| {
            // The receiver outlives the poll below; a failed send only means it was dropped.
            let _ = sender.send(result);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|error| Error::Readback(error.to_string()))?;
        self.errors.take()?;
        match receiver.receive().await {
            Some(Ok(())) => {}
            Some(Err(error)) => return Err(Error::Readback(error.to_string())),
            None => return Err(Error::Readback("the map callback was dropped".into())),
        }
        {
            let view = slice
                .get_mapped_range()
                .map_err(|error| Error::Readback(error.to_string()))?;
            let records: &[ImpactRecord] = bytemuck::cast_slice(&view);
            let packed = &buffers.packed_bodies;
            impacts.par_extend(records.par_iter().zip(chunk.par_iter()).map(
                |(record, &[i, j])| record.to_impact(&packed[i as usize], &packed[j as usize]),
            ));
        }
        staging.unmap();
        Ok(())
    }
}

/// Replaces `buffer` with one of the next power of two above `count` elements (capped at
/// `max`) when it holds fewer than `count`. Returns whether it was replaced.
fn grow(
    device: &wgpu::Device,
    buffer: &mut Option<wgpu::Buffer>,
    label: &str,
    usage: wgpu::BufferUsages,
    count: u64,
    max: u64,
    element_size: u64,
) -> bool {
    let needed = count.max(1) * element_size;
    if buffer.as_ref().is_some_and(|b| b.size() >= needed) {
        return false;
    }
    let capacity = count
        .next_power_of_two()
        .clamp(MIN_CAPACITY.min(max), max.max(count));
    *buffer = Some(device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: capacity * element_size,
        usage,
        mapped_at_creation: false,
    }));
    true
}
