//! `clawrl plot`: a run's metrics.csv -> curves.png; a robot run's MCAP -> run.png.
use std::path::PathBuf;

use anyhow::{Context, Result};
use clawrl_trainer::metrics::{Metrics, plot_curves};

/// Draw the training curves of a run (metrics.csv -> curves.png), or a robot run's telemetry
/// (`--mcap`, from `clawrl-runtime mcap LOG`: command against the body, the first leg's joints
/// against their goals, the loop's timing).
#[derive(clap::Args)]
pub struct Args {
    #[arg(long, value_name = "DIR", required_unless_present = "mcap")]
    run: Option<PathBuf>,
    /// A robot run's telemetry as MCAP (default picture: FILE with .png).
    #[arg(long, value_name = "FILE", conflicts_with = "run")]
    mcap: Option<PathBuf>,
    /// The picture (default: curves.png in the run folder; runs/plot/NAME/curves.png for a run
    /// under assets/pretrained/, whose files stay as shipped).
    #[arg(long, value_name = "PNG")]
    out: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<()> {
    if let Some(file) = &a.mcap {
        let series = clawrl_runtime::mcap_log::read_series(file).map_err(anyhow::Error::msg)?;
        let out = a.out.clone().unwrap_or_else(|| file.with_extension("png"));
        let title = format!("Robot run: {}", file.display());
        super::plot_mcap::draw(&series, &out, &title)?;
        println!("{}", out.display());
        return Ok(());
    }
    let run = a.run.context("--run or --mcap")?;
    let csv = run.join("metrics.csv");
    let text =
        std::fs::read_to_string(&csv).with_context(|| format!("reading {}", csv.display()))?;
    let m = Metrics::from_csv(&text).with_context(|| format!("parsing {}", csv.display()))?;
    let spec = run.display().to_string();
    let out = a.out.unwrap_or_else(|| {
        super::outputs::default_dir("plot", &spec, Some(&run)).join("curves.png")
    });
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    plot_curves(&m, &out, &format!("Training curves: {}", run.display()))?;
    println!("{}", out.display());
    Ok(())
}
