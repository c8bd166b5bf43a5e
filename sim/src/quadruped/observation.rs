//! The two observation layouts of the quadruped.
//!
//! `onboard` (what the robot computer sees, with sensor noise):
//!   gyro (3, rad/s), gravity in the body frame (3, from the IMU's orientation),
//!   accelerometer (3, g), joint positions relative to the default pose (n, rad, as the servos
//!   read them), joint velocities (n, rad/s), last action (n), command (3), for the robot's n
//!   servos (16 on the claw-foot quadruped).
//! `privileged` = onboard followed by simulation-only quantities:
//!   base linear velocity in the body frame (3, m/s), torso height above the floor (1, m),
//!   friction (1), torso payload (1, kg), servo strength (1), foot contact forces (4, N / 10),
//!   floor height around each foot relative to the torso (4 feet x 3 points, m).
use super::QuadrupedEnv;
use clawrl_robot::OnboardLayout;
use clawrl_robot::observation::offsets;

use super::layout::NUM_FEET;
use super::math::{Vec3, rotate_inv};
use crate::rng::{SimRng, uniform};
use clawrl_robot::OnboardSensors;

/// The claw-foot quadruped's onboard length (16 servos); a robot of n servos has 9 + 3n + 3.
pub const ONBOARD_DIM: usize = offsets::DIM;
const HEIGHT_POINTS: [f64; 3] = [-0.05, 0.0, 0.05];
/// What the privileged observation adds to the onboard one: the same for every quadruped.
pub const PRIVILEGED_EXTRA: usize = 3 + 1 + 1 + 1 + 1 + NUM_FEET + NUM_FEET * HEIGHT_POINTS.len();
/// The claw-foot quadruped's privileged length.
pub const PRIVILEGED_DIM: usize = ONBOARD_DIM + PRIVILEGED_EXTRA;
/// The friction a privileged observation reports with `env.privileged_friction = false`: the
/// middle of the field's range (MuJoCo Playground's U(0.4, 1.0)), one constant whatever the
/// config's range, so a `--set` of the friction for an evaluation does not change the input.
pub const HIDDEN_FRICTION: f64 = 0.7;

/// The gait clock's entries at the end of the privileged observation: sine and cosine of its
/// phase (both 0 at a stand), when the task has a clock (`rewards.gait_frequency_hz`).
pub fn clock_dim(cfg: &super::TaskConfig) -> usize {
    if cfg.rewards.gait_frequency_hz > 0.0 {
        2
    } else {
        0
    }
}

/// Names of the privileged layout's entries (onboard is its first `onboard.dim()`), the feet
/// by their description names.
pub fn names(onboard: &OnboardLayout, feet: &[String], cfg: &super::TaskConfig) -> Vec<String> {
    let xyz = |p: &str| ["x", "y", "z"].map(|a| format!("{p}_{a}"));
    let mut n: Vec<String> = onboard.names();
    n.extend(xyz("base_lin_vel"));
    n.extend(["base_height", "friction", "torso_payload", "servo_strength"].map(String::from));
    n.extend(feet.iter().map(|l| format!("{l}_contact_force")));
    for l in feet {
        n.extend(
            HEIGHT_POINTS
                .iter()
                .map(|dx| format!("{l}_floor_height_{dx:+.2}")),
        );
    }
    if clock_dim(cfg) > 0 {
        n.extend(["gait_clock_sin", "gait_clock_cos"].map(String::from));
    }
    debug_assert_eq!(n.len(), onboard.dim() + PRIVILEGED_EXTRA + clock_dim(cfg));
    n
}

impl QuadrupedEnv {
    /// Recomputes both layouts from the current state, drawing fresh sensor noise. Called once
    /// per reset and step, so `observe` is a copy.
    pub(super) fn update_observation(&mut self) {
        let n = &self.cfg.noise;
        // What the sensors read (the servos their own angle plus a calibration error), through
        // the board when `noise.board_sensor_path` is on: what the runtime decodes from it.
        let sensors = self.sensors_as_read();
        // The runtime builds its observation with the same function (clawrl-robot).
        let layout = &self.spec.onboard_layout;
        let mut values = std::mem::take(&mut self.onboard_f64);
        layout.quadruped_values(&sensors, &self.action, self.command, &mut values);
        // Sensor noise in the observation's own units, drawn group by group.
        let (o, servos) = (layout.offsets(), layout.servo_count());
        let noise = [
            (offsets::GYRO, 3, n.gyro),
            (offsets::GRAVITY, 3, n.gravity),
            (offsets::ACC, 3, n.accelerometer),
            (o.joint_pos, servos, n.joint_pos),
            (o.joint_vel, servos, n.joint_vel),
        ];
        for (start, len, amplitude) in noise {
            let scale = amplitude * self.params.noise_scale;
            for v in &mut values[start..start + len] {
                *v += uniform(&mut self.rng, [-scale, scale]);
            }
        }
        for (o, v) in self.onboard.iter_mut().zip(&values) {
            *o = *v as f32;
        }
        self.onboard_f64 = values;
        self.sensors = sensors;

        let extra = self.privileged_extra();
        let dim = self.onboard.len();
        self.privileged[..dim].copy_from_slice(&self.onboard);
        self.privileged[dim..dim + PRIVILEGED_EXTRA].copy_from_slice(&extra);
        if clock_dim(&self.cfg) > 0 {
            let on = f64::from(u8::from(super::reward::moving(self.command)));
            let angle = std::f64::consts::TAU * self.gait_phase;
            let at = dim + PRIVILEGED_EXTRA;
            self.privileged[at] = (on * angle.sin()) as f32;
            self.privileged[at + 1] = (on * angle.cos()) as f32;
        }
    }

    /// `s` plus this episode's sensor noise in the sensors' own units (the observation's
    /// amplitudes: gyro rad/s, accelerometer g, joint rad and rad/s, times the episode's noise
    /// scale), drawn from `rng`: what a runtime reading a noisy board decodes. The HIL
    /// reference feeds the runtime's controller this, so it sees what the policy trained on.
    /// Gravity gets none: the runtime derives it from the orientation.
    pub fn with_sensor_noise(&self, mut s: OnboardSensors, rng: &mut SimRng) -> OnboardSensors {
        let n = &self.cfg.noise;
        let k = self.params.noise_scale;
        let mut add = |values: &mut [f64], amplitude: f64| {
            for v in values {
                *v += uniform(rng, [-amplitude * k, amplitude * k]);
            }
        };
        add(&mut s.gyro, n.gyro);
        add(
            &mut s.acc,
            n.accelerometer / self.spec.onboard_layout.accelerometer_scale,
        );
        let servos = self.spec.onboard_layout.servo_count();
        add(&mut s.joint_pos[..servos], n.joint_pos);
        add(&mut s.joint_vel[..servos], n.joint_vel);
        s
    }

    fn privileged_extra(&self) -> [f32; PRIVILEGED_EXTRA] {
        let l = &self.robot.layout;
        let mut extra = [0.0f32; PRIVILEGED_EXTRA];
        let mut o = Writer {
            out: &mut extra,
            at: 0,
        };
        o.extend(self.sensor(l.sensor_linvel));
        let friction = if self.cfg.env.privileged_friction {
            self.params.friction
        } else {
            HIDDEN_FRICTION
        };
        o.extend([
            self.height(),
            friction,
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
