//! The action map: policy action -> servo target, the same on the simulator and on the robot.
//!
//! `target[i] = default_pose[i] + scale[i] * clamp(action[i], -clip, clip)`, then clamped to
//! the joint limits, so no target outside the limits can leave this function.
use serde::{Deserialize, Serialize};

use crate::quadruped;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionMap {
    /// Servo names, action order.
    pub joint_names: Vec<String>,
    /// Target of a zero action (rad).
    pub default_pose: Vec<f64>,
    /// rad per unit of action, per servo.
    pub scale: Vec<f64>,
    /// Actions are clamped to ±clip before scaling.
    pub clip: f64,
    /// `[low, high]` per servo (rad).
    pub joint_limits: Vec<[f64; 2]>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ActionMapError {
    /// The action has the wrong number of entries.
    Length { expected: usize, got: usize },
    /// An action entry is NaN or infinite.
    NonFinite { index: usize },
    /// The map itself is inconsistent (for example from a damaged bundle).
    Invalid(String),
}

impl core::fmt::Display for ActionMapError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Length { expected, got } => {
                write!(f, "action has {got} entries, expected {expected}")
            }
            Self::NonFinite { index } => write!(f, "action entry {index} is not finite"),
            Self::Invalid(why) => write!(f, "invalid action map: {why}"),
        }
    }
}

impl std::error::Error for ActionMapError {}

impl ActionMap {
    /// The claw-foot quadruped's map: legs move `leg_scale` rad per unit around the default
    /// pose, claws `claw_scale` rad per unit from open.
    pub fn quadruped(leg_scale: f64, claw_scale: f64, clip: f64) -> Self {
        Self {
            joint_names: quadruped::servo_names(),
            default_pose: quadruped::DEFAULT_POSE.to_vec(),
            scale: (0..quadruped::NUM_SERVOS)
                .map(|i| {
                    if quadruped::is_claw(i) {
                        claw_scale
                    } else {
                        leg_scale
                    }
                })
                .collect(),
            clip,
            joint_limits: quadruped::JOINT_LIMITS.to_vec(),
        }
    }

    pub fn len(&self) -> usize {
        self.joint_names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.joint_names.is_empty()
    }

    /// Checks that every per-servo list has one entry per joint, that the limits are ordered,
    /// that the default pose lies inside them and that scales and clip are finite.
    pub fn check(&self) -> Result<(), ActionMapError> {
        let n = self.joint_names.len();
        let bad = |why: String| Err(ActionMapError::Invalid(why));
        if n == 0 {
            return bad("no joints".into());
        }
        for (what, len) in [
            ("default_pose", self.default_pose.len()),
            ("scale", self.scale.len()),
            ("joint_limits", self.joint_limits.len()),
        ] {
            if len != n {
                return bad(format!("{what} has {len} entries for {n} joints"));
            }
        }
        if !(self.clip.is_finite() && self.clip > 0.0) {
            return bad(format!("clip {} must be positive", self.clip));
        }
        for i in 0..n {
            let [lo, hi] = self.joint_limits[i];
            let (d, s) = (self.default_pose[i], self.scale[i]);
            if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                return bad(format!("joint {} limits [{lo}, {hi}]", self.joint_names[i]));
            }
            if !(d.is_finite() && lo <= d && d <= hi) {
                return bad(format!(
                    "joint {} default {d} outside [{lo}, {hi}]",
                    self.joint_names[i]
                ));
            }
            if !s.is_finite() {
                return bad(format!("joint {} scale {s}", self.joint_names[i]));
            }
        }
        Ok(())
    }

    /// Servo targets (rad) for an action. Refuses a wrong length or a non-finite entry, so a
    /// bad action can never become a target.
    pub fn targets(&self, action: &[f32], out: &mut [f64]) -> Result<(), ActionMapError> {
        let n = self.len();
        if action.len() != n || out.len() != n {
            return Err(ActionMapError::Length {
                expected: n,
                got: action.len(),
            });
        }
        if let Some(index) = action.iter().position(|a| !a.is_finite()) {
            return Err(ActionMapError::NonFinite { index });
        }
        for i in 0..n {
            let a = f64::from(action[i]).clamp(-self.clip, self.clip);
            let [lo, hi] = self.joint_limits[i];
            out[i] = (self.default_pose[i] + self.scale[i] * a).clamp(lo, hi);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_action_is_the_default_pose_and_big_ones_stop_at_the_limits() {
        let m = ActionMap::quadruped(0.3, 0.6, 5.0);
        m.check().unwrap();
        let mut t = [0.0; 16];
        m.targets(&[0.0; 16], &mut t).unwrap();
        assert_eq!(t.to_vec(), quadruped::DEFAULT_POSE.to_vec());
        m.targets(&[1e6; 16], &mut t).unwrap();
        for (target, [_, hi]) in t.iter().zip(quadruped::JOINT_LIMITS) {
            assert!(*target <= hi);
        }
        assert_eq!(t[2], -0.6, "knee stops at its upper limit");
        m.targets(&[-1e6; 16], &mut t).unwrap();
        assert_eq!(t[12], 0.0, "claw stops open");
    }

    #[test]
    fn a_non_finite_or_short_action_is_refused_and_writes_nothing() {
        let m = ActionMap::quadruped(0.3, 0.6, 5.0);
        let mut t = [7.0; 16];
        let mut a = [0.0f32; 16];
        a[5] = f32::NAN;
        assert_eq!(
            m.targets(&a, &mut t),
            Err(ActionMapError::NonFinite { index: 5 })
        );
        assert!(m.targets(&[0.0; 3], &mut t).is_err());
        assert_eq!(t, [7.0; 16]);
    }

    #[test]
    fn check_refuses_a_default_outside_the_limits() {
        let mut m = ActionMap::quadruped(0.3, 0.6, 5.0);
        m.default_pose[2] = 0.0;
        assert!(m.check().unwrap_err().to_string().contains("FL_knee"));
    }
}
