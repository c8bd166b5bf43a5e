//! Control table of each servo device (IDs 1-16): the X-series addresses, so tools written for
//! ROBOTIS X-series servos read and write them unchanged.

use super::Field;

/// Model number clawrl's servos answer PING with (not a ROBOTIS model).
pub const MODEL_NUMBER: u16 = 0xC1A0;

pub const MODEL_NUMBER_ADDR: u16 = 0;
pub const FIRMWARE_VERSION: u16 = 6;
pub const ID: u16 = 7;
pub const BAUD_RATE: u16 = 8;
pub const RETURN_DELAY_TIME: u16 = 9;
pub const OPERATING_MODE: u16 = 11;
pub const TEMPERATURE_LIMIT: u16 = 31;
pub const MAX_VOLTAGE_LIMIT: u16 = 32;
pub const MIN_VOLTAGE_LIMIT: u16 = 34;
pub const MAX_POSITION_LIMIT: u16 = 48;
pub const MIN_POSITION_LIMIT: u16 = 52;
pub const TORQUE_ENABLE: u16 = 64;
pub const LED: u16 = 65;
pub const STATUS_RETURN_LEVEL: u16 = 68;
pub const HARDWARE_ERROR_STATUS: u16 = 70;
pub const POSITION_D_GAIN: u16 = 80;
pub const POSITION_I_GAIN: u16 = 82;
pub const POSITION_P_GAIN: u16 = 84;
pub const BUS_WATCHDOG: u16 = 98;
pub const GOAL_POSITION: u16 = 116;
pub const REALTIME_TICK: u16 = 120;
pub const MOVING: u16 = 122;
pub const PRESENT_PWM: u16 = 124;
pub const PRESENT_CURRENT: u16 = 126;
pub const PRESENT_VELOCITY: u16 = 128;
pub const PRESENT_POSITION: u16 = 132;
pub const PRESENT_INPUT_VOLTAGE: u16 = 144;
pub const PRESENT_TEMPERATURE: u16 = 146;
/// One past the last register.
pub const TABLE_LEN: u16 = 147;

/// Present current, velocity and position in one 10-byte read, as X-series masters do.
pub const PRESENT_STATE: u16 = PRESENT_CURRENT;
pub const PRESENT_STATE_LEN: u16 = 10;

/// Operating mode the servos report: 3 = position control.
pub const POSITION_CONTROL_MODE: u8 = 3;

/// Bits of Hardware Error Status (70), X-series meaning.
pub mod hw_error {
    pub const INPUT_VOLTAGE: u8 = 1 << 0;
    pub const OVERHEATING: u8 = 1 << 2;
    pub const ENCODER: u8 = 1 << 3;
    pub const ELECTRICAL_SHOCK: u8 = 1 << 4;
    pub const OVERLOAD: u8 = 1 << 5;
}

pub const FIELDS: &[Field] = &[
    Field::ro(MODEL_NUMBER_ADDR, 2, "Model Number"),
    Field::ro(FIRMWARE_VERSION, 1, "Firmware Version"),
    Field::ro(ID, 1, "ID"),
    Field::ro(BAUD_RATE, 1, "Baud Rate"),
    Field::ro(RETURN_DELAY_TIME, 1, "Return Delay Time"),
    Field::ro(OPERATING_MODE, 1, "Operating Mode"),
    Field::rw(TEMPERATURE_LIMIT, 1, "Temperature Limit"),
    Field::ro(MAX_VOLTAGE_LIMIT, 2, "Max Voltage Limit"),
    Field::ro(MIN_VOLTAGE_LIMIT, 2, "Min Voltage Limit"),
    Field::rw(MAX_POSITION_LIMIT, 4, "Max Position Limit"),
    Field::rw(MIN_POSITION_LIMIT, 4, "Min Position Limit"),
    Field::rw(TORQUE_ENABLE, 1, "Torque Enable"),
    Field::rw(LED, 1, "LED"),
    Field::ro(STATUS_RETURN_LEVEL, 1, "Status Return Level"),
    Field::ro(HARDWARE_ERROR_STATUS, 1, "Hardware Error Status"),
    Field::rw(POSITION_D_GAIN, 2, "Position D Gain"),
    Field::rw(POSITION_I_GAIN, 2, "Position I Gain"),
    Field::rw(POSITION_P_GAIN, 2, "Position P Gain"),
    Field::rw(BUS_WATCHDOG, 1, "Bus Watchdog"),
    Field::rw(GOAL_POSITION, 4, "Goal Position"),
    Field::ro(REALTIME_TICK, 2, "Realtime Tick"),
    Field::ro(MOVING, 1, "Moving"),
    Field::ro(PRESENT_PWM, 2, "Present PWM"),
    Field::ro(PRESENT_CURRENT, 2, "Present Current"),
    Field::ro(PRESENT_VELOCITY, 4, "Present Velocity"),
    Field::ro(PRESENT_POSITION, 4, "Present Position"),
    Field::ro(PRESENT_INPUT_VOLTAGE, 2, "Present Input Voltage"),
    Field::ro(PRESENT_TEMPERATURE, 1, "Present Temperature"),
];
