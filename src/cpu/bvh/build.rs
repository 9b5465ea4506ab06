//! The tree's build ([`Bvh::build`]): swept boxes in the local frame, widened by the
//! margin; Morton codes and their sort ([`sort_by_code`]); Karras's binary tree linked in
//! one pass over the sorted keys, in runs on all cores ([`Bvh::link`]); then the fold.

use crate::par::{self, prelude::*};

use super::tree::{Aabb, Binary, Bvh, MAX_DEPTH};
use crate::cpu::frame::{local_origin, margin, outside_the_box};
use crate::cpu::scatter::scatter_to_places;
use crate::layout::{BodyRecord, FLAG_PERIODIC, LEAF, MORTON_BITS, SweepParams};

/// `x` wrapped into `[0, period)` in f64, where it is exact for the difference of two f32
/// values (or within 2⁻⁵³ of the period of it, next to 0), with no division where `x` is in
/// the box or within a period below it.
fn wrap_exactly(x: f64, period: f64) -> f64 {
    if (0.0..period).contains(&x) {
        x
    } else if (-period..0.0).contains(&x) {
        x + period
    } else {
        x.rem_euclid(period)
    }
}

/// Spreads the low 21 bits of `x` three apart (bit `k` to bit `3k`).
fn spread_by_three(x: u64) -> u64 {
    let mut x = x & 0x1f_ffff;
    x = (x | (x << 32)) & 0x001f_0000_0000_ffff;
    x = (x | (x << 16)) & 0x001f_0000_ff00_00ff;
    x = (x | (x << 8)) & 0x100f_00f0_0f00_f00f;
    x = (x | (x << 4)) & 0x10c3_0c30_c30c_30c3;
    x = (x | (x << 2)) & 0x1249_2492_4924_9249;
    x
}

/// The fewest leaves a run of [`Bvh::link_in_parts`] takes.
const LINK_PART_LEAVES: usize = 4096;

/// What a run of [`Bvh::link_in_parts`] leaves: its stack of open nodes (with their
/// prefixes), and the nodes it made with the stack empty, in order.
struct LinkRun {
    open: Vec<(u32, i32)>,
    spine: Vec<u32>,
}

/// One run of [`Bvh::link_in_parts`]: the pass over the gaps from `start` (`binary`'s
/// nodes), from an empty stack, leaving open the nodes still on it.
fn link_run(
    keys: &[(u64, u32)],
    sorted_boxes: &[Aabb],
    start: usize,
    binary: &mut [Binary],
) -> LinkRun {
    let prefix = |gap: usize| common_prefix(keys, gap, gap as isize + 1);
    let at = |gap: u32| gap as usize - start;
    // The open nodes, prefixes growing up the stack: at most one per prefix length.
    let mut stack: Vec<(u32, i32)> = Vec::with_capacity(MAX_DEPTH + 1);
    let mut spine = Vec::new();
    for gap in start..start + binary.len() {
        let here = prefix(gap);
        // The subtree left of the gap: leaf `gap`, or the nodes with longer prefixes.
        let (mut left, mut first, mut bounds) = (LEAF | gap as u32, gap as u32, sorted_boxes[gap]);
        while let Some(&(top, top_prefix)) = stack.last()
            && top_prefix >= here
        {
            stack.pop();
            // Closes `top`, whose right side is `left`, ending at leaf `gap`.
            let closed = &mut binary[at(top)];
            closed.child[1] = left;
            closed.last = gap as u32;
            closed.bounds = closed.bounds.union(&bounds);
            (left, first, bounds) = (top, closed.first, closed.bounds);
        }
        if stack.is_empty() {
            spine.push(gap as u32);
        }
        binary[at(gap as u32)] = Binary {
            child: [left, 0],
            first,
            last: 0,
            bounds,
        };
        stack.push((gap as u32, here));
    }
    LinkRun { open: stack, spine }
}

/// Sorts `keys` (a code below 2⁶³ and a distinct index each): split by the codes' top bits
/// into about `n / 8` runs (at most [`MAX_DIGITS`]), a counting pass and a scatter by
/// chunks of the keys in parallel, then each run sorted on its own, the runs in parallel.
/// `unsorted` and `places` are its memory.
///
/// A comparison sort of all the keys takes `log₂ n` rounds of compares; the runs, about
/// eight keys each (some 500 at a million bodies), take three (nine). Where the codes
/// crowd (a cluster in a large scene shares its top bits) and one run would hold more than
/// half the keys (of a sample of 64, then of all), the keys are sorted whole on all cores
/// instead; a long run is sorted on all cores.
pub(super) fn sort_by_code(
    keys: &mut Vec<(u64, u32)>,
    unsorted: &mut Vec<(u64, u32)>,
    places: &mut Vec<usize>,
) {
    let n = keys.len();
    if n < 2 {
        return;
    }
    let bits = (usize::BITS - n.leading_zeros())
        .saturating_sub(3)
        .clamp(1, MAX_DIGITS.trailing_zeros());
    let digits = 1 << bits;
    let digit = |key: &(u64, u32)| (key.0 >> (63 - bits)) as usize;
    // A look at 64 keys first: where most share a run (a cluster), the counting pass would
    // be wasted.
    let mut sample: [usize; 64] = std::array::from_fn(|k| digit(&keys[k * n / 64]));
    sample.sort_unstable();
    if sample.windows(33).any(|run| run[0] == run[32]) {
        keys.par_sort_unstable();
        return;
    }
    std::mem::swap(keys, unsorted);
    let chunk = n
        .div_ceil(SORT_CHUNKS_PER_THREAD * par::current_num_threads())
        .max(1);
    // Per chunk, each digit's count; then, counted out digit by digit and chunk by chunk,
    // where the chunk's first key of that digit goes.
    places.clear();
    places.resize(n.div_ceil(chunk) * digits, 0);
    unsorted
        .par_chunks(chunk)
        .zip(places.par_chunks_mut(digits))
        .for_each(|(keys, counts)| {
            for key in keys {
                counts[digit(key)] += 1;
            }
        });
    let chunks = places.len() / digits;
    let (mut place, mut largest) = (0, 0);
    for d in 0..digits {
        let start = place;
        for c in 0..chunks {
            let count = places[c * digits + d];
            places[c * digits + d] = place;
            place += count;
        }
        largest = largest.max(place - start);
    }
    if largest > n / 2 {
        // Crowded codes: one run would hold most keys, and the scatter would gain nothing.
        std::mem::swap(keys, unsorted);
        keys.par_sort_unstable();
        return;
    }
    let parts = unsorted
        .par_chunks(chunk)
        .zip(places.par_chunks_mut(digits))
        .map(|(chunk, places)| (chunk.iter().map(|&key| (key, digit(&key))), places));
    // SAFETY: the places were counted out just above from the same chunks of the same keys
    // and their digits.
    unsafe { scatter_to_places(parts, n, keys) };
    // The last chunk's places are now where each digit ends.
    let ends = &places[(chunks - 1) * digits..];
    sort_runs(keys, ends, 0);
}

/// Sorts each run of `keys`, which end at `ends` (less `offset`), splitting the runs in
/// halves on all cores.
fn sort_runs(keys: &mut [(u64, u32)], ends: &[usize], offset: usize) {
    if keys.len() > SORT_SERIAL_KEYS && ends.len() > 1 {
        let (left, right) = ends.split_at(ends.len() / 2);
        let split = left[left.len() - 1] - offset;
        let (left_keys, right_keys) = keys.split_at_mut(split);
        par::join(
            || sort_runs(left_keys, left, offset),
            || sort_runs(right_keys, right, offset + split),
        );
        return;
    }
    let mut start = 0;
    for &end in ends {
        let run = &mut keys[start..end - offset];
        if run.len() > SORT_PARALLEL_RUN {
            run.par_sort_unstable();
        } else {
            run.sort_unstable();
        }
        start = end - offset;
    }
}

/// The most runs of [`sort_by_code`]: each chunk counts its keys into this many places.
const MAX_DIGITS: usize = 2048;
/// Chunks of [`sort_by_code`]'s counting and scatter per thread.
const SORT_CHUNKS_PER_THREAD: usize = 4;
/// Keys of [`sort_by_code`]'s runs that one thread sorts, a group of runs at a time.
const SORT_SERIAL_KEYS: usize = 16_384;
/// A longer run (crowded codes) is sorted on all cores.
const SORT_PARALLEL_RUN: usize = 4096;

impl Bvh {
    /// Builds the tree over `bodies`' swept boxes, reusing memory.
    pub(crate) fn build(&mut self, bodies: &[BodyRecord], params: &SweepParams) {
        self.period = if params.flags & FLAG_PERIODIC != 0 {
            params.period
        } else {
            [0.0; 3]
        };
        let period = self.period;
        let origin = local_origin(bodies, params);
        bodies
            .par_iter()
            .map(|body| {
                // The centre in the local frame, in f64, where the difference and the
                // wrap are exact: one rounding to f32, at the local coordinate's size
                // (within [0, L] on an axis that wraps).
                let center: [f32; 3] = std::array::from_fn(|k| {
                    let local = f64::from(body.center[k]) - f64::from(origin[k]);
                    if period[k] > 0.0 {
                        wrap_exactly(local, f64::from(period[k])) as f32
                    } else {
                        local as f32
                    }
                });
                let outside = outside_the_box(body.center, period);
                let reach = body.radius + margin(body, center, outside);
                let end: [f32; 3] = std::array::from_fn(|k| center[k] + body.displacement[k]);
                Aabb {
                    lo: std::array::from_fn(|k| center[k].min(end[k]) - reach),
                    hi: std::array::from_fn(|k| center[k].max(end[k]) + reach),
                }
            })
            .collect_into_vec(&mut self.boxes);
        self.bounds = self
            .boxes
            .par_iter()
            .copied()
            .reduce_with(|a, b| a.union(&b));
        let Some(bounds) = self.bounds else {
            self.keys.clear();
            self.root = None;
            self.nodes.clear();
            return;
        };
        let scale: [f32; 3] = std::array::from_fn(|k| {
            let extent = bounds.hi[k] - bounds.lo[k];
            if extent > 0.0 {
                ((1u32 << MORTON_BITS) - 1) as f32 / extent
            } else {
                0.0
            }
        });
        self.boxes
            .par_iter()
            .enumerate()
            .map(|(index, b)| {
                let code = (0..3).fold(0u64, |code, k| {
                    let centre = 0.5 * (b.lo[k] + b.hi[k]);
                    let cell =
                        (((centre - bounds.lo[k]) * scale[k]) as u64).min((1 << MORTON_BITS) - 1);
                    code | (spread_by_three(cell) << (2 - k))
                });
                (code, index as u32)
            })
            .collect_into_vec(&mut self.keys);
        sort_by_code(&mut self.keys, &mut self.unsorted, &mut self.places);
        let boxes = &self.boxes;
        self.keys
            .par_iter()
            .map(|&(_, body)| boxes[body as usize])
            .collect_into_vec(&mut self.sorted_boxes);
        self.link();
        self.fold();
    }

    /// The binary tree over the sorted keys, with each node's box, in one pass over the
    /// sorted leaves (linear time), in parts on all cores where there are enough leaves.
    ///
    /// Karras's node `i` is a node of the Cartesian tree of the common prefixes of
    /// neighbouring keys (the one over leaves `i` and `i + 1` splits a node whose leaves
    /// share a longer prefix on each side): a stack of nodes with growing prefixes holds the
    /// right edge of the tree built so far. The node for a new gap takes the nodes with
    /// longer prefixes off the stack as its left child; each node leaves the stack complete,
    /// so its box is made then. The prefixes of a range's gaps have one least (the bit where
    /// the sorted keys change), so the tree is Karras's.
    pub(super) fn link(&mut self) {
        let parts = (self.keys.len() / LINK_PART_LEAVES).clamp(1, par::current_num_threads());
        self.link_in_parts(parts);
    }

    /// [`link`](Self::link) in `parts` runs of gaps, in parallel: each runs the pass from
    /// an empty stack ([`link_run`]), which gets every node right but those it made with the
    /// stack empty (its left spine), whose left subtree may reach into the runs before.
    /// Those are then made again one after another, each taking what it would have taken
    /// off the stack of the runs before it (a few nodes a run), and the runs' stacks are
    /// joined and closed.
    pub(super) fn link_in_parts(&mut self, parts: usize) {
        let keys = &self.keys;
        let n = keys.len();
        self.root = None;
        self.binary.clear();
        if n < 2 {
            return;
        }
        let gaps = n - 1;
        let parts = parts.clamp(1, gaps);
        // Each run fills its own nodes: the fill is a parallel pass.
        let empty = Binary {
            child: [0; 2],
            first: 0,
            last: 0,
            bounds: Aabb::EMPTY,
        };
        self.binary.par_extend(par::repeat_n(empty, gaps));
        let sorted_boxes = &self.sorted_boxes[..];
        let mut runs: Vec<LinkRun> = Vec::new();
        let starts: Vec<usize> = (0..=parts).map(|p| p * gaps / parts).collect();
        {
            let mut slices = Vec::with_capacity(parts);
            let mut rest = &mut self.binary[..];
            for bounds in starts.windows(2) {
                let (slice, after) = rest.split_at_mut(bounds[1] - bounds[0]);
                slices.push((bounds[0], slice));
                rest = after;
            }
            slices
                .into_par_iter()
                .map(|(start, slice)| link_run(keys, sorted_boxes, start, slice))
                .collect_into_vec(&mut runs);
        }
        let binary = &mut self.binary[..];
        let subtree = |binary: &[Binary], child: u32| -> (u32, u32, u32, Aabb) {
            if child & LEAF != 0 {
                let leaf = child & !LEAF;
                (child, leaf, leaf, sorted_boxes[leaf as usize])
            } else {
                let node = &binary[child as usize];
                (child, node.first, node.last, node.bounds)
            }
        };
        let prefix = |gap: u32| common_prefix(keys, gap as usize, gap as isize + 1);
        let mut stack: Vec<(u32, i32)> = Vec::new();
        for LinkRun { open, spine } in runs {
            for &gap in &spine {
                let node = binary[gap as usize];
                let (mut left, mut first, _, mut bounds) = subtree(binary, node.child[0]);
                let here = prefix(gap);
                while let Some(&(top, top_prefix)) = stack.last()
                    && top_prefix >= here
                {
                    stack.pop();
                    let closed = &mut binary[top as usize];
                    closed.child[1] = left;
                    closed.last = gap;
                    closed.bounds = closed.bounds.union(&bounds);
                    (left, first, bounds) = (top, closed.first, closed.bounds);
                }
                // A node the run closed has its right side's box too.
                let bounds = if node.last != 0 {
                    bounds.union(&subtree(binary, node.child[1]).3)
                } else {
                    bounds
                };
                let node = &mut binary[gap as usize];
                node.child[0] = left;
                node.first = first;
                node.bounds = bounds;
            }
            stack.extend(open);
        }
        let (mut right, _, mut last, mut bounds) = subtree(binary, LEAF | (n - 1) as u32);
        while let Some((top, _)) = stack.pop() {
            let closed = &mut binary[top as usize];
            closed.child[1] = right;
            closed.last = last;
            closed.bounds = closed.bounds.union(&bounds);
            (right, last, bounds) = (top, closed.last, closed.bounds);
            self.root = Some(top);
        }
    }
}

/// The length of the common prefix of the keys at sorted positions `i` and `j` (the code,
/// then the body index), or -1 where `j` is outside the keys.
fn common_prefix(keys: &[(u64, u32)], i: usize, j: isize) -> i32 {
    if j < 0 || j as usize >= keys.len() {
        return -1;
    }
    let (a, b) = (keys[i], keys[j as usize]);
    if a.0 == b.0 {
        // The top bit of a 64-bit code is always 0: 63 bits of code, then the index.
        63 + (a.1 ^ b.1).leading_zeros() as i32
    } else {
        (a.0 ^ b.0).leading_zeros() as i32 - 1
    }
}
