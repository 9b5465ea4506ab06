//! The data contract: Rust copies of the structs and constants of `shaders/shared.wgsl`,
//! byte for byte. Every stage's shader, its CPU twin, the batched CPU paths and validation
//! use these; `tests/shaders.rs` checks each struct's size and field offsets and each
//! constant's value against the WGSL with naga, and the size assertions below fail the build
//! if a struct changes size.
//!
//! A caller that keeps its own GPU buffers for a stage (see
//! [`SweepStage`](crate::low_level::SweepStage)) writes bodies as [`BodyRecord`], pairs as
//! `[u32; 2]` and reads [`ImpactRecord`]s.

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use crate::geometry::{Impact, ImpactStatus, MovingSphere, Wall};
use crate::groups::CollisionGroups;
use crate::options::SweepOptions;

/// The bytes of `count` records of `T`: every buffer's size and every byte total is taken
/// from its record's type by this (as vello's `BufferSize<T>`), not written as a number.
#[cfg(feature = "gpu")]
#[must_use]
pub(crate) const fn bytes_of<T>(count: u64) -> u64 {
    size_of::<T>() as u64 * count
}

/// `BodyRecord`: one moving sphere (a circle has z = 0), 32 bytes (a WGSL `vec3<f32>` is
/// 16-aligned).
///
/// Aligned to 32 bytes on the host so that the CPU's fast batch fetches a body with one
/// aligned AVX load; the alignment adds no padding, so the bytes the GPU sees are unchanged.
#[repr(C, align(32))]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct BodyRecord {
    /// Centre at t = 0.
    pub center: [f32; 3],
    /// Radius.
    pub radius: f32,
    /// Displacement over the step.
    pub displacement: [f32; 3],
    /// The body's collision groups for the step's broad phase, as the **complement** of
    /// [`CollisionGroups::bits`], so that 0 is [`CollisionGroups::ALL`] (every pair
    /// interacts, as the field's earlier reservation told callers to write). Set it with
    /// [`BodyRecord::with_groups`]; read it with [`BodyRecord::groups`]. Only the steps'
    /// broad phases read it (not the sweeps of explicit pairs, nor the walls).
    pub groups: u32,
}

/// `ImpactRecord`: what the sweep writes for one pair, 32 bytes.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct ImpactRecord {
    /// Contact point on the first body's surface.
    pub point: [f32; 3],
    /// Fraction of the step at first contact.
    pub time_of_impact: f32,
    /// Unit normal from the first body towards the second.
    pub normal: [f32; 3],
    /// One of [`STATUS_MISS`], [`STATUS_CONTACT`], [`STATUS_OVERLAPPING`].
    pub status: u32,
}

/// `SweepParams`: the options of one sweep as the shader reads them (a uniform block),
/// 32 bytes. Made from [`SweepOptions`] by [`SweepParams::new`].
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct SweepParams {
    /// Per axis: the period of a periodic box, 0 where the axis is not periodic.
    pub period: [f32; 3],
    /// [`FLAG_PERIODIC`] and [`FLAG_SEPARATING_MISSES`] bits.
    pub flags: u32,
    /// Per axis: `1 / period`, 0 where the axis is not periodic.
    pub inverse_period: [f32; 3],
    /// Pairs the bound buffers hold: the most one dispatch may sweep.
    pub pair_capacity: u32,
}

/// `SweepDispatch`: how many pairs one dispatch sweeps and the workgroups it runs, 32 bytes.
/// The first three words are the arguments of an indirect dispatch.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Eq, Default)]
pub struct SweepDispatch {
    /// Workgroups along x.
    pub workgroups_x: u32,
    /// Workgroups along y (more than 1 only when x would exceed
    /// [`MAX_WORKGROUPS_PER_DIMENSION`]).
    pub workgroups_y: u32,
    /// Workgroups along z (always 1).
    pub workgroups_z: u32,
    /// Pairs swept: the count asked for, capped at the capacity.
    pub pair_count: u32,
    /// The count asked for.
    pub requested_pairs: u32,
    /// 1 when `requested_pairs` exceeded the capacity and only `pair_count` pairs were swept.
    pub overflowed: u32,
    /// Padding to 32 bytes.
    pub _pad0: u32,
    /// Padding to 32 bytes.
    pub _pad1: u32,
}

/// `StepParams`: the parameters of one step of
/// [`ContactPipeline`](crate::gpu::ContactPipeline) (a uniform block), 80 bytes: the options
/// as [`SweepParams`] has them, the body count, the broad phase's local frame, the grid of the
/// Morton codes and the capacities of the counted buffers.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct StepParams {
    /// Per axis: the period of a periodic box, 0 where the axis is not periodic.
    pub period: [f32; 3],
    /// [`FLAG_PERIODIC`] and [`FLAG_SEPARATING_MISSES`] bits.
    pub flags: u32,
    /// Per axis: `1 / period`, 0 where the axis is not periodic.
    pub inverse_period: [f32; 3],
    /// Bodies of the step.
    pub body_count: u32,
    /// The origin of the broad phase's local frame (see [`StepParams::new`]): the swept boxes
    /// are made about it, so that their corners round at the scene's own size.
    pub origin: [f32; 3],
    /// Candidate pairs the pair and impact buffers hold.
    pub candidate_capacity: u32,
    /// The Morton grid's low corner, in the local frame: a box centre's cell is
    /// `(centre - morton_origin) · morton_scale`.
    pub morton_origin: [f32; 3],
    /// Contacts the contact buffers hold.
    pub contact_capacity: u32,
    /// The Morton grid's cells per unit length, per axis.
    pub morton_scale: [f32; 3],
    /// Saved queries each of the broad phase's two queues holds.
    pub continuation_capacity: u32,
}

/// `StepCounts`: what one step of [`StepStage`](crate::low_level::StepStage) counted, and whether
/// its outputs are whole, 48 bytes. The stage writes it on the device
/// ([`StepBuffers::counts`](crate::low_level::StepBuffers::counts)); a consumer pass recorded after
/// the step skips a step whose `valid` is 0, and the host that reads it back grows the buffers
/// ([`StepStage::grow`](crate::low_level::StepStage::grow)) and records the frame again.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Eq, Default)]
pub struct StepCounts {
    /// 1 when every count fitted its buffer and every query finished: the step's outputs are
    /// whole. 0 otherwise: they are partial and must not be applied.
    pub valid: u32,
    /// Bodies of the step.
    pub bodies: u32,
    /// Candidate pairs the broad phase found (counted past the capacity; modulo 2³²).
    pub candidates: u32,
    /// Contacts: the swept candidates that hit or overlap.
    pub contacts: u32,
    /// Bodies the step's buffers hold.
    pub body_capacity: u32,
    /// 1 when a candidate was counted past the capacity (also where the count wrapped).
    pub candidates_overflowed: u32,
    /// Queries still saved after the last resume dispatch.
    pub unfinished_queries: u32,
    /// 1 when a query was saved past a queue's capacity.
    pub saved_queries_overflowed: u32,
    /// 1 when the ordered contacts outgrew their buffer.
    pub contacts_overflowed: u32,
    /// 1 when a body of the step is one it cannot sweep (a centre, displacement or radius
    /// that is not finite, or a negative radius): the bodies on the device were not
    /// validated, and the step's answers are not applied.
    pub invalid_bodies: u32,
    /// Padding to 48 bytes.
    pub _pad1: u32,
    /// Padding to 48 bytes.
    pub _pad2: u32,
}

/// `WallRecord`: one static wall ([`Wall`]), 32 bytes. A segment keeps its two end points;
/// a plane a point of it and its unit normal (normalised on the host, in f64, so that every
/// path reads the same normal).
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct WallRecord {
    /// A segment's start, or a point of the plane.
    pub point: [f32; 3],
    /// [`WALL_SEGMENT`] or [`WALL_PLANE`].
    pub kind: u32,
    /// A segment's end, or the plane's unit normal (towards its free side).
    pub vector: [f32; 3],
    /// Padding to 32 bytes (write 0).
    pub _pad: u32,
}

/// `WallParams`: what the walls stage reads besides its buffers (a uniform block), 48 bytes:
/// the options as [`SweepParams`] has them, and the counts. Made by [`WallParams::new`].
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct WallParams {
    /// Per axis: the period of a periodic box, 0 where the axis is not periodic.
    pub period: [f32; 3],
    /// [`FLAG_PERIODIC`] and [`FLAG_SEPARATING_MISSES`] bits.
    pub flags: u32,
    /// Per axis: `1 / period`, 0 where the axis is not periodic.
    pub inverse_period: [f32; 3],
    /// Bodies to sweep: one invocation each.
    pub body_count: u32,
    /// Walls each body is swept against.
    pub wall_count: u32,
    /// Padding to 48 bytes.
    pub _pad0: u32,
    /// Padding to 48 bytes.
    pub _pad1: u32,
    /// Padding to 48 bytes.
    pub _pad2: u32,
}

/// `WallContactRecord`: a body's earliest impact on a wall, 48 bytes: the sweep's record of
/// the body against the wall (the body first, the wall second: the normal points from the
/// body's centre towards the wall) and the wall's index.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct WallContactRecord {
    /// The impact, or a record with [`STATUS_MISS`] for a body that meets no wall.
    pub impact: ImpactRecord,
    /// The wall's index in the step's walls (the lowest among walls met at the same time).
    pub wall: u32,
    /// Padding to 48 bytes.
    pub _pad0: u32,
    /// Padding to 48 bytes.
    pub _pad1: u32,
    /// Padding to 48 bytes.
    pub _pad2: u32,
}

impl From<&Wall> for WallRecord {
    /// The record of a wall; a plane's normal is normalised in f64 (a zero normal gives
    /// NaN, which every path reads as a miss: [`crate::low_level::validate_walls`] rejects it first).
    fn from(wall: &Wall) -> Self {
        match *wall {
            Wall::Segment { start, end } => Self {
                point: start.to_array(),
                kind: WALL_SEGMENT,
                vector: end.to_array(),
                _pad: 0,
            },
            Wall::Plane { point, normal } => Self {
                point: point.to_array(),
                kind: WALL_PLANE,
                vector: (normal.as_dvec3() / normal.as_dvec3().length())
                    .as_vec3()
                    .to_array(),
                _pad: 0,
            },
        }
    }
}

impl WallParams {
    /// The parameters of a sweep of `body_count` bodies against `wall_count` walls.
    #[must_use]
    pub fn new(options: &SweepOptions, body_count: u32, wall_count: u32) -> Self {
        let sweep = SweepParams::new(options, 0);
        Self {
            period: sweep.period,
            flags: sweep.flags,
            inverse_period: sweep.inverse_period,
            body_count,
            wall_count,
            ..Self::default()
        }
    }
}

/// `KeyValue`: a sort key and what it sorts, 8 bytes (lampshade's key-value record).
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Eq, Default)]
pub struct KeyValue {
    /// The key.
    pub key: u32,
    /// A body's or a contact's index.
    pub value: u32,
}

/// `ContactRecord`: one contact of the step as the GPU writes it, 64 bytes.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct ContactRecord {
    /// The two bodies, the lower index first.
    pub pair: [u32; 2],
    /// Padding to the shader's 16-byte alignment.
    pub _pad0: [u32; 2],
    /// The image of the second body the first met, in periods per axis.
    pub image: [i32; 3],
    /// Padding to the shader's 16-byte alignment.
    pub _pad1: u32,
    /// The sweep's record of the pair.
    pub impact: ImpactRecord,
}

/// `EarliestRecord`: a body's earliest contact in the step, found without ordering the
/// contacts (the `earliest_*` passes of `shaders/contacts.wgsl`), 32 bytes. All zero
/// ([`EARLIEST_NONE`]) for a body that meets nothing, so that clearing the buffer initialises
/// it. Read it with [`EarliestRecord::decode`].
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct EarliestRecord {
    /// Fraction of the step at first contact (0 for an overlap at t = 0).
    pub time_of_impact: f32,
    /// The partner body's index, or the wall's.
    pub other: u32,
    /// [`STATUS_CONTACT`] or [`STATUS_OVERLAPPING`], as [`ImpactRecord::status`].
    pub status: u32,
    /// [`EARLIEST_NONE`], [`EARLIEST_BODY`] or [`EARLIEST_WALL`].
    pub kind: u32,
    /// For a body, the image of the partner this body met, in periods per axis: the partner's
    /// centre taken at `center - image · period` ([`ContactRecord::image`] as the first body
    /// of the pair sees it, negated for the second). 0 for a wall.
    pub image: [i32; 3],
    /// Padding to 32 bytes.
    pub _pad: u32,
}

/// `EARLIEST_NONE`: an [`EarliestRecord`] of a body that meets nothing (the all-zero record).
pub const EARLIEST_NONE: u32 = 0;
/// `EARLIEST_BODY`: an [`EarliestRecord`] whose body meets another body first.
pub const EARLIEST_BODY: u32 = 1;
/// `EARLIEST_WALL`: an [`EarliestRecord`] whose body meets a wall first.
pub const EARLIEST_WALL: u32 = 2;
/// `WALL_SEGMENT`: a [`WallRecord`] of a segment.
pub const WALL_SEGMENT: u32 = 0;
/// `WALL_PLANE`: a [`WallRecord`] of a plane.
pub const WALL_PLANE: u32 = 1;
/// `STATUS_MISS`: the bodies stay apart for the whole step.
pub const STATUS_MISS: u32 = 0;
/// `STATUS_CONTACT`: the bodies first touch at the record's time.
pub const STATUS_CONTACT: u32 = 1;
/// `STATUS_OVERLAPPING`: the bodies overlap at t = 0.
pub const STATUS_OVERLAPPING: u32 = 2;
/// `FLAG_PERIODIC`: relative positions wrap to the nearest image in the box of `period`.
pub const FLAG_PERIODIC: u32 = 1;
/// `FLAG_SEPARATING_MISSES`: a pair touching or overlapping at t = 0 while separating is a
/// miss (see [`SweepOptions::stop_at_penetration`]).
pub const FLAG_SEPARATING_MISSES: u32 = 2;
/// `WORKGROUP_SIZE`: invocations (pairs) per workgroup of every stage.
pub const WORKGROUP_SIZE: u32 = 64;
/// `MAX_WORKGROUPS_PER_DIMENSION`: the most workgroups per dimension WebGPU guarantees.
pub const MAX_WORKGROUPS_PER_DIMENSION: u32 = 65535;
/// `TIME_MISS_BITS`: the bits of [`TimeOfImpact::MISS`](crate::TimeOfImpact::MISS) (+infinity) in the times-only
/// output.
pub const TIME_MISS_BITS: u32 = 0x7f80_0000;
/// `TIME_OVERLAPPING`: [`TimeOfImpact::OVERLAPPING`](crate::TimeOfImpact::OVERLAPPING)'s value in the times-only output.
pub const TIME_OVERLAPPING: f32 = -1.0;
/// `NO_TOUCH`: what `first_touch` ([`crate::low_level::sweep::first_touch`]) answers for a point
/// that never comes within reach in the step (any value above 1 would do).
pub const NO_TOUCH: f32 = 2.0;
/// `MIN_NORMAL`: the smallest normal f32; below it a squared length has no usable direction.
pub const MIN_NORMAL: f32 = f32::MIN_POSITIVE;
/// `LIFT_LOG2`: a component of a pair's inputs whose operands all lie below 2⁻⁴⁷ (exponent
/// fields below [`TINY_EXPONENT`]) is multiplied by 2^`LIFT_LOG2` from its bits before any
/// float arithmetic reads it, so that a device that flushes subnormal values to zero (WGSL
/// allows it) sees none: f32's subnormal spacing 2⁻¹⁴⁹ lifts to 2⁻¹²⁶, the smallest normal.
pub const LIFT_LOG2: u32 = 23;
/// `SMALL_DIRECTION`: 2⁻⁵⁰. A vector whose largest component lies below it is scaled by a
/// power of two before it is normalised: the components a flushing device loses from its
/// squared length (each square below `MIN_NORMAL` = 2⁻¹²⁶, three at most) are then below 2⁻²⁴
/// of it, within a rounding.
pub const SMALL_DIRECTION: f32 = 8.881_784e-16;
/// `SUBNORMAL_MARGIN`: 2⁻¹²¹, what every broad-phase box is widened by beyond its relative
/// margin, so that the operations a device that flushes subnormal values gets wrong (by less
/// than 2⁻¹²⁶ each) cannot drop a candidate.
pub const SUBNORMAL_MARGIN: f32 = 3.761_582e-37;
/// `TINY_EXPONENT`: the exponent field below which a component is lifted by [`LIFT_LOG2`]
/// (magnitudes below 2^(80 − 127) = 2⁻⁴⁷). `TINY_EXPONENT + LIFT_LOG2 = 103`: a lifted
/// component that the pair's rescale takes below f32's normal range was below 2⁻¹⁵⁰ there
/// before the lift, zero on every device.
pub const TINY_EXPONENT: u32 = 80;
/// `MORTON_BITS`: bits per axis of the broad phase's Morton codes (3 × 21 = 63).
pub const MORTON_BITS: u32 = 21;
/// `LEAF`: the bit of a broad-phase tree's child reference that marks a leaf.
pub const LEAF: u32 = 1 << 31;

const _: () = assert!(size_of::<BodyRecord>() == 32);
const _: () = assert!(size_of::<ImpactRecord>() == 32);
const _: () = assert!(size_of::<SweepParams>() == 32);
const _: () = assert!(size_of::<SweepDispatch>() == 32);
const _: () = assert!(size_of::<StepParams>() == 80);
const _: () = assert!(size_of::<StepCounts>() == 48);
const _: () = assert!(size_of::<KeyValue>() == 8);
const _: () = assert!(size_of::<WallRecord>() == 32);
const _: () = assert!(size_of::<WallParams>() == 48);
const _: () = assert!(size_of::<WallContactRecord>() == 48);
const _: () = assert!(size_of::<ContactRecord>() == 64);
const _: () = assert!(size_of::<EarliestRecord>() == 32);

impl From<MovingSphere> for BodyRecord {
    fn from(b: MovingSphere) -> Self {
        Self {
            center: b.center.to_array(),
            radius: b.radius,
            displacement: b.displacement.to_array(),
            groups: 0,
        }
    }
}

impl BodyRecord {
    /// The record with its collision groups set to `groups` (stored as their complement:
    /// see [`BodyRecord::groups`](Self#structfield.groups)). For a caller that writes its
    /// own bodies' buffer for [`StepStage`](crate::low_level::StepStage).
    ///
    /// # Example
    /// ```
    /// use sweepcast::glam::Vec3;
    /// use sweepcast::low_level::layout::BodyRecord;
    /// use sweepcast::{CollisionGroups, MovingSphere};
    ///
    /// let bullet = CollisionGroups::new(0b01, 0b10);
    /// let record = BodyRecord::from(MovingSphere::new(Vec3::ZERO, 1.0, Vec3::X));
    /// assert_eq!(record.groups(), CollisionGroups::ALL); // a record's word 0
    /// assert_eq!(record.with_groups(bullet).groups(), bullet);
    /// ```
    #[must_use]
    pub const fn with_groups(mut self, groups: CollisionGroups) -> Self {
        self.groups = !groups.bits();
        self
    }

    /// The record's collision groups.
    #[must_use]
    pub const fn groups(&self) -> CollisionGroups {
        CollisionGroups::from_bits(!self.groups)
    }
}

impl SweepParams {
    /// The parameters of [`SweepOptions::DEFAULT`] (no flags, no box; no capacity).
    pub const DEFAULT: Self = Self {
        period: [0.0; 3],
        flags: 0,
        inverse_period: [0.0; 3],
        pair_capacity: 0,
    };

    /// The shader's view of `options`, for buffers of `pair_capacity` pairs.
    #[must_use]
    pub fn new(options: &SweepOptions, pair_capacity: u32) -> Self {
        let mut flags = 0;
        if !options.stop_at_penetration {
            flags |= FLAG_SEPARATING_MISSES;
        }
        let (period, inverse_period) = match options.periodic_box {
            Some(periodic_box) => {
                flags |= FLAG_PERIODIC;
                (
                    periodic_box.shader_period(),
                    periodic_box.shader_inverse_period(),
                )
            }
            None => (Vec3::ZERO, Vec3::ZERO),
        };
        Self {
            period: period.to_array(),
            flags,
            inverse_period: inverse_period.to_array(),
            pair_capacity,
        }
    }
}

impl SweepDispatch {
    /// The dispatch of `pair_count` pairs: [`WORKGROUP_SIZE`] pairs a workgroup, along x up
    /// to [`MAX_WORKGROUPS_PER_DIMENSION`] and then along y (the host's copy of the shader's
    /// `prepare_indirect`).
    #[must_use]
    pub fn new(pair_count: u32) -> Self {
        let workgroups = pair_count.div_ceil(WORKGROUP_SIZE);
        let workgroups_y = workgroups.div_ceil(MAX_WORKGROUPS_PER_DIMENSION);
        Self {
            workgroups_x: if workgroups_y > 1 {
                MAX_WORKGROUPS_PER_DIMENSION
            } else {
                workgroups
            },
            workgroups_y: workgroups_y.max(1),
            workgroups_z: 1,
            pair_count,
            requested_pairs: pair_count,
            overflowed: 0,
            _pad0: 0,
            _pad1: 0,
        }
    }
}

impl ImpactRecord {
    /// The user-facing impact, or `None` for a miss. The shortened displacements are formed
    /// here, on the host, from the bodies' displacements and the time of impact.
    #[must_use]
    pub fn to_impact(&self, a: &BodyRecord, b: &BodyRecord) -> Option<Impact> {
        self.impact_with(|| {
            (
                Vec3::from_array(a.displacement),
                Vec3::from_array(b.displacement),
            )
        })
    }

    /// [`ImpactRecord::to_impact`] with the two bodies' displacements from `displacements`,
    /// called only for a hit: a decoder that looks the bodies up reads none for a miss.
    pub(crate) fn impact_with(
        &self,
        displacements: impl FnOnce() -> (Vec3, Vec3),
    ) -> Option<Impact> {
        let status = match self.status {
            STATUS_CONTACT => ImpactStatus::Contact,
            STATUS_OVERLAPPING => ImpactStatus::Overlapping,
            _ => return None,
        };
        let t = self.time_of_impact;
        let (a, b) = displacements();
        Some(Impact {
            time_of_impact: t,
            point: Vec3::from_array(self.point),
            normal: Vec3::from_array(self.normal),
            displacement_a: a * t,
            displacement_b: b * t,
            status,
        })
    }
}
