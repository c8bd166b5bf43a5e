//! The firmware's safety behaviour through its real loop, with a fake clock, a fake serial port
//! and PWM channels whose duty cycle is read back: clamping, slew limiting, watchdog timing,
//! fault latching and clearing, e-stop.

mod common;

use clawrl_firmware::pwm::PulseCalibration;
use clawrl_firmware::{FirmwareConfig, SafeBehaviour, SafetyState};
use clawrl_protocol::command::{SyncRead, SyncWrite};
use clawrl_protocol::table::{board, servo};
use clawrl_protocol::units::rad_to_ticks;
use clawrl_protocol::{Command, ErrorCode};
use common::Rig;

const BOARD: u8 = 100;

fn expected_pulse(rad: f32) -> u16 {
    PulseCalibration::DS3230.pulse_us(rad).round() as u16
}

fn config_with_watchdog(ms: u16, behaviour: SafeBehaviour) -> FirmwareConfig {
    FirmwareConfig {
        watchdog_ms: ms,
        watchdog_behaviour: behaviour,
        ..FirmwareConfig::claw_foot()
    }
}

fn enable(rig: &mut Rig) {
    assert_eq!(
        rig.write(BOARD, board::SAFETY_COMMAND, &[board::command::ENABLE]),
        0
    );
    assert_eq!(rig.fw.controller().state(), SafetyState::Enabled);
}

fn sync_write_goals(rig: &mut Rig, goals: &[(u8, f32)]) {
    let mut raw = Vec::new();
    for &(id, rad) in goals {
        raw.push(id);
        raw.extend_from_slice(&rad_to_ticks(rad).to_le_bytes());
    }
    let answers = rig.send(
        0xFE,
        Command::SyncWrite(SyncWrite {
            address: servo::GOAL_POSITION,
            length: 4,
            raw: &raw,
        }),
    );
    assert!(answers.is_empty(), "SYNC WRITE is never answered");
}

#[test]
fn boots_idle_with_outputs_off() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    rig.advance_ms(5);
    assert_eq!(rig.fw.controller().state(), SafetyState::Idle);
    assert!((0..16).all(|i| rig.pulse(i) == 0));
}

#[test]
fn goals_beyond_the_limits_reach_only_the_limit() {
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Hold));
    enable(&mut rig);
    // Knee (ID 3) range is [-2.6, -0.6]; hip abduction (ID 1) is [-0.6, 0.6]; claw (ID 13) [0, 1.2].
    sync_write_goals(&mut rig, &[(3, 1.0), (1, -3.0), (13, 9.0)]);
    rig.advance_ms(800);
    assert_eq!(rig.pulse(2), expected_pulse(-0.6));
    assert_eq!(rig.pulse(0), expected_pulse(-0.6));
    assert_eq!(rig.pulse(12), expected_pulse(1.2));
    let (_, err, data) = rig.read(3, servo::GOAL_POSITION, 4);
    assert_eq!(err, 0);
    assert_eq!(
        i32::from_le_bytes(data.try_into().unwrap()),
        rad_to_ticks(-0.6)
    );
}

#[test]
fn soft_limits_narrow_but_never_widen() {
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Hold));
    // Knee: try to widen the max to +1 rad: refused with Data Limit.
    let err = rig.write(
        3,
        servo::MAX_POSITION_LIMIT,
        &rad_to_ticks(1.0).to_le_bytes(),
    );
    assert_eq!(err, ErrorCode::DataLimit as u8);
    assert_eq!(
        rig.write(
            3,
            servo::MAX_POSITION_LIMIT,
            &rad_to_ticks(-1.0).to_le_bytes()
        ),
        0
    );
    enable(&mut rig);
    // With torque on, limits are locked, as on X-series.
    let err = rig.write(
        3,
        servo::MAX_POSITION_LIMIT,
        &rad_to_ticks(-0.8).to_le_bytes(),
    );
    assert_eq!(err, ErrorCode::Access as u8);
    sync_write_goals(&mut rig, &[(3, 0.0)]);
    rig.advance_ms(500);
    let limit = clawrl_protocol::units::ticks_to_rad(rad_to_ticks(-1.0));
    assert_eq!(rig.pulse(2), expected_pulse(limit));
}

#[test]
fn the_output_moves_at_most_one_slew_step_per_tick() {
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Hold));
    enable(&mut rig);
    // Hip pitch (ID 2) sits at 0.3 rad; ask for 1.8 rad at once.
    rig.advance_ms(1);
    assert_eq!(rig.pulse(1), expected_pulse(0.3));
    sync_write_goals(&mut rig, &[(2, 1.8)]);
    let step_us = 8.0 * 0.001 * PulseCalibration::DS3230.us_per_rad;
    let mut last = rig.pulse(1);
    let mut ticks_to_reach = None;
    for tick in 1..=300 {
        rig.advance_ms(1);
        let now = rig.pulse(1);
        assert!(
            (now as f32 - last as f32).abs() <= step_us.ceil() + 1.0,
            "tick {tick}: {last} -> {now}"
        );
        if now == expected_pulse(1.8) && ticks_to_reach.is_none() {
            ticks_to_reach = Some(tick);
        }
        last = now;
    }
    // 1.5 rad at 8 rad/s = 187.5 ms.
    let ticks = ticks_to_reach.expect("never reached the goal");
    assert!((186..=190).contains(&ticks), "reached after {ticks} ticks");
}

#[test]
fn the_watchdog_trips_exactly_at_its_timeout_and_holds() {
    let mut rig = Rig::new(config_with_watchdog(100, SafeBehaviour::Hold));
    enable(&mut rig);
    sync_write_goals(&mut rig, &[(2, 0.5)]);
    rig.advance_ms(40);
    let _ = rig.send(BOARD, Command::Ping);
    let fed_at = rig.now_ms();
    rig.advance_ms(99);
    assert_eq!(
        rig.fw.controller().state(),
        SafetyState::Enabled,
        "tripped early"
    );
    rig.advance_ms(1);
    assert_eq!(rig.now_ms() - fed_at, 100.0);
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
    assert_eq!(rig.fw.controller().faults(), board::fault::WATCHDOG);
    // Hold: the output stays where it was even though the joint is pushed.
    let held = rig.pulse(1);
    assert_ne!(held, 0);
    rig.sensors.0.borrow_mut().servos[1].position_rad = -0.5;
    rig.advance_ms(50);
    assert_eq!(rig.pulse(1), held);
    // Goals are refused until the fault is cleared; traffic does not clear it.
    let err = rig.write(2, servo::GOAL_POSITION, &rad_to_ticks(1.0).to_le_bytes());
    assert_eq!(err & 0x7F, ErrorCode::ResultFail as u8);
    let (_, _, watchdog) = rig.read(2, servo::BUS_WATCHDOG, 1);
    assert_eq!(
        watchdog,
        vec![0xFF],
        "X-series reads -1 after a watchdog error"
    );
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
    // CLEAR goes to Idle (outputs off), never straight back to Enabled.
    assert_eq!(
        rig.write(BOARD, board::SAFETY_COMMAND, &[board::command::CLEAR]),
        0
    );
    rig.advance_ms(1);
    assert_eq!(rig.fw.controller().state(), SafetyState::Idle);
    assert_eq!(rig.pulse(1), 0);
    enable(&mut rig);
}

#[test]
fn limp_and_damp_watchdog_behaviours() {
    let mut rig = Rig::new(config_with_watchdog(100, SafeBehaviour::Hold));
    assert_eq!(
        rig.write(BOARD, board::SAFE_BEHAVIOUR, &[board::behaviour::LIMP]),
        0
    );
    enable(&mut rig);
    rig.advance_ms(100);
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
    assert!((0..16).all(|i| rig.pulse(i) == 0), "limp means no pulses");

    let mut rig = Rig::new(config_with_watchdog(100, SafeBehaviour::Damp));
    enable(&mut rig);
    rig.advance_ms(100);
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
    // Pushed from 0.3 to 1.3 rad, the commanded position follows with a 0.2 s lag.
    let start = rig.pulse(1);
    rig.sensors.0.borrow_mut().servos[1].position_rad = 1.3;
    rig.advance_ms(200);
    let after = rig.pulse(1);
    let moved = (after - start) as f32 / PulseCalibration::DS3230.us_per_rad;
    // 1 - e^-1 of the 1 rad push after one time constant.
    assert!((moved - 0.632).abs() < 0.03, "moved {moved} rad");
}

#[test]
fn the_watchdog_cannot_be_switched_off() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    assert_eq!(
        rig.write(BOARD, board::WATCHDOG_TIMEOUT_MS, &0u16.to_le_bytes()),
        ErrorCode::DataLimit as u8
    );
    assert_eq!(
        rig.write(BOARD, board::WATCHDOG_TIMEOUT_MS, &5000u16.to_le_bytes()),
        ErrorCode::DataLimit as u8
    );
    assert_eq!(
        rig.write(BOARD, board::WATCHDOG_TIMEOUT_MS, &250u16.to_le_bytes()),
        0
    );
    let (_, _, data) = rig.read(BOARD, board::WATCHDOG_TIMEOUT_MS, 2);
    assert_eq!(data, 250u16.to_le_bytes());
}

#[test]
fn over_temperature_latches_until_cleared() {
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Hold));
    enable(&mut rig);
    rig.advance_ms(5);
    rig.sensors.0.borrow_mut().servos[4].temperature_c = 80.0;
    rig.advance_ms(1);
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
    assert!(
        (0..16).all(|i| rig.pulse(i) == 0),
        "over-temperature goes limp"
    );
    // Cooling down does not release it.
    rig.sensors.0.borrow_mut().servos[4].temperature_c = 35.0;
    rig.advance_ms(10);
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
    let (_, err, hw) = rig.read(5, servo::HARDWARE_ERROR_STATUS, 1);
    assert_eq!(err, 0x80, "alert bit set");
    assert_eq!(hw[0], servo::hw_error::OVERHEATING);
    // Fault log: code = bit index of OVER_TEMPERATURE, servo ID 5, time 6 ms.
    let (_, _, log) = rig.read(BOARD, board::FAULT_LOG_COUNT, 1 + 6);
    assert_eq!(log[0], 1);
    assert_eq!(&log[1..3], &[1, 5]);
    assert_eq!(u32::from_le_bytes(log[3..7].try_into().unwrap()), 6);
    // The answer reflects the state after CLEAR: no alert any more.
    assert_eq!(
        rig.write(BOARD, board::SAFETY_COMMAND, &[board::command::CLEAR]),
        0
    );
    assert_eq!(rig.fw.controller().state(), SafetyState::Idle);
    assert_eq!(rig.fw.controller().faults(), 0);
}

#[test]
fn under_voltage_is_debounced() {
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Hold));
    enable(&mut rig);
    rig.sensors.0.borrow_mut().supply_mv = 6000;
    rig.advance_ms(49);
    assert_eq!(
        rig.fw.controller().state(),
        SafetyState::Enabled,
        "a 49 ms dip is tolerated"
    );
    rig.advance_ms(1);
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
    assert_eq!(rig.fw.controller().faults(), board::fault::UNDER_VOLTAGE);
}

#[test]
fn the_estop_latches_through_commands_and_reboot() {
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Hold));
    enable(&mut rig);
    // Answered with the alert bit: the board now has a latched cause.
    assert_eq!(
        rig.write(BOARD, board::SAFETY_COMMAND, &[board::command::ESTOP]),
        0x80
    );
    assert_eq!(rig.fw.controller().state(), SafetyState::EStop);
    assert_eq!(
        rig.write(BOARD, board::SAFETY_COMMAND, &[board::command::ENABLE]) & 0x7F,
        ErrorCode::ResultFail as u8
    );
    assert_eq!(
        rig.write(1, servo::TORQUE_ENABLE, &[1]) & 0x7F,
        ErrorCode::ResultFail as u8
    );
    let answers = rig.send(BOARD, Command::Reboot);
    assert_eq!(answers.len(), 1);
    assert_eq!(
        rig.fw.controller().state(),
        SafetyState::EStop,
        "reboot does not release an e-stop"
    );
    assert_eq!(
        rig.write(BOARD, board::SAFETY_COMMAND, &[board::command::CLEAR]),
        0
    );
    assert_eq!(rig.fw.controller().state(), SafetyState::Idle);
}

#[test]
fn injected_faults_latch_like_real_ones() {
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Hold));
    enable(&mut rig);
    assert_eq!(
        rig.write(BOARD, board::HIL_FAULT_INJECT, &[board::fault::IMU as u8]),
        0
    );
    rig.advance_ms(1);
    assert_eq!(rig.fw.controller().faults(), board::fault::IMU);
    let (_, _, state) = rig.read(BOARD, board::SAFETY_STATE, 1);
    assert_eq!(state, vec![board::state::FAULT]);
}

#[test]
fn torque_enable_on_one_servo_enables_the_board_and_only_that_servo() {
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Hold));
    assert_eq!(rig.write(2, servo::TORQUE_ENABLE, &[1]), 0);
    rig.advance_ms(1);
    assert_eq!(rig.fw.controller().state(), SafetyState::Enabled);
    assert_eq!(
        rig.pulse(1),
        expected_pulse(0.3),
        "starts where the joint is"
    );
    assert_eq!(rig.pulse(0), 0, "other servos stay limp");
}

#[test]
fn broadcast_ping_is_answered_by_every_device_in_id_order() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    let answers = rig.send(0xFE, Command::Ping);
    let ids: Vec<u8> = answers.iter().map(|a| a.0).collect();
    let mut expected: Vec<u8> = (1..=16).collect();
    expected.push(BOARD);
    assert_eq!(ids, expected);
    assert_eq!(answers[0].2, vec![0xA0, 0xC1, 1]);
    assert_eq!(answers[16].2, vec![0xB0, 0xC1, 1]);
}

#[test]
fn bad_requests_get_the_right_error() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    assert_eq!(
        rig.write(1, servo::PRESENT_POSITION, &[0, 0, 0, 0]),
        ErrorCode::Access as u8
    );
    assert_eq!(
        rig.write(1, servo::GOAL_POSITION + 1, &[0, 0]),
        ErrorCode::DataLength as u8
    );
    assert_eq!(
        rig.write(1, servo::TORQUE_ENABLE, &[7]),
        ErrorCode::DataRange as u8
    );
    assert_eq!(rig.read(1, 140, 20).1, ErrorCode::Access as u8);
    let answers = rig.send(1, Command::Action);
    assert_eq!(answers[0].1, ErrorCode::Instruction as u8);
    // Nothing answers for IDs that are not on this board.
    assert!(rig.send(42, Command::Ping).is_empty());
}

#[test]
fn fast_sync_read_answers_in_one_packet() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    let ids = [1u8, 2, 3];
    let answers = rig.send(
        0xFE,
        Command::FastSyncRead(SyncRead {
            address: servo::PRESENT_POSITION,
            length: 4,
            ids: &ids,
        }),
    );
    assert_eq!(answers.len(), 1);
    let (id, _, _) = &answers[0];
    assert_eq!(*id, 0xFE);
    // Reassemble the params (error byte first) and split them into shares.
    let mut params = vec![answers[0].1];
    params.extend_from_slice(&answers[0].2);
    let shares: Vec<_> = clawrl_protocol::command::fast_sync_entries(&params, 4).collect();
    assert_eq!(shares.iter().map(|s| s.id).collect::<Vec<_>>(), ids);
    let knee = i32::from_le_bytes(shares[2].data.try_into().unwrap());
    assert_eq!(knee, rad_to_ticks(-1.6));
}

#[test]
fn the_robot_state_comes_in_one_board_read() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    rig.advance_ms(2);
    let (_, err, data) = rig.read(BOARD, board::ROBOT_STATE, board::ROBOT_STATE_LEN);
    assert_eq!(err, 0);
    let at = |a: u16| (a - board::ROBOT_STATE) as usize;
    let accel_z = i16::from_le_bytes([data[at(board::ACCEL + 4)], data[at(board::ACCEL + 5)]]);
    assert_eq!(accel_z, 981);
    let knee = at(board::SERVO_MIRROR + 2 * board::SERVO_MIRROR_ENTRY_LEN);
    assert_eq!(
        i16::from_le_bytes([data[knee], data[knee + 1]]) as i32,
        rad_to_ticks(-1.6)
    );
}

#[test]
fn garbage_and_corrupt_packets_do_not_stop_the_next_answer() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    let mut buf = [0u8; 64];
    let n = Command::Ping.encode(5, &mut buf).unwrap();
    let mut bad = buf[..n].to_vec();
    bad[n - 1] ^= 0xFF;
    let mut stream = vec![0xFF, 0xFF, 0xFD, 0x00, 0x07, 0xFF, 0x7F, 0x13, 0x37];
    stream.extend_from_slice(&bad);
    stream.extend_from_slice(&buf[..n]);
    let answers = rig.send_raw(&stream);
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].0, 5);
}

#[test]
fn an_oversized_fast_sync_read_is_dropped_without_work() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    let ids: Vec<u8> = (1..=16).collect();
    let answers = rig.send(
        0xFE,
        Command::FastSyncRead(SyncRead {
            address: 0,
            length: 60_000,
            ids: &ids,
        }),
    );
    assert!(answers.is_empty());
    // The link still works.
    assert_eq!(rig.send(1, Command::Ping).len(), 1);
}

#[test]
fn bulk_read_answers_each_entry_in_order() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    let mut raw = vec![13u8];
    raw.extend_from_slice(&servo::PRESENT_POSITION.to_le_bytes());
    raw.extend_from_slice(&4u16.to_le_bytes());
    raw.push(BOARD);
    raw.extend_from_slice(&board::SAFETY_STATE.to_le_bytes());
    raw.extend_from_slice(&1u16.to_le_bytes());
    let answers = rig.send(
        0xFE,
        Command::BulkRead(clawrl_protocol::command::BulkRead { raw: &raw }),
    );
    assert_eq!(answers.len(), 2);
    assert_eq!(
        (
            answers[0].0,
            i32::from_le_bytes(answers[0].2.clone().try_into().unwrap())
        ),
        (13, rad_to_ticks(0.6))
    );
    assert_eq!(
        (answers[1].0, answers[1].2.clone()),
        (BOARD, vec![board::state::IDLE])
    );
}
