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
        let last = self.heap.len() - 1;
        self.swap(place, last);
        let gone = self.heap.pop().expect("the queue holds the body");
        self.place[gone.body as usize] = ABSENT;
        if place < self.heap.len() {
            self.up(place);
            self.down(place);
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.place[self.heap[a].body as usize] = a as u32;
        self.place[self.heap[b].body as usize] = b as u32;
    }

    fn up(&mut self, mut place: usize) {
        while place > 0 {
            let parent = (place - 1) / 2;
            if self.heap[place] >= self.heap[parent] {
                break;
            }
            self.swap(place, parent);
            place = parent;
        }
    }

    fn down(&mut self, mut place: usize) {
        let n = self.heap.len();
        loop {
            let left = 2 * place + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && self.heap[right] < self.heap[left] {
                right
            } else {
                left
            };
            if self.heap[child] >= self.heap[place] {
                break;
            }
            self.swap(place, child);
            place = child;
        }
    }
}
