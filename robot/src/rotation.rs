//! Quaternion rotations (MuJoCo's w, x, y, z order), shared by the simulator and the onboard
//! observation builder so both turn an orientation into gravity the same way; and the heading
//! command (legged_gym's), shared by the simulator's slope task and the runtime's heading hold
//! so both steer back by the same law.

pub type Vec3 = [f64; 3];
pub type Quat = [f64; 4];

/// Rotates `v` by the inverse of `q`: a world vector expressed in the body frame.
pub fn rotate_inv(q: Quat, v: Vec3) -> Vec3 {
    rotate([q[0], -q[1], -q[2], -q[3]], v)
}

/// Rotates `v` by `q`.
pub fn rotate(q: Quat, v: Vec3) -> Vec3 {
    let [w, x, y, z] = q;
    // t = 2 q_vec x v; v' = v + w t + q_vec x t
    let t = [
        2.0 * (y * v[2] - z * v[1]),
        2.0 * (z * v[0] - x * v[2]),
        2.0 * (x * v[1] - y * v[0]),
    ];
    [
        v[0] + w * t[0] + (y * t[2] - z * t[1]),
        v[1] + w * t[1] + (z * t[0] - x * t[2]),
        v[2] + w * t[2] + (x * t[1] - y * t[0]),
    ]
}

/// The world yaw (rad) of the body's forward axis, from its orientation `q` (body to world).
/// (This and the two below need `std`'s float functions; the firmware has no use for them.)
#[cfg(feature = "std")]
pub fn heading(q: Quat) -> f64 {
    let x = rotate(q, [1.0, 0.0, 0.0]);
    x[1].atan2(x[0])
}

/// An angle wrapped into [-pi, pi].
#[cfg(feature = "std")]
pub fn wrap_angle(a: f64) -> f64 {
    use std::f64::consts::{PI, TAU};
    (a + PI).rem_euclid(TAU) - PI
}

/// legged_gym's heading command: `gain` x the heading error, clipped to the yaw-rate range.
#[cfg(feature = "std")]
pub fn heading_yaw(gain: f64, target: f64, heading: f64, [lo, hi]: [f64; 2]) -> f64 {
    (gain * wrap_angle(target - heading)).clamp(lo, hi)
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    #[test]
    fn the_heading_error_takes_the_short_way_round() {
        assert!((wrap_angle(3.0 * PI / 2.0) + PI / 2.0).abs() < 1e-12);
        // Target just past +pi, body just past -pi: 0.28 rad apart, not 6.
        let yaw = heading_yaw(0.5, 3.0, -3.0, [-0.8, 0.8]);
        assert!((yaw - 0.5 * (6.0 - 2.0 * PI)).abs() < 1e-12, "{yaw}");
        assert_eq!(
            heading_yaw(0.5, PI / 2.0, -PI / 2.0 + 0.1, [-0.8, 0.8]),
            0.8
        );
    }
}
