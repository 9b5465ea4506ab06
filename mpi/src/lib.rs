//! sweepcast's step across MPI ranks: one brick of [`sweepcast::bricks`] a rank, on a
//! Cartesian communicator of rsmpi over the system's MPI.
//!
//! Each step ([`MpiStep::find`]):
//!
//! 1. Every rank checks its owned bodies (valid, and each in its brick: a body that moved
//!    must be [migrated](MpiStep::migrate) first); the largest `radius + |displacement|` and
//!    a status word are reduced over all ranks, so that an error on one rank (bad input, a halo too
//!    wide for the bricks) is an error on every rank ([`Error::Step`] on the ranks that found
//!    it, [`Error::OtherRank`] on the rest), never a hang.
//! 2. The halo is exchanged in three staged axis exchanges (x, then y, then z; up, then
//!    down), each rank sending its neighbours what [`Bricks::halo_sends`] says, bodies
//!    unshifted, with their global indices and groups.
//! 3. The rank's [`BrickStep`] finds the answers it owns: each contact once across ranks,
//!    each owned body's earliest contact and wall, the one process's to the bit.
//!
//! Between steps [`MpiStep::migrate`] sends each body that left its rank's brick to its new
//! owner, hop by hop along the axes, until every rank owns exactly its bricks' bodies
//! ([`MpiStep::migrate_with`] carries a simulation's own values with them).
//!
//! A response that reads a partner's result (whether the partner's earliest contact is this
//! body, its velocity) needs it where the partner is a halo body, which only its owner has the
//! answers of: [`MpiStep::halo_values`] sends each owned body's values along the last step's
//! halo routes, so that each rank has its halo bodies' values from their owners. The example
//! `gas_across_ranks` runs a hard-sphere gas so, the same to the bit as in one process on
//! each number of ranks tested (1, 2, 3, 4 and 8; the bricks' halo, at most half a brick,
//! bounds how many ranks a box takes).
//!
//! Walls are given to every rank; a crashed rank is `mpirun`'s to end.

#![warn(missing_docs)]

use std::fmt;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use mpi::collective::SystemOperation;
use mpi::topology::{CartesianCommunicator, Rank};
use mpi::traits::*;
use sweepcast::bricks::{BrickStep, Bricks, Local, OwnedAnswers, halo_width, largest_reach};
use sweepcast::glam::Vec3;
use sweepcast::{CollisionGroups, MovingSphere, SweepOptions, Wall};

/// A rank's owned bodies, each with its global index and, where the step has collision
/// groups, its groups (empty where it has none, on every rank).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Owned {
    /// The bodies.
    pub bodies: Vec<MovingSphere>,
    /// Each body's global index.
    pub global: Vec<u32>,
    /// Each body's groups, or empty.
    pub groups: Vec<CollisionGroups>,
}

impl Owned {
    /// The bodies of `all` (with `groups`, one a body, or empty) whose centres `step`'s brick
    /// owns, their global indices their places in `all`: how a rank that knows the whole
    /// world takes its share.
    ///
    /// # Errors
    /// [`sweepcast::Error::GroupsLength`] where `groups` is neither empty nor one a body;
    /// [`sweepcast::Error::TooManyBodies`] where `all` holds more bodies than global indices
    /// (`u32`) name.
    pub fn of(
        step: &MpiStep,
        all: &[MovingSphere],
        groups: &[CollisionGroups],
    ) -> Result<Self, sweepcast::Error> {
        // Both checks read `all` alone, so every rank that is given the same world answers the
        // same (an error on some ranks only would leave the others waiting in the step).
        if !groups.is_empty() && groups.len() != all.len() {
            return Err(sweepcast::Error::GroupsLength {
                groups: groups.len(),
                bodies: all.len(),
            });
        }
        let most = u32::MAX as usize + 1;
        if all.len() > most {
            return Err(sweepcast::Error::TooManyBodies {
                count: all.len(),
                max: most,
            });
        }
        let mut owned = Self::default();
        for (index, body) in all.iter().enumerate() {
            if step.bricks.owner(body.center) == step.brick {
                owned.push(*body, index as u32, groups.get(index).copied());
            }
        }
        Ok(owned)
    }

    /// The bodies as a brick's step takes them.
    fn local(&self) -> Local<'_, MovingSphere> {
        Local {
            bodies: &self.bodies,
            global: &self.global,
            groups: &self.groups,
        }
    }

    fn push(&mut self, body: MovingSphere, global: u32, groups: Option<CollisionGroups>) {
        self.bodies.push(body);
        self.global.push(global);
        if let Some(groups) = groups {
            self.groups.push(groups);
        }
    }

    fn clear(&mut self) {
        self.bodies.clear();
        self.global.clear();
        self.groups.clear();
    }

    /// Body `at` as the words that travel: centre, radius, displacement (f32 bits), global
    /// index, groups (all bits where there are none).
    fn words(&self, at: usize, into: &mut Vec<u32>) {
        let body = &self.bodies[at];
        into.extend(body.center.to_array().map(f32::to_bits));
        into.push(body.radius.to_bits());
        into.extend(body.displacement.to_array().map(f32::to_bits));
        into.push(self.global[at]);
        into.push(self.groups.get(at).map_or(u32::MAX, |groups| groups.bits()));
    }

    /// Appends the bodies of `words` ([`Owned::words`], each followed by `K` carried words,
    /// which go to `carried`), with groups where `grouped`.
    fn extend_from_words<const K: usize>(
        &mut self,
        words: &[u32],
        grouped: bool,
        carried: &mut Vec<[u32; K]>,
    ) {
        for body in words.chunks_exact(WORDS + K) {
            let f = |k: usize| f32::from_bits(body[k]);
            let sphere = MovingSphere::new(
                Vec3::new(f(0), f(1), f(2)),
                f(3),
                Vec3::new(f(4), f(5), f(6)),
            );
            let groups = grouped.then(|| CollisionGroups::from_bits(body[8]));
            self.push(sphere, body[7], groups);
            carried.push(std::array::from_fn(|k| body[WORDS + k]));
        }
    }

    /// The number of bodies.
    #[must_use]
    pub fn len(&self) -> usize {
        self.bodies.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bodies.is_empty()
    }
}

/// Words a body takes on the wire ([`Owned::words`]).
const WORDS: usize = 9;

/// The first tags of the halo's shifts and of the migration's (six each: an axis and a
/// direction).
const HALO_TAGS: mpi::Tag = 0;
const MIGRATION_TAGS: mpi::Tag = 6;
/// The first tag of [`MpiStep::halo_values`]' shifts.
const VALUE_TAGS: mpi::Tag = 12;

/// The most words one message carries, unless [`MpiStep::with_message_words`] says fewer:
/// 2²⁸ (1 GiB), well inside MPI's counts (`i32::MAX` elements) and the 2 GiB past which some
/// MPI builds have mishandled messages. A longer send goes as several messages.
pub const MESSAGE_WORDS: usize = 1 << 28;

/// Why a step across ranks failed.
#[derive(Debug)]
pub enum Error {
    /// This rank found it: sweepcast's error.
    Step(sweepcast::Error),
    /// Another rank found an error (the lowest such rank); it reports its own.
    OtherRank {
        /// That rank.
        rank: Rank,
    },
    /// [`gather_text`]'s texts come to more bytes than MPI's counts hold.
    GatherTooLarge {
        /// The bytes, all ranks' together.
        bytes: u64,
    },
    /// The ranks were not all given the same bricks ([`MpiStep::new`]).
    BricksDiffer,
    /// The ranks called a collective method with different values of a setting that must be
    /// the same on every rank: the words a value (`K` of [`MpiStep::halo_values`] and
    /// [`MpiStep::migrate_with`]) or the words a message ([`MpiStep::with_message_words`]).
    SettingsDiffer {
        /// Which setting.
        setting: &'static str,
        /// Its least value over the ranks.
        least: u64,
        /// Its greatest.
        most: u64,
    },
    /// The communicator's ranks are not as many as the bricks.
    RankCount {
        /// Ranks.
        ranks: usize,
        /// Bricks.
        bricks: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Step(error) => write!(f, "{error}"),
            Error::OtherRank { rank } => {
                write!(
                    f,
                    "rank {rank} found an error in the step; see its own report"
                )
            }
            Error::GatherTooLarge { bytes } => write!(
                f,
                "{bytes} bytes to gather on rank 0, more than MPI's counts hold ({})",
                mpi::Count::MAX
            ),
            Error::BricksDiffer => write!(
                f,
                "the ranks were given different bricks; give every rank the same bounds, \
                 counts and options"
            ),
            Error::SettingsDiffer {
                setting,
                least,
                most,
            } => write!(
                f,
                "the ranks gave different {setting}, from {least} to {most}; give every rank \
                 the same"
            ),
            Error::RankCount { ranks, bricks } => write!(
                f,
                "{ranks} ranks for {bricks} bricks; run one rank a brick (mpirun -np {bricks})"
            ),
        }
    }
}

impl std::error::Error for Error {}

impl From<sweepcast::Error> for Error {
    fn from(error: sweepcast::Error) -> Self {
        Error::Step(error)
    }
}

/// What a step cost and moved, on this rank.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepReport {
    /// Halo bodies received (a body received twice counted twice).
    pub halo_bodies: usize,
    /// Bytes sent to neighbours.
    pub bytes_sent: usize,
    /// Time in the reductions and the halo exchange.
    pub exchange: Duration,
    /// Time in the brick's step.
    pub step: Duration,
}

/// A rank's part of the step across ranks: its brick, its neighbours and its [`BrickStep`],
/// made once and run every step.
pub struct MpiStep {
    cart: CartesianCommunicator,
    bricks: Bricks,
    brick: usize,
    /// Per axis, the rank below and the one above (none at an open edge, or on an axis of
    /// one brick).
    neighbours: [[Option<Rank>; 2]; 3],
    step: BrickStep,
    held: Owned,
    /// The last [`find`](Self::find)'s routes: per axis, the bodies sent down and up (indices
    /// into the owned bodies, then the halo as it grew), and the owned bodies it was given.
    routes: [[Vec<u32>; 2]; 3],
    found_owned: Option<usize>,
    centers: Vec<Vec3>,
    words: [Vec<u32>; 2],
    /// The most words one message carries ([`MESSAGE_WORDS`] unless set).
    message_words: usize,
}

impl MpiStep {
    /// The step of this rank of `world`, whose ranks are the bricks of `bricks` (one a brick,
    /// as many as there are; the same bricks on every rank).
    ///
    /// # Errors
    /// [`Error::BricksDiffer`] on every rank where the ranks were not all given the same
    /// bricks (a domain computed from each rank's own bodies, say: the ranks would disagree
    /// on who owns what); [`Error::RankCount`] where the ranks are not one a brick.
    pub fn new<C: Communicator>(world: &C, bricks: Bricks) -> Result<Self, Error> {
        // Every rank's bricks as one word, its lowest and highest over the ranks: equal only
        // where every rank has the same bricks (their Debug text prints each f64 exactly, and
        // `Bricks::new` stores −0 as +0, so equal bricks print alike). The ranks run one
        // build of sweepcast, whose Debug text is the same on each.
        let mine = fingerprint(&format!("{bricks:?}"));
        let (mut lowest, mut highest) = (0u64, 0u64);
        world.all_reduce_into(&mine, &mut lowest, SystemOperation::min());
        world.all_reduce_into(&mine, &mut highest, SystemOperation::max());
        if lowest != highest {
            return Err(Error::BricksDiffer);
        }
        let ranks = world.size() as usize;
        if ranks != bricks.len() {
            return Err(Error::RankCount {
                ranks,
                bricks: bricks.len(),
            });
        }
        let counts = bricks.counts();
        let dims = counts.map(|count| count as mpi::Count);
        let periodic = [0, 1, 2].map(|axis| bricks.wraps(axis));
        let cart = world
            .create_cartesian_communicator(&dims, &periodic, false)
            .expect("every rank is a brick");
        let coords = cart.get_layout().coords;
        let brick = bricks.index([0, 1, 2].map(|axis| coords[axis] as u32));
        let neighbours = [0, 1, 2].map(|axis| {
            if counts[axis] == 1 {
                return [None, None];
            }
            let (below, above) = cart.shift(axis as mpi::Count, 1);
            [below, above]
        });
        Ok(Self {
            cart,
            bricks,
            brick,
            neighbours,
            step: BrickStep::new(),
            held: Owned::default(),
            routes: Default::default(),
            found_owned: None,
            centers: Vec::new(),
            words: [Vec::new(), Vec::new()],
            message_words: MESSAGE_WORDS,
        })
    }

    /// The step, its messages at most `words` words long (`words` above `i32::MAX`, MPI's
    /// count, are taken as `i32::MAX`): a longer send goes as several messages, the last
    /// shorter than `words` (empty where the send is a multiple of it), so that no halo,
    /// migration or values are too long for one message, and the answers are the same
    /// whatever `words`. Collective: every rank calls it with the same `words`. Fewer words
    /// than [`MESSAGE_WORDS`] are for an MPI that takes only shorter messages, and for tests
    /// of the split.
    ///
    /// # Errors
    /// [`Error::SettingsDiffer`] on every rank where the ranks gave different `words`.
    pub fn with_message_words(mut self, words: NonZeroU32) -> Result<Self, Error> {
        let words = words.get().min(mpi::Count::MAX as u32);
        self.agree_on("words a message", Ok(()), u64::from(words))?;
        self.message_words = words as usize;
        Ok(self)
    }

    /// The bricks.
    #[must_use]
    pub fn bricks(&self) -> &Bricks {
        &self.bricks
    }

    /// This rank's brick.
    #[must_use]
    pub fn brick(&self) -> usize {
        self.brick
    }

    /// This rank.
    #[must_use]
    pub fn rank(&self) -> Rank {
        self.cart.rank()
    }

    /// The communicator of the bricks.
    #[must_use]
    pub fn communicator(&self) -> &CartesianCommunicator {
        &self.cart
    }

    /// Whether the step has collision groups: whether any rank's owned bodies carry them,
    /// agreed by a reduction, so that a rank that owns no bodies still reads, keeps and
    /// forwards the groups of those it receives.
    fn grouped(&self, owned: &Owned) -> bool {
        let mine = u32::from(!owned.groups.is_empty());
        let mut any = 0u32;
        self.cart
            .all_reduce_into(&mine, &mut any, SystemOperation::max());
        any != 0
    }

    /// The error of every rank where any rank's `result` failed: this rank's own, or
    /// [`Error::OtherRank`] naming the lowest rank that failed.
    fn agree<T>(&self, result: Result<T, sweepcast::Error>) -> Result<T, Error> {
        self.agree_on("", result, 0)
    }

    /// [`agree`](Self::agree), and in the same reduction the least and greatest `value` of a
    /// `setting` that must be the same on every rank: [`Error::SettingsDiffer`] on every rank
    /// where the ranks' values differ and no rank failed.
    fn agree_on<T>(
        &self,
        setting: &'static str,
        result: Result<T, sweepcast::Error>,
        value: u64,
    ) -> Result<T, Error> {
        // One minimum of three words: the lowest failed rank, the least value and (as its
        // complement) the greatest.
        let failed = if result.is_err() {
            self.cart.rank() as u64
        } else {
            u64::MAX
        };
        let mine = [failed, value, !value];
        let mut least = [0u64; 3];
        self.cart
            .all_reduce_into(&mine[..], &mut least[..], SystemOperation::min());
        let [lowest, least, most] = [least[0], least[1], !least[2]];
        match result {
            Err(error) => Err(Error::Step(error)),
            Ok(_) if lowest != u64::MAX => Err(Error::OtherRank {
                rank: lowest as Rank,
            }),
            Ok(_) if least != most => Err(Error::SettingsDiffer {
                setting,
                least,
                most,
            }),
            Ok(value) => Ok(value),
        }
    }

    /// Whether this rank's brick owns every one of its bodies: one it does not is sent to the
    /// wrong neighbours' halos (or to none), so that its contacts with bodies beyond them
    /// would be lost without a word.
    fn check_owner(&self, owned: &Owned) -> Result<(), sweepcast::Error> {
        if owned
            .bodies
            .iter()
            .any(|body| self.bricks.owner(body.center) != self.brick)
        {
            return Err(sweepcast::Error::BrickBodies {
                reason: "a body whose centre another rank's brick owns (migrate after moving)",
            });
        }
        Ok(())
    }

    /// The step's answers this rank owns (see the crate's steps), for its `owned` bodies,
    /// against `walls` (the same on every rank), with `options` (the same on every rank; its
    /// periodic box the bricks'), and what the step cost here. The step has collision groups
    /// where any rank's bodies have them; then every rank's bodies need them, one a body.
    ///
    /// # Errors
    /// As the crate says, on every rank where any rank failed; and
    /// [`sweepcast::Error::BrickBodies`] where a body's centre lies in another rank's brick
    /// (bodies that moved and were not [migrated](Self::migrate)).
    pub fn find(
        &mut self,
        owned: &Owned,
        walls: &[Wall],
        options: SweepOptions,
    ) -> Result<(OwnedAnswers, StepReport), Error> {
        let start = Instant::now();
        let mut report = StepReport::default();
        let grouped = self.grouped(owned);
        let checked = self
            .bricks
            .check_options(&options)
            .and_then(|()| check(owned, &options, grouped))
            .and_then(|()| self.check_owner(owned))
            .map(|()| largest_reach(&owned.bodies));
        let reach = self.agree(checked)?;
        let mut largest = 0.0;
        self.cart
            .all_reduce_into(&reach, &mut largest, SystemOperation::max());
        let width = halo_width(largest);
        self.agree(self.bricks.check_halo_width(width))?;
        // What this rank holds grows axis by axis: its own bodies, then the halo so far.
        self.held.clear();
        self.found_owned = Some(owned.len());
        for axis in 0..3 {
            for route in &mut self.routes[axis] {
                route.clear();
            }
            if self.neighbours[axis] == [None, None] {
                continue;
            }
            self.centers.clear();
            self.centers.extend(
                owned
                    .bodies
                    .iter()
                    .chain(&self.held.bodies)
                    .map(|b| b.center),
            );
            let sends = self
                .bricks
                .halo_sends(self.brick, axis, width, &self.centers);
            for (side, send) in [sends.lower, sends.upper].into_iter().enumerate() {
                self.words[side].clear();
                if let Some((_, indices)) = send {
                    self.routes[axis][side] = indices;
                }
                for &at in &self.routes[axis][side] {
                    let at = at as usize;
                    match at.checked_sub(owned.len()) {
                        None => owned.words(at, &mut self.words[side]),
                        Some(halo) => self.held.words(halo, &mut self.words[side]),
                    }
                }
            }
            for upward in [true, false] {
                let words = &self.words[usize::from(upward)];
                let (received, sent) = self.shift_along(axis, upward, words, HALO_TAGS);
                report.bytes_sent += 4 * sent;
                report.halo_bodies += received.len() / WORDS;
                self.held
                    .extend_from_words::<0>(&received, grouped, &mut Vec::new());
            }
        }
        report.exchange = start.elapsed();
        let step_start = Instant::now();
        let answers = self
            .step
            .find(owned.local(), self.held.local(), walls, options);
        report.step = step_start.elapsed();
        let answers = self.agree(answers)?;
        Ok((answers, report))
    }

    /// The halo the last [`find`](Self::find) received: its bodies, global indices and groups,
    /// in the order they arrived (a body that arrived twice is there twice).
    #[must_use]
    pub fn halo(&self) -> &Owned {
        &self.held
    }

    /// Each halo body's `values` (one a body, `K` words each, given for the owned bodies of
    /// the last [`find`](Self::find) in their order): the owned bodies' values sent along the
    /// routes of that find's halo, so that each rank has its halo bodies' values, in
    /// [`halo`](Self::halo)'s order. This is how a rank learns what its halo bodies' owners
    /// computed from the step (their earliest contacts, their velocities): what a response
    /// that depends on a partner's result needs.
    ///
    /// # Errors
    /// On every rank where any rank's `values` are not one an owned body of its last find, or
    /// a rank has not found since it was made or last migrated ([`Error::Step`] with [`sweepcast::Error::BrickBodies`] there,
    /// [`Error::OtherRank`] elsewhere).
    pub fn halo_values<const K: usize>(
        &mut self,
        values: &[[u32; K]],
    ) -> Result<Vec<[u32; K]>, Error> {
        let checked = if self.found_owned == Some(values.len()) {
            Ok(())
        } else {
            Err(sweepcast::Error::BrickBodies {
                reason: "halo values not one an owned body of the last find",
            })
        };
        self.agree_on("words a value (K)", checked, K as u64)?;
        if K == 0 {
            return Ok(vec![[0; K]; self.held.len()]);
        }
        let mut held: Vec<[u32; K]> = Vec::with_capacity(self.held.len());
        for axis in 0..3 {
            if self.neighbours[axis] == [None, None] {
                continue;
            }
            for side in 0..2 {
                self.words[side].clear();
                for &at in &self.routes[axis][side] {
                    let at = at as usize;
                    let value = match at.checked_sub(values.len()) {
                        None => &values[at],
                        Some(halo) => &held[halo],
                    };
                    self.words[side].extend_from_slice(value);
                }
            }
            for upward in [true, false] {
                let words = &self.words[usize::from(upward)];
                let (received, _) = self.shift_along(axis, upward, words, VALUE_TAGS);
                held.extend(
                    received
                        .chunks_exact(K)
                        .map(|value| std::array::from_fn(|k| value[k])),
                );
            }
        }
        debug_assert_eq!(held.len(), self.held.len());
        Ok(held)
    }

    /// One shift along `axis`: `words` to the neighbour `upward` (or down) and what the
    /// neighbour on the other side sends, with a tag of the `tags` (one an axis and
    /// direction): what arrived, and the words sent (0 without that neighbour).
    fn shift_along(
        &self,
        axis: usize,
        upward: bool,
        words: &[u32],
        tags: mpi::Tag,
    ) -> (Vec<u32>, usize) {
        let [below, above] = self.neighbours[axis];
        let (to, from) = if upward {
            (above, below)
        } else {
            (below, above)
        };
        let tag = tags + (axis * 2) as mpi::Tag + mpi::Tag::from(upward);
        let received = self.shift(to, from, words, tag);
        (received, to.map_or(0, |_| words.len()))
    }

    /// Sends `words` to `to` and receives from `from` (either may be none), with `tag`, in
    /// messages of at most [`message_words`](Self::with_message_words) words: all full but
    /// the last, which is shorter (empty where the words are a multiple of it) and tells the
    /// receiver that the send is whole. MPI keeps the order of one sender's messages with one
    /// tag, so the pieces arrive in order.
    fn shift(
        &self,
        to: Option<Rank>,
        from: Option<Rank>,
        words: &[u32],
        tag: mpi::Tag,
    ) -> Vec<u32> {
        let most = self.message_words;
        let pieces = words.len() / most + 1;
        mpi::request::scope(|scope| {
            let requests: Vec<_> = to.map_or_else(Vec::new, |to| {
                let process = self.cart.process_at_rank(to);
                (0..pieces)
                    .map(|piece| {
                        let piece = &words[piece * most..words.len().min((piece + 1) * most)];
                        process.immediate_send_with_tag(scope, piece, tag)
                    })
                    .collect()
            });
            let mut received = Vec::new();
            if let Some(from) = from {
                let process = self.cart.process_at_rank(from);
                loop {
                    let piece = process.receive_vec_with_tag::<u32>(tag).0;
                    let last = piece.len() < most;
                    if received.is_empty() {
                        received = piece;
                    } else {
                        received.extend_from_slice(&piece);
                    }
                    if last {
                        break;
                    }
                }
            }
            for request in requests {
                request.wait();
            }
            received
        })
    }

    /// Sends each body of `owned` whose centre left this rank's brick to its new owner, hop
    /// by hop along the axes (each round one hop along x, then y, then z), with its global
    /// index and groups, and takes the bodies that arrive; bounded by the bricks per axis.
    ///
    /// # Errors
    /// As [`find`](Self::find)'s agreement, for a body that is not valid (not finite, its
    /// owner unknown; a negative radius), or groups not one a body where any rank's bodies
    /// have groups.
    pub fn migrate(&mut self, owned: &mut Owned) -> Result<(), Error> {
        let mut nothing = vec![[0u32; 0]; owned.len()];
        self.migrate_with(owned, &mut nothing)
    }

    /// [`migrate`](Self::migrate), with `carried`, one value of `K` words an owned body (a
    /// velocity, a mass, a simulation's own state), travelling with its body: afterwards
    /// `carried` is again one a body, in `owned`'s new order.
    ///
    /// # Errors
    /// As [`migrate`](Self::migrate), and [`sweepcast::Error::BrickBodies`] where `carried`
    /// is not one an owned body (on every rank where any rank's is not).
    pub fn migrate_with<const K: usize>(
        &mut self,
        owned: &mut Owned,
        carried: &mut Vec<[u32; K]>,
    ) -> Result<(), Error> {
        let grouped = self.grouped(owned);
        let checked = check(owned, &SweepOptions::default(), grouped).and_then(|()| {
            if carried.len() == owned.len() {
                Ok(())
            } else {
                Err(sweepcast::Error::BrickBodies {
                    reason: "carried values not one an owned body",
                })
            }
        });
        self.agree_on("words a value (K)", checked, K as u64)?;
        // The owned bodies change: the last find's halo routes are not theirs.
        self.found_owned = None;
        let counts = self.bricks.counts();
        let here = self.bricks.coordinates(self.brick);
        let rounds = counts
            .iter()
            .map(|&count| count as usize)
            .max()
            .unwrap_or(1);
        for _ in 0..rounds {
            for axis in 0..3 {
                if counts[axis] == 1 {
                    continue;
                }
                let mut stay = Owned::default();
                let mut kept = Vec::with_capacity(carried.len());
                let mut leave = [Vec::new(), Vec::new()];
                for (at, value) in carried.iter().enumerate() {
                    let owner = self
                        .bricks
                        .coordinates(self.bricks.owner(owned.bodies[at].center));
                    match self.direction(axis, here[axis], owner[axis]) {
                        None => {
                            stay.push(
                                owned.bodies[at],
                                owned.global[at],
                                owned.groups.get(at).copied(),
                            );
                            kept.push(*value);
                        }
                        Some(upward) => {
                            let words = &mut leave[usize::from(upward)];
                            owned.words(at, words);
                            words.extend_from_slice(value);
                        }
                    }
                }
                *owned = stay;
                *carried = kept;
                for upward in [true, false] {
                    let words = &leave[usize::from(upward)];
                    let (received, _) = self.shift_along(axis, upward, words, MIGRATION_TAGS);
                    owned.extend_from_words(&received, grouped, carried);
                }
            }
        }
        let misplaced = owned
            .bodies
            .iter()
            .filter(|body| self.bricks.owner(body.center) != self.brick)
            .count();
        let mut all = 0_u64;
        self.cart
            .all_reduce_into(&(misplaced as u64), &mut all, SystemOperation::sum());
        assert_eq!(all, 0, "every body reaches its owner within the rounds");
        Ok(())
    }

    /// Which way a body goes along `axis` from coordinate `here` to its owner's `there`: up,
    /// down, or none; the shorter way round on an axis that wraps.
    fn direction(&self, axis: usize, here: u32, there: u32) -> Option<bool> {
        if here == there {
            return None;
        }
        let count = self.bricks.counts()[axis];
        if !self.bricks.wraps(axis) {
            return Some(there > here);
        }
        let up = (there + count - here) % count;
        Some(up <= count - up)
    }
}

/// This rank's bodies checked as sweepcast checks a step's: finite, radii of 0 or more,
/// global indices one a body, and groups one a body where the step has them (`grouped`),
/// none where it has not ([`Local::check_lengths`]).
fn check(owned: &Owned, options: &SweepOptions, grouped: bool) -> Result<(), sweepcast::Error> {
    sweepcast::low_level::validate_bodies(&owned.bodies)?;
    if let Some(periodic_box) = &options.periodic_box {
        sweepcast::low_level::validate_periodic_reach(&owned.bodies, periodic_box)?;
    }
    owned.local().check_lengths(grouped)
}

/// Bricks per axis for `ranks` ranks, one a brick: the ranks' prime factors shared out, the
/// largest first, each to the axis with the fewest bricks so far (x first on a tie): 2 ranks
/// are 2 × 1 × 1, 4 are 2 × 2 × 1, 8 are 2 × 2 × 2, 6 are 3 × 2 × 1.
///
/// Trial division stops at the square root of what is left, so a prime count of 2³² − 5
/// ranks takes 2¹⁶ divisions, not 2³².
///
/// # Panics
/// Where `ranks` is 0.
#[must_use]
pub fn brick_counts(ranks: u32) -> [u32; 3] {
    assert!(ranks > 0, "at least one rank");
    let mut factors = Vec::new();
    let mut rest = ranks;
    let mut divisor = 2u32;
    while u64::from(divisor) * u64::from(divisor) <= u64::from(rest) {
        while rest.is_multiple_of(divisor) {
            factors.push(divisor);
            rest /= divisor;
        }
        divisor += 1;
    }
    if rest > 1 {
        factors.push(rest);
    }
    let mut counts = [1u32; 3];
    for &factor in factors.iter().rev() {
        let fewest = (0..3).min_by_key(|&axis| counts[axis]).unwrap_or(0);
        counts[fewest] *= factor;
    }
    counts
}

/// FNV-1a of `text`: the same word on every rank for the same text.
fn fingerprint(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Every rank's `text` on rank 0, in rank order (an empty string on the other ranks). A rank
/// may send none.
///
/// # Errors
/// [`Error::GatherTooLarge`] on every rank where the texts (and a byte a rank) come to more
/// than MPI's counts hold (`i32::MAX` bytes).
pub fn gather_text<C: Communicator>(comm: &C, text: &str) -> Result<String, Error> {
    let root = comm.process_at_rank(0);
    // Each rank sends one byte more than its text, so that no buffer is empty (MPI takes no
    // empty buffer here); rank 0 drops it.
    let mine = text.len() as u64 + 1;
    let mut bytes = 0u64;
    comm.all_reduce_into(&mine, &mut bytes, SystemOperation::sum());
    if bytes > mpi::Count::MAX as u64 {
        return Err(Error::GatherTooLarge { bytes });
    }
    let mut bytes = text.as_bytes().to_vec();
    bytes.push(0);
    let length = bytes.len() as mpi::Count;
    if comm.rank() != 0 {
        root.gather_into(&length);
        root.gather_varcount_into(&bytes[..]);
        return Ok(String::new());
    }
    let mut lengths = vec![0 as mpi::Count; comm.size() as usize];
    root.gather_into_root(&length, &mut lengths[..]);
    let starts: Vec<mpi::Count> = lengths
        .iter()
        .scan(0, |at, &length| {
            let here = *at;
            *at += length;
            Some(here)
        })
        .collect();
    let mut all = vec![0u8; lengths.iter().sum::<mpi::Count>() as usize];
    {
        let mut partition =
            mpi::datatype::PartitionMut::new(&mut all[..], &lengths[..], &starts[..]);
        root.gather_varcount_into_root(&bytes[..], &mut partition);
    }
    let mut text = String::new();
    for (&start, &length) in starts.iter().zip(&lengths) {
        let own = &all[start as usize..(start + length - 1) as usize];
        text.push_str(std::str::from_utf8(own).expect("each rank sends text"));
    }
    Ok(text)
}

/// Makes a panic on this rank end the whole job: the panic is reported as usual, then the
/// process exits (status 101) without finalising MPI. Unwinding would drop the `Universe`,
/// whose `MPI_Finalize` waits for the other ranks, while they may wait in a collective for
/// this one: a hang (seen with OpenMPI 4.1). A rank that exits without finalising is one
/// `mpirun` ends the job for. Call it once, at the start of `main`.
pub fn exit_on_panic() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        std::process::exit(101);
    }));
}

#[cfg(test)]
mod tests {
    use super::{brick_counts, fingerprint};

    #[test]
    fn brick_counts_share_the_factors_out() {
        assert_eq!(brick_counts(1), [1, 1, 1]);
        assert_eq!(brick_counts(2), [2, 1, 1]);
        assert_eq!(brick_counts(4), [2, 2, 1]);
        assert_eq!(brick_counts(6), [3, 2, 1]);
        assert_eq!(brick_counts(8), [2, 2, 2]);
        assert_eq!(brick_counts(12), [3, 2, 2]);
        assert_eq!(brick_counts(7), [7, 1, 1]);
        for ranks in (1..=64).chain([65_537, 4_294_967_291, u32::MAX]) {
            let counts = brick_counts(ranks);
            assert_eq!(
                counts.iter().map(|&c| u64::from(c)).product::<u64>(),
                u64::from(ranks)
            );
        }
        // The largest prime below 2³², at once (trial division to its square root), and
        // 2³² − 1 = 3 · 5 · 17 · 257 · 65537 shared out.
        assert_eq!(brick_counts(4_294_967_291), [4_294_967_291, 1, 1]);
        assert_eq!(brick_counts(u32::MAX), [65_537, 257, 255]);
    }

    #[test]
    fn fingerprints_tell_texts_apart() {
        assert_eq!(fingerprint(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fingerprint("a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(
            fingerprint("Bricks { width: 10.0 }"),
            fingerprint("Bricks { width: 10.5 }")
        );
    }
}
