//! `clawrl`: train, evaluate, plot and simulate.
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use clawrl_trainer::algorithms::NoHooks;
use clawrl_trainer::eval::{EvalOptions, evaluate};
use clawrl_trainer::metrics::{Metrics, plot_curves};
use clawrl_trainer::{Runner, checkpoint, load_train_config};

#[derive(Parser)]
#[command(
    name = "clawrl",
    version,
    about = "clawrl desktop trainer for the claw-foot quadruped"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train a teacher policy (PPO or SAC) from a run config.
    Train {
        /// Run config (names the task, the algorithm file and the policy).
        #[arg(long, default_value = "configs/run/quadruped_flat_ppo.toml")]
        config: PathBuf,
        /// Override one key: `run.*`/`policy.*` (run file), `ppo.*`/`sac.*` (algorithm file),
        /// `task.*` (task file). Repeatable.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Continue the run in DIR from its latest checkpoint (only `run.*` keys may be set).
        #[arg(long, value_name = "DIR")]
        resume: Option<PathBuf>,
        /// Output directory (default: `run.out_dir` of the config).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// No progress bar (log a line every 10 iterations instead).
        #[arg(long)]
        no_progress: bool,
    },
    /// Run a checkpoint (file, or run directory for its latest) for N episodes.
    Eval {
        #[arg(long, value_name = "DIR|FILE")]
        checkpoint: PathBuf,
        #[arg(long, default_value_t = 100)]
        episodes: usize,
        /// Fixed command `vx,vy,yaw_rate` for every episode (default: the task's random commands).
        #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
        command: Option<Vec<f32>>,
        /// Write a gait diagram (joint angles and foot contacts) of the first episode.
        #[arg(long, value_name = "PNG")]
        gait_plot: Option<PathBuf>,
        /// Seconds recorded for the gait diagram.
        #[arg(long, default_value_t = 4.0)]
        gait_seconds: f64,
        #[arg(long, default_value_t = 12345)]
        seed: u64,
        #[arg(long, default_value_t = 16)]
        num_envs: usize,
        #[arg(long, default_value_t = 2)]
        threads: usize,
    },
    /// Draw the training curves of a run (metrics.csv -> curves.png).
    Plot {
        #[arg(long, value_name = "DIR")]
        run: PathBuf,
        #[arg(long, value_name = "PNG")]
        out: Option<PathBuf>,
    },
    /// Stand the quadruped in the simulator and print a report.
    Simulate {
        #[arg(long, default_value = "configs/task/quadruped_flat.toml")]
        task_config: PathBuf,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Throughput benchmark: raw physics vs the full training loop, with a breakdown.
    Bench {
        #[arg(long, default_value = "configs/run/cartpole_ppo.toml")]
        config: PathBuf,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Training iterations measured (after one warm-up iteration).
        #[arg(long, default_value_t = 10)]
        iterations: usize,
        /// Repeats of each measurement (the median is reported).
        #[arg(long, default_value_t = 3)]
        repeats: usize,
    },
}

fn main() {
    // candle reads RAYON_NUM_THREADS on every matmul: `train` and `bench` set it from
    // `run.candle_threads` (when unset) before any candle op, the other commands to 1.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    if let Err(e) = run(Cli::parse()) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Train {
            config,
            set,
            resume,
            out,
            no_progress,
        } => {
            let mut runner = match resume {
                Some(dir) => Runner::resume(&dir, &set)?,
                None => {
                    let cfg = load_train_config(&config, &set)?;
                    let out = out.unwrap_or_else(|| PathBuf::from(&cfg.run.run.out_dir));
                    Runner::new(cfg, &out)?
                }
            };
            runner.progress = !no_progress;
            tracing::info!(
                "training into {} (RAYON_NUM_THREADS={})",
                runner.out_dir.display(),
                std::env::var("RAYON_NUM_THREADS").unwrap_or_default()
            );
            let s = runner.train(&mut NoHooks)?;
            println!(
                "done: {} iterations, {} env steps in {:.1} s ({:.0} steps/s last iteration); mean return {:.3}, episode length {:.1}\noutputs: {}/{{metrics.csv,curves.png,policy.safetensors,checkpoints/}}",
                s.iterations,
                s.env_steps,
                s.wall_s,
                s.steps_per_s,
                s.mean_return,
                s.mean_episode_length,
                runner.out_dir.display()
            );
        }
        Command::Eval {
            checkpoint: ck,
            episodes,
            command,
            gait_plot,
            gait_seconds,
            seed,
            num_envs,
            threads,
        } => {
            clawrl_policy::init_candle_threads(1);
            let path = checkpoint::find(&ck)?;
            let (tensors, meta) = checkpoint::load(&path)?;
            let text = meta
                .get(clawrl_trainer::runner::META_TRAIN_CONFIG)
                .context("checkpoint lacks its train config")?;
            let cfg: clawrl_trainer::TrainConfig = toml::from_str(text)?;
            let policy = clawrl_policy::Registry::default().from_parts(
                &|k| tensors.get(k).cloned(),
                &meta,
                &path,
            )?;
            let opts = EvalOptions {
                episodes,
                num_envs,
                threads,
                seed,
                command,
                gait_seconds,
                gait_plot: gait_plot.clone(),
            };
            let report = evaluate(&cfg, policy.as_ref(), &opts)?;
            println!("checkpoint {}\n{}", path.display(), report.text());
            if let Some(p) = gait_plot {
                println!("gait diagram: {}", p.display());
            }
        }
        Command::Plot { run, out } => {
            let csv = run.join("metrics.csv");
            let text = std::fs::read_to_string(&csv)
                .with_context(|| format!("reading {}", csv.display()))?;
            let m = Metrics::from_csv(&text)?;
            let out = out.unwrap_or_else(|| run.join("curves.png"));
            plot_curves(&m, &out, &run.display().to_string())?;
            println!("{}", out.display());
        }
        Command::Simulate {
            task_config,
            set,
            seconds,
            seed,
        } => {
            println!(
                "{}",
                clawrl_trainer::task::simulate_report(&task_config, &set, seconds, seed)?
            );
        }
        Command::Bench {
            config,
            set,
            iterations,
            repeats,
        } => {
            let cfg = load_train_config(&config, &set)?;
            println!("{}", clawrl_trainer::bench::run(&cfg, iterations, repeats)?);
        }
    }
    Ok(())
}
