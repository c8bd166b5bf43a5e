//! Success against floor tilt (issue 31): a policy on a fixed slope, up and down, at two
//! frictions, with its claws free and forced open, one evaluation per point. A success is an
//! episode with no fall whose mean speed along the command is at least [`MIN_SPEED`] and
//! within [`SPEED_TOLERANCE`] of it, and that went up (or down) the slope: sliding down a
//! slope is not a descent, and turning round to walk down it is not a climb
//! ([`went_the_way`]).
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use plotters::prelude::*;

use crate::config::TrainConfig;
use crate::eval::{EpisodeResult, EvalOptions, evaluate};
use clawrl_policy::ActionSource;

pub const MIN_SPEED: f64 = 0.15;
pub const SPEED_TOLERANCE: f64 = 0.15;

/// Which way the robot walks on the slope (`task.terrain.heading`), always forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Up,
    Down,
}

impl Direction {
    fn heading(self) -> &'static str {
        match self {
            Direction::Up => "uphill",
            Direction::Down => "downhill",
        }
    }
}

/// One point of the curve's grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Condition {
    pub tilt_deg: f64,
    pub friction: f64,
    pub direction: Direction,
    /// Claws held open (`env.claw_action_scale = 0`): what the claws are worth.
    pub claws_open: bool,
}

impl Condition {
    /// The task overrides that put an evaluation at this point.
    pub fn overrides(&self) -> Vec<String> {
        let mut o = vec![
            "task.terrain.slope_probability=1.0".to_string(),
            format!("task.terrain.slope_degrees=[{0:.1}, {0:.1}]", self.tilt_deg),
            format!("task.randomization.friction=[{0}, {0}]", self.friction),
            format!("task.terrain.heading={}", self.direction.heading()),
        ];
        if self.claws_open {
            o.push("task.env.claw_action_scale=0.0".to_string());
        }
        o
    }

    /// The line this point belongs to in the plot and table.
    pub fn series(&self) -> String {
        format!(
            "{}, friction {}, claws {}",
            match self.direction {
                Direction::Up => "up",
                Direction::Down => "down",
            },
            self.friction,
            if self.claws_open { "open" } else { "free" }
        )
    }
}

/// The curve's grid: every tilt for each friction, direction and claw mode.
pub fn grid(tilts: &[f64], frictions: &[f64]) -> Vec<Condition> {
    let mut v = Vec::new();
    for &friction in frictions {
        for claws_open in [false, true] {
            for direction in [Direction::Up, Direction::Down] {
                for &tilt_deg in tilts {
                    v.push(Condition {
                        tilt_deg,
                        friction,
                        direction,
                        claws_open,
                    });
                }
            }
        }
    }
    v
}

/// Whether an episode at forward command `command` (m/s) and point `c` succeeded.
pub fn succeeded(e: &EpisodeResult, command: f64, c: &Condition) -> bool {
    !e.fell
        && e.forward_speed >= MIN_SPEED
        && (e.forward_speed - command).abs() <= SPEED_TOLERANCE
        && went_the_way(e, c)
}

/// On a tilted floor, the torso rose (up) or fell (down) by at least half of what its distance
/// from the start gives on the floor's tilt. The speed is measured in the body's frame, so a
/// robot that turns round and walks down a slope it was told to climb would pass without it
/// (the first slope student's HIL climbs did: BENCHMARKS.md).
pub fn went_the_way(e: &EpisodeResult, c: &Condition) -> bool {
    if c.tilt_deg <= 0.0 {
        return true;
    }
    let due = 0.5 * e.distance * c.tilt_deg.to_radians().tan();
    match c.direction {
        Direction::Up => e.rise > 0.0 && e.rise >= due,
        Direction::Down => e.rise < 0.0 && -e.rise >= due,
    }
}

/// One evaluated point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub condition: Condition,
    pub episodes: usize,
    pub success: f64,
    pub fall_rate: f64,
    pub forward_speed: f64,
    /// Mean claw grip in [0, 1] over every claw and sample.
    pub claw_grip: f64,
}

/// Evaluates `policy` at `c` (deterministic actions, forward command `speed`; with
/// `opts.hold_heading` its yaw holds the starting heading, else a yaw rate of 0).
pub fn measure(
    cfg: &TrainConfig,
    policy: &dyn ActionSource,
    c: &Condition,
    speed: f64,
    opts: &EvalOptions,
) -> Result<Point> {
    let mut cfg = cfg.clone();
    cfg.apply_task_overrides(&c.overrides(), "slope-curve")?;
    let opts = EvalOptions {
        command: Some(vec![speed as f32, 0.0, 0.0]),
        ..opts.clone()
    };
    let r = evaluate(&cfg, policy, &opts)?;
    let n = r.episodes.len();
    let ok = r.episodes.iter().filter(|e| succeeded(e, speed, c)).count();
    Ok(Point {
        condition: *c,
        episodes: n,
        success: ok as f64 / n.max(1) as f64,
        fall_rate: r.fall_rate(),
        forward_speed: r.forward_speed(),
        claw_grip: r.claws().mean_grip(),
    })
}

/// The curve as CSV, one row per point.
pub fn csv(points: &[Point]) -> String {
    let mut s = String::from(
        "tilt_deg,friction,direction,claws,episodes,success,fall_rate,forward_speed_mps,claw_grip\n",
    );
    for p in points {
        let c = &p.condition;
        let _ = writeln!(
            s,
            "{},{},{},{},{},{:.3},{:.3},{:.3},{:.3}",
            c.tilt_deg,
            c.friction,
            c.direction.heading(),
            if c.claws_open { "open" } else { "free" },
            p.episodes,
            p.success,
            p.fall_rate,
            p.forward_speed,
            p.claw_grip
        );
    }
    s
}

/// The curve as a markdown table: one row per series, success (%) per tilt.
pub fn table(points: &[Point]) -> String {
    let tilts = distinct(points.iter().map(|p| p.condition.tilt_deg));
    let mut s = String::from("| series |");
    for t in &tilts {
        let _ = write!(s, " {t:.0} deg |");
    }
    s.push_str("\n|---|");
    s.push_str(&"---|".repeat(tilts.len()));
    s.push('\n');
    for (name, pts) in series(points) {
        let _ = write!(s, "| {name} |");
        for t in &tilts {
            match pts.iter().find(|p| p.condition.tilt_deg == *t) {
                Some(p) => {
                    let _ = write!(s, " {:.0} % |", 100.0 * p.success);
                }
                None => s.push_str(" |"),
            }
        }
        s.push('\n');
    }
    s
}

/// The values of `v`, sorted, each once.
fn distinct(v: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut out: Vec<f64> = v.collect();
    out.sort_by(f64::total_cmp);
    out.dedup();
    out
}

/// Points grouped by series, in grid order.
fn series(points: &[Point]) -> Vec<(String, Vec<Point>)> {
    let mut out: Vec<(String, Vec<Point>)> = Vec::new();
    for p in points {
        let name = p.condition.series();
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(*p),
            None => out.push((name, vec![*p])),
        }
    }
    out
}

/// Two panels against tilt: success (%) per series, and the mean claw grip with the claws
/// free (closed on slopes, open on flat is what a claw-foot robot should show).
pub fn plot(points: &[Point], path: &Path, title: &str) -> Result<()> {
    crate::metrics::register_font();
    let max_tilt = points
        .iter()
        .map(|p| p.condition.tilt_deg)
        .fold(5.0, f64::max);
    let groups = series(points);
    let draw = || -> std::result::Result<(), Box<dyn std::error::Error>> {
        let root = BitMapBackend::new(path, (1400, 560)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 24))?;
        let (left, right) = root.split_horizontally(800);
        let mut chart = ChartBuilder::on(&left)
            .caption("success against floor tilt", ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..max_tilt, 0.0..100.0)?;
        chart
            .configure_mesh()
            .x_desc("floor tilt (deg)")
            .y_desc("success (%)")
            .draw()?;
        for (i, (name, pts)) in groups.iter().enumerate() {
            let colour = Palette99::pick(i).to_rgba();
            let open = pts.first().is_some_and(|p| p.condition.claws_open);
            let style = if open {
                colour.stroke_width(1)
            } else {
                colour.stroke_width(3)
            };
            chart
                .draw_series(LineSeries::new(
                    pts.iter()
                        .map(|p| (p.condition.tilt_deg, 100.0 * p.success)),
                    style,
                ))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        let mut grip = ChartBuilder::on(&right)
            .caption("claw grip, claws free", ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..max_tilt, 0.0..1.0)?;
        grip.configure_mesh()
            .x_desc("floor tilt (deg)")
            .y_desc("mean grip (0 open, 1 closed)")
            .draw()?;
        for (i, (name, pts)) in groups.iter().enumerate() {
            if pts.first().is_some_and(|p| p.condition.claws_open) {
                continue;
            }
            let colour = Palette99::pick(i).to_rgba();
            grip.draw_series(LineSeries::new(
                pts.iter()
                    .filter(|p| p.claw_grip.is_finite())
                    .map(|p| (p.condition.tilt_deg, p.claw_grip)),
                colour.stroke_width(3),
            ))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
        }
        grip.configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| anyhow::anyhow!("drawing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn episode(fell: bool, forward_speed: f64) -> EpisodeResult {
        EpisodeResult {
            fell,
            forward_speed,
            ..Default::default()
        }
    }

    const FLAT: Condition = Condition {
        tilt_deg: 0.0,
        friction: 1.0,
        direction: Direction::Up,
        claws_open: false,
    };

    #[test]
    fn a_success_walks_along_the_command_without_falling() {
        let ok = |e: &EpisodeResult, c: f64| succeeded(e, c, &FLAT);
        assert!(ok(&episode(false, 0.3), 0.3));
        assert!(ok(&episode(false, 0.15), 0.3));
        assert!(ok(&episode(false, 0.449), 0.3));
        // Too slow, too fast, sliding back, fallen.
        assert!(!ok(&episode(false, 0.14), 0.3));
        assert!(!ok(&episode(false, 0.46), 0.3));
        assert!(!ok(&episode(false, -0.3), 0.3));
        assert!(!ok(&episode(true, 0.3), 0.3));
        // At a slow command the 0.15 m/s floor still holds.
        assert!(!ok(&episode(false, 0.1), 0.1));
    }

    /// 2 m along a 20 degree floor is 0.73 m of height: half of it is due either way, and a
    /// walk at the right speed that went the wrong way is no success.
    #[test]
    fn a_climb_gains_height_and_a_descent_loses_it() {
        let walked = |rise: f64| EpisodeResult {
            distance: 2.0,
            rise,
            ..episode(false, 0.3)
        };
        let up = Condition {
            tilt_deg: 20.0,
            ..FLAT
        };
        let down = Condition {
            direction: Direction::Down,
            ..up
        };
        assert!(succeeded(&walked(0.7), 0.3, &up));
        assert!(!succeeded(&walked(0.3), 0.3, &up), "a third of the height");
        assert!(
            !succeeded(&walked(-0.7), 0.3, &up),
            "turned round and went down"
        );
        assert!(succeeded(&walked(-0.7), 0.3, &down));
        assert!(!succeeded(&walked(0.7), 0.3, &down));
        assert!(
            succeeded(&walked(0.0), 0.3, &FLAT),
            "no height due on a flat floor"
        );
    }

    #[test]
    fn the_grid_covers_every_tilt_friction_direction_and_claw_mode() {
        let g = grid(&[0.0, 10.0, 20.0], &[0.4, 1.0]);
        assert_eq!(g.len(), 3 * 2 * 2 * 2);
        let open = g.iter().filter(|c| c.claws_open).count();
        assert_eq!(open, 12);
        let c = g
            .iter()
            .find(|c| c.claws_open && c.direction == Direction::Down)
            .unwrap();
        let o = c.overrides();
        assert!(
            o.contains(&"task.env.claw_action_scale=0.0".to_string()),
            "{o:?}"
        );
        assert!(
            o.contains(&"task.terrain.heading=downhill".to_string()),
            "{o:?}"
        );
        assert!(
            o.contains(&"task.terrain.slope_probability=1.0".to_string()),
            "{o:?}"
        );
    }

    #[test]
    fn the_table_has_a_row_per_series_and_a_column_per_tilt() {
        let points: Vec<Point> = grid(&[0.0, 20.0], &[0.4])
            .into_iter()
            .map(|c| Point {
                condition: c,
                episodes: 4,
                success: if c.tilt_deg == 0.0 { 1.0 } else { 0.25 },
                fall_rate: 0.0,
                forward_speed: 0.3,
                claw_grip: 0.5,
            })
            .collect();
        let t = table(&points);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "| series | 0 deg | 20 deg |");
        assert_eq!(lines.len(), 2 + 4, "{t}");
        assert!(
            t.contains("| up, friction 0.4, claws free | 100 % | 25 % |"),
            "{t}"
        );
        assert_eq!(csv(&points).lines().count(), 1 + 8);
    }
}
