//! The Rust paths on NumPy files: what the Python binding's cross-checks (`python/tests/`)
//! and its overhead benchmark (`python/bench/overhead.py`) compare the binding with. They
//! write the binding's input as `.npy` files, run this program on them, and compare its
//! answers with the binding's bit for bit, or its time with the binding's side by side.
//!
//! ```text
//! cargo run --release --example arrays -- <command> <dir> [--repeats R]
//! ```
//!
//! Commands, and the files each reads from `<dir>` (float64 unless said otherwise; D = 2 or 3):
//!
//! - `find-contacts`: `centers.npy` (N, D), `radii.npy` (N,), `displacements.npy` (N, D);
//!   optional `periodic_box.npy` (D,) (inf where an axis does not wrap), `separating` (an
//!   empty file: a pair touching at t = 0 while moving apart is not a contact), `groups.npy`
//!   (N,) uint32 (`CollisionGroups::from_bits`). The CPU finder's contacts and each body's
//!   earliest impact. Writes `pairs` (K, 2) int64, `times` (K,) float32, `points` (K, D)
//!   float64, `normals` (K, D) float32, `status` (K,) uint8 (1 contact, 2 overlapping),
//!   `images` (K, D) int32, `earliest_time` (N,) float32 (inf for none), `earliest_partner`
//!   and `earliest_wall` (N,) int64 (-1 for none), `candidates` (1,) int64.
//! - `sweep`: the same bodies and options (no groups) and `pairs.npy` (K, 2) int64. The fast
//!   batch's times: `times` (K,) float32 (inf a miss, -1 an overlap at t = 0, else the time).
//! - `sweep-full`: as `sweep`, the full batch: `times` (K,) float32 (inf a miss), `status`
//!   (K,) uint8 (0 miss, 1, 2), `points` (K, D) float64 and `normals` (K, D) float32 (NaN for
//!   a miss).
//! - `events`: `positions.npy`, `velocities.npy` (N, D), `radii.npy`, `masses.npy` (N,),
//!   `dt.npy` (1,), `steps.npy` (1,) int64; optional `periodic_box.npy` (D,),
//!   `restitution.npy` (1,) (1 without it), `walls_planes.npy` (W, 2, D) (a point and a
//!   normal a wall). An event loop with the `Cells` broad phase advanced `steps` times by
//!   `dt`. Writes, one row an event: `times` (E,) float64 (from the start of its step, as
//!   `Event::time`), `steps_of` (E,) int64 (its step's index), `bodies`, `partners` (-1 for a
//!   wall) and `walls` (-1 for a pair) (E,) int64, `images` (E, D) int32, `points`, `normals`,
//!   `impulses` (E, D) float64; and the final `positions` and `velocities` (N, D) float64.
//!
//! The outputs go to `<dir>/out/` as `.npy` files of those names. In 2D the vectors written
//! are the first two components. `find-contacts` and `events` also print their counts
//! (`contacts K candidates C`, `events E`).
//!
//! The f32 paths take the bodies as the binding does (its documented rule):
//! `MovingSphere::from_f64_arrays_into` about a local origin that is, per axis, `0.5 * (min +
//! max)` of the centres' coordinates (0 where that is not finite), or zero in a periodic box
//! or without bodies; the points written are `f64::from(point) + origin`.
//!
//! `--repeats R`: once the outputs are written, the call is timed R more times (for the f32
//! paths the conversion from the arrays and the call, reusing the finder and the vectors as a
//! Rust caller would; for `events` one `advance` of `dt` of a fresh loop on a fresh copy of
//! the bodies, after an untimed step of no time as the binding's `EventLoop` takes when it is
//! made, the events collected into a vector), and the last line printed is
//! `median_seconds <median of the R>`.
//!
//! Exits 1 with the message on a library error (the `sweepcast::Error`) or bad input files, 2
//! on a bad command line. The `.npy` reader takes versions 1.0 and 2.0, little-endian, C
//! order, only the dtype each file is documented with.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use sweepcast::events::{Cells, Elastic, Event, EventBody, EventLoop};
use sweepcast::glam::DVec3;
use sweepcast::{
    CollisionGroups, Contacts, Impact, MovingSphere, Partner, PeriodicBox, SweepOptions,
    TimeOfImpact, Wall, cpu,
};

use npy::Array;

const USAGE: &str = "usage: arrays <find-contacts|sweep|sweep-full|events> <dir> [--repeats R]";

/// What stopped the program: the library's error, or bad input files.
enum Failure {
    Library(sweepcast::Error),
    Input(String),
}

impl From<sweepcast::Error> for Failure {
    fn from(error: sweepcast::Error) -> Self {
        Self::Library(error)
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Self::Input(message)
    }
}

type Result<T> = std::result::Result<T, Failure>;

#[derive(Copy, Clone, Debug, PartialEq)]
enum Command {
    FindContacts,
    Sweep,
    SweepFull,
    Events,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, dir, repeats) = match parse_args(&args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("{message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(command, &dir, repeats) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Library(error)) => {
            eprintln!("{error}");
            ExitCode::FAILURE
        }
        Err(Failure::Input(message)) => {
            eprintln!("bad input: {message}");
            ExitCode::FAILURE
        }
    }
}

fn parse_args(args: &[String]) -> std::result::Result<(Command, PathBuf, usize), String> {
    let [command, dir, rest @ ..] = args else {
        return Err("a command and a directory are needed".into());
    };
    let command = match command.as_str() {
        "find-contacts" => Command::FindContacts,
        "sweep" => Command::Sweep,
        "sweep-full" => Command::SweepFull,
        "events" => Command::Events,
        other => return Err(format!("unknown command {other:?}")),
    };
    let repeats = match rest {
        [] => 0,
        [flag, value] if flag == "--repeats" => value
            .parse()
            .map_err(|_| format!("cannot parse --repeats {value:?}"))?,
        _ => return Err(format!("bad options {rest:?}")),
    };
    Ok((command, PathBuf::from(dir), repeats))
}

/// Reads the file that tells the dimension and runs the command in it.
fn run(command: Command, dir: &Path, repeats: usize) -> Result<()> {
    let first = if command == Command::Events {
        "positions.npy"
    } else {
        "centers.npy"
    };
    let array: Array<f64> = npy::read(&dir.join(first))?;
    std::fs::create_dir_all(dir.join("out"))
        .map_err(|error| format!("cannot create {}: {error}", dir.join("out").display()))?;
    match array.shape.as_slice() {
        [_, 2] => run_in::<2>(command, dir, array, repeats),
        [_, 3] => run_in::<3>(command, dir, array, repeats),
        shape => Err(format!("{first}: shape {shape:?}, expected (N, 2) or (N, 3)").into()),
    }
}

fn run_in<const D: usize>(
    command: Command,
    dir: &Path,
    first: Array<f64>,
    repeats: usize,
) -> Result<()> {
    let first = rows::<D>(first, "the first file")?;
    match command {
        Command::FindContacts => find_contacts(dir, &Step::read(dir, first)?, repeats),
        Command::Sweep | Command::SweepFull => {
            let pairs = read_pairs(dir)?;
            sweep(dir, &Step::read(dir, first)?, &pairs, command, repeats)
        }
        Command::Events => events(dir, first, repeats),
    }
}

/// The f32 paths' input, as the arrays give it.
struct Step<const D: usize> {
    centers: Vec<[f64; D]>,
    radii: Vec<f64>,
    displacements: Vec<[f64; D]>,
    options: SweepOptions,
}

impl<const D: usize> Step<D> {
    fn read(dir: &Path, centers: Vec<[f64; D]>) -> Result<Self> {
        let radii = vector(npy::read(&dir.join("radii.npy"))?, "radii.npy")?;
        let displacements = rows::<D>(npy::read(&dir.join("displacements.npy"))?, "displacements")?;
        let mut options = if dir.join("separating").exists() {
            SweepOptions::event_driven()
        } else {
            SweepOptions::default()
        };
        if let Some(periodic_box) = read_periodic_box::<D>(dir)? {
            options = options.with_periodic_box(periodic_box);
        }
        Ok(Self {
            centers,
            radii,
            displacements,
            options,
        })
    }

    /// The bodies into `bodies`, by the binding's rule; returns the local origin.
    fn bodies_into(&self, bodies: &mut Vec<MovingSphere>) -> Result<[f64; D]> {
        let origin = if self.options.periodic_box.is_some() || self.centers.is_empty() {
            [0.0; D]
        } else {
            std::array::from_fn(|axis| {
                let (min, max) = self
                    .centers
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(min, max), center| {
                        (min.min(center[axis]), max.max(center[axis]))
                    });
                // A centre that is not finite would make every body's so: the origin is
                // then 0, and the step reports that body (the binding's rule too).
                let middle = 0.5 * (min + max);
                if middle.is_finite() { middle } else { 0.0 }
            })
        };
        MovingSphere::from_f64_arrays_into(
            &self.centers,
            &self.radii,
            &self.displacements,
            origin,
            bodies,
        )?;
        Ok(origin)
    }
}

fn find_contacts<const D: usize>(dir: &Path, step: &Step<D>, repeats: usize) -> Result<()> {
    let mut finder = cpu::ContactFinder::new();
    if let Some(groups) = read_optional::<u32>(&dir.join("groups.npy"))? {
        let groups = vector(groups, "groups.npy")?;
        let groups: Vec<CollisionGroups> =
            groups.into_iter().map(CollisionGroups::from_bits).collect();
        finder.set_groups(&groups);
    }
    let mut bodies = Vec::new();
    let mut contacts = Contacts::default();
    let mut find = |bodies: &mut Vec<MovingSphere>, contacts: &mut Contacts| -> Result<[f64; D]> {
        let origin = step.bodies_into(bodies)?;
        finder.find_into(bodies, &[], step.options, contacts)?;
        Ok(origin)
    };
    let origin = find(&mut bodies, &mut contacts)?;

    let count = contacts.contacts().len();
    let (mut pairs, mut times, mut points, mut normals, mut status, mut images) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for contact in contacts.contacts() {
        let Partner::Body { index, image } = contact.partner else {
            return Err(format!("a contact with a wall among the pairs: {contact:?}").into());
        };
        pairs.extend([i64::from(contact.body), i64::from(index)]);
        times.push(contact.impact.time_of_impact);
        points.extend(point_in_caller_coordinates::<D>(&contact.impact, origin));
        normals.extend(first::<D, f32>(contact.impact.normal.to_array()));
        status.push(status_code(Some(&contact.impact)));
        images.extend(first::<D, i32>(image));
    }
    let n = step.centers.len();
    let mut earliest = contacts.earliest_impacts();
    earliest.resize(n, None);
    let earliest_time: Vec<f32> = earliest
        .iter()
        .map(|impact| impact.map_or(f32::INFINITY, |impact| impact.time_of_impact))
        .collect();
    let partner_index = |wanted_wall: bool| -> Vec<i64> {
        let index = |partner: &Partner| match *partner {
            Partner::Body { index, .. } if !wanted_wall => i64::from(index),
            Partner::Wall { index } if wanted_wall => i64::from(index),
            _ => -1,
        };
        earliest
            .iter()
            .map(|impact| impact.map_or(-1, |impact| index(&impact.partner)))
            .collect()
    };
    let out = dir.join("out");
    npy::write(&out.join("pairs.npy"), &[count, 2], &pairs)?;
    npy::write(&out.join("times.npy"), &[count], &times)?;
    npy::write(&out.join("points.npy"), &[count, D], &points)?;
    npy::write(&out.join("normals.npy"), &[count, D], &normals)?;
    npy::write(&out.join("status.npy"), &[count], &status)?;
    npy::write(&out.join("images.npy"), &[count, D], &images)?;
    npy::write(&out.join("earliest_time.npy"), &[n], &earliest_time)?;
    npy::write(
        &out.join("earliest_partner.npy"),
        &[n],
        &partner_index(false),
    )?;
    npy::write(&out.join("earliest_wall.npy"), &[n], &partner_index(true))?;
    let candidates = i64::try_from(contacts.candidates()).expect("candidates fit in i64");
    npy::write(&out.join("candidates.npy"), &[1], &[candidates])?;
    println!("contacts {count} candidates {candidates}");

    time_repeats(repeats, || {
        let start = Instant::now();
        std::hint::black_box(find(&mut bodies, &mut contacts)?);
        Ok(start.elapsed())
    })
}

fn sweep<const D: usize>(
    dir: &Path,
    step: &Step<D>,
    pair_indices: &[i64],
    command: Command,
    repeats: usize,
) -> Result<()> {
    let count = pair_indices.len() / 2;
    let out = dir.join("out");
    let mut bodies = Vec::new();
    let mut pairs = Vec::new();
    if command == Command::Sweep {
        let mut times: Vec<TimeOfImpact> = Vec::new();
        let mut sweep = |times: &mut Vec<TimeOfImpact>| -> Result<()> {
            step.bodies_into(&mut bodies)?;
            pairs_into(pair_indices, &mut pairs)?;
            cpu::times_of_impact_into(&bodies, &pairs, step.options, times)?;
            Ok(())
        };
        sweep(&mut times)?;
        let raw: &[f32] = bytemuck::cast_slice(&times);
        npy::write(&out.join("times.npy"), &[count], raw)?;
        time_repeats(repeats, || {
            let start = Instant::now();
            sweep(&mut times)?;
            Ok(start.elapsed())
        })
    } else {
        let mut impacts: Vec<Option<Impact>> = Vec::new();
        let mut sweep = |impacts: &mut Vec<Option<Impact>>| -> Result<[f64; D]> {
            let origin = step.bodies_into(&mut bodies)?;
            pairs_into(pair_indices, &mut pairs)?;
            cpu::sweep_batch_into(&bodies, &pairs, step.options, impacts)?;
            Ok(origin)
        };
        let origin = sweep(&mut impacts)?;
        let (mut times, mut status, mut points, mut normals) = (vec![], vec![], vec![], vec![]);
        for impact in &impacts {
            times.push(impact.map_or(f32::INFINITY, |impact| impact.time_of_impact));
            status.push(status_code(impact.as_ref()));
            match impact {
                Some(impact) => {
                    points.extend(point_in_caller_coordinates::<D>(impact, origin));
                    normals.extend(first::<D, f32>(impact.normal.to_array()));
                }
                None => {
                    points.extend([f64::NAN; D]);
                    normals.extend([f32::NAN; D]);
                }
            }
        }
        npy::write(&out.join("times.npy"), &[count], &times)?;
        npy::write(&out.join("status.npy"), &[count], &status)?;
        npy::write(&out.join("points.npy"), &[count, D], &points)?;
        npy::write(&out.join("normals.npy"), &[count, D], &normals)?;
        time_repeats(repeats, || {
            let start = Instant::now();
            std::hint::black_box(sweep(&mut impacts)?);
            Ok(start.elapsed())
        })
    }
}

fn events<const D: usize>(dir: &Path, positions: Vec<[f64; D]>, repeats: usize) -> Result<()> {
    let velocities = rows::<D>(npy::read(&dir.join("velocities.npy"))?, "velocities")?;
    let radii = vector(npy::read(&dir.join("radii.npy"))?, "radii.npy")?;
    let masses = vector(npy::read(&dir.join("masses.npy"))?, "masses.npy")?;
    let n = positions.len();
    for (name, len) in [
        ("velocities", velocities.len()),
        ("radii", radii.len()),
        ("masses", masses.len()),
    ] {
        if len != n {
            return Err(format!("{name}: {len} rows for {n} positions").into());
        }
    }
    let dt = scalar::<f64>(dir, "dt.npy")?.ok_or("dt.npy is needed".to_string())?;
    let steps = scalar::<i64>(dir, "steps.npy")?.ok_or("steps.npy is needed".to_string())?;
    let steps = usize::try_from(steps).map_err(|_| format!("steps.npy: {steps} < 0"))?;
    let restitution = scalar::<f64>(dir, "restitution.npy")?.unwrap_or(1.0);
    let periodic_box = read_periodic_box::<D>(dir)?;
    let walls = match read_optional::<f64>(&dir.join("walls_planes.npy"))? {
        None => Vec::new(),
        Some(planes) => {
            if planes.shape.len() != 3 || planes.shape[1..] != [2, D] {
                let shape = &planes.shape;
                return Err(
                    format!("walls_planes.npy: shape {shape:?}, expected (W, 2, {D})").into(),
                );
            }
            planes
                .data
                .chunks_exact(2 * D)
                .map(|wall| {
                    let point = padded::<D>(wall[..D].try_into().expect("D values"));
                    let normal = padded::<D>(wall[D..].try_into().expect("D values"));
                    Wall::plane(point.as_vec3(), normal.as_vec3())
                })
                .collect()
        }
    };
    let start: Vec<EventBody> = (0..n)
        .map(|i| {
            EventBody::new(
                padded(positions[i]),
                padded(velocities[i]),
                radii[i],
                masses[i],
            )
        })
        .collect();
    let new_loop = || match periodic_box {
        Some(periodic_box) => EventLoop::new().with_periodic_box(periodic_box),
        None => EventLoop::new(),
    };

    let mut event_loop = new_loop();
    let mut response = Elastic::new(restitution)?;
    let mut cells = Cells::new();
    let mut bodies = start.clone();
    let mut events: Vec<(usize, Event)> = Vec::new();
    for step in 0..steps {
        event_loop.advance_with(
            &mut bodies,
            &walls,
            dt,
            &mut response,
            &mut cells,
            |event, _| {
                events.push((step, *event));
            },
        )?;
    }

    let count = events.len();
    let (mut times, mut steps_of, mut body, mut partners, mut wall_of, mut images) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let (mut points, mut normals, mut impulses) = (vec![], vec![], vec![]);
    for (step, event) in &events {
        times.push(event.time);
        steps_of.push(i64::try_from(*step).expect("a step index fits in i64"));
        body.push(i64::from(event.body));
        let (partner, wall, image) = match event.partner {
            Partner::Body { index, image } => (i64::from(index), -1, image),
            Partner::Wall { index } => (-1, i64::from(index), [0; 3]),
        };
        partners.push(partner);
        wall_of.push(wall);
        images.extend(first::<D, i32>(image));
        points.extend(first::<D, f64>(event.point.to_array()));
        normals.extend(first::<D, f64>(event.normal.to_array()));
        impulses.extend(first::<D, f64>(event.impulse.to_array()));
    }
    let final_positions: Vec<f64> = bodies
        .iter()
        .flat_map(|body| first::<D, f64>(body.position.to_array()))
        .collect();
    let final_velocities: Vec<f64> = bodies
        .iter()
        .flat_map(|body| first::<D, f64>(body.velocity.to_array()))
        .collect();
    let out = dir.join("out");
    npy::write(&out.join("times.npy"), &[count], &times)?;
    npy::write(&out.join("steps_of.npy"), &[count], &steps_of)?;
    npy::write(&out.join("bodies.npy"), &[count], &body)?;
    npy::write(&out.join("partners.npy"), &[count], &partners)?;
    npy::write(&out.join("walls.npy"), &[count], &wall_of)?;
    npy::write(&out.join("images.npy"), &[count, D], &images)?;
    npy::write(&out.join("points.npy"), &[count, D], &points)?;
    npy::write(&out.join("normals.npy"), &[count, D], &normals)?;
    npy::write(&out.join("impulses.npy"), &[count, D], &impulses)?;
    npy::write(&out.join("positions.npy"), &[n, D], &final_positions)?;
    npy::write(&out.join("velocities.npy"), &[n, D], &final_velocities)?;
    println!("events {count}");

    // Each repeat: one advance of dt from the start, on a fresh loop and grid, the events
    // collected into a vector kept across repeats. The binding's EventLoop runs a step of no
    // time when it is made (it checks the bodies and finds the first pairs there), and its
    // construction is not timed: so here too that step comes before the timing, and the
    // advance timed goes on from it.
    let mut collected: Vec<Event> = Vec::new();
    time_repeats(repeats, || {
        let mut event_loop = new_loop();
        let mut cells = Cells::new();
        let mut bodies = start.clone();
        event_loop.advance_with(
            &mut bodies,
            &walls,
            0.0,
            &mut response,
            &mut cells,
            |_, _| {},
        )?;
        collected.clear();
        let begin = Instant::now();
        event_loop.advance_with(
            &mut bodies,
            &walls,
            dt,
            &mut response,
            &mut cells,
            |event, _| {
                collected.push(*event);
            },
        )?;
        Ok(begin.elapsed())
    })
}

/// Runs `call` `repeats` times (each returns the time of the part it times) and prints the
/// median in seconds; nothing when `repeats` is 0.
fn time_repeats(repeats: usize, mut call: impl FnMut() -> Result<Duration>) -> Result<()> {
    if repeats == 0 {
        return Ok(());
    }
    let mut seconds = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        seconds.push(call()?.as_secs_f64());
    }
    seconds.sort_by(f64::total_cmp);
    let middle = repeats / 2;
    let median = if repeats % 2 == 1 {
        seconds[middle]
    } else {
        0.5 * (seconds[middle - 1] + seconds[middle])
    };
    println!("median_seconds {median}");
    Ok(())
}

/// 0 for a miss, 1 for a contact, 2 for an overlap at t = 0 (the binding's status codes).
fn status_code(impact: Option<&Impact>) -> u8 {
    match impact {
        None => 0,
        Some(impact) if impact.is_overlapping() => 2,
        Some(_) => 1,
    }
}

/// The impact's point back in the caller's coordinates: `f64::from(point) + origin`.
fn point_in_caller_coordinates<const D: usize>(impact: &Impact, origin: [f64; D]) -> [f64; D] {
    std::array::from_fn(|axis| f64::from(impact.point[axis]) + origin[axis])
}

/// The first `D` components of a 3-vector.
fn first<const D: usize, T: Copy>(vector: [T; 3]) -> [T; D] {
    std::array::from_fn(|axis| vector[axis])
}

/// A vector of `D` components in 3D: z = 0 for D = 2.
fn padded<const D: usize>(vector: [f64; D]) -> DVec3 {
    DVec3::new(
        vector[0],
        vector[1],
        if D == 3 { vector[D - 1] } else { 0.0 },
    )
}

/// The periodic box of `periodic_box.npy`, if there is one: one period per axis, inf where
/// the axis does not wrap (z too in 2D).
fn read_periodic_box<const D: usize>(dir: &Path) -> Result<Option<PeriodicBox>> {
    let Some(periods) = read_optional::<f64>(&dir.join("periodic_box.npy"))? else {
        return Ok(None);
    };
    if periods.shape != [D] {
        let shape = &periods.shape;
        return Err(format!("periodic_box.npy: shape {shape:?}, expected ({D},)").into());
    }
    let mut period = [f64::INFINITY; 3];
    period[..D].copy_from_slice(&periods.data);
    Ok(Some(PeriodicBox::new_f64(DVec3::from_array(period))?))
}

/// `pairs.npy`, (K, 2) int64, as a flat vector.
fn read_pairs(dir: &Path) -> Result<Vec<i64>> {
    let pairs: Array<i64> = npy::read(&dir.join("pairs.npy"))?;
    if pairs.shape.len() != 2 || pairs.shape[1] != 2 {
        let shape = &pairs.shape;
        return Err(format!("pairs.npy: shape {shape:?}, expected (K, 2)").into());
    }
    Ok(pairs.data)
}

/// The pairs' indices as the library takes them; an index that is negative or beyond u32 is
/// an input error (an index beyond the bodies is the library's).
fn pairs_into(indices: &[i64], pairs: &mut Vec<[u32; 2]>) -> Result<()> {
    pairs.clear();
    for (pair, chunk) in indices.chunks_exact(2).enumerate() {
        let index = |value: i64| {
            u32::try_from(value).map_err(|_| format!("pair {pair}: index {value} out of range"))
        };
        pairs.push([index(chunk[0])?, index(chunk[1])?]);
    }
    Ok(())
}

/// An (N, D) array as rows.
fn rows<const D: usize>(array: Array<f64>, name: &str) -> Result<Vec<[f64; D]>> {
    if array.shape.len() != 2 || array.shape[1] != D {
        let shape = &array.shape;
        return Err(format!("{name}: shape {shape:?}, expected (N, {D})").into());
    }
    Ok(array
        .data
        .chunks_exact(D)
        .map(|row| row.try_into().expect("D values"))
        .collect())
}

/// A one-dimensional array's values.
fn vector<T>(array: Array<T>, name: &str) -> Result<Vec<T>> {
    if array.shape.len() != 1 {
        let shape = &array.shape;
        return Err(format!("{name}: shape {shape:?}, expected one dimension").into());
    }
    Ok(array.data)
}

/// The one value of a (1,) array `name` in `dir`, if the file is there.
fn scalar<T: npy::Element>(dir: &Path, name: &str) -> Result<Option<T>> {
    let Some(array) = read_optional::<T>(&dir.join(name))? else {
        return Ok(None);
    };
    match array.data.as_slice() {
        [value] => Ok(Some(*value)),
        _ => Err(format!("{name}: {} values, expected 1", array.data.len()).into()),
    }
}

fn read_optional<T: npy::Element>(path: &Path) -> Result<Option<Array<T>>> {
    if path.exists() {
        Ok(Some(npy::read(path)?))
    } else {
        Ok(None)
    }
}

/// A reader and writer of NumPy's `.npy` files, for the few layouts this program exchanges:
/// versions 1.0 and 2.0, little-endian (or single-byte) dtypes, C order. Anything else is an
/// error that says what the file holds.
mod npy {
    use std::path::Path;

    /// A type stored in `.npy` files as the dtype `DESCR`.
    pub trait Element: Copy {
        /// NumPy's dtype string.
        const DESCR: &'static str;
        /// Its bytes in the file.
        const SIZE: usize;
        /// The value of `SIZE` little-endian bytes.
        fn from_le(bytes: &[u8]) -> Self;
        /// Appends its little-endian bytes.
        fn put_le(self, out: &mut Vec<u8>);
    }

    macro_rules! element {
        ($type:ty, $descr:literal) => {
            impl Element for $type {
                const DESCR: &'static str = $descr;
                const SIZE: usize = size_of::<$type>();
                fn from_le(bytes: &[u8]) -> Self {
                    <$type>::from_le_bytes(bytes.try_into().expect("SIZE bytes"))
                }
                fn put_le(self, out: &mut Vec<u8>) {
                    out.extend_from_slice(&self.to_le_bytes());
                }
            }
        };
    }

    element!(f64, "<f8");
    element!(f32, "<f4");
    element!(i64, "<i8");
    element!(i32, "<i4");
    element!(u32, "<u4");
    element!(u8, "|u1");

    /// An array in C order: its shape and its values.
    pub struct Array<T> {
        pub shape: Vec<usize>,
        pub data: Vec<T>,
    }

    const MAGIC: &[u8] = b"\x93NUMPY";

    /// Reads `path`, which must hold `T`'s dtype.
    pub fn read<T: Element>(path: &Path) -> Result<Array<T>, String> {
        let name = path.display();
        let bytes = std::fs::read(path).map_err(|error| format!("cannot read {name}: {error}"))?;
        if bytes.len() < 10 || !bytes.starts_with(MAGIC) {
            return Err(format!("{name}: not a .npy file"));
        }
        let (major, minor) = (bytes[6], bytes[7]);
        let (header_len, header_start) = match major {
            1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
            2 if bytes.len() >= 12 => {
                let len = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
                (usize::try_from(len).expect("u32 fits in usize"), 12)
            }
            _ => {
                return Err(format!(
                    "{name}: .npy version {major}.{minor}, expected 1.0 or 2.0"
                ));
            }
        };
        let data_start = header_start + header_len;
        let header = bytes
            .get(header_start..data_start)
            .and_then(|header| std::str::from_utf8(header).ok())
            .ok_or(format!("{name}: truncated or unreadable header"))?
            .trim();
        let descr = value_of(header, "descr")
            .and_then(|value| value.strip_prefix('\''))
            .and_then(|value| value.split('\'').next())
            .ok_or(format!("{name}: no dtype in header {header:?}"))?;
        if descr != T::DESCR {
            return Err(format!("{name}: dtype {descr}, expected {}", T::DESCR));
        }
        if !value_of(header, "fortran_order").is_some_and(|value| value.starts_with("False")) {
            return Err(format!("{name}: not in C order (header {header:?})"));
        }
        let shape = value_of(header, "shape")
            .and_then(|value| value.strip_prefix('('))
            .and_then(|value| value.split(')').next())
            .ok_or(format!("{name}: no shape in header {header:?}"))?;
        let shape = shape
            .split(',')
            .map(str::trim)
            .filter(|dimension| !dimension.is_empty())
            .map(|dimension| dimension.parse::<usize>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| format!("{name}: bad shape ({shape})"))?;
        let count: usize = shape.iter().product();
        let data = &bytes[data_start..];
        if data.len() != count * T::SIZE {
            return Err(format!(
                "{name}: {} bytes of data for shape {shape:?} of {}",
                data.len(),
                T::DESCR
            ));
        }
        let data = data.chunks_exact(T::SIZE).map(T::from_le).collect();
        Ok(Array { shape, data })
    }

    /// What follows `'key':` in a header dict, trimmed at the start.
    fn value_of<'a>(header: &'a str, key: &str) -> Option<&'a str> {
        let at = header.find(&format!("'{key}':"))?;
        Some(header[at + key.len() + 3..].trim_start())
    }

    /// Writes `data` of shape `shape` to `path` (version 1.0, C order).
    pub fn write<T: Element>(path: &Path, shape: &[usize], data: &[T]) -> Result<(), String> {
        assert_eq!(
            shape.iter().product::<usize>(),
            data.len(),
            "shape and data agree"
        );
        let shape = match shape {
            [length] => format!("({length},)"),
            _ => {
                let dimensions: Vec<String> = shape.iter().map(usize::to_string).collect();
                format!("({})", dimensions.join(", "))
            }
        };
        let mut header = format!(
            "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
            T::DESCR
        );
        // NumPy pads the header with spaces and a newline so that the data starts at a
        // multiple of 64 bytes.
        let unpadded = MAGIC.len() + 4 + header.len() + 1;
        header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
        header.push('\n');
        let mut bytes = Vec::with_capacity(MAGIC.len() + 4 + header.len() + data.len() * T::SIZE);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&[1, 0]);
        let header_len = u16::try_from(header.len()).expect("a short header");
        bytes.extend_from_slice(&header_len.to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        for &value in data {
            value.put_le(&mut bytes);
        }
        std::fs::write(path, bytes)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))
    }
}
