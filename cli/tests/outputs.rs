//! Where commands write by default and what a wrong path says: outputs under `runs/` (or next
//! to the run read), never the current directory or the shipped teacher's tracked folder; an
//! error names its path once, with the OS error once.
mod common;

use std::path::Path;

use common::*;

/// The names at the top of `dir`, sorted.
fn top_level(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_missing_policy_is_named_once_with_the_os_error_once_and_a_hint() {
    let dir = tmp("missing-policy");
    let missing = dir.join("no_such_run");
    let path = missing.display().to_string();
    let out = dir.join("x.clawrl").display().to_string();
    for args in [
        &["eval", "--policy"][..],
        &["export", "--out", &out, "--policy"][..],
    ] {
        let err = fails(clawrl(args).arg(&missing).current_dir(&dir));
        // Before: "io error on P: No such file or directory (os error 2): No such file or
        // directory (os error 2)", the error's own text and its source printed again.
        assert_eq!(err.matches(&path).count(), 1, "{args:?}: {err}");
        assert_eq!(
            err.matches("No such file or directory").count(),
            1,
            "{args:?}: {err}"
        );
        assert!(
            err.contains("assets/pretrained/quadruped_flat_ppo"),
            "{args:?}: no hint to the shipped teacher: {err}"
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn evaluating_the_shipped_teacher_leaves_its_folder_and_the_current_directory_alone() {
    let shipped = repo().join("assets/pretrained/quadruped_flat_ppo");
    let before = snapshot(&shipped);
    let cwd = tmp("eval-shipped");
    let (out, _) = ok(clawrl(&[
        "eval",
        "--episodes",
        "1",
        "--num-envs",
        "1",
        "--set",
        "task.env.episode_seconds=0.5",
        "--policy",
    ])
    .arg(&shipped)
    .current_dir(&cwd));
    assert!(
        out.contains("runs/eval/quadruped_flat_ppo/eval.txt"),
        "{out}"
    );
    assert!(
        snapshot(&shipped) == before,
        "eval wrote into the tracked {}",
        shipped.display()
    );
    assert_eq!(top_level(&cwd), ["runs"]);
    let saved = cwd.join("runs/eval/quadruped_flat_ppo");
    for f in ["eval.txt", "eval.toml", "eval_episodes.csv"] {
        assert!(saved.join(f).is_file(), "{f} not in {}", saved.display());
    }
    std::fs::remove_dir_all(cwd).ok();
}

#[test]
fn plotting_the_shipped_teacher_draws_under_runs() {
    let shipped = repo().join("assets/pretrained/quadruped_flat_ppo");
    let before = snapshot(&shipped);
    let cwd = tmp("plot-shipped");
    // The shipped folder has no metrics.csv: a copy of a run with one stands in for it, placed
    // under an assets/pretrained/ of its own so the real tracked files are never at risk.
    let run = cwd.join("assets/pretrained/teacher");
    train_cartpole(&run, 2);
    std::fs::remove_file(run.join("curves.png")).ok();
    let (out, _) = ok(clawrl(&["plot", "--run"]).arg(&run).current_dir(&cwd));
    assert!(out.contains("runs/plot/teacher/curves.png"), "{out}");
    assert!(cwd.join("runs/plot/teacher/curves.png").is_file());
    assert!(
        !run.join("curves.png").exists(),
        "plot wrote into {}",
        run.display()
    );
    assert!(snapshot(&shipped) == before);
    std::fs::remove_dir_all(cwd).ok();
}
