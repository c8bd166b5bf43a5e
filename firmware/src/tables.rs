//! The control tables as the wire sees them: each device's registers rendered into bytes for
//! READs, and WRITEs applied register by register. A write is checked whole before anything
//! changes, so it lands entirely or not at all.

use crate::config::SafeBehaviour;
use crate::controller::{Controller, Sensors};
use crate::hal::ServoSample;
use crate::imu::{ImuError, ImuSample};
use crate::safety::SafetyState;
use clawrl_protocol::ErrorCode;
use clawrl_protocol::table::{self, Field, LayoutError, board, servo};
use clawrl_protocol::units::{self, ids, registers};

// hil_sensors reads HIL currents without a scale.
const _: () = assert!(registers::HIL_CURRENT_PER_MA == 1.0);

pub const FIRMWARE_VERSION: u8 = 1;
/// Largest table, so one buffer renders either.
pub const MAX_TABLE_LEN: usize = board::TABLE_LEN as usize;

fn put(out: &mut [u8], address: u16, bytes: &[u8]) {
    out[address as usize..address as usize + bytes.len()].copy_from_slice(bytes);
}

/// Position ticks of a measured angle; a dead sensor's infinity must not overflow.
fn present_ticks(rad: f32) -> i32 {
    registers::position_ticks(rad)
}

/// A position register as written (4 bytes, signed ticks as X-series) in rad. Values far beyond
/// any joint are cut first: `i32::MIN - 2048` must not overflow (found by fuzzing).
fn written_rad(value: u32) -> f32 {
    units::ticks_to_rad((value as i32).clamp(-1_000_000, 1_000_000))
}

fn clamp_i16(v: f32) -> i16 {
    registers::i16_register(v)
}

fn layout_error(e: LayoutError) -> ErrorCode {
    match e {
        LayoutError::Misaligned => ErrorCode::DataLength,
        LayoutError::ReadOnly => ErrorCode::Access,
    }
}

impl Controller {
    /// Renders servo `index`'s table; returns its length.
    pub fn render_servo(&self, index: usize, out: &mut [u8; MAX_TABLE_LEN]) -> usize {
        let s = &self.servos[index];
        out.fill(0);
        put(
            out,
            servo::MODEL_NUMBER_ADDR,
            &servo::MODEL_NUMBER.to_le_bytes(),
        );
        put(out, servo::FIRMWARE_VERSION, &[FIRMWARE_VERSION]);
        put(out, servo::ID, &[self.config.servos[index].id]);
        // Baud rate register 7 = 4.5 Mbaud in X-series codes; the virtual board ignores it.
        put(out, servo::BAUD_RATE, &[4]);
        put(out, servo::OPERATING_MODE, &[servo::POSITION_CONTROL_MODE]);
        put(out, servo::TEMPERATURE_LIMIT, &[s.temperature_limit_c]);
        put(out, servo::MAX_VOLTAGE_LIMIT, &160u16.to_le_bytes());
        put(
            out,
            servo::MIN_VOLTAGE_LIMIT,
            &(self.config.min_supply_mv / 100).to_le_bytes(),
        );
        put(
            out,
            servo::MAX_POSITION_LIMIT,
            &units::rad_to_ticks(s.max_rad).to_le_bytes(),
        );
        put(
            out,
            servo::MIN_POSITION_LIMIT,
            &units::rad_to_ticks(s.min_rad).to_le_bytes(),
        );
        put(out, servo::TORQUE_ENABLE, &[s.torque_enabled as u8]);
        put(out, servo::LED, &[s.led]);
        put(out, servo::STATUS_RETURN_LEVEL, &[2]);
        put(out, servo::HARDWARE_ERROR_STATUS, &[s.hw_error]);
        put(out, servo::POSITION_D_GAIN, &s.gains[2].to_le_bytes());
        put(out, servo::POSITION_I_GAIN, &s.gains[1].to_le_bytes());
        put(out, servo::POSITION_P_GAIN, &s.gains[0].to_le_bytes());
        put(out, servo::BUS_WATCHDOG, &[s.bus_watchdog.register()]);
        put(
            out,
            servo::GOAL_POSITION,
            &units::rad_to_ticks(s.goal_rad).to_le_bytes(),
        );
        put(
            out,
            servo::REALTIME_TICK,
            &((self.now_us / 1000) as u16 % 32768).to_le_bytes(),
        );
        put(out, servo::MOVING, &[(s.velocity_rad_s.abs() > 0.05) as u8]);
        put(
            out,
            servo::PRESENT_PWM,
            &clamp_i16(s.pulse_us).to_le_bytes(),
        );
        put(
            out,
            servo::PRESENT_CURRENT,
            &clamp_i16(s.present.current_ma).to_le_bytes(),
        );
        put(
            out,
            servo::PRESENT_VELOCITY,
            &units::rad_per_s_to_velocity_units(s.velocity_rad_s).to_le_bytes(),
        );
        put(
            out,
            servo::PRESENT_POSITION,
            &present_ticks(s.present.position_rad).to_le_bytes(),
        );
        put(
            out,
            servo::PRESENT_INPUT_VOLTAGE,
            &(self.supply_mv / 100).to_le_bytes(),
        );
        put(
            out,
            servo::PRESENT_TEMPERATURE,
            &[s.present.temperature_c.clamp(0.0, 255.0) as u8],
        );
        servo::TABLE_LEN as usize
    }

    /// Renders the board's table; returns its length.
    pub fn render_board(&self, out: &mut [u8; MAX_TABLE_LEN]) -> usize {
        out.fill(0);
        put(
            out,
            board::MODEL_NUMBER_ADDR,
            &board::MODEL_NUMBER.to_le_bytes(),
        );
        put(out, board::FIRMWARE_VERSION, &[FIRMWARE_VERSION]);
        put(out, board::ID, &[ids::BOARD]);
        put(out, board::SAFETY_STATE, &[self.safety.state().register()]);
        put(out, board::FAULT_FLAGS, &self.safety.faults().to_le_bytes());
        put(
            out,
            board::WATCHDOG_TIMEOUT_MS,
            &self.safety.watchdog_ms().to_le_bytes(),
        );
        put(
            out,
            board::SAFE_BEHAVIOUR,
            &[self.safety.watchdog_behaviour().register()],
        );
        put(out, board::SERVO_COUNT, &[ids::SERVO_COUNT as u8]);
        put(out, board::SUPPLY_MV, &self.supply_mv.to_le_bytes());
        put(
            out,
            board::MIN_SUPPLY_MV,
            &self.config.min_supply_mv.to_le_bytes(),
        );
        put(
            out,
            board::MAX_TEMPERATURE,
            &[self.config.max_temperature_c],
        );
        put(out, board::IMU_STATUS, &[self.imu_ok as u8]);
        self.render_imu(out);
        put(out, board::TICK_COUNT, &self.tick_count.to_le_bytes());
        put(out, board::UPTIME_US, &(self.now_us as u32).to_le_bytes());
        put(out, board::HIL_FAULT_INJECT, &[self.fault_inject]);
        put(
            out,
            board::HIL_SIMULATED,
            &[(self.simulated || self.hil.mode) as u8],
        );
        put(out, board::HIL_MODE, &[self.hil.mode as u8]);
        put(out, board::HIL_SENSORS, &self.hil.raw);
        put(out, board::HIL_OUTPUTS, &self.tick_count.to_le_bytes());
        // Per channel, as the outputs would carry them.
        for (s, c) in self.servos.iter().zip(&self.config.servos) {
            let tenths = units::libm_round(s.pulse_us * 10.0).clamp(0, u16::MAX as i32) as u16;
            put(
                out,
                board::HIL_OUTPUTS + 4 + 2 * u16::from(c.channel),
                &tenths.to_le_bytes(),
            );
        }
        put(out, board::FAULT_LOG_COUNT, &[self.fault_log.count()]);
        for (i, (code, id, ms)) in self.fault_log.entries().iter().enumerate() {
            let at = board::FAULT_LOG + i as u16 * board::FAULT_LOG_ENTRY_LEN;
            put(out, at, &[*code, *id]);
            put(out, at + 2, &ms.to_le_bytes());
        }
        self.render_mirror(out);
        board::TABLE_LEN as usize
    }

    fn render_imu(&self, out: &mut [u8]) {
        for axis in 0..3 {
            let a = axis as u16 * 2;
            put(
                out,
                board::GYRO + a,
                &clamp_i16(self.imu.gyro_rad_s[axis] * registers::GYRO_PER_RAD_S).to_le_bytes(),
            );
            put(
                out,
                board::ACCEL + a,
                &clamp_i16(self.imu.accel_m_s2[axis] * registers::ACCEL_PER_M_S2).to_le_bytes(),
            );
        }
        for (i, c) in self.filter.quaternion().iter().enumerate() {
            put(
                out,
                board::QUATERNION + 2 * i as u16,
                &clamp_i16(c * registers::QUAT_PER_UNIT).to_le_bytes(),
            );
        }
    }

    /// Every servo's present state, so one board READ returns the whole robot.
    fn render_mirror(&self, out: &mut [u8]) {
        for (i, s) in self.servos.iter().enumerate() {
            let at = board::SERVO_MIRROR + i as u16 * board::SERVO_MIRROR_ENTRY_LEN;
            let ticks = registers::position_register(s.present.position_rad);
            let velocity = registers::velocity_register(s.velocity_rad_s);
            put(out, at, &ticks.to_le_bytes());
            put(out, at + 2, &velocity.to_le_bytes());
            put(out, at + 4, &clamp_i16(s.present.current_ma).to_le_bytes());
        }
    }

    /// WRITE to servo `index`.
    pub fn write_servo(
        &mut self,
        index: usize,
        address: u16,
        data: &[u8],
    ) -> Result<(), ErrorCode> {
        let fields = table::fields_in_write(servo::FIELDS, address, data.len(), servo::TABLE_LEN)
            .map_err(layout_error)?;
        // Checked on a copy first: nothing changes unless every register accepts its value.
        let mut copy = self.servos[index];
        let mut torque = None;
        for field in fields.clone() {
            let value = table::field_value(field, address, data);
            self.check_servo_field(index, &mut copy, field, value, &mut torque)?;
        }
        if let Some(on) = torque {
            self.servo_torque(index, on)?;
            copy.torque_enabled = self.servos[index].torque_enabled;
            copy.commanded_rad = self.servos[index].commanded_rad;
            if on {
                copy.goal_rad = self.servos[index].goal_rad;
            }
        }
        // A goal in the same write as Torque Enable must win over the enable's reset.
        for field in fields.filter(|f| f.address == servo::GOAL_POSITION) {
            copy.set_goal(written_rad(table::field_value(field, address, data)));
        }
        self.servos[index] = copy;
        Ok(())
    }

    fn check_servo_field(
        &self,
        index: usize,
        s: &mut crate::servo::Servo,
        field: &Field,
        value: u32,
        torque: &mut Option<bool>,
    ) -> Result<(), ErrorCode> {
        let hard = &self.config.servos[index];
        match field.address {
            servo::TORQUE_ENABLE => match value {
                0 | 1 => *torque = Some(value == 1),
                _ => return Err(ErrorCode::DataRange),
            },
            servo::GOAL_POSITION => {
                if matches!(self.safety.state(), SafetyState::Fault | SafetyState::EStop) {
                    return Err(ErrorCode::ResultFail);
                }
                // X-series: after a Bus Watchdog error the goal is read-only (Data Range).
                if s.bus_watchdog.tripped() {
                    return Err(ErrorCode::DataRange);
                }
            }
            servo::BUS_WATCHDOG => s.bus_watchdog.write(value as u8)?,
            servo::MAX_POSITION_LIMIT | servo::MIN_POSITION_LIMIT => {
                // EEPROM-like, as X-series: only with torque off.
                if s.torque_enabled {
                    return Err(ErrorCode::Access);
                }
                let rad = written_rad(value);
                let (min, max) = if field.address == servo::MAX_POSITION_LIMIT {
                    (s.min_rad, rad)
                } else {
                    (rad, s.max_rad)
                };
                s.set_limits(min, max, hard)
                    .map_err(|_| ErrorCode::DataLimit)?;
            }
            servo::TEMPERATURE_LIMIT => {
                if value > self.config.max_temperature_c as u32 {
                    return Err(ErrorCode::DataLimit);
                }
                s.temperature_limit_c = value as u8;
            }
            servo::LED => s.led = value as u8,
            servo::POSITION_P_GAIN => s.gains[0] = value as u16,
            servo::POSITION_I_GAIN => s.gains[1] = value as u16,
            servo::POSITION_D_GAIN => s.gains[2] = value as u16,
            _ => return Err(ErrorCode::Access),
        }
        Ok(())
    }

    /// WRITE to the board.
    pub fn write_board(&mut self, address: u16, data: &[u8]) -> Result<(), ErrorCode> {
        let fields = table::fields_in_write(board::FIELDS, address, data.len(), board::TABLE_LEN)
            .map_err(layout_error)?;
        let raw = |f: &Field| {
            let start = (f.address - address) as usize;
            &data[start..start + f.size as usize]
        };
        for field in fields.clone() {
            self.board_field(field, raw(field), false)?;
        }
        for field in fields {
            self.board_field(field, raw(field), true)?;
        }
        Ok(())
    }

    /// The HIL Sensors block as written (see `board::HIL_SENSORS` for the units; currents are
    /// read as mA as they stand, which holds while [`registers::HIL_CURRENT_PER_MA`] is 1).
    fn hil_sensors(raw: &[u8]) -> Sensors {
        let i16_at = |k: usize| i16::from_le_bytes([raw[k], raw[k + 1]]) as f32;
        let servos = core::array::from_fn(|i| {
            let at = i * board::HIL_SERVO_ENTRY_LEN as usize;
            ServoSample {
                position_rad: i16_at(at) / registers::HIL_POSITION_PER_RAD,
                // One LSB is one mA (asserted below): no arithmetic to get wrong.
                current_ma: i16_at(at + 2),
                temperature_c: 35.0,
            }
        });
        let base = |a: u16| (a - board::HIL_SENSORS) as usize;
        let axes = |a: u16, scale: f32| core::array::from_fn(|k| i16_at(base(a) + 2 * k) * scale);
        let supply = base(board::HIL_SUPPLY);
        let silent = i16_at(base(board::HIL_ACCEL)) == f32::from(board::HIL_IMU_SILENT);
        let imu = if silent {
            Err(ImuError)
        } else {
            Ok(ImuSample {
                gyro_rad_s: axes(board::HIL_GYRO, 1.0 / registers::GYRO_PER_RAD_S),
                accel_m_s2: axes(board::HIL_ACCEL, 1.0 / registers::ACCEL_PER_M_S2),
            })
        };
        Sensors {
            servos,
            imu,
            supply_mv: u16::from_le_bytes([raw[supply], raw[supply + 1]]),
        }
    }

    fn board_field(&mut self, field: &Field, raw: &[u8], commit: bool) -> Result<(), ErrorCode> {
        // Every register but the HIL Sensors block carries a value of up to 4 bytes (`raw`
        // starts at the field); that block is taken from `raw` whole.
        let value = if field.address == board::HIL_SENSORS {
            0
        } else {
            table::field_value(field, field.address, raw)
        };
        match field.address {
            board::SAFETY_COMMAND if commit => self.safety_command(value as u8)?,
            board::SAFETY_COMMAND => {
                if !(board::command::ENABLE..=board::command::CLEAR).contains(&(value as u8)) {
                    return Err(ErrorCode::DataRange);
                }
            }
            board::WATCHDOG_TIMEOUT_MS => {
                let ms = value as u16;
                if !(self.config.watchdog_min_ms..=self.config.watchdog_max_ms).contains(&ms) {
                    return Err(ErrorCode::DataLimit);
                }
                if commit {
                    let _ = self.safety.set_watchdog_ms(ms, &self.config);
                }
            }
            board::SAFE_BEHAVIOUR => {
                let behaviour =
                    SafeBehaviour::from_register(value as u8).ok_or(ErrorCode::DataRange)?;
                if commit {
                    self.safety.set_watchdog_behaviour(behaviour);
                }
            }
            board::HIL_FAULT_INJECT => {
                if commit {
                    self.fault_inject = value as u8;
                }
            }
            board::HIL_SENSORS => {
                if commit {
                    self.hil.raw.copy_from_slice(raw);
                    // The block stands in for the wires: its entries are per channel, as
                    // the inputs `runner::read_sensors` reads; each servo takes its channel's.
                    let mut sensors = Self::hil_sensors(raw);
                    let by_channel = sensors.servos;
                    for (servo, c) in sensors.servos.iter_mut().zip(&self.config.servos) {
                        *servo = by_channel[usize::from(c.channel)];
                    }
                    self.hil.written = Some((sensors, self.now_us));
                }
            }
            board::HIL_MODE => {
                if value > 1 {
                    return Err(ErrorCode::DataRange);
                }
                // Only at rest: the sensors change under the safety checks. And only onto
                // values the simulator has just written, never onto none.
                let fresh = self.hil.fresh(self.now_us) || value == 0;
                if self.safety.state() != SafetyState::Idle || !fresh {
                    return Err(ErrorCode::ResultFail);
                }
                if commit {
                    self.hil.mode = value == 1;
                    // The simulator's values count from now, not from the next tick: an
                    // ENABLE in the same breath must start every goal where the simulated
                    // joint is.
                    if let Some((sensors, _)) = self.hil.written.filter(|_| self.hil.mode) {
                        self.observe(&sensors, 0.0);
                    }
                }
            }
            _ => return Err(ErrorCode::Access),
        }
        Ok(())
    }
}
