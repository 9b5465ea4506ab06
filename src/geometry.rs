//! The user-facing types: circles and spheres, moving ones, and the [`Impact`] of a pair.
//!
//! Circles are spheres in the plane z = 0: every 2D type converts into its 3D twin, and the
//! whole crate (CPU mirror, shader, oracle) runs one code path on [`MovingSphere`].

use glam::{Vec2, Vec3};

/// A stationary circle in the plane.
#[derive(Copy, Clone, Debug, PartialEq, Default)]
pub struct Circle {
    /// Centre of the circle.
    pub center: Vec2,
    /// Radius; must be finite and non-negative (zero is a point).
    pub radius: f32,
}

/// A stationary sphere.
#[derive(Copy, Clone, Debug, PartialEq, Default)]
pub struct Sphere {
    /// Centre of the sphere.
    pub center: Vec3,
    /// Radius; must be finite and non-negative (zero is a point).
    pub radius: f32,
}

/// A circle that moves by `displacement` over one step (t from 0 to 1).
#[derive(Copy, Clone, Debug, PartialEq, Default)]
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
#[derive(Copy, Clone, Debug, PartialEq, Default)]
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
    #[must_use]
    pub const fn new(center: Vec2, radius: f32) -> Self {
        Self { center, radius }
    }
}

impl Sphere {
    /// A sphere of `radius` centred at `center`.
    #[must_use]
    pub const fn new(center: Vec3, radius: f32) -> Self {
        Self { center, radius }
    }
}

impl MovingCircle {
    /// A circle starting at `center` and moving by `displacement` over the step.
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
    /// A sphere starting at `center` and moving by `displacement` over the step.
    #[must_use]
    pub const fn new(center: Vec3, radius: f32, displacement: Vec3) -> Self {
        Self {
            center,
            radius,
            displacement,
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

/// Whether a pair first touches during the step or already overlaps at its start.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
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
#[derive(Copy, Clone, Debug, PartialEq)]
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
    #[must_use]
    pub fn is_overlapping(&self) -> bool {
        self.status == ImpactStatus::Overlapping
    }
}
