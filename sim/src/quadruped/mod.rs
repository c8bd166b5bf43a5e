//! The claw-foot quadruped task: velocity-command tracking on flat ground or slopes.
//!
//! One [`QuadrupedEnv`] is one robot, sized by its description (robots/NAME/robot.toml): one
//! action per servo, in the description's order. Leg joints target around the default pose
//! (`default + action_scale * a`), claws from open (`claw_action_scale * a`, 0 = open), clipped
//! to the joint limits before they reach the servos; the claw-foot quadruped has 12 leg joints
//! and 4 claws, a robot without claws its leg joints only. A claw's grip follows the claw's
//! measured angle through MuJoCo's adhesion actuator.
//! Control runs at 50 Hz over 500 Hz physics (`env.decimation`).
//!
//! Each environment holds its own copy of the model: domain randomisation changes masses,
//! friction, servo gains and the floor's tilt per episode, which a shared model cannot carry.
//! The pristine model is shared (an `Arc`) and every episode's draw starts from it.
pub mod config;
pub mod curriculum;
pub mod layout;
pub mod math;
pub mod observation;
pub mod randomize;
pub mod report;
pub mod reward;
pub mod servo_model;
pub mod stand;

use std::path::PathBuf;
use std::sync::Arc;

use mujoco_rs::prelude::*;

pub use clawrl_robot::rotation::{heading_yaw, wrap_angle};
pub use config::{Heading, TaskConfig};
pub use layout::{FootClaw, Layout, NUM_FEET, NUM_LEG_SERVOS, NUM_SERVOS, foot_names, servo_names};
pub use randomize::EpisodeParams;
pub use report::simulate_report;
pub use stand::{STAND_HEIGHT, ServoDynamics};

use crate::env::{EpisodeLog, check_action};
use crate::rng::{SimRng, rng, uniform};
use crate::{ActionMap, Env, EnvSpec, ObsSource, OnboardLayout, SimError, Telemetry, model};
use clawrl_robot::OnboardSensors;
use clawrl_robot::board::BoardSensorPath;
use curriculum::TerrainCurriculum;
use math::{Vec3, axis_angle, dot, mul, rotate, rotate_inv};
use observation::PRIVILEGED_EXTRA;
use reward::{NUM_TERMS, RewardInputs, TERMS};

/// A foot touches the ground when its touch sensor reads more than this (N).
const CONTACT_THRESHOLD: f64 = 0.5;
const CLAW_CLOSED: f64 = 1.2;
/// Radius of the foot sphere (`<default class="foot">` in the MJCF): its centre this high above
/// the floor is a foot on the ground.
const FOOT_RADIUS: f64 = 0.016;

/// Board ticks (`clawrl_robot::board::TICK_US`) per physics step, at least one.
fn board_ticks(physics_dt: f64) -> usize {
    let tick = f64::from(clawrl_robot::board::TICK_US) * 1e-6;
    ((physics_dt / tick).round() as usize).max(1)
}

/// Per foot: height above the floor (m), speed along it (m/s).
type FootMotion = ([f64; NUM_FEET], [f64; NUM_FEET]);

/// The pristine model and everything derived from it once, shared by all environments.
pub struct Robot {
    pub file: PathBuf,
    pub model: Arc<MjModel>,
    pub layout: Layout,
    /// The robot's name (its description's): what a bundle records.
    pub name: String,
    /// Servo names, in action order.
    pub servo_names: Vec<String>,
    /// Foot names (the description's), in its foot order.
    pub foot_names: Vec<String>,
    /// The default pose (the MJCF's `stand` keyframe), per servo.
    pub default_pose: Vec<f64>,
    /// The default pose of the leg joints alone (`layout.leg_servos`).
    pub leg_default: Vec<f64>,
    /// Action -> servo target, from the robot layout and the task's scales.
    pub action_map: ActionMap,
}

impl Robot {
    pub fn load(cfg: &TaskConfig) -> Result<Arc<Self>, SimError> {
        let file = cfg.model_path();
        let mut model = model::load(&file)?;
        if let Some(dt) = cfg.env.physics_dt {
            model.opt_mut().timestep = dt;
        }
        let robot = crate::description::for_model(&file, &model)?.ok_or_else(|| {
            SimError::ModelMismatch {
                file: file.clone(),
                reason: format!(
                    "no robot description (robots/NAME/robot.toml) names this MJCF: write one with \
                 `clawrl robot new --mjcf {}`",
                    file.display()
                ),
            }
        })?;
        let layout = Layout::new(&model, &robot)?;
        // A servo model fitted to this robot (`clawrl sysid`), beside its description: the
        // pristine model takes its values, so every episode's randomisation centres on them.
        let fitted = robot
            .path
            .parent()
            .map(|d| d.join(servo_model::FILE_NAME))
            .filter(|p| p.is_file());
        if let Some(path) = fitted {
            servo_model::ServoModelFile::load(&path)?.apply(
                &path,
                &mut model,
                &layout,
                &robot.description.servo_names(),
            )?;
        }
        let action_map = action_map(&robot.description, &cfg.env);
        let d = &robot.description;
        let default_pose = d.stand_pose();
        let leg_default = layout.leg_servos.iter().map(|&i| default_pose[i]).collect();
        Ok(Arc::new(Self {
            file,
            model: Arc::new(model),
            layout,
            name: d.name.clone(),
            servo_names: d.servo_names(),
            foot_names: d.feet.iter().map(|f| f.name.clone()).collect(),
            default_pose,
            leg_default,
            action_map,
        }))
    }
}

/// Action -> servo target from the description (names, default pose, limits) and the task's
/// scales per joint kind: legs around the default pose, claws from open.
fn action_map(d: &clawrl_robot::description::RobotDescription, e: &config::EnvConfig) -> ActionMap {
    use clawrl_robot::description::JointKind;
    ActionMap {
        joint_names: d.servo_names(),
        default_pose: d.stand_pose(),
        scale: d
            .servos
            .iter()
            .map(|s| match s.kind {
                JointKind::Claw => e.claw_action_scale,
                _ => e.action_scale,
            })
            .collect(),
        clip: e.action_clip,
        joint_limits: d.limits(),
    }
}

pub struct QuadrupedEnv {
    cfg: Arc<TaskConfig>,
    robot: Arc<Robot>,
    data: MjData<Box<MjModel>>,
    spec: EnvSpec,
    rng: SimRng,
    started: bool,
    params: EpisodeParams,
    steps: usize,
    command: [f64; 3],
    fixed_command: bool,
    /// A fixed command whose yaw holds `target_heading` ([`Env::hold_heading`]).
    holds_heading: bool,
    /// The heading (rad, world yaw of the body's forward axis) the yaw command steers back to
    /// when `command.heading_gain` is on.
    target_heading: f64,
    next_resample: f64,
    next_push: f64,
    action: Vec<f32>,
    prev_action: Vec<f32>,
    /// Servo targets in force (the servo's own angle frame, before calibration error).
    target: Vec<f64>,
    /// The leg joints' positions and velocities at the last step (scratch for the reward).
    leg_q: Vec<f64>,
    leg_qd: Vec<f64>,
    air_time: [f64; NUM_FEET],
    contact: [bool; NUM_FEET],
    /// Foot contact after each physics step of the last control step (for gait metrics).
    substep_contact: Vec<[bool; NUM_FEET]>,
    /// Each foot's duty factor, averaged over the last second or so (see `reward::update_duty`).
    duty: [f64; NUM_FEET],
    /// The gait clock's phase in [0, 1) (`rewards.gait_frequency_hz`; 0 without a clock).
    gait_phase: f64,
    /// Foot body positions (world) at the last control step: foot speed for clearance and slip.
    foot_pos: [Vec3; NUM_FEET],
    term_sums: [f64; NUM_TERMS],
    /// The raw sensor readings the onboard observation was last built from (before noise):
    /// through the board when `noise.board_sensor_path` is on.
    sensors: OnboardSensors,
    /// The servo board's sensor side (`noise.board_sensor_path`), and its ticks per physics
    /// step.
    board: Option<BoardSensorPath>,
    board_ticks: usize,
    /// The terrain curriculum's level (`terrain.curriculum_levels`), moved at each reset.
    curriculum: TerrainCurriculum,
    onboard: Vec<f32>,
    /// The onboard vector before rounding (scratch: the noise is added in f64).
    onboard_f64: Vec<f64>,
    privileged: Vec<f32>,
}

impl QuadrupedEnv {
    /// Loads the model named by `cfg` and builds one environment.
    pub fn new(cfg: &TaskConfig) -> Result<Self, SimError> {
        Ok(Self::with_robot(Arc::new(cfg.clone()), Robot::load(cfg)?))
    }

    /// `n` environments sharing one loaded model.
    pub fn many(cfg: &TaskConfig, n: usize) -> Result<Vec<Self>, SimError> {
        let (cfg, robot) = (Arc::new(cfg.clone()), Robot::load(cfg)?);
        Ok((0..n)
            .map(|_| Self::with_robot(cfg.clone(), robot.clone()))
            .collect())
    }

    pub fn with_robot(cfg: Arc<TaskConfig>, robot: Arc<Robot>) -> Self {
        let model = Box::new((*robot.model).clone());
        let physics_dt = model.opt().timestep;
        let n = robot.servo_names.len();
        let onboard_layout =
            OnboardLayout::legged(&robot.name, &robot.servo_names, &robot.default_pose);
        let onboard_dim = onboard_layout.dim();
        let spec = EnvSpec {
            name: "quadruped".into(),
            action_dim: n,
            onboard_dim,
            privileged_dim: onboard_dim + PRIVILEGED_EXTRA + observation::clock_dim(&cfg),
            obs_names: observation::names(&onboard_layout, &robot.foot_names, &cfg),
            action_names: robot.servo_names.clone(),
            control_dt: physics_dt * cfg.env.decimation as f64,
            physics_dt,
            max_episode_steps: cfg.max_episode_steps(physics_dt),
            reward_terms: TERMS.iter().map(|t| t.to_string()).collect(),
            foot_names: foot_names(),
            onboard_layout,
            action_map: Some(robot.action_map.clone()),
            model_file: robot.file.clone(),
        };
        let mut r = rng(0);
        let params = EpisodeParams::draw(&cfg, &mut r, n);
        let curriculum = TerrainCurriculum::new(cfg.terrain.curriculum_levels);
        Self {
            cfg,
            robot,
            data: MjData::new(model),
            rng: r,
            started: false,
            params,
            steps: 0,
            command: [0.0; 3],
            fixed_command: false,
            holds_heading: false,
            target_heading: 0.0,
            next_resample: 0.0,
            next_push: 0.0,
            action: vec![0.0; n],
            prev_action: vec![0.0; n],
            target: vec![0.0; n],
            leg_q: Vec::with_capacity(n),
            leg_qd: Vec::with_capacity(n),
            air_time: [0.0; NUM_FEET],
            contact: [false; NUM_FEET],
            substep_contact: Vec::new(),
            duty: [0.5; NUM_FEET],
            gait_phase: 0.0,
            foot_pos: [[0.0; 3]; NUM_FEET],
            term_sums: [0.0; NUM_TERMS],
            sensors: OnboardSensors::default(),
            board: None,
            board_ticks: board_ticks(physics_dt),
            curriculum,
            onboard: vec![0.0; spec.onboard_dim],
            onboard_f64: vec![0.0; spec.onboard_dim],
            privileged: vec![0.0; spec.privileged_dim],
            spec,
        }
    }

    pub fn config(&self) -> &TaskConfig {
        &self.cfg
    }

    pub fn robot(&self) -> &Robot {
        &self.robot
    }

    /// The physical parameters drawn for the current episode.
    pub fn params(&self) -> &EpisodeParams {
        &self.params
    }

    /// The MuJoCo data, for inspection (tests, plots, the HIL bridge).
    pub fn data(&self) -> &MjData<Box<MjModel>> {
        &self.data
    }

    pub fn command(&self) -> [f64; 3] {
        self.command
    }

    /// The body's heading: the world yaw of its forward axis (rad, in [-pi, pi]).
    pub fn heading(&self) -> f64 {
        // From qpos, not the sensor: current even before mj_forward (at reset).
        let q = &self.data.qpos()[3..7];
        clawrl_robot::rotation::heading([q[0], q[1], q[2], q[3]])
    }

    /// The heading the yaw command steers to (`command.heading_gain`; see `heading_yaw`).
    pub fn target_heading(&self) -> f64 {
        self.target_heading
    }

    /// The raw sensor readings the current onboard observation was built from, before sensor
    /// noise: what the robot's runtime would read (hil-tests check its observation against ours).
    pub fn onboard_sensors(&self) -> OnboardSensors {
        self.sensors
    }

    /// The servo targets in force (rad, the servo's own angle frame): the last action through
    /// the action map and the target rate limit.
    pub fn servo_targets(&self) -> Vec<f64> {
        self.target.clone()
    }

    /// The action of the last step as the observation records it (clipped; zero after a reset).
    pub fn last_action(&self) -> Vec<f32> {
        self.action.clone()
    }

    /// Turns the servos off (zero gain and torque) until the next reset: the robot goes limp.
    pub fn disable_servos(&mut self) {
        // SAFETY: only parameter values change, never sizes or addresses.
        let model = unsafe { self.data.model_mut() };
        for &a in &self.robot.layout.servo_actuator {
            unsafe {
                model.actuator_gainprm_mut()[a][0] = 0.0;
            }
            model.actuator_biasprm_mut()[a][1] = 0.0;
            model.actuator_biasprm_mut()[a][2] = 0.0;
        }
    }

    /// Servo targets for an action, through the robot's action map (the runtime's too): leg
    /// joints around the default pose, claws from open, clamped to the joint limits.
    fn targets(&self, action: &[f32]) -> Vec<f64> {
        let mut t = vec![0.0; self.spec.action_dim];
        self.robot
            .action_map
            .targets(action, &mut t)
            .expect("actions are checked (length, finite) before they reach the action map");
        t
    }

    /// `target` moved at most `env.max_target_speed` x control step away from the last target
    /// (what the robot runtime does to every goal before it leaves).
    fn rate_limited(&self, mut target: Vec<f64>) -> Vec<f64> {
        let speed = self.cfg.env.max_target_speed;
        if speed > 0.0 {
            clawrl_robot::rate::limit_rate(&mut target, &self.target, speed * self.spec.control_dt);
        }
        target
    }

    /// Writes servo targets into ctrl, with the servo's calibration error, and sets each
    /// claw's grip from the claw's measured angle.
    fn apply_targets(&mut self, target: &[f64]) {
        let l = &self.robot.layout;
        let grip = l.claw.map(|c| {
            c.map(|c| {
                let angle = self.data.qpos()[l.servo_qpos[c.servo]];
                (c.grip_actuator, (angle / CLAW_CLOSED).clamp(0.0, 1.0))
            })
        });
        let ctrl = self.data.ctrl_mut();
        for (i, t) in target.iter().enumerate() {
            // The servo holds its own reading at the target; its reading is angle + offset.
            let [lo, hi] = l.servo_range[i];
            ctrl[l.servo_actuator[i]] = (t - self.params.joint_offset[i]).clamp(lo, hi);
        }
        for (actuator, g) in grip.into_iter().flatten() {
            ctrl[actuator] = g;
        }
    }

    fn sample_command(&mut self) {
        use rand::RngExt;
        let c = &self.cfg.command;
        let zero = self.rng.random::<f64>() < c.zero_probability;
        let ranges = [c.forward, c.lateral, c.yaw_rate];
        let draw: [f64; 3] = std::array::from_fn(|i| {
            let v = uniform(&mut self.rng, ranges[i]);
            let kept = self.rng.random::<f64>() < c.keep_probability[i];
            if kept { v } else { 0.0 }
        });
        self.command = if zero {
            [0.0; 3]
        } else {
            cut_small(draw, c.deadband)
        };
        self.next_resample = self.data.time() + uniform(&mut self.rng, c.resample_seconds);
        if c.heading_gain > 0.0 {
            // The yaw draw only says whether to turn: the turn itself is a new heading.
            use std::f64::consts::PI;
            let turn = uniform(&mut self.rng, [-PI, PI]);
            let turns = self.command[2] != 0.0;
            self.target_heading = wrap_angle(self.heading() + if turns { turn } else { 0.0 });
            self.steer();
        }
    }

    /// Whether the yaw command comes from the heading error (`command.heading_gain` on, and
    /// no fixed command set from outside, or one that holds its heading).
    fn steers_by_heading(&self) -> bool {
        self.cfg.command.heading_gain > 0.0 && (!self.fixed_command || self.holds_heading)
    }

    /// The yaw-rate command from the heading error, when the task steers by heading.
    fn steer(&mut self) {
        if self.steers_by_heading() {
            let c = &self.cfg.command;
            self.command[2] = heading_yaw(
                c.heading_gain,
                self.target_heading,
                self.heading(),
                c.yaw_rate,
            );
        }
    }

    /// The error between the target heading and the body's (rad): 0 when steering by yaw rate.
    fn heading_error(&self) -> f64 {
        if self.steers_by_heading() {
            wrap_angle(self.target_heading - self.heading())
        } else {
            0.0
        }
    }

    fn sensor(&self, adr: usize) -> Vec3 {
        let s = self.data.sensordata();
        [s[adr], s[adr + 1], s[adr + 2]]
    }

    fn base_quat(&self) -> [f64; 4] {
        let s = &self.data.sensordata()[self.robot.layout.sensor_quat..];
        [s[0], s[1], s[2], s[3]]
    }

    fn base_pos(&self) -> Vec3 {
        let q = self.data.qpos();
        [q[0], q[1], q[2]]
    }

    /// Height of the torso above the (possibly tilted) floor through the origin.
    fn height(&self) -> f64 {
        dot(self.base_pos(), self.params.floor_normal)
    }

    fn foot_forces(&self) -> [f64; NUM_FEET] {
        let s = self.data.sensordata();
        self.robot.layout.sensor_contact.map(|adr| s[adr])
    }

    fn foot_positions(&self) -> [Vec3; NUM_FEET] {
        self.robot.layout.foot_body.map(|b| self.data.xpos()[b])
    }

    /// Each foot's lowest point above the floor, and its speed along the floor since `before`
    /// (`dt` ago).
    fn foot_motion(
        &self,
        now: &[Vec3; NUM_FEET],
        before: &[Vec3; NUM_FEET],
        dt: f64,
    ) -> FootMotion {
        let n = self.params.floor_normal;
        let height = now.map(|p| dot(p, n) - FOOT_RADIUS);
        let speed = std::array::from_fn(|f| {
            let d = [0, 1, 2].map(|k| now[f][k] - before[f][k]);
            let along = dot(d, n);
            let tangential = [0, 1, 2].map(|k| d[k] - along * n[k]);
            dot(tangential, tangential).sqrt() / dt
        });
        (height, speed)
    }

    /// Each claw's grip in [0, 1]; 0 on a foot without a claw.
    fn grip(&self) -> [f64; NUM_FEET] {
        let ctrl = self.data.ctrl();
        self.robot
            .layout
            .claw
            .map(|c| c.map_or(0.0, |c| ctrl[c.grip_actuator]))
    }

    /// Whether the episode must end: torso on the ground, tipped over, or collapsed.
    fn fallen(&self) -> bool {
        let t = &self.cfg.termination;
        let up = rotate_inv(self.base_quat(), self.params.floor_normal);
        let torso_hit =
            t.torso_contact && self.data.sensordata()[self.robot.layout.sensor_torso_contact] > 1.0;
        torso_hit || up[2].clamp(-1.0, 1.0).acos() > t.max_tilt || self.height() < t.min_height
    }

    /// Places the robot in its default pose on the floor, with a random heading (or
    /// `terrain.heading`) and joint noise. Puts the robot at the stand keyframe, yawed at random, on the episode's floor; returns
    /// whether this episode starts settled (no joint noise).
    fn place_robot(&mut self) -> bool {
        let l = &self.robot.layout;
        self.data
            .reset_keyframe(l.stand_key)
            .expect("the stand keyframe exists");
        // Drawn either way, so a fixed heading leaves the rest of the seed's episode as it was.
        let drawn = uniform(&mut self.rng, [-std::f64::consts::PI, std::f64::consts::PI]);
        let yaw = match self.cfg.terrain.heading.from_uphill() {
            Some(h) => self.params.uphill_yaw + h,
            None => drawn,
        };
        let settled = self.params.settled_start;
        let noise = if settled {
            0.0
        } else {
            self.cfg.randomization.init_joint_noise
        };
        let jitter: Vec<f64> = (0..l.servo_count())
            .map(|_| uniform(&mut self.rng, [-noise, noise]))
            .collect();
        let floor = self.params.floor_quat;
        let height = self.data.qpos()[2];
        let pos = rotate(floor, [0.0, 0.0, height]);
        let quat = mul(floor, axis_angle([0.0, 0.0, 1.0], yaw));
        // The floor is a mocap body (MuJoCo caches the pose of world-fixed geoms).
        self.data.mocap_quat_mut()[0] = floor;
        let qpos = self.data.qpos_mut();
        qpos[..3].copy_from_slice(&pos);
        qpos[3..7].copy_from_slice(&quat);
        for i in 0..l.servo_count() {
            let [lo, hi] = l.servo_range[i];
            let pose = if settled && l.is_claw(i) {
                self.cfg.randomization.settle_grip
            } else {
                self.robot.default_pose[i]
            };
            qpos[l.servo_qpos[i]] = (pose + jitter[i]).clamp(lo, hi);
        }
        settled
    }

    /// Starts the base moving on all six axes, `init_base_velocity` wide (none at 0, and no
    /// draw either, so older configs keep their random stream).
    fn kick_base(&mut self) {
        let v = self.cfg.randomization.init_base_velocity;
        if v <= 0.0 {
            return;
        }
        let kick: [f64; 6] = std::array::from_fn(|_| uniform(&mut self.rng, [-v, v]));
        self.data.qvel_mut()[..6].copy_from_slice(&kick);
    }

    /// Adds a random horizontal kick to the base when a push is due.
    fn maybe_push(&mut self) {
        let d = &self.cfg.randomization;
        if self.data.time() < self.next_push {
            return;
        }
        let (v, interval) = (d.push_velocity, d.push_interval_seconds);
        let kick = [
            uniform(&mut self.rng, [-v, v]),
            uniform(&mut self.rng, [-v, v]),
        ];
        let qvel = self.data.qvel_mut();
        qvel[0] += kick[0];
        qvel[1] += kick[1];
        self.next_push = self.data.time() + uniform(&mut self.rng, interval);
    }

    /// Tracks air time per foot; returns the air time of feet that touched down this step.
    fn update_contacts(&mut self, dt: f64) -> [f64; NUM_FEET] {
        let forces = self.foot_forces();
        let mut touchdown = [0.0; NUM_FEET];
        for f in 0..NUM_FEET {
            let contact = forces[f] > CONTACT_THRESHOLD;
            if contact && !self.contact[f] {
                touchdown[f] = self.air_time[f];
            }
            self.air_time[f] = if contact { 0.0 } else { self.air_time[f] + dt };
            self.contact[f] = contact;
        }
        reward::update_duty(&mut self.duty, &self.contact, dt);
        touchdown
    }
}

/// The planar part of `v` (x, y) rotated by `angle` about z.
fn rotate_planar(v: Vec3, angle: f64) -> [f64; 2] {
    let (s, c) = angle.sin_cos();
    [c * v[0] - s * v[1], s * v[0] + c * v[1]]
}

impl Env for QuadrupedEnv {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset_in_place(&mut self, seed: u64) {
        if self.started {
            self.curriculum.finish_episode(self.fallen());
        }
        self.rng = rng(seed);
        let band = self.curriculum.band(self.cfg.terrain.slope_degrees);
        self.params = EpisodeParams::draw_on(&self.cfg, &mut self.rng, band, self.spec.action_dim);
        self.params.draw_start(&self.cfg, seed);
        // SAFETY: `apply` changes parameter values only, never sizes or addresses.
        let model = unsafe { self.data.model_mut() };
        self.params
            .apply(&self.robot.model, model, &self.robot.layout);
        let settled = self.place_robot();
        self.steps = 0;
        self.action.fill(0.0);
        self.prev_action.fill(0.0);
        self.target = self.targets(&self.action);
        if settled {
            // The runtime's stand pose: claws at `settle_grip` (its `safety.stand_grip`).
            let grip = self.cfg.randomization.settle_grip;
            for c in self.robot.layout.claw.iter().flatten() {
                self.target[c.servo] = grip;
            }
        }
        let target = self.target.clone();
        self.apply_targets(&target);
        if settled {
            // Standing still at the default pose, as after the runtime's stand-up: the policy
            // must learn to walk off from rest, not only out of a drop.
            let steps = (self.cfg.randomization.settle_seconds / self.physics_dt()).round();
            for _ in 0..steps as usize {
                self.apply_targets(&target);
                self.data.step();
            }
        } else {
            self.kick_base();
        }
        self.fixed_command = false;
        self.holds_heading = false;
        self.sample_command();
        self.next_push = uniform(&mut self.rng, self.cfg.randomization.push_interval_seconds);
        self.data.forward();
        self.air_time = [0.0; NUM_FEET];
        self.contact = self.foot_forces().map(|f| f > CONTACT_THRESHOLD);
        self.substep_contact.clear();
        // Half way: no foot starts out favoured or starved.
        self.duty = [0.5; NUM_FEET];
        self.gait_phase = 0.0;
        self.foot_pos = self.foot_positions();
        self.term_sums = [0.0; NUM_TERMS];
        self.started = true;
        // A board that has run through the stand-up: settled on the body as it is now.
        self.board = self
            .cfg
            .noise
            .board_sensor_path
            .then(|| BoardSensorPath::settled(&self.read_sensors()));
        self.update_observation();
    }

    fn step_in_place(&mut self, action: &[f32]) -> Result<(f32, bool, bool), SimError> {
        check_action(action, self.spec.action_dim)?;
        if !self.started {
            return Err(SimError::NotReset);
        }
        let clip = self.cfg.env.action_clip as f32;
        std::mem::swap(&mut self.prev_action, &mut self.action);
        for (a, x) in self.action.iter_mut().zip(action) {
            *a = x.clamp(-clip, clip);
        }
        let new_target = self.rate_limited(self.targets(action));
        let latency = self.params.latency_substeps;
        let old_target = std::mem::take(&mut self.target);
        let decimation = self.cfg.env.decimation;
        let mut power = 0.0;
        self.substep_contact.clear();
        for k in 0..decimation {
            self.apply_targets(if k < latency {
                &old_target
            } else {
                &new_target
            });
            self.data.step();
            power += self.leg_power();
            let forces = self.foot_forces();
            self.substep_contact
                .push(forces.map(|f| f > CONTACT_THRESHOLD));
            self.tick_board();
        }
        self.target = new_target;
        self.maybe_push();
        // No mj_forward here: after mj_step, sensordata and body poses describe the state at the
        // start of the last physics step, 2 ms ago, which is what a real robot's sensor read
        // sees too. Skipping it saves a tenth of the physics cost at decimation 10.
        self.steps += 1;
        if !self.fixed_command && self.data.time() >= self.next_resample {
            self.sample_command();
        }
        self.steer();

        let dt = self.spec.control_dt;
        // The gait clock runs while the command moves and stops at a stand.
        if reward::moving(self.command) {
            let f = self.cfg.rewards.gait_frequency_hz;
            self.gait_phase = (self.gait_phase + f * dt).rem_euclid(1.0);
        }
        let touchdown = self.update_contacts(dt);
        let terminated = self.fallen();
        let truncated = !terminated && self.steps >= self.spec.max_episode_steps;
        let feet = self.foot_positions();
        let (foot_height, foot_speed) = self.foot_motion(&feet, &self.foot_pos, dt);
        self.foot_pos = feet;
        let (l, qpos) = (&self.robot.layout, self.data.qpos());
        self.leg_q.clear();
        self.leg_q
            .extend(l.leg_servos.iter().map(|&i| qpos[l.servo_qpos[i]]));
        let qvel = self.data.qvel();
        self.leg_qd.clear();
        self.leg_qd
            .extend(l.leg_servos.iter().map(|&i| qvel[l.servo_dof[i]]));
        let inputs = RewardInputs {
            command: self.command,
            lin_vel: self.sensor(self.robot.layout.sensor_linvel),
            ang_vel: self.sensor(self.robot.layout.sensor_gyro),
            floor_normal: rotate_inv(self.base_quat(), self.params.floor_normal),
            height: self.height(),
            action: &self.action,
            prev_action: &self.prev_action,
            power: power / decimation as f64,
            touchdown_air_time: touchdown,
            contact: self.contact,
            grip: self.grip(),
            floor_tilt: self.params.slope,
            duty: self.duty,
            leg_joint_pos: &self.leg_q,
            leg_default: &self.robot.leg_default,
            leg_joint_vel: &self.leg_qd,
            foot_height,
            foot_speed,
            gait_phase: (self.cfg.rewards.gait_frequency_hz > 0.0).then_some(self.gait_phase),
            terminated,
        };
        // Progress along the command as the target heading faces (the body's own frame when
        // steering by yaw rate): a body turned round and walking "forward" downhill goes back.
        let v = rotate_planar(inputs.lin_vel, -self.heading_error());
        self.curriculum
            .record([self.command[0], self.command[1]], v, dt);
        let rewards = &self.cfg.rewards;
        let weighted = reward::weighted(&reward::terms(&inputs, rewards), &rewards.weights, dt);
        for (sum, w) in self.term_sums.iter_mut().zip(weighted) {
            *sum += w;
        }
        self.update_observation();
        Ok((weighted.iter().sum::<f64>() as f32, terminated, truncated))
    }

    fn observe(&self, layout: ObsSource, out: &mut [f32]) {
        match layout {
            ObsSource::Onboard => out.copy_from_slice(&self.onboard),
            ObsSource::Privileged => out.copy_from_slice(&self.privileged),
        }
    }

    fn episode_log(&self) -> EpisodeLog {
        EpisodeLog {
            steps: self.steps,
            total: self.term_sums.iter().sum(),
            terms: TERMS.iter().copied().zip(self.term_sums).collect(),
            stats: vec![
                ("slope_deg", self.params.slope.to_degrees()),
                ("terrain_level", self.curriculum.level() as f64),
            ],
        }
    }

    fn telemetry(&self) -> Telemetry {
        let l = &self.robot.layout;
        let v = self.sensor(l.sensor_linvel);
        Telemetry {
            time: self.data.time(),
            command: self.command.iter().map(|c| *c as f32).collect(),
            base_lin_vel: v,
            yaw_rate: self.sensor(l.sensor_gyro)[2],
            base_pos: self.base_pos(),
            joint_pos: l.servo_qpos.iter().map(|&a| self.data.qpos()[a]).collect(),
            foot_contact: self.contact.to_vec(),
            foot_contact_substeps: self.substep_contact.iter().map(|c| c.to_vec()).collect(),
            grip: self.grip().to_vec(),
        }
    }

    fn carried(&self) -> Vec<f64> {
        vec![self.curriculum.level() as f64]
    }

    fn carry(&mut self, state: &[f64]) {
        if let Some(&level) = state.first() {
            self.curriculum.set_level(level as usize);
        }
    }

    fn set_command(&mut self, command: &[f32]) -> Result<(), SimError> {
        if command.len() != 3 {
            return Err(SimError::CommandLength {
                expected: 3,
                got: command.len(),
            });
        }
        self.command = std::array::from_fn(|i| f64::from(command[i]));
        self.fixed_command = true;
        self.holds_heading = false;
        self.update_observation();
        Ok(())
    }

    fn hold_heading(&mut self) -> Result<(), SimError> {
        if self.cfg.command.heading_gain <= 0.0 {
            return Err(SimError::NoHeading {
                task: self.spec.name.clone(),
            });
        }
        self.holds_heading = true;
        self.target_heading = self.heading();
        self.steer();
        self.update_observation();
        Ok(())
    }
}

/// The body as a servo board sees it, for hardware-in-the-loop: physics advanced one MuJoCo
/// step at a time with the servo targets the board's pulses command, and the raw sensors the
/// board reads. Same model, same episode parameters (seeded by `reset`) and same servo model as
/// `step`, so a policy's gap between the two is the loop's alone.
impl QuadrupedEnv {
    /// One MuJoCo step (s).
    pub fn physics_dt(&self) -> f64 {
        self.data.model().opt().timestep
    }

    /// One physics step with these servo targets (rad, as the servo reads its own angle);
    /// `None` is a servo without pulses: it holds no position (its target follows the joint,
    /// leaving the actuator's damping only).
    ///
    /// # Panics
    /// When `targets` is not one per servo.
    pub fn step_servos(&mut self, targets: &[Option<f64>]) {
        let l = &self.robot.layout;
        assert_eq!(targets.len(), l.servo_count(), "one target per servo");
        let mut target = std::mem::take(&mut self.target);
        for (i, t) in target.iter_mut().enumerate() {
            *t = targets[i]
                .unwrap_or_else(|| self.data.qpos()[l.servo_qpos[i]] + self.params.joint_offset[i]);
        }
        self.apply_targets(&target);
        self.target = target;
        self.data.step();
        self.tick_board();
    }

    /// What the robot computer decodes from the board now: through the board's sensor path
    /// when `noise.board_sensor_path` is on (as the onboard observation is built), else the raw
    /// sensors. No noise: that is added in the observation's own units.
    pub fn sensors_as_read(&self) -> OnboardSensors {
        self.board
            .as_ref()
            .map_or_else(|| self.read_sensors(), BoardSensorPath::reading)
    }

    /// What the board's sensors read now (joint angles with the servo's calibration error),
    /// without noise: the board's own ADC and IMU add theirs.
    pub fn read_sensors(&self) -> OnboardSensors {
        let l = &self.robot.layout;
        let (qpos, qvel) = (self.data.qpos(), self.data.qvel());
        OnboardSensors {
            gyro: self.sensor(l.sensor_gyro),
            quat: self.base_quat(),
            acc: self.sensor(l.sensor_acc),
            // Room for a board's servos; a robot of fewer leaves the rest at zero.
            joint_pos: std::array::from_fn(|i| {
                l.servo_qpos
                    .get(i)
                    .map_or(0.0, |&a| qpos[a] + self.params.joint_offset[i])
            }),
            joint_vel: std::array::from_fn(|i| l.servo_dof.get(i).map_or(0.0, |&a| qvel[a])),
        }
    }

    /// The board's ticks over the physics step just taken, each reading the body as that step
    /// left it (as the HIL board reads the MuJoCo body); nothing without a board.
    fn tick_board(&mut self) {
        if self.board.is_none() {
            return;
        }
        let s = self.read_sensors();
        let board = self.board.as_mut().expect("checked");
        for _ in 0..self.board_ticks {
            board.tick(&s);
        }
    }

    /// The board's sensor path (`noise.board_sensor_path`), for inspection.
    pub fn board(&self) -> Option<&BoardSensorPath> {
        self.board.as_ref()
    }

    /// Each servo's actuator force now (N m).
    pub fn servo_torques(&self) -> Vec<f64> {
        let force = self.data.actuator_force();
        self.robot
            .layout
            .servo_actuator
            .iter()
            .map(|&a| force[a])
            .collect()
    }

    /// Adds `dv` (m/s, world x and y) to the torso's velocity: a push.
    pub fn push_base(&mut self, dv: [f64; 2]) {
        let qvel = self.data.qvel_mut();
        qvel[0] += dv[0];
        qvel[1] += dv[1];
    }

    /// Whether the robot has fallen by the task's termination rule.
    pub fn has_fallen(&self) -> bool {
        self.fallen()
    }
}

impl QuadrupedEnv {
    /// Mechanical power of the leg servos right now: sum |torque * joint speed| (W).
    fn leg_power(&self) -> f64 {
        let l = &self.robot.layout;
        let (force, qvel) = (self.data.actuator_force(), self.data.qvel());
        l.leg_servos
            .iter()
            .map(|&i| (force[l.servo_actuator[i]] * qvel[l.servo_dof[i]]).abs())
            .sum()
    }
}

/// A drawn command with its small parts cut to zero (`command.deadband`): planar speed under
/// `band[0]`, yaw rate under `band[1]`.
fn cut_small(mut c: [f64; 3], band: [f64; 2]) -> [f64; 3] {
    if c[0].hypot(c[1]) < band[0] {
        (c[0], c[1]) = (0.0, 0.0);
    }
    if c[2].abs() < band[1] {
        c[2] = 0.0;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    #[test]
    fn the_deadband_cuts_each_small_part_and_keeps_the_rest() {
        let band = [0.1, 0.2];
        assert_eq!(cut_small([0.05, 0.05, 0.5], band), [0.0, 0.0, 0.5]);
        assert_eq!(cut_small([0.3, 0.0, 0.1], band), [0.3, 0.0, 0.0]);
        assert_eq!(cut_small([0.05, 0.0, -0.1], band), [0.0; 3]);
        assert_eq!(cut_small([0.08, 0.08, -0.2], band), [0.08, 0.08, -0.2]);
        assert_eq!(cut_small([0.01, 0.0, 0.01], [0.0, 0.0]), [0.01, 0.0, 0.01]);
    }

    /// The curriculum's progress: velocity seen from the target heading. A body half a turn
    /// off its heading, walking its own forward, goes backwards; a quarter turn left of it
    /// (error -pi/2), its forward is the target's left.
    #[test]
    fn progress_is_measured_from_the_target_heading() {
        let close = |a: [f64; 2], b: [f64; 2]| (a[0] - b[0]).abs() + (a[1] - b[1]).abs() < 1e-12;
        assert!(close(rotate_planar([0.3, 0.0, 0.0], -PI), [-0.3, 0.0]));
        assert!(close(rotate_planar([0.3, 0.0, 0.0], PI / 2.0), [0.0, 0.3]));
    }
}
