//! The CPU paths' parallelism, in one place: rayon's with the `parallel` feature, else the
//! same calls run on the calling thread, in order.
//!
//! Every file imports `crate::par::prelude::*` and calls `par::join` and the like (never
//! `rayon` itself), so that the crate builds with
//! either. The serial side offers only what the crate calls, under rayon's names and with
//! rayon's meaning, so a call reads the same both ways; it behaves as rayon does on a pool of
//! one thread ([`current_num_threads`] is 1), which the tests compare with larger pools.
//!
//! Every parallel computation of the crate gives the same answer however it is split: its
//! reductions are exact (maxima, minima, unions of boxes, bitwise or, integer sums), its sorts
//! are of keys with no two equal (or of equal keys that are identical), and the thread count
//! only decides how the work is cut, never what is computed.

#[cfg(feature = "parallel")]
pub(crate) use rayon::iter::repeat_n;
#[cfg(feature = "parallel")]
pub(crate) use rayon::{current_num_threads, join, scope};

/// The traits that give slices, vectors and ranges rayon's methods (`par_iter`, ...).
pub(crate) mod prelude {
    #[cfg(feature = "parallel")]
    pub(crate) use rayon::prelude::*;

    #[cfg(not(feature = "parallel"))]
    pub(crate) use super::serial::{
        IntoParallelIterator, ParallelExtend, ParallelIterator, ParallelSlice,
    };
}

#[cfg(not(feature = "parallel"))]
pub(crate) use serial::{current_num_threads, join, repeat_n, scope};

/// rayon's calls as the crate makes them, run in order on the calling thread.
#[cfg(not(feature = "parallel"))]
mod serial {
    /// The number of threads that work runs on: one.
    pub(crate) fn current_num_threads() -> usize {
        1
    }

    /// Runs `a`, then `b`.
    pub(crate) fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA,
        B: FnOnce() -> RB,
    {
        let a = a();
        (a, b())
    }

    /// What rayon's `scope` hands its closure; nothing is spawned on it here.
    pub(crate) struct Scope;

    /// Runs `f` on the calling thread.
    pub(crate) fn scope<R>(f: impl FnOnce(&Scope) -> R) -> R {
        f(&Scope)
    }

    /// `count` clones of `item`.
    pub(crate) fn repeat_n<T: Clone>(item: T, count: usize) -> Serial<std::iter::RepeatN<T>> {
        Serial(std::iter::repeat_n(item, count))
    }

    /// An iterator in the place of a rayon parallel iterator: rayon's adapters, in order.
    pub(crate) struct Serial<I>(I);

    impl<I: Iterator> IntoIterator for Serial<I> {
        type Item = I::Item;
        type IntoIter = I;
        fn into_iter(self) -> I {
            self.0
        }
    }

    /// rayon's `ParallelIterator`, as far as the crate uses it.
    pub(crate) trait ParallelIterator: Sized + IntoIterator {
        /// Each item into `f`.
        fn map<R, F: FnMut(Self::Item) -> R>(
            self,
            f: F,
        ) -> Serial<std::iter::Map<Self::IntoIter, F>> {
            Serial(self.into_iter().map(f))
        }

        /// Each item into `f`, with a state made once by `init` (rayon makes one a split).
        fn map_init<S, R>(
            self,
            init: impl FnOnce() -> S,
            mut f: impl FnMut(&mut S, Self::Item) -> R,
        ) -> Serial<impl Iterator<Item = R>> {
            let mut state = init();
            Serial(self.into_iter().map(move |item| f(&mut state, item)))
        }

        /// The items with their indices.
        fn enumerate(self) -> Serial<std::iter::Enumerate<Self::IntoIter>> {
            Serial(self.into_iter().enumerate())
        }

        /// The items beside `other`'s.
        fn zip<J: IntoIterator>(
            self,
            other: J,
        ) -> Serial<std::iter::Zip<Self::IntoIter, J::IntoIter>> {
            Serial(self.into_iter().zip(other))
        }

        /// The items, copied.
        fn copied<'a, T: 'a + Copy>(self) -> Serial<std::iter::Copied<Self::IntoIter>>
        where
            Self: IntoIterator<Item = &'a T>,
        {
            Serial(self.into_iter().copied())
        }

        /// `f` on each item.
        fn for_each(self, f: impl FnMut(Self::Item)) {
            self.into_iter().for_each(f);
        }

        /// `f` on each item, with a state made once by `init` (rayon makes one a split).
        fn for_each_init<S>(self, init: impl FnOnce() -> S, mut f: impl FnMut(&mut S, Self::Item)) {
            let mut state = init();
            self.into_iter().for_each(|item| f(&mut state, item));
        }

        /// The items joined by `op`, from `identity()` (rayon joins in a tree: the crate's
        /// `op`s are associative and exact, so the answer is the same).
        fn reduce(
            self,
            identity: impl FnOnce() -> Self::Item,
            op: impl FnMut(Self::Item, Self::Item) -> Self::Item,
        ) -> Self::Item {
            self.into_iter().fold(identity(), op)
        }

        /// The items joined by `op`; `None` for none.
        fn reduce_with(
            self,
            op: impl FnMut(Self::Item, Self::Item) -> Self::Item,
        ) -> Option<Self::Item> {
            self.into_iter().reduce(op)
        }

        /// The items, collected.
        fn collect<C: FromIterator<Self::Item>>(self) -> C {
            self.into_iter().collect()
        }

        /// The items, in `into` (cleared first).
        fn collect_into_vec(self, into: &mut Vec<Self::Item>) {
            into.clear();
            into.extend(self);
        }
    }

    impl<I: Iterator> ParallelIterator for Serial<I> {}

    /// rayon's `into_par_iter`.
    pub(crate) trait IntoParallelIterator: IntoIterator + Sized {
        /// The items, as rayon's parallel iterator would give them.
        fn into_par_iter(self) -> Serial<Self::IntoIter> {
            Serial(self.into_iter())
        }
    }

    impl<T: IntoIterator> IntoParallelIterator for T {}

    /// rayon's `par_iter`, `par_iter_mut`, `par_chunks` and `par_chunks_mut` on slices.
    pub(crate) trait ParallelSlice<T> {
        /// The items by reference.
        fn par_iter(&self) -> Serial<std::slice::Iter<'_, T>>;
        /// The items by mutable reference.
        fn par_iter_mut(&mut self) -> Serial<std::slice::IterMut<'_, T>>;
        /// Chunks of `size` items (the last one shorter).
        fn par_chunks(&self, size: usize) -> Serial<std::slice::Chunks<'_, T>>;
        /// Mutable chunks of `size` items (the last one shorter).
        fn par_chunks_mut(&mut self, size: usize) -> Serial<std::slice::ChunksMut<'_, T>>;
        /// Sorted, as `sort_unstable`.
        fn par_sort_unstable(&mut self)
        where
            T: Ord;
    }

    impl<T> ParallelSlice<T> for [T] {
        fn par_iter(&self) -> Serial<std::slice::Iter<'_, T>> {
            Serial(self.iter())
        }
        fn par_iter_mut(&mut self) -> Serial<std::slice::IterMut<'_, T>> {
            Serial(self.iter_mut())
        }
        fn par_chunks(&self, size: usize) -> Serial<std::slice::Chunks<'_, T>> {
            Serial(self.chunks(size))
        }
        fn par_chunks_mut(&mut self, size: usize) -> Serial<std::slice::ChunksMut<'_, T>> {
            Serial(self.chunks_mut(size))
        }
        fn par_sort_unstable(&mut self)
        where
            T: Ord,
        {
            self.sort_unstable();
        }
    }

    /// rayon's `par_extend`.
    pub(crate) trait ParallelExtend<T> {
        /// `items` appended, in order.
        fn par_extend(&mut self, items: impl IntoIterator<Item = T>);
    }

    impl<T> ParallelExtend<T> for Vec<T> {
        fn par_extend(&mut self, items: impl IntoIterator<Item = T>) {
            self.extend(items);
        }
    }
}
