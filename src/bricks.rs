//! Space cut into bricks, one per process, for a step beyond one machine: which brick owns
//! each body, which bodies a brick sends each neighbour (its halo there), and the step's
//! answers a brick owns, found from its owned bodies and its halo and equal, to the bit, to
//! the answers of one process that holds every body. No MPI here: this is the core of an
//! exchange over MPI, and what a code that already decomposes space (LAMMPS has its own
//! bricks and ghosts) needs to hand its bricks to sweepcast: its ghosts unshifted (a copy of a
//! body is that body's bits, under its global index; the step's periodic box does the
//! shifting).
//!
//! Used by: the README's "Beyond one machine", `docs/scale_out.md`, and `sweepcast-mpi`'s exchange
//! (`mpi/src/lib.rs`), which `mpi/examples/gas_across_ranks.rs` runs.
//!
//! # The rules
//!
//! * **Bricks.** [`Bricks`] cuts a domain into `counts[0] × counts[1] × counts[2]` bricks of
//!   equal widths, numbered x fastest. In open space the bricks at the domain's edges reach
//!   out to infinity, so that every centre has a brick; on an axis that a
//!   [`PeriodicBox`](crate::PeriodicBox) wraps the domain is its cell `[0, period)`.
//! * **Ownership by centre** ([`Bricks::owner`]): each brick is half-open, `[lower, upper)`
//!   per axis, its faces `lower + k × width` computed once in f64, so a centre exactly on a
//!   face has one owner, the brick above it. In a periodic box a centre is first wrapped into
//!   the cell (in f64).
//! * **The reach.** Two bodies can touch in the step only if their centres are at most
//!   `(r_a + |d_a|) + (r_b + |d_b|)` apart, so every partner of a brick's body lies within
//!   twice the largest `r + |d|` of all bodies of the step (agreed across the bricks: the
//!   largest of their [`largest_reach`]) of the brick. [`halo_width`] widens that by the
//!   rounding of the f32 sweep: a pair it reports touching may be apart by up to
//!   `2^-9.5 × S` beyond the radii (from the parity bound of a GPU, `16 ε S²`, ε = 2⁻²³),
//!   with the pair's scale `S = |s| + |v| + R` at most about 4 × the largest reach `L`, so by
//!   `2^-7.5 L`; the width `2 L (1 + 2^-8)` leaves `2^-7 L`. In a periodic box that holds for
//!   centres in the cell or near it: a centre `k` periods away adds the rounding of the f32
//!   shift by `k` periods, within the margin while `k × period` stays below `2^17 L`. Wrap
//!   the centres into the cell. A width beyond half a brick on an axis cut into
//!   two or more is [`Error::ReachTooLarge`] ([`Bricks::check_halo_width`]): use fewer, wider
//!   bricks along it, or shorter steps.
//! * **The halo**, in three staged exchanges along x, then y, then z, as molecular-dynamics
//!   codes do ([`Bricks::halo_sends`]): along each axis a brick sends its lower neighbour the
//!   bodies it holds (owned, and received along the earlier axes) whose centre lies within
//!   the halo width above its lower face, and its upper neighbour those within it below its
//!   upper face. A brick then holds every body within the halo width of it along each axis,
//!   its 26 neighbours' included. Bodies travel unshifted: in a periodic box each brick's step
//!   runs in the global [`PeriodicBox`](crate::PeriodicBox), whose nearest image does the shift, so no
//!   coordinate is rounded on the way; a body that reaches a brick twice (across both faces
//!   of an axis cut into two) is kept once, by its global index.
//! * **The step's answers a brick owns** ([`BrickStep::find`]): every contact between two
//!   bodies whose lower global index the brick owns (so each contact is reported by exactly
//!   one brick), each owned body's earliest contact and its earliest wall. The brick's bodies
//!   are swept in the order of their global indices, so every pair is swept with the same
//!   body first, and every tie broken by the same index, as in one process: the answers are
//!   the one process's, to the bit.
//!
//! Global indices are `u32`, as the one process's indices are: 2³² bodies in all.
//!
//! ```
//! use sweepcast::bricks::{BrickStep, Bricks, Local, halo_width, largest_reach};
//! use sweepcast::glam::Vec3;
//! use sweepcast::{MovingSphere, SweepOptions};
//!
//! // Two bricks along x, each a body near the face at x = 0: they meet across it.
//! let bodies = [
//!     MovingSphere::new(Vec3::new(-1.5, 0.0, 0.0), 0.5, Vec3::new(2.0, 0.0, 0.0)),
//!     MovingSphere::new(Vec3::new(1.5, 0.0, 0.0), 0.5, Vec3::new(-2.0, 0.0, 0.0)),
//! ];
//! let options = SweepOptions::default();
//! let bricks = Bricks::new([-20.0; 3], [20.0; 3], [2, 1, 1], &options)?;
//! let width = halo_width(largest_reach(&bodies));
//! bricks.check_halo_width(width)?;
//! assert_eq!(bricks.owner(bodies[0].center), 0);
//! assert_eq!(bricks.owner(bodies[1].center), 1);
//! // Brick 0 sends body 0 up along x: it lies within the halo width of the face.
//! let centers: Vec<Vec3> = bodies.iter().map(|b| b.center).collect();
//! let sends = bricks.halo_sends(0, 0, width, &centers[..1]);
//! assert_eq!(sends.upper, Some((1, vec![0])));
//! // Brick 1 holds body 1 and, in its halo, body 0; it owns no contact's lower index.
//! let mut step = BrickStep::new();
//! let owned = Local { bodies: &bodies[1..], global: &[1], groups: &[] };
//! let halo = Local { bodies: &bodies[..1], global: &[0], groups: &[] };
//! let answers = step.find(owned, halo, &[], options)?;
//! assert!(answers.contacts.is_empty());
//! assert_eq!(answers.earliest[0].map(|e| e.time_of_impact), Some(0.5));
//! # Ok::<(), sweepcast::Error>(())
//! ```

use glam::Vec3;

use crate::answers::EarliestImpact;
use crate::contact_step::Contact;
use crate::cpu::ContactFinder;
use crate::error::Error;
use crate::geometry::{MovingSphere, Partner, Wall};
use crate::groups::CollisionGroups;
use crate::options::SweepOptions;

/// How much [`halo_width`] widens twice the largest reach `L`: `2^-8`, so `2^-7 L`, above the
/// `2^-9.5 S ≤ 2^-7.5 L` by which the f32 sweep may report a pair touching beyond its radii
/// (`S` the pair's scale, at most about `4 L`; see the module's rules).
const HALO_MARGIN: f64 = 1.0 / 256.0;

/// A domain cut into bricks (see the [module](self)'s rules).
///
/// Used by: `docs/scale_out.md`, `mpi/examples/gas_across_ranks.rs`, `mpi/src/lib.rs`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bricks {
    counts: [u32; 3],
    lower: [f64; 3],
    width: [f64; 3],
    /// The period on an axis that wraps; `None` on an open one.
    period: [Option<f64>; 3],
}

/// Where a brick sends its halo along one axis ([`Bricks::halo_sends`]): the neighbour below
/// and the one above, each with the indices (into the centres given) of the bodies it gets;
/// `None` where there is no neighbour (the domain's edge in open space, or an axis a
/// periodic box wraps with one brick, whose images the box's nearest image finds).
///
/// Used by: `mpi/src/lib.rs` (the halo exchange, axis by axis).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HaloSends {
    /// The brick below, and what it gets.
    pub lower: Option<(usize, Vec<u32>)>,
    /// The brick above, and what it gets.
    pub upper: Option<(usize, Vec<u32>)>,
}

impl Bricks {
    /// The domain from `lower` to `upper` cut into `counts` bricks per axis, in the space of
    /// `options`: on an axis that its periodic box wraps, the domain is the cell
    /// `[0, period)` and `lower` and `upper` are not read there.
    ///
    /// Used by: `mpi/examples/gas_across_ranks.rs`, `mpi/src/bin/weak_scaling.rs`,
    /// `mpi/src/bin/same_answers.rs`.
    ///
    /// # Errors
    /// [`Error::InvalidBricks`] for a count of 0, more than 2³² bricks, or, on an axis cut
    /// into two or more, bounds (`lower` and `upper`, or `0` and the period) that are not
    /// finite with `lower < upper` and a finite difference.
    pub fn new(
        lower: [f64; 3],
        upper: [f64; 3],
        counts: [u32; 3],
        options: &SweepOptions,
    ) -> Result<Self, Error> {
        let invalid = |axis: usize, reason: &'static str| Error::InvalidBricks { axis, reason };
        let total = counts
            .iter()
            .map(|&count| u64::from(count))
            .product::<u64>();
        if total > u64::from(u32::MAX) + 1 {
            return Err(invalid(0, "more than 2^32 bricks in all"));
        }
        let mut bricks = Self {
            counts,
            lower: [0.0; 3],
            width: [f64::INFINITY; 3],
            period: [None; 3],
        };
        for axis in 0..3 {
            let count = counts[axis];
            if count == 0 {
                return Err(invalid(
                    axis,
                    "a count of 0 bricks; each axis needs 1 or more",
                ));
            }
            let wrapped = options
                .periodic_box
                .filter(|periodic_box| periodic_box.wraps(axis))
                .map(|periodic_box| f64::from(periodic_box.period()[axis]));
            let (from, to) = match wrapped {
                Some(period) => (0.0, period),
                None => (lower[axis], upper[axis]),
            };
            if count > 1 && !(from < to && (to - from).is_finite()) {
                return Err(invalid(
                    axis,
                    "the bounds of an axis cut into 2 or more bricks must be finite, lower below \
                     upper, and their difference finite",
                ));
            }
            bricks.period[axis] = wrapped;
            if count > 1 || wrapped.is_some() {
                // −0 as +0: equal bricks print alike (`sweepcast-mpi` compares the ranks'
                // bricks by their Debug text).
                bricks.lower[axis] = from + 0.0;
                bricks.width[axis] = (to - from) / f64::from(count);
            }
        }
        Ok(bricks)
    }

    /// Bricks per axis.
    ///
    /// Used by: `mpi/src/lib.rs` (the ranks' Cartesian communicator, and migration).
    #[must_use]
    pub fn counts(&self) -> [u32; 3] {
        self.counts
    }

    /// Whether `axis` wraps (a periodic box's).
    ///
    /// Used by: `mpi/src/lib.rs` (the ranks' Cartesian communicator).
    ///
    /// # Panics
    /// If `axis` is not 0, 1 or 2.
    #[must_use]
    pub fn wraps(&self, axis: usize) -> bool {
        self.period[axis].is_some()
    }

    /// How many bricks in all: one or more (each axis has one or more).
    ///
    /// Used by: `mpi/src/lib.rs` (one rank a brick).
    #[must_use]
    #[expect(
        clippy::len_without_is_empty,
        reason = "a decomposition is never empty: is_empty would always be false"
    )]
    pub fn len(&self) -> usize {
        self.counts.iter().map(|&count| count as usize).product()
    }

    /// A brick's coordinates (per axis, from 0) from its index (x fastest).
    ///
    /// Used by: `mpi/src/lib.rs` (migration between steps).
    ///
    /// # Panics
    /// If `brick` is not below [`len`](Self::len).
    #[must_use]
    pub fn coordinates(&self, brick: usize) -> [u32; 3] {
        assert!(brick < self.len(), "brick {brick} of {}", self.len());
        let [x, y, _] = self.counts.map(|count| count as usize);
        [brick % x, brick / x % y, brick / (x * y)].map(|c| c as u32)
    }

    /// A brick's index from its coordinates (x fastest).
    ///
    /// Used by: `mpi/src/lib.rs` (a rank's brick from its coordinates).
    ///
    /// # Panics
    /// If a coordinate is not below its axis's count.
    #[must_use]
    pub fn index(&self, coordinates: [u32; 3]) -> usize {
        for axis in 0..3 {
            assert!(
                coordinates[axis] < self.counts[axis],
                "coordinates {coordinates:?}"
            );
        }
        let [x, y, _] = self.counts.map(|count| count as usize);
        let [i, j, k] = coordinates.map(|c| c as usize);
        i + x * (j + y * k)
    }

    /// The face `k` of `axis` (`k` from 0 to the count): `lower + k × width`.
    fn face(&self, axis: usize, k: u32) -> f64 {
        self.lower[axis] + self.width[axis] * f64::from(k)
    }

    /// `coordinate` on `axis` wrapped into the cell where the axis wraps.
    fn wrapped(&self, axis: usize, coordinate: f32) -> f64 {
        let coordinate = f64::from(coordinate);
        let Some(period) = self.period[axis] else {
            return coordinate;
        };
        let mut inside = coordinate - period * (coordinate / period).floor();
        // The quotient rounds: put a centre within rounding of a face in the cell.
        if inside < 0.0 {
            inside += period;
        }
        if inside >= period {
            inside -= period;
        }
        inside
    }

    /// The brick's coordinate on `axis` of a (wrapped) coordinate: the number of interior
    /// faces at or below it.
    fn slot(&self, axis: usize, coordinate: f64) -> u32 {
        let count = self.counts[axis];
        let estimate = ((coordinate - self.lower[axis]) / self.width[axis]).floor();
        let mut k = estimate.clamp(0.0, f64::from(count - 1)) as u32;
        while k > 0 && coordinate < self.face(axis, k) {
            k -= 1;
        }
        while k + 1 < count && coordinate >= self.face(axis, k + 1) {
            k += 1;
        }
        k
    }

    /// The brick that owns a body whose centre is `center` (see the module's rules).
    ///
    /// Used by: `docs/architecture.md` ("The paths"), `mpi/src/lib.rs`,
    /// `mpi/src/bin/weak_scaling.rs`.
    #[must_use]
    pub fn owner(&self, center: Vec3) -> usize {
        // An axis of one brick has one slot whatever the coordinate: no wrap to compute.
        let coordinates: [u32; 3] = std::array::from_fn(|axis| match self.counts[axis] {
            1 => 0,
            _ => self.slot(axis, self.wrapped(axis, center[axis])),
        });
        self.index(coordinates)
    }

    /// Whether `options`, a step's, are in the space of these bricks: an axis its periodic
    /// box wraps is one the bricks wrap, with the same period, and no other.
    ///
    /// Used by: `mpi/src/lib.rs` (each step's options).
    ///
    /// # Errors
    /// [`Error::InvalidBricks`] on the first axis where they differ.
    pub fn check_options(&self, options: &SweepOptions) -> Result<(), Error> {
        for axis in 0..3 {
            let period = options
                .periodic_box
                .filter(|periodic_box| periodic_box.wraps(axis))
                .map(|periodic_box| f64::from(periodic_box.period()[axis]));
            if period != self.period[axis] {
                return Err(Error::InvalidBricks {
                    axis,
                    reason: "the step's periodic box is not the one the bricks were made for",
                });
            }
        }
        Ok(())
    }

    /// Whether a halo `width` wide fits: [`Error::ReachTooLarge`] where it is more than half
    /// a brick on an axis cut into two or more bricks (or is not a finite width of 0 or
    /// more).
    ///
    /// Used by: `mpi/src/lib.rs` (the halo's width, each step).
    ///
    /// # Errors
    /// As above.
    pub fn check_halo_width(&self, width: f64) -> Result<(), Error> {
        for axis in 0..3 {
            let half_brick = self.width[axis] / 2.0;
            let cut = self.counts[axis] > 1;
            if !(width >= 0.0 && width.is_finite()) || (cut && width > half_brick) {
                return Err(Error::ReachTooLarge {
                    axis,
                    width,
                    half_brick,
                });
            }
        }
        Ok(())
    }

    /// The neighbour of `brick` one step along `axis` (`upward` or down), if it has one.
    fn neighbour(&self, brick: usize, axis: usize, upward: bool) -> Option<usize> {
        let count = self.counts[axis];
        let mut coordinates = self.coordinates(brick);
        let k = coordinates[axis];
        let wraps = self.period[axis].is_some();
        coordinates[axis] = match (upward, wraps) {
            _ if count == 1 => return None,
            (true, _) if k + 1 < count => k + 1,
            (true, true) => 0,
            (false, _) if k > 0 => k - 1,
            (false, true) => count - 1,
            _ => return None,
        };
        Some(self.index(coordinates))
    }

    /// The stage of the halo exchange along `axis` of `brick` (see the module's rules): of
    /// the bodies it holds, whose centres are `centers` (owned, and received along the
    /// earlier axes), which go to its lower neighbour (centre within `width` above the
    /// brick's lower face) and which to its upper one (within `width` below its upper face).
    ///
    /// Used by: `docs/scale_out.md`, `docs/architecture.md` ("The paths"), `mpi/src/lib.rs` (the
    /// halo exchange, axis by axis).
    ///
    /// # Panics
    /// If `brick` is not below [`len`](Self::len), `axis` is not 0, 1 or 2, or there are
    /// 2³² centres or more.
    #[must_use]
    pub fn halo_sends(&self, brick: usize, axis: usize, width: f64, centers: &[Vec3]) -> HaloSends {
        let k = self.coordinates(brick)[axis];
        let (lower_face, upper_face) = (self.face(axis, k), self.face(axis, k + 1));
        let select = |near: &dyn Fn(f64) -> bool| -> Vec<u32> {
            let indices = 0..u32::try_from(centers.len()).expect("fewer than 2^32 centres");
            indices
                .filter(|&index| near(self.wrapped(axis, centers[index as usize][axis])))
                .collect()
        };
        HaloSends {
            lower: self
                .neighbour(brick, axis, false)
                .map(|to| (to, select(&|c| c < lower_face + width))),
            upper: self
                .neighbour(brick, axis, true)
                .map(|to| (to, select(&|c| c >= upper_face - width))),
        }
    }
}

/// The largest `radius + |displacement|` of `bodies` (in f64; 0 for none): a brick's share of
/// the step's reach. The step's is the largest over all bricks.
///
/// Used by: `mpi/src/lib.rs` (each rank's share of the reach), the [module](self)'s example.
#[must_use]
pub fn largest_reach<B>(bodies: &[B]) -> f64
where
    B: Copy + Into<MovingSphere>,
{
    bodies
        .iter()
        .map(|&body| {
            let body: MovingSphere = body.into();
            f64::from(body.radius) + body.displacement.as_dvec3().length()
        })
        .fold(0.0, f64::max)
}

/// The halo's width for a step whose largest `radius + |displacement|` over all bodies is
/// `largest` (see the module's rules): `2 × largest × (1 + 2^-8)`.
///
/// Used by: `mpi/src/lib.rs` (the halo's width, each step), the [module](self)'s example.
#[must_use]
pub fn halo_width(largest: f64) -> f64 {
    2.0 * largest * (1.0 + HALO_MARGIN)
}

/// Bodies a brick holds, each with its global index and, where the step has collision
/// groups, its groups (empty where it has none).
///
/// Used by: `mpi/src/lib.rs` (a rank's owned bodies and its halo), the [module](self)'s example.
#[derive(Copy, Clone, Debug)]
pub struct Local<'a, B> {
    /// The bodies.
    pub bodies: &'a [B],
    /// Each body's global index, its index in the one process's bodies.
    pub global: &'a [u32],
    /// Each body's collision groups; empty for none, in both the owned bodies and the halo.
    pub groups: &'a [CollisionGroups],
}

impl<B> Local<'_, B> {
    /// Whether the global indices are one a body ([`Error::BrickBodies`] if not), and the
    /// groups one a body where the step has them (`grouped`) and none where it has not
    /// ([`Error::GroupsLength`] if not).
    ///
    /// Used by: `mpi/src/lib.rs` (a rank's bodies checked before each step).
    ///
    /// # Errors
    /// As above.
    pub fn check_lengths(&self, grouped: bool) -> Result<(), Error> {
        let bodies = self.bodies.len();
        if self.global.len() != bodies {
            return Err(Error::BrickBodies {
                reason: "global indices not one a body",
            });
        }
        let groups = if grouped { bodies } else { 0 };
        if self.groups.len() != groups {
            return Err(Error::GroupsLength {
                groups: self.groups.len(),
                bodies,
            });
        }
        Ok(())
    }
}

/// The step's answers a brick owns ([`BrickStep::find`]), with global indices.
///
/// Used by: `mpi/src/lib.rs` (what `MpiStep::find` returns), `mpi/examples/gas_across_ranks.rs`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OwnedAnswers {
    /// Every contact between two bodies whose lower global index the brick owns, as one
    /// process's [`Contacts::contacts`](crate::Contacts::contacts) has it (in its order: by
    /// time, then by the pair).
    pub contacts: Vec<Contact>,
    /// Each owned body's earliest contact with a body or a wall, in the order the owned
    /// bodies were given, as one process's
    /// [`Contacts::earliest_impacts`](crate::Contacts::earliest_impacts) has it.
    pub earliest: Vec<Option<EarliestImpact>>,
    /// Each owned body's earliest wall (empty where the step has no walls), as one process's
    /// [`Contacts::earliest_walls`](crate::Contacts::earliest_walls) has it.
    pub walls: Vec<Option<Contact>>,
}

/// A brick's step, made once and run every step: its bodies in global order, swept by a
/// [`ContactFinder`], the answers it owns given back with global indices.
///
/// Used by: `docs/scale_out.md`, `mpi/src/lib.rs` (each rank's step), the [module](self)'s example.
#[derive(Debug, Default)]
pub struct BrickStep {
    finder: ContactFinder,
    /// The brick's bodies by global index: (global index, owned, where in the given ones).
    order: Vec<(u32, bool, usize)>,
    bodies: Vec<MovingSphere>,
    groups: Vec<CollisionGroups>,
    /// Each owned body's place among the bodies swept.
    owned_at: Vec<u32>,
}

impl BrickStep {
    /// A brick's step with no bodies yet.
    ///
    /// Used by: `mpi/src/lib.rs` (each rank's step).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The step's answers that the brick owns, from its `owned` bodies and its `halo` (see
    /// the module's rules), against `walls`, with `options` (whose periodic box is the
    /// global one). A body both owned and in the halo, or twice in the halo, is swept once:
    /// its copies must be the same bits and groups (unshifted; a code's own ghosts that are
    /// shifted periodic images must be given unshifted).
    ///
    /// Used by: `mpi/src/lib.rs` (each rank's step: what `MpiStep::find` returns).
    ///
    /// # Errors
    /// [`Error::BrickBodies`] where a [`Local`]'s global indices are not one a body, a global
    /// index is owned twice, or two copies of one global index are not the same body (bits
    /// and groups); [`Error::GroupsLength`] where either [`Local`] has groups
    /// and one's are not one a body; otherwise as [`ContactFinder::find_with_walls`], an
    /// error that names a body naming it by its global index.
    pub fn find<B>(
        &mut self,
        owned: Local<'_, B>,
        halo: Local<'_, B>,
        walls: &[Wall],
        options: SweepOptions,
    ) -> Result<OwnedAnswers, Error>
    where
        B: Copy + Into<MovingSphere>,
    {
        let grouped = !owned.groups.is_empty() || !halo.groups.is_empty();
        for local in [&owned, &halo] {
            local.check_lengths(grouped)?;
        }
        // Every body once, by global index, an owned one before a halo copy of it.
        self.order.clear();
        self.order.extend(
            owned
                .global
                .iter()
                .enumerate()
                .map(|(at, &global)| (global, true, at)),
        );
        self.order.extend(
            halo.global
                .iter()
                .enumerate()
                .map(|(at, &global)| (global, false, at)),
        );
        self.order
            .sort_unstable_by_key(|&(global, owned, at)| (global, !owned, at));
        if self.order.windows(2).any(|w| w[0].0 == w[1].0 && w[1].1) {
            return Err(Error::BrickBodies {
                reason: "a global index owned twice",
            });
        }
        // Copies of one body (owned and in the halo, or twice in the halo) are the same bits;
        // two bodies under one index (each rank numbering its own from 0, say) would lose one
        // of them and its contacts without a word.
        let copy = |&(_, is_owned, at): &(u32, bool, usize)| {
            let local = if is_owned { &owned } else { &halo };
            let body: MovingSphere = local.bodies[at].into();
            let groups = grouped.then(|| local.groups[at].bits());
            (
                body.center.to_array().map(f32::to_bits),
                body.radius.to_bits(),
                body.displacement.to_array().map(f32::to_bits),
                groups,
            )
        };
        if self
            .order
            .windows(2)
            .any(|w| w[0].0 == w[1].0 && copy(&w[0]) != copy(&w[1]))
        {
            return Err(Error::BrickBodies {
                reason: "one global index for two different bodies",
            });
        }
        self.order.dedup_by_key(|&mut (global, _, _)| global);
        self.bodies.clear();
        self.groups.clear();
        self.owned_at.clear();
        self.owned_at.resize(owned.bodies.len(), 0);
        for (place, &(_, is_owned, at)) in self.order.iter().enumerate() {
            let local = if is_owned { &owned } else { &halo };
            self.bodies.push(local.bodies[at].into());
            if grouped {
                self.groups.push(local.groups[at]);
            }
            if is_owned {
                self.owned_at[at] = place as u32;
            }
        }
        self.finder.set_groups(&self.groups);
        // An error names a body by its global index, not by its place in the brick's order.
        let contacts = self
            .finder
            .find_with_walls(&self.bodies, walls, options)
            .map_err(|error| error.renumber_body(|place| self.order[place].0 as usize))?;
        let global = |place: u32| self.order[place as usize].0;
        let global_partner = |partner: Partner| match partner {
            Partner::Body { index, image } => Partner::Body {
                index: global(index),
                image,
            },
            wall @ Partner::Wall { .. } => wall,
        };
        let to_global = |contact: &Contact| Contact {
            body: global(contact.body),
            partner: global_partner(contact.partner),
            impact: contact.impact,
        };
        let answers = OwnedAnswers {
            contacts: contacts
                .contacts()
                .iter()
                .filter(|contact| self.order[contact.body as usize].1)
                .map(to_global)
                .collect(),
            earliest: {
                let earliest = contacts.earliest_impacts();
                self.owned_at
                    .iter()
                    .map(|&place| {
                        earliest
                            .get(place as usize)
                            .copied()
                            .flatten()
                            .map(|impact| EarliestImpact {
                                partner: global_partner(impact.partner),
                                ..impact
                            })
                    })
                    .collect()
            },
            walls: if contacts.earliest_walls().is_empty() {
                Vec::new()
            } else {
                self.owned_at
                    .iter()
                    .map(|&place| contacts.earliest_walls()[place as usize].map(|c| to_global(&c)))
                    .collect()
            },
        };
        Ok(answers)
    }
}
