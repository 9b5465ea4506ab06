//! The CPU paths give the same answers, to the bit, however their work is split: with the
//! `parallel` feature on any rayon pool (one thread, the default, three, seven), and without
//! it on the calling thread. The step, the batches, the oracle, the parity judge and the
//! event loop run on seeded scenes large enough that every parallel stage splits (the tree's
//! sort, link and fold, the sample sort's buckets, the batches' chunks, the grid's layers).
//!
//! Across the builds (with and without `parallel`), each writes a digest of all the answers
//! to the file named by `SWEEPCAST_DIGEST`, and CI compares the files with each other and
//! with `tests/determinism.digest`, committed: the builds are separate binaries, so the
//! comparison is outside the test, and a change that moves an answer changes the committed
//! digest in the same commit, on purpose. Within a build the answers are
//! checked against expectations computed independently (every pair swept one at a time, and
//! the event loop's events with two different broad phases).

use std::fmt::Write as _;

use sweepcast::events::{BroadPhase, Cells, Elastic, Event, EventBody, EventLoop};
use sweepcast::glam::DVec3;
use sweepcast::parity::{self, CPU_BOUND};
use sweepcast::reference::{self, Body};
use sweepcast::{Impact, MovingSphere, PeriodicBox, SweepOptions, Wall, cpu};
use testkit::{Scene, SplitMix64, Workload, WorkloadConfig};

/// The steps' scenes: `(scene, bodies, dimensions, seed)`. 40,000 bodies split the tree's
/// sort into chunks and runs, its link and fold into parts, and the sample sort into buckets.
const STEP_SCENES: [(Scene, usize, u32, u64); 3] = [
    (Scene::Uniform, 40_000, 3, 1),
    (Scene::Periodic, 40_000, 3, 2),
    (Scene::Fast, 40_000, 2, 3),
];

/// The gas of the event loop: more bodies than the grid searches on one thread (16,384).
const GAS_SIDE: usize = 26;

/// Every answer of `finder`'s step of `bodies` among `walls`, into `answers` as `name`.
fn step_answers(
    answers: &mut Answers,
    name: &str,
    finder: &mut cpu::ContactFinder,
    bodies: &[MovingSphere],
    walls: &[Wall],
    options: SweepOptions,
) {
    let contacts = finder
        .find_with_walls(bodies, walls, options)
        .expect("valid scene");
    assert!(
        contacts.contacts().len() > 1000,
        "{name}: the scene must collide"
    );
    answers.add(
        name,
        &(
            contacts.candidates(),
            contacts.contacts(),
            earliest_per_body(contacts, bodies.len()),
            contacts.earliest_walls(),
        ),
    );
}

/// A body's earliest contact as the digest has always printed it: the record that 0.2's
/// `Contacts::earliest_per_body` returned, the contact's index and the partner.
#[derive(Debug)]
struct Earliest {
    #[allow(dead_code, reason = "read by Debug, for the digest")]
    contact: u32,
    #[allow(dead_code, reason = "read by Debug, for the digest")]
    partner: u32,
}

/// Each body's earliest contact, printed as the digest has always read it.
fn earliest_per_body(contacts: &sweepcast::Contacts, bodies: usize) -> Vec<Option<Earliest>> {
    testkit::earliest_per_body(contacts, bodies)
        .into_iter()
        .map(|earliest| {
            earliest.map(|(contact, partner)| Earliest {
                contact: contact as u32,
                partner,
            })
        })
        .collect()
}

/// The walls of a scene of `bodies`: the faces of a box a little inside their centres.
fn walls_of(bodies: &[MovingSphere]) -> [Wall; 6] {
    let (low, high) = bodies.iter().fold(
        (
            sweepcast::glam::Vec3::INFINITY,
            sweepcast::glam::Vec3::NEG_INFINITY,
        ),
        |(low, high), body| (low.min(body.center), high.max(body.center)),
    );
    let inset = 0.05 * (high - low);
    Wall::box_interior(low + inset, high - inset)
}

/// A gas of `GAS_SIDE³` bodies of radius 0.5 on a jittered lattice of spacing 1.6 in a
/// periodic cube, clear of each other, with random velocities.
fn gas(seed: u64) -> (Vec<EventBody>, PeriodicBox) {
    let mut random = SplitMix64::new(seed);
    let spacing = 1.6;
    let bodies = (0..GAS_SIDE.pow(3))
        .map(|i| {
            let cell = DVec3::new(
                (i % GAS_SIDE) as f64,
                (i / GAS_SIDE % GAS_SIDE) as f64,
                (i / GAS_SIDE / GAS_SIDE) as f64,
            );
            let jitter = random.in_ball(0.25, 3).as_dvec3();
            let velocity = random.in_ball(2.0, 3).as_dvec3();
            EventBody::new(spacing * cell + jitter + 0.8, velocity, 0.5, 1.0)
        })
        .collect();
    let side = (spacing * GAS_SIDE as f64) as f32;
    (bodies, PeriodicBox::cube(side).expect("a valid side"))
}

/// Two steps of the gas with `broad_phase`: every event, and the bodies at the end.
fn run_gas(broad_phase: &mut impl BroadPhase) -> (Vec<Event>, Vec<EventBody>) {
    let (mut bodies, periodic_box) = gas(4);
    let mut events = EventLoop::new().with_periodic_box(periodic_box);
    let mut seen = Vec::new();
    for _ in 0..2 {
        events
            .advance_with(
                &mut bodies,
                &[],
                0.1,
                &mut Elastic::perfect(),
                broad_phase,
                |event, _| seen.push(*event),
            )
            .expect("a valid gas");
    }
    assert!(seen.len() > 100, "the gas must collide: {}", seen.len());
    (seen, bodies)
}

/// The batch: pairs between lattice neighbours, a good share of them hits.
fn workload() -> Workload {
    Workload::random(&WorkloadConfig {
        bodies: 50_000,
        pairs: 200_000,
        seed: 5,
        ..Default::default()
    })
}

/// A digest of each part of the answers: FNV-1a (64 bits, which does not depend on the Rust
/// release as std's hasher may) of its `Debug` text, which prints every float exactly (-0.0
/// apart from 0.0).
#[derive(Debug, PartialEq)]
struct Answers(Vec<(String, u64)>);

/// FNV-1a over what is written to it.
struct Fnv(u64);

impl std::fmt::Write for Fnv {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        for byte in text.bytes() {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        Ok(())
    }
}

impl Answers {
    /// `value`'s digest, as part `name`.
    fn add(&mut self, name: &str, value: &impl std::fmt::Debug) {
        let mut hash = Fnv(0xcbf2_9ce4_8422_2325);
        write!(hash, "{value:?}").unwrap();
        self.0.push((name.to_string(), hash.0));
    }

    /// The digest of every part.
    fn digest(&self) -> String {
        let mut hash = Fnv(0xcbf2_9ce4_8422_2325);
        write!(hash, "{self:?}").unwrap();
        format!("{:016x}", hash.0)
    }
}

/// Every answer of every CPU path on the seeded inputs.
fn answers() -> Answers {
    let mut answers = Answers(Vec::new());
    let mut finder = cpu::ContactFinder::new();
    for (scene, n, dimensions, seed) in STEP_SCENES {
        let (bodies, options) = scene.bodies(n, dimensions, seed);
        let walls = if options.periodic_box.is_some() {
            Vec::new()
        } else {
            walls_of(&bodies).to_vec()
        };
        let name = format!("step {scene:?} {dimensions}D");
        step_answers(&mut answers, &name, &mut finder, &bodies, &walls, options);
        let separating = SweepOptions {
            stop_at_penetration: false,
            ..options
        };
        let name = format!("{name}, separating");
        step_answers(
            &mut answers,
            &name,
            &mut finder,
            &bodies,
            &walls,
            separating,
        );
    }
    let Workload { bodies, pairs } = workload();
    let options = SweepOptions::DEFAULT;
    let impacts = cpu::sweep_batch(&bodies, &pairs, options).expect("valid");
    let mut times = Vec::new();
    cpu::times_of_impact_into(&bodies, &pairs, options, &mut times).expect("valid");
    let oracle = reference::sweep_batch(&bodies, &pairs, options);
    let report = parity::compare(&bodies, &pairs, options, &impacts, Some(&oracle), CPU_BOUND);
    assert!(report.passed(), "{report}");
    answers.add("sweep_batch", &impacts);
    answers.add("times_of_impact_into", &times);
    answers.add("reference::sweep_batch", &oracle);
    // The name the digest has always read (the function is now `parity::compare`).
    answers.add("parity::compare_with_oracle", &report);
    let (events, gas) = run_gas(&mut Cells::new());
    answers.add("event loop with Cells: events", &events);
    answers.add("event loop with Cells: bodies", &gas);
    answers
}

/// Writes the digest of every answer to `SWEEPCAST_DIGEST` where it is set (CI compares the
/// digests of the builds with and without `parallel`).
#[test]
fn the_answers_digest_is_written_for_the_builds_to_compare() {
    let digest = answers().digest();
    println!("digest {digest} (parallel: {})", cfg!(feature = "parallel"));
    if let Ok(path) = std::env::var("SWEEPCAST_DIGEST") {
        std::fs::write(&path, format!("{digest}\n"))
            .unwrap_or_else(|error| panic!("{path}: {error}"));
    }
}

/// The same answers from rayon pools of one, three and seven threads as from the default
/// pool: the thread count decides how the work is cut, never what is computed.
#[cfg(feature = "parallel")]
#[test]
fn the_answers_do_not_depend_on_the_thread_count() {
    let default = answers();
    for threads in [1, 3, 7] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a pool");
        assert_eq!(
            pool.install(answers),
            default,
            "{threads} threads against the default pool of {}",
            rayon::current_num_threads()
        );
    }
}

/// The step's contacts are those of every pair swept one at a time by the single-pair twin
/// (no batch, no tree, no threads), in the documented order: by time, then by pair.
#[test]
fn the_step_gives_every_pairs_hit_in_order() {
    let mut finder = cpu::ContactFinder::new();
    for (scene, dimensions, seed) in [
        (Scene::Uniform, 3, 6),
        (Scene::Periodic, 3, 7),
        (Scene::Fast, 2, 8),
    ] {
        let (bodies, options) = scene.bodies(2500, dimensions, seed);
        let n = bodies.len() as u32;
        let mut expected: Vec<([u32; 2], Impact)> = (0..n)
            .flat_map(|a| (a + 1..n).map(move |b| [a, b]))
            .filter_map(|pair| {
                let [a, b] = pair.map(|i| bodies[i as usize]);
                Some((pair, cpu::sweep_sphere_sphere(&a, &b, options)?))
            })
            .collect();
        expected.sort_by_key(|(pair, impact)| (impact.time_of_impact.to_bits(), *pair));
        let found: Vec<([u32; 2], Impact)> = finder
            .find(&bodies, options)
            .expect("valid scene")
            .contacts()
            .iter()
            .map(|contact| (contact.pair().unwrap(), contact.impact))
            .collect();
        assert!(expected.len() > 100, "{scene:?}: the scene must collide");
        assert!(
            found == expected,
            "{scene:?}: {} contacts, {} expected",
            found.len(),
            expected.len()
        );
    }
}

/// The batches give each pair's single-pair answer: the twin's and the oracle's.
#[test]
fn the_batches_give_each_pairs_own_answer() {
    let Workload { bodies, pairs } = workload();
    let options = SweepOptions::DEFAULT;
    let impacts = cpu::sweep_batch(&bodies, &pairs, options).expect("valid");
    let oracle = reference::sweep_batch(&bodies, &pairs, options);
    for (k, &[i, j]) in pairs.iter().enumerate() {
        let (a, b) = (bodies[i as usize], bodies[j as usize]);
        assert_eq!(
            impacts[k],
            cpu::sweep_sphere_sphere(&a, &b, options),
            "pair {k}"
        );
        assert_eq!(
            oracle[k],
            reference::sweep_sphere_sphere(&Body::from(a), &Body::from(b), options),
            "pair {k}"
        );
    }
    assert!(impacts.iter().filter(|impact| impact.is_some()).count() > 10_000);
}

/// The event loop gives the same events with the grid (whose layers are searched in
/// parallel at this size) as with the CPU step as its broad phase.
#[test]
fn the_event_loop_gives_the_same_events_with_either_broad_phase() {
    let with_cells = run_gas(&mut Cells::new());
    let with_step = run_gas(&mut cpu::ContactFinder::new());
    assert!(
        with_cells == with_step,
        "{} events against {}",
        with_cells.0.len(),
        with_step.0.len()
    );
}
