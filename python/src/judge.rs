//! The f64 oracle (`reference_sweep`) and the parity judge (`check_times`, `Judgement`)
//! on the bodies as the f32 paths take them.

use numpy::PyArray1;
use pyo3::prelude::*;
use sweepcast::reference::{self, Body};
use sweepcast::{ImpactStatus, parity};

use crate::errors::{input_error, to_py};
use crate::impacts::{Impacts, Row};
use crate::input::{self, Floats};
use crate::output::{CONTACT, MISS, OVERLAPPING, column, status_code};
use crate::step::Step;
use crate::{detach, detach_any};

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
    let times = times.values()?;
    if !(bound.is_finite() && bound >= 0.0) {
        return Err(input_error(format!(
            "bound: {bound}; give a bound of 0 or more in units of EPSILON (CPU_BOUND, GPU_BOUND)"
        )));
    }
    let (_, codes) = input::integers(status, "status", |shape| {
        if shape == [pairs.len()] {
            Ok(())
        } else {
            Err(input_error(format!(
                "status: shape {shape:?} for {} pairs; give one value a pair",
                pairs.len()
            )))
        }
    })?;
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
