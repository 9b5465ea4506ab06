//! Built only without the `gpu` feature (`cargo test --no-default-features`, with or without
//! `parallel`): its test exists in no other build, so CI, finding it in the output, knows that
//! the job ran without the GPU paths (and so without wgpu), and that the CPU step works there.

#[cfg(not(feature = "gpu"))]
#[test]
fn without_the_gpu_feature_the_cpu_step_finds_contacts() {
    use sweepcast::glam::Vec3;
    use sweepcast::{ImpactStatus, MovingSphere, SweepOptions, Wall, cpu};

    const { assert!(!cfg!(feature = "gpu")) };
    // Two unit spheres 10 apart closing at 8 a step touch at t = 1, at x = 5; a third, alone and
    // moving up, meets no body.
    let bodies = [
        MovingSphere::new(Vec3::ZERO, 1.0, Vec3::new(4.0, 0.0, 0.0)),
        MovingSphere::new(Vec3::new(10.0, 0.0, 0.0), 1.0, Vec3::new(-4.0, 0.0, 0.0)),
        MovingSphere::new(Vec3::new(0.0, 50.0, 0.0), 1.0, Vec3::new(0.0, 2.0, 0.0)),
    ];
    // The third reaches the plane y = 52 (facing -y) at t = 0.5.
    let walls = [Wall::plane(Vec3::new(0.0, 52.0, 0.0), Vec3::NEG_Y)];
    let mut finder = cpu::ContactFinder::new();
    let contacts = finder
        .find_with_walls(&bodies, &walls, SweepOptions::default())
        .expect("valid bodies");
    assert_eq!(contacts.contacts().len(), 1);
    let contact = contacts.contacts()[0];
    assert_eq!(contact.pair(), Some([0, 1]));
    assert_eq!(contact.impact.time_of_impact, 1.0);
    assert_eq!(contact.impact.status, ImpactStatus::Contact);
    assert_eq!(contact.impact.point, Vec3::new(5.0, 0.0, 0.0));
    assert_eq!(contact.impact.normal, Vec3::X);
    let walls = contacts.earliest_walls();
    assert_eq!(walls.len(), 3);
    assert!(walls[0].is_none() && walls[1].is_none());
    let wall = walls[2].expect("the third body reaches the wall");
    assert_eq!((wall.wall(), wall.impact.time_of_impact), (Some(0), 0.5));
}
