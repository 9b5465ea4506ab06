//! sweepcast's test support, outside the library's API: reproducible inputs for the tests,
//! examples, benches and fuzz target (a random world of moving bodies with candidate pairs,
//! and adversarial and extreme sets of the cases where swept tests go wrong).
//!
//! The generator is SplitMix64, written out here so that a seed means the same workload on
//! every platform and version.

use glam::Vec3;

use sweepcast::{MovingSphere, low_level::MAX_MAGNITUDE};

/// Bodies and the candidate pairs to sweep among them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Workload {
    /// The moving bodies.
    pub bodies: Vec<MovingSphere>,
    /// Candidate pairs: indices into `bodies`.
    pub pairs: Vec<[u32; 2]>,
}

/// Parameters of [`Workload::random`].
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct WorkloadConfig {
    /// Number of bodies (at least 2).
    pub bodies: usize,
    /// Number of candidate pairs.
    pub pairs: usize,
    /// Seed of the generator.
    pub seed: u64,
    /// 2 for circles (z = 0), 3 for spheres.
    pub dimensions: u32,
    /// Distance of the world from the origin (added to every centre).
    pub offset: f32,
    /// Spacing of the lattice the bodies are scattered on.
    pub spacing: f32,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        Self {
            bodies: 100_000,
            pairs: 1_000_000,
            seed: 1,
            dimensions: 3,
            offset: 0.0,
            spacing: 1.0,
        }
    }
}

/// SplitMix64: a small, fast, well-mixed generator.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator started from `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [low, high).
    pub fn range(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.unit()
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in the ball of radius `radius` (the disc, with z = 0, when `dimensions` is 2).
    pub fn in_ball(&mut self, radius: f64, dimensions: u32) -> Vec3 {
        loop {
            let z = if dimensions == 2 {
                0.0
            } else {
                self.range(-1.0, 1.0)
            };
            let v = glam::DVec3::new(self.range(-1.0, 1.0), self.range(-1.0, 1.0), z);
            if v.length_squared() <= 1.0 {
                return (v * radius).as_vec3();
            }
        }
    }
}

impl Workload {
    /// A world of `config.bodies` bodies scattered on a jittered lattice of `config.spacing`,
    /// with radii from 5% to 50% of the spacing and displacements up to 1.5 spacings, and
    /// `config.pairs` candidate pairs between lattice neighbours: the kind of pairs a broad
    /// phase hands over, of which a good share collide.
    #[must_use]
    pub fn random(config: &WorkloadConfig) -> Self {
        let mut rng = SplitMix64::new(config.seed);
        let n = config.bodies.max(2);
        let dims = if config.dimensions == 2 { 2 } else { 3 };
        let side = (n as f64).powf(1.0 / f64::from(dims)).ceil() as usize;
        let h = f64::from(config.spacing);
        let layer = if dims == 2 { 0 } else { side * side };
        let bodies = (0..n)
            .map(|i| {
                let cell = [
                    i % side,
                    (i / side) % side,
                    if dims == 2 { 0 } else { i / layer },
                ];
                let jitter = rng.in_ball(0.25 * h, dims);
                let lattice = Vec3::new(cell[0] as f32, cell[1] as f32, cell[2] as f32);
                MovingSphere::new(
                    lattice * config.spacing + jitter + Vec3::splat(config.offset),
                    rng.range(0.05 * h, 0.5 * h) as f32,
                    rng.in_ball(1.5 * h, dims),
                )
            })
            .collect();
        let steps: &[usize] = if dims == 2 {
            &[1, side]
        } else {
            &[1, side, layer]
        };
        let pairs = (0..config.pairs)
            .map(|_| {
                let i = rng.below(n as u64) as usize;
                let step = steps[rng.below(steps.len() as u64) as usize];
                let j = if rng.next_u64() & 1 == 0 {
                    i + step
                } else {
                    i + n - step % n
                };
                [i as u32, (j % n) as u32]
            })
            .collect();
        Self { bodies, pairs }
    }

    /// The cases where swept tests break, each a pair `[2k, 2k + 1]`, at radius sums from
    /// 2e-4 to 2e4 and world offsets 0, 1e3 and 1e6 (leaving out radii under 256 f32 steps of
    /// the offset, which f32 cannot place relative to one another): grazing contacts (exact, just inside, just
    /// outside), contact exactly at t = 1 and just past it, overlap at t = 0, touching at
    /// t = 0, zero relative motion (apart and overlapping), head-on collinear approaches and
    /// retreats, zero radii (a point, i.e. a ray, against a sphere, and two points), identical
    /// bodies, bodies of radius 1e-4 against each scale, and random directions at each scale.
    #[must_use]
    pub fn adversarial(seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed);
        let mut w = Self::default();
        for &offset in &[0.0f32, 1e3, 1e6] {
            // Spacing of f32 values at this offset: bodies smaller than a few hundred of
            // these cannot be placed relative to one another there, so those scales are left
            // out (at 1e3 radii from 1, at 1e6 from 1e2).
            let spacing = f32::from_bits(offset.to_bits() + 1) - offset;
            for &r in &[1e-4f32, 1e-2, 1.0, 1e2, 1e4] {
                if r < 256.0 * spacing {
                    continue;
                }
                // "Just inside" and "just outside" by 1e-6, or by 8 f32 steps where those are
                // coarser, so the three variants stay distinct.
                let nudge = (8.0 * spacing / (2.0 * r)).max(1e-6);
                let base = Vec3::new(offset, -offset, 0.5 * offset);
                let x = Vec3::X;
                let y = Vec3::Y;
                // r + r = 2r; head-on from 5r away moving 3r: touches exactly at t = 1.
                w.push(base, r, 3.0 * r * x, base + 5.0 * r * x, r, Vec3::ZERO);
                w.push(
                    base,
                    r,
                    3.0 * r * x * (1.0 - 1e-6),
                    base + 5.0 * r * x,
                    r,
                    Vec3::ZERO,
                );
                w.push(
                    base,
                    r,
                    3.0 * r * x * (1.0 + 1e-6),
                    base + 5.0 * r * x,
                    r,
                    Vec3::ZERO,
                );
                // Tangent graze: passes b at exactly the radius sum, at t = 0.5.
                for k in [1.0 - nudge, 1.0, 1.0 + nudge] {
                    let b = base + 5.0 * r * x + 2.0 * r * k * y;
                    w.push(base, r, 10.0 * r * x, b, r, Vec3::ZERO);
                }
                // Overlap at t = 0, moving apart and together; touching at t = 0.
                w.push(base, r, -r * x, base + r * x, r, Vec3::ZERO);
                w.push(base, r, r * x, base + r * x, r, r * y);
                w.push(base, r, r * y, base + 2.0 * r * x, r, Vec3::ZERO);
                // Zero relative motion, apart and overlapping.
                let d = 7.0 * r * (x + y);
                w.push(base, r, d, base + 3.0 * r * x, r, d);
                w.push(base, r, d, base + 0.5 * r * x, r, d);
                // Both moving, head-on collinear, meeting at t = 0.4; and retreating.
                w.push(base, r, 5.0 * r * x, base + 6.0 * r * x, r, -5.0 * r * x);
                w.push(base, r, -5.0 * r * x, base + 6.0 * r * x, r, 5.0 * r * x);
                // Zero radius: a ray into a sphere, a ray just missing, two points.
                w.push(base, 0.0, 4.0 * r * x, base + 3.0 * r * x, r, Vec3::ZERO);
                w.push(
                    base,
                    0.0,
                    4.0 * r * x,
                    base + 3.0 * r * x + 1.01 * r * y,
                    r,
                    Vec3::ZERO,
                );
                w.push(base, 0.0, 4.0 * r * x, base + 2.0 * r * x, 0.0, Vec3::ZERO);
                // Identical bodies.
                w.push(base, r, d, base, r, d);
                // Mixed scales: a body of radius 1e-4 against one of this radius, hitting
                // head-on, grazing, and a tiny body resting in a large one's path.
                let tiny = 1e-4f32;
                let gap = 3.0 * (r + tiny);
                w.push(
                    base,
                    tiny,
                    2.0 * gap * x,
                    base + (gap + r + tiny) * x,
                    r,
                    Vec3::ZERO,
                );
                let graze = base + (gap + r) * x + (r + tiny) * y;
                w.push(base, tiny, 2.0 * (gap + r) * x, graze, r, Vec3::ZERO);
                w.push(
                    base,
                    r,
                    2.0 * gap * x,
                    base + (gap + r + tiny) * x,
                    tiny,
                    Vec3::ZERO,
                );
                // Random directions at this scale, half of them near grazing.
                for k in 0..64 {
                    let a = base + rng.in_ball(4.0 * r as f64, 3);
                    let b = base + rng.in_ball(4.0 * r as f64, 3);
                    let (ra, rb) = (
                        rng.range(0.0, r as f64) as f32,
                        rng.range(0.0, r as f64) as f32,
                    );
                    let mut da = rng.in_ball(8.0 * r as f64, 3);
                    if k % 2 == 0 {
                        // Aim a's motion to pass b's centre at exactly the radius sum.
                        let to_b = b - a;
                        let side = da.cross(to_b).cross(da).normalize_or_zero();
                        da = (to_b - side * (ra + rb)).normalize_or_zero() * da.length() * 2.0;
                    }
                    w.push(a, ra, da, b, rb, Vec3::ZERO);
                }
            }
        }
        w
    }

    /// Fast small bodies: `count` bullets of radius 0.01, each moving 0.5 (50 radii) in a
    /// random direction, each paired with a resting target of radius 0.01 placed up to 0.6
    /// along its path and up to 0.03 to the side of it (so that about half are hit). With
    /// four sub-steps a bullet moves 12.5 radii between checks: sub-stepping tunnels here.
    #[must_use]
    pub fn bullets(count: usize, seed: u64) -> Self {
        const RADIUS: f32 = 0.01;
        let mut rng = SplitMix64::new(seed);
        let mut w = Self::default();
        for _ in 0..count {
            let start = rng.in_ball(100.0, 3);
            let direction = rng.in_ball(1.0, 3).normalize_or(Vec3::X);
            let side = direction.any_orthonormal_vector();
            let along = rng.range(0.0, 0.6) as f32;
            let aside = rng.range(0.0, 0.03) as f32;
            let target = start + direction * along + side * aside;
            w.push(
                start,
                RADIUS,
                direction * (50.0 * RADIUS),
                target,
                RADIUS,
                Vec3::ZERO,
            );
        }
        w
    }

    /// Inputs at the edges of f32, each a pair `[2k, 2k + 1]` (plus a body paired with
    /// itself at each scale): the same relative setups (head-on contact at t = 0.3, contact at
    /// t = 1, a tangent graze, overlap, touching at t = 0, a near miss, zero radii, zero
    /// displacement, identical bodies, random directions) at every length scale from
    /// subnormal (1e-40) through 1e-30, 1, 1e20 and 1e30 up to [`MAX_MAGNITUDE`] / 16, where
    /// squaring a relative length overflows f32 without rescaling; worlds placed up to 1e30
    /// from the origin; and mixed scales: displacements of 1e20 against unit bodies, unit
    /// bodies beside subnormal ones, radii of 1e30 around points.
    #[must_use]
    pub fn extreme(seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed);
        let mut w = Self::default();
        let (x, y, z) = (Vec3::X, Vec3::Y, Vec3::Z);
        let scales = [
            1e-40f32,
            1e-38,
            1e-30,
            1e-10,
            1.0,
            1e10,
            1e19,
            1e20,
            1e30,
            1e36,
            MAX_MAGNITUDE / 16.0,
        ];
        for &l in &scales {
            // World offsets the scale can be placed at (an offset needs the scale to be at
            // least a few hundred of its f32 steps).
            for &offset in &[0.0f32, 1e3, 1e30] {
                let spacing = f32::from_bits(offset.to_bits() + 1) - offset;
                if offset > 0.0 && l < 256.0 * spacing || 10.0 * l + offset > MAX_MAGNITUDE {
                    continue;
                }
                let o = Vec3::new(offset, -offset, 0.5 * offset);
                let r = l;
                // Head-on: gap 3r closes at 10r per step, contact at t = 0.3.
                w.push(o, r, 10.0 * r * x, o + 5.0 * r * x, r, Vec3::ZERO);
                // Both moving: contact at t = 1 exactly.
                w.push(o, r, 1.5 * r * x, o + 5.0 * r * x, r, -1.5 * r * x);
                // Tangent graze at the radius sum.
                w.push(
                    o,
                    r,
                    4.0 * r * x,
                    o + 2.0 * r * x + 2.0 * r * y,
                    r,
                    Vec3::ZERO,
                );
                // Overlap, and touching at t = 0.
                w.push(o, r, r * y, o + r * x, r, Vec3::ZERO);
                w.push(o, r, r * z, o + 2.0 * r * x, r, Vec3::ZERO);
                // Near miss: closest approach 2.5r against a radius sum of 2r.
                w.push(
                    o,
                    r,
                    8.0 * r * x,
                    o + 4.0 * r * x + 2.5 * r * y,
                    r,
                    Vec3::ZERO,
                );
                // Zero radii: a point swept into a sphere; two points meeting head-on.
                w.push(o, 0.0, 4.0 * r * x, o + 2.0 * r * x, r, Vec3::ZERO);
                w.push(o, 0.0, r * x, o + r * x, 0.0, -r * x);
                // Zero displacements: apart, and overlapping.
                w.push(o, r, Vec3::ZERO, o + 3.0 * r * x, r, Vec3::ZERO);
                w.push(o, r, Vec3::ZERO, o + r * x, r, Vec3::ZERO);
                // Identical bodies.
                w.push(o, r, r * x, o, r, r * x);
                // Random directions and sizes around this scale.
                for _ in 0..8 {
                    let a = o + rng.in_ball(4.0, 3) * r;
                    let b = o + rng.in_ball(4.0, 3) * r;
                    let (ra, rb) = (
                        rng.range(0.0, 1.0) as f32 * r,
                        rng.range(0.0, 1.0) as f32 * r,
                    );
                    w.push(
                        a,
                        ra,
                        rng.in_ball(8.0, 3) * r,
                        b,
                        rb,
                        rng.in_ball(8.0, 3) * r,
                    );
                }
                // A body paired with itself.
                let index = w.bodies.len() as u32;
                w.bodies.push(MovingSphere::new(o, r, r * y));
                w.pairs.push([index, index]);
            }
        }
        // Mixed scales: a 1e20 displacement against unit bodies (contact at t ~ 1e-20 after
        // a gap of 3, and a miss passing 10 to the side), in both orders.
        w.push(Vec3::ZERO, 1.0, 1e20 * x, 5.0 * x, 1.0, Vec3::ZERO);
        w.push(5.0 * x, 1.0, Vec3::ZERO, Vec3::ZERO, 1.0, 1e20 * x);
        w.push(
            Vec3::ZERO,
            1.0,
            1e20 * x,
            5.0 * x + 10.0 * y,
            1.0,
            Vec3::ZERO,
        );
        // Unit bodies beside subnormal ones, and subnormal motion against a unit gap.
        w.push(Vec3::ZERO, 1.0, 2.0 * x, 2.5 * x, 1e-40, Vec3::ZERO);
        w.push(Vec3::ZERO, 1e-40, 1e-40 * x, 1e-40 * y, 1e-40, Vec3::ZERO);
        w.push(
            Vec3::ZERO,
            1.0,
            1e-40 * x,
            2.0 * x + 1e-40 * x,
            1.0,
            Vec3::ZERO,
        );
        // A huge sphere around a moving point, and a point grazing it.
        w.push(Vec3::ZERO, 1e30, 1e30 * x, 3e30 * x, 0.0, Vec3::ZERO);
        w.push(
            Vec3::ZERO,
            0.0,
            4e30 * x,
            2e30 * x + 1e30 * y,
            1e30,
            Vec3::ZERO,
        );
        // The limit itself: bodies at +-MAX_MAGNITUDE rushing together.
        let m = MAX_MAGNITUDE;
        w.push(-m * x, m / 2.0, m * x, m * x, m / 2.0, -m * x);
        w
    }

    fn push(&mut self, ca: Vec3, ra: f32, da: Vec3, cb: Vec3, rb: f32, db: Vec3) {
        let i = self.bodies.len() as u32;
        self.bodies.push(MovingSphere::new(ca, ra, da));
        self.bodies.push(MovingSphere::new(cb, rb, db));
        self.pairs.push([i, i + 1]);
    }
}

/// The kinds of scene a whole step is tested and measured on ([`Scene::bodies`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Scene {
    /// Bodies scattered uniformly in a cube (a square in 2D) at a packing fraction of about
    /// 10%, radii from 0.5 to 1, displacements up to 2 (about a diameter).
    Uniform,
    /// A dense cluster in a vast, nearly empty scene: 99 bodies in 100 within a ball around
    /// the origin at a packing fraction of about 20% (radii 0.05 to 0.1, displacements up to
    /// 0.15), the rest scattered over a cube 1,000 times the ball's radius. The broad phase's
    /// bounds are the cube's, so the cluster gets a thousandth of them.
    Clustered,
    /// Uniform, with radii spanning 100× (0.05 to 5, log-uniform).
    Radii100,
    /// Uniform, with one body in fifty a fast bullet (radius 0.1, displacement 50 to 100)
    /// that crosses many others in one step.
    Fast,
    /// Uniform in a periodic box (the cube itself, at least 13 on a side so that radius plus
    /// displacement, at most 3, stays below a quarter of it), centres in `[0, L)` up to the
    /// rounding to f32.
    Periodic,
}

impl Scene {
    /// Every scene, in order.
    pub const ALL: [Self; 5] = [
        Self::Uniform,
        Self::Clustered,
        Self::Radii100,
        Self::Fast,
        Self::Periodic,
    ];

    /// `n` bodies of this scene in `dimensions` (2 or 3), and the options to sweep them with
    /// (a periodic box for [`Scene::Periodic`], the default otherwise).
    #[must_use]
    pub fn bodies(
        self,
        n: usize,
        dimensions: u32,
        seed: u64,
    ) -> (Vec<MovingSphere>, sweepcast::SweepOptions) {
        let mut rng = SplitMix64::new(seed);
        // A side that puts about 10% of the volume (area) in bodies of mean radius 0.75.
        let mean_volume = if dimensions == 2 {
            std::f64::consts::PI * 0.75 * 0.75
        } else {
            4.0 / 3.0 * std::f64::consts::PI * 0.75f64.powi(3)
        };
        let side = (n as f64 * mean_volume / 0.1).powf(1.0 / f64::from(dimensions));
        let side = if self == Self::Periodic {
            side.max(13.0)
        } else {
            side
        };
        // The cluster's radius: 20% of its ball (disc) in bodies of mean radius 0.075.
        let unit_ball = if dimensions == 2 {
            std::f64::consts::PI
        } else {
            4.0 / 3.0 * std::f64::consts::PI
        };
        let cluster = (n as f64 * mean_volume * 0.1f64.powi(dimensions as i32) / 0.2 / unit_ball)
            .powf(1.0 / f64::from(dimensions));
        let in_cube = |rng: &mut SplitMix64, low: f64, high: f64| {
            let z = if dimensions == 2 {
                0.0
            } else {
                rng.range(low, high)
            };
            glam::DVec3::new(rng.range(low, high), rng.range(low, high), z).as_vec3()
        };
        let mut options = sweepcast::SweepOptions::default();
        let bodies = (0..n)
            .map(|i| match self {
                Self::Clustered => {
                    let center = if i % 100 == 99 {
                        in_cube(&mut rng, -1000.0 * cluster, 1000.0 * cluster)
                    } else {
                        rng.in_ball(cluster, dimensions)
                    };
                    MovingSphere::new(
                        center,
                        rng.range(0.05, 0.1) as f32,
                        rng.in_ball(0.15, dimensions),
                    )
                }
                Self::Fast if i % 50 == 0 => {
                    let direction = rng.in_ball(1.0, dimensions).normalize_or(Vec3::X);
                    MovingSphere::new(
                        in_cube(&mut rng, 0.0, side),
                        0.1,
                        direction * rng.range(50.0, 100.0) as f32,
                    )
                }
                Self::Uniform | Self::Radii100 | Self::Fast | Self::Periodic => {
                    let center = in_cube(&mut rng, 0.0, side);
                    let radius = if self == Self::Radii100 {
                        0.05 * 100f64.powf(rng.unit())
                    } else {
                        rng.range(0.5, 1.0)
                    };
                    MovingSphere::new(center, radius as f32, rng.in_ball(2.0, dimensions))
                }
            })
            .collect();
        if self == Self::Periodic {
            let side = side as f32;
            let period = if dimensions == 2 {
                Vec3::new(side, side, f32::INFINITY)
            } else {
                Vec3::splat(side)
            };
            options = options.with_periodic_box(
                sweepcast::PeriodicBox::new(period).expect("a positive, finite side"),
            );
        }
        (bodies, options)
    }
}

/// Issue 23's sparse scene: `n` bodies of radius 0.5 uniform in a cube of side 54 whose low
/// corner is at `corner` (placed in f64, then rounded to f32, so that the same scene far from
/// the origin is the same up to f32's spacing there), each displaced up to 0.5.
#[must_use]
pub fn sparse_cube(n: usize, seed: u64, corner: glam::DVec3) -> Vec<MovingSphere> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| {
            let unit = glam::DVec3::new(rng.unit(), rng.unit(), rng.unit());
            let center = (corner + 54.0 * unit).as_vec3();
            MovingSphere::new(center, 0.5, rng.in_ball(0.5, 3))
        })
        .collect()
}

/// `bodies` with their centres wrapped into `[0, L)` on each axis of `periodic_box` that
/// wraps (in f64, where the remainder is exact, then rounded to f32; one that rounds to `L`
/// is the f32 below it).
#[must_use]
pub fn wrapped(
    bodies: &[MovingSphere],
    periodic_box: &sweepcast::PeriodicBox,
) -> Vec<MovingSphere> {
    let period = periodic_box.period();
    bodies
        .iter()
        .map(|body| {
            let center = Vec3::from_array(std::array::from_fn(|k| {
                let (c, l) = (body.center[k], period[k]);
                if !l.is_finite() {
                    return c;
                }
                let wrapped = f64::from(c).rem_euclid(f64::from(l)) as f32;
                if wrapped < l {
                    wrapped
                } else {
                    f32::from_bits(l.to_bits() - 1)
                }
            }));
            MovingSphere::new(center, body.radius, body.displacement)
        })
        .collect()
}

/// `bodies` in periodic boxes of side 10⁶ and 10⁷, each as given (centres below 0 or beyond
/// the box are wrapped by the paths themselves) and wrapped into the box ([`wrapped`]), each
/// `(label, bodies, options)`: pairs across the boxes' faces where f32's spacing is coarse.
#[must_use]
pub fn in_large_boxes(
    label: &str,
    bodies: &[MovingSphere],
) -> Vec<(String, Vec<MovingSphere>, sweepcast::SweepOptions)> {
    [1e6f32, 1e7]
        .into_iter()
        .flat_map(|side| {
            let periodic_box = sweepcast::PeriodicBox::cube(side).expect("a valid box");
            let options = sweepcast::SweepOptions::default().with_periodic_box(periodic_box);
            [
                (
                    format!("{label} in cube({side:e})"),
                    bodies.to_vec(),
                    options,
                ),
                (
                    format!("{label} in cube({side:e}), wrapped"),
                    wrapped(bodies, &periodic_box),
                    options,
                ),
            ]
        })
        .collect()
}

/// A world of [`sparse_cube_far_away`]: its label, bodies and options, and the same scene
/// near the origin without a box.
#[derive(Clone, Debug)]
pub struct FarWorld {
    /// What the world is, for messages.
    pub label: String,
    /// The bodies, where f32's spacing is coarse.
    pub bodies: Vec<MovingSphere>,
    /// The options, with the world's periodic box if it has one.
    pub options: sweepcast::SweepOptions,
    /// The same bodies moved near the origin, without a box: less the corner the scene was
    /// placed at, each by whole periods to the image nearest it (in f64, where these moves
    /// are exact, and exact again in f32 nearer the origin). The same scene as `bodies`, up
    /// to nothing: its candidates are those of `bodies` with a broad phase that adds none.
    pub near: Vec<MovingSphere>,
}

impl FarWorld {
    /// Asserts that a step (`candidates`: its candidate count of some bodies under some
    /// options) gives this world at most 1.5 times the candidates of its scene near the
    /// origin without a box ([`FarWorld::near`]), and prints both, naming the step `path`.
    ///
    /// # Panics
    /// Where it gives more.
    pub fn assert_few_candidates(
        &self,
        path: &str,
        mut candidates: impl FnMut(&[MovingSphere], sweepcast::SweepOptions) -> usize,
    ) {
        let label = &self.label;
        let open = candidates(&self.near, sweepcast::SweepOptions::default());
        let far = candidates(&self.bodies, self.options);
        println!("{label}: {far} candidates on the {path}, {open} near the origin without a box");
        assert!(
            2 * far <= 3 * open,
            "{label}: {far} candidates on the {path}, more than 1.5 times the {open} in open space"
        );
    }
}

/// Where f32's coordinates are coarse: [`sparse_cube`] in periodic boxes of side 10⁶ and 10⁷
/// (in the corner at the origin, and deep inside the larger), across the boxes' corner
/// ([`in_large_boxes`]), and 10⁶ from the origin without a box. The broad phase's margin once
/// grew with the coordinates and the period; each of these must give about the candidates of
/// its scene near the origin without a box ([`FarWorld::near`]), and the contacts of every
/// pair.
#[must_use]
pub fn sparse_cube_far_away(n: usize, seed: u64) -> Vec<FarWorld> {
    let open = sweepcast::SweepOptions::default();
    let in_cube = |side: f32| {
        open.with_periodic_box(sweepcast::PeriodicBox::cube(side).expect("a valid box"))
    };
    let at = |corner: f64| sparse_cube(n, seed, glam::DVec3::splat(corner));
    let deep = glam::DVec3::new(3e6, 5e6, 7e6);
    let mut worlds = vec![
        ("offset 1e6".into(), at(1e6), open, glam::DVec3::splat(1e6)),
        (
            "at the origin in cube(1e6)".into(),
            at(0.0),
            in_cube(1e6),
            glam::DVec3::ZERO,
        ),
        (
            "at the origin in cube(1e7)".into(),
            at(0.0),
            in_cube(1e7),
            glam::DVec3::ZERO,
        ),
        (
            "deep in cube(1e7)".into(),
            sparse_cube(n, seed, deep),
            in_cube(1e7),
            deep,
        ),
    ];
    let across = glam::DVec3::splat(-27.0);
    worlds.extend(
        in_large_boxes("across the corner", &at(-27.0))
            .into_iter()
            .map(|(label, bodies, options)| (label, bodies, options, across)),
    );
    worlds
        .into_iter()
        .map(|(label, bodies, options, corner)| {
            let period = options
                .periodic_box
                .map_or(glam::DVec3::INFINITY, |b| b.period().as_dvec3());
            let near = bodies
                .iter()
                .map(|body| {
                    let from_corner = body.center.as_dvec3() - corner;
                    let near = glam::DVec3::from_array(std::array::from_fn(|k| {
                        if period[k].is_finite() {
                            from_corner[k] - period[k] * (from_corner[k] / period[k]).round()
                        } else {
                            from_corner[k]
                        }
                    }));
                    MovingSphere::new(near.as_vec3(), body.radius, body.displacement)
                })
                .collect();
            FarWorld {
                label,
                bodies,
                options,
                near,
            }
        })
        .collect()
}

/// `n` bodies' collision groups, drawn from `seed`: every group ([`CollisionGroups::ALL`]) a
/// quarter of them, none ([`CollisionGroups::NONE`]) one in twenty, bullets (meeting targets
/// only) and targets (meeting both) half, and the rest a random group of four with a random
/// filter over them.
pub fn random_groups(n: usize, seed: u64) -> Vec<sweepcast::CollisionGroups> {
    use sweepcast::CollisionGroups;
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| match rng.below(20) {
            0..5 => CollisionGroups::ALL,
            5 => CollisionGroups::NONE,
            6..12 => CollisionGroups::new(BULLET, TARGET),
            12..16 => CollisionGroups::new(TARGET, BULLET | TARGET),
            _ => CollisionGroups::new(1 << rng.below(4), rng.below(16) as u16),
        })
        .collect()
}

/// The bullets' and the targets' groups of [`random_groups`].
pub const BULLET: u16 = 1 << 0;
pub const TARGET: u16 = 1 << 1;

/// A gas of `n` bodies of radius 0.5 and mass 1 in a periodic cube of `side`, apart from each
/// other (at the nearest image), at speeds up to 2.
pub fn periodic_gas(n: usize, side: f64, seed: u64) -> Vec<sweepcast::events::EventBody> {
    let mut random = SplitMix64::new(seed);
    let mut bodies: Vec<sweepcast::events::EventBody> = Vec::new();
    let nearest = |a: glam::DVec3, b: glam::DVec3| {
        let d = a - b;
        (d - (d / side).round() * side).length()
    };
    while bodies.len() < n {
        let position = glam::DVec3::new(
            random.range(0.0, side),
            random.range(0.0, side),
            random.range(0.0, side),
        );
        if bodies.iter().any(|b| nearest(b.position, position) <= 1.0) {
            continue;
        }
        let velocity = random.in_ball(2.0, 3).as_dvec3();
        bodies.push(sweepcast::events::EventBody::new(
            position, velocity, 0.5, 1.0,
        ));
    }
    bodies
}

/// The periodic cube of side 10 whose grid has two cells an axis at its coarsest level, and
/// 600 bodies in it drawn from `seed`: `case` 0, radius 1.2 moving up to 1; 1, radius 2
/// moving up to 0.45; 2, one body in fifty as in case 1 over bodies of radius 0.1 moving up
/// to 0.5 (a coarse level of two cells over a fine one). Validation keeps each reach,
/// r + |d| per axis, below a quarter of the period, so a swept extent, 2r + |d|, is below
/// half of it, and a level's cell (at least its largest extent) fits twice or more: the
/// extents here, between a third and a half of the period, make it twice, the fewest a
/// valid scene can have, where a stencil of three cells an axis would visit one twice.
pub fn two_cells_an_axis(case: u32, seed: u64) -> (Vec<MovingSphere>, sweepcast::SweepOptions) {
    let side = 10.0;
    let mut rng = SplitMix64::new(seed);
    let bodies = (0..600)
        .map(|i| {
            let (radius, move_by) = match case {
                0 => (1.2, 1.0),
                1 => (2.0, 0.45),
                _ if i % 50 == 0 => (2.0, 0.45),
                _ => (0.1, 0.5),
            };
            let center = glam::DVec3::new(
                rng.range(0.0, side),
                rng.range(0.0, side),
                rng.range(0.0, side),
            );
            MovingSphere::new(center.as_vec3(), radius, rng.in_ball(move_by, 3))
        })
        .collect();
    let periodic_box = sweepcast::PeriodicBox::cube(side as f32).expect("a valid box");
    (
        bodies,
        sweepcast::SweepOptions::default().with_periodic_box(periodic_box),
    )
}

/// A gas on a jittered lattice ([`jittered_lattice`]).
pub struct Lattice {
    /// The side of the cube of cells, from the origin.
    pub side: f32,
    /// Centres and radii (displacements 0).
    pub bodies: Vec<MovingSphere>,
    /// Velocities.
    pub velocities: Vec<Vec3>,
}

/// `count` spheres in cells of side `cell` chosen at random from the smallest cube of cells
/// that holds them, each inside its own cell (so no two overlap, and none crosses the cube's
/// faces), of radius uniform in `radii` (below `cell / 2`), moving in a random direction at up
/// to `speed`. Draws, per body: the radius, the centre's jitter, the velocity.
pub fn jittered_lattice(
    count: usize,
    cell: f64,
    radii: (f64, f64),
    speed: f64,
    seed: u64,
) -> Lattice {
    let per_axis = (count as f64).cbrt().ceil() as usize;
    let mut rng = SplitMix64::new(seed);
    let mut cells: Vec<usize> = (0..per_axis.pow(3)).collect();
    for k in 0..count {
        let pick = k + rng.below((cells.len() - k) as u64) as usize;
        cells.swap(k, pick);
    }
    let mut bodies = Vec::with_capacity(count);
    let mut velocities = Vec::with_capacity(count);
    for &cell_index in &cells[..count] {
        let radius = rng.range(radii.0, radii.1) as f32;
        let index = [
            cell_index % per_axis,
            cell_index / per_axis % per_axis,
            cell_index / per_axis.pow(2),
        ];
        let slack = cell / 2.0 - f64::from(radius);
        let center = index.map(|i| ((i as f64 + 0.5) * cell + rng.range(-slack, slack)) as f32);
        bodies.push(MovingSphere::new(center.into(), radius, Vec3::ZERO));
        velocities.push(rng.in_ball(speed, 3));
    }
    Lattice {
        side: (cell * per_axis as f64) as f32,
        bodies,
        velocities,
    }
}

/// Each of `bodies` bodies' earliest contact with another body, as
/// [`Contacts::earliest_of`](sweepcast::Contacts::earliest_of) gives it: the contact's index
/// in [`Contacts::contacts`](sweepcast::Contacts::contacts) and the partner; `None` for a body
/// that touches no other.
#[must_use]
pub fn earliest_per_body(
    contacts: &sweepcast::Contacts,
    bodies: usize,
) -> Vec<Option<(usize, u32)>> {
    let all = contacts.contacts();
    (0..bodies as u32)
        .map(|body| {
            let contact = contacts.earliest_of(body)?;
            // The contact is an element of `all`: its index from the addresses.
            let index = (std::ptr::from_ref(contact) as usize - all.as_ptr() as usize)
                / std::mem::size_of::<sweepcast::Contact>();
            let [a, b] = contact.pair().expect("a contact of two bodies");
            assert!(index < all.len() && (a == body || b == body));
            Some((index, if a == body { b } else { a }))
        })
        .collect()
}
