//! The manifest: everything besides the weights that the runtime needs to run the student.
use clawrl_robot::{ActionMap, ObsSource, OnboardLayout};
use serde::{Deserialize, Serialize};

use crate::{ManifestError, Tensor};

/// The only manifest version this crate reads and writes.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format_version: u32,
    pub robot: RobotInfo,
    pub observation: ObservationSpec,
    pub action: ActionSpec,
    /// The rate the policy acts at (Hz; the task's `1 / (env.physics_dt * env.decimation)`):
    /// the runtime's `control.rate_hz` must be the same (see [`crate::check_fits`]).
    pub control_rate_hz: f64,
    /// The physics rate the policy was trained against (Hz; `1 / env.physics_dt`), a whole
    /// multiple of `control_rate_hz`. The robot has no physics step to compare it with: it
    /// travels so the bundle says what it was trained with (`clawrl verify` prints it). Absent
    /// in bundles made before it was recorded, which still load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physics_rate_hz: Option<f64>,
    pub network: NetworkSpec,
    pub provenance: Provenance,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotInfo {
    /// Robot model name (`claw_quadruped`, `cartpole`); equals `observation.layout.robot`.
    pub model: String,
    /// Lowercase hex SHA-256 of the MJCF file the policy was trained on (see [`crate::mjcf_sha256`]).
    pub mjcf_sha256: String,
    /// The robot description the policy was trained on (`robots/NAME/robot.toml`, resolved
    /// against its MJCF): every servo by name, bus ID, direction, offset and limits. Covered by
    /// the digest and the signature like every manifest field. Absent in bundles made before
    /// descriptions existed, and for tasks without one (cart-pole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<clawrl_robot::description::RobotDescription>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservationSpec {
    pub source: ObsSource,
    /// How sensor values become one frame.
    pub layout: OnboardLayout,
    /// Past frames stacked after the current one, newest first (see `clawrl_robot::History`).
    pub history: usize,
    pub normalizer: NormalizerStats,
    /// `[low, high]` of the command entries the policy was trained on: forward (m/s), lateral
    /// (m/s), yaw rate (rad/s), the task's `command.forward`, `lateral` and `yaw_rate`. The
    /// runtime clips live commands to them. Absent in bundles made before they were recorded,
    /// and for tasks without a velocity command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_ranges: Option<[[f64; 2]; 3]>,
}

impl ObservationSpec {
    /// Length of the stacked vector the network reads: `layout.dim() * (history + 1)`.
    pub fn stacked_dim(&self) -> usize {
        self.layout
            .dim()
            .saturating_mul(self.history.saturating_add(1))
    }
}

/// Normaliser over the stacked vector: `z = clamp((x - mean) / sqrt(var + epsilon), ±clip)`,
/// computed in f64 then cast to f32.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NormalizerStats {
    pub mean: Vec<f64>,
    pub var: Vec<f64>,
    pub epsilon: f64,
    pub clip: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionSpec {
    /// One name per action entry, action order.
    pub names: Vec<String>,
    /// Action -> servo target; `None` for tasks without servos (cart-pole).
    pub map: Option<ActionMap>,
    /// The rate limit on servo targets the policy was trained under (rad/s; the task's
    /// `env.max_target_speed`): the runtime's `safety.max_joint_speed` must be the same, or
    /// the policy meets servos that move otherwise than it learnt. Absent in bundles made
    /// before it was recorded, and for tasks without servos.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_target_speed: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    pub kind: String,
    /// Opaque TOML, parsed by the policy crate.
    pub policy_config: String,
    /// Total element count of the tensors.
    pub parameters: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// Opaque TOML.
    pub train_config: String,
    pub seed: u64,
    pub source_revision: String,
    /// Lowercase hex SHA-256 of the teacher checkpoint, or empty when there is none.
    pub teacher_sha256: String,
    pub clawrl_version: String,
    pub created_unix_s: u64,
    pub evaluation: Option<Evaluation>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evaluation {
    pub episodes: usize,
    pub mean_return: f64,
    pub fall_rate: f64,
    pub teacher_mean_return: Option<f64>,
    pub teacher_fall_rate: Option<f64>,
}

fn fail<T>(field: &str, detail: impl Into<String>) -> Result<T, ManifestError> {
    Err(ManifestError {
        field: field.into(),
        detail: detail.into(),
    })
}

fn check_finite(field: &str, values: &[f64]) -> Result<(), ManifestError> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(i) => fail(field, format!("entry {i} is {}", values[i])),
        None => Ok(()),
    }
}

fn check_sha256_hex(field: &str, s: &str) -> Result<(), ManifestError> {
    let ok = s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if ok {
        Ok(())
    } else {
        fail(field, format!("{s:?} is not 64 lowercase hex digits"))
    }
}

impl Manifest {
    /// Checks the manifest against itself and against the tensors it describes. The error names
    /// the first field that fails.
    /// The description names the model, each servo once, and the servos the action map
    /// drives, in its order and with its default pose: it binds what the policy moves.
    fn check_description(&self) -> Result<(), ManifestError> {
        let Some(d) = &self.robot.description else {
            return Ok(());
        };
        if d.name != self.robot.model {
            let why = format!(
                "{:?} differs from robot.model {:?}",
                d.name, self.robot.model
            );
            return fail("robot.description.name", why);
        }
        let names = d.servo_names();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return fail(
                    "robot.description.servos",
                    format!("servo {n} is named twice"),
                );
            }
        }
        if let Some(map) = &self.action.map {
            if names != map.joint_names {
                let why = format!(
                    "servos {names:?} differ from action.map.joint_names {:?}",
                    map.joint_names
                );
                return fail("robot.description.servos", why);
            }
            if d.stand_pose() != map.default_pose {
                let why = "the stand pose differs from action.map.default_pose".to_string();
                return fail("robot.description.servos", why);
            }
        }
        Ok(())
    }

    pub fn check(&self, tensors: &[Tensor]) -> Result<(), ManifestError> {
        if self.format_version != FORMAT_VERSION {
            return fail(
                "format_version",
                format!("{} (supported: {FORMAT_VERSION})", self.format_version),
            );
        }
        check_sha256_hex("robot.mjcf_sha256", &self.robot.mjcf_sha256)?;
        if !self.provenance.teacher_sha256.is_empty() {
            check_sha256_hex("provenance.teacher_sha256", &self.provenance.teacher_sha256)?;
        }

        self.check_description()?;

        let obs = &self.observation;
        if obs.layout.robot != self.robot.model {
            return fail(
                "observation.layout.robot",
                format!(
                    "{:?} differs from robot.model {:?}",
                    obs.layout.robot, self.robot.model
                ),
            );
        }
        if obs.layout.dim() == 0 {
            return fail("observation.layout.entries", "empty");
        }
        check_finite("observation.layout.joint_offset", &obs.layout.joint_offset)?;
        check_finite(
            "observation.layout.accelerometer_scale",
            &[obs.layout.accelerometer_scale],
        )?;
        let n = &obs.normalizer;
        let dim = obs.stacked_dim();
        for (field, len) in [
            ("observation.normalizer.mean", n.mean.len()),
            ("observation.normalizer.var", n.var.len()),
        ] {
            if len != dim {
                return fail(
                    field,
                    format!(
                        "{len} entries, expected {dim} ({} per frame x {} frames)",
                        obs.layout.dim(),
                        obs.history.saturating_add(1)
                    ),
                );
            }
        }
        if let Some(r) = &obs.command_ranges {
            // The guard clips to these and stands the robot at zero: zero must be inside.
            if let Some(i) = r.iter().position(|[lo, hi]| !(*lo <= 0.0 && 0.0 <= *hi)) {
                return fail(
                    "observation.command_ranges",
                    format!("axis {i}: {:?} does not hold 0", r[i]),
                );
            }
        }
        check_finite("observation.normalizer.mean", &n.mean)?;
        check_finite("observation.normalizer.var", &n.var)?;
        if !(n.epsilon.is_finite() && n.epsilon >= 0.0) {
            return fail("observation.normalizer.epsilon", format!("{}", n.epsilon));
        }
        if let Some(i) = n.var.iter().position(|&v| v < 0.0 || v + n.epsilon <= 0.0) {
            return fail(
                "observation.normalizer.var",
                format!("entry {i} is {} (epsilon {})", n.var[i], n.epsilon),
            );
        }
        if n.clip.is_nan() || n.clip <= 0.0 {
            return fail(
                "observation.normalizer.clip",
                format!("{} must be > 0", n.clip),
            );
        }

        let a = &self.action;
        if a.names.is_empty() {
            return fail("action.names", "empty");
        }
        if let Some(map) = &a.map {
            if map.joint_names != a.names {
                return fail(
                    "action.map.joint_names",
                    format!(
                        "{:?} differ from action.names {:?}",
                        map.joint_names, a.names
                    ),
                );
            }
            if let Err(e) = map.check() {
                return fail("action.map", e.to_string());
            }
        }
        if !(self.control_rate_hz.is_finite() && self.control_rate_hz > 0.0) {
            return fail(
                "control_rate_hz",
                format!("{} must be > 0", self.control_rate_hz),
            );
        }
        if let Some(physics) = self.physics_rate_hz {
            // physics_dt * decimation is the control period: a whole number of physics steps.
            let steps = physics / self.control_rate_hz;
            if !(physics.is_finite() && steps >= 1.0 - 1e-9 && (steps - steps.round()).abs() < 1e-6)
            {
                return fail(
                    "physics_rate_hz",
                    format!(
                        "{physics} is not a whole multiple of control_rate_hz {}",
                        self.control_rate_hz
                    ),
                );
            }
        }

        let mut total = 0usize;
        for t in tensors {
            if let Some(i) = t.data.iter().position(|v| !v.is_finite()) {
                return fail("tensors", format!("{} entry {i} is {}", t.name, t.data[i]));
            }
            total = total.saturating_add(t.data.len());
        }
        if self.network.parameters != total {
            return fail(
                "network.parameters",
                format!(
                    "{}, but the {} tensors hold {total} values",
                    self.network.parameters,
                    tensors.len()
                ),
            );
        }

        if let Some(e) = &self.provenance.evaluation {
            let rates = [Some(e.fall_rate), e.teacher_fall_rate];
            let returns = [Some(e.mean_return), e.teacher_mean_return];
            check_finite(
                "provenance.evaluation",
                &returns.iter().flatten().copied().collect::<Vec<_>>(),
            )?;
            if rates.iter().flatten().any(|r| !(0.0..=1.0).contains(r)) {
                return fail(
                    "provenance.evaluation",
                    format!("fall rates {rates:?} outside [0, 1]"),
                );
            }
        }
        Ok(())
    }
}
