//! The records a user receives from a query, apart from the data contract (`src/layout.rs`)
//! that the shaders and their twins share: [`TimeOfImpact`], what the times-only paths
//! return for a pair, and [`EarliestImpact`], what a body meets first in a step. (The pair
//! query's [`Impact`](crate::Impact) is in `src/geometry.rs`, beside the bodies.)

use bytemuck::{Pod, Zeroable};

use crate::geometry::{ImpactStatus, Partner};
use crate::layout::{
    EARLIEST_BODY, EARLIEST_WALL, EarliestRecord, STATUS_CONTACT, STATUS_OVERLAPPING,
    TIME_MISS_BITS, TIME_OVERLAPPING,
};

/// The time of first contact of one pair, as the times-only paths report it: a contact at a
/// time in [0, 1], an overlap at t = 0, or a miss. 4 bytes, the layout of the GPU's
/// times-only output (an `f32`: [`TIME_MISS_BITS`](crate::low_level::layout::TIME_MISS_BITS), +infinity, for a miss,
/// [`TIME_OVERLAPPING`](crate::low_level::layout::TIME_OVERLAPPING) for an overlap, else the time). Every bit pattern reads as one of the
/// three (NaN as a miss), so it may be cast from a GPU buffer with bytemuck. Read it with
/// [`TimeOfImpact::get`], [`TimeOfImpact::time`] or [`TimeOfImpact::status`].
///
/// Used by: `docs/guide.md` ("The fast batch and `World`"), `examples/arrays.rs`,
/// `python/src/step.rs`.
#[repr(transparent)]
#[derive(Copy, Clone, Debug, PartialEq, Pod, Zeroable)]
pub struct TimeOfImpact(pub(crate) f32);

impl Default for TimeOfImpact {
    fn default() -> Self {
        Self::MISS
    }
}

impl TimeOfImpact {
    /// The bodies stay apart for the whole step.
    ///
    /// Used by: `docs/guide.md` ("The fast batch and `World`").
    pub const MISS: Self = Self(f32::from_bits(TIME_MISS_BITS));
    /// The bodies already overlap at t = 0.
    ///
    /// Used by: `docs/guide.md` ("The fast batch and `World`").
    pub const OVERLAPPING: Self = Self(TIME_OVERLAPPING);

    /// A contact at `time`, or `None` unless `time` is in [0, 1].
    ///
    /// Used by: `docs/guide.md` ("The fast batch and `World`").
    #[must_use]
    pub fn contact(time: f32) -> Option<Self> {
        (0.0..=1.0).contains(&time).then_some(Self(time))
    }

    /// The time and status, or `None` for a miss. An overlap reports t = 0.
    ///
    /// Used by: `docs/guide.md` ("The fast batch and `World`"), `examples/fast_path.rs`,
    /// `examples/compare.rs`, `benches/sweep.rs`.
    #[must_use]
    pub fn get(self) -> Option<(f32, ImpactStatus)> {
        if self.0 < 0.0 {
            Some((0.0, ImpactStatus::Overlapping))
        } else if self.0 <= 1.0 {
            Some((self.0, ImpactStatus::Contact))
        } else {
            None
        }
    }

    /// The time of impact (0 for an overlap), or `None` for a miss.
    ///
    /// Used by: `docs/guide.md` ("The fast batch and `World`").
    #[must_use]
    pub fn time(self) -> Option<f32> {
        self.get().map(|(time, _)| time)
    }

    /// The status, or `None` for a miss.
    ///
    /// Used by: `docs/guide.md` ("The fast batch and `World`").
    #[must_use]
    pub fn status(self) -> Option<ImpactStatus> {
        self.get().map(|(_, status)| status)
    }

    /// Whether the pair touches or overlaps during the step.
    ///
    /// Used by: `docs/guide.md` ("The fast batch and `World`").
    #[must_use]
    pub fn is_hit(self) -> bool {
        self.0 <= 1.0
    }

    /// The raw encoding, for bit-for-bit comparisons inside the crate.
    #[cfg(test)]
    pub(crate) fn to_bits(self) -> u32 {
        self.0.to_bits()
    }
}

/// What a body meets first in the step, as the GPU step's
/// [`EarliestRecord`](crate::low_level::layout::EarliestRecord) says it ([`Contacts::earliest_impacts`](crate::Contacts::earliest_impacts)
/// gives it on both steps).
///
/// Used by: `docs/step.md` (`Contacts::earliest_impacts`), `examples/resident_step.rs` (its check
/// against the CPU step), `mpi/examples/gas_across_ranks.rs`.
#[derive(Copy, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EarliestImpact {
    /// Fraction of the step at first contact (0 for an overlap at t = 0).
    pub time_of_impact: f32,
    /// Touching then, or overlapping at t = 0.
    pub status: ImpactStatus,
    /// The other body or the wall.
    pub partner: Partner,
}

impl EarliestRecord {
    /// What the record says, or `None` for a body that meets nothing ([`EARLIEST_NONE`](crate::low_level::layout::EARLIEST_NONE), or
    /// a record of no known kind or status, or whose time is not in [0, 1]: NaN included).
    #[must_use]
    pub fn decode(&self) -> Option<EarliestImpact> {
        if !(0.0..=1.0).contains(&self.time_of_impact) {
            return None;
        }
        let status = match self.status {
            STATUS_CONTACT => ImpactStatus::Contact,
            STATUS_OVERLAPPING => ImpactStatus::Overlapping,
            _ => return None,
        };
        let partner = match self.kind {
            EARLIEST_BODY => Partner::Body {
                index: self.other,
                image: self.image,
            },
            EARLIEST_WALL => Partner::Wall { index: self.other },
            _ => return None,
        };
        Some(EarliestImpact {
            time_of_impact: self.time_of_impact,
            status,
            partner,
        })
    }
}
