//! A body's next event and its plan: the records each body's plan holds and the queue
//! orders (the loop's operations on them are plans.rs's).

use std::cmp::Ordering;

/// What a body's next event is: a pair, a wall, leaving its skin (the pairs must then be
/// asked for again), or nothing (it is at rest, no partner coming).
#[derive(Copy, Clone, Debug, PartialEq)]
pub(super) enum Kind {
    /// With body `other`, predicted when `other` had collided `count` times: outdated if it
    /// has collided since.
    Pair { other: u32, count: u64 },
    /// With wall `wall` (its point and normal are found again when it comes: the body's
    /// motion is the same, so its sweep too).
    Wall { wall: u32 },
    /// The body leaves its skin: every pair is asked for again.
    Skin,
    /// In a periodic box, a partner's nearest image may change from now on: the body is
    /// predicted again (from the image nearest then).
    Recheck,
    /// In a periodic box with walls, the body crosses a face of the box: its image in the
    /// box jumps, and its walls are swept again from there.
    Wrap,
    /// Nothing.
    Nothing,
}

impl Kind {
    /// Ties in time go first to what only looks again (a recheck of an image, a skin, a
    /// wrap: each may find an impact at that very instant), then to pairs, then walls, then
    /// by index, so that the order of the events depends on nothing but the bodies, not on
    /// when the loop learnt of them.
    pub(super) fn rank(&self) -> (u8, u32) {
        match *self {
            Self::Recheck => (0, 0),
            Self::Skin => (1, 0),
            Self::Wrap => (2, 0),
            Self::Pair { other, .. } => (3, other),
            Self::Wall { wall, .. } => (4, wall),
            Self::Nothing => (5, 0),
        }
    }
}

/// A body's next event: the earliest of its collisions with its partners, its walls and its
/// leaving the skin.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(super) struct Next {
    pub(super) time: f64,
    pub(super) kind: Kind,
}

impl Next {
    pub(super) const NOTHING: Self = Self {
        time: f64::INFINITY,
        kind: Kind::Nothing,
    };

    pub(super) fn is_before(&self, other: &Self) -> bool {
        self.time
            .total_cmp(&other.time)
            .then_with(|| self.kind.rank().cmp(&other.kind.rank()))
            == Ordering::Less
    }
}

/// What the loop plans for a body, in one cache line (written together when the body is
/// predicted): its next event; the earliest of its pairs' events, which may come after it
/// (it stands while the partner has not collided, when the skin is renewed); and when its
/// skin was centred.
#[derive(Copy, Clone, Debug, PartialEq)]
#[repr(C, align(64))]
pub(super) struct Plan {
    pub(super) next: Next,
    pub(super) pair: Next,
    pub(super) skin_time: f64,
}

// Two events (24 bytes each: a time and a kind) and a time fill one line.
const _: () = assert!(std::mem::size_of::<Plan>() == 64);

impl Plan {
    pub(super) const NONE: Self = Self {
        next: Next::NOTHING,
        pair: Next::NOTHING,
        skin_time: 0.0,
    };
}
