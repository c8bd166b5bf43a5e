//! Trainer configuration: one run file (`configs/run/*.toml`) names the task, the algorithm file
//! (`configs/algo/*.toml`) and the policy; every key is required, unknown keys are refused, and
//! every error names the file and the dotted key (see `clawrl_config`).
//!
//! The algorithm and the task may also be given inline, as `[ppo]`/`[sac]` and `[task]` tables
//! of the run file with `algo_config`/`task_config` empty. That is the form in which a run saves
//! its resolved configuration (`config.toml`, see [`TrainConfig::to_run_file`]), so a run's own
//! output is a valid `--config` and never depends on files that may change later.
//!
//! `--set SECTION.KEY=VALUE` overrides are routed by section: `run.*` and `policy.*` go to the
//! run file, `ppo.*` / `sac.*` to the algorithm (only the run's own algorithm), `task.*` to the
//! task (only for tasks that have a task file).
use std::path::{Path, PathBuf};

use clawrl_config::{ConfigError, KeyError, Override, Validate, check_range};
use clawrl_policy::{Activation, ObsSource};
use clawrl_sim::quadruped::TaskConfig;
use serde::{Deserialize, Serialize};

/// Declares a closed choice of a config file: a lowercase TOML string parsed into the enum at
/// load, so an unknown value is an error naming the file and the key, never a silent default.
macro_rules! choice {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// The value as the config file spells it.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

choice! {
    /// `ppo.schedule`: how the learning rate moves.
    LrSchedule {
        /// From the measured KL (rsl_rl): up when under `desired_kl` / 2, down when over twice.
        Adaptive = "adaptive",
        Fixed = "fixed",
    }
}

choice! {
    /// `distill.mode`.
    DistillMode {
        /// The student's PPO loss + alpha * divergence to the teacher.
        Opd = "opd",
        /// The divergence alone (DAgger-style: the student acts, the teacher labels).
        Distill = "distill",
        /// PPO alone on the student's observation (the divergence is only measured).
        Rl = "rl",
    }
}

choice! {
    /// `distill.loss`.
    Divergence {
        /// Closed-form Gaussian KL.
        Kl = "kl",
        /// Squared error of the action means.
        Mse = "mse",
    }
}

choice! {
    /// `distill.kl_direction`.
    KlDirection {
        /// KL(teacher || student).
        Forward = "forward",
        /// KL(student || teacher).
        Reverse = "reverse",
    }
}

choice! {
    /// `distill.alpha_schedule`: from `alpha` to `alpha_final`.
    AlphaSchedule {
        Constant = "constant",
        Linear = "linear",
        Cosine = "cosine",
    }
}

choice! {
    /// `distill.teacher_update`.
    TeacherUpdate {
        /// The teacher never changes.
        Frozen = "frozen",
        /// Self-distillation: the teacher moves towards the student, on a condition.
        Ema = "ema",
    }
}

/// `[run]`: what to train, where, and for how long.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    /// Task name: `cartpole`, `quadruped_flat` or `quadruped_slopes`.
    pub task: String,
    /// Task TOML file (quadruped tasks); empty for tasks without one.
    pub task_config: String,
    /// `ppo`, `sac` or `distill`.
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
    /// Past observation frames the actor reads besides the current one (students; 0 = none).
    #[serde(default)]
    pub history: usize,
    /// Filters of the `temporal_conv` kind (ignored by the others).
    #[serde(default)]
    pub conv_channels: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    pub run: RunSection,
    pub policy: PolicySection,
}

const TASKS: [&str; 3] = ["cartpole", "quadruped_flat", "quadruped_slopes"];
const ALGORITHMS: [&str; 4] = ["ppo", "sac", "crossq", "distill"];

impl Validate for RunConfig {
    fn validate(&self) -> Result<(), KeyError> {
        let r = &self.run;
        if !TASKS.contains(&r.task.as_str()) {
            return Err(KeyError::new(
                "run.task",
                format!("`{}` is not one of {TASKS:?}", r.task),
            ));
        }
        if !ALGORITHMS.contains(&r.algorithm.as_str()) {
            return Err(KeyError::new(
                "run.algorithm",
                format!("`{}` is not one of {ALGORITHMS:?}", r.algorithm),
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
        let kinds = clawrl_policy::Registry::default();
        if !kinds.kinds().contains(&p.kind.as_str()) {
            let mut known = kinds.kinds();
            known.sort();
            return Err(KeyError::new(
                "policy.kind",
                format!(
                    "`{}` is not a registered policy kind ({})",
                    p.kind,
                    known.join(", ")
                ),
            ));
        }
        check_range("policy.init_std", p.init_std, 1e-4, 10.0)?;
        check_range("policy.obs_clip", p.obs_clip, 0.1, 1e6)?;
        check_range("policy.history", p.history, 0, 1000)?;
        if p.kind == "temporal_conv" && p.conv_channels == 0 {
            return Err(KeyError::new(
                "policy.conv_channels",
                "temporal_conv needs at least one channel",
            ));
        }
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
    pub schedule: LrSchedule,
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

/// `[crossq]` (configs/algo/crossq.toml): CrossQ (Bhatt et al., ICLR 2024), SAC's actor and
/// temperature with batch-normalised twin critics trained on the current and next state-action
/// pairs in one batch, and no target networks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossqConfig {
    /// Environment steps per environment per iteration.
    pub num_steps_per_env: usize,
    /// Critic updates per iteration.
    pub updates_per_iteration: usize,
    pub buffer_size: usize,
    pub batch_size: usize,
    pub learning_starts: usize,
    pub gamma: f64,
    pub actor_learning_rate: f64,
    pub critic_learning_rate: f64,
    pub alpha_learning_rate: f64,
    pub init_alpha: f64,
    pub target_entropy_scale: f64,
    pub max_grad_norm: f64,
    /// Adam's first-moment decay for actor and critics (CrossQ: 0.5).
    pub adam_beta1: f64,
    /// Weight of a new batch in the batch norms' running statistics (CrossQ's 0.99 decay is
    /// 0.01 here).
    pub bn_momentum: f64,
    /// Critic updates per actor (and temperature) update (CrossQ: 3).
    pub policy_delay: usize,
}

impl CrossqConfig {
    /// The SAC settings CrossQ shares (no target networks: `tau` unused).
    pub fn sac(&self) -> SacConfig {
        SacConfig {
            num_steps_per_env: self.num_steps_per_env,
            updates_per_iteration: self.updates_per_iteration,
            buffer_size: self.buffer_size,
            batch_size: self.batch_size,
            learning_starts: self.learning_starts,
            gamma: self.gamma,
            tau: 0.0,
            actor_learning_rate: self.actor_learning_rate,
            critic_learning_rate: self.critic_learning_rate,
            alpha_learning_rate: self.alpha_learning_rate,
            init_alpha: self.init_alpha,
            target_entropy_scale: self.target_entropy_scale,
            max_grad_norm: self.max_grad_norm,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossqFile {
    pub crossq: CrossqConfig,
}

impl Validate for CrossqFile {
    fn validate(&self) -> Result<(), KeyError> {
        let c = &self.crossq;
        SacFile { sac: c.sac() }.validate().map_err(|e| KeyError {
            key: e.key.replacen("sac.", "crossq.", 1),
            reason: e.reason,
        })?;
        check_range("crossq.adam_beta1", c.adam_beta1, 0.0, 0.999)?;
        check_range("crossq.bn_momentum", c.bn_momentum, 1e-6, 1.0)?;
        check_range("crossq.policy_delay", c.policy_delay, 1, 1000)?;
        Ok(())
    }
}

/// `[distill]` (configs/algo/distill.toml): online policy distillation of a teacher into the
/// policy being trained (the student), and the two ends of that line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistillConfig {
    /// The teacher's policy file (`policy.safetensors` of a run), or `remote:teacher` /
    /// `remote:student`: a policy served over HTTP (`clawrl serve`), found through `endpoint`.
    pub teacher: String,
    /// The endpoint config a `remote:` teacher is reached through (the file holds the URL, the
    /// model ids and the key, so no key is ever part of a run's configuration).
    #[serde(default = "default_endpoint")]
    pub endpoint: String,
    /// SHA-256 of the teacher file. Empty in a hand-written config: the run fills it in when it
    /// starts, and a resumed run refuses a teacher file that has changed since.
    #[serde(default)]
    pub teacher_sha256: String,
    pub mode: DistillMode,
    pub loss: Divergence,
    pub kl_direction: KlDirection,
    /// Weight of the divergence at iteration 0.
    pub alpha: f64,
    pub alpha_schedule: AlphaSchedule,
    pub alpha_final: f64,
    /// Iterations over which alpha decays (then stays at `alpha_final`).
    pub alpha_decay_iterations: usize,
    /// `ema`: the teacher moves towards the student by `ema_rate` after an update, only while
    /// the condition holds.
    pub teacher_update: TeacherUpdate,
    pub ema_rate: f64,
    /// The EMA condition: the student's mean return over its last `ema_window` episodes beats
    /// the teacher's (measured on the same task before training) by `ema_margin`.
    pub ema_window: usize,
    pub ema_margin: f64,
    /// Scale on the student's standard deviation while it collects experience: 1 samples its
    /// distribution (what PPO needs: `opd` and `rl` allow nothing else); 0, with
    /// `mode = "distill"`, rolls out its mean action, the policy that is deployed, so the
    /// teacher labels the states the deterministic student gets into (DAgger proper) rather
    /// than those its noise shakes it out of. Absent = 1.
    #[serde(default = "one")]
    pub rollout_noise: f64,
    /// The student's PPO settings (rollout, minibatches, optimiser; the RL loss).
    pub ppo: PpoConfig,
}

fn one() -> f64 {
    1.0
}

fn default_endpoint() -> String {
    clawrl_endpoint::config::DEFAULT_FILE.into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistillFile {
    pub distill: DistillConfig,
}

impl Validate for DistillFile {
    fn validate(&self) -> Result<(), KeyError> {
        let d = &self.distill;
        if d.teacher.is_empty() {
            return Err(KeyError::new("distill.teacher", "names no teacher file"));
        }
        if let Some(role) = clawrl_endpoint::Role::parse(&d.teacher) {
            role.map_err(|e| KeyError::new("distill.teacher", e))?;
            if d.teacher_update == TeacherUpdate::Ema {
                return Err(KeyError::new(
                    "distill.teacher_update",
                    format!(
                        "\"ema\" moves the teacher's weights towards the student's, and the weights of `{}` stay on its server: use \"frozen\" with a remote teacher",
                        d.teacher
                    ),
                ));
            }
        }
        check_range("distill.alpha", d.alpha, 0.0, 1e6)?;
        check_range("distill.rollout_noise", d.rollout_noise, 0.0, 1.0)?;
        if d.rollout_noise != 1.0 && d.mode != DistillMode::Distill {
            return Err(KeyError::new(
                "distill.rollout_noise",
                format!(
                    "{} needs mode = \"distill\": PPO's loss (mode \"{}\") needs actions sampled from the student's own distribution",
                    d.rollout_noise, d.mode
                ),
            ));
        }
        check_range("distill.alpha_final", d.alpha_final, 0.0, 1e6)?;
        check_range(
            "distill.alpha_decay_iterations",
            d.alpha_decay_iterations,
            1,
            100_000_000,
        )?;
        check_range("distill.ema_rate", d.ema_rate, 0.0, 1.0)?;
        check_range("distill.ema_window", d.ema_window, 1, 100_000)?;
        check_range("distill.ema_margin", d.ema_margin, -1e9, 1e9)?;
        PpoFile { ppo: d.ppo.clone() }
            .validate()
            .map_err(|e| KeyError::new(format!("distill.{}", e.key), e.reason))
    }
}

/// The whole resolved configuration of a run (saved in every checkpoint and policy file, and
/// as the run's `config.toml`): everything by content, nothing by path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// The run file it came from (for the record; never read again).
    pub source: PathBuf,
    pub run: RunConfig,
    /// The algorithm and its settings (a `[ppo]`, `[sac]` or `[distill]` table).
    #[serde(flatten)]
    pub algo: AlgoConfig,
    /// The task's settings (quadruped tasks); cart-pole has none.
    pub task: Option<TaskConfig>,
}

/// The learning algorithm, tagged by its table name. (One per run and cloned rarely: the size
/// difference between variants costs nothing worth a box.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlgoConfig {
    Ppo(PpoConfig),
    Sac(SacConfig),
    Crossq(CrossqConfig),
    Distill(DistillConfig),
}

impl AlgoConfig {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Ppo(_) => "ppo",
            Self::Sac(_) => "sac",
            Self::Crossq(_) => "crossq",
            Self::Distill(_) => "distill",
        }
    }

    /// Environment steps per environment in one iteration.
    pub fn num_steps_per_env(&self) -> usize {
        match self {
            Self::Ppo(p) => p.num_steps_per_env,
            Self::Sac(s) => s.num_steps_per_env,
            Self::Crossq(c) => c.num_steps_per_env,
            Self::Distill(d) => d.ppo.num_steps_per_env,
        }
    }
}

/// `run.*` keys a resume may change: they change how the run is carried out, not what it
/// computes (env threads give identical results for a seed, see `VecEnv`).
pub const RESUMABLE_KEYS: [&str; 6] = [
    "run.max_iterations",
    "run.checkpoint_every",
    "run.keep_checkpoints",
    "run.plot_every",
    "run.env_threads",
    "run.candle_threads",
];

impl TrainConfig {
    /// The task is cart-pole (no task file, no feet, no command).
    pub fn is_cartpole(&self) -> bool {
        self.run.run.task == "cartpole"
    }

    /// The configuration as a self-contained run file (algorithm and task inline), with
    /// `out_dir` set to where the run actually writes. Loading it gives this config back.
    pub fn to_run_file(&self, out_dir: &Path) -> anyhow::Result<String> {
        let mut cfg = self.clone();
        cfg.run.run.out_dir = out_dir.display().to_string();
        cfg.run.run.algo_config = String::new();
        cfg.run.run.algo_overrides.clear();
        cfg.run.run.task_config = String::new();
        let mut doc = toml::Table::try_from(&cfg.run)?;
        let algo = match &cfg.algo {
            AlgoConfig::Ppo(p) => toml::Value::try_from(p)?,
            AlgoConfig::Sac(s) => toml::Value::try_from(s)?,
            AlgoConfig::Crossq(c) => toml::Value::try_from(c)?,
            AlgoConfig::Distill(d) => toml::Value::try_from(d)?,
        };
        doc.insert(cfg.algo.name().into(), algo);
        if let Some(t) = &cfg.task {
            doc.insert("task".into(), toml::Value::try_from(t)?);
        }
        Ok(format!(
            "# Resolved configuration of the run in {} (clawrl {}), first loaded from {}.\n\
             # Self-contained: a valid `clawrl train --config` file.\n{}",
            out_dir.display(),
            env!("CARGO_PKG_VERSION"),
            self.source.display(),
            toml::to_string(&doc)?
        ))
    }

    /// Applies resume overrides: only [`RESUMABLE_KEYS`] may change.
    pub fn apply_resume_overrides(&mut self, overrides: &[String]) -> Result<(), ConfigError> {
        for text in overrides {
            let o = Override::parse(text)?;
            if !RESUMABLE_KEYS.contains(&o.key.as_str()) {
                return Err(o.not_allowed(format!(
                    "a resumed run keeps its configuration; --resume may change only {}. \
                     To change anything else, start a new run with --config (a run's config.toml is one) and --init-from to start from its networks",
                    RESUMABLE_KEYS.join(", ")
                )));
            }
            let mut table = toml::Table::try_from(&self.run).map_err(|e| o.not_allowed(e))?;
            clawrl_config::set_key(&mut table, &o.key, &o.value).map_err(|e| o.not_allowed(e))?;
            let run: RunConfig = clawrl_config::from_table(table, "--set", &[])?;
            self.run = run;
        }
        Ok(())
    }
}

impl TrainConfig {
    /// Applies `--set task.KEY=VALUE` to the stored task settings (evaluation under other
    /// conditions, for example a slope). Other sections, and any task key on cart-pole, are
    /// refused naming the key.
    pub fn apply_task_overrides(
        &mut self,
        overrides: &[String],
        command: &str,
    ) -> Result<(), ConfigError> {
        for o in task_overrides(overrides, command)? {
            let Some(task) = &self.task else {
                return Err(o.not_allowed(format!(
                    "task `{}` has no task settings: task.* keys do not apply to it",
                    self.run.run.task
                )));
            };
            let inline = toml::Table::from_iter([(
                "task".to_string(),
                toml::Value::try_from(task).map_err(|e| o.not_allowed(e))?,
            )]);
            let t: InlineTask =
                clawrl_config::from_table(inline, "--set", std::slice::from_ref(&o.text))?;
            self.task = Some(t.task);
        }
        Ok(())
    }
}

/// Parses `--set` overrides of a command that takes only `task.*` keys (`simulate`, `eval`);
/// any other section is refused, naming the command.
pub fn task_overrides(overrides: &[String], command: &str) -> Result<Vec<Override>, ConfigError> {
    overrides
        .iter()
        .map(|text| {
            let o = Override::parse(text)?;
            if o.section == "task" {
                Ok(o)
            } else {
                Err(o.not_allowed(format!("`clawrl {command}` takes only task.* keys")))
            }
        })
        .collect()
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

/// A config path given on the command line, [`clawrl_sim::resolve`]d: so `clawrl` works outside
/// the repository root, and a binary outside its build tree with `CLAWRL_ROOT`.
pub fn find_config(path: &Path) -> Result<PathBuf, ConfigError> {
    let found = clawrl_sim::resolve(path);
    if found.exists() {
        return Ok(found);
    }
    Err(ConfigError {
        file: path.to_path_buf(),
        key: String::new(),
        reason: format!(
            "no such file (a relative path is looked for under {}; or give the full path)",
            clawrl_sim::roots_tried()
        ),
    })
}

/// `--set` overrides of a training run, sorted by where they apply.
#[derive(Debug, Default)]
struct Routed {
    run: Vec<String>,
    algo: Vec<String>,
    task: Vec<Override>,
}

fn route(overrides: &[String]) -> Result<Routed, ConfigError> {
    let mut r = Routed::default();
    for text in overrides {
        let o = Override::parse(text)?;
        match o.section.as_str() {
            "run" | "policy" => r.run.push(o.text.clone()),
            "ppo" | "sac" | "crossq" | "distill" => r.algo.push(o.text.clone()),
            "task" => r.task.push(o),
            _ => {
                return Err(o.not_allowed(format!(
                    "unknown section `{}`: `clawrl train` takes run.*, policy.*, ppo.*, sac.*, crossq.*, distill.* (the run's algorithm) and task.* keys",
                    o.section
                )));
            }
        }
    }
    Ok(r)
}

fn key_err(file: &Path, key: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        file: file.to_path_buf(),
        key: key.to_string(),
        reason: reason.into(),
    }
}

/// Loads a run file with its algorithm and task (from their files or inline) and applies the
/// `--set` overrides.
pub fn load_train_config(
    run_file: &Path,
    overrides: &[String],
) -> Result<TrainConfig, ConfigError> {
    let routed = route(overrides)?;
    let text = std::fs::read_to_string(run_file)
        .map_err(|e| key_err(run_file, "", format!("cannot read: {e}")))?;
    let mut table = clawrl_config::parse_table(&text, run_file)?;
    let inline: Vec<(String, toml::Value)> = ALGORITHMS
        .iter()
        .filter_map(|a| table.remove(*a).map(|t| (a.to_string(), t)))
        .collect();
    let inline_task = table.remove("task");
    let run: RunConfig = clawrl_config::from_table(table, run_file, &routed.run)?;
    let algorithm = run.run.algorithm.clone();
    for o in &routed.algo {
        if !o.starts_with(&format!("{algorithm}.")) {
            let o = Override::parse(o)?;
            return Err(o.not_allowed(format!(
                "this run trains with {algorithm}: {}.* keys do not apply",
                o.section
            )));
        }
    }
    let mut inline_algo = None;
    for (name, table) in inline {
        if name == algorithm {
            inline_algo = Some(table);
        } else {
            return Err(key_err(
                run_file,
                &name,
                format!("an inline [{name}] table in a run that trains with {algorithm}"),
            ));
        }
    }
    let (table, file) = algo_table(&run, run_file, inline_algo)?;
    let o = &routed.algo;
    let algo = match algorithm.as_str() {
        "ppo" => AlgoConfig::Ppo(clawrl_config::from_table::<PpoFile>(table, &file, o)?.ppo),
        "sac" => AlgoConfig::Sac(clawrl_config::from_table::<SacFile>(table, &file, o)?.sac),
        "crossq" => {
            AlgoConfig::Crossq(clawrl_config::from_table::<CrossqFile>(table, &file, o)?.crossq)
        }
        _ => {
            AlgoConfig::Distill(clawrl_config::from_table::<DistillFile>(table, &file, o)?.distill)
        }
    };
    let task = load_task(&run, run_file, inline_task, &routed.task)?;
    Ok(TrainConfig {
        source: run_file.to_path_buf(),
        run,
        algo,
        task,
    })
}

/// The algorithm's table (`{ppo = {...}}`) with the run file's `algo_overrides` applied, and the
/// file later errors should name. An error in the run file's own part names the run file.
fn algo_table(
    run: &RunConfig,
    run_file: &Path,
    inline: Option<toml::Value>,
) -> Result<(toml::Table, PathBuf), ConfigError> {
    let r = &run.run;
    let (mut table, file) = match (r.algo_config.is_empty(), inline) {
        (true, Some(t)) => (
            toml::Table::from_iter([(r.algorithm.clone(), t)]),
            run_file.to_path_buf(),
        ),
        (true, None) => {
            return Err(key_err(
                run_file,
                "run.algo_config",
                format!("empty, and the file has no inline [{}] table", r.algorithm),
            ));
        }
        (false, Some(_)) => {
            return Err(key_err(
                run_file,
                &r.algorithm,
                "both run.algo_config and an inline table: keep one",
            ));
        }
        (false, None) => {
            let path = resolve(&r.algo_config, run_file);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                key_err(
                    run_file,
                    "run.algo_config",
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            (clawrl_config::parse_table(&text, &path)?, path)
        }
    };
    for o in &r.algo_overrides {
        let parsed = Override::parse(o)
            .and_then(|p| {
                if p.section == r.algorithm {
                    Ok(p)
                } else {
                    Err(p.not_allowed(format!("this run trains with {}", r.algorithm)))
                }
            })
            .map_err(|e| {
                key_err(
                    run_file,
                    "run.algo_overrides",
                    format!("`{o}`: {}", e.reason),
                )
            })?;
        clawrl_config::set_key(&mut table, &parsed.key, &parsed.value).map_err(|e| {
            key_err(
                run_file,
                "run.algo_overrides",
                format!("`{o}`: {e} (in {})", file.display()),
            )
        })?;
    }
    Ok((table, file))
}

/// The run's task settings, from its task file or the inline `[task]` table, with the
/// `--set task.*` overrides.
fn load_task(
    run: &RunConfig,
    run_file: &Path,
    inline: Option<toml::Value>,
    overrides: &[Override],
) -> Result<Option<TaskConfig>, ConfigError> {
    let r = &run.run;
    if r.task == "cartpole" {
        if let Some(o) = overrides.first() {
            return Err(
                o.not_allowed("task `cartpole` has no task file: task.* keys do not apply to it")
            );
        }
        if inline.is_some() || !r.task_config.is_empty() {
            return Err(key_err(
                run_file,
                "run.task_config",
                "task `cartpole` takes no task file or [task] table",
            ));
        }
        return Ok(None);
    }
    match (r.task_config.is_empty(), inline) {
        (false, None) => {
            let path = resolve(&r.task_config, run_file);
            if !path.exists() {
                return Err(key_err(
                    run_file,
                    "run.task_config",
                    format!("cannot read {}: no such file", path.display()),
                ));
            }
            let o: Vec<String> = overrides.iter().map(Override::without_section).collect();
            TaskConfig::load(&path, &o).map(Some)
        }
        (true, Some(toml::Value::Table(t))) => {
            let o: Vec<String> = overrides.iter().map(|o| o.text.clone()).collect();
            let doc = toml::Table::from_iter([("task".to_string(), toml::Value::Table(t))]);
            clawrl_config::from_table::<InlineTask>(doc, run_file, &o).map(|t| Some(t.task))
        }
        (true, _) => Err(key_err(
            run_file,
            "run.task_config",
            "empty, and the file has no inline [task] table",
        )),
        (false, Some(_)) => Err(key_err(
            run_file,
            "task",
            "both run.task_config and an inline [task] table: keep one",
        )),
    }
}

/// A task given inline as the `[task]` table of a run file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InlineTask {
    task: TaskConfig,
}

impl Validate for InlineTask {
    fn validate(&self) -> Result<(), KeyError> {
        self.task
            .validate()
            .map_err(|e| KeyError::new(format!("task.{}", e.key), e.reason))
    }
}
