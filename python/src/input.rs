//! What the binding reads from Python: arrays of any float dtype and strides as rows of f64,
//! pair and group arrays, periodic boxes, walls and options, each checked for its shape
//! with an `InputError` that names the argument.

use std::borrow::Cow;

use numpy::ndarray::{Ix1, Ix2};
use numpy::{
    AllowTypeChange, PyArrayDescrMethods, PyArrayDyn, PyArrayLikeDyn, PyArrayMethods,
    PyReadonlyArrayDyn, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use sweepcast::glam::DVec3;
use sweepcast::{CollisionGroups, MovingSphere, PeriodicBox, SweepOptions, Wall};

use crate::errors::{input_error, to_py};

/// A float array as given: float64 and float32 are read where they lie; any other dtype is
/// converted to float64 by NumPy once.
pub enum Floats<'py> {
    F64(PyReadonlyArrayDyn<'py, f64>),
    F32(PyReadonlyArrayDyn<'py, f32>),
}

impl<'py> Floats<'py> {
    /// `value` as a float array; `name` is the argument's name for the error.
    pub fn extract(value: &Bound<'py, PyAny>, name: &str) -> PyResult<Self> {
        // A list is made an array first, so that its dtype is checked as an array's: NumPy
        // would parse a list of strings ("1.5") as floats.
        let listed;
        let value = if value.cast::<PyUntypedArray>().is_ok() {
            value
        } else {
            listed = value
                .py()
                .import("numpy")?
                .call_method1("asarray", (value,))
                .map_err(|error| input_error(format!("{name}: not a float array ({error})")))?;
            &listed
        };
        let value = &aligned(value)?;
        if let Ok(array) = value.cast::<PyArrayDyn<f64>>() {
            return Ok(Self::F64(array.readonly()));
        }
        if let Ok(array) = value.cast::<PyArrayDyn<f32>>() {
            return Ok(Self::F32(array.readonly()));
        }
        if let Ok(array) = value.cast::<PyUntypedArray>()
            && !array.dtype().is_equiv_to(&numpy::dtype::<f64>(value.py()))
            && !is_real(array)
        {
            return Err(input_error(format!(
                "{name}: an array of dtype {} is not a real number array",
                array.dtype()
            )));
        }
        let converted: PyArrayLikeDyn<'py, f64, AllowTypeChange> = value
            .extract()
            .map_err(|error| input_error(format!("{name}: not a float array ({error})")))?;
        Ok(Self::F64(converted.readonly()))
    }

    pub fn shape(&self) -> &[usize] {
        match self {
            Self::F64(array) => array.shape(),
            Self::F32(array) => array.shape(),
        }
    }

    /// The rows of a (N, D) array, borrowed where it is C-contiguous float64, else copied
    /// (float32 widened exactly); `MemoryError` where a copy finds no memory.
    pub fn rows<const D: usize>(&self) -> PyResult<Cow<'_, [[f64; D]]>> {
        Ok(match self {
            // `as_slice` takes Fortran order too: only C order is rows as they lie.
            Self::F64(array) if array.is_c_contiguous() => match array.as_slice() {
                Ok(values) => Cow::Borrowed(bytemuck::cast_slice(values)),
                Err(_) => Cow::Owned(gather(array)?),
            },
            Self::F64(array) => Cow::Owned(gather(array)?),
            Self::F32(array) => Cow::Owned(gather(array)?),
        })
    }

    /// The values of a (N,) array, borrowed where contiguous float64, else copied.
    pub fn values(&self) -> PyResult<Cow<'_, [f64]>> {
        Ok(self.rows::<1>()?.map_cow(|rows| bytemuck::cast_slice(rows)))
    }
}

/// `value`, or an aligned copy of it where it is a NumPy array whose data is not aligned for
/// its dtype (`np.frombuffer` at an odd offset, a field of a packed record): the binding reads
/// an array's elements in place, which needs them aligned.
fn aligned<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    match value.cast::<PyUntypedArray>() {
        Ok(array) if !array.is_aligned() => value
            .py()
            .import("numpy")?
            .call_method1("require", (value, value.py().None(), "A")),
        _ => Ok(value.clone()),
    }
}

/// A vector of `len` elements, or `MemoryError` where the allocator refuses it (a broadcast
/// array of 2⁴⁰ elements, say): the process never aborts on a copy.
fn with_room<T>(len: usize, name: &str) -> PyResult<Vec<T>> {
    let mut values = Vec::new();
    values.try_reserve_exact(len).map_err(|_| {
        pyo3::exceptions::PyMemoryError::new_err(format!(
            "{name}: no memory for a copy of {len} elements"
        ))
    })?;
    Ok(values)
}

/// Whether `array`'s dtype is an integer, a float or a bool (what NumPy converts to float64
/// without loss of meaning).
fn is_real(array: &Bound<'_, PyUntypedArray>) -> bool {
    matches!(array.dtype().kind(), b'f' | b'i' | b'u' | b'b')
}

/// The rows of a (N, D) or (N,) array (D = 1) in f64: a C-contiguous array as it lies, any
/// other through a view of fixed dimension (a dynamic one walks element by element).
fn gather<T: numpy::Element + Copy + Into<f64>, const D: usize>(
    array: &PyReadonlyArrayDyn<'_, T>,
) -> PyResult<Vec<[f64; D]>> {
    let mut rows = with_room(array.len() / D, "an array")?;
    if array.is_c_contiguous()
        && let Ok(values) = array.as_slice()
    {
        rows.extend(values.chunks_exact(D).map(|r| row(r.iter().copied())));
        return Ok(rows);
    }
    let view = array.as_array();
    if let Ok(column) = view.view().into_dimensionality::<Ix1>() {
        rows.extend(column.iter().map(|&x| row(std::iter::once(x))));
        return Ok(rows);
    }
    let matrix = view.into_dimensionality::<Ix2>().map_err(|_| {
        input_error(format!(
            "an array of shape {:?}; give 1 or 2 axes",
            array.shape()
        ))
    })?;
    rows.extend(matrix.outer_iter().map(|r| row(r.iter().copied())));
    Ok(rows)
}

/// One row of `D` in f64 from `values`.
fn row<T: Into<f64>, const D: usize>(values: impl Iterator<Item = T>) -> [f64; D] {
    let mut row = [0.0; D];
    for (out, value) in row.iter_mut().zip(values) {
        *out = value.into();
    }
    row
}

/// `Cow::map` for a borrowed-or-owned slice cast.
trait MapCow<'a, T: Clone, U: Clone> {
    fn map_cow(self, cast: impl Fn(&[T]) -> &[U]) -> Cow<'a, [U]>;
}

impl<'a, T: Clone, U: Clone> MapCow<'a, T, U> for Cow<'a, [T]> {
    fn map_cow(self, cast: impl Fn(&[T]) -> &[U]) -> Cow<'a, [U]> {
        match self {
            Cow::Borrowed(values) => Cow::Borrowed(cast(values)),
            Cow::Owned(values) => Cow::Owned(cast(&values).to_vec()),
        }
    }
}

/// The dimension (2 or 3) of a (N, D) array, checked.
pub fn dimension(array: &Floats<'_>, name: &str) -> PyResult<usize> {
    match array.shape() {
        [_, d @ (2 | 3)] => Ok(*d),
        shape => Err(input_error(format!(
            "{name}: shape {shape:?}; give an (N, 3) array of spheres or (N, 2) of circles"
        ))),
    }
}

/// Checks that `array` is (`len`, `d`) (`d` = 0: (`len`,)).
pub fn check_shape(array: &Floats<'_>, name: &str, len: usize, d: usize) -> PyResult<()> {
    let expected: &[usize] = if d == 0 { &[len] } else { &[len, d] };
    if array.shape() == expected {
        Ok(())
    } else {
        Err(input_error(format!(
            "{name}: shape {:?}, expected {expected:?} (one row a body, as the first argument)",
            array.shape()
        )))
    }
}

/// The bodies of a step, read: f32 spheres about the local origin, and the origin.
pub struct Bodies {
    pub spheres: Vec<MovingSphere>,
    pub origin: [f64; 3],
    pub dimension: usize,
}

impl Bodies {
    /// `centers` (N, D), `radii` (N,), `displacements` (N, D) as the f32 paths take them:
    /// about the centre of the centres' bounding box (the origin without a periodic box, whose
    /// wrap needs the centres as they are).
    /// `spheres` is memory to reuse (a caller's last step's).
    pub fn read(
        centers: &Bound<'_, PyAny>,
        radii: &Bound<'_, PyAny>,
        displacements: &Bound<'_, PyAny>,
        periodic: bool,
        mut spheres: Vec<MovingSphere>,
    ) -> PyResult<Self> {
        let centers = Floats::extract(centers, "centers")?;
        let dimension = dimension(&centers, "centers")?;
        let count = centers.shape()[0];
        let radii = Floats::extract(radii, "radii")?;
        check_shape(&radii, "radii", count, 0)?;
        let displacements = Floats::extract(displacements, "displacements")?;
        check_shape(&displacements, "displacements", count, dimension)?;
        let radii = radii.values()?;
        let origin = if dimension == 3 {
            let centers = centers.rows::<3>()?;
            let origin = local_origin(&centers, periodic);
            MovingSphere::from_f64_arrays_into(
                &centers,
                &radii,
                &displacements.rows::<3>()?,
                origin,
                &mut spheres,
            )
            .map_err(to_py)?;
            origin
        } else {
            let centers = centers.rows::<2>()?;
            let origin = local_origin(&centers, periodic);
            MovingSphere::from_f64_arrays_into(
                &centers,
                &radii,
                &displacements.rows::<2>()?,
                origin,
                &mut spheres,
            )
            .map_err(to_py)?;
            [origin[0], origin[1], 0.0]
        };
        Ok(Self {
            spheres,
            origin,
            dimension,
        })
    }
}

/// The local origin of the f32 paths: per axis the middle of the centres' range,
/// `0.5 * (min + max)` (0 in a periodic box, or without bodies, or where a centre is not
/// finite: the step then reports that body).
pub fn local_origin<const D: usize>(centers: &[[f64; D]], periodic: bool) -> [f64; D] {
    let mut origin = [0.0; D];
    if periodic || centers.is_empty() {
        return origin;
    }
    for (axis, value) in origin.iter_mut().enumerate() {
        let (low, high) = centers
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), c| {
                (l.min(c[axis]), h.max(c[axis]))
            });
        let middle = 0.5 * (low + high);
        *value = if middle.is_finite() { middle } else { 0.0 };
    }
    origin
}

/// A periodic box: one side for every axis of `dimension`, or one period an axis (inf where
/// it does not wrap).
pub fn periodic_box(
    value: Option<&Bound<'_, PyAny>>,
    dimension: usize,
) -> PyResult<Option<PeriodicBox>> {
    let Some(value) = value.filter(|value| !value.is_none()) else {
        return Ok(None);
    };
    let mut period = DVec3::INFINITY;
    // A side is a Python or NumPy scalar: an array of one element is an array (NumPy would
    // give it as a float, with a DeprecationWarning), and its shape is checked below.
    let scalar = value
        .cast::<PyUntypedArray>()
        .map_or(true, |array| array.ndim() == 0);
    if scalar && let Ok(side) = value.extract::<f64>() {
        for axis in 0..dimension {
            period[axis] = side;
        }
    } else {
        let periods = Floats::extract(value, "periodic_box")?;
        check_shape(&periods, "periodic_box", dimension, 0)?;
        for (axis, side) in periods.values()?.iter().enumerate() {
            period[axis] = *side;
        }
    }
    PeriodicBox::new_f64(period).map(Some).map_err(to_py)
}

/// The step's options.
pub fn options(periodic_box: Option<PeriodicBox>, separating: bool) -> SweepOptions {
    SweepOptions {
        stop_at_penetration: !separating,
        periodic_box,
    }
}

/// An integer array as NumPy reads `value` (shape and values, widened to i64), its shape
/// first held to `check` (so that a broadcast array of 2⁴⁰ elements is an `InputError`, not a
/// copy). Floats are taken only where they hold integers (an empty array, `[[0.0, 1.0]]`): a
/// cast would truncate 0.5 to 0 without a word.
pub fn integers(
    value: &Bound<'_, PyAny>,
    name: &str,
    check: impl FnOnce(&[usize]) -> PyResult<()>,
) -> PyResult<(Vec<usize>, Vec<i64>)> {
    let not_integers =
        |error: String| input_error(format!("{name}: not an integer array ({error})"));
    let array = value
        .py()
        .import("numpy")?
        .call_method1("asarray", (value,))
        .map_err(|error| not_integers(error.to_string()))?;
    let array = aligned(&array)?
        .cast_into::<PyUntypedArray>()
        .map_err(|error| not_integers(error.to_string()))?;
    let shape = array.shape().to_vec();
    check(&shape)?;
    let mut values = with_room(array.len(), name)?;
    let dtype = array.dtype();
    match dtype.kind() {
        // uint64 past i64's range would wrap to a negative value (still refused, but named
        // wrongly in the error): read as u64 and said so.
        b'u' if dtype.itemsize() == 8 => {
            let integers: PyArrayLikeDyn<'_, u64, AllowTypeChange> = array.extract()?;
            for &x in integers.as_array() {
                values.push(i64::try_from(x).map_err(|_| {
                    input_error(format!("{name}: {x} is beyond any index or group"))
                })?);
            }
        }
        b'i' | b'u' | b'b' => {
            let integers: PyArrayLikeDyn<'_, i64, AllowTypeChange> = array.extract()?;
            values.extend(integers.as_array().iter().copied());
        }
        b'f' => {
            // A float wider than float64 (long double) is rounded to it on the way: 1 + 2⁻⁶⁰
            // would become the integer 1. Such values must survive the rounding.
            if dtype.itemsize() > 8 {
                let numpy = value.py().import("numpy")?;
                let rounded = array.call_method1("astype", ("float64",))?;
                let exact: bool = numpy
                    .call_method1("array_equal", (&array, rounded))?
                    .extract()?;
                if !exact {
                    return Err(input_error(format!(
                        "{name}: a {dtype} value is not an integer float64 holds"
                    )));
                }
            }
            let floats: PyArrayLikeDyn<'_, f64, AllowTypeChange> = array.extract()?;
            for &x in floats.as_array() {
                // Beyond 2^62 nothing is a valid index or group: say so rather than cast.
                if x.fract() == 0.0 && x.abs() < 4.6e18 {
                    values.push(x as i64);
                } else {
                    return Err(input_error(format!("{name}: {x} is not an integer")));
                }
            }
        }
        _ => return Err(not_integers(format!("dtype {dtype}"))),
    }
    Ok((shape, values))
}

/// Collision groups, one a body (uint32 bits), or none.
pub fn groups(value: Option<&Bound<'_, PyAny>>, count: usize) -> PyResult<Vec<CollisionGroups>> {
    let Some(value) = value.filter(|value| !value.is_none()) else {
        return Ok(Vec::new());
    };
    let (_, bits) = integers(value, "groups", |shape| {
        if shape == [count] {
            Ok(())
        } else {
            Err(input_error(format!(
                "groups: shape {shape:?}, expected [{count}] (one a body, from collision_groups)"
            )))
        }
    })?;
    bits.iter()
        .enumerate()
        .map(|(body, &bits)| {
            u32::try_from(bits)
                .map(CollisionGroups::from_bits)
                .map_err(|_| {
                    input_error(format!(
                        "body {body}: groups {bits} is not a 32-bit unsigned value"
                    ))
                })
        })
        .collect()
}

/// Pairs of body indices: a (K, 2) integer array, each index in [0, count).
pub fn pairs(value: &Bound<'_, PyAny>, count: usize) -> PyResult<Vec<[u32; 2]>> {
    let (_, values) = integers(value, "pairs", |shape| {
        if matches!(shape, [_, 2] | [0]) {
            Ok(())
        } else {
            Err(input_error(format!(
                "pairs: shape {shape:?}; give a (K, 2) integer array"
            )))
        }
    })?;
    values
        .chunks_exact(2)
        .enumerate()
        .map(|(pair, row)| {
            let index = |i: i64| {
                u32::try_from(i)
                    .ok()
                    .filter(|&i| (i as usize) < count)
                    .ok_or_else(|| {
                        input_error(format!(
                            "pair {pair}: body index {i} is out of range (there are {count} bodies)"
                        ))
                    })
            };
            Ok([index(row[0])?, index(row[1])?])
        })
        .collect()
}

/// The walls of a `walls=` argument (a sequence of `Wall`s, or None), about `origin`, for
/// bodies of `dimension` 2 or 3 (in 2D each wall in the plane z = 0).
pub fn walls(
    value: Option<&Bound<'_, PyAny>>,
    origin: [f64; 3],
    dimension: usize,
) -> PyResult<Vec<Wall>> {
    let Some(value) = value.filter(|value| !value.is_none()) else {
        return Ok(Vec::new());
    };
    let walls: Vec<crate::walls::PyWall> = value
        .extract()
        .map_err(|error| input_error(format!("walls: not a sequence of Wall ({error})")))?;
    if dimension == 2
        && let Some(at) = walls.iter().position(|wall| !wall.in_plane())
    {
        return Err(input_error(format!(
            "walls: wall {at} leaves the plane z = 0, and the bodies are circles (give it 2 \
             components, or z = 0)"
        )));
    }
    Ok(walls
        .iter()
        .map(|wall| wall.about(DVec3::from_array(origin)))
        .collect())
}
