//! Run under `mpirun -np N` (N = 1, 2, 4 or 8): every rank builds the same worlds, takes its
//! brick's bodies, and steps them across the ranks for several steps, each body moved by its
//! displacement (wrapped into a periodic box's cell) and migrated between steps. Rank 0
//! gathers every rank's answers and holds them to one process's on the same bodies, to the
//! bit: every contact, each body's earliest contact and earliest wall. Exits 0 when every
//! step of every world agrees.
//!
//! `--errors`: instead, a rank's bad body, a halo too wide for the bricks, values for the
//! halo or the migration not one a body, a body left in another rank's brick, bricks that
//! differ between ranks, and values of another width or messages of another length on one
//! rank must give a typed error on every rank (exit 0 when they do). `--crash`: the last
//! rank exits in the middle of the run while the others wait in the step's first reduction
//! (`--panic`: it panics there instead); `mpirun` must end them all (a non-zero exit, never
//! a hang).

use std::num::NonZeroU32;
use std::process::ExitCode;

use mpi::traits::*;
use sweepcast::bricks::{Bricks, OwnedAnswers};
use sweepcast::cpu::ContactFinder;
use sweepcast::glam::{DVec3, Vec3};
use sweepcast::{CollisionGroups, MovingSphere, PeriodicBox, SweepOptions, Wall};
use sweepcast_mpi::{Error, MESSAGE_WORDS, MpiStep, Owned, brick_counts, gather_text};

/// The domain's side, and the steps each world takes.
const SIDE: f64 = 40.0;
const STEPS: usize = 3;

/// SplitMix64: the same numbers on every rank.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn vector(&mut self, scale: f64) -> Vec3 {
        let v = DVec3::new(self.next(), self.next(), self.next()) * 2.0 - DVec3::ONE;
        (v * scale).as_vec3()
    }
}

/// A world: its name, bodies, groups (empty for none), walls and options.
struct World {
    name: &'static str,
    bodies: Vec<MovingSphere>,
    groups: Vec<CollisionGroups>,
    walls: Vec<Wall>,
    options: SweepOptions,
}

/// `n` bodies in `[0, side)³` (or in `[0, side / 2)²` on x and y where `corner`), radius up to
/// 0.5, displaced up to `speed` per axis.
fn bodies(n: usize, seed: u64, speed: f64, corner: bool) -> Vec<MovingSphere> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| {
            let mut center = DVec3::new(rng.next(), rng.next(), rng.next()) * SIDE;
            if corner {
                center.x /= 2.0;
                center.y /= 2.0;
            }
            let radius = 0.1 + 0.4 * rng.next();
            MovingSphere::new(center.as_vec3(), radius as f32, rng.vector(speed))
        })
        .collect()
}

fn worlds() -> Vec<World> {
    let open = |name, bodies| World {
        name,
        bodies,
        groups: Vec::new(),
        walls: Vec::new(),
        options: SweepOptions::default(),
    };
    let periodic = SweepOptions::default()
        .with_periodic_box(PeriodicBox::cube(SIDE as f32).expect("a valid box"));
    let half = SIDE as f32 / 2.0;
    let mut with_walls = open("open, walls and groups", bodies(3000, 1, 0.6, false));
    with_walls.walls = vec![
        Wall::plane(Vec3::ZERO, Vec3::Y),
        Wall::segment_3d(
            Vec3::new(half, 0.0, half),
            Vec3::new(half, SIDE as f32, half),
        ),
    ];
    with_walls.groups = groups(3000, 2);
    let mut bullet = open("a bullet pair across the faces", bodies(400, 3, 0.3, false));
    bullet
        .bodies
        .retain(|body| (body.center - Vec3::splat(half)).length() > 8.0);
    bullet.bodies.push(MovingSphere::new(
        Vec3::new(half - 2.5, half - 0.5, half),
        0.25,
        Vec3::new(4.5, 0.9, 0.0),
    ));
    bullet.bodies.push(MovingSphere::new(
        Vec3::new(half + 2.0, half + 0.3, half),
        0.5,
        Vec3::ZERO,
    ));
    let mut on_face = open("centres on the faces", bodies(2000, 4, 0.6, false));
    for (k, body) in on_face.bodies.iter_mut().enumerate().step_by(5) {
        if k % 2 == 0 {
            body.center.x = half;
        } else {
            body.center.y = half;
        }
    }
    vec![
        with_walls,
        World {
            options: periodic,
            ..open(
                "periodic, migrating every step",
                wrapped(bodies(3000, 5, 2.5, false)),
            )
        },
        World {
            options: periodic,
            ..open(
                "periodic, in one corner",
                wrapped(bodies(3000, 6, 0.6, true)),
            )
        },
        bullet,
        on_face,
        World {
            groups: groups(2000, 8),
            ..open("empty bricks, groups", bodies(2000, 7, 0.6, true))
        },
    ]
}

/// `n` bodies' collision groups: each a member of one of three groups, meeting the first two.
fn groups(n: usize, seed: u64) -> Vec<CollisionGroups> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| CollisionGroups::new(1 << (rng.next() * 3.0) as u16, 0b011))
        .collect()
}

/// `bodies` with their centres wrapped into the periodic cube `[0, SIDE)³` (in f64, then
/// rounded to f32; one that rounds to the side is the f32 below it): the same bits on
/// every rank and in the one process.
fn wrapped(mut bodies: Vec<MovingSphere>) -> Vec<MovingSphere> {
    let side = SIDE as f32;
    for body in &mut bodies {
        body.center = body
            .center
            .to_array()
            .map(|c| {
                let inside = f64::from(c).rem_euclid(SIDE) as f32;
                if inside < side {
                    inside
                } else {
                    f32::from_bits(side.to_bits() - 1)
                }
            })
            .into();
    }
    bodies
}

/// `bodies` after the step: each moved by its displacement.
fn moved(bodies: &[MovingSphere], options: &SweepOptions) -> Vec<MovingSphere> {
    let moved: Vec<MovingSphere> = bodies
        .iter()
        .map(|body| {
            MovingSphere::new(
                body.center + body.displacement,
                body.radius,
                body.displacement,
            )
        })
        .collect();
    if options.periodic_box.is_some() {
        wrapped(moved)
    } else {
        moved
    }
}

/// A rank's answers as lines of text (`Debug` writes each f32 by the shortest text that reads
/// back to its bits): its contacts, then each owned body's earliest contact and wall.
fn lines(answers: &OwnedAnswers, owned: &Owned) -> Vec<String> {
    let mut lines: Vec<String> = answers.contacts.iter().map(|c| format!("{c:?}")).collect();
    for (k, &global) in owned.global.iter().enumerate() {
        lines.push(format!("earliest {global} {:?}", answers.earliest[k]));
        if let Some(wall) = answers.walls.get(k) {
            lines.push(format!("wall {global} {wall:?}"));
        }
    }
    lines
}

/// One process's answers on every body, as [`lines`] writes them.
fn one_process(world: &World, bodies: &[MovingSphere]) -> Vec<String> {
    let mut finder = ContactFinder::new();
    finder.set_groups(&world.groups);
    let contacts = finder
        .find_with_walls(bodies, &world.walls, world.options)
        .expect("a valid world");
    let mut lines: Vec<String> = contacts
        .contacts()
        .iter()
        .map(|c| format!("{c:?}"))
        .collect();
    let earliest = contacts.earliest_impacts();
    for global in 0..bodies.len() {
        lines.push(format!(
            "earliest {global} {:?}",
            earliest.get(global).copied().flatten()
        ));
        if !world.walls.is_empty() {
            lines.push(format!(
                "wall {global} {:?}",
                contacts.earliest_walls()[global]
            ));
        }
    }
    lines
}

fn same_answers(universe_world: &mpi::topology::SimpleCommunicator) -> bool {
    let counts = brick_counts(universe_world.size() as u32);
    let mut all_agree = true;
    for (index, world) in worlds().into_iter().enumerate() {
        let bricks = Bricks::new([0.0; 3], [SIDE; 3], counts, &world.options).expect("bricks");
        // Every third world sends its halo, migration and values in messages of 9 words (a
        // body's: every send a multiple, ended by an empty message), every third of 7 (a
        // body split across messages); the answers must not change.
        let words = [MESSAGE_WORDS as u32, 9, 7][index % 3];
        let mut step = MpiStep::new(universe_world, bricks)
            .and_then(|step| step.with_message_words(NonZeroU32::new(words).expect("not 0")))
            .expect("one rank a brick, the same words a message on each");
        let mut bodies = world.bodies.clone();
        let mut owned = Owned::of(&step, &bodies, &world.groups).expect("one group a body");
        for number in 0..STEPS {
            let (answers, report) = step
                .find(&owned, &world.walls, world.options)
                .unwrap_or_else(|error| panic!("{}: {error}", world.name));
            let text: String = lines(&answers, &owned)
                .iter()
                .map(|line| format!("{line}\n"))
                .collect();
            let gathered = gather_text(step.communicator(), &text).expect("a few kB");
            if step.rank() == 0 {
                let mut ours: Vec<&str> = gathered.lines().collect();
                let reference = one_process(&world, &bodies);
                let mut theirs: Vec<&str> = reference.iter().map(String::as_str).collect();
                ours.sort_unstable();
                theirs.sort_unstable();
                let contacts = theirs.iter().filter(|l| l.starts_with("Contact")).count();
                let agree = ours == theirs;
                all_agree &= agree;
                println!(
                    "{} ranks, {}, step {number}: {contacts} contacts, {} halo bodies on rank 0: {}",
                    universe_world.size(),
                    world.name,
                    report.halo_bodies,
                    if agree { "same answers" } else { "DIFFERENT" }
                );
                if !agree {
                    let first = ours.iter().zip(&theirs).find(|(a, b)| a != b);
                    println!(
                        "  {} lines against {}; first difference: {first:?}",
                        ours.len(),
                        theirs.len()
                    );
                }
            }
            // The step: every body moves by its displacement, on every rank and in the
            // reference alike, then migrates to its new brick.
            owned.bodies = moved(&owned.bodies, &world.options);
            bodies = moved(&bodies, &world.options);
            step.migrate(&mut owned).expect("finite bodies");
        }
    }
    all_agree
}

/// A bad body on the last rank, a halo too wide, values not one a body, a body left in
/// another rank's brick, bricks that differ between ranks, and values of another width or
/// messages of another length on the last rank: typed errors on every rank.
fn errors(world: &mpi::topology::SimpleCommunicator) -> bool {
    let counts = brick_counts(world.size() as u32);
    let options = SweepOptions::default();
    let bricks = Bricks::new([0.0; 3], [SIDE; 3], counts, &options).expect("bricks");
    let mut step = MpiStep::new(world, bricks).expect("one rank a brick");
    let all = bodies(500, 8, 0.5, false);
    let mut owned = Owned::of(&step, &all, &[]).expect("no groups");
    let last = world.size() - 1;
    if step.rank() == last {
        owned
            .bodies
            .push(MovingSphere::new(Vec3::splat(1.0), -1.0, Vec3::ZERO));
        owned.global.push(all.len() as u32);
    }
    let bad_body = match step.find(&owned, &[], options) {
        Err(Error::Step(sweepcast::Error::NegativeRadius { .. })) => step.rank() == last,
        Err(Error::OtherRank { rank }) => rank == last && step.rank() != last,
        _ => false,
    };
    let mut fast = Owned::of(&step, &all, &[]).expect("no groups");
    if step.rank() == 0 {
        fast.bodies.push(MovingSphere::new(
            Vec3::splat(5.0),
            0.5,
            Vec3::new(15.0, 0.0, 0.0),
        ));
        fast.global.push(all.len() as u32);
    }
    let too_wide = match step.find(&fast, &[], options) {
        Err(Error::Step(sweepcast::Error::ReachTooLarge { .. })) => world.size() > 1,
        Ok(_) => world.size() == 1,
        _ => false,
    };
    // Values for the halo, and values carried by the migration, one short on the last rank.
    let mut good = Owned::of(&step, &all, &[]).expect("no groups");
    step.find(&good, &[], options).expect("a valid step");
    let me = step.rank();
    let short = vec![[0u32; 2]; good.len() - usize::from(me == last && !good.is_empty())];
    let is_typed = |result: Result<(), Error>| match result {
        Err(Error::Step(sweepcast::Error::BrickBodies { .. })) => me == last,
        Err(Error::OtherRank { rank }) => rank == last && me != last,
        _ => false,
    };
    let values_short = is_typed(step.halo_values(&short).map(|_| ()))
        && is_typed(step.migrate_with(&mut good, &mut short.clone()))
        && matches!(
            Owned::of(&step, &all, &[CollisionGroups::ALL]),
            Err(sweepcast::Error::GroupsLength { .. })
        );
    // The last rank keeps a body that moved into another brick without migrating it: its
    // neighbours' halos would miss it, so the step refuses it (one rank owns every brick).
    let mut strayed = Owned::of(&step, &all, &[]).expect("no groups");
    if me == last {
        let elsewhere = all
            .iter()
            .position(|body| step.bricks().owner(body.center) != step.brick());
        if let Some(at) = elsewhere {
            strayed.bodies.push(all[at]);
            strayed.global.push(at as u32);
        }
    }
    let stray = match step.find(&strayed, &[], options) {
        Ok(_) => world.size() == 1,
        result => is_typed(result.map(|_| ())),
    };
    // Bricks computed from each rank's own bodies differ from rank to rank: every rank is
    // told so, before the ranks disagree on who owns what.
    let upper = SIDE + f64::from(me);
    let own_bricks = Bricks::new([0.0; 3], [upper; 3], counts, &options).expect("bricks");
    let differ = match MpiStep::new(world, own_bricks) {
        Err(Error::BricksDiffer) => world.size() > 1,
        Ok(_) => world.size() == 1,
        Err(_) => false,
    };
    // The last rank's values one word wider, and its messages one word longer, than the
    // others': every rank is told so, rather than misreading the words or waiting for more.
    let mut owned = Owned::of(&step, &all, &[]).expect("no groups");
    step.find(&owned, &[], options).expect("a valid step");
    let differs = |result: Result<(), Error>| match result {
        Err(Error::SettingsDiffer { least, most, .. }) => world.size() > 1 && most == least + 1,
        Ok(()) => world.size() == 1,
        Err(_) => false,
    };
    let (narrow, wide) = (vec![[1u32; 2]; owned.len()], vec![[1u32; 3]; owned.len()]);
    let values = if me == last {
        step.halo_values(&wide).map(|_| ())
    } else {
        step.halo_values(&narrow).map(|_| ())
    };
    let carried = if me == last {
        step.migrate_with(&mut owned, &mut wide.clone())
    } else {
        step.migrate_with(&mut owned, &mut narrow.clone())
    };
    let words = NonZeroU32::new(9 + u32::from(me == last)).expect("not 0");
    let message = MpiStep::new(world, step.bricks().clone())
        .expect("the same bricks")
        .with_message_words(words)
        .map(|_| ());
    let settings = differs(values) && differs(carried) && differs(message);
    let typed = |ok: bool| if ok { "typed" } else { "WRONG" };
    println!(
        "{} ranks, rank {}: a bad body {}, a halo too wide {}, values not one a body {}, \
         a body in another brick {}, bricks that differ {}, settings that differ {}",
        world.size(),
        step.rank(),
        typed(bad_body),
        typed(too_wide),
        typed(values_short),
        typed(stray),
        typed(differ),
        typed(settings),
    );
    bad_body && too_wide && values_short && stray && differ && settings
}

/// The last rank exits before the step; the others enter it and wait for it.
fn crash(world: &mpi::topology::SimpleCommunicator) -> bool {
    let options = SweepOptions::default();
    let bricks = Bricks::new(
        [0.0; 3],
        [SIDE; 3],
        brick_counts(world.size() as u32),
        &options,
    );
    let mut step = MpiStep::new(world, bricks.expect("bricks")).expect("one rank a brick");
    let owned = Owned::of(&step, &bodies(100, 9, 0.5, false), &[]).expect("no groups");
    if step.rank() == world.size() - 1 {
        if std::env::args().any(|arg| arg == "--panic") {
            panic!("the last rank panics before the step (--panic)");
        }
        std::process::exit(3);
    }
    step.find(&owned, &[], options).is_ok()
}

fn main() -> ExitCode {
    sweepcast_mpi::exit_on_panic();
    let universe = mpi::initialize().expect("MPI initialises once a process");
    let world = universe.world();
    let passed = if std::env::args().any(|arg| arg == "--errors") {
        errors(&world)
    } else if std::env::args().any(|arg| arg == "--crash" || arg == "--panic") {
        crash(&world)
    } else {
        same_answers(&world)
    };
    // Every rank's verdict: all must pass.
    let mine = u32::from(!passed);
    let mut failed = 0u32;
    world.all_reduce_into(&mine, &mut failed, mpi::collective::SystemOperation::sum());
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
