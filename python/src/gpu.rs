//! The GPU paths from Python: a `GpuStep`, one device kept between steps.

use pyo3::prelude::*;
use sweepcast::Contacts as RustContacts;
use sweepcast::gpu::{ContactPipeline, GpuContext, SweepPipeline};

use crate::contacts::Contacts;
use crate::step::{Step, find_contacts, sweep};
use crate::{Device, detach};

/// The GPU paths on one device, kept between steps (its buffers grow once and are reused).
/// The adapter is chosen by the environment (``WGPU_BACKEND``, ``WGPU_ADAPTER_NAME``).
#[pyclass(module = "sweepcast", frozen)]
pub struct GpuStep {
    context: GpuContext,
    contacts: ContactPipeline,
    sweeps: SweepPipeline,
}

impl GpuStep {
    pub fn pipeline(&self) -> &ContactPipeline {
        &self.contacts
    }

    pub(crate) fn find(
        &self,
        py: Python<'_>,
        step: &Step,
        walls: &[sweepcast::Wall],
        groups: &[sweepcast::CollisionGroups],
        contacts: &mut RustContacts,
    ) -> PyResult<()> {
        detach(py, || {
            self.contacts.set_groups(groups);
            self.contacts
                .find_into(&step.bodies.spheres, walls, step.options, contacts)
        })
    }

    pub(crate) fn sweep_full(
        &self,
        py: Python<'_>,
        step: &Step,
        pairs: &[[u32; 2]],
    ) -> PyResult<Vec<Option<sweepcast::Impact>>> {
        detach(py, || {
            self.sweeps.sweep(&step.bodies.spheres, pairs, step.options)
        })
    }

    pub(crate) fn times(
        &self,
        py: Python<'_>,
        step: &Step,
        pairs: &[[u32; 2]],
    ) -> PyResult<Vec<sweepcast::TimeOfImpact>> {
        detach(py, || {
            self.sweeps
                .times_of_impact(&step.bodies.spheres, pairs, step.options)
        })
    }
}

#[pymethods]
impl GpuStep {
    /// Raises DeviceError when no adapter can run the shaders.
    #[new]
    fn py_new(py: Python<'_>) -> PyResult<Self> {
        detach(py, || {
            let context = GpuContext::new_blocking()?;
            let contacts = ContactPipeline::new(&context)?;
            let sweeps = SweepPipeline::new(&context)?;
            Ok(Self {
                context,
                contacts,
                sweeps,
            })
        })
    }

    /// The adapter's name and backend.
    #[getter]
    fn adapter(&self) -> String {
        self.context.describe()
    }

    /// ``find_contacts`` on this device.
    #[pyo3(signature = (centers, radii, displacements, *, walls=None, periodic_box=None, separating=false, groups=None, out=None))]
    #[allow(clippy::too_many_arguments)]
    fn find_contacts<'py>(
        slf: &Bound<'py, Self>,
        centers: &Bound<'py, PyAny>,
        radii: &Bound<'py, PyAny>,
        displacements: &Bound<'py, PyAny>,
        walls: Option<&Bound<'py, PyAny>>,
        periodic_box: Option<&Bound<'py, PyAny>>,
        separating: bool,
        groups: Option<&Bound<'py, PyAny>>,
        out: Option<Bound<'py, Contacts>>,
    ) -> PyResult<Bound<'py, Contacts>> {
        find_contacts(
            slf.py(),
            centers,
            radii,
            displacements,
            walls,
            periodic_box,
            separating,
            groups,
            Device::Gpu(slf.clone()),
            out,
        )
    }

    /// ``sweep`` on this device.
    #[pyo3(signature = (centers, radii, displacements, pairs, *, periodic_box=None, separating=false, full=false))]
    #[allow(clippy::too_many_arguments)]
    fn sweep(
        slf: &Bound<'_, Self>,
        centers: &Bound<'_, PyAny>,
        radii: &Bound<'_, PyAny>,
        displacements: &Bound<'_, PyAny>,
        pairs: &Bound<'_, PyAny>,
        periodic_box: Option<&Bound<'_, PyAny>>,
        separating: bool,
        full: bool,
    ) -> PyResult<Py<PyAny>> {
        sweep(
            slf.py(),
            centers,
            radii,
            displacements,
            pairs,
            periodic_box,
            separating,
            full,
            Device::Gpu(slf.clone()),
        )
    }

    fn __repr__(&self) -> String {
        format!("GpuStep({})", self.context.describe())
    }
}
