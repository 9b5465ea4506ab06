//! The tree's types: boxes ([`Aabb`]), the binary tree's nodes ([`Binary`]), the queried
//! tree's four-wide nodes with their four-lane box tests ([`Node`], [`Limits`]), and the
//! broad phase's memory ([`Bvh`]) with what it holds.

use crate::groups::CollisionGroups;
use crate::layout::LEAF;

/// An axis-aligned box.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct Aabb {
    pub(crate) lo: [f32; 3],
    pub(crate) hi: [f32; 3],
}

impl Aabb {
    pub(super) const EMPTY: Self = Self {
        lo: [f32::INFINITY; 3],
        hi: [f32::NEG_INFINITY; 3],
    };

    pub(super) fn union(&self, other: &Self) -> Self {
        Self {
            lo: std::array::from_fn(|k| self.lo[k].min(other.lo[k])),
            hi: std::array::from_fn(|k| self.hi[k].max(other.hi[k])),
        }
    }

    /// Whether the boxes meet (touching counts), without branches: six compares and-ed.
    #[inline(always)]
    pub(super) fn overlaps(&self, other: &Self) -> bool {
        (self.lo[0] <= other.hi[0])
            & (other.lo[0] <= self.hi[0])
            & (self.lo[1] <= other.hi[1])
            & (other.lo[1] <= self.hi[1])
            & (self.lo[2] <= other.hi[2])
            & (other.lo[2] <= self.hi[2])
    }

    /// The sum of its sides: the size by which the widest child is unfolded first.
    pub(super) fn extent(&self) -> f32 {
        (0..3).map(|k| self.hi[k] - self.lo[k]).sum()
    }

    #[inline(always)]
    pub(super) fn shifted(&self, shift: [f32; 3]) -> Self {
        Self {
            lo: std::array::from_fn(|k| self.lo[k] + shift[k]),
            hi: std::array::from_fn(|k| self.hi[k] + shift[k]),
        }
    }
}

/// A node of the binary tree (Karras's hierarchy), named by its split: node `i` has the
/// sorted leaves up to `i` on its left and from `i + 1` on its right.
#[derive(Copy, Clone, Debug)]
pub(super) struct Binary {
    /// A child: a node's split, or `LEAF` with a sorted leaf's position.
    pub(super) child: [u32; 2],
    /// The first and the last sorted leaf under the node.
    pub(super) first: u32,
    pub(super) last: u32,
    pub(super) bounds: Aabb,
}

/// A node of the queried tree: up to four children (the binary tree folded, the widest
/// child first), their boxes laid out so that one node's four box tests are four-lane compares,
/// and the last sorted leaf under each. 128 bytes, two cache lines.
#[repr(C, align(64))]
#[derive(Copy, Clone, Debug)]
pub(super) struct Node {
    /// Per child (lane): `lo` on each axis, then `-hi` on each axis. A child's box meets a
    /// query box when each of its six is at most the query's `hi`, then `-lo`: every test is
    /// one compare in one direction. An empty slot holds `+∞`, which meets nothing.
    pub(super) bounds: [[f32; 4]; 6],
    /// Per child, a node's index, or `LEAF` with the body's index (not its position: the
    /// query reports it without looking it up).
    pub(super) child: [u32; 4],
    /// Per child, the last sorted leaf under it; 0 for an empty slot, which no query
    /// wants (a query wants leaves after its own).
    pub(super) last: [u32; 4],
}

impl Node {
    pub(super) const EMPTY: Self = Self {
        bounds: [[f32::INFINITY; 4]; 6],
        child: [0; 4],
        last: [0; 4],
    };

    pub(super) fn set(&mut self, lane: usize, child: u32, last: u32, bounds: &Aabb) {
        for k in 0..3 {
            self.bounds[k][lane] = bounds.lo[k];
            self.bounds[3 + k][lane] = -bounds.hi[k];
        }
        self.child[lane] = child;
        self.last[lane] = last;
    }

    /// The lanes whose child meets the query (its `hi`, then `-lo`, per axis) and holds a
    /// leaf after `position`, as bits.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(super) fn hits(&self, limits: &Limits, position: u32) -> u32 {
        use std::arch::x86_64::{
            _mm_and_ps, _mm_castsi128_ps, _mm_cmpgt_epi32, _mm_cmple_ps, _mm_load_ps,
            _mm_load_si128, _mm_movemask_ps, _mm_set1_epi32,
        };
        // SAFETY: SSE2 is in every x86-64 CPU; the loads read the node's own 16-byte
        // aligned arrays (the node is aligned to 64, its arrays lie at multiples of 16).
        unsafe {
            let mut meets = _mm_cmple_ps(_mm_load_ps(self.bounds[0].as_ptr()), limits.0[0]);
            for k in 1..6 {
                let bound = _mm_load_ps(self.bounds[k].as_ptr());
                meets = _mm_and_ps(meets, _mm_cmple_ps(bound, limits.0[k]));
            }
            // Positions and `last` are below 2³¹ (`MAX_BODIES`): a signed compare.
            let last = _mm_load_si128(self.last.as_ptr().cast());
            let after = _mm_cmpgt_epi32(last, _mm_set1_epi32(position as i32));
            _mm_movemask_ps(_mm_and_ps(meets, _mm_castsi128_ps(after))) as u32
        }
    }

    /// The lanes whose child is a leaf, as bits (an empty slot's child, 0, is not).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(super) fn leaves(&self) -> u32 {
        use std::arch::x86_64::{_mm_castsi128_ps, _mm_load_si128, _mm_movemask_ps};
        // SAFETY: SSE2 is in every x86-64 CPU; the load reads the node's own 16-byte aligned
        // array. `LEAF` is the top bit, which the move mask takes.
        const _: () = assert!(LEAF == 1 << 31);
        unsafe {
            _mm_movemask_ps(_mm_castsi128_ps(_mm_load_si128(self.child.as_ptr().cast()))) as u32
        }
    }

    /// As the x86-64 `leaves`, one lane at a time.
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    pub(super) fn leaves(&self) -> u32 {
        (0..4).fold(0, |bits, lane| {
            bits | (u32::from(self.child[lane] & LEAF != 0) << lane)
        })
    }

    /// As the x86-64 `hits`, one lane at a time.
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    pub(super) fn hits(&self, limits: &Limits, position: u32) -> u32 {
        (0..4).fold(0, |bits, lane| {
            let meets = (0..6).all(|k| self.bounds[k][lane] <= limits.0[k]);
            bits | (u32::from(meets & (self.last[lane] > position)) << lane)
        })
    }
}

/// A query box as [`Node::hits`] takes it: its `hi`, then `-lo`, per axis, in every lane.
#[cfg(target_arch = "x86_64")]
pub(super) struct Limits(pub(super) [std::arch::x86_64::__m128; 6]);

/// A query box as [`Node::hits`] takes it: its `hi`, then `-lo`, per axis.
#[cfg(not(target_arch = "x86_64"))]
pub(super) struct Limits(pub(super) [f32; 6]);

impl Limits {
    #[inline(always)]
    pub(super) fn new(query: &Aabb) -> Self {
        let limits = [
            query.hi[0],
            query.hi[1],
            query.hi[2],
            -query.lo[0],
            -query.lo[1],
            -query.lo[2],
        ];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE, which the broadcast needs, is in every x86-64 CPU.
        let limits = limits.map(|limit| unsafe { std::arch::x86_64::_mm_set1_ps(limit) });
        Self(limits)
    }
}

/// Deepest possible binary tree: Karras's hierarchy splits on one bit of the 95-bit key (63
/// of code, 32 of index) per level. The queried tree is no deeper (a fold may take one
/// binary level down one path and three down another).
pub(super) const MAX_DEPTH: usize = 96;

/// The broad phase's memory, kept from step to step.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bvh {
    /// Per body (by index): its swept box, centres wrapped.
    pub(super) boxes: Vec<Aabb>,
    /// The same boxes in sorted order, so that the queries (made in sorted order) and the
    /// refit read them one after another.
    pub(super) sorted_boxes: Vec<Aabb>,
    /// Morton code and body index, sorted.
    pub(super) keys: Vec<(u64, u32)>,
    /// The sort's memory ([`sort_by_code`](super::build::sort_by_code)).
    pub(super) unsorted: Vec<(u64, u32)>,
    pub(super) places: Vec<usize>,
    /// The binary tree's `n - 1` nodes, by split.
    pub(super) binary: Vec<Binary>,
    /// The binary tree's root, where there are two bodies or more.
    pub(super) root: Option<u32>,
    /// The nodes of the queried tree: the top depth first, then each lower subtree (a part
    /// of the fold) depth first; node 0 is the root.
    pub(super) nodes: Vec<Node>,
    /// The fold's subtrees left for parallel parts (binary node, node and lane pointing at
    /// it), and the parts.
    pub(super) deferred: Vec<(u32, u32, u32)>,
    pub(super) parts: Vec<Vec<Node>>,
    /// Per node, per child: the union of the collision groups under it (the OR of their bits:
    /// every membership and every filter of a body below), so that a query skips a subtree
    /// none of whose bodies its members interact with. Empty where every pair interacts.
    pub(super) node_groups: Vec<[u32; 4]>,
    /// The box of every body.
    pub(super) bounds: Option<Aabb>,
    /// Per periodic axis, the period (0 where the axis does not wrap).
    pub(super) period: [f32; 3],
}

impl Bvh {
    /// Sets the bodies' collision groups for the queries (one a body, or none: every pair
    /// interacts): each node's children's unions of them, from the leaves up (a child's
    /// index is above its parent's, the top and each part being depth first).
    pub(crate) fn set_groups(&mut self, groups: &[CollisionGroups]) {
        self.node_groups.clear();
        if groups.is_empty() {
            return;
        }
        self.node_groups.resize(self.nodes.len(), [0; 4]);
        for index in (0..self.nodes.len()).rev() {
            let node = &self.nodes[index];
            let unions: [u32; 4] = std::array::from_fn(|lane| {
                let child = node.child[lane];
                if node.bounds[0][lane] == f32::INFINITY {
                    0
                } else if child & LEAF != 0 {
                    groups[(child & !LEAF) as usize].bits()
                } else {
                    let below = &self.node_groups[child as usize];
                    below[0] | below[1] | below[2] | below[3]
                }
            });
            self.node_groups[index] = unions;
        }
    }

    /// The bytes of memory the tree holds.
    pub(crate) fn memory_bytes(&self) -> usize {
        use crate::cpu::memory::bytes;
        bytes(&self.boxes)
            + bytes(&self.sorted_boxes)
            + bytes(&self.keys)
            + bytes(&self.unsorted)
            + bytes(&self.places)
            + bytes(&self.binary)
            + bytes(&self.nodes)
            + bytes(&self.deferred)
            + bytes(&self.node_groups)
            + self.parts.iter().map(bytes).sum::<usize>()
    }

    /// The number of bodies.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }
}
