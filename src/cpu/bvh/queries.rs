//! The tree's queries ([`Bvh::candidates_from`]): sixteen neighbouring sorted bodies
//! descend together ([`Packet`]), once per image in a periodic box, and append their
//! candidate pairs.

use super::tree::{Aabb, Bvh, Limits, MAX_DEPTH, Node};
use crate::cpu::Simd;
use crate::groups::CollisionGroups;
use crate::layout::LEAF;

/// Consecutive sorted leaves, up to [`PACKET`] of them, that query the tree together: the
/// nodes are tested against the union of their boxes, and each leaf that meets it against
/// every member's box at once. Neighbours in Morton order lie close together: on the
/// uniform scene the union of eight visits 46 nodes at 10⁴ bodies and 58 at 10⁶ (5.7 and
/// 7.2 a body), where one body's box visits 12 and 16, and four 28 and 36. Eight took
/// 8–12% less time than four in the step's queries and sweep at 10⁶ bodies on every
/// scene. Once the descent wrote a leaf's pairs for every member rather than branching on
/// each, sixteen took 0–5% less time than eight at 10⁴ and 10⁵ bodies on every scene, and
/// thirty-two 8–20% more.
#[repr(C, align(16))]
pub(super) struct Packet {
    /// Per member (lane): its box's `hi`, then `-lo`, per axis, as [`Limits`] holds one box;
    /// `-∞` in a lane without a member, which meets nothing.
    members: [[f32; PACKET]; 6],
    /// The union of the members' boxes.
    union: Aabb,
    /// The first member's sorted position; member `k` is at `least + k`.
    least: u32,
    /// The union of the members' collision groups (every bit where the tree has none).
    groups: CollisionGroups,
}

/// Sorted leaves per [`Packet`] (a multiple of four, the SSE lanes).
pub(crate) const PACKET: usize = 16;
const _: () = assert!(PACKET.is_multiple_of(4));

impl Packet {
    /// The packet of the sorted leaves from `first` (at most [`PACKET`] of `boxes`), each box
    /// shifted by `shift`.
    pub(super) fn new(first: usize, boxes: &[Aabb], shift: [f32; 3]) -> Self {
        debug_assert!((1..=PACKET).contains(&boxes.len()));
        let mut packet = Self {
            members: [[f32::NEG_INFINITY; PACKET]; 6],
            union: Aabb::EMPTY,
            least: first as u32,
            groups: CollisionGroups::ALL,
        };
        for (lane, own) in boxes.iter().enumerate() {
            let own = own.shifted(shift);
            for k in 0..3 {
                packet.members[k][lane] = own.hi[k];
                packet.members[3 + k][lane] = -own.lo[k];
            }
            packet.union = packet.union.union(&own);
        }
        packet
    }

    /// The members that sort before the sorted leaf at `position`, as bits: the first
    /// `position - least` of them (members' positions are consecutive). An integer mask, so
    /// that no lane needs an integer compare (AVX has none of 256 bits).
    #[inline(always)]
    fn before(&self, position: u32) -> u32 {
        let before = position.saturating_sub(self.least) as usize;
        if before >= PACKET {
            u32::MAX
        } else {
            (1 << before) - 1
        }
    }

    /// The members whose box meets the box of `node`'s child `lane`, a sorted leaf, and that
    /// sort before it (at `position`), as bits.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn meets(&self, node: &Node, lane: usize, position: u32) -> u32 {
        use std::arch::x86_64::{
            _mm_and_ps, _mm_cmple_ps, _mm_load_ps, _mm_movemask_ps, _mm_set1_ps,
        };
        // SAFETY: SSE is in every x86-64 CPU; the loads read the packet's own 16-byte
        // aligned arrays (the packet is aligned to 16, its arrays lie at multiples of 16).
        unsafe {
            let bounds: [_; 6] = std::array::from_fn(|k| _mm_set1_ps(node.bounds[k][lane]));
            let mut bits = 0;
            // Four members at a time, one SSE lane each.
            for quarter in 0..PACKET / 4 {
                let lanes = 4 * quarter..;
                let meets = (1..6).fold(
                    _mm_cmple_ps(
                        bounds[0],
                        _mm_load_ps(self.members[0][lanes.clone()].as_ptr()),
                    ),
                    |meets, k| {
                        let member = _mm_load_ps(self.members[k][lanes.clone()].as_ptr());
                        _mm_and_ps(meets, _mm_cmple_ps(bounds[k], member))
                    },
                );
                bits |= (_mm_movemask_ps(meets) as u32) << (4 * quarter);
            }
            bits & self.before(position)
        }
    }

    /// As `meets`, with AVX: eight members a compare.
    ///
    /// # Safety
    /// The CPU must support AVX (it is inlined into a function that enables it).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn meets_avx(&self, node: &Node, lane: usize, position: u32) -> u32 {
        use std::arch::x86_64::{
            _CMP_LE_OQ, _mm256_and_ps, _mm256_cmp_ps, _mm256_loadu_ps, _mm256_movemask_ps,
            _mm256_set1_ps,
        };
        const _: () = assert!(PACKET == 16);
        // SAFETY: the caller guarantees AVX; the loads read the packet's own arrays, eight
        // floats from lanes 0 and 8 of sixteen.
        unsafe {
            let bounds: [_; 6] = std::array::from_fn(|k| _mm256_set1_ps(node.bounds[k][lane]));
            let mut bits = 0;
            for half in 0..2 {
                let meets = (1..6).fold(
                    _mm256_cmp_ps::<_CMP_LE_OQ>(
                        bounds[0],
                        _mm256_loadu_ps(self.members[0][8 * half..].as_ptr()),
                    ),
                    |meets, k| {
                        let member = _mm256_loadu_ps(self.members[k][8 * half..].as_ptr());
                        _mm256_and_ps(meets, _mm256_cmp_ps::<_CMP_LE_OQ>(bounds[k], member))
                    },
                );
                bits |= (_mm256_movemask_ps(meets) as u32) << (8 * half);
            }
            bits & self.before(position)
        }
    }

    /// As the x86-64 `meets`, one member at a time.
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    fn meets(&self, node: &Node, lane: usize, position: u32) -> u32 {
        let meets = (0..PACKET).fold(0, |bits, member| {
            let meets = (0..6).all(|k| node.bounds[k][lane] <= self.members[k][member]);
            bits | (u32::from(meets) << member)
        });
        meets & self.before(position)
    }
}

impl Bvh {
    /// Appends to `pairs` `[a, b]`, `a < b`, for every pair of bodies whose swept boxes meet
    /// (in a periodic box, through any image) where one of the two is at a sorted position
    /// from `first` up to `first + PACKET` (within the bodies) and the other sorts after
    /// it. Calling it for every multiple of [`PACKET`] finds every such pair, once per image
    /// through which the boxes meet (once without a periodic box).
    ///
    /// Every [`REPORT_PAIRS`] or so pairs appended, and once at the end, `go_on` is told how
    /// many since it was last told; where it answers `false` the query stops at once, its
    /// pairs incomplete, and so does this call, returning `false`.
    ///
    /// Only pairs whose collision groups interact are appended, where `groups` holds one a
    /// body (empty: every pair): a leaf's members that do not interact with it are dropped
    /// where it is reached, before the pair is written.
    ///
    /// `stack` is the descent's memory, kept by the caller.
    pub(crate) fn candidates_from(
        &self,
        first: usize,
        groups: &[CollisionGroups],
        stack: &mut Vec<u32>,
        pairs: &mut Vec<[u32; 2]>,
        go_on: &impl Fn(usize) -> bool,
    ) -> bool {
        let (Some(bounds), Some(_root)) = (self.bounds, self.nodes.first()) else {
            return true;
        };
        let end = (first + PACKET).min(self.keys.len());
        let mut bodies = [0; PACKET];
        for (body, key) in bodies.iter_mut().zip(&self.keys[first..end]) {
            *body = key.1;
        }
        #[cfg(target_arch = "x86_64")]
        let avx = Simd::active() >= Simd::Avx;
        let wraps = self.period.map(|p| p > 0.0);
        let mut member_groups = [CollisionGroups::NONE; PACKET];
        let mut union = CollisionGroups::ALL;
        if !groups.is_empty() {
            for (own, &body) in member_groups.iter_mut().zip(&bodies[..end - first]) {
                *own = groups[body as usize];
            }
            union = CollisionGroups::from_bits(
                member_groups
                    .iter()
                    .fold(0, |bits, member| bits | member.bits()),
            );
        }
        let mut found = PairsOf {
            bodies,
            groups,
            member_groups,
            told: pairs.len(),
            pairs,
            go_on,
            stopped: false,
        };
        for image in images(wraps) {
            let mut packet = self.packet(first, std::array::from_fn(|k| image[k] * self.period[k]));
            packet.groups = union;
            if !packet.union.overlaps(&bounds) {
                continue;
            }
            #[cfg(target_arch = "x86_64")]
            if avx {
                // SAFETY: `Simd::active` found AVX.
                unsafe { self.descend_avx(&packet, stack, &mut found) };
                if found.stopped {
                    return false;
                }
                continue;
            }
            self.descend::<false>(&packet, stack, &mut found);
            if found.stopped {
                return false;
            }
        }
        found.tell()
    }

    /// [`descend`](Self::descend) compiled with AVX, its leaves tested against eight members
    /// a compare ([`Packet::meets_avx`]).
    ///
    /// # Safety
    /// The CPU must support AVX.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn descend_avx(
        &self,
        packet: &Packet,
        stack: &mut Vec<u32>,
        found: &mut impl Leaves,
    ) {
        self.descend::<true>(packet, stack, found);
    }

    /// The packet of the sorted leaves from `first` (up to [`PACKET`] of them, within the
    /// bodies), their boxes shifted by `shift`.
    pub(super) fn packet(&self, first: usize, shift: [f32; 3]) -> Packet {
        let end = (first + PACKET).min(self.keys.len());
        Packet::new(first, &self.sorted_boxes[first..end], shift)
    }

    /// Calls `found` with the members (their lanes, as bits; possibly none) that meet a
    /// sorted leaf after them, and the leaf's body, for every leaf whose box meets the union
    /// of `packet`'s. `stack` is its memory: each node visited leaves at most three of its
    /// children there, so it holds at most `3 · MAX_DEPTH + 1`, and the four places from
    /// the top are written every visit (allocated once).
    ///
    /// The descent turns few of its choices into branches: a node's children that are nodes
    /// go onto the stack by four stores, the top moving past those that meet the query, and
    /// its leaves are tested only where they meet it.
    #[inline(always)]
    pub(super) fn descend<const AVX: bool>(
        &self,
        packet: &Packet,
        stack: &mut Vec<u32>,
        found: &mut impl Leaves,
    ) {
        let limits = Limits::new(&packet.union);
        // Nodes with a leaf after the first member's.
        let first = packet.least;
        let groups = (!self.node_groups.is_empty()).then_some(packet.groups);
        if stack.len() < 3 * MAX_DEPTH + 4 {
            stack.resize(3 * MAX_DEPTH + 4, 0);
        }
        stack[0] = 0;
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let index = stack[top];
            let node = &self.nodes[index as usize];
            let mut hits = node.hits(&limits, first);
            if let Some(own) = groups {
                hits &= self.interacting_children(index, own);
            }
            let leaves = node.leaves();
            let inner = hits & !leaves;
            for lane in 0..4 {
                let child = node.child[lane];
                let taken = (inner >> lane) & 1;
                stack[top] = child;
                // The node itself, in cache, where the child is not taken: no branch.
                prefetch(&self.nodes[if taken != 0 { child } else { index } as usize]);
                top += taken as usize;
            }
            let mut leaf_hits = hits & leaves;
            while leaf_hits != 0 {
                let lane = leaf_hits.trailing_zeros() as usize;
                leaf_hits &= leaf_hits - 1;
                // A leaf's last sorted leaf is its own position.
                let members = if AVX {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: `AVX` is set only by `descend_avx`, which needs AVX.
                    unsafe {
                        packet.meets_avx(node, lane, node.last[lane])
                    }
                    #[cfg(not(target_arch = "x86_64"))]
                    unreachable!("AVX is an x86-64 path")
                } else {
                    packet.meets(node, lane, node.last[lane])
                };
                if members != 0 && !found.found(members, node.child[lane] & !LEAF) {
                    return;
                }
            }
        }
    }
}

impl Bvh {
    /// The children of node `index` under which some body may interact with a body of
    /// groups `own` (a union of groups: see [`Bvh::set_groups`]), as bits.
    #[inline(always)]
    fn interacting_children(&self, index: u32, own: CollisionGroups) -> u32 {
        let unions = &self.node_groups[index as usize];
        (0..4).fold(0, |bits, lane| {
            let below = CollisionGroups::from_bits(unions[lane]);
            bits | u32::from(own.interacts_with(below)) << lane
        })
    }
}

/// What a descent does with each leaf it reaches: the members that meet it (as bits) and
/// its body; `false` stops the descent. A trait rather than a closure, so that the queries'
/// own ([`PairsOf`]) is inlined into the descent, AVX copy included.
pub(super) trait Leaves {
    fn found(&mut self, members: u32, body: u32) -> bool;
}

impl<F: FnMut(u32, u32)> Leaves for F {
    #[inline(always)]
    fn found(&mut self, members: u32, body: u32) -> bool {
        self(members, body);
        true
    }
}

/// Pairs a query appends between two reports to its `go_on` ([`Bvh::candidates_from`]):
/// 128 KB of them, so that a query stops soon after it is told to, and the shared count
/// behind `go_on` sees one update a few thousand pairs.
pub(crate) const REPORT_PAIRS: usize = 1 << 14;

/// The candidate pairs of a packet's members (`bodies`, by lane), appended to `pairs`, and
/// reported to `go_on` every [`REPORT_PAIRS`] or so.
struct PairsOf<'a, F> {
    bodies: [u32; PACKET],
    /// Every body's collision groups (empty: every pair interacts), and the members'.
    groups: &'a [CollisionGroups],
    member_groups: [CollisionGroups; PACKET],
    pairs: &'a mut Vec<[u32; 2]>,
    /// The length of `pairs` when `go_on` was last told.
    told: usize,
    go_on: &'a F,
    /// Whether `go_on` said to stop.
    stopped: bool,
}

impl<F: Fn(usize) -> bool> PairsOf<'_, F> {
    /// Tells `go_on` of the pairs appended since it was last told, and returns its answer.
    fn tell(&mut self) -> bool {
        let appended = self.pairs.len() - self.told;
        self.told = self.pairs.len();
        self.stopped = !(self.go_on)(appended);
        !self.stopped
    }
}

impl<F: Fn(usize) -> bool> Leaves for PairsOf<'_, F> {
    #[inline(always)]
    fn found(&mut self, members: u32, other: u32) -> bool {
        let members = if self.groups.is_empty() {
            members
        } else {
            // The members whose groups interact with the leaf's, as bits: no branch a member.
            let theirs = self.groups[other as usize];
            let interacting = self
                .member_groups
                .iter()
                .enumerate()
                .fold(0, |bits, (member, own)| {
                    bits | u32::from(own.interacts_with(theirs)) << member
                });
            members & interacting
        };
        if members == 0 {
            return true;
        }
        // Every member's pair is written and the count moves on past the members that
        // meet: a store a member, where a branch a member would be a guess.
        self.pairs.reserve(PACKET);
        let len = self.pairs.len();
        let spare = &mut self.pairs.spare_capacity_mut()[..PACKET];
        let mut count = 0;
        for (member, &body) in self.bodies.iter().enumerate() {
            spare[count].write([body.min(other), body.max(other)]);
            count += (members >> member) as usize & 1;
        }
        // SAFETY: the first `count` places of the spare capacity were written (each place
        // up to `count` when the count moved past it).
        unsafe { self.pairs.set_len(len + count) };
        self.pairs.len() - self.told < REPORT_PAIRS || self.tell()
    }
}

/// Asks the cache for `node` (both its lines), about to be pushed: a pushed node is visited
/// only after its sibling's subtree, and the walk is otherwise one dependent load after
/// another.
#[inline(always)]
fn prefetch(node: &Node) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints and cannot fault; SSE, which it needs, is in every
    // x86-64 CPU.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let start: *const i8 = std::ptr::from_ref(node).cast();
        _mm_prefetch::<_MM_HINT_T0>(start);
        _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(64));
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
