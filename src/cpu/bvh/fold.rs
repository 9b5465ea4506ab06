//! The fold of the binary tree into the queried tree of four-wide nodes ([`Bvh::fold`]):
//! the top folded here, the subtrees below it in parallel parts placed after it.

use std::mem::MaybeUninit;

use crate::par::{self, prelude::*};

use super::tree::{Aabb, Binary, Bvh, MAX_DEPTH, Node};
use crate::layout::LEAF;

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

/// Parts of the fold per thread, and the fewest leaves a part is made of.
const FOLD_PARTS_PER_THREAD: usize = 8;
const FOLD_GRAIN_MIN: usize = 4096;

impl Bvh {
    /// The queried tree from the binary one ([`Folding::fold_into`]).
    /// The top of the tree is folded here; each subtree below it of fewer than a grain of
    /// leaves is folded on its own, in parallel, and placed after the top, in order.
    pub(super) fn fold(&mut self) {
        let grain = (self.keys.len() / (FOLD_PARTS_PER_THREAD * par::current_num_threads()))
            .max(FOLD_GRAIN_MIN);
        self.fold_in_parts(grain as u32);
    }

    /// [`fold`](Self::fold), with subtrees of fewer than `grain` leaves folded as parts.
    pub(super) fn fold_in_parts(&mut self, grain: u32) {
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
        crate::cpu::scatter::scatter(
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
}
