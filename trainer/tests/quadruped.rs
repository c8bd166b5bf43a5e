//! The quadruped arm of the task factory: a tiny PPO iteration and an evaluation with a fixed
//! command run end to end on the sim crate's claw-foot robot.
mod common;

use clawrl_trainer::Runner;
use clawrl_trainer::algorithms::NoHooks;
use clawrl_trainer::eval::{EvalOptions, evaluate};

#[test]
fn quadruped_trains_one_iteration_and_evaluates_with_a_fixed_command() {
    let cfg = common::config(
        "quadruped_flat_ppo.toml",
        &[
            "run.num_envs=4",
            "run.max_iterations=2",
            "ppo.num_steps_per_env=8",
            "ppo.num_mini_batches=2",
        ],
    );
    let dir = common::tmp("quad");
    let mut r = Runner::new(cfg.clone(), &dir).unwrap();
    r.train(&mut NoHooks).unwrap();
    assert_eq!(r.env_steps, 2 * 4 * 8);
    // The teacher reads the privileged observation, larger than the onboard one.
    let spec = clawrl_trainer::task::spec(&cfg).unwrap();
    assert_eq!(r.policy().config().obs_dim, spec.privileged_dim);
    assert!(spec.privileged_dim > spec.onboard_dim);
    assert_eq!(r.policy().config().action_dim, 16);
    let opts = EvalOptions {
        episodes: 2,
        num_envs: 2,
        command: Some(vec![0.3, 0.0, 0.0]),
        gait_seconds: 0.5,
        ..Default::default()
    };
    let report = evaluate(&cfg, r.policy(), &opts).unwrap();
    assert_eq!(report.episodes.len(), 2);
    // The fixed command is what the tracking error is measured against.
    assert!(
        (report.command_speed() - 0.3).abs() < 1e-6,
        "{}",
        report.command_speed()
    );
    assert!(report.tracking_error().is_finite());
    let gait = report.gait.unwrap();
    assert_eq!(gait.joints[0].len(), 16);
    assert_eq!(gait.contacts[0].len(), 4);
    std::fs::remove_dir_all(dir).ok();
}
