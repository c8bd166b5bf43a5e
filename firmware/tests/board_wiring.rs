//! The MCU image's servo table, generated at build time from the robot description by
//! firmware/board/build.rs (its generator, wiring_gen.rs, run here on the host): for the
//! shipped description it is the shipped board's table, and a description the board cannot
//! drive is refused naming the servo.
#[path = "../board/wiring_gen.rs"]
mod wiring_gen;

use clawrl_firmware::{FirmwareConfig, ServoWiring};

fn shipped() -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join("robots/claw_quadruped/robot.toml")).unwrap()
}

fn wiring(entries: &[wiring_gen::Entry]) -> [ServoWiring; 16] {
    std::array::from_fn(|i| {
        let e = &entries[i];
        ServoWiring {
            id: e.id,
            channel: e.channel,
            reversed: e.reversed,
            trim_rad: e.trim_rad as f32,
            center_us: e.center_us as f32,
            us_per_rad: e.us_per_rad as f32,
            min_us: e.min_us as f32,
            max_us: e.max_us as f32,
            limits: e.limits.map(|[lo, hi]| [lo as f32, hi as f32]),
        }
    })
}

#[test]
fn the_shipped_description_generates_the_shipped_board() {
    let (robot, entries) = wiring_gen::entries(&shipped()).unwrap();
    assert_eq!(robot, "claw_quadruped");
    let built = FirmwareConfig::claw_foot()
        .with_wiring(&wiring(&entries))
        .unwrap();
    assert_eq!(built, FirmwareConfig::claw_foot());
    // FR_hip_abd and RR_hip_abd are the mirrored ones.
    let reversed: Vec<&str> = entries
        .iter()
        .filter(|e| e.reversed)
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(reversed, ["FR_hip_abd", "RR_hip_abd"]);
    let text = wiring_gen::render(&robot, "robots/claw_quadruped/robot.toml", &entries);
    assert_eq!(text.matches("clawrl_firmware::ServoWiring {").count(), 16);
    assert!(text.contains(
        "// RR_hip_abd\n    clawrl_firmware::ServoWiring { id: 10, channel: 9, reversed: true,"
    ));
}

#[test]
fn a_rewired_description_moves_ids_and_channels_and_narrows_limits() {
    let text = shipped()
        .replacen("id = 1\n", "id = 31\n", 1)
        // FL_hip_abd and RR_claw trade channels 0 and 15.
        .replacen("channel = 0,", "channel = X,", 1)
        .replacen("channel = 15,", "channel = 0,", 1)
        .replacen("channel = X,", "channel = 15,", 1)
        .replacen(
            "direction = 1\noffset_rad = 0.0\nrest = 1.4",
            "direction = -1\noffset_rad = 0.1\nlimits = [-1.0, 1.5]\nrest = 1.4",
            1,
        );
    let (_, entries) = wiring_gen::entries(&text).unwrap();
    let c = FirmwareConfig::claw_foot()
        .with_wiring(&wiring(&entries))
        .unwrap();
    assert_eq!((c.servos[0].id, c.servos[0].channel), (31, 15));
    assert_eq!(c.servos[15].channel, 0, "RR_claw took channel 0");
    let pitch = c.servos[1];
    assert!(pitch.calibration.reversed && pitch.calibration.trim_rad == 0.1);
    assert_eq!(
        (pitch.min_rad, pitch.max_rad),
        (-1.0, 1.5),
        "narrowed, inside [-1.2, 1.8]"
    );
}

#[test]
fn a_description_the_board_cannot_drive_is_refused_naming_the_servo() {
    let twice = shipped().replacen("id = 2\n", "id = 1\n", 1);
    let e = wiring_gen::entries(&twice).unwrap_err();
    assert_eq!(
        e,
        "servo \"FL_hip_pitch\": bus ID 1 is servo \"FL_hip_abd\"'s too"
    );
    let no_pwm = shipped().replacen("pwm = { channel = 2, model = \"ds3230\" }\n", "", 1);
    let e = wiring_gen::entries(&no_pwm).unwrap_err();
    assert!(e.contains("FL_knee") && e.contains("no `pwm`"), "{e}");
}
