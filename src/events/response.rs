//! What happens at an impact: the caller's [`Response`], and [`Elastic`], the impulse of
//! two rigid spheres with a restitution.

use glam::DVec3;

use super::body::EventBody;
use crate::error::Error;

/// What happens at an impact: the velocities (or anything else of the bodies) after it. The
/// loop calls it with the bodies touching, at the impact's time.
///
/// Used by: `examples/gas.rs` (the collision virial, in `examples/hard_spheres/mod.rs`),
/// `docs/guide.md` ("Simulations: the event loop").
pub trait Response {
    /// Two bodies touch; `normal` points from `a`'s centre towards `b`'s.
    ///
    /// Used by: `docs/architecture.md` ("The paths"), `examples/gas.rs` (the collision virial, in
    /// `examples/hard_spheres/mod.rs`).
    fn pair(&mut self, a: &mut EventBody, b: &mut EventBody, normal: DVec3);
    /// A body touches a wall; `normal` points from its centre towards the wall.
    ///
    /// Used by: `docs/architecture.md` ("The paths"), `examples/gas.rs` (the collision virial, in
    /// `examples/hard_spheres/mod.rs`).
    fn wall(&mut self, body: &mut EventBody, normal: DVec3);
}

/// The impulse of smooth rigid spheres: along the normal, the approach speed comes back
/// times `restitution` (1: elastic, energy conserved; 0: perfectly inelastic), momentum
/// conserved; walls are of infinite mass. Bodies that are not approaching are left alone.
/// Two bodies of infinite mass, or a moving body of infinite mass against a wall, are left
/// approaching: the loop then returns [`Error::UnresolvedImpact`].
///
/// Used by: the README's quick start (the event loop), `examples/pool_break.rs`,
/// `python/src/events.rs`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Elastic {
    restitution: f64,
}

impl Elastic {
    /// Restitution 1: energy is conserved.
    ///
    /// Used by: the README's quick start (the event loop), `examples/pool_break.rs` (in
    /// `examples/pool/mod.rs`), `examples/gas.rs` (in `examples/hard_spheres/mod.rs`).
    #[must_use]
    pub const fn perfect() -> Self {
        Self { restitution: 1.0 }
    }

    /// The coefficient of restitution `restitution`, from 0 to 1.
    ///
    /// Used by: `docs/guide.md` ("Simulations: the event loop"), `examples/arrays.rs`,
    /// `python/src/events.rs` (the loop's `restitution`).
    ///
    /// # Errors
    /// [`Error::InvalidRestitution`] for NaN or a value outside 0 to 1 (above 1 every impact
    /// would add energy, and a walled body would speed up without bound; below 0 the bodies
    /// would go on approaching).
    pub fn new(restitution: f64) -> Result<Self, Error> {
        if (0.0..=1.0).contains(&restitution) {
            Ok(Self { restitution })
        } else {
            Err(Error::InvalidRestitution { restitution })
        }
    }
}

impl Response for Elastic {
    fn pair(&mut self, a: &mut EventBody, b: &mut EventBody, normal: DVec3) {
        let approach = (a.velocity - b.velocity).dot(normal);
        let inverse_masses = a.mass.recip() + b.mass.recip();
        if approach <= 0.0 || inverse_masses == 0.0 {
            return;
        }
        let impulse = (1.0 + self.restitution) * approach / inverse_masses;
        a.velocity -= normal * (impulse / a.mass);
        b.velocity += normal * (impulse / b.mass);
    }

    fn wall(&mut self, body: &mut EventBody, normal: DVec3) {
        let approach = body.velocity.dot(normal);
        if approach > 0.0 && body.mass.is_finite() {
            body.velocity -= normal * ((1.0 + self.restitution) * approach);
        }
    }
}
