//! Where the robot's parts live in MuJoCo's arrays, looked up by name once at load time, so
//! the rest of the task never hard-codes an index (the body tree puts each claw joint between
//! legs in qpos; the actuators list legs first, claws after).
use std::path::Path;

use mujoco_rs::prelude::*;

use clawrl_robot::description::{JointKind, RobotDescription};

use crate::SimError;
use crate::description::LoadedRobot;
use crate::model::id_of;

// The task sizes itself from the robot's description (robots/NAME/robot.toml, checked against
// the MJCF when it loads): servo count, order, kinds, limits and the default pose. What stays
// fixed is the task's shape, a quadruped (four feet); the claw-foot quadruped's constants are
// re-exported for the tests and benches that drive that robot by index.
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

/// Indices into qpos/qvel/ctrl/sensordata for everything the task reads or writes; per servo
/// in the description's servo (action) order.
#[derive(Debug, Clone)]
pub struct Layout {
    pub servo_qpos: Vec<usize>,
    pub servo_dof: Vec<usize>,
    pub servo_actuator: Vec<usize>,
    /// Joint limits per servo (rad).
    pub servo_range: Vec<[f64; 2]>,
    /// The leg joints' servo indices (kind `leg`), in servo order: what the pose and power
    /// terms of the reward look at.
    pub leg_servos: Vec<usize>,
    /// Per foot, on a claw foot: its claw's servo index and the adhesion actuator that stands
    /// in for the claw's grip. A robot without claws has none.
    pub claw: [Option<FootClaw>; NUM_FEET],
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

/// A claw foot's claw: the servo that closes it and the actuator that grips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FootClaw {
    pub servo: usize,
    pub grip_actuator: usize,
}

impl Layout {
    pub fn servo_count(&self) -> usize {
        self.servo_qpos.len()
    }

    /// Whether servo `i` is a foot's claw (its target is a grip, not a joint pose).
    pub fn is_claw(&self, i: usize) -> bool {
        self.claw.iter().flatten().any(|c| c.servo == i)
    }
}

impl Layout {
    /// Looks up, by the names `robot`'s description gives, everything the task reads or
    /// writes. A description of another shape than the task's (four feet, at most
    /// [`NUM_SERVOS`] servos, a foot's claw a claw servo) is refused here, naming the
    /// difference.
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
            servo_qpos: Vec::new(),
            servo_dof: Vec::new(),
            servo_actuator: Vec::new(),
            servo_range: Vec::new(),
            leg_servos: Vec::new(),
            claw: [None; NUM_FEET],
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
            l.servo_qpos.push(model.jnt_qposadr()[j] as usize);
            l.servo_dof.push(model.jnt_dofadr()[j] as usize);
            // The description's limits: the MJCF's range, or a narrower one it gives.
            l.servo_range.push(s.limits);
            l.servo_actuator.push(actuator_on(model, j).ok_or_else(|| {
                mismatch(
                    file,
                    format!("servo {}: no actuator drives joint `{}`", s.name, s.joint),
                )
            })?);
            if s.kind == JointKind::Leg {
                l.leg_servos.push(i);
            }
        }
        for (f, foot) in d.feet.iter().enumerate() {
            l.claw[f] = foot_claw(model, file, d, f)?;
            l.foot_body[f] = id_of(model, file, mjOBJ_BODY, &foot.body)?;
            l.foot_geom[f] = id_of(model, file, mjOBJ_GEOM, &foot.geom)?;
            l.sensor_contact[f] = sensor(&foot.contact_sensor)?;
        }
        Ok(l)
    }
}

/// Foot `f`'s claw (servo and grip actuator), if it has one; a claw named without its grip
/// actuator, or a grip without a claw, is refused.
fn foot_claw(
    model: &MjModel,
    file: &Path,
    d: &RobotDescription,
    f: usize,
) -> Result<Option<FootClaw>, SimError> {
    use mujoco_rs::mujoco_c::_mjtObjBase::mjOBJ_ACTUATOR;
    let foot = &d.feet[f];
    match (&foot.claw, &foot.grip_actuator) {
        (None, None) => Ok(None),
        (Some(claw), Some(grip)) => Ok(Some(FootClaw {
            servo: d
                .servos
                .iter()
                .position(|s| &s.name == claw)
                .ok_or_else(|| {
                    mismatch(
                        file,
                        format!("foot {}: claw `{claw}` is no servo", foot.name),
                    )
                })?,
            grip_actuator: id_of(model, file, mjOBJ_ACTUATOR, grip)?,
        })),
        (claw, grip) => Err(mismatch(
            file,
            format!(
                "foot {}: a claw foot names both its claw and its grip_actuator (claw {claw:?}, grip_actuator {grip:?})",
                foot.name
            ),
        )),
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

/// The quadruped task's shape: four feet, no more servos than a board drives (the sensor
/// arrays' room), and every foot's claw a claw servo.
fn check_shape(d: &RobotDescription, file: &Path) -> Result<(), SimError> {
    if d.servos.len() > NUM_SERVOS || d.feet.len() != NUM_FEET {
        return Err(mismatch(
            file,
            format!(
                "robot {} has {} servos and {} feet; the quadruped task drives at most {NUM_SERVOS} servos on {NUM_FEET} feet",
                d.name,
                d.servos.len(),
                d.feet.len()
            ),
        ));
    }
    for foot in &d.feet {
        let Some(claw) = &foot.claw else { continue };
        if let Some(s) = d.servo(claw).filter(|s| s.kind != JointKind::Claw) {
            return Err(mismatch(
                file,
                format!(
                    "foot {}: its claw {} is {}, not a claw",
                    foot.name,
                    s.name,
                    s.kind.as_str()
                ),
            ));
        }
    }
    Ok(())
}
