//! Per-iteration metrics: CSV on disk, PNG training curves with plotters (bitmap backend and
//! an embedded DejaVu Sans font, so no system font libraries are needed).
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use plotters::prelude::*;

/// DejaVu Sans (fonts-dejavu-core, see assets/fonts/DejaVuSans-LICENSE.txt).
pub static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

pub fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// A table of f64 columns, one row per iteration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<f64>>,
}

impl Metrics {
    /// Appends a row; the first row fixes the columns, later rows must name the same ones.
    pub fn push(&mut self, row: &[(&str, f64)]) -> Result<()> {
        if self.columns.is_empty() {
            self.columns = row.iter().map(|(k, _)| k.to_string()).collect();
        }
        anyhow::ensure!(
            row.len() == self.columns.len()
                && row.iter().zip(&self.columns).all(|((k, _), c)| k == c),
            "metrics row has different columns"
        );
        self.rows.push(row.iter().map(|(_, v)| *v).collect());
        Ok(())
    }

    pub fn column(&self, name: &str) -> Option<Vec<f64>> {
        let i = self.columns.iter().position(|c| c == name)?;
        Some(self.rows.iter().map(|r| r[i]).collect())
    }

    pub fn header(&self) -> String {
        self.columns.join(",")
    }

    pub fn row_line(row: &[f64]) -> String {
        row.iter()
            .map(|v| format!("{v}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn to_csv(&self) -> String {
        let mut s = self.header();
        s.push('\n');
        for r in &self.rows {
            s.push_str(&Self::row_line(r));
            s.push('\n');
        }
        s
    }

    pub fn from_csv(text: &str) -> Result<Self> {
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let Some(header) = lines.next() else {
            return Ok(Self::default());
        };
        let columns: Vec<String> = header.split(',').map(|s| s.trim().to_string()).collect();
        let mut rows = Vec::new();
        for (i, l) in lines.enumerate() {
            let row: Vec<f64> = l
                .split(',')
                .map(|v| v.trim().parse::<f64>())
                .collect::<Result<_, _>>()
                .with_context(|| format!("metrics line {}: not numbers", i + 2))?;
            anyhow::ensure!(
                row.len() == columns.len(),
                "metrics line {} has {} values, expected {}",
                i + 2,
                row.len(),
                columns.len()
            );
            rows.push(row);
        }
        Ok(Self { columns, rows })
    }

    /// Appends the last row to `path` (writing the header first when the file is new).
    pub fn append_last(&self, path: &Path) -> Result<()> {
        let Some(last) = self.rows.last() else {
            return Ok(());
        };
        let new = !path.exists();
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("open {}", path.display()))?;
        if new {
            writeln!(f, "{}", self.header())?;
        }
        writeln!(f, "{}", Self::row_line(last))?;
        Ok(())
    }
}

/// 1234567 -> "1.23M": short axis labels for step counts.
fn si(x: f64) -> String {
    let a = x.abs();
    if a >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if a >= 1e3 {
        format!("{:.0}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

fn finite_range(v: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for x in v.filter(|x| x.is_finite()) {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    if lo > hi {
        return None;
    }
    if hi - lo < 1e-9 {
        let pad = lo.abs().max(1.0) * 0.05;
        return Some((lo - pad, hi + pad));
    }
    let pad = (hi - lo) * 0.05;
    Some((lo - pad, hi + pad))
}

/// What a metrics column means, for people: panel title and y-axis label with its unit.
pub fn describe(column: &str) -> (String, String) {
    let (title, unit) = match column {
        "mean_return" => ("Episode return (mean of last 100)", "return"),
        "mean_episode_length" => ("Episode length (mean of last 100)", "control steps"),
        "steps_per_s" => ("Throughput", "env steps / s"),
        "value_loss" => ("Value loss", "loss"),
        "policy_loss" => ("Policy (surrogate) loss", "loss"),
        "entropy" => ("Policy entropy", "nats"),
        "approx_kl" => ("Approximate KL per update", "nats"),
        "clip_fraction" => ("Clipped fraction of ratios", "fraction"),
        "grad_norm" => ("Gradient norm before clipping", "L2 norm"),
        "learning_rate" => ("Learning rate", "lr"),
        "explained_variance" => ("Explained variance of the value", "fraction"),
        "action_std" => ("Action noise std", "std"),
        "q_loss" => ("Q loss", "loss"),
        "actor_loss" => ("Actor loss", "loss"),
        "alpha" => ("Entropy temperature", "alpha"),
        "q_mean" => ("Mean Q value", "Q"),
        "buffer_size" => ("Replay buffer", "transitions"),
        "wall_s" => ("Wall time", "s"),
        "kl_teacher" => ("KL(teacher || student)", "nats"),
        "distill_loss" => ("Distillation loss (divergence to the teacher)", "loss"),
        "distill_alpha" => ("Distillation weight alpha", "alpha"),
        "ema_updates" => ("EMA teacher updates (total)", "updates"),
        other => match other.strip_prefix("rew_") {
            Some(term) => {
                return (
                    format!("Reward term: {}", term.replace('_', " ")),
                    "sum per episode".into(),
                );
            }
            None => return (other.replace('_', " "), String::new()),
        },
    };
    (title.to_string(), unit.to_string())
}

/// Training curves: return, episode length and throughput, then up to six algorithm columns,
/// all against one x axis (environment steps) with the same range on every panel.
pub fn plot_curves(m: &Metrics, path: &Path, title: &str) -> Result<()> {
    register_font();
    let fixed = ["mean_return", "mean_episode_length", "steps_per_s"];
    // A distillation run shows its distance to the teacher before PPO's diagnostics.
    let first = ["kl_teacher", "distill_loss", "distill_alpha"];
    let skip = ["iteration", "env_steps", "wall_s", "episodes"];
    let mut panels: Vec<&str> = fixed
        .iter()
        .copied()
        .filter(|c| m.columns.iter().any(|x| x == c))
        .collect();
    let present = |c: &&str| m.columns.iter().any(|x| x == c);
    panels.extend(first.iter().copied().filter(present));
    panels.extend(
        m.columns
            .iter()
            .map(String::as_str)
            .filter(|c| {
                !fixed.contains(c)
                    && !first.contains(c)
                    && !skip.contains(c)
                    && !c.starts_with("t_")
                    && !c.starts_with("rew_")
            })
            .take(6),
    );
    let (x, x_label) = match m.column("env_steps") {
        Some(x) => (x, "environment steps"),
        None => (m.column("iteration").unwrap_or_default(), "iteration"),
    };
    let x_range = finite_range(x.iter().copied()).unwrap_or((0.0, 1.0));
    let draw = || -> std::result::Result<(), Box<dyn std::error::Error>> {
        let cols = 3;
        let rows = panels.len().div_ceil(cols).max(1);
        let root = BitMapBackend::new(path, (1500, 80 + 300 * rows as u32)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 24))?;
        let areas = root.split_evenly((rows, cols));
        for (area, name) in areas.iter().zip(&panels) {
            let y = m.column(name).unwrap_or_default();
            let pts: Vec<(f64, f64)> = x
                .iter()
                .copied()
                .zip(y)
                .filter(|(a, b)| a.is_finite() && b.is_finite())
                .collect();
            let (panel_title, unit) = describe(name);
            let (y0, y1) = finite_range(pts.iter().map(|p| p.1)).unwrap_or((0.0, 1.0));
            let mut chart = ChartBuilder::on(area)
                .caption(panel_title, ("sans-serif", 18))
                .margin(10)
                .x_label_area_size(40)
                .y_label_area_size(70)
                .build_cartesian_2d(x_range.0..x_range.1, y0..y1)?;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc(unit)
                .x_label_formatter(&|x| si(*x))
                .x_labels(5)
                .y_labels(6)
                .label_style(("sans-serif", 12))
                .draw()?;
            chart.draw_series(LineSeries::new(pts, &BLUE))?;
        }
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| anyhow!("cannot draw {}: {e}", path.display()))
}

/// Splits `FL_hip_pitch` into (`FL`, `hip pitch`); names without a leg prefix stay whole.
fn leg_and_joint(name: &str) -> (String, String) {
    match name.split_once('_') {
        Some((leg, joint)) => (leg.to_string(), joint.replace('_', " ")),
        None => (String::new(), name.to_string()),
    }
}

/// Gait diagram: joint angles over time, one panel per leg with the legend beside the panels
/// (colour = joint, the same in every leg), then foot contacts as bars with named feet. Every
/// panel shares the time axis.
pub fn plot_gait(
    time: &[f64],
    joints: &[Vec<f64>],
    contacts: &[Vec<bool>],
    joint_names: &[String],
    foot_names: &[String],
    path: &Path,
    title: &str,
) -> Result<()> {
    register_font();
    let nj = joints.first().map(Vec::len).unwrap_or(0);
    let names: Vec<(String, String)> = (0..nj)
        .map(|j| leg_and_joint(joint_names.get(j).map(String::as_str).unwrap_or("joint")))
        .collect();
    let mut legs: Vec<String> = Vec::new();
    let mut kinds: Vec<String> = Vec::new();
    for (leg, kind) in &names {
        if !legs.contains(leg) {
            legs.push(leg.clone());
        }
        if !kinds.contains(kind) {
            kinds.push(kind.clone());
        }
    }
    let draw = || -> std::result::Result<(), Box<dyn std::error::Error>> {
        let root = BitMapBackend::new(path, (1500, 1000)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 22))?;
        let (main, legend) = root.split_horizontally(1280);
        let (top, bottom) = main.split_vertically(620);
        let t1 = time.last().copied().unwrap_or(1.0).max(1e-3);
        let t0 = time.first().copied().unwrap_or(0.0);
        let (y0, y1) = finite_range(joints.iter().flatten().copied()).unwrap_or((-1.0, 1.0));
        let panels = top.split_evenly((legs.len().div_ceil(2).max(1), 2));
        for (area, leg) in panels.iter().zip(&legs) {
            let caption = foot_names
                .iter()
                .find(|f| f.ends_with(&format!("({leg})")))
                .cloned()
                .unwrap_or_else(|| leg.clone());
            let mut chart = ChartBuilder::on(area)
                .caption(format!("{caption}: joint angles"), ("sans-serif", 16))
                .margin(8)
                .x_label_area_size(35)
                .y_label_area_size(55)
                .build_cartesian_2d(t0..t1, y0..y1)?;
            chart
                .configure_mesh()
                .x_desc("time (s)")
                .y_desc("angle (rad)")
                .label_style(("sans-serif", 12))
                .draw()?;
            for (j, (l, kind)) in names.iter().enumerate() {
                if l != leg {
                    continue;
                }
                let k = kinds.iter().position(|x| x == kind).unwrap_or(0);
                let color = Palette99::pick(k).to_rgba();
                chart.draw_series(LineSeries::new(
                    time.iter().zip(joints).map(|(&t, q)| (t, q[j])),
                    color.stroke_width(2),
                ))?;
            }
        }
        // The legend sits beside the data, never on it.
        legend.draw(&Text::new("joint", (10, 40), ("sans-serif", 16)))?;
        for (k, kind) in kinds.iter().enumerate() {
            let y = 70 + 26 * k as i32;
            let color = Palette99::pick(k).to_rgba();
            legend.draw(&PathElement::new(
                vec![(10, y), (40, y)],
                color.stroke_width(3),
            ))?;
            legend.draw(&Text::new(kind.clone(), (48, y - 8), ("sans-serif", 15)))?;
        }
        let nf = contacts.first().map(Vec::len).unwrap_or(0).max(1);
        let feet: Vec<String> = (0..nf)
            .map(|f| {
                foot_names
                    .get(f)
                    .cloned()
                    .unwrap_or_else(|| format!("foot {f}"))
            })
            .collect();
        let mut chart = ChartBuilder::on(&bottom)
            .caption(
                "foot contacts (bar = foot on the ground)",
                ("sans-serif", 16),
            )
            .margin(8)
            .x_label_area_size(35)
            .y_label_area_size(150)
            .build_cartesian_2d(t0..t1, (0..nf).into_segmented())?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_labels(nf + 1)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => feet.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .label_style(("sans-serif", 13))
            .draw()?;
        let dt = if time.len() > 1 {
            time[1] - time[0]
        } else {
            0.02
        };
        for f in 0..nf {
            let color = Palette99::pick(f + kinds.len()).to_rgba();
            chart.draw_series(
                time.iter()
                    .zip(contacts)
                    .filter(|(_, c)| c.get(f).copied().unwrap_or(false))
                    .map(|(&t, _)| {
                        Rectangle::new(
                            [
                                (t, SegmentValue::Exact(f)),
                                (t + dt, SegmentValue::Exact(f + 1)),
                            ],
                            color.filled(),
                        )
                    }),
            )?;
        }
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| anyhow!("cannot draw {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_round_trip_and_png() {
        let mut m = Metrics::default();
        for i in 0..5 {
            let v = f64::from(i);
            m.push(&[
                ("iteration", v),
                ("env_steps", 100.0 * v),
                ("mean_return", v * v),
                ("value_loss", f64::NAN),
            ])
            .unwrap();
        }
        assert!(m.push(&[("iteration", 1.0)]).is_err());
        let back = Metrics::from_csv(&m.to_csv()).unwrap();
        assert_eq!(back.columns, m.columns);
        assert_eq!(
            back.column("mean_return").unwrap(),
            vec![0.0, 1.0, 4.0, 9.0, 16.0]
        );
        assert!(back.column("value_loss").unwrap()[0].is_nan());
        let dir = std::env::temp_dir().join(format!("clawrl-metrics-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let png = dir.join("c.png");
        plot_curves(&m, &png, "test").unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        let gait = dir.join("g.png");
        let t: Vec<f64> = (0..50).map(|i| f64::from(i) * 0.02).collect();
        let q: Vec<Vec<f64>> = t.iter().map(|x| vec![x.sin(), x.cos()]).collect();
        let c: Vec<Vec<bool>> = (0..50).map(|i| vec![i % 10 < 5, i % 10 >= 5]).collect();
        let feet = [
            "front left (FL)".to_string(),
            "front right (FR)".to_string(),
        ];
        plot_gait(
            &t,
            &q,
            &c,
            &["FL_knee".into(), "FR_knee".into()],
            &feet,
            &gait,
            "gait",
        )
        .unwrap();
        assert!(std::fs::metadata(&gait).unwrap().len() > 1000);
        assert_eq!(leg_and_joint("RR_hip_abd"), ("RR".into(), "hip abd".into()));
        assert_eq!(
            describe("rew_feet_air_time").0,
            "Reward term: feet air time"
        );
        assert_eq!(describe("mean_return").1, "return");
        std::fs::remove_dir_all(dir).ok();
    }
}
