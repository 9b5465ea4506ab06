//! The contacts' order and its sort: each hit's key (its time, then its pair, as one
//! integer), the tasks that hold the keys, and the sample sort of the tasks' keys into
//! buckets that each sort in cache ([`sort_keys`]).

use crate::par::{self, prelude::*};

use super::scatter::scatter_to_places;
use crate::answers::TimeOfImpact;

/// A contact's place in the contacts' order, as one integer: the bits of its time of impact
/// (never negative, so that they order it), then its pair; the lowest 32 bits are 0.
pub(super) type Key = u128;

/// The [`Key`] of a contact of `pair` at `time`.
pub(super) fn key(time: f32, [a, b]: [u32; 2]) -> Key {
    (u128::from(time.to_bits()) << 96) | (u128::from(a) << 64) | (u128::from(b) << 32)
}

/// The pair of a [`Key`].
pub(super) fn pair_of(key: Key) -> [u32; 2] {
    [(key >> 64) as u32, (key >> 32) as u32]
}

/// The first half of a [`Key`] (the time and the first body), from which the sort's
/// buckets are drawn.
fn first_half(key: Key) -> u64 {
    (key >> 64) as u64
}

/// One task's candidates and their answers, kept for the next step.
#[derive(Clone, Debug, Default)]
pub(super) struct Task {
    /// The queries' stack.
    pub(super) stack: Vec<u32>,
    pub(super) pairs: Vec<[u32; 2]>,
    /// Each candidate's time of impact, or a miss.
    pub(super) times: Vec<TimeOfImpact>,
    /// The [`Key`] of each hit.
    pub(super) keys: Vec<Key>,
    /// Each key's bucket in the sort.
    pub(super) buckets: Vec<u16>,
    /// Per bucket, where the task's next key in it goes.
    pub(super) places: Vec<usize>,
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

/// The memory of the contacts' sort ([`sort_keys`]), kept from step to step.
#[derive(Clone, Debug, Default)]
pub(super) struct Sorting {
    /// The first halves of the sampled keys.
    pub(super) sample: Vec<u64>,
    /// The bounds of the buckets, drawn from the sample.
    pub(super) splitters: Splitters,
    /// Where each bucket starts in `unordered`, and the end of the last.
    pub(super) starts: Vec<usize>,
    /// The tasks' keys by bucket; each bucket's first `kept` are its keys in order.
    pub(super) unordered: Vec<Key>,
    /// Per bucket, how many of its keys are kept (all, or one of each run of equal ones).
    pub(super) kept: Vec<usize>,
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
/// 16-byte keys move: `write_contacts` (in `step.rs`) makes the contacts once, in order.
pub(super) fn sort_keys(tasks: &mut [Task], sorting: &mut Sorting, dedup: bool) {
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
pub(super) struct Splitters {
    /// Ordered: bucket `k` holds the keys from `bounds[k - 1]` up to (not including)
    /// `bounds[k]`.
    pub(super) bounds: Vec<u64>,
    /// The table's parts: the keys below [`TIMED`], then the others.
    parts: [Part; 2],
    /// Per cell of each part, how many bounds lie below its start; then how many lie below
    /// the part's end.
    pub(super) cells: Vec<u32>,
    /// The bounds, then four more that no key reaches, so that four compares from any
    /// bound stay within it.
    pub(super) padded: Vec<u64>,
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
