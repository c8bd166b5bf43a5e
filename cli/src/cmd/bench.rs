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
    /// Instead: time one policy's action for a batch of one (what the robot computes every
    /// control step). Repeatable; run folder, checkpoint, policy file or bundle.
    #[arg(long, value_name = "DIR|FILE")]
    inference: Vec<PathBuf>,
}

pub fn run(a: Args) -> Result<()> {
    clawrl_policy::init_candle_threads(1);
    if !a.inference.is_empty() {
        println!(
            "| policy | kind | hidden | history | parameters | median time per action (batch 1) |\n|---|---|---|---|---|---|"
        );
        for path in &a.inference {
            let src = clawrl_trainer::source::load_source(path)?;
            let (t, params) = clawrl_trainer::bench::inference_time(src.policy.as_ref(), 5000)?;
            let c = src.policy.config();
            println!(
                "| {} | {} | {:?} | {} | {params} | {:.1} us |",
                path.display(),
                c.kind,
                c.hidden,
                c.history,
                t * 1e6
            );
        }
        return Ok(());
    }
    let cfg = load_train_config(&find_config(&a.config)?, &a.set)?;
    println!(
        "{}",
        clawrl_trainer::bench::run(&cfg, a.iterations, a.repeats)?
    );
    Ok(())
}
