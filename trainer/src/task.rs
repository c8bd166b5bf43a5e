//! Task factory: maps the run config's task name to boxed environments.
use anyhow::{Context, Result};
use clawrl_sim::cartpole::CartPole;
use clawrl_sim::quadruped::{QuadrupedEnv, TaskConfig};
use clawrl_sim::{Env, EnvSpec};

use crate::config::{TrainConfig, resolve};

/// `n` environments of the run's task.
pub fn make_envs(cfg: &TrainConfig, n: usize) -> Result<Vec<Box<dyn Env>>> {
    let r = &cfg.run.run;
    match r.task.as_str() {
        "cartpole" => {
            let model = CartPole::load_model().context("loading the cart-pole model")?;
            Ok((0..n)
                .map(|_| Box::new(CartPole::with_model(model.clone())) as Box<dyn Env>)
                .collect())
        }
        other => {
            let path = resolve(&r.task_config, &cfg.source);
            make_quadruped(other, &path, &cfg.task_overrides, n)
        }
    }
}

fn make_quadruped(
    task: &str,
    path: &std::path::Path,
    overrides: &[String],
    n: usize,
) -> Result<Vec<Box<dyn Env>>> {
    let cfg = TaskConfig::load(path, overrides)?;
    let envs = QuadrupedEnv::many(&cfg, n)
        .with_context(|| format!("building task `{task}` from {}", path.display()))?;
    Ok(envs
        .into_iter()
        .map(|e| Box::new(e) as Box<dyn Env>)
        .collect())
}

/// The spec of the run's task (builds one environment).
pub fn spec(cfg: &TrainConfig) -> Result<EnvSpec> {
    Ok(make_envs(cfg, 1)?[0].spec().clone())
}

/// The quadruped's standing report (`clawrl simulate`).
pub fn simulate_report(
    task_config: &std::path::Path,
    overrides: &[String],
    seconds: f64,
    seed: u64,
) -> Result<String> {
    let cfg = TaskConfig::load(task_config, overrides)?;
    Ok(clawrl_sim::quadruped::simulate_report(&cfg, seconds, seed)?)
}
