//! The simulated robot and the firmware describe the same servos.
use clawrl_firmware::config::FirmwareConfig;
use clawrl_hil_tests::servo_map;
use clawrl_protocol::units::ids;
use clawrl_sim::quadruped::{NUM_SERVOS, Robot, TaskConfig};

#[test]
fn sim_and_firmware_agree_on_servos_ids_and_limits() {
    let robot = Robot::load(&TaskConfig::flat().unwrap()).unwrap();
    let firmware = FirmwareConfig::claw_foot();
    assert_eq!(NUM_SERVOS, ids::SERVO_COUNT);
    let map = servo_map(&robot, &firmware);
    assert_eq!(map.len(), NUM_SERVOS);
    for (i, s) in map.iter().enumerate() {
        assert_eq!(ids::servo_index(s.dynamixel_id), Some(i), "{}", s.name);
        // The firmware must never allow what the model forbids: its limits lie inside the
        // model's joint range (equal today).
        let [lo, hi] = s.sim_range;
        let [flo, fhi] = s.firmware_range;
        assert!(
            f64::from(flo) >= lo - 1e-6 && f64::from(fhi) <= hi + 1e-6,
            "{}: firmware [{flo}, {fhi}] vs model [{lo}, {hi}]",
            s.name
        );
        assert!(
            (f64::from(flo) - lo).abs() < 1e-6 && (f64::from(fhi) - hi).abs() < 1e-6,
            "{} limits differ",
            s.name
        );
    }
    // Claws are the last four servos and the IDs the protocol reserves for them.
    assert!(
        map[12..]
            .iter()
            .all(|s| s.name.ends_with("_claw") && s.dynamixel_id >= ids::FIRST_CLAW)
    );
}

#[test]
fn the_default_pose_is_inside_every_firmware_limit() {
    let robot = Robot::load(&TaskConfig::flat().unwrap()).unwrap();
    let firmware = FirmwareConfig::claw_foot();
    for (i, q) in robot.default_pose.iter().enumerate() {
        let s = &firmware.servos[i];
        assert!(
            *q as f32 >= s.min_rad && *q as f32 <= s.max_rad,
            "servo {i}: default {q} outside firmware limits"
        );
    }
}
