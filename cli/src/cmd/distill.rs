//! `clawrl distill`: train a student from a teacher (online policy distillation), with the same
//! run folder, progress, metrics, curves and resume as `clawrl train`.
use std::path::{Path, PathBuf};

use anyhow::Result;
use clawrl_trainer::algorithms::NoHooks;
use clawrl_trainer::config::find_config;
use clawrl_trainer::{ResumeOptions, Runner, load_train_config};

/// Distil a teacher into a student on the onboard observation (OPD), or continue a distillation.
#[derive(clap::Args)]
pub struct Args {
    /// The teacher: a run folder (its policy.safetensors), a policy file, or remote:teacher (a
    /// policy served by `clawrl serve`, reached through --endpoint; one request per step).
    #[arg(
        long,
        value_name = "DIR|FILE|remote:ROLE",
        required_unless_present = "resume"
    )]
    teacher: Option<String>,
    /// The endpoint config of a remote:... teacher.
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    endpoint: Option<PathBuf>,
    /// Distillation run config (the student's [policy] and the [distill] settings).
    #[arg(
        long,
        default_value = "configs/run/quadruped_distill.toml",
        conflicts_with = "resume"
    )]
    config: PathBuf,
    /// `opd` (RL + alpha x KL), `distill` (the divergence alone) or `rl` (from scratch).
    #[arg(long, value_parser = ["opd", "distill", "rl"])]
    mode: Option<String>,
    /// Override one key: run.*, policy.*, distill.* (distill.ppo.* for the student's PPO),
    /// task.*. With --resume only the run.* keys `clawrl train --resume` takes. Repeatable.
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    set: Vec<String>,
    /// Continue the distillation in DIR from its newest good checkpoint.
    #[arg(long, value_name = "DIR|FILE", conflicts_with_all = ["teacher", "mode"])]
    resume: Option<PathBuf>,
    /// A new distillation whose student and critic start from this run folder's newest good
    /// checkpoint (or this checkpoint file): for example OPD after a pure distillation.
    #[arg(long, value_name = "DIR|FILE", conflicts_with = "resume")]
    init_from: Option<PathBuf>,
    /// Output folder (default: run.out_dir); with --resume, a branch.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// No progress bar, plain progress lines (the default when stderr is not a terminal).
    #[arg(long)]
    no_progress: bool,
}

/// A run folder's policy file, or the file itself.
fn teacher_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join("policy.safetensors")
    } else {
        path.to_path_buf()
    }
}

pub fn run(a: Args) -> Result<()> {
    let mut runner = match (a.resume, a.teacher) {
        (Some(from), _) => Runner::resume(
            &from,
            &ResumeOptions {
                overrides: a.set,
                out: a.out,
                from_checkpoint: None,
            },
        )?,
        (None, Some(teacher)) => {
            let mut set = if clawrl_trainer::remote::role(&teacher)?.is_some() {
                let endpoint = a
                    .endpoint
                    .unwrap_or_else(|| clawrl_endpoint::config::DEFAULT_FILE.into());
                vec![
                    format!("distill.teacher={teacher}"),
                    format!("distill.endpoint={}", endpoint.display()),
                ]
            } else {
                anyhow::ensure!(
                    a.endpoint.is_none(),
                    "--endpoint is for a remote:... teacher, and --teacher {teacher} is a path"
                );
                let file = teacher_file(Path::new(&teacher));
                anyhow::ensure!(
                    file.is_file(),
                    "--teacher {}: no such policy file (train a teacher with `clawrl train`)",
                    file.display()
                );
                vec![format!("distill.teacher={}", file.display())]
            };
            if let Some(m) = a.mode {
                // Only pure distillation may roll out the mean action (the shipped student
                // does); the PPO modes sample, so --mode opd works on the shipped config.
                if m != "distill" {
                    set.push("distill.rollout_noise=1.0".into());
                }
                set.push(format!("distill.mode={m}"));
            }
            set.extend(a.set);
            let cfg = load_train_config(&find_config(&a.config)?, &set)?;
            anyhow::ensure!(
                cfg.algo.name() == "distill",
                "{} trains with {}, not distill",
                a.config.display(),
                cfg.algo.name()
            );
            let out = a.out.unwrap_or_else(|| PathBuf::from(&cfg.run.run.out_dir));
            match a.init_from {
                Some(from) => Runner::init_from(cfg, &out, &from)?,
                None => Runner::new(cfg, &out)?,
            }
        }
        (None, None) => anyhow::bail!("give --teacher (or --resume)"),
    };
    runner.progress = !a.no_progress;
    tracing::info!("distilling into {}", runner.out_dir.display());
    let s = runner.train(&mut NoHooks)?;
    println!(
        "done: {} iterations, {} env steps in {:.1} s; mean return {:.3}\noutputs: {}/{{config.toml,metrics.csv,curves.png,policy.safetensors,checkpoints/}}\nnext: clawrl export --policy {} --out {}/student.clawrl",
        s.iterations,
        s.env_steps,
        s.wall_s,
        s.mean_return,
        runner.out_dir.display(),
        runner.out_dir.display(),
        runner.out_dir.display()
    );
    Ok(())
}
