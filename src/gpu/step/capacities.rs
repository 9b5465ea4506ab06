//! What the step's buffers hold besides the bodies.

/// What a [`StepBuffers`](super::StepBuffers) holds besides the bodies: the ordered contacts, when asked.
/// [`StepStage::grow`](super::StepStage::grow) raises them from a step's
/// [`StepCounts`](crate::gpu::StepCounts). The other fields are the
/// capacities of the tree the step ran before the grid, kept so that code which names them
/// still compiles: the grid has no candidate buffer and no saved queries, and ignores them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StepCapacities {
    /// Unused since the grid (it has no candidate buffer).
    pub candidates: u64,
    /// Ordered contacts (the listed hit, 40 bytes; the contact, 64 bytes, twice; two sort
    /// records), when asked.
    pub contacts: u64,
    /// Unused since the grid (it saves no queries).
    pub saved_queries: u64,
    /// Unused since the grid (it resumes no queries).
    pub resume_passes: u32,
}

impl Default for StepCapacities {
    /// 16,384 contacts (and the unused fields as they were: 16,384 candidates, 1,024 saved
    /// queries, 2 resume dispatches).
    fn default() -> Self {
        Self {
            candidates: 1 << 14,
            contacts: 1 << 14,
            saved_queries: 1024,
            resume_passes: 2,
        }
    }
}

impl StepCapacities {
    /// Capacities that fit a typical scene of `bodies` bodies without a rerun: 2 contacts a
    /// body (the test scenes have 0.8 uniformly spread, 1.4 clustered; 5.5 with radii spread
    /// 100-fold, which grow once), at least the defaults.
    #[must_use]
    pub fn for_bodies(bodies: u64) -> Self {
        let default = Self::default();
        Self {
            candidates: default.candidates.max(bodies.saturating_mul(4)),
            contacts: default.contacts.max(bodies.saturating_mul(2)),
            ..default
        }
    }

    /// Each capacity the larger of the two.
    #[must_use]
    pub fn max(self, other: Self) -> Self {
        Self {
            candidates: self.candidates.max(other.candidates),
            contacts: self.contacts.max(other.contacts),
            saved_queries: self.saved_queries.max(other.saved_queries),
            resume_passes: self.resume_passes.max(other.resume_passes),
        }
    }
}
