// shared.wgsl: the data contract of every stage. Prepended to each stage's source (see
// `SHARED_WGSL` in src/gpu/kernel.rs); its Rust mirror, byte for byte, is src/layout.rs, and tests/shaders.rs
// checks every struct's size and offsets and every constant's value between the two.

// One moving body: a sphere, or a circle with z = 0. 32 bytes.
struct BodyRecord {
    center: vec3<f32>,
    radius: f32,
    displacement: vec3<f32>,
    // The body's collision groups as the complement of their bits (memberships in the low
    // 16 bits, the filter in the high 16), so that 0 interacts with everything. Read only by
    // the broad phase (src/groups.rs, `interacts` below).
    groups: u32,
}

// What the sweep writes for one pair. 32 bytes.
struct ImpactRecord {
    point: vec3<f32>,
    time_of_impact: f32,
    normal: vec3<f32>,
    status: u32,
}

// The options of one sweep (src/options.rs), as the shader reads them. 32 bytes.
struct SweepParams {
    // Per axis: the period of a periodic box, 0 where the axis is not periodic.
    period: vec3<f32>,
    // FLAG_* bits.
    flags: u32,
    // Per axis: 1 / period, 0 where the axis is not periodic.
    inverse_period: vec3<f32>,
    // Pairs the bound buffers hold: the most one dispatch may sweep.
    pair_capacity: u32,
}

// How many pairs a dispatch sweeps and the workgroups it runs: the first three words are the
// arguments of an indirect dispatch. 32 bytes.
struct SweepDispatch {
    workgroups_x: u32,
    workgroups_y: u32,
    workgroups_z: u32,
    // Pairs swept: the count asked for, capped at the capacity.
    pair_count: u32,
    // The count asked for (by the host, or read from the caller's count buffer).
    requested_pairs: u32,
    // 1 when requested_pairs exceeded the capacity and only pair_count pairs were swept.
    overflowed: u32,
    _pad0: u32,
    _pad1: u32,
}

// The step's parameters (src/gpu/contacts.rs): the options as SweepParams has them, the body
// count, the broad phase's local frame, the Morton codes' quantisation and the capacities of
// the counted buffers. 80 bytes.
struct StepParams {
    period: vec3<f32>,
    flags: u32,
    inverse_period: vec3<f32>,
    body_count: u32,
    // The broad phase's local frame: the boxes are made about this point near the bodies (a
    // multiple of f32's spacing at the period below it, on an axis that wraps).
    origin: vec3<f32>,
    candidate_capacity: u32,
    // The Morton codes' grid, in the local frame: cell = (box centre - morton_origin) *
    // morton_scale, per axis.
    morton_origin: vec3<f32>,
    contact_capacity: u32,
    morton_scale: vec3<f32>,
    // Saved queries each queue of the broad phase holds.
    continuation_capacity: u32,
}

// What a step of the GPU step stage counted, and whether its outputs are whole: `valid` is 1
// only when every count fitted its buffer and every query finished. A pass that consumes
// the step's outputs skips a step whose `valid` is 0. 48 bytes.
struct StepCounts {
    valid: u32,
    bodies: u32,
    candidates: u32,
    contacts: u32,
    body_capacity: u32,
    candidates_overflowed: u32,
    unfinished_queries: u32,
    saved_queries_overflowed: u32,
    contacts_overflowed: u32,
    invalid_bodies: u32,
    _pad1: u32,
    _pad2: u32,
}

// A key and what it sorts (a body or a contact's index): the record of the radix sort. 8 bytes.
struct KeyValue {
    key: u32,
    value: u32,
}

// One contact of the step: the pair (lower index first), the image of the second body the
// first met (in periods), and the sweep's record of the pair. 64 bytes.
struct ContactRecord {
    pair: vec2<u32>,
    _pad0: vec2<u32>,
    image: vec3<i32>,
    _pad1: u32,
    impact: ImpactRecord,
}

// One static wall (src/geometry.rs, Wall): a segment from `point` to `vector`, or the plane
// through `point` with unit normal `vector` (towards its free side). 32 bytes.
struct WallRecord {
    point: vec3<f32>,
    kind: u32,
    vector: vec3<f32>,
    _pad: u32,
}

// The walls stage's parameters: the options as SweepParams has them, and the counts. 48 bytes.
struct WallParams {
    // Per axis: the period of a periodic box, 0 where the axis is not periodic.
    period: vec3<f32>,
    // FLAG_* bits.
    flags: u32,
    // Per axis: 1 / period, 0 where the axis is not periodic.
    inverse_period: vec3<f32>,
    body_count: u32,
    wall_count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// A body's earliest impact on a wall (the body first, the wall second) and the wall's index.
// 48 bytes.
struct WallContactRecord {
    impact: ImpactRecord,
    wall: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// A body's earliest contact in the step, found without ordering the contacts (the earliest_*
// passes of contacts.wgsl): its time, what it met (a body or a wall) and, for a body, the
// periodic image of that partner relative to this body (in periods; ContactRecord's image as
// seen from the first body, negated for the second). All zero (EARLIEST_NONE) for a body that
// meets nothing, so that clearing the buffer initialises it. 32 bytes.
struct EarliestRecord {
    time_of_impact: f32,
    // The partner body's index, or the wall's.
    other: u32,
    // STATUS_CONTACT or STATUS_OVERLAPPING, as ImpactRecord's.
    status: u32,
    // EARLIEST_NONE, EARLIEST_BODY or EARLIEST_WALL.
    kind: u32,
    // 0 for a wall.
    image: vec3<i32>,
    _pad: u32,
}

// EarliestRecord.kind.
const EARLIEST_NONE: u32 = 0u;
const EARLIEST_BODY: u32 = 1u;
const EARLIEST_WALL: u32 = 2u;
// WallRecord.kind.
const WALL_SEGMENT: u32 = 0u;
const WALL_PLANE: u32 = 1u;
const STATUS_MISS: u32 = 0u;
const STATUS_CONTACT: u32 = 1u;
const STATUS_OVERLAPPING: u32 = 2u;
// SweepParams.flags: the box of `period` wraps relative positions to their nearest image.
const FLAG_PERIODIC: u32 = 1u;
// SweepParams.flags: a pair touching or overlapping at t = 0 while separating is a miss.
const FLAG_SEPARATING_MISSES: u32 = 2u;
// Invocations (pairs) per workgroup of every stage.
const WORKGROUP_SIZE: u32 = 64u;
// The most workgroups per dimension WebGPU guarantees; larger dispatches add a y dimension.
const MAX_WORKGROUPS_PER_DIMENSION: u32 = 65535u;
// The times-only output (`times_main`): one u32 a pair, the bits of an f32 time in [0, 1]
// for a contact, of TIME_OVERLAPPING for bodies overlapping at t = 0, or TIME_MISS_BITS
// (+infinity) for a miss. Bits, because WGSL has no infinite f32 value.
const TIME_MISS_BITS: u32 = 0x7f800000u;
const TIME_OVERLAPPING: f32 = -1.0;
// Smallest normal f32: below it a squared length has no usable direction (and GPUs flush it).
const MIN_NORMAL: f32 = 1.17549435e-38;
// A device may flush subnormal f32 inputs and results to zero (WGSL allows it; real GPUs do).
// A component of a pair's inputs whose operands all lie below 2^-47 (exponent fields below
// TINY_EXPONENT) is multiplied by 2^LIFT_LOG2 from its bits (`lift`) before any float
// arithmetic reads it: the subnormal spacing 2^-149 lifts to 2^-126, the smallest normal.
// TINY_EXPONENT + LIFT_LOG2 = 103: what the pair's rescale then takes below the normal range
// was below 2^-150 before the lift, zero on every device.
const LIFT_LOG2: u32 = 23u;
// 2^-50: a vector whose largest component lies below it is scaled before it is normalised
// (`direction`): the components a flushing device loses from its squared length are then
// below 2^-24 of it, within a rounding.
const SMALL_DIRECTION: f32 = 8.881784e-16;
const TINY_EXPONENT: u32 = 80u;
// 2^-121: what every broad-phase box is widened by beyond its relative margin, so that the
// operations a flushing device gets wrong by less than 2^-126 each cannot drop a candidate.
const SUBNORMAL_MARGIN: f32 = 3.761582e-37;
// Bits per axis of the broad phase's Morton codes: 3 x 21 = 63, kept as two u32 (high, low).
const MORTON_BITS: u32 = 21u;
// A child reference of the broad phase's tree: an internal node's index, or LEAF with a sorted
// leaf's position.
const LEAF: u32 = 0x80000000u;

// What first_touch answers for a point that never comes within reach in the step.
const NO_TOUCH: f32 = 2.0;

fn miss() -> ImpactRecord {
    return ImpactRecord(vec3<f32>(0.0), 0.0, vec3<f32>(0.0), STATUS_MISS);
}

// Unit vector from the first centre to the second. Coincident centres (point bodies at
// contact, identical bodies) have no such direction: fall back to the relative motion, then +x.
fn contact_normal(separation: vec3<f32>, relative_motion: vec3<f32>) -> vec3<f32> {
    if (dot(separation, separation) >= MIN_NORMAL) {
        return direction(separation);
    }
    if (dot(relative_motion, relative_motion) >= MIN_NORMAL) {
        return direction(relative_motion);
    }
    return vec3<f32>(1.0, 0.0, 0.0);
}

// v / |v|, for |v|^2 at least MIN_NORMAL. Below SMALL_DIRECTION a component's square may lie
// below MIN_NORMAL, where a device that flushes loses it (and with it the unit length): such
// a v is first scaled by a power of two (exact) so that its largest component lies in [1, 2).
fn direction(v: vec3<f32>) -> vec3<f32> {
    let largest = largest_component(v);
    if (largest < SMALL_DIRECTION) {
        return normalize(v * power_of_two_scale(largest));
    }
    return normalize(v);
}

// The power of two that brings `largest` (>= 0, below 2^127) into [1, 2): 2^(127 - E) for
// the biased exponent E of `largest`. Zero and subnormals (E = 0) get 2^127.
fn power_of_two_scale(largest: f32) -> f32 {
    let biased_exponent = (bitcast<u32>(largest) >> 23u) & 0xffu;
    return bitcast<f32>((254u - biased_exponent) << 23u);
}

// The exponent field of each component of `v` (0 for zero and subnormals), read from bits.
fn exponent_fields(v: vec3<f32>) -> vec3<u32> {
    return (bitcast<vec3<u32>>(v) >> vec3<u32>(23u)) & vec3<u32>(0xffu);
}

// LIFT_LOG2 for each component whose exponent field (the largest of its operands') is below
// TINY_EXPONENT, 0 for the others.
fn lift_for(exponents: vec3<u32>) -> vec3<u32> {
    return select(vec3<u32>(0u), vec3<u32>(LIFT_LOG2), exponents < vec3<u32>(TINY_EXPONENT));
}

// x * 2^log2 (log2 is 0 or LIFT_LOG2; |x| below 2^-47 when it is not 0), exactly, built from
// x's bits: no float operation reads x, so a device that flushes subnormal inputs sees none,
// and the result is normal or zero.
fn lift(x: f32, log2: u32) -> f32 {
    let bits = bitcast<u32>(x);
    let exponent = (bits >> 23u) & 0xffu;
    let mantissa = bits & 0x7fffffu;
    if (log2 == 0u) {
        return x;
    }
    if (exponent != 0u) {
        return bitcast<f32>(bits + (log2 << 23u));
    }
    // A subnormal, mantissa * 2^-149 with its leading bit at `leading`: normalised, its
    // exponent field is leading - 149 + 127 + log2. Zero (mantissa 0) keeps its bits, with
    // no test of the whole value for zero (a compiler may turn one into a float comparison,
    // which a device flushing subnormal inputs answers true for every subnormal).
    let leading = firstLeadingBit(mantissa | 1u);
    let fraction = (mantissa << (23u - leading)) & 0x7fffffu;
    let field = select(0u, leading + log2 - 22u, mantissa != 0u);
    return bitcast<f32>((bits & 0x80000000u) | (field << 23u) | fraction);
}

fn lift3(v: vec3<f32>, log2: vec3<u32>) -> vec3<f32> {
    return vec3<f32>(lift(v.x, log2.x), lift(v.y, log2.y), lift(v.z, log2.z));
}

// x * 2^-log2 (log2 at most 23) rounded to nearest, ties to even, built from x's bits: the
// inverse of `lift`, a subnormal result included, which a device that flushes could not
// produce by a multiplication.
fn unlift(x: f32, log2: u32) -> f32 {
    let bits = bitcast<u32>(x);
    let exponent = (bits >> 23u) & 0xffu;
    if (log2 == 0u || exponent > log2) {
        return bitcast<f32>(bits - (log2 << 23u));
    }
    // Below f32::MIN_POSITIVE: the significand, mantissa * 2^(max(exponent, 1) - 150), on the
    // subnormal grid 2^-149 after the division by 2^log2.
    let significand = (bits & 0x7fffffu) | select(0u, 0x800000u, exponent > 0u);
    let shift = log2 + 1u - max(exponent, 1u);
    let kept = significand >> shift;
    let rest = significand & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    let round_up = rest > half || (rest == half && (kept & 1u) == 1u);
    return bitcast<f32>((bits & 0x80000000u) | (kept + select(0u, 1u, round_up)));
}

fn unlift3(v: vec3<f32>, log2: u32) -> vec3<f32> {
    return vec3<f32>(unlift(v.x, log2), unlift(v.y, log2), unlift(v.z, log2));
}

// 2^(127 - exponent - log2), or 0 where that lies below f32's normal range: the rescale of a
// component lifted by 2^log2 in a pair whose largest unlifted length has the exponent field
// `exponent` (`power_of_two_scale` without the lift).
fn rescale(exponent: u32, log2: u32) -> f32 {
    return select(0.0, bitcast<f32>((254u - exponent - log2) << 23u), exponent + log2 < 254u);
}

fn rescale3(exponent: u32, log2: vec3<u32>) -> vec3<f32> {
    return vec3<f32>(rescale(exponent, log2.x), rescale(exponent, log2.y), rescale(exponent, log2.z));
}

// The exponent field of the largest component of `v` (lifted by 2^log2 per component) before
// its lift; 0 for zero and subnormals, as `power_of_two_scale` reads them.
fn unlifted_exponent(v: vec3<f32>, log2: vec3<u32>) -> u32 {
    let exponents = max(exponent_fields(v), log2) - log2;
    return max(max(exponents.x, exponents.y), exponents.z);
}

// LIFT_LOG2 where all of `body`'s inputs (centre, displacement, radius) lie below 2^-47, else 0.
fn body_lift(body: BodyRecord) -> u32 {
    let exponents = max(max(exponent_fields(body.center), exponent_fields(body.displacement)),
                        exponent_fields(vec3<f32>(body.radius)));
    return lift_for(vec3<u32>(max(max(exponents.x, exponents.y), exponents.z))).x;
}

// The point of `body`'s surface along `normal` at `time`: centre + displacement * time +
// normal * radius, computed lifted for a body below 2^-47 (`body_lift`) and put back on f32's
// grid, subnormal or not, by one rounding to nearest even (`unlift`).
fn surface_point(body: BodyRecord, time: f32, normal: vec3<f32>) -> vec3<f32> {
    let log2 = body_lift(body);
    let center = lift3(body.center, vec3<u32>(log2))
        + lift3(body.displacement, vec3<u32>(log2)) * time;
    return unlift3(center + normal * lift(body.radius, log2), log2);
}

// `unlifted_exponent` of one length `x` lifted by 2^log2.
fn unlifted_length_exponent(x: f32, log2: u32) -> u32 {
    return unlifted_exponent(vec3<f32>(x), vec3<u32>(log2));
}

// When a point moving by `motion` from `position` (relative to a fixed point; both scaled
// so that no square overflows) first comes within `radius` of it: the time in [0, 1], 0 if it
// already is, or NO_TOUCH (above 1) if it never is in the step. The core of the pair sweep,
// shared with the walls (an end point, or a line across which only the components count).
fn first_touch(position: vec3<f32>, motion: vec3<f32>, radius: f32) -> f32 {
    let radius_squared = radius * radius;
    let distance_squared = dot(position, position);
    let gap_product = distance_squared - radius_squared;
    if (gap_product <= 0.0) {
        return 0.0;
    }
    let motion_squared = dot(motion, motion);
    // Early escape: the movement is shorter than the gap, |V| < |C| - R.
    let reach = sqrt(motion_squared) + radius;
    if (reach * reach < distance_squared) {
        return NO_TOUCH;
    }
    // Early escape: not moving towards the point (zero relative motion lands here too).
    let approach = dot(position, motion);
    if (approach <= 0.0) {
        return NO_TOUCH;
    }
    // Early escape: closest approach beyond the radius. |C x V|^2 is |V|^2 times the
    // squared closest distance, without the source's |C|^2 - D^2 cancellation.
    let offset = cross(position, motion);
    let discriminant = motion_squared * radius_squared - dot(offset, offset);
    if (discriminant < 0.0) {
        return NO_TOUCH;
    }
    // The smaller root of |C - V t|^2 = R^2 in its stable form: every term is positive,
    // so nothing cancels (the source's D - sqrt(T) does) and the divisor is > 0.
    var time_of_impact = gap_product / (approach + sqrt(discriminant));
    // The first root never comes after the vertex approach / motion_squared of |C - V t|^2.
    // Where rounding has made a slightly negative discriminant 0 (bodies touching at
    // t = 0 and sliding apart), the quotient above is noise over noise: the vertex, where
    // the bodies come closest, is the answer the bound allows. (motion_squared > 0 here
    // whenever the test holds, so the division is guarded.)
    if (time_of_impact * motion_squared > approach) {
        time_of_impact = approach / motion_squared;
    }
    // Final check: contact must come within this step (written so that NaN misses).
    if (!(time_of_impact <= 1.0)) {
        return NO_TOUCH;
    }
    return time_of_impact;
}

// b minus a, with b taken `image` periods away (per axis): (b - image * period) - a. The
// shift is applied to whichever of the two lies near it (b for a positive image, a for a
// negative one), where it is exact (Sterbenz) for points in [0, period) a period apart: the
// one rounding is that of the difference itself, as without a box.
fn image_offset(a: vec3<f32>, b: vec3<f32>, image: vec3<f32>, period: vec3<f32>) -> vec3<f32> {
    let shift_b = select(vec3<f32>(0.0), image * period, image > vec3<f32>(0.0));
    let shift_a = select(vec3<f32>(0.0), -image * period, image < vec3<f32>(0.0));
    return (b - shift_b) - (a - shift_a);
}

// The largest magnitude of the components of `v`.
fn largest_component(v: vec3<f32>) -> f32 {
    return max(max(abs(v.x), abs(v.y)), abs(v.z));
}

// The workgroups of an indirect dispatch of `count` invocations: WORKGROUP_SIZE a
// workgroup, along x up to MAX_WORKGROUPS_PER_DIMENSION and then along y too.
fn workgroups_for(count: u32) -> vec3<u32> {
    let workgroups = (count + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE;
    let workgroups_y = (workgroups + MAX_WORKGROUPS_PER_DIMENSION - 1u) / MAX_WORKGROUPS_PER_DIMENSION;
    return vec3<u32>(select(workgroups, MAX_WORKGROUPS_PER_DIMENSION, workgroups_y > 1u),
                     max(workgroups_y, 1u), 1u);
}

// The index of the invocation's pair in a dispatch of `workgroups_x` by y workgroups.
fn linear_index(id: vec3<u32>, workgroups_x: u32) -> u32 {
    return id.x + id.y * workgroups_x * WORKGROUP_SIZE;
}

// The step's local frame, boxes and groups (frame.wgsl and grid.wgsl; their twins are in
// src/cpu/frame.rs).

// `c` wrapped into [0, period) on an axis that wraps (period > 0). Exact for c in
// [0, 2 period); elsewhere within a rounding of |c| and the period of the exact remainder
// (validation keeps |c| below 2^24 periods).
fn wrap(c: f32, period: f32, inverse_period: f32) -> f32 {
    if (period <= 0.0) {
        return c;
    }
    var wrapped = c - period * floor(c * inverse_period);
    if (wrapped < 0.0) {
        wrapped = wrapped + period;
    }
    if (wrapped >= period) {
        wrapped = wrapped - period;
    }
    return wrapped;
}

// A centre's coordinate in the broad phase's local frame: c - origin, wrapped into
// [0, period) on an axis that wraps. The origin is a multiple of f32's spacing at the period,
// below it, so that period - origin is exact, and so is w - origin for w in [origin, period):
// the result is exact or one rounding at its own size for c in the box. Just below the box,
// c + (period - origin) keeps that, where the wrap's c + period would round at the period's
// size first. Elsewhere it is within a few roundings of |c| (modulo the period), which the
// margin's outside_the_box covers.
fn local_coordinate(c: f32, period: f32, inverse_period: f32, origin: f32) -> f32 {
    if (period <= 0.0) {
        return c - origin;
    }
    let below = c + (period - origin);
    if (c < 0.0 && below >= 0.0) {
        return below;
    }
    let wrapped = wrap(c, period, inverse_period);
    return select(wrapped + (period - origin), wrapped - origin, wrapped >= origin);
}

// The largest magnitude of the centre's components on the axes that wrap (period > 0) where
// it lies outside [0, 2 period): 0 in open space, in the box and within a period beyond it,
// where the wrap and the sweep's shift by whole periods are exact. `outside_the_box` in
// src/cpu/frame.rs.
fn outside_the_box_of(center: vec3<f32>, period: vec3<f32>) -> f32 {
    let outside = (period > vec3<f32>(0.0))
        & ((center < vec3<f32>(0.0)) | (center >= 2.0 * period));
    return largest_component(select(vec3<f32>(0.0), center, outside));
}

// The widening of a body's swept box, `margin` in src/cpu/frame.rs (whose comment has
// the rounding analysis in full). 2^-16 of the body's radius, largest displacement component and
// outside_the_box covers the sweep's rounding: it works in relative coordinates, so it
// rounds at the pair's own scale (under 30u of the two bodies' r + |d|, u = 2^-24), and at
// a centre's coordinates only where it lies below the box or beyond 2L. 2^-20 of the
// centre's largest component in the local frame covers the rounding of the boxes' corners,
// made here in f32 (about 4u of it, and u of a query shifted by a period). One sum scaled
// once: a sum of two products may be reassociated here, and the twin's boxes must be these
// bit for bit.
// SUBNORMAL_MARGIN covers a device that flushes subnormal values: each operation that makes
// a corner errs there by less than 2^-126 (see `margin` in src/cpu/frame.rs).
fn margin(body: BodyRecord, center: vec3<f32>, outside: f32) -> f32 {
    return (body.radius + largest_component(body.displacement) + outside
        + largest_component(center) * (1.0 / 16.0)) * (1.0 / 65536.0) + SUBNORMAL_MARGIN;
}

fn overlaps(a_lo: vec3<f32>, a_hi: vec3<f32>, b_lo: vec3<f32>, b_hi: vec3<f32>) -> bool {
    return all(a_lo <= b_hi) && all(b_lo <= a_hi);
}

// f32 bits whose unsigned order is the numbers' order: atomicMin and atomicMax on them are
// min and max of the floats.
fn ordered(x: f32) -> u32 {
    let bits = bitcast<u32>(x);
    return select(bits | 0x80000000u, ~bits, (bits & 0x80000000u) != 0u);
}

fn unordered(u: u32) -> f32 {
    return bitcast<f32>(select(~u, u & 0x7fffffffu, (u & 0x80000000u) != 0u));
}

// Whether two bodies whose records' group words are `a` and `b` interact: each one's
// memberships (low 16 bits of the complement) meet the other's filter (high 16 bits).
// `CollisionGroups::interacts_with` in src/groups.rs.
fn interacts(a: u32, b: u32) -> bool {
    return interacts_bits(~a, ~b);
}

// `interacts` on the groups' bits themselves, or on unions of them (a node's, whose bodies
// may then interact): `CollisionGroups::interacts_with`.
fn interacts_bits(own: u32, other: u32) -> bool {
    return (own & (other >> 16u)) != 0u && (other & (own >> 16u)) != 0u;
}
