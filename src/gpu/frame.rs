//! The frame's shader, `shaders/frame.wgsl`, and its bindings: the step's local frame made on
//! the device from the bodies (`scene_bounds`, then `frame`), so that bodies that live there
//! need not be read back for it. [`GridStage`](super::GridStage) builds and records its two
//! entry points first in the step; their f32 twin is [`crate::low_level::frame`].
//!
//! ```text
//! bodies ─► scene_bounds ─► frame ─► (the step's parameters, the per-body dispatch)
//!           (atomic min,    (origin)
//!            max, bins)
//! ```

use super::kernel::{Access, Bindings, Shader};

/// The WGSL source of the frame: `shaders/shared.wgsl` followed by `shaders/frame.wgsl`.
pub const FRAME_WGSL: &str = concat!(
    include_str!("../../shaders/shared.wgsl"),
    include_str!("../../shaders/frame.wgsl")
);

// The shader's bindings.
pub(super) const BODIES: u32 = 1;
pub(super) const FRAME_INPUT: u32 = 22;
pub(super) const BOUNDS: u32 = 23;
pub(super) const FRAME_OUTPUT: u32 = 24;
pub(super) const BODY_DISPATCH: u32 = 25;

use Access::{Read, Write};
const SCENE_BOUNDS: Bindings = &[(FRAME_INPUT, Read), (BODIES, Read), (BOUNDS, Write)];
const FRAME: Bindings = &[
    (FRAME_INPUT, Read),
    (BOUNDS, Write),
    (FRAME_OUTPUT, Write),
    (BODY_DISPATCH, Write),
];

/// The frame's entry points and their bindings, as the grid builds them (and
/// `src/gpu/bindings_tests.rs` checks them against the shader).
pub(super) const FRAME_SHADER: Shader = Shader {
    file: "frame.wgsl",
    source: FRAME_WGSL,
    entry_points: &[("scene_bounds", SCENE_BOUNDS), ("frame", FRAME)],
};
