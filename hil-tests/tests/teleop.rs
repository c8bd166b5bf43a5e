//! Issue 42's teleop scenario: a scripted drive streamed over a real UDP socket into the
//! runtime's network source, in lockstep with MuJoCo behind the virtual board, then the stream
//! cut. pup12's student passes every bar; the claw-foot student's safety path passes too, but
//! it does not walk backwards or sideways from a stand (BENCHMARKS.md, "The teleop scenario"),
//! so its tracking is asserted only where it drives forward and turns.
use std::path::{Path, PathBuf};

use clawrl_hil_tests::line::Clocking;
use clawrl_hil_tests::scenario::{self, Setup};
use clawrl_sim::quadruped::TaskConfig;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn setup(bundle: &str, task: TaskConfig, runtime: &str, dir: &Path) -> Setup {
    Setup {
        bundle: repo().join(bundle),
        seed: 1,
        clocking: Clocking::Lockstep,
        task,
        runtime_config: repo().join(runtime),
        dir: dir.to_path_buf(),
        board: None,
        miswiring: Vec::new(),
    }
}

fn held(checks: &[scenario::Check], starts: &str) -> bool {
    let c: Vec<_> = checks
        .iter()
        .filter(|c| c.what.starts_with(starts))
        .collect();
    assert_eq!(c.len(), 1, "one check starting {starts:?}: {checks:?}");
    c[0].held
}

#[test]
fn pup12_is_driven_over_udp_and_stands_then_stops_when_the_stream_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let task = TaskConfig::load(repo().join("configs/task/pup12_flat.toml"), &[]).unwrap();
    let s = setup(
        "hil-tests/fixtures/pup12_student.clawrl",
        task,
        "configs/runtime/pup12.toml",
        dir.path(),
    );
    let teleop = scenario::by_name("teleop").unwrap();
    // With the pure simulation of the same drive: each segment within the walk's allowance.
    let (o, _, checks) = scenario::run_and_check(&teleop, &s).unwrap();
    let against_sim = (checks.iter())
        .filter(|c| c.what.contains("against the pure simulation"))
        .count();
    assert_eq!(against_sim, 4, "{checks:#?}");
    assert!(scenario::verdict(&checks), "{checks:#?}");
    let f = scenario::teleop_figures(&o);
    // In lockstep a datagram sent during a body period reaches the next control cycle.
    assert_eq!(f.command_latency_periods, Some(1), "{f:?}");
    assert!(f.zero_after_cut_s.unwrap() <= 0.5, "{f:?}");
}

#[test]
fn the_claw_robots_safety_path_holds_under_a_live_drive() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup(
        "hil-tests/fixtures/student.clawrl",
        TaskConfig::flat().unwrap(),
        "configs/runtime/robot.toml",
        dir.path(),
    );
    let o = scenario::run(&scenario::by_name("teleop").unwrap(), &s).unwrap();
    let c = scenario::checks(&o);
    for starts in [
        "no servo output outside",
        "the runtime ended switched off",
        "the robot did not fall",
        "0-4 s, command (0.30",
        "4-8 s, command (0.00, 0.00, 0.50)",
        "the cut stream stood the robot",
        "then the stop sequence",
    ] {
        assert!(held(&c, starts), "{starts}: {c:#?}");
    }
}
