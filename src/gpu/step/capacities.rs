//! What the step's buffers hold besides the bodies.

/// What a [`StepBuffers`](super::StepBuffers) holds besides the bodies: the ordered contacts,
/// when asked, and the walks past their budget that the grid saves and resumes.
/// [`StepStage::grow`](super::StepStage::grow) raises them from a step's
/// [`StepCounts`](crate::low_level::layout::StepCounts); [`ContactPipeline::with_capacities`](crate::gpu::ContactPipeline::with_capacities)
/// starts from them.
///
/// Used by: `docs/step.md` ("Resident on the device: the step stage"), `examples/resident_step.rs`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StepCapacities {
    /// Ordered contacts (the listed hit, 40 bytes; the contact, 64 bytes, twice; two sort
    /// records), when asked.
    pub contacts: u64,
    /// Walks past their budget each chain of walks (the gathers', the partners') may save for
    /// a resume (64 bytes each); one that finds no slot makes the step invalid
    /// (`saved_queries_overflowed`), and `grow` doubles it.
    pub saved_queries: u64,
    /// Resumes recorded after each chain of walks (each one dispatch, of one invocation a
    /// saved walk; one is two dispatches a step more); a walk still past its budget after the
    /// last makes the step invalid (`unfinished_queries`), and `grow` doubles them, up to
    /// 16 ([`GRID_MAX_RESUME_PASSES`](crate::low_level::grid::GRID_MAX_RESUME_PASSES)).
    pub resume_passes: u32,
}

impl Default for StepCapacities {
    /// 16,384 contacts, 1,024 saved walks a chain, one resume.
    fn default() -> Self {
        Self {
            contacts: 1 << 14,
            saved_queries: u64::from(crate::cpu::grid::GRID_SAVED_WALKS),
            resume_passes: crate::cpu::grid::GRID_RESUME_PASSES,
        }
    }
}

impl StepCapacities {
    /// Capacities that fit a typical scene of `bodies` bodies without a rerun: 2 contacts a
    /// body (the test scenes have 0.8 uniformly spread, 1.4 clustered; 5.5 with radii spread
    /// 100-fold, which grow once), at least the defaults.
    ///
    /// Used by: `docs/step.md` ("On the GPU").
    #[must_use]
    pub fn for_bodies(bodies: u64) -> Self {
        let default = Self::default();
        Self {
            contacts: default.contacts.max(bodies.saturating_mul(2)),
            ..default
        }
    }

    /// Each capacity the larger of the two.
    #[must_use]
    pub(crate) fn max(self, other: Self) -> Self {
        Self {
            contacts: self.contacts.max(other.contacts),
            saved_queries: self.saved_queries.max(other.saved_queries),
            resume_passes: self.resume_passes.max(other.resume_passes),
        }
    }
}
