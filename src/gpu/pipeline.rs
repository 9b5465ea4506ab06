//! `SweepPipeline`: the blocking convenience over the [`SweepStage`]: upload, record,
//! submit, wait, read back and decode, built once and called every step.

use crate::par::prelude::*;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::buffers::{DeviceWaiter, ErrorScopes, GrowingBuffer, PendingMap, Upload, pieces};
use super::context::GpuContext;
use super::host_profile::{Timer, pool_threads, span};
use super::sweep::{SweepBuffers, SweepOutput, SweepStage};
use crate::answers::TimeOfImpact;
use crate::error::Error;
use crate::geometry::{Impact, MovingSphere};
use crate::layout::{BodyRecord, ImpactRecord, WORKGROUP_SIZE, bytes_of};
use crate::options::SweepOptions;
use crate::validate::{
    PACK_BLOCK, check_batch, pack_bodies_into, validate_pairs, validate_periodic_reach,
};
use glam::Vec3;

/// How long one wait for the device may last before a call gives up with [`Error::Timeout`],
/// unless [`SweepPipeline::with_poll_timeout`] says otherwise.
///
/// Finite so that a hung device turns into an error instead of a thread blocked for ever
/// (holding the pipeline, so that every other thread calling it blocks too). One wait covers
/// one dispatch of at most [`SweepPipeline::max_pairs_per_dispatch`] pairs: on Mesa's
/// software adapters with 2 cores a whole call of the largest dispatch (4,194,240 pairs)
/// took 0.8 to 1.6 s, so a minute is far above any honest wait.
pub(crate) const DEFAULT_POLL_TIMEOUT: Duration = Duration::from_secs(60);

/// How many chunks [`SweepPipeline`] cuts a large call into (its split rule, under
/// "Chunks"): 4. Tuning, for a test that checks the chunks' boundaries.
pub const PIPELINE_CHUNKS: usize = 4;

/// The fewest pairs of a chunk of [`SweepPipeline`]'s split rule, unless
/// [`max_pairs_per_dispatch`](SweepPipeline::max_pairs_per_dispatch) is lower or the call has
/// fewer pairs: 2^16.
pub const PIPELINE_MIN_CHUNK: usize = 1 << 16;

/// The swept test of every candidate pair on the GPU, blocking until the answers are back.
///
/// Build it once from a [`GpuContext`] and call it every step: it runs a [`SweepStage`] on
/// device buffers, staging buffers and bind groups that are kept between calls and only grow
/// (to the next power of two) when a batch is larger than any before. `SweepPipeline` is
/// `Send + Sync`; concurrent calls are serialised. It holds clones of the context's device and
/// queue, so it may outlive the context.
///
/// Used by: `docs/guide.md` ("Batches of candidate pairs"), `examples/headless.rs`,
/// `python/src/gpu.rs`.
///
/// # Chunks
/// A call of `n` pairs runs in chunks of
/// `min(max_pairs_per_dispatch, max(PIPELINE_MIN_CHUNK, ceil(n / PIPELINE_CHUNKS)))` pairs
/// (the last may have fewer), with [`PIPELINE_CHUNKS`] = 4 and [`PIPELINE_MIN_CHUNK`] = 2^16:
/// a call of at most 2^16 pairs is one chunk, one of up to 2^18 pairs chunks of 2^16, a larger
/// one about four chunks (more where [`max_pairs_per_dispatch`](Self::max_pairs_per_dispatch)
/// caps them). The chunks are pipelined: while the device sweeps chunk `k`, the host writes
/// chunk `k + 1`'s pairs into one of two staging buffers and decodes chunk `k - 1`'s answers
/// from one of two readbacks.
/// A call's host work per chunk (writing its pairs, decoding its answers) is thus hidden
/// behind the device's work on the chunks around it, all but the first chunk's write and the
/// last chunk's decode: three quarters of it at four chunks. More chunks would hide more but
/// pay more per-dispatch overhead (a submit and two waits each), and a chunk of fewer than
/// 2^16 pairs (on a GPU, a fraction of a millisecond of work, near that overhead) hides
/// little; the rule is fixed, the same on every device, so that no tuning needs a GPU at
/// hand. On a software adapter the device's work runs on the host's own cores, which the
/// overlap then shares: on lavapipe with 2 cores a [`sweep`](Self::sweep) of 10^6 pairs took
/// 47 ms where the chunks in turn took 36 (the times, 19 ms, unchanged): the decode slows as
/// the device's threads take its cores. The bodies are uploaded once per
/// call, with the first chunk. Decoding stays in order: the answers come back as one
/// dispatch would give them, to the bit.
///
/// Every call is synchronous: it submits its own work and waits for it. A simulation whose
/// bodies live on the GPU records the [`SweepStage`] into its own encoder instead.
///
/// Memory is bounded by the largest batch seen: the buffers never shrink, so a long run that
/// once sweeps a large batch keeps that batch's buffers (at most twice its size, see
/// [`SweepPipeline::device_memory_bytes`]) for the pipeline's life. Drop the pipeline and
/// build a new one to give the memory back.
///
/// # Example
/// ```no_run
/// use sweepcast::glam::Vec3;
/// use sweepcast::{gpu::{GpuContext, SweepPipeline}, MovingSphere, SweepOptions};
///
/// let context = GpuContext::new_blocking()?;
/// let pipeline = SweepPipeline::new(&context)?;
/// let bodies = [
///     MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(10.0, 0.0, 0.0)),
///     MovingSphere::new(Vec3::new(5.0, 0.0, 0.0), 1.0, Vec3::ZERO),
/// ];
/// let impacts = pipeline.sweep(&bodies, &[[0, 1]], SweepOptions::default())?;
/// assert!(impacts[0].is_some());
/// # Ok::<(), sweepcast::Error>(())
/// ```
#[derive(Debug)]
pub struct SweepPipeline {
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// Waits for the device, and knows whether it was lost.
    waiter: DeviceWaiter,
    stage: SweepStage,
    max_pairs_per_dispatch: u64,
    /// `None` after a call the device failed (out of memory among the causes): the next call
    /// makes them again, from the smallest sizes, in its own error scopes.
    buffers: Mutex<Option<Buffers>>,
}

/// Everything a call writes: kept between calls, grown when a batch outgrows it.
#[derive(Debug)]
struct Buffers {
    bodies: GrowingBuffer,
    pairs: GrowingBuffer,
    body_upload: Upload,
    /// The chunks' pairs, in rotation: chunk `k` is written into `pair_uploads[k % 2]` while
    /// the device may still copy from the other.
    pair_uploads: [Upload; 2],
    /// The impact records, for [`SweepPipeline::sweep`].
    impacts: Outputs,
    /// The times, for [`SweepPipeline::times_of_impact`]: made on its first call, so that a
    /// pipeline that never calls it holds none of it.
    times: Option<Outputs>,
    /// Each body's displacement, for [`SweepPipeline::sweep`]'s decoding: 12 bytes a body,
    /// gathered densely where the caller's bodies (28 bytes or more) were gathered 1.5x
    /// slower.
    displacements: Vec<Vec3>,
    /// The bodies of [`SweepPipeline::set_bodies`], on the device (with their displacements
    /// above), while no call given bodies of its own has replaced them.
    set: Option<SetBodies>,
}

/// What [`SweepPipeline::set_bodies`] left on the device: how many bodies, and the options
/// they were checked against.
#[derive(Debug, Clone, Copy)]
struct SetBodies {
    count: usize,
    options: SweepOptions,
}

/// Where a call's bodies come from: the caller, or those set before.
enum Source<'a, B> {
    Given(&'a [B]),
    Set(SetBodies),
}

/// One output of the stage: its device buffer, the stage's view of it with the bodies and
/// pairs, and the host-visible copies the results are read from.
#[derive(Debug)]
struct Outputs {
    output: GrowingBuffer,
    /// Rebuilt whenever the output, the bodies or the pairs buffer is replaced.
    bound: SweepBuffers,
    /// In rotation: chunk `k` is copied into `readbacks[k % 2]` while the host decodes the
    /// other.
    readbacks: [GrowingBuffer; 2],
}

impl Outputs {
    fn new(
        device: &wgpu::Device,
        stage: &SweepStage,
        kind: SweepOutput,
        world: (&GrowingBuffer, &GrowingBuffer),
        max_pairs: u64,
    ) -> Result<Self, Error> {
        use wgpu::BufferUsages as Usage;
        let usage = Usage::STORAGE | Usage::COPY_SRC;
        let output = GrowingBuffer::new(device, kind.label(), usage, kind.size(), max_pairs);
        let bound = Self::bind(device, stage, kind, world, &output)?;
        Ok(Self {
            output,
            bound,
            readbacks: readbacks(device, kind, max_pairs),
        })
    }

    /// Which output these are.
    fn kind(&self) -> SweepOutput {
        self.bound.output_kind()
    }

    fn bind(
        device: &wgpu::Device,
        stage: &SweepStage,
        kind: SweepOutput,
        (bodies, pairs): (&GrowingBuffer, &GrowingBuffer),
        output: &GrowingBuffer,
    ) -> Result<SweepBuffers, Error> {
        let (bodies, pairs, output) = (bodies.buffer(), pairs.buffer(), output.buffer());
        stage.bind_output_buffers(device, bodies, pairs, output, kind)
    }

    /// Bytes of device memory of its own: the output, the readbacks, the stage's parameters
    /// and dispatch (not the bodies and pairs it shares).
    fn own_bytes(&self) -> u64 {
        let readbacks: u64 = self.readbacks.iter().map(|r| r.buffer().size()).sum();
        self.bound.device_memory_bytes() - self.bound.bodies().size() - self.bound.pairs().size()
            + readbacks
    }
}

/// The two host-visible buffers an output is copied into to be read.
fn readbacks(device: &wgpu::Device, kind: SweepOutput, max_pairs: u64) -> [GrowingBuffer; 2] {
    use wgpu::BufferUsages as Usage;
    let usage = Usage::MAP_READ | Usage::COPY_DST;
    [(); 2].map(|()| GrowingBuffer::new(device, "sweep readback", usage, kind.size(), max_pairs))
}

impl Buffers {
    fn new(device: &wgpu::Device, stage: &SweepStage, max_pairs: u64) -> Result<Self, Error> {
        use wgpu::BufferUsages as Usage;
        let max_bodies = stage.max_bodies();
        let usage = Usage::STORAGE | Usage::COPY_DST;
        let bodies = GrowingBuffer::new(
            device,
            "sweep bodies",
            usage,
            bytes_of::<BodyRecord>(1),
            max_bodies,
        );
        let pairs = GrowingBuffer::new(
            device,
            "sweep pairs",
            usage,
            bytes_of::<[u32; 2]>(1),
            max_pairs,
        );
        let impacts = Outputs::new(
            device,
            stage,
            SweepOutput::Impacts,
            (&bodies, &pairs),
            max_pairs,
        )?;
        let (body_upload, pair_uploads) = uploads(device, max_bodies, max_pairs);
        Ok(Self {
            bodies,
            pairs,
            body_upload,
            pair_uploads,
            impacts,
            times: None,
            displacements: Vec::new(),
            set: None,
        })
    }

    /// The buffers of output `kind` (the times' made on first use).
    fn outputs(
        &mut self,
        device: &wgpu::Device,
        stage: &SweepStage,
        kind: SweepOutput,
        max_pairs: u64,
    ) -> Result<&mut Outputs, Error> {
        Ok(match kind {
            SweepOutput::Impacts => &mut self.impacts,
            SweepOutput::Times => match &mut self.times {
                Some(times) => times,
                times @ None => times.insert(Outputs::new(
                    device,
                    stage,
                    kind,
                    (&self.bodies, &self.pairs),
                    max_pairs,
                )?),
            },
        })
    }

    /// The buffers of output `kind`, made by [`Buffers::ensure`].
    fn impacts_or_times(&self, kind: SweepOutput) -> &Outputs {
        match kind {
            SweepOutput::Impacts => &self.impacts,
            SweepOutput::Times => self.times.as_ref().expect("made by `ensure`"),
        }
    }

    /// Grows each buffer a call of output `kind` uses that is too small, and rebinds every
    /// stage view of a buffer that was replaced.
    fn ensure(
        &mut self,
        device: &wgpu::Device,
        stage: &SweepStage,
        bodies: u64,
        pairs: u64,
        (kind, max_pairs): (SweepOutput, u64),
    ) -> Result<(), Error> {
        // Both, not `||`: each must grow.
        let world_replaced = self.bodies.ensure(device, bodies) | self.pairs.ensure(device, pairs);
        self.body_upload.ensure(device, bodies);
        for upload in &mut self.pair_uploads {
            upload.ensure(device, pairs);
        }
        let outputs = self.outputs(device, stage, kind, max_pairs)?;
        let output_replaced = outputs.output.ensure(device, pairs);
        for readback in &mut outputs.readbacks {
            readback.ensure(device, pairs);
        }
        let world = (&self.bodies, &self.pairs);
        for outputs in [Some(&mut self.impacts), self.times.as_mut()]
            .into_iter()
            .flatten()
        {
            let own = outputs.kind();
            if world_replaced || (output_replaced && own == kind) {
                outputs.bound = Outputs::bind(device, stage, own, world, &outputs.output)?;
            }
        }
        Ok(())
    }

    /// Replaces the buffers the host maps. After a failed call any of them (both of each
    /// rotation) may be left mapped or with a mapping pending; the fresh ones are the
    /// smallest size and grow with the next call. The device buffers and the bind groups are
    /// kept.
    fn discard_transfers(&mut self, device: &wgpu::Device, max_bodies: u64, max_pairs: u64) {
        (self.body_upload, self.pair_uploads) = uploads(device, max_bodies, max_pairs);
        for outputs in [Some(&mut self.impacts), self.times.as_mut()]
            .into_iter()
            .flatten()
        {
            outputs.readbacks = readbacks(device, outputs.kind(), max_pairs);
        }
    }
}

/// The staging buffers of a call's uploads: bodies, and the pairs' two in rotation.
fn uploads(device: &wgpu::Device, max_bodies: u64, max_pairs: u64) -> (Upload, [Upload; 2]) {
    let pairs = || {
        Upload::new(
            device,
            "sweep pair upload",
            bytes_of::<[u32; 2]>(1),
            max_pairs,
        )
    };
    (
        Upload::new(
            device,
            "sweep body upload",
            bytes_of::<BodyRecord>(1),
            max_bodies,
        ),
        [pairs(), pairs()],
    )
}

/// What a call returns per pair, decoded from the stage's output.
trait Decode {
    /// One pair's answer.
    type Item: Send;
    /// The stage's output this answer is read from.
    const KIND: SweepOutput;
    /// Host bytes decoding touches per pair besides its output record: what it reads of the
    /// pair and its bodies, and the answer it writes.
    const BYTES_PER_ITEM: u64;
    /// Appends the answers of `chunk` (whose output is `bytes`, in the mapped readback) of
    /// `bodies` to `out`, on all cores.
    fn decode(bytes: &[u8], chunk: &[[u32; 2]], displacements: &[Vec3], out: &mut Vec<Self::Item>);
}

/// [`SweepPipeline::sweep`]: records decoded into impacts.
struct Impacts;

impl Decode for Impacts {
    type Item = Option<Impact>;
    const KIND: SweepOutput = SweepOutput::Impacts;
    // The hits' two bodies (a few bytes a pair where a tenth of the pairs hit) are not
    // counted.
    const BYTES_PER_ITEM: u64 = bytes_of::<[u32; 2]>(1) + size_of::<Option<Impact>>() as u64;
    fn decode(bytes: &[u8], chunk: &[[u32; 2]], displacements: &[Vec3], out: &mut Vec<Self::Item>) {
        let records: &[ImpactRecord] = bytemuck::cast_slice(bytes);
        // A hit's displacements, looked up for hits only (a tenth of the pairs here).
        let displacement = |index: u32| displacements[index as usize];
        out.par_extend(
            records
                .par_iter()
                .zip(chunk.par_iter())
                .map(|(impact, &[i, j])| impact.impact_with(|| (displacement(i), displacement(j)))),
        );
    }
}

/// [`SweepPipeline::times_of_impact`]: the times as the stage wrote them.
struct Times;

impl Decode for Times {
    type Item = TimeOfImpact;
    const KIND: SweepOutput = SweepOutput::Times;
    const BYTES_PER_ITEM: u64 = bytes_of::<TimeOfImpact>(1);
    fn decode(bytes: &[u8], _: &[[u32; 2]], _: &[Vec3], out: &mut Vec<Self::Item>) {
        let times: &[TimeOfImpact] = bytemuck::cast_slice(bytes);
        // One thread copies 256 KiB faster than the pool starts (measured: 10,000 times took
        // 88 us on two threads).
        if bytes.len() <= 256 << 10 {
            out.extend_from_slice(times);
        } else {
            out.par_extend(times.par_iter().copied());
        }
    }
}

impl SweepPipeline {
    /// How long a blocking call waits for the device by default (one minute); see
    /// [`with_poll_timeout`](Self::with_poll_timeout). Finite so that a hung device turns into
    /// an error instead of a thread blocked for ever.
    ///
    /// Used by: `docs/guarantees.md` ("Guarantees": no hang).
    pub const DEFAULT_POLL_TIMEOUT: Duration = DEFAULT_POLL_TIMEOUT;

    /// Compiles the stage and sizes the batch limits from the device's limits.
    ///
    /// Used by: `docs/guide.md` ("Batches of candidate pairs"), `examples/headless.rs`,
    /// `examples/compare.rs`, `python/src/gpu.rs` (`GpuStep`).
    ///
    /// # Errors
    /// [`Error::OutOfDeviceMemory`] when the device cannot back the buffers;
    /// [`Error::Device`] when the device rejects the shader or the buffers (a lost device
    /// among them).
    pub fn new(context: &GpuContext) -> Result<Self, Error> {
        context.loss().check()?;
        let device = context.device().clone();
        let stage = SweepStage::new(&device)?;
        let limits = device.limits();
        let max_dispatch_pairs =
            u64::from(limits.max_compute_workgroups_per_dimension) * u64::from(WORKGROUP_SIZE);
        let max_pairs_per_dispatch = max_dispatch_pairs.min(stage.max_pairs());
        let scopes = ErrorScopes::push(&device);
        let buffers = Buffers::new(&device, &stage, max_pairs_per_dispatch);
        pollster::block_on(scopes.finish())?;
        Ok(Self {
            queue: context.queue().clone(),
            waiter: DeviceWaiter::new(
                device.clone(),
                Some(DEFAULT_POLL_TIMEOUT),
                context.loss().clone(),
            ),
            device,
            stage,
            max_pairs_per_dispatch,
            buffers: Mutex::new(Some(buffers?)),
        })
    }

    /// The buffers, for one call at a time. A call that panicked left nothing half-written
    /// that the next call relies on (it rewrites what it reads), so a poisoned lock is taken.
    fn lock(&self) -> MutexGuard<'_, Option<Buffers>> {
        self.buffers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Caps the pairs per dispatch below the device's own limit (at least one workgroup): the
    /// cap wins over the split rule's [`PIPELINE_MIN_CHUNK`].
    /// Smaller chunks bound the device memory a call holds; tests use it to exercise chunking.
    ///
    /// Used by: `docs/guarantees.md` ("Limits").
    #[must_use]
    pub fn with_max_pairs_per_dispatch(mut self, max_pairs: usize) -> Self {
        self.max_pairs_per_dispatch = (max_pairs as u64)
            .max(u64::from(WORKGROUP_SIZE))
            .min(self.max_pairs_per_dispatch);
        self
    }

    /// Sets how long one wait for the device may last: `Some(limit)` makes a wait that has not
    /// finished after `limit` return [`Error::Timeout`]; `None` waits for as long as it takes.
    /// The default is [`Self::DEFAULT_POLL_TIMEOUT`].
    ///
    /// A call waits once per chunk (for its submission and its readback) and once per upload
    /// buffer it writes (for the submission that last copied from it), so the limit bounds
    /// each wait, not the whole call; nor does it bound the wait for the pipeline's lock while
    /// another thread's call runs. After a timeout the pipeline stays usable: the next call
    /// waits for the abandoned work to finish before its own and returns correct results.
    ///
    /// Backends differ in what a wait covers. On Vulkan (lavapipe included) the dispatch runs
    /// after `Queue::submit` returns, and a wait that outlasts the limit times out. wgpu's GL
    /// backend on Mesa's llvmpipe runs the whole dispatch inside `Queue::submit`, which no
    /// limit covers: the wait then finds the work done and cannot time out. GL also caps one
    /// wait at about 2.1 s (`i32::MAX` ns); longer limits, and `None`, are honoured by waiting
    /// again.
    ///
    /// Used by: `docs/guarantees.md` ("Guarantees" and "Bad input").
    #[must_use]
    pub fn with_poll_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.waiter.set_poll_timeout(timeout);
        self
    }

    /// How long one wait for the device may last (see [`SweepPipeline::with_poll_timeout`]).
    ///
    /// Used by: `docs/guarantees.md` ("Guarantees": the one in force).
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Duration> {
        self.waiter.poll_timeout()
    }

    /// The most pairs one dispatch takes: no chunk of the split rule (see [`SweepPipeline`])
    /// is larger.
    ///
    /// Used by: `docs/guarantees.md` ("Limits"), `examples/headless.rs`.
    #[must_use]
    pub fn max_pairs_per_dispatch(&self) -> usize {
        self.max_pairs_per_dispatch as usize
    }

    /// The most bodies one call takes (one storage binding of this device).
    ///
    /// Used by: `examples/headless.rs`.
    #[must_use]
    pub fn max_bodies(&self) -> usize {
        self.stage.max_bodies() as usize
    }

    /// Bytes of device memory this pipeline holds now: its buffers, grown to the largest
    /// batch so far (bounded by the device limits, whatever the batch).
    ///
    /// With `c(n)` the pairs of a chunk of a call of `n` pairs (the split rule of
    /// [`SweepPipeline`], at most `n`), `B` the most bodies and `P` the largest `c(n)` of any
    /// call so far, `R` the largest `c(n)` of any [`sweep`](Self::sweep) call and `cap(n)` the
    /// next power of two at or above `n` but at least 1024 (and at most the device limit),
    /// this is at most `64 + 64 cap(B) + 24 cap(P) + 96 cap(R)` bytes: the stage's 32-byte
    /// parameters and dispatch buffers, bodies twice (device and upload, 32 bytes each), pairs
    /// three times (device and two uploads in rotation, 8 bytes each) and records three times
    /// (device and two readbacks in rotation, 32 bytes each); for a pipeline that only sweeps,
    /// `64 + 64 cap(B) + 120 cap(P)`. Once [`times_of_impact`](Self::times_of_impact) has been
    /// called, with `T` the largest `c(n)` of any such call, add `64 + 12 cap(T)`: its own
    /// parameters and dispatch, and the times three times (device and two readbacks, 4 bytes
    /// each). It is exactly that unless a call failed since the largest batch (the failed
    /// call replaces the host-visible buffers with the smallest ones, and the next grows them
    /// for itself). After a call the device failed (out of memory, say) it is 0 until the
    /// next call: the pipeline dropped its buffers.
    ///
    /// Used by: `docs/guarantees.md` ("Limits").
    #[must_use]
    pub fn device_memory_bytes(&self) -> u64 {
        let buffers = self.lock();
        let Some(buffers) = buffers.as_ref() else {
            return 0;
        };
        buffers.bodies.buffer().size()
            + buffers.pairs.buffer().size()
            + buffers.body_upload.buffer().size()
            + (buffers.pair_uploads.iter())
                .map(|upload| upload.buffer().size())
                .sum::<u64>()
            + buffers.impacts.own_bytes()
            + buffers.times.as_ref().map_or(0, Outputs::own_bytes)
    }

    /// Sweeps every candidate pair on the GPU, blocking until the results are back.
    ///
    /// Used by: `docs/guide.md` ("Batches of candidate pairs"), `python/src/gpu.rs` (a `GpuStep`'s
    /// full sweep).
    ///
    /// # Arguments
    /// * `bodies`: the moving bodies (circles or spheres).
    /// * `pairs`: candidate pairs, each two indices into `bodies`.
    /// * `options`: see [`SweepOptions`].
    ///
    /// # Returns
    /// One entry per pair, in order: `None` for a miss, else the [`Impact`].
    ///
    /// # Errors
    /// Input errors before anything reaches the GPU: [`Error::NonFinite`],
    /// [`Error::TooLarge`], [`Error::NegativeRadius`], [`Error::PeriodicBoxTooSmall`],
    /// [`Error::PairIndexOutOfRange`], [`Error::TooManyBodies`]. Device errors of this call's
    /// own work after: [`Error::Device`], [`Error::Mapping`], and [`Error::Timeout`] when one
    /// wait for the device outlasts the [poll timeout](Self::with_poll_timeout). After any
    /// of them the pipeline stays usable (unless the device was lost).
    pub fn sweep<B>(
        &self,
        bodies: &[B],
        pairs: &[[u32; 2]],
        options: SweepOptions,
    ) -> Result<Vec<Option<Impact>>, Error>
    where
        B: Copy + Into<MovingSphere> + Sync,
    {
        let mut impacts = Vec::new();
        self.sweep_into(bodies, pairs, options, &mut impacts)?;
        Ok(impacts)
    }

    /// [`SweepPipeline::sweep`] into a vector the caller keeps between steps.
    ///
    /// Used by: `examples/headless.rs`, `examples/compare.rs`, `examples/host_profile.rs`.
    ///
    /// # Errors
    /// As [`SweepPipeline::sweep`]; `impacts` is left empty on error.
    pub fn sweep_into<B>(
        &self,
        bodies: &[B],
        pairs: &[[u32; 2]],
        options: SweepOptions,
        impacts: &mut Vec<Option<Impact>>,
    ) -> Result<(), Error>
    where
        B: Copy + Into<MovingSphere> + Sync,
    {
        self.run::<Impacts, B>(bodies, pairs, options, impacts)
    }

    /// The time of first contact of every candidate pair on the GPU (the stage's 4-byte
    /// output, [`SweepOutput::Times`]), blocking until they are back: what a simulation
    /// needs to advance to its earliest impact, with an eighth of the output bytes of
    /// [`SweepPipeline::sweep`] to write and read back.
    ///
    /// Used by: `docs/guide.md` ("On your own device: the stage API"), `docs/guarantees.md`
    /// ("Limits"), `python/src/gpu.rs` (a `GpuStep`'s times).
    ///
    /// # Returns
    /// One [`TimeOfImpact`] per pair, in order; each is the time and status of the record
    /// [`SweepPipeline::sweep`] gives on the same device, to the bit.
    ///
    /// # Errors
    /// As [`SweepPipeline::sweep`].
    pub fn times_of_impact<B>(
        &self,
        bodies: &[B],
        pairs: &[[u32; 2]],
        options: SweepOptions,
    ) -> Result<Vec<TimeOfImpact>, Error>
    where
        B: Copy + Into<MovingSphere> + Sync,
    {
        let mut times = Vec::new();
        self.times_of_impact_into(bodies, pairs, options, &mut times)?;
        Ok(times)
    }

    /// [`SweepPipeline::times_of_impact`] into a vector the caller keeps between steps.
    ///
    /// Used by: `docs/guide.md` ("On your own device: the stage API"), `examples/headless.rs`,
    /// `examples/host_profile.rs`.
    ///
    /// # Errors
    /// As [`SweepPipeline::sweep`]; `times` is left empty on error.
    pub fn times_of_impact_into<B>(
        &self,
        bodies: &[B],
        pairs: &[[u32; 2]],
        options: SweepOptions,
        times: &mut Vec<TimeOfImpact>,
    ) -> Result<(), Error>
    where
        B: Copy + Into<MovingSphere> + Sync,
    {
        self.run::<Times, B>(bodies, pairs, options, times)
    }

    /// Validates, packs and uploads `bodies` once, checked against `options`, for any number
    /// of later calls of [`sweep_pairs_into`](Self::sweep_pairs_into) and
    /// [`times_of_impact_pairs_into`](Self::times_of_impact_pairs_into), which then pay only
    /// for their pairs (as [`cpu::World`](crate::cpu::World) does on the CPU): an
    /// event-driven simulation that re-sweeps a few pairs many times a step, or a broad phase
    /// that hands over its candidates in batches.
    ///
    /// The bodies stay on the device until the next `set_bodies`, a call given bodies of its
    /// own ([`sweep`](Self::sweep), [`times_of_impact`](Self::times_of_impact) and their
    /// `_into` forms, which write over them), or a call the device failed; a call that fails
    /// otherwise (a bad pair, a timeout) keeps them. The pipeline also keeps each body's
    /// displacement (12 bytes a body) to decode impacts.
    ///
    /// Used by: `docs/guide.md` ("On your own device: the stage API"), `docs/guarantees.md`
    /// ("Limits"), `examples/host_profile.rs`.
    ///
    /// # Example
    /// ```no_run
    /// use sweepcast::glam::Vec3;
    /// use sweepcast::gpu::{GpuContext, SweepPipeline};
    /// use sweepcast::{MovingSphere, SweepOptions};
    ///
    /// let context = GpuContext::new_blocking()?;
    /// let pipeline = SweepPipeline::new(&context)?;
    /// let bodies = [
    ///     MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(10.0, 0.0, 0.0)),
    ///     MovingSphere::new(Vec3::new(5.0, 0.0, 0.0), 1.0, Vec3::ZERO),
    ///     MovingSphere::new(Vec3::new(0.0, 5.0, 0.0), 1.0, Vec3::ZERO),
    /// ];
    /// pipeline.set_bodies(&bodies, SweepOptions::default())?;
    /// let (mut times, mut impacts) = (Vec::new(), Vec::new());
    /// pipeline.times_of_impact_pairs_into(&[[0, 1], [0, 2]], &mut times)?;
    /// pipeline.sweep_pairs_into(&[[0, 1]], &mut impacts)?;
    /// assert_eq!(times[0].time(), Some(0.3));
    /// assert!(!times[1].is_hit());
    /// # Ok::<(), sweepcast::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`SweepPipeline::sweep`] for the bodies and options (the pairs come later); no
    /// bodies are set after an error.
    pub fn set_bodies<B>(&self, bodies: &[B], options: SweepOptions) -> Result<(), Error>
    where
        B: Copy + Into<MovingSphere> + Sync,
    {
        let mut guard = self.lock();
        self.waiter.check_loss()?;
        if let Some(buffers) = guard.as_mut() {
            buffers.set = None;
        }
        if bodies.len() > self.max_bodies() {
            return check_batch(bodies, &[], &options, self.max_bodies());
        }
        self.with_buffers(&mut guard, |buffers| {
            let count = bodies.len() as u64;
            buffers.displacements.clear();
            // No bodies: nothing to upload (wgpu maps no empty range); every pair of a later
            // call names a missing body.
            if count > 0 {
                self.pack_upload(buffers, bodies, &options, true)?;
                let output = (SweepOutput::Impacts, self.max_pairs_per_dispatch);
                buffers.ensure(&self.device, &self.stage, count, 1, output)?;
                let timer = Timer::start();
                let mut encoder = self.device.create_command_encoder(&Default::default());
                let (upload, device) = (buffers.body_upload.buffer(), buffers.bodies.buffer());
                encoder.copy_buffer_to_buffer(upload, 0, device, 0, bytes_of::<BodyRecord>(count));
                self.queue.submit([encoder.finish()]);
                timer.end("record", 0, 1);
            }
            buffers.set = Some(SetBodies {
                count: bodies.len(),
                options,
            });
            Ok(())
        })
    }

    /// [`SweepPipeline::sweep_into`] for `pairs` of the bodies of
    /// [`set_bodies`](Self::set_bodies), with its options: the same answers, to the bit, as a
    /// call given those bodies, without validating, packing or uploading them again.
    ///
    /// Used by: `docs/guide.md` ("On your own device: the stage API"), `docs/guarantees.md`
    /// ("Limits"), `examples/host_profile.rs`.
    ///
    /// # Errors
    /// [`Error::InvalidBuffer`] (`bodies`) when no bodies are set (see
    /// [`set_bodies`](Self::set_bodies)); [`Error::PairIndexOutOfRange`] for a pair naming a
    /// body beyond them; the device's errors as [`SweepPipeline::sweep`]. `impacts` is left
    /// empty on error.
    pub fn sweep_pairs_into(
        &self,
        pairs: &[[u32; 2]],
        impacts: &mut Vec<Option<Impact>>,
    ) -> Result<(), Error> {
        self.run_set::<Impacts>(pairs, impacts)
    }

    /// [`SweepPipeline::times_of_impact_into`] for `pairs` of the bodies of
    /// [`set_bodies`](Self::set_bodies), as [`sweep_pairs_into`](Self::sweep_pairs_into).
    ///
    /// Used by: `docs/guide.md` ("On your own device: the stage API"), `docs/guarantees.md`
    /// ("Limits"), `examples/host_profile.rs`.
    ///
    /// # Errors
    /// As [`sweep_pairs_into`](Self::sweep_pairs_into); `times` is left empty on error.
    pub fn times_of_impact_pairs_into(
        &self,
        pairs: &[[u32; 2]],
        times: &mut Vec<TimeOfImpact>,
    ) -> Result<(), Error> {
        self.run_set::<Times>(pairs, times)
    }

    /// A whole call with output `D`: validate, upload, sweep chunk by chunk, read back.
    fn run<D: Decode, B>(
        &self,
        bodies: &[B],
        pairs: &[[u32; 2]],
        options: SweepOptions,
        out: &mut Vec<D::Item>,
    ) -> Result<(), Error>
    where
        B: Copy + Into<MovingSphere> + Sync,
    {
        out.clear();
        let mut guard = self.lock();
        // A lost device fails at once, before anything touches it.
        self.waiter.check_loss()?;
        // The set bodies, if any, are about to be written over.
        if let Some(buffers) = guard.as_mut() {
            buffers.set = None;
        }
        // No pairs (wgpu rejects zero-sized copies, and there is nothing to do), or more
        // bodies than a binding holds: the same checks in the same order, on the host alone.
        if pairs.is_empty() || bodies.len() > self.max_bodies() {
            return check_batch(bodies, pairs, &options, self.max_bodies());
        }
        out.reserve(pairs.len());
        let source = Source::Given(bodies);
        let result = self.with_buffers(&mut guard, |buffers| {
            self.sweep_chunks::<D, B>(buffers, source, pairs, &options, out)
        });
        if result.is_err() {
            out.clear();
        }
        result
    }

    /// A call with output `D` against the bodies of [`SweepPipeline::set_bodies`].
    fn run_set<D: Decode>(&self, pairs: &[[u32; 2]], out: &mut Vec<D::Item>) -> Result<(), Error> {
        out.clear();
        let mut guard = self.lock();
        self.waiter.check_loss()?;
        let Some(set) = guard.as_ref().and_then(|buffers| buffers.set) else {
            return Err(Error::InvalidBuffer {
                name: "bodies",
                reason: "no bodies are set on this pipeline: call SweepPipeline::set_bodies first (a call given bodies of its own, or one the device failed, replaces them)".into(),
            });
        };
        if pairs.is_empty() {
            return Ok(());
        }
        out.reserve(pairs.len());
        let options = set.options;
        let result = self.with_buffers(&mut guard, |buffers| {
            self.sweep_chunks::<D, MovingSphere>(buffers, Source::Set(set), pairs, &options, out)
        });
        if result.is_err() {
            out.clear();
        }
        result
    }

    /// Runs `work` on the buffers (made again if a failed call dropped them) within error
    /// scopes of its own; after an error, replaces what the failure may have left unusable.
    fn with_buffers(
        &self,
        guard: &mut Option<Buffers>,
        work: impl FnOnce(&mut Buffers) -> Result<(), Error>,
    ) -> Result<(), Error> {
        // The device errors of this call's own work, and only those, on this thread.
        let scopes = ErrorScopes::push(&self.device);
        let result = match &mut *guard {
            Some(buffers) => Ok(buffers),
            none @ None => Buffers::new(&self.device, &self.stage, self.max_pairs_per_dispatch)
                .map(|buffers| none.insert(buffers)),
        }
        .and_then(work);
        let caught = pollster::block_on(scopes.finish());
        let device_failed = caught.is_err();
        // A caught device error explains a failed wait or wrong records: it wins.
        let result = caught.and(result);
        if result.is_err() {
            if device_failed {
                // The device refused some of this call's work (a buffer it could not back,
                // say): any buffer may be invalid, so all go (the set bodies with them), and
                // the next call makes them again from the smallest sizes.
                *guard = None;
            } else if let Some(buffers) = guard.as_mut() {
                // Fresh transfer buffers, made in scopes of their own: should making them
                // fail, all go as above; this call's error is the one due. The device's
                // bodies are kept: set bodies stay set.
                let scopes = ErrorScopes::push(&self.device);
                buffers.discard_transfers(
                    &self.device,
                    self.stage.max_bodies(),
                    self.max_pairs_per_dispatch,
                );
                if pollster::block_on(scopes.finish()).is_err() {
                    *guard = None;
                }
            }
        }
        result
    }

    /// Validates and packs `bodies` straight into the mapped upload buffer (with each one's
    /// displacement kept where `displacements`), and checks them against `options`.
    fn pack_upload<B: Copy + Into<MovingSphere> + Sync>(
        &self,
        buffers: &mut Buffers,
        bodies: &[B],
        options: &SweepOptions,
        displacements: bool,
    ) -> Result<(), Error> {
        let body_count = bodies.len() as u64;
        buffers.body_upload.ensure(&self.device, body_count);
        let pack_bytes = bodies.len() * (size_of::<B>() + size_of::<BodyRecord>());
        let upload = &mut buffers.body_upload;
        pollster::block_on(upload.write_with(
            &self.waiter,
            bytes_of::<BodyRecord>(body_count),
            |view| {
                let pieces = pieces(view, PACK_BLOCK * size_of::<BodyRecord>());
                span("pack", pack_bytes as u64, pool_threads(), || {
                    pack_bodies_into(bodies, pieces, |mut piece, bytes| {
                        piece.0.copy_from_slice(bytes);
                    })
                })
            },
        ))?;
        buffers.displacements.clear();
        if displacements {
            let bytes = bodies.len() * (size_of::<B>() + size_of::<Vec3>());
            span("displacements", bytes as u64, pool_threads(), || {
                let displacements = bodies.par_iter().map(|&body| body.into().displacement);
                buffers.displacements.par_extend(displacements);
            });
        }
        match &options.periodic_box {
            Some(periodic_box) => validate_periodic_reach(bodies, periodic_box),
            None => Ok(()),
        }
    }

    /// Validates and packs the given bodies straight into the mapped upload buffer (or takes
    /// the set ones), checks the pairs, then runs one dispatch per chunk of pairs, pipelined:
    /// while the device sweeps chunk `k`, the host writes chunk `k + 1`'s pairs and decodes
    /// chunk `k - 1`'s answers.
    fn sweep_chunks<D: Decode, B: Copy + Into<MovingSphere> + Sync>(
        &self,
        buffers: &mut Buffers,
        source: Source<'_, B>,
        pairs: &[[u32; 2]],
        options: &SweepOptions,
        out: &mut Vec<D::Item>,
    ) -> Result<(), Error> {
        let check_bytes = std::mem::size_of_val(pairs) as u64;
        let (body_count, upload_bodies) = match source {
            Source::Given(bodies) => {
                let displacements = D::KIND == SweepOutput::Impacts;
                self.pack_upload(buffers, bodies, options, displacements)?;
                span("check", check_bytes, pool_threads(), || {
                    validate_pairs(pairs, bodies.len())
                })?;
                (bodies.len() as u64, true)
            }
            Source::Set(set) => {
                span("check", check_bytes, pool_threads(), || {
                    validate_pairs(pairs, set.count)
                })?;
                (set.count as u64, false)
            }
        };
        let chunk_pairs = self.chunk_pairs(pairs.len());
        let output = (D::KIND, self.max_pairs_per_dispatch);
        let capacity = chunk_pairs as u64;
        buffers.ensure(&self.device, &self.stage, body_count, capacity, output)?;
        let count = pairs.len().div_ceil(chunk_pairs);
        let chunk = |k: usize| &pairs[k * chunk_pairs..pairs.len().min((k + 1) * chunk_pairs)];
        let write = |upload: &mut Upload, chunk: &[[u32; 2]]| {
            pollster::block_on(upload.write(&self.waiter, bytemuck::cast_slice(chunk)))
        };
        write(&mut buffers.pair_uploads[0], chunk(0))?;
        // The chunk submitted before the current one: its index and its readback's mapping.
        let mut previous: Option<(usize, PendingMap)> = None;
        for k in 0..count {
            let with_bodies = (k == 0 && upload_bodies).then_some(body_count);
            let mapping =
                self.submit_chunk::<D>(buffers, k, chunk(k).len(), with_bodies, options)?;
            // The device sweeps chunk k (after k - 1) while the host waits for k - 1, writes
            // k + 1's pairs and decodes k - 1.
            let done = match previous.replace((k, mapping)) {
                Some((done, mapping)) => self.wait(mapping).map(|()| Some(done))?,
                None => None,
            };
            if k + 1 < count {
                write(&mut buffers.pair_uploads[(k + 1) % 2], chunk(k + 1))?;
            }
            if let Some(done) = done {
                self.decode::<D>(buffers, done % 2, chunk(done), out)?;
            }
        }
        let (last, mapping) = previous.expect("at least one chunk");
        self.wait(mapping)?;
        self.decode::<D>(buffers, last % 2, chunk(last), out)
    }

    /// The pairs of each chunk of a call of `pairs` pairs (the last may have fewer): the split
    /// rule of [`SweepPipeline`].
    fn chunk_pairs(&self, pairs: usize) -> usize {
        let even = pairs.div_ceil(PIPELINE_CHUNKS);
        (even.max(PIPELINE_MIN_CHUNK))
            .min(self.max_pairs_per_dispatch as usize)
            .min(pairs)
    }

    /// Records and submits chunk `k`'s dispatch of `len` pairs (its pairs already written to
    /// its upload; with `body_count`, the bodies' copy first), then requests at once the
    /// mappings that wait for it: its readback's, returned, and its upload's, for the chunk
    /// after next (or the next call).
    fn submit_chunk<D: Decode>(
        &self,
        buffers: &mut Buffers,
        k: usize,
        len: usize,
        body_count: Option<u64>,
        options: &SweepOptions,
    ) -> Result<PendingMap, Error> {
        let pair_bytes = bytes_of::<[u32; 2]>(len as u64);
        let output_bytes = len as u64 * D::KIND.size();
        let timer = Timer::start();
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("sweep"),
            });
        if let Some(body_count) = body_count {
            let (upload, bodies) = (buffers.body_upload.buffer(), buffers.bodies.buffer());
            encoder.copy_buffer_to_buffer(upload, 0, bodies, 0, bytes_of::<BodyRecord>(body_count));
        }
        let upload = buffers.pair_uploads[k % 2].buffer();
        encoder.copy_buffer_to_buffer(upload, 0, buffers.pairs.buffer(), 0, pair_bytes);
        let outputs = buffers.impacts_or_times(D::KIND);
        let (queue, bound) = (&self.queue, &outputs.bound);
        self.stage
            .record(queue, &mut encoder, bound, len as u32, *options)?;
        let readback = outputs.readbacks[k % 2].buffer();
        encoder.copy_buffer_to_buffer(outputs.output.buffer(), 0, readback, 0, output_bytes);
        let submission = self.queue.submit([encoder.finish()]);
        let slice = readback.slice(..output_bytes);
        let mapping =
            (self.waiter).request_map(&slice, wgpu::MapMode::Read, Some(submission.clone()));
        buffers.pair_uploads[k % 2].request_map(&self.waiter, submission);
        timer.end("record", 0, 1);
        Ok(mapping)
    }

    /// Waits for a chunk's submission and its readback's mapping.
    fn wait(&self, mapping: PendingMap) -> Result<(), Error> {
        let timer = Timer::start();
        pollster::block_on(self.waiter.finish(mapping))?;
        timer.end("wait", 0, 1);
        Ok(())
    }

    /// Decodes `chunk`'s answers from readback `slot` (mapped) into `out`, then unmaps it.
    fn decode<D: Decode>(
        &self,
        buffers: &Buffers,
        slot: usize,
        chunk: &[[u32; 2]],
        out: &mut Vec<D::Item>,
    ) -> Result<(), Error> {
        let output_bytes = chunk.len() as u64 * D::KIND.size();
        let readback = buffers.impacts_or_times(D::KIND).readbacks[slot].buffer();
        let decode_bytes = output_bytes + chunk.len() as u64 * D::BYTES_PER_ITEM;
        let decoded = span("decode", decode_bytes, pool_threads(), || {
            (readback.slice(..output_bytes))
                .get_mapped_range()
                .map(|view| D::decode(&view, chunk, &buffers.displacements, out))
        });
        // Unmap on every path, or the next chunk could not map it again.
        span("unmap", 0, 1, || readback.unmap());
        decoded.map_err(|error| Error::Mapping(error.to_string()))
    }
}
