//! sweepcast from Python: NumPy arrays in and out for the whole step (`find_contacts`,
//! `GpuStep`), the batch pair query (`sweep`), the f64 oracle and parity judge
//! (`reference_sweep`, `check_times`) and the event loop (`EventLoop`). The Python API is
//! specified by `sweepcast.pyi` beside this crate, which maturin ships as the package's
//! type stubs.
//!
//! Every call that does real work releases the GIL (`Python::detach`) and catches a panic
//! (a bug) as a `RuntimeError`, never PyO3's `PanicException`.

mod contacts;
mod errors;
mod events;
mod gpu;
mod impacts;
mod input;
mod judge;
mod output;
mod step;
mod walls;

use std::panic::{AssertUnwindSafe, catch_unwind};

use numpy::ndarray::{ArrayD, Zip};
use numpy::{IntoPyArray, PyArrayDyn};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors::{from_panic, input_error, to_py};
use crate::gpu::GpuStep;

/// `f` with the GIL released and a panic caught.
pub(crate) fn detach_any<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f)))
        .map_err(from_panic)
}

/// `f` with the GIL released, its error as the exception it stands for.
pub(crate) fn detach<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, sweepcast::Error> + Send,
) -> PyResult<T> {
    detach_any(py, f)?.map_err(to_py)
}

/// The `device=` argument: "cpu" or a `GpuStep`.
pub(crate) enum Device<'py> {
    Cpu,
    Gpu(Bound<'py, GpuStep>),
}

impl<'py> FromPyObject<'_, 'py> for Device<'py> {
    type Error = PyErr;

    fn extract(value: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(gpu) = value.cast::<GpuStep>() {
            return Ok(Self::Gpu(gpu.to_owned()));
        }
        match value
            .cast::<PyString>()
            .ok()
            .map(|s| s.to_string())
            .as_deref()
        {
            Some("cpu") => Ok(Self::Cpu),
            _ => Err(input_error(format!(
                "device: {}; give \"cpu\" or a GpuStep (sweepcast.GpuStep())",
                value
                    .repr()
                    .map_or_else(|_| "?".to_owned(), |r| r.to_string())
            ))),
        }
    }
}

impl<'py> Device<'py> {
    /// The GPU step of a `device=` argument, if it names one.
    fn gpu(device: Self) -> PyResult<Option<Bound<'py, GpuStep>>> {
        Ok(match device {
            Self::Gpu(gpu) => Some(gpu),
            Self::Cpu => None,
        })
    }
}

/// Collision groups, one a body, as the ``groups=`` argument takes them: 16 membership
/// bits and 16 filter bits each (broadcast together). Two bodies interact when each one's
/// memberships meet the other's filter.
#[pyfunction]
#[pyo3(signature = (memberships, filter))]
fn collision_groups<'py>(
    py: Python<'py>,
    memberships: &Bound<'py, PyAny>,
    filter: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArrayDyn<u32>>> {
    // Groups are one a body, and no step takes more than `MAX_BODIES`: a larger array (or
    // broadcast of two) is an error before anything is copied or made.
    let most = sweepcast::cpu::ContactFinder::MAX_BODIES;
    let too_many = |shape: &[usize], name: &str| -> PyResult<()> {
        match shape
            .iter()
            .try_fold(1usize, |n, &axis| n.checked_mul(axis))
        {
            Some(n) if n <= most => Ok(()),
            _ => Err(input_error(format!(
                "{name}: shape {shape:?}, more values than the {most} bodies a step takes"
            ))),
        }
    };
    let as_array = |value, name| -> PyResult<ArrayD<i64>> {
        let (shape, values) = input::integers(value, name, |shape| too_many(shape, name))?;
        ArrayD::from_shape_vec(shape, values)
            .map_err(|error| input_error(format!("{name}: {error}")))
    };
    let (memberships, filter) = (
        as_array(memberships, "memberships")?,
        as_array(filter, "filter")?,
    );
    let shape = broadcast_shape(memberships.shape(), filter.shape()).ok_or_else(|| {
        input_error(format!(
            "memberships of shape {:?} and filter of shape {:?} do not broadcast together",
            memberships.shape(),
            filter.shape()
        ))
    })?;
    too_many(&shape, "memberships and filter broadcast together")?;
    let (memberships, filter) = (
        memberships.broadcast(shape.clone()).expect("broadcast"),
        filter.broadcast(shape).expect("broadcast"),
    );
    let mut bits = ArrayD::<u32>::zeros(memberships.raw_dim());
    let mut bad = None;
    Zip::from(&mut bits)
        .and(&memberships)
        .and(&filter)
        .for_each(|bits, &m, &f| match (u16::try_from(m), u16::try_from(f)) {
            (Ok(m), Ok(f)) => *bits = sweepcast::CollisionGroups::new(m, f).bits(),
            _ => bad = Some((m, f)),
        });
    if let Some((m, f)) = bad {
        return Err(input_error(format!(
            "collision groups: memberships {m} and filter {f} must each be 16 bits (0 to 65535)"
        )));
    }
    Ok(bits.into_pyarray(py))
}

/// The shape two arrays broadcast to, as NumPy's rule makes it.
fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let len = a.len().max(b.len());
    let at = |shape: &[usize], i: usize| (i + shape.len()).checked_sub(len).map_or(1, |j| shape[j]);
    (0..len)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

/// sweepcast: when moving circles and spheres first touch (continuous collision detection),
/// on the CPU and on the GPU, and an f64 event loop, from NumPy arrays.
///
/// Bodies are given as arrays, one a field: ``centers`` (N, D) and ``displacements`` (N, D)
/// with D = 3 (spheres) or D = 2 (circles, in the plane z = 0), ``radii`` (N,). Any float
/// dtype (float32 or float64), any strides. The f32 paths (``find_contacts``, ``sweep``)
/// subtract a local origin in f64 (the centre of the centres' bounding box; 0 in a periodic
/// box) and round each body to f32 once; their points come back in the caller's
/// coordinates, in float64. The event loop (``EventLoop``) works in float64, its walls
/// (``Wall``) as the f32 paths take them.
///
/// Bad input raises ``InputError`` (a ``ValueError``) naming the body and the field; a
/// device failure raises ``DeviceError`` (a ``RuntimeError``); a limit passed (too many
/// events, too much work or output) raises ``LimitError`` (a ``RuntimeError``). Every long
/// call releases the GIL.
#[pymodule(name = "sweepcast")]
fn sweepcast_module(module: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(module)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add("EPSILON", sweepcast::parity::EPSILON)?;
    module.add("CPU_BOUND", sweepcast::parity::CPU_BOUND)?;
    module.add("GPU_BOUND", sweepcast::parity::GPU_BOUND)?;
    module.add("MISS", output::MISS)?;
    module.add("CONTACT", output::CONTACT)?;
    module.add("OVERLAPPING", output::OVERLAPPING)?;
    module.add_class::<walls::PyWall>()?;
    module.add_class::<contacts::Contacts>()?;
    module.add_class::<impacts::Impacts>()?;
    module.add_class::<judge::Judgement>()?;
    module.add_class::<GpuStep>()?;
    module.add_class::<events::Events>()?;
    module.add_class::<events::EventLoop>()?;
    module.add_function(wrap_pyfunction!(collision_groups, module)?)?;
    module.add_function(wrap_pyfunction!(step::find_contacts, module)?)?;
    module.add_function(wrap_pyfunction!(step::sweep, module)?)?;
    module.add_function(wrap_pyfunction!(judge::reference_sweep, module)?)?;
    module.add_function(wrap_pyfunction!(judge::check_times, module)?)?;
    Ok(())
}
