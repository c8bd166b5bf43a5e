//! What a HIL run tells a person: one block of text per scenario (pass conditions, the gap to
//! the pure simulation, faults, timing) and a top-down picture of the torso's path in the loop
//! next to the pure simulation's.
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Result, anyhow};
use plotters::prelude::*;

use crate::reference::Pose;
use crate::scenario::{Check, Comparison, Outcome, verdict};

static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// One check's line: `[ok]` or `[FAILED]`.
fn check_line(c: &Check) -> String {
    if c.held {
        format!("  [ok] {}", c.what)
    } else {
        format!("  [FAILED] {}", c.what)
    }
}

fn pass_fail(passed: bool) -> &'static str {
    if passed { "PASS" } else { "FAIL" }
}

/// A block of checks under a title (the gap over seeds).
pub fn checks_text(title: &str, checks: &[Check]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "== {title}: {}", pass_fail(verdict(checks)));
    for c in checks {
        let _ = writeln!(s, "{}", check_line(c));
    }
    s
}

/// One scenario run's block: its checks, its figures against the pure simulation, the line's
/// faults and the time it took.
pub fn scenario_text(o: &Outcome, cmp: Option<&Comparison>, checks: &[Check]) -> String {
    let t = &o.trace;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "== {}, seed {} ({}): {}",
        o.scenario.name,
        o.seed,
        o.scenario.about,
        pass_fail(verdict(checks))
    );
    for c in checks {
        let _ = writeln!(s, "{}", check_line(c));
    }
    if let Some(c) = cmp {
        let _ = writeln!(
            s,
            "  {} figures: in the loop {:.2} m at ({:.3}, {:.3}) m/s, error {:.3} m/s, yaw {:.3} rad/s; pure simulation {:.2} m at ({:.3}, {:.3}) m/s, error {:.3} m/s, yaw {:.3} rad/s; gap distance {:.1} %, velocity error {:.1} %",
            o.scenario.name,
            c.hil.distance,
            c.hil.velocity[0],
            c.hil.velocity[1],
            c.hil.velocity_error,
            c.hil.yaw_rate,
            c.sim.distance,
            c.sim.velocity[0],
            c.sim.velocity[1],
            c.sim.velocity_error,
            c.sim.yaw_rate,
            c.distance_gap() * 100.0,
            c.velocity_error_gap() * 100.0
        );
    }
    if o.scenario.kind == crate::scenario::Kind::Teleop {
        s.push_str(&teleop_text(&crate::scenario::teleop_figures(o)));
    }
    let sim_s = t.seconds();
    let _ = writeln!(
        s,
        "  line: {} packets, {} lost, {} bytes corrupted, {} held, {} replaced; runtime: {} cycles, {} link drop(s), {} goal entries limited, phases {:?}",
        t.faults.packets,
        t.faults.dropped,
        t.faults.bytes_corrupted,
        t.faults.held,
        t.faults.replaced,
        o.summary.cycles,
        o.summary.link_downs,
        o.summary.goals_limited,
        o.summary.phases
    );
    let _ = writeln!(
        s,
        "  time: {sim_s:.1} s simulated in {:.2} s of wall time ({:.1}x real time), {} MuJoCo steps, {} periods without the runtime",
        t.wall.as_secs_f64(),
        sim_s / t.wall.as_secs_f64().max(1e-9),
        t.physics_steps,
        t.free_run_periods
    );
    s
}

/// A teleop run's figures: per segment the command and the body's mean velocity (and how far
/// the torso moved: a stand's drift), then the cut.
fn teleop_text(f: &crate::scenario::TeleopFigures) -> String {
    let v = f.mean_velocity;
    if f.segments.is_empty() {
        return format!(
            "  drive figures: the torso travelled {:.2} m from the takeover, at a mean ({:.2} m/s, {:.2} m/s, {:.2} rad/s)\n",
            f.travelled_m, v[0], v[1], v[2]
        );
    }
    let mut s = String::from("  teleop figures:");
    for (g, v, moved) in &f.segments {
        let c = g.velocity;
        let _ = write!(
            s,
            " [{:.0}-{:.0} s ({:.2}, {:.2}, {:.2}): ({:.2}, {:.2}, {:.2}), moved {:.2} m]",
            g.from_s, g.until_s, c[0], c[1], c[2], v[0], v[1], v[2], moved
        );
    }
    let _ = writeln!(
        s,
        "; cut: command zero after {:.2?} s, stop after {:.2?} s; command to the policy in at most {:?} period(s)",
        f.zero_after_cut_s, f.halt_after_cut_s, f.command_latency_periods
    );
    s
}

/// A scenario run that stopped with an error instead of an outcome: one block, the error once.
pub fn error_text(name: &str, seed: u64, about: &str, error: &anyhow::Error) -> String {
    format!("== {name}, seed {seed} ({about}): ERROR\n  {error:#}\n")
}

/// The report's last lines: one verdict per scenario (`seeds` as run), then the overall one.
pub fn verdict_lines(verdicts: &[Verdict]) -> String {
    let mut s = String::from("\n");
    for v in verdicts {
        let _ = writeln!(
            s,
            "verdict: {} ({}): {}; {}",
            v.name,
            v.seeds,
            pass_fail(v.passed),
            v.figure
        );
    }
    let n = verdicts.len();
    let passed = verdicts.iter().filter(|v| v.passed).count();
    let _ = writeln!(
        s,
        "verdict: overall: {} ({passed} of {n} scenarios passed)",
        pass_fail(passed == n)
    );
    s
}

/// One scenario's line at the end of a report.
pub struct Verdict {
    pub name: String,
    /// The seeds, as "seed 1" or "seeds 1-16".
    pub seeds: String,
    pub passed: bool,
    /// Its headline figures (see [`headline`]).
    pub figure: String,
}

/// A scenario's headline over its seeds: the servo outputs outside the joint limits (the
/// safety figure every scenario has), and for a walking one the loop's mean speed (yaw rate,
/// turning in place) against the pure simulation's.
pub fn headline(out_of_limit: u64, checked: u64, cmps: &[Comparison], turn: bool) -> String {
    let mut s = format!("{out_of_limit} of {checked} servo outputs outside the limits");
    if !cmps.is_empty() {
        let mean = |f: &dyn Fn(&Comparison) -> f64| crate::scenario::mean_of(cmps, f);
        let (what, hil, sim) = if turn {
            ("yaw", mean(&|c| c.hil.yaw_rate), mean(&|c| c.sim.yaw_rate))
        } else {
            (
                "speed",
                mean(&|c| c.hil.velocity[0]),
                mean(&|c| c.sim.velocity[0]),
            )
        };
        let unit = if turn { "rad/s" } else { "m/s" };
        let _ = write!(
            s,
            "; {what} in the loop {hil:.2} {unit} (pure simulation {sim:.2})"
        );
    }
    s
}

/// The torso's path seen from above, HIL against the pure simulation, each from where the
/// policy took over.
pub fn path_plot(file: &Path, title: &str, hil: &[Pose], sim: &[Pose]) -> Result<()> {
    let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    let rel = |p: &[Pose]| -> Vec<(f64, f64)> {
        let Some(o) = p.first() else {
            return Vec::new();
        };
        p.iter()
            .map(|q| (q.base_pos[0] - o.base_pos[0], q.base_pos[1] - o.base_pos[1]))
            .collect()
    };
    let (h, s) = (rel(hil), rel(sim));
    let all = h.iter().chain(&s);
    let (mut lo, mut hi) = ((-0.1f64, -0.1f64), (0.1f64, 0.1f64));
    for &(x, y) in all {
        lo = (lo.0.min(x), lo.1.min(y));
        hi = (hi.0.max(x), hi.1.max(y));
    }
    // Equal scales on both axes: a square around the paths.
    let span = (hi.0 - lo.0).max(hi.1 - lo.1) * 1.1;
    let (cx, cy) = ((lo.0 + hi.0) / 2.0, (lo.1 + hi.1) / 2.0);
    let root = BitMapBackend::new(file, (640, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(
            cx - span / 2.0..cx + span / 2.0,
            cy - span / 2.0..cy + span / 2.0,
        )
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc("x (m)")
        .y_desc("y (m)")
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    for (points, colour, label) in [
        (&s, BLUE, "pure simulation"),
        (&h, RED, "HIL (runtime + firmware + MuJoCo)"),
    ] {
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                colour.stroke_width(2),
            ))
            .map_err(|e| anyhow!("{e}"))?
            .label(label)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour));
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}
