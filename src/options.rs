//! What a simulation asks of a sweep beyond the bodies: [`SweepOptions`], one value passed to
//! every path (single pair, batch, fast batch, GPU stage and pipeline, oracle and judge).

use glam::{DVec3, Vec2, Vec3};

use crate::error::Error;
use crate::limits::MAX_MAGNITUDE;

/// Options of a sweep. The default keeps the plain answers: every pair that touches or
/// overlaps at t = 0 is a hit, and space does not wrap.
///
/// Used by: the README's quick start (one pair, the CPU and GPU steps), `docs/guide.md` ("Options:
/// event-driven simulations and periodic worlds"), `examples/headless.rs`.
///
/// # Example
/// ```
/// use sweepcast::glam::Vec3;
/// use sweepcast::{cpu, MovingSphere, PeriodicBox, SweepOptions};
///
/// // Two spheres just resolved by an event-driven simulation: touching, moving apart.
/// let a = MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(-1.0, 0.0, 0.0));
/// let b = MovingSphere::new(Vec3::new(2.0, 0.0, 0.0), 1.0, Vec3::new(1.0, 0.0, 0.0));
/// assert!(cpu::sweep_sphere_sphere(&a, &b, SweepOptions::default()).is_some());
/// assert!(cpu::sweep_sphere_sphere(&a, &b, SweepOptions::event_driven()).is_none());
///
/// // In a periodic box of side 10, a body at x = 9.5 meets one at x = 0.5 across the edge.
/// let options = SweepOptions::default().with_periodic_box(PeriodicBox::cube(10.0)?);
/// let a = MovingSphere::new(Vec3::new(9.5, 5.0, 5.0), 0.25, Vec3::new(1.0, 0.0, 0.0));
/// let b = MovingSphere::new(Vec3::new(0.5, 5.0, 5.0), 0.25, Vec3::ZERO);
/// let impact = cpu::sweep_sphere_sphere(&a, &b, options).expect("they meet across the edge");
/// assert!((impact.time_of_impact - 0.5).abs() < 1e-6);
/// # Ok::<(), sweepcast::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SweepOptions {
    /// Whether a pair that touches or overlaps at t = 0 is a hit whatever its motion (`true`,
    /// the default), as parry's `ShapeCastOptions::stop_at_penetration`.
    ///
    /// With `false`, a pair that touches or overlaps at t = 0 while separating (its relative
    /// motion not towards each other: `s · v <= 0` for the separation `s` from the first
    /// centre to the second and the relative motion `v` of the first) is a miss: it can only
    /// move apart. That is the choice for event-driven simulations, where the two bodies of a
    /// collision just resolved touch (or overlap by rounding) and move apart, and must not be
    /// collided again ([`SweepOptions::event_driven`]). A pair that touches or overlaps while
    /// approaching is still reported at t = 0.
    pub stop_at_penetration: bool,
    /// A periodic box in which positions wrap: each pair is swept with the nearest image of
    /// its second body, and each body meets the walls as its image in the box's primary
    /// cell ([`PeriodicBox`]). `None` (the default): space does not wrap.
    pub periodic_box: Option<PeriodicBox>,
}

impl Default for SweepOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl SweepOptions {
    /// The default: touching or overlapping at t = 0 is a hit; no periodic box.
    ///
    /// Used by: `examples/headless.rs`, `examples/compare.rs`, `examples/fast_path.rs`,
    /// `benches/sweep.rs`.
    pub const DEFAULT: Self = Self {
        stop_at_penetration: true,
        periodic_box: None,
    };

    /// The options for an event-driven simulation: a pair touching or overlapping at t = 0
    /// while separating is a miss (see [`SweepOptions::stop_at_penetration`]).
    ///
    /// Used by: `docs/guide.md` ("Options: event-driven simulations and periodic worlds"),
    /// `examples/resident_step.rs`, `mpi/examples/gas_across_ranks.rs`.
    #[must_use]
    pub const fn event_driven() -> Self {
        Self {
            stop_at_penetration: false,
            periodic_box: None,
        }
    }

    /// These options with `periodic_box`.
    ///
    /// Used by: `docs/guide.md` ("Options: event-driven simulations and periodic worlds"),
    /// `examples/gas.rs`, `examples/arrays.rs`, `mpi/examples/gas_across_ranks.rs`.
    #[must_use]
    pub const fn with_periodic_box(mut self, periodic_box: PeriodicBox) -> Self {
        self.periodic_box = Some(periodic_box);
        self
    }
}

/// A box whose opposite faces are identified, per axis: a body leaving on one side comes back
/// on the other (the minimum-image convention of molecular dynamics).
///
/// Every path sweeps a pair in relative coordinates, so the box costs one wrap of the
/// relative position per pair: `s - L round(s / L)` on each periodic axis, applied so that it
/// is exact for centres in `[0, L)`.
///
/// Used by: `docs/guide.md` ("Options: event-driven simulations and periodic worlds"),
/// `examples/gas.rs` (in `examples/hard_spheres/mod.rs`), `mpi/examples/gas_across_ranks.rs`.
///
/// # Validity
/// Only the nearest image is swept, which is right when no other image can be reached within
/// the step. Every batch path checks, for every body and every periodic axis, that the radius
/// plus the displacement's component along the axis is below a quarter of the period
/// (`radius + |displacement_i| < L_i / 4`); then for any pair the radius sum plus the relative
/// motion along the axis is below half the period, so at most one image can touch. A body that
/// fails it is [`Error::PeriodicBoxTooSmall`]. Centres may lie anywhere within
/// [`MAX_PERIODS`](crate::low_level::MAX_PERIODS) (2²⁴) periods of the origin (beyond, f32 cannot place
/// a body within one period: [`Error::OutsidePeriodicBox`]), but the guarantees (the parity
/// bound) are stated for centres in `[0, L)` on each periodic axis: elsewhere the wrap adds
/// a rounding of the size of the coordinates.
///
/// # Walls
/// [`Wall`](crate::Wall)s are given once, in the box's primary cell (`[0, L)` on each axis
/// that wraps; they are not repeated), and a body meets a wall when its image in the primary
/// cell touches it, after any number of wraps, along any axis that wraps, for segments and
/// planes alike. Within a step, the body's start is wrapped into the cell and the step is
/// cut where its centre crosses a face of the cell (the reach above allows one crossing an
/// axis, so at most four pieces); on each piece the image then in the cell is swept, and
/// the earliest touch is the answer, with the point and normal of that image. An image that
/// touches or overlaps a wall where it enters the cell meets it then, as a contact (under
/// the separating option, only if it is moving towards it). See
/// [`reference::sweep_sphere_wall`](crate::reference::sweep_sphere_wall); the walls' sweeps,
/// the walls stage and both steps follow it.
///
/// With the `serde` feature it is written as its periods per axis as given, in f64
/// ([`period_f64`](PeriodicBox::period_f64)), `null` (`None`) where the axis does not wrap
/// (JSON has no infinity), and read back through [`PeriodicBox::new_f64`], so that a box
/// made in f64 comes back the same box and an invalid box is an error of the deserializer,
/// not a box.
#[derive(Copy, Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(try_from = "PeriodicBoxData", into = "PeriodicBoxData")
)]
pub struct PeriodicBox {
    /// Per axis: the period, or infinity where the axis does not wrap, as the f32 paths take
    /// it (rounded to nearest from `exact`).
    period: Vec3,
    /// The period as given: the f64 event loop's.
    exact: DVec3,
}

impl PeriodicBox {
    /// A box of `period` per axis; `f32::INFINITY` on an axis means it does not wrap.
    ///
    /// Used by: `docs/guide.md` ("Options: event-driven simulations and periodic worlds"),
    /// `docs/guarantees.md` ("Bad input"), `mpi/examples/gas_across_ranks.rs` (`--scene slab`).
    ///
    /// # Errors
    /// [`Error::InvalidPeriodicBox`] when a period is NaN, zero, negative, subnormal (below
    /// `f32::MIN_POSITIVE`: its reciprocal, which the wrap multiplies by, overflows, and GPUs
    /// flush it to zero), finite above [`MAX_MAGNITUDE`](crate::low_level::MAX_MAGNITUDE), or when no
    /// axis wraps.
    pub fn new(period: Vec3) -> Result<Self, Error> {
        for (axis, value) in period.to_array().into_iter().enumerate() {
            let valid =
                value >= f32::MIN_POSITIVE && (value <= MAX_MAGNITUDE || value == f32::INFINITY);
            if !valid {
                return Err(Error::InvalidPeriodicBox {
                    axis,
                    period: value,
                });
            }
        }
        if !period.is_finite_mask().any() {
            return Err(Error::InvalidPeriodicBox {
                axis: 0,
                period: f32::INFINITY,
            });
        }
        Ok(Self {
            period,
            exact: period.as_dvec3(),
        })
    }

    /// A box of `period` per axis in f64 (`f64::INFINITY` on an axis that does not wrap),
    /// for the f64 event loop, which keeps it exactly
    /// ([`EventLoop::with_periodic_box`](crate::events::EventLoop::with_periodic_box)); the
    /// f32 paths take it rounded to the nearest f32 ([`period`](Self::period)), and the event
    /// loop grows the spheres it hands its broad phase by that rounding.
    ///
    /// Used by: `docs/guide.md` ("Options: event-driven simulations and periodic worlds"),
    /// `docs/guarantees.md` ("Bad input"), `examples/arrays.rs`, `python/src/input.rs`.
    ///
    /// # Example
    /// ```
    /// use sweepcast::glam::DVec3;
    /// use sweepcast::PeriodicBox;
    ///
    /// let side = 80.59959770082348; // the side of a gas at a chosen packing
    /// let periodic_box = PeriodicBox::new_f64(DVec3::splat(side))?;
    /// assert_eq!(periodic_box.period_f64().x, side); // kept exactly
    /// assert_eq!(periodic_box.period().x, 80.599_594); // the f32 paths' period
    /// # Ok::<(), sweepcast::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`PeriodicBox::new`], for the period rounded to f32 (a period whose rounding is
    /// zero, subnormal or beyond the bound is rejected; the error carries the rounded value).
    pub fn new_f64(period: DVec3) -> Result<Self, Error> {
        for (axis, value) in period.to_array().into_iter().enumerate() {
            if value.is_nan() || (value.is_infinite() && value < 0.0) {
                return Err(Error::InvalidPeriodicBox {
                    axis,
                    period: value as f32,
                });
            }
            // A finite period that rounds to infinity in f32 is beyond MAX_MAGNITUDE.
            if value.is_finite() && (value as f32).is_infinite() {
                return Err(Error::InvalidPeriodicBox {
                    axis,
                    period: f32::MAX,
                });
            }
        }
        let rounded = Self::new(period.as_vec3())?;
        Ok(Self {
            exact: period,
            ..rounded
        })
    }

    /// The period per axis as given, in f64 (infinity where the axis does not wrap): what
    /// [`new_f64`](Self::new_f64) was given, or [`period`](Self::period) widened.
    ///
    /// Used by: `docs/guide.md` ("Options: event-driven simulations and periodic worlds").
    #[must_use]
    pub fn period_f64(&self) -> DVec3 {
        self.exact
    }

    /// A cube of side `side`, periodic on all three axes.
    ///
    /// Used by: `docs/guide.md` ("Options: event-driven simulations and periodic worlds"),
    /// `examples/gas.rs` (also in `examples/hard_spheres/mod.rs`), `mpi/src/bin/same_answers.rs`.
    ///
    /// # Errors
    /// As [`PeriodicBox::new`].
    pub fn cube(side: f32) -> Result<Self, Error> {
        Self::new(Vec3::splat(side))
    }

    /// A periodic rectangle for circles: x and y wrap with `period`, z does not.
    ///
    /// Used by: `docs/guide.md` ("Options: event-driven simulations and periodic worlds").
    ///
    /// # Errors
    /// As [`PeriodicBox::new`].
    pub fn rectangle(period: Vec2) -> Result<Self, Error> {
        Self::new(period.extend(f32::INFINITY))
    }

    /// The period per axis as the f32 paths take it (infinity where the axis does not wrap).
    ///
    /// Used by: `mpi/examples/gas_across_ranks.rs` (its scene's period).
    #[must_use]
    pub fn period(&self) -> Vec3 {
        self.period
    }

    /// Whether `axis` (0, 1, 2 for x, y, z) wraps.
    pub(crate) fn wraps(&self, axis: usize) -> bool {
        self.period[axis].is_finite()
    }

    /// The period as the shader takes it: 0 where the axis does not wrap.
    pub(crate) fn shader_period(&self) -> Vec3 {
        Vec3::select(self.period.is_finite_mask(), self.period, Vec3::ZERO)
    }

    /// `1 / period`, 0 where the axis does not wrap.
    pub(crate) fn shader_inverse_period(&self) -> Vec3 {
        Vec3::select(
            self.period.is_finite_mask(),
            self.period.recip(),
            Vec3::ZERO,
        )
    }
}

/// A [`PeriodicBox`] as serde writes it: per axis, the period as given (f64: a box of
/// [`PeriodicBox::new_f64`] keeps its exact period), `None` where it does not wrap.
#[cfg(feature = "serde")]
#[derive(serde::Serialize, serde::Deserialize)]
struct PeriodicBoxData {
    period: [Option<f64>; 3],
}

#[cfg(feature = "serde")]
impl From<PeriodicBox> for PeriodicBoxData {
    fn from(periodic_box: PeriodicBox) -> Self {
        Self {
            period: periodic_box
                .exact
                .to_array()
                .map(|period| period.is_finite().then_some(period)),
        }
    }
}

#[cfg(feature = "serde")]
impl TryFrom<PeriodicBoxData> for PeriodicBox {
    type Error = Error;

    fn try_from(data: PeriodicBoxData) -> Result<Self, Error> {
        Self::new_f64(DVec3::from_array(
            data.period.map(|period| period.unwrap_or(f64::INFINITY)),
        ))
    }
}
