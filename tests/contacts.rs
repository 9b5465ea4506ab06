//! The whole step on the CPU (`cpu::find_contacts`) against brute force: every pair swept,
//! through the f32 path (the contacts must be the same, exactly) and through the f64 oracle
//! (hit/miss disagreements only within the parity bound of a grazing or end-of-step contact,
//! counted and printed).

mod common;

use std::collections::HashMap;
use std::time::Duration;

use sweepcast::glam::Vec3;
use sweepcast::{Counted, Error, Impact, MovingSphere, SweepOptions, cpu, parity};
use testkit::{Scene, SplitMix64};

/// Every pair `a < b`, in order.
fn all_pairs(n: usize) -> impl Iterator<Item = [u32; 2]> {
    (0..n as u32).flat_map(move |a| (a + 1..n as u32).map(move |b| [a, b]))
}

/// Every pair's full answer through `World::sweep_into`: the hits, by pair.
fn brute_force(bodies: &[MovingSphere], options: SweepOptions) -> HashMap<[u32; 2], Impact> {
    let mut world = cpu::World::new();
    world.update(bodies, options).expect("valid bodies");
    let (mut pairs, mut impacts) = (Vec::new(), Vec::new());
    let mut hits = HashMap::new();
    for a in 0..bodies.len() as u32 {
        pairs.clear();
        pairs.extend((a + 1..bodies.len() as u32).map(|b| [a, b]));
        world
            .sweep_into(&pairs, &mut impacts)
            .expect("indices in range");
        hits.extend(
            pairs
                .iter()
                .zip(&impacts)
                .filter_map(|(&pair, impact)| Some((pair, (*impact)?))),
        );
    }
    hits
}

/// Checks `contacts` against the brute-force `hits`: the same pairs with the same impacts,
/// in the documented order, the periodic image the nearest one, the earliest per body and of
/// the step.
fn check_against(
    label: &str,
    bodies: &[MovingSphere],
    options: SweepOptions,
    contacts: &sweepcast::Contacts,
    hits: &HashMap<[u32; 2], Impact>,
) {
    let found = contacts.contacts();
    assert_eq!(found.len(), hits.len(), "{label}: contact count");
    for contact in found {
        assert_eq!(
            hits.get(&contact.pair().unwrap()),
            Some(&contact.impact),
            "{label}: {contact:?}"
        );
        let saturated = contact
            .image()
            .iter()
            .any(|&k| k == i32::MIN || k == i32::MAX);
        if let Some(periodic_box) = options.periodic_box
            && !saturated
        {
            let [a, b] = contact.pair().unwrap().map(|i| bodies[i as usize].center);
            let image = Vec3::from_array(contact.image().map(|k| k as f32));
            let offset = b - image * periodic_box.period() - a;
            for k in 0..3 {
                if periodic_box.period()[k].is_finite() {
                    assert!(
                        offset[k].abs() <= 0.5 * periodic_box.period()[k],
                        "{label}: {contact:?} is not the nearest image"
                    );
                }
            }
        } else if options.periodic_box.is_none() {
            assert_eq!(contact.image(), [0; 3]);
        }
    }
    let order = |c: &sweepcast::Contact| (c.impact.time_of_impact.to_bits(), c.pair().unwrap());
    assert!(
        found.windows(2).all(|w| order(&w[0]) < order(&w[1])),
        "{label}: contacts not in order"
    );
    // Earliest per body: the least (time, partner) over its contacts.
    let mut expected: Vec<Option<(u32, u32)>> = vec![None; bodies.len()];
    for (&[a, b], impact) in hits {
        let time = impact.time_of_impact.to_bits();
        for (body, partner) in [(a, b), (b, a)] {
            let slot = &mut expected[body as usize];
            if slot.is_none_or(|best| (time, partner) < best) {
                *slot = Some((time, partner));
            }
        }
    }
    let earliest = testkit::earliest_per_body(contacts, bodies.len());
    for (body, expected) in expected.iter().enumerate() {
        let got = contacts.earliest_of(body as u32).map(|c| {
            let partner = earliest[body].expect("set").1;
            assert!(
                c.pair().unwrap().contains(&partner) && c.pair().unwrap().contains(&(body as u32))
            );
            (c.impact.time_of_impact.to_bits(), partner)
        });
        assert_eq!(got, *expected, "{label}: earliest of body {body}");
    }
    let earliest = hits
        .iter()
        .map(|(&pair, impact)| (impact.time_of_impact.to_bits(), pair))
        .min();
    assert_eq!(
        contacts
            .contacts()
            .first()
            .map(|c| (c.impact.time_of_impact.to_bits(), c.pair().unwrap())),
        earliest,
        "{label}: earliest contact"
    );
}

/// Finds the contacts of `bodies` with `finder`, prints their counts and checks them against
/// every pair swept by the f32 path ([`check_against`]); the number of those hits.
fn check_world(
    finder: &mut cpu::ContactFinder,
    label: &str,
    bodies: &[MovingSphere],
    options: SweepOptions,
) -> usize {
    let hits = brute_force(bodies, options);
    let contacts = finder.find(bodies, options).expect("valid bodies");
    println!(
        "{label} ({} bodies): {} candidates, {} contacts",
        bodies.len(),
        contacts.candidates(),
        contacts.contacts().len()
    );
    check_against(label, bodies, options, contacts, &hits);
    hits.len()
}

/// Every scene, 2D and 3D, against every pair swept by the f32 path: exactly its contacts.
#[test]
fn contacts_are_those_of_all_pairs() {
    let mut finder = cpu::ContactFinder::new();
    for scene in Scene::ALL {
        for dimensions in [2, 3] {
            for (n, seed) in [(500, 1), (3000, 2)] {
                let (bodies, options) = scene.bodies(n, dimensions, seed);
                let label = format!("{scene:?} {dimensions}D");
                let hits = check_world(&mut finder, &label, &bodies, options);
                assert!(hits > 0, "{label}: the scene has contacts");
                // Under the separating option too.
                let separating = SweepOptions {
                    stop_at_penetration: false,
                    ..options
                };
                check_world(&mut finder, &label, &bodies, separating);
            }
        }
    }
}

/// 20,000 bodies on every scene, 2D and 3D: the 2 × 10⁸ pairs of each swept by brute force.
#[test]
fn contacts_of_twenty_thousand_bodies_are_those_of_all_pairs() {
    let mut finder = cpu::ContactFinder::new();
    for scene in Scene::ALL {
        for dimensions in [2, 3] {
            let (bodies, options) = scene.bodies(20_000, dimensions, 7);
            check_world(
                &mut finder,
                &format!("{scene:?} {dimensions}D"),
                &bodies,
                options,
            );
        }
    }
}

/// Against the f64 oracle on every pair: hit/miss disagreements only within the parity
/// bound, counted and printed.
#[test]
fn contacts_agree_with_the_oracle_on_all_pairs() {
    for scene in Scene::ALL {
        for dimensions in [2, 3] {
            let (bodies, options) = scene.bodies(1500, dimensions, 11);
            let contacts = cpu::find_contacts(&bodies, options).expect("valid bodies");
            let pairs: Vec<[u32; 2]> = all_pairs(bodies.len()).collect();
            let index: HashMap<[u32; 2], Impact> = contacts
                .contacts()
                .iter()
                .map(|c| (c.pair().unwrap(), c.impact))
                .collect();
            let answers: Vec<Option<Impact>> =
                pairs.iter().map(|pair| index.get(pair).copied()).collect();
            let report =
                parity::compare(&bodies, &pairs, options, &answers, None, parity::CPU_BOUND);
            println!("{scene:?} {dimensions}D: {report}");
            assert!(report.passed(), "{scene:?} {dimensions}D: {report}");
        }
    }
}

/// The degenerate worlds: empty, one body, every body identical, every body in one point.
#[test]
fn degenerate_worlds() {
    let none: [MovingSphere; 0] = [];
    let contacts = cpu::find_contacts(&none, SweepOptions::default()).expect("empty is valid");
    assert!(contacts.contacts().is_empty() && contacts.earliest_of(0).is_none());

    let one = [MovingSphere::new(Vec3::ONE, 1.0, Vec3::X)];
    let contacts = cpu::find_contacts(&one, SweepOptions::default()).expect("valid");
    assert!(contacts.contacts().is_empty());
    assert_eq!(testkit::earliest_per_body(&contacts, 1), [None]);

    // 300 identical bodies: every pair overlaps at t = 0.
    let n = 300;
    let identical = vec![MovingSphere::new(Vec3::new(1.0, 2.0, 3.0), 0.5, Vec3::X); n];
    let contacts = cpu::find_contacts(&identical, SweepOptions::default()).expect("valid");
    assert_eq!(contacts.contacts().len(), n * (n - 1) / 2);
    assert!(
        contacts
            .contacts()
            .iter()
            .all(|c| c.impact.is_overlapping())
    );
    assert_eq!(
        contacts.contacts().first().map(|c| c.pair().unwrap()),
        Some([0, 1])
    );
    let earliest = testkit::earliest_per_body(&contacts, n);
    for (body, earliest) in earliest.iter().enumerate() {
        let partner = earliest.map(|e| e.1);
        assert_eq!(partner, Some(if body == 0 { 1 } else { 0 }));
    }

    // Points (radius 0) in one point moving apart in different directions: every pair
    // touches at t = 0; with the separating option none does.
    let points: Vec<MovingSphere> = (0..200)
        .map(|i| {
            let angle = i as f32 * 0.1;
            MovingSphere::new(Vec3::ZERO, 0.0, Vec3::new(angle.cos(), angle.sin(), 0.0))
        })
        .collect();
    let contacts = cpu::find_contacts(&points, SweepOptions::default()).expect("valid");
    assert_eq!(contacts.contacts().len(), 200 * 199 / 2);
    let contacts = cpu::find_contacts(&points, SweepOptions::event_driven()).expect("valid");
    assert_eq!(
        contacts.contacts().len(),
        brute_force(&points, SweepOptions::event_driven()).len()
    );
}

/// Bad bodies give the batch paths' typed errors, and the finder works again afterwards.
#[test]
fn bad_bodies_are_typed_errors() {
    let mut finder = cpu::ContactFinder::new();
    let good = [
        MovingSphere::new(Vec3::ZERO, 1.0, Vec3::X),
        MovingSphere::new(Vec3::new(1.0, 0.0, 0.0), 1.0, Vec3::ZERO),
    ];
    let contacts_of_good = |finder: &mut cpu::ContactFinder| {
        let contacts = finder.find(&good, SweepOptions::default()).expect("valid");
        contacts.contacts().len()
    };
    assert_eq!(contacts_of_good(&mut finder), 1);
    let mut bad = good;
    bad[1].radius = -1.0;
    assert!(matches!(
        finder.find(&bad, SweepOptions::default()),
        Err(Error::NegativeRadius { body: 1, .. })
    ));
    bad[1].radius = 1.0;
    bad[1].center.y = f32::NAN;
    assert!(matches!(
        finder.find(&bad, SweepOptions::default()),
        Err(Error::NonFinite { body: 1, .. })
    ));
    let small_box = SweepOptions::default()
        .with_periodic_box(sweepcast::PeriodicBox::cube(4.0).expect("valid"));
    assert!(matches!(
        finder.find(&good, small_box),
        Err(Error::PeriodicBoxTooSmall { .. })
    ));
    assert_eq!(contacts_of_good(&mut finder), 1);
}

/// `n` unit spheres at random in a cube 0.1 wide: every pair overlaps, n(n - 1)/2 contacts.
fn pile(n: usize, seed: u64) -> Vec<MovingSphere> {
    let mut random = SplitMix64::new(seed);
    (0..n)
        .map(|_| {
            let mut coordinate = || 0.1 * random.unit() as f32;
            let center = Vec3::new(coordinate(), coordinate(), coordinate());
            MovingSphere::new(center, 1.0, Vec3::ZERO)
        })
        .collect()
}

/// The isolation that the explosion's test relies on tells a case that passes from one that
/// fails, aborts, hangs past its timeout or outgrows its address space: only the first
/// passes, and each says how it ended.
#[test]
fn isolation_tells_a_pass_from_an_abort_a_hang_and_exhausted_memory() {
    const TEST: &str = "isolation_tells_a_pass_from_an_abort_a_hang_and_exhausted_memory";
    if let Some(case) = common::isolated_case() {
        match case.as_str() {
            "pass" => {}
            "fail" => panic!("a failing case"),
            "abort" => std::process::abort(),
            "hang" => loop {
                std::thread::sleep(Duration::from_secs(1));
            },
            "memory" => {
                let pile = vec![1u8; 1 << 30];
                println!("{}", pile[pile.len() / 2]);
            }
            other => panic!("no case {other}"),
        }
        return;
    }
    let run = |case, timeout| common::run_isolated(TEST, case, timeout, 256 << 20);
    let long = Duration::from_secs(120);
    let pass = run("pass", long);
    assert!(pass.passed(), "{pass}");
    let fail = run("fail", long);
    assert!(
        !fail.passed() && fail.code == Some(101) && !fail.timed_out,
        "{fail}"
    );
    assert!(fail.output.contains("a failing case"), "{fail}");
    let abort = run("abort", long);
    assert!(!abort.passed() && abort.signal == Some(6), "{abort}");
    let hang = run("hang", Duration::from_secs(2));
    assert!(
        !hang.passed() && hang.timed_out && hang.signal == Some(9),
        "{hang}"
    );
    let memory = run("memory", long);
    assert!(!memory.passed() && memory.signal == Some(6), "{memory}");
    assert!(memory.output.contains("memory allocation"), "{memory}");
    // A name that matches no test runs nothing, and does not pass.
    let none = common::run_isolated("no_such_test", "pass", long, 256 << 20);
    assert!(none.code == Some(0) && !none.passed(), "{none}");
}

/// An output explosion is a typed error, not an abort: 30,000 unit spheres in a cube 0.1
/// wide make 449,985,000 contacts (12.6 GB of candidates as the limit counts them), and
/// `find_contacts` stops soon after its default limit of 2 GiB with a count it found, not an
/// extrapolation. Before the limit it asked for 4 GiB at once and aborted the process; the
/// case runs in a child process under 4 GiB of address space and a timeout.
#[test]
fn an_output_explosion_is_a_typed_error_not_an_abort() {
    const TEST: &str = "an_output_explosion_is_a_typed_error_not_an_abort";
    if common::isolated_case().is_some() {
        let n = 30_000;
        let all_pairs = n * (n - 1) / 2;
        match cpu::find_contacts(&pile(n, 7), SweepOptions::default()) {
            Err(
                error @ Error::OutputLimit {
                    what,
                    at_least,
                    at_least_bytes,
                    limit_bytes,
                },
            ) => {
                println!("{error}");
                assert_eq!(limit_bytes, cpu::ContactFinder::DEFAULT_MAX_OUTPUT_BYTES);
                assert!(at_least <= all_pairs, "{at_least} of {all_pairs}");
                assert!(at_least_bytes > limit_bytes);
                // Soon after the limit: the candidates found (the memory taken; the hits of
                // tasks that finished count in `at_least_bytes` too) are well short of the
                // whole explosion. Which passed the limit depends on how the tasks ran: on
                // several threads the candidates, found side by side; on one (without the
                // `parallel` feature) a task's contacts, its narrow phase done before the
                // next task looks for candidates.
                let found = match what {
                    Counted::Candidates => {
                        at_least * cpu::ContactFinder::OUTPUT_BYTES_PER_CANDIDATE
                    }
                    Counted::Contacts => {
                        at_least_bytes - at_least * cpu::ContactFinder::OUTPUT_BYTES_PER_CONTACT
                    }
                    other => panic!("the limit counted {other:?}"),
                };
                assert!(found < 2 * limit_bytes, "{found} bytes of candidates");
            }
            other => panic!("not the output limit: {:?}", other.map(|c| c.candidates())),
        }
        return;
    }
    let outcome = common::run_isolated(TEST, "pile", Duration::from_secs(300), 4 << 30);
    assert!(outcome.passed(), "{outcome}");
}

/// A finder's own limit, any value (0 counts as 1, `usize::MAX` as `MAX_OUTPUT_BYTES`): the
/// candidates or the contacts that pass it are a typed error reporting counts the step
/// found, the queries stop within a report's worth of pairs a thread, and the finder's next
/// step works.
#[test]
fn a_finder_stops_at_its_limit_and_stays_usable() {
    let good = [
        MovingSphere::new(Vec3::ZERO, 1.0, Vec3::X),
        MovingSphere::new(Vec3::new(1.0, 0.0, 0.0), 1.0, Vec3::ZERO),
    ];
    let still_works = |finder: &mut cpu::ContactFinder| {
        let contacts = finder.find(&good, SweepOptions::default()).expect("valid");
        assert_eq!(contacts.contacts().len(), 1);
    };
    let identical = |n| vec![MovingSphere::new(Vec3::ONE, 1.0, Vec3::ZERO); n];
    let per_candidate = cpu::ContactFinder::OUTPUT_BYTES_PER_CANDIDATE;
    let per_contact = cpu::ContactFinder::OUTPUT_BYTES_PER_CONTACT;

    // 2,000 bodies in one place: 1,999,000 candidates, all contacts, 56 MB of candidates.
    // A query reports its pairs every 16,384 (and a packet's 16 more at most); each
    // thread may append one report's worth after the count passed the limit.
    let limit = 64 << 10;
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut finder = cpu::ContactFinder::new().with_max_output_bytes(limit);
    assert_eq!(finder.max_output_bytes(), limit);
    match finder.find(&identical(2_000), SweepOptions::default()) {
        Err(Error::OutputLimit {
            what: Counted::Candidates,
            at_least,
            at_least_bytes,
            limit_bytes,
        }) => {
            assert_eq!(limit_bytes, limit);
            assert!(at_least_bytes > limit && at_least_bytes >= at_least * per_candidate);
            assert!(
                at_least <= limit / per_candidate + 2 * threads * (16_384 + 16),
                "{at_least} candidates found past a limit of {limit} bytes on {threads} threads"
            );
        }
        other => panic!("{:?}", other.map(|c| c.candidates())),
    }
    still_works(&mut finder);

    // 100 bodies in one place: 4,950 candidates fit a limit of 300,000 bytes, their
    // contacts do not.
    let candidates = 100 * 99 / 2;
    let limit = 300_000;
    assert!(candidates * per_candidate <= limit);
    let mut finder = cpu::ContactFinder::new().with_max_output_bytes(limit);
    match finder.find(&identical(100), SweepOptions::default()) {
        Err(Error::OutputLimit {
            what: Counted::Contacts,
            at_least,
            at_least_bytes,
            limit_bytes,
        }) => {
            assert_eq!(limit_bytes, limit);
            assert!(at_least <= candidates);
            assert!(at_least_bytes > limit);
            assert!(at_least_bytes <= candidates * (per_candidate + per_contact));
        }
        other => panic!("{:?}", other.map(|c| c.candidates())),
    }
    still_works(&mut finder);

    // The least limit: one candidate passes it; the most: a pile fits.
    let mut least = cpu::ContactFinder::new().with_max_output_bytes(0);
    assert_eq!(least.max_output_bytes(), 1);
    assert!(matches!(
        least.find(&good, SweepOptions::default()),
        Err(Error::OutputLimit { .. })
    ));
    let mut most = cpu::ContactFinder::new().with_max_output_bytes(usize::MAX);
    assert_eq!(
        most.max_output_bytes(),
        cpu::ContactFinder::MAX_OUTPUT_BYTES
    );
    let contacts = most
        .find(&identical(1_000), SweepOptions::default())
        .expect("within the most");
    assert_eq!(contacts.contacts().len(), 499_500);
    still_works(&mut most);
}

/// The same bodies give the same contacts, in the same order, on every run.
#[test]
fn contacts_are_deterministic() {
    let (bodies, options) = Scene::Clustered.bodies(4000, 3, 5);
    let first = cpu::find_contacts(&bodies, options).expect("valid");
    let mut finder = cpu::ContactFinder::new();
    for _ in 0..3 {
        let again = finder.find(&bodies, options).expect("valid");
        assert_eq!(again.contacts(), first.contacts());
        assert_eq!(
            testkit::earliest_per_body(again, bodies.len()),
            testkit::earliest_per_body(&first, bodies.len())
        );
    }
}

/// The adversarial and extreme sets (grazing and end-of-step contacts at scales from
/// subnormal to near the largest magnitude, worlds far from the origin) as whole worlds, and
/// the adversarial set in periodic boxes of side 10⁶ and 10⁷ (pairs across the faces, centres
/// as given and wrapped): the widened boxes leave out no pair that the f32 sweep calls a hit.
#[test]
fn adversarial_and_extreme_worlds_lose_no_contact() {
    let mut finder = cpu::ContactFinder::new();
    let adversarial = testkit::Workload::adversarial(3).bodies;
    let mut worlds = vec![
        (
            "adversarial".to_string(),
            adversarial.clone(),
            SweepOptions::default(),
        ),
        (
            "extreme".to_string(),
            testkit::Workload::extreme(3).bodies,
            SweepOptions::default(),
        ),
    ];
    worlds.extend(testkit::in_large_boxes("adversarial", &adversarial));
    for (label, bodies, options) in worlds {
        for options in [
            options,
            SweepOptions {
                stop_at_penetration: false,
                ..options
            },
        ] {
            check_world(&mut finder, &label, &bodies, options);
        }
    }
}

/// Two bodies at the periodic box's reach limit whose widened boxes meet through two images
/// (directly and across the boundary) give one contact, not two.
#[test]
fn a_pair_met_through_two_images_is_one_contact() {
    let options = SweepOptions::default()
        .with_periodic_box(sweepcast::PeriodicBox::cube(10.0).expect("valid"));
    // Radius 2.49999 against the reach rule's 2.5; 4.99996 apart, overlapping by 2e-5, and
    // 6e-5 apart across the boundary, within the two boxes' margins (2⁻¹⁶ of each radius,
    // 3.8e-5).
    let bodies = [
        MovingSphere::new(Vec3::new(2.0, 5.0, 5.0), 2.49999, Vec3::ZERO),
        MovingSphere::new(Vec3::new(6.99996, 5.0, 5.0), 2.49999, Vec3::ZERO),
    ];
    let contacts = cpu::find_contacts(&bodies, options).expect("valid bodies");
    assert_eq!(contacts.candidates(), 2, "found through both images");
    assert_eq!(contacts.contacts().len(), 1);
    assert!(contacts.contacts()[0].impact.is_overlapping());
    assert_eq!(contacts.contacts()[0].image(), [0, 0, 0]);
}

/// Centres far outside a periodic box: within 2²⁴ periods of the origin the contacts are
/// those of every pair (the broad phase wraps in f64, exactly); beyond, where `c / L` may
/// overflow f32 and the sweep has no answer, a typed error.
#[test]
fn centres_far_outside_a_periodic_box() {
    let options = |side: f32| {
        SweepOptions::default()
            .with_periodic_box(sweepcast::PeriodicBox::cube(side).expect("valid"))
    };
    let far = [
        MovingSphere::new(
            Vec3::new(1e6 + 0.3, 0.2, 0.0),
            0.25,
            Vec3::new(0.5, 0.0, 0.0),
        ),
        MovingSphere::new(Vec3::new(-3e6 + 0.9, 0.3, 0.0), 0.25, Vec3::ZERO),
        MovingSphere::new(Vec3::new(7e6 + 0.5, -4e6 + 0.2, 0.0), 0.25, Vec3::ZERO),
    ];
    let hits = brute_force(&far, options(4.0));
    assert!(!hits.is_empty(), "the sweep finds contacts across images");
    let contacts = cpu::find_contacts(&far, options(4.0)).expect("within 2^24 periods");
    check_against("far outside", &far, options(4.0), &contacts, &hits);

    let beyond = [
        MovingSphere::new(Vec3::new(0.5, 0.0, 0.0), 0.0, Vec3::ZERO),
        MovingSphere::new(Vec3::new(2f32.powi(121), 0.0, 0.0), 0.0, Vec3::ZERO),
    ];
    assert!(matches!(
        cpu::find_contacts(&beyond, options(2f32.powi(-7))),
        Err(Error::OutsidePeriodicBox {
            body: 1,
            axis: 0,
            ..
        })
    ));
}

/// Issue 23's sparse scene (20,000 bodies of radius 0.5 in a cube of 54) in periodic boxes
/// of side 10⁶ and 10⁷, deep inside one, across their corner and 10⁶ from the origin: at
/// most 1.5 times the candidates of the same scene near the origin without a box (once 114
/// million, or all 2 × 10⁸ pairs). At 5,000 bodies (every pair swept by brute force in each),
/// exactly the contacts of every pair.
#[test]
fn a_large_box_or_a_far_world_keeps_the_candidates_of_open_space() {
    let mut finder = cpu::ContactFinder::new();
    for world in testkit::sparse_cube_far_away(20_000, 23) {
        world.assert_few_candidates("CPU", |bodies, options| {
            let contacts = finder.find(bodies, options).expect("valid bodies");
            contacts.candidates()
        });
    }
    for world in testkit::sparse_cube_far_away(5_000, 23) {
        check_world(&mut finder, &world.label, &world.bodies, world.options);
    }
}
