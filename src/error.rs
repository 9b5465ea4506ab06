//! The one error type of the crate.

/// Which field of a body failed validation.
///
/// Used by: `docs/guarantees.md` ("Bad input": `Error::NonFinite { body, field: Center }`
/// and the other errors that name a field).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BodyField {
    /// The centre at t = 0.
    Center,
    /// The radius.
    Radius,
    /// The displacement over the step.
    Displacement,
    /// The velocity (an event loop's body, [`crate::events::EventBody`]).
    Velocity,
    /// The mass (an event loop's body).
    Mass,
}

impl std::fmt::Display for BodyField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Center => "center",
            Self::Radius => "radius",
            Self::Displacement => "displacement",
            Self::Velocity => "velocity",
            Self::Mass => "mass",
        })
    }
}

/// What an [`Error::CapacityExceeded`] or [`Error::OutputLimit`] counted.
///
/// Used by: `docs/step.md` (a walk past its budget: `Error::CapacityExceeded` for
/// `Counted::WalkSteps`), `docs/guarantees.md`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Counted {
    /// Pairs recorded into a sweep stage's buffers.
    Pairs,
    /// Candidate pairs of a step's broad phase.
    Candidates,
    /// Contacts of a step (on the CPU, its narrow phase's hits: a pair that meets through
    /// two images of a periodic box counts twice until the two are merged).
    Contacts,
    /// Walks of the GPU step's grid past their budget, saved for the next dispatch (the step
    /// grows their slots itself: never reported since the grid).
    SavedQueries,
    /// Steps of one body's walk in the GPU step's grid (a level, an image, a cell looked up
    /// or a body visited): [`GRID_BUDGET`](crate::low_level::grid::GRID_BUDGET) a dispatch,
    /// in at most 17 dispatches (16 resumes,
    /// [`GRID_MAX_RESUME_PASSES`](crate::low_level::grid::GRID_MAX_RESUME_PASSES)).
    WalkSteps,
}

impl Counted {
    /// What to do when a buffer of these overflows.
    fn remedy_for_capacity(self) -> &'static str {
        match self {
            Self::Pairs => {
                "create the stage's buffers for more pairs (up to one binding), or record fewer pairs a dispatch"
            }
            Self::WalkSteps => {
                "a body's swept box meets more cells and bodies than its walk may visit in every resume (17 budgets of 60,000 steps: some hundreds of thousands of bodies piled in one place, or a body whose path crosses a crowded scene): take shorter steps"
            }
            Self::Candidates | Self::Contacts | Self::SavedQueries => {
                "one storage binding of this device holds no more: take shorter steps or split the world (every pair of bodies that all overlap is a contact), or use a device with larger bindings"
            }
        }
    }
}

impl std::fmt::Display for Counted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Pairs => "pairs",
            Self::Candidates => "candidate pairs",
            Self::Contacts => "contacts",
            Self::SavedQueries => "saved queries",
            Self::WalkSteps => "steps of a body's walk",
        })
    }
}

/// Everything that can go wrong in sweepcast. Every message says what to do about it.
///
/// Used by: the README's quick start (every fallible call), `docs/guarantees.md` (each bad input
/// and its error), `python/src/errors.rs`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A body's centre, radius or displacement is NaN or infinite.
    #[error(
        "body {body}: {field} is not finite (NaN or infinity); check the simulation state that produced it"
    )]
    NonFinite {
        /// Index of the offending body.
        body: usize,
        /// Which field is not finite.
        field: BodyField,
    },
    /// A body's centre, radius or displacement has a component larger in magnitude than
    /// [`MAX_MAGNITUDE`](crate::low_level::MAX_MAGNITUDE) (`f32::MAX / 8`, about 4.25e37): beyond it the
    /// difference of two centres, or a contact point, could overflow f32.
    #[error(
        "body {body}: {field} has a component of magnitude {value:e}, above the limit {limit:e} (f32::MAX / 8); scale the world down"
    )]
    TooLarge {
        /// Index of the offending body.
        body: usize,
        /// Which field is too large.
        field: BodyField,
        /// The offending component.
        value: f32,
        /// The limit, [`MAX_MAGNITUDE`](crate::low_level::MAX_MAGNITUDE).
        limit: f32,
    },
    /// A body's radius is below zero.
    #[error("body {body}: radius {radius} is negative; radii must be >= 0 (0 is a point)")]
    NegativeRadius {
        /// Index of the offending body.
        body: usize,
        /// The radius given.
        radius: f32,
    },
    /// A candidate pair names a body that does not exist.
    #[error("pair {pair}: body index {index} is out of range (there are {body_count} bodies)")]
    PairIndexOutOfRange {
        /// Index of the offending pair.
        pair: usize,
        /// The out-of-range body index.
        index: u32,
        /// How many bodies were given.
        body_count: usize,
    },
    /// A [`PeriodicBox`](crate::PeriodicBox) period that is NaN, zero, negative, subnormal,
    /// finite above [`MAX_MAGNITUDE`](crate::low_level::MAX_MAGNITUDE), or a box in which no axis wraps.
    #[error(
        "periodic box: the period {period} on axis {axis} is not valid; each period must be positive and finite (from f32::MIN_POSITIVE to f32::MAX / 8), or infinite for an axis that does not wrap, and at least one axis must wrap"
    )]
    InvalidPeriodicBox {
        /// The axis (0, 1, 2 for x, y, z).
        axis: usize,
        /// The period given.
        period: f32,
    },
    /// A body whose radius plus displacement along a periodic axis is not below a quarter of
    /// the period: a pair could then reach two images of each other within the step, and
    /// only the nearest is swept (see [`PeriodicBox`](crate::PeriodicBox)).
    #[error(
        "body {body}: radius + |displacement| along axis {axis} is {reach}, not below a quarter of the periodic box's period {period}; enlarge the box or take shorter steps"
    )]
    PeriodicBoxTooSmall {
        /// Index of the offending body.
        body: usize,
        /// The axis (0, 1, 2 for x, y, z).
        axis: usize,
        /// Its radius plus the magnitude of its displacement along the axis.
        reach: f32,
        /// The period along the axis.
        period: f32,
    },
    /// A body's centre lies, along an axis that wraps, 2²⁴ periods or more from the origin:
    /// there f32 cannot place it within one period (its spacing is a period or more), and
    /// the wrap of a relative position may overflow (see
    /// [`PeriodicBox`](crate::PeriodicBox)).
    #[error(
        "body {body}: its centre along axis {axis}, {center}, is 2^24 or more periods ({period}) from the origin, where f32 cannot place it within the box; wrap the centres into [0, period) before sweeping"
    )]
    OutsidePeriodicBox {
        /// Index of the offending body.
        body: usize,
        /// The axis (0, 1, 2 for x, y, z).
        axis: usize,
        /// The centre's coordinate along the axis.
        center: f32,
        /// The period along the axis.
        period: f32,
    },
    /// A wall with a coordinate that is NaN, infinite or beyond
    /// [`MAX_MAGNITUDE`](crate::low_level::MAX_MAGNITUDE), or a plane whose normal is zero.
    #[error("wall {wall}: {reason}")]
    InvalidWall {
        /// Index of the offending wall.
        wall: usize,
        /// What is wrong with it, and what to do.
        reason: &'static str,
    },
    /// A body of an event loop ([`crate::events`]) whose mass is NaN, zero or negative, or
    /// so small that its inverse is infinite (`f64::INFINITY` itself is allowed: a body that
    /// nothing moves).
    #[error(
        "body {body}: mass {mass} is not valid; give a mass above 0 whose inverse is finite (above about 5.6e-309), or infinity for a body that nothing moves"
    )]
    InvalidMass {
        /// Index of the offending body.
        body: usize,
        /// The mass given.
        mass: f64,
    },
    /// An event loop's step is NaN, infinite or negative.
    #[error("the step {step} is not a finite duration of at least 0")]
    InvalidStep {
        /// The step given.
        step: f64,
    },
    /// An event loop's skin ([`crate::events::EventLoop::with_skin`]) is NaN, infinite, or
    /// outside [`crate::events::EventLoop::MIN_LENGTH`] to [`crate::events::EventLoop::MAX_MAGNITUDE`].
    #[error(
        "the skin {skin:e} is not a distance from 2^-126 (about 1.2e-38) to 2^122 (about 5.3e36)"
    )]
    InvalidSkin {
        /// The skin given.
        skin: f64,
    },
    /// A body of an event loop whose position or velocity has a component beyond
    /// [`crate::events::EventLoop::MAX_MAGNITUDE`], whose radius is above it or above 0 and below
    /// [`crate::events::EventLoop::MIN_LENGTH`], or whose path over the step would carry it beyond
    /// [`crate::events::EventLoop::MAX_MAGNITUDE`] (in open space): outside that range the squares the
    /// predictions take overflow or underflow f64.
    #[error(
        "body {body}: {field} {value:e} is outside the event loop's range (components of at most 2^122, about 5.3e36, along the whole step; a radius of 0 or at least 2^-126, about 1.2e-38); rescale the units of the simulation"
    )]
    OutOfRange {
        /// Index of the offending body.
        body: usize,
        /// Which field.
        field: BodyField,
        /// The offending value (for a path, where it would end).
        value: f64,
    },
    /// An [`Elastic`](crate::events::Elastic) response with a restitution that is NaN or
    /// outside 0 to 1.
    #[error(
        "the restitution {restitution} is not from 0 to 1 (0: perfectly inelastic, 1: elastic); a restitution above 1 would add energy at every impact"
    )]
    InvalidRestitution {
        /// The restitution given.
        restitution: f64,
    },
    /// An event loop's body left its skin and, with its skin renewed, would leave it again at
    /// once (the skin is below what the clock can resolve at the body's speed), or the step
    /// would need more skin renewals than the loop's work limit allows.
    #[error(
        "body {body}: the skin {skin:e} is too thin for its speed {speed:e} (it would be renewed {renewals:e} times in the step, or without moving on in time); give a thicker skin with EventLoop::with_skin"
    )]
    SkinTooThin {
        /// The body.
        body: usize,
        /// The skin.
        skin: f64,
        /// The body's speed.
        speed: f64,
        /// Renewals the step would take at that speed (infinite where the clock cannot move).
        renewals: f64,
    },
    /// An event loop went round more times than its bound without its clock moving on: the
    /// same instant repeating (an impact that keeps coming back, a wrap or a skin that cannot
    /// move the clock on).
    #[error(
        "the event loop went round {rounds} times at the time {time} without moving on; check the bodies involved (masses, speeds far beyond the others, a response that does not separate them)"
    )]
    NoProgress {
        /// The instant, from the start of the step.
        time: f64,
        /// How many times the loop went round at it.
        rounds: usize,
    },
    /// An event loop's step needed more work than its limit
    /// ([`crate::events::EventLoop::with_max_work`]): pairs predicted, walls swept, partners
    /// found, bodies the broad phase was asked about.
    #[error(
        "the step needed more than {limit} units of work; take shorter steps, thin the skin if it is thick, or raise the limit with EventLoop::with_max_work"
    )]
    WorkLimit {
        /// The limit that was reached.
        limit: u64,
    },
    /// An event loop's bodies have more partners than its limit
    /// ([`crate::events::EventLoop::with_max_partners`]): a skin far too thick, or bodies
    /// crowded far beyond their size.
    #[error(
        "the bodies have at least {at_least} partners, above the limit of {limit}; thin the skin, or raise the limit with EventLoop::with_max_partners"
    )]
    TooManyPartners {
        /// A lower bound on the partners needed.
        at_least: u64,
        /// The limit.
        limit: u64,
    },
    /// After an impact the response left the bodies still approaching each other (or the
    /// wall): two bodies of infinite mass, a moving body of infinite mass against a wall, or a
    /// response that does not separate them. The bodies are left as they were at the last
    /// completed event.
    #[error(
        "the response to {event:?} left the bodies still approaching; two bodies of infinite mass (or one against a wall) cannot be resolved: give one of them a finite mass"
    )]
    UnresolvedImpact {
        /// The impact.
        event: crate::events::Event,
    },
    /// After an impact the response left a body with a non-finite or out-of-range position,
    /// velocity or radius, or an invalid mass. The bodies are left as they were at the last
    /// completed event.
    #[error(
        "the response to {event:?} left body {body} with a {field} that is not finite or outside the event loop's range (or an invalid mass)"
    )]
    InvalidResponse {
        /// The impact.
        event: crate::events::Event,
        /// The body.
        body: usize,
        /// Which field.
        field: BodyField,
    },
    /// An event loop's step needed more events than its limit: bodies caught in a cascade of
    /// collisions (a tight cluster resolved with little restitution collapses into ever
    /// closer collisions), or a step far longer than the time between collisions.
    #[error(
        "more than {limit} events in one step; take shorter steps, or raise the limit with EventLoop::with_max_events if the scene really has that many"
    )]
    TooManyEvents {
        /// The limit that was reached.
        limit: usize,
    },
    /// More than a GPU buffer holds: pairs recorded into a
    /// [`SweepStage`](crate::low_level::SweepStage)'s buffers, or a
    /// [`ContactPipeline`](crate::gpu::ContactPipeline) step's candidates, contacts or saved
    /// queries beyond what one storage binding of the device holds. The pipeline stays
    /// usable.
    #[error(
        "at least {at_least} {what} exceed the capacity of {capacity}; {}",
        .what.remedy_for_capacity()
    )]
    CapacityExceeded {
        /// What outgrew its buffer.
        what: Counted,
        /// A proven lower bound of how many were needed, counted by the device (not the whole
        /// count: the step stops counting soon after a buffer overflows).
        at_least: usize,
        /// How many the buffer (or one binding of the device) holds.
        capacity: usize,
    },
    /// The CPU step's candidates and contacts outgrew its limit on their memory
    /// ([`ContactFinder::with_max_output_bytes`](crate::cpu::ContactFinder::with_max_output_bytes),
    /// [`DEFAULT_MAX_OUTPUT_BYTES`](crate::cpu::ContactFinder::DEFAULT_MAX_OUTPUT_BYTES) by default). The
    /// step stopped soon after the limit was passed; the finder stays usable.
    #[error(
        "the output of one step needs at least {at_least_bytes} bytes (at least {at_least} {what} found before it stopped), above the limit of {limit_bytes} bytes; take shorter steps or split the world (every pair of bodies that all overlap is a contact), or raise the limit with ContactFinder::with_max_output_bytes if the memory is there"
    )]
    OutputLimit {
        /// What passed the limit: the candidates alone, or the contacts added to them.
        what: Counted,
        /// A proven lower bound of how many the step needed (found before it stopped).
        at_least: usize,
        /// A proven lower bound of the bytes the step's output needed, as the limit counts
        /// them ([`OUTPUT_BYTES_PER_CANDIDATE`](crate::cpu::ContactFinder::OUTPUT_BYTES_PER_CANDIDATE) a
        /// candidate and [`OUTPUT_BYTES_PER_CONTACT`](crate::cpu::ContactFinder::OUTPUT_BYTES_PER_CONTACT) a
        /// contact).
        at_least_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// A caller's buffer handed to a GPU stage lacks a usage the stage needs or is not a
    /// multiple of its element size.
    #[error("buffer {name}: {reason}")]
    InvalidBuffer {
        /// Which binding (`bodies`, `pairs`, `impacts`, `count`).
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// [`Bricks`](crate::bricks::Bricks) that cannot be made: a count of 0, more than 2³²
    /// bricks, or an axis cut into two or more whose bounds are not finite with lower below
    /// upper.
    #[error("bricks, axis {axis}: {reason}")]
    InvalidBricks {
        /// The axis (0, 1, 2 for x, y, z).
        axis: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A halo wider than half a brick on an axis cut into two or more bricks (or not a
    /// finite width of 0 or more): a body's partners could then lie beyond the neighbouring
    /// bricks (see [`bricks`](crate::bricks)).
    #[error(
        "the halo width {width} (twice the step's largest radius + |displacement|, with a margin) is more than half a brick ({half_brick}) along axis {axis}; use fewer, wider bricks along it, or shorter steps"
    )]
    ReachTooLarge {
        /// The axis (0, 1, 2 for x, y, z).
        axis: usize,
        /// The halo's width.
        width: f64,
        /// Half the brick's width along the axis.
        half_brick: f64,
    },
    /// Bodies given to a [`BrickStep`](crate::bricks::BrickStep) that it cannot take: global
    /// indices not one a body, a global index owned twice, or one global index given to two
    /// different bodies (copies that differ in bits or groups); in `sweepcast-mpi`, also a
    /// rank's body whose centre another rank's brick owns, or carried values not one a body.
    #[error("a brick's bodies: {reason}")]
    BrickBodies {
        /// What is wrong.
        reason: &'static str,
    },
    /// Collision groups ([`CollisionGroups`](crate::CollisionGroups)) given for a step whose
    /// length is neither 0 (every pair interacts) nor the number of its bodies.
    #[error(
        "{groups} collision groups for {bodies} bodies; give one a body, or none for every pair to interact"
    )]
    GroupsLength {
        /// Groups given.
        groups: usize,
        /// Bodies of the step.
        bodies: usize,
    },
    /// Bodies given as one array per field (structure of arrays) whose arrays differ in
    /// length: `field` has `len` values for the `bodies` centres.
    #[error(
        "{len} values of {field} for {bodies} bodies (one a centre); give every field one value a body"
    )]
    FieldLength {
        /// The field whose array is of the wrong length.
        field: BodyField,
        /// Its length.
        len: usize,
        /// The number of centres.
        bodies: usize,
    },
    /// More bodies than one storage binding of this device can hold (pairs are split into
    /// chunks transparently, bodies cannot be: any pair may name any body).
    #[error(
        "{count} bodies exceed this device's limit of {max} per batch (max_storage_buffer_binding_size); split the world into batches of at most {max} bodies"
    )]
    TooManyBodies {
        /// Bodies given.
        count: usize,
        /// The most this device accepts in one batch.
        max: usize,
    },
    /// No adapter matched the request, or none exists.
    #[error(
        "no GPU adapter found ({reason}): install a Vulkan or GL driver (on Debian/Ubuntu `apt-get install mesa-vulkan-drivers` gives the lavapipe software adapter; Mesa's llvmpipe serves WGPU_BACKEND=gl), or unset WGPU_BACKEND/WGPU_ADAPTER_NAME if they exclude every adapter"
    )]
    NoAdapter {
        /// What wgpu reported, with the backends and adapter name asked for.
        reason: String,
    },
    /// The adapter lacks something the sweep pipeline needs (e.g. compute shaders on old GL).
    #[error(
        "adapter {adapter} cannot run compute shaders: {reason}; choose another with WGPU_BACKEND or WGPU_ADAPTER_NAME"
    )]
    UnsupportedAdapter {
        /// Adapter name.
        adapter: String,
        /// What is missing.
        reason: String,
    },
    /// The device's limits are below what the step's stages need
    /// ([`StepStage::required_limits`](crate::low_level::StepStage::required_limits)): create the
    /// device asking for them.
    #[error(
        "the device's {limit} is {available}, below the {required} the GPU step needs: request a device with sweepcast::low_level::StepStage::required_limits()"
    )]
    DeviceLimit {
        /// The `wgpu::Limits` field.
        limit: &'static str,
        /// What the stages need.
        required: u64,
        /// What the device has.
        available: u64,
    },
    /// The device could not be created. The source is wgpu's error (a
    /// `wgpu::RequestDeviceError`, reached by downcasting it), held boxed so that no wgpu
    /// type is part of this error's API.
    #[error("could not create a device on the adapter: {0}")]
    RequestDevice(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The device rejected an operation (validation, an internal error) or was lost.
    #[error("the GPU device reported an error: {0}; if it was lost, create a new GpuContext")]
    Device(String),
    /// The device could not back a buffer of the call (wgpu's out-of-memory error: its memory,
    /// or the host's where the device's is the host's, is taken). Nothing of the call is
    /// returned; the pipeline or stage that reported it drops what it had made and works
    /// again once memory is free. The message is wgpu's.
    #[error(
        "the GPU device is out of memory: {0}; free device memory (other buffers, other processes) or pass fewer bodies or pairs per call, and call again"
    )]
    OutOfDeviceMemory(String),
    /// Mapping a buffer (to upload input or read results back), or waiting for the GPU,
    /// failed.
    #[error("mapping a GPU buffer or waiting for the GPU failed: {0}")]
    Mapping(String),
    /// One wait for the GPU (for a dispatch's results, or for an upload buffer to be free)
    /// took longer than the pipeline's poll timeout (see
    /// [`SweepPipeline::with_poll_timeout`](crate::gpu::SweepPipeline::with_poll_timeout)).
    /// Nothing of the call is returned; the work already submitted still runs to completion
    /// and the pipeline stays usable: the next call waits for it before its own.
    #[error(
        "the GPU did not finish within the poll timeout (waited {waited:?}); the device may be hung or the batch too large for it: retry, raise the timeout with SweepPipeline::with_poll_timeout, or split the batch"
    )]
    Timeout {
        /// How long the wait lasted before it gave up (at least the timeout).
        waited: std::time::Duration,
    },
}

impl Error {
    /// The error with the body it names (if it names one) renumbered by `rename`: a brick's
    /// step sweeps its bodies in another order than its caller gave them, and names a body
    /// by the caller's global index.
    pub(crate) fn renumber_body(mut self, rename: impl Fn(usize) -> usize) -> Self {
        if let Error::NonFinite { body, .. }
        | Error::TooLarge { body, .. }
        | Error::NegativeRadius { body, .. }
        | Error::PeriodicBoxTooSmall { body, .. }
        | Error::OutsidePeriodicBox { body, .. }
        | Error::InvalidMass { body, .. }
        | Error::OutOfRange { body, .. }
        | Error::SkinTooThin { body, .. }
        | Error::InvalidResponse { body, .. } = &mut self
        {
            *body = rename(*body);
        }
        self
    }
}
