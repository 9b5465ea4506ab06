//! The parallel scatters the step and its tree share: items written to places counted out
//! beforehand (a counting sort's scatter), and parts copied one after another.

use crate::par::{self, prelude::*};

/// Writes every item of the `parts` to its place in `into`, whose length becomes `total`
/// (the scatter of a counting sort), the parts in parallel. Each part gives its items with
/// their buckets, and its places: where its next item of each bucket goes, counted out
/// beforehand bucket by bucket, then part by part.
///
/// # Safety
/// The places must have been counted out from these very items: over all the parts, every
/// item's place is distinct and below `total`, and every place below `total` is some item's.
pub(crate) unsafe fn scatter_to_places<'a, T, I>(
    parts: impl ParallelIterator<Item = (I, &'a mut [usize])>,
    total: usize,
    into: &mut Vec<T>,
) where
    T: Copy + Send + Sync,
    I: Iterator<Item = (T, usize)>,
{
    /// The start of `into`'s spare capacity, shared by the parts.
    struct Places<T>(*mut std::mem::MaybeUninit<T>);
    // SAFETY: the parts write distinct places through it (the caller's contract).
    unsafe impl<T: Send> Sync for Places<T> {}

    into.clear();
    into.reserve(total);
    let base = Places(into.spare_capacity_mut().as_mut_ptr());
    parts.for_each(|(items, places)| {
        let base = &base;
        for (item, bucket) in items {
            let place = &mut places[bucket];
            // SAFETY: the place is below `total`, which `into` has room for, and no other
            // item has it (the caller's contract): no two threads write one place.
            unsafe { base.0.add(*place).write(std::mem::MaybeUninit::new(item)) };
            *place += 1;
        }
    });
    // SAFETY: every place below `total` was written above, once (the caller's contract).
    unsafe { into.set_len(total) };
}

/// Fills `into`, which holds exactly `parts` one after another, each part's place by `fill`
/// (given the part, its place and the place's offset in `into` plus `offset`): halves of the
/// parts in parallel, with no memory allocated.
pub(crate) fn scatter<P: Sync, T: Send>(
    parts: &[P],
    len: &(impl Fn(&P) -> usize + Sync),
    fill: &(impl Fn(&P, &mut [T], usize) + Sync),
    into: &mut [T],
    offset: usize,
) {
    match parts {
        [] => {}
        [part] => fill(part, into, offset),
        _ => {
            let (left, right) = parts.split_at(parts.len() / 2);
            let split = left.iter().map(len).sum();
            let (into_left, into_right) = into.split_at_mut(split);
            par::join(
                || scatter(left, len, fill, into_left, offset),
                || scatter(right, len, fill, into_right, offset + split),
            );
        }
    }
}
