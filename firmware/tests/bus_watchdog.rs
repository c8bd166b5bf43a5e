//! The X-series Bus Watchdog (servo address 98), as the E-Manual defines it, through the
//! firmware's real loop: written 0 = off (and clears the error), 1-127 = timeout in 20 ms
//! units, watched while the servo's torque is on; on expiry the servo stops where it is, the
//! register reads 255 (-1) and goal writes are answered with a Data Range error (4) until 0 is
//! written. The board's own watchdog stays underneath and cannot be switched off.

mod common;

use clawrl_firmware::pwm::PulseCalibration;
use clawrl_firmware::{FirmwareConfig, SafeBehaviour, SafetyState};
use clawrl_protocol::command::SyncWrite;
use clawrl_protocol::table::{board, servo};
use clawrl_protocol::units::rad_to_ticks;
use clawrl_protocol::{Command, ErrorCode};
use common::Rig;

const BOARD: u8 = 100;

fn expected_pulse(rad: f32) -> u16 {
    PulseCalibration::DS3230.pulse_us(rad).round() as u16
}

/// A board whose own watchdog is at its longest (1 s), so the bus watchdogs act first.
fn rig() -> Rig {
    let mut rig = Rig::new(FirmwareConfig {
        watchdog_ms: 1000,
        watchdog_behaviour: SafeBehaviour::Limp,
        ..FirmwareConfig::claw_foot()
    });
    assert_eq!(
        rig.write(BOARD, board::SAFETY_COMMAND, &[board::command::ENABLE]),
        0
    );
    rig
}

fn goal(rig: &mut Rig, id: u8, rad: f32) -> u8 {
    rig.write(id, servo::GOAL_POSITION, &rad_to_ticks(rad).to_le_bytes())
}

fn register(rig: &mut Rig, id: u8) -> u8 {
    let (_, err, data) = rig.read(id, servo::BUS_WATCHDOG, 1);
    assert_eq!(err, 0);
    data[0]
}

fn sync_write_goal(rig: &mut Rig, id: u8, rad: f32) {
    let mut raw = vec![id];
    raw.extend_from_slice(&rad_to_ticks(rad).to_le_bytes());
    let answers = rig.send(
        0xFE,
        Command::SyncWrite(SyncWrite {
            address: servo::GOAL_POSITION,
            length: 4,
            raw: &raw,
        }),
    );
    assert!(answers.is_empty());
}

/// Advances `ms` milliseconds, with a PING to `id` every 10 ms (traffic that is not for the
/// servos under test).
fn advance_with_traffic_to(rig: &mut Rig, id: u8, ms: u32) {
    for _ in 0..ms / 10 {
        rig.advance_ms(10);
        assert_eq!(rig.send(id, Command::Ping).len(), 1);
    }
}

#[test]
fn off_by_default_and_only_0_to_127_are_accepted() {
    let mut rig = rig();
    assert_eq!(register(&mut rig, 1), 0);
    for bad in [128u8, 200, 254, 0xFF] {
        assert_eq!(
            rig.write(1, servo::BUS_WATCHDOG, &[bad]),
            ErrorCode::DataRange as u8,
            "{bad}"
        );
        assert_eq!(register(&mut rig, 1), 0, "a refused write changed it");
    }
    for good in [1u8, 127, 0, 5] {
        assert_eq!(rig.write(1, servo::BUS_WATCHDOG, &[good]), 0);
        assert_eq!(register(&mut rig, 1), good);
    }
    // Each servo has its own.
    assert_eq!(register(&mut rig, 2), 0);
}

/// Servo 2's register as the firmware holds it (a READ over the wire would feed it).
fn held_register(rig: &Rig) -> u8 {
    rig.fw.controller().servo(1).bus_watchdog.register()
}

#[test]
fn expiry_stops_the_servo_reads_minus_1_and_refuses_goals_until_0_is_written() {
    let mut rig = rig();
    // 5 x 20 ms = 100 ms.
    assert_eq!(rig.write(2, servo::BUS_WATCHDOG, &[5]), 0);
    // Broadcast goals, even for another servo, feed it: one every 80 ms for 0.4 s.
    for _ in 0..5 {
        advance_with_traffic_to(&mut rig, BOARD, 80);
        sync_write_goal(&mut rig, 5, -0.3);
    }
    assert_eq!(held_register(&rig), 5, "tripped though broadcasts came");
    // Servo 2 sets off from 0.3 rad towards 1.8 rad: 187 ms at the slew limit.
    assert_eq!(goal(&mut rig, 2, 1.8), 0);
    let fed_at = rig.now_ms();
    // From now on only the board and servo 3 hear from the master: neither feeds servo 2.
    rig.advance_ms(40);
    assert_eq!(goal(&mut rig, 3, -1.0), 0);
    advance_with_traffic_to(&mut rig, BOARD, 60);
    assert_eq!(rig.now_ms() - fed_at, 100.0);
    assert_eq!(held_register(&rig), 5, "tripped at exactly its timeout");
    rig.advance_ms(1);
    assert_eq!(held_register(&rig), 0xFF, "not tripped 1 ms past it");
    let held = rig.pulse(1);
    assert_eq!(
        register(&mut rig, 2),
        0xFF,
        "X-series reads -1 after expiry"
    );
    // It stops where it is, torque on, half-way to its goal; the board is not in fault.
    assert!(
        held > expected_pulse(0.3) && held < expected_pulse(1.8),
        "{held}"
    );
    rig.advance_ms(50);
    assert_eq!(rig.pulse(1), held);
    assert_eq!(rig.fw.controller().state(), SafetyState::Enabled);
    // Goals are read-only: a WRITE gets Data Range, a SYNC WRITE is ignored.
    assert_eq!(goal(&mut rig, 2, -0.5), ErrorCode::DataRange as u8);
    sync_write_goal(&mut rig, 2, -0.5);
    rig.advance_ms(50);
    assert_eq!(rig.pulse(1), held);
    // Servo 3, without a bus watchdog, followed its goal.
    assert_eq!(rig.pulse(2), expected_pulse(-1.0));
    // A new timeout does not clear the error; 0 does, and goals are taken again.
    assert_eq!(
        rig.write(2, servo::BUS_WATCHDOG, &[5]),
        ErrorCode::DataRange as u8
    );
    assert_eq!(register(&mut rig, 2), 0xFF);
    assert_eq!(rig.write(2, servo::BUS_WATCHDOG, &[0]), 0);
    assert_eq!(register(&mut rig, 2), 0);
    assert_eq!(goal(&mut rig, 2, -0.5), 0);
    rig.advance_ms(300);
    assert_eq!(rig.pulse(1), expected_pulse(-0.5));
}

#[test]
fn it_watches_only_while_the_torque_is_on_and_a_reboot_switches_it_off() {
    let mut rig = rig();
    assert_eq!(rig.write(4, servo::BUS_WATCHDOG, &[1]), 0);
    assert_eq!(rig.write(4, servo::TORQUE_ENABLE, &[0]), 0);
    advance_with_traffic_to(&mut rig, BOARD, 200);
    assert_eq!(register(&mut rig, 4), 1, "tripped with the torque off");
    assert_eq!(rig.write(4, servo::TORQUE_ENABLE, &[1]), 0);
    advance_with_traffic_to(&mut rig, BOARD, 30);
    assert_eq!(register(&mut rig, 4), 0xFF);
    // REBOOT resets the servo's RAM, as on an X-series: off, error cleared, torque off.
    assert_eq!(rig.send(4, Command::Reboot).len(), 1);
    assert_eq!(register(&mut rig, 4), 0);
    let (_, _, torque) = rig.read(4, servo::TORQUE_ENABLE, 1);
    assert_eq!(torque, vec![0]);
    assert_eq!(goal(&mut rig, 4, 0.1), 0);
}

#[test]
fn the_board_watchdog_stays_underneath() {
    let mut rig = rig();
    // Servo 1's bus watchdog at its longest (2.54 s) cannot outlast the board's (1 s).
    assert_eq!(rig.write(1, servo::BUS_WATCHDOG, &[127]), 0);
    rig.advance_ms(1001);
    assert_eq!(rig.fw.controller().state(), SafetyState::Fault);
    assert_eq!(rig.fw.controller().faults(), board::fault::WATCHDOG);
    assert!((0..16).all(|i| rig.pulse(i) == 0), "limp");
    // The board's fault answers goals with Result Fail, whatever the bus watchdog says.
    assert_eq!(register(&mut rig, 1), 127);
    assert_eq!(goal(&mut rig, 1, 0.0) & 0x7F, ErrorCode::ResultFail as u8);
}
