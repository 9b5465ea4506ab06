//! Fuzzes input validation and the CPU sweep paths with arbitrary bytes:
//! `cargo +nightly fuzz run sweep` from the repository root.
//!
//! The bytes are read as one byte of body count, then per body seven f32 from raw
//! little-endian bits (centre x, y, z, radius, displacement x, y, z: NaN, infinities,
//! subnormals and huge values all occur), then the rest as pairs of raw little-endian u32
//! indices (out of range ones included).
//!
//! Invariants:
//! * bad input: `cpu::sweep_batch` and `cpu::times_of_impact_into` return the typed error that
//!   an independent scan expects (the first bad body, fields in the order centre, radius,
//!   displacement, before the first pair naming a missing body), and so do
//!   `validate_bodies` and `validate_pairs`;
//! * valid input: no panic; one answer per pair; every time finite and in [0, 1], an overlap at
//!   t = 0 exactly; the single-pair `cpu::sweep` equals the batch; every answer of the batch
//!   and of the fast batch passes `parity::check_pair` / `check_time` against the f64 oracle
//!   with `CPU_BOUND` (a contact touches at its time and not before, a miss never comes within
//!   the bound of touching); the fast batch equals the batch to the bit where both report a
//!   contact, and where they differ it reports the contact that the batch's reach escape
//!   dropped; the oracle's own times are finite and in [0, 1].
//!
//! Every f32 bit pattern reaches the library as it is: components beyond
//! [`MAX_MAGNITUDE`](sweepcast::MAX_MAGNITUDE) must be `Error::TooLarge`, and everything up to
//! it, subnormal to 4.25e37, must be answered within the bound (the sweep rescales each pair
//! by a power of two).

#![no_main]

use libfuzzer_sys::fuzz_target;

use glam::Vec3;
use sweepcast::SweepOptions;
use sweepcast::parity::{CPU_BOUND, check_pair, check_time};
use sweepcast::reference::{self, Body};
use sweepcast::{
    BodyField, Error, ImpactStatus, MAX_MAGNITUDE, MovingSphere, cpu, validate_bodies,
    validate_pairs,
};

/// Bytes per body: seven f32.
const BODY_BYTES: usize = 28;
/// Bytes per pair: two u32.
const PAIR_BYTES: usize = 8;

fuzz_target!(|data: &[u8]| check(data));

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
    PairIndexOutOfRange(usize, u32),
}

fn expected_error(bodies: &[MovingSphere], pairs: &[[u32; 2]]) -> Option<Expected> {
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
    let (bodies, pairs) = decode(data);
    let batch = cpu::sweep_batch(&bodies, &pairs, SweepOptions::DEFAULT);
    let mut times = Vec::new();
    let fast = cpu::times_of_impact_into(&bodies, &pairs, SweepOptions::DEFAULT, &mut times);
    let validated = validate_bodies(&bodies).and_then(|()| validate_pairs(&pairs, bodies.len()));
    let expected = expected_error(&bodies, &pairs);
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
            cpu::sweep_sphere_sphere(&a, &b, SweepOptions::DEFAULT),
            *impact,
            "{}",
            context()
        );

        let oracle = reference::sweep_sphere_sphere(&a64, &b64, &SweepOptions::DEFAULT);
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
            &SweepOptions::DEFAULT,
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
        let (backward_error, failure) =
            check_time(&a64, &b64, &SweepOptions::DEFAULT, fast, CPU_BOUND);
        assert_eq!(
            failure,
            None,
            "fast batch {fast:?}, oracle {oracle:?}, backward error {backward_error} eps, {}",
            context()
        );
    }
}
