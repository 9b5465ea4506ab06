//! The vectorised CPU batch: the algebra of [`sweep_pair`](super::sweep::sweep_pair) with
//! its branches turned into selects, run on [`LANES`] pairs at a time.
//!
//! Bodies are gathered from the caller's array of structures into one array per coordinate
//! (a structure of arrays per block of pairs), so that the arithmetic is straight-line code
//! over `[f32; LANES]` that the compiler turns into SIMD instructions. Only the time and the
//! status come out: 4 bytes a pair instead of a 56-byte `Option<Impact>`.
//!
//! The time of a contact is computed with the same operations in the same order as the
//! shader's twin, so the two agree bit for bit wherever both report a contact. The twin's
//! reach escape (`|V| + R < |C|`) is left out: it only saves work, and whenever it holds the
//! contact time exceeds 1 anyway (up to rounding, within the parity bound).

use crate::geometry::{ImpactStatus, MovingSphere};

/// Pairs per block: two SSE or one AVX register of f32.
pub const LANES: usize = 8;

/// The time of first contact of one pair, as the vectorised batch reports it: a contact time
/// in [0, 1], or [`TimeOfImpact::MISS`], or [`TimeOfImpact::OVERLAPPING`].
#[repr(transparent)]
#[derive(Copy, Clone, Debug, PartialEq, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TimeOfImpact(pub f32);

impl TimeOfImpact {
    /// The bodies stay apart for the whole step.
    pub const MISS: Self = Self(f32::INFINITY);
    /// The bodies already overlap at t = 0.
    pub const OVERLAPPING: Self = Self(-1.0);

    /// The time and status, or `None` for a miss. An overlap reports t = 0.
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
}

/// One coordinate array per field for a block of [`LANES`] bodies.
#[derive(Copy, Clone, Default)]
struct Lanes {
    center: [[f32; LANES]; 3],
    radius: [f32; LANES],
    displacement: [[f32; LANES]; 3],
}

impl Lanes {
    fn set(&mut self, lane: usize, body: &MovingSphere) {
        for axis in 0..3 {
            self.center[axis][lane] = body.center[axis];
            self.displacement[axis][lane] = body.displacement[axis];
        }
        self.radius[lane] = body.radius;
    }
}

/// The sweep of [`LANES`] pairs at once, without branches: every lane runs every operation,
/// and selects (not `if` statements, not `&&`) pick each lane's answer, so that the loop
/// compiles to SIMD instructions.
#[inline(always)]
fn sweep_lanes(a: &Lanes, b: &Lanes, out: &mut [TimeOfImpact; LANES]) {
    let [acx, acy, acz] = &a.center;
    let [bcx, bcy, bcz] = &b.center;
    let [adx, ady, adz] = &a.displacement;
    let [bdx, bdy, bdz] = &b.displacement;
    for k in 0..LANES {
        let (sx, sy, sz) = (bcx[k] - acx[k], bcy[k] - acy[k], bcz[k] - acz[k]);
        let (vx, vy, vz) = (adx[k] - bdx[k], ady[k] - bdy[k], adz[k] - bdz[k]);
        let sum_radii = a.radius[k] + b.radius[k];
        let sum_radii_squared = sum_radii * sum_radii;
        let distance_squared = sx * sx + sy * sy + sz * sz;
        let gap_product = distance_squared - sum_radii_squared;
        let motion_squared = vx * vx + vy * vy + vz * vz;
        let approach = sx * vx + sy * vy + sz * vz;
        let (ox, oy, oz) = (sy * vz - sz * vy, sz * vx - sx * vz, sx * vy - sy * vx);
        let discriminant = motion_squared * sum_radii_squared - (ox * ox + oy * oy + oz * oz);
        // Lanes that miss may divide by zero; the selects below discard what they compute.
        let root = (if discriminant > 0.0 {
            discriminant
        } else {
            0.0
        })
        .sqrt();
        let time = gap_product / (approach + root);
        let contact = (approach > 0.0) & (discriminant >= 0.0) & (time <= 1.0);
        let swept = if contact { time } else { f32::INFINITY };
        let touching = if gap_product == 0.0 { 0.0 } else { swept };
        out[k] = TimeOfImpact(if gap_product < 0.0 { -1.0 } else { touching });
    }
}

/// Sweeps `pairs` (already validated against `bodies`) into `out`, [`LANES`] at a time.
pub(crate) fn sweep_block<B: Copy + Into<MovingSphere>>(
    bodies: &[B],
    pairs: &[[u32; 2]],
    out: &mut [TimeOfImpact],
) {
    let (mut a, mut b) = (Lanes::default(), Lanes::default());
    let mut times = [TimeOfImpact::MISS; LANES];
    for (pairs, out) in pairs.chunks(LANES).zip(out.chunks_mut(LANES)) {
        // A short last block repeats its first pair in the unused lanes.
        for lane in 0..LANES {
            let [i, j] = pairs[if lane < pairs.len() { lane } else { 0 }];
            a.set(lane, &bodies[i as usize].into());
            b.set(lane, &bodies[j as usize].into());
        }
        sweep_lanes(&a, &b, &mut times);
        out.copy_from_slice(&times[..out.len()]);
    }
}
