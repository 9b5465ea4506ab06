//! What a benchmark observes of the commands a step records: wgpu cannot list an encoder's
//! commands, so the step's own recording helpers say what they record, into a thread-local
//! log that [`observed`] opens around a recording.

use std::cell::RefCell;

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
