//! The firmware's logic without hardware: safety state machine, servo channels, board registers.
//! The runner feeds it sensor readings each tick and decoded packets as they come; it answers
//! with pulse widths and status packets. Fuzzing and unit tests drive it directly.

use crate::config::{FirmwareConfig, SafeBehaviour};
use crate::hal::ServoSample;
use crate::imu::{ImuError, ImuSample, OrientationFilter};
use crate::safety::{FaultLog, Health, OutputMode, Safety, SafetyState};
use crate::servo::Servo;
use clawrl_protocol::ErrorCode;
use clawrl_protocol::table::board::{self, command};
use clawrl_protocol::units::ids::SERVO_COUNT;

/// One tick's sensor readings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sensors {
    pub servos: [ServoSample; SERVO_COUNT],
    pub imu: Result<ImuSample, ImuError>,
    pub supply_mv: u16,
}

/// Pulse width per servo output for this tick, `None` for no pulses (limp).
pub type Pulses = [Option<f32>; SERVO_COUNT];

pub struct Controller {
    pub(crate) config: FirmwareConfig,
    pub(crate) safety: Safety,
    pub(crate) servos: [Servo; SERVO_COUNT],
    pub(crate) imu: ImuSample,
    pub(crate) imu_ok: bool,
    pub(crate) filter: OrientationFilter,
    pub(crate) supply_mv: u16,
    pub(crate) tick_count: u32,
    pub(crate) now_us: u64,
    last_tick_us: Option<u64>,
    pub(crate) fault_log: FaultLog,
    pub(crate) fault_inject: u8,
    pub(crate) simulated: bool,
    pub(crate) hil: Hil,
}

/// Hardware in the loop on a real board (see `board::HIL_MODE`): the sensor values a simulator
/// last wrote, as they came over the wire and decoded, and when.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hil {
    pub(crate) mode: bool,
    pub(crate) raw: [u8; board::HIL_SENSORS_LEN as usize],
    pub(crate) written: Option<(Sensors, u64)>,
}

impl Default for Hil {
    fn default() -> Self {
        Self {
            mode: false,
            raw: [0; board::HIL_SENSORS_LEN as usize],
            written: None,
        }
    }
}

impl Hil {
    /// Whether the simulator's values are recent enough to run on.
    pub(crate) fn fresh(&self, now_us: u64) -> bool {
        self.written
            .is_some_and(|(_, at)| now_us.saturating_sub(at) <= board::HIL_STALE_MS as u64 * 1000)
    }

    /// This tick's sensors in HIL mode: the last values written; once they are stale the IMU
    /// reads as failed, as a sensor that stopped answering.
    fn sensors(&self, now_us: u64) -> Option<Sensors> {
        let (mut s, _) = self.written?;
        if !self.fresh(now_us) {
            s.imu = Err(ImuError);
        }
        Some(s)
    }
}

impl Controller {
    pub fn new(config: FirmwareConfig) -> Self {
        let servos = config
            .servos
            .map(|s| Servo::new(&s, config.max_temperature_c));
        Self {
            safety: Safety::new(&config),
            servos,
            config,
            imu: ImuSample::default(),
            imu_ok: false,
            filter: OrientationFilter::default(),
            supply_mv: 0,
            tick_count: 0,
            now_us: 0,
            last_tick_us: None,
            fault_log: FaultLog::default(),
            fault_inject: 0,
            simulated: false,
            hil: Hil::default(),
        }
    }

    pub fn config(&self) -> &FirmwareConfig {
        &self.config
    }

    pub fn state(&self) -> SafetyState {
        self.safety.state()
    }

    pub fn faults(&self) -> u16 {
        self.safety.faults()
    }

    pub fn servo(&self, index: usize) -> &Servo {
        &self.servos[index]
    }

    /// Marks the board's sensors as simulated (HIL Simulated register).
    pub fn set_simulated(&mut self, simulated: bool) {
        self.simulated = simulated;
    }

    /// Boot self-check: leaves Boot for Idle once sensors have been read.
    pub fn finish_boot(&mut self) {
        self.safety.boot_done();
    }

    /// A valid packet addressed to this board arrived.
    pub fn note_traffic(&mut self, now_us: u64) {
        self.now_us = self.now_us.max(now_us);
        self.safety.feed(now_us);
    }

    /// Whether the board runs in HIL mode (sensors from the simulator, outputs off).
    pub fn hil_mode(&self) -> bool {
        self.hil.mode
    }

    /// One control tick: take the sensors, check safety, compute every output. In HIL mode
    /// the sensors are the simulator's and every output stays off (the pulses read back at
    /// `board::HIL_OUTPUTS`).
    pub fn tick(&mut self, now_us: u64, sensors: &Sensors) -> Pulses {
        let simulated = self.hil.mode.then(|| self.hil.sensors(now_us)).flatten();
        let pulses = self.tick_on(now_us, simulated.as_ref().unwrap_or(sensors));
        if self.hil.mode {
            [None; SERVO_COUNT]
        } else {
            pulses
        }
    }

    fn tick_on(&mut self, now_us: u64, sensors: &Sensors) -> Pulses {
        let dt_s = self
            .last_tick_us
            .map_or(0.0, |t| now_us.saturating_sub(t) as f32 * 1e-6);
        self.last_tick_us = Some(now_us);
        self.now_us = now_us;
        self.tick_count = self.tick_count.wrapping_add(1);
        self.observe(sensors, dt_s);
        for servo in &mut self.servos {
            servo.check_bus_watchdog(now_us);
        }
        let health = self.health();
        if let Some(tripped) =
            self.safety
                .check(now_us, &health, &self.config, self.fault_inject as u16)
        {
            let servo_id = tripped.servo.map_or(0, |i| self.config.servos[i].id);
            self.fault_log.record(tripped, servo_id, now_us);
            self.flag_servo_errors(tripped);
        }
        self.outputs(dt_s)
    }

    pub(crate) fn observe(&mut self, sensors: &Sensors, dt_s: f32) {
        for (servo, sample) in self.servos.iter_mut().zip(sensors.servos) {
            servo.observe(sample, dt_s);
        }
        self.supply_mv = sensors.supply_mv;
        self.imu_ok = sensors.imu.is_ok();
        if let Ok(sample) = sensors.imu {
            self.imu = sample;
            self.filter
                .update(sample.gyro_rad_s, sample.accel_m_s2, dt_s);
        }
    }

    fn health(&self) -> Health {
        let limit = self.config.max_temperature_c;
        let over_temperature = self
            .servos
            .iter()
            .position(|s| s.present.temperature_c > s.temperature_limit_c.min(limit) as f32);
        let margin = self.config.feedback_margin_rad;
        let bad_feedback = self
            .servos
            .iter()
            .zip(&self.config.servos)
            .position(|(s, c)| {
                let rad = s.present.position_rad;
                // Written so that NaN counts as implausible.
                !(rad >= c.min_rad - margin && rad <= c.max_rad + margin)
            });
        Health {
            over_temperature,
            supply_mv: self.supply_mv,
            imu_ok: self.imu_ok,
            bad_feedback,
        }
    }

    /// Sets the X-series Hardware Error Status bits a board fault implies: on every servo for
    /// the supply and temperature, on the servo to blame for its feedback.
    fn flag_servo_errors(&mut self, tripped: crate::safety::Tripped) {
        use clawrl_protocol::table::board::fault;
        use clawrl_protocol::table::servo::hw_error;
        match (tripped.flag, tripped.servo) {
            (fault::OVER_TEMPERATURE, _) => self.flag_all_servos(hw_error::OVERHEATING),
            (fault::UNDER_VOLTAGE, _) => self.flag_all_servos(hw_error::INPUT_VOLTAGE),
            (fault::FEEDBACK, Some(i)) => self.servos[i].hw_error |= hw_error::ENCODER,
            _ => {}
        }
    }

    fn flag_all_servos(&mut self, bit: u8) {
        for servo in &mut self.servos {
            servo.hw_error |= bit;
        }
    }

    fn outputs(&mut self, dt_s: f32) -> Pulses {
        let step = self.config.max_step_rad();
        let damp_alpha = (dt_s / self.config.damp_time_constant_s).min(1.0);
        let mode = self.safety.output_mode(&self.config);
        let mut pulses = [None; SERVO_COUNT];
        for (i, servo) in self.servos.iter_mut().enumerate() {
            let (track, behaviour) = match mode {
                OutputMode::Track => (Some(servo.goal_rad), None),
                OutputMode::Safe(b) => (None, Some(b)),
            };
            let command = servo.next_command(track, behaviour, step, damp_alpha);
            pulses[i] = command.map(|rad| self.config.servos[i].calibration.pulse_us(rad));
            servo.pulse_us = pulses[i].unwrap_or(0.0);
        }
        pulses
    }

    /// Carries out a Safety Command, with what each transition does to the servos.
    pub fn safety_command(&mut self, cmd: u8) -> Result<(), ErrorCode> {
        let was = self.safety.state();
        self.safety
            .command(cmd, self.now_us)
            .map_err(|_| ErrorCode::ResultFail)?;
        match (was, self.safety.state(), cmd) {
            (SafetyState::Idle, SafetyState::Enabled, _) => self.on_enable(true),
            (_, SafetyState::Idle, command::DISABLE | command::CLEAR) => {
                for servo in &mut self.servos {
                    servo.torque_enabled = false;
                    servo.hw_error = 0;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Entering Enabled: every goal starts at the measured position, so nothing jumps.
    pub(crate) fn on_enable(&mut self, all_torque: bool) {
        for servo in &mut self.servos {
            servo.set_goal(servo.present.position_rad);
            servo.commanded_rad = None;
            servo.torque_enabled |= all_torque;
        }
    }

    /// Torque Enable written to one servo: 1 in Idle also enables the board.
    pub(crate) fn servo_torque(&mut self, index: usize, on: bool) -> Result<(), ErrorCode> {
        if !on {
            self.servos[index].torque_enabled = false;
            return Ok(());
        }
        match self.safety.state() {
            SafetyState::Idle => {
                self.safety
                    .command(command::ENABLE, self.now_us)
                    .map_err(|_| ErrorCode::ResultFail)?;
                self.on_enable(false);
            }
            SafetyState::Enabled => {}
            _ => return Err(ErrorCode::ResultFail),
        }
        self.servos[index].torque_enabled = true;
        Ok(())
    }

    /// Soft reset, as REBOOT to the board: back through Boot to Idle with defaults. Latched
    /// faults and e-stop stay latched, with the servos' Hardware Error Status: only CLEAR
    /// releases them.
    pub fn reboot(&mut self) {
        let simulated = self.simulated;
        let faults = self.safety.faults();
        let hw_errors = self.servos.map(|s| s.hw_error);
        *self = Self::new(self.config.clone());
        self.simulated = simulated;
        self.finish_boot();
        self.safety.relatch(faults);
        for (servo, hw_error) in self.servos.iter_mut().zip(hw_errors) {
            servo.hw_error = hw_error;
        }
    }

    pub fn watchdog_behaviour(&self) -> SafeBehaviour {
        self.safety.watchdog_behaviour()
    }
}
