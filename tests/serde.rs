//! The `serde` feature: every value type a user keeps or sends (bodies, walls, options, the
//! answers of the sweeps, the steps and the event loop) goes to JSON and back unchanged, to the
//! bit; a periodic box is read back through its validation.

use sweepcast::cpu;
use sweepcast::events::{Elastic, EventBody, EventLoop};
use sweepcast::glam::{DVec3, Vec2, Vec3};
use sweepcast::{
    Circle, CollisionGroups, Contact, EarliestImpact, Error, Impact, ImpactStatus, MovingCircle,
    MovingSphere, Partner, PeriodicBox, Sphere, SweepOptions, Wall,
};

/// `value` to JSON and back.
fn round_trip<T>(value: &T) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let json = serde_json::to_string(value).expect("serializes");
    serde_json::from_str(&json).unwrap_or_else(|error| panic!("{json} reads back: {error}"))
}

/// `values` survive the round trip, compared with `==` and through their `Debug` text, which
/// prints every f32 and f64 exactly (`==` alone would take -0.0 for 0.0).
fn assert_round_trips<T>(values: &[T])
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    assert!(!values.is_empty());
    for value in values {
        let back = round_trip(value);
        assert_eq!(&back, value);
        assert_eq!(format!("{back:?}"), format!("{value:?}"));
    }
}

/// Sixteen spheres on a line, each moving onto the next, so that the step has contacts, and
/// a box whose walls some of them reach.
fn scene() -> (Vec<MovingSphere>, [Wall; 6]) {
    let bodies = (0..16)
        .map(|i| {
            let i = i as f32;
            MovingSphere::new(
                Vec3::new(3.0 * i + 0.1, 0.5 * i, -0.25 * i),
                1.0 + 0.125 * i,
                Vec3::new(1.5 - 0.2 * i, 0.3, -0.1 * i),
            )
        })
        .collect();
    (
        bodies,
        Wall::box_interior(Vec3::splat(-2.0), Vec3::new(40.0, 8.0, 2.0)),
    )
}

#[test]
fn bodies_and_walls_round_trip() {
    let (bodies, walls) = scene();
    assert_round_trips(&bodies);
    assert_round_trips(&walls);
    assert_round_trips(&[
        Wall::segment(Vec2::new(0.5, -1.0), Vec2::new(2.0, 3.0)),
        Wall::segment_3d(Vec3::new(1.0, 2.0, 3.0), Vec3::new(-1.0, 0.0, 1e-30)),
    ]);
    assert_round_trips(&[
        Circle::new(Vec2::new(1.0, -2.0), 0.5),
        Circle::new(Vec2::new(-0.0, 1e-40), 3.0),
    ]);
    assert_round_trips(&[Sphere::new(Vec3::new(1.0, -2.0, 3.5), 0.25)]);
    assert_round_trips(&[MovingCircle::new(
        Vec2::new(0.1, 0.2),
        0.3,
        Vec2::new(-0.4, f32::MAX / 8.0),
    )]);
    assert_round_trips(&[EventBody::new(
        DVec3::new(0.1, 0.2, 0.3),
        DVec3::new(1.0 / 3.0, -2.0, 1e-300),
        0.5,
        f64::MAX,
    )]);
}

#[test]
fn options_and_periodic_boxes_round_trip_and_are_validated_on_reading() {
    let cube = PeriodicBox::cube(80.599_594).unwrap();
    let rectangle = PeriodicBox::rectangle(Vec2::new(10.0, 2.5)).unwrap();
    // A box made in f64 keeps its exact period (it was written in f32 and came back as
    // another box, whose event loop wrapped by another period).
    let exact = PeriodicBox::new_f64(DVec3::splat(80.599_597_700_823_48)).unwrap();
    assert_round_trips(&[cube, rectangle, exact]);
    let back: PeriodicBox = serde_json::from_str(&serde_json::to_string(&exact).unwrap()).unwrap();
    assert_eq!(back.period_f64(), exact.period_f64());
    assert_round_trips(&[
        SweepOptions::DEFAULT,
        SweepOptions::event_driven(),
        SweepOptions::event_driven().with_periodic_box(rectangle),
    ]);
    // An axis that does not wrap is written as null (JSON has no infinity).
    assert_eq!(
        serde_json::to_string(&rectangle).unwrap(),
        r#"{"period":[10.0,2.5,null]}"#
    );
    // What PeriodicBox::new rejects is an error of the reader, with PeriodicBox::new's message.
    for (period, axis) in [
        ([Some(10.0), Some(-1.0), None], 1),
        ([Some(0.0), Some(1.0), Some(1.0)], 0),
        ([None, None, None], 0),
    ] {
        let json = serde_json::json!({ "period": period }).to_string();
        let error = serde_json::from_str::<PeriodicBox>(&json).expect_err(&json);
        let new = PeriodicBox::new(Vec3::from_array(period.map(|p| p.unwrap_or(f32::INFINITY))));
        match new {
            Err(expected @ Error::InvalidPeriodicBox { axis: a, .. }) => {
                assert_eq!(a, axis, "{json}");
                assert!(
                    error.to_string().contains(&expected.to_string()),
                    "{json}: {error}"
                );
            }
            other => panic!("{json}: expected InvalidPeriodicBox, got {other:?}"),
        }
    }
}

#[test]
fn the_answers_of_the_sweeps_and_the_step_round_trip() {
    let (bodies, walls) = scene();
    let options = SweepOptions::DEFAULT;
    let pairs: Vec<[u32; 2]> = (0..15).map(|i| [i, i + 1]).collect();
    let impacts: Vec<Impact> = cpu::sweep_batch(&bodies, &pairs, options)
        .unwrap()
        .into_iter()
        .flatten()
        .collect();
    assert!(impacts.len() > 4, "the scene must collide: {impacts:?}");
    assert_round_trips(&impacts);
    assert_round_trips(&[ImpactStatus::Contact, ImpactStatus::Overlapping]);

    let mut finder = cpu::ContactFinder::new();
    let found = finder.find_with_walls(&bodies, &walls, options).unwrap();
    let contacts: Vec<Contact> = found.contacts().to_vec();
    let wall_contacts: Vec<Contact> = found.earliest_walls().iter().flatten().copied().collect();
    let earliest_impacts: Vec<EarliestImpact> =
        found.earliest_impacts().into_iter().flatten().collect();
    assert!(!contacts.is_empty() && !wall_contacts.is_empty());
    assert_round_trips(&contacts);
    assert_round_trips(&wall_contacts);
    assert_round_trips(&earliest_impacts);
    assert_round_trips(&[
        Partner::Body {
            index: 7,
            image: [-1, 0, i32::MAX],
        },
        Partner::Wall { index: 3 },
    ]);
}

#[test]
fn the_events_of_a_step_round_trip() {
    let mut bodies: Vec<EventBody> = (0..6)
        .map(|i| {
            let x = 2.5 * f64::from(i);
            EventBody::new(
                DVec3::new(x, 0.1 * x, 0.0),
                DVec3::new(1.0 - 0.4 * f64::from(i), 0.2, 0.0),
                0.5,
                1.0 + f64::from(i),
            )
            .with_groups(CollisionGroups::new(0xffff, 0xffff ^ (1 << i)))
        })
        .collect();
    let walls = Wall::box_interior(DVec3::splat(-3.0).as_vec3(), Vec3::new(16.0, 3.0, 3.0));
    let mut seen = Vec::new();
    EventLoop::new()
        .advance(
            &mut bodies,
            &walls,
            10.0,
            &mut Elastic::perfect(),
            |event, _| {
                seen.push(*event);
            },
        )
        .unwrap();
    let kinds = |pair: bool| {
        seen.iter()
            .filter(|event| event.pair().is_some() == pair)
            .count()
    };
    assert!(kinds(true) > 0 && kinds(false) > 0, "{seen:?}");
    assert_round_trips(&seen);
    assert_round_trips(&bodies);
}
