//! Distillation on cart-pole: a PPO teacher that sees the velocities is distilled into a student
//! that sees only the cart position and the pole angle plus its last 3 observations, and the
//! teacher-update modes and refusals of the distiller.
mod common;

use std::path::{Path, PathBuf};

use clawrl_policy::{Policy, Registry};
use clawrl_trainer::Runner;
use clawrl_trainer::algorithms::NoHooks;
use clawrl_trainer::eval::{EvalOptions, evaluate};

/// Trains the privileged cart-pole teacher once per test binary and returns its policy file.
fn teacher() -> PathBuf {
    static ONCE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        let cfg = common::config("cartpole_ppo.toml", &[]);
        let dir = common::tmp("distill-teacher");
        let mut r = Runner::new(cfg, &dir).unwrap();
        r.train(&mut NoHooks).unwrap();
        dir.join("policy.safetensors")
    })
    .clone()
}

fn eval_return(cfg: &clawrl_trainer::TrainConfig, policy: &dyn Policy) -> f64 {
    let opts = EvalOptions {
        episodes: 20,
        num_envs: 10,
        threads: 1,
        ..Default::default()
    };
    evaluate(cfg, policy, &opts).unwrap().mean_return()
}

fn distill_config(teacher: &Path, extra: &[&str]) -> clawrl_trainer::TrainConfig {
    let t = format!("distill.teacher={}", teacher.display());
    let mut o = vec![t.as_str()];
    o.extend_from_slice(extra);
    common::config("cartpole_distill.toml", &o)
}

#[test]
fn student_without_velocities_reaches_90_percent_of_the_teacher() {
    let teacher_file = teacher();
    let teacher = Registry::default().load(&teacher_file).unwrap();
    let cfg = distill_config(&teacher_file, &[]);
    let teacher_return = eval_return(&cfg, teacher.as_ref());
    let dir = common::tmp("distill-student");
    let start = std::time::Instant::now();
    let mut runner = Runner::new(cfg.clone(), &dir).unwrap();
    runner.train(&mut NoHooks).unwrap();
    let student = runner.policy();
    assert_eq!(
        student.config().obs_dim,
        3 * 4,
        "3 onboard values x (history 3 + 1)"
    );
    let student_return = eval_return(&cfg, student);
    eprintln!(
        "teacher {teacher_return:.1}, student {student_return:.1} after {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert!(teacher_return >= 180.0, "teacher {teacher_return}");
    assert!(
        student_return >= 0.9 * teacher_return,
        "student {student_return} < 90 % of teacher {teacher_return}"
    );
    let csv = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    for col in [
        "kl_teacher",
        "distill_alpha",
        "distill_loss",
        "policy_loss",
        "mean_return",
    ] {
        assert!(header.split(',').any(|c| c == col), "{col} in {header}");
    }
    // The KL to the teacher falls as the student learns.
    let kl: Vec<f64> = column(&csv, "kl_teacher");
    assert!(kl.last().unwrap() < &(kl[0] * 0.5), "KL {kl:?}");
}

fn column(csv: &str, name: &str) -> Vec<f64> {
    let mut lines = csv.lines();
    let i = lines
        .next()
        .unwrap()
        .split(',')
        .position(|c| c == name)
        .unwrap();
    lines
        .map(|l| l.split(',').nth(i).unwrap().parse().unwrap())
        .collect()
}

/// Self-distillation: a same-shape student (privileged, no history) with an EMA teacher.
fn ema_run(margin: &str, name: &str) -> Vec<f64> {
    let teacher_file = teacher();
    let cfg = distill_config(
        &teacher_file,
        &[
            "policy.actor_obs=privileged",
            "policy.history=0",
            "distill.teacher_update=ema",
            "distill.ema_window=5",
            &format!("distill.ema_margin={margin}"),
            "run.max_iterations=6",
        ],
    );
    let dir = common::tmp(name);
    let mut runner = Runner::new(cfg, &dir).unwrap();
    runner.train(&mut NoHooks).unwrap();
    column(
        &std::fs::read_to_string(dir.join("metrics.csv")).unwrap(),
        "ema_updates",
    )
}

#[test]
fn ema_fires_only_while_its_condition_holds() {
    // No student return can beat the teacher's by 1e6: the teacher never moves.
    let never = ema_run("1e6", "ema-never");
    assert!(never.iter().all(|&n| n == 0.0), "{never:?}");
    // Beating the teacher by -1e6 always holds once 5 episodes have finished.
    let always = ema_run("-1e6", "ema-always");
    assert!(*always.last().unwrap() >= 1.0, "{always:?}");
}

#[test]
fn ema_between_different_shapes_is_refused_before_training() {
    let cfg = distill_config(&teacher(), &["distill.teacher_update=ema"]);
    let dir = common::tmp("ema-shapes");
    let e = Runner::new(cfg, &dir).err().unwrap();
    let msg = format!("{e:#}");
    assert!(
        msg.contains("distill.teacher_update") && msg.contains("architecture"),
        "{msg}"
    );
    assert!(!dir.join("metrics.csv").exists());
}

#[test]
fn a_teacher_for_another_observation_is_refused_naming_the_file() {
    // A teacher whose input is the quadruped's privileged observation (83 values).
    let dir = common::tmp("wrong-teacher");
    let path = dir.join("quadruped_teacher.safetensors");
    let cfg = clawrl_policy::PolicyConfig {
        kind: "gaussian_mlp".into(),
        obs_dim: 83,
        action_dim: 1,
        obs_source: clawrl_policy::ObsSource::Privileged,
        hidden: vec![8],
        activation: clawrl_policy::Activation::Elu,
        init_std: 1.0,
        obs_clip: 10.0,
        history: 0,
        conv_channels: 0,
    };
    let p = Registry::default()
        .build(&cfg, &mut rand::SeedableRng::seed_from_u64(0))
        .unwrap();
    Registry::save(p.as_ref(), &path).unwrap();
    let e = Runner::new(distill_config(&path, &[]), &dir.join("run"))
        .err()
        .unwrap();
    let msg = format!("{e:#}");
    assert!(
        msg.contains("quadruped_teacher.safetensors") && msg.contains("83"),
        "{msg}"
    );
}

#[test]
fn a_changed_teacher_file_is_refused_on_resume() {
    let dir = common::tmp("teacher-changed");
    let file = dir.join("teacher.safetensors");
    std::fs::copy(teacher(), &file).unwrap();
    let cfg = distill_config(&file, &["run.max_iterations=2", "run.checkpoint_every=1"]);
    let run = dir.join("run");
    Runner::new(cfg, &run).unwrap().train(&mut NoHooks).unwrap();
    // Another teacher at the same path.
    let mut p = Registry::default().load(&file).unwrap();
    p.normalizer_mut().mean[0] += 1.0;
    Registry::save(p.as_ref(), &file).unwrap();
    let opts = clawrl_trainer::ResumeOptions {
        overrides: vec!["run.max_iterations=3".into()],
        ..Default::default()
    };
    let e = Runner::resume(&run, &opts).err().unwrap();
    assert!(format!("{e:#}").contains("has changed"), "{e:#}");
}
