//! Shared by the tests: for the GPU tests (with the `gpu` feature), get a context, or skip
//! loudly (fail with SWEEPCAST_REQUIRE_GPU=1); walls, judges and child processes for all.

mod isolated;
pub mod options;

#[cfg(feature = "gpu")]
use std::sync::OnceLock;

#[cfg(feature = "gpu")]
use sweepcast::gpu::{GpuContext, SweepPipeline};
#[cfg(feature = "gpu")]
use sweepcast::low_level::layout::{StepParams, WORKGROUP_SIZE};
#[cfg(feature = "gpu")]
use wgpu::BufferUsages as Usage;
#[cfg(feature = "gpu")]
use wgpu::util::DeviceExt;

use glam::{DVec3, Vec2, Vec3};
use sweepcast::reference::{self, Body};
use sweepcast::{MovingSphere, SweepOptions, Wall};

#[allow(unused_imports)]
pub use isolated::{CASE_VARIABLE, Outcome, isolated, isolated_case, run_isolated};

/// The counts and capacities a pass that prepares an indirect dispatch is tried on: empty,
/// below, at and past the capacity, and exactly 65,536 workgroups of 64 (one past a
/// dispatch dimension) and more.
#[allow(dead_code)]
pub const COUNTS_AND_CAPACITIES: [(u32, u32); 7] = [
    (0, 10),
    (1, 10),
    (64, 64),
    (65, 1000),
    (900, 800),
    (4_194_304, 5_000_000),
    (5_000_000, 6_000_000),
];

/// The context every GPU test uses, or `None` (after a loud message) when no adapter exists
/// and `SWEEPCAST_REQUIRE_GPU` is not `1`.
#[cfg(feature = "gpu")]
#[allow(dead_code)]
pub fn gpu_context(test: &str) -> Option<GpuContext> {
    match GpuContext::new_blocking() {
        Ok(context) => {
            eprintln!("{test}: running on {}", context.describe());
            Some(context)
        }
        Err(error) => {
            skip_without_gpu(test, &error);
            None
        }
    }
}

/// Says loudly that `test` is skipped for want of an adapter (`error`), or fails it where
/// `SWEEPCAST_REQUIRE_GPU` is `1`.
#[allow(dead_code)]
pub fn skip_without_gpu(test: &str, error: &dyn std::fmt::Display) {
    if std::env::var("SWEEPCAST_REQUIRE_GPU").as_deref() == Ok("1") {
        panic!("{test}: SWEEPCAST_REQUIRE_GPU=1 but {error}");
    }
    eprintln!(
        "\n!!!!!!!! SKIPPED {test}: {error}\n!!!!!!!! GPU parity is NOT tested on this machine; set SWEEPCAST_REQUIRE_GPU=1 to make this a failure\n"
    );
}

/// Whether the adapter is lavapipe (Mesa's software Vulkan adapter: Vulkan and a CPU device
/// type). It is the one adapter measured to round every f32 operation of the shaders as the
/// CPU twins do, so the tests hold it to its twin to the bit; nothing in WGSL promises that
/// elsewhere: llvmpipe through GL does not round division and square root correctly, and a
/// real GPU may also fuse multiply-adds and flush subnormals (an NVIDIA H200 through Vulkan:
/// times 1 to 2 ulps apart on a few per cent of the bodies), so there the tests judge by the
/// parity bound. It is also slow enough that a million pairs cannot finish before a wait.
#[cfg(feature = "gpu")]
#[allow(dead_code)]
pub fn lavapipe(info: &wgpu::AdapterInfo) -> bool {
    info.backend == wgpu::Backend::Vulkan && info.device_type == wgpu::DeviceType::Cpu
}

/// One context and pipeline shared by every test of a binary, or `None` (loudly, for each
/// `test` that asks) when no adapter exists and `SWEEPCAST_REQUIRE_GPU` is not `1`.
#[cfg(feature = "gpu")]
#[allow(dead_code)]
pub fn shared_pipeline(test: &str) -> Option<&'static SweepPipeline> {
    static GPU: OnceLock<Option<(GpuContext, SweepPipeline)>> = OnceLock::new();
    let gpu = GPU.get_or_init(|| {
        gpu_context(test).map(|context| {
            let pipeline = SweepPipeline::new(&context).unwrap();
            (context, pipeline)
        })
    });
    if gpu.is_none() {
        eprintln!("!!!!!!!! SKIPPED the GPU part of {test}: no GPU adapter (see above)");
    }
    gpu.as_ref().map(|(_, pipeline)| pipeline)
}

/// Maps a `MAP_READ` buffer after the work submitted to `device` so far and copies it out.
#[cfg(feature = "gpu")]
#[allow(dead_code)]
pub fn read_mapped(device: &wgpu::Device, buffer: &wgpu::Buffer) -> Vec<u8> {
    let slice = buffer.slice(..);
    let (sender, receiver) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |result| {
        sender.send(result).unwrap();
    });
    // GL ends one wait after about 2.1 s whatever was asked: wait again.
    loop {
        match device.poll(wgpu::PollType::wait_indefinitely()) {
            Ok(_) => break,
            Err(wgpu::PollError::Timeout) => continue,
            Err(error) => panic!("waiting for the device: {error}"),
        }
    }
    receiver.recv().unwrap().expect("the readback maps");
    let bytes = slice.get_mapped_range().expect("mapped").to_vec();
    buffer.unmap();
    bytes
}

/// What a stage's outputs hold before it runs.
#[cfg(feature = "gpu")]
#[allow(dead_code)]
pub const UNWRITTEN: u8 = 0xab;

/// A stage file's module on the device, to run one entry point at a time beside its twin.
#[cfg(feature = "gpu")]
#[allow(dead_code)]
pub struct StageRunner<'a> {
    context: &'a GpuContext,
    module: wgpu::ShaderModule,
}

#[cfg(feature = "gpu")]
#[allow(dead_code)]
impl<'a> StageRunner<'a> {
    /// The module of `source` (a stage file after the contract), labelled `label`.
    pub fn new(context: &'a GpuContext, label: &str, source: &str) -> Self {
        let module = context
            .device()
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
        Self { context, module }
    }

    /// Runs `entry` for `invocations` invocations with `params` at binding 0 (for an entry
    /// point that reads them) and each of `bindings` (binding, contents) as a storage buffer;
    /// returns every binding's contents afterwards, in the order given.
    pub fn run(
        &self,
        entry: &str,
        params: Option<&StepParams>,
        invocations: usize,
        bindings: &[(u32, &[u8])],
    ) -> Vec<Vec<u8>> {
        let workgroups = invocations.div_ceil(WORKGROUP_SIZE as usize).max(1);
        self.run_workgroups(entry, params, [workgroups as u32, 1, 1], bindings)
    }

    /// [`StageRunner::run`] over `workgroups` (x, y, z), as an indirect dispatch with a y
    /// dimension runs them.
    pub fn run_workgroups(
        &self,
        entry: &str,
        params: Option<&StepParams>,
        workgroups: [u32; 3],
        bindings: &[(u32, &[u8])],
    ) -> Vec<Vec<u8>> {
        let uniforms: Vec<(u32, &[u8])> = params
            .map(|params| (0, bytemuck::bytes_of(params)))
            .into_iter()
            .collect();
        self.run_with_uniforms(entry, &uniforms, workgroups, bindings)
    }

    /// [`StageRunner::run_workgroups`] with each of `uniforms` (binding, contents) as a
    /// uniform buffer, for a stage file whose uniforms are not `StepParams` at binding 0
    /// (`grid.wgsl`'s are at 3, 40 and 41); returns the storage bindings' contents afterwards,
    /// in the order given.
    pub fn run_with_uniforms(
        &self,
        entry: &str,
        uniforms: &[(u32, &[u8])],
        workgroups: [u32; 3],
        bindings: &[(u32, &[u8])],
    ) -> Vec<Vec<u8>> {
        let device = self.context.device();
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: None,
            module: &self.module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: None,
        });
        let uniform_buffers: Vec<wgpu::Buffer> = uniforms
            .iter()
            .map(|(binding, contents)| {
                device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(&format!("{entry} uniform {binding}")),
                    contents,
                    usage: Usage::UNIFORM,
                })
            })
            .collect();
        let buffers: Vec<wgpu::Buffer> = bindings
            .iter()
            .map(|(binding, contents)| {
                device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(&format!("{entry} binding {binding}")),
                    contents,
                    usage: Usage::STORAGE | Usage::COPY_SRC,
                })
            })
            .collect();
        let mut entries: Vec<wgpu::BindGroupEntry> = uniforms
            .iter()
            .zip(&uniform_buffers)
            .map(|((binding, _), buffer)| wgpu::BindGroupEntry {
                binding: *binding,
                resource: buffer.as_entire_binding(),
            })
            .collect();
        entries.extend(bindings.iter().zip(&buffers).map(|((binding, _), buffer)| {
            wgpu::BindGroupEntry {
                binding: *binding,
                resource: buffer.as_entire_binding(),
            }
        }));
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(entry),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
        }
        let staging: Vec<wgpu::Buffer> = buffers
            .iter()
            .map(|buffer| {
                let copy = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("readback"),
                    size: buffer.size(),
                    usage: Usage::MAP_READ | Usage::COPY_DST,
                    mapped_at_creation: false,
                });
                encoder.copy_buffer_to_buffer(buffer, 0, &copy, 0, buffer.size());
                copy
            })
            .collect();
        self.context.queue().submit([encoder.finish()]);
        staging
            .iter()
            .map(|buffer| read_mapped(self.context.device(), buffer))
            .collect()
    }
}

/// `count` elements of `T`'s size, every byte [`UNWRITTEN`].
#[cfg(feature = "gpu")]
#[allow(dead_code)]
pub fn unwritten<T>(count: usize) -> Vec<u8> {
    vec![UNWRITTEN; (count * size_of::<T>()).max(4)]
}

/// `bytes` as `T`s (copied, so that alignment does not matter), the first `count`.
#[cfg(feature = "gpu")]
#[allow(dead_code)]
pub fn cast<T: bytemuck::Pod>(bytes: &[u8], count: usize) -> Vec<T> {
    bytemuck::pod_collect_to_vec(&bytes[..count * size_of::<T>()])
}

/// A twin output that starts as the device's does: every byte [`UNWRITTEN`].
#[cfg(feature = "gpu")]
#[allow(dead_code)]
pub fn unwritten_twin<T: bytemuck::Pod>(count: usize) -> Vec<T> {
    bytemuck::pod_collect_to_vec(&vec![UNWRITTEN; count * size_of::<T>()])
}

/// Whether two bodies' swept spheres can meet: per axis, their centres (through the nearest
/// image where `sweep` has a periodic box) lie within both radii and both displacements,
/// with a margin for rounding. Every pair a sweep finds a hit (or an overlap) passes.
#[cfg(feature = "gpu")]
#[allow(dead_code)]
pub fn may_meet(
    first: &sweepcast::low_level::layout::BodyRecord,
    second: &sweepcast::low_level::layout::BodyRecord,
    sweep: &sweepcast::low_level::layout::SweepParams,
) -> bool {
    (0..3).all(|k| {
        let mut d = second.center[k] - first.center[k];
        if sweep.flags & sweepcast::low_level::layout::FLAG_PERIODIC != 0 {
            d -= sweep.period[k] * (d * sweep.inverse_period[k]).round();
        }
        let reach = first.radius
            + second.radius
            + first.displacement[k].abs()
            + second.displacement[k].abs();
        d.abs() <= reach * 1.001 + 1e-6
    })
}

/// Walls for a scene of `bodies` in `dimensions` (2 or 3): the box (rectangle) a little inside
/// the bodies' centres, and a few segments through the scene.
#[allow(dead_code)]
pub fn walls_through(bodies: &[MovingSphere], dimensions: u32) -> Vec<Wall> {
    let (lo, hi) = bodies.iter().fold((Vec3::MAX, Vec3::MIN), |(lo, hi), b| {
        (lo.min(b.center), hi.max(b.center))
    });
    let (lo, hi) = (lo + (hi - lo) * 0.1, hi - (hi - lo) * 0.1);
    let mut walls = if dimensions == 2 {
        Wall::rectangle_interior(lo.truncate(), hi.truncate()).to_vec()
    } else {
        Wall::box_interior(lo, hi).to_vec()
    };
    let middle = (lo + hi) * 0.5;
    walls.push(Wall::segment(middle.truncate(), hi.truncate()));
    walls.push(Wall::segment(Vec2::new(lo.x, hi.y), middle.truncate()));
    walls.push(Wall::segment_3d(lo, middle));
    walls
}

// The walls' judge, shared by `tests/walls.rs` and `tests/gpu_contacts.rs`.

/// The squared distance from `point` to `wall` in f64, exactly as far as f64 goes (for a
/// plane, its height above it, squared, negative behind it).
#[allow(dead_code)]
pub fn distance_squared_to(point: DVec3, wall: &Wall) -> f64 {
    match *wall {
        Wall::Plane { point: on, normal } => {
            let height = normal.as_dvec3().normalize().dot(point - on.as_dvec3());
            height * height.abs()
        }
        Wall::Segment { start, end } => {
            let (start, edge) = (start.as_dvec3(), (end - start).as_dvec3());
            let along = if edge.length_squared() > 0.0 {
                (edge.dot(point - start) / edge.length_squared()).clamp(0.0, 1.0)
            } else {
                0.0
            };
            (start + edge * along - point).length_squared()
        }
    }
}

/// The scale of a body and a wall: the largest component of the wall's points relative to
/// the body's centre, of its displacement, and its radius (what the f32 path rescales by).
#[allow(dead_code)]
pub fn scale_of(body: &MovingSphere, wall: &Wall) -> f64 {
    image_scale_of(body, DVec3::ZERO, wall)
}

/// [`scale_of`] the body's image whose centre is `shift` from the body's: in a periodic box,
/// the f32 path forms the offsets between an image and a wall before it moves anything
/// (`image_offset`), so that they round as the image's own would in open space.
fn image_scale_of(body: &MovingSphere, shift: DVec3, wall: &Wall) -> f64 {
    let center = body.center.as_dvec3() - shift;
    let largest = |v: DVec3| v.abs().max_element();
    let (first, second) = match *wall {
        Wall::Segment { start, end } => (start.as_dvec3() - center, end.as_dvec3() - center),
        Wall::Plane { point, .. } => (center - point.as_dvec3(), DVec3::ZERO),
    };
    largest(first)
        .max(largest(second))
        .max(f64::from(body.displacement.abs().max_element()))
        .max(f64::from(body.radius))
}

/// The shifts (whole periods per axis that wraps) that put `body`'s centre at time `t` in
/// the primary cell of the options' periodic box, or within rounding of it: within
/// [`FACE_TOLERANCE`] of a period, as an image a hair across a face is as good as the one
/// just inside. Without a box, no shift.
fn images_at(body: &MovingSphere, options: &SweepOptions, t: f64) -> Vec<DVec3> {
    let Some(periodic_box) = &options.periodic_box else {
        return vec![DVec3::ZERO];
    };
    let center = body.center.as_dvec3() + body.displacement.as_dvec3() * t;
    let per_axis: Vec<Vec<f64>> = (0..3)
        .map(|axis| {
            if !periodic_box.period()[axis].is_finite() {
                return vec![0.0];
            }
            let period = f64::from(periodic_box.period()[axis]);
            let tolerance = period * FACE_TOLERANCE;
            let image = (center[axis] / period).floor();
            [image - 1.0, image, image + 1.0]
                .map(|image| image * period)
                .into_iter()
                .filter(|shift| {
                    let inside = center[axis] - shift;
                    (-tolerance..=period + tolerance).contains(&inside)
                })
                .collect()
        })
        .collect();
    let mut shifts = Vec::new();
    for &x in &per_axis[0] {
        for &y in &per_axis[1] {
            for &z in &per_axis[2] {
                shifts.push(DVec3::new(x, y, z));
            }
        }
    }
    shifts
}

/// How far across a face of a periodic box's cell, in periods, an image's centre may be
/// and still count as in the cell: 2⁻¹⁹, 32 ε (ε = 2⁻²⁴). The f32 path places an image by
/// its crossing times, which round (ε of the displacement, below a quarter period), and by
/// its wrap of the centre into the cell (exact for a centre in [0, 2 L)).
const FACE_TOLERANCE: f64 = 1.0 / 524_288.0;

/// The backward-error bound of the walls' f32 path, in units of ε s² (ε = 2⁻²⁴, s the
/// [`scale_of`] the case): at the reported time, the exact squared distance from the centre
/// to the wall is within this of r². The pair sweep's bound is 8 (see `sweepcast::parity`);
/// a wall's side adds the projection across the edge (a quotient, a product and a difference
/// a component, three roundings of s), a plane its unit normal's rounding (about one ε) and
/// the product with it, which together at most double it. 32 leaves a margin the test prints.
///
/// In a periodic box, s is the scale of the image that touched ([`image_scale_of`]): the
/// piece of the step it is swept on starts from offsets formed exactly (`image_offset`) and
/// moved by the displacement up to the piece's start (one rounding of at most s), and its
/// time is mapped back to the step (two roundings of the time, each at most ε s² in the
/// squared distance at contact): within the same bound.
#[allow(dead_code)]
pub const WALL_BOUND: f64 = 32.0;

/// How far the f32 path's time may lie outside the oracle's times with the squared radius
/// moved by the bound, in units of ε: the rounding of the time itself (a quotient, 2.5 ulps
/// on a GPU, and in a periodic box the piece's start plus the time along it, one each),
/// which the bound on the squared distance does not see at a body small beside its scale.
const TIME_SLACK: f64 = 8.0;

/// What [`judge_wall`] saw of an answer it passed.
#[allow(dead_code)]
pub struct WallVerdict {
    /// A hit's backward error in units of ε s² (s the scale of the image that touched), or
    /// `None` for a miss or a body reported where it overlaps the wall (at t = 0, or where
    /// its image enters the cell).
    pub backward_error: Option<f64>,
    /// Whether the oracle on the body as given says the opposite (hit or miss): allowed only
    /// within the bound.
    pub disagrees: bool,
}

/// The judge of an f32 answer `time` (or a miss) of `body` against `wall`: a hit must put the
/// centre (in a periodic box, its image in the primary cell then) within [`WALL_BOUND`] of
/// touching the wall, or overlapping it at t = 0 or where the image has just entered the
/// cell; the oracle's times with the squared radius moved by the bound must bracket it (so
/// that it is the first touch, not a later one); a hit or miss that the oracle contradicts
/// passes only where the oracle with the squared radius moved by the bound agrees. In a
/// periodic box the oracle's bound is that of the largest scale of the images the body takes
/// in the step (the oracle does not say which touched).
///
/// # Errors
/// Why the answer fails.
#[allow(dead_code)]
pub fn judge_wall(
    body: &MovingSphere,
    wall: &Wall,
    options: &SweepOptions,
    time: Option<f32>,
) -> Result<WallVerdict, &'static str> {
    let epsilon = f64::from(f32::EPSILON) / 2.0;
    let bound_at = |scale: f64| WALL_BOUND * epsilon * scale * scale;
    let radius_squared = f64::from(body.radius).powi(2);
    // The oracle with the squared radius moved by `extra`. Below 0 it is a condition no
    // point of a segment meets (its squared distance is never negative), while a plane's
    // signed one (negative behind it) meets it that far behind the plane: a radius of that
    // sign, which the oracle's plane takes as it is (`height <= r`).
    let oracle_with = |extra: f64| {
        let squared = radius_squared + extra;
        let mut widened = Body::from(*body);
        widened.radius = match wall {
            Wall::Segment { .. } if squared < 0.0 => return None,
            Wall::Segment { .. } => squared.sqrt(),
            Wall::Plane { .. } => squared.signum() * squared.abs().sqrt(),
        };
        reference::sweep_sphere_wall(&widened, wall, *options)
    };
    let widest = images_at(body, options, 0.0)
        .into_iter()
        .chain(images_at(body, options, 1.0))
        .map(|shift| image_scale_of(body, shift, wall))
        .fold(0.0, f64::max);
    let bound = bound_at(widest);
    let disagrees = reference::sweep_sphere_wall(&Body::from(*body), wall, *options).is_some()
        != time.is_some();
    let Some(t) = time else {
        if oracle_with(-bound).is_some() {
            return Err(
                "a miss where the oracle with the squared radius smaller by the bound hits",
            );
        }
        return Ok(WallVerdict {
            backward_error: None,
            disagrees,
        });
    };
    let t = f64::from(t);
    let mut accepted = false;
    let mut backward_error: Option<f64> = None;
    for shift in images_at(body, options, t) {
        let scale = image_scale_of(body, shift, wall);
        let center = body.center.as_dvec3() - shift + body.displacement.as_dvec3() * t;
        let gap = distance_squared_to(center, wall) - radius_squared;
        // Where the image has just entered the cell through a face.
        let on_face = options.periodic_box.is_some_and(|periodic_box| {
            (0..3)
                .filter(|&axis| periodic_box.period()[axis].is_finite())
                .any(|axis| {
                    let period = f64::from(periodic_box.period()[axis]);
                    let tolerance = period * FACE_TOLERANCE;
                    center[axis].abs() <= tolerance || (center[axis] - period).abs() <= tolerance
                })
        });
        if gap <= bound_at(scale) && (t == 0.0 || on_face) && gap < 0.0 {
            // Overlapping where the body starts, or where the image enters the cell.
            accepted = true;
        } else if gap.abs() <= bound_at(scale) {
            accepted = true;
            let error = gap.abs() / (epsilon * scale * scale);
            backward_error = Some(backward_error.map_or(error, |best| best.min(error)));
        }
    }
    if !accepted {
        return Err("the time is beyond the bound of touching on every image in the cell then");
    }
    let slack = TIME_SLACK * epsilon;
    match oracle_with(bound) {
        None => {
            return Err(
                "a hit where the oracle with the squared radius larger by the bound misses",
            );
        }
        Some(early) if t < early.time_of_impact - slack => {
            return Err("a hit before the oracle's with the squared radius larger by the bound");
        }
        Some(_) => {}
    }
    if let Some(late) = oracle_with(-bound)
        && t > late.time_of_impact + slack
    {
        return Err("a hit after the oracle's with the squared radius smaller by the bound");
    }
    Ok(WallVerdict {
        backward_error,
        disagrees,
    })
}

/// Whether the f32 answer `time` (or a miss) of `body` against `wall` passes [`judge_wall`].
#[allow(dead_code)]
pub fn passes_judge(
    body: &MovingSphere,
    wall: &Wall,
    time: Option<f32>,
    options: &SweepOptions,
) -> bool {
    judge_wall(body, wall, options, time).is_ok()
}

/// Where a path's earliest wall of `body` (`ours`: the wall and time, or a miss) is not
/// another's (`theirs`), whether the difference is one the judge allows: ours passes the
/// judge on the wall it names; a hit on another wall only at the same time within 10⁻⁵
/// (a near tie); a miss only where their hit is within the bound of grazing.
#[allow(dead_code)]
pub fn judge_earliest_wall(
    body: &MovingSphere,
    walls: &[Wall],
    options: &SweepOptions,
    ours: Option<(u32, f32)>,
    theirs: Option<(u32, f32)>,
) -> Result<(), &'static str> {
    match (ours, theirs) {
        (Some((w, t)), theirs) => {
            if !passes_judge(body, &walls[w as usize], Some(t), options) {
                return Err("the time is beyond the bound on its wall");
            }
            if let Some((v, s)) = theirs
                && v != w
                && (t - s).abs() > 1e-5 * t.max(s).max(1e-3)
            {
                return Err("another wall, not at the same time");
            }
            Ok(())
        }
        (None, Some((v, _))) if passes_judge(body, &walls[v as usize], None, options) => Ok(()),
        (None, Some(_)) => Err("a miss where the other path's hit is beyond the bound"),
        (None, None) => Err("two misses that differ"),
    }
}

/// A world with each body's collision groups: a name, the bodies, the options, the groups.
#[allow(dead_code)]
pub type GroupedWorld = (
    String,
    Vec<MovingSphere>,
    SweepOptions,
    Vec<sweepcast::CollisionGroups>,
);

/// Every event of `steps` steps of 0.05 of `bodies` with `events`, `broad_phase` and perfectly
/// elastic collisions, without walls.
#[allow(dead_code)]
pub fn run_steps(
    events: &mut sweepcast::events::EventLoop,
    bodies: &mut [sweepcast::events::EventBody],
    steps: usize,
    broad_phase: &mut impl sweepcast::events::BroadPhase,
) -> Vec<sweepcast::events::Event> {
    let mut seen = Vec::new();
    for _ in 0..steps {
        events
            .advance_with(
                bodies,
                &[],
                0.05,
                &mut sweepcast::events::Elastic::perfect(),
                broad_phase,
                |event, _| seen.push(*event),
            )
            .unwrap();
    }
    seen
}

/// The pairs of `events`, which must all be between bodies.
#[allow(dead_code)]
pub fn pairs_of(events: &[sweepcast::events::Event]) -> Vec<[usize; 2]> {
    events
        .iter()
        .map(|event| event.pair().expect("no walls here"))
        .collect()
}
