//! `sweepcast.Wall`: a static plane or segment, and a box's inside faces. Kept in f64, as
//! given: the f32 paths take each wall about the bodies' local origin (like the bodies),
//! the event loop as it is.

use pyo3::prelude::*;
use sweepcast::Wall;
use sweepcast::glam::DVec3;

use crate::errors::input_error;
use crate::input::Floats;

/// A static wall: a plane (solid behind it) or a segment.
#[pyclass(name = "Wall", module = "sweepcast", frozen, from_py_object)]
#[derive(Clone, Copy, Debug)]
pub struct PyWall(Shape);

/// What a wall is, in f64.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Plane { point: DVec3, normal: DVec3 },
    Segment { start: DVec3, end: DVec3 },
}

impl PyWall {
    /// Whether the wall lies in the plane z = 0, as a wall of circles must (one given 3
    /// components with z ≠ 0 would turn a disc's motion out of the plane).
    pub fn in_plane(&self) -> bool {
        match self.0 {
            Shape::Plane { point, normal } => point.z == 0.0 && normal.z == 0.0,
            Shape::Segment { start, end } => start.z == 0.0 && end.z == 0.0,
        }
    }

    /// The wall about `origin`, in f32 (the difference taken in f64 and rounded once).
    pub fn about(&self, origin: DVec3) -> Wall {
        match self.0 {
            Shape::Plane { point, normal } => {
                Wall::plane((point - origin).as_vec3(), normal.as_vec3())
            }
            Shape::Segment { start, end } => {
                Wall::segment_3d((start - origin).as_vec3(), (end - origin).as_vec3())
            }
        }
    }
}

/// A point or vector of 2 or 3 components (z = 0 in 2D), and how many it had. Its shape is
/// checked before it is read: a (3, 2) array's strided column, or a broadcast one of 2⁴⁰
/// components, is an `InputError`, not three values read or a copy of 8 TiB.
fn point(value: &Bound<'_, PyAny>, name: &str) -> PyResult<(DVec3, usize)> {
    let values = Floats::extract(value, name)?;
    if !matches!(values.shape(), [2 | 3]) {
        return Err(input_error(format!(
            "{name}: shape {:?}; give 2 or 3 components",
            values.shape()
        )));
    }
    let values = values.values()?;
    match values.len() {
        2 => Ok((DVec3::new(values[0], values[1], 0.0), 2)),
        _ => Ok((DVec3::new(values[0], values[1], values[2]), 3)),
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
        Ok(Self(Shape::Plane { point, normal }))
    }

    /// The segment from ``start`` to ``end`` (2 or 3 components each).
    #[staticmethod]
    fn segment(start: &Bound<'_, PyAny>, end: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (start, _) = point(start, "start")?;
        let (end, _) = point(end, "end")?;
        Ok(Self(Shape::Segment { start, end }))
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
        // As `Wall::box_interior` and `Wall::rectangle_interior` make them (`-X` would be
        // `(-1, -0, -0)`, a wall the loop takes differently to the bit).
        let faces = [
            (DVec3::X, DVec3::NEG_X),
            (DVec3::Y, DVec3::NEG_Y),
            (DVec3::Z, DVec3::NEG_Z),
        ];
        Ok(faces[..dimension]
            .iter()
            .flat_map(|&(inward, outward)| {
                [
                    Self(Shape::Plane {
                        point: low,
                        normal: inward,
                    }),
                    Self(Shape::Plane {
                        point: high,
                        normal: outward,
                    }),
                ]
            })
            .collect())
    }

    fn __repr__(&self) -> String {
        match self.0 {
            Shape::Plane { point, normal } => format!(
                "Wall.plane({:?}, {:?})",
                point.to_array(),
                normal.to_array()
            ),
            Shape::Segment { start, end } => {
                format!("Wall.segment({:?}, {:?})", start.to_array(), end.to_array())
            }
        }
    }
}
