//! The f32 paths from Python: the whole step (`find_contacts`, `Contacts`), the batch pair
//! query (`sweep`, `Impacts`), the f64 oracle (`reference_sweep`) and the parity judge
//! (`check_times`, `Judgement`), on the CPU and on a `GpuStep`.

use std::sync::Mutex;

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use rayon::prelude::*;
use sweepcast::cpu::{self, ContactFinder};
use sweepcast::gpu::{ContactPipeline, GpuContext, SweepPipeline};
use sweepcast::reference::{self, Body};
use sweepcast::{Contact, Contacts as RustContacts, ImpactStatus, Partner, SweepOptions, parity};

use crate::errors::{input_error, to_py};
use crate::input::{self, Bodies, Floats};
use crate::output::{self, CONTACT, MISS, OVERLAPPING, column, len_of, rows, status_code};
use crate::{Device, detach, detach_any};

/// The contacts of one step (``find_contacts``), in time order (then by pair). Every array
/// is made by NumPy and filled by the step (no copy); passed back as ``out=`` to the next
/// step, they are filled again in place (and grown when too small).
#[pyclass(module = "sweepcast")]
pub struct Contacts {
    columns: Columns,
    /// How many contacts, and bodies, the arrays' first rows hold.
    len: usize,
    bodies: usize,
    /// How many candidate pairs the broad phase gave.
    #[pyo3(get)]
    candidates: usize,
}

/// The arrays, of room for at least the step's contacts and bodies.
struct Columns {
    pairs: Py<PyArray2<i64>>,
    times: Py<PyArray1<f32>>,
    points: Py<PyArray2<f64>>,
    normals: Py<PyArray2<f32>>,
    status: Py<PyArray1<u8>>,
    images: Py<PyArray2<i32>>,
    earliest_time: Py<PyArray1<f32>>,
    earliest_partner: Py<PyArray1<i64>>,
    earliest_wall: Py<PyArray1<i64>>,
}

impl Columns {
    /// Arrays of room for `contacts` contacts and `bodies` bodies, in `d` dimensions.
    fn new(py: Python<'_>, contacts: usize, bodies: usize, d: usize) -> Self {
        Self {
            pairs: PyArray2::zeros(py, [contacts, 2], false).unbind(),
            times: PyArray1::zeros(py, contacts, false).unbind(),
            points: PyArray2::zeros(py, [contacts, d], false).unbind(),
            normals: PyArray2::zeros(py, [contacts, d], false).unbind(),
            status: PyArray1::zeros(py, contacts, false).unbind(),
            images: PyArray2::zeros(py, [contacts, d], false).unbind(),
            earliest_time: PyArray1::zeros(py, bodies, false).unbind(),
            earliest_partner: PyArray1::zeros(py, bodies, false).unbind(),
            earliest_wall: PyArray1::zeros(py, bodies, false).unbind(),
        }
    }

    /// Room for contacts, for bodies, and the dimension.
    fn room(&self, py: Python<'_>) -> (usize, usize, usize) {
        let points = self.points.bind(py).shape();
        (points[0], len_of(py, &self.earliest_time), points[1])
    }
}

/// The first `len` rows of `array`: itself where it has no more, else a view of them.
fn head<'py, T: numpy::Element, D: numpy::ndarray::Dimension>(
    py: Python<'py>,
    array: &Py<numpy::PyArray<T, D>>,
    len: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let array = array.bind(py).clone().into_any();
    if array.len()? == len {
        Ok(array)
    } else {
        array.get_item(pyo3::types::PySlice::new(py, 0, len as isize, 1))
    }
}

#[pymethods]
impl Contacts {
    /// (K, 2) int64: the two bodies of each contact, the lower index first.
    #[getter]
    fn pairs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        head(py, &self.columns.pairs, self.len)
    }

    /// (K,) float32: the fraction of the step at which they first touch (0 for an overlap).
    #[getter]
    fn times<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        head(py, &self.columns.times, self.len)
    }

    /// (K, D) float64: the first body's surface point facing the second, in the caller's
    /// coordinates.
    #[getter]
    fn points<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        head(py, &self.columns.points, self.len)
    }

    /// (K, D) float32: the unit normal from the first body's centre towards the second's.
    #[getter]
    fn normals<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        head(py, &self.columns.normals, self.len)
    }

    /// (K,) uint8: CONTACT or OVERLAPPING.
    #[getter]
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        head(py, &self.columns.status, self.len)
    }

    /// (K, D) int32: the periodic image of the second body met, in periods per axis (zeros
    /// without a periodic box).
    #[getter]
    fn images<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        head(py, &self.columns.images, self.len)
    }

    /// (N,) float32: each body's earliest contact time, with a body or a wall; inf for none.
    #[getter]
    fn earliest_time<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        head(py, &self.columns.earliest_time, self.bodies)
    }

    /// (N,) int64: the body met at ``earliest_time``; -1 for none or a wall.
    #[getter]
    fn earliest_partner<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        head(py, &self.columns.earliest_partner, self.bodies)
    }

    /// (N,) int64: the wall met at ``earliest_time``; -1 for none or a body.
    #[getter]
    fn earliest_wall<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        head(py, &self.columns.earliest_wall, self.bodies)
    }

    fn __len__(&self) -> usize {
        self.len
    }

    fn __repr__(&self) -> String {
        format!("Contacts(len={}, candidates={})", self.len, self.candidates)
    }
}

impl Contacts {
    /// The arrays of `contacts` for `bodies`, made to measure.
    fn new(py: Python<'_>, contacts: &RustContacts, bodies: &Bodies) -> PyResult<Self> {
        let (k, n, d) = (
            contacts.contacts().len(),
            bodies.spheres.len(),
            bodies.dimension,
        );
        let mut this = Self {
            columns: Columns::new(py, k, n, d),
            len: 0,
            bodies: 0,
            candidates: 0,
        };
        this.fill(py, contacts, bodies)?;
        Ok(this)
    }

    /// Fills the arrays with `contacts` for `bodies` (grown by a quarter beyond what they
    /// need where they are too small): filled in parallel with the GIL released.
    fn fill(&mut self, py: Python<'_>, contacts: &RustContacts, bodies: &Bodies) -> PyResult<()> {
        let (k, n, d) = (
            contacts.contacts().len(),
            bodies.spheres.len(),
            bodies.dimension,
        );
        let (room_k, room_n, room_d) = self.columns.room(py);
        if room_k < k || room_n < n || room_d != d {
            let grown = |need: usize, room: usize| if room < need { need + need / 4 } else { room };
            self.columns = Columns::new(py, grown(k, room_k), grown(n, room_n), d);
        }
        let c = &self.columns;
        let (pairs, times, points, normals, status, images) = (
            c.pairs.bind(py),
            c.times.bind(py),
            c.points.bind(py),
            c.normals.bind(py),
            c.status.bind(py),
            c.images.bind(py),
        );
        let (earliest_time, earliest_partner, earliest_wall) = (
            c.earliest_time.bind(py),
            c.earliest_partner.bind(py),
            c.earliest_wall.bind(py),
        );
        // SAFETY: the arrays are this object's own, contiguous (made so), and no Rust
        // reference to them outlives this block. Python code could touch them only while
        // the GIL is released below, through a view of an earlier result that it kept: the
        // documented contract of `out=` is that those views are overwritten.
        unsafe {
            let columns = ContactColumns {
                pairs: &mut pairs.as_slice_mut()?[..2 * k],
                times: &mut times.as_slice_mut()?[..k],
                points: &mut points.as_slice_mut()?[..d * k],
                normals: &mut normals.as_slice_mut()?[..d * k],
                status: &mut status.as_slice_mut()?[..k],
                images: &mut images.as_slice_mut()?[..d * k],
            };
            let earliest = EarliestColumns {
                time: &mut earliest_time.as_slice_mut()?[..n],
                partner: &mut earliest_partner.as_slice_mut()?[..n],
                wall: &mut earliest_wall.as_slice_mut()?[..n],
            };
            detach_any(py, || {
                rayon::join(
                    || columns.fill(contacts.contacts(), bodies.origin, d),
                    || earliest.fill(contacts),
                )
            })?;
        }
        self.len = k;
        self.bodies = n;
        self.candidates = contacts.candidates();
        Ok(())
    }
}

/// The per-contact arrays, as slices to fill.
struct ContactColumns<'a> {
    pairs: &'a mut [i64],
    times: &'a mut [f32],
    points: &'a mut [f64],
    normals: &'a mut [f32],
    status: &'a mut [u8],
    images: &'a mut [i32],
}

impl ContactColumns<'_> {
    /// Row `i` of every array from contact `i`, in blocks on all cores.
    fn fill(self, contacts: &[Contact], origin: [f64; 3], d: usize) {
        const BLOCK: usize = 4096;
        (
            contacts.par_chunks(BLOCK),
            self.pairs.par_chunks_mut(2 * BLOCK),
            self.times.par_chunks_mut(BLOCK),
            self.points.par_chunks_mut(d * BLOCK),
            self.normals.par_chunks_mut(d * BLOCK),
            self.status.par_chunks_mut(BLOCK),
            self.images.par_chunks_mut(d * BLOCK),
        )
            .into_par_iter()
            .for_each(
                |(contacts, pairs, times, points, normals, status, images)| {
                    for (i, contact) in contacts.iter().enumerate() {
                        let pair = contact.pair().unwrap_or([contact.body, u32::MAX]);
                        pairs[2 * i] = i64::from(pair[0]);
                        pairs[2 * i + 1] = i64::from(pair[1]);
                        times[i] = contact.impact.time_of_impact;
                        status[i] = status_code(contact.impact.status);
                        let (point, normal, image) = (
                            contact.impact.point.to_array(),
                            contact.impact.normal.to_array(),
                            contact.image(),
                        );
                        for axis in 0..d {
                            points[d * i + axis] = f64::from(point[axis]) + origin[axis];
                            normals[d * i + axis] = normal[axis];
                            images[d * i + axis] = image[axis];
                        }
                    }
                },
            );
    }
}

/// The per-body arrays of each body's earliest contact, as slices to fill.
struct EarliestColumns<'a> {
    time: &'a mut [f32],
    partner: &'a mut [i64],
    wall: &'a mut [i64],
}

impl EarliestColumns<'_> {
    /// What `Contacts::earliest_impacts` says, in one pass over the contacts: they are in
    /// time order and, among equal times, by pair, so each body's first is its earliest with
    /// the lowest partner; then its earliest wall where that is strictly earlier.
    fn fill(self, contacts: &RustContacts) {
        self.time.fill(f32::INFINITY);
        self.partner.fill(-1);
        self.wall.fill(-1);
        for contact in contacts.contacts() {
            let Some([a, b]) = contact.pair() else {
                continue;
            };
            for (body, other) in [(a, b), (b, a)] {
                let body = body as usize;
                if self.partner[body] < 0 {
                    self.time[body] = contact.impact.time_of_impact;
                    self.partner[body] = i64::from(other);
                }
            }
        }
        for (body, wall) in contacts.earliest_walls().iter().enumerate() {
            if let Some(Contact {
                partner: Partner::Wall { index },
                impact,
                ..
            }) = wall
                && impact.time_of_impact < self.time[body]
            {
                self.time[body] = impact.time_of_impact;
                self.partner[body] = -1;
                self.wall[body] = i64::from(*index);
            }
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
    let walls = input::walls(walls, step.bodies.origin)?;
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
            out.borrow_mut().fill(py, contacts, &step.bodies)?;
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
        contacts: &mut RustContacts,
    ) -> PyResult<()> {
        detach(py, || {
            self.contacts.set_groups(groups);
            self.contacts
                .find_into(&step.bodies.spheres, walls, step.options, contacts)
        })
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
