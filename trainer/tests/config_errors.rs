//! Bad configs fail before training, naming the file and the key.
mod common;

use std::path::Path;

use clawrl_trainer::load_train_config;

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn run_file(algo: &Path) -> String {
    let text =
        std::fs::read_to_string(common::repo().join("configs/run/cartpole_ppo.toml")).unwrap();
    text.replace(
        "\"configs/algo/ppo.toml\"",
        &format!("\"{}\"", algo.display()),
    )
}

fn err(path: &Path, set: &[&str]) -> clawrl_config::ConfigError {
    let o: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let e = load_train_config(path, &o).unwrap_err();
    eprintln!("{e}");
    e
}

#[test]
fn shipped_configs_load() {
    for f in [
        "cartpole_ppo.toml",
        "cartpole_sac.toml",
        "cartpole_crossq.toml",
        "quadruped_flat_ppo.toml",
        "quadruped_flat_ppo_fast.toml",
        "quadruped_flat_sac.toml",
        "quadruped_flat_crossq.toml",
    ] {
        common::config(f, &[]);
    }
}

#[test]
fn missing_wrong_type_and_out_of_range_name_file_and_key() {
    let dir = common::tmp("cfg");
    let algo_text = std::fs::read_to_string(common::repo().join("configs/algo/ppo.toml")).unwrap();
    let algo = write(&dir, "ppo.toml", &algo_text);
    let good = run_file(&algo);

    // Missing key in the run file.
    let p = write(&dir, "missing.toml", &good.replace("num_envs = 16\n", ""));
    let e = err(&p, &[]);
    assert_eq!(
        (e.file.as_path(), e.key.as_str()),
        (p.as_path(), "run.num_envs")
    );
    assert!(e.to_string().contains("missing.toml") && e.to_string().contains("run.num_envs"));

    // Wrong type.
    let p = write(
        &dir,
        "type.toml",
        &good.replace("seed = 1", "seed = \"one\""),
    );
    let e = err(&p, &[]);
    assert_eq!(
        (e.file.as_path(), e.key.as_str()),
        (p.as_path(), "run.seed")
    );

    // Out of range in the algorithm file: the algorithm file is named, not the run file.
    let bad_algo = write(
        &dir,
        "bad_ppo.toml",
        &algo_text.replace("gamma = 0.99", "gamma = 1.5"),
    );
    let p = write(&dir, "range.toml", &run_file(&bad_algo));
    let e = err(&p, &[]);
    assert_eq!(
        (e.file.as_path(), e.key.as_str()),
        (bad_algo.as_path(), "ppo.gamma")
    );
    assert!(e.reason.contains("outside"), "{}", e.reason);

    // Missing key in the algorithm file.
    let bad_algo = write(
        &dir,
        "missing_ppo.toml",
        &algo_text.replace("lam = 0.95\n", ""),
    );
    let p = write(&dir, "range2.toml", &run_file(&bad_algo));
    assert_eq!(err(&p, &[]).key, "ppo.lam");

    // Command-line overrides are routed and checked the same way.
    let p = write(&dir, "good.toml", &good);
    assert!(load_train_config(&p, &[]).is_ok());
    let e = err(&p, &["ppo.clip_param=-1"]);
    assert_eq!(
        (e.file.as_path(), e.key.as_str()),
        (algo.as_path(), "ppo.clip_param")
    );
    let e = err(&p, &["run.num_envs=0"]);
    assert_eq!(
        (e.file.as_path(), e.key.as_str()),
        (p.as_path(), "run.num_envs")
    );
    let e = err(&p, &["policy.activation=\"swish\""]);
    assert_eq!(e.key, "policy.activation");
    let e = err(&p, &["run.nmu_envs=4"]);
    assert_eq!(e.key, "run.nmu_envs");
    let e = err(&p, &["run.task=\"walker\""]);
    assert_eq!(e.key, "run.task");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn errors_name_the_file_that_holds_the_mistake() {
    let dir = common::tmp("cfg-blame");
    let algo_text = std::fs::read_to_string(common::repo().join("configs/algo/ppo.toml")).unwrap();
    let algo = write(&dir, "ppo.toml", &algo_text);
    let good = run_file(&algo);
    // A policy kind that is not registered names the run file, the key and the known kinds.
    let p = write(
        &dir,
        "kind.toml",
        &good.replace("\"gaussian_mlp\"", "\"gausian_mlp\""),
    );
    let e = err(&p, &[]);
    assert_eq!(
        (e.file.as_path(), e.key.as_str()),
        (p.as_path(), "policy.kind")
    );
    assert!(e.reason.contains("gaussian_mlp_state_std"), "{e}");
    // A missing algorithm file is blamed on the run file's key that names it.
    let p = write(&dir, "noalgo.toml", &run_file(&dir.join("nope.toml")));
    let e = err(&p, &[]);
    assert_eq!(
        (e.file.as_path(), e.key.as_str()),
        (p.as_path(), "run.algo_config")
    );
    assert!(e.reason.contains("nope.toml"), "{e}");
    // A typo in the run file's algo_overrides is the run file's mistake, not ppo.toml's.
    let p = write(
        &dir,
        "typo.toml",
        &good.replace("ppo.num_mini_batches=2", "ppo.num_mini_bathces=2"),
    );
    let e = err(&p, &[]);
    assert_eq!(
        (e.file.as_path(), e.key.as_str()),
        (p.as_path(), "run.algo_overrides")
    );
    assert!(e.reason.contains("ppo.num_mini_bathces"), "{e}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_runs_saved_config_is_a_valid_run_file_with_the_task_by_content() {
    let dir = common::tmp("cfg-round-trip");
    for name in ["quadruped_flat_ppo.toml", "cartpole_sac.toml"] {
        let cfg = common::config(
            name,
            &["task.env.decimation=5"][..usize::from(name.starts_with("quad"))],
        );
        let text = cfg.to_run_file(&dir.join("run")).unwrap();
        let p = write(&dir, name, &text);
        let back = load_train_config(&p, &[]).unwrap();
        assert_eq!(back.run.policy, cfg.run.policy);
        assert_eq!((&back.algo, &back.task), (&cfg.algo, &cfg.task));
        assert_eq!(back.run.run.out_dir, dir.join("run").display().to_string());
        if let Some(t) = &back.task {
            // The override is part of the stored content, not a path to re-read.
            assert_eq!(t.env.decimation, 5);
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn resume_may_change_only_the_keys_that_keep_the_run_the_same() {
    let mut cfg = common::config("cartpole_ppo.toml", &[]);
    cfg.apply_resume_overrides(&["run.max_iterations=99".into()])
        .unwrap();
    assert_eq!(cfg.run.run.max_iterations, 99);
    for bad in ["ppo.learning_rate=0.1", "run.seed=3", "policy.init_std=0.5"] {
        let e = cfg.apply_resume_overrides(&[bad.into()]).unwrap_err();
        assert!(
            e.reason.contains("run.max_iterations") && e.reason.contains("--config"),
            "{e}"
        );
    }
    let e = cfg
        .apply_resume_overrides(&["run.max_iterations=inf".into()])
        .unwrap_err();
    assert_eq!(e.reason, clawrl_config::NON_FINITE);
}

#[test]
fn mean_action_rollouts_are_only_for_pure_distillation() {
    let run = common::repo().join("configs/run/quadruped_distill.toml");
    let set = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    // PPO's ratio needs sampled actions: opd refuses a scaled noise.
    let e = load_train_config(
        &run,
        &set(&["distill.mode=\"opd\"", "distill.rollout_noise=0"]),
    )
    .unwrap_err();
    assert_eq!(e.key, "distill.rollout_noise");
    assert!(e.reason.contains("mode = \"distill\""), "{}", e.reason);
    let e = load_train_config(&run, &set(&["distill.rollout_noise=1.5"])).unwrap_err();
    assert_eq!(e.key, "distill.rollout_noise");
    // The shipped student: pure distillation with mean-action rollouts.
    let cfg = load_train_config(&run, &[]).unwrap();
    let clawrl_trainer::config::AlgoConfig::Distill(d) = &cfg.algo else {
        panic!("quadruped_distill.toml is not a distillation");
    };
    assert_eq!(
        (d.mode, d.rollout_noise),
        (clawrl_trainer::config::DistillMode::Distill, 0.0)
    );
    assert!(
        load_train_config(
            &run,
            &set(&["distill.mode=\"opd\"", "distill.rollout_noise=1"])
        )
        .is_ok()
    );
}

/// The closed choices (`ppo.schedule`, `distill.mode`, `loss`, `kl_direction`,
/// `alpha_schedule`, `teacher_update`) are parsed at load: a value outside them, a misspelling
/// or another case included, is an error naming the file, the key and the values there are.
#[test]
fn an_unknown_choice_names_the_file_the_key_and_the_choices() {
    let ppo_run = common::repo().join("configs/run/quadruped_flat_ppo.toml");
    let e = err(&ppo_run, &["ppo.schedule=\"Adaptive\""]);
    assert_eq!(e.key, "ppo.schedule");
    assert!(
        e.reason.contains("`adaptive`") && e.reason.contains("`fixed`"),
        "{e}"
    );
    let distill_run = common::repo().join("configs/run/quadruped_distill.toml");
    for (key, bad, choices) in [
        (
            "distill.mode",
            "dagger",
            ["`opd`", "`distill`", "`rl`"].as_slice(),
        ),
        ("distill.loss", "l2", &["`kl`", "`mse`"]),
        ("distill.kl_direction", "both", &["`forward`", "`reverse`"]),
        (
            "distill.alpha_schedule",
            "exponential",
            &["`constant`", "`linear`", "`cosine`"],
        ),
        ("distill.teacher_update", "polyak", &["`frozen`", "`ema`"]),
    ] {
        let e = err(&distill_run, &[&format!("{key}=\"{bad}\"")]);
        assert_eq!(e.key, key, "{e}");
        assert!(e.file.to_string_lossy().ends_with("distill.toml"), "{e}");
        assert!(e.reason.contains(bad), "{e}");
        for c in choices {
            assert!(e.reason.contains(c), "{key}: {e}");
        }
    }
}
