//! The GPU context: instance, adapter, device and queue, chosen from the environment.

use std::sync::{Arc, Mutex};

use crate::error::Error;

/// Instance, adapter, device and queue: create one per program and share it between pipelines.
///
/// The adapter is chosen the way wgpu's own tools choose it:
/// * `WGPU_BACKEND`: a comma-separated list of backends to consider (`vulkan`, `metal`,
///   `dx12`, `gl`); all of them when unset.
/// * `WGPU_ADAPTER_NAME`: the first adapter whose name contains this text (case-insensitive).
/// * `WGPU_POWER_PREF`: `low` or `high` (the default).
///
/// Device errors that wgpu would otherwise turn into panics (validation, out of memory, a lost
/// device), including those of the caller's own work on [`GpuContext::device`], are recorded
/// and returned as [`Error::Device`] by the next pipeline call; the call after that runs
/// normally. A lost device (including one the caller destroys) is different: from then on
/// every pipeline call on this context returns [`Error::Device`] naming the loss, at once and
/// without touching the device; create a new `GpuContext` to go on.
#[derive(Debug)]
pub struct GpuContext {
    instance: wgpu::Instance,
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    errors: ErrorSink,
}

/// The first device error since it was last taken, and whether the device was lost.
#[derive(Clone, Debug, Default)]
pub(crate) struct ErrorSink(Arc<Mutex<Recorded>>);

#[derive(Debug, Default)]
struct Recorded {
    /// Reported once, by the next [`ErrorSink::take`].
    first: Option<String>,
    /// Reported by every [`ErrorSink::take`] from now on.
    lost: Option<String>,
}

impl ErrorSink {
    fn slot(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn record(&self, message: String) {
        self.slot().first.get_or_insert(message);
    }

    /// Records that the device is lost: every later [`ErrorSink::take`] fails with `message`.
    pub(crate) fn record_lost(&self, message: String) {
        self.slot().lost.get_or_insert(message);
    }

    /// Takes the recorded error, if any; once the device is lost, fails every time.
    pub(crate) fn take(&self) -> Result<(), Error> {
        let mut slot = self.slot();
        let first = slot.first.take();
        match (&slot.lost, first) {
            (Some(lost), _) => Err(Error::Device(lost.clone())),
            (None, Some(message)) => Err(Error::Device(message)),
            (None, None) => Ok(()),
        }
    }
}

impl GpuContext {
    /// Finds an adapter (see the type's documentation for the environment variables) and
    /// opens a device on it with the adapter's own limits, so that batches can use as much of
    /// the hardware as it offers.
    ///
    /// # Errors
    /// [`Error::NoAdapter`] when no adapter matches, [`Error::UnsupportedAdapter`] when the
    /// adapter cannot run compute shaders, [`Error::RequestDevice`] when the device fails.
    pub async fn new() -> Result<Self, Error> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = choose_adapter(&instance).await?;
        let info = adapter.get_info();
        let downlevel = adapter.get_downlevel_capabilities();
        if !downlevel
            .flags
            .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS)
        {
            return Err(Error::UnsupportedAdapter {
                adapter: info.name,
                reason: "no compute shader support".into(),
            });
        }
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("sweepcast"),
                required_limits: adapter.limits(),
                memory_hints: wgpu::MemoryHints::Performance,
                ..Default::default()
            })
            .await?;
        let errors = ErrorSink::default();
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |error| sink.record(error.to_string())));
        let sink = errors.clone();
        device.set_device_lost_callback(move |reason, message| {
            sink.record_lost(format!("device lost ({reason:?}): {message}"));
        });
        Ok(Self {
            instance,
            adapter,
            device,
            queue,
            info,
            errors,
        })
    }

    /// [`GpuContext::new`], blocking the calling thread until the device is ready.
    ///
    /// # Errors
    /// As [`GpuContext::new`].
    pub fn new_blocking() -> Result<Self, Error> {
        pollster::block_on(Self::new())
    }

    /// Name, backend, device type, driver of the chosen adapter.
    #[must_use]
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// One line for logs: `name (backend, device type)`.
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "{} ({:?}, {:?}, driver {} {})",
            self.info.name,
            self.info.backend,
            self.info.device_type,
            self.info.driver,
            self.info.driver_info
        )
    }

    /// The wgpu instance.
    #[must_use]
    pub fn instance(&self) -> &wgpu::Instance {
        &self.instance
    }

    /// The chosen adapter.
    #[must_use]
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.adapter
    }

    /// The device, for callers that record their own work beside sweepcast's.
    #[must_use]
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The queue.
    #[must_use]
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    pub(crate) fn errors(&self) -> &ErrorSink {
        &self.errors
    }
}

async fn choose_adapter(instance: &wgpu::Instance) -> Result<wgpu::Adapter, Error> {
    let backends = wgpu::Backends::from_env().unwrap_or_default();
    if let Ok(wanted) = std::env::var("WGPU_ADAPTER_NAME") {
        let wanted_lower = wanted.to_lowercase();
        let adapters = instance.enumerate_adapters(backends).await;
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        return adapters
            .into_iter()
            .find(|a| a.get_info().name.to_lowercase().contains(&wanted_lower))
            .ok_or_else(|| Error::NoAdapter {
                reason: format!(
                    "WGPU_ADAPTER_NAME={wanted:?} matches none of {names:?} on backends {backends:?}"
                ),
            });
    }
    instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::from_env()
                .unwrap_or(wgpu::PowerPreference::HighPerformance),
            ..Default::default()
        })
        .await
        .map_err(|error| Error::NoAdapter {
            reason: format!("{error} on backends {backends:?}"),
        })
}
