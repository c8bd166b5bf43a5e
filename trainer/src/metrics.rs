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

/// Training curves: return, episode length and throughput, then up to six algorithm columns,
/// against environment steps.
pub fn plot_curves(m: &Metrics, path: &Path, title: &str) -> Result<()> {
    register_font();
    let fixed = ["mean_return", "mean_episode_length", "steps_per_s"];
    let skip = [
        "iteration",
        "env_steps",
        "wall_s",
        "episodes",
        "t_physics",
        "t_policy",
        "t_update",
    ];
    let mut panels: Vec<&str> = fixed
        .iter()
        .copied()
        .filter(|c| m.columns.iter().any(|x| x == c))
        .collect();
    panels.extend(
        m.columns
            .iter()
            .map(String::as_str)
            .filter(|c| !fixed.contains(c) && !skip.contains(c) && !c.starts_with("t_"))
            .take(6),
    );
    let x = m
        .column("env_steps")
        .or_else(|| m.column("iteration"))
        .unwrap_or_default();
    let draw = || -> std::result::Result<(), Box<dyn std::error::Error>> {
        let root = BitMapBackend::new(path, (1500, 900)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 24))?;
        let cols = 3;
        let rows = panels.len().div_ceil(cols).max(1);
        let areas = root.split_evenly((rows, cols));
        for (area, name) in areas.iter().zip(&panels) {
            let y = m.column(name).unwrap_or_default();
            let pts: Vec<(f64, f64)> = x
                .iter()
                .copied()
                .zip(y)
                .filter(|(a, b)| a.is_finite() && b.is_finite())
                .collect();
            let (Some((x0, x1)), Some((y0, y1))) = (
                finite_range(pts.iter().map(|p| p.0)),
                finite_range(pts.iter().map(|p| p.1)),
            ) else {
                continue;
            };
            let mut chart = ChartBuilder::on(area)
                .caption(*name, ("sans-serif", 18))
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(60)
                .build_cartesian_2d(x0..x1, y0..y1)?;
            chart
                .configure_mesh()
                .x_desc("env steps")
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

/// Gait diagram: joint angles over time (top) and foot contacts as bars (bottom).
pub fn plot_gait(
    time: &[f64],
    joints: &[Vec<f64>],
    contacts: &[Vec<bool>],
    joint_names: &[String],
    path: &Path,
    title: &str,
) -> Result<()> {
    register_font();
    let draw = || -> std::result::Result<(), Box<dyn std::error::Error>> {
        let root = BitMapBackend::new(path, (1400, 900)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 22))?;
        let (top, bottom) = root.split_vertically(560);
        let t1 = time.last().copied().unwrap_or(1.0).max(1e-3);
        let t0 = time.first().copied().unwrap_or(0.0);
        let (y0, y1) = finite_range(joints.iter().flatten().copied()).unwrap_or((-1.0, 1.0));
        let mut chart = ChartBuilder::on(&top)
            .caption("joint angles (rad)", ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(t0..t1, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .label_style(("sans-serif", 12))
            .draw()?;
        let nj = joints.first().map(Vec::len).unwrap_or(0);
        for j in 0..nj {
            let color = Palette99::pick(j).to_rgba();
            let name = joint_names
                .get(j)
                .cloned()
                .unwrap_or_else(|| format!("joint {j}"));
            chart
                .draw_series(LineSeries::new(
                    time.iter().zip(joints).map(|(&t, q)| (t, q[j])),
                    color.stroke_width(2),
                ))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
        }
        if nj > 0 {
            chart
                .configure_series_labels()
                .label_font(("sans-serif", 11))
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
        }
        let nf = contacts.first().map(Vec::len).unwrap_or(0).max(1);
        let mut chart = ChartBuilder::on(&bottom)
            .caption("foot contacts", ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(t0..t1, 0.0..nf as f64)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("foot")
            .label_style(("sans-serif", 12))
            .draw()?;
        let dt = if time.len() > 1 {
            time[1] - time[0]
        } else {
            0.02
        };
        for f in 0..nf {
            let color = Palette99::pick(f).to_rgba();
            chart.draw_series(
                time.iter()
                    .zip(contacts)
                    .filter(|(_, c)| c.get(f).copied().unwrap_or(false))
                    .map(|(&t, _)| {
                        Rectangle::new(
                            [(t, f as f64 + 0.1), (t + dt, f as f64 + 0.9)],
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
        plot_gait(&t, &q, &c, &["a".into(), "b".into()], &gait, "gait").unwrap();
        assert!(std::fs::metadata(&gait).unwrap().len() > 1000);
        std::fs::remove_dir_all(dir).ok();
    }
}
