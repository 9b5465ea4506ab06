//! The tree's tests: its binary tree against Karras's node-by-node construction, its queries
//! against every meeting pair, deep trees, and the code sort.

use super::build::sort_by_code;
use super::queries::{PACKET, Packet};
use super::tree::{Aabb, Bvh, Limits, MAX_DEPTH};
use crate::layout::LEAF;

/// An internal node of Karras's tree: its two children (a node's index, or [`LEAF`] with a
/// sorted position) and the last sorted leaf under each.
struct KarrasNode {
    child: [u32; 2],
    last: [u32; 2],
}

/// Karras's nodes over sorted `keys` (a 63-bit code, then the body), built node by node as
/// Karras 2012 does (the GPU's `hierarchy` did so until the step moved to its grid): node
/// `i`'s range by a doubling search and a binary search on common prefixes of the 95-bit
/// keys, and where it splits. The reference that [`Bvh::link`]'s one pass is held to.
fn karras(keys: &[(u64, u32)]) -> Vec<KarrasNode> {
    let n = keys.len() as i32;
    // The common prefix of the keys at i and j (the code's top bit is always 0), or -1
    // where j is outside the leaves.
    let delta = |i: i32, j: i32| {
        if j < 0 || j >= n {
            return -1;
        }
        let (a, b) = (keys[i as usize], keys[j as usize]);
        if a.0 == b.0 {
            63 + (a.1 ^ b.1).leading_zeros() as i32
        } else {
            (a.0 ^ b.0).leading_zeros() as i32 - 1
        }
    };
    (0..n - 1)
        .map(|at| {
            let direction = if delta(at, at + 1) > delta(at, at - 1) {
                1
            } else {
                -1
            };
            let prefix_min = delta(at, at - direction);
            let mut length_max = 2;
            while delta(at, at + length_max * direction) > prefix_min {
                length_max *= 2;
            }
            let mut length = 0;
            let mut step = length_max / 2;
            while step >= 1 {
                if delta(at, at + (length + step) * direction) > prefix_min {
                    length += step;
                }
                step /= 2;
            }
            let other_end = at + length * direction;
            let prefix_node = delta(at, other_end);
            let mut split = 0;
            let mut divisor = 2;
            loop {
                let split_step = (length + divisor - 1) / divisor;
                if delta(at, at + (split + split_step) * direction) > prefix_node {
                    split += split_step;
                }
                if split_step <= 1 {
                    break;
                }
                divisor *= 2;
            }
            let gamma = at + split * direction + direction.min(0);
            let (first, last) = (at.min(other_end), at.max(other_end));
            let leaf_if = |is_leaf: bool, index: i32| index as u32 | if is_leaf { LEAF } else { 0 };
            KarrasNode {
                child: [
                    leaf_if(first == gamma, gamma),
                    leaf_if(last == gamma + 1, gamma + 1),
                ],
                last: [gamma as u32, last as u32],
            }
        })
        .collect()
}

/// The query of `packet` on every path this CPU has (plain, and with AVX where it has
/// it), which must report the same leaves and members in the same order; `found` gets
/// the plain path's.
fn descend_each(bvh: &Bvh, packet: &Packet, stack: &mut Vec<u32>, mut found: impl FnMut(u32, u32)) {
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
