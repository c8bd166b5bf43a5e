//! A sweep file: one base run file, a grid and random draws over `--set` keys, seeds, the
//! metric and its direction, a budget, and the early-stopping rule.
//!
//! This module expands the file into trials and validates each one as the run config
//! `clawrl train` would load, so a misspelt key or a value out of range is refused before a
//! scheduler starts anything. It also reads the scheduler's per-trial results back into one
//! table. The scheduler itself (Ray Tune) lives behind `clawrl sweep`; nothing here knows it.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clawrl_config::{ConfigError, KeyError, Validate, check_range};
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::config::{find_config, load_train_config};

/// The whole sweep file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepFile {
    pub sweep: SweepSection,
    /// `"SECTION.KEY" = [values]`: every combination is a trial (times the seeds).
    #[serde(default)]
    pub grid: BTreeMap<String, Vec<toml::Value>>,
    /// Random draws, each combined with every grid point and seed.
    pub random: Option<RandomSection>,
    /// Early stopping (ASHA); absent: every trial runs its whole budget.
    pub asha: Option<Asha>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSection {
    /// The run file every trial starts from (as `clawrl train --config` finds it).
    pub base: String,
    /// A column of the runs' metrics.csv (for example `mean_return`).
    pub metric: String,
    /// `max` or `min`.
    pub mode: String,
    /// The score is the mean of the metric's last `smooth` finite values: RL returns are noisy
    /// from one iteration to the next, and a rung should not be decided by one of them.
    pub smooth: usize,
    pub seeds: Vec<u64>,
    /// Iterations per trial (`run.max_iterations`, and the early-stopping rule's horizon).
    pub iterations: usize,
    /// CPUs a trial asks the scheduler for; the trial's `run.env_threads`.
    pub cpus_per_trial: usize,
    /// Trials at once; 0: as many as the cluster's CPUs allow.
    pub max_concurrent: usize,
    /// Retries of a trial whose process died (each resumes from its last checkpoint).
    pub max_failures: usize,
    /// Overrides every trial gets (`SECTION.KEY=VALUE`).
    pub set: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomSection {
    pub draws: usize,
    /// The draws' own seed: the same file gives the same trials.
    pub seed: u64,
    pub space: BTreeMap<String, Draw>,
}

/// One key's distribution.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Draw {
    Uniform([f64; 2]),
    LogUniform([f64; 2]),
    Choice(Vec<toml::Value>),
}

/// Asynchronous successive halving: at iterations `grace_period * reduction_factor^k` a trial
/// whose score is not in the best `1 / reduction_factor` of those that reached it stops.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Asha {
    pub grace_period: usize,
    pub reduction_factor: usize,
}

impl Validate for SweepFile {
    fn validate(&self) -> Result<(), KeyError> {
        let s = &self.sweep;
        if s.mode != "max" && s.mode != "min" {
            return Err(KeyError::new("sweep.mode", "is `max` or `min`"));
        }
        if s.metric.trim().is_empty() {
            return Err(KeyError::new(
                "sweep.metric",
                "names a column of metrics.csv",
            ));
        }
        check_range("sweep.smooth", s.smooth, 1, 10_000)?;
        if s.seeds.is_empty() {
            return Err(KeyError::new("sweep.seeds", "needs at least one seed"));
        }
        check_range("sweep.iterations", s.iterations, 1, 10_000_000)?;
        check_range("sweep.cpus_per_trial", s.cpus_per_trial, 1, 1024)?;
        check_range("sweep.max_failures", s.max_failures, 0, 100)?;
        for (key, values) in &self.grid {
            if values.is_empty() {
                return Err(KeyError::new(
                    format!("grid.{key}"),
                    "needs at least one value",
                ));
            }
        }
        if let Some(r) = &self.random {
            check_range("random.draws", r.draws, 1, 100_000)?;
            for (key, d) in &r.space {
                let key = format!("random.space.{key}");
                match d {
                    Draw::Uniform([lo, hi]) if lo > hi => {
                        return Err(KeyError::new(key, "uniform needs lo <= hi"));
                    }
                    Draw::LogUniform([lo, hi]) if !(*lo > 0.0 && lo <= hi) => {
                        return Err(KeyError::new(key, "log_uniform needs 0 < lo <= hi"));
                    }
                    Draw::Choice(v) if v.is_empty() => {
                        return Err(KeyError::new(key, "choice needs at least one value"));
                    }
                    _ => {}
                }
            }
        }
        if let Some(a) = &self.asha {
            check_range("asha.grace_period", a.grace_period, 1, s.iterations)?;
            check_range("asha.reduction_factor", a.reduction_factor, 2, 100)?;
        }
        Ok(())
    }
}

/// One trial: its name and the overrides that make it (the swept keys only; [`Sweep::sets`]
/// gives the whole list).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trial {
    pub name: String,
    pub seed: u64,
    pub swept: Vec<String>,
    /// The trial's `run.checkpoint_every` (filled by [`Sweep::load`]): a retry resumes from there.
    pub checkpoint_every: usize,
}

/// A loaded and checked sweep: the file, its base run file found, and its trials.
#[derive(Debug, Clone)]
pub struct Sweep {
    pub file: PathBuf,
    pub spec: SweepFile,
    pub base: PathBuf,
    pub trials: Vec<Trial>,
}

impl Sweep {
    /// One line: the file, its trials, the base run, the budget and the score.
    pub fn summary(&self) -> String {
        let s = &self.spec.sweep;
        format!(
            "{}: {} trials of {}, {} iterations each, {} CPU(s) per trial, {} {} (score: mean of the last {}){}",
            self.file.display(),
            self.trials.len(),
            self.base.display(),
            s.iterations,
            s.cpus_per_trial,
            s.mode,
            s.metric,
            s.smooth,
            match &self.spec.asha {
                Some(a) => format!(
                    ", ASHA from iteration {} (keeps 1/{} at each rung)",
                    a.grace_period, a.reduction_factor
                ),
                None => ", no early stopping".into(),
            }
        )
    }

    /// Loads `path` with `overrides` (`sweep.cpus_per_trial=2`, `asha.grace_period=20`), expands
    /// the trials and loads each trial's run config; any error names the sweep file (and the
    /// trial) and the key.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Self> {
        let spec: SweepFile = clawrl_config::load(path, overrides)?;
        let base = find_config(Path::new(&spec.sweep.base)).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            key: "sweep.base".into(),
            reason: e.to_string(),
        })?;
        let mut sweep = Self {
            file: path.to_path_buf(),
            trials: expand(&spec),
            spec,
            base,
        };
        for i in 0..sweep.trials.len() {
            let t = &sweep.trials[i];
            let cfg = load_train_config(&sweep.base, &sweep.sets(t)).with_context(|| {
                format!(
                    "{}: trial {} ({}) is not a valid run",
                    path.display(),
                    t.name,
                    t.swept.join(" ")
                )
            })?;
            sweep.trials[i].checkpoint_every = cfg.run.run.checkpoint_every;
        }
        Ok(sweep)
    }

    /// Every override of `trial`'s `clawrl train`, in the order they apply.
    pub fn sets(&self, trial: &Trial) -> Vec<String> {
        let s = &self.spec.sweep;
        let mut v = s.set.clone();
        v.extend(trial.swept.iter().cloned());
        v.push(format!("run.seed={}", trial.seed));
        v.push(format!("run.max_iterations={}", s.iterations));
        v.push(format!("run.env_threads={}", s.cpus_per_trial));
        // One candle thread beside the physics threads was the loop's best (BENCHMARKS.md).
        v.push("run.candle_threads=1".into());
        v
    }
}

/// Grid points x random draws x seeds, in that nesting (seeds innermost).
pub fn expand(spec: &SweepFile) -> Vec<Trial> {
    let mut points: Vec<Vec<String>> = vec![Vec::new()];
    for (key, values) in &spec.grid {
        points = points
            .iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push(format!("{key}={}", value_text(v)));
                    q
                })
            })
            .collect();
    }
    if let Some(r) = &spec.random {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(r.seed);
        let draws: Vec<Vec<String>> = (0..r.draws)
            .map(|_| {
                r.space
                    .iter()
                    .map(|(key, d)| format!("{key}={}", draw(d, &mut rng)))
                    .collect()
            })
            .collect();
        points = points
            .iter()
            .flat_map(|p| {
                draws.iter().map(move |d| {
                    let mut q = p.clone();
                    q.extend(d.iter().cloned());
                    q
                })
            })
            .collect();
    }
    let mut trials = Vec::new();
    for p in &points {
        for &seed in &spec.sweep.seeds {
            let i = trials.len();
            trials.push(Trial {
                name: trial_name(i, p, seed),
                seed,
                swept: p.clone(),
                checkpoint_every: 0,
            });
        }
    }
    trials
}

fn draw(d: &Draw, rng: &mut impl rand::Rng) -> String {
    match d {
        Draw::Uniform([lo, hi]) => format!("{}", lo + (hi - lo) * rng.random::<f64>()),
        Draw::LogUniform([lo, hi]) => {
            let (a, b) = (lo.ln(), hi.ln());
            format!("{}", (a + (b - a) * rng.random::<f64>()).exp())
        }
        Draw::Choice(v) => value_text(&v[rng.random_range(0..v.len())]),
    }
}

/// A TOML value as `--set` reads it back.
fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    }
}

/// `t03-learning_rate=0.001-s2`: the index keeps names unique, the last part of each swept
/// key and its value say what the trial is.
fn trial_name(i: usize, swept: &[String], seed: u64) -> String {
    let mut name = format!("t{i:02}");
    for kv in swept {
        let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
        let short = key.rsplit('.').next().unwrap_or(key);
        name.push('-');
        name.push_str(short);
        name.push('=');
        name.push_str(value);
    }
    let mut name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "=._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    name.push_str(&format!("-s{seed}"));
    name
}

/// What the scheduler says of one trial (results.json, written by the Ray driver).
#[derive(Debug, Clone, Deserialize)]
pub struct TrialResult {
    pub name: String,
    /// `done`, `stopped` (early, by ASHA) or `failed`.
    pub status: String,
    pub error: Option<String>,
    pub iterations: usize,
    pub env_steps: f64,
    pub wall_s: f64,
    /// The metric's last finite value, and the score (mean of the last `smooth`).
    pub metric: Option<f64>,
    pub score: Option<f64>,
    /// Processes started for the trial: 1, or more where it was retried.
    pub starts: usize,
    pub run_dir: String,
    pub load: String,
}

/// The results file the driver writes.
#[derive(Debug, Clone, Deserialize)]
pub struct Results {
    pub wall_s: f64,
    pub trials: Vec<TrialResult>,
}

impl Results {
    pub fn read(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }

    /// The best trial that did not fail, by score in the sweep's direction.
    pub fn best<'a>(&'a self, mode: &str) -> Option<&'a TrialResult> {
        let sign = if mode == "min" { -1.0 } else { 1.0 };
        self.trials
            .iter()
            .filter(|t| t.status != "failed")
            .filter_map(|t| t.score.filter(|s| s.is_finite()).map(|s| (t, sign * s)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(t, _)| t)
    }

    /// One markdown table, a row per trial, the columns of `scripts/seeds` that a training
    /// run has (seed, env steps, train wall, load at end) and the sweep's own.
    pub fn table(&self, sweep: &Sweep) -> String {
        let s = &sweep.spec.sweep;
        let mut out = format!("# {}, {:.0} s\n\n", sweep.summary(), self.wall_s);
        out.push_str(
            "| trial | swept | seed | status | iterations | env steps | train wall | load at end | metric (last) | score | starts |\n",
        );
        out.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
        let best = self.best(&s.mode).map(|t| t.name.clone());
        for r in &self.trials {
            let t = sweep.trials.iter().find(|t| t.name == r.name);
            let swept = t.map(|t| t.swept.join(" ")).unwrap_or_default();
            let seed = t.map(|t| t.seed.to_string()).unwrap_or_default();
            let status = match (&r.error, best.as_deref() == Some(r.name.as_str())) {
                (Some(e), _) => format!("failed: {}", e.lines().next().unwrap_or("")),
                (None, true) => format!("**{} (best)**", r.status),
                (None, false) => r.status.clone(),
            };
            let num = |x: Option<f64>| x.map(|v| format!("{v:.3}")).unwrap_or("-".into());
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {:.0} | {:.1} s | {} | {} | {} | {} |\n",
                r.name,
                swept,
                seed,
                status.replace('|', "/"),
                r.iterations,
                r.env_steps,
                r.wall_s,
                r.load,
                num(r.metric),
                num(r.score),
                r.starts
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Result<SweepFile, ConfigError> {
        clawrl_config::from_str(text, "sweep.toml", &[])
    }

    const BASE: &str = r#"
[sweep]
base = "configs/run/cartpole_ppo.toml"
metric = "mean_return"
mode = "max"
smooth = 5
seeds = [1, 2]
iterations = 100
cpus_per_trial = 1
max_concurrent = 2
max_failures = 1
set = ["run.checkpoint_every=10"]
[grid]
"ppo.learning_rate" = [1e-3, 3e-3]
"ppo.entropy_coef" = [0.0, 0.01]
"#;

    #[test]
    fn grid_times_seeds_gives_every_combination_once() {
        let t = expand(&spec(BASE).unwrap());
        assert_eq!(t.len(), 8);
        let names: std::collections::BTreeSet<_> = t.iter().map(|t| &t.name).collect();
        assert_eq!(names.len(), 8);
        assert_eq!(t[0].name, "t00-entropy_coef=0.0-learning_rate=0.001-s1");
        assert_eq!(
            t[0].swept,
            ["ppo.entropy_coef=0.0", "ppo.learning_rate=0.001"]
        );
        assert_eq!((t[0].seed, t[1].seed), (1, 2));
        assert_eq!(t[7].swept[1], "ppo.learning_rate=0.003");
    }

    #[test]
    fn random_draws_are_the_same_for_the_same_seed_and_inside_their_range() {
        let text = format!(
            "{BASE}[random]\ndraws = 3\nseed = 7\n[random.space]\n\"ppo.gamma\" = {{ log_uniform = [0.9, 0.999] }}\n"
        );
        let a = expand(&spec(&text).unwrap());
        let b = expand(&spec(&text).unwrap());
        assert_eq!(a, b);
        assert_eq!(a.len(), 4 * 3 * 2);
        for t in &a {
            let g: f64 = t.swept[2].split_once('=').unwrap().1.parse().unwrap();
            assert!((0.9..=0.999).contains(&g), "{g}");
        }
        let draws: std::collections::BTreeSet<_> = a.iter().map(|t| t.swept[2].clone()).collect();
        assert_eq!(draws.len(), 3);
    }

    #[test]
    fn a_bad_file_names_the_key() {
        let e = spec(&BASE.replace("\"max\"", "\"up\"")).unwrap_err();
        assert_eq!(e.key, "sweep.mode");
        let e = spec(&BASE.replace("smooth = 5\n", "")).unwrap_err();
        assert_eq!(e.key, "sweep.smooth");
        let e = spec(&format!(
            "{BASE}[asha]\ngrace_period = 500\nreduction_factor = 2\n"
        ))
        .unwrap_err();
        assert_eq!(e.key, "asha.grace_period");
        let e = spec(&BASE.replace("[1e-3, 3e-3]", "[]")).unwrap_err();
        assert_eq!(e.key, "grid.ppo.learning_rate");
    }

    #[test]
    fn the_best_trial_follows_the_direction_and_skips_failures() {
        let r = |name: &str, status: &str, score: f64| TrialResult {
            name: name.into(),
            status: status.into(),
            error: (status == "failed").then(|| "boom".into()),
            iterations: 1,
            env_steps: 0.0,
            wall_s: 0.0,
            metric: Some(score),
            score: Some(score),
            starts: 1,
            run_dir: String::new(),
            load: String::new(),
        };
        let res = Results {
            wall_s: 1.0,
            trials: vec![
                r("a", "done", 2.0),
                r("b", "failed", 9.0),
                r("c", "stopped", 1.0),
            ],
        };
        assert_eq!(res.best("max").unwrap().name, "a");
        assert_eq!(res.best("min").unwrap().name, "c");
    }
}
