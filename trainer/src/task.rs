//! Task factory: maps the run config's task to boxed environments.
use std::path::Path;

use anyhow::{Context, Result};
use clawrl_config::Override;
use clawrl_sim::cartpole::CartPole;
use clawrl_sim::quadruped::{QuadrupedEnv, TaskConfig};
use clawrl_sim::{Env, EnvSpec};

use crate::config::{TrainConfig, find_config, task_overrides};

/// `n` environments of the run's task.
pub fn make_envs(cfg: &TrainConfig, n: usize) -> Result<Vec<Box<dyn Env>>> {
    let r = &cfg.run.run;
    match &cfg.task {
        None => {
            let model = CartPole::load_model().context("loading the cart-pole model")?;
            Ok((0..n)
                .map(|_| Box::new(CartPole::with_model(model.clone())) as Box<dyn Env>)
                .collect())
        }
        Some(task) => {
            let envs = QuadrupedEnv::many(task, n)
                .with_context(|| format!("building task `{}`", r.task))?;
            Ok(envs
                .into_iter()
                .map(|e| Box::new(e) as Box<dyn Env>)
                .collect())
        }
    }
}

/// `n` environments of the run's task as a measurement sees it: no terrain curriculum, so
/// every episode draws its floor from the task's whole range (or the fixed tilt a `--set`
/// asks for) and a seed means the same episode whatever ran before it.
pub fn make_eval_envs(cfg: &TrainConfig, n: usize) -> Result<Vec<Box<dyn Env>>> {
    let cfg = TrainConfig {
        task: cfg.task.as_ref().map(measured),
        ..cfg.clone()
    };
    make_envs(&cfg, n)
}

/// `task` as a measurement runs it: without its terrain curriculum ([`make_eval_envs`]).
pub fn measured(task: &TaskConfig) -> TaskConfig {
    let mut t = task.clone();
    t.terrain.curriculum_levels = 0;
    t
}

/// The spec of the run's task (builds one environment).
pub fn spec(cfg: &TrainConfig) -> Result<EnvSpec> {
    Ok(make_envs(cfg, 1)?[0].spec().clone())
}

/// Loads a task file with `--set task.KEY=VALUE` overrides (the grammar of every subcommand);
/// any other section is refused, naming the command.
pub fn load_task_file(path: &Path, overrides: &[String], command: &str) -> Result<TaskConfig> {
    let o: Vec<String> = task_overrides(overrides, command)?
        .iter()
        .map(Override::without_section)
        .collect();
    Ok(TaskConfig::load(find_config(path)?, &o)?)
}

/// The quadruped's standing report (`clawrl simulate`).
pub fn simulate_report(
    task_config: &Path,
    overrides: &[String],
    seconds: f64,
    seed: u64,
) -> Result<String> {
    let cfg = load_task_file(task_config, overrides, "simulate")?;
    Ok(clawrl_sim::quadruped::simulate_report(&cfg, seconds, seed)?)
}
