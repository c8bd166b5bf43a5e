//! Learning tests: PPO and SAC each balance the MuJoCo cart-pole within a fixed budget.
//! A random policy gets about 10-20 of the 200 reachable per episode.
mod common;

use clawrl_trainer::Runner;
use clawrl_trainer::algorithms::NoHooks;
use clawrl_trainer::eval::{EvalOptions, evaluate};

const THRESHOLD: f64 = 150.0;

fn learn(config: &str, name: &str) {
    let cfg = common::config(config, &[]);
    let dir = common::tmp(name);
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
        "{name}: {} env steps in {:.1} s; training return {:.1}; deterministic eval return {:.1}, fall rate {:.2}",
        summary.env_steps,
        start.elapsed().as_secs_f64(),
        summary.mean_return,
        report.mean_return(),
        report.fall_rate()
    );
    assert!(
        report.mean_return() >= THRESHOLD,
        "{name}: eval return {} < {THRESHOLD}",
        report.mean_return()
    );
    assert!(
        dir.join("metrics.csv").exists()
            && dir.join("curves.png").exists()
            && dir.join("policy.safetensors").exists()
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn ppo_balances_cartpole() {
    learn("cartpole_ppo.toml", "ppo-learn");
}

#[test]
fn sac_balances_cartpole() {
    learn("cartpole_sac.toml", "sac-learn");
}
