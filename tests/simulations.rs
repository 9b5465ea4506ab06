//! Short deterministic runs of the examples' simulations, with their own checks: the pool
//! break of `examples/pool_break.rs` (its table and rack in `examples/pool/mod.rs`) and the
//! projectiles of `examples/tunneling.rs` (in `examples/tunnel/mod.rs`).

#[path = "../examples/pool/mod.rs"]
mod pool;
#[path = "../examples/tunnel/mod.rs"]
mod tunnel;

use sweepcast::events::Event;

#[test]
fn the_pool_break_conserves_energy_and_never_overlaps() {
    let speed = 10.0;
    let result = pool::simulate(speed, 0.002, 1.0, 1.0 / 240.0).unwrap();
    // The cue ball meets the apex first, when its centre comes within two radii of the
    // apex's along its aim (offset 2 mm from the apex's centre).
    let (head, apex) = (pool::rack(speed, 0.002)[0], pool::rack(speed, 0.002)[1]);
    let aim = head.velocity.normalize();
    let offset = apex.position - head.position;
    let along = aim.dot(offset);
    let expected = (along
        - (along * along - offset.length_squared() + 4.0 * pool::RADIUS.powi(2)).sqrt())
        / speed;
    let (time, first) = result.events[0];
    assert!(
        matches!(first, Event::Pair { bodies: [0, 1], .. }),
        "{first:?}"
    );
    assert!((time - expected).abs() < 1e-12, "{time} against {expected}");
    // The whole rack is struck within a millisecond of it.
    let struck = result
        .events
        .iter()
        .take_while(|(t, _)| *t < expected + 1e-3)
        .count();
    assert!(struck >= 14, "{struck} impacts in the first millisecond");
    // Elastic and frictionless: the energy is conserved, pocketed balls' included.
    let drift = (result.energy_after - result.energy_before).abs() / result.energy_before;
    assert!(drift < 1e-9, "energy drift {drift:e}");
    assert!((result.energy_before - 0.5 * pool::MASS * speed * speed).abs() < 1e-12);
    // Touching at every impact, never overlapping beyond f64's rounding of the coordinates.
    assert!(
        result.smallest_gap > -1e-12,
        "overlap {:e}",
        result.smallest_gap
    );
    assert!(
        result
            .events
            .iter()
            .any(|(_, e)| matches!(e, Event::Wall { .. }))
    );
    // The same inputs give the same impacts, to the bit.
    let again = pool::simulate(speed, 0.002, 1.0, 1.0 / 240.0).unwrap();
    assert_eq!(again.events, result.events);
    assert_eq!(again.pocketed, result.pocketed);
}

#[test]
fn the_swept_test_stops_every_projectile_that_the_time_sliced_method_lets_through() {
    let (targets, projectiles) = (tunnel::targets(), tunnel::projectiles());
    let (mut first_hits, mut through) = (0, [0, 0]);
    for projectile in &projectiles {
        let (ours, oracle) = tunnel::swept(projectile, &targets);
        // sweepcast's f32 answer is the oracle's: the same first target, the same time.
        match (ours, oracle) {
            (None, None) => continue,
            (Some((t, a)), Some((s, b))) => {
                assert_eq!(a, b, "{projectile:?}");
                assert!(
                    (f64::from(t) - s).abs() <= 1e-5,
                    "{projectile:?}: {t} against {s}"
                );
            }
            _ => panic!("{projectile:?}: {ours:?} against the oracle's {oracle:?}"),
        }
        first_hits += 1;
        let (_, first) = ours.expect("a hit");
        for (k, slices) in [4, 150].into_iter().enumerate() {
            match tunnel::time_sliced(projectile, &targets, slices) {
                // Detected on the right target: never after the true time, by at most a
                // slice before it (it reports the slice's start).
                Some((t, target)) if target == first => {
                    let (truth, _) = ours.expect("a hit");
                    assert!(t <= truth && truth - t <= 1.0 / slices as f32 + 1e-6);
                }
                _ => through[k] += 1,
            }
        }
    }
    // The scene is made so that every method is tested: many first hits, all of them
    // missed with four slices and most with 150.
    assert_eq!(first_hits, 17);
    assert_eq!(through, [17, 13]);
}
