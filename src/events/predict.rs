//! The event loop's pair predictions, a block of partners at a time: when two bodies touch
//! while approaching, from their motions (the algebra is documented at [`block`]).
//!
//! A body predicted again (after its impact, or when its event turned out outdated) is swept
//! against each of its partners, about ten in a dense gas, and this is most of what the loop
//! computes. So the partners' motions are gathered into one array per field (a structure of
//! arrays per block of [`LANES`]) and the algebra runs as straight-line code over `[f64; L]`,
//! which the compiler turns into SIMD instructions; the instruction set is chosen at run time
//! ([`Simd`]: AVX-512 or AVX on x86-64, else the build's own). A single pair is the same
//! code with one lane, so every prediction, whichever path made it, has the same bits: each
//! lane does the same operations in the same order (no fused multiply-adds: Rust never
//! contracts `a * b + c` on its own).

use super::{Images, Motion};
use crate::cpu::Simd;

/// What a pair's sweep found: an impact at a time, a time from which the pair must be
/// looked at again (a periodic box's nearest image may change), or neither.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(super) enum Prediction {
    Impact(f64),
    /// Looked at again after the square root of this, from the prediction's time (its
    /// square, so that the common case takes no square root).
    Recheck(f64),
    Never,
}

/// What a touching pair's approach (`s · w`) must pass, over its radius sum times the sum
/// of the two speeds (each as the sum of its components' magnitudes, at least its length):
/// 16 ε, above what rounding leaves of a perfectly inelastic impulse, so that such a pair,
/// resolved, is not met again at once. The loop's check of a response
/// (`still_approaching`) allows the same along the normal.
pub(super) const SETTLED: f64 = 16.0 * f64::EPSILON;

/// Partners per block: one 512-bit register of f64, or two 256-bit ones.
pub(super) const LANES: usize = 8;

/// What a body's partners give from a time on: the earliest impact (its time, and the
/// partner, the lowest of those tied; `u32::MAX` for none) and the square of the shortest
/// time after which an image must be looked at again (infinite for none).
#[derive(Copy, Clone, Debug, PartialEq)]
pub(super) struct Earliest {
    pub(super) time: f64,
    pub(super) partner: u32,
    pub(super) recheck: f64,
}

/// Body `index`'s earliest impact with `partners` from `now` on, and its earliest recheck,
/// with the widest instruction set of `simd`.
pub(super) fn earliest(
    simd: Simd,
    motions: &[Motion],
    images: &Images,
    index: usize,
    partners: &[u32],
    now: f64,
) -> Earliest {
    #[cfg(target_arch = "x86_64")]
    match simd {
        // SAFETY: `Simd::active` reports only what the CPU has (its `detected`).
        Simd::Avx512 => {
            return unsafe { x86::earliest_avx512(motions, images, index, partners, now) };
        }
        // SAFETY: as above; `Simd::Avx` means the CPU has AVX.
        Simd::Avx => return unsafe { x86::earliest_avx(motions, images, index, partners, now) },
        Simd::Portable => {}
    }
    let _ = simd;
    earliest_with(motions, images, index, partners, now)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Earliest, Images, Motion, earliest_with};

    /// [`super::earliest`] compiled with AVX (256-bit registers).
    ///
    /// # Safety
    /// The CPU must support AVX.
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn earliest_avx(
        motions: &[Motion],
        images: &Images,
        index: usize,
        partners: &[u32],
        now: f64,
    ) -> Earliest {
        earliest_with(motions, images, index, partners, now)
    }

    /// [`super::earliest`] compiled with AVX-512 (F and VL): 512-bit registers, 32 of them.
    ///
    /// # Safety
    /// The CPU must support AVX-512F and AVX-512VL.
    #[target_feature(enable = "avx512f,avx512vl")]
    pub(super) unsafe fn earliest_avx512(
        motions: &[Motion],
        images: &Images,
        index: usize,
        partners: &[u32],
        now: f64,
    ) -> Earliest {
        earliest_with(motions, images, index, partners, now)
    }
}

/// The body of [`earliest`], inlined into each instruction set's copy: the partners in blocks
/// of [`LANES`] (the last one filled up with the first partner, its extra lanes ignored),
/// then the earliest by time, ties to the lowest partner (so that the order of the partners
/// does not matter).
#[inline(always)]
fn earliest_with(
    motions: &[Motion],
    images: &Images,
    index: usize,
    partners: &[u32],
    now: f64,
) -> Earliest {
    let mut best = Earliest {
        time: f64::INFINITY,
        partner: u32::MAX,
        recheck: f64::INFINITY,
    };
    let body = &motions[index];
    for chunk in partners.chunks(LANES) {
        let mut others = [chunk[0]; LANES];
        others[..chunk.len()].copy_from_slice(chunk);
        let lanes = block(motions, images, body, &others, now);
        for (lane, &other) in chunk.iter().enumerate() {
            match lanes.prediction(lane) {
                Prediction::Impact(at) => {
                    let at = at.max(now);
                    if at < best.time || (at == best.time && other < best.partner) {
                        (best.time, best.partner) = (at, other);
                    }
                }
                Prediction::Recheck(lasts) => best.recheck = best.recheck.min(lasts),
                Prediction::Never => {}
            }
        }
    }
    best
}

/// The prediction for bodies `a` and `b` (one lane of [`block`]).
#[inline]
pub(super) fn pair_time(
    motions: &[Motion],
    images: &Images,
    a: usize,
    b: usize,
    now: f64,
) -> Prediction {
    block::<1>(motions, images, &motions[a], &[b as u32], now).prediction(0)
}

/// A block's answers, lane by lane: the time of the impact, whether there is one (else the
/// pair is looked at again after `lasts` if that is finite, or never).
struct Lanes<const L: usize> {
    time: [f64; L],
    impact: [bool; L],
    lasts: [f64; L],
}

impl<const L: usize> Lanes<L> {
    #[inline(always)]
    fn prediction(&self, lane: usize) -> Prediction {
        if self.impact[lane] {
            Prediction::Impact(self.time[lane])
        } else if self.lasts[lane].is_finite() {
            Prediction::Recheck(self.lasts[lane])
        } else {
            Prediction::Never
        }
    }
}

/// When body `a` and each of the bodies `others` touch while approaching, from their
/// motions (each at its own time). In f64, in relative coordinates: with `s` the separation
/// from `a` to `b` and `w` the velocity of `a` relative to `b`, they touch at `|s - w t| = R`
/// (the sum of the radii), the smaller root of `w² t² - 2 (s·w) t + s² - R² = 0`, taken as
/// `(s² - R²) / (s·w + √D)` with `D = w² R² - |s × w|²` (the same root without
/// cancellation, and `D` from the cross product rather than from `(s·w)² - w² (s² - R²)`).
/// Not approaching (`s·w <= 0`): never, whatever the distance (the separating option);
/// touching or overlapping while approaching: at once. `s` is taken at the later of the
/// two bodies' times, so that the answer depends on the two motions alone.
///
/// In a periodic box, `s` is at the image of `b` nearest at `now`. That image alone can
/// touch until the relative motion has covered half the smallest period less `R` (any
/// other is at least that much further along some axis): an impact after that, or none,
/// is a [`Prediction::Recheck`] then. Which image is nearest changes only far from any
/// touching, so predictions made at different times agree.
///
/// Every quantity is computed in every lane, then the choice made by selects (half of the
/// pairs of a gas separate: branches would be unpredictable).
#[inline(always)]
fn block<const L: usize>(
    motions: &[Motion],
    images: &Images,
    a: &Motion,
    others: &[u32; L],
    now: f64,
) -> Lanes<L> {
    // The gather: one array per field.
    let mut field = [[0.0; L]; 8];
    for (lane, &other) in others.iter().enumerate() {
        let b = &motions[other as usize];
        let values = [
            b.position.x,
            b.position.y,
            b.position.z,
            b.time,
            b.velocity.x,
            b.velocity.y,
            b.velocity.z,
            b.radius,
        ];
        for (f, value) in field.iter_mut().zip(values) {
            f[lane] = value;
        }
    }
    let [bx, by, bz, bt, bvx, bvy, bvz, br] = field;
    let (ap, av) = (a.position, a.velocity);
    let mut time = [0.0; L];
    let mut impact = [false; L];
    let mut lasts = [f64::INFINITY; L];
    for k in 0..L {
        let from = a.time.max(bt[k]);
        let (vx, vy, vz) = (av.x - bvx[k], av.y - bvy[k], av.z - bvz[k]);
        let reach = a.radius + br[k];
        // Each body moved along its velocity to `from`, then the offset from `a` to `b`.
        let (ta, tb) = (from - a.time, from - bt[k]);
        let ox = (bx[k] + bvx[k] * tb) - (ap.x + av.x * ta);
        let oy = (by[k] + bvy[k] * tb) - (ap.y + av.y * ta);
        let oz = (bz[k] + bvz[k] * tb) - (ap.z + av.z * ta);
        let speed_squared = vx * vx + vy * vy + vz * vz;
        // The image nearest now (the offset moved on to now), and the square of how long it
        // alone can touch: (L/2 - R)² / w². (With no wrapping axis the shift is zero.)
        let back = now - from;
        let shift = images.shift_each([ox - vx * back, oy - vy * back, oz - vz * back]);
        let (sx, sy, sz) = (ox - shift[0], oy - shift[1], oz - shift[2]);
        if images.wraps {
            let room = images.half - reach;
            lasts[k] = room * room / speed_squared;
        }
        let approach = sx * vx + sy * vy + sz * vz;
        let gap = (sx * sx + sy * sy + sz * sz) - reach * reach;
        // s × w.
        let (cx, cy, cz) = (sy * vz - vy * sz, sz * vx - vz * sx, sx * vy - vx * sy);
        let discriminant = speed_squared * (reach * reach) - (cx * cx + cy * cy + cz * cz);
        let root = from + gap / (approach + discriminant.max(0.0).sqrt());
        time[k] = if gap <= 0.0 { from } else { root };
        // Touching, the pair approaches only beyond what a response's rounding leaves of
        // the speeds (a perfectly inelastic impulse leaves a few ε of them, either way).
        let speeds =
            (av.x.abs() + av.y.abs() + av.z.abs()) + (bvx[k].abs() + bvy[k].abs() + bvz[k].abs());
        let settled = if gap <= 0.0 {
            SETTLED * reach * speeds
        } else {
            0.0
        };
        let meets = approach > settled && (gap <= 0.0 || discriminant >= 0.0);
        let wait = (time[k] - now).max(0.0);
        impact[k] = meets && wait * wait <= lasts[k];
    }
    Lanes {
        time,
        impact,
        lasts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::DVec3;

    /// SplitMix64, as testkit's (which the published crate's tests cannot reach: testkit is
    /// not published): the same random cases.
    struct SplitMix64(u64);

    impl SplitMix64 {
        fn new(seed: u64) -> Self {
            Self(seed)
        }

        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let z = self.0;
            let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        /// Uniform in [0, 1).
        fn unit(&mut self) -> f64 {
            (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
        }

        /// Uniform in 0..n.
        fn below(&mut self, n: u64) -> u64 {
            ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
        }
    }

    /// The pair prediction as it stood before the lanes, on glam's vectors, one pair at a
    /// time: what every lane must give, to the bit.
    fn scalar(motions: &[Motion], images: &Images, a: usize, b: usize, now: f64) -> Prediction {
        let (a, b) = (&motions[a], &motions[b]);
        let from = a.time.max(b.time);
        let velocity = a.velocity - b.velocity;
        let reach = a.radius + b.radius;
        let offset = b.at(from) - a.at(from);
        let speed_squared = velocity.length_squared();
        let (separation, lasts) = if images.wraps {
            let shift = images.shift(offset - velocity * (now - from));
            let room = images.half - reach;
            (offset - shift, room * room / speed_squared)
        } else {
            (offset, f64::INFINITY)
        };
        let approach = separation.dot(velocity);
        let gap = separation.length_squared() - reach * reach;
        let discriminant =
            speed_squared * (reach * reach) - separation.cross(velocity).length_squared();
        let time = from + gap / (approach + discriminant.max(0.0).sqrt());
        let time = if gap <= 0.0 { from } else { time };
        let speeds = a.velocity.abs().element_sum() + b.velocity.abs().element_sum();
        let settled = if gap <= 0.0 {
            SETTLED * reach * speeds
        } else {
            0.0
        };
        let meets = approach > settled && (gap <= 0.0 || discriminant >= 0.0);
        let wait = (time - now).max(0.0);
        if meets && wait * wait <= lasts {
            Prediction::Impact(time)
        } else if lasts.is_finite() {
            Prediction::Recheck(lasts)
        } else {
            Prediction::Never
        }
    }

    /// A prediction as bits, so that equal means equal to the bit.
    fn bits(prediction: Prediction) -> (u8, u64) {
        match prediction {
            Prediction::Impact(time) => (0, time.to_bits()),
            Prediction::Recheck(lasts) => (1, lasts.to_bits()),
            Prediction::Never => (2, 0),
        }
    }

    /// Random motions in a box of side 6 (each at its own time), with the cases where lanes
    /// could part from a scalar computation: a body at rest, two bodies moving together, a
    /// pair touching, a pair overlapping.
    fn motions(random: &mut SplitMix64) -> Vec<Motion> {
        let mut vector =
            |scale: f64| DVec3::new(random.unit(), random.unit(), random.unit()) * scale;
        let mut motions: Vec<Motion> = (0..48)
            .map(|_| Motion {
                position: vector(6.0),
                time: vector(1.0).x,
                velocity: vector(4.0) - 2.0,
                radius: 0.2 + vector(0.4).y,
            })
            .collect();
        motions[1].velocity = DVec3::ZERO;
        motions[3] = Motion {
            position: motions[2].position + DVec3::X * 0.3,
            ..motions[2]
        };
        motions[5] = Motion {
            position: motions[4].position + DVec3::Y * (motions[4].radius * 2.0),
            velocity: -motions[4].velocity,
            radius: motions[4].radius,
            ..motions[4]
        };
        motions
    }

    #[test]
    fn every_lane_gives_the_scalar_prediction() {
        let mut random = SplitMix64::new(11);
        let mut seen = [0usize; 3];
        for period in [
            DVec3::splat(6.0),
            DVec3::new(6.0, 7.5, f64::INFINITY),
            DVec3::INFINITY,
        ] {
            let images = Images::new(period);
            for _ in 0..50 {
                let motions = motions(&mut random);
                let n = motions.len();
                for _ in 0..40 {
                    let index = random.below(n as u64) as usize;
                    let count = 1 + random.below(20) as usize;
                    let partners: Vec<u32> = (0..count)
                        .map(|_| random.below(n as u64) as u32)
                        .filter(|&other| other as usize != index)
                        .collect();
                    let now = 1.0 + random.unit();
                    // The old loop's reduction over the scalar predictions.
                    let mut expected = Earliest {
                        time: f64::INFINITY,
                        partner: u32::MAX,
                        recheck: f64::INFINITY,
                    };
                    for &other in &partners {
                        let prediction = scalar(&motions, &images, index, other as usize, now);
                        let lane = pair_time(&motions, &images, index, other as usize, now);
                        assert_eq!(bits(lane), bits(prediction));
                        seen[bits(prediction).0 as usize] += 1;
                        match prediction {
                            Prediction::Impact(at) => {
                                let at = at.max(now);
                                if at < expected.time
                                    || (at == expected.time && other < expected.partner)
                                {
                                    (expected.time, expected.partner) = (at, other);
                                }
                            }
                            Prediction::Recheck(lasts) => {
                                expected.recheck = expected.recheck.min(lasts);
                            }
                            Prediction::Never => {}
                        }
                    }
                    for simd in [Simd::Portable, Simd::Avx, Simd::Avx512] {
                        if simd > Simd::detected() {
                            continue;
                        }
                        let found = earliest(simd, &motions, &images, index, &partners, now);
                        assert_eq!(found.time.to_bits(), expected.time.to_bits(), "{simd:?}");
                        assert_eq!(found.partner, expected.partner, "{simd:?}");
                        assert_eq!(found.recheck.to_bits(), expected.recheck.to_bits());
                    }
                }
            }
        }
        // Each kind of answer was met many times.
        assert!(seen.iter().all(|&count| count > 1000), "{seen:?}");
    }
}
