//! The f64 event loop from Python: `EventLoop` (bodies, walls, a restitution, a broad
//! phase) whose `advance` returns the step's `Events` as arrays, with no Python callback
//! per event.

use numpy::{PyArray1, PyArray2};
use pyo3::prelude::*;
use sweepcast::cpu::ContactFinder;
use sweepcast::events::{self, AllPairs, Cells, Elastic, Event, EventBody};
use sweepcast::glam::DVec3;
use sweepcast::{Partner, Wall};

use crate::errors::{input_error, to_py};
use crate::gpu::GpuStep;
use crate::input::{self, Floats};
use crate::output::{self, column, len_of, rows, vectors};
use crate::{detach, detach_any};

/// The impacts of one ``EventLoop.advance``, in time order, one row an event.
#[pyclass(module = "sweepcast", frozen)]
pub struct Events {
    /// (E,) float64: when, from the start of the step.
    #[pyo3(get)]
    times: Py<PyArray1<f64>>,
    /// (E,) int64: the body (of a pair, the lower index).
    #[pyo3(get)]
    bodies: Py<PyArray1<i64>>,
    /// (E,) int64: the other body; -1 for a wall.
    #[pyo3(get)]
    partners: Py<PyArray1<i64>>,
    /// (E,) int64: the wall; -1 for a pair.
    #[pyo3(get)]
    walls: Py<PyArray1<i64>>,
    /// (E, D) int32: the periodic image of the partner met, in periods per axis.
    #[pyo3(get)]
    images: Py<PyArray2<i32>>,
    /// (E, D) float64: the body's surface point facing its partner.
    #[pyo3(get)]
    points: Py<PyArray2<f64>>,
    /// (E, D) float64: the unit normal from the body's centre towards its partner.
    #[pyo3(get)]
    normals: Py<PyArray2<f64>>,
    /// (E, D) float64: the impulse the body received (its partner the opposite): the
    /// change of its momentum.
    #[pyo3(get)]
    impulses: Py<PyArray2<f64>>,
}

#[pymethods]
impl Events {
    fn __len__(&self, py: Python<'_>) -> usize {
        len_of(py, &self.times)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("Events(len={})", self.__len__(py))
    }
}

impl Events {
    fn new(py: Python<'_>, events: &[Event], d: usize) -> Self {
        let mut partners = Vec::with_capacity(events.len());
        let mut walls = Vec::with_capacity(events.len());
        let mut images = Vec::with_capacity(d * events.len());
        for event in events {
            let (partner, wall, image) = match event.partner {
                Partner::Body { index, image } => (i64::from(index), -1, image),
                Partner::Wall { index } => (-1, i64::from(index), [0; 3]),
            };
            partners.push(partner);
            walls.push(wall);
            output::push(&mut images, image, d);
        }
        Self {
            times: column(py, events.iter().map(|event| event.time).collect()),
            bodies: column(
                py,
                events.iter().map(|event| i64::from(event.body)).collect(),
            ),
            partners: column(py, partners),
            walls: column(py, walls),
            images: rows(py, images, d),
            points: vectors(py, events.iter().map(|event| event.point.to_array()), d),
            normals: vectors(py, events.iter().map(|event| event.normal.to_array()), d),
            impulses: vectors(py, events.iter().map(|event| event.impulse.to_array()), d),
        }
    }
}

/// Which broad phase the loop asks for its pairs (one a loop: its size does not matter).
#[allow(clippy::large_enum_variant)]
enum Broad {
    All,
    Cells(Cells),
    Cpu(ContactFinder),
    Gpu(Py<GpuStep>),
}

/// A simulation advanced impact by impact in float64: smooth spheres (or discs, D = 2) with a
/// restitution, among walls, optionally in a periodic box.
///
/// ``positions``, ``velocities`` (N, D), ``radii``, ``masses`` (N,). ``broad_phase``:
/// "cells" (a grid, for bodies of similar size), "all" (every pair: a few hundred bodies),
/// "cpu" (the CPU step), or a ``GpuStep``. Making the loop checks every body and setting.
#[pyclass(module = "sweepcast")]
pub struct EventLoop {
    events: events::EventLoop,
    bodies: Vec<EventBody>,
    walls: Vec<Wall>,
    response: Elastic,
    broad: Broad,
    dimension: usize,
    time: f64,
}

/// Rows of (N, D) float64 as 3D vectors (z = 0 in 2D).
fn vectors_of(array: &Floats<'_>, d: usize) -> PyResult<Vec<DVec3>> {
    Ok(if d == 3 {
        array
            .rows::<3>()?
            .iter()
            .map(|&v| DVec3::from_array(v))
            .collect()
    } else {
        array
            .rows::<2>()?
            .iter()
            .map(|v| DVec3::new(v[0], v[1], 0.0))
            .collect()
    })
}

impl EventLoop {
    /// Runs the loop for `step` on its own bodies, walls and broad phase, collecting the
    /// events, with the GIL released.
    fn run(&mut self, py: Python<'_>, step: f64) -> PyResult<Vec<Event>> {
        let Self {
            events,
            bodies,
            walls,
            response,
            broad,
            ..
        } = self;
        let mut seen = Vec::new();
        let mut collect = |event: &Event, _: &events::Moment<'_>| seen.push(*event);
        match broad {
            Broad::All => detach(py, || {
                events.advance_with(bodies, walls, step, response, &mut AllPairs, &mut collect)
            })?,
            Broad::Cells(cells) => detach(py, || {
                events.advance_with(bodies, walls, step, response, cells, &mut collect)
            })?,
            Broad::Cpu(finder) => detach(py, || {
                events.advance_with(bodies, walls, step, response, finder, &mut collect)
            })?,
            Broad::Gpu(gpu) => {
                let mut pipeline = gpu.get().pipeline();
                detach(py, || {
                    events.advance_with(bodies, walls, step, response, &mut pipeline, &mut collect)
                })?
            }
        };
        Ok(seen)
    }

    fn set_vectors(
        &mut self,
        value: &Bound<'_, PyAny>,
        name: &str,
        velocity: bool,
    ) -> PyResult<()> {
        let array = Floats::extract(value, name)?;
        input::check_shape(&array, name, self.bodies.len(), self.dimension)?;
        for (body, vector) in self
            .bodies
            .iter_mut()
            .zip(vectors_of(&array, self.dimension)?)
        {
            if velocity {
                body.velocity = vector;
            } else {
                body.position = vector;
            }
        }
        Ok(())
    }
}

#[pymethods]
impl EventLoop {
    #[new]
    #[pyo3(
        signature = (positions, velocities, radii, masses, *, walls=None, periodic_box=None, restitution=1.0, groups=None, broad_phase=None, skin=None, local_skins=false, max_events=None),
        text_signature = "(positions, velocities, radii, masses, *, walls=None, periodic_box=None, restitution=1.0, groups=None, broad_phase='cells', skin=None, local_skins=False, max_events=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        py: Python<'_>,
        positions: &Bound<'_, PyAny>,
        velocities: &Bound<'_, PyAny>,
        radii: &Bound<'_, PyAny>,
        masses: &Bound<'_, PyAny>,
        walls: Option<&Bound<'_, PyAny>>,
        periodic_box: Option<&Bound<'_, PyAny>>,
        restitution: f64,
        groups: Option<&Bound<'_, PyAny>>,
        broad_phase: Option<&Bound<'_, PyAny>>,
        skin: Option<f64>,
        local_skins: bool,
        max_events: Option<i64>,
    ) -> PyResult<Self> {
        let positions = Floats::extract(positions, "positions")?;
        let d = input::dimension(&positions, "positions")?;
        let count = positions.shape()[0];
        let velocities = Floats::extract(velocities, "velocities")?;
        input::check_shape(&velocities, "velocities", count, d)?;
        let radii = Floats::extract(radii, "radii")?;
        input::check_shape(&radii, "radii", count, 0)?;
        let masses = Floats::extract(masses, "masses")?;
        input::check_shape(&masses, "masses", count, 0)?;
        let groups = input::groups(groups, count)?;
        let (radii, masses) = (radii.values()?, masses.values()?);
        let bodies: Vec<EventBody> = vectors_of(&positions, d)?
            .into_iter()
            .zip(vectors_of(&velocities, d)?)
            .zip(radii.iter().zip(masses.iter()))
            .enumerate()
            .map(|(index, ((position, velocity), (&radius, &mass)))| {
                let body = EventBody::new(position, velocity, radius, mass);
                match groups.get(index) {
                    Some(&groups) => body.with_groups(groups),
                    None => body,
                }
            })
            .collect();
        let mut events = events::EventLoop::new();
        if let Some(periodic_box) = input::periodic_box(periodic_box, d)? {
            events = events.with_periodic_box(periodic_box);
        }
        if let Some(skin) = skin {
            events = events.with_skin(skin);
        }
        if local_skins {
            events = events.with_local_skins();
        }
        if let Some(max_events) = max_events {
            let max_events = usize::try_from(max_events).map_err(|_| {
                input_error(format!(
                    "max_events: {max_events}; give a count of 0 or more"
                ))
            })?;
            events = events.with_max_events(max_events);
        }
        let broad = match broad_phase {
            None => Broad::Cells(Cells::new()),
            Some(value) => {
                if let Ok(gpu) = value.cast::<GpuStep>() {
                    Broad::Gpu(gpu.clone().unbind())
                } else {
                    match value.extract::<String>().ok().as_deref() {
                        Some("cells") => Broad::Cells(Cells::new()),
                        Some("all") => Broad::All,
                        Some("cpu") => Broad::Cpu(ContactFinder::new()),
                        _ => {
                            return Err(input_error(format!(
                                "broad_phase: {value}; give \"cells\", \"all\", \"cpu\" or a GpuStep"
                            )));
                        }
                    }
                }
            }
        };
        let mut this = Self {
            events,
            bodies,
            walls: input::walls(walls, [0.0; 3], d)?,
            response: Elastic::new(restitution).map_err(to_py)?,
            broad,
            dimension: d,
            time: 0.0,
        };
        // A step of no time checks every body, wall and setting now, and finds the pairs
        // the first step goes on from.
        this.run(py, 0.0)?;
        Ok(this)
    }

    /// Runs to ``dt`` later: every impact resolved in time order, the bodies moved to the
    /// end (wrapped into the periodic box). On error the bodies are left as they were at
    /// the last completed event.
    fn advance(&mut self, py: Python<'_>, dt: f64) -> PyResult<Events> {
        let events = self.run(py, dt)?;
        self.time += dt;
        Ok(Events::new(py, &events, self.dimension))
    }

    /// (N, D) float64: the centres now (a new array).
    #[getter]
    fn positions(&self, py: Python<'_>) -> Py<PyArray2<f64>> {
        vectors(
            py,
            self.bodies.iter().map(|b| b.position.to_array()),
            self.dimension,
        )
    }

    #[setter]
    fn set_positions(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_vectors(value, "positions", false)
    }

    /// (N, D) float64: the velocities now (a new array).
    #[getter]
    fn velocities(&self, py: Python<'_>) -> Py<PyArray2<f64>> {
        vectors(
            py,
            self.bodies.iter().map(|b| b.velocity.to_array()),
            self.dimension,
        )
    }

    #[setter]
    fn set_velocities(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set_vectors(value, "velocities", true)
    }

    /// (N,) float64.
    #[getter]
    fn radii(&self, py: Python<'_>) -> Py<PyArray1<f64>> {
        column(py, self.bodies.iter().map(|b| b.radius).collect())
    }

    /// (N,) float64.
    #[getter]
    fn masses(&self, py: Python<'_>) -> Py<PyArray1<f64>> {
        column(py, self.bodies.iter().map(|b| b.mass).collect())
    }

    /// The time advanced since the loop was made.
    #[getter]
    fn time(&self) -> f64 {
        self.time
    }

    /// How many times the last advance asked its broad phase for pairs.
    #[getter]
    fn broad_phase_runs(&self) -> usize {
        self.events.broad_phase_runs()
    }

    /// The sum of m v**2 / 2, in float64.
    fn kinetic_energy(&self, py: Python<'_>) -> PyResult<f64> {
        let bodies = &self.bodies;
        detach_any(py, || bodies.iter().map(EventBody::kinetic_energy).sum())
    }

    fn __len__(&self) -> usize {
        self.bodies.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "EventLoop(bodies={}, time={})",
            self.bodies.len(),
            self.time
        )
    }
}
