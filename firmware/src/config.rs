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

/// One servo's bus ID, joint limits (the hard ones: nothing the runtime writes widens them) and
/// pulse calibration. The servo's slot (its index in [`FirmwareConfig::servos`]) is the robot's
/// servo order; the ID is what it answers to on the bus, in whatever order the robot is wired.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServoConfig {
    pub id: u8,
    /// The PWM output (and feedback input) the servo is wired to.
    pub channel: u8,
    pub min_rad: f32,
    pub max_rad: f32,
    pub calibration: PulseCalibration,
}

impl ServoConfig {
    pub const fn new(min_rad: f32, max_rad: f32) -> Self {
        Self {
            id: 0,
            channel: 0,
            min_rad,
            max_rad,
            calibration: PulseCalibration::DS3230,
        }
    }
}

/// How one servo is wired, as the robot description says (`id`, `pwm.channel`, `direction`,
/// `offset_rad`, its `[pwm_model]`): what the MCU image's table is generated from at build
/// time (firmware/board/build.rs) and what [`FirmwareConfig::from_description`] reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServoWiring {
    pub id: u8,
    pub channel: u8,
    pub reversed: bool,
    pub trim_rad: f32,
    pub center_us: f32,
    pub us_per_rad: f32,
    pub min_us: f32,
    pub max_us: f32,
    /// A narrower range than the robot's joint limits (rad), when the description gives one.
    pub limits: Option<[f32; 2]>,
}

/// Why a wiring table cannot run: the slot (servo order) and what is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WiringError {
    /// An ID another servo has, or one that is not a servo's (0, the board's, broadcast).
    Id { slot: usize, id: u8 },
    /// A channel another servo has, or one the board does not have.
    Channel { slot: usize, channel: u8 },
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
        for (i, servo) in servos.iter_mut().enumerate() {
            servo.id = clawrl_protocol::units::ids::servo_id(i);
            servo.channel = i as u8;
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

    /// This configuration with each slot's servo wired as `wiring` says: bus ID, channel,
    /// pulse law, and its limits narrowed where the wiring narrows them (never widened).
    pub fn with_wiring(mut self, wiring: &[ServoWiring; SERVO_COUNT]) -> Result<Self, WiringError> {
        for (slot, w) in self.servos.iter_mut().zip(wiring) {
            let [lo, hi] = w.limits.unwrap_or([slot.min_rad, slot.max_rad]);
            *slot = ServoConfig {
                id: w.id,
                channel: w.channel,
                min_rad: slot.min_rad.max(lo),
                max_rad: slot.max_rad.min(hi),
                calibration: PulseCalibration {
                    center_us: w.center_us,
                    us_per_rad: w.us_per_rad,
                    trim_rad: w.trim_rad,
                    reversed: w.reversed,
                    min_us: w.min_us,
                    max_us: w.max_us,
                },
            };
        }
        self.check_ids()
            .map_err(|(slot, id)| WiringError::Id { slot, id })?;
        for (i, s) in self.servos.iter().enumerate() {
            let taken = self.servos[..i].iter().any(|o| o.channel == s.channel);
            if taken || usize::from(s.channel) >= SERVO_COUNT {
                return Err(WiringError::Channel {
                    slot: i,
                    channel: s.channel,
                });
            }
        }
        Ok(self)
    }

    /// The board of the robot `description` describes: each servo's bus ID, PWM channel,
    /// limits and pulse law (direction and zero offset included) from its `[[servo]]` table,
    /// in the description's servo order ([`FirmwareConfig::with_wiring`] on the shipped
    /// board's figures). The MCU image gets the same table generated at build time.
    #[cfg(feature = "std")]
    pub fn from_description(
        description: &clawrl_robot::description::RobotDescription,
    ) -> Result<Self, String> {
        let n = description.servos.len();
        if n > SERVO_COUNT {
            return Err(format!(
                "robot {:?} has {n} servos; this board drives at most {SERVO_COUNT}",
                description.name,
            ));
        }
        let mut wiring = Self::claw_foot().wiring();
        for (w, s) in wiring.iter_mut().zip(&description.servos) {
            let pwm = s
                .pwm
                .as_ref()
                .ok_or_else(|| format!("servo {:?} has no `pwm` (channel and model)", s.name))?;
            let law = description
                .pwm_models
                .get(&pwm.model)
                .ok_or_else(|| format!("servo {:?}: no [pwm_model.{}]", s.name, pwm.model))?;
            *w = ServoWiring {
                id: s.id,
                channel: pwm.channel,
                reversed: s.direction < 0,
                trim_rad: s.offset_rad as f32,
                center_us: law.center_us as f32,
                us_per_rad: law.us_per_rad as f32,
                min_us: law.min_us as f32,
                max_us: law.max_us as f32,
                limits: Some([s.limits[0] as f32, s.limits[1] as f32]),
            };
        }
        park_unused_slots(&mut wiring, n);
        // The description's limits are the robot's own: they replace the shipped board's
        // (another robot's joints have other ranges), where `with_wiring` only narrows.
        let mut board = Self::claw_foot();
        for (slot, w) in board.servos.iter_mut().zip(&wiring) {
            if let Some([lo, hi]) = w.limits {
                (slot.min_rad, slot.max_rad) = (lo, hi);
            }
        }
        let name = |slot: usize| {
            description
                .servos
                .get(slot)
                .map_or("(spare slot)", |s| &s.name)
        };
        board.with_wiring(&wiring).map_err(|e| match e {
            WiringError::Id { slot, id } => {
                match description.servos[..slot].iter().find(|s| s.id == id) {
                    Some(o) => format!(
                        "servo {:?}: bus ID {id} is servo {:?}'s too",
                        name(slot),
                        o.name
                    ),
                    None => format!(
                        "servo {:?}: bus ID {id} is not a servo's (0, the board's 100, 253-255)",
                        name(slot)
                    ),
                }
            }
            WiringError::Channel { slot, channel } => format!(
                "servo {:?}: channel {channel} is taken, or beyond the board's {SERVO_COUNT}",
                name(slot)
            ),
        })
    }

    /// Each slot's wiring as this configuration has it.
    pub fn wiring(&self) -> [ServoWiring; SERVO_COUNT] {
        self.servos.map(|s| ServoWiring {
            id: s.id,
            channel: s.channel,
            reversed: s.calibration.reversed,
            trim_rad: s.calibration.trim_rad,
            center_us: s.calibration.center_us,
            us_per_rad: s.calibration.us_per_rad,
            min_us: s.calibration.min_us,
            max_us: s.calibration.max_us,
            limits: Some([s.min_rad, s.max_rad]),
        })
    }

    /// The slot of the servo that answers to bus ID `id`.
    pub fn slot_of(&self, id: u8) -> Option<usize> {
        self.servos.iter().position(|s| s.id == id)
    }

    /// Why a servo table cannot run: an ID used twice, or one that is not a servo's (0, the
    /// board's, broadcast). Checked where a configuration is built from a description.
    pub fn check_ids(&self) -> Result<(), (usize, u8)> {
        use clawrl_protocol::units::ids::BOARD;
        for (i, s) in self.servos.iter().enumerate() {
            let taken = self.servos[..i].iter().any(|o| o.id == s.id);
            if taken || s.id == 0 || s.id == BOARD || s.id >= clawrl_protocol::BROADCAST_ID - 1 {
                return Err((i, s.id));
            }
        }
        Ok(())
    }

    /// Largest step of the commanded position in one tick.
    pub fn max_step_rad(&self) -> f32 {
        self.max_slew_rad_per_s * self.tick_us as f32 * 1e-6
    }
}

/// A robot of fewer servos than the board's slots leaves the rest unconnected: each spare slot
/// gets a bus ID and an output no described servo has, and a zero-width limit (its goal can
/// only be 0 rad). The runtime never addresses them (it addresses the described IDs only).
#[cfg(feature = "std")]
fn park_unused_slots(wiring: &mut [ServoWiring; SERVO_COUNT], used: usize) {
    for slot in used..SERVO_COUNT {
        let id_free = |id: &u8| wiring[..slot].iter().all(|w| w.id != *id);
        let id = (1..=SERVO_COUNT as u8 + used as u8).find(id_free);
        let channel_free = |c: &u8| wiring[..slot].iter().all(|w| w.channel != *c);
        let channel = (0..SERVO_COUNT as u8).find(channel_free);
        let w = &mut wiring[slot];
        // Both exist: fewer than SERVO_COUNT slots are taken before this one.
        (w.id, w.channel) = (id.unwrap_or(w.id), channel.unwrap_or(w.channel));
        w.limits = Some([0.0, 0.0]);
    }
}

impl Default for FirmwareConfig {
    fn default() -> Self {
        Self::claw_foot()
    }
}
