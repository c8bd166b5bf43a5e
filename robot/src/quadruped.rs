//! The claw-foot quadruped: servo order, default pose and joint limits.
//!
//! Servo (and action) order: the 12 leg joints, leg by leg (FL, FR, RL, RR), each hip
//! abduction, hip pitch, knee; then the 4 claws in the same leg order. The MJCF model
//! (sim/models/quadruped.xml) must agree: the simulator checks its joint ranges and `stand`
//! keyframe against these constants when it loads the model.

pub const LEGS: [&str; 4] = ["FL", "FR", "RL", "RR"];
pub const LEG_JOINTS: [&str; 3] = ["hip_abd", "hip_pitch", "knee"];
/// The protocol's servo count: one number for the robot, the wire and the firmware's tables.
pub const NUM_SERVOS: usize = clawrl_protocol::units::ids::SERVO_COUNT;
pub const NUM_LEG_SERVOS: usize = 12;
pub const NUM_FEET: usize = 4;
/// Robot model name, as recorded in a policy bundle.
pub const MODEL_NAME: &str = "claw_quadruped";

pub const HIP_ABD_LIMITS: [f64; 2] = [-0.6, 0.6];
pub const HIP_PITCH_LIMITS: [f64; 2] = [-1.2, 1.8];
pub const KNEE_LIMITS: [f64; 2] = [-2.6, -0.6];
/// 0 = open, 1.2 rad = closed.
pub const CLAW_LIMITS: [f64; 2] = [0.0, 1.2];

/// Joint limits per servo (rad), servo order.
pub const JOINT_LIMITS: [[f64; 2]; NUM_SERVOS] = {
    let mut l = [[0.0; 2]; NUM_SERVOS];
    let mut leg = 0;
    while leg < 4 {
        l[leg * 3] = HIP_ABD_LIMITS;
        l[leg * 3 + 1] = HIP_PITCH_LIMITS;
        l[leg * 3 + 2] = KNEE_LIMITS;
        l[NUM_LEG_SERVOS + leg] = CLAW_LIMITS;
        leg += 1;
    }
    l
};

/// The standing pose (rad), servo order: what an all-zero action commands.
pub const DEFAULT_POSE: [f64; NUM_SERVOS] = {
    let mut p = [0.0; NUM_SERVOS];
    let mut leg = 0;
    while leg < 4 {
        p[leg * 3 + 1] = 0.8;
        p[leg * 3 + 2] = -1.5;
        leg += 1;
    }
    p
};

/// The resting pose (rad), servo order: legs folded under the body, claws open. The runtime
/// lowers the robot into it before it switches the torque off.
pub const REST_POSE: [f64; NUM_SERVOS] = {
    let mut p = [0.0; NUM_SERVOS];
    let mut leg = 0;
    while leg < 4 {
        p[leg * 3 + 1] = 1.4;
        p[leg * 3 + 2] = -2.4;
        leg += 1;
    }
    p
};

/// Gravity used to express the accelerometer in g.
pub const G: f64 = 9.81;

/// Servo names in action order: `FL_hip_abd, FL_hip_pitch, FL_knee, FR_..., RR_knee, FL_claw, ...`.
#[cfg(feature = "std")]
pub fn servo_names() -> Vec<String> {
    let legs = LEGS
        .iter()
        .flat_map(|l| LEG_JOINTS.iter().map(move |j| format!("{l}_{j}")));
    let claws = LEGS.iter().map(|l| format!("{l}_claw"));
    legs.chain(claws).collect()
}

/// Whether servo `i` is a claw (targets from open, not around the default pose).
pub const fn is_claw(i: usize) -> bool {
    i >= NUM_LEG_SERVOS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_rest_poses_lie_inside_the_joint_limits() {
        for i in 0..NUM_SERVOS {
            let [lo, hi] = JOINT_LIMITS[i];
            assert!(lo <= DEFAULT_POSE[i] && DEFAULT_POSE[i] <= hi, "servo {i}");
            assert!(lo <= REST_POSE[i] && REST_POSE[i] <= hi, "servo {i}");
        }
    }

    #[test]
    fn servo_names_follow_the_action_order() {
        let n = servo_names();
        assert_eq!(n.len(), NUM_SERVOS);
        assert_eq!(n[0], "FL_hip_abd");
        assert_eq!(n[11], "RR_knee");
        assert_eq!(n[12], "FL_claw");
    }
}
