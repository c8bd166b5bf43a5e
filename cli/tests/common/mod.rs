//! Helpers of the `clawrl` command's tests: they run the real binary as a user would.
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fresh, empty directory under the system temp dir.
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("clawrl-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `clawrl ARGS` with one candle thread; stdout and stderr captured (so never a terminal).
pub fn clawrl(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_clawrl"));
    c.env("RAYON_NUM_THREADS", "1")
        .env_remove("NO_COLOR")
        .args(args);
    c
}

pub fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap()
}

pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs and asserts success, returning (stdout, stderr).
pub fn ok(cmd: &mut Command) -> (String, String) {
    let o = run(cmd);
    let (out, err) = text(&o);
    assert!(
        o.status.success(),
        "failed: {cmd:?}\nstdout:\n{out}\nstderr:\n{err}"
    );
    (out, err)
}

/// Runs and asserts failure, returning stderr.
pub fn fails(cmd: &mut Command) -> String {
    let o = run(cmd);
    let (out, err) = text(&o);
    assert!(
        !o.status.success(),
        "should have failed: {cmd:?}\nstdout:\n{out}\nstderr:\n{err}"
    );
    err
}

pub fn cartpole() -> String {
    repo()
        .join("configs/run/cartpole_ppo.toml")
        .display()
        .to_string()
}

/// Trains cart-pole PPO for `iterations` into `dir`, a checkpoint every iteration.
pub fn train_cartpole(dir: &Path, iterations: usize) {
    let its = format!("run.max_iterations={iterations}");
    ok(clawrl(&[
        "train",
        "--config",
        &cartpole(),
        "--set",
        &its,
        "--set",
        "run.checkpoint_every=1",
    ])
    .arg("--out")
    .arg(dir));
}

/// Every file under `dir` with its bytes, sorted by path.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                v.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    v.sort();
    v
}

pub fn metrics_iterations(dir: &Path) -> Vec<usize> {
    let csv = std::fs::read_to_string(dir.join("metrics.csv")).unwrap();
    csv.lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().parse::<f64>().unwrap() as usize)
        .collect()
}

/// One column of `clawrl eval`'s per-episode table, one value per episode.
pub fn column(dir: &Path, name: &str) -> Vec<f64> {
    let csv = std::fs::read_to_string(dir.join("eval_episodes.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = header.iter().position(|h| *h == name).unwrap();
    lines
        .map(|l| l.split(',').nth(i).unwrap().parse().unwrap())
        .collect()
}

/// `clawrl eval` of `policy` (relative to the repository) into a fresh folder.
pub fn eval(policy: &str, name: &str, extra: &[&str]) -> std::path::PathBuf {
    let out = tmp(name);
    let policy = repo().join(policy);
    let mut args = vec![
        "eval",
        "--policy",
        policy.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    ok(&mut clawrl(&args));
    out
}

pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}
