//! The CPU broad phase: a linear BVH (Karras 2012, "Maximizing parallelism in the
//! construction of BVHs, octrees, and k-d trees") over the bodies' swept boxes, queried by
//! sixteen neighbouring bodies at a time (and once per image in a periodic box) for the
//! candidate pairs of the step.
//!
//! 1. **Swept boxes.** Each body's box holds its sphere at the start and at the end of the
//!    step, and so the whole swept volume (the box is convex). It is widened by a margin
//!    ([`margin`]) so that every pair the f32 sweep can call a hit is a candidate.
//! 2. **Morton codes.** The boxes' centres, quantised to 21 bits per axis over their bounds,
//!    interleaved into a 63-bit code; sorted with the body index as the tie-break, so that
//!    equal codes (bodies in one point, say) still give distinct, ordered keys.
//! 3. **Hierarchy.** Karras's binary tree, built in one pass over the sorted keys, in runs
//!    on all cores ([`Bvh::link`]: the same tree as Karras's per-node construction, which
//!    the GPU runs; a test holds it to that stage's twin,
//!    [`hierarchy`](super::broad_phase::hierarchy)), with each node's box made as the pass
//!    completes it.
//! 4. **Four-wide nodes.** The binary tree is folded into one of four children a node (a
//!    node's child that is a node gives way to its own children, the widest first, until
//!    there are four): each node holds its children's boxes, laid out so that the four box
//!    tests are a few four-lane compares (128 bytes a node), the top of the tree first,
//!    then its lower subtrees one after another, each depth first. A leaf
//!    names its body.
//! 5. **Queries.** Each body's pairs are found from the body that sorts first only: a child
//!    whose last sorted leaf comes before the body's own is skipped, so the query only visits
//!    the part of the tree after it. Sixteen neighbouring sorted bodies descend together
//!    ([`Packet`]): the nodes are tested against the union of their boxes, and each leaf
//!    reached against all sixteen boxes in four four-lane tests. The union visits a few
//!    times the nodes one body's box would, once for sixteen bodies.
//!
//! Why a BVH: its size and query cost do not depend on the bodies' sizes (radii 100× apart
//! share one tree, where a uniform grid needs one cell size), and it adapts to clusters
//! (the codes are quantised over the boxes' own bounds). Its worst cases: bodies that all
//! overlap (every pair is an answer, so the work is the output), and a tight cluster inside a
//! scene some 2²¹ times larger, whose bodies then share one code and are split by index, not
//! by position (the queries stay correct but visit more of the cluster's nodes).
//!
//! The boxes are made in a local frame: each centre less an origin near the bodies
//! (`local_origin` in `src/layout.rs`), so that their corners round at the scene's size,
//! however far it lies from the world's origin. In a periodic box that difference is
//! wrapped into `[0, L)`, and each query is repeated with its box shifted by one period
//! along each axis where the shifted box still meets the tree's bounds. Only one image of a
//! partner can be in reach ([`crate::PeriodicBox`]), but widened boxes at the limit of the
//! reach rule, or bodies far outside the box (whose margins grow with their coordinates),
//! may meet through several images: such a pair is found once per image, and the caller
//! drops the duplicates.

use glam::Vec3;
use std::mem::MaybeUninit;

use crate::par::{self, prelude::*};

use super::sweep::largest_component;
use super::{Simd, scatter_to_places};
use crate::layout::{BodyRecord, FLAG_PERIODIC, LEAF, MORTON_BITS, SweepParams, local_origin};

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

    /// The sum of its sides: the size by which the widest child is unfolded first.
    fn extent(&self) -> f32 {
        (0..3).map(|k| self.hi[k] - self.lo[k]).sum()
    }

    #[inline(always)]
    fn shifted(&self, shift: [f32; 3]) -> Self {
        Self {
            lo: std::array::from_fn(|k| self.lo[k] + shift[k]),
            hi: std::array::from_fn(|k| self.hi[k] + shift[k]),
        }
    }
}

/// The widening of a body's swept box: `2⁻¹⁶ (r + |d| + |c|ₒ) + 2⁻²⁰ |x|`, with `r` the
/// radius, `|d|` the displacement's largest component, `|x|` the largest component of the
/// centre in the broad phase's local frame (`local_origin` in `src/layout.rs`), and `|c|ₒ`
/// that of the centre on the axes that wrap where it lies outside `[0, 2L)`
/// ([`outside_the_box`]: 0 in open space, in the box and within a period beyond it). It
/// grows with the body's own size, motion and place in the frame, not with its distance
/// from the world's origin or with the period.
///
/// Why it is enough: the boxes of every pair that the f32 sweep calls a hit must meet. With
/// u = 2⁻²⁴ (ε = 2u), per axis:
///
/// - *The sweep* takes the difference of the two centres (the periodic shift applied to one
///   of them first, exactly for centres in `[0, 2L)`:
///   [`center_offset`](super::sweep::center_offset)), with one rounding, and calls a hit
///   only where the exact centres come within a few ε of the pair's scale
///   `S = |s| + |v| + R` of the radius sum (its backward error, [`crate::parity`], is below
///   8 ε of the squared scale, and the distance's own error is a few ε of the scale: the
///   relative position and the cross product are each formed with one rounding a
///   component). A hit has `|s| ≤ R + |v|` up to that, so `S` is at most 2√3 times the sum
///   of the two bodies' `r + |d|`: the sweep needs under 30u of that sum. A centre below
///   the box or beyond `2L` makes the shift round too, by a few u of that centre's
///   coordinates, as does the GPU's f32 wrap of it: the `|c|ₒ` term. (A pair nearly half a
///   period apart may take the other image, by u of the period; a hit there needs a body
///   that reaches an eighth of a period, whose `2⁻¹⁶ (r + |d|)` is 32u of the period.)
/// - *The box's corners* are made in f32 in the local frame: the local centre (one rounding
///   of `x`; two in the shader's f32 wrap of a centre just below the box), the end `x + d`
///   and each corner `± reach`, one rounding each: at most 4u of `|x| + |d| + reach`. A
///   query shifted by a period rounds its corners once more, by u of their size; where such
///   a corner decides a meeting it lies at the met box's corner, whose own margin covers u
///   of it.
///
/// The needs add up to some 35u of `r + |d|`, 5u of `|x|` and 8u of `|c|ₒ`, against the
/// margin's 256u, 16u and 256u: three to one at least. The cost is a relative 2⁻¹⁶ of the
/// body's size and motion and 2⁻²⁰ of its local coordinates: nothing measurable where the
/// scene is at most about 10⁴ times its bodies' size (a body of radius 0.5 in a region of
/// 54 is widened by some 10⁻⁵, where the same region at 10⁶ from the origin or in a box of
/// 10⁶ or 10⁷ once widened it by 15 or 150). A scene that spans much more, a body far
/// outside a periodic box, or bodies spread over most of a large one (where the frame
/// cannot be local to all of them) get boxes wider by up to 2⁻²⁰ of the scene's extent.
///
/// It is written as one sum scaled by 2⁻¹⁶ (`|x| / 16` for `2⁻²⁰ |x|`): GPU compilers may
/// reassociate a sum of two products, and the shader's boxes are held to these bit for bit.
pub(crate) fn margin(body: &BodyRecord, center: [f32; 3], outside: f32) -> f32 {
    let largest = |v: [f32; 3]| largest_component(Vec3::from_array(v));
    (body.radius + largest(body.displacement) + outside + largest(center) * (1.0 / 16.0))
        * (1.0 / 65536.0)
}

/// The largest magnitude of `center`'s components on the axes that wrap (`period > 0`)
/// where it lies outside `[0, 2 period)`; 0 in open space and for a centre in the box or
/// within a period beyond it (where the wrap and the sweep's shift by whole periods are
/// exact, so that a body that has just left the box is widened as one inside it). Part of
/// the [`margin`].
pub(crate) fn outside_the_box(center: [f32; 3], period: [f32; 3]) -> f32 {
    (0..3)
        .filter(|&k| period[k] > 0.0 && !(0.0..2.0 * period[k]).contains(&center[k]))
        .fold(0.0, |largest, k| largest.max(center[k].abs()))
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

/// A node of the binary tree (Karras's hierarchy), named by its split: node `i` has the
/// sorted leaves up to `i` on its left and from `i + 1` on its right.
#[derive(Copy, Clone, Debug)]
struct Binary {
    /// A child: a node's split, or `LEAF` with a sorted leaf's position.
    child: [u32; 2],
    /// The first and the last sorted leaf under the node.
    first: u32,
    last: u32,
    bounds: Aabb,
}

/// A node of the queried tree: up to four children (the binary tree folded, the widest
/// child first), their boxes laid out so that one node's four box tests are four-lane compares,
/// and the last sorted leaf under each. 128 bytes, two cache lines.
#[repr(C, align(64))]
#[derive(Copy, Clone, Debug)]
struct Node {
    /// Per child (lane): `lo` on each axis, then `-hi` on each axis. A child's box meets a
    /// query box when each of its six is at most the query's `hi`, then `-lo`: every test is
    /// one compare in one direction. An empty slot holds `+∞`, which meets nothing.
    bounds: [[f32; 4]; 6],
    /// Per child, a node's index, or `LEAF` with the body's index (not its position: the
    /// query reports it without looking it up).
    child: [u32; 4],
    /// Per child, the last sorted leaf under it; 0 for an empty slot, which no query
    /// wants (a query wants leaves after its own).
    last: [u32; 4],
}

impl Node {
    const EMPTY: Self = Self {
        bounds: [[f32::INFINITY; 4]; 6],
        child: [0; 4],
        last: [0; 4],
    };

    fn set(&mut self, lane: usize, child: u32, last: u32, bounds: &Aabb) {
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
    fn hits(&self, limits: &Limits, position: u32) -> u32 {
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
    fn leaves(&self) -> u32 {
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
    fn leaves(&self) -> u32 {
        (0..4).fold(0, |bits, lane| {
            bits | (u32::from(self.child[lane] & LEAF != 0) << lane)
        })
    }

    /// As the x86-64 `hits`, one lane at a time.
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    fn hits(&self, limits: &Limits, position: u32) -> u32 {
        (0..4).fold(0, |bits, lane| {
            let meets = (0..6).all(|k| self.bounds[k][lane] <= limits.0[k]);
            bits | (u32::from(meets & (self.last[lane] > position)) << lane)
        })
    }
}

/// A query box as [`Node::hits`] takes it: its `hi`, then `-lo`, per axis, in every lane.
#[cfg(target_arch = "x86_64")]
struct Limits([std::arch::x86_64::__m128; 6]);

/// A query box as [`Node::hits`] takes it: its `hi`, then `-lo`, per axis.
#[cfg(not(target_arch = "x86_64"))]
struct Limits([f32; 6]);

impl Limits {
    #[inline(always)]
    fn new(query: &Aabb) -> Self {
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
struct Packet {
    /// Per member (lane): its box's `hi`, then `-lo`, per axis, as [`Limits`] holds one box;
    /// `-∞` in a lane without a member, which meets nothing.
    members: [[f32; PACKET]; 6],
    /// The union of the members' boxes.
    union: Aabb,
    /// The first member's sorted position; member `k` is at `least + k`.
    least: u32,
}

/// Sorted leaves per [`Packet`] (a multiple of four, the SSE lanes).
pub(crate) const PACKET: usize = 16;
const _: () = assert!(PACKET.is_multiple_of(4));

impl Packet {
    /// The packet of the sorted leaves from `first` (at most [`PACKET`] of `boxes`), each box
    /// shifted by `shift`.
    fn new(first: usize, boxes: &[Aabb], shift: [f32; 3]) -> Self {
        debug_assert!((1..=PACKET).contains(&boxes.len()));
        let mut packet = Self {
            members: [[f32::NEG_INFINITY; PACKET]; 6],
            union: Aabb::EMPTY,
            least: first as u32,
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

/// The binary tree and the leaves, as the fold reads them.
struct Folding<'a> {
    binary: &'a [Binary],
    sorted_boxes: &'a [Aabb],
    keys: &'a [(u64, u32)],
}

impl Folding<'_> {
    /// Appends the queried tree of the binary subtree at `root` to `out`, depth first, its
    /// nodes naming each other by their place in `out`. Each node takes its binary node's
    /// two children, and while it has fewer than four, the widest of them that is a node
    /// gives way to its own two (on the step bench's scenes 3.1 of the 4 lanes are filled,
    /// 0.47 nodes a body: two leaves under one binary node stay a node of two). A
    /// child subtree with fewer than `grain` leaves is not folded but left in `deferred`,
    /// with the node and lane that will point at it.
    fn fold_into(
        &self,
        root: u32,
        grain: u32,
        out: &mut Vec<Node>,
        deferred: &mut Vec<(u32, u32, u32)>,
    ) {
        let base = out.len();
        let binary = self.binary;
        // Binary nodes still to fold, each with the node and lane that will point at it;
        // last in, first out, so the layout is depth first. Each node leaves at most four.
        let mut pending = [(0u32, u32::MAX, 0u32); 3 * MAX_DEPTH + 4];
        pending[0].0 = root;
        let mut depth = 1;
        while depth > 0 {
            depth -= 1;
            let (node, parent, parent_lane) = pending[depth];
            let index = out.len();
            if parent != u32::MAX {
                out[parent as usize].child[parent_lane as usize] = (index - base) as u32;
            }
            // The node's two children; then, while there are fewer than four, the widest
            // child that is a node gives way to its own two (left to right order kept).
            let mut children = [0u32; 4];
            children[..2].copy_from_slice(&binary[node as usize].child);
            let mut count = 2;
            let extent = |child: u32| binary[child as usize].bounds.extent();
            while count < 4 {
                let Some(widest) = (0..count)
                    .filter(|&lane| children[lane] & LEAF == 0)
                    .max_by(|&a, &b| extent(children[a]).total_cmp(&extent(children[b])))
                else {
                    break;
                };
                let [left, right] = binary[children[widest] as usize].child;
                children.copy_within(widest + 1..count, widest + 2);
                children[widest] = left;
                children[widest + 1] = right;
                count += 1;
            }
            let mut folded = Node::EMPTY;
            let mut inner = [None; 4];
            for (lane, &child) in children[..count].iter().enumerate() {
                if child & LEAF != 0 {
                    // A leaf of the queried tree names its body, not its position.
                    let leaf = child & !LEAF;
                    let body = self.keys[leaf as usize].1;
                    folded.set(lane, LEAF | body, leaf, &self.sorted_boxes[leaf as usize]);
                } else {
                    let node = &binary[child as usize];
                    folded.set(lane, child, node.last, &node.bounds);
                    inner[lane] = Some(child);
                }
            }
            out.push(folded);
            // Pushed in reverse, so that the first inner child is laid out next.
            for (lane, child) in inner.iter().enumerate().rev() {
                let Some(child) = *child else { continue };
                let entry = (child, (index - base) as u32, lane as u32);
                let node = &binary[child as usize];
                if node.last - node.first + 1 < grain {
                    deferred.push(entry);
                } else {
                    pending[depth] = entry;
                    depth += 1;
                }
            }
        }
    }
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
fn sort_by_code(
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

/// Parts of the fold per thread, and the fewest leaves a part is made of.
const FOLD_PARTS_PER_THREAD: usize = 8;
const FOLD_GRAIN_MIN: usize = 4096;

/// Deepest possible binary tree: Karras's hierarchy splits on one bit of the 95-bit key (63
/// of code, 32 of index) per level. The queried tree is no deeper (a fold may take one
/// binary level down one path and three down another).
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
    /// The sort's memory ([`sort_by_code`]).
    unsorted: Vec<(u64, u32)>,
    places: Vec<usize>,
    /// The binary tree's `n - 1` nodes, by split.
    binary: Vec<Binary>,
    /// The binary tree's root, where there are two bodies or more.
    root: Option<u32>,
    /// The nodes of the queried tree: the top depth first, then each lower subtree (a part
    /// of the fold) depth first; node 0 is the root.
    nodes: Vec<Node>,
    /// The fold's subtrees left for parallel parts (binary node, node and lane pointing at
    /// it), and the parts.
    deferred: Vec<(u32, u32, u32)>,
    parts: Vec<Vec<Node>>,
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
    fn link(&mut self) {
        let parts = (self.keys.len() / LINK_PART_LEAVES).clamp(1, par::current_num_threads());
        self.link_in_parts(parts);
    }

    /// [`link`](Self::link) in `parts` runs of gaps, in parallel: each runs the pass from
    /// an empty stack ([`link_run`]), which gets every node right but those it made with the
    /// stack empty (its left spine), whose left subtree may reach into the runs before.
    /// Those are then made again one after another, each taking what it would have taken
    /// off the stack of the runs before it (a few nodes a run), and the runs' stacks are
    /// joined and closed.
    fn link_in_parts(&mut self, parts: usize) {
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

    /// The queried tree from the binary one ([`Folding::fold_into`]).
    /// The top of the tree is folded here; each subtree below it of fewer than a grain of
    /// leaves is folded on its own, in parallel, and placed after the top, in order.
    fn fold(&mut self) {
        let grain = (self.keys.len() / (FOLD_PARTS_PER_THREAD * par::current_num_threads()))
            .max(FOLD_GRAIN_MIN);
        self.fold_in_parts(grain as u32);
    }

    /// [`fold`](Self::fold), with subtrees of fewer than `grain` leaves folded as parts.
    fn fold_in_parts(&mut self, grain: u32) {
        self.nodes.clear();
        let Some(root) = self.root else {
            return;
        };
        let folding = Folding {
            binary: &self.binary,
            sorted_boxes: &self.sorted_boxes,
            keys: &self.keys,
        };
        self.deferred.clear();
        folding.fold_into(root, grain, &mut self.nodes, &mut self.deferred);
        let parts = self.deferred.len();
        self.parts
            .resize_with(parts.max(self.parts.len()), Vec::new);
        self.deferred
            .par_iter()
            .zip(&mut self.parts[..parts])
            .for_each(|(&(root, _, _), part)| {
                part.clear();
                folding.fold_into(root, 0, part, &mut Vec::new());
            });
        // Each part's root takes its place after the top and the parts before it.
        let top = self.nodes.len();
        let mut start = top;
        for (&(_, parent, lane), part) in self.deferred.iter().zip(&self.parts) {
            self.nodes[parent as usize].child[lane as usize] = start as u32;
            start += part.len();
        }
        // The parts are copied into the spare capacity in parallel, unwritten before (filling
        // it first was a serial pass over some 60 MB at a million bodies).
        self.nodes.reserve(start - top);
        super::scatter(
            &self.parts[..parts],
            &Vec::len,
            &|part: &Vec<Node>, into: &mut [MaybeUninit<Node>], offset: usize| {
                // A part's nodes name each other from 0: shift them to their place.
                let shift = (top + offset) as u32;
                for (place, node) in into.iter_mut().zip(part) {
                    let mut node = *node;
                    for lane in 0..4 {
                        if node.child[lane] & LEAF == 0 && node.bounds[0][lane] != f32::INFINITY {
                            node.child[lane] += shift;
                        }
                    }
                    place.write(node);
                }
            },
            &mut self.nodes.spare_capacity_mut()[..start - top],
            0,
        );
        // SAFETY: `scatter` gave each part a span as long as the part, the spans one after
        // another from `top`, and each part wrote every node of its span: the parts' lengths
        // sum to `start - top`, so every place up to `start` is written.
        unsafe { self.nodes.set_len(start) };
    }

    /// The bytes of memory the tree holds.
    pub(crate) fn memory_bytes(&self) -> usize {
        use super::step::bytes;
        bytes(&self.boxes)
            + bytes(&self.sorted_boxes)
            + bytes(&self.keys)
            + bytes(&self.unsorted)
            + bytes(&self.places)
            + bytes(&self.binary)
            + bytes(&self.nodes)
            + bytes(&self.deferred)
            + self.parts.iter().map(bytes).sum::<usize>()
    }

    /// The number of bodies.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

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
    /// `stack` is the descent's memory, kept by the caller.
    pub(crate) fn candidates_from(
        &self,
        first: usize,
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
        let mut found = PairsOf {
            bodies,
            told: pairs.len(),
            pairs,
            go_on,
            stopped: false,
        };
        for image in images(wraps) {
            let packet = self.packet(first, std::array::from_fn(|k| image[k] * self.period[k]));
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
    unsafe fn descend_avx(&self, packet: &Packet, stack: &mut Vec<u32>, found: &mut impl Leaves) {
        self.descend::<true>(packet, stack, found);
    }

    /// The packet of the sorted leaves from `first` (up to [`PACKET`] of them, within the
    /// bodies), their boxes shifted by `shift`.
    fn packet(&self, first: usize, shift: [f32; 3]) -> Packet {
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
    fn descend<const AVX: bool>(
        &self,
        packet: &Packet,
        stack: &mut Vec<u32>,
        found: &mut impl Leaves,
    ) {
        let limits = Limits::new(&packet.union);
        // Nodes with a leaf after the first member's.
        let first = packet.least;
        if stack.len() < 3 * MAX_DEPTH + 4 {
            stack.resize(3 * MAX_DEPTH + 4, 0);
        }
        stack[0] = 0;
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let index = stack[top];
            let node = &self.nodes[index as usize];
            let hits = node.hits(&limits, first);
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

/// What a descent does with each leaf it reaches: the members that meet it (as bits) and
/// its body; `false` stops the descent. A trait rather than a closure, so that the queries'
/// own ([`PairsOf`]) is inlined into the descent, AVX copy included.
trait Leaves {
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

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::broad_phase::{self, Leaf, Node as KarrasNode, Tree};
    use crate::layout::StepParams;

    /// Karras's nodes over sorted `keys`, as the GPU's `hierarchy` builds them (its twin).
    fn karras(keys: &[(u64, u32)]) -> Vec<KarrasNode> {
        let n = keys.len();
        let params = StepParams {
            body_count: n as u32,
            ..StepParams::default()
        };
        let leaves: Vec<Leaf> = keys
            .iter()
            .map(|&(_, body)| Leaf {
                body,
                ..Leaf::default()
            })
            .collect();
        let codes: Vec<[u32; 2]> = keys
            .iter()
            .map(|&(code, _)| [(code >> 32) as u32, code as u32])
            .collect();
        let mut tree = Tree {
            nodes: vec![KarrasNode::default(); n - 1],
            node_parents: vec![0; n - 1],
            leaf_parents: vec![0; n],
            node_boxes: vec![0; 8 * (n - 1)],
        };
        for index in 0..n - 1 {
            broad_phase::hierarchy(index, &params, &leaves, &codes, &mut tree);
        }
        tree.nodes
    }

    /// The query of `packet` on every path this CPU has (plain, and with AVX where it has
    /// it), which must report the same leaves and members in the same order; `found` gets
    /// the plain path's.
    fn descend_each(
        bvh: &Bvh,
        packet: &Packet,
        stack: &mut Vec<u32>,
        mut found: impl FnMut(u32, u32),
    ) {
        let mut plain = Vec::new();
        bvh.descend::<false>(packet, stack, &mut |members, body| {
            plain.push((members, body));
        });
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            let mut wide = Vec::new();
            // SAFETY: the CPU has AVX.
            unsafe {
                bvh.descend_avx(packet, stack, &mut |members, body| {
                    wide.push((members, body));
                });
            };
            assert_eq!(plain, wide);
        }
        for (members, body) in plain {
            found(members, body);
        }
    }

    /// Keys with many duplicate codes, sorted.
    fn keys(n: usize) -> Vec<(u64, u32)> {
        let mut keys: Vec<(u64, u32)> = (0..n as u32)
            .map(|i| ((u64::from(i) * 7919 % 13) << 40 | u64::from(i % 5), i))
            .collect();
        keys.sort_unstable();
        keys
    }

    /// Every leaf appears exactly once under the root, and each node's `last` is the last
    /// leaf of its child's range, for keys with many duplicate codes.
    #[test]
    fn karras_tree_covers_every_leaf_once() {
        for n in [2usize, 3, 5, 17, 100, 1000] {
            let keys = keys(n);
            let nodes = karras(&keys);
            let mut seen = vec![0u32; n];
            // Returns the (first, last) leaf range of the subtree.
            fn walk(nodes: &[KarrasNode], child: u32, seen: &mut [u32]) -> (u32, u32) {
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

    /// A tree over sorted `keys` with the sorted leaves' `boxes`, folded in parts of fewer
    /// than `grain` leaves.
    fn tree(keys: Vec<(u64, u32)>, boxes: impl Fn(usize) -> Aabb, grain: u32) -> Bvh {
        let mut bvh = Bvh {
            sorted_boxes: (0..keys.len()).map(boxes).collect(),
            keys,
            ..Bvh::default()
        };
        bvh.link();
        bvh.fold_in_parts(grain);
        bvh
    }

    /// The one-pass construction gives Karras's tree: the same split at every node, and
    /// each node's box is the union of its leaves'.
    #[test]
    fn link_builds_karras_tree() {
        for n in [2usize, 3, 5, 17, 100, 1000, 4097] {
            let keys = keys(n);
            let karras = karras(&keys);
            let unit = |i: usize| Aabb {
                lo: [i as f32, (i % 7) as f32, 0.0],
                hi: [i as f32 + 1.0, (i % 7) as f32 + 2.0, 1.0],
            };
            for parts in [1, 2, 3, 7] {
                let mut bvh = tree(keys.clone(), unit, 0);
                bvh.link_in_parts(parts);
                // Walks both: Karras's child, ours, and our subtree's leaves' box.
                fn walk(karras: &[KarrasNode], bvh: &Bvh, theirs: u32, ours: u32) -> (u32, Aabb) {
                    assert_eq!(theirs & LEAF, ours & LEAF);
                    if ours & LEAF != 0 {
                        assert_eq!(theirs, ours);
                        return (ours & !LEAF, bvh.sorted_boxes[(ours & !LEAF) as usize]);
                    }
                    let (k, b) = (&karras[theirs as usize], &bvh.binary[ours as usize]);
                    let (left_last, left) = walk(karras, bvh, k.child[0], b.child[0]);
                    let (last, right) = walk(karras, bvh, k.child[1], b.child[1]);
                    assert_eq!(k.last, [left_last, last]);
                    assert_eq!(b.last, last);
                    assert_eq!(b.bounds, left.union(&right));
                    (last, b.bounds)
                }
                walk(&karras, &bvh, 0, bvh.root.expect("two leaves or more"));
            }
        }
    }

    /// The queries find exactly the pairs of boxes that meet, each once, from the pair's
    /// first sorted leaf: boxes of many sizes, nested and far apart; with the tree folded
    /// whole and in parts of several sizes.
    #[test]
    fn queries_find_every_meeting_pair_once() {
        for n in [2usize, 3, 4, 5, 9, 100, 777] {
            let mut state = 12345u64 + n as u64;
            let mut random = move || {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 40) as f32 / (1u64 << 24) as f32
            };
            let boxes: Vec<Aabb> = (0..n)
                .map(|_| {
                    let size = 0.1 + 10.0 * random().powi(4);
                    let lo: [f32; 3] = std::array::from_fn(|_| 10.0 * random());
                    Aabb {
                        lo,
                        hi: lo.map(|x| x + size),
                    }
                })
                .collect();
            for grain in [0, 3, 8, 64] {
                let bvh = tree(keys(n), |i| boxes[i], grain);
                // Parts where the grain asks for them (a tree of 100 has subtrees below 3).
                assert!(grain == 0 || n < 100 || !bvh.deferred.is_empty());
                assert!(grain > 0 || bvh.deferred.is_empty());
                let (mut found, mut stack) = (Vec::new(), Vec::new());
                for first in (0..n).step_by(PACKET) {
                    let packet = bvh.packet(first, [0.0; 3]);
                    descend_each(&bvh, &packet, &mut stack, |members, body| {
                        for member in (0..PACKET).filter(|m| members >> m & 1 != 0) {
                            found.push((first + member, body));
                        }
                    });
                }
                found.sort_unstable();
                let mut expected = Vec::new();
                for i in 0..n {
                    for j in i + 1..n {
                        if boxes[i].overlaps(&boxes[j]) {
                            expected.push((i, bvh.keys[j].1));
                        }
                    }
                }
                expected.sort_unstable();
                assert!(
                    !expected.is_empty() || n < 9,
                    "n = {n}: a test with no pairs"
                );
                assert_eq!(found, expected, "n = {n}, grain {grain}");
            }
        }
    }

    /// The deepest tree the keys allow: codes that each differ from the next in one more
    /// leading bit, then equal codes whose indices do, a chain of 95 binary levels. Link,
    /// fold and the queries still find every pair (all the boxes meet).
    #[test]
    fn deepest_tree_is_searched_whole() {
        let mut keys: Vec<(u64, u32)> = (0..63).map(|bit| (1u64 << bit, 0)).collect();
        keys.extend((0..31).map(|bit| (0, 1u32 << bit)));
        keys.push((0, 0));
        keys.sort_unstable();
        let n = keys.len();
        let unit = |_| Aabb {
            lo: [0.0; 3],
            hi: [1.0; 3],
        };
        for grain in [0, 3] {
            let bvh = tree(keys.clone(), unit, grain);
            // The binary tree's depth: a chain, one leaf off at each level.
            let mut depth = 0;
            let mut node = bvh.root.expect("two leaves or more");
            while node & LEAF == 0 {
                let children = bvh.binary[node as usize].child;
                node = *children
                    .iter()
                    .find(|&&c| c & LEAF == 0)
                    .unwrap_or(&children[0]);
                depth += 1;
            }
            assert_eq!(depth, n - 1, "a chain of {n} leaves");
            let mut stack = Vec::new();
            let mut found = 0;
            for first in (0..n).step_by(PACKET) {
                descend_each(
                    &bvh,
                    &bvh.packet(first, [0.0; 3]),
                    &mut stack,
                    |members, _| {
                        found += members.count_ones() as usize;
                    },
                );
            }
            assert_eq!(found, n * (n - 1) / 2);
        }
    }

    /// A right spine of binary nodes each of whose left subtrees (six leaves: four, then
    /// two) is wider than the rest of the spine, so that each four-wide node has four
    /// node children and the spine one binary level down: a query from a box that meets
    /// everything leaves three entries on its stack per binary level. (From a review that
    /// found the first bound of the stack, half the binary depth, too small.)
    #[test]
    fn query_stack_holds_a_wide_left_spine() {
        let levels = 60;
        let cube = |side: f32| Aabb {
            lo: [0.0; 3],
            hi: [side; 3],
        };
        let mut leaves = Vec::new();
        for level in 0..levels {
            let prefix = ((1u64 << level) - 1) << (63 - level);
            let side = (-(level as f32)).exp2();
            for low in 0..6u64 {
                leaves.push((prefix | low, cube(if low < 4 { side } else { 0.6 * side })));
            }
        }
        let prefix = ((1u64 << levels) - 1) << (63 - levels);
        for low in 0..2u64 {
            leaves.push((prefix | low, cube((-(levels as f32)).exp2())));
        }
        leaves.sort_by_key(|&(code, _)| code);
        // The first leaf's box meets every other.
        leaves[0].1 = Aabb {
            lo: [-1000.0; 3],
            hi: [1000.0; 3],
        };
        let n = leaves.len();
        let keys = (0..n).map(|i| (leaves[i].0, i as u32)).collect();
        let bvh = tree(keys, |i| leaves[i].1, 0);
        // The stack's peak, by the query's own walk.
        let limits = Limits::new(&bvh.sorted_boxes[0]);
        let (mut stack, mut peak) = (vec![0u32], 0);
        while let Some(index) = stack.pop() {
            let node = &bvh.nodes[index as usize];
            let hits = node.hits(&limits, 0);
            for lane in (0..4).filter(|lane| hits >> lane & 1 != 0) {
                if node.child[lane] & LEAF == 0 {
                    stack.push(node.child[lane]);
                }
            }
            peak = peak.max(stack.len());
        }
        assert!(
            peak > 3 * MAX_DEPTH / 2 + 4,
            "peak {peak}: not the deep case"
        );
        assert!(peak <= 3 * MAX_DEPTH + 1, "peak {peak}");
        let (mut found, mut stack) = (0, Vec::new());
        let packet = Packet::new(0, &bvh.sorted_boxes[..1], [0.0; 3]);
        descend_each(&bvh, &packet, &mut stack, |members, _| {
            found += members.count_ones() as usize;
        });
        assert_eq!(found, n - 1);
    }

    /// The partitioned sort gives the order of a plain sort: codes spread over all 63 bits,
    /// codes crowded into a few top-bit runs (one of them far beyond a thread's share), and
    /// equal codes, at sizes from none to well past one thread's runs.
    #[test]
    fn sort_by_code_orders_every_key() {
        let mut state = 5u64;
        let mut random = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 1
        };
        for n in [0, 1, 2, 7, 100, 5000, 70_000, 300_000] {
            for crowded in [false, true] {
                let mut keys: Vec<(u64, u32)> = (0..n as u32)
                    .map(|index| {
                        let code = random();
                        let code = if crowded && code % 4 != 0 {
                            // Most in one run, with a few equal codes.
                            (7 << 59) | (code % 1000)
                        } else {
                            code
                        };
                        (code, index)
                    })
                    .collect();
                let mut expected = keys.clone();
                expected.sort_unstable();
                sort_by_code(&mut keys, &mut Vec::new(), &mut Vec::new());
                assert_eq!(keys, expected, "{n} keys, crowded {crowded}");
            }
        }
    }
}
