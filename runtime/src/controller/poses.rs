//! The robot's two poses and its claws, sized at start: what the safety machine interpolates
//! between. The shipped robot's come from its constants; another robot's from the bundle's
//! resolved description (the robot computer carries no MJCF: the numbers the MJCF holds, the
//! `stand` and `rest` keyframes, reach it in the bundle, whose MJCF hash and servo table
//! `check_fits` compared with the robot's own first).
//!
//! Arrays keep the board's compile-time maximum ([`MAX_SERVOS`]) so the loop allocates nothing;
//! a robot of fewer servos uses the first [`Poses::count`] and leaves the rest at zero, which
//! never reach the wire (the link addresses only the described servos).
use clawrl_robot::description::{JointKind, RobotDescription};
use clawrl_robot::quadruped::{self, DEFAULT_POSE, NUM_LEG_SERVOS, REST_POSE};

/// The most servos one board drives (the protocol's table size).
pub const MAX_SERVOS: usize = clawrl_protocol::units::ids::SERVO_COUNT;

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Poses {
    /// Servos the robot has: the first `count` entries of every array.
    pub count: usize,
    /// The default pose, what an all-zero action commands (rad).
    pub stand: [f64; MAX_SERVOS],
    /// The pose the robot is lowered into before torque off (rad).
    pub rest: [f64; MAX_SERVOS],
    /// Which servos are claws (the stand grip closes them).
    pub claw: [bool; MAX_SERVOS],
}

impl Poses {
    /// The shipped claw-foot quadruped's.
    pub fn quadruped() -> Self {
        Self {
            count: quadruped::NUM_SERVOS,
            stand: DEFAULT_POSE,
            rest: REST_POSE,
            claw: std::array::from_fn(|i| i >= NUM_LEG_SERVOS),
        }
    }

    /// A described robot's, servo order; refuses one of more servos than a board drives.
    pub fn from_description(d: &RobotDescription) -> Result<Self, String> {
        let count = d.servos.len();
        if count > MAX_SERVOS {
            return Err(format!(
                "robot {:?} has {count} servos; one board drives at most {MAX_SERVOS}",
                d.name
            ));
        }
        let mut p = Self {
            count,
            stand: [0.0; MAX_SERVOS],
            rest: [0.0; MAX_SERVOS],
            claw: [false; MAX_SERVOS],
        };
        for (i, s) in d.servos.iter().enumerate() {
            (p.stand[i], p.rest[i]) = (s.stand, s.rest);
            p.claw[i] = s.kind == JointKind::Claw;
        }
        Ok(p)
    }

    /// The stand with its claws closed to `grip` rad (clamped to each claw's `limits`; 0:
    /// open): a robot standing up on a slope holds on with its claws instead of sliding.
    pub fn stand_with_grip(&self, grip: f64, limits: &[[f64; 2]; MAX_SERVOS]) -> [f64; MAX_SERVOS] {
        with_grip(self.stand, &self.claw, grip, limits)
    }
}

impl Default for Poses {
    fn default() -> Self {
        Self::quadruped()
    }
}

/// `pose` with the servos `claw` marks at `grip` rad, each clamped to its own `limits` (a
/// robot's claws need not open and close as far as the claw-foot robot's).
pub fn with_grip(
    mut pose: [f64; MAX_SERVOS],
    claw: &[bool; MAX_SERVOS],
    grip: f64,
    limits: &[[f64; 2]; MAX_SERVOS],
) -> [f64; MAX_SERVOS] {
    for ((p, _), [lo, hi]) in pose
        .iter_mut()
        .zip(claw)
        .zip(limits)
        .filter(|((_, c), _)| **c)
    {
        *p = grip.clamp(*lo, *hi);
    }
    pose
}
