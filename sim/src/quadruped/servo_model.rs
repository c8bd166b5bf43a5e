//! `servo_model.toml`: the fitted servo model as `clawrl sysid` writes it, and as the robot's
//! simulation reads it from its description's folder (`robots/NAME/servo_model.toml`), so
//! training and its randomisation (which scales around the model's values) centre on the
//! robot that was measured.
use std::collections::BTreeMap;
use std::path::Path;

use mujoco_rs::prelude::*;
use serde::{Deserialize, Serialize};

use super::{Layout, ServoDynamics};
use crate::SimError;

/// The file's name beside `robot.toml`.
pub const FILE_NAME: &str = "servo_model.toml";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServoModelFile {
    /// The whole loop's latency as fitted (s). Recorded; training's latency range is the
    /// task's (`randomization.latency_substeps`).
    pub latency_s: f64,
    pub group: BTreeMap<String, GroupEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupEntry {
    /// Servo names (the description's).
    pub servos: Vec<String>,
    #[serde(flatten)]
    pub dynamics: ServoDynamics,
}

impl ServoModelFile {
    pub fn load(path: &Path) -> Result<Self, SimError> {
        let bad = |reason: String| SimError::ModelMismatch {
            file: path.to_path_buf(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        toml::from_str(&text).map_err(|e| bad(e.to_string()))
    }

    /// Writes every named servo's dynamics into `model`; a servo the robot does not have is
    /// an error naming it, as is a parameter that is not a positive finite number.
    pub fn apply(
        &self,
        path: &Path,
        model: &mut MjModel,
        layout: &Layout,
        servo_names: &[String],
    ) -> Result<(), SimError> {
        let bad = |reason: String| SimError::ModelMismatch {
            file: path.to_path_buf(),
            reason,
        };
        for (name, g) in &self.group {
            let d = g.dynamics;
            if let Some(p) =
                (0..4).find(|&p| !(d.to_array()[p] > 0.0 && d.to_array()[p].is_finite()))
            {
                return Err(bad(format!(
                    "group.{name}.{}: {} is not a positive number",
                    ServoDynamics::NAMES[p],
                    d.to_array()[p]
                )));
            }
            for servo in &g.servos {
                let i = servo_names.iter().position(|s| s == servo).ok_or_else(|| {
                    bad(format!("group.{name}: the robot has no servo {servo:?}"))
                })?;
                let (a, dof) = (layout.servo_actuator[i], layout.servo_dof[i]);
                super::stand::write_servo_dynamics(model, a, dof, d);
            }
        }
        Ok(())
    }
}

impl super::QuadrupedEnv {
    /// Writes `file`'s servo dynamics (read from `path`) into this environment's model until
    /// its next reset: a body whose servos are the file's, whatever the episode drew.
    pub fn apply_servo_model(
        &mut self,
        file: &ServoModelFile,
        path: &Path,
    ) -> Result<(), SimError> {
        let names = self.robot.servo_names.clone();
        // SAFETY: `apply` changes parameter values only, never sizes or addresses.
        let model = unsafe { self.data.model_mut() };
        file.apply(path, model, &self.robot.layout, &names)
    }
}
