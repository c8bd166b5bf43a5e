//! `clawrl eval`: run a policy for N episodes; print and save the report, then draw (a gait
//! diagram) and film (a GIF of the first episode).
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clawrl_trainer::eval::{EvalOptions, ReportKind, evaluate};
use clawrl_trainer::remote::load_any;
use clawrl_trainer::video::{VideoOptions, record_episode};

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
    /// With --command on a task that steers by heading (the slope task): the yaw holds each
    /// episode's starting heading, as the task's training commands do, instead of a fixed yaw rate.
    #[arg(long, requires = "command")]
    hold_heading: bool,
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
    /// Write a GIF of the first episode (quadruped), drawn by MuJoCo's renderer (needs the
    /// OSMesa library: apt-get install libosmesa6), camera following the torso, command and
    /// measured velocity on each frame.
    #[arg(long, value_name = "GIF")]
    video: Option<PathBuf>,
    /// Frame size of --video, WIDTHxHEIGHT.
    #[arg(long, default_value = "320x240", value_parser = parse_size)]
    video_size: (u32, u32),
    /// Longest --video clip, in simulated seconds.
    #[arg(long, default_value_t = 6.0)]
    video_seconds: f64,
    /// Frames per simulated second of --video (every k-th control step, k the nearest whole).
    #[arg(long, default_value_t = 12.5)]
    video_fps: f64,
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
        check_parent("--gait-plot", p)?;
    }
    if let Some(v) = &a.video {
        anyhow::ensure!(
            !src.config.is_cartpole(),
            "--video: task `cartpole` is not filmed (only the quadruped tasks)"
        );
        check_parent("--video", v)?;
    }
    if a.command.is_some() && src.config.is_cartpole() {
        anyhow::bail!("--command: task `cartpole` takes no velocity command");
    }
    let opts = EvalOptions {
        episodes: a.episodes,
        num_envs: a.num_envs,
        threads: a.threads,
        seed: a.seed,
        command: a.command.clone(),
        hold_heading: a.hold_heading,
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
    if let Some(file) = a.video {
        let opts = VideoOptions {
            file,
            width: a.video_size.0,
            height: a.video_size.1,
            fps: a.video_fps,
            seconds: a.video_seconds,
            seed: a.seed,
            command: a.command,
        };
        let v = record_episode(&src.config, src.policy.as_ref(), &opts)
            .context("--video (the results above are saved)")?;
        println!(
            "video: {} ({} frames, every {} control steps, {} steps)",
            v.file.display(),
            v.frames,
            v.skip.every,
            v.steps
        );
    }
    Ok(())
}

/// `WIDTHxHEIGHT`, each 16 to 4096 pixels.
pub(crate) fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("`{s}` is not WIDTHxHEIGHT (e.g. 320x240)");
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let w: u32 = w.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    if !(16..=4096).contains(&w) || !(16..=4096).contains(&h) {
        return Err(format!("{w}x{h}: each side must be 16 to 4096 pixels"));
    }
    Ok((w, h))
}

fn check_parent(flag: &str, p: &Path) -> Result<()> {
    let parent = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    anyhow::ensure!(
        parent.is_dir(),
        "{flag} {}: folder {} does not exist",
        p.display(),
        parent.display()
    );
    Ok(())
}
