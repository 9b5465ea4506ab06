//! A pool break: a 9-foot table with six cushions (segments; the pockets are the gaps between
//! them), fifteen racked balls and the cue ball struck at 10 m/s, run without friction by
//! sweepcast's event loop (`sweepcast::events`: every impact found by the swept test, in
//! order, and resolved elastically). Balls that go through a pocket's mouth leave the table.
//!
//! ```text
//! cargo run --release --example pool_break -- [--speed M_PER_S] [--seconds S] [--out PNG]
//! ```
//!
//! Prints the impacts, the energy before and after (they must agree to 1e-9, relative), the
//! smallest gap ever seen between two balls or a ball and a cushion (it must not be below
//! -1e-12 m, f64's rounding of coordinates of a few metres some thousands of times over), and
//! writes a picture of the table with every ball's path and each impact point
//! (`pictures/pool_break.png` by default). Exits 1 if a check fails.

mod common;
mod pool;

use std::process::ExitCode;

use common::picture::paint;
use common::{bad_options, parse};
use pool::{Break, LENGTH, WIDTH};
use sweepcast::glam::DVec3;
use tiny_skia::{Color, FillRule, Paint, PathBuilder, Pixmap, Stroke, Transform};

/// Pixels a metre, and the margin around the table (the rails), in pixels.
const SCALE: f32 = 440.0;
const MARGIN: f32 = 44.0;
/// The colours of the balls: the cue ball white, then the solids and the stripes.
const COLOURS: [[u8; 3]; 16] = [
    [250, 250, 250],
    [250, 200, 0],
    [30, 60, 200],
    [220, 30, 30],
    [120, 40, 160],
    [250, 120, 0],
    [20, 140, 60],
    [140, 30, 30],
    [20, 20, 20],
    [250, 220, 90],
    [90, 130, 240],
    [250, 100, 100],
    [180, 110, 220],
    [250, 170, 90],
    [90, 200, 120],
    [190, 90, 80],
];

fn main() -> ExitCode {
    let (mut speed, mut seconds) = (10.0, 4.0);
    let mut out = String::from("pictures/pool_break.png");
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        let parsed = match flag.as_str() {
            "--speed" => parse(&value).map(|v| speed = v),
            "--seconds" => parse(&value).map(|v| seconds = v),
            "--out" => {
                out = value;
                Ok(())
            }
            _ => Err(format!("bad option {flag}; see the file's header")),
        };
        if let Err(message) = parsed {
            return bad_options(&message);
        }
    }
    let result = match pool::simulate(speed, 0.002, seconds, 1.0 / 240.0) {
        Ok(result) => result,
        Err(error) => {
            eprintln!("the break failed: {error}");
            return ExitCode::FAILURE;
        }
    };
    report(&result);
    if let Err(error) = draw(&result, &out) {
        eprintln!("could not write {out}: {error}");
        return ExitCode::FAILURE;
    }
    println!("picture: {out}");
    let drift = (result.energy_after - result.energy_before).abs() / result.energy_before;
    let mut failed = false;
    if drift > 1e-9 {
        eprintln!("FAIL: the energy changed by {drift:e} (relative), above 1e-9");
        failed = true;
    }
    if result.smallest_gap < -1e-12 {
        eprintln!(
            "FAIL: two bodies overlapped by {:e} m",
            -result.smallest_gap
        );
        failed = true;
    }
    if failed {
        return ExitCode::FAILURE;
    }
    println!("checks: PASS");
    ExitCode::SUCCESS
}

fn report(result: &Break) {
    let (pairs, cushions) =
        result
            .events
            .iter()
            .fold((0, 0), |(p, c), (_, event)| match event.wall() {
                None => (p + 1, c),
                Some(_) => (p, c + 1),
            });
    println!(
        "{} impacts: {pairs} between balls, {cushions} with cushions; the first ten:",
        result.events.len()
    );
    for (time, event) in result.events.iter().take(10) {
        let (body, point) = (event.body, event.point);
        match (event.pair(), event.wall()) {
            (Some([a, b]), _) => println!(
                "  t = {time:.6} s  balls {a:>2} and {b:>2} at ({:.4}, {:.4})",
                point.x, point.y
            ),
            (None, wall) => println!(
                "  t = {time:.6} s  ball {body:>2} and cushion {} at ({:.4}, {:.4})",
                wall.unwrap_or_default(),
                point.x,
                point.y
            ),
        }
    }
    for (ball, pocketed) in result.pocketed.iter().enumerate() {
        if let Some((time, pocket)) = pocketed {
            println!("  ball {ball:>2} pocketed at t = {time:.3} s in pocket {pocket}");
        }
    }
    println!(
        "energy before {:.12} J, after {:.12} J (on the table and carried into the pockets): relative change {:e}",
        result.energy_before,
        result.energy_after,
        (result.energy_after - result.energy_before).abs() / result.energy_before
    );
    println!(
        "smallest gap between two balls or a ball and a cushion: {:e} m",
        result.smallest_gap
    );
}

/// Table coordinates (metres, y up) to the picture's pixels (y down).
fn pixel(p: DVec3) -> (f32, f32) {
    (
        MARGIN + p.x as f32 * SCALE,
        MARGIN + (WIDTH - p.y) as f32 * SCALE,
    )
}

fn circle(pixmap: &mut Pixmap, centre: DVec3, radius: f32, fill: &Paint, outline: Option<&Paint>) {
    let (x, y) = pixel(centre);
    if let Some(path) = PathBuilder::from_circle(x, y, radius) {
        pixmap.fill_path(&path, fill, FillRule::Winding, Transform::identity(), None);
        if let Some(outline) = outline {
            let stroke = Stroke {
                width: 1.5,
                ..Stroke::default()
            };
            pixmap.stroke_path(&path, outline, &stroke, Transform::identity(), None);
        }
    }
}

fn draw(result: &Break, out: &str) -> Result<(), String> {
    let width = (2.0 * MARGIN + LENGTH as f32 * SCALE).ceil() as u32;
    let height = (2.0 * MARGIN + WIDTH as f32 * SCALE).ceil() as u32;
    let mut pixmap = Pixmap::new(width, height).ok_or("the picture's size")?;
    pixmap.fill(Color::from_rgba8(92, 52, 26, 255)); // the rails
    let felt =
        tiny_skia::Rect::from_xywh(MARGIN, MARGIN, LENGTH as f32 * SCALE, WIDTH as f32 * SCALE)
            .ok_or("the table's size")?;
    pixmap.fill_rect(
        felt,
        &paint([18, 110, 60], 255),
        Transform::identity(),
        None,
    );
    let ball_pixels = pool::RADIUS as f32 * SCALE;
    for pocket in pool::pockets() {
        circle(
            &mut pixmap,
            pocket,
            2.2 * ball_pixels,
            &paint([10, 10, 10], 255),
            None,
        );
    }
    let cushion = Stroke {
        width: 7.0,
        ..Stroke::default()
    };
    for wall in pool::cushions() {
        let sweepcast::Wall::Segment { start, end } = wall else {
            continue;
        };
        let mut path = PathBuilder::new();
        let (a, b) = (pixel(start.as_dvec3()), pixel(end.as_dvec3()));
        path.move_to(a.0, a.1);
        path.line_to(b.0, b.1);
        if let Some(path) = path.finish() {
            pixmap.stroke_path(
                &path,
                &paint([6, 64, 30], 255),
                &cushion,
                Transform::identity(),
                None,
            );
        }
    }
    // The paths, the cue ball's last so that it shows above the others.
    let line = Stroke {
        width: 2.0,
        ..Stroke::default()
    };
    for (ball, points) in result.paths.iter().enumerate().rev() {
        let mut path = PathBuilder::new();
        for (k, &p) in points.iter().enumerate() {
            let (x, y) = pixel(p);
            if k == 0 {
                path.move_to(x, y);
            } else {
                path.line_to(x, y);
            }
        }
        if let Some(path) = path.finish() {
            pixmap.stroke_path(
                &path,
                &paint(COLOURS[ball % 16], 170),
                &line,
                Transform::identity(),
                None,
            );
        }
    }
    // Every impact point: white between balls, yellow on a cushion.
    for (_, event) in &result.events {
        let colour = match event.wall() {
            None => [255, 255, 255],
            Some(_) => [255, 230, 0],
        };
        let point = event.point;
        circle(&mut pixmap, point, 2.5, &paint(colour, 230), None);
    }
    // The balls where they started (faint) and where they ended (the pocketed ones not).
    let outline = paint([0, 0, 0], 255);
    for (ball, points) in result.paths.iter().enumerate() {
        circle(
            &mut pixmap,
            points[0],
            ball_pixels,
            &paint(COLOURS[ball % 16], 70),
            None,
        );
        if result.pocketed[ball].is_none() {
            let end = *points.last().expect("a path has its start");
            circle(
                &mut pixmap,
                end,
                ball_pixels,
                &paint(COLOURS[ball % 16], 255),
                Some(&outline),
            );
        }
    }
    if let Some(folder) = std::path::Path::new(out).parent() {
        std::fs::create_dir_all(folder).map_err(|e| e.to_string())?;
    }
    pixmap.save_png(out).map_err(|e| e.to_string())
}
