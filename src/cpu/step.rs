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

/// Sorted leaves per rayon task of the queries and the narrow phase (a multiple of
/// [`PACKET`]).
const TASK_BODIES: usize = 2048;
const _: () = assert!(TASK_BODIES.is_multiple_of(PACKET));

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
    /// The tasks' contacts, gathered in task order.
    unordered: Vec<Contact>,
    /// Each gathered contact's [`order`] key.
    order: Vec<(u64, u32, u32)>,
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
        let task_count = self.bvh.len().div_ceil(TASK_BODIES);
        self.tasks
            .resize_with(task_count.max(self.tasks.len()), Task::default);
        let (world, bvh) = (&self.world, &self.bvh);
        self.tasks[..task_count]
            .par_iter_mut()
            .enumerate()
            .for_each(|(index, task)| {
                task.pairs.clear();
                let end = ((index + 1) * TASK_BODIES).min(bvh.len());
                for first in (index * TASK_BODIES..end).step_by(PACKET) {
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
        let tasks = &self.tasks[..task_count];
        self.contacts.candidates = tasks.iter().map(|task| task.pairs.len()).sum();
        // Sort 16-byte keys, not the 76-byte contacts, then gather the contacts in order.
        let total: usize = tasks.iter().map(|task| task.contacts.len()).sum();
        // Contacts are numbered in 32 bits (`Earliest::contact`, the order keys): 2³² of them
        // would take over 300 GB, beyond any step this library can hold.
        assert!(
            u32::try_from(total).is_ok(),
            "more than 2^32 contacts in one step"
        );
        gather_contacts(tasks, total, &mut self.unordered);
        self.unordered
            .par_iter()
            .enumerate()
            .map(|(index, contact)| order(contact, index))
            .collect_into_vec(&mut self.order);
        self.order.par_sort_unstable();
        let unordered = &self.unordered;
        self.order
            .par_iter()
            .map(|&(_, _, index)| unordered[index as usize])
            .collect_into_vec(&mut self.contacts.contacts);
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
            })
            .sum();
        self.world.memory_bytes()
            + self.bvh.memory_bytes()
            + tasks
            + bytes(&self.unordered)
            + bytes(&self.order)
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

/// Concatenates the tasks' contacts, `total` of them, into `into`, in task order, copying
/// in parallel.
fn gather_contacts(tasks: &[Task], total: usize, into: &mut Vec<Contact>) {
    into.clear();
    // Any contact fills the vector until the copies overwrite it.
    let Some(&filler) = tasks.iter().find_map(|task| task.contacts.first()) else {
        return;
    };
    into.resize(total, filler);
    super::scatter(
        tasks,
        &|task: &Task| task.contacts.len(),
        &|task: &Task, place: &mut [Contact], _| place.copy_from_slice(&task.contacts),
        into,
        0,
    );
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

/// The contacts' order: time of impact (never negative, so its bits order it), then pair;
/// with the contact's `index` among the gathered ones, to fetch it once ordered.
fn order(contact: &Contact, index: usize) -> (u64, u32, u32) {
    let time = u64::from(contact.impact.time_of_impact.to_bits());
    (
        (time << 32) | u64::from(contact.pair[0]),
        contact.pair[1],
        index as u32,
    )
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
