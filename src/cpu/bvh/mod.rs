//! The CPU broad phase: a linear BVH (Karras 2012, "Maximizing parallelism in the
//! construction of BVHs, octrees, and k-d trees") over the bodies' swept boxes, queried by
//! sixteen neighbouring bodies at a time (and once per image in a periodic box) for the
//! candidate pairs of the step.
//!
//! 1. **Swept boxes.** Each body's box holds its sphere at the start and at the end of the
//!    step, and so the whole swept volume (the box is convex). It is widened by a margin
//!    ([`margin`](crate::cpu::frame::margin)) so that every pair the f32 sweep can
//!    call a hit is a candidate.
//! 2. **Morton codes.** The boxes' centres, quantised to 21 bits per axis over their bounds,
//!    interleaved into a 63-bit code; sorted with the body index as the tie-break, so that
//!    equal codes (bodies in one point, say) still give distinct, ordered keys.
//! 3. **Hierarchy.** Karras's binary tree, built in one pass over the sorted keys, in runs
//!    on all cores ([`Bvh::link`]: the same tree as Karras's per-node construction, to which
//!    a test holds it), with each node's box made as the pass completes it.
//! 4. **Four-wide nodes.** The binary tree is folded into one of four children a node (a
//!    node's child that is a node gives way to its own children, the widest first, until
//!    there are four): each node holds its children's boxes, laid out so that the four box
//!    tests are a few four-lane compares (128 bytes a node), the top of the tree first,
//!    then its lower subtrees one after another, each depth first. A leaf
//!    names its body.
//! 5. **Queries.** Each body's pairs are found from the body that sorts first only: a child
//!    whose last sorted leaf comes before the body's own is skipped, so the query only visits
//!    the part of the tree after it. Sixteen neighbouring sorted bodies descend together
//!    ([`Packet`](queries::Packet)): the nodes are tested against the union of their
//!    boxes, and each leaf reached against all sixteen boxes in four four-lane tests. The
//!    union visits a few times the nodes one body's box would, once for sixteen bodies.
//!
//! Why a BVH: its size and query cost do not depend on the bodies' sizes (radii 100× apart
//! share one tree, where a uniform grid needs one cell size), and it adapts to clusters
//! (the codes are quantised over the boxes' own bounds). Its worst cases: bodies that all
//! overlap (every pair is an answer, so the work is the output), and a tight cluster inside a
//! scene some 2²¹ times larger, whose bodies then share one code and are split by index, not
//! by position (the queries stay correct but visit more of the cluster's nodes).
//!
//! The boxes are made in a local frame: each centre less an origin near the bodies
//! (`local_origin` in `src/cpu/frame.rs`), so that their corners round at the scene's size,
//! however far it lies from the world's origin. In a periodic box that difference is
//! wrapped into `[0, L)`, and each query is repeated with its box shifted by one period
//! along each axis where the shifted box still meets the tree's bounds. Only one image of a
//! partner can be in reach ([`crate::PeriodicBox`]), but widened boxes at the limit of the
//! reach rule, or bodies far outside the box (whose margins grow with their coordinates),
//! may meet through several images: such a pair is found once per image, and the caller
//! drops the duplicates.

// The files: the tree's types and memory in tree.rs, steps 1 to 3 in build.rs, step 4 in
// fold.rs, step 5 in queries.rs, and the tests in tests.rs.
mod build;
mod fold;
mod queries;
#[cfg(test)]
mod tests;
mod tree;

pub(crate) use queries::PACKET;
pub(crate) use tree::Bvh;
