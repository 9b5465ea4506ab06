//! Where a blocking call's host time goes: each stage of [`SweepPipeline`]'s and
//! [`ContactPipeline`]'s calls (validation and packing, staging writes, waits, mapping, copies
//! out of mapped memory, decoding) timed on the calling thread while [`host_profile`] runs,
//! with the bytes it touches and the threads it runs on. Outside [`host_profile`] a stage costs
//! one thread-local read.
//!
//! [`SweepPipeline`]: crate::gpu::SweepPipeline
//! [`ContactPipeline`]: crate::gpu::ContactPipeline

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// One stage of a blocking call, as [`host_profile`] saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostSpan {
    /// The stage: `pack` (validate and pack the bodies and check the pairs), `map upload`
    /// (wait until a staging buffer may be written again), `write upload` (copy into the
    /// mapped staging buffer), `buffers` (the step's: make or reuse them, write their
    /// parameters), `record` (encode and submit), `wait` (until the device's
    /// work and the readback's mapping are done: the device's own time is in here),
    /// `decode` (read the mapped readback into the caller's vector; the step's are
    /// `decode counts`, `decode contacts`, `decode per body` and `decode earliest`), `check`
    /// (the pairs' indices and the periodic box's reach), `displacements` (each body's, kept
    /// for decoding impacts) and `unmap`.
    pub stage: &'static str,
    /// Wall-clock time on the calling thread.
    pub elapsed: Duration,
    /// Bytes the stage reads plus bytes it writes in host memory (0 for a wait).
    pub bytes: u64,
    /// Threads it runs on: 1, or rayon's pool when it runs there.
    pub threads: usize,
}

thread_local! {
    /// The spans of the [`host_profile`] call running on this thread, if any.
    static SPANS: RefCell<Option<Vec<HostSpan>>> = const { RefCell::new(None) };
}

/// Runs `call` and returns what it returns with the spans of every blocking call it made on
/// this thread, in order (a chunked call repeats its per-chunk stages).
///
/// # Example
/// ```no_run
/// use sweepcast::glam::Vec3;
/// use sweepcast::{gpu::{GpuContext, SweepPipeline}, low_level::host_profile, MovingSphere};
///
/// let context = GpuContext::new_blocking()?;
/// let pipeline = SweepPipeline::new(&context)?;
/// let bodies = [MovingSphere::new(Vec3::ZERO, 1.0, Vec3::X), MovingSphere::new(Vec3::X, 1.0, Vec3::ZERO)];
/// let (impacts, spans) = host_profile(|| pipeline.sweep(&bodies, &[[0, 1]], Default::default()));
/// impacts?;
/// for span in spans {
///     println!("{:<12} {:?} {} B on {} threads", span.stage, span.elapsed, span.bytes, span.threads);
/// }
/// # Ok::<(), sweepcast::Error>(())
/// ```
pub fn host_profile<T>(call: impl FnOnce() -> T) -> (T, Vec<HostSpan>) {
    let outer = SPANS.with(|spans| spans.borrow_mut().replace(Vec::new()));
    let value = call();
    let spans = SPANS.with(|spans| std::mem::replace(&mut *spans.borrow_mut(), outer));
    (value, spans.unwrap_or_default())
}

/// The start of a stage, when a [`host_profile`] call is running on this thread (else
/// nothing is timed).
pub(crate) struct Timer(Option<Instant>);

impl Timer {
    pub(crate) fn start() -> Self {
        let on = SPANS.with(|spans| spans.borrow().is_some());
        Self(on.then(Instant::now))
    }

    /// Ends the stage `stage`, which touched `bytes` on `threads` threads.
    pub(crate) fn end(self, stage: &'static str, bytes: u64, threads: usize) {
        let Some(start) = self.0 else { return };
        let elapsed = start.elapsed();
        SPANS.with(|spans| {
            if let Some(spans) = spans.borrow_mut().as_mut() {
                spans.push(HostSpan {
                    stage,
                    elapsed,
                    bytes,
                    threads,
                });
            }
        });
    }
}

/// Runs `work` as stage `stage` touching `bytes` on `threads` threads, timed when a
/// [`host_profile`] call is running on this thread.
pub(crate) fn span<T>(
    stage: &'static str,
    bytes: u64,
    threads: usize,
    work: impl FnOnce() -> T,
) -> T {
    let timer = Timer::start();
    let value = work();
    timer.end(stage, bytes, threads);
    value
}

/// The threads a rayon-parallel stage runs on.
pub(crate) fn pool_threads() -> usize {
    crate::par::current_num_threads()
}
