//! The f64 oracle: the swept test of the source documents, written to be clear and exact
//! rather than fast. Tests and the headless example judge the f32 paths against it.
//!
//! The method is "Pool Hall Lessons" (Gamasutra, 2002): a dynamic–static sweep with early
//! escapes, the dynamic–dynamic case reduced to it by relative motion, and 3D reduced to the
//! same algebra (2D is 3D with z = 0). Where the source's formulas lose precision they are
//! replaced by equivalent stable ones; each replacement is marked `FIX`.
//!
//! Used by: `docs/guide.md` ("Checking answers against the oracle"), `examples/headless.rs`
//! (the oracle's answers), `python/src/judge.rs` (`reference_sweep`).

use crate::par::prelude::*;
use glam::DVec3;

use crate::geometry::{ImpactStatus, MovingSphere, Wall};
use crate::options::SweepOptions;

/// A moving body in f64.
///
/// Used by: `examples/tunneling.rs` (in `examples/tunnel/mod.rs`), `examples/resident_step.rs`,
/// `python/src/judge.rs`.
#[derive(Copy, Clone, Debug, PartialEq, Default)]
pub struct Body {
    /// Centre at t = 0.
    pub center: DVec3,
    /// Radius (non-negative).
    pub radius: f64,
    /// Displacement over the step.
    pub displacement: DVec3,
}

impl<B: Into<MovingSphere>> From<B> for Body {
    /// Widens an f32 body exactly.
    fn from(b: B) -> Self {
        let b = b.into();
        Self {
            center: b.center.as_dvec3(),
            radius: f64::from(b.radius),
            displacement: b.displacement.as_dvec3(),
        }
    }
}

/// The oracle's answer for a pair.
///
/// Used by: `examples/headless.rs` (the oracle's answers), `examples/tunneling.rs` (in
/// `examples/tunnel/mod.rs`), `python/src/judge.rs` (`reference_sweep`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ReferenceImpact {
    /// Fraction of the step in [0, 1] at which the bodies first touch.
    pub time_of_impact: f64,
    /// The first body's surface point facing the second at contact.
    pub point: DVec3,
    /// Unit normal from the first body's centre to the second's at contact.
    pub normal: DVec3,
    /// Contact during the step or overlap at its start.
    pub status: ImpactStatus,
}

/// `b`'s centre relative to `a`'s, exactly: in a periodic box, relative to the nearest image
/// of `b` (`s - L round(s / L)` on each axis that wraps; exact in f64 for f32 inputs of
/// similar magnitude).
#[must_use]
pub(crate) fn center_offset(a: &Body, b: &Body, options: SweepOptions) -> DVec3 {
    let offset = b.center - a.center;
    let Some(periodic_box) = &options.periodic_box else {
        return offset;
    };
    let period = periodic_box.period().as_dvec3();
    DVec3::from_array(std::array::from_fn(|axis| {
        if periodic_box.wraps(axis) {
            offset[axis] - period[axis] * (offset[axis] / period[axis]).round_ties_even()
        } else {
            offset[axis]
        }
    }))
}

/// When two moving spheres (or circles, with z = 0) first touch, in f64.
///
/// Dynamic–dynamic is reduced to dynamic–static by relative motion: in the frame of `b`,
/// `a` moves by `a.displacement - b.displacement` and `b` stands still. The options act as in
/// [`crate::cpu::sweep_sphere_sphere`]: in a periodic box the nearest image of `b` is swept;
/// with `stop_at_penetration` false a pair touching or overlapping at t = 0 while separating
/// (`s · v <= 0`) is a miss.
///
/// Used by: `python/src/judge.rs` (`reference_sweep`), `examples/resident_step.rs`,
/// `examples/tunneling.rs` (in `examples/tunnel/mod.rs`).
///
/// # Returns
/// `None` when the bodies never come within the sum of their radii during the step; otherwise
/// the first time they touch (touching exactly at t = 1, or tangentially, is a hit), or t = 0
/// with [`ImpactStatus::Overlapping`] if they already overlap.
#[must_use]
pub fn sweep_sphere_sphere(a: &Body, b: &Body, options: SweepOptions) -> Option<ReferenceImpact> {
    let relative_position = center_offset(a, b, options);
    let relative_motion = a.displacement - b.displacement;
    let sum_radii = a.radius + b.radius;
    let (time_of_impact, status) =
        sweep_point_sphere(relative_position, relative_motion, sum_radii)?;
    // The separating option: touching or overlapping at t = 0 (the test above) and not
    // approaching.
    let at_start = relative_position.length() <= sum_radii;
    let separating = relative_position.dot(relative_motion) <= 0.0;
    if at_start && separating && !options.stop_at_penetration {
        return None;
    }

    // Centre of b relative to a at contact.
    let separation = relative_position - relative_motion * time_of_impact;
    let normal = separation
        .try_normalize()
        .or_else(|| relative_motion.try_normalize())
        .unwrap_or(DVec3::X);
    let center_a = a.center + a.displacement * time_of_impact;
    Some(ReferenceImpact {
        time_of_impact,
        point: center_a + normal * a.radius,
        normal,
        status,
    })
}

/// Pool Hall Lessons' dynamic–static test: a body moving by `movement` towards a fixed body
/// whose centre lies at `center_offset` from the mover's; they touch at `sum_radii`.
///
/// Returns the fraction of `movement` travelled before contact, and the status.
#[must_use]
pub(crate) fn sweep_point_sphere(
    center_offset: DVec3,
    movement: DVec3,
    sum_radii: f64,
) -> Option<(f64, ImpactStatus)> {
    let c = center_offset; // the source's C = B - A
    let length_c = c.length();

    // FIX: the source never checks for bodies that already overlap; its later escapes
    // would call an overlapping pair that moves apart a miss.
    // Touching exactly at t = 0 is a contact at t = 0, whatever the motion.
    if length_c < sum_radii {
        return Some((0.0, ImpactStatus::Overlapping));
    }
    if length_c == sum_radii {
        return Some((0.0, ImpactStatus::Contact));
    }

    // Early escape: the movement is shorter than the gap between the surfaces.
    let magnitude = movement.length();
    if magnitude < length_c - sum_radii {
        return None;
    }

    // Early escape: not moving towards B. `D = N . C` with N the unit movement; the sign test
    // needs no normalisation. Zero movement lands here too, so `magnitude > 0` below.
    if movement.dot(c) <= 0.0 {
        return None;
    }
    let n = movement / magnitude;
    let d = n.dot(c);

    // Early escape: the closest approach is farther than the radius sum.
    // FIX: the source forms F = |C|^2 - D^2, which cancels catastrophically when the
    // movement points almost at B; |N x C|^2 is the same squared distance without it.
    let f = n.cross(c).length_squared();
    let sum_radii_squared = sum_radii * sum_radii;
    if f > sum_radii_squared {
        return None;
    }

    // Distance travelled before contact: the source's D - sqrt(T) with T = R^2 - F, the
    // squared half-chord of the movement line inside the inflated sphere.
    // FIX: D - sqrt(T) cancels when D ~ sqrt(T), i.e. when contact comes early in the step
    // (a small gap); multiplying by the conjugate gives the same root as
    // (|C|^2 - R^2) / (D + sqrt(T)), whose terms are all positive.
    let half_chord_squared = sum_radii_squared - f;
    let gap_product = (length_c - sum_radii) * (length_c + sum_radii);
    let distance = gap_product / (d + half_chord_squared.sqrt());

    // Final check: contact must come within this step's movement.
    if distance > magnitude {
        return None;
    }
    Some((
        (distance / magnitude).clamp(0.0, 1.0),
        ImpactStatus::Contact,
    ))
}

/// When a moving sphere (or circle) first touches a static [`Wall`], in f64.
///
/// * **Plane** (unit normal `n`, free on its side): the centre's height above the plane,
///   `h(t) = n · (c + v t - p)`, falls to the radius at `t = (h(0) - r) / -(n · v)`. A body
///   with `h(0) < r` (also behind the plane) overlaps it.
/// * **Segment** from `s` to `e`: the segment inflated by the radius is a capsule (a
///   cylinder, in 2D a band, with a ball on each end point), and the centre's path enters it
///   first either through the side, where the time is that of the pair sweep with the
///   components across the segment only (the sweep of a point against a line), at a moment
///   when the centre projects inside the segment, or through an end ball, where it is the
///   pair sweep against that end point. The earliest of the three is the answer; the side
///   is skipped where the path starts within the radius of the line (it can then enter the
///   capsule only through an end). A segment whose end points coincide is that point.
///
/// The impact's normal points from the body's centre towards the wall (`-n` on a plane, to
/// the nearest point of the segment), as the first body's normal of a pair does; its point is
/// on the body's surface. With `stop_at_penetration` false, a body touching or overlapping
/// the wall at t = 0 while not moving towards it is a miss. `None` for a plane with a zero
/// normal.
///
/// **In a periodic box** the walls lie in its primary cell (`[0, L)` on each axis that
/// wraps) and a body meets a wall when its image in that cell touches it. The body's start
/// is wrapped into the cell; the step is cut where the centre crosses a face of the cell
/// (once an axis at most within the validated reach, [`crate::PeriodicBox`]), and on each
/// piece `[t_i, t_{i+1}]` the image then in the cell (shifted back by the periods crossed
/// so far) is swept from `t_i` as above: it meets the wall at the first time in the piece
/// that it touches it, at `t_i` if it already touches or overlaps it there (a miss under
/// the separating option if it is not moving towards it then). The earliest over the
/// pieces is the answer, with the point and normal of the image that touched; a touch after
/// t = 0 is an [`ImpactStatus::Contact`].
///
/// Used by: `examples/tunneling.rs` (its plates, in `examples/tunnel/mod.rs`).
#[must_use]
pub fn sweep_sphere_wall(
    body: &Body,
    wall: &Wall,
    options: SweepOptions,
) -> Option<ReferenceImpact> {
    let Some(periodic_box) = &options.periodic_box else {
        return sweep_sphere_wall_in_open_space(body, wall, &options);
    };
    let period = periodic_box.period().as_dvec3();
    let wraps = |axis: usize| periodic_box.wraps(axis);
    // Per axis: the image (in periods) the centre starts in, and when and which way it
    // crosses a face of the cell.
    let mut image = [0.0; 3];
    let mut crossings = Vec::new();
    for axis in (0..3).filter(|&axis| wraps(axis)) {
        let (center, length, motion) = (body.center[axis], period[axis], body.displacement[axis]);
        image[axis] = (center / length).floor();
        // The quotient rounds: put a centre within rounding of a face in the cell.
        if center - image[axis] * length < 0.0 {
            image[axis] -= 1.0;
        }
        // The upper face compared with the centre itself ((image + 1) × length is exact): a
        // centre below the cell by less than an ulp of `length` keeps its image -1 though
        // its image in the cell rounds onto the upper face.
        if center >= (image[axis] + 1.0) * length {
            image[axis] += 1.0;
        }
        let start = center - image[axis] * length;
        // Moving up, from the centre itself: (image + 1) × length is the face ahead exactly,
        // where `length - start` would lose a centre a hair below the cell to the rounding of
        // `start` near the upper face.
        let ahead = if motion > 0.0 {
            (image[axis] + 1.0) * length - center
        } else {
            start
        };
        if motion != 0.0 && ahead <= motion.abs() {
            crossings.push(((ahead / motion.abs()).max(0.0), axis, motion.signum()));
        }
    }
    // In time order, then axis order.
    crossings.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut earliest: Option<ReferenceImpact> = None;
    for piece in 0..=crossings.len() {
        let start = if piece == 0 {
            0.0
        } else {
            crossings[piece - 1].0
        };
        let end = crossings.get(piece).map_or(1.0, |crossing| crossing.0);
        if piece > 0 {
            let (_, axis, step) = crossings[piece - 1];
            image[axis] += step;
        }
        let shift = DVec3::from_array(std::array::from_fn(|axis| {
            if wraps(axis) {
                image[axis] * period[axis]
            } else {
                0.0
            }
        }));
        // The image from the piece's start to the end of the step.
        let image_body = Body {
            center: body.center - shift + body.displacement * start,
            radius: body.radius,
            displacement: body.displacement * (1.0 - start),
        };
        let Some(mut impact) = sweep_sphere_wall_in_open_space(&image_body, wall, &options) else {
            continue;
        };
        let time_of_impact = start + impact.time_of_impact * (1.0 - start);
        if time_of_impact <= end
            && earliest.is_none_or(|earliest| time_of_impact < earliest.time_of_impact)
        {
            impact.time_of_impact = time_of_impact;
            if time_of_impact > 0.0 {
                impact.status = ImpactStatus::Contact;
            }
            earliest = Some(impact);
        }
    }
    earliest
}

/// [`sweep_sphere_wall`] without a periodic box.
fn sweep_sphere_wall_in_open_space(
    body: &Body,
    wall: &Wall,
    options: &SweepOptions,
) -> Option<ReferenceImpact> {
    let (c, v, r) = (body.center, body.displacement, body.radius);
    // The wall as seen from the body: `towards` is the direction from the centre to the
    // wall at t = 0 (for the separating option and an overlap's normal), `gap` the distance
    // from the body's surface to the wall then (below 0: an overlap).
    let (time_of_impact, towards, gap, separation_at) = match *wall {
        Wall::Plane { point, normal } => {
            let n = normal.as_dvec3().try_normalize()?;
            let height = n.dot(c - point.as_dvec3());
            let fall = -n.dot(v);
            let time = if height <= r {
                0.0
            } else if fall > 0.0 && height - r <= fall {
                (height - r) / fall
            } else {
                return None;
            };
            (time, -n, height - r, Separation::Fixed(-n))
        }
        Wall::Segment { start, end } => {
            let (start, end) = (start.as_dvec3(), end.as_dvec3());
            let edge = end - start;
            let edge_squared = edge.length_squared();
            // Each end point, and the line's components across the edge.
            let to_start = start - c;
            let to_end = end - c;
            let across = |x: DVec3| {
                if edge_squared > 0.0 {
                    x - edge * (edge.dot(x) / edge_squared)
                } else {
                    x
                }
            };
            let along = |x: DVec3| {
                if edge_squared > 0.0 {
                    (edge.dot(x) / edge_squared).clamp(0.0, 1.0)
                } else {
                    0.0
                }
            };
            // At t = 0: the nearest point of the segment.
            let nearest = to_start + edge * along(-to_start);
            if nearest.length() <= r {
                (
                    0.0,
                    nearest,
                    nearest.length() - r,
                    Separation::Fixed(nearest),
                )
            } else {
                let mut best: Option<(f64, Separation)> = None;
                let mut consider = |time: f64, separation: Separation| {
                    if best.is_none_or(|(t, _)| time < t) {
                        best = Some((time, separation));
                    }
                };
                for point in [to_start, to_end] {
                    if let Some((time, _)) = sweep_point_sphere(point, v, r) {
                        consider(time, Separation::Moving(point, v));
                    }
                }
                let (side, side_motion) = (across(to_start), across(v));
                if edge_squared > 0.0
                    && side.length() > r
                    && let Some((time, _)) = sweep_point_sphere(side, side_motion, r)
                {
                    // Where the centre then projects on the segment's line, from its start.
                    let projection = edge.dot(v * time - to_start) / edge_squared;
                    if (0.0..=1.0).contains(&projection) {
                        consider(time, Separation::Moving(side, side_motion));
                    }
                }
                let (time, separation) = best?;
                (time, nearest, nearest.length() - r, separation)
            }
        }
    };
    let status = if time_of_impact > 0.0 {
        ImpactStatus::Contact
    } else {
        // Touching or overlapping at t = 0: the gap is zero or below.
        if !options.stop_at_penetration && towards.dot(v) <= 0.0 {
            return None;
        }
        if gap < 0.0 {
            ImpactStatus::Overlapping
        } else {
            ImpactStatus::Contact
        }
    };
    let normal = separation_at
        .at(time_of_impact)
        .try_normalize()
        .or_else(|| v.try_normalize())
        .unwrap_or(DVec3::X);
    let center = c + v * time_of_impact;
    Some(ReferenceImpact {
        time_of_impact,
        point: center + normal * r,
        normal,
        status,
    })
}

/// The vector from a body's centre towards the wall's nearest point, over the step.
#[derive(Copy, Clone, Debug)]
enum Separation {
    /// The same at every time (a plane's `-n`, or an overlap's direction at t = 0).
    Fixed(DVec3),
    /// `position - motion · t`.
    Moving(DVec3, DVec3),
}

impl Separation {
    fn at(self, time: f64) -> DVec3 {
        match self {
            Self::Fixed(direction) => direction,
            Self::Moving(position, motion) => position - motion * time,
        }
    }
}

/// [`sweep_sphere_sphere`] over every candidate pair, in parallel on all cores.
///
/// Used by: `examples/headless.rs`, `examples/compare.rs`, `examples/step_bench.rs`.
///
/// # Panics
/// If a pair index is out of range: the oracle trusts its input (see
/// [`crate::low_level::validate_pairs`]).
#[must_use]
pub fn sweep_batch<B>(
    bodies: &[B],
    pairs: &[[u32; 2]],
    options: SweepOptions,
) -> Vec<Option<ReferenceImpact>>
where
    B: Copy + Into<MovingSphere> + Sync,
{
    let body = |index: u32| Body::from(bodies[index as usize]);
    pairs
        .par_iter()
        .map(|&[i, j]| sweep_sphere_sphere(&body(i), &body(j), options))
        .collect()
}
