//! Control table of the board device (ID 100): safety state machine, watchdog, IMU, supply,
//! fault log, HIL registers, and a mirror of every servo's present state so one READ fetches the
//! whole robot.

use super::Field;

pub const MODEL_NUMBER: u16 = 0xC1B0;

pub const MODEL_NUMBER_ADDR: u16 = 0;
pub const FIRMWARE_VERSION: u16 = 6;
pub const ID: u16 = 7;
/// Write-only in effect (reads 0): one of [`command`].
pub const SAFETY_COMMAND: u16 = 64;
/// One of [`state`].
pub const SAFETY_STATE: u16 = 65;
/// Latched causes, bits of [`fault`].
pub const FAULT_FLAGS: u16 = 66;
pub const WATCHDOG_TIMEOUT_MS: u16 = 68;
/// One of [`behaviour`], used when the watchdog trips.
pub const SAFE_BEHAVIOUR: u16 = 70;
pub const SERVO_COUNT: u16 = 71;
pub const SUPPLY_MV: u16 = 72;
pub const MIN_SUPPLY_MV: u16 = 74;
pub const MAX_TEMPERATURE: u16 = 76;
pub const IMU_STATUS: u16 = 77;
/// Gyro x, y, z: i16, 1 mrad/s.
pub const GYRO: u16 = 80;
/// Accelerometer x, y, z: i16, 0.01 m/s^2.
pub const ACCEL: u16 = 86;
/// Orientation quaternion w, x, y, z: i16, 1/16384.
pub const QUATERNION: u16 = 92;
pub const TICK_COUNT: u16 = 104;
pub const UPTIME_US: u16 = 108;
/// HIL: bits of [`fault`] forced on, to test fault handling end to end.
pub const HIL_FAULT_INJECT: u16 = 112;
/// HIL: non-zero when the board's sensors come from a simulator.
pub const HIL_SIMULATED: u16 = 113;
/// HIL: 1 = hardware in the loop on a real board: the sensors are [`HIL_SENSORS`] as the
/// simulator last wrote them, the servo outputs stay off, and the pulses they would put out
/// read back at [`HIL_OUTPUTS`]; 0 = the board's own sensors and outputs. Written only while
/// the board is Idle; REBOOT returns it to 0.
pub const HIL_MODE: u16 = 114;
/// Number of entries written to the fault log since boot (wraps at 255).
pub const FAULT_LOG_COUNT: u16 = 127;
/// 8 entries of 6 bytes, oldest overwritten: code (bit of [`fault`] as index), servo ID or 0,
/// time in ms since boot (u32).
pub const FAULT_LOG: u16 = 128;
pub const FAULT_LOG_ENTRIES: u16 = 8;
pub const FAULT_LOG_ENTRY_LEN: u16 = 6;
/// Per servo (ID order 1..=16): present position i16 (ticks), velocity i16 (0.229 rpm),
/// current i16 (mA).
pub const SERVO_MIRROR: u16 = 192;
pub const SERVO_MIRROR_ENTRY_LEN: u16 = 6;
pub const SERVO_MIRROR_LEN: u16 = 16 * SERVO_MIRROR_ENTRY_LEN;
/// HIL inputs, written whole by the simulator (only in [`HIL_MODE`]): per servo (ID order)
/// position i16 (0.1 mrad, through the servo's calibration) and current i16 (mA); then gyro
/// x, y, z i16 (1 mrad/s), accelerometer x, y, z i16 (0.01 m/s^2), supply u16 (mV). Servo
/// temperature reads a nominal 35 C. An accelerometer x of [`HIL_IMU_SILENT`] is an IMU that
/// did not answer (a real reading is clamped to +-32767).
pub const HIL_SENSORS: u16 = 320;
pub const HIL_SERVO_ENTRY_LEN: u16 = 4;
pub const HIL_GYRO: u16 = HIL_SENSORS + 16 * HIL_SERVO_ENTRY_LEN;
pub const HIL_ACCEL: u16 = HIL_GYRO + 6;
pub const HIL_SUPPLY: u16 = HIL_ACCEL + 6;
pub const HIL_SENSORS_LEN: u16 = HIL_SUPPLY + 2 - HIL_SENSORS;
/// Accelerometer x in [`HIL_SENSORS`] for a simulated IMU that does not answer: the board
/// reads it as a failed IMU, as it would its own silent chip.
pub const HIL_IMU_SILENT: i16 = i16::MIN;
/// HIL outputs: the tick count (u32) of the tick that computed them, then per servo the pulse
/// width it would put out, u16 in 0.1 us (0 = no pulses).
pub const HIL_OUTPUTS: u16 = 400;
pub const HIL_OUTPUTS_LEN: u16 = 4 + 16 * 2;
/// A simulator that stops writing [`HIL_SENSORS`] for this long is a dead sensor: the IMU
/// reads as failed (and trips its fault as a silent IMU would).
pub const HIL_STALE_MS: u16 = 50;
pub const TABLE_LEN: u16 = HIL_OUTPUTS + HIL_OUTPUTS_LEN;

/// One READ from GYRO to the servo mirror's end: IMU, supply, state and every servo.
pub const ROBOT_STATE: u16 = GYRO;
pub const ROBOT_STATE_LEN: u16 = SERVO_MIRROR + SERVO_MIRROR_LEN - GYRO;

pub mod command {
    pub const ENABLE: u8 = 1;
    pub const DISABLE: u8 = 2;
    pub const ESTOP: u8 = 3;
    pub const CLEAR: u8 = 4;
}

pub mod state {
    pub const BOOT: u8 = 0;
    pub const IDLE: u8 = 1;
    pub const ENABLED: u8 = 2;
    pub const FAULT: u8 = 3;
    pub const ESTOP: u8 = 4;
}

pub mod fault {
    pub const WATCHDOG: u16 = 1 << 0;
    pub const OVER_TEMPERATURE: u16 = 1 << 1;
    pub const UNDER_VOLTAGE: u16 = 1 << 2;
    pub const IMU: u16 = 1 << 3;
    pub const ESTOP: u16 = 1 << 4;
    pub const FEEDBACK: u16 = 1 << 5;
}

pub mod behaviour {
    pub const HOLD: u8 = 0;
    pub const DAMP: u8 = 1;
    pub const LIMP: u8 = 2;
}

pub const FIELDS: &[Field] = &[
    Field::ro(MODEL_NUMBER_ADDR, 2, "Model Number"),
    Field::ro(FIRMWARE_VERSION, 1, "Firmware Version"),
    Field::ro(ID, 1, "ID"),
    Field::rw(SAFETY_COMMAND, 1, "Safety Command"),
    Field::ro(SAFETY_STATE, 1, "Safety State"),
    Field::ro(FAULT_FLAGS, 2, "Fault Flags"),
    Field::rw(WATCHDOG_TIMEOUT_MS, 2, "Watchdog Timeout"),
    Field::rw(SAFE_BEHAVIOUR, 1, "Safe Behaviour"),
    Field::ro(SERVO_COUNT, 1, "Servo Count"),
    Field::ro(SUPPLY_MV, 2, "Supply Voltage"),
    Field::ro(MIN_SUPPLY_MV, 2, "Min Supply Voltage"),
    Field::ro(MAX_TEMPERATURE, 1, "Max Temperature"),
    Field::ro(IMU_STATUS, 1, "IMU Status"),
    Field::ro(GYRO, 6, "Gyro"),
    Field::ro(ACCEL, 6, "Accelerometer"),
    Field::ro(QUATERNION, 8, "Orientation"),
    Field::ro(TICK_COUNT, 4, "Tick Count"),
    Field::ro(UPTIME_US, 4, "Uptime"),
    Field::rw(HIL_FAULT_INJECT, 1, "HIL Fault Inject"),
    Field::ro(HIL_SIMULATED, 1, "HIL Simulated"),
    Field::rw(HIL_MODE, 1, "HIL Mode"),
    Field::ro(FAULT_LOG_COUNT, 1, "Fault Log Count"),
    Field::ro(
        FAULT_LOG,
        (FAULT_LOG_ENTRIES * FAULT_LOG_ENTRY_LEN) as u8,
        "Fault Log",
    ),
    Field::ro(SERVO_MIRROR, SERVO_MIRROR_LEN as u8, "Servo Mirror"),
    Field::rw(HIL_SENSORS, HIL_SENSORS_LEN as u8, "HIL Sensors"),
    Field::ro(HIL_OUTPUTS, HIL_OUTPUTS_LEN as u8, "HIL Outputs"),
];
