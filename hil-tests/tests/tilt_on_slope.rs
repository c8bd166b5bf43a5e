//! The runtime's tilt e-stop on a slope (issue 31), in the loop: it measures the body's tilt
//! against gravity (the board's IMU filter, `controller::tilt`), so standing on a 20 degree
//! floor, 20 degrees from upright, must not trip it (the limit is 50), and rolling over on that
//! floor still must.
use std::path::{Path, PathBuf};

use clawrl_firmware::safety::SafetyState;
use clawrl_hil_tests::line::{Clocking, Event};
use clawrl_hil_tests::scenario::{self, Kind, Outcome, Scenario, Setup};
use clawrl_runtime::controller::Phase;
use clawrl_sim::quadruped::TaskConfig;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The flat task on a 20 degree floor, facing uphill, friction 1.0 (the student stands there).
fn on_a_slope() -> TaskConfig {
    let o: Vec<String> = [
        "terrain.slope_probability=1.0",
        "terrain.slope_degrees=[20.0, 20.0]",
        "terrain.heading=uphill",
        "randomization.friction=[1.0, 1.0]",
    ]
    .map(String::from)
    .to_vec();
    TaskConfig::load(repo().join("configs/task/quadruped_flat.toml"), &o).unwrap()
}

/// The runtime standing the robot up and holding its stand (the policy does not run before
/// `STAND_S`) on the slope, in lockstep, with `events` at their times from the start. The
/// flat student cannot stand on 20 degrees (it slides back and falls, rightly tripping the
/// e-stop): this is the runtime's tilt check, not a policy's balance.
fn stand(dir: &Path, events: Vec<(f64, Event)>) -> Outcome {
    // Its relative path to the robot description, made absolute for the copy.
    let cfg = std::fs::read_to_string(repo().join("configs/runtime/robot.toml"))
        .unwrap()
        .replace(
            "\"../../robots/",
            &format!("\"{}/robots/", repo().display()),
        );
    let held = cfg.replace("stand_s = 2.0", &format!("stand_s = {STAND_S:.1}"));
    assert_ne!(held, cfg, "robot.toml has no `stand_s = 2.0` to change");
    let runtime_config = dir.join("robot.toml");
    std::fs::write(&runtime_config, held).unwrap();
    let mut s = Scenario::new(
        Kind::Push,
        "slope-stand",
        "stand on a 20 degree slope",
        [0.0, 0.0, 0.0],
        0.5,
    );
    // Scenario times count from the policy's start: the stand's are before it.
    s.events = events.into_iter().map(|(t, e)| (t - STAND_S, e)).collect();
    let setup = Setup {
        bundle: repo().join("hil-tests/fixtures/student.clawrl"),
        seed: 1,
        clocking: Clocking::Lockstep,
        task: on_a_slope(),
        runtime_config,
        dir: dir.to_path_buf(),
        board: None,
        miswiring: Vec::new(),
    };
    scenario::run(&s, &setup).unwrap()
}

/// Seconds the runtime holds the stand.
const STAND_S: f64 = 5.0;

/// Whether the board latched its e-stop before the policy took over.
fn e_stop_while_standing(o: &Outcome) -> bool {
    o.trace
        .samples
        .iter()
        .any(|s| s.t < o.policy_from_s && s.state == SafetyState::EStop)
}

#[test]
fn standing_on_a_20_degree_slope_does_not_trip_the_tilt_e_stop() {
    let dir = tempfile::tempdir().unwrap();
    let o = stand(dir.path(), Vec::new());
    assert!(!e_stop_while_standing(&o), "{:?}", o.summary.phases);
    assert!(
        o.summary.phases.contains(&Phase::Running),
        "{:?}",
        o.summary.phases
    );
    let standing = o.trace.samples.iter().filter(|s| s.t < o.policy_from_s);
    assert!(standing.clone().count() > 200, "under 4 s of stand");
    assert!(
        !standing.clone().any(|s| s.fallen),
        "it fell while standing"
    );
}

#[test]
fn rolling_over_on_the_slope_trips_it() {
    let dir = tempfile::tempdir().unwrap();
    // A 3 m/s shove (world y) 3 s into the stand: the robot goes over, past 50 degrees.
    let o = stand(dir.path(), vec![(3.0, Event::Push([0.0, 3.0]))]);
    assert!(e_stop_while_standing(&o), "{:?}", o.summary.phases);
    assert!(
        o.summary.phases.contains(&Phase::EStop),
        "{:?}",
        o.summary.phases
    );
    assert!(
        !o.summary.phases.contains(&Phase::Running),
        "{:?}",
        o.summary.phases
    );
}
