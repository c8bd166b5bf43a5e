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

/// The shipped robot's description file (robots/claw_quadruped/robot.toml) says what the code's
/// constants say today: the same servos in the same order, limits, poses, bus IDs, mirrored
/// servos and action scales. While the stages move from the constants to the description one
/// by one, this keeps the two the same robot.
#[test]
fn the_shipped_description_is_the_robot_the_code_describes() {
    use clawrl_robot::description::JointKind;
    use clawrl_robot::quadruped;
    let loaded =
        clawrl_sim::description::load(clawrl_sim::description::CLAW_QUADRUPED.as_ref()).unwrap();
    let d = &loaded.description;
    assert_eq!(d.name, quadruped::MODEL_NAME);
    assert_eq!(d.servo_names(), quadruped::servo_names());
    assert_eq!(d.limits(), quadruped::JOINT_LIMITS.to_vec());
    assert_eq!(d.stand_pose(), quadruped::DEFAULT_POSE.to_vec());
    assert_eq!(d.rest_pose(), quadruped::REST_POSE.to_vec());
    let firmware = FirmwareConfig::claw_foot();
    for (i, s) in d.servos.iter().enumerate() {
        assert_eq!(s.id, ids::servo_id(i), "{}", s.name);
        assert_eq!(
            s.kind == JointKind::Claw,
            quadruped::is_claw(i),
            "{}",
            s.name
        );
        let cal = &firmware.servos[i].calibration;
        assert_eq!(s.direction == -1, cal.reversed, "{}: direction", s.name);
        assert_eq!(s.offset_rad as f32, cal.trim_rad, "{}: offset", s.name);
        let pwm = s.pwm.as_ref().expect("every servo is on the PWM board");
        assert_eq!(usize::from(pwm.channel), i, "{}", s.name);
        let m = &d.pwm_models[&pwm.model];
        assert_eq!(
            (
                m.center_us as f32,
                m.us_per_rad as f32,
                m.min_us as f32,
                m.max_us as f32
            ),
            (cal.center_us, cal.us_per_rad, cal.min_us, cal.max_us),
            "{}: pulse law",
            s.name
        );
        let model = &d.servo_models[&s.model];
        assert!(model.max_speed_rad_s >= f64::from(firmware.max_slew_rad_per_s));
    }
    let task = TaskConfig::flat().unwrap();
    assert_eq!(d.action_scale[&JointKind::Leg], task.env.action_scale);
    assert_eq!(d.action_scale[&JointKind::Claw], task.env.claw_action_scale);
    assert_eq!(d.feet.len(), quadruped::NUM_FEET);
    assert!(loaded.mjcf.ends_with("sim/models/quadruped.xml"));
}

/// The board built from the shipped description is the board the MCU image is built with
/// (`FirmwareConfig::claw_foot`), and the body's wiring from the description is the board's.
#[test]
fn the_board_from_the_shipped_description_is_the_shipped_board() {
    let robot = clawrl_sim::description::load(std::path::Path::new(
        clawrl_sim::description::CLAW_QUADRUPED,
    ))
    .unwrap();
    let from_file = FirmwareConfig::from_description(&robot.description).unwrap();
    let shipped = FirmwareConfig::claw_foot();
    for (i, (a, b)) in from_file.servos.iter().zip(&shipped.servos).enumerate() {
        let name = &robot.description.servos[i].name;
        assert_eq!((a.id, a.channel), (b.id, b.channel), "{name}");
        assert_eq!((a.min_rad, a.max_rad), (b.min_rad, b.max_rad), "{name}");
        assert_eq!(a.calibration.reversed, b.calibration.reversed, "{name}");
        let (ca, cb) = (a.calibration, b.calibration);
        assert!((ca.us_per_rad - cb.us_per_rad).abs() < 1e-3, "{name}");
        assert_eq!(
            (ca.center_us, ca.trim_rad),
            (cb.center_us, cb.trim_rad),
            "{name}"
        );
        assert_eq!((ca.min_us, ca.max_us), (cb.min_us, cb.max_us), "{name}");
    }
    let names = clawrl_sim::quadruped::servo_names();
    let described = clawrl_hil_tests::body::Wiring::described(&robot.description, &names).unwrap();
    // The same wiring, the pulse law to within f32 rounding: each channel's pulse turns the
    // same joint to the same angle.
    let of_board = clawrl_hil_tests::body::Wiring::of_board(&shipped);
    for ch in 0..NUM_SERVOS {
        let (a, b) = (described.target(ch, 1700.0), of_board.target(ch, 1700.0));
        assert_eq!(a.map(|x| x.0), b.map(|x| x.0), "channel {ch}");
        assert!((a.unwrap().1 - b.unwrap().1).abs() < 1e-6, "channel {ch}");
    }
}

/// A description with two IDs the same, or a servo without a PWM channel, is refused by
/// name.
#[test]
fn a_board_from_a_bad_description_names_the_servo() {
    let robot = clawrl_sim::description::load(std::path::Path::new(
        clawrl_sim::description::CLAW_QUADRUPED,
    ))
    .unwrap();
    let mut d = robot.description.clone();
    d.servos[5].id = d.servos[2].id;
    let e = FirmwareConfig::from_description(&d).unwrap_err();
    assert!(
        e.contains("FR_knee") && e.contains("bus ID 3") && e.contains("FL_knee"),
        "{e}"
    );
    let mut d = robot.description.clone();
    d.servos[7].pwm = None;
    let e = FirmwareConfig::from_description(&d).unwrap_err();
    assert!(e.contains("RL_hip_pitch") && e.contains("pwm"), "{e}");
    let mut d = robot.description;
    d.servos[1].pwm.as_mut().unwrap().channel = 0;
    let e = FirmwareConfig::from_description(&d).unwrap_err();
    assert!(e.contains("FL_hip_pitch") && e.contains("channel 0"), "{e}");
}

/// pup12's board: 12 servos in the first slots with the description's IDs, channels and its
/// own limits (the knee's -0.5 rad stop is wider than the claw robot's -0.6: replaced, not
/// narrowed to the shipped board's), and the 4 spare slots parked on IDs and channels no servo
/// has, with a zero-width limit. Robot IDs that take the shipped board's spare IDs (13-16)
/// push the spares elsewhere instead of clashing.
#[test]
fn a_board_of_fewer_servos_parks_its_spare_slots() {
    let robot = clawrl_sim::description::load(std::path::Path::new("robots/pup12/robot.toml"))
        .unwrap()
        .description;
    let board = FirmwareConfig::from_description(&robot).unwrap();
    for (slot, s) in robot.servos.iter().enumerate() {
        let b = &board.servos[slot];
        let channel = s.pwm.as_ref().unwrap().channel;
        assert_eq!((b.id, b.channel), (s.id, channel), "{}", s.name);
        let limits = [f64::from(b.min_rad), f64::from(b.max_rad)];
        assert!(
            (limits[0] - s.limits[0]).abs() < 1e-6 && (limits[1] - s.limits[1]).abs() < 1e-6,
            "{}: board {limits:?}, description {:?}",
            s.name,
            s.limits
        );
    }
    let knee = robot.servo("FL_knee").unwrap();
    assert_eq!(knee.limits[1], -0.5, "pup12's knee stop (pup12.xml)");
    let spare = &board.servos[robot.servos.len()..];
    assert_eq!(spare.len(), 4);
    for s in spare {
        assert_eq!((s.min_rad, s.max_rad), (0.0, 0.0));
    }
    board.check_ids().unwrap();

    let mut shifted = robot.clone();
    for s in &mut shifted.servos {
        s.id += 4; // IDs 5-16: the shipped board's spares 13-16 are taken
    }
    let board = FirmwareConfig::from_description(&shifted).unwrap();
    board.check_ids().unwrap();
    let ids: Vec<u8> = board.servos.iter().map(|s| s.id).collect();
    assert_eq!(&ids[12..], &[1, 2, 3, 4], "spares on the free IDs");
}
