//! The HIL scenarios in lockstep: the runtime's `run`, the firmware core and MuJoCo, each
//! scenario with its pass condition.
#[path = "../../runtime/tests/common/mod.rs"]
mod common;

use clawrl_firmware::SafetyState;
use clawrl_hil_tests::bridge::Clocking;
use clawrl_hil_tests::scenario::{self, Outcome, Setup};
use clawrl_runtime::controller::Phase;
use clawrl_sim::quadruped::TaskConfig;

fn setup(dir: &std::path::Path, bundle: std::path::PathBuf) -> Setup {
    Setup {
        bundle,
        seed: 3,
        clocking: Clocking::Lockstep,
        task: TaskConfig::flat().unwrap(),
        runtime_config: common::repo().join("configs/runtime/robot.toml"),
        dir: dir.to_path_buf(),
    }
}

fn run(name: &str) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let bundle = common::quadruped_bundle(dir.path(), 1);
    let o = scenario::run(
        &scenario::by_name(name).unwrap(),
        &setup(dir.path(), bundle),
    )
    .unwrap();
    eprintln!(
        "{name}: {:.1} s simulated in {:.2} s wall; {} periods ({} free-run); summary {:?}; faults {:?}; out of limit {} of {}",
        o.trace.seconds(),
        o.wall.as_secs_f64(),
        o.trace.periods,
        o.trace.free_run_periods,
        o.summary,
        o.trace.faults,
        o.trace.out_of_limit,
        o.trace.outputs_checked
    );
    o
}

#[test]
fn estop_smoke() {
    let o = run("estop");
    assert_eq!(o.trace.out_of_limit, 0);
    assert!(
        o.trace
            .samples
            .iter()
            .any(|s| s.state == SafetyState::EStop)
    );
    assert!(o.summary.phases.contains(&Phase::Running));
}
