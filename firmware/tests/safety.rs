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
    // The board's watchdog is not a servo's Bus Watchdog (tests/bus_watchdog.rs): that stays
    // off.
    let (_, _, watchdog) = rig.read(2, servo::BUS_WATCHDOG, 1);
    assert_eq!(watchdog, vec![0]);
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

// ---- Pins of issue 13: each test below fails under a deliberate bug in the safety path. ----

const RESULT_FAIL_ALERT: u8 = ErrorCode::ResultFail as u8 | 0x80;

fn pulse_of(config: &FirmwareConfig, i: usize, rad: f32) -> u16 {
    config.servos[i].calibration.pulse_us(rad).round() as u16
}

fn command(rig: &mut Rig, cmd: u8) -> u8 {
    rig.write(BOARD, board::SAFETY_COMMAND, &[cmd])
}

/// Latches `flag` the way the real sensor would (the watchdog by silence, the others by their
/// sensors), from Enabled.
fn trip(rig: &mut Rig, flag: u16) {
    match flag {
        board::fault::WATCHDOG => rig.advance_ms(2000),
        board::fault::OVER_TEMPERATURE => {
            rig.sensors.0.borrow_mut().servos[4].temperature_c = 90.0;
            rig.advance_ms(1);
        }
        board::fault::UNDER_VOLTAGE => {
            rig.sensors.0.borrow_mut().supply_mv = 5000;
            rig.advance_ms(50);
        }
        board::fault::IMU => {
            rig.sensors.0.borrow_mut().imu = None;
            rig.advance_ms(100);
        }
        board::fault::FEEDBACK => {
            rig.set_position(6, f32::NAN);
            rig.advance_ms(10);
        }
        _ => unreachable!(),
    }
    assert_eq!(rig.fw.controller().faults(), flag);
}

const SENSOR_FAULTS: [u16; 5] = [
    board::fault::WATCHDOG,
    board::fault::OVER_TEMPERATURE,
    board::fault::UNDER_VOLTAGE,
    board::fault::IMU,
    board::fault::FEEDBACK,
];

#[test]
fn enable_and_torque_enable_are_refused_while_a_fault_is_latched() {
    for flag in SENSOR_FAULTS {
        let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Limp));
        enable(&mut rig);
        trip(&mut rig, flag);
        assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
        assert_eq!(
            command(&mut rig, board::command::ENABLE),
            RESULT_FAIL_ALERT,
            "ENABLE with fault {flag:#x}"
        );
        assert_eq!(
            rig.write(2, servo::TORQUE_ENABLE, &[1]) & 0x7F,
            ErrorCode::ResultFail as u8,
            "Torque Enable with fault {flag:#x}"
        );
        rig.advance_ms(20);
        assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
        assert_eq!(rig.pulses(), [0; 16], "fault {flag:#x}: outputs stay off");
        let (_, err, state) = rig.read(BOARD, board::SAFETY_STATE, 1);
        assert_eq!((err, state[0]), (0x80, board::state::FAULT));
    }
}

#[test]
fn the_estop_stops_outputs_from_following_their_goals() {
    for behaviour in [
        SafeBehaviour::Hold,
        SafeBehaviour::Damp,
        SafeBehaviour::Limp,
    ] {
        let config = FirmwareConfig {
            estop_behaviour: behaviour,
            ..config_with_watchdog(1000, SafeBehaviour::Hold)
        };
        let mut rig = Rig::new(config.clone());
        enable(&mut rig);
        // Hip pitch (index 1) sits at 0.3 rad; on its way to 1.8 rad when the e-stop comes.
        sync_write_goals(&mut rig, &[(2, 1.8)]);
        rig.advance_ms(20);
        let at_estop = rig.pulse(1);
        assert!(at_estop > pulse_of(&config, 1, 0.4), "{at_estop}");
        assert_eq!(command(&mut rig, board::command::ESTOP), 0x80);
        let mut seen = Vec::new();
        for _ in 0..100 {
            rig.advance_ms(1);
            seen.push(rig.pulse(1));
        }
        match behaviour {
            SafeBehaviour::Hold => assert!(seen.iter().all(|&p| p == at_estop), "{seen:?}"),
            SafeBehaviour::Damp => {
                // Falls back towards the measured 0.3 rad, never on towards the goal.
                assert!(seen.windows(2).all(|w| w[1] <= w[0]), "{seen:?}");
                assert!(seen[0] <= at_estop);
                let last = *seen.last().unwrap() as f32;
                let (from, to) = (at_estop as f32, pulse_of(&config, 1, 0.3) as f32);
                // After 0.1 s of a 0.2 s lag: 1 - e^-0.5 = 39 % of the way back.
                let frac = (from - last) / (from - to);
                assert!((frac - 0.39).abs() < 0.05, "{frac}");
            }
            SafeBehaviour::Limp => assert!(seen.iter().all(|&p| p == 0), "{seen:?}"),
        }
        // Goals written during the e-stop are refused and do not move anything.
        let err = rig.write(2, servo::GOAL_POSITION, &rad_to_ticks(1.8).to_le_bytes());
        assert_eq!(err, ErrorCode::ResultFail as u8);
        sync_write_goals(&mut rig, &[(2, 1.8), (1, 0.5)]);
        let before = rig.pulses();
        rig.advance_ms(50);
        if behaviour == SafeBehaviour::Hold {
            assert_eq!(rig.pulses(), before);
        }
        assert!(rig.pulse(1) <= at_estop);
        // Servo 1 was at its measured 0 rad: it stays there (or limp), never goes to 0.5 rad.
        assert!([0, pulse_of(&config, 0, 0.0)].contains(&rig.pulse(0)));
    }
}

#[test]
fn an_imu_that_stops_answering_trips_its_fault_after_100_ticks() {
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Hold));
    enable(&mut rig);
    let good = rig.sensors.0.borrow().imu;
    rig.sensors.0.borrow_mut().imu = None;
    rig.advance_ms(99);
    // One good read in between starts the count again.
    rig.sensors.0.borrow_mut().imu = good;
    rig.advance_ms(1);
    rig.sensors.0.borrow_mut().imu = None;
    rig.advance_ms(99);
    assert_eq!(rig.fw.controller().state(), SafetyState::Enabled);
    assert!(rig.pulses().iter().all(|&p| p != 0));
    let (_, err, status) = rig.read(BOARD, board::IMU_STATUS, 1);
    assert_eq!((err, status[0]), (0, 0));
    rig.advance_ms(1);
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
    assert_eq!(rig.fw.controller().faults(), board::fault::IMU);
    assert_eq!(rig.pulses(), [0; 16], "an IMU fault goes limp");
    let (_, err, flags) = rig.read(BOARD, board::FAULT_FLAGS, 2);
    assert_eq!(
        (err, flags),
        (0x80, board::fault::IMU.to_le_bytes().to_vec())
    );
    // The IMU answering again does not release the fault.
    rig.sensors.0.borrow_mut().imu = good;
    rig.advance_ms(10);
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
}

#[test]
fn packets_for_other_devices_do_not_feed_the_watchdog() {
    let mut rig = Rig::new(config_with_watchdog(100, SafeBehaviour::Hold));
    enable(&mut rig);
    let enabled_at = rig.now_ms();
    for _ in 0..10 {
        rig.advance_ms(9);
        // Another device on the bus, an ID no device has, and a status packet (another
        // device's answer, or the echo of our own on a half-duplex bus).
        assert!(rig.send(42, Command::Ping).is_empty());
        assert!(rig.send(0, Command::Ping).is_empty());
        assert!(
            rig.send(
                101,
                Command::Read {
                    address: 0,
                    length: 2
                }
            )
            .is_empty()
        );
        assert!(rig.send_status(1, 0, &[0xA0, 0xC1, 1]).is_empty());
        assert!(rig.send_status(BOARD, 0, &[]).is_empty());
        rig.advance_ms(1);
    }
    assert_eq!(rig.now_ms() - enabled_at, 100.0);
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
    assert_eq!(rig.fw.controller().faults(), board::fault::WATCHDOG);

    // The same traffic to any of this board's IDs, or broadcast, does feed it.
    for id in [1u8, 16, BOARD, 0xFE] {
        let mut rig = Rig::new(config_with_watchdog(100, SafeBehaviour::Hold));
        enable(&mut rig);
        for _ in 0..30 {
            rig.advance_ms(9);
            rig.send(id, Command::Ping);
            rig.advance_ms(1);
        }
        assert_eq!(rig.fw.controller().state(), SafetyState::Enabled, "ID {id}");
    }
}

#[test]
fn with_several_faults_latched_the_most_conservative_behaviour_wins() {
    // Watchdog (hold) first, then over-temperature (limp): limp.
    let mut rig = Rig::new(config_with_watchdog(100, SafeBehaviour::Hold));
    enable(&mut rig);
    rig.advance_ms(100);
    let held = rig.pulses();
    assert!(held.iter().all(|&p| p != 0));
    rig.set_positions(|_| 0.1);
    rig.advance_ms(5);
    assert_eq!(rig.pulses(), held, "watchdog alone: hold");
    rig.sensors.0.borrow_mut().servos[0].temperature_c = 90.0;
    rig.advance_ms(1);
    assert_eq!(
        rig.fw.controller().faults(),
        board::fault::WATCHDOG | board::fault::OVER_TEMPERATURE
    );
    assert_eq!(rig.pulses(), [0; 16]);

    // Watchdog (damp), then the e-stop set to hold: still damp.
    let config = FirmwareConfig {
        estop_behaviour: SafeBehaviour::Hold,
        ..config_with_watchdog(100, SafeBehaviour::Damp)
    };
    let mut rig = Rig::new(config.clone());
    enable(&mut rig);
    rig.advance_ms(100);
    assert_eq!(command(&mut rig, board::command::ESTOP), 0x80);
    assert_eq!(rig.fw.controller().state(), SafetyState::EStop);
    let before = rig.pulse(1);
    rig.set_position(1, 1.3);
    rig.advance_ms(50);
    assert!(
        rig.pulse(1) > before + 20,
        "damp yields: {before} -> {}",
        rig.pulse(1)
    );

    // E-stop (damp), then under-voltage (limp) while e-stopped: limp, still e-stop.
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Hold));
    enable(&mut rig);
    rig.advance_ms(5);
    assert_eq!(command(&mut rig, board::command::ESTOP), 0x80);
    rig.advance_ms(5);
    assert!(rig.pulses().iter().all(|&p| p != 0), "e-stop damps");
    rig.sensors.0.borrow_mut().supply_mv = 5000;
    rig.advance_ms(50);
    assert_eq!(rig.fw.controller().state(), SafetyState::EStop);
    assert_eq!(
        rig.fw.controller().faults(),
        board::fault::ESTOP | board::fault::UNDER_VOLTAGE
    );
    assert_eq!(rig.pulses(), [0; 16]);
}

#[test]
fn disable_goes_idle_from_enabled_only() {
    let mut rig = Rig::new(config_with_watchdog(100, SafeBehaviour::Hold));
    assert_eq!(
        command(&mut rig, board::command::DISABLE),
        0,
        "idle -> idle"
    );
    enable(&mut rig);
    rig.advance_ms(5);
    assert!(rig.pulses().iter().all(|&p| p != 0));
    assert_eq!(command(&mut rig, board::command::DISABLE), 0);
    assert_eq!(rig.fw.controller().state(), SafetyState::Idle);
    rig.advance_ms(1);
    assert_eq!(rig.pulses(), [0; 16]);
    for id in 1..=16 {
        assert_eq!(rig.read(id, servo::TORQUE_ENABLE, 1), (id, 0, vec![0]));
    }
    // Idle has no watchdog: silence does not fault it.
    rig.advance_ms(500);
    assert_eq!(rig.fw.controller().state(), SafetyState::Idle);
    assert_eq!(rig.fw.controller().faults(), 0);
    // In fault and e-stop DISABLE is refused: it must not bypass CLEAR.
    enable(&mut rig);
    rig.advance_ms(100);
    assert_eq!(
        command(&mut rig, board::command::DISABLE),
        RESULT_FAIL_ALERT
    );
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
    assert_eq!(command(&mut rig, board::command::ESTOP), 0x80);
    assert_eq!(
        command(&mut rig, board::command::DISABLE),
        RESULT_FAIL_ALERT
    );
    assert_eq!(rig.fw.controller().state(), SafetyState::EStop);
    assert_eq!(command(&mut rig, board::command::CLEAR), 0);
    assert_eq!(rig.fw.controller().state(), SafetyState::Idle);
    // Unknown commands are refused before anything happens.
    assert_eq!(command(&mut rig, 0), ErrorCode::DataRange as u8);
    assert_eq!(command(&mut rig, 5), ErrorCode::DataRange as u8);
}

#[test]
fn implausible_position_feedback_latches_the_feedback_fault() {
    let config = config_with_watchdog(1000, SafeBehaviour::Hold);
    // Within the margin (0.5 rad beyond the hard limits): fine. Hip abduction (ID 7) is
    // [-0.6, 0.6].
    let mut rig = Rig::new(config.clone());
    enable(&mut rig);
    rig.set_position(6, 1.09);
    rig.set_position(8, -3.09);
    rig.advance_ms(100);
    assert_eq!(rig.fw.controller().state(), SafetyState::Enabled);
    for bad in [1.11, -1.11, f32::NAN, f32::INFINITY] {
        let mut rig = Rig::new(config.clone());
        enable(&mut rig);
        rig.set_position(6, bad);
        rig.advance_ms(9);
        assert_eq!(rig.fw.controller().state(), SafetyState::Enabled, "{bad}");
        rig.advance_ms(1);
        assert_eq!(rig.fw.controller().state(), SafetyState::Fault, "{bad}");
        assert_eq!(rig.fw.controller().faults(), board::fault::FEEDBACK);
        assert_eq!(rig.pulses(), [0; 16], "a feedback fault goes limp");
        // The servo to blame says Motor Encoder Error; the others nothing.
        assert_eq!(
            rig.read(7, servo::HARDWARE_ERROR_STATUS, 1),
            (7, 0x80, vec![servo::hw_error::ENCODER])
        );
        assert_eq!(
            rig.read(1, servo::HARDWARE_ERROR_STATUS, 1),
            (1, 0, vec![0])
        );
        let (_, _, log) = rig.read(BOARD, board::FAULT_LOG_COUNT, 1 + 2);
        assert_eq!(log, vec![1, 5, 7], "code 5 (feedback), servo ID 7");
        rig.set_position(6, 0.0);
        rig.advance_ms(10);
        assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
        assert_eq!(command(&mut rig, board::command::CLEAR), 0);
        assert_eq!(
            rig.read(7, servo::HARDWARE_ERROR_STATUS, 1),
            (7, 0, vec![0])
        );
    }
    // A glitch shorter than the debounce, on a different servo each tick, still counts.
    let mut rig = Rig::new(config.clone());
    enable(&mut rig);
    for i in [0, 1, 3, 4, 6, 7, 9, 12, 13, 14] {
        rig.set_positions(|s| if s == i { f32::NAN } else { 0.0 });
        rig.set_position(2, -1.6);
        rig.set_position(5, -1.6);
        rig.set_position(8, -1.6);
        rig.set_position(11, -1.6);
        rig.advance_ms(1);
    }
    assert_eq!(rig.fw.controller().faults(), board::fault::FEEDBACK);
}

#[test]
fn damp_with_a_dead_position_sensor_holds_instead_of_jumping() {
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Hold));
    enable(&mut rig);
    rig.advance_ms(5);
    assert_eq!(command(&mut rig, board::command::ESTOP), 0x80);
    let before = rig.pulses();
    rig.set_position(1, f32::NAN);
    rig.advance_ms(9);
    assert_eq!(rig.pulses(), before);
}

#[test]
fn bulk_write_and_broadcast_write_goals_are_clamped_to_the_joint_limits() {
    let config = config_with_watchdog(1000, SafeBehaviour::Hold);
    let mut rig = Rig::new(config.clone());
    enable(&mut rig);
    let mut raw = Vec::new();
    for (id, rad) in [(3u8, 1.0f32), (1, -3.0), (13, 9.0), (4, 2.0)] {
        raw.push(id);
        raw.extend_from_slice(&servo::GOAL_POSITION.to_le_bytes());
        raw.extend_from_slice(&4u16.to_le_bytes());
        raw.extend_from_slice(&rad_to_ticks(rad).to_le_bytes());
    }
    let answers = rig.send(
        0xFE,
        Command::BulkWrite(clawrl_protocol::command::BulkWrite { raw: &raw }),
    );
    assert!(answers.is_empty(), "BULK WRITE is never answered");
    rig.advance_ms(800);
    assert_eq!(rig.pulse(2), pulse_of(&config, 2, -0.6));
    assert_eq!(rig.pulse(0), pulse_of(&config, 0, -0.6));
    assert_eq!(rig.pulse(12), pulse_of(&config, 12, 1.2));
    // ID 4 is a mirrored abduction servo: its limit is still +0.6 rad of the joint.
    assert_eq!(rig.pulse(3), pulse_of(&config, 3, 0.6));

    // Broadcast WRITE: applied to every servo, each clamped to its own range.
    for (rad, end) in [(9.0f32, 1usize), (-9.0, 0)] {
        let answers = rig.send(
            0xFE,
            Command::Write {
                address: servo::GOAL_POSITION,
                data: &rad_to_ticks(rad).to_le_bytes(),
            },
        );
        assert!(answers.is_empty(), "a broadcast WRITE is never answered");
        rig.advance_ms(800);
        for i in 0..16 {
            let c = &config.servos[i];
            let limit = if end == 1 { c.max_rad } else { c.min_rad };
            let limit = clawrl_protocol::units::ticks_to_rad(rad_to_ticks(limit));
            let expected = pulse_of(&config, i, limit);
            assert!(
                rig.pulse(i).abs_diff(expected) <= 1,
                "servo {i}: {} vs {expected}",
                rig.pulse(i)
            );
        }
    }
}

#[test]
fn reboot_does_not_clear_a_latched_fault() {
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Hold));
    // Without a fault, REBOOT of the board goes back to idle with defaults.
    assert_eq!(
        rig.write(BOARD, board::WATCHDOG_TIMEOUT_MS, &300u16.to_le_bytes()),
        0
    );
    enable(&mut rig);
    assert_eq!(rig.send(BOARD, Command::Reboot), vec![(BOARD, 0, vec![])]);
    assert_eq!(rig.fw.controller().state(), SafetyState::Idle);
    assert_eq!(rig.fw.controller().faults(), 0);
    let (_, _, ms) = rig.read(BOARD, board::WATCHDOG_TIMEOUT_MS, 2);
    assert_eq!(ms, 1000u16.to_le_bytes());
    rig.advance_ms(1);
    assert_eq!(rig.pulses(), [0; 16]);

    enable(&mut rig);
    trip(&mut rig, board::fault::OVER_TEMPERATURE);
    rig.sensors.0.borrow_mut().servos[4].temperature_c = 35.0;
    // REBOOT of the board: answered with the alert bit, still in fault, outputs off.
    assert_eq!(
        rig.send(BOARD, Command::Reboot),
        vec![(BOARD, 0x80, vec![])]
    );
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
    assert_eq!(rig.fw.controller().faults(), board::fault::OVER_TEMPERATURE);
    rig.advance_ms(5);
    assert_eq!(rig.pulses(), [0; 16]);
    assert_eq!(command(&mut rig, board::command::ENABLE), RESULT_FAIL_ALERT);
    // REBOOT of a servo: its Hardware Error Status stays, and so does the alert.
    assert_eq!(rig.send(5, Command::Reboot), vec![(5, 0x80, vec![])]);
    assert_eq!(
        rig.read(5, servo::HARDWARE_ERROR_STATUS, 1),
        (5, 0x80, vec![servo::hw_error::OVERHEATING])
    );
    assert_eq!(rig.write(5, servo::TORQUE_ENABLE, &[1]), RESULT_FAIL_ALERT);
    // Only CLEAR releases it.
    assert_eq!(command(&mut rig, board::command::CLEAR), 0);
    assert_eq!(rig.fw.controller().state(), SafetyState::Idle);
    assert_eq!(
        rig.read(5, servo::HARDWARE_ERROR_STATUS, 1),
        (5, 0, vec![0])
    );
    enable(&mut rig);
    rig.advance_ms(1);
    assert!(rig.pulses().iter().all(|&p| p != 0));
    // REBOOT of a servo while enabled switches its torque off, nothing else.
    assert_eq!(rig.send(5, Command::Reboot), vec![(5, 0, vec![])]);
    rig.advance_ms(1);
    assert_eq!(rig.pulse(4), 0);
    assert_ne!(rig.pulse(3), 0);
    assert_eq!(rig.fw.controller().state(), SafetyState::Enabled);
}

// ---- The wire around the safety path: registers, error codes, FAST SYNC READ layout. ----

#[test]
fn fast_sync_read_fills_the_slot_of_a_device_that_cannot_answer() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    // 140 + 10 is past a servo's table (147) but inside the board's (288).
    let ids = [1u8, BOARD, 2];
    let answers = rig.send(
        0xFE,
        Command::FastSyncRead(SyncRead {
            address: 140,
            length: 10,
            ids: &ids,
        }),
    );
    assert_eq!(answers.len(), 1);
    let mut params = vec![answers[0].1];
    params.extend_from_slice(&answers[0].2);
    // Three shares of ERR, ID, 10 bytes; a CRC after each but the last.
    assert_eq!(params.len(), 3 * 12 + 2 * 2);
    let access = ErrorCode::Access as u8;
    let mut board_table = vec![0u8; 10];
    board_table.copy_from_slice(&rig.read(BOARD, 140, 10).2);
    let expected: [(u8, u8, Vec<u8>); 3] = [
        (access, 1, vec![0; 10]),
        (0, BOARD, board_table),
        (access, 2, vec![0; 10]),
    ];
    for (i, (err, id, data)) in expected.iter().enumerate() {
        let share = &params[i * 14..i * 14 + 12];
        assert_eq!(
            (share[0], share[1], &share[2..]),
            (*err, *id, &data[..]),
            "share {i}"
        );
        if i < 2 {
            let crc = u16::from_le_bytes([params[i * 14 + 12], params[i * 14 + 13]]);
            assert_eq!(crc, clawrl_protocol::crc::crc16(share), "inner CRC {i}");
        }
    }
    // No device of this board listed: no answer at all.
    let answers = rig.send(
        0xFE,
        Command::FastSyncRead(SyncRead {
            address: 0,
            length: 2,
            ids: &[42, 0],
        }),
    );
    assert!(answers.is_empty());
}

#[test]
fn fast_sync_read_is_refused_exactly_past_1024_bytes() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    let ids: Vec<u8> = (1..=13).collect();
    // 13 x (4 + 74) + 10 = 1024: answered.
    let answers = rig.send(
        0xFE,
        Command::FastSyncRead(SyncRead {
            address: 0,
            length: 74,
            ids: &ids,
        }),
    );
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].2.len(), 13 * 76 + 12 * 2 - 1);
    // 13 x (4 + 75) + 10 = 1037: refused.
    // The rule counts 10 bytes of framing where a packet needs 8 (header, ID, length,
    // instruction, CRC): 8 x (4 + 123) + 10 = 1026 is refused although 1024 would fit.
    for (ids, length) in [(&ids[..], 75u16), (&ids[..1], 1011), (&ids[..8], 123)] {
        let answers = rig.send(
            0xFE,
            Command::FastSyncRead(SyncRead {
                address: 0,
                length,
                ids,
            }),
        );
        assert!(answers.is_empty(), "{} x {length}", ids.len());
    }
}

#[test]
fn reads_end_exactly_at_the_end_of_each_table() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    let access = ErrorCode::Access as u8;
    assert_eq!(rig.read(1, 146, 1).1, 0);
    assert_eq!(rig.read(1, 146, 2).1, access);
    assert_eq!(rig.read(1, 0, 147).2.len(), 147);
    assert_eq!(rig.read(1, 0, 0).1, access);
    // The board's table ends with the HIL Outputs block (436 bytes).
    assert_eq!(board::TABLE_LEN, 436);
    assert_eq!(rig.read(BOARD, 435, 1).1, 0);
    assert_eq!(rig.read(BOARD, 435, 2).1, access);
    assert_eq!(rig.read(BOARD, 0, 0).1, access);
}

#[test]
fn malformed_and_unknown_instructions_get_their_error_codes() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    // READ with three parameter bytes instead of four.
    let answers = rig.send_instruction(3, 0x02, &[0, 0, 4]);
    assert_eq!(answers, vec![(3, ErrorCode::DataLength as u8, vec![])]);
    let answers = rig.send_instruction(BOARD, 0x77, &[]);
    assert_eq!(answers, vec![(BOARD, ErrorCode::Instruction as u8, vec![])]);
    // Broadcast, or for another device: silence.
    assert!(rig.send_instruction(0xFE, 0x77, &[]).is_empty());
    assert!(rig.send_instruction(0xFE, 0x02, &[0, 0, 4]).is_empty());
    assert!(rig.send_instruction(42, 0x77, &[]).is_empty());
    // SYNC/BULK to one ID: Instruction error.
    let answers = rig.send(
        2,
        Command::SyncWrite(SyncWrite {
            address: servo::GOAL_POSITION,
            length: 4,
            raw: &[2, 0, 8, 0, 0],
        }),
    );
    assert_eq!(answers, vec![(2, ErrorCode::Instruction as u8, vec![])]);
}

#[test]
fn hil_simulated_survives_reboot_and_the_clock_reads_the_latest_packet() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    assert_eq!(rig.read(BOARD, board::HIL_SIMULATED, 1).2, vec![0]);
    rig.fw.controller_mut().set_simulated(true);
    assert_eq!(rig.read(BOARD, board::HIL_SIMULATED, 1).2, vec![1]);
    rig.send(BOARD, Command::Reboot);
    assert_eq!(rig.read(BOARD, board::HIL_SIMULATED, 1).2, vec![1]);
    rig.fw.controller_mut().set_simulated(false);
    assert_eq!(rig.read(BOARD, board::HIL_SIMULATED, 1).2, vec![0]);
    // Ticks and time: after 7 ticks, then half a tick later (no tick yet), a READ sees the
    // time of its own arrival.
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    rig.advance_ms(7);
    rig.clock.0.set(rig.clock.0.get() + 500);
    let (_, _, data) = rig.read(BOARD, board::TICK_COUNT, 8);
    assert_eq!(u32::from_le_bytes(data[0..4].try_into().unwrap()), 8);
    assert_eq!(u32::from_le_bytes(data[4..8].try_into().unwrap()), 7500);
    // A packet stamped earlier than the last tick does not move the clock back.
    rig.fw.controller_mut().handle(
        &clawrl_protocol::Packet {
            id: BOARD,
            instruction: 0x01,
            params: &[],
        },
        1000,
        &mut |_| {},
    );
    assert_eq!(
        u32::from_le_bytes(rig.read(BOARD, board::UPTIME_US, 4).2.try_into().unwrap()),
        7500
    );
}

#[test]
fn temperature_limits_trip_above_not_at_the_limit() {
    let config = config_with_watchdog(1000, SafeBehaviour::Hold);
    let mut rig = Rig::new(config.clone());
    enable(&mut rig);
    rig.sensors.0.borrow_mut().servos[2].temperature_c = 70.0;
    rig.advance_ms(5);
    assert_eq!(rig.fw.controller().state(), SafetyState::Enabled);
    rig.sensors.0.borrow_mut().servos[2].temperature_c = 70.1;
    rig.advance_ms(1);
    assert_eq!(rig.fw.controller().faults(), board::fault::OVER_TEMPERATURE);
    // A servo's own limit may be lowered (up to 70, not above) and then counts.
    let mut rig = Rig::new(config);
    assert_eq!(
        rig.write(3, servo::TEMPERATURE_LIMIT, &[71]),
        ErrorCode::DataLimit as u8
    );
    assert_eq!(rig.write(3, servo::TEMPERATURE_LIMIT, &[70]), 0);
    assert_eq!(rig.write(3, servo::TEMPERATURE_LIMIT, &[50]), 0);
    assert_eq!(rig.read(3, servo::TEMPERATURE_LIMIT, 1).2, vec![50]);
    enable(&mut rig);
    rig.sensors.0.borrow_mut().servos[2].temperature_c = 50.0;
    rig.advance_ms(2);
    assert_eq!(rig.fw.controller().state(), SafetyState::Enabled);
    rig.sensors.0.borrow_mut().servos[2].temperature_c = 55.0;
    rig.advance_ms(1);
    assert_eq!(rig.fw.controller().faults(), board::fault::OVER_TEMPERATURE);
    let (_, _, log) = rig.read(BOARD, board::FAULT_LOG, 2);
    assert_eq!(log, vec![1, 3], "over-temperature of servo ID 3");
}

#[test]
fn under_voltage_trips_below_not_at_the_threshold_and_flags_every_servo() {
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Hold));
    enable(&mut rig);
    rig.sensors.0.borrow_mut().supply_mv = 6400;
    rig.advance_ms(100);
    assert_eq!(rig.fw.controller().state(), SafetyState::Enabled);
    rig.sensors.0.borrow_mut().supply_mv = 6399;
    rig.advance_ms(50);
    assert_eq!(rig.fw.controller().faults(), board::fault::UNDER_VOLTAGE);
    for id in 1..=16 {
        assert_eq!(
            rig.read(id, servo::HARDWARE_ERROR_STATUS, 1),
            (id, 0x80, vec![servo::hw_error::INPUT_VOLTAGE])
        );
    }
}

#[test]
fn every_fault_bit_can_be_injected_and_each_is_logged() {
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Hold));
    let flags = [
        board::fault::OVER_TEMPERATURE,
        board::fault::UNDER_VOLTAGE,
        board::fault::IMU,
        board::fault::FEEDBACK,
    ];
    for flag in flags {
        enable(&mut rig);
        rig.advance_ms(3);
        assert_eq!(rig.write(BOARD, board::HIL_FAULT_INJECT, &[flag as u8]), 0);
        rig.advance_ms(1);
        assert_eq!(rig.fw.controller().faults(), flag);
        assert_eq!(rig.pulses(), [0; 16]);
        assert_eq!(rig.write(BOARD, board::HIL_FAULT_INJECT, &[0]), 0x80);
        assert_eq!(command(&mut rig, board::command::CLEAR), 0);
    }
    // The log: one entry per fault, code = bit index, the time in ms; after 8 it wraps.
    let (_, _, log) = rig.read(BOARD, board::FAULT_LOG_COUNT, 1 + 48);
    assert_eq!(log[0], 4);
    for (i, flag) in flags.iter().enumerate() {
        let e = &log[1 + 6 * i..7 + 6 * i];
        assert_eq!(e[0], flag.trailing_zeros() as u8);
        assert_eq!(
            u32::from_le_bytes(e[2..6].try_into().unwrap()),
            4 * (i as u32 + 1)
        );
    }
    for _ in 0..5 {
        enable(&mut rig);
        assert_eq!(command(&mut rig, board::command::ESTOP), 0x80);
        rig.advance_ms(1);
        assert_eq!(command(&mut rig, board::command::CLEAR), 0);
        rig.sensors.0.borrow_mut().imu = None;
        rig.advance_ms(100);
        rig.sensors.0.borrow_mut().imu = Some(Default::default());
        assert_eq!(command(&mut rig, board::command::CLEAR), 0);
    }
    // The e-stop is not logged (it is a command, not a fault); 4 + 5 IMU faults = 9.
    let (_, _, log) = rig.read(BOARD, board::FAULT_LOG_COUNT, 1 + 48);
    assert_eq!(log[0], 9);
    // Slot 0 holds the 9th, slot 1 still the 2nd (under-voltage, at 8 ms).
    assert_eq!(log[1], board::fault::IMU.trailing_zeros() as u8);
    assert_eq!(&log[7..13], &[2, 0, 8, 0, 0, 0]);
}

#[test]
fn present_pwm_reads_the_pulse_on_the_output() {
    let config = config_with_watchdog(1000, SafeBehaviour::Hold);
    let mut rig = Rig::new(config.clone());
    assert_eq!(rig.read(4, servo::PRESENT_PWM, 2).2, vec![0, 0]);
    enable(&mut rig);
    sync_write_goals(&mut rig, &[(4, 0.4)]);
    rig.advance_ms(100);
    let pwm = rig.read(4, servo::PRESENT_PWM, 2).2;
    assert_eq!(u16::from_le_bytes([pwm[0], pwm[1]]), rig.pulse(3));
    assert_eq!(rig.pulse(3), pulse_of(&config, 3, 0.4));
    assert_eq!(
        rig.fw.controller().watchdog_behaviour(),
        SafeBehaviour::Hold
    );
    assert_eq!(
        rig.write(BOARD, board::SAFE_BEHAVIOUR, &[board::behaviour::LIMP]),
        0
    );
    assert_eq!(
        rig.fw.controller().watchdog_behaviour(),
        SafeBehaviour::Limp
    );
    assert_eq!(
        rig.read(BOARD, board::SAFE_BEHAVIOUR, 1).2,
        vec![board::behaviour::LIMP]
    );
}

#[test]
fn position_limits_accept_the_hard_limits_and_a_single_point() {
    let config = config_with_watchdog(1000, SafeBehaviour::Hold);
    let mut rig = Rig::new(config.clone());
    // Knee (ID 3): [-2.6, -0.6]; the nearest ticks are accepted even a hair outside.
    let (lo, hi) = (rad_to_ticks(-2.6), rad_to_ticks(-0.6));
    assert_eq!(
        rig.write(3, servo::MIN_POSITION_LIMIT, &lo.to_le_bytes()),
        0
    );
    assert_eq!(
        rig.write(3, servo::MAX_POSITION_LIMIT, &hi.to_le_bytes()),
        0
    );
    for (addr, ticks) in [
        (servo::MIN_POSITION_LIMIT, lo - 1),
        (servo::MAX_POSITION_LIMIT, hi + 1),
    ] {
        assert_eq!(
            rig.write(3, addr, &ticks.to_le_bytes()),
            ErrorCode::DataLimit as u8
        );
    }
    // Min above max: refused. Min = max: one allowed position.
    let mid = rad_to_ticks(-1.0);
    assert_eq!(
        rig.write(3, servo::MAX_POSITION_LIMIT, &mid.to_le_bytes()),
        0
    );
    assert_eq!(
        rig.write(3, servo::MIN_POSITION_LIMIT, &(mid + 1).to_le_bytes()),
        ErrorCode::DataLimit as u8
    );
    assert_eq!(
        rig.write(3, servo::MIN_POSITION_LIMIT, &mid.to_le_bytes()),
        0
    );
    enable(&mut rig);
    sync_write_goals(&mut rig, &[(3, -2.0)]);
    rig.advance_ms(200);
    let point = clawrl_protocol::units::ticks_to_rad(mid);
    assert_eq!(rig.pulse(2), pulse_of(&config, 2, point));
}

#[test]
fn extreme_position_values_clamp_instead_of_overflowing() {
    // Found by the command-handling fuzz target: Goal Position 0x80000000 (i32::MIN ticks)
    // overflowed converting ticks to rad.
    let config = config_with_watchdog(1000, SafeBehaviour::Hold);
    let mut rig = Rig::new(config.clone());
    enable(&mut rig);
    for (value, rad) in [(i32::MIN, -0.6), (i32::MAX, 0.6), (-1_000_001, -0.6)] {
        assert_eq!(rig.write(1, servo::GOAL_POSITION, &value.to_le_bytes()), 0);
        rig.advance_ms(200);
        assert_eq!(rig.pulse(0), pulse_of(&config, 0, rad), "{value}");
    }
    assert_eq!(command(&mut rig, board::command::DISABLE), 0);
    for value in [i32::MIN, i32::MAX] {
        let err = rig.write(1, servo::MIN_POSITION_LIMIT, &value.to_le_bytes());
        assert_eq!(err, ErrorCode::DataLimit as u8);
    }
}

#[test]
fn measured_motion_reads_as_velocity_moving_and_in_the_mirror() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    // Servo ID 2 (hip pitch) turns at 1 rad/s: the low-passed velocity settles on it.
    let mut rad = 0.3;
    for _ in 0..60 {
        rad += 0.001;
        rig.set_position(1, rad);
        rig.advance_ms(1);
    }
    // 1 rad/s = 41.7 units of 0.229 rpm.
    let (_, _, v) = rig.read(2, servo::PRESENT_VELOCITY, 4);
    assert_eq!(i32::from_le_bytes(v.try_into().unwrap()), 42);
    assert_eq!(rig.read(2, servo::MOVING, 1).2, vec![1]);
    assert_eq!(rig.read(1, servo::MOVING, 1).2, vec![0]);
    let at = board::SERVO_MIRROR + board::SERVO_MIRROR_ENTRY_LEN;
    let (_, _, m) = rig.read(BOARD, at, 6);
    assert_eq!(i16::from_le_bytes([m[0], m[1]]) as i32, rad_to_ticks(rad));
    assert_eq!(i16::from_le_bytes([m[2], m[3]]), 42);
    assert_eq!(i16::from_le_bytes([m[4], m[5]]), 100, "current in mA");
    // Standing still again, the velocity decays to 0.
    rig.advance_ms(100);
    assert_eq!(rig.read(2, servo::PRESENT_VELOCITY, 4).2, vec![0; 4]);
    assert_eq!(rig.read(2, servo::MOVING, 1).2, vec![0]);
}

#[test]
fn time_imu_and_watchdog_registers_read_what_they_say() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    rig.advance_ms(7);
    assert_eq!(rig.read(1, servo::REALTIME_TICK, 2).2, 7u16.to_le_bytes());
    // The board's watchdog timeout in ms; a servo's own Bus Watchdog is off until written.
    assert_eq!(
        rig.read(BOARD, board::WATCHDOG_TIMEOUT_MS, 2).2,
        100u16.to_le_bytes()
    );
    assert_eq!(
        rig.write(BOARD, board::WATCHDOG_TIMEOUT_MS, &250u16.to_le_bytes()),
        0
    );
    assert_eq!(
        rig.read(BOARD, board::WATCHDOG_TIMEOUT_MS, 2).2,
        250u16.to_le_bytes()
    );
    assert_eq!(rig.read(1, servo::BUS_WATCHDOG, 1).2, vec![0]);
    // Gyro in mrad/s; orientation w = 1 as 16384 while nothing turns.
    rig.sensors.0.borrow_mut().imu = Some(clawrl_firmware::imu::ImuSample {
        gyro_rad_s: [0.1, -0.2, 0.25],
        accel_m_s2: [0.5, -1.5, 9.81],
    });
    rig.advance_ms(1);
    let (_, _, g) = rig.read(BOARD, board::GYRO, 12);
    let v: Vec<i16> = g
        .chunks(2)
        .map(|c| i16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(v, vec![100, -200, 250, 50, -150, 981]);
    // Voltages in 0.1 V on the servos.
    assert_eq!(
        rig.read(1, servo::MIN_VOLTAGE_LIMIT, 2).2,
        64u16.to_le_bytes()
    );
    assert_eq!(
        rig.read(1, servo::PRESENT_INPUT_VOLTAGE, 2).2,
        74u16.to_le_bytes()
    );
    let (_, _, q) = rig.read(BOARD, board::QUATERNION, 2);
    let w = i16::from_le_bytes([q[0], q[1]]);
    assert!((16380..=16384).contains(&w), "{w}");
}

#[test]
fn led_and_gains_are_stored() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    assert_eq!(rig.write(4, servo::LED, &[1]), 0);
    assert_eq!(rig.read(4, servo::LED, 1).2, vec![1]);
    for (addr, value) in [
        (servo::POSITION_P_GAIN, 900u16),
        (servo::POSITION_I_GAIN, 7),
        (servo::POSITION_D_GAIN, 33),
    ] {
        assert_eq!(rig.write(4, addr, &value.to_le_bytes()), 0);
        assert_eq!(rig.read(4, addr, 2).2, value.to_le_bytes());
    }
}

#[test]
fn torque_enable_switches_one_servo_off_and_on_while_enabled() {
    let config = config_with_watchdog(1000, SafeBehaviour::Hold);
    let mut rig = Rig::new(config.clone());
    enable(&mut rig);
    rig.advance_ms(2);
    assert_eq!(rig.write(2, servo::TORQUE_ENABLE, &[0]), 0);
    rig.advance_ms(1);
    assert_eq!(rig.pulse(1), 0);
    assert_ne!(rig.pulse(0), 0);
    assert_eq!(rig.write(2, servo::TORQUE_ENABLE, &[1]), 0);
    assert_eq!(rig.fw.controller().state(), SafetyState::Enabled);
    rig.advance_ms(1);
    assert_eq!(
        rig.pulse(1),
        pulse_of(&config, 1, 0.3),
        "from where the joint is"
    );
    assert_eq!(rig.read(2, servo::TORQUE_ENABLE, 1).2, vec![1]);
}

#[test]
fn sync_read_answers_each_listed_device_in_order() {
    let mut rig = Rig::new(FirmwareConfig::claw_foot());
    let answers = rig.send(
        0xFE,
        Command::SyncRead(SyncRead {
            address: 0,
            length: 2,
            ids: &[3, 42, BOARD, 1],
        }),
    );
    assert_eq!(
        answers,
        vec![
            (3, 0, vec![0xA0, 0xC1]),
            (BOARD, 0, vec![0xB0, 0xC1]),
            (1, 0, vec![0xA0, 0xC1])
        ]
    );
}

#[test]
fn a_safe_behaviour_counts_only_for_its_own_latched_cause() {
    // Watchdog behaviour limp, but the watchdog has not tripped: the e-stop damps.
    let mut rig = Rig::new(config_with_watchdog(1000, SafeBehaviour::Limp));
    enable(&mut rig);
    rig.advance_ms(5);
    assert_eq!(command(&mut rig, board::command::ESTOP), 0x80);
    rig.advance_ms(5);
    assert!(rig.pulses().iter().all(|&p| p != 0), "{:?}", rig.pulses());
}

#[test]
fn enabling_with_a_dead_position_sensor_commands_mid_range_then_goes_limp() {
    // Hip pitch (ID 2) [-1.2, 1.8]: its sensor reads NaN. Nothing to start from, so the first
    // pulse is mid-range (0.3 rad), inside the limits; the Feedback fault then goes limp.
    let config = config_with_watchdog(1000, SafeBehaviour::Hold);
    let mut rig = Rig::new(config.clone());
    rig.set_position(1, f32::NAN);
    enable(&mut rig);
    rig.advance_ms(1);
    assert_eq!(rig.pulse(1), pulse_of(&config, 1, 0.3));
    rig.advance_ms(9);
    assert_eq!(rig.fw.controller().faults(), board::fault::FEEDBACK);
    assert_eq!(rig.pulses(), [0; 16]);
}
