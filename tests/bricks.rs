//! The bricks of `sweepcast::bricks` in one process: each world is cut into bricks, each
//! brick's halo is exchanged in the three staged axis exchanges (here by copying indices
//! between the bricks' lists, as the MPI exchange sends them), each brick's step finds the
//! answers it owns, and together they must be the answers of one process holding every
//! body, to the bit: every contact once, each body's earliest contact and earliest wall. Open
//! and periodic boxes, uniform and clustered bodies, walls and groups, a bullet pair across a
//! face, a body exactly on a face, a brick with no bodies, and a halo too wide.

use sweepcast::bricks::{BrickStep, Bricks, Local, halo_width, largest_reach};
use sweepcast::cpu::ContactFinder;
use sweepcast::glam::{DVec3, Vec3};
use sweepcast::{
    CollisionGroups, Contact, EarliestImpact, Error, MovingSphere, PeriodicBox, SweepOptions, Wall,
};
use testkit::SplitMix64;

/// A world: its name, bodies, groups (empty for none), walls and options, and the domain's
/// bounds for open axes.
struct World {
    name: String,
    bodies: Vec<MovingSphere>,
    groups: Vec<CollisionGroups>,
    walls: Vec<Wall>,
    options: SweepOptions,
    lower: [f64; 3],
    upper: [f64; 3],
}

impl World {
    /// `bodies` in open space, without walls or groups, in the domain `[0, side)³`.
    fn open(name: &str, bodies: Vec<MovingSphere>, side: f64) -> Self {
        World {
            name: name.to_string(),
            bodies,
            groups: Vec::new(),
            walls: Vec::new(),
            options: SweepOptions::default(),
            lower: [0.0; 3],
            upper: [side; 3],
        }
    }
}

/// What a step says: its contacts, each body's earliest contact and each body's earliest
/// wall.
struct Answers {
    contacts: Vec<Contact>,
    earliest: Vec<Option<EarliestImpact>>,
    walls: Vec<Option<Contact>>,
}

impl Answers {
    /// Where `self` differs from `other` in bits, the first such place of each part; empty
    /// where they are equal. `Debug` writes each f32 by the shortest text that reads back to
    /// its bits (and -0 apart from 0), so equal text is equal bits.
    fn differences(&self, other: &Self) -> String {
        fn first<T: std::fmt::Debug>(name: &str, ours: &[T], theirs: &[T]) -> String {
            let text = |items: &[T]| items.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>();
            let (ours, theirs) = (text(ours), text(theirs));
            if ours == theirs {
                return String::new();
            }
            let at = ours.iter().zip(&theirs).position(|(a, b)| a != b);
            let at = at.unwrap_or(ours.len().min(theirs.len()));
            format!(
                "{name}: {} against {}; first difference at {at}: {:?} against {:?}\n",
                ours.len(),
                theirs.len(),
                ours.get(at),
                theirs.get(at)
            )
        }
        first("contacts", &self.contacts, &other.contacts)
            + &first("earliest", &self.earliest, &other.earliest)
            + &first("walls", &self.walls, &other.walls)
    }
}

/// One process holding every body.
fn one_process(world: &World) -> Answers {
    let mut finder = ContactFinder::new();
    finder.set_groups(&world.groups);
    let contacts = finder
        .find_with_walls(&world.bodies, &world.walls, world.options)
        .expect("a valid world");
    Answers {
        contacts: contacts.contacts().to_vec(),
        earliest: contacts.earliest_impacts(),
        walls: contacts.earliest_walls().to_vec(),
    }
}

/// The world cut into `bricks`: the owners, the staged halo exchange, each brick's step, and
/// the answers put together, with how many bodies the bricks held in all (owned and halo).
fn in_bricks(world: &World, bricks: &Bricks) -> Result<(Answers, usize), Error> {
    let bodies = &world.bodies;
    let width = halo_width(largest_reach(bodies));
    bricks.check_halo_width(width)?;
    let mut owned = vec![Vec::new(); bricks.len()];
    for (index, body) in bodies.iter().enumerate() {
        owned[bricks.owner(body.center)].push(index as u32);
    }
    // What each brick holds: its own bodies, then what it received, axis by axis.
    let mut held = owned.clone();
    for axis in 0..3 {
        let mut received = vec![Vec::new(); bricks.len()];
        for (brick, holds) in held.iter().enumerate() {
            let centers: Vec<Vec3> = holds.iter().map(|&g| bodies[g as usize].center).collect();
            let sends = bricks.halo_sends(brick, axis, width, &centers);
            for (to, indices) in [sends.lower, sends.upper].into_iter().flatten() {
                received[to].extend(indices.iter().map(|&k| holds[k as usize]));
            }
        }
        for (holds, more) in held.iter_mut().zip(received) {
            holds.extend(more);
        }
    }
    let mut answers = Answers {
        contacts: Vec::new(),
        earliest: vec![None; bodies.len()],
        walls: if world.walls.is_empty() {
            Vec::new()
        } else {
            vec![None; bodies.len()]
        },
    };
    let mut step = BrickStep::new();
    let mut held_in_all = 0;
    for (brick, holds) in held.iter().enumerate() {
        held_in_all += holds.len();
        let (mine, halo) = holds.split_at(owned[brick].len());
        let pick = |indices: &[u32]| -> (Vec<MovingSphere>, Vec<CollisionGroups>) {
            let groups = if world.groups.is_empty() {
                Vec::new()
            } else {
                indices.iter().map(|&g| world.groups[g as usize]).collect()
            };
            (
                indices.iter().map(|&g| bodies[g as usize]).collect(),
                groups,
            )
        };
        let ((mine_bodies, mine_groups), (halo_bodies, halo_groups)) = (pick(mine), pick(halo));
        let found = step.find(
            Local {
                bodies: &mine_bodies,
                global: mine,
                groups: &mine_groups,
            },
            Local {
                bodies: &halo_bodies,
                global: halo,
                groups: &halo_groups,
            },
            &world.walls,
            world.options,
        )?;
        answers.contacts.extend(found.contacts);
        for (k, &global) in mine.iter().enumerate() {
            answers.earliest[global as usize] = found.earliest[k];
            if !world.walls.is_empty() {
                answers.walls[global as usize] = found.walls[k];
            }
        }
    }
    // In one process's order: by time, then by the pair.
    answers.contacts.sort_by(|a, b| {
        let key = |c: &Contact| (c.body, c.pair().map_or(0, |pair| pair[1]));
        a.impact
            .time_of_impact
            .total_cmp(&b.impact.time_of_impact)
            .then(key(a).cmp(&key(b)))
    });
    Ok((answers, held_in_all))
}

/// `n` bodies spread over a cube `[0, side)³`, radius up to 0.5, displaced up to 1.
fn uniform(n: usize, side: f64, seed: u64) -> Vec<MovingSphere> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| {
            let center = DVec3::new(rng.unit(), rng.unit(), rng.unit()) * side;
            MovingSphere::new(
                center.as_vec3(),
                rng.range(0.1, 0.5) as f32,
                rng.in_ball(1.0, 3),
            )
        })
        .collect()
}

/// `n` bodies, half of them crowded within 4 of `at` (where faces meet), the rest uniform.
fn clustered(n: usize, side: f64, at: DVec3, seed: u64) -> Vec<MovingSphere> {
    let mut rng = SplitMix64::new(seed);
    let mut bodies = uniform(n / 2, side, seed + 1);
    bodies.extend((0..n - n / 2).map(|_| {
        let center = at + rng.in_ball(4.0, 3).as_dvec3();
        MovingSphere::new(center.as_vec3(), 0.3, rng.in_ball(1.0, 3))
    }));
    bodies
}

/// The walls of an open world in the cube `[0, side)³`: the floor, a slanted plane, two
/// segments across the middle faces.
fn walls(side: f32) -> Vec<Wall> {
    let half = side / 2.0;
    vec![
        Wall::plane(Vec3::ZERO, Vec3::Y),
        Wall::plane(Vec3::splat(side), Vec3::new(-1.0, -1.0, -0.5)),
        Wall::segment_3d(Vec3::new(half, 0.0, half), Vec3::new(half, side, half)),
        Wall::segment_3d(Vec3::new(0.0, half, half), Vec3::new(side, half, half)),
    ]
}

fn worlds() -> Vec<World> {
    let side = 40.0;
    let open = |name: &str, bodies: Vec<MovingSphere>| World::open(name, bodies, side);
    let periodic_box = PeriodicBox::cube(side as f32).expect("a valid box");
    let periodic = |name: &str, bodies: Vec<MovingSphere>| World {
        options: SweepOptions::default().with_periodic_box(periodic_box),
        ..open(name, testkit::wrapped(&bodies, &periodic_box))
    };
    let middle = DVec3::splat(side / 2.0);
    let mut worlds = vec![
        open("open, uniform", uniform(4000, side, 1)),
        open(
            "open, clustered where faces meet",
            clustered(4000, side, middle, 2),
        ),
        // Bodies beyond the domain belong to the bricks at its edges.
        open("open, beyond the domain", uniform(6000, side + 20.0, 3)),
        periodic("periodic, uniform", uniform(4000, side, 4)),
        periodic(
            "periodic, clustered at the corner",
            clustered(4000, side, DVec3::ZERO, 5),
        ),
    ];
    let mut with_walls = open("open, walls and groups", uniform(4000, side, 6));
    with_walls.walls = walls(side as f32);
    with_walls.groups = testkit::random_groups(4000, 7);
    worlds.push(with_walls);
    let mut periodic_walls = periodic("periodic, walls and groups", uniform(4000, side, 8));
    periodic_walls.walls = walls(side as f32 * 0.999);
    periodic_walls.groups = testkit::random_groups(4000, 9);
    worlds.push(periodic_walls);
    worlds
}

/// The brick counts every world is cut into.
const COUNTS: [[u32; 3]; 7] = [
    [1, 1, 1],
    [2, 1, 1],
    [1, 2, 1],
    [2, 2, 1],
    [2, 2, 2],
    [3, 2, 1],
    [4, 1, 1],
];

#[test]
fn bricks_give_one_process_answers_to_the_bit() {
    for world in worlds() {
        let reference = one_process(&world);
        assert!(
            reference.contacts.len() > 100,
            "{}: a world with contacts",
            world.name
        );
        for counts in COUNTS {
            let bricks = Bricks::new(world.lower, world.upper, counts, &world.options)
                .expect("valid bricks");
            let (answers, held) = in_bricks(&world, &bricks).expect("a halo that fits");
            let differences = answers.differences(&reference);
            assert!(
                differences.is_empty(),
                "{}, bricks {counts:?}:\n{differences}",
                world.name
            );
            eprintln!(
                "{}, bricks {counts:?}: {} contacts, {} bodies held for {} ({:.1} % halo)",
                world.name,
                answers.contacts.len(),
                held,
                world.bodies.len(),
                100.0 * (held - world.bodies.len()) as f64 / held as f64
            );
        }
    }
}

/// A fast body in one brick meets one in the next, across their face: the halo's width is
/// set by the fastest body, so the target is in the bullet's brick's halo.
#[test]
fn a_bullet_pair_across_a_face_is_found() {
    let mut bodies = uniform(500, 100.0, 11);
    bodies.retain(|body| (body.center.x - 50.0).abs() > 15.0);
    let bullet = bodies.len() as u32;
    bodies.push(MovingSphere::new(
        Vec3::new(44.0, 50.0, 50.0),
        0.25,
        Vec3::new(12.0, 0.0, 0.0),
    ));
    bodies.push(MovingSphere::new(
        Vec3::new(55.0, 50.0, 50.0),
        0.5,
        Vec3::ZERO,
    ));
    let world = World::open("bullet", bodies, 100.0);
    let reference = one_process(&world);
    let hit = reference
        .contacts
        .iter()
        .find(|contact| contact.body == bullet)
        .expect("the bullet hits its target");
    assert_eq!(hit.pair(), Some([bullet, bullet + 1]));
    let bricks = Bricks::new(world.lower, world.upper, [2, 1, 1], &world.options).unwrap();
    assert_eq!(bricks.owner(Vec3::new(44.0, 50.0, 50.0)), 0);
    assert_eq!(bricks.owner(Vec3::new(55.0, 50.0, 50.0)), 1);
    let (answers, _) = in_bricks(&world, &bricks).expect("a halo that fits");
    let differences = answers.differences(&reference);
    assert!(differences.is_empty(), "{differences}");
}

/// A centre exactly on a face belongs to the brick above it, in open space and in a
/// periodic box (where the cell's upper face is the lower face of brick 0); a brick with no
/// bodies gives no answers, and the rest are still one process's.
#[test]
fn a_centre_on_a_face_has_one_owner_and_an_empty_brick_is_fine() {
    let options = SweepOptions::default();
    let bricks = Bricks::new([0.0; 3], [60.0; 3], [2, 2, 1], &options).unwrap();
    assert_eq!(bricks.owner(Vec3::new(30.0, 0.0, 0.0)), 1);
    assert_eq!(bricks.owner(Vec3::new(29.999998, 30.0, 0.0)), 2);
    assert_eq!(bricks.owner(Vec3::new(-1e9, 1e9, 0.0)), 2);
    let periodic_box = PeriodicBox::cube(60.0).unwrap();
    let periodic = options.with_periodic_box(periodic_box);
    let bricks_in_box = Bricks::new([0.0; 3], [0.0; 3], [2, 1, 1], &periodic).unwrap();
    assert_eq!(bricks_in_box.owner(Vec3::new(60.0, 0.0, 0.0)), 0);
    assert_eq!(bricks_in_box.owner(Vec3::new(-1e-6, 0.0, 0.0)), 1);
    assert_eq!(bricks_in_box.owner(Vec3::new(30.0, 0.0, 0.0)), 1);

    // Bodies on the face x = 30 and around it, none with y at or above 30: bricks 2 and 3
    // own nothing.
    let mut bodies: Vec<MovingSphere> = uniform(1500, 60.0, 12)
        .into_iter()
        .filter(|body| body.center.y < 28.0)
        .collect();
    let mut rng = SplitMix64::new(13);
    for _ in 0..200 {
        let center = Vec3::new(
            30.0,
            rng.range(0.0, 28.0) as f32,
            rng.range(0.0, 60.0) as f32,
        );
        bodies.push(MovingSphere::new(center, 0.4, rng.in_ball(1.0, 3)));
    }
    let world = World::open("on the face", bodies, 60.0);
    assert!(
        world
            .bodies
            .iter()
            .all(|body| bricks.owner(body.center) < 2)
    );
    let reference = one_process(&world);
    assert!(reference.contacts.iter().any(|contact| {
        let [a, b] = contact.pair().unwrap();
        world.bodies[a as usize].center.x == 30.0 && world.bodies[b as usize].center.x == 30.0
    }));
    let (answers, _) = in_bricks(&world, &bricks).expect("a halo that fits");
    let differences = answers.differences(&reference);
    assert!(differences.is_empty(), "{differences}");
}

/// A halo wider than half a brick is a typed error, on an axis cut into two or more; an axis
/// of one brick takes any width.
#[test]
fn a_halo_beyond_half_a_brick_is_a_typed_error() {
    let options = SweepOptions::default();
    let bricks = Bricks::new([0.0; 3], [60.0; 3], [1, 4, 1], &options).unwrap();
    assert!(bricks.check_halo_width(7.5).is_ok());
    let error = bricks.check_halo_width(7.6).unwrap_err();
    assert!(
        matches!(error, Error::ReachTooLarge { axis: 1, half_brick, .. } if half_brick == 7.5),
        "{error}"
    );
    assert!(error.to_string().contains("fewer, wider bricks"), "{error}");
    for width in [f64::NAN, -1.0, f64::INFINITY] {
        assert!(matches!(
            bricks.check_halo_width(width),
            Err(Error::ReachTooLarge { .. })
        ));
    }
    // A bullet too fast for these bricks: the step refuses it before any exchange.
    let mut bodies = uniform(100, 60.0, 14);
    bodies.push(MovingSphere::new(
        Vec3::splat(30.0),
        0.5,
        Vec3::new(0.0, 4.0, 0.0),
    ));
    let world = World::open("too fast", bodies, 60.0);
    assert!(matches!(
        in_bricks(&world, &bricks),
        Err(Error::ReachTooLarge { axis: 1, .. })
    ));
}

/// Bricks that cannot be made, and bodies a brick's step cannot take, are typed errors.
#[test]
fn bad_bricks_and_bad_brick_bodies_are_typed_errors() {
    let options = SweepOptions::default();
    let bad = [
        ([0.0; 3], [60.0; 3], [0, 1, 1]),
        ([0.0, 0.0, 0.0], [60.0, 60.0, -1.0], [1, 1, 2]),
        ([0.0, f64::NAN, 0.0], [60.0; 3], [1, 2, 1]),
        ([0.0; 3], [60.0; 3], [65_536, 65_536, 2]),
        // Finite bounds whose width is not: every centre would be brick 0's.
        ([-1e308, 0.0, 0.0], [1e308, 60.0, 60.0], [2, 1, 1]),
    ];
    for (lower, upper, counts) in bad {
        assert!(
            matches!(
                Bricks::new(lower, upper, counts, &options),
                Err(Error::InvalidBricks { .. })
            ),
            "{lower:?} {upper:?} {counts:?}"
        );
    }
    // An axis of one brick needs no bounds.
    assert!(Bricks::new([f64::NAN; 3], [f64::NAN; 3], [1, 1, 1], &options).is_ok());
    // Bounds of −0 and +0 make the same bricks, printed alike (sweepcast-mpi compares the
    // ranks' bricks by their Debug text), as do NaN bounds on axes of one brick.
    let plus = Bricks::new([0.0; 3], [60.0; 3], [2, 2, 1], &options).unwrap();
    let minus = Bricks::new(
        [-0.0, -0.0, f64::NAN],
        [60.0, 60.0, f64::NAN],
        [2, 2, 1],
        &options,
    );
    assert_eq!(format!("{plus:?}"), format!("{:?}", minus.unwrap()));
    // A step in another space than the bricks'.
    let periodic = options.with_periodic_box(PeriodicBox::cube(60.0).unwrap());
    let open_bricks = Bricks::new([0.0; 3], [60.0; 3], [2, 1, 1], &options).unwrap();
    let box_bricks = Bricks::new([0.0; 3], [0.0; 3], [2, 1, 1], &periodic).unwrap();
    assert!(open_bricks.check_options(&options).is_ok());
    assert!(box_bricks.check_options(&periodic).is_ok());
    for (bricks, step) in [(&open_bricks, &periodic), (&box_bricks, &options)] {
        assert!(matches!(
            bricks.check_options(step),
            Err(Error::InvalidBricks { axis: 0, .. })
        ));
    }
    let other_box = options.with_periodic_box(PeriodicBox::cube(50.0).unwrap());
    assert!(box_bricks.check_options(&other_box).is_err());

    let bodies = uniform(4, 10.0, 15);
    let mut step = BrickStep::new();
    let local = |global: &'static [u32]| Local {
        bodies: &bodies[..2],
        global,
        groups: &[],
    };
    let empty = Local {
        bodies: &bodies[..0],
        global: &[],
        groups: &[],
    };
    assert!(matches!(
        step.find(local(&[0]), empty, &[], options),
        Err(Error::BrickBodies { .. })
    ));
    assert!(matches!(
        step.find(local(&[3, 3]), empty, &[], options),
        Err(Error::BrickBodies { .. })
    ));
    let groups = [CollisionGroups::ALL];
    let grouped = Local {
        bodies: &bodies[..2],
        global: &[0, 1],
        groups: &groups,
    };
    assert!(matches!(
        step.find(grouped, empty, &[], options),
        Err(Error::GroupsLength { .. })
    ));
    // Two different bodies under one global index (each rank numbering its own from 0): the
    // halo's body 1 is the owned body 0 under index 1, so one of them would be lost.
    let swapped = [bodies[1], bodies[0]];
    let other = Local {
        bodies: &swapped,
        global: &[0, 1],
        groups: &[],
    };
    assert!(matches!(
        step.find(local(&[0, 1]), other, &[], options),
        Err(Error::BrickBodies { reason }) if reason.contains("two different bodies")
    ));
    // The same bodies under the same indices but other groups are two different bodies too.
    let all = [CollisionGroups::ALL; 2];
    let none = [CollisionGroups::NONE; 2];
    let with_all = Local {
        bodies: &bodies[..2],
        global: &[0, 1],
        groups: &all,
    };
    let with_none = Local {
        groups: &none,
        ..with_all
    };
    assert!(matches!(
        step.find(with_all, with_none, &[], options),
        Err(Error::BrickBodies { .. })
    ));
    // A bad body is named by its global index, not by its place in the brick's order (global
    // 7 is swept second, after 3).
    let mut nan = [bodies[0], bodies[1]];
    nan[0].radius = f32::NAN;
    let named = Local {
        bodies: &nan,
        global: &[7, 3],
        groups: &[],
    };
    assert!(matches!(
        step.find(named, empty, &[], options),
        Err(Error::NonFinite { body: 7, .. })
    ));
    // A halo copy of an owned body is swept once, and the step is whole again after errors.
    let answers = step
        .find(local(&[0, 1]), local(&[0, 1]), &[], options)
        .expect("valid bodies");
    assert_eq!(answers.earliest.len(), 2);
    let answers = step
        .find(with_all, with_all, &[], options)
        .expect("the same bodies and groups");
    assert_eq!(answers.earliest.len(), 2);
}
