//! System identification: the servo model fitted to a log of the goals a robot was sent and
//! the angles its servos read back, with the robot on a stand (torso held, legs free).
//!
//! A [`Rig`] replays a [`Trace`]'s goals open-loop on the robot's MJCF with the torso fixed,
//! under a [`ServoModel`] (per joint group: position gain, damping, armature, friction; one
//! transport latency for all), and [`fit`] finds the model whose simulated angles match the
//! measured ones best: bounded Levenberg-Marquardt over the continuous parameters, a search
//! over whole physics steps for the latency. Part of each trace is held out: the RMSE before
//! and after is measured there.
mod fit;
mod trace;

pub use fit::{Fit, FitOptions, fit, held_out_rmse};
pub use trace::{Groups, Trace, TraceError};

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::quadruped::{QuadrupedEnv, Robot, ServoDynamics, TaskConfig};
use crate::{Env, SimError};

/// The servo model being fitted: one [`ServoDynamics`] per joint group, one latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServoModel {
    /// Per group (in [`Groups`]' order).
    pub groups: Vec<ServoDynamics>,
    /// Physics steps from a goal's cycle to the moment it reaches the servo, the whole path:
    /// the wire, the board and the servo's own delay, and the reading's age. A fraction of a
    /// step splits the step the goal arrives in between the old goal and the new.
    pub latency_steps: f64,
}

/// The robot on a stand, ready to replay traces: the task's model without randomisation
/// ([`TaskConfig::on_stand`]), its servos grouped.
pub struct Rig {
    cfg: Arc<TaskConfig>,
    robot: Arc<Robot>,
    pub groups: Groups,
    /// Physics steps per control cycle.
    pub decimation: usize,
    pub physics_dt: f64,
    /// The servo board's slew limit (rad/s; `None`: goals reach the servo as steps): the
    /// board moves its output towards a new goal at most this fast, a fact of the board
    /// (its `max_slew_rad_per_s`), not of the servo being fitted.
    pub slew_rad_s: Option<f64>,
}

impl Rig {
    /// The task's robot on a stand, its servos grouped by `groups`.
    pub fn new(task: &TaskConfig, groups: Groups) -> Result<Self, SimError> {
        let cfg = Arc::new(task.clone().on_stand());
        let robot = Robot::load(&cfg)?;
        if groups.of_servo.len() != robot.servo_names.len() {
            return Err(SimError::ModelMismatch {
                file: robot.file.clone(),
                reason: format!(
                    "the groups cover {} servos, the robot has {}",
                    groups.of_servo.len(),
                    robot.servo_names.len()
                ),
            });
        }
        let physics_dt = robot.model.opt().timestep;
        Ok(Self {
            slew_rad_s: None,
            decimation: cfg.env.decimation,
            physics_dt,
            cfg,
            robot,
            groups,
        })
    }

    /// This rig with the board's slew limit (rad/s).
    pub fn with_slew(mut self, rad_s: f64) -> Self {
        self.slew_rad_s = Some(rad_s);
        self
    }

    /// The robot's servo names, in action order.
    pub fn servo_names(&self) -> &[String] {
        &self.robot.servo_names
    }

    /// The MJCF's own servo model: each group's first servo's dynamics, no latency.
    pub fn nominal(&self) -> ServoModel {
        let env = self.env();
        ServoModel {
            groups: (0..self.groups.names.len())
                .map(|g| {
                    let first = self.groups.of_servo.iter().position(|&s| s == g);
                    env.servo_dynamics(first.expect("every group has a servo"))
                })
                .collect(),
            latency_steps: 0.0,
        }
    }

    /// The servos as the excitation sees them: grouped, default pose, joint limits.
    pub fn excited_servos(&self) -> Vec<clawrl_robot::excitation::ExcitedServo> {
        let r = &self.robot;
        (0..r.servo_names.len())
            .map(|i| clawrl_robot::excitation::ExcitedServo {
                name: r.servo_names[i].clone(),
                group: self.groups.of_servo[i],
                default: r.default_pose[i],
                limits: r.layout.servo_range[i],
            })
            .collect()
    }

    /// The trace a robot whose servos are `model` would log for `goals` (one per cycle),
    /// starting at rest at the default pose, its angles read in steps of `quantum` rad (a
    /// servo's encoder tick; 0 for none). What a test fits against, knowing the answer.
    pub fn record(&self, goals: &[Vec<f64>], model: &ServoModel, quantum: f64) -> Trace {
        let mut trace = Trace {
            source: "a simulated robot".into(),
            servo_names: self.robot.servo_names.clone(),
            period_s: self.physics_dt * self.decimation as f64,
            goals: goals.iter().cloned().map(Some).collect(),
            measured: vec![self.robot.default_pose.clone(); goals.len()],
        };
        let q = |x: f64| {
            if quantum > 0.0 {
                (x / quantum).round() * quantum
            } else {
                x
            }
        };
        trace.measured = self
            .simulate(&trace, model, goals.len())
            .into_iter()
            .map(|m| m.into_iter().map(q).collect())
            .collect();
        trace
    }

    fn env(&self) -> QuadrupedEnv {
        let mut env = QuadrupedEnv::with_robot(self.cfg.clone(), self.robot.clone());
        env.reset_in_place(0);
        env
    }

    /// The angles (rad, per cycle, per servo) the model predicts for `trace`'s first `cycles`
    /// cycles: the robot starts at rest at the first reading; a cycle's goals reach the servos
    /// `latency_steps` physics steps after the cycle starts and hold until the next goals do;
    /// a cycle's prediction is the angle at its start, when the runtime reads the servos.
    pub fn simulate(&self, trace: &Trace, model: &ServoModel, cycles: usize) -> Vec<Vec<f64>> {
        let mut env = self.env();
        for (i, &g) in self.groups.of_servo.iter().enumerate() {
            env.set_servo_dynamics(i, model.groups[g]);
        }
        env.put_on_stand(&trace.measured[0]);
        let (whole, part) = (
            model.latency_steps.floor() as usize,
            model.latency_steps.fract(),
        );
        let mut held: Vec<f64> = trace.measured[0].clone();
        // What the board drives the servo to: the goal in force, through its slew limit.
        let mut output: Vec<f64> = held.clone();
        let slew = self
            .slew_rad_s
            .map_or(f64::INFINITY, |s| s * self.physics_dt);
        let mut targets: Vec<Option<f64>> = held.iter().map(|&q| Some(q)).collect();
        let mut out = Vec::with_capacity(cycles);
        let cycles = cycles.min(trace.len());
        for k in 0..cycles {
            out.push(env.joint_positions());
            for s in 0..self.decimation {
                let step = k * self.decimation + s;
                // Goals that arrive during this step: the step sees the old goal for the
                // latency's fraction of it and the new one for the rest.
                let arriving = step
                    .checked_sub(whole)
                    .filter(|c| c % self.decimation == 0)
                    .and_then(|c| trace.goals[c / self.decimation].as_ref());
                let mut goal_now = |i: usize| match arriving {
                    Some(g) => {
                        let now = part * held[i] + (1.0 - part) * g[i];
                        held[i] = g[i];
                        now
                    }
                    None => held[i],
                };
                for (i, t) in targets.iter_mut().enumerate() {
                    let goal = goal_now(i);
                    output[i] += (goal - output[i]).clamp(-slew, slew);
                    *t = Some(output[i]);
                }
                env.step_on_stand(&targets);
            }
        }
        out
    }
}
