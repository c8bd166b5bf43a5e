//! Where the robot's parts live in MuJoCo's arrays, looked up by name once at load time, so
//! the rest of the task never hard-codes an index (the body tree puts each claw joint between
//! legs in qpos; the actuators list legs first, claws after).
use std::path::Path;

use mujoco_rs::prelude::*;

use crate::SimError;
use crate::model::id_of;

// Servo order, names, default pose and joint limits are the robot's contract (clawrl-robot);
// the model is checked against them when it loads.
pub use clawrl_robot::quadruped::{
    DEFAULT_POSE, JOINT_LIMITS, LEGS, NUM_FEET, NUM_LEG_SERVOS, NUM_SERVOS, servo_names,
};

/// Foot names in words, in leg order (`LEGS`): what plots and reports print.
pub fn foot_names() -> Vec<String> {
    ["front left", "front right", "rear left", "rear right"]
        .iter()
        .zip(LEGS)
        .map(|(words, abbr)| format!("{words} ({abbr})"))
        .collect()
}

/// Indices into qpos/qvel/ctrl/sensordata for everything the task reads or writes.
#[derive(Debug, Clone)]
pub struct Layout {
    pub servo_qpos: [usize; NUM_SERVOS],
    pub servo_dof: [usize; NUM_SERVOS],
    pub servo_actuator: [usize; NUM_SERVOS],
    /// Joint limits per servo (rad).
    pub servo_range: [[f64; 2]; NUM_SERVOS],
    pub grip_actuator: [usize; NUM_FEET],
    pub foot_body: [usize; NUM_FEET],
    pub foot_geom: [usize; NUM_FEET],
    pub torso_body: usize,
    pub torso_geom: usize,
    pub floor_geom: usize,
    pub stand_key: usize,
    pub sensor_quat: usize,
    pub sensor_gyro: usize,
    pub sensor_acc: usize,
    pub sensor_contact: [usize; NUM_FEET],
    pub sensor_linvel: usize,
    pub sensor_torso_contact: usize,
}

impl Layout {
    pub fn new(model: &MjModel, file: &Path) -> Result<Self, SimError> {
        use mujoco_rs::mujoco_c::_mjtObjBase::*;
        let names = servo_names();
        let joint = |name: &str| id_of(model, file, mjOBJ_JOINT, name);
        let actuator = |name: &str| id_of(model, file, mjOBJ_ACTUATOR, name);
        let sensor = |name: &str| -> Result<usize, SimError> {
            let id = id_of(model, file, mjOBJ_SENSOR, name)?;
            Ok(model.sensor_adr()[id] as usize)
        };
        let mut l = Layout {
            servo_qpos: [0; NUM_SERVOS],
            servo_dof: [0; NUM_SERVOS],
            servo_actuator: [0; NUM_SERVOS],
            servo_range: [[0.0; 2]; NUM_SERVOS],
            grip_actuator: [0; NUM_FEET],
            foot_body: [0; NUM_FEET],
            foot_geom: [0; NUM_FEET],
            torso_body: id_of(model, file, mjOBJ_BODY, "torso")?,
            torso_geom: id_of(model, file, mjOBJ_GEOM, "torso")?,
            floor_geom: id_of(model, file, mjOBJ_GEOM, "floor")?,
            stand_key: id_of(model, file, mjOBJ_KEY, "stand")?,
            sensor_quat: sensor("imu_quat")?,
            sensor_gyro: sensor("imu_gyro")?,
            sensor_acc: sensor("imu_acc")?,
            sensor_contact: [0; NUM_FEET],
            sensor_linvel: sensor("base_linvel")?,
            sensor_torso_contact: sensor("torso_contact")?,
        };
        for (i, name) in names.iter().enumerate() {
            let j = joint(name)?;
            l.servo_qpos[i] = model.jnt_qposadr()[j] as usize;
            l.servo_dof[i] = model.jnt_dofadr()[j] as usize;
            l.servo_range[i] = model.jnt_range()[j];
            if l.servo_range[i] != JOINT_LIMITS[i] {
                return Err(SimError::ModelMismatch {
                    file: file.to_path_buf(),
                    reason: format!(
                        "joint {name} has range {:?}, the robot layout (clawrl-robot) says {:?}",
                        l.servo_range[i], JOINT_LIMITS[i]
                    ),
                });
            }
            l.servo_actuator[i] = actuator(name)?;
        }
        for (f, leg) in LEGS.iter().enumerate() {
            l.grip_actuator[f] = actuator(&format!("{leg}_grip"))?;
            l.foot_body[f] = id_of(model, file, mjOBJ_BODY, &format!("{leg}_foot"))?;
            l.foot_geom[f] = id_of(model, file, mjOBJ_GEOM, &format!("{leg}_foot"))?;
            l.sensor_contact[f] = sensor(&format!("{leg}_contact"))?;
        }
        Ok(l)
    }

    /// Checks that the model's `stand` keyframe is the robot layout's default pose (the
    /// simulator resets to the keyframe; the action map and the runtime use the constant).
    pub fn check_default_pose(&self, model: &MjModel, file: &Path) -> Result<(), SimError> {
        let nq = model.ffi().nq as usize;
        let key = &model.key_qpos()[self.stand_key * nq..(self.stand_key + 1) * nq];
        let names = servo_names();
        for (i, name) in names.iter().enumerate() {
            if key[self.servo_qpos[i]] != DEFAULT_POSE[i] {
                return Err(SimError::ModelMismatch {
                    file: file.to_path_buf(),
                    reason: format!(
                        "keyframe `stand` puts {name} at {}, the robot layout's default pose is {}",
                        key[self.servo_qpos[i]], DEFAULT_POSE[i]
                    ),
                });
            }
        }
        Ok(())
    }
}
