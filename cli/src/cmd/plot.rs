//! `clawrl plot`: a run's metrics.csv -> curves.png.
use std::path::PathBuf;

use anyhow::{Context, Result};
use clawrl_trainer::metrics::{Metrics, plot_curves};

/// Draw the training curves of a run (metrics.csv -> curves.png).
#[derive(clap::Args)]
pub struct Args {
    #[arg(long, value_name = "DIR")]
    run: PathBuf,
    /// The picture (default: curves.png in the run folder; runs/plot/NAME/curves.png for a run
    /// under assets/pretrained/, whose files stay as shipped).
    #[arg(long, value_name = "PNG")]
    out: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<()> {
    let csv = a.run.join("metrics.csv");
    let text =
        std::fs::read_to_string(&csv).with_context(|| format!("reading {}", csv.display()))?;
    let m = Metrics::from_csv(&text).with_context(|| format!("parsing {}", csv.display()))?;
    let spec = a.run.display().to_string();
    let out = a.out.unwrap_or_else(|| {
        super::outputs::default_dir("plot", &spec, Some(&a.run)).join("curves.png")
    });
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    plot_curves(&m, &out, &format!("Training curves: {}", a.run.display()))?;
    println!("{}", out.display());
    Ok(())
}
