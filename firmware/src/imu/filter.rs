//! The board's orientation filter: the shared one in `clawrl_robot::board` (Mahony-style, no
//! magnetometer), so the simulator's board sensor path runs the very same code.

pub use clawrl_robot::board::OrientationFilter;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::imu::ImuSample;

    #[test]
    fn level_and_still_stays_identity() {
        let mut f = OrientationFilter::default();
        let s = ImuSample {
            gyro_rad_s: [0.0; 3],
            accel_m_s2: [0.0, 0.0, 9.81],
        };
        for _ in 0..1000 {
            f.update(s.gyro_rad_s, s.accel_m_s2, 0.001);
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
            f.update(s.gyro_rad_s, s.accel_m_s2, 0.001);
        }
        let [w, x, _, _] = f.quaternion();
        let roll = 2.0 * x.atan2(w);
        assert!((roll - 0.3).abs() < 0.01, "roll {roll}");
    }
}
