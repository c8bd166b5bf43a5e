//! Run folders keep their work: one writer at a time, branches never touch the original,
//! damaged checkpoints are refused by name and skipped, a kill mid-write loses nothing.
mod common;

use std::time::{Duration, Instant};

use common::*;

#[test]
fn a_second_trainer_on_the_same_folder_is_refused_and_metrics_stay_intact() {
    let dir = tmp("lock");
    let mut first = clawrl(&[
        "train",
        "--config",
        &cartpole(),
        "--set",
        "run.max_iterations=100000",
    ])
    .arg("--out")
    .arg(&dir)
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    // Wait until the first trainer has written some rows and a checkpoint.
    let t0 = Instant::now();
    while !(dir.join("checkpoints").is_dir() && metrics_iterations_len(&dir) >= 25) {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "first trainer never got going"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // A second trainer, resuming (what a second scripts/run does) or fresh, is refused.
    let err = fails(clawrl(&["train", "--set", "run.max_iterations=100000", "--resume"]).arg(&dir));
    assert!(
        err.contains("is in use") && err.contains(&format!("process {}", first.id())),
        "{err}"
    );
    let err = fails(clawrl(&["train", "--config", &cartpole(), "--out"]).arg(&dir));
    assert!(err.contains("is in use"), "{err}");
    std::thread::sleep(Duration::from_millis(300));
    first.kill().unwrap();
    first.wait().unwrap();
    // One writer only: iterations 1, 2, 3, ... with no repeats and no broken line.
    let its = metrics_iterations(&dir);
    assert!(its.len() >= 25);
    assert_eq!(its, (1..=its.len()).collect::<Vec<_>>());
    // The killed trainer's lock is gone with it: resuming now works and says so.
    let (_, err) = ok(clawrl(&["train", "--set", "run.max_iterations=62", "--resume"]).arg(&dir));
    assert!(err.contains("stale lock"), "{err}");
    std::fs::remove_dir_all(dir).ok();
}

fn metrics_iterations_len(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("metrics.csv"))
        .map(|s| s.lines().count().saturating_sub(1))
        .unwrap_or(0)
}

#[test]
fn resume_with_out_branches_and_never_writes_to_the_original() {
    let root = tmp("branch");
    let (a, b) = (root.join("a"), root.join("b"));
    train_cartpole(&a, 3);
    let before = snapshot(&a);
    ok(
        clawrl(&["train", "--set", "run.max_iterations=5", "--resume"])
            .arg(&a)
            .arg("--out")
            .arg(&b),
    );
    assert_eq!(snapshot(&a), before, "the original run changed");
    assert_eq!(metrics_iterations(&b), vec![1, 2, 3, 4, 5]);
    let cfg = std::fs::read_to_string(b.join("config.toml")).unwrap();
    assert!(
        cfg.contains(&format!("out_dir = \"{}\"", b.display())),
        "{cfg}"
    );
    // --config has no meaning with --resume: refused, not ignored.
    let err = fails(clawrl(&["train", "--config", &cartpole(), "--resume"]).arg(&a));
    assert!(
        err.contains("--config") && err.contains("--resume"),
        "{err}"
    );
    // A branch may start from an older checkpoint; extending in place from one may not.
    let c = root.join("c");
    let err = fails(clawrl(&["train", "--from-checkpoint", "2", "--resume"]).arg(&a));
    assert!(err.contains("--out NEW"), "{err}");
    ok(clawrl(&["train", "--from-checkpoint", "2", "--resume"])
        .arg(&a)
        .arg("--out")
        .arg(&c));
    assert_eq!(metrics_iterations(&c), vec![1, 2, 3]);
    let err = fails(
        clawrl(&["train", "--from-checkpoint", "9", "--resume"])
            .arg(&a)
            .arg("--out")
            .arg(root.join("d")),
    );
    assert!(
        err.contains("no checkpoint of iteration 9") && err.contains("1, 2, 3"),
        "{err}"
    );
    // Only the keys that do not change what a run computes may be set on resume.
    let err = fails(clawrl(&["train", "--set", "ppo.learning_rate=0.1", "--resume"]).arg(&a));
    assert!(
        err.contains("ppo.learning_rate") && err.contains("run.max_iterations"),
        "{err}"
    );
    std::fs::remove_dir_all(root).ok();
}

fn flip_byte_near_end(path: &std::path::Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let n = bytes.len();
    bytes[n - 5] ^= 0x10;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn damaged_checkpoints_and_policies_are_refused_by_name_and_resume_falls_back() {
    let dir = tmp("corrupt");
    train_cartpole(&dir, 3);
    let ck = |i: usize| dir.join(format!("checkpoints/ckpt_{i:08}.safetensors"));
    flip_byte_near_end(&ck(3));
    // Evaluating the damaged file itself is refused, naming it.
    let err = fails(clawrl(&["eval", "--episodes", "2", "--policy"]).arg(ck(3)));
    assert!(
        err.contains("ckpt_00000003") && err.contains("digest mismatch"),
        "{err}"
    );
    // Resuming the run falls back to the newest good checkpoint, with a warning, and moves
    // the damaged one aside.
    let (_, err) = ok(clawrl(&["train", "--set", "run.max_iterations=4", "--resume"]).arg(&dir));
    assert!(
        err.contains("falling back") && err.contains("ckpt_00000002"),
        "{err}"
    );
    assert!(
        dir.join("checkpoints/ckpt_00000003.safetensors.corrupt")
            .exists()
    );
    assert_eq!(metrics_iterations(&dir), vec![1, 2, 3, 4]);
    // A damaged policy file is refused too.
    flip_byte_near_end(&dir.join("policy.safetensors"));
    let err =
        fails(clawrl(&["eval", "--episodes", "2", "--policy"]).arg(dir.join("policy.safetensors")));
    assert!(
        err.contains("policy.safetensors") && err.contains("corrupt"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// Stops `clawrl train` halfway through writing a checkpoint (a fault point in the test
/// build), kills it there, and checks that every checkpoint on disk is complete and the run
/// resumes from the last one.
#[test]
fn a_kill_in_the_middle_of_a_checkpoint_write_loses_nothing() {
    let dir = tmp("kill");
    train_cartpole(&dir, 2);
    let marker = dir.join("paused-here");
    let mut child = clawrl(&["train", "--set", "run.max_iterations=3", "--resume"])
        .arg(&dir)
        .env("CLAWRL_FAULT_PAUSE", "write_atomic.mid_write@ckpt_")
        .env("CLAWRL_FAULT_MARKER", &marker)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !marker.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "never reached the write"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The half-written file is a temporary; the checkpoints a reader sees are whole.
    let files: Vec<_> = std::fs::read_dir(dir.join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(files.iter().any(|f| f.contains(".tmp-")), "{files:?}");
    assert!(
        !files.contains(&"ckpt_00000003.safetensors".to_string()),
        "{files:?}"
    );
    let (_, err) = ok(clawrl(&["train", "--set", "run.max_iterations=3", "--resume"]).arg(&dir));
    assert!(
        err.contains("iteration 2") && !err.contains("falling back"),
        "{err}"
    );
    assert_eq!(metrics_iterations(&dir), vec![1, 2, 3]);
    std::fs::remove_dir_all(dir).ok();
}
