//! Fuzzes input validation and the CPU sweep paths with arbitrary bytes:
//! `cargo +nightly fuzz run sweep` from the repository root.
//!
//! The bytes are read as one byte of options (bit 0: the separating option,
//! `SweepOptions::event_driven`; bit 1: a periodic box, whose three periods follow as raw f32
//! bits), one byte of body count, then per body seven f32 from raw little-endian bits (centre
//! x, y, z, radius, displacement x, y, z: NaN, infinities, subnormals and huge values all
//! occur), then the rest as pairs of raw little-endian u32 indices (out of range ones
//! included). In a periodic box each finite centre component on a wrapping axis is first
//! brought into `[0, L)`, the domain the guarantees are stated for.
//!
//! Invariants:
//! * bad input: `PeriodicBox::new` rejects exactly the periods an independent scan rejects;
//!   `cpu::sweep_batch` and `cpu::times_of_impact_into` return the typed error that an
//!   independent scan expects (the first bad body, fields in the order centre, radius,
//!   displacement; then the first body too large for the box, axes in order; then the first
//!   pair naming a missing body), and so do `validate_bodies`, `validate_periodic_reach` and
//!   `validate_pairs`;
//! * valid input: no panic; one answer per pair; every time finite and in [0, 1], an overlap at
//!   t = 0 exactly; the single-pair `cpu::sweep` equals the batch; every answer of the batch
//!   and of the fast batch passes `parity::check_pair` / `check_time` against the f64 oracle
//!   with `CPU_BOUND` (a contact touches at its time and not before, a miss never comes within
//!   the bound of touching); the fast batch equals the batch to the bit where both report a
//!   contact, and where they differ it reports the contact that the batch's reach escape
//!   dropped; the oracle's own times are finite and in [0, 1].
//!
//! Every f32 bit pattern reaches the library as it is: components beyond
//! [`MAX_MAGNITUDE`](sweepcast::low_level::MAX_MAGNITUDE) must be `Error::TooLarge`, and everything up to
//! it, subnormal to 4.25e37, must be answered within the bound (the sweep rescales each pair
//! by a power of two).

#![no_main]

use libfuzzer_sys::fuzz_target;

use glam::Vec3;
use sweepcast::parity::{CPU_BOUND, check_pair, check_time};
use sweepcast::reference::{self, Body};
use sweepcast::{
    BodyField, Error, ImpactStatus, MovingSphere, PeriodicBox, SweepOptions, cpu,
    low_level::MAX_MAGNITUDE, low_level::validate_bodies, low_level::validate_pairs,
    low_level::validate_periodic_reach,
};

/// Bytes per body: seven f32.
const BODY_BYTES: usize = 28;
/// Bytes per pair: two u32.
const PAIR_BYTES: usize = 8;

fuzz_target!(|data: &[u8]| check(data));

/// The options byte, and the periods of the box when bit 1 asks for one; the rest.
fn decode_options(data: &[u8]) -> (SweepOptions, Option<[f32; 3]>, &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return (SweepOptions::DEFAULT, None, data);
    };
    let mut options = SweepOptions::DEFAULT;
    options.stop_at_penetration = flags & 1 == 0;
    if flags & 2 == 0 || rest.len() < 12 {
        return (options, None, rest);
    }
    let (period_bytes, rest) = rest.split_at(12);
    let period: [f32; 3] = std::array::from_fn(|axis| {
        let bytes = &period_bytes[4 * axis..4 * axis + 4];
        f32::from_bits(u32::from_le_bytes(bytes.try_into().expect("4 bytes")))
    });
    (options, Some(period), rest)
}

/// Whether `PeriodicBox::new` must accept `period`, decided independently: each period a
/// normal f32 from `f32::MIN_POSITIVE` to `MAX_MAGNITUDE`, or +infinity, and not all infinite.
fn valid_period(period: [f32; 3]) -> bool {
    let each = period.iter().all(|&p| {
        p == f32::INFINITY || (p.is_finite() && p >= f32::MIN_POSITIVE && p <= MAX_MAGNITUDE)
    });
    each && period.iter().any(|p| p.is_finite())
}

/// Brings each finite centre component on a wrapping axis into `[0, L)`.
fn into_box(bodies: &mut [MovingSphere], periodic_box: &PeriodicBox) {
    let period = periodic_box.period();
    for body in bodies {
        for axis in (0..3).filter(|&axis| periodic_box.period()[axis].is_finite()) {
            let c = body.center[axis];
            if c.is_finite() {
                let wrapped = c.rem_euclid(period[axis]);
                // rem_euclid may round up to the period itself.
                body.center[axis] = if wrapped < period[axis] { wrapped } else { 0.0 };
            }
        }
    }
}

fn decode(data: &[u8]) -> (Vec<MovingSphere>, Vec<[u32; 2]>) {
    let Some((&count, rest)) = data.split_first() else {
        return (Vec::new(), Vec::new());
    };
    let count = usize::from(count).min(rest.len() / BODY_BYTES);
    let (body_bytes, pair_bytes) = rest.split_at(count * BODY_BYTES);
    let word = |bytes: &[u8]| u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
    let bodies = body_bytes
        .chunks_exact(BODY_BYTES)
        .map(|body| {
            let f: Vec<f32> = body
                .chunks_exact(4)
                .map(|bytes| f32::from_bits(word(bytes)))
                .collect();
            MovingSphere::new(
                Vec3::new(f[0], f[1], f[2]),
                f[3],
                Vec3::new(f[4], f[5], f[6]),
            )
        })
        .collect();
    let pairs = pair_bytes
        .chunks_exact(PAIR_BYTES)
        .map(|pair| [word(&pair[..4]), word(&pair[4..])])
        .collect();
    (bodies, pairs)
}

/// The error validation must report, found independently of `sweepcast::validate`.
#[derive(Debug, PartialEq)]
enum Expected {
    NonFinite(usize, BodyField),
    TooLarge(usize, BodyField, u32),
    NegativeRadius(usize, u32),
    PeriodicBoxTooSmall(usize, usize),
    PairIndexOutOfRange(usize, u32),
}

fn expected_error(
    bodies: &[MovingSphere],
    pairs: &[[u32; 2]],
    options: &SweepOptions,
) -> Option<Expected> {
    for (k, body) in bodies.iter().enumerate() {
        let fields = [
            (BodyField::Center, body.center.to_array()),
            (BodyField::Radius, [body.radius; 3]),
            (BodyField::Displacement, body.displacement.to_array()),
        ];
        for (field, components) in fields {
            for value in components {
                if !value.is_finite() {
                    return Some(Expected::NonFinite(k, field));
                }
                if value.abs() > MAX_MAGNITUDE {
                    return Some(Expected::TooLarge(k, field, value.to_bits()));
                }
            }
            if field == BodyField::Radius && body.radius < 0.0 {
                return Some(Expected::NegativeRadius(k, body.radius.to_bits()));
            }
        }
    }
    if let Some(periodic_box) = &options.periodic_box {
        for (k, body) in bodies.iter().enumerate() {
            for axis in (0..3).filter(|&axis| periodic_box.period()[axis].is_finite()) {
                let reach = f64::from(body.radius) + f64::from(body.displacement[axis]).abs();
                if reach >= f64::from(periodic_box.period()[axis]) / 4.0 {
                    return Some(Expected::PeriodicBoxTooSmall(k, axis));
                }
            }
        }
    }
    pairs.iter().enumerate().find_map(|(k, pair)| {
        let missing = pair.iter().find(|&&index| index as usize >= bodies.len())?;
        Some(Expected::PairIndexOutOfRange(k, *missing))
    })
}

/// The error as an [`Expected`], panicking on any other kind or a wrong body count.
fn reported(error: &Error, body_count: usize) -> Expected {
    match *error {
        Error::NonFinite { body, field } => Expected::NonFinite(body, field),
        Error::TooLarge {
            body,
            field,
            value,
            limit,
        } => {
            assert_eq!(limit, MAX_MAGNITUDE, "{error}");
            Expected::TooLarge(body, field, value.to_bits())
        }
        Error::NegativeRadius { body, radius } => Expected::NegativeRadius(body, radius.to_bits()),
        Error::PeriodicBoxTooSmall { body, axis, .. } => Expected::PeriodicBoxTooSmall(body, axis),
        Error::PairIndexOutOfRange {
            pair,
            index,
            body_count: count,
        } => {
            assert_eq!(count, body_count, "{error}");
            Expected::PairIndexOutOfRange(pair, index)
        }
        _ => panic!("unexpected error kind: {error}"),
    }
}

fn check(data: &[u8]) {
    let (mut options, period, rest) = decode_options(data);
    let (mut bodies, pairs) = decode(rest);
    if let Some(period) = period {
        match PeriodicBox::new(Vec3::from_array(period)) {
            Ok(periodic_box) => {
                assert!(valid_period(period), "accepted {period:?}");
                into_box(&mut bodies, &periodic_box);
                options = options.with_periodic_box(periodic_box);
            }
            Err(error) => {
                assert!(!valid_period(period), "rejected {period:?}: {error}");
                assert!(matches!(error, Error::InvalidPeriodicBox { .. }), "{error}");
            }
        }
    }
    let batch = cpu::sweep_batch(&bodies, &pairs, options);
    let mut times = Vec::new();
    let fast = cpu::times_of_impact_into(&bodies, &pairs, options, &mut times);
    let validated = validate_bodies(&bodies)
        .and_then(|()| match &options.periodic_box {
            Some(periodic_box) => validate_periodic_reach(&bodies, periodic_box),
            None => Ok(()),
        })
        .and_then(|()| validate_pairs(&pairs, bodies.len()));
    let expected = expected_error(&bodies, &pairs, &options);
    let errors = [
        batch.as_ref().err(),
        fast.as_ref().err(),
        validated.as_ref().err(),
    ];
    for error in errors {
        assert_eq!(error.map(|e| reported(e, bodies.len())), expected);
    }
    let Ok(impacts) = batch else {
        assert!(
            times.is_empty(),
            "the fast batch leaves `times` empty on error"
        );
        return;
    };
    assert_eq!(impacts.len(), pairs.len());
    assert_eq!(times.len(), pairs.len());

    for (k, (&[i, j], (impact, fast))) in pairs.iter().zip(impacts.iter().zip(&times)).enumerate() {
        let (a, b) = (bodies[i as usize], bodies[j as usize]);
        let (a64, b64) = (Body::from(a), Body::from(b));
        let context = || format!("pair {k}: a = {a:?}, b = {b:?}");
        assert_eq!(
            cpu::sweep_sphere_sphere(&a, &b, options),
            *impact,
            "{}",
            context()
        );

        let oracle = reference::sweep_sphere_sphere(&a64, &b64, options);
        if let Some(r) = &oracle {
            assert!(
                (0.0..=1.0).contains(&r.time_of_impact),
                "oracle {r:?}, {}",
                context()
            );
        }

        let twin = impact.map(|i| (i.time_of_impact, i.status));
        let fast = fast.get();
        for (path, answer) in [("batch", twin), ("fast batch", fast)] {
            if let Some((t, status)) = answer {
                assert!((0.0..=1.0).contains(&t), "{path}: t = {t}, {}", context());
                if status == ImpactStatus::Overlapping {
                    assert_eq!(t, 0.0, "{path}: {}", context());
                }
            }
        }

        let bits = |answer: Option<(f32, ImpactStatus)>| answer.map(|(t, s)| (t.to_bits(), s));
        if bits(twin) != bits(fast) {
            assert!(
                twin.is_none() && matches!(fast, Some((_, ImpactStatus::Contact))),
                "batch {twin:?}, fast batch {fast:?}, {}",
                context()
            );
        }
        let verdict = check_pair(
            &a64,
            &b64,
            options,
            impact.as_ref(),
            oracle.as_ref(),
            CPU_BOUND,
        );
        assert_eq!(
            verdict.failure,
            None,
            "batch {impact:?}, oracle {oracle:?}, backward error {} eps, {}",
            verdict.backward_error,
            context()
        );
        let (backward_error, failure) = check_time(&a64, &b64, options, fast, CPU_BOUND);
        assert_eq!(
            failure,
            None,
            "fast batch {fast:?}, oracle {oracle:?}, backward error {backward_error} eps, {}",
            context()
        );
    }
}
