//! The event loop's queue: each body's next event time in a binary heap indexed by body, so
//! that a body's event predicted again moves in place (no outdated entries to skip), and
//! the heap holds one entry a body at most.

/// A time made into an integer that orders as the times do (`f64::total_cmp`), with the
/// body to break ties: the heap compares integers only.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    time: u64,
    body: u32,
}

const SIGN: u64 = 1 << 63;

fn ordered(time: f64) -> u64 {
    let bits = time.to_bits();
    if bits & SIGN == 0 { bits | SIGN } else { !bits }
}

fn unordered(key: u64) -> f64 {
    f64::from_bits(if key & SIGN != 0 { key & !SIGN } else { !key })
}

/// Bodies by the time of their next event, the earliest (then the lowest body) first.
#[derive(Clone, Debug, Default)]
pub(super) struct EventQueue {
    heap: Vec<Key>,
    /// Per body, its place in `heap`, or `ABSENT`.
    place: Vec<u32>,
}

const ABSENT: u32 = u32::MAX;

/// Children a node: four to a node keeps the heap shallow, and a node's children (16 bytes
/// each) in one cache line.
const ARITY: usize = 4;

impl EventQueue {
    /// An empty queue for `n` bodies.
    pub(super) fn clear(&mut self, n: usize) {
        self.heap.clear();
        self.place.clear();
        self.place.resize(n, ABSENT);
    }

    /// The earliest body and its time.
    pub(super) fn first(&self) -> Option<(usize, f64)> {
        self.heap
            .first()
            .map(|key| (key.body as usize, unordered(key.time)))
    }

    /// The body that comes second (the earliest of the first's children), if any.
    pub(super) fn second(&self) -> Option<usize> {
        let children = self.heap.get(1..self.heap.len().min(ARITY + 1))?;
        children.iter().min().map(|key| key.body as usize)
    }

    /// Sets `body`'s time to `time` (infinite: takes it out).
    pub(super) fn set(&mut self, body: usize, time: f64) {
        let place = self.place[body];
        if !time.is_finite() {
            if place != ABSENT {
                self.take_out(place as usize);
            }
            return;
        }
        let key = Key {
            time: ordered(time),
            body: body as u32,
        };
        if place == ABSENT {
            self.heap.push(key);
            self.place[body] = (self.heap.len() - 1) as u32;
            self.up(self.heap.len() - 1);
        } else {
            let place = place as usize;
            let earlier = key < self.heap[place];
            self.heap[place] = key;
            if earlier {
                self.up(place);
            } else {
                self.down(place);
            }
        }
    }

    fn take_out(&mut self, place: usize) {
        let gone = self.heap[place].body;
        let last = self.heap.pop().expect("the queue holds the body");
        self.place[gone as usize] = ABSENT;
        if place < self.heap.len() {
            self.heap[place] = last;
            self.place[last.body as usize] = place as u32;
            self.up(place);
            self.down(self.place[last.body as usize] as usize);
        }
    }

    /// Moves the key at `place` up past its parents while it comes first, each parent
    /// moved down a level into the hole it leaves.
    fn up(&mut self, mut place: usize) {
        let key = self.heap[place];
        while place > 0 {
            let parent = (place - 1) / ARITY;
            if key >= self.heap[parent] {
                break;
            }
            self.put(place, self.heap[parent]);
            place = parent;
        }
        self.put(place, key);
    }

    /// Moves the key at `place` down past its earliest child while that comes first, each
    /// child moved up a level into the hole it leaves.
    fn down(&mut self, mut place: usize) {
        let key = self.heap[place];
        let n = self.heap.len();
        loop {
            let first = ARITY * place + 1;
            if first >= n {
                break;
            }
            // The earliest child: of four, by two comparisons of two.
            let mut best = first;
            if first + ARITY <= n {
                let a = if self.heap[first + 1] < self.heap[first] {
                    first + 1
                } else {
                    first
                };
                let b = if self.heap[first + 3] < self.heap[first + 2] {
                    first + 3
                } else {
                    first + 2
                };
                best = if self.heap[b] < self.heap[a] { b } else { a };
            } else {
                for child in first + 1..n {
                    if self.heap[child] < self.heap[best] {
                        best = child;
                    }
                }
            }
            let child = self.heap[best];
            if child >= key {
                break;
            }
            self.put(place, child);
            place = best;
        }
        self.put(place, key);
    }

    fn put(&mut self, place: usize, key: Key) {
        self.heap[place] = key;
        self.place[key.body as usize] = place as u32;
    }
}
