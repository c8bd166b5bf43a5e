//! Small rotation helpers (quaternions are MuJoCo's w, x, y, z).

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
