//! The user-facing types: circles and spheres, moving ones, static [`Wall`]s, and the
//! [`Impact`] of a pair.
//!
//! Circles are spheres in the plane z = 0: every 2D type converts into its 3D twin, and the
//! whole crate (CPU mirror, shader, oracle) runs one code path on [`MovingSphere`].

use glam::{DVec3, Vec2, Vec3};

/// A stationary circle in the plane.
///
/// `#[repr(C)]` and [`bytemuck::Pod`]: a caller's `&[f32]` of `[center.x, center.y, radius]` records casts to a
/// slice of these with `bytemuck::cast_slice`, without copying.
///
/// Used by: `examples/tunneling.rs` (its rocks, in `examples/tunnel/mod.rs`).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Circle {
    /// Centre of the circle.
    pub center: Vec2,
    /// Radius; must be finite and non-negative (zero is a point).
    pub radius: f32,
}

/// A stationary sphere.
///
/// `#[repr(C)]` and [`bytemuck::Pod`]: a caller's `&[f32]` of `[center.x, center.y, center.z,
/// radius]` records casts to a slice of these with `bytemuck::cast_slice`, without copying.
///
/// Used by: `docs/guide.md` ("Batches of candidate pairs": a body at rest).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Sphere {
    /// Centre of the sphere.
    pub center: Vec3,
    /// Radius; must be finite and non-negative (zero is a point).
    pub radius: f32,
}

/// A circle that moves by `displacement` over one step (t from 0 to 1).
///
/// `#[repr(C)]` and [`bytemuck::Pod`]: a caller's `&[f32]` of `[center.x, center.y, radius,
/// displacement.x, displacement.y]` records casts to a slice of these with
/// `bytemuck::cast_slice`, without copying.
///
/// Used by: the README's quick start (one pair) and "Collision groups", `examples/bullets.rs`,
/// `examples/tunneling.rs`.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MovingCircle {
    /// Centre at the start of the step (t = 0).
    pub center: Vec2,
    /// Radius; must be finite and non-negative (zero is a point, swept into a ray).
    pub radius: f32,
    /// How far the centre moves over the whole step: the centre at t = 1 is
    /// `center + displacement`.
    pub displacement: Vec2,
}

/// A sphere that moves by `displacement` over one step (t from 0 to 1).
///
/// `#[repr(C)]` and [`bytemuck::Pod`]: a caller's `&[f32]` of `[center.x, center.y,
/// center.z, radius, displacement.x, displacement.y, displacement.z]` records casts to a
/// slice of these with `bytemuck::cast_slice`, without copying:
///
/// ```
/// use sweepcast::{cpu, MovingSphere, SweepOptions};
///
/// // Two bodies as a simulation might keep them: 7 floats each.
/// let state: [f32; 14] = [
///     0.0, 0.0, 0.0, 1.0, 10.0, 0.0, 0.0, // at the origin, moving 10 along x
///     5.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, // at rest at x = 5
/// ];
/// let bodies: &[MovingSphere] = bytemuck::cast_slice(&state);
/// let contacts = cpu::find_contacts(bodies, SweepOptions::default())?;
/// assert_eq!(contacts.contacts().first().map(|c| c.impact.time_of_impact), Some(0.3));
/// # Ok::<(), sweepcast::Error>(())
/// ```
///
/// Used by: the README's quick start (the CPU and GPU steps), `examples/gas.rs`,
/// `mpi/examples/gas_across_ranks.rs`.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MovingSphere {
    /// Centre at the start of the step (t = 0).
    pub center: Vec3,
    /// Radius; must be finite and non-negative (zero is a point, swept into a ray).
    pub radius: f32,
    /// How far the centre moves over the whole step: the centre at t = 1 is
    /// `center + displacement`.
    pub displacement: Vec3,
}

impl Circle {
    /// A circle of `radius` centred at `center`.
    ///
    /// Used by: `examples/tunneling.rs` (its rocks, in `examples/tunnel/mod.rs`).
    #[must_use]
    pub const fn new(center: Vec2, radius: f32) -> Self {
        Self { center, radius }
    }
}

impl Sphere {
    /// A sphere of `radius` centred at `center`.
    ///
    /// Used by: `docs/guide.md` ("Batches of candidate pairs": a body at rest).
    #[must_use]
    pub const fn new(center: Vec3, radius: f32) -> Self {
        Self { center, radius }
    }
}

impl MovingCircle {
    /// A circle starting at `center` and moving by `displacement` over the step.
    ///
    /// Used by: the README's quick start (one pair) and "Collision groups", `docs/guide.md`
    /// ("Walls: segments and planes"), `examples/bullets.rs`.
    #[must_use]
    pub const fn new(center: Vec2, radius: f32, displacement: Vec2) -> Self {
        Self {
            center,
            radius,
            displacement,
        }
    }
}

impl MovingSphere {
    /// A sphere starting at `center` and moving by `displacement` over the step. A caller
    /// holding `[f32; 3]` arrays passes `Vec3::from(array)`.
    ///
    /// Used by: the README's quick start (the CPU and GPU steps), `docs/guide.md` ("Batches of
    /// candidate pairs"), `examples/gas.rs`, `mpi/src/lib.rs`.
    #[must_use]
    pub const fn new(center: Vec3, radius: f32, displacement: Vec3) -> Self {
        Self {
            center,
            radius,
            displacement,
        }
    }

    /// A sphere from f64 state (a `DVec3` or `[f64; 3]` each), in f32 relative to the local
    /// origin `origin`: the centre is `center - origin` subtracted in f64 and then rounded
    /// once, so a body far from the world's origin keeps its f32 precision beside its size
    /// (a coordinate of magnitude `m` carries a rounding of `m · 2⁻²⁴`; see the crate's
    /// docs). The step's answers are then relative to `origin` too: add it back to a contact
    /// point. Pick one origin per step for all its bodies (the centre of their bounding box,
    /// say); `DVec3::ZERO` converts as is.
    ///
    /// Used by: `docs/guide.md` ("Batches of candidate pairs": a local origin).
    ///
    /// # Example
    /// ```
    /// use sweepcast::glam::DVec3;
    /// use sweepcast::{cpu, MovingSphere, SweepOptions};
    ///
    /// // Two spheres a kilometre from the origin, 0.001 apart: in f32 each centre would be
    /// // rounded by up to 3e-5 (3 % of the gap); relative to a local origin, by 1e-10.
    /// let origin = DVec3::new(1000.0, 0.0, 0.0);
    /// let a = MovingSphere::from_f64([1000.0, 0.0, 0.0], 0.5, [0.01, 0.0, 0.0], origin);
    /// let b = MovingSphere::from_f64(DVec3::new(1001.001, 0.0, 0.0), 0.5, DVec3::ZERO, origin);
    /// let impact = cpu::sweep_sphere_sphere(&a, &b, SweepOptions::default()).unwrap();
    /// assert!((impact.time_of_impact - 0.1).abs() < 1e-4); // the gap of 0.001 closes at 0.1
    /// ```
    #[must_use]
    pub fn from_f64(
        center: impl Into<DVec3>,
        radius: f64,
        displacement: impl Into<DVec3>,
        origin: DVec3,
    ) -> Self {
        Self {
            center: (center.into() - origin).as_vec3(),
            radius: radius as f32,
            displacement: displacement.into().as_vec3(),
        }
    }
}

impl From<Circle> for Sphere {
    fn from(c: Circle) -> Self {
        Self::new(c.center.extend(0.0), c.radius)
    }
}

impl From<Sphere> for MovingSphere {
    /// A sphere that stays where it is (zero displacement).
    fn from(s: Sphere) -> Self {
        Self::new(s.center, s.radius, Vec3::ZERO)
    }
}

impl From<Circle> for MovingSphere {
    fn from(c: Circle) -> Self {
        Sphere::from(c).into()
    }
}

impl From<MovingCircle> for MovingSphere {
    fn from(c: MovingCircle) -> Self {
        Self::new(c.center.extend(0.0), c.radius, c.displacement.extend(0.0))
    }
}

/// A static wall that bodies sweep against: a line segment (a cushion of a 2D table, a rod
/// in 3D) or a plane (a floor, a face of a box).
///
/// Walls do not move and have no thickness of their own: a body touches a segment when its
/// centre comes within its radius of the segment's nearest point (interior or end point),
/// and a plane when its centre comes within its radius of the plane on the side its normal
/// points to. A plane is solid behind it: a body whose centre is closer than its radius to
/// the plane, or behind it, overlaps it. In a periodic box, the walls' sweeps and both steps
/// take the walls to lie in its primary cell, not repeated: a body meets a wall when its
/// image in the cell does (see [`PeriodicBox`](crate::PeriodicBox)).
///
/// Used by: the README's quick start (the event loop), `docs/guide.md` ("Walls: segments and
/// planes"), `examples/pool_break.rs` (its cushions, in `examples/pool/mod.rs`).
///
/// # Example
/// ```
/// use sweepcast::glam::{Vec2, Vec3};
/// use sweepcast::Wall;
///
/// let cushion = Wall::segment(Vec2::new(0.0, 0.0), Vec2::new(2.0, 0.0));
/// let floor = Wall::plane(Vec3::ZERO, Vec3::Y);
/// let room = Wall::box_interior(Vec3::ZERO, Vec3::splat(10.0));
/// assert_eq!(room[2], Wall::plane(Vec3::ZERO, Vec3::Y)); // the face y = 0, facing +y
/// # let _ = (cushion, floor);
/// ```
#[derive(Copy, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Wall {
    /// The segment from `start` to `end`; where the two coincide it is a point.
    Segment {
        /// One end point.
        start: Vec3,
        /// The other end point.
        end: Vec3,
    },
    /// The plane through `point` whose free side is the one `normal` points to.
    Plane {
        /// A point of the plane.
        point: Vec3,
        /// The direction out of the wall, into free space: any length but zero.
        normal: Vec3,
    },
}

impl Wall {
    /// A segment in the plane z = 0, for circles.
    ///
    /// Used by: `docs/guide.md` ("Walls: segments and planes"), `examples/pool_break.rs` (its
    /// cushions, in `examples/pool/mod.rs`), `examples/tunneling.rs` (its plates, in
    /// `examples/tunnel/mod.rs`).
    #[must_use]
    pub const fn segment(start: Vec2, end: Vec2) -> Self {
        Self::Segment {
            start: Vec3::new(start.x, start.y, 0.0),
            end: Vec3::new(end.x, end.y, 0.0),
        }
    }

    /// A segment in space, for spheres.
    ///
    /// Used by: `docs/guide.md` ("Walls: segments and planes"), `python/src/walls.rs`,
    /// `mpi/src/bin/same_answers.rs`.
    #[must_use]
    pub const fn segment_3d(start: Vec3, end: Vec3) -> Self {
        Self::Segment { start, end }
    }

    /// The plane through `point`, free on the side `normal` points to (any length but zero).
    ///
    /// Used by: the README's quick start (the event loop), `docs/guide.md` ("Walls: segments and
    /// planes"), `mpi/examples/gas_across_ranks.rs` (its floor and ceiling), `python/src/walls.rs`.
    #[must_use]
    pub const fn plane(point: Vec3, normal: Vec3) -> Self {
        Self::Plane { point, normal }
    }

    /// The six faces of the box from `min` to `max`, each facing inwards, so that bodies are
    /// kept inside: the faces x = min.x, x = max.x, y = min.y, y = max.y, z = min.z, z = max.z,
    /// in that order.
    ///
    /// Used by: `docs/guide.md` ("Walls: segments and planes"), `examples/resident_step.rs`,
    /// `mpi/examples/gas_across_ranks.rs` (`--scene closed`).
    #[must_use]
    pub const fn box_interior(min: Vec3, max: Vec3) -> [Self; 6] {
        [
            Self::plane(min, Vec3::X),
            Self::plane(max, Vec3::NEG_X),
            Self::plane(min, Vec3::Y),
            Self::plane(max, Vec3::NEG_Y),
            Self::plane(min, Vec3::Z),
            Self::plane(max, Vec3::NEG_Z),
        ]
    }

    /// The four sides of the rectangle from `min` to `max` in the plane z = 0, each facing
    /// inwards (planes through the sides, so that circles are kept inside): x = min.x,
    /// x = max.x, y = min.y, y = max.y, in that order.
    ///
    /// Used by: `docs/guide.md` ("Walls: segments and planes").
    #[must_use]
    pub const fn rectangle_interior(min: Vec2, max: Vec2) -> [Self; 4] {
        let (min, max) = (Vec3::new(min.x, min.y, 0.0), Vec3::new(max.x, max.y, 0.0));
        [
            Self::plane(min, Vec3::X),
            Self::plane(max, Vec3::NEG_X),
            Self::plane(min, Vec3::Y),
            Self::plane(max, Vec3::NEG_Y),
        ]
    }
}

/// Whether a pair first touches during the step or already overlaps at its start.
///
/// Used by: the README's quick start (one pair), `examples/resident_step.rs`,
/// `python/src/output.rs`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum ImpactStatus {
    /// The bodies touch at `time_of_impact` and did not overlap before: they first touch
    /// during the step (touching at exactly t = 1, or grazing tangentially, counts), or they
    /// touch exactly at t = 0 (`time_of_impact` = 0: centre distance equal to the radius sum).
    Contact,
    /// The bodies already overlap at t = 0 (centre distance below the radius sum);
    /// `time_of_impact` is 0.
    Overlapping,
}

/// Where and when a pair of moving bodies first touches.
///
/// For circles every vector has z = 0.
///
/// Used by: the README's quick start (one pair: `cpu::sweep_circle_circle`), `examples/compare.rs`,
/// `examples/arrays.rs`.
#[derive(Copy, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Impact {
    /// Fraction of the step, in [0, 1], at which the bodies first touch.
    pub time_of_impact: f32,
    /// The contact point: the point of the first body's surface that faces the second at
    /// `time_of_impact`. For an overlapping pair it is on the first body's surface along the
    /// normal.
    pub point: Vec3,
    /// Unit normal from the first body's centre towards the second's at `time_of_impact`.
    /// Where the centres coincide it falls back to the direction of relative motion, then +x.
    pub normal: Vec3,
    /// The first body's displacement shortened to the moment of contact
    /// (`displacement * time_of_impact`).
    pub displacement_a: Vec3,
    /// The second body's displacement shortened to the moment of contact.
    pub displacement_b: Vec3,
    /// Contact during the step, or overlap at its start.
    pub status: ImpactStatus,
}

impl Impact {
    /// True when the pair already overlaps at t = 0.
    ///
    /// Used by: `examples/arrays.rs` (the binding's status codes).
    #[must_use]
    pub fn is_overlapping(&self) -> bool {
        self.status == ImpactStatus::Overlapping
    }
}

// The records a caller's `&[f32]` casts to: no padding, f32 alignment.
const _: () = assert!(size_of::<Circle>() == 12 && align_of::<Circle>() == 4);
const _: () = assert!(size_of::<Sphere>() == 16 && align_of::<Sphere>() == 4);
const _: () = assert!(size_of::<MovingCircle>() == 20 && align_of::<MovingCircle>() == 4);
const _: () = assert!(size_of::<MovingSphere>() == 28 && align_of::<MovingSphere>() == 4);

/// What a body met: another body (and, in a periodic box, which image of it) or a wall; the
/// other side of a [`Contact`](crate::Contact), an [`Event`](crate::events::Event) and an
/// [`EarliestImpact`](crate::EarliestImpact).
///
/// Used by: `examples/resident_step.rs`, `mpi/examples/gas_across_ranks.rs`,
/// `python/src/contacts.rs`.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Partner {
    /// Another body, met through its image `image` (see [`EarliestRecord::image`](crate::low_level::layout::EarliestRecord::image)).
    Body {
        /// The body's index.
        index: u32,
        /// The image met, in periods per axis (0 without a periodic box).
        image: [i32; 3],
    },
    /// A static wall.
    Wall {
        /// The wall's index in the step's walls.
        index: u32,
    },
}
