//! `clawrl simulate`: stand the quadruped in the simulator and print a report.
use std::path::PathBuf;

use anyhow::Result;

/// Stand the quadruped in the simulator and print a report.
#[derive(clap::Args)]
pub struct Args {
    /// Task file (a relative path is looked for in the current directory, then the tree clawrl
    /// was built in; or under CLAWRL_ROOT alone when that is set).
    #[arg(long, default_value = "configs/task/quadruped_flat.toml")]
    task_config: PathBuf,
    /// Override one task key (task.* only). Repeatable.
    #[arg(long = "set", value_name = "task.KEY=VALUE")]
    set: Vec<String>,
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub fn run(a: Args) -> Result<()> {
    println!(
        "{}",
        clawrl_trainer::task::simulate_report(&a.task_config, &a.set, a.seconds, a.seed)?
    );
    Ok(())
}
