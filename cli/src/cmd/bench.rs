//! `clawrl bench`: raw physics against the whole training loop, with a breakdown.
use std::path::PathBuf;

use anyhow::Result;
use clawrl_trainer::config::find_config;
use clawrl_trainer::load_train_config;

/// Throughput benchmark: raw physics vs the full training loop, with a breakdown.
#[derive(clap::Args)]
pub struct Args {
    #[arg(long, default_value = "configs/run/cartpole_ppo.toml")]
    config: PathBuf,
    /// Override one key (the grammar of `clawrl train`). Repeatable.
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    set: Vec<String>,
    /// Training iterations measured (after one warm-up iteration).
    #[arg(long, default_value_t = 10)]
    iterations: usize,
    /// Repeats of each measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
}

pub fn run(a: Args) -> Result<()> {
    let cfg = load_train_config(&find_config(&a.config)?, &a.set)?;
    println!(
        "{}",
        clawrl_trainer::bench::run(&cfg, a.iterations, a.repeats)?
    );
    Ok(())
}
