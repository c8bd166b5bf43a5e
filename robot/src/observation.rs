//! The onboard observation: what the robot computer sees, built from raw sensor values by one
//! function that the simulator and the runtime both call.
//!
//! Claw-foot quadruped, in order (units): gyro (3, rad/s), gravity in the body frame (3, unit
//! vector from the IMU's orientation), accelerometer (3, g), joint positions relative to the
//! default pose (16, rad, as the servos read them), joint velocities (16, rad/s), last action
//! (16), command (3: forward m/s, lateral m/s, yaw rate rad/s).
use serde::{Deserialize, Serialize};

use crate::quadruped::{self, NUM_SERVOS};

/// One entry of an observation vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObsEntry {
    pub name: String,
    pub unit: String,
}

/// How raw sensor values become the onboard observation of one robot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnboardLayout {
    /// Robot model name (`claw_quadruped`, `cartpole`).
    pub robot: String,
    pub entries: Vec<ObsEntry>,
    /// Subtracted from the servo readings (the default pose), servo order.
    pub joint_offset: Vec<f64>,
    /// Multiplies the accelerometer (m/s² -> g).
    pub accelerometer_scale: f64,
}

/// Raw sensor values of the claw-foot quadruped, in SI units.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct OnboardSensors {
    pub gyro: [f64; 3],
    /// IMU orientation (w, x, y, z), body to world.
    pub quat: [f64; 4],
    /// m/s².
    pub acc: [f64; 3],
    /// Servo readings, rad.
    pub joint_pos: [f64; NUM_SERVOS],
    pub joint_vel: [f64; NUM_SERVOS],
}

/// Start of each group in the quadruped's onboard vector.
pub mod offsets {
    use crate::quadruped::NUM_SERVOS;
    pub const GYRO: usize = 0;
    pub const GRAVITY: usize = 3;
    pub const ACC: usize = 6;
    pub const JOINT_POS: usize = 9;
    pub const JOINT_VEL: usize = JOINT_POS + NUM_SERVOS;
    pub const LAST_ACTION: usize = JOINT_VEL + NUM_SERVOS;
    pub const COMMAND: usize = LAST_ACTION + NUM_SERVOS;
    pub const DIM: usize = COMMAND + 3;
}

impl OnboardLayout {
    /// The claw-foot quadruped's onboard layout.
    pub fn quadruped() -> Self {
        let mut e = Vec::new();
        let mut add = |name: String, unit: &str| {
            e.push(ObsEntry {
                name,
                unit: unit.into(),
            })
        };
        for a in ["x", "y", "z"] {
            add(format!("gyro_{a}"), "rad/s");
        }
        for a in ["x", "y", "z"] {
            add(format!("gravity_{a}"), "1");
        }
        for a in ["x", "y", "z"] {
            add(format!("acc_{a}"), "g");
        }
        let servos = quadruped::servo_names();
        for s in &servos {
            add(format!("{s}_pos"), "rad");
        }
        for s in &servos {
            add(format!("{s}_vel"), "rad/s");
        }
        for s in &servos {
            add(format!("{s}_last_action"), "1");
        }
        add("command_forward".into(), "m/s");
        add("command_lateral".into(), "m/s");
        add("command_yaw_rate".into(), "rad/s");
        debug_assert_eq!(e.len(), offsets::DIM);
        Self {
            robot: quadruped::MODEL_NAME.into(),
            entries: e,
            joint_offset: quadruped::DEFAULT_POSE.to_vec(),
            accelerometer_scale: 1.0 / quadruped::G,
        }
    }

    /// Cart-pole's onboard layout: positions only, no velocities (a student must infer them
    /// from its history).
    pub fn cartpole() -> Self {
        let entry = |n: &str, u: &str| ObsEntry {
            name: n.into(),
            unit: u.into(),
        };
        Self {
            robot: "cartpole".into(),
            entries: vec![
                entry("cart_pos", "m"),
                entry("cos_angle", "1"),
                entry("sin_angle", "1"),
            ],
            joint_offset: Vec::new(),
            accelerometer_scale: 1.0,
        }
    }

    pub fn dim(&self) -> usize {
        self.entries.len()
    }

    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.name.clone()).collect()
    }

    /// The quadruped's onboard vector in f64 (the simulator adds its sensor noise to these
    /// before rounding to f32; the runtime rounds them as they are).
    pub fn quadruped_values(
        &self,
        s: &OnboardSensors,
        last_action: &[f32],
        command: [f64; 3],
        out: &mut [f64],
    ) {
        use offsets::*;
        assert_eq!(out.len(), DIM, "quadruped onboard observation length");
        out[GYRO..GRAVITY].copy_from_slice(&s.gyro);
        out[GRAVITY..ACC].copy_from_slice(&gravity_in_body(s.quat));
        for (o, a) in out[ACC..JOINT_POS].iter_mut().zip(s.acc) {
            *o = a * self.accelerometer_scale;
        }
        for i in 0..NUM_SERVOS {
            out[JOINT_POS + i] = s.joint_pos[i] - self.joint_offset[i];
            out[JOINT_VEL + i] = s.joint_vel[i];
            out[LAST_ACTION + i] = f64::from(last_action[i]);
        }
        out[COMMAND..DIM].copy_from_slice(&command);
    }
}

/// Gravity's direction (unit, pointing down) in the body frame, from the body-to-world
/// orientation `q` (w, x, y, z): the world's `-z` rotated by the inverse of `q`.
pub fn gravity_in_body(q: [f64; 4]) -> [f64; 3] {
    crate::rotation::rotate_inv(q, [0.0, 0.0, -1.0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upright_robot_in_its_default_pose() {
        let l = OnboardLayout::quadruped();
        let s = OnboardSensors {
            quat: [1.0, 0.0, 0.0, 0.0],
            acc: [0.0, 0.0, quadruped::G],
            joint_pos: quadruped::DEFAULT_POSE,
            ..Default::default()
        };
        let mut out = vec![9.0; l.dim()];
        l.quadruped_values(&s, &[0.5; 16], [0.3, 0.0, 0.1], &mut out);
        assert_eq!(&out[3..9], &[0.0, 0.0, -1.0, 0.0, 0.0, 1.0]);
        assert!(out[9..41].iter().all(|&x| x == 0.0));
        assert!(out[41..57].iter().all(|&x| x == 0.5));
        assert_eq!(&out[57..], &[0.3, 0.0, 0.1]);
        assert_eq!(l.names()[9], "FL_hip_abd_pos");
    }

    #[test]
    fn a_quarter_roll_puts_gravity_along_the_body_y_axis() {
        let h = std::f64::consts::FRAC_PI_4;
        let g = gravity_in_body([h.cos(), h.sin(), 0.0, 0.0]);
        assert!((g[1] + 1.0).abs() < 1e-12 && g[2].abs() < 1e-12, "{g:?}");
    }
}
