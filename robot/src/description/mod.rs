//! The robot description: one file per robot (`robots/NAME/robot.toml`, beside or pointing at
//! its MJCF) that says what only the hardware knows, every servo by name, and takes from the
//! MJCF what the MJCF already holds.
//!
//! - The file ([`DescriptionFile`]): per servo its bus ID, the MJCF joint it drives, its kind,
//!   its direction and zero offset (servo angle = direction x (joint angle + offset)), an
//!   optional narrower limit, its servo model and, for the PWM board, its channel; the feet,
//!   the IMU, the body's sensors and the action scale per joint kind.
//! - The MJCF ([`MjcfFacts`], read by the simulator crate from the compiled model, so default
//!   classes are already applied): joint ranges, the `stand` keyframe (the default pose) and
//!   the `rest` keyframe, actuators, bodies, geoms, sites and sensors by name.
//! - [`DescriptionFile::resolve`] checks one against the other and yields the
//!   [`RobotDescription`]: servos in action order with every number filled in. Where the two
//!   disagree the error names the servo and both values.
//!
//! Servo order is the order of `[[servo]]` tables in the file: it is the action order, the
//! observation's joint order and the order the runtime reads the bus in; the bus IDs are
//! separate, so a robot wired in another order only changes its `id`s.
mod compare;
mod facts;
mod file;
mod scaffold;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use compare::first_difference;
pub use facts::{ActuatorFact, JointFact, MjcfFacts};
pub use file::{DescriptionFile, MAX_SERVOS, ServoSpec};
pub use scaffold::scaffold;

/// What a servo moves: leg joints target around the default pose, claws from open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JointKind {
    Leg,
    Claw,
    Other,
}

impl JointKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Leg => "leg",
            Self::Claw => "claw",
            Self::Other => "other",
        }
    }
}

/// A serial bus servo's position unit and top speed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServoModel {
    /// Position ticks per turn (4096 for the X-series and the STS3215).
    pub ticks_per_turn: u32,
    /// The tick that means the servo's zero angle.
    pub center_ticks: u32,
    /// No-load top speed (rad/s); the runtime's speed limit must stay below it.
    pub max_speed_rad_s: f64,
}

/// A hobby PWM servo's pulse law (`pulse = center + direction x angle x us_per_rad`, clamped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PwmModel {
    pub center_us: f64,
    pub us_per_rad: f64,
    pub min_us: f64,
    pub max_us: f64,
}

/// One servo's PWM output on the board.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pwm {
    pub channel: u8,
    /// Name of a `[pwm_model.NAME]` table.
    pub model: String,
}

/// One servo, every number filled in (rad).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Servo {
    pub name: String,
    /// Bus ID (1-252).
    pub id: u8,
    /// The MJCF joint it drives.
    pub joint: String,
    pub kind: JointKind,
    /// +1: the servo turns with the joint's positive direction; -1: mounted the other way.
    pub direction: i8,
    /// Servo angle at joint angle 0 (rad), before the direction is applied.
    pub offset_rad: f64,
    /// `[low, high]` (rad): the MJCF's range, or a narrower one from the file.
    pub limits: [f64; 2],
    /// The default pose (the MJCF's `stand` keyframe).
    pub stand: f64,
    /// The resting pose (the MJCF's `rest` keyframe, or the file's `rest`).
    pub rest: f64,
    /// Name of its `[servo_model.NAME]`.
    pub model: String,
    pub pwm: Option<Pwm>,
}

impl Servo {
    /// The servo's own angle for a joint angle: what goes on the wire.
    pub fn servo_angle(&self, joint_rad: f64) -> f64 {
        f64::from(self.direction) * (joint_rad + self.offset_rad)
    }

    /// The joint angle for a servo angle read back from the wire.
    pub fn joint_angle(&self, servo_rad: f64) -> f64 {
        f64::from(self.direction) * servo_rad - self.offset_rad
    }
}

/// A foot: its body, the geom that touches the ground, its contact sensor and, on a claw foot,
/// the claw servo and the adhesion actuator that stands in for its grip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Foot {
    pub name: String,
    pub body: String,
    pub geom: String,
    pub contact_sensor: String,
    #[serde(default)]
    pub claw: Option<String>,
    #[serde(default)]
    pub grip_actuator: Option<String>,
}

/// The IMU: where it sits and the sensors that read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Imu {
    pub site: String,
    pub quat_sensor: String,
    pub gyro_sensor: String,
    pub acc_sensor: String,
    /// How the chip is mounted: roll, pitch, yaw (degrees) from the body's axes to the chip's.
    pub mount_rpy_deg: [f64; 3],
}

/// The trunk: what the simulator reads that the robot does not have (a fall, the true velocity).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trunk {
    pub body: String,
    pub geom: String,
    pub contact_sensor: String,
    pub velocity_sensor: String,
}

/// A robot, resolved: what the simulator, the trainer, the bundle, the runtime and the
/// firmware tables agree on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotDescription {
    /// Robot model name, as recorded in a bundle.
    pub name: String,
    /// Servos in action order.
    pub servos: Vec<Servo>,
    pub servo_models: BTreeMap<String, ServoModel>,
    #[serde(default)]
    pub pwm_models: BTreeMap<String, PwmModel>,
    pub feet: Vec<Foot>,
    pub imu: Imu,
    pub trunk: Trunk,
    /// rad per unit of action, per joint kind.
    pub action_scale: BTreeMap<JointKind, f64>,
}

impl RobotDescription {
    pub fn servo_names(&self) -> Vec<String> {
        self.servos.iter().map(|s| s.name.clone()).collect()
    }

    pub fn servo(&self, name: &str) -> Option<&Servo> {
        self.servos.iter().find(|s| s.name == name)
    }

    /// The servo index (action order) that answers to bus ID `id`.
    pub fn index_of_id(&self, id: u8) -> Option<usize> {
        self.servos.iter().position(|s| s.id == id)
    }

    pub fn limits(&self) -> Vec<[f64; 2]> {
        self.servos.iter().map(|s| s.limits).collect()
    }

    pub fn stand_pose(&self) -> Vec<f64> {
        self.servos.iter().map(|s| s.stand).collect()
    }

    pub fn rest_pose(&self) -> Vec<f64> {
        self.servos.iter().map(|s| s.rest).collect()
    }
}

/// Why a description does not load or does not fit its MJCF. Every message names the servo
/// (or foot, sensor) and, where two sources disagree, both values.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DescriptionError {
    #[error(transparent)]
    Config(#[from] clawrl_config::ConfigError),
    #[error("{file}: {what}")]
    Invalid { file: String, what: String },
    #[error("{file} against {mjcf}: {what}")]
    Mismatch {
        file: String,
        mjcf: String,
        what: String,
    },
}
