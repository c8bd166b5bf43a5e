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
        "quadruped_flat_ppo.toml",
        "quadruped_flat_sac.toml",
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
fn cli_refuses_a_bad_value_before_training() {
    let dir = common::tmp("cli-bad");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clawrl"))
        .arg("train")
        .arg("--config")
        .arg(common::repo().join("configs/run/cartpole_ppo.toml"))
        .args(["--set", "ppo.gamma=2", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ppo.toml") && stderr.contains("ppo.gamma"),
        "{stderr}"
    );
    assert!(!dir.join("metrics.csv").exists());
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn cli_trains_plots_and_evaluates() {
    let dir = common::tmp("cli-ok");
    let bin = env!("CARGO_BIN_EXE_clawrl");
    let out = std::process::Command::new(bin)
        .arg("train")
        .arg("--config")
        .arg(common::repo().join("configs/run/cartpole_ppo.toml"))
        .args(["--set", "run.max_iterations=3", "--no-progress", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4);
    assert!(csv.starts_with("iteration,env_steps,wall_s,steps_per_s,mean_return"));
    assert!(dir.join("curves.png").exists());
    std::fs::remove_file(dir.join("curves.png")).unwrap();
    let out = std::process::Command::new(bin)
        .args(["plot", "--run"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(dir.join("curves.png").exists());
    let gait = dir.join("gait.png");
    let out = std::process::Command::new(bin)
        .args(["eval", "--episodes", "4", "--checkpoint"])
        .arg(&dir)
        .arg("--gait-plot")
        .arg(&gait)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("episodes            4") && stdout.contains("fall rate"),
        "{stdout}"
    );
    assert!(gait.exists());
    std::fs::remove_dir_all(dir).ok();
}
