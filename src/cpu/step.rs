//! The whole collision step on the CPU, from the bodies alone: the broad phase ([`bvh`]),
//! the time of impact of every candidate pair on lanes, a sort of the hits by time, the full
//! answer of each hit in that order ([`World::sweep_into`]), and the step's contacts,
//! earliest impact per body and earliest contact.
//!
//! [`bvh`]: super::bvh

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::par::{self, prelude::*};

use glam::Vec3;

use super::bvh::{Bvh, PACKET};
use super::sweep::nearest_image;
use super::{WallContact, World, scatter_to_places, wall_contacts_into, wall_records_into};
use crate::error::{Counted, Error};
use crate::geometry::{Impact, MovingSphere, Wall};
use crate::layout::{EarliestImpact, FLAG_PERIODIC, Partner, TimeOfImpact, WallRecord};
use crate::options::SweepOptions;

/// One contact of the step: a pair of bodies that touch during it (or overlap at its start).
#[derive(Copy, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Contact {
    /// The two bodies' indices, the lower first; the [`Impact`] is the sweep of the first
    /// against the second.
    pub pair: [u32; 2],
    /// In a periodic box, the image of the second body that the first met, in periods per
    /// axis: the second body's centre was taken at `center - image · period` (the nearest
    /// image, as the sweep picks it: `round((b - a) / period)` per axis, in f32). `[0, 0, 0]`
    /// without a periodic box. For centres more than 2³¹ periods apart (far outside the box,
    /// where the sweep's guarantees do not hold) it saturates at the limits of `i32`.
    pub image: [i32; 3],
    /// When, where and how they touch.
    pub impact: Impact,
}

/// A body's earliest impact in the step.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Earliest {
    /// The contact's index in [`Contacts::contacts`].
    pub contact: u32,
    /// The other body.
    pub partner: u32,
}

/// The contacts of one step, as [`find_contacts`] and [`ContactFinder::find`] give them.
#[derive(Clone, Debug, Default)]
pub struct Contacts {
    contacts: Vec<Contact>,
    earliest: Vec<Option<Earliest>>,
    candidates: usize,
    walls: Vec<Option<WallContact>>,
}

impl Contacts {
    /// Each body's earliest contact with a body or a wall, as the GPU step's
    /// [`StepBuffers::earliest`](crate::gpu::StepBuffers::earliest) records say it
    /// ([`EarliestRecord::decode`](crate::layout::EarliestRecord::decode)): the body's
    /// earliest pair contact (the lowest partner among equal times), replaced by its earliest
    /// wall only where that is strictly earlier; `None` for a body that meets nothing.
    #[must_use]
    pub fn earliest_impacts(&self) -> Vec<Option<EarliestImpact>> {
        let bodies = self.earliest.len().max(self.walls.len());
        (0..bodies)
            .map(|body| {
                let pair = self.earliest_of(body as u32).map(|contact| {
                    let first = contact.pair[0] == body as u32;
                    let image = if first {
                        contact.image
                    } else {
                        contact.image.map(i32::wrapping_neg)
                    };
                    EarliestImpact {
                        time_of_impact: contact.impact.time_of_impact,
                        status: contact.impact.status,
                        partner: Partner::Body {
                            index: contact.pair[usize::from(first)],
                            image,
                        },
                    }
                });
                let wall = self
                    .walls
                    .get(body)
                    .copied()
                    .flatten()
                    .map(|wall| EarliestImpact {
                        time_of_impact: wall.impact.time_of_impact,
                        status: wall.impact.status,
                        partner: Partner::Wall { index: wall.wall },
                    });
                match (pair, wall) {
                    (Some(pair), Some(wall)) if wall.time_of_impact < pair.time_of_impact => {
                        Some(wall)
                    }
                    (pair, wall) => pair.or(wall),
                }
            })
            .collect()
    }

    /// Every contact of the step, ordered by time of impact, then by the pair's indices:
    /// the same order on every run and on every path.
    #[must_use]
    pub fn contacts(&self) -> &[Contact] {
        &self.contacts
    }

    /// The earliest contact of the whole step (the lowest pair first among equal times), or
    /// `None` when nothing touches.
    #[must_use]
    pub fn earliest(&self) -> Option<&Contact> {
        self.contacts.first()
    }

    /// Per body (by index), its earliest contact and partner, the lowest partner index first
    /// among contacts at the same time; `None` for a body that touches nothing.
    #[must_use]
    pub fn earliest_per_body(&self) -> &[Option<Earliest>] {
        &self.earliest
    }

    /// The earliest contact of `body`, or `None` (also for an index out of range).
    #[must_use]
    pub fn earliest_of(&self, body: u32) -> Option<&Contact> {
        let earliest = (*self.earliest.get(body as usize)?)?;
        Some(&self.contacts[earliest.contact as usize])
    }

    /// Per body (by index), its earliest impact on the step's walls (the lowest wall index
    /// among equal times), as [`super::earliest_wall_contacts`] gives it; `None` for a body
    /// that meets no wall. Empty when the step had no walls.
    #[must_use]
    pub fn earliest_walls(&self) -> &[Option<WallContact>] {
        &self.walls
    }

    /// How many candidate pairs the broad phase gave the narrow phase (at least the number
    /// of contacts).
    #[must_use]
    pub fn candidates(&self) -> usize {
        self.candidates
    }

    #[cfg(feature = "gpu")]
    /// The contacts of a step from their parts (the GPU pipeline's decoding).
    pub(crate) fn from_parts(
        contacts: Vec<Contact>,
        earliest: Vec<Option<Earliest>>,
        candidates: usize,
    ) -> Self {
        Self {
            contacts,
            earliest,
            candidates,
            walls: Vec::new(),
        }
    }

    #[cfg(feature = "gpu")]
    /// These contacts with each body's earliest wall (the GPU pipeline's decoding).
    pub(crate) fn with_walls(mut self, walls: Vec<Option<WallContact>>) -> Self {
        self.walls = walls;
        self
    }

    /// Empties these contacts for a step of `candidates` candidates to refill, keeping
    /// their memory: the contacts, each body's earliest and each body's earliest wall.
    #[allow(clippy::type_complexity)]
    pub(crate) fn refill(
        &mut self,
        candidates: usize,
    ) -> (
        &mut Vec<Contact>,
        &mut Vec<Option<Earliest>>,
        &mut Vec<Option<WallContact>>,
    ) {
        self.contacts.clear();
        self.earliest.clear();
        self.walls.clear();
        self.candidates = candidates;
        (&mut self.contacts, &mut self.earliest, &mut self.walls)
    }
}

/// The most sorted leaves per rayon task of the queries and the narrow phase (a multiple of
/// [`PACKET`]).
const TASK_BODIES: usize = 2048;
/// The fewest sorted leaves per task (a multiple of [`PACKET`]).
const MIN_TASK_BODIES: usize = 128;
const _: () = assert!(TASK_BODIES.is_multiple_of(PACKET) && MIN_TASK_BODIES.is_multiple_of(PACKET));

/// The step's memory, kept from step to step: a [`World`] of the bodies, the broad phase's
/// tree and per-task candidate lists, and the [`Contacts`].
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
/// let first = contacts.earliest().expect("bodies 0 and 1 meet");
/// assert_eq!(first.pair, [0, 1]);
/// assert_eq!(first.impact.time_of_impact, 0.3);
/// assert_eq!(contacts.earliest_per_body()[1].map(|e| e.partner), Some(0));
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
}

/// Bytes a candidate pair holds, as [`ContactFinder::with_max_output_bytes`] counts them: the
/// pair (8), its time of impact (4) and the room for its key (16).
pub const OUTPUT_BYTES_PER_CANDIDATE: usize = 8 + 4 + size_of::<Key>();

/// Bytes a contact holds besides its candidate's, as
/// [`ContactFinder::with_max_output_bytes`] counts them: its bucket in the sort (2), its key
/// in bucket order (16) and the [`Contact`] (76).
pub const OUTPUT_BYTES_PER_CONTACT: usize = 2 + size_of::<Key>() + size_of::<Contact>();

/// The limit on a step's output that [`find_contacts`] and a new [`ContactFinder`] keep:
/// 2 GiB, some 77 million candidates with no contact or 17 million that are all contacts.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1 << 31;

/// The highest limit on a step's output: the bytes of 2³² − 1 contacts (the step numbers
/// them in 32 bits), or all of memory where that is less.
pub const MAX_OUTPUT_BYTES: usize = {
    let contacts = u32::MAX as u64 * OUTPUT_BYTES_PER_CONTACT as u64;
    if contacts < usize::MAX as u64 {
        contacts as usize
    } else {
        usize::MAX
    }
};

/// A [`ContactFinder`]'s limit on its output, from 1 to [`MAX_OUTPUT_BYTES`].
#[derive(Copy, Clone, Debug)]
struct MaxOutputBytes(usize);

impl Default for MaxOutputBytes {
    fn default() -> Self {
        Self(DEFAULT_MAX_OUTPUT_BYTES)
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

/// The wall-clock time of each stage of the last [`ContactFinder::find`].
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// Validating and packing the bodies ([`World::update`]).
    pub validate: Duration,
    /// The broad phase's tree: swept boxes, Morton codes, sort, hierarchy and its boxes.
    pub build: Duration,
    /// Each body's query of the tree and the time of impact of its candidates.
    pub candidates_and_sweep: Duration,
    /// Sorting the hits' keys, the full answer of each hit, written in order, and the
    /// earliest contact per body.
    pub order: Duration,
}

/// One task's candidates and their answers, kept for the next step.
#[derive(Clone, Debug, Default)]
struct Task {
    /// The queries' stack.
    stack: Vec<u32>,
    pairs: Vec<[u32; 2]>,
    /// Each candidate's time of impact, or a miss.
    times: Vec<TimeOfImpact>,
    /// The [`Key`] of each hit.
    keys: Vec<Key>,
    /// Each key's bucket in the sort.
    buckets: Vec<u16>,
    /// Per bucket, where the task's next key in it goes.
    places: Vec<usize>,
}

impl ContactFinder {
    /// A finder with no memory yet, whose steps' output may take up to
    /// [`DEFAULT_MAX_OUTPUT_BYTES`].
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Limits the memory of each step's output: its candidate pairs
    /// ([`OUTPUT_BYTES_PER_CANDIDATE`] each) and contacts ([`OUTPUT_BYTES_PER_CONTACT`] each
    /// besides). The queries count their pairs as they append them, and every query stops
    /// soon after the count passes the limit (within some 16,000 pairs a thread), so that a
    /// step whose bodies all overlap returns [`Error::OutputLimit`] rather than exhausting
    /// memory; the finder then releases that memory and stays usable.
    ///
    /// Any value is accepted: 0 counts as 1 and values above [`MAX_OUTPUT_BYTES`] as that.
    /// The step's vectors grow by doubling, so its memory may reach about twice the limit,
    /// besides what each body holds (see [`memory_bytes`](Self::memory_bytes)).
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
        self.max_output_bytes = MaxOutputBytes(bytes.clamp(1, MAX_OUTPUT_BYTES));
        self
    }

    /// The limit on each step's output, in bytes ([`with_max_output_bytes`](Self::with_max_output_bytes)).
    #[must_use]
    pub fn max_output_bytes(&self) -> usize {
        self.max_output_bytes.0
    }

    /// [`find`](Self::find) with the output limit lowered to `bytes` for this step alone
    /// (the event loop's partner limit).
    pub(crate) fn find_within<B>(
        &mut self,
        bodies: &[B],
        options: SweepOptions,
        bytes: usize,
    ) -> Result<&Contacts, Error>
    where
        B: Copy + Into<MovingSphere>,
    {
        let own = self.max_output_bytes;
        self.max_output_bytes = MaxOutputBytes(own.0.min(bytes.max(1)));
        let found = self.find_with_walls(bodies, &[], options).map(|_| ());
        self.max_output_bytes = own;
        found.map(|()| &self.contacts)
    }

    /// The contacts of the step of `bodies` with `options`: see [`find_contacts`].
    ///
    /// # Errors
    /// As [`find_contacts`], with this finder's limit on the output
    /// ([`with_max_output_bytes`](Self::with_max_output_bytes)); the previous step's
    /// contacts are cleared.
    ///
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
    /// assert_eq!(contacts.earliest().map(|c| c.impact.time_of_impact), Some(1.0 / 6.0));
    /// assert_eq!(contacts.earliest_walls()[0].map(|w| w.wall), Some(1)); // x = 20, at 0.75
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
        let built = Instant::now();
        // At least eight tasks a thread where the bodies allow, so that a small step keeps
        // every core busy to its end.
        let task_bodies = (self.bvh.len() / (8 * par::current_num_threads()))
            .next_multiple_of(PACKET)
            .clamp(MIN_TASK_BODIES, TASK_BODIES);
        let task_count = self.bvh.len().div_ceil(task_bodies);
        self.tasks
            .resize_with(task_count.max(self.tasks.len()), Task::default);
        let (world, bvh) = (&self.world, &self.bvh);
        let budget = OutputBudget::new(self.max_output_bytes.0);
        let go_on = |pairs: usize| budget.spend(pairs, OUTPUT_BYTES_PER_CANDIDATE);
        self.tasks[..task_count]
            .par_iter_mut()
            .enumerate()
            .for_each(|(index, task)| {
                task.pairs.clear();
                task.keys.clear();
                let end = ((index + 1) * task_bodies).min(bvh.len());
                for first in (index * task_bodies..end).step_by(PACKET) {
                    if budget.exceeded()
                        || !bvh.candidates_from(first, &mut task.stack, &mut task.pairs, &go_on)
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
                budget.spend(task.keys.len(), OUTPUT_BYTES_PER_CONTACT);
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
        self.stage_times = StageTimes {
            validate: validated - start,
            build: built - validated,
            candidates_and_sweep: swept - built,
            order: swept.elapsed(),
        };
        Ok(())
    }

    /// The [`Error::OutputLimit`] of a step stopped at the limit, from what its first
    /// `task_count` tasks found: every pair they appended, and the hits of those that
    /// finished their narrow phase.
    fn output_limit(&self, task_count: usize) -> Error {
        let tasks = &self.tasks[..task_count];
        let candidates: usize = tasks.iter().map(|task| task.pairs.len()).sum();
        let contacts: usize = tasks.iter().map(|task| task.keys.len()).sum();
        let candidate_bytes = candidates.saturating_mul(OUTPUT_BYTES_PER_CANDIDATE);
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
                .saturating_add(contacts.saturating_mul(OUTPUT_BYTES_PER_CONTACT)),
            limit_bytes,
        }
    }

    /// The time each stage of the last [`find`](Self::find) took.
    #[must_use]
    pub fn stage_times(&self) -> StageTimes {
        self.stage_times
    }

    /// The bytes of memory the finder holds (its vectors' capacities), which it keeps from
    /// step to step.
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

/// Keys per bucket of the sort, about: a bucket's keys sort within a core's L2 cache.
const BUCKET_CONTACTS: usize = 4096;

/// Buckets per thread where the keys allow it, of at least this many keys each.
const BUCKETS_PER_THREAD: usize = 8;
const MIN_BUCKET_CONTACTS: usize = 256;

/// The most buckets: every task keeps a place per bucket, and the places are counted out
/// bucket by bucket, task by task, on one thread (a million bodies, 490 tasks, make half a
/// million places).
const MAX_BUCKETS: usize = 1024;

/// Samples of the keys per bucket, from which the buckets' bounds are drawn.
const SAMPLES_PER_BUCKET: usize = 32;

/// Contacts per batch of [`write_contacts`]'s second sweep: its pairs and impacts stay in
/// the core's L1 cache.
const SWEEP_CHUNK: usize = 256;

/// The memory of the contacts' sort ([`sort_keys`]), kept from step to step.
#[derive(Clone, Debug, Default)]
struct Sorting {
    /// The first halves of the sampled keys.
    sample: Vec<u64>,
    /// The bounds of the buckets, drawn from the sample.
    splitters: Splitters,
    /// Where each bucket starts in `unordered`, and the end of the last.
    starts: Vec<usize>,
    /// The tasks' keys by bucket; each bucket's first `kept` are its keys in order.
    unordered: Vec<Key>,
    /// Per bucket, how many of its keys are kept (all, or one of each run of equal ones).
    kept: Vec<usize>,
}

#[cfg(test)]
impl Sorting {
    /// Every kept key, in order.
    fn ordered(&self) -> impl Iterator<Item = &Key> {
        self.starts
            .windows(2)
            .zip(&self.kept)
            .flat_map(|(bounds, &kept)| &self.unordered[bounds[0]..bounds[0] + kept])
    }
}

/// The tasks' keys in order, in `sorting` (see [`Sorting::ordered`]), one of each run of
/// equal keys if `dedup`: a sample sort.
///
/// The keys are split into buckets of consecutive keys, bounded by splitters drawn from a
/// sample of them; each task copies each of its keys to its bucket's next place in
/// `sorting.unordered`; then each bucket, in parallel, sorts its keys in cache. Only the
/// 16-byte keys move: [`write_contacts`] makes the contacts once, in order.
fn sort_keys(tasks: &mut [Task], sorting: &mut Sorting, dedup: bool) {
    let Sorting {
        sample,
        splitters,
        starts,
        unordered,
        kept,
    } = sorting;
    let total: usize = tasks.iter().map(|task| task.keys.len()).sum();
    // Contacts are numbered in 32 bits (`Earliest::contact`): the limit on the output,
    // at most `MAX_OUTPUT_BYTES`, stops a step before 2³² of them.
    assert!(
        u32::try_from(total).is_ok(),
        "more than 2^32 contacts in one step"
    );
    // A small step still makes a few buckets a thread, so that the sort and the contacts'
    // second sweep run on every core.
    let few = (total / MIN_BUCKET_CONTACTS).min(BUCKETS_PER_THREAD * par::current_num_threads());
    let buckets = (total / BUCKET_CONTACTS).max(few).clamp(1, MAX_BUCKETS);
    draw_splitters(tasks, total, buckets, sample, splitters);
    let splitters = &*splitters;
    // Each key's bucket, and how many each task has in each.
    tasks.par_iter_mut().for_each(|task| {
        task.places.clear();
        task.places.resize(buckets, 0);
        task.buckets.clear();
        for &key in &task.keys {
            let bucket = splitters.bucket(first_half(key));
            task.places[bucket] += 1;
            task.buckets.push(bucket as u16);
        }
    });
    // Bucket by bucket, then task by task: where each task's first key in each goes.
    starts.clear();
    let mut place = 0;
    for bucket in 0..buckets {
        starts.push(place);
        for task in tasks.iter_mut() {
            let count = task.places[bucket];
            task.places[bucket] = place;
            place += count;
        }
    }
    starts.push(place);
    let parts = tasks.par_iter_mut().map(|task| {
        let items = task.keys.iter().copied();
        let buckets = task.buckets.iter().map(|&bucket| usize::from(bucket));
        (items.zip(buckets), &mut task.places[..])
    });
    // SAFETY: the places were counted out just above from each task's keys and their
    // buckets, which the scatter gives back unchanged.
    unsafe { scatter_to_places(parts, total, unordered) };
    let mut spans = Vec::with_capacity(buckets);
    let mut rest = &mut unordered[..];
    for bounds in starts.windows(2) {
        let (span, after) = rest.split_at_mut(bounds[1] - bounds[0]);
        spans.push(span);
        rest = after;
    }
    spans
        .into_par_iter()
        .map_init(BucketSort::default, |scratch, keys| {
            // A bucket far beyond its share (keys whose first half repeats, such as one body
            // that overlaps thousands at the start of the step) sorts on all cores.
            if keys.len() > 8 * BUCKET_CONTACTS {
                keys.par_sort_unstable();
            } else {
                scratch.sort(keys);
            }
            if dedup {
                dedup_sorted(keys)
            } else {
                keys.len()
            }
        })
        .collect_into_vec(kept);
}

/// The memory of one thread's bucket sorts.
#[derive(Default)]
struct BucketSort {
    /// Per first half, from the bucket's least, how many keys have it, then where the next
    /// goes.
    counts: Vec<u32>,
    keys: Vec<Key>,
}

impl BucketSort {
    /// Sorts `keys`: a counting sort into about two cells a key by the top bits of their
    /// first halves above the least (the first body alone for keys at time 0, whose bucket
    /// covers a range of bodies each with a few partners; the time's top bits for the rest),
    /// then each cell's few keys by an insertion sort. A comparison sort of a bucket takes
    /// `log₂` of its length in rounds of compares, each a guess for the branch predictor.
    fn sort(&mut self, keys: &mut [Key]) {
        let Some((low, high)) = keys.iter().fold(None, |bounds, &key| {
            let half = first_half(key);
            let (low, high) = bounds.unwrap_or((half, half));
            Some((low.min(half), high.max(half)))
        }) else {
            return;
        };
        // The fewest bits of shift that leave fewer cells than twice the keys.
        let cells_bits = (2 * keys.len()).ilog2();
        let shift = (u64::BITS - (high - low).leading_zeros()).saturating_sub(cells_bits);
        let cells = ((high - low) >> shift) as usize + 1;
        let cell = |key: Key| ((first_half(key) - low) >> shift) as usize;
        self.counts.clear();
        self.counts.resize(cells + 1, 0);
        for &key in keys.iter() {
            self.counts[cell(key) + 1] += 1;
        }
        for k in 1..self.counts.len() {
            self.counts[k] += self.counts[k - 1];
        }
        // `counts[k]` is now where cell `k` starts, and `counts[k + 1]` its end.
        self.keys.clear();
        self.keys.extend_from_slice(keys);
        for &key in &self.keys {
            let next = &mut self.counts[cell(key)];
            keys[*next as usize] = key;
            *next += 1;
        }
        // Each `counts[k]` has moved on to the end of its cell, the start of the next.
        let mut start = 0;
        for &end in &self.counts[..cells] {
            insertion_sort(&mut keys[start..end as usize]);
            start = end as usize;
        }
    }
}

/// Sorts `keys`, a few of them: shorter runs than the standard library's sort is made for
/// (it costs a call and its checks a run, where most runs here hold one to four keys).
fn insertion_sort(keys: &mut [Key]) {
    if keys.len() > 16 {
        keys.sort_unstable();
        return;
    }
    for next in 1..keys.len() {
        let key = keys[next];
        let mut place = next;
        while place > 0 && keys[place - 1] > key {
            keys[place] = keys[place - 1];
            place -= 1;
        }
        keys[place] = key;
    }
}

/// Moves one of each run of equal values of `values` (ordered) to its front, in order, and
/// returns how many there are.
fn dedup_sorted(values: &mut [Key]) -> usize {
    let mut kept = usize::from(!values.is_empty());
    for read in 1..values.len() {
        if values[read] != values[kept - 1] {
            values[kept] = values[read];
            kept += 1;
        }
    }
    kept
}

/// Draws `buckets - 1` bounds of the buckets from an even sample of the tasks' `total`
/// keys, as their [first halves](first_half), into `splitters`.
fn draw_splitters(
    tasks: &[Task],
    total: usize,
    buckets: usize,
    sample: &mut Vec<u64>,
    splitters: &mut Splitters,
) {
    splitters.bounds.clear();
    if buckets >= 2 {
        let samples = (buckets * SAMPLES_PER_BUCKET).min(total);
        sample.clear();
        let (mut task, mut first) = (0, 0);
        for k in 0..samples {
            let index = k * total / samples;
            while index >= first + tasks[task].keys.len() {
                first += tasks[task].keys.len();
                task += 1;
            }
            sample.push(first_half(tasks[task].keys[index - first]));
        }
        sample.sort_unstable();
        splitters
            .bounds
            .extend((1..buckets).map(|k| sample[k * samples / buckets]));
    }
    splitters.index();
}

/// Cells of [`Splitters`]' table per bucket, about.
const CELLS_PER_BUCKET: usize = 4;

/// The first halves of keys at a time above 0 start here: below are those at time 0 (most
/// contacts in a dense scene overlap at the start), ordered by their first body alone.
const TIMED: u64 = 1 << 32;

/// The bounds of the sort's buckets, and a table that finds a key's bucket with one load
/// and, mostly, a compare or two.
///
/// The table cuts the keys into cells of equal width (a power of two), about four a bucket,
/// and holds for each how many bounds lie below it: a key's bucket lies between its cell's
/// count and the next cell's. It has two parts, each over its own bounds' span: the keys at
/// time 0, by their first body, and the keys after it, by their time's bits. Where the
/// keys crowd within a part (times near 1, whose bits are dense) a cell holds more than a
/// few bounds, and a binary search among them finishes the job; it never takes more steps
/// than one among all the bounds.
#[derive(Clone, Debug, Default)]
struct Splitters {
    /// Ordered: bucket `k` holds the keys from `bounds[k - 1]` up to (not including)
    /// `bounds[k]`.
    bounds: Vec<u64>,
    /// The table's parts: the keys below [`TIMED`], then the others.
    parts: [Part; 2],
    /// Per cell of each part, how many bounds lie below its start; then how many lie below
    /// the part's end.
    cells: Vec<u32>,
    /// The bounds, then four more that no key reaches, so that four compares from any
    /// bound stay within it.
    padded: Vec<u64>,
}

/// One part of [`Splitters`]' table: its cell `i` starts at `low + (i << shift)`, and is
/// `cells[first + i]`.
#[derive(Copy, Clone, Debug, Default)]
struct Part {
    low: u64,
    shift: u32,
    first: usize,
    /// Its last cell (`i`), which also holds every key beyond it.
    last: usize,
}

impl Splitters {
    /// Builds the table of `bounds`.
    fn index(&mut self) {
        self.cells.clear();
        let split = self.bounds.partition_point(|&bound| bound < TIMED);
        let (zero, timed) = self.bounds.split_at(split);
        for (part, (bounds, below, start)) in [(zero, 0, 0), (timed, split, TIMED)]
            .into_iter()
            .enumerate()
        {
            let low = bounds.first().copied().unwrap_or(start);
            let high = bounds.last().copied().unwrap_or(low);
            let cells = (CELLS_PER_BUCKET * (bounds.len() + 1)).next_power_of_two();
            // The fewest bits of shift that leave every key up to `high` within the part's
            // cells: `(high - low) >> shift < cells`.
            let span_bits = u64::BITS - (high - low).leading_zeros();
            let shift = span_bits.saturating_sub(cells.trailing_zeros());
            self.parts[part] = Part {
                low,
                shift,
                first: self.cells.len(),
                last: cells - 1,
            };
            let count = |start: u64| (below + bounds.partition_point(|&b| b < start)) as u32;
            self.cells
                .extend((0..cells as u64).map(|i| count(low.saturating_add(i << shift))));
            self.cells.push((below + bounds.len()) as u32);
        }
        self.padded.clear();
        self.padded.extend(&self.bounds);
        self.padded.extend([u64::MAX; 4]);
    }

    /// The bucket of `key`: how many bounds are at most `key`.
    fn bucket(&self, key: u64) -> usize {
        let part = &self.parts[usize::from(key >= TIMED)];
        let cell =
            part.first + ((key.saturating_sub(part.low) >> part.shift) as usize).min(part.last);
        let (below, end) = (self.cells[cell] as usize, self.cells[cell + 1] as usize);
        if end - below > 4 {
            return below + self.bounds[below..end].partition_point(|&bound| bound <= key);
        }
        // At most four bounds in the cell: four compares, those past the cell's bounds
        // masked (the padding keeps their loads within the vector), with no branch on how
        // many there are.
        let within = &self.padded[below..below + 4];
        (0..4)
            .map(|j| usize::from((below + j < end) & (within[j] <= key)))
            .sum::<usize>()
            + below
    }
}

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
                    place.write(Contact {
                        pair,
                        image: image_of(world, pair),
                        impact,
                    });
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

/// The bytes `vector` holds.
pub(crate) fn bytes<T>(vector: &Vec<T>) -> usize {
    vector.capacity() * std::mem::size_of::<T>()
}

/// The most bodies a step may hold: the tree's references keep one bit for leaves.
pub const MAX_BODIES: usize = (1 << 31) - 1;

/// A contact's place in the contacts' order, as one integer: the bits of its time of impact
/// (never negative, so that they order it), then its pair; the lowest 32 bits are 0.
type Key = u128;

/// The [`Key`] of a contact of `pair` at `time`.
fn key(time: f32, [a, b]: [u32; 2]) -> Key {
    (u128::from(time.to_bits()) << 96) | (u128::from(a) << 64) | (u128::from(b) << 32)
}

/// The pair of a [`Key`].
fn pair_of(key: Key) -> [u32; 2] {
    [(key >> 64) as u32, (key >> 32) as u32]
}

/// The first half of a [`Key`] (the time and the first body), from which the sort's
/// buckets are drawn.
fn first_half(key: Key) -> u64 {
    (key >> 64) as u64
}

/// The image of `pair`'s second body that the sweep met ([`nearest_image`]), in periods.
fn image_of(world: &World, [a, b]: [u32; 2]) -> [i32; 3] {
    if world.params.flags & FLAG_PERIODIC == 0 {
        // Without a box every image is the body itself (and rounding costs a libm call per
        // axis where the target lacks SSE4.1).
        return [0; 3];
    }
    let center = |body: u32| Vec3::from_array(world.bodies()[body as usize].center);
    let image = nearest_image(center(a), center(b), &world.params);
    image.to_array().map(|periods| periods as i32)
}

/// Every contact of one step of `bodies`: the pairs that touch during the step (or overlap at
/// its start), each pair's earliest contact per body, and the earliest of the step; with
/// [`SweepOptions`] as every path takes them (the separating option, a periodic box).
///
/// No candidate pairs are needed: a broad phase (a linear BVH over the bodies' swept boxes,
/// see the README) finds them, and the answer of each is the f32 sweep's on lanes, exactly
/// the twin's (the times of all, then the full answer of the hits, in order). Both run on
/// all cores (rayon). The contacts are exactly those of
/// sweeping every pair with [`World::sweep_into`]: the boxes are widened so that no pair the
/// sweep can call a hit is left out.
///
/// A simulation that runs every step keeps a [`ContactFinder`], which reuses its memory.
///
/// # Memory
/// Besides what each body holds, the step's output is limited to
/// [`DEFAULT_MAX_OUTPUT_BYTES`] (2 GiB, as [`ContactFinder::with_max_output_bytes`] counts
/// it); a [`ContactFinder`] sets its own limit.
///
/// # Errors
/// The typed errors of [`World::update`] for a bad body or a periodic box too small for one;
/// [`Error::TooManyBodies`] beyond [`MAX_BODIES`]; [`Error::OutputLimit`] when the candidates
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
/// let pairs: Vec<[u32; 2]> = contacts.contacts().iter().map(|c| c.pair).collect();
/// assert_eq!(pairs, [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]);
/// assert!(contacts.contacts().iter().all(|c| c.impact.time_of_impact == 0.5));
/// assert_eq!(contacts.earliest().map(|c| c.pair), Some([0, 1]));
/// assert_eq!(contacts.earliest_per_body()[3].map(|e| e.partner), Some(2));
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

    /// A 64-bit linear congruential generator's high bits.
    fn random(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *state >> 33
    }

    /// A first half of a key as the step makes them: a time's bits (0 for a quarter of them,
    /// as for overlapping pairs; else spread over [0, 1] and crowded near 1) and a body.
    fn first_half_of(state: &mut u64, bodies: u64) -> u64 {
        let time = match random(state) % 4 {
            0 => 0.0,
            1 => 1.0 - (random(state) % 1000) as f32 * 1e-6,
            _ => (random(state) % 1_000_000) as f32 / 1e6,
        };
        (u64::from(f32::to_bits(time)) << 32) | (random(state) % bodies)
    }

    /// The table finds the bucket a plain binary search does, for every number of bounds up
    /// to a few hundred and 1,023: bounds in a narrow range with runs of equal ones, and
    /// bounds as the step draws them; keys below, between, on and beyond them.
    #[test]
    fn splitters_find_every_keys_bucket() {
        let mut state = 7;
        for len in (0..300).chain([1023]) {
            for narrow in [true, false] {
                let mut bounds: Vec<u64> = (0..len)
                    .map(|_| {
                        if narrow {
                            100 + random(&mut state) % 64
                        } else {
                            first_half_of(&mut state, 1000)
                        }
                    })
                    .collect();
                bounds.sort_unstable();
                let mut splitters = Splitters {
                    bounds,
                    ..Splitters::default()
                };
                splitters.index();
                let mut keys: Vec<u64> = (0..200)
                    .map(|k| {
                        if narrow {
                            90 + k % 80
                        } else {
                            first_half_of(&mut state, 1000)
                        }
                    })
                    .collect();
                for &bound in &splitters.bounds {
                    keys.extend([bound.saturating_sub(1), bound, bound + 1]);
                }
                keys.extend([0, u64::MAX >> 1, u64::MAX]);
                for key in keys {
                    let expected = splitters.bounds.partition_point(|&s| s <= key);
                    assert_eq!(
                        splitters.bucket(key),
                        expected,
                        "{len} bounds (narrow: {narrow}), key {key:#x}"
                    );
                }
            }
        }
    }

    /// The tasks' keys by [`sort_keys`], then by a plain sort (and `dedup`), and the bounds
    /// the first drew.
    fn sort_both_ways(tasks: &mut [Task], dedup: bool) -> (Vec<Key>, Vec<Key>, Vec<u64>) {
        let mut expected: Vec<Key> = tasks.iter().flat_map(|task| task.keys.clone()).collect();
        expected.sort_unstable();
        if dedup {
            expected.dedup();
        }
        let mut sorting = Sorting::default();
        sort_keys(tasks, &mut sorting, dedup);
        let ordered = sorting.ordered().copied().collect();
        (ordered, expected, sorting.splitters.bounds)
    }

    /// The sample sort gives the keys in order, with every one kept (or one of each run of
    /// equal ones), from tasks of every size (empty ones too) and keys with many ties in
    /// their first half (time 0, as for overlapping pairs, and one body with many
    /// partners), in one bucket and in hundreds.
    #[test]
    fn sort_keys_orders_every_key() {
        let mut state = 11;
        for total_wanted in [0, 1, 5, 4000, 300_000] {
            let mut tasks = Vec::new();
            let mut made = 0;
            while made < total_wanted {
                let size = (random(&mut state) as usize % 5000).min(total_wanted - made);
                let size = if random(&mut state).is_multiple_of(5) {
                    0
                } else {
                    size
                };
                let mut task = Task::default();
                for _ in 0..size {
                    let r = random(&mut state);
                    let time = if r.is_multiple_of(3) {
                        0.0
                    } else {
                        (r % 1000) as f32 / 1000.0
                    };
                    let first = if r.is_multiple_of(7) {
                        5
                    } else {
                        (random(&mut state) % 1000) as u32
                    };
                    let second = first + 1 + (random(&mut state) % 100) as u32;
                    task.keys.push(key(time, [first, second]));
                }
                made += size;
                tasks.push(task);
            }
            for dedup in [false, true] {
                let (ordered, expected, bounds) = sort_both_ways(&mut tasks, dedup);
                assert_eq!(ordered, expected, "{total_wanted} keys, dedup {dedup}");
                assert!(total_wanted < 300_000 || bounds.len() > 50);
                // Times 0 to 0.999 in steps of 0.001, bodies 0 to 1,099: runs of equal keys.
                assert!(!dedup || total_wanted < 4000 || expected.len() < made);
            }
        }
    }

    /// One body that overlaps 40,000 others at the start: every key's first half is the
    /// same, so every key falls in one bucket, which sorts on all cores, in order.
    #[test]
    fn sort_keys_orders_one_full_bucket() {
        let mut state = 3;
        let mut tasks: Vec<Task> = (0..4).map(|_| Task::default()).collect();
        for k in 0..40_000 {
            let second = 1 + (random(&mut state) % 1_000_000) as u32;
            tasks[k % 4].keys.push(key(0.0, [0, second]));
        }
        let (ordered, expected, bounds) = sort_both_ways(&mut tasks, false);
        assert!(bounds.iter().all(|&s| s == 0), "one bucket holds them all");
        assert_eq!(ordered, expected);
    }

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

    /// A key gives back its pair, and orders by time, then by the pair.
    #[test]
    fn keys_order_by_time_then_pair() {
        let k = key(0.25, [7, 9]);
        assert_eq!(pair_of(k), [7, 9]);
        assert_eq!(first_half(k), (u64::from(0.25f32.to_bits()) << 32) | 7);
        assert!(key(0.0, [u32::MAX - 1, u32::MAX]) < key(f32::from_bits(1), [0, 1]));
        assert!(key(0.5, [3, u32::MAX]) < key(0.5, [4, 5]));
        assert!(key(0.5, [3, 4]) < key(0.5, [3, 5]));
    }
}
