//! sweepcast's errors as Python exceptions: `InputError` (a `ValueError`) for bad input,
//! `DeviceError` and `LimitError` (`RuntimeError`s) for a device's failure and a limit
//! passed, all under `sweepcast.Error`. The classes are made once, in Python (PyO3's
//! exceptions take one base; these take two).

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyModule, PyType};
use sweepcast::Error;

const CLASSES: &std::ffi::CStr = cr#"
class Error(Exception):
    """Every error sweepcast raises."""
    __module__ = "sweepcast"

class InputError(Error, ValueError):
    """Bad input: a NaN, a negative radius, a wrong shape, mismatched lengths, a periodic box
    too small, an out-of-range index. The message names the body (or pair, wall) and the
    field."""
    __module__ = "sweepcast"

class DeviceError(Error, RuntimeError):
    """No GPU adapter, or the device failed."""
    __module__ = "sweepcast"

class LimitError(Error, RuntimeError):
    """A limit was passed: too many events or too much work in a step, an output larger than
    the device holds."""
    __module__ = "sweepcast"
"#;

/// The module that holds the classes, made on first use.
static CLASSES_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn classes(py: Python<'_>) -> &Bound<'_, PyModule> {
    CLASSES_MODULE
        .get_or_init(py, || {
            PyModule::from_code(py, CLASSES, c"sweepcast_errors.py", c"sweepcast_errors")
                .expect("the error classes compile")
                .unbind()
        })
        .bind(py)
}

/// The class `name` ("Error", "InputError", "DeviceError", "LimitError").
pub fn class<'py>(py: Python<'py>, name: &str) -> Bound<'py, PyType> {
    classes(py)
        .getattr(name)
        .and_then(|class| Ok(class.cast_into::<PyType>()?))
        .expect("an error class")
}

/// Adds the classes to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    for name in ["Error", "InputError", "DeviceError", "LimitError"] {
        module.add(name, class(module.py(), name))?;
    }
    Ok(())
}

fn raise(class_name: &'static str, message: String) -> PyErr {
    Python::attach(|py| PyErr::from_type(class(py, class_name), message))
}

/// An `InputError` with `message`.
pub fn input_error(message: String) -> PyErr {
    raise("InputError", message)
}

/// sweepcast's error as the exception a Python user expects, with its message.
pub fn to_py(error: Error) -> PyErr {
    let message = error.to_string();
    let class_name = match error {
        Error::NonFinite { .. }
        | Error::TooLarge { .. }
        | Error::NegativeRadius { .. }
        | Error::PairIndexOutOfRange { .. }
        | Error::InvalidPeriodicBox { .. }
        | Error::PeriodicBoxTooSmall { .. }
        | Error::OutsidePeriodicBox { .. }
        | Error::InvalidWall { .. }
        | Error::InvalidMass { .. }
        | Error::InvalidStep { .. }
        | Error::InvalidSkin { .. }
        | Error::OutOfRange { .. }
        | Error::InvalidRestitution { .. }
        | Error::GroupsLength { .. }
        | Error::FieldLength { .. }
        | Error::InvalidBuffer { .. }
        | Error::InvalidBricks { .. }
        | Error::BrickBodies { .. }
        | Error::ReachTooLarge { .. } => "InputError",
        Error::NoAdapter { .. }
        | Error::UnsupportedAdapter { .. }
        | Error::DeviceLimit { .. }
        | Error::RequestDevice(_)
        | Error::Device(_)
        | Error::OutOfDeviceMemory(_)
        | Error::Mapping(_)
        | Error::Timeout { .. } => "DeviceError",
        Error::SkinTooThin { .. }
        | Error::NoProgress { .. }
        | Error::WorkLimit { .. }
        | Error::TooManyPartners { .. }
        | Error::UnresolvedImpact { .. }
        | Error::InvalidResponse { .. }
        | Error::TooManyEvents { .. }
        | Error::CapacityExceeded { .. }
        | Error::OutputLimit { .. }
        | Error::TooManyBodies { .. } => "LimitError",
        // A kind added to the crate since this binding was written.
        _ => "Error",
    };
    raise(class_name, message)
}

/// A panic that escaped anyway, as a plain `RuntimeError` (never PyO3's `PanicException`,
/// which derives from `BaseException` and passes `except Exception`).
pub fn from_panic(payload: Box<dyn std::any::Any + Send>) -> PyErr {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    PyRuntimeError::new_err(format!(
        "sweepcast: internal error (a bug, please report it): {message}"
    ))
}
