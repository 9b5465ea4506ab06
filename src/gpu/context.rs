//! The GPU context: adapter, device and queue, chosen from the environment or the caller's own.

use std::sync::{Arc, Mutex};

use crate::error::Error;

/// Adapter, device and queue: made from the environment by [`GpuContext::new`], or wrapping a
/// caller's own device and queue with [`GpuContext::from_device`]. Create one per program and
/// share it between pipelines.
///
/// The adapter of [`GpuContext::new`] is chosen the way wgpu's own tools choose it:
/// * `WGPU_BACKEND`: a comma-separated list of backends to consider (`vulkan`, `metal`,
///   `dx12`, `gl`); all of them when unset.
/// * `WGPU_ADAPTER_NAME`: the first adapter whose name contains this text (case-insensitive).
/// * `WGPU_POWER_PREF`: `low` or `high` (the default).
///
/// Used by: the README's quick start (the GPU step), `docs/guide.md`, `examples/resident_step.rs`.
///
/// # Device errors
/// sweepcast catches the errors of its own work in error scopes (on the calling thread) and
/// returns them as [`Error::Device`]; it never installs an `on_uncaptured_error` handler, so
/// the errors of the caller's own work on the device go where the caller sends them (wgpu's
/// default handler panics). A device made by [`GpuContext::new`] gets a device-lost callback:
/// once it is lost (including destroyed by the caller), every pipeline call on this context
/// returns [`Error::Device`] naming the loss, at once and without touching the device; create
/// a new `GpuContext` to go on. A wrapped device keeps the caller's own device-lost callback
/// (wgpu holds one per device), and calls after its loss fail with the device's own errors.
///
/// Pipelines and stages hold clones of the device and queue (wgpu handles are reference
/// counted), so they may outlive the `GpuContext` they were made from.
#[derive(Debug)]
pub struct GpuContext {
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    loss: LossRecord,
}

/// Whether the device was lost, and how: set by the device-lost callback of a context's own
/// device, or when wgpu panics inside a wait.
#[derive(Clone, Debug, Default)]
pub(crate) struct LossRecord(Arc<Mutex<Option<String>>>);

impl LossRecord {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records that the device is lost: every later [`LossRecord::check`] fails with
    /// `message`.
    pub(crate) fn record(&self, message: String) {
        self.slot().get_or_insert(message);
    }

    /// [`Error::Device`] naming the loss once the device is lost.
    pub(crate) fn check(&self) -> Result<(), Error> {
        self.slot()
            .as_ref()
            .map_or(Ok(()), |lost| Err(Error::Device(lost.clone())))
    }
}

impl GpuContext {
    /// Finds an adapter (see the type's documentation for the environment variables) and
    /// opens a device on it with the adapter's own limits, so that batches can use as much of
    /// the hardware as it offers, and with `wgpu::Features::SUBGROUP` where the adapter has
    /// it (lampshade's 8-bit sort on NVIDIA needs it: the stages made `for_adapter` on such a
    /// device take it, and its portable sort above its record limit).
    ///
    /// Used by: `docs/guide.md` ("On your own device: the stage API"), `docs/step.md` ("Resident on
    /// the device: the step stage").
    ///
    /// # Errors
    /// [`Error::NoAdapter`] when no adapter matches, [`Error::UnsupportedAdapter`] when the
    /// adapter cannot run compute shaders, [`Error::RequestDevice`] when the device fails.
    pub async fn new() -> Result<Self, Error> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = choose_adapter(&instance).await?;
        let info = compute_capable(&adapter)?;
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("sweepcast"),
                // Subgroups where the adapter has them: lampshade's 8-bit sort (NVIDIA)
                // needs them, and takes 15 dispatches for the step's two code sorts where
                // its 4-bit path takes 99 (stages fall back to the portable sort above the
                // 8-bit one's record limit).
                required_features: adapter.features() & wgpu::Features::SUBGROUP,
                required_limits: adapter.limits(),
                memory_hints: wgpu::MemoryHints::Performance,
                ..Default::default()
            })
            .await
            .map_err(|error| Error::RequestDevice(Box::new(error)))?;
        let loss = LossRecord::default();
        let record = loss.clone();
        device.set_device_lost_callback(move |reason, message| {
            record.record(format!("device lost ({reason:?}): {message}"));
        });
        Ok(Self {
            adapter,
            device,
            queue,
            info,
            loss,
        })
    }

    /// Wraps a device and queue the caller made (on `adapter`), so that sweepcast's stages
    /// and pipelines run on the caller's device beside its own work. Nothing is installed on
    /// the device: the caller keeps its error handler and device-lost callback.
    ///
    /// Used by: `docs/guide.md` ("On your own device: the stage API"), `examples/step_bench.rs` and
    /// `examples/headless.rs` (their own device, in `examples/common/mod.rs`).
    ///
    /// # Errors
    /// [`Error::UnsupportedAdapter`] when the adapter cannot run compute shaders.
    pub fn from_device(
        adapter: wgpu::Adapter,
        device: wgpu::Device,
        queue: wgpu::Queue,
    ) -> Result<Self, Error> {
        let info = compute_capable(&adapter)?;
        Ok(Self {
            adapter,
            device,
            queue,
            info,
            loss: LossRecord::default(),
        })
    }

    /// [`GpuContext::new`], blocking the calling thread until the device is ready.
    ///
    /// Used by: the README's quick start (the GPU step), `docs/guide.md` ("Batches of candidate
    /// pairs"), `examples/bullets.rs`, `python/src/gpu.rs`.
    ///
    /// # Errors
    /// As [`GpuContext::new`].
    pub fn new_blocking() -> Result<Self, Error> {
        pollster::block_on(Self::new())
    }

    /// Name, backend, device type, driver of the chosen adapter.
    ///
    /// Used by: `examples/headless.rs`, `examples/resident_step.rs`, `examples/grid_bench.rs`.
    #[must_use]
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// One line for logs: `name (backend, device type)`.
    ///
    /// Used by: `examples/bullets.rs`, `examples/gas.rs`, `python/src/gpu.rs` (`GpuStep.adapter`).
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

    /// The chosen adapter.
    ///
    /// Used by: `examples/step_bench.rs` and `examples/headless.rs` (their own device, in
    /// `examples/common/mod.rs`).
    #[must_use]
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.adapter
    }

    /// The device, for callers that record their own work beside sweepcast's.
    ///
    /// Used by: `examples/stage_outputs.rs`, `examples/resident_step.rs`, `examples/grid_bench.rs`.
    #[must_use]
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The queue.
    ///
    /// Used by: `examples/stage_outputs.rs`, `examples/resident_step.rs`, `examples/grid_bench.rs`.
    #[must_use]
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    pub(crate) fn loss(&self) -> &LossRecord {
        &self.loss
    }
}

/// The adapter's description, or [`Error::UnsupportedAdapter`] if it cannot run compute
/// shaders.
fn compute_capable(adapter: &wgpu::Adapter) -> Result<wgpu::AdapterInfo, Error> {
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
    Ok(info)
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
