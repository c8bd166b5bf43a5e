//! Units on the wire and the robot's device IDs.

use core::f32::consts::TAU;

/// Position ticks per turn, as X-series: 2048 is 0 rad.
pub const TICKS_PER_TURN: i32 = 4096;
pub const CENTER_TICKS: i32 = 2048;
/// Velocity unit of X-series: 0.229 rpm.
pub const VELOCITY_UNIT_RPM: f32 = 0.229;

pub fn rad_to_ticks(rad: f32) -> i32 {
    CENTER_TICKS + libm_round(rad * TICKS_PER_TURN as f32 / TAU)
}

pub fn ticks_to_rad(ticks: i32) -> f32 {
    (ticks - CENTER_TICKS) as f32 * TAU / TICKS_PER_TURN as f32
}

pub fn rad_per_s_to_velocity_units(rad_s: f32) -> i32 {
    libm_round(rad_s * 60.0 / TAU / VELOCITY_UNIT_RPM)
}

pub fn velocity_units_to_rad_per_s(units: i32) -> f32 {
    units as f32 * VELOCITY_UNIT_RPM * TAU / 60.0
}

/// The board's i16 registers (protocol/src/table/board.rs and the servo mirror): what the
/// firmware renders and the runtime decodes, so both sides (and the simulator's board sensor
/// path) quantise the same way.
pub mod registers {
    use super::{libm_round, rad_per_s_to_velocity_units, rad_to_ticks};

    /// Gyro register LSB per rad/s (1 mrad/s), accelerometer LSB per m/s² (0.01 m/s²),
    /// quaternion LSB per unit (Q14).
    pub const GYRO_PER_RAD_S: f32 = 1000.0;
    pub const ACCEL_PER_M_S2: f32 = 100.0;
    pub const QUAT_PER_UNIT: f32 = 16384.0;
    /// The same scales read back (SI per LSB), as the runtime decodes them.
    pub const GYRO_RAD_S: f64 = 1e-3;
    pub const ACCEL_M_S2: f64 = 0.01;
    pub const QUAT: f64 = 1.0 / 16384.0;
    /// HIL Sensors (`board::HIL_SENSORS`): position LSB per rad (0.1 mrad) and current LSB per
    /// mA; its gyro and accelerometer use the scales above.
    pub const HIL_POSITION_PER_RAD: f32 = 1e4;
    pub const HIL_CURRENT_PER_MA: f32 = 1.0;

    /// `value` in a register of `per_unit` LSB per unit, rounded and saturating.
    pub fn encode(value: f32, per_unit: f32) -> i16 {
        i16_register(value * per_unit)
    }

    /// A HIL Sensors value: as [`encode`], but saturating short of `i16::MIN`, which the
    /// block keeps for a silent IMU (`board::HIL_IMU_SILENT`).
    pub fn encode_hil(value: f32, per_unit: f32) -> i16 {
        encode(value, per_unit).max(-i16::MAX)
    }

    /// The value a register of `per_unit` LSB per unit holds.
    pub fn decode(raw: i16, per_unit: f32) -> f32 {
        f32::from(raw) / per_unit
    }

    /// A value rounded into an i16 register, saturating.
    pub fn i16_register(v: f32) -> i16 {
        libm_round(v).clamp(i16::MIN as i32, i16::MAX as i32) as i16
    }

    /// Position ticks of a measured angle as the servo mirror holds them; a dead sensor's
    /// infinity must not overflow.
    pub fn position_ticks(rad: f32) -> i32 {
        rad_to_ticks(rad.clamp(-1.0e5, 1.0e5))
    }

    /// The servo mirror's position register (i16 ticks).
    pub fn position_register(rad: f32) -> i16 {
        position_ticks(rad).clamp(i16::MIN as i32, i16::MAX as i32) as i16
    }

    /// The servo mirror's velocity register (i16, 0.229 rpm units).
    pub fn velocity_register(rad_s: f32) -> i16 {
        rad_per_s_to_velocity_units(rad_s).clamp(i16::MIN as i32, i16::MAX as i32) as i16
    }
}

/// Round half away from zero without std (no `f32::round` in core on stable).
pub fn libm_round(x: f32) -> i32 {
    if x >= 0.0 {
        (x + 0.5) as i32
    } else {
        (x - 0.5) as i32
    }
}

/// Device IDs of the claw-foot robot.
pub mod ids {
    /// Legs in FL, FR, RL, RR order, each hip abduction, hip pitch, knee: IDs 1-12.
    pub const FIRST_LEG_JOINT: u8 = 1;
    /// Claws FL, FR, RL, RR: IDs 13-16.
    pub const FIRST_CLAW: u8 = 13;
    pub const SERVO_COUNT: usize = 16;
    pub const BOARD: u8 = 100;

    /// Servo index (0-15) of a device ID, if it is a servo.
    pub fn servo_index(id: u8) -> Option<usize> {
        (1..=SERVO_COUNT as u8)
            .contains(&id)
            .then(|| (id - 1) as usize)
    }

    pub fn servo_id(index: usize) -> u8 {
        index as u8 + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_positions() {
        assert_eq!(rad_to_ticks(0.0), 2048);
        assert_eq!(rad_to_ticks(core::f32::consts::PI), 4096);
        assert_eq!(rad_to_ticks(-core::f32::consts::FRAC_PI_2), 1024);
        assert!((ticks_to_rad(3072) - core::f32::consts::FRAC_PI_2).abs() < 1e-6);
    }
}
