//! The walls stage: `shaders/walls.wgsl` recorded into the caller's command encoder, on
//! buffers the caller keeps: each body's earliest impact on a short list of static walls.
//! Its CPU twin is [`crate::low_level::walls`]; [`crate::cpu::earliest_wall_contacts`] gives the
//! same answers on the CPU.

use super::buffers::{ErrorScopes, create_buffer};
use super::buffers::{check_binding, largest_binding};
use super::kernel::{Access, Bindings, Kernel, Shader, Workgroups};
use crate::error::Error;
use crate::geometry::Wall;
use crate::layout::{
    BodyRecord, SweepDispatch, WallContactRecord, WallParams, WallRecord, bytes_of,
};
use crate::options::SweepOptions;

/// The WGSL source of the walls stage: `shaders/shared.wgsl` followed by `shaders/walls.wgsl`.
pub const WALLS_WGSL: &str = concat!(
    include_str!("../../shaders/shared.wgsl"),
    include_str!("../../shaders/walls.wgsl")
);

// walls.wgsl's bindings.
const BODIES: u32 = 0;
const WALLS: u32 = 1;
const CONTACTS: u32 = 2;
const PARAMS: u32 = 3;

use Access::{Read, Uniform, Write};
const MAIN: Bindings = &[
    (BODIES, Read),
    (WALLS, Read),
    (CONTACTS, Write),
    (PARAMS, Uniform),
];

/// walls.wgsl's entry point as the stage builds it.
pub(super) const WALLS_SHADER: Shader = Shader {
    file: "walls.wgsl",
    source: WALLS_WGSL,
    entry_points: &[("main", MAIN)],
};

/// Each body's earliest impact on any of a short list of static [`Wall`]s (segments and
/// planes), one invocation a body looping over the walls, as a stage that records into the
/// caller's [`wgpu::CommandEncoder`]: the caller submits, so it chains with the caller's own
/// passes, and nothing is read back unless the caller copies it.
///
/// # Buffers
/// Bodies as [`BodyRecord`](crate::low_level::layout::BodyRecord)s (32 bytes), walls as
/// [`WallRecord`]s (32 bytes; [`WallRecord::from`] a [`Wall`] normalises a plane's normal),
/// and one [`WallContactRecord`] a body written (48 bytes: the body against the wall it
/// meets first, the lowest wall index among equal times, or a record with
/// [`STATUS_MISS`](crate::low_level::layout::STATUS_MISS)). [`WallStage::create_buffers`] makes them
/// with a small uniform buffer and the bind group, kept in [`WallBuffers`].
///
/// # Example
/// ```no_run
/// use sweepcast::gpu::GpuContext;
/// use sweepcast::low_level::WallStage;
/// use sweepcast::low_level::layout::BodyRecord;
/// use sweepcast::{glam::Vec3, MovingSphere, SweepOptions, Wall};
///
/// let context = GpuContext::new_blocking()?;
/// let (device, queue) = (context.device(), context.queue());
/// let stage = WallStage::new(device)?;
/// let buffers = stage.create_buffers(device, 1, 6)?;
/// let body: BodyRecord = MovingSphere::new(Vec3::splat(5.0), 1.0, Vec3::new(8.0, 0.0, 0.0)).into();
/// queue.write_buffer(buffers.bodies(), 0, bytemuck::bytes_of(&body));
/// let room = Wall::box_interior(Vec3::ZERO, Vec3::splat(10.0));
/// buffers.write_walls(queue, &room)?;
/// let mut encoder = device.create_command_encoder(&Default::default());
/// stage.record(queue, &mut encoder, &buffers, 1, room.len() as u32, SweepOptions::default())?;
/// // ... a copy of buffers.contacts() to a MAP_READ buffer to read the records back ...
/// queue.submit([encoder.finish()]);
/// # Ok::<(), sweepcast::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct WallStage {
    main: Kernel,
    /// The largest storage binding of the device, in bytes.
    largest_binding: u64,
}

/// The buffers of one [`WallStage`]: bodies, walls, the contacts it writes, its uniform and
/// the bind group over them. Cheap to clone (wgpu handles are reference counted).
#[derive(Debug, Clone)]
pub struct WallBuffers {
    bodies: wgpu::Buffer,
    walls: wgpu::Buffer,
    contacts: wgpu::Buffer,
    params: wgpu::Buffer,
    group: wgpu::BindGroup,
    body_capacity: u64,
    wall_capacity: u64,
}

impl WallStage {
    /// Compiles the stage's shader on `device` (the caller's own, or a
    /// [`GpuContext`](super::GpuContext)'s).
    ///
    /// # Errors
    /// [`Error::Device`] when the device rejects the shader or the pipeline.
    pub fn new(device: &wgpu::Device) -> Result<Self, Error> {
        let scopes = ErrorScopes::push(device);
        let module = WALLS_SHADER.module(device);
        let stage = Self {
            main: WALLS_SHADER.kernel(device, &module, "main"),
            largest_binding: largest_binding(device),
        };
        pollster::block_on(scopes.finish())?;
        Ok(stage)
    }

    /// The most bodies one dispatch holds: their contacts (48 bytes a body) fill one binding
    /// of this device.
    #[must_use]
    pub fn max_bodies(&self) -> u64 {
        self.largest_binding / bytes_of::<WallContactRecord>(1)
    }

    /// The most walls one binding of this device holds (each body loops over all of them:
    /// the stage is meant for a short list).
    #[must_use]
    pub fn max_walls(&self) -> u64 {
        self.largest_binding / bytes_of::<WallRecord>(1)
    }

    /// Creates buffers for `body_capacity` bodies and `wall_capacity` walls (at least one
    /// each) and binds them. Usages: bodies and walls `STORAGE | COPY_DST`, contacts
    /// `STORAGE | COPY_SRC`.
    ///
    /// # Errors
    /// [`Error::TooManyBodies`] beyond [`WallStage::max_bodies`], [`Error::InvalidWall`]
    /// beyond [`WallStage::max_walls`], [`Error::OutOfDeviceMemory`] when the device cannot
    /// back them, [`Error::Device`] when it fails to create them otherwise.
    pub fn create_buffers(
        &self,
        device: &wgpu::Device,
        body_capacity: u64,
        wall_capacity: u64,
    ) -> Result<WallBuffers, Error> {
        if body_capacity > self.max_bodies() {
            return Err(Error::TooManyBodies {
                count: body_capacity as usize,
                max: self.max_bodies() as usize,
            });
        }
        if wall_capacity > self.max_walls() {
            return Err(Error::InvalidWall {
                wall: wall_capacity as usize,
                reason: "more walls than one binding of this device holds; the walls stage is for a short list",
            });
        }
        use wgpu::BufferUsages as Usage;
        let scopes = ErrorScopes::push(device);
        let buffer = |label, size, usage| create_buffer(device, label, usage, size);
        let bodies = buffer(
            "walls bodies",
            bytes_of::<BodyRecord>(body_capacity.max(1)),
            Usage::STORAGE | Usage::COPY_DST,
        );
        let walls = buffer(
            "walls walls",
            bytes_of::<WallRecord>(wall_capacity.max(1)),
            Usage::STORAGE | Usage::COPY_DST,
        );
        let contacts = buffer(
            "walls contacts",
            bytes_of::<WallContactRecord>(body_capacity.max(1)),
            Usage::STORAGE | Usage::COPY_SRC,
        );
        pollster::block_on(scopes.finish())?;
        self.bind_buffers(device, &bodies, &walls, &contacts)
    }

    /// Binds the caller's own buffers: bodies as [`BodyRecord`](crate::low_level::layout::BodyRecord)s,
    /// walls as [`WallRecord`]s and contacts as [`WallContactRecord`]s, each with usage
    /// `STORAGE` (and `COPY_DST` on the walls for [`WallBuffers::write_walls`]). The
    /// capacity is what they hold: the smaller of `bodies.size() / 32` and
    /// `contacts.size() / 48` bodies, and `walls.size() / 32` walls.
    ///
    /// # Errors
    /// [`Error::InvalidBuffer`] when a buffer lacks `STORAGE`, is not a whole number (at
    /// least one) of its elements, or is larger than one binding of this device;
    /// [`Error::Device`] when the device rejects the bind group.
    pub fn bind_buffers(
        &self,
        device: &wgpu::Device,
        bodies: &wgpu::Buffer,
        walls: &wgpu::Buffer,
        contacts: &wgpu::Buffer,
    ) -> Result<WallBuffers, Error> {
        for (name, buffer, element_size) in [
            ("bodies", bodies, bytes_of::<BodyRecord>(1)),
            ("walls", walls, bytes_of::<WallRecord>(1)),
            ("wall contacts", contacts, bytes_of::<WallContactRecord>(1)),
        ] {
            check_binding(name, buffer, element_size, self.largest_binding)?;
        }
        use wgpu::BufferUsages as Usage;
        let scopes = ErrorScopes::push(device);
        let params = create_buffer(
            device,
            "walls params",
            Usage::UNIFORM | Usage::COPY_DST,
            bytes_of::<WallParams>(1),
        );
        let group = self.main.bind(device, |binding| match binding {
            BODIES => bodies,
            WALLS => walls,
            CONTACTS => contacts,
            PARAMS => &params,
            _ => unreachable!("no binding {binding} in walls.wgsl"),
        });
        pollster::block_on(scopes.finish())?;
        Ok(WallBuffers {
            body_capacity: (bodies.size() / bytes_of::<BodyRecord>(1))
                .min(contacts.size() / bytes_of::<WallContactRecord>(1)),
            wall_capacity: walls.size() / bytes_of::<WallRecord>(1),
            bodies: bodies.clone(),
            walls: walls.clone(),
            contacts: contacts.clone(),
            params,
            group,
        })
    }

    /// Records the first `wall_count` walls of `buffers` (written with
    /// [`WallBuffers::write_walls`], or by the caller's own copy) against its first
    /// `body_count` bodies: one [`WallContactRecord`] a body into [`WallBuffers::contacts`].
    /// The options reach the device through a queue write, which lands before the
    /// submission of `encoder`. In a periodic box the walls lie in its primary cell and a
    /// body meets a wall when its image in the cell does, as
    /// [`crate::cpu::sweep_sphere_wall`] says; the stage trusts the bodies to fit the box
    /// ([`crate::low_level::validate_periodic_reach`]: one crossing of a face an axis is followed).
    ///
    /// # Errors
    /// [`Error::TooManyBodies`] or [`Error::InvalidWall`] when `body_count` or
    /// `wall_count` is beyond the buffers' capacity.
    pub fn record(
        &self,
        queue: &wgpu::Queue,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &WallBuffers,
        body_count: u32,
        wall_count: u32,
        options: SweepOptions,
    ) -> Result<(), Error> {
        if u64::from(body_count) > buffers.body_capacity {
            return Err(Error::TooManyBodies {
                count: body_count as usize,
                max: buffers.body_capacity as usize,
            });
        }
        if u64::from(wall_count) > buffers.wall_capacity {
            return Err(too_many_walls(wall_count as usize));
        }
        buffers.write_params(queue, &options, body_count, wall_count);
        // The same workgroups as a sweep of `body_count` pairs (along y beyond 65,535).
        let shape = SweepDispatch::new(body_count);
        let workgroups = Workgroups::Direct(shape.workgroups_x, shape.workgroups_y);
        self.main.record(encoder, &buffers.group, workgroups);
        Ok(())
    }

    /// Records the stage on buffers whose parameters were written before
    /// ([`WallBuffers::write_params`]) for as many bodies as the `u32` at `offset` of `count`
    /// says (copied over the parameters' count in the encoder), dispatched from `workgroups`
    /// (the first three words: an indirect dispatch of that many bodies). Records no queue
    /// write, so that several steps recorded in one submission each take their own count.
    pub(super) fn record_counted(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &WallBuffers,
        count: (&wgpu::Buffer, u64),
        workgroups: &wgpu::Buffer,
    ) {
        let field = std::mem::offset_of!(WallParams, body_count) as u64;
        encoder.copy_buffer_to_buffer(count.0, count.1, &buffers.params, field, 4);
        self.main
            .record(encoder, &buffers.group, Workgroups::Indirect(workgroups));
    }
}

impl WallBuffers {
    /// Writes the stage's parameters: the options and the counts of bodies and walls.
    pub(super) fn write_params(
        &self,
        queue: &wgpu::Queue,
        options: &SweepOptions,
        body_count: u32,
        wall_count: u32,
    ) {
        let params = WallParams::new(options, body_count, wall_count);
        queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
    }

    /// Validates `walls` and writes them at the start of the walls buffer, for a
    /// [`WallStage::record`] of `walls.len()` walls.
    ///
    /// # Errors
    /// [`Error::InvalidWall`] for a bad wall ([`crate::low_level::validate_walls`]) or more walls than
    /// the buffers hold.
    pub fn write_walls(&self, queue: &wgpu::Queue, walls: &[Wall]) -> Result<(), Error> {
        crate::validate::validate_walls(walls)?;
        if walls.len() as u64 > self.wall_capacity {
            return Err(too_many_walls(walls.len()));
        }
        let records: Vec<WallRecord> = walls.iter().map(WallRecord::from).collect();
        if !records.is_empty() {
            queue.write_buffer(&self.walls, 0, bytemuck::cast_slice(&records));
        }
        Ok(())
    }

    /// The bodies, as [`BodyRecord`](crate::low_level::layout::BodyRecord)s (`STORAGE | COPY_DST`).
    #[must_use]
    pub fn bodies(&self) -> &wgpu::Buffer {
        &self.bodies
    }

    /// The walls, as [`WallRecord`]s (`STORAGE | COPY_DST`).
    #[must_use]
    pub fn walls(&self) -> &wgpu::Buffer {
        &self.walls
    }

    /// The contacts the stage writes, a [`WallContactRecord`] a body (`STORAGE | COPY_SRC`).
    #[must_use]
    pub fn contacts(&self) -> &wgpu::Buffer {
        &self.contacts
    }

    /// Bodies the buffers hold.
    #[must_use]
    pub fn body_capacity(&self) -> u64 {
        self.body_capacity
    }

    /// Walls the buffers hold.
    #[must_use]
    pub fn wall_capacity(&self) -> u64 {
        self.wall_capacity
    }
}

/// The error for `count` walls beyond what the buffers hold.
fn too_many_walls(count: usize) -> Error {
    Error::InvalidWall {
        wall: count,
        reason: "more walls than the stage's buffers hold; create them for more",
    }
}
