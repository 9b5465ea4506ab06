//! Short deterministic runs of the examples' simulations, with their own checks: the pool
//! break of `examples/pool_break.rs` (its table and rack in `examples/pool/mod.rs`), the
//! projectiles of `examples/tunneling.rs` (in `examples/tunnel/mod.rs`) and the hard-sphere
//! gas of `examples/gas.rs` (in `examples/hard_spheres/mod.rs`).

#[path = "../examples/hard_spheres/mod.rs"]
mod hard_spheres;
#[path = "../examples/pool/mod.rs"]
mod pool;
#[path = "../examples/tunnel/mod.rs"]
mod tunnel;

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
    assert!(first.pair() == Some([0, 1]), "{first:?}");
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
    assert!(result.events.iter().any(|(_, e)| e.wall().is_some()));
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

#[test]
fn a_small_hard_sphere_gas_conserves_energy_and_gives_kolafas_pressure() {
    use sweepcast::events::AllPairs;
    // 256 spheres at η = 0.3: 15 collisions a body to leave the lattice, then 60 measured,
    // with the CPU step as the broad phase (asked again whenever a body leaves its skin),
    // and with every pair and each body renewing its own skin.
    let run_with =
        |broad_phase: &mut dyn FnMut(&mut hard_spheres::Gas, f64) -> hard_spheres::Block| {
            let mut gas = hard_spheres::Gas::new(256, 0.3, 2);
            let rate = hard_spheres::enskog_rate(0.3, gas.density(), 1.0);
            broad_phase(&mut gas, 15.0 / rate);
            let kt = hard_spheres::temperature(&gas.bodies);
            let block = broad_phase(&mut gas, 60.0 / rate);
            (gas, block, kt)
        };
    let (on_cpu, block, kt) = run_with(&mut |gas, duration| {
        let mut events = gas.event_loop(false).unwrap();
        let step = gas.step();
        hard_spheres::run(
            gas,
            &mut events,
            &mut sweepcast::cpu::ContactFinder::new(),
            duration,
            step,
            |_, _| {},
        )
        .unwrap()
    });
    let (all, all_block, _) = run_with(&mut |gas, duration| {
        let mut events = gas.event_loop(true).unwrap();
        let step = gas.step();
        hard_spheres::run(gas, &mut events, &mut AllPairs, duration, step, |_, _| {}).unwrap()
    });
    // Neither the broad phase nor the skins change anything: the same collisions, the same
    // bodies, to the bit.
    assert_eq!(block.virial.collisions, all_block.virial.collisions);
    assert_eq!(on_cpu.bodies, all.bodies);
    // Elastic: kT (the kinetic energy) is conserved; 1 at the start by construction.
    let drift = (hard_spheres::temperature(&on_cpu.bodies) - 1.0).abs();
    assert!(drift < 1e-12, "energy drift {drift:e}");
    assert!((kt - 1.0).abs() < 1e-12);
    // No two bodies overlap (every pair, at the nearest image).
    let n = on_cpu.bodies.len() as u32;
    let pairs: Vec<[u32; 2]> = (0..n)
        .flat_map(|a| (a + 1..n).map(move |b| [a, b]))
        .collect();
    let gap = hard_spheres::smallest_gap(&on_cpu, &pairs);
    assert!(gap > -1e-9, "an overlap of {gap:e}");
    // The pressure and the collision rate: 7,700 collisions of 256 bodies carry a
    // statistical error of a few per cent, and 256 bodies a finite-size one of about one:
    // within 8% of Kolafa's equation and of Enskog's rate.
    let z = block.compressibility(256, kt);
    let expected = hard_spheres::kolafa(0.3);
    assert!(
        (z - expected).abs() < 0.08 * expected,
        "Z = {z}, Kolafa {expected}"
    );
    let rate = block.collision_rate(256);
    let enskog = hard_spheres::enskog_rate(0.3, on_cpu.density(), kt);
    assert!(
        (rate - enskog).abs() < 0.08 * enskog,
        "rate {rate}, Enskog {enskog}"
    );
    assert!(
        block.virial.collisions > 5_000,
        "{}",
        block.virial.collisions
    );
}
