//! The whole collision step on the CPU, from the bodies alone: the broad phase ([`bvh`]),
//! the time of impact of every candidate pair on lanes, a sort of the hits by time ([`sort`]),
//! the full answer of each hit in that order ([`World::sweep_into`]), and the step's
//! contacts, earliest impact per body and earliest contact.
//!
//! [`bvh`]: super::bvh
//! [`sort`]: super::sort

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::par::{self, prelude::*};

use glam::Vec3;

use super::bvh::{Bvh, PACKET};
use super::memory::bytes;
use super::sort::{Key, Sorting, Task, key, pair_of, sort_keys};
use super::sweep::nearest_image;
use super::{World, wall_contacts_into, wall_records_into};
use crate::answers::{EarliestImpact, TimeOfImpact};
use crate::contact_step::{Contact, Contacts, Earliest, StageTimes};
use crate::error::{Counted, Error};
use crate::geometry::{MovingSphere, Wall};
use crate::groups::CollisionGroups;
use crate::layout::{FLAG_PERIODIC, WallRecord};
use crate::options::SweepOptions;
use crate::validate::check_length;

/// The most sorted leaves per rayon task of the queries and the narrow phase (a multiple of
/// [`PACKET`]).
const TASK_BODIES: usize = 2048;
/// The fewest sorted leaves per task (a multiple of [`PACKET`]).
const MIN_TASK_BODIES: usize = 128;
const _: () = assert!(TASK_BODIES.is_multiple_of(PACKET) && MIN_TASK_BODIES.is_multiple_of(PACKET));

/// The step's memory, kept from step to step: a [`World`] of the bodies, the broad phase's
/// tree and per-task candidate lists, and the [`Contacts`].
///
/// Used by: the README's "Collision groups", `examples/bullets.rs`, `examples/gas.rs` (`--cpu`).
///
/// # Example
/// ```
/// use sweepcast::glam::Vec3;
/// use sweepcast::{cpu, MovingSphere, SweepOptions};
///
/// let bodies = [
///     MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(10.0, 0.0, 0.0)),
///     MovingSphere::new(Vec3::new(5.0, 0.0, 0.0), 1.0, Vec3::ZERO),
///     MovingSphere::new(Vec3::new(0.0, 50.0, 0.0), 1.0, Vec3::ZERO),
/// ];
/// let mut finder = cpu::ContactFinder::new();
/// let contacts = finder.find(&bodies, SweepOptions::default())?;
/// assert_eq!(contacts.contacts().len(), 1);
/// let first = contacts.contacts().first().expect("bodies 0 and 1 meet");
/// assert_eq!(first.pair(), Some([0, 1]));
/// assert_eq!(first.impact.time_of_impact, 0.3);
/// assert_eq!(contacts.earliest_of(1).and_then(|c| c.pair()), Some([0, 1]));
/// assert!(contacts.earliest_of(2).is_none());
/// # Ok::<(), sweepcast::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ContactFinder {
    world: World,
    bvh: Bvh,
    tasks: Vec<Task>,
    /// The memory of the contacts' sort ([`sort_keys`]).
    sorting: Sorting,
    /// Per body, the index of its first contact in order and its partner there, as
    /// `index << 32 | partner` (`u64::MAX` for none).
    first: Scratch,
    /// The step's walls, as their records.
    walls: Vec<WallRecord>,
    contacts: Contacts,
    stage_times: StageTimes,
    max_output_bytes: MaxOutputBytes,
    /// Per body, its collision groups; empty where every pair interacts.
    groups: Vec<CollisionGroups>,
}

/// A [`ContactFinder`]'s limit on its output, from 1 to [`MAX_OUTPUT_BYTES`](ContactFinder::MAX_OUTPUT_BYTES).
#[derive(Copy, Clone, Debug)]
struct MaxOutputBytes(usize);

impl Default for MaxOutputBytes {
    fn default() -> Self {
        Self(ContactFinder::DEFAULT_MAX_OUTPUT_BYTES)
    }
}

/// The bytes of a step's output found so far, shared by the query tasks, which add to it as
/// they go and stop once it passes the limit.
struct OutputBudget {
    spent: AtomicU64,
    limit: u64,
}

impl OutputBudget {
    fn new(limit: usize) -> Self {
        Self {
            spent: AtomicU64::new(0),
            limit: limit as u64,
        }
    }

    /// Counts `count` more items of `bytes` each; whether the output is still within the limit.
    fn spend(&self, count: usize, bytes: usize) -> bool {
        let more = count as u64 * bytes as u64;
        self.spent.fetch_add(more, Ordering::Relaxed) + more <= self.limit
    }

    /// Whether the output has passed the limit.
    fn exceeded(&self) -> bool {
        self.spent.load(Ordering::Relaxed) > self.limit
    }
}

// The CPU step through the trait both steps share, with the finder's output limit lowered to
// `max_bytes` for a bounded step; the pairs read from the finder's own contacts, whose memory
// it keeps.
crate::contact_step::contact_step_by_inherent!(ContactFinder, ContactFinder, {
    fn find_within_into(
        &mut self,
        bodies: &[MovingSphere],
        options: SweepOptions,
        max_bytes: usize,
        out: &mut Contacts,
    ) -> Result<(), Error> {
        self.within(max_bytes, |finder| {
            ContactFinder::find_into(finder, bodies, &[], options, out)
        })
    }

    fn contact_pairs_within(
        &mut self,
        bodies: &[MovingSphere],
        options: SweepOptions,
        max_bytes: usize,
        pairs: &mut Vec<[u32; 2]>,
    ) -> Result<usize, Error> {
        self.within(max_bytes, |finder| {
            let contacts = finder.find_with_walls(bodies, &[], options)?;
            Ok(contacts.pairs_into(pairs))
        })
    }
});

impl ContactFinder {
    /// `step` run with the output limit lowered to `max_bytes` (at least 1), the finder's own
    /// limit put back after it.
    fn within<T>(&mut self, max_bytes: usize, step: impl FnOnce(&mut Self) -> T) -> T {
        let own = self.max_output_bytes;
        self.max_output_bytes = MaxOutputBytes(own.0.min(max_bytes.max(1)));
        let found = step(self);
        self.max_output_bytes = own;
        found
    }

    /// The most bodies a step may hold: the tree's references keep one bit for leaves.
    ///
    /// Used by: `docs/step.md` ("On the CPU"), `python/src/lib.rs` (`collision_groups`).
    pub const MAX_BODIES: usize = MAX_BODIES;
    /// The limit on a step's output that [`find_contacts`] and a new finder keep: 2 GiB, some
    /// 77 million candidates with no contact or 17 million that are all contacts.
    ///
    /// Used by: `docs/step.md` ("On the CPU"), `docs/guarantees.md` ("Bad input").
    pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1 << 31;
    /// The highest limit on a step's output: the bytes of 2³² − 1 contacts (the step numbers
    /// them in 32 bits), or all of memory where that is less.
    ///
    /// Used by: `docs/step.md` ("On the CPU").
    pub const MAX_OUTPUT_BYTES: usize = {
        let contacts = u32::MAX as u64 * Self::OUTPUT_BYTES_PER_CONTACT as u64;
        if contacts < usize::MAX as u64 {
            contacts as usize
        } else {
            usize::MAX
        }
    };
    /// Bytes a candidate pair holds, as [`with_max_output_bytes`](Self::with_max_output_bytes)
    /// counts them: the pair (8), its time of impact (4) and the room for its key (16).
    ///
    /// Used by: `docs/step.md` ("On the CPU").
    pub const OUTPUT_BYTES_PER_CANDIDATE: usize =
        size_of::<[u32; 2]>() + size_of::<f32>() + size_of::<Key>();
    /// Bytes a contact holds besides its candidate's, as
    /// [`with_max_output_bytes`](Self::with_max_output_bytes) counts them: its bucket in the
    /// sort (2), its key in bucket order (16) and the [`Contact`].
    ///
    /// Used by: `docs/step.md` ("On the CPU").
    pub const OUTPUT_BYTES_PER_CONTACT: usize =
        size_of::<u16>() + size_of::<Key>() + size_of::<Contact>();

    /// A finder with no memory yet, whose steps' output may take up to
    /// [`DEFAULT_MAX_OUTPUT_BYTES`](ContactFinder::DEFAULT_MAX_OUTPUT_BYTES).
    ///
    /// Used by: the README's "Collision groups", `examples/bullets.rs`, `examples/gas.rs`
    /// (`--cpu`), `python/src/events.rs` (`broad_phase="cpu"`).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Limits the memory of each step's output: its candidate pairs
    /// ([`OUTPUT_BYTES_PER_CANDIDATE`](ContactFinder::OUTPUT_BYTES_PER_CANDIDATE) each) and contacts ([`OUTPUT_BYTES_PER_CONTACT`](ContactFinder::OUTPUT_BYTES_PER_CONTACT) each
    /// besides). The queries count their pairs as they append them, and every query stops
    /// soon after the count passes the limit (within some 16,000 pairs a thread), so that a
    /// step whose bodies all overlap returns [`Error::OutputLimit`] rather than exhausting
    /// memory; the finder then releases that memory and stays usable.
    ///
    /// Any value is accepted: 0 counts as 1 and values above [`MAX_OUTPUT_BYTES`](ContactFinder::MAX_OUTPUT_BYTES) as that.
    /// The step's vectors grow by doubling, so its memory may reach about twice the limit,
    /// besides what each body holds (see [`memory_bytes`](Self::memory_bytes)).
    ///
    /// Used by: `docs/step.md` ("On the CPU"), `docs/guarantees.md` ("Guarantees" and "Bad input").
    ///
    /// # Example
    /// ```
    /// use sweepcast::glam::Vec3;
    /// use sweepcast::{cpu, Counted, Error, MovingSphere, SweepOptions};
    ///
    /// // 1,000 bodies in one place: all 499,500 pairs are contacts.
    /// let pile = vec![MovingSphere::new(Vec3::ZERO, 1.0, Vec3::ZERO); 1000];
    /// let mut finder = cpu::ContactFinder::new().with_max_output_bytes(1 << 20);
    /// match finder.find(&pile, SweepOptions::default()) {
    ///     Err(Error::OutputLimit { what: Counted::Candidates, at_least, at_least_bytes, .. }) => {
    ///         assert!(at_least <= 499_500 && at_least_bytes > 1 << 20);
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok::<(), sweepcast::Error>(())
    /// ```
    #[must_use]
    pub fn with_max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = MaxOutputBytes(bytes.clamp(1, ContactFinder::MAX_OUTPUT_BYTES));
        self
    }

    /// Sets the bodies' collision groups for the next steps, one a body in the order of the
    /// bodies (copied): a pair whose groups do not interact
    /// ([`CollisionGroups::interacts_with`]) is never a candidate, so it costs no sweep and
    /// is never a contact. Empty, the default, lets every pair interact. Walls are not
    /// filtered. See [`CollisionGroups`] for an example.
    ///
    /// A step whose bodies are not as many as the groups (and the groups not empty) is
    /// [`Error::GroupsLength`].
    ///
    /// Used by: the README's "Collision groups", `examples/bullets.rs`,
    /// `mpi/examples/gas_across_ranks.rs`, `python/src/step.rs`.
    pub fn set_groups(&mut self, groups: &[CollisionGroups]) {
        self.groups.clear();
        self.groups.extend_from_slice(groups);
    }

    /// Puts `groups` in place of the finder's own, which it returns (the event loop's broad
    /// phase).
    pub(crate) fn swap_groups(&mut self, groups: Vec<CollisionGroups>) -> Vec<CollisionGroups> {
        std::mem::replace(&mut self.groups, groups)
    }

    /// The limit on each step's output, in bytes ([`with_max_output_bytes`](Self::with_max_output_bytes)).
    ///
    /// Used by: `docs/step.md` ("On the CPU": the limit in force).
    #[must_use]
    pub fn max_output_bytes(&self) -> usize {
        self.max_output_bytes.0
    }

    /// The contacts of the step of `bodies` with `options`: see [`find_contacts`].
    ///
    /// Used by: the README's "Collision groups", `examples/bullets.rs`, `examples/step_bench.rs`.
    ///
    /// # Errors
    /// As [`find_contacts`], with this finder's limit on the output
    /// ([`with_max_output_bytes`](Self::with_max_output_bytes)), and
    /// [`Error::GroupsLength`] where [`set_groups`](Self::set_groups) gave groups for another
    /// number of bodies; the previous step's contacts are cleared.
    pub fn find<B>(&mut self, bodies: &[B], options: SweepOptions) -> Result<&Contacts, Error>
    where
        B: Copy + Into<MovingSphere>,
    {
        self.find_with_walls(bodies, &[], options)
    }

    /// The contacts of the step of `bodies` with `options` and `walls`, as
    /// [`find_with_walls`](Self::find_with_walls) gives them, into `out`: the calling
    /// convention the CPU finder and the GPU pipeline
    /// ([`ContactPipeline::find_into`](crate::gpu::ContactPipeline::find_into)) share. The
    /// finder and `out` trade their memory, so that neither allocates once both have grown.
    ///
    /// Used by: `docs/python.md` ("What it offers": `find_contacts`), `examples/arrays.rs`,
    /// `python/src/step.rs`.
    ///
    /// # Errors
    /// As [`find_with_walls`](Self::find_with_walls); `out` is then left empty.
    pub fn find_into<B>(
        &mut self,
        bodies: &[B],
        walls: &[Wall],
        options: SweepOptions,
        out: &mut Contacts,
    ) -> Result<(), Error>
    where
        B: Copy + Into<MovingSphere>,
    {
        let found = self.find_with_walls(bodies, walls, options).map(|_| ());
        std::mem::swap(&mut self.contacts, out);
        if found.is_err() {
            out.refill(0);
        }
        found
    }

    /// Each body's earliest contact in the step, with a body or a wall, into `out`
    /// ([`Contacts::earliest_impacts`]): the shared convention, as
    /// [`ContactPipeline::find_earliest_into`](crate::gpu::ContactPipeline::find_earliest_into)
    /// on the GPU.
    ///
    /// Used by: `docs/step.md` ("Resident on the device: the step stage", beside the GPU's).
    ///
    /// # Errors
    /// As [`find_with_walls`](Self::find_with_walls); `out` is then left empty.
    pub fn find_earliest_into<B>(
        &mut self,
        bodies: &[B],
        walls: &[Wall],
        options: SweepOptions,
        out: &mut Vec<Option<EarliestImpact>>,
    ) -> Result<(), Error>
    where
        B: Copy + Into<MovingSphere>,
    {
        out.clear();
        let contacts = self.find_with_walls(bodies, walls, options)?;
        out.extend(contacts.earliest_impacts());
        Ok(())
    }

    /// The contacts of the step of `bodies` with `options`, as [`find`](Self::find) gives
    /// them, and each body's earliest impact on `walls`, static segments and planes
    /// ([`Contacts::earliest_walls`]; empty without walls). The walls are a short list: each
    /// body is swept against every one.
    ///
    /// Used by: `docs/guide.md` ("Walls: segments and planes"), `examples/resident_step.rs`
    /// (`--check`), `mpi/examples/gas_across_ranks.rs` (`--check`).
    ///
    /// # Example
    /// ```
    /// use sweepcast::glam::{Vec2, Vec3};
    /// use sweepcast::{cpu, MovingCircle, SweepOptions, Wall};
    ///
    /// let table = Wall::rectangle_interior(Vec2::ZERO, Vec2::new(20.0, 10.0));
    /// let balls = [
    ///     MovingCircle::new(Vec2::new(10.0, 5.0), 1.0, Vec2::new(12.0, 0.0)),
    ///     MovingCircle::new(Vec2::new(14.0, 5.0), 1.0, Vec2::ZERO),
    /// ];
    /// let mut finder = cpu::ContactFinder::new();
    /// let contacts = finder.find_with_walls(&balls, &table, SweepOptions::default())?;
    /// assert_eq!(contacts.contacts().first().map(|c| c.impact.time_of_impact), Some(1.0 / 6.0));
    /// assert_eq!(contacts.earliest_walls()[0].and_then(|w| w.wall()), Some(1)); // x = 20, at 0.75
    /// assert!(contacts.earliest_walls()[1].is_none());
    /// # Ok::<(), sweepcast::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`find`](Self::find), and [`Error::InvalidWall`] for a bad wall.
    pub fn find_with_walls<B>(
        &mut self,
        bodies: &[B],
        walls: &[Wall],
        options: SweepOptions,
    ) -> Result<&Contacts, Error>
    where
        B: Copy + Into<MovingSphere>,
    {
        self.contacts.contacts.clear();
        self.contacts.earliest.clear();
        self.contacts.walls.clear();
        self.contacts.candidates = 0;
        wall_records_into(walls, &mut self.walls)?;
        check_length(&self.groups, bodies.len())?;
        if bodies.len() > MAX_BODIES {
            return Err(Error::TooManyBodies {
                count: bodies.len(),
                max: MAX_BODIES,
            });
        }
        let start = Instant::now();
        self.world.update(bodies, options)?;
        // The rest on one of rayon's threads: each parallel stage below then splits from
        // within the pool, rather than handing its work to the pool and waiting for it.
        par::scope(|_| self.find_in_pool(start))?;
        if !walls.is_empty() {
            wall_contacts_into(
                self.world.bodies(),
                &self.walls,
                &options,
                &mut self.contacts.walls,
            );
        }
        Ok(&self.contacts)
    }

    /// The stages of [`find`](Self::find) after the world's update (at `start`); an
    /// [`Error::OutputLimit`] as soon as the output passes the limit.
    fn find_in_pool(&mut self, start: Instant) -> Result<(), Error> {
        let validated = Instant::now();
        self.bvh.build(self.world.bodies(), &self.world.params);
        self.bvh.set_groups(&self.groups);
        let built = Instant::now();
        // At least eight tasks a thread where the bodies allow, so that a small step keeps
        // every core busy to its end.
        let task_bodies = (self.bvh.len() / (8 * par::current_num_threads()))
            .next_multiple_of(PACKET)
            .clamp(MIN_TASK_BODIES, TASK_BODIES);
        let task_count = self.bvh.len().div_ceil(task_bodies);
        self.tasks
            .resize_with(task_count.max(self.tasks.len()), Task::default);
        let (world, bvh, groups) = (&self.world, &self.bvh, self.groups.as_slice());
        let budget = OutputBudget::new(self.max_output_bytes.0);
        let go_on = |pairs: usize| budget.spend(pairs, ContactFinder::OUTPUT_BYTES_PER_CANDIDATE);
        self.tasks[..task_count]
            .par_iter_mut()
            .enumerate()
            .for_each(|(index, task)| {
                task.pairs.clear();
                task.keys.clear();
                let end = ((index + 1) * task_bodies).min(bvh.len());
                for first in (index * task_bodies..end).step_by(PACKET) {
                    if budget.exceeded()
                        || !bvh.candidates_from(
                            first,
                            groups,
                            &mut task.stack,
                            &mut task.pairs,
                            &go_on,
                        )
                    {
                        return;
                    }
                }
                if budget.exceeded() {
                    return;
                }
                world
                    .exact_times_into(&task.pairs, &mut task.times)
                    .expect("the tree holds only the world's bodies");
                keys_of_hits(&task.pairs, &task.times, &mut task.keys);
                budget.spend(task.keys.len(), ContactFinder::OUTPUT_BYTES_PER_CONTACT);
            });
        if budget.exceeded() {
            let error = self.output_limit(task_count);
            // The output of a step that could not finish is no use to the next: let it go.
            self.tasks.clear();
            return Err(error);
        }
        let swept = Instant::now();
        self.contacts.candidates = self.tasks[..task_count]
            .iter()
            .map(|task| task.pairs.len())
            .sum();
        // In a periodic box, two bodies whose boxes together span a whole period (each
        // within a hair of the reach rule's quarter period, widened by the margin) meet
        // through two images and are found twice. Their sweeps are the same, so their keys
        // are equal and, ordered, side by side: keep one. (Without a box each pair is found
        // once.)
        let periodic = self.world.params.flags & FLAG_PERIODIC != 0;
        sort_keys(&mut self.tasks[..task_count], &mut self.sorting, periodic);
        let first = &mut self.first.0;
        first.clear();
        first.par_extend(
            (0..self.world.len())
                .into_par_iter()
                .map(|_| AtomicU64::new(u64::MAX)),
        );
        write_contacts(
            &self.world,
            &self.sorting,
            first,
            &mut self.contacts.contacts,
        );
        earliest_per_body(first, &mut self.contacts.earliest);
        self.stage_times.clear();
        self.stage_times.push("validate", validated - start);
        self.stage_times.push("build", built - validated);
        self.stage_times.push("candidates_and_sweep", swept - built);
        self.stage_times.push("order", swept.elapsed());
        Ok(())
    }

    /// The [`Error::OutputLimit`] of a step stopped at the limit, from what its first
    /// `task_count` tasks found: every pair they appended, and the hits of those that
    /// finished their narrow phase.
    fn output_limit(&self, task_count: usize) -> Error {
        let tasks = &self.tasks[..task_count];
        let candidates: usize = tasks.iter().map(|task| task.pairs.len()).sum();
        let contacts: usize = tasks.iter().map(|task| task.keys.len()).sum();
        let candidate_bytes = candidates.saturating_mul(ContactFinder::OUTPUT_BYTES_PER_CANDIDATE);
        let limit_bytes = self.max_output_bytes.0;
        let (what, at_least) = if candidate_bytes > limit_bytes {
            (Counted::Candidates, candidates)
        } else {
            (Counted::Contacts, contacts)
        };
        Error::OutputLimit {
            what,
            at_least,
            at_least_bytes: candidate_bytes
                .saturating_add(contacts.saturating_mul(ContactFinder::OUTPUT_BYTES_PER_CONTACT)),
            limit_bytes,
        }
    }

    /// The time each stage of the last [`find`](Self::find) took: `validate` (validating and
    /// packing the bodies), `build` (the tree: swept boxes, Morton codes, sort, hierarchy and
    /// its boxes), `candidates_and_sweep` (each body's query and the times of impact of its
    /// candidates) and `order` (the hits' keys sorted, the full answers in order, the earliest
    /// contact per body).
    ///
    /// Used by: `docs/step.md` ("On the CPU"), `examples/bullets.rs`, `examples/step_bench.rs`.
    #[must_use]
    pub fn stage_times(&self) -> StageTimes {
        self.stage_times.clone()
    }

    /// The bytes of memory the finder holds (its vectors' capacities), which it keeps from
    /// step to step.
    ///
    /// Used by: `docs/step.md` ("On the CPU"), `examples/step_bench.rs`.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        let tasks: usize = self
            .tasks
            .iter()
            .map(|task| {
                bytes(&task.stack)
                    + bytes(&task.pairs)
                    + bytes(&task.times)
                    + bytes(&task.keys)
                    + bytes(&task.buckets)
                    + bytes(&task.places)
            })
            .sum();
        self.world.memory_bytes()
            + self.bvh.memory_bytes()
            + tasks
            + bytes(&self.sorting.sample)
            + bytes(&self.sorting.splitters.bounds)
            + bytes(&self.sorting.splitters.cells)
            + bytes(&self.sorting.splitters.padded)
            + bytes(&self.sorting.starts)
            + bytes(&self.sorting.unordered)
            + bytes(&self.sorting.kept)
            + bytes(&self.first.0)
            + bytes(&self.contacts.contacts)
            + bytes(&self.contacts.earliest)
            + bytes(&self.walls)
            + bytes(&self.contacts.walls)
            + bytes(&self.groups)
    }
}

/// Atomics rebuilt every step, which a clone of the finder leaves behind.
#[derive(Debug, Default)]
struct Scratch(Vec<AtomicU64>);

impl Clone for Scratch {
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// The [`Key`] of each hit among `pairs` and their `times`, in order, into `keys`: as
/// `filter_map` over [`TimeOfImpact::time`] would give them, but with every key written and
/// the count moving past the hits, where a branch a pair (about half of the candidates hit)
/// would be a guess.
fn keys_of_hits(pairs: &[[u32; 2]], times: &[TimeOfImpact], keys: &mut Vec<Key>) {
    keys.clear();
    keys.reserve(pairs.len());
    let spare = &mut keys.spare_capacity_mut()[..pairs.len()];
    let mut count = 0;
    for (&pair, time) in pairs.iter().zip(times) {
        // An overlap (below 0) reports time 0; a miss is above 1 (or NaN).
        let raw = time.0;
        let time = if raw < 0.0 { 0.0 } else { raw };
        spare[count].write(key(time, pair));
        count += usize::from(raw <= 1.0);
    }
    // SAFETY: the first `count` places were written (each when the count moved past it).
    unsafe { keys.set_len(count) };
}

/// Contacts per batch of [`write_contacts`]'s second sweep: its pairs and impacts stay in
/// the core's L1 cache.
const SWEEP_CHUNK: usize = 256;

/// The contacts of the keys that `sorting` holds in order, written into `contacts`, and
/// each body's first contact among them into `first`, with its partner there (an atomic
/// minimum of `index << 32 | partner`, whose index decides: each contact has its own;
/// `u64::MAX` where it starts). Each bucket, in parallel, sweeps its pairs again in batches, now for the
/// whole answer ([`World::sweep_into`], the same lanes with the same operations, so the
/// same time), and writes their contacts once, in order, where the bucket's span begins.
fn write_contacts(
    world: &World,
    sorting: &Sorting,
    first: &[AtomicU64],
    contacts: &mut Vec<Contact>,
) {
    let total: usize = sorting.kept.iter().sum();
    contacts.clear();
    contacts.reserve(total);
    let mut rest = &mut contacts.spare_capacity_mut()[..total];
    let mut work = Vec::with_capacity(sorting.kept.len());
    let mut offset = 0;
    for (bounds, &kept) in sorting.starts.windows(2).zip(&sorting.kept) {
        let (into, after) = rest.split_at_mut(kept);
        work.push((
            &sorting.unordered[bounds[0]..bounds[0] + kept],
            offset,
            into,
        ));
        rest = after;
        offset += kept;
    }
    work.into_par_iter().for_each_init(
        || {
            (
                Vec::with_capacity(SWEEP_CHUNK),
                Vec::with_capacity(SWEEP_CHUNK),
            )
        },
        |(pairs, impacts), (keys, offset, into)| {
            for (batch, (keys, into)) in keys
                .chunks(SWEEP_CHUNK)
                .zip(into.chunks_mut(SWEEP_CHUNK))
                .enumerate()
            {
                pairs.clear();
                pairs.extend(keys.iter().map(|&key| pair_of(key)));
                world
                    .sweep_into(pairs, impacts)
                    .expect("the tree holds only the world's bodies");
                let index = offset + batch * SWEEP_CHUNK;
                for (k, ((&key, impact), place)) in keys.iter().zip(&*impacts).zip(into).enumerate()
                {
                    let impact = impact.expect("the second sweep hits as the first did");
                    debug_assert_eq!(key, self::key(impact.time_of_impact, pair_of(key)));
                    let pair = pair_of(key);
                    place.write(Contact::of_pair(pair, image_of(world, pair), impact));
                    let [a, b] = pair;
                    for (body, partner) in [(a, b), (b, a)] {
                        let entry = ((index + k) as u64) << 32 | u64::from(partner);
                        let first = &first[body as usize];
                        if first.load(Ordering::Relaxed) > entry {
                            first.fetch_min(entry, Ordering::Relaxed);
                        }
                    }
                }
            }
        },
    );
    // SAFETY: each bucket wrote every place of its span, and the spans cover `total`.
    unsafe { contacts.set_len(total) };
}

/// Each body's earliest contact and its partner, from `first` (`index << 32 | partner` of
/// its first contact in order; `u64::MAX` for none): in the contacts' order the first
/// contact of a body is its earliest, and among equal times the one with the lowest partner
/// (the pairs (p, body) with p < body come first, by p, then (body, p), by p).
fn earliest_per_body(first: &[AtomicU64], earliest: &mut Vec<Option<Earliest>>) {
    first
        .par_iter()
        .map(|entry| {
            let entry = entry.load(Ordering::Relaxed);
            (entry != u64::MAX).then_some(Earliest {
                contact: (entry >> 32) as u32,
                partner: entry as u32,
            })
        })
        .collect_into_vec(earliest);
}

/// The most bodies a step may hold: the tree's references keep one bit for leaves.
pub(crate) const MAX_BODIES: usize = (1 << 31) - 1;

/// The image of `pair`'s second body that the sweep met ([`nearest_image`]), in periods.
fn image_of(world: &World, [a, b]: [u32; 2]) -> [i32; 3] {
    if world.params.flags & FLAG_PERIODIC == 0 {
        // Without a box every image is the body itself (and rounding costs a libm call per
        // axis where the target lacks SSE4.1).
        return [0; 3];
    }
    let center = |body: u32| Vec3::from_array(world.bodies()[body as usize].center);
    let image = nearest_image(
        center(a),
        center(b),
        Vec3::from_array(world.params.inverse_period),
    );
    image.to_array().map(|periods| periods as i32)
}

/// Every contact of one step of `bodies`: the pairs that touch during the step (or overlap at
/// its start), each pair's earliest contact per body, and the earliest of the step; with
/// [`SweepOptions`] as every path takes them (the separating option, a periodic box).
///
/// No candidate pairs are needed: a broad phase (a linear BVH over the bodies' swept boxes;
/// the repository's `docs/step.md` has its design) finds them, and the answer of each is the f32 sweep's on lanes, exactly
/// the twin's (the times of all, then the full answer of the hits, in order). Both run on
/// all cores (rayon). The contacts are exactly those of
/// sweeping every pair with [`World::sweep_into`]: the boxes are widened so that no pair the
/// sweep can call a hit is left out.
///
/// A simulation that runs every step keeps a [`ContactFinder`], which reuses its memory.
///
/// Used by: the README's quick start (the CPU and GPU steps), `examples/resident_step.rs`
/// (`--check`).
///
/// # Memory
/// Besides what each body holds, the step's output is limited to
/// [`DEFAULT_MAX_OUTPUT_BYTES`](ContactFinder::DEFAULT_MAX_OUTPUT_BYTES) (2 GiB, as [`ContactFinder::with_max_output_bytes`] counts
/// it); a [`ContactFinder`] sets its own limit.
///
/// # Errors
/// The typed errors of [`World::update`] for a bad body or a periodic box too small for one;
/// [`Error::TooManyBodies`] beyond [`MAX_BODIES`](ContactFinder::MAX_BODIES); [`Error::OutputLimit`] when the candidates
/// and contacts outgrow the limit (bodies that all overlap: every pair is a contact). No
/// bodies, or one, give no contacts.
///
/// # Example
/// ```
/// use sweepcast::glam::Vec2;
/// use sweepcast::{cpu, MovingCircle, SweepOptions};
///
/// // A row of unit circles 3 apart; every odd one moves 2 to the left, closing the gap of 1
/// // to its left neighbour at t = 0.5 and leaving its right one behind.
/// let bodies: Vec<MovingCircle> = (0..10)
///     .map(|i| {
///         let motion = if i % 2 == 1 { Vec2::new(-2.0, 0.0) } else { Vec2::ZERO };
///         MovingCircle::new(Vec2::new(3.0 * i as f32, 0.0), 1.0, motion)
///     })
///     .collect();
/// let contacts = cpu::find_contacts(&bodies, SweepOptions::default())?;
/// let pairs: Vec<[u32; 2]> = contacts.contacts().iter().filter_map(|c| c.pair()).collect();
/// assert_eq!(pairs, [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]);
/// assert!(contacts.contacts().iter().all(|c| c.impact.time_of_impact == 0.5));
/// assert_eq!(contacts.contacts().first().and_then(|c| c.pair()), Some([0, 1]));
/// assert_eq!(contacts.earliest_of(3).and_then(|c| c.pair()), Some([2, 3]));
/// # Ok::<(), sweepcast::Error>(())
/// ```
pub fn find_contacts<B>(bodies: &[B], options: SweepOptions) -> Result<Contacts, Error>
where
    B: Copy + Into<MovingSphere>,
{
    let mut finder = ContactFinder::new();
    finder.find(bodies, options)?;
    Ok(finder.contacts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hits' keys are those of the times that [`TimeOfImpact::time`] calls hits, in
    /// order: overlaps at time 0, contacts at their time (0 and 1 included), misses (above
    /// 1, infinite, NaN) left out.
    #[test]
    fn keys_of_hits_keeps_the_hits_in_order() {
        let raw = [
            -1.0,
            0.0,
            -0.0,
            0.25,
            1.0,
            1.000_000_1,
            f32::INFINITY,
            f32::NAN,
            0.75,
        ];
        let times: Vec<TimeOfImpact> = raw.iter().map(|&t| TimeOfImpact(t)).collect();
        let pairs: Vec<[u32; 2]> = (0..raw.len() as u32).map(|i| [i, i + 10]).collect();
        let expected: Vec<Key> = pairs
            .iter()
            .zip(&times)
            .filter_map(|(&pair, time)| Some(key(time.time()?, pair)))
            .collect();
        let mut keys = vec![7; 3];
        keys_of_hits(&pairs, &times, &mut keys);
        assert_eq!(keys, expected);
        assert_eq!(keys.len(), 6);
    }
}
