//! Rust copies of the structs in `shaders/sweep.wgsl`, byte for byte. The size assertions
//! fail the build if the two drift apart.

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use crate::geometry::{Impact, ImpactStatus, MovingSphere};

/// `Body` in the shader: one moving sphere, 32 bytes (a WGSL `vec3<f32>` is 16-aligned).
///
/// Aligned to 32 bytes on the host so that the CPU's fast batch fetches a body with one
/// aligned AVX load; the alignment adds no padding, so the bytes the GPU sees are unchanged.
#[repr(C, align(32))]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct GpuBody {
    /// Centre at t = 0.
    pub center: [f32; 3],
    /// Radius.
    pub radius: f32,
    /// Displacement over the step.
    pub displacement: [f32; 3],
    /// Padding to the shader's 16-byte alignment.
    pub _pad: f32,
}

/// `ImpactRecord` in the shader: what one invocation writes for its pair, 32 bytes.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct ImpactRecord {
    /// Contact point on the first body's surface.
    pub point: [f32; 3],
    /// Fraction of the step at first contact.
    pub time_of_impact: f32,
    /// Unit normal from the first body towards the second.
    pub normal: [f32; 3],
    /// One of [`STATUS_MISS`], [`STATUS_CONTACT`], [`STATUS_OVERLAPPING`].
    pub status: u32,
}

/// `Params` in the shader: the uniform block of one dispatch.
#[repr(C)]
#[derive(Copy, Clone, Pod, Zeroable, Debug, PartialEq, Default)]
pub struct Params {
    /// Pairs in this dispatch; invocations past it return at once.
    pub pair_count: u32,
    /// Padding to the 16 bytes of a uniform block.
    pub _pad: [u32; 3],
}

/// `STATUS_MISS` in the shader.
pub const STATUS_MISS: u32 = 0;
/// `STATUS_CONTACT` in the shader.
pub const STATUS_CONTACT: u32 = 1;
/// `STATUS_OVERLAPPING` in the shader.
pub const STATUS_OVERLAPPING: u32 = 2;
/// `WORKGROUP_SIZE` in the shader: invocations (pairs) per workgroup.
pub const WORKGROUP_SIZE: u32 = 64;

const _: () = assert!(size_of::<GpuBody>() == 32);
const _: () = assert!(size_of::<ImpactRecord>() == 32);
const _: () = assert!(size_of::<Params>() == 16);

impl From<MovingSphere> for GpuBody {
    fn from(b: MovingSphere) -> Self {
        Self {
            center: b.center.to_array(),
            radius: b.radius,
            displacement: b.displacement.to_array(),
            _pad: 0.0,
        }
    }
}

impl ImpactRecord {
    /// The user-facing impact, or `None` for a miss. The shortened displacements are formed
    /// here, on the host, from the bodies' displacements and the time of impact.
    #[must_use]
    pub fn to_impact(&self, a: &GpuBody, b: &GpuBody) -> Option<Impact> {
        let status = match self.status {
            STATUS_CONTACT => ImpactStatus::Contact,
            STATUS_OVERLAPPING => ImpactStatus::Overlapping,
            _ => return None,
        };
        let t = self.time_of_impact;
        Some(Impact {
            time_of_impact: t,
            point: Vec3::from_array(self.point),
            normal: Vec3::from_array(self.normal),
            displacement_a: Vec3::from_array(a.displacement) * t,
            displacement_b: Vec3::from_array(b.displacement) * t,
            status,
        })
    }
}
