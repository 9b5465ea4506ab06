//! The hard-sphere gas of `examples/gas.rs`, shared with its test (`tests/simulations.rs`):
//! N spheres of diameter 1 and mass 1 in a periodic cube at packing fraction η, run by
//! sweepcast's event loop with a step's broad phase (CPU or GPU), and what statistical
//! mechanics says it should give.

#![allow(dead_code)] // the example and the test each take what they need

use sweepcast::events::{BroadPhase, Elastic, EventBody, EventLoop, Response};
use sweepcast::glam::DVec3;
use sweepcast::{Error, PeriodicBox};
use testkit::SplitMix64;

/// A gas: its bodies, the cube's side and its packing fraction.
pub struct Gas {
    pub bodies: Vec<EventBody>,
    pub side: f64,
    pub packing: f64,
}

impl Gas {
    /// `n` spheres of diameter 1 at packing fraction `packing` (below 0.5), on a simple cubic
    /// lattice (its spacing is above a diameter up to η = π/6), with velocities drawn from
    /// the Maxwell–Boltzmann distribution (seeded), no net momentum, and kT = 1 exactly.
    pub fn new(n: usize, packing: f64, seed: u64) -> Self {
        // The side as the periodic box holds it (an f32), so that the gas's own measures
        // (the nearest image of `smallest_gap`) use the loop's period exactly.
        let side = f64::from((n as f64 * std::f64::consts::PI / (6.0 * packing)).cbrt() as f32);
        let per_side = (n as f64).cbrt().ceil() as usize;
        let spacing = side / per_side as f64;
        let mut random = SplitMix64::new(seed);
        let mut gaussian = || {
            // Box–Muller.
            let (u, v) = (1.0 - random.unit(), random.unit());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let mut bodies: Vec<EventBody> = (0..n)
            .map(|k| {
                let cell = [
                    k % per_side,
                    (k / per_side) % per_side,
                    k / (per_side * per_side),
                ];
                let position = DVec3::from_array(cell.map(|c| (c as f64 + 0.5) * spacing));
                let velocity = DVec3::new(gaussian(), gaussian(), gaussian());
                EventBody::new(position, velocity, 0.5, 1.0)
            })
            .collect();
        let drift = bodies.iter().map(|b| b.velocity).sum::<DVec3>() / n as f64;
        for body in &mut bodies {
            body.velocity -= drift;
        }
        let scale = temperature(&bodies).recip().sqrt();
        for body in &mut bodies {
            body.velocity *= scale;
        }
        Self {
            bodies,
            side,
            packing,
        }
    }

    /// The event loop of this gas's periodic cube, with the skin of [`Gas::skin`]; each body
    /// renews its own skin where `local` (else the broad phase is asked for every pair each
    /// time a body leaves its skin).
    pub fn event_loop(&self, local: bool) -> Result<EventLoop, Error> {
        let events = EventLoop::new()
            .with_periodic_box(PeriodicBox::cube(self.side as f32)?)
            .with_skin(self.skin());
        Ok(if local {
            events.with_local_skins()
        } else {
            events
        })
    }

    /// The number density, bodies per unit volume.
    pub fn density(&self) -> f64 {
        self.bodies.len() as f64 / self.side.powi(3)
    }

    /// The skin of the gas's event loop: 0.8 √λ for the mean free path λ (in diameters),
    /// within the box (each radius plus twice the skin below 90% of a quarter period). A
    /// thinner skin is renewed more often, a thicker one gives each body more partners; of
    /// the skins tried with local skins at N = 10⁴ on a 2-core AMD EPYC (Zen 4), the fastest
    /// were about 0.8 at η = 0.1 (λ = 1.0), 0.4 at 0.2, 0.25–0.3 at 0.3 and 0.18–0.25 at 0.4
    /// (λ = 0.08), which the rule follows.
    pub fn skin(&self) -> f64 {
        let contact = (1.0 - self.packing / 2.0) / (1.0 - self.packing).powi(3);
        let free_path =
            1.0 / (std::f64::consts::SQRT_2 * std::f64::consts::PI * self.density() * contact);
        let room = 0.45 * (self.side / 4.0 - 0.5);
        (0.8 * free_path.sqrt()).min(room)
    }

    /// How often the run looks at the gas: every two of Enskog's mean times between a
    /// body's collisions. (The loop goes on from step to step; the step is only how often
    /// the caller sees the bodies.)
    pub fn step(&self) -> f64 {
        2.0 / enskog_rate(self.packing, self.density(), 1.0)
    }
}

/// kT from the kinetic energy: the mean of m v² over the bodies, divided by 3.
pub fn temperature(bodies: &[EventBody]) -> f64 {
    bodies
        .iter()
        .map(|b| b.mass * b.velocity.length_squared())
        .sum::<f64>()
        / (3.0 * bodies.len() as f64)
}

/// The elastic response, counting the collisions and adding up the collision virial: the
/// impulse `J` of each collision times the distance of the centres at contact (the sum of
/// the radii), `r_ij · Δp_i`.
#[derive(Copy, Clone, Debug, Default)]
pub struct Virial {
    pub collisions: u64,
    pub sum: f64,
}

impl Response for Virial {
    fn pair(&mut self, a: &mut EventBody, b: &mut EventBody, normal: DVec3) {
        let before = a.velocity;
        Elastic::perfect().pair(a, b, normal);
        self.collisions += 1;
        self.sum += a.mass * (before - a.velocity).length() * (a.radius + b.radius);
    }

    fn wall(&mut self, body: &mut EventBody, normal: DVec3) {
        Elastic::perfect().wall(body, normal);
    }
}

/// What one stretch of a run gave.
#[derive(Copy, Clone, Debug, Default)]
pub struct Block {
    pub duration: f64,
    pub virial: Virial,
}

impl Block {
    /// The compressibility factor `Z = PV / NkT = 1 + Σ r_ij · Δp_i / (3 N kT t)`.
    pub fn compressibility(&self, n: usize, kt: f64) -> f64 {
        1.0 + self.virial.sum / (3.0 * n as f64 * kt * self.duration)
    }

    /// Collisions per body per unit time (each collision counts for its two bodies).
    pub fn collision_rate(&self, n: usize) -> f64 {
        2.0 * self.virial.collisions as f64 / (n as f64 * self.duration)
    }
}

/// Runs the gas for `duration` in steps of `step` with `broad_phase`, calling
/// `after_step` after each.
pub fn run(
    gas: &mut Gas,
    events: &mut EventLoop,
    broad_phase: &mut impl BroadPhase,
    duration: f64,
    step: f64,
    mut after_step: impl FnMut(&Gas, &Virial),
) -> Result<Block, Error> {
    let mut virial = Virial::default();
    let steps = (duration / step).round().max(1.0) as usize;
    for _ in 0..steps {
        events.advance_with(
            &mut gas.bodies,
            &[],
            step,
            &mut virial,
            broad_phase,
            |_, _| {},
        )?;
        after_step(gas, &virial);
    }
    Ok(Block {
        duration: steps as f64 * step,
        virial,
    })
}

/// Carnahan and Starling's equation of state (1969).
pub fn carnahan_starling(packing: f64) -> f64 {
    let eta = packing;
    (1.0 + eta + eta * eta - eta.powi(3)) / (1.0 - eta).powi(3)
}

/// Kolafa's refinement of it (as given by Boublík and Nezbeda, 1986):
/// `(1 + η + η² − ⅔ η³ (1 + η)) / (1 − η)³`.
pub fn kolafa(packing: f64) -> f64 {
    let eta = packing;
    (1.0 + eta + eta * eta - 2.0 / 3.0 * eta.powi(3) * (1.0 + eta)) / (1.0 - eta).powi(3)
}

/// Enskog's collision rate per body, `4 n σ² g(σ) √(π kT / m)`, with Carnahan and
/// Starling's contact value `g(σ) = (1 − η/2) / (1 − η)³` (σ = 1, m = 1).
pub fn enskog_rate(packing: f64, density: f64, kt: f64) -> f64 {
    let contact = (1.0 - packing / 2.0) / (1.0 - packing).powi(3);
    4.0 * density * contact * (std::f64::consts::PI * kt).sqrt()
}

/// The smallest gap between two bodies, at the nearest image, of the pairs `pairs`.
pub fn smallest_gap(gas: &Gas, pairs: &[[u32; 2]]) -> f64 {
    pairs
        .iter()
        .map(|&[a, b]| {
            let (a, b) = (&gas.bodies[a as usize], &gas.bodies[b as usize]);
            let d = a.position - b.position;
            let d = d - (d / gas.side).round() * gas.side;
            d.length() - a.radius - b.radius
        })
        .fold(f64::INFINITY, f64::min)
}
