//! The full answer of the batch pair query and of the f64 oracle (`Impacts`), one row a
//! pair.

use numpy::{PyArray1, PyArray2};
use pyo3::prelude::*;

use crate::input::Bodies;
use crate::output::{self, MISS, column, len_of, rows};

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
pub(crate) struct Row<T> {
    pub(crate) time: T,
    pub(crate) status: u8,
    pub(crate) point: [f64; 3],
    pub(crate) normal: [T; 3],
}

impl Impacts {
    pub(crate) fn new<T>(
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
