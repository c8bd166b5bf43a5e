//! What a compiled MJCF model says about a robot, as plain data: the simulator crate fills it
//! from MuJoCo (so default classes and `<compiler angle>` are already applied), and this crate
//! checks a description against it without linking MuJoCo.
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct JointFact {
    /// `Some([lo, hi])` when the joint is limited.
    pub range: Option<[f64; 2]>,
    /// A hinge or slide joint (one degree of freedom); free and ball joints are not servos.
    pub one_dof: bool,
    /// Index into a keyframe's qpos.
    pub qpos_adr: usize,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ActuatorFact {
    pub name: String,
    /// The joint it drives, for joint transmissions; `None` for body (adhesion), tendon or
    /// site actuators.
    pub joint: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct MjcfFacts {
    /// The MJCF file, for messages.
    pub file: String,
    pub joints: BTreeMap<String, JointFact>,
    /// In the model's order.
    pub actuators: Vec<ActuatorFact>,
    /// Keyframe name -> qpos.
    pub keyframes: BTreeMap<String, Vec<f64>>,
    pub bodies: Vec<String>,
    pub geoms: Vec<String>,
    pub sites: Vec<String>,
    pub sensors: Vec<String>,
    /// The body of the model's free joint (the trunk of a floating-base robot).
    pub free_body: Option<String>,
}

impl MjcfFacts {
    /// A joint's value in a keyframe.
    pub fn key_value(&self, key: &str, joint: &str) -> Option<f64> {
        let q = self.keyframes.get(key)?;
        q.get(self.joints.get(joint)?.qpos_adr).copied()
    }

    /// The actuators with a joint transmission on `joint`.
    pub fn actuators_on(&self, joint: &str) -> Vec<&str> {
        self.actuators
            .iter()
            .filter(|a| a.joint.as_deref() == Some(joint))
            .map(|a| a.name.as_str())
            .collect()
    }
}
