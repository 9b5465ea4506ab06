// broad_phase.wgsl: the step's candidate pairs from the bodies alone, as a linear BVH
// (Karras 2012) over the bodies' swept boxes. shared.wgsl is prepended to this file.
//
// The entry points, in the order a step runs them (src/gpu/contacts.rs records those from
// swept_boxes on; the radix sorts between them are lampshade's):
//   scene_bounds  one invocation per body, over bounds cleared to 0: the span of the
//                 centres' paths per axis and the occupied slices of a periodic box
//   frame         one invocation: the step's parameters (the local frame's origin, the
//                 Morton grid) from those bounds and the dispatch of the per-body passes,
//                 so that bodies that live on the device need not be read back for them
//   swept_boxes   one invocation per body: its swept box, Morton code, first sort key (low)
//   key_by_high   one per body: the second sort key (high), in the first sort's order
//   leaves        one per sorted position: the leaf's box, body and code
//   hierarchy     one per internal node: Karras's range and split, the node's empty box
//   refit         one per leaf: climbs to the root, growing each ancestor's box
//   candidates    one per sorted position: the pairs with every later leaf whose box meets;
//                 a query longer than BUDGET steps is saved and goes on in
//   resume_candidates  one per saved query, as many dispatches as the host records
//                 (prepare_resume sizes each from the count saved by the one before)
// Its twin, one function per entry point, is src/cpu/broad_phase.rs (tests/broad_phase.rs
// holds each stage to it: the frame and the tree bit for bit, the queries' pairs and saved
// queries as sets); StepParams::new in src/cpu/frame.rs is the twins of scene_bounds and frame.
// The CPU step's own broad phase, src/cpu/bvh.rs, uses the same local frame and margin and
// builds the same kind of tree its own way (local centres in f64, codes over the boxes'
// bounds, four-wide nodes), and finds the same contacts: both broad phases keep every pair
// the sweep can call a hit.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> bodies: array<BodyRecord>;
// Per body: its swept box (lo, hi).
@group(0) @binding(2) var<storage, read_write> boxes: array<Aabb>;
// Per body: its Morton code, high 31 bits and low 32 bits.
@group(0) @binding(3) var<storage, read_write> codes: array<vec2<u32>>;
// The sort's input (written here) and output (read here).
@group(0) @binding(4) var<storage, read_write> sort_in: array<KeyValue>;
@group(0) @binding(5) var<storage, read> sort_out: array<KeyValue>;
// Per sorted position: the leaf's box and body, and its code.
@group(0) @binding(6) var<storage, read_write> leaves: array<Leaf>;
@group(0) @binding(7) var<storage, read_write> leaf_codes: array<vec2<u32>>;
// The n - 1 internal nodes (node 0 is the root), their parents, and the leaves' parents.
@group(0) @binding(8) var<storage, read_write> nodes: array<Node>;
@group(0) @binding(9) var<storage, read_write> node_parents: array<u32>;
@group(0) @binding(10) var<storage, read_write> leaf_parents: array<u32>;
// Per internal node, its box as 8 words: lo and hi in the order-preserving encoding of
// `ordered` (so that atomicMin and atomicMax grow it), then the union of the collision groups
// of the bodies under it (the OR of their bits, not complemented: atomicOr grows it), then one
// unused.
@group(0) @binding(11) var<storage, read_write> node_boxes: array<atomic<u32>>;
// The candidate pairs, lower index first (those beyond the capacity are counted, not written).
@group(0) @binding(12) var<storage, read_write> pairs: array<vec2<u32>>;
// The queries' counters: COUNTER_CANDIDATES (the candidates found, also past the capacity),
// COUNTER_CANDIDATES_OVERFLOWED (set when a candidate was counted past the capacity) and
// COUNTER_SAVED_OVERFLOWED (set when a query was saved past a queue's capacity).
@group(0) @binding(13) var<storage, read_write> counters: array<atomic<u32>>;
// Queries that ran out of steps: those saved by the last dispatch (`_in`) and by this one
// (`_out`), each queue headed by its count; two queues that alternate, in two bind groups.
@group(0) @binding(15) var<storage, read> continuations_in: SavedQueries;
@group(0) @binding(17) var<storage, read_write> continuations_out: SavingQueries;
// `prepare_resume`'s: the dispatch of the next resume, from the count of `continuations_in`.
@group(0) @binding(21) var<storage, read_write> resume_dispatch: vec3<u32>;
// `scene_bounds` and `frame`'s own bind group. The host's parameters of the step (its
// options, capacities and body count, which the encoder may have copied from a device
// count); their frame fields are not read.
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

// The word of a node's box (of 8) that holds the union of its bodies' collision groups.
const GROUPS_WORD: u32 = 6u;

const COUNTER_CANDIDATES: u32 = 0u;
const COUNTER_CANDIDATES_OVERFLOWED: u32 = 1u;
const COUNTER_SAVED_OVERFLOWED: u32 = 2u;

struct Aabb {
    lo: vec3<f32>,
    _pad0: f32,
    hi: vec3<f32>,
    _pad1: f32,
}

struct Leaf {
    lo: vec3<f32>,
    body: u32,
    hi: vec3<f32>,
    // The body's collision groups, its record's word (the complement of their bits).
    groups: u32,
}

// An internal node: its two children (internal, or LEAF | position) and the last sorted leaf
// under each.
struct Node {
    child: vec2<u32>,
    last: vec2<u32>,
}

// The deepest tree, and one more: one level per bit of the 95-bit key (63 of code, 32 of body index).
const STACK_SIZE: u32 = 97u;
const NO_PARENT: u32 = 0xffffffffu;

// `outside_the_box_of` (shared.wgsl) in the step's periodic box.
fn outside_the_box(center: vec3<f32>) -> f32 {
    return outside_the_box_of(center, params.period);
}

fn node_lo(node: u32) -> vec3<f32> {
    let base = 8u * node;
    return vec3<f32>(unordered(atomicLoad(&node_boxes[base])),
                     unordered(atomicLoad(&node_boxes[base + 1u])),
                     unordered(atomicLoad(&node_boxes[base + 2u])));
}

fn node_hi(node: u32) -> vec3<f32> {
    let base = 8u * node;
    return vec3<f32>(unordered(atomicLoad(&node_boxes[base + 3u])),
                     unordered(atomicLoad(&node_boxes[base + 4u])),
                     unordered(atomicLoad(&node_boxes[base + 5u])));
}

// The swept box of a body in the local frame (centre wrapped into the box), widened by the
// margin. Its Morton code: the box centre's cell on the grid of `params`, 21 bits an axis,
// bit k of axis a at bit 3k + 2 - a of the 63-bit code.
@compute @workgroup_size(WORKGROUP_SIZE)
fn swept_boxes(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (i >= params.body_count) {
        return;
    }
    let body = bodies[i];
    let center = vec3<f32>(
        local_coordinate(body.center.x, params.period.x, params.inverse_period.x, params.origin.x),
        local_coordinate(body.center.y, params.period.y, params.inverse_period.y, params.origin.y),
        local_coordinate(body.center.z, params.period.z, params.inverse_period.z, params.origin.z),
    );
    let end = center + body.displacement;
    let reach = body.radius + margin(body, center, outside_the_box(body.center));
    let lo = min(center, end) - vec3<f32>(reach);
    let hi = max(center, end) + vec3<f32>(reach);
    boxes[i] = Aabb(lo, 0.0, hi, 0.0);

    let largest_cell = f32((1u << MORTON_BITS) - 1u);
    let cell = vec3<u32>(clamp((0.5 * (lo + hi) - params.morton_origin) * params.morton_scale,
                               vec3<f32>(0.0), vec3<f32>(largest_cell)));
    var high = 0u;
    var low = 0u;
    for (var bit = 0u; bit < MORTON_BITS; bit = bit + 1u) {
        for (var axis = 0u; axis < 3u; axis = axis + 1u) {
            let value = (cell[axis] >> bit) & 1u;
            let position = 3u * bit + 2u - axis;
            if (position < 32u) {
                low = low | (value << position);
            } else {
                high = high | (value << (position - 32u));
            }
        }
    }
    codes[i] = vec2<u32>(high, low);
    sort_in[i] = KeyValue(low, i);
}

// After the (stable) sort by the low words: the high words in that order, for the second
// sort. Ties of the whole code stay in body order.
@compute @workgroup_size(WORKGROUP_SIZE)
fn key_by_high(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (i >= params.body_count) {
        return;
    }
    let body = sort_out[i].value;
    sort_in[i] = KeyValue(codes[body].x, body);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn leaves_in_order(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (i >= params.body_count) {
        return;
    }
    let body = sort_out[i].value;
    let b = boxes[body];
    leaves[i] = Leaf(b.lo, body, b.hi, bodies[body].groups);
    leaf_codes[i] = codes[body];
}

// The length of the common prefix of the keys (code, then body index) at sorted positions i
// and j, or -1 where j is outside the leaves. `common_prefix` in src/cpu/broad_phase.rs.
fn common_prefix(i: i32, j: i32) -> i32 {
    if (j < 0 || j >= i32(params.body_count)) {
        return -1;
    }
    let a = leaf_codes[i];
    let b = leaf_codes[j];
    if (a.x == b.x && a.y == b.y) {
        return 63 + i32(countLeadingZeros(leaves[i].body ^ leaves[j].body));
    }
    let differ = a ^ b;
    if (differ.x != 0u) {
        // The top bit of the high word is always 0: 31 bits of code.
        return i32(countLeadingZeros(differ.x)) - 1;
    }
    return 31 + i32(countLeadingZeros(differ.y));
}

// Karras's internal node i: `hierarchy` in src/cpu/broad_phase.rs, line for line. Also empties
// the node's box for `refit` and records its children's parent.
@compute @workgroup_size(WORKGROUP_SIZE)
fn hierarchy(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let index = linear_index(id, workgroups.x);
    if (index + 1u >= params.body_count) {
        return;
    }
    let at = i32(index);
    let direction = select(-1, 1, common_prefix(at, at + 1) > common_prefix(at, at - 1));
    let prefix_min = common_prefix(at, at - direction);
    var length_max = 2;
    while (common_prefix(at, at + length_max * direction) > prefix_min) {
        length_max = length_max * 2;
    }
    var length = 0;
    var step = length_max / 2;
    while (step >= 1) {
        if (common_prefix(at, at + (length + step) * direction) > prefix_min) {
            length = length + step;
        }
        step = step / 2;
    }
    let other_end = at + length * direction;
    let prefix_node = common_prefix(at, other_end);
    var split = 0;
    var divisor = 2;
    loop {
        let split_step = (length + divisor - 1) / divisor;
        if (common_prefix(at, at + (split + split_step) * direction) > prefix_node) {
            split = split + split_step;
        }
        if (split_step <= 1) {
            break;
        }
        divisor = divisor * 2;
    }
    let gamma = at + split * direction + min(direction, 0);
    let first = min(at, other_end);
    let last = max(at, other_end);
    var left = u32(gamma);
    var right = u32(gamma + 1);
    if (first == gamma) {
        leaf_parents[left] = index;
        left = LEAF | left;
    } else {
        node_parents[left] = index;
    }
    if (last == gamma + 1) {
        leaf_parents[right] = index;
        right = LEAF | right;
    } else {
        node_parents[right] = index;
    }
    nodes[index] = Node(vec2<u32>(left, right), vec2<u32>(u32(gamma), u32(last)));
    let base = 8u * index;
    for (var k = 0u; k < 3u; k = k + 1u) {
        atomicStore(&node_boxes[base + k], 0xffffffffu);
        atomicStore(&node_boxes[base + 3u + k], 0u);
    }
    atomicStore(&node_boxes[base + GROUPS_WORD], 0u);
    if (index == 0u) {
        node_parents[0] = NO_PARENT;
    }
}

// One leaf's climb: grows each ancestor's box to hold the leaf's, and stops at the first
// ancestor that already held it. That is enough: each bound of that ancestor was written by
// a leaf whose climb changed it and so went on up with a bound at least as wide. Only
// atomicMin and atomicMax, which commute, meet across invocations: the boxes are the same in
// any order of execution, with no wait on another invocation (no forward-progress guarantee
// is needed).
@compute @workgroup_size(WORKGROUP_SIZE)
fn refit(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (i >= params.body_count || params.body_count < 2u) {
        return;
    }
    let leaf = leaves[i];
    let lo = vec3<u32>(ordered(leaf.lo.x), ordered(leaf.lo.y), ordered(leaf.lo.z));
    let hi = vec3<u32>(ordered(leaf.hi.x), ordered(leaf.hi.y), ordered(leaf.hi.z));
    let groups = ~leaf.groups;
    var node = leaf_parents[i];
    loop {
        let base = 8u * node;
        let grew_lo = vec3<bool>(atomicMin(&node_boxes[base], lo.x) > lo.x,
                                 atomicMin(&node_boxes[base + 1u], lo.y) > lo.y,
                                 atomicMin(&node_boxes[base + 2u], lo.z) > lo.z);
        let grew_hi = vec3<bool>(atomicMax(&node_boxes[base + 3u], hi.x) < hi.x,
                                 atomicMax(&node_boxes[base + 4u], hi.y) < hi.y,
                                 atomicMax(&node_boxes[base + 5u], hi.z) < hi.z);
        let grew_groups = (atomicOr(&node_boxes[base + GROUPS_WORD], groups) & groups) != groups;
        if (!(any(grew_lo) || any(grew_hi) || grew_groups) || node == 0u) {
            break;
        }
        node = node_parents[node];
    }
}

// The shift of image `s` of 27 (x slowest): -1, 0 or 1 period an axis, as
// `images` in src/cpu/bvh.rs orders them (0, -1, 1); none on an axis that does not wrap.
fn image_shift(s: u32) -> vec3<f32> {
    let steps = vec3<u32>(s / 9u, (s / 3u) % 3u, s % 3u);
    let signed = vec3<f32>(select(vec3<f32>(0.0), vec3<f32>(-1.0), steps == vec3<u32>(1u)))
        + select(vec3<f32>(0.0), vec3<f32>(1.0), steps == vec3<u32>(2u));
    return signed * params.period;
}

// Whether image `s` exists: no shift on an axis that does not wrap.
fn image_exists(s: u32) -> bool {
    let steps = vec3<u32>(s / 9u, (s / 3u) % 3u, s % 3u);
    let wraps = params.period > vec3<f32>(0.0);
    return all(wraps | (steps == vec3<u32>(0u)));
}

// A query's state between dispatches: the leaf, the image it is walking and the walk's stack.
struct Continuation {
    position: u32,
    image: u32,
    depth: u32,
    _pad: u32,
    stack: array<u32, STACK_SIZE>,
}

// A queue of saved queries: its count (those beyond the capacity are counted, not written),
// then the queries. Read as `SavedQueries` by the dispatch that resumes them, written as
// `SavingQueries` by the one that saves them: the same bytes.
struct SavedQueries {
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    entries: array<Continuation>,
}

struct SavingQueries {
    count: atomic<u32>,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    entries: array<Continuation>,
}

// The steps (node visits, and the image checks of a periodic box) one invocation takes before
// it hands the rest of its query to the next dispatch. Mesa's software adapters end an
// invocation after 65,535 loop iterations, silently; well below that, and large enough that
// ordinary queries (tens of visits) finish in one go.
const BUDGET: u32 = 4096u;

// The walk of the invocation's query: its stack, depth and the steps it has taken.
var<private> stack: array<u32, STACK_SIZE>;
var<private> depth: u32;
var<private> steps: u32;

// The pairs of the leaf at sorted position p with every later leaf whose box meets its own
// (through any image, in a periodic box). A pair met through several images is written
// once, from the first image that meets it. `first_image` and the private stack and depth
// say where to start: depth 0 starts image `first_image` afresh. Past BUDGET steps the walk
// is saved to `continuations_out` for `resume_candidates` to go on with.
fn query(p: u32, first_image: u32) {
    let own = leaves[p];
    let root_lo = node_lo(0u);
    let root_hi = node_hi(0u);
    for (var s = first_image; s < 27u; s = s + 1u) {
        if (!image_exists(s)) {
            continue;
        }
        let shift = image_shift(s);
        let query_lo = own.lo + shift;
        let query_hi = own.hi + shift;
        if (depth == 0u) {
            if (!overlaps(query_lo, query_hi, root_lo, root_hi)) {
                continue;
            }
            stack[0] = 0u;
            depth = 1u;
        }
        while (depth > 0u) {
            if (steps >= BUDGET) {
                save(p, s);
                return;
            }
            steps = steps + 1u;
            depth = depth - 1u;
            let node = nodes[stack[depth]];
            // The two children, unrolled: a loop here would count against Mesa's limit too.
            visit(p, own, s, query_lo, query_hi, node.child.x, node.last.x);
            visit(p, own, s, query_lo, query_hi, node.child.y, node.last.y);
        }
    }
}

fn visit(p: u32, own: Leaf, s: u32, query_lo: vec3<f32>, query_hi: vec3<f32>, child: u32,
         last: u32) {
    if (last <= p) {
        return;
    }
    if ((child & LEAF) != 0u) {
        let other = leaves[child & ~LEAF];
        if (overlaps(query_lo, query_hi, other.lo, other.hi) && interacts(own.groups, other.groups)
            && !met_through_earlier_image(own, other, s)) {
            let slot = atomicAdd(&counters[COUNTER_CANDIDATES], 1u);
            if (slot < params.candidate_capacity) {
                pairs[slot] = vec2<u32>(min(own.body, other.body), max(own.body, other.body));
            } else {
                // Sticky, so that a count that wraps past 2^32 is still seen as an overflow.
                atomicStore(&counters[COUNTER_CANDIDATES_OVERFLOWED], 1u);
            }
        }
    } else if (overlaps(query_lo, query_hi, node_lo(child), node_hi(child))
               && interacts_bits(~own.groups, atomicLoad(&node_boxes[8u * child + GROUPS_WORD]))) {
        stack[depth] = child;
        depth = depth + 1u;
    }
}

// Whether an image before `s` already met `other` (and so wrote the pair). Each image checked
// is a step of the budget.
fn met_through_earlier_image(own: Leaf, other: Leaf, s: u32) -> bool {
    for (var earlier = 0u; earlier < s; earlier = earlier + 1u) {
        steps = steps + 1u;
        let shift = image_shift(earlier);
        if (image_exists(earlier) && overlaps(own.lo + shift, own.hi + shift, other.lo, other.hi)) {
            return true;
        }
    }
    return false;
}

// Hands the rest of the query to the next dispatch (counted past the capacity, not written).
fn save(p: u32, s: u32) {
    let slot = atomicAdd(&continuations_out.count, 1u);
    if (slot >= params.continuation_capacity) {
        atomicStore(&counters[COUNTER_SAVED_OVERFLOWED], 1u);
        return;
    }
    continuations_out.entries[slot].position = p;
    continuations_out.entries[slot].image = s;
    continuations_out.entries[slot].depth = depth;
    for (var k = 0u; k < depth; k = k + 1u) {
        continuations_out.entries[slot].stack[k] = stack[k];
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn candidates(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let p = linear_index(id, workgroups.x);
    if (p + 1u >= params.body_count) {
        return;
    }
    depth = 0u;
    steps = 0u;
    query(p, 0u);
}

// One invocation per query saved by the last dispatch: its walk, for another BUDGET steps.
@compute @workgroup_size(WORKGROUP_SIZE)
fn resume_candidates(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (i >= min(continuations_in.count, params.continuation_capacity)) {
        return;
    }
    let saved = continuations_in.entries[i];
    depth = saved.depth;
    for (var k = 0u; k < depth; k = k + 1u) {
        stack[k] = saved.stack[k];
    }
    steps = 0u;
    query(saved.position, saved.image);
}

// One invocation before a resume: its workgroups, from the count of the queue it resumes.
@compute @workgroup_size(1)
fn prepare_resume() {
    resume_dispatch = workgroups_for(min(continuations_in.count, params.continuation_capacity));
}

// The local frame on the device: `scene_bounds` gathers the bodies' bounds (one invocation a
// body, over a cleared `bounds`), `frame` makes the step's parameters of them. Their twins
// are `scene_bounds` and `frame` in src/cpu/broad_phase.rs, which StepParams::new and
// local_origin in src/cpu/frame.rs use too: the host's frame and the device's are the same bits
// (the Morton scale's division aside on adapters whose division is not correctly rounded).

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
