//! Where the robot's parts live in MuJoCo's arrays, looked up by name once at load time, so
//! the rest of the task never hard-codes an index (the body tree puts each claw joint between
//! legs in qpos; the actuators list legs first, claws after).
use std::path::Path;

use mujoco_rs::prelude::*;

use clawrl_robot::description::RobotDescription;

use crate::SimError;
use crate::description::LoadedRobot;
use crate::model::id_of;

// The servo count and order are still the claw-foot quadruped's (clawrl-robot); names, limits
// and the default pose come from the robot's description (robots/NAME/robot.toml), which is
// checked against the MJCF when it loads.
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
    /// Looks up, by the names `robot`'s description gives, everything the task reads or
    /// writes. The task's arrays are sized for the claw-foot quadruped (16 servos, 4 claw feet,
    /// claws after the leg joints); a description of another shape is refused here, naming
    /// the difference.
    pub fn new(model: &MjModel, robot: &LoadedRobot) -> Result<Self, SimError> {
        use mujoco_rs::mujoco_c::_mjtObjBase::*;
        let file = robot.mjcf.as_path();
        let d = &robot.description;
        check_shape(d, file)?;
        let sensor = |name: &str| -> Result<usize, SimError> {
            let id = id_of(model, file, mjOBJ_SENSOR, name)?;
            Ok(model.sensor_adr()[id] as usize)
        };
        let key = &robot.file.robot.stand_keyframe;
        let mut l = Layout {
            servo_qpos: [0; NUM_SERVOS],
            servo_dof: [0; NUM_SERVOS],
            servo_actuator: [0; NUM_SERVOS],
            servo_range: [[0.0; 2]; NUM_SERVOS],
            grip_actuator: [0; NUM_FEET],
            foot_body: [0; NUM_FEET],
            foot_geom: [0; NUM_FEET],
            torso_body: id_of(model, file, mjOBJ_BODY, &d.trunk.body)?,
            torso_geom: id_of(model, file, mjOBJ_GEOM, &d.trunk.geom)?,
            floor_geom: id_of(model, file, mjOBJ_GEOM, "floor")?,
            stand_key: id_of(model, file, mjOBJ_KEY, key)?,
            sensor_quat: sensor(&d.imu.quat_sensor)?,
            sensor_gyro: sensor(&d.imu.gyro_sensor)?,
            sensor_acc: sensor(&d.imu.acc_sensor)?,
            sensor_contact: [0; NUM_FEET],
            sensor_linvel: sensor(&d.trunk.velocity_sensor)?,
            sensor_torso_contact: sensor(&d.trunk.contact_sensor)?,
        };
        for (i, s) in d.servos.iter().enumerate() {
            let j = id_of(model, file, mjOBJ_JOINT, &s.joint)?;
            l.servo_qpos[i] = model.jnt_qposadr()[j] as usize;
            l.servo_dof[i] = model.jnt_dofadr()[j] as usize;
            // The description's limits: the MJCF's range, or a narrower one it gives.
            l.servo_range[i] = s.limits;
            l.servo_actuator[i] = actuator_on(model, j).ok_or_else(|| {
                mismatch(
                    file,
                    format!("servo {}: no actuator drives joint `{}`", s.name, s.joint),
                )
            })?;
        }
        for (f, foot) in d.feet.iter().enumerate() {
            let grip = foot.grip_actuator.as_deref().ok_or_else(|| {
                mismatch(
                    file,
                    format!(
                        "foot {}: no grip_actuator (this task's feet are claw feet)",
                        foot.name
                    ),
                )
            })?;
            l.grip_actuator[f] = id_of(model, file, mjOBJ_ACTUATOR, grip)?;
            l.foot_body[f] = id_of(model, file, mjOBJ_BODY, &foot.body)?;
            l.foot_geom[f] = id_of(model, file, mjOBJ_GEOM, &foot.geom)?;
            l.sensor_contact[f] = sensor(&foot.contact_sensor)?;
        }
        Ok(l)
    }
}

/// The actuator with a joint transmission on joint `j` (the description's check made it one).
fn actuator_on(model: &MjModel, j: usize) -> Option<usize> {
    (0..model.ffi().nu as usize).find(|&a| {
        model.actuator_trntype()[a] == MjtTrn::mjTRN_JOINT
            && model.actuator_trnid()[a][0] as usize == j
    })
}

fn mismatch(file: &Path, reason: String) -> SimError {
    SimError::ModelMismatch {
        file: file.to_path_buf(),
        reason,
    }
}

/// The quadruped task's shape: 12 leg joints, then 4 claws, and 4 feet whose claws are those,
/// in the feet's order. Until the task sizes itself from the description (issue 41), another
/// shape is refused with what differs.
fn check_shape(d: &RobotDescription, file: &Path) -> Result<(), SimError> {
    use clawrl_robot::description::JointKind;
    if d.servos.len() != NUM_SERVOS || d.feet.len() != NUM_FEET {
        return Err(mismatch(
            file,
            format!(
                "robot {} has {} servos and {} feet; the quadruped task drives {NUM_SERVOS} and {NUM_FEET}",
                d.name,
                d.servos.len(),
                d.feet.len()
            ),
        ));
    }
    for (i, s) in d.servos.iter().enumerate() {
        let claw = i >= NUM_LEG_SERVOS;
        if (s.kind == JointKind::Claw) != claw {
            let want = if claw { "a claw" } else { "a leg joint" };
            return Err(mismatch(
                file,
                format!(
                    "servo {} (action {i}) is {}, the task expects {want}",
                    s.name,
                    s.kind.as_str()
                ),
            ));
        }
    }
    for (f, foot) in d.feet.iter().enumerate() {
        let want = &d.servos[NUM_LEG_SERVOS + f].name;
        if foot.claw.as_ref() != Some(want) {
            return Err(mismatch(
                file,
                format!(
                    "foot {} (foot {f}) has claw {:?}, the task expects {want}",
                    foot.name, foot.claw
                ),
            ));
        }
    }
    Ok(())
}
