//! What every stage's blocking convenience shares: a device buffer that grows by powers of
//! two and says when it was replaced, staging buffers to upload from and read back into, and
//! waiting for the device with a poll timeout.

use std::time::{Duration, Instant};

use futures_intrusive::channel::shared::OneshotReceiver;

use super::context::LossRecord;
use super::host_profile::{Timer, pool_threads, span};
use crate::error::Error;
use crate::layout::bytes_of;
use crate::par::prelude::*;

/// Smallest capacity of a [`GrowingBuffer`], in elements: below it growth by doubling is not
/// worth a buffer.
pub(crate) const MIN_CAPACITY: u64 = 1024;

/// The capacity a buffer is made with for `count` elements: the next power of two at or above
/// `count`, at least `least`, at most `most` (which wins where `least` exceeds it). `count` is
/// clamped first, so the power of two cannot overflow.
pub(crate) fn capacity_for(count: u64, least: u64, most: u64) -> u64 {
    count.min(most).next_power_of_two().max(least).min(most)
}

/// A device buffer of fixed-size elements, replaced by a larger one (the next power of two,
/// at least [`MIN_CAPACITY`], at most `max_elements`) when a batch outgrows it. It never
/// shrinks. Buffers that the host writes (`MAP_WRITE`) are created mapped.
#[derive(Debug)]
pub(crate) struct GrowingBuffer {
    buffer: wgpu::Buffer,
    label: &'static str,
    usage: wgpu::BufferUsages,
    element_size: u64,
    max_elements: u64,
}

impl GrowingBuffer {
    /// A buffer of [`MIN_CAPACITY`] elements (or `max_elements`, if fewer).
    pub(crate) fn new(
        device: &wgpu::Device,
        label: &'static str,
        usage: wgpu::BufferUsages,
        element_size: u64,
        max_elements: u64,
    ) -> Self {
        let capacity = MIN_CAPACITY.min(max_elements).max(1);
        Self {
            buffer: create_buffer(device, label, usage, capacity * element_size),
            label,
            usage,
            element_size,
            max_elements,
        }
    }

    /// Makes room for `count` elements; returns whether the buffer was replaced (so that
    /// whatever binds it must be rebuilt, and a new host-visible buffer is mapped).
    pub(crate) fn ensure(&mut self, device: &wgpu::Device, count: u64) -> bool {
        if self.capacity() >= count {
            return false;
        }
        let capacity = capacity_for(count, MIN_CAPACITY, self.max_elements.max(count));
        self.buffer = create_buffer(device, self.label, self.usage, capacity * self.element_size);
        true
    }

    /// Elements it holds.
    pub(crate) fn capacity(&self) -> u64 {
        self.buffer.size() / self.element_size
    }

    /// The buffer now (replaced by [`GrowingBuffer::ensure`]).
    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }
}

/// A buffer of `size` bytes; one the host writes (`MAP_WRITE`) is created mapped, ready to
/// be written.
pub(crate) fn create_buffer(
    device: &wgpu::Device,
    label: &'static str,
    usage: wgpu::BufferUsages,
    size: u64,
) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage,
        mapped_at_creation: usage.contains(wgpu::BufferUsages::MAP_WRITE),
    })
}

/// A host-visible buffer the host writes while it is mapped and the device copies from once
/// it is unmapped. Kept between calls so that no step allocates staging memory; it is mapped
/// again (waiting for the copies of the last call) only when it is next written.
#[derive(Debug)]
pub(crate) struct Upload {
    staging: GrowingBuffer,
    state: UploadState,
}

/// Whether an [`Upload`] may be written now.
#[derive(Debug)]
enum UploadState {
    /// Mapped: written at once.
    Mapped,
    /// Its mapping was requested after the submission that last copies from it: written once
    /// that submission is done.
    Pending(PendingMap),
    /// Unmapped, with no mapping requested: mapped when next written.
    Unmapped,
}

impl Upload {
    /// An upload buffer of `element_size` elements, mapped.
    pub(crate) fn new(
        device: &wgpu::Device,
        label: &'static str,
        element_size: u64,
        max_elements: u64,
    ) -> Self {
        Self {
            staging: GrowingBuffer::new(device, label, UPLOAD, element_size, max_elements),
            state: UploadState::Mapped,
        }
    }

    /// Makes room for `count` elements (a new buffer is mapped at creation).
    pub(crate) fn ensure(&mut self, device: &wgpu::Device, count: u64) {
        if self.staging.ensure(device, count) {
            self.state = UploadState::Mapped;
        }
    }

    /// The staging buffer, to copy from.
    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        self.staging.buffer()
    }

    /// Requests the mapping of the next write now, right after `submission` (the last to
    /// copy from it) was submitted, so that the write waits for that submission only.
    pub(crate) fn request_map(&mut self, waiter: &DeviceWaiter, submission: wgpu::SubmissionIndex) {
        if matches!(self.state, UploadState::Unmapped) {
            let slice = self.staging.buffer().slice(..);
            let pending = waiter.request_map(&slice, wgpu::MapMode::Write, Some(submission));
            self.state = UploadState::Pending(pending);
        }
    }

    /// Writes `bytes` at the start (mapping it first if the last call's copies may still
    /// read it) and unmaps it, ready to be copied from.
    pub(crate) async fn write(&mut self, waiter: &DeviceWaiter, bytes: &[u8]) -> Result<(), Error> {
        let touched = 2 * bytes.len() as u64;
        self.write_with(waiter, bytes.len() as u64, |view| {
            span("write upload", touched, pool_threads(), || {
                par_copy(view, bytes);
            });
            Ok(())
        })
        .await
    }

    /// Lets `fill` write the first `len` bytes in place (mapping the buffer first if the
    /// copies of earlier submissions may still read it: waiting for the submission its
    /// mapping was [requested](Self::request_map) after, else for all work submitted so far),
    /// then unmaps it, ready to be copied from: the bytes go straight into the mapping, with
    /// no copy on the way. An error of `fill` is returned after the unmap, so the buffer
    /// stays usable.
    pub(crate) async fn write_with(
        &mut self,
        waiter: &DeviceWaiter,
        len: u64,
        fill: impl FnOnce(wgpu::WriteOnly<'_, [u8]>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let buffer = self.staging.buffer();
        let pending = match std::mem::replace(&mut self.state, UploadState::Unmapped) {
            UploadState::Mapped => None,
            UploadState::Pending(pending) => Some(pending),
            UploadState::Unmapped => {
                Some(waiter.request_map(&buffer.slice(..), wgpu::MapMode::Write, None))
            }
        };
        if let Some(pending) = pending {
            let timer = Timer::start();
            waiter.finish(pending).await?;
            timer.end("map upload", 0, 1);
        }
        let written = buffer
            .slice(..len)
            .get_mapped_range_mut()
            .map_err(|error| Error::Mapping(error.to_string()))
            .and_then(|mut view| fill(view.slice(..)));
        span("unmap", 0, 1, || buffer.unmap());
        written
    }
}

/// A piece of a mapped range, sent to the thread that writes it.
pub(crate) struct Piece<'a>(pub(crate) wgpu::WriteOnly<'a, [u8]>);

// SAFETY: wgpu's `WriteOnly<'_, T>` is `Send` for `T: Send` by its own argument (it gives
// exclusive access to the memory it points to, as `&mut T` does, which is `Send` for
// `T: Send`); its impl only lacks `?Sized`, so `WriteOnly<'_, [u8]>` misses out. `[u8]` is
// `Send` and the argument holds for it as for `&mut [u8]`: the pieces never overlap.
unsafe impl Send for Piece<'_> {}

/// `view` cut into pieces of `piece` bytes (the last may be shorter), to be written in
/// parallel.
pub(crate) fn pieces(mut view: wgpu::WriteOnly<'_, [u8]>, piece: usize) -> Vec<Piece<'_>> {
    let mut pieces = Vec::with_capacity(view.len().div_ceil(piece));
    while !view.is_empty() {
        let length = piece.min(view.len());
        let (head, tail) = view.split_at(length);
        pieces.push(Piece(head));
        view = tail;
    }
    pieces
}

/// Copies `bytes` into `view` (as long) on all cores, in pieces of 256 KiB (one piece on the
/// calling thread).
pub(crate) fn par_copy(mut view: wgpu::WriteOnly<'_, [u8]>, bytes: &[u8]) {
    const PIECE: usize = 256 << 10;
    if bytes.len() <= PIECE {
        view.copy_from_slice(bytes);
        return;
    }
    pieces(view, PIECE)
        .into_par_iter()
        .zip(bytes.par_chunks(PIECE))
        .for_each(|(mut piece, bytes)| piece.0.copy_from_slice(bytes));
}

/// Waits for the device: maps buffers and blocks until the work submitted so far is done,
/// with a limit on each wait.
#[derive(Debug, Clone)]
pub(crate) struct DeviceWaiter {
    device: wgpu::Device,
    poll_timeout: Option<Duration>,
    loss: LossRecord,
}

impl DeviceWaiter {
    pub(crate) fn new(
        device: wgpu::Device,
        poll_timeout: Option<Duration>,
        loss: LossRecord,
    ) -> Self {
        Self {
            device,
            poll_timeout,
            loss,
        }
    }

    /// [`Error::Device`] naming the loss once the device is lost.
    pub(crate) fn check_loss(&self) -> Result<(), Error> {
        self.loss.check()
    }

    pub(crate) fn poll_timeout(&self) -> Option<Duration> {
        self.poll_timeout
    }

    pub(crate) fn set_poll_timeout(&mut self, poll_timeout: Option<Duration>) {
        self.poll_timeout = poll_timeout;
    }

    /// Maps `slice` and waits for it, polling the device (which also waits for the work
    /// submitted before). On any error the caller discards the buffer: it may be left mapped
    /// or with a mapping pending.
    pub(crate) async fn map(
        &self,
        slice: &wgpu::BufferSlice<'_>,
        mode: wgpu::MapMode,
    ) -> Result<(), Error> {
        self.finish(self.request_map(slice, mode, None)).await
    }

    /// Requests the mapping of `slice` without waiting: right after `submission`, the last
    /// submission that uses the buffer (`None`: wait for all work submitted so far), so that
    /// [`DeviceWaiter::finish`] waits for that submission and not for later ones.
    pub(crate) fn request_map(
        &self,
        slice: &wgpu::BufferSlice<'_>,
        mode: wgpu::MapMode,
        submission: Option<wgpu::SubmissionIndex>,
    ) -> PendingMap {
        let (sender, receiver) = futures_intrusive::channel::shared::oneshot_channel();
        slice.map_async(mode, move |result| {
            // A failed send only means the receiver was dropped: the wait gave up, or the
            // buffer was discarded with its mapping pending.
            let _ = sender.send(result);
        });
        PendingMap {
            receiver,
            submission,
        }
    }

    /// Waits for the submission a mapping was requested after, then for the mapping. On any
    /// error the caller discards the buffer: it may be left mapped or with a mapping pending.
    pub(crate) async fn finish(&self, pending: PendingMap) -> Result<(), Error> {
        // Without a completed wait the callback may never run: do not wait for it then.
        self.wait_for(pending.submission)?;
        let mapped = pending.receiver.receive().await;
        self.loss.check()?;
        match mapped {
            Some(Ok(())) => Ok(()),
            Some(Err(error)) => Err(Error::Mapping(error.to_string())),
            None => Err(Error::Mapping("the map callback was dropped".into())),
        }
    }

    /// Blocks until the work submitted so far has finished (running the callbacks of the
    /// mappings it completes), or [`Error::Timeout`] once the poll timeout has passed.
    pub(crate) fn wait(&self) -> Result<(), Error> {
        self.wait_for(None)
    }

    /// Blocks until `submission` (`None`: all work submitted so far) has finished, running
    /// the callbacks of the mappings it completes (and of any later work done by then), or
    /// [`Error::Timeout`] once the poll timeout has passed.
    pub(crate) fn wait_for(&self, submission: Option<wgpu::SubmissionIndex>) -> Result<(), Error> {
        let start = Instant::now();
        loop {
            let timeout = self
                .poll_timeout
                .map(|limit| limit.saturating_sub(start.elapsed()));
            let poll = || {
                self.device.poll(wgpu::PollType::Wait {
                    submission_index: submission.clone(),
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
                    self.loss.record(format!(
                        "device lost: wgpu panicked while waiting for it ({message})"
                    ));
                    self.loss.check().expect_err("recorded above")
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

/// A mapping requested by [`DeviceWaiter::request_map`], waited for by
/// [`DeviceWaiter::finish`]. Dropped unfinished, its callback finds no one to tell.
#[derive(Debug)]
pub(crate) struct PendingMap {
    receiver: OneshotReceiver<Result<(), wgpu::BufferAsyncError>>,
    submission: Option<wgpu::SubmissionIndex>,
}

/// Catches the device errors of the crate's own work on this thread: validation, out of
/// memory and internal errors, in scopes pushed when it is made and popped by
/// [`ErrorScopes::finish`]. Errors of the caller's own work, outside the scopes, go where the
/// caller sends them (its `on_uncaptured_error` handler, or wgpu's default, which panics).
#[must_use]
pub(crate) struct ErrorScopes {
    scopes: [wgpu::ErrorScopeGuard; 3],
}

impl ErrorScopes {
    pub(crate) fn push(device: &wgpu::Device) -> Self {
        Self {
            scopes: [
                device.push_error_scope(wgpu::ErrorFilter::Validation),
                device.push_error_scope(wgpu::ErrorFilter::OutOfMemory),
                device.push_error_scope(wgpu::ErrorFilter::Internal),
            ],
        }
    }

    /// Pops the scopes (innermost first) and returns the first error they caught.
    pub(crate) async fn finish(self) -> Result<(), Error> {
        let [validation, out_of_memory, internal] = self.scopes;
        let caught = [internal.pop(), out_of_memory.pop(), validation.pop()];
        let mut first = None;
        for error in caught {
            if let Some(error) = error.await {
                first.get_or_insert(error);
            }
        }
        first.map_or(Ok(()), |error| {
            Err(match error {
                wgpu::Error::OutOfMemory { .. } => Error::OutOfDeviceMemory(error.to_string()),
                _ => Error::Device(error.to_string()),
            })
        })
    }
}

/// A buffer of one record for each item (a body, a hit, a contact), declared once: a stage makes
/// it for a count with [`BufferSet::per_item`], and its bytes per item are the sum of the
/// declarations ([`bytes_per_item`]), so that a per-item total is the buffers that exist.
#[derive(Copy, Clone, Debug)]
pub(crate) struct PerItem {
    label: &'static str,
    bytes: u64,
    usage: wgpu::BufferUsages,
}

impl PerItem {
    /// One record of `T` an item, in the buffer named `label`.
    pub(crate) const fn of<T>(label: &'static str, usage: wgpu::BufferUsages) -> Self {
        Self {
            label,
            bytes: bytes_of::<T>(1),
            usage,
        }
    }

    /// The buffer's name.
    pub(crate) const fn label(&self) -> &'static str {
        self.label
    }

    /// The bytes of one item's record.
    pub(crate) const fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The buffer's usage.
    pub(crate) const fn usage(&self) -> wgpu::BufferUsages {
        self.usage
    }
}

/// The bytes an item takes in `buffers`.
pub(crate) const fn bytes_per_item(buffers: &[PerItem]) -> u64 {
    let mut total = 0;
    let mut i = 0;
    while i < buffers.len() {
        total += buffers[i].bytes;
        i += 1;
    }
    total
}

/// The bytes of `device`'s largest storage binding: its binding limit, or its buffer limit
/// where that is smaller.
pub(crate) fn largest_binding(device: &wgpu::Device) -> u64 {
    let limits = device.limits();
    limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size)
}

/// The most items each of `buffers` holds in one binding of `device` ([`largest_binding`]),
/// and at most `u32::MAX`, the shaders' index: what a stage's capacity may be.
pub(crate) fn most_items(device: &wgpu::Device, buffers: &[PerItem]) -> u64 {
    let largest = largest_binding(device);
    let widest = buffers.iter().map(PerItem::bytes).max().unwrap_or(1).max(1);
    (largest / widest).min(u64::from(u32::MAX))
}

/// The buffers of one stage's buffers struct, made in error scopes of their own and kept
/// for the count of device memory.
pub(crate) struct BufferSet<'a> {
    device: &'a wgpu::Device,
    scopes: ErrorScopes,
    all: Vec<wgpu::Buffer>,
}

/// The usage of an [`Upload`]'s staging buffer: written mapped, copied from.
pub(crate) const UPLOAD: wgpu::BufferUsages =
    wgpu::BufferUsages::MAP_WRITE.union(wgpu::BufferUsages::COPY_SRC);

/// Storage the stages count into: read back and cleared in the encoder.
pub(crate) const COUNTED: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

impl<'a> BufferSet<'a> {
    pub(crate) fn new(device: &'a wgpu::Device) -> Self {
        Self {
            device,
            scopes: ErrorScopes::push(device),
            all: Vec::new(),
        }
    }

    /// A buffer of `size` bytes (at least 4).
    pub(crate) fn make(
        &mut self,
        label: &'static str,
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        let buffer = create_buffer(self.device, label, usage, size.max(4));
        self.all.push(buffer.clone());
        buffer
    }

    /// The buffer `buffer` declares, for `count` items (a size past `u64` asks for the
    /// largest, which the device refuses: [`Error::Device`] from [`finish`](Self::finish)).
    pub(crate) fn per_item(&mut self, buffer: PerItem, count: u64) -> wgpu::Buffer {
        self.make(
            buffer.label,
            buffer.bytes.saturating_mul(count),
            buffer.usage,
        )
    }

    /// Every buffer made, once the device has said whether it could make them.
    pub(crate) fn finish(self) -> Result<Vec<wgpu::Buffer>, Error> {
        pollster::block_on(self.scopes.finish())?;
        Ok(self.all)
    }
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

#[cfg(test)]
mod tests {
    use super::{MIN_CAPACITY, capacity_for};

    #[test]
    fn capacities_are_powers_of_two_within_their_bounds() {
        // Below the least: the least; above it: the next power of two.
        assert_eq!(capacity_for(0, MIN_CAPACITY, 1 << 20), MIN_CAPACITY);
        assert_eq!(capacity_for(1025, MIN_CAPACITY, 1 << 20), 2048);
        assert_eq!(capacity_for(4096, MIN_CAPACITY, 1 << 20), 4096);
        // The most wins over the power of two and over the least.
        assert_eq!(capacity_for(3000, MIN_CAPACITY, 2500), 2500);
        assert_eq!(capacity_for(10, 16, 12), 12);
        // A count beyond any power of two of u64 is clamped, not overflowed.
        assert_eq!(capacity_for(u64::MAX, MIN_CAPACITY, 1 << 40), 1 << 40);
    }
}
