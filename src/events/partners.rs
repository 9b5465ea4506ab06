//! Each body's partners, side by side in one array (`Partners`), within the loop's limit
//! of partner slots.

use crate::error::Error;

/// Each body's partners, side by side in one array: body `i`'s are
/// `slots[i * capacity..][..degree[i]]` (one read where a list of its own would take two);
/// the capacity doubles when a body has more, up to `limit` slots in all.
#[derive(Clone, Debug, Default)]
pub(super) struct Partners {
    capacity: usize,
    degree: Vec<u32>,
    slots: Vec<u32>,
    limit: u64,
}

impl Partners {
    /// `n` bodies with no partners, room for `degree` each (at least 16), within `limit`
    /// slots in all.
    pub(super) fn clear(&mut self, n: usize, degree: usize, limit: u64) -> Result<(), Error> {
        self.limit = limit;
        self.degree.clear();
        self.degree.resize(n, 0);
        // Laid out anew for the most partners now, so that a burst does not stay.
        let capacity = degree.max(16).next_power_of_two();
        self.fits(n, capacity)?;
        self.capacity = capacity;
        self.slots.resize(n * capacity, 0);
        Ok(())
    }

    /// Whether `n` bodies of `capacity` slots fit the limit ([`Error::TooManyPartners`]).
    fn fits(&self, n: usize, capacity: usize) -> Result<(), Error> {
        let slots = (n as u64).saturating_mul(capacity as u64);
        if slots > self.limit {
            return Err(Error::TooManyPartners {
                at_least: slots,
                limit: self.limit,
            });
        }
        Ok(())
    }

    pub(super) fn of(&self, body: usize) -> &[u32] {
        &self.slots[body * self.capacity..][..self.degree[body] as usize]
    }

    pub(super) fn push(&mut self, body: usize, other: u32) -> Result<(), Error> {
        let degree = self.degree[body] as usize;
        if degree == self.capacity {
            self.grow()?;
        }
        self.slots[body * self.capacity + degree] = other;
        self.degree[body] += 1;
        Ok(())
    }

    /// Takes `other` out of `body`'s partners (the last one takes its place).
    pub(super) fn remove(&mut self, body: usize, other: u32) {
        let start = body * self.capacity;
        let degree = self.degree[body] as usize;
        if let Some(at) = self.slots[start..start + degree]
            .iter()
            .position(|&partner| partner == other)
        {
            self.slots[start + at] = self.slots[start + degree - 1];
            self.degree[body] -= 1;
        }
    }

    pub(super) fn replace(&mut self, body: usize, partners: &[u32]) -> Result<(), Error> {
        while partners.len() > self.capacity {
            self.grow()?;
        }
        self.slots[body * self.capacity..][..partners.len()].copy_from_slice(partners);
        self.degree[body] = partners.len() as u32;
        Ok(())
    }

    /// Doubles the capacity, each body's partners moved to their new place.
    fn grow(&mut self) -> Result<(), Error> {
        let (old, capacity) = (self.capacity, 2 * self.capacity);
        let n = self.degree.len();
        self.fits(n, capacity)?;
        self.slots.resize(n * capacity, 0);
        for body in (0..n).rev() {
            let degree = self.degree[body] as usize;
            self.slots
                .copy_within(body * old..body * old + degree, body * capacity);
        }
        self.capacity = capacity;
        Ok(())
    }
}
