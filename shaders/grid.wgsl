// grid.wgsl: the grid broad phase of the GPU step, in which each body finds, sweeps and keeps
// its own earliest contact. shared.wgsl and sweep.wgsl (whose `sweep_pair`, `bodies` and
// `params` it uses) are prepended to this file.
//
// The entry points, in the order src/gpu/grid.rs records them (after scene_bounds and frame of
// frame.wgsl, whose StepParams `step` is):
//   grid_widths    one per body: the largest and smallest swept extent, the boxes' bounds
//   grid_frame     one: the levels from the extents
//   grid_keys      one per body: its level, its cell's hash (the sort key); levels' populations
//   (lampshade's stable radix sort of the keys)
//   grid_cells     one per sorted position: the sorted entry, and its hash's range
//   grid_plan      one: which level searches which
//   grid_gather    one per sorted position: the body's earliest contact among the levels it
//                  searches; the times of its cross-level partners. With ordered contacts,
//                  grid_gather_counted instead: the same, and each pair counted and each hit
//                  listed once (a second entry point, so that the plain gather carries none
//                  of that code: a flag read at run time cost the H200 a quarter of the pass)
//   grid_resume_dispatch, grid_resume  (resume_passes times, where asked) one per walk that
//                  ran past its budget: the walk goes on where it stopped (grid_resume_dispatch
//                  sizes the dispatch from the walks saved)
//   grid_hits_dispatch  one, with ordered contacts: the listed hits' dispatch, for
//                  contacts.wgsl
//   grid_partners  one per sorted position, several levels only: the lowest partner at each
//                  body's least time; then its walks past the budget resumed as the gathers'
//   grid_records   one per body, several levels only: the body's EarliestRecord
// Its twin, one function per entry point, is src/cpu/grid.rs, whose module comment says why
// a body finds every partner and what bounds an invocation's work.

// The step's parameters: the options, the body count and the local frame (frame's output).
@group(0) @binding(40) var<uniform> step_params: StepParams;
// The grid's parameters, as grid_frame and grid_plan made them (copied in by the encoder).
@group(0) @binding(41) var<uniform> grid: GridParams;
// grid_frame's and grid_plan's output; the host's input (its table_bits, ratio_log2 and
// single_span_log2) for grid_frame.
@group(0) @binding(42) var<storage, read_write> grid_out: GridParams;
@group(0) @binding(43) var<storage, read> grid_in: GridParams;
// GRID_WORDS counters, cleared before grid_widths (see src/cpu/grid.rs).
@group(0) @binding(44) var<storage, read_write> words: array<atomic<u32>>;
@group(0) @binding(45) var<storage, read_write> sort_in: array<KeyValue>;
@group(0) @binding(46) var<storage, read> sort_out: array<KeyValue>;
@group(0) @binding(47) var<storage, read_write> entries: array<GridEntry>;
// Per hash: the first and one past the last sorted position of its bodies (cleared to 0).
@group(0) @binding(48) var<storage, read_write> ranges: array<u32>;
// Per body (several levels), four words (cleared to 0: none): the complement of its least
// time's bits and of its lowest partner at that time, joined by atomicMax; its own best
// time key and partner's complement, as its gather found them.
@group(0) @binding(50) var<storage, read_write> time_words: array<atomic<u32>>;
// Per body: its earliest contact (cleared to EARLIEST_NONE).
@group(0) @binding(51) var<storage, read_write> earliest: array<EarliestRecord>;

const GRID_MAX_LEVELS: u32 = 16u;
const GRID_BUDGET: u32 = 60000u;
// An entry's `body` word: the body's index in the low 28 bits, its level in the top 4.
const LEVEL_SHIFT: u32 = 28u;
const BODY_MASK: u32 = 0x0fffffffu;
const GRID_WORDS: u32 = 32u;
const WORD_SMALLEST: u32 = 0u;
const WORD_LARGEST: u32 = 1u;
const WORD_UNFINISHED: u32 = 2u;
const WORD_LOW: u32 = 4u;
const WORD_HIGH: u32 = 7u;
const WORD_CORNER_HIGH: u32 = 10u;
// Words from here on join by sum, those below by maximum.
const WORD_CANDIDATES: u32 = 13u;
// The hits listed (atomicAdd a hit: its slot), with ordered contacts.
const WORD_CONTACTS: u32 = 14u;
const WORD_POPULATION: u32 = 16u;

// Walks past their budget, saved and resumed (`save_walk`, `grid_resume`): after the
// GRID_WORDS counters, per chain (0: the gathers', 1: the partners') the slots taken (counted
// past the capacity) and the walks still pending; whether a walk found no slot; the chain the
// last grid_resume_dispatch prepared; then each chain's slots of WALK_WORDS words, as many as
// step_params.continuation_capacity. Only the first RESUME_HEAD words are cleared a step.
const WORD_SAVED: u32 = 32u;
const WORD_PENDING: u32 = 34u;
const WORD_SAVED_OVERFLOWED: u32 = 36u;
const WORD_RESUME_CHAIN: u32 = 37u;
const RESUME_HEAD: u32 = 40u;
const WALK_WORDS: u32 = 16u;
const WALK_PENDING: u32 = 0x80000000u;
const WALK_FOUND: u32 = 0x100u;
const NO_SLOT: u32 = 0xffffffffu;

struct GridLevel {
    size: f32,
    inverse: f32,
    searches: u32,
    population: u32,
}

struct GridParams {
    level_count: u32,
    table_bits: u32,
    ratio_log2: u32,
    spread_axes: u32,
    corner_lo: vec3<f32>,
    single_span_log2: u32,
    corner_hi: vec3<f32>,
    budget: u32,
    levels: array<GridLevel, GRID_MAX_LEVELS>,
}

struct GridEntry {
    lo: vec3<f32>,
    body: u32,
    hi: vec3<f32>,
    groups: u32,
}

// The swept box of `body` in the local frame of `step` (the margin of
// shared.wgsl), as (lo, hi).
fn swept_box(body: BodyRecord) -> array<vec3<f32>, 2> {
    let center = vec3<f32>(
        local_coordinate(body.center.x, step_params.period.x, step_params.inverse_period.x, step_params.origin.x),
        local_coordinate(body.center.y, step_params.period.y, step_params.inverse_period.y, step_params.origin.y),
        local_coordinate(body.center.z, step_params.period.z, step_params.inverse_period.z, step_params.origin.z),
    );
    let end = center + body.displacement;
    let reach = body.radius + margin(body, center, outside_the_box_of(body.center, step_params.period));
    return array<vec3<f32>, 2>(min(center, end) - vec3<f32>(reach),
                               max(center, end) + vec3<f32>(reach));
}

fn extent(lo: vec3<f32>, hi: vec3<f32>) -> f32 {
    let e = hi - lo;
    return max(max(e.x, e.y), e.z);
}

// A workgroup's counters, reduced here so that each word costs one global atomic a workgroup.
var<workgroup> group_words: array<atomic<u32>, GRID_WORDS>;

fn clear_group_words(local: u32) {
    for (var word = local; word < GRID_WORDS; word = word + WORKGROUP_SIZE) {
        atomicStore(&group_words[word], 0u);
    }
    workgroupBarrier();
}

fn flush_group_words(local: u32) {
    workgroupBarrier();
    for (var word = local; word < GRID_WORDS; word = word + WORKGROUP_SIZE) {
        let value = atomicLoad(&group_words[word]);
        if (value == 0u) {
            continue;
        }
        if (word < WORD_CANDIDATES) {
            atomicMax(&words[word], value);
        } else {
            atomicAdd(&words[word], value);
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn grid_widths(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    clear_group_words(local);
    let i = linear_index(id, workgroups.x);
    if (i < step_params.body_count) {
        let b = swept_box(bodies[i]);
        let width = ordered(extent(b[0], b[1]));
        atomicMax(&group_words[WORD_SMALLEST], ~width);
        atomicMax(&group_words[WORD_LARGEST], width);
        for (var k = 0u; k < 3u; k = k + 1u) {
            atomicMax(&group_words[WORD_LOW + k], ~ordered(b[0][k]));
            atomicMax(&group_words[WORD_HIGH + k], ordered(b[1][k]));
            atomicMax(&group_words[WORD_CORNER_HIGH + k], ordered(b[0][k]));
        }
    }
    flush_group_words(local);
}

fn coarsest_size(largest: f32) -> f32 {
    return max(largest + largest * (1.0 / 1024.0), bitcast<f32>(0x0d800000u));
}

// 2^-e for e in [0, 8].
fn inverse_power_of_two(e: u32) -> f32 {
    return bitcast<f32>((127u - min(e, 8u)) << 23u);
}

@compute @workgroup_size(1)
fn grid_frame() {
    var output = grid_in;
    let smallest = unordered(~atomicLoad(&words[WORD_SMALLEST]));
    let largest = unordered(atomicLoad(&words[WORD_LARGEST]));
    let top = coarsest_size(largest);
    let ratio = inverse_power_of_two(output.ratio_log2);
    let single = inverse_power_of_two(output.single_span_log2);
    var count = 1u;
    var size = top;
    for (var k = 0u; k < GRID_MAX_LEVELS; k = k + 1u) {
        output.levels[k] = GridLevel(0.0, 0.0, 0u, 0u);
    }
    for (var k = 0u; k < GRID_MAX_LEVELS; k = k + 1u) {
        if (k > 0u) {
            if (output.ratio_log2 == 0u
                || (output.single_span_log2 > 0u && smallest >= top * single)) {
                break;
            }
            size = size * ratio;
            if (step_params.body_count == 0u || size <= smallest) {
                break;
            }
            count = k + 1u;
        }
        output.levels[k].size = size;
        output.levels[k].inverse = 1.0 / size;
    }
    output.level_count = count;
    var spread = 0u;
    for (var k = 0u; k < 3u; k = k + 1u) {
        let low = unordered(~atomicLoad(&words[WORD_LOW + k]));
        output.corner_lo[k] = low;
        output.corner_hi[k] = unordered(atomicLoad(&words[WORD_CORNER_HIGH + k]));
        if (unordered(atomicLoad(&words[WORD_HIGH + k])) - low > top) {
            spread = spread + 1u;
        }
    }
    output.spread_axes = max(spread, 1u);
    grid_out = output;
}

fn level_of(width: f32) -> u32 {
    var k = 0u;
    while (k + 1u < grid.level_count && width < grid.levels[k + 1u].size) {
        k = k + 1u;
    }
    return k;
}

// floor(x / size) by the inverse, clamped to ±2^30 (`cell_index` in src/cpu/grid.rs).
fn cell_index(k: u32, x: f32) -> i32 {
    return i32(clamp(floor(x * grid.levels[k].inverse), -1073741824.0, 1073741824.0));
}

// The key of a cell at level `k`: its block's hash in the high bits, its place in the block
// of 4 x 4 x 4 in the low 6 (`cell_hash` in src/cpu/grid.rs).
fn cell_hash(cell: vec3<i32>, k: u32) -> u32 {
    let block = bitcast<vec3<u32>>(cell >> vec3<u32>(2u));
    let place = (bitcast<u32>(cell.x) & 3u) | ((bitcast<u32>(cell.y) & 3u) << 2u)
        | ((bitcast<u32>(cell.z) & 3u) << 4u);
    var h = (block.x * 0x9e3779b1u) ^ (block.y * 0x85ebca77u) ^ (block.z * 0xc2b2ae3du)
        ^ (k * 0x27d4eb2fu);
    h = h ^ (h >> 16u);
    h = h * 0x85ebca6bu;
    h = h ^ (h >> 13u);
    h = h * 0xc2b2ae35u;
    h = h ^ (h >> 16u);
    return ((h >> (32u - (grid.table_bits - 6u))) << 6u) | place;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn grid_keys(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    clear_group_words(local);
    let i = linear_index(id, workgroups.x);
    if (i < step_params.body_count) {
        let b = swept_box(bodies[i]);
        let k = level_of(extent(b[0], b[1]));
        atomicAdd(&group_words[WORD_POPULATION + k], 1u);
        let cell = vec3<i32>(cell_index(k, b[0].x), cell_index(k, b[0].y), cell_index(k, b[0].z));
        sort_in[i] = KeyValue(cell_hash(cell, k), i);
    }
    flush_group_words(local);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn grid_cells(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let p = linear_index(id, workgroups.x);
    let n = step_params.body_count;
    if (p >= n) {
        return;
    }
    let sorted = sort_out[p];
    let body = bodies[sorted.value];
    let b = swept_box(body);
    let level = level_of(extent(b[0], b[1]));
    entries[p] = GridEntry(b[0], sorted.value | (level << LEVEL_SHIFT), b[1], body.groups);
    if (p == 0u || sort_out[p - 1u].key != sorted.key) {
        ranges[2u * sorted.key] = p;
    }
    if (p + 1u == n || sort_out[p + 1u].key != sorted.key) {
        ranges[2u * sorted.key + 1u] = p + 1u;
    }
}

// `x` to the power `n`, by `n` products in order.
fn power(x: f32, n: u32) -> f32 {
    var product = 1.0;
    for (var i = 0u; i < n; i = i + 1u) {
        product = product * x;
    }
    return product;
}

fn per_cell(level: GridLevel, volume: f32, dims: u32) -> f32 {
    let cell_volume = power(level.size, dims);
    return max(f32(level.population) * cell_volume / max(volume, cell_volume), 1.0);
}

// The most cells a walk of level `fine` by a body of level `coarse` visits (`walk_cells` in
// src/cpu/grid.rs).
fn walk_cells(params: GridParams, coarse: GridLevel, fine: GridLevel) -> f32 {
    var cells = 1.0;
    for (var k = 0u; k < 3u; k = k + 1u) {
        let reach = coarse.size / fine.size + 3.0;
        let between = (params.corner_hi[k] - params.corner_lo[k]) / fine.size + 2.0;
        cells = cells * min(reach, between);
    }
    return cells;
}

// The steps a walk may take: the grid's budget, at most GRID_BUDGET (0 for it).
fn walk_budget(params: GridParams) -> u32 {
    return select(min(params.budget, GRID_BUDGET), GRID_BUDGET, params.budget == 0u);
}

@compute @workgroup_size(1)
fn grid_plan() {
    var output = grid;
    let count = output.level_count;
    let dims = output.spread_axes;
    var volume = 1.0;
    for (var k = 0u; k < 3u; k = k + 1u) {
        let span = unordered(atomicLoad(&words[WORD_HIGH + k]))
            - unordered(~atomicLoad(&words[WORD_LOW + k]));
        volume = volume * max(span, 0.0);
    }
    for (var k = 0u; k < count; k = k + 1u) {
        output.levels[k].population = atomicLoad(&words[WORD_POPULATION + k]);
        output.levels[k].searches = 1u << k;
    }
    for (var c = 0u; c < count; c = c + 1u) {
        for (var f = c + 1u; f < count; f = f + 1u) {
            let coarse = output.levels[c];
            let fine = output.levels[f];
            let up = f32(fine.population) * power(3.0, dims) * per_cell(coarse, volume, dims);
            let down = f32(coarse.population) * power(coarse.size / fine.size + 3.0, dims)
                * per_cell(fine, volume, dims);
            // A coarse body's walk of the fine level that could not finish within its
            // budget is never the plan.
            let walk = walk_cells(output, coarse, fine);
            if (up <= down || walk > f32(walk_budget(output)) * 0.5) {
                output.levels[f].searches = output.levels[f].searches | (1u << c);
            } else {
                output.levels[c].searches = output.levels[c].searches | (1u << f);
            }
        }
    }
    grid_out = output;
}

// The cells one axis of the query of [lo, hi] (already shifted) visits at level k: first and
// count (`axis_range` in src/cpu/grid.rs).
fn axis_range(k: u32, axis: u32, lo: f32, hi: f32) -> vec2<i32> {
    let size = grid.levels[k].size;
    let slack = (abs(lo) + abs(hi) + size) * (1.0 / 2097152.0);
    let first = max(cell_index(k, lo - size - slack), cell_index(k, grid.corner_lo[axis]));
    let last = min(cell_index(k, hi + slack), cell_index(k, grid.corner_hi[axis]));
    return vec2<i32>(first, max(last - first + 1, 0));
}

// What the walk does with a hit: WALK_GATHER keeps the least (time, partner) and tells a
// cross-level partner the time; WALK_COUNTED does so too, and counts each pair once and lists
// each hit once; WALK_PARTNERS offers this body as the lowest partner of each
// cross-level partner hit at that partner's least time.
const WALK_GATHER: u32 = 0u;
const WALK_PARTNERS: u32 = 1u;
const WALK_COUNTED: u32 = 2u;

// The hits of a step with ordered contacts, each pair once in the CPU step's order (the
// lower index first), and their sweeps: the candidates of contacts.wgsl.
@group(0) @binding(55) var<storage, read_write> hit_pairs: array<vec2<u32>>;
@group(0) @binding(56) var<storage, read_write> hit_impacts: array<ImpactRecord>;

// Lists the hit of `a` and `b` (a < b) whose sweep is `impact` at the next slot, if the
// buffers hold it (step_params.contact_capacity); counted past them.
fn list_hit(a: u32, b: u32, impact: ImpactRecord) {
    let slot = atomicAdd(&words[WORD_CONTACTS], 1u);
    if (slot < step_params.contact_capacity) {
        hit_pairs[slot] = vec2<u32>(a, b);
        hit_impacts[slot] = impact;
    }
}

var<private> best_time: f32;
var<private> best_partner: u32;
var<private> best_impact: ImpactRecord;
var<private> found: bool;
// Whether this invocation improved the best it was given (a resumed walk writes only then).
var<private> improved: bool;
// The slot of the walk this invocation resumes, or NO_SLOT for a walk begun afresh.
var<private> walk_slot: u32;
// The pairs this invocation counts for the step (WALK_COUNTED).
var<private> pairs_found: u32;

// Whether image `image` (0 to 26) of a box shifts only axes that wrap; its shift: per axis, by
// its digit in base 3 (from the highest), none, a period below or a period above.
fn image_valid(image: u32) -> bool {
    let steps_of = vec3<u32>(image / 9u, (image / 3u) % 3u, image % 3u);
    return !any((steps_of != vec3<u32>(0u)) & (step_params.period <= vec3<f32>(0.0)));
}

// The first image (the least index) of the box [lo, hi] that meets `other`: per axis the
// least digit whose shift meets it, as a loop over the images would find it, without one
// (Mesa counts each loop entered against its limit, and every pair would pay it).
fn first_image(lo: vec3<f32>, hi: vec3<f32>, other: GridEntry) -> u32 {
    return first_digit(lo.x, hi.x, other.lo.x, other.hi.x, step_params.period.x) * 9u
        + first_digit(lo.y, hi.y, other.lo.y, other.hi.y, step_params.period.y) * 3u
        + first_digit(lo.z, hi.z, other.lo.z, other.hi.z, step_params.period.z);
}

// On one axis: 0 where [lo, hi] meets [other_lo, other_hi], else 1 where it does a period
// below (on an axis that wraps), else 2.
fn first_digit(lo: f32, hi: f32, other_lo: f32, other_hi: f32, period: f32) -> u32 {
    if (lo <= other_hi && other_lo <= hi) {
        return 0u;
    }
    if (period > 0.0 && lo + -period <= other_hi && other_lo <= hi + -period) {
        return 1u;
    }
    return 2u;
}

fn image_shift(image: u32) -> vec3<f32> {
    let steps_of = vec3<u32>(image / 9u, (image / 3u) % 3u, image % 3u);
    return select(vec3<f32>(0.0), -step_params.period, steps_of == vec3<u32>(1u))
        + select(vec3<f32>(0.0), step_params.period, steps_of == vec3<u32>(2u));
}

fn time_key(time_of_impact: f32) -> u32 {
    return ~bitcast<u32>(time_of_impact);
}

fn hit(mode: u32, body: u32, partner: u32, cross: bool, impact: ImpactRecord) {
    let t = impact.time_of_impact;
    if (mode != WALK_PARTNERS) {
        if (!found || t < best_time || (t == best_time && partner < best_partner)) {
            found = true;
            improved = true;
            best_time = t;
            best_partner = partner;
            best_impact = impact;
        }
        if (cross) {
            atomicMax(&time_words[4u * partner], time_key(t));
        }
    } else if (cross && atomicLoad(&time_words[4u * partner]) == time_key(t)) {
        atomicMax(&time_words[4u * partner + 1u], ~body);
    }
}

// The walk of the body at sorted position p over the levels it searches (`walk` in
// src/cpu/grid.rs). False where it ran out of its budget.
//
// One loop, and each of its iterations one step: an entry visited, a cell looked up, an
// image (or a level skipped) begun, or the end. Mesa's software adapters end an invocation
// after 65,535 iterations of its loops, silently, counting them for the SIMD group of
// invocations that runs together: nested loops cost that group as many iterations as any
// lane runs in each of them, which may exceed every lane's own count (one body of radius
// 150 among small ones lost its contacts so, within its budget). In one loop the group runs
// as many iterations as its longest lane: the budget then holds for the group.
fn walk(p: u32, mode: u32) -> bool {
    let own = entries[p];
    let own_level = own.body >> LEVEL_SHIFT;
    let own_body = own.body & BODY_MASK;
    let searches = grid.levels[own_level].searches;
    let own_record = bodies[own_body];
    let budget = walk_budget(grid);
    // The box itself, and on a periodic axis the box a period below and above; image 0 is
    // the box itself.
    let images = select(1u, 27u, any(step_params.period > vec3<f32>(0.0)));
    // Where the walk is: the level k and the next of its images to begin; in the image
    // begun, its shift, box and cells per axis (first, count) and the next cell (x, y, z),
    // whether one is left; in the cell looked up, the next entry q of [q, end).
    var k = 0u;
    var image = 0u;
    var current_image = 0u;
    var shift = vec3<f32>(0.0);
    var lo = own.lo;
    var hi = own.hi;
    var ax = vec2<i32>(0);
    var ay = vec2<i32>(0);
    var az = vec2<i32>(0);
    var x = 0;
    var y = 0;
    var z = 0;
    var cells_left = false;
    var cell = vec3<i32>(0);
    var q = 0u;
    var end = 0u;
    // A walk resumed: where it stopped, and the box and cells of the image it had begun.
    if (walk_slot != NO_SLOT) {
        let base = slot_base(select(0u, 1u, mode == WALK_PARTNERS), walk_slot);
        cells_left = (atomicLoad(&words[base + 1u]) & WALK_CELLS_LEFT) != 0u;
        k = atomicLoad(&words[base + 2u]);
        image = atomicLoad(&words[base + 3u]);
        current_image = atomicLoad(&words[base + 4u]);
        x = bitcast<i32>(atomicLoad(&words[base + 5u]));
        y = bitcast<i32>(atomicLoad(&words[base + 6u]));
        z = bitcast<i32>(atomicLoad(&words[base + 7u]));
        cell = vec3<i32>(bitcast<i32>(atomicLoad(&words[base + 8u])),
                         bitcast<i32>(atomicLoad(&words[base + 9u])),
                         bitcast<i32>(atomicLoad(&words[base + 10u])));
        q = atomicLoad(&words[base + 11u]);
        end = atomicLoad(&words[base + 12u]);
        if (k < grid.level_count) {
            shift = image_shift(current_image);
            lo = own.lo + shift;
            hi = own.hi + shift;
            ax = axis_range(k, 0u, lo.x, hi.x);
            ay = axis_range(k, 1u, lo.y, hi.y);
            az = axis_range(k, 2u, lo.z, hi.z);
        }
    }
    var steps = 0u;
    loop {
        steps = steps + 1u;
        // Past the budget: out of the loop, to be saved below (the save kept out of the loop's
        // body, which it would otherwise burden with its registers).
        if (steps > budget) {
            break;
        }
        if (q < end) {
            let at = q;
            q = q + 1u;
            let other = entries[at];
            if (at == p || (other.body >> LEVEL_SHIFT) != k) {
                continue;
            }
            if (!interacts(own.groups, other.groups) || !overlaps(lo, hi, other.lo, other.hi)) {
                continue;
            }
            let other_body = other.body & BODY_MASK;
            let other_record = bodies[other_body];
            var impact: ImpactRecord;
            if (own_body < other_body) {
                impact = sweep_pair(own_record, other_record);
            } else {
                impact = sweep_pair(other_record, own_record);
            }
            let is_hit = impact.status != STATUS_MISS;
            if (is_hit) {
                hit(mode, own_body, other_body, k != own_level, impact);
            }
            // The step's counts: each pair by one of its bodies (the lower at one level, the
            // searching one across two), at the partner's own cell (another of the same hash
            // is a collision) and in the first image whose box meets it.
            if (mode != WALK_COUNTED || (k == own_level && other_body < own_body)) {
                continue;
            }
            let other_cell = vec3<i32>(cell_index(k, other.lo.x), cell_index(k, other.lo.y),
                                       cell_index(k, other.lo.z));
            if (any(cell != other_cell) || current_image != first_image(own.lo, own.hi, other)) {
                continue;
            }
            pairs_found = pairs_found + 1u;
            if (is_hit) {
                list_hit(min(own_body, other_body), max(own_body, other_body), impact);
            }
            continue;
        }
        if (cells_left) {
            cell = vec3<i32>(ax.x + x, ay.x + y, az.x + z);
            let hash = cell_hash(cell, k);
            q = ranges[2u * hash];
            end = ranges[2u * hash + 1u];
            z = z + 1;
            if (z == az.y) {
                z = 0;
                y = y + 1;
                if (y == ay.y) {
                    y = 0;
                    x = x + 1;
                    cells_left = x < ax.y;
                }
            }
            continue;
        }
        // Begin the next image, of this level or the next one searched.
        if (image == images) {
            image = 0u;
            k = k + 1u;
        }
        if (k >= grid.level_count) {
            return true;
        }
        // The partners' walk needs only the other levels.
        if ((searches & (1u << k)) == 0u || (k == own_level && mode == WALK_PARTNERS)) {
            image = images;
            continue;
        }
        current_image = image;
        image = image + 1u;
        if (!image_valid(current_image)) {
            continue;
        }
        shift = image_shift(current_image);
        lo = own.lo + shift;
        hi = own.hi + shift;
        ax = axis_range(k, 0u, lo.x, hi.x);
        ay = axis_range(k, 1u, lo.y, hi.y);
        az = axis_range(k, 2u, lo.z, hi.z);
        x = 0;
        y = 0;
        z = 0;
        cells_left = ax.y > 0 && ay.y > 0 && az.y > 0;
    }
    let at = array<u32, 11>(k, image, current_image, bitcast<u32>(x), bitcast<u32>(y),
                            bitcast<u32>(z), bitcast<u32>(cell.x), bitcast<u32>(cell.y),
                            bitcast<u32>(cell.z), q, end);
    save_walk(p, mode, cells_left, at);
    return false;
}

// The first word of slot `slot` of chain `chain` (0: the gathers', 1: the partners').
fn slot_base(chain: u32, slot: u32) -> u32 {
    return RESUME_HEAD + (chain * step_params.continuation_capacity + slot) * WALK_WORDS;
}

const WALK_CELLS_LEFT: u32 = 0x200u;

// Saves the walk of sorted position p where it stands (`at`: its level, images, next cell,
// cell, entries), with the best it has kept, for grid_resume to go on with: in the slot it was
// resumed from, else in a new slot of its chain, counted as pending. Past the capacity it is
// not saved: the step is then not valid, and `grow` makes room (`save_walk` in
// src/cpu/grid.rs).
fn save_walk(p: u32, mode: u32, cells_left: bool, at: array<u32, 11>) {
    let chain = select(0u, 1u, mode == WALK_PARTNERS);
    var slot = walk_slot;
    if (slot == NO_SLOT) {
        slot = atomicAdd(&words[WORD_SAVED + chain], 1u);
        if (slot >= step_params.continuation_capacity) {
            atomicMax(&words[WORD_SAVED_OVERFLOWED], 1u);
            return;
        }
        atomicAdd(&words[WORD_PENDING + chain], 1u);
    }
    let base = slot_base(chain, slot);
    atomicStore(&words[base], p);
    atomicStore(&words[base + 1u], WALK_PENDING | mode | select(0u, WALK_FOUND, found)
        | select(0u, WALK_CELLS_LEFT, cells_left));
    for (var i = 0u; i < 11u; i = i + 1u) {
        atomicStore(&words[base + 2u + i], at[i]);
    }
    atomicStore(&words[base + 13u], bitcast<u32>(best_time));
    atomicStore(&words[base + 14u], best_partner);
}

// The image of b's centre nearest to a's, in periods (`image_of` of contacts.wgsl).
fn image_of(a: vec3<f32>, b: vec3<f32>) -> vec3<i32> {
    return vec3<i32>(round((b - a) * step_params.inverse_period));
}

fn record_of(body: u32, partner: u32, impact: ImpactRecord) -> EarliestRecord {
    let a = min(body, partner);
    let b = max(body, partner);
    let image = image_of(bodies[a].center, bodies[b].center);
    return EarliestRecord(impact.time_of_impact, partner, impact.status, EARLIEST_BODY,
                          select(-image, image, body == a), 0u);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn grid_gather(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    gather(linear_index(id, workgroups.x), WALK_GATHER);
}

// grid_gather, counting each pair and listing each hit once (ordered contacts).
@compute @workgroup_size(WORKGROUP_SIZE)
fn grid_gather_counted(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    clear_group_words(local);
    pairs_found = 0u;
    gather(linear_index(id, workgroups.x), WALK_COUNTED);
    if (pairs_found != 0u) {
        atomicAdd(&group_words[WORD_CANDIDATES], pairs_found);
    }
    flush_group_words(local);
}

fn gather(p: u32, mode: u32) {
    if (p >= step_params.body_count) {
        return;
    }
    found = false;
    walk_slot = NO_SLOT;
    // A walk past its budget is saved for grid_resume (its best so far kept here too).
    _ = walk(p, mode);
    if (found) {
        keep_best(entries[p].body & BODY_MASK);
    }
}

// Keeps the best the walk of `body` found: with one level, its record; with several, its own
// best time and partner, and the least time of any.
fn keep_best(body: u32) {
    if (grid.level_count == 1u) {
        earliest[body] = record_of(body, best_partner, best_impact);
        return;
    }
    atomicStore(&time_words[4u * body + 2u], time_key(best_time));
    atomicStore(&time_words[4u * body + 3u], ~best_partner);
    atomicMax(&time_words[4u * body], time_key(best_time));
}

// One invocation before a chain's resumes (the gathers' chain first, then the partners'):
// the chain, and the dispatch of one invocation per slot it took.
@group(0) @binding(58) var<storage, read_write> resume_dispatch: SweepDispatch;

@compute @workgroup_size(1)
fn grid_resume_dispatch() {
    let chain = atomicAdd(&words[WORD_RESUME_CHAIN], 1u);
    let slots = min(atomicLoad(&words[WORD_SAVED + chain]), step_params.continuation_capacity);
    let workgroups = workgroups_for(slots);
    resume_dispatch = SweepDispatch(workgroups.x, workgroups.y, workgroups.z, slots, slots, 0u,
                                    0u, 0u);
}

// One invocation per slot of the chain grid_resume_dispatch prepared: a pending walk goes on
// from where it stopped for another budget of steps, with the best it had kept (written again
// where it improves) or offering the partners' times, and is saved in its own slot again if it
// runs out. src/gpu/grid.rs records `resume_passes` of these after each chain; a walk still
// pending after the last makes the step unfinished (grid_finish).
@compute @workgroup_size(WORKGROUP_SIZE)
fn grid_resume(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let chain = atomicLoad(&words[WORD_RESUME_CHAIN]) - 1u;
    let slot = linear_index(id, workgroups.x);
    if (slot >= min(atomicLoad(&words[WORD_SAVED + chain]), step_params.continuation_capacity)) {
        return;
    }
    let base = slot_base(chain, slot);
    let flags = atomicLoad(&words[base + 1u]);
    if ((flags & WALK_PENDING) == 0u) {
        return;
    }
    let p = atomicLoad(&words[base]);
    let mode = flags & 3u;
    found = (flags & WALK_FOUND) != 0u;
    best_time = bitcast<f32>(atomicLoad(&words[base + 13u]));
    best_partner = atomicLoad(&words[base + 14u]);
    improved = false;
    pairs_found = 0u;
    walk_slot = slot;
    if (walk(p, mode)) {
        atomicStore(&words[base + 1u], flags & ~WALK_PENDING);
        atomicSub(&words[WORD_PENDING + chain], 1u);
    }
    if (pairs_found != 0u) {
        atomicAdd(&words[WORD_CANDIDATES], pairs_found);
    }
    if (mode != WALK_PARTNERS && improved) {
        keep_best(entries[p].body & BODY_MASK);
    }
}

// One invocation, with ordered contacts: the dispatch of contacts.wgsl's passes over the
// listed hits (sweep.wgsl's prepare_indirect for them).
@group(0) @binding(57) var<storage, read_write> hit_dispatch: SweepDispatch;

@compute @workgroup_size(1)
fn grid_hits_dispatch() {
    let requested = atomicLoad(&words[WORD_CONTACTS]);
    let count = min(requested, step_params.contact_capacity);
    let workgroups = workgroups_for(count);
    hit_dispatch = SweepDispatch(workgroups.x, workgroups.y, workgroups.z, count, requested,
                                 select(0u, 1u, requested > count), 0u, 0u);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn grid_partners(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let p = linear_index(id, workgroups.x);
    if (p >= step_params.body_count || grid.level_count == 1u) {
        return;
    }
    let body = entries[p].body & BODY_MASK;
    let own = atomicLoad(&time_words[4u * body + 2u]);
    if (own != 0u && own == atomicLoad(&time_words[4u * body])) {
        atomicMax(&time_words[4u * body + 1u], atomicLoad(&time_words[4u * body + 3u]));
    }
    walk_slot = NO_SLOT;
    _ = walk(p, WALK_PARTNERS);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn grid_records(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let i = linear_index(id, workgroups.x);
    if (i >= step_params.body_count || grid.level_count == 1u) {
        return;
    }
    let key = atomicLoad(&time_words[4u * i]);
    if (key == 0u) {
        return;
    }
    let partner = ~atomicLoad(&time_words[4u * i + 1u]);
    let a = min(i, partner);
    let b = max(i, partner);
    earliest[i] = record_of(i, partner, sweep_pair(bodies[a], bodies[b]));
}

// The step's bounds of frame.wgsl's scene_bounds, read for its INVALID_BODIES word.
@group(0) @binding(52) var<storage, read> scene_words: array<u32>;
// What the step counted: GridCounts.
@group(0) @binding(53) var<storage, read_write> grid_counts: GridCounts;

// INVALID_BODIES of frame.wgsl: the bounds' word set when a body cannot be swept.
const SCENE_INVALID_BODIES: u32 = 6u;

// What a step of the grid counted, and whether its outputs are whole: `valid` is 1 only when
// every body could be swept and every invocation finished within its budget. 32 bytes.
struct GridCounts {
    valid: u32,
    bodies: u32,
    levels: u32,
    unfinished: u32,
    invalid_bodies: u32,
    candidates: u32,
    contacts: u32,
    saved_overflowed: u32,
}

// The same as the GPU step's StepCounts (src/gpu/step/mod.rs binds it as the step's counts): the
// pairs and hits are counted only by grid_gather_counted (ordered contacts), where the listed
// hits may outgrow their buffers (`contacts_overflowed`); `unfinished_queries` is the
// budget's flag; the grid has no candidate buffer or saved queries to overflow.
@group(0) @binding(54) var<storage, read_write> step_counts: StepCounts;

@compute @workgroup_size(1)
fn grid_finish() {
    // Walks still pending after the last resume (or none recorded), and walks that found no
    // slot to be saved in.
    let pending = atomicLoad(&words[WORD_PENDING]) + atomicLoad(&words[WORD_PENDING + 1u]);
    let unfinished = select(0u, 1u, atomicLoad(&words[WORD_UNFINISHED]) != 0u || pending != 0u);
    let saved_overflowed = atomicLoad(&words[WORD_SAVED_OVERFLOWED]);
    let invalid = scene_words[SCENE_INVALID_BODIES];
    let candidates = atomicLoad(&words[WORD_CANDIDATES]);
    let contacts = atomicLoad(&words[WORD_CONTACTS]);
    let bodies_held = arrayLength(&bodies);
    let count = step_params.body_count;
    let overflowed = select(0u, 1u, contacts > step_params.contact_capacity);
    let valid = select(0u, 1u, unfinished == 0u && invalid == 0u && count <= bodies_held
        && overflowed == 0u && saved_overflowed == 0u);
    grid_counts = GridCounts(valid, count, grid.level_count, unfinished, invalid, candidates,
                             contacts, saved_overflowed);
    step_counts = StepCounts(valid, count, candidates, contacts, bodies_held, 0u, unfinished,
                             saved_overflowed, overflowed, invalid, 0u, 0u);
}
