//! Small rotation helpers (quaternions are MuJoCo's w, x, y, z); `rotate` and `rotate_inv`
//! live in the robot layout crate, which builds the onboard observation with them.

pub use clawrl_robot::rotation::{Quat, Vec3, rotate, rotate_inv};

pub fn mul(a: Quat, b: Quat) -> Quat {
    [
        a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
        a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
        a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
        a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0],
    ]
}

/// Rotation by `angle` about the unit `axis`.
pub fn axis_angle(axis: Vec3, angle: f64) -> Quat {
    let (s, c) = (angle / 2.0).sin_cos();
    [c, axis[0] * s, axis[1] * s, axis[2] * s]
}

pub fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Vec3, b: Vec3) -> bool {
        a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn quarter_turn_about_z_maps_x_to_y() {
        let q = axis_angle([0.0, 0.0, 1.0], std::f64::consts::FRAC_PI_2);
        assert!(close(rotate(q, [1.0, 0.0, 0.0]), [0.0, 1.0, 0.0]));
        assert!(close(rotate_inv(q, [0.0, 1.0, 0.0]), [1.0, 0.0, 0.0]));
    }

    #[test]
    fn product_composes_rotations() {
        let a = axis_angle([1.0, 0.0, 0.0], 0.3);
        let b = axis_angle([0.0, 1.0, 0.0], -0.7);
        let v = [0.2, -0.5, 0.9];
        assert!(close(rotate(mul(a, b), v), rotate(a, rotate(b, v))));
    }
}
