//! Where commands write by default and what a wrong path says: outputs under `runs/` (or next
//! to the run read), never the current directory or the shipped teacher's tracked folder; an
//! error names its path once, with the OS error once.
mod common;

use common::*;

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
