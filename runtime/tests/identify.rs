//! `clawrl-runtime identify` says what it will move before it moves anything, and refuses to
//! run without a telemetry log to write its measurements to.
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn identify(extra: &[&str]) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let slots = format!(
        "install.root={:?}",
        dir.path().join("slots").display().to_string()
    );
    let o = Command::new(env!("CARGO_BIN_EXE_clawrl-runtime"))
        .args(["identify", "--config"])
        .arg(repo().join("configs/runtime/robot.toml"))
        .arg("--bundle")
        .arg(repo().join("hil-tests/fixtures/student.clawrl"))
        .args(["--set", &slots])
        .args(extra)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_dry_run_names_every_group_its_servos_and_their_range_and_moves_nothing() {
    let (ok, out, err) = identify(&["--dry-run"]);
    assert!(ok, "{err}");
    assert!(out.contains("22 s of excitation"), "{out}");
    assert!(out.contains("on a stand with its legs free"), "{out}");
    for g in ["hip_abd", "hip_pitch", "knee", "claw"] {
        assert!(out.contains(g), "{g} missing: {out}");
    }
    assert!(out.contains("FL_knee, FR_knee, RL_knee, RR_knee"), "{out}");
    assert!(out.contains("goals -1.70 to -1.30 rad"), "{out}");
    // Nothing was opened: no board line in the output.
    assert!(!err.contains("board on"), "{err}");
}

#[test]
fn without_telemetry_it_refuses_before_it_connects() {
    let (ok, _, err) = identify(&["--set", "telemetry.dir=\"\""]);
    assert!(!ok);
    assert!(err.contains("set telemetry.dir"), "{err}");
}
