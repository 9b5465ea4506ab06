//! A hard-sphere gas stepped across MPI ranks, one brick a rank, with the response rule of
//! the main crate's `resident_step` example run on the CPU: the same contacts and the same
//! final state, to the bit, on any number of ranks as in one process.
//!
//! ```text
//! cargo build --release --manifest-path mpi/Cargo.toml --examples
//! mpirun -np 4 mpi/target/release/examples/gas_across_ranks [--scene closed|slab] [--bodies N]
//!     [--frames N] [--seed S] [--groups] [--check] [--message-words W] [--out PNG]
//! (defaults: closed, 4,000 bodies, 20 frames, seed 1, no groups, messages of at most
//! sweepcast_mpi::MESSAGE_WORDS words, pictures/gas_across_ranks.png)
//! ```
//!
//! (`--oversubscribe` where the machine has fewer cores than ranks; as root, OpenMPI also
//! wants `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`.)
//!
//! # The gas
//!
//! Hard spheres (radius 0.15 to 0.4, mass ∝ radius³, velocities up to 0.5 a frame in a
//! random direction) start on a jittered lattice, one to 4.1 units of volume, each inside its
//! own cell. `--scene closed`: the box is closed by its six faces ([`Wall::box_interior`]) in
//! open space. `--scene slab`: a periodic box wraps x and y, and a floor and a ceiling
//! (planes z = 0 and z = side) close z: walls in a periodic box. `--groups`: a quarter of the
//! bodies are dust, which meets grains but passes through dust ([`CollisionGroups`]).
//!
//! The ranks' bricks are [`brick_counts`]' (2 ranks: 2 × 1 × 1; 4: 2 × 2 × 1; 8: 2 × 2 × 2);
//! every rank makes the same gas from the seed and takes the bodies its brick owns. A halo
//! wider than half a brick (a body grown fast, too many ranks for the box) ends the run with
//! `ReachTooLarge` on every rank: run fewer ranks or more bodies (a larger box).
//!
//! # A frame
//!
//! Each frame is one step of the dynamics, as in `resident_step` (whose header derives the
//! rule): each body's displacement is its velocity (the frame is the unit of time), the step
//! gives each body's earliest contact ([`SweepOptions::event_driven`]), and
//!
//! * a **mutually earliest pair** (A's earliest is B and B's is A, the same time to the bit)
//!   collides elastically at that time along the normal between the centres then; the body of
//!   the lower global index computes the vector between them (through the image it met, in a
//!   periodic box) and the other takes its negation, so that the two see normals and
//!   approach speeds opposite to the bit, whichever ranks hold them;
//! * a **wall** (a face, a floor, a ceiling) reflects the body's velocity: one component
//!   negated, exactly;
//! * a body whose partner meets something else first keeps its velocity;
//! * the planned motions (each body's straight chord over the frame) are swept again, and a
//!   body that meets anything but the contact its plan is built on is cut to its contact or
//!   frozen, in rounds, until a round shortens nothing; then the motions are applied. Within
//!   a round every body reads the round's levels from before any change (as the shader's
//!   `shorten` reads `mark`'s flags). After the frame, centres are wrapped into the periodic
//!   cell.
//!
//! # Across ranks
//!
//! A body's plan depends on its partner's result: whether the partner's earliest contact is
//! this body, its velocity; in a round, the partner's level and whether it conflicts. A
//! partner may be a halo body, owned by another rank. So after each step the owners' values
//! (computed from answers that are exact for owned bodies) are sent along the routes of that
//! step's halo ([`MpiStep::halo_values`]), and each rank reads its halo bodies' values from
//! them. Two [`MpiStep`]s run: one on the bodies' motions, whose halo holds every partner of a
//! contact; one on the planned motions, whose halo holds every body a planned motion meets. A
//! round ends on every rank together (the bodies shortened, summed over the ranks). Between
//! frames each body migrates to its new brick with its velocity ([`MpiStep::migrate_with`]).
//! Every value a body's update reads is the same bits on every rank count as in one process,
//! and every update is the same f32 operations, so the states are equal to the bit (tested on
//! 1, 2, 3, 4 and 8 ranks). A rank that panics exits ([`sweepcast_mpi::exit_on_panic`]), so
//! that `mpirun` ends the job.
//!
//! # `--check`
//!
//! Rank 0 also runs the gas in one process, with the library's own CPU step
//! ([`ContactFinder::find_with_walls`] on every body, no bricks), and holds every frame's
//! answers (each body's earliest contact and every contact the step reports) and the final
//! state (each body's centre, radius and velocity, as bits) to the ranks' gathered ones.
//! Exits 1 where any differs.
//!
//! It prints the contacts, the contacts per second (contacts the first step of each frame
//! reports, summed over the ranks, over the run's wall time on the slowest rank), the halo's
//! share of the bodies held (the first step's halo, summed over frames and ranks) and the
//! exchange's share of the ranks' time (the halo exchanges, the values sent along them, the
//! reductions, the migration), and writes a picture (the middle third of the box in z, seen
//! from above: the bricks' faces, each body in its rank's colour, brick 0's halo as rings).
//! Exits 3 on bad arguments, as the main crate's examples do.

// The main crate's examples' helpers (their GPU parts are behind its `gpu` feature, which this
// crate does not have).
#[allow(unexpected_cfgs)]
#[path = "../../examples/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use common::picture::{paint, text};
use common::{bad_options, parse};
use mpi::collective::SystemOperation;
use mpi::traits::*;
use sweepcast::bricks::Bricks;
use sweepcast::cpu::ContactFinder;
use sweepcast::glam::Vec3;
use sweepcast::{
    CollisionGroups, Contact, EarliestImpact, MovingSphere, Partner, PeriodicBox, SweepOptions,
    Wall,
};
use sweepcast_mpi::{Error, MESSAGE_WORDS, MpiStep, Owned, StepReport, brick_counts, gather_text};
use testkit::SplitMix64;
use tiny_skia::{FillRule, PathBuilder, Pixmap, Stroke, Transform};

/// The lattice's cell: one body a cell, 4.1 units of volume a body.
const CELL: f64 = 1.6;

/// How far a body's planned motion goes: the whole frame, to its contact, not at all.
const WHOLE: u32 = 2;
const CONTACT: u32 = 1;
const FROZEN: u32 = 0;

/// What a body's earliest contact is, as its owner sends it (0: none).
const BODY: u32 = 1;
const WALL: u32 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SceneKind {
    Closed,
    Slab,
}

struct Options {
    scene: SceneKind,
    bodies: usize,
    frames: usize,
    seed: u64,
    groups: bool,
    check: bool,
    /// The most words a message ([`MpiStep::with_message_words`]).
    message_words: NonZeroU32,
    out: String,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        scene: SceneKind::Closed,
        bodies: 4000,
        frames: 20,
        seed: 1,
        groups: false,
        check: false,
        message_words: NonZeroU32::new(MESSAGE_WORDS as u32).expect("not 0"),
        out: "pictures/gas_across_ranks.png".to_string(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--scene" => {
                options.scene = match value()?.as_str() {
                    "closed" => SceneKind::Closed,
                    "slab" => SceneKind::Slab,
                    other => return Err(format!("--scene closed or slab, not {other}")),
                }
            }
            "--bodies" => options.bodies = parse(&value()?)?,
            "--frames" => options.frames = parse(&value()?)?,
            "--seed" => options.seed = parse(&value()?)?,
            "--groups" => options.groups = true,
            "--check" => options.check = true,
            "--message-words" => {
                options.message_words = NonZeroU32::new(parse(&value()?)?)
                    .ok_or("--message-words must be at least 1")?
            }
            "--out" => options.out = value()?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if options.bodies == 0 {
        return Err("--bodies must be at least 1".to_string());
    }
    Ok(options)
}

/// The gas every rank makes from the seed: its box, walls and bodies.
struct Scene {
    side: f32,
    walls: Vec<Wall>,
    /// Each wall's axis and the sign of its inward normal.
    faces: Vec<(usize, f32)>,
    options: SweepOptions,
    /// Centres and radii (displacements 0).
    bodies: Vec<MovingSphere>,
    velocities: Vec<Vec3>,
    /// One a body with `--groups`, else empty.
    groups: Vec<CollisionGroups>,
}

impl Scene {
    fn new(options: &Options) -> Self {
        let lattice =
            testkit::jittered_lattice(options.bodies, CELL, (0.15, 0.4), 0.5, options.seed);
        let side = lattice.side;
        // The groups from a stream of their own (the seed's complement).
        let mut rng = SplitMix64::new(!options.seed);
        let groups = if options.groups {
            (0..options.bodies)
                .map(|_| {
                    if rng.unit() < 0.25 {
                        CollisionGroups::new(0b10, 0b01)
                    } else {
                        CollisionGroups::new(0b01, 0b11)
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        let (walls, faces, sweep_options) = match options.scene {
            SceneKind::Closed => (
                Wall::box_interior(Vec3::ZERO, Vec3::splat(side)).to_vec(),
                (0..6)
                    .map(|w| (w / 2, if w % 2 == 0 { 1.0 } else { -1.0 }))
                    .collect(),
                SweepOptions::event_driven(),
            ),
            SceneKind::Slab => {
                let periodic_box =
                    PeriodicBox::new(Vec3::new(side, side, f32::INFINITY)).expect("a valid box");
                (
                    vec![
                        Wall::plane(Vec3::ZERO, Vec3::Z),
                        Wall::plane(Vec3::new(0.0, 0.0, side), Vec3::NEG_Z),
                    ],
                    vec![(2, 1.0), (2, -1.0)],
                    SweepOptions::event_driven().with_periodic_box(periodic_box),
                )
            }
        };
        Self {
            side,
            walls,
            faces,
            options: sweep_options,
            bodies: lattice.bodies,
            velocities: lattice.velocities,
            groups,
        }
    }

    /// The period on each axis the box wraps (infinity elsewhere).
    fn period(&self) -> Vec3 {
        self.options
            .periodic_box
            .map_or(Vec3::INFINITY, |periodic_box| periodic_box.period())
    }
}

/// What a step gave this rank: each owned body's earliest contact, and the contacts it owns.
struct Found {
    earliest: Vec<Option<EarliestImpact>>,
    contacts: Vec<Contact>,
}

/// Where a frame's steps run: one brick a rank ([`Ranks`]), or every body in one process
/// with the library's own step ([`OneProcess`], the reference).
trait Space {
    /// The step on `owned` (the bodies this rank owns).
    fn find(&mut self, owned: &Owned, scene: &Scene) -> Result<Found, Error>;
    /// The halo of the last `find`.
    fn halo(&self) -> &Owned;
    /// The halo bodies' values, from the owned bodies' (see [`MpiStep::halo_values`]).
    fn halo_values<const K: usize>(&mut self, values: &[[u32; K]]) -> Result<Vec<[u32; K]>, Error>;
    /// `value` summed over the ranks.
    fn sum(&mut self, value: u64) -> u64;
    /// Each owned body to its brick's rank, with its `carried` value.
    fn migrate(&mut self, owned: &mut Owned, carried: &mut Vec<[u32; 3]>) -> Result<(), Error>;
}

/// A rank's bricks, and the time it spent exchanging and stepping.
struct Ranks {
    step: MpiStep,
    report: StepReport,
    /// Halo bodies received by the steps on the bodies' motions, and owned bodies then.
    halo_bodies: u64,
    owned_bodies: u64,
    /// Whether this is the step on the bodies' motions (whose halo is counted).
    counts_halo: bool,
}

impl Ranks {
    fn new(
        world: &mpi::topology::SimpleCommunicator,
        bricks: Bricks,
        message_words: NonZeroU32,
        counts_halo: bool,
    ) -> Self {
        Self {
            step: MpiStep::new(world, bricks)
                .and_then(|step| step.with_message_words(message_words))
                .expect("one rank a brick, the same words a message on each"),
            report: StepReport::default(),
            halo_bodies: 0,
            owned_bodies: 0,
            counts_halo,
        }
    }

    /// Time spent in `work`, counted as exchange.
    fn exchanging<T>(&mut self, work: impl FnOnce(&mut MpiStep) -> T) -> T {
        let start = Instant::now();
        let result = work(&mut self.step);
        self.report.exchange += start.elapsed();
        result
    }
}

impl Space for Ranks {
    fn find(&mut self, owned: &Owned, scene: &Scene) -> Result<Found, Error> {
        let (answers, report) = self.step.find(owned, &scene.walls, scene.options)?;
        self.report.exchange += report.exchange;
        self.report.step += report.step;
        if self.counts_halo {
            self.halo_bodies += report.halo_bodies as u64;
            self.owned_bodies += owned.len() as u64;
        }
        Ok(Found {
            earliest: answers.earliest,
            contacts: answers.contacts,
        })
    }

    fn halo(&self) -> &Owned {
        self.step.halo()
    }

    fn halo_values<const K: usize>(&mut self, values: &[[u32; K]]) -> Result<Vec<[u32; K]>, Error> {
        self.exchanging(|step| step.halo_values(values))
    }

    fn sum(&mut self, value: u64) -> u64 {
        self.exchanging(|step| {
            let mut sum = 0;
            step.communicator()
                .all_reduce_into(&value, &mut sum, SystemOperation::sum());
            sum
        })
    }

    fn migrate(&mut self, owned: &mut Owned, carried: &mut Vec<[u32; 3]>) -> Result<(), Error> {
        self.exchanging(|step| step.migrate_with(owned, carried))
    }
}

/// Every body in one process, stepped by the library's [`ContactFinder`]: the reference.
/// Its owned bodies are all of them, in global order.
#[derive(Default)]
struct OneProcess {
    finder: ContactFinder,
    halo: Owned,
}

impl Space for OneProcess {
    fn find(&mut self, owned: &Owned, scene: &Scene) -> Result<Found, Error> {
        assert!(
            owned
                .global
                .iter()
                .enumerate()
                .all(|(k, &g)| g as usize == k)
        );
        self.finder.set_groups(&owned.groups);
        let contacts = self
            .finder
            .find_with_walls(&owned.bodies, &scene.walls, scene.options)?;
        let earliest = contacts.earliest_impacts();
        Ok(Found {
            earliest: (0..owned.len())
                .map(|k| earliest.get(k).copied().flatten())
                .collect(),
            contacts: contacts.contacts().to_vec(),
        })
    }

    fn halo(&self) -> &Owned {
        &self.halo
    }

    fn halo_values<const K: usize>(&mut self, _: &[[u32; K]]) -> Result<Vec<[u32; K]>, Error> {
        Ok(Vec::new())
    }

    fn sum(&mut self, value: u64) -> u64 {
        value
    }

    fn migrate(&mut self, _: &mut Owned, _: &mut Vec<[u32; 3]>) -> Result<(), Error> {
        Ok(())
    }
}

/// Where a global index is held: among the owned bodies or the halo of a step.
struct Directory {
    owned: HashMap<u32, usize>,
    halo: HashMap<u32, usize>,
}

impl Directory {
    fn new(owned: &Owned, halo: &Owned) -> Self {
        let index = |bodies: &Owned| {
            bodies
                .global
                .iter()
                .enumerate()
                .map(|(at, &global)| (global, at))
                .collect()
        };
        Self {
            owned: index(owned),
            halo: index(halo),
        }
    }

    /// The value of body `global`, from the owned bodies' or the halo's.
    fn value<'a, T>(&self, global: u32, owned: &'a [T], halo: &'a [T]) -> &'a T {
        match self.owned.get(&global) {
            Some(&at) => &owned[at],
            None => &halo[self.halo[&global]],
        }
    }

    /// Body `global` itself.
    fn body(&self, global: u32, owned: &Owned, halo: &Owned) -> MovingSphere {
        *self.value(global, &owned.bodies, &halo.bodies)
    }
}

/// A body's plan for the frame, as `resident_step`'s.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// The velocity after the frame, if the plan is kept.
    velocity: Vec3,
    /// The fraction of the frame to its contact (1 without one).
    fraction: f32,
    kind: Kind,
    /// The other body (global index) or the wall.
    partner: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Free,
    Pair,
    Wall,
    Unmatched,
}

impl Plan {
    /// The displacement of `body` planned as far as `level`.
    fn motion(&self, body: &MovingSphere, level: u32) -> Vec3 {
        let to_contact = body.displacement * self.fraction;
        match level {
            WHOLE if matches!(self.kind, Kind::Pair | Kind::Wall) => {
                to_contact + self.velocity * (1.0 - self.fraction)
            }
            WHOLE => body.displacement,
            CONTACT => to_contact,
            _ => Vec3::ZERO,
        }
    }

    /// Whether a body planned as far as `level` can be cut to its contact.
    fn cuttable(&self, level: u32) -> bool {
        level == WHOLE && self.kind != Kind::Free
    }
}

/// A body's earliest contact as its owner sends it with its velocity: velocity (3 words),
/// kind, the other (global index or wall), the time's bits, the image met (3 words).
fn earliest_words(velocity: Vec3, hit: Option<&EarliestImpact>) -> [u32; 9] {
    let mut words = [0u32; 9];
    words[..3].copy_from_slice(&velocity.to_array().map(f32::to_bits));
    if let Some(hit) = hit {
        words[5] = hit.time_of_impact.to_bits();
        match hit.partner {
            Partner::Body { index, image } => {
                words[3] = BODY;
                words[4] = index;
                words[6..].copy_from_slice(&image.map(|i| i as u32));
            }
            Partner::Wall { index } => {
                words[3] = WALL;
                words[4] = index;
            }
        }
    }
    words
}

fn vector(words: &[u32]) -> Vec3 {
    Vec3::new(
        f32::from_bits(words[0]),
        f32::from_bits(words[1]),
        f32::from_bits(words[2]),
    )
}

/// `b` less `a`, with `b` taken `image` periods away on each axis (`image` 0 where the axis
/// does not wrap).
fn offset(a: Vec3, b: Vec3, image: [i32; 3], period: Vec3) -> Vec3 {
    Vec3::from_array(std::array::from_fn(|k| {
        if image[k] == 0 {
            b[k] - a[k]
        } else {
            (b[k] - image[k] as f32 * period[k]) - a[k]
        }
    }))
}

/// The velocity of a body of `velocity` and `mass` after an elastic collision with one of
/// `other` and `other_mass` whose centre lies along `apart`: the components along the normal
/// exchanged (`v - 2M/(m+M) ((v - V)·n) n`), as `resident_step`'s `collide`.
fn collide(velocity: Vec3, mass: f32, other: Vec3, other_mass: f32, apart: Vec3) -> Vec3 {
    let length_squared = apart.dot(apart);
    if length_squared < f32::MIN_POSITIVE {
        return velocity;
    }
    let normal = apart / length_squared.sqrt();
    let approach = (velocity - other).dot(normal);
    if approach <= 0.0 {
        return velocity;
    }
    velocity - (2.0 * other_mass / (mass + other_mass) * approach) * normal
}

/// A wall's reflection: the component along its axis negated where the body moves into it.
fn reflect(velocity: Vec3, (axis, inward): (usize, f32)) -> Vec3 {
    let mut reflected = velocity;
    if velocity[axis] * inward < 0.0 {
        reflected[axis] = -velocity[axis];
    }
    reflected
}

/// A rank's bodies and their velocities.
struct State {
    owned: Owned,
    velocities: Vec<Vec3>,
}

/// What a rank counted over the run.
#[derive(Default)]
struct Tally {
    contacts: u64,
    pairs: u64,
    walls: u64,
    unmatched: u64,
    cut: u64,
    frozen: u64,
    rounds: u64,
    /// The contacts the first step of each frame reported.
    reported: u64,
}

/// Each body's plan from its earliest contact, given its partner's values (`earliest_words`)
/// on the owned bodies and the halo of `motions`' last step.
fn plans<S: Space>(
    motions: &mut S,
    state: &State,
    found: &Found,
    scene: &Scene,
    tally: &mut Tally,
) -> Result<(Vec<Plan>, Directory), Error> {
    let owned = &state.owned;
    let own: Vec<[u32; 9]> = (0..owned.len())
        .map(|k| earliest_words(state.velocities[k], found.earliest[k].as_ref()))
        .collect();
    let halo_values = motions.halo_values(&own)?;
    let directory = Directory::new(owned, motions.halo());
    let halo = motions.halo();
    let period = scene.period();
    let plans = (0..owned.len())
        .map(|k| {
            let body = owned.bodies[k];
            let velocity = state.velocities[k];
            let mut plan = Plan {
                velocity,
                fraction: 1.0,
                kind: Kind::Free,
                partner: 0,
            };
            let Some(hit) = found.earliest[k] else {
                return plan;
            };
            tally.contacts += 1;
            plan.fraction = hit.time_of_impact;
            match hit.partner {
                Partner::Wall { index } => {
                    tally.walls += 1;
                    plan.kind = Kind::Wall;
                    plan.partner = index;
                    plan.velocity = reflect(velocity, scene.faces[index as usize]);
                }
                Partner::Body {
                    index: other,
                    image,
                } => {
                    plan.kind = Kind::Unmatched;
                    plan.partner = other;
                    let global = owned.global[k];
                    let back = directory.value(other, &own, &halo_values);
                    let mutual = back[3] == BODY
                        && back[4] == global
                        && back[5] == hit.time_of_impact.to_bits();
                    if !mutual {
                        tally.unmatched += 1;
                        return plan;
                    }
                    tally.pairs += 1;
                    plan.kind = Kind::Pair;
                    let t = hit.time_of_impact;
                    let partner = directory.body(other, owned, halo);
                    let here = body.center + body.displacement * t;
                    let there = partner.center + partner.displacement * t;
                    // The lower global index's normal, through the image it met; the other
                    // body takes its negation.
                    let apart = if global < other {
                        offset(here, there, image, period)
                    } else {
                        let image_back = [6, 7, 8].map(|w| back[w] as i32);
                        -offset(there, here, image_back, period)
                    };
                    let mass = |r: f32| r * r * r;
                    plan.velocity = collide(
                        velocity,
                        mass(body.radius),
                        vector(back),
                        mass(partner.radius),
                        apart,
                    );
                }
            }
            plan
        })
        .collect();
    Ok((plans, directory))
}

/// The rounds of the second step on the planned motions, until one shortens nothing on any
/// rank: each body's level (`WHOLE`, `CONTACT` or `FROZEN`).
fn settle<S: Space>(
    planning: &mut S,
    state: &State,
    plans: &[Plan],
    scene: &Scene,
    tally: &mut Tally,
) -> Result<Vec<u32>, Error> {
    let owned = &state.owned;
    let n = owned.len();
    let mut levels = vec![WHOLE; n];
    let mut planned = owned.clone();
    loop {
        tally.rounds += 1;
        for k in 0..n {
            planned.bodies[k].displacement = plans[k].motion(&owned.bodies[k], levels[k]);
        }
        let seen = planning.find(&planned, scene)?.earliest;
        let own_levels: Vec<[u32; 2]> = (0..n)
            .map(|k| [levels[k], u32::from(plans[k].cuttable(levels[k]))])
            .collect();
        let halo_levels = planning.halo_values(&own_levels)?;
        let directory = Directory::new(owned, planning.halo());
        // `mark`: a body conflicts where it meets anything but the contact its plan is built
        // on (its pair partner, planned as far as it; its wall).
        let conflicts: Vec<[u32; 1]> = (0..n)
            .map(|k| {
                let level = levels[k];
                let plan = &plans[k];
                let conflict = level != FROZEN
                    && match seen[k].map(|hit| hit.partner) {
                        None => false,
                        Some(Partner::Body { index, .. }) => {
                            !(plan.kind == Kind::Pair
                                && index == plan.partner
                                && directory.value(index, &own_levels, &halo_levels)[0] == level)
                        }
                        Some(Partner::Wall { index }) => {
                            !(plan.kind == Kind::Wall && index == plan.partner)
                        }
                    };
                [u32::from(conflict)]
            })
            .collect();
        let halo_conflicts = planning.halo_values(&conflicts)?;
        // `shorten`: a conflicting body goes less far, unless it would be frozen while the
        // body it meets is cut this round (it waits). Every body reads the round's values
        // from before any change.
        let mut demoted = 0;
        for k in 0..n {
            if conflicts[k][0] == 0 {
                continue;
            }
            let cuttable = plans[k].cuttable(levels[k]);
            if let (false, Some(Partner::Body { index, .. })) =
                (cuttable, seen[k].map(|hit| hit.partner))
            {
                let other_conflicts = directory.value(index, &conflicts, &halo_conflicts)[0];
                let other_cuttable = directory.value(index, &own_levels, &halo_levels)[1];
                if other_conflicts != 0 && other_cuttable != 0 {
                    continue;
                }
            }
            if cuttable {
                levels[k] = CONTACT;
                tally.cut += 1;
            } else {
                levels[k] = FROZEN;
                tally.frozen += 1;
            }
            demoted += 1;
        }
        if planning.sum(demoted) == 0 {
            return Ok(levels);
        }
    }
}

/// One frame on `state` (see the header); `records` gets its answers where given.
fn frame<S: Space>(
    motions: &mut S,
    planning: &mut S,
    scene: &Scene,
    state: &mut State,
    tally: &mut Tally,
    records: Option<&mut Vec<String>>,
    number: usize,
) -> Result<(), Error> {
    for (body, velocity) in state.owned.bodies.iter_mut().zip(&state.velocities) {
        body.displacement = *velocity;
    }
    let found = motions.find(&state.owned, scene)?;
    tally.reported += found.contacts.len() as u64;
    if let Some(records) = records {
        for (k, &global) in state.owned.global.iter().enumerate() {
            records.push(format!(
                "{number} earliest {global} {:?}",
                found.earliest[k]
            ));
        }
        records.extend(found.contacts.iter().map(|c| format!("{number} {c:?}")));
    }
    let (plans, directory) = plans(motions, state, &found, scene, tally)?;
    let levels = settle(planning, state, &plans, scene, tally)?;
    // A pair's velocities change only where neither body is frozen: the partner's level, from
    // its owner, along the first step's halo (which holds every partner).
    let own_levels: Vec<[u32; 1]> = levels.iter().map(|&level| [level]).collect();
    let halo_levels = motions.halo_values(&own_levels)?;
    let period = scene.period();
    for k in 0..state.owned.len() {
        if levels[k] == FROZEN {
            continue;
        }
        let plan = &plans[k];
        let body = &mut state.owned.bodies[k];
        body.center += plan.motion(body, levels[k]);
        let responds = plan.kind == Kind::Wall
            || (plan.kind == Kind::Pair
                && directory.value(plan.partner, &own_levels, &halo_levels)[0] != FROZEN);
        if responds {
            state.velocities[k] = plan.velocity;
        }
        // Into the periodic cell, on the axes that wrap.
        for axis in 0..3 {
            if period[axis].is_finite() {
                let c = &mut body.center[axis];
                if *c < 0.0 {
                    *c += period[axis];
                }
                if *c >= period[axis] {
                    *c -= period[axis];
                }
            }
        }
    }
    let mut carried: Vec<[u32; 3]> = state
        .velocities
        .iter()
        .map(|v| v.to_array().map(f32::to_bits))
        .collect();
    motions.migrate(&mut state.owned, &mut carried)?;
    state.velocities = carried.iter().map(|words| vector(words)).collect();
    Ok(())
}

/// The final state as lines: each body's centre, radius and velocity, as bits.
fn final_lines(state: &State) -> Vec<String> {
    (0..state.owned.len())
        .map(|k| {
            let body = &state.owned.bodies[k];
            let bits = |v: Vec3| v.to_array().map(f32::to_bits);
            format!(
                "final {} {:08x?} {:08x} {:08x?}",
                state.owned.global[k],
                bits(body.center),
                body.radius.to_bits(),
                bits(state.velocities[k])
            )
        })
        .collect()
}

/// The run in one process (rank 0's `--check`): its records, sorted.
fn one_process(scene: &Scene, frames: usize) -> Result<Vec<String>, Error> {
    let n = scene.bodies.len();
    let mut state = State {
        owned: Owned {
            bodies: scene.bodies.clone(),
            global: (0..n as u32).collect(),
            groups: scene.groups.clone(),
        },
        velocities: scene.velocities.clone(),
    };
    let (mut motions, mut planning) = (OneProcess::default(), OneProcess::default());
    let mut records = Vec::new();
    let mut tally = Tally::default();
    for number in 0..frames {
        frame(
            &mut motions,
            &mut planning,
            scene,
            &mut state,
            &mut tally,
            Some(&mut records),
            number,
        )?;
    }
    records.extend(final_lines(&state));
    records.sort_unstable();
    Ok(records)
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => return bad_options(&message),
    };
    sweepcast_mpi::exit_on_panic();
    let universe = mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let ranks = world.size() as u32;
    let scene = Scene::new(&options);
    let counts = brick_counts(ranks);
    let side = f64::from(scene.side);
    let bricks = Bricks::new([0.0; 3], [side; 3], counts, &scene.options).expect("bricks");
    let mut motions = Ranks::new(&world, bricks.clone(), options.message_words, true);
    let mut planning = Ranks::new(&world, bricks.clone(), options.message_words, false);
    let mut state = State {
        owned: Owned::of(&motions.step, &scene.bodies, &scene.groups).expect("one group a body"),
        velocities: Vec::new(),
    };
    state.velocities = state
        .owned
        .global
        .iter()
        .map(|&g| scene.velocities[g as usize])
        .collect();
    let rank = world.rank();
    if rank == 0 {
        println!(
            "{ranks} ranks, bricks {}×{}×{}, {} scene{}, {} bodies, {} frames; host: {}",
            counts[0],
            counts[1],
            counts[2],
            match options.scene {
                SceneKind::Closed => "closed",
                SceneKind::Slab => "slab",
            },
            if options.groups { " with groups" } else { "" },
            options.bodies,
            options.frames,
            common::machine()
        );
    }
    let mut tally = Tally::default();
    let mut records = Vec::new();
    let start = Instant::now();
    for number in 0..options.frames {
        let result = frame(
            &mut motions,
            &mut planning,
            &scene,
            &mut state,
            &mut tally,
            options.check.then_some(&mut records),
            number,
        );
        if let Err(error) = result {
            eprintln!("rank {rank}, frame {number}: {error}");
            return ExitCode::FAILURE;
        }
    }
    let elapsed = start.elapsed();
    let mut ok = true;
    report(&world, &motions, &planning, &tally, elapsed);
    if options.check {
        records.extend(final_lines(&state));
        let text: String = records.iter().map(|line| format!("{line}\n")).collect();
        let gathered = match gather_text(&world, &text) {
            Ok(gathered) => gathered,
            Err(error) => {
                eprintln!("rank {rank}: --check: {error}; check fewer bodies or frames");
                return ExitCode::FAILURE;
            }
        };
        if rank == 0 {
            let mut ours: Vec<&str> = gathered.lines().collect();
            ours.sort_unstable();
            match one_process(&scene, options.frames) {
                Ok(theirs) => {
                    let same = ours.len() == theirs.len()
                        && ours.iter().zip(&theirs).all(|(a, b)| *a == b);
                    if same {
                        println!(
                            "check: the same contacts and final state as one process, to the bit ({} lines)",
                            ours.len()
                        );
                    } else {
                        let first = ours.iter().zip(&theirs).find(|(a, b)| **a != b.as_str());
                        println!(
                            "check: DIFFERENT from one process: {} lines against {}; first difference: {first:?}",
                            ours.len(),
                            theirs.len()
                        );
                        ok = false;
                    }
                }
                Err(error) => {
                    println!("check: the one process failed: {error}");
                    ok = false;
                }
            }
        }
        let mut all_ok = 0u32;
        world.all_reduce_into(&u32::from(ok), &mut all_ok, SystemOperation::min());
        ok = all_ok == 1;
    }
    if let Err(message) = draw(&world, &motions, &state, &scene, counts, &options.out) {
        eprintln!("rank {rank}: the picture: {message}");
        ok = false;
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Prints (rank 0) the contacts, the contacts per second, the halo's share and the
/// exchange's share, summed or taken the slowest over the ranks.
fn report(
    world: &mpi::topology::SimpleCommunicator,
    motions: &Ranks,
    planning: &Ranks,
    tally: &Tally,
    elapsed: Duration,
) {
    let sum = |value: u64| {
        let mut total = 0u64;
        world.all_reduce_into(&value, &mut total, SystemOperation::sum());
        total
    };
    let sum_f64 = |value: f64| {
        let mut total = 0f64;
        world.all_reduce_into(&value, &mut total, SystemOperation::sum());
        total
    };
    let mut slowest = 0f64;
    world.all_reduce_into(&elapsed.as_secs_f64(), &mut slowest, SystemOperation::max());
    let exchange = sum_f64((motions.report.exchange + planning.report.exchange).as_secs_f64());
    let step = sum_f64((motions.report.step + planning.report.step).as_secs_f64());
    let time = sum_f64(elapsed.as_secs_f64());
    let [contacts, pairs, walls, unmatched, cut, frozen, reported] = [
        tally.contacts,
        tally.pairs,
        tally.walls,
        tally.unmatched,
        tally.cut,
        tally.frozen,
        tally.reported,
    ]
    .map(sum);
    let halo = sum(motions.halo_bodies);
    let owned = sum(motions.owned_bodies);
    if world.rank() == 0 {
        println!(
            "{contacts} bodies with an earliest contact ({pairs} in mutually earliest pairs, {walls} at walls, {unmatched} not mutual); {cut} motions cut to the contact, {frozen} frozen; {} rounds on rank 0",
            tally.rounds
        );
        println!(
            "{reported} contacts in {slowest:.3} s: {:.0} contacts per second; halo {:.1} % of the bodies held; exchange {:.1} % of the ranks' time (step {:.1} %)",
            reported as f64 / slowest,
            100.0 * halo as f64 / (halo + owned).max(1) as f64,
            100.0 * exchange / time,
            100.0 * step / time,
        );
    }
}

/// The picture (rank 0): the middle third of the box in z, seen from above: the bricks'
/// faces, each body in its rank's colour, brick 0's halo of the last frame's first step as
/// rings.
fn draw(
    world: &mpi::topology::SimpleCommunicator,
    motions: &Ranks,
    state: &State,
    scene: &Scene,
    counts: [u32; 3],
    out: &str,
) -> Result<(), String> {
    let rank = world.rank();
    let in_slab = |body: &MovingSphere| (body.center.z - scene.side / 2.0).abs() < scene.side / 6.0;
    let text_lines: String = state
        .owned
        .bodies
        .iter()
        .filter(|b| in_slab(b))
        .map(|b| format!("{rank} {} {} {}\n", b.center.x, b.center.y, b.radius))
        .collect();
    let gathered = gather_text(world, &text_lines).map_err(|error| error.to_string())?;
    if rank != 0 {
        return Ok(());
    }
    const SIZE: u32 = 800;
    const MARGIN: f32 = 40.0;
    let scale = (SIZE as f32 - 2.0 * MARGIN) / scene.side;
    let at = |x: f32, y: f32| (MARGIN + x * scale, SIZE as f32 - MARGIN - y * scale);
    let mut pixmap = Pixmap::new(SIZE, SIZE).ok_or("no pixmap")?;
    pixmap.fill(tiny_skia::Color::from_rgba8(250, 250, 247, 255));
    const COLOURS: [[u8; 3]; 8] = [
        [31, 119, 180],
        [255, 127, 14],
        [44, 160, 44],
        [214, 39, 40],
        [148, 103, 189],
        [140, 86, 75],
        [227, 119, 194],
        [127, 127, 127],
    ];
    let circle = |x: f32, y: f32, r: f32| {
        let (cx, cy) = at(x, y);
        PathBuilder::from_circle(cx, cy, (r * scale).max(0.5))
    };
    for line in gathered.lines() {
        let fields: Vec<f32> = line
            .split(' ')
            .map(|f| f.parse().map_err(|_| format!("bad line {line}")))
            .collect::<Result<_, _>>()?;
        let colour = COLOURS[fields[0] as usize % COLOURS.len()];
        if let Some(path) = circle(fields[1], fields[2], fields[3]) {
            pixmap.fill_path(
                &path,
                &paint(colour, 255),
                FillRule::Winding,
                Transform::identity(),
                None,
            );
        }
    }
    let halo = motions.halo();
    let ring = Stroke {
        width: 1.0,
        ..Stroke::default()
    };
    for body in halo.bodies.iter().filter(|body| in_slab(body)) {
        // A halo body may be an image across a periodic face: drawn where its centre is.
        if let Some(path) = circle(body.center.x, body.center.y, body.radius) {
            pixmap.stroke_path(
                &path,
                &paint([0, 0, 0], 200),
                &ring,
                Transform::identity(),
                None,
            );
        }
    }
    let face = Stroke {
        width: 2.0,
        ..Stroke::default()
    };
    for (axis, &count) in counts.iter().enumerate().take(2) {
        for k in 0..=count {
            let c = scene.side * k as f32 / count as f32;
            let mut line = PathBuilder::new();
            let (from, to) = if axis == 0 {
                (at(c, 0.0), at(c, scene.side))
            } else {
                (at(0.0, c), at(scene.side, c))
            };
            line.move_to(from.0, from.1);
            line.line_to(to.0, to.1);
            if let Some(path) = line.finish() {
                pixmap.stroke_path(
                    &path,
                    &paint([40, 40, 40], 255),
                    &face,
                    Transform::identity(),
                    None,
                );
            }
        }
    }
    text(
        &mut pixmap,
        &format!(
            "{} ranks, bricks {}x{}x{}, z's middle third; rings: brick 0's halo",
            world.size(),
            counts[0],
            counts[1],
            counts[2]
        ),
        MARGIN,
        12.0,
        1.25,
        [20, 20, 20],
    );
    if let Some(parent) = std::path::Path::new(out).parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    pixmap.save_png(out).map_err(|e| e.to_string())?;
    println!("picture: {out}");
    Ok(())
}
