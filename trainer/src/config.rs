//! Trainer configuration: one run file (`configs/run/*.toml`) names the task, the algorithm file
//! (`configs/algo/*.toml`) and the policy; every key is required, unknown keys are refused, and
//! every error names the file and the dotted key (see `clawrl_config`).
//!
//! `--set` overrides are routed by their first component: `run.*` and `policy.*` go to the run
//! file, `ppo.*` / `sac.*` to the algorithm file, `task.*` (prefix removed) to the task file.
use std::path::{Path, PathBuf};

use clawrl_config::{ConfigError, KeyError, Validate, check_range};
use clawrl_policy::{Activation, ObsSource};
use serde::{Deserialize, Serialize};

/// `[run]`: what to train, where, and for how long.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    /// Task name: `cartpole`, `quadruped_flat` or `quadruped_slopes`.
    pub task: String,
    /// Task TOML file (quadruped tasks); empty for tasks without one.
    pub task_config: String,
    /// `ppo` or `sac`.
    pub algorithm: String,
    /// Algorithm TOML file (defaults of the algorithm).
    pub algo_config: String,
    /// Single-key overrides applied on top of `algo_config` (`"ppo.num_steps_per_env=32"`).
    pub algo_overrides: Vec<String>,
    /// Seed of everything random: weights, exploration noise, minibatch order, episodes.
    pub seed: u64,
    pub num_envs: usize,
    /// Threads stepping the physics.
    pub env_threads: usize,
    /// Threads for candle's matmuls (RAYON_NUM_THREADS when unset in the environment).
    pub candle_threads: usize,
    pub max_iterations: usize,
    /// Write a checkpoint every this many iterations (and at the end).
    pub checkpoint_every: usize,
    /// Checkpoints kept on disk (older ones are deleted).
    pub keep_checkpoints: usize,
    /// Output directory (metrics.csv, curves.png, checkpoints/, policy.safetensors).
    pub out_dir: String,
    /// Redraw curves.png every this many iterations (0: only at the end).
    pub plot_every: usize,
}

/// `[policy]`: networks of the teacher.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySection {
    /// Registered policy kind (`gaussian_mlp`, `gaussian_mlp_state_std`, `squashed_gaussian_mlp`).
    pub kind: String,
    pub actor_hidden: Vec<usize>,
    pub critic_hidden: Vec<usize>,
    pub activation: Activation,
    pub init_std: f64,
    /// Observation the actor reads (the teacher reads `privileged`).
    pub actor_obs: ObsSource,
    /// Observation the critic reads (asymmetric actor-critic: `privileged`).
    pub critic_obs: ObsSource,
    /// Normalised observations are clamped to ±obs_clip.
    pub obs_clip: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    pub run: RunSection,
    pub policy: PolicySection,
}

const TASKS: [&str; 3] = ["cartpole", "quadruped_flat", "quadruped_slopes"];

impl Validate for RunConfig {
    fn validate(&self) -> Result<(), KeyError> {
        let r = &self.run;
        if !TASKS.contains(&r.task.as_str()) {
            return Err(KeyError::new(
                "run.task",
                format!("`{}` is not one of {TASKS:?}", r.task),
            ));
        }
        if r.task.starts_with("quadruped") && r.task_config.is_empty() {
            return Err(KeyError::new(
                "run.task_config",
                "quadruped tasks need a task file",
            ));
        }
        if !["ppo", "sac"].contains(&r.algorithm.as_str()) {
            return Err(KeyError::new(
                "run.algorithm",
                format!("`{}` is not `ppo` or `sac`", r.algorithm),
            ));
        }
        check_range("run.num_envs", r.num_envs, 1, 65536)?;
        check_range("run.env_threads", r.env_threads, 1, 256)?;
        check_range("run.candle_threads", r.candle_threads, 1, 256)?;
        check_range("run.max_iterations", r.max_iterations, 1, 100_000_000)?;
        check_range("run.checkpoint_every", r.checkpoint_every, 1, 100_000_000)?;
        check_range("run.keep_checkpoints", r.keep_checkpoints, 1, 1000)?;
        if r.out_dir.is_empty() {
            return Err(KeyError::new("run.out_dir", "must not be empty"));
        }
        let p = &self.policy;
        if p.actor_hidden.is_empty() || p.actor_hidden.contains(&0) {
            return Err(KeyError::new(
                "policy.actor_hidden",
                "needs at least one positive layer size",
            ));
        }
        if p.critic_hidden.is_empty() || p.critic_hidden.contains(&0) {
            return Err(KeyError::new(
                "policy.critic_hidden",
                "needs at least one positive layer size",
            ));
        }
        check_range("policy.init_std", p.init_std, 1e-4, 10.0)?;
        check_range("policy.obs_clip", p.obs_clip, 0.1, 1e6)?;
        Ok(())
    }
}

/// `[ppo]` (configs/algo/ppo.toml). rsl_rl's names and defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PpoConfig {
    /// Environment steps per environment per iteration (rollout length).
    pub num_steps_per_env: usize,
    pub num_learning_epochs: usize,
    pub num_mini_batches: usize,
    /// Surrogate ratio clip (also the value clip).
    pub clip_param: f64,
    pub gamma: f64,
    /// GAE lambda.
    pub lam: f64,
    pub value_loss_coef: f64,
    pub entropy_coef: f64,
    pub learning_rate: f64,
    /// Global gradient-norm clip.
    pub max_grad_norm: f64,
    pub use_clipped_value_loss: bool,
    /// `adaptive` (learning rate from the measured KL) or `fixed`.
    pub schedule: String,
    pub desired_kl: f64,
    pub min_learning_rate: f64,
    pub max_learning_rate: f64,
    pub normalize_advantage_per_mini_batch: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PpoFile {
    pub ppo: PpoConfig,
}

impl Validate for PpoFile {
    fn validate(&self) -> Result<(), KeyError> {
        let p = &self.ppo;
        check_range("ppo.num_steps_per_env", p.num_steps_per_env, 1, 100_000)?;
        check_range("ppo.num_learning_epochs", p.num_learning_epochs, 1, 1000)?;
        check_range("ppo.num_mini_batches", p.num_mini_batches, 1, 100_000)?;
        check_range("ppo.clip_param", p.clip_param, 1e-4, 1.0)?;
        check_range("ppo.gamma", p.gamma, 0.0, 1.0)?;
        check_range("ppo.lam", p.lam, 0.0, 1.0)?;
        check_range("ppo.value_loss_coef", p.value_loss_coef, 0.0, 1e3)?;
        check_range("ppo.entropy_coef", p.entropy_coef, 0.0, 1.0)?;
        check_range("ppo.learning_rate", p.learning_rate, 1e-8, 1.0)?;
        check_range("ppo.max_grad_norm", p.max_grad_norm, 1e-6, 1e6)?;
        if !["adaptive", "fixed"].contains(&p.schedule.as_str()) {
            return Err(KeyError::new(
                "ppo.schedule",
                format!("`{}` is not `adaptive` or `fixed`", p.schedule),
            ));
        }
        check_range("ppo.desired_kl", p.desired_kl, 1e-6, 10.0)?;
        check_range("ppo.min_learning_rate", p.min_learning_rate, 1e-10, 1.0)?;
        check_range(
            "ppo.max_learning_rate",
            p.max_learning_rate,
            p.min_learning_rate,
            1.0,
        )?;
        Ok(())
    }
}

/// `[sac]` (configs/algo/sac.toml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SacConfig {
    /// Environment steps per environment per iteration.
    pub num_steps_per_env: usize,
    /// Gradient steps per iteration.
    pub updates_per_iteration: usize,
    pub buffer_size: usize,
    pub batch_size: usize,
    /// Transitions collected with uniform random actions before learning starts.
    pub learning_starts: usize,
    pub gamma: f64,
    /// Polyak factor of the target networks.
    pub tau: f64,
    pub actor_learning_rate: f64,
    pub critic_learning_rate: f64,
    pub alpha_learning_rate: f64,
    pub init_alpha: f64,
    /// Target entropy = -target_entropy_scale * action_dim.
    pub target_entropy_scale: f64,
    pub max_grad_norm: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SacFile {
    pub sac: SacConfig,
}

impl Validate for SacFile {
    fn validate(&self) -> Result<(), KeyError> {
        let s = &self.sac;
        check_range("sac.num_steps_per_env", s.num_steps_per_env, 1, 100_000)?;
        check_range(
            "sac.updates_per_iteration",
            s.updates_per_iteration,
            1,
            1_000_000,
        )?;
        check_range("sac.buffer_size", s.buffer_size, 1, 100_000_000)?;
        check_range("sac.batch_size", s.batch_size, 1, s.buffer_size)?;
        check_range("sac.learning_starts", s.learning_starts, 0, s.buffer_size)?;
        check_range("sac.gamma", s.gamma, 0.0, 1.0)?;
        check_range("sac.tau", s.tau, 0.0, 1.0)?;
        check_range("sac.actor_learning_rate", s.actor_learning_rate, 1e-8, 1.0)?;
        check_range(
            "sac.critic_learning_rate",
            s.critic_learning_rate,
            1e-8,
            1.0,
        )?;
        check_range("sac.alpha_learning_rate", s.alpha_learning_rate, 0.0, 1.0)?;
        check_range("sac.init_alpha", s.init_alpha, 1e-8, 100.0)?;
        check_range(
            "sac.target_entropy_scale",
            s.target_entropy_scale,
            -10.0,
            10.0,
        )?;
        check_range("sac.max_grad_norm", s.max_grad_norm, 1e-6, 1e6)?;
        Ok(())
    }
}

/// The whole resolved configuration of a run (saved in every checkpoint).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// Task overrides (`--set task.x=y`, prefix removed), applied when the task file is loaded.
    pub task_overrides: Vec<String>,
    /// The run file it came from.
    pub source: PathBuf,
    pub run: RunConfig,
    /// Present when `run.algorithm = "ppo"`.
    pub ppo: Option<PpoConfig>,
    /// Present when `run.algorithm = "sac"`.
    pub sac: Option<SacConfig>,
}

/// Resolves a path named in a config: as given if it exists, else relative to the repository
/// root two levels above `configs/run/<file>.toml`.
pub fn resolve(path: &str, run_file: &Path) -> PathBuf {
    let p = PathBuf::from(path);
    if p.is_absolute() || p.exists() {
        return p;
    }
    match run_file
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
    {
        Some(root) if root.join(&p).exists() => root.join(p),
        _ => p,
    }
}

/// Loads a run file and its algorithm file with `--set` overrides routed by prefix.
pub fn load_train_config(
    run_file: &Path,
    overrides: &[String],
) -> Result<TrainConfig, ConfigError> {
    let (mut run_o, mut algo_o, mut task_o) = (Vec::new(), Vec::new(), Vec::new());
    for o in overrides {
        let key = o.split('=').next().unwrap_or("").trim();
        match key.split('.').next().unwrap_or("") {
            "ppo" | "sac" => algo_o.push(o.clone()),
            "task" => task_o.push(o.trim().trim_start_matches("task.").to_string()),
            _ => run_o.push(o.clone()),
        }
    }
    let run: RunConfig = clawrl_config::load(run_file, &run_o)?;
    let algo_file = resolve(&run.run.algo_config, run_file);
    let mut all_algo = run.run.algo_overrides.clone();
    all_algo.extend(algo_o);
    let (mut ppo, mut sac) = (None, None);
    match run.run.algorithm.as_str() {
        "ppo" => ppo = Some(clawrl_config::load::<PpoFile>(&algo_file, &all_algo)?.ppo),
        _ => sac = Some(clawrl_config::load::<SacFile>(&algo_file, &all_algo)?.sac),
    }
    Ok(TrainConfig {
        run,
        ppo,
        sac,
        task_overrides: task_o,
        source: run_file.to_path_buf(),
    })
}
