//! The vectorised CPU batch: the algebra of [`sweep_pair`](super::sweep::sweep_pair) with
//! its branches turned into selects, run on a block of pairs at a time.
//!
//! Bodies arrive packed in the shader's 32-byte layout ([`BodyRecord`], aligned to 32 bytes).
//! Each block of pairs gathers its bodies and transposes them into one array per coordinate
//! (a structure of arrays per block), so that the arithmetic is straight-line code over
//! `[f32; N]` that the compiler turns into SIMD instructions. The instruction set is chosen
//! at run time ([`Simd`]): on x86-64 CPUs with AVX a block is [`LANES`] pairs, gathered with
//! one aligned 256-bit load per body and two 8 × 8 transposes in registers (with AVX-512 the
//! same code computes in 512-bit registers); elsewhere the gather is portable scalar code on
//! blocks of 8. A [`Kernel`] turns each gathered block into its answers: [`Times`], 4 bytes
//! a pair (the time and the status), or [`Impacts`], the whole 56-byte `Option<Impact>` (the
//! normal on lanes for every block with a hit, the contact point per hit).
//!
//! Everything is computed with the same operations in the same order as the shader's twin,
//! so the two agree bit for bit wherever both report a contact (no fused multiply-adds: Rust
//! never contracts `a * b + c` on its own). The times-only batch leaves the twin's reach
//! escape (`|V| + R < |C|`) out: it only saves work, and whenever it holds the contact time
//! exceeds 1 anyway (up to rounding, within the parity bound). The full answer (`EXACT`)
//! keeps it, so that its hits and misses are the twin's exactly.

use std::mem::MaybeUninit;

use glam::Vec3;

use super::sweep::power_of_two_scale;
use crate::answers::TimeOfImpact;
use crate::geometry::Impact;
use crate::layout::{BodyRecord, FLAG_PERIODIC, FLAG_SEPARATING_MISSES, MIN_NORMAL, SweepParams};

/// Pairs per block of the AVX and AVX-512 paths: two AVX registers of f32, or one 512-bit
/// register. Sixteen rather than eight because a block's arithmetic is one long chain of
/// dependent operations (square roots, divisions, selects): two chains side by side keep the
/// core busier than one. On an AMD EPYC with AVX-512 the AVX path swept the lattice (World
/// times, one core, alternating runs) at 217–292 M pairs/s with blocks of 8 and 258–317 with
/// blocks of 16.
pub const LANES: usize = 16;

/// Pairs per block of the portable path: its scalar gather ran the lattice at 114–145 M pairs/s
/// with blocks of 8 and 70–131 with blocks of 16, in the same runs.
const PORTABLE_LANES: usize = 8;

/// Pairs per AVX transpose: 8 bodies' 8 fields, a 256-bit register each.
#[cfg(target_arch = "x86_64")]
const GATHER: usize = 8;

/// A block of [`LANES`] pairs, relative and transposed: one array per field, in the order of
/// [`BodyRecord`]'s fields, holding for pair (a, b) the separation `s = b.center - a.center`
/// (wrapped in a periodic box), the radius sum `a.radius + b.radius`, the relative motion
/// `v = a.displacement - b.displacement` and padding: the twin's `raw_position`,
/// `raw_sum_radii` and `raw_motion`, formed by the same subtractions. (Not `b - a` for the
/// motion: `x - x` is `+0` both ways, so `-(b - a)` is not `a - b` to the bit where a
/// component is equal, and the normal's fallback along the motion would differ in the sign
/// of a zero.)
type Lanes<const N: usize = LANES> = [[f32; N]; 8];

/// The sweep of a block of `N` pairs at once, without branches: every lane runs every operation,
/// and selects (not `if` statements, not `&&`) pick each lane's answer, so that the loop
/// compiles to SIMD instructions.
///
/// `separating_misses` is the shader's [`FLAG_SEPARATING_MISSES`].
///
/// Generic over the block's width `N` (every path uses [`LANES`]). Each lane's operations are
/// the same IEEE operations in the same order whatever the width and the instruction set, so
/// every path gives the same bits.
#[inline(always)]
fn sweep_lanes<const EXACT: bool, const N: usize>(
    pairs: &[[f32; N]; 8],
    separating_misses: bool,
) -> ([TimeOfImpact; N], ScaledLanes<N>) {
    let mut out = [TimeOfImpact::MISS; N];
    let mut scaled = ScaledLanes {
        s: [[0.0; N]; 3],
        v: [[0.0; N]; 3],
        motion_squared: [0.0; N],
    };
    for (k, out) in out.iter_mut().enumerate() {
        let Scaled {
            s: [sx, sy, sz],
            v: [vx, vy, vz],
            sum_radii,
        } = Scaled::new(pairs, k);
        let sum_radii_squared = sum_radii * sum_radii;
        let distance_squared = sx * sx + sy * sy + sz * sz;
        let gap_product = distance_squared - sum_radii_squared;
        let motion_squared = vx * vx + vy * vy + vz * vz;
        let approach = sx * vx + sy * vy + sz * vz;
        // s × v (glam's `cross`), squared below.
        let (ox, oy, oz) = (sy * vz - sz * vy, sz * vx - sx * vz, sx * vy - sy * vx);
        let discriminant = motion_squared * sum_radii_squared - (ox * ox + oy * oy + oz * oz);
        // Lanes that miss may divide by zero; the selects below discard what they compute.
        let root = (if discriminant > 0.0 {
            discriminant
        } else {
            0.0
        })
        .sqrt();
        let quotient = gap_product / (approach + root);
        // The twin's clamp to the vertex (lanes with no motion divide by zero here; the
        // select discards them, as it does for the twin, whose test fails there).
        let time = if quotient * motion_squared > approach {
            approach / motion_squared
        } else {
            quotient
        };
        let contact = (approach > 0.0) & (discriminant >= 0.0) & (time <= 1.0);
        // With EXACT, the twin's reach escape too (|V| + R < |C|), so that hits and misses
        // are the twin's exactly; it costs a square root a lane.
        let reach = motion_squared.sqrt() + sum_radii;
        let contact = if EXACT {
            contact & (reach * reach >= distance_squared)
        } else {
            contact
        };
        let swept = if contact { time } else { f32::INFINITY };
        // At t = 0: overlapping or touching, unless separating under the option.
        let at_start = if gap_product < 0.0 { -1.0 } else { 0.0 };
        let separating = separating_misses & (approach <= 0.0);
        let at_start = if separating { f32::INFINITY } else { at_start };
        *out = TimeOfImpact(if gap_product <= 0.0 { at_start } else { swept });
        for (field, value) in [sx, sy, sz].into_iter().enumerate() {
            scaled.s[field][k] = value;
        }
        for (field, value) in [vx, vy, vz].into_iter().enumerate() {
            scaled.v[field][k] = value;
        }
        scaled.motion_squared[k] = motion_squared;
    }
    (out, scaled)
}

/// A block's lanes as [`sweep_lanes`] rescaled them, for the contact geometry (a kernel
/// that does not use them lets the compiler drop them).
struct ScaledLanes<const N: usize> {
    s: [[f32; N]; 3],
    v: [[f32; N]; 3],
    motion_squared: [f32; N],
}

/// One lane of a block, rescaled as the twin rescales: by the power of two that brings the
/// largest relative length into [1, 2).
struct Scaled {
    s: [f32; 3],
    v: [f32; 3],
    sum_radii: f32,
}

impl Scaled {
    #[inline(always)]
    fn new<const N: usize>(pairs: &[[f32; N]; 8], k: usize) -> Self {
        let [sx, sy, sz, sum_radii, vx, vy, vz, _] = pairs;
        let (s, v) = (
            Vec3::new(sx[k], sy[k], sz[k]),
            Vec3::new(vx[k], vy[k], vz[k]),
        );
        // The twin's `largest_component(s).max(largest_component(v)).max(sum_radii)`, with
        // `max` as a compare and select: one instruction where `f32::max`, which must also
        // handle NaN, takes three. The values are finite and, but for a radius sum of -0,
        // not negative; only the exponent of the largest is used, and +0 and -0 share it,
        // so the scale is the twin's.
        let max = |a: f32, b: f32| if a > b { a } else { b };
        let largest = [s.abs(), v.abs()]
            .iter()
            .flat_map(|v| v.to_array())
            .fold(sum_radii[k], max);
        let scale = power_of_two_scale(largest);
        Self {
            s: (s * scale).to_array(),
            v: (v * scale).to_array(),
            sum_radii: sum_radii[k] * scale,
        }
    }
}

/// What a block of `N` gathered pairs becomes: the times-only path's [`TimeOfImpact`]s, or
/// the full answer's [`Impact`]s. Generic so that the gathers of every [`Simd`] set run
/// either, and `#[inline(always)]` so that the kernel is compiled inside the gather's
/// function, with its instruction set.
pub(crate) trait Kernel<const N: usize>: Output {
    /// The block's answers into `out` (its first `out.len()` pairs: all `N` but in a short
    /// last block), from its relative lanes (see [`Lanes`]), its pairs and the bodies they
    /// index.
    fn block(
        self,
        lanes: &[[f32; N]; 8],
        pairs: &[[u32; 2]; N],
        bodies: &[BodyRecord],
        out: &mut [Self::Out],
    );
}

/// The answer a [`Kernel`] writes per pair.
pub(crate) trait Output: Copy {
    type Out: Copy;
}

/// The times-only kernel: [`sweep_lanes`], with the twin's reach escape if `EXACT`.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Times<const EXACT: bool> {
    pub(crate) separating_misses: bool,
}

impl<const EXACT: bool> Output for Times<EXACT> {
    type Out = TimeOfImpact;
}

impl<const EXACT: bool, const N: usize> Kernel<N> for Times<EXACT> {
    #[inline(always)]
    fn block(
        self,
        lanes: &[[f32; N]; 8],
        _: &[[u32; 2]; N],
        _: &[BodyRecord],
        out: &mut [TimeOfImpact],
    ) {
        let (times, _) = sweep_lanes::<EXACT, N>(lanes, self.separating_misses);
        out.copy_from_slice(&times[..out.len()]);
    }
}

/// The full answer's kernel: hits and misses from the exact lanes (so the twin's), the
/// separation and normal at the time of impact on lanes for every block with a hit, then
/// per hit the contact point and the shortened displacements, with the twin's operations in
/// the twin's order: every [`Impact`] is exactly what the twin's record gives.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Impacts {
    pub(crate) separating_misses: bool,
}

/// Written, never read: every element is written once (a miss as `None`), so the caller
/// may hand over memory it has not initialised (a vector's spare capacity) and skip a pass
/// over 56 bytes a pair.
impl Output for Impacts {
    type Out = MaybeUninit<Option<Impact>>;
}

impl<const N: usize> Kernel<N> for Impacts {
    #[inline(always)]
    fn block(
        self,
        lanes: &[[f32; N]; 8],
        pairs: &[[u32; 2]; N],
        bodies: &[BodyRecord],
        out: &mut [MaybeUninit<Option<Impact>>],
    ) {
        let (times, scaled) = sweep_lanes::<true, N>(lanes, self.separating_misses);
        for out in out.iter_mut() {
            out.write(None);
        }
        // One bit a lane that hits, among the block's own pairs (N <= 32).
        let hits = times.iter().enumerate().fold(0u32, |hits, (k, time)| {
            hits | (u32::from(time.is_hit()) << k)
        }) & (u32::MAX >> (32 - out.len()));
        if hits == 0 {
            return;
        }
        let [normal_x, normal_y, normal_z] = contact_normals(&scaled, &times);
        // The hits only, lowest lane first: one loop exit to predict, not a branch a lane.
        let mut remaining = hits;
        while remaining != 0 {
            let k = remaining.trailing_zeros() as usize;
            remaining &= remaining - 1;
            let Some((t, status)) = times[k].get() else {
                unreachable!("lane {k} is a hit");
            };
            let (a, b) = (&bodies[pairs[k][0] as usize], &bodies[pairs[k][1] as usize]);
            let normal = Vec3::new(normal_x[k], normal_y[k], normal_z[k]);
            let displacement_a = Vec3::from_array(a.displacement);
            // The twin's `center_a + normal * a.radius`, `center_a = a.center +
            // a.displacement * t`; `to_impact`'s shortened displacements.
            let center_a = Vec3::from_array(a.center) + displacement_a * t;
            out[k].write(Some(Impact {
                time_of_impact: t,
                point: center_a + normal * a.radius,
                normal,
                displacement_a: displacement_a * t,
                displacement_b: Vec3::from_array(b.displacement) * t,
                status,
            }));
        }
    }
}

/// The twin's `contact_normal` at the time of impact, on every lane without branches (lanes
/// that miss compute something the caller discards): the unit separation `s - v t`, else the
/// unit relative motion, else +x. Rescaled as [`sweep_lanes`] rescales, with the twin's
/// operations: glam's `normalize` is `x * (1 / sqrt(x·x))`, the dot product summed left to
/// right.
#[inline(always)]
fn contact_normals<const N: usize>(
    scaled: &ScaledLanes<N>,
    times: &[TimeOfImpact; N],
) -> [[f32; N]; 3] {
    let ScaledLanes {
        s: [sx, sy, sz],
        v: [vx, vy, vz],
        motion_squared,
    } = scaled;
    let mut normal = [[0.0; N]; 3];
    for (k, time) in times.iter().enumerate() {
        let (sx, sy, sz, vx, vy, vz) = (sx[k], sy[k], sz[k], vx[k], vy[k], vz[k]);
        let motion_squared = motion_squared[k];
        // An overlap (stored as -1) is at t = 0, as in the twin.
        let t = time.0.max(0.0);
        let (ex, ey, ez) = (sx - vx * t, sy - vy * t, sz - vz * t);
        let separation_squared = ex * ex + ey * ey + ez * ez;
        let separation_recip = 1.0 / separation_squared.sqrt();
        let motion_recip = 1.0 / motion_squared.sqrt();
        let (has_separation, has_motion) = (
            separation_squared >= MIN_NORMAL,
            motion_squared >= MIN_NORMAL,
        );
        // Selects on the bits, so that the compiler blends registers (with `if` it may
        // store each case under a mask and reload the whole row, which stalls).
        let (separation_mask, motion_mask) = (
            u32::from(has_separation).wrapping_neg(),
            u32::from(has_motion).wrapping_neg(),
        );
        let select = |mask: u32, chosen: f32, other: f32| {
            f32::from_bits((chosen.to_bits() & mask) | (other.to_bits() & !mask))
        };
        let pick = |along_separation: f32, along_motion: f32, fallback: f32| {
            let motion_or_fallback = select(motion_mask, along_motion, fallback);
            select(separation_mask, along_separation, motion_or_fallback)
        };
        normal[0][k] = pick(ex * separation_recip, vx * motion_recip, 1.0);
        normal[1][k] = pick(ey * separation_recip, vy * motion_recip, 0.0);
        normal[2][k] = pick(ez * separation_recip, vz * motion_recip, 0.0);
    }
    normal
}

/// The periodic box of a block's gather, one row per body field as [`BodyRecord`] lays them
/// out: the period and its inverse on the centre's three fields, 0 everywhere else (and on
/// axes that do not wrap), so that the wrap leaves the other fields as they are.
#[derive(Copy, Clone, Debug)]
struct Wrap {
    period: [f32; 8],
    inverse_period: [f32; 8],
}

impl Wrap {
    /// The wrap of `params`, or `None` without a periodic box.
    fn new(params: &SweepParams) -> Option<Self> {
        if params.flags & FLAG_PERIODIC == 0 {
            return None;
        }
        let mut wrap = Self {
            period: [0.0; 8],
            inverse_period: [0.0; 8],
        };
        wrap.period[..3].copy_from_slice(&params.period);
        wrap.inverse_period[..3].copy_from_slice(&params.inverse_period);
        Some(wrap)
    }
}

/// The instruction set the vectorised batches run on, ordered from the narrowest to the
/// widest.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Simd {
    /// Scalar gather, arithmetic vectorised by the compiler for the build's target (SSE2 on
    /// a default x86-64 build).
    Portable,
    /// AVX (x86-64): one aligned 256-bit load per body, two 8 × 8 transposes in registers a
    /// block, two 256-bit registers a field.
    Avx,
    /// AVX-512F with AVX-512VL (x86-64): the AVX path's code compiled with 32 registers and
    /// its arithmetic in 512-bit registers, one a field.
    Avx512,
}

impl Simd {
    /// The widest instruction set this CPU has, as detected at run time.
    #[must_use]
    pub fn detected() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected;
            if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl") {
                return Self::Avx512;
            }
            if is_x86_feature_detected!("avx") {
                return Self::Avx;
            }
        }
        Self::Portable
    }

    /// The one the batches use: [`Simd::detected`], unless the environment variable
    /// `SWEEPCAST_SIMD` (read once per process) asks for a narrower one (`portable` or
    /// `avx`), to compare them or to pin one. A wider one than the CPU has, or another
    /// value, leaves the detected one. Every choice gives the same bits.
    #[must_use]
    pub fn active() -> Self {
        static ACTIVE: std::sync::OnceLock<Simd> = std::sync::OnceLock::new();
        *ACTIVE.get_or_init(|| {
            let detected = Self::detected();
            let asked = match std::env::var("SWEEPCAST_SIMD").as_deref() {
                Ok("portable") => Self::Portable,
                Ok("avx") => Self::Avx,
                _ => detected,
            };
            asked.min(detected)
        })
    }
}

/// Sweeps `pairs` into `out` (times only, with the twin's reach escape if `EXACT`) on the
/// [active](Simd::active) instruction set, with the options of `params`.
///
/// # Safety
/// Every index in `pairs` must be less than `bodies.len()` (as
/// [`validate_pairs`](crate::low_level::validate_pairs) checks): the AVX gather does not
/// check them again.
pub(crate) unsafe fn sweep_block<const EXACT: bool>(
    bodies: &[BodyRecord],
    pairs: &[[u32; 2]],
    out: &mut [TimeOfImpact],
    params: &SweepParams,
) {
    let separating_misses = params.flags & FLAG_SEPARATING_MISSES != 0;
    // SAFETY: the caller guarantees the indices.
    unsafe {
        run(
            bodies,
            pairs,
            out,
            params,
            Times::<EXACT> { separating_misses },
        )
    }
}

/// The full answer of every pair of `pairs` into `out`, exactly the twin's (see
/// [`Impacts`]), on the [active](Simd::active) instruction set. Writes every element of
/// `out` (as long as `pairs`).
///
/// # Safety
/// As [`sweep_block`].
pub(crate) unsafe fn sweep_impacts(
    bodies: &[BodyRecord],
    pairs: &[[u32; 2]],
    out: &mut [MaybeUninit<Option<Impact>>],
    params: &SweepParams,
) {
    let separating_misses = params.flags & FLAG_SEPARATING_MISSES != 0;
    // SAFETY: the caller guarantees the indices.
    unsafe { run(bodies, pairs, out, params, Impacts { separating_misses }) }
}

/// Runs `kernel` on every block of `pairs` on the active instruction set.
///
/// # Safety
/// As [`sweep_block`].
#[inline(always)]
unsafe fn run<K: Kernel<LANES> + Kernel<PORTABLE_LANES>>(
    bodies: &[BodyRecord],
    pairs: &[[u32; 2]],
    out: &mut [K::Out],
    params: &SweepParams,
    kernel: K,
) {
    debug_assert!(pairs.iter().flatten().all(|&i| (i as usize) < bodies.len()));
    let wrap = Wrap::new(params);
    match Simd::active() {
        // SAFETY (both): `Simd::active` chose a set the CPU has; the caller guarantees the
        // indices.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 => unsafe { avx::sweep_block_wide(bodies, pairs, out, kernel, wrap) },
        #[cfg(target_arch = "x86_64")]
        Simd::Avx => unsafe { avx::sweep_block(bodies, pairs, out, kernel, wrap) },
        _ => portable::sweep_block(bodies, pairs, out, kernel, wrap),
    }
}

/// Runs `$block` (a statement of `$block_pairs: &[[u32; 2]; $width]`, `$start`, the index of
/// its first pair, and `$block_out`, the block's slice of the output) on every whole block of
/// pairs and then on the short last one, whose unused lanes repeat its first pair and whose
/// output holds only the batch's own pairs. A macro rather than a function taking a
/// closure, so that the block is expanded inside the AVX (or AVX-512) function and compiled
/// with its features.
macro_rules! for_each_block {
    ($width:expr, $pairs:expr, $out:expr,
     |$block_pairs:ident, $start:ident, $block_out:ident| $block:expr) => {{
        let mut pair_blocks = $pairs.chunks_exact($width);
        let mut out_blocks = $out.chunks_exact_mut($width);
        for (index, (pairs, $block_out)) in (&mut pair_blocks).zip(&mut out_blocks).enumerate() {
            let $block_pairs: &[[u32; 2]; $width] = pairs.try_into().expect("a whole block");
            let $start = index * $width;
            $block;
        }
        let (pairs, $block_out) = (pair_blocks.remainder(), out_blocks.into_remainder());
        if let Some(&first) = pairs.first() {
            let mut padded = [first; $width];
            padded[..pairs.len()].copy_from_slice(pairs);
            let $block_pairs = &padded;
            let $start = $pairs.len() - pairs.len();
            $block;
        }
    }};
}

/// The gather in scalar code, for CPUs without AVX.
mod portable {
    use super::{BodyRecord, Kernel, Lanes, PORTABLE_LANES, Wrap};

    /// [`super::sweep_block`] without SIMD intrinsics (the arithmetic still vectorises).
    pub(super) fn sweep_block<K: Kernel<PORTABLE_LANES>>(
        bodies: &[BodyRecord],
        pairs: &[[u32; 2]],
        out: &mut [K::Out],
        kernel: K,
        wrap: Option<Wrap>,
    ) {
        match wrap {
            None => for_each_block!(PORTABLE_LANES, pairs, out, |block, _start, out| kernel
                .block(
                    &relative(bodies, block, |a, b, _| b - a),
                    block,
                    bodies,
                    out
                )),
            Some(wrap) => for_each_block!(PORTABLE_LANES, pairs, out, |block, _start, out| kernel
                .block(
                    &relative(bodies, block, |a, b, field| wrapped(a, b, field, &wrap)),
                    block,
                    bodies,
                    out
                )),
        }
    }

    /// The twin's `center_offset` on one field: `b - a` wrapped to the nearest image.
    #[inline(always)]
    fn wrapped(a: f32, b: f32, field: usize, wrap: &Wrap) -> f32 {
        let period = wrap.period[field];
        let image = ((b - a) * wrap.inverse_period[field]).round_ties_even();
        let shift_b = if image > 0.0 { image * period } else { 0.0 };
        let shift_a = if image < 0.0 { -image * period } else { 0.0 };
        (b - shift_b) - (a - shift_a)
    }

    /// The pairs of a block, relative (see [`Lanes`]), one array per field: `difference`
    /// of the two bodies' centres, the radius sum on field 3, `a - b` on the displacement.
    #[inline(always)]
    fn relative(
        bodies: &[BodyRecord],
        pairs: &[[u32; 2]; PORTABLE_LANES],
        difference: impl Fn(f32, f32, usize) -> f32,
    ) -> Lanes<PORTABLE_LANES> {
        let mut lanes = Lanes::<PORTABLE_LANES>::default();
        for (lane, &[i, j]) in pairs.iter().enumerate() {
            let a = bytemuck::cast::<BodyRecord, [f32; 8]>(bodies[i as usize]);
            let b = bytemuck::cast::<BodyRecord, [f32; 8]>(bodies[j as usize]);
            for field in 0..8 {
                lanes[field][lane] = match field {
                    0..3 => difference(a[field], b[field], field),
                    3 => a[field] + b[field],
                    _ => a[field] - b[field],
                };
            }
        }
        lanes
    }
}

/// The gather and transpose in AVX registers; the arithmetic is [`sweep_lanes`], compiled
/// here with AVX or with AVX-512 (the gather stays in 256-bit registers, a body being 32
/// bytes; with AVX-512 the compiler does the arithmetic in 512-bit registers).
#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::{
        __m256, _CMP_GT_OQ, _CMP_LT_OQ, _MM_FROUND_NO_EXC, _MM_FROUND_TO_NEAREST_INT, _MM_HINT_T0,
        _mm_prefetch, _mm256_add_ps, _mm256_and_ps, _mm256_blend_ps, _mm256_cmp_ps, _mm256_load_ps,
        _mm256_loadu_ps, _mm256_mul_ps, _mm256_permute2f128_ps, _mm256_round_ps, _mm256_set1_ps,
        _mm256_setzero_ps, _mm256_shuffle_ps, _mm256_sub_ps, _mm256_unpackhi_ps,
        _mm256_unpacklo_ps, _mm256_xor_ps,
    };

    use super::{BodyRecord, GATHER, Kernel, LANES, Lanes, Wrap};

    /// [`super::sweep_block`] with AVX.
    ///
    /// # Safety
    /// The CPU must support AVX, and every index in `pairs` must be less than `bodies.len()`.
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn sweep_block<K: Kernel<LANES>>(
        bodies: &[BodyRecord],
        pairs: &[[u32; 2]],
        out: &mut [K::Out],
        kernel: K,
        wrap: Option<Wrap>,
    ) {
        // SAFETY: this function requires AVX and valid indices of its caller.
        unsafe { sweep(bodies, pairs, out, kernel, wrap) }
    }

    /// [`super::sweep_block`] with AVX-512: the same code, compiled with 512-bit registers
    /// and 32 of them. (Joining each field's two halves into one 512-bit register by hand
    /// gave the same speed as letting the compiler do it, in alternating runs.)
    ///
    /// # Safety
    /// The CPU must support AVX-512F and AVX-512VL, and every index in `pairs` must be less
    /// than `bodies.len()`.
    #[target_feature(enable = "avx512f,avx512vl")]
    pub(super) unsafe fn sweep_block_wide<K: Kernel<LANES>>(
        bodies: &[BodyRecord],
        pairs: &[[u32; 2]],
        out: &mut [K::Out],
        kernel: K,
        wrap: Option<Wrap>,
    ) {
        // SAFETY: this function requires AVX-512F (which implies AVX) and valid indices of
        // its caller.
        unsafe { sweep(bodies, pairs, out, kernel, wrap) }
    }

    /// The body of both, inlined into each so that it is compiled with its features: the
    /// blocks with the [`Difference`] of `wrap`, [`Plain`] without a periodic box, else
    /// [`Periodic`].
    ///
    /// # Safety
    /// The CPU must support AVX, and every index in `pairs` must be less than `bodies.len()`.
    #[inline(always)]
    unsafe fn sweep<K: Kernel<LANES>>(
        bodies: &[BodyRecord],
        pairs: &[[u32; 2]],
        out: &mut [K::Out],
        kernel: K,
        wrap: Option<Wrap>,
    ) {
        // SAFETY (both): the caller guarantees AVX and valid indices.
        match wrap {
            None => unsafe { blocks(bodies, pairs, out, kernel, Plain) },
            Some(wrap) => unsafe { blocks(bodies, pairs, out, kernel, Periodic::new(&wrap)) },
        }
    }

    /// Blocks of [`LANES`] pairs: each half gathered and transposed ([`relative`]), two
    /// 256-bit rows a field.
    ///
    /// # Safety
    /// The CPU must support AVX, and every index in `pairs` must be less than `bodies.len()`.
    #[inline(always)]
    unsafe fn blocks<K: Kernel<LANES>, D: Difference>(
        bodies: &[BodyRecord],
        pairs: &[[u32; 2]],
        out: &mut [K::Out],
        kernel: K,
        difference: D,
    ) {
        for_each_block!(LANES, pairs, out, |block, start, out| {
            prefetch::<LANES>(bodies, pairs, start + 2 * LANES);
            let (low, high) = block.split_at(GATHER);
            let (low, high): (&[[u32; 2]; GATHER], &[[u32; 2]; GATHER]) = (
                low.try_into().expect("half a block"),
                high.try_into().expect("half a block"),
            );
            // SAFETY: the caller guarantees AVX and valid indices.
            let (low, high) = unsafe {
                (
                    relative(bodies, low, difference),
                    relative(bodies, high, difference),
                )
            };
            let rows: [[__m256; 2]; 8] = std::array::from_fn(|field| [low[field], high[field]]);
            // SAFETY: `[[__m256; 2]; 8]` and `[[f32; 16]; 8]` have the same size and layout
            // (lanes 0-7 of a field, then 8-15), and any bits are f32s.
            let lanes = unsafe { std::mem::transmute::<[[__m256; 2]; 8], Lanes>(rows) };
            kernel.block(&lanes, block, bodies, out)
        })
    }

    /// How the gather makes one relative row of two bodies: `b - a`, wrapped or not.
    trait Difference: Copy {
        /// The row `b - a` (the radius field is replaced by the caller).
        ///
        /// # Safety
        /// The CPU must support AVX.
        unsafe fn apply(self, a: __m256, b: __m256) -> __m256;
    }

    /// No periodic box: `b - a`.
    #[derive(Copy, Clone)]
    struct Plain;

    impl Difference for Plain {
        #[inline(always)]
        unsafe fn apply(self, a: __m256, b: __m256) -> __m256 {
            // SAFETY: the caller guarantees AVX.
            unsafe { _mm256_sub_ps(b, a) }
        }
    }

    /// A periodic box: the twin's `center_offset` on a whole row, `b - a` wrapped to the
    /// nearest image on the fields whose period is not 0, `b - a` exactly on the others.
    #[derive(Copy, Clone)]
    struct Periodic {
        period: __m256,
        inverse_period: __m256,
    }

    impl Periodic {
        /// # Safety
        /// The CPU must support AVX.
        #[inline(always)]
        unsafe fn new(wrap: &Wrap) -> Self {
            // SAFETY: the caller guarantees AVX; each row is 8 f32s.
            unsafe {
                Self {
                    period: _mm256_loadu_ps(wrap.period.as_ptr()),
                    inverse_period: _mm256_loadu_ps(wrap.inverse_period.as_ptr()),
                }
            }
        }
    }

    impl Difference for Periodic {
        #[inline(always)]
        unsafe fn apply(self, a: __m256, b: __m256) -> __m256 {
            // SAFETY: the caller guarantees AVX.
            unsafe {
                let zero = _mm256_setzero_ps();
                let image = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
                    _mm256_mul_ps(_mm256_sub_ps(b, a), self.inverse_period),
                );
                let shift = _mm256_mul_ps(image, self.period);
                // -image * period is -(image * period) to the bit; the masks leave +0
                // elsewhere.
                let shift_b = _mm256_and_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(image, zero), shift);
                let negated = _mm256_xor_ps(shift, _mm256_set1_ps(-0.0));
                let shift_a = _mm256_and_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(image, zero), negated);
                _mm256_sub_ps(_mm256_sub_ps(b, shift_b), _mm256_sub_ps(a, shift_a))
            }
        }
    }

    /// Asks the cache for the bodies of the `N` pairs at `start`, if there are that many: the
    /// callers fetch two blocks ahead, so that those loads are under way while this block
    /// computes (the out-of-order window holds about one block).
    #[inline(always)]
    fn prefetch<const N: usize>(bodies: &[BodyRecord], pairs: &[[u32; 2]], start: usize) {
        let Some(block) = pairs.get(start..start + N) else {
            return;
        };
        for index in block.as_flattened() {
            // A prefetch only hints: it reads nothing and cannot fault, so the address needs
            // no bounds check (and `wrapping_add` makes forming it always defined).
            let body = bodies.as_ptr().wrapping_add(*index as usize);
            // SAFETY: the caller of `sweep_block` guarantees AVX (SSE suffices here).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(body.cast()) };
        }
    }

    /// [`GATHER`] pairs of a block, relative (see [`Lanes`]): per pair, one aligned load
    /// of each body, their centres' `difference`, the radius sum and the displacements' `a -
    /// b` blended into one row, then the block transposed, one register per field.
    ///
    /// # Safety
    /// The CPU must support AVX (inlined into functions that require it), and every index in
    /// `pairs` must be less than `bodies.len()`.
    #[inline(always)]
    unsafe fn relative(
        bodies: &[BodyRecord],
        pairs: &[[u32; 2]; GATHER],
        difference: impl Difference,
    ) -> [__m256; 8] {
        // SAFETY: `BodyRecord` is 32 bytes of f32, aligned to 32 bytes (`repr(C, align(32))`),
        // and the caller guarantees AVX.
        let load = |body: &BodyRecord| unsafe { _mm256_load_ps(std::ptr::from_ref(body).cast()) };
        // SAFETY: the caller guarantees AVX.
        let mut rows = [unsafe { _mm256_setzero_ps() }; GATHER];
        for (row, &[i, j]) in rows.iter_mut().zip(pairs) {
            // SAFETY: the caller guarantees that both indices are in range, and AVX. Fields
            // 0-2 from the difference, 3 (the radius) from the sum, 4-7 from `a - b`.
            *row = unsafe {
                let (a, b) = (
                    load(bodies.get_unchecked(i as usize)),
                    load(bodies.get_unchecked(j as usize)),
                );
                let centres =
                    _mm256_blend_ps::<0b1000>(difference.apply(a, b), _mm256_add_ps(a, b));
                _mm256_blend_ps::<0b1111_0000>(centres, _mm256_sub_ps(a, b))
            };
        }
        // SAFETY: the caller guarantees AVX.
        unsafe { transpose(rows) }
    }

    /// The 8 × 8 transpose: row `i` of the result holds field `i` of every body.
    ///
    /// # Safety
    /// The CPU must support AVX.
    #[inline(always)]
    unsafe fn transpose([r0, r1, r2, r3, r4, r5, r6, r7]: [__m256; 8]) -> [__m256; 8] {
        // SAFETY: the caller guarantees AVX.
        unsafe {
            let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
            let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
            let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
            let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
            let low = |a, b| _mm256_shuffle_ps::<0x44>(a, b);
            let high = |a, b| _mm256_shuffle_ps::<0xEE>(a, b);
            let (u0, u1, u2, u3) = (low(t0, t2), high(t0, t2), low(t1, t3), high(t1, t3));
            let (u4, u5, u6, u7) = (low(t4, t6), high(t4, t6), low(t5, t7), high(t5, t7));
            let first = |a, b| _mm256_permute2f128_ps::<0x20>(a, b);
            let second = |a, b| _mm256_permute2f128_ps::<0x31>(a, b);
            [
                first(u0, u4),
                first(u1, u5),
                first(u2, u6),
                first(u3, u7),
                second(u0, u4),
                second(u1, u5),
                second(u2, u6),
                second(u3, u7),
            ]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::MovingSphere;

    /// Bodies and pairs for the gathers to agree on: the cases where the branch-free lanes
    /// could part from each other (touching, overlapping, coincident, points, no motion,
    /// a body with itself, contact at t = 1, grazing) and random pairs at several scales.
    fn bodies_and_pairs() -> (Vec<BodyRecord>, Vec<[u32; 2]>) {
        let mut state = 7u64;
        let mut unit = || {
            // SplitMix64.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
        };
        let (x, y) = (Vec3::X, Vec3::Y);
        let mut bodies = vec![
            MovingSphere::new(Vec3::ZERO, 1.0, 3.0 * x),  // 0
            MovingSphere::new(5.0 * x, 1.0, Vec3::ZERO),  // 1: head-on, touching at t = 1
            MovingSphere::new(2.0 * x, 1.0, -x),          // 2: touching 0 at t = 0
            MovingSphere::new(1.5 * x, 1.0, x),           // 3: overlapping 0, separating
            MovingSphere::new(Vec3::ZERO, 1.0, 3.0 * x),  // 4: identical to 0
            MovingSphere::new(Vec3::ZERO, 0.0, 10.0 * x), // 5: a point
            MovingSphere::new(5.0 * x + 2.0 * y, 1.0, Vec3::ZERO), // 6: grazed by 0 at t = 0.5
            MovingSphere::new(7.5 * x, 0.0, Vec3::ZERO),  // 7: a point at rest
        ];
        let mut pairs = vec![
            [0, 1],
            [0, 2],
            [2, 0],
            [0, 3],
            [3, 0],
            [0, 4],
            [5, 1],
            [0, 6],
            [5, 7],
            [7, 7],
            [1, 1],
            [0, 5],
        ];
        for scale in [1e-3f32, 1.0, 1e3] {
            for _ in 0..64 {
                let mut vector = || Vec3::new(unit(), unit(), unit()) * 2.0 - Vec3::ONE;
                let (center, displacement) = (vector() * 8.0 * scale, vector() * 8.0 * scale);
                bodies.push(MovingSphere::new(center, unit() * scale, displacement));
            }
        }
        let count = bodies.len() as u32;
        for _ in 0..512 {
            let pick = |u: f32| ((u * count as f32) as u32).min(count - 1);
            pairs.push([pick(unit()), pick(unit())]);
        }
        (bodies.into_iter().map(BodyRecord::from).collect(), pairs)
    }

    /// The parameters of every option the gathers must agree under: the default, the
    /// separating option, and that with a periodic box.
    fn all_params() -> [SweepParams; 3] {
        let periodic = crate::PeriodicBox::new(glam::Vec3::new(16.0, 8.0, f32::INFINITY))
            .expect("a valid box");
        [
            crate::SweepOptions::default(),
            crate::SweepOptions::event_driven(),
            crate::SweepOptions::event_driven().with_periodic_box(periodic),
        ]
        .map(|options| SweepParams::new(&options, 0))
    }

    /// The signature of every path's sweep with kernel `K`: bodies, pairs, out, the kernel,
    /// the wrap.
    type Path<K> =
        unsafe fn(&[BodyRecord], &[[u32; 2]], &mut [<K as Output>::Out], K, Option<Wrap>);

    /// Every path this CPU can run with kernel `K`, the portable one first, by name; says
    /// loudly which it cannot run (they are then untested on this machine).
    fn paths<K: Kernel<LANES> + Kernel<PORTABLE_LANES>>() -> Vec<(&'static str, Path<K>)> {
        let mut paths: Vec<(&'static str, Path<K>)> =
            vec![("portable", portable::sweep_block::<K> as Path<K>)];
        #[cfg(target_arch = "x86_64")]
        for (name, simd, path) in [
            ("AVX", Simd::Avx, avx::sweep_block::<K> as Path<K>),
            (
                "AVX-512",
                Simd::Avx512,
                avx::sweep_block_wide::<K> as Path<K>,
            ),
        ] {
            if simd <= Simd::detected() {
                paths.push((name, path));
            } else {
                eprintln!("SKIPPED: this CPU has no {name}; its path is not tested here");
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        eprintln!("SKIPPED: not x86-64; the AVX and AVX-512 paths are not tested here");
        paths
    }

    /// The active set is never wider than the CPU's, and a narrower ask wins.
    #[test]
    fn the_active_set_is_one_the_cpu_has() {
        let (active, detected) = (Simd::active(), Simd::detected());
        assert!(active <= detected);
        assert!(Simd::Portable < Simd::Avx && Simd::Avx < Simd::Avx512);
        println!("detected {detected:?}, active {active:?}");
    }

    /// An impact's every field as bits, so that `-0.0` and `0.0` differ.
    fn impact_bits(impact: &Option<Impact>) -> Option<(Vec<u32>, crate::ImpactStatus)> {
        impact.map(|impact| {
            let fields = [
                impact.point,
                impact.normal,
                impact.displacement_a,
                impact.displacement_b,
            ];
            let mut bits: Vec<u32> = fields
                .iter()
                .flat_map(|v| v.to_array())
                .map(f32::to_bits)
                .collect();
            bits.push(impact.time_of_impact.to_bits());
            (bits, impact.status)
        })
    }

    /// With the reach escape (`EXACT`), every path gives exactly the twin's hits and misses
    /// and its times and statuses to the bit, and the full-answer kernel its whole impact
    /// (time, point, normal, shortened displacements) to the bit, under every option.
    #[test]
    fn exact_lanes_are_the_twin() {
        let (bodies, pairs) = bodies_and_pairs();
        for params in all_params() {
            let (separating_misses, wrap) = (
                params.flags & FLAG_SEPARATING_MISSES != 0,
                Wrap::new(&params),
            );
            let twin: Vec<Option<Impact>> = pairs
                .iter()
                .map(|&[i, j]| {
                    let (a, b) = (&bodies[i as usize], &bodies[j as usize]);
                    super::super::sweep::sweep_pair(a, b, &params).to_impact(a, b)
                })
                .collect();
            for (name, path) in paths::<Times<true>>() {
                let mut times = vec![TimeOfImpact(f32::NAN); pairs.len()];
                let kernel = Times::<true> { separating_misses };
                // SAFETY: the pairs index the bodies, and the CPU has the path's features.
                unsafe { path(&bodies, &pairs, &mut times, kernel, wrap) };
                for (index, twin) in twin.iter().enumerate() {
                    let expected =
                        twin.map(|impact| (impact.time_of_impact.to_bits(), impact.status));
                    let bits =
                        |t: TimeOfImpact| t.get().map(|(time, status)| (time.to_bits(), status));
                    assert_eq!(
                        bits(times[index]),
                        expected,
                        "{name}, pair {index}, {params:?}"
                    );
                }
            }
            let mut hits = 0;
            for (name, path) in paths::<Impacts>() {
                let mut written = vec![MaybeUninit::uninit(); pairs.len()];
                let kernel = Impacts { separating_misses };
                // SAFETY: as above.
                unsafe { path(&bodies, &pairs, &mut written, kernel, wrap) };
                // SAFETY: the kernel writes every element (under Miri or a sanitizer, one it
                // left would be caught here).
                let impacts: Vec<Option<Impact>> = written
                    .into_iter()
                    .map(|impact| unsafe { impact.assume_init() })
                    .collect();
                for (index, (impact, twin)) in impacts.iter().zip(&twin).enumerate() {
                    assert_eq!(
                        impact_bits(impact),
                        impact_bits(twin),
                        "{name}, pair {index}, {params:?}: {impact:?} against the twin's {twin:?}"
                    );
                }
                hits = impacts.iter().flatten().count();
            }
            assert!(
                hits > 10 && hits < pairs.len() / 2,
                "{hits} hits: a mix of hits and misses"
            );
        }
    }

    /// On every length of short last block and under every option, each path this CPU has
    /// (AVX, AVX-512) gives the portable path's times to the bit, the dispatching
    /// `sweep_block` too, and every pair gets its own time.
    #[test]
    fn paths_agree_to_the_bit() {
        let (bodies, all_pairs) = bodies_and_pairs();
        let dispatched = |bodies: &[BodyRecord],
                          pairs: &[[u32; 2]],
                          out: &mut [TimeOfImpact],
                          params: &SweepParams| {
            // SAFETY: the pairs index the bodies.
            unsafe { sweep_block::<false>(bodies, pairs, out, params) }
        };
        for params in all_params() {
            let (separating_misses, wrap) = (
                params.flags & FLAG_SEPARATING_MISSES != 0,
                Wrap::new(&params),
            );
            let kernel = Times::<false> { separating_misses };
            for len in [
                1,
                LANES / 2 - 1,
                LANES / 2,
                LANES / 2 + 1,
                LANES - 1,
                LANES,
                LANES + 3,
                all_pairs.len(),
            ] {
                let pairs = &all_pairs[..len];
                let mut portable_times = vec![TimeOfImpact::MISS; len];
                portable::sweep_block(&bodies, pairs, &mut portable_times, kernel, wrap);
                let mut times = vec![TimeOfImpact(f32::NAN); len];
                dispatched(&bodies, pairs, &mut times, &params);
                let mut all = vec![("dispatched", times.clone())];
                for (name, path) in paths::<Times<false>>() {
                    let mut path_times = vec![TimeOfImpact(f32::NAN); len];
                    // SAFETY: the pairs index the bodies, and the CPU has the path's features.
                    unsafe { path(&bodies, pairs, &mut path_times, kernel, wrap) };
                    all.push((name, path_times));
                }
                for (name, path_times) in &all {
                    for (index, (t, p)) in path_times.iter().zip(&portable_times).enumerate() {
                        let message = format!("{name}, pair {index} of {len}, {params:?}");
                        assert_eq!(t.to_bits(), p.to_bits(), "{message}");
                    }
                }
                for (index, pair) in pairs.iter().enumerate() {
                    let mut alone = [TimeOfImpact(f32::NAN)];
                    dispatched(&bodies, std::slice::from_ref(pair), &mut alone, &params);
                    assert_eq!(alone[0].to_bits(), times[index].to_bits(), "pair {index}");
                }
            }
        }
    }
}
