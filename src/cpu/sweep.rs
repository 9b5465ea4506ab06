//! The f32 twin of `shaders/sweep.wgsl`, line for line: same names, same operations in the
//! same order, so a reader can diff the two and a test can run both on one input.
//! WGSL's `dot`, `cross`, `normalize`, `select` map to glam's and to `if`.

use glam::Vec3;

use crate::gpu::layout::{GpuBody, ImpactRecord, STATUS_CONTACT, STATUS_MISS, STATUS_OVERLAPPING};

// Smallest normal f32: below it a squared length has no usable direction (and GPUs flush it).
const MIN_NORMAL: f32 = f32::MIN_POSITIVE;

fn miss() -> ImpactRecord {
    ImpactRecord {
        point: [0.0; 3],
        time_of_impact: 0.0,
        normal: [0.0; 3],
        status: STATUS_MISS,
    }
}

// Unit vector from the first centre to the second. Coincident centres (point bodies at
// contact, identical bodies) have no such direction: fall back to the relative motion, then +x.
fn contact_normal(separation: Vec3, relative_motion: Vec3) -> Vec3 {
    if separation.dot(separation) >= MIN_NORMAL {
        return separation.normalize();
    }
    if relative_motion.dot(relative_motion) >= MIN_NORMAL {
        return relative_motion.normalize();
    }
    Vec3::X
}

pub(crate) fn largest_component(v: Vec3) -> f32 {
    v.x.abs().max(v.y.abs()).max(v.z.abs())
}

// The power of two that brings `largest` (>= 0, below 2^127) into [1, 2): 2^(127 - E) for
// the biased exponent E of `largest`. Zero and subnormals (E = 0) get 2^127.
pub(crate) fn power_of_two_scale(largest: f32) -> f32 {
    let biased_exponent = (largest.to_bits() >> 23) & 0xff;
    f32::from_bits((254 - biased_exponent) << 23)
}

/// `sweep_pair` of the shader: the impact record of bodies `a` and `b`.
#[must_use]
pub fn sweep_pair(a: &GpuBody, b: &GpuBody) -> ImpactRecord {
    let (a_center, b_center) = (Vec3::from_array(a.center), Vec3::from_array(b.center));
    let (a_displacement, b_displacement) = (
        Vec3::from_array(a.displacement),
        Vec3::from_array(b.displacement),
    );
    // Relative coordinates first: b stands still and a moves by the difference of the
    // displacements. Nothing below squares an absolute coordinate. Validation keeps every
    // input within f32::MAX / 8, so these differences and sums are finite.
    let raw_position = b_center - a_center;
    let raw_motion = a_displacement - b_displacement;
    let raw_sum_radii = a.radius + b.radius;
    // Rescale by a power of two (exact) so that the largest relative length lies in [1, 2):
    // no square or product below can overflow, and none that matters underflows. The time,
    // a ratio, does not change; the normal is a direction.
    let largest = largest_component(raw_position)
        .max(largest_component(raw_motion))
        .max(raw_sum_radii);
    let scale = power_of_two_scale(largest);
    let relative_position = raw_position * scale;
    let relative_motion = raw_motion * scale;
    let sum_radii = raw_sum_radii * scale;
    let sum_radii_squared = sum_radii * sum_radii;
    let distance_squared = relative_position.dot(relative_position);
    // |C|^2 - R^2: zero or below means touching or overlapping at t = 0.
    let gap_product = distance_squared - sum_radii_squared;

    let mut time_of_impact = 0.0;
    let status;
    if gap_product <= 0.0 {
        status = if gap_product < 0.0 {
            STATUS_OVERLAPPING
        } else {
            STATUS_CONTACT
        };
    } else {
        let motion_squared = relative_motion.dot(relative_motion);
        // Early escape: the movement is shorter than the gap, |V| < |C| - R.
        let reach = motion_squared.sqrt() + sum_radii;
        if reach * reach < distance_squared {
            return miss();
        }
        // Early escape: not moving towards b (zero relative motion lands here too).
        let approach = relative_position.dot(relative_motion);
        if approach <= 0.0 {
            return miss();
        }
        // Early escape: closest approach beyond the radius sum. |C x V|^2 is |V|^2 times the
        // squared closest distance, without the source's |C|^2 - D^2 cancellation.
        let offset = relative_position.cross(relative_motion);
        let discriminant = motion_squared * sum_radii_squared - offset.dot(offset);
        if discriminant < 0.0 {
            return miss();
        }
        // The smaller root of |C - V t|^2 = R^2 in its stable form: every term is positive,
        // so nothing cancels (the source's D - sqrt(T) does) and the divisor is > 0.
        time_of_impact = gap_product / (approach + discriminant.sqrt());
        // The first root never comes after the vertex approach / motion_squared of |C - V t|^2.
        // Where rounding has made a slightly negative discriminant 0 (bodies touching at
        // t = 0 and sliding apart), the quotient above is noise over noise: the vertex, where
        // the bodies come closest, is the answer the bound allows. (motion_squared > 0 here
        // whenever the test holds, so the division is guarded.)
        if time_of_impact * motion_squared > approach {
            time_of_impact = approach / motion_squared;
        }
        // Final check: contact must come within this step (written so that NaN misses).
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(time_of_impact <= 1.0) {
            return miss();
        }
        status = STATUS_CONTACT;
    }

    let separation = relative_position - relative_motion * time_of_impact;
    let normal = contact_normal(separation, relative_motion);
    let center_a = a_center + a_displacement * time_of_impact;
    ImpactRecord {
        point: (center_a + normal * a.radius).to_array(),
        time_of_impact,
        normal: normal.to_array(),
        status,
    }
}
