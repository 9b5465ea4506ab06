//! The f32 paths from Python: the whole step (`find_contacts`) and the batch pair query
//! (`sweep`), on the CPU and on a `GpuStep`; their answers are `Contacts` (contacts.rs) and
//! `Impacts` (impacts.rs), the oracle and the judge judge.rs's.

use std::sync::Mutex;

use pyo3::prelude::*;
use sweepcast::cpu::{self, ContactFinder};
use sweepcast::{Contacts as RustContacts, SweepOptions};

use crate::contacts::Contacts;
use crate::impacts::{Impacts, Row};
use crate::input::{self, Bodies};
use crate::output::{column, status_code};
use crate::{Device, detach};

/// The CPU step and its bodies' and contacts' memory, kept between calls so that a caller's
/// steps reuse them as a Rust caller's do; a call that finds them busy (another thread's)
/// makes its own.
static SCRATCH: Mutex<Option<Scratch>> = Mutex::new(None);

#[derive(Default)]
struct Scratch {
    finder: ContactFinder,
    spheres: Vec<sweepcast::MovingSphere>,
    contacts: RustContacts,
}

/// The arguments every f32 path takes, read.
pub struct Step {
    pub bodies: Bodies,
    pub options: SweepOptions,
}

impl Step {
    pub fn read(
        centers: &Bound<'_, PyAny>,
        radii: &Bound<'_, PyAny>,
        displacements: &Bound<'_, PyAny>,
        periodic_box: Option<&Bound<'_, PyAny>>,
        separating: bool,
    ) -> PyResult<Self> {
        Self::read_into(
            centers,
            radii,
            displacements,
            periodic_box,
            separating,
            Vec::new(),
        )
    }

    /// [`read`](Self::read) into `spheres`' memory.
    pub fn read_into(
        centers: &Bound<'_, PyAny>,
        radii: &Bound<'_, PyAny>,
        displacements: &Bound<'_, PyAny>,
        periodic_box: Option<&Bound<'_, PyAny>>,
        separating: bool,
        spheres: Vec<sweepcast::MovingSphere>,
    ) -> PyResult<Self> {
        let periodic = periodic_box.is_some_and(|value| !value.is_none());
        let bodies = Bodies::read(centers, radii, displacements, periodic, spheres)?;
        let periodic_box = input::periodic_box(periodic_box, bodies.dimension)?;
        Ok(Self {
            bodies,
            options: input::options(periodic_box, separating),
        })
    }
}

/// The whole step: every pair of bodies that touches during it, and each body's earliest
/// contact with a body or a wall.
///
/// ``centers`` (N, 3) or (N, 2), ``radii`` (N,), ``displacements`` (N, D), any float dtype.
/// ``walls``: a sequence of ``Wall``. ``periodic_box``: a side (a cube or square) or one
/// period per axis (``inf`` where the axis does not wrap); centres are taken as they are
/// (wrap them into [0, period)). ``separating``: a pair touching or overlapping at t = 0
/// while moving apart is not a contact (what a simulation that resolves its collisions
/// wants). ``groups``: (N,) uint32 from ``collision_groups``. ``device``: "cpu", or a
/// ``GpuStep`` to run on the GPU. ``out``: a ``Contacts`` of an earlier step whose arrays
/// are filled again (no new memory once they are large enough; views taken of them change).
/// Returns ``Contacts`` (``out`` itself where given).
#[pyfunction]
#[pyo3(
    signature = (centers, radii, displacements, *, walls=None, periodic_box=None, separating=false, groups=None, device=Device::Cpu, out=None),
    text_signature = "(centers, radii, displacements, *, walls=None, periodic_box=None, separating=False, groups=None, device='cpu', out=None)"
)]
#[allow(clippy::too_many_arguments)]
pub fn find_contacts<'py>(
    py: Python<'py>,
    centers: &Bound<'py, PyAny>,
    radii: &Bound<'py, PyAny>,
    displacements: &Bound<'py, PyAny>,
    walls: Option<&Bound<'py, PyAny>>,
    periodic_box: Option<&Bound<'py, PyAny>>,
    separating: bool,
    groups: Option<&Bound<'py, PyAny>>,
    device: Device<'py>,
    out: Option<Bound<'py, Contacts>>,
) -> PyResult<Bound<'py, Contacts>> {
    let mut shared = SCRATCH.try_lock().ok();
    let mut own = None;
    let scratch = match shared.as_deref_mut() {
        Some(slot) => slot.get_or_insert_with(Scratch::default),
        None => own.insert(Scratch::default()),
    };
    let spheres = std::mem::take(&mut scratch.spheres);
    let step = Step::read_into(
        centers,
        radii,
        displacements,
        periodic_box,
        separating,
        spheres,
    )?;
    let walls = input::walls(walls, step.bodies.origin, step.bodies.dimension)?;
    let groups = input::groups(groups, step.bodies.spheres.len())?;
    let Scratch {
        finder, contacts, ..
    } = scratch;
    match Device::gpu(device)? {
        None => detach(py, || {
            finder.set_groups(&groups);
            finder.find_into(&step.bodies.spheres, &walls, step.options, contacts)
        })?,
        Some(gpu) => gpu.get().find(py, &step, &walls, &groups, contacts)?,
    }
    let answer = match out {
        Some(out) => {
            // Another thread's call filling the same `out` (the GIL is released while it
            // copies) is a RuntimeError here, not a panic.
            out.try_borrow_mut()?.fill(py, contacts, &step.bodies)?;
            out
        }
        None => Bound::new(py, Contacts::new(py, contacts, &step.bodies)?)?,
    };
    scratch.spheres = step.bodies.spheres;
    Ok(answer)
}

/// The swept test of the pairs ``pairs`` ((K, 2) integers) in f32.
///
/// ``full=False``: (K,) float32 times: the time for a contact, -1.0 for a pair already
/// overlapping at t = 0, inf for a miss. ``full=True``: an ``Impacts``.
#[pyfunction]
#[pyo3(
    signature = (centers, radii, displacements, pairs, *, periodic_box=None, separating=false, full=false, device=Device::Cpu),
    text_signature = "(centers, radii, displacements, pairs, *, periodic_box=None, separating=False, full=False, device='cpu')"
)]
#[allow(clippy::too_many_arguments)]
pub fn sweep(
    py: Python<'_>,
    centers: &Bound<'_, PyAny>,
    radii: &Bound<'_, PyAny>,
    displacements: &Bound<'_, PyAny>,
    pairs: &Bound<'_, PyAny>,
    periodic_box: Option<&Bound<'_, PyAny>>,
    separating: bool,
    full: bool,
    device: Device<'_>,
) -> PyResult<Py<PyAny>> {
    let step = Step::read(centers, radii, displacements, periodic_box, separating)?;
    let pairs = input::pairs(pairs, step.bodies.spheres.len())?;
    let gpu = Device::gpu(device)?;
    if full {
        let impacts = match &gpu {
            None => detach(py, || {
                cpu::sweep_batch(&step.bodies.spheres, &pairs, step.options)
            })?,
            Some(gpu) => gpu.get().sweep_full(py, &step, &pairs)?,
        };
        let rows = impacts.iter().map(|impact| {
            impact.map(|impact| Row {
                time: impact.time_of_impact,
                status: status_code(impact.status),
                point: impact.point.as_dvec3().to_array(),
                normal: impact.normal.to_array(),
            })
        });
        Ok(Impacts::new::<f32>(py, rows, &step.bodies)
            .into_pyobject(py)?
            .into_any()
            .unbind())
    } else {
        let times = match &gpu {
            None => detach(py, || {
                let mut times = Vec::new();
                cpu::times_of_impact_into(&step.bodies.spheres, &pairs, step.options, &mut times)
                    .map(|()| times)
            })?,
            Some(gpu) => gpu.get().times(py, &step, &pairs)?,
        };
        // TimeOfImpact is a transparent f32: the vector becomes the array as it is.
        let times: Vec<f32> = bytemuck::allocation::cast_vec(times);
        Ok(column(py, times).into_any())
    }
}
