//! The two observation layouts of the quadruped.
//!
//! `onboard` (what the robot computer sees, with sensor noise):
//!   gyro (3, rad/s), gravity in the body frame (3, from the IMU's orientation),
//!   accelerometer (3, g), joint positions relative to the default pose (16, rad, as the servos
//!   read them), joint velocities (16, rad/s), last action (16), command (3).
//! `privileged` = onboard followed by simulation-only quantities:
//!   base linear velocity in the body frame (3, m/s), torso height above the floor (1, m),
//!   friction (1), torso payload (1, kg), servo strength (1), foot contact forces (4, N / 10),
//!   floor height around each foot relative to the torso (4 feet x 3 points, m).
use super::QuadrupedEnv;
use super::layout::{LEGS, NUM_FEET, NUM_SERVOS, servo_names};
use super::math::{Vec3, rotate_inv};
use crate::rng::uniform;

pub const ONBOARD_DIM: usize = 3 + 3 + 3 + NUM_SERVOS * 3 + 3;
const HEIGHT_POINTS: [f64; 3] = [-0.05, 0.0, 0.05];
pub const PRIVILEGED_EXTRA: usize = 3 + 1 + 1 + 1 + 1 + NUM_FEET + NUM_FEET * HEIGHT_POINTS.len();
pub const PRIVILEGED_DIM: usize = ONBOARD_DIM + PRIVILEGED_EXTRA;

const G: f64 = 9.81;

/// Names of the privileged layout's entries (onboard is its first `ONBOARD_DIM`).
pub fn names() -> Vec<String> {
    let xyz = |p: &str| ["x", "y", "z"].map(|a| format!("{p}_{a}"));
    let servos = servo_names();
    let mut n: Vec<String> = Vec::new();
    n.extend(xyz("gyro"));
    n.extend(xyz("gravity"));
    n.extend(xyz("acc"));
    n.extend(servos.iter().map(|s| format!("{s}_pos")));
    n.extend(servos.iter().map(|s| format!("{s}_vel")));
    n.extend(servos.iter().map(|s| format!("{s}_last_action")));
    n.extend(["command_forward", "command_lateral", "command_yaw_rate"].map(String::from));
    n.extend(xyz("base_lin_vel"));
    n.extend(["base_height", "friction", "torso_payload", "servo_strength"].map(String::from));
    n.extend(LEGS.iter().map(|l| format!("{l}_contact_force")));
    for l in LEGS {
        n.extend(
            HEIGHT_POINTS
                .iter()
                .map(|dx| format!("{l}_floor_height_{dx:+.2}")),
        );
    }
    debug_assert_eq!(n.len(), PRIVILEGED_DIM);
    n
}

impl QuadrupedEnv {
    /// Recomputes both layouts from the current state, drawing fresh sensor noise. Called once
    /// per reset and step, so `observe` is a copy.
    pub(super) fn update_observation(&mut self) {
        let l = &self.robot.layout;
        let n = &self.cfg.noise;
        let quat = self.base_quat();
        let gyro = self.sensor(l.sensor_gyro);
        let gravity = rotate_inv(quat, [0.0, 0.0, -1.0]);
        let acc = self.sensor(l.sensor_acc).map(|a| a / G);
        let (qpos, qvel) = (self.data.qpos(), self.data.qvel());
        let joint_pos: [f64; NUM_SERVOS] = std::array::from_fn(|i| {
            qpos[l.servo_qpos[i]] + self.params.joint_offset[i] - self.robot.default_pose[i]
        });
        let joint_vel: [f64; NUM_SERVOS] = std::array::from_fn(|i| qvel[l.servo_dof[i]]);

        let mut o = Writer {
            out: &mut self.onboard,
            at: 0,
        };
        let rng = &mut self.rng;
        let mut noisy = |x: f64, scale: f64| x + uniform(rng, [-scale, scale]);
        o.extend(gyro.map(|x| noisy(x, n.gyro)));
        o.extend(gravity.map(|x| noisy(x, n.gravity)));
        o.extend(acc.map(|x| noisy(x, n.accelerometer)));
        o.extend(joint_pos.map(|x| noisy(x, n.joint_pos)));
        o.extend(joint_vel.map(|x| noisy(x, n.joint_vel)));
        o.extend(self.action.map(f64::from));
        o.extend(self.command);
        debug_assert_eq!(o.at, ONBOARD_DIM);

        let extra = self.privileged_extra();
        self.privileged[..ONBOARD_DIM].copy_from_slice(&self.onboard);
        self.privileged[ONBOARD_DIM..].copy_from_slice(&extra);
    }

    fn privileged_extra(&self) -> [f32; PRIVILEGED_EXTRA] {
        let l = &self.robot.layout;
        let mut extra = [0.0f32; PRIVILEGED_EXTRA];
        let mut o = Writer {
            out: &mut extra,
            at: 0,
        };
        o.extend(self.sensor(l.sensor_linvel));
        o.extend([
            self.height(),
            self.params.friction,
            self.params.torso_added_mass,
            self.params.servo_strength,
        ]);
        o.extend(self.foot_forces().map(|f| f / 10.0));
        let base = self.base_pos();
        let heading = rotate_inv(self.base_quat(), [1.0, 0.0, 0.0]);
        let forward = {
            // The body's forward axis projected on the ground plane (x, y only).
            let norm = heading[0].hypot(heading[1]).max(1e-6);
            [heading[0] / norm, heading[1] / norm]
        };
        for &body in &l.foot_body {
            let foot = self.data.xpos()[body];
            for dx in HEIGHT_POINTS {
                let p = [foot[0] + forward[0] * dx, foot[1] + forward[1] * dx];
                o.extend([self.floor_height(p) - base[2]]);
            }
        }
        extra
    }

    /// Height of the floor plane (through the origin) at a horizontal point.
    fn floor_height(&self, [x, y]: [f64; 2]) -> f64 {
        let n: Vec3 = self.params.floor_normal;
        -(n[0] * x + n[1] * y) / n[2]
    }
}

/// Appends f64 values as f32 to a fixed buffer.
struct Writer<'a> {
    out: &'a mut [f32],
    at: usize,
}

impl Writer<'_> {
    fn extend(&mut self, values: impl IntoIterator<Item = f64>) {
        for v in values {
            self.out[self.at] = v as f32;
            self.at += 1;
        }
    }
}
