//! `clawrl plot --mcap FILE`: a robot run's telemetry (the MCAP `clawrl-runtime mcap` writes,
//! read back by topic) as one picture: what was commanded against what the body did, the first
//! leg's joints against their goals, and the loop's timing.
use std::path::Path;

use anyhow::{Result, anyhow};
use clawrl_runtime::mcap_log::Series;
use plotters::prelude::*;

/// Servos drawn in the joint panel: the first leg's (hip abduction, hip pitch, knee).
const JOINTS: usize = 3;
/// One line of a panel: its legend, its points (time s, value), its colour.
pub(crate) type Line<'a> = (&'a str, &'a [(f64, f64)], RGBColor);

pub(crate) const COLOURS: [RGBColor; 3] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
];

pub fn draw(s: &Series, out: &Path, title: &str) -> Result<()> {
    clawrl_trainer::metrics::register_font();
    let t_end = s.cycle_t.last().copied().unwrap_or(1.0).max(1e-3);
    let draw = || -> std::result::Result<(), Box<dyn std::error::Error>> {
        let root = BitMapBackend::new(out, (1200, 900)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 22))?;
        let panels = root.split_evenly((3, 1));

        // Commanded forward speed and yaw rate, and the yaw rate the IMU measured.
        let command_fwd: Vec<(f64, f64)> = zip(&s.command_t, s.command.iter().map(|c| c[0]));
        let command_yaw: Vec<(f64, f64)> = zip(&s.command_t, s.command.iter().map(|c| c[1]));
        let yaw: Vec<(f64, f64)> = zip(&s.state_t, s.yaw_rate.iter().copied());
        let lines = [
            ("commanded forward (m/s)", &command_fwd[..], COLOURS[0]),
            ("commanded yaw rate (rad/s)", &command_yaw[..], COLOURS[1]),
            ("measured yaw rate, IMU (rad/s)", &yaw[..], COLOURS[2]),
        ];
        panel(&panels[0], "Command and body", "m/s, rad/s", t_end, &lines)?;

        // The first leg: where each joint was told to go (thin) and where it was (thick).
        let mut joint_lines = Vec::new();
        for (j, colour) in COLOURS.iter().enumerate().take(JOINTS.min(s.names.len())) {
            let pos = zip(
                &s.state_t,
                s.position
                    .iter()
                    .map(|p| p.get(j).copied().unwrap_or(f64::NAN)),
            );
            let goal = zip(
                &s.goal_t,
                s.goal.iter().map(|g| g.get(j).copied().unwrap_or(f64::NAN)),
            );
            // The goal first: the reading is drawn over it.
            joint_lines.push((format!("{} goal", s.names[j]), goal, light(*colour)));
            joint_lines.push((format!("{} (rad)", s.names[j]), pos, *colour));
        }
        let refs: Vec<Line> = (joint_lines.iter())
            .map(|(n, p, c)| (n.as_str(), &p[..], *c))
            .collect();
        panel(
            &panels[1],
            "First leg: joint angles and goals",
            "rad",
            t_end,
            &refs,
        )?;

        let compute = zip(&s.cycle_t, s.compute_us.iter().copied());
        let late = zip(&s.cycle_t, s.lateness_us.iter().copied());
        let timing = [
            ("compute per cycle (µs)", &compute[..], COLOURS[0]),
            ("wake-up lateness (µs)", &late[..], COLOURS[1]),
        ];
        panel(&panels[2], &phases(s), "µs", t_end, &timing)?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| anyhow!("drawing {}: {e}", out.display()))
}

/// `c` two thirds of the way to white: a goal drawn beside its joint's reading.
fn light(c: RGBColor) -> RGBColor {
    let l = |x: u8| ((u16::from(x) + 2 * 255) / 3) as u8;
    RGBColor(l(c.0), l(c.1), l(c.2))
}

fn zip(t: &[f64], v: impl Iterator<Item = f64>) -> Vec<(f64, f64)> {
    t.iter()
        .copied()
        .zip(v)
        .filter(|(a, b)| a.is_finite() && b.is_finite())
        .collect()
}

/// The safety phases in the order they came, with the time each began: the timing panel's
/// caption (a stop's Halting, FadeOut and Lowering show where the policy let go).
fn phases(s: &Series) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut last: Option<&str> = None;
    for (t, p) in s.cycle_t.iter().zip(&s.phase) {
        if last != Some(p.as_str()) {
            out.push(format!("{p} {t:.1} s"));
            last = Some(p);
        }
    }
    format!("Loop timing; phases: {}", out.join(", "))
}

pub(crate) fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    unit: &str,
    t_end: f64,
    lines: &[Line],
) -> std::result::Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let ys = lines.iter().flat_map(|(_, p, _)| p.iter().map(|q| q.1));
    let (lo, hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
        (a.min(y), b.max(y))
    });
    let (lo, hi) = if lo.is_finite() && hi > lo {
        (lo, hi)
    } else {
        (-1.0, 1.0) // nothing to draw: an empty panel, not a panic
    };
    let pad = 0.05 * (hi - lo);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..t_end, (lo - pad)..(hi + pad))?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc(unit)
        .draw()?;
    for (name, points, colour) in lines {
        let style = ShapeStyle::from(*colour).stroke_width(2);
        chart
            .draw_series(LineSeries::new(points.iter().copied(), style))?
            .label(*name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], style));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    Ok(())
}
