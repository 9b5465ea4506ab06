//! The f32 twin of `shaders/grid.wgsl`: the grid broad phase of the GPU step, in which each
//! body finds, sweeps and keeps its own earliest contact. One function per entry point, each
//! one invocation of it, written to be read beside the shader; [`earliest_by_grid`] runs them
//! in the order the device records them. `tests/grid.rs` holds the device to this twin and
//! both to the CPU step.
//!
//! ```text
//! grid_widths   one per body: the bodies' largest and smallest swept extent and the boxes'
//!               bounds (order-preserving bits, joined by atomicMax)
//! grid_frame    one: the levels (a cell of each at least the largest extent in it, each
//!               level's cell 2^ratio_log2 times the next finer one) and the cells a periodic
//!               axis holds at each level
//! grid_keys     one per body: its level, its cell and the cell's hash (the sort key); each
//!               level's population
//! (sort)        a stable sort of the bodies by hash (lampshade's on the device)
//! grid_cells    one per sorted position: the sorted entry (box, body, groups) and each hash's
//!               range of sorted positions
//! grid_plan     one: which level searches which (each level itself; of two levels, the side
//!               the cost model finds cheaper)
//! grid_gather   one per sorted position: the body's own earliest contact among the levels it
//!               searches; a partner at another level, which does not search this one, is
//!               told the time (atomicMax of its complement)
//! grid_partners one per sorted position (only with several levels): the lowest partner at
//!               each body's least time, as the gather and the cross-level hits give it
//! grid_records  one per body (only with several levels): the body's EarliestRecord, from
//!               the pair its two words name, swept again in canonical order
//! ```
//!
//! Three of the shader's entry points have no function of their own here:
//! `grid_gather_counted` is `grid_gather` that also counts the pairs it sweeps and lists its
//! hits (here one function, [`grid_gather`], counts always); `grid_hits_dispatch` sizes the
//! dispatch of the listed hits for `contacts.wgsl`, which the CPU does not dispatch;
//! `grid_finish` writes the counts and validity ([`GridCounts`]), which [`earliest_by_grid`]
//! gives in its [`GridRun`].
//!
//! **Why a body finds every partner.** A body is in the finest level whose size exceeds its
//! widest extent (the rounded `hi - lo`, strictly below the level's size, so that the exact
//! extent is too). Its sorted entry sits in the cell of its box's low corner. A partner's box
//! meets a query's only if the partner's low corner lies in `[lo - cell, hi]` of the query's
//! box: the query visits the cells of that interval, widened by a slack that covers the
//! rounding of `lo - cell` (on an open axis), or by one cell each side and wrapped (on a
//! periodic axis, where a body's corner is stored wrapped into the box and the box test
//! shifts the query by -1, 0 and +1 period, as the tree's queries do). A hash that two cells
//! share only adds box tests; an entry of another level is skipped. The box test and the
//! margin are the tree's, so the pairs swept include every pair the sweep calls a hit; the
//! sweep is `sweep_pair` of `shaders/sweep.wgsl` in the CPU step's canonical order (the lower
//! index first), so both bodies of a pair hold the same bits.
//!
//! **Bounded work.** An invocation takes at most [`GRID_BUDGET`] steps (a cell looked up, an
//! entry visited, an image or level begun); past it, the walk is saved where it stands
//! (`save_walk`: its level, image, cell and entry, and the best it has kept) and
//! [`grid_resume`] goes on with it in the next dispatch, as many times as the host records.
//! A walk still unfinished after the last, or one that finds no slot, makes the step invalid
//! (never a silent partial answer).

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use super::frame::{interacts, local_coordinate, margin, ordered, outside_the_box, unordered};
use super::sweep::sweep_pair;
use crate::layout::{
    BodyRecord, EARLIEST_BODY, EarliestRecord, KeyValue, STATUS_MISS, StepParams, SweepParams,
};

/// The most levels a grid has; bodies finer than the finest go into it.
pub const GRID_MAX_LEVELS: usize = 16;
/// Steps (an iteration of any of its loops: levels, images, cells, entries) one invocation of
/// `grid_gather` or `grid_partners` takes before it stops and flags the step unfinished.
/// Mesa's software adapters end an invocation after 65,535 loop iterations, silently: below
/// that, and above the longest walk of the scenes' counts (a bullet of the `fast` scene,
/// some 32,000).
pub const GRID_BUDGET: u32 = 60_000;
/// Each level's cell is `2^ratio_log2` times the next finer one's, by default (issue 32's
/// counts: the fewest steps a body on the scenes of mixed sizes).
pub const GRID_RATIO_LOG2: u32 = 1;
/// One level, by default, where the extents span at most `2^GRID_SINGLE_SPAN_LOG2` (the
/// counts: as few steps as two levels on uniform sizes, without the passes levels need).
pub const GRID_SINGLE_SPAN_LOG2: u32 = 2;

/// Where an entry's `body` word holds its level, and the mask of its body.
const LEVEL_SHIFT: u32 = 28;
const BODY_MASK: u32 = (1 << LEVEL_SHIFT) - 1;
/// The most bodies a grid step takes: an entry's body index has 28 bits.
pub const GRID_MAX_BODIES: u64 = 1 << LEVEL_SHIFT;

/// Words of the grid's counters: the complement of the smallest extent's ordered bits, the
/// largest extent's, the unfinished flag, one unused; per axis the complement of the boxes'
/// lowest corner, their highest corner, and their highest low corner (ordered bits); the
/// pairs the gather swept and those that hit (each pair once, modulo 2^32), one unused; each
/// level's population. Words below [`WORD_CANDIDATES`] join by maximum, the rest by sum.
pub const GRID_WORDS: usize = 16 + GRID_MAX_LEVELS;
const WORD_SMALLEST: usize = 0;
const WORD_LARGEST: usize = 1;
/// The counters' word set when an invocation ran out of its budget.
pub const WORD_UNFINISHED: usize = 2;
const WORD_LOW: usize = 4;
const WORD_HIGH: usize = 7;
const WORD_CORNER_HIGH: usize = 10;
/// The counters' word of the pairs the gather swept (each pair once).
pub const WORD_CANDIDATES: usize = 13;
/// The counters' word of the swept pairs that hit or overlap (each pair once): with ordered
/// contacts, the shader lists each hit at this word's count.
pub const WORD_CONTACTS: usize = 14;
const WORD_POPULATION: usize = 16;

/// After the [`GRID_WORDS`] counters, the walks past their budget saved for `grid_resume`:
/// per chain (0, the gathers'; 1, the partners') the slots taken (counted past the capacity,
/// `StepParams::continuation_capacity`) and the walks still pending; whether a walk found no
/// slot; the chain `grid_resume_dispatch` last prepared; then each chain's slots of
/// [`WALK_WORDS`] words. A step clears only the first [`RESUME_HEAD`] words.
pub const WORD_SAVED: usize = 32;
/// The walks of each chain saved and not yet finished.
pub const WORD_PENDING: usize = 34;
/// Set where a walk past its budget found no slot (the step is then not valid).
pub const WORD_SAVED_OVERFLOWED: usize = 36;
/// How many chains `grid_resume_dispatch` has prepared.
pub const WORD_RESUME_CHAIN: usize = 37;
/// The words before the first slot.
pub const RESUME_HEAD: usize = 40;
/// The words of a saved walk: its sorted position, its flags (the walk's mode, whether it
/// has a best, cells left in its image, still pending), its level, next image, image, next
/// cell (3), cell (3), next entry and end of the cell's range, its best time's bits and
/// partner, one unused.
pub const WALK_WORDS: usize = 16;
const WALK_PENDING: u32 = 0x8000_0000;
const WALK_FOUND: u32 = 0x100;
const WALK_CELLS_LEFT: u32 = 0x200;
const WALK_GATHER: u32 = 0;
const WALK_PARTNERS: u32 = 1;
/// The resumes recorded after each chain, by default: enough for the hostile scenes' walks of
/// up to twice the budget; `StepStage::grow` raises it for a step that needed more.
pub const GRID_RESUME_PASSES: u32 = 1;

/// The most resumes a step records after each chain of walks: a walk then takes at most 17
/// budgets (about 10⁶ steps).
pub const GRID_MAX_RESUME_PASSES: u32 = 16;

/// The walks past their budget each chain may save, by default: `StepStage::grow` doubles it
/// for a step that needed more.
pub const GRID_SAVED_WALKS: u32 = 1024;

/// The words of a grid step's counters and of `capacity` saved walks a chain.
#[must_use]
pub fn grid_words(capacity: u32) -> usize {
    RESUME_HEAD + 2 * capacity as usize * WALK_WORDS
}

/// One level of the grid: `GridLevel` of the shader, 16 bytes.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct GridLevel {
    /// The level's cell, on every axis: a body is at the finest level whose cell exceeds its
    /// widest extent.
    pub size: f32,
    /// `1 / size`.
    pub inverse: f32,
    /// Bit `k` set where this level's bodies search level `k` (always their own).
    pub searches: u32,
    /// The bodies at this level (set by `grid_plan`).
    pub population: u32,
}

/// The grid's parameters: `GridParams` of the shader. The host sets `table_bits` and
/// `ratio_log2`; `grid_frame` and `grid_plan` the rest.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct GridParams {
    /// Levels in use (1 to [`GRID_MAX_LEVELS`]); level 0 is the coarsest.
    pub level_count: u32,
    /// The hash table holds `1 << table_bits` cells; the sort's key bits.
    pub table_bits: u32,
    /// Each level's cell is `2^ratio_log2` times the next finer one's; 0 for one level.
    pub ratio_log2: u32,
    /// Dimensions the cost model of `grid_plan` counts: the axes along which the boxes span
    /// more than the coarsest level's size (set by `grid_frame`).
    pub spread_axes: u32,
    /// The lowest of the boxes' low corners: no cell below its cell holds an entry.
    pub corner_lo: [f32; 3],
    /// One level where the smallest extent is at least `2^-single_span_log2` of the largest
    /// (0: levels whatever the extents).
    pub single_span_log2: u32,
    /// The highest of the boxes' low corners: no cell above its cell holds an entry.
    pub corner_hi: [f32; 3],
    /// The steps an invocation may take, at most [`GRID_BUDGET`]; 0 for [`GRID_BUDGET`] (the
    /// host's, kept by `grid_frame` and `grid_plan`).
    pub budget: u32,
    /// The levels.
    pub levels: [GridLevel; GRID_MAX_LEVELS],
}

/// A sorted entry: `GridEntry` of the shader, 32 bytes.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct GridEntry {
    /// The swept box's low corner, in the local frame.
    pub lo: [f32; 3],
    /// The body's index in the low 28 bits, its level in the top 4 (the step's bodies fit one
    /// binding of 32-byte records: fewer than 2^27).
    pub body: u32,
    /// The high corner.
    pub hi: [f32; 3],
    /// The body's collision groups (its record's word).
    pub groups: u32,
}

/// What a step of the grid counted: `GridCounts` of the shader, 32 bytes, written by
/// `grid_finish`. `valid` is 1 only when every body could be swept and every invocation
/// finished within [`GRID_BUDGET`].
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Eq, Default)]
pub struct GridCounts {
    /// 1 where the step's outputs are whole.
    pub valid: u32,
    /// The bodies of the step.
    pub bodies: u32,
    /// The grid's levels.
    pub levels: u32,
    /// 1 where an invocation ran out of its budget.
    pub unfinished: u32,
    /// 1 where a body could not be swept (not finite, or a negative radius).
    pub invalid_bodies: u32,
    /// Pairs whose boxes meet and whose groups interact, each swept once (modulo 2^32):
    /// counted only by the counted gather (buffers with a contact capacity), else 0.
    pub candidates: u32,
    /// Those that hit or overlap: the step's contacts (modulo 2^32), each listed for the
    /// ordered contacts; counted only by the counted gather, else 0.
    pub contacts: u32,
    /// 1 where a walk past its budget found no slot to be saved in (more than
    /// `StepParams::continuation_capacity` a chain): `grow` makes room.
    pub saved_overflowed: u32,
}

/// What one invocation of the gather counted (the twin's instrumentation, not the shader's).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct GridWork {
    /// Cells looked up in the hash table.
    pub cells: u64,
    /// Entries visited in those cells' ranges (other cells and levels of the same hash too).
    pub entries: u64,
    /// Box tests (entries of the searched level).
    pub box_tests: u64,
    /// Pairs swept.
    pub sweeps: u64,
    /// Pairs this invocation counted for the step (each pair is counted by one invocation,
    /// once: see [`grid_gather`]).
    pub pairs: u64,
    /// Those of them that hit or overlap.
    pub hits: u64,
}

impl std::ops::AddAssign for GridWork {
    fn add_assign(&mut self, other: Self) {
        self.cells += other.cells;
        self.entries += other.entries;
        self.box_tests += other.box_tests;
        self.sweeps += other.sweeps;
        self.pairs += other.pairs;
        self.hits += other.hits;
    }
}

/// The swept box of `body` in the local frame of `step`: `swept_boxes` of the tree, without
/// its code.
#[must_use]
pub fn swept_box(step: &StepParams, body: &BodyRecord) -> (Vec3, Vec3) {
    let center = Vec3::new(
        local_coordinate(
            body.center[0],
            step.period[0],
            step.inverse_period[0],
            step.origin[0],
        ),
        local_coordinate(
            body.center[1],
            step.period[1],
            step.inverse_period[1],
            step.origin[1],
        ),
        local_coordinate(
            body.center[2],
            step.period[2],
            step.inverse_period[2],
            step.origin[2],
        ),
    );
    let end = center + Vec3::from_array(body.displacement);
    let reach = body.radius
        + margin(
            body,
            center.to_array(),
            outside_the_box(body.center, step.period),
        );
    (
        center.min(end) - Vec3::splat(reach),
        center.max(end) + Vec3::splat(reach),
    )
}

/// A box's widest extent.
fn extent(lo: Vec3, hi: Vec3) -> f32 {
    (hi - lo).max_element()
}

/// `grid_widths`, invocation `i`.
pub fn grid_widths(i: usize, step: &StepParams, bodies: &[BodyRecord], words: &mut [u32]) {
    if i >= step.body_count as usize {
        return;
    }
    let (lo, hi) = swept_box(step, &bodies[i]);
    let width = ordered(extent(lo, hi));
    words[WORD_SMALLEST] = words[WORD_SMALLEST].max(!width);
    words[WORD_LARGEST] = words[WORD_LARGEST].max(width);
    for k in 0..3 {
        words[WORD_LOW + k] = words[WORD_LOW + k].max(!ordered(lo[k]));
        words[WORD_HIGH + k] = words[WORD_HIGH + k].max(ordered(hi[k]));
        words[WORD_CORNER_HIGH + k] = words[WORD_CORNER_HIGH + k].max(ordered(lo[k]));
    }
}

/// The size of the coarsest level for a largest extent `largest`: a little above it, so that
/// every body's extent is strictly below; at least 2^-100 (a scene of points).
fn coarsest_size(largest: f32) -> f32 {
    (largest + largest * (1.0 / 1024.0)).max(f32::from_bits(0x0d80_0000))
}

/// `grid_frame`: the levels from the extents. `input` holds the host's `table_bits` and
/// `ratio_log2`.
#[must_use]
pub fn grid_frame(input: &GridParams, step: &StepParams, words: &[u32]) -> GridParams {
    let mut grid = *input;
    let smallest = unordered(!words[WORD_SMALLEST]);
    let largest = unordered(words[WORD_LARGEST]);
    let top = coarsest_size(largest);
    let ratio = f32::from_bits((127 - grid.ratio_log2.min(8)) << 23);
    let single = f32::from_bits((127 - grid.single_span_log2.min(8)) << 23);
    let mut count = 1usize;
    let mut size = top;
    grid.levels = [GridLevel::default(); GRID_MAX_LEVELS];
    for k in 0..GRID_MAX_LEVELS {
        if k > 0 {
            if grid.ratio_log2 == 0 || (grid.single_span_log2 > 0 && smallest >= top * single) {
                break;
            }
            size *= ratio;
            if step.body_count == 0 || size <= smallest {
                break;
            }
            count = k + 1;
        }
        grid.levels[k].size = size;
        grid.levels[k].inverse = 1.0 / size;
    }
    grid.level_count = count as u32;
    for k in 0..3 {
        grid.corner_lo[k] = unordered(!words[WORD_LOW + k]);
        grid.corner_hi[k] = unordered(words[WORD_CORNER_HIGH + k]);
    }
    // The axes along which the boxes spread beyond the coarsest cell: the cost model's
    // dimensions (2 for a flat scene).
    grid.spread_axes = (0..3)
        .filter(|&k| {
            let span = unordered(words[WORD_HIGH + k]) - unordered(!words[WORD_LOW + k]);
            span > top
        })
        .count()
        .max(1) as u32;
    grid
}

/// The level of a body whose widest extent is `width`: the finest whose size exceeds it.
fn level_of(grid: &GridParams, width: f32) -> usize {
    let mut k = 0;
    while k + 1 < grid.level_count as usize && width < grid.levels[k + 1].size {
        k += 1;
    }
    k
}

/// The cell index of coordinate `x` at `level`: `floor(x / size)` (by its inverse), clamped
/// to ±2^30 (a monotone clamp: the cells beyond it merge, which costs box tests only). A
/// periodic axis is not wrapped: a box's corner lies in about `[-period / 4, period)`, and the
/// queries shift themselves by a period instead.
fn cell_index(level: &GridLevel, x: f32) -> i32 {
    (x * level.inverse)
        .floor()
        .clamp(-((1 << 30) as f32), (1 << 30) as f32) as i32
}

/// The key of a cell at level `k` in a table of `2^table_bits` slots: cells are taken in
/// blocks of 4 × 4 × 4, a block's hash (murmur3's finaliser of its coordinates and level) in
/// the high bits and the cell's place in its block in the low 6, so that the sort puts the
/// bodies of a block together and an invocation's neighbours in the gather walk the same
/// cells (the GPU's warps stay together and read the same lines). Two cells that share a key
/// cost box tests only.
#[must_use]
pub fn cell_hash(cell: [i32; 3], k: u32, table_bits: u32) -> u32 {
    let block = cell.map(|c| (c >> 2) as u32);
    let place = (cell[0] as u32 & 3) | ((cell[1] as u32 & 3) << 2) | ((cell[2] as u32 & 3) << 4);
    let mut h = block[0].wrapping_mul(0x9e37_79b1)
        ^ block[1].wrapping_mul(0x85eb_ca77)
        ^ block[2].wrapping_mul(0xc2b2_ae3d)
        ^ k.wrapping_mul(0x27d4_eb2f);
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    ((h >> (32 - (table_bits - BLOCK_BITS))) << BLOCK_BITS) | place
}

/// Bits of a cell's place in its block of 4 × 4 × 4.
const BLOCK_BITS: u32 = 6;

/// The cell of a box's low corner at `level`.
fn home_cell(level: &GridLevel, lo: Vec3) -> [i32; 3] {
    [0, 1, 2].map(|axis| cell_index(level, lo[axis]))
}

/// `grid_keys`, invocation `i`: body `i`'s hash as its sort key; its level counted.
pub fn grid_keys(
    i: usize,
    step: &StepParams,
    grid: &GridParams,
    bodies: &[BodyRecord],
    sort_in: &mut [KeyValue],
    words: &mut [u32],
) {
    if i >= step.body_count as usize {
        return;
    }
    let (lo, hi) = swept_box(step, &bodies[i]);
    let k = level_of(grid, extent(lo, hi));
    words[WORD_POPULATION + k] += 1;
    let cell = home_cell(&grid.levels[k], lo);
    sort_in[i] = KeyValue {
        key: cell_hash(cell, k as u32, grid.table_bits),
        value: i as u32,
    };
}

/// `grid_cells`, invocation `p`: the entry at sorted position `p`, and the bounds of its
/// hash's range where `p` starts or ends it (`ranges[2h]`, `ranges[2h + 1]`; both 0 for a hash
/// no body has, from the clear before).
pub fn grid_cells(
    p: usize,
    step: &StepParams,
    grid: &GridParams,
    bodies: &[BodyRecord],
    sort_out: &[KeyValue],
    entries: &mut [GridEntry],
    ranges: &mut [u32],
) {
    let n = step.body_count as usize;
    if p >= n {
        return;
    }
    let KeyValue { key, value } = sort_out[p];
    let body = &bodies[value as usize];
    let (lo, hi) = swept_box(step, body);
    let level = level_of(grid, extent(lo, hi)) as u32;
    entries[p] = GridEntry {
        lo: lo.to_array(),
        body: value | (level << LEVEL_SHIFT),
        hi: hi.to_array(),
        groups: body.groups,
    };
    if p == 0 || sort_out[p - 1].key != key {
        ranges[2 * key as usize] = p as u32;
    }
    if p + 1 == n || sort_out[p + 1].key != key {
        ranges[2 * key as usize + 1] = p as u32 + 1;
    }
}

/// `grid_plan`: each level's population and which levels it searches. A level searches
/// itself; of a finer level `f` and a coarser `c`, the finer searches the coarser where the
/// model's cost is lower: the finer's bodies each look up about 3 cells an axis of the
/// coarser, each with the coarser's bodies a cell; the coarser's bodies each look up
/// `size_c / size_f + 3` cells an axis of the finer, each with the finer's bodies a cell
/// (bodies a cell: the population over the scene's cells, at least one).
#[must_use]
pub fn grid_plan(input: &GridParams, words: &[u32]) -> GridParams {
    let mut grid = *input;
    let count = grid.level_count as usize;
    let dims = grid.spread_axes;
    let span: Vec<f32> = (0..3)
        .map(|k| unordered(words[WORD_HIGH + k]) - unordered(!words[WORD_LOW + k]))
        .collect();
    let volume = span.iter().fold(1.0f32, |v, s| v * s.max(0.0));
    for k in 0..count {
        grid.levels[k].population = words[WORD_POPULATION + k];
        grid.levels[k].searches = 1 << k;
    }
    let per_cell = |level: &GridLevel| {
        let cell_volume = power(level.size, dims);
        (level.population as f32 * cell_volume / volume.max(cell_volume)).max(1.0)
    };
    for c in 0..count {
        for f in c + 1..count {
            let (coarse, fine) = (grid.levels[c], grid.levels[f]);
            let up = fine.population as f32 * power(3.0, dims) * per_cell(&coarse);
            let down = coarse.population as f32
                * power(coarse.size / fine.size + 3.0, dims)
                * per_cell(&fine);
            // A coarse body's walk of the fine level visits up to this many cells: one it
            // could not finish within its budget is never the plan (one body of radius 150
            // over 24³ small ones chose it by the model's count, and ran out).
            let walk = walk_cells(&grid, &coarse, &fine);
            if up <= down || walk > budget_of(&grid) as f32 * 0.5 {
                grid.levels[f].searches |= 1 << c;
            } else {
                grid.levels[c].searches |= 1 << f;
            }
        }
    }
    grid
}

/// The most cells a walk of level `fine` by a body of level `coarse` visits (`walk_cells` of
/// the shader): per axis, the cells its box can reach (its extent, below the coarse size,
/// over the fine one, and three more for the neighbours and the rounding), at most those
/// between the corners of the boxes (and two more).
fn walk_cells(grid: &GridParams, coarse: &GridLevel, fine: &GridLevel) -> f32 {
    (0..3).fold(1.0, |cells, k| {
        let reach = coarse.size / fine.size + 3.0;
        let between = (grid.corner_hi[k] - grid.corner_lo[k]) / fine.size + 2.0;
        cells * reach.min(between)
    })
}

/// `x` to the power `n`, by `n` products in order (as the shader computes it).
fn power(x: f32, n: u32) -> f32 {
    (0..n).fold(1.0, |product, _| product * x)
}

/// The sweep's parameters of the step's options.
fn sweep_params(step: &StepParams) -> SweepParams {
    SweepParams {
        period: step.period,
        flags: step.flags,
        inverse_period: step.inverse_period,
        pair_capacity: 0,
    }
}

/// The shift of image `image` (0 to 26) of a box: per axis, by its digit in base 3 (from
/// the highest), none, a period below or a period above; `None` where it shifts an axis that
/// does not wrap.
fn image_shift(step: &StepParams, image: u32) -> Option<Vec3> {
    let steps_of = [image / 9, (image / 3) % 3, image % 3];
    if (0..3).any(|axis| steps_of[axis] != 0 && step.period[axis] <= 0.0) {
        return None;
    }
    Some(Vec3::from_array([0, 1, 2].map(|axis| {
        match steps_of[axis] {
            1 => -step.period[axis],
            2 => step.period[axis],
            _ => 0.0,
        }
    })))
}

/// The first image (the least index) of box `own` that meets `other`: per axis the least
/// digit whose shift meets it (0 none, 1 a period below, 2 above), as a loop over the images
/// would find it; the shader has no loop here (Mesa counts each loop entered against its
/// limit, and every pair would pay it).
fn first_image(step: &StepParams, own: &GridEntry, other: &GridEntry) -> u32 {
    (0..3).fold(0, |image, axis| {
        let (lo, hi, period) = (own.lo[axis], own.hi[axis], step.period[axis]);
        let meets = |shift: f32| lo + shift <= other.hi[axis] && other.lo[axis] <= hi + shift;
        let digit = if meets(0.0) {
            0
        } else if period > 0.0 && meets(-period) {
            1
        } else {
            2
        };
        image * 3 + digit
    })
}

/// Whether the box `[lo, hi]` (a body's, shifted) meets `other`'s, as the tree's queries
/// test an image (`overlaps` of the shader).
fn meets_box(lo: Vec3, hi: Vec3, other: &GridEntry) -> bool {
    lo.cmple(Vec3::from_array(other.hi)).all() && Vec3::from_array(other.lo).cmple(hi).all()
}

/// The cells of one axis that the query of `[lo, hi]` (already shifted) visits at `level`:
/// `(first, count)`. A partner whose box meets the query's has its low corner in
/// `[lo - size, hi]` (its extent is below `size`), so in these cells: the slack covers the
/// rounding of `lo - size`, and no cell outside the corners' holds an entry.
fn axis_range(grid: &GridParams, level: &GridLevel, axis: usize, lo: f32, hi: f32) -> (i32, i32) {
    let slack = (lo.abs() + hi.abs() + level.size) * (1.0 / 2_097_152.0);
    let first =
        cell_index(level, lo - level.size - slack).max(cell_index(level, grid.corner_lo[axis]));
    let last = cell_index(level, hi + slack).min(cell_index(level, grid.corner_hi[axis]));
    (first, (last - first + 1).max(0))
}

/// The steps a walk may take: the grid's budget, at most [`GRID_BUDGET`] (0 for it).
fn budget_of(grid: &GridParams) -> u32 {
    if grid.budget == 0 {
        GRID_BUDGET
    } else {
        grid.budget.min(GRID_BUDGET)
    }
}

/// The level of a sorted entry: the top four bits of its `body` word.
fn entry_level(entry: &GridEntry) -> usize {
    (entry.body >> LEVEL_SHIFT) as usize
}

/// The body of a sorted entry: the low 28 bits of its `body` word.
fn entry_body(entry: &GridEntry) -> u32 {
    entry.body & BODY_MASK
}

/// What one walk over the searched levels does with each partner it sweeps.
trait Visit {
    /// Whether the walk visits the body's own level (the partners' walk needs only the
    /// others).
    fn own_level(&self) -> bool;

    /// The least (time, partner) kept so far, saved with a walk past its budget.
    fn best(&self) -> Option<(f32, u32)>;

    /// Partner `partner` (at level `k`, `other_level` where it is not the body's own), its
    /// pair's sweep `impact`, a hit.
    fn hit(&mut self, partner: u32, cross: bool, impact: &crate::layout::ImpactRecord);
}

/// Where a walk stands: the level and the next of its images to begin; in the image begun,
/// its index, the next cell and whether one is left; the cell looked up and the next entry
/// of its range. What a walk past its budget saves.
#[derive(Clone, Copy, Debug, Default)]
struct Place {
    k: usize,
    image: u32,
    current_image: u32,
    next: [i32; 3],
    cells_left: bool,
    cell: [i32; 3],
    q: u32,
    end: u32,
}

/// The first word of slot `slot` of chain `chain` (`slot_base` of the shader).
fn slot_base(step: &StepParams, chain: u32, slot: u32) -> usize {
    RESUME_HEAD
        + (chain as usize * step.continuation_capacity as usize + slot as usize) * WALK_WORDS
}

/// `save_walk`: the walk of sorted position `p` in `mode`, at `place` with `best`, saved in
/// `slot` (the one it was resumed from) or a new slot of its chain, counted as pending; past
/// the capacity not saved, and the overflow flagged.
fn save_walk(
    step: &StepParams,
    words: &mut [u32],
    slot: Option<u32>,
    (p, mode): (usize, u32),
    place: &Place,
    best: Option<(f32, u32)>,
) {
    let chain = u32::from(mode == WALK_PARTNERS);
    let slot = match slot {
        Some(slot) => slot,
        None => {
            let slot = words[WORD_SAVED + chain as usize];
            words[WORD_SAVED + chain as usize] = slot.wrapping_add(1);
            if slot >= step.continuation_capacity {
                words[WORD_SAVED_OVERFLOWED] = 1;
                return;
            }
            words[WORD_PENDING + chain as usize] += 1;
            slot
        }
    };
    let base = slot_base(step, chain, slot);
    let (best_time, best_partner) = best.unwrap_or((0.0, 0));
    let flag = |set: bool, bit: u32| if set { bit } else { 0 };
    let [x, y, z] = place.next.map(|n| n as u32);
    let [cx, cy, cz] = place.cell.map(|c| c as u32);
    words[base..base + 15].copy_from_slice(&[
        p as u32,
        WALK_PENDING
            | mode
            | flag(best.is_some(), WALK_FOUND)
            | flag(place.cells_left, WALK_CELLS_LEFT),
        place.k as u32,
        place.image,
        place.current_image,
        x,
        y,
        z,
        cx,
        cy,
        cz,
        place.q,
        place.end,
        best_time.to_bits(),
        best_partner,
    ]);
}

/// The place a saved walk stands at.
fn saved_place(words: &[u32], base: usize) -> Place {
    let word = |i: usize| words[base + i];
    Place {
        k: word(2) as usize,
        image: word(3),
        current_image: word(4),
        next: [word(5), word(6), word(7)].map(|n| n as i32),
        cells_left: word(1) & WALK_CELLS_LEFT != 0,
        cell: [word(8), word(9), word(10)].map(|c| c as i32),
        q: word(11),
        end: word(12),
    }
}

/// The walk of body at sorted position `p` over the levels it searches: every partner whose
/// box meets its own, of a level it searches, that it may interact with, swept in canonical
/// order; from the start, or from where the walk saved in `slot` stopped. Returns false where
/// the budget ran out, the walk then saved (`save_walk`) for a resume.
///
/// The shader's walk is one loop whose every iteration is a step (an entry visited, a cell
/// looked up, an image or a skipped level begun, the end), so that Mesa's limit of 65,535
/// loop iterations, which it counts for a SIMD group of invocations, holds for the group
/// whenever the budget holds for each: this is that loop, step for step.
#[allow(clippy::too_many_arguments)]
fn walk(
    p: usize,
    step: &StepParams,
    grid: &GridParams,
    bodies: &[BodyRecord],
    entries: &[GridEntry],
    ranges: &[u32],
    (work, words): (&mut GridWork, &mut [u32]),
    visit: &mut impl Visit,
    slot: Option<u32>,
) -> bool {
    let own = entries[p];
    let own_level = entry_level(&own);
    let own_body = entry_body(&own);
    let searches = grid.levels[own_level].searches;
    let sweep = sweep_params(step);
    let budget = budget_of(grid);
    let mode = if visit.own_level() {
        WALK_GATHER
    } else {
        WALK_PARTNERS
    };
    // The box itself, and on a periodic axis the box a period below and above (each axis's
    // shift independent, as the tree's 27 images); image 0 is the box itself.
    let images = if step.period.iter().any(|&period| period > 0.0) {
        27
    } else {
        1
    };
    let mut at = match slot {
        Some(slot) => saved_place(words, slot_base(step, u32::from(!visit.own_level()), slot)),
        None => Place::default(),
    };
    // The image begun: its box and cells per axis (made again for a walk resumed).
    let (mut lo, mut hi) = (Vec3::from_array(own.lo), Vec3::from_array(own.hi));
    let mut axes = [(0i32, 0i32); 3];
    if slot.is_some() && at.k < grid.level_count as usize {
        let shift = image_shift(step, at.current_image).unwrap_or(Vec3::ZERO);
        (lo, hi) = (lo + shift, hi + shift);
        let level = &grid.levels[at.k];
        axes = [0, 1, 2].map(|axis| axis_range(grid, level, axis, lo[axis], hi[axis]));
    }
    let mut steps = 0u32;
    loop {
        steps += 1;
        // Past the budget: out of the loop, to be saved below (as the shader does).
        if steps > budget {
            break;
        }
        if at.q < at.end {
            let index = at.q as usize;
            at.q += 1;
            work.entries += 1;
            let other = &entries[index];
            if index == p || entry_level(other) != at.k {
                continue;
            }
            work.box_tests += 1;
            if !interacts(own.groups, other.groups) || !meets_box(lo, hi, other) {
                continue;
            }
            work.sweeps += 1;
            let other_body = entry_body(other);
            let (a, b) = (own_body.min(other_body), own_body.max(other_body));
            let impact = sweep_pair(&bodies[a as usize], &bodies[b as usize], &sweep);
            let hit = impact.status != STATUS_MISS;
            if hit {
                visit.hit(other_body, at.k != own_level, &impact);
            }
            // The step's counts: each pair by one of its bodies (the lower at one level, the
            // searching one across two), at the partner's own cell (another of the same hash
            // is a collision) and in the first image whose box meets it.
            let level = &grid.levels[at.k];
            if !visit.own_level()
                || (at.k == own_level && other_body < own_body)
                || at.cell != [0, 1, 2].map(|axis| cell_index(level, other.lo[axis]))
                || at.current_image != first_image(step, &own, other)
            {
                continue;
            }
            work.pairs += 1;
            work.hits += u64::from(hit);
            continue;
        }
        if at.cells_left {
            at.cell = [0, 1, 2].map(|axis| axes[axis].0 + at.next[axis]);
            work.cells += 1;
            let hash = cell_hash(at.cell, at.k as u32, grid.table_bits) as usize;
            (at.q, at.end) = (ranges[2 * hash], ranges[2 * hash + 1]);
            at.next[2] += 1;
            if at.next[2] == axes[2].1 {
                at.next[2] = 0;
                at.next[1] += 1;
                if at.next[1] == axes[1].1 {
                    at.next[1] = 0;
                    at.next[0] += 1;
                    at.cells_left = at.next[0] < axes[0].1;
                }
            }
            continue;
        }
        // Begin the next image, of this level or the next one searched.
        if at.image == images {
            at.image = 0;
            at.k += 1;
        }
        if at.k >= grid.level_count as usize {
            return true;
        }
        // The partners' walk needs only the other levels.
        if searches & (1 << at.k) == 0 || (at.k == own_level && !visit.own_level()) {
            at.image = images;
            continue;
        }
        at.current_image = at.image;
        at.image += 1;
        let Some(shift) = image_shift(step, at.current_image) else {
            continue;
        };
        (lo, hi) = (
            Vec3::from_array(own.lo) + shift,
            Vec3::from_array(own.hi) + shift,
        );
        let level = &grid.levels[at.k];
        axes = [0, 1, 2].map(|axis| axis_range(grid, level, axis, lo[axis], hi[axis]));
        at.next = [0; 3];
        at.cells_left = axes.iter().all(|&(_, count)| count > 0);
    }
    save_walk(step, words, slot, (p, mode), &at, visit.best());
    false
}

/// The complement of a hit's time bits: atomicMax of it keeps the least time (times are in
/// [0, 1]; 0, below every complement, for none).
fn time_key(time_of_impact: f32) -> u32 {
    !time_of_impact.to_bits()
}

/// The least (time, partner) a gather has met (the impact of it, where this invocation met
/// it), and the cross-level hits' times.
struct Gather<'a> {
    best: Option<(f32, u32)>,
    best_impact: crate::layout::ImpactRecord,
    /// Whether this invocation improved the best it was given (a resumed walk writes only
    /// then; a walk begun afresh has improved wherever it has a best).
    improved: bool,
    time_words: &'a mut [u32],
}

impl Visit for Gather<'_> {
    fn own_level(&self) -> bool {
        true
    }

    fn best(&self) -> Option<(f32, u32)> {
        self.best
    }

    fn hit(&mut self, partner: u32, cross: bool, impact: &crate::layout::ImpactRecord) {
        let t = impact.time_of_impact;
        if self
            .best
            .is_none_or(|(time, other)| t < time || (t == time && partner < other))
        {
            self.best = Some((t, partner));
            self.best_impact = *impact;
            self.improved = true;
        }
        if cross {
            let word = &mut self.time_words[4 * partner as usize];
            *word = (*word).max(time_key(t));
        }
    }
}

impl Gather<'_> {
    /// `keep_best`: where this invocation improved the best, body `body`'s record (one level)
    /// or its own best time and partner and its least time (several).
    fn keep_best(
        &mut self,
        step: &StepParams,
        grid: &GridParams,
        bodies: &[BodyRecord],
        body: u32,
        earliest: &mut [EarliestRecord],
    ) {
        let (true, Some((time, partner))) = (self.improved, self.best) else {
            return;
        };
        if grid.level_count == 1 {
            earliest[body as usize] = record_of(step, bodies, body, partner, &self.best_impact);
            return;
        }
        let i = body as usize;
        self.time_words[4 * i + 2] = time_key(time);
        self.time_words[4 * i + 3] = !partner;
        self.time_words[4 * i] = self.time_words[4 * i].max(time_key(time));
    }
}

/// The record of `body`'s contact with `partner`, whose pair's sweep is `impact`.
fn record_of(
    step: &StepParams,
    bodies: &[BodyRecord],
    body: u32,
    partner: u32,
    impact: &crate::layout::ImpactRecord,
) -> EarliestRecord {
    let (a, b) = (body.min(partner), body.max(partner));
    let image =
        super::contacts::image_of(step, bodies[a as usize].center, bodies[b as usize].center);
    EarliestRecord {
        time_of_impact: impact.time_of_impact,
        other: partner,
        status: impact.status,
        kind: EARLIEST_BODY,
        image: if body == a {
            image
        } else {
            image.map(i32::wrapping_neg)
        },
        _pad: 0,
    }
}

/// `grid_gather` (and `grid_gather_counted`, whose counts these are), invocation `p`: with
/// one level, the body's record itself; with several, its least time and partner
/// (`time_words[4i + 2]`, `time_words[4i + 3]`: the time key and the partner's complement,
/// left 0 for none) and the time words (`time_words[4i]`) of it and of its cross-level
/// partners. Adds the pairs it counted and their hits to `words` (the shader's counted
/// gather lists each hit as well). A walk past its budget is saved in `words` for
/// [`grid_resume`], its best so far kept here too. Returns what it counted.
#[allow(clippy::too_many_arguments)]
pub fn grid_gather(
    p: usize,
    step: &StepParams,
    grid: &GridParams,
    bodies: &[BodyRecord],
    entries: &[GridEntry],
    ranges: &[u32],
    time_words: &mut [u32],
    earliest: &mut [EarliestRecord],
    words: &mut [u32],
) -> GridWork {
    let mut work = GridWork::default();
    if p >= step.body_count as usize {
        return work;
    }
    let mut gather = Gather {
        best: None,
        best_impact: crate::layout::ImpactRecord::default(),
        improved: false,
        time_words,
    };
    walk(
        p,
        step,
        grid,
        bodies,
        entries,
        ranges,
        (&mut work, words),
        &mut gather,
        None,
    );
    count(words, &work);
    gather.keep_best(step, grid, bodies, entry_body(&entries[p]), earliest);
    work
}

/// Adds the pairs `work` counted and their hits to `words` (atomicAdd's wrap).
fn count(words: &mut [u32], work: &GridWork) {
    words[WORD_CANDIDATES] = words[WORD_CANDIDATES].wrapping_add(work.pairs as u32);
    // The shader's counted gather lists each hit at this word's count.
    words[WORD_CONTACTS] = words[WORD_CONTACTS].wrapping_add(work.hits as u32);
}

/// The cross-level hits at each partner's least time, offering this body as its partner.
struct Partners<'a> {
    body: u32,
    time_words: &'a mut [u32],
}

impl Visit for Partners<'_> {
    fn own_level(&self) -> bool {
        false
    }

    fn best(&self) -> Option<(f32, u32)> {
        None
    }

    fn hit(&mut self, partner: u32, cross: bool, impact: &crate::layout::ImpactRecord) {
        let j = partner as usize;
        if cross && self.time_words[4 * j] == time_key(impact.time_of_impact) {
            self.time_words[4 * j + 1] = self.time_words[4 * j + 1].max(!self.body);
        }
    }
}

/// `grid_partners`, invocation `p` (several levels only): the lowest partner at each body's
/// least time (`time_words[4i + 1]`, the complement, joined by atomicMax): the body's own best
/// where its time is the least, and this body for each cross-level partner it hit at that
/// partner's least time. A walk past its budget is saved for [`grid_resume`].
#[allow(clippy::too_many_arguments)]
pub fn grid_partners(
    p: usize,
    step: &StepParams,
    grid: &GridParams,
    bodies: &[BodyRecord],
    entries: &[GridEntry],
    ranges: &[u32],
    time_words: &mut [u32],
    words: &mut [u32],
) {
    if p >= step.body_count as usize || grid.level_count == 1 {
        return;
    }
    let body = entry_body(&entries[p]);
    let i = body as usize;
    let own = time_words[4 * i + 2];
    if own != 0 && own == time_words[4 * i] {
        time_words[4 * i + 1] = time_words[4 * i + 1].max(time_words[4 * i + 3]);
    }
    let mut work = GridWork::default();
    let mut partners = Partners { body, time_words };
    walk(
        p,
        step,
        grid,
        bodies,
        entries,
        ranges,
        (&mut work, words),
        &mut partners,
        None,
    );
}

/// `grid_resume_dispatch`: the chain whose walks the next resumes take up (the gathers' first,
/// then the partners'), and how many slots it took; the shader writes the dispatch of one
/// invocation a slot.
pub fn grid_resume_dispatch(step: &StepParams, words: &mut [u32]) -> (u32, u32) {
    let chain = words[WORD_RESUME_CHAIN];
    words[WORD_RESUME_CHAIN] += 1;
    let slots = words[WORD_SAVED + chain as usize].min(step.continuation_capacity);
    (chain, slots)
}

/// `grid_resume`, invocation `slot` of the chain `grid_resume_dispatch` prepared last: a
/// pending walk goes on from where it stopped for another budget of steps, with the best it
/// had kept (written again where it improves: `keep_best`) or offering the partners' times,
/// and is saved in its own slot again where it runs out. Returns what it counted.
#[allow(clippy::too_many_arguments)]
pub fn grid_resume(
    slot: u32,
    step: &StepParams,
    grid: &GridParams,
    bodies: &[BodyRecord],
    entries: &[GridEntry],
    ranges: &[u32],
    time_words: &mut [u32],
    earliest: &mut [EarliestRecord],
    words: &mut [u32],
) -> GridWork {
    let mut work = GridWork::default();
    let chain = words[WORD_RESUME_CHAIN].wrapping_sub(1);
    if slot >= words[WORD_SAVED + chain as usize].min(step.continuation_capacity) {
        return work;
    }
    let base = slot_base(step, chain, slot);
    let flags = words[base + 1];
    if flags & WALK_PENDING == 0 {
        return work;
    }
    let p = words[base] as usize;
    let finished = if flags & 3 == WALK_PARTNERS {
        let body = entry_body(&entries[p]);
        let mut partners = Partners { body, time_words };
        walk(
            p,
            step,
            grid,
            bodies,
            entries,
            ranges,
            (&mut work, words),
            &mut partners,
            Some(slot),
        )
    } else {
        let best =
            (flags & WALK_FOUND != 0).then(|| (f32::from_bits(words[base + 13]), words[base + 14]));
        let mut gather = Gather {
            best,
            best_impact: crate::layout::ImpactRecord::default(),
            improved: false,
            time_words,
        };
        let finished = walk(
            p,
            step,
            grid,
            bodies,
            entries,
            ranges,
            (&mut work, words),
            &mut gather,
            Some(slot),
        );
        gather.keep_best(step, grid, bodies, entry_body(&entries[p]), earliest);
        count(words, &work);
        finished
    };
    if finished {
        words[base + 1] = flags & !WALK_PENDING;
        words[WORD_PENDING + chain as usize] -= 1;
    }
    work
}

/// `grid_records`, invocation `i` (body `i`, several levels only): its record from the pair
/// its two words name.
pub fn grid_records(
    i: usize,
    step: &StepParams,
    grid: &GridParams,
    bodies: &[BodyRecord],
    time_words: &[u32],
    earliest: &mut [EarliestRecord],
) {
    if i >= step.body_count as usize || grid.level_count == 1 || time_words[4 * i] == 0 {
        return;
    }
    let partner = !time_words[4 * i + 1];
    let body = i as u32;
    let (a, b) = (body.min(partner), body.max(partner));
    let impact = sweep_pair(
        &bodies[a as usize],
        &bodies[b as usize],
        &sweep_params(step),
    );
    earliest[i] = record_of(step, bodies, body, partner, &impact);
}

/// The hash table's bits for a capacity of `bodies`: twice the power of two at or above it
/// (a flat scene uses a quarter of each block's places), at least 2^10, at most 2^28.
#[must_use]
pub fn table_bits(bodies: usize) -> u32 {
    (bodies.max(1).next_power_of_two().trailing_zeros() + 1).clamp(10, 28)
}

/// What [`earliest_by_grid`] did: the grid it made and, per body, what its gather counted.
#[derive(Clone, Debug)]
pub struct GridRun {
    /// Each body's earliest contact (kind [`EARLIEST_BODY`]) or none.
    pub earliest: Vec<EarliestRecord>,
    /// The grid's levels and plan.
    pub grid: GridParams,
    /// Per sorted position, what the gather counted.
    pub work: Vec<GridWork>,
    /// Whether a walk was still past its budget after the last resume.
    pub unfinished: bool,
    /// Whether a walk past its budget found no slot to be saved in.
    pub saved_overflowed: bool,
}

/// Every entry point in the device's order, on the CPU, for bodies whose frame is `step`
/// (from [`StepParams::new`]), with levels `2^ratio_log2` apart (one level where the
/// extents span at most `2^single_span_log2`): each body's earliest contact with another
/// body. The walks take the full budget and [`GRID_RESUME_PASSES`] resumes, with a slot for
/// every body ([`earliest_by_grid_with`] sets them).
///
/// # Panics
/// Where `step.body_count` is more than `bodies` holds: the twin reads the bodies its
/// parameters name, as the shader does. Its memory is a few words a body of
/// `step.body_count`, sized by the caller as the device's buffers are.
#[must_use]
pub fn earliest_by_grid(step: &StepParams, bodies: &[BodyRecord], ratios: [u32; 2]) -> GridRun {
    let resume = GridResume {
        budget: 0,
        passes: GRID_RESUME_PASSES,
        capacity: step.body_count.max(1),
    };
    earliest_by_grid_with(step, bodies, ratios, resume)
}

/// How [`earliest_by_grid_with`] bounds and resumes the walks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GridResume {
    /// The steps a walk takes before it is saved ([`GridParams::budget`]; 0 for
    /// [`GRID_BUDGET`]).
    pub budget: u32,
    /// The resumes after each chain of walks (the gathers', the partners').
    pub passes: u32,
    /// The walks each chain may save (`StepParams::continuation_capacity`).
    pub capacity: u32,
}

/// [`earliest_by_grid`] with the walks' budget, resumes and saved capacity of `resume`.
///
/// # Panics
/// As [`earliest_by_grid`]. Its memory is also a few words a walk of `resume.capacity`
/// (the caller's, as the device's buffer of saved walks is).
#[must_use]
pub fn earliest_by_grid_with(
    step: &StepParams,
    bodies: &[BodyRecord],
    [single_span_log2, ratio_log2]: [u32; 2],
    resume: GridResume,
) -> GridRun {
    let step = &StepParams {
        continuation_capacity: resume.capacity,
        ..*step
    };
    let n = step.body_count as usize;
    let mut words = vec![0u32; grid_words(resume.capacity)];
    for i in 0..n {
        grid_widths(i, step, bodies, &mut words);
    }
    let input = GridParams {
        table_bits: table_bits(n),
        ratio_log2,
        single_span_log2,
        budget: resume.budget,
        ..GridParams::default()
    };
    let grid = grid_frame(&input, step, &words);
    let mut sort_in = vec![KeyValue::default(); n];
    for i in 0..n {
        grid_keys(i, step, &grid, bodies, &mut sort_in, &mut words);
    }
    let mut sort_out = vec![KeyValue::default(); n];
    super::frame::sort_by_key(&sort_in, &mut sort_out);
    let mut entries = vec![GridEntry::default(); n];
    let mut ranges = vec![0u32; 2 << grid.table_bits];
    for p in 0..n {
        grid_cells(p, step, &grid, bodies, &sort_out, &mut entries, &mut ranges);
    }
    let grid = grid_plan(&grid, &words);
    let mut time_words = vec![0u32; 4 * n];
    let mut earliest = vec![EarliestRecord::default(); n];
    let mut work: Vec<GridWork> = (0..n)
        .map(|p| {
            grid_gather(
                p,
                step,
                &grid,
                bodies,
                &entries,
                &ranges,
                &mut time_words,
                &mut earliest,
                &mut words,
            )
        })
        .collect();
    // Each chain's resumes: the walks past the budget go on where they stopped.
    let mut resume_chain =
        |words: &mut Vec<u32>, time_words: &mut Vec<u32>, work: &mut [GridWork]| {
            if resume.passes == 0 {
                return;
            }
            let (_, slots) = grid_resume_dispatch(step, words);
            for _ in 0..resume.passes {
                for slot in 0..slots {
                    let base = slot_base(step, words[WORD_RESUME_CHAIN] - 1, slot);
                    let p = words[base] as usize;
                    let done = grid_resume(
                        slot,
                        step,
                        &grid,
                        bodies,
                        &entries,
                        &ranges,
                        time_words,
                        &mut earliest,
                        words,
                    );
                    if words[WORD_RESUME_CHAIN] == 1 {
                        work[p] += done;
                    }
                }
            }
        };
    resume_chain(&mut words, &mut time_words, &mut work);
    for p in 0..n {
        grid_partners(
            p,
            step,
            &grid,
            bodies,
            &entries,
            &ranges,
            &mut time_words,
            &mut words,
        );
    }
    resume_chain(&mut words, &mut time_words, &mut work);
    for i in 0..n {
        grid_records(i, step, &grid, bodies, &time_words, &mut earliest);
    }
    let pending = words[WORD_PENDING] + words[WORD_PENDING + 1];
    GridRun {
        earliest,
        grid,
        work,
        unfinished: words[WORD_UNFINISHED] != 0 || pending != 0,
        saved_overflowed: words[WORD_SAVED_OVERFLOWED] != 0,
    }
}
