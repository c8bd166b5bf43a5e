//! Per-robot configuration: every limit and calibration lives here, none in the logic.
use clawrl_robot::quadruped;

use crate::pwm::PulseCalibration;
use clawrl_protocol::units::ids::SERVO_COUNT;

/// What the servos do when the safety state machine leaves normal operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SafeBehaviour {
    /// Keep commanding the position the servo had when it tripped.
    Hold,
    /// Commanded position follows the measured one through a first-order lag: the joint resists
    /// fast motion but yields to a sustained load (a position servo's analogue of moteus'
    /// damping mode).
    Damp,
    /// No pulses: the servo's driver switches off and the joint goes limp.
    Limp,
}

impl SafeBehaviour {
    pub fn from_register(v: u8) -> Option<Self> {
        use clawrl_protocol::table::board::behaviour::*;
        match v {
            HOLD => Some(Self::Hold),
            DAMP => Some(Self::Damp),
            LIMP => Some(Self::Limp),
            _ => None,
        }
    }

    pub fn register(self) -> u8 {
        use clawrl_protocol::table::board::behaviour::*;
        match self {
            Self::Hold => HOLD,
            Self::Damp => DAMP,
            Self::Limp => LIMP,
        }
    }
}

/// One servo's joint limits (the hard ones: nothing the runtime writes widens them), pulse
/// calibration and the pose it starts from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServoConfig {
    pub min_rad: f32,
    pub max_rad: f32,
    pub calibration: PulseCalibration,
}

impl ServoConfig {
    pub const fn new(min_rad: f32, max_rad: f32) -> Self {
        Self {
            min_rad,
            max_rad,
            calibration: PulseCalibration::DS3230,
        }
    }
}

/// The firmware's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct FirmwareConfig {
    pub servos: [ServoConfig; SERVO_COUNT],
    /// Control period; the slew limit and watchdog are checked every tick.
    pub tick_us: u32,
    /// Largest commanded joint speed; a goal further away is reached in steps of
    /// `max_slew_rad_per_s * tick` per tick.
    pub max_slew_rad_per_s: f32,
    /// Watchdog timeout at boot, and the range the runtime may set it to (it cannot be switched
    /// off: a silent link must always end in a safe state).
    pub watchdog_ms: u16,
    pub watchdog_min_ms: u16,
    pub watchdog_max_ms: u16,
    /// Behaviour on watchdog expiry at boot (register Safe Behaviour can change it).
    pub watchdog_behaviour: SafeBehaviour,
    /// Behaviour while e-stopped (Pupper and unitree damp on e-stop).
    pub estop_behaviour: SafeBehaviour,
    /// Behaviour on over-temperature, under-voltage or sensor faults.
    pub fault_behaviour: SafeBehaviour,
    /// Servo temperature that latches an over-temperature fault; servo registers may lower it.
    pub max_temperature_c: u8,
    /// Supply voltage below which, for `undervoltage_ticks` ticks in a row, a fault latches
    /// (debounced: a servo stall dips the supply for a few milliseconds).
    pub min_supply_mv: u16,
    pub undervoltage_ticks: u16,
    /// Lag time constant of the Damp behaviour.
    pub damp_time_constant_s: f32,
    /// PWM period of the servo outputs: 3333 us (300 Hz) for digital servos.
    pub pwm_period_us: f32,
    /// Feedback of consecutive ticks the IMU may fail to answer before a fault latches.
    pub imu_fail_ticks: u16,
    /// A servo's position feedback is implausible when it is not a number or further than this
    /// beyond the servo's hard limits (a broken potentiometer wire reads an end of the ADC's
    /// range); for `feedback_fail_ticks` consecutive ticks, the Feedback fault latches.
    pub feedback_margin_rad: f32,
    pub feedback_fail_ticks: u16,
}

/// A servo's hard limits from the robot layout (clawrl-robot), the same numbers the
/// simulator's model is checked against and the policy bundle records.
const fn from_layout(limits: [f64; 2]) -> ServoConfig {
    ServoConfig::new(limits[0] as f32, limits[1] as f32)
}

/// Claw-foot robot joint limits (rad): legs FL, FR, RL, RR x (hip abduction, hip pitch, knee),
/// then the four claws.
const HIP_ABD: ServoConfig = from_layout(quadruped::HIP_ABD_LIMITS);
const HIP_PITCH: ServoConfig = from_layout(quadruped::HIP_PITCH_LIMITS);
const KNEE: ServoConfig = from_layout(quadruped::KNEE_LIMITS);
const CLAW: ServoConfig = from_layout(quadruped::CLAW_LIMITS);

impl FirmwareConfig {
    pub fn claw_foot() -> Self {
        let leg = [HIP_ABD, HIP_PITCH, KNEE];
        let mut servos = [CLAW; SERVO_COUNT];
        for (i, servo) in servos.iter_mut().take(12).enumerate() {
            *servo = leg[i % 3];
        }
        // Right-side legs are mirrored: their abduction servos turn the other way.
        servos[3].calibration.reversed = true;
        servos[9].calibration.reversed = true;
        Self {
            servos,
            tick_us: clawrl_robot::board::TICK_US,
            max_slew_rad_per_s: 8.0,
            watchdog_ms: 100,
            watchdog_min_ms: 10,
            watchdog_max_ms: 1000,
            watchdog_behaviour: SafeBehaviour::Damp,
            estop_behaviour: SafeBehaviour::Damp,
            fault_behaviour: SafeBehaviour::Limp,
            max_temperature_c: 70,
            min_supply_mv: 6400,
            undervoltage_ticks: 50,
            damp_time_constant_s: 0.2,
            pwm_period_us: 3333.0,
            imu_fail_ticks: 100,
            feedback_margin_rad: 0.5,
            feedback_fail_ticks: 10,
        }
    }

    /// Largest step of the commanded position in one tick.
    pub fn max_step_rad(&self) -> f32 {
        self.max_slew_rad_per_s * self.tick_us as f32 * 1e-6
    }
}

impl Default for FirmwareConfig {
    fn default() -> Self {
        Self::claw_foot()
    }
}
