//! Learning tests: PPO, SAC and CrossQ each balance the MuJoCo cart-pole within a fixed budget,
//! on two seeds each. A random policy gets about 10-20 of the 200 reachable per episode.
//!
//! `cargo test -p clawrl-trainer --test learning -- --ignored --nocapture spread` trains more
//! seeds and prints their returns, to re-measure the spread the thresholds are set from.
mod common;

use clawrl_trainer::Runner;
use clawrl_trainer::algorithms::NoHooks;
use clawrl_trainer::eval::{EvalOptions, evaluate};

/// Deterministic evaluation return over 20 episodes (maximum 200).
fn learn(config: &str, name: &str, seed: u64) -> f64 {
    let seed_set = format!("run.seed={seed}");
    let cfg = common::config(config, &[&seed_set]);
    let dir = common::tmp(&format!("{name}-seed{seed}"));
    let start = std::time::Instant::now();
    let mut runner = Runner::new(cfg.clone(), &dir).unwrap();
    let summary = runner.train(&mut NoHooks).unwrap();
    let report = evaluate(
        &cfg,
        runner.policy(),
        &EvalOptions {
            episodes: 20,
            num_envs: 10,
            threads: 1,
            ..Default::default()
        },
    )
    .unwrap();
    eprintln!(
        "{name} seed {seed}: {} env steps in {:.1} s; training return {:.1}; deterministic eval return {:.1}, fall rate {:.2}",
        summary.env_steps,
        start.elapsed().as_secs_f64(),
        summary.mean_return,
        report.mean_return(),
        report.fall_rate()
    );
    assert!(
        dir.join("metrics.csv").exists()
            && dir.join("curves.png").exists()
            && dir.join("policy.safetensors").exists()
    );
    drop(runner);
    std::fs::remove_dir_all(dir).ok();
    report.mean_return()
}

// Thresholds from the measured spread (deterministic eval return over 20 episodes, max 200;
// a random policy gets 10-20; runs are deterministic for a seed). Measured 2026-12-02 with
// the `spread` test, configs/run/cartpole_*.toml as committed:
// - PPO (60 iterations, 30 720 env steps, 2-4 s each): seeds 1-6 gave
//   200.0, 200.0, 199.05, 200.0, 200.0, 200.0 (min 199). Threshold 180.
// - SAC (150 iterations, 9 600 env steps, 9-22 s each): seeds 1-6 gave
//   186.2, 149.2, 168.2, 200.0, 198.3, 199.2 (min 149, mean 183). Threshold 100: half-way
//   between a random policy and the worst seed. SAC is not converged at this budget, and
//   training longer did not help: 250 iterations gave 122.7, 147.6, 119.9, 117.2, 132.4,
//   133.5 on the same seeds (all episodes fall before 200 steps).
// - CrossQ (the same 150 iterations and 9 600 env steps as SAC, 6-7 s each), measured
//   2026-12-07 with `clawrl train` + `clawrl eval --episodes 20`: seeds 1-6 gave 200.0,
//   200.0, 200.0, 119.7, 200.0, 200.0 (min 120, mean 187; SAC on seeds 1-3 at this revision:
//   186.2, 149.2, 168.2). At half the budget (4 800 env steps) seeds 1-3 gave 138.4, 155.3,
//   118.9 against SAC's 77.7, 63.2, 78.9. Threshold 100, SAC's: 20 under the worst seed.
//   Re-measured 2026-12-07 22:37 UTC with `spread` once CrossQ stopped drawing SAC's four
//   unused critics from the run's RNG (other initial weights): seeds 1-6 all 200.0.
const PPO_THRESHOLD: f64 = 180.0;
const SAC_THRESHOLD: f64 = 100.0;
const CROSSQ_THRESHOLD: f64 = 100.0;

fn check(config: &str, name: &str, seed: u64, threshold: f64) {
    let ret = learn(config, name, seed);
    assert!(
        ret >= threshold,
        "{name} seed {seed}: eval return {ret} < {threshold}"
    );
}

#[test]
fn ppo_balances_cartpole_seed_1() {
    check("cartpole_ppo.toml", "ppo-learn", 1, PPO_THRESHOLD);
}

#[test]
fn ppo_balances_cartpole_seed_2() {
    check("cartpole_ppo.toml", "ppo-learn", 2, PPO_THRESHOLD);
}

#[test]
fn sac_balances_cartpole_seed_1() {
    check("cartpole_sac.toml", "sac-learn", 1, SAC_THRESHOLD);
}

#[test]
fn sac_balances_cartpole_seed_2() {
    check("cartpole_sac.toml", "sac-learn", 2, SAC_THRESHOLD);
}

#[test]
fn crossq_balances_cartpole_seed_1() {
    check("cartpole_crossq.toml", "crossq-learn", 1, CROSSQ_THRESHOLD);
}

#[test]
fn crossq_balances_cartpole_seed_2() {
    check("cartpole_crossq.toml", "crossq-learn", 2, CROSSQ_THRESHOLD);
}

/// Re-measures the spread: seeds 1-6 of each algorithm (minutes).
#[test]
#[ignore]
fn spread() {
    let only = std::env::var("SPREAD_ONLY").unwrap_or_default();
    for (config, name) in [
        ("cartpole_ppo.toml", "ppo-spread"),
        ("cartpole_sac.toml", "sac-spread"),
        ("cartpole_crossq.toml", "crossq-spread"),
    ] {
        if !name.starts_with(only.as_str()) {
            continue;
        }
        let r: Vec<f64> = (1..=6).map(|s| learn(config, name, s)).collect();
        eprintln!("{name}: {r:?}");
    }
}
