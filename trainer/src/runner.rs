//! The training loop only: collect experience -> compute returns (GAE) -> update (loss with the
//! hook's extra term, clipped optimiser step) -> teacher-update hook; then metrics, progress,
//! checkpoints.
//!
//! Environments are restarted (from seeds derived from the run seed and the iteration) at the
//! start of the run and after every checkpoint. The physics state is not part of a checkpoint,
//! so this is what makes `--resume` continue exactly as an uninterrupted run would. It only cuts
//! episodes at checkpoint boundaries, which the value bootstrap at the end of each rollout
//! already treats like a time-out.
//!
//! A runner holds its output folder's lock ([`RunLock`]) for its whole life: one writer per run.
use std::collections::VecDeque;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clawrl_policy::io::Metadata;
use clawrl_policy::{Policy, PolicyConfig, Registry, Rng};
use clawrl_sim::{Env, VecEnv};
use indicatif::{ProgressBar, ProgressStyle};
use rand::SeedableRng;

use crate::algorithms::distill::{Distill, check_pair};
use crate::algorithms::{Algorithm, Ppo, Sac, TrainHooks};
use crate::checkpoint;
use crate::config::{AlgoConfig, TrainConfig};
use crate::eval::EvalOptions;
use crate::lock::RunLock;
use crate::metrics::{Metrics, plot_curves};
use crate::source::META_TRAIN_CONFIG;
use crate::task::make_envs;

const WINDOW: usize = 100;
/// Without a terminal, a plain progress line at least this often (and every 10 iterations).
const LOG_INTERVAL: Duration = Duration::from_secs(30);

/// How to continue a run (`clawrl train --resume`).
#[derive(Debug, Clone, Default)]
pub struct ResumeOptions {
    /// `run.*` keys to change (only [`crate::config::RESUMABLE_KEYS`]).
    pub overrides: Vec<String>,
    /// Continue into this folder (a branch), leaving the original run untouched.
    pub out: Option<PathBuf>,
    /// Continue from this iteration's checkpoint instead of the newest good one.
    pub from_checkpoint: Option<usize>,
}

pub struct Runner {
    pub cfg: TrainConfig,
    pub out_dir: PathBuf,
    venv: VecEnv<Box<dyn Env>>,
    alg: Box<dyn Algorithm>,
    rng: Rng,
    pub iteration: usize,
    pub env_steps: u64,
    wall_s: f64,
    pub metrics: Metrics,
    returns: VecDeque<f64>,
    lengths: VecDeque<f64>,
    /// Recent per-episode sums of each named reward term (logged as `rew_<term>` columns).
    terms: Windows,
    /// Recent values of each episode statistic (`EpisodeLog::stats`: the floor's tilt, the
    /// terrain level), logged as `ep_<name>` columns.
    stats: Windows,
    /// Show a progress bar when stderr is a terminal (otherwise, and when false, plain
    /// progress lines).
    pub progress: bool,
    _lock: RunLock,
}

/// What a finished `train` call reports.
#[derive(Debug, Clone)]
pub struct Summary {
    pub iterations: usize,
    pub env_steps: u64,
    pub wall_s: f64,
    pub mean_return: f64,
    pub mean_episode_length: f64,
    pub steps_per_s: f64,
}

/// The algorithm of a run around its freshly built policy. A distiller loads its teacher here
/// (checked against the task and the student) and records the teacher file's hash in `cfg`.
fn build_algorithm(
    cfg: &mut TrainConfig,
    spec: &clawrl_sim::EnvSpec,
    policy: Box<dyn Policy>,
    rng: &mut Rng,
) -> Result<Box<dyn Algorithm>> {
    let p = &cfg.run.policy;
    let critic_dim = spec.obs_dim(p.critic_obs);
    let n = cfg.run.run.num_envs;
    Ok(match &cfg.algo {
        AlgoConfig::Ppo(c) => Box::new(Ppo::new(c.clone(), policy, p, critic_dim, n, rng)?),
        AlgoConfig::Sac(c) => Box::new(Sac::new(c.clone(), policy, p, critic_dim, n, rng)?),
        AlgoConfig::Crossq(c) => Box::new(Sac::crossq(c, policy, p, critic_dim, n, rng)?),
        AlgoConfig::Distill(c) => {
            let (teacher, digest) = crate::remote::load_teacher(c, &cfg.source)?;
            let frame = spec.obs_dim(teacher.source().policy_config().obs_source);
            check_pair(c, teacher.source(), policy.as_ref(), frame)?;
            let teacher_return = if c.teacher_update == crate::config::TeacherUpdate::Ema {
                let opts = EvalOptions {
                    episodes: c.ema_window,
                    gait_seconds: 0.0,
                    threads: cfg.run.run.env_threads,
                    ..Default::default()
                };
                let r = crate::eval::evaluate(cfg, teacher.source(), &opts)?.mean_return();
                tracing::info!(
                    "teacher's mean return over {} episodes: {r:.2} (the EMA bar)",
                    c.ema_window
                );
                Some(r)
            } else {
                None
            };
            let ppo = Ppo::new(c.ppo.clone(), policy, p, critic_dim, n, rng)?;
            let alg = Distill::new(c.clone(), ppo, teacher, n, teacher_return)?;
            if let AlgoConfig::Distill(c) = &mut cfg.algo {
                c.teacher_sha256 = digest;
            }
            Box::new(alg)
        }
    })
}

/// The policy config of a run, from its `[policy]` section and the task's shapes.
pub fn policy_config(cfg: &TrainConfig, spec: &clawrl_sim::EnvSpec) -> PolicyConfig {
    let p = &cfg.run.policy;
    PolicyConfig {
        kind: p.kind.clone(),
        obs_dim: spec.obs_dim(p.actor_obs) * (p.history + 1),
        action_dim: spec.action_dim,
        obs_source: p.actor_obs,
        hidden: p.actor_hidden.clone(),
        activation: p.activation,
        init_std: p.init_std,
        obs_clip: p.obs_clip,
        history: p.history,
        // Only the convolution reads it: other kinds keep a canonical 0, so equal networks have
        // equal configs (EMA compares them).
        conv_channels: if p.kind == "temporal_conv" {
            p.conv_channels
        } else {
            0
        },
    }
}

impl Runner {
    /// A fresh run writing to `out_dir`. Refuses a directory that already holds checkpoints
    /// (continue it with [`Runner::resume`] or choose another directory).
    pub fn new(cfg: TrainConfig, out_dir: &Path) -> Result<Self> {
        let lock = RunLock::acquire(out_dir)?;
        refuse_existing_run(out_dir)?;
        let _ = std::fs::remove_file(out_dir.join("metrics.csv"));
        Self::build(cfg, out_dir, lock)
    }

    fn build(mut cfg: TrainConfig, out_dir: &Path, lock: RunLock) -> Result<Self> {
        // The run's records name where it really writes, whatever the file said.
        cfg.run.run.out_dir = out_dir.display().to_string();
        clawrl_policy::init_candle_threads(cfg.run.run.candle_threads);
        let r = &cfg.run.run;
        let mut rng = Rng::seed_from_u64(r.seed);
        let envs = make_envs(&cfg, r.num_envs)?;
        let spec = envs[0].spec().clone();
        let pcfg = policy_config(&cfg, &spec);
        let policy = Registry::default().build(&pcfg, &mut rng)?;
        let alg = build_algorithm(&mut cfg, &spec, policy, &mut rng)?;
        // The statistics' names from a fresh environment's log (the spec does not list them).
        let stat_names = envs
            .first()
            .map(|e| e.episode_log().stats)
            .unwrap_or_default();
        let stats = Windows::new("ep", "stat", stat_names.iter().map(|(n, _)| n.to_string()));
        let venv = Self::make_venv(&cfg, envs, 0);
        let terms = Windows::new("rew", "term", venv.spec().reward_terms.iter().cloned());
        std::fs::create_dir_all(out_dir)
            .with_context(|| format!("creating {}", out_dir.display()))?;
        clawrl_policy::io::write_atomic(
            &out_dir.join("config.toml"),
            cfg.to_run_file(out_dir)?.as_bytes(),
        )?;
        Ok(Self {
            cfg,
            out_dir: out_dir.to_path_buf(),
            venv,
            alg,
            rng,
            iteration: 0,
            env_steps: 0,
            wall_s: 0.0,
            metrics: Metrics::default(),
            returns: VecDeque::new(),
            lengths: VecDeque::new(),
            terms,
            stats,
            progress: false,
            _lock: lock,
        })
    }

    /// Continues a run from its newest good checkpoint (or `opts.from_checkpoint`). `from` is
    /// a run folder or one checkpoint file. With `opts.out` the run branches into that folder
    /// and the original is only read; without it the original run is extended.
    pub fn resume(from: &Path, opts: &ResumeOptions) -> Result<Self> {
        let (run_dir, file) = if from.is_file() {
            (checkpoint::run_dir_of(from), Some(from.to_path_buf()))
        } else {
            anyhow::ensure!(
                from.is_dir(),
                "{} is not a run folder or checkpoint",
                from.display()
            );
            (from.to_path_buf(), None)
        };
        let dest = opts.out.clone().unwrap_or_else(|| run_dir.clone());
        let branch = !same_dir(&dest, &run_dir);
        let lock = RunLock::acquire(&dest)?;
        if branch {
            refuse_existing_run(&dest)?;
        }
        let loaded = Self::load_for_resume(&run_dir, file, opts, branch)?;
        let get = |k: &str| {
            loaded
                .meta
                .get(k)
                .with_context(|| format!("checkpoint {} lacks `{k}`", loaded.path.display()))
        };
        let mut cfg: TrainConfig = toml::from_str(get(META_TRAIN_CONFIG)?)
            .with_context(|| format!("the training config in {}", loaded.path.display()))?;
        cfg.apply_resume_overrides(&opts.overrides)?;
        let mut runner = Self::build(cfg, &dest, lock)?;
        runner
            .alg
            .load(&loaded.tensors)
            .with_context(|| format!("loading {}", loaded.path.display()))?;
        runner.rng = checkpoint::rng_from_string(get("rng")?)?;
        runner.iteration = get("iteration")?.parse()?;
        runner.env_steps = get("env_steps")?.parse()?;
        runner.wall_s = get("wall_s")?.parse()?;
        runner.metrics = Metrics::from_csv(get("metrics_csv")?)?;
        clawrl_policy::io::write_atomic(
            &dest.join("metrics.csv"),
            runner.metrics.to_csv().as_bytes(),
        )?;
        runner.returns = parse_window(get("recent_returns")?);
        runner.lengths = parse_window(get("recent_lengths")?);
        let saved = |k: &str| get(k).ok().map(String::as_str);
        runner.terms.restore(saved);
        // A run checkpointed before the episode statistics existed keeps its columns.
        if !runner.metrics.header().is_empty() {
            let m = &runner.metrics;
            runner.stats.keep_columns(|c| m.column(c).is_some());
        }
        runner.stats.restore(saved);
        runner.take_carried(get(META_ENV_CARRY).ok().map(String::as_str))?;
        if branch {
            tracing::info!(
                "branched {} at iteration {} into {}",
                loaded.path.display(),
                runner.iteration,
                dest.display()
            );
        } else {
            tracing::info!(
                "resumed {} at iteration {}",
                loaded.path.display(),
                runner.iteration
            );
        }
        Ok(runner)
    }

    /// A new run (its own config, from iteration 0) whose policy and critic start from another
    /// run's checkpoint: a fine-tune with settings that `--resume` keeps fixed (a reward weight,
    /// the friction range, OPD after pure distillation). `from` is a run folder (its newest good
    /// checkpoint) or one checkpoint file. The optimiser starts fresh, at the config's learning
    /// rate; the environments take over the checkpoint's curriculum levels, so a fine-tune on
    /// the slope task does not climb the ladder again from its first band.
    pub fn init_from(cfg: TrainConfig, out_dir: &Path, from: &Path) -> Result<Self> {
        let loaded = if from.is_file() {
            let (tensors, meta) = checkpoint::load(from)?;
            checkpoint::Loaded {
                path: from.to_path_buf(),
                iteration: None,
                tensors,
                meta,
            }
        } else {
            checkpoint::load_newest_good(from, &mut |_| {})?
        };
        let mut runner = Self::new(cfg, out_dir)?;
        runner.alg.load_networks(&loaded.tensors).with_context(|| {
            format!(
                "initialising from {}: a training checkpoint of the same algorithm and policy is needed",
                loaded.path.display()
            )
        })?;
        if let Some(s) = loaded.meta.get(META_ENV_CARRY) {
            runner.take_carried(Some(s.as_str()))?;
        }
        tracing::info!(
            "{} starts from the networks of {}",
            runner.out_dir.display(),
            loaded.path.display()
        );
        Ok(runner)
    }

    /// Fresh environments for the run's iteration, carrying a checkpoint's curriculum levels
    /// (`carried`: its META_ENV_CARRY entry, if it has one).
    fn take_carried(&mut self, carried: Option<&str>) -> Result<()> {
        let mut envs = make_envs(&self.cfg, self.cfg.run.run.num_envs)?;
        if let Some(s) = carried {
            carry_into(&mut envs, &parse_carried(s));
        }
        self.venv = Self::make_venv(&self.cfg, envs, self.iteration);
        Ok(())
    }

    /// The checkpoint a resume starts from. Extending a run in place from an older
    /// checkpoint would overwrite the newer ones, so that needs a branch.
    fn load_for_resume(
        run_dir: &Path,
        file: Option<PathBuf>,
        opts: &ResumeOptions,
        branch: bool,
    ) -> Result<checkpoint::Loaded> {
        let all = checkpoint::list(run_dir);
        let chosen = match (file, opts.from_checkpoint) {
            (Some(_), Some(_)) => {
                anyhow::bail!("give a checkpoint file or --from-checkpoint, not both")
            }
            (Some(f), None) => Some(f),
            (None, Some(n)) => Some(
                all.iter()
                    .find(|(i, _)| *i == n)
                    .map(|(_, p)| p.clone())
                    .with_context(|| {
                        format!(
                            "no checkpoint of iteration {n} in {}; there are: {}",
                            run_dir.join(checkpoint::DIR).display(),
                            all.iter()
                                .map(|(i, _)| i.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    })?,
            ),
            (None, None) => None,
        };
        if let Some(path) = chosen {
            let newest = all.last().map(|(i, _)| *i);
            let it = all.iter().find(|(_, p)| *p == path).map(|(i, _)| *i);
            if !branch && it.is_some() && it < newest {
                anyhow::bail!(
                    "{} holds newer checkpoints (up to iteration {}) that continuing in place would overwrite: \
                     branch into a new folder with --out NEW",
                    run_dir.display(),
                    newest.unwrap_or(0)
                );
            }
            let (tensors, meta) = checkpoint::load(&path)?;
            return Ok(checkpoint::Loaded {
                path,
                iteration: it,
                tensors,
                meta,
            });
        }
        // Extending in place moves damaged checkpoints aside so they are not picked again;
        // a branch never writes to the original run.
        checkpoint::load_newest_good(run_dir, &mut |bad| {
            if !branch {
                checkpoint::quarantine(bad)
            }
        })
    }

    fn make_venv(
        cfg: &TrainConfig,
        envs: Vec<Box<dyn Env>>,
        iteration: usize,
    ) -> VecEnv<Box<dyn Env>> {
        let r = &cfg.run.run;
        let seed = clawrl_sim::rng::derive_seed(r.seed, 0x5EED_0000 + iteration as u64);
        let mut venv = VecEnv::new(envs, r.env_threads, seed);
        venv.reset();
        venv
    }

    pub fn policy(&self) -> &dyn Policy {
        self.alg.policy()
    }

    /// What each environment carries between episodes (its curriculum level).
    fn carried(&self) -> Vec<Vec<f64>> {
        self.venv.envs().map(|e| e.carried()).collect()
    }

    pub fn algorithm(&self) -> &dyn Algorithm {
        self.alg.as_ref()
    }

    /// Trains until `run.max_iterations`.
    pub fn train(&mut self, hooks: &mut dyn TrainHooks) -> Result<Summary> {
        let total = self.cfg.run.run.max_iterations;
        let bar = if self.progress && std::io::stderr().is_terminal() {
            let b = ProgressBar::new(total as u64);
            b.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:25.cyan/blue}] {pos}/{len} it (eta {eta}) {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b.set_position(self.iteration as u64);
            Some(b)
        } else {
            None
        };
        let n = self.venv.num_envs();
        let mut last_sps = 0.0;
        let session = (Instant::now(), self.iteration);
        let mut last_line = Instant::now();
        while self.iteration < total {
            let t_iter = Instant::now();
            let (mut t_phys, mut t_pol) = (0.0, 0.0);
            let mut finished = 0usize;
            for _ in 0..self.alg.num_steps_per_env() {
                let t0 = Instant::now();
                let actions = self.alg.act(self.venv.batch(), &mut self.rng)?;
                let t1 = Instant::now();
                let batch = self.venv.step(actions)?;
                let t2 = Instant::now();
                self.alg.process_env_step(batch)?;
                for log in batch.finished.iter().flatten() {
                    push_window(&mut self.returns, log.total);
                    push_window(&mut self.lengths, log.steps as f64);
                    self.terms.push(&log.terms);
                    self.stats.push(&log.stats);
                    finished += 1;
                }
                t_pol += (t1 - t0).as_secs_f64() + t2.elapsed().as_secs_f64();
                t_phys += (t2 - t1).as_secs_f64();
            }
            let t3 = Instant::now();
            self.alg.compute_returns(self.venv.batch())?;
            let stats = self.alg.update(&mut self.rng, hooks, self.iteration)?;
            let t_update = t3.elapsed().as_secs_f64();
            self.iteration += 1;
            let steps = (n * self.alg.num_steps_per_env()) as u64;
            self.env_steps += steps;
            let dt = t_iter.elapsed().as_secs_f64();
            self.wall_s += dt;
            last_sps = steps as f64 / dt;
            let (mr, ml) = (mean(&self.returns), mean(&self.lengths));
            let mut row: Vec<(&str, f64)> = vec![
                ("iteration", self.iteration as f64),
                ("env_steps", self.env_steps as f64),
                ("wall_s", self.wall_s),
                ("steps_per_s", last_sps),
                ("mean_return", mr),
                ("mean_episode_length", ml),
                ("episodes", finished as f64),
                ("t_physics", t_phys),
                ("t_policy", t_pol),
                ("t_update", t_update),
            ];
            row.extend(stats.iter().copied());
            let columns: Vec<(String, f64)> =
                self.terms.columns().chain(self.stats.columns()).collect();
            row.extend(columns.iter().map(|(k, v)| (k.as_str(), *v)));
            self.metrics.push(&row)?;
            self.metrics
                .append_last(&self.out_dir.join("metrics.csv"))?;
            let key: String = stats
                .iter()
                .take(3)
                .map(|(k, v)| format!(" {k} {v:.3}"))
                .collect();
            let msg = format!("{last_sps:.0} steps/s | return {mr:.2} | ep len {ml:.0} |{key}");
            match &bar {
                Some(b) => {
                    b.set_position(self.iteration as u64);
                    b.set_message(msg);
                }
                None if self.iteration.is_multiple_of(10)
                    || self.iteration == total
                    || last_line.elapsed() >= LOG_INTERVAL =>
                {
                    last_line = Instant::now();
                    let done = self.iteration - session.1;
                    let eta = session.0.elapsed().as_secs_f64() / done.max(1) as f64
                        * (total - self.iteration) as f64;
                    tracing::info!(
                        "it {}/{total} ({:.0} %) | {msg} | eta {}",
                        self.iteration,
                        100.0 * self.iteration as f64 / total as f64,
                        hms(eta)
                    )
                }
                None => {}
            }
            let every = self.cfg.run.run.checkpoint_every;
            if self.iteration.is_multiple_of(every) || self.iteration == total {
                self.save_checkpoint()?;
                // Fresh environments (so a resumed run steps as this one does), carrying the
                // old ones' curriculum levels.
                let mut envs = make_envs(&self.cfg, n)?;
                carry_into(&mut envs, &self.carried());
                self.venv = Self::make_venv(&self.cfg, envs, self.iteration);
            }
            let pe = self.cfg.run.run.plot_every;
            if pe > 0 && self.iteration.is_multiple_of(pe) {
                self.plot_or_warn();
            }
        }
        if let Some(b) = bar {
            b.finish();
        }
        // A branch taken at its last iteration (`--from-checkpoint N` with max_iterations N)
        // ran nothing: it still writes that checkpoint's policy.safetensors, to ship or
        // distil from.
        if self.iteration == session.1 && !self.out_dir.join("policy.safetensors").exists() {
            self.save_checkpoint()?;
        }
        self.plot_or_warn();
        Ok(Summary {
            iterations: self.iteration,
            env_steps: self.env_steps,
            wall_s: self.wall_s,
            mean_return: mean(&self.returns),
            mean_episode_length: mean(&self.lengths),
            steps_per_s: last_sps,
        })
    }

    /// Draws the curves; a plot that fails is a warning, never a lost run.
    fn plot_or_warn(&self) {
        if let Err(e) = self.plot() {
            tracing::warn!(
                "could not draw {}: {e:#}",
                self.out_dir.join("curves.png").display()
            );
        }
    }

    /// Writes `curves.png` from the metrics so far.
    pub fn plot(&self) -> Result<()> {
        if self.metrics.rows.is_empty() {
            return Ok(());
        }
        let title = format!(
            "{} / {} ({})",
            self.cfg.run.run.task,
            self.alg.name(),
            self.out_dir.display()
        );
        plot_curves(&self.metrics, &self.out_dir.join("curves.png"), &title)
    }

    /// Checkpoint of the current state plus `policy.safetensors` (the policy alone, for eval,
    /// distillation and export). Refuses non-finite weights, so a bad update never replaces a
    /// good checkpoint.
    pub fn save_checkpoint(&self) -> Result<PathBuf> {
        let tensors = self.alg.save()?;
        for (name, t) in &tensors {
            if t.dtype() == candle_core::DType::F32 {
                let bad = t
                    .flatten_all()?
                    .to_vec1::<f32>()?
                    .iter()
                    .any(|x| !x.is_finite());
                anyhow::ensure!(
                    !bad,
                    "tensor `{name}` is not finite at iteration {}: checkpoint not written",
                    self.iteration
                );
            }
        }
        let (_, policy_meta) = Registry::to_parts(self.alg.policy())?;
        let mut meta: Metadata = policy_meta;
        meta.insert(META_TRAIN_CONFIG.into(), toml::to_string(&self.cfg)?);
        meta.insert("iteration".into(), self.iteration.to_string());
        meta.insert("env_steps".into(), self.env_steps.to_string());
        meta.insert("wall_s".into(), self.wall_s.to_string());
        meta.insert("rng".into(), checkpoint::rng_to_string(&self.rng));
        meta.insert("metrics_csv".into(), self.metrics.to_csv());
        meta.insert("recent_returns".into(), join_window(&self.returns));
        meta.insert("recent_lengths".into(), join_window(&self.lengths));
        meta.insert(META_ENV_CARRY.into(), format_carried(&self.carried()));
        self.terms.save(&mut meta);
        self.stats.save(&mut meta);
        let path = checkpoint::save(
            &self.out_dir,
            self.iteration,
            &tensors,
            &meta,
            self.cfg.run.run.keep_checkpoints,
        )?;
        // The policy file carries the run's configuration too, so `clawrl eval` (and later the
        // distiller) can rebuild its task from the file alone.
        let extra: Metadata = [(META_TRAIN_CONFIG.to_string(), toml::to_string(&self.cfg)?)].into();
        Registry::save_with(
            self.alg.policy(),
            &self.out_dir.join("policy.safetensors"),
            &extra,
        )?;
        Ok(path)
    }
}

/// A fresh run or a branch must not land in a folder that already holds a run.
fn refuse_existing_run(dir: &Path) -> Result<()> {
    if let Some(p) = checkpoint::latest(dir) {
        anyhow::bail!(
            "{} already holds a run ({}): continue it with `--resume {}` or write into another `--out`",
            dir.display(),
            p.display(),
            dir.display()
        );
    }
    Ok(())
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Seconds as `1h02m03s` / `4m05s` / `6s`.
pub fn hms(s: f64) -> String {
    if !s.is_finite() {
        return "?".into();
    }
    let s = s.round() as u64;
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

/// Checkpoint key of what each environment carries between episodes (`Env::carried`).
const META_ENV_CARRY: &str = "env_carry";

/// Recent per-episode values of named figures, one window each (the reward terms, the
/// episode statistics): logged as `COLUMN_name` columns, kept in checkpoints as
/// `recent_KEY_name`.
struct Windows {
    column: &'static str,
    key: &'static str,
    named: Vec<(String, VecDeque<f64>)>,
}

impl Windows {
    fn new(column: &'static str, key: &'static str, names: impl Iterator<Item = String>) -> Self {
        Self {
            column,
            key,
            named: names.map(|n| (n, VecDeque::new())).collect(),
        }
    }

    /// One finished episode's values, in the order of the names.
    fn push(&mut self, values: &[(&'static str, f64)]) {
        for ((_, window), (_, v)) in self.named.iter_mut().zip(values) {
            push_window(window, *v);
        }
    }

    /// The metrics columns: each window's mean.
    fn columns(&self) -> impl Iterator<Item = (String, f64)> + '_ {
        self.named
            .iter()
            .map(|(name, w)| (format!("{}_{name}", self.column), mean(w)))
    }

    /// Drops the windows whose column `has` says the metrics lack.
    fn keep_columns(&mut self, has: impl Fn(&str) -> bool) {
        let column = self.column;
        self.named
            .retain(|(name, _)| has(&format!("{column}_{name}")));
    }

    fn save(&self, meta: &mut Metadata) {
        for (name, w) in &self.named {
            meta.insert(format!("recent_{}_{name}", self.key), join_window(w));
        }
    }

    /// Each window a checkpoint saved (`saved` of its key), the others left empty.
    fn restore<'a>(&mut self, saved: impl Fn(&str) -> Option<&'a str>) {
        for (name, w) in &mut self.named {
            if let Some(v) = saved(&format!("recent_{}_{name}", self.key)) {
                *w = parse_window(v);
            }
        }
    }
}

fn join_window(w: &VecDeque<f64>) -> String {
    w.iter().map(f64::to_string).collect::<Vec<_>>().join(",")
}

fn parse_window(s: &str) -> VecDeque<f64> {
    s.split(',').filter_map(|x| x.parse().ok()).collect()
}

fn carry_into(envs: &mut [Box<dyn Env>], carried: &[Vec<f64>]) {
    for (env, state) in envs.iter_mut().zip(carried) {
        env.carry(state);
    }
}

/// `1,2;3,4`: environments split by `;`, their values by `,`.
fn format_carried(carried: &[Vec<f64>]) -> String {
    carried
        .iter()
        .map(|s| s.iter().map(f64::to_string).collect::<Vec<_>>().join(","))
        .collect::<Vec<_>>()
        .join(";")
}

fn parse_carried(s: &str) -> Vec<Vec<f64>> {
    s.split(';')
        .map(|e| e.split(',').filter_map(|x| x.parse().ok()).collect())
        .collect()
}

fn push_window(w: &mut VecDeque<f64>, x: f64) {
    if w.len() == WINDOW {
        w.pop_front();
    }
    w.push_back(x);
}

fn mean(w: &VecDeque<f64>) -> f64 {
    if w.is_empty() {
        f64::NAN
    } else {
        w.iter().sum::<f64>() / w.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carried_state_round_trips_through_its_checkpoint_string() {
        let carried = vec![vec![3.0], vec![0.0], vec![9.0, 1.5], vec![]];
        let s = format_carried(&carried);
        assert_eq!(s, "3;0;9,1.5;");
        assert_eq!(parse_carried(&s), carried);
    }
}
