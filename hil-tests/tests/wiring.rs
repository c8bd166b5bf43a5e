//! The wiring check in the loop (issue 41): the virtual board built from the robot's
//! description, the MuJoCo body wired other than described. `clawrl-runtime check-wiring` names
//! a servo mounted reversed and two servos on each other's channels, and `run` refuses to put
//! the torque on, naming the servo; the robot as described passes both.
use std::path::{Path, PathBuf};

use clawrl_hil_tests::scenario::{self, Miswiring, Setup};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Servo order: FL, FR, RL, RR legs (hip_abd, hip_pitch, knee), then the claws.
const FL_KNEE: usize = 2;
const FR_HIP_PITCH: usize = 4;
const FR_KNEE: usize = 5;

fn setup(dir: &Path, miswiring: Vec<Miswiring>) -> Setup {
    Setup {
        miswiring,
        ..Setup::lockstep(
            repo().join("hil-tests/fixtures/student.clawrl"),
            repo().join("configs/runtime/robot.toml"),
            dir,
        )
        .unwrap()
    }
}

fn check(miswiring: Vec<Miswiring>) -> (String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario::by_name("walk").unwrap();
    scenario::check_wiring(&s, &setup(dir.path(), miswiring)).unwrap()
}

#[test]
fn the_robot_as_described_passes_the_check() {
    let (table, ok) = check(Vec::new());
    assert!(ok, "{table}");
    assert!(
        table.contains("| 3 | FL_knee |") && table.contains("| ok |"),
        "{table}"
    );
}

#[test]
fn a_reversed_knee_is_named_and_run_keeps_the_torque_off() {
    let (table, ok) = check(vec![Miswiring::Reversed(FL_KNEE)]);
    assert!(!ok, "{table}");
    let row = table.lines().find(|l| l.contains("| FL_knee |")).unwrap();
    assert!(row.contains("reversed"), "{table}");
    assert!(table.contains("1 servo(s) not as described"), "{table}");
    // `run` on that board: refused before the torque goes on, naming the servo.
    let dir = tempfile::tempdir().unwrap();
    let s = scenario::by_name("walk").unwrap();
    let s = scenario::Scenario { seconds: 2.0, ..s };
    let e = scenario::run(&s, &setup(dir.path(), vec![Miswiring::Reversed(FL_KNEE)]))
        .map(|o| o.summary.phases)
        .unwrap_err();
    let e = format!("{e:#}");
    assert!(
        e.contains("servo FL_knee (ID 3) reads +1.5") && e.contains("mounted the other way round"),
        "{e}"
    );
}

#[test]
fn a_hip_and_a_knee_on_each_others_channels_are_named() {
    let (table, ok) = check(vec![Miswiring::Swapped(FR_HIP_PITCH, FR_KNEE)]);
    assert!(!ok, "{table}");
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.contains(name))
            .unwrap()
            .to_string()
    };
    assert!(
        row("| FR_hip_pitch |").contains("swapped with FR_knee (ID 6)"),
        "{table}"
    );
    assert!(
        row("| FR_knee |").contains("swapped with FR_hip_pitch (ID 5)"),
        "{table}"
    );
    assert!(table.contains("2 servo(s) not as described"), "{table}");
}
