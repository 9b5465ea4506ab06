//! `sweepcast.Wall`: a static plane or segment, and a box's inside faces.

use pyo3::prelude::*;
use sweepcast::Wall;
use sweepcast::glam::{Vec2, Vec3};

use crate::errors::input_error;
use crate::input::Floats;

/// A static wall: a plane (solid behind it) or a segment.
#[pyclass(name = "Wall", module = "sweepcast", frozen, from_py_object)]
#[derive(Clone, Copy)]
pub struct PyWall(pub Wall);

/// A point or vector of 2 or 3 components, in f32 as walls are kept.
fn point(value: &Bound<'_, PyAny>, name: &str) -> PyResult<(Vec3, usize)> {
    let values = Floats::extract(value, name)?;
    let values = values.values();
    match values.len() {
        2 => Ok((Vec2::new(values[0] as f32, values[1] as f32).extend(0.0), 2)),
        3 => Ok((
            Vec3::new(values[0] as f32, values[1] as f32, values[2] as f32),
            3,
        )),
        n => Err(input_error(format!("{name}: {n} components; give 2 or 3"))),
    }
}

#[pymethods]
impl PyWall {
    /// The plane through ``point`` facing ``normal`` (2 or 3 components each; in 2D a
    /// line).
    #[staticmethod]
    fn plane(point: &Bound<'_, PyAny>, normal: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (point, _) = self::point(point, "point")?;
        let (normal, _) = self::point(normal, "normal")?;
        Ok(Self(Wall::plane(point, normal)))
    }

    /// The segment from ``start`` to ``end`` (2 or 3 components each).
    #[staticmethod]
    fn segment(start: &Bound<'_, PyAny>, end: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (start, _) = point(start, "start")?;
        let (end, _) = point(end, "end")?;
        Ok(Self(Wall::segment_3d(start, end)))
    }

    /// The inside faces of the box from ``min`` to ``max``: 6 planes in 3D, 4 lines in
    /// 2D, in the order -x, +x, -y, +y(, -z, +z).
    #[staticmethod]
    #[pyo3(signature = (min, max))]
    fn box_interior(min: &Bound<'_, PyAny>, max: &Bound<'_, PyAny>) -> PyResult<Vec<Self>> {
        let (low, dimension) = point(min, "min")?;
        let (high, other) = point(max, "max")?;
        if dimension != other {
            return Err(input_error(format!(
                "min has {dimension} components and max {other}; give both 2 or both 3"
            )));
        }
        let walls = if dimension == 3 {
            Wall::box_interior(low, high).to_vec()
        } else {
            Wall::rectangle_interior(low.truncate(), high.truncate()).to_vec()
        };
        Ok(walls.into_iter().map(Self).collect())
    }

    fn __repr__(&self) -> String {
        format!("Wall({:?})", self.0)
    }
}
