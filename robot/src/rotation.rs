//! Quaternion rotations (MuJoCo's w, x, y, z order), shared by the simulator and the onboard
//! observation builder so both turn an orientation into gravity the same way.

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
