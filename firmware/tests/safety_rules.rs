//! The safety rules table of PROTOCOL.md ("Safety rules"), row by row: each row puts the board
//! in a state, applies the event, and checks the state, fault flags and status error byte that
//! follow, then what reaches the PWM outputs: goals followed (track), the last position kept
//! (hold), the measured position followed with a lag (damp) or no pulses (limp).
//!
//! The rig: watchdog 100 ms with Safe Behaviour hold, e-stop damps, other faults go limp (the
//! defaults apart from the watchdog's, so that hold, damp and limp all appear).

mod common;

use clawrl_firmware::{FirmwareConfig, SafeBehaviour, SafetyState};
use clawrl_protocol::command::SyncWrite;
use clawrl_protocol::table::board::{self, command, fault};
use clawrl_protocol::table::servo;
use clawrl_protocol::units::rad_to_ticks;
use clawrl_protocol::{Command, ErrorCode};
use common::Rig;

const BOARD: u8 = 100;
const FAIL: u8 = ErrorCode::ResultFail as u8;
const ALERT: u8 = 0x80;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Outputs {
    /// Every output follows its goal.
    Track,
    /// Only this servo (index) follows its goal; the others have no pulses.
    TrackOnly(usize),
    Hold,
    Damp,
    Limp,
}

use Outputs::*;

struct Row {
    state: &'static str,
    event: &'static str,
    /// Brings a fresh board into `state`.
    setup: fn(&mut Rig),
    /// The event; returns the status error byte if it is answered.
    event_fn: fn(&mut Rig) -> Option<u8>,
    error: Option<u8>,
    next: SafetyState,
    faults: u16,
    outputs: Outputs,
}

fn config() -> FirmwareConfig {
    FirmwareConfig {
        watchdog_ms: 100,
        watchdog_behaviour: SafeBehaviour::Hold,
        ..FirmwareConfig::claw_foot()
    }
}

fn cmd(rig: &mut Rig, c: u8) -> Option<u8> {
    Some(rig.write(BOARD, board::SAFETY_COMMAND, &[c]))
}

// ---- states ----

fn idle(rig: &mut Rig) {
    rig.advance_ms(2);
}

fn enabled(rig: &mut Rig) {
    assert_eq!(cmd(rig, command::ENABLE), Some(0));
    rig.advance_ms(5);
}

/// Watchdog fault, outputs holding.
fn fault_hold(rig: &mut Rig) {
    enabled(rig);
    rig.advance_ms(100);
    assert_eq!(rig.fw.controller().faults(), fault::WATCHDOG);
}

fn estop(rig: &mut Rig) {
    enabled(rig);
    assert_eq!(cmd(rig, command::ESTOP), Some(ALERT));
    rig.advance_ms(2);
}

// ---- events ----

fn nothing(_: &mut Rig) -> Option<u8> {
    None
}

fn enable(rig: &mut Rig) -> Option<u8> {
    cmd(rig, command::ENABLE)
}

fn disable(rig: &mut Rig) -> Option<u8> {
    cmd(rig, command::DISABLE)
}

fn estop_cmd(rig: &mut Rig) -> Option<u8> {
    cmd(rig, command::ESTOP)
}

fn clear(rig: &mut Rig) -> Option<u8> {
    cmd(rig, command::CLEAR)
}

fn torque_on_2(rig: &mut Rig) -> Option<u8> {
    Some(rig.write(2, servo::TORQUE_ENABLE, &[1]))
}

fn goal_2(rig: &mut Rig) -> Option<u8> {
    Some(rig.write(2, servo::GOAL_POSITION, &rad_to_ticks(1.5).to_le_bytes()))
}

fn ping(rig: &mut Rig) -> Option<u8> {
    let answers = rig.send(BOARD, Command::Ping);
    Some(answers[0].1)
}

fn reboot(rig: &mut Rig) -> Option<u8> {
    let answers = rig.send(BOARD, Command::Reboot);
    assert_eq!(answers.len(), 1);
    Some(answers[0].1)
}

fn silence(rig: &mut Rig) -> Option<u8> {
    rig.advance_ms(100);
    None
}

fn silence_damp(rig: &mut Rig) -> Option<u8> {
    assert_eq!(
        rig.write(BOARD, board::SAFE_BEHAVIOUR, &[board::behaviour::DAMP]),
        0
    );
    silence(rig)
}

fn silence_limp(rig: &mut Rig) -> Option<u8> {
    assert_eq!(
        rig.write(BOARD, board::SAFE_BEHAVIOUR, &[board::behaviour::LIMP]),
        0
    );
    silence(rig)
}

fn hot(rig: &mut Rig) -> Option<u8> {
    rig.sensors.0.borrow_mut().servos[7].temperature_c = 71.0;
    rig.advance_ms(1);
    None
}

fn low_supply(rig: &mut Rig) -> Option<u8> {
    rig.sensors.0.borrow_mut().supply_mv = 6399;
    rig.advance_ms(50);
    None
}

fn imu_silent(rig: &mut Rig) -> Option<u8> {
    rig.sensors.0.borrow_mut().imu = None;
    rig.advance_ms(50);
    // Traffic keeps the watchdog (100 ms) quiet meanwhile.
    rig.send(BOARD, Command::Ping);
    rig.advance_ms(50);
    None
}

fn bad_feedback(rig: &mut Rig) -> Option<u8> {
    rig.set_position(12, -0.6);
    rig.advance_ms(10);
    None
}

fn rows() -> Vec<Row> {
    use SafetyState::*;
    let row = |state, event, setup, event_fn, error, next, faults, outputs| Row {
        state,
        event,
        setup,
        event_fn,
        error,
        next,
        faults,
        outputs,
    };
    vec![
        row(
            "boot",
            "self-check done",
            idle,
            nothing,
            None,
            Idle,
            0,
            Limp,
        ),
        row("idle", "ENABLE", idle, enable, Some(0), Enabled, 0, Track),
        row(
            "idle",
            "Torque Enable = 1 (ID 2)",
            idle,
            torque_on_2,
            Some(0),
            Enabled,
            0,
            TrackOnly(1),
        ),
        row("idle", "DISABLE", idle, disable, Some(0), Idle, 0, Limp),
        row("idle", "CLEAR", idle, clear, Some(0), Idle, 0, Limp),
        row("idle", "silence", idle, silence, None, Idle, 0, Limp),
        row(
            "idle",
            "E-STOP",
            idle,
            estop_cmd,
            Some(ALERT),
            EStop,
            fault::ESTOP,
            Limp,
        ),
        row(
            "enabled",
            "ENABLE",
            enabled,
            enable,
            Some(0),
            Enabled,
            0,
            Track,
        ),
        row(
            "enabled",
            "DISABLE",
            enabled,
            disable,
            Some(0),
            Idle,
            0,
            Limp,
        ),
        row(
            "enabled",
            "CLEAR",
            enabled,
            clear,
            Some(0),
            Enabled,
            0,
            Track,
        ),
        row(
            "enabled",
            "traffic",
            enabled,
            ping,
            Some(0),
            Enabled,
            0,
            Track,
        ),
        row(
            "enabled",
            "silence, Safe Behaviour hold",
            enabled,
            silence,
            None,
            Fault,
            fault::WATCHDOG,
            Hold,
        ),
        row(
            "enabled",
            "silence, Safe Behaviour damp",
            enabled,
            silence_damp,
            None,
            Fault,
            fault::WATCHDOG,
            Damp,
        ),
        row(
            "enabled",
            "silence, Safe Behaviour limp",
            enabled,
            silence_limp,
            None,
            Fault,
            fault::WATCHDOG,
            Limp,
        ),
        row(
            "enabled",
            "over-temperature",
            enabled,
            hot,
            None,
            Fault,
            fault::OVER_TEMPERATURE,
            Limp,
        ),
        row(
            "enabled",
            "under-voltage",
            enabled,
            low_supply,
            None,
            Fault,
            fault::UNDER_VOLTAGE,
            Limp,
        ),
        row(
            "enabled",
            "IMU silent",
            enabled,
            imu_silent,
            None,
            Fault,
            fault::IMU,
            Limp,
        ),
        row(
            "enabled",
            "implausible feedback",
            enabled,
            bad_feedback,
            None,
            Fault,
            fault::FEEDBACK,
            Limp,
        ),
        row(
            "enabled",
            "E-STOP",
            enabled,
            estop_cmd,
            Some(ALERT),
            EStop,
            fault::ESTOP,
            Damp,
        ),
        row("enabled", "REBOOT", enabled, reboot, Some(0), Idle, 0, Limp),
        row(
            "fault",
            "ENABLE",
            fault_hold,
            enable,
            Some(ALERT | FAIL),
            Fault,
            fault::WATCHDOG,
            Hold,
        ),
        row(
            "fault",
            "Torque Enable = 1",
            fault_hold,
            torque_on_2,
            Some(FAIL),
            Fault,
            fault::WATCHDOG,
            Hold,
        ),
        row(
            "fault",
            "Goal Position",
            fault_hold,
            goal_2,
            Some(FAIL),
            Fault,
            fault::WATCHDOG,
            Hold,
        ),
        row(
            "fault",
            "DISABLE",
            fault_hold,
            disable,
            Some(ALERT | FAIL),
            Fault,
            fault::WATCHDOG,
            Hold,
        ),
        row(
            "fault",
            "traffic",
            fault_hold,
            ping,
            Some(ALERT),
            Fault,
            fault::WATCHDOG,
            Hold,
        ),
        row(
            "fault",
            "another fault",
            fault_hold,
            hot,
            None,
            Fault,
            fault::WATCHDOG | fault::OVER_TEMPERATURE,
            Limp,
        ),
        row(
            "fault",
            "E-STOP",
            fault_hold,
            estop_cmd,
            Some(ALERT),
            EStop,
            fault::WATCHDOG | fault::ESTOP,
            Damp,
        ),
        row(
            "fault",
            "REBOOT",
            fault_hold,
            reboot,
            Some(ALERT),
            Fault,
            fault::WATCHDOG,
            Limp,
        ),
        row("fault", "CLEAR", fault_hold, clear, Some(0), Idle, 0, Limp),
        row(
            "e-stop",
            "ENABLE",
            estop,
            enable,
            Some(ALERT | FAIL),
            EStop,
            fault::ESTOP,
            Damp,
        ),
        row(
            "e-stop",
            "Torque Enable = 1",
            estop,
            torque_on_2,
            Some(FAIL),
            EStop,
            fault::ESTOP,
            Damp,
        ),
        row(
            "e-stop",
            "Goal Position",
            estop,
            goal_2,
            Some(FAIL),
            EStop,
            fault::ESTOP,
            Damp,
        ),
        row(
            "e-stop",
            "DISABLE",
            estop,
            disable,
            Some(ALERT | FAIL),
            EStop,
            fault::ESTOP,
            Damp,
        ),
        row(
            "e-stop",
            "traffic",
            estop,
            ping,
            Some(ALERT),
            EStop,
            fault::ESTOP,
            Damp,
        ),
        row(
            "e-stop",
            "silence",
            estop,
            silence,
            None,
            EStop,
            fault::ESTOP,
            Damp,
        ),
        row(
            "e-stop",
            "another fault",
            estop,
            low_supply,
            None,
            EStop,
            fault::ESTOP | fault::UNDER_VOLTAGE,
            Limp,
        ),
        row(
            "e-stop",
            "E-STOP",
            estop,
            estop_cmd,
            Some(ALERT),
            EStop,
            fault::ESTOP,
            Damp,
        ),
        row(
            "e-stop",
            "REBOOT",
            estop,
            reboot,
            Some(ALERT),
            EStop,
            fault::ESTOP,
            Limp,
        ),
        row("e-stop", "CLEAR", estop, clear, Some(0), Idle, 0, Limp),
    ]
}

/// Joint angle each output commands, `None` without pulses.
fn angles(rig: &Rig, config: &FirmwareConfig) -> [Option<f32>; 16] {
    std::array::from_fn(|i| {
        let p = rig.pulse(i);
        (p != 0).then(|| config.servos[i].calibration.angle_rad(p as f32))
    })
}

/// Drives the board for 30 ms with goals near each joint's upper end and the joints pushed
/// towards their lower end, and says what the outputs did.
fn observe(rig: &mut Rig, config: &FirmwareConfig, row: &str) -> [Outputs; 16] {
    rig.advance_ms(2);
    let before = angles(rig, config);
    let mut raw = Vec::new();
    for (i, c) in config.servos.iter().enumerate() {
        raw.push(i as u8 + 1);
        raw.extend_from_slice(
            &rad_to_ticks(c.min_rad + 0.9 * (c.max_rad - c.min_rad)).to_le_bytes(),
        );
    }
    rig.send(
        0xFE,
        Command::SyncWrite(SyncWrite {
            address: servo::GOAL_POSITION,
            length: 4,
            raw: &raw,
        }),
    );
    let measured = |i: usize| {
        let c = &config.servos[i];
        c.min_rad + 0.1 * (c.max_rad - c.min_rad)
    };
    rig.set_positions(measured);
    rig.advance_ms(30);
    let after = angles(rig, config);
    std::array::from_fn(|i| match (before[i], after[i]) {
        (_, None) => Limp,
        (None, Some(_)) => panic!("{row}: servo {i} started pulsing"),
        (Some(b), Some(a)) => {
            let moved = a - b;
            if moved.abs() < 0.01 {
                Hold
            } else if moved > 0.2 {
                // 30 ticks of 8 mrad towards the goal.
                Track
            } else if moved < 0.0 && a > measured(i) {
                Damp
            } else {
                panic!("{row}: servo {i}: {b} -> {a}")
            }
        }
    })
}

#[test]
fn every_row_of_the_safety_rules_table() {
    let config = config();
    let mut failures = Vec::new();
    for r in rows() {
        let mut rig = Rig::new(config.clone());
        (r.setup)(&mut rig);
        let error = (r.event_fn)(&mut rig);
        let state = rig.fw.controller().state();
        let faults = rig.fw.controller().faults();
        let outputs = observe(&mut rig, &config, &format!("{} + {}", r.state, r.event));
        let expected: [Outputs; 16] = match r.outputs {
            TrackOnly(s) => std::array::from_fn(|i| if i == s { Track } else { Limp }),
            o => [o; 16],
        };
        if (error, state, faults, outputs) != (r.error, r.next, r.faults, expected) {
            failures.push(format!(
                "{} + {}: got error {error:?}, {state:?}, faults {faults:#x}, outputs {outputs:?}; \
                 expected error {:?}, {:?}, faults {:#x}, outputs {:?}",
                r.state, r.event, r.error, r.next, r.faults, r.outputs
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The rows of the table in PROTOCOL.md are the rows of this test, in the same order.
#[test]
fn the_documented_table_matches_the_test() {
    let doc = include_str!("../../PROTOCOL.md");
    let start = doc
        .find("### Safety rules")
        .expect("no Safety rules section");
    let documented: Vec<(String, String)> = doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| state"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].to_string(), cells[2].to_string())
        })
        .collect();
    let tested: Vec<(String, String)> = rows()
        .iter()
        .map(|r| (r.state.to_string(), r.event.to_string()))
        .collect();
    assert_eq!(documented, tested);
}
