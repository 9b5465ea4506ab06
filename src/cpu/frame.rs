//! The host's local frame of the broad phase: [`StepParams::new`] and the CPU step's
//! `local_origin`, both by the twins of the shader's `scene_bounds` and `frame` over every
//! body, so that the host's frame and the device's are the same bits.

use crate::par::prelude::*;

use super::broad_phase::{BOUNDS_WORDS, OCCUPANCY, frame, scene_bounds};
use crate::layout::{BodyRecord, FLAG_PERIODIC, StepParams, SweepParams};
use crate::options::SweepOptions;

impl StepParams {
    /// The parameters of a step of `bodies` with `options`, as `gpu::ContactPipeline` sets
    /// them before its capacities: the options, the broad phase's local frame (its origin a
    /// point near the bodies, as the CPU step's broad phase takes it, `local_origin`) and
    /// the Morton grid over the boxes' centres in it (the box `[0, L]` on an axis that wraps,
    /// else the span of the centres' paths). The capacities are left 0 for the caller to set.
    ///
    /// The shader's `scene_bounds` and `frame` (in `shaders/broad_phase.wgsl`) make the same
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
/// `src/cpu/broad_phase.rs`). [`StepParams::new`]'s origin.
///
/// On an axis that does not wrap, the point of the centres' paths nearest 0 (0 itself where
/// the paths span it): no body's local coordinate is then larger than its own. On an axis
/// that wraps, the start of the first occupied of
/// [`FRAME_BINS`](crate::cpu::broad_phase::FRAME_BINS) equal slices of the box after the
/// longest run of empty ones (0 where none is empty; a centre's slice from its f32 wrap, as
/// the shader has it): a cluster anywhere in the box, across a face of it too, has local
/// coordinates no larger than its extent plus a slice. It is a multiple of the spacing of f32
/// at the period, at or below the slice's start and below the period, so that the shader's
/// `L - origin` and `c - origin` (for `c` in `[origin, L)`) are exact
/// ([`bin_start`](crate::cpu::broad_phase::bin_start)).
#[must_use]
pub(crate) fn local_origin(bodies: &[BodyRecord], sweep: &SweepParams) -> [f32; 3] {
    StepParams::framed(bodies, sweep).origin
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let slice = period / crate::cpu::broad_phase::FRAME_BINS as f32;
        assert!(origin[0] <= period - 27.0 && origin[0] > period - 27.0 - slice);
        assert_eq!(origin[0], origin[1]);
        assert!(origin[2] <= 1e6 && origin[2] > 1e6 - slice);
        let spacing = 1.0; // of f32 at 1e7
        assert!(origin.iter().all(|&o| o % spacing == 0.0 && o < period));
        // Every slice occupied: the box's own corner.
        let filled: Vec<[f32; 3]> = (0..crate::cpu::broad_phase::FRAME_BINS)
            .map(|i| [(i as f32 + 0.5) * slice; 3])
            .collect();
        assert_eq!(local_origin(&at(&filled), &in_box), [0.0; 3]);
        assert_eq!(local_origin(&[], &in_box), [0.0; 3]);
    }
}
