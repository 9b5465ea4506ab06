//! The CPU broad phase: a linear BVH (Karras 2012, "Maximizing parallelism in the
//! construction of BVHs, octrees, and k-d trees") over the bodies' swept boxes, queried once
//! per body for the candidate pairs of the step.
//!
//! 1. **Swept boxes.** Each body's box holds its sphere at the start and at the end of the
//!    step, and so the whole swept volume (the box is convex). It is widened by a margin
//!    ([`margin`]) so that every pair the f32 sweep can call a hit is a candidate.
//! 2. **Morton codes.** The boxes' centres, quantised to 21 bits per axis over their bounds,
//!    interleaved into a 63-bit code; sorted with the body index as the tie-break, so that
//!    equal codes (bodies in one point, say) still give distinct, ordered keys.
//! 3. **Hierarchy.** Karras's construction: internal node `i` of the `n - 1` finds, from the
//!    common prefixes of its neighbours' keys alone, the range of sorted leaves it covers and
//!    where that range splits. Every node is independent of the others (a parallel loop).
//!    Each node then stores its two children's boxes (one cache line tested per visit).
//! 4. **Queries.** Each body descends the tree with its box. A child whose last sorted leaf
//!    comes before the body's own is skipped, so each pair is found from the body that sorts
//!    first only, and the query only visits the part of the tree after it.
//!
//! Why a BVH: its size and query cost do not depend on the bodies' sizes (radii 100× apart
//! share one tree, where a uniform grid needs one cell size), and it adapts to clusters
//! (the codes are quantised over the boxes' own bounds). Its worst cases: bodies that all
//! overlap (every pair is an answer, so the work is the output), and a tight cluster inside a
//! scene some 2²¹ times larger, whose bodies then share one code and are split by index, not
//! by position (the queries stay correct but visit more of the cluster's nodes).
//!
//! In a periodic box the centres are wrapped into `[0, L)` before the boxes are made, and
//! each query is repeated with its box shifted by one period along each axis where the
//! shifted box still meets the tree's bounds. Only one image of a partner can be in reach
//! ([`crate::PeriodicBox`]), but widened boxes at the limit of the reach rule, or bodies far
//! outside the box (whose margins grow with their coordinates), may meet through several
//! images: such a pair is found once per image, and the caller drops the duplicates.

use glam::Vec3;
use rayon::prelude::*;

use super::sweep::largest_component;
use crate::layout::{BodyRecord, FLAG_PERIODIC, LEAF, MORTON_BITS, SweepParams};

/// An axis-aligned box.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct Aabb {
    pub(crate) lo: [f32; 3],
    pub(crate) hi: [f32; 3],
}

impl Aabb {
    const EMPTY: Self = Self {
        lo: [f32::INFINITY; 3],
        hi: [f32::NEG_INFINITY; 3],
    };

    fn union(&self, other: &Self) -> Self {
        Self {
            lo: std::array::from_fn(|k| self.lo[k].min(other.lo[k])),
            hi: std::array::from_fn(|k| self.hi[k].max(other.hi[k])),
        }
    }

    /// Whether the boxes meet (touching counts), without branches: six compares and-ed.
    #[inline(always)]
    fn overlaps(&self, other: &Self) -> bool {
        (self.lo[0] <= other.hi[0])
            & (other.lo[0] <= self.hi[0])
            & (self.lo[1] <= other.hi[1])
            & (other.lo[1] <= self.hi[1])
            & (self.lo[2] <= other.hi[2])
            & (other.lo[2] <= self.hi[2])
    }

    #[inline(always)]
    fn shifted(&self, shift: [f32; 3]) -> Self {
        Self {
            lo: std::array::from_fn(|k| self.lo[k] + shift[k]),
            hi: std::array::from_fn(|k| self.hi[k] + shift[k]),
        }
    }
}

/// The widening of a body's swept box: `2⁻¹⁶` (128 ε) times the body's scale (its largest
/// centre and displacement components, its radius and the largest period).
///
/// The f32 sweep reports a hit only where the exact distance of the centres comes within a few
/// ε of the pair's scale of the radius sum (its backward error, [`crate::parity`], is below
/// 8 ε of the squared scale, and the distance's own error is a few ε of the scale: the
/// relative position and the cross product are each formed with one rounding a
/// component). The pair's scale is at most the sum of its bodies' scales, so boxes widened by
/// 128 ε of their own body's scale hold every pair the sweep can call a hit, with a margin
/// of more than ten to one. The widening is a relative 2⁻¹⁶ of the coordinates: it adds no
/// candidates in practice.
fn margin(body: &BodyRecord, largest_period: f32) -> f32 {
    let largest = |v: [f32; 3]| largest_component(Vec3::from_array(v));
    let scale = largest(body.center) + largest(body.displacement) + body.radius + largest_period;
    scale * (1.0 / 65536.0)
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

// A child reference: an internal node's index, or `LEAF` with a sorted leaf's position.

/// An internal node: its two children, their boxes and the last sorted leaf under each. 64
/// bytes, aligned to a cache line: one line read per node visited.
#[repr(C, align(64))]
#[derive(Copy, Clone, Debug)]
struct Node {
    boxes: [Aabb; 2],
    child: [u32; 2],
    last: [u32; 2],
}

/// Deepest possible tree: Karras's hierarchy splits on one bit of the 95-bit key (63 of code,
/// 32 of index) per level.
const MAX_DEPTH: usize = 96;

/// The broad phase's memory, kept from step to step.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bvh {
    /// Per body (by index): its swept box, centres wrapped.
    boxes: Vec<Aabb>,
    /// The same boxes in sorted order, so that the queries (made in sorted order) and the
    /// refit read them one after another.
    sorted_boxes: Vec<Aabb>,
    /// Morton code and body index, sorted.
    keys: Vec<(u64, u32)>,
    /// The `n - 1` internal nodes; node 0 is the root.
    nodes: Vec<Node>,
    /// The box of every body.
    bounds: Option<Aabb>,
    /// Per periodic axis, the period (0 where the axis does not wrap).
    period: [f32; 3],
}

impl Bvh {
    /// Builds the tree over `bodies`' swept boxes, reusing memory.
    pub(crate) fn build(&mut self, bodies: &[BodyRecord], params: &SweepParams) {
        self.period = if params.flags & FLAG_PERIODIC != 0 {
            params.period
        } else {
            [0.0; 3]
        };
        let period = self.period;
        let largest_period = period.iter().fold(0.0f32, |m, &p| m.max(p));
        bodies
            .par_iter()
            .map(|body| {
                let center: [f32; 3] = std::array::from_fn(|k| {
                    let c = body.center[k];
                    if period[k] > 0.0 {
                        // In f64, where the remainder is exact: within [0, L], up to the
                        // final rounding.
                        f64::from(c).rem_euclid(f64::from(period[k])) as f32
                    } else {
                        c
                    }
                });
                let reach = body.radius + margin(body, largest_period);
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
        self.keys.par_sort_unstable();
        let boxes = &self.boxes;
        self.keys
            .par_iter()
            .map(|&(_, body)| boxes[body as usize])
            .collect_into_vec(&mut self.sorted_boxes);
        let keys = &self.keys;
        (0..keys.len().saturating_sub(1))
            .into_par_iter()
            .map(|i| internal_node(keys, i))
            .collect_into_vec(&mut self.nodes);
        if !self.nodes.is_empty() {
            self.refit(0);
        }
    }

    /// The boxes of node `index`'s children, from its subtree up; the node's own box.
    fn refit(&mut self, index: usize) -> Aabb {
        let node = self.nodes[index];
        let boxes = node.child.map(|child| {
            if child & LEAF != 0 {
                self.sorted_boxes[(child & !LEAF) as usize]
            } else {
                self.refit(child as usize)
            }
        });
        self.nodes[index].boxes = boxes;
        boxes[0].union(&boxes[1])
    }

    /// The bytes of memory the tree holds.
    pub(crate) fn memory_bytes(&self) -> usize {
        use super::contacts::bytes;
        bytes(&self.boxes) + bytes(&self.sorted_boxes) + bytes(&self.keys) + bytes(&self.nodes)
    }

    /// The number of bodies.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Calls `pair` with `[a, b]`, `a < b`, for every pair of bodies whose swept boxes meet
    /// (in a periodic box, through any image) and where the body at sorted position
    /// `position` is one of the two and the other sorts after it. Calling it for every
    /// position finds every such pair, once per image through which the boxes meet (once
    /// without a periodic box).
    pub(crate) fn candidates_of(&self, position: usize, mut pair: impl FnMut([u32; 2])) {
        let (Some(bounds), Some(_root)) = (self.bounds, self.nodes.first()) else {
            return;
        };
        let body = self.keys[position].1;
        let own = self.sorted_boxes[position];
        let wraps = self.period.map(|p| p > 0.0);
        for image in images(wraps) {
            let query = own.shifted(std::array::from_fn(|k| image[k] * self.period[k]));
            if !query.overlaps(&bounds) {
                continue;
            }
            self.descend(position as u32, &query, |other| {
                pair(if body < other {
                    [body, other]
                } else {
                    [other, body]
                });
            });
        }
    }

    /// Calls `found` with the body of every sorted leaf after `position` whose box meets
    /// `query`.
    fn descend(&self, position: u32, query: &Aabb, mut found: impl FnMut(u32)) {
        let mut stack = [0u32; MAX_DEPTH + 1];
        let mut depth = 1;
        while depth > 0 {
            depth -= 1;
            let node = &self.nodes[stack[depth] as usize];
            for c in 0..2 {
                if node.last[c] <= position || !node.boxes[c].overlaps(query) {
                    continue;
                }
                let child = node.child[c];
                if child & LEAF != 0 {
                    found(self.keys[(child & !LEAF) as usize].1);
                } else {
                    prefetch(&self.nodes[child as usize]);
                    stack[depth] = child;
                    depth += 1;
                }
            }
        }
    }
}

/// Asks the cache for `node`, about to be pushed: a pushed node is visited only after its
/// sibling's subtree, and the walk is otherwise one dependent load after another. (At 10⁶
/// bodies the queries ran about 9% faster with it, medians of six alternating runs.)
#[inline(always)]
fn prefetch(node: &Node) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints and cannot fault; SSE, which it needs, is in every
    // x86-64 CPU.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(node).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = node;
}

/// The period shifts of a query, the unshifted one first: every combination of -1, 0 and 1
/// on the axes that wrap, 0 on the others.
fn images(wraps: [bool; 3]) -> impl Iterator<Item = [f32; 3]> {
    let steps = |wraps: bool| {
        if wraps {
            &[0.0, -1.0, 1.0][..]
        } else {
            &[0.0][..]
        }
    };
    steps(wraps[0]).iter().flat_map(move |&x| {
        steps(wraps[1])
            .iter()
            .flat_map(move |&y| steps(wraps[2]).iter().map(move |&z| [x, y, z]))
    })
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

/// Karras's internal node `i`: the range of sorted leaves it covers, found by a doubling
/// search and a binary search on common prefixes, and where it splits.
fn internal_node(keys: &[(u64, u32)], i: usize) -> Node {
    let delta = |j: isize| common_prefix(keys, i, j);
    let at = i as isize;
    // The direction of the range: towards the neighbour sharing the longer prefix.
    let direction: isize = if delta(at + 1) > delta(at - 1) { 1 } else { -1 };
    let prefix_min = delta(at - direction);
    let mut length_max: isize = 2;
    while delta(at + length_max * direction) > prefix_min {
        length_max *= 2;
    }
    let mut length = 0;
    let mut step = length_max / 2;
    while step >= 1 {
        if delta(at + (length + step) * direction) > prefix_min {
            length += step;
        }
        step /= 2;
    }
    let other_end = at + length * direction;
    let prefix_node = delta(other_end);
    // The split: the last leaf of the range that shares more than the node's prefix with i.
    let mut split = 0;
    let mut divisor = 2;
    loop {
        let step = (length + divisor - 1) / divisor;
        if delta(at + (split + step) * direction) > prefix_node {
            split += step;
        }
        if step <= 1 {
            break;
        }
        divisor *= 2;
    }
    let gamma = at + split * direction + direction.min(0);
    let (first, last) = (at.min(other_end), at.max(other_end));
    let left = if first == gamma {
        LEAF | gamma as u32
    } else {
        gamma as u32
    };
    let right = if last == gamma + 1 {
        LEAF | (gamma + 1) as u32
    } else {
        (gamma + 1) as u32
    };
    Node {
        boxes: [Aabb::EMPTY; 2],
        child: [left, right],
        last: [gamma as u32, last as u32],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every leaf appears exactly once under the root, and each node's `last` is the last
    /// leaf of its child's range, for keys with many duplicate codes.
    #[test]
    fn karras_tree_covers_every_leaf_once() {
        for n in [2usize, 3, 5, 17, 100, 1000] {
            let mut keys: Vec<(u64, u32)> = (0..n as u32)
                .map(|i| ((u64::from(i) * 7919 % 13) << 40, i))
                .collect();
            keys.sort_unstable();
            let nodes: Vec<Node> = (0..n - 1).map(|i| internal_node(&keys, i)).collect();
            let mut seen = vec![0u32; n];
            // Returns the (first, last) leaf range of the subtree.
            fn walk(nodes: &[Node], child: u32, seen: &mut [u32]) -> (u32, u32) {
                if child & LEAF != 0 {
                    seen[(child & !LEAF) as usize] += 1;
                    return (child & !LEAF, child & !LEAF);
                }
                let node = &nodes[child as usize];
                let (first, left_last) = walk(nodes, node.child[0], seen);
                let (right_first, last) = walk(nodes, node.child[1], seen);
                assert_eq!(left_last + 1, right_first);
                assert_eq!(node.last, [left_last, last]);
                (first, last)
            }
            assert_eq!(walk(&nodes, 0, &mut seen), (0, n as u32 - 1));
            assert!(seen.iter().all(|&count| count == 1), "n = {n}");
        }
    }
}
