//! The `clawrl-runtime` subcommands other than install/rollback/status (those are in
//! [`crate::install`]): argument structs and handlers that return the text to print.
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::config::RuntimeConfig;
use crate::run::RunOptions;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Runtime configuration (TOML).
    #[arg(long, default_value = "configs/runtime/robot.toml")]
    pub config: PathBuf,
    /// Run this bundle instead of the installed one (`install.root` of the config).
    #[arg(long)]
    pub bundle: Option<PathBuf>,
    /// Stop (lower the robot, torque off) after this many seconds.
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Override one config key, `KEY=VALUE` in TOML syntax (repeatable).
    #[arg(long = "set")]
    pub set: Vec<String>,
}

pub fn run(a: &RunArgs) -> Result<String> {
    let cfg = RuntimeConfig::load(&a.config, &a.set)?;
    let bundle = match &a.bundle {
        Some(b) => b.clone(),
        None => crate::install::current_bundle(&cfg.install.root)?,
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let opts = RunOptions {
        bundle,
        duration: a.seconds.map(Duration::from_secs_f64),
        stop,
    };
    let s = crate::run::run(&cfg, &opts)?;
    Ok(format!(
        "{} cycles, {} missed deadlines, max lateness {:?}, final phase {:?}, phases {:?}, \
         {} goal entries limited, {} link drop(s), {} records dropped{}",
        s.cycles,
        s.missed_deadlines,
        s.max_lateness,
        s.final_phase,
        s.phases,
        s.goals_limited,
        s.link_downs,
        s.records_dropped,
        s.log
            .map(|l| format!(", telemetry {}", l.display()))
            .unwrap_or_default()
    ))
}

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// A telemetry log written by `run`.
    pub log: PathBuf,
    /// The bundle, when it is no longer where the log says (same SHA-256 required).
    #[arg(long)]
    pub bundle: Option<PathBuf>,
}

pub fn replay(a: &ReplayArgs) -> Result<String> {
    let r = crate::replay::replay(&a.log, a.bundle.as_deref())?;
    if r.mismatches > 0 {
        anyhow::bail!("{r}");
    }
    Ok(r.to_string())
}

#[derive(Debug, clap::Args)]
pub struct SelfTestArgs {}

pub fn self_test(_: &SelfTestArgs) -> Result<String> {
    let lines = crate::selftest::run()?;
    let n = lines.len();
    Ok(format!(
        "{}\nself-test passed: {n} checks on {}",
        lines
            .iter()
            .map(|l| format!("ok: {l}"))
            .collect::<Vec<_>>()
            .join("\n"),
        std::env::consts::ARCH
    ))
}

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Time the student's forward pass.
    #[arg(long)]
    pub inference: bool,
    /// The bundle to time; default a synthetic student of the shipped shape.
    #[arg(long)]
    pub bundle: Option<PathBuf>,
    /// Forward passes to time.
    #[arg(long, default_value_t = 20_000)]
    pub iterations: usize,
}

pub fn bench(a: &BenchArgs) -> Result<String> {
    let mut lines = Vec::new();
    if a.inference {
        let (bundle, what) = match &a.bundle {
            Some(p) => (
                clawrl_bundle::read(p, &clawrl_bundle::Trust::default())?,
                p.display().to_string(),
            ),
            None => {
                let p = std::env::temp_dir()
                    .join(format!("clawrl-bench-{}.clawrl", std::process::id()));
                crate::synthetic::write_shipped_shape(&p, 7)?;
                let b = clawrl_bundle::read(&p, &clawrl_bundle::Trust::default())?;
                std::fs::remove_file(&p).ok();
                (b, "synthetic student of the shipped shape".to_string())
            }
        };
        let student = crate::inference::Student::from_bundle(&bundle)?;
        let p = crate::bench::inference(&student, a.iterations)?;
        lines.push(format!(
            "inference ({what}, {} -> {:?} -> {}, {}): {p}",
            student.obs_dim(),
            student.config().hidden,
            student.action_dim(),
            std::env::consts::ARCH
        ));
    }
    if lines.is_empty() {
        anyhow::bail!("nothing to time: pass --inference");
    }
    Ok(lines.join("\n"))
}
