//! The periodic box as the loop uses it: nearest images (`Images`) and the wrap of a
//! position into the box (`wrap`).

use glam::DVec3;

/// Nearest images in a box: per axis the period and its inverse, 0 where the axis does not
/// wrap; whether any does, and half the smallest period.
#[derive(Copy, Clone, Debug)]
pub(super) struct Images {
    period: DVec3,
    inverse: DVec3,
    pub(super) wraps: bool,
    pub(super) half: f64,
}

impl Images {
    pub(super) fn new(period: DVec3) -> Self {
        let wraps = period.is_finite_mask();
        Self {
            period: DVec3::select(wraps, period, DVec3::ZERO),
            inverse: DVec3::select(wraps, period.recip(), DVec3::ZERO),
            wraps: wraps.any(),
            half: period.min_element() / 2.0,
        }
    }

    /// The whole periods to take from `offset` for its nearest image, `L round(s / L)`, the
    /// rounding done by adding and taking away 1.5 × 2⁵² (round to nearest, exact for
    /// quotients below 2⁵¹ periods, far beyond any offset of two bodies in the box or of a
    /// body from its skin's centre), with no call to a rounding function: one multiplication
    /// and three additions an axis.
    #[inline(always)]
    pub(super) fn shift(&self, offset: DVec3) -> DVec3 {
        DVec3::from_array(self.shift_each(offset.to_array()))
    }

    /// [`Images::shift`] on the axes one by one (for the lanes of [`predict`](super::predict)).
    #[inline(always)]
    pub(super) fn shift_each(&self, offset: [f64; 3]) -> [f64; 3] {
        const ROUND: f64 = 6_755_399_441_055_744.0;
        std::array::from_fn(|axis| {
            let quotient = offset[axis] * self.inverse[axis];
            debug_assert!(quotient.abs() < ROUND / 3.0);
            self.period[axis] * ((quotient + ROUND) - ROUND)
        })
    }

    /// `offset` at its nearest image.
    #[inline(always)]
    pub(super) fn nearest(&self, offset: DVec3) -> DVec3 {
        offset - self.shift(offset)
    }
}

/// `position` wrapped into the box of `period` (infinite where an axis does not wrap): a
/// period added or taken away where it is within one of the box (the usual case: two
/// comparisons an axis), else the remainder.
pub(super) fn wrap(position: DVec3, period: DVec3) -> DVec3 {
    let mut wrapped = position;
    for axis in 0..3 {
        let (x, period) = (position[axis], period[axis]);
        if (0.0..period).contains(&x) || !period.is_finite() {
            continue;
        }
        let shifted = if x < 0.0 { x + period } else { x - period };
        wrapped[axis] = if (0.0..period).contains(&shifted) {
            shifted
        } else {
            x.rem_euclid(period)
        };
    }
    wrapped
}
