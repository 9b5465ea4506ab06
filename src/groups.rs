//! Collision groups: which pairs of bodies the steps and the event loop look at.

/// A body's collision groups: the groups it is a member of and the groups it interacts with
/// (its filter), 16 bits each, as rapier's `InteractionGroups` has them. A pair interacts
/// when each one's memberships meet the other's filter ([`interacts_with`](Self::interacts_with));
/// a pair that does not is never a candidate of a step's broad phase, nor a partner in the
/// event loop: no time is spent on it.
///
/// 16 bits of each, so that both fit in one 32-bit word (memberships in the low half, the
/// filter in the high half): the one spare word of the GPU's body record
/// ([`BodyRecord`](crate::layout::BodyRecord)), so that a body stays 32 bytes on the device.
///
/// The steps take the groups as a slice beside the bodies
/// ([`ContactFinder::set_groups`](crate::cpu::ContactFinder::set_groups),
/// [`ContactPipeline::set_groups`](crate::gpu::ContactPipeline::set_groups)); the event loop
/// as a field of each [`EventBody`](crate::events::EventBody). The default is [`ALL`](Self::ALL):
/// every body interacts with every other. Walls are not filtered, nor are the pairs a caller
/// names itself (the single-pair queries and the batches on explicit pairs).
///
/// Used by: the README's "Collision groups", `examples/bullets.rs`,
/// `mpi/examples/gas_across_ranks.rs` (its dust, `--groups`).
///
/// # Example
/// Bullets that pass through each other but hit the targets:
/// ```
/// use sweepcast::glam::Vec3;
/// use sweepcast::{cpu, CollisionGroups, MovingSphere, SweepOptions};
///
/// const BULLET: u16 = 1 << 0;
/// const TARGET: u16 = 1 << 1;
/// let bullet = CollisionGroups::new(BULLET, TARGET); // a bullet meets targets only
/// let target = CollisionGroups::new(TARGET, BULLET | TARGET);
/// assert!(!bullet.interacts_with(bullet));
/// assert!(bullet.interacts_with(target) && target.interacts_with(target));
///
/// // Two bullets crossing the same point, and a target in the path of the first.
/// let bodies = [
///     MovingSphere::new(Vec3::new(-5.0, 0.0, 0.0), 0.5, Vec3::new(10.0, 0.0, 0.0)),
///     MovingSphere::new(Vec3::new(0.0, -5.0, 0.0), 0.5, Vec3::new(0.0, 10.0, 0.0)),
///     MovingSphere::new(Vec3::new(4.0, 0.0, 0.0), 1.0, Vec3::ZERO),
/// ];
/// let mut finder = cpu::ContactFinder::new();
/// finder.set_groups(&[bullet, bullet, target]);
/// let contacts = finder.find(&bodies, SweepOptions::default())?;
/// let pairs: Vec<[u32; 2]> = contacts.contacts().iter().filter_map(|c| c.pair()).collect();
/// assert_eq!(pairs, [[0, 2]]); // the bullets' own meeting is not even a candidate
/// # Ok::<(), sweepcast::Error>(())
/// ```
#[repr(transparent)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CollisionGroups(u32);

impl CollisionGroups {
    /// Member of every group, interacting with every group: the default.
    ///
    /// Used by: the README's "Collision groups".
    pub const ALL: Self = Self(u32::MAX);
    /// Member of no group, interacting with none: such a body meets no other body (walls
    /// still).
    ///
    /// Used by: the README's "Collision groups".
    pub const NONE: Self = Self(0);

    /// The groups of a body that is a member of the groups whose bits are set in
    /// `memberships` and interacts with those whose bits are set in `filter`.
    ///
    /// Used by: the README's "Collision groups", `examples/bullets.rs`,
    /// `mpi/examples/gas_across_ranks.rs` (its dust, `--groups`), `python/src/lib.rs`
    /// (`collision_groups`).
    #[must_use]
    pub const fn new(memberships: u16, filter: u16) -> Self {
        Self(memberships as u32 | (filter as u32) << 16)
    }

    /// The groups the body is a member of.
    ///
    /// Used by: the README's "Collision groups".
    #[must_use]
    pub const fn memberships(self) -> u16 {
        self.0 as u16
    }

    /// The groups the body interacts with.
    ///
    /// Used by: the README's "Collision groups".
    #[must_use]
    pub const fn filter(self) -> u16 {
        (self.0 >> 16) as u16
    }

    /// The one word of both: memberships in the low 16 bits, the filter in the high 16.
    ///
    /// Used by: `docs/python.md` ("What it offers": `collision_groups`), `python/src/lib.rs`,
    /// `mpi/src/lib.rs` (a body's words as they travel).
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// From [`bits`](Self::bits).
    ///
    /// Used by: `examples/arrays.rs`, `python/src/input.rs`, `mpi/src/lib.rs`.
    #[must_use]
    pub const fn from_bits(bits: u32) -> Self {
        Self(bits)
    }

    /// Whether a pair of bodies of groups `self` and `other` interacts: each one's
    /// memberships meet the other's filter (rapier's rule). Symmetric.
    ///
    /// Used by: the README's "Collision groups" (the rule it states).
    #[must_use]
    pub const fn interacts_with(self, other: Self) -> bool {
        self.memberships() & other.filter() != 0 && other.memberships() & self.filter() != 0
    }
}

impl Default for CollisionGroups {
    /// [`CollisionGroups::ALL`].
    fn default() -> Self {
        Self::ALL
    }
}

/// Whether bodies `a` and `b` of a step with per-body `groups` (empty: every pair interacts)
/// interact.
#[inline(always)]
pub(crate) fn interact(groups: &[CollisionGroups], a: usize, b: usize) -> bool {
    groups.is_empty() || groups[a].interacts_with(groups[b])
}

#[cfg(test)]
mod tests {
    use super::CollisionGroups;

    #[test]
    fn fields_round_trip_and_the_rule_is_rapiers() {
        let groups = CollisionGroups::new(0x1234, 0xabcd);
        assert_eq!((groups.memberships(), groups.filter()), (0x1234, 0xabcd));
        assert_eq!(CollisionGroups::from_bits(groups.bits()), groups);
        assert_eq!(CollisionGroups::default(), CollisionGroups::ALL);
        let a = CollisionGroups::new(0b01, 0b10);
        let b = CollisionGroups::new(0b10, 0b01);
        assert!(a.interacts_with(b) && b.interacts_with(a));
        assert!(!a.interacts_with(a));
        // One way is not enough: b' is in a's filter, but a is not in b''s.
        let b_one_way = CollisionGroups::new(0b10, 0b100);
        assert!(!a.interacts_with(b_one_way) && !b_one_way.interacts_with(a));
        assert!(!CollisionGroups::NONE.interacts_with(CollisionGroups::ALL));
    }
}
