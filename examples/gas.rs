//! A hard-sphere gas: N spheres of diameter 1 in a periodic cube at packing fraction η, run
//! event by event by sweepcast's event loop, with the GPU step (`gpu::ContactPipeline`) as
//! its broad phase (`--cpu`: the CPU step, `cpu::ContactFinder`). It measures the
//! compressibility factor Z = PV/NkT from the collision virial and compares it with the
//! equations of state of Carnahan and Starling and of Kolafa, and the collision rate with
//! Enskog's.
//!
//! ```text
//! cargo run --release --example gas -- [--bodies N] [--packing ETA] [--collisions C]
//!     [--blocks B] [--seed K] [--replicas R] [--cpu] [--skins local|global] [--sweep]
//!     [--out-dir DIR]
//! ```
//!
//! Skins (`EventLoop::with_skin`; 0.8 √λ for the mean free path λ): with `global`, the broad phase is asked
//! for the pairs of every body each time one leaves its skin, many times a collision time
//! (the default on the GPU, whose step is then the broad phase all along); with `local`
//! (the default on the CPU), it is asked once, and each body then renews its own skin in
//! the loop's grid, which is what makes the CPU fast on large gases. Both give the same
//! collisions, to the bit. With `--sweep` on the CPU, the four packings run side by side,
//! one a thread.
//!
//! With `--replicas R`, each packing runs as R independent gases (seeds K, K + 1, …), side by
//! side on the CPU (one loop a thread; in turn on the GPU), and Z and its standard error come
//! from all their blocks together: R times the collisions for the same wall time where there
//! are R cores. One gas's loop is serial, so this, not a faster single gas, is how the CPU's
//! cores serve a measurement; the rate it prints is all the replicas' collisions over the
//! longest replica's wall time.
//!
//! After 50 collisions a body from a lattice start, it runs C collisions a body (200 by
//! default, Enskog's rate giving the time) in B blocks (10): Z's standard error comes from
//! the blocks' spread. It reports Z beside both equations, the collision rate beside
//! Enskog's, the energy drift, the smallest gap between two bodies (at each block's end,
//! over every pair within 10⁻³), collisions a second of wall time, and draws the speeds'
//! histogram over the Maxwell–Boltzmann curve (`DIR/gas_speeds.png`); with `--sweep`, Z
//! at η = 0.1 to 0.4 over the Carnahan–Starling curve (`DIR/gas_sweep.png`) and its
//! departure from Kolafa's equation in per cent (`DIR/gas_sweep_deviation.png`). It exits 1
//! if Z (at any packing it ran) departs from Kolafa's equation by more than four standard
//! errors plus an allowance of 0.5% for the finite size (the NVE pressure of N bodies
//! differs from the limit by O(1/N); 0.5% is a stated allowance, not a derived one), or if
//! two bodies overlap, or the energy drifts, by more than 10⁻⁹.

mod common;
mod hard_spheres;

use std::process::ExitCode;
use std::time::Instant;

use common::{bad_options, parse};
use hard_spheres::{Gas, carnahan_starling, enskog_rate, kolafa, run, smallest_gap};
use indicatif::ProgressBar;
use rayon::prelude::*;
use sweepcast::events::{BroadPhase, EventLoop};
use sweepcast::glam::Vec3;
use sweepcast::gpu::{ContactPipeline, GpuContext};
use sweepcast::{Error, MovingSphere, SweepOptions, cpu};
use tiny_skia::{Color, FillRule, Mask, Paint, PathBuilder, Pixmap, Rect, Stroke, Transform};

/// The run's settings.
#[derive(Clone, Debug)]
struct Settings {
    bodies: usize,
    packing: f64,
    collisions: f64,
    blocks: usize,
    seed: u64,
    replicas: usize,
    cpu: bool,
    local: bool,
    sweep: bool,
    out_dir: String,
}

/// What one gas (or several replicas of it) gave: Z and the collision rate from the blocks'
/// values (and their spread).
struct Measured {
    zs: Vec<f64>,
    rates: Vec<f64>,
    drift: f64,
    smallest_gap: f64,
    collisions: u64,
    seconds: f64,
    speeds: Vec<f64>,
}

impl Measured {
    /// Z: the mean of the blocks' values, and its standard error.
    fn z(&self) -> (f64, f64) {
        mean_and_error(&self.zs)
    }

    /// The collision rate per body: the mean of the blocks' values.
    fn rate(&self) -> f64 {
        mean_and_error(&self.rates).0
    }
}

fn main() -> ExitCode {
    let mut settings = Settings {
        bodies: 2000,
        packing: 0.3,
        collisions: 200.0,
        blocks: 10,
        seed: 1,
        replicas: 1,
        cpu: false,
        local: false,
        sweep: false,
        out_dir: "pictures".to_string(),
    };
    let mut skins = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let parsed = match flag.as_str() {
            "--cpu" => {
                settings.cpu = true;
                Ok(())
            }
            "--sweep" => {
                settings.sweep = true;
                Ok(())
            }
            _ => {
                let value = args.next().unwrap_or_default();
                match flag.as_str() {
                    "--bodies" => parse(&value).map(|v| settings.bodies = v),
                    "--packing" => parse(&value).map(|v| settings.packing = v),
                    "--collisions" => parse(&value).map(|v| settings.collisions = v),
                    "--blocks" => parse(&value).map(|v: usize| settings.blocks = v.max(2)),
                    "--seed" => parse(&value).map(|v| settings.seed = v),
                    "--replicas" => parse(&value).map(|v: usize| settings.replicas = v.max(1)),
                    "--skins" => match value.as_str() {
                        "local" | "global" => {
                            skins = Some(value == "local");
                            Ok(())
                        }
                        _ => Err(format!("--skins takes local or global, not {value:?}")),
                    },
                    "--out-dir" => {
                        settings.out_dir = value;
                        Ok(())
                    }
                    _ => Err(format!("bad option {flag}; see the file's header")),
                }
            }
        };
        if let Err(message) = parsed {
            return bad_options(&message);
        }
    }
    // Local skins on the CPU, global ones (the GPU step all along) on the GPU, unless asked.
    settings.local = skins.unwrap_or(settings.cpu);
    if !(0.0 < settings.packing && settings.packing < 0.49) || settings.bodies < 64 {
        return bad_options(
            "the packing fraction must be in (0, 0.49) and there must be 64 bodies or more",
        );
    }
    let gpu = if settings.cpu {
        None
    } else {
        match GpuContext::new_blocking().and_then(|context| {
            let pipeline = ContactPipeline::new(&context)?;
            Ok((context, pipeline))
        }) {
            Ok(gpu) => Some(gpu),
            Err(error) => {
                eprintln!("{error}\nrun with --cpu for the CPU step as the broad phase");
                return ExitCode::FAILURE;
            }
        }
    };
    let skins = if settings.local {
        "local skins: the broad phase at the start only"
    } else {
        "global skins: the broad phase each time a body leaves its skin"
    };
    match &gpu {
        Some((context, _)) => {
            println!(
                "broad phase: the GPU step on {}; {skins}",
                context.describe()
            );
        }
        None => println!(
            "broad phase: the CPU step on {} threads ({}); {skins}",
            rayon::current_num_threads(),
            common::machine()
        ),
    }
    let result = measure_all(&settings, gpu.as_ref().map(|(_, pipeline)| pipeline));
    match result {
        Ok(true) => {
            println!("checks: PASS");
            ExitCode::SUCCESS
        }
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("the gas failed: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the gas of `settings` (and the sweep of packings, if asked), reports, draws and
/// checks; `Ok(false)` if a check failed.
fn measure_all(settings: &Settings, gpu: Option<&ContactPipeline>) -> Result<bool, Error> {
    // One gas at `packing` with the GPU step, or the CPU step, as its broad phase.
    let replica = |packing: f64, seed: u64, progress: bool| match gpu {
        Some(pipeline) => measure(settings, packing, seed, &mut &*pipeline, progress),
        None => measure(
            settings,
            packing,
            seed,
            &mut cpu::ContactFinder::new(),
            progress,
        ),
    };
    // The replicas of one packing: side by side on the CPU, in turn on the GPU's one device.
    let measure_at = |packing: f64, progress: bool| -> Result<Measured, Error> {
        let seeds = (0..settings.replicas as u64).map(|r| settings.seed + r);
        let parts: Result<Vec<Measured>, Error> = if gpu.is_some() {
            seeds.map(|seed| replica(packing, seed, progress)).collect()
        } else {
            let seeds: Vec<u64> = seeds.collect();
            seeds
                .par_iter()
                .map(|&seed| replica(packing, seed, progress && seed == settings.seed))
                .collect()
        };
        Ok(pooled(parts?))
    };
    let measured = measure_at(settings.packing, true)?;
    let (cs, k) = (
        carnahan_starling(settings.packing),
        kolafa(settings.packing),
    );
    let density = 6.0 * settings.packing / std::f64::consts::PI;
    let enskog = enskog_rate(settings.packing, density, 1.0);
    let replicas = if settings.replicas > 1 {
        format!(", {} replicas side by side", settings.replicas)
    } else {
        String::new()
    };
    println!(
        "N = {}, η = {}{replicas}: {} collisions in {:.1} s of wall time, {:.3e} a second",
        settings.bodies,
        settings.packing,
        measured.collisions,
        measured.seconds,
        measured.collisions as f64 / measured.seconds
    );
    let (z, z_error) = measured.z();
    println!(
        "Z = PV/NkT = {:.4} ± {:.4} (standard error of {} blocks); Carnahan–Starling {cs:.4}, Kolafa {k:.4}: {:+.2} standard errors, {:+.3}% ± {:.3}% from Kolafa",
        z,
        z_error,
        measured.zs.len(),
        (z - k) / z_error,
        100.0 * (z - k) / k,
        100.0 * z_error / k
    );
    println!(
        "collision rate per body {:.4} (kT = 1), Enskog with the Carnahan–Starling contact value {enskog:.4}: ratio {:.4}",
        measured.rate(),
        measured.rate() / enskog
    );
    println!(
        "energy drift {:.2e} (relative); smallest gap between two bodies {:.2e}",
        measured.drift, measured.smallest_gap
    );
    let folder = std::path::Path::new(&settings.out_dir);
    std::fs::create_dir_all(folder).map_err(|e| Error::Device(e.to_string()))?;
    let speeds_png = folder.join("gas_speeds.png");
    draw_speeds(&measured.speeds, settings, &speeds_png.to_string_lossy());
    println!("picture: {}", speeds_png.display());
    let mut passed = agrees_with_kolafa(settings.packing, z, z_error);
    if measured.smallest_gap < -1e-9 || measured.drift > 1e-9 {
        eprintln!("FAIL: an overlap or an energy drift beyond 1e-9");
        passed = false;
    }
    if settings.sweep {
        let packings = [0.1, 0.2, 0.3, 0.4];
        let start = Instant::now();
        // On the CPU, side by side (each gas its own loop and broad phase); the GPU's one
        // device takes them in turn.
        let swept: Vec<Result<Measured, Error>> = if gpu.is_some() {
            packings.iter().map(|&p| measure_at(p, false)).collect()
        } else {
            packings.par_iter().map(|&p| measure_at(p, false)).collect()
        };
        println!(
            "sweep: {} collisions a body at each packing, {:.1} s of wall time in all",
            settings.collisions,
            start.elapsed().as_secs_f64()
        );
        let mut points = Vec::new();
        for (&packing, m) in packings.iter().zip(swept) {
            let m = m?;
            let (z, z_error) = m.z();
            let k = kolafa(packing);
            println!(
                "  η = {packing}: Z = {:.5} ± {:.5}, Carnahan–Starling {:.5}, Kolafa {k:.5}: {:+.3}% ± {:.3}% from Kolafa ({} collisions, {:.3e} a second)",
                z,
                z_error,
                carnahan_starling(packing),
                100.0 * (z - k) / k,
                100.0 * z_error / k,
                m.collisions,
                m.collisions as f64 / m.seconds
            );
            passed &= agrees_with_kolafa(packing, z, z_error);
            passed &= m.smallest_gap >= -1e-9 && m.drift <= 1e-9;
            points.push((packing, z, z_error));
        }
        let sweep_png = folder.join("gas_sweep.png");
        draw_sweep(&points, settings, &sweep_png.to_string_lossy());
        let deviation_png = folder.join("gas_sweep_deviation.png");
        draw_deviation(&points, settings, &deviation_png.to_string_lossy());
        println!("picture: {}", deviation_png.display());
        println!("picture: {}", sweep_png.display());
    }
    Ok(passed)
}

/// Whether `z` (with its standard error `z_error`) agrees with Kolafa's equation at
/// `packing` within four standard errors plus the finite-size allowance; says so if not.
fn agrees_with_kolafa(packing: f64, z: f64, z_error: f64) -> bool {
    let k = kolafa(packing);
    let allowance = 0.005 * k;
    let agrees = (z - k).abs() <= 4.0 * z_error + allowance;
    if !agrees {
        eprintln!(
            "FAIL: at η = {packing}, Z = {z:.4} departs from Kolafa's {k:.4} by more than four standard errors ({:.4}) plus the finite-size allowance ({allowance:.4})",
            4.0 * z_error
        );
    }
    agrees
}

/// One gas at `packing`, from `seed`: equilibration, then the blocks.
fn measure(
    settings: &Settings,
    packing: f64,
    seed: u64,
    broad_phase: &mut impl BroadPhase,
    progress: bool,
) -> Result<Measured, Error> {
    let mut gas = Gas::new(settings.bodies, packing, seed);
    let mut events: EventLoop = gas.event_loop(settings.local)?;
    let step = gas.step();
    let rate = enskog_rate(packing, gas.density(), 1.0);
    let n = settings.bodies;
    let equilibration = 50.0 / rate;
    let block = settings.collisions / settings.blocks as f64 / rate;
    let total_steps = ((equilibration + block * settings.blocks as f64) / step).round() as u64;
    let bar = if progress {
        ProgressBar::new(total_steps)
    } else {
        ProgressBar::hidden()
    };
    run(
        &mut gas,
        &mut events,
        broad_phase,
        equilibration,
        step,
        |_, _| bar.inc(1),
    )?;
    let kt = hard_spheres::temperature(&gas.bodies);
    let (mut zs, mut rates, mut speeds) = (Vec::new(), Vec::new(), Vec::new());
    let (mut collisions, mut smallest) = (0, f64::INFINITY);
    let start = Instant::now();
    for _ in 0..settings.blocks {
        let done = run(&mut gas, &mut events, broad_phase, block, step, |_, _| {
            bar.inc(1)
        })?;
        zs.push(done.compressibility(n, kt));
        rates.push(done.collision_rate(n) / kt.sqrt());
        collisions += done.virial.collisions;
        speeds.extend(gas.bodies.iter().map(|b| b.velocity.length() / kt.sqrt()));
        smallest = smallest.min(overlaps(&gas, broad_phase)?);
    }
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    Ok(Measured {
        zs,
        rates,
        drift: (hard_spheres::temperature(&gas.bodies) - kt).abs() / kt,
        smallest_gap: smallest,
        collisions,
        seconds,
        speeds,
    })
}

/// Replicas' measures as one: all their blocks, their collisions
/// together over the longest one's wall time (they ran side by side), the largest drift and
/// the smallest gap.
fn pooled(parts: Vec<Measured>) -> Measured {
    let mut parts = parts.into_iter();
    let mut all = parts.next().expect("one replica at least");
    for part in parts {
        all.zs.extend(part.zs);
        all.rates.extend(part.rates);
        all.speeds.extend(part.speeds);
        all.collisions += part.collisions;
        all.seconds = all.seconds.max(part.seconds);
        all.drift = all.drift.max(part.drift);
        all.smallest_gap = all.smallest_gap.min(part.smallest_gap);
    }
    all
}

/// The smallest gap between two bodies of `gas` within 10⁻³ of touching (the broad phase's
/// pairs of spheres grown by half that), or infinity if none is that close.
fn overlaps(gas: &Gas, broad_phase: &mut impl BroadPhase) -> Result<f64, Error> {
    let spheres: Vec<MovingSphere> = gas
        .bodies
        .iter()
        .map(|b| MovingSphere::new(b.position.as_vec3(), (b.radius + 5e-4) as f32, Vec3::ZERO))
        .collect();
    let options =
        SweepOptions::default().with_periodic_box(sweepcast::PeriodicBox::cube(gas.side as f32)?);
    let mut pairs = Vec::new();
    broad_phase.touching_pairs(&spheres, &[], options, &mut pairs)?;
    Ok(smallest_gap(gas, &pairs))
}

/// The mean of `values` and its standard error (the spread of the values over √count).
fn mean_and_error(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (variance / n).sqrt())
}

/// A solid paint of `rgb`.
fn paint(rgb: [u8; 3]) -> Paint<'static> {
    common::picture::paint(rgb, 255)
}

/// Dark text, as the plots write it.
fn text(pixmap: &mut Pixmap, words: &str, x: f32, y: f32, scale: f32) {
    common::picture::text(pixmap, words, x, y, scale, [30, 30, 40]);
}

/// A plot's frame: the picture, and a map from (x, y) in the data's units to pixels.
struct Plot {
    pixmap: Pixmap,
    left: f32,
    top: f32,
    width: f32,
    height: f32,
    x_range: (f64, f64),
    y_range: (f64, f64),
}

impl Plot {
    fn new(
        x_range: (f64, f64),
        y_range: (f64, f64),
        title: &str,
        x_label: &str,
        y_label: &str,
    ) -> Self {
        let mut pixmap = Pixmap::new(900, 600).expect("a picture");
        pixmap.fill(Color::WHITE);
        let plot = Self {
            pixmap,
            left: 90.0,
            top: 60.0,
            width: 770.0,
            height: 450.0,
            x_range,
            y_range,
        };
        let mut plot = plot;
        let frame = Rect::from_xywh(plot.left, plot.top, plot.width, plot.height).expect("a frame");
        let stroke = Stroke {
            width: 1.5,
            ..Stroke::default()
        };
        plot.pixmap.stroke_path(
            &PathBuilder::from_rect(frame),
            &paint([60, 60, 70]),
            &stroke,
            Transform::identity(),
            None,
        );
        text(&mut plot.pixmap, title, 10.0, 6.0, 2.0);
        text(
            &mut plot.pixmap,
            x_label,
            plot.left + plot.width / 2.0 - 40.0,
            565.0,
            2.0,
        );
        text(&mut plot.pixmap, y_label, 10.0, 30.0, 2.0);
        for k in 0..=5 {
            let (x, y) = (
                x_range.0 + (x_range.1 - x_range.0) * k as f64 / 5.0,
                y_range.0 + (y_range.1 - y_range.0) * k as f64 / 5.0,
            );
            let (px, _) = plot.at(x, y_range.0);
            let (_, py) = plot.at(x_range.0, y);
            text(
                &mut plot.pixmap,
                &format!("{x:.2}"),
                px - 32.0,
                plot.top + plot.height + 10.0,
                2.0,
            );
            text(&mut plot.pixmap, &format!("{y:.2}"), 12.0, py - 8.0, 2.0);
        }
        plot
    }

    fn at(&self, x: f64, y: f64) -> (f32, f32) {
        let fx = ((x - self.x_range.0) / (self.x_range.1 - self.x_range.0)) as f32;
        let fy = ((y - self.y_range.0) / (self.y_range.1 - self.y_range.0)) as f32;
        (
            self.left + fx * self.width,
            self.top + (1.0 - fy) * self.height,
        )
    }

    fn curve(&mut self, f: impl Fn(f64) -> f64, colour: [u8; 3]) {
        let mut path = PathBuilder::new();
        for k in 0..=400 {
            let x = self.x_range.0 + (self.x_range.1 - self.x_range.0) * k as f64 / 400.0;
            let (px, py) = self.at(x, f(x));
            if k == 0 {
                path.move_to(px, py);
            } else {
                path.line_to(px, py);
            }
        }
        // Drawn within the frame only.
        let frame = Rect::from_xywh(self.left, self.top, self.width, self.height).expect("a frame");
        let mut inside = Mask::new(self.pixmap.width(), self.pixmap.height()).expect("a mask");
        inside.fill_path(
            &PathBuilder::from_rect(frame),
            FillRule::Winding,
            false,
            Transform::identity(),
        );
        if let Some(path) = path.finish() {
            let stroke = Stroke {
                width: 3.0,
                ..Stroke::default()
            };
            self.pixmap.stroke_path(
                &path,
                &paint(colour),
                &stroke,
                Transform::identity(),
                Some(&inside),
            );
        }
    }

    fn save(&self, out: &str) {
        if let Err(error) = self.pixmap.save_png(out) {
            eprintln!("could not write {out}: {error}");
        }
    }
}

/// The speeds' histogram (in units of √(kT/m)) over the Maxwell–Boltzmann density
/// `4π v² (2π)^(-3/2) exp(−v²/2)`.
fn draw_speeds(speeds: &[f64], settings: &Settings, out: &str) {
    let (bins, top) = (40, 5.0);
    let width = top / bins as f64;
    let mut counts = vec![0usize; bins];
    for &v in speeds {
        if v < top {
            counts[(v / width) as usize] += 1;
        }
    }
    let density = |v: f64| {
        4.0 * std::f64::consts::PI
            * v
            * v
            * (2.0 * std::f64::consts::PI).powf(-1.5)
            * (-v * v / 2.0).exp()
    };
    let title = format!(
        "Speeds, N = {}, η = {}, against Maxwell-Boltzmann",
        settings.bodies, settings.packing
    );
    let mut plot = Plot::new(
        (0.0, top),
        (0.0, 0.75),
        &title,
        "speed / (kT/m)^1/2",
        "density",
    );
    for (k, &count) in counts.iter().enumerate() {
        let height = count as f64 / (speeds.len() as f64 * width);
        let (x0, y0) = plot.at(k as f64 * width, height);
        let (x1, y1) = plot.at((k + 1) as f64 * width, 0.0);
        if let Some(rect) = Rect::from_ltrb(x0 + 1.0, y0, x1 - 1.0, y1) {
            plot.pixmap
                .fill_rect(rect, &paint([120, 160, 220]), Transform::identity(), None);
        }
    }
    plot.curve(density, [200, 40, 40]);
    plot.save(out);
}

/// The measured points of a plot with bars of two standard errors: `(x, y, error)`.
fn dots_with_bars(plot: &mut Plot, points: &[(f64, f64, f64)]) {
    for &(x, y, error) in points {
        let (px, py) = plot.at(x, y);
        if let Some(path) = PathBuilder::from_circle(px, py, 6.0) {
            plot.pixmap.fill_path(
                &path,
                &paint([30, 60, 160]),
                FillRule::Winding,
                Transform::identity(),
                None,
            );
        }
        // Within the frame.
        let (_, low) = plot.at(x, y - 2.0 * error);
        let (_, high) = plot.at(x, y + 2.0 * error);
        let (low, high) = (low.min(plot.top + plot.height), high.max(plot.top));
        if let Some(rect) = Rect::from_ltrb(px - 1.5, high, px + 1.5, low) {
            plot.pixmap
                .fill_rect(rect, &paint([30, 60, 160]), Transform::identity(), None);
        }
    }
}

/// How far Z lies from Kolafa's equation, in per cent, against η: the measured points with
/// two standard errors, the band of ±0.1%, and Carnahan and Starling's equation's own
/// departure from Kolafa's.
fn draw_deviation(points: &[(f64, f64, f64)], settings: &Settings, out: &str) {
    let title = format!("Z / Kolafa - 1 in %, N = {}", settings.bodies);
    let mut plot = Plot::new((0.0, 0.5), (-0.3, 0.2), &title, "packing fraction η", "%");
    let (left, top) = plot.at(0.0, 0.1);
    let (right, bottom) = plot.at(0.5, -0.1);
    if let Some(band) = Rect::from_ltrb(left, top, right, bottom) {
        plot.pixmap.fill_rect(
            band,
            &common::picture::paint([120, 200, 120], 90),
            Transform::identity(),
            None,
        );
    }
    plot.curve(
        |eta| 100.0 * (carnahan_starling(eta) / kolafa(eta) - 1.0),
        [200, 40, 40],
    );
    let percent: Vec<(f64, f64, f64)> = points
        .iter()
        .map(|&(eta, z, error)| {
            let k = kolafa(eta);
            (eta, 100.0 * (z / k - 1.0), 100.0 * error / k)
        })
        .collect();
    dots_with_bars(&mut plot, &percent);
    let legend = [
        ("measured, bars of 2 standard errors", [30, 60, 160]),
        ("Carnahan-Starling", [200, 40, 40]),
        ("within 0.1% of Kolafa", [90, 170, 90]),
    ];
    for (k, (words, colour)) in legend.iter().enumerate() {
        let y = plot.top + plot.height - 70.0 + 22.0 * k as f32;
        if let Some(rect) = Rect::from_xywh(plot.left + 20.0, y + 2.0, 14.0, 12.0) {
            plot.pixmap
                .fill_rect(rect, &paint(*colour), Transform::identity(), None);
        }
        text(&mut plot.pixmap, words, plot.left + 44.0, y, 2.0);
    }
    plot.save(out);
}

fn draw_sweep(points: &[(f64, f64, f64)], settings: &Settings, out: &str) {
    let title = format!(
        "Z, N = {}: measured (dots), Carnahan-Starling (line)",
        settings.bodies
    );
    let mut plot = Plot::new((0.0, 0.5), (1.0, 11.0), &title, "packing fraction η", "Z");
    plot.curve(carnahan_starling, [200, 40, 40]);
    dots_with_bars(&mut plot, points);
    plot.save(out);
}
