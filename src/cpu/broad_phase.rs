//! The f32 twin of `shaders/broad_phase.wgsl`: one function per entry point, each one
//! invocation of it (index, gather, compute, write), written to be read beside the shader.
//! `tests/broad_phase.rs` runs each entry point on the device and its twin here on the same
//! input and holds the outputs equal: bit for bit for the frame (`scene_bounds`, `frame`)
//! and the tree (`swept_boxes` to `refit`), as sets for the queries (`candidates`,
//! `resume_candidates`), whose invocations append in any order on the device.
//! `prepare_resume` only sizes a dispatch and has no twin.
//!
//! The frame's twins are also the host's: [`StepParams::new`] and the CPU step's local origin
//! (`local_origin` in `src/cpu/frame.rs`) are [`scene_bounds`] over every body and [`frame`], so
//! that the parameters the host makes and those the device makes from bodies it never reads
//! back are the same bits. Only the Morton scale, `cells / extent`, is a division, which
//! WGSL allows 2.5 ulps; Mesa's software adapters round it correctly, as the host does. On an
//! adapter that does not, the device's scale may differ from the host's in its last bits:
//! the Morton codes then differ, and so the tree's shape, but not the candidates (every
//! pair whose boxes meet, in any tree) nor the contacts.
//!
//! This is the shader's reference, not a fast path: the CPU step's own broad phase
//! ([`find_contacts`](super::find_contacts)) builds its tree its own way (one linear pass,
//! four-wide nodes) and finds the same candidates. The twin of the step's next shader,
//! `shaders/contacts.wgsl`, is [`contacts`](super::contacts).
//!
//! The sorts between the entry points are lampshade's stable radix sorts; their twin is a
//! stable sort by key ([`sort_by_key`]).

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use super::sweep::largest_component;
use crate::layout::{BodyRecord, KeyValue, LEAF, MORTON_BITS, StepParams, SweepDispatch};

/// `Aabb` of the shader: a body's swept box, 32 bytes.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct Aabb {
    /// The low corner.
    pub lo: [f32; 3],
    /// Padding to 16 bytes.
    pub _pad0: f32,
    /// The high corner.
    pub hi: [f32; 3],
    /// Padding to 16 bytes.
    pub _pad1: f32,
}

/// `Leaf` of the shader: a sorted leaf's box and body, 32 bytes.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Eq, Default)]
pub struct Leaf {
    /// The low corner's bits (`f32::to_bits`, so that the type is `Eq`).
    pub lo: [u32; 3],
    /// The body.
    pub body: u32,
    /// The high corner's bits.
    pub hi: [u32; 3],
    /// The body's collision groups: its record's word ([`BodyRecord::groups`]).
    pub groups: u32,
}

/// `Node` of the shader: an internal node's two children (a node's index, or [`LEAF`] with a
/// sorted position) and the last sorted leaf under each, 16 bytes.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Eq, Default)]
pub struct Node {
    /// The children.
    pub child: [u32; 2],
    /// The last sorted leaf under each child.
    pub last: [u32; 2],
}

const _: () = assert!(size_of::<Aabb>() == 32 && size_of::<Leaf>() == 32);
const _: () = assert!(size_of::<Node>() == 16);

/// `NO_PARENT` of the shader: the root's parent.
pub const NO_PARENT: u32 = u32::MAX;

/// `wrap`: `c` wrapped into `[0, period)` on an axis that wraps (`period > 0`).
#[must_use]
pub fn wrap(c: f32, period: f32, inverse_period: f32) -> f32 {
    if period <= 0.0 {
        return c;
    }
    let mut wrapped = c - period * (c * inverse_period).floor();
    if wrapped < 0.0 {
        wrapped += period;
    }
    if wrapped >= period {
        wrapped -= period;
    }
    wrapped
}

/// `local_coordinate`: a centre's coordinate in the broad phase's local frame, `c - origin`,
/// wrapped into `[0, period)` on an axis that wraps.
#[must_use]
pub fn local_coordinate(c: f32, period: f32, inverse_period: f32, origin: f32) -> f32 {
    if period <= 0.0 {
        return c - origin;
    }
    let below = c + (period - origin);
    if c < 0.0 && below >= 0.0 {
        return below;
    }
    let wrapped = wrap(c, period, inverse_period);
    if wrapped >= origin {
        wrapped - origin
    } else {
        wrapped + (period - origin)
    }
}

/// The widening of a body's swept box: `2⁻¹⁶ (r + |d| + |c|ₒ) + 2⁻²⁰ |x|`, with `r` the
/// radius, `|d|` the displacement's largest component, `|x|` the largest component of the
/// centre in the broad phase's local frame (`local_origin` in `src/cpu/frame.rs`), and `|c|ₒ`
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

/// `swept_boxes`, invocation `i`: body `i`'s swept box (in the local frame, centre wrapped,
/// widened by the margin), its Morton code (high 31 bits, low 32) and the first sort's
/// key-value.
pub fn swept_boxes(
    i: usize,
    params: &StepParams,
    bodies: &[BodyRecord],
    boxes: &mut [Aabb],
    codes: &mut [[u32; 2]],
    sort_in: &mut [KeyValue],
) {
    if i >= params.body_count as usize {
        return;
    }
    let body = bodies[i];
    let center = Vec3::new(
        local_coordinate(
            body.center[0],
            params.period[0],
            params.inverse_period[0],
            params.origin[0],
        ),
        local_coordinate(
            body.center[1],
            params.period[1],
            params.inverse_period[1],
            params.origin[1],
        ),
        local_coordinate(
            body.center[2],
            params.period[2],
            params.inverse_period[2],
            params.origin[2],
        ),
    );
    let end = center + Vec3::from_array(body.displacement);
    let reach = body.radius
        + margin(
            &body,
            center.to_array(),
            outside_the_box(body.center, params.period),
        );
    let lo = center.min(end) - Vec3::splat(reach);
    let hi = center.max(end) + Vec3::splat(reach);
    boxes[i] = Aabb {
        lo: lo.to_array(),
        _pad0: 0.0,
        hi: hi.to_array(),
        _pad1: 0.0,
    };

    let largest_cell = ((1u32 << MORTON_BITS) - 1) as f32;
    let cell = ((0.5 * (lo + hi) - Vec3::from_array(params.morton_origin))
        * Vec3::from_array(params.morton_scale))
    .clamp(Vec3::ZERO, Vec3::splat(largest_cell))
    .to_array()
    .map(|c| c as u32);
    let mut high = 0u32;
    let mut low = 0u32;
    for bit in 0..MORTON_BITS {
        for axis in 0..3u32 {
            let value = (cell[axis as usize] >> bit) & 1;
            let position = 3 * bit + 2 - axis;
            if position < 32 {
                low |= value << position;
            } else {
                high |= value << (position - 32);
            }
        }
    }
    codes[i] = [high, low];
    sort_in[i] = KeyValue {
        key: low,
        value: i as u32,
    };
}

/// The twin of one of lampshade's stable radix sorts: key-values ordered by key, ties in
/// their order.
pub fn sort_by_key(sort_in: &[KeyValue], sort_out: &mut [KeyValue]) {
    sort_out.copy_from_slice(sort_in);
    sort_out.sort_by_key(|pair| pair.key);
}

/// `key_by_high`, invocation `i`: the second sort's key-value, the high word of the body at
/// the first sort's position `i`.
pub fn key_by_high(
    i: usize,
    params: &StepParams,
    sort_out: &[KeyValue],
    codes: &[[u32; 2]],
    sort_in: &mut [KeyValue],
) {
    if i >= params.body_count as usize {
        return;
    }
    let body = sort_out[i].value;
    sort_in[i] = KeyValue {
        key: codes[body as usize][0],
        value: body,
    };
}

/// `leaves_in_order`, invocation `i`: the leaf at sorted position `i`, with its body's
/// collision groups.
#[allow(clippy::too_many_arguments)]
pub fn leaves_in_order(
    i: usize,
    params: &StepParams,
    bodies: &[BodyRecord],
    sort_out: &[KeyValue],
    boxes: &[Aabb],
    codes: &[[u32; 2]],
    leaves: &mut [Leaf],
    leaf_codes: &mut [[u32; 2]],
) {
    if i >= params.body_count as usize {
        return;
    }
    let body = sort_out[i].value;
    let b = boxes[body as usize];
    leaves[i] = Leaf {
        lo: b.lo.map(f32::to_bits),
        body,
        hi: b.hi.map(f32::to_bits),
        groups: bodies[body as usize].groups,
    };
    leaf_codes[i] = codes[body as usize];
}

/// `common_prefix`: the length of the common prefix of the keys (code, then body index) at
/// sorted positions `i` and `j`, or -1 where `j` is outside the leaves.
fn common_prefix(
    params: &StepParams,
    leaves: &[Leaf],
    leaf_codes: &[[u32; 2]],
    i: i32,
    j: i32,
) -> i32 {
    if j < 0 || j >= params.body_count as i32 {
        return -1;
    }
    let a = leaf_codes[i as usize];
    let b = leaf_codes[j as usize];
    if a == b {
        return 63 + (leaves[i as usize].body ^ leaves[j as usize].body).leading_zeros() as i32;
    }
    let differ = [a[0] ^ b[0], a[1] ^ b[1]];
    if differ[0] != 0 {
        // The top bit of the high word is always 0: 31 bits of code.
        return differ[0].leading_zeros() as i32 - 1;
    }
    31 + differ[1].leading_zeros() as i32
}

/// The tree's arrays that `hierarchy` writes and `refit` reads and grows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tree {
    /// The `n - 1` internal nodes; node 0 is the root.
    pub nodes: Vec<Node>,
    /// Each internal node's parent ([`NO_PARENT`] for the root).
    pub node_parents: Vec<u32>,
    /// Each sorted leaf's parent.
    pub leaf_parents: Vec<u32>,
    /// Per internal node, its box as 8 words: lo and hi in the order-preserving encoding of
    /// [`ordered`], then the union of the collision groups of the bodies under it (the OR
    /// of their bits, not complemented; at [`GROUPS_WORD`]), then one unused.
    pub node_boxes: Vec<u32>,
}

/// `hierarchy`, invocation `index`: Karras's internal node `index` (its range by a doubling
/// search and a binary search on common prefixes, and where it splits), its children's
/// parent, and its box emptied for `refit`.
pub fn hierarchy(
    index: usize,
    params: &StepParams,
    leaves: &[Leaf],
    leaf_codes: &[[u32; 2]],
    tree: &mut Tree,
) {
    if index + 1 >= params.body_count as usize {
        return;
    }
    let delta = |j: i32| common_prefix(params, leaves, leaf_codes, index as i32, j);
    let at = index as i32;
    let direction = if delta(at + 1) > delta(at - 1) { 1 } else { -1 };
    let prefix_min = delta(at - direction);
    let mut length_max = 2;
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
    let mut split = 0;
    let mut divisor = 2;
    loop {
        let split_step = (length + divisor - 1) / divisor;
        if delta(at + (split + split_step) * direction) > prefix_node {
            split += split_step;
        }
        if split_step <= 1 {
            break;
        }
        divisor *= 2;
    }
    let gamma = at + split * direction + direction.min(0);
    let first = at.min(other_end);
    let last = at.max(other_end);
    let mut left = gamma as u32;
    let mut right = (gamma + 1) as u32;
    if first == gamma {
        tree.leaf_parents[left as usize] = index as u32;
        left |= LEAF;
    } else {
        tree.node_parents[left as usize] = index as u32;
    }
    if last == gamma + 1 {
        tree.leaf_parents[right as usize] = index as u32;
        right |= LEAF;
    } else {
        tree.node_parents[right as usize] = index as u32;
    }
    tree.nodes[index] = Node {
        child: [left, right],
        last: [gamma as u32, last as u32],
    };
    let base = 8 * index;
    for k in 0..3 {
        tree.node_boxes[base + k] = u32::MAX;
        tree.node_boxes[base + 3 + k] = 0;
    }
    tree.node_boxes[base + GROUPS_WORD] = 0;
    if index == 0 {
        tree.node_parents[0] = NO_PARENT;
    }
}

/// `ordered`: f32 bits whose unsigned order is the numbers' order.
#[must_use]
pub fn ordered(x: f32) -> u32 {
    let bits = x.to_bits();
    if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// `refit`, invocation `i`: leaf `i` climbs, growing each ancestor's box to hold its own and
/// its groups' union to hold its groups, and stops at the first that already held both. The
/// shader's atomic minima, maxima and ORs commute, so invocations one after another give
/// what the device gives in any order.
pub fn refit(i: usize, params: &StepParams, leaves: &[Leaf], tree: &mut Tree) {
    if i >= params.body_count as usize || params.body_count < 2 {
        return;
    }
    let leaf = leaves[i];
    let lo = leaf.lo.map(|bits| ordered(f32::from_bits(bits)));
    let hi = leaf.hi.map(|bits| ordered(f32::from_bits(bits)));
    let groups = !leaf.groups;
    let mut node = tree.leaf_parents[i];
    loop {
        let base = 8 * node as usize;
        let mut grew = false;
        for k in 0..3 {
            let lo_word = &mut tree.node_boxes[base + k];
            grew |= *lo_word > lo[k];
            *lo_word = (*lo_word).min(lo[k]);
            let hi_word = &mut tree.node_boxes[base + 3 + k];
            grew |= *hi_word < hi[k];
            *hi_word = (*hi_word).max(hi[k]);
        }
        let union = &mut tree.node_boxes[base + GROUPS_WORD];
        grew |= *union & groups != groups;
        *union |= groups;
        if !grew || node == 0 {
            break;
        }
        node = tree.node_parents[node as usize];
    }
}

/// `unordered`: the f32 of [`ordered`] bits.
#[must_use]
pub fn unordered(u: u32) -> f32 {
    f32::from_bits(if u & 0x8000_0000 != 0 {
        u & 0x7fff_ffff
    } else {
        !u
    })
}

/// `STACK_SIZE` of the shader: the deepest tree, and one more.
pub const STACK_SIZE: usize = 97;

/// `BUDGET` of the shader: the steps (node visits, and the image checks of a periodic box) an
/// invocation takes before it saves the rest of its query for the next dispatch.
pub const BUDGET: u32 = 4096;

/// `Continuation` of the shader: a query's state between dispatches (its stack up to its
/// depth; the rest of the shader's 97 words is not read).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Continuation {
    /// The leaf's sorted position.
    pub position: u32,
    /// The image the walk is in.
    pub image: u32,
    /// The walk's stack, `depth` entries.
    pub stack: Vec<u32>,
}

impl Continuation {
    /// The shader's 4 + [`STACK_SIZE`] words.
    #[must_use]
    pub fn to_words(&self) -> Vec<u32> {
        let mut words = vec![self.position, self.image, self.stack.len() as u32, 0];
        words.extend(&self.stack);
        words.resize(4 + STACK_SIZE, 0);
        words
    }

    /// From the shader's words.
    #[must_use]
    pub fn from_words(words: &[u32]) -> Self {
        let depth = words[2] as usize;
        Self {
            position: words[0],
            image: words[1],
            stack: words[4..4 + depth].to_vec(),
        }
    }
}

/// What the queries read: the sorted leaves, the nodes and their refit boxes.
#[derive(Clone, Copy, Debug)]
pub struct Queried<'a> {
    /// The step's parameters.
    pub params: &'a StepParams,
    /// The sorted leaves.
    pub leaves: &'a [Leaf],
    /// The internal nodes.
    pub nodes: &'a [Node],
    /// The nodes' boxes, 8 words a node ([`Tree::node_boxes`]).
    pub node_boxes: &'a [u32],
}

/// What the queries write: the candidate pairs (up to the capacity) and their count, the
/// queries saved for the next dispatch (up to the queue's capacity) and theirs, and the two
/// sticky overflow flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// The pairs written, lower body first, in the order the invocations appended them.
    pub pairs: Vec<[u32; 2]>,
    /// Every pair counted, written or not.
    pub candidate_count: u32,
    /// Set when a pair was counted past the capacity.
    pub candidates_overflowed: u32,
    /// The saved queries written.
    pub continuations: Vec<Continuation>,
    /// Every query saved, written or not.
    pub continuation_count: u32,
    /// Set when a query was saved past the queue's capacity.
    pub continuations_overflowed: u32,
}

/// One invocation's walk: `stack`, `depth` and `steps` of the shader's private memory.
struct Walk<'a> {
    queried: Queried<'a>,
    stack: [u32; STACK_SIZE],
    depth: u32,
    steps: u32,
}

/// `image_shift`: the shift of image `s` of 27 (x slowest), -1, 0 or 1 period an axis.
fn image_shift(params: &StepParams, s: u32) -> Vec3 {
    let steps = [s / 9, (s / 3) % 3, s % 3];
    let signed = Vec3::from_array(steps.map(|step| match step {
        1 => -1.0,
        2 => 1.0,
        _ => 0.0,
    }));
    signed * Vec3::from_array(params.period)
}

/// `image_exists`: no shift on an axis that does not wrap.
fn image_exists(params: &StepParams, s: u32) -> bool {
    let steps = [s / 9, (s / 3) % 3, s % 3];
    (0..3).all(|k| params.period[k] > 0.0 || steps[k] == 0)
}

/// `interacts`: whether two bodies whose records' group words are `a` and `b` interact
/// ([`CollisionGroups::interacts_with`](crate::CollisionGroups::interacts_with) of the
/// complements).
#[must_use]
pub fn interacts(a: u32, b: u32) -> bool {
    interacts_bits(!a, !b)
}

/// `interacts_bits`: [`interacts`] on the groups' bits themselves, or on unions of them (a
/// node's, whose bodies may then interact).
#[must_use]
pub fn interacts_bits(own: u32, other: u32) -> bool {
    (own & (other >> 16)) != 0 && (other & (own >> 16)) != 0
}

/// `GROUPS_WORD` of the shader: the word of a node's box (of 8) that holds the union of its
/// bodies' collision groups.
pub const GROUPS_WORD: usize = 6;

fn overlaps(a_lo: Vec3, a_hi: Vec3, b_lo: Vec3, b_hi: Vec3) -> bool {
    a_lo.cmple(b_hi).all() && b_lo.cmple(a_hi).all()
}

fn leaf_lo(leaf: &Leaf) -> Vec3 {
    Vec3::from_array(leaf.lo.map(f32::from_bits))
}

fn leaf_hi(leaf: &Leaf) -> Vec3 {
    Vec3::from_array(leaf.hi.map(f32::from_bits))
}

impl Walk<'_> {
    fn node_lo(&self, node: u32) -> Vec3 {
        let base = 8 * node as usize;
        Vec3::from_array(std::array::from_fn(|k| {
            unordered(self.queried.node_boxes[base + k])
        }))
    }

    fn node_hi(&self, node: u32) -> Vec3 {
        let base = 8 * node as usize;
        Vec3::from_array(std::array::from_fn(|k| {
            unordered(self.queried.node_boxes[base + 3 + k])
        }))
    }

    /// `query`: the pairs of the leaf at sorted position `p` with every later leaf whose box
    /// meets its own, from image `first_image` and the walk's stack and depth.
    fn query(&mut self, p: u32, first_image: u32, found: &mut Found) {
        let own = self.queried.leaves[p as usize];
        let root_lo = self.node_lo(0);
        let root_hi = self.node_hi(0);
        for s in first_image..27 {
            if !image_exists(self.queried.params, s) {
                continue;
            }
            let shift = image_shift(self.queried.params, s);
            let query_lo = leaf_lo(&own) + shift;
            let query_hi = leaf_hi(&own) + shift;
            if self.depth == 0 {
                if !overlaps(query_lo, query_hi, root_lo, root_hi) {
                    continue;
                }
                self.stack[0] = 0;
                self.depth = 1;
            }
            while self.depth > 0 {
                if self.steps >= BUDGET {
                    self.save(p, s, found);
                    return;
                }
                self.steps += 1;
                self.depth -= 1;
                let node = self.queried.nodes[self.stack[self.depth as usize] as usize];
                self.visit(
                    p,
                    &own,
                    s,
                    query_lo,
                    query_hi,
                    node.child[0],
                    node.last[0],
                    found,
                );
                self.visit(
                    p,
                    &own,
                    s,
                    query_lo,
                    query_hi,
                    node.child[1],
                    node.last[1],
                    found,
                );
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn visit(
        &mut self,
        p: u32,
        own: &Leaf,
        s: u32,
        query_lo: Vec3,
        query_hi: Vec3,
        child: u32,
        last: u32,
        found: &mut Found,
    ) {
        if last <= p {
            return;
        }
        if child & LEAF != 0 {
            let other = self.queried.leaves[(child & !LEAF) as usize];
            if overlaps(query_lo, query_hi, leaf_lo(&other), leaf_hi(&other))
                && interacts(own.groups, other.groups)
                && !self.met_through_earlier_image(own, &other, s)
            {
                let slot = found.candidate_count;
                found.candidate_count = found.candidate_count.wrapping_add(1);
                if slot < self.queried.params.candidate_capacity {
                    found
                        .pairs
                        .push([own.body.min(other.body), own.body.max(other.body)]);
                } else {
                    found.candidates_overflowed = 1;
                }
            }
        } else if overlaps(query_lo, query_hi, self.node_lo(child), self.node_hi(child))
            && interacts_bits(
                !own.groups,
                self.queried.node_boxes[8 * child as usize + GROUPS_WORD],
            )
        {
            self.stack[self.depth as usize] = child;
            self.depth += 1;
        }
    }

    /// `met_through_earlier_image`: whether an image before `s` already met `other`.
    fn met_through_earlier_image(&mut self, own: &Leaf, other: &Leaf, s: u32) -> bool {
        for earlier in 0..s {
            self.steps += 1;
            let shift = image_shift(self.queried.params, earlier);
            if image_exists(self.queried.params, earlier)
                && overlaps(
                    leaf_lo(own) + shift,
                    leaf_hi(own) + shift,
                    leaf_lo(other),
                    leaf_hi(other),
                )
            {
                return true;
            }
        }
        false
    }

    /// `save`: hands the rest of the query to the next dispatch.
    fn save(&mut self, p: u32, s: u32, found: &mut Found) {
        let slot = found.continuation_count;
        found.continuation_count += 1;
        if slot >= self.queried.params.continuation_capacity {
            found.continuations_overflowed = 1;
            return;
        }
        found.continuations.push(Continuation {
            position: p,
            image: s,
            stack: self.stack[..self.depth as usize].to_vec(),
        });
    }
}

/// `candidates`, invocation `p`: the query of the leaf at sorted position `p`. Returns the
/// steps it took (node visits and image checks: the walk's budget), for counting.
pub fn candidates(p: usize, queried: Queried, found: &mut Found) -> u32 {
    if p + 1 >= queried.params.body_count as usize {
        return 0;
    }
    let mut walk = Walk {
        queried,
        stack: [0; STACK_SIZE],
        depth: 0,
        steps: 0,
    };
    walk.query(p as u32, 0, found);
    walk.steps
}

/// `prepare_resume`, its one invocation: the workgroups of the resume of a queue whose head
/// counts `saved` queries (those past the capacity were not written: the capacity's).
#[must_use]
pub fn prepare_resume(params: &StepParams, saved: u32) -> [u32; 3] {
    // `workgroups_for` of the contract: the host's copy is `SweepDispatch::new`.
    let dispatch = SweepDispatch::new(saved.min(params.continuation_capacity));
    [
        dispatch.workgroups_x,
        dispatch.workgroups_y,
        dispatch.workgroups_z,
    ]
}

/// `resume_candidates`, invocation `i`: the saved query `i` of the last dispatch, for another
/// [`BUDGET`] steps. Returns the steps it took, as [`candidates`].
pub fn resume_candidates(
    i: usize,
    queried: Queried,
    continuations_in: &[Continuation],
    continuation_count_in: u32,
    found: &mut Found,
) -> u32 {
    if i >= continuation_count_in.min(queried.params.continuation_capacity) as usize {
        return 0;
    }
    let saved = &continuations_in[i];
    let mut walk = Walk {
        queried,
        stack: [0; STACK_SIZE],
        depth: saved.stack.len() as u32,
        steps: 0,
    };
    walk.stack[..saved.stack.len()].copy_from_slice(&saved.stack);
    walk.query(saved.position, saved.image, found);
    walk.steps
}

/// `FRAME_BINS` of the shader: the slices of a periodic axis in which [`frame`] looks for the
/// bodies' longest gap.
pub const FRAME_BINS: u32 = 4096;

/// `FRAME_WORDS` of the shader: the words of one axis's occupied slices, a bit a slice.
pub const FRAME_WORDS: usize = FRAME_BINS as usize / 32;

/// `OCCUPANCY` of the shader: where the occupied slices start in the bounds' words, after
/// the lows, the highs, [`INVALID_BODIES`] and one unused word.
pub const OCCUPANCY: usize = 8;

/// `INVALID_BODIES` of the shader: the bounds' word that [`scene_bounds`] sets to 1 when a
/// body is one the step cannot sweep ([`invalid_body`]).
pub const INVALID_BODIES: usize = 6;

/// `invalid_body`: whether a body is one the host's validation would refuse and the step
/// cannot sweep: a centre, displacement or radius that is not finite (all exponent bits
/// set), or a radius below zero (-0 is 0). On the bits, as the shader tests them.
#[must_use]
pub fn invalid_body(body: &BodyRecord) -> bool {
    let non_finite = |x: f32| x.to_bits() & 0x7f80_0000 == 0x7f80_0000;
    body.center
        .iter()
        .chain(&body.displacement)
        .any(|&x| non_finite(x))
        || non_finite(body.radius)
        || body.radius.to_bits() > 0x8000_0000
}

/// `BOUNDS_WORDS` of the shader: the words of the bounds that [`scene_bounds`] gathers and
/// [`frame`] reads (a buffer cleared to 0 before the gathering).
pub const BOUNDS_WORDS: usize = OCCUPANCY + 3 * FRAME_WORDS;

/// `occupancy_bin`: the slice of a periodic axis that holds centre `c`, from the f32 wrap
/// ([`wrap`]); the last where the product rounds up to 1.
#[must_use]
pub fn occupancy_bin(c: f32, period: f32, inverse_period: f32) -> u32 {
    let wrapped = wrap(c, period, inverse_period);
    ((wrapped * inverse_period * FRAME_BINS as f32) as u32).min(FRAME_BINS - 1)
}

/// `scene_bounds`, invocation `i`: grows `bounds` ([`BOUNDS_WORDS`] words, 0 before the
/// first invocation) by body `i`'s path on each axis (lows as the complement of
/// [`ordered`], highs as [`ordered`], each grown by a maximum) and marks its centre's slice
/// on each axis that wraps. The shader reduces each workgroup's words first; maxima and ors
/// commute, so invocations one after another give the device's words in any order.
pub fn scene_bounds(i: usize, frame_input: &StepParams, bodies: &[BodyRecord], bounds: &mut [u32]) {
    if i >= frame_input.body_count as usize {
        return;
    }
    let body = bodies[i];
    if invalid_body(&body) {
        bounds[INVALID_BODIES] = bounds[INVALID_BODIES].max(1);
    }
    for k in 0..3 {
        let (c, d) = (body.center[k], body.displacement[k]);
        let lo = c + if d < 0.0 { d } else { 0.0 };
        let hi = c + if d > 0.0 { d } else { 0.0 };
        bounds[k] = bounds[k].max(!ordered(lo));
        bounds[3 + k] = bounds[3 + k].max(ordered(hi));
        let period = frame_input.period[k];
        if period > 0.0 {
            let bin = occupancy_bin(c, period, frame_input.inverse_period[k]) as usize;
            bounds[OCCUPANCY + FRAME_WORDS * k + bin / 32] |= 1 << (bin % 32);
        }
    }
}

/// `next_occupied`: the first occupied slice at or after `start` in one axis's words, or
/// [`FRAME_BINS`] where none is.
fn next_occupied(occupied: &[u32], start: u32) -> u32 {
    let mut word = start as usize / 32;
    if word >= FRAME_WORDS {
        return FRAME_BINS;
    }
    let mut bits = occupied[word] & (u32::MAX << (start % 32));
    loop {
        if bits != 0 {
            return 32 * word as u32 + bits.trailing_zeros();
        }
        word += 1;
        if word >= FRAME_WORDS {
            return FRAME_BINS;
        }
        bits = occupied[word];
    }
}

/// `longest_gap_end`: the first occupied slice after the longest run of empty ones, walking
/// once round from the first occupied slice (a tie goes to the run found first), or
/// [`FRAME_BINS`] where every slice is occupied or none is.
#[must_use]
pub fn longest_gap_end(occupied: &[u32]) -> u32 {
    let first = next_occupied(occupied, 0);
    let mut end = FRAME_BINS;
    let mut longest = 0;
    let mut previous = first;
    while previous < FRAME_BINS {
        let next = next_occupied(occupied, previous + 1);
        // After the last occupied slice, the run goes round to the first.
        let stop = if next == FRAME_BINS {
            first + FRAME_BINS
        } else {
            next
        };
        let gap = stop - previous - 1;
        if gap > longest {
            longest = gap;
            end = stop % FRAME_BINS;
        }
        previous = next;
    }
    end
}

/// `bin_start`: the start of slice `bin` of a box of `period`, floored to a multiple of
/// f32's spacing at the period (`2^(e - 23)` for a period `m · 2^(e - 23)`, `m` a 24-bit
/// integer): `floor(bin · m / FRAME_BINS)` spacings, in u32 with `m` split into 12-bit
/// halves (each product below 2²⁴), exact in f32 and below the period. 0 where the spacing is
/// not a normal f32 (a period below 2⁻¹⁰³), which GPUs would flush.
#[must_use]
pub fn bin_start(bin: u32, period: f32) -> f32 {
    let bits = period.to_bits();
    let biased_exponent = bits >> 23;
    if biased_exponent < 24 {
        return 0.0;
    }
    let m = (bits & 0x7f_ffff) | 0x80_0000;
    let spacings = bin * (m >> 12) + ((bin * (m & 0xfff)) >> 12);
    spacings as f32 * f32::from_bits((biased_exponent - 23) << 23)
}

/// `frame`: the step's parameters from the bounds that [`scene_bounds`] gathered (the
/// input's options, count and capacities, with its local frame: per axis the origin, and the
/// Morton grid, `[0, L)` on an axis that wraps, else the span of the paths about the origin;
/// none where that is empty or infinite), and the dispatch of the per-body passes.
/// [`StepParams::new`] is this over the bounds of every body.
#[must_use]
pub fn frame(frame_input: &StepParams, bounds: &[u32]) -> (StepParams, SweepDispatch) {
    let mut output = *frame_input;
    let cells = ((1u32 << MORTON_BITS) - 1) as f32;
    for k in 0..3 {
        let lo_word = !bounds[k];
        let hi_word = bounds[3 + k];
        let lo = unordered(lo_word);
        let hi = unordered(hi_word);
        let period = frame_input.period[k];
        let mut origin = 0.0;
        let mut low = 0.0;
        let mut extent = 0.0;
        if period > 0.0 {
            let words = &bounds[OCCUPANCY + FRAME_WORDS * k..][..FRAME_WORDS];
            let end = longest_gap_end(words);
            if end < FRAME_BINS {
                origin = bin_start(end, period);
            }
            extent = period;
        } else if lo_word <= hi_word {
            // 0 clamped to the span, by comparisons: a zero's sign is the same everywhere.
            origin = if lo > 0.0 {
                lo
            } else if hi < 0.0 {
                hi
            } else {
                0.0
            };
            low = lo - origin;
            extent = hi - lo;
        }
        output.origin[k] = origin;
        let gridded = extent > 0.0 && extent <= f32::MAX;
        output.morton_origin[k] = if gridded { low } else { 0.0 };
        output.morton_scale[k] = if gridded { cells / extent } else { 0.0 };
    }
    (output, SweepDispatch::new(frame_input.body_count))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition `longest_gap_end` keeps, a slice at a time: the first occupied of the
    /// slices after the longest run of empty ones, walking once round from the first occupied
    /// slice, ties to the run found first.
    fn longest_gap_end_by_slices(occupied: &[u32]) -> u32 {
        let bins = FRAME_BINS as usize;
        let is_occupied = |bin: usize| occupied[bin / 32] >> (bin % 32) & 1 != 0;
        let Some(first) = (0..bins).find(|&bin| is_occupied(bin)) else {
            return FRAME_BINS;
        };
        let (mut best, mut best_length, mut length) = (FRAME_BINS, 0, 0);
        for step in 1..=bins {
            let bin = (first + step) % bins;
            if is_occupied(bin) {
                if length > best_length {
                    (best, best_length) = (bin as u32, length);
                }
                length = 0;
            } else {
                length += 1;
            }
        }
        best
    }

    /// A word at a time, the walk finds the slice the walk a slice at a time finds: on
    /// random slices of every density, none, all, one, every other one (all runs tied), and
    /// two equal runs whose tie the walk's start decides.
    #[test]
    fn the_longest_gap_by_words_is_the_longest_gap_by_slices() {
        let mut cases: Vec<Vec<u32>> = vec![
            vec![0; FRAME_WORDS],
            vec![u32::MAX; FRAME_WORDS],
            vec![0x5555_5555; FRAME_WORDS],
            vec![0xaaaa_aaaa; FRAME_WORDS],
        ];
        for bin in [0, 1, 31, 32, 2047, 4095] {
            let mut one = vec![0; FRAME_WORDS];
            one[bin / 32] |= 1 << (bin % 32);
            cases.push(one);
        }
        // Slices 100 and 2148 occupied: two runs of 2047, the second ending at the first
        // occupied slice; and the same with the runs unequal by one either way.
        for (a, b) in [(100, 2148), (100, 2147), (100, 2149), (0, 2048)] {
            let mut two = vec![0; FRAME_WORDS];
            two[a / 32] |= 1 << (a % 32);
            two[b / 32] |= 1 << (b % 32);
            cases.push(two);
        }
        let mut state = 0x9e37_79b9_u32;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        };
        for density in [1, 2, 4, 8, 16, 24, 30, 31] {
            for _ in 0..50 {
                let words = (0..FRAME_WORDS)
                    .map(|_| {
                        // Each bit set with probability about density / 32.
                        (0..32).fold(0, |word, bit| {
                            word | u32::from(random() % 32 < density) << bit
                        })
                    })
                    .collect();
                cases.push(words);
            }
        }
        for occupied in &cases {
            assert_eq!(
                longest_gap_end(occupied),
                longest_gap_end_by_slices(occupied),
                "{occupied:x?}"
            );
        }
        assert_eq!(longest_gap_end(&cases[0]), FRAME_BINS);
        assert_eq!(longest_gap_end(&cases[1]), FRAME_BINS);
        assert_eq!(longest_gap_end(&cases[2]), 2);
        assert_eq!(longest_gap_end(&cases[cases.len() - 400 - 4]), 2148);
    }

    /// The integer start of a slice is f64's `floor(start / spacing) · spacing` of the exact
    /// start, a multiple of the spacing at or below it and below the period.
    #[test]
    fn a_slice_start_is_the_exact_start_floored_to_the_spacing() {
        for period in [
            1.0f32,
            13.0,
            13.5,
            54.0,
            1e6,
            1e7,
            3.3e7,
            0.1,
            1e-30,
            1e30,
            16_777_215.0,
            2e-31,
        ] {
            let spacing =
                f64::from(f32::from_bits(period.to_bits() & 0x7f80_0000)) * f64::from(f32::EPSILON);
            for bin in [0, 1, 2, 1000, 2048, 4093, 4095] {
                let exact = f64::from(bin) * f64::from(period) / f64::from(FRAME_BINS);
                let expected = ((exact / spacing).floor() * spacing) as f32;
                let start = bin_start(bin, period);
                assert_eq!(start, expected, "period {period}, slice {bin}");
                assert!(f64::from(start) <= exact && start < period);
                assert_eq!(f64::from(start) % spacing, 0.0);
            }
        }
        // Below 2⁻¹⁰³ the spacing is not a normal f32: the box's corner.
        assert_eq!(bin_start(4095, 1e-32), 0.0);
    }
}
