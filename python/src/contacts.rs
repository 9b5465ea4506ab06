//! The contacts of one step from Python (`Contacts`): NumPy arrays the step fills, and
//! filled again in place by the next.

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use rayon::prelude::*;
use sweepcast::{Contact, Contacts as RustContacts, Partner};

use crate::detach_any;
use crate::input::Bodies;
use crate::output::{len_of, status_code};

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
    pub(crate) fn new(py: Python<'_>, contacts: usize, bodies: usize, d: usize) -> Self {
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
    pub(crate) fn new(py: Python<'_>, contacts: &RustContacts, bodies: &Bodies) -> PyResult<Self> {
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
    pub(crate) fn fill(
        &mut self,
        py: Python<'_>,
        contacts: &RustContacts,
        bodies: &Bodies,
    ) -> PyResult<()> {
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
    pub(crate) fn fill(self, contacts: &[Contact], origin: [f64; 3], d: usize) {
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
    pub(crate) fn fill(self, contacts: &RustContacts) {
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
