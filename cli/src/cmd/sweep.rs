//! `clawrl sweep SPEC`: a sweep file's trials run on Ray Tune (ASHA stops poor trials early),
//! each trial one `clawrl train` process; one table at the end and the best trial's config
//! written as a run file.
//!
//! The trials are expanded and every one validated here (clawrl_trainer::sweep) before Ray
//! starts; Ray only schedules. Its driver is a Python file embedded in this binary
//! (sweep_ray.py), run with the Python that scripts/setup-ray.sh installs Ray into: nothing
//! else in clawrl needs Python.
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use clawrl_trainer::lock::RunLock;
use clawrl_trainer::sweep::{Results, Sweep};

const DRIVER: &str = include_str!("sweep_ray.py");
/// Where scripts/setup-ray.sh puts Ray's Python (found like the shipped configs are).
const RAY_PYTHON: &str = "third_party/ray/bin/python";
const PYTHON_ENV: &str = "CLAWRL_RAY_PYTHON";

/// Run a sweep file's trials on Ray: a local Ray instance by default, a cluster with --address.
#[derive(clap::Args)]
pub struct Args {
    /// The sweep file (configs/sweep/*.toml): base run file, grid, random draws, seeds, metric,
    /// budget, early stopping.
    spec: PathBuf,
    /// The sweep's folder (default runs/sweeps/<file name>): trials/<trial>/ holds each run,
    /// sweep.md the table, best.toml the best trial's run file. A second sweep into a folder
    /// that holds one is refused.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// A running Ray cluster: `auto` (one started with `ray start --head` on this machine) or
    /// its address (`HOST:6379`). Default: a local Ray instance for this sweep only.
    #[arg(long, value_name = "ADDRESS")]
    address: Option<String>,
    /// CPUs of the local Ray instance (default: all of this machine's).
    #[arg(long, value_name = "N", conflicts_with = "address")]
    cpus: Option<usize>,
    /// The Python that has Ray (default: $CLAWRL_RAY_PYTHON, then third_party/ray/bin/python as
    /// scripts/setup-ray.sh installs it).
    #[arg(long, value_name = "PATH")]
    python: Option<PathBuf>,
    /// Override one key of the sweep file (`sweep.max_concurrent=1`, `asha.grace_period=20`).
    /// Repeatable.
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    set: Vec<String>,
    /// Print the trials and stop (needs no Ray).
    #[arg(long)]
    dry_run: bool,
}

pub fn run(a: Args) -> Result<()> {
    let sweep = Sweep::load(&clawrl_trainer::config::find_config(&a.spec)?, &a.set)?;
    print_plan(&sweep);
    if a.dry_run {
        return Ok(());
    }
    let python = ray_python(a.python.as_deref())?;
    let stem = a.spec.file_stem().map(|s| s.to_string_lossy().into_owned());
    let out = a
        .out
        .unwrap_or_else(|| Path::new("runs/sweeps").join(stem.unwrap_or_else(|| "sweep".into())));
    // The run lock first: a sweep still running in the folder is named by its holder.
    let _lock = RunLock::acquire(&out)?;
    let out = out
        .canonicalize()
        .with_context(|| format!("resolving {}", out.display()))?;
    let plan_path = out.join("plan.json");
    if plan_path.exists() {
        bail!(
            "{} already holds a sweep ({}): a second sweep into it is refused; give another --out \
             or remove the folder",
            out.display(),
            plan_path.display()
        );
    }
    write_plan(&sweep, &out, &a.address, a.cpus, &plan_path)?;
    let driver = out.join("sweep_ray.py");
    std::fs::write(&driver, DRIVER).with_context(|| format!("writing {}", driver.display()))?;
    let mut driver_cmd = Command::new(&python);
    // `ray start` (Ray 2.60) turns on token authentication, and a driver joins such a cluster
    // only in token mode too (the token from ~/.ray/auth_token or RAY_AUTH_TOKEN).
    if a.address.is_some() && std::env::var_os("RAY_AUTH_MODE").is_none() {
        driver_cmd.env("RAY_AUTH_MODE", "token");
    }
    let status = driver_cmd
        .arg(&driver)
        .arg(&plan_path)
        .env("PYTHONUNBUFFERED", "1")
        // Ray's own start-up chatter about usage stats and metrics exporters is not the user's.
        .env("RAY_USAGE_STATS_ENABLED", "0")
        .env("RAY_AIR_NEW_OUTPUT", "0")
        .env("RAY_DEDUP_LOGS", "0")
        .env("RAY_COLOR_PREFIX", "0")
        // Tune warns when small checkpoints come often; ours are a few bytes each.
        .env(
            "TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S",
            "0",
        )
        .status()
        .with_context(|| format!("starting {}", python.display()))?;
    if !status.success() {
        bail!("the Ray driver ({}) ended with {status}", driver.display());
    }
    report(&sweep, &out)
}

fn print_plan(sweep: &Sweep) {
    println!("{}", sweep.summary());
    for t in &sweep.trials {
        println!("  {}: {}", t.name, t.swept.join(" "));
    }
}

/// The Python with Ray: --python, then $CLAWRL_RAY_PYTHON, then scripts/setup-ray.sh's.
fn ray_python(given: Option<&Path>) -> Result<PathBuf> {
    let path = match (given, std::env::var_os(PYTHON_ENV)) {
        (Some(p), _) => p.to_path_buf(),
        (None, Some(p)) => PathBuf::from(p),
        (None, None) => clawrl_sim::resolve(Path::new(RAY_PYTHON)),
    };
    if !path.exists() {
        bail!(
            "no Python with Ray at {}: install it with scripts/setup-ray.sh (a pinned Ray in its \
             own environment under third_party/ray), or give --python or {PYTHON_ENV}",
            path.display()
        );
    }
    Ok(path)
}

fn write_plan(
    sweep: &Sweep,
    out: &Path,
    address: &Option<String>,
    cpus: Option<usize>,
    path: &Path,
) -> Result<()> {
    let s = &sweep.spec.sweep;
    let trials: Vec<serde_json::Value> = sweep
        .trials
        .iter()
        .map(|t| {
            serde_json::json!({
                "name": t.name,
                "sets": sweep.sets(t),
                "checkpoint_every": t.checkpoint_every,
            })
        })
        .collect();
    let plan = serde_json::json!({
        "clawrl": std::env::current_exe()?.canonicalize()?,
        "cwd": std::env::current_dir()?,
        "base": sweep.base.canonicalize()?,
        "out": out,
        "metric": s.metric,
        "mode": s.mode,
        "smooth": s.smooth,
        "iterations": s.iterations,
        "cpus_per_trial": s.cpus_per_trial,
        "max_concurrent": s.max_concurrent,
        "max_failures": s.max_failures,
        "asha": sweep.spec.asha,
        "address": address.clone().unwrap_or_default(),
        "cpus": cpus.unwrap_or(0),
        "trials": trials,
    });
    std::fs::write(path, serde_json::to_string_pretty(&plan)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// The table (stdout and sweep.md) and the best trial's run file (best.toml).
fn report(sweep: &Sweep, out: &Path) -> Result<()> {
    let results = Results::read(&out.join("results.json"))?;
    let table = results.table(sweep);
    print!("{table}");
    std::fs::write(out.join("sweep.md"), &table)?;
    let failed = results
        .trials
        .iter()
        .filter(|t| t.status == "failed")
        .count();
    let Some(best) = results.best(&sweep.spec.sweep.mode) else {
        bail!("no trial of the sweep reported its metric ({failed} failed)");
    };
    let config = Path::new(&best.run_dir).join("config.toml");
    let text = std::fs::read_to_string(&config)
        .with_context(|| format!("reading the best trial's {}", config.display()))?;
    let best_file = out.join("best.toml");
    std::fs::write(
        &best_file,
        format!(
            "# The best trial of {} ({}, score {:.4}): its run file.\n# Reproduce: clawrl train --config {} --out NEW_FOLDER (its run.out_dir is the trial's)\n{text}",
            sweep.file.display(),
            best.name,
            best.score.unwrap_or(f64::NAN),
            best_file.display()
        ),
    )?;
    println!(
        "best: {} (score {:.4}); its run file: {} (clawrl train --config FILE --out NEW_FOLDER)\nresults: {}/{{sweep.md,results.json,trials/}}{}",
        best.name,
        best.score.unwrap_or(f64::NAN),
        best_file.display(),
        out.display(),
        if failed > 0 {
            format!("; {failed} trial(s) failed (their errors are in the table)")
        } else {
            String::new()
        }
    );
    Ok(())
}
