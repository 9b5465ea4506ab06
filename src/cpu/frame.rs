//! The step's local frame: the f32 twin of `shaders/frame.wgsl`, one function per entry point
//! ([`scene_bounds`] and [`frame`], each one invocation of it), the helpers of
//! `shaders/shared.wgsl` that place a body in the frame and box it ([`wrap`],
//! [`local_coordinate`], the margin, [`ordered`], [`interacts`]), and the host's frame built
//! of those twins: [`StepParams::new`] and the CPU step's `local_origin`, over every body, so
//! that the host's frame and the device's are the same bits. `tests/frame.rs` runs each entry
//! point on the device and its twin here on the same input and holds the outputs equal, bit
//! for bit.
//!
//! The frame still makes the Morton grid (`morton_origin`, `morton_scale`) of
//! [`StepParams`]; the step's grid does not read it. Its scale, `cells / extent`, is the
//! frame's only division, which WGSL allows 2.5 ulps; Mesa's software adapters round it
//! correctly, as the host does.
//!
//! The sorts of the step are lampshade's stable radix sorts; their twin is a stable sort by
//! key ([`sort_by_key`]).

use glam::Vec3;

use super::sweep::largest_component;
use crate::layout::{
    BodyRecord, FLAG_PERIODIC, KeyValue, MORTON_BITS, SUBNORMAL_MARGIN, StepParams, SweepDispatch,
    SweepParams,
};
use crate::options::SweepOptions;
use crate::par::prelude::*;

/// `wrap`: `c` wrapped into `[0, period)` on an axis that wraps (`period > 0`).
#[must_use]
pub fn wrap(c: f32, period: f32, inverse_period: f32) -> f32 {
    if period <= 0.0 {
        return c;
    }
    let mut wrapped = c - period * (c * inverse_period).floor();
    if wrapped < 0.0 {
        wrapped += period;
    }
    if wrapped >= period {
        wrapped -= period;
    }
    wrapped
}

/// `local_coordinate`: a centre's coordinate in the broad phase's local frame, `c - origin`,
/// wrapped into `[0, period)` on an axis that wraps.
#[must_use]
pub fn local_coordinate(c: f32, period: f32, inverse_period: f32, origin: f32) -> f32 {
    if period <= 0.0 {
        return c - origin;
    }
    let below = c + (period - origin);
    if c < 0.0 && below >= 0.0 {
        return below;
    }
    let wrapped = wrap(c, period, inverse_period);
    if wrapped >= origin {
        wrapped - origin
    } else {
        wrapped + (period - origin)
    }
}

/// The widening of a body's swept box: `2⁻¹⁶ (r + |d| + |c|ₒ) + 2⁻²⁰ |x|`, with `r` the
/// radius, `|d|` the displacement's largest component, `|x|` the largest component of the
/// centre in the broad phase's local frame (`local_origin` in `src/cpu/frame.rs`), and `|c|ₒ`
/// that of the centre on the axes that wrap where it lies outside `[0, 2L)`
/// ([`outside_the_box`]: 0 in open space, in the box and within a period beyond it). It
/// grows with the body's own size, motion and place in the frame, not with its distance
/// from the world's origin or with the period.
///
/// Why it is enough: the boxes of every pair that the f32 sweep calls a hit must meet. With
/// u = 2⁻²⁴ (ε = 2u), per axis:
///
/// - *The sweep* takes the difference of the two centres (the periodic shift applied to one
///   of them first, exactly for centres in `[0, 2L)`:
///   [`center_offset`](super::sweep::center_offset)), with one rounding, and calls a hit
///   only where the exact centres come within a few ε of the pair's scale
///   `S = |s| + |v| + R` of the radius sum (its backward error, [`crate::parity`], is below
///   8 ε of the squared scale, and the distance's own error is a few ε of the scale: the
///   relative position and the cross product are each formed with one rounding a
///   component). A hit has `|s| ≤ R + |v|` up to that, so `S` is at most 2√3 times the sum
///   of the two bodies' `r + |d|`: the sweep needs under 30u of that sum. A centre below
///   the box or beyond `2L` makes the shift round too, by a few u of that centre's
///   coordinates, as does the GPU's f32 wrap of it: the `|c|ₒ` term. (A pair nearly half a
///   period apart may take the other image, by u of the period; a hit there needs a body
///   that reaches an eighth of a period, whose `2⁻¹⁶ (r + |d|)` is 32u of the period.)
/// - *The box's corners* are made in f32 in the local frame: the local centre (one rounding
///   of `x`; two in the shader's f32 wrap of a centre just below the box), the end `x + d`
///   and each corner `± reach`, one rounding each: at most 4u of `|x| + |d| + reach`. A
///   query shifted by a period rounds its corners once more, by u of their size; where such
///   a corner decides a meeting it lies at the met box's corner, whose own margin covers u
///   of it.
///
/// The needs add up to some 35u of `r + |d|`, 5u of `|x|` and 8u of `|c|ₒ`, against the
/// margin's 256u, 16u and 256u: three to one at least. The cost is a relative 2⁻¹⁶ of the
/// body's size and motion and 2⁻²⁰ of its local coordinates: nothing measurable where the
/// scene is at most about 10⁴ times its bodies' size (a body of radius 0.5 in a region of
/// 54 is widened by some 10⁻⁵, where the same region at 10⁶ from the origin or in a box of
/// 10⁶ or 10⁷ once widened it by 15 or 150). A scene that spans much more, a body far
/// outside a periodic box, or bodies spread over most of a large one (where the frame
/// cannot be local to all of them) get boxes wider by up to 2⁻²⁰ of the scene's extent.
///
/// It is written as one sum scaled by 2⁻¹⁶ (`|x| / 16` for `2⁻²⁰ |x|`): GPU compilers may
/// reassociate a sum of two products, and the shader's boxes are held to these bit for bit.
///
/// *A device that flushes subnormal values* (WGSL allows it) errs, in each of the few
/// operations that make a corner (the local centre, the end, the reach and the corner
/// itself, each of whose inputs and result may be flushed), by less than 2⁻¹²⁶: under
/// 2⁻¹²²·⁴ in all. [`SUBNORMAL_MARGIN`] = 2⁻¹²¹ is added to cover it, so that a flushed box
/// still contains the exact one and no candidate is dropped; flushing is monotone, so the
/// cells found from such a box still cover the exact box's. Above a margin of 2⁻⁹⁷ (a body
/// of size 2⁻⁸¹) the addition is below a quarter ulp and changes no bit.
pub(crate) fn margin(body: &BodyRecord, center: [f32; 3], outside: f32) -> f32 {
    let largest = |v: [f32; 3]| largest_component(Vec3::from_array(v));
    (body.radius + largest(body.displacement) + outside + largest(center) * (1.0 / 16.0))
        * (1.0 / 65536.0)
        + SUBNORMAL_MARGIN
}

/// The largest magnitude of `center`'s components on the axes that wrap (`period > 0`)
/// where it lies outside `[0, 2 period)`; 0 in open space and for a centre in the box or
/// within a period beyond it (where the wrap and the sweep's shift by whole periods are
/// exact, so that a body that has just left the box is widened as one inside it). Part of
/// the [`margin`].
pub(crate) fn outside_the_box(center: [f32; 3], period: [f32; 3]) -> f32 {
    (0..3)
        .filter(|&k| period[k] > 0.0 && !(0.0..2.0 * period[k]).contains(&center[k]))
        .fold(0.0, |largest, k| largest.max(center[k].abs()))
}

/// `ordered`: f32 bits whose unsigned order is the numbers' order.
#[must_use]
pub fn ordered(x: f32) -> u32 {
    let bits = x.to_bits();
    if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// `unordered`: the f32 of [`ordered`] bits.
#[must_use]
pub fn unordered(u: u32) -> f32 {
    f32::from_bits(if u & 0x8000_0000 != 0 {
        u & 0x7fff_ffff
    } else {
        !u
    })
}

/// `interacts`: whether two bodies whose records' group words are `a` and `b` interact
/// ([`CollisionGroups::interacts_with`](crate::CollisionGroups::interacts_with) of the
/// complements).
#[must_use]
pub fn interacts(a: u32, b: u32) -> bool {
    interacts_bits(!a, !b)
}

/// `interacts_bits`: [`interacts`] on the groups' bits themselves, or on unions of them (a
/// node's, whose bodies may then interact).
#[must_use]
pub fn interacts_bits(own: u32, other: u32) -> bool {
    (own & (other >> 16)) != 0 && (other & (own >> 16)) != 0
}

/// The twin of one of lampshade's stable radix sorts: key-values ordered by key, ties in
/// their order.
pub fn sort_by_key(sort_in: &[KeyValue], sort_out: &mut [KeyValue]) {
    sort_out.copy_from_slice(sort_in);
    sort_out.sort_by_key(|pair| pair.key);
}

/// `FRAME_BINS` of the shader: the slices of a periodic axis in which [`frame`] looks for the
/// bodies' longest gap.
pub const FRAME_BINS: u32 = 4096;

/// `FRAME_WORDS` of the shader: the words of one axis's occupied slices, a bit a slice.
pub const FRAME_WORDS: usize = FRAME_BINS as usize / 32;

/// `OCCUPANCY` of the shader: where the occupied slices start in the bounds' words, after
/// the lows, the highs, [`INVALID_BODIES`] and one unused word.
pub const OCCUPANCY: usize = 8;

/// `INVALID_BODIES` of the shader: the bounds' word that [`scene_bounds`] sets to 1 when a
/// body is one the step cannot sweep ([`invalid_body`]).
pub const INVALID_BODIES: usize = 6;

/// `invalid_body`: whether a body is one the host's validation would refuse and the step
/// cannot sweep: a centre, displacement or radius that is not finite (all exponent bits
/// set), or a radius below zero (-0 is 0). On the bits, as the shader tests them.
#[must_use]
pub fn invalid_body(body: &BodyRecord) -> bool {
    let non_finite = |x: f32| x.to_bits() & 0x7f80_0000 == 0x7f80_0000;
    body.center
        .iter()
        .chain(&body.displacement)
        .any(|&x| non_finite(x))
        || non_finite(body.radius)
        || body.radius.to_bits() > 0x8000_0000
}

/// `BOUNDS_WORDS` of the shader: the words of the bounds that [`scene_bounds`] gathers and
/// [`frame`] reads (a buffer cleared to 0 before the gathering).
pub const BOUNDS_WORDS: usize = OCCUPANCY + 3 * FRAME_WORDS;

/// `occupancy_bin`: the slice of a periodic axis that holds centre `c`, from the f32 wrap
/// ([`wrap`]); the last where the product rounds up to 1.
#[must_use]
pub fn occupancy_bin(c: f32, period: f32, inverse_period: f32) -> u32 {
    let wrapped = wrap(c, period, inverse_period);
    ((wrapped * inverse_period * FRAME_BINS as f32) as u32).min(FRAME_BINS - 1)
}

/// `scene_bounds`, invocation `i`: grows `bounds` ([`BOUNDS_WORDS`] words, 0 before the
/// first invocation) by body `i`'s path on each axis (lows as the complement of
/// [`ordered`], highs as [`ordered`], each grown by a maximum) and marks its centre's slice
/// on each axis that wraps. The shader reduces each workgroup's words first; maxima and ors
/// commute, so invocations one after another give the device's words in any order.
pub fn scene_bounds(i: usize, frame_input: &StepParams, bodies: &[BodyRecord], bounds: &mut [u32]) {
    if i >= frame_input.body_count as usize {
        return;
    }
    let body = bodies[i];
    if invalid_body(&body) {
        bounds[INVALID_BODIES] = bounds[INVALID_BODIES].max(1);
    }
    for k in 0..3 {
        let (c, d) = (body.center[k], body.displacement[k]);
        let lo = c + if d < 0.0 { d } else { 0.0 };
        let hi = c + if d > 0.0 { d } else { 0.0 };
        bounds[k] = bounds[k].max(!ordered(lo));
        bounds[3 + k] = bounds[3 + k].max(ordered(hi));
        let period = frame_input.period[k];
        if period > 0.0 {
            let bin = occupancy_bin(c, period, frame_input.inverse_period[k]) as usize;
            bounds[OCCUPANCY + FRAME_WORDS * k + bin / 32] |= 1 << (bin % 32);
        }
    }
}

/// `next_occupied`: the first occupied slice at or after `start` in one axis's words, or
/// [`FRAME_BINS`] where none is.
fn next_occupied(occupied: &[u32], start: u32) -> u32 {
    let mut word = start as usize / 32;
    if word >= FRAME_WORDS {
        return FRAME_BINS;
    }
    let mut bits = occupied[word] & (u32::MAX << (start % 32));
    loop {
        if bits != 0 {
            return 32 * word as u32 + bits.trailing_zeros();
        }
        word += 1;
        if word >= FRAME_WORDS {
            return FRAME_BINS;
        }
        bits = occupied[word];
    }
}

/// `longest_gap_end`: the first occupied slice after the longest run of empty ones, walking
/// once round from the first occupied slice (a tie goes to the run found first), or
/// [`FRAME_BINS`] where every slice is occupied or none is.
#[must_use]
pub fn longest_gap_end(occupied: &[u32]) -> u32 {
    let first = next_occupied(occupied, 0);
    let mut end = FRAME_BINS;
    let mut longest = 0;
    let mut previous = first;
    while previous < FRAME_BINS {
        let next = next_occupied(occupied, previous + 1);
        // After the last occupied slice, the run goes round to the first.
        let stop = if next == FRAME_BINS {
            first + FRAME_BINS
        } else {
            next
        };
        let gap = stop - previous - 1;
        if gap > longest {
            longest = gap;
            end = stop % FRAME_BINS;
        }
        previous = next;
    }
    end
}

/// `bin_start`: the start of slice `bin` of a box of `period`, floored to a multiple of
/// f32's spacing at the period (`2^(e - 23)` for a period `m · 2^(e - 23)`, `m` a 24-bit
/// integer): `floor(bin · m / FRAME_BINS)` spacings, in u32 with `m` split into 12-bit
/// halves (each product below 2²⁴), exact in f32 and below the period. 0 where the spacing is
/// not a normal f32 (a period below 2⁻¹⁰³), which GPUs would flush.
#[must_use]
pub fn bin_start(bin: u32, period: f32) -> f32 {
    let bits = period.to_bits();
    let biased_exponent = bits >> 23;
    if biased_exponent < 24 {
        return 0.0;
    }
    let m = (bits & 0x7f_ffff) | 0x80_0000;
    let spacings = bin * (m >> 12) + ((bin * (m & 0xfff)) >> 12);
    spacings as f32 * f32::from_bits((biased_exponent - 23) << 23)
}

/// `frame`: the step's parameters from the bounds that [`scene_bounds`] gathered (the
/// input's options, count and capacities, with its local frame: per axis the origin, and the
/// Morton grid, `[0, L)` on an axis that wraps, else the span of the paths about the origin;
/// none where that is empty or infinite), and the dispatch of the per-body passes.
/// [`StepParams::new`] is this over the bounds of every body.
#[must_use]
pub fn frame(frame_input: &StepParams, bounds: &[u32]) -> (StepParams, SweepDispatch) {
    let mut output = *frame_input;
    let cells = ((1u32 << MORTON_BITS) - 1) as f32;
    for k in 0..3 {
        let lo_word = !bounds[k];
        let hi_word = bounds[3 + k];
        let lo = unordered(lo_word);
        let hi = unordered(hi_word);
        let period = frame_input.period[k];
        let mut origin = 0.0;
        let mut low = 0.0;
        let mut extent = 0.0;
        if period > 0.0 {
            let words = &bounds[OCCUPANCY + FRAME_WORDS * k..][..FRAME_WORDS];
            let end = longest_gap_end(words);
            if end < FRAME_BINS {
                origin = bin_start(end, period);
            }
            extent = period;
        } else if lo_word <= hi_word {
            // 0 clamped to the span, by comparisons: a zero's sign is the same everywhere.
            origin = if lo > 0.0 {
                lo
            } else if hi < 0.0 {
                hi
            } else {
                0.0
            };
            low = lo - origin;
            extent = hi - lo;
        }
        output.origin[k] = origin;
        let gridded = extent > 0.0 && extent <= f32::MAX;
        output.morton_origin[k] = if gridded { low } else { 0.0 };
        output.morton_scale[k] = if gridded { cells / extent } else { 0.0 };
    }
    (output, SweepDispatch::new(frame_input.body_count))
}

impl StepParams {
    /// The parameters of a step of `bodies` with `options`, as `gpu::ContactPipeline` sets
    /// them before its capacities: the options, the broad phase's local frame (its origin a
    /// point near the bodies, as the CPU step's broad phase takes it, `local_origin`) and
    /// the Morton grid over the boxes' centres in it (the box `[0, L]` on an axis that wraps,
    /// else the span of the centres' paths). The capacities are left 0 for the caller to set.
    ///
    /// The shader's `scene_bounds` and `frame` (in `shaders/frame.wgsl`) make the same
    /// parameters on the device, from bodies that never leave it: this is their twins,
    /// [`scene_bounds`] over every body and [`frame`], bit for bit.
    #[must_use]
    pub fn new(bodies: &[BodyRecord], options: &SweepOptions) -> Self {
        Self::framed(bodies, &SweepParams::new(options, 0))
    }

    /// The parameters of a step of `bodies` with the options of `sweep` (its periods only
    /// where [`FLAG_PERIODIC`] is set), no capacities.
    fn framed(bodies: &[BodyRecord], sweep: &SweepParams) -> Self {
        let periodic = sweep.flags & FLAG_PERIODIC != 0;
        let unframed = Self {
            period: if periodic { sweep.period } else { [0.0; 3] },
            flags: sweep.flags,
            inverse_period: if periodic {
                sweep.inverse_period
            } else {
                [0.0; 3]
            },
            body_count: bodies.len() as u32,
            ..Self::default()
        };
        frame(&unframed, &bounds_of(bodies, &unframed)).0
    }
}

/// The bounds that the shader's `scene_bounds` gathers from `bodies`, by its twin: a
/// chunk of bodies at a time in parallel (the words of each chunk filled in place, not moved
/// per body), joined as the device's atomics join them (the first words by maximum, the
/// occupied slices by or).
fn bounds_of(bodies: &[BodyRecord], frame_input: &StepParams) -> [u32; BOUNDS_WORDS] {
    bodies
        .par_chunks(16_384)
        .map(|chunk| {
            let input = StepParams {
                body_count: chunk.len() as u32,
                ..*frame_input
            };
            let mut bounds = [0; BOUNDS_WORDS];
            for i in 0..chunk.len() {
                scene_bounds(i, &input, chunk, &mut bounds);
            }
            bounds
        })
        .reduce(
            || [0; BOUNDS_WORDS],
            |mut joined, other| {
                for (word, (joined, other)) in joined.iter_mut().zip(other).enumerate() {
                    *joined = if word < OCCUPANCY {
                        (*joined).max(other)
                    } else {
                        *joined | other
                    };
                }
                joined
            },
        )
}

/// The origin of the broad phase's local frame for `bodies` with the options of `sweep`, on
/// both steps: a point near the bodies, subtracted from every centre (and, on an axis that
/// wraps, the difference wrapped into `[0, L)`) before the swept boxes are made, so that the
/// boxes' corners round at the size of the scene rather than of its distance from the
/// world's origin, and the margin that covers that rounding stays small (`margin` in
/// above). [`StepParams::new`]'s origin.
///
/// On an axis that does not wrap, the point of the centres' paths nearest 0 (0 itself where
/// the paths span it): no body's local coordinate is then larger than its own. On an axis
/// that wraps, the start of the first occupied of
/// [`FRAME_BINS`](FRAME_BINS) equal slices of the box after the
/// longest run of empty ones (0 where none is empty; a centre's slice from its f32 wrap, as
/// the shader has it): a cluster anywhere in the box, across a face of it too, has local
/// coordinates no larger than its extent plus a slice. It is a multiple of the spacing of f32
/// at the period, at or below the slice's start and below the period, so that the shader's
/// `L - origin` and `c - origin` (for `c` in `[origin, L)`) are exact
/// ([`bin_start`](bin_start)).
#[must_use]
pub(crate) fn local_origin(bodies: &[BodyRecord], sweep: &SweepParams) -> [f32; 3] {
    StepParams::framed(bodies, sweep).origin
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition `longest_gap_end` keeps, a slice at a time: the first occupied of the
    /// slices after the longest run of empty ones, walking once round from the first occupied
    /// slice, ties to the run found first.
    fn longest_gap_end_by_slices(occupied: &[u32]) -> u32 {
        let bins = FRAME_BINS as usize;
        let is_occupied = |bin: usize| occupied[bin / 32] >> (bin % 32) & 1 != 0;
        let Some(first) = (0..bins).find(|&bin| is_occupied(bin)) else {
            return FRAME_BINS;
        };
        let (mut best, mut best_length, mut length) = (FRAME_BINS, 0, 0);
        for step in 1..=bins {
            let bin = (first + step) % bins;
            if is_occupied(bin) {
                if length > best_length {
                    (best, best_length) = (bin as u32, length);
                }
                length = 0;
            } else {
                length += 1;
            }
        }
        best
    }

    /// A word at a time, the walk finds the slice the walk a slice at a time finds: on
    /// random slices of every density, none, all, one, every other one (all runs tied), and
    /// two equal runs whose tie the walk's start decides.
    #[test]
    fn the_longest_gap_by_words_is_the_longest_gap_by_slices() {
        let mut cases: Vec<Vec<u32>> = vec![
            vec![0; FRAME_WORDS],
            vec![u32::MAX; FRAME_WORDS],
            vec![0x5555_5555; FRAME_WORDS],
            vec![0xaaaa_aaaa; FRAME_WORDS],
        ];
        for bin in [0, 1, 31, 32, 2047, 4095] {
            let mut one = vec![0; FRAME_WORDS];
            one[bin / 32] |= 1 << (bin % 32);
            cases.push(one);
        }
        // Slices 100 and 2148 occupied: two runs of 2047, the second ending at the first
        // occupied slice; and the same with the runs unequal by one either way.
        for (a, b) in [(100, 2148), (100, 2147), (100, 2149), (0, 2048)] {
            let mut two = vec![0; FRAME_WORDS];
            two[a / 32] |= 1 << (a % 32);
            two[b / 32] |= 1 << (b % 32);
            cases.push(two);
        }
        let mut state = 0x9e37_79b9_u32;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        };
        for density in [1, 2, 4, 8, 16, 24, 30, 31] {
            for _ in 0..50 {
                let words = (0..FRAME_WORDS)
                    .map(|_| {
                        // Each bit set with probability about density / 32.
                        (0..32).fold(0, |word, bit| {
                            word | u32::from(random() % 32 < density) << bit
                        })
                    })
                    .collect();
                cases.push(words);
            }
        }
        for occupied in &cases {
            assert_eq!(
                longest_gap_end(occupied),
                longest_gap_end_by_slices(occupied),
                "{occupied:x?}"
            );
        }
        assert_eq!(longest_gap_end(&cases[0]), FRAME_BINS);
        assert_eq!(longest_gap_end(&cases[1]), FRAME_BINS);
        assert_eq!(longest_gap_end(&cases[2]), 2);
        assert_eq!(longest_gap_end(&cases[cases.len() - 400 - 4]), 2148);
    }

    /// The integer start of a slice is f64's `floor(start / spacing) · spacing` of the exact
    /// start, a multiple of the spacing at or below it and below the period.
    #[test]
    fn a_slice_start_is_the_exact_start_floored_to_the_spacing() {
        for period in [
            1.0f32,
            13.0,
            13.5,
            54.0,
            1e6,
            1e7,
            3.3e7,
            0.1,
            1e-30,
            1e30,
            16_777_215.0,
            2e-31,
        ] {
            let spacing =
                f64::from(f32::from_bits(period.to_bits() & 0x7f80_0000)) * f64::from(f32::EPSILON);
            for bin in [0, 1, 2, 1000, 2048, 4093, 4095] {
                let exact = f64::from(bin) * f64::from(period) / f64::from(FRAME_BINS);
                let expected = ((exact / spacing).floor() * spacing) as f32;
                let start = bin_start(bin, period);
                assert_eq!(start, expected, "period {period}, slice {bin}");
                assert!(f64::from(start) <= exact && start < period);
                assert_eq!(f64::from(start) % spacing, 0.0);
            }
        }
        // Below 2⁻¹⁰³ the spacing is not a normal f32: the box's corner.
        assert_eq!(bin_start(4095, 1e-32), 0.0);
    }

    fn at(centers: &[[f32; 3]]) -> Vec<BodyRecord> {
        centers
            .iter()
            .map(|&center| BodyRecord {
                center,
                radius: 0.5,
                ..BodyRecord::default()
            })
            .collect()
    }

    /// On an open axis, the point of the span nearest 0; on one that wraps, the start of the
    /// occupied slices after the longest empty run, on f32's grid at the period.
    #[test]
    fn the_local_origin_lies_at_the_bodies() {
        let open = at(&[[5.0, -3.0, -10.0], [10.0, 4.0, -2.0]]);
        assert_eq!(local_origin(&open, &SweepParams::DEFAULT), [5.0, 0.0, -2.0]);
        let period = 1e7;
        let in_box = SweepParams::new(
            &SweepOptions::default()
                .with_periodic_box(crate::PeriodicBox::cube(period).expect("a valid box")),
            0,
        );
        // Across the corner at the origin: the slice below the box's end.
        let across = at(&[[-27.0, 27.0, 1e6], [27.0, -27.0, 1e6 + 54.0]]);
        let origin = local_origin(&across, &in_box);
        let slice = period / FRAME_BINS as f32;
        assert!(origin[0] <= period - 27.0 && origin[0] > period - 27.0 - slice);
        assert_eq!(origin[0], origin[1]);
        assert!(origin[2] <= 1e6 && origin[2] > 1e6 - slice);
        let spacing = 1.0; // of f32 at 1e7
        assert!(origin.iter().all(|&o| o % spacing == 0.0 && o < period));
        // Every slice occupied: the box's own corner.
        let filled: Vec<[f32; 3]> = (0..FRAME_BINS)
            .map(|i| [(i as f32 + 0.5) * slice; 3])
            .collect();
        assert_eq!(local_origin(&at(&filled), &in_box), [0.0; 3]);
        assert_eq!(local_origin(&[], &in_box), [0.0; 3]);
    }
}
