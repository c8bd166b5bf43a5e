//! The quadruped task's configuration (`configs/task/*.toml`). Every field is required; see
//! `configs/task/quadruped_flat.toml` for the meaning and units of each key.
use std::path::{Path, PathBuf};

use clawrl_config::{ConfigError, KeyError, Validate, check_interval, check_range};
use serde::{Deserialize, Serialize};

/// The floor tilts (degrees) `terrain.slope_degrees` may hold.
pub const SLOPE_DEGREES_RANGE: [f64; 2] = [0.0, 45.0];
/// The sliding frictions `randomization.friction` may hold.
pub const FRICTION_RANGE: [f64; 2] = [0.05, 3.0];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TaskConfig {
    pub env: EnvConfig,
    pub command: CommandConfig,
    pub terrain: TerrainConfig,
    pub termination: TerminationConfig,
    pub rewards: RewardConfig,
    pub randomization: RandomizationConfig,
    pub noise: NoiseConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EnvConfig {
    pub model: PathBuf,
    /// Physics timestep (s) set over the model's own `<option timestep>`; absent = the
    /// model's (2 ms). The control period is `physics_dt * decimation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physics_dt: Option<f64>,
    pub decimation: usize,
    pub episode_seconds: f64,
    pub action_scale: f64,
    pub claw_action_scale: f64,
    pub action_clip: f64,
    /// Largest change of a servo target per second (rad/s), the robot runtime's
    /// `safety.max_joint_speed`, so the policy learns under the rate limit the robot applies;
    /// 0 = no limit (configs written before the key existed).
    #[serde(default)]
    pub max_target_speed: f64,
    /// Whether the privileged observation reports the floor's friction. false: it reports one
    /// constant (`observation::HIDDEN_FRICTION`), so a teacher cannot choose its grip by a
    /// friction its onboard student cannot sense. true in configs written before the key.
    #[serde(default = "yes")]
    pub privileged_friction: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CommandConfig {
    pub forward: [f64; 2],
    pub lateral: [f64; 2],
    pub yaw_rate: [f64; 2],
    pub resample_seconds: [f64; 2],
    /// Share of resamples that ask the robot to stand still (every axis zero).
    pub zero_probability: f64,
    /// Each axis (forward, lateral, yaw) keeps its draw with this probability on a resample,
    /// else it is zero, as MuJoCo Playground's Go1 joystick (b = [0.9, 0.25, 0.5]): most
    /// commands are then "walk forward and turn a little", not all three at once. [1, 1, 1]
    /// (every axis drawn) in configs written before the key existed.
    #[serde(default = "all_kept")]
    pub keep_probability: [f64; 3],
    /// legged_gym's heading command: when above 0, a resample draws a target heading (the
    /// current one plus up to half a turn either way, or the current one where the yaw axis is
    /// not kept) and every control step sets the yaw-rate command to `heading_gain` x the
    /// heading error (rad/s per rad), clipped to `yaw_rate`. A policy that turns off its
    /// heading then pays for it until it turns back, instead of once: on a slope, turning round
    /// to walk "forward" downhill no longer pays. 0 = the yaw rate is drawn directly (configs
    /// written before the key existed).
    #[serde(default)]
    pub heading_gain: f64,
    /// legged_gym's small-command cut, per part: a draw whose planar speed is under
    /// `deadband[0]` (m/s) walks no planar speed, one whose yaw rate is under `deadband[1]`
    /// (rad/s) turns not at all. Between "stand" and the slowest walk there is then a gap, so
    /// the policy cannot treat a zero command as a very slow one. [0, 0] (no cut) in configs
    /// written before the key existed.
    #[serde(default)]
    pub deadband: [f64; 2],
}

fn all_kept() -> [f64; 3] {
    [1.0; 3]
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TerrainConfig {
    pub slope_probability: f64,
    pub slope_degrees: [f64; 2],
    /// The robot's heading at reset against the floor's slope: `random`, or `uphill`,
    /// `downhill`, `across` (uphill on its left), to measure a slope one way (`clawrl
    /// slope-curve`, `clawrl eval --set task.terrain.heading=uphill`). `random` in configs
    /// written before the key existed.
    #[serde(default)]
    pub heading: Heading,
    /// Levels of the terrain curriculum over `slope_degrees` (`curriculum.rs`); 0 = none, every
    /// sloped episode draws from the whole range. 0 in configs written before the key existed.
    #[serde(default)]
    pub curriculum_levels: usize,
}

/// The robot's heading at reset (see [`TerrainConfig::heading`]).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Heading {
    #[default]
    Random,
    Uphill,
    Downhill,
    Across,
}

impl Heading {
    /// The yaw from the uphill direction, rad; `None` for a random heading.
    pub fn from_uphill(self) -> Option<f64> {
        use std::f64::consts::{FRAC_PI_2, PI};
        match self {
            Heading::Random => None,
            Heading::Uphill => Some(0.0),
            Heading::Downhill => Some(PI),
            Heading::Across => Some(-FRAC_PI_2),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TerminationConfig {
    pub max_tilt: f64,
    pub min_height: f64,
    pub torso_contact: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RewardConfig {
    pub tracking_sigma: f64,
    pub base_height_target: f64,
    pub air_time_target: f64,
    /// m of a swinging foot (sphere bottom) above the floor that `feet_clearance` aims at.
    #[serde(default = "default_swing_height")]
    pub swing_height_target: f64,
    /// A gait clock (walk-these-ways), a lever of issue 39: above 0, a phase that advances at
    /// this many strides per second while the command moves and stops at zero command; the
    /// privileged observation gains its sine and cosine (both 0 at a stand) and `gait_clock`
    /// pays for feet that follow a trot's contact schedule (all four down at a stand). 0: no
    /// clock, the observation without it (configs written before the key).
    #[serde(default)]
    pub gait_frequency_hz: f64,
    pub weights: RewardWeights,
}

/// Declares [`RewardWeights`] and [`REWARD_TERMS`] from one list, so each term's name is
/// typed once: the weight's key in the task file, the field, the term's name in metrics.
macro_rules! reward_weights {
    ($( $(#[$attr:meta])* $name:ident ),* $(,)?) => {
        /// One weight per named reward term, in the order of [`REWARD_TERMS`].
        #[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
        #[serde(deny_unknown_fields)]
        pub struct RewardWeights {
            $( $(#[$attr])* pub $name: f64, )*
        }

        /// Term names, in the order of `reward::terms` and [`RewardWeights::named`].
        pub const REWARD_TERMS: &[&str] = &[ $( stringify!($name) ),* ];

        impl RewardWeights {
            /// (term name, weight), in the order of [`REWARD_TERMS`].
            pub fn named(&self) -> [(&'static str, f64); NUM_TERMS] {
                [ $( (stringify!($name), self.$name) ),* ]
            }
        }
    };
}

reward_weights! {
    tracking_lin_vel,
    tracking_ang_vel,
    lin_vel_z,
    ang_vel_xy,
    orientation,
    base_height,
    action_rate,
    energy,
    feet_air_time,
    claw_use,
    /// Added after the first teachers: a task file from before them (a shipped run's
    /// config.toml) loads with 0, the reward it was trained with.
    #[serde(default)]
    trot_contact,
    #[serde(default)]
    claw_idle,
    /// Added with the trot teacher: older task files load with 0, as for `trot_contact`.
    #[serde(default)]
    duty_balance,
    #[serde(default)]
    joint_pose,
    /// Added with the field's gait recipe (MuJoCo Playground's Go1): older task files load
    /// with 0.
    #[serde(default)]
    feet_clearance,
    #[serde(default)]
    feet_slip,
    #[serde(default)]
    stand_still,
    #[serde(default)]
    stand_still_feet,
    /// Added with issue 39's stand-still levers: older task files load with 0.
    #[serde(default)]
    stand_still_joint_vel,
    /// Issue 39's gait clock (`gait_frequency_hz`): older task files load with 0.
    #[serde(default)]
    gait_clock,
    termination,
}

pub const NUM_TERMS: usize = REWARD_TERMS.len();

fn default_swing_height() -> f64 {
    0.05
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RandomizationConfig {
    pub friction: [f64; 2],
    pub link_mass_scale: [f64; 2],
    pub torso_added_mass: [f64; 2],
    pub com_offset: [f64; 3],
    pub servo_strength: [f64; 2],
    pub latency_substeps: [usize; 2],
    pub joint_offset: f64,
    pub init_joint_noise: f64,
    /// Share of episodes that start as the robot does after the runtime's stand-up: at the
    /// default pose without joint noise, settled on the floor for `settle_seconds` before the
    /// first observation. 0 in configs written before the key existed.
    #[serde(default)]
    pub settled_start_probability: f64,
    #[serde(default)]
    pub settle_seconds: f64,
    /// Claw angle (rad, 0 open to 1.2 shut) of a settled start: the runtime's
    /// `safety.stand_grip`, which stands a robot on a slope with its claws shut. 0 in configs
    /// written before the key existed.
    #[serde(default)]
    pub settle_grip: f64,
    pub push_interval_seconds: [f64; 2],
    pub push_velocity: f64,
    /// +- m/s (linear) and rad/s (angular) drawn for each of the base's six velocities at a
    /// reset that is not settled (Playground's Go1 uses 0.5): the policy starts from motion,
    /// as after a stumble. 0 in configs written before the key existed.
    #[serde(default)]
    pub init_base_velocity: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NoiseConfig {
    /// Per-episode factor on every amplitude below, drawn uniformly; [1, 1] in configs written
    /// before the key existed.
    #[serde(default = "unit_interval_one")]
    pub scale: [f64; 2],
    pub gyro: f64,
    pub gravity: f64,
    pub accelerometer: f64,
    pub joint_pos: f64,
    pub joint_vel: f64,
    /// Route the onboard observation through the servo board's sensor path
    /// (`clawrl_robot::board`, the firmware's own code): the IMU orientation from its filter,
    /// joint velocities differentiated from positions at its 1 kHz tick, everything quantised
    /// as the runtime reads it (positions in 4096-per-turn ticks). The noise above is added
    /// on top. false in configs written before the key existed.
    #[serde(default)]
    pub board_sensor_path: bool,
}

fn unit_interval_one() -> [f64; 2] {
    [1.0, 1.0]
}

impl TaskConfig {
    /// Loads and validates a task file; `overrides` are `key=value` strings.
    pub fn load(path: impl AsRef<Path>, overrides: &[String]) -> Result<Self, ConfigError> {
        clawrl_config::load(path, overrides)
    }

    /// The shipped flat-ground task (`configs/task/quadruped_flat.toml`).
    pub fn flat() -> Result<Self, ConfigError> {
        Self::load(
            crate::resolve(Path::new("configs/task/quadruped_flat.toml")),
            &[],
        )
    }

    /// This task as the robot stands on a test stand: every physical parameter its model's
    /// own (no randomisation of masses, friction, servos, latency or calibration), no pushes,
    /// no noise, no board sensor path. System identification fits against this model.
    pub fn on_stand(mut self) -> Self {
        let d = &mut self.randomization;
        d.link_mass_scale = [1.0, 1.0];
        d.torso_added_mass = [0.0, 0.0];
        d.com_offset = [0.0; 3];
        d.servo_strength = [1.0, 1.0];
        d.latency_substeps = [0, 0];
        d.joint_offset = 0.0;
        d.init_joint_noise = 0.0;
        d.push_velocity = 0.0;
        d.init_base_velocity = 0.0;
        self.noise.scale = [0.0, 0.0];
        self.noise.board_sensor_path = false;
        self
    }

    /// The shipped slope task (`configs/task/quadruped_slopes.toml`).
    pub fn slopes() -> Result<Self, ConfigError> {
        Self::load(
            crate::resolve(Path::new("configs/task/quadruped_slopes.toml")),
            &[],
        )
    }

    /// The model path ([`crate::resolve`]d when relative).
    pub fn model_path(&self) -> PathBuf {
        crate::resolve(&self.env.model)
    }

    pub fn max_episode_steps(&self, physics_dt: f64) -> usize {
        (self.env.episode_seconds / (physics_dt * self.env.decimation as f64)).round() as usize
    }
}

impl Validate for TaskConfig {
    fn validate(&self) -> Result<(), KeyError> {
        let e = &self.env;
        check_range("env.decimation", e.decimation, 1, 100)?;
        if let Some(dt) = e.physics_dt {
            check_range("env.physics_dt", dt, 0.0002, 0.01)?;
        }
        check_range("env.episode_seconds", e.episode_seconds, 0.1, 3600.0)?;
        check_range("env.action_scale", e.action_scale, 0.0, 2.0)?;
        check_range("env.claw_action_scale", e.claw_action_scale, 0.0, 2.0)?;
        check_range("env.action_clip", e.action_clip, 0.1, 100.0)?;
        if e.max_target_speed != 0.0 {
            check_range("env.max_target_speed", e.max_target_speed, 0.1, 100.0)?;
        }

        let c = &self.command;
        check_interval("command.forward", c.forward, -3.0, 3.0)?;
        check_interval("command.lateral", c.lateral, -3.0, 3.0)?;
        check_interval("command.yaw_rate", c.yaw_rate, -5.0, 5.0)?;
        check_interval("command.resample_seconds", c.resample_seconds, 0.02, 3600.0)?;
        check_range("command.zero_probability", c.zero_probability, 0.0, 1.0)?;
        for (axis, p) in ["forward", "lateral", "yaw"].iter().zip(c.keep_probability) {
            check_range(&format!("command.keep_probability ({axis})"), p, 0.0, 1.0)?;
        }
        check_range("command.heading_gain", c.heading_gain, 0.0, 10.0)?;
        check_range("command.deadband (speed)", c.deadband[0], 0.0, 3.0)?;
        check_range("command.deadband (yaw)", c.deadband[1], 0.0, 5.0)?;

        check_range(
            "terrain.slope_probability",
            self.terrain.slope_probability,
            0.0,
            1.0,
        )?;
        let [lo, hi] = SLOPE_DEGREES_RANGE;
        check_interval("terrain.slope_degrees", self.terrain.slope_degrees, lo, hi)?;
        check_range(
            "terrain.curriculum_levels",
            self.terrain.curriculum_levels as f64,
            0.0,
            100.0,
        )?;

        check_range(
            "termination.max_tilt",
            self.termination.max_tilt,
            0.1,
            std::f64::consts::PI,
        )?;
        check_range(
            "termination.min_height",
            self.termination.min_height,
            0.0,
            0.5,
        )?;

        let r = &self.rewards;
        check_range("rewards.tracking_sigma", r.tracking_sigma, 1e-3, 10.0)?;
        check_range(
            "rewards.base_height_target",
            r.base_height_target,
            0.05,
            0.5,
        )?;
        check_range("rewards.air_time_target", r.air_time_target, 0.0, 2.0)?;
        check_range(
            "rewards.swing_height_target",
            r.swing_height_target,
            0.0,
            0.3,
        )?;
        check_range("rewards.gait_frequency_hz", r.gait_frequency_hz, 0.0, 20.0)?;
        for (name, w) in r.weights.named() {
            if !w.is_finite() {
                return Err(KeyError::new(
                    format!("rewards.weights.{name}"),
                    "must be finite",
                ));
            }
        }

        let d = &self.randomization;
        let [lo, hi] = FRICTION_RANGE;
        check_interval("randomization.friction", d.friction, lo, hi)?;
        check_interval("randomization.link_mass_scale", d.link_mass_scale, 0.1, 3.0)?;
        check_interval(
            "randomization.torso_added_mass",
            d.torso_added_mass,
            -1.5,
            5.0,
        )?;
        for (i, v) in d.com_offset.iter().enumerate() {
            check_range(&format!("randomization.com_offset[{i}]"), *v, 0.0, 0.1)?;
        }
        check_interval("randomization.servo_strength", d.servo_strength, 0.1, 3.0)?;
        let [lo, hi] = d.latency_substeps;
        if lo > hi || hi > e.decimation {
            return Err(KeyError::new(
                "randomization.latency_substeps",
                format!(
                    "[{lo}, {hi}] must satisfy lo <= hi <= env.decimation ({})",
                    e.decimation
                ),
            ));
        }
        check_range("randomization.joint_offset", d.joint_offset, 0.0, 0.3)?;
        check_range(
            "randomization.init_joint_noise",
            d.init_joint_noise,
            0.0,
            0.5,
        )?;
        check_range(
            "randomization.settled_start_probability",
            d.settled_start_probability,
            0.0,
            1.0,
        )?;
        check_range("randomization.settle_seconds", d.settle_seconds, 0.0, 10.0)?;
        check_range(
            "randomization.settle_grip",
            d.settle_grip,
            0.0,
            super::CLAW_CLOSED,
        )?;
        check_interval(
            "randomization.push_interval_seconds",
            d.push_interval_seconds,
            0.02,
            3600.0,
        )?;
        check_range("randomization.push_velocity", d.push_velocity, 0.0, 3.0)?;
        check_range(
            "randomization.init_base_velocity",
            d.init_base_velocity,
            0.0,
            3.0,
        )?;

        let n = &self.noise;
        check_interval("noise.scale", n.scale, 0.0, 10.0)?;
        for (key, v) in [
            ("noise.gyro", n.gyro),
            ("noise.gravity", n.gravity),
            ("noise.accelerometer", n.accelerometer),
            ("noise.joint_pos", n.joint_pos),
            ("noise.joint_vel", n.joint_vel),
        ] {
            check_range(key, v, 0.0, 10.0)?;
        }
        if let (true, Some(dt)) = (n.board_sensor_path, e.physics_dt) {
            let tick = f64::from(clawrl_robot::board::TICK_US) * 1e-6;
            let ticks = dt / tick;
            if ticks.round() < 1.0 || (ticks - ticks.round()).abs() > 1e-6 {
                return Err(KeyError::new(
                    "noise.board_sensor_path",
                    format!(
                        "needs env.physics_dt ({dt} s) to be a whole number of board ticks ({tick} s)"
                    ),
                ));
            }
        }
        Ok(())
    }
}
