//! The robot on a stand: the torso held in the air with its legs free, and each servo's
//! dynamics (position gain, damping, armature, friction) read and written per servo. System
//! identification replays a log on it ([`crate::sysid`]); the HIL body's servos with hidden
//! parameters are made of it.
use serde::{Deserialize, Serialize};

use super::QuadrupedEnv;

/// How high the stand holds the torso (m): every foot clear of the floor in every pose.
pub const STAND_HEIGHT: f64 = 0.6;

/// One servo as MuJoCo models it: a position actuator's gain (N m/rad; its bias twin follows)
/// and the joint's viscous damping (N m s/rad), armature (kg m^2, the rotor's reflected
/// inertia) and Coulomb friction (N m). The actuator's own `kv` is left as the MJCF has it:
/// on a position-only log it cannot be told from the joint's damping.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServoDynamics {
    pub kp: f64,
    pub damping: f64,
    pub armature: f64,
    pub frictionloss: f64,
}

impl ServoDynamics {
    /// The parameters' names, in [`to_array`](Self::to_array)'s order.
    pub const NAMES: [&'static str; 4] = ["kp", "damping", "armature", "frictionloss"];

    pub fn to_array(self) -> [f64; 4] {
        [self.kp, self.damping, self.armature, self.frictionloss]
    }

    pub fn from_array(a: [f64; 4]) -> Self {
        Self {
            kp: a[0],
            damping: a[1],
            armature: a[2],
            frictionloss: a[3],
        }
    }

    /// Each parameter times its factor (in [`NAMES`](Self::NAMES)' order).
    pub fn scaled(self, factors: [f64; 4]) -> Self {
        let a = self.to_array();
        Self::from_array(std::array::from_fn(|i| a[i] * factors[i]))
    }
}

/// Writes one servo's dynamics into `model`: actuator `actuator`'s position gain (and the
/// bias twin that makes it a position servo) and joint `dof`'s damping, armature and friction.
/// The one writer of these values (the stand, a servo_model.toml, the HIL body's servos).
pub(crate) fn write_servo_dynamics(
    model: &mut mujoco_rs::prelude::MjModel,
    actuator: usize,
    dof: usize,
    s: ServoDynamics,
) {
    // SAFETY: gainprm's first entry is the position gain of a position actuator; only values
    // change, never sizes or addresses.
    unsafe {
        model.actuator_gainprm_mut()[actuator][0] = s.kp;
    }
    model.actuator_biasprm_mut()[actuator][1] = -s.kp;
    model.dof_damping_mut()[dof] = s.damping;
    model.dof_armature_mut()[dof] = s.armature;
    model.dof_frictionloss_mut()[dof] = s.frictionloss;
}

impl QuadrupedEnv {
    /// Servo `i`'s dynamics in this environment's model (the episode's, after randomisation).
    pub fn servo_dynamics(&self, i: usize) -> ServoDynamics {
        let (m, l) = (self.data.model(), &self.robot.layout);
        let (a, d) = (l.servo_actuator[i], l.servo_dof[i]);
        ServoDynamics {
            kp: m.actuator_gainprm()[a][0],
            damping: m.dof_damping()[d],
            armature: m.dof_armature()[d],
            frictionloss: m.dof_frictionloss()[d],
        }
    }

    /// Writes servo `i`'s dynamics into this environment's model until its next reset (which
    /// draws the episode's parameters from the pristine model again).
    pub fn set_servo_dynamics(&mut self, i: usize, s: ServoDynamics) {
        let (a, d) = (
            self.robot.layout.servo_actuator[i],
            self.robot.layout.servo_dof[i],
        );
        // SAFETY: only parameter values change, never sizes or addresses.
        write_servo_dynamics(unsafe { self.data.model_mut() }, a, d, s);
    }

    /// Puts the robot on the stand: torso level at [`STAND_HEIGHT`], at rest, joints at
    /// `pose` (rad, one per servo).
    pub fn put_on_stand(&mut self, pose: &[f64]) {
        let l = &self.robot.layout;
        let qpos = self.data.qpos_mut();
        qpos[..7].copy_from_slice(&[0.0, 0.0, STAND_HEIGHT, 1.0, 0.0, 0.0, 0.0]);
        for (i, &q) in pose.iter().enumerate() {
            qpos[l.servo_qpos[i]] = q;
        }
        self.data.qvel_mut().fill(0.0);
        self.data.forward();
    }

    /// One physics step on the stand ([`step_servos`](Self::step_servos), then the torso put
    /// back where the stand holds it, at rest): the legs swing free, the body does not move.
    pub fn step_on_stand(&mut self, targets: &[Option<f64>]) {
        self.step_servos(targets);
        let qpos = self.data.qpos_mut();
        qpos[..7].copy_from_slice(&[0.0, 0.0, STAND_HEIGHT, 1.0, 0.0, 0.0, 0.0]);
        self.data.qvel_mut()[..6].fill(0.0);
    }

    /// The joint angles now (rad, one per servo), as the servos read them.
    pub fn joint_positions(&self) -> Vec<f64> {
        let l = &self.robot.layout;
        (0..l.servo_count())
            .map(|i| self.data.qpos()[l.servo_qpos[i]] + self.params.joint_offset[i])
            .collect()
    }
}
