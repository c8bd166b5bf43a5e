//! Mahony-style complementary filter: integrates the gyro into a quaternion and pulls its
//! gravity direction towards the accelerometer's. Yaw drifts (no magnetometer), roll and pitch
//! do not; the policy only needs projected gravity.

use super::ImuSample;

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
    pub fn quaternion(&self) -> [f32; 4] {
        self.q
    }

    pub fn update(&mut self, sample: &ImuSample, dt_s: f32) {
        let [w, x, y, z] = self.q;
        let mut g = sample.gyro_rad_s;
        let a = sample.accel_m_s2;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_and_still_stays_identity() {
        let mut f = OrientationFilter::default();
        let s = ImuSample {
            gyro_rad_s: [0.0; 3],
            accel_m_s2: [0.0, 0.0, 9.81],
        };
        for _ in 0..1000 {
            f.update(&s, 0.001);
        }
        let q = f.quaternion();
        assert!((q[0] - 1.0).abs() < 1e-4, "{q:?}");
    }

    #[test]
    fn converges_to_a_tilt_seen_by_the_accelerometer() {
        // Rolled by +0.3 rad: gravity appears at (0, sin 0.3, cos 0.3) * g in the body frame.
        let mut f = OrientationFilter::default();
        let s = ImuSample {
            gyro_rad_s: [0.0; 3],
            accel_m_s2: [0.0, 9.81 * 0.3f32.sin(), 9.81 * 0.3f32.cos()],
        };
        for _ in 0..5000 {
            f.update(&s, 0.001);
        }
        let [w, x, _, _] = f.quaternion();
        let roll = 2.0 * x.atan2(w);
        assert!((roll - 0.3).abs() < 0.01, "roll {roll}");
    }
}
