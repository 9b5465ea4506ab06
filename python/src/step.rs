//! The f32 paths from Python: the whole step (`find_contacts`, `Contacts`), the batch pair
//! query (`sweep`, `Impacts`), the f64 oracle (`reference_sweep`) and the parity judge
//! (`check_times`, `Judgement`), on the CPU and on a `GpuStep`.

use std::sync::Mutex;

use numpy::{PyArray1, PyArray2};
use pyo3::prelude::*;
use sweepcast::cpu::{self, ContactFinder};
use sweepcast::gpu::{ContactPipeline, GpuContext, SweepPipeline};
use sweepcast::reference::{self, Body};
use sweepcast::{Contacts as RustContacts, ImpactStatus, Partner, SweepOptions, parity};

use crate::errors::{input_error, to_py};
use crate::input::{self, Bodies, Floats};
use crate::output::{self, CONTACT, MISS, OVERLAPPING, column, len_of, rows, status_code};
use crate::{Device, detach, detach_any};

/// The contacts of one step (``find_contacts``), in time order (then by pair). Every
/// array owns its memory (no copy was made to give it).
#[pyclass(module = "sweepcast", frozen)]
pub struct Contacts {
    /// (K, 2) int64: the two bodies of each contact, the lower index first.
    #[pyo3(get)]
    pairs: Py<PyArray2<i64>>,
    /// (K,) float32: the fraction of the step at which they first touch (0 for an overlap).
    #[pyo3(get)]
    times: Py<PyArray1<f32>>,
    /// (K, D) float64: the first body's surface point facing the second, in the caller's
    /// coordinates.
    #[pyo3(get)]
    points: Py<PyArray2<f64>>,
    /// (K, D) float32: the unit normal from the first body's centre towards the second's.
    #[pyo3(get)]
    normals: Py<PyArray2<f32>>,
    /// (K,) uint8: CONTACT or OVERLAPPING.
    #[pyo3(get)]
    status: Py<PyArray1<u8>>,
    /// (K, D) int32: the periodic image of the second body met, in periods per axis (zeros
    /// without a periodic box).
    #[pyo3(get)]
    images: Py<PyArray2<i32>>,
    /// (N,) float32: each body's earliest contact time, with a body or a wall; inf for none.
    #[pyo3(get)]
    earliest_time: Py<PyArray1<f32>>,
    /// (N,) int64: the body met at ``earliest_time``; -1 for none or a wall.
    #[pyo3(get)]
    earliest_partner: Py<PyArray1<i64>>,
    /// (N,) int64: the wall met at ``earliest_time``; -1 for none or a body.
    #[pyo3(get)]
    earliest_wall: Py<PyArray1<i64>>,
    /// How many candidate pairs the broad phase gave.
    #[pyo3(get)]
    candidates: usize,
}

#[pymethods]
impl Contacts {
    fn __len__(&self, py: Python<'_>) -> usize {
        len_of(py, &self.times)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Contacts(len={}, candidates={})",
            self.__len__(py),
            self.candidates
        )
    }
}

impl Contacts {
    /// The arrays of `contacts` for `bodies`.
    fn new(py: Python<'_>, contacts: &RustContacts, bodies: &Bodies) -> Self {
        let d = bodies.dimension;
        let list = contacts.contacts();
        let mut pairs = Vec::with_capacity(2 * list.len());
        let mut times = Vec::with_capacity(list.len());
        let mut points = Vec::with_capacity(d * list.len());
        let mut normals = Vec::with_capacity(d * list.len());
        let mut status = Vec::with_capacity(list.len());
        let mut images = Vec::with_capacity(d * list.len());
        for contact in list {
            let pair = contact.pair().unwrap_or([contact.body, u32::MAX]);
            pairs.extend([i64::from(pair[0]), i64::from(pair[1])]);
            times.push(contact.impact.time_of_impact);
            let point = contact.impact.point.to_array();
            output::push(
                &mut points,
                std::array::from_fn(|axis| f64::from(point[axis]) + bodies.origin[axis]),
                d,
            );
            output::push(&mut normals, contact.impact.normal.to_array(), d);
            status.push(status_code(contact.impact.status));
            output::push(&mut images, contact.image(), d);
        }
        let count = bodies.spheres.len();
        let mut earliest_time = vec![f32::INFINITY; count];
        let mut earliest_partner = vec![-1; count];
        let mut earliest_wall = vec![-1; count];
        for (body, earliest) in contacts.earliest_impacts().into_iter().enumerate() {
            let Some(earliest) = earliest.filter(|_| body < count) else {
                continue;
            };
            earliest_time[body] = earliest.time_of_impact;
            match earliest.partner {
                Partner::Body { index, .. } => earliest_partner[body] = i64::from(index),
                Partner::Wall { index } => earliest_wall[body] = i64::from(index),
            }
        }
        Self {
            pairs: rows(py, pairs, 2),
            times: column(py, times),
            points: rows(py, points, d),
            normals: rows(py, normals, d),
            status: column(py, status),
            images: rows(py, images, d),
            earliest_time: column(py, earliest_time),
            earliest_partner: column(py, earliest_partner),
            earliest_wall: column(py, earliest_wall),
            candidates: contacts.candidates(),
        }
    }
}

/// The full answer of ``sweep(..., full=True)`` (float32) or ``reference_sweep`` (float64),
/// one row a pair.
#[pyclass(module = "sweepcast", frozen)]
pub struct Impacts {
    /// (K,): the time of first contact; inf for a miss, 0 for an overlap.
    #[pyo3(get)]
    times: Py<PyAny>,
    /// (K,) uint8: MISS, CONTACT or OVERLAPPING.
    #[pyo3(get)]
    status: Py<PyArray1<u8>>,
    /// (K, D) float64: the first body's surface point facing the second (NaN for a miss).
    #[pyo3(get)]
    points: Py<PyArray2<f64>>,
    /// (K, D): the unit normal from the first body towards the second (NaN for a miss).
    #[pyo3(get)]
    normals: Py<PyAny>,
}

#[pymethods]
impl Impacts {
    fn __len__(&self, py: Python<'_>) -> usize {
        len_of(py, &self.status)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("Impacts(len={})", self.__len__(py))
    }
}

/// One pair's answer in a common form: time, status, point (relative to the origin) and
/// normal, in the precision `T` of the path.
struct Row<T> {
    time: T,
    status: u8,
    point: [f64; 3],
    normal: [T; 3],
}

impl Impacts {
    fn new<T>(
        py: Python<'_>,
        answers: impl ExactSizeIterator<Item = Option<Row<T>>>,
        bodies: &Bodies,
    ) -> Self
    where
        T: numpy::Element + Copy + From<f32> + num_nan::Nan,
    {
        let d = bodies.dimension;
        let count = answers.len();
        let mut times = Vec::with_capacity(count);
        let mut status = Vec::with_capacity(count);
        let mut points = Vec::with_capacity(d * count);
        let mut normals = Vec::with_capacity(d * count);
        for answer in answers {
            match answer {
                Some(row) => {
                    times.push(row.time);
                    status.push(row.status);
                    output::push(
                        &mut points,
                        std::array::from_fn(|axis| row.point[axis] + bodies.origin[axis]),
                        d,
                    );
                    output::push(&mut normals, row.normal, d);
                }
                None => {
                    times.push(T::from(f32::INFINITY));
                    status.push(MISS);
                    output::push(&mut points, [f64::NAN; 3], d);
                    output::push(&mut normals, [T::nan(); 3], d);
                }
            }
        }
        Self {
            times: column(py, times).into_any(),
            status: column(py, status),
            points: rows(py, points, d),
            normals: rows(py, normals, d).into_any(),
        }
    }
}

/// NaN in either precision.
mod num_nan {
    pub trait Nan {
        fn nan() -> Self;
    }
    impl Nan for f32 {
        fn nan() -> Self {
            f32::NAN
        }
    }
    impl Nan for f64 {
        fn nan() -> Self {
            f64::NAN
        }
    }
}

/// The parity judge's verdict on answers for explicit pairs (``check_times``).
#[pyclass(module = "sweepcast", frozen)]
pub struct Judgement {
    /// (K,) float64: |f(t)| / S**2 in units of EPSILON at a reported contact; 0 otherwise.
    #[pyo3(get)]
    backward_error: Py<PyArray1<f64>>,
    /// (K,) bool: the answer fails the bound.
    #[pyo3(get)]
    failed: Py<PyArray1<bool>>,
    /// (K,): why each answer fails, or None.
    #[pyo3(get)]
    reasons: Vec<Option<&'static str>>,
    /// No answer failed.
    #[pyo3(get)]
    passed: bool,
    /// The largest backward error, in units of EPSILON.
    #[pyo3(get)]
    max_backward_error: f64,
}

#[pymethods]
impl Judgement {
    fn __repr__(&self) -> String {
        format!(
            "Judgement(passed={}, max_backward_error={:.3e})",
            if self.passed { "True" } else { "False" },
            self.max_backward_error
        )
    }
}

/// The CPU step kept between calls, so that a caller's steps reuse its memory as a Rust
/// caller's do; a call that finds it busy (another thread's) makes its own.
static FINDER: Mutex<Option<ContactFinder>> = Mutex::new(None);

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
        let periodic = periodic_box.is_some_and(|value| !value.is_none());
        let bodies = Bodies::read(centers, radii, displacements, periodic)?;
        let periodic_box = input::periodic_box(periodic_box, bodies.dimension)?;
        Ok(Self {
            bodies,
            options: input::options(periodic_box, separating),
        })
    }
}

/// The whole step on the CPU.
fn find_on_cpu(
    py: Python<'_>,
    step: &Step,
    walls: &[sweepcast::Wall],
    groups: &[sweepcast::CollisionGroups],
) -> PyResult<RustContacts> {
    let mut contacts = RustContacts::default();
    detach(py, || {
        let mut shared = FINDER.try_lock().ok();
        let mut own = None;
        let finder = match shared.as_deref_mut() {
            Some(slot) => slot.get_or_insert_with(ContactFinder::new),
            None => own.insert(ContactFinder::new()),
        };
        finder.set_groups(groups);
        finder.find_into(&step.bodies.spheres, walls, step.options, &mut contacts)
    })?;
    Ok(contacts)
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
/// ``GpuStep`` to run on the GPU. Returns ``Contacts``.
#[pyfunction]
#[pyo3(
    signature = (centers, radii, displacements, *, walls=None, periodic_box=None, separating=false, groups=None, device=Device::Cpu),
    text_signature = "(centers, radii, displacements, *, walls=None, periodic_box=None, separating=False, groups=None, device='cpu')"
)]
#[allow(clippy::too_many_arguments)]
pub fn find_contacts(
    py: Python<'_>,
    centers: &Bound<'_, PyAny>,
    radii: &Bound<'_, PyAny>,
    displacements: &Bound<'_, PyAny>,
    walls: Option<&Bound<'_, PyAny>>,
    periodic_box: Option<&Bound<'_, PyAny>>,
    separating: bool,
    groups: Option<&Bound<'_, PyAny>>,
    device: Device<'_>,
) -> PyResult<Contacts> {
    let step = Step::read(centers, radii, displacements, periodic_box, separating)?;
    let walls = input::walls(walls, step.bodies.origin)?;
    let groups = input::groups(groups, step.bodies.spheres.len())?;
    let contacts = match Device::gpu(device)? {
        None => find_on_cpu(py, &step, &walls, &groups)?,
        Some(gpu) => gpu.get().find(py, &step, &walls, &groups)?,
    };
    Ok(Contacts::new(py, &contacts, &step.bodies))
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

/// The checks the f32 paths make of the bodies, for the oracle and the judge (which trust
/// their input).
fn validate(step: &Step) -> PyResult<()> {
    sweepcast::low_level::validate_bodies(&step.bodies.spheres).map_err(to_py)?;
    if let Some(periodic_box) = &step.options.periodic_box {
        sweepcast::low_level::validate_periodic_reach(&step.bodies.spheres, periodic_box)
            .map_err(to_py)?;
    }
    Ok(())
}

/// The bodies as the oracle and the judge take them: the f32 spheres, exactly in f64.
fn oracle_body(step: &Step, index: u32) -> Body {
    Body::from(step.bodies.spheres[index as usize])
}

/// The f64 oracle on the pairs ``pairs``, for the bodies as the f32 paths take them
/// (rounded to f32 about the same local origin): an ``Impacts`` with float64 times and
/// normals.
#[pyfunction]
#[pyo3(signature = (centers, radii, displacements, pairs, *, periodic_box=None, separating=false))]
pub fn reference_sweep(
    py: Python<'_>,
    centers: &Bound<'_, PyAny>,
    radii: &Bound<'_, PyAny>,
    displacements: &Bound<'_, PyAny>,
    pairs: &Bound<'_, PyAny>,
    periodic_box: Option<&Bound<'_, PyAny>>,
    separating: bool,
) -> PyResult<Impacts> {
    let step = Step::read(centers, radii, displacements, periodic_box, separating)?;
    let pairs = input::pairs(pairs, step.bodies.spheres.len())?;
    // Validated as the f32 paths validate them: the oracle trusts its input.
    validate(&step)?;
    let impacts = detach(py, || {
        Ok(pairs
            .iter()
            .map(|&[i, j]| {
                reference::sweep_sphere_sphere(
                    &oracle_body(&step, i),
                    &oracle_body(&step, j),
                    step.options,
                )
            })
            .collect::<Vec<_>>())
    })?;
    let rows = impacts.iter().map(|impact| {
        impact.map(|impact| Row {
            time: impact.time_of_impact,
            status: status_code(impact.status),
            point: impact.point.to_array(),
            normal: impact.normal.to_array(),
        })
    });
    Ok(Impacts::new::<f64>(py, rows, &step.bodies))
}

/// The parity judge: whether each pair's answer (``times`` and ``status``, as ``Impacts``
/// or ``Contacts`` give them; a miss's time is ignored) is exactly right for inputs within
/// ``bound`` (in units of EPSILON; default CPU_BOUND) of the bodies as the f32 paths take
/// them. Returns a ``Judgement``.
#[pyfunction]
#[pyo3(signature = (centers, radii, displacements, pairs, times, status, *, periodic_box=None, separating=false, bound=parity::CPU_BOUND))]
#[allow(clippy::too_many_arguments)]
pub fn check_times(
    py: Python<'_>,
    centers: &Bound<'_, PyAny>,
    radii: &Bound<'_, PyAny>,
    displacements: &Bound<'_, PyAny>,
    pairs: &Bound<'_, PyAny>,
    times: &Bound<'_, PyAny>,
    status: &Bound<'_, PyAny>,
    periodic_box: Option<&Bound<'_, PyAny>>,
    separating: bool,
    bound: f64,
) -> PyResult<Judgement> {
    let step = Step::read(centers, radii, displacements, periodic_box, separating)?;
    let pairs = input::pairs(pairs, step.bodies.spheres.len())?;
    let times = Floats::extract(times, "times")?;
    input::check_shape(&times, "times", pairs.len(), 0)?;
    let times = times.values();
    if !(bound.is_finite() && bound >= 0.0) {
        return Err(input_error(format!(
            "bound: {bound}; give a bound of 0 or more in units of EPSILON (CPU_BOUND, GPU_BOUND)"
        )));
    }
    let (_, codes) = input::integers(status, "status")?;
    if codes.len() != pairs.len() {
        return Err(input_error(format!(
            "status: {} values for {} pairs",
            codes.len(),
            pairs.len()
        )));
    }
    let answers = codes
        .iter()
        .zip(times.iter())
        .enumerate()
        .map(
            |(pair, (&code, &time))| match u8::try_from(code).unwrap_or(u8::MAX) {
                MISS => Ok(None),
                CONTACT => Ok(Some((time as f32, ImpactStatus::Contact))),
                OVERLAPPING => Ok(Some((time as f32, ImpactStatus::Overlapping))),
                _ => Err(input_error(format!(
                    "pair {pair}: status {code} is not MISS (0), CONTACT (1) or OVERLAPPING (2)"
                ))),
            },
        )
        .collect::<PyResult<Vec<_>>>()?;
    validate(&step)?;
    let verdicts = detach_any(py, || {
        pairs
            .iter()
            .zip(answers)
            .map(|(&[i, j], answer)| {
                parity::check_time(
                    &oracle_body(&step, i),
                    &oracle_body(&step, j),
                    step.options,
                    answer,
                    bound,
                )
            })
            .collect::<Vec<_>>()
    })?;
    let backward_error: Vec<f64> = verdicts.iter().map(|v| v.0).collect();
    let reasons: Vec<Option<&'static str>> = verdicts.iter().map(|v| v.1).collect();
    Ok(Judgement {
        max_backward_error: backward_error.iter().copied().fold(0.0, f64::max),
        passed: reasons.iter().all(Option::is_none),
        failed: column(py, reasons.iter().map(Option::is_some).collect()),
        backward_error: column(py, backward_error),
        reasons,
    })
}

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

    fn find(
        &self,
        py: Python<'_>,
        step: &Step,
        walls: &[sweepcast::Wall],
        groups: &[sweepcast::CollisionGroups],
    ) -> PyResult<RustContacts> {
        let mut contacts = RustContacts::default();
        detach(py, || {
            self.contacts.set_groups(groups);
            self.contacts
                .find_into(&step.bodies.spheres, walls, step.options, &mut contacts)
        })?;
        Ok(contacts)
    }

    fn sweep_full(
        &self,
        py: Python<'_>,
        step: &Step,
        pairs: &[[u32; 2]],
    ) -> PyResult<Vec<Option<sweepcast::Impact>>> {
        detach(py, || {
            self.sweeps.sweep(&step.bodies.spheres, pairs, step.options)
        })
    }

    fn times(
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
    #[pyo3(signature = (centers, radii, displacements, *, walls=None, periodic_box=None, separating=false, groups=None))]
    #[allow(clippy::too_many_arguments)]
    fn find_contacts(
        slf: &Bound<'_, Self>,
        centers: &Bound<'_, PyAny>,
        radii: &Bound<'_, PyAny>,
        displacements: &Bound<'_, PyAny>,
        walls: Option<&Bound<'_, PyAny>>,
        periodic_box: Option<&Bound<'_, PyAny>>,
        separating: bool,
        groups: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Contacts> {
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
