// frame.wgsl: the step's local frame on the device, from the bodies alone, so that bodies
// that live on the device need not be read back for it. shared.wgsl is prepended to this
// file.
//
// The entry points, in the order a step runs them (src/gpu/grid.rs records them, first in
// the step):
//   scene_bounds  one invocation per body, over bounds cleared to 0: the span of the
//                 centres' paths per axis, the occupied slices of a periodic box, and
//                 whether a body cannot be swept
//   frame         one invocation: the step's parameters (the local frame's origin) from
//                 those bounds and the dispatch of the per-body passes
// Their twin, one function per entry point, is src/cpu/frame.rs (tests/frame.rs holds each
// to it bit for bit), where StepParams::new and local_origin use them too: the host's frame
// and the device's are the same bits.

@group(0) @binding(1) var<storage, read> bodies: array<BodyRecord>;
// The host's parameters of the step (its options, capacities and body count, which the
// encoder may have copied from a device count); their frame fields are not read.
@group(0) @binding(22) var<storage, read> frame_input: StepParams;
// The bodies' bounds, BOUNDS_WORDS words cleared to 0 before `scene_bounds`: per axis the
// low end of the centres' paths as the complement of `ordered` (so that atomicMax, whose
// identity is 0, takes their minimum), the high end as `ordered`; at INVALID_BODIES, 1 when a
// body is not one the step can sweep (see `invalid_body`); one unused; then per axis
// FRAME_WORDS words of occupied slices of the periodic box (bin b at bit b % 32 of word
// b / 32).
@group(0) @binding(23) var<storage, read_write> bounds: array<atomic<u32>>;
// What `frame` writes: the step's parameters (the input's, with its frame) and the dispatch
// of the per-body passes.
@group(0) @binding(24) var<storage, read_write> frame_output: StepParams;
@group(0) @binding(25) var<storage, read_write> body_dispatch: SweepDispatch;

// Slices of a periodic axis in which `frame` looks for the bodies' longest gap, the words of
// their bits per axis, and the words of `bounds`.
const FRAME_BINS: u32 = 4096u;
const FRAME_WORDS: u32 = 128u;
const OCCUPANCY: u32 = 8u;
const BOUNDS_WORDS: u32 = 392u;
const INVALID_BODIES: u32 = 6u;

// Whether a body is one the host's validation would refuse and the step cannot sweep: a
// centre, displacement or radius that is not finite (all exponent bits set: tested on the
// bits, as an adapter may assume that no float is NaN), or a radius below zero (-0 is 0).
fn invalid_body(body: BodyRecord) -> bool {
    let exponents = vec4<u32>(0x7f800000u);
    let center = vec4<u32>(bitcast<vec3<u32>>(body.center), bitcast<u32>(body.radius)) & exponents;
    let displacement = vec4<u32>(bitcast<vec3<u32>>(body.displacement), 0u) & exponents;
    return any(center == exponents) || any(displacement == exponents)
        || bitcast<u32>(body.radius) > 0x80000000u;
}
const LARGEST_F32: f32 = 3.40282347e38;

// The slice of a periodic axis that holds centre c: of the f32 wrap (as `local_coordinate`
// has it), so that host and device agree; the last where the product rounds up to 1.
fn occupancy_bin(c: f32, period: f32, inverse_period: f32) -> u32 {
    let wrapped = wrap(c, period, inverse_period);
    return min(u32(wrapped * inverse_period * f32(FRAME_BINS)), FRAME_BINS - 1u);
}

// A workgroup's bounds, reduced here so that each word costs one global atomic a workgroup
// (a GPU serialises atomics on one address).
var<workgroup> group_bounds: array<atomic<u32>, BOUNDS_WORDS>;

// Grows the bounds by body i's path (its centre, its centre plus the displacement) on each
// axis, and marks its centre's slice on each axis that wraps. The displacement's sign picks
// the end by a select, so that a zero of either sign adds +0 on every adapter.
@compute @workgroup_size(WORKGROUP_SIZE)
fn scene_bounds(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    for (var word = local; word < BOUNDS_WORDS; word = word + WORKGROUP_SIZE) {
        atomicStore(&group_bounds[word], 0u);
    }
    workgroupBarrier();
    let i = linear_index(id, workgroups.x);
    if (i < frame_input.body_count) {
        let body = bodies[i];
        if (invalid_body(body)) {
            atomicMax(&group_bounds[INVALID_BODIES], 1u);
        }
        for (var k = 0u; k < 3u; k = k + 1u) {
            let c = body.center[k];
            let d = body.displacement[k];
            atomicMax(&group_bounds[k], ~ordered(c + select(0.0, d, d < 0.0)));
            atomicMax(&group_bounds[3u + k], ordered(c + select(0.0, d, d > 0.0)));
            let period = frame_input.period[k];
            if (period > 0.0) {
                let bin = occupancy_bin(c, period, frame_input.inverse_period[k]);
                atomicOr(&group_bounds[OCCUPANCY + FRAME_WORDS * k + bin / 32u], 1u << (bin % 32u));
            }
        }
    }
    workgroupBarrier();
    for (var word = local; word < BOUNDS_WORDS; word = word + WORKGROUP_SIZE) {
        let value = atomicLoad(&group_bounds[word]);
        if (value == 0u) {
            continue;
        }
        if (word < OCCUPANCY) {
            atomicMax(&bounds[word], value);
        } else {
            atomicOr(&bounds[word], value);
        }
    }
}

// One axis's occupied slices, read once from `bounds` by `longest_gap_end` (an atomic load a
// slice cost the H200 some 3 ms a frame of a periodic box).
var<private> occupied: array<u32, FRAME_WORDS>;

// The first occupied slice at or after `start` of the axis in `occupied`, or
// FRAME_BINS where none is: a word at a time, so that the walk of `longest_gap_end` takes at
// most one step a word and one an occupied slice (Mesa ends an invocation after 65,535 loop
// iterations).
fn next_occupied(start: u32) -> u32 {
    var word = start / 32u;
    if (word >= FRAME_WORDS) {
        return FRAME_BINS;
    }
    var bits = occupied[word] & (0xffffffffu << (start % 32u));
    loop {
        if (bits != 0u) {
            return 32u * word + countTrailingZeros(bits);
        }
        word = word + 1u;
        if (word >= FRAME_WORDS) {
            return FRAME_BINS;
        }
        bits = occupied[word];
    }
    return FRAME_BINS;
}

// The first occupied slice after the longest run of empty ones, walking once round from the
// first occupied slice (a tie goes to the run found first), or FRAME_BINS where every slice
// is occupied or none is.
fn longest_gap_end(base: u32) -> u32 {
    for (var word = 0u; word < FRAME_WORDS; word = word + 1u) {
        occupied[word] = atomicLoad(&bounds[base + word]);
    }
    let first = next_occupied(0u);
    var end = FRAME_BINS;
    var longest = 0u;
    var previous = first;
    while (previous < FRAME_BINS) {
        let next = next_occupied(previous + 1u);
        // After the last occupied slice, the run goes round to the first.
        let stop = select(next, first + FRAME_BINS, next == FRAME_BINS);
        let gap = stop - previous - 1u;
        if (gap > longest) {
            longest = gap;
            end = stop % FRAME_BINS;
        }
        previous = next;
    }
    return end;
}

// The start of slice `bin` of a box of `period`, floored to a multiple of f32's spacing at
// the period, 2^(e - 23) for a period m 2^(e - 23) with m a 24-bit integer: floor(bin m /
// FRAME_BINS) of those, in u32 with m split into 12-bit halves (each product below 2^24), so
// that the result is exact in f32 (below 2^24 spacings) and below the period. 0 where the
// spacing is not a normal f32 (a period below 2^-103), which GPUs would flush.
fn bin_start(bin: u32, period: f32) -> f32 {
    let bits = bitcast<u32>(period);
    let biased_exponent = bits >> 23u;
    if (biased_exponent < 24u) {
        return 0.0;
    }
    let m = (bits & 0x7fffffu) | 0x800000u;
    let spacings = bin * (m >> 12u) + ((bin * (m & 0xfffu)) >> 12u);
    return f32(spacings) * bitcast<f32>((biased_exponent - 23u) << 23u);
}

// One invocation: the step's parameters from the bounds (`StepParams::new` in
// src/cpu/frame.rs): per axis the origin of the local frame (`local_origin`), the Morton grid
// ([0, L) on an axis that wraps, else the span of the paths about the origin; none where it
// is empty or infinite), and the dispatch of the per-body passes.
@compute @workgroup_size(1)
fn frame() {
    var output = frame_input;
    let cells = f32((1u << MORTON_BITS) - 1u);
    for (var k = 0u; k < 3u; k = k + 1u) {
        let lo_word = ~atomicLoad(&bounds[k]);
        let hi_word = atomicLoad(&bounds[3u + k]);
        let lo = unordered(lo_word);
        let hi = unordered(hi_word);
        let period = frame_input.period[k];
        var origin = 0.0;
        var low = 0.0;
        var extent = 0.0;
        if (period > 0.0) {
            let end = longest_gap_end(OCCUPANCY + FRAME_WORDS * k);
            if (end < FRAME_BINS) {
                origin = bin_start(end, period);
            }
            extent = period;
        } else if (lo_word <= hi_word) {
            // 0 clamped to the span, by selects: a zero's sign is the same everywhere.
            origin = select(select(0.0, hi, hi < 0.0), lo, lo > 0.0);
            low = lo - origin;
            extent = hi - lo;
        }
        output.origin[k] = origin;
        let gridded = extent > 0.0 && extent <= LARGEST_F32;
        output.morton_origin[k] = select(0.0, low, gridded);
        output.morton_scale[k] = select(0.0, cells / extent, gridded);
    }
    frame_output = output;
    let count = frame_input.body_count;
    let workgroups = workgroups_for(count);
    body_dispatch = SweepDispatch(workgroups.x, workgroups.y, workgroups.z, count, count, 0u, 0u,
                                  0u);
}
