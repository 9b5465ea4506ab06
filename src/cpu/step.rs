//! The whole collision step on the CPU, from the bodies alone: the broad phase ([`bvh`]),
//! the full answer of every candidate pair on lanes ([`World::sweep_into`]), and the step's
//! contacts, earliest impact per body and earliest contact.
//!
//! [`bvh`]: super::bvh

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use glam::Vec3;

use super::World;
use super::bvh::{Bvh, PACKET};
use super::sweep::nearest_image;
use crate::error::Error;
use crate::geometry::{Impact, MovingSphere};
use crate::layout::FLAG_PERIODIC;
use crate::options::SweepOptions;

/// One contact of the step: a pair of bodies that touch during it (or overlap at its start).
#[derive(Copy, Clone, Debug, PartialEq)]
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
}

impl Contacts {
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

    /// How many candidate pairs the broad phase gave the narrow phase (at least the number
    /// of contacts).
    #[must_use]
    pub fn candidates(&self) -> usize {
        self.candidates
    }

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
        }
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
/// use glam::Vec3;
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
    /// The memory of the contacts' sort ([`order_contacts`]).
    sorting: Sorting,
    /// Per body, the index of its first contact in order (`u32::MAX` for none).
    first: Scratch,
    contacts: Contacts,
    stage_times: StageTimes,
}

/// The wall-clock time of each stage of the last [`ContactFinder::find`].
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// Validating and packing the bodies ([`World::update`]).
    pub validate: Duration,
    /// The broad phase's tree: swept boxes, Morton codes, sort, hierarchy and its boxes.
    pub build: Duration,
    /// Each body's query of the tree and the full answer of its candidates.
    pub candidates_and_sweep: Duration,
    /// Gathering, ordering and the earliest contact per body.
    pub order: Duration,
}

/// One task's candidates and their answers, kept for the next step.
#[derive(Clone, Debug, Default)]
struct Task {
    /// The queries' stack.
    stack: Vec<u32>,
    pairs: Vec<[u32; 2]>,
    impacts: Vec<Option<Impact>>,
    contacts: Vec<Contact>,
    /// Each contact's bucket in the sort.
    buckets: Vec<u16>,
    /// Per bucket, where the task's next contact in it goes.
    places: Vec<usize>,
}

impl ContactFinder {
    /// A finder with no memory yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The contacts of the step of `bodies` with `options`: see [`find_contacts`].
    ///
    /// # Errors
    /// As [`find_contacts`]; the previous step's contacts are cleared.
    ///
    /// # Panics
    /// As [`find_contacts`].
    pub fn find<B>(&mut self, bodies: &[B], options: SweepOptions) -> Result<&Contacts, Error>
    where
        B: Copy + Into<MovingSphere>,
    {
        self.contacts.contacts.clear();
        self.contacts.earliest.clear();
        self.contacts.candidates = 0;
        if bodies.len() > MAX_BODIES {
            return Err(Error::TooManyBodies {
                count: bodies.len(),
                max: MAX_BODIES,
            });
        }
        let start = Instant::now();
        self.world.update(bodies, options)?;
        let validated = Instant::now();
        self.bvh.build(self.world.bodies(), &self.world.params);
        let built = Instant::now();
        // At least eight tasks a thread where the bodies allow, so that a small step keeps
        // every core busy to its end.
        let task_bodies = (self.bvh.len() / (8 * rayon::current_num_threads()))
            .next_multiple_of(PACKET)
            .clamp(MIN_TASK_BODIES, TASK_BODIES);
        let task_count = self.bvh.len().div_ceil(task_bodies);
        self.tasks
            .resize_with(task_count.max(self.tasks.len()), Task::default);
        let (world, bvh) = (&self.world, &self.bvh);
        self.tasks[..task_count]
            .par_iter_mut()
            .enumerate()
            .for_each(|(index, task)| {
                task.pairs.clear();
                let end = ((index + 1) * task_bodies).min(bvh.len());
                for first in (index * task_bodies..end).step_by(PACKET) {
                    bvh.candidates_from(first, &mut task.stack, |pair| task.pairs.push(pair));
                }
                world
                    .sweep_into(&task.pairs, &mut task.impacts)
                    .expect("the tree holds only the world's bodies");
                task.contacts.clear();
                task.contacts
                    .extend(
                        task.pairs
                            .iter()
                            .zip(&task.impacts)
                            .filter_map(|(&pair, impact)| {
                                Some(Contact {
                                    pair,
                                    image: image_of(world, pair),
                                    impact: (*impact)?,
                                })
                            }),
                    );
            });
        let swept = Instant::now();
        self.contacts.candidates = self.tasks[..task_count]
            .iter()
            .map(|task| task.pairs.len())
            .sum();
        order_contacts(
            &mut self.tasks[..task_count],
            &mut self.sorting,
            &mut self.contacts.contacts,
        );
        if self.world.params.flags & FLAG_PERIODIC != 0 {
            // In a periodic box, two bodies whose boxes together span a whole period (each
            // within a hair of the reach rule's quarter period, widened by the margin) meet
            // through two images and are found twice. Their sweeps are the same, so their
            // contacts are equal and, ordered, side by side: keep one. (Without a box each
            // pair is found once.)
            self.contacts.contacts.dedup_by_key(|contact| contact.pair);
        }
        earliest_per_body(
            &self.contacts.contacts,
            bodies.len(),
            &mut self.first.0,
            &mut self.contacts.earliest,
        );
        self.stage_times = StageTimes {
            validate: validated - start,
            build: built - validated,
            candidates_and_sweep: swept - built,
            order: swept.elapsed(),
        };
        Ok(&self.contacts)
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
                    + bytes(&task.impacts)
                    + bytes(&task.contacts)
                    + bytes(&task.buckets)
                    + bytes(&task.places)
            })
            .sum();
        self.world.memory_bytes()
            + self.bvh.memory_bytes()
            + tasks
            + bytes(&self.sorting.sample)
            + bytes(&self.sorting.splitters)
            + bytes(&self.sorting.starts)
            + bytes(&self.sorting.unordered)
            + bytes(&self.first.0)
            + bytes(&self.contacts.contacts)
            + bytes(&self.contacts.earliest)
    }
}

/// Atomics rebuilt every step, which a clone of the finder leaves behind.
#[derive(Debug, Default)]
struct Scratch(Vec<AtomicU32>);

impl Clone for Scratch {
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// Contacts per bucket of the sort, about: a bucket's keys sort within a core's L2 cache,
/// and its contacts (some 80 B each) are ordered within it.
const BUCKET_CONTACTS: usize = 4096;

/// The most buckets: every task keeps a place per bucket, and the places are counted out
/// bucket by bucket, task by task, on one thread (a million bodies, 490 tasks, make half a
/// million places).
const MAX_BUCKETS: usize = 1024;

/// Samples of the contacts per bucket, from which the buckets' bounds are drawn.
const SAMPLES_PER_BUCKET: usize = 32;

/// The memory of [`order_contacts`], kept from step to step.
#[derive(Clone, Debug, Default)]
struct Sorting {
    /// The first parts of the sampled contacts' keys.
    sample: Vec<u64>,
    /// The bounds of the buckets, drawn from the sample.
    splitters: Vec<u64>,
    /// Where each bucket starts in order, and the end of the last.
    starts: Vec<usize>,
    /// The tasks' contacts by bucket.
    unordered: Vec<Contact>,
}

/// The tasks' contacts in [`order`], written into `ordered`: a sample sort.
///
/// The contacts are split into buckets of consecutive keys, bounded by splitters drawn from
/// a sample of them; each task copies each of its contacts to its bucket's next place in
/// `sorting.unordered`; then each bucket, in parallel, sorts its keys in cache and copies its
/// contacts in order into `ordered`. Each contact is read and written twice, each time
/// within a stream or a bucket (one sort of all the keys, then fetching the contacts in
/// order, reads them from anywhere in memory).
fn order_contacts(tasks: &mut [Task], sorting: &mut Sorting, ordered: &mut Vec<Contact>) {
    let Sorting {
        sample,
        splitters,
        starts,
        unordered,
    } = sorting;
    let total: usize = tasks.iter().map(|task| task.contacts.len()).sum();
    // Contacts are numbered in 32 bits (`Earliest::contact`): 2³² of them would take over
    // 300 GB, beyond any step this library can hold.
    assert!(
        u32::try_from(total).is_ok(),
        "more than 2^32 contacts in one step"
    );
    let buckets = (total / BUCKET_CONTACTS).clamp(1, MAX_BUCKETS);
    draw_splitters(tasks, total, buckets, sample, splitters);
    let splitters = &splitters[..];
    // Each contact's bucket, and how many each task has in each.
    tasks.par_iter_mut().for_each(|task| {
        task.places.clear();
        task.places.resize(buckets, 0);
        task.buckets.clear();
        for contact in &task.contacts {
            let bucket = bucket_of(splitters, order(contact).0);
            task.places[bucket] += 1;
            task.buckets.push(bucket as u16);
        }
    });
    // Bucket by bucket, then task by task: where each task's first contact in each goes.
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
    unordered.clear();
    unordered.reserve(total);
    let base = SharedPlaces(unordered.spare_capacity_mut().as_mut_ptr());
    tasks.par_iter_mut().for_each(|task| {
        let base = &base;
        for (contact, &bucket) in task.contacts.iter().zip(&task.buckets) {
            let place = &mut task.places[usize::from(bucket)];
            // SAFETY: the places of all tasks and buckets are distinct and below `total`,
            // which `unordered` has room for: each task counts out its own contacts within
            // its own span of each bucket. No two threads write one place.
            unsafe {
                base.0
                    .add(*place)
                    .write(std::mem::MaybeUninit::new(*contact))
            };
            *place += 1;
        }
    });
    // SAFETY: every place below `total` was written above, once.
    unsafe { unordered.set_len(total) };
    ordered.clear();
    ordered.reserve(total);
    let mut rest = &mut ordered.spare_capacity_mut()[..total];
    let mut work = Vec::with_capacity(buckets);
    for bounds in starts.windows(2) {
        let (into, after) = rest.split_at_mut(bounds[1] - bounds[0]);
        work.push((&unordered[bounds[0]..bounds[1]], into));
        rest = after;
    }
    work.into_par_iter()
        .for_each_init(Vec::new, |keys, (bucket, into)| {
            keys.clear();
            // The order, then the contact's index in the bucket, as one integer.
            keys.extend(bucket.iter().enumerate().map(|(index, contact)| {
                let (high, second) = order(contact);
                (u128::from(high) << 64) | (u128::from(second) << 32) | index as u128
            }));
            // A bucket far beyond its share (keys whose first part repeats, such as one
            // body that overlaps thousands at the start of the step) sorts on all cores.
            if keys.len() > 8 * BUCKET_CONTACTS {
                keys.par_sort_unstable();
            } else {
                keys.sort_unstable();
            }
            for (place, &key) in into.iter_mut().zip(keys.iter()) {
                place.write(bucket[key as u32 as usize]);
            }
        });
    // SAFETY: each bucket wrote every place of its span, and the spans cover `total`.
    unsafe { ordered.set_len(total) };
}

/// The start of the spare capacity that [`order_contacts`]'s tasks write into.
struct SharedPlaces(*mut std::mem::MaybeUninit<Contact>);

// SAFETY: the tasks write distinct places through it (see `order_contacts`).
unsafe impl Sync for SharedPlaces {}

/// Draws `buckets - 1` bounds of the buckets from an even sample of the tasks' `total`
/// contacts, as the first part of their [`order`]: bucket `k` holds the contacts whose first
/// part is from `splitters[k - 1]` up to (not including) `splitters[k]`.
fn draw_splitters(
    tasks: &[Task],
    total: usize,
    buckets: usize,
    sample: &mut Vec<u64>,
    splitters: &mut Vec<u64>,
) {
    splitters.clear();
    if buckets < 2 {
        return;
    }
    let samples = (buckets * SAMPLES_PER_BUCKET).min(total);
    sample.clear();
    let (mut task, mut first) = (0, 0);
    for k in 0..samples {
        let index = k * total / samples;
        while index >= first + tasks[task].contacts.len() {
            first += tasks[task].contacts.len();
            task += 1;
        }
        sample.push(order(&tasks[task].contacts[index - first]).0);
    }
    sample.sort_unstable();
    splitters.extend((1..buckets).map(|k| sample[k * samples / buckets]));
}

/// The bucket of `key`: how many of `splitters` (ordered) are at most `key`. A search of
/// sixteen ways a round (three rounds for 1,024 buckets, where a binary search takes ten
/// rounds of one dependent load each): each round's fifteen compares are independent, and
/// summed rather than branched on, whose outcomes no predictor could guess.
fn bucket_of(splitters: &[u64], key: u64) -> usize {
    // The answer lies in `base..base + size`.
    let (mut base, mut size) = (0, splitters.len() + 1);
    while size > 1 {
        let step = size.div_ceil(16);
        // Probe `j` asks whether the answer is at least `base + j · step`.
        let at_least = (1..16)
            .filter(|j| j * step < size)
            .map(|j| usize::from(splitters[base + j * step - 1] <= key))
            .sum::<usize>();
        base += at_least * step;
        size = step.min(size - at_least * step);
    }
    base
}

/// Each body's earliest contact in `contacts` (ordered) and its partner: in the contacts'
/// order the first contact of a body is its earliest, and among equal times the one with the
/// lowest partner (the pairs (p, body) with p < body come first, by p, then (body, p), by
/// p). The first is found by an atomic minimum of the contacts' indices, in parallel;
/// `first` is scratch memory.
fn earliest_per_body(
    contacts: &[Contact],
    bodies: usize,
    first: &mut Vec<AtomicU32>,
    earliest: &mut Vec<Option<Earliest>>,
) {
    first.clear();
    first.par_extend(
        (0..bodies)
            .into_par_iter()
            .map(|_| AtomicU32::new(u32::MAX)),
    );
    contacts
        .par_iter()
        .enumerate()
        .for_each(|(index, contact)| {
            for body in contact.pair {
                first[body as usize].fetch_min(index as u32, Ordering::Relaxed);
            }
        });
    first
        .par_iter()
        .enumerate()
        .map(|(body, index)| {
            let index = index.load(Ordering::Relaxed);
            let [a, b] = contacts.get(index as usize)?.pair;
            Some(Earliest {
                contact: index,
                partner: if a == body as u32 { b } else { a },
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

/// The contacts' order: time of impact (never negative, so its bits order it), then pair,
/// as two parts.
fn order(contact: &Contact) -> (u64, u32) {
    let time = u64::from(contact.impact.time_of_impact.to_bits());
    ((time << 32) | u64::from(contact.pair[0]), contact.pair[1])
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
/// see the README) finds them, and the full answer of each is the f32 sweep's on lanes,
/// exactly the twin's. Both run on all cores (rayon). The contacts are exactly those of
/// sweeping every pair with [`World::sweep_into`]: the boxes are widened so that no pair the
/// sweep can call a hit is left out.
///
/// A simulation that runs every step keeps a [`ContactFinder`], which reuses its memory.
///
/// # Errors
/// The typed errors of [`World::update`] for a bad body or a periodic box too small for one;
/// [`Error::TooManyBodies`] beyond [`MAX_BODIES`]. No bodies, or one, give no contacts.
///
/// # Panics
/// Beyond 2³² contacts in one step (over 300 GB of them).
///
/// # Example
/// ```
/// use glam::Vec2;
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
    use crate::geometry::ImpactStatus;

    /// A 64-bit linear congruential generator's high bits.
    fn random(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *state >> 33
    }

    /// The search counts the splitters at most the key, as a plain binary search does, for
    /// every number of splitters up to a few hundred, with runs of equal ones.
    #[test]
    fn bucket_of_counts_the_splitters_at_most_the_key() {
        let mut state = 7;
        for len in (0..300).chain([1023]) {
            let mut splitters: Vec<u64> = (0..len).map(|_| random(&mut state) % 64).collect();
            splitters.sort_unstable();
            for key in 0..70 {
                let expected = splitters.partition_point(|&s| s <= key);
                assert_eq!(
                    bucket_of(&splitters, key),
                    expected,
                    "{len} splitters, key {key}"
                );
            }
        }
    }

    /// A contact of `pair` at `time`, its other fields fixed.
    fn contact(time: f32, pair: [u32; 2], status: ImpactStatus) -> Contact {
        Contact {
            pair,
            image: [0; 3],
            impact: Impact {
                time_of_impact: time,
                point: Vec3::ZERO,
                normal: Vec3::X,
                displacement_a: Vec3::ZERO,
                displacement_b: Vec3::ZERO,
                status,
            },
        }
    }

    /// The tasks' contacts by [`order_contacts`], then by a plain sort, and the splitters
    /// the first drew.
    fn order_and_sort(tasks: &mut [Task]) -> (Vec<Contact>, Vec<Contact>, Vec<u64>) {
        let mut expected: Vec<Contact> = tasks
            .iter()
            .flat_map(|task| task.contacts.clone())
            .collect();
        expected.sort_by_key(order);
        let (mut sorting, mut ordered) = (Sorting::default(), Vec::new());
        order_contacts(tasks, &mut sorting, &mut ordered);
        (ordered, expected, sorting.splitters)
    }

    /// The sample sort gives the contacts in order, with every one kept, from tasks of every
    /// size (empty ones too) and keys with many ties in their first part (time 0, as for
    /// overlapping pairs, and one body with many partners), in one bucket and in hundreds.
    #[test]
    fn order_contacts_sorts_every_contact() {
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
                    let second = first + 1 + (random(&mut state) % 100_000) as u32;
                    let pair = [first, second];
                    task.contacts
                        .push(contact(time, pair, ImpactStatus::Contact));
                }
                made += size;
                tasks.push(task);
            }
            let (ordered, expected, splitters) = order_and_sort(&mut tasks);
            assert_eq!(ordered, expected, "{total_wanted} contacts");
            assert!(total_wanted < 300_000 || splitters.len() > 50);
        }
    }

    /// One body that overlaps 40,000 others at the start: every key's first part is the same,
    /// so every contact falls in one bucket, which sorts on all cores, in order.
    #[test]
    fn order_contacts_sorts_one_full_bucket() {
        let mut state = 3;
        let mut tasks: Vec<Task> = (0..4).map(|_| Task::default()).collect();
        for k in 0..40_000 {
            let second = 1 + (random(&mut state) % 1_000_000) as u32;
            tasks[k % 4]
                .contacts
                .push(contact(0.0, [0, second], ImpactStatus::Overlapping));
        }
        let (ordered, expected, splitters) = order_and_sort(&mut tasks);
        assert!(
            splitters.iter().all(|&s| s == 0),
            "one bucket holds them all"
        );
        assert_eq!(ordered, expected);
    }
}
