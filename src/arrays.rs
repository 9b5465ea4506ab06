//! Bodies from a structure of arrays: one f64 array a field, as NumPy and most
//! simulations hold them ([`MovingSphere::from_f64_arrays_into`]).

use glam::DVec3;

use crate::error::{BodyField, Error};
use crate::geometry::MovingSphere;

impl MovingSphere {
    /// Spheres from f64 arrays, one a field (a structure of arrays, as NumPy and most
    /// simulations hold them), into `out` (cleared first, its memory reused): body `i` is
    /// [`from_f64`](Self::from_f64)`(centers[i], radii[i], displacements[i], origin)`. With
    /// `D` = 2 the arrays are of circles, which become spheres in the plane z = 0 (as
    /// [`MovingCircle`](crate::MovingCircle) does). Nothing is validated but the lengths:
    /// the step that takes the spheres validates them (a value beyond f32 becomes infinite
    /// there).
    ///
    /// Used by: `docs/guide.md` ("Batches of candidate pairs": a local origin), `docs/python.md`
    /// ("The f32 paths and the local origin"), `docs/architecture.md`,
    /// `examples/arrays.rs`, `python/src/input.rs`.
    ///
    /// # Errors
    /// [`Error::FieldLength`] where `radii` or `displacements` is not as long as `centers`.
    ///
    /// # Example
    /// ```
    /// use sweepcast::{cpu, MovingSphere, SweepOptions};
    ///
    /// let centers = [[0.0, 0.0], [3.0, 0.0]];
    /// let mut spheres = Vec::new();
    /// MovingSphere::from_f64_arrays_into(&centers, &[1.0; 2], &[[2.0, 0.0], [0.0; 2]], [0.0; 2], &mut spheres)?;
    /// let contacts = cpu::find_contacts(&spheres, SweepOptions::default())?;
    /// assert_eq!(contacts.contacts()[0].impact.time_of_impact, 0.5);
    /// # Ok::<(), sweepcast::Error>(())
    /// ```
    pub fn from_f64_arrays_into<const D: usize>(
        centers: &[[f64; D]],
        radii: &[f64],
        displacements: &[[f64; D]],
        origin: [f64; D],
        out: &mut Vec<MovingSphere>,
    ) -> Result<(), Error> {
        const { assert!(D == 2 || D == 3, "2 or 3 dimensions") };
        out.clear();
        for (field, len) in [
            (BodyField::Radius, radii.len()),
            (BodyField::Displacement, displacements.len()),
        ] {
            if len != centers.len() {
                return Err(Error::FieldLength {
                    field,
                    len,
                    bodies: centers.len(),
                });
            }
        }
        let padded = |v: &[f64; D]| DVec3::new(v[0], v[1], if D == 3 { v[D - 1] } else { 0.0 });
        let origin = padded(&origin);
        out.extend(centers.iter().zip(radii).zip(displacements).map(
            |((center, &radius), displacement)| {
                Self::from_f64(padded(center), radius, padded(displacement), origin)
            },
        ));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_body_is_from_f64_of_its_fields_and_lengths_must_agree() {
        let centers = [[1e3, 2.0, -3.0], [1e3 + 0.1, 2.5, -3.5]];
        let displacements = [[0.25, 0.0, 1e-9], [-1.0, 2.0, 3.0]];
        let origin = [1e3, 2.0, -3.0];
        let mut out = vec![MovingSphere::default(); 5];
        MovingSphere::from_f64_arrays_into(
            &centers,
            &[0.5, 0.75],
            &displacements,
            origin,
            &mut out,
        )
        .unwrap();
        let expected: Vec<_> = (0..2)
            .map(|i| {
                MovingSphere::from_f64(centers[i], [0.5, 0.75][i], displacements[i], origin.into())
            })
            .collect();
        assert_eq!(out, expected);
        // Circles are spheres in z = 0.
        MovingSphere::from_f64_arrays_into(
            &[[1.0, 2.0]],
            &[3.0],
            &[[4.0, 5.0]],
            [1.0, 0.0],
            &mut out,
        )
        .unwrap();
        assert_eq!(
            out,
            [MovingSphere::new(
                glam::Vec3::new(0.0, 2.0, 0.0),
                3.0,
                glam::Vec3::new(4.0, 5.0, 0.0)
            )]
        );
        let error =
            MovingSphere::from_f64_arrays_into(&centers, &[0.5], &displacements, origin, &mut out)
                .unwrap_err();
        assert!(
            matches!(
                error,
                Error::FieldLength {
                    field: BodyField::Radius,
                    len: 1,
                    bodies: 2
                }
            ),
            "{error}"
        );
        let error = MovingSphere::from_f64_arrays_into(
            &centers,
            &[0.5; 2],
            &[[0.0; 3]; 3],
            origin,
            &mut out,
        )
        .unwrap_err();
        assert!(matches!(
            error,
            Error::FieldLength {
                field: BodyField::Displacement,
                len: 3,
                bodies: 2
            }
        ));
        assert!(out.is_empty());
    }
}
