//! What the servo board does between the body and the values the runtime reads, as pure code
//! shared by the firmware (which runs it) and the simulator (which trains on its output):
//!
//! - every board tick ([`TICK_US`]) the IMU sample goes through the [`OrientationFilter`]
//!   (Mahony, no magnetometer) and each servo's velocity is differentiated from its position
//!   and low-passed ([`differentiate`]);
//! - the commanded position moves towards the goal by at most a slew step per tick ([`slew`]);
//! - the runtime reads everything through the board's i16 registers
//!   (`clawrl_protocol::units::registers`): positions in 4096-per-turn ticks, velocities in
//!   0.229 rpm units, gyro in mrad/s, accelerometer in 0.01 m/s², quaternion in Q14.
//!
//! [`BoardSensorPath`] (feature `std`) strings these together for the simulator.

/// The board's control tick (1 kHz): the firmware's `FirmwareConfig::tick_us`.
pub const TICK_US: u32 = 1000;

/// Low-pass weight of a new raw velocity (per tick) in [`differentiate`].
pub const VELOCITY_ALPHA: f32 = 0.3;

/// The board's velocity estimate after a new position sample: the raw difference over `dt_s`,
/// low-passed; unchanged when `dt_s` is not positive (the first tick).
pub fn differentiate(velocity: f32, previous_rad: f32, position_rad: f32, dt_s: f32) -> f32 {
    if dt_s > 0.0 {
        let raw = (position_rad - previous_rad) / dt_s;
        velocity + VELOCITY_ALPHA * (raw - velocity)
    } else {
        velocity
    }
}

/// Moves `from` towards `to` by at most `max_step`; towards NaN (a dead sensor under damp) it
/// stays where it is.
pub fn slew(from: f32, to: f32, max_step: f32) -> f32 {
    let delta = to - from;
    if delta.is_nan() {
        from
    } else {
        from + delta.clamp(-max_step, max_step)
    }
}

/// Mahony-style complementary filter: integrates the gyro into a quaternion and pulls its
/// gravity direction towards the accelerometer's. Yaw drifts (no magnetometer), roll and pitch
/// do not; the policy only needs projected gravity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrientationFilter {
    /// w, x, y, z
    q: [f32; 4],
    /// Correction gain (rad/s per unit of gravity-direction error).
    kp: f32,
}

impl Default for OrientationFilter {
    fn default() -> Self {
        Self {
            q: [1.0, 0.0, 0.0, 0.0],
            kp: 2.0,
        }
    }
}

impl OrientationFilter {
    /// A filter that has settled at `q` (w, x, y, z; normalised here).
    pub fn at(q: [f32; 4]) -> Self {
        let n = libm::sqrtf(q.iter().map(|c| c * c).sum());
        let mut f = Self::default();
        if n > 0.0 && n.is_finite() {
            f.q = q.map(|c| c / n);
        }
        f
    }

    pub fn quaternion(&self) -> [f32; 4] {
        self.q
    }

    /// One tick with body-frame rates (rad/s) and specific force (m/s²).
    pub fn update(&mut self, gyro_rad_s: [f32; 3], accel_m_s2: [f32; 3], dt_s: f32) {
        let [w, x, y, z] = self.q;
        let mut g = gyro_rad_s;
        let a = accel_m_s2;
        let norm = libm::sqrtf(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
        // Only trust the accelerometer near 1 g: during impacts it measures the impact.
        if norm > 4.9 && norm < 14.7 {
            let a = [a[0] / norm, a[1] / norm, a[2] / norm];
            // Gravity "up" direction predicted by the quaternion, in the body frame.
            let v = [
                2.0 * (x * z - w * y),
                2.0 * (w * x + y * z),
                w * w - x * x - y * y + z * z,
            ];
            let e = [
                a[1] * v[2] - a[2] * v[1],
                a[2] * v[0] - a[0] * v[2],
                a[0] * v[1] - a[1] * v[0],
            ];
            for i in 0..3 {
                g[i] += self.kp * e[i];
            }
        }
        let h = 0.5 * dt_s;
        let q = [
            w + h * (-x * g[0] - y * g[1] - z * g[2]),
            x + h * (w * g[0] + y * g[2] - z * g[1]),
            y + h * (w * g[1] - x * g[2] + z * g[0]),
            z + h * (w * g[2] + x * g[1] - y * g[0]),
        ];
        let n = libm::sqrtf(q.iter().map(|c| c * c).sum());
        if n > 0.0 && n.is_finite() {
            self.q = q.map(|c| c / n);
        }
    }
}

#[cfg(feature = "std")]
pub use path::BoardSensorPath;

#[cfg(feature = "std")]
mod path {
    use super::{OrientationFilter, TICK_US, differentiate};
    use crate::OnboardSensors;
    use crate::quadruped::NUM_SERVOS;
    use clawrl_protocol::units::{self, registers};

    /// The board's sensor side, tick by tick, and what the runtime then reads: the
    /// simulator's onboard observation through the same path as in the loop.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct BoardSensorPath {
        filter: OrientationFilter,
        gyro: [f32; 3],
        acc: [f32; 3],
        position: [f32; NUM_SERVOS],
        velocity: [f32; NUM_SERVOS],
    }

    impl BoardSensorPath {
        /// A board that has been running on `s` long enough to settle: the filter at the
        /// body's orientation, every velocity zero.
        pub fn settled(s: &OnboardSensors) -> Self {
            Self {
                filter: OrientationFilter::at(s.quat.map(|c| c as f32)),
                gyro: s.gyro.map(|g| g as f32),
                acc: s.acc.map(|a| a as f32),
                position: s.joint_pos.map(|p| p as f32),
                velocity: [0.0; NUM_SERVOS],
            }
        }

        /// One board tick ([`TICK_US`]) on the body's raw readings (`quat` and `joint_vel`
        /// are not read: the board has neither).
        pub fn tick(&mut self, s: &OnboardSensors) {
            let dt_s = TICK_US as f32 * 1e-6;
            for i in 0..NUM_SERVOS {
                let p = s.joint_pos[i] as f32;
                self.velocity[i] = differentiate(self.velocity[i], self.position[i], p, dt_s);
                self.position[i] = p;
            }
            self.gyro = s.gyro.map(|g| g as f32);
            self.acc = s.acc.map(|a| a as f32);
            self.filter.update(self.gyro, self.acc, dt_s);
        }

        /// The orientation filter's quaternion now.
        pub fn quaternion(&self) -> [f32; 4] {
            self.filter.quaternion()
        }

        /// What the runtime decodes from the board's registers now.
        pub fn reading(&self) -> OnboardSensors {
            use registers::*;
            let read = |v: f32, per_unit: f32, si: f64| f64::from(i16_register(v * per_unit)) * si;
            let q = self.filter.quaternion();
            OnboardSensors {
                gyro: self.gyro.map(|g| read(g, GYRO_PER_RAD_S, GYRO_RAD_S)),
                acc: self.acc.map(|a| read(a, ACCEL_PER_M_S2, ACCEL_M_S2)),
                quat: q.map(|c| read(c, QUAT_PER_UNIT, QUAT)),
                joint_pos: self
                    .position
                    .map(|p| f64::from(units::ticks_to_rad(i32::from(position_register(p))))),
                joint_vel: self.velocity.map(|v| {
                    f64::from(units::velocity_units_to_rad_per_s(i32::from(
                        velocity_register(v),
                    )))
                }),
            }
        }
    }
}
