//! The f32 twin of `shaders/broad_phase.wgsl`, for the stages that build the GPU's tree: one
//! function per entry point, each one invocation of it (index, gather, compute, write),
//! written to be read beside the shader. `tests/broad_phase.rs` runs each entry point on the
//! device and its twin here on the same input and holds the outputs equal, bit for bit.
//!
//! This is the shader's reference, not a fast path: the CPU step's own broad phase
//! ([`find_contacts`](super::find_contacts)) builds its tree its own way (one linear pass,
//! four-wide nodes) and finds the same candidates. The twin of the queries
//! (`candidates`, `resume_candidates`) and of `shaders/contacts.wgsl` are not written yet: the
//! GPU step's end-to-end test holds their output (the contacts, the earliest per body) to the
//! CPU step's.
//!
//! The sorts between the entry points are lampshade's stable radix sorts; their twin is a
//! stable sort by key ([`sort_by_key`]).

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use super::sweep::largest_component;
use crate::layout::{BodyRecord, KeyValue, LEAF, MORTON_BITS, StepParams};

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
    /// Padding to 32 bytes.
    pub _pad: u32,
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

/// `swept_boxes`, invocation `i`: body `i`'s swept box (centre wrapped, widened by the
/// margin), its Morton code (high 31 bits, low 32) and the first sort's key-value.
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
        wrap(body.center[0], params.period[0], params.inverse_period[0]),
        wrap(body.center[1], params.period[1], params.inverse_period[1]),
        wrap(body.center[2], params.period[2], params.inverse_period[2]),
    );
    let end = center + Vec3::from_array(body.displacement);
    let scale = largest_component(Vec3::from_array(body.center))
        + largest_component(Vec3::from_array(body.displacement))
        + body.radius
        + params.largest_period;
    let reach = body.radius + scale * (1.0 / 65536.0);
    let lo = center.min(end) - Vec3::splat(reach);
    let hi = center.max(end) + Vec3::splat(reach);
    boxes[i] = Aabb {
        lo: lo.to_array(),
        _pad0: 0.0,
        hi: hi.to_array(),
        _pad1: 0.0,
    };

    let largest_cell = ((1u32 << MORTON_BITS) - 1) as f32;
    let cell = ((0.5 * (lo + hi) - Vec3::from_array(params.origin))
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

/// `leaves_in_order`, invocation `i`: the leaf at sorted position `i`.
pub fn leaves_in_order(
    i: usize,
    params: &StepParams,
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
        _pad: 0,
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
    /// [`ordered`], then two unused.
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

/// `refit`, invocation `i`: leaf `i` climbs, growing each ancestor's box to hold its own,
/// and stops at the first that already held it. The shader's atomic minima and maxima
/// commute, so invocations one after another give what the device gives in any order.
pub fn refit(i: usize, params: &StepParams, leaves: &[Leaf], tree: &mut Tree) {
    if i >= params.body_count as usize || params.body_count < 2 {
        return;
    }
    let leaf = leaves[i];
    let lo = leaf.lo.map(|bits| ordered(f32::from_bits(bits)));
    let hi = leaf.hi.map(|bits| ordered(f32::from_bits(bits)));
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
        if !grew || node == 0 {
            break;
        }
        node = tree.node_parents[node as usize];
    }
}
