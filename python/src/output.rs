//! What the binding hands to NumPy: vectors moved into arrays without a copy (NumPy
//! keeps the Rust allocation alive), columns of (N, D) rows, and the status codes.

use numpy::ndarray::Array2;
use numpy::{Element, PyArray1, PyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use sweepcast::ImpactStatus;

/// A status code: 0 a miss, 1 a contact, 2 an overlap at t = 0.
pub const MISS: u8 = 0;
pub const CONTACT: u8 = 1;
pub const OVERLAPPING: u8 = 2;

pub fn status_code(status: ImpactStatus) -> u8 {
    match status {
        ImpactStatus::Overlapping => OVERLAPPING,
        _ => CONTACT,
    }
}

/// A (len,) array owning `values`.
pub fn column<T: Element>(py: Python<'_>, values: Vec<T>) -> Py<PyArray1<T>> {
    PyArray1::from_vec(py, values).unbind()
}

/// A (len / width, width) array owning `values` (row after row).
pub fn rows<T: Element>(py: Python<'_>, values: Vec<T>, width: usize) -> Py<PyArray2<T>> {
    let count = values.len() / width;
    let array = Array2::from_shape_vec((count, width), values).expect("whole rows");
    PyArray2::from_owned_array(py, array).unbind()
}

/// Appends the first `dimension` components of `vector`.
pub fn push<T: Copy>(out: &mut Vec<T>, vector: [T; 3], dimension: usize) {
    out.extend_from_slice(&vector[..dimension]);
}

/// A (N, D) float64 array of `vectors`' first `dimension` components.
pub fn vectors(
    py: Python<'_>,
    vectors: impl Iterator<Item = [f64; 3]>,
    dimension: usize,
) -> Py<PyArray2<f64>> {
    let mut values = Vec::new();
    for vector in vectors {
        push(&mut values, vector, dimension);
    }
    rows(py, values, dimension)
}

/// The length of the first axis of an array held by an output object.
pub fn len_of<T: Element, D: numpy::ndarray::Dimension>(
    py: Python<'_>,
    array: &Py<numpy::PyArray<T, D>>,
) -> usize {
    array.bind(py).shape()[0]
}
