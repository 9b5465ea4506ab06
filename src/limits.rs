//! The bound on the input that every path shares: the bodies' checks, the periodic box's
//! and the sweep's arithmetic all rest on [`MAX_MAGNITUDE`].

/// The largest magnitude any component of a body may have: `f32::MAX / 8`, about 4.25e37.
///
/// Below it, the difference of two centres or displacements and the sum of two radii (at
/// most 2 × the limit) and a contact point (centre + displacement × t + normal × radius, at
/// most 3 × the limit) are finite in f32. The sweep itself rescales every pair by a power of
/// two, so squaring never overflows however large the bodies are within this limit.
pub const MAX_MAGNITUDE: f32 = f32::MAX / 8.0;
