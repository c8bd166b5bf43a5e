//! `clawrl train`: a new run from a run file, or `--resume` (extend a run, or branch it with
//! `--out`).
use std::path::PathBuf;

use anyhow::Result;
use clawrl_trainer::algorithms::NoHooks;
use clawrl_trainer::config::find_config;
use clawrl_trainer::{ResumeOptions, Runner, load_train_config};

/// Train a teacher policy (PPO, SAC or CrossQ) from a run config, or continue a run.
#[derive(clap::Args)]
pub struct Args {
    /// Run config (names the task, the algorithm and the policy). A run's own config.toml is one.
    #[arg(
        long,
        default_value = "configs/run/quadruped_flat_ppo.toml",
        conflicts_with = "resume"
    )]
    config: PathBuf,
    /// Override one key: run.*, policy.*, the run's algorithm (ppo.*, sac.* or crossq.*), task.*.
    /// With --resume only run.max_iterations, run.checkpoint_every, run.keep_checkpoints,
    /// run.plot_every, run.env_threads and run.candle_threads. Repeatable.
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    set: Vec<String>,
    /// Continue the run in DIR (or from one checkpoint file) from its newest good checkpoint.
    #[arg(long, value_name = "DIR|FILE")]
    resume: Option<PathBuf>,
    /// Resume from this iteration's checkpoint instead of the newest.
    #[arg(long, value_name = "N", requires = "resume")]
    from_checkpoint: Option<usize>,
    /// A new run from --config whose policy and critic start from this run folder's newest good
    /// checkpoint (or this checkpoint file): a fine-tune with changed settings.
    #[arg(long, value_name = "DIR|FILE", conflicts_with = "resume")]
    init_from: Option<PathBuf>,
    /// Output folder (default: run.out_dir). With --resume: branch into this new folder and
    /// leave the original run untouched.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// No progress bar, plain progress lines (the default when stderr is not a terminal).
    #[arg(long)]
    no_progress: bool,
}

pub fn run(a: Args) -> Result<()> {
    let mut runner = match a.resume {
        Some(from) => Runner::resume(
            &from,
            &ResumeOptions {
                overrides: a.set,
                out: a.out,
                from_checkpoint: a.from_checkpoint,
            },
        )?,
        None => {
            let cfg = load_train_config(&find_config(&a.config)?, &a.set)?;
            let out = a.out.unwrap_or_else(|| PathBuf::from(&cfg.run.run.out_dir));
            match a.init_from {
                Some(from) => Runner::init_from(cfg, &out, &from)?,
                None => Runner::new(cfg, &out)?,
            }
        }
    };
    runner.progress = !a.no_progress;
    tracing::info!(
        "training into {} (RAYON_NUM_THREADS={})",
        runner.out_dir.display(),
        std::env::var("RAYON_NUM_THREADS").unwrap_or_default()
    );
    let s = runner.train(&mut NoHooks)?;
    println!(
        "done: {} iterations, {} env steps in {:.1} s ({:.0} steps/s last iteration); mean return {:.3}, episode length {:.1}\noutputs: {}/{{config.toml,metrics.csv,curves.png,policy.safetensors,checkpoints/}}",
        s.iterations,
        s.env_steps,
        s.wall_s,
        s.steps_per_s,
        s.mean_return,
        s.mean_episode_length,
        runner.out_dir.display()
    );
    Ok(())
}
