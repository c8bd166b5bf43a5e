//! `clawrl-runtime check-wiring` against the virtual board on a pseudo-terminal (the firmware's
//! ServoModel plant, its joints mid-range): a description that gives a servo an ID the board
//! does not have names that servo; the shipped description is answered by every ID, and the
//! mid-range joints read as away from the pose, not as miswired.
mod common;

use clawrl_firmware::FirmwareConfig;
use clawrl_firmware::virtual_board::{ServoModel, VirtualBoard};
use clawrl_runtime::config::RuntimeConfig;
use clawrl_runtime::wiring::Pose;

fn config(dir: &std::path::Path, board: &VirtualBoard, description: &str) -> RuntimeConfig {
    let desc = dir.join("robot_description.toml");
    std::fs::write(&desc, description).unwrap();
    let text = common::shipped_config_text().replace(
        &format!(
            "{:?}",
            common::repo()
                .join("robots/claw_quadruped/robot.toml")
                .display()
                .to_string()
        ),
        &format!("{:?}", desc.display().to_string()),
    );
    let path = dir.join("robot.toml");
    std::fs::write(&path, text).unwrap();
    let sets = [
        format!("serial.port={:?}", board.path()),
        "serial.answer_timeout_ms=100".to_string(),
    ];
    RuntimeConfig::load(&path, &sets).unwrap()
}

fn shipped_description() -> String {
    std::fs::read_to_string(common::repo().join("robots/claw_quadruped/robot.toml")).unwrap()
}

#[test]
fn an_id_the_board_does_not_have_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let fw = FirmwareConfig::claw_foot();
    let board = VirtualBoard::spawn_on_pty(fw.clone(), ServoModel::new(&fw)).unwrap();
    // FL_knee described at ID 40: the board answers it at ID 3.
    let text = shipped_description().replacen("id = 3\n", "id = 40\n", 1);
    let cfg = config(dir.path(), &board, &text);
    let e = format!(
        "{:#}",
        clawrl_runtime::run::check_wiring(&cfg, Pose::Rest, None).unwrap_err()
    );
    assert!(e.contains("servo FL_knee (ID 40) does not answer"), "{e}");
}

#[test]
fn every_id_answers_and_mid_range_joints_are_away_from_the_pose() {
    let dir = tempfile::tempdir().unwrap();
    let fw = FirmwareConfig::claw_foot();
    let board = VirtualBoard::spawn_on_pty(fw.clone(), ServoModel::new(&fw)).unwrap();
    let cfg = config(dir.path(), &board, &shipped_description());
    let (table, ok) = clawrl_runtime::run::check_wiring(&cfg, Pose::Rest, None).unwrap();
    assert!(!ok, "{table}");
    assert_eq!(
        table.matches("| ok |").count(),
        4,
        "the hip abductions rest at 0\n{table}"
    );
    assert!(
        table.contains("12 servo(s) away from the pose and none miswired"),
        "{table}"
    );
}
