//! The scenario of the seeds' fast-objects post: fast projectiles fired across a field of
//! thin targets (plates, which are segments, and small rocks, which are circles), each
//! projectile moving up to 200 m in one 25 Hz frame. Run with the time-sliced method of the
//! seeds' tutorial (the frame cut into k = 4 and k = 150 slices, static overlap tested after
//! each) and with sweepcast's swept test on the same inputs.
//!
//! ```text
//! cargo run --release --example tunneling -- [--out PNG]
//! ```
//!
//! Prints, per method, how many projectiles it found a hit for and how many it let through a
//! target (tunnelled), and writes `pictures/tunneling.png`: three panels, top to bottom
//! k = 4, k = 150 and sweepcast, each named in its corner; each projectile's path from the left, ending in a green dot
//! where the method detected its first hit, or drawn on in red, with a red ring where it
//! passed through a target undetected (and an orange dot where a target behind stopped it). Exits 1 if sweepcast's f32 answer is not the f64 oracle's
//! (hit or miss, target, time to 10⁻⁵), or if a time-sliced hit has no swept hit behind it.

mod common;
mod tunnel;

use std::process::ExitCode;

use common::bad_options;
use common::picture::paint;
use sweepcast::glam::Vec3;
use sweepcast::{MovingCircle, Wall};
use tiny_skia::{Color, FillRule, Mask, PathBuilder, Pixmap, Stroke, Transform};
use tunnel::{FIELD, Hit, Target, projectiles, swept, targets, time_sliced};

fn main() -> ExitCode {
    let mut out = String::from("pictures/tunneling.png");
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next()) {
            ("--out", Some(value)) => out = value,
            _ => return bad_options(&format!("bad option {flag}; see the file's header")),
        }
    }
    let targets = targets();
    let projectiles = projectiles();
    let mut failed = false;
    let mut panels = Vec::new();
    for slices in [Some(4), Some(150), None] {
        let mut found = Vec::new();
        for (k, projectile) in projectiles.iter().enumerate() {
            let (ours, oracle) = swept(projectile, &targets);
            let answer = match slices {
                Some(slices) => {
                    let sliced = time_sliced(projectile, &targets, slices);
                    if sliced.is_some() && ours.is_none() {
                        eprintln!(
                            "FAIL: projectile {k}: a time-sliced hit ({slices} slices) with no swept hit"
                        );
                        failed = true;
                    }
                    sliced
                }
                None => {
                    let agree = match (ours, oracle) {
                        (None, None) => true,
                        (Some((t, a)), Some((s, b))) => a == b && (f64::from(t) - s).abs() <= 1e-5,
                        _ => false,
                    };
                    if !agree {
                        eprintln!(
                            "FAIL: projectile {k}: sweepcast {ours:?}, the f64 oracle {oracle:?}"
                        );
                        failed = true;
                    }
                    ours
                }
            };
            found.push((answer, ours));
        }
        // Tunnelled: no hit at all, or a hit on a target behind the one it first met.
        let tunnelled = |(answer, ours): &(Hit<f32>, Hit<f32>)| {
            ours.is_some_and(|(_, first)| answer.is_none_or(|(_, target)| target != first))
        };
        let truth = found.iter().filter(|(_, ours)| ours.is_some()).count();
        let through = found.iter().filter(|answer| tunnelled(answer)).count();
        let late = found
            .iter()
            .filter(|answer| !tunnelled(answer))
            .filter_map(|(answer, ours)| Some((answer.as_ref()?.0 - ours.as_ref()?.0).abs()))
            .fold(0.0f32, f32::max);
        let name = slices.map_or("sweepcast (swept test)".to_string(), |k| {
            format!("time-sliced, k = {k}")
        });
        println!(
            "{name:>24}: {} of {truth} first hits detected, {through} projectiles tunnelled through a target; worst time error {late:.4} of the frame",
            truth - through
        );
        panels.push((name, found));
    }
    if let Err(error) = draw(&projectiles, &targets, &panels, &out) {
        eprintln!("could not write {out}: {error}");
        return ExitCode::FAILURE;
    }
    println!("picture: {out}");
    if failed {
        return ExitCode::FAILURE;
    }
    println!("checks: PASS");
    ExitCode::SUCCESS
}

/// Pixels a metre, the margin, and the gap between panels, in pixels.
const SCALE: f32 = 9.0;
const MARGIN: f32 = 14.0;

/// Per projectile, the method's first hit and sweepcast's.
type Answers = Vec<(Hit<f32>, Hit<f32>)>;

fn draw(
    projectiles: &[MovingCircle],
    targets: &[Target],
    panels: &[(String, Answers)],
    out: &str,
) -> Result<(), String> {
    let panel_height = FIELD.y * SCALE + 2.0 * MARGIN;
    let width = (FIELD.x * SCALE + 2.0 * MARGIN).ceil() as u32;
    let height = (panel_height * panels.len() as f32).ceil() as u32;
    let mut pixmap = Pixmap::new(width, height).ok_or("the picture's size")?;
    pixmap.fill(Color::from_rgba8(250, 250, 247, 255));
    for (p, (name, answers)) in panels.iter().enumerate() {
        let top = p as f32 * panel_height;
        let at = |v: Vec3| (MARGIN + v.x * SCALE, top + MARGIN + (FIELD.y - v.y) * SCALE);
        let frame =
            tiny_skia::Rect::from_xywh(MARGIN, top + MARGIN, FIELD.x * SCALE, FIELD.y * SCALE)
                .ok_or("the panel's size")?;
        pixmap.fill_rect(
            frame,
            &paint([225, 228, 235], 255),
            Transform::identity(),
            None,
        );
        // Everything of the panel is drawn within its field.
        let mut field = Mask::new(width, height).ok_or("the mask's size")?;
        field.fill_path(
            &PathBuilder::from_rect(frame),
            FillRule::Winding,
            false,
            Transform::identity(),
        );
        let field = Some(&field);
        let outline = |pixmap: &mut Pixmap, path: &tiny_skia::Path, colour: [u8; 3], width: f32| {
            let stroke = Stroke {
                width,
                ..Stroke::default()
            };
            let paint = paint(colour, 255);
            pixmap.stroke_path(path, &paint, &stroke, Transform::identity(), field);
        };
        let line = |pixmap: &mut Pixmap, a: Vec3, b: Vec3, colour: [u8; 3], width: f32| {
            let mut path = PathBuilder::new();
            let (a, b) = (at(a), at(b));
            path.move_to(a.0, a.1);
            path.line_to(b.0, b.1);
            if let Some(path) = path.finish() {
                outline(pixmap, &path, colour, width);
            }
        };
        let dot = |pixmap: &mut Pixmap, c: Vec3, radius: f32, colour: [u8; 3], ring: bool| {
            let (x, y) = at(c);
            if let Some(path) = PathBuilder::from_circle(x, y, radius) {
                if ring {
                    outline(pixmap, &path, colour, 2.5);
                } else {
                    pixmap.fill_path(
                        &path,
                        &paint(colour, 255),
                        FillRule::Winding,
                        Transform::identity(),
                        None,
                    );
                }
            }
        };
        for target in targets {
            match *target {
                Target::Plate(Wall::Segment { start, end }) => {
                    line(&mut pixmap, start, end, [40, 40, 60], 3.0)
                }
                Target::Rock(rock) => dot(
                    &mut pixmap,
                    rock.center.extend(0.0),
                    rock.radius * SCALE,
                    [90, 90, 110],
                    false,
                ),
                Target::Plate(Wall::Plane { .. }) => {}
            }
        }
        for (projectile, (answer, truth)) in projectiles.iter().zip(answers) {
            let start = projectile.center.extend(0.0);
            let motion = projectile.displacement.extend(0.0);
            match (answer, truth) {
                (Some((t, target)), Some((_, first))) if target == first => {
                    let hit = start + motion * *t;
                    line(&mut pixmap, start, hit, [60, 120, 200], 1.5);
                    dot(&mut pixmap, hit, 4.5, [20, 160, 60], false);
                }
                (answer, Some((t, _))) => {
                    // Through the first target undetected: the flight to where the method
                    // stopped it (an orange dot on a target behind) or to the frame's end,
                    // the missed impact ringed.
                    let end = answer.map_or(1.0, |(stop, _)| stop);
                    line(&mut pixmap, start, start + motion * end, [210, 40, 40], 1.5);
                    dot(&mut pixmap, start + motion * *t, 7.0, [210, 40, 40], true);
                    if answer.is_some() {
                        dot(&mut pixmap, start + motion * end, 4.5, [240, 150, 0], false);
                    }
                }
                // A time-sliced hit with no swept hit (reported as a failure above).
                (Some((t, _)), None) => {
                    line(&mut pixmap, start, start + motion * *t, [60, 120, 200], 1.5);
                    dot(&mut pixmap, start + motion * *t, 4.5, [240, 150, 0], false);
                }
                (None, None) => line(&mut pixmap, start, start + motion, [150, 150, 160], 1.0),
            }
        }
        // The panel's method, over everything else.
        common::picture::text(
            &mut pixmap,
            name,
            MARGIN + 8.0,
            top + MARGIN + 8.0,
            2.0,
            [20, 20, 30],
        );
    }
    if let Some(folder) = std::path::Path::new(out).parent() {
        std::fs::create_dir_all(folder).map_err(|e| e.to_string())?;
    }
    pixmap.save_png(out).map_err(|e| e.to_string())
}
