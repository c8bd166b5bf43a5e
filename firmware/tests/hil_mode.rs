//! HIL mode on a real board (`board::HIL_MODE`): the simulator writes the sensors, the outputs
//! stay off and the pulses they would put out read back, a silent simulator is a dead sensor.
//! Driven through the firmware's real loop with the fake hardware of `common`.

mod common;

use clawrl_firmware::{FirmwareConfig, SafetyState};
use clawrl_protocol::table::{board, servo};
use clawrl_protocol::units::{rad_to_ticks, ticks_to_rad};
use clawrl_protocol::{Command, ErrorCode};
use common::Rig;

const BOARD: u8 = 100;

/// The HIL Sensors block: servo positions (rad), every current 120 mA, this gyro and
/// accelerometer, 7.4 V.
fn block(positions: impl Fn(usize) -> f32, gyro: [f32; 3], accel: [f32; 3]) -> Vec<u8> {
    let mut b = Vec::new();
    for i in 0..16 {
        b.extend_from_slice(&((positions(i) * 1e4).round() as i16).to_le_bytes());
        b.extend_from_slice(&120i16.to_le_bytes());
    }
    for g in gyro {
        b.extend_from_slice(&((g * 1e3).round() as i16).to_le_bytes());
    }
    for a in accel {
        b.extend_from_slice(&((a * 1e2).round() as i16).to_le_bytes());
    }
    b.extend_from_slice(&7400u16.to_le_bytes());
    assert_eq!(b.len(), board::HIL_SENSORS_LEN as usize);
    b
}

/// Mid-range on every joint, shifted by `offset` rad: not where the board's own sensors are.
fn simulated(cfg: &FirmwareConfig, offset: f32) -> impl Fn(usize) -> f32 + '_ {
    move |i| 0.5 * (cfg.servos[i].min_rad + cfg.servos[i].max_rad) + offset
}

fn write_block(rig: &mut Rig, b: &[u8]) {
    assert_eq!(rig.write(BOARD, board::HIL_SENSORS, b), 0);
}

fn u16_at(data: &[u8], k: usize) -> u16 {
    u16::from_le_bytes([data[k], data[k + 1]])
}

/// The pulses HIL Outputs reads back (µs) and its tick count.
fn hil_outputs(rig: &mut Rig) -> (u32, [f32; 16]) {
    let (_, err, d) = rig.read(BOARD, board::HIL_OUTPUTS, board::HIL_OUTPUTS_LEN);
    assert_eq!(err, 0);
    let tick = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
    (
        tick,
        std::array::from_fn(|i| u16_at(&d, 4 + 2 * i) as f32 / 10.0),
    )
}

fn into_hil(rig: &mut Rig, b: &[u8]) {
    write_block(rig, b);
    assert_eq!(rig.write(BOARD, board::HIL_MODE, &[1]), 0);
}

#[test]
fn hil_mode_needs_an_idle_board_and_fresh_simulator_values() {
    let cfg = FirmwareConfig::claw_foot();
    let mut rig = Rig::new(cfg.clone());
    rig.advance_ms(5);
    // Nothing written yet: there is nothing to run on.
    assert_eq!(
        rig.write(BOARD, board::HIL_MODE, &[1]),
        ErrorCode::ResultFail as u8
    );
    let b = block(simulated(&cfg, 0.1), [0.0; 3], [0.0, 0.0, 9.81]);
    write_block(&mut rig, &b);
    assert_eq!(
        rig.write(BOARD, board::HIL_MODE, &[2]),
        ErrorCode::DataRange as u8
    );
    // Written too long ago.
    rig.advance_ms(board::HIL_STALE_MS as u32 + 5);
    assert_eq!(
        rig.write(BOARD, board::HIL_MODE, &[1]),
        ErrorCode::ResultFail as u8
    );
    into_hil(&mut rig, &b);
    let (_, err, d) = rig.read(BOARD, board::HIL_SIMULATED, 2);
    assert_eq!((err, d), (0, vec![1, 1]), "HIL Simulated, HIL Mode");
    // Not while the servos are driven.
    assert_eq!(
        rig.write(BOARD, board::SAFETY_COMMAND, &[board::command::ENABLE]),
        0
    );
    assert_eq!(
        rig.write(BOARD, board::HIL_MODE, &[0]),
        ErrorCode::ResultFail as u8
    );
    assert!(rig.fw.controller().hil_mode());
    // The block is written whole or not at all.
    assert_eq!(
        rig.write(BOARD, board::HIL_SENSORS, &b[..10]),
        ErrorCode::DataLength as u8
    );
    // HIL Outputs is the board's to write.
    assert_eq!(
        rig.write(BOARD, board::HIL_OUTPUTS, &[0; 36]),
        ErrorCode::Access as u8
    );
}

#[test]
fn in_hil_mode_the_simulator_is_the_sensor_and_no_output_is_driven() {
    let cfg = FirmwareConfig::claw_foot();
    let mut rig = Rig::new(cfg.clone());
    rig.advance_ms(5);
    let sim = simulated(&cfg, 0.1);
    let b = block(&sim, [0.5, -0.25, 0.125], [-1.2, 0.45, 9.81]);
    into_hil(&mut rig, &b);
    // The block reads back as written.
    let (_, _, d) = rig.read(BOARD, board::HIL_SENSORS, board::HIL_SENSORS_LEN);
    assert_eq!(d, b);
    assert_eq!(
        rig.write(BOARD, board::SAFETY_COMMAND, &[board::command::ENABLE]),
        0
    );
    // Servo 1 is asked 0.2 rad past where the simulator has it.
    let goal = sim(0) + 0.2;
    assert_eq!(
        rig.write(1, servo::GOAL_POSITION, &rad_to_ticks(goal).to_le_bytes()),
        0
    );
    for _ in 0..200 {
        write_block(&mut rig, &b);
        rig.advance_ms(1);
    }
    assert_eq!(rig.fw.controller().state(), SafetyState::Enabled);
    // Nothing reaches the board's own outputs.
    assert_eq!(rig.pulses(), [0; 16]);
    // What would have: servo 1 at its goal, the others holding the simulator's positions.
    let (tick, pulses) = hil_outputs(&mut rig);
    assert!(tick > 200, "tick {tick}");
    // The goal as the wire carries it (whole ticks of 1.5 mrad), the pulse to 0.1 us.
    let goal = ticks_to_rad(rad_to_ticks(goal));
    let want = cfg.servos[0].calibration.pulse_us(goal);
    assert!((pulses[0] - want).abs() < 0.11, "{} vs {want}", pulses[0]);
    for (i, p) in pulses.iter().enumerate().skip(1) {
        let want = cfg.servos[i].calibration.pulse_us(sim(i));
        assert!((p - want).abs() < 0.2, "servo {i}: {p} vs {want}");
    }
    // The robot state is the simulator's: present position and gyro.
    let (_, _, s) = rig.read(BOARD, board::ROBOT_STATE, board::ROBOT_STATE_LEN);
    let at = |a: u16| (a - board::ROBOT_STATE) as usize;
    let i16_at = |k: usize| i16::from_le_bytes([s[k], s[k + 1]]);
    let gyro: Vec<i16> = (0..3).map(|k| i16_at(at(board::GYRO) + 2 * k)).collect();
    assert_eq!(gyro, [500, -250, 125]);
    let accel: Vec<i16> = (0..3).map(|k| i16_at(at(board::ACCEL) + 2 * k)).collect();
    assert_eq!(accel, [-120, 45, 981]);
    let (_, _, v) = rig.read(BOARD, board::SUPPLY_MV, 2);
    assert_eq!(u16_at(&v, 0), 7400);
    let pos = i16::from_le_bytes([s[at(board::SERVO_MIRROR)], s[at(board::SERVO_MIRROR) + 1]]);
    assert_eq!(pos as i32, rad_to_ticks(sim(0)));
}

#[test]
fn a_simulator_that_goes_silent_is_a_dead_sensor() {
    let cfg = FirmwareConfig::claw_foot();
    let mut rig = Rig::new(cfg.clone());
    rig.advance_ms(5);
    let b = block(simulated(&cfg, 0.0), [0.0; 3], [0.0, 0.0, 9.81]);
    into_hil(&mut rig, &b);
    assert_eq!(
        rig.write(BOARD, board::SAFETY_COMMAND, &[board::command::ENABLE]),
        0
    );
    // Well within the staleness limit, written every 40 ms: still running.
    for _ in 0..10 {
        rig.advance_ms(40);
        write_block(&mut rig, &b);
    }
    assert_eq!(
        rig.fw.controller().state(),
        SafetyState::Enabled,
        "faults {:#x}",
        rig.fw.controller().faults()
    );
    // Then the simulator falls silent while the runtime goes on talking (a READ every 5 ms
    // keeps the board's watchdog fed): the IMU "stops answering" once the values are stale,
    // and its fault latches after the configured failed reads, as for a real IMU.
    let silent = |rig: &mut Rig, ms: u32| {
        for _ in 0..ms / 5 {
            rig.advance_ms(5);
            rig.read(BOARD, board::SAFETY_STATE, 1);
        }
    };
    silent(
        &mut rig,
        board::HIL_STALE_MS as u32 + cfg.imu_fail_ticks as u32 - 10,
    );
    assert_eq!(rig.fw.controller().state(), SafetyState::Enabled);
    silent(&mut rig, 20);
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
    assert_ne!(rig.fw.controller().faults() & board::fault::IMU, 0);
    assert_eq!(
        rig.pulses(),
        [0; 16],
        "still nothing on the board's outputs"
    );
}

#[test]
fn a_simulated_imu_that_does_not_answer_is_a_failed_imu() {
    let cfg = FirmwareConfig::claw_foot();
    let mut rig = Rig::new(cfg.clone());
    rig.advance_ms(5);
    let good = block(simulated(&cfg, 0.0), [0.0; 3], [0.0, 0.0, 9.81]);
    into_hil(&mut rig, &good);
    assert_eq!(
        rig.write(BOARD, board::SAFETY_COMMAND, &[board::command::ENABLE]),
        0
    );
    // The simulator goes on writing every 5 ms (fresh values, the servos still answer) but
    // marks the IMU silent: the board must count failed reads, not take the marker as an
    // acceleration of -327.68 m/s^2.
    let mut quiet = good.clone();
    let ax = (board::HIL_ACCEL - board::HIL_SENSORS) as usize;
    quiet[ax..ax + 2].copy_from_slice(&board::HIL_IMU_SILENT.to_le_bytes());
    // Returns the status of the last write (its alert bit is set once the board faults).
    let feed = |rig: &mut Rig, b: &[u8], ms: u32| {
        (0..ms / 5).fold(0, |_, _| {
            rig.advance_ms(5);
            rig.write(BOARD, board::HIL_SENSORS, b)
        })
    };
    assert_eq!(feed(&mut rig, &quiet, cfg.imu_fail_ticks as u32 - 10), 0);
    assert_eq!(
        rig.fw.controller().state(),
        SafetyState::Enabled,
        "faults {:#x}",
        rig.fw.controller().faults()
    );
    feed(&mut rig, &quiet, 20);
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
    assert_eq!(
        rig.fw.controller().faults() & board::fault::IMU,
        board::fault::IMU,
        "the IMU's fault, faults {:#x}",
        rig.fw.controller().faults()
    );
    assert_eq!(rig.pulses(), [0; 16], "nothing on the board's outputs");
}

#[test]
fn reboot_leaves_hil_mode() {
    let cfg = FirmwareConfig::claw_foot();
    let mut rig = Rig::new(cfg.clone());
    rig.advance_ms(5);
    into_hil(&mut rig, &block(simulated(&cfg, 0.0), [0.0; 3], [0.0; 3]));
    assert_eq!(rig.send(BOARD, Command::Reboot), vec![(BOARD, 0, vec![])]);
    rig.advance_ms(2);
    assert!(!rig.fw.controller().hil_mode());
    let (_, _, d) = rig.read(BOARD, board::HIL_MODE, 1);
    assert_eq!(d, vec![0]);
}

/// A board wired in another order (slot i on channel 15 - i): the HIL blocks stand in for the
/// wires, so a servo reads the HIL Sensors entry of its channel and its pulse reads back at its
/// channel's HIL Outputs entry.
#[test]
fn the_hil_blocks_are_per_channel() {
    let mut cfg = FirmwareConfig::claw_foot();
    for (i, s) in cfg.servos.iter_mut().enumerate() {
        s.channel = 15 - i as u8;
    }
    let mut rig = Rig::new(cfg.clone());
    rig.advance_ms(5);
    // Entry c holds the mid-range of the servo on channel c, FL_hip_abd's (channel 15) 0.25.
    let mid = |slot: usize| 0.5 * (cfg.servos[slot].min_rad + cfg.servos[slot].max_rad);
    let by_channel = |c: usize| if c == 15 { 0.25 } else { mid(15 - c) };
    let b = block(by_channel, [0.0; 3], [0.0, 0.0, 9.81]);
    into_hil(&mut rig, &b);
    assert_eq!(
        rig.write(BOARD, board::SAFETY_COMMAND, &[board::command::ENABLE]),
        0
    );
    // 200 ms: every held servo has slewed from its boot-time goal to where the simulator has it.
    for _ in 0..200 {
        write_block(&mut rig, &b);
        rig.advance_ms(1);
    }
    let (_, err, d) = rig.read(1, servo::PRESENT_POSITION, 4);
    assert_eq!(err, 0);
    let rad = ticks_to_rad(i32::from_le_bytes(d.try_into().unwrap()));
    assert!(
        (rad - 0.25).abs() < 2e-3,
        "ID 1 reads its channel's entry: {rad}"
    );
    // Held where it is: 0.25 rad on the DS3230 law, at channel 15's entry; RR_claw (slot 15)
    // at channel 0's.
    let (_, pulses) = hil_outputs(&mut rig);
    let want = cfg.servos[0].calibration.pulse_us(0.25);
    assert!(
        (pulses[15] - want).abs() < 0.2,
        "{} against {want}",
        pulses[15]
    );
    let rr_claw = cfg.servos[15].calibration.pulse_us(mid(15));
    assert!(
        (pulses[0] - rr_claw).abs() < 0.2,
        "{} against {rr_claw}",
        pulses[0]
    );
}
