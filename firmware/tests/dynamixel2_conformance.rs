//! Conformance with a master nobody here wrote: the `dynamixel2` crate opens the virtual board's
//! pseudo-terminal as a serial port and pings, reads, writes and sync-writes it.

use clawrl_firmware::pwm::PulseCalibration;
use clawrl_firmware::virtual_board::{ServoModel, VirtualBoard};
use clawrl_firmware::{FirmwareConfig, SafetyState};
use clawrl_protocol::table::{board, servo};
use clawrl_protocol::units::{rad_to_ticks, ticks_to_rad};
use dynamixel2::Bus;
use dynamixel2::instructions::SyncWriteData;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// One board at a time: dynamixel2 allows 34 ms plus the wire time for an answer, and a
/// 2-core CI machine running many boards and masters at once can miss that.
static SERIAL: Mutex<()> = Mutex::new(());

type Started = (MutexGuard<'static, ()>, VirtualBoard, Bus<Vec<u8>, Vec<u8>>);

/// A booted virtual board and a dynamixel2 master on its pty. The pty ignores the baud rate;
/// dynamixel2 derives its answer timeouts from it, so a low rate gives a loaded machine slack.
fn start_at(baud: u32) -> Started {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let config = FirmwareConfig {
        watchdog_ms: 1000,
        ..FirmwareConfig::claw_foot()
    };
    let board = VirtualBoard::spawn_on_pty(config.clone(), ServoModel::new(&config)).unwrap();
    let booted = board.wait_for(Duration::from_secs(5), |o| {
        o.state == SafetyState::Idle && o.ticks > 0
    });
    booted.expect("board did not boot");
    let bus = Bus::open(board.path(), baud).unwrap();
    (guard, board, bus)
}

fn start() -> Started {
    start_at(9600)
}

#[test]
fn ping_answers_model_and_firmware() {
    let (_guard, _board, mut bus) = start();
    let servo_ping = bus.ping(1).unwrap();
    assert_eq!(
        (
            servo_ping.motor_id,
            servo_ping.data.model,
            servo_ping.data.firmware
        ),
        (1, servo::MODEL_NUMBER, 1)
    );
    let board_ping = bus.ping(100).unwrap();
    assert_eq!(board_ping.data.model, board::MODEL_NUMBER);
    assert!(bus.ping(42).is_err(), "no device 42 on this board");
}

#[test]
fn scan_finds_all_seventeen_devices() {
    let (_guard, _board, mut bus) = start_at(115_200);
    let found: Vec<u8> = bus
        .scan()
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap().motor_id)
        .collect();
    let mut expected: Vec<u8> = (1..=16).collect();
    expected.push(100);
    assert_eq!(found, expected);
}

#[test]
fn reads_the_control_tables() {
    let (_guard, _board, mut bus) = start();
    assert_eq!(bus.read_u8(7, servo::ID).unwrap().data, 7);
    assert_eq!(
        bus.read_u16(1, servo::MODEL_NUMBER_ADDR).unwrap().data,
        servo::MODEL_NUMBER
    );
    // The servo model starts the knee (ID 3) mid-range at -1.6 rad.
    let knee = bus.read_u32(3, servo::PRESENT_POSITION).unwrap().data as i32;
    assert_eq!(knee, rad_to_ticks(-1.6));
    assert_eq!(
        bus.read_u8(100, board::SAFETY_STATE).unwrap().data,
        board::state::IDLE
    );
    assert_eq!(bus.read_u8(100, board::HIL_SIMULATED).unwrap().data, 1);
    let limits = bus.read(3, servo::MAX_POSITION_LIMIT, 8).unwrap().data;
    let max = i32::from_le_bytes(limits[0..4].try_into().unwrap());
    let min = i32::from_le_bytes(limits[4..8].try_into().unwrap());
    assert_eq!((min, max), (rad_to_ticks(-2.6), rad_to_ticks(-0.6)));
    // An error status comes back as a motor error with the Dynamixel error number.
    match bus.read(1, 140, 20) {
        Err(dynamixel2::TransferError::ReadError(dynamixel2::ReadError::MotorError(e))) => {
            assert_eq!(e.error_number(), 7)
        }
        other => panic!("expected an access error, got {other:?}"),
    }
}

#[test]
fn sync_write_moves_the_servos_and_sync_read_sees_them_arrive() {
    let (_guard, board, mut bus) = start();
    assert_eq!(
        bus.write_u8(100, board::SAFETY_COMMAND, board::command::ENABLE)
            .unwrap()
            .motor_id,
        100
    );
    // A leg pose for all 12 joints, and a knee goal beyond its limit that must be clamped.
    let pose = [0.1f32, 0.8, -1.5];
    let mut goals: Vec<(u8, f32)> = (0..12).map(|i| (i as u8 + 1, pose[i % 3])).collect();
    goals[2].1 = 0.5;
    let data: Vec<SyncWriteData<[u8; 4]>> = goals
        .iter()
        .map(|&(id, rad)| SyncWriteData {
            motor_id: id,
            data: (rad_to_ticks(rad) as u32).to_le_bytes(),
        })
        .collect();
    bus.sync_write(servo::GOAL_POSITION, 4, &data).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    let ids: Vec<u8> = (1..=12).collect();
    let present = bus.sync_read_u32(&ids, servo::PRESENT_POSITION).unwrap();
    for (response, &(id, goal)) in present.iter().zip(&goals) {
        assert_eq!(response.motor_id, id);
        let expected = if id == 3 { -0.6 } else { goal };
        let got = ticks_to_rad(response.data as i32);
        assert!(
            (got - expected).abs() < 0.01,
            "servo {id}: at {got} rad, goal {expected}"
        );
    }
    // What reached the outputs: the clamped knee pulse.
    let observed = board.observed();
    assert_eq!(observed.state, SafetyState::Enabled);
    let knee_pulse = observed.pulses_us[2].unwrap();
    assert!(
        (knee_pulse - PulseCalibration::DS3230.pulse_us(-0.6)).abs() < 0.1,
        "knee pulse {knee_pulse}"
    );
}

#[test]
fn a_silent_master_trips_the_watchdog() {
    let (_guard, board, mut bus) = start();
    bus.write_u16(100, board::WATCHDOG_TIMEOUT_MS, 50).unwrap();
    bus.write_u8(100, board::SAFE_BEHAVIOUR, board::behaviour::LIMP)
        .unwrap();
    bus.write_u8(1, servo::TORQUE_ENABLE, 1).unwrap();
    let tripped = board.wait_for(Duration::from_millis(500), |o| {
        o.state == SafetyState::Fault
    });
    let tripped = tripped.expect("watchdog never tripped");
    assert_eq!(tripped.faults, board::fault::WATCHDOG);
    assert!(
        tripped.pulses_us.iter().all(Option::is_none),
        "limp: no pulses"
    );
    // Goals are refused until CLEAR.
    assert!(bus.write_u32(1, servo::GOAL_POSITION, 2048).is_err());
    // The servos' own Bus Watchdogs were never switched on.
    assert_eq!(bus.read_u8(1, servo::BUS_WATCHDOG).unwrap().data, 0);
}

#[test]
fn a_bus_watchdog_written_with_dynamixel2_trips_as_on_an_x_series() {
    let (_guard, _board, mut bus) = start();
    bus.write_u16(100, board::WATCHDOG_TIMEOUT_MS, 1000)
        .unwrap();
    bus.write_u8(4, servo::TORQUE_ENABLE, 1).unwrap();
    bus.write_u8(4, servo::BUS_WATCHDOG, 3).unwrap();
    assert_eq!(bus.read_u8(4, servo::BUS_WATCHDOG).unwrap().data, 3);
    // Traffic to the board only, for longer than 60 ms.
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(20));
        bus.read_u8(100, board::SAFETY_STATE).unwrap();
    }
    assert_eq!(bus.read_u8(4, servo::BUS_WATCHDOG).unwrap().data, 0xFF);
    // Data Range (4), as a ROBOTIS servo answers it.
    match bus.write_u32(4, servo::GOAL_POSITION, 2048) {
        Err(dynamixel2::TransferError::ReadError(dynamixel2::ReadError::MotorError(e))) => {
            assert_eq!(e.error_number(), 4)
        }
        other => panic!("expected a Data Range error, got {other:?}"),
    }
    bus.write_u8(4, servo::BUS_WATCHDOG, 0).unwrap();
    bus.write_u32(4, servo::GOAL_POSITION, 2048).unwrap();
}

proptest::proptest! {
    /// Our CRC-16 agrees with dynamixel2's on arbitrary data.
    #[test]
    fn crc_matches_dynamixel2(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
        proptest::prop_assert_eq!(clawrl_protocol::crc::crc16(&data), dynamixel2::checksum::calculate_checksum(0, &data));
    }
}

#[test]
fn byte_stuffing_agrees_both_ways() {
    // D gain 0xFFFF then I gain 0x00FD: the parameters hold FF FF FD 00, which dynamixel2 must
    // stuff on the way in and the firmware must stuff on the way back.
    let (_guard, _board, mut bus) = start();
    let gains = [0xFF, 0xFF, 0xFD, 0x00, 0x20, 0x03];
    bus.write(5, servo::POSITION_D_GAIN, &gains).unwrap();
    let back = bus.read(5, servo::POSITION_D_GAIN, 6).unwrap().data;
    assert_eq!(back, gains);
}

#[test]
fn bulk_read_of_one_device() {
    // dynamixel2 0.9.1 writes the second and later BULK READ entries at offset `i` instead of
    // `5 * i` (bulk_read.rs), so only single-entry bulk reads are meaningful from it; multi-entry
    // BULK READ is covered by tests/safety.rs with clawrl's own encoder.
    let (_guard, _board, mut bus) = start();
    let reads = [dynamixel2::instructions::BulkReadData {
        motor_id: 100,
        address: board::ACCEL,
        count: 6,
    }];
    let answers = bus.bulk_read(&reads).unwrap();
    assert_eq!(answers[0].motor_id, 100);
    // The still IMU reads 9.81 m/s^2 up.
    assert_eq!(
        i16::from_le_bytes([answers[0].data[4], answers[0].data[5]]),
        981
    );
}
