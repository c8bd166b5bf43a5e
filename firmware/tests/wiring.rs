//! A board wired in another order than IDs 1-16 on outputs 0-15: each servo answers to the bus
//! ID of its table entry, drives the output of its channel with its own pulse law (direction,
//! zero offset) and reads the feedback input of that channel. What the robot description's
//! `id`, `pwm.channel`, `direction` and `offset_rad` become on the board
//! (`FirmwareConfig::from_description`).

mod common;

use clawrl_firmware::FirmwareConfig;
use clawrl_protocol::Command;
use clawrl_protocol::table::{board, servo};
use clawrl_protocol::units::{rad_to_ticks, ticks_to_rad};
use common::Rig;

const BOARD: u8 = 100;

/// Slot `i` answers to ID 16 - i and drives channel (i + 5) mod 16; slot 0 (a hip
/// abduction, limits [-0.6, 0.6]) is mounted reversed with a 0.1 rad offset.
fn rewired() -> FirmwareConfig {
    let mut c = FirmwareConfig::claw_foot();
    for (i, s) in c.servos.iter_mut().enumerate() {
        s.id = 16 - i as u8;
        s.channel = ((i + 5) % 16) as u8;
        s.calibration.reversed = false;
    }
    c.servos[0].calibration.reversed = true;
    c.servos[0].calibration.trim_rad = 0.1;
    c
}

fn enabled(config: FirmwareConfig) -> Rig {
    let mut rig = Rig::new(config);
    assert_eq!(
        rig.write(BOARD, board::SAFETY_COMMAND, &[board::command::ENABLE]),
        0
    );
    rig
}

#[test]
fn each_servo_answers_to_its_own_id_in_id_order() {
    let mut rig = enabled(rewired());
    let ids: Vec<u8> = rig.send(0xFE, Command::Ping).iter().map(|a| a.0).collect();
    let mut want: Vec<u8> = (1..=16).collect();
    want.push(BOARD);
    assert_eq!(ids, want, "broadcast PING answers in ID order");
    // Slot 0's table, at ID 16, says ID 16 and reads slot 0's limits.
    let (id, err, data) = rig.read(16, servo::ID, 1);
    assert_eq!((id, err, data[0]), (16, 0, 16));
    let (_, _, max) = rig.read(16, servo::MAX_POSITION_LIMIT, 4);
    let max = i32::from_le_bytes(max.try_into().unwrap());
    assert_eq!(max, rad_to_ticks(0.6), "ID 16 is slot 0, the hip abduction");
    assert!(rig.send(17, Command::Ping).is_empty(), "no servo has ID 17");
}

#[test]
fn a_goal_for_an_id_moves_the_output_of_its_channel_by_its_own_pulse_law() {
    let config = rewired();
    let law = config.servos[0].calibration;
    let mut rig = enabled(config);
    rig.advance_ms(5);
    let before = rig.pulses();
    assert_eq!(
        rig.write(16, servo::GOAL_POSITION, &rad_to_ticks(0.3).to_le_bytes()),
        0
    );
    // 0.3 rad at the 8 rad/s slew limit: 38 ms; inside the board's 100 ms watchdog.
    rig.advance_ms(60);
    let after = rig.pulses();
    // Reversed with a 0.1 rad offset: 1500 - (0.3 + 0.1) x 424.4 us.
    assert_eq!(after[5], law.pulse_us(0.3).round() as u16);
    assert!((f32::from(after[5]) - (1500.0 - 0.4 * 424.413)).abs() < 1.0);
    for ch in (0..16).filter(|&c| c != 5) {
        assert_eq!(after[ch], before[ch], "channel {ch} moved");
    }
}

#[test]
fn a_servos_position_is_read_from_the_input_of_its_channel() {
    let mut rig = enabled(rewired());
    // Slot 3 (ID 13, channel 8) is a hip abduction too: 0.25 rad on input 8.
    rig.set_position(8, 0.25);
    rig.advance_ms(5);
    let (_, err, data) = rig.read(13, servo::PRESENT_POSITION, 4);
    assert_eq!(err, 0);
    let rad = ticks_to_rad(i32::from_le_bytes(data.try_into().unwrap()));
    assert!((rad - 0.25).abs() < 2e-3, "{rad}");
}

#[test]
fn an_id_used_twice_or_the_boards_own_is_refused() {
    let mut c = rewired();
    assert_eq!(c.check_ids(), Ok(()));
    c.servos[4].id = c.servos[9].id;
    assert_eq!(c.check_ids(), Err((9, c.servos[4].id)));
    let mut c = rewired();
    c.servos[2].id = BOARD;
    assert_eq!(c.check_ids(), Err((2, BOARD)));
}
