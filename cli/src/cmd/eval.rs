//! `clawrl eval`: run a policy for N episodes; print and save the report, then draw.
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clawrl_trainer::eval::{EvalOptions, ReportKind, evaluate};
use clawrl_trainer::remote::load_any;

/// Evaluate a policy: a run folder, a checkpoint, a policy file, a bundle, or a served policy.
#[derive(clap::Args)]
pub struct Args {
    /// Run folder (newest good checkpoint), checkpoint file, policy.safetensors, bundle
    /// (.clawrl), or remote:teacher / remote:student (through --endpoint).
    #[arg(
        long,
        visible_alias = "checkpoint",
        value_name = "DIR|FILE|remote:ROLE"
    )]
    policy: String,
    /// The endpoint config of remote:... policies.
    #[arg(long, value_name = "FILE", default_value = clawrl_endpoint::config::DEFAULT_FILE)]
    endpoint: PathBuf,
    #[arg(long, default_value_t = 100)]
    episodes: usize,
    /// Fixed command `vx,vy,yaw_rate` for every episode (default: the task's random commands);
    /// `0,0,0` measures drift and steps at zero command, `0,0,0.5` turning in place (the report's
    /// yaw rate line).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    command: Option<Vec<f32>>,
    /// Evaluate under other task settings (task.* keys only), e.g. a tilted floor.
    #[arg(long = "set", value_name = "task.KEY=VALUE")]
    set: Vec<String>,
    /// Where eval.txt, eval.toml (the numbers, for scripts) and eval_episodes.csv go (default:
    /// the policy's run folder; runs/eval/NAME for a bundle, a served policy or the shipped
    /// teacher under assets/pretrained/, whose files stay as shipped).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write a gait diagram (joint angles and foot contacts) of the first episode (quadruped).
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
}

pub fn run(a: Args) -> Result<()> {
    clawrl_policy::init_candle_threads(1);
    let mut src = load_any(&a.policy, &a.endpoint)?;
    src.config.apply_task_overrides(&a.set, "eval")?;
    // Refuse what cannot work before minutes of evaluation, not after.
    if let Some(p) = &a.gait_plot {
        anyhow::ensure!(
            !src.config.is_cartpole(),
            "--gait-plot: task `cartpole` has no feet to draw"
        );
        check_parent(p)?;
    }
    if a.command.is_some() && src.config.is_cartpole() {
        anyhow::bail!("--command: task `cartpole` takes no velocity command");
    }
    let opts = EvalOptions {
        episodes: a.episodes,
        num_envs: a.num_envs,
        threads: a.threads,
        seed: a.seed,
        command: a.command,
        gait_seconds: if a.gait_plot.is_some() {
            a.gait_seconds
        } else {
            0.0
        },
    };
    let report = evaluate(&src.config, src.policy.as_ref(), &opts)?;
    let text = format!("policy {}\n{}", src.label, report.text());
    println!("{text}");
    let out = a
        .out
        .unwrap_or_else(|| super::outputs::default_dir("eval", &a.policy, src.run_dir.as_deref()));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    std::fs::write(out.join("eval.txt"), format!("{text}\n"))
        .with_context(|| format!("writing {}", out.join("eval.txt").display()))?;
    std::fs::write(out.join("eval.toml"), report.summary_toml()?)
        .with_context(|| format!("writing {}", out.join("eval.toml").display()))?;
    std::fs::write(out.join("eval_episodes.csv"), report.episodes_csv())?;
    println!(
        "saved: {}, {} and {}",
        out.join("eval.txt").display(),
        out.join("eval.toml").display(),
        out.join("eval_episodes.csv").display()
    );
    if let (Some(p), ReportKind::Locomotion) = (&a.gait_plot, report.kind) {
        let title = format!("Gait of {} ({})", src.config.run.run.task, src.label);
        match report.plot_gait(p, &title) {
            Ok(()) => println!("gait diagram: {}", p.display()),
            Err(e) => tracing::warn!("no gait diagram ({e:#}); the results above are saved"),
        }
    }
    Ok(())
}

fn check_parent(p: &Path) -> Result<()> {
    let parent = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    anyhow::ensure!(
        parent.is_dir(),
        "--gait-plot {}: folder {} does not exist",
        p.display(),
        parent.display()
    );
    Ok(())
}
