//! The onboard observation: what the robot computer sees, built from raw sensor values by one
//! function that the simulator and the runtime both call.
//!
//! A legged robot of `n` servos (the robot description's, in its servo order), in order
//! (units): gyro (3, rad/s), gravity in the body frame (3, unit vector from the IMU's
//! orientation), accelerometer (3, g), joint positions relative to the default pose (n, rad, as
//! the servos read them), joint velocities (n, rad/s), last action (n), command (3: forward
//! m/s, lateral m/s, yaw rate rad/s). The claw-foot quadruped has n = 16: 60 numbers.
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

/// Raw sensor values of a legged robot, in SI units. The joint arrays have room for the
/// protocol's servo count ([`NUM_SERVOS`], the most one board drives); a robot of fewer servos
/// uses the first `n` (its [`OnboardLayout::servo_count`]) and leaves the rest at zero.
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

/// Start of each group in the onboard vector of a robot of `n` servos.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offsets {
    pub joint_pos: usize,
    pub joint_vel: usize,
    pub last_action: usize,
    pub command: usize,
    pub dim: usize,
}

impl Offsets {
    pub const fn for_servos(n: usize) -> Self {
        let joint_pos = offsets::JOINT_POS;
        Self {
            joint_pos,
            joint_vel: joint_pos + n,
            last_action: joint_pos + 2 * n,
            command: joint_pos + 3 * n,
            dim: joint_pos + 3 * n + 3,
        }
    }
}

/// Start of each group in the claw-foot quadruped's onboard vector (16 servos); the IMU's
/// groups start at the same place for every robot.
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
        Self::legged(
            quadruped::MODEL_NAME,
            &quadruped::servo_names(),
            &quadruped::DEFAULT_POSE,
        )
    }

    /// The onboard layout of a legged robot: its servos by name, in action order, and its
    /// default pose (what joint positions are measured from).
    ///
    /// # Panics
    /// When the names and the pose differ in length, or there are more servos than a board
    /// drives ([`NUM_SERVOS`]): the simulator's layout refuses a robot of more when it loads.
    pub fn legged(robot: &str, servos: &[String], default_pose: &[f64]) -> Self {
        assert_eq!(
            servos.len(),
            default_pose.len(),
            "one default angle per servo"
        );
        assert!(servos.len() <= NUM_SERVOS, "at most {NUM_SERVOS} servos");
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
        for s in servos {
            add(format!("{s}_pos"), "rad");
        }
        for s in servos {
            add(format!("{s}_vel"), "rad/s");
        }
        for s in servos {
            add(format!("{s}_last_action"), "1");
        }
        add("command_forward".into(), "m/s");
        add("command_lateral".into(), "m/s");
        add("command_yaw_rate".into(), "rad/s");
        debug_assert_eq!(e.len(), Offsets::for_servos(servos.len()).dim);
        Self {
            robot: robot.into(),
            entries: e,
            joint_offset: default_pose.to_vec(),
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

    /// How many servos the vector holds (a legged robot's; 0 for cart-pole).
    pub fn servo_count(&self) -> usize {
        self.joint_offset.len()
    }

    /// Where each group starts (a legged robot's layout).
    pub fn offsets(&self) -> Offsets {
        Offsets::for_servos(self.servo_count())
    }

    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.name.clone()).collect()
    }

    /// A legged robot's onboard vector in f64 (the simulator adds its sensor noise to these
    /// before rounding to f32; the runtime rounds them as they are).
    pub fn quadruped_values(
        &self,
        s: &OnboardSensors,
        last_action: &[f32],
        command: [f64; 3],
        out: &mut [f64],
    ) {
        use offsets::{ACC, GRAVITY, GYRO, JOINT_POS};
        let o = self.offsets();
        assert_eq!(out.len(), o.dim, "onboard observation length");
        out[GYRO..GRAVITY].copy_from_slice(&s.gyro);
        out[GRAVITY..ACC].copy_from_slice(&gravity_in_body(s.quat));
        for (v, a) in out[ACC..JOINT_POS].iter_mut().zip(s.acc) {
            *v = a * self.accelerometer_scale;
        }
        for i in 0..self.servo_count() {
            out[o.joint_pos + i] = s.joint_pos[i] - self.joint_offset[i];
            out[o.joint_vel + i] = s.joint_vel[i];
            out[o.last_action + i] = f64::from(last_action[i]);
        }
        out[o.command..o.dim].copy_from_slice(&command);
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
    fn a_twelve_servo_robot_gets_a_twelve_servo_vector() {
        let names: Vec<String> = (0..12).map(|i| format!("s{i}")).collect();
        let l = OnboardLayout::legged("pup", &names, &[0.25; 12]);
        assert_eq!(l.dim(), 9 + 36 + 3);
        let s = OnboardSensors {
            quat: [1.0, 0.0, 0.0, 0.0],
            joint_pos: [0.5; NUM_SERVOS],
            joint_vel: [2.0; NUM_SERVOS],
            ..Default::default()
        };
        let mut out = vec![9.0; l.dim()];
        l.quadruped_values(&s, &[0.75; 12], [0.3, 0.0, 0.1], &mut out);
        assert!(out[9..21].iter().all(|&x| x == 0.25), "{out:?}");
        assert!(out[21..33].iter().all(|&x| x == 2.0));
        assert!(out[33..45].iter().all(|&x| x == 0.75));
        assert_eq!(&out[45..], &[0.3, 0.0, 0.1]);
        assert_eq!(l.names()[45], "command_forward");
        assert_eq!(l.offsets(), Offsets::for_servos(12));
        assert_eq!(Offsets::for_servos(16).command, offsets::COMMAND);
    }

    #[test]
    fn a_quarter_roll_puts_gravity_along_the_body_y_axis() {
        let h = std::f64::consts::FRAC_PI_4;
        let g = gravity_in_body([h.cos(), h.sin(), 0.0, 0.0]);
        assert!((g[1] + 1.0).abs() < 1e-12 && g[2].abs() < 1e-12, "{g:?}");
    }
}
